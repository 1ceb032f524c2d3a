//! JWT (JWS compact serialisation) verification on `ring`, with a small strict parser of our
//! own: exactly three base64url parts without padding, a JSON header whose `alg` must be one
//! the configuration allows and match the key's type (so an RSA public key can never be used
//! as an HMAC secret), `crit` refused, and claims checked after the signature.
//!
//! Keys come from secrets, PEM public keys (SubjectPublicKeyInfo or PKCS#1 RSA), and JWK sets.
//! A [`KeySet`] is immutable; the stage swaps whole sets when a JWKS is refreshed.

use std::fmt;

use ring::{hmac, signature};
use serde_json::{Map, Value};

use crate::encoding::{self, b64url};

/// The JWS algorithms Palisade verifies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Alg {
    HS256,
    HS384,
    HS512,
    RS256,
    RS384,
    RS512,
    PS256,
    PS384,
    PS512,
    ES256,
    ES384,
    EdDSA,
}

impl Alg {
    pub const ALL: [Alg; 12] =
        [Alg::HS256, Alg::HS384, Alg::HS512, Alg::RS256, Alg::RS384, Alg::RS512, Alg::PS256, Alg::PS384, Alg::PS512, Alg::ES256, Alg::ES384, Alg::EdDSA];

    pub fn parse(s: &str) -> Option<Alg> {
        Alg::ALL.into_iter().find(|a| a.name() == s)
    }

    pub fn name(self) -> &'static str {
        match self {
            Alg::HS256 => "HS256",
            Alg::HS384 => "HS384",
            Alg::HS512 => "HS512",
            Alg::RS256 => "RS256",
            Alg::RS384 => "RS384",
            Alg::RS512 => "RS512",
            Alg::PS256 => "PS256",
            Alg::PS384 => "PS384",
            Alg::PS512 => "PS512",
            Alg::ES256 => "ES256",
            Alg::ES384 => "ES384",
            Alg::EdDSA => "EdDSA",
        }
    }

    fn bit(self) -> u16 {
        1 << (self as u16)
    }

    /// Whether a key of this material can verify this algorithm (no algorithm confusion).
    fn fits(self, m: &Material) -> bool {
        matches!(
            (self, m),
            (Alg::HS256 | Alg::HS384 | Alg::HS512, Material::Hmac(_))
                | (Alg::RS256 | Alg::RS384 | Alg::RS512 | Alg::PS256 | Alg::PS384 | Alg::PS512, Material::Rsa { .. })
                | (Alg::ES256, Material::P256(_))
                | (Alg::ES384, Material::P384(_))
                | (Alg::EdDSA, Material::Ed25519(_))
        )
    }
}

impl fmt::Display for Alg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A set of algorithms (the configuration's allowlist).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AlgSet(u16);

impl AlgSet {
    pub fn of(algs: &[Alg]) -> Self {
        AlgSet(algs.iter().fold(0, |m, a| m | a.bit()))
    }
    pub fn contains(self, a: Alg) -> bool {
        self.0 & a.bit() != 0
    }
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
}

/// Key material, by family.
#[derive(Clone)]
pub enum Material {
    /// HMAC secret, keyed for the three sizes.
    Hmac(Box<[hmac::Key; 3]>),
    /// RSA modulus and exponent (big-endian, no leading zeros).
    Rsa {
        n: Vec<u8>,
        e: Vec<u8>,
    },
    /// Uncompressed P-256 point (65 bytes).
    P256(Vec<u8>),
    /// Uncompressed P-384 point (97 bytes).
    P384(Vec<u8>),
    Ed25519(Vec<u8>),
}

impl fmt::Debug for Material {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Material::Hmac(_) => "Hmac(..)",
            Material::Rsa { .. } => "Rsa",
            Material::P256(_) => "P256",
            Material::P384(_) => "P384",
            Material::Ed25519(_) => "Ed25519",
        })
    }
}

impl Material {
    pub fn hmac(secret: &[u8]) -> Material {
        Material::Hmac(Box::new([
            hmac::Key::new(hmac::HMAC_SHA256, secret),
            hmac::Key::new(hmac::HMAC_SHA384, secret),
            hmac::Key::new(hmac::HMAC_SHA512, secret),
        ]))
    }
}

