//! Upstreams: target URLs, the long form of an upstream (balancing, timeouts, TLS, health
//! checks), shared by the `upstreams` list and an app's own `upstream`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::decode::{self, Ctx, MapReader};
use crate::yaml::Node;
use crate::{positive_duration, Error, ErrorKind, Loc, Located};

pub(crate) const HEALTH_KEYS: &[&str] = &["path", "interval", "timeout", "rise", "fall", "grpc", "service"];

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// `http://host:port`; `host` may be a name resolved at startup and reload.
    Tcp { host: String, port: u16 },
    /// `unix:/path/to.sock`.
    Unix(PathBuf),
    /// `h2c://host:port`: HTTP/2 with prior knowledge over plain TCP.
    H2c { host: String, port: u16 },
    /// `https://host:port`: TLS, HTTP/2 when the upstream offers it by ALPN, else HTTP/1.1.
    Https { host: String, port: u16 },
}

impl Target {
    /// The protocol family: targets of one upstream must share it.
    pub fn scheme(&self) -> &'static str {
        match self {
            Target::Tcp { .. } | Target::Unix(_) => "http",
            Target::H2c { .. } => "h2c",
            Target::Https { .. } => "https",
        }
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::Tcp { host, port } => write!(f, "http://{host}:{port}"),
            Target::Unix(p) => write!(f, "unix:{}", p.display()),
            Target::H2c { host, port } => write!(f, "h2c://{host}:{port}"),
            Target::Https { host, port } => write!(f, "https://{host}:{port}"),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Balance {
    RoundRobin,
    LeastConnections,
}

#[derive(Clone, Debug)]
pub struct UpstreamConfig {
    pub name: String,
    pub targets: Vec<Located<Target>>,
    pub balance: Balance,
    pub connect_timeout: Duration,
    /// Time to the response head, and between two chunks of the response body.
    pub read_timeout: Duration,
    /// Idle keep-alive connections kept per target and worker.
    pub max_idle: usize,
    pub idle_timeout: Duration,
    /// Consecutive failures (connect errors, resets, timeouts) that eject a target.
    pub max_fails: u32,
    pub eject_for: Duration,
    pub health_check: Option<HealthCheck>,
    /// For `https://` targets: how their certificates are verified.
    pub tls: UpstreamTls,
    pub loc: Loc,
}

/// How the certificates of `https://` targets are verified.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UpstreamTls {
    /// PEM file of the CA certificates trusted (default: the system's bundle).
    pub ca: Option<PathBuf>,
    /// The name the certificate must hold (default: the target's host).
    pub server_name: Option<String>,
}

impl UpstreamConfig {
    pub(crate) fn with_targets(name: String, targets: Vec<Located<Target>>, loc: Loc) -> Self {
        UpstreamConfig {
            name,
            targets,
            balance: Balance::RoundRobin,
            connect_timeout: Duration::from_secs(5),
            read_timeout: Duration::from_secs(60),
            max_idle: 64,
            idle_timeout: Duration::from_secs(60),
            max_fails: 3,
            eject_for: Duration::from_secs(10),
            health_check: None,
            tls: UpstreamTls::default(),
            loc,
        }
    }
}

#[derive(Clone, Debug)]
pub struct HealthCheck {
    pub path: String,
    pub interval: Duration,
    pub timeout: Duration,
    /// Consecutive successes that bring an unhealthy target back.
    pub rise: u32,
    /// Consecutive failures that mark a target unhealthy.
    pub fall: u32,
    /// Check with the gRPC health-checking protocol (`grpc.health.v1.Health/Check`) instead of
    /// a GET of `path` (HTTP/2 targets only).
    pub grpc: bool,
    /// The service named in the gRPC check (`""`: the server as a whole).
    pub service: String,
}

