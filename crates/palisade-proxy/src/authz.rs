//! The authorization API for other gateways (`authz:` in the configuration): Palisade judges a
//! request another gateway received, without proxying it, and answers the verdict. Three
//! contracts on one listener (served by the workers, on the project's own HTTP/1.1 server):
//!
//! - `GET|POST /auth`, nginx `auth_request`: the original request's method in
//!   `X-Original-Method`, its target in `X-Original-URI`, its host in `X-Original-Host` (else
//!   `Host`); its other headers are the subrequest's own (nginx copies them). 200 allows; a
//!   block is 403 (401 when access control asks for authentication, the one other status
//!   `auth_request` passes on) with `X-Palisade-Reason` (the reason code), `X-Palisade-Status`
//!   (the status a proxied request would have got, such as 429) and `X-Request-Id`.
//! - `/envoy/...`, Envoy `ext_authz` over HTTP (`path_prefix: /envoy`): the original method,
//!   path (after the prefix) and headers; the body when Envoy sends it (`with_request_body`,
//!   marked by `x-envoy-auth-partial-body`). 200 allows; a block is answered with the status,
//!   problem body and headers a proxied request would get, which Envoy passes to the client.
//! - `POST /v1/judge`: the request as JSON, the verdict as JSON with every reason.
//!
//! The decision is the proxy's ([`crate::judge`]): the same app choice and canonical path, the
//! same stages in both phases, the same events; decisions are counted in their own series
//! (`palisade_authz_decisions_total`). No upstream is contacted.
//!
//! The client's address is the gateway's word only when the gateway is trusted
//! (`authz.trusted_gateways`): then `X-Real-IP` (nginx: `proxy_set_header X-Real-IP
//! $remote_addr`), else `X-Forwarded-For` read like a trusted proxy's. From any other peer the
//! peer itself is the client, so a header a client sent through a gateway that copies it can
//! never choose the address access control sees.

use std::net::IpAddr;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use http::{header, HeaderMap, HeaderName, HeaderValue, Method, Request, Response, StatusCode, Uri};
use http_body::Body;
use http_body_util::BodyExt;
use palisade_config::{AuthzConfig, Oversize};
use palisade_core::{Reason, RequestView};
use serde::de::{Error as _, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};

use crate::body::{ClientBody, UpBody};
use crate::body_error::BodyError;
use crate::code;
use crate::h1::{ConnInfo, Handler};
use crate::headers;
use crate::judge;
use crate::metrics::Verdict;
use crate::problem;
use crate::proxy::Proxy;
use crate::record::{self, Captured, Record, Source};
use crate::request_id::RequestId;
use crate::resp_body::RespBody;
use crate::snapshot::Snapshot;

/// Reason codes of the authorization API's own answers (not verdicts).
pub mod codes {
    pub const BAD_REQUEST: &str = "authz.bad_request";
    pub const UNAUTHORIZED: &str = "authz.unauthorized";
    pub const TOO_LARGE: &str = "authz.too_large";
    pub const UNKNOWN_APP: &str = "authz.unknown_app";
    pub const NOT_FOUND: &str = "authz.not_found";
    pub const METHOD_NOT_ALLOWED: &str = "authz.method_not_allowed";
}

pub const X_ORIGINAL_URI: HeaderName = HeaderName::from_static("x-original-uri");
pub const X_ORIGINAL_METHOD: HeaderName = HeaderName::from_static("x-original-method");
pub const X_ORIGINAL_HOST: HeaderName = HeaderName::from_static("x-original-host");
pub const X_AUTHZ_TOKEN: HeaderName = HeaderName::from_static("x-palisade-authz-token");
pub const X_PALISADE_REASON: HeaderName = HeaderName::from_static("x-palisade-reason");
pub const X_PALISADE_STATUS: HeaderName = HeaderName::from_static("x-palisade-status");
pub const X_PALISADE_VERDICT: HeaderName = HeaderName::from_static("x-palisade-verdict");
const X_ENVOY_PARTIAL_BODY: HeaderName = HeaderName::from_static("x-envoy-auth-partial-body");
/// Envoy removes the headers this lists (comma-separated) from the request it sends upstream.
const X_ENVOY_HEADERS_TO_REMOVE: HeaderName = HeaderName::from_static("x-envoy-auth-headers-to-remove");

/// The path prefix Envoy's `http_service.path_prefix` is set to.
pub const ENVOY_PREFIX: &str = "/envoy";

