//! The admin listener (separate address, loopback by default), on the project's own HTTP/1.1
//! server like the proxy (no second HTTP stack in the binary; the API is a handful of routes):
//!
//! - `GET /healthz`, `GET /readyz`: liveness and readiness, never authenticated (probes);
//! - `GET /metrics`: Prometheus text ([`crate::metrics`]);
//! - `GET /api/events`: security events, filtered and paginated (newest first, `cursor`);
//! - `GET /api/stats`: counts per time bucket, top client IPs, reasons, paths, categories, apps;
//! - `POST /api/reload`: re-read the configuration file, as SIGHUP does;
//! - `GET /api/config`: the configuration in force, secrets redacted;
//! - `GET /api/apps`: each app with its route, upstream and the mode of each stage;
//! - `GET /`: the web dashboard (`assets/dashboard/`, embedded in the binary; it reads the API
//!   above from the browser, with the token the user enters when one is configured).
//!
//! When `admin.token` is set, everything but the probes and the dashboard's static files needs `Authorization: Bearer TOKEN`
//! (the configuration requires a token when the listener is reachable beyond loopback).
//! Database queries run on tokio's blocking pool, so a slow query never stalls the control
//! thread's health checks.

use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use http::{header, HeaderValue, Method, Request, Response, StatusCode};
use palisade_config::yaml::{Node, Value as YValue};
use palisade_config::Config;
use palisade_events::query::{Filter, Reader};
use palisade_events::{Error as EventsError, ErrorKind as EventsErrorKind};
use serde_json::{json, Value};
use tokio::net::TcpListener;

use crate::body::ClientBody;
use crate::h1::{self, ConnInfo, Handler};
use crate::io::Stream;
use crate::problem;
use crate::resp_body::RespBody;
use crate::state::{ReloadError, Shared};
use crate::token::constant_time_eq;

struct Admin {
    shared: Arc<Shared>,
}

impl Handler for Admin {
    async fn call(&self, req: Request<ClientBody>, _conn: &ConnInfo) -> Response<RespBody> {
        let id = crate::request_id::next();
        let path = req.uri().path();
        let method = req.method();
        if let Some(asset) = dashboard_asset(path) {
            return if *method == Method::GET || *method == Method::HEAD { asset } else { method_not_allowed(id.as_str(), "GET, HEAD") };
        }
        if !matches!(path, "/healthz" | "/readyz") {
            if let Some(resp) = self.unauthorized(&req, id.as_str()) {
                return resp;
            }
        }
        let get = *method == Method::GET || *method == Method::HEAD;
        match (get, *method == Method::POST, path) {
            (true, _, "/healthz") => json_text(StatusCode::OK, "{\"status\":\"ok\"}\n"),
            (true, _, "/readyz") => {
                if self.shared.ready.load(Ordering::SeqCst) {
                    let generation = self.shared.snapshot.load().generation;
                    json_text(StatusCode::OK, &format!("{{\"status\":\"ready\",\"config_generation\":{generation}}}\n"))
                } else {
                    json_text(StatusCode::SERVICE_UNAVAILABLE, "{\"status\":\"not ready\"}\n")
                }
            }
            (true, _, "/metrics") => {
                let snap = self.shared.snapshot.load_full();
                let stages = crate::metrics::stage_counters(&snap);
                let extra = crate::metrics::Extra {
                    events: self.shared.events.as_ref().map(|p| &**p.counters()),
                    connections: self.shared.open_connections(),
                    stages: &stages,
                };
                let mut r = Response::new(RespBody::full(self.shared.metrics.render(&extra)));
                r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"));
                r.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
                r
            }
            (true, _, "/api/events") => self.events(req.uri().query(), Query::Events, id.as_str()).await,
            (true, _, "/api/stats") => self.events(req.uri().query(), Query::Stats, id.as_str()).await,
            (true, _, "/api/suggest") => self.events(req.uri().query(), Query::Suggest, id.as_str()).await,
            (true, _, "/api/apps") => {
                let snap = self.shared.snapshot.load_full();
                json_value(StatusCode::OK, &apps_json(&snap.config))
            }
            (true, _, "/api/config") => {
                let snap = self.shared.snapshot.load_full();
                json_value(StatusCode::OK, &config_json(&snap.config, snap.generation, &self.shared.events_sink))
            }
            (_, true, "/api/reload") => {
                let shared = self.shared.clone();
                let r = tokio::task::spawn_blocking(move || shared.reload_file()).await;
                match r {
                    Ok(Ok(generation)) => json_value(StatusCode::OK, &json!({"status": "reloaded", "config_generation": generation})),
                    Ok(Err(ReloadError::NoFile)) => {
                        problem::response(StatusCode::CONFLICT, "admin.no_config_file", "No configuration file to reload", id.as_str(), &[])
                    }
                    Ok(Err(ReloadError::Config(e))) => json_value(
                        StatusCode::UNPROCESSABLE_ENTITY,
                        &json!({"status": "rejected", "code": "admin.reload_rejected", "errors": e.0.iter().map(|e| e.to_string()).collect::<Vec<_>>()}),
                    ),
                    Err(_) => problem::response(StatusCode::INTERNAL_SERVER_ERROR, "internal", "Reload failed", id.as_str(), &[]),
                }
            }
            (_, _, "/healthz" | "/readyz" | "/metrics" | "/api/events" | "/api/stats" | "/api/suggest" | "/api/config" | "/api/apps" | "/api/reload") => {
                method_not_allowed(id.as_str(), if path == "/api/reload" { "POST" } else { "GET, HEAD" })
            }
            _ => problem::response(StatusCode::NOT_FOUND, "admin.not_found", "Not found", id.as_str(), &[]),
        }
    }
}

