use super::*;

pub(crate) fn decode_str(yaml: &str) -> Result<Settings, Vec<String>> {
    let node = palisade_config::yaml::parse(yaml).unwrap();
    let mut cx = Ctx::new("test.yaml");
    let s = Settings::decode(&mut cx, &node, "apps[0].access", Path::new("/etc/palisade"));
    if cx.errors.is_empty() {
        Ok(s.unwrap())
    } else {
        Err(cx.errors.iter().map(|e| e.to_string()).collect())
    }
}

#[test]
fn the_contract_example() {
    let s = decode_str(
        "ip_deny: [203.0.113.0/24]\njwt:\n  algorithms: [HS256]\n  secret: a-secret-of-enough-length\n  issuer: https://issuer.example\n  audience: api\n\
         rate_limits:\n  - key: client_ip\n    rate: 100/s\n    burst: 50\nstore: local\n",
    )
    .unwrap();
    assert_eq!(s.ip_deny.len(), 1);
    assert_eq!(s.require, Require::Jwt);
    let j = s.jwt.unwrap();
    assert_eq!(j.algorithms, vec![Alg::HS256]);
    assert_eq!(j.rules.issuers, vec!["https://issuer.example"]);
    assert_eq!(j.rules.leeway, 60);
    assert_eq!(j.token, TokenSource::Bearer);
    assert_eq!(s.rate_limits[0].key, vec![KeyPart::ClientIp]);
    assert_eq!(s.rate_limits[0].rate, Rate { count: 100, period_ns: 1_000_000_000 });
    assert_eq!(s.rate_limits[0].burst, Some(50));
    assert_eq!(s.store, Store::Local);
    assert!(s.flood.is_none());
}

#[test]
fn full_form() {
    let s = decode_str(
        "mode: monitor\nip_allow: 10.0.0.0/8\nip_allow_file: allow.txt\nip_deny_file: [a.txt, /abs/b.txt]\nreload: 2s\n\
         jwt:\n  algorithms: [RS256, ES256]\n  public_key_file: k.pem\n  jwks_url: https://idp.example/jwks.json\n  jwks_refresh: 1m\n  jwks_min_refetch: 5s\n\
           \x20 audience: [api, api2]\n  leeway: 5s\n  required_claims: [sub, jti]\n  claims: {tenant: acme, admin: true}\n  contains: {groups: admins}\n\
           \x20 token: {cookie: session}\n  forward: {sub: X-User-Id, email: X-User-Email}\n  max_token_size: 8KiB\n  realm: example\n\
         api_keys:\n  query: api_key\n  keys: [{name: ci, sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08, tier: gold}]\n\
         require: any\nroutes: [{prefix: /public, require: none}, {prefix: /admin, scopes: [admin]}]\n\
         deny: {entries: ['jti:abc'], file: revoked.txt}\n\
         rate_limits:\n  - {name: per-user, key: [jwt:sub, route], rate: 10/s, prefix: /api, tier: gold}\n  - {key: api_key, rate: 1000/h}\n\
         rate_limit_headers: always\nstore: redis://127.0.0.1:6379\nredis: {on_error: closed, sync_interval: 20ms, timeout: 100ms, prefix: pal}\n\
         max_keys: 5000\nflood: {rate: 500/s, burst: 1000, ban: 2m}\n",
    )
    .unwrap();
    assert_eq!(s.mode, Mode::Monitor);
    assert_eq!(s.ip_allow_files, vec![PathBuf::from("/etc/palisade/allow.txt")]);
    assert_eq!(s.ip_deny_files, vec![PathBuf::from("/etc/palisade/a.txt"), PathBuf::from("/abs/b.txt")]);
    let j = s.jwt.as_ref().unwrap();
    assert_eq!(j.token, TokenSource::Cookie("session".into()));
    assert_eq!(j.rules.equals, vec![("tenant".to_string(), serde_json::json!("acme")), ("admin".to_string(), serde_json::json!(true))]);
    assert_eq!(j.forward.len(), 2);
    assert_eq!(j.max_token_size, 8192);
    assert_eq!(s.require, Require::Any);
    assert_eq!(s.routes[1].scopes, vec!["admin"]);
    assert_eq!(s.rate_limits[0].key, vec![KeyPart::Jwt("sub".into()), KeyPart::Route]);
    assert_eq!(s.rate_limits[1].name, "limit1");
    assert!(s.rate_limit_headers_always);
    assert_eq!(s.store, Store::Redis("redis://127.0.0.1:6379".into()));
    assert!(!s.redis.fail_open);
    assert_eq!(s.max_keys, 5000);
    assert_eq!(s.flood.as_ref().unwrap().ban, Duration::from_secs(120));
    assert_eq!(s.files().len(), 5);
}

#[test]
fn errors_are_located_and_collected() {
    let e = decode_str(
        "ip_deny: [not-a-cidr]\njwt:\n  algorithms: [none, HS256]\n  secret: short\n  token: {header: 'bad header'}\n\
         rate_limits:\n  - {key: user, rate: lots}\nstore: memcached://x\nbogus: 1\nrequire: api_key\n",
    )
    .unwrap_err();
    let all = e.join("\n");
    for needle in [
        "apps[0].access.ip_deny[0]",
        "unsupported algorithm `none`",
        "at least 16 bytes",
        "not a valid header name",
        "expected client_ip, api_key, jwt:CLAIM or route",
        "`lots` is not a rate",
        "redis://",
        "unknown key `bogus`",
    ] {
        assert!(all.contains(needle), "missing {needle:?} in:\n{all}");
    }
    assert!(all.contains("test.yaml:1:"), "{all}");
    let e = decode_str("require: jwt\n").unwrap_err();
    assert!(e[0].contains("no `jwt` section"), "{e:?}");
    let e = decode_str("jwt: {algorithms: [RS256]}\n").unwrap_err();
    assert!(e[0].contains("no keys"), "{e:?}");
}
