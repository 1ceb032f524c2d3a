//! The shell around the access stage (`palisade-access`, a pure library): the wall clock, reading
//! the files the `access:` section names, and three kinds of background threads per app, each
//! ending when a reload drops the stage:
//! - a file watcher that re-reads changed IP lists, keys, API key files and denylists every
//!   `reload` and swaps them in (a file that no longer parses is logged, the old data stays);
//! - a JWKS refresher for `jwt.jwks_url`: every `jwks_refresh`, and soon after a token names an
//!   unknown `kid` (at most once per `jwks_min_refetch`); a failed or garbage fetch keeps the
//!   last good key set;
//! - a Redis sync for `store: redis://...`: every `redis.sync_interval` the hits each key took
//!   locally are added to the shared GCRA state in one atomic script call, and the shared state
//!   comes back into the local table; the request path never waits for Redis.

use std::path::PathBuf;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use palisade_access::settings::{Settings, Store};
use palisade_access::stage::{self, AccessStage, Clock};
use palisade_config::yaml::Node;
use palisade_config::{AppConfig, Config, ConfigError};
use palisade_core::{Context, RequestView, Stage, Verdict};

use crate::stages::Use;

/// Nanoseconds since the Unix epoch, from the system clock.
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_nanos(&self) -> u64 {
        SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
    }
}

fn read(p: &std::path::Path) -> Result<String, palisade_config::read::ReadError> {
    crate::read_text(p)
}

/// Build the access stage of `app` from its `access:` section.
pub fn build(config: &Config, app: &AppConfig, node: &Node, path: &str, usage: &Use) -> Result<Box<dyn Stage>, Vec<ConfigError>> {
    let mut cx = palisade_config::decode::Ctx::new(config.source.clone());
    let settings = Settings::decode(&mut cx, node, path, &config.base_dir);
    if !cx.errors.is_empty() {
        return Err(cx.errors);
    }
    let Some(settings) = settings else { return Err(vec![ConfigError::file(&config.source, format!("{path}: could not be decoded"))]) };
    if let Store::Redis(url) = &settings.store {
        if let Err(e) = crate::redis::parse_url(url) {
            return Err(vec![ConfigError::file(&config.source, format!("{path}.store: {e}"))]);
        }
    }
    let parts = stage::load_files(&settings, &read)
        .map_err(|errs| errs.into_iter().map(|e| ConfigError::file(&config.source, format!("{path}: {e}"))).collect::<Vec<_>>())?;
    let stage = Arc::new(AccessStage::new(&app.name, &settings, parts, Arc::new(SystemClock)));
    let url = settings.jwt.as_ref().and_then(|j| j.jwks_url.clone());
    match usage {
        Use::Check(checks) => {
            if let Some(url) = &url {
                let key = format!("{path}.jwt.jwks_url");
                if checks.offline {
                    if let Ok(mut s) = checks.lock() {
                        s.push(format!("note: {key}: {url} was not fetched (--offline)"));
                    }
                } else if let Err(reason) = check_jwks(checks, url) {
                    let at = node.get("jwt").and_then(|j| j.get("jwks_url")).unwrap_or(node);
                    return Err(vec![ConfigError::new(&config.source, &at.origin, &key, format!("the JWKS at {url} cannot be used: {reason}"))]);
                }
            }
        }
        Use::Serve => {
            if let (Some(url), Some(jwks)) = (&url, stage.jwks()) {
                // The first fetch runs on the refresher thread; building waits for it a little
                // (so keys are usually there for the first request) but never for long, so a
                // hanging JWKS URL cannot hold up a start or a reload.
                let j = settings.jwt.as_ref().expect("jwt settings with a jwks_url");
                let (tx, rx) = std::sync::mpsc::channel();
                spawn_jwks(Arc::downgrade(&stage), url.clone(), j.jwks_refresh, j.jwks_min_refetch, app.name.clone(), tx);
                if rx.recv_timeout(Duration::from_secs(3)).is_err() && jwks.keys().is_empty() {
                    tracing::warn!(app = %app.name, url = %url, "access: the JWKS is not fetched yet; tokens are refused until it is");
                }
            }
            let files = settings.files();
            if !files.is_empty() {
                spawn_watch(Arc::downgrade(&stage), settings.clone(), files, app.name.clone());
            }
            if let (Store::Redis(url), Some(shared)) = (&settings.store, stage.shared()) {
                let target = crate::redis::parse_url(url).map_err(|e| vec![ConfigError::file(&config.source, format!("{path}.store: {e}"))])?;
                // One attempt before serving, so that a reachable store is in use from the first
                // request (fail-closed apps would refuse requests until the first sync).
                if crate::redis::Conn::connect(&target, settings.redis.timeout).and_then(|mut c| c.ping()).is_ok() {
                    shared.set_healthy(true);
                } else {
                    tracing::error!(app = %app.name, store = %url, "access: the rate-limit store is unreachable; {}", if shared.fail_open { "limits are enforced per instance until it is back" } else { "limited requests are refused until it is back" });
                }
                spawn_sync(Arc::downgrade(&stage), target, settings.redis.sync_interval, settings.redis.timeout, app.name.clone());
            }
        }
    }
    Ok(Box::new(SharedAccess(stage)))
}

