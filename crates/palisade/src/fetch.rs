//! A small blocking HTTP(S) GET for documents the configuration points at (OpenAPI specs by
//! URL; later JWKS). Runs on load and refresh threads, never on a request path. HTTP/1.0 with
//! `Connection: close` (the body ends at EOF, no chunking), rustls with the system's CA
//! bundle, bounded in time, size and redirects.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName};

use crate::{Error, ErrorKind};

/// Limits of one fetch.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub timeout: Duration,
    pub max_bytes: usize,
    pub max_redirects: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { timeout: Duration::from_secs(10), max_bytes: 32 * 1024 * 1024, max_redirects: 3 }
    }
}

/// Fetch `url`, following redirects; the body must be UTF-8 text. The message of an error
/// starts with the URL that failed (the last one, after redirects).
pub fn get(url: &str, headers: &[(String, String)], limits: Limits) -> Result<String, Error> {
    let deadline = Instant::now() + limits.timeout;
    let mut url = url.to_string();
    for _ in 0..=limits.max_redirects {
        let (status, location, body) = get_once(&url, headers, limits.max_bytes, deadline)?;
        match status {
            200..=299 => return String::from_utf8(body).map_err(|e| caused(format!("{url}: the document is not valid UTF-8"), e)),
            301 | 302 | 303 | 307 | 308 => {
                let loc = location.ok_or_else(|| fail(format!("{url}: redirect without a Location")))?;
                url = join(&url, &loc);
            }
            _ => return Err(fail(format!("{url}: HTTP status {status}"))),
        }
    }
    Err(fail(format!("{url}: more than {} redirects", limits.max_redirects)))
}

struct Parsed<'a> {
    tls: bool,
    host: &'a str,
    port: u16,
    path: &'a str,
}

fn parse(url: &str) -> Result<Parsed<'_>, Error> {
    let (tls, rest) = if let Some(r) = strip_prefix_ci(url, "https://") {
        (true, r)
    } else if let Some(r) = strip_prefix_ci(url, "http://") {
        (false, r)
    } else {
        return Err(fail(format!("{url}: only http:// and https:// URLs can be fetched")));
    };
    let (authority, path) = match rest.find(['/', '?']) {
        Some(i) if rest.as_bytes()[i] == b'/' => (&rest[..i], &rest[i..]),
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    if authority.contains('@') {
        return Err(fail(format!("{url}: credentials in the URL are not supported; use `headers`")));
    }
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) if !h.ends_with(']') || authority.starts_with('[') => match p.parse::<u16>() {
            Ok(p) => (h, p),
            Err(_) if authority.starts_with('[') && authority.ends_with(']') => (authority, if tls { 443 } else { 80 }),
            Err(_) => return Err(fail(format!("{url}: invalid port"))),
        },
        _ => (authority, if tls { 443 } else { 80 }),
    };
    if host.is_empty() {
        return Err(fail(format!("{url}: no host")));
    }
    Ok(Parsed { tls, host, port, path })
}

fn strip_prefix_ci<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    (s.len() >= prefix.len() && s[..prefix.len()].eq_ignore_ascii_case(prefix)).then(|| &s[prefix.len()..])
}

/// Resolve a `Location` against the URL that sent it.
fn join(base: &str, loc: &str) -> String {
    if strip_prefix_ci(loc, "http://").is_some() || strip_prefix_ci(loc, "https://").is_some() {
        return loc.to_string();
    }
    let scheme_end = base.find("://").map_or(0, |i| i + 3);
    let origin_end = base[scheme_end..].find('/').map_or(base.len(), |i| scheme_end + i);
    if loc.starts_with('/') {
        format!("{}{loc}", &base[..origin_end])
    } else {
        let dir_end = base.rfind('/').filter(|&i| i >= origin_end).map_or(base.len(), |i| i + 1);
        let sep = if dir_end == base.len() && !base.ends_with('/') { "/" } else { "" };
        format!("{}{sep}{loc}", &base[..dir_end])
    }
}