/// One verification key.
#[derive(Clone, Debug)]
pub struct Key {
    pub kid: Option<String>,
    /// The JWK's `alg`, when it names one: tokens must then use exactly it.
    pub alg: Option<Alg>,
    pub material: Material,
}

/// An immutable set of keys.
#[derive(Clone, Debug, Default)]
pub struct KeySet {
    pub keys: Vec<Key>,
}

impl KeySet {
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
    pub fn extend(&mut self, other: KeySet) {
        self.keys.extend(other.keys);
    }
}

/// Parse PEM public keys (`PUBLIC KEY` SubjectPublicKeyInfo for RSA, P-256, P-384, Ed25519;
/// `RSA PUBLIC KEY` PKCS#1).
pub fn keys_from_pem(text: &str, kid: Option<&str>) -> Result<KeySet, crate::Error> {
    let err = |m: String| crate::Error::new(crate::ErrorKind::Pem, m);
    let mut keys = Vec::new();
    for (label, der) in encoding::pem_blocks(text)? {
        let material = match label.as_str() {
            "PUBLIC KEY" => spki_material(&der)?,
            "RSA PUBLIC KEY" => {
                let (n, e) = encoding::rsa_public_key(&der).map_err(|e| err(e.into()))?;
                Material::Rsa { n, e }
            }
            "CERTIFICATE" => return Err(err("certificates are not supported: extract the public key (`openssl x509 -pubkey -noout`)".into())),
            l if l.contains("PRIVATE") => return Err(err("this is a private key: give the public key".into())),
            l => return Err(err(format!("unsupported PEM block `{l}`"))),
        };
        keys.push(Key { kid: kid.map(str::to_string), alg: None, material });
    }
    Ok(KeySet { keys })
}

fn spki_material(der: &[u8]) -> Result<Material, crate::Error> {
    let err = |m: &str| crate::Error::new(crate::ErrorKind::Pem, m);
    let (oid, param, key) = encoding::spki(der).map_err(err)?;
    if oid == encoding::OID_RSA {
        let (n, e) = encoding::rsa_public_key(key).map_err(err)?;
        return Ok(Material::Rsa { n, e });
    }
    if oid == encoding::OID_EC {
        return match param {
            Some(p) if p == encoding::OID_P256 && key.len() == 65 && key[0] == 4 => Ok(Material::P256(key.to_vec())),
            Some(p) if p == encoding::OID_P384 && key.len() == 97 && key[0] == 4 => Ok(Material::P384(key.to_vec())),
            _ => Err(err("unsupported EC key (P-256 and P-384 with uncompressed points are)")),
        };
    }
    if oid == encoding::OID_ED25519 && key.len() == 32 {
        return Ok(Material::Ed25519(key.to_vec()));
    }
    Err(err("unsupported public key type (RSA, EC P-256/P-384 and Ed25519 are)"))
}

/// Parse a JWK set (`{"keys": [...]}`), or a single JWK. Keys with `use` other than `sig`, and
/// key types Palisade does not verify, are skipped and reported in the second value. A set with
/// no usable key is an error (so a refresh that returns one keeps the last good set).
pub fn keys_from_jwks(text: &str) -> Result<(KeySet, Vec<String>), crate::Error> {
    let err = |m: String| crate::Error::new(crate::ErrorKind::Jwks, m);
    if text.len() > 4 * 1024 * 1024 {
        return Err(err("JWKS larger than 4 MiB".into()));
    }
    let v: Value = serde_json::from_str(text).map_err(|e| crate::Error::caused_by(crate::ErrorKind::Jwks, format!("JWKS is not JSON: {e}"), e))?;
    let list: Vec<&Value> = match v.get("keys") {
        Some(Value::Array(a)) => a.iter().collect(),
        Some(_) => return Err(err("JWKS `keys` is not an array".into())),
        None if v.get("kty").is_some() => vec![&v],
        None => return Err(err("JWKS has no `keys`".into())),
    };
    let mut keys = Vec::new();
    let mut skipped = Vec::new();
    for (i, k) in list.iter().enumerate() {
        match jwk(k) {
            Ok(Some(key)) => keys.push(key),
            Ok(None) => {}
            Err(e) => skipped.push(format!("key {i}: {e}")),
        }
    }
    if keys.is_empty() {
        return Err(err(match skipped.first() {
            Some(s) => format!("JWKS has no usable key ({s})"),
            None => "JWKS has no usable key".into(),
        }));
    }
    Ok((KeySet { keys }, skipped))
}

