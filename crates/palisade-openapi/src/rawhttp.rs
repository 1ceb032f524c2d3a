//! Raw HTTP/1.1 messages from files, for `palisade openapi validate --request FILE` and the
//! conformance suite: a request (or response) written as text, with LF or CRLF line ends.
//! The body is everything after the blank line, cut to `Content-Length` when that is given.

use std::net::{IpAddr, Ipv4Addr};

use http::{HeaderMap, HeaderName, HeaderValue, Method};
use palisade_core::{RequestView, ResponseView};

/// A request read from a file, owning its parts.
#[derive(Debug)]
pub struct OwnedRequest {
    pub method: Method,
    pub path: String,
    pub query: Option<String>,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

impl OwnedRequest {
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
fn split(raw: &[u8]) -> Result<(Vec<&str>, &[u8]), String> {
    let mut lines = Vec::new();
    let mut pos = 0;
    loop {
        let Some(nl) = raw[pos..].iter().position(|&b| b == b'\n') else {
            // No blank line: the whole rest is the last head line, no body.
            if pos < raw.len() {
                lines.push(std::str::from_utf8(&raw[pos..]).map_err(|_| "the message head is not UTF-8".to_string())?.trim_end_matches('\r'));
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
        lines.push(std::str::from_utf8(line).map_err(|_| "the message head is not UTF-8".to_string())?);
    }
}

fn headers(lines: &[&str]) -> Result<HeaderMap, String> {
    let mut map = HeaderMap::new();
    for (i, line) in lines.iter().enumerate() {
        let (name, value) = line.split_once(':').ok_or_else(|| format!("line {}: expected `Name: value`", i + 2))?;
        let name = HeaderName::from_bytes(name.trim().as_bytes()).map_err(|_| format!("line {}: invalid header name {:?}", i + 2, name.trim()))?;
        let value = HeaderValue::from_str(value.trim()).map_err(|_| format!("line {}: invalid header value", i + 2))?;
        map.append(name, value);
    }
    Ok(map)
}

fn cut_to_length(headers: &HeaderMap, body: &[u8]) -> Result<Vec<u8>, String> {
    match headers.get(http::header::CONTENT_LENGTH) {
        Some(v) => {
            let n: usize = v.to_str().ok().and_then(|s| s.trim().parse().ok()).ok_or("invalid Content-Length")?;
            if n > body.len() {
                return Err(format!("Content-Length is {n} but the body has {} bytes", body.len()));
            }
            Ok(body[..n].to_vec())
        }
        None => Ok(body.to_vec()),
    }
}

/// Parse `METHOD /path?query HTTP/1.1`, header lines, a blank line and the body.
pub fn parse_request(raw: &[u8]) -> Result<OwnedRequest, String> {
    let (lines, body) = split(raw)?;
    let first = lines.first().ok_or("empty request")?;
    let mut parts = first.split(' ').filter(|s| !s.is_empty());
    let method = parts.next().ok_or("missing method")?;
    let target = parts.next().ok_or("missing request target")?;
    if let Some(v) = parts.next() {
        if !v.starts_with("HTTP/") {
            return Err(format!("line 1: expected `METHOD TARGET HTTP/1.1`, found {first:?}"));
        }
    }
    let method = Method::from_bytes(method.as_bytes()).map_err(|_| format!("invalid method {method:?}"))?;
    // Absolute form: keep only the path and query.
    let target = match target.find("://") {
        Some(i) => {
            let rest = &target[i + 3..];
            rest.find(['/', '?']).map_or("/", |j| &rest[j..])
        }
        None => target,
    };
    if !target.starts_with('/') && target != "*" {
        return Err(format!("request target must start with `/`: {target:?}"));
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
pub fn parse_response(raw: &[u8]) -> Result<OwnedResponse, String> {
    let (lines, body) = split(raw)?;
    let first = lines.first().ok_or("empty response")?;
    let mut parts = first.split(' ').filter(|s| !s.is_empty());
    let version = parts.next().unwrap_or("");
    if !version.starts_with("HTTP/") {
        return Err(format!("line 1: expected `HTTP/1.1 STATUS`, found {first:?}"));
    }
    let status: u16 =
        parts.next().and_then(|s| s.parse().ok()).filter(|s| (100..1000).contains(s)).ok_or_else(|| format!("line 1: invalid status in {first:?}"))?;
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
        assert!(parse_request(b"POST / HTTP/1.1\nContent-Length: 20\n\nabc").unwrap_err().contains("Content-Length is 20"));
    }

    #[test]
    fn bad_requests_are_explained() {
        assert!(parse_request(b"").is_err());
        assert!(parse_request(b"GET users HTTP/1.1\n\n").unwrap_err().contains("must start with"));
        assert!(parse_request(b"GET / HTTP/1.1\nno colon here\n\n").unwrap_err().contains("line 2"));
        assert!(parse_request(b"G(T / HTTP/1.1\n\n").unwrap_err().contains("invalid method"));
    }

    #[test]
    fn responses() {
        let r = parse_response(b"HTTP/1.1 201 Created\nContent-Type: application/json\n\n{}").unwrap();
        assert_eq!((r.status, r.body.as_slice()), (201, &b"{}"[..]));
        assert!(parse_response(b"HTTP/1.1 abc\n\n").is_err());
    }
}
