//! What reaches the upstream: method, target, body, and the header rules.

use crate::common::*;

#[tokio::test]
async fn method_target_and_body_arrive_unchanged() {
    let mut up = Upstream::tcp(reply("fine")).await;
    let proxy = Proxy::start(&cfg(&[], &one_app(&up.url())));
    let mut c = Conn::connect(proxy.addr).await;

    // A binary body with CR, LF, NUL and every byte value.
    let body = payload(4096);
    let target = "/a/b%20c/./d?x=1&y=%2F&z&x=2#";
    let target = &target[..target.len() - 1]; // no fragment
    let mut req = format!("PATCH {target} HTTP/1.1\r\nHost: api.test\r\nContent-Length: {}\r\nX-Custom: v a l\r\nAccept: */*\r\n\r\n", body.len()).into_bytes();
    req.extend_from_slice(&body);
    let r = c.roundtrip(&req).await;
    assert_eq!(r.status, 200, "{}", r.dump());
    assert_eq!(r.text(), "fine");
    let got = up.next_req().await;
    assert_eq!(got.method, "PATCH");
    // The path goes upstream in canonical form (`path.forward: canonical`), the query as sent.
    assert_eq!(got.target, "/a/b%20c/d?x=1&y=%2F&z&x=2");
    assert_eq!(got.version, "HTTP/1.1");
    assert_eq!(got.body, body);
    assert_eq!(got.header("content-length"), Some("4096"));
    assert_eq!(got.header("x-custom"), Some("v a l"));
    assert_eq!(got.header("accept"), Some("*/*"));

    // Other methods on the same client connection, including an extension method.
    for m in ["GET", "DELETE", "OPTIONS", "PURGE", "POST", "PUT"] {
        let r = c.roundtrip(format!("{m} /m/{m}?q={m} HTTP/1.1\r\nHost: api.test\r\nContent-Length: 0\r\n\r\n")).await;
        assert_eq!(r.status, 200, "{m}: {}", r.dump());
        let got = up.next_req().await;
        assert_eq!(got.method, m);
        assert_eq!(got.target, format!("/m/{m}?q={m}"));
        assert!(got.body.is_empty());
    }

    // Absolute-form targets go upstream in origin form.
    let r = c.roundtrip("GET http://api.test/abs/path?q=1 HTTP/1.1\r\nHost: api.test\r\n\r\n").await;
    assert_eq!(r.status, 200, "{}", r.dump());
    let got = up.next_req().await;
    assert_eq!(got.target, "/abs/path?q=1");
    assert_eq!(got.header("host"), Some("api.test"));
}

#[tokio::test]
async fn hop_by_hop_headers_are_removed_both_ways() {
    let upstream_resp = b"HTTP/1.1 200 OK\r\nConnection: X-Up-Secret\r\nX-Up-Secret: 1\r\nKeep-Alive: timeout=9\r\nProxy-Authenticate: Basic\r\nUpgrade: h2c\r\nX-Fine: yes\r\nContent-Length: 2\r\n\r\nok".to_vec();
    let mut up = Upstream::tcp(handler(move |_| vec![Step::Write(upstream_resp.clone())])).await;
    let proxy = Proxy::start(&cfg(&[], &one_app(&up.url())));
    let mut c = Conn::connect(proxy.addr).await;
    let mut req = b"POST /h HTTP/1.1\r\nHost: api.test\r\nConnection: keep-alive, X-Drop-Me, x-also-drop\r\nKeep-Alive: timeout=5\r\nTE: trailers\r\nUpgrade: websocket\r\nProxy-Authorization: Basic c2VjcmV0\r\nProxy-Connection: keep-alive\r\nTrailer: X-T\r\nX-Drop-Me: secret\r\nX-Also-Drop: secret\r\nX-Keep: yes\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    req.extend_from_slice(&chunked(&[b"hello ", b"world"]));
    let r = c.roundtrip(&req).await;
    assert_eq!(r.status, 200, "{}", r.dump());
    let got = up.next_req().await;
    for h in
        ["connection", "keep-alive", "te", "upgrade", "proxy-authorization", "proxy-connection", "trailer", "x-drop-me", "x-also-drop", "transfer-encoding"]
    {
        assert!(got.header(h).is_none(), "{h} reached the upstream:\n{}", got.raw_head);
    }
    assert_eq!(got.header("x-keep"), Some("yes"));
    assert_eq!(got.header("content-length"), Some("11"));
    assert_eq!(got.body, b"hello world");

    for h in ["x-up-secret", "keep-alive", "proxy-authenticate", "upgrade"] {
        assert!(r.header(h).is_none(), "{h} reached the client:\n{}", r.raw_head);
    }
    assert_eq!(r.header("x-fine"), Some("yes"));
    assert_eq!(r.text(), "ok");
}

