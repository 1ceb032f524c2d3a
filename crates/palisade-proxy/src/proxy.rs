//! The request lifecycle, numbered as in docs/ARCHITECTURE.md; this file drives phases 2 to 10
//! of a proxied request, one function per phase, in this order:
//!
//! 1. accept: `server.rs`, before this file;
//! 2. read head (`h1.rs` parses it): `read_head` keeps the raw header lines or builds the
//!    header map and finds the client IP through trusted proxies; `h2_head_refusal`;
//! 3. route: `route`, Host and path choose an app ([`crate::router`]; none: 404), then
//!    `choose_head_form`;
//! 4. head stages (access control, path and method checks) on the head alone, after the
//!    declared body size is checked against the limit (413 before reading anything);
//! 5. body: `read_body`, buffered up to the app's `inspect_body` (beyond: 413, or the rest
//!    streams uninspected);
//! 6. body stages: `body_stages`, `grpc_body_stages` (a buffered gRPC call's messages);
//! 7. upstream: `upstream_head` (hop-by-hop headers removed, forwarding headers and the
//!    stages' edits set, `upstream_length`, `upstream_path`, `host_setter`), then sent over
//!    HTTP/1.1 (`upstream.rs`), HTTP/2 ([`crate::h2_forward`]) or as a WebSocket
//!    handshake (`websocket.rs`); `upstream_failure` answers a failure;
//! 8. response and 9. response stages: `response_stages`;
//! 10. record: `Proxy::handle` sets `X-Request-Id` and finishes the `Record`.
//!
//! `handle_inner` runs phases 2 and 3, `routed` phases 4 to 9. Every response generated
//! here comes from [`crate::problem`].

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Instant;

use arc_swap::ArcSwap;
use bytes::{Bytes, BytesMut};
use http::{header, HeaderValue, Request, Response, StatusCode, Uri, Version};
use http_body::Body;
use palisade_config::{ForwardPath, HostHeader, Oversize};
use palisade_core::{run_response_stages, Outcome, RequestView, ResponseView};

use crate::body::{ClientBody, UpBody};
use crate::body_error::BodyError;
use crate::code;
use crate::h1::{ConnInfo, Handler, RawRequestHead};
use crate::h2_forward::{h2_request, send_h2, H2Outcome};
use crate::headers;
use crate::judge::{self, choose_app, view, PathRefusal};
use crate::metrics::{Metrics, PhaseKind, UpstreamErr};
use crate::problem;
use crate::record::{self, Captured, Record};
use crate::request_id::RequestId;
use crate::resp_body::RespBody;
use crate::snapshot::{App, Snapshot};
use crate::upstream::{self, UpstreamError};

/// What every worker shares: the current snapshot, the metrics, the events queue.
pub struct Proxy {
    pub snapshot: Arc<ArcSwap<Snapshot>>,
    pub metrics: Arc<Metrics>,
    pub events: Option<palisade_events::EventSender>,
}

impl Handler for Proxy {
    async fn call(&self, req: Request<ClientBody>, conn: &ConnInfo) -> Response<RespBody> {
        // A request: the worker busy-polls while it waits for the upstream (`server.busy_poll`).
        crate::spin::kick();
        self.handle(req, None, conn).await
    }

    async fn call_h1(&self, req: Request<ClientBody>, raw: RawRequestHead, conn: &ConnInfo) -> Response<RespBody> {
        crate::spin::kick();
        self.handle(req, Some(raw), conn).await
    }
}

/// Give an HTTP/1 request its header map (see `h1::RawRequestHead`), when it has none yet.
fn materialize(req: &mut Request<ClientBody>, raw: &mut Option<RawRequestHead>) {
    if let Some(r) = raw.take() {
        *req.headers_mut() = r.to_map();
    }
}

impl Proxy {
    /// Handle a request. An HTTP/1 request comes with its header fields in `raw` and an empty
    /// header map: a plain request to an app that keeps the Host goes upstream from those fields
    /// (its stages, if any, read a map built from them; without stages no map is built), any
    /// other gets its map first.
    pub async fn handle(&self, mut req: Request<ClientBody>, mut raw: Option<RawRequestHead>, conn: &ConnInfo) -> Response<RespBody> {
        let snap = self.snapshot.load_full();
        // A WebSocket handshake is judged and forwarded from its header map.
        let ws = crate::websocket::detect(&mut req, raw.as_ref());
        if ws.is_some() {
            materialize(&mut req, &mut raw);
        }
        let started = Instant::now();
        let id = crate::request_id::next();
        // A gRPC call gets the answers Palisade makes in the form gRPC clients read.
        let grpc_answer = match &raw {
            Some(r) => r.fields().find(|(n, _)| n.len() == 12 && n.eq_ignore_ascii_case(b"content-type")).and_then(|(_, v)| crate::grpc::answer_type(v)),
            None => req.headers().get(header::CONTENT_TYPE).and_then(|v| crate::grpc::answer_type(v.as_bytes())),
        };
        let grpc_call = grpc_answer.is_some();
        let method = req.method().clone();
        let access_log = snap.config.log.access_log;
        let path_for_log = access_log.then(|| req.uri().path().to_string());
        let mut rec = Record::default();
        if self.events.is_some() && record::sampled(snap.events.sample_allowed) {
            materialize(&mut req, &mut raw);
            rec.req = Some(Box::new(Captured::new(req.method(), req.uri(), req.headers())));
        }
        let (mut resp, client_ip, app) = handle_inner(&snap, req, raw, conn, id, &mut rec, ws, grpc_call).await;
        if let Some(ctype) = grpc_answer {
            resp = crate::grpc_answer::reshape(resp, &id, ctype);
        }
        // A streamed gRPC call is concluded when its response ends: a message may still be blocked.
        let mut rec = Some(rec);
        let status = resp.status().as_u16();
        if let RespBody::H2(body) = resp.body_mut() {
            if body.streams_judged_messages() {
                let (snap, metrics, events, elapsed) = (snap.clone(), self.metrics.clone(), self.events.clone(), started.elapsed());
                let mut rec = rec.take().unwrap_or_default();
                body.on_finish(Box::new(move |late| {
                    if let Some((block, judged)) = late {
                        let _ = block.record(&mut rec, (&judged.0, &judged.1, &judged.2));
                    }
                    record::finish(record::Source::Proxy, &snap, &metrics, events.as_ref(), rec, &id, client_ip, status, elapsed);
                }));
            }
        }
        crate::websocket::handshake_done(&mut resp, self.events.as_ref());
        // A pass-through response head takes the id as one more header line (no map, no
        // header value); any other response gets it in its map.
        let in_raw_head = match resp.body_mut() {
            RespBody::Upstream(up) => up.set_raw_request_id(id),
            _ => false,
        };
        if !in_raw_head {
            resp.headers_mut().insert(headers::X_REQUEST_ID, id.header_value());
        }
        if let Some(rec) = rec {
            record::finish(record::Source::Proxy, &snap, &self.metrics, self.events.as_ref(), rec, &id, client_ip, resp.status().as_u16(), started.elapsed());
        }
        if let Some(path) = path_for_log {
            tracing::info!(
                target: "palisade::access",
                request_id = id.as_str(),
                app = app.unwrap_or("-"),
                method = %method,
                path = %path,
                client_ip = %client_ip,
                status = resp.status().as_u16(),
                duration_us = started.elapsed().as_micros() as u64,
                "request"
            );
        }
        resp
    }
}

