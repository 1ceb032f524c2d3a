//! WebSocket proxying: the handshake, forwarded once every stage has allowed it, and the relay
//! of frames both ways with limits and optional inspection of the client's text messages.
//!
//! - HTTP/1.1: a `GET` with `Connection: Upgrade` and `Upgrade: websocket`. HTTP/2: an RFC 8441
//!   extended CONNECT (`:protocol = websocket`), judged by the stages as the `GET` it stands for.
//! - Upstream, whatever the client spoke: an HTTP/2 upstream whose SETTINGS allow extended
//!   CONNECT gets one, as a stream of the worker's connection ([`crate::h2up::websocket`]);
//!   any other gets an HTTP/1.1 upgrade on a fresh connection of its own (never pooled; TLS
//!   offering only `http/1.1` for `https://`), with a `Sec-WebSocket-Key` of Palisade's own
//!   for an HTTP/2 client, whose accept value the upstream must return. An HTTP/2 upstream
//!   without extended CONNECT is sent that upgrade too, to the same target, and the log says
//!   so (and why, when it fails). Anything but an acceptance (a `101` with a valid accept
//!   value, a `2xx` to an extended CONNECT) is answered as an ordinary response.
//! - Frames are read as they pass (headers only, payloads copied through untouched), so the
//!   limits hold whatever `inspect` says: a message larger than `max_message` closes with 1009,
//!   a malformed frame with 1002. With `inspect: text`, the client's text messages are held
//!   until complete and judged by the stages ([`palisade_core::Stage::check_message`]): a block
//!   closes with 1008 and records an event located at `ws.message`. Compression extensions are
//!   then not offered to the upstream (compressed messages could not be judged).
//! - A connection closes (1001) after `idle_timeout` without a frame either way and after
//!   `max_lifetime`. It keeps the configuration snapshot of its handshake: a reload applies to
//!   connections opened after it. On shutdown, open connections get the drain time
//!   (`server.shutdown_timeout`, less a margin for the close handshake) to finish, then a 1001
//!   close frame both ways.
//!
//! Close codes sent by Palisade: to the side at fault the code of the fault (1002, 1007, 1008,
//! 1009); to the other side the same code when the client was at fault, 1014 (bad gateway)
//! when the upstream was.

use std::borrow::Cow;
use std::future::{poll_fn, Future};
use std::io::Cursor;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use http::{header, HeaderMap, HeaderName, HeaderValue, Method, Request, Response, StatusCode, Uri, Version};
use palisade_config::WsInspect;
use palisade_core::{Reason, RequestView};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpStream, UnixStream};
use tokio::sync::watch;
use tokio::time::Instant;
use tungstenite::protocol::frame::coding::{Control, Data, OpCode};
use tungstenite::protocol::frame::FrameHeader;

use crate::body::ClientBody;
use crate::code;
use crate::h2up::WsAnswer;
use crate::io::Stream;
use crate::metrics::WsClose;
use crate::problem;
use crate::raw_head::RawRequestHead;
use crate::record::{self, Captured, Record};
use crate::request_id::RequestId;
use crate::resp_body::RespBody;
use crate::snapshot::Snapshot;
use crate::targets::{Addr, Protocol};
pub use crate::ws_session::Pending;
use crate::ws_session::{IpSlot, Session, UpIo};
use crate::{Error, ErrorKind};

/// Problem codes of refused handshakes.
pub const TOO_MANY: &str = "websocket.too_many_connections";
pub const DISABLED: &str = "websocket.disabled";

const GUID: &[u8] = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
/// Largest upstream handshake response head.
const MAX_HEAD: usize = 64 * 1024;
/// Largest body of a non-101 answer to a handshake relayed to the client.
const MAX_REFUSAL_BODY: usize = 1024 * 1024;
/// Read buffer growth per read.
const READ_CHUNK: usize = 32 * 1024;
/// How long Palisade's own close frames may take to go out.
const CLOSE_WRITE: Duration = Duration::from_secs(1);

/// How the client asked for the upgrade.
pub enum Kind {
    /// HTTP/1.1 `Upgrade: websocket`.
    H1,
    /// HTTP/2 extended CONNECT; the stream is handed over once the `200` is sent.
    H2(hyper::upgrade::OnUpgrade),
}

/// Whether `req` is a WebSocket handshake; an HTTP/2 extended CONNECT becomes the `GET` it
/// stands for (so that the stages judge what an HTTP/1.1 client would have sent), its
/// upgrade taken from the request.
pub fn detect(req: &mut Request<ClientBody>, raw: Option<&RawRequestHead>) -> Option<Kind> {
    if req.version() == Version::HTTP_2 {
        let ws =
            req.method() == Method::CONNECT && req.extensions().get::<hyper::ext::Protocol>().is_some_and(|p| p.as_str().eq_ignore_ascii_case("websocket"));
        if !ws {
            return None;
        }
        *req.method_mut() = Method::GET;
        return Some(Kind::H2(hyper::upgrade::on(req)));
    }
    if req.method() != Method::GET || req.version() != Version::HTTP_11 {
        return None;
    }
    let (mut upgrade, mut connection) = (false, false);
    let mut see = |name: &[u8], value: &[u8]| {
        if name.eq_ignore_ascii_case(b"upgrade") {
            upgrade |= has_token(value, b"websocket");
        } else if name.eq_ignore_ascii_case(b"connection") {
            connection |= has_token(value, b"upgrade");
        }
    };
    match raw {
        Some(r) => r.fields().for_each(|(n, v)| see(n, v)),
        None => req.headers().iter().for_each(|(n, v)| see(n.as_str().as_bytes(), v.as_bytes())),
    }
    (upgrade && connection).then_some(Kind::H1)
}

/// Whether a comma-separated header value holds `token` (case-insensitive).
fn has_token(value: &[u8], token: &[u8]) -> bool {
    value.split(|b| *b == b',').any(|t| t.trim_ascii().eq_ignore_ascii_case(token))
}

/// `Sec-WebSocket-Accept` for a key (RFC 6455 §4.2.2): base64 of the SHA-1 of key and GUID.
pub fn accept_key(key: &[u8]) -> String {
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY);
    ctx.update(key);
    ctx.update(GUID);
    base64(ctx.finish().as_ref())
}

/// Standard base64 with padding (RFC 4648 §4).
fn base64(data: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for c in data.chunks(3) {
        let n = (u32::from(c[0]) << 16) | (u32::from(*c.get(1).unwrap_or(&0)) << 8) | u32::from(*c.get(2).unwrap_or(&0));
        out.push(A[(n >> 18) as usize & 63] as char);
        out.push(A[(n >> 12) as usize & 63] as char);
        out.push(if c.len() > 1 { A[(n >> 6) as usize & 63] as char } else { '=' });
        out.push(if c.len() > 2 { A[n as usize & 63] as char } else { '=' });
    }
    out
}

fn random<const N: usize>() -> [u8; N] {
    use ring::rand::SecureRandom;
    let mut b = [0u8; N];
    if ring::rand::SystemRandom::new().fill(&mut b).is_err() {
        // No system randomness: masks and keys need not be secret, only varied.
        let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(7, |d| d.as_nanos());
        for (i, x) in b.iter_mut().enumerate() {
            *x = (t >> ((i % 16) * 8)) as u8 ^ (i as u8).wrapping_mul(151);
        }
    }
    b
}

// ---------------------------------------------------------------------------------------------
// Shutdown.

thread_local! {
    /// Turns true when shutdown starts on this worker ([`shutdown_started`]).
    static SHUTDOWN: watch::Sender<bool> = watch::channel(false).0;
}

