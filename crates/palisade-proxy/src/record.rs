//! What one request leaves behind once it is answered: metrics always (a few atomic adds), and
//! an event when a stage blocked or monitored it, or when it is in the `sample_allowed` sample.
//!
//! [`Record`] is filled during the request by the few places in `proxy.rs` that know something
//! (the routed app, a block, monitored findings, the upstream's status or failure) and read by
//! [`finish`] at the very end. For an allowed request that is not sampled it holds no heap
//! memory, and `finish` only counts.

use std::cell::Cell;
use std::net::IpAddr;
use std::time::Duration;

use http::{HeaderMap, Method, Uri};
use palisade_core::Reason;
use palisade_events::model::now_ms;
use palisade_events::{EventSender, FoldKey, ReasonRef, RequestRef};

use crate::metrics::{Metrics, UpstreamErr, Verdict};
use crate::request_id::RequestId;
use crate::snapshot::Snapshot;

/// The request line pieces an event needs, copied only when an event will be made.
#[derive(Debug, Default)]
pub struct Captured {
    pub method: String,
    pub host: String,
    pub path: String,
    pub query: Option<String>,
}

impl Captured {
    pub fn new(method: &Method, uri: &Uri, headers: &HeaderMap) -> Captured {
        let host = match uri.authority() {
            Some(a) => a.as_str().to_string(),
            None => headers.get(http::header::HOST).and_then(|h| h.to_str().ok()).unwrap_or("").to_string(),
        };
        Captured { method: method.as_str().to_string(), host, path: uri.path().to_string(), query: uri.query().map(str::to_string) }
    }
}

/// What happened to one request.
#[derive(Debug)]
pub struct Record {
    /// Index of the app in the snapshot, once routed.
    pub app: Option<usize>,
    pub verdict: Verdict,
    /// Blocking reasons first, then monitored ones, with their stage.
    pub reasons: Vec<(&'static str, Reason)>,
    pub req: Option<Box<Captured>>,
    pub upstream_status: Option<u16>,
    pub upstream_error: Option<UpstreamErr>,
    /// Tags user rules put on the request (recorded in its event).
    pub tags: Vec<String>,
    /// The OpenAPI operation the request matched (recorded in its event).
    pub operation: Option<std::sync::Arc<str>>,
}

impl Default for Record {
    fn default() -> Self {
        Record {
            app: None,
            verdict: Verdict::Allow,
            reasons: Vec::new(),
            req: None,
            upstream_status: None,
            upstream_error: None,
            tags: Vec::new(),
            operation: None,
        }
    }
}

impl Record {
    /// A stage blocked: its reasons go first.
    pub fn blocked(&mut self, stage: &'static str, reasons: Vec<Reason>, req: impl FnOnce() -> Captured) {
        self.verdict = Verdict::Block;
        let monitored = std::mem::take(&mut self.reasons);
        self.reasons = reasons.into_iter().map(|r| (stage, r)).chain(monitored).collect();
        if self.req.is_none() {
            self.req = Some(Box::new(req()));
        }
    }

