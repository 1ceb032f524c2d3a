//! The `access:` section of an app, decoded with the configuration crate's collecting decoder
//! (every problem reported with its line and key path). Every key is documented in
//! docs/CONFIG.md.
//!
//! ```yaml
//! access:
//!   mode: block                       # block | monitor
//!   ip_deny: [203.0.113.0/24]         # also ip_allow (allowlist mode: only listed clients)
//!   ip_deny_file: deny.txt            # one CIDR per line; also ip_allow_file; reloaded
//!   jwt:
//!     algorithms: [HS256]
//!     secret: ${JWT_SECRET}           # or public_key_file, jwks_file, jwks_url
//!     issuer: https://issuer.example
//!     audience: api
//!     forward: {sub: X-User-Id}
//!   api_keys: {header: X-Api-Key, file: keys.txt}
//!   require: jwt                      # none | jwt | api_key | any
//!   routes: [{prefix: /public, require: none}]
//!   deny: {file: revoked.txt}
//!   rate_limits:
//!     - {key: client_ip, rate: 100/s, burst: 50}
//!   store: local                      # or redis://127.0.0.1:6379
//!   flood: {rate: 500/s, ban: 1m}
//! ```

use std::path::{Path, PathBuf};
use std::time::Duration;

use ipnet::IpNet;
use palisade_config::decode::{self, Ctx, MapReader};
use palisade_config::yaml::{Node, Value};
use palisade_core::Mode;

use crate::jwt::{Alg, ClaimRules};
use crate::keys::DenyEntry;
use crate::ratelimit::Rate;

/// Which credential a request must carry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Require {
    None,
    Jwt,
    ApiKey,
    /// A valid JWT or a valid API key.
    Any,
}

/// Where the token is taken from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TokenSource {
    /// `Authorization: Bearer TOKEN` (the default).
    Bearer,
    /// The whole value of a header (a `Bearer ` prefix is removed if present).
    Header(http::HeaderName),
    Cookie(String),
}

