//! Token minting for tests and benches (this crate's, the end-to-end tests', the criterion
//! bench): key pairs generated on the spot with `openssl` (RSA, EC, Ed25519) or from a secret
//! (HMAC), signed with `ring`. Not used by the proxy.

use std::io::Write;
use std::process::{Command, Stdio};

use ring::rand::SystemRandom;
use ring::signature::{self, KeyPair};
use serde_json::{json, Value};

use crate::encoding::{self, b64url_encode};
use crate::jwt::Alg;

/// A signing key with its public half in every form the configuration accepts.
pub struct TestKey {
    pub alg: Alg,
    /// PKCS#8 DER private key (empty for HMAC).
    pkcs8: Vec<u8>,
    secret: Vec<u8>,
    /// PEM SubjectPublicKeyInfo (empty for HMAC).
    pub public_pem: String,
}

fn openssl(args: &[&str], input: Option<&[u8]>) -> Result<Vec<u8>, String> {
    let mut child = Command::new("openssl")
        .args(args)
        .stdin(if input.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("openssl: {e}"))?;
    if let (Some(data), Some(mut stdin)) = (input, child.stdin.take()) {
        stdin.write_all(data).map_err(|e| e.to_string())?;
    }
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!("openssl {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr)));
    }
    Ok(out.stdout)
}

