//! Client-side limits: head size, body size, slow clients, connection count.

use std::time::Duration;

use crate::common::*;

fn limited_app(target: &str, limits: &str) -> String {
    format!("apps:\n  - name: app\n    upstream: {target}\n    limits: {limits}\n")
}

#[tokio::test]
async fn oversized_head_gets_431() {
    let mut up = Upstream::tcp(reply("ok")).await;
    let proxy = Proxy::start(&cfg(&["max_header_size: 1KiB", "max_headers: 10"], &one_app(&up.url())));

    // One huge header.
    let mut c = Conn::connect(proxy.addr).await;
    c.send(format!("GET / HTTP/1.1\r\nHost: api.test\r\nX-Big: {}\r\n\r\n", "b".repeat(3000))).await;
    let r = c.response().await;
    assert_problem(&r, 431, "http.headers_too_large");
    assert!(!r.text().contains("bbbb"));
    assert!(c.closed().await);

    // A head that never ends but keeps growing.
    let mut c = Conn::connect(proxy.addr).await;
    c.send(format!("GET / HTTP/1.1\r\nHost: api.test\r\nX-Big: {}", "b".repeat(1500))).await;
    let r = c.response().await;
    assert_problem(&r, 431, "http.headers_too_large");

    // Too many header fields.
    let many: String = (0..20).map(|i| format!("X-H{i}: v\r\n")).collect();
    let r = raw(proxy.addr, format!("GET / HTTP/1.1\r\nHost: api.test\r\n{many}\r\n")).await;
    assert_problem(&r, 431, "http.headers_too_large");

    assert!(up.try_req().is_none());
    assert_eq!(get(proxy.addr, "api.test", "/").await.status, 200, "still serving");
}

#[tokio::test]
async fn declared_body_over_limit_gets_413() {
    let mut up = Upstream::tcp(reply("ok")).await;
    let proxy = Proxy::start(&cfg(&[], &limited_app(&up.url(), "{max_body_size: 1KiB, inspect_body: 1KiB}")));
    let mut c = Conn::connect(proxy.addr).await;
    c.send("POST / HTTP/1.1\r\nHost: api.test\r\nContent-Length: 2048\r\n\r\n").await;
    let r = c.response().await;
    assert_problem(&r, 413, "http.body_too_large");
    assert_eq!(r.header("connection"), Some("close"));
    assert!(c.closed().await);
    // At the limit exactly: accepted.
    let mut req = b"POST / HTTP/1.1\r\nHost: api.test\r\nContent-Length: 1024\r\n\r\n".to_vec();
    req.extend_from_slice(&payload(1024));
    let r = raw(proxy.addr, &req).await;
    assert_eq!(r.status, 200);
    assert_eq!(up.next_req().await.body.len(), 1024);
    assert!(up.try_req().is_none());
}

#[tokio::test]
async fn chunked_body_over_limit_gets_413() {
    let mut up = Upstream::tcp(reply("ok")).await;
    let proxy = Proxy::start(&cfg(&[], &limited_app(&up.url(), "{max_body_size: 1KiB, inspect_body: 1KiB}")));
    let part = vec![b'x'; 1000];
    let mut req = b"POST / HTTP/1.1\r\nHost: api.test\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    req.extend_from_slice(&chunked(&[&part, &part, &part]));
    let mut c = Conn::connect(proxy.addr).await;
    c.send(&req).await;
    let r = c.response().await;
    assert_problem(&r, 413, "http.body_too_large");
    assert!(!r.text().contains("xxxx"));
    assert!(c.closed().await);
    assert!(up.try_req().is_none());
    assert_eq!(up.accepts(), 0);
}

#[tokio::test]
async fn oversize_stream_passes_bodies_beyond_inspect_body_up_to_max_body_size() {
    let mut up = Upstream::tcp(reply("ok")).await;
    let proxy = Proxy::start(&cfg(&[], &limited_app(&up.url(), "{max_body_size: 64KiB, inspect_body: 1KiB, oversize: stream}")));
    let body = payload(20_000);

    let mut req = format!("POST /cl HTTP/1.1\r\nHost: api.test\r\nContent-Length: {}\r\n\r\n", body.len()).into_bytes();
    req.extend_from_slice(&body);
    let r = raw(proxy.addr, &req).await;
    assert_eq!(r.status, 200, "{}", r.dump());
    let got = up.next_req().await;
    assert_eq!(got.header("content-length"), Some("20000"));
    assert!(got.body == body, "streamed body differs");

    let mut req = b"POST /chunked HTTP/1.1\r\nHost: api.test\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    let parts: Vec<&[u8]> = body.chunks(3000).collect();
    req.extend_from_slice(&chunked(&parts));
    let r = raw(proxy.addr, &req).await;
    assert_eq!(r.status, 200, "{}", r.dump());
    let got = up.next_req().await;
    assert!(got.body == body, "streamed chunked body differs");

    // Beyond max_body_size with a declared length: 413 before anything is read.
    let r = raw(proxy.addr, "POST /cl HTTP/1.1\r\nHost: api.test\r\nContent-Length: 70000\r\n\r\n").await;
    assert_problem(&r, 413, "http.body_too_large");
    assert!(up.try_req().is_none());
}

