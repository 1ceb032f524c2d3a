//! The `access` pipeline stage. On each request head, in this order:
//!
//! 1. IP deny list, then allowlist mode (403 `access.ip_denied` / `access.ip_not_allowed`);
//! 2. flood protection: an automatic per-IP limit whose violation bans the address for a while
//!    (429 `access.flood_banned`);
//! 3. credentials: an API key and a JWT are verified whenever presented (a bad one is a 401 even
//!    where none is required), checked against the denylist, then the app's or route's `require`
//!    policy and the route's scopes are applied; the identity goes into the request
//!    [`Context`], verified claims become upstream headers (incoming headers of those names are
//!    always stripped);
//! 4. rate limits (429 `access.rate_limited` with `Retry-After`, `RateLimit-Policy` and
//!    `RateLimit`).
//!
//! The stage never does I/O: time comes from a [`Clock`]; files are read by the caller
//! ([`load_files`]) and swapped in with [`AccessStage::apply_files`]; the JWKS URL keys, the
//! shared-store health and the sync of rate-limit counts are driven by the binary through
//! [`AccessStage::jwks`], [`AccessStage::shared`] and [`AccessStage::table`].

use std::collections::HashSet;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use arc_swap::ArcSwap;
use http::{HeaderName, HeaderValue};
use palisade_config::read::ReadError;
use palisade_core::{Context, CounterSample, Mode, Reason, RequestView, Stage, Verdict};

use crate::encoding::sha256_hex;
use crate::ipset::{self, IpSet};
use crate::jwt::{self, AlgSet, JwtError, KeySet, Material, Verified};
use crate::keys::{self, ApiKey, ApiKeys, DenyEntry, Denylist};
use crate::ratelimit::{Decision, Gcra, Table};
use crate::settings::{KeyPart, Require, Settings, Store, TokenSource};

/// Where the stage gets the time: nanoseconds since the Unix epoch (wall clock, so that
/// instances sharing limits through a store agree on it). Tests use [`ManualClock`].
pub trait Clock: Send + Sync {
    fn now_nanos(&self) -> u64;
}

/// A clock that only moves when told to.
#[derive(Debug, Default)]
pub struct ManualClock(pub AtomicU64);