/// The authorization listener's handler (one per worker, beside the proxy it shares state with).
pub struct Authz {
    pub proxy: Rc<Proxy>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Gateway {
    Nginx,
    Envoy,
    Json,
}

/// What the gateway asks about: the original request as the stages see it.
struct Original {
    parts: http::request::Parts,
    /// The app named by the caller (`/v1/judge`'s `app`), else chosen by host and path.
    app: Option<usize>,
    client_ip: IpAddr,
    tls: bool,
    /// The target is not one the proxy accepts (it answers 400 `http.bad_request`): judged as
    /// that block, never allowed.
    bad_target: bool,
}

/// The body of the original request, as far as the gateway tells it.
enum BodyIn {
    /// The gateway does not send bodies: the body phase does not run.
    Unknown,
    /// To be read from the authorization request (its body is the original's; only its first
    /// part when `true`).
    Stream(ClientBody, bool),
    /// Whole, or its first part (`true`).
    Known(Bytes, bool),
}

/// The verdict and what goes with it.
struct Decision {
    app: Option<usize>,
    verdict: Verdict,
    /// What a proxied request would have been answered: 200 when allowed.
    status: StatusCode,
    /// The first reason's code when blocked.
    code: Option<String>,
    /// How many of the record's reasons are the block's (the rest are monitored findings).
    blocking: usize,
    /// Reasons of a block decided before the stages (routing, path, size); the stages' reasons
    /// are in the request's [`Record`].
    early: Vec<(&'static str, Reason)>,
    /// Headers the stages set for the client (`Retry-After`, `WWW-Authenticate`, `RateLimit`).
    client_headers: Vec<(HeaderName, HeaderValue)>,
    /// Headers the stages set for the upstream (verified claims), on allow.
    upstream_headers: Vec<(HeaderName, HeaderValue)>,
    /// Headers the stages remove from the request before it goes upstream (spoofed claim
    /// headers), on allow.
    strip_upstream: Vec<HeaderName>,
    operation: Option<Arc<str>>,
}

impl Decision {
    fn early(app: Option<usize>, status: StatusCode, stage: &'static str, reason: Reason) -> Box<Decision> {
        Box::new(Decision {
            app,
            verdict: Verdict::Block,
            status,
            code: Some(reason.code.to_string()),
            blocking: 0,
            early: vec![(stage, reason)],
            client_headers: Vec::new(),
            upstream_headers: Vec::new(),
            strip_upstream: Vec::new(),
            operation: None,
        })
    }
}

impl Handler for Authz {
    async fn call(&self, req: Request<ClientBody>, conn: &ConnInfo) -> Response<RespBody> {
        let started = Instant::now();
        let snap = self.proxy.snapshot.load_full();
        let id = crate::request_id::next();
        let Some(cfg) = snap.config.authz.as_ref() else {
            return problem::response(StatusCode::SERVICE_UNAVAILABLE, codes::NOT_FOUND, "The authorization API is not configured", id.as_str(), &[]);
        };
        if let Some(token) = cfg.token.as_deref() {
            let given = req.headers().get(X_AUTHZ_TOKEN).map(HeaderValue::as_bytes);
            if !given.is_some_and(|g| crate::token::constant_time_eq(g, token.as_bytes())) {
                let e = ApiError { status: StatusCode::UNAUTHORIZED, code: codes::UNAUTHORIZED, title: "A valid X-Palisade-Authz-Token is required".into() };
                return refused(e, id);
            }
        }
        let path = req.uri().path();
        let gateway = if path == "/auth" {
            if !matches!(*req.method(), Method::GET | Method::POST) {
                return method_not_allowed(id, "GET, POST");
            }
            Gateway::Nginx
        } else if path == "/v1/judge" {
            if req.method() != Method::POST {
                return method_not_allowed(id, "POST");
            }
            Gateway::Json
        } else if path == ENVOY_PREFIX || path.strip_prefix(ENVOY_PREFIX).is_some_and(|r| r.starts_with('/')) {
            Gateway::Envoy
        } else {
            return problem::response(
                StatusCode::NOT_FOUND,
                codes::NOT_FOUND,
                "Not found: the authorization API serves /auth, /envoy/... and /v1/judge",
                id.as_str(),
                &[],
            );
        };
        if gateway == Gateway::Json {
            let parsed = match read_document(&snap, cfg, req).await {
                Ok(doc) => parse_document(&snap, cfg, &doc, conn.peer.ip()),
                Err(e) => Err(e),
            };
            return judge_parsed(&self.proxy, &snap, parsed, id, started);
        }
        let (orig, body) = match gateway_request(&snap, cfg, req, conn, gateway) {
            Ok(r) => r,
            Err(e) => return refused(e, id),
        };
        let mut rec = start_record(&self.proxy, &snap, &orig);
        match decide(&snap, &orig, body, id, &mut rec).await {
            Ok(decision) => answer(&self.proxy, &snap, gateway, &orig, &decision, rec, id, started),
            Err(e) => refused(e, id),
        }
    }
}

/// An authorization request that cannot be judged (the caller's mistake, not a verdict).
#[derive(Debug)]
struct ApiError {
    status: StatusCode,
    code: &'static str,
    title: String,
}

fn bad(title: impl Into<String>) -> ApiError {
    ApiError { status: StatusCode::BAD_REQUEST, code: codes::BAD_REQUEST, title: title.into() }
}

fn method_not_allowed(id: RequestId, allow: &'static str) -> Response<RespBody> {
    let mut r = problem::response(StatusCode::METHOD_NOT_ALLOWED, codes::METHOD_NOT_ALLOWED, "Method not allowed", id.as_str(), &[]);
    r.headers_mut().insert(header::ALLOW, HeaderValue::from_static(allow));
    r
}

/// The client of the original request, on the gateway's word when the gateway is trusted.
fn gateway_client(peer: IpAddr, headers: &HeaderMap, cfg: &AuthzConfig, trusted_proxies: &[ipnet::IpNet]) -> IpAddr {
    if !headers::peer_trusted(peer, &cfg.trusted_gateways) {
        return headers::client_ip(peer, &HeaderMap::new(), &[]);
    }
    let mut real = headers.get_all(headers::X_REAL_IP).iter();
    if let (Some(v), None) = (real.next(), real.next()) {
        if let Some(ip) = v.to_str().ok().and_then(|s| s.trim().parse::<IpAddr>().ok()) {
            // The address the gateway's client connected from: read on like the proxy reads a
            // peer (its `X-Forwarded-For` counts only when that client is a trusted proxy).
            return headers::client_ip(ip, headers, trusted_proxies);
        }
    }
    let trusted: Vec<ipnet::IpNet> = cfg.trusted_gateways.iter().chain(trusted_proxies).copied().collect();
    headers::client_ip(peer, headers, &trusted)
}

/// `/auth` and `/envoy/...`: the original request from the authorization request's head.
fn gateway_request(snap: &Snapshot, cfg: &AuthzConfig, req: Request<ClientBody>, conn: &ConnInfo, gateway: Gateway) -> Result<(Original, BodyIn), ApiError> {
    let (parts, body) = req.into_parts();
    let mut headers = parts.headers;
    let trusted_gateway = headers::peer_trusted(conn.peer.ip(), &cfg.trusted_gateways);
    let client_ip = gateway_client(conn.peer.ip(), &headers, cfg, &snap.config.server.trusted_proxies);
    let tls = trusted_gateway && headers.get(headers::X_FORWARDED_PROTO).is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"https"));
    let (method, target) = match gateway {
        Gateway::Nginx => {
            let method = headers
                .get(&X_ORIGINAL_METHOD)
                .ok_or_else(|| bad("X-Original-Method is missing (nginx: proxy_set_header X-Original-Method $request_method)"))?;
            let method = Method::from_bytes(method.as_bytes()).map_err(|_| bad("X-Original-Method is not a method"))?;
            let uri = headers.get(&X_ORIGINAL_URI).ok_or_else(|| bad("X-Original-URI is missing (nginx: proxy_set_header X-Original-URI $request_uri)"))?;
            (method, Uri::try_from(uri.as_bytes()).ok())
        }
        _ => {
            let rest = &parts.uri.path()[ENVOY_PREFIX.len()..];
            let rest = if rest.is_empty() { "/" } else { rest };
            let target = match parts.uri.query() {
                Some(q) => format!("{rest}?{q}"),
                None => rest.to_string(),
            };
            (parts.method, Uri::try_from(target).ok())
        }
    };
    // The host the original request was for: an absolute target's authority (held to the Host
    // grammar, as the proxy holds it), else the gateway's `X-Original-Host`, else the `Host` it
    // copied.
    let absolute_host =
        target.as_ref().and_then(Uri::authority).map(|a| HeaderValue::from_str(a.as_str()).ok().filter(|_| crate::codec::valid_host(a.as_str().as_bytes())));
    let host = match &absolute_host {
        Some(h) => h.clone(),
        None => headers.get(&X_ORIGINAL_HOST).or_else(|| headers.get(header::HOST)).cloned(),
    };
    let target = match target {
        Some(t) if t.authority().is_some() => t.path_and_query().and_then(|pq| Uri::try_from(pq.as_str()).ok()),
        t => t,
    };
    // A target the proxy would refuse as invalid (400) is judged as that refusal.
    let bad_target = absolute_host.as_ref().is_some_and(Option::is_none) || !target.as_ref().is_some_and(|t| t.path().starts_with('/') || t.path() == "*");
    let target = target.unwrap_or_else(|| Uri::from_static("/"));
    let partial = headers.get(&X_ENVOY_PARTIAL_BODY).is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"true"));
    let body = match gateway {
        Gateway::Nginx if !body.is_end_stream() => BodyIn::Stream(body, false),
        Gateway::Envoy if headers.contains_key(&X_ENVOY_PARTIAL_BODY) => BodyIn::Stream(body, partial),
        _ => BodyIn::Unknown,
    };
    // What the gateway says about the request is not part of it.
    headers::strip_hop_by_hop(&mut headers);
    for h in [&X_ORIGINAL_URI, &X_ORIGINAL_METHOD, &X_ORIGINAL_HOST, &X_AUTHZ_TOKEN, &X_ENVOY_PARTIAL_BODY] {
        headers.remove(h);
    }
    if trusted_gateway {
        headers.remove(headers::X_REAL_IP);
    }
    match host {
        Some(h) => {
            headers.insert(header::HOST, h);
        }
        None => {
            headers.remove(header::HOST);
        }
    }
    let mut orig = Request::new(());
    *orig.method_mut() = method;
    *orig.uri_mut() = target;
    *orig.headers_mut() = headers;
    let (oparts, ()) = orig.into_parts();
    Ok((Original { parts: oparts, app: None, client_ip, tls, bad_target }, body))
}