#[tokio::test]
async fn forwarding_headers_from_an_untrusted_peer_are_replaced() {
    let mut up = Upstream::tcp(reply("ok")).await;
    let proxy = Proxy::start(&cfg(&[], &one_app(&up.url())));
    let r = raw(
        proxy.addr,
        "GET / HTTP/1.1\r\nHost: api.test:8080\r\nX-Forwarded-For: 6.6.6.6\r\nX-Forwarded-For: 7.7.7.7\r\nX-Real-IP: 6.6.6.6\r\nX-Forwarded-Host: evil.example\r\nX-Forwarded-Proto: https\r\n\r\n",
    )
    .await;
    assert_eq!(r.status, 200);
    let got = up.next_req().await;
    assert_eq!(got.header_all("x-forwarded-for"), ["127.0.0.1"], "{}", got.raw_head);
    assert_eq!(got.header_all("x-real-ip"), ["127.0.0.1"]);
    assert_eq!(got.header_all("x-forwarded-proto"), ["http"]);
    assert_eq!(got.header_all("x-forwarded-host"), ["api.test:8080"]);
    assert_eq!(got.header("host"), Some("api.test:8080"));

    // `Forwarded` (RFC 7239), `X-Forwarded-Port` and `-Prefix` tell the same story: dropped, on the pass-through path of a plain
    // request and on the header-map path (a request whose Connection names another header).
    for extra in ["", "Connection: keep-alive, X-Hop\r\nX-Hop: 1\r\n"] {
        let req = format!("GET / HTTP/1.1\r\nHost: api.test\r\n{extra}Forwarded: for=6.6.6.6;proto=https;host=admin.internal\r\nforwarded: for=7.7.7.7\r\nX-Forwarded-Port: 8443\r\nX-Forwarded-Prefix: /evil\r\nX-Keep: 1\r\n\r\n");
        assert_eq!(raw(proxy.addr, req).await.status, 200);
        let got = up.next_req().await;
        for h in ["forwarded", "x-forwarded-port", "x-forwarded-prefix"] {
            assert!(got.header(h).is_none(), "an untrusted client's {h} reached the upstream:\n{}", got.raw_head);
        }
        assert!(got.header("x-hop").is_none());
        assert_eq!(got.header("x-keep"), Some("1"));
        assert_eq!(got.header_all("x-forwarded-for"), ["127.0.0.1"]);
    }
}

#[tokio::test]
async fn forwarding_headers_from_a_trusted_peer_are_extended() {
    let mut up = Upstream::tcp(reply("ok")).await;
    let proxy = Proxy::start(&cfg(&["trusted_proxies: [127.0.0.0/8]"], &one_app(&up.url())));

    let r = raw(proxy.addr, "GET / HTTP/1.1\r\nHost: api.test\r\nX-Forwarded-For: 203.0.113.7\r\nX-Forwarded-Host: orig.example\r\n\r\n").await;
    assert_eq!(r.status, 200);
    let got = up.next_req().await;
    assert_eq!(got.header_all("x-forwarded-for"), ["203.0.113.7, 127.0.0.1"], "{}", got.raw_head);
    assert_eq!(got.header_all("x-real-ip"), ["203.0.113.7"]);
    assert_eq!(got.header_all("x-forwarded-host"), ["orig.example"], "a trusted proxy's X-Forwarded-Host is kept");
    assert_eq!(got.header_all("x-forwarded-proto"), ["http"], "set when the trusted proxy did not say");

    // A TLS-terminating load balancer in front says https: that is kept.
    let r = raw(proxy.addr, "GET / HTTP/1.1\r\nHost: api.test\r\nX-Forwarded-Proto: https\r\n\r\n").await;
    assert_eq!(r.status, 200);
    assert_eq!(up.next_req().await.header_all("x-forwarded-proto"), ["https"], "a trusted proxy's X-Forwarded-Proto is kept");

    // The client IP is the right-most address that is not a trusted proxy.
    let r = raw(proxy.addr, "GET / HTTP/1.1\r\nHost: api.test\r\nX-Forwarded-For: 6.6.6.6, 198.51.100.1, 127.0.0.5\r\n\r\n").await;
    assert_eq!(r.status, 200);
    let got = up.next_req().await;
    assert_eq!(got.header_all("x-forwarded-for"), ["6.6.6.6, 198.51.100.1, 127.0.0.5, 127.0.0.1"]);
    assert_eq!(got.header_all("x-real-ip"), ["198.51.100.1"]);
    assert_eq!(got.header_all("x-forwarded-host"), ["api.test"]);

    // A trusted proxy's `Forwarded` is kept (and believed for the client IP).
    let r = raw(proxy.addr, "GET / HTTP/1.1\r\nHost: api.test\r\nForwarded: for=203.0.113.9;proto=https\r\n\r\n").await;
    assert_eq!(r.status, 200);
    let got = up.next_req().await;
    assert_eq!(got.header_all("forwarded"), ["for=203.0.113.9;proto=https"], "{}", got.raw_head);
    assert_eq!(got.header_all("x-real-ip"), ["203.0.113.9"]);

    // Without any forwarding header, the peer is the client.
    let r = raw(proxy.addr, "GET / HTTP/1.1\r\nHost: api.test\r\n\r\n").await;
    assert_eq!(r.status, 200);
    let got = up.next_req().await;
    assert_eq!(got.header_all("x-forwarded-for"), ["127.0.0.1"]);
    assert_eq!(got.header_all("x-real-ip"), ["127.0.0.1"]);
}

