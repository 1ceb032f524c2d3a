//! Builds each app's pipeline stages from its configuration sections: the wiring between the
//! decision engines (pure libraries) and the proxy. Also owns what those engines must not do
//! themselves: reading spec files, fetching specs by URL, and refreshing them periodically.

use std::cell::RefCell;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use palisade_config::yaml::Node;
use palisade_config::{AppConfig, Config, ConfigError};
use palisade_core::{Context, RequestView, ResponseView, Stage, Verdict};
use palisade_openapi::judge::Judge;
use palisade_openapi::settings::{Settings, Source};
use palisade_openapi::stage::OpenApiStage;
use palisade_openapi::{Fetch, FetchError, SpecError};
use palisade_proxy::StageFactory;

/// How the stages are used.
#[derive(Clone)]
pub enum Use {
    /// `palisade check`: build to find every problem; spec warnings are collected here.
    Check(Arc<Checks>),
    /// Serving: spec warnings are logged and specs with a `refresh` period are re-read.
    Serve,
}

/// What one `palisade check` run collects and may do. Derefs to its list of warnings.
#[derive(Default)]
pub struct Checks {
    warnings: Mutex<Vec<String>>,
    /// `--offline`: documents named by URL that only serve at run time (JWKS) are not fetched.
    pub offline: bool,
    /// Each JWKS URL is fetched once per check, however many apps name it: URL -> outcome.
    pub(crate) jwks: Mutex<std::collections::HashMap<String, Result<usize, String>>>,
}

impl Checks {
    pub fn new(offline: bool) -> Checks {
        Checks { offline, ..Checks::default() }
    }
}

impl std::ops::Deref for Checks {
    type Target = Mutex<Vec<String>>;
    fn deref(&self) -> &Self::Target {
        &self.warnings
    }
}

pub fn factory(usage: Use) -> StageFactory {
    // Apps with the same detection settings share one engine (the default settings above all:
    // thousands of apps must not build thousands of engines). Keyed by the settings' debug
    // form, which lists every field; held weakly, so engines go with the snapshots using them.
    let engines: Mutex<EngineCache> = Mutex::default();
    Arc::new(move |config: &Config, app: &AppConfig| {
        let detection = |node: Option<&Node>| detection(config, app, node, &engines);
        let mut stages: Vec<Box<dyn Stage>> = Vec::new();
        let mut errors = Vec::new();
        for (key, node, loc) in &app.stages {
            match key.as_str() {
                "access" => match crate::access::build(config, app, node, &stage_path(config, app, "access"), &usage) {
                    Ok(s) => stages.push(s),
                    Err(e) => errors.extend(e),
                },
                "openapi" => match openapi(config, app, node, &usage) {
                    Ok(s) => stages.push(s),
                    Err(e) => errors.extend(e),
                },
                "graphql" => match graphql(config, app, node) {
                    Ok(Some(s)) => stages.push(s),
                    Ok(None) => {}
                    Err(e) => errors.extend(e),
                },
                "rules" => match rules(config, app, node, loc) {
                    Ok(Some(s)) => stages.push(s),
                    Ok(None) => {}
                    Err(e) => errors.extend(e),
                },
                "detection" => match detection(Some(node)) {
                    Ok(Some(s)) => stages.push(s),
                    Ok(None) => {}
                    Err(e) => errors.extend(e),
                },
                other => errors.push(loc.error(&config.source, format!("`{other}` is not available in this build yet"))),
            }
        }
        // Detection is on (block, balanced) for apps that do not configure it.
        if !app.stages.iter().any(|(k, _, _)| k == "detection") {
            match detection(None) {
                Ok(Some(s)) => stages.push(s),
                Ok(None) => {}
                Err(e) => errors.extend(e),
            }
        }
        if errors.is_empty() {
            Ok(stages)
        } else {
            Err(errors)
        }
    })
}

/// Reads files and fetches URLs; remembers what it read so that a refresh can tell whether
/// anything changed. Configured headers go only to the spec's own origin.
struct SpecFetch<'a> {
    headers: &'a [(String, String)],
    offline: bool,
    origin: Option<String>,
    seen: RefCell<std::collections::hash_map::DefaultHasher>,
    /// Every document read: its location and a digest of its text.
    docs: RefCell<Vec<(String, u64)>>,
}

