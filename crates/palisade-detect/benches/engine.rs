//! The detection engine with the built-in detectors: one typical benign value (the fast
//! path), a few harder benign values, `GET /test?id=5&q=...` head inspection, and the JSON
//! bodies small.json (1 KiB; bar 10 µs) and large.json (28 KiB; bar 100 µs) from
//! ../shared/bench fully inspected (every key and string).
//!
//! `cargo bench -p palisade-detect --bench engine`. Body benches skipped without ../shared.

use std::path::Path;

use criterion::{criterion_group, criterion_main, Criterion};
use palisade_core::Phase;
use palisade_detect::engine::Report;
use palisade_detect::eval::OwnedRequest;
use palisade_detect::extract::Location;
use palisade_detect::{Engine, EngineConfig, FieldKind, Level};

fn bench(c: &mut Criterion) {
    let engine = Engine::new(EngineConfig::default()).unwrap();
    let mut scratch = engine.scratch();
    let mut out = Vec::new();
    for (name, v) in [
        ("value/alnum", "jane.doe42"),
        ("value/prose", "It's the best product I've ever bought; I'd recommend it."),
        ("value/url", "https://shop.example.com/items?id=42&sort=price"),
        ("value/encoded", "caf%C3%A9 &amp; cr%C3%A8me"),
    ] {
        c.bench_function(name, |b| {
            b.iter(|| {
                out.clear();
                engine.inspect_value(std::hint::black_box(v), FieldKind::QueryValue, &Location::Query("q"), Level::Balanced, &mut scratch, &mut out);
            })
        });
    }
    let mut report = Report::default();
    let mut get = OwnedRequest::new(http::Method::GET, "/test");
    get.query = Some("id=5&q=wireless+mouse&page=2".into());
    get.headers.insert(http::header::USER_AGENT, "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0".parse().unwrap());
    c.bench_function("head/get_test", |b| b.iter(|| engine.inspect_phase(&get.view(), Phase::Head, Level::Balanced, &mut scratch, &mut report)));

    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/bench");
    if !dir.join("small.json").exists() {
        eprintln!("body benches skipped: ../shared/bench not found");
        return;
    }
    for name in ["small.json", "large.json"] {
        let mut req = OwnedRequest::new(http::Method::POST, "/orders");
        req.headers.insert(http::header::CONTENT_TYPE, "application/json".parse().unwrap());
        req.body = std::fs::read(dir.join(name)).unwrap();
        engine.inspect_phase(&req.view(), Phase::Body, Level::Balanced, &mut scratch, &mut report);
        eprintln!("{name}: {} values, {} bytes inspected, {} findings", report.counts.values, report.counts.bytes, report.findings.len());
        c.bench_function(&format!("body/{name}"), |b| b.iter(|| engine.inspect_phase(&req.view(), Phase::Body, Level::Balanced, &mut scratch, &mut report)));
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).warm_up_time(std::time::Duration::from_millis(300)).measurement_time(std::time::Duration::from_secs(1));
    targets = bench
}
criterion_main!(benches);
