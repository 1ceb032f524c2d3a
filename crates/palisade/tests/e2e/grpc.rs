//! gRPC through Palisade to HTTP/2 upstreams: a real gRPC client and server (Python `grpcio`,
//! in the venv `scripts/test` makes under `target/grpc-venv`; the tests skip with a reason when
//! it is missing), over `h2c://` and `https://` (ALPN h2). Unary and bidirectional streaming
//! calls with their trailers, a blocked message answered with `grpc-status: 7`, gRPC health
//! checks; malformed frames (sent with hyper's HTTP/2 client) and an upstream that does not speak
//! HTTP/2.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::common::*;

/// The venv's Python, when it exists and has grpcio.
fn python() -> Option<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let target = std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| root.join("target"));
    let py = [target.join("grpc-venv/bin/python"), root.join("target/grpc-venv/bin/python")].into_iter().find(|p| p.exists());
    let Some(py) = py else {
        eprintln!(
            "SKIP: no grpcio venv under target/grpc-venv (scripts/test makes it: python3 -m venv target/grpc-venv && target/grpc-venv/bin/pip install grpcio)"
        );
        return None;
    };
    let ok = Command::new(&py).args(["-c", "import grpc"]).stderr(Stdio::null()).status().is_ok_and(|s| s.success());
    if !ok {
        eprintln!("SKIP: {} cannot import grpc", py.display());
        return None;
    }
    Some(py)
}

fn peer_script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/e2e/grpc_peer.py")
}

fn no_proxy(c: &mut Command) -> &mut Command {
    for v in ["http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "grpc_proxy", "all_proxy", "ALL_PROXY"] {
        c.env_remove(v);
    }
    c
}

/// A grpcio server; killed on drop.
struct GrpcServer {
    child: Child,
    port: u16,
}

impl GrpcServer {
    fn start(py: &PathBuf, tls: Option<(&std::path::Path, &std::path::Path)>) -> GrpcServer {
        let mut c = Command::new(py);
        c.arg(peer_script()).arg("server");
        if let Some((cert, key)) = tls {
            c.arg("--cert").arg(cert).arg("--key").arg(key);
        }
        let mut child = no_proxy(&mut c).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit()).spawn().expect("start grpc server");
        let mut line = String::new();
        BufReader::new(child.stdout.as_mut().unwrap()).read_line(&mut line).expect("server port");
        let port = line.trim().parse().unwrap_or_else(|_| panic!("grpc server did not start: {line:?}"));
        GrpcServer { child, port }
    }
}

impl Drop for GrpcServer {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Call `method` through `target` with the given messages; the client's JSON verdict.
async fn call(py: &PathBuf, target: &str, method: &str, msgs: &[Vec<u8>], tls: Option<(&std::path::Path, &str)>) -> serde_json::Value {
    call_args(py, target, method, msgs.iter().map(|m| hex(m)).collect(), tls).await
}

/// `call` with the client's message arguments as they are (`HEX*N` repeats).
async fn call_args(py: &PathBuf, target: &str, method: &str, msgs: Vec<String>, tls: Option<(&std::path::Path, &str)>) -> serde_json::Value {
    let mut c = std::process::Command::new(py);
    c.arg(peer_script()).arg("client").arg(target).arg(method);
    for m in msgs {
        c.arg(m);
    }
    if let Some((ca, name)) = tls {
        c.arg("--ca").arg(ca).arg("--name").arg(name);
    }
    no_proxy(&mut c);
    let out = tokio::task::spawn_blocking(move || c.output()).await.unwrap().expect("run grpc client");
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(text.trim()).unwrap_or_else(|_| panic!("client output: {text}\nstderr: {}", String::from_utf8_lossy(&out.stderr)))
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|b| format!("{b:02x}")).collect()
}