/// The access stage shared with its background threads.
struct SharedAccess(Arc<AccessStage>);

impl Stage for SharedAccess {
    fn name(&self) -> &'static str {
        self.0.name()
    }
    fn check_head(&self, req: &RequestView<'_>, cx: &mut Context) -> Verdict {
        self.0.check_head(req, cx)
    }
    fn counters(&self) -> Vec<palisade_core::CounterSample> {
        self.0.counters()
    }
}

/// Sleep `total` in steps, returning false as soon as the stage is gone.
fn wait_while_alive<T>(stage: &Weak<T>, total: Duration) -> bool {
    let mut waited = Duration::ZERO;
    while waited < total {
        let step = (total - waited).min(Duration::from_millis(100));
        #[allow(clippy::disallowed_methods)] // a dedicated thread, not an event loop
        std::thread::sleep(step);
        waited += step;
        if stage.strong_count() == 0 {
            return false;
        }
    }
    true
}

/// How a JWKS is fetched, by the refresher and by `palisade check`.
pub const JWKS_LIMITS: crate::fetch::Limits = crate::fetch::Limits { timeout: Duration::from_secs(10), max_bytes: 4 * 1024 * 1024, max_redirects: 3 };

/// `palisade check`: fetch `url` as the refresher would (once per check run) and say why it
/// cannot be used (unreachable, an HTTP error, not JSON, no usable key). Ok: the number of keys.
fn check_jwks(checks: &crate::stages::Checks, url: &str) -> Result<usize, String> {
    if let Some(done) = checks.jwks.lock().ok().and_then(|m| m.get(url).cloned()) {
        return done;
    }
    let outcome = fetch_jwks(url)
        .map(|k| k.keys.len())
        // The fetcher's messages start with the URL, which the caller already names.
        .map_err(|e| e.message().strip_prefix(url).and_then(|r| r.strip_prefix(": ")).unwrap_or(e.message()).to_string());
    if let Ok(mut m) = checks.jwks.lock() {
        m.insert(url.to_string(), outcome.clone());
    }
    outcome
}

pub fn fetch_jwks(url: &str) -> Result<palisade_access::jwt::KeySet, crate::Error> {
    let text = crate::fetch::get(url, &[], JWKS_LIMITS)?;
    let (keys, skipped) = palisade_access::jwt::keys_from_jwks(&text).map_err(|e| crate::Error::caused_by(crate::ErrorKind::Jwks, e.to_string(), e))?;
    for s in skipped {
        tracing::debug!(url = %url, "access: JWKS {s} skipped");
    }
    Ok(keys)
}

