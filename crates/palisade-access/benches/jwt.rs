//! Token verification per algorithm (signature + claims, as the access stage does it on every
//! request), the whole access stage on a request head with an HS256 token, and an IP lookup in
//! a 100,000-entry deny list.
//!
//! `cargo bench -p palisade-access --bench jwt -- --warm-up-time 1 --measurement-time 3`

use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion};
use palisade_access::jwt::{self, Alg, AlgSet, ClaimRules, KeySet};
use palisade_access::testing::{openssl_available, TestKey};
use palisade_core::{Context, RequestView, Stage};
use serde_json::json;

const NOW: u64 = 1_800_000_000;

fn claims() -> serde_json::Value {
    json!({"sub": "bench-user", "iss": "https://bench.example", "aud": "bench", "exp": NOW + 600, "scope": "read write"})
}

fn rules() -> ClaimRules {
    ClaimRules { leeway: 60, issuers: vec!["https://bench.example".into()], audiences: vec!["bench".into()], ..Default::default() }
}

fn verify(c: &mut Criterion) {
    let mut g = c.benchmark_group("verify");
    let all = AlgSet::of(&Alg::ALL);
    let hs = TestKey::hmac(Alg::HS256, b"bench-secret-bench-secret-bench-secret!");
    let mut cases: Vec<(Alg, TestKey, KeySet)> = Vec::new();
    for alg in [Alg::HS256, Alg::HS384, Alg::HS512] {
        let set = jwt::keys_from_jwks(&json!({"keys": [hs.with_alg(alg).jwk("k")]}).to_string()).unwrap().0;
        cases.push((alg, hs.with_alg(alg), set));
    }
    if openssl_available() {
        let rsa = TestKey::generate(Alg::RS256).unwrap();
        for alg in [Alg::RS256, Alg::RS384, Alg::RS512, Alg::PS256, Alg::PS384, Alg::PS512] {
            cases.push((alg, rsa.with_alg(alg), jwt::keys_from_pem(&rsa.public_pem, None).unwrap()));
        }
        for alg in [Alg::ES256, Alg::ES384, Alg::EdDSA] {
            let k = TestKey::generate(alg).unwrap();
            let set = jwt::keys_from_pem(&k.public_pem, None).unwrap();
            cases.push((alg, k, set));
        }
    } else {
        eprintln!("openssl not installed: only HS* are measured");
    }
    for (alg, key, set) in &cases {
        let token = key.token(&claims(), None);
        assert!(jwt::verify(&token, set, all, &rules(), NOW, 16384).is_ok(), "{alg}");
        g.bench_function(alg.name(), |b| b.iter(|| jwt::verify(std::hint::black_box(&token), set, all, &rules(), NOW, 16384).unwrap()));
    }
    g.finish();
}

fn stage(c: &mut Criterion) {
    let yaml = "jwt:\n  algorithms: [HS256]\n  secret: bench-secret-bench-secret-bench-secret!\n  issuer: https://bench.example\n  audience: bench\n\
                rate_limits: [{key: client_ip, rate: 1000000/s}]\n";
    let node = palisade_config::yaml::parse(yaml).unwrap();
    let mut cx = palisade_config::decode::Ctx::new("bench.yaml");
    let s = palisade_access::settings::Settings::decode(&mut cx, &node, "access", std::path::Path::new("/")).unwrap();
    let parts = palisade_access::stage::load_files(&s, &|_| Err(palisade_config::read::ReadError::Io(std::io::ErrorKind::NotFound.into()))).unwrap();
    let clock = palisade_access::stage::ManualClock::new(NOW * 1_000_000_000);
    let st = palisade_access::stage::AccessStage::new("bench", &s, parts, clock as Arc<dyn palisade_access::stage::Clock>);
    let token = TestKey::hmac(Alg::HS256, b"bench-secret-bench-secret-bench-secret!").token(&claims(), None);
    let mut headers = http::HeaderMap::new();
    headers.insert(http::header::AUTHORIZATION, format!("Bearer {token}").parse().unwrap());
    let method = http::Method::GET;
    let req = RequestView {
        request_id: "r",
        app: "bench",
        client_ip: "192.0.2.1".parse().unwrap(),
        method: &method,
        path: "/test",
        raw_path: "/test",
        query: None,
        headers: &headers,
        body: b"",
        body_truncated: false,
        tls: false,
    };
    c.bench_function("stage/hs256+rate_limit", |b| {
        b.iter(|| {
            let mut cx = Context::default();
            assert!(st.check_head(&req, &mut cx).is_allow());
            cx
        })
    });
}

fn ipset(c: &mut Criterion) {
    let nets: Vec<ipnet::IpNet> = (0..100_000u32).map(|i| format!("{}/30", std::net::Ipv4Addr::from(0x0a00_0000 + i * 8)).parse().unwrap()).collect();
    let set = palisade_access::ipset::IpSet::new(&nets);
    let ip: std::net::IpAddr = "10.3.4.5".parse().unwrap();
    c.bench_function("ipset/100k_lookup", |b| b.iter(|| set.contains(std::hint::black_box(ip))));
}

criterion_group!(benches, verify, stage, ipset);
criterion_main!(benches);
