//! Router lookups: the benchmark spec's routes, and a 100-route API with parameters, mixed
//! segments and percent-encoded input.
//!
//! `cargo bench -p palisade-openapi --bench router`

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use palisade_openapi::router::{Lookup, Method, Router, RouterOptions, Span};

fn bench_spec_router() -> Router {
    let mut r = Router::new(RouterOptions::default());
    r.insert(Method::Get, "/test", 0).unwrap();
    r.insert(Method::Post, "/orders", 1).unwrap();
    r.insert(Method::Post, "/test/signup", 2).unwrap();
    r
}

fn big_router() -> Router {
    let mut r = Router::new(RouterOptions::default());
    let mut op = 0;
    for res in ["users", "orders", "products", "invoices", "teams", "projects", "tickets", "files", "reports", "events"] {
        for t in [
            format!("/v1/{res}"),
            format!("/v1/{res}/{{id}}"),
            format!("/v1/{res}/{{id}}/history"),
            format!("/v1/{res}/{{id}}/items/{{item}}"),
            format!("/v1/{res}/search"),
            format!("/v1/{res}/{{id}}.{{format}}"),
        ] {
            for m in [Method::Get, Method::Post] {
                r.insert(m, &t, op).unwrap();
                op += 1;
            }
        }
    }
    r
}

fn lookup(c: &mut Criterion, name: &str, r: &Router, method: &str, path: &str) {
    let mut out: Vec<Span> = Vec::with_capacity(8);
    assert!(matches!(r.lookup(method, path, &mut out), Lookup::Found { .. }), "{name}");
    c.bench_function(name, |b| {
        b.iter(|| {
            let res = r.lookup(black_box(method), black_box(path), &mut out);
            black_box(matches!(res, Lookup::Found { .. }));
        })
    });
}

fn benches(c: &mut Criterion) {
    let small = bench_spec_router();
    lookup(c, "bench spec: GET /test?id=5", &small, "GET", "/test?id=5");
    lookup(c, "bench spec: POST /test/signup", &small, "POST", "/test/signup");
    let big = big_router();
    lookup(c, "120 routes: GET /v1/tickets/12345/items/987", &big, "GET", "/v1/tickets/12345/items/987");
    lookup(c, "120 routes: GET /v1/events/search", &big, "GET", "/v1/events/search");
    lookup(c, "120 routes: GET /v1/files/report.pdf (mixed segment)", &big, "GET", "/v1/files/report.pdf");
    lookup(c, "120 routes: GET /v1/%75sers/a%2Fb (percent-encoded)", &big, "GET", "/v1/%75sers/a%2Fb");
    let mut out = Vec::with_capacity(8);
    c.bench_function("120 routes: GET /v2/nope (not found)", |b| {
        b.iter(|| black_box(big.lookup("GET", black_box("/v2/nope/x"), &mut out) == Lookup::NotFound))
    });
}

criterion_group!(router, benches);
criterion_main!(router);
