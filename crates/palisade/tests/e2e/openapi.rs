//! The OpenAPI stage in the running proxy: requests judged against a spec, monitor mode,
//! response validation (compressed too), specs fetched by URL and refreshed, statuses.

use std::io::{Read, Write};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common::*;

const SPEC: &str = r#"
openapi: 3.0.3
info: {title: e2e, version: "1"}
paths:
  /items:
    get:
      parameters:
        - {name: limit, in: query, schema: {type: integer, minimum: 1, maximum: 100}}
      responses:
        '200':
          description: ok
          content:
            application/json:
              schema:
                type: object
                required: [items]
                properties:
                  items: {type: array, items: {type: integer}}
    post:
      requestBody:
        required: true
        content:
          application/json:
            schema:
              type: object
              additionalProperties: false
              required: [name]
              properties:
                name: {type: string, maxLength: 8}
      responses:
        '201': {description: created}
"#;

fn app(upstream: &str, openapi: &str) -> String {
    format!("apps:\n  - name: app\n    upstream: {upstream}\n    openapi:\n{openapi}")
}

fn post(path: &str, ct: &str, body: &str) -> String {
    format!("POST {path} HTTP/1.1\r\nHost: api.test\r\nContent-Type: {ct}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len())
}

#[tokio::test]
async fn requests_outside_the_spec_are_blocked_and_never_reach_the_upstream() {
    let mut up = Upstream::tcp(reply(r#"{"items":[1]}"#)).await;
    let dir = TempDir::new();
    dir.write("api.yaml", SPEC);
    let proxy = Proxy::start_in(&cfg(&[], &app(&up.url(), "      spec: api.yaml\n")), dir);

    let r = get(proxy.addr, "api.test", "/items?limit=5").await;
    assert_eq!(r.status, 200, "{}", r.dump());
    assert_eq!(up.next_req().await.target, "/items?limit=5");

    let r = get(proxy.addr, "api.test", "/items?limit=500").await;
    let v = assert_problem(&r, 403, "openapi.parameter_invalid");
    assert_eq!(v["reasons"][0]["location"], "query.limit", "{}", r.dump());
    assert!(v["reasons"][0]["detail"].as_str().unwrap().contains("100"), "{}", r.dump());

    assert_problem(&get(proxy.addr, "api.test", "/admin").await, 403, "openapi.path_not_found");
    assert_problem(&get(proxy.addr, "api.test", "/items?debug=1").await, 403, "openapi.query_unknown");

    let r = raw(proxy.addr, post("/items", "application/json", r#"{"name":"ok"}"#)).await;
    assert_eq!(r.status, 200, "{}", r.dump());
    let seen = up.next_req().await;
    assert_eq!(seen.body, br#"{"name":"ok"}"#);

    let r = raw(proxy.addr, post("/items", "application/json", r#"{"name":"much too long"}"#)).await;
    let v = assert_problem(&r, 403, "openapi.body_invalid");
    assert_eq!(v["reasons"][0]["location"], "body/name");
    // The value itself is never echoed back.
    assert!(!r.text().contains("much too long"), "{}", r.dump());

    assert_problem(&raw(proxy.addr, post("/items", "text/plain", "name")).await, 403, "openapi.media_type_unsupported");
    // Nothing blocked reached the upstream.
    assert!(up.try_req().is_none());
}

#[tokio::test]
async fn status_by_violation_maps_findings_to_statuses() {
    let up = Upstream::tcp(reply("{}")).await;
    let dir = TempDir::new();
    dir.write("api.yaml", SPEC);
    let proxy = Proxy::start_in(&cfg(&[], &app(&up.url(), "      spec: api.yaml\n      status_by_violation: true\n")), dir);
    assert_problem(&get(proxy.addr, "api.test", "/nope").await, 404, "openapi.path_not_found");
    let r = raw(proxy.addr, "DELETE /items HTTP/1.1\r\nHost: api.test\r\nConnection: close\r\n\r\n").await;
    assert_problem(&r, 405, "openapi.method_not_allowed");
    assert_problem(&raw(proxy.addr, post("/items", "text/csv", "a,b")).await, 415, "openapi.media_type_unsupported");
    assert_problem(&get(proxy.addr, "api.test", "/items?limit=0").await, 400, "openapi.parameter_invalid");
}

#[tokio::test]
async fn monitor_mode_lets_requests_through() {
    let mut up = Upstream::tcp(reply(r#"{"items":[]}"#)).await;
    let dir = TempDir::new();
    dir.write("api.yaml", SPEC);
    let proxy = Proxy::start_in(&cfg(&[], &app(&up.url(), "      spec: api.yaml\n      request: monitor\n")), dir);
    let r = get(proxy.addr, "api.test", "/items?limit=500").await;
    assert_eq!(r.status, 200, "{}", r.dump());
    assert_eq!(up.next_req().await.target, "/items?limit=500");
}

#[tokio::test]
async fn invalid_responses_are_blocked_with_502_even_when_compressed() {
    use flate2::write::GzEncoder;
    let gz = |s: &str| {
        let mut e = GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(s.as_bytes()).unwrap();
        e.finish().unwrap()
    };
    let good = gz(r#"{"items":[1,2]}"#);
    let bad = gz(r#"{"items":["x"]}"#);
    let up = Upstream::tcp(handler(move |req| {
        let body = if req.target.contains("limit=2") { &bad } else { &good };
        vec![Step::Write(response(200, &[("Content-Type", "application/json"), ("Content-Encoding", "gzip")], body))]
    }))
    .await;
    let dir = TempDir::new();
    dir.write("api.yaml", SPEC);
    let proxy = Proxy::start_in(&cfg(&[], &app(&up.url(), "      spec: api.yaml\n      response: block\n")), dir);

    let r = get(proxy.addr, "api.test", "/items?limit=1").await;
    assert_eq!(r.status, 200, "{}", r.dump());
    assert_eq!(r.header("content-encoding"), Some("gzip"));
    // The client gets the upstream's bytes unchanged.
    let mut plain = String::new();
    flate2::read::GzDecoder::new(&r.body[..]).read_to_string(&mut plain).unwrap();
    assert_eq!(plain, r#"{"items":[1,2]}"#);

    let r = get(proxy.addr, "api.test", "/items?limit=2").await;
    let v = assert_problem(&r, 502, "openapi.response_body_invalid");
    assert_eq!(v["reasons"][0]["location"], "response.body/items/0", "{}", r.dump());
}

/// A loopback HTTP server that serves whatever `doc` holds, for spec URLs.
fn spec_server(doc: Arc<Mutex<String>>) -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for s in l.incoming().take(10_000) {
            let Ok(mut s) = s else { continue };
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            let auth_ok = String::from_utf8_lossy(&buf).contains("Authorization: Bearer spec-token");
            let body = doc.lock().unwrap().clone();
            let resp = if auth_ok {
                format!("HTTP/1.0 200 OK\r\nContent-Type: application/yaml\r\n\r\n{body}")
            } else {
                "HTTP/1.0 401 Unauthorized\r\n\r\n".to_string()
            };
            let _ = s.write_all(resp.as_bytes());
        }
    });
    format!("http://{addr}/api.yaml")
}

#[tokio::test]
async fn a_spec_fetched_by_url_is_refreshed_and_a_broken_one_keeps_the_old() {
    let up = Upstream::tcp(reply(r#"{"items":[]}"#)).await;
    let doc = Arc::new(Mutex::new(SPEC.to_string()));
    let url = spec_server(doc.clone());
    let settings = format!("      spec: {url}\n      headers: {{Authorization: Bearer spec-token}}\n      refresh: 100ms\n");
    let proxy = Proxy::start(&cfg(&[], &app(&up.url(), &settings)));
    assert_problem(&get(proxy.addr, "api.test", "/orders").await, 403, "openapi.path_not_found");

    // The spec grows a path: it is allowed once the refresh picked it up.
    *doc.lock().unwrap() = SPEC.replace("  /items:\n", "  /orders:\n    get:\n      responses: {'200': {description: ok}}\n  /items:\n");
    let mut allowed = false;
    for _ in 0..100 {
        if get(proxy.addr, "api.test", "/orders").await.status == 200 {
            allowed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(allowed, "the refreshed spec was never used");

    // A broken spec is refused: the last good one keeps serving.
    *doc.lock().unwrap() = "openapi: 3.0.3\npaths: [not, a, map\n".to_string();
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(get(proxy.addr, "api.test", "/orders").await.status, 200);
    assert_problem(&get(proxy.addr, "api.test", "/items?limit=500").await, 403, "openapi.parameter_invalid");
}

#[tokio::test]
async fn a_spec_that_does_not_load_stops_the_configuration_with_its_location() {
    let dir = TempDir::new();
    dir.write(
        "api.yaml",
        "openapi: 3.0.3\ninfo: {title: x, version: '1'}\npaths:\n  /a:\n    get:\n      responses:\n        '200': {$ref: '#/components/responses/Nope'}\n",
    );
    let config = parse(&cfg(&[], &app("http://127.0.0.1:9", "      spec: api.yaml\n")), dir.path());
    let errors = match palisade_proxy::start(config, palisade::stages::factory(palisade::stages::Use::Serve)) {
        Err(palisade_proxy::StartError::Config(e)) => e.to_string(),
        Err(e) => panic!("unexpected error {e}"),
        Ok(_) => panic!("a broken spec was accepted"),
    };
    assert!(errors.contains("api.yaml:7:"), "{errors}");
    assert!(errors.contains("#/paths/~1a/get/responses/200"), "{errors}");
}

/// The issue's bad-input list, through the running proxy: each gets a clear 4xx, promptly, and
/// the proxy keeps serving.
#[tokio::test]
async fn bad_input_gets_a_clear_4xx() {
    let up = Upstream::tcp(reply("{}")).await;
    let dir = TempDir::new();
    dir.write("api.yaml", SPEC);
    let conf = "      spec: api.yaml\n";
    let yaml = cfg(&["max_header_size: 1MiB"], &app(&up.url(), conf))
        .replace("    openapi:", "    limits: {max_body_size: 200MiB, inspect_body: 64MiB}\n    openapi:");
    let proxy = Proxy::start_in(&yaml, dir);

    // Malformed JSON, invalid UTF-8 inside a JSON string, 100,000-deep nesting.
    assert_problem(&raw(proxy.addr, post("/items", "application/json", r#"{"name": "#)).await, 403, "openapi.body_malformed");
    let mut bad_utf8 = post("/items", "application/json", "{\"name\":\"ab\"}").into_bytes();
    let at = bad_utf8.len() - 3;
    bad_utf8[at] = 0xff;
    assert_problem(&raw(proxy.addr, bad_utf8).await, 403, "openapi.body_malformed");
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    assert_problem(&raw(proxy.addr, post("/items", "application/json", &deep)).await, 403, "openapi.body_malformed");

    // 100,000 query parameters: a target beyond 64 KiB is refused by the HTTP layer (414);
    // below that, more pairs than the judge keeps (1,024) are a violation.
    let query: String = (0..100_000).map(|i| format!("p{i}=1&")).collect();
    let r = raw(proxy.addr, format!("GET /items?{query} HTTP/1.1\r\nHost: api.test\r\nConnection: close\r\n\r\n")).await;
    assert_problem(&r, 414, "http.uri_too_long");
    let query: String = (0..10_000).map(|i| format!("{i}&")).collect();
    let r = raw(proxy.addr, format!("GET /items?{query} HTTP/1.1\r\nHost: api.test\r\nConnection: close\r\n\r\n")).await;
    let v = assert_problem(&r, 403, "openapi.parameter_invalid");
    assert!(v["reasons"][0]["detail"].as_str().unwrap().contains("1024"), "{}", r.dump());

    // A 100 MB body: judged by size alone (the app inspects at most 64 MiB) with 413.
    let mut c = Conn::connect(proxy.addr).await;
    c.send(format!("POST /items HTTP/1.1\r\nHost: api.test\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n", 100 << 20)).await;
    assert_problem(&c.response().await, 413, "http.body_too_large");

    // Still serving.
    assert_eq!(get(proxy.addr, "api.test", "/items?limit=2").await.status, 200);
}

/// Monitored findings never use up `max_violations`: a body with more shadow fields
/// (`unknown_fields: monitor`, the default) than the budget, followed by a real violation, is
/// blocked for that violation and never reaches the upstream; so is a request with more
/// monitored unknown query parameters than the budget and a bad body.
#[tokio::test]
async fn monitored_findings_do_not_use_up_the_violation_budget() {
    const OPEN: &str = r#"
openapi: 3.0.3
info: {title: budget, version: "1"}
paths:
  /items:
    post:
      requestBody:
        content:
          application/json:
            schema:
              type: object
              properties:
                meta: {type: object, properties: {a: {type: string}}}
                n: {type: integer}
      responses:
        '201': {description: created}
"#;
    let mut up = Upstream::tcp(reply("{}")).await;
    let dir = TempDir::new();
    dir.write("api.yaml", OPEN);
    let conf = "      spec: api.yaml\n      max_violations: 2\n      unknown_query: monitor\n";
    let proxy = Proxy::start_in(&cfg(&[], &app(&up.url(), conf)), dir);
    let unknown: Vec<String> = (0..10).map(|i| format!(r#""u{i}":{i}"#)).collect();

    let body = format!(r#"{{"meta":{{{}}},"n":"ten"}}"#, unknown.join(","));
    let v = assert_problem(&raw(proxy.addr, post("/items", "application/json", &body)).await, 403, "openapi.body_invalid");
    assert_eq!(v["reasons"][0]["location"], "body/n", "{v}");
    assert_eq!(v["reasons"].as_array().unwrap().len(), 2, "max_violations reasons, the blocking one first: {v}");

    let query: Vec<String> = (0..10).map(|i| format!("q{i}=1")).collect();
    let r = raw(proxy.addr, post(&format!("/items?{}", query.join("&")), "application/json", r#"{"n":"ten"}"#)).await;
    let v = assert_problem(&r, 403, "openapi.body_invalid");
    assert_eq!(v["reasons"][0]["location"], "body/n", "{v}");
    assert!(up.try_req().is_none(), "nothing blocked reached the upstream");

    // Monitored findings alone pass.
    let body = format!(r#"{{"meta":{{{}}},"n":10}}"#, unknown.join(","));
    let r = raw(proxy.addr, post(&format!("/items?{}", query.join("&")), "application/json", &body)).await;
    assert_eq!(r.status, 200, "{}", r.dump());
    assert_eq!(up.next_req().await.body, body.as_bytes());
}

/// A spec of `n` operations `POST /{prefix}{i}` whose bodies repeat the same inline schemas
/// (as generated specs do), and `POST /short` whose name is shorter.
fn repetitive_spec(prefix: &str, n: usize) -> String {
    let mut s = String::from("openapi: 3.0.3\ninfo: {title: repeated, version: '1'}\npaths:\n");
    let body = |max: usize| {
        format!(
            "      requestBody:\n        required: true\n        content:\n          application/json:\n            schema:\n              type: object\n              additionalProperties: false\n              required: [name]\n              properties:\n                name: {{type: string, maxLength: {max}}}\n                tags: {{type: array, items: {{type: string, maxLength: {max}}}}}\n      responses: {{'200': {{description: ok}}}}\n"
        )
    };
    for i in 0..n {
        s.push_str(&format!("  /{prefix}{i}:\n    post:\n{}", body(8)));
    }
    s.push_str(&format!("  /short:\n    post:\n{}", body(4)));
    s
}

/// Reloading with a changed spec compiles the new one while the old one keeps judging every
/// request; once applied, the new one judges; a spec that does not load leaves the last good
/// one in place. Operations whose schemas are the same text judge alike, and a schema that
/// differs only in a bound keeps its own bound.
#[tokio::test]
async fn a_reload_with_a_changed_spec_keeps_serving_throughout() {
    let up = Upstream::tcp(reply("{}")).await;
    let dir = TempDir::new();
    dir.write("api.yaml", repetitive_spec("items", 400));
    let yaml = cfg(&[], &app(&up.url(), "      spec: api.yaml\n"));
    let proxy = Arc::new(Proxy::start_in(&yaml, dir));
    let addr = proxy.addr;
    let judged = |path: &str, name: &str| raw(addr, post(path, "application/json", &format!(r#"{{"name":"{name}","tags":["{name}"]}}"#)));
    assert_eq!(judged("/items399", "abcdefgh").await.status, 200);
    assert_problem(&judged("/items7", "abcdefghi").await, 403, "openapi.body_invalid");
    assert_problem(&judged("/short", "abcde").await, 403, "openapi.body_invalid");
    assert_eq!(judged("/short", "abcd").await.status, 200);

    // Requests on both sides of the spec change, for as long as the reloads take.
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let traffic = tokio::spawn({
        let stop = stop.clone();
        async move {
            let mut statuses = Vec::new();
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                statuses.push(raw(addr, post("/short", "application/json", r#"{"name":"ab"}"#)).await.status);
            }
            statuses
        }
    });

    proxy.dir.write("api.yaml", repetitive_spec("goods", 400));
    let p = proxy.clone();
    let generation = tokio::task::spawn_blocking(move || p.reload(&yaml)).await.unwrap().expect("the changed spec is applied");
    assert_eq!(generation, 2);
    assert_eq!(judged("/goods0", "abcdefgh").await.status, 200);
    assert_problem(&judged("/goods399", "abcdefghi").await, 403, "openapi.body_invalid");
    assert_problem(&judged("/items0", "abc").await, 403, "openapi.path_not_found");
    assert_problem(&judged("/short", "abcde").await, 403, "openapi.body_invalid");

    // A new spec that does not load: the reload is refused, the last good spec still judges.
    proxy.dir.write("api.yaml", repetitive_spec("parts", 400).replace("required: [name]", "required: [name]\n              $ref: '#/nowhere'"));
    let p = proxy.clone();
    let yaml = cfg(&[], &app(&up.url(), "      spec: api.yaml\n"));
    let refused = tokio::task::spawn_blocking(move || p.reload(&yaml)).await.unwrap();
    assert!(refused.is_err(), "a spec with a dangling $ref was applied");
    assert_eq!(proxy.snapshot().generation, 2);
    assert_eq!(judged("/goods1", "abcdefgh").await.status, 200);
    assert_problem(&judged("/parts1", "abc").await, 403, "openapi.path_not_found");

    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let statuses = traffic.await.unwrap();
    assert!(!statuses.is_empty());
    assert!(statuses.iter().all(|&s| s == 200), "a request failed during the reloads: {statuses:?}");
}

/// Detection skips the strings the spec settles in a body the OpenAPI stage found valid (a
/// value of an `enum`: text of the spec), and still inspects free strings, and every string of
/// a body that is not valid.
#[tokio::test]
async fn detection_skips_the_strings_a_valid_body_takes_from_the_spec() {
    const SETTLED: &str = r#"
openapi: 3.0.3
info: {title: e2e, version: "1"}
paths:
  /search:
    post:
      requestBody:
        required: true
        content:
          application/json:
            schema:
              type: object
              additionalProperties: false
              properties:
                mode: {type: string, enum: ["a' or 'a'='a", plain]}
                q: {type: string}
                at: {type: string, format: date-time}
      responses:
        '200': {description: ok}
"#;
    let mut up = Upstream::tcp(reply("ok")).await;
    let dir = TempDir::new();
    dir.write("api.yaml", SETTLED);
    let proxy = Proxy::start_in(&cfg(&[], &app(&up.url(), "      spec: api.yaml\n      request: monitor\n")), dir);
    let body = r#"{"mode":"a' or 'a'='a","at":"2024-05-14T09:31:27Z","q":"shoes"}"#;
    let r = raw(proxy.addr, post("/search", "application/json", body)).await;
    assert_eq!(r.status, 200, "{}", r.dump());
    assert_eq!(up.next_req().await.body, body.as_bytes());
    // The same text as a free string is inspected.
    let r = raw(proxy.addr, post("/search", "application/json", r#"{"mode":"plain","q":"a' or 'a'='a"}"#)).await;
    assert_problem(&r, 403, "detect.sqli");
    // A body the spec does not accept (here only monitored) settles nothing: all inspected.
    let r = raw(proxy.addr, post("/search", "application/json", r#"{"mode":"a' or 'a'='a","extra":1}"#)).await;
    assert_problem(&r, 403, "detect.sqli");
    assert!(up.try_req().is_none());
}
