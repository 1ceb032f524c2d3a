//! Responses coming back: streamed, sized, and the bodiless kinds.

use std::sync::Arc;

use tokio::sync::Notify;

use crate::common::*;

#[tokio::test]
async fn chunked_response_is_streamed_piece_by_piece() {
    // The upstream sends a piece, then waits until the test has seen that piece arrive at the
    // client before sending the next: the proxy must forward each piece without buffering.
    let (g1, g2) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
    let (h1, h2) = (g1.clone(), g2.clone());
    let mut up = Upstream::tcp(handler(move |_| {
        vec![
            Step::Write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n7\r\npiece-1\r\n".to_vec()),
            Step::Wait(h1.clone()),
            Step::Sleep(std::time::Duration::from_millis(20)),
            Step::Write(b"8\r\n-piece-2\r\n".to_vec()),
            Step::Wait(h2.clone()),
            Step::Write(b"8\r\n-piece-3\r\n0\r\n\r\n".to_vec()),
        ]
    }))
    .await;
    let proxy = Proxy::start(&cfg(&[], &one_app(&up.url())));
    let mut c = Conn::connect(proxy.addr).await;
    c.send("GET /stream HTTP/1.1\r\nHost: api.test\r\n\r\n").await;
    let mut r = c.head().await.expect("response head");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("transfer-encoding"), Some("chunked"));
    assert_eq!(r.header("content-type"), Some("text/event-stream"));
    assert!(c.read_until(b"piece-1").await, "first piece never arrived");
    assert!(find(c.pending(), b"piece-2").is_none());
    g1.notify_one();
    assert!(c.read_until(b"-piece-2").await, "second piece never arrived");
    assert!(find(c.pending(), b"piece-3").is_none());
    g2.notify_one();
    c.body(&mut r, false).await;
    assert!(r.complete);
    assert_eq!(r.text(), "piece-1-piece-2-piece-3");
    assert_eq!(up.next_req().await.path(), "/stream");

    // The connection is still usable afterwards.
    let r = c.roundtrip("GET /stream HTTP/1.1\r\nHost: api.test\r\n\r\n");
    // (the upstream waits on the gates again: release them up front)
    g1.notify_one();
    g2.notify_one();
    let r = r.await;
    assert_eq!(r.text(), "piece-1-piece-2-piece-3");
}

#[tokio::test]
async fn content_length_and_large_chunked_responses_arrive_intact() {
    let big = payload(300 * 1024);
    let big2 = big.clone();
    let up = Upstream::tcp(handler(move |req| match req.path() {
        "/cl" => vec![Step::Write(response(200, &[("Content-Type", "application/octet-stream")], &big2))],
        _ => {
            // The same bytes in uneven chunks, some written in several pieces.
            let mut v = vec![Step::Write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec())];
            for (i, part) in big2.chunks(7919).enumerate() {
                let mut c = format!("{:x}\r\n", part.len()).into_bytes();
                c.extend_from_slice(part);
                c.extend_from_slice(b"\r\n");
                if i % 10 == 0 {
                    let (a, b) = c.split_at(c.len() / 2);
                    v.push(Step::Write(a.to_vec()));
                    v.push(Step::Sleep(std::time::Duration::from_millis(1)));
                    v.push(Step::Write(b.to_vec()));
                } else {
                    v.push(Step::Write(c));
                }
            }
            v.push(Step::Write(b"0\r\n\r\n".to_vec()));
            v
        }
    }))
    .await;
    let proxy = Proxy::start(&cfg(&[], &one_app(&up.url())));
    let mut c = Conn::connect(proxy.addr).await;
    let r = c.roundtrip("GET /cl HTTP/1.1\r\nHost: api.test\r\n\r\n").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-length"), Some(big.len().to_string().as_str()));
    assert!(r.header("transfer-encoding").is_none());
    assert_eq!(r.header("content-type"), Some("application/octet-stream"));
    assert!(r.body == big, "content-length body differs");

    let r = c.roundtrip("GET /chunked HTTP/1.1\r\nHost: api.test\r\n\r\n").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("transfer-encoding"), Some("chunked"));
    assert!(r.body == big, "chunked body differs");
    assert_eq!(up.accepts(), 1);
}

