//! The OpenAPI judge on the benchmark scenarios (issue bars): `GET /test?id=5`, `POST /orders`
//! with small.json and `POST /test/signup` with large.json against ../shared/bench/bench-api.yaml,
//! whole request judged (route, parameters, body parse and schema validation).
//!
//! Allocations per judged request are counted with a counting global allocator and printed
//! (`allocs/request`) before each measurement, with the on-CPU time per request (thread CPU
//! clock, so that waiting for a core on a shared machine does not count).
//!
//! `cargo bench -p palisade-openapi --bench judge`. Skipped (with a message) without ../shared.

use std::path::Path;

use criterion::{criterion_group, criterion_main, Criterion};
use palisade_core::rawhttp::{parse_request, OwnedRequest};
use palisade_openapi::judge::{Judge, Phase};
use palisade_testkit::alloc;

#[global_allocator]
static GLOBAL: alloc::Counting = alloc::Counting;

fn shared() -> Option<std::path::PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/bench");
    p.join("bench-api.yaml").exists().then_some(p)
}

fn judge(dir: &Path, fused: bool) -> Judge {
    let spec = dir.join("bench-api.yaml").canonicalize().unwrap().display().to_string();
    let set = palisade_openapi::load(&spec, &palisade_openapi::FsFetch, &palisade_openapi::Limits::default()).unwrap();
    let api = palisade_openapi::compile(&set, &Default::default()).unwrap();
    let node = palisade_config::yaml::parse("spec: x").unwrap();
    let mut cx = palisade_config::decode::Ctx::new("bench");
    let settings = palisade_openapi::settings::Settings::decode(&mut cx, &node, "openapi", Path::new("/")).unwrap();
    let mut j = Judge::new(api, settings).unwrap();
    j.set_fused(fused);
    j
}

/// Nanoseconds this thread has run on a CPU (`CLOCK_THREAD_CPUTIME_ID`), to give a figure that
/// waiting for a core on a shared machine does not inflate.
#[allow(unsafe_code)] // a libc call
fn cpu_ns() -> Option<u64> {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec.
    let r = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    (r == 0).then(|| ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

fn request(head: &str, body: &[u8]) -> OwnedRequest {
    let mut raw = head.as_bytes().to_vec();
    raw.extend_from_slice(body);
    parse_request(&raw).unwrap()
}

fn bench(c: &mut Criterion) {
    let Some(dir) = shared() else {
        eprintln!("judge bench skipped: ../shared/bench not found");
        return;
    };
    let small = std::fs::read(dir.join("small.json")).unwrap();
    let large = std::fs::read(dir.join("large.json")).unwrap();
    let cases = [
        ("get_test_id", request("GET /test?id=5 HTTP/1.1\nHost: b\n\n", b"")),
        ("post_orders_small", request("POST /orders HTTP/1.1\nHost: b\nContent-Type: application/json\n\n", &small)),
        ("post_signup_large", request("POST /test/signup HTTP/1.1\nHost: b\nContent-Type: application/json\n\n", &large)),
    ];
    // `judge/...`: as deployed (fused validator first); `judge_tape/...`: tape parse + tape
    // validation only (the path before the fused validator, and the one invalid bodies take).
    for (group, fused) in [("judge", true), ("judge_tape", false)] {
        let judge = judge(&dir, fused);
        let mut out = Vec::new();
        for (name, req) in &cases {
            if !fused && *name == "get_test_id" {
                continue;
            }
            judge.check_request(&req.view(), Phase::Whole, &mut out);
            assert!(out.is_empty(), "{name}: {out:?}");
            let before = alloc::total();
            for _ in 0..100 {
                out.clear();
                judge.check_request(&req.view(), Phase::Whole, &mut out);
            }
            let per = (alloc::total() - before) as f64 / 100.0;
            eprintln!("{group}/{name}: {per} allocs/request");
            // On-CPU time per request over a fixed count (best of 5 rounds).
            let n = if *name == "post_signup_large" { 500 } else { 5000 };
            let mut best = u64::MAX;
            for _ in 0..5 {
                let Some(t0) = cpu_ns() else { break };
                for _ in 0..n {
                    out.clear();
                    judge.check_request(std::hint::black_box(&req.view()), Phase::Whole, &mut out);
                }
                if let Some(t1) = cpu_ns() {
                    best = best.min(t1 - t0);
                }
            }
            if best != u64::MAX {
                eprintln!("{group}/{name}: {:.3} µs on-CPU/request (best of 5 x {n})", best as f64 / n as f64 / 1000.0);
            }
            c.bench_function(&format!("{group}/{name}"), |b| {
                b.iter(|| {
                    out.clear();
                    judge.check_request(std::hint::black_box(&req.view()), Phase::Whole, &mut out);
                    std::hint::black_box(out.len())
                })
            });
        }
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
