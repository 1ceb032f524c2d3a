//! Unit tests: pipeline accounting under a deliberately slow sink (made deterministic with
//! channels, not sleeps), redaction, the SQLite sink (batches, queries, retention), JSON lines
//! rotation.

use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::*;
use crate::model::{format_time, parse_time, OtherReason, REDACTED};
use crate::pipeline::Snapshot;
use crate::query::{Filter, Reader};
use crate::sqlite::{Retention, SqliteSink};

const WAIT: Duration = Duration::from_secs(10);

fn ev(ip: &str, reason: &str, time_ms: i64) -> Event {
    Event {
        id: None,
        time_ms,
        last_ms: time_ms,
        count: 1,
        request_id: format!("{time_ms:016x}"),
        app: "api".into(),
        client_ip: ip.into(),
        method: "GET".into(),
        host: "api.test".into(),
        path: "/search".into(),
        query: Some("q=x".into()),
        verdict: Verdict::Block,
        stage: "detect".into(),
        reason: reason.into(),
        detector: Some("sqli".into()),
        category: Some(model::category("detect", reason)),
        confidence: Some(90),
        location: Some("query.q".into()),
        fragment: Some("' or 1=1--".into()),
        detail: None,
        others: Vec::new(),
        status: 403,
        upstream_status: None,
        latency_us: 120,
        tags: Vec::new(),
        operation: None,
    }
}

/// A sink whose every write announces itself and then waits for a token from the test.
struct GateSink {
    entered: SyncSender<usize>,
    tokens: Receiver<()>,
    rows: Arc<Mutex<Vec<Event>>>,
}

impl Sink for GateSink {
    fn write(&mut self, batch: &[Event]) -> Result<(), SinkError> {
        self.entered.send(batch.len()).map_err(|_| SinkError::Other("test gone".into()))?;
        self.tokens.recv_timeout(WAIT).map_err(|_| SinkError::Other("no token".into()))?;
        self.rows.lock().unwrap().extend_from_slice(batch);
        Ok(())
    }

    fn describe(&self) -> String {
        "gate".into()
    }
}

struct Gate {
    entered: Receiver<usize>,
    tokens: SyncSender<()>,
    rows: Arc<Mutex<Vec<Event>>>,
}

fn gate_pipeline(queue: usize, batch: usize) -> (Pipeline, Gate) {
    let (etx, erx) = sync_channel(64);
    let (ttx, trx) = sync_channel(64);
    let rows = Arc::new(Mutex::new(Vec::new()));
    let sink = GateSink { entered: etx, tokens: trx, rows: rows.clone() };
    let opts = Options {
        queue_size: queue,
        batch_size: batch,
        aggregate_window: Duration::from_secs(3600),
        tick: Duration::from_millis(5),
        aggregate_after: batch,
        ..Options::default()
    };
    (Pipeline::start(Box::new(sink), opts).unwrap(), Gate { entered: erx, tokens: ttx, rows })
}

fn balanced(s: &Snapshot) -> bool {
    s.produced == s.written + s.aggregated + s.dropped
}

#[test]
fn a_slow_sink_makes_the_pipeline_aggregate_then_drop_with_exact_counts() {
    let (p, g) = gate_pipeline(8, 4);
    let tx = p.sender().clone();
    // The first event reaches the sink, which then stalls.
    tx.send(ev("192.0.2.1", "detect.sqli", 1000));
    assert_eq!(g.entered.recv_timeout(WAIT).unwrap(), 1);
    // The queue takes exactly 8 more; the next 3 are dropped without waiting.
    for i in 0..8 {
        tx.send(ev("192.0.2.1", "detect.sqli", 1001 + i));
    }
    for i in 0..3 {
        tx.send(ev("192.0.2.1", "detect.sqli", 2000 + i));
    }
    let s = p.counters().snapshot();
    assert_eq!((s.produced, s.dropped, s.queued, s.written), (12, 3, 8, 0), "{s:?}");
    // Release the stalled write: the writer finds a full batch waiting (it is behind), so the
    // 8 queued events fold into one held row; nothing else reaches the sink until a flush.
    g.tokens.send(()).unwrap();
    g.tokens.send(()).unwrap();
    assert!(p.flush(WAIT));
    assert_eq!(g.entered.recv_timeout(WAIT).unwrap(), 1, "the held aggregate is written as one row");
    let s = p.counters().snapshot();
    assert_eq!((s.produced, s.written, s.aggregated, s.dropped, s.queued, s.held), (12, 2, 7, 3, 0, 0), "{s:?}");
    assert!(balanced(&s));
    let rows = g.rows.lock().unwrap().clone();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0].count, 1);
    assert_eq!((rows[1].count, rows[1].time_ms, rows[1].last_ms), (8, 1001, 1008));
    // Events of the same row plus the dropped ones account for everything produced.
    assert_eq!(rows.iter().map(|r| r.count as u64).sum::<u64>() + s.dropped, s.produced);
}

#[test]
fn different_ips_and_reasons_are_never_folded_together() {
    let (p, g) = gate_pipeline(16, 4);
    let tx = p.sender().clone();
    tx.send(ev("192.0.2.1", "detect.sqli", 1));
    assert_eq!(g.entered.recv_timeout(WAIT).unwrap(), 1);
    for (ip, reason) in [("192.0.2.1", "detect.sqli"), ("192.0.2.2", "detect.sqli"), ("192.0.2.1", "detect.xss"), ("192.0.2.1", "detect.sqli")] {
        tx.send(ev(ip, reason, 5));
    }
    for _ in 0..3 {
        g.tokens.send(()).unwrap();
    }
    assert!(p.flush(WAIT));
    let s = p.counters().snapshot();
    assert_eq!((s.produced, s.written, s.aggregated, s.dropped), (5, 4, 1, 0), "{s:?}");
    let rows = g.rows.lock().unwrap().clone();
    let mut counts: Vec<(String, String, u32)> = rows.iter().map(|r| (r.client_ip.clone(), r.reason.clone(), r.count)).collect();
    counts.sort();
    assert_eq!(
        counts,
        vec![
            ("192.0.2.1".into(), "detect.sqli".into(), 1),
            ("192.0.2.1".into(), "detect.sqli".into(), 2),
            ("192.0.2.1".into(), "detect.xss".into(), 1),
            ("192.0.2.2".into(), "detect.sqli".into(), 1)
        ]
    );
}