/// Whether `openssl` can be run (tests that need RSA/EC keys skip with a reason otherwise).
pub fn openssl_available() -> bool {
    Command::new("openssl").arg("version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success())
}

impl TestKey {
    pub fn hmac(alg: Alg, secret: &[u8]) -> TestKey {
        TestKey { alg, pkcs8: Vec::new(), secret: secret.to_vec(), public_pem: String::new() }
    }

    /// A fresh key pair for `alg` (RSA 2048 for RS*/PS*, P-256/P-384 for ES*, Ed25519).
    pub fn generate(alg: Alg) -> Result<TestKey, crate::Error> {
        let gen: &[&str] = match alg {
            Alg::RS256 | Alg::RS384 | Alg::RS512 | Alg::PS256 | Alg::PS384 | Alg::PS512 => {
                &["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-outform", "DER"]
            }
            Alg::ES256 => &["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-outform", "DER"],
            Alg::ES384 => &["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-384", "-outform", "DER"],
            Alg::EdDSA => &["genpkey", "-algorithm", "ed25519", "-outform", "DER"],
            _ => return Ok(TestKey::hmac(alg, b"test-secret-of-32-bytes-or-more!")),
        };
        // `genpkey -outform DER` writes the traditional form for some key types: normalise.
        let keygen = |m: String| crate::Error::new(crate::ErrorKind::KeyGen, m);
        let raw = openssl(gen, None).map_err(keygen)?;
        let pkcs8 = openssl(&["pkcs8", "-topk8", "-nocrypt", "-inform", "DER", "-outform", "DER"], Some(&raw)).map_err(keygen)?;
        let public_pem = openssl(&["pkey", "-inform", "DER", "-pubout"], Some(&pkcs8)).map_err(keygen)?;
        let public_pem =
            String::from_utf8(public_pem).map_err(|e| crate::Error::caused_by(crate::ErrorKind::KeyGen, "openssl wrote a public key that is not UTF-8", e))?;
        Ok(TestKey { alg, pkcs8, secret: Vec::new(), public_pem })
    }

    /// The same key pair used with another algorithm of its family (RS256 key as PS512...).
    pub fn with_alg(&self, alg: Alg) -> TestKey {
        TestKey { alg, pkcs8: self.pkcs8.clone(), secret: self.secret.clone(), public_pem: self.public_pem.clone() }
    }

    pub fn sign(&self, input: &[u8]) -> Vec<u8> {
        let rng = SystemRandom::new();
        match self.alg {
            Alg::HS256 => ring::hmac::sign(&ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &self.secret), input).as_ref().to_vec(),
            Alg::HS384 => ring::hmac::sign(&ring::hmac::Key::new(ring::hmac::HMAC_SHA384, &self.secret), input).as_ref().to_vec(),
            Alg::HS512 => ring::hmac::sign(&ring::hmac::Key::new(ring::hmac::HMAC_SHA512, &self.secret), input).as_ref().to_vec(),
            Alg::RS256 | Alg::RS384 | Alg::RS512 | Alg::PS256 | Alg::PS384 | Alg::PS512 => {
                let pad: &'static dyn signature::RsaEncoding = match self.alg {
                    Alg::RS256 => &signature::RSA_PKCS1_SHA256,
                    Alg::RS384 => &signature::RSA_PKCS1_SHA384,
                    Alg::RS512 => &signature::RSA_PKCS1_SHA512,
                    Alg::PS256 => &signature::RSA_PSS_SHA256,
                    Alg::PS384 => &signature::RSA_PSS_SHA384,
                    _ => &signature::RSA_PSS_SHA512,
                };
                let kp = signature::RsaKeyPair::from_pkcs8(&self.pkcs8).expect("RSA key");
                let mut sig = vec![0; kp.public().modulus_len()];
                kp.sign(pad, &rng, input, &mut sig).expect("RSA signature");
                sig
            }
            Alg::ES256 | Alg::ES384 => {
                let a = if self.alg == Alg::ES256 { &signature::ECDSA_P256_SHA256_FIXED_SIGNING } else { &signature::ECDSA_P384_SHA384_FIXED_SIGNING };
                let kp = signature::EcdsaKeyPair::from_pkcs8(a, &self.pkcs8, &rng).expect("EC key");
                kp.sign(&rng, input).expect("EC signature").as_ref().to_vec()
            }
            Alg::EdDSA => signature::Ed25519KeyPair::from_pkcs8_maybe_unchecked(&self.pkcs8).expect("Ed25519 key").sign(input).as_ref().to_vec(),
        }
    }

    /// A compact JWS of `claims` with header `{"alg", "typ": "JWT", "kid"?}`.
    pub fn token(&self, claims: &Value, kid: Option<&str>) -> String {
        let mut header = json!({"alg": self.alg.name(), "typ": "JWT"});
        if let Some(k) = kid {
            header["kid"] = json!(k);
        }
        self.token_with_header(&header, claims)
    }

    pub fn token_with_header(&self, header: &Value, claims: &Value) -> String {
        let input = format!("{}.{}", b64url_encode(header.to_string().as_bytes()), b64url_encode(claims.to_string().as_bytes()));
        let sig = self.sign(input.as_bytes());
        format!("{input}.{}", b64url_encode(&sig))
    }

    /// The public key as a JWK (`kid` and `alg` set).
    pub fn jwk(&self, kid: &str) -> Value {
        let mut v = match self.alg {
            Alg::HS256 | Alg::HS384 | Alg::HS512 => json!({"kty": "oct", "k": b64url_encode(&self.secret)}),
            Alg::EdDSA => {
                let kp = signature::Ed25519KeyPair::from_pkcs8_maybe_unchecked(&self.pkcs8).expect("Ed25519 key");
                json!({"kty": "OKP", "crv": "Ed25519", "x": b64url_encode(kp.public_key().as_ref())})
            }
            Alg::ES256 | Alg::ES384 => {
                let (p384, a) = if self.alg == Alg::ES256 {
                    (false, &signature::ECDSA_P256_SHA256_FIXED_SIGNING)
                } else {
                    (true, &signature::ECDSA_P384_SHA384_FIXED_SIGNING)
                };
                let kp = signature::EcdsaKeyPair::from_pkcs8(a, &self.pkcs8, &SystemRandom::new()).expect("EC key");
                let pt = kp.public_key().as_ref();
                let l = (pt.len() - 1) / 2;
                json!({"kty": "EC", "crv": if p384 { "P-384" } else { "P-256" }, "x": b64url_encode(&pt[1..1 + l]), "y": b64url_encode(&pt[1 + l..])})
            }
            _ => {
                let blocks = encoding::pem_blocks(&self.public_pem).expect("PEM");
                let (_, _, key) = encoding::spki(&blocks[0].1).expect("SPKI");
                let (n, e) = encoding::rsa_public_key(key).expect("RSA key");
                json!({"kty": "RSA", "n": b64url_encode(&n), "e": b64url_encode(&e)})
            }
        };
        v["kid"] = json!(kid);
        v["alg"] = json!(self.alg.name());
        v["use"] = json!("sig");
        v
    }
}