/// Shutdown has started on this worker: its WebSocket connections close (1001) once the drain
/// time has passed.
pub fn shutdown_started() {
    SHUTDOWN.with(|s| s.send_replace(true));
}

// ---------------------------------------------------------------------------------------------
// The handshake.

/// What the proxy hands over for a handshake the stages allowed.
pub struct Handshake<'a> {
    pub snap: &'a Arc<Snapshot>,
    pub app_idx: usize,
    pub kind: Kind,
    /// The request as it goes upstream (hop-by-hop headers removed, forwarding headers set).
    pub parts: http::request::Parts,
    /// Forwarding header lines to add.
    pub extra_lines: &'a [u8],
    pub set_host: &'a dyn Fn(&mut HeaderMap, &HeaderValue),
    /// The request as the stages judged it (messages are judged in its light), with its
    /// canonical path (`None`: the URI's path is canonical).
    pub judged: (Method, Uri, HeaderMap, Option<String>),
    pub context: palisade_core::Context,
    pub id: RequestId,
    pub client_ip: IpAddr,
    pub tls: bool,
}

fn reject(status: StatusCode, code: &str, title: &str, id: RequestId) -> Response<RespBody> {
    problem::response(status, code, title, id.as_str(), &[])
}

/// Forward an allowed handshake upstream. A `101` becomes the client's `101` (HTTP/1.1) or
/// `200` (HTTP/2) with a [`RespBody::Upgrade`] body; another answer is relayed as it is.
pub async fn forward(h: Handshake<'_>) -> Response<RespBody> {
    let app = &h.snap.apps[h.app_idx];
    let cfg = &app.cfg.websocket;
    let id = h.id;
    if !cfg.enabled {
        tracing::info!(request_id = id.as_str(), app = %app.cfg.name, "websocket handshake refused: websocket.enabled is false");
        return reject(StatusCode::FORBIDDEN, DISABLED, "WebSocket is not enabled for this application", id);
    }
    let Some(slot) = IpSlot::take(&app.cfg.name, h.client_ip, cfg.max_per_ip) else {
        tracing::warn!(request_id = id.as_str(), app = %app.cfg.name, client_ip = %h.client_ip, max = cfg.max_per_ip, "websocket handshake refused: too many connections from this client");
        return reject(StatusCode::TOO_MANY_REQUESTS, TOO_MANY, "Too many WebSocket connections from this client", id);
    };
    let up = &app.upstream;
    let Some(t) = up.pick(0) else {
        return reject(StatusCode::BAD_GATEWAY, code::UPSTREAM_UNAVAILABLE, "Upstream unavailable", id);
    };
    let target = &up.targets[t];
    let mut h = h;
    let mut parts = std::mem::replace(&mut h.parts, Request::new(()).into_parts().0);
    (h.set_host)(&mut parts.headers, &target.authority);
    // Client messages are judged with `inspect: text`, and on the path of a stage that judges
    // messages whatever `inspect` says (a GraphQL endpoint).
    let inspect = cfg.inspect == WsInspect::Text || stage_wants_messages(app, &h.judged, id, h.client_ip, h.tls);
    if inspect {
        // Compressed messages could not be judged: no extension is offered.
        parts.headers.remove(header::SEC_WEBSOCKET_EXTENSIONS);
    }
    // HTTP/2 clients send no key (RFC 8441 §5): Palisade is the upstream's client.
    let key = match &h.kind {
        Kind::H1 => parts.headers.get(header::SEC_WEBSOCKET_KEY).map(|k| k.as_bytes().to_vec()),
        Kind::H2(_) => {
            let k = base64(&random::<16>());
            parts.headers.insert(header::SEC_WEBSOCKET_KEY, HeaderValue::from_str(&k).unwrap_or(HeaderValue::from_static("dGhlIHNhbXBsZSBub25jZQ==")));
            Some(k.into_bytes())
        }
    };
    let Some(key) = key else {
        return reject(StatusCode::BAD_REQUEST, code::BAD_REQUEST, "WebSocket handshake without Sec-WebSocket-Key", id);
    };
    if !parts.headers.contains_key(header::SEC_WEBSOCKET_VERSION) {
        parts.headers.insert(header::SEC_WEBSOCKET_VERSION, HeaderValue::from_static("13"));
    }
    let cfg_up = &up.cfg;
    // An HTTP/2 upstream gets an extended CONNECT (RFC 8441) when it allows it; otherwise the
    // handshake goes as an HTTP/1.1 upgrade on a connection of its own to the same target.
    let mut fell_back = false;
    if up.speaks_h2() {
        match crate::h2up::websocket(up, t, h2_parts(&parts, h.extra_lines)).await {
            WsAnswer::Answer(resp, stream) => {
                // (The key Palisade made for an HTTP/2 client is not sent: RFC 8441 has none.)
                return match h2_switch(*resp, stream, inspect, cfg_up.read_timeout).await {
                    Ok((headers, upstream)) => accepted(h, parts, headers, upstream, BytesMut::new(), inspect, slot),
                    Err(Ok(refused)) => refused,
                    Err(Err(why)) => {
                        tracing::warn!(request_id = id.as_str(), upstream = %cfg_up.name, target = %target.target, why, "websocket handshake: invalid upstream answer to the extended CONNECT");
                        reject(StatusCode::BAD_GATEWAY, code::UPSTREAM_ERROR, "Upstream failed", id)
                    }
                };
            }
            WsAnswer::Http1 { h2 } => {
                fell_back = h2;
                if fell_back {
                    tracing::info!(request_id = id.as_str(), upstream = %cfg_up.name, target = %target.target, "websocket: the HTTP/2 upstream does not allow extended CONNECT (RFC 8441): the handshake goes as an HTTP/1.1 upgrade on a connection of its own");
                }
            }
            WsAnswer::Failed(e) => {
                tracing::warn!(request_id = id.as_str(), upstream = %cfg_up.name, target = %target.target, error = %e, "websocket upstream unavailable");
                return reject(StatusCode::BAD_GATEWAY, code::UPSTREAM_UNAVAILABLE, "Upstream unavailable", id);
            }
            WsAnswer::Timeout => {
                tracing::warn!(request_id = id.as_str(), upstream = %cfg_up.name, "websocket handshake: upstream timed out");
                return reject(StatusCode::GATEWAY_TIMEOUT, code::UPSTREAM_TIMEOUT, "Upstream timed out", id);
            }
        }
    }
    // Said in the log when an HTTP/1.1 exchange with an HTTP/2 upstream fails.
    let why_h1 = if fell_back { " (the upstream speaks HTTP/2 without extended CONNECT; the HTTP/1.1 upgrade it was sent instead failed)" } else { "" };
    let head = upgrade_head(&parts, h.extra_lines);
    let mut io = match connect_upstream(up, t).await {
        Ok(io) => io,
        Err(e) => {
            tracing::warn!(request_id = id.as_str(), upstream = %cfg_up.name, target = %target.target, error = %e, "websocket upstream unavailable{why_h1}");
            return reject(StatusCode::BAD_GATEWAY, code::UPSTREAM_UNAVAILABLE, "Upstream unavailable", id);
        }
    };
    let exchange = async {
        io.write_all(&head).await.map_err(|e| Error::caused_by(ErrorKind::Upstream, format!("write: {e}"), e))?;
        read_head(&mut io).await
    };
    let (resp_head, mut rbuf) = match tokio::time::timeout(cfg_up.read_timeout, exchange).await {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => {
            tracing::warn!(request_id = id.as_str(), upstream = %cfg_up.name, error = %e, "websocket handshake: upstream failed{why_h1}");
            return reject(StatusCode::BAD_GATEWAY, code::UPSTREAM_ERROR, "Upstream failed", id);
        }
        Err(_) => {
            tracing::warn!(request_id = id.as_str(), upstream = %cfg_up.name, "websocket handshake: upstream timed out{why_h1}");
            return reject(StatusCode::GATEWAY_TIMEOUT, code::UPSTREAM_TIMEOUT, "Upstream timed out", id);
        }
    };
    let (status, headers) = resp_head;
    if status != 101 {
        // Refused (401, 404, a plain 200...): the client gets the answer as it is.
        return match refusal(status, headers, &mut io, &mut rbuf).await {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(request_id = id.as_str(), upstream = %cfg_up.name, error = %e, "websocket handshake: upstream answer unreadable");
                reject(StatusCode::BAD_GATEWAY, code::UPSTREAM_ERROR, "Upstream failed", id)
            }
        };
    }
    if let Err(why) = check_switch(&headers, &key, inspect) {
        tracing::warn!(request_id = id.as_str(), upstream = %cfg_up.name, why, "websocket handshake: invalid upstream answer");
        return reject(StatusCode::BAD_GATEWAY, code::UPSTREAM_ERROR, "Upstream failed", id);
    }
    accepted(h, parts, headers, UpIo::Conn(io), rbuf, inspect, slot)
}