#[test]
fn a_sink_that_keeps_up_gets_every_event_as_its_own_row() {
    let (p, g) = gate_pipeline(8, 4);
    let tx = p.sender().clone();
    for i in 0..5 {
        tx.send(ev("192.0.2.1", "detect.sqli", i));
        assert_eq!(g.entered.recv_timeout(WAIT).unwrap(), 1);
        g.tokens.send(()).unwrap();
        assert!(p.flush(WAIT));
    }
    let s = p.counters().snapshot();
    assert_eq!((s.produced, s.written, s.aggregated, s.dropped), (5, 5, 0, 0), "{s:?}");
    assert!(g.rows.lock().unwrap().iter().all(|r| r.count == 1));
}

#[test]
fn the_queue_is_not_allocated_up_front() {
    // A queue that allocated its capacity at start (as a `sync_channel` does: every slot is
    // allocated and initialised) could not be created at this size; this one takes memory per
    // queued event only, and still holds the bound.
    let (p, g) = gate_pipeline(usize::MAX / 4, 4);
    let tx = p.sender().clone();
    tx.send(ev("192.0.2.1", "detect.sqli", 1));
    assert_eq!(g.entered.recv_timeout(WAIT).unwrap(), 1);
    g.tokens.send(()).unwrap();
    assert!(p.flush(WAIT));
    let s = p.counters().snapshot();
    assert_eq!((s.produced, s.written, s.dropped, s.queued), (1, 1, 0, 0), "{s:?}");
}

struct FailSink;

impl Sink for FailSink {
    fn write(&mut self, _: &[Event]) -> Result<(), SinkError> {
        Err(SinkError::Other("disk full".into()))
    }
    fn describe(&self) -> String {
        "fail".into()
    }
}

#[test]
fn a_failing_sink_and_a_closed_pipeline_count_their_events_as_dropped() {
    let p = Pipeline::start(Box::new(FailSink), Options::default()).unwrap();
    for i in 0..3 {
        p.sender().send(ev("192.0.2.9", "detect.sqli", i));
    }
    assert!(p.flush(WAIT));
    let s = p.counters().snapshot();
    assert_eq!((s.produced, s.written, s.dropped), (3, 0, 3), "{s:?}");
    assert!(s.sink_errors >= 1);
    let tx = p.sender().clone();
    p.close(WAIT);
    tx.send(ev("192.0.2.9", "detect.sqli", 9));
    let s = p.counters().snapshot();
    assert_eq!((s.produced, s.dropped), (4, 4));
    assert!(balanced(&s));
}

fn key(ip: &str) -> FoldKey<'static> {
    FoldKey { app: "api", client_ip: ip.parse().unwrap(), reason: "detect.sqli" }
}

/// Wait (bounded) until the counters satisfy `ok`.
fn wait_for(p: &Pipeline, ok: impl Fn(&Snapshot) -> bool) -> Snapshot {
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let s = p.counters().snapshot();
        if ok(&s) || std::time::Instant::now() >= deadline {
            return s;
        }
        std::thread::yield_now();
    }
}

#[test]
fn an_open_aggregate_folds_identical_events_on_the_request_path_without_building_them() {
    let (p, g) = gate_pipeline(8, 4);
    let tx = p.sender().clone();
    let built = std::cell::Cell::new(0u32);
    // Nothing is held yet: the event is built and queued.
    tx.record(key("192.0.2.1"), 1000, || {
        built.set(built.get() + 1);
        ev("192.0.2.1", "detect.sqli", 1000)
    });
    assert_eq!((built.get(), g.entered.recv_timeout(WAIT).unwrap()), (1, 1));
    // While the sink stalls, a full batch queues up: the writer will find itself behind and
    // open an aggregate for the key.
    for i in 0..4 {
        tx.send(ev("192.0.2.1", "detect.sqli", 1001 + i));
    }
    g.tokens.send(()).unwrap();
    let s = wait_for(&p, |s| s.aggregated == 3 && s.queued == 0 && s.held == 1);
    assert_eq!((s.produced, s.written, s.aggregated, s.held), (5, 1, 3, 1), "{s:?}");
    // Now identical events are only counted: never built, queued or held.
    for i in 0..100 {
        tx.record(key("192.0.2.1"), 2000 + i, || panic!("a folded event is not built"));
    }
    let s = p.counters().snapshot();
    assert_eq!((s.produced, s.aggregated, s.queued, s.held), (105, 103, 0, 1), "{s:?}");
    // Another client IP (and the same IP under another reason) is not folded into it.
    tx.record(key("192.0.2.2"), 3000, || {
        built.set(built.get() + 1);
        ev("192.0.2.2", "detect.sqli", 3000)
    });
    tx.record(FoldKey { reason: "detect.xss", ..key("192.0.2.1") }, 3001, || {
        built.set(built.get() + 1);
        ev("192.0.2.1", "detect.xss", 3001)
    });
    assert_eq!(built.get(), 3);
    for _ in 0..2 {
        g.tokens.send(()).unwrap();
    }
    assert!(p.flush(WAIT));
    let s = p.counters().snapshot();
    assert_eq!((s.produced, s.written, s.aggregated, s.dropped, s.queued, s.held), (107, 4, 103, 0, 0, 0), "{s:?}");
    let rows = g.rows.lock().unwrap().clone();
    let agg = rows.iter().find(|r| r.count > 1).expect("the aggregate row");
    assert_eq!((agg.client_ip.as_str(), agg.count, agg.time_ms, agg.last_ms), ("192.0.2.1", 104, 1001, 2099));
    assert_eq!(rows.iter().map(|r| r.count as u64).sum::<u64>(), s.produced);
    // The flush closed the aggregate: the next identical event is built again.
    tx.record(key("192.0.2.1"), 4000, || {
        built.set(built.get() + 1);
        ev("192.0.2.1", "detect.sqli", 4000)
    });
    assert_eq!(built.get(), 4);
    g.tokens.send(()).unwrap();
    assert!(p.flush(WAIT));
    assert!(balanced(&p.counters().snapshot()));
}

