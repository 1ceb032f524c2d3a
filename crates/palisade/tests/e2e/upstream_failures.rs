//! Upstreams that fail: refused, slow, stalling, closing, resetting, answering garbage.

use std::time::Duration;

use crate::common::*;

fn app_with(target: &str, upstream_extra: &str) -> String {
    format!("apps:\n  - name: app\n    upstream:\n      targets: {target}\n      {upstream_extra}\n")
}

#[tokio::test]
async fn connection_refused_gives_502_unavailable() {
    let proxy = Proxy::start(&cfg(&[], &one_app(&format!("http://127.0.0.1:{}", closed_port()))));
    let mut c = Conn::connect(proxy.addr).await;
    for _ in 0..3 {
        let r = c.roundtrip("GET / HTTP/1.1\r\nHost: api.test\r\n\r\n").await;
        assert_problem(&r, 502, "upstream.unavailable");
    }
}

#[tokio::test]
async fn slow_response_head_gives_504() {
    let mut up = Upstream::tcp(handler(|req| if req.path() == "/slow" { vec![Step::Hang] } else { vec![Step::Write(ok("fast"))] })).await;
    let proxy = Proxy::start(&cfg(&[], &app_with(&up.url(), "read_timeout: 300ms")));
    let mut c = Conn::connect(proxy.addr).await;
    let r = c.roundtrip("GET /slow HTTP/1.1\r\nHost: api.test\r\n\r\n").await;
    assert_problem(&r, 504, "upstream.timeout");
    assert_eq!(up.next_req().await.path(), "/slow");
    // The stuck upstream connection is not reused; the client connection is.
    let r = c.roundtrip("GET /fast HTTP/1.1\r\nHost: api.test\r\n\r\n").await;
    assert_eq!(r.text(), "fast");
    assert_eq!(up.accepts(), 2);
}

#[tokio::test]
async fn upstream_stalling_mid_body_truncates_the_response() {
    let up = Upstream::tcp(handler(|req| {
        let head: &[u8] = if req.path() == "/cl" {
            b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n"
        } else {
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n64\r\n"
        };
        let mut first = head.to_vec();
        first.extend_from_slice(&[b'z'; 100]);
        if req.path() != "/cl" {
            first.extend_from_slice(b"\r\n");
        }
        vec![Step::Write(first), Step::Hang]
    }))
    .await;
    let proxy = Proxy::start(&cfg(&[], &app_with(&up.url(), "read_timeout: 300ms")));
    for path in ["/cl", "/chunked"] {
        let mut c = Conn::connect(proxy.addr).await;
        c.send(format!("GET {path} HTTP/1.1\r\nHost: api.test\r\n\r\n")).await;
        let mut r = c.head().await.expect("the head was already forwarded");
        assert_eq!(r.status, 200);
        c.body(&mut r, false).await;
        assert!(!r.complete, "{path}: a stalled body must not look complete");
        assert_eq!(r.body.len(), 100, "{path}");
        assert!(c.closed().await, "{path}: the client connection is cut");
    }
}

#[tokio::test]
async fn upstream_closing_mid_response_truncates_the_response() {
    let up = Upstream::tcp(handler(|req| {
        let mut v = match req.path() {
            "/cl" => b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n".to_vec(),
            _ => b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n64\r\n".to_vec(),
        };
        v.extend_from_slice(&[b'z'; 100]);
        if req.path() != "/cl" {
            v.extend_from_slice(b"\r\n");
        }
        vec![Step::Write(v), Step::Close]
    }))
    .await;
    let proxy = Proxy::start(&cfg(&[], &one_app(&up.url())));
    for path in ["/cl", "/chunked"] {
        let mut c = Conn::connect(proxy.addr).await;
        c.send(format!("GET {path} HTTP/1.1\r\nHost: api.test\r\n\r\n")).await;
        let mut r = c.head().await.expect("the head was already forwarded");
        assert_eq!(r.status, 200);
        c.body(&mut r, false).await;
        assert!(!r.complete, "{path}: a truncated body must not look complete");
        assert_eq!(r.body.len(), 100, "{path}");
        assert!(c.closed().await);
    }
    // Still serving.
    let mut c = Conn::connect(proxy.addr).await;
    c.send("GET /cl HTTP/1.1\r\nHost: api.test\r\n\r\n").await;
    assert_eq!(c.head().await.map(|r| r.status), Some(200));
}