fn reject(status: StatusCode, code: &str, title: &str, id: RequestId) -> Response<RespBody> {
    problem::response(status, code, title, id.as_str(), &[])
}

/// Phases 2 to 9 of the lifecycle (module doc) for one request, each phase a function below in
/// that order; the record (phase 10) is `Proxy::handle`'s. Returns the response, the client IP
/// and the app's name (for the access log).
#[allow(clippy::too_many_arguments)]
async fn handle_inner<'s>(
    snap: &'s Arc<Snapshot>,
    mut req: Request<ClientBody>,
    mut raw: Option<RawRequestHead>,
    conn: &ConnInfo,
    id: RequestId,
    rec: &mut Record,
    ws: Option<crate::websocket::Kind>,
    grpc_call: bool,
) -> (Response<RespBody>, IpAddr, Option<&'s str>) {
    // 2. Read head.
    let client_ip = read_head(snap, &mut req, &mut raw, conn);
    if let Some(refused) = h2_head_refusal(&req, &snap.config.server, id) {
        return (refused, client_ip, None);
    }
    // 3. Route.
    let (app_idx, canonical, host_value) = match route(snap, &req, raw.as_ref(), id) {
        Ok(routed) => routed,
        Err((refused, app)) => return (*refused, client_ip, app),
    };
    let app = &snap.apps[app_idx];
    rec.app = Some(app_idx);
    let r = Routed { snap, app_idx, app, conn, id, client_ip, canonical };
    let resp = routed(&r, req, raw, host_value, rec, ws, grpc_call).await;
    (resp, client_ip, Some(app.cfg.name.as_str()))
}

/// A routed request: what the phases after routing share.
struct Routed<'s, 'c> {
    snap: &'s Arc<Snapshot>,
    app_idx: usize,
    app: &'s App,
    conn: &'c ConnInfo,
    id: RequestId,
    client_ip: IpAddr,
    /// The path the request is judged on, when it differs from the raw one.
    canonical: Option<String>,
}

/// Phase 2, read head: choose the head's form (raw lines or header map) and find the client IP.
fn read_head(snap: &Snapshot, req: &mut Request<ClientBody>, raw: &mut Option<RawRequestHead>, conn: &ConnInfo) -> IpAddr {
    let server = &snap.config.server;
    // The header fields can go upstream as they are only for a plain origin-form request from a
    // peer that is not a trusted proxy (the client IP and forwarding headers then do not depend
    // on the request's headers); otherwise the map is built now.
    if raw.as_ref().is_some_and(|r| !r.plain() || req.uri().authority().is_some() || headers::peer_trusted(conn.peer.ip(), &server.trusted_proxies)) {
        materialize(req, raw);
    }
    headers::client_ip(conn.peer.ip(), req.headers(), &server.trusted_proxies)
}

/// Phase 2, read head: what HTTP/2 heads are refused for (HTTP/1 refuses these while parsing
/// the head, `h1.rs`).
fn h2_head_refusal(req: &Request<ClientBody>, server: &palisade_config::ServerConfig, id: RequestId) -> Option<Response<RespBody>> {
    if req.version() != Version::HTTP_2 {
        return None;
    }
    if h2_head_too_large(req, server.max_header_size, server.max_headers) {
        return Some(reject(StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE, code::HEADERS_TOO_LARGE, "Request header fields too large", id));
    }
    if req.method() == http::Method::CONNECT && req.extensions().get::<hyper::ext::Protocol>().is_none() {
        // A tunnel (RFC 9113 §8.5) is not something Palisade proxies: answered at once, never
        // sent upstream as a request.
        return Some(reject(StatusCode::NOT_IMPLEMENTED, code::UNSUPPORTED, "CONNECT is not supported", id));
    }
    // `:authority` has no userinfo (RFC 9113 §8.3.1) and, like `host`, follows the Host grammar.
    let bad_authority = req.uri().authority().is_some_and(|a| !crate::codec::valid_host(a.as_str().as_bytes()));
    if bad_authority || req.headers().get(header::HOST).is_some_and(|h| !crate::codec::valid_host(h.as_bytes())) {
        return Some(reject(StatusCode::BAD_REQUEST, code::BAD_REQUEST, "Invalid Host header", id));
    }
    None
}