/// `POST /v1/judge`: the JSON document, read within `authz.max_request_size`.
async fn read_document(snap: &Snapshot, cfg: &AuthzConfig, req: Request<ClientBody>) -> Result<Bytes, ApiError> {
    let (parts, mut body) = req.into_parts();
    let ctype = parts.headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("application/json");
    let essence = ctype.split(';').next().unwrap_or("").trim();
    if !(essence.eq_ignore_ascii_case("application/json") || essence.to_ascii_lowercase().ends_with("+json")) {
        return Err(ApiError {
            status: StatusCode::UNSUPPORTED_MEDIA_TYPE,
            code: codes::BAD_REQUEST,
            title: "The request body must be application/json".into(),
        });
    }
    let limit = cfg.max_request_size;
    let too_large = || ApiError {
        status: StatusCode::PAYLOAD_TOO_LARGE,
        code: codes::TOO_LARGE,
        title: format!("The request is larger than authz.max_request_size ({limit} bytes)"),
    };
    if body.size_hint().exact().is_some_and(|n| n > limit) {
        return Err(too_large());
    }
    body.limit_to(limit);
    let read = tokio::time::timeout(snap.config.server.body_read_timeout, body.collect()).await;
    let bytes = match read {
        Err(_) => return Err(ApiError { status: StatusCode::REQUEST_TIMEOUT, code: code::BODY_TIMEOUT, title: "Request body timeout".into() }),
        Ok(Err(BodyError::TooLarge)) => return Err(too_large()),
        Ok(Err(BodyError::Timeout)) => {
            return Err(ApiError { status: StatusCode::REQUEST_TIMEOUT, code: code::BODY_TIMEOUT, title: "Request body timeout".into() })
        }
        Ok(Err(e)) => return Err(bad(format!("the request body could not be read: {e}"))),
        Ok(Ok(c)) => c.to_bytes(),
    };
    if bytes.len() as u64 > limit {
        return Err(too_large());
    }
    Ok(bytes)
}

