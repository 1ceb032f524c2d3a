//! Every response Palisade generates itself (blocks, limits, timeouts, upstream failures) is
//! built here: `application/problem+json` (RFC 9457) carrying the request id and a stable reason
//! code, and never any part of the request beyond a short, sanitised location.

use bytes::{BufMut, Bytes, BytesMut};
use http::{header, HeaderValue, Response, StatusCode};
use palisade_core::Reason;

use crate::resp_body::RespBody;

/// Marks a response Palisade made (its reason code, whether a stage blocked the request), so
/// that it can be re-shaped for a gRPC client.
#[derive(Clone, Debug)]
pub struct Made {
    pub code: Box<str>,
    pub blocked: bool,
}

/// The title of a block response with this status: what the client should understand from it
/// (authentication, rate limiting, or a refusal).
pub fn title(status: StatusCode) -> &'static str {
    match status.as_u16() {
        401 => "Authentication required",
        429 => "Too many requests",
        503 => "Service unavailable",
        _ => "Request blocked",
    }
}

/// A problem response: status, reason code, a human title, and the reasons of a block.
pub fn response(status: StatusCode, code: &str, title: &str, request_id: &str, reasons: &[Reason]) -> Response<RespBody> {
    let body = render(status, code, title, request_id, reasons);
    let mut resp = Response::new(RespBody::full(body));
    *resp.status_mut() = status;
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/problem+json"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    if let Ok(v) = HeaderValue::from_str(request_id) {
        h.insert(crate::headers::X_REQUEST_ID, v);
    }
    resp.extensions_mut().insert(Made { code: code.into(), blocked: false });
    resp
}

/// The JSON body alone (also written by the HTTP/1 codec for errors found before a request
/// exists, such as an oversized head).
pub fn render(status: StatusCode, code: &str, title: &str, request_id: &str, reasons: &[Reason]) -> Bytes {
    let mut b = BytesMut::with_capacity(160 + reasons.len() * 96);
    b.put_slice(b"{\"type\":\"urn:palisade:problem:");
    json_str_inner(&mut b, code);
    b.put_slice(b"\",\"title\":\"");
    json_str_inner(&mut b, title);
    b.put_slice(b"\",\"status\":");
    b.put_slice(status.as_str().as_bytes());
    b.put_slice(b",\"code\":\"");
    json_str_inner(&mut b, code);
    b.put_slice(b"\",\"request_id\":\"");
    json_str_inner(&mut b, request_id);
    b.put_slice(b"\"");
    if !reasons.is_empty() {
        b.put_slice(b",\"reasons\":[");
        for (i, r) in reasons.iter().enumerate() {
            if i > 0 {
                b.put_u8(b',');
            }
            b.put_slice(b"{\"code\":\"");
            json_str_inner(&mut b, &r.code);
            b.put_u8(b'"');
            // Attack findings tell the client the reason code only: their locations can be
            // attacker-chosen names, and how the detector saw the request is for operators.
            if r.code.starts_with("detect.") {
                b.put_u8(b'}');
                continue;
            }
            if let Some(loc) = &r.location {
                b.put_slice(b",\"location\":\"");
                json_str_inner(&mut b, &truncate(loc, 128));
                b.put_u8(b'"');
            }
            if let Some(d) = &r.detail {
                b.put_slice(b",\"detail\":\"");
                json_str_inner(&mut b, &truncate(d, 256));
                b.put_u8(b'"');
            }
            b.put_u8(b'}');
        }
        b.put_u8(b']');
    }
    b.put_slice(b"}\n");
    b.freeze()
}

fn truncate(s: &str, max: usize) -> std::borrow::Cow<'_, str> {
    if s.len() <= max {
        return s.into();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end]).into()
}

/// Append `s` JSON-escaped (without quotes).
fn json_str_inner(b: &mut BytesMut, s: &str) {
    for ch in s.chars() {
        match ch {
            '"' => b.put_slice(b"\\\""),
            '\\' => b.put_slice(b"\\\\"),
            '\n' => b.put_slice(b"\\n"),
            '\r' => b.put_slice(b"\\r"),
            '\t' => b.put_slice(b"\\t"),
            // Escape markup characters too, so that a body shown in a browser cannot be HTML.
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                b.put_slice(format!("\\u{:04x}", ch as u32).as_bytes());
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => b.put_slice(format!("\\u{:04x}", c as u32).as_bytes()),
            c => {
                let mut buf = [0u8; 4];
                b.put_slice(c.encode_utf8(&mut buf).as_bytes());
            }
        }
    }
}

/// The response to a blocked request: a problem response with the stages' response headers.
pub fn blocked(
    b: crate::judge::Block,
    id: crate::request_id::RequestId,
    rec: &mut crate::record::Record,
    req: crate::judge::ReqParts<'_>,
) -> Response<RespBody> {
    let mut resp = response(b.status, &b.code, title(b.status), id.as_str(), &b.reasons);
    resp.extensions_mut().insert(Made { code: b.code.as_str().into(), blocked: true });
    let set = b.record(rec, req);
    crate::headers::add_response_headers(resp.headers_mut(), set);
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attack_findings_show_only_their_code() {
        let reasons = [Reason::new("detect.xss").at("query.<script>").detail("xss confidence 90").fragment("<script>alert(1)")];
        let body = render(StatusCode::FORBIDDEN, "detect.xss", "Request blocked", "abc123", &reasons);
        let text = std::str::from_utf8(&body).unwrap();
        assert!(text.contains(r#""reasons":[{"code":"detect.xss"}]"#), "{text}");
        assert!(!text.contains("script") && !text.contains("confidence"), "{text}");
    }

    #[test]
    fn renders_valid_json_with_escaping() {
        let reasons = [Reason::new("openapi.parameter_invalid").at("query.\"x\"<script>").detail("bad\nvalue")];
        let body = render(StatusCode::FORBIDDEN, "blocked", "Request blocked", "abc123", &reasons);
        let text = std::str::from_utf8(&body).unwrap();
        assert!(!text.contains("<script>"));
        assert!(text.starts_with(r#"{"type":"urn:palisade:problem:blocked","title":"Request blocked","status":403,"code":"blocked","request_id":"abc123","reasons":[{"code":"openapi.parameter_invalid","location":"query.\"x\"\u003cscript\u003e","detail":"bad\nvalue"}]}"#), "{text}");
    }

    #[test]
    fn long_locations_are_truncated_on_char_boundaries() {
        let loc = "é".repeat(200);
        let body = render(StatusCode::FORBIDDEN, "x", "t", "id", &[Reason::new("c").at(loc)]);
        let text = std::str::from_utf8(&body).unwrap();
        assert!(text.len() < 400, "{}", text.len());
        assert!(text.contains('…'));
    }

    #[test]
    fn response_has_problem_headers() {
        let r = response(StatusCode::PAYLOAD_TOO_LARGE, crate::code::BODY_TOO_LARGE, "Body too large", "rid", &[]);
        assert_eq!(r.status(), 413);
        assert_eq!(r.headers()[header::CONTENT_TYPE], "application/problem+json");
        assert_eq!(r.headers()["x-request-id"], "rid");
    }
}
