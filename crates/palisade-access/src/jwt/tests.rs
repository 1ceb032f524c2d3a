use serde_json::json;

use super::*;
use crate::encoding::b64url_encode;
use crate::testing::{openssl_available, TestKey};

const NOW: u64 = 1_800_000_000;

fn all() -> AlgSet {
    AlgSet::of(&Alg::ALL)
}

fn hmac_set(secret: &[u8]) -> KeySet {
    KeySet { keys: vec![Key { kid: None, alg: None, material: Material::hmac(secret) }] }
}

fn claims() -> Value {
    json!({"sub": "alice", "iss": "https://issuer.example", "aud": ["api", "other"], "exp": NOW + 60, "nbf": NOW - 60, "scope": "read write"})
}

fn rules() -> ClaimRules {
    ClaimRules { leeway: 30, issuers: vec!["https://issuer.example".into()], audiences: vec!["api".into()], ..Default::default() }
}

/// Key pairs of every family, generated once per test binary.
fn pairs() -> Option<&'static [TestKey]> {
    static PAIRS: std::sync::OnceLock<Option<Vec<TestKey>>> = std::sync::OnceLock::new();
    PAIRS
        .get_or_init(|| {
            if !openssl_available() {
                eprintln!("skipping: openssl is not installed (needed to generate RSA/EC/Ed25519 keys)");
                return None;
            }
            Some([Alg::RS256, Alg::ES256, Alg::ES384, Alg::EdDSA].iter().map(|&a| TestKey::generate(a).unwrap()).collect())
        })
        .as_deref()
}

fn key_for(alg: Alg) -> Option<TestKey> {
    match alg {
        Alg::HS256 | Alg::HS384 | Alg::HS512 => Some(TestKey::hmac(alg, b"a-secret-that-is-long-enough-123")),
        Alg::RS256 | Alg::RS384 | Alg::RS512 | Alg::PS256 | Alg::PS384 | Alg::PS512 => Some(pairs()?[0].with_alg(alg)),
        Alg::ES256 => Some(pairs()?[1].with_alg(alg)),
        Alg::ES384 => Some(pairs()?[2].with_alg(alg)),
        Alg::EdDSA => Some(pairs()?[3].with_alg(alg)),
    }
}

fn public_set(k: &TestKey) -> KeySet {
    if k.public_pem.is_empty() {
        hmac_set(b"a-secret-that-is-long-enough-123")
    } else {
        keys_from_pem(&k.public_pem, None).unwrap()
    }
}

#[test]
fn every_algorithm_verifies_from_pem_and_from_jwks() {
    for alg in Alg::ALL {
        let Some(k) = key_for(alg) else { return };
        let token = k.token(&claims(), Some("k1"));
        // PEM keys have no kid: a token naming a kid is matched by kid only when the key has
        // one, so use a kid-less token for the PEM set.
        let plain = k.token(&claims(), None);
        let v = verify(&plain, &public_set(&k), all(), &rules(), NOW, 16384).unwrap_or_else(|e| panic!("{alg}: {e}"));
        assert_eq!(v.alg, alg);
        assert_eq!(v.claim_str("sub"), Some("alice"));
        assert_eq!(v.scopes(), vec!["read", "write"]);
        let jwks = json!({"keys": [k.jwk("k1")]}).to_string();
        let (set, skipped) = keys_from_jwks(&jwks).unwrap();
        assert!(skipped.is_empty());
        verify(&token, &set, all(), &rules(), NOW, 16384).unwrap_or_else(|e| panic!("{alg} via JWKS: {e}"));
        // A flipped bit in the signature fails.
        let mut bad = token.clone().into_bytes();
        let last = bad.len() - 3;
        bad[last] = if bad[last] == b'A' { b'B' } else { b'A' };
        let bad = String::from_utf8(bad).unwrap();
        assert_eq!(verify(&bad, &set, all(), &rules(), NOW, 16384).unwrap_err(), JwtError::BadSignature, "{alg}");
        // A changed payload fails.
        let parts: Vec<&str> = token.split('.').collect();
        let forged = format!("{}.{}.{}", parts[0], b64url_encode(json!({"sub": "mallory", "exp": NOW + 60}).to_string().as_bytes()), parts[2]);
        assert_eq!(verify(&forged, &set, all(), &rules(), NOW, 16384).unwrap_err(), JwtError::BadSignature, "{alg}");
    }
}