/// The original request from the JSON document of `POST /v1/judge`.
fn parse_document(snap: &Snapshot, cfg: &AuthzConfig, doc: &[u8], peer: IpAddr) -> Result<(Original, BodyIn), ApiError> {
    let j: JudgeRequest = serde_json::from_slice(doc).map_err(|e| bad(format!("invalid judge request: {e}")))?;
    parse_judge(snap, cfg, j, peer)
}

/// The JSON document of `POST /v1/judge`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct JudgeRequest {
    method: String,
    path: String,
    #[serde(default)]
    query: Option<String>,
    #[serde(default)]
    headers: JsonHeaders,
    /// Base64 (standard alphabet).
    #[serde(default)]
    body: Option<String>,
    #[serde(default)]
    client_ip: Option<IpAddr>,
    #[serde(default)]
    app: Option<String>,
    #[serde(default)]
    tls: bool,
}

fn parse_judge(snap: &Snapshot, cfg: &AuthzConfig, j: JudgeRequest, peer: IpAddr) -> Result<(Original, BodyIn), ApiError> {
    let method = Method::from_bytes(j.method.as_bytes()).map_err(|_| bad(format!("`method`: `{}` is not an HTTP method", j.method)))?;
    if !(j.path.starts_with('/') || j.path == "*") {
        return Err(bad("`path` must start with `/` (origin form) or be `*`"));
    }
    let target = match &j.query {
        Some(_) if j.path.contains('?') => return Err(bad("`path` has a `?` and `query` is given: give the query once")),
        Some(q) => format!("{}?{q}", j.path),
        None => j.path,
    };
    // A target the proxy would refuse as invalid (400) is judged as that refusal.
    let uri = Uri::try_from(target).ok();
    let bad_target = uri.is_none();
    let uri = uri.unwrap_or_else(|| Uri::from_static("/"));
    let app = match &j.app {
        None => None,
        Some(name) => Some(snap.apps.iter().position(|a| a.cfg.name == *name).ok_or_else(|| ApiError {
            status: StatusCode::NOT_FOUND,
            code: codes::UNKNOWN_APP,
            title: format!("No app named `{name}`"),
        })?),
    };
    let headers = j.headers.0;
    let client_ip = match j.client_ip {
        // The caller states the address the original request came from: read on like the proxy
        // reads its peer.
        Some(ip) => headers::client_ip(ip, &headers, &snap.config.server.trusted_proxies),
        None => gateway_client(peer, &headers, cfg, &snap.config.server.trusted_proxies),
    };
    let body = match j.body {
        None => Bytes::new(),
        Some(b) => Bytes::from(palisade_core::base64::decode(b.as_bytes()).ok_or_else(|| bad("`body` is not base64 (standard alphabet, RFC 4648 §4)"))?),
    };
    let mut orig = Request::new(());
    *orig.method_mut() = method;
    *orig.uri_mut() = uri;
    *orig.headers_mut() = headers;
    let (parts, ()) = orig.into_parts();
    Ok((Original { parts, app, client_ip, tls: j.tls, bad_target }, BodyIn::Known(body, false)))
}

