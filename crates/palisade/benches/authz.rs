//! The authorization API's `POST /v1/judge` decision on a 1 KiB JSON request: parse the
//! document, route, run every stage of the app (OpenAPI with a body schema, detection at its
//! defaults) in the head and body phases, answer the verdict as JSON and record the request
//! (metrics). Everything the listener does but the HTTP exchange; one thread, so the figure is
//! per core. `scripts/bench-authz` measures the same request through the listener with wrk.

use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use palisade_proxy::metrics::Metrics;
use palisade_proxy::proxy::Proxy;
use palisade_proxy::Snapshot;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const SPEC: &str = r#"
openapi: 3.0.3
info: {title: bench, version: "1"}
paths:
  /v1/orders:
    post:
      operationId: createOrder
      parameters:
        - {name: dry_run, in: query, schema: {type: boolean}}
      requestBody:
        required: true
        content:
          application/json:
            schema:
              type: object
              required: [customer, items]
              properties:
                customer: {type: string, maxLength: 64}
                note: {type: string, maxLength: 200}
                items:
                  type: array
                  items:
                    type: object
                    required: [sku, qty]
                    properties:
                      sku: {type: string, pattern: '^[A-Z0-9-]+$'}
                      qty: {type: integer, minimum: 1}
      responses:
        '201': {description: created}
"#;

fn b64(data: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for c in data.chunks(3) {
        let n = (c[0] as u32) << 16 | (*c.get(1).unwrap_or(&0) as u32) << 8 | *c.get(2).unwrap_or(&0) as u32;
        for i in 0..4 {
            out.push(if i <= c.len() { A[(n >> (18 - 6 * i) & 63) as usize] as char } else { '=' });
        }
    }
    out
}

/// The judge request of `scripts/bench-authz`: a POST with eleven headers and a JSON body,
/// brought to 1 KiB with one more header.
fn document(note: &str) -> Vec<u8> {
    let body =
        format!(r#"{{"customer":"c-1842","note":"{note}","items":[{{"sku":"AB-1001","qty":2}},{{"sku":"CD-2002","qty":1}},{{"sku":"EF-3003","qty":5}}]}}"#);
    let mut doc = serde_json::json!({
        "method": "POST", "path": "/v1/orders", "query": "dry_run=false",
        "headers": {
            "host": "api.example.com",
            "user-agent": "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36",
            "accept": "application/json",
            "accept-language": "en-US,en;q=0.9",
            "accept-encoding": "gzip, deflate, br",
            "content-type": "application/json",
            "authorization": "Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJjLTE4NDIiLCJzY29wZSI6Im9yZGVycyJ9.c2lnbmF0dXJlLW5vdC1jaGVja2Vk",
            "cookie": ["session=8f14e45fceea167a5a36dedd4bea2543", "theme=dark"],
            "x-request-id": "bench-0001",
            "referer": "https://shop.example.com/cart",
        },
        "body": b64(body.as_bytes()), "client_ip": "203.0.113.7",
    });
    let len = serde_json::to_vec(&doc).unwrap().len();
    if len < 1024 {
        doc["headers"]["x-trace"] = serde_json::Value::String("t".repeat((1024 - len).saturating_sub(13).max(1)));
    }
    serde_json::to_vec(&doc).unwrap()
}

fn bench(c: &mut Criterion) {
    let dir = std::env::temp_dir().join(format!("palisade-bench-authz-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("api.yaml"), SPEC).unwrap();
    let yaml = "workers: 1\nlisten: [{addr: '127.0.0.1:0'}]\nauthz: {addr: '127.0.0.1:0'}\nevents: 'off'\napps:\n  - name: api\n    hosts: [api.example.com]\n    upstream: http://127.0.0.1:9\n    openapi: {spec: api.yaml}\n";
    let config = palisade_config::parse_str(yaml, "bench.yaml", &dir).unwrap();
    let metrics = Arc::new(Metrics::new(1));
    let snapshot = Snapshot::build_with(config, 1, &palisade::stages::factory(palisade::stages::Use::Serve), &metrics).unwrap();
    std::fs::remove_dir_all(&dir).ok();
    let proxy = Proxy { snapshot: Arc::new(arc_swap::ArcSwap::from_pointee(snapshot)), metrics, events: None };
    let peer = "127.0.0.1".parse().unwrap();

    let allow = document("please deliver before noon, ring twice at the back door");
    let block = document("x' UNION SELECT password FROM users--");
    // What is measured is what the listener answers.
    for (doc, verdict) in [(&allow, "allow"), (&block, "block")] {
        assert!((1000..=1100).contains(&doc.len()), "{}", doc.len());
        let r = palisade_proxy::authz::judge_document(&proxy, doc, peer);
        let body = futures_body(r);
        assert!(body.contains(&format!("\"verdict\":\"{verdict}\"")), "{body}");
    }

    let mut g = c.benchmark_group("authz");
    g.throughput(Throughput::Elements(1));
    g.bench_function("judge_1KiB_allow", |b| b.iter(|| palisade_proxy::authz::judge_document(&proxy, std::hint::black_box(&allow), peer)));
    g.bench_function("judge_1KiB_block", |b| b.iter(|| palisade_proxy::authz::judge_document(&proxy, std::hint::black_box(&block), peer)));
    g.finish();
}

/// The body of a generated (full) response.
fn futures_body(r: http::Response<palisade_proxy::resp_body::RespBody>) -> String {
    use http_body_util::BodyExt;
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let bytes = rt.block_on(r.into_body().collect()).ok().map(|c| c.to_bytes()).unwrap_or_default();
    String::from_utf8_lossy(&bytes).into_owned()
}

criterion_group!(benches, bench);
criterion_main!(benches);