/// A message `{1: text}` in the protobuf wire format.
fn msg(text: &str) -> Vec<u8> {
    let mut m = vec![0x0a];
    let mut n = text.len();
    while n >= 0x80 {
        m.push((n as u8) | 0x80);
        n >>= 7;
    }
    m.push(n as u8);
    m.extend_from_slice(text.as_bytes());
    m
}

/// One app in front of `target`, on a listener that takes HTTP/2 (h2c) as gRPC clients speak it.
fn app(target: &str) -> String {
    format!("workers: 1\nlisten:\n  - addr: 127.0.0.1:0\n    http2: true\nserver:\n  shutdown_timeout: 500ms\napps:\n  - name: grpc\n    upstream: {target}\n")
}

#[tokio::test]
async fn unary_and_bidi_streaming_calls_pass_with_their_trailers_over_h2c() {
    let Some(py) = python() else { return };
    let server = GrpcServer::start(&py, None);
    let proxy = Proxy::start(&app(&format!("h2c://127.0.0.1:{}", server.port)));
    let target = proxy.addr.to_string();

    let r = call(&py, &target, "/test.Echo/Unary", &[msg("hello")], None).await;
    assert_eq!(r["code"], "OK", "{r}");
    assert_eq!(r["responses"][0], hex(&msg("hello")));
    assert_eq!(r["trailers"]["x-trailer"], "t-unary", "{r}");

    let msgs: Vec<Vec<u8>> = (0..5).map(|i| msg(&format!("message number {i}"))).collect();
    let r = call(&py, &target, "/test.Echo/Bidi", &msgs, None).await;
    assert_eq!(r["code"], "OK", "{r}");
    let got: Vec<String> = r["responses"].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string()).collect();
    assert_eq!(got, msgs.iter().map(|m| hex(m)).collect::<Vec<_>>());
    assert_eq!(r["trailers"]["x-trailer"], "t-bidi", "{r}");

    // An empty message, and a large one (many DATA frames, several flow-control windows).
    // (660 KB: field 1 repeated 60,000 times.)
    let part = hex(&msg("abcdefgh "));
    let r = call_args(&py, &target, "/test.Echo/Unary", vec![format!("{part}*60000")], None).await;
    assert_eq!(r["code"], "OK", "{}", r["code"]);
    assert_eq!(r["responses"][0].as_str().unwrap(), part.repeat(60_000));
    let r = call(&py, &target, "/test.Echo/Unary", &[Vec::new()], None).await;
    assert_eq!(r["code"], "OK", "{r}");
    // An unknown method: the upstream's own status passes through.
    let r = call(&py, &target, "/test.Echo/Nope", &[msg("x")], None).await;
    assert_eq!(r["code"], "UNIMPLEMENTED", "{r}");
}

