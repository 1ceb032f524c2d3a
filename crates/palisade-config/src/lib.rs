//! Palisade's configuration: one YAML file, decoded into typed settings.
//!
//! Loading never stops at the first problem: [`load_file`] and [`parse_str`] return every
//! error with its file, line, column and key path (`apps[0].upstream.targets[1]`), so that
//! `palisade check` can list them all. Unknown keys are errors (with a "did you mean" hint),
//! `${VAR}` references in values are expanded from the environment, and `PALISADE_*`
//! variables override scalar settings (see [`env`]).
//!
//! This crate only decodes and validates shapes and values. Building runtime structures
//! (loading certificates, resolving upstreams, compiling specs) happens in the proxy, which
//! reports its own errors with the locations kept here in [`Loc`].
#![forbid(unsafe_code)]

pub mod decode;
pub mod env;
pub mod error;
mod events;
pub mod json;
pub mod read;
mod upstream;
pub mod yaml;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use decode::{Ctx, MapReader};
pub use error::{ConfigError, ConfigErrors, Error, ErrorKind};
use events::{decode_events, EVENTS_KEYS};
pub use events::{EventsConfig, EVENT_SINKS};
pub use ipnet::IpNet;
use upstream::{decode_target, decode_upstream_long, HEALTH_KEYS, UPSTREAM_KEYS, UPSTREAM_TLS_KEYS};
pub use upstream::{parse_target, Balance, HealthCheck, Target, UpstreamConfig, UpstreamTls};
use yaml::{Node, Origin, Value};

/// Where a setting was written, for errors found after decoding (e.g. an unreadable
/// certificate file).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Loc {
    pub line: usize,
    pub col: usize,
    pub path: String,
}

impl Loc {
    /// The position of `node`, with the key path `path`.
    pub fn at(node: &Node, path: String) -> Self {
        Loc::of(node, &path)
    }

    fn of(node: &Node, path: &str) -> Self {
        match node.origin {
            Origin::File { line, col } => Loc { line, col, path: path.to_string() },
            Origin::Env(_) => Loc { line: 0, col: 0, path: path.to_string() },
        }
    }

    /// Turn into an error for the given file.
    pub fn error(&self, file: &str, message: impl Into<String>) -> ConfigError {
        ConfigError { file: file.to_string(), line: self.line, col: self.col, env: None, path: self.path.clone(), message: message.into() }
    }
}

/// A value with the place it was configured.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Located<T> {
    pub value: T,
    pub loc: Loc,
}

/// The whole configuration.
#[derive(Clone, Debug)]
pub struct Config {
    /// The file it was loaded from (for error messages) and the directory that relative paths
    /// in it are resolved against.
    pub source: String,
    pub base_dir: PathBuf,
    /// Worker threads; `None` = one per available core (`auto`).
    pub workers: Option<usize>,
    pub log: LogConfig,
    pub listen: Vec<Listener>,
    pub admin: Option<AdminConfig>,
    /// The authorization API for other gateways (`authz:`); `None`: off.
    pub authz: Option<AuthzConfig>,
    pub server: ServerConfig,
    pub upstreams: Vec<UpstreamConfig>,
    pub apps: Vec<AppConfig>,
    /// The `events:` section; `None` when absent (the proxy then records to SQLite beside the
    /// configuration file, see docs/CONFIG.md).
    pub events: Option<EventsConfig>,
}

#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct LogConfig {
    /// `text` or `json`; the CLI flag wins when given.
    pub format: Option<LogFormat>,
    pub level: Option<String>,
    /// One line per request (request id, method, path, client IP, status, duration).
    pub access_log: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Clone, Debug)]
pub struct Listener {
    pub addr: SocketAddr,
    pub tls: Option<TlsConfig>,
    /// Accept HTTP/2: over TLS through ALPN, in plaintext as h2c with prior knowledge.
    pub http2: bool,
    pub loc: Loc,
}

#[derive(Clone, Debug)]
pub struct TlsConfig {
    /// The first certificate is the default when the client sends no SNI or an unknown name.
    pub certificates: Vec<CertConfig>,
}

#[derive(Clone, Debug)]
pub struct CertConfig {
    pub cert: Located<PathBuf>,
    pub key: Located<PathBuf>,
    /// SNI names this certificate answers for (`*.example.com` allowed). Empty: the names in
    /// the certificate itself.
    pub server_names: Vec<String>,
}

#[derive(Clone, Debug)]
pub struct AdminConfig {
    pub addr: SocketAddr,
    pub token: Option<String>,
}

/// The authorization API (docs/CONFIG.md, `authz`): nginx `auth_request`, Envoy `ext_authz`
/// and `POST /v1/judge` on a listener of their own.
#[derive(Clone, Debug)]
pub struct AuthzConfig {
    pub addr: SocketAddr,
    /// Required (in `X-Palisade-Authz-Token`) when set; the configuration requires it when the
    /// listener is reachable beyond loopback.
    pub token: Option<String>,
    /// Gateways whose word about the client is taken: from these peers, `X-Real-IP` (else
    /// `X-Forwarded-For`) names the client. From any other peer, the peer is the client.
    pub trusted_gateways: Vec<IpNet>,
    /// Largest `POST /v1/judge` request body (the JSON document); beyond it: 413.
    pub max_request_size: u64,
}

