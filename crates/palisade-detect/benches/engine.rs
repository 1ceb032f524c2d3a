//! The detection engine with the built-in detectors: a few typical benign values (bar: 2 µs
//! median each), a sample of our benign sets (`data/benign/*.jsonl`, every 8th value, as
//! query values; criterion reports the time per value through `Throughput::Elements`),
//! `GET /test?id=5&q=...` head inspection, and the JSON bodies small.json (1 KiB; bar 10 µs)
//! and large.json (28 KiB; bar 100 µs) from the shared bench folder (`$PALISADE_SHARED/bench` or
//! `../shared/bench` beside the repository) fully inspected (JSON extraction
//! included, every key and string).
//!
//! `cargo bench -p palisade-detect --bench engine`. Body benches skipped without the payloads.
//!
//! A counting global allocator prints the heap allocations per inspected value / body once
//! before the timings (the engine is meant to allocate nothing for a benign value), and
//! `body/*/extract_only` (an engine without detectors) shows the share of JSON extraction.

use std::path::Path;

use palisade_testkit::alloc;

#[global_allocator]
static GLOBAL: alloc::Counting = alloc::Counting;

/// Heap allocations made by `f`.
fn allocs(mut f: impl FnMut()) -> u64 {
    let a = alloc::total();
    f();
    alloc::total() - a
}

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use palisade_core::Phase;
use palisade_detect::engine::Report;
use palisade_detect::eval::{parse_corpus, OwnedRequest};
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
        ("value/uuid", "3f2b8c1e-9a4d-4e7b-b1c2-5d6e7f8a9b0c"),
        ("value/email", "jane.doe+orders@example.co.uk"),
        ("value/date", "2024-05-14T09:31:27Z"),
        ("value/base64", "dGhlIHF1aWNrIGJyb3duIGZveCBqdW1wcyBvdmVy"),
        ("value/markdown", "Run `cargo build --release` then see the **README**; it's short."),
    ] {
        let n = allocs(|| {
            out.clear();
            engine.inspect_value(v, FieldKind::QueryValue, &Location::Query("q"), Level::Balanced, &mut scratch, &mut out);
        });
        eprintln!("{name}: {n} allocations");
        c.bench_function(name, |b| {
            b.iter(|| {
                out.clear();
                engine.inspect_value(std::hint::black_box(v), FieldKind::QueryValue, &Location::Query("q"), Level::Balanced, &mut scratch, &mut out);
            })
        });
    }
    // A sample of our benign sets, one value after the other.
    let benign = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/benign");
    let mut sample: Vec<String> = Vec::new();
    let mut files: Vec<_> = std::fs::read_dir(&benign).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|e| e == "jsonl")).collect();
    files.sort();
    for f in files {
        let all = parse_corpus(&std::fs::read_to_string(&f).unwrap()).unwrap();
        sample.extend(all.into_iter().step_by(8).map(|s| s.value));
    }
    let n = allocs(|| {
        for v in &sample {
            out.clear();
            engine.inspect_value(v, FieldKind::QueryValue, &Location::Query("q"), Level::Balanced, &mut scratch, &mut out);
        }
    });
    eprintln!("benign_sample: {} values, {n} allocations", sample.len());
    // The distribution of the time per value (the bar is on the median of typical values):
    // each value judged 200 times, the mean per value, then percentiles over the values.
    let mut per: Vec<f64> = sample
        .iter()
        .map(|v| {
            let t = std::time::Instant::now();
            for _ in 0..200 {
                out.clear();
                engine.inspect_value(std::hint::black_box(v), FieldKind::QueryValue, &Location::Query("q"), Level::Balanced, &mut scratch, &mut out);
            }
            t.elapsed().as_secs_f64() * 1e6 / 200.0
        })
        .collect();
    per.sort_by(f64::total_cmp);
    let pct = |p: usize| per[(per.len() - 1) * p / 100];
    eprintln!("benign_sample per value: median {:.2} µs, p75 {:.2}, p90 {:.2}, p99 {:.2}, max {:.2}", pct(50), pct(75), pct(90), pct(99), pct(100));
    let mut g = c.benchmark_group("values");
    g.throughput(Throughput::Elements(sample.len() as u64));
    g.bench_function("benign_sample", |b| {
        b.iter(|| {
            for v in &sample {
                out.clear();
                engine.inspect_value(std::hint::black_box(v), FieldKind::QueryValue, &Location::Query("q"), Level::Balanced, &mut scratch, &mut out);
            }
        })
    });
    g.finish();
    // Each detector alone over the same sample (where the time goes).
    let mut g = c.benchmark_group("detector_benign");
    g.throughput(Throughput::Elements(sample.len() as u64));
    for d in palisade_detect::registry::detectors() {
        g.bench_function(d.name(), |b| {
            b.iter(|| {
                for v in &sample {
                    let input = palisade_detect::Input { raw: v, decoded: v, field: FieldKind::QueryValue };
                    std::hint::black_box(d.check(std::hint::black_box(&input), Level::Balanced));
                }
            })
        });
    }
    g.finish();
    let mut report = Report::default();
    let mut get = OwnedRequest::new(http::Method::GET, "/test");
    get.query = Some("id=5&q=wireless+mouse&page=2".into());
    get.headers.insert(http::header::USER_AGENT, "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0".parse().unwrap());
    c.bench_function("head/get_test", |b| b.iter(|| engine.inspect_phase(&get.view(), Phase::Head, Level::Balanced, &mut scratch, &mut report)));
    // A browser's navigation request: 15 headers, every one inspected (by its grammar first).
    let mut browser = OwnedRequest::new(http::Method::GET, "/products/shoes/42");
    browser.query = Some("color=red&size=42".into());
    for (n, v) in [
        ("host", "shop.example.com"),
        ("user-agent", "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36"),
        ("accept", "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8"),
        ("accept-language", "en-US,en;q=0.9,de;q=0.8"),
        ("accept-encoding", "gzip, deflate, br, zstd"),
        ("referer", "https://shop.example.com/search?q=red+shoes&page=2"),
        ("sec-ch-ua", "\"Not/A)Brand\";v=\"8\", \"Chromium\";v=\"126\", \"Google Chrome\";v=\"126\""),
        ("sec-ch-ua-mobile", "?0"),
        ("sec-ch-ua-platform", "\"Windows\""),
        ("sec-fetch-site", "same-origin"),
        ("sec-fetch-mode", "navigate"),
        ("sec-fetch-dest", "document"),
        ("upgrade-insecure-requests", "1"),
        ("if-none-match", "W/\"5e15153d-120f\""),
        ("cookie", "session=3f9a0c1e8b7d4a2f9e6c5b4a3d2e1f0a; theme=dark; consent=analytics%3Dyes"),
    ] {
        browser.headers.append(http::HeaderName::from_static(n), http::HeaderValue::from_static(v));
    }
    c.bench_function("head/browser", |b| b.iter(|| engine.inspect_phase(&browser.view(), Phase::Head, Level::Balanced, &mut scratch, &mut report)));

    let Some(dir) = bench_dir() else {
        eprintln!("body benches skipped: no bench payloads in $PALISADE_SHARED/bench or ../shared/bench");
        return;
    };
    let bare = Engine::with_detectors(Vec::new(), EngineConfig::default()).unwrap();
    let mut bare_scratch = bare.scratch();
    for name in ["small.json", "large.json"] {
        let mut req = OwnedRequest::new(http::Method::POST, "/orders");
        req.headers.insert(http::header::CONTENT_TYPE, "application/json".parse().unwrap());
        req.body = std::fs::read(dir.join(name)).unwrap();
        engine.inspect_phase(&req.view(), Phase::Body, Level::Balanced, &mut scratch, &mut report);
        let n = allocs(|| engine.inspect_phase(&req.view(), Phase::Body, Level::Balanced, &mut scratch, &mut report));
        eprintln!("{name}: {} values, {} bytes inspected, {} findings, {n} allocations", report.counts.values, report.counts.bytes, report.findings.len());
        c.bench_function(&format!("body/{name}"), |b| b.iter(|| engine.inspect_phase(&req.view(), Phase::Body, Level::Balanced, &mut scratch, &mut report)));
        c.bench_function(&format!("body/{name}/extract_only"), |b| {
            b.iter(|| bare.inspect_phase(&req.view(), Phase::Body, Level::Balanced, &mut bare_scratch, &mut report))
        });
    }
}

/// The folder of the bench payloads: `$PALISADE_SHARED/bench` when set (a checkout elsewhere),
/// else `../shared/bench` beside the repository.
fn bench_dir() -> Option<std::path::PathBuf> {
    let from_env = std::env::var_os("PALISADE_SHARED").map(|s| Path::new(&s).join("bench"));
    let beside = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/bench");
    from_env.into_iter().chain([beside]).find(|d| d.join("small.json").exists())
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).warm_up_time(std::time::Duration::from_millis(300)).measurement_time(std::time::Duration::from_secs(1));
    targets = bench
}
criterion_main!(benches);
