//! A configuration snapshot: everything compiled from one [`Config`] (routes, upstreams, TLS,
//! pipeline stages). Requests load the current snapshot once and finish on it even if a reload
//! swaps in a new one meanwhile.

use std::sync::Arc;

use palisade_config::{AppConfig, Config, ConfigError, ConfigErrors};
use palisade_core::Stage;

use crate::metrics::{AppMetrics, Metrics};
use crate::router::Router;
use crate::targets::Upstream;

/// Builds the pipeline stages of an app from its configuration. Supplied by the binary, so that
/// the proxy does not depend on every engine.
pub type StageFactory = Arc<dyn Fn(&Config, &AppConfig) -> Result<Vec<Box<dyn Stage>>, Vec<ConfigError>> + Send + Sync>;

/// A factory for configurations without stage sections; stage sections are reported as errors.
pub fn no_stages() -> StageFactory {
    Arc::new(|config: &Config, app: &AppConfig| {
        let errs: Vec<ConfigError> =
            app.stages.iter().map(|(key, _, loc)| loc.error(&config.source, format!("`{key}` is not available in this build"))).collect();
        if errs.is_empty() {
            Ok(Vec::new())
        } else {
            Err(errs)
        }
    })
}

pub struct App {
    pub cfg: AppConfig,
    pub upstream: Arc<Upstream>,
    pub stages: Vec<Box<dyn Stage>>,
    /// Whether any stage reads the body.
    pub wants_body: bool,
    /// Whether any stage judges upstream responses (they are then buffered).
    pub wants_response: bool,
    /// This app's metric series (kept across reloads by app name).
    pub metrics: Arc<AppMetrics>,
    /// The message types of its gRPC services (`grpc.descriptor_set`).
    pub grpc_types: Option<Arc<palisade_core::grpc::descriptor::Descriptors>>,
}

pub struct Snapshot {
    pub generation: u64,
    pub config: Arc<Config>,
    pub router: Router,
    pub apps: Vec<App>,
    pub upstreams: Vec<Arc<Upstream>>,
    /// Per listener (same order as `config.listen`).
    pub tls: Vec<Option<Arc<rustls::ServerConfig>>>,
    /// Event redaction and sampling for requests served by this snapshot.
    pub events: crate::events::Runtime,
}

impl Snapshot {
    /// Compile a configuration. Every problem is reported, with its location.
    pub fn build(config: Config, generation: u64, factory: &StageFactory) -> Result<Snapshot, ConfigErrors> {
        Self::build_with(config, generation, factory, &Metrics::new(1))
    }

    /// Like [`Snapshot::build`], with the apps' metric series taken from `metrics`.
    pub fn build_with(config: Config, generation: u64, factory: &StageFactory, metrics: &Metrics) -> Result<Snapshot, ConfigErrors> {
        let file = config.source.clone();
        let mut errors = Vec::new();
        let mut upstreams = Vec::with_capacity(config.upstreams.len());
        for (i, u) in config.upstreams.iter().enumerate() {
            match Upstream::build(u, generation, i) {
                Ok(up) => upstreams.push(Arc::new(up)),
                Err((t, msg)) => errors.push(u.targets[t].loc.error(&file, msg)),
            }
        }
        let mut tls = Vec::with_capacity(config.listen.len());
        for l in &config.listen {
            match &l.tls {
                None => tls.push(None),
                Some(t) => match crate::tls::server_config(t, l.http2, &file) {
                    Ok(c) => tls.push(Some(c)),
                    Err(e) => errors.extend(e),
                },
            }
        }
        // Every app's stages are built even when something else failed, so that every problem
        // is reported at once.
        let mut apps = Vec::with_capacity(config.apps.len());
        for a in &config.apps {
            let grpc_types = match &a.grpc.descriptor_set {
                None => None,
                Some(file) => match read_descriptor_set(&file.value) {
                    Ok(d) => Some(Arc::new(d)),
                    Err(e) => {
                        errors.push(file.loc.error(&config.source, e.to_string()));
                        None
                    }
                },
            };
            match factory(&config, a) {
                Ok(stages) => {
                    let Some(upstream) = upstreams.get(a.upstream).filter(|_| errors.is_empty()) else { continue };
                    let wants_body = stages.iter().any(|s| s.wants_body());
                    let wants_response = stages.iter().any(|s| s.wants_response());
                    apps.push(App {
                        cfg: a.clone(),
                        upstream: upstream.clone(),
                        stages,
                        wants_body,
                        wants_response,
                        metrics: metrics.app(&a.name),
                        grpc_types: grpc_types.clone(),
                    });
                }
                Err(e) => errors.extend(e),
            }
        }
        if !errors.is_empty() {
            return Err(ConfigErrors(errors));
        }
        let router = Router::new(config.apps.iter().map(|a| (a.hosts.as_slice(), a.path_prefix.as_str())));
        let events = crate::events::Runtime::new(&config);
        Ok(Snapshot { generation, config: Arc::new(config), router, apps, upstreams, tls, events })
    }
}

/// Read and index a `FileDescriptorSet`; the error says what is wrong with the file.
fn read_descriptor_set(path: &std::path::Path) -> Result<palisade_core::grpc::descriptor::Descriptors, palisade_core::Error> {
    use palisade_core::{Error, ErrorKind};
    let bytes =
        std::fs::read(path).map_err(|e| Error::caused_by(ErrorKind::Descriptor, format!("cannot read the gRPC descriptor set {}: {e}", path.display()), e))?;
    palisade_core::grpc::descriptor::Descriptors::decode(&bytes).map_err(|e| e.context(format_args!("{}: not a usable gRPC descriptor set", path.display())))
}
