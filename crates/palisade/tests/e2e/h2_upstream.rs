//! Plain HTTP requests to HTTP/2 upstreams: an `h2c://` upstream (hyper's HTTP/2 server)
//! behind Palisade for HTTP/1.1 and HTTP/2 clients, with the request as the upstream sees it
//! (`:authority`, forwarding headers, hop-by-hop headers removed, bodies streamed), response
//! trailers to HTTP/2 clients, and an `https://` upstream that offers only HTTP/1.1 by ALPN.

use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{BodyExt, Full};
use hyper::body::{Frame, Incoming};
use hyper_util::rt::{TokioExecutor, TokioIo};

use crate::common::*;

/// What the upstream saw of a request.
#[derive(Clone, Debug, Default)]
struct Seen {
    version: Option<http::Version>,
    uri: String,
    headers: http::HeaderMap,
    body_len: usize,
}

/// An HTTP/2 (prior knowledge) server: answers `body: N bytes` plus trailers `x-done: yes`,
/// recording each request.
async fn h2c_server() -> (u16, Arc<Mutex<Vec<Seen>>>, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let seen2 = seen.clone();
    let task = tokio::spawn(async move {
        loop {
            let Ok((s, _)) = listener.accept().await else { return };
            let seen = seen2.clone();
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(move |req: Request<Incoming>| {
                    let seen = seen.clone();
                    async move {
                        let (parts, body) = req.into_parts();
                        let body = body.collect().await.map(|c| c.to_bytes()).unwrap_or_default();
                        seen.lock().unwrap().push(Seen {
                            version: Some(parts.version),
                            uri: parts.uri.to_string(),
                            headers: parts.headers,
                            body_len: body.len(),
                        });
                        let mut trailers = http::HeaderMap::new();
                        trailers.insert("x-done", http::HeaderValue::from_static("yes"));
                        let frames = Frames([Frame::data(Bytes::from(format!("body: {} bytes", body.len()))), Frame::trailers(trailers)].into());
                        let resp = Response::builder().header("x-up", "1").body(frames).unwrap();
                        Ok::<_, Infallible>(resp)
                    }
                });
                let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new()).serve_connection(TokioIo::new(s), svc).await;
            });
        }
    });
    (port, seen, task)
}

/// A body of ready frames.
struct Frames(std::collections::VecDeque<Frame<Bytes>>);

impl hyper::body::Body for Frames {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(mut self: std::pin::Pin<&mut Self>, _: &mut std::task::Context<'_>) -> std::task::Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        std::task::Poll::Ready(self.0.pop_front().map(Ok))
    }
}

fn yaml(target: &str) -> String {
    format!("workers: 1\nlisten:\n  - addr: 127.0.0.1:0\n    http2: true\nserver:\n  shutdown_timeout: 500ms\napps:\n  - name: app\n    upstream: {target}\n")
}

#[tokio::test]
async fn an_http1_client_reaches_an_h2c_upstream_with_the_request_rewritten_as_for_any_upstream() {
    let (port, seen, server) = h2c_server().await;
    let proxy = Proxy::start(&yaml(&format!("h2c://127.0.0.1:{port}")));
    let mut c = Conn::connect(proxy.addr).await;
    let r = c
        .roundtrip("POST /items?x=1 HTTP/1.1\r\nHost: api.test\r\nConnection: keep-alive, X-Secret\r\nX-Secret: s\r\nTE: trailers\r\nX-Forwarded-For: 6.6.6.6\r\nContent-Length: 5\r\n\r\nhello")
        .await;
    assert_eq!(r.status, 200, "{}", r.dump());
    assert_eq!(r.text(), "body: 5 bytes");
    assert_eq!(r.header("x-up"), Some("1"));
    // It asked for trailers (`TE: trailers`): they end the chunked body.
    assert_eq!(r.trailers, [("x-done".to_string(), "yes".to_string())]);
    assert!(r.header("x-request-id").is_some());
    // A chunked upload streams through as DATA frames.
    let body = "x".repeat(100_000);
    let mut req = String::from("POST /up HTTP/1.1\r\nHost: api.test\r\nTransfer-Encoding: chunked\r\n\r\n");
    for part in body.as_bytes().chunks(30_000) {
        req.push_str(&format!("{:x}\r\n{}\r\n", part.len(), std::str::from_utf8(part).unwrap()));
    }
    req.push_str("0\r\n\r\n");
    let r = c.roundtrip(req).await;
    assert_eq!(r.status, 200, "{}", r.dump());
    assert_eq!(r.text(), "body: 100000 bytes");
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2);
    let first = &seen[0];
    assert_eq!(first.version, Some(http::Version::HTTP_2));
    assert_eq!(first.uri, "http://api.test/items?x=1");
    assert!(first.headers.get("host").is_none(), "the Host is :authority over HTTP/2");
    assert!(first.headers.get("x-secret").is_none() && first.headers.get("connection").is_none());
    // `te` other than `trailers` never; `trailers` is kept.
    assert_eq!(first.headers.get("te").map(|v| v.to_str().unwrap()), Some("trailers"));
    assert_eq!(first.headers.get_all("x-forwarded-for").iter().collect::<Vec<_>>(), ["127.0.0.1"]);
    assert!(first.headers.get("x-request-id").is_some());
    assert_eq!(first.body_len, 5);
    assert_eq!(seen[1].body_len, 100_000);
    server.abort();
}

