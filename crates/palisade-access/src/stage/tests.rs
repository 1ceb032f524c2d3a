use std::collections::HashMap;
use std::net::IpAddr;
use std::path::PathBuf;

use http::{HeaderMap, Method};
use serde_json::json;

use super::*;
use crate::jwt::Alg;
use crate::testing::TestKey;

const NOW: u64 = 1_800_000_000 * 1_000_000_000;
const SECRET: &[u8] = b"a-secret-of-enough-length-123456";

struct Fixture {
    stage: AccessStage,
    clock: Arc<ManualClock>,
}

fn build(yaml: &str, files: &[(&str, &str)]) -> Fixture {
    let s = crate::settings::tests::decode_str(yaml).unwrap_or_else(|e| panic!("{e:?}"));
    let files: HashMap<PathBuf, String> = files.iter().map(|(p, t)| (PathBuf::from("/etc/palisade").join(p), t.to_string())).collect();
    let read = |p: &Path| files.get(p).cloned().ok_or_else(|| palisade_config::read::ReadError::Io(std::io::ErrorKind::NotFound.into()));
    let parts = load_files(&s, &read).unwrap_or_else(|e| panic!("{e:?}"));
    let clock = ManualClock::new(NOW);
    Fixture { stage: AccessStage::new("api", &s, parts, clock.clone()), clock }
}

struct Req {
    ip: IpAddr,
    path: &'static str,
    query: Option<&'static str>,
    headers: HeaderMap,
}

fn req(ip: &str, path: &'static str) -> Req {
    Req { ip: ip.parse().unwrap(), path, query: None, headers: HeaderMap::new() }
}

impl Req {
    fn header(mut self, k: &'static str, v: &str) -> Req {
        self.headers.append(k, v.parse().unwrap());
        self
    }
    fn bearer(self, t: &str) -> Req {
        self.header("authorization", &format!("Bearer {t}"))
    }
    fn query(mut self, q: &'static str) -> Req {
        self.query = Some(q);
        self
    }
}

impl Fixture {
    fn run(&self, r: &Req) -> (Verdict, Context) {
        let view = RequestView {
            request_id: "r1",
            app: "api",
            client_ip: r.ip,
            method: &Method::GET,
            path: r.path,
            raw_path: r.path,
            query: r.query,
            headers: &r.headers,
            body: b"",
            body_truncated: false,
            tls: false,
        };
        let mut cx = Context::default();
        let v = self.stage.check_head(&view, &mut cx);
        (v, cx)
    }
}

fn code(v: &Verdict) -> Option<(u16, String)> {
    match v {
        Verdict::Block { status, reasons } => Some((status.unwrap_or(0), reasons[0].code.to_string())),
        Verdict::Monitor { reasons } => Some((0, reasons[0].code.to_string())),
        Verdict::Allow => None,
    }
}

fn header<'c>(cx: &'c Context, name: &str) -> Option<&'c str> {
    cx.response_headers.iter().find(|(n, _)| n == name).and_then(|(_, v)| v.to_str().ok())
}

fn hs_token(claims: serde_json::Value) -> String {
    TestKey::hmac(Alg::HS256, SECRET).token(&claims, None)
}

fn jwt_yaml() -> String {
    format!(
        "jwt:\n  algorithms: [HS256]\n  secret: {}\n  issuer: https://issuer.example\n  audience: api\n  forward: {{sub: X-User-Id, tenant: X-Tenant}}\n",
        std::str::from_utf8(SECRET).unwrap()
    )
}

fn good_claims() -> serde_json::Value {
    json!({"sub": "alice", "iss": "https://issuer.example", "aud": "api", "exp": NOW / 1_000_000_000 + 300, "tenant": "acme", "scope": "read", "jti": "t-1"})
}