#[test]
fn algorithm_allowlist_and_none() {
    let k = TestKey::hmac(Alg::HS256, b"a-secret-that-is-long-enough-123");
    let set = hmac_set(b"a-secret-that-is-long-enough-123");
    let t = k.token(&claims(), None);
    assert_eq!(verify(&t, &set, AlgSet::of(&[Alg::RS256]), &rules(), NOW, 16384).unwrap_err(), JwtError::AlgNotAllowed(Alg::HS256));
    for none in ["none", "None", "NONE"] {
        let h = b64url_encode(json!({"alg": none}).to_string().as_bytes());
        let p = b64url_encode(claims().to_string().as_bytes());
        assert_eq!(verify(&format!("{h}.{p}."), &set, all(), &rules(), NOW, 16384).unwrap_err(), JwtError::AlgNone);
    }
    let h = b64url_encode(json!({"alg": "HS1"}).to_string().as_bytes());
    assert_eq!(verify(&format!("{h}.e30.AAAA"), &set, all(), &rules(), NOW, 16384).unwrap_err(), JwtError::AlgUnknown);
    let h = b64url_encode(json!({"alg": "HS256", "crit": ["b64"]}).to_string().as_bytes());
    assert!(matches!(verify(&format!("{h}.e30.AAAA"), &set, all(), &rules(), NOW, 16384), Err(JwtError::Malformed(_))));
}

#[test]
fn hs_with_an_rsa_public_key_is_refused() {
    // The classic confusion: sign HS256 with the bytes of the RSA public key (PEM text) and hope
    // the verifier uses the "key" as an HMAC secret.
    let Some(rsa) = key_for(Alg::RS256) else { return };
    let set = keys_from_pem(&rsa.public_pem, None).unwrap();
    let forged = TestKey::hmac(Alg::HS256, rsa.public_pem.as_bytes()).token(&claims(), None);
    assert_eq!(verify(&forged, &set, all(), &rules(), NOW, 16384).unwrap_err(), JwtError::NoKey(Alg::HS256));
    // The same from a JWKS entry.
    let (set, _) = keys_from_jwks(&json!({"keys": [rsa.jwk("r")]}).to_string()).unwrap();
    let forged = TestKey::hmac(Alg::HS256, rsa.public_pem.as_bytes()).token(&claims(), Some("r"));
    assert_eq!(verify(&forged, &set, all(), &rules(), NOW, 16384).unwrap_err(), JwtError::NoKey(Alg::HS256));
    // A JWK declaring alg RS256 does not verify PS256 even though the key fits.
    let ps = rsa.with_alg(Alg::PS256).token(&claims(), Some("r"));
    assert_eq!(verify(&ps, &set, all(), &rules(), NOW, 16384).unwrap_err(), JwtError::NoKey(Alg::PS256));
}

#[test]
fn kid_selects_and_unknown_kid_is_reported() {
    let a = TestKey::hmac(Alg::HS256, b"key-a-key-a-key-a-key-a-key-a-!!");
    let b = TestKey::hmac(Alg::HS256, b"key-b-key-b-key-b-key-b-key-b-!!");
    let (set, _) = keys_from_jwks(&json!({"keys": [a.jwk("a"), b.jwk("b")]}).to_string()).unwrap();
    assert!(verify(&b.token(&claims(), Some("b")), &set, all(), &rules(), NOW, 16384).is_ok());
    assert_eq!(verify(&b.token(&claims(), Some("a")), &set, all(), &rules(), NOW, 16384).unwrap_err(), JwtError::BadSignature);
    assert_eq!(verify(&b.token(&claims(), Some("c")), &set, all(), &rules(), NOW, 16384).unwrap_err(), JwtError::UnknownKid);
    // No kid: every fitting key is tried.
    assert!(verify(&b.token(&claims(), None), &set, all(), &rules(), NOW, 16384).is_ok());
}