/// Phase 3, route: Host and path choose an app. Returns the app's index, the canonical path and
/// the Host header when it was read from the map; a refusal comes with the app's name if known.
#[allow(clippy::type_complexity)]
fn route<'s>(
    snap: &'s Snapshot,
    req: &Request<ClientBody>,
    raw: Option<&RawRequestHead>,
    id: RequestId,
) -> Result<(usize, Option<String>, Option<HeaderValue>), (Box<Response<RespBody>>, Option<&'s str>)> {
    // Absolute-form and HTTP/2 requests carry the host in the URI.
    // The Host header, looked up once (it is also what goes upstream with `host_header: preserve`).
    // (With the raw fields, the Host is read from them: no header value is made.)
    let host_value = if raw.is_none() && req.uri().authority().is_none() { req.headers().get(header::HOST).cloned() } else { None };
    let host: &[u8] = match (req.uri().authority(), raw) {
        (Some(a), _) => a.as_str().as_bytes(),
        (None, Some(r)) => r.host_visible(),
        (None, None) => host_value.as_ref().and_then(|h| h.to_str().ok()).map_or(b"", str::as_bytes),
    };
    match choose_app(snap, crate::router::host_only_bytes(host), req.uri().path()) {
        Ok(Some((app_idx, canonical))) => Ok((app_idx, canonical, host_value)),
        Ok(None) => Err((Box::new(reject(StatusCode::NOT_FOUND, code::NO_APP, "No application for this host and path", id)), None)),
        Err(PathRefusal { app, code, detail }) => {
            let reason = palisade_core::Reason::new(code).at("path").detail(detail);
            Err((
                Box::new(problem::response(StatusCode::BAD_REQUEST, code, "Bad request path", id.as_str(), &[reason])),
                app.map(|i| snap.apps[i].cfg.name.as_str()),
            ))
        }
    }
}