#[test]
fn ip_deny_and_allowlist_from_config_and_files() {
    let f = build("ip_deny: [203.0.113.0/24]\nip_deny_file: deny.txt\n", &[("deny.txt", "# bad\n198.51.100.7\n2001:db8:bad::/48\n")]);
    assert_eq!(code(&f.run(&req("203.0.113.9", "/")).0), Some((403, "access.ip_denied".into())));
    assert_eq!(code(&f.run(&req("198.51.100.7", "/")).0), Some((403, "access.ip_denied".into())));
    assert_eq!(code(&f.run(&req("2001:db8:bad::1", "/")).0), Some((403, "access.ip_denied".into())));
    assert!(f.run(&req("198.51.100.8", "/")).0.is_allow());
    let f = build("ip_allow: [10.0.0.0/8]\nip_deny: [10.0.0.66]\n", &[]);
    assert!(f.run(&req("10.1.2.3", "/")).0.is_allow());
    assert_eq!(code(&f.run(&req("10.0.0.66", "/")).0), Some((403, "access.ip_denied".into())), "deny wins");
    assert_eq!(code(&f.run(&req("192.0.2.1", "/")).0), Some((403, "access.ip_not_allowed".into())));
    // A reload swaps the lists.
    let s = crate::settings::tests::decode_str("ip_allow: [192.0.2.0/24]\n").unwrap();
    f.stage.apply_files(load_files(&s, &|_| Err(palisade_config::read::ReadError::Io(std::io::ErrorKind::NotFound.into()))).unwrap());
    assert!(f.run(&req("192.0.2.1", "/")).0.is_allow());
    assert_eq!(code(&f.run(&req("10.1.2.3", "/")).0), Some((403, "access.ip_not_allowed".into())));
}

#[test]
fn jwt_required_verified_and_forwarded() {
    let f = build(&jwt_yaml(), &[]);
    let (v, cx) = f.run(&req("192.0.2.1", "/x"));
    assert_eq!(code(&v), Some((401, "access.token_missing".into())));
    assert_eq!(header(&cx, "www-authenticate"), Some("Bearer realm=\"api\""));
    let (v, cx) = f.run(&req("192.0.2.1", "/x").bearer(&hs_token(good_claims())).header("x-user-id", "spoofed"));
    assert!(v.is_allow(), "{v:?}");
    assert!(cx.identity.jwt_verified);
    assert_eq!(cx.identity.subject.as_deref(), Some("alice"));
    assert_eq!(cx.identity.scopes, vec!["read"]);
    assert!(cx.strip_upstream.iter().any(|h| h == "x-user-id") && cx.strip_upstream.iter().any(|h| h == "x-tenant"));
    let fwd: Vec<(String, String)> = cx.upstream_headers.iter().map(|(n, v)| (n.to_string(), v.to_str().unwrap().to_string())).collect();
    assert_eq!(fwd, vec![("x-user-id".to_string(), "alice".to_string()), ("x-tenant".to_string(), "acme".to_string())]);
    // Invalid tokens: 401 with error="invalid_token", a reason code, and nothing of the token.
    let mut expired = good_claims();
    expired["exp"] = json!(NOW / 1_000_000_000 - 3600);
    for (token, want) in [
        (hs_token(expired), "access.jwt_expired"),
        ("garbage".to_string(), "access.jwt_invalid"),
        (TestKey::hmac(Alg::HS256, b"another-secret-another-secret!!").token(&good_claims(), None), "access.jwt_invalid"),
        ("e30.e30.".to_string() + &"A".repeat(60_000), "access.jwt_invalid"),
    ] {
        let (v, cx) = f.run(&req("192.0.2.1", "/x").bearer(&token));
        assert_eq!(code(&v).map(|c| c.1), Some(want.to_string()), "{v:?}");
        assert_eq!(header(&cx, "www-authenticate"), Some("Bearer realm=\"api\", error=\"invalid_token\""));
        if let Verdict::Block { reasons, .. } = &v {
            let d = reasons[0].detail.as_deref().unwrap_or("");
            assert!(!d.contains("garbage") && !d.contains("alice") && d.len() < 100, "{d}");
        }
        assert!(cx.upstream_headers.is_empty());
    }
    // Time moves on: the token expires (leeway 60 s by default).
    let t = hs_token(good_claims());
    f.clock.advance(361 * 1_000_000_000);
    assert_eq!(code(&f.run(&req("192.0.2.1", "/x").bearer(&t)).0).map(|c| c.1), Some("access.jwt_expired".to_string()));
}