/// Keeps what it is given, at once.
struct MemSink(Arc<Mutex<Vec<Event>>>);

impl Sink for MemSink {
    fn write(&mut self, batch: &[Event]) -> Result<(), SinkError> {
        self.0.lock().unwrap().extend_from_slice(batch);
        Ok(())
    }
    fn describe(&self) -> String {
        "memory".into()
    }
}

#[test]
fn folding_races_with_windows_closing_and_stays_exact() {
    // Windows of 1 ms and a writer that finds itself behind at every event: aggregates open and
    // close all the time while four producers fold into them.
    let rows = Arc::new(Mutex::new(Vec::new()));
    let opts = Options {
        queue_size: 64,
        batch_size: 16,
        aggregate_window: Duration::from_millis(1),
        tick: Duration::from_millis(1),
        aggregate_after: 1,
        ..Options::default()
    };
    let p = Pipeline::start(Box::new(MemSink(rows.clone())), opts).unwrap();
    let ips = ["192.0.2.1", "192.0.2.2"];
    std::thread::scope(|sc| {
        for t in 0..4i64 {
            let tx = p.sender().clone();
            sc.spawn(move || {
                for i in 0..20_000i64 {
                    let ip = ips[(i % 2) as usize];
                    tx.record(key(ip), t * 100_000 + i, || ev(ip, "detect.sqli", t * 100_000 + i));
                }
            });
        }
    });
    assert!(p.flush(WAIT));
    let s = p.counters().snapshot();
    assert_eq!(s.produced, 80_000);
    assert!(balanced(&s) && s.queued == 0 && s.held == 0, "{s:?}");
    let rows = rows.lock().unwrap();
    assert_eq!(rows.len() as u64, s.written);
    // Every event is in exactly one stored row's count, or was dropped by a full queue.
    assert_eq!(rows.iter().map(|r| r.count as u64).sum::<u64>() + s.dropped, s.produced, "{s:?}");
    for ip in ips {
        let n: u64 = rows.iter().filter(|r| r.client_ip == ip).map(|r| r.count as u64).sum();
        assert!(n <= 40_000, "{ip}: {n}");
    }
}

fn req(query: Option<&'static str>) -> RequestRef<'static> {
    RequestRef {
        time_ms: 1_700_000_000_000,
        request_id: "00000000000000aa",
        app: "api",
        client_ip: "198.51.100.7".parse::<IpAddr>().unwrap(),
        method: "POST",
        host: "api.test",
        path: "/login",
        query,
    }
}

fn reason<'a>(code: &'a str, location: &'a str, fragment: &'a str) -> ReasonRef<'a> {
    ReasonRef { stage: "detect", code, location: Some(location), detail: Some("sqli-tokens confidence 95 (tautology) via url"), fragment: Some(fragment) }
}

#[test]
fn the_key_a_worker_folds_with_is_the_key_of_the_event_it_would_build() {
    // Workers fold with a key made from borrowed request data (record.rs, `finish`); the writer
    // registers aggregates with the key of the built event. They must agree, or nothing folds.
    let r = Redactor::default();
    for ip in ["198.51.100.7", "2001:db8::1", "::ffff:192.0.2.1", "::1"] {
        let mut q = req(Some("q=1"));
        q.client_ip = ip.parse().unwrap();
        for reasons in [vec![reason("detect.sqli", "query.q", "' or 1=1")], vec![]] {
            let e = r.event(&q, Verdict::Block, &reasons, 403, None, 5);
            let worker = FoldKey { app: q.app, client_ip: q.client_ip, reason: reasons.first().map_or("", |r| r.code) };
            assert_eq!(FoldKey::of(&e), Some(worker), "{ip}");
        }
    }
    // An event whose client IP is not an address is only folded by the writer.
    assert_eq!(FoldKey::of(&ev("unknown", "detect.sqli", 1)), None);
}

#[test]
fn secrets_never_reach_an_event() {
    let r = Redactor::new(["password", "api_key"]);
    for loc in
        ["header.authorization", "header.Proxy-Authorization", "header.cookie", "header.set-cookie", "cookie.session", "query.api_key", "body/user/password"]
    {
        let e = r.event(&req(None), Verdict::Block, &[reason("detect.sqli", loc, "SECRET' or 1=1")], 403, None, 10);
        assert_eq!(e.fragment.as_deref(), Some(REDACTED), "{loc}");
    }
    let e = r.event(&req(None), Verdict::Block, &[reason("detect.sqli", "query.q", "' or 1=1")], 403, None, 10);
    assert_eq!(e.fragment.as_deref(), Some("' or 1=1"));
    assert_eq!((e.detector.as_deref(), e.confidence, e.category.as_deref()), (Some("sqli-tokens"), Some(95), Some("sqli")));
    let e = r.event(&req(Some("user=bob&password=hunter2&API%5Fkey=k1&q=1")), Verdict::Monitor, &[], 200, Some(200), 10);
    assert_eq!(e.query.as_deref(), Some("user=bob&password=[redacted]&API%5Fkey=[redacted]&q=1"));
    assert!(!serde_json::to_string(&e).unwrap().contains("hunter2"));
    // Default list.
    let e = Redactor::default().event(&req(Some("token=abc")), Verdict::Allow, &[], 200, Some(200), 1);
    assert_eq!(e.query.as_deref(), Some("token=[redacted]"));
}

#[test]
fn long_values_are_truncated_at_character_boundaries() {
    let long_q: &'static str = Box::leak(format!("q={}", "é".repeat(400)).into_boxed_str());
    let frag = "ü".repeat(300);
    let e = Redactor::default().event(&req(Some(long_q)), Verdict::Block, &[reason("detect.xss", "query.q", &frag)], 403, None, 1);
    let q = e.query.unwrap();
    assert!(q.len() <= model::MAX_QUERY && q.len() > model::MAX_QUERY - 4, "{}", q.len());
    let f = e.fragment.unwrap();
    assert!(f.len() <= model::MAX_FRAGMENT && f.chars().all(|c| c == 'ü'));
}