#[test]
fn time_claims_with_leeway() {
    let k = TestKey::hmac(Alg::HS256, b"a-secret-that-is-long-enough-123");
    let set = hmac_set(b"a-secret-that-is-long-enough-123");
    let r = rules();
    let at = |c: Value, now: u64| verify(&k.token(&c, None), &set, all(), &r, now, 16384);
    let base = json!({"iss": "https://issuer.example", "aud": "api"});
    let with = |k: &str, v: u64| {
        let mut c = base.clone();
        c[k] = json!(v);
        c
    };
    assert_eq!(at(with("exp", NOW - 31), NOW).unwrap_err(), JwtError::Expired);
    assert!(at(with("exp", NOW - 29), NOW).is_ok(), "within leeway");
    assert_eq!(at(with("nbf", NOW + 31), NOW).unwrap_err(), JwtError::NotYetValid);
    assert!(at(with("nbf", NOW + 29), NOW).is_ok());
    let mut c = base.clone();
    c["exp"] = json!("tomorrow");
    assert_eq!(at(c, NOW).unwrap_err(), JwtError::ClaimMismatch("exp".into()));
    // Fractional times are numbers too.
    let mut c = base.clone();
    c["exp"] = json!(NOW as f64 - 40.5);
    assert_eq!(at(c, NOW).unwrap_err(), JwtError::Expired);
}

#[test]
fn issuer_audience_required_and_custom_claims() {
    let k = TestKey::hmac(Alg::HS256, b"a-secret-that-is-long-enough-123");
    let set = hmac_set(b"a-secret-that-is-long-enough-123");
    let mut r = rules();
    let check = |c: &Value, r: &ClaimRules| verify(&k.token(c, None), &set, all(), r, NOW, 16384);
    let mut c = claims();
    c["iss"] = json!("https://evil.example");
    assert_eq!(check(&c, &r).unwrap_err(), JwtError::Issuer);
    let mut c = claims();
    c["aud"] = json!("other");
    assert_eq!(check(&c, &r).unwrap_err(), JwtError::Audience);
    let mut c = claims();
    c.as_object_mut().unwrap().remove("aud");
    assert_eq!(check(&c, &r).unwrap_err(), JwtError::Audience);
    r.required = vec!["email".into()];
    assert_eq!(check(&claims(), &r).unwrap_err(), JwtError::MissingClaim("email".into()));
    r.required = vec!["sub".into()];
    r.equals = vec![("tenant".into(), json!("acme"))];
    let mut c = claims();
    c["tenant"] = json!("acme");
    assert!(check(&c, &r).is_ok());
    c["tenant"] = json!("other");
    assert_eq!(check(&c, &r).unwrap_err(), JwtError::ClaimMismatch("tenant".into()));
    r.equals.clear();
    r.contains = vec![("groups".into(), "admins".into()), ("scope".into(), "write".into())];
    let mut c = claims();
    c["groups"] = json!(["users", "admins"]);
    assert!(check(&c, &r).is_ok());
    c["groups"] = json!(["users", "admins-not"]);
    assert_eq!(check(&c, &r).unwrap_err(), JwtError::ClaimMismatch("groups".into()));
}