fn jwk(k: &Value) -> Result<Option<Key>, String> {
    let s = |name: &str| k.get(name).and_then(Value::as_str);
    let bytes = |name: &str| -> Result<Vec<u8>, String> {
        let v = s(name).ok_or_else(|| format!("missing `{name}`"))?;
        b64url(v.as_bytes()).map_err(|e| format!("`{name}`: {e}"))
    };
    if let Some(u) = s("use") {
        if u != "sig" {
            return Ok(None);
        }
    }
    let alg = match s("alg") {
        Some(a) => Some(Alg::parse(a).ok_or_else(|| format!("unsupported alg `{}`", a.chars().take(16).collect::<String>()))?),
        None => None,
    };
    let material = match s("kty") {
        Some("RSA") => Material::Rsa { n: encoding::strip_zeros(&bytes("n")?).to_vec(), e: encoding::strip_zeros(&bytes("e")?).to_vec() },
        Some("EC") => {
            let (x, y) = (bytes("x")?, bytes("y")?);
            let (len, p384) = match s("crv") {
                Some("P-256") => (32, false),
                Some("P-384") => (48, true),
                _ => return Err("unsupported EC curve".into()),
            };
            if x.len() != len || y.len() != len {
                return Err("EC coordinates of the wrong length".into());
            }
            let mut point = Vec::with_capacity(1 + 2 * len);
            point.push(4);
            point.extend_from_slice(&x);
            point.extend_from_slice(&y);
            if p384 {
                Material::P384(point)
            } else {
                Material::P256(point)
            }
        }
        Some("OKP") => match s("crv") {
            Some("Ed25519") => {
                let x = bytes("x")?;
                if x.len() != 32 {
                    return Err("Ed25519 key of the wrong length".into());
                }
                Material::Ed25519(x)
            }
            _ => return Err("unsupported OKP curve".into()),
        },
        Some("oct") => Material::hmac(&bytes("k")?),
        _ => return Err("unsupported key type".into()),
    };
    if let Some(a) = alg {
        if !a.fits(&material) {
            return Err(format!("alg {a} does not fit the key type"));
        }
    }
    Ok(Some(Key { kid: s("kid").map(str::to_string), alg, material }))
}

/// Why a token was refused. The messages say what failed, never what the token contained.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JwtError {
    TooLarge,
    Malformed(&'static str),
    AlgNone,
    AlgUnknown,
    AlgNotAllowed(Alg),
    /// The token names a `kid` no key has (a JWKS refetch may help).
    UnknownKid,
    /// No key of the right type for the algorithm.
    NoKey(Alg),
    BadSignature,
    Expired,
    NotYetValid,
    Issuer,
    Audience,
    MissingClaim(String),
    ClaimMismatch(String),
}

impl JwtError {
    /// The reason code of a block.
    pub fn code(&self) -> &'static str {
        match self {
            JwtError::Expired => "access.jwt_expired",
            JwtError::NotYetValid => "access.jwt_not_yet_valid",
            JwtError::Issuer | JwtError::Audience | JwtError::MissingClaim(_) | JwtError::ClaimMismatch(_) => "access.jwt_claims",
            JwtError::UnknownKid | JwtError::NoKey(_) => "access.jwt_key_unknown",
            _ => "access.jwt_invalid",
        }
    }
}