/// Connection-level limits and timeouts, shared by every app.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    pub max_connections: usize,
    /// Largest request head (request line + headers); beyond it: 431.
    pub max_header_size: usize,
    pub max_headers: usize,
    /// Time allowed to receive a complete request head once its first byte arrived: 408.
    pub header_read_timeout: Duration,
    /// Time allowed between two chunks of a request body, and for the whole buffered part: 408.
    pub body_read_timeout: Duration,
    /// How long an idle keep-alive client connection is kept.
    pub keepalive_timeout: Duration,
    /// How long SIGTERM waits for in-flight requests before closing connections.
    pub shutdown_timeout: Duration,
    /// Peers whose `X-Forwarded-For` / `Forwarded` headers are believed.
    pub trusted_proxies: Vec<IpNet>,
    /// How long a worker keeps polling its sockets without sleeping after it last saw a request
    /// (zero: never; it sleeps in the poller as soon as it has nothing to do). Read at start.
    pub busy_poll: Duration,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            max_connections: 10_000,
            max_header_size: 16 * 1024,
            max_headers: 100,
            header_read_timeout: Duration::from_secs(10),
            body_read_timeout: Duration::from_secs(30),
            keepalive_timeout: Duration::from_secs(75),
            shutdown_timeout: Duration::from_secs(30),
            trusted_proxies: Vec::new(),
            busy_poll: Duration::ZERO,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HostHeader {
    /// Forward the client's Host (default).
    Preserve,
    /// Use the target's `host:port`.
    Upstream,
    /// Use this value.
    Fixed(String),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Oversize {
    /// Bodies larger than the inspection limit are rejected with 413.
    Reject,
    /// Inspect the first `inspect_body` bytes, stream the rest uninspected and record that.
    Stream,
}

/// What the upstream receives as the request path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ForwardPath {
    /// The canonical path every policy was judged on (nginx `proxy_pass` with a URI part).
    #[default]
    Canonical,
    /// The path exactly as the client sent it (nginx `proxy_pass` without a URI part).
    Original,
}

/// An app's `path:` section.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct AppPath {
    pub forward: ForwardPath,
    pub policy: palisade_core::path::PathPolicy,
}

#[derive(Clone, Debug)]
pub struct AppConfig {
    pub name: String,
    /// Host patterns (exact or `*.example.com`); empty = any host.
    pub hosts: Vec<String>,
    /// In canonical form ([`palisade_core::path`]).
    pub path_prefix: String,
    /// How the request path is made canonical and what goes upstream.
    pub path: AppPath,
    /// Index into [`Config::upstreams`] (short forms are turned into named upstreams
    /// `app:NAME`).
    pub upstream: usize,
    pub host_header: HostHeader,
    /// Status of blocked requests (default 403).
    pub block_status: u16,
    /// Absolute request body limit: 413 beyond it.
    pub max_body_size: u64,
    /// How much of the body is buffered for inspection before the upstream is contacted.
    pub inspect_body: u64,
    pub oversize: Oversize,
    /// How much of an upstream response is buffered for stages that judge responses (OpenAPI
    /// response validation); larger responses stream unjudged, and that is logged.
    pub inspect_response: u64,
    /// WebSocket proxying (`websocket:`): limits and message inspection.
    pub websocket: WebSocketConfig,
    /// gRPC calls (`grpc:`).
    pub grpc: GrpcConfig,
    /// Stage sections that later stages decode; kept raw until their engines exist.
    pub stages: Vec<(String, Node, Loc)>,
    pub loc: Loc,
}

/// What is done with the messages of a proxied WebSocket connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WsInspect {
    /// Frames are relayed as they are (their headers are still read for the limits).
    Off,
    /// Text messages from the client are reassembled and judged by the stages before they go
    /// upstream; compression extensions are not offered to the upstream.
    Text,
}

/// An app's `websocket:` section.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WebSocketConfig {
    /// Whether WebSocket handshakes are proxied (else they get 403 `websocket.disabled`).
    pub enabled: bool,
    pub inspect: WsInspect,
    /// Largest message (all its fragments) either side may send: beyond it the connection is
    /// closed with 1009.
    pub max_message: u64,
    /// No frame either way for this long: the connection is closed (1001).
    pub idle_timeout: Duration,
    /// A connection is closed (1001) after this long, whatever it does.
    pub max_lifetime: Duration,
    /// Open WebSocket connections per client IP for this app; beyond it the handshake gets 429.
    pub max_per_ip: u64,
}

impl Default for WebSocketConfig {
    fn default() -> Self {
        WebSocketConfig {
            enabled: true,
            inspect: WsInspect::Off,
            max_message: 1024 * 1024,
            idle_timeout: Duration::from_secs(60),
            max_lifetime: Duration::from_secs(24 * 3600),
            max_per_ip: 64,
        }
    }
}

/// An app's `grpc:` section.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GrpcConfig {
    /// A `FileDescriptorSet` (`protoc --descriptor_set_out=FILE --include_imports`) with the
    /// services of the app: messages are then read with their types, fields located by name.
    /// The file is read and checked when the configuration is compiled.
    pub descriptor_set: Option<Located<PathBuf>>,
}

/// Names of stage sections an app may carry, in the order the stages run. Each is decoded by
/// its own engine. User rules run before detection so that their `allow` and `skip` apply to it.
pub const STAGE_KEYS: &[&str] = &["access", "openapi", "graphql", "rules", "detection"];