/// `headers` of a judge request: names to a value or a list of values.
#[derive(Default)]
struct JsonHeaders(HeaderMap);

impl<'de> Deserialize<'de> for JsonHeaders {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Map;
        impl<'de> Visitor<'de> for Map {
            type Value = JsonHeaders;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object of header names to a string or a list of strings")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<JsonHeaders, A::Error> {
                let mut h = HeaderMap::new();
                while let Some(k) = m.next_key::<String>()? {
                    let name = HeaderName::from_bytes(k.as_bytes()).map_err(|_| A::Error::custom(format!("`{k}` is not a header name")))?;
                    for v in m.next_value::<Values>()?.0 {
                        let value = HeaderValue::from_str(&v).map_err(|_| A::Error::custom(format!("the value of `{k}` is not a header value")))?;
                        h.append(name.clone(), value);
                    }
                }
                Ok(JsonHeaders(h))
            }
        }
        d.deserialize_map(Map)
    }
}

/// One header value or a list of them.
struct Values(Vec<String>);

impl<'de> Deserialize<'de> for Values {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Values;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string or a list of strings")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Values, E> {
                Ok(Values(vec![v.to_string()]))
            }
            fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Values, E> {
                Ok(Values(vec![v]))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<Values, A::Error> {
                let mut out = Vec::new();
                while let Some(v) = s.next_element::<String>()? {
                    out.push(v);
                }
                Ok(Values(out))
            }
        }
        d.deserialize_any(V)
    }
}

/// Routing and path as the proxy does them: the app and the canonical path, or the early
/// block (no app, a refused path or target).
fn route(snap: &Snapshot, orig: &Original) -> Result<(usize, Option<String>), Box<Decision>> {
    let parts = &orig.parts;
    if orig.bad_target {
        let r = Reason::new(code::BAD_REQUEST).at("path").detail("invalid request target");
        return Err(Decision::early(orig.app, StatusCode::BAD_REQUEST, "http", r));
    }
    let chosen = match orig.app {
        Some(i) => judge::canonical_for(&snap.apps[i], parts.uri.path()).map(|c| Some((i, c))),
        None => {
            let host = parts.headers.get(header::HOST).map_or(&b""[..], HeaderValue::as_bytes);
            judge::choose_app(snap, crate::router::host_only_bytes(host), parts.uri.path())
        }
    };
    match chosen {
        Ok(Some(c)) => Ok(c),
        Ok(None) => Err(Decision::early(None, StatusCode::NOT_FOUND, "route", Reason::new(code::NO_APP).detail("no application for this host and path"))),
        Err(judge::PathRefusal { app, code, detail }) => {
            Err(Decision::early(app.or(orig.app), StatusCode::BAD_REQUEST, "path", Reason::new(code).at("path").detail(detail)))
        }
    }
}

fn body_too_large(app_idx: usize) -> Box<Decision> {
    Decision::early(
        Some(app_idx),
        StatusCode::PAYLOAD_TOO_LARGE,
        "http",
        Reason::new(code::BODY_TOO_LARGE).at("body").detail("larger than the app's body limit"),
    )
}

/// A body at hand, held to the app's limits as the proxy holds a body: beyond the hard limit a
/// block (413), beyond `inspect_body` its first part.
fn known_body(snap: &Snapshot, app_idx: usize, b: Bytes, partial: bool) -> Result<(Bytes, bool), Box<Decision>> {
    let app = &snap.apps[app_idx];
    let hard_limit = if app.cfg.oversize == Oversize::Reject { app.cfg.inspect_body } else { app.cfg.max_body_size };
    if b.len() as u64 > hard_limit {
        return Err(body_too_large(app_idx));
    }
    let limit = app.cfg.inspect_body as usize;
    Ok(if b.len() > limit { (b.slice(..limit), true) } else { (b, partial) })
}