impl Admin {
    /// `Some(401)` when a token is configured and the request does not carry it.
    fn unauthorized(&self, req: &Request<ClientBody>, id: &str) -> Option<Response<RespBody>> {
        let snap = self.shared.snapshot.load();
        let token = snap.config.admin.as_ref()?.token.as_deref()?;
        let given = req.headers().get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(|v| {
            let (scheme, rest) = v.split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then(|| rest.trim())
        });
        if given.is_some_and(|g| constant_time_eq(g.as_bytes(), token.as_bytes())) {
            return None;
        }
        let mut r = problem::response(StatusCode::UNAUTHORIZED, "admin.unauthorized", "A valid admin token is required", id, &[]);
        r.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer realm=\"palisade-admin\""));
        Some(r)
    }

    async fn events(&self, query: Option<&str>, kind: Query, id: &str) -> Response<RespBody> {
        let Some(db) = self.shared.events_db.clone() else {
            return problem::response(
                StatusCode::NOT_IMPLEMENTED,
                "admin.events_not_queryable",
                "Events are not recorded to a database (see events.sink); nothing to query",
                id,
                &[],
            );
        };
        let now = palisade_events::model::now_ms();
        let mut pairs = query_pairs(query.unwrap_or(""));
        let mut take = |name: &str| pairs.iter().position(|(k, _)| k == name).map(|i| pairs.remove(i).1);
        let (buckets, top) = if kind == Query::Stats { (take("buckets"), take("top")) } else { (None, None) };
        let (for_event, min, max) = if kind == Query::Suggest { (take("for"), take("min"), take("max")) } else { (None, None, None) };
        let filter = match Filter::from_pairs(pairs.iter().map(|(k, v)| (k.as_str(), v.clone())), now) {
            Ok(f) => f,
            Err(e) => return json_value(StatusCode::BAD_REQUEST, &json!({"code": "admin.bad_filter", "title": e.to_string()})),
        };
        let buckets: u32 = buckets.and_then(|b| b.parse().ok()).unwrap_or(60).clamp(1, 1000);
        let top: usize = top.and_then(|t| t.parse().ok()).unwrap_or(10);
        let for_event = match for_event.map(|v| v.parse::<i64>()) {
            Some(Err(_)) => return json_value(StatusCode::BAD_REQUEST, &json!({"code": "admin.bad_filter", "title": "`for` is an event id"})),
            Some(Ok(v)) => Some(v),
            None => None,
        };
        let min: u64 = min.and_then(|m| m.parse().ok()).unwrap_or(1);
        let max: usize = max.and_then(|m| m.parse().ok()).unwrap_or(SUGGEST_MAX_EVENTS).clamp(1, SUGGEST_MAX_EVENTS);
        let query = move || -> Result<Value, EventsError> {
            let store = |e: palisade_events::SinkError| EventsError::caused_by(EventsErrorKind::Store, e.to_string(), e);
            let reader = Reader::open_store(&db).map_err(store)?;
            let v = match kind {
                Query::Stats => serde_json::to_value(reader.stats(&filter, now, buckets, top).map_err(store)?),
                Query::Events => serde_json::to_value(reader.events(&filter).map_err(store)?),
                Query::Suggest => serde_json::to_value(palisade_events::suggest::report(&reader, &filter, max, min, for_event).map_err(store)?),
            };
            v.map_err(|e| EventsError::caused_by(EventsErrorKind::Output, e.to_string(), e))
        };
        // The PostgreSQL driver runs its own runtime: on a plain thread, never inside tokio's.
        let r = tokio::task::spawn_blocking(move || match std::thread::Builder::new().name("palisade-events-query".into()).spawn(query) {
            Ok(h) => h.join().unwrap_or_else(|_| Err(EventsError::new(EventsErrorKind::Store, "the query panicked"))),
            Err(e) => Err(EventsError::caused_by(EventsErrorKind::Store, format!("cannot start the query thread: {e}"), e)),
        })
        .await;
        match r {
            Ok(Ok(v)) => json_value(StatusCode::OK, &v),
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "events query failed");
                problem::response(StatusCode::SERVICE_UNAVAILABLE, "admin.events_unavailable", "The events database cannot be read", id, &[])
            }
            Err(_) => problem::response(StatusCode::INTERNAL_SERVER_ERROR, "internal", "Query failed", id, &[]),
        }
    }
}