/// Load and decode a file. Relative paths inside are resolved against its directory.
pub fn load_file(path: &Path) -> Result<Config, ConfigErrors> {
    match load_file_all(path) {
        (Some(c), errors) if errors.is_empty() => Ok(c),
        (_, errors) => Err(ConfigErrors(errors)),
    }
}

/// Decode a configuration from text, without environment overrides.
pub fn parse_str(text: &str, file: &str, base_dir: &Path) -> Result<Config, ConfigErrors> {
    parse_with_env(text, file, base_dir, &[], &|_| None)
}

/// Decode with explicit environment (for tests and for `load_file`).
pub fn parse_with_env(
    text: &str,
    file: &str,
    base_dir: &Path,
    overrides: &[(String, String)],
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Config, ConfigErrors> {
    match decode_with_env(text, file, base_dir, overrides, lookup) {
        (Some(c), errors) if errors.is_empty() => Ok(c),
        (_, errors) => Err(ConfigErrors(errors)),
    }
}

/// What [`decode_with_env`] and [`load_file_all`] found: the configuration as far as it
/// decoded, and every problem.
pub type Decoded = (Option<Config>, Vec<ConfigError>);

/// Like [`load_file`], but also returns the configuration as far as it decoded when there are
/// problems, so that `palisade check` can go on to check the stage sections of the apps.
pub fn load_file_all(path: &Path) -> Decoded {
    let file = path.display().to_string();
    let text = match read::read_text(path, read::MAX_FILE_BYTES) {
        Ok(t) => t,
        Err(e) => return (None, vec![ConfigError::read(&file, &e)]),
    };
    let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
    decode_with_env(&text, &file, &base, &env_vars(), &|name| std::env::var(name).ok())
}

/// The `PALISADE_*` variables of the process.
fn env_vars() -> Vec<(String, String)> {
    std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().unwrap_or_default())))
        .filter(|(k, _)| k.starts_with("PALISADE_"))
        .collect()
}

/// Decode, returning the configuration as far as it decoded (`None` when not even its shape
/// is right) and every problem, in file order (environment problems first).
pub fn decode_with_env(text: &str, file: &str, base_dir: &Path, overrides: &[(String, String)], lookup: &dyn Fn(&str) -> Option<String>) -> Decoded {
    let mut root = match yaml::parse(text) {
        Ok(r) => r,
        Err(e) => {
            let err = ConfigError {
                file: file.to_string(),
                line: e.line,
                col: e.col,
                env: None,
                path: String::new(),
                message: format!("invalid YAML: {}", e.message),
            };
            return (None, vec![err]);
        }
    };
    let mut cx = Ctx::new(file);
    env::apply_overrides(&mut cx, &mut root, overrides, &settable_paths());
    env::interpolate(&mut cx, &mut root, "", lookup);
    let config = decode_root(&mut cx, &root, file, base_dir);
    if config.is_none() && cx.errors.is_empty() {
        cx.error(&root.origin, "", "invalid configuration");
    }
    cx.errors.sort_by_key(|e| (e.env.is_none(), e.line, e.col));
    (config, cx.into_errors())
}

/// Key paths that a `PALISADE_*` variable may set when the file leaves them out (see
/// [`env::apply_overrides`]): every scalar this crate decodes, and any one key of a stage
/// section (checked by the stage's own decoder).
pub fn settable_paths() -> Vec<Vec<&'static str>> {
    let mut out: Vec<Vec<&'static str>> = Vec::new();
    let mut add = |prefix: &[&'static str], keys: &[&'static str]| {
        for k in keys {
            let mut p = prefix.to_vec();
            p.push(k);
            out.push(p);
        }
    };
    add(&[], &["workers", "events"]);
    add(&["log"], LOG_KEYS);
    add(&["admin"], ADMIN_KEYS);
    add(&["authz"], &["addr", "token", "max_request_size"]);
    add(&["server"], SERVER_KEYS);
    add(&["events"], EVENTS_KEYS);
    add(&["listen", "#"], &["addr", "http2"]);
    add(&["listen", "#", "tls"], &["cert", "key"]);
    let upstream_scalars: Vec<&'static str> = UPSTREAM_KEYS.iter().copied().filter(|k| !matches!(*k, "health_check" | "tls")).collect();
    add(&["upstreams", "#"], &upstream_scalars);
    add(&["upstreams", "#", "health_check"], HEALTH_KEYS);
    add(&["upstreams", "#", "tls"], UPSTREAM_TLS_KEYS);
    add(&["apps", "#", "upstream", "tls"], UPSTREAM_TLS_KEYS);
    add(&["apps", "#"], &APP_KEYS.iter().copied().filter(|k| !matches!(*k, "limits" | "access" | "rules")).collect::<Vec<_>>());
    add(&["apps", "#", "upstream"], &upstream_scalars[1..]);
    add(&["apps", "#", "upstream", "health_check"], HEALTH_KEYS);
    add(&["apps", "#", "limits"], LIMIT_KEYS);
    for stage in STAGE_KEYS {
        add(&["apps", "#", stage], &["*"]);
    }
    out
}

const ROOT_KEYS: &[&str] = &["workers", "log", "listen", "admin", "authz", "server", "upstreams", "apps", "events"];