/// Phases 4 to 9 for a routed request.
async fn routed(
    r: &Routed<'_, '_>,
    mut req: Request<ClientBody>,
    mut raw: Option<RawRequestHead>,
    mut host_value: Option<HeaderValue>,
    rec: &mut Record,
    ws: Option<crate::websocket::Kind>,
    grpc_call: bool,
) -> Response<RespBody> {
    let (app, id) = (r.app, r.id);
    let lines_and_map = choose_head_form(app, &mut req, &mut raw, &mut host_value);
    let h2_up = app.upstream.speaks_h2();
    let client_h1 = req.version() != Version::HTTP_2;
    // gRPC needs `te: trailers` upstream (a hop-by-hop header otherwise).
    let te_trailers = req.headers().get(header::TE).is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"trailers"));
    let (mut parts, body) = req.into_parts();
    // A gRPC call from an HTTP/2 client to an HTTP/2 upstream streams: its messages are judged
    // one by one as they pass (`grpc::Inspect`) instead of the body being buffered first.
    // (gRPC-Web's request is one message: judged whole, and a block is always its answer.)
    let grpc_stream = grpc_call && h2_up && !client_h1 && ws.is_none() && !crate::grpc::is_grpc_web(&parts.headers);
    let grpc_encoding = if grpc_call { crate::grpc::Encoding::of(&parts.headers) } else { crate::grpc::Encoding::Identity };

    // 4. Head stages, after the declared body size (413 before anything is read).
    let declared = body.size_hint().exact();
    let hard_limit = if app.cfg.oversize == Oversize::Reject { app.cfg.inspect_body } else { app.cfg.max_body_size };
    if declared.is_some_and(|n| n > hard_limit) {
        return reject(StatusCode::PAYLOAD_TOO_LARGE, code::BODY_TOO_LARGE, "Request body too large", id);
    }
    let mut body = body;
    body.limit_to(hard_limit);
    let mut outcome = Outcome::default();
    // The view of the head phase, the body phase's too with the body set (built once).
    let head_view = (!app.stages.is_empty()).then(|| view(&parts, r.canonical.as_deref(), &r.id, app, r.client_ip, b"", false, r.conn.tls));
    if let Some(view) = &head_view {
        if let Some(b) = judge::head(app, view, &mut outcome) {
            return problem::blocked(b, id, rec, (&parts.method, &parts.uri, &parts.headers));
        }
    }

    // 5. Body.
    let (up_body, grpc_body) = match read_body(r, body, grpc_stream).await {
        Ok(read) => read,
        Err(refused) => return refused,
    };

    // 6. Body stages.
    if app.wants_body && grpc_body.is_none() {
        // (`wants_body` implies stages, hence a head view.)
        let judged = if grpc_call {
            let Some(head) = &head_view else { unreachable!("wants_body implies stages") };
            grpc_body_stages(r, &parts, &up_body, head, &grpc_encoding, &mut outcome, rec)
        } else {
            body_stages(r, &parts, &up_body, head_view.as_ref(), &mut outcome, rec)
        };
        if let Some(refused) = judged {
            return refused;
        }
    }
    // What the streamed messages of a gRPC call are judged with: the request as judged, what the
    // head stages established.
    let grpc_judge = (grpc_body.is_some() && app.wants_body)
        .then(|| (parts.method.clone(), parts.uri.clone(), parts.headers.clone(), r.canonical.clone(), outcome.context.clone()));
    judge::allowed(app, &mut outcome, id, rec, (&parts.method, &parts.uri, &parts.headers));
    // What the response stages will need to know about the request, before it is rewritten.
    let judged_req = app.wants_response.then(|| (parts.method.clone(), parts.uri.clone(), parts.headers.clone(), r.canonical.clone()));
    // A WebSocket connection's messages are judged in the light of its handshake as judged.
    let ws_judged = ws.as_ref().map(|_| (parts.method.clone(), parts.uri.clone(), parts.headers.clone(), r.canonical.clone()));

    // 7. Upstream.
    // A stage that edits the headers edits the map: then the map goes upstream, not the lines.
    let edits = !outcome.context.strip_upstream.is_empty() || !outcome.context.upstream_headers.is_empty();
    if lines_and_map {
        if edits {
            host_value = raw.as_ref().and_then(RawRequestHead::host);
            raw = None;
        } else {
            // The lines go upstream: the map built for the stages is spare (and must not be sent too).
            crate::h1::spare_map(std::mem::take(&mut parts.headers));
        }
    }
    let up = upstream_head(r, &mut parts, raw, host_value, &up_body, declared, edits, &mut outcome.context);
    let response_headers = std::mem::take(&mut outcome.context.response_headers);
    let set_host = host_setter(app.cfg.host_header.clone(), client_h1 && up.host_in_map && !edits, up.orig_host);
    // Without response stages, an HTTP/1 client gets the upstream's header lines copied as
    // they are (hop-by-hop ones removed) instead of going through a `HeaderMap`.
    // Stage-set response headers replace the upstream's of the same name: that needs the map.
    let raw_response = judged_req.is_none() && client_h1 && response_headers.is_empty();
    if let (Some(kind), Some(judged)) = (ws, ws_judged) {
        let handshake = crate::websocket::Handshake {
            snap: r.snap,
            app_idx: r.app_idx,
            kind,
            parts,
            extra_lines: &up.forward_lines,
            set_host: &set_host,
            judged,
            context: std::mem::take(&mut outcome.context),
            id,
            client_ip: r.client_ip,
            tls: r.conn.tls,
        };
        let resp = crate::websocket::forward(handshake).await;
        if matches!(resp.body(), RespBody::Upgrade(_)) {
            rec.upstream_status = Some(StatusCode::SWITCHING_PROTOCOLS.as_u16());
        }
        return resp;
    }
    let mut up_req = Request::from_parts(parts, up_body);
    let (mut forward_lines, mut raw_response, mut length_in_lines) = (up.forward_lines, raw_response, up.length_in_lines);
    if h2_up {
        let (req, shared) =
            h2_request(up_req, &forward_lines, te_trailers, grpc_body, grpc_judge, r.snap, r.app_idx, &grpc_encoding, id, r.client_ip, r.conn.tls);
        match send_h2(app, req, &set_host, shared, grpc_call, id, rec).await {
            H2Outcome::Done(resp) => {
                recycle_forward_lines(forward_lines);
                let mut resp = *resp;
                if !response_headers.is_empty() {
                    headers::add_response_headers(resp.headers_mut(), response_headers);
                }
                // The upstream's answer to a plain request is judged by the response stages
                // (a gRPC call's response streams: its messages are not judged).
                if let (Some(judged), false) = (judged_req, grpc_call) {
                    let (parts, body) = resp.into_parts();
                    return match body {
                        RespBody::H2(body) => {
                            let buffered = crate::response::buffer_h2(body, &parts.headers, app.cfg.inspect_response).await;
                            judge_response(r, parts, buffered, judged, rec)
                        }
                        // Palisade's own answer (an upstream failure).
                        other => Response::from_parts(parts, other),
                    };
                }
                return resp;
            }
            H2Outcome::Http1(req) => {
                // The forwarding headers are in the map now.
                forward_lines.clear();
                raw_response = false;
                length_in_lines = false;
                up_req = *req;
            }
        }
    }
    let send_cx = upstream::SendContext { metrics: &app.metrics, body_timeout: r.snap.config.server.body_read_timeout };
    let sent = upstream::send(&app.upstream, up_req, &set_host, raw_response, &forward_lines, length_in_lines, &send_cx).await;
    recycle_forward_lines(forward_lines);
    match sent {
        // 8. Response and 9. response stages.
        Ok(resp) => response_stages(r, resp, response_headers, judged_req, rec).await,
        Err(e) => upstream_failure(r, e, rec),
    }
}

/// Phase 3, route: the head's form for the routed app. Only an app that preserves the Host takes
/// the fields upstream as they are (a plain request has its Host): its stages read a map built
/// from them, and the fields still go upstream as they are unless a stage edits the headers
/// (the return value tells). Any other request gets its map now, as does one to an HTTP/2
/// upstream (which gets the request from its header map).
fn choose_head_form(app: &App, req: &mut Request<ClientBody>, raw: &mut Option<RawRequestHead>, host_value: &mut Option<HeaderValue>) -> bool {
    let preserve = matches!(app.cfg.host_header, HostHeader::Preserve);
    let h2_up = app.upstream.speaks_h2();
    let lines_and_map = raw.is_some() && !app.stages.is_empty() && preserve && !h2_up;
    if lines_and_map {
        if let Some(r) = raw {
            *req.headers_mut() = r.to_map();
        }
    } else if raw.is_some() && (h2_up || !(app.stages.is_empty() && preserve)) {
        *host_value = raw.as_ref().and_then(RawRequestHead::host);
        materialize(req, raw);
    }
    lines_and_map
}