/// A digest of one document's text.
fn text_digest(text: &str) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut h);
    h.finish()
}

/// Whether a spec location is an http(s) URL (else a file path).
fn is_url(location: &str) -> bool {
    let lower = location.get(..8).unwrap_or(location).to_ascii_lowercase();
    lower.starts_with("http://") || lower.starts_with("https://")
}

fn origin_of(url: &str) -> Option<String> {
    let scheme_end = url.find("://")? + 3;
    let end = url[scheme_end..].find(['/', '?']).map_or(url.len(), |i| scheme_end + i);
    Some(url[..end].to_ascii_lowercase())
}

impl Fetch for SpecFetch<'_> {
    fn fetch(&self, location: &str) -> Result<String, FetchError> {
        let text = if is_url(location) {
            if self.offline {
                return Err("not fetched: offline (--offline)".into());
            }
            let same_origin = self.origin.is_some() && origin_of(location) == self.origin;
            let headers = if same_origin { self.headers } else { &[] };
            crate::fetch::get(location, headers, crate::fetch::Limits::default()).map_err(|e| FetchError::from(e.to_string()))?
        } else {
            palisade_openapi::FsFetch.fetch(location)?
        };
        location.hash(&mut *self.seen.borrow_mut());
        text.hash(&mut *self.seen.borrow_mut());
        self.docs.borrow_mut().push((location.to_string(), text_digest(&text)));
        Ok(text)
    }
}

fn spec_errors(errs: Vec<SpecError>) -> Vec<ConfigError> {
    errs.into_iter()
        .map(|e| ConfigError {
            file: e.file,
            line: e.line,
            col: e.col,
            env: None,
            path: if e.pointer.is_empty() { String::new() } else { format!("#{}", e.pointer) },
            message: e.message,
        })
        .collect()
}

/// What [`build`] calls when the memory of a loading step is freed (see
/// [`on_freed_memory`]).
static RELEASE_FREED: std::sync::OnceLock<fn()> = std::sync::OnceLock::new();

/// Have `release` called after each step of loading a spec frees its memory. The binary
/// gives a function that returns freed pages to the operating system: the allocator keeps
/// them otherwise, and a large spec's text, tree and parse buffers would stay in the
/// process's RSS after loading (and add to the peak of the next reload).
pub fn on_freed_memory(release: fn()) {
    let _ = RELEASE_FREED.set(release);
}

fn release_freed_memory() {
    if let Some(release) = RELEASE_FREED.get() {
        release();
    }
}

/// Load and compile the spec of `settings` (files and URLs). Returns the judge, the warnings,
/// and a digest of every document read.
pub fn build(settings: &Settings) -> Result<(Judge, Vec<String>, u64), Vec<ConfigError>> {
    build_with_documents(settings).map(|b| (b.judge, b.warnings, b.digest))
}

/// What [`build_with_documents`] gives.
struct Built {
    judge: Judge,
    warnings: Vec<String>,
    /// A digest of every document read.
    digest: u64,
    /// Every document read, with a digest of its text.
    docs: Vec<(String, u64)>,
}

/// A compiled spec of the running configuration, and what it was built from.
struct Compiled {
    settings: Settings,
    /// Every document read, with a digest of its text.
    docs: Vec<(String, u64)>,
    warnings: Vec<String>,
    digest: u64,
    /// Held by the stages that use it; gone when no configuration does.
    judge: Weak<Judge>,
}

/// Specs compiled for serving, so that a reload whose spec is unchanged (same settings, every
/// document read from a file with the same text) shares the compiled form instead of building
/// a second one beside it: a large spec would otherwise be in memory twice while the old
/// configuration drains, and compiled twice.
static COMPILED: Mutex<Vec<Compiled>> = Mutex::new(Vec::new());

