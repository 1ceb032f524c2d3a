//! WebSocket through Palisade: a real client (`tungstenite`) and a real echo server on
//! loopback. Handshakes pass the stages before the upstream is contacted; frames are relayed
//! with limits; with `inspect: text`, client messages are judged and a blocked one closes with
//! 1008 and leaves an event; HTTP/2 extended CONNECT (RFC 8441) reaches the same upstream.
//! GraphQL operations over `graphql-transport-ws` and `graphql-ws` are judged like requests
//! over HTTP, with the same reasons and locations.
// The client and the echo server are tungstenite's blocking ones, on threads of their own
// (no event loop is blocked).
#![allow(clippy::disallowed_methods)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use palisade_events::query::{Filter, Reader};
use tungstenite::protocol::frame::coding::CloseCode;
use tungstenite::{Message, WebSocket};

use crate::common::*;

/// An echo WebSocket server on a thread of its own: counts the connections it accepted and
/// keeps the text messages it received; agrees to the first subprotocol offered. Stops when
/// dropped.
struct Echo {
    addr: SocketAddr,
    accepted: Arc<AtomicUsize>,
    texts: Arc<Mutex<Vec<String>>>,
    stop: Arc<std::sync::atomic::AtomicBool>,
}

impl Echo {
    fn start() -> Echo {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let accepted = Arc::new(AtomicUsize::new(0));
        let texts = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (a, t, s) = (accepted.clone(), texts.clone(), stop.clone());
        std::thread::spawn(move || {
            for conn in l.incoming() {
                if s.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(conn) = conn else { continue };
                a.fetch_add(1, Ordering::SeqCst);
                let t = t.clone();
                std::thread::spawn(move || {
                    conn.set_read_timeout(Some(LIMIT)).ok();
                    let Ok(mut ws) = tungstenite::accept_hdr(conn, pick_protocol) else { return };
                    while let Ok(m) = ws.read() {
                        match m {
                            Message::Text(s) => {
                                t.lock().unwrap().push(s.to_string());
                                if ws.send(Message::Text(s)).is_err() {
                                    return;
                                }
                            }
                            Message::Binary(b) if ws.send(Message::Binary(b.clone())).is_err() => return,
                            _ => {}
                        }
                    }
                });
            }
        });
        Echo { addr, accepted, texts, stop }
    }

    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

/// Like real servers, the echo server takes the first subprotocol the client offers.
#[allow(clippy::result_large_err)] // the signature of tungstenite's handshake callback
fn pick_protocol(
    req: &tungstenite::handshake::server::Request,
    mut resp: tungstenite::handshake::server::Response,
) -> Result<tungstenite::handshake::server::Response, tungstenite::handshake::server::ErrorResponse> {
    if let Some(first) = req.headers().get("sec-websocket-protocol").and_then(|v| v.to_str().ok()?.split(',').next()) {
        resp.headers_mut().insert("sec-websocket-protocol", first.trim().parse().unwrap());
    }
    Ok(resp)
}

impl Drop for Echo {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr);
    }
}

fn start(echo: &Echo, app_extra: &str, top: &str) -> Proxy {
    Proxy::start(&format!("{}{app_extra}{top}", cfg(&[], &one_app(&echo.url()))))
}

fn connect(addr: SocketAddr, path: &str) -> WebSocket<TcpStream> {
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(LIMIT)).unwrap();
    let (ws, resp) = tungstenite::client(format!("ws://api.test{path}"), s).unwrap_or_else(|e| panic!("handshake through palisade failed: {e}"));
    assert_eq!(resp.status(), 101);
    assert!(resp.headers().contains_key("x-request-id"));
    ws
}

/// Read until a close frame arrives: its code.
fn close_code(ws: &mut WebSocket<TcpStream>) -> Option<CloseCode> {
    loop {
        match ws.read() {
            Ok(Message::Close(c)) => return c.map(|c| c.code),
            Ok(_) => continue,
            Err(e) => panic!("expected a close frame, got {e}"),
        }
    }
}

