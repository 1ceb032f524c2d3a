//! The sample event of the sink benchmark and of `examples/sink_profile.rs` (one definition,
//! included by both): a blocked SQL injection, time moving forward with `i`, client IPs
//! cycling over 250 addresses.

use palisade_events::{Event, Verdict};

pub fn event(i: i64) -> Event {
    Event {
        id: None,
        time_ms: 1_795_000_000_000 + i,
        last_ms: 1_795_000_000_000 + i,
        count: 1,
        request_id: format!("{i:016x}"),
        app: "api".into(),
        client_ip: format!("198.51.100.{}", i % 250),
        method: "GET".into(),
        host: "api.example.com".into(),
        path: "/v1/search".into(),
        query: Some("q=%27%20or%201%3D1--&page=2".into()),
        verdict: Verdict::Block,
        stage: "detection".into(),
        reason: "detect.sqli".into(),
        detector: Some("sqli".into()),
        category: Some("sqli".into()),
        confidence: Some(95),
        location: Some("query.q".into()),
        fragment: Some("' or 1=1--".into()),
        detail: Some("sqli confidence 95 (tautology) via url".into()),
        others: Vec::new(),
        status: 403,
        upstream_status: None,
        latency_us: 180,
        tags: Vec::new(),
        operation: None,
    }
}