#[tokio::test]
async fn upstream_closing_right_after_the_head_closes_the_client_connection() {
    // The head promises a body, then the upstream closes before sending any of it.
    let up = Upstream::tcp(handler(|_| vec![Step::Write(b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n".to_vec()), Step::Close])).await;
    let proxy = Proxy::start(&cfg(&[], &one_app(&up.url())));
    let mut c = Conn::connect(proxy.addr).await;
    c.send("GET / HTTP/1.1\r\nHost: api.test\r\n\r\n").await;
    let got = c.rest().await;
    // Nothing reached the client yet, so it gets an honest 502 (not a hang, not a bare close,
    // not a 200 whose body never comes), and the connection is closed.
    let text = String::from_utf8_lossy(&got);
    assert!(text.starts_with("HTTP/1.1 502 "), "{text}");
    assert!(text.contains("application/problem+json") && text.contains("upstream.bad_response"), "{text}");
    assert!(text.contains("connection: close"), "{text}");
}

#[tokio::test]
async fn upstream_reset_gives_502_and_is_not_replayed() {
    let mut up = Upstream::tcp(handler(|_| vec![Step::Reset])).await;
    let proxy = Proxy::start(&cfg(&[], &one_app(&up.url())));
    let r = raw(proxy.addr, "POST /pay HTTP/1.1\r\nHost: api.test\r\nContent-Length: 5\r\n\r\nmoney").await;
    assert_eq!(r.status, 502, "{}", r.dump());
    let code = r.json()["code"].as_str().unwrap().to_string();
    assert!(code == "upstream.bad_response" || code == "upstream.unavailable", "{code}");
    assert_problem(&r, 502, &code);
    // Give a possible (wrong) replay a moment to show up, then count.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let reqs = up.drain();
    assert_eq!(reqs.len(), 1, "a POST the upstream received must not be sent again");
}

#[tokio::test]
async fn upstream_garbage_gives_502() {
    let up = Upstream::tcp(handler(|req| match req.path() {
        "/words" => vec![Step::Write(b"this is not http at all\r\n\r\n".to_vec())],
        "/status" => vec![Step::Write(b"HTTP/1.1 2000 Huge\r\nContent-Length: 0\r\n\r\n".to_vec())],
        "/header" => vec![Step::Write(b"HTTP/1.1 200 OK\r\nBad Header\r\nContent-Length: 0\r\n\r\n".to_vec())],
        "/length" => vec![Step::Write(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!".to_vec())],
        _ => vec![Step::Write(ok("fine"))],
    }))
    .await;
    let proxy = Proxy::start(&cfg(&[], &one_app(&up.url())));
    for path in ["/words", "/status", "/header", "/length"] {
        let r = get(proxy.addr, "api.test", path).await;
        assert_problem(&r, 502, "upstream.bad_response");
    }
    assert_eq!(get(proxy.addr, "api.test", "/").await.text(), "fine");
}

/// `read_timeout` runs between steps of the exchange, not over it: an upload that streams
/// steadily for three times the timeout goes through (chunked, and with a Content-Length too
/// large to be gathered whole first); the wait for the response head starts when the request
/// has been sent, so an upstream that then says nothing still gets a 504.
#[tokio::test]
async fn a_slow_but_flowing_streamed_upload_is_not_cut_by_read_timeout() {
    let mut up = Upstream::tcp(handler(|req| if req.path() == "/stall" { vec![Step::Hang] } else { vec![Step::Write(ok(&req.body.len().to_string()))] })).await;
    let apps = format!(
        "apps:\n  - name: app\n    limits: {{max_body_size: 1MiB, inspect_body: 1KiB, oversize: stream}}\n    upstream:\n      targets: {}\n      read_timeout: 1s\n",
        up.url()
    );
    let proxy = Proxy::start(&cfg(&[], &apps));
    // (path, chunked, parts, part size): a part every 100 ms, 3 s (or 1.5 s) against a 1 s
    // read_timeout. 300 KiB is past the size up to which a Content-Length body is read whole.
    for (path, chunked, parts, size) in [("/upload", true, 30, 1024), ("/upload", false, 30, 10 * 1024), ("/stall", true, 15, 1024)] {
        let part = vec![b'u'; size];
        let total = parts * size;
        let mut c = Conn::connect(proxy.addr).await;
        let framing = if chunked { "Transfer-Encoding: chunked".to_string() } else { format!("Content-Length: {total}") };
        c.send(format!("POST {path} HTTP/1.1\r\nHost: api.test\r\n{framing}\r\n\r\n")).await;
        for _ in 0..parts {
            tokio::time::sleep(Duration::from_millis(100)).await;
            if chunked {
                c.send(format!("{size:x}\r\n")).await;
                c.send(&part).await;
                c.send("\r\n").await;
            } else {
                c.send(&part).await;
            }
        }
        if chunked {
            c.send("0\r\n\r\n").await;
        }
        let r = c.response().await;
        if path == "/upload" {
            assert_eq!(r.status, 200, "chunked: {chunked}: {}", r.dump());
            assert_eq!(r.text(), total.to_string());
        } else {
            assert_problem(&r, 504, "upstream.timeout");
        }
        let got = up.next_req().await;
        assert_eq!((got.path(), got.body.len()), (path, total));
    }
}

/// A request body fed from a channel: the test decides when bytes come (or stop coming).
struct ChannelBody(tokio::sync::mpsc::Receiver<bytes::Bytes>);

impl hyper::body::Body for ChannelBody {
    type Data = bytes::Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<bytes::Bytes>, Self::Error>>> {
        self.0.poll_recv(cx).map(|b| b.map(|b| Ok(hyper::body::Frame::data(b))))
    }
}

/// While a body streams upstream, the wait for the client's next bytes is the client's: an
/// HTTP/2 client that stops sending mid-body gets a 408 after `body_read_timeout` (HTTP/2 has
/// no read deadline of its own), not a 504 after `read_timeout` and not an endless wait.
#[tokio::test]
async fn an_h2_client_stalling_mid_stream_gets_408() {
    use http_body_util::BodyExt;
    let up = Upstream::tcp(reply("never")).await;
    let apps = format!(
        "apps:\n  - name: app\n    limits: {{max_body_size: 1MiB, inspect_body: 1KiB, oversize: stream}}\n    upstream:\n      targets: {}\n      read_timeout: 30s\n",
        up.url()
    );
    let proxy = Proxy::start(&cfg(&["body_read_timeout: 500ms"], &apps));
    let tcp = w!(tokio::net::TcpStream::connect(proxy.addr)).unwrap();
    let (mut sender, conn) =
        w!(hyper::client::conn::http2::handshake(hyper_util::rt::TokioExecutor::new(), hyper_util::rt::TokioIo::new(tcp))).expect("h2 handshake");
    tokio::spawn(async move {
        let _ = conn.await;
    });
    let (tx, rx) = tokio::sync::mpsc::channel(4);
    // Past inspect_body, so the rest streams; then nothing more (the sender is kept open).
    tx.send(bytes::Bytes::from(vec![b'a'; 2048])).await.unwrap();
    let req = http::Request::post("http://api.test/upload").body(ChannelBody(rx)).unwrap();
    w!(sender.ready()).unwrap();
    let resp = w!(sender.send_request(req)).expect("h2 request");
    let status = resp.status();
    let body = w!(resp.into_body().collect()).unwrap().to_bytes();
    assert_eq!(status, 408, "{}", String::from_utf8_lossy(&body));
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(v["code"], "http.body_timeout");
    drop(tx);
}