#[test]
fn routes_require_and_scopes() {
    let f = build(&format!("{}routes: [{{prefix: /public, require: none}}, {{prefix: /admin, scopes: [admin]}}]\n", jwt_yaml()), &[]);
    assert!(f.run(&req("192.0.2.1", "/public/x")).0.is_allow());
    assert!(f.run(&req("192.0.2.1", "/public")).0.is_allow());
    assert_eq!(code(&f.run(&req("192.0.2.1", "/publicity")).0).map(|c| c.0), Some(401));
    // A bad token is refused even where none is required.
    assert_eq!(code(&f.run(&req("192.0.2.1", "/public").bearer("x.y.z")).0).map(|c| c.0), Some(401));
    let (v, cx) = f.run(&req("192.0.2.1", "/admin/users").bearer(&hs_token(good_claims())));
    assert_eq!(code(&v), Some((403, "access.scope_missing".into())));
    assert!(header(&cx, "www-authenticate").unwrap().contains("insufficient_scope"));
    let mut c = good_claims();
    c["scope"] = json!("read admin");
    assert!(f.run(&req("192.0.2.1", "/admin/users").bearer(&hs_token(c))).0.is_allow());
}

#[test]
fn token_from_header_or_cookie() {
    let y = jwt_yaml().replace("  forward:", "  token: {cookie: session}\n  forward:");
    let f = build(&y, &[]);
    let t = hs_token(good_claims());
    assert!(f.run(&req("192.0.2.1", "/").header("cookie", &format!("a=b; session={t}"))).0.is_allow());
    assert_eq!(code(&f.run(&req("192.0.2.1", "/").bearer(&t)).0).map(|c| c.1), Some("access.token_missing".into()));
    let y = jwt_yaml().replace("  forward:", "  token: {header: X-Token}\n  forward:");
    let f = build(&y, &[]);
    assert!(f.run(&req("192.0.2.1", "/").header("x-token", &t)).0.is_allow());
}

#[test]
fn api_keys_header_query_cookie_and_tiers() {
    let h1 = sha256_hex(b"key-one");
    let h2 = sha256_hex(b"key-two");
    let yaml = format!("api_keys:\n  header: X-Api-Key\n  query: api_key\n  keys: [{{name: one, sha256: {h1}, tier: gold}}]\n  file: keys.txt\n");
    let f = build(&yaml, &[("keys.txt", &format!("{h2} two\n"))]);
    let (v, cx) = f.run(&req("192.0.2.1", "/").header("x-api-key", "key-one"));
    assert!(v.is_allow());
    assert_eq!(cx.identity.api_key.as_deref(), Some("one"));
    let (v, cx) = f.run(&req("192.0.2.1", "/").query("a=1&api_key=key%2Dtwo"));
    assert!(v.is_allow(), "{v:?}");
    assert_eq!(cx.identity.api_key.as_deref(), Some("two"));
    assert_eq!(code(&f.run(&req("192.0.2.1", "/").header("x-api-key", "nope")).0), Some((401, "access.api_key_invalid".into())));
    assert_eq!(code(&f.run(&req("192.0.2.1", "/")).0), Some((401, "access.api_key_missing".into())));
    // Revoking a key at run time (the admin API's way).
    f.stage.denylist().add(DenyEntry::Key(h2.clone()));
    assert_eq!(code(&f.run(&req("192.0.2.1", "/").header("x-api-key", "key-two")).0), Some((401, "access.revoked".into())));
    assert!(f.run(&req("192.0.2.1", "/").header("x-api-key", "key-one")).0.is_allow());
}

#[test]
fn denylisted_tokens() {
    let t = hs_token(good_claims());
    let y = format!("{}deny:\n  entries: ['jti:t-9']\n  file: revoked.txt\n", jwt_yaml());
    let f = build(&y, &[("revoked.txt", "jti:t-1\n")]);
    assert_eq!(code(&f.run(&req("192.0.2.1", "/").bearer(&t)).0), Some((401, "access.revoked".into())));
    let mut c = good_claims();
    c["jti"] = json!("t-2");
    let t2 = hs_token(c);
    assert!(f.run(&req("192.0.2.1", "/").bearer(&t2)).0.is_allow());
    f.stage.denylist().add(DenyEntry::Token(sha256_hex(t2.as_bytes())));
    assert_eq!(code(&f.run(&req("192.0.2.1", "/").bearer(&t2)).0), Some((401, "access.revoked".into())));
}

