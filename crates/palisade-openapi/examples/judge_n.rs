//! Judges one benchmark request N times and exits: a fixed amount of work to run under
//! `valgrind --tool=callgrind` (instructions per judgement do not move with the load of a
//! shared machine, unlike wall-clock figures).
//!
//! `cargo build --release -p palisade-openapi --example judge_n`, then
//! `valgrind --tool=callgrind target/release/examples/judge_n large 200` (cases: `get`,
//! `small`, `large`; add `tape` as a third argument for the tape-only path). Judge
//! instructions per request = inclusive cost of `Judge::check_request` / its call count.
//! Needs ../shared/bench (exits with a message without it).
//!
//! `judge_n CASE N timing` instead prints the on-CPU time (thread CPU clock) per judgement,
//! median of N, three times: warm (the same request judged back to back, as criterion does),
//! light (between judgements, as many bytes written as the kernel copies for one proxied
//! request: two bodies and 8 KiB) and cold (8 MiB written between judgements: caches no longer
//! hold the judge's state). The ratio says how much of the difference between the in-process figure and the
//! proxy's is the price of running cold. Timing figures move with the machine's load.
#![allow(unsafe_code)]

use std::path::Path;

use palisade_core::rawhttp::parse_request;
use palisade_openapi::judge::{Judge, Phase};

fn main() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/bench");
    if !dir.join("bench-api.yaml").exists() {
        eprintln!("judge_n: ../shared/bench not found");
        return;
    }
    let args: Vec<String> = std::env::args().collect();
    let case = args.get(1).map_or("large", String::as_str);
    let n: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(100);
    let fused = args.get(3).map(String::as_str) != Some("tape");
    let timing = args.get(3).map(String::as_str) == Some("timing");
    let spec = dir.join("bench-api.yaml").canonicalize().expect("spec path").display().to_string();
    let set = palisade_openapi::load(&spec, &palisade_openapi::FsFetch, &palisade_openapi::Limits::default()).expect("spec loads");
    let api = palisade_openapi::compile(&set, &Default::default()).expect("spec compiles");
    let node = palisade_config::yaml::parse("spec: x").expect("yaml");
    let mut cx = palisade_config::decode::Ctx::new("bench");
    let settings = palisade_openapi::settings::Settings::decode(&mut cx, &node, "openapi", Path::new("/")).expect("settings");
    let mut judge = Judge::new(api, settings).expect("judge");
    judge.set_fused(fused);
    let (head, body) = match case {
        "get" => ("GET /test?id=5 HTTP/1.1\nHost: b\n\n", Vec::new()),
        "small" => ("POST /orders HTTP/1.1\nHost: b\nContent-Type: application/json\n\n", std::fs::read(dir.join("small.json")).expect("small.json")),
        _ => ("POST /test/signup HTTP/1.1\nHost: b\nContent-Type: application/json\n\n", std::fs::read(dir.join("large.json")).expect("large.json")),
    };
    let mut raw = head.as_bytes().to_vec();
    raw.extend_from_slice(&body);
    let req = parse_request(&raw).expect("request parses");
    let mut out = Vec::new();
    if timing {
        let mut junk = vec![0u8; 8 << 20];
        // Bytes written between two judgements: none (warm), what the kernel copies for one
        // proxied request of this size (about 2 bodies plus 8 KiB), 8 MiB (cold).
        let light = (2 * body.len() + (8 << 10)).min(junk.len());
        for (label, touch) in [("warm", 0), ("light", light), ("cold", junk.len())] {
            let mut times = Vec::with_capacity(n);
            for i in 0..n {
                if touch > 0 {
                    // Touch every cache line of the span with a value that changes each round.
                    for (j, b) in junk[..touch].iter_mut().step_by(64).enumerate() {
                        *b = b.wrapping_add((i + j) as u8);
                    }
                    std::hint::black_box(&junk);
                }
                out.clear();
                let t0 = cpu_ns();
                judge.check_request(std::hint::black_box(&req.view()), Phase::Whole, &mut out);
                times.push(cpu_ns().saturating_sub(t0));
                assert!(out.is_empty(), "{case}: {out:?}");
            }
            times.sort_unstable();
            let median = times[times.len() / 2] as f64 / 1000.0;
            let p10 = times[times.len() / 10] as f64 / 1000.0;
            println!("{case} {label} ({touch} bytes written between): median {median:.2} µs on-CPU per judgement (p10 {p10:.2}, {n} judgements)");
        }
        return;
    }
    for _ in 0..n {
        out.clear();
        judge.check_request(std::hint::black_box(&req.view()), Phase::Whole, &mut out);
        assert!(out.is_empty(), "{case}: {out:?}");
    }
    println!("{case}: {n} judgements, fused={fused}");
}

/// Nanoseconds this thread has run on a CPU (`CLOCK_THREAD_CPUTIME_ID`).
fn cpu_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec.
    let r = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if r == 0 {
        ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
    } else {
        0
    }
}