#[derive(Clone, Debug, PartialEq)]
pub struct JwtSettings {
    pub algorithms: Vec<Alg>,
    pub secret: Option<String>,
    pub public_key_files: Vec<PathBuf>,
    pub jwks_file: Option<PathBuf>,
    pub jwks_url: Option<String>,
    pub jwks_refresh: Duration,
    pub jwks_min_refetch: Duration,
    pub rules: ClaimRules,
    pub token: TokenSource,
    /// Claim → upstream header. Incoming headers of these names are always removed.
    pub forward: Vec<(String, http::HeaderName)>,
    pub max_token_size: usize,
    pub realm: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InlineKey {
    pub sha256: String,
    pub name: String,
    pub tier: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiKeySettings {
    pub header: Option<http::HeaderName>,
    pub query: Option<String>,
    pub cookie: Option<String>,
    pub keys: Vec<InlineKey>,
    pub file: Option<PathBuf>,
}

/// What a rate limit counts by.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeyPart {
    ClientIp,
    ApiKey,
    Jwt(String),
    /// Method and path of the request.
    Route,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LimitSettings {
    pub name: String,
    pub key: Vec<KeyPart>,
    pub rate: Rate,
    pub burst: Option<u64>,
    /// Only requests under this path prefix.
    pub prefix: Option<String>,
    /// Only requests authenticated with an API key of this tier.
    pub tier: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RoutePolicy {
    pub prefix: String,
    pub require: Option<Require>,
    /// Scopes a verified token must grant (all of them).
    pub scopes: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Store {
    Local,
    /// `redis://host:port[/db]`
    Redis(String),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RedisSettings {
    /// Allow (`true`, each instance then enforces the limit on its own) or refuse (503) when
    /// the store is unreachable.
    pub fail_open: bool,
    pub sync_interval: Duration,
    pub timeout: Duration,
    pub prefix: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FloodSettings {
    pub rate: Rate,
    pub burst: Option<u64>,
    pub ban: Duration,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    pub mode: Mode,
    pub ip_allow: Vec<IpNet>,
    pub ip_allow_files: Vec<PathBuf>,
    pub ip_deny: Vec<IpNet>,
    pub ip_deny_files: Vec<PathBuf>,
    /// How often referenced files are checked for changes.
    pub reload: Duration,
    pub jwt: Option<JwtSettings>,
    pub api_keys: Option<ApiKeySettings>,
    pub require: Require,
    pub routes: Vec<RoutePolicy>,
    pub deny: Vec<DenyEntry>,
    pub deny_file: Option<PathBuf>,
    pub rate_limits: Vec<LimitSettings>,
    pub rate_limit_headers_always: bool,
    pub store: Store,
    pub redis: RedisSettings,
    pub max_keys: usize,
    pub flood: Option<FloodSettings>,
}

const KEYS: &[&str] = &[
    "mode",
    "ip_allow",
    "ip_allow_file",
    "ip_deny",
    "ip_deny_file",
    "reload",
    "jwt",
    "api_keys",
    "require",
    "routes",
    "deny",
    "rate_limits",
    "rate_limit_headers",
    "store",
    "redis",
    "max_keys",
    "flood",
];
const JWT_KEYS: &[&str] = &[
    "algorithms",
    "secret",
    "public_key_file",
    "jwks_file",
    "jwks_url",
    "jwks_refresh",
    "jwks_min_refetch",
    "issuer",
    "audience",
    "leeway",
    "required_claims",
    "claims",
    "contains",
    "token",
    "forward",
    "max_token_size",
    "realm",
];

fn mode(cx: &mut Ctx, n: &Node, p: &str) -> Option<Mode> {
    decode::one_of(cx, n, p, &["block", "monitor"]).map(|v| if v == "monitor" { Mode::Monitor } else { Mode::Block })
}

fn require(cx: &mut Ctx, n: &Node, p: &str) -> Option<Require> {
    decode::one_of(cx, n, p, &["none", "jwt", "api_key", "any"]).map(|v| match v {
        "jwt" => Require::Jwt,
        "api_key" => Require::ApiKey,
        "any" => Require::Any,
        _ => Require::None,
    })
}

fn header_name(cx: &mut Ctx, n: &Node, p: &str) -> Option<http::HeaderName> {
    let s = decode::non_empty_string(cx, n, p)?;
    match http::HeaderName::from_bytes(s.as_bytes()) {
        Ok(h) => Some(h),
        Err(_) => {
            cx.error(&n.origin, p, format!("`{s}` is not a valid header name"));
            None
        }
    }
}

fn path_in(base: &Path) -> impl Fn(&mut Ctx, &Node, &str) -> Option<PathBuf> + '_ {
    move |cx, n, p| decode::non_empty_string(cx, n, p).map(|s| base.join(s))
}

fn positive_duration(cx: &mut Ctx, n: &Node, p: &str) -> Option<Duration> {
    let d = decode::duration(cx, n, p)?;
    if d.is_zero() {
        cx.error(&n.origin, p, "must be positive");
        return None;
    }
    Some(d)
}

fn rate(cx: &mut Ctx, n: &Node, p: &str) -> Option<Rate> {
    let s = decode::string_like(cx, n, p)?;
    match Rate::parse(&s) {
        Some(r) => Some(r),
        None => {
            cx.error(&n.origin, p, format!("`{s}` is not a rate such as 100/s, 1000/h or 5/10s"));
            None
        }
    }
}

fn prefix(cx: &mut Ctx, n: &Node, p: &str) -> Option<String> {
    let s = decode::non_empty_string(cx, n, p)?;
    if !s.starts_with('/') {
        cx.error(&n.origin, p, "a path prefix starts with `/`");
        return None;
    }
    // Compared with the canonical request path, so written in canonical form.
    let c = palisade_core::path::canonical_prefix(&s);
    if c.is_none() {
        cx.error(&n.origin, p, "not a valid path prefix (a `..` above the root, a malformed escape, or a `\\`, `;` or control byte)");
    }
    c
}

impl Settings {
    /// Decode the section at key path `p`; relative file names are resolved against `base`.
    pub fn decode(cx: &mut Ctx, n: &Node, p: &str, base: &Path) -> Option<Settings> {
        let mut m = MapReader::new(cx, n, p)?;
        let errors_before = cx.errors.len();
        let mode = m.opt(cx, "mode", mode).unwrap_or(Mode::Block);
        let ip_allow = m.opt(cx, "ip_allow", |cx, n, p| decode::one_or_seq(cx, n, p, decode::cidr)).unwrap_or_default();
        let ip_allow_files = m.opt(cx, "ip_allow_file", |cx, n, p| decode::one_or_seq(cx, n, p, path_in(base))).unwrap_or_default();
        let ip_deny = m.opt(cx, "ip_deny", |cx, n, p| decode::one_or_seq(cx, n, p, decode::cidr)).unwrap_or_default();
        let ip_deny_files = m.opt(cx, "ip_deny_file", |cx, n, p| decode::one_or_seq(cx, n, p, path_in(base))).unwrap_or_default();
        let reload = m.opt(cx, "reload", positive_duration).unwrap_or(Duration::from_secs(5));
        let jwt = m.opt(cx, "jwt", |cx, n, p| decode_jwt(cx, n, p, base));
        let api_keys = m.opt(cx, "api_keys", |cx, n, p| decode_api_keys(cx, n, p, base));
        let require_node = m.node("require");
        let req = match require_node {
            Some(n) => require(cx, n, &decode::join(p, "require")),
            None => None,
        };
        let default_require = match (&jwt, &api_keys) {
            (Some(_), Some(_)) => Require::Any,
            (Some(_), None) => Require::Jwt,
            (None, Some(_)) => Require::ApiKey,
            (None, None) => Require::None,
        };
        let require = req.unwrap_or(default_require);
        let routes = m.opt(cx, "routes", |cx, n, p| decode::seq(cx, n, p, decode_route)).unwrap_or_default();
        let (deny, deny_file) = m.opt(cx, "deny", |cx, n, p| decode_deny(cx, n, p, base)).unwrap_or_default();
        let rate_limits = m
            .opt(cx, "rate_limits", |cx, n, p| {
                let mut i = 0;
                decode::seq(cx, n, p, |cx, n, p| {
                    i += 1;
                    decode_limit(cx, n, p, i - 1)
                })
            })
            .unwrap_or_default();
        let rate_limit_headers_always =
            m.opt(cx, "rate_limit_headers", |cx, n, p| decode::one_of(cx, n, p, &["blocked", "always"]).map(|v| v == "always")).unwrap_or(false);
        let store = m
            .opt(cx, "store", |cx, n, p| {
                let s = decode::non_empty_string(cx, n, p)?;
                if s == "local" {
                    return Some(Store::Local);
                }
                if s.starts_with("redis://") && s.len() > 8 {
                    return Some(Store::Redis(s));
                }
                cx.error(&n.origin, p, "expected `local` or a `redis://host:port` URL");
                None
            })
            .unwrap_or(Store::Local);
        let redis = m.opt(cx, "redis", decode_redis).unwrap_or(RedisSettings {
            fail_open: true,
            sync_interval: Duration::from_millis(50),
            timeout: Duration::from_millis(500),
            prefix: "palisade".into(),
        });
        let max_keys = m.opt(cx, "max_keys", |cx, n, p| decode::uint(cx, n, p, 16, 100_000_000)).map_or(100_000, |v| v as usize);
        let flood = m.opt(cx, "flood", |cx, n, p| {
            if matches!(n.value, Value::Bool(false)) || n.scalar_text().as_deref() == Some("off") {
                return None;
            }
            let mut f = MapReader::new(cx, n, p)?;
            let rate = f.req(cx, "rate", rate);
            let burst = f.opt(cx, "burst", |cx, n, p| decode::uint(cx, n, p, 1, 1_000_000_000));
            let ban = f.opt(cx, "ban", positive_duration).unwrap_or(Duration::from_secs(60));
            f.finish_with(cx, &["rate", "burst", "ban"]);
            Some(FloodSettings { rate: rate?, burst, ban })
        });
        m.finish_with(cx, KEYS);
        if matches!(require, Require::Jwt | Require::Any) && jwt.is_none() && cx.errors.len() == errors_before {
            cx.error(&require_node.unwrap_or(n).origin, p, "`require` asks for a JWT but there is no `jwt` section");
        }
        if matches!(require, Require::ApiKey) && api_keys.is_none() && cx.errors.len() == errors_before {
            cx.error(&require_node.unwrap_or(n).origin, p, "`require` asks for an API key but there is no `api_keys` section");
        }
        Some(Settings {
            mode,
            ip_allow,
            ip_allow_files,
            ip_deny,
            ip_deny_files,
            reload,
            jwt,
            api_keys,
            require,
            routes,
            deny,
            deny_file,
            rate_limits,
            rate_limit_headers_always,
            store,
            redis,
            max_keys,
            flood,
        })
    }

    /// Every file the section refers to (watched for changes by the binary).
    pub fn files(&self) -> Vec<PathBuf> {
        let mut f: Vec<PathBuf> = self.ip_allow_files.iter().chain(&self.ip_deny_files).cloned().collect();
        if let Some(j) = &self.jwt {
            f.extend(j.public_key_files.iter().cloned());
            f.extend(j.jwks_file.iter().cloned());
        }
        if let Some(k) = &self.api_keys {
            f.extend(k.file.iter().cloned());
        }
        f.extend(self.deny_file.iter().cloned());
        f
    }
}

fn strings(cx: &mut Ctx, n: &Node, p: &str) -> Option<Vec<String>> {
    decode::one_or_seq(cx, n, p, decode::non_empty_string)
}

fn decode_jwt(cx: &mut Ctx, n: &Node, p: &str, base: &Path) -> Option<JwtSettings> {
    let mut m = MapReader::new(cx, n, p)?;
    let algorithms = m.req(cx, "algorithms", |cx, n, p| {
        decode::one_or_seq(cx, n, p, |cx, n, p| {
            let s = decode::non_empty_string(cx, n, p)?;
            match Alg::parse(&s) {
                Some(a) => Some(a),
                None => {
                    let all: Vec<&str> = Alg::ALL.iter().map(|a| a.name()).collect();
                    cx.error(&n.origin, p, format!("unsupported algorithm `{s}`; expected one of: {}", all.join(", ")));
                    None
                }
            }
        })
    });
    let secret = m.opt(cx, "secret", |cx, n, p| {
        let s = decode::non_empty_string(cx, n, p)?;
        if s.len() < 16 {
            cx.error(&n.origin, p, "an HMAC secret must be at least 16 bytes (32 or more recommended)");
            return None;
        }
        Some(s)
    });
    let public_key_files = m.opt(cx, "public_key_file", |cx, n, p| decode::one_or_seq(cx, n, p, path_in(base))).unwrap_or_default();
    let jwks_file = m.opt(cx, "jwks_file", path_in(base));
    let jwks_url = m.opt(cx, "jwks_url", |cx, n, p| {
        let s = decode::non_empty_string(cx, n, p)?;
        let l = s.to_ascii_lowercase();
        if !(l.starts_with("http://") || l.starts_with("https://")) {
            cx.error(&n.origin, p, "expected an http:// or https:// URL");
            return None;
        }
        Some(s)
    });
    let jwks_refresh = m.opt(cx, "jwks_refresh", positive_duration).unwrap_or(Duration::from_secs(300));
    let jwks_min_refetch = m.opt(cx, "jwks_min_refetch", decode::duration).unwrap_or(Duration::from_secs(30));
    let issuers = m.opt(cx, "issuer", strings).unwrap_or_default();
    let audiences = m.opt(cx, "audience", strings).unwrap_or_default();
    let leeway = m.opt(cx, "leeway", decode::duration).map_or(60, |d| d.as_secs());
    let required = m.opt(cx, "required_claims", strings).unwrap_or_default();
    let equals = m
        .opt(cx, "claims", |cx, n, p| {
            let mut r = MapReader::new(cx, n, p)?;
            let names: Vec<String> = match &n.value {
                Value::Map(e) => e.iter().map(|(k, _)| k.name.clone()).collect(),
                _ => Vec::new(),
            };
            let mut out = Vec::new();
            for name in names {
                let v = r.opt(cx, &name, |cx, n, p| match &n.value {
                    Value::Str(s) => Some(serde_json::Value::String(s.clone())),
                    Value::Bool(b) => Some(serde_json::Value::Bool(*b)),
                    Value::Int(i) => Some(serde_json::Value::from(*i)),
                    _ => {
                        cx.error(&n.origin, p, "expected a string, number or boolean");
                        None
                    }
                });
                if let Some(v) = v {
                    out.push((name, v));
                }
            }
            r.finish(cx);
            Some(out)
        })
        .unwrap_or_default();
    let contains = m
        .opt(cx, "contains", |cx, n, p| {
            let mut r = MapReader::new(cx, n, p)?;
            let names: Vec<String> = match &n.value {
                Value::Map(e) => e.iter().map(|(k, _)| k.name.clone()).collect(),
                _ => Vec::new(),
            };
            let mut out = Vec::new();
            for name in names {
                if let Some(v) = r.opt(cx, &name, decode::string_like) {
                    out.push((name, v));
                }
            }
            r.finish(cx);
            Some(out)
        })
        .unwrap_or_default();
    let token = m
        .opt(cx, "token", |cx, n, p| {
            if n.scalar_text().as_deref() == Some("bearer") {
                return Some(TokenSource::Bearer);
            }
            let mut r = MapReader::new(cx, n, p)?;
            let header = r.opt(cx, "header", header_name);
            let cookie = r.opt(cx, "cookie", decode::non_empty_string);
            r.finish_with(cx, &["header", "cookie"]);
            match (header, cookie) {
                (Some(h), None) if h == http::header::AUTHORIZATION => Some(TokenSource::Bearer),
                (Some(h), None) => Some(TokenSource::Header(h)),
                (None, Some(c)) => Some(TokenSource::Cookie(c)),
                _ => {
                    cx.error(&n.origin, p, "give one of `header` or `cookie` (or `bearer`)");
                    None
                }
            }
        })
        .unwrap_or(TokenSource::Bearer);
    let forward = m
        .opt(cx, "forward", |cx, n, p| {
            let mut r = MapReader::new(cx, n, p)?;
            let names: Vec<String> = match &n.value {
                Value::Map(e) => e.iter().map(|(k, _)| k.name.clone()).collect(),
                _ => Vec::new(),
            };
            let mut out = Vec::new();
            for name in names {
                if let Some(h) = r.opt(cx, &name, header_name) {
                    out.push((name, h));
                }
            }
            r.finish(cx);
            Some(out)
        })
        .unwrap_or_default();
    let max_token_size = m.opt(cx, "max_token_size", decode::size).map_or(16 * 1024, |v| v as usize);
    let realm = m.opt(cx, "realm", decode::non_empty_string).unwrap_or_else(|| "api".into());
    m.finish_with(cx, JWT_KEYS);
    let algorithms = algorithms?;
    let has_hs = algorithms.iter().any(|a| matches!(a, Alg::HS256 | Alg::HS384 | Alg::HS512));
    if has_hs && secret.is_none() && jwks_file.is_none() && jwks_url.is_none() {
        cx.error(&n.origin, p, "HS* algorithms need `secret` (or oct keys in a JWKS)");
    }
    if secret.is_none() && public_key_files.is_empty() && jwks_file.is_none() && jwks_url.is_none() {
        cx.error(&n.origin, p, "no keys: give `secret`, `public_key_file`, `jwks_file` or `jwks_url`");
    }
    if realm.contains(['"', '\\']) || !realm.bytes().all(|b| (0x20..0x7f).contains(&b)) {
        cx.error(&n.origin, p, "`realm` must be printable ASCII without quotes");
    }
    Some(JwtSettings {
        algorithms,
        secret,
        public_key_files,
        jwks_file,
        jwks_url,
        jwks_refresh,
        jwks_min_refetch,
        rules: ClaimRules { leeway, issuers, audiences, required, equals, contains },
        token,
        forward,
        max_token_size,
        realm,
    })
}

fn decode_api_keys(cx: &mut Ctx, n: &Node, p: &str, base: &Path) -> Option<ApiKeySettings> {
    let mut m = MapReader::new(cx, n, p)?;
    let header = m.opt(cx, "header", header_name);
    let query = m.opt(cx, "query", decode::non_empty_string);
    let cookie = m.opt(cx, "cookie", decode::non_empty_string);
    let keys = m
        .opt(cx, "keys", |cx, n, p| {
            decode::seq(cx, n, p, |cx, n, p| {
                let mut r = MapReader::new(cx, n, p)?;
                let name = r.req(cx, "name", decode::non_empty_string);
                let sha256 = r.req(cx, "sha256", |cx, n, p| {
                    let s = decode::non_empty_string(cx, n, p)?;
                    if !crate::keys::is_sha256_hex(&s) {
                        cx.error(&n.origin, p, "expected the key's SHA-256 in hex (64 digits): `printf %s KEY | sha256sum`");
                        return None;
                    }
                    Some(s.to_ascii_lowercase())
                });
                let tier = r.opt(cx, "tier", decode::non_empty_string);
                r.finish_with(cx, &["name", "sha256", "tier"]);
                Some(InlineKey { sha256: sha256?, name: name?, tier })
            })
        })
        .unwrap_or_default();
    let file = m.opt(cx, "file", path_in(base));
    m.finish_with(cx, &["header", "query", "cookie", "keys", "file"]);
    let header = if header.is_none() && query.is_none() && cookie.is_none() { Some(http::HeaderName::from_static("x-api-key")) } else { header };
    if keys.is_empty() && file.is_none() {
        cx.error(&n.origin, p, "no keys: give `keys` or `file`");
    }
    Some(ApiKeySettings { header, query, cookie, keys, file })
}

fn decode_route(cx: &mut Ctx, n: &Node, p: &str) -> Option<RoutePolicy> {
    let mut m = MapReader::new(cx, n, p)?;
    let prefix = m.req(cx, "prefix", prefix);
    let require = m.opt(cx, "require", require);
    let scopes = m.opt(cx, "scopes", strings).unwrap_or_default();
    m.finish_with(cx, &["prefix", "require", "scopes"]);
    Some(RoutePolicy { prefix: prefix?, require, scopes })
}

fn decode_deny(cx: &mut Ctx, n: &Node, p: &str, base: &Path) -> Option<(Vec<DenyEntry>, Option<PathBuf>)> {
    let mut m = MapReader::new(cx, n, p)?;
    let entries = m
        .opt(cx, "entries", |cx, n, p| {
            decode::seq(cx, n, p, |cx, n, p| {
                let s = decode::non_empty_string(cx, n, p)?;
                match DenyEntry::parse(&s) {
                    Ok(e) => Some(e),
                    Err(e) => {
                        cx.error(&n.origin, p, e.to_string());
                        None
                    }
                }
            })
        })
        .unwrap_or_default();
    let file = m.opt(cx, "file", path_in(base));
    m.finish_with(cx, &["entries", "file"]);
    Some((entries, file))
}

fn decode_limit(cx: &mut Ctx, n: &Node, p: &str, i: usize) -> Option<LimitSettings> {
    let mut m = MapReader::new(cx, n, p)?;
    let name = m.opt(cx, "name", decode::non_empty_string).unwrap_or_else(|| format!("limit{i}"));
    let key = m.opt(cx, "key", |cx, n, p| {
        decode::one_or_seq(cx, n, p, |cx, n, p| {
            let s = decode::non_empty_string(cx, n, p)?;
            match s.as_str() {
                "client_ip" => Some(KeyPart::ClientIp),
                "api_key" => Some(KeyPart::ApiKey),
                "route" => Some(KeyPart::Route),
                s if s.starts_with("jwt:") && s.len() > 4 => Some(KeyPart::Jwt(s[4..].to_string())),
                _ => {
                    cx.error(&n.origin, p, "expected client_ip, api_key, jwt:CLAIM or route");
                    None
                }
            }
        })
    });
    let rate = m.req(cx, "rate", rate);
    let burst = m.opt(cx, "burst", |cx, n, p| decode::uint(cx, n, p, 1, 1_000_000_000));
    let prefix = m.opt(cx, "prefix", prefix);
    let tier = m.opt(cx, "tier", decode::non_empty_string);
    m.finish_with(cx, &["name", "key", "rate", "burst", "prefix", "tier"]);
    let key = key.unwrap_or_else(|| vec![KeyPart::ClientIp]);
    if key.is_empty() {
        cx.error(&n.origin, p, "`key` must not be empty");
    }
    if name.contains(['"', '\\', ',', ';']) || !name.bytes().all(|b| (0x21..0x7f).contains(&b)) {
        cx.error(&n.origin, p, "`name` must be printable ASCII without quotes, commas or semicolons");
    }
    Some(LimitSettings { name, key, rate: rate?, burst, prefix, tier })
}

fn decode_redis(cx: &mut Ctx, n: &Node, p: &str) -> Option<RedisSettings> {
    let mut m = MapReader::new(cx, n, p)?;
    let fail_open = m.opt(cx, "on_error", |cx, n, p| decode::one_of(cx, n, p, &["open", "closed"]).map(|v| v == "open")).unwrap_or(true);
    let sync_interval = m.opt(cx, "sync_interval", positive_duration).unwrap_or(Duration::from_millis(50));
    let timeout = m.opt(cx, "timeout", positive_duration).unwrap_or(Duration::from_millis(500));
    let prefix = m.opt(cx, "prefix", decode::non_empty_string).unwrap_or_else(|| "palisade".into());
    m.finish_with(cx, &["on_error", "sync_interval", "timeout", "prefix"]);
    Some(RedisSettings { fail_open, sync_interval, timeout, prefix })
}

#[cfg(test)]
pub(crate) mod tests;