/// Parse a target URL: `http://host:port` (port defaults to 80) or `unix:/path`.
pub fn parse_target(s: &str, base: &Path) -> Result<Target, Error> {
    let s = s.trim();
    let err = |m: String| Error::new(ErrorKind::Target, m);
    if let Some(path) = s.strip_prefix("unix:") {
        let path = path.strip_prefix("//").unwrap_or(path);
        if path.is_empty() {
            return Err(err("unix target needs a socket path, e.g. unix:/run/api.sock".into()));
        }
        return Ok(Target::Unix(base.join(path)));
    }
    let (rest, default_port, scheme) = if let Some(r) = s.strip_prefix("http://") {
        (r, 80, "http")
    } else if let Some(r) = s.strip_prefix("h2c://") {
        (r, 80, "h2c")
    } else if let Some(r) = s.strip_prefix("https://") {
        (r, 443, "https")
    } else {
        return Err(err(format!("`{s}` is not a target: use http://host:port, h2c://host:port, https://host:port or unix:/path.sock")));
    };
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    if rest.contains('/') || rest.contains('?') {
        return Err(err(format!("`{s}`: a target is scheme, host and port only (no path)")));
    }
    let (host, port) = if let Some(v6) = rest.strip_prefix('[') {
        let (h, after) = v6.split_once(']').ok_or_else(|| err(format!("`{s}`: unterminated IPv6 address")))?;
        let port = match after.strip_prefix(':') {
            Some(p) => p.parse::<u16>().map_err(|e| Error::caused_by(ErrorKind::Target, format!("`{s}`: invalid port"), e))?,
            None if after.is_empty() => default_port,
            None => return Err(err(format!("`{s}`: invalid address"))),
        };
        (h.to_string(), port)
    } else {
        match rest.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), p.parse::<u16>().map_err(|e| Error::caused_by(ErrorKind::Target, format!("`{s}`: invalid port `{p}`"), e))?),
            None => (rest.to_string(), default_port),
        }
    };
    if host.is_empty() {
        return Err(err(format!("`{s}`: missing host")));
    }
    Ok(match scheme {
        "h2c" => Target::H2c { host, port },
        "https" => Target::Https { host, port },
        _ => Target::Tcp { host, port },
    })
}

pub(crate) fn decode_target(cx: &mut Ctx, n: &Node, p: &str, base: &Path) -> Option<Located<Target>> {
    let s = decode::non_empty_string(cx, n, p)?;
    match parse_target(&s, base) {
        Ok(t) => Some(Located { value: t, loc: Loc::of(n, p) }),
        Err(e) => {
            cx.error(&n.origin, p, e.to_string());
            None
        }
    }
}

pub(crate) const UPSTREAM_KEYS: &[&str] =
    &["name", "targets", "balance", "connect_timeout", "read_timeout", "max_idle", "idle_timeout", "max_fails", "eject_for", "health_check", "tls"];