/// The client's answer to a handshake the upstream accepted (`headers`: the upstream's), and
/// the relay's session.
fn accepted(
    h: Handshake<'_>,
    parts: http::request::Parts,
    headers: HeaderMap,
    upstream: UpIo,
    rbuf: BytesMut,
    inspect: bool,
    slot: IpSlot,
) -> Response<RespBody> {
    let app = &h.snap.apps[h.app_idx];
    let cfg = &app.cfg.websocket;
    let id = h.id;
    let extensions = headers.contains_key(header::SEC_WEBSOCKET_EXTENSIONS);
    let mut headers = headers;
    crate::headers::strip_hop_by_hop(&mut headers);
    let mut out = HeaderMap::new();
    for (name, value) in &headers {
        if name == header::CONTENT_LENGTH || name == header::TRANSFER_ENCODING {
            continue;
        }
        // HTTP/2 has no accept value (RFC 8441 §5): the stream is the proof.
        if matches!(h.kind, Kind::H2(_)) && name == header::SEC_WEBSOCKET_ACCEPT {
            continue;
        }
        out.append(name.clone(), value.clone());
    }
    let (status, client) = match h.kind {
        Kind::H1 => {
            out.insert(header::SEC_WEBSOCKET_ACCEPT, HeaderValue::from_str(&accept_key(&key_of(&parts.headers))).unwrap_or(HeaderValue::from_static("")));
            (StatusCode::SWITCHING_PROTOCOLS, None)
        }
        Kind::H2(on) => (StatusCode::OK, Some(on)),
    };
    app.metrics.ws_opened();
    // Messages are judged in the light of the subprotocol the upstream chose.
    let mut judged = h.judged;
    judged.2.remove(header::SEC_WEBSOCKET_PROTOCOL);
    if let Some(p) = out.get(header::SEC_WEBSOCKET_PROTOCOL) {
        judged.2.insert(header::SEC_WEBSOCKET_PROTOCOL, p.clone());
    }
    let session = Session {
        snap: h.snap.clone(),
        app_idx: h.app_idx,
        metrics: app.metrics.clone(),
        cfg: cfg.clone(),
        judged,
        context: h.context,
        inspect,
        id,
        client_ip: h.client_ip,
        tls: h.tls,
        extensions,
        events: None,
        _slot: slot,
        closed: std::cell::Cell::new(WsClose::ClientGone),
    };
    let mut resp = Response::new(RespBody::Upgrade(Box::new(Pending { upstream, upstream_buf: rbuf, client, session })));
    *resp.status_mut() = status;
    *resp.headers_mut() = out;
    resp
}

/// Whether a stage judges this connection's messages whatever `inspect` says (a GraphQL
/// endpoint), asked with the handshake as judged.
fn stage_wants_messages(app: &crate::snapshot::App, judged: &(Method, Uri, HeaderMap, Option<String>), id: RequestId, client_ip: IpAddr, tls: bool) -> bool {
    let view = handshake_view(app, judged, id.as_str(), client_ip, tls);
    app.stages.iter().any(|st| st.wants_messages(&view))
}

/// The handshake as the stages judged it (canonical path, no body): the view messages are
/// judged against.
fn handshake_view<'a>(
    app: &'a crate::snapshot::App,
    judged: &'a (Method, Uri, HeaderMap, Option<String>),
    id: &'a str,
    client_ip: IpAddr,
    tls: bool,
) -> RequestView<'a> {
    let (method, uri, headers, canonical) = judged;
    RequestView {
        request_id: id,
        app: &app.cfg.name,
        client_ip,
        method,
        path: canonical.as_deref().unwrap_or(uri.path()),
        raw_path: uri.path(),
        query: uri.query(),
        headers,
        body: b"",
        body_truncated: false,
        tls,
    }
}

/// The handshake as an HTTP/2 upstream gets it (before [`crate::h2up::websocket`] makes it an
/// extended CONNECT): the request's URI and headers, the forwarding lines among them.
fn h2_parts(parts: &http::request::Parts, extra_lines: &[u8]) -> http::request::Parts {
    let mut r = Request::new(());
    *r.uri_mut() = parts.uri.clone();
    *r.headers_mut() = parts.headers.clone();
    for line in extra_lines.split(|b| *b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let Some(colon) = line.iter().position(|b| *b == b':') else { continue };
        if let (Ok(n), Ok(v)) = (HeaderName::from_bytes(&line[..colon]), HeaderValue::from_bytes(line[colon + 1..].trim_ascii())) {
            r.headers_mut().append(n, v);
        }
    }
    r.into_parts().0
}

/// The upstream's answer to an extended CONNECT: a 2xx hands the stream over (`Ok`: the
/// answer's headers and the stream); another answer is relayed as it is (`Err(Ok)`);
/// `Err(Err)`: what is wrong with it, for the log.
async fn h2_switch(
    resp: Response<hyper::body::Incoming>,
    stream: crate::h2up::StreamGuard,
    inspect: bool,
    timeout: Duration,
) -> Result<(HeaderMap, UpIo), Result<Response<RespBody>, &'static str>> {
    use http_body_util::BodyExt;
    if resp.status().is_success() {
        if inspect && resp.headers().contains_key(header::SEC_WEBSOCKET_EXTENSIONS) {
            return Err(Err("an extension that was not offered"));
        }
        let headers = resp.headers().clone();
        let upgraded = tokio::time::timeout(timeout, hyper::upgrade::on(resp)).await;
        return match upgraded {
            Ok(Ok(u)) => Ok((headers, UpIo::H2 { io: hyper_util::rt::TokioIo::new(u), _stream: stream })),
            Ok(Err(_)) => Err(Err("the stream was not handed over")),
            Err(_) => Err(Err("the stream was not handed over in time")),
        };
    }
    if resp.status().is_informational() {
        return Err(Err("an informational answer to an extended CONNECT"));
    }
    let (mut parts, body) = resp.into_parts();
    let limited = http_body_util::Limited::new(body, MAX_REFUSAL_BODY);
    let body = match tokio::time::timeout(timeout, limited.collect()).await {
        Ok(Ok(b)) => b.to_bytes(),
        Ok(Err(_)) => return Err(Err("the refusal's body failed or is too large")),
        Err(_) => return Err(Err("the refusal's body timed out")),
    };
    crate::headers::strip_hop_by_hop(&mut parts.headers);
    parts.headers.remove(header::CONTENT_LENGTH);
    let mut out = Response::new(RespBody::full(body));
    *out.status_mut() = parts.status;
    *out.headers_mut() = parts.headers;
    Err(Ok(out))
}