#[tokio::test]
async fn oversize_stream_chunked_beyond_max_body_size_gets_413() {
    let mut up = Upstream::tcp(reply("ok")).await;
    let proxy = Proxy::start(&cfg(&[], &limited_app(&up.url(), "{max_body_size: 8KiB, inspect_body: 1KiB, oversize: stream}")));
    let part = vec![b'y'; 3000];
    let mut req = b"POST /chunked HTTP/1.1\r\nHost: api.test\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    req.extend_from_slice(&chunked(&[&part, &part, &part, &part]));
    let mut c = Conn::connect(proxy.addr).await;
    c.send(&req).await;
    let r = c.response().await;
    assert_problem(&r, 413, "http.body_too_large");
    // The upstream saw at most a truncated body, never a complete request.
    assert!(up.try_req().is_none());
}

#[tokio::test]
async fn slow_head_gets_408() {
    let mut up = Upstream::tcp(reply("ok")).await;
    let proxy = Proxy::start(&cfg(&["header_read_timeout: 300ms"], &one_app(&up.url())));

    // A partial head, then nothing.
    let mut c = Conn::connect(proxy.addr).await;
    c.send("GET / HTTP/1.1\r\nHost: api.test\r\n").await;
    let r = c.response().await;
    assert_problem(&r, 408, "http.header_timeout");
    assert_eq!(r.header("connection"), Some("close"));
    assert!(c.closed().await);

    // Slowloris: a byte every 30ms never completes the head; the deadline is for the whole head.
    let c = Conn::connect(proxy.addr).await;
    let (mut rd, mut wr) = c.s.into_split();
    let trickle = tokio::spawn(async move {
        use tokio::io::AsyncWriteExt;
        if wr.write_all(b"GET / HTTP/1.1\r\nHost: api.test\r\nX-Slow: ").await.is_err() {
            return;
        }
        for _ in 0..300 {
            tokio::time::sleep(Duration::from_millis(30)).await;
            if wr.write_all(b"a").await.is_err() {
                return;
            }
        }
    });
    let mut got = Vec::new();
    let _ = w!(tokio::io::AsyncReadExt::read_to_end(&mut rd, &mut got));
    trickle.abort();
    let text = String::from_utf8_lossy(&got);
    assert!(text.starts_with("HTTP/1.1 408 "), "slowloris must get a 408: {text}");
    assert!(text.contains("http.header_timeout"));

    // An idle connection that never sends a byte is closed silently.
    let mut c = Conn::connect(proxy.addr).await;
    assert!(c.closed().await);

    assert!(up.try_req().is_none());
    assert_eq!(get(proxy.addr, "api.test", "/").await.status, 200);
}

#[tokio::test]
async fn slow_body_gets_408() {
    let mut up = Upstream::tcp(reply("ok")).await;
    let proxy = Proxy::start(&cfg(&["body_read_timeout: 300ms"], &one_app(&up.url())));
    let mut c = Conn::connect(proxy.addr).await;
    c.send("POST / HTTP/1.1\r\nHost: api.test\r\nContent-Length: 100\r\n\r\n0123456789").await;
    let r = c.response().await;
    assert_problem(&r, 408, "http.body_timeout");
    assert!(c.closed().await);

    // Chunked, stalled mid-chunk.
    let mut c = Conn::connect(proxy.addr).await;
    c.send("POST / HTTP/1.1\r\nHost: api.test\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n0123").await;
    let r = c.response().await;
    assert_problem(&r, 408, "http.body_timeout");
    assert!(up.try_req().is_none());
    assert_eq!(up.accepts(), 0);
}

#[tokio::test]
async fn max_connections_closes_the_extra_connection() {
    let up = Upstream::tcp(reply("ok")).await;
    let proxy = Proxy::start(&cfg(&["max_connections: 2"], &one_app(&up.url())));
    let req = "GET / HTTP/1.1\r\nHost: api.test\r\n\r\n";
    let mut c1 = Conn::connect(proxy.addr).await;
    assert_eq!(c1.roundtrip(req).await.status, 200);
    let mut c2 = Conn::connect(proxy.addr).await;
    assert_eq!(c2.roundtrip(req).await.status, 200);

    let mut c3 = Conn::connect(proxy.addr).await;
    c3.send_lossy(req).await;
    assert!(c3.closed().await, "a third concurrent connection is closed without a response");

    // The first two still work.
    assert_eq!(c1.roundtrip(req).await.status, 200);
    assert_eq!(c2.roundtrip(req).await.status, 200);

    // Once one closes, a new connection is served.
    drop(c1);
    eventually("connection count drops", || proxy.running().connections() < 2).await;
    let mut c4 = Conn::connect(proxy.addr).await;
    assert_eq!(c4.roundtrip(req).await.status, 200);
}