fn spawn_jwks(stage: Weak<AccessStage>, url: String, every: Duration, min_refetch: Duration, app: String, first: std::sync::mpsc::Sender<()>) {
    let spawned = std::thread::Builder::new().name(format!("jwks-{app}")).spawn(move || {
        let mut last = Instant::now();
        let mut last_ok = true;
        let mut wanted = false;
        let mut first = Some(first);
        loop {
            if first.is_none() && !wait_while_alive(&stage, Duration::from_millis(100)) {
                return;
            }
            let Some(s) = stage.upgrade() else { return };
            let Some(jwks) = s.jwks().cloned() else { return };
            drop(s);
            wanted |= jwks.take_refetch_request();
            let since = last.elapsed();
            // After a failure retry at the refetch pace rather than waiting a whole period.
            let due = first.is_some() || since >= every || (!last_ok && since >= min_refetch.max(Duration::from_secs(1))) || (wanted && since >= min_refetch);
            if !due {
                continue;
            }
            wanted = false;
            last = Instant::now();
            match fetch_jwks(&url) {
                Ok(keys) => {
                    jwks.replace(keys);
                    last_ok = true;
                    tracing::debug!(app = %app, url = %url, "access: JWKS refreshed");
                }
                Err(e) => {
                    jwks.failed.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    last_ok = false;
                    tracing::warn!(app = %app, url = %url, error = %e, "access: JWKS fetch failed; the last good key set stays in use");
                }
            }
            if let Some(tx) = first.take() {
                let _ = tx.send(());
            }
        }
    });
    if let Err(e) = spawned {
        tracing::error!(error = %e, "access: cannot start the JWKS refresh thread");
    }
}

fn stamp(files: &[PathBuf]) -> Vec<Option<(SystemTime, u64)>> {
    files.iter().map(|f| std::fs::metadata(f).ok().and_then(|m| Some((m.modified().ok()?, m.len())))).collect()
}