/// The decision: the route, the body read as the proxy reads it, then the stages.
async fn decide(snap: &Snapshot, orig: &Original, body: BodyIn, id: RequestId, rec: &mut Record) -> Result<Decision, ApiError> {
    let (app_idx, canonical) = match route(snap, orig) {
        Ok(c) => c,
        Err(d) => return Ok(*d),
    };
    let app = &snap.apps[app_idx];
    let body = match body {
        BodyIn::Unknown => None,
        BodyIn::Known(b, partial) => match known_body(snap, app_idx, b, partial) {
            Ok(b) => Some(b),
            Err(d) => return Ok(*d),
        },
        BodyIn::Stream(mut b, partial) => {
            b.limit_to(if app.cfg.oversize == Oversize::Reject { app.cfg.inspect_body } else { app.cfg.max_body_size });
            match crate::proxy::buffer_body(b, app, snap.config.server.body_read_timeout).await {
                Ok(UpBody::Full(full)) => Some((full.unwrap_or_default(), partial)),
                Ok(UpBody::Chained { head, .. }) => Some((head.unwrap_or_default(), true)),
                Err(BodyError::TooLarge) => return Ok(*body_too_large(app_idx)),
                Err(BodyError::Timeout) => {
                    return Err(ApiError { status: StatusCode::REQUEST_TIMEOUT, code: code::BODY_TIMEOUT, title: "Request body timeout".into() })
                }
                Err(e) => return Err(bad(format!("the request body could not be read: {e}"))),
            }
        }
    };
    Ok(conclude(snap, orig, app_idx, canonical.as_deref(), body, id, rec))
}

/// The stages over the routed request ([`judge::judge`], the proxy's decision).
fn conclude(
    snap: &Snapshot,
    orig: &Original,
    app_idx: usize,
    canonical: Option<&str>,
    body: Option<(Bytes, bool)>,
    id: RequestId,
    rec: &mut Record,
) -> Decision {
    let parts = &orig.parts;
    let app = &snap.apps[app_idx];
    rec.app = Some(app_idx);
    let view: RequestView<'_> = judge::view(parts, canonical, &id, app, orig.client_ip, b"", false, orig.tls);
    let req = (&parts.method, &parts.uri, &parts.headers);
    match judge::judge(app, &view, body.as_ref().map(|(b, t)| (&b[..], *t)), id, rec, req) {
        Ok(mut outcome) => Decision {
            app: Some(app_idx),
            verdict: rec.verdict,
            status: StatusCode::OK,
            code: None,
            blocking: 0,
            early: Vec::new(),
            client_headers: std::mem::take(&mut outcome.context.response_headers),
            upstream_headers: std::mem::take(&mut outcome.context.upstream_headers),
            strip_upstream: std::mem::take(&mut outcome.context.strip_upstream),
            operation: outcome.context.operation.take(),
        },
        Err(b) => {
            let (status, code) = (b.status, b.code.clone());
            let operation = b.context.operation.clone();
            let blocking = b.reasons.len();
            let client_headers = b.record(rec, req);
            Decision {
                app: Some(app_idx),
                verdict: Verdict::Block,
                status,
                code: Some(code),
                blocking,
                early: Vec::new(),
                client_headers,
                upstream_headers: Vec::new(),
                strip_upstream: Vec::new(),
                operation,
            }
        }
    }
}

/// `POST /v1/judge` on a document already read: the answer the listener sends, and the request
/// recorded (event, metrics) as a served one. Everything but the HTTP exchange (what
/// `benches/authz.rs` measures).
pub fn judge_document(proxy: &Proxy, doc: &[u8], peer: IpAddr) -> Response<RespBody> {
    let started = Instant::now();
    let snap = proxy.snapshot.load_full();
    let id = crate::request_id::next();
    let Some(cfg) = snap.config.authz.as_ref() else {
        return problem::response(StatusCode::SERVICE_UNAVAILABLE, codes::NOT_FOUND, "The authorization API is not configured", id.as_str(), &[]);
    };
    judge_parsed(proxy, &snap, parse_document(&snap, cfg, doc, peer), id, started)
}

fn judge_parsed(proxy: &Proxy, snap: &Snapshot, parsed: Result<(Original, BodyIn), ApiError>, id: RequestId, started: Instant) -> Response<RespBody> {
    let (orig, body) = match parsed {
        Ok(r) => r,
        Err(e) => return refused(e, id),
    };
    let mut rec = start_record(proxy, snap, &orig);
    let decision = match route(snap, &orig) {
        Err(d) => *d,
        Ok((app_idx, canonical)) => {
            let body = match body {
                BodyIn::Known(b, partial) => known_body(snap, app_idx, b, partial),
                _ => Ok((Bytes::new(), false)),
            };
            match body {
                Ok(b) => conclude(snap, &orig, app_idx, canonical.as_deref(), Some(b), id, &mut rec),
                Err(d) => *d,
            }
        }
    };
    answer(proxy, snap, Gateway::Json, &orig, &decision, rec, id, started)
}

fn refused(e: ApiError, id: RequestId) -> Response<RespBody> {
    tracing::info!(request_id = id.as_str(), error = %e.title, "authorization request refused");
    problem::response(e.status, e.code, &e.title, id.as_str(), &[])
}

fn start_record(proxy: &Proxy, snap: &Snapshot, orig: &Original) -> Record {
    let mut rec = Record::default();
    if proxy.events.is_some() && record::sampled(snap.events.sample_allowed) {
        rec.req = Some(Box::new(Captured::new(&orig.parts.method, &orig.parts.uri, &orig.parts.headers)));
    }
    rec
}