pub(crate) fn decode_upstream_long(cx: &mut Ctx, n: &Node, p: &str, name: Option<String>, base: &Path) -> Option<UpstreamConfig> {
    let mut m = MapReader::new(cx, n, p)?;
    let own_name = if name.is_none() { m.req(cx, "name", decode::non_empty_string) } else { None };
    let targets = m.req(cx, "targets", |cx, n, p| decode::one_or_seq(cx, n, p, |cx, n, p| decode_target(cx, n, p, base)));
    let mut u = UpstreamConfig::with_targets(name.or(own_name).unwrap_or_default(), targets.clone().unwrap_or_default(), Loc::of(n, p));
    if let Some(b) = m.opt(cx, "balance", |cx, n, p| decode::one_of(cx, n, p, &["round_robin", "least_connections"])) {
        u.balance = if b == "round_robin" { Balance::RoundRobin } else { Balance::LeastConnections };
    }
    u.connect_timeout = m.opt(cx, "connect_timeout", positive_duration).unwrap_or(u.connect_timeout);
    u.read_timeout = m.opt(cx, "read_timeout", positive_duration).unwrap_or(u.read_timeout);
    u.max_idle = m.opt(cx, "max_idle", |cx, n, p| decode::uint(cx, n, p, 0, 100_000)).map_or(u.max_idle, |v| v as usize);
    u.idle_timeout = m.opt(cx, "idle_timeout", positive_duration).unwrap_or(u.idle_timeout);
    u.max_fails = m.opt(cx, "max_fails", |cx, n, p| decode::uint(cx, n, p, 0, 1000)).map_or(u.max_fails, |v| v as u32);
    u.eject_for = m.opt(cx, "eject_for", positive_duration).unwrap_or(u.eject_for);
    u.health_check = m.opt(cx, "health_check", decode_health);
    let tls_node = m.opt(cx, "tls", |cx, n, p| decode_upstream_tls(cx, n, p, base).map(|t| (t, n.origin.clone())));
    let origin = m.origin().clone();
    m.finish_with(cx, if p.starts_with("upstreams") { UPSTREAM_KEYS } else { &UPSTREAM_KEYS[1..] });
    let targets = targets?;
    if targets.is_empty() {
        cx.error(&origin, &decode::join(p, "targets"), "at least one target is required");
        return None;
    }
    let scheme = targets[0].value.scheme();
    if let Some(other) = targets.iter().find(|t| t.value.scheme() != scheme) {
        cx.error(
            &origin,
            &decode::join(p, "targets"),
            format!("targets of one upstream share a protocol: `{}` is {}, `{}` is {}", targets[0].value, scheme, other.value, other.value.scheme()),
        );
    }
    if let Some((tls, at)) = tls_node {
        if scheme != "https" {
            cx.error(&at, &decode::join(p, "tls"), "`tls` applies to https:// targets only");
        }
        u.tls = tls;
    }
    if u.health_check.as_ref().is_some_and(|h| h.grpc) && scheme == "http" {
        cx.error(&origin, &decode::join(p, "health_check.grpc"), "gRPC health checks need HTTP/2 targets (h2c:// or https://)");
    }
    Some(u)
}

fn decode_upstream_tls(cx: &mut Ctx, n: &Node, p: &str, base: &Path) -> Option<UpstreamTls> {
    let mut m = MapReader::new(cx, n, p)?;
    let ca = m.opt(cx, "ca", decode::non_empty_string).map(|c| base.join(c));
    let server_name = m.opt(cx, "server_name", decode::non_empty_string);
    m.finish_with(cx, UPSTREAM_TLS_KEYS);
    Some(UpstreamTls { ca, server_name })
}

pub(crate) const UPSTREAM_TLS_KEYS: &[&str] = &["ca", "server_name"];

fn decode_health(cx: &mut Ctx, n: &Node, p: &str) -> Option<HealthCheck> {
    let mut m = MapReader::new(cx, n, p)?;
    let path = m.opt(cx, "path", decode::non_empty_string).unwrap_or_else(|| "/".into());
    let interval = m.opt(cx, "interval", positive_duration).unwrap_or(Duration::from_secs(5));
    let timeout = m.opt(cx, "timeout", positive_duration).unwrap_or(Duration::from_secs(2));
    let rise = m.opt(cx, "rise", |cx, n, p| decode::uint(cx, n, p, 1, 100)).unwrap_or(2) as u32;
    let fall = m.opt(cx, "fall", |cx, n, p| decode::uint(cx, n, p, 1, 100)).unwrap_or(3) as u32;
    let grpc = m.opt(cx, "grpc", decode::boolean).unwrap_or(false);
    let service = m.opt(cx, "service", decode::string).unwrap_or_default();
    m.finish_with(cx, HEALTH_KEYS);
    if !path.starts_with('/') {
        cx.error(&n.origin, &decode::join(p, "path"), "must start with /");
        return None;
    }
    Some(HealthCheck { path, interval, timeout, rise, fall, grpc, service })
}
