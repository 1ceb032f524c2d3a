//! The OpenAPI judge on the benchmark scenarios (issue bars): `GET /test?id=5`, `POST /orders`
//! with small.json and `POST /test/signup` with large.json against ../shared/bench/bench-api.yaml,
//! whole request judged (route, parameters, body parse and schema validation).
//!
//! `cargo bench -p palisade-openapi --bench judge`. Skipped (with a message) without ../shared.

use std::path::Path;

use criterion::{criterion_group, criterion_main, Criterion};
use palisade_openapi::judge::{Judge, Phase};
use palisade_openapi::rawhttp::{parse_request, OwnedRequest};

fn shared() -> Option<std::path::PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/bench");
    p.join("bench-api.yaml").exists().then_some(p)
}

fn judge(dir: &Path) -> Judge {
    let spec = dir.join("bench-api.yaml").canonicalize().unwrap().display().to_string();
    let set = palisade_openapi::load(&spec, &palisade_openapi::FsFetch, &palisade_openapi::Limits::default()).unwrap();
    let api = palisade_openapi::compile(&set, &Default::default()).unwrap();
    let node = palisade_config::yaml::parse("spec: x").unwrap();
    let mut cx = palisade_config::decode::Ctx::new("bench");
    let settings = palisade_openapi::settings::Settings::decode(&mut cx, &node, "openapi", Path::new("/")).unwrap();
    Judge::new(api, settings).unwrap()
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
    let judge = judge(&dir);
    let small = std::fs::read(dir.join("small.json")).unwrap();
    let large = std::fs::read(dir.join("large.json")).unwrap();
    let cases = [
        ("get_test_id", request("GET /test?id=5 HTTP/1.1\nHost: b\n\n", b"")),
        ("post_orders_small", request("POST /orders HTTP/1.1\nHost: b\nContent-Type: application/json\n\n", &small)),
        ("post_signup_large", request("POST /test/signup HTTP/1.1\nHost: b\nContent-Type: application/json\n\n", &large)),
    ];
    let mut out = Vec::new();
    for (name, req) in &cases {
        judge.check_request(&req.view(), Phase::Whole, &mut out);
        assert!(out.is_empty(), "{name}: {out:?}");
        c.bench_function(&format!("judge/{name}"), |b| {
            b.iter(|| {
                out.clear();
                judge.check_request(std::hint::black_box(&req.view()), Phase::Whole, &mut out);
                std::hint::black_box(out.len())
            })
        });
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