/// The gateway's answer; the request logged and recorded.
#[allow(clippy::too_many_arguments)]
fn answer(
    proxy: &Proxy,
    snap: &Snapshot,
    gateway: Gateway,
    orig: &Original,
    decision: &Decision,
    mut rec: Record,
    id: RequestId,
    started: Instant,
) -> Response<RespBody> {
    let resp = match gateway {
        Gateway::Nginx => nginx_response(decision, id),
        Gateway::Envoy => envoy_response(decision, &rec, id),
        Gateway::Json => json_response(snap, decision, &rec, id),
    };
    if snap.config.log.access_log {
        tracing::info!(
            target: "palisade::access",
            request_id = id.as_str(),
            source = "authz",
            app = decision.app.map_or("-", |i| snap.apps[i].cfg.name.as_str()),
            method = %orig.parts.method,
            path = %orig.parts.uri.path(),
            client_ip = %orig.client_ip,
            status = decision.status.as_u16(),
            duration_us = started.elapsed().as_micros() as u64,
            "request"
        );
    }
    rec.app = decision.app;
    if !decision.early.is_empty() {
        // Refused before the stages (no app, path, body size): counted as a block, and, as
        // for proxied requests, not an event (the sampled copy of the request is dropped).
        rec.verdict = Verdict::Block;
        rec.req = None;
    }
    record::finish(Source::Authz, snap, &proxy.metrics, proxy.events.as_ref(), rec, &id, orig.client_ip, decision.status.as_u16(), started.elapsed());
    resp
}

fn verdict_name(v: Verdict) -> &'static str {
    match v {
        Verdict::Allow => "allow",
        Verdict::Block => "block",
        Verdict::Monitor => "monitor",
    }
}

/// Headers every answer carries: the request id and the verdict.
fn base_headers(h: &mut HeaderMap, d: &Decision, id: RequestId) {
    h.insert(headers::X_REQUEST_ID, id.header_value());
    h.insert(X_PALISADE_VERDICT, HeaderValue::from_static(verdict_name(d.verdict)));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
}

fn block_headers(h: &mut HeaderMap, d: &Decision) {
    if let Some(v) = d.code.as_deref().and_then(|c| HeaderValue::from_str(c).ok()) {
        h.insert(X_PALISADE_REASON, v);
    }
    h.insert(X_PALISADE_STATUS, HeaderValue::from(d.status.as_u16()));
}

/// nginx `auth_request` understands 2xx (allow), 401 and 403 (passed on to the client); any
/// other status is an error (500). A block is therefore 401 when access control asks for
/// authentication and 403 otherwise, with the status a proxied request would have got in
/// `X-Palisade-Status` (429, 413, ...) for an `error_page` to use.
fn nginx_response(d: &Decision, id: RequestId) -> Response<RespBody> {
    let mut r = if d.verdict == Verdict::Block {
        let status = if d.status == StatusCode::UNAUTHORIZED { StatusCode::UNAUTHORIZED } else { StatusCode::FORBIDDEN };
        let mut r = problem::response(status, d.code.as_deref().unwrap_or("blocked"), problem::title(d.status), id.as_str(), &[]);
        block_headers(r.headers_mut(), d);
        r
    } else {
        let mut r = Response::new(RespBody::empty());
        headers::add_response_headers(r.headers_mut(), d.upstream_headers.clone());
        r
    };
    headers::add_response_headers(r.headers_mut(), d.client_headers.clone());
    base_headers(r.headers_mut(), d, id);
    r
}

/// Envoy `ext_authz` (HTTP service): 200 allows (headers for the upstream ride along, for
/// `allowed_upstream_headers`, and the ones to remove in `x-envoy-auth-headers-to-remove`); any
/// other status denies, and Envoy sends that status, body and headers to the client: the
/// proxy's own block response.
fn envoy_response(d: &Decision, rec: &Record, id: RequestId) -> Response<RespBody> {
    let mut r = if d.verdict == Verdict::Block {
        let reasons: Vec<Reason> = block_reasons(d, rec).map(|(_, r)| r.clone()).collect();
        let mut r = problem::response(d.status, d.code.as_deref().unwrap_or("blocked"), problem::title(d.status), id.as_str(), &reasons);
        block_headers(r.headers_mut(), d);
        r
    } else {
        let mut r = Response::new(RespBody::empty());
        headers::add_response_headers(r.headers_mut(), d.upstream_headers.clone());
        // (A header set for the upstream replaces the client's copy: only the others are removed.)
        let remove: Vec<&str> = d.strip_upstream.iter().filter(|n| !d.upstream_headers.iter().any(|(u, _)| u == *n)).map(HeaderName::as_str).collect();
        if !remove.is_empty() {
            if let Ok(v) = HeaderValue::from_str(&remove.join(",")) {
                r.headers_mut().insert(X_ENVOY_HEADERS_TO_REMOVE, v);
            }
        }
        r
    };
    headers::add_response_headers(r.headers_mut(), d.client_headers.clone());
    base_headers(r.headers_mut(), d, id);
    r
}