#[tokio::test]
async fn an_http2_client_gets_the_upstream_trailers() {
    let (port, seen, server) = h2c_server().await;
    let proxy = Proxy::start(&yaml(&format!("h2c://127.0.0.1:{port}")));
    let tcp = tokio::net::TcpStream::connect(proxy.addr).await.unwrap();
    let (mut send, conn) = hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tcp)).await.unwrap();
    tokio::spawn(conn);
    // Several streams at once on one client connection, multiplexed on one upstream connection.
    let mut calls = Vec::new();
    for i in 0..8 {
        let req = Request::post(format!("http://api.test/s/{i}")).body(Full::new(Bytes::from(vec![b'a'; i * 1000]))).unwrap();
        calls.push(send.send_request(req));
    }
    for (i, call) in calls.into_iter().enumerate() {
        let resp = within("response", call).await.unwrap();
        assert_eq!(resp.status(), 200);
        let collected = within("body", resp.into_body().collect()).await.unwrap();
        assert_eq!(collected.trailers().expect("trailers passed through")["x-done"], "yes");
        assert_eq!(collected.to_bytes(), format!("body: {} bytes", i * 1000));
    }
    assert_eq!(seen.lock().unwrap().len(), 8);
    server.abort();
}

/// An `https://` upstream whose ALPN offers HTTP/1.1 only: requests go to it over HTTP/1.1.
#[tokio::test]
async fn an_https_upstream_without_h2_is_spoken_to_over_http1() {
    let dir = TempDir::new();
    let ck = rcgen::generate_simple_self_signed(vec!["up.test".to_string()]).unwrap();
    let cert = dir.write("up.pem", ck.cert.pem());
    let key_der = rustls_pki_types::PrivateKeyDer::try_from(ck.signing_key.serialize_der()).unwrap();
    let mut sc = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![ck.cert.der().clone()], key_der)
        .unwrap();
    sc.alpn_protocols = vec![b"http/1.1".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(sc));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = tokio::spawn(async move {
        loop {
            let Ok((s, _)) = listener.accept().await else { return };
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                use tokio::io::{AsyncReadExt, AsyncWriteExt};
                let Ok(mut tls) = acceptor.accept(s).await else { return };
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                loop {
                    let Ok(n) = tls.read(&mut chunk).await else { return };
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    while let Some(end) = find(&buf, b"\r\n\r\n") {
                        let head = String::from_utf8_lossy(&buf[..end]).to_string();
                        buf.drain(..end + 4);
                        let line = head.lines().next().unwrap_or("").to_string();
                        let body = format!("h1 over tls: {line}");
                        let resp = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}", body.len());
                        if tls.write_all(resp.as_bytes()).await.is_err() {
                            return;
                        }
                    }
                }
            });
        }
    });
    let yaml = format!(
        "workers: 1\nlisten:\n  - addr: 127.0.0.1:0\nserver:\n  shutdown_timeout: 500ms\napps:\n  - name: app\n    upstream:\n      targets: [https://127.0.0.1:{port}]\n      tls: {{ca: {}, server_name: up.test}}\n",
        cert.display()
    );
    let proxy = Proxy::start(&yaml);
    for path in ["/one", "/two", "/three"] {
        let r = get(proxy.addr, "api.test", path).await;
        assert_eq!(r.status, 200, "{}", r.dump());
        assert_eq!(r.text(), format!("h1 over tls: GET {path} HTTP/1.1"));
    }
    server.abort();
}

