//! Raw HTTP/1.1 messages from files, for `palisade openapi validate --request FILE`,
//! `palisade detect eval` over recorded requests and the conformance suites: a request (or
//! response) written as text, with LF or CRLF line ends. The body is everything after the
//! blank line (any bytes), cut to `Content-Length` when that is given.

use std::net::{IpAddr, Ipv4Addr};

use http::{HeaderMap, HeaderName, HeaderValue, Method};

use crate::{Error, ErrorKind, RequestView, ResponseView};

/// A message that is not a request (or response): what is wrong ([`ErrorKind::RawHttp`]).
fn err(message: impl Into<String>) -> Error {
    Error::new(ErrorKind::RawHttp, message)
}

/// The same, on line `line` (1-based) of the head: `line 2: expected ...`.
fn err_at(line: usize, message: impl Into<String>) -> Error {
    err(message).context(format_args!("line {line}"))
}

/// A request read from a file (or built by a tool), owning its parts.
#[derive(Clone, Debug)]
pub struct OwnedRequest {
    pub method: Method,
    pub path: String,
    pub query: Option<String>,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

impl OwnedRequest {
    /// No query, no headers, no body.
    pub fn new(method: Method, path: &str) -> Self {
        OwnedRequest { method, path: path.to_string(), query: None, headers: HeaderMap::new(), body: Vec::new() }
    }

    pub fn view(&self) -> RequestView<'_> {
        RequestView {
            request_id: "offline",
            app: "offline",
            client_ip: IpAddr::V4(Ipv4Addr::LOCALHOST),
            method: &self.method,
            path: &self.path,
            raw_path: &self.path,
            query: self.query.as_deref(),
            headers: &self.headers,
            body: &self.body,
            body_truncated: false,
            tls: false,
        }
    }
}

/// A response read from a file.
#[derive(Debug)]
pub struct OwnedResponse {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

impl OwnedResponse {
    pub fn view(&self) -> ResponseView<'_> {
        ResponseView { status: self.status, headers: &self.headers, body: &self.body, body_truncated: false, body_undecodable: false }
    }
}

/// Split a message into head lines and body; line ends may be LF or CRLF.
fn split(raw: &[u8]) -> Result<(Vec<&str>, &[u8]), Error> {
    let mut lines = Vec::new();
    let mut pos = 0;
    loop {
        let Some(nl) = raw[pos..].iter().position(|&b| b == b'\n') else {
            // No blank line: the whole rest is the last head line, no body.
            if pos < raw.len() {
                lines.push(std::str::from_utf8(&raw[pos..]).map_err(|_| err_at(lines.len() + 1, "the message head is not UTF-8"))?.trim_end_matches('\r'));
            }
            return Ok((lines, &[]));
        };
        let line = &raw[pos..pos + nl];
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        pos += nl + 1;
        if line.is_empty() {
            if lines.is_empty() {
                continue; // leading blank lines
            }
            return Ok((lines, &raw[pos..]));
        }
        lines.push(std::str::from_utf8(line).map_err(|_| err_at(lines.len() + 1, "the message head is not UTF-8"))?);
    }
}

fn headers(lines: &[&str]) -> Result<HeaderMap, Error> {
    let mut map = HeaderMap::new();
    for (i, line) in lines.iter().enumerate() {
        let (name, value) = line.split_once(':').ok_or_else(|| err_at(i + 2, "expected `Name: value`"))?;
        let name = HeaderName::from_bytes(name.trim().as_bytes()).map_err(|_| err_at(i + 2, format!("invalid header name {:?}", name.trim())))?;
        let value = HeaderValue::from_bytes(value.trim().as_bytes()).map_err(|_| err_at(i + 2, "invalid header value"))?;
        map.append(name, value);
    }
    Ok(map)
}

fn cut_to_length(headers: &HeaderMap, body: &[u8]) -> Result<Vec<u8>, Error> {
    match headers.get(http::header::CONTENT_LENGTH) {
        Some(v) => {
            let n: usize = v.to_str().ok().and_then(|s| s.trim().parse().ok()).ok_or_else(|| err("invalid Content-Length"))?;
            if n > body.len() {
                return Err(err(format!("Content-Length is {n} but the body has {} bytes", body.len())));
            }
            Ok(body[..n].to_vec())
        }
        None => Ok(body.to_vec()),
    }
}