/// What an events query of the admin API answers.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Query {
    /// `/api/events`: a page of events.
    Events,
    /// `/api/stats`: counts per time bucket and tops.
    Stats,
    /// `/api/suggest`: detection exclusions for the matching events (`for=ID`: those covering
    /// one event; `min=N`: covering at least N requests; `max=N`: events read).
    Suggest,
}

/// Most events one `/api/suggest` reads (newest first).
const SUGGEST_MAX_EVENTS: usize = 100_000;

fn method_not_allowed(id: &str, allow: &'static str) -> Response<RespBody> {
    let mut r = problem::response(StatusCode::METHOD_NOT_ALLOWED, "admin.method_not_allowed", "Method not allowed", id, &[]);
    r.headers_mut().insert(header::ALLOW, HeaderValue::from_static(allow));
    r
}

/// The dashboard's files, embedded at build time (no Node toolchain, no CDN).
const DASHBOARD: &[(&str, &str, &str)] = &[
    ("/", "text/html; charset=utf-8", include_str!("../assets/dashboard/index.html")),
    ("/index.html", "text/html; charset=utf-8", include_str!("../assets/dashboard/index.html")),
    ("/assets/app.js", "text/javascript; charset=utf-8", include_str!("../assets/dashboard/app.js")),
    ("/assets/style.css", "text/css; charset=utf-8", include_str!("../assets/dashboard/style.css")),
];

/// A dashboard file, served with a strict Content-Security-Policy: the page runs only its own
/// script and talks only to this listener, so a payload that slipped into an event could not
/// run even if it were rendered as HTML (it is not: the script writes request data as text).
fn dashboard_asset(path: &str) -> Option<Response<RespBody>> {
    let (_, ctype, body) = DASHBOARD.iter().find(|(p, _, _)| *p == path)?;
    let mut r = Response::new(RespBody::full(body.to_string()));
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(ctype));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"),
    );
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    Some(r)
}

