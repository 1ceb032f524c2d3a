//! HTTP/2 (h2c with prior knowledge, and over TLS via ALPN) and TLS certificate choice by SNI.

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls_pki_types::{CertificateDer, ServerName};
use tokio::net::TcpStream;

use crate::common::*;

struct Cert {
    der: CertificateDer<'static>,
}

/// A self-signed certificate for `name`, written as `<file>.pem` / `<file>.key` into `dir`.
fn cert(dir: &TempDir, file: &str, name: &str) -> Cert {
    let ck = rcgen::generate_simple_self_signed(vec![name.to_string()]).expect("rcgen");
    dir.write(&format!("{file}.pem"), ck.cert.pem());
    dir.write(&format!("{file}.key"), ck.signing_key.serialize_pem());
    Cert { der: ck.cert.der().clone() }
}

fn client_config(roots: &[&Cert], alpn: &[&[u8]]) -> Arc<rustls::ClientConfig> {
    let mut store = rustls::RootCertStore::empty();
    for c in roots {
        store.add(c.der.clone()).expect("add root");
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut cfg = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(store)
        .with_no_client_auth();
    cfg.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Arc::new(cfg)
}

async fn tls_connect(addr: SocketAddr, sni: &str, cfg: Arc<rustls::ClientConfig>) -> tokio_rustls::client::TlsStream<TcpStream> {
    let tcp = w!(TcpStream::connect(addr)).expect("connect");
    let connector = tokio_rustls::TlsConnector::from(cfg);
    w!(connector.connect(ServerName::try_from(sni.to_string()).unwrap(), tcp)).unwrap_or_else(|e| panic!("TLS handshake with SNI {sni}: {e}"))
}

/// A TLS listener (second, on 127.0.0.2: two listeners on 127.0.0.1:0 are refused as "listed
/// twice") next to a plain one (first), with certificates for a.example and
/// b.example (a.example first: the default).
fn tls_yaml(target: &str, http2: bool) -> String {
    format!(
        "workers: 1\nlisten:\n  - addr: 127.0.0.1:0\n  - addr: 127.0.0.2:0\n    http2: {http2}\n    tls:\n      certificates:\n        - {{cert: a.pem, key: a.key}}\n        - {{cert: b.pem, key: b.key}}\nserver:\n  shutdown_timeout: 500ms\n{}",
        one_app(target)
    )
}

type H2Sender = hyper::client::conn::http2::SendRequest<Full<Bytes>>;

async fn h2_handshake<S>(io: S) -> H2Sender
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (sender, conn) = w!(hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(io))).expect("h2 handshake");
    tokio::spawn(async move {
        let _ = conn.await;
    });
    sender
}

async fn h2_send(sender: &mut H2Sender, method: &str, uri: &str, body: &'static [u8]) -> (http::response::Parts, Bytes) {
    let req = http::Request::builder().method(method).uri(uri).header("x-test", "1").body(Full::new(Bytes::from_static(body))).unwrap();
    w!(sender.ready()).expect("h2 ready");
    let resp = w!(sender.send_request(req)).expect("h2 request");
    let (parts, body) = resp.into_parts();
    let bytes = w!(body.collect()).expect("h2 body").to_bytes();
    (parts, bytes)
}