/// The judge of `settings` for serving: the running configuration's when its spec files are
/// unchanged, else a new one (remembered for the next reload). Specs fetched from a URL are
/// always fetched again.
fn serving_judge(settings: &Settings) -> Result<(Arc<Judge>, Vec<String>, u64), Vec<ConfigError>> {
    let unchanged = |c: &Compiled| {
        c.settings == *settings
            && c.docs
                .iter()
                .all(|(location, digest)| !is_url(location) && palisade_openapi::FsFetch.fetch(location).is_ok_and(|text| text_digest(&text) == *digest))
    };
    let mut compiled = COMPILED.lock().unwrap_or_else(|e| e.into_inner());
    compiled.retain(|c| c.judge.strong_count() > 0);
    if let Some(c) = compiled.iter().find(|c| c.settings == *settings) {
        if let Some(judge) = c.judge.upgrade().filter(|_| unchanged(c)) {
            return Ok((judge, c.warnings.clone(), c.digest));
        }
    }
    drop(compiled);
    let Built { judge, warnings, digest, docs } = build_with_documents(settings)?;
    let judge = Arc::new(judge);
    let mut compiled = COMPILED.lock().unwrap_or_else(|e| e.into_inner());
    compiled.retain(|c| c.settings != *settings && c.judge.strong_count() > 0);
    compiled.push(Compiled { settings: settings.clone(), docs, warnings: warnings.clone(), digest, judge: Arc::downgrade(&judge) });
    Ok((judge, warnings, digest))
}

/// [`build`], also returning every document read with a digest of its text.
fn build_with_documents(settings: &Settings) -> Result<Built, Vec<ConfigError>> {
    let location = settings.source.to_string();
    let fetch = SpecFetch {
        headers: &settings.fetch_headers,
        origin: match &settings.source {
            Source::Url(u) => origin_of(u),
            Source::File(_) => None,
        },
        offline: settings.offline,
        seen: RefCell::new(Default::default()),
        docs: RefCell::new(Vec::new()),
    };
    let set = palisade_openapi::load(&location, &fetch, &settings.load_limits()).map_err(spec_errors)?;
    // The documents' text and parse buffers are gone: their pages go back before compiling.
    release_freed_memory();
    let opts = settings.compile_options();
    let compiled = palisade_openapi::compile_with_warnings(&set, &opts);
    drop(set);
    // And so do the pages of the spec's tree, once compiled.
    release_freed_memory();
    let (api, warnings) = compiled.map_err(spec_errors)?;
    let warnings = warnings.iter().map(|w| w.to_string()).collect();
    let digest = fetch.seen.borrow().finish();
    let judge = Judge::new(api, settings.clone()).map_err(|errs| {
        errs.into_iter().map(|e| ConfigError { file: String::new(), line: e.line, col: e.col, env: None, path: e.path, message: e.message }).collect::<Vec<_>>()
    })?;
    Ok(Built { judge, warnings, digest, docs: fetch.docs.into_inner() })
}