fn remaining(deadline: Instant) -> Result<Duration, Error> {
    deadline.checked_duration_since(Instant::now()).filter(|d| !d.is_zero()).ok_or_else(|| fail("timed out".to_string()))
}

/// An error of a fetch, with nothing underneath.
fn fail(message: String) -> Error {
    Error::new(ErrorKind::Fetch, message)
}

/// An error of a fetch caused by `cause`.
fn caused(message: String, cause: impl std::error::Error + Send + Sync + 'static) -> Error {
    Error::caused_by(ErrorKind::Fetch, message, cause)
}

fn get_once(url: &str, headers: &[(String, String)], max: usize, deadline: Instant) -> Result<(u16, Option<String>, Vec<u8>), Error> {
    let p = parse(url)?;
    let bare_host = p.host.trim_start_matches('[').trim_end_matches(']');
    let addr = (bare_host, p.port)
        .to_socket_addrs()
        .map_err(|e| caused(format!("{url}: cannot resolve {}: {e}", p.host), e))?
        .next()
        .ok_or_else(|| fail(format!("{url}: no address for {}", p.host)))?;
    let tcp = TcpStream::connect_timeout(&addr, remaining(deadline).map_err(|e| e.context(url))?).map_err(|e| caused(format!("{url}: connect: {e}"), e))?;
    let mut req =
        format!("GET {} HTTP/1.0\r\nHost: {}\r\nUser-Agent: palisade/{}\r\nAccept: */*\r\nConnection: close\r\n", p.path, p.host, env!("CARGO_PKG_VERSION"));
    for (k, v) in headers {
        if v.contains(['\r', '\n']) {
            return Err(fail(format!("{url}: header {k} contains a line break")));
        }
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    let raw = if p.tls {
        let config = client_config().map_err(|e| e.context(url))?;
        let name = ServerName::try_from(bare_host.to_string()).map_err(|e| caused(format!("{url}: invalid host name"), e))?;
        let conn = rustls::ClientConnection::new(config, name).map_err(|e| caused(format!("{url}: {e}"), e))?;
        let mut s = rustls::StreamOwned::new(conn, tcp);
        exchange(&mut s, req.as_bytes(), max, deadline, |s, d| s.sock.set_read_timeout(Some(d)))
    } else {
        let mut s = tcp;
        exchange(&mut s, req.as_bytes(), max, deadline, |s, d| s.set_read_timeout(Some(d)))
    }
    .map_err(|e| e.context(url))?;
    let mut hs = [httparse::EMPTY_HEADER; 64];
    let mut resp = httparse::Response::new(&mut hs);
    let head_len = match resp.parse(&raw) {
        Ok(httparse::Status::Complete(n)) => n,
        _ => return Err(fail(format!("{url}: invalid HTTP response"))),
    };
    let status = resp.code.unwrap_or(0);
    let location = resp.headers.iter().find(|h| h.name.eq_ignore_ascii_case("location")).and_then(|h| std::str::from_utf8(h.value).ok()).map(str::to_string);
    if resp.headers.iter().any(|h| h.name.eq_ignore_ascii_case("transfer-encoding")) {
        return Err(fail(format!("{url}: chunked response to an HTTP/1.0 request")));
    }
    Ok((status, location, raw[head_len..].to_vec()))
}

fn exchange<S: Read + Write>(
    s: &mut S,
    req: &[u8],
    max: usize,
    deadline: Instant,
    set_timeout: impl Fn(&S, Duration) -> std::io::Result<()>,
) -> Result<Vec<u8>, Error> {
    set_timeout(s, remaining(deadline)?).map_err(|e| caused(e.to_string(), e))?;
    s.write_all(req).map_err(|e| caused(format!("send: {e}"), e))?;
    s.flush().map_err(|e| caused(format!("send: {e}"), e))?;
    let mut out = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    loop {
        set_timeout(s, remaining(deadline)?).map_err(|e| caused(e.to_string(), e))?;
        match s.read(&mut buf) {
            Ok(0) => return Ok(out),
            Ok(n) => {
                out.extend_from_slice(&buf[..n]);
                if out.len() > max + 64 * 1024 {
                    return Err(fail(format!("document larger than {max} bytes")));
                }
            }
            // Servers that close without TLS close_notify: the body ended at EOF anyway.
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof && !out.is_empty() => return Ok(out),
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => return Err(caused("timed out".into(), e)),
            Err(e) => return Err(caused(format!("receive: {e}"), e)),
        }
    }
}

/// The system CA bundle (`SSL_CERT_FILE`, else Debian's `/etc/ssl/certs/ca-certificates.crt`).
fn client_config() -> Result<Arc<rustls::ClientConfig>, Error> {
    let path = std::env::var("SSL_CERT_FILE").unwrap_or_else(|_| "/etc/ssl/certs/ca-certificates.crt".to_string());
    let mut roots = rustls::RootCertStore::empty();
    let certs = CertificateDer::pem_file_iter(&path).map_err(|e| fail(format!("cannot read CA bundle {path}: {e}")))?;
    for c in certs.flatten() {
        let _ = roots.add(c);
    }
    if roots.is_empty() {
        return Err(fail(format!("no CA certificates in {path}")));
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| caused(e.to_string(), e))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_split() {
        let p = parse("https://specs.example:8443/v1/api.yaml?x=1").unwrap();
        assert_eq!((p.tls, p.host, p.port, p.path), (true, "specs.example", 8443, "/v1/api.yaml?x=1"));
        let p = parse("http://[::1]/a").unwrap();
        assert_eq!((p.tls, p.host, p.port, p.path), (false, "[::1]", 80, "/a"));
        let p = parse("HTTP://h").unwrap();
        assert_eq!((p.host, p.port, p.path), ("h", 80, "/"));
        assert!(parse("ftp://h/x").is_err());
        assert!(parse("http://user:pw@h/x").is_err());
        assert!(parse("http://h:notaport/x").is_err());
    }

    #[test]
    fn redirects_resolve_against_the_base() {
        assert_eq!(join("http://h/a/b.yaml", "/c.yaml"), "http://h/c.yaml");
        assert_eq!(join("http://h/a/b.yaml", "c.yaml"), "http://h/a/c.yaml");
        assert_eq!(join("http://h", "c.yaml"), "http://h/c.yaml");
        assert_eq!(join("http://h/a", "https://o/x"), "https://o/x");
    }

    fn serve_once(response: &'static [u8]) -> String {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        std::thread::spawn(move || {
            if let Ok((mut s, _)) = l.accept() {
                let mut buf = [0u8; 4096];
                let _ = s.read(&mut buf);
                let _ = s.write_all(response);
            }
        });
        format!("http://{addr}/spec.yaml")
    }

    #[test]
    fn fetches_over_loopback() {
        let url = serve_once(b"HTTP/1.0 200 OK\r\nContent-Type: text/yaml\r\n\r\nopenapi: 3.0.3\n");
        assert_eq!(get(&url, &[], Limits::default()).unwrap(), "openapi: 3.0.3\n");
    }

    #[test]
    fn errors_say_what_went_wrong() {
        let url = serve_once(b"HTTP/1.0 404 Not Found\r\n\r\n");
        assert!(get(&url, &[], Limits::default()).unwrap_err().message().contains("HTTP status 404"));
        let url = serve_once(b"HTTP/1.0 200 OK\r\n\r\n\xff\xfe");
        assert!(get(&url, &[], Limits::default()).unwrap_err().message().contains("not valid UTF-8"));
        let big: &'static [u8] = Box::leak(format!("HTTP/1.0 200 OK\r\n\r\n{}", "a".repeat(300 * 1024)).into_bytes().into_boxed_slice());
        let url = serve_once(big);
        assert!(get(&url, &[], Limits { max_bytes: 1024, ..Limits::default() }).unwrap_err().message().contains("larger than"));
    }

    #[test]
    fn a_silent_server_times_out() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/x", l.local_addr().unwrap());
        let err = get(&url, &[], Limits { timeout: Duration::from_millis(300), ..Limits::default() }).unwrap_err();
        assert!(err.message().contains("timed out"), "{err}");
        assert_eq!(err.kind(), crate::ErrorKind::Fetch);
        drop(l);
    }
}
