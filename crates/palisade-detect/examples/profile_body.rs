//! Inspect one request body many times (for `perf`/`callgrind`; not a benchmark).
//!
//! `cargo run --release -p palisade-detect --example profile_body -- FILE [N] [CONTENT-TYPE] [--bare]`
//! inspects FILE as a request body N times (default 200) with the default engine
//! (`--bare`: extraction only, no detectors) and prints the report of the last run.
//! `--evict KIB` writes KIB KiB of other memory before each inspection, as the kernel and the
//! rest of the proxy do between requests: under `valgrind --tool=callgrind --cache-sim=yes`
//! the first-level data cache misses per body then tell how much memory a body's inspection
//! touches (subtract the KIB * 16 lines of the writes themselves).
//! `profile_body --value TEXT [N] [header]` inspects one query value (or, with `header`, one
//! `User-Agent` header value) N times instead.

use palisade_core::Phase;
use palisade_detect::engine::Report;
use palisade_detect::eval::OwnedRequest;
use palisade_detect::extract::Location;
use palisade_detect::{Engine, EngineConfig, FieldKind, Level};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().is_some_and(|a| a == "--value") {
        let v = args.get(1).expect("--value TEXT");
        let n: usize = args.get(2).map_or(1000, |s| s.parse().expect("N is a number"));
        let engine = Engine::new(EngineConfig::default()).expect("engine");
        let mut scratch = engine.scratch();
        let mut out = Vec::new();
        for _ in 0..n {
            out.clear();
            if args.get(3).is_some_and(|k| k == "header") {
                engine.inspect_value(v, FieldKind::Header, &Location::Header("User-Agent"), Level::Balanced, &mut scratch, &mut out);
            } else {
                engine.inspect_value(v, FieldKind::QueryValue, &Location::Query("q"), Level::Balanced, &mut scratch, &mut out);
            }
        }
        println!("{} findings", out.len());
        for f in &out {
            println!("  {f}");
        }
        return;
    }
    let bare = args.iter().any(|a| a == "--bare");
    let mut evict = 0usize;
    let mut rest: Vec<&String> = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--bare" => {}
            "--evict" => evict = it.next().and_then(|k| k.parse().ok()).expect("--evict KIB"),
            _ => rest.push(a),
        }
    }
    let args = rest;
    let Some(file) = args.first() else {
        eprintln!("usage: profile_body FILE [N] [CONTENT-TYPE] [--bare] [--evict KIB]");
        std::process::exit(2);
    };
    let n: usize = args.get(1).map_or(200, |s| s.parse().expect("N is a number"));
    let ct = args.get(2).map_or("application/json", |s| s.as_str());
    let engine = if bare { Engine::with_detectors(Vec::new(), EngineConfig::default()) } else { Engine::new(EngineConfig::default()) }.expect("engine");
    let mut req = OwnedRequest::new(http::Method::POST, "/orders");
    req.headers.insert(http::header::CONTENT_TYPE, ct.parse().expect("content type"));
    req.body = std::fs::read(file).unwrap_or_else(|e| panic!("{file}: {e}"));
    let mut scratch = engine.scratch();
    let mut report = Report::default();
    // One write per 64-byte line.
    let mut other = vec![0u64; evict * 128];
    for _ in 0..n {
        for w in other.iter_mut().step_by(8) {
            *w = w.wrapping_add(1);
        }
        engine.inspect_phase(&req.view(), Phase::Body, Level::Balanced, &mut scratch, &mut report);
    }
    std::hint::black_box(&other);
    println!("{} values, {} bytes, {} findings", report.counts.values, report.counts.bytes, report.findings.len());
    for f in &report.findings {
        println!("  {f}");
    }
}
