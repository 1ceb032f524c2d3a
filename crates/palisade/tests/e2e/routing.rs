//! Apps chosen by Host (exact, wildcard) and path prefix.

use crate::common::*;

#[tokio::test]
async fn host_wildcard_and_path_prefix_choose_the_upstream() {
    let exact = Upstream::tcp(reply("exact")).await;
    let admin = Upstream::tcp(reply("admin")).await;
    let wild = Upstream::tcp(reply("wild")).await;
    let rest = format!(
        "apps:\n  - name: exact\n    hosts: api.example.com\n    upstream: {}\n  - name: admin\n    hosts: [api.example.com]\n    path_prefix: /admin\n    upstream: {}\n  - name: wild\n    hosts: [\"*.example.com\"]\n    upstream: {}\n",
        exact.url(),
        admin.url(),
        wild.url()
    );
    let proxy = Proxy::start(&cfg(&[], &rest));
    let cases = [
        ("api.example.com", "/x", "exact"),
        ("API.Example.COM:8080", "/x", "exact"),
        ("api.example.com.", "/", "exact"),
        ("api.example.com", "/admin", "admin"),
        ("api.example.com", "/admin/users?id=1", "admin"),
        ("api.example.com", "/administrator", "exact"),
        ("www.example.com", "/", "wild"),
        ("a.b.example.com", "/admin", "wild"),
    ];
    for (host, path, want) in cases {
        let r = get(proxy.addr, host, path).await;
        assert_eq!(r.status, 200, "{host}{path}: {}", r.dump());
        assert_eq!(r.text(), want, "{host}{path}");
    }
    for host in ["example.com", "other.org", "example.com.evil.org"] {
        let r = get(proxy.addr, host, "/").await;
        let v = assert_problem(&r, 404, "route.no_app");
        assert!(!r.text().contains(host), "the host is not echoed: {v}");
    }
    // The absolute-form authority wins over the Host header for routing.
    let r = raw(proxy.addr, "GET http://www.example.com/x HTTP/1.1\r\nHost: www.example.com\r\n\r\n").await;
    assert_eq!(r.text(), "wild");
    assert_eq!(exact.accepts() + admin.accepts() + wild.accepts(), 3, "one pooled connection per upstream");
}

#[tokio::test]
async fn no_app_gives_404_problem() {
    let up = Upstream::tcp(reply("x")).await;
    let rest = format!("apps:\n  - name: only\n    hosts: a.test\n    path_prefix: /api\n    upstream: {}\n", up.url());
    let proxy = Proxy::start(&cfg(&[], &rest));
    let mut c = Conn::connect(proxy.addr).await;
    for (host, path) in [("a.test", "/"), ("a.test", "/apix"), ("b.test", "/api")] {
        let r = c.roundtrip(format!("GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n")).await;
        assert_problem(&r, 404, "route.no_app");
        assert_eq!(r.header("cache-control"), Some("no-store"));
    }
    // A 404 without a body to skip keeps the connection open.
    let r = c.roundtrip("GET /api/ok HTTP/1.1\r\nHost: a.test\r\n\r\n").await;
    assert_eq!(r.text(), "x");
    assert_eq!(up.accepts(), 1);
}
