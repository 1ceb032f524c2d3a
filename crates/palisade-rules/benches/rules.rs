//! Cost of user rules per request as the rule count grows: a typical benign API request (head
//! phase, then a JSON body for rules that read it) against 10, 100 and 1,000 generated rules
//! of mixed shapes (literals on the query, the path and headers, regexes, CIDRs, parameter
//! lists, numeric limits, JSON pointers). The multi-pattern compilation should keep the cost
//! nearly flat.
//!
//! `cargo bench -p palisade-rules --bench rules -- --warm-up-time 1 --measurement-time 3`
//! (`RULE_KIND=0..9` makes every rule of one shape, to see what each shape costs).

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use palisade_config::decode::Ctx;
use palisade_core::{Context, RequestView, Stage};
use palisade_rules::{Rules, RulesStage};

fn rule(i: usize) -> String {
    let kind = match std::env::var("RULE_KIND") {
        Ok(k) => k.parse().unwrap(),
        Err(_) => i % 10,
    };
    let when = match kind {
        0 => format!("{{field: query, contains: 'probe{i}.php', ignore_case: true}}"),
        1 => format!("{{field: path, prefix: '/legacy{i}/'}}"),
        2 => format!("{{field: header.user-agent, contains: 'scanner{i}', ignore_case: true}}"),
        3 => format!("{{field: path, regex: '^/old{i}/[a-z]+\\.(php|asp)$'}}"),
        4 => format!("{{field: ip, cidr: '10.{}.{}.0/24'}}", i % 256, (i / 256) % 256),
        5 => format!("{{field: query.action, in: [drop{i}, purge{i}]}}"),
        6 => format!("{{all: [{{field: path, prefix: '/admin{i}'}}, {{not: {{field: ip, cidr: 192.168.0.0/16}}}}]}}"),
        7 => format!("{{field: query.limit, gt: {}}}", 1000 + i),
        8 => format!("{{field: header.x-client, equals: 'bad{i}'}}"),
        _ => format!("{{field: 'body:/user/role', equals: 'role{i}'}}"),
    };
    format!("- {{id: r{i}, when: {when}, then: block}}\n")
}

fn stage(n: usize) -> RulesStage {
    let yaml: String = (0..n).map(rule).collect();
    let node = palisade_config::yaml::parse(&yaml).unwrap();
    let mut cx = Ctx::new("bench.yaml");
    let list = palisade_rules::settings::decode(&mut cx, &node, "rules", std::path::Path::new("."), &Default::default(), &|_| {
        Err(palisade_config::read::ReadError::Io(std::io::ErrorKind::NotFound.into()))
    });
    assert!(cx.errors.is_empty());
    RulesStage::new(Rules::compile(list).unwrap())
}

fn bench(c: &mut Criterion) {
    let mut headers = http::HeaderMap::new();
    for (k, v) in [
        ("host", "api.example.com"),
        ("user-agent", "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"),
        ("accept", "application/json"),
        ("accept-language", "en-GB,en;q=0.8"),
        ("referer", "https://app.example.com/users"),
        ("cookie", "session=6f1c2a9e0b7d4c3f; theme=dark"),
        ("content-type", "application/json"),
    ] {
        headers.insert(k, http::HeaderValue::from_static(v));
    }
    let method = http::Method::POST;
    let body = br#"{"user":{"name":"Alice Smith","role":"reader","email":"alice@example.com"},"settings":{"notify":true,"lang":"en"}}"#;
    let view = |body: &'static [u8]| RequestView {
        request_id: "r",
        app: "a",
        client_ip: "203.0.113.7".parse().unwrap(),
        method: &method,
        path: "/api/v1/users/42/profile",
        raw_path: "/api/v1/users/42/profile",
        query: Some("sort=name&page=2&limit=50&q=alice%20smith"),
        headers: &headers,
        body,
        body_truncated: false,
        tls: true,
    };
    let mut g = c.benchmark_group("rules");
    for n in [10, 100, 1000] {
        let s = stage(n);
        // Sanity: the typical request matches no rule.
        assert!(s.check_head(&view(b""), &mut Context::default()).is_allow());
        assert!(s.check_body(&view(body), &mut Context::default()).is_allow());
        g.bench_function(format!("head/{n}"), |b| b.iter(|| s.check_head(black_box(&view(b"")), &mut Context::default())));
        g.bench_function(format!("body/{n}"), |b| b.iter(|| s.check_body(black_box(&view(body)), &mut Context::default())));
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