/// One line per stage for the dashboard's list of apps: what is checked and in which mode.
fn stage_summary(key: &str, node: Option<&Node>) -> String {
    let get = |k: &str| -> Option<String> {
        match &node?.value {
            YValue::Map(entries) => entries.iter().find(|(n, _)| n.name == k).map(|(_, v)| match &v.value {
                YValue::Str(s) => s.clone(),
                YValue::Bool(false) => "off".into(),
                YValue::Seq(items) => format!("{} entries", items.len()),
                _ => "on".into(),
            }),
            _ => None,
        }
    };
    let scalar = node.and_then(|n| match &n.value {
        YValue::Str(s) => Some(s.clone()),
        YValue::Bool(false) => Some("off".into()),
        _ => None,
    });
    match (key, node) {
        ("detection", None) => "block, balanced (default)".into(),
        (_, None) => "off".into(),
        (_, Some(_)) if scalar.is_some() => scalar.unwrap_or_default(),
        ("openapi", Some(_)) => {
            format!("request {}, response {}", get("request").unwrap_or_else(|| "block".into()), get("response").unwrap_or_else(|| "off".into()))
        }
        ("detection", Some(_)) => format!("{}, {}", get("mode").unwrap_or_else(|| "block".into()), get("level").unwrap_or_else(|| "balanced".into())),
        ("rules", Some(n)) => match &n.value {
            YValue::Seq(items) => format!("block ({} rules)", items.len()),
            _ => get("mode").map_or_else(|| "on".to_string(), |m| m.to_string()),
        },
        (_, Some(n)) => match &n.value {
            YValue::Map(entries) => {
                let parts: Vec<&str> = entries.iter().map(|(k, _)| k.name.as_str()).filter(|k| !secret_key(k)).collect();
                format!("{} ({})", get("mode").unwrap_or_else(|| "block".into()), parts.join(", "))
            }
            _ => "on".into(),
        },
    }
}

/// `GET /api/apps`: the apps in force, for the dashboard.
pub fn apps_json(c: &Config) -> Value {
    let apps: Vec<Value> = c
        .apps
        .iter()
        .map(|a| {
            let stage = |k: &str| stage_summary(k, a.stages.iter().find(|(n, _, _)| n == k).map(|(_, n, _)| n));
            let hosts = if a.hosts.is_empty() { "*".to_string() } else { a.hosts.join(", ") };
            let route = if a.path_prefix.is_empty() || a.path_prefix == "/" { hosts } else { format!("{hosts} {}", a.path_prefix) };
            let upstream =
                c.upstreams.get(a.upstream).map(|u| u.targets.iter().map(|t| t.value.to_string()).collect::<Vec<_>>().join(", ")).unwrap_or_default();
            json!({
                "name": a.name,
                "route": route,
                "upstream": upstream,
                "access": stage("access"),
                "openapi": stage("openapi"),
                "graphql": stage("graphql"),
                "detection": stage("detection"),
                "rules": stage("rules"),
            })
        })
        .collect();
    json!({ "apps": apps })
}

/// `a=1&b=x%20y` → [("a","1"), ("b","x y")] (`+` is a space).
pub fn query_pairs(q: &str) -> Vec<(String, String)> {
    q.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| p.split_once('=').unwrap_or((p, "")))
        .map(|(k, v)| (palisade_core::form_decode(k).into_owned(), palisade_core::form_decode(v).into_owned()))
        .collect()
}