#[test]
fn rate_limits_with_headers() {
    let f = build("rate_limits:\n  - {name: per-ip, key: client_ip, rate: 2/s}\n  - {name: hourly, key: client_ip, rate: 5/h, prefix: /slow}\n", &[]);
    assert!(f.run(&req("192.0.2.1", "/")).0.is_allow());
    assert!(f.run(&req("192.0.2.1", "/")).0.is_allow());
    let (v, cx) = f.run(&req("192.0.2.1", "/"));
    assert_eq!(code(&v), Some((429, "access.rate_limited".into())));
    assert_eq!(header(&cx, "retry-after"), Some("1"));
    assert_eq!(header(&cx, "ratelimit-policy"), Some("\"per-ip\";q=2;w=1"));
    assert_eq!(header(&cx, "ratelimit"), Some("\"per-ip\";r=0;t=1"));
    assert!(f.run(&req("192.0.2.2", "/")).0.is_allow(), "another client");
    f.clock.advance(500_000_000);
    assert!(f.run(&req("192.0.2.1", "/")).0.is_allow(), "one more after T");
    // Several limits on one route: the hourly one bites after 5.
    let mut limited = 0;
    for _ in 0..8 {
        f.clock.advance(1_000_000_000);
        if !f.run(&req("192.0.2.3", "/slow/x")).0.is_allow() {
            limited += 1;
        }
    }
    assert_eq!(limited, 3);
    let (_, cx) = f.run(&req("192.0.2.3", "/slow/x"));
    assert_eq!(header(&cx, "ratelimit-policy"), Some("\"hourly\";q=5;w=3600"));
    // The 5 hits were 1 s apart from t1; now is t1 + 7 s: one slot frees at t1 + 720 s.
    assert_eq!(header(&cx, "retry-after"), Some("713"));
}

#[test]
fn rate_limit_keys_and_tiers() {
    let h = sha256_hex(b"gold-key");
    let h2 = sha256_hex(b"free-key");
    let y = format!(
        "{}api_keys:\n  keys: [{{name: g, sha256: {h}, tier: gold}}, {{name: f, sha256: {h2}}}]\nrequire: none\n\
         rate_limits:\n  - {{key: jwt:sub, rate: 1/m}}\n  - {{key: api_key, rate: 3/m, tier: gold}}\n",
        jwt_yaml()
    );
    let f = build(&y, &[]);
    let t = hs_token(good_claims());
    assert!(f.run(&req("192.0.2.1", "/").bearer(&t)).0.is_allow());
    assert!(!f.run(&req("192.0.2.2", "/").bearer(&t)).0.is_allow(), "same subject from another address");
    let mut c = good_claims();
    c["sub"] = json!("bob");
    assert!(f.run(&req("192.0.2.1", "/").bearer(&hs_token(c))).0.is_allow());
    // Tier limits apply to gold keys only; the jwt:sub limit falls back to the client IP.
    let mut n = 0;
    for i in 0..5 {
        let ip = format!("198.51.100.{i}");
        if f.run(&req(&ip, "/").header("x-api-key", "gold-key")).0.is_allow() {
            n += 1;
        }
    }
    assert_eq!(n, 3);
    for i in 0..5 {
        assert!(f.run(&req(&format!("203.0.113.{i}"), "/").header("x-api-key", "free-key")).0.is_allow());
    }
}

#[test]
fn flood_protection_bans_then_forgives() {
    let f = build("flood: {rate: 10/s, burst: 5, ban: 30s}\n", &[]);
    let mut allowed = 0;
    for _ in 0..20 {
        if f.run(&req("192.0.2.1", "/")).0.is_allow() {
            allowed += 1;
        }
    }
    assert_eq!(allowed, 5);
    f.clock.advance(10 * 1_000_000_000);
    let (v, cx) = f.run(&req("192.0.2.1", "/"));
    assert_eq!(code(&v), Some((429, "access.flood_banned".into())));
    assert_eq!(header(&cx, "retry-after"), Some("20"));
    assert!(f.run(&req("192.0.2.2", "/")).0.is_allow());
    f.clock.advance(21 * 1_000_000_000);
    assert!(f.run(&req("192.0.2.1", "/")).0.is_allow());
    assert_eq!(f.stage.table().counters.bans.load(Ordering::Relaxed), 1);
}

#[test]
fn monitor_mode_lets_through() {
    let f = build("mode: monitor\nip_deny: [192.0.2.0/24]\n", &[]);
    assert!(matches!(f.run(&req("192.0.2.1", "/")).0, Verdict::Monitor { .. }));
}