#[tokio::test]
async fn h2c_with_prior_knowledge() {
    let mut up = Upstream::tcp(handler(|req| vec![Step::Write(ok(&format!("{} {}", req.method, req.target)))])).await;
    let proxy = Proxy::start(&cfg(&[], &format!("apps:\n  - name: h2\n    hosts: h2.test\n    upstream: {}\n", up.url())));
    let tcp = w!(TcpStream::connect(proxy.addr)).unwrap();
    let mut sender = h2_handshake(tcp).await;

    let (parts, body) = h2_send(&mut sender, "GET", "http://h2.test/h2?x=1", b"").await;
    assert_eq!(parts.status, 200);
    assert_eq!(parts.version, http::Version::HTTP_2);
    assert_eq!(&body[..], b"GET /h2?x=1");
    let rid = parts.headers.get("x-request-id").expect("x-request-id").to_str().unwrap().to_string();
    let got = up.next_req().await;
    assert_eq!(got.version, "HTTP/1.1");
    assert_eq!(got.header("host"), Some("h2.test"));
    assert_eq!(got.header("x-request-id"), Some(rid.as_str()));
    assert_eq!(got.header("x-forwarded-proto"), Some("http"));
    assert_eq!(got.header("x-test"), Some("1"));

    let (parts, body) = h2_send(&mut sender, "POST", "http://h2.test/post", b"h2 body bytes").await;
    assert_eq!(parts.status, 200);
    assert_eq!(&body[..], b"POST /post");
    let got = up.next_req().await;
    assert_eq!(got.body, b"h2 body bytes");
    assert_eq!(got.header("content-length"), Some("13"));

    // Concurrent streams on the one connection.
    let mut tasks = Vec::new();
    for i in 0..8 {
        let mut s = sender.clone();
        tasks.push(tokio::spawn(async move {
            let uri = format!("http://h2.test/c{i}");
            let req = http::Request::get(uri).body(Full::new(Bytes::new())).unwrap();
            let resp = s.send_request(req).await.expect("h2 request");
            let status = resp.status();
            let body = resp.into_body().collect().await.unwrap().to_bytes();
            (i, status, body)
        }));
    }
    for t in tasks {
        let (i, status, body) = w!(t).unwrap();
        assert_eq!(status, 200);
        assert_eq!(body, format!("GET /c{i}"));
    }
    assert_eq!(up.drain().len(), 8);

    // A generated response over HTTP/2 is a problem too.
    let (parts, body) = h2_send(&mut sender, "GET", "http://nowhere.test/", b"").await;
    assert_eq!(parts.status, 404);
    assert_eq!(parts.headers["content-type"], "application/problem+json");
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(v["code"], "route.no_app");
    assert_eq!(v["request_id"], parts.headers["x-request-id"].to_str().unwrap());
}

#[tokio::test]
async fn h2_over_tls_via_alpn() {
    let dir = TempDir::new();
    let a = cert(&dir, "a", "a.example");
    let b = cert(&dir, "b", "b.example");
    let mut up = Upstream::tcp(handler(|req| vec![Step::Write(ok(&format!("tls {}", req.target)))])).await;
    let proxy = Proxy::start_in(&tls_yaml(&up.url(), true), dir);
    let tls_addr = proxy.addrs[1];

    let tls = tls_connect(tls_addr, "a.example", client_config(&[&a, &b], &[b"h2", b"http/1.1"])).await;
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
    let mut sender = h2_handshake(tls).await;
    let (parts, body) = h2_send(&mut sender, "POST", "https://a.example/secure?q=2", b"secret").await;
    assert_eq!(parts.status, 200);
    assert_eq!(parts.version, http::Version::HTTP_2);
    assert_eq!(&body[..], b"tls /secure?q=2");
    let got = up.next_req().await;
    assert_eq!(got.header("x-forwarded-proto"), Some("https"));
    assert_eq!(got.header("host"), Some("a.example"));
    assert_eq!(got.body, b"secret");

    // HTTP/1.1 over TLS when the client offers only http/1.1.
    let tls = tls_connect(tls_addr, "b.example", client_config(&[&a, &b], &[b"http/1.1"])).await;
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"http/1.1"[..]));
    let mut c = Conn::new(tls);
    let r = c.roundtrip("GET /one HTTP/1.1\r\nHost: b.example\r\n\r\n").await;
    assert_eq!(r.text(), "tls /one");
    assert_eq!(up.next_req().await.header("x-forwarded-proto"), Some("https"));
}

