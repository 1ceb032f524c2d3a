//! Request bodies: sized, chunked, `Expect: 100-continue`.

use crate::common::*;

#[tokio::test]
async fn content_length_body_arrives_intact() {
    let mut up = Upstream::tcp(reply("ok")).await;
    let proxy = Proxy::start(&cfg(&[], &one_app(&up.url())));
    let body = payload(200 * 1024);
    let mut c = Conn::connect(proxy.addr).await;
    let mut req =
        format!("PUT /upload HTTP/1.1\r\nHost: api.test\r\nContent-Type: application/octet-stream\r\nContent-Length: {}\r\n\r\n", body.len()).into_bytes();
    req.extend_from_slice(&body);
    // Written in uneven pieces.
    for part in req.chunks(7777) {
        c.send(part).await;
    }
    let r = c.response().await;
    assert_eq!(r.status, 200, "{}", r.dump());
    let got = up.next_req().await;
    assert_eq!(got.header("content-length"), Some(body.len().to_string().as_str()));
    assert!(got.body == body, "body differs");
}

#[tokio::test]
async fn chunked_body_goes_upstream_with_a_content_length() {
    let mut up = Upstream::tcp(reply("ok")).await;
    let proxy = Proxy::start(&cfg(&[], &one_app(&up.url())));
    let big = payload(40_000);
    let mut c = Conn::connect(proxy.addr).await;
    c.send("POST /chunks HTTP/1.1\r\nHost: api.test\r\nTransfer-Encoding: chunked\r\n\r\n").await;
    // A chunk extension, a chunk split across writes, and trailers.
    c.send(b"5;name=value\r\nhello\r\n").await;
    let mut second = format!("{:x}\r\n", big.len()).into_bytes();
    second.extend_from_slice(&big);
    second.extend_from_slice(b"\r\n");
    let (a, b) = second.split_at(10_000);
    c.send(a).await;
    c.send(b).await;
    c.send(b"6\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n").await;
    let r = c.response().await;
    assert_eq!(r.status, 200, "{}", r.dump());
    let got = up.next_req().await;
    let mut want = b"hello".to_vec();
    want.extend_from_slice(&big);
    want.extend_from_slice(b" world");
    assert!(got.header("transfer-encoding").is_none(), "{}", got.raw_head);
    assert_eq!(got.header("content-length"), Some(want.len().to_string().as_str()));
    assert!(got.body == want, "body differs");
    assert!(got.header("x-trailer").is_none());

    // An empty chunked body.
    let r = c.roundtrip("POST /empty HTTP/1.1\r\nHost: api.test\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n").await;
    assert_eq!(r.status, 200);
    let got = up.next_req().await;
    assert_eq!(got.header("content-length"), Some("0"));
    assert!(got.body.is_empty());
}

#[tokio::test]
async fn expect_100_continue_is_answered_before_the_body_is_sent() {
    let mut up = Upstream::tcp(reply("created")).await;
    let proxy = Proxy::start(&cfg(&[], &one_app(&up.url())));
    let mut c = Conn::connect(proxy.addr).await;
    c.send("POST /e HTTP/1.1\r\nHost: api.test\r\nContent-Length: 11\r\nExpect: 100-continue\r\n\r\n").await;
    let interim = c.head().await.expect("interim response");
    assert_eq!(interim.raw_head, "HTTP/1.1 100 Continue\r\n\r\n");
    assert!(up.try_req().is_none());
    c.send("hello world").await;
    let r = c.response().await;
    assert_eq!(r.status, 200, "{}", r.dump());
    assert_eq!(r.text(), "created");
    let got = up.next_req().await;
    assert_eq!(got.body, b"hello world");
    assert!(got.header("expect").is_none(), "Expect reached the upstream: {}", got.raw_head);

    // Chunked with Expect, same connection.
    c.send("POST /e2 HTTP/1.1\r\nHost: api.test\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n").await;
    let interim = c.head().await.expect("interim response");
    assert_eq!(interim.status, 100);
    c.send(chunked(&[b"abc", b"def"])).await;
    let r = c.response().await;
    assert_eq!(r.status, 200);
    assert_eq!(up.next_req().await.body, b"abcdef");
}

#[tokio::test]
async fn expect_with_oversized_length_gets_413_without_100_continue() {
    let mut up = Upstream::tcp(reply("ok")).await;
    let rest =
        format!("apps:\n  - name: app\n    hosts: api.test\n    upstream: {}\n    limits:\n      max_body_size: 1KiB\n      inspect_body: 1KiB\n", up.url());
    let proxy = Proxy::start(&cfg(&[], &rest));

    let mut c = Conn::connect(proxy.addr).await;
    c.send("POST /big HTTP/1.1\r\nHost: api.test\r\nContent-Length: 1000000\r\nExpect: 100-continue\r\n\r\n").await;
    let mut r = c.head().await.expect("a final response");
    assert_ne!(r.status, 100, "100 Continue was sent for a body that is refused");
    c.body(&mut r, false).await;
    assert_problem(&r, 413, "http.body_too_large");
    assert_eq!(r.header("connection"), Some("close"));
    assert!(c.closed().await, "connection must close: the body was never read");

    // Refused on routing alone: no 100 Continue either.
    let mut c = Conn::connect(proxy.addr).await;
    c.send("POST /big HTTP/1.1\r\nHost: unknown.test\r\nContent-Length: 10\r\nExpect: 100-continue\r\n\r\n").await;
    let mut r = c.head().await.expect("a final response");
    c.body(&mut r, false).await;
    assert_problem(&r, 404, "route.no_app");
    assert!(c.closed().await);
    assert!(up.try_req().is_none());
    assert_eq!(up.accepts(), 0);
}