#[tokio::test]
async fn head_response_has_length_but_no_body() {
    let mut up = Upstream::tcp(handler(|req| {
        if req.method == "HEAD" {
            vec![Step::Write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1234\r\nETag: \"v1\"\r\n\r\n".to_vec())]
        } else {
            vec![Step::Write(ok("after"))]
        }
    }))
    .await;
    let proxy = Proxy::start(&cfg(&[], &one_app(&up.url())));
    let mut c = Conn::connect(proxy.addr).await;
    let r = c.roundtrip("HEAD /doc HTTP/1.1\r\nHost: api.test\r\n\r\n").await;
    assert_eq!(r.status, 200, "{}", r.dump());
    assert_eq!(r.header("content-length"), Some("1234"));
    assert_eq!(r.header("etag"), Some("\"v1\""));
    assert!(r.header("transfer-encoding").is_none());
    assert_eq!(up.next_req().await.method, "HEAD");
    // No stray body bytes: the next response on the connection parses cleanly.
    let r = c.roundtrip("GET /doc HTTP/1.1\r\nHost: api.test\r\n\r\n").await;
    assert_eq!(r.text(), "after");
}

#[tokio::test]
async fn no_content_and_not_modified_have_no_body() {
    let up = Upstream::tcp(handler(|req| match req.path() {
        "/204" => vec![Step::Write(b"HTTP/1.1 204 No Content\r\nX-Kind: none\r\n\r\n".to_vec())],
        "/304" => vec![Step::Write(b"HTTP/1.1 304 Not Modified\r\nETag: \"abc\"\r\nCache-Control: max-age=60\r\n\r\n".to_vec())],
        _ => vec![Step::Write(ok("plain"))],
    }))
    .await;
    let proxy = Proxy::start(&cfg(&[], &one_app(&up.url())));
    let mut c = Conn::connect(proxy.addr).await;
    let r = c.roundtrip("DELETE /204 HTTP/1.1\r\nHost: api.test\r\n\r\n").await;
    assert_eq!(r.status, 204, "{}", r.dump());
    assert_eq!(r.header("x-kind"), Some("none"));
    assert!(r.header("content-length").is_none(), "{}", r.raw_head);
    assert!(r.header("transfer-encoding").is_none(), "{}", r.raw_head);
    let r = c.roundtrip("GET /304 HTTP/1.1\r\nHost: api.test\r\nIf-None-Match: \"abc\"\r\n\r\n").await;
    assert_eq!(r.status, 304, "{}", r.dump());
    assert_eq!(r.header("etag"), Some("\"abc\""));
    assert!(r.header("transfer-encoding").is_none(), "{}", r.raw_head);
    // Nothing stray was written after the bodiless responses.
    let r = c.roundtrip("GET /x HTTP/1.1\r\nHost: api.test\r\n\r\n").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.text(), "plain");
    assert_eq!(up.accepts(), 1);
}