#[tokio::test]
async fn an_attack_in_a_message_is_blocked_with_permission_denied() {
    let Some(py) = python() else { return };
    let server = GrpcServer::start(&py, None);
    let proxy = Proxy::start(&(app(&format!("h2c://127.0.0.1:{}", server.port)) + "events:\n  sink: jsonl:ev.jsonl\n"));
    let target = proxy.addr.to_string();
    let attack = msg("1' UNION SELECT username, password FROM users --");

    let r = call(&py, &target, "/test.Echo/Unary", std::slice::from_ref(&attack), None).await;
    assert_eq!(r["code"], "PERMISSION_DENIED", "{r}");
    let details = r["details"].as_str().unwrap();
    assert!(details.contains("request id") && details.contains("sql"), "{details}");

    // In a stream: the messages before it pass and are answered; the call ends with status 7.
    let msgs = vec![msg("first"), msg("second"), attack.clone(), msg("never sent")];
    let r = call(&py, &target, "/test.Echo/Bidi", &msgs, None).await;
    assert_eq!(r["code"], "PERMISSION_DENIED", "{r}");
    assert!(r["responses"].as_array().unwrap().len() <= 2, "{r}");

    // Nested: the string is found at its field path.
    let mut nested = vec![0x1a];
    nested.push(attack.len() as u8);
    nested.extend_from_slice(&attack);
    let r = call(&py, &target, "/test.Echo/Unary", &[nested], None).await;
    assert_eq!(r["code"], "PERMISSION_DENIED", "{r}");

    // Compressed with gzip (declared in grpc-encoding): judged decompressed.
    let padded = msg(&format!("{} 1' UNION SELECT username, password FROM users --", "lorem ipsum dolor sit amet ".repeat(40)));
    let r = call_args(&py, &target, "/test.Echo/Unary", vec![hex(&padded), "--gzip".into()], None).await;
    assert_eq!(r["code"], "PERMISSION_DENIED", "{r}");
    let fine = msg(&"lorem ipsum dolor sit amet ".repeat(40));
    let r = call_args(&py, &target, "/test.Echo/Unary", vec![hex(&fine), "--gzip".into()], None).await;
    assert_eq!(r["code"], "OK", "{r}");
    assert_eq!(r["responses"][0], hex(&fine));

    // A harmless message on the same proxy still passes.
    let r = call(&py, &target, "/test.Echo/Unary", &[msg("select a plan from the list")], None).await;
    assert_eq!(r["code"], "OK", "{r}");

    // Each block is an event with the message's location, also the one stopped mid-stream
    // after the response began (recorded when the call ended).
    let events = block_events(&proxy, 4).await;
    assert_eq!(events.len(), 4, "{events:?}");
    for e in &events {
        assert_eq!(e["verdict"], "block", "{e}");
        assert_eq!(e["method"], "POST", "{e}");
        let text = e.to_string();
        assert!(text.contains("grpc.1") || text.contains("grpc.3.1"), "{e}");
    }
    assert!(events.iter().any(|e| e["path"] == "/test.Echo/Bidi"), "{events:?}");
}

#[tokio::test]
async fn an_access_rule_block_answers_before_the_upstream_is_contacted() {
    let Some(py) = python() else { return };
    let server = GrpcServer::start(&py, None);
    let yaml = app(&format!("h2c://127.0.0.1:{}", server.port)) + "    access:\n      ip_deny: [127.0.0.0/8]\n";
    let proxy = Proxy::start(&yaml);
    let r = call(&py, &proxy.addr.to_string(), "/test.Echo/Unary", &[msg("hello")], None).await;
    assert_eq!(r["code"], "PERMISSION_DENIED", "{r}");
    assert!(r["details"].as_str().unwrap().contains("request id"), "{r}");
}

fn self_signed(dir: &TempDir, name: &str) -> (PathBuf, PathBuf) {
    let ck = rcgen::generate_simple_self_signed(vec![name.to_string()]).expect("rcgen");
    (dir.write("up.pem", ck.cert.pem()), dir.write("up.key", ck.signing_key.serialize_pem()))
}

#[tokio::test]
async fn an_https_upstream_is_spoken_to_over_http2_chosen_by_alpn() {
    let Some(py) = python() else { return };
    let dir = TempDir::new();
    let (cert, key) = self_signed(&dir, "grpc.test");
    let server = GrpcServer::start(&py, Some((&cert, &key)));
    let yaml = format!(
        "workers: 1\nlisten:\n  - addr: 127.0.0.1:0\n    http2: true\nserver:\n  shutdown_timeout: 500ms\napps:\n  - name: grpc\n    upstream:\n      targets: [https://127.0.0.1:{}]\n      tls: {{ca: {}, server_name: grpc.test}}\n",
        server.port,
        cert.display()
    );
    let proxy = Proxy::start(&yaml);
    let target = proxy.addr.to_string();
    let r = call(&py, &target, "/test.Echo/Unary", &[msg("over tls")], None).await;
    assert_eq!(r["code"], "OK", "{r}");
    assert_eq!(r["trailers"]["x-trailer"], "t-unary", "{r}");
    let r = call(&py, &target, "/test.Echo/Bidi", &[msg("a"), msg("b")], None).await;
    assert_eq!(r["code"], "OK", "{r}");
    assert_eq!(r["responses"].as_array().unwrap().len(), 2);

    // A certificate for another name is refused: UNAVAILABLE, never a call in the clear.
    let yaml = yaml.replace("server_name: grpc.test", "server_name: other.test");
    let proxy = Proxy::start(&yaml);
    let r = call(&py, &proxy.addr.to_string(), "/test.Echo/Unary", &[msg("x")], None).await;
    assert_eq!(r["code"], "UNAVAILABLE", "{r}");
}