#[tokio::test]
async fn h2_is_not_offered_when_disabled() {
    let dir = TempDir::new();
    let a = cert(&dir, "a", "a.example");
    let _b = cert(&dir, "b", "b.example");
    let up = Upstream::tcp(reply("ok")).await;
    let proxy = Proxy::start_in(&tls_yaml(&up.url(), false), dir);
    let tls = tls_connect(proxy.addrs[1], "a.example", client_config(&[&a], &[b"h2", b"http/1.1"])).await;
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"http/1.1"[..]));
    let mut c = Conn::new(tls);
    assert_eq!(c.roundtrip("GET / HTTP/1.1\r\nHost: a.example\r\n\r\n").await.status, 200);
}

#[tokio::test]
async fn sni_chooses_the_certificate() {
    let dir = TempDir::new();
    let a = cert(&dir, "a", "a.example");
    let b = cert(&dir, "b", "b.example");
    let up = Upstream::tcp(reply("ok")).await;
    let proxy = Proxy::start_in(&tls_yaml(&up.url(), true), dir);
    let tls_addr = proxy.addrs[1];
    for (sni, want, name) in [("a.example", &a, "a.example"), ("b.example", &b, "b.example"), ("B.Example", &b, "b.example")] {
        let tls = tls_connect(tls_addr, sni, client_config(&[&a, &b], &[b"http/1.1"])).await;
        let presented = tls.get_ref().1.peer_certificates().expect("peer certificate")[0].clone();
        assert!(presented == want.der, "SNI {sni}: wrong certificate");
        assert!(find(presented.as_ref(), name.as_bytes()).is_some(), "SAN {name} in the presented certificate");
        let mut c = Conn::new(tls);
        assert_eq!(c.roundtrip(format!("GET / HTTP/1.1\r\nHost: {name}\r\n\r\n")).await.status, 200);
    }
    // An unknown name, and no SNI at all (an IP address), get the default (first) certificate.
    for sni in ["c.example", "127.0.0.1"] {
        let rec = Arc::new(Recorder::default());
        let tcp = w!(TcpStream::connect(tls_addr)).unwrap();
        let connector = tokio_rustls::TlsConnector::from(recording_config(rec.clone()));
        let _tls = w!(connector.connect(ServerName::try_from(sni.to_string()).unwrap(), tcp)).expect("handshake");
        let presented = rec.0.lock().unwrap().clone().expect("a certificate was presented");
        assert!(presented == a.der, "SNI {sni}: the default certificate is the first one");
    }
    // A client that validates names rejects the default certificate for an unknown name.
    let tcp = w!(TcpStream::connect(tls_addr)).unwrap();
    let connector = tokio_rustls::TlsConnector::from(client_config(&[&a, &b], &[b"http/1.1"]));
    let err = w!(connector.connect(ServerName::try_from("c.example".to_string()).unwrap(), tcp)).expect_err("c.example is not in any certificate");
    assert!(err.to_string().to_lowercase().contains("certificate"), "{err}");
    // Plain HTTP on the TLS port is not served.
    let mut c = Conn::connect(tls_addr).await;
    c.send_lossy("GET / HTTP/1.1\r\nHost: a.example\r\n\r\n").await;
    let got = c.rest().await;
    assert!(!String::from_utf8_lossy(&got).starts_with("HTTP/1.1 200"), "plaintext served on the TLS listener");
}

/// Accepts any server certificate and records the one presented.
#[derive(Debug, Default)]
struct Recorder(std::sync::Mutex<Option<CertificateDer<'static>>>);

impl rustls::client::danger::ServerCertVerifier for Recorder {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: rustls_pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        *self.0.lock().unwrap() = Some(end_entity.clone().into_owned());
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &rustls::crypto::ring::default_provider().signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &rustls::crypto::ring::default_provider().signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        rustls::crypto::ring::default_provider().signature_verification_algorithms.supported_schemes()
    }
}

fn recording_config(rec: Arc<Recorder>) -> Arc<rustls::ClientConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let cfg = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .dangerous()
        .with_custom_certificate_verifier(rec)
        .with_no_client_auth();
    Arc::new(cfg)
}