/// A connection of its own to target `t` for an HTTP/1.1 upgrade: TCP or a Unix socket, TLS
/// (ALPN `http/1.1`) for an `https://` upstream.
async fn connect_upstream(up: &crate::targets::Upstream, t: usize) -> Result<Stream, String> {
    if up.protocol == Protocol::Https {
        let tls = up.tls.as_ref().ok_or("no TLS configuration")?;
        return crate::upstream::connect_tls(up, t, tls.http1.clone()).await.map(|s| Stream::TlsClient(Box::new(s)));
    }
    connect(&up.targets[t].addr, up.cfg.connect_timeout).await.map_err(|e| e.to_string())
}

/// The HTTP/1.1 upgrade request the upstream gets: the request's headers (no Content-Length),
/// the forwarding lines, `Connection: upgrade` and `Upgrade: websocket`.
fn upgrade_head(parts: &http::request::Parts, extra_lines: &[u8]) -> Vec<u8> {
    let mut head = Vec::with_capacity(1024);
    head.extend_from_slice(b"GET ");
    head.extend_from_slice(parts.uri.path_and_query().map_or("/", |p| p.as_str()).as_bytes());
    head.extend_from_slice(b" HTTP/1.1\r\n");
    for (name, value) in &parts.headers {
        if name == header::CONTENT_LENGTH {
            continue;
        }
        head.extend_from_slice(name.as_str().as_bytes());
        head.extend_from_slice(b": ");
        head.extend_from_slice(value.as_bytes());
        head.extend_from_slice(b"\r\n");
    }
    head.extend_from_slice(extra_lines);
    head.extend_from_slice(b"connection: upgrade\r\nupgrade: websocket\r\n\r\n");
    head
}

/// Check the upstream's `101`: `Upgrade: websocket`, the accept value of the key sent, and no
/// extension when messages are judged (none was offered). `Err`: what is wrong, for the log.
fn check_switch(headers: &HeaderMap, key: &[u8], inspect: bool) -> Result<(), &'static str> {
    let upgrade_ok = headers.get_all(header::UPGRADE).iter().any(|v| has_token(v.as_bytes(), b"websocket"));
    let accept_ok = headers.get(header::SEC_WEBSOCKET_ACCEPT).is_some_and(|a| a.as_bytes() == accept_key(key).as_bytes());
    let extensions = headers.contains_key(header::SEC_WEBSOCKET_EXTENSIONS);
    if !upgrade_ok {
        Err("101 without Upgrade: websocket")
    } else if !accept_ok {
        Err("wrong Sec-WebSocket-Accept")
    } else if inspect && extensions {
        Err("an extension that was not offered")
    } else {
        Ok(())
    }
}

fn key_of(h: &HeaderMap) -> Vec<u8> {
    h.get(header::SEC_WEBSOCKET_KEY).map(|k| k.as_bytes().to_vec()).unwrap_or_default()
}

async fn connect(addr: &Addr, timeout: Duration) -> std::io::Result<Stream> {
    let io = match addr {
        Addr::Tcp(a) => {
            let s = tokio::time::timeout(timeout, TcpStream::connect(a)).await.map_err(|_| std::io::Error::from(std::io::ErrorKind::TimedOut))??;
            let _ = s.set_nodelay(true);
            Stream::Tcp(s)
        }
        Addr::Unix(p) => {
            Stream::Unix(tokio::time::timeout(timeout, UnixStream::connect(p)).await.map_err(|_| std::io::Error::from(std::io::ErrorKind::TimedOut))??)
        }
    };
    Ok(io)
}

type Head = (u16, HeaderMap);

fn read_error(e: std::io::Error) -> Error {
    Error::caused_by(ErrorKind::Upstream, format!("read: {e}"), e)
}

/// Read the upstream's response head; the bytes after it stay in the returned buffer.
async fn read_head(io: &mut Stream) -> Result<(Head, BytesMut), Error> {
    let mut buf = BytesMut::with_capacity(4096);
    let mut scanned = 0;
    loop {
        if let Some(end) = crate::codec::find_head_end(&buf, &mut scanned) {
            let mut slots = [httparse::EMPTY_HEADER; 128];
            let mut r = httparse::Response::new(&mut slots);
            match r.parse(&buf[..end]) {
                Ok(httparse::Status::Complete(_)) => {}
                _ => return Err(Error::new(ErrorKind::Upstream, "malformed response head")),
            }
            let status = r.code.unwrap_or(0);
            let mut headers = HeaderMap::new();
            for f in r.headers.iter() {
                if let (Ok(n), Ok(v)) = (HeaderName::from_bytes(f.name.as_bytes()), HeaderValue::from_bytes(f.value)) {
                    headers.append(n, v);
                }
            }
            buf.advance(end);
            return Ok(((status, headers), buf));
        }
        if buf.len() > MAX_HEAD {
            return Err(Error::new(ErrorKind::Upstream, "response head too large"));
        }
        buf.reserve(4096);
        let n = poll_fn(|cx| tokio_util::io::poll_read_buf(Pin::new(&mut *io), cx, &mut buf)).await.map_err(read_error)?;
        if n == 0 {
            return Err(Error::new(ErrorKind::Upstream, "upstream closed before its response head"));
        }
    }
}

/// A non-101 answer, relayed to the client as an ordinary response (its body read here, up to
/// [`MAX_REFUSAL_BODY`]).
async fn refusal(status: u16, mut headers: HeaderMap, io: &mut Stream, rbuf: &mut BytesMut) -> Result<Response<RespBody>, Error> {
    use crate::codec::BodyState;
    let err = |m: String| Error::new(ErrorKind::Upstream, m);
    let status = StatusCode::from_u16(status).map_err(|e| Error::caused_by(ErrorKind::Upstream, format!("invalid status {status}"), e))?;
    if status.is_informational() {
        return Err(err(format!("unexpected {status} to a WebSocket handshake")));
    }
    let chunked = headers.get_all(header::TRANSFER_ENCODING).iter().any(|v| has_token(v.as_bytes(), b"chunked"));
    let length = headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.trim().parse::<u64>().ok());
    let mut state = if status == StatusCode::NO_CONTENT || status == StatusCode::NOT_MODIFIED {
        BodyState::Done
    } else if chunked {
        BodyState::Chunked(crate::codec::Chunk::Size)
    } else {
        match length {
            Some(0) => BodyState::Done,
            Some(n) => BodyState::Length(n),
            None => BodyState::UntilClose,
        }
    };
    let mut body = BytesMut::new();
    loop {
        match crate::codec::decode(&mut state, rbuf).map_err(|e| Error::caused_by(ErrorKind::Upstream, e.to_string(), e))? {
            Some(Some(data)) => {
                body.extend_from_slice(&data);
                if body.len() > MAX_REFUSAL_BODY {
                    return Err(err("refusal body too large".into()));
                }
                continue;
            }
            Some(None) => break,
            None => {}
        }
        rbuf.reserve(8192);
        let n = poll_fn(|cx| tokio_util::io::poll_read_buf(Pin::new(&mut *io), cx, &mut *rbuf)).await.map_err(read_error)?;
        if n == 0 {
            if state == BodyState::UntilClose {
                break;
            }
            return Err(err("upstream closed in the middle of the body".into()));
        }
    }
    crate::headers::strip_hop_by_hop(&mut headers);
    headers.remove(header::CONTENT_LENGTH);
    let mut resp = Response::new(RespBody::full(body.freeze()));
    *resp.status_mut() = status;
    *resp.headers_mut() = headers;
    Ok(resp)
}