fn eventually_sync(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + LIMIT;
    while !cond() {
        assert!(std::time::Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn echo_round_trip_through_palisade() {
    let echo = Echo::start();
    let proxy = start(&echo, "", "");
    let mut ws = connect(proxy.addr, "/chat?room=1");
    ws.send(Message::text("hello")).unwrap();
    assert_eq!(ws.read().unwrap(), Message::text("hello"));
    let big: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    ws.send(Message::binary(big.clone())).unwrap();
    assert_eq!(ws.read().unwrap(), Message::binary(big), "a message larger than any read buffer");
    ws.send(Message::Ping("p".into())).unwrap();
    match ws.read().unwrap() {
        Message::Pong(p) => assert_eq!(&p[..], b"p"),
        other => panic!("{other:?}"),
    }
    ws.close(None).unwrap();
    while ws.read().is_ok() {}
    let m = proxy.snapshot().apps[0].metrics.clone();
    eventually_sync("the connection to be counted closed", || m.ws_closes(palisade_proxy::metrics::WsClose::Normal) == 1);
    assert_eq!(m.ws_open(), 0);
    let text = proxy.running().shared().metrics.render(&palisade_proxy::metrics::Extra { events: None, connections: 0, stages: &[] });
    assert!(text.contains("palisade_websocket_messages_total{app=\"app\",direction=\"client_to_upstream\"} 2"), "{text}");
    assert!(text.contains("palisade_websocket_messages_total{app=\"app\",direction=\"upstream_to_client\"} 2"), "{text}");
    assert!(text.contains("palisade_websocket_closes_total{app=\"app\",reason=\"normal\"} 1"), "{text}");
    assert_eq!(echo.accepted.load(Ordering::SeqCst), 1);
}

/// A raw handshake: the response head and what followed it.
fn raw_handshake(addr: SocketAddr, path: &str) -> (TcpStream, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(LIMIT)).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: api.test\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n").unwrap();
    let mut head = Vec::new();
    let mut b = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        assert_eq!(s.read(&mut b).unwrap(), 1, "closed in the head: {}", String::from_utf8_lossy(&head));
        head.push(b[0]);
    }
    (s, String::from_utf8(head).unwrap())
}

#[test]
fn a_blocked_handshake_gets_403_and_never_reaches_the_upstream() {
    let echo = Echo::start();
    let proxy = start(&echo, "", "");
    let (mut s, head) = raw_handshake(proxy.addr, "/chat?q=%27%20or%201%3D1--");
    assert!(head.starts_with("HTTP/1.1 403"), "{head}");
    assert!(head.to_ascii_lowercase().contains("content-type: application/problem+json"), "{head}");
    let mut body = String::new();
    let _ = s.read_to_string(&mut body);
    assert!(body.contains("detect.sqli"), "{body}");
    // The same handshake, clean, does reach it: the count below is not zero for lack of trying.
    let (_s2, head) = raw_handshake(proxy.addr, "/chat?q=shoes");
    assert!(head.starts_with("HTTP/1.1 101"), "{head}");
    assert!(head.contains("s3pPLMBiTxaQ9kYGzzhZRbK+xOo="), "the upstream's accept value for the client's key: {head}");
    assert_eq!(echo.accepted.load(Ordering::SeqCst), 1, "only the allowed handshake reached the upstream");
}

#[test]
fn an_attack_in_a_message_closes_with_1008_and_records_an_event() {
    let echo = Echo::start();
    let proxy = start(&echo, "    websocket: {inspect: text}\n", "events: sqlite:ev/events.db\n");
    let mut ws = connect(proxy.addr, "/chat");
    ws.send(Message::text(r#"{"say": "hello"}"#)).unwrap();
    assert_eq!(ws.read().unwrap(), Message::text(r#"{"say": "hello"}"#));
    ws.send(Message::text(r#"{"say": "x' or 1=1 --"}"#)).unwrap();
    assert_eq!(close_code(&mut ws), Some(CloseCode::Policy));
    assert_eq!(*echo.texts.lock().unwrap(), [r#"{"say": "hello"}"#], "the blocked message never reached the upstream");
    let shared = proxy.running().shared();
    assert!(shared.events.as_ref().unwrap().flush(LIMIT));
    let page = Reader::open(&proxy.dir.join("ev/events.db")).unwrap().events(&Filter::default()).unwrap();
    assert_eq!(page.events.len(), 1, "{:?}", page.events);
    let e = &page.events[0];
    assert_eq!((e.reason.as_str(), e.location.as_deref(), e.path.as_str()), ("detect.sqli", Some("ws.message/say"), "/chat"));
    let m = proxy.snapshot().apps[0].metrics.clone();
    eventually_sync("the close to be counted", || m.ws_closes(palisade_proxy::metrics::WsClose::Blocked) == 1);
}

#[test]
fn an_oversized_message_closes_with_1009() {
    let echo = Echo::start();
    let proxy = start(&echo, "    websocket: {max_message: 1KiB}\n", "");
    let mut ws = connect(proxy.addr, "/chat");
    ws.send(Message::binary(vec![7u8; 1024])).unwrap();
    assert_eq!(ws.read().unwrap(), Message::binary(vec![7u8; 1024]), "exactly the limit passes");
    ws.send(Message::binary(vec![7u8; 1025])).unwrap();
    assert_eq!(close_code(&mut ws), Some(CloseCode::Size));
}

#[test]
fn a_malformed_frame_closes_with_1002() {
    let echo = Echo::start();
    let proxy = start(&echo, "", "");
    let (mut s, head) = raw_handshake(proxy.addr, "/chat");
    assert!(head.starts_with("HTTP/1.1 101"), "{head}");
    // An unmasked frame from a client (RFC 6455 §5.1).
    s.write_all(&[0x81, 0x02, b'h', b'i']).unwrap();
    let mut got = Vec::new();
    let _ = s.read_to_end(&mut got);
    assert!(got.len() >= 4 && got[0] == 0x88, "a close frame: {got:02x?}");
    assert_eq!(u16::from_be_bytes([got[2], got[3]]), 1002, "{got:02x?}");
}

#[test]
fn an_idle_connection_is_closed() {
    let echo = Echo::start();
    let proxy = start(&echo, "    websocket: {idle_timeout: 300ms}\n", "");
    let mut ws = connect(proxy.addr, "/chat");
    ws.send(Message::text("x")).unwrap();
    assert_eq!(ws.read().unwrap(), Message::text("x"));
    assert_eq!(close_code(&mut ws), Some(CloseCode::Away));
    let m = proxy.snapshot().apps[0].metrics.clone();
    eventually_sync("the close to be counted", || m.ws_closes(palisade_proxy::metrics::WsClose::IdleTimeout) == 1);
}

#[test]
fn connections_per_client_ip_are_limited() {
    let echo = Echo::start();
    let proxy = start(&echo, "    websocket: {max_per_ip: 1}\n", "");
    let mut first = connect(proxy.addr, "/chat");
    let (_s, head) = raw_handshake(proxy.addr, "/chat");
    assert!(head.starts_with("HTTP/1.1 429"), "{head}");
    first.close(None).unwrap();
    while first.read().is_ok() {}
    let m = proxy.snapshot().apps[0].metrics.clone();
    eventually_sync("the first connection to end", || m.ws_open() == 0);
    let (_s, head) = raw_handshake(proxy.addr, "/chat");
    assert!(head.starts_with("HTTP/1.1 101"), "a slot is free again: {head}");
}

#[tokio::test]
async fn http2_extended_connect_round_trip() {
    use http_body_util::Empty;
    use hyper_util::rt::{TokioExecutor, TokioIo};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let echo = Echo::start();
    let proxy =
        Proxy::start(&format!("workers: 1\nlisten:\n  - addr: 127.0.0.1:0\n    http2: true\nserver:\n  shutdown_timeout: 500ms\n{}", one_app(&echo.url())));
    let io = w!(tokio::net::TcpStream::connect(proxy.addr)).unwrap();
    let (mut sender, conn) =
        w!(hyper::client::conn::http2::handshake::<_, _, Empty<bytes::Bytes>>(TokioExecutor::new(), TokioIo::new(io))).expect("h2 handshake");
    tokio::spawn(conn);
    let mut req =
        http::Request::builder().method(http::Method::CONNECT).uri("http://api.test/chat").header("sec-websocket-version", "13").body(Empty::new()).unwrap();
    req.extensions_mut().insert(hyper::ext::Protocol::from_static("websocket"));
    let resp = w!(sender.send_request(req)).expect("extended CONNECT");
    assert_eq!(resp.status(), 200);
    let up = w!(hyper::upgrade::on(resp)).expect("the stream");
    let mut up = TokioIo::new(up);
    // A masked text frame "hi", then the echo: an unmasked text frame "hi".
    let mask = [9u8, 8, 7, 6];
    let mut frame = vec![0x81, 0x82];
    frame.extend_from_slice(&mask);
    frame.extend(b"hi".iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
    w!(up.write_all(&frame)).unwrap();
    let mut got = [0u8; 4];
    w!(up.read_exact(&mut got)).unwrap();
    assert_eq!(got, [0x81, 0x02, b'h', b'i']);
    assert_eq!(*echo.texts.lock().unwrap(), ["hi"]);
}

#[test]
fn shutdown_lets_connections_drain_then_closes_them_with_1001() {
    let echo = Echo::start();
    let mut proxy = Proxy::start(&cfg(&["shutdown_timeout: 2s"], &one_app(&echo.url())));
    let mut ws = connect(proxy.addr, "/chat");
    let running = proxy.take();
    let stopping = std::thread::spawn(move || running.shutdown());
    // During the drain time the connection still carries messages.
    ws.send(Message::text("during the drain")).unwrap();
    assert_eq!(ws.read().unwrap(), Message::text("during the drain"));
    assert_eq!(close_code(&mut ws), Some(CloseCode::Away));
    stopping.join().unwrap();
}

#[test]
fn open_connections_keep_the_configuration_of_their_handshake_across_a_reload() {
    let echo = Echo::start();
    let base = cfg(&[], &one_app(&echo.url()));
    let proxy = Proxy::start(&base);
    let mut old = connect(proxy.addr, "/chat");
    proxy.reload(&format!("{base}    websocket: {{inspect: text}}\n")).unwrap();
    let attack = "x' or 1=1 --";
    old.send(Message::text(attack)).unwrap();
    assert_eq!(old.read().unwrap(), Message::text(attack), "opened before the reload: not inspected");
    let mut new = connect(proxy.addr, "/chat");
    new.send(Message::text(attack)).unwrap();
    assert_eq!(close_code(&mut new), Some(CloseCode::Policy), "opened after the reload: inspected");
}

#[tokio::test]
async fn an_upstream_that_refuses_the_upgrade_is_answered_as_it_is() {
    let mut up = Upstream::tcp(reply("no websocket here")).await;
    let proxy = Proxy::start(&cfg(&[], &one_app(&up.url())));
    let r = raw(
        proxy.addr,
        "GET /chat HTTP/1.1\r\nHost: api.test\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n",
    )
    .await;
    assert_eq!((r.status, r.text().as_str()), (200, "no websocket here"));
    // What the upstream saw: the upgrade, the key, and the forwarding headers.
    let req = w!(up.next_req());
    assert_eq!((req.header("upgrade"), req.header("connection")), (Some("websocket"), Some("upgrade")));
    assert_eq!(req.header("sec-websocket-key"), Some("dGhlIHNhbXBsZSBub25jZQ=="));
    assert_eq!(req.header("x-forwarded-for"), Some("127.0.0.1"));
    assert!(req.header("x-request-id").is_some());
}

fn connect_with(addr: SocketAddr, path: &str, protocol: &str) -> WebSocket<TcpStream> {
    use tungstenite::client::IntoClientRequest;
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(LIMIT)).unwrap();
    let mut req = format!("ws://api.test{path}").into_client_request().unwrap();
    req.headers_mut().insert("sec-websocket-protocol", protocol.parse().unwrap());
    let (ws, resp) = tungstenite::client(req, s).unwrap_or_else(|e| panic!("handshake through palisade failed: {e}"));
    assert_eq!(resp.headers()["sec-websocket-protocol"], protocol, "the upstream's choice reaches the client");
    ws
}

const GQL_SCHEMA: &str = "type Query { user(name: String!): User }\n\
    type Subscription { commentAdded(post: ID!): Comment }\n\
    type User { name: String!, friends: [User!]! }\n\
    type Comment { id: ID!, body: String!, author: User! }\n";

fn graphql_proxy(echo: &Echo) -> Proxy {
    let dir = TempDir::new();
    dir.write("schema.graphql", GQL_SCHEMA);
    let app = format!("{}    graphql: {{path: /graphql, schema: schema.graphql, max_depth: 3}}\nevents: sqlite:ev/events.db\n", one_app(&echo.url()));
    Proxy::start_in(&cfg(&[], &app), dir)
}

/// The events recorded so far: (reason, location).
fn events(proxy: &Proxy) -> Vec<(String, Option<String>)> {
    assert!(proxy.running().shared().events.as_ref().unwrap().flush(LIMIT));
    let page = Reader::open(&proxy.dir.join("ev/events.db")).unwrap().events(&Filter::default()).unwrap();
    let mut out: Vec<_> = page.events.iter().map(|e| (e.reason.clone(), e.location.clone())).collect();
    out.sort();
    out
}

/// The first reason of a blocked POST of `body` to `path`: (status, code, location).
fn http_block(addr: SocketAddr, path: &str, body: &str) -> (String, String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(LIMIT)).unwrap();
    write!(s, "POST {path} HTTP/1.1\r\nHost: api.test\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len())
        .unwrap();
    let mut resp = String::new();
    let _ = s.read_to_string(&mut resp);
    let (head, json) = resp.split_once("\r\n\r\n").unwrap_or((&resp, ""));
    let v: serde_json::Value = serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {resp}"));
    let r = &v["reasons"][0];
    (head.lines().next().unwrap_or("").to_string(), r["code"].as_str().unwrap_or("").to_string(), r["location"].as_str().unwrap_or("").to_string())
}

#[test]
fn graphql_operations_over_both_subprotocols_are_judged_like_http_requests() {
    let valid = r#"subscription S($p: ID!) { commentAdded(post: $p) { id body author { name } } }"#;
    let deep = r#"subscription { commentAdded(post: \"1\") { author { friends { friends { name } } } } }"#;
    let unknown = r#"subscription { commentAdded(post: \"1\") { secret } }"#;
    let attack = r#"subscription S($p: ID!) { commentAdded(post: $p) { id } }"#;
    for (protocol, op) in [("graphql-transport-ws", "subscribe"), ("graphql-ws", "start")] {
        let echo = Echo::start();
        let proxy = graphql_proxy(&echo);
        let message = |query: &str, variables: &str| format!(r#"{{"id":"1","type":"{op}","payload":{{"query":"{query}","variables":{variables}}}}}"#);
        // The valid subscription is relayed, after the connection's opening message.
        let mut ws = connect_with(proxy.addr, "/graphql", protocol);
        let init = r#"{"type":"connection_init","payload":{"token":"abc"}}"#;
        ws.send(Message::text(init)).unwrap();
        assert_eq!(ws.read().unwrap(), Message::text(init));
        let ok = message(valid, r#"{"p":"42"}"#);
        ws.send(Message::text(ok.clone())).unwrap();
        assert_eq!(ws.read().unwrap(), Message::text(ok.clone()), "{protocol}");
        // Over-deep: closed with 1008 before it reaches the upstream.
        ws.send(Message::text(message(deep, "{}"))).unwrap();
        assert_eq!(close_code(&mut ws), Some(CloseCode::Policy), "{protocol}");
        // Schema-violating, and an attack in a variable (judged by detection as a value).
        for (query, vars) in [(unknown, "{}"), (attack, r#"{"p":"1' UNION SELECT password FROM users --"}"#)] {
            let mut ws = connect_with(proxy.addr, "/graphql", protocol);
            ws.send(Message::text(message(query, vars))).unwrap();
            assert_eq!(close_code(&mut ws), Some(CloseCode::Policy), "{protocol}: {query}");
        }
        assert_eq!(*echo.texts.lock().unwrap(), [init.to_string(), ok], "{protocol}: blocked operations never reached the upstream");
        let got = events(&proxy);
        let want = [
            ("detect.sqli", "graphql.variables.p"),
            ("graphql.depth", "graphql.subscription.commentAdded.author.friends.friends"),
            ("graphql.field_unknown", "graphql.subscription.commentAdded.secret"),
        ];
        let want: Vec<_> = want.iter().map(|(r, l)| (r.to_string(), Some(l.to_string()))).collect();
        assert_eq!(got, want, "{protocol}");
        // The same operations over HTTP: the same reason codes at the same locations.
        for (query, (code, location)) in [(deep, &want[1]), (unknown, &want[2])] {
            let (status, c, l) = http_block(proxy.addr, "/graphql", &format!(r#"{{"query":"{query}"}}"#));
            assert!(status.contains("403"), "{status}");
            assert_eq!((&c, Some(&l)), (code, location.as_ref()));
        }
        // And their events are recorded alike: each GraphQL finding now twice.
        let mut both = [want.clone(), want[1..].to_vec()].concat();
        both.sort();
        assert_eq!(events(&proxy), both, "{protocol}: events of HTTP and WebSocket blocks");
        let m = proxy.snapshot().apps[0].metrics.clone();
        eventually_sync("the closes to be counted", || m.ws_closes(palisade_proxy::metrics::WsClose::Blocked) == 3);
    }
}

#[test]
fn a_message_graphql_transport_ws_does_not_allow_closes_with_4400() {
    let echo = Echo::start();
    let proxy = graphql_proxy(&echo);
    let mut ws = connect_with(proxy.addr, "/graphql", "graphql-transport-ws");
    ws.send(Message::text("not a protocol message")).unwrap();
    assert_eq!(close_code(&mut ws), Some(CloseCode::from(4400)));
    assert_eq!(events(&proxy), [("graphql.request_invalid".to_string(), Some("graphql".to_string()))]);
    // The legacy protocol has no such code: policy.
    let mut ws = connect_with(proxy.addr, "/graphql", "graphql-ws");
    ws.send(Message::text(r#"{"type":"subscribe","id":"1","payload":{"query":"subscription { commentAdded(post: 1) { id } }"}}"#)).unwrap();
    assert_eq!(close_code(&mut ws), Some(CloseCode::Policy));
    assert!(echo.texts.lock().unwrap().is_empty());
}

// ---------------------------------------------------------------------------------------------
// HTTP/2 upstreams: extended CONNECT (RFC 8441) when the upstream allows it, else an HTTP/1.1
// upgrade to the same target.

/// What an HTTP/2 upstream saw: TCP connections accepted, extended CONNECTs (with their
/// headers), HTTP/1.1 upgrades, and the echoed text messages.
#[derive(Default)]
struct H2Seen {
    connections: AtomicUsize,
    connects: Mutex<Vec<http::HeaderMap>>,
    http1_upgrades: AtomicUsize,
    texts: Mutex<Vec<String>>,
}

/// A WebSocket echo over any stream, framing written by hand (RFC 6455 §5.2): each client frame
/// must be masked and whole; text and binary frames come back unmasked, a close frame is
/// answered and ends it.
async fn frame_echo<S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin>(mut s: S, seen: Arc<H2Seen>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    loop {
        let mut h = [0u8; 2];
        if s.read_exact(&mut h).await.is_err() {
            return;
        }
        let (op, masked) = (h[0] & 0x0f, h[1] & 0x80 != 0);
        let mut len = u64::from(h[1] & 0x7f);
        if len == 126 {
            let mut b = [0u8; 2];
            s.read_exact(&mut b).await.unwrap();
            len = u64::from(u16::from_be_bytes(b));
        } else if len == 127 {
            let mut b = [0u8; 8];
            s.read_exact(&mut b).await.unwrap();
            len = u64::from_be_bytes(b);
        }
        assert!(masked, "client frames reach the upstream masked");
        let mut mask = [0u8; 4];
        s.read_exact(&mut mask).await.unwrap();
        let mut p = vec![0u8; len as usize];
        s.read_exact(&mut p).await.unwrap();
        for (i, b) in p.iter_mut().enumerate() {
            *b ^= mask[i % 4];
        }
        if op == 1 {
            seen.texts.lock().unwrap().push(String::from_utf8(p.clone()).unwrap());
        }
        let mut out = vec![0x80 | op];
        if p.len() < 126 {
            out.push(p.len() as u8);
        } else {
            out.push(126);
            out.extend_from_slice(&(p.len() as u16).to_be_bytes());
        }
        out.extend_from_slice(&p);
        if s.write_all(&out).await.is_err() || op == 8 {
            return;
        }
    }
}

/// An `h2c://` upstream (hyper's HTTP/2 server): it allows extended CONNECT when
/// `connect_protocol`, and echoes WebSocket streams; with `http1`, connections that do not open
/// with the HTTP/2 preface are HTTP/1.1 WebSocket upgrades (tungstenite's server), as servers
/// that take both on one port do. Plain HTTP/2 requests get `h2 ok`.
async fn h2_ws_server(connect_protocol: bool, http1: bool, max_streams: Option<u32>) -> (u16, Arc<H2Seen>, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(H2Seen::default());
    let seen2 = seen.clone();
    let task = tokio::spawn(async move {
        loop {
            let Ok((s, _)) = listener.accept().await else { return };
            seen2.connections.fetch_add(1, Ordering::SeqCst);
            let seen = seen2.clone();
            tokio::spawn(async move {
                let mut first = [0u8; 3];
                while s.peek(&mut first).await.unwrap_or(0) < 3 {
                    if s.peek(&mut first).await.unwrap_or(0) == 0 {
                        return;
                    }
                }
                if &first != b"PRI" && http1 {
                    seen.http1_upgrades.fetch_add(1, Ordering::SeqCst);
                    let s = s.into_std().unwrap();
                    s.set_nonblocking(false).unwrap();
                    std::thread::spawn(move || {
                        s.set_read_timeout(Some(LIMIT)).ok();
                        let Ok(mut ws) = tungstenite::accept_hdr(s, pick_protocol) else { return };
                        while let Ok(m) = ws.read() {
                            if let Message::Text(t) = &m {
                                seen.texts.lock().unwrap().push(t.to_string());
                            }
                            if (m.is_text() || m.is_binary()) && ws.send(m).is_err() {
                                return;
                            }
                        }
                    });
                    return;
                }
                serve_h2(s, connect_protocol, max_streams, seen).await;
            });
        }
    });
    (port, seen, task)
}

/// One app in front of an `h2c://` upstream. (Each test names its app: connections are counted
/// per app name and client IP in the process, and the tests run side by side.)
fn h2_app(name: &str, port: u16) -> String {
    format!("apps:\n  - name: {name}\n    upstream: h2c://127.0.0.1:{port}\n")
}

/// Serve one HTTP/2 connection: extended CONNECTs (allowed when `connect_protocol`) become
/// WebSocket echoes; plain requests get `h2 ok`.
async fn serve_h2<S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static>(
    s: S,
    connect_protocol: bool,
    max_streams: Option<u32>,
    seen: Arc<H2Seen>,
) {
    use hyper_util::rt::{TokioExecutor, TokioIo};
    let svc = hyper::service::service_fn(move |mut req: http::Request<hyper::body::Incoming>| {
        let seen = seen.clone();
        async move {
            let ws = req.method() == http::Method::CONNECT && req.extensions().get::<hyper::ext::Protocol>().is_some_and(|p| p.as_str() == "websocket");
            let mut resp = http::Response::new(http_body_util::Full::new(bytes::Bytes::from_static(b"h2 ok")));
            if ws {
                seen.connects.lock().unwrap().push(req.headers().clone());
                let on = hyper::upgrade::on(&mut req);
                tokio::spawn(async move {
                    if let Ok(up) = on.await {
                        frame_echo(TokioIo::new(up), seen).await;
                    }
                });
                *resp.body_mut() = http_body_util::Full::new(bytes::Bytes::new());
                resp.headers_mut().insert("sec-websocket-protocol", http::HeaderValue::from_static("chat"));
            }
            Ok::<_, std::convert::Infallible>(resp)
        }
    });
    let mut b = hyper::server::conn::http2::Builder::new(TokioExecutor::new());
    if connect_protocol {
        b.enable_connect_protocol();
    }
    b.max_concurrent_streams(max_streams);
    let _ = b.serve_connection(TokioIo::new(s), svc).await;
}

/// An HTTP/1.1 WebSocket handshake answered by hand (RFC 6455 §4.2.2, subprotocol `chat`),
/// then the echo.
async fn h1_accept_then_echo<S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin>(mut s: S, seen: Arc<H2Seen>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut head = Vec::new();
    let mut b = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if s.read_exact(&mut b).await.is_err() {
            return;
        }
        head.push(b[0]);
    }
    let text = String::from_utf8_lossy(&head).to_string();
    let key = text.lines().find_map(|l| l.split_once(':').filter(|(n, _)| n.eq_ignore_ascii_case("sec-websocket-key")).map(|(_, v)| v.trim().to_string()));
    let Some(key) = key else { return };
    seen.http1_upgrades.fetch_add(1, Ordering::SeqCst);
    let accept = tungstenite::handshake::derive_accept_key(key.as_bytes());
    let resp = format!("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Accept: {accept}\r\nSec-WebSocket-Protocol: chat\r\n\r\n");
    if s.write_all(resp.as_bytes()).await.is_ok() {
        frame_echo(s, seen).await;
    }
}

/// An `https://` upstream (a self-signed certificate for `up.test`, written to `dir`) offering
/// `alpn`: HTTP/2 connections are served as [`serve_h2`] does, HTTP/1.1 ones take a WebSocket
/// handshake ([`h1_accept_then_echo`]). The upstream's YAML.
async fn tls_ws_server(dir: &TempDir, alpn: &[&[u8]], connect_protocol: bool) -> (String, Arc<H2Seen>, tokio::task::JoinHandle<()>) {
    let ck = rcgen::generate_simple_self_signed(vec!["up.test".to_string()]).unwrap();
    let cert = dir.write("up.pem", ck.cert.pem());
    let key_der = rustls_pki_types::PrivateKeyDer::try_from(ck.signing_key.serialize_der()).unwrap();
    let mut sc = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![ck.cert.der().clone()], key_der)
        .unwrap();
    sc.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(sc));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(H2Seen::default());
    let seen2 = seen.clone();
    let task = tokio::spawn(async move {
        loop {
            let Ok((s, _)) = listener.accept().await else { return };
            seen2.connections.fetch_add(1, Ordering::SeqCst);
            let (acceptor, seen) = (acceptor.clone(), seen2.clone());
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(s).await else { return };
                if tls.get_ref().1.alpn_protocol() == Some(b"h2") {
                    serve_h2(tls, connect_protocol, None, seen).await;
                } else {
                    h1_accept_then_echo(tls, seen).await;
                }
            });
        }
    });
    let yaml = format!("      targets: [https://127.0.0.1:{port}]\n      tls: {{ca: {}, server_name: up.test}}\n", cert.display());
    (yaml, seen, task)
}

#[tokio::test]
async fn https_upstreams_get_websocket_over_tls_by_extended_connect_or_http1() {
    for (name, alpn, connect_protocol, connects, upgrades) in [
        ("tls-ext-connect", &[&b"h2"[..], b"http/1.1"][..], true, 1, 0),
        ("tls-h2-fallback", &[&b"h2"[..], b"http/1.1"][..], false, 0, 1),
        ("tls-http1", &[&b"http/1.1"[..]][..], false, 0, 1),
    ] {
        let dir = TempDir::new();
        let (up, seen, server) = tls_ws_server(&dir, alpn, connect_protocol).await;
        let proxy = Proxy::start(&cfg(&[], &format!("apps:\n  - name: {name}\n    upstream:\n{up}")));
        assert_eq!(h1_echo(proxy.addr, "over tls").await.as_deref(), Ok("over tls"), "{name}");
        assert_eq!(seen.connects.lock().unwrap().len(), connects, "{name}");
        assert_eq!(seen.http1_upgrades.load(Ordering::SeqCst), upgrades, "{name}");
        assert_eq!(*seen.texts.lock().unwrap(), ["over tls"], "{name}");
        server.abort();
    }
}

/// A WebSocket server that speaks only HTTP/1.1 on an `h2c://` URL (a configuration mistake):
/// the HTTP/2 connection fails (logged), and the handshake reaches it as an HTTP/1.1 upgrade.
#[tokio::test]
async fn an_http1_websocket_server_behind_an_h2c_url_still_gets_the_handshake() {
    let echo = Echo::start();
    let proxy = Proxy::start(&cfg(&[], &format!("apps:\n  - name: h1-behind-h2c\n    upstream: h2c://{}\n", echo.addr)));
    assert_eq!(h1_echo(proxy.addr, "still").await.as_deref(), Ok("still"));
    assert_eq!(*echo.texts.lock().unwrap(), ["still"]);
}

/// An HTTP/1.1 client's WebSocket (tungstenite's, on a thread) through Palisade: one echo.
async fn h1_echo(addr: SocketAddr, text: &'static str) -> Result<String, String> {
    tokio::task::spawn_blocking(move || {
        let s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(LIMIT)).unwrap();
        let mut req = tungstenite::client::IntoClientRequest::into_client_request("ws://api.test/chat").unwrap();
        req.headers_mut().insert("sec-websocket-protocol", "chat".parse().unwrap());
        let (mut ws, resp) = tungstenite::client(req, s).map_err(|e| e.to_string())?;
        assert_eq!(resp.status(), 101);
        ws.send(Message::text(text)).map_err(|e| e.to_string())?;
        let back = ws.read().map_err(|e| e.to_string())?;
        let _ = ws.close(None);
        Ok(back.into_text().map_err(|e| e.to_string())?.to_string())
    })
    .await
    .unwrap()
}

#[tokio::test]
async fn an_h2c_upstream_that_allows_extended_connect_gets_the_handshake_as_one() {
    use http_body_util::Empty;
    use hyper_util::rt::{TokioExecutor, TokioIo};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let (port, seen, server) = h2_ws_server(true, false, None).await;
    let proxy = Proxy::start(&format!(
        "workers: 1\nlisten:\n  - addr: 127.0.0.1:0\n    http2: true\nserver:\n  shutdown_timeout: 500ms\n{}",
        h2_app("ext-connect", port)
    ));
    // An HTTP/1.1 client.
    assert_eq!(h1_echo(proxy.addr, "over h1").await.unwrap(), "over h1");
    // An HTTP/2 client (extended CONNECT to Palisade too).
    let io = w!(tokio::net::TcpStream::connect(proxy.addr)).unwrap();
    let (mut sender, conn) =
        w!(hyper::client::conn::http2::handshake::<_, _, Empty<bytes::Bytes>>(TokioExecutor::new(), TokioIo::new(io))).expect("h2 handshake");
    tokio::spawn(conn);
    let mut req =
        http::Request::builder().method(http::Method::CONNECT).uri("http://api.test/chat").header("sec-websocket-version", "13").body(Empty::new()).unwrap();
    req.extensions_mut().insert(hyper::ext::Protocol::from_static("websocket"));
    let resp = w!(sender.send_request(req)).expect("extended CONNECT");
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["sec-websocket-protocol"], "chat");
    let mut up = TokioIo::new(w!(hyper::upgrade::on(resp)).expect("the stream"));
    let mask = [9u8, 8, 7, 6];
    let mut frame = vec![0x81, 0x82];
    frame.extend_from_slice(&mask);
    frame.extend(b"h2".iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
    w!(up.write_all(&frame)).unwrap();
    let mut got = [0u8; 4];
    w!(up.read_exact(&mut got)).unwrap();
    assert_eq!(got, [0x81, 0x02, b'h', b'2']);

    assert_eq!(*seen.texts.lock().unwrap(), ["over h1", "h2"]);
    let connects = seen.connects.lock().unwrap().clone();
    assert_eq!(connects.len(), 2, "both handshakes went upstream as extended CONNECTs");
    for h in &connects {
        assert!(h.get("sec-websocket-key").is_none(), "RFC 8441 has no key: {h:?}");
        assert!(h.get("upgrade").is_none() && h.get("connection").is_none(), "{h:?}");
        assert_eq!(h["x-forwarded-for"], "127.0.0.1");
        assert!(h.get("x-request-id").is_some());
    }
    // Streams of the worker's one HTTP/2 connection, as plain requests are.
    assert_eq!(seen.connections.load(Ordering::SeqCst), 1);
    let r = get(proxy.addr, "api.test", "/plain").await;
    assert_eq!((r.status, r.text().as_str()), (200, "h2 ok"));
    assert_eq!(seen.connections.load(Ordering::SeqCst), 1);
    server.abort();
}

#[tokio::test]
async fn an_h2c_upstream_without_extended_connect_gets_an_http1_upgrade_to_the_same_port() {
    let (port, seen, server) = h2_ws_server(false, true, None).await;
    let proxy = Proxy::start(&cfg(&[], &h2_app("fallback", port)));
    // A plain request first: the HTTP/2 connection is open, its SETTINGS known.
    let r = get(proxy.addr, "api.test", "/plain").await;
    assert_eq!((r.status, r.text().as_str()), (200, "h2 ok"));
    assert_eq!(h1_echo(proxy.addr, "fallback").await.unwrap(), "fallback");
    assert!(seen.connects.lock().unwrap().is_empty(), "no extended CONNECT to an upstream that does not allow it");
    assert_eq!(seen.http1_upgrades.load(Ordering::SeqCst), 1);
    assert_eq!(*seen.texts.lock().unwrap(), ["fallback"]);
    // Also on a fresh connection (the handshake comes first: its SETTINGS are waited for).
    let proxy = Proxy::start(&cfg(&[], &h2_app("fallback-fresh", port)));
    assert_eq!(h1_echo(proxy.addr, "first").await.unwrap(), "first");
    assert_eq!(seen.http1_upgrades.load(Ordering::SeqCst), 2);
    server.abort();
}

#[tokio::test]
async fn an_http2_only_upstream_without_extended_connect_refuses_with_502() {
    let (port, seen, server) = h2_ws_server(false, false, None).await;
    let proxy = Proxy::start(&cfg(&[], &h2_app("h2-only", port)));
    let (_s, head) = tokio::task::spawn_blocking(move || raw_handshake(proxy.addr, "/chat")).await.unwrap();
    assert!(head.starts_with("HTTP/1.1 502"), "{head}");
    assert!(head.to_ascii_lowercase().contains("content-type: application/problem+json"), "{head}");
    assert!(seen.connects.lock().unwrap().is_empty());
    server.abort();
}

/// WebSockets take at most half the streams the upstream allows on the worker's HTTP/2
/// connection; beyond, each gets a connection of its own (closed when it ends), so plain
/// requests never queue behind them.
#[tokio::test]
async fn websockets_leave_half_the_upstream_streams_to_requests() {
    let (port, seen, server) = h2_ws_server(true, false, Some(2)).await;
    let proxy = Proxy::start(&format!(
        "workers: 1\nlisten:\n  - addr: 127.0.0.1:0\nserver:\n  shutdown_timeout: 500ms\napps:\n  - name: half-streams\n    upstream:\n      targets: [h2c://127.0.0.1:{port}]\n"
    ));
    let addr = proxy.addr;
    let open = |text: &'static str| {
        tokio::task::spawn_blocking(move || {
            let s = TcpStream::connect(addr).unwrap();
            s.set_read_timeout(Some(LIMIT)).unwrap();
            let mut req = tungstenite::client::IntoClientRequest::into_client_request("ws://api.test/chat").unwrap();
            req.headers_mut().insert("sec-websocket-protocol", "chat".parse().unwrap());
            let (mut ws, resp) = tungstenite::client(req, s).unwrap();
            assert_eq!(resp.status(), 101);
            ws.send(Message::text(text)).unwrap();
            assert_eq!(ws.read().unwrap(), Message::text(text));
            ws
        })
    };
    let first = open("one").await.unwrap();
    assert_eq!(seen.connections.load(Ordering::SeqCst), 1, "the first WebSocket is a stream of the worker's connection");
    let second = open("two").await.unwrap();
    assert_eq!(seen.connections.load(Ordering::SeqCst), 2, "the second gets a connection of its own");
    assert_eq!(seen.connects.lock().unwrap().len(), 2);
    // A plain request has its stream on the worker's connection.
    let r = get(proxy.addr, "api.test", "/plain").await;
    assert_eq!((r.status, r.text().as_str()), (200, "h2 ok"));
    assert_eq!(seen.connections.load(Ordering::SeqCst), 2);
    drop((first, second));
    server.abort();
}