    /// Monitor-mode findings (the request goes on).
    pub fn monitored(&mut self, found: impl Iterator<Item = (&'static str, Reason)>, req: impl FnOnce() -> Captured) {
        let before = self.reasons.len();
        self.reasons.extend(found);
        if self.reasons.len() > before {
            if self.verdict == Verdict::Allow {
                self.verdict = Verdict::Monitor;
            }
            if self.req.is_none() {
                self.req = Some(Box::new(req()));
            }
        }
    }
}

thread_local! {
    static RNG: Cell<u64> = Cell::new(seed());
}

fn seed() -> u64 {
    let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(1);
    (t ^ 0x9e37_79b9_7f4a_7c15).max(1)
}

/// Whether this allowed request is in the sample (`ratio` in 0..=1); per-worker xorshift.
pub fn sampled(ratio: f64) -> bool {
    if ratio <= 0.0 {
        return false;
    }
    if ratio >= 1.0 {
        return true;
    }
    RNG.with(|r| {
        let mut x = r.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        r.set(x);
        ((x >> 11) as f64 / (1u64 << 53) as f64) < ratio
    })
}

/// Where a judged request came from: a request Palisade proxies, or one another gateway asked
/// about through the authorization API (counted in a series of its own).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    Proxy,
    Authz,
}

/// Count the request and, when it is notable, send its event (never waits).
#[allow(clippy::too_many_arguments)]
pub fn finish(
    source: Source,
    snap: &Snapshot,
    metrics: &Metrics,
    events: Option<&EventSender>,
    rec: Record,
    id: &RequestId,
    client_ip: IpAddr,
    status: u16,
    elapsed: Duration,
) {
    let app = rec.app.and_then(|i| snap.apps.get(i));
    let m = app.map_or(&metrics.unrouted, |a| &a.metrics);
    match source {
        Source::Proxy => m.request(rec.verdict, status, elapsed),
        Source::Authz => m.authz(rec.verdict, status, elapsed),
    }
    if let Some(kind) = rec.upstream_error {
        m.upstream_error(kind);
    }
    event(snap, events, rec, id, client_ip, status, elapsed);
}

/// Send the event of a notable request (blocked, monitored or sampled), without counting it:
/// [`finish`] does both; a WebSocket message judged after its handshake only this.
pub fn event(snap: &Snapshot, events: Option<&EventSender>, rec: Record, id: &RequestId, client_ip: IpAddr, status: u16, elapsed: Duration) {
    let app = rec.app.and_then(|i| snap.apps.get(i));
    let (Some(tx), Some(app), Some(req)) = (events, app, rec.req.as_deref()) else { return };
    let latency_us = elapsed.as_micros() as u64;
    let time_ms = now_ms() - (latency_us / 1000) as i64;
    // The aggregation key from borrowed data first: while the writer holds an aggregate with
    // this key open (a flood of identical events), the event is only counted into it and never
    // built.
    let key = FoldKey { app: &app.cfg.name, client_ip, reason: rec.reasons.first().map_or("", |(_, r)| &*r.code) };
    tx.record(key, time_ms, || {
        let ev_verdict = match rec.verdict {
            Verdict::Block => palisade_events::Verdict::Block,
            Verdict::Monitor => palisade_events::Verdict::Monitor,
            Verdict::Allow => palisade_events::Verdict::Allow,
        };
        let reasons: Vec<ReasonRef<'_>> = rec
            .reasons
            .iter()
            .map(|(stage, r)| ReasonRef { stage, code: &r.code, location: r.location.as_deref(), detail: r.detail.as_deref(), fragment: r.fragment.as_deref() })
            .collect();
        let r = RequestRef {
            time_ms,
            request_id: id.as_str(),
            app: &app.cfg.name,
            client_ip,
            method: &req.method,
            host: &req.host,
            path: &req.path,
            query: req.query.as_deref(),
        };
        let mut event = snap.events.redactor.event(&r, ev_verdict, &reasons, status, rec.upstream_status, latency_us);
        event.tags = palisade_events::model::bound_tags(rec.tags);
        event.operation = rec.operation.map(|o| o.to_string());
        event
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sampling_follows_the_ratio() {
        assert!(!(0..1000).any(|_| sampled(0.0)));
        assert!((0..1000).all(|_| sampled(1.0)));
        let hits = (0..10_000).filter(|_| sampled(0.25)).count();
        // 2,500 expected; the bounds are 20 standard deviations wide.
        assert!((1_700..3_300).contains(&hits), "{hits}");
    }

    #[test]
    fn a_block_puts_its_reasons_before_monitored_ones_and_copies_the_request_once() {
        let mut r = Record::default();
        assert!(r.req.is_none() && r.reasons.capacity() == 0, "an allowed request holds no heap memory");
        let uri: Uri = "/a?b=1".parse().unwrap();
        let mut h = HeaderMap::new();
        h.insert(http::header::HOST, "api.test".parse().unwrap());
        r.monitored([("openapi", Reason::new("openapi.unknown_field"))].into_iter(), || Captured::new(&Method::POST, &uri, &h));
        assert_eq!(r.verdict, Verdict::Monitor);
        r.blocked("detection", vec![Reason::new("detect.sqli")], || panic!("the request is copied once"));
        assert_eq!(r.verdict, Verdict::Block);
        let codes: Vec<&str> = r.reasons.iter().map(|(_, r)| &*r.code).collect();
        assert_eq!(codes, ["detect.sqli", "openapi.unknown_field"]);
        let c = r.req.unwrap();
        assert_eq!((c.method.as_str(), c.host.as_str(), c.path.as_str(), c.query.as_deref()), ("POST", "api.test", "/a", Some("b=1")));
    }
}