#[test]
fn times_format_and_parse_back() {
    assert_eq!(format_time(0), "1970-01-01T00:00:00.000Z");
    assert_eq!(format_time(1_795_336_299_123), "2026-11-22T08:31:39.123Z");
    assert_eq!(parse_time("2026-11-22T08:31:39.123Z"), Some(1_795_336_299_123));
    assert_eq!(parse_time("2026-11-22"), Some(1_795_305_600_000));
    assert_eq!(parse_time("2026-13-01"), None);
    assert_eq!(query::parse_when("15m", 1_000_000), Some(100_000));
    assert_eq!(query::parse_when("yesterday", 0), None);
}

struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Dir {
        let p = std::env::temp_dir().join(format!("pal-events-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Dir(p)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn sqlite_stores_batches_and_queries_filter_page_and_count() {
    let d = Dir::new("query");
    let db = d.0.join("ev.db");
    let mut sink = SqliteSink::open(&db, Retention::default()).unwrap();
    let mut batch = Vec::new();
    for i in 0..250i64 {
        let mut e = ev(if i % 5 == 0 { "192.0.2.5" } else { "192.0.2.1" }, if i % 2 == 0 { "detect.sqli" } else { "detect.xss" }, 1_000_000 + i * 1000);
        e.app = if i < 200 { "api".into() } else { "shop".into() };
        e.status = if i % 10 == 0 { 400 } else { 403 };
        e.path = format!("/p{}", i % 3);
        if i == 7 {
            e.count = 50;
            e.others = vec![OtherReason { stage: "openapi".into(), reason: "openapi.query_invalid".into(), location: Some("query.limit".into()) }];
        }
        batch.push(e);
    }
    sink.write(&batch[..100]).unwrap();
    sink.write(&batch[100..]).unwrap();
    let r = Reader::open(&db).unwrap();

    // Everything, newest first, in pages of 100 with a cursor.
    let mut seen = Vec::new();
    let mut f = Filter { limit: Some(100), ..Filter::default() };
    for _ in 0..10 {
        let page = r.events(&f).unwrap();
        seen.extend(page.events.iter().map(|e| e.time_ms));
        match page.next_cursor {
            Some(c) => f.before_id = Some(c),
            None => break,
        }
    }
    assert_eq!(seen.len(), 250);
    assert!(seen.windows(2).all(|w| w[0] > w[1]), "newest first, no repeats");

    let count = |f: Filter| r.events(&Filter { limit: Some(1000), ..f }).unwrap().events.len();
    assert_eq!(count(Filter { app: Some("shop".into()), ..Filter::default() }), 50);
    assert_eq!(count(Filter { ip: Some("192.0.2.5".into()), ..Filter::default() }), 50);
    assert_eq!(count(Filter { category: Some("xss".into()), ..Filter::default() }), 125);
    assert_eq!(count(Filter { reason: Some("detect.sqli".into()), status: Some(400), ..Filter::default() }), 25);
    assert_eq!(count(Filter { since_ms: Some(1_000_000 + 10_000), until_ms: Some(1_000_000 + 20_000), ..Filter::default() }), 10);
    assert_eq!(count(Filter { verdict: Some(Verdict::Monitor), ..Filter::default() }), 0);
    assert_eq!(count(Filter { after_id: Some(245), ..Filter::default() }), 5);
    let one = r
        .events(&Filter { reason: Some("detect.xss".into()), until_ms: Some(1_000_000 + 8000), since_ms: Some(1_000_000 + 7000), ..Filter::default() })
        .unwrap();
    assert_eq!(one.events.len(), 1);
    let e = &one.events[0];
    assert_eq!((e.count, e.others.len(), e.fragment.as_deref()), (50, 1, Some("' or 1=1--")));

    // Statistics add up counts (the row of 50 included).
    let st = r.stats(&Filter { since_ms: Some(1_000_000), until_ms: Some(1_000_000 + 250_000), ..Filter::default() }, 0, 5, 3).unwrap();
    assert_eq!(st.total, 250 + 49);
    assert_eq!(st.buckets.iter().map(|b| b.blocked).sum::<u64>(), 299);
    assert_eq!(st.bucket_ms, 60_000);
    assert_eq!(st.top_ips[0], query::Top { key: "192.0.2.1".into(), count: 200 + 49 });
    assert_eq!(st.top_reasons[0], query::Top { key: "detect.xss".into(), count: 125 + 49 });
    assert_eq!(st.top_paths.len(), 3);
    assert_eq!(Filter::from_pairs([("bogus", "1".to_string())], 0).unwrap_err().to_string(), "unknown filter `bogus`");
    assert_eq!(Filter::from_pairs([("status", "403".to_string()), ("limit", "5000".to_string())], 0).unwrap().limit, Some(1000));
}

#[test]
fn sqlite_retention_by_age_and_by_size() {
    let d = Dir::new("retention");
    let db = d.0.join("ev.db");
    let mut sink = SqliteSink::open(&db, Retention { max_age: Some(Duration::from_secs(60)), max_size: None }).unwrap();
    let now = 10_000_000;
    let batch: Vec<Event> = (0..100).map(|i| ev("192.0.2.1", "detect.sqli", now - 120_000 + i * 1000)).collect();
    sink.write(&batch).unwrap();
    // Rows older than 60 s: the first 61 (times now-120s .. now-60s exclusive) go.
    assert_eq!(sink.enforce_retention(now).unwrap(), 60);
    let r = Reader::open(&db).unwrap();
    assert_eq!(r.events(&Filter { limit: Some(1000), ..Filter::default() }).unwrap().events.len(), 40);

    let mut sink = SqliteSink::open(&d.0.join("size.db"), Retention { max_age: None, max_size: Some(256 * 1024) }).unwrap();
    for b in 0..20 {
        let batch: Vec<Event> = (0..500).map(|i| ev("192.0.2.1", "detect.sqli", b * 1000 + i)).collect();
        sink.write(&batch).unwrap();
    }
    assert!(sink.used_bytes().unwrap() > 256 * 1024);
    let deleted = sink.enforce_retention(now).unwrap();
    assert!(deleted > 0);
    assert!(sink.used_bytes().unwrap() <= 256 * 1024);
    let file = std::fs::metadata(d.0.join("size.db")).unwrap().len();
    assert!(file <= 300 * 1024, "freed pages go back to the file system: {file}");
    // The newest rows are the ones kept.
    let r = Reader::open(&d.0.join("size.db")).unwrap();
    let newest = r.events(&Filter { limit: Some(1), ..Filter::default() }).unwrap();
    assert_eq!(newest.events[0].time_ms, 19 * 1000 + 499);
}

#[test]
fn sqlite_pipeline_end_to_end_and_reopen() {
    let d = Dir::new("pipe");
    let db = d.0.join("sub/ev.db");
    let settings = Settings {
        sink: SinkSpec::parse("sqlite:sub/ev.db", &d.0).unwrap(),
        options: Options::default(),
        retention: Retention::default(),
        rotation: jsonl::Rotation::default(),
    };
    let p = start(&settings).unwrap().unwrap();
    for i in 0..1000 {
        p.sender().send(ev("192.0.2.1", "detect.sqli", i));
    }
    p.close(WAIT);
    let s = p.counters().snapshot();
    assert!(balanced(&s), "{s:?}");
    assert_eq!(s.dropped, 0);
    let r = Reader::open(&db).unwrap();
    let st = r.stats(&Filter { since_ms: Some(0), until_ms: Some(10_000), ..Filter::default() }, 0, 10, 5).unwrap();
    assert_eq!(st.total, 1000, "every event is in the database, as a row or in a row's count");
    assert!(r.events(&Filter::default()).unwrap().events.len() as u64 == s.written.min(100));
}

#[test]
fn sink_specs_parse() {
    let base = std::path::Path::new("/etc/palisade");
    assert_eq!(SinkSpec::parse("sqlite:ev.db", base).unwrap(), SinkSpec::Sqlite("/etc/palisade/ev.db".into()));
    assert_eq!(SinkSpec::parse("sqlite:/var/ev.db", base).unwrap(), SinkSpec::Sqlite("/var/ev.db".into()));
    assert_eq!(SinkSpec::parse("jsonl:/var/log/ev.jsonl", base).unwrap(), SinkSpec::Jsonl("/var/log/ev.jsonl".into()));
    assert_eq!(SinkSpec::parse("stdout", base).unwrap(), SinkSpec::Stdout);
    assert_eq!(SinkSpec::parse("off", base).unwrap(), SinkSpec::Off);
    assert_eq!(SinkSpec::parse("postgres://u:pw@db/ev", base).unwrap().to_string(), "postgres://[redacted]@db/ev");
    assert!(SinkSpec::parse("sqlite:", base).is_err());
    let e = SinkSpec::parse("mysql://x", base).unwrap_err();
    assert!(e.to_string().contains("not an events sink"), "{e}");
    assert_eq!(e.kind(), crate::ErrorKind::SinkSpec);
}

#[test]
fn jsonl_files_rotate_by_size_and_keep_n() {
    let d = Dir::new("jsonl");
    let path = d.0.join("ev.jsonl");
    let line_len = serde_json::to_string(&ev("192.0.2.1", "detect.sqli", 1_000_000)).unwrap().len() as u64 + 1;
    let rotation = jsonl::Rotation { max_size: line_len * 3 + 10, keep: 2 };
    let mut sink = jsonl::JsonlSink::file(&path, rotation).unwrap();
    let events: Vec<Event> = (0..10).map(|i| ev("192.0.2.1", "detect.sqli", 1_000_000 + i)).collect();
    sink.write(&events[..4]).unwrap();
    sink.write(&events[4..]).unwrap();
    // 10 lines of 3 per file: current (1 line), .1 (3), .2 (3); the oldest 3 are gone.
    let read = |p: PathBuf| -> Vec<Event> { std::fs::read_to_string(p).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect() };
    let cur = read(path.clone());
    let one = read(jsonl::rotated_name(&path, 1));
    let two = read(jsonl::rotated_name(&path, 2));
    assert!(!jsonl::rotated_name(&path, 3).exists());
    assert_eq!((cur.len(), one.len(), two.len()), (1, 3, 3));
    assert_eq!(two[0].time_ms, 1_000_003);
    assert_eq!(cur[0], events[9]);
    for p in [path.clone(), jsonl::rotated_name(&path, 1), jsonl::rotated_name(&path, 2)] {
        assert!(std::fs::metadata(&p).unwrap().len() <= rotation.max_size);
    }
    // Reopening appends.
    let mut sink = jsonl::JsonlSink::file(&path, rotation).unwrap();
    sink.write(&events[..1]).unwrap();
    assert_eq!(read(path).len(), 2);
}

#[test]
fn sqlite_stores_rule_tags_and_filters_by_tag() {
    let d = Dir::new("tags");
    let db = d.0.join("events.db");
    let mut sink = SqliteSink::open(&db, Retention::default()).unwrap();
    let mut a = ev("192.0.2.1", "rules.deny", 1_000);
    a.tags = vec!["admin".into(), "outside \"hq\"".into()];
    let mut b = ev("192.0.2.2", "detect.sqli", 2_000);
    b.tags = vec!["admin-like".into()];
    let c = ev("192.0.2.3", "detect.sqli", 3_000);
    sink.write(&[a, b, c]).unwrap();
    let r = Reader::open(&db).unwrap();
    let all = r.events(&Filter::default()).unwrap().events;
    assert_eq!(
        all.iter().map(|e| e.tags.clone()).collect::<Vec<_>>(),
        vec![vec![], vec!["admin-like".to_string()], vec!["admin".into(), "outside \"hq\"".into()]]
    );
    let tagged = |t: &str| r.events(&Filter { tag: Some(t.into()), ..Filter::default() }).unwrap().events.into_iter().map(|e| e.client_ip).collect::<Vec<_>>();
    assert_eq!(tagged("admin"), ["192.0.2.1"], "a tag matches whole, not as a prefix of another");
    assert_eq!(tagged("outside \"hq\""), ["192.0.2.1"]);
    assert!(tagged("adm").is_empty());
    let f = Filter::from_pairs([("tag", "admin".to_string())], 0).unwrap();
    assert_eq!(f.tag.as_deref(), Some("admin"));
}

#[test]
fn sqlite_batches_of_any_length_are_stored_whole_in_order_with_every_value() {
    // The sink inserts 8 rows per statement and the rest one by one: lengths around and between
    // multiples of 8, and an empty batch.
    let d = Dir::new("lengths");
    let db = d.0.join("ev.db");
    let mut sink = SqliteSink::open(&db, Retention::default()).unwrap();
    let mut all = Vec::new();
    let mut t = 1_000;
    for len in [0usize, 1, 7, 8, 9, 16, 17, 100] {
        let batch: Vec<Event> = (0..len)
            .map(|i| {
                t += 1;
                let mut e = ev(&format!("192.0.2.{}", i % 7), if i % 2 == 0 { "detect.sqli" } else { "rules.deny" }, t);
                // Every kind of value, in varying rows of a statement: NULLs and set optional
                // values, JSON columns, large numbers.
                e.count = 1 + i as u32;
                e.upstream_status = (i % 3 == 0).then_some(502);
                e.detail = (i % 2 == 1).then(|| format!("detail {i}"));
                e.query = (i % 4 != 0).then(|| format!("q={i}"));
                e.latency_us = u64::MAX - i as u64;
                if i % 5 == 2 {
                    e.others = vec![OtherReason { stage: "openapi".into(), reason: "openapi.query_invalid".into(), location: None }];
                    e.tags = vec![format!("tag{i}")];
                }
                e
            })
            .collect();
        sink.write(&batch).unwrap();
        all.extend(batch);
    }
    let r = Reader::open(&db).unwrap();
    let mut stored = r.events(&Filter { limit: Some(1000), ..Filter::default() }).unwrap().events;
    stored.reverse();
    assert_eq!(stored.len(), all.len());
    for (i, (s, mut e)) in stored.into_iter().zip(all).enumerate() {
        assert_eq!(s.id, Some(i as i64 + 1), "rows in batch order");
        // The latency is stored as a signed 64-bit integer (clamped).
        e.latency_us = e.latency_us.min(i64::MAX as u64);
        assert_eq!(Event { id: None, ..s }, e);
    }
}

#[test]
fn a_row_that_fails_rolls_back_its_whole_batch() {
    let d = Dir::new("atomic");
    let db = d.0.join("ev.db");
    let mut sink = SqliteSink::open(&db, Retention::default()).unwrap();
    // A trigger makes one row fail, in the middle of an 8-row statement (row 11 of 20).
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute_batch("CREATE TRIGGER refuse BEFORE INSERT ON events WHEN NEW.request_id = 'bad' BEGIN SELECT RAISE(FAIL, 'refused'); END;")
        .unwrap();
    let mut batch: Vec<Event> = (0..20).map(|i| ev("192.0.2.1", "detect.sqli", i)).collect();
    batch[10].request_id = "bad".into();
    assert!(sink.write(&batch).is_err());
    // And in the rows after the last full statement (row 18 of 19).
    batch[10].request_id = "good".into();
    batch[17].request_id = "bad".into();
    assert!(sink.write(&batch[..19]).is_err());
    let r = Reader::open(&db).unwrap();
    assert!(r.events(&Filter::default()).unwrap().events.is_empty(), "nothing of a failed batch is stored");
    batch[17].request_id = "fine".into();
    sink.write(&batch).unwrap();
    assert_eq!(r.events(&Filter::default()).unwrap().events.len(), 20);
}

#[test]
fn sqlite_filters_on_time_app_ip_and_category_are_served_by_an_index() {
    let d = Dir::new("plans");
    let db = d.0.join("ev.db");
    let mut sink = SqliteSink::open(&db, Retention::default()).unwrap();
    let batch: Vec<Event> = (0..2000).map(|i| ev(&format!("192.0.2.{}", i % 200), "detect.sqli", i)).collect();
    sink.write(&batch).unwrap();
    let r = Reader::open(&db).unwrap();
    let plan = |f: Filter| r.explain(&f).unwrap();
    let s = |v: &str| Some(v.to_string());
    for (f, index) in [
        (Filter { since_ms: Some(10), until_ms: Some(20), ..Filter::default() }, "events_time"),
        (Filter { app: s("shop"), ..Filter::default() }, "events_app"),
        (Filter { app: s("shop"), since_ms: Some(10), until_ms: Some(20), ..Filter::default() }, "events_app"),
        (Filter { ip: s("192.0.2.9"), ..Filter::default() }, "events_ip"),
        (Filter { ip: s("192.0.2.9"), before_id: Some(100), ..Filter::default() }, "events_ip"),
        (Filter { category: s("xss"), ..Filter::default() }, "events_category"),
        (Filter { category: s("xss"), reason: s("detect.xss"), status: Some(403), ..Filter::default() }, "events_category"),
    ] {
        let p = plan(f.clone());
        assert!(p.contains(&format!("USING INDEX {index} ")), "{f:?}: {p}");
    }
    // No filter, or only a start time: newest first straight from the table, no sort.
    for f in [Filter::default(), Filter { since_ms: Some(10), ..Filter::default() }] {
        let p = plan(f.clone());
        assert!(p.starts_with("SCAN events") && !p.contains("TEMP B-TREE"), "{f:?}: {p}");
    }
}

#[test]
fn a_version_1_sqlite_database_gains_the_tags_and_operation_columns() {
    let d = Dir::new("migrate");
    let db = d.0.join("events.db");
    {
        // The version 1 schema, with one row.
        let c = rusqlite::Connection::open(&db).unwrap();
        let v1 = "CREATE TABLE events (id INTEGER PRIMARY KEY, time_ms INTEGER NOT NULL, last_ms INTEGER NOT NULL, count INTEGER NOT NULL DEFAULT 1, \
             request_id TEXT NOT NULL, app TEXT NOT NULL, client_ip TEXT NOT NULL, method TEXT NOT NULL, host TEXT NOT NULL, path TEXT NOT NULL, \
             query TEXT, verdict TEXT NOT NULL, stage TEXT NOT NULL, reason TEXT NOT NULL, detector TEXT, category TEXT, confidence INTEGER, \
             location TEXT, fragment TEXT, detail TEXT, others TEXT, status INTEGER NOT NULL, upstream_status INTEGER, latency_us INTEGER NOT NULL); \
             INSERT INTO events (time_ms, last_ms, request_id, app, client_ip, method, host, path, verdict, stage, reason, status, latency_us) \
             VALUES (5, 5, 'r1', 'api', '192.0.2.9', 'GET', 'h', '/', 'block', 'detect', 'detect.xss', 403, 1); PRAGMA user_version = 1;";
        c.execute_batch(v1).unwrap();
    }
    for _ in 0..2 {
        // Opening migrates once; opening again is a no-op.
        let mut sink = SqliteSink::open(&db, Retention::default()).unwrap();
        let mut e = ev("192.0.2.10", "rules.deny", 10);
        e.tags = vec!["t".into()];
        e.operation = Some("GET /users/{id}".into());
        sink.write(&[e]).unwrap();
    }
    let events = Reader::open(&db).unwrap().events(&Filter::default()).unwrap().events;
    assert_eq!(events.len(), 3);
    assert_eq!(events[2].request_id, "r1");
    assert!(events[2].tags.is_empty());
    assert_eq!(events[2].operation, None);
    assert_eq!(events[0].tags, ["t"]);
    assert_eq!(events[0].operation.as_deref(), Some("GET /users/{id}"));
    let v: i64 = rusqlite::Connection::open(&db).unwrap().query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
    assert_eq!(v, sqlite::SCHEMA_VERSION);
}

#[test]
fn postgres_copy_rows_escape_text_and_write_nulls() {
    let mut e = ev("192.0.2.1", "detect.xss", 7);
    e.path = "/a\tb\\c\nd\re\0f".into();
    e.query = None;
    e.tags = vec!["x".into()];
    let mut buf = Vec::new();
    pg::copy_rows(&mut buf, &[e]);
    let line = String::from_utf8(buf).unwrap();
    assert!(line.ends_with('\n') && line.matches('\n').count() == 1, "{line:?}");
    let fields: Vec<&str> = line.trim_end_matches('\n').split('\t').collect();
    assert_eq!(fields.len(), pg::COLUMNS.split(',').count(), "{fields:?}");
    assert_eq!(fields[8], "/a\\tb\\\\c\\nd\\re\\\\0f");
    assert_eq!(fields[9], "\\N", "a missing query is NULL");
    assert_eq!(fields[21], "\\N", "no upstream status");
    assert_eq!(fields[23], "[\"x\"]");
    assert_eq!(fields[24], "\\N", "no operation");
    assert_eq!(fields[0], "7");
}

#[test]
fn postgres_urls_are_checked_and_never_shown_with_credentials() {
    assert!(pg::PostgresSink::open("postgres://u:secret@127.0.0.1:1/db").is_ok(), "an unreachable server is not an error at open");
    let s = pg::PostgresSink::open("postgres://u:secret@127.0.0.1:1/db").unwrap();
    assert!(!s.describe().contains("secret"), "{}", s.describe());
    assert!(pg::PostgresSink::open("postgres://u@127.0.0.1:notaport/db").is_err());
}

#[test]
fn an_unreachable_postgres_drops_batches_with_exact_counts_and_never_blocks_senders() {
    // Port 1 on loopback: connection refused at once.
    let sink = pg::PostgresSink::open("postgres://u@127.0.0.1:1/db").unwrap();
    let p = Pipeline::start(Box::new(sink), Options { tick: Duration::from_millis(5), ..Options::default() }).unwrap();
    for i in 0..100 {
        p.sender().send(ev("192.0.2.1", "detect.sqli", i));
    }
    assert!(p.flush(WAIT));
    let s = p.counters().snapshot();
    assert_eq!((s.produced, s.written, s.dropped + s.aggregated), (100, 0, 100), "{s:?}");
    assert!(balanced(&s));
}

/// A writer driven by hand into a memory sink, with hour-long windows and ticks (the test ends
/// windows itself) and `aggregate_after` events per tick making a key busy.
#[allow(clippy::type_complexity)]
fn manual_writer(aggregate_after: usize) -> (Arc<Mutex<Vec<Event>>>, EventSender, pipeline::Writer, Receiver<pipeline::Msg>) {
    let rows = Arc::new(Mutex::new(Vec::new()));
    let opts = Options {
        queue_size: 64,
        batch_size: 8,
        aggregate_window: Duration::from_secs(3600),
        tick: Duration::from_secs(3600),
        aggregate_after,
        ..Options::default()
    };
    let (tx, w, rx) = pipeline::Writer::manual(Box::new(MemSink(rows.clone())), opts);
    (rows, tx, w, rx)
}

/// `ev` with its own path and request id, to tell which event lends a row its details.
fn ev_at(ip: &str, reason: &str, time_ms: i64, path: &str) -> Event {
    Event { path: path.into(), ..ev(ip, reason, time_ms) }
}

#[test]
fn a_busy_key_rolls_over_at_window_ends_without_building_events_and_the_accounting_stays_exact() {
    // A writer driven by hand: the test polls it and ends its windows, so every step is
    // deterministic. Busy = at least 2 events folded by producers over a window
    // (`aggregate_after` per `tick`, and the tick is as long as the window).
    let (rows, tx, mut w, rx) = manual_writer(2);
    let mut batch = Vec::new();
    let built = std::cell::Cell::new(0u32);
    let record = |ip: &'static str, t: i64, path: &'static str| {
        tx.record(key(ip), t, || {
            built.set(built.get() + 1);
            ev_at(ip, "detect.sqli", t, path)
        })
    };
    let snap = || tx.counters().snapshot();
    let rows_now = || rows.lock().unwrap().iter().map(|r: &Event| (r.count, r.time_ms, r.last_ms, r.path.clone())).collect::<Vec<_>>();
    let t = |n: u32, ms: i64, last: i64, path: &str| (n, ms, last, path.to_string());

    // Three events queued before any aggregate is open; the writer finds itself behind, holds
    // the first and folds the other two.
    for i in 0..3 {
        record("192.0.2.1", 1000 + i, "/first");
    }
    w.poll(&rx, &mut batch);
    let s = snap();
    assert_eq!((built.get(), s.produced, s.written, s.aggregated, s.held, s.queued), (3, 3, 0, 2, 1, 0), "{s:?}");
    // Producers fold into the open aggregate: nothing built.
    for i in 0..5 {
        tx.record(key("192.0.2.1"), 1010 + i, || panic!("folded, never built"));
    }
    // Window 1 ends with 5 events folded by producers: busy. Its row is written and the
    // aggregate stays open for window 2 in the same step.
    w.end_windows();
    w.poll(&rx, &mut batch);
    let s = snap();
    assert_eq!((s.produced, s.written, s.aggregated, s.held), (8, 1, 7, 0), "{s:?}");
    assert_eq!(rows_now(), [t(8, 1000, 1014, "/first")]);
    // Window 2: still nothing built; the first event folded into it heads its row (held until
    // written), the others are aggregated.
    for i in 0..4 {
        tx.record(key("192.0.2.1"), 2000 + i, || panic!("folded across the window end, never built"));
    }
    let s = snap();
    assert_eq!((s.produced, s.aggregated, s.held, s.queued), (12, 10, 1, 0), "{s:?}");
    w.end_windows();
    w.poll(&rx, &mut batch);
    let s = snap();
    assert_eq!((s.produced, s.written, s.aggregated, s.held), (12, 2, 10, 0), "{s:?}");
    // The row of a rolled-over window carries the details of the row that opened the run, its
    // own times and count.
    assert_eq!(rows_now()[1], t(4, 2000, 2003, "/first"));
    {
        let r = rows.lock().unwrap();
        assert_eq!(r[1].request_id, r[0].request_id);
    }
    // Window 3: a queued event of the key reaches the writer before any producer folds into
    // the window: it heads the row and lends it its details.
    tx.send(ev_at("192.0.2.1", "detect.sqli", 3000, "/queued"));
    w.poll(&rx, &mut batch);
    for i in 1..3 {
        tx.record(key("192.0.2.1"), 3000 + i, || panic!("never built"));
    }
    w.end_windows();
    w.poll(&rx, &mut batch);
    let s = snap();
    assert_eq!((s.produced, s.written, s.aggregated, s.held), (15, 3, 12, 0), "{s:?}");
    assert_eq!(rows_now()[2], t(3, 3000, 3002, "/queued"));
    // Window 4: nothing folded. It ends without a row, and the key is closed: the next event
    // is built and, the writer not being behind, stored as its own row.
    w.end_windows();
    w.poll(&rx, &mut batch);
    assert_eq!(rows_now().len(), 3);
    assert_eq!(built.get(), 3);
    record("192.0.2.1", 5000, "/alone");
    assert_eq!(built.get(), 4);
    w.poll(&rx, &mut batch);
    assert_eq!(rows_now()[3], t(1, 5000, 5000, "/alone"));
    // Another key whose window ends with only one event folded by producers: not busy, closed
    // with its row; the next event is built again.
    record("192.0.2.2", 6000, "/b");
    record("192.0.2.2", 6001, "/b");
    w.poll(&rx, &mut batch);
    tx.record(key("192.0.2.2"), 6002, || panic!("never built"));
    w.end_windows();
    w.poll(&rx, &mut batch);
    assert_eq!(rows_now()[4], t(3, 6000, 6002, "/b"));
    record("192.0.2.2", 7000, "/b");
    assert_eq!(built.get(), 7);
    w.poll(&rx, &mut batch);
    // Everything is accounted for, exactly: each row has one written head, every other event
    // is in a row's count.
    let s = snap();
    let rows = rows.lock().unwrap();
    assert!(balanced(&s) && s.queued == 0 && s.held == 0 && s.dropped == 0, "{s:?}");
    assert_eq!(rows.len() as u64, s.written);
    assert_eq!(rows.iter().map(|r| r.count as u64).sum::<u64>(), s.written + s.aggregated);
    assert_eq!(s.produced, 20);
}

#[test]
fn a_flush_writes_a_rolled_over_aggregate_and_closes_it() {
    let (rows, tx, mut w, rx) = manual_writer(1);
    let mut batch = Vec::new();
    tx.send(ev("192.0.2.1", "detect.sqli", 1));
    w.poll(&rx, &mut batch);
    tx.record(key("192.0.2.1"), 2, || panic!("never built"));
    w.end_windows();
    w.poll(&rx, &mut batch);
    // Rolled over; two events fold into window 2, then a flush arrives: the row is written and
    // the aggregate closed, not rolled over.
    tx.record(key("192.0.2.1"), 3, || panic!("never built"));
    tx.record(key("192.0.2.1"), 4, || panic!("never built"));
    let (ack_tx, ack_rx) = sync_channel(1);
    tx.send_flush(ack_tx);
    w.poll(&rx, &mut batch);
    assert!(ack_rx.try_recv().is_ok());
    let counts: Vec<(u32, i64, i64)> = rows.lock().unwrap().iter().map(|r| (r.count, r.time_ms, r.last_ms)).collect();
    assert_eq!(counts, [(2, 1, 2), (2, 3, 4)]);
    let built = std::cell::Cell::new(false);
    tx.record(key("192.0.2.1"), 5, || {
        built.set(true);
        ev("192.0.2.1", "detect.sqli", 5)
    });
    assert!(built.get(), "closed by the flush: built again");
    let (ack_tx, ack_rx) = sync_channel(1);
    tx.send_flush(ack_tx);
    w.poll(&rx, &mut batch);
    assert!(ack_rx.try_recv().is_ok());
    let s = tx.counters().snapshot();
    assert!(balanced(&s) && s.held == 0 && s.queued == 0, "{s:?}");
    assert_eq!((s.produced, s.written, s.aggregated), (5, 3, 2));
}