/// An HTTP/2 server answering JSON: `{"items":["x"]}` (not what the spec says) for `/items?kind=bad`,
/// 100 KB of items for `/items?kind=big`, `{"items":[1,2]}` otherwise, with trailers `x-done: yes`.
async fn h2c_json_server() -> (u16, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let task = tokio::spawn(async move {
        loop {
            let Ok((s, _)) = listener.accept().await else { return };
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(|req: Request<Incoming>| async move {
                    let body = match req.uri().query() {
                        Some("kind=bad") => r#"{"items":["x"]}"#.to_string(),
                        Some("kind=big") => format!("{{\"items\":[{}1]}}", "1,".repeat(50_000)),
                        _ => r#"{"items":[1,2]}"#.to_string(),
                    };
                    let mut trailers = http::HeaderMap::new();
                    trailers.insert("x-done", http::HeaderValue::from_static("yes"));
                    let frames = Frames([Frame::data(Bytes::from(body)), Frame::trailers(trailers)].into());
                    Ok::<_, Infallible>(Response::builder().header("content-type", "application/json").body(frames).unwrap())
                });
                let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new()).serve_connection(TokioIo::new(s), svc).await;
            });
        }
    });
    (port, task)
}

/// The response stages (OpenAPI `response: block`) judge what an HTTP/2 upstream answers, for
/// HTTP/1.1 and HTTP/2 clients alike; a valid answer keeps its trailers.
#[tokio::test]
async fn responses_from_an_http2_upstream_are_judged_by_the_response_stages() {
    let (port, server) = h2c_json_server().await;
    let dir = TempDir::new();
    dir.write(
        "api.yaml",
        "openapi: 3.0.3\ninfo: {title: t, version: '1'}\npaths:\n  /items:\n    get:\n      parameters:\n        - {name: kind, in: query, schema: {type: string}}\n      responses:\n        '200':\n          description: ok\n          content:\n            application/json:\n              schema:\n                type: object\n                properties:\n                  items: {type: array, items: {type: integer}}\n",
    );
    let proxy = Proxy::start_in(
        &(yaml(&format!("h2c://127.0.0.1:{port}")) + "    limits: {inspect_response: 4KiB}\n    openapi:\n      spec: api.yaml\n      response: block\n"),
        dir,
    );

    // HTTP/1.1 client; the trailers for one that asked for them (`TE: trailers`).
    let r = get(proxy.addr, "api.test", "/items").await;
    assert_eq!(r.status, 200, "{}", r.dump());
    assert_eq!(r.text(), r#"{"items":[1,2]}"#);
    assert!(r.trailers.is_empty());
    let r = raw(proxy.addr, "GET /items HTTP/1.1\r\nHost: api.test\r\nTE: trailers\r\nConnection: TE, close\r\n\r\n").await;
    assert_eq!(r.text(), r#"{"items":[1,2]}"#, "{}", r.dump());
    assert_eq!(r.trailers, [("x-done".to_string(), "yes".to_string())]);
    let r = get(proxy.addr, "api.test", "/items?kind=bad").await;
    let v = assert_problem(&r, 502, "openapi.response_body_invalid");
    assert_eq!(v["reasons"][0]["location"], "response.body/items/0", "{}", r.dump());

    // HTTP/2 client: the trailers of a judged answer still reach it.
    let tcp = tokio::net::TcpStream::connect(proxy.addr).await.unwrap();
    let (mut send, conn) = hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tcp)).await.unwrap();
    tokio::spawn(conn);
    let resp = within("response", send.send_request(Request::get("http://api.test/items").body(Full::new(Bytes::new())).unwrap())).await.unwrap();
    assert_eq!(resp.status(), 200);
    let collected = within("body", resp.into_body().collect()).await.unwrap();
    assert_eq!(collected.trailers().expect("trailers passed through")["x-done"], "yes");
    assert_eq!(collected.to_bytes(), r#"{"items":[1,2]}"#);
    let resp = within("response", send.send_request(Request::get("http://api.test/items?kind=bad").body(Full::new(Bytes::new())).unwrap())).await.unwrap();
    assert_eq!(resp.status(), 502);
    let body = within("body", resp.into_body().collect()).await.unwrap().to_bytes();
    assert!(String::from_utf8_lossy(&body).contains("openapi.response_body_invalid"), "{body:?}");
    // Larger than `inspect_response`: its start is judged, then all of it and the trailers pass.
    let resp = within("response", send.send_request(Request::get("http://api.test/items?kind=big").body(Full::new(Bytes::new())).unwrap())).await.unwrap();
    assert_eq!(resp.status(), 200);
    let collected = within("body", resp.into_body().collect()).await.unwrap();
    assert_eq!(collected.trailers().expect("trailers passed through")["x-done"], "yes");
    assert_eq!(collected.to_bytes().len(), format!("{{\"items\":[{}1]}}", "1,".repeat(50_000)).len());
    server.abort();
}

/// An HTTP/2 server that counts the connections it accepted and those that ended; `/slow`
/// answers after 700 ms, anything else at once.
async fn counting_h2c_server() -> (u16, Arc<[std::sync::atomic::AtomicUsize; 2]>, tokio::task::JoinHandle<()>) {
    use std::sync::atomic::Ordering;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let counts: Arc<[std::sync::atomic::AtomicUsize; 2]> = Arc::new(Default::default());
    let c = counts.clone();
    let task = tokio::spawn(async move {
        loop {
            let Ok((s, _)) = listener.accept().await else { return };
            c[0].fetch_add(1, Ordering::SeqCst);
            let c = c.clone();
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(|req: Request<Incoming>| async move {
                    if req.uri().path() == "/slow" {
                        tokio::time::sleep(std::time::Duration::from_millis(700)).await;
                    }
                    Ok::<_, Infallible>(Response::new(Full::new(Bytes::from(req.uri().path().to_string()))))
                });
                let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new()).serve_connection(TokioIo::new(s), svc).await;
                c[1].fetch_add(1, Ordering::SeqCst);
            });
        }
    });
    (port, counts, task)
}

