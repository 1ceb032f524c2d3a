//! The client's side of the handshake: [`forward`] sends a handshake the stages allowed to the
//! upstream (an extended CONNECT to an HTTP/2 upstream that allows it, an HTTP/1.1 upgrade to
//! any other) and turns an acceptance into the client's `101` (HTTP/1.1) or `200` (HTTP/2),
//! carrying the relay's session; [`handshake_done`] and [`serve_h1`] start the relay once that
//! answer is out.

use std::net::IpAddr;
use std::sync::Arc;

use bytes::BytesMut;
use http::{header, HeaderMap, HeaderValue, Method, Request, Response, StatusCode, Uri};
use palisade_config::WsInspect;
use tokio::io::AsyncWriteExt;

use super::connect::{extended_connect, Extended};
use super::inspect::stage_wants_messages;
use super::relay::relay;
use super::upgrade::{upgrade, upgrade_head};
use super::{accept_key, base64, random, Kind, CLOSE_WRITE, DISABLED, TOO_MANY};
use crate::code;
use crate::io::Stream;
use crate::metrics::WsClose;
use crate::problem;
use crate::request_id::RequestId;
use crate::resp_body::RespBody;
use crate::snapshot::Snapshot;
use crate::ws_session::{IpSlot, Pending, Session, UpIo};

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

pub(super) fn reject(status: StatusCode, code: &str, title: &str, id: RequestId) -> Response<RespBody> {
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
    // An HTTP/2 upstream gets an extended CONNECT (RFC 8441) when it allows it; otherwise the
    // handshake goes as an HTTP/1.1 upgrade on a connection of its own to the same target.
    let mut fell_back = false;
    if up.speaks_h2() {
        match extended_connect(up, t, &parts, h.extra_lines, inspect, id).await {
            Extended::Accepted(headers, upstream) => return accepted(h, parts, headers, upstream, BytesMut::new(), inspect, slot),
            Extended::Answered(resp) => return resp,
            Extended::Http1 { h2 } => fell_back = h2,
        }
    }
    let head = upgrade_head(&parts, h.extra_lines);
    match upgrade(up, t, &head, &key, inspect, id, fell_back).await {
        Ok((headers, io, rbuf)) => accepted(h, parts, headers, UpIo::Conn(io), rbuf, inspect, slot),
        Err(resp) => resp,
    }
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

fn key_of(h: &HeaderMap) -> Vec<u8> {
    h.get(header::SEC_WEBSOCKET_KEY).map(|k| k.as_bytes().to_vec()).unwrap_or_default()
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