async fn h2_public_app() -> (Upstream, Proxy, H2Sender) {
    let up = Upstream::tcp(reply("public")).await;
    let rest = format!("apps:\n  - name: public\n    hosts: public.example\n    upstream: {}\n", up.url());
    let proxy = Proxy::start(&cfg(&["max_header_size: 1KiB"], &rest));
    let tcp = w!(TcpStream::connect(proxy.addr)).unwrap();
    let sender = h2_handshake(tcp).await;
    (up, proxy, sender)
}

#[tokio::test]
async fn h2_authority_wins_over_a_conflicting_host_header() {
    let (mut up, _proxy, mut sender) = h2_public_app().await;
    let req = http::Request::get("http://public.example/x").header("host", "admin.example").body(Full::new(Bytes::new())).unwrap();
    let resp = w!(sender.send_request(req)).expect("h2 request");
    if resp.status() == 200 {
        let got = up.next_req().await;
        assert_eq!(got.header("host"), Some("public.example"), "{}", got.raw_head);
    } else {
        assert_eq!(resp.status(), 400);
    }
}

#[tokio::test]
async fn h2_oversized_headers_get_a_problem_response() {
    let (mut up, _proxy, mut sender) = h2_public_app().await;
    let req = http::Request::get("http://public.example/x").header("x-big", "b".repeat(3000)).body(Full::new(Bytes::new())).unwrap();
    w!(sender.ready()).unwrap();
    let resp = w!(sender.send_request(req)).expect("h2 request");
    let (parts, body) = resp.into_parts();
    let body = w!(body.collect()).unwrap().to_bytes();
    assert_eq!(parts.status, 431);
    assert!(up.try_req().is_none());
    assert_eq!(parts.headers.get("content-type").map(|v| v.to_str().unwrap()), Some("application/problem+json"));
    assert!(parts.headers.contains_key("x-request-id"));
    let v: serde_json::Value = serde_json::from_slice(&body).expect("problem JSON body");
    assert_eq!(v["code"], "http.headers_too_large");
}

#[tokio::test]
async fn h2_limits_and_upstream_failures_are_problem_responses() {
    let big = payload(300_000);
    let b2 = big.clone();
    let up = Upstream::tcp(handler(move |req| match req.path() {
        "/big" => vec![Step::Write(response(200, &[], &b2))],
        "/reset" => vec![Step::Reset],
        _ => vec![Step::Write(ok("x"))],
    }))
    .await;
    let rest = format!("apps:\n  - name: a\n    hosts: h2.test\n    upstream: {}\n    limits: {{max_body_size: 1KiB, inspect_body: 1KiB}}\n", up.url());
    let proxy = Proxy::start(&cfg(&[], &rest));
    let tcp = w!(TcpStream::connect(proxy.addr)).unwrap();
    let mut sender = h2_handshake(tcp).await;
    // A large response through HTTP/2 flow control.
    let (parts, body) = h2_send(&mut sender, "GET", "http://h2.test/big", b"").await;
    assert_eq!(parts.status, 200);
    assert!(body[..] == big[..], "large h2 response differs");
    // Body over the limit.
    static BIG_BODY: [u8; 2000] = [b'a'; 2000];
    let (parts, body) = h2_send(&mut sender, "POST", "http://h2.test/x", &BIG_BODY).await;
    assert_eq!(parts.status, 413);
    assert_eq!(parts.headers["content-type"], "application/problem+json");
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(v["code"], "http.body_too_large");
    // Upstream reset.
    let (parts, body) = h2_send(&mut sender, "GET", "http://h2.test/reset", b"").await;
    assert_eq!(parts.status, 502);
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(v["request_id"], parts.headers["x-request-id"].to_str().unwrap());
    // The connection still works.
    let (parts, _) = h2_send(&mut sender, "GET", "http://h2.test/x", b"").await;
    assert_eq!(parts.status, 200);
}
