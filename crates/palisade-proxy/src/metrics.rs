//! Prometheus metrics, hand-written: counters and histograms in per-worker shards of plain
//! atomics, summed when `/metrics` is scraped.
//!
//! Why not `prometheus-client`: its labelled families look up the label set in a map behind a
//! lock on every observation, and it adds build time. Here an app's metrics are resolved once
//! per configuration snapshot (`App::metrics`), so recording a request is a few relaxed atomic
//! adds on the worker's own shard (its own cache lines): no lock, no hashing, no allocation.
//!
//! Series: requests by app, verdict and status; latency histograms end to end (request head in,
//! response head out) and per pipeline phase (head, body, response stages); upstream errors by
//! kind; events produced / written / aggregated / dropped / in flight; configuration reloads;
//! open connections; process RSS; and the counters stages keep about their own decisions
//! (`Stage::counters`: rate-limit hits, flood bans, JWT failures, JWKS refreshes, Redis errors
//! and fail-open / fail-closed decisions), read from the current snapshot at scrape time.

use std::cell::Cell;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Histogram bucket upper bounds, in microseconds.
pub const BUCKETS_US: [u64; 16] = [50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 500_000, 1_000_000, 2_500_000, 10_000_000];
const NB: usize = BUCKETS_US.len();

/// Statuses 100..=599 are counted one by one.
const STATUSES: usize = 500;

/// What the pipeline decided about a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Allow = 0,
    Block = 1,
    Monitor = 2,
}

const VERDICTS: [&str; 3] = ["allow", "block", "monitor"];

/// Pipeline phases timed separately.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PhaseKind {
    Head = 0,
    Body = 1,
    Response = 2,
}

const PHASES: [&str; 3] = ["head", "body", "response"];

/// Upstream failures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UpstreamErr {
    Timeout = 0,
    Connect = 1,
    Protocol = 2,
}

const UPSTREAM_ERRS: [&str; 3] = ["timeout", "connect", "protocol"];

/// Why a proxied WebSocket connection ended (`palisade_websocket_closes_total`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WsClose {
    /// A close frame went through (either side closed).
    Normal = 0,
    /// The client closed its connection without a close frame.
    ClientGone = 1,
    /// The upstream closed its connection without a close frame.
    UpstreamGone = 2,
    IdleTimeout = 3,
    MaxLifetime = 4,
    Shutdown = 5,
    /// A client message was blocked by a stage (1008).
    Blocked = 6,
    /// A client message was larger than `max_message` (1009).
    TooBig = 7,
    /// An upstream message was larger than `max_message` (1009).
    UpstreamTooBig = 8,
    /// A malformed client frame (1002).
    ProtocolError = 9,
    /// An inspected client text message that is not UTF-8 (1007).
    InvalidUtf8 = 10,
    /// A malformed upstream frame (1002).
    UpstreamProtocolError = 11,
    /// A read or write failed.
    Io = 12,
}

const WS_CLOSES: [&str; 13] = [
    "normal",
    "client_gone",
    "upstream_gone",
    "idle_timeout",
    "max_lifetime",
    "shutdown",
    "blocked",
    "message_too_big",
    "upstream_message_too_big",
    "protocol_error",
    "invalid_utf8",
    "upstream_protocol_error",
    "io_error",
];

/// `Shard::ws` slots: opened, then messages and bytes client to upstream and upstream to client,
/// then the closes by reason.
const WS_OPENED: usize = 0;
const WS_TRAFFIC: usize = 1;
const WS_CLOSED: usize = 5;
const WS_SLOTS: usize = WS_CLOSED + WS_CLOSES.len();

thread_local! {
    static SHARD: Cell<usize> = const { Cell::new(0) };
}

/// Called by worker `i` once: its observations go to shard `i + 1` (shard 0 takes every other
/// thread's).
pub fn set_worker(i: usize) {
    SHARD.with(|s| s.set(i + 1));
}