#[test]
fn unknown_kid_asks_for_a_jwks_refetch() {
    let f = build("jwt:\n  algorithms: [HS256]\n  jwks_url: http://127.0.0.1:1/jwks\n", &[]);
    let jwks = f.stage.jwks().unwrap().clone();
    let k = TestKey::hmac(Alg::HS256, SECRET);
    let t = k.token(&good_claims(), Some("k2"));
    assert_eq!(code(&f.run(&req("192.0.2.1", "/").bearer(&t)).0).map(|c| c.1), Some("access.jwt_key_unknown".into()));
    assert!(jwks.take_refetch_request());
    assert!(!jwks.take_refetch_request(), "once");
    jwks.replace(crate::jwt::keys_from_jwks(&json!({"keys": [k.jwk("k2")]}).to_string()).unwrap().0);
    assert!(f.run(&req("192.0.2.1", "/").bearer(&t)).0.is_allow());
    assert!(!jwks.take_refetch_request());
}

#[test]
fn shared_store_fail_modes() {
    let f = build("rate_limits: [{key: client_ip, rate: 100/s}]\nstore: redis://127.0.0.1:6379\nredis: {on_error: closed}\n", &[]);
    let shared = f.stage.shared().unwrap().clone();
    let (v, cx) = f.run(&req("192.0.2.1", "/"));
    assert_eq!(code(&v), Some((503, "access.rate_limit_unavailable".into())), "not yet connected: closed");
    assert_eq!(header(&cx, "retry-after"), Some("1"));
    shared.set_healthy(true);
    assert!(f.run(&req("192.0.2.1", "/")).0.is_allow());
    assert_eq!(f.stage.table().drain_shared(NOW).len(), 1, "hits wait for the sync");
    let f = build("rate_limits: [{key: client_ip, rate: 1/s}]\nstore: redis://127.0.0.1:6379\n", &[]);
    assert!(f.run(&req("192.0.2.1", "/")).0.is_allow(), "open: the local tier decides");
    assert!(!f.run(&req("192.0.2.1", "/")).0.is_allow(), "and still limits");
    assert!(f.stage.table().drain_shared(NOW).is_empty(), "nothing to sync while unhealthy");
}

#[test]
fn verified_tokens_are_cached_until_the_keys_change() {
    let f = build(&jwt_yaml(), &[]);
    let t = hs_token(good_claims());
    for _ in 0..3 {
        let (v, cx) = f.run(&req("192.0.2.1", "/").bearer(&t));
        assert!(v.is_allow());
        assert_eq!(cx.identity.subject.as_deref(), Some("alice"), "identity from the cached entry");
    }
    // Revocation applies to cached tokens too.
    f.stage.denylist().add(DenyEntry::Jti("t-1".into()));
    assert_eq!(code(&f.run(&req("192.0.2.1", "/").bearer(&t)).0).map(|c| c.1), Some("access.revoked".into()));
    f.stage.denylist().remove(&DenyEntry::Jti("t-1".into()));
    // New keys (a reload with another secret): the cached verification no longer counts.
    let y = jwt_yaml().replace(std::str::from_utf8(SECRET).unwrap(), "another-secret-of-enough-length!");
    let s = crate::settings::tests::decode_str(&y).unwrap();
    f.stage.apply_files(load_files(&s, &|_| Err(palisade_config::read::ReadError::Io(std::io::ErrorKind::NotFound.into()))).unwrap());
    assert_eq!(code(&f.run(&req("192.0.2.1", "/").bearer(&t)).0).map(|c| c.1), Some("access.jwt_invalid".into()));
}

#[test]
fn cached_tokens_still_expire_and_wait_for_nbf() {
    let f = build(&jwt_yaml(), &[]);
    let t = hs_token(good_claims());
    let mut later = good_claims();
    later["nbf"] = json!(NOW / 1_000_000_000 + 100);
    let early = hs_token(later);
    assert!(f.run(&req("192.0.2.1", "/").bearer(&t)).0.is_allow(), "verified and cached");
    assert_eq!(code(&f.run(&req("192.0.2.1", "/").bearer(&early)).0).map(|c| c.1), Some("access.jwt_not_yet_valid".into()));
    f.clock.advance(61 * 1_000_000_000);
    assert!(f.run(&req("192.0.2.1", "/").bearer(&early)).0.is_allow(), "nbf within the leeway now");
    assert!(f.run(&req("192.0.2.1", "/").bearer(&t)).0.is_allow(), "cached");
    f.clock.advance(300 * 1_000_000_000);
    assert_eq!(code(&f.run(&req("192.0.2.1", "/").bearer(&t)).0).map(|c| c.1), Some("access.jwt_expired".into()), "the cached entry expires too");
}
