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

/// DNS names from the certificate's subjectAltName extension, to index SNI.
fn cert_names(cert: &CertificateDer<'_>) -> Vec<String> {
    match webpki::EndEntityCert::try_from(cert) {
        Ok(ee) => ee.valid_dns_names().map(|n| n.to_ascii_lowercase()).collect(),
        Err(_) => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use palisade_config::{Loc, Located};
    use std::path::PathBuf;

    fn write_cert(dir: &std::path::Path, name: &str, sans: &[&str]) -> (PathBuf, PathBuf) {
        let ck = rcgen::generate_simple_self_signed(sans.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap();
        let cert = dir.join(format!("{name}.pem"));
        let key = dir.join(format!("{name}.key"));
        std::fs::write(&cert, ck.cert.pem()).unwrap();
        std::fs::write(&key, ck.signing_key.serialize_pem()).unwrap();
        (cert, key)
    }

    fn cfg(cert: PathBuf, key: PathBuf) -> CertConfig {
        let loc = |line| Loc { line, col: 5, path: "listen[0].tls.cert".into() };
        CertConfig { cert: Located { value: cert, loc: loc(3) }, key: Located { value: key, loc: loc(4) }, server_names: vec![] }
    }

    fn tempdir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("palisade-tls-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn san_names_are_indexed() {
        let dir = tempdir("san");
        let (c, _) = write_cert(&dir, "a", &["a.example", "*.b.example"]);
        let der = CertificateDer::from_pem_file(&c).unwrap();
        assert_eq!(cert_names(&der), ["a.example", "*.b.example"]);
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn builds_with_alpn_and_reports_bad_files_with_location() {
        let dir = tempdir("bad");
        let (c, k) = write_cert(&dir, "a", &["a.example"]);
        let (_, k2) = write_cert(&dir, "b", &["b.example"]);
        let ok = server_config(&TlsConfig { certificates: vec![cfg(c.clone(), k.clone())] }, true, "x.yaml").unwrap();
        assert_eq!(ok.alpn_protocols, vec![b"h2".to_vec(), b"http/1.1".to_vec()]);
        let missing = server_config(&TlsConfig { certificates: vec![cfg(dir.join("nope.pem"), k.clone())] }, false, "x.yaml").unwrap_err();
        assert_eq!(missing[0].line, 3);
        assert!(missing[0].message.contains("cannot read certificate"), "{}", missing[0]);
        let mismatch = server_config(&TlsConfig { certificates: vec![cfg(c, k2)] }, false, "x.yaml").unwrap_err();
        assert!(mismatch[0].message.contains("does not match"), "{}", mismatch[0]);
        let _ = std::fs::remove_dir_all(dir);
    }
}