impl fmt::Display for JwtError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JwtError::TooLarge => f.write_str("token too large"),
            JwtError::Malformed(m) => write!(f, "malformed token: {m}"),
            JwtError::AlgNone => f.write_str("unsigned tokens (alg none) are refused"),
            JwtError::AlgUnknown => f.write_str("unsupported algorithm"),
            JwtError::AlgNotAllowed(a) => write!(f, "algorithm {a} is not allowed"),
            JwtError::UnknownKid => f.write_str("unknown key id"),
            JwtError::NoKey(a) => write!(f, "no key for algorithm {a}"),
            JwtError::BadSignature => f.write_str("invalid signature"),
            JwtError::Expired => f.write_str("token expired"),
            JwtError::NotYetValid => f.write_str("token not yet valid"),
            JwtError::Issuer => f.write_str("wrong issuer"),
            JwtError::Audience => f.write_str("wrong audience"),
            JwtError::MissingClaim(c) => write!(f, "missing claim `{c}`"),
            JwtError::ClaimMismatch(c) => write!(f, "claim `{c}` does not match"),
        }
    }
}

/// Claim checks applied after the signature.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClaimRules {
    /// Seconds of clock skew tolerated on `exp` and `nbf`.
    pub leeway: u64,
    /// Accepted issuers (any of them); empty = not checked.
    pub issuers: Vec<String>,
    /// Accepted audiences (the token's `aud`, a string or a list, must hold one); empty = not
    /// checked.
    pub audiences: Vec<String>,
    /// Claims that must be present.
    pub required: Vec<String>,
    /// Claims that must equal a value.
    pub equals: Vec<(String, Value)>,
    /// Claims that must contain a value: a list holding it, or a space-separated string with
    /// it as a word.
    pub contains: Vec<(String, String)>,
}

/// A verified token.
#[derive(Clone, Debug, PartialEq)]
pub struct Verified {
    pub alg: Alg,
    pub claims: Map<String, Value>,
    /// `exp` and `nbf`, read once: a cached token only needs its times checked again.
    exp: Option<f64>,
    nbf: Option<f64>,
    scopes: Vec<String>,
}

impl Verified {
    /// Build from claims that passed [`check_claims`].
    fn new(alg: Alg, claims: Map<String, Value>) -> Verified {
        let mut scopes = Vec::new();
        for name in ["scope", "scp"] {
            match claims.get(name) {
                Some(Value::String(s)) => scopes.extend(s.split_ascii_whitespace().map(str::to_string)),
                Some(Value::Array(a)) => scopes.extend(a.iter().filter_map(Value::as_str).map(str::to_string)),
                _ => {}
            }
        }
        let exp = claims.get("exp").and_then(Value::as_f64);
        let nbf = claims.get("nbf").and_then(Value::as_f64);
        Verified { alg, claims, exp, nbf, scopes }
    }

    /// The time claims against `now` (what can change for a token verified earlier; the other
    /// claim checks depend only on the token and the configuration it was verified with).
    pub fn check_time(&self, leeway: u64, now: u64) -> Result<(), JwtError> {
        let (now, leeway) = (now as f64, leeway as f64);
        if self.exp.is_some_and(|exp| now - leeway >= exp) {
            return Err(JwtError::Expired);
        }
        if self.nbf.is_some_and(|nbf| now + leeway < nbf) {
            return Err(JwtError::NotYetValid);
        }
        Ok(())
    }

    pub fn claim_str(&self, name: &str) -> Option<&str> {
        self.claims.get(name).and_then(Value::as_str)
    }

    /// Scopes from `scope` (space-separated) and `scp` (list or space-separated).
    pub fn scopes(&self) -> &[String] {
        &self.scopes
    }
}

/// The header and signing input of a parsed (not yet verified) token.
struct Parsed<'t> {
    alg: Alg,
    kid: Option<String>,
    signing_input: &'t [u8],
    payload_b64: &'t [u8],
    signature: Vec<u8>,
}