fn spawn_watch(stage: Weak<AccessStage>, settings: Settings, files: Vec<PathBuf>, app: String) {
    let spawned = std::thread::Builder::new().name(format!("access-files-{app}")).spawn(move || {
        let mut seen = stamp(&files);
        loop {
            if !wait_while_alive(&stage, settings.reload) {
                return;
            }
            let now = stamp(&files);
            if now == seen {
                continue;
            }
            seen = now;
            match stage::load_files(&settings, &read) {
                Ok(parts) => {
                    let Some(s) = stage.upgrade() else { return };
                    s.apply_files(parts);
                    tracing::info!(app = %app, "access: files changed; reloaded");
                }
                Err(errs) => tracing::error!(app = %app, errors = %errs.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "), "access: a changed file does not load; the previous data stays in use"),
            }
        }
    });
    if let Err(e) = spawned {
        tracing::error!(error = %e, "access: cannot start the file watcher");
    }
}

/// Adds each key's hits to its shared TAT (GCRA) and returns every key's TAT, atomically.
/// ARGV[1] is now (ns since the epoch); then per key its increment (ns) and TTL (ms).
/// Numbers are doubles in Lua: at ~1.8e18 ns their step is 256 ns, far below any limit's
/// emission interval.
pub const SYNC_SCRIPT: &str = r#"
local now = tonumber(ARGV[1])
local out = {}
for i, key in ipairs(KEYS) do
  local inc = tonumber(ARGV[i * 2])
  local ttl = tonumber(ARGV[i * 2 + 1])
  local tat = tonumber(redis.call('GET', key) or '0') or 0
  if inc > 0 then
    if tat < now then tat = now end
    tat = tat + inc
    redis.call('SET', key, string.format('%.0f', tat), 'PX', ttl)
  end
  out[i] = string.format('%.0f', tat)
end
return out
"#;

const BATCH: usize = 512;

fn sync_once(conn: &mut crate::redis::Conn, sha: &str, s: &AccessStage) -> Result<usize, crate::Error> {
    let redis_error = |m: String| crate::Error::new(crate::ErrorKind::Redis, m);
    let table = s.table();
    let now = SystemClock.now_nanos();
    let items = table.drain_shared(now);
    if items.is_empty() {
        return Ok(0);
    }
    let mut done = 0;
    for chunk in items.chunks(BATCH) {
        let keys: Vec<&[u8]> = chunk.iter().map(|i| i.key.as_bytes()).collect();
        let mut args: Vec<String> = Vec::with_capacity(1 + 2 * chunk.len());
        args.push(now.to_string());
        for it in chunk {
            args.push((it.hits as u64 * it.t_ns).to_string());
            args.push((it.ttl_ns / 1_000_000).max(1000).to_string());
        }
        let argv: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        let reply = match conn.eval(SYNC_SCRIPT, sha, &keys, &argv) {
            Ok(crate::redis::Reply::Array(Some(v))) if v.len() == chunk.len() => v,
            Ok(crate::redis::Reply::Error(e)) => {
                table.restore_pending(&items[done..]);
                return Err(redis_error(e));
            }
            Ok(other) => {
                table.restore_pending(&items[done..]);
                return Err(redis_error(format!("unexpected reply {other:?}")));
            }
            Err(e) => {
                table.restore_pending(&items[done..]);
                return Err(e);
            }
        };
        for (it, r) in chunk.iter().zip(reply) {
            if let Some(tat) = r.as_u64() {
                table.apply_shared(&it.key, tat);
            }
        }
        done += chunk.len();
    }
    Ok(done)
}

fn spawn_sync(stage: Weak<AccessStage>, target: crate::redis::Target, every: Duration, timeout: Duration, app: String) {
    let sha = crate::redis::sha1_hex(SYNC_SCRIPT.as_bytes());
    let spawned = std::thread::Builder::new().name(format!("ratelimit-sync-{app}")).spawn(move || {
        let mut conn: Option<crate::redis::Conn> = None;
        let mut last_contact = Instant::now();
        let mut last_attempt: Option<Instant> = None;
        loop {
            if !wait_while_alive(&stage, every) {
                return;
            }
            let Some(s) = stage.upgrade() else { return };
            let Some(shared) = s.shared().cloned() else { return };
            if conn.is_none() {
                // Reconnect at most every 250 ms.
                if last_attempt.is_some_and(|t| t.elapsed() < Duration::from_millis(250)) {
                    continue;
                }
                last_attempt = Some(Instant::now());
                match crate::redis::Conn::connect(&target, timeout) {
                    Ok(c) => conn = Some(c),
                    Err(e) => {
                        // A failed connection is a store error too (the metric counts both).
                        shared.sync_errors.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        if shared.healthy() {
                            tracing::warn!(app = %app, error = %e, "access: rate-limit store unreachable");
                        }
                        shared.set_healthy(false);
                        continue;
                    }
                }
            }
            let Some(c) = conn.as_mut() else { continue };
            let result = match sync_once(c, &sha, &s) {
                Ok(0) if last_contact.elapsed() >= Duration::from_secs(1) => c.ping().map(|_| 0),
                r => r,
            };
            match result {
                Ok(_) => {
                    last_contact = Instant::now();
                    shared.syncs.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if !shared.healthy() {
                        tracing::info!(app = %app, "access: rate-limit store reachable; limits are shared again");
                    }
                    shared.set_healthy(true);
                }
                Err(e) => {
                    shared.sync_errors.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if shared.healthy() {
                        tracing::warn!(app = %app, error = %e, "access: rate-limit sync failed; {}", if shared.fail_open { "limits are enforced per instance until the store is back" } else { "limited requests are refused until the store is back" });
                    }
                    shared.set_healthy(false);
                    conn = None;
                }
            }
        }
    });
    if let Err(e) = spawned {
        tracing::error!(error = %e, "access: cannot start the rate-limit sync thread");
    }
}