/// The reasons of a block (the stage's, or the early one), without monitored ones.
fn block_reasons<'a>(d: &'a Decision, rec: &'a Record) -> impl Iterator<Item = &'a (&'static str, Reason)> {
    d.early.iter().chain(rec.reasons.iter().take(d.blocking))
}

#[derive(serde::Serialize)]
struct JudgeAnswer<'a> {
    verdict: &'static str,
    status: u16,
    request_id: &'a str,
    app: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    operation: Option<&'a str>,
    reasons: Vec<ReasonOut<'a>>,
}

#[derive(serde::Serialize)]
struct ReasonOut<'a> {
    stage: &'a str,
    code: &'a str,
    location: Option<&'a str>,
    detail: Option<&'a str>,
}

/// `POST /v1/judge`: 200 with the verdict, every reason the event holds (blocking first, then
/// monitored ones).
fn json_response(snap: &Snapshot, d: &Decision, rec: &Record, id: RequestId) -> Response<RespBody> {
    let reasons = d
        .early
        .iter()
        .chain(rec.reasons.iter())
        .map(|(stage, r)| ReasonOut { stage, code: &r.code, location: r.location.as_deref(), detail: r.detail.as_deref() })
        .collect();
    let answer = JudgeAnswer {
        verdict: verdict_name(d.verdict),
        status: d.status.as_u16(),
        request_id: id.as_str(),
        app: d.app.map(|i| snap.apps[i].cfg.name.as_str()),
        operation: d.operation.as_deref(),
        reasons,
    };
    let mut body = serde_json::to_vec(&answer).unwrap_or_else(|_| b"{}".to_vec());
    body.push(b'\n');
    let mut r = Response::new(RespBody::full(body));
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    base_headers(r.headers_mut(), d, id);
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_client_is_the_gateways_word_only_from_a_trusted_gateway() {
        let cfg =
            AuthzConfig { addr: "127.0.0.1:0".parse().unwrap(), token: None, trusted_gateways: vec!["10.0.0.0/8".parse().unwrap()], max_request_size: 1024 };
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        let mut h = HeaderMap::new();
        h.insert(headers::X_REAL_IP, HeaderValue::from_static("203.0.113.5"));
        h.insert(headers::X_FORWARDED_FOR, HeaderValue::from_static("198.51.100.1, 203.0.113.5"));
        // Another peer: its own address, whatever it says.
        assert_eq!(gateway_client(ip("192.0.2.1"), &h, &cfg, &[]), ip("192.0.2.1"));
        assert_eq!(gateway_client(ip("::ffff:192.0.2.1"), &h, &cfg, &[]), ip("192.0.2.1"));
        // A trusted gateway: X-Real-IP, read on through the trusted proxies.
        assert_eq!(gateway_client(ip("10.1.2.3"), &h, &cfg, &[]), ip("203.0.113.5"));
        assert_eq!(gateway_client(ip("10.1.2.3"), &h, &cfg, &["203.0.113.0/24".parse().unwrap()]), ip("198.51.100.1"));
        // Without one valid X-Real-IP: the last X-Forwarded-For entry that is not trusted.
        h.append(headers::X_REAL_IP, HeaderValue::from_static("203.0.113.6"));
        h.insert(headers::X_FORWARDED_FOR, HeaderValue::from_static("198.51.100.1, 203.0.113.5, 10.9.9.9"));
        assert_eq!(gateway_client(ip("10.1.2.3"), &h, &cfg, &[]), ip("203.0.113.5"));
        h.insert(headers::X_REAL_IP, HeaderValue::from_static("not-an-ip"));
        assert_eq!(gateway_client(ip("10.1.2.3"), &h, &cfg, &[]), ip("203.0.113.5"));
    }

    #[test]
    fn judge_headers_take_a_value_or_a_list_and_refuse_invalid_names() {
        let j: JudgeRequest = serde_json::from_str(r#"{"method":"GET","path":"/","headers":{"Accept":"a","x-b":["1","2"]}}"#).unwrap();
        assert_eq!(j.headers.0.get("accept").unwrap(), "a");
        assert_eq!(j.headers.0.get_all("x-b").iter().collect::<Vec<_>>(), ["1", "2"]);
        for bad in [
            r#"{"method":"GET","path":"/","headers":{"a b":"x"}}"#,
            r#"{"method":"GET","path":"/","headers":{"a":"x\ny"}}"#,
            r#"{"method":"GET","path":"/","headers":{"a":1}}"#,
            r#"{"method":"GET","path":"/","x":1}"#,
            r#"{"path":"/"}"#,
        ] {
            assert!(serde_json::from_str::<JudgeRequest>(bad).is_err(), "{bad}");
        }
    }
}