/// Phase 5, body: buffered up to the app's `inspect_body` (beyond it, the rest streams
/// uninspected); a streamed gRPC call's body is kept as it is (second value) for its messages
/// to be judged as they pass. A request without a body does not even build the reading future.
async fn read_body(r: &Routed<'_, '_>, body: ClientBody, grpc_stream: bool) -> Result<(UpBody, Option<ClientBody>), Response<RespBody>> {
    let id = r.id;
    let read = if body.is_end_stream() {
        Ok(UpBody::Full(None))
    } else if grpc_stream {
        return Ok((UpBody::Full(None), Some(body)));
    } else {
        buffer_body(body, r.app, r.snap.config.server.body_read_timeout).await
    };
    match read {
        Ok(b) => Ok((b, None)),
        Err(BodyError::TooLarge) => Err(reject(StatusCode::PAYLOAD_TOO_LARGE, code::BODY_TOO_LARGE, "Request body too large", id)),
        Err(BodyError::Timeout) => Err(reject(StatusCode::REQUEST_TIMEOUT, code::BODY_TIMEOUT, "Request body timeout", id)),
        Err(e) => {
            tracing::debug!(request_id = id.as_str(), error = %e, "client body failed");
            Err(reject(StatusCode::BAD_REQUEST, code::BAD_REQUEST, "Request body could not be read", id))
        }
    }
}

/// The inspected part of a buffered body, and whether there is more.
fn inspected(up_body: &UpBody) -> (&[u8], bool) {
    match up_body {
        UpBody::Full(b) => (b.as_deref().unwrap_or(b""), false),
        UpBody::Chained { head, .. } => (head.as_deref().unwrap_or(b""), true),
    }
}

/// Phase 6, body stages on a buffered body. Returns the answer to a blocked request.
fn body_stages(
    r: &Routed<'_, '_>,
    parts: &http::request::Parts,
    up_body: &UpBody,
    head_view: Option<&RequestView<'_>>,
    outcome: &mut Outcome,
    rec: &mut Record,
) -> Option<Response<RespBody>> {
    let app = r.app;
    let (bytes, truncated) = inspected(up_body);
    if truncated {
        tracing::info!(request_id = r.id.as_str(), app = %app.cfg.name, inspected = bytes.len(), "body larger than inspect_body: the rest streams uninspected");
    }
    let view = match head_view {
        Some(v) => RequestView { body: bytes, body_truncated: truncated, ..*v },
        None => view(parts, r.canonical.as_deref(), &r.id, app, r.client_ip, bytes, truncated, r.conn.tls),
    };
    judge::body(app, &view, outcome).map(|b| problem::blocked(b, r.id, rec, (&parts.method, &parts.uri, &parts.headers)))
}

/// Phase 6, body stages on a buffered gRPC body (gRPC-Web's text mode decoded from base64): each
/// message judged on its own, by the values it carries. Returns the answer to a blocked request.
fn grpc_body_stages(
    r: &Routed<'_, '_>,
    parts: &http::request::Parts,
    up_body: &UpBody,
    head: &RequestView<'_>,
    encoding: &crate::grpc::Encoding,
    outcome: &mut Outcome,
    rec: &mut Record,
) -> Option<Response<RespBody>> {
    let app = r.app;
    let (bytes, truncated) = inspected(up_body);
    // gRPC-Web's text mode: the frames in base64 (they go upstream as they came).
    let decoded;
    let bytes = if crate::grpc::is_grpc_web_text(&parts.headers) {
        let Some(d) = crate::grpc::decode_web_text(bytes, truncated) else {
            tracing::warn!(request_id = r.id.as_str(), app = %app.cfg.name, reason = crate::grpc::WEB_TEXT_BASE64, "gRPC-Web text request body is not base64");
            return Some(crate::grpc_answer::response(crate::grpc::status::INTERNAL, crate::grpc::WEB_TEXT_BASE64, r.id.as_str()));
        };
        decoded = d;
        &decoded[..]
    } else {
        bytes
    };
    let mut stop_block: Option<judge::Block> = None;
    let msg_type = crate::grpc::message_type(app.grpc_types.as_ref(), parts.uri.path(), true);
    let judged = crate::grpc::judge_buffered(bytes, truncated, app.cfg.inspect_body as usize, encoding, |payload| {
        let mut o = Outcome { context: outcome.context.clone(), ..Outcome::default() };
        o.context.protocol_values = Some(Arc::new(crate::grpc::values(payload, msg_type.as_ref())));
        let v = RequestView { body: payload, body_truncated: false, ..*head };
        match judge::body(app, &v, &mut o) {
            Some(b) => {
                stop_block = Some(b);
                Some(crate::grpc::Stop { grpc_status: crate::grpc::status::PERMISSION_DENIED, code: String::new(), block: None })
            }
            None => {
                outcome.monitored.append(&mut o.monitored);
                None
            }
        }
    });
    if let Err(stop) = judged {
        if let Some(b) = stop_block {
            return Some(problem::blocked(b, r.id, rec, (&parts.method, &parts.uri, &parts.headers)));
        }
        return Some(crate::grpc_answer::response(stop.grpc_status, &stop.code, r.id.as_str()));
    }
    None
}

/// The head of the upstream request as [`upstream_head`] leaves it.
struct UpHead {
    /// Header lines that go upstream besides the map (the client's as they are, forwarding).
    forward_lines: Vec<u8>,
    /// The Content-Length is one of `forward_lines`.
    length_in_lines: bool,
    /// The host the request was routed by.
    orig_host: Option<HeaderValue>,
    /// The client's Host line or header goes upstream as it is (for an HTTP/1 client whose
    /// headers no stage edited).
    host_in_map: bool,
}