#[test]
fn malformed_tokens_are_refused_cleanly() {
    let set = hmac_set(b"a-secret-that-is-long-enough-123");
    let k = TestKey::hmac(Alg::HS256, b"a-secret-that-is-long-enough-123");
    let good = k.token(&claims(), None);
    let cases = [
        "",
        ".",
        "..",
        "a.b",
        "a.b.c.d",
        "!!!.e30.AAAA",
        "e30.e30.AAAA",                             // header without alg
        "bnVsbA.e30.AAAA",                          // header `null`
        "eyJhbGciOiJIUzI1NiJ9.e30.AAA=",            // padding in the signature
        "eyJhbGciOiJIUzI1NiJ9.e30.A",               // impossible base64 length
        "eyJhbGciOiJIUzI1NiIsImtpZCI6MX0.e30.AAAA", // kid not a string
        "eyJhbGciOiJIUzI1NiJ9.bm90IGpzb24.AAAA",    // payload not JSON (signature fails first)
        "\u{1F600}.\u{1F600}.\u{1F600}",
    ];
    for t in cases {
        let e = verify(t, &set, all(), &rules(), NOW, 16384).unwrap_err();
        assert!(e.code().starts_with("access.jwt"), "{t}: {e}");
    }
    // A correctly signed token whose payload is not JSON.
    let input = format!("{}.{}", b64url_encode(br#"{"alg":"HS256"}"#), b64url_encode(b"not json"));
    let t = format!("{input}.{}", b64url_encode(&k.sign(input.as_bytes())));
    assert!(matches!(verify(&t, &set, all(), &rules(), NOW, 16384), Err(JwtError::Malformed(_))));
    // Size bound.
    assert_eq!(verify(&"a".repeat(70_000), &set, all(), &rules(), NOW, 16384).unwrap_err(), JwtError::TooLarge);
    assert!(verify(&good, &set, all(), &rules(), NOW, 16384).is_ok());
}

#[test]
fn huge_and_unicode_claims() {
    let k = TestKey::hmac(Alg::HS256, b"a-secret-that-is-long-enough-123");
    let set = hmac_set(b"a-secret-that-is-long-enough-123");
    let mut c = claims();
    c["name"] = json!("Zoë 🦀 \u{202e}");
    c["blob"] = json!("x".repeat(10_000));
    let t = k.token(&c, None);
    let v = verify(&t, &set, all(), &rules(), NOW, 65536).unwrap();
    assert_eq!(v.claim_str("name"), Some("Zoë 🦀 \u{202e}"));
    assert_eq!(verify(&t, &set, all(), &rules(), NOW, 8192).unwrap_err(), JwtError::TooLarge);
}

#[test]
fn jwks_parsing_errors_and_skips() {
    assert!(keys_from_jwks("garbage").is_err());
    assert!(keys_from_jwks("{}").is_err());
    assert!(keys_from_jwks(r#"{"keys": 1}"#).is_err());
    assert!(keys_from_jwks(r#"{"keys": []}"#).is_err());
    let (set, skipped) = keys_from_jwks(
        r#"{"keys": [{"kty": "RSA", "use": "enc", "n": "AQAB", "e": "AQAB"}, {"kty": "EC", "crv": "P-521", "x": "AA", "y": "AA"}, {"kty": "oct", "k": "c2VjcmV0", "kid": "x"}]}"#,
    )
    .unwrap();
    assert_eq!(set.keys.len(), 1);
    assert_eq!(skipped.len(), 1, "{skipped:?}");
    assert!(keys_from_jwks(r#"{"keys": [{"kty": "oct", "k": "c2VjcmV0", "alg": "RS256"}]}"#).is_err(), "alg that does not fit");
}

#[test]
fn pem_errors() {
    assert!(keys_from_pem("nothing", None).is_err());
    assert!(keys_from_pem("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n", None).unwrap_err().to_string().contains("private"));
    // A SubjectPublicKeyInfo that does not parse: a PEM error (what `palisade check` reports
    // for a key file), not a panic.
    let e = keys_from_pem("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n", None).unwrap_err();
    assert_eq!(e.kind(), crate::ErrorKind::Pem, "{e}");
}

#[test]
fn claims_forwarded_as_header_values() {
    assert_eq!(claim_header_value(&json!("x")), Some("x".into()));
    assert_eq!(claim_header_value(&json!(12)), Some("12".into()));
    assert_eq!(claim_header_value(&json!(["a", "b", 3])), Some("a,b,3".into()));
    assert_eq!(claim_header_value(&json!({"a": 1})), None);
}