#[tokio::test]
async fn request_id_sent_upstream_is_the_one_returned() {
    let mut up = Upstream::tcp(reply("ok")).await;
    let proxy = Proxy::start(&cfg(&[], &one_app(&up.url())));
    let mut c = Conn::connect(proxy.addr).await;
    let mut seen = std::collections::HashSet::new();
    for _ in 0..5 {
        let r = c.roundtrip("GET / HTTP/1.1\r\nHost: api.test\r\nX-Request-Id: client-chosen\r\n\r\n").await;
        assert_eq!(r.status, 200);
        let got = up.next_req().await;
        let rid = r.header("x-request-id").expect("x-request-id on the response");
        assert_eq!(got.header_all("x-request-id"), [rid], "{}", got.raw_head);
        assert_ne!(rid, "client-chosen");
        assert_eq!(r.header_all("x-request-id").len(), 1);
        assert!(seen.insert(rid.to_string()), "request id reused");
    }
}

#[tokio::test]
async fn host_header_preserve_upstream_and_fixed() {
    let mut up = Upstream::tcp(reply("ok")).await;
    let u = up.url();
    let port = up.addr.unwrap().port();
    let rest = format!(
        "apps:\n  - name: preserve\n    path_prefix: /p\n    upstream: {u}\n  - name: upstream\n    path_prefix: /u\n    upstream: {u}\n    host_header: upstream\n  - name: fixed\n    path_prefix: /f\n    upstream: {u}\n    host_header: fixed.example\n"
    );
    let proxy = Proxy::start(&cfg(&[], &rest));
    let mut c = Conn::connect(proxy.addr).await;
    for (path, want) in [("/p/x", "client.example:8443".to_string()), ("/u/x", format!("127.0.0.1:{port}")), ("/f/x", "fixed.example".to_string())] {
        let r = c.roundtrip(format!("GET {path} HTTP/1.1\r\nHost: client.example:8443\r\n\r\n")).await;
        assert_eq!(r.status, 200, "{}", r.dump());
        let got = up.next_req().await;
        assert_eq!(got.path(), path);
        assert_eq!(got.header_all("host"), [want.as_str()], "{path}");
        assert_eq!(got.header_all("x-forwarded-host"), ["client.example:8443"], "{path}");
    }
}

#[tokio::test]
async fn options_asterisk_and_upstream_request_id_header() {
    // The upstream sends its own X-Request-Id: the client sees exactly one, Palisade's.
    let mut up = Upstream::tcp(handler(|_| vec![Step::Write(response(200, &[("X-Request-Id", "upstream-made")], b"x"))])).await;
    let proxy = Proxy::start(&cfg(&[], &one_app(&up.url())));
    let r = raw(proxy.addr, "OPTIONS * HTTP/1.1\r\nHost: api.test\r\n\r\n").await;
    assert_eq!(r.status, 200, "{}", r.dump());
    let got = up.next_req().await;
    assert_eq!(got.method, "OPTIONS");
    assert_eq!(got.target, "*");
    let ids = r.header_all("x-request-id");
    assert_eq!(ids.len(), 1, "{}", r.raw_head);
    assert_eq!(Some(ids[0]), got.header("x-request-id"));
}