#[tokio::test]
async fn grpc_health_checks_take_a_not_serving_target_out() {
    let Some(py) = python() else { return };
    let server = GrpcServer::start(&py, None);
    let hc = |service: &str| {
        format!(
            "workers: 1\nlisten:\n  - addr: 127.0.0.1:0\n    http2: true\nserver:\n  shutdown_timeout: 500ms\napps:\n  - name: grpc\n    upstream:\n      targets: [h2c://127.0.0.1:{}]\n      health_check: {{grpc: true, service: '{service}', interval: 50ms, fall: 1, rise: 1}}\n",
            server.port
        )
    };
    let proxy = Proxy::start(&hc("down"));
    let snap = proxy.snapshot();
    eventually("target marked unhealthy (NOT_SERVING)", || !snap.upstreams[0].targets[0].is_healthy()).await;
    drop(proxy);
    let proxy = Proxy::start(&hc(""));
    let snap = proxy.snapshot();
    // It starts healthy; give it several checks and see that it stays so.
    tokio::time::sleep(std::time::Duration::from_millis(400)).await;
    assert!(snap.upstreams[0].targets[0].is_healthy());
}

/// A raw HTTP/2 request to Palisade with hyper's client: the response head and its trailers.
async fn h2_post(addr: SocketAddr, path: &str, body: Vec<u8>) -> (http::response::Parts, Bytes, Option<http::HeaderMap>) {
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut send, conn) = hyper::client::conn::http2::handshake(hyper_util::rt::TokioExecutor::new(), hyper_util::rt::TokioIo::new(tcp)).await.unwrap();
    tokio::spawn(conn);
    let req = http::Request::post(format!("http://{addr}{path}"))
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .body(Full::new(Bytes::from(body)))
        .unwrap();
    let resp = within("response", send.send_request(req)).await.unwrap();
    let (parts, body) = resp.into_parts();
    let collected = within("body", body.collect()).await.unwrap();
    let trailers = collected.trailers().cloned();
    (parts, collected.to_bytes(), trailers)
}

#[tokio::test]
async fn a_frame_with_a_wrong_length_gets_a_clean_grpc_status() {
    let Some(py) = python() else { return };
    let server = GrpcServer::start(&py, None);
    let proxy = Proxy::start(&app(&format!("h2c://127.0.0.1:{}", server.port)));
    // Declares 100 bytes, carries 5.
    let (head, body, _) = h2_post(proxy.addr, "/test.Echo/Unary", vec![0, 0, 0, 0, 100, 1, 2, 3, 4, 5]).await;
    assert_eq!(head.status, 200);
    assert_eq!(head.headers["grpc-status"], "13", "{head:?}");
    assert!(head.headers["grpc-message"].to_str().unwrap().starts_with("grpc.frame_truncated"), "{head:?}");
    assert!(body.is_empty());
    // An invalid compressed flag.
    let (head, _, _) = h2_post(proxy.addr, "/test.Echo/Unary", vec![7, 0, 0, 0, 1, 1]).await;
    assert_eq!(head.headers["grpc-status"], "13", "{head:?}");
    assert!(head.headers["grpc-message"].to_str().unwrap().starts_with("grpc.frame_flag"), "{head:?}");
    // A message larger than inspect_body (1 MiB by default): RESOURCE_EXHAUSTED.
    let (head, _, _) = h2_post(proxy.addr, "/test.Echo/Unary", vec![0, 0x10, 0, 0, 0, 1]).await;
    assert_eq!(head.headers["grpc-status"], "8", "{head:?}");
    // The proxy still serves a well-formed call after them.
    let mut ok = vec![0, 0, 0, 0, msg("fine").len() as u8];
    ok.extend(msg("fine"));
    let (head, body, trailers) = h2_post(proxy.addr, "/test.Echo/Unary", ok.clone()).await;
    assert_eq!(head.status, 200);
    assert_eq!(&body[..], &ok[..]);
    assert_eq!(trailers.expect("trailers")["grpc-status"], "0");
}