/// Phase 7, upstream: hop-by-hop headers removed, forwarding headers and the stages'
/// edits set, the Content-Length and the path as the upstream gets them.
#[allow(clippy::too_many_arguments)]
fn upstream_head(
    r: &Routed<'_, '_>,
    parts: &mut http::request::Parts,
    raw: Option<RawRequestHead>,
    host_value: Option<HeaderValue>,
    up_body: &UpBody,
    declared: Option<u64>,
    edits: bool,
    context: &mut palisade_core::Context,
) -> UpHead {
    let (conn, server) = (r.conn, &r.snap.config.server);
    // The host the request was routed by is the host that goes upstream: the URI authority
    // (absolute form, HTTP/2 `:authority`) wins over a Host header (RFC 9112 §3.2.2), so a
    // request checked under one app's rules cannot reach another virtual host.
    let host_from_header = parts.uri.authority().is_none();
    let orig_host = match parts.uri.authority() {
        Some(a) => HeaderValue::from_str(a.as_str()).ok(),
        None => host_value,
    };
    let peer_trusted = headers::peer_trusted(conn.peer.ip(), &server.trusted_proxies);
    let mut forward_lines = FORWARD_LINES.with(|f| f.borrow_mut().pop()).unwrap_or_default();
    forward_lines.clear();
    let present = match &raw {
        // The client's lines that go upstream unchanged come first (the map is empty).
        Some(r) => {
            r.upstream_lines(&mut forward_lines);
            headers::Present::default()
        }
        None => {
            // One pass over the names tells which of the headers rewritten below are there at all.
            let present = headers::Present::scan(&parts.headers);
            let present = headers::strip_hop_by_hop_present(&mut parts.headers, present);
            if present.expect() {
                parts.headers.remove(header::EXPECT);
            }
            present
        }
    };
    let fwd = headers::Forwarding {
        peer_value: &conn.peer_ip_header,
        client: r.client_ip,
        peer_trusted,
        tls: conn.tls,
        orig_host: match (&orig_host, &raw) {
            (Some(h), _) => Some(h.as_bytes()),
            (None, Some(r)) => r.host_bytes(),
            (None, None) => None,
        },
        request_id: r.id.as_bytes(),
        untrusted: Some((&conn.untrusted_lines.0[..conn.untrusted_lines.1], &conn.untrusted_lines.0[conn.untrusted_lines.1..])),
    };
    headers::set_forwarding_present(&mut parts.headers, &mut forward_lines, &fwd, present);
    if edits {
        headers::apply_stage_edits(&mut parts.headers, context);
    }
    let length_in_lines = upstream_length(parts, raw.as_ref(), up_body, &mut forward_lines, declared, edits, present);
    upstream_path(parts, r.canonical.as_deref(), r.app);
    parts.version = Version::HTTP_11;
    let host_in_map = host_from_header && (orig_host.is_some() || raw.is_some());
    UpHead { forward_lines, length_in_lines, orig_host, host_in_map }
}

/// Phase 7, upstream: the Content-Length. With the raw fields, it goes upstream as a
/// line of its own (the client's was not copied): the buffered body's length, or for a streamed
/// body the client's. Returns whether it is in the lines.
fn upstream_length(
    parts: &mut http::request::Parts,
    raw: Option<&RawRequestHead>,
    up_body: &UpBody,
    forward_lines: &mut Vec<u8>,
    declared: Option<u64>,
    edits: bool,
    present: headers::Present,
) -> bool {
    // A Content-Length may be there from the client or from a stage's edits.
    let may_have_length = present.content_length() || edits;
    let mut length_in_lines = false;
    match (up_body, raw) {
        (UpBody::Full(b), Some(_)) => {
            let len = b.as_ref().map_or(0, |b| b.len());
            let method = &parts.method;
            if len > 0 || *method == http::Method::POST || *method == http::Method::PUT || *method == http::Method::PATCH {
                headers::length_line(forward_lines, len as u64);
                length_in_lines = true;
            }
        }
        (UpBody::Chained { .. }, Some(r)) => {
            if let Some(v) = r.content_length() {
                headers::line_bytes(forward_lines, b"content-length", v);
                length_in_lines = true;
            }
        }
        (UpBody::Full(b), None) => {
            let len = b.as_ref().map_or(0, |b| b.len());
            let method = &parts.method;
            if len > 0 || *method == http::Method::POST || *method == http::Method::PUT || *method == http::Method::PATCH {
                // The client's own Content-Length usually says exactly this: then it stays.
                let mut digits = [0u8; 20];
                let want = crate::codec::decimal(len as u64, &mut digits);
                let same = !edits && present.content_length() && parts.headers.get(header::CONTENT_LENGTH).is_some_and(|v| v.as_bytes() == want);
                if !same {
                    parts.headers.insert(header::CONTENT_LENGTH, HeaderValue::from(len));
                }
            } else if may_have_length {
                parts.headers.remove(header::CONTENT_LENGTH);
            }
        }
        (UpBody::Chained { .. }, None) => {
            if declared.is_none() && may_have_length {
                parts.headers.remove(header::CONTENT_LENGTH);
            }
        }
    }
    length_in_lines
}

/// Phase 7, upstream: the path upstream, the canonical one the request was judged on or
/// the client's, in origin form (scheme and authority of absolute-form and HTTP/2 requests
/// dropped).
fn upstream_path(parts: &mut http::request::Parts, canonical: Option<&str>, app: &App) {
    if let (Some(c), ForwardPath::Canonical) = (canonical, app.cfg.path.forward) {
        let mut uri_parts = std::mem::take(&mut parts.uri).into_parts();
        let pq = match uri_parts.path_and_query.as_ref().and_then(|pq| pq.query()) {
            Some(q) => http::uri::PathAndQuery::from_maybe_shared(Bytes::from(format!("{c}?{q}"))),
            None => http::uri::PathAndQuery::from_maybe_shared(Bytes::from(c.to_string())),
        };
        // (A canonical path has only bytes a URI path may hold.)
        uri_parts.path_and_query = pq.ok().or(uri_parts.path_and_query);
        parts.uri = Uri::from_parts(uri_parts).unwrap_or_else(|_| Uri::from_static("/"));
    }
    if parts.uri.scheme().is_some() || parts.uri.authority().is_some() {
        let mut uri_parts = std::mem::take(&mut parts.uri).into_parts();
        uri_parts.scheme = None;
        uri_parts.authority = None;
        if uri_parts.path_and_query.is_none() {
            uri_parts.path_and_query = Some(http::uri::PathAndQuery::from_static("/"));
        }
        parts.uri = Uri::from_parts(uri_parts).unwrap_or_else(|_| Uri::from_static("/"));
    }
}