#[tokio::test]
async fn absolute_form_authority_wins_over_a_conflicting_host_header() {
    // RFC 9112 §3.2.2: a proxy forwarding an absolute-form request must generate Host from the
    // request target. Palisade chose the app from `public.example`, so the upstream must not be
    // told `admin.example` (a virtual-host upstream would serve the admin site under the public
    // app's rules). Rejecting the mismatch with 400 would be acceptable too.
    let mut up = Upstream::tcp(reply("public")).await;
    let rest = format!("apps:\n  - name: public\n    hosts: public.example\n    upstream: {}\n", up.url());
    let proxy = Proxy::start(&cfg(&[], &rest));
    let r = raw(proxy.addr, "GET http://public.example/x HTTP/1.1\r\nHost: admin.example\r\n\r\n").await;
    if r.status == 200 {
        let got = up.next_req().await;
        assert_eq!(got.header("host"), Some("public.example"), "{}", got.raw_head);
        assert_eq!(got.header("x-forwarded-host"), Some("public.example"), "{}", got.raw_head);
    } else {
        assert_problem(&r, 400, "http.bad_request");
    }
}

/// A plain request to an app without stages goes upstream from its own header lines (no header
/// map): the same removals and replacements as through the map, names as the client sent them,
/// values without the whitespace around them, and the Content-Length recomputed.
#[tokio::test]
async fn plain_request_lines_go_upstream_filtered() {
    // No stages (detection is on by default).
    plain_request_lines_go_upstream("    detection: off\n").await;
}

/// The same with stages that read the request (detection, rules) and edit no header: the stages
/// judge a map built from the lines, and the lines go upstream.
#[tokio::test]
async fn plain_request_lines_go_upstream_filtered_past_stages() {
    plain_request_lines_go_upstream("    rules:\n      - {id: seen, when: {field: path, prefix: /p}, then: {tag: seen}}\n").await;
}

async fn plain_request_lines_go_upstream(app_extra: &str) {
    let mut up = Upstream::tcp(reply("ok")).await;
    let proxy = Proxy::start(&cfg(&[], &format!("{}{app_extra}", one_app(&up.url()))));
    let mut c = Conn::connect(proxy.addr).await;
    let req = "POST /p HTTP/1.1\r\nhOST: api.test\r\nConnection: Keep-Alive, TE\r\nX-A:  spaced  \r\nKeep-Alive: timeout=5\r\nX-B: b\r\n\
               X-Request-Id: client-id\r\nTE: trailers\r\nUpgrade: websocket\r\nProxy-Authorization: Basic c2VjcmV0\r\nX-Forwarded-For: 6.6.6.6\r\n\
               X-Real-IP: 6.6.6.6\r\nx-forwarded-host: evil.example\r\nX-C:\tc\r\nContent-Length: 05\r\nX-D: d\r\nX-E: e\r\n\r\nhello";
    let r = c.roundtrip(req).await;
    assert_eq!(r.status, 200, "{}", r.dump());
    let got = up.next_req().await;
    for h in ["connection", "keep-alive", "te", "upgrade", "proxy-authorization"] {
        assert!(got.header(h).is_none(), "{h} reached the upstream:\n{}", got.raw_head);
    }
    assert_eq!(got.header_all("host"), ["api.test"], "{}", got.raw_head);
    assert_eq!(got.header("x-a"), Some("spaced"));
    assert_eq!(got.header("x-c"), Some("c"));
    assert!(got.raw_head.contains("\r\nX-B: b\r\n"), "{}", got.raw_head);
    assert!(got.raw_head.contains("\r\nX-D: d\r\nX-E: e\r\n"), "{}", got.raw_head);
    assert_eq!(got.header_all("content-length"), ["5"], "{}", got.raw_head);
    assert_eq!(got.header_all("x-forwarded-for"), ["127.0.0.1"]);
    assert_eq!(got.header_all("x-real-ip"), ["127.0.0.1"]);
    assert_eq!(got.header_all("x-forwarded-host"), ["api.test"]);
    assert_eq!(got.header_all("x-forwarded-proto"), ["http"]);
    let id = r.header("x-request-id").expect("x-request-id on the response").to_string();
    assert_eq!(got.header_all("x-request-id"), [id.as_str()]);
    assert_eq!(got.body, b"hello");

    // On the same connection: a GET's `Content-Length: 0` does not go upstream.
    let r = c.roundtrip("GET /g HTTP/1.1\r\nHost: api.test\r\nContent-Length: 0\r\n\r\n").await;
    assert_eq!(r.status, 200, "{}", r.dump());
    let got = up.next_req().await;
    assert!(got.header("content-length").is_none(), "{}", got.raw_head);
    assert_eq!(got.target, "/g");
}