fn openapi(config: &Config, app: &AppConfig, node: &Node, usage: &Use) -> Result<Box<dyn Stage>, Vec<ConfigError>> {
    let base = config.base_dir.clone();
    let mut cx = palisade_config::decode::Ctx::new(config.source.clone());
    let path = stage_path(config, app, "openapi");
    let settings = Settings::decode(&mut cx, node, &path, &base);
    if !cx.errors.is_empty() {
        return Err(cx.errors);
    }
    let Some(mut settings) = settings else { return Err(vec![ConfigError::file(&config.source, format!("{path}: could not be decoded"))]) };
    if let Use::Check(checks) = usage {
        settings.offline = checks.offline;
        if let (true, Source::Url(url)) = (checks.offline, &settings.source) {
            if let Ok(mut s) = checks.lock() {
                s.push(format!("note: {path}.spec: {url} was not fetched (--offline); the spec is not checked"));
            }
            return Ok(Box::new(Unchecked));
        }
    }
    // The spec's own location in the configuration (short form `openapi: FILE` or `spec:`).
    let spec_node = node.get("spec").unwrap_or(node);
    let spec_loc = palisade_config::Loc::at(spec_node, if node.get("spec").is_some() { format!("{path}.spec") } else { path.clone() });
    let built = match usage {
        Use::Check(_) => build(&settings).map(|(judge, warnings, digest)| (Arc::new(judge), warnings, digest)),
        Use::Serve => serving_judge(&settings),
    };
    let (judge, warnings, digest) = built.map_err(|errs| {
        errs.into_iter()
            .map(|mut e| {
                if e.file.is_empty() {
                    e.file = config.source.clone();
                } else if e.line == 0 && e.path.is_empty() {
                    // The entry document could not be read at all: point at where it is named.
                    e = spec_loc.error(&config.source, format!("cannot load the spec {}: {}", e.file, e.message));
                }
                e
            })
            .collect::<Vec<_>>()
    })?;
    match usage {
        Use::Check(sink) => {
            if let Ok(mut s) = sink.lock() {
                s.extend(warnings.into_iter().map(|w| format!("warning: {w}")));
            }
        }
        Use::Serve => {
            for w in &warnings {
                tracing::warn!(app = %app.name, "openapi: {w}");
            }
        }
    }
    let stage = Arc::new(OpenApiStage::shared(judge));
    if let (Use::Serve, Some(every)) = (usage, settings.refresh) {
        spawn_refresh(Arc::downgrade(&stage), settings, every, digest, app.name.clone());
    }
    Ok(Box::new(Shared(stage)))
}

/// The detection stage of an app: its `detection:` section, or the defaults when absent.
/// `None` when the mode is `off`.
fn detection(config: &Config, app: &AppConfig, node: Option<&Node>, engines: &Mutex<EngineCache>) -> Result<Option<Box<dyn Stage>>, Vec<ConfigError>> {
    let settings = decode_detection(config, app, node)?;
    let all_off = settings.mode == palisade_core::Mode::Off
        && settings.paths.iter().all(|p| p.mode.is_none_or(|m| m == palisade_core::Mode::Off))
        && settings.operations.iter().all(|o| o.mode.is_none_or(|m| m == palisade_core::Mode::Off));
    if all_off {
        return Ok(None);
    }
    let key = format!("{settings:?}");
    let mut cache = engines.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(stage) = cache.get(&key).and_then(Weak::upgrade) {
        return Ok(Some(Box::new(Shared(stage))));
    }
    let stage = palisade_detect::stage::DetectionStage::new(&settings)
        .map(Arc::new)
        .map_err(|e| vec![ConfigError::file(&config.source, format!("{}: {e}", stage_path(config, app, "detection")))])?;
    cache.retain(|_, w| w.strong_count() > 0);
    cache.insert(key, Arc::downgrade(&stage));
    Ok(Some(Box::new(Shared(stage))))
}

/// The detection settings of an app: its `detection:` section, or the defaults when absent
/// (what the proxy and `palisade detect eval --config` build the stage from).
pub fn detection_settings(config: &Config, app: &AppConfig) -> Result<palisade_detect::settings::Settings, Vec<ConfigError>> {
    decode_detection(config, app, app.stages.iter().find(|(k, _, _)| k == "detection").map(|(_, n, _)| n))
}

fn decode_detection(config: &Config, app: &AppConfig, node: Option<&Node>) -> Result<palisade_detect::settings::Settings, Vec<ConfigError>> {
    let Some(node) = node else {
        return Ok(palisade_detect::settings::Settings::default());
    };
    let mut cx = palisade_config::decode::Ctx::new(config.source.clone());
    let path = stage_path(config, app, "detection");
    let s = palisade_detect::settings::Settings::decode(&mut cx, node, &path);
    if let (Some(ops), Some(s)) = (node.get("operations"), &s) {
        if !s.operations.is_empty() && !app.stages.iter().any(|(k, _, _)| k == "openapi") {
            cx.error(&ops.origin, &format!("{path}.operations"), "overrides per operation need the app's `openapi:` section (it names the operation)");
        }
    }
    if !cx.errors.is_empty() {
        return Err(cx.errors);
    }
    Ok(s.unwrap_or_default())
}

type EngineCache = std::collections::HashMap<String, Weak<palisade_detect::stage::DetectionStage>>;