/// Phase 7, upstream: what sets the Host for the chosen target. An HTTP/1 request in
/// origin form carries exactly one Host header (`h1.rs`), which is the host preserved: then
/// (`host_in_map`) there is nothing to set.
fn host_setter(host_header: HostHeader, host_in_map: bool, orig_host: Option<HeaderValue>) -> impl Fn(&mut http::HeaderMap, &HeaderValue) {
    // (Not needed when the Host stays as it is.)
    let orig_host_for_set = if host_in_map { None } else { orig_host };
    move |h: &mut http::HeaderMap, authority: &HeaderValue| match &host_header {
        HostHeader::Preserve => {
            if host_in_map {
                return;
            }
            if let Some(v) = &orig_host_for_set {
                h.insert(header::HOST, v.clone());
            } else {
                h.insert(header::HOST, authority.clone());
            }
        }
        HostHeader::Upstream => {
            h.insert(header::HOST, authority.clone());
        }
        HostHeader::Fixed(v) => {
            if let Ok(v) = HeaderValue::from_str(v) {
                h.insert(header::HOST, v);
            }
        }
    }
}

/// The request as judged, for the response stages: method, URI, headers, canonical path.
type JudgedRequest = (http::Method, Uri, http::HeaderMap, Option<String>);

/// Phases 8 and 9 for an HTTP/1 upstream, response and response stages: hop-by-hop headers
/// removed and the stages' response headers added; without response stages the upstream's
/// response streams back as it is, else its start is buffered (up to `inspect_response`) and
/// judged.
async fn response_stages(
    r: &Routed<'_, '_>,
    resp: Response<crate::upstream::UpstreamBody>,
    response_headers: Vec<(http::HeaderName, HeaderValue)>,
    judged_req: Option<JudgedRequest>,
    rec: &mut Record,
) -> Response<RespBody> {
    let app = r.app;
    rec.upstream_status = Some(resp.status().as_u16());
    let (mut resp_parts, body) = resp.into_parts();
    headers::strip_hop_by_hop(&mut resp_parts.headers);
    if !response_headers.is_empty() {
        headers::add_response_headers(&mut resp_parts.headers, response_headers);
    }
    let Some(judged) = judged_req else {
        return Response::from_parts(resp_parts, RespBody::Upstream(body));
    };
    let buffered = crate::response::buffer(body, &resp_parts.headers, app.cfg.inspect_response).await;
    judge_response(r, resp_parts, buffered, judged, rec)
}

/// Phase 9, response stages on a buffered response (from either kind of upstream).
fn judge_response(
    r: &Routed<'_, '_>,
    resp_parts: http::response::Parts,
    buffered: Result<crate::response::Buffered, BodyError>,
    judged: JudgedRequest,
    rec: &mut Record,
) -> Response<RespBody> {
    let (app, id) = (r.app, r.id);
    let (method, uri, req_headers, canonical) = judged;
    let buffered = match buffered {
        Ok(b) => b,
        Err(e) => {
            rec.upstream_error = Some(UpstreamErr::Protocol);
            tracing::warn!(request_id = id.as_str(), upstream = %app.upstream.cfg.name, error = %e, "upstream response failed");
            return reject(StatusCode::BAD_GATEWAY, code::UPSTREAM_ERROR, "Upstream failed", id);
        }
    };
    if buffered.truncated {
        tracing::info!(request_id = id.as_str(), app = %app.cfg.name, limit = app.cfg.inspect_response, "response larger than inspect_response: only its start is judged");
    }
    let req_view = RequestView {
        request_id: id.as_str(),
        app: &app.cfg.name,
        client_ip: r.client_ip,
        method: &method,
        path: canonical.as_deref().unwrap_or(uri.path()),
        raw_path: uri.path(),
        query: uri.query(),
        headers: &req_headers,
        body: b"",
        body_truncated: false,
        tls: r.conn.tls,
    };
    let resp_view = ResponseView {
        status: resp_parts.status.as_u16(),
        headers: &resp_parts.headers,
        body: &buffered.judged,
        body_truncated: buffered.truncated,
        body_undecodable: buffered.undecodable,
    };
    let mut outcome = Outcome::default();
    let t = Instant::now();
    let stop = run_response_stages(&app.stages, &req_view, &resp_view, &mut outcome);
    app.metrics.phase(PhaseKind::Response, t.elapsed());
    if stop {
        if let Some(b) = outcome.blocked.as_mut() {
            b.1 = b.1.or(Some(StatusCode::BAD_GATEWAY.as_u16()));
        }
        return problem::blocked(judge::block(app, outcome, id.as_str()), id, rec, (&method, &uri, &req_headers));
    }
    judge::monitored(app, &mut outcome, id, rec, (&method, &uri, &req_headers));
    Response::from_parts(resp_parts, buffered.body)
}