/// An upstream HTTP/2 connection without a stream for the upstream's `idle_timeout` is closed
/// (the upstream sees it end), and the next request opens another; a stream open longer than
/// the timeout keeps it. `max_idle: 0` keeps none without a stream.
#[tokio::test]
async fn an_idle_http2_upstream_connection_is_closed_and_reopened() {
    use std::sync::atomic::Ordering;
    let (port, counts, server) = counting_h2c_server().await;
    let yaml = |extra: &str| {
        format!("workers: 1\nlisten:\n  - addr: 127.0.0.1:0\nserver:\n  shutdown_timeout: 500ms\napps:\n  - name: app\n    upstream:\n      targets: [h2c://127.0.0.1:{port}]\n      {extra}\n")
    };
    let proxy = Proxy::start(&yaml("idle_timeout: 300ms"));
    for path in ["/a", "/b", "/slow"] {
        let r = get(proxy.addr, "api.test", path).await;
        assert_eq!((r.status, r.text()), (200, path.to_string()));
    }
    assert_eq!(counts[0].load(Ordering::SeqCst), 1, "one connection, kept while a stream outlived the idle timeout");
    eventually("the idle connection to be closed", || counts[1].load(Ordering::SeqCst) == 1).await;
    let r = get(proxy.addr, "api.test", "/c").await;
    assert_eq!((r.status, r.text().as_str()), (200, "/c"));
    assert_eq!(counts[0].load(Ordering::SeqCst), 2, "a new connection after the idle one closed");
    drop(proxy);

    let proxy = Proxy::start(&yaml("max_idle: 0"));
    let r = get(proxy.addr, "api.test", "/d").await;
    assert_eq!((r.status, r.text().as_str()), (200, "/d"));
    eventually("the connection to be closed once its stream ended", || counts[1].load(Ordering::SeqCst) == 3).await;
    server.abort();
}
