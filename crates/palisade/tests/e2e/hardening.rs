//! Requests that are malformed or ask for what a reverse proxy does not do are answered at once
//! by Palisade, never forwarded and never left to a timeout: an invalid `Host`, a chunk size
//! past the limit, an HTTP/2 `CONNECT`.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpStream;

use crate::common::*;

#[tokio::test]
async fn an_invalid_host_is_a_400_and_a_valid_one_is_served() {
    let mut up = Upstream::tcp(reply("ok")).await;
    let proxy = Proxy::start(&cfg(&[], &one_app(&up.url())));
    for host in ["local host", "a/b", "user@api.test", "api.test:80:80", "api.test:http", "[::1", "a{b}", "caf\u{e9}.test"] {
        let r = raw(proxy.addr, format!("GET / HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n")).await;
        assert_problem(&r, 400, "http.bad_request");
    }
    // An absolute-form target's authority too (no userinfo).
    for target in ["http://user@api.test/", "http://api.test:80:80/"] {
        let r = raw(proxy.addr, format!("GET {target} HTTP/1.1\r\nHost: api.test\r\nConnection: close\r\n\r\n")).await;
        assert_problem(&r, 400, "http.bad_request");
    }
    for host in ["api.test", "api.test:8080", "127.0.0.1:80", "[::1]:8443", "my_service.internal"] {
        let r = raw(proxy.addr, format!("GET / HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n")).await;
        assert_eq!(r.status, 200, "{host}: {}", r.dump());
        assert_eq!(up.next_req().await.header("host"), Some(host));
    }
    assert!(up.try_req().is_none(), "an invalid Host reached the upstream");
}

/// A chunk size larger than the app allows is refused when its size line arrives (413), one
/// too large to parse is a 400, and neither waits for the body timeout (the default 30 s,
/// longer than every wait of the suite).
#[tokio::test]
async fn a_chunk_size_past_the_limit_is_refused_at_once() {
    let mut up = Upstream::tcp(reply("ok")).await;
    let apps = format!(
        "apps:\n  - name: reject\n    hosts: reject.test\n    upstream: {0}\n    limits: {{max_body_size: 64KiB, inspect_body: 64KiB}}\n  - name: stream\n    hosts: stream.test\n    upstream: {0}\n    limits: {{max_body_size: 64KiB, inspect_body: 1KiB, oversize: stream}}\n",
        up.url()
    );
    let proxy = Proxy::start(&cfg(&[], &apps));
    for host in ["reject.test", "stream.test"] {
        for (first, size, status) in
            [("", "ffffffffffffffff", 413), ("", "10001", 413), ("a\r\n0123456789\r\n", "fffffffffffffff0", 413), ("", "1ffffffffffffffff", 400)]
        {
            let mut c = Conn::connect(proxy.addr).await;
            c.send(format!("POST /up HTTP/1.1\r\nHost: {host}\r\nTransfer-Encoding: chunked\r\n\r\n{first}{size}\r\n")).await;
            let r = c.response().await;
            let code = if status == 413 { "http.body_too_large" } else { "http.bad_request" };
            assert_problem(&r, status, code);
            assert!(c.closed().await, "{host} {size}: the connection is closed after an unread body");
        }
        // A body within the limit still goes through.
        let r = raw(
            proxy.addr,
            format!("POST /up HTTP/1.1\r\nHost: {host}\r\nTransfer-Encoding: chunked\r\n\r\n{}", String::from_utf8(chunked(&[b"hello", b" world"])).unwrap()),
        )
        .await;
        assert_eq!(r.status, 200, "{}", r.dump());
        assert_eq!(up.next_req().await.body, b"hello world");
    }
    assert!(up.try_req().is_none());
}

/// HTTP/2 `CONNECT` asks for a tunnel (RFC 9113 §8.5): a 501 at once, nothing upstream; the
/// connection keeps serving other streams.
#[tokio::test]
async fn h2_connect_is_answered_501_at_once() {
    let mut up = Upstream::tcp(reply("ok")).await;
    let proxy = Proxy::start(&cfg(&[], &one_app(&up.url())));
    let tcp = w!(TcpStream::connect(proxy.addr)).unwrap();
    let (mut sender, conn) = w!(hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tcp))).expect("h2 handshake");
    tokio::spawn(async move {
        let _ = conn.await;
    });
    let req = http::Request::connect("api.test:443").body(Full::new(Bytes::new())).unwrap();
    w!(sender.ready()).unwrap();
    let resp = w!(sender.send_request(req)).expect("h2 CONNECT");
    let (parts, body) = resp.into_parts();
    let body = w!(body.collect()).unwrap().to_bytes();
    assert_eq!(parts.status, 501, "{}", String::from_utf8_lossy(&body));
    let v: serde_json::Value = serde_json::from_slice(&body).expect("problem JSON");
    assert_eq!(v["code"], "http.not_implemented");

    let req = http::Request::get("http://api.test/after").body(Full::new(Bytes::new())).unwrap();
    w!(sender.ready()).unwrap();
    let resp = w!(sender.send_request(req)).expect("h2 GET");
    assert_eq!(resp.status(), 200);
    assert_eq!(up.next_req().await.path(), "/after");
    assert!(up.try_req().is_none(), "CONNECT reached the upstream");
}

/// An HTTP/2 `host` header and `:authority` are held to the same grammar as an HTTP/1 Host.
#[tokio::test]
async fn h2_invalid_host_header_is_a_400() {
    let mut up = Upstream::tcp(reply("ok")).await;
    let proxy = Proxy::start(&cfg(&[], &one_app(&up.url())));
    let tcp = w!(TcpStream::connect(proxy.addr)).unwrap();
    let (mut sender, conn) = w!(hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tcp))).expect("h2 handshake");
    tokio::spawn(async move {
        let _ = conn.await;
    });
    let req = http::Request::get("http://api.test/x").header("host", "local host").body(Full::new(Bytes::new())).unwrap();
    w!(sender.ready()).unwrap();
    let resp = w!(sender.send_request(req)).expect("h2 request");
    assert_eq!(resp.status(), 400);
    // Nor may `:authority` carry userinfo (RFC 9113 §8.3.1).
    let req = http::Request::get("http://user@api.test/x").body(Full::new(Bytes::new())).unwrap();
    w!(sender.ready()).unwrap();
    let resp = w!(sender.send_request(req)).expect("h2 request");
    assert_eq!(resp.status(), 400);
    let req = http::Request::get("http://api.test/ok").body(Full::new(Bytes::new())).unwrap();
    w!(sender.ready()).unwrap();
    assert_eq!(w!(sender.send_request(req)).expect("h2 request").status(), 200);
    assert_eq!(up.next_req().await.path(), "/ok");
    assert!(up.try_req().is_none());
}