fn json_text(status: StatusCode, body: &str) -> Response<RespBody> {
    let mut r = Response::new(RespBody::full(body.to_string()));
    *r.status_mut() = status;
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

fn json_value(status: StatusCode, v: &Value) -> Response<RespBody> {
    let mut body = serde_json::to_string(v).unwrap_or_else(|_| "{}".into());
    body.push('\n');
    json_text(status, &body)
}

/// Key names whose values are secrets in `/api/config`.
fn secret_key(k: &str) -> bool {
    let k = k.to_ascii_lowercase();
    ["secret", "token", "password", "passwd", "authorization", "cookie", "credential", "private"].iter().any(|s| k.contains(s))
        || k == "api_key"
        || k == "apikey"
}

fn yaml_json(n: &Node, key: &str) -> Value {
    if secret_key(key) && !matches!(n.value, YValue::Null) {
        return Value::String("[redacted]".into());
    }
    match &n.value {
        YValue::Null => Value::Null,
        YValue::Bool(b) => Value::Bool(*b),
        YValue::Int(i) => json!(i),
        YValue::Float(f) => json!(f),
        YValue::Str(s) => Value::String(s.clone()),
        YValue::Seq(items) => Value::Array(items.iter().map(|i| yaml_json(i, "")).collect()),
        YValue::Map(entries) => Value::Object(entries.iter().map(|(k, v)| (k.name.clone(), yaml_json(v, &k.name))).collect()),
    }
}

/// The configuration in force as JSON, secrets redacted.
pub fn config_json(c: &Config, generation: u64, events_sink: &str) -> Value {
    let (ev, default) = crate::events::effective(c);
    let redacted_sink = |s: &str| match s.split_once('@') {
        Some((scheme, host)) if s.contains("://") => format!("{}://[redacted]@{host}", scheme.split("://").next().unwrap_or("postgres")),
        _ => s.to_string(),
    };
    json!({
        "source": c.source,
        "config_generation": generation,
        "workers": c.workers,
        "listen": c.listen.iter().map(|l| json!({"addr": l.addr.to_string(), "tls": l.tls.is_some(), "http2": l.http2})).collect::<Vec<_>>(),
        "admin": c.admin.as_ref().map(|a| json!({"addr": a.addr.to_string(), "token": a.token.as_ref().map(|_| "[redacted]")})),
        "authz": c.authz.as_ref().map(|z| json!({
            "addr": z.addr.to_string(),
            "token": z.token.as_ref().map(|_| "[redacted]"),
            "trusted_gateways": z.trusted_gateways.iter().map(|n| n.to_string()).collect::<Vec<_>>(),
            "max_request_size": z.max_request_size,
        })),
        "server": {
            "max_connections": c.server.max_connections,
            "max_header_size": c.server.max_header_size,
            "max_headers": c.server.max_headers,
            "header_read_timeout_ms": c.server.header_read_timeout.as_millis() as u64,
            "body_read_timeout_ms": c.server.body_read_timeout.as_millis() as u64,
            "keepalive_timeout_ms": c.server.keepalive_timeout.as_millis() as u64,
            "shutdown_timeout_ms": c.server.shutdown_timeout.as_millis() as u64,
            "trusted_proxies": c.server.trusted_proxies.iter().map(|n| n.to_string()).collect::<Vec<_>>(),
        },
        "upstreams": c.upstreams.iter().map(|u| json!({
            "name": u.name,
            "targets": u.targets.iter().map(|t| t.value.to_string()).collect::<Vec<_>>(),
            "connect_timeout_ms": u.connect_timeout.as_millis() as u64,
            "read_timeout_ms": u.read_timeout.as_millis() as u64,
            "health_check": u.health_check.is_some(),
        })).collect::<Vec<_>>(),
        "apps": c.apps.iter().map(|a| {
            let stages: serde_json::Map<String, Value> = a.stages.iter().map(|(k, n, _)| (k.clone(), yaml_json(n, k))).collect();
            json!({
                "name": a.name,
                "hosts": a.hosts,
                "path_prefix": a.path_prefix,
                "upstream": c.upstreams.get(a.upstream).map(|u| u.name.clone()),
                "block_status": a.block_status,
                "max_body_size": a.max_body_size,
                "inspect_body": a.inspect_body,
                "stages": stages,
            })
        }).collect::<Vec<_>>(),
        "events": {
            "sink": redacted_sink(&ev.sink.value),
            "default": default,
            "active": events_sink,
            "queue_size": ev.queue_size,
            "batch_size": ev.batch_size,
            "aggregate_window_ms": ev.aggregate_window.as_millis() as u64,
            "retention_age_s": ev.retention_age.map(|d| d.as_secs()),
            "retention_size": ev.retention_size,
            "redact_fields": ev.redact_fields,
            "sample_allowed": ev.sample_allowed,
        },
    })
}

pub async fn serve(listener: TcpListener, shared: Arc<Shared>) {
    let admin = Rc::new(Admin { shared: shared.clone() });
    let limits = h1::Limits {
        max_header_size: 16 * 1024,
        max_headers: 64,
        header_timeout: std::time::Duration::from_secs(10),
        body_timeout: std::time::Duration::from_secs(10),
        keepalive_timeout: std::time::Duration::from_secs(30),
    };
    loop {
        let Ok((tcp, peer)) = listener.accept().await else { continue };
        let admin = admin.clone();
        let limits = limits.clone();
        let shutdown = shared.shared_shutdown();
        let local = tcp.local_addr().unwrap_or(peer);
        tokio::task::spawn_local(async move {
            let _ = h1::serve(Stream::Tcp(tcp), ConnInfo::new(peer, local, false), &*admin, &limits, shutdown, false).await;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_pairs_decode() {
        assert_eq!(
            query_pairs("a=1&b=x%20y+z&c&&d=%zz%4"),
            vec![("a".to_string(), "1".to_string()), ("b".into(), "x y z".into()), ("c".into(), "".into()), ("d".into(), "%zz%4".into())]
        );
        assert!(secret_key("jwt_secret") && secret_key("Authorization") && !secret_key("mode"));
    }
}