fn decode_root(cx: &mut Ctx, root: &Node, file: &str, base_dir: &Path) -> Option<Config> {
    let mut m = MapReader::new(cx, root, "")?;
    let workers = m
        .opt(cx, "workers", |cx, n, p| match &n.value {
            Value::Str(s) if s == "auto" => Some(None),
            _ => decode::uint(cx, n, p, 1, 1024).map(|v| Some(v as usize)),
        })
        .flatten();
    let log = m.opt(cx, "log", decode_log).unwrap_or_default();
    let listen = m.req(cx, "listen", |cx, n, p| decode::seq(cx, n, p, |cx, n, p| decode_listener(cx, n, p, base_dir)));
    let admin = m.opt(cx, "admin", decode_admin);
    let authz = m.opt(cx, "authz", decode_authz);
    let server = m.opt(cx, "server", decode_server).unwrap_or_default();
    let mut upstreams = m.opt(cx, "upstreams", |cx, n, p| decode::seq(cx, n, p, |cx, n, p| decode_upstream_long(cx, n, p, None, base_dir))).unwrap_or_default();
    let apps_node = m.node("apps");
    let events = m.opt(cx, "events", decode_events);
    m.finish_with(cx, ROOT_KEYS);

    let mut seen = std::collections::HashSet::new();
    for u in &upstreams {
        if !seen.insert(u.name.clone()) {
            cx.errors.push(u.loc.error(file, format!("duplicate upstream name `{}`", u.name)));
        }
    }

    let mut apps = Vec::new();
    match apps_node {
        None => cx.error(root_origin(root), "", "missing required key `apps`"),
        Some(n) => {
            let named: HashMap<String, usize> = upstreams.iter().enumerate().map(|(i, u)| (u.name.clone(), i)).collect();
            apps = decode::seq_partial(cx, n, "apps", |cx, n, p| decode_app(cx, n, p, &mut upstreams, &named, base_dir));
            let listed = match &n.value {
                Value::Seq(items) => items.len(),
                _ => 0,
            };
            if listed == 0 && matches!(n.value, Value::Seq(_) | Value::Null) {
                cx.error(&n.origin, "apps", "at least one app is required");
            }
        }
    }
    let mut names = std::collections::HashSet::new();
    for a in &apps {
        if !names.insert(a.name.clone()) {
            cx.errors.push(a.loc.error(file, format!("duplicate app name `{}`", a.name)));
        }
    }
    // Two apps with the same host pattern and path prefix: the second could never match.
    // (`None` stands for "any host", an app without `hosts`.)
    let mut routes: HashMap<(Option<&str>, &str), &str> = HashMap::with_capacity(apps.len());
    for a in &apps {
        let hosts: Vec<Option<&str>> = if a.hosts.is_empty() { vec![None] } else { a.hosts.iter().map(|h| Some(h.as_str())).collect() };
        let mut shadowed_by = None;
        for h in hosts {
            match routes.get(&(h, a.path_prefix.as_str())) {
                Some(b) => shadowed_by = shadowed_by.or(Some(*b)),
                None => {
                    routes.insert((h, a.path_prefix.as_str()), a.name.as_str());
                }
            }
        }
        if let Some(b) = shadowed_by {
            cx.errors.push(a.loc.error(file, format!("app `{}` has the same host and path prefix as app `{b}` and can never be chosen", a.name)));
        }
    }

    // A listener that did not decode is reported; the rest is checked on.
    let decoded = listen.is_some();
    let listen = listen.unwrap_or_default();
    if decoded && listen.is_empty() {
        cx.error(root_origin(root), "listen", "at least one listener is required");
    }
    let mut addrs = std::collections::HashSet::new();
    for l in &listen {
        // Port 0 asks the system for a free port: several such listeners never collide.
        if l.addr.port() != 0 && !addrs.insert(l.addr) {
            cx.errors.push(l.loc.error(file, format!("address {} is listed twice", l.addr)));
        }
    }
    if let Some(a) = &admin {
        if a.addr.port() != 0 && addrs.contains(&a.addr) {
            cx.error(root_origin(root), "admin.addr", format!("admin address {} is also a proxy listener", a.addr));
        }
    }
    if let Some(z) = &authz {
        if z.addr.port() != 0 && (addrs.contains(&z.addr) || admin.as_ref().is_some_and(|a| a.addr == z.addr)) {
            cx.error(root_origin(root), "authz.addr", format!("authz address {} is also a proxy or admin listener", z.addr));
        }
    }
    Some(Config { source: file.to_string(), base_dir: base_dir.to_path_buf(), workers, log, listen, admin, authz, server, upstreams, apps, events })
}

fn root_origin(root: &Node) -> &Origin {
    &root.origin
}

const LOG_KEYS: &[&str] = &["format", "level", "access_log"];
const ADMIN_KEYS: &[&str] = &["addr", "token"];
const AUTHZ_KEYS: &[&str] = &["addr", "token", "trusted_gateways", "max_request_size"];
const SERVER_KEYS: &[&str] = &[
    "max_connections",
    "max_header_size",
    "max_headers",
    "header_read_timeout",
    "body_read_timeout",
    "keepalive_timeout",
    "shutdown_timeout",
    "trusted_proxies",
    "busy_poll",
];
const LIMIT_KEYS: &[&str] = &["max_body_size", "inspect_body", "oversize", "inspect_response"];

