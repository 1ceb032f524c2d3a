//! TLS termination with rustls: certificates from PEM files, chosen by SNI (exact names, then
//! `*.domain` wildcards, then the first certificate as the default), ALPN `h2` and `http/1.1`.

use std::collections::HashMap;
use std::sync::Arc;

use palisade_config::{CertConfig, ConfigError, TlsConfig};
use rustls::crypto::ring::sign::any_supported_type;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

#[derive(Debug)]
struct SniResolver {
    exact: HashMap<String, Arc<CertifiedKey>>,
    wildcard: Vec<(String, Arc<CertifiedKey>)>,
    default: Arc<CertifiedKey>,
}

impl ResolvesServerCert for SniResolver {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let Some(name) = hello.server_name() else { return Some(self.default.clone()) };
        let name = name.to_ascii_lowercase();
        if let Some(k) = self.exact.get(&name) {
            return Some(k.clone());
        }
        if let Some((_, rest)) = name.split_once('.') {
            let suffix = format!(".{rest}");
            if let Some((_, k)) = self.wildcard.iter().find(|(s, _)| *s == suffix) {
                return Some(k.clone());
            }
        }
        Some(self.default.clone())
    }
}

/// Build a rustls server configuration; errors point at the configured file.
pub fn server_config(tls: &TlsConfig, http2: bool, file: &str) -> Result<Arc<rustls::ServerConfig>, Vec<ConfigError>> {
    let mut errors = Vec::new();
    let mut keys = Vec::new();
    for c in &tls.certificates {
        match load_cert(c, file) {
            Ok(k) => keys.push((c, k)),
            Err(e) => errors.push(e),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let mut exact = HashMap::new();
    let mut wildcard = Vec::new();
    for (c, key) in &keys {
        let names = if c.server_names.is_empty() { cert_names(&key.cert[0]) } else { c.server_names.clone() };
        for n in names {
            match n.strip_prefix('*') {
                Some(suffix) => wildcard.push((suffix.to_string(), key.clone())),
                None => {
                    exact.entry(n).or_insert_with(|| key.clone());
                }
            }
        }
    }
    let resolver = SniResolver { exact, wildcard, default: keys[0].1.clone() };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut cfg = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| vec![ConfigError::file(file, format!("TLS setup: {e}"))])?
        .with_no_client_auth()
        .with_cert_resolver(Arc::new(resolver));
    cfg.alpn_protocols = if http2 { vec![b"h2".to_vec(), b"http/1.1".to_vec()] } else { vec![b"http/1.1".to_vec()] };
    Ok(Arc::new(cfg))
}

fn load_cert(c: &CertConfig, file: &str) -> Result<Arc<CertifiedKey>, ConfigError> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&c.cert.value)
        .map_err(|e| c.cert.loc.error(file, format!("cannot read certificate {}: {e}", c.cert.value.display())))?
        .collect::<Result<_, _>>()
        .map_err(|e| c.cert.loc.error(file, format!("invalid certificate PEM in {}: {e}", c.cert.value.display())))?;
    if certs.is_empty() {
        return Err(c.cert.loc.error(file, format!("no certificate found in {}", c.cert.value.display())));
    }
    let key =
        PrivateKeyDer::from_pem_file(&c.key.value).map_err(|e| c.key.loc.error(file, format!("cannot read private key {}: {e}", c.key.value.display())))?;
    let signing = any_supported_type(&key).map_err(|e| c.key.loc.error(file, format!("unsupported private key in {}: {e}", c.key.value.display())))?;
    let ck = CertifiedKey::new(certs, signing);
    if let Err(e) = ck.keys_match() {
        if !matches!(e, rustls::Error::InconsistentKeys(rustls::InconsistentKeys::Unknown)) {
            return Err(c.key.loc.error(file, format!("private key {} does not match certificate {}: {e}", c.key.value.display(), c.cert.value.display())));
        }
    }
    Ok(Arc::new(ck))
}

/// DNS names from the certificate's subjectAltName extension (minimal DER walk: good enough to
/// index SNI; rustls still validates nothing here because we are the server).
fn cert_names(cert: &CertificateDer<'_>) -> Vec<String> {
    // OID 2.5.29.17 (subjectAltName) = 06 03 55 1d 11
    let der = cert.as_ref();
    let oid = [0x06, 0x03, 0x55, 0x1d, 0x11];
    let Some(pos) = der.windows(oid.len()).position(|w| w == oid) else { return Vec::new() };
    let mut i = pos + oid.len();
    // Optional critical BOOLEAN
    if der.get(i) == Some(&0x01) {
        i += 3;
    }
    // OCTET STRING wrapping the GeneralNames SEQUENCE
    if der.get(i) != Some(&0x04) {
        return Vec::new();
    }
    let Some((_, after_len)) = der_len(der, i + 1) else { return Vec::new() };
    i = after_len;
    if der.get(i) != Some(&0x30) {
        return Vec::new();
    }
    let Some((seq_len, mut j)) = der_len(der, i + 1) else { return Vec::new() };
    let end = (j + seq_len).min(der.len());
    let mut names = Vec::new();
    while j < end {
        let tag = der[j];
        let Some((len, start)) = der_len(der, j + 1) else { break };
        if tag == 0x82 {
            if let Some(bytes) = der.get(start..start + len) {
                if let Ok(s) = std::str::from_utf8(bytes) {
                    names.push(s.to_ascii_lowercase());
                }
            }
        }
        j = start + len;
    }
    names
}

fn der_len(der: &[u8], at: usize) -> Option<(usize, usize)> {
    let first = *der.get(at)?;
    if first < 0x80 {
        return Some((first as usize, at + 1));
    }
    let n = (first & 0x7f) as usize;
    if n == 0 || n > 4 {
        return None;
    }
    let mut len = 0usize;
    for k in 0..n {
        len = (len << 8) | *der.get(at + 1 + k)? as usize;
    }
    Some((len, at + 1 + n))
}
