//! What every thread of a running server shares ([`Shared`]): the current snapshot, the
//! metrics, the events pipeline, shutdown, and reloading the configuration.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use arc_swap::ArcSwap;
use palisade_config::{Config, ConfigErrors};
use tokio::sync::{mpsc, watch};

use crate::metrics::Metrics;
use crate::snapshot::{Snapshot, StageFactory};

/// State shared by all threads.
pub struct Shared {
    pub snapshot: Arc<ArcSwap<Snapshot>>,
    pub(crate) factory: StageFactory,
    pub(crate) generation: AtomicU64,
    pub(crate) shutdown: watch::Sender<bool>,
    pub(crate) connections: AtomicUsize,
    pub ready: AtomicBool,
    pub(crate) control: Mutex<Option<mpsc::UnboundedSender<Control>>>,
    pub(crate) reload_lock: Mutex<()>,
    /// Every metric series of this server.
    pub metrics: Arc<Metrics>,
    /// The events pipeline (`None` when events are off).
    pub events: Option<palisade_events::Pipeline>,
    /// The database events can be queried from: SQLite or PostgreSQL (`None` for other sinks).
    pub events_db: Option<palisade_events::query::Store>,
    /// The sink, for display (`sqlite:/var/lib/palisade/events.db`).
    pub events_sink: String,
    /// The file `reload_file` and `POST /api/reload` re-read (set by the binary).
    pub(crate) config_path: Mutex<Option<PathBuf>>,
}

/// What the control thread is told.
pub(crate) enum Control {
    Snapshot(Arc<Snapshot>),
}

impl Shared {
    /// Number of client connections currently open.
    pub fn open_connections(&self) -> usize {
        self.connections.load(Ordering::Relaxed)
    }

    /// A receiver that turns true when shutdown starts.
    pub fn shared_shutdown(&self) -> watch::Receiver<bool> {
        self.shutdown.subscribe()
    }

    pub fn reload(&self, config: Config) -> Result<u64, ConfigErrors> {
        let r = self.reload_inner(config);
        let counter = if r.is_ok() { &self.metrics.reloads_ok } else { &self.metrics.reloads_failed };
        counter.fetch_add(1, Ordering::Relaxed);
        r
    }

    /// Set the configuration file that [`Shared::reload_file`] re-reads.
    pub fn set_config_path(&self, path: Option<PathBuf>) {
        *self.config_path.lock().unwrap_or_else(|e| e.into_inner()) = path;
    }

    pub fn config_path(&self) -> Option<PathBuf> {
        self.config_path.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Re-read the configuration file and reload (what SIGHUP and `POST /api/reload` do).
    pub fn reload_file(&self) -> Result<u64, ReloadError> {
        let Some(path) = self.config_path() else { return Err(ReloadError::NoFile) };
        match palisade_config::load_file(&path) {
            Ok(cfg) => self.reload(cfg).map_err(ReloadError::Config),
            Err(e) => {
                self.metrics.reloads_failed.fetch_add(1, Ordering::Relaxed);
                Err(ReloadError::Config(e))
            }
        }
    }

    fn reload_inner(&self, config: Config) -> Result<u64, ConfigErrors> {
        let _guard = self.reload_lock.lock().unwrap_or_else(|e| e.into_inner());
        let current = self.snapshot.load_full();
        let old = &current.config;
        let mut errors = Vec::new();
        let old_addrs: Vec<_> = old.listen.iter().map(|l| (l.addr, l.tls.is_some(), l.http2)).collect();
        let new_addrs: Vec<_> = config.listen.iter().map(|l| (l.addr, l.tls.is_some(), l.http2)).collect();
        if old_addrs != new_addrs {
            errors
                .push(palisade_config::ConfigError::file(&config.source, "listener addresses, TLS on/off and http2 cannot change on reload: restart Palisade"));
        }
        if old.workers != config.workers {
            errors.push(palisade_config::ConfigError::file(&config.source, "`workers` cannot change on reload: restart Palisade"));
        }
        if old.admin.as_ref().map(|a| a.addr) != config.admin.as_ref().map(|a| a.addr) {
            errors.push(palisade_config::ConfigError::file(&config.source, "`admin.addr` cannot change on reload: restart Palisade"));
        }
        if old.authz.as_ref().map(|a| a.addr) != config.authz.as_ref().map(|a| a.addr) {
            errors
                .push(palisade_config::ConfigError::file(&config.source, "`authz.addr` (and whether `authz` is on) cannot change on reload: restart Palisade"));
        }
        if crate::events::restart_key(old) != crate::events::restart_key(&config) {
            errors.push(palisade_config::ConfigError::file(
                &config.source,
                "`events` (sink, queue, batch, aggregation, retention, rotation) cannot change on reload: restart Palisade (redact_fields and sample_allowed can)",
            ));
        }
        if !errors.is_empty() {
            return Err(ConfigErrors(errors));
        }
        let generation = self.generation.fetch_add(1, Ordering::SeqCst) + 1;
        let snap = Arc::new(Snapshot::build_with(config, generation, &self.factory, &self.metrics)?);
        self.snapshot.store(snap.clone());
        if let Some(tx) = self.control.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
            let _ = tx.send(Control::Snapshot(snap));
        }
        tracing::info!(generation, "configuration reloaded");
        Ok(generation)
    }
}

/// Why a reload from the configuration file did not happen.
#[derive(Debug, thiserror::Error)]
pub enum ReloadError {
    #[error("no configuration file to reload (the demo runs an embedded configuration)")]
    NoFile,
    #[error("{0}")]
    Config(ConfigErrors),
}