#[tokio::test]
async fn http10_client_gets_a_close_delimited_body_from_a_chunked_upstream() {
    let up = Upstream::tcp(handler(|_| vec![Step::Write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n4\r\ndefg\r\n0\r\n\r\n".to_vec())]))
        .await;
    let proxy = Proxy::start(&cfg(&[], &one_app(&up.url())));
    let mut c = Conn::connect(proxy.addr).await;
    c.send("GET / HTTP/1.0\r\nHost: api.test\r\nConnection: keep-alive\r\n\r\n").await;
    let r = c.response().await;
    assert_eq!(r.status, 200);
    assert!(r.header("transfer-encoding").is_none(), "HTTP/1.0 does not know chunked: {}", r.raw_head);
    assert_eq!(r.header("connection"), Some("close"));
    assert_eq!(r.text(), "abcdefg");
}

/// The JSON an upstream answers on `/items`: 100 KB of it with `kind=big` (more than the
/// judged app's `inspect_response`), a string item (against the spec) with `kind=bad`, two
/// items otherwise.
fn items_json(target: &str) -> String {
    if target.contains("kind=big") {
        format!("{{\"items\":[{}1]}}", "1,".repeat(50_000))
    } else if target.contains("kind=bad") {
        r#"{"items":["x"]}"#.to_string()
    } else {
        r#"{"items":[1,2]}"#.to_string()
    }
}

/// An HTTP/1.1 upstream answering `items_json` chunked (16 KiB chunks), ended by trailer fields:
/// `X-Checksum` (forwarded), a line that is no field, and framing and hop-by-hop fields, which
/// mean nothing in a trailer section.
async fn chunked_upstream_with_trailers() -> Upstream {
    Upstream::tcp(handler(|req| {
        let body = items_json(&req.target);
        let mut out = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTrailer: X-Checksum\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
        for part in body.as_bytes().chunks(16 * 1024) {
            out.extend_from_slice(format!("{:x}\r\n", part.len()).as_bytes());
            out.extend_from_slice(part);
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(
            format!("0\r\nX-Checksum: len={}\r\nnot a field\r\nContent-Length: 9\r\nConnection: close\r\nTransfer-Encoding: gzip\r\n\r\n", body.len())
                .as_bytes(),
        );
        vec![Step::Write(out)]
    }))
    .await
}

/// An upstream's chunked trailers reach the client whether the response streams through or its
/// start is buffered for the response stages (`openapi.response`, up to `inspect_response`,
/// within it or beyond): to HTTP/1.1 clients that sent `TE: trailers` as a chunked trailer
/// section, to HTTP/2 clients as HTTP/2 trailers; other HTTP/1.1 clients get the body alone.
#[tokio::test]
async fn chunked_trailers_of_an_http1_upstream_pass_whether_or_not_the_response_is_judged() {
    use http_body_util::{BodyExt, Full};
    use hyper_util::rt::{TokioExecutor, TokioIo};

    let up = chunked_upstream_with_trailers().await;
    let dir = TempDir::new();
    dir.write(
        "api.yaml",
        "openapi: 3.0.3\ninfo: {title: t, version: '1'}\npaths:\n  /items:\n    get:\n      parameters:\n        - {name: kind, in: query, schema: {type: string}}\n      responses:\n        '200':\n          description: ok\n          content:\n            application/json:\n              schema:\n                type: object\n                properties:\n                  items: {type: array, items: {type: integer}}\n",
    );
    let url = up.url();
    let yaml = format!(
        "workers: 1\nlisten:\n  - addr: 127.0.0.1:0\n    http2: true\nserver:\n  shutdown_timeout: 500ms\napps:\n  \
         - name: judged\n    hosts: [judged.test]\n    upstream: {url}\n    limits: {{inspect_response: 4KiB}}\n    openapi:\n      spec: api.yaml\n      response: block\n  \
         - name: plain\n    hosts: [plain.test]\n    upstream: {url}\n"
    );
    let proxy = Proxy::start_in(&yaml, dir);

    let tcp = tokio::net::TcpStream::connect(proxy.addr).await.unwrap();
    let (mut send, conn) = hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tcp)).await.unwrap();
    tokio::spawn(conn);

    for host in ["judged.test", "plain.test"] {
        for target in ["/items", "/items?kind=big"] {
            let body = items_json(target);
            let checksum = format!("len={}", body.len());
            let what = format!("{host}{target}");

            // HTTP/1.1 with `TE: trailers`: the body chunked, then the trailer section.
            let r = raw(proxy.addr, format!("GET {target} HTTP/1.1\r\nHost: {host}\r\nTE: trailers\r\nConnection: TE, close\r\n\r\n")).await;
            assert_eq!(r.status, 200, "{what}: {}", r.dump());
            assert_eq!(r.header("transfer-encoding"), Some("chunked"), "{what}: {}", r.dump());
            assert_eq!(r.text(), body, "{what}");
            assert_eq!(r.trailers, [("x-checksum".to_string(), checksum.clone())], "{what}");

            // HTTP/1.1 without it: the same body, no trailer section.
            let r = get(proxy.addr, host, target).await;
            assert_eq!(r.status, 200, "{what}: {}", r.dump());
            assert_eq!(r.text(), body, "{what}");
            assert!(r.trailers.is_empty(), "{what}: {:?}", r.trailers);

            // HTTP/2: the body, then a trailers frame.
            let req = http::Request::get(format!("http://{host}{target}")).body(Full::new(bytes::Bytes::new())).unwrap();
            let resp = within("response", send.send_request(req)).await.unwrap();
            assert_eq!(resp.status(), 200, "{what}");
            let collected = within("body", resp.into_body().collect()).await.unwrap();
            let trailers = collected.trailers().cloned().unwrap_or_else(|| panic!("{what}: no trailers over HTTP/2"));
            assert_eq!(trailers.len(), 1, "{what}: {trailers:?}");
            assert_eq!(trailers["x-checksum"], checksum.as_str(), "{what}");
            assert_eq!(collected.to_bytes(), body.as_bytes(), "{what}");
        }
    }

    // Each body was read to its end, trailers included: every request of an app went on the
    // same upstream connection (each app has its own pool).
    let mut up = up;
    let conns: Vec<(usize, Option<String>)> = up.drain().iter().map(|r| (r.conn, r.header("host").map(str::to_string))).collect();
    assert_eq!(conns.len(), 12);
    for (conn, host) in conns {
        assert_eq!(conn, usize::from(host.as_deref() == Some("plain.test")), "{host:?}");
    }

    // The judged app does judge: an answer against the spec is stopped.
    let r = raw(proxy.addr, "GET /items?kind=bad HTTP/1.1\r\nHost: judged.test\r\nTE: trailers\r\nConnection: close\r\n\r\n").await;
    assert_problem(&r, 502, "openapi.response_body_invalid");
    assert!(r.trailers.is_empty(), "{:?}", r.trailers);
}
