//! Access control in the running proxy: IP lists (and their reload), JWTs minted here with keys
//! generated here, a JWKS server that rotates, misbehaves and hangs, API keys, rate limits with
//! their headers, and limits shared through a real Redis (two instances; Redis killed and
//! restarted).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use palisade_access::jwt::Alg;
use palisade_access::testing::{openssl_available, TestKey};
use serde_json::json;

use crate::common::*;

const SECRET: &str = "e2e-secret-e2e-secret-e2e-secret";

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}

fn claims(sub: &str) -> serde_json::Value {
    json!({"sub": sub, "iss": "https://issuer.test", "aud": "api", "exp": now() + 600, "scope": "read", "email": "a@example.com"})
}

fn app(up: &str, access: &str) -> String {
    format!("apps:\n  - name: app\n    upstream: {up}\n    detection: off\n    access:\n{access}")
}

async fn send(addr: std::net::SocketAddr, path: &str, headers: &[(&str, &str)]) -> Resp {
    let mut req = format!("GET {path} HTTP/1.1\r\nHost: api.test\r\nConnection: close\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    raw(addr, req).await
}

#[tokio::test]
async fn hs256_required_forwarded_and_spoofing_stripped() {
    let mut up = Upstream::tcp(reply("ok")).await;
    let access = format!(
        "      jwt:\n        algorithms: [HS256]\n        secret: {SECRET}\n        issuer: https://issuer.test\n        audience: api\n        forward: {{sub: X-User-Id, email: X-User-Email}}\n"
    );
    let proxy = Proxy::start(&cfg(&["max_header_size: 128KiB"], &app(&up.url(), &access)));
    let token = TestKey::hmac(Alg::HS256, SECRET.as_bytes()).token(&claims("alice"), None);

    let r = send(proxy.addr, "/x", &[]).await;
    assert_problem(&r, 401, "access.token_missing");
    assert_eq!(r.header("www-authenticate"), Some("Bearer realm=\"api\""), "{}", r.dump());

    let r = send(proxy.addr, "/x", &[("Authorization", &format!("Bearer {token}")), ("X-User-Id", "admin"), ("X-User-Email", "evil@example.com")]).await;
    assert_eq!(r.status, 200, "{}", r.dump());
    let seen = up.next_req().await;
    assert_eq!(seen.header_all("x-user-id"), vec!["alice"], "{}", seen.raw_head);
    assert_eq!(seen.header_all("x-user-email"), vec!["a@example.com"]);
    assert!(seen.header("authorization").is_some(), "the token itself goes on");

    // Without a token, spoofed claim headers never reach the upstream either (public route).
    // Bad input: all 401 with a reason, nothing of the token echoed, no stall.
    let huge = format!("Bearer {}", "A".repeat(64 * 1024));
    let bad_b64 = "Bearer eyJhbGciOiJIUzI1NiJ9.!!!.AAAA".to_string();
    let unicode = format!(
        "Bearer {}",
        TestKey::hmac(Alg::HS256, SECRET.as_bytes())
            .token(&json!({"sub": "Zoë 🦀", "exp": now() + 60, "iss": "https://issuer.test", "aud": "api", "big": "x".repeat(20_000)}), None)
    );
    let none = format!(
        "Bearer {}.{}.",
        palisade_access::encoding::b64url_encode(br#"{"alg":"none"}"#),
        palisade_access::encoding::b64url_encode(claims("root").to_string().as_bytes())
    );
    let wrong_aud = format!(
        "Bearer {}",
        TestKey::hmac(Alg::HS256, SECRET.as_bytes()).token(&json!({"sub": "a", "iss": "https://issuer.test", "aud": "other", "exp": now() + 60}), None)
    );
    let expired = format!(
        "Bearer {}",
        TestKey::hmac(Alg::HS256, SECRET.as_bytes()).token(&json!({"sub": "a", "iss": "https://issuer.test", "aud": "api", "exp": now() - 3600}), None)
    );
    let future = format!(
        "Bearer {}",
        TestKey::hmac(Alg::HS256, SECRET.as_bytes()).token(&json!({"sub": "a", "iss": "https://issuer.test", "aud": "api", "nbf": now() + 3600}), None)
    );
    for (value, code) in [
        (huge.as_str(), "access.jwt_invalid"),
        (bad_b64.as_str(), "access.jwt_invalid"),
        (unicode.as_str(), "access.jwt_invalid"), // over max_token_size (16 KiB)
        (none.as_str(), "access.jwt_invalid"),
        (wrong_aud.as_str(), "access.jwt_claims"),
        (expired.as_str(), "access.jwt_expired"),
        (future.as_str(), "access.jwt_not_yet_valid"),
        ("Bearer ", "access.token_missing"),
    ] {
        let r = send(proxy.addr, "/x", &[("Authorization", value)]).await;
        let v = assert_problem(&r, 401, code);
        assert!(r.header("www-authenticate").is_some_and(|w| w.starts_with("Bearer realm=\"api\"")), "{}", r.dump());
        let body = v.to_string();
        assert!(!body.contains("AAAA") && !body.contains("Zo") && !body.contains("root") && body.len() < 600, "{body}");
    }
    assert!(up.try_req().is_none(), "nothing refused reached the upstream");
}

#[tokio::test]
async fn public_keys_from_pem_files_for_every_asymmetric_family() {
    if !openssl_available() {
        eprintln!("skipping: openssl is not installed");
        return;
    }
    let up = Upstream::tcp(reply("ok")).await;
    let dir = TempDir::new();
    let keys: Vec<TestKey> = [Alg::RS256, Alg::ES256, Alg::ES384, Alg::EdDSA].iter().map(|&a| TestKey::generate(a).unwrap()).collect();
    let mut files = String::new();
    for (i, k) in keys.iter().enumerate() {
        dir.write(&format!("k{i}.pem"), &k.public_pem);
        files.push_str(&format!("k{i}.pem, "));
    }
    let access = format!(
        "      jwt:\n        algorithms: [RS256, RS384, RS512, PS256, PS384, PS512, ES256, ES384, EdDSA]\n        public_key_file: [{}]\n",
        files.trim_end_matches(", ")
    );
    let proxy = Proxy::start_in(&cfg(&[], &app(&up.url(), &access)), dir);
    let rsa = &keys[0];
    let mut all: Vec<TestKey> = [Alg::RS256, Alg::RS384, Alg::RS512, Alg::PS256, Alg::PS384, Alg::PS512].iter().map(|&a| rsa.with_alg(a)).collect();
    all.extend(keys.iter().skip(1).map(|k| k.with_alg(k.alg)));
    for k in &all {
        let t = k.token(&claims("bob"), None);
        let r = send(proxy.addr, "/", &[("Authorization", &format!("Bearer {t}"))]).await;
        assert_eq!(r.status, 200, "{}: {}", k.alg, r.dump());
    }
    // Algorithm confusion: HS256 signed with the RSA public key's PEM text.
    let forged = TestKey::hmac(Alg::HS256, rsa.public_pem.as_bytes()).token(&claims("mallory"), None);
    let r = send(proxy.addr, "/", &[("Authorization", &format!("Bearer {forged}"))]).await;
    assert_problem(&r, 401, "access.jwt_invalid");
}

#[derive(Clone)]
enum Jwks {
    Keys(String),
    Garbage,
    Hang,
}

/// A JWKS server on its own thread (the proxy's start waits for the first fetch while the
/// test's runtime is blocked), serving whatever `state` says; stops when dropped.
fn jwks_server(state: Arc<Mutex<Jwks>>) -> ThreadServer {
    ThreadServer::start(move |_| match &*state.lock().unwrap() {
        Jwks::Keys(b) => Some((200, b.clone().into_bytes())),
        Jwks::Garbage => Some((200, b"<html>oops</html>".to_vec())),
        Jwks::Hang => None,
    })
}

#[tokio::test]
async fn jwks_url_rotation_garbage_and_hangs() {
    let up = Upstream::tcp(reply("ok")).await;
    let k1 = TestKey::hmac(Alg::HS256, b"jwks-key-one-jwks-key-one-jwks-1");
    let k2 = TestKey::hmac(Alg::HS256, b"jwks-key-two-jwks-key-two-jwks-2");
    let state = Arc::new(Mutex::new(Jwks::Keys(json!({"keys": [k1.jwk("k1")]}).to_string())));
    let jwks = jwks_server(state.clone());
    let access =
        format!("      jwt:\n        algorithms: [HS256]\n        jwks_url: {}/jwks.json\n        jwks_refresh: 1h\n        jwks_min_refetch: 0s\n", jwks.url);
    let proxy = Proxy::start(&cfg(&[], &app(&up.url(), &access)));
    let t1 = k1.token(&claims("a"), Some("k1"));
    let t2 = k2.token(&claims("b"), Some("k2"));
    let bearer = |t: &str| format!("Bearer {t}");
    assert_eq!(send(proxy.addr, "/", &[("Authorization", &bearer(&t1))]).await.status, 200);

    // The issuer rotates to k2: the first k2 token names an unknown kid (401) and triggers a
    // refetch; soon k2 works and k1 is gone.
    *state.lock().unwrap() = Jwks::Keys(json!({"keys": [k2.jwk("k2")]}).to_string());
    let r = send(proxy.addr, "/", &[("Authorization", &bearer(&t2))]).await;
    assert_problem(&r, 401, "access.jwt_key_unknown");
    let deadline = Instant::now() + LIMIT;
    loop {
        let r = send(proxy.addr, "/", &[("Authorization", &bearer(&t2))]).await;
        if r.status == 200 {
            break;
        }
        assert!(Instant::now() < deadline, "k2 never accepted: {}", r.dump());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_problem(&send(proxy.addr, "/", &[("Authorization", &bearer(&t1))]).await, 401, "access.jwt_key_unknown");

    // The JWKS URL returns garbage: an unknown kid asks for a refetch, which fails; the last
    // good set (k2) stays.
    *state.lock().unwrap() = Jwks::Garbage;
    let t3 = k1.token(&claims("c"), Some("k3"));
    assert_problem(&send(proxy.addr, "/", &[("Authorization", &bearer(&t3))]).await, 401, "access.jwt_key_unknown");
    tokio::time::sleep(Duration::from_millis(400)).await;
    let r = send(proxy.addr, "/", &[("Authorization", &bearer(&t2))]).await;
    assert_eq!(r.status, 200, "{}", r.dump());

    // The JWKS URL hangs: requests are still answered at once (the fetch is on its own thread).
    *state.lock().unwrap() = Jwks::Hang;
    for _ in 0..5 {
        let r = within("request while the JWKS fetch hangs", send(proxy.addr, "/", &[("Authorization", &bearer(&t3))])).await;
        assert_problem(&r, 401, "access.jwt_key_unknown");
        let r = within("request while the JWKS fetch hangs", send(proxy.addr, "/", &[("Authorization", &bearer(&t2))])).await;
        assert_eq!(r.status, 200, "{}", r.dump());
    }
}

#[tokio::test]
async fn ip_lists_from_files_reload_and_forwarded_from_trusted_proxies() {
    let mut up = Upstream::tcp(reply("ok")).await;
    let dir = TempDir::new();
    dir.write("deny.txt", "# bad\n203.0.113.0/24\n");
    let access = "      ip_deny_file: deny.txt\n      reload: 100ms\n";
    let proxy = Proxy::start_in(&cfg(&["trusted_proxies: [127.0.0.1]"], &app(&up.url(), access)), dir);
    let r = send(proxy.addr, "/", &[("X-Forwarded-For", "203.0.113.9")]).await;
    assert_problem(&r, 403, "access.ip_denied");
    let r = send(proxy.addr, "/", &[("Forwarded", "for=\"203.0.113.10:4711\";proto=https")]).await;
    assert_problem(&r, 403, "access.ip_denied");
    assert_eq!(send(proxy.addr, "/", &[("X-Forwarded-For", "198.51.100.1")]).await.status, 200);
    up.next_req().await;
    // 100,000 entries, then the file changes: the new list is in force without a reload.
    let mut big = String::with_capacity(1_600_000);
    for i in 0..100_000u32 {
        let a = 0x0a00_0000 + i * 4;
        big.push_str(&format!("{}/30\n", std::net::Ipv4Addr::from(a)));
    }
    big.push_str("198.51.100.0/24\n");
    std::fs::write(proxy.dir.join("deny.txt"), big).unwrap();
    let deadline = Instant::now() + LIMIT;
    loop {
        let r = send(proxy.addr, "/", &[("X-Forwarded-For", "198.51.100.1")]).await;
        if r.status == 403 {
            break;
        }
        assert!(Instant::now() < deadline, "the changed file was never applied");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(send(proxy.addr, "/", &[("X-Forwarded-For", "203.0.113.9")]).await.status, 200, "the old entry is gone");
    assert_problem(&send(proxy.addr, "/", &[("X-Forwarded-For", "10.0.255.1")]).await, 403, "access.ip_denied");
}

#[tokio::test]
async fn api_keys_and_rate_limits_with_headers() {
    let up = Upstream::tcp(reply("ok")).await;
    let h = palisade_access::encoding::sha256_hex(b"k-123");
    let access =
        format!("      api_keys:\n        keys: [{{name: ci, sha256: {h}}}]\n      rate_limits:\n        - {{name: per-key, key: api_key, rate: 3/m}}\n");
    let proxy = Proxy::start(&cfg(&[], &app(&up.url(), &access)));
    assert_problem(&send(proxy.addr, "/", &[]).await, 401, "access.api_key_missing");
    assert_problem(&send(proxy.addr, "/", &[("X-Api-Key", "nope")]).await, 401, "access.api_key_invalid");
    for _ in 0..3 {
        assert_eq!(send(proxy.addr, "/", &[("X-Api-Key", "k-123")]).await.status, 200);
    }
    let r = send(proxy.addr, "/", &[("X-Api-Key", "k-123")]).await;
    assert_problem(&r, 429, "access.rate_limited");
    let retry: u64 = r.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=20).contains(&retry), "{}", r.dump());
    assert_eq!(r.header("ratelimit-policy"), Some("\"per-key\";q=3;w=60"));
    assert!(r.header("ratelimit").is_some_and(|v| v.starts_with("\"per-key\";r=0;t=")), "{}", r.dump());
}

// ---------------------------------------------------------------------------------------------
// Redis
// ---------------------------------------------------------------------------------------------

struct Redis {
    child: std::process::Child,
    port: u16,
}

impl Redis {
    fn binary() -> Option<&'static str> {
        ["/usr/bin/redis-server", "/usr/local/bin/redis-server"].into_iter().find(|p| std::path::Path::new(p).exists())
    }

    async fn start_on(port: u16) -> Redis {
        let bin = Self::binary().expect("redis-server");
        let child = std::process::Command::new(bin)
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("start redis-server");
        let r = Redis { child, port };
        let deadline = Instant::now() + LIMIT;
        while tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_err() {
            assert!(Instant::now() < deadline, "redis-server did not start on port {port}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        r
    }

    async fn start() -> Option<Redis> {
        if Self::binary().is_none() {
            eprintln!("skipping: redis-server is not installed (scripts/test installs it)");
            return None;
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        Some(Self::start_on(port).await)
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.kill();
    }
}

fn redis_access(url: &str, on_error: &str, rate: &str, burst: u64, prefix: &str) -> String {
    format!(
        "      rate_limits:\n        - {{name: shared, key: route, rate: {rate}, burst: {burst}}}\n      store: {url}\n      redis: {{on_error: {on_error}, sync_interval: 20ms, timeout: 200ms, prefix: {prefix}}}\n"
    )
}

#[tokio::test]
async fn redis_two_instances_share_one_limit() {
    let Some(redis) = Redis::start().await else { return };
    let up = Upstream::tcp(reply("ok")).await;
    let access = redis_access(&redis.url(), "open", "50/s", 10, "two");
    let a = Proxy::start(&cfg(&[], &app(&up.url(), &access)));
    let b = Proxy::start(&cfg(&[], &app(&up.url(), &access)));
    let mut ca = Conn::connect(a.addr).await;
    let mut cb = Conn::connect(b.addr).await;
    let req = "GET /shared HTTP/1.1\r\nHost: api.test\r\n\r\n";
    let started = Instant::now();
    let (mut admitted, mut limited) = (0u64, 0u64);
    // Offer far more than the limit through both instances for 3 s (bounded count too).
    let mut i = 0;
    while started.elapsed() < Duration::from_secs(3) && i < 200_000 {
        let r = if i % 2 == 0 { w!(ca.roundtrip(req)) } else { w!(cb.roundtrip(req)) };
        match r.status {
            200 => admitted += 1,
            429 => limited += 1,
            s => panic!("unexpected status {s}: {}", r.dump()),
        }
        i += 1;
    }
    let secs = started.elapsed().as_secs_f64();
    let expected = 10.0 + 50.0 * secs;
    let ratio = admitted as f64 / expected;
    eprintln!(
        "shared limit 50/s burst 10 over {secs:.2}s through two instances: admitted {admitted} (expected {expected:.0}, ratio {ratio:.3}), limited {limited}"
    );
    assert!(limited > admitted, "the offered load must exceed the limit for the test to mean anything");
    // One instance alone would admit `expected`; two unsynchronised ones twice that.
    assert!((0.9..=1.1).contains(&ratio), "admitted {admitted}, expected about {expected:.0}");
}

#[tokio::test]
async fn redis_killed_and_restarted_fail_closed_and_open() {
    let Some(mut redis) = Redis::start().await else { return };
    let port = redis.port;
    let up = Upstream::tcp(reply("ok")).await;
    let closed = Proxy::start(&cfg(&[], &app(&up.url(), &redis_access(&redis.url(), "closed", "1000/s", 1000, "kc"))));
    let open = Proxy::start(&cfg(&[], &app(&up.url(), &redis_access(&redis.url(), "open", "1000/s", 1000, "ko"))));
    assert_eq!(send(closed.addr, "/", &[]).await.status, 200);
    assert_eq!(send(open.addr, "/", &[]).await.status, 200);

    redis.kill();
    // Fail-closed: refused with 503 once the sync notices; fail-open keeps serving throughout.
    let deadline = Instant::now() + LIMIT;
    loop {
        let r = send(closed.addr, "/", &[]).await;
        if r.status == 503 {
            assert_problem(&r, 503, "access.rate_limit_unavailable");
            assert_eq!(r.header("retry-after"), Some("1"));
            break;
        }
        assert_eq!(r.status, 200);
        assert!(Instant::now() < deadline, "fail-closed never refused");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for _ in 0..20 {
        assert_eq!(send(open.addr, "/", &[]).await.status, 200);
    }

    let _redis = Redis::start_on(port).await;
    let deadline = Instant::now() + LIMIT;
    loop {
        let r = send(closed.addr, "/", &[]).await;
        if r.status == 200 {
            break;
        }
        assert!(Instant::now() < deadline, "fail-closed never recovered: {}", r.dump());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(send(open.addr, "/", &[]).await.status, 200);
}

/// `/metrics` text of a proxy with an admin listener.
async fn scrape(p: &Proxy) -> String {
    let a = p.running().admin_addr.expect("admin address");
    raw(a, "GET /metrics HTTP/1.1\r\nHost: admin\r\nConnection: close\r\n\r\n").await.text()
}

fn metric(text: &str, series: &str) -> Option<u64> {
    text.lines().find_map(|l| l.strip_prefix(series).and_then(|rest| rest.strip_prefix(' ')).and_then(|v| v.parse().ok()))
}

#[tokio::test]
async fn access_decisions_are_counted_in_the_metrics() {
    let up = Upstream::tcp(reply("ok")).await;
    // JWKS URL on a closed port: every fetch fails (the configured secret still verifies).
    let access = format!(
        "      require: jwt\n      jwt:\n        algorithms: [HS256]\n        secret: {SECRET}\n        jwks_url: http://127.0.0.1:{}/jwks.json\n        jwks_refresh: 1h\n      rate_limits:\n        - {{name: per-ip, key: client_ip, rate: 2/m, burst: 2}}\n      flood: {{rate: 1/m, burst: 12, ban: 1m}}\n",
        closed_port()
    );
    let yaml = cfg(&[], &format!("admin:\n  addr: 127.0.0.1:0\n{}", app(&up.url(), &access)));
    let proxy = Proxy::start(&yaml);
    let m = scrape(&proxy).await;
    for series in [
        "palisade_access_rate_limited_total{app=\"app\",limit=\"per-ip\"}",
        "palisade_access_flood_bans_total{app=\"app\"}",
        "palisade_access_jwt_failures_total{app=\"app\",reason=\"expired\"}",
    ] {
        assert_eq!(metric(&m, series), Some(0), "{series} starts at 0:\n{m}");
    }
    assert!(metric(&m, "palisade_access_jwks_refresh_total{app=\"app\",result=\"error\"}").is_some_and(|n| n >= 1), "{m}");

    let key = TestKey::hmac(Alg::HS256, SECRET.as_bytes());
    let good = key.token(&claims("alice"), None);
    let mut old = claims("bob");
    old["exp"] = json!(now() - 3600);
    let expired = key.token(&old, None);
    let forged = TestKey::hmac(Alg::HS256, b"another-secret-another-secret-xx").token(&claims("eve"), None);
    assert_problem(&send(proxy.addr, "/", &[]).await, 401, "access.token_missing");
    assert_problem(&send(proxy.addr, "/", &[("Authorization", &format!("Bearer {expired}"))]).await, 401, "access.jwt_expired");
    assert_problem(&send(proxy.addr, "/", &[("Authorization", &format!("Bearer {forged}"))]).await, 401, "access.jwt_invalid");
    assert_problem(&send(proxy.addr, "/", &[("Authorization", &format!("Bearer {forged}"))]).await, 401, "access.jwt_invalid");
    // The per-IP limit (2/m, burst 2) refuses within a few requests.
    let auth = format!("Bearer {good}");
    let mut limited = 0;
    for _ in 0..4 {
        let r = send(proxy.addr, "/", &[("Authorization", &auth)]).await;
        if r.status == 429 {
            assert_problem(&r, 429, "access.rate_limited");
            limited += 1;
        } else {
            assert_eq!(r.status, 200, "{}", r.dump());
        }
    }
    assert!(limited >= 1, "the limit never refused");
    // Then the flood protection bans this address (bounded number of requests).
    let mut banned = 0;
    for _ in 0..20 {
        let r = send(proxy.addr, "/", &[("Authorization", &auth)]).await;
        if r.status == 429 && r.text().contains("access.flood_banned") {
            banned += 1;
            if banned == 3 {
                break;
            }
        } else if r.status == 429 {
            assert_problem(&r, 429, "access.rate_limited");
            limited += 1;
        }
    }
    assert_eq!(banned, 3, "the flood protection never banned");

    let m = scrape(&proxy).await;
    assert_eq!(metric(&m, "palisade_access_jwt_failures_total{app=\"app\",reason=\"missing\"}"), Some(1), "{m}");
    assert_eq!(metric(&m, "palisade_access_jwt_failures_total{app=\"app\",reason=\"expired\"}"), Some(1), "{m}");
    assert_eq!(metric(&m, "palisade_access_jwt_failures_total{app=\"app\",reason=\"invalid\"}"), Some(2), "{m}");
    assert_eq!(metric(&m, "palisade_access_rate_limited_total{app=\"app\",limit=\"per-ip\"}"), Some(limited), "{m}");
    assert_eq!(metric(&m, "palisade_access_flood_bans_total{app=\"app\"}"), Some(1), "{m}");
    assert_eq!(metric(&m, "palisade_access_flood_refused_total{app=\"app\"}"), Some(3), "{m}");
    assert_eq!(m.matches("# TYPE palisade_access_jwt_failures_total counter").count(), 1, "{m}");
}

#[tokio::test]
async fn redis_outage_decisions_are_counted_in_the_metrics() {
    let Some(mut redis) = Redis::start().await else { return };
    let up = Upstream::tcp(reply("ok")).await;
    let admin = "admin:\n  addr: 127.0.0.1:0\n";
    let closed = Proxy::start(&cfg(&[], &format!("{admin}{}", app(&up.url(), &redis_access(&redis.url(), "closed", "1000/s", 1000, "mc")))));
    let open = Proxy::start(&cfg(&[], &format!("{admin}{}", app(&up.url(), &redis_access(&redis.url(), "open", "1000/s", 1000, "mo")))));
    assert_eq!(send(closed.addr, "/", &[]).await.status, 200);
    assert_eq!(send(open.addr, "/", &[]).await.status, 200);
    let m = scrape(&open).await;
    assert_eq!(metric(&m, "palisade_access_store_decisions_total{app=\"app\",decision=\"fail_open\"}"), Some(0), "{m}");
    assert_eq!(metric(&m, "palisade_access_store_errors_total{app=\"app\"}"), Some(0), "{m}");

    redis.kill();
    // Wait until both instances noticed (the fail-closed one refuses; the fail-open one counts
    // a fail-open decision), then count a known number of decisions.
    let deadline = Instant::now() + LIMIT;
    while send(closed.addr, "/", &[]).await.status != 503 {
        assert!(Instant::now() < deadline, "fail-closed never refused");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    loop {
        assert_eq!(send(open.addr, "/", &[]).await.status, 200);
        if metric(&scrape(&open).await, "palisade_access_store_decisions_total{app=\"app\",decision=\"fail_open\"}").is_some_and(|n| n >= 1) {
            break;
        }
        assert!(Instant::now() < deadline, "the fail-open instance never noticed the outage");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let before_closed = metric(&scrape(&closed).await, "palisade_access_store_decisions_total{app=\"app\",decision=\"fail_closed\"}").unwrap();
    let before_open = metric(&scrape(&open).await, "palisade_access_store_decisions_total{app=\"app\",decision=\"fail_open\"}").unwrap();
    assert!(before_closed >= 1);
    for _ in 0..5 {
        assert_eq!(send(closed.addr, "/", &[]).await.status, 503);
        assert_eq!(send(open.addr, "/", &[]).await.status, 200);
    }
    let mc = scrape(&closed).await;
    let mo = scrape(&open).await;
    assert_eq!(metric(&mc, "palisade_access_store_decisions_total{app=\"app\",decision=\"fail_closed\"}"), Some(before_closed + 5), "{mc}");
    assert_eq!(metric(&mo, "palisade_access_store_decisions_total{app=\"app\",decision=\"fail_open\"}"), Some(before_open + 5), "{mo}");
    assert!(metric(&mc, "palisade_access_store_errors_total{app=\"app\"}").is_some_and(|n| n >= 1), "{mc}");
    assert!(metric(&mo, "palisade_access_store_errors_total{app=\"app\"}").is_some_and(|n| n >= 1), "{mo}");
}