/// Parse `METHOD /path?query HTTP/1.1`, header lines, a blank line and the body.
pub fn parse_request(raw: &[u8]) -> Result<OwnedRequest, Error> {
    let (lines, body) = split(raw)?;
    let first = lines.first().ok_or_else(|| err("empty request"))?;
    let mut parts = first.split(' ').filter(|s| !s.is_empty());
    let method = parts.next().ok_or_else(|| err_at(1, "missing method"))?;
    let target = parts.next().ok_or_else(|| err_at(1, "missing request target"))?;
    if let Some(v) = parts.next() {
        if !v.starts_with("HTTP/") {
            return Err(err_at(1, format!("expected `METHOD TARGET HTTP/1.1`, found {first:?}")));
        }
    }
    let method = Method::from_bytes(method.as_bytes()).map_err(|_| err_at(1, format!("invalid method {method:?}")))?;
    // Absolute form: keep only the path and query.
    let target = match target.find("://") {
        Some(i) => {
            let rest = &target[i + 3..];
            rest.find(['/', '?']).map_or("/", |j| &rest[j..])
        }
        None => target,
    };
    if !target.starts_with('/') && target != "*" {
        return Err(err_at(1, format!("request target must start with `/`: {target:?}")));
    }
    let (path, query) = match target.split_once('?') {
        Some((p, q)) => (p.to_string(), Some(q.to_string())),
        None => (target.to_string(), None),
    };
    let headers = headers(&lines[1..])?;
    let body = cut_to_length(&headers, body)?;
    Ok(OwnedRequest { method, path, query, headers, body })
}

/// Parse `HTTP/1.1 200 OK`, header lines, a blank line and the body.
pub fn parse_response(raw: &[u8]) -> Result<OwnedResponse, Error> {
    let (lines, body) = split(raw)?;
    let first = lines.first().ok_or_else(|| err("empty response"))?;
    let mut parts = first.split(' ').filter(|s| !s.is_empty());
    let version = parts.next().unwrap_or("");
    if !version.starts_with("HTTP/") {
        return Err(err_at(1, format!("expected `HTTP/1.1 STATUS`, found {first:?}")));
    }
    let status: u16 =
        parts.next().and_then(|s| s.parse().ok()).filter(|s| (100..1000).contains(s)).ok_or_else(|| err_at(1, format!("invalid status in {first:?}")))?;
    let headers = headers(&lines[1..])?;
    let body = cut_to_length(&headers, body)?;
    Ok(OwnedResponse { status, headers, body })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lf_or_crlf_requests() {
        let r = parse_request(b"POST /users/5?verbose=1&x HTTP/1.1\nHost: api\ncontent-type: application/json\n\n{\"a\":1}").unwrap();
        assert_eq!((r.method.as_str(), r.path.as_str(), r.query.as_deref()), ("POST", "/users/5", Some("verbose=1&x")));
        assert_eq!(r.headers["content-type"], "application/json");
        assert_eq!(r.body, b"{\"a\":1}");
        let r = parse_request(b"GET http://api.example/a/b?c HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        assert_eq!((r.path.as_str(), r.query.as_deref(), r.body.len()), ("/a/b", Some("c"), 0));
    }

    #[test]
    fn content_length_cuts_the_body() {
        let r = parse_request(b"POST / HTTP/1.1\nContent-Length: 2\n\nabcdef\n").unwrap();
        assert_eq!(r.body, b"ab");
        assert!(parse_request(b"POST / HTTP/1.1\nContent-Length: 20\n\nabc").unwrap_err().to_string().contains("Content-Length is 20"));
    }

    #[test]
    fn bad_requests_are_explained() {
        assert!(parse_request(b"").is_err());
        assert!(parse_request(b"GET users HTTP/1.1\n\n").unwrap_err().to_string().contains("must start with"));
        let e = parse_request(b"GET / HTTP/1.1\nno colon here\n\n").unwrap_err();
        assert_eq!((e.kind(), e.message()), (crate::ErrorKind::RawHttp, "line 2: expected `Name: value`"));
        assert!(parse_request(b"G(T / HTTP/1.1\n\n").unwrap_err().to_string().contains("invalid method"));
    }

    #[test]
    fn binary_bodies_are_kept() {
        let mut raw = b"POST /up HTTP/1.1\r\nContent-Type: application/octet-stream\r\nContent-Length: 4\r\n\r\n".to_vec();
        raw.extend_from_slice(&[0xff, 0x00, 0x8b, 0x1f]);
        assert_eq!(parse_request(&raw).unwrap().body, [0xff, 0x00, 0x8b, 0x1f]);
        let e = parse_request(b"GET / HTTP/1.1\nX-A: \xff\n\n").unwrap_err();
        assert_eq!(e.message(), "line 2: the message head is not UTF-8");
    }

    #[test]
    fn responses() {
        let r = parse_response(b"HTTP/1.1 201 Created\nContent-Type: application/json\n\n{}").unwrap();
        assert_eq!((r.status, r.body.as_slice()), (201, &b"{}"[..]));
        assert!(parse_response(b"HTTP/1.1 abc\n\n").is_err());
    }
}
