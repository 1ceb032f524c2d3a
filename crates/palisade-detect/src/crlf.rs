//! CRLF / HTTP header injection (response splitting).
//!
//! A CR or LF (decoded from `%0d%0a`, or the Unicode `嘊`/`嘍` forms that some stacks truncate
//! to a byte) followed by something a parser would take as a header line (`Name: value`) or a
//! body (`<html`, a blank line) in a value that can end up in a response header or redirect:
//! header, cookie, path, query. Multi-line text in form or JSON bodies is ordinary, so there
//! only well-known response headers count: at a lower confidence after a line of text, as
//! high as in a URL after a single token (`en`, `/next`, `a`: the kind of value a server
//! copies into a header, which no line of prose is: prose has blanks or ends a sentence).

use crate::other_util::{best, gate, mk, step, views};
use crate::{Category, Detector, FieldKind, Gate, Hit, Input, Level};

const NAME: &str = "crlf";

pub struct CrlfDetector;

pub fn detector() -> Box<dyn Detector> {
    Box::new(CrlfDetector)
}

/// The pre-filter declared to the engine ([`Gate`]): a line break is a control character or
/// a non-ASCII one (controls and non-ASCII characters but letters of other scripts and
/// typographic quotes always open a gate; `嘊`/`嘍` are kept out of the letters:
/// [`crate::engine::NOT_LETTERS`]), or encoded (`%`, `\\`).
const GATE: Gate = Gate { bytes: "%\\", anchors: &[], words: &[], test: None, test_bytes: "", test_only: "" };

impl Detector for CrlfDetector {
    fn name(&self) -> &'static str {
        NAME
    }

    fn gate(&self) -> Option<Gate> {
        Some(GATE)
    }

    fn check(&self, input: &Input<'_>, level: Level) -> Option<Hit> {
        let url_borne = matches!(input.field, FieldKind::Header | FieldKind::Cookie | FieldKind::PathSegment | FieldKind::QueryValue | FieldKind::QueryName);
        let mut h = None;
        for v in views(input.decoded).iter().filter(|v| !v.is_empty()) {
            h = best(h, analyse(v, url_borne));
        }
        gate(h, level)
    }
}

const RESPONSE_HEADERS: &[&str] = &[
    "set-cookie",
    "location",
    "content-type",
    "content-length",
    "refresh",
    "access-control-allow-origin",
    "access-control-allow-credentials",
    "x-xss-protection",
    "content-security-policy",
    "transfer-encoding",
    "cache-control",
    "link",
    "http/1.",
];

fn analyse(s: &str, url_borne: bool) -> Option<Hit> {
    let mut out = None;
    let mut it = s.char_indices().peekable();
    while let Some((p, ch)) = it.next() {
        step(1);
        if !matches!(ch, '\r' | '\n' | '\u{560a}' | '\u{560d}') {
            continue;
        }
        // Skip the rest of the line break.
        let mut q = p + ch.len_utf8();
        while let Some(&(pp, c2)) = it.peek() {
            if matches!(c2, '\r' | '\n' | '\u{560a}' | '\u{560d}') {
                it.next();
                q = pp + c2.len_utf8();
            } else {
                break;
            }
        }
        let line: &str = &s[q..];
        let line = crate::truncate(&line[..line.find(['\r', '\n']).unwrap_or(line.len())], 256);
        let colon = line.find(':');
        let name = colon.map(|c| &line[..c]).unwrap_or("");
        let header_like = !name.is_empty() && name.len() <= 64 && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        let lname = name.to_ascii_lowercase();
        let known = RESPONSE_HEADERS.iter().any(|h| lname == *h) || line.to_ascii_lowercase().starts_with("http/1.");
        let body = line.trim_start().to_ascii_lowercase().starts_with("<html") || line.trim_start().to_ascii_lowercase().starts_with("<script");
        // The value up to the first line break is one token (the break at `p` is the first).
        let head = &s[..p];
        let token =
            !head.is_empty() && head.bytes().all(|b| b.is_ascii_graphic()) && !head.ends_with([',', '.', '!', '?', ':', ';']) && !head.contains(['\r', '\n']);
        let c = match (url_borne, known, header_like, body) {
            (true, true, _, _) => 95,
            (true, _, true, _) => 80,
            (true, _, _, true) => 85,
            (false, true, _, _) if token => 75,
            (false, true, _, _) => 55,
            _ => 0,
        };
        if c > 0 {
            out = best(out, Some(mk(NAME, Category::Crlf, c, &s[p..], "line break followed by an injected header or body")));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::other_util::take_steps;

    fn q(v: &str, f: FieldKind) -> u8 {
        detector().check(&Input { raw: v, decoded: v, field: f }, Level::Strict).map_or(0, |h| h.confidence)
    }

    #[test]
    fn attacks() {
        for v in [
            "/x\r\nSet-Cookie: a=b",
            "en\r\nLocation: http://evil",
            "a%0d%0aSet-Cookie:%20x=y",
            "x\r\n\r\n<html>pwned",
            "a\u{560a}\u{560d}Set-Cookie: x",
            "a\nX-Injected: 1",
        ] {
            assert!(q(v, FieldKind::QueryValue) >= 60, "{v}: {}", q(v, FieldKind::QueryValue));
        }
    }

    #[test]
    fn body_values_split_after_a_single_token() {
        // Written for this rule: a form or JSON value that a server copies into a header.
        for v in ["en\r\nSet-Cookie: sid=1", "/next\r\nLocation: https://evil.example/", "a\r\nContent-Length: 0\r\n\r\nHTTP/1.1 200 OK"] {
            for f in [FieldKind::FormValue, FieldKind::JsonValue] {
                assert!(q(v, f) >= 60, "{v}: {}", q(v, f));
            }
        }
        // After a line of prose, a greeting or a heading: text with a header-like line.
        for v in ["Dear team,\r\nLocation: room 4", "Meeting notes\nLocation: Paris", "Thanks!\nLink: see below", "Hi:\r\nContent-Type: text"] {
            assert!(q(v, FieldKind::FormValue) < 60, "{v}: {}", q(v, FieldKind::FormValue));
        }
    }

    #[test]
    fn benign() {
        assert!(q("Dear team,\r\nNote: the meeting moved\r\nThanks", FieldKind::FormValue) < 60);
        assert!(q("line one\nline two", FieldKind::QueryValue) < 60);
        assert!(q("Subject: hi\nLocation: Paris", FieldKind::JsonValue) < 60);
    }

    #[test]
    fn linear() {
        for unit in ["\r\n", "\nA:", "\n"] {
            let v = unit.repeat(1_000_000 / unit.len());
            take_steps();
            let _ = detector().check(&Input { raw: &v, decoded: &v, field: FieldKind::QueryValue }, Level::Strict);
            assert!(take_steps() < 80 * v.len() as u64, "{unit}");
        }
    }
}