fn decode_log(cx: &mut Ctx, n: &Node, p: &str) -> Option<LogConfig> {
    let mut m = MapReader::new(cx, n, p)?;
    let format =
        m.opt(cx, "format", |cx, n, p| decode::one_of(cx, n, p, &["text", "json"])).map(|f| if f == "json" { LogFormat::Json } else { LogFormat::Text });
    let level = m.opt(cx, "level", |cx, n, p| {
        let s = decode::string(cx, n, p)?;
        if tracing_level_ok(&s) {
            Some(s)
        } else {
            cx.error(&n.origin, p, format!("`{s}` is not a log level (error, warn, info, debug, trace) or filter such as palisade=debug"));
            None
        }
    });
    let access_log = m.opt(cx, "access_log", decode::boolean).unwrap_or(false);
    m.finish_with(cx, LOG_KEYS);
    Some(LogConfig { format, level, access_log })
}

fn tracing_level_ok(s: &str) -> bool {
    s.split(',').all(|part| {
        let level = part.rsplit('=').next().unwrap_or("");
        matches!(level.trim().to_ascii_lowercase().as_str(), "error" | "warn" | "info" | "debug" | "trace" | "off")
    })
}

fn decode_listener(cx: &mut Ctx, n: &Node, p: &str, base: &Path) -> Option<Listener> {
    let mut m = MapReader::new(cx, n, p)?;
    let addr = m.req(cx, "addr", decode::socket_addr);
    let tls = m.opt(cx, "tls", |cx, n, p| decode_tls(cx, n, p, base));
    let http2 = m.opt(cx, "http2", decode::boolean).unwrap_or(true);
    m.finish_with(cx, &["addr", "tls", "http2"]);
    Some(Listener { addr: addr?, tls, http2, loc: Loc::of(n, p) })
}

fn decode_tls(cx: &mut Ctx, n: &Node, p: &str, base: &Path) -> Option<TlsConfig> {
    let mut m = MapReader::new(cx, n, p)?;
    let mut certificates = Vec::new();
    if m.has("cert") || m.has("key") {
        let cert = m.req(cx, "cert", |cx, n, p| path_value(cx, n, p, base));
        let key = m.req(cx, "key", |cx, n, p| path_value(cx, n, p, base));
        if let (Some(cert), Some(key)) = (cert, key) {
            certificates.push(CertConfig { cert, key, server_names: Vec::new() });
        }
    }
    if let Some(list) = m.opt(cx, "certificates", |cx, n, p| decode::seq(cx, n, p, |cx, n, p| decode_cert(cx, n, p, base))) {
        certificates.extend(list);
    }
    let origin = m.origin().clone();
    m.finish_with(cx, &["cert", "key", "certificates"]);
    if certificates.is_empty() {
        cx.error(&origin, p, "tls needs `cert` and `key`, or a `certificates` list");
        return None;
    }
    Some(TlsConfig { certificates })
}

fn decode_cert(cx: &mut Ctx, n: &Node, p: &str, base: &Path) -> Option<CertConfig> {
    let mut m = MapReader::new(cx, n, p)?;
    let cert = m.req(cx, "cert", |cx, n, p| path_value(cx, n, p, base));
    let key = m.req(cx, "key", |cx, n, p| path_value(cx, n, p, base));
    let server_names = m.opt(cx, "server_names", |cx, n, p| decode::one_or_seq(cx, n, p, decode::non_empty_string)).unwrap_or_default();
    m.finish_with(cx, &["cert", "key", "server_names"]);
    Some(CertConfig { cert: cert?, key: key?, server_names: server_names.into_iter().map(|s| s.to_ascii_lowercase()).collect() })
}

fn path_value(cx: &mut Ctx, n: &Node, p: &str, base: &Path) -> Option<Located<PathBuf>> {
    let s = decode::non_empty_string(cx, n, p)?;
    Some(Located { value: base.join(s), loc: Loc::of(n, p) })
}

fn decode_admin(cx: &mut Ctx, n: &Node, p: &str) -> Option<AdminConfig> {
    let mut m = MapReader::new(cx, n, p)?;
    let addr = m.req(cx, "addr", decode::socket_addr);
    let token = m.opt(cx, "token", decode::non_empty_string);
    let origin = m.origin().clone();
    m.finish_with(cx, ADMIN_KEYS);
    let addr = addr?;
    if !addr.ip().is_loopback() && token.is_none() {
        cx.error(&origin, p, format!("admin listener {addr} is reachable beyond loopback: set admin.token"));
    }
    Some(AdminConfig { addr, token })
}

fn decode_authz(cx: &mut Ctx, n: &Node, p: &str) -> Option<AuthzConfig> {
    let mut m = MapReader::new(cx, n, p)?;
    let addr = m.req(cx, "addr", decode::socket_addr);
    let token = m.opt(cx, "token", decode::non_empty_string);
    let trusted_gateways = m.opt(cx, "trusted_gateways", |cx, n, p| decode::one_or_seq(cx, n, p, decode::cidr)).unwrap_or_default();
    let max_request_size = m
        .opt(cx, "max_request_size", |cx, n, p| {
            let v = decode::size(cx, n, p)?;
            if !(1024..=1024 * 1024 * 1024).contains(&v) {
                cx.error(&n.origin, p, "must be between 1KiB and 1GiB");
                return None;
            }
            Some(v)
        })
        // A 1MiB body (the default `inspect_body`) is 1.33MiB in base64, with headers around it.
        .unwrap_or(2 * 1024 * 1024);
    let origin = m.origin().clone();
    m.finish_with(cx, AUTHZ_KEYS);
    let addr = addr?;
    if !addr.ip().is_loopback() && token.is_none() {
        cx.error(&origin, p, format!("authz listener {addr} is reachable beyond loopback: set authz.token"));
    }
    Some(AuthzConfig { addr, token, trusted_gateways, max_request_size })
}