#[derive(Default)]
struct Histogram {
    buckets: [AtomicU64; NB],
    sum_us: AtomicU64,
    count: AtomicU64,
}

impl Histogram {
    fn observe(&self, us: u64) {
        if let Some(i) = BUCKETS_US.iter().position(|b| us <= *b) {
            self.buckets[i].fetch_add(1, Ordering::Relaxed);
        }
        self.sum_us.fetch_add(us, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
    }
}

#[repr(align(128))]
struct Shard {
    /// `[verdict * STATUSES + status - 100]`, allocated on the shard's first request (12 KiB
    /// each: thousands of apps times workers must not cost gigabytes before any traffic).
    requests: std::sync::OnceLock<Box<[AtomicU64]>>,
    total: Histogram,
    phases: [Histogram; 3],
    upstream_errors: [AtomicU64; 3],
    /// WebSocket connections (see [`WS_SLOTS`]).
    ws: [AtomicU64; WS_SLOTS],
    /// Decisions of the authorization API, like `requests` (`[verdict * STATUSES + status - 100]`).
    authz: Box<[AtomicU64]>,
    authz_total: Histogram,
}

impl Shard {
    fn new() -> Shard {
        Shard {
            requests: std::sync::OnceLock::new(),
            total: Histogram::default(),
            phases: Default::default(),
            upstream_errors: Default::default(),
            ws: Default::default(),
            authz: (0..3 * STATUSES).map(|_| AtomicU64::new(0)).collect(),
            authz_total: Histogram::default(),
        }
    }
}

/// One app's series (kept across reloads by name).
pub struct AppMetrics {
    pub name: String,
    shards: Box<[Shard]>,
}

impl AppMetrics {
    fn new(name: &str, shards: usize) -> AppMetrics {
        AppMetrics { name: name.to_string(), shards: (0..shards).map(|_| Shard::new()).collect() }
    }

    fn shard(&self) -> &Shard {
        let i = SHARD.with(|s| s.get());
        &self.shards[i % self.shards.len()]
    }

    /// One finished request.
    pub fn request(&self, verdict: Verdict, status: u16, elapsed: Duration) {
        let s = self.shard();
        let st = (status.clamp(100, 599) - 100) as usize;
        s.requests.get_or_init(|| (0..3 * STATUSES).map(|_| AtomicU64::new(0)).collect())[verdict as usize * STATUSES + st].fetch_add(1, Ordering::Relaxed);
        s.total.observe(elapsed.as_micros() as u64);
    }

    /// One decision of the authorization API (`status`: what a proxied request would have been
    /// answered), timed from its request head to its answer.
    pub fn authz(&self, verdict: Verdict, status: u16, elapsed: Duration) {
        let s = self.shard();
        let st = (status.clamp(100, 599) - 100) as usize;
        s.authz[verdict as usize * STATUSES + st].fetch_add(1, Ordering::Relaxed);
        s.authz_total.observe(elapsed.as_micros() as u64);
    }

    /// Decisions of the authorization API with this verdict and status.
    pub fn authz_decisions(&self, verdict: Verdict, status: u16) -> u64 {
        let st = (status.clamp(100, 599) - 100) as usize;
        self.sum(|s| &s.authz[verdict as usize * STATUSES + st])
    }

    /// Time spent in the stages of one phase.
    pub fn phase(&self, phase: PhaseKind, elapsed: Duration) {
        self.shard().phases[phase as usize].observe(elapsed.as_micros() as u64);
    }