impl ManualClock {
    pub fn new(nanos: u64) -> Arc<ManualClock> {
        Arc::new(ManualClock(AtomicU64::new(nanos)))
    }
    pub fn advance(&self, nanos: u64) {
        self.0.fetch_add(nanos, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_nanos(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
}

/// Reason codes of this stage.
pub mod code {
    pub const IP_DENIED: &str = "access.ip_denied";
    pub const IP_NOT_ALLOWED: &str = "access.ip_not_allowed";
    pub const FLOOD_BANNED: &str = "access.flood_banned";
    pub const TOKEN_MISSING: &str = "access.token_missing";
    pub const API_KEY_MISSING: &str = "access.api_key_missing";
    pub const API_KEY_INVALID: &str = "access.api_key_invalid";
    pub const CREDENTIALS_MISSING: &str = "access.credentials_missing";
    pub const REVOKED: &str = "access.revoked";
    pub const SCOPE_MISSING: &str = "access.scope_missing";
    pub const RATE_LIMITED: &str = "access.rate_limited";
    pub const LIMIT_UNAVAILABLE: &str = "access.rate_limit_unavailable";
}

/// What the files of a section hold, read and parsed by [`load_files`].
#[derive(Debug, Default)]
pub struct FileParts {
    pub ip_allow: Option<IpSet>,
    pub ip_deny: IpSet,
    pub static_keys: KeySet,
    pub api_keys: ApiKeys,
    pub deny: HashSet<DenyEntry>,
}

/// Build everything that comes from the configuration and its files. `read` reads one file
/// (the binary passes `std::fs::read_to_string`); errors name the file.
pub fn load_files(s: &Settings, read: &dyn Fn(&Path) -> Result<String, ReadError>) -> Result<FileParts, Vec<crate::Error>> {
    let read = |f: &Path| read(f).map_err(crate::error::read_error);
    let mut errors = Vec::new();
    let mut parts = FileParts::default();
    let load_ips = |files: &[std::path::PathBuf], inline: &[ipnet::IpNet], errors: &mut Vec<crate::Error>| {
        let mut nets = inline.to_vec();
        for f in files {
            match read(f).and_then(|t| ipset::parse_list(&t)) {
                Ok(n) => nets.extend(n),
                Err(e) => errors.push(e.context(f.display())),
            }
        }
        IpSet::new(&nets)
    };
    parts.ip_deny = load_ips(&s.ip_deny_files, &s.ip_deny, &mut errors);
    if !s.ip_allow.is_empty() || !s.ip_allow_files.is_empty() {
        parts.ip_allow = Some(load_ips(&s.ip_allow_files, &s.ip_allow, &mut errors));
    }
    if let Some(j) = &s.jwt {
        if let Some(secret) = &j.secret {
            parts.static_keys.keys.push(jwt::Key { kid: None, alg: None, material: Material::hmac(secret.as_bytes()) });
        }
        for f in &j.public_key_files {
            match read(f).and_then(|t| jwt::keys_from_pem(&t, None)) {
                Ok(k) => parts.static_keys.extend(k),
                Err(e) => errors.push(e.context(f.display())),
            }
        }
        if let Some(f) = &j.jwks_file {
            match read(f).and_then(|t| jwt::keys_from_jwks(&t)) {
                Ok((k, _skipped)) => parts.static_keys.extend(k),
                Err(e) => errors.push(e.context(f.display())),
            }
        }
    }
    if let Some(a) = &s.api_keys {
        for k in &a.keys {
            parts.api_keys.insert(&k.sha256, ApiKey { name: k.name.clone(), tier: k.tier.clone() });
        }
        if let Some(f) = &a.file {
            match read(f).and_then(|t| keys::parse_api_keys(&t)) {
                Ok(k) => parts.api_keys.extend(k),
                Err(e) => errors.push(e.context(f.display())),
            }
        }
    }
    parts.deny.extend(s.deny.iter().cloned());
    if let Some(f) = &s.deny_file {
        match read(f).and_then(|t| keys::parse_denylist(&t)) {
            Ok(d) => parts.deny.extend(d),
            Err(e) => errors.push(e.context(f.display())),
        }
    }
    if errors.is_empty() {
        Ok(parts)
    } else {
        Err(errors)
    }
}

/// Keys fetched from a JWKS URL by the binary, and the stage's request for a refetch when a
/// token names an unknown `kid`.
#[derive(Debug, Default)]
pub struct Jwks {
    keys: ArcSwap<KeySet>,
    want_refetch: AtomicBool,
    /// Successful fetches and failed ones (the last good set stays).
    pub fetched: AtomicU64,
    pub failed: AtomicU64,
}

impl Jwks {
    pub fn replace(&self, keys: KeySet) {
        self.keys.store(Arc::new(keys));
        self.fetched.fetch_add(1, Ordering::AcqRel);
    }
    /// True (once) when a token named a `kid` none of the keys has since the last call.
    pub fn take_refetch_request(&self) -> bool {
        self.want_refetch.swap(false, Ordering::AcqRel)
    }
    pub fn keys(&self) -> Arc<KeySet> {
        self.keys.load_full()
    }
}

/// Classes of JWT failures counted in [`Counters::jwt_failures`] (the reason codes without
/// `access.jwt_`, plus `revoked` and `missing`).
pub const JWT_FAILURE_CLASSES: [&str; 7] = ["invalid", "expired", "not_yet_valid", "claims", "key_unknown", "revoked", "missing"];

fn jwt_class(e: &JwtError) -> usize {
    match e.code() {
        "access.jwt_expired" => 1,
        "access.jwt_not_yet_valid" => 2,
        "access.jwt_claims" => 3,
        "access.jwt_key_unknown" => 4,
        _ => 0,
    }
}

/// Counters of the stage's decisions, exported as metrics ([`Stage::counters`]): plain relaxed
/// atomics, bumped only when a request is refused or the shared store is down.
#[derive(Debug, Default)]
pub struct Counters {
    /// Bans the flood protection imposed.
    pub flood_bans: AtomicU64,
    /// Requests refused by the flood protection (the one that triggered a ban and those during it).
    pub flood_refused: AtomicU64,
    /// Requests that met a shared limit while the store was unreachable and went on with the
    /// local tier only (`on_error: open`).
    pub fail_open: AtomicU64,
    /// JWT failures by [`JWT_FAILURE_CLASSES`].
    pub jwt_failures: [AtomicU64; 7],
}

/// State of the shared rate-limit store, set by the binary's sync task.
#[derive(Debug)]
pub struct SharedState {
    healthy: AtomicBool,
    pub fail_open: bool,
    /// Requests refused because the store was unreachable (fail-closed).
    pub refused_unavailable: AtomicU64,
    /// Sync batches and connection attempts that failed.
    pub sync_errors: AtomicU64,
    pub syncs: AtomicU64,
}

impl SharedState {
    pub fn set_healthy(&self, ok: bool) {
        self.healthy.store(ok, Ordering::Release);
    }
    pub fn healthy(&self) -> bool {
        self.healthy.load(Ordering::Acquire)
    }
}

/// Recently verified tokens, so that a client reusing its token (the usual case) costs a hash
/// lookup and the claim checks instead of a signature verification. Entries are the exact token
/// text (no hash collisions possible), tied to the generation of the key sets they were verified
/// with (a key reload or JWKS refresh invalidates them), bounded in number and token size.
/// Denylist, `require`, scopes and time claims are still checked on every request.
type CacheMap = std::collections::HashMap<Box<str>, ((u64, u64), Arc<Verified>), TailHash>;

struct TokenCache {
    shards: Box<[std::sync::Mutex<CacheMap>]>,
    hasher: TailHash,
}

/// The cache's hash: a verified token ends with its signature (a MAC or a signature: as good
/// as random), so its last 16 bytes, mixed with a per-process random seed, make a good hash for
/// a fraction of SipHash's cost over the whole token. Only verified tokens are inserted (an
/// attacker cannot choose them) and shards are bounded, so collisions cannot be forced into
/// long probe chains; keys are compared in full, so a collision is never a wrong answer.
#[derive(Clone)]
struct TailHash(u64);

impl Default for TailHash {
    fn default() -> TailHash {
        use std::hash::BuildHasher;
        TailHash(std::hash::RandomState::new().hash_one(0x5eed_u64) | 1)
    }
}

struct TailHasher(u64);

impl std::hash::Hasher for TailHasher {
    fn write(&mut self, bytes: &[u8]) {
        let tail = &bytes[bytes.len().saturating_sub(16)..];
        let mut a = [0u8; 8];
        let mut b = [0u8; 8];
        let split = tail.len().min(8);
        a[..split].copy_from_slice(&tail[..split]);
        b[..tail.len() - split].copy_from_slice(&tail[split..]);
        let x = self.0 ^ u64::from_le_bytes(a) ^ (bytes.len() as u64).rotate_left(32);
        self.0 = (x.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ u64::from_le_bytes(b)).rotate_left(29).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    }

    fn write_u8(&mut self, i: u8) {
        self.0 = (self.0 ^ u64::from(i)).wrapping_mul(0x94D0_49BB_1331_11EB);
    }

    fn finish(&self) -> u64 {
        let x = self.0;
        x ^ (x >> 31)
    }
}

impl std::hash::BuildHasher for TailHash {
    type Hasher = TailHasher;
    fn build_hasher(&self) -> TailHasher {
        TailHasher(self.0)
    }
}

const CACHE_SHARDS: usize = 8;
const CACHE_PER_SHARD: usize = 512;
/// Longer tokens are verified every time (bounds the cache's memory to a few MiB).
const CACHE_MAX_TOKEN: usize = 2048;

impl TokenCache {
    fn new() -> TokenCache {
        let hasher = TailHash::default();
        TokenCache { shards: (0..CACHE_SHARDS).map(|_| std::sync::Mutex::new(CacheMap::with_hasher(hasher.clone()))).collect(), hasher }
    }

    fn shard(&self, token: &str) -> std::sync::MutexGuard<'_, CacheMap> {
        use std::hash::BuildHasher;
        // The high bits pick the shard: the map inside uses the low ones.
        let i = ((self.hasher.hash_one(token) >> 40) as usize) % CACHE_SHARDS;
        self.shards[i].lock().unwrap_or_else(|p| p.into_inner())
    }

    fn get(&self, token: &str, gen: (u64, u64)) -> Option<Arc<Verified>> {
        if token.len() > CACHE_MAX_TOKEN {
            return None;
        }
        self.shard(token).get(token).filter(|(g, _)| *g == gen).map(|(_, v)| v.clone())
    }

    fn put(&self, token: &str, gen: (u64, u64), v: Arc<Verified>) {
        if token.len() > CACHE_MAX_TOKEN {
            return;
        }
        let mut m = self.shard(token);
        if m.len() >= CACHE_PER_SHARD {
            m.clear();
        }
        m.insert(token.into(), (gen, v));
    }
}

struct IpLists {
    allow: Option<IpSet>,
    deny: IpSet,
}

struct JwtCfg {
    algs: AlgSet,
    rules: jwt::ClaimRules,
    token: TokenSource,
    forward: Vec<(String, HeaderName)>,
    max_len: usize,
    realm: String,
    keys: ArcSwap<KeySet>,
    url: Option<Arc<Jwks>>,
}

struct ApiCfg {
    header: Option<HeaderName>,
    query: Option<String>,
    cookie: Option<String>,
    keys: ArcSwap<ApiKeys>,
}

struct Limit {
    name: String,
    key: Vec<KeyPart>,
    gcra: Gcra,
    prefix: Option<String>,
    tier: Option<String>,
    shared: bool,
    policy: HeaderValue,
    /// Requests this limit refused.
    hits: AtomicU64,
}

/// The access stage of one app.
pub struct AccessStage {
    app: String,
    mode: Mode,
    require: Require,
    routes: Vec<crate::settings::RoutePolicy>,
    ip: ArcSwap<IpLists>,
    jwt: Option<JwtCfg>,
    api: Option<ApiCfg>,
    deny: Arc<Denylist>,
    limits: Vec<Limit>,
    headers_always: bool,
    flood: Option<(Gcra, u64)>,
    table: Arc<Table>,
    shared: Option<Arc<SharedState>>,
    key_prefix: String,
    clock: Arc<dyn Clock>,
    /// Bumped whenever the configured keys are replaced (token cache validity).
    key_gen: AtomicU64,
    cache: TokenCache,
    counters: Counters,
}

const RETRY_AFTER: HeaderName = http::header::RETRY_AFTER;
const RATELIMIT: HeaderName = HeaderName::from_static("ratelimit");
const RATELIMIT_POLICY: HeaderName = HeaderName::from_static("ratelimit-policy");

impl AccessStage {
    /// Build the stage of app `app` from its settings and what its files hold.
    pub fn new(app: &str, s: &Settings, files: FileParts, clock: Arc<dyn Clock>) -> AccessStage {
        let shared = match &s.store {
            Store::Redis(_) if !s.rate_limits.is_empty() => Some(Arc::new(SharedState {
                healthy: AtomicBool::new(false),
                fail_open: s.redis.fail_open,
                refused_unavailable: AtomicU64::new(0),
                sync_errors: AtomicU64::new(0),
                syncs: AtomicU64::new(0),
            })),
            _ => None,
        };
        let jwt = s.jwt.as_ref().map(|j| JwtCfg {
            algs: AlgSet::of(&j.algorithms),
            rules: j.rules.clone(),
            token: j.token.clone(),
            forward: j.forward.clone(),
            max_len: j.max_token_size,
            realm: j.realm.clone(),
            keys: ArcSwap::from_pointee(files.static_keys),
            url: j.jwks_url.as_ref().map(|_| Arc::new(Jwks::default())),
        });
        let api = s.api_keys.as_ref().map(|a| ApiCfg {
            header: a.header.clone(),
            query: a.query.clone(),
            cookie: a.cookie.clone(),
            keys: ArcSwap::from_pointee(files.api_keys),
        });
        let limits = s
            .rate_limits
            .iter()
            .map(|l| {
                let gcra = Gcra::new(l.rate, l.burst);
                let window = (l.rate.period_ns / 1_000_000_000).max(1);
                let policy = HeaderValue::from_str(&format!("\"{}\";q={};w={}", l.name, l.rate.count, window)).unwrap_or(HeaderValue::from_static("\"limit\""));
                Limit {
                    name: l.name.clone(),
                    key: l.key.clone(),
                    gcra,
                    prefix: l.prefix.clone(),
                    tier: l.tier.clone(),
                    shared: shared.is_some(),
                    policy,
                    hits: AtomicU64::new(0),
                }
            })
            .collect();
        AccessStage {
            app: app.to_string(),
            mode: s.mode,
            require: s.require,
            routes: s.routes.clone(),
            ip: ArcSwap::from_pointee(IpLists { allow: files.ip_allow, deny: files.ip_deny }),
            jwt,
            api,
            deny: Denylist::new(files.deny),
            limits,
            headers_always: s.rate_limit_headers_always,
            flood: s.flood.as_ref().map(|f| (Gcra::new(f.rate, f.burst), u64::try_from(f.ban.as_nanos()).unwrap_or(u64::MAX))),
            table: Arc::new(Table::new(s.max_keys)),
            shared,
            key_prefix: format!("{}:{}", s.redis.prefix, app),
            clock,
            key_gen: AtomicU64::new(0),
            cache: TokenCache::new(),
            counters: Counters::default(),
        }
    }

    /// Swap in what the files hold now (a reload after a file changed). Run-time denylist
    /// entries are kept.
    pub fn apply_files(&self, f: FileParts) {
        self.ip.store(Arc::new(IpLists { allow: f.ip_allow, deny: f.ip_deny }));
        if let Some(j) = &self.jwt {
            j.keys.store(Arc::new(f.static_keys));
            self.key_gen.fetch_add(1, Ordering::AcqRel);
        }
        if let Some(a) = &self.api {
            a.keys.store(Arc::new(f.api_keys));
        }
        self.deny.replace_file_entries(f.deny);
    }

    /// The keys of the JWKS URL, when one is configured.
    pub fn jwks(&self) -> Option<&Arc<Jwks>> {
        self.jwt.as_ref().and_then(|j| j.url.as_ref())
    }

    /// The shared-store state, when limits are shared.
    pub fn shared(&self) -> Option<&Arc<SharedState>> {
        self.shared.as_ref()
    }

    /// The rate-limit key table (counters; drained by the shared-store sync).
    pub fn table(&self) -> &Arc<Table> {
        &self.table
    }

    /// The revocation list (the admin API adds and removes entries through it).
    pub fn denylist(&self) -> &Arc<Denylist> {
        &self.deny
    }

    pub fn app(&self) -> &str {
        &self.app
    }

    /// The stage's decision counters.
    pub fn stats(&self) -> &Counters {
        &self.counters
    }

    /// Requests refused by the limit called `name` (`None`: no such limit).
    pub fn limit_hits(&self, name: &str) -> Option<u64> {
        self.limits.iter().find(|l| l.name == name).map(|l| l.hits.load(Ordering::Relaxed))
    }

    fn jwt_failed(&self, class: usize) {
        self.counters.jwt_failures[class].fetch_add(1, Ordering::Relaxed);
    }

    fn refuse(&self, status: u16, reason: Reason) -> Verdict {
        match self.mode {
            Mode::Monitor => Verdict::monitor(reason),
            _ => Verdict::block_with_status(status, reason),
        }
    }

    fn unauthorized(&self, cx: &mut Context, reason: Reason, error: Option<&str>) -> Verdict {
        let realm = self.jwt.as_ref().map_or("api", |j| j.realm.as_str());
        let v = match error {
            Some(e) => format!("Bearer realm=\"{realm}\", error=\"{e}\""),
            None => format!("Bearer realm=\"{realm}\""),
        };
        if let Ok(v) = HeaderValue::from_str(&v) {
            cx.response_headers.push((http::header::WWW_AUTHENTICATE, v));
        }
        self.refuse(401, reason)
    }

    fn route_policy(&self, path: &str) -> Option<&crate::settings::RoutePolicy> {
        self.routes.iter().filter(|r| under(path, &r.prefix)).max_by_key(|r| r.prefix.len())
    }

    fn presented_api_key<'r>(&self, a: &ApiCfg, req: &'r RequestView<'_>) -> Option<std::borrow::Cow<'r, str>> {
        if let Some(h) = &a.header {
            if let Some(v) = req.headers.get(h).and_then(|v| v.to_str().ok()) {
                return Some(v.trim().into());
            }
        }
        if let (Some(name), Some(q)) = (&a.query, req.query) {
            for pair in q.split('&') {
                let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
                if k == name {
                    return Some(palisade_core::form_decode(v));
                }
            }
        }
        if let Some(c) = &a.cookie {
            return cookie(req.headers, c).map(Into::into);
        }
        None
    }

    fn presented_token<'r>(&self, j: &JwtCfg, req: &'r RequestView<'_>) -> Option<&'r str> {
        match &j.token {
            TokenSource::Bearer => {
                let v = req.headers.get(http::header::AUTHORIZATION)?.to_str().ok()?;
                let (scheme, rest) = v.split_once(' ')?;
                scheme.eq_ignore_ascii_case("bearer").then(|| rest.trim())
            }
            TokenSource::Header(h) => {
                let v = req.headers.get(h)?.to_str().ok()?.trim();
                Some(match v.split_once(' ') {
                    Some((s, rest)) if s.eq_ignore_ascii_case("bearer") => rest.trim(),
                    _ => v,
                })
            }
            TokenSource::Cookie(c) => cookie(req.headers, c),
        }
    }

    fn verify_token(&self, j: &JwtCfg, token: &str, now_secs: u64) -> Result<Arc<Verified>, JwtError> {
        let gen = (self.key_gen.load(Ordering::Acquire), j.url.as_ref().map_or(0, |u| u.fetched.load(Ordering::Acquire)));
        if let Some(v) = self.cache.get(token, gen) {
            v.check_time(j.rules.leeway, now_secs)?;
            return Ok(v);
        }
        let v = Arc::new(self.verify_uncached(j, token, now_secs)?);
        self.cache.put(token, gen, v.clone());
        Ok(v)
    }

    fn verify_uncached(&self, j: &JwtCfg, token: &str, now_secs: u64) -> Result<Verified, JwtError> {
        let keys = j.keys.load();
        let first = if keys.is_empty() { Err(JwtError::NoKey(jwt::Alg::HS256)) } else { jwt::verify(token, &keys, j.algs, &j.rules, now_secs, j.max_len) };
        match (&first, &j.url) {
            (Err(JwtError::UnknownKid | JwtError::NoKey(_)), Some(url)) => {
                let r = jwt::verify(token, &url.keys.load(), j.algs, &j.rules, now_secs, j.max_len);
                if matches!(r, Err(JwtError::UnknownKid)) || (matches!(r, Err(JwtError::NoKey(_))) && url.keys.load().is_empty()) {
                    url.want_refetch.store(true, Ordering::Release);
                }
                r
            }
            _ => first,
        }
    }

    fn limit_key(&self, l: &Limit, req: &RequestView<'_>, cx: &Context, claims: Option<&Verified>) -> String {
        use std::fmt::Write;
        let mut k = String::with_capacity(self.key_prefix.len() + l.name.len() + 48);
        let _ = write!(k, "{}:{}", self.key_prefix, l.name);
        for part in &l.key {
            k.push('|');
            match part {
                KeyPart::ClientIp => {
                    let _ = write!(k, "ip={}", req.client_ip);
                }
                KeyPart::ApiKey => match &cx.identity.api_key {
                    Some(name) => {
                        let _ = write!(k, "key={name}");
                    }
                    None => {
                        let _ = write!(k, "ip={}", req.client_ip);
                    }
                },
                KeyPart::Jwt(claim) => match claims.and_then(|v| v.claims.get(claim)).and_then(jwt::claim_header_value) {
                    Some(v) => {
                        let _ = write!(k, "{claim}={}", v.chars().take(256).collect::<String>());
                    }
                    None => {
                        let _ = write!(k, "ip={}", req.client_ip);
                    }
                },
                KeyPart::Route => {
                    let _ = write!(k, "{} {}", req.method, req.path);
                }
            }
        }
        k
    }

    fn rate_headers(cx: &mut Context, l: &Limit, d: &Decision, blocked: bool) {
        let secs = |ns: u64| ns.div_ceil(1_000_000_000);
        cx.response_headers.push((RATELIMIT_POLICY, l.policy.clone()));
        if let Ok(v) = HeaderValue::from_str(&format!("\"{}\";r={};t={}", l.name, d.remaining, secs(d.reset_ns))) {
            cx.response_headers.push((RATELIMIT, v));
        }
        if blocked {
            cx.response_headers.push((RETRY_AFTER, HeaderValue::from(secs(d.retry_after_ns).max(1))));
        }
    }
    /// The head's checks in order: IP lists, flood protection, credentials, rate limits. The
    /// first refusal is the verdict (`Err`).
    fn judge_head(&self, req: &RequestView<'_>, cx: &mut Context) -> Result<(), Verdict> {
        let now = self.clock.now_nanos();
        self.check_ip(req)?;
        self.check_flood(req, cx, now)?;
        let (tier, verified) = self.check_credentials(req, cx, now)?;
        self.check_limits(req, cx, now, tier, verified.as_deref())
    }

    /// IP lists: the denylist, then the allowlist when there is one.
    fn check_ip(&self, req: &RequestView<'_>) -> Result<(), Verdict> {
        let ip = req.client_ip;
        let lists = self.ip.load();
        if lists.deny.contains(ip) {
            return Err(self.refuse(403, Reason::new(code::IP_DENIED).detail("the client address is denied")));
        }
        if let Some(allow) = &lists.allow {
            if !allow.contains(ip) {
                return Err(self.refuse(403, Reason::new(code::IP_NOT_ALLOWED).detail("the client address is not in the allowlist")));
            }
        }
        Ok(())
    }

    /// Flood protection: an address over the flood rate is banned for a while.
    fn check_flood(&self, req: &RequestView<'_>, cx: &mut Context, now: u64) -> Result<(), Verdict> {
        let Some((g, ban)) = &self.flood else { return Ok(()) };
        let key = format!("{}:flood|{}", self.key_prefix, req.client_ip);
        let refused = match self.table.banned(&key, now) {
            Some(left) => Some(left),
            None => {
                let d = self.table.hit(&key, g, now, false);
                if d.allowed {
                    None
                } else {
                    self.table.ban(&key, now.saturating_add(*ban), now);
                    self.counters.flood_bans.fetch_add(1, Ordering::Relaxed);
                    Some(*ban)
                }
            }
        };
        if let Some(left) = refused {
            self.counters.flood_refused.fetch_add(1, Ordering::Relaxed);
            cx.response_headers.push((RETRY_AFTER, HeaderValue::from(left.div_ceil(1_000_000_000).max(1))));
            return Err(self.refuse(429, Reason::new(code::FLOOD_BANNED).detail("too many requests from this address: temporarily banned")));
        }
        Ok(())
    }

    /// Credentials: the API key and the bearer token presented, what the route requires,
    /// the identity and forwarded claims, the route's scopes. Gives the key's tier and the
    /// verified token.
    fn check_credentials(&self, req: &RequestView<'_>, cx: &mut Context, now: u64) -> Result<(Option<String>, Option<Arc<Verified>>), Verdict> {
        if let Some(j) = &self.jwt {
            cx.strip_upstream.extend(j.forward.iter().map(|(_, h)| h.clone()));
        }
        let key = self.check_api_key(req, cx)?;
        let verified = self.check_token(req, cx, now)?;
        let policy = self.route_policy(req.path);
        let require = policy.and_then(|p| p.require).unwrap_or(self.require);
        let (jwt_ok, key_ok) = (verified.is_some(), key.is_some());
        match require {
            Require::None => {}
            Require::Jwt if !jwt_ok => {
                self.jwt_failed(6);
                return Err(self.unauthorized(cx, Reason::new(code::TOKEN_MISSING).detail("a bearer token is required"), None));
            }
            Require::ApiKey if !key_ok => return Err(self.refuse(401, Reason::new(code::API_KEY_MISSING).detail("an API key is required"))),
            Require::Any if !jwt_ok && !key_ok => {
                if self.jwt.is_some() {
                    return Err(self.unauthorized(cx, Reason::new(code::CREDENTIALS_MISSING).detail("a bearer token or an API key is required"), None));
                }
                return Err(self.refuse(401, Reason::new(code::CREDENTIALS_MISSING).detail("credentials are required")));
            }
            _ => {}
        }
        if let Some(v) = &verified {
            self.record_token(v, cx);
        }
        if let Some(p) = policy {
            if !p.scopes.is_empty() {
                let missing: Vec<&str> = p.scopes.iter().filter(|s| !cx.identity.scopes.iter().any(|g| g == *s)).map(String::as_str).collect();
                if !missing.is_empty() {
                    let v = format!("Bearer error=\"insufficient_scope\", scope=\"{}\"", p.scopes.join(" "));
                    if let Ok(v) = HeaderValue::from_str(&v) {
                        cx.response_headers.push((http::header::WWW_AUTHENTICATE, v));
                    }
                    return Err(self.refuse(403, Reason::new(code::SCOPE_MISSING).detail(format!("missing scope: {}", missing.join(" ")))));
                }
            }
        }
        Ok((key.flatten(), verified))
    }

    /// The API key presented, if any: known and not revoked. `Some(tier)` when there is one.
    fn check_api_key(&self, req: &RequestView<'_>, cx: &mut Context) -> Result<Option<Option<String>>, Verdict> {
        let Some(a) = &self.api else { return Ok(None) };
        let Some(presented) = self.presented_api_key(a, req) else { return Ok(None) };
        let keys = a.keys.load();
        let Some(k) = keys.lookup(&presented) else {
            return Err(self.refuse(401, Reason::new(code::API_KEY_INVALID).detail("unknown API key")));
        };
        if !self.deny.is_empty() && self.deny.contains(&DenyEntry::Key(sha256_hex(presented.as_bytes()))) {
            return Err(self.refuse(401, Reason::new(code::REVOKED).detail("the API key has been revoked")));
        }
        cx.identity.api_key = Some(k.name.clone());
        Ok(Some(k.tier.clone()))
    }

    /// The bearer token presented, if any: verified and not revoked.
    fn check_token(&self, req: &RequestView<'_>, cx: &mut Context, now: u64) -> Result<Option<Arc<Verified>>, Verdict> {
        let Some(j) = &self.jwt else { return Ok(None) };
        let Some(token) = self.presented_token(j, req) else { return Ok(None) };
        match self.verify_token(j, token, now / 1_000_000_000) {
            Ok(v) => {
                if !self.deny.is_empty() {
                    let jti_revoked = v.claim_str("jti").is_some_and(|jti| self.deny.contains(&DenyEntry::Jti(jti.to_string())));
                    let hash_revoked = self.deny.has_token_entries() && self.deny.contains(&DenyEntry::Token(sha256_hex(token.as_bytes())));
                    if jti_revoked || hash_revoked {
                        self.jwt_failed(5);
                        return Err(self.unauthorized(cx, Reason::new(code::REVOKED).detail("the token has been revoked"), Some("invalid_token")));
                    }
                }
                Ok(Some(v))
            }
            Err(e) => {
                self.jwt_failed(jwt_class(&e));
                Err(self.unauthorized(cx, Reason::new(e.code()).detail(e.to_string()), Some("invalid_token")))
            }
        }
    }

    /// The identity a verified token gives, and its claims forwarded upstream as headers.
    fn record_token(&self, v: &Verified, cx: &mut Context) {
        cx.identity.jwt_verified = true;
        cx.identity.subject = v.claim_str("sub").map(str::to_string);
        cx.identity.scopes = v.scopes().to_vec();
        if let Some(j) = &self.jwt {
            for (claim, header) in &j.forward {
                if let Some(val) = v.claims.get(claim).and_then(jwt::claim_header_value) {
                    if let Ok(hv) = HeaderValue::from_str(&val) {
                        cx.upstream_headers.push((header.clone(), hv));
                    }
                }
            }
        }
    }

    /// Rate limits: every limit that applies to the path and tier is counted; the first
    /// exceeded refuses. With `headers_always`, the tightest one's headers are sent.
    fn check_limits(&self, req: &RequestView<'_>, cx: &mut Context, now: u64, tier: Option<String>, verified: Option<&Verified>) -> Result<(), Verdict> {
        if self.limits.is_empty() {
            return Ok(());
        }
        let shared_ok = self.shared.as_ref().map(|s| s.healthy());
        let mut tightest: Option<(usize, Decision)> = None;
        let mut counted_open = false;
        for (i, l) in self.limits.iter().enumerate() {
            if l.prefix.as_deref().is_some_and(|p| !under(req.path, p)) {
                continue;
            }
            if l.tier.is_some() && l.tier != tier {
                continue;
            }
            if l.shared && shared_ok == Some(false) {
                let s = self.shared.as_ref().expect("shared state of a shared limit");
                if !s.fail_open {
                    s.refused_unavailable.fetch_add(1, Ordering::Relaxed);
                    cx.response_headers.push((RETRY_AFTER, HeaderValue::from_static("1")));
                    return Err(self.refuse(503, Reason::new(code::LIMIT_UNAVAILABLE).detail("the shared rate-limit store is unreachable")));
                }
                if !counted_open {
                    counted_open = true;
                    self.counters.fail_open.fetch_add(1, Ordering::Relaxed);
                }
            }
            let key = self.limit_key(l, req, cx, verified);
            let d = self.table.hit(&key, &l.gcra, now, l.shared && shared_ok == Some(true));
            if !d.allowed {
                l.hits.fetch_add(1, Ordering::Relaxed);
                Self::rate_headers(cx, l, &d, true);
                return Err(self.refuse(429, Reason::new(code::RATE_LIMITED).detail(format!("rate limit `{}` exceeded", l.name))));
            }
            if self.headers_always && tightest.is_none_or(|(_, t)| d.remaining < t.remaining) {
                tightest = Some((i, d));
            }
        }
        if let Some((i, d)) = tightest {
            Self::rate_headers(cx, &self.limits[i], &d, false);
        }
        Ok(())
    }
}

/// The canonical `path` is `prefix` or under it at a segment boundary.
fn under(path: &str, prefix: &str) -> bool {
    palisade_core::path::under_prefix(path, prefix)
}

fn cookie<'h>(headers: &'h http::HeaderMap, name: &str) -> Option<&'h str> {
    for v in headers.get_all(http::header::COOKIE) {
        let Ok(s) = v.to_str() else { continue };
        for pair in s.split(';') {
            if let Some((k, v)) = pair.trim().split_once('=') {
                if k == name {
                    return Some(v.trim().trim_matches('"'));
                }
            }
        }
    }
    None
}