/// Called by the proxy once the handshake's response is final: hands the relay what only the
/// proxy has, and for HTTP/2 starts it (the stream is handed over once the `200` is out).
pub fn handshake_done(resp: &mut Response<RespBody>, events: Option<&palisade_events::EventSender>) {
    let RespBody::Upgrade(p) = resp.body_mut() else { return };
    p.session.events = events.cloned();
    if p.client.is_none() {
        return;
    }
    let RespBody::Upgrade(mut p) = std::mem::replace(resp.body_mut(), RespBody::empty()) else { return };
    let Some(on) = p.client.take() else { return };
    tokio::task::spawn_local(async move {
        match on.await {
            Ok(upgraded) => {
                let client = hyper_util::rt::TokioIo::new(upgraded);
                relay(client, BytesMut::new(), *p).await;
            }
            Err(e) => {
                tracing::debug!(request_id = p.session.id.as_str(), error = %e, "websocket: HTTP/2 stream not handed over");
            }
        }
    });
}

/// HTTP/1.1: write the `101` and relay on the client's connection (`leftover`: what the client
/// sent after its handshake).
pub async fn serve_h1(mut client: Stream, leftover: BytesMut, resp: Response<RespBody>) {
    let (parts, body) = resp.into_parts();
    let RespBody::Upgrade(p) = body else { return };
    let mut head = Vec::with_capacity(256);
    head.extend_from_slice(b"HTTP/1.1 101 Switching Protocols\r\n");
    for (name, value) in &parts.headers {
        head.extend_from_slice(name.as_str().as_bytes());
        head.extend_from_slice(b": ");
        head.extend_from_slice(value.as_bytes());
        head.extend_from_slice(b"\r\n");
    }
    head.extend_from_slice(b"connection: upgrade\r\nupgrade: websocket\r\n\r\n");
    match tokio::time::timeout(CLOSE_WRITE * 10, client.write_all(&head)).await {
        Ok(Ok(())) => relay(client, leftover, *p).await,
        _ => {
            tracing::debug!(request_id = p.session.id.as_str(), "websocket: client gone before the 101 was out");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Frames.

/// Why a connection is closed by Palisade: the close code and the close frame's reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    pub code: u16,
    pub reason: Cow<'static, str>,
}

fn violation(code: u16, reason: impl Into<Cow<'static, str>>) -> Violation {
    Violation { code, reason: reason.into() }
}

/// What [`Pump::parse`] stopped at.
#[derive(Debug, PartialEq, Eq)]
pub enum Parsed {
    /// Everything buffered is parsed.
    NeedMore,
    /// The bytes ready to go must be written before the next frame can be held.
    Flush,
    /// A held text message is complete: [`Pump::held_text`] is to be judged, then
    /// [`Pump::release`]d.
    Judge,
}

/// One direction of the relay: reads frame headers as bytes pass and checks them; payloads are
/// copied through untouched, except the client's text messages under inspection, held (masked,
/// as they will be sent) and unmasked into a copy to judge.
pub struct Pump {
    from_client: bool,
    hold_text: bool,
    rsv_ok: bool,
    max_message: u64,
    /// Read, not yet written; its first `ready` bytes are parsed and may go out.
    pub rbuf: BytesMut,
    pub ready: usize,
    /// A judged message to write before `rbuf`.
    pub first: Bytes,
    /// Payload bytes of the current frame not yet parsed.
    left: u64,
    fin: bool,
    holding: bool,
    mask: [u8; 4],
    mask_off: usize,
    /// The data message in progress: whether it is held.
    in_msg: Option<bool>,
    msg_len: u64,
    hold_raw: BytesMut,
    hold_payload: Vec<u8>,
    pub close_seen: bool,
    pub messages: u64,
    /// Bytes read.
    pub bytes: u64,
    /// The reader ended and the writer was shut down.
    pub done: bool,
}

impl Pump {
    pub fn new(from_client: bool, hold_text: bool, rsv_ok: bool, max_message: u64, rbuf: BytesMut) -> Pump {
        Pump {
            from_client,
            hold_text,
            rsv_ok,
            max_message,
            rbuf,
            ready: 0,
            first: Bytes::new(),
            left: 0,
            fin: false,
            holding: false,
            mask: [0; 4],
            mask_off: 0,
            in_msg: None,
            msg_len: 0,
            hold_raw: BytesMut::new(),
            hold_payload: Vec::new(),
            close_seen: false,
            messages: 0,
            bytes: 0,
            done: false,
        }
    }

    /// Whether a frame of Palisade's own may be written to where this pump writes: no frame is
    /// half written there.
    pub fn at_boundary(&self) -> bool {
        self.first.is_empty() && self.ready == 0 && (self.left == 0 || self.holding)
    }

    /// The held text message, once [`Parsed::Judge`] was returned (valid UTF-8).
    pub fn held_text(&self) -> &str {
        std::str::from_utf8(&self.hold_payload).unwrap_or("")
    }

    /// The held message may go: it is written before anything read after it.
    pub fn release(&mut self) {
        self.first = self.hold_raw.split().freeze();
        self.hold_payload.clear();
    }

    /// Parse what is buffered (see [`Parsed`]).
    pub fn parse(&mut self) -> Result<Parsed, Violation> {
        loop {
            let avail = self.rbuf.len() - self.ready;
            if self.left > 0 {
                if avail == 0 {
                    return Ok(Parsed::NeedMore);
                }
                let n = (self.left.min(avail as u64)) as usize;
                if self.holding {
                    if self.ready > 0 {
                        return Ok(Parsed::Flush);
                    }
                    let chunk = self.rbuf.split_to(n);
                    let start = self.hold_payload.len();
                    self.hold_payload.extend_from_slice(&chunk);
                    for (i, b) in self.hold_payload[start..].iter_mut().enumerate() {
                        *b ^= self.mask[(self.mask_off + i) & 3];
                    }
                    self.mask_off += n;
                    self.hold_raw.extend_from_slice(&chunk);
                } else {
                    self.ready += n;
                }
                self.left -= n as u64;
                if self.left == 0 && self.frame_done()? {
                    return Ok(Parsed::Judge);
                }
                continue;
            }
            if avail == 0 {
                return Ok(Parsed::NeedMore);
            }
            let mut cur = Cursor::new(&self.rbuf[self.ready..]);
            let (h, len) = match FrameHeader::parse(&mut cur) {
                Ok(Some(x)) => x,
                Ok(None) => return Ok(Parsed::NeedMore),
                Err(_) => return Err(violation(1002, "malformed frame header")),
            };
            let hlen = cur.position() as usize;
            if len > i64::MAX as u64 {
                return Err(violation(1002, "frame length with its most significant bit set"));
            }
            if self.from_client != h.mask.is_some() {
                return Err(violation(1002, if self.from_client { "unmasked client frame" } else { "masked server frame" }));
            }
            if (h.rsv1 && !self.rsv_ok) || h.rsv2 || h.rsv3 {
                return Err(violation(1002, "reserved bits set"));
            }
            if self.close_seen {
                return Err(violation(1002, "frame after close"));
            }
            match h.opcode {
                OpCode::Control(c) => {
                    if matches!(c, Control::Reserved(_)) {
                        return Err(violation(1002, "reserved opcode"));
                    }
                    if !h.is_final || len > 125 {
                        return Err(violation(1002, "fragmented or oversized control frame"));
                    }
                    if avail < hlen + len as usize {
                        return Ok(Parsed::NeedMore);
                    }
                    if c == Control::Close {
                        let mut payload = self.rbuf[self.ready + hlen..self.ready + hlen + len as usize].to_vec();
                        if let Some(m) = h.mask {
                            for (i, b) in payload.iter_mut().enumerate() {
                                *b ^= m[i & 3];
                            }
                        }
                        check_close(&payload)?;
                        self.close_seen = true;
                    }
                    self.ready += hlen + len as usize;
                }
                OpCode::Data(d) => {
                    let held = match (d, self.in_msg) {
                        (Data::Reserved(_), _) => return Err(violation(1002, "reserved opcode")),
                        (Data::Continue, None) => return Err(violation(1002, "continuation without a message")),
                        (Data::Continue, Some(held)) => held,
                        (_, Some(_)) => return Err(violation(1002, "new message inside a fragmented one")),
                        (Data::Text, None) => self.hold_text,
                        (Data::Binary, None) => false,
                    };
                    if self.msg_len.saturating_add(len) > self.max_message {
                        return Err(violation(1009, "message too big"));
                    }
                    if held && self.ready > 0 {
                        return Ok(Parsed::Flush);
                    }
                    self.in_msg = Some(held);
                    self.msg_len += len;
                    self.holding = held;
                    self.fin = h.is_final;
                    self.left = len;
                    if held {
                        self.hold_raw.extend_from_slice(&self.rbuf.split_to(hlen));
                        self.mask = h.mask.unwrap_or([0; 4]);
                        self.mask_off = 0;
                    } else {
                        self.ready += hlen;
                    }
                    if len == 0 && self.frame_done()? {
                        return Ok(Parsed::Judge);
                    }
                }
            }
        }
    }

    /// The current data frame is complete; true when a held message is complete (to judge).
    fn frame_done(&mut self) -> Result<bool, Violation> {
        self.holding = false;
        if !self.fin {
            return Ok(false);
        }
        let held = self.in_msg.take() == Some(true);
        self.msg_len = 0;
        self.messages += 1;
        if held {
            if std::str::from_utf8(&self.hold_payload).is_err() {
                return Err(violation(1007, "text message is not UTF-8"));
            }
            return Ok(true);
        }
        Ok(false)
    }
}

/// A close frame's payload: empty, or a valid code and a UTF-8 reason (RFC 6455 §7.4).
fn check_close(payload: &[u8]) -> Result<(), Violation> {
    match payload.len() {
        0 => Ok(()),
        1 => Err(violation(1002, "close frame with a one-byte payload")),
        _ => {
            let code = u16::from_be_bytes([payload[0], payload[1]]);
            let valid = matches!(code, 1000..=1003 | 1007..=1011 | 1012..=1014 | 3000..=4999);
            if !valid {
                return Err(violation(1002, "invalid close code"));
            }
            std::str::from_utf8(&payload[2..]).map(|_| ()).map_err(|_| violation(1007, "close reason is not UTF-8"))
        }
    }
}

/// A close frame with `code` and `reason`, masked when it goes to the upstream.
pub fn close_frame(code: u16, reason: &str, masked: bool) -> Vec<u8> {
    let reason = &reason.as_bytes()[..reason.len().min(120)];
    let mut payload = code.to_be_bytes().to_vec();
    payload.extend_from_slice(reason);
    let mut out = vec![0x88, payload.len() as u8];
    if masked {
        out[1] |= 0x80;
        let m = random::<4>();
        out.extend_from_slice(&m);
        for (i, b) in payload.iter_mut().enumerate() {
            *b ^= m[i & 3];
        }
    }
    out.extend_from_slice(&payload);
    out
}

// ---------------------------------------------------------------------------------------------
// The relay.

/// How a relay ended.
enum End {
    /// Both sides are done (closed their streams).
    Done,
    /// Palisade closes: the reason, the code for the client and the code for the upstream.
    Close(WsClose, u16, u16, Cow<'static, str>),
    Io,
}

/// One direction's progress: `Ok(true)` once its reader ended and its writer is shut.
fn poll_dir<R, W>(
    p: &mut Pump,
    r: &mut R,
    w: &mut W,
    cx: &mut Context<'_>,
    active: &mut bool,
    judge: &mut dyn FnMut(&str) -> Result<(), Violation>,
) -> Poll<Result<(), Result<Violation, std::io::Error>>>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    if p.done {
        return Poll::Ready(Ok(()));
    }
    loop {
        while !p.first.is_empty() {
            let n = ready!(Pin::new(&mut *w).poll_write(cx, &p.first)).map_err(Err)?;
            if n == 0 {
                return Poll::Ready(Err(Err(std::io::ErrorKind::WriteZero.into())));
            }
            p.first.advance(n);
        }
        while p.ready > 0 {
            let n = ready!(Pin::new(&mut *w).poll_write(cx, &p.rbuf[..p.ready])).map_err(Err)?;
            if n == 0 {
                return Poll::Ready(Err(Err(std::io::ErrorKind::WriteZero.into())));
            }
            p.rbuf.advance(n);
            p.ready -= n;
        }
        match p.parse().map_err(Ok)? {
            Parsed::Judge => {
                judge(p.held_text()).map_err(Ok)?;
                p.release();
                continue;
            }
            Parsed::Flush => continue,
            Parsed::NeedMore => {}
        }
        if p.ready > 0 {
            continue;
        }
        if p.rbuf.capacity() - p.rbuf.len() < 1024 {
            p.rbuf.reserve(READ_CHUNK);
        }
        let n = ready!(tokio_util::io::poll_read_buf(Pin::new(&mut *r), cx, &mut p.rbuf)).map_err(Err)?;
        if n == 0 {
            ready!(Pin::new(&mut *w).poll_shutdown(cx)).map_err(Err)?;
            p.done = true;
            return Poll::Ready(Ok(()));
        }
        p.bytes += n as u64;
        *active = true;
    }
}

/// Relay frames between the client and the upstream until both are done or Palisade closes.
pub async fn relay<C: AsyncRead + AsyncWrite + Unpin>(mut client: C, leftover: BytesMut, p: Pending) {
    let Pending { mut upstream, upstream_buf, session: s, .. } = p;
    let app = &s.snap.apps[s.app_idx];
    let inspect = s.inspect;
    let mut c2u = Pump::new(true, inspect, s.extensions, s.cfg.max_message, leftover);
    let mut u2c = Pump::new(false, false, s.extensions, s.cfg.max_message, upstream_buf);
    // What the metrics have been told so far: they follow the connection while it lives.
    let mut told = [0u64; 4];
    let started = Instant::now();
    let lifetime = tokio::time::sleep_until(started + s.cfg.max_lifetime);
    let idle = tokio::time::sleep_until(started + s.cfg.idle_timeout);
    // On shutdown: the drain time, less a moment for the close frames before the worker stops.
    let drain = s.snap.config.server.shutdown_timeout;
    let drain = drain.saturating_sub((drain / 4).min(Duration::from_secs(1)));
    let mut shutdown = SHUTDOWN.with(|x| x.subscribe());
    let going_away = async move {
        if shutdown.wait_for(|v| *v).await.is_err() {
            std::future::pending::<()>().await;
        }
        tokio::time::sleep(drain).await;
    };
    tokio::pin!(lifetime, idle, going_away);
    // The handshake's context; what stages add for one message goes with it.
    let mut cx = s.context.clone();
    let mut judge = |text: &str| -> Result<(), Violation> { judge_message(&s, &mut cx, text) };
    let mut last_active = started;
    let end = poll_fn(|cx| {
        let mut active = false;
        let c = match poll_dir(&mut c2u, &mut client, &mut upstream, cx, &mut active, &mut judge) {
            Poll::Ready(Err(Ok(v))) => return Poll::Ready(close_for(v, true)),
            Poll::Ready(Err(Err(_))) => return Poll::Ready(End::Io),
            other => other.is_ready(),
        };
        let u = match poll_dir(&mut u2c, &mut upstream, &mut client, cx, &mut active, &mut |_| Ok(())) {
            Poll::Ready(Err(Ok(v))) => return Poll::Ready(close_for(v, false)),
            Poll::Ready(Err(Err(_))) => return Poll::Ready(End::Io),
            other => other.is_ready(),
        };
        if active {
            let now = [c2u.messages, c2u.bytes, u2c.messages, u2c.bytes];
            s.metrics.ws_traffic(now[0] - told[0], now[1] - told[1], now[2] - told[2], now[3] - told[3]);
            told = now;
        }
        // WebSocket does not half-close: once either side has ended its stream (everything
        // it sent was written on), or both close frames have gone through, the relay ends.
        let closed = c2u.close_seen && u2c.close_seen && c2u.ready == 0 && u2c.ready == 0 && c2u.first.is_empty() && u2c.first.is_empty();
        if c || u || closed {
            return Poll::Ready(End::Done);
        }
        let now = Instant::now();
        if active {
            last_active = now;
        }
        if lifetime.as_mut().poll(cx).is_ready() {
            return Poll::Ready(End::Close(WsClose::MaxLifetime, 1001, 1001, "max lifetime".into()));
        }
        if idle.as_mut().poll(cx).is_ready() {
            if now >= last_active + s.cfg.idle_timeout {
                return Poll::Ready(End::Close(WsClose::IdleTimeout, 1001, 1001, "idle timeout".into()));
            }
            idle.as_mut().reset(last_active + s.cfg.idle_timeout);
            let _ = idle.as_mut().poll(cx);
        }
        if going_away.as_mut().poll(cx).is_ready() {
            return Poll::Ready(End::Close(WsClose::Shutdown, 1001, 1001, "server shutting down".into()));
        }
        Poll::Pending
    })
    .await;
    let ended_by_a_side = matches!(end, End::Done);
    let reason = match end {
        End::Done | End::Io if c2u.close_seen || u2c.close_seen => WsClose::Normal,
        End::Done => {
            if c2u.done {
                WsClose::ClientGone
            } else {
                WsClose::UpstreamGone
            }
        }
        End::Io => WsClose::Io,
        End::Close(why, to_client, to_upstream, text) => {
            tracing::info!(request_id = s.id.as_str(), app = %app.cfg.name, close = ?why, to_client, to_upstream, reason = %text, "websocket closed by palisade");
            // Flush what is ready, then the close frames where no frame is half written.
            let flush = async {
                let _ = write_pending(&mut u2c, &mut client).await;
                let _ = write_pending(&mut c2u, &mut upstream).await;
                if u2c.at_boundary() {
                    let _ = client.write_all(&close_frame(to_client, &text, false)).await;
                }
                if c2u.at_boundary() {
                    let _ = upstream.write_all(&close_frame(to_upstream, &text, true)).await;
                }
                let _ = client.shutdown().await;
                let _ = upstream.shutdown().await;
            };
            let _ = tokio::time::timeout(CLOSE_WRITE, flush).await;
            why
        }
    };
    if ended_by_a_side {
        let _ = tokio::time::timeout(CLOSE_WRITE, async {
            let _ = client.shutdown().await;
            let _ = upstream.shutdown().await;
        })
        .await;
    }
    let now = [c2u.messages, c2u.bytes, u2c.messages, u2c.bytes];
    s.metrics.ws_traffic(now[0] - told[0], now[1] - told[1], now[2] - told[2], now[3] - told[3]);
    s.closed.set(reason);
    tracing::debug!(request_id = s.id.as_str(), close = ?reason, client_messages = c2u.messages, upstream_messages = u2c.messages, "websocket connection ended");
}

fn close_for(v: Violation, from_client: bool) -> End {
    let why = match (v.code, from_client) {
        // A stage's verdict: the policy code or the subprotocol's own (4000-4999).
        (1008 | 4000..=4999, _) => WsClose::Blocked,
        (1009, true) => WsClose::TooBig,
        (1009, false) => WsClose::UpstreamTooBig,
        (1007, true) => WsClose::InvalidUtf8,
        (_, true) => WsClose::ProtocolError,
        (_, false) => WsClose::UpstreamProtocolError,
    };
    if from_client {
        End::Close(why, v.code, v.code, v.reason)
    } else {
        End::Close(why, 1014, v.code, v.reason)
    }
}

async fn write_pending<W: AsyncWrite + Unpin>(p: &mut Pump, w: &mut W) -> std::io::Result<()> {
    w.write_all(&p.first).await?;
    p.first.clear();
    w.write_all(&p.rbuf[..p.ready]).await?;
    p.rbuf.advance(p.ready);
    p.ready = 0;
    Ok(())
}

/// Judge one text message from the client; a block records an event and closes with 1008.
/// The close code is the blocking stage's (1008 unless it chose one: a GraphQL subprotocol's
/// 4400 for a message it does not allow) and the close reason the first reason's code.
fn judge_message(s: &Session, cx: &mut palisade_core::Context, text: &str) -> Result<(), Violation> {
    let app = &s.snap.apps[s.app_idx];
    if app.stages.is_empty() {
        return Ok(());
    }
    let (method, uri, headers, _) = &s.judged;
    let view = handshake_view(app, &s.judged, s.id.as_str(), s.client_ip, s.tls);
    let mut monitored = Vec::new();
    let blocked = palisade_core::run_message_stages(&app.stages, &view, text, cx, &mut monitored);
    if blocked.is_none() && monitored.is_empty() {
        return Ok(());
    }
    let mut rec = Record { app: Some(s.app_idx), ..Record::default() };
    for (stage, reason) in &monitored {
        tracing::warn!(request_id = s.id.as_str(), app = %app.cfg.name, stage, reason = %reason, "monitor: websocket message would have been blocked");
    }
    rec.monitored(monitored.into_iter(), || Captured::new(method, uri, headers));
    let verdict = match blocked {
        Some((stage, close, reasons)) => {
            let first: Option<&Reason> = reasons.first();
            tracing::warn!(request_id = s.id.as_str(), app = %app.cfg.name, stage, reason = %first.map(|r| r.to_string()).unwrap_or_default(), "websocket message blocked");
            let why = first.map_or(Cow::Borrowed("message blocked"), |r| r.code.clone());
            let code = close.filter(|c| matches!(c, 1008 | 4000..=4999)).unwrap_or(1008);
            rec.blocked(stage, reasons, || Captured::new(method, uri, headers));
            Err(violation(code, why))
        }
        None => Ok(()),
    };
    record::event(&s.snap, s.events.as_ref(), rec, &s.id, s.client_ip, 101, Duration::ZERO);
    verdict
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(fin: bool, opcode: u8, payload: &[u8], mask: Option<[u8; 4]>) -> Vec<u8> {
        let mut out = vec![(if fin { 0x80 } else { 0 }) | opcode];
        let m = if mask.is_some() { 0x80 } else { 0 };
        match payload.len() {
            n if n < 126 => out.push(m | n as u8),
            n if n < 65536 => {
                out.push(m | 126);
                out.extend_from_slice(&(n as u16).to_be_bytes());
            }
            n => {
                out.push(m | 127);
                out.extend_from_slice(&(n as u64).to_be_bytes());
            }
        }
        let mut p = payload.to_vec();
        if let Some(k) = mask {
            out.extend_from_slice(&k);
            for (i, b) in p.iter_mut().enumerate() {
                *b ^= k[i % 4];
            }
        }
        out.extend_from_slice(&p);
        out
    }

    const K: Option<[u8; 4]> = Some([1, 2, 3, 4]);

    /// Feed `bytes` in pieces of `step`, releasing held messages; returns what would be
    /// written and the judged texts.
    fn run(p: &mut Pump, bytes: &[u8], step: usize) -> Result<(Vec<u8>, Vec<String>), Violation> {
        let mut out = Vec::new();
        let mut judged = Vec::new();
        for piece in bytes.chunks(step.max(1)) {
            p.rbuf.extend_from_slice(piece);
            loop {
                out.extend_from_slice(&p.first);
                p.first.clear();
                out.extend_from_slice(&p.rbuf[..p.ready]);
                p.rbuf.advance(p.ready);
                p.ready = 0;
                match p.parse()? {
                    Parsed::Judge => {
                        judged.push(p.held_text().to_string());
                        p.release();
                    }
                    Parsed::Flush => {}
                    Parsed::NeedMore => {
                        if p.ready == 0 && p.first.is_empty() {
                            break;
                        }
                    }
                }
            }
        }
        Ok((out, judged))
    }

    #[test]
    fn accept_key_is_the_rfc_example() {
        // RFC 6455 §1.3.
        assert_eq!(accept_key(b"dGhlIHNhbXBsZSBub25jZQ=="), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
    }

    #[test]
    fn frames_pass_unchanged_in_any_split_and_held_text_is_reassembled() {
        let mut stream = Vec::new();
        stream.extend(frame(true, 2, &[0xff; 300], K));
        stream.extend(frame(false, 1, b"hel", K));
        stream.extend(frame(true, 9, b"ping", K)); // a control frame between fragments
        stream.extend(frame(false, 0, b"lo ", K));
        stream.extend(frame(true, 0, "wörld".as_bytes(), K));
        stream.extend(frame(true, 1, b"", K));
        stream.extend(frame(true, 8, &[0x03, 0xe8], K));
        for step in [1, 2, 3, 7, 64, 1000, stream.len()] {
            let mut p = Pump::new(true, true, false, 1024, BytesMut::new());
            let (out, judged) = run(&mut p, &stream, step).unwrap();
            assert_eq!(judged, ["hello wörld", ""], "step {step}");
            assert_eq!(out.len(), stream.len(), "step {step}");
            assert_eq!(p.messages, 3);
            assert!(p.close_seen);
            // Not inspecting: the bytes go out exactly as they came.
            let mut p = Pump::new(true, false, false, 1024, BytesMut::new());
            let (out, judged) = run(&mut p, &stream, step).unwrap();
            assert!(judged.is_empty());
            assert_eq!(out, stream, "step {step}");
        }
    }

    #[test]
    fn violations_get_their_close_codes() {
        let cases: Vec<(Vec<u8>, bool, u16)> = vec![
            (frame(true, 1, b"hi", None), true, 1002),                                            // unmasked from the client
            (frame(true, 1, b"hi", K), false, 1002),                                              // masked from the server
            (frame(true, 3, b"hi", K), true, 1002),                                               // reserved opcode
            (frame(true, 0, b"hi", K), true, 1002),                                               // continuation of nothing
            (frame(false, 9, b"hi", K), true, 1002),                                              // fragmented control frame
            (frame(true, 9, &[0; 126], K), true, 1002),                                           // oversized control frame
            ([frame(false, 1, b"a", K), frame(true, 1, b"b", K)].concat(), true, 1002),           // message inside a message
            (frame(true, 8, &[0x03], K), true, 1002),                                             // one-byte close
            (frame(true, 8, &[0x03, 0xed], K), true, 1002),                                       // close code 1005 is not sent
            (frame(true, 1, &[0xc3, 0x28], K), true, 1007),                                       // text not UTF-8 (inspected)
            (frame(true, 2, &[0; 2000], K), true, 1009),                                          // too big
            ([frame(false, 2, &[0; 600], K), frame(true, 0, &[0; 600], K)].concat(), true, 1009), // too big in fragments
            ([frame(true, 8, b"", K), frame(true, 1, b"x", K)].concat(), true, 1002),             // after close
            ([0xc1, 0x82, 1, 2, 3, 4, 0, 0].to_vec(), true, 1002),                                // RSV1 without an extension
            ([0x82, 0xff, 0x80, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4].to_vec(), true, 1002),           // 64-bit length with its top bit
        ];
        for (bytes, from_client, want) in cases {
            let mut p = Pump::new(from_client, true, false, 1024, BytesMut::new());
            let got = run(&mut p, &bytes, 1).map(|_| ()).expect_err(&format!("{bytes:02x?}"));
            assert_eq!(got.code, want, "{bytes:02x?}: {got:?}");
        }
        // With an extension negotiated RSV1 is its business.
        let mut p = Pump::new(true, false, true, 1024, BytesMut::new());
        assert!(run(&mut p, &[0xc1, 0x82, 1, 2, 3, 4, 0, 0], 3).is_ok());
    }

    #[test]
    fn close_frames_are_valid_frames() {
        let f = close_frame(1008, "message blocked", false);
        let mut p = Pump::new(false, false, false, 1024, BytesMut::from(&f[..]));
        assert_eq!(p.parse(), Ok(Parsed::NeedMore));
        assert!(p.close_seen && p.ready == f.len());
        let f = close_frame(1009, "message too big", true);
        let mut p = Pump::new(true, false, false, 1024, BytesMut::from(&f[..]));
        assert_eq!(p.parse(), Ok(Parsed::NeedMore));
        assert!(p.close_seen);
    }

    #[test]
    fn upgrade_requests_are_told_apart() {
        let req = |m: Method, v: Version, h: &[(&str, &str)]| {
            let mut r = Request::new(ClientBody::Empty);
            *r.method_mut() = m;
            *r.version_mut() = v;
            for (n, val) in h {
                r.headers_mut().append(HeaderName::from_bytes(n.as_bytes()).unwrap(), HeaderValue::from_str(val).unwrap());
            }
            r
        };
        let ws = [("connection", "keep-alive, Upgrade"), ("upgrade", "WebSocket")];
        assert!(matches!(detect(&mut req(Method::GET, Version::HTTP_11, &ws), None), Some(Kind::H1)));
        assert!(detect(&mut req(Method::POST, Version::HTTP_11, &ws), None).is_none());
        assert!(detect(&mut req(Method::GET, Version::HTTP_10, &ws), None).is_none());
        assert!(detect(&mut req(Method::GET, Version::HTTP_11, &[("upgrade", "websocket")]), None).is_none());
        assert!(detect(&mut req(Method::GET, Version::HTTP_11, &[("connection", "upgrade"), ("upgrade", "h2c")]), None).is_none());
        assert!(detect(&mut req(Method::CONNECT, Version::HTTP_2, &[]), None).is_none(), "a CONNECT without :protocol");
    }
}
