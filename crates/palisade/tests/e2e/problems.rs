//! Every response Palisade generates is problem+json with a request id, and never echoes the
//! request.

use crate::common::*;

const MARK: &str = "PWN7f3a";

#[tokio::test]
async fn generated_responses_are_problem_json_and_never_echo_the_request() {
    let hang = Upstream::tcp(handler(|_| vec![Step::Hang])).await;
    let dead = closed_port();
    let rest = format!(
        "apps:\n  - name: small\n    hosts: small.test\n    upstream: {}\n    limits: {{max_body_size: 1KiB, inspect_body: 1KiB}}\n  - name: dead\n    hosts: dead.test\n    upstream: http://127.0.0.1:{dead}\n  - name: slow\n    hosts: slow.test\n    upstream:\n      targets: {}\n      read_timeout: 200ms\n",
        hang.url(),
        hang.url()
    );
    let proxy = Proxy::start(&cfg(&["max_header_size: 1KiB", "header_read_timeout: 300ms", "body_read_timeout: 300ms"], &rest));
    let m = MARK;
    let big = format!("<script>{m}</script>").repeat(80);
    let cases: Vec<(String, u16, &str)> = vec![
        (format!("GET /%3Cscript%3E{m}?q={m} HTTP/1.1\r\nHost: {m}.nowhere\r\nX-A: <{m}>\r\n\r\n"), 404, "route.no_app"),
        (format!("POST /{m} HTTP/1.1\r\nHost: small.test\r\nContent-Length: {}\r\n\r\n{big}", big.len()), 413, "http.body_too_large"),
        (
            format!("POST /{m} HTTP/1.1\r\nHost: small.test\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n{big}\r\n0\r\n\r\n", big.len()),
            413,
            "http.body_too_large",
        ),
        (format!("GET /{m} HTTP/1.1\r\nHost: small.test\r\nX-Big: {big}\r\n\r\n"), 431, "http.headers_too_large"),
        (format!("POST /{m} HTTP/1.1\r\nHost: small.test\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n{m}"), 400, "http.ambiguous_framing"),
        (format!("GET /{m} HTTP/1.1\r\nHost: small.test\r\nX-{m}: <{m}>\r\n"), 408, "http.header_timeout"),
        (format!("POST /{m} HTTP/1.1\r\nHost: small.test\r\nContent-Length: 100\r\n\r\n{m}"), 408, "http.body_timeout"),
        (format!("POST /{m} HTTP/1.1\r\nHost: small.test\r\nTransfer-Encoding: chunked\r\n\r\nZZ{m}\r\n"), 400, "http.bad_request"),
        (format!("GET /{m}?{m} HTTP/1.1\r\nHost: dead.test\r\nCookie: {m}\r\n\r\n"), 502, "upstream.unavailable"),
        (format!("GET /{m}?{m} HTTP/1.1\r\nHost: slow.test\r\nCookie: {m}\r\n\r\n"), 504, "upstream.timeout"),
        (format!("GET /{m} HTTP/1.1\r\nHost: small.test\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"), 501, "http.not_implemented"),
        (format!("GET /{m} HTTP/1.1\r\nHost: small.test\r\nExpect: {m}\r\n\r\n"), 417, "http.bad_request"),
        (format!("GET /{m} HTTP/1.1\r\n\r\n"), 400, "http.bad_request"),
        (format!("GET /{m} HTTP/1.1\nHost: small.test\n\n"), 400, "http.bad_request"),
    ];
    let mut ids = std::collections::HashSet::new();
    for (req, status, code) in cases {
        let mut c = Conn::connect(proxy.addr).await;
        c.send_lossy(&req).await;
        let r = c.response().await;
        let v = assert_problem(&r, status, code);
        assert_eq!(r.header("cache-control"), Some("no-store"), "{}", r.dump());
        let all = r.dump();
        assert!(!all.contains(MARK) && !all.contains("script"), "the request was echoed: {all}");
        assert!(ids.insert(v["request_id"].as_str().unwrap().to_string()), "request ids are unique");
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        for k in ["type", "title", "status", "code", "request_id"] {
            assert!(keys.contains(&k), "{k} missing: {all}");
        }
    }
}