fn parse(token: &str, max_len: usize) -> Result<Parsed<'_>, JwtError> {
    if token.len() > max_len {
        return Err(JwtError::TooLarge);
    }
    let b = token.as_bytes();
    let d1 = b.iter().position(|&c| c == b'.').ok_or(JwtError::Malformed("not three parts"))?;
    let d2 = d1 + 1 + b[d1 + 1..].iter().position(|&c| c == b'.').ok_or(JwtError::Malformed("not three parts"))?;
    if b[d2 + 1..].contains(&b'.') {
        return Err(JwtError::Malformed("not three parts (JWE is not supported)"));
    }
    let header = b64url(&b[..d1]).map_err(|_| JwtError::Malformed("header is not base64url"))?;
    let header: Map<String, Value> = serde_json::from_slice(&header).map_err(|_| JwtError::Malformed("header is not a JSON object"))?;
    let alg = match header.get("alg") {
        Some(Value::String(a)) if a.eq_ignore_ascii_case("none") => return Err(JwtError::AlgNone),
        Some(Value::String(a)) => Alg::parse(a).ok_or(JwtError::AlgUnknown)?,
        _ => return Err(JwtError::Malformed("header has no `alg`")),
    };
    if header.contains_key("crit") {
        return Err(JwtError::Malformed("critical header extensions are not supported"));
    }
    let kid = match header.get("kid") {
        Some(Value::String(k)) => Some(k.clone()),
        None | Some(Value::Null) => None,
        Some(_) => return Err(JwtError::Malformed("`kid` is not a string")),
    };
    let signature = b64url(&b[d2 + 1..]).map_err(|_| JwtError::Malformed("signature is not base64url"))?;
    Ok(Parsed { alg, kid, signing_input: &b[..d2], payload_b64: &b[d1 + 1..d2], signature })
}

fn check_signature(p: &Parsed<'_>, m: &Material) -> bool {
    let msg = p.signing_input;
    let sig = &p.signature[..];
    match (p.alg, m) {
        (Alg::HS256, Material::Hmac(k)) => hmac::verify(&k[0], msg, sig).is_ok(),
        (Alg::HS384, Material::Hmac(k)) => hmac::verify(&k[1], msg, sig).is_ok(),
        (Alg::HS512, Material::Hmac(k)) => hmac::verify(&k[2], msg, sig).is_ok(),
        (alg, Material::Rsa { n, e }) => {
            let params: &signature::RsaParameters = match alg {
                Alg::RS256 => &signature::RSA_PKCS1_2048_8192_SHA256,
                Alg::RS384 => &signature::RSA_PKCS1_2048_8192_SHA384,
                Alg::RS512 => &signature::RSA_PKCS1_2048_8192_SHA512,
                Alg::PS256 => &signature::RSA_PSS_2048_8192_SHA256,
                Alg::PS384 => &signature::RSA_PSS_2048_8192_SHA384,
                Alg::PS512 => &signature::RSA_PSS_2048_8192_SHA512,
                _ => return false,
            };
            signature::RsaPublicKeyComponents { n: &n[..], e: &e[..] }.verify(params, msg, sig).is_ok()
        }
        (Alg::ES256, Material::P256(pt)) => signature::UnparsedPublicKey::new(&signature::ECDSA_P256_SHA256_FIXED, pt).verify(msg, sig).is_ok(),
        (Alg::ES384, Material::P384(pt)) => signature::UnparsedPublicKey::new(&signature::ECDSA_P384_SHA384_FIXED, pt).verify(msg, sig).is_ok(),
        (Alg::EdDSA, Material::Ed25519(pt)) => signature::UnparsedPublicKey::new(&signature::ED25519, pt).verify(msg, sig).is_ok(),
        _ => false,
    }
}

/// Keys without a `kid` tried for a token without one, at most (bounds the work a token can
/// cause).
const MAX_KEYS_TRIED: usize = 8;