fn decode_server(cx: &mut Ctx, n: &Node, p: &str) -> Option<ServerConfig> {
    let d = ServerConfig::default();
    let mut m = MapReader::new(cx, n, p)?;
    let s = ServerConfig {
        max_connections: m.opt(cx, "max_connections", |cx, n, p| decode::uint(cx, n, p, 1, 10_000_000)).map_or(d.max_connections, |v| v as usize),
        max_header_size: m
            .opt(cx, "max_header_size", |cx, n, p| {
                let v = decode::size(cx, n, p)?;
                if !(1024..=1024 * 1024).contains(&v) {
                    cx.error(&n.origin, p, "must be between 1KiB and 1MiB");
                    return None;
                }
                Some(v as usize)
            })
            .unwrap_or(d.max_header_size),
        max_headers: m.opt(cx, "max_headers", |cx, n, p| decode::uint(cx, n, p, 1, 1000)).map_or(d.max_headers, |v| v as usize),
        header_read_timeout: m.opt(cx, "header_read_timeout", positive_duration).unwrap_or(d.header_read_timeout),
        body_read_timeout: m.opt(cx, "body_read_timeout", positive_duration).unwrap_or(d.body_read_timeout),
        keepalive_timeout: m.opt(cx, "keepalive_timeout", positive_duration).unwrap_or(d.keepalive_timeout),
        shutdown_timeout: m.opt(cx, "shutdown_timeout", decode::duration).unwrap_or(d.shutdown_timeout),
        trusted_proxies: m.opt(cx, "trusted_proxies", |cx, n, p| decode::one_or_seq(cx, n, p, decode::cidr)).unwrap_or_default(),
        busy_poll: m
            .opt(cx, "busy_poll", |cx, n, p| {
                let d = decode::duration(cx, n, p)?;
                if d > MAX_BUSY_POLL {
                    cx.error(&n.origin, p, "must be at most 10ms (it is the time a worker spins after each request)");
                    return None;
                }
                Some(d)
            })
            .unwrap_or(d.busy_poll),
    };
    m.finish_with(cx, SERVER_KEYS);
    Some(s)
}

/// Longest `server.busy_poll`: a worker spins at most this long after each request.
const MAX_BUSY_POLL: Duration = Duration::from_millis(10);

fn positive_duration(cx: &mut Ctx, n: &Node, p: &str) -> Option<Duration> {
    let d = decode::duration(cx, n, p)?;
    if d.is_zero() {
        cx.error(&n.origin, p, "must be greater than zero");
        return None;
    }
    Some(d)
}

const APP_KEYS: &[&str] = &[
    "name",
    "hosts",
    "path_prefix",
    "path",
    "upstream",
    "host_header",
    "block_status",
    "limits",
    "websocket",
    "grpc",
    "access",
    "openapi",
    "graphql",
    "detection",
    "rules",
];