/// An HTTP/1.1 server on an `h2c://` URL: it answers the HTTP/2 preface with a 400 and closes,
/// as HTTP/1 servers do.
#[tokio::test]
async fn an_upstream_that_does_not_speak_http2_is_unavailable_not_a_hang() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepting = tokio::spawn(async move {
        loop {
            let Ok((mut s, _)) = listener.accept().await else { return };
            tokio::spawn(async move {
                let mut buf = [0u8; 1024];
                let _ = s.read(&mut buf).await;
                let _ = s.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n").await;
            });
        }
    });
    let proxy = Proxy::start(&app(&format!("h2c://127.0.0.1:{port}")));
    let mut ok = vec![0, 0, 0, 0, msg("x").len() as u8];
    ok.extend(msg("x"));
    let (head, _, _) = h2_post(proxy.addr, "/test.Echo/Unary", ok).await;
    assert_eq!(head.status, 200);
    assert_eq!(head.headers["grpc-status"], "14", "{head:?}");
    assert!(head.headers["grpc-message"].to_str().unwrap().starts_with("upstream."), "{head:?}");
    // A plain HTTP request gets a 502 problem response.
    let r = get(proxy.addr, "x", "/").await;
    assert_problem(&r, 502, "upstream.bad_response");
    accepting.abort();
}

fn echo_descriptor() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/e2e/grpc_echo.protoset")
}

/// A length-delimited field.
fn field(number: u8, bytes: &[u8]) -> Vec<u8> {
    let mut m = vec![number << 3 | 2];
    let mut n = bytes.len();
    while n >= 0x80 {
        m.push((n as u8) | 0x80);
        n >>= 7;
    }
    m.push(n as u8);
    m.extend_from_slice(bytes);
    m
}