/// Verify `token` against `keys` with the allowed algorithms, then its claims at `now_secs`
/// (seconds since the Unix epoch). `max_len` bounds the token size.
pub fn verify(token: &str, keys: &KeySet, allowed: AlgSet, rules: &ClaimRules, now_secs: u64, max_len: usize) -> Result<Verified, JwtError> {
    let p = parse(token, max_len)?;
    if !allowed.contains(p.alg) {
        return Err(JwtError::AlgNotAllowed(p.alg));
    }
    let mut ok = false;
    let mut candidates = 0;
    let mut kid_known = false;
    for k in &keys.keys {
        if let Some(kid) = &p.kid {
            if k.kid.as_deref() != Some(kid.as_str()) {
                continue;
            }
            kid_known = true;
        }
        if !p.alg.fits(&k.material) || k.alg.is_some_and(|a| a != p.alg) {
            continue;
        }
        candidates += 1;
        if check_signature(&p, &k.material) {
            ok = true;
            break;
        }
        if candidates >= MAX_KEYS_TRIED {
            break;
        }
    }
    if !ok {
        return Err(if p.kid.is_some() && !kid_known {
            JwtError::UnknownKid
        } else if candidates == 0 {
            JwtError::NoKey(p.alg)
        } else {
            JwtError::BadSignature
        });
    }
    let payload = b64url(p.payload_b64).map_err(|_| JwtError::Malformed("payload is not base64url"))?;
    let claims: Map<String, Value> = serde_json::from_slice(&payload).map_err(|_| JwtError::Malformed("payload is not a JSON object"))?;
    check_claims(&claims, rules, now_secs)?;
    Ok(Verified::new(p.alg, claims))
}

/// The `kid` of a token, if it parses (for diagnostics; not verified).
pub fn kid_of(token: &str) -> Option<String> {
    parse(token, usize::MAX).ok()?.kid
}

fn numeric(v: &Value, name: &str) -> Result<f64, JwtError> {
    v.as_f64().ok_or_else(|| JwtError::ClaimMismatch(name.to_string()))
}

/// The claim checks alone (also re-run on cached verified tokens, whose `exp` moves closer).
pub fn check_claims(c: &Map<String, Value>, r: &ClaimRules, now: u64) -> Result<(), JwtError> {
    let now = now as f64;
    let leeway = r.leeway as f64;
    if let Some(exp) = c.get("exp") {
        if now - leeway >= numeric(exp, "exp")? {
            return Err(JwtError::Expired);
        }
    }
    if let Some(nbf) = c.get("nbf") {
        if now + leeway < numeric(nbf, "nbf")? {
            return Err(JwtError::NotYetValid);
        }
    }
    if !r.issuers.is_empty() {
        match c.get("iss").and_then(Value::as_str) {
            Some(iss) if r.issuers.iter().any(|i| i == iss) => {}
            _ => return Err(JwtError::Issuer),
        }
    }
    if !r.audiences.is_empty() {
        let ok = match c.get("aud") {
            Some(Value::String(a)) => r.audiences.iter().any(|x| x == a),
            Some(Value::Array(list)) => list.iter().filter_map(Value::as_str).any(|a| r.audiences.iter().any(|x| x == a)),
            _ => false,
        };
        if !ok {
            return Err(JwtError::Audience);
        }
    }
    for name in &r.required {
        if c.get(name).is_none_or(Value::is_null) {
            return Err(JwtError::MissingClaim(name.clone()));
        }
    }
    for (name, want) in &r.equals {
        match c.get(name) {
            None => return Err(JwtError::MissingClaim(name.clone())),
            Some(v) if v == want => {}
            Some(_) => return Err(JwtError::ClaimMismatch(name.clone())),
        }
    }
    for (name, want) in &r.contains {
        let ok = match c.get(name) {
            None => return Err(JwtError::MissingClaim(name.clone())),
            Some(Value::Array(a)) => a.iter().any(|v| v.as_str() == Some(want.as_str())),
            Some(Value::String(s)) => s.split_ascii_whitespace().any(|w| w == want),
            Some(_) => false,
        };
        if !ok {
            return Err(JwtError::ClaimMismatch(name.clone()));
        }
    }
    Ok(())
}

/// A claim value rendered for an upstream header: strings as they are, numbers and booleans
/// as JSON, lists of those comma-separated; objects are not forwarded.
pub fn claim_header_value(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Array(a) => {
            let parts: Option<Vec<String>> = a.iter().map(|x| if x.is_array() { None } else { claim_header_value(x) }).collect();
            parts.map(|p| p.join(","))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests;