impl Stage for AccessStage {
    fn name(&self) -> &'static str {
        "access"
    }

    fn counters(&self) -> Vec<CounterSample> {
        let n = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let c = &self.counters;
        let mut out = Vec::new();
        for l in &self.limits {
            out.push(CounterSample {
                name: "palisade_access_rate_limited_total",
                help: "Requests refused (429) by a rate limit, by app and limit.",
                labels: vec![("limit", l.name.clone())],
                value: n(&l.hits),
            });
        }
        if self.flood.is_some() {
            out.push(CounterSample {
                name: "palisade_access_flood_bans_total",
                help: "Temporary bans imposed by the flood protection.",
                labels: vec![],
                value: n(&c.flood_bans),
            });
            out.push(CounterSample {
                name: "palisade_access_flood_refused_total",
                help: "Requests refused by the flood protection (banned clients).",
                labels: vec![],
                value: n(&c.flood_refused),
            });
        }
        if let Some(s) = &self.shared {
            let decisions =
                "Requests that met a shared limit while the rate-limit store was unreachable, by decision (fail_open: local tier only; fail_closed: refused).";
            out.push(CounterSample {
                name: "palisade_access_store_decisions_total",
                help: decisions,
                labels: vec![("decision", "fail_open".into())],
                value: n(&c.fail_open),
            });
            out.push(CounterSample {
                name: "palisade_access_store_decisions_total",
                help: decisions,
                labels: vec![("decision", "fail_closed".into())],
                value: n(&s.refused_unavailable),
            });
            out.push(CounterSample {
                name: "palisade_access_store_errors_total",
                help: "Failed syncs and connection attempts to the shared rate-limit store (Redis).",
                labels: vec![],
                value: n(&s.sync_errors),
            });
            out.push(CounterSample {
                name: "palisade_access_store_syncs_total",
                help: "Successful syncs with the shared rate-limit store.",
                labels: vec![],
                value: n(&s.syncs),
            });
        }
        if self.jwt.is_some() {
            for (i, class) in JWT_FAILURE_CLASSES.iter().enumerate() {
                out.push(CounterSample {
                    name: "palisade_access_jwt_failures_total",
                    help: "Requests refused for their JWT, by reason class.",
                    labels: vec![("reason", (*class).into())],
                    value: n(&c.jwt_failures[i]),
                });
            }
        }
        if let Some(j) = self.jwt.as_ref().and_then(|j| j.url.as_ref()) {
            let help = "JWKS URL fetches by result (a failure keeps the last good key set).";
            out.push(CounterSample { name: "palisade_access_jwks_refresh_total", help, labels: vec![("result", "ok".into())], value: n(&j.fetched) });
            out.push(CounterSample { name: "palisade_access_jwks_refresh_total", help, labels: vec![("result", "error".into())], value: n(&j.failed) });
        }
        out
    }

    fn check_head(&self, req: &RequestView<'_>, cx: &mut Context) -> Verdict {
        self.judge_head(req, cx).err().unwrap_or(Verdict::Allow)
    }
}

#[cfg(test)]
mod tests;