/// With the app's descriptor set (`grpc_echo.proto`), values are located by field name: the
/// events name `grpc.profile.name`, not `grpc.3.1`; a method the set does not hold is read
/// without it.
#[tokio::test]
async fn with_a_descriptor_set_blocked_values_are_located_by_field_name() {
    let Some(py) = python() else { return };
    let server = GrpcServer::start(&py, None);
    let yaml = app(&format!("h2c://127.0.0.1:{}", server.port))
        + &format!("    grpc:\n      descriptor_set: {}\nevents:\n  sink: jsonl:ev.jsonl\n", echo_descriptor().display());
    let proxy = Proxy::start(&yaml);
    let target = proxy.addr.to_string();
    let attack = "1' UNION SELECT username, password FROM users --";

    // EchoRequest { text: "hello", count: 3, profile: { name: "Ann", labels: {"team": "core"} } }
    let labels = [field(1, b"team"), field(2, b"core")].concat();
    let profile = [field(1, b"Ann"), field(2, &labels)].concat();
    let fine = [field(1, b"hello"), vec![2 << 3, 3], field(3, &profile)].concat();
    let r = call(&py, &target, "/test.Echo/Unary", std::slice::from_ref(&fine), None).await;
    assert_eq!(r["code"], "OK", "{r}");
    assert_eq!(r["responses"][0], hex(&fine));

    // In the nested message; in a map value; in a streamed message's top-level field.
    let nested = [field(1, b"hello"), field(3, &field(1, attack.as_bytes()))].concat();
    let r = call(&py, &target, "/test.Echo/Unary", &[nested], None).await;
    assert_eq!(r["code"], "PERMISSION_DENIED", "{r}");
    let in_map = field(3, &field(2, &[field(1, b"env"), field(2, attack.as_bytes())].concat()));
    let r = call(&py, &target, "/test.Echo/Unary", &[in_map], None).await;
    assert_eq!(r["code"], "PERMISSION_DENIED", "{r}");
    let r = call(&py, &target, "/test.Echo/Bidi", &[fine.clone(), field(1, attack.as_bytes())], None).await;
    assert_eq!(r["code"], "PERMISSION_DENIED", "{r}");
    // A method the descriptor set does not describe: the scan without types.
    let r = call(&py, &target, "/test.Echo/Other", &[field(3, &field(1, attack.as_bytes()))], None).await;
    assert_eq!(r["code"], "PERMISSION_DENIED", "{r}");

    let events = block_events(&proxy, 4).await;
    let located = |path: &str, location: &str| events.iter().any(|e| e["path"] == path && e.to_string().contains(&format!("\"{location}\"")));
    assert!(located("/test.Echo/Unary", "grpc.profile.name"), "{events:?}");
    assert!(located("/test.Echo/Unary", "grpc.profile.labels.env"), "{events:?}");
    assert!(located("/test.Echo/Bidi", "grpc.text"), "{events:?}");
    assert!(located("/test.Echo/Other", "grpc.3.1"), "{events:?}");
}

/// A descriptor set that cannot be read, or is not one, is a configuration error naming the
/// key and the reason.
#[test]
fn a_bad_descriptor_set_is_a_configuration_error() {
    let dir = TempDir::new();
    let source = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/e2e/grpc_echo.proto");
    let garbage = dir.write("garbage.pb", [0x0a, 0xff, 0xff, 0xff]);
    for (file, want) in [
        (source, "a .proto source file?"),
        (dir.join("missing.protoset"), "cannot read the gRPC descriptor set"),
        (garbage, "not a usable gRPC descriptor set"),
    ] {
        let yaml = app("h2c://127.0.0.1:9") + &format!("    grpc:\n      descriptor_set: {}\n", file.display());
        let err = palisade_proxy::Snapshot::build(parse(&yaml, dir.path()), 0, &palisade::stages::factory(palisade::stages::Use::Serve))
            .err()
            .expect("a configuration error")
            .to_string();
        assert!(err.contains("apps[0].grpc.descriptor_set") && err.contains(want), "{err}");
    }
}

/// The events of `ev.jsonl` once there are at least `n` (the pipeline flushed each time).
async fn block_events(proxy: &Proxy, n: usize) -> Vec<serde_json::Value> {
    let shared = proxy.running().shared();
    let pipeline = shared.events.as_ref().expect("events are on");
    let mut events: Vec<serde_json::Value> = Vec::new();
    eventually(&format!("{n} block events"), || {
        assert!(pipeline.flush(LIMIT));
        let text = std::fs::read_to_string(proxy.dir.join("ev.jsonl")).unwrap_or_default();
        events = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        events.len() >= n
    })
    .await;
    events
}

/// A length-prefixed message `{1: text}`.
fn framed(text: &str) -> Vec<u8> {
    let m = msg(text);
    let mut f = vec![0];
    f.extend_from_slice(&(m.len() as u32).to_be_bytes());
    f.extend(m);
    f
}