/// The GraphQL stage of an app: its endpoints, with their schema files read and indexed once.
/// `None` when every endpoint is `off`.
fn graphql(config: &Config, app: &AppConfig, node: &Node) -> Result<Option<Box<dyn Stage>>, Vec<ConfigError>> {
    let mut cx = palisade_config::decode::Ctx::new(config.source.clone());
    let path = stage_path(config, app, "graphql");
    let settings = palisade_graphql::settings::Settings::decode(&mut cx, node, &path, &config.base_dir);
    if !cx.errors.is_empty() {
        return Err(cx.errors);
    }
    let Some(settings) = settings else { return Err(vec![ConfigError::file(&config.source, format!("{path}: could not be decoded"))]) };
    let mut endpoints = Vec::new();
    let mut errors = Vec::new();
    for ep in settings.endpoints {
        let schema = match &ep.schema {
            None => None,
            Some(file) => match std::fs::read_to_string(file)
                .map_err(|e| format!("cannot read {}: {e}", file.display()))
                .and_then(|sdl| palisade_graphql::Schema::parse(&sdl, &file.display().to_string()).map_err(|e| e.to_string()))
            {
                Ok(s) => Some(Arc::new(s)),
                Err(e) => {
                    errors.push(ConfigError::file(&config.source, format!("{}.schema: {e}", ep.key_path)));
                    continue;
                }
            },
        };
        endpoints.push((ep, schema));
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let stage = palisade_graphql::stage::GraphqlStage::new(endpoints);
    Ok((!stage.is_empty()).then(|| Box::new(stage) as Box<dyn Stage>))
}

/// The user rules of an app (`rules:`, inline and files). `None` when there are none.
fn rules(config: &Config, app: &AppConfig, node: &Node, loc: &palisade_config::Loc) -> Result<Option<Box<dyn Stage>>, Vec<ConfigError>> {
    let mut cx = palisade_config::decode::Ctx::new(config.source.clone());
    let detectors = palisade_detect::settings::known_detector_names();
    let opts = palisade_rules::settings::Options { detectors: &detectors };
    let path = stage_path(config, app, "rules");
    let read = |p: &std::path::Path| crate::read_text(p);
    let list = palisade_rules::settings::decode(&mut cx, node, &path, &config.base_dir, &opts, &read);
    if !cx.errors.is_empty() {
        return Err(cx.errors);
    }
    if list.is_empty() {
        return Ok(None);
    }
    let compiled = palisade_rules::Rules::compile(list).map_err(|e| vec![ConfigError::file(&config.source, format!("{path}: {e}"))])?;
    if compiled.uses_operation() && !app.stages.iter().any(|(k, _, _)| k == "openapi") {
        return Err(vec![loc.error(&config.source, "a rule matches `operation`, which needs the app's `openapi:` section")]);
    }
    Ok(Some(Box::new(palisade_rules::RulesStage::new(compiled))))
}

/// Key path of an app's stage section, for errors (`apps[2].openapi`).
fn stage_path(_config: &Config, app: &AppConfig, key: &str) -> String {
    palisade_config::decode::join(&app.loc.path, key)
}

/// Re-read the spec every `every`; swap in a changed one that compiles; keep the old one on
/// failure. Ends when the stage is dropped (its configuration was replaced).
fn spawn_refresh(stage: Weak<OpenApiStage>, settings: Settings, every: Duration, mut digest: u64, app: String) {
    let spawned = std::thread::Builder::new().name(format!("spec-refresh-{app}")).spawn(move || loop {
        let mut waited = Duration::ZERO;
        while waited < every {
            let step = (every - waited).min(Duration::from_millis(250));
            #[allow(clippy::disallowed_methods)] // a dedicated thread, not an event loop
            std::thread::sleep(step);
            waited += step;
            if stage.strong_count() == 0 {
                return;
            }
        }
        match build(&settings) {
            Ok((judge, _, d)) if d != digest => {
                let Some(s) = stage.upgrade() else { return };
                s.replace(judge);
                digest = d;
                tracing::info!(app = %app, spec = %settings.source, "openapi: spec changed; the new version is in use");
            }
            Ok(_) => {}
            Err(errs) => {
                let all: Vec<String> = errs.iter().map(|e| e.to_string()).collect();
                tracing::error!(app = %app, spec = %settings.source, errors = %all.join("; "), "openapi: the refreshed spec does not load; the previous one keeps serving");
            }
        }
    });
    if let Err(e) = spawned {
        tracing::error!(error = %e, "openapi: cannot start the spec refresh thread");
    }
}

/// The place of an OpenAPI stage whose spec `check --offline` could not read: allows all.
struct Unchecked;

impl Stage for Unchecked {
    fn name(&self) -> &'static str {
        "openapi"
    }
}