fn decode_app(cx: &mut Ctx, n: &Node, p: &str, upstreams: &mut Vec<UpstreamConfig>, named: &HashMap<String, usize>, base: &Path) -> Option<AppConfig> {
    let mut m = MapReader::new(cx, n, p)?;
    let name = m.req(cx, "name", decode::non_empty_string);
    let hosts = m
        .opt(cx, "hosts", |cx, n, p| {
            decode::one_or_seq(cx, n, p, |cx, n, p| {
                let h = decode::non_empty_string(cx, n, p)?.to_ascii_lowercase();
                let bare = h.strip_prefix("*.").unwrap_or(&h);
                if bare.contains('*') || bare.contains('/') || bare.contains(' ') {
                    cx.error(&n.origin, p, format!("`{h}` is not a host name or a `*.domain` wildcard"));
                    return None;
                }
                Some(h)
            })
        })
        .unwrap_or_default();
    let path_prefix = m
        .opt(cx, "path_prefix", |cx, n, p| {
            let s = decode::non_empty_string(cx, n, p)?;
            if !s.starts_with('/') {
                cx.error(&n.origin, p, "must start with /");
                return None;
            }
            match palisade_core::path::canonical_prefix(&s) {
                Some(c) => Some(c),
                None => {
                    cx.error(&n.origin, p, "not a valid path prefix (a `..` above the root, a malformed escape, or a `\\`, `;` or control byte)");
                    None
                }
            }
        })
        .unwrap_or_else(|| "/".into());
    let path = m.opt(cx, "path", decode_app_path).unwrap_or_default();
    let app_name = name.clone().unwrap_or_default();
    let upstream = m.req(cx, "upstream", |cx, n, p| match &n.value {
        Value::Str(s) if !s.contains(':') => match named.get(s) {
            Some(i) => Some(*i),
            None => {
                cx.error(&n.origin, p, format!("no upstream named `{s}` in `upstreams` (or write a target such as http://127.0.0.1:9090)"));
                None
            }
        },
        Value::Str(_) => {
            let t = decode_target(cx, n, p, base)?;
            upstreams.push(UpstreamConfig::with_targets(format!("app:{app_name}"), vec![t], Loc::of(n, p)));
            Some(upstreams.len() - 1)
        }
        Value::Map(_) => {
            let u = decode_upstream_long(cx, n, p, Some(format!("app:{app_name}")), base)?;
            upstreams.push(u);
            Some(upstreams.len() - 1)
        }
        _ => {
            cx.error(&n.origin, p, format!("expected a target URL, an upstream name or a mapping, found {}", n.kind()));
            None
        }
    });
    let host_header = m
        .opt(cx, "host_header", |cx, n, p| {
            let s = decode::non_empty_string(cx, n, p)?;
            Some(match s.as_str() {
                "preserve" => HostHeader::Preserve,
                "upstream" => HostHeader::Upstream,
                other => {
                    if http_header_value_ok(other) {
                        HostHeader::Fixed(other.to_string())
                    } else {
                        cx.error(&n.origin, p, "not a valid Host header value");
                        return None;
                    }
                }
            })
        })
        .unwrap_or(HostHeader::Preserve);
    let block_status = m.opt(cx, "block_status", |cx, n, p| decode::uint(cx, n, p, 400, 599)).map_or(403, |v| v as u16);
    let (max_body_size, inspect_body, oversize, inspect_response) = m.opt(cx, "limits", decode_limits).unwrap_or_else(default_limits);
    let websocket = m.opt(cx, "websocket", decode_websocket).unwrap_or_default();
    let grpc = m
        .opt(cx, "grpc", |cx, n, p| {
            let mut m = MapReader::new(cx, n, p)?;
            let descriptor_set = m.opt(cx, "descriptor_set", |cx, n, p| path_value(cx, n, p, base));
            m.finish_with(cx, &["descriptor_set"]);
            Some(GrpcConfig { descriptor_set })
        })
        .unwrap_or_default();
    let mut stages = Vec::new();
    for key in STAGE_KEYS {
        if let Some(node) = m.node(key) {
            let path = decode::join(p, key);
            stages.push((key.to_string(), node.clone(), Loc::of(node, &path)));
        }
    }
    m.finish_with(cx, APP_KEYS);
    Some(AppConfig {
        name: name?,
        hosts,
        path_prefix,
        path,
        upstream: upstream?,
        host_header,
        block_status,
        max_body_size,
        inspect_body,
        oversize,
        inspect_response,
        websocket,
        grpc,
        stages,
        loc: Loc::of(n, p),
    })
}

fn decode_websocket(cx: &mut Ctx, n: &Node, p: &str) -> Option<WebSocketConfig> {
    let mut m = MapReader::new(cx, n, p)?;
    let d = WebSocketConfig::default();
    let enabled = m.opt(cx, "enabled", decode::boolean).unwrap_or(d.enabled);
    let inspect = m
        .opt(cx, "inspect", |cx, n, p| {
            // YAML 1.1 readers turn a bare `off` into false: accept both spellings.
            if let Value::Bool(false) = n.value {
                return Some("off");
            }
            decode::one_of(cx, n, p, &["off", "text"])
        })
        .map_or(d.inspect, |v| if v == "text" { WsInspect::Text } else { WsInspect::Off });
    let max_message = m.opt(cx, "max_message", decode::size).unwrap_or(d.max_message);
    let idle_timeout = m.opt(cx, "idle_timeout", decode::duration).unwrap_or(d.idle_timeout);
    let max_lifetime = m.opt(cx, "max_lifetime", decode::duration).unwrap_or(d.max_lifetime);
    let max_per_ip = m.opt(cx, "max_per_ip", |cx, n, p| decode::uint(cx, n, p, 1, 1_000_000)).unwrap_or(d.max_per_ip);
    let origin = m.origin().clone();
    m.finish_with(cx, &["enabled", "inspect", "max_message", "idle_timeout", "max_lifetime", "max_per_ip"]);
    if max_message == 0 || max_message > 64 * 1024 * 1024 {
        cx.error(&origin, &decode::join(p, "max_message"), "max_message must be between 1 byte and 64MiB (inspected messages are buffered in memory)");
    }
    if idle_timeout.is_zero() || max_lifetime.is_zero() {
        cx.error(&origin, p, "idle_timeout and max_lifetime must be above zero");
    }
    Some(WebSocketConfig { enabled, inspect, max_message, idle_timeout, max_lifetime, max_per_ip })
}

fn http_header_value_ok(s: &str) -> bool {
    s.bytes().all(|b| b == b'\t' || (0x20..0x7f).contains(&b))
}