/// A gRPC-Web call as a browser makes it (HTTP/1.1 POST): the response.
async fn grpc_web(addr: SocketAddr, ctype: &str, body: &[u8]) -> Resp {
    let mut req = format!(
        "POST /test.Echo/Unary HTTP/1.1\r\nHost: api.test\r\nContent-Type: {ctype}\r\nX-Grpc-Web: 1\r\nAccept: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    req.extend_from_slice(body);
    raw(addr, req).await
}

/// gRPC-Web calls (binary and text mode) are judged by their messages as gRPC calls are: a
/// block is answered as gRPC-Web clients read it (HTTP 200, the call's content type,
/// `grpc-status` and `grpc-message` in the head, no message), before the upstream is contacted;
/// an allowed call reaches the upstream as it was sent. Malformed bodies (not base64, a length
/// prefix longer than the message) get `grpc-status: 13` with their reason code.
#[tokio::test]
async fn grpc_web_calls_are_judged_by_their_messages_and_blocked_as_grpc_web_clients_expect() {
    let mut up = Upstream::tcp(reply("upstream answer")).await;
    let proxy = Proxy::start(&cfg(&[], &one_app(&up.url())));
    let attack = framed("1' UNION SELECT username, password FROM users --");
    let fine = framed("select a plan from the list");
    let blocked = |r: &Resp, ctype: &str, status: &str, code: &str| {
        assert_eq!(r.status, 200, "{}", r.dump());
        assert_eq!(r.header("content-type"), Some(ctype), "{}", r.dump());
        assert_eq!(r.header("grpc-status"), Some(status), "{}", r.dump());
        let m = r.header("grpc-message").unwrap_or_default();
        assert!(m.starts_with(code) && m.contains("request id"), "{}", r.dump());
        assert!(r.body.is_empty(), "{}", r.dump());
    };
    // Binary mode.
    let r = grpc_web(proxy.addr, "application/grpc-web+proto", &attack).await;
    blocked(&r, "application/grpc-web", "7", "detect.sqli");
    // Text mode: the frames in base64; also with each message encoded (and padded) on its own.
    let r = grpc_web(proxy.addr, "application/grpc-web-text", base64(&attack).as_bytes()).await;
    blocked(&r, "application/grpc-web-text", "7", "detect.sqli");
    let two = format!("{}{}", base64(&fine), base64(&attack));
    assert!(base64(&fine).ends_with('='), "the first piece is padded: {two}");
    let r = grpc_web(proxy.addr, "application/grpc-web-text+proto", two.as_bytes()).await;
    blocked(&r, "application/grpc-web-text", "7", "detect.sqli");
    // Malformed.
    let r = grpc_web(proxy.addr, "application/grpc-web-text", b"AAAA*AAA").await;
    blocked(&r, "application/grpc-web-text", "13", "grpc.web_text_base64");
    let r = grpc_web(proxy.addr, "application/grpc-web", &[0, 0, 0, 0, 100, 1, 2, 3]).await;
    blocked(&r, "application/grpc-web", "13", "grpc.frame_truncated");
    let r = grpc_web(proxy.addr, "application/grpc-web-text", base64(&[0, 0, 0, 0, 100, 1, 2, 3]).as_bytes()).await;
    blocked(&r, "application/grpc-web-text", "13", "grpc.frame_truncated");
    assert!(up.try_req().is_none(), "no blocked call reached the upstream");
    // Allowed calls pass as they were sent.
    let r = grpc_web(proxy.addr, "application/grpc-web", &fine).await;
    assert_eq!((r.status, r.text().as_str()), (200, "upstream answer"), "{}", r.dump());
    let req = w!(up.next_req());
    assert_eq!((req.header("content-type"), &req.body), (Some("application/grpc-web"), &fine));
    let text = format!("{}{}", base64(&fine), base64(&framed("and another")));
    let r = grpc_web(proxy.addr, "application/grpc-web-text", text.as_bytes()).await;
    assert_eq!((r.status, r.text().as_str()), (200, "upstream answer"), "{}", r.dump());
    let req = w!(up.next_req());
    assert_eq!((req.header("content-type"), req.body.as_slice()), (Some("application/grpc-web-text"), text.as_bytes()));
}