/// A stage shared with a refresh thread, or between apps.
struct Shared<S>(Arc<S>);

impl<S: Stage> Stage for Shared<S> {
    fn name(&self) -> &'static str {
        self.0.name()
    }
    fn check_head(&self, req: &RequestView<'_>, cx: &mut Context) -> Verdict {
        self.0.check_head(req, cx)
    }
    fn wants_body(&self) -> bool {
        self.0.wants_body()
    }
    fn check_body(&self, req: &RequestView<'_>, cx: &mut Context) -> Verdict {
        self.0.check_body(req, cx)
    }
    fn check_message(&self, req: &RequestView<'_>, message: &str, cx: &mut Context) -> Verdict {
        self.0.check_message(req, message, cx)
    }
    fn wants_messages(&self, req: &RequestView<'_>) -> bool {
        self.0.wants_messages(req)
    }
    fn wants_response(&self) -> bool {
        self.0.wants_response()
    }
    fn check_response(&self, req: &RequestView<'_>, resp: &ResponseView<'_>, cx: &Context) -> Verdict {
        self.0.check_response(req, resp, cx)
    }
    fn counters(&self) -> Vec<palisade_core::CounterSample> {
        self.0.counters()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC: &str = "openapi: 3.0.3\ninfo: {title: t, version: '1'}\npaths:\n  /items:\n    get:\n      responses: {'200': {description: ok}}\n";

    fn settings(dir: &std::path::Path, extra: &str) -> Settings {
        let node = palisade_config::yaml::parse(&format!("spec: api.yaml\n{extra}")).unwrap();
        let mut cx = palisade_config::decode::Ctx::new("test.yaml");
        let s = Settings::decode(&mut cx, &node, "apps[0].openapi", dir).unwrap();
        assert!(cx.errors.is_empty(), "{:?}", cx.errors);
        s
    }

    #[test]
    fn a_reload_with_an_unchanged_spec_shares_its_compiled_form() {
        struct Dir(std::path::PathBuf);
        impl Drop for Dir {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.0);
            }
        }
        impl Dir {
            fn path(&self) -> &std::path::Path {
                &self.0
            }
        }
        let dir = Dir(std::env::temp_dir().join(format!("palisade-spec-reuse-{}", std::process::id())));
        std::fs::create_dir_all(dir.path()).unwrap();
        std::fs::write(dir.path().join("api.yaml"), SPEC).unwrap();
        let s = settings(dir.path(), "");
        let (first, _, digest) = serving_judge(&s).unwrap();
        // Same settings, same text: the running judge.
        let (again, _, d) = serving_judge(&s).unwrap();
        assert!(Arc::ptr_eq(&first, &again));
        assert_eq!(d, digest);
        // Other settings: compiled anew.
        let (other, _, _) = serving_judge(&settings(dir.path(), "request: monitor\n")).unwrap();
        assert!(!Arc::ptr_eq(&first, &other));
        // The file changed: compiled anew, and the new spec is the one in use.
        std::fs::write(dir.path().join("api.yaml"), SPEC.replace("/items", "/things")).unwrap();
        let (changed, _, d) = serving_judge(&s).unwrap();
        assert!(!Arc::ptr_eq(&first, &changed));
        assert_ne!(d, digest);
        // Once no configuration holds a judge, it is not kept for the next reload.
        let weak = Arc::downgrade(&changed);
        drop((first, again, other, changed));
        assert_eq!(weak.strong_count(), 0);
    }
}