/// An app's `path:` section (docs/CONFIG.md, "Request paths").
fn decode_app_path(cx: &mut Ctx, n: &Node, p: &str) -> Option<AppPath> {
    use palisade_core::path::{Backslash, Control, EncodedSlash, InvalidUtf8, Semicolon};
    let mut m = MapReader::new(cx, n, p)?;
    let mut out = AppPath::default();
    let pol = &mut out.policy;
    if let Some(v) = m.opt(cx, "forward", |cx, n, p| decode::one_of(cx, n, p, &["canonical", "original"])) {
        out.forward = if v == "original" { ForwardPath::Original } else { ForwardPath::Canonical };
    }
    if let Some(v) = m.opt(cx, "merge_slashes", decode::boolean) {
        pol.merge_slashes = v;
    }
    if let Some(v) = m.opt(cx, "encoded_slash", |cx, n, p| decode::one_of(cx, n, p, &["decode", "keep", "reject"])) {
        pol.encoded_slash = match v {
            "decode" => EncodedSlash::Decode,
            "keep" => EncodedSlash::Keep,
            _ => EncodedSlash::Reject,
        };
    }
    let backslash = |v: &str| match v {
        "slash" => Backslash::Slash,
        "keep" => Backslash::Keep,
        _ => Backslash::Reject,
    };
    if let Some(v) = m.opt(cx, "backslash", |cx, n, p| decode::one_of(cx, n, p, &["slash", "keep", "reject"])) {
        pol.backslash = backslash(v);
        // A backend that reads `\` as a separator or as data reads `%5C` so too.
        if pol.backslash != Backslash::Reject {
            pol.encoded_backslash = pol.backslash;
        }
    }
    if let Some(v) = m.opt(cx, "encoded_backslash", |cx, n, p| decode::one_of(cx, n, p, &["slash", "keep", "reject"])) {
        pol.encoded_backslash = backslash(v);
        if !pol.is_coherent() {
            cx.error(
                &n.origin,
                &decode::join(p, "encoded_backslash"),
                "with `backslash: keep` a `\\` is canonically `%5C`, so `encoded_backslash` must be `keep` too",
            );
        }
    }
    if let Some(v) = m.opt(cx, "semicolon", |cx, n, p| decode::one_of(cx, n, p, &["keep", "strip", "reject"])) {
        pol.semicolon = match v {
            "keep" => Semicolon::Keep,
            "strip" => Semicolon::Strip,
            _ => Semicolon::Reject,
        };
    }
    if let Some(v) = m.opt(cx, "control", |cx, n, p| decode::one_of(cx, n, p, &["keep", "reject"])) {
        pol.control = if v == "keep" { Control::Keep } else { Control::Reject };
    }
    if let Some(v) = m.opt(cx, "invalid_utf8", |cx, n, p| decode::one_of(cx, n, p, &["keep", "reject"])) {
        pol.invalid_utf8 = if v == "keep" { InvalidUtf8::Keep } else { InvalidUtf8::Reject };
    }
    m.finish_with(cx, &["forward", "merge_slashes", "encoded_slash", "backslash", "encoded_backslash", "semicolon", "control", "invalid_utf8"]);
    Some(out)
}

/// `limits.max_body_size` when not set: every body an app accepts is inspected by default, so
/// the default is what inspection buffers comfortably.
pub const DEFAULT_MAX_BODY: u64 = 1024 * 1024;
/// `limits.inspect_body` when not set with `oversize: stream`.
pub const DEFAULT_INSPECT_STREAMED: u64 = 1024 * 1024;
/// Largest `inspect_body` (bodies are buffered in memory for inspection).
pub const MAX_INSPECT: u64 = 64 * 1024 * 1024;

/// `(max_body_size, inspect_body, oversize, inspect_response)` of the app defaults.
fn default_limits() -> (u64, u64, Oversize, u64) {
    (DEFAULT_MAX_BODY, DEFAULT_MAX_BODY, Oversize::Reject, 1024 * 1024)
}

fn decode_limits(cx: &mut Ctx, n: &Node, p: &str) -> Option<(u64, u64, Oversize, u64)> {
    let mut m = MapReader::new(cx, n, p)?;
    let max_body = m.opt(cx, "max_body_size", decode::size).unwrap_or(DEFAULT_MAX_BODY);
    let oversize = m.opt(cx, "oversize", |cx, n, p| decode::one_of(cx, n, p, &["reject", "stream"])).map_or(Oversize::Reject, |v| {
        if v == "stream" {
            Oversize::Stream
        } else {
            Oversize::Reject
        }
    });
    let inspect_set = m.opt(cx, "inspect_body", decode::size);
    // With `reject`, every accepted body is inspected, so inspection covers `max_body_size`;
    // with `stream`, the first MiB is inspected and the rest streams.
    let inspect = inspect_set.unwrap_or(match oversize {
        Oversize::Reject => max_body,
        Oversize::Stream => max_body.min(DEFAULT_INSPECT_STREAMED),
    });
    let inspect_response = m.opt(cx, "inspect_response", decode::size).unwrap_or(1024 * 1024);
    let origin = m.origin().clone();
    m.finish_with(cx, LIMIT_KEYS);
    if inspect_response > MAX_INSPECT {
        cx.error(&origin, &decode::join(p, "inspect_response"), "inspect_response above 64MiB is not supported (responses are buffered in memory)");
    }
    if inspect > max_body {
        cx.error(&origin, &decode::join(p, "inspect_body"), format!("inspect_body ({inspect}) is larger than max_body_size ({max_body})"));
    }
    if inspect > MAX_INSPECT {
        let msg = if inspect_set.is_none() {
            format!(
                "with oversize: reject every body up to max_body_size ({}) is buffered for inspection, and more than 64MiB is not supported: set `oversize: stream` (the first inspect_body bytes are inspected, the rest streams) or a smaller max_body_size",
                read::human_size(max_body)
            )
        } else {
            "inspect_body above 64MiB is not supported (bodies are buffered in memory)".to_string()
        };
        cx.error(&origin, &decode::join(p, "inspect_body"), msg);
    }
    Some((max_body, inspect, oversize, inspect_response))
}

#[cfg(test)]
mod tests;