/// Phase 7, upstream: the answer for an HTTP/1 upstream that failed.
fn upstream_failure(r: &Routed<'_, '_>, e: UpstreamError, rec: &mut Record) -> Response<RespBody> {
    let (app, id) = (r.app, r.id);
    match e {
        UpstreamError::Timeout => {
            rec.upstream_error = Some(UpstreamErr::Timeout);
            tracing::warn!(request_id = id.as_str(), upstream = %app.upstream.cfg.name, "upstream timed out");
            reject(StatusCode::GATEWAY_TIMEOUT, code::UPSTREAM_TIMEOUT, "Upstream timed out", id)
        }
        UpstreamError::Connect(e) => {
            // (Each failed attempt was counted as it happened.)
            tracing::warn!(request_id = id.as_str(), upstream = %app.upstream.cfg.name, error = %e, "upstream unavailable");
            reject(StatusCode::BAD_GATEWAY, code::UPSTREAM_UNAVAILABLE, "Upstream unavailable", id)
        }
        UpstreamError::ClientBody(e) => {
            tracing::info!(request_id = id.as_str(), error = %e, "client body failed while streaming upstream");
            match e {
                BodyError::TooLarge => reject(StatusCode::PAYLOAD_TOO_LARGE, code::BODY_TOO_LARGE, "Request body too large", id),
                BodyError::Timeout => reject(StatusCode::REQUEST_TIMEOUT, code::BODY_TIMEOUT, "Request body timeout", id),
                _ => reject(StatusCode::BAD_REQUEST, code::BAD_REQUEST, "Request body could not be read", id),
            }
        }
        UpstreamError::Protocol(e) => {
            rec.upstream_error = Some(UpstreamErr::Protocol);
            tracing::warn!(request_id = id.as_str(), upstream = %app.upstream.cfg.name, error = %e, "upstream failed");
            reject(StatusCode::BAD_GATEWAY, code::UPSTREAM_ERROR, "Upstream failed", id)
        }
    }
}

thread_local! {
    /// Buffers for the forwarding header lines of requests being sent upstream, kept for the
    /// next requests (a worker needs one per request waiting for its upstream) instead of one
    /// allocation, and its growth, per request.
    static FORWARD_LINES: std::cell::RefCell<Vec<Vec<u8>>> = const { std::cell::RefCell::new(Vec::new()) };
}

fn recycle_forward_lines(forward_lines: Vec<u8>) {
    FORWARD_LINES.with(|f| {
        let mut f = f.borrow_mut();
        if f.len() < 256 && forward_lines.capacity() <= 4096 {
            f.push(forward_lines);
        }
    });
}

/// HTTP/2 heads are limited like HTTP/1 ones: the header list size as HPACK counts it
/// (name + value + 32 per field, RFC 7541 §4.1), pseudo-headers included, and the field count.
fn h2_head_too_large(req: &Request<ClientBody>, max_size: usize, max_headers: usize) -> bool {
    if req.headers().len() > max_headers {
        return true;
    }
    let u = req.uri();
    let uri_len = u.scheme_str().map_or(0, str::len) + u.authority().map_or(0, |a| a.as_str().len()) + u.path_and_query().map_or(1, |p| p.as_str().len());
    let pseudo = req.method().as_str().len() + uri_len + 4 * 32;
    let fields: usize = req.headers().iter().map(|(n, v)| n.as_str().len() + v.len() + 32).sum();
    pseudo + fields > max_size
}

/// Read the body up to the app's inspection limit.
pub(crate) async fn buffer_body(mut body: ClientBody, app: &App, timeout: std::time::Duration) -> Result<UpBody, BodyError> {
    if body.is_end_stream() {
        return Ok(UpBody::Full(None));
    }
    let limit = app.cfg.inspect_body;
    let max = app.cfg.max_body_size;
    let declared = body.size_hint().exact();
    let read = async {
        let mut first: Option<Bytes> = None;
        let mut buf: Option<BytesMut> = None;
        let mut total: u64 = 0;
        loop {
            // `body_read_timeout` runs between reads (HTTP/1 bodies also time themselves that
            // way): a slow client whose bytes keep coming is not cut off.
            let frame = tokio::time::timeout(timeout, std::future::poll_fn(|cx| std::pin::Pin::new(&mut body).poll_frame(cx))).await;
            let Some(frame) = frame.map_err(|_| BodyError::Timeout)? else { break };
            let Ok(data) = frame?.into_data() else { continue };
            total += data.len() as u64;
            if total > limit {
                if app.cfg.oversize == Oversize::Reject || total > max {
                    return Err(BodyError::TooLarge);
                }
                // Keep what fits as the inspected prefix; the rest streams.
                let mut all = match (first.take(), buf.take()) {
                    (_, Some(b)) => b,
                    (Some(f), None) => BytesMut::from(&f[..]),
                    (None, None) => BytesMut::new(),
                };
                all.extend_from_slice(&data);
                let spill = all.split_off(limit as usize).freeze();
                let chained = UpBody::Chained { head: Some(all.freeze()), spill: Some(spill), rest: body, remaining: max - total };
                return Ok::<(UpBody, bool), BodyError>((chained, true));
            }
            match (&mut first, &mut buf) {
                (None, None) => first = Some(data),
                (Some(f), None) => {
                    let mut b = BytesMut::with_capacity(declared.unwrap_or(total * 2).min(limit) as usize);
                    b.extend_from_slice(f);
                    b.extend_from_slice(&data);
                    first = None;
                    buf = Some(b);
                }
                (_, Some(b)) => b.extend_from_slice(&data),
            }
        }
        let full = match (first, buf) {
            (_, Some(b)) => Some(b.freeze()),
            (f, None) => f,
        };
        Ok((UpBody::Full(full), false))
    };
    read.await.map(|(b, _)| b)
}