    pub fn upstream_error(&self, kind: UpstreamErr) {
        self.shard().upstream_errors[kind as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// A WebSocket connection was opened (its handshake succeeded).
    pub fn ws_opened(&self) {
        self.shard().ws[WS_OPENED].fetch_add(1, Ordering::Relaxed);
    }

    /// A WebSocket connection ended.
    pub fn ws_closed(&self, why: WsClose) {
        self.shard().ws[WS_CLOSED + why as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// WebSocket traffic: messages and bytes from the client, then from the upstream.
    pub fn ws_traffic(&self, c_msgs: u64, c_bytes: u64, u_msgs: u64, u_bytes: u64) {
        let s = self.shard();
        for (i, n) in [c_msgs, c_bytes, u_msgs, u_bytes].into_iter().enumerate() {
            if n > 0 {
                s.ws[WS_TRAFFIC + i].fetch_add(n, Ordering::Relaxed);
            }
        }
    }

    /// Open WebSocket connections (opened less closed).
    pub fn ws_open(&self) -> u64 {
        let closed: u64 = (0..WS_CLOSES.len()).map(|i| self.sum(|s| &s.ws[WS_CLOSED + i])).sum();
        self.sum(|s| &s.ws[WS_OPENED]).saturating_sub(closed)
    }

    /// WebSocket connections closed for `why`.
    pub fn ws_closes(&self, why: WsClose) -> u64 {
        self.sum(|s| &s.ws[WS_CLOSED + why as usize])
    }

    /// Requests counted at `[verdict * STATUSES + status - 100]`.
    fn count(&self, i: usize) -> u64 {
        self.shards.iter().filter_map(|s| s.requests.get()).map(|r| r[i].load(Ordering::Relaxed)).sum()
    }

    fn sum(&self, f: impl Fn(&Shard) -> &AtomicU64) -> u64 {
        self.shards.iter().map(|s| f(s).load(Ordering::Relaxed)).sum()
    }

    /// Requests counted with this verdict and status (for tests and the API).
    pub fn requests(&self, verdict: Verdict, status: u16) -> u64 {
        let st = (status.clamp(100, 599) - 100) as usize;
        self.count(verdict as usize * STATUSES + st)
    }
}

/// The apps' series in creation order, and by name.
type AppList = (Vec<Arc<AppMetrics>>, std::collections::HashMap<String, Arc<AppMetrics>>);

/// Every series of one running server.
pub struct Metrics {
    shards: usize,
    /// In creation order, and by name.
    apps: Mutex<AppList>,
    /// Requests no app was found for.
    pub unrouted: Arc<AppMetrics>,
    pub reloads_ok: AtomicU64,
    pub reloads_failed: AtomicU64,
}

impl Metrics {
    /// For `workers` worker threads (each gets a shard, plus one for other threads).
    pub fn new(workers: usize) -> Metrics {
        let shards = workers + 1;
        Metrics {
            shards,
            apps: Mutex::default(),
            unrouted: Arc::new(AppMetrics::new("", shards)),
            reloads_ok: AtomicU64::new(0),
            reloads_failed: AtomicU64::new(0),
        }
    }

    /// The series of app `name`, created on first use (at snapshot build, not per request).
    pub fn app(&self, name: &str) -> Arc<AppMetrics> {
        let mut apps = self.apps.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(a) = apps.1.get(name) {
            return a.clone();
        }
        let a = Arc::new(AppMetrics::new(name, self.shards));
        apps.0.push(a.clone());
        apps.1.insert(name.to_string(), a.clone());
        a
    }

    /// The Prometheus text exposition (format 0.0.4).
    pub fn render(&self, extra: &Extra<'_>) -> String {
        let mut out = String::with_capacity(8 * 1024);
        let mut apps: Vec<Arc<AppMetrics>> = self.apps.lock().unwrap_or_else(|e| e.into_inner()).0.clone();
        apps.push(self.unrouted.clone());

        header(&mut out, "palisade_requests_total", "counter", "Requests by app (empty: no app matched), verdict and status.");
        for a in &apps {
            for (v, vname) in VERDICTS.iter().enumerate() {
                for st in 0..STATUSES {
                    let n = a.count(v * STATUSES + st);
                    if n > 0 {
                        let _ = writeln!(out, "palisade_requests_total{{app=\"{}\",verdict=\"{vname}\",status=\"{}\"}} {n}", esc(&a.name), st + 100);
                    }
                }
            }
        }
        header(&mut out, "palisade_request_duration_seconds", "histogram", "From the request head to the response head.");
        for a in &apps {
            let labels = format!("app=\"{}\"", esc(&a.name));
            histogram(&mut out, "palisade_request_duration_seconds", &labels, a, |s| &s.total);
        }
        header(&mut out, "palisade_stage_duration_seconds", "histogram", "Time in the pipeline stages, per phase (head, body, response).");
        for a in &apps {
            for (p, pname) in PHASES.iter().enumerate() {
                let labels = format!("app=\"{}\",phase=\"{pname}\"", esc(&a.name));
                histogram(&mut out, "palisade_stage_duration_seconds", &labels, a, |s| &s.phases[p]);
            }
        }
        header(
            &mut out,
            "palisade_authz_decisions_total",
            "counter",
            "Decisions of the authorization API (nginx auth_request, Envoy ext_authz, /v1/judge) by app, verdict and the status a proxied request would have got.",
        );
        for a in &apps {
            for (v, vname) in VERDICTS.iter().enumerate() {
                for st in 0..STATUSES {
                    let n = a.sum(|s| &s.authz[v * STATUSES + st]);
                    if n > 0 {
                        let _ = writeln!(out, "palisade_authz_decisions_total{{app=\"{}\",verdict=\"{vname}\",status=\"{}\"}} {n}", esc(&a.name), st + 100);
                    }
                }
            }
        }
        header(&mut out, "palisade_authz_duration_seconds", "histogram", "Authorization API: from the request head to the answer.");
        for a in &apps {
            let labels = format!("app=\"{}\"", esc(&a.name));
            histogram(&mut out, "palisade_authz_duration_seconds", &labels, a, |s| &s.authz_total);
        }
        header(&mut out, "palisade_upstream_errors_total", "counter", "Upstream failures by app and kind.");
        for a in &apps {
            for (k, kname) in UPSTREAM_ERRS.iter().enumerate() {
                let n = a.sum(|s| &s.upstream_errors[k]);
                if n > 0 || !a.name.is_empty() {
                    let _ = writeln!(out, "palisade_upstream_errors_total{{app=\"{}\",kind=\"{kname}\"}} {n}", esc(&a.name));
                }
            }
        }
        header(&mut out, "palisade_websocket_connections", "gauge", "Open proxied WebSocket connections by app.");
        for a in apps.iter().filter(|a| !a.name.is_empty()) {
            let _ = writeln!(out, "palisade_websocket_connections{{app=\"{}\"}} {}", esc(&a.name), a.ws_open());
        }
        for (name, help, first) in [
            ("palisade_websocket_messages_total", "WebSocket messages relayed, by app and direction.", WS_TRAFFIC),
            ("palisade_websocket_bytes_total", "WebSocket bytes relayed (frames as sent), by app and direction.", WS_TRAFFIC + 1),
        ] {
            header(&mut out, name, "counter", help);
            for a in apps.iter().filter(|a| !a.name.is_empty()) {
                for (k, dir) in [(0, "client_to_upstream"), (2, "upstream_to_client")] {
                    let _ = writeln!(out, "{name}{{app=\"{}\",direction=\"{dir}\"}} {}", esc(&a.name), a.sum(|s| &s.ws[first + k]));
                }
            }
        }
        header(&mut out, "palisade_websocket_closes_total", "counter", "WebSocket connections ended, by app and reason.");
        for a in apps.iter().filter(|a| !a.name.is_empty()) {
            for (i, reason) in WS_CLOSES.iter().enumerate() {
                let n = a.sum(|s| &s.ws[WS_CLOSED + i]);
                if n > 0 {
                    let _ = writeln!(out, "palisade_websocket_closes_total{{app=\"{}\",reason=\"{reason}\"}} {n}", esc(&a.name));
                }
            }
        }
        header(&mut out, "palisade_config_reloads_total", "counter", "Configuration reloads by result.");
        let _ = writeln!(out, "palisade_config_reloads_total{{result=\"ok\"}} {}", self.reloads_ok.load(Ordering::Relaxed));
        let _ = writeln!(out, "palisade_config_reloads_total{{result=\"error\"}} {}", self.reloads_failed.load(Ordering::Relaxed));
        if let Some(e) = extra.events {
            let s = e.snapshot();
            for (name, help, kind, v) in [
                ("palisade_events_produced_total", "Events produced by requests.", "counter", s.produced),
                ("palisade_events_written_total", "Event rows stored by the sink (an aggregated row counts once).", "counter", s.written),
                ("palisade_events_aggregated_total", "Events folded into another row's count while the sink was behind.", "counter", s.aggregated),
                ("palisade_events_dropped_total", "Events dropped: queue full, sink failure, or shutting down.", "counter", s.dropped),
                (
                    "palisade_events_queued",
                    "Events in the queue or held by the writer (produced = written + aggregated + dropped + this).",
                    "gauge",
                    s.in_flight(),
                ),
                ("palisade_events_sink_errors_total", "Batches the sink failed to store.", "counter", s.sink_errors),
            ] {
                header(&mut out, name, kind, help);
                let _ = writeln!(out, "{name} {v}");
            }
        }
        render_stage_counters(&mut out, extra.stages);
        header(&mut out, "palisade_connections", "gauge", "Open client connections.");
        let _ = writeln!(out, "palisade_connections {}", extra.connections);
        if let Some(rss) = rss_bytes() {
            header(&mut out, "palisade_process_resident_memory_bytes", "gauge", "Resident set size (VmRSS).");
            let _ = writeln!(out, "palisade_process_resident_memory_bytes {rss}");
        }
        out
    }
}

/// Values that live elsewhere, read at scrape time.
pub struct Extra<'a> {
    pub events: Option<&'a palisade_events::Counters>,
    pub connections: usize,
    /// The stages' own counters, per app name ([`stage_counters`]).
    pub stages: &'a [(String, Vec<palisade_core::CounterSample>)],
}

/// The counters every stage of the snapshot's apps exports (`Stage::counters`), per app.
pub fn stage_counters(snap: &crate::Snapshot) -> Vec<(String, Vec<palisade_core::CounterSample>)> {
    snap.apps.iter().map(|a| (a.cfg.name.clone(), a.stages.iter().flat_map(|s| s.counters()).collect::<Vec<_>>())).filter(|(_, c)| !c.is_empty()).collect()
}

/// Render stage counters grouped by family (one `# HELP`/`# TYPE` per family, in order of first
/// appearance), each series labelled with its app.
fn render_stage_counters(out: &mut String, stages: &[(String, Vec<palisade_core::CounterSample>)]) {
    let mut families: Vec<(&'static str, &'static str)> = Vec::new();
    for (_, samples) in stages {
        for s in samples {
            if !families.iter().any(|(n, _)| *n == s.name) {
                families.push((s.name, s.help));
            }
        }
    }
    for (name, help) in families {
        header(out, name, "counter", help);
        for (app, samples) in stages {
            for s in samples.iter().filter(|s| s.name == name) {
                let _ = write!(out, "{name}{{app=\"{}\"", esc(app));
                for (k, v) in &s.labels {
                    let _ = write!(out, ",{k}=\"{}\"", esc(v));
                }
                let _ = writeln!(out, "}} {}", s.value);
            }
        }
    }
}

fn header(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

fn histogram(out: &mut String, name: &str, labels: &str, a: &AppMetrics, h: impl Fn(&Shard) -> &Histogram) {
    let count = a.sum(|s| &h(s).count);
    if count == 0 {
        return;
    }
    let mut cumulative = 0;
    for (i, le) in BUCKETS_US.iter().enumerate() {
        cumulative += a.sum(|s| &h(s).buckets[i]);
        let _ = writeln!(out, "{name}_bucket{{{labels},le=\"{}\"}} {cumulative}", *le as f64 / 1e6);
    }
    let _ = writeln!(out, "{name}_bucket{{{labels},le=\"+Inf\"}} {count}");
    let _ = writeln!(out, "{name}_sum{{{labels}}} {}", a.sum(|s| &h(s).sum_us) as f64 / 1e6);
    let _ = writeln!(out, "{name}_count{{{labels}}} {count}");
}

/// Escape a label value.
fn esc(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// Resident set size from `/proc/self/status` (`VmRSS`, kB; same figure as `statm`'s second
/// field times the page size, without needing the page size).
pub fn rss_bytes() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_add_up_and_render_as_prometheus_text() {
        let m = Metrics::new(2);
        let a = m.app("api");
        assert!(Arc::ptr_eq(&a, &m.app("api")), "an app keeps its series across snapshots");
        a.request(Verdict::Block, 403, Duration::from_micros(80));
        let a2 = a.clone();
        std::thread::spawn(move || {
            set_worker(1);
            a2.request(Verdict::Block, 403, Duration::from_millis(3));
            a2.phase(PhaseKind::Body, Duration::from_micros(40));
        })
        .join()
        .unwrap();
        a.upstream_error(UpstreamErr::Timeout);
        a.authz(Verdict::Block, 429, Duration::from_micros(30));
        assert_eq!(a.requests(Verdict::Block, 403), 2);
        assert_eq!(a.requests(Verdict::Block, 429), 0, "authz decisions are a series of their own");
        assert_eq!(a.authz_decisions(Verdict::Block, 429), 1);
        let stages = vec![(
            "api".to_string(),
            vec![
                palisade_core::CounterSample { name: "palisade_x_total", help: "X.", labels: vec![("limit", "per\"ip".into())], value: 4 },
                palisade_core::CounterSample { name: "palisade_x_total", help: "X.", labels: vec![("limit", "global".into())], value: 0 },
            ],
        )];
        let text = m.render(&Extra { events: None, connections: 3, stages: &stages });
        assert_eq!(text.matches("# TYPE palisade_x_total counter").count(), 1, "{text}");
        assert!(text.contains("palisade_x_total{app=\"api\",limit=\"per\\\"ip\"} 4"), "{text}");
        assert!(text.contains("palisade_x_total{app=\"api\",limit=\"global\"} 0"), "{text}");
        assert!(text.contains("palisade_requests_total{app=\"api\",verdict=\"block\",status=\"403\"} 2"), "{text}");
        assert!(text.contains("palisade_request_duration_seconds_bucket{app=\"api\",le=\"0.0001\"} 1"), "{text}");
        assert!(text.contains("palisade_request_duration_seconds_bucket{app=\"api\",le=\"0.005\"} 2"), "{text}");
        assert!(text.contains("palisade_request_duration_seconds_count{app=\"api\"} 2"), "{text}");
        assert!(text.contains("palisade_stage_duration_seconds_count{app=\"api\",phase=\"body\"} 1"), "{text}");
        assert!(text.contains("palisade_upstream_errors_total{app=\"api\",kind=\"timeout\"} 1"), "{text}");
        assert!(text.contains("palisade_authz_decisions_total{app=\"api\",verdict=\"block\",status=\"429\"} 1"), "{text}");
        assert!(text.contains("palisade_authz_duration_seconds_count{app=\"api\"} 1"), "{text}");
        assert!(text.contains("palisade_connections 3"), "{text}");
        assert!(text.contains("palisade_process_resident_memory_bytes "), "{text}");
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let (series, value) = line.rsplit_once(' ').unwrap();
            assert!(value.parse::<f64>().is_ok() && !series.is_empty(), "{line}");
        }
    }
}
