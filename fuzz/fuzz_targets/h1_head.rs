//! Fuzz the HTTP/1 request-head parser (`h1::parse_request_head`, what the server's connection
//! loop runs once `codec::find_head_end` has found a head) against a reference written the
//! simple way: split the head on CRLF, the request line on spaces, each field line at its first
//! colon, then apply RFC 9112's framing rules to the list of (name, value) pairs.
//!
//! Input: byte 0 picks the limits (`max_headers` from 1 to 300, both sides of the 128 stack
//! slots; `max_header_size` from 64 to 64 KiB); byte 1 picks raw mode (the rest is the buffer
//! as read from the socket) or structured mode (the rest is read as choices among methods,
//! targets, versions, header names, separators, values and line ends, smuggling favourites
//! among them, followed by what comes after the head).
//!
//! Invariants:
//! - accepted iff the reference accepts, and a refusal has the reference's status and problem
//!   code: Content-Length with Transfer-Encoding, Transfer-Encoding in HTTP/1.0 or not ending in
//!   chunked, an invalid or conflicting Content-Length, bare LF, obsolete line folding, a space
//!   before a colon, a missing or repeated Host are all refused;
//! - an accepted head: the method, target and version are the request line's; every field's
//!   name and value are the reference split's, at the same offsets of the head (inside it, the
//!   value trimmed of SP/HTAB), and the head is the input's bytes; the header map holds every
//!   field (no name or value silently dropped), with several equal Content-Lengths folded;
//!   `write_lines` writes `name: value\r\n` for the fields kept; Host and Content-Length
//!   accessors give the first such field; the body framing, `keep_alive` and `expect_continue`
//!   are the reference's; the read buffer keeps exactly the bytes after the head;
//! - the head's end and the parse do not depend on the bytes after the head.
#![no_main]

use bytes::BytesMut;
use http::{header, HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Uri, Version};
use libfuzzer_sys::fuzz_target;
use palisade_proxy::codec::{self, BodyState, Chunk};
use palisade_proxy::h1::{parse_request_head, ParsedHead, Rejection};
use palisade_proxy::code;

const MAX_HEADERS: [usize; 6] = [1, 3, 16, 128, 129, 300];
const MAX_SIZE: [usize; 4] = [64, 512, 4096, 65536];

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let max_headers = MAX_HEADERS[data[0] as usize % MAX_HEADERS.len()];
    let max_size = MAX_SIZE[(data[0] as usize / MAX_HEADERS.len()) % MAX_SIZE.len()];
    let input = if data[1] & 1 == 0 { data[2..].to_vec() } else { build(&data[2..]) };
    check(&input, max_headers, max_size);
});

fn check(input: &[u8], max_headers: usize, max_size: usize) {
    // As the connection loop does: empty lines before the request line are dropped, then the
    // end of the head is searched for.
    let mut buf = input;
    while buf.starts_with(b"\r\n") {
        buf = &buf[2..];
    }
    let mut scanned = 0;
    let Some(end) = codec::find_head_end(buf, &mut scanned) else { return };
    let (head, rest) = buf.split_at(end);

    let mut rbuf = BytesMut::from(buf);
    let got = parse_request_head(&mut rbuf, end, max_headers, max_size);
    let want = reference(head, max_headers, max_size);
    match (&got, &want) {
        (Ok(p), Ok(w)) => {
            check_accepted(p, w, head);
            assert_eq!(&rbuf[..], rest, "the bytes after the head stay in the read buffer");
        }
        (Err(r), Err((status, c))) => {
            assert_eq!((r.status, r.code), (*status, *c), "{r:?} for {:?}", String::from_utf8_lossy(head));
            assert!(!r.title.is_empty());
        }
        (Ok(_), Err(w)) => panic!("accepted, the reference refuses with {w:?}: {:?}", String::from_utf8_lossy(head)),
        (Err(r), Ok(_)) => panic!("refused with {r:?}, the reference accepts: {:?}", String::from_utf8_lossy(head)),
    }
    // The smuggling cases, spelled out (the comparison above covers them too).
    if let Some(fields) = split_fields(head) {
        let has = |n: &[u8]| fields.iter().any(|f| f.name.eq_ignore_ascii_case(n));
        if has(b"content-length") && has(b"transfer-encoding") {
            assert!(got.is_err(), "Content-Length with Transfer-Encoding accepted");
        }
    }
    if !crlf(head) {
        assert!(got.is_err(), "bare LF accepted");
    }

    // Other bytes after the head: the same end, the same parse.
    let mut other = head.to_vec();
    other.extend(rest.iter().rev().map(|b| b ^ 0x5a));
    other.extend_from_slice(b"\r\n\r\nGET / HTTP/1.1\r\n");
    let mut s2 = 0;
    assert_eq!(codec::find_head_end(&other, &mut s2), Some(end), "the head's end depends on what follows it");
    let mut rbuf2 = BytesMut::from(&other[..]);
    let got2 = parse_request_head(&mut rbuf2, end, max_headers, max_size);
    assert_eq!(outline(&got), outline(&got2), "the parse depends on what follows the head");
}

fn check_accepted(p: &ParsedHead, w: &Want<'_>, head: &[u8]) {
    let raw = &p.raw;
    assert_eq!(raw.head(), head);
    assert_eq!(p.method.as_str().as_bytes(), w.method);
    assert_eq!(p.uri, w.uri);
    assert_eq!(p.version, w.version);
    assert_eq!(p.body, w.body);
    assert_eq!(p.keep_alive, w.keep_alive);
    assert_eq!(p.expect_continue, w.expect_continue);

    // Fields: the reference's, at the reference's offsets, inside the head.
    let base = raw.head().as_ptr() as usize;
    let got: Vec<(&[u8], &[u8])> = raw.fields().collect();
    assert_eq!(got.len(), w.fields.len());
    for ((name, value), f) in got.iter().zip(&w.fields) {
        assert_eq!((*name, *value), (f.name, f.value));
        let (n_at, v_at) = (name.as_ptr() as usize - base, value.as_ptr() as usize - base);
        assert!(n_at + name.len() <= head.len() && v_at + value.len() <= head.len());
        assert_eq!(n_at, f.name_at);
        if value.is_empty() {
            // An empty value points somewhere in its line after the colon.
            assert!(v_at > f.name_at + f.name.len() && v_at <= f.line_end);
        } else {
            assert_eq!(v_at, f.value_at);
        }
    }

    // The header map holds every field; several equal Content-Lengths become one.
    let mut map = HeaderMap::new();
    for f in &w.fields {
        let name = HeaderName::from_bytes(f.name).expect("a token is a HeaderName");
        let value = HeaderValue::from_bytes(f.value).expect("a field value httparse accepts is a HeaderValue");
        map.append(name, value);
    }
    let n_cl = w.fields.iter().filter(|f| f.name.eq_ignore_ascii_case(b"content-length")).count();
    if n_cl > 1 {
        let BodyState::Length(n) = w.body else { unreachable!("Content-Length without a length") };
        map.insert(header::CONTENT_LENGTH, HeaderValue::from(n));
    }
    assert_eq!(raw.to_map(), map);

    // Lines written upstream: `name: value\r\n` for each field kept, whatever the head's spacing.
    let keeps: [fn(&[u8]) -> bool; 3] = [|_| true, |n| n.len() % 2 == 0, |n| n[0].is_ascii_uppercase()];
    for keep in keeps {
        let mut out = Vec::new();
        raw.write_lines(&mut out, keep);
        let mut want = Vec::new();
        for f in w.fields.iter().filter(|f| keep(f.name)) {
            want.extend_from_slice(f.name);
            want.extend_from_slice(b": ");
            want.extend_from_slice(f.value);
            want.extend_from_slice(b"\r\n");
        }
        assert_eq!(String::from_utf8_lossy(&out), String::from_utf8_lossy(&want));
        assert_eq!(out, want);
    }

    // Accessors: the first Host / Content-Length.
    let first = |n: &[u8]| w.fields.iter().find(|f| f.name.eq_ignore_ascii_case(n)).map(|f| f.value);
    assert_eq!(raw.host_bytes(), first(b"host"));
    assert_eq!(raw.content_length(), first(b"content-length"));
    assert_eq!(raw.host().as_ref().map(HeaderValue::as_bytes), first(b"host"));
    let host_text = first(b"host").filter(|h| h.iter().all(|b| (32..127).contains(b) || *b == b'\t'));
    assert_eq!(raw.host_str().as_bytes(), host_text.unwrap_or(b""));
    let hosts = w.fields.iter().filter(|f| f.name.eq_ignore_ascii_case(b"host")).count();
    if raw.plain() {
        assert!(hosts == 1 && n_cl <= 1, "plain with {hosts} Host and {n_cl} Content-Length fields");
    } else if hosts == 1 && n_cl <= 1 {
        // Only a Connection token naming another header makes such a head not plain.
        let names_other = w.fields.iter().filter(|f| f.name.eq_ignore_ascii_case(b"connection")).any(|f| {
            f.value
                .split(|b| *b == b',')
                .map(<[u8]>::trim_ascii)
                .any(|t| !t.is_empty() && !t.eq_ignore_ascii_case(b"close") && !t.eq_ignore_ascii_case(b"keep-alive"))
        });
        assert!(names_other, "not plain without a reason");
    }
}

/// What a parse came to, comparable.
fn outline(r: &Result<ParsedHead, Rejection>) -> String {
    match r {
        Err(e) => format!("{e:?}"),
        Ok(p) => {
            let fields: Vec<_> = p.raw.fields().collect();
            format!(
                "{} {} {:?} {fields:?} {:?} keep_alive={} continue={} plain={} {:?}",
                p.method,
                p.uri,
                p.version,
                p.body,
                p.keep_alive,
                p.expect_continue,
                p.raw.plain(),
                p.raw.to_map()
            )
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The reference.

struct Field<'a> {
    name: &'a [u8],
    value: &'a [u8],
    name_at: usize,
    value_at: usize,
    line_end: usize,
}

struct Want<'a> {
    method: &'a [u8],
    uri: Uri,
    version: Version,
    fields: Vec<Field<'a>>,
    body: BodyState,
    keep_alive: bool,
    expect_continue: bool,
}

fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// Request-target bytes httparse takes (visible ASCII and obs-text; the whole must be UTF-8).
fn is_target_byte(b: u8) -> bool {
    (0x21..=0x7e).contains(&b) || b >= 0x80
}

fn is_value_byte(b: u8) -> bool {
    b == b'\t' || (0x20..=0x7e).contains(&b) || b >= 0x80
}

/// Every LF preceded by a CR.
fn crlf(head: &[u8]) -> bool {
    head.iter().enumerate().all(|(i, b)| *b != b'\n' || (i > 0 && head[i - 1] == b'\r'))
}

/// The lines of a head that ends in CRLF CRLF (without the final empty line), with their
/// offsets.
fn lines(head: &[u8]) -> Vec<(usize, &[u8])> {
    let body = &head[..head.len() - 4];
    let mut out = Vec::new();
    let mut at = 0;
    loop {
        match body[at..].windows(2).position(|w| w == b"\r\n") {
            Some(i) => {
                out.push((at, &body[at..at + i]));
                at += i + 2;
            }
            None => {
                out.push((at, &body[at..]));
                return out;
            }
        }
    }
}

/// A field line split at its first colon: the name, and the value trimmed of SP/HTAB. None when
/// the line is no `token ":" value` line.
fn split_field(at: usize, line: &[u8]) -> Option<Field<'_>> {
    let colon = line.iter().position(|b| *b == b':')?;
    let name = &line[..colon];
    if name.is_empty() || !name.iter().all(|b| is_tchar(*b)) || !line[colon + 1..].iter().all(|b| is_value_byte(*b)) {
        return None;
    }
    let ws = |b: &u8| *b == b' ' || *b == b'\t';
    let lead = line[colon + 1..].iter().take_while(|b| ws(b)).count();
    let v = &line[colon + 1 + lead..];
    let trail = v.iter().rev().take_while(|b| ws(b)).count();
    Some(Field { name, value: &v[..v.len() - trail], name_at: at, value_at: at + colon + 1 + lead, line_end: at + line.len() })
}

fn split_fields(head: &[u8]) -> Option<Vec<Field<'_>>> {
    if !head.ends_with(b"\r\n\r\n") || !crlf(head) {
        return None;
    }
    lines(head).into_iter().skip(1).map(|(at, l)| split_field(at, l)).collect()
}

/// The reference's verdict: the accepted head, or the status and problem code of the refusal.
fn reference(head: &[u8], max_headers: usize, max_size: usize) -> Result<Want<'_>, (StatusCode, &'static str)> {
    let bad = Err((StatusCode::BAD_REQUEST, code::BAD_REQUEST));
    let smuggling = Err((StatusCode::BAD_REQUEST, code::SMUGGLING));
    if head.len() > max_size {
        return Err((StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE, code::HEADERS_TOO_LARGE));
    }
    if !crlf(head) {
        return bad;
    }
    assert!(head.ends_with(b"\r\n\r\n"), "a CRLF head ends with an empty line");
    let lines = lines(head);
    let mut lines = lines.into_iter();
    let (_, line) = lines.next().unwrap();

    // Request line: method SP target SP version, one space each.
    let Some(sp1) = line.iter().position(|b| *b == b' ') else { return bad };
    let method = &line[..sp1];
    if method.is_empty() || !method.iter().all(|b| is_tchar(*b)) {
        return bad;
    }
    let after = &line[sp1 + 1..];
    let Some(sp2) = after.iter().position(|b| *b == b' ') else { return bad };
    let target = &after[..sp2];
    if target.is_empty() || !target.iter().all(|b| is_target_byte(*b)) {
        return bad;
    }
    let Ok(target) = std::str::from_utf8(target) else { return bad };
    let v = &after[sp2 + 1..];
    // Up to a CR, for telling a line with another version (505) from a malformed one (400).
    let v_text = v.split(|b| *b == b'\r').next().unwrap_or(b"");
    let version = match v {
        b"HTTP/1.1" => Version::HTTP_11,
        b"HTTP/1.0" => Version::HTTP_10,
        _ if v.starts_with(b"HTTP/1.1") || v.starts_with(b"HTTP/1.0") => return bad,
        _ if v_text.len() == 8 && v_text.starts_with(b"HTTP/") && v_text[5].is_ascii_digit() && v_text[6] == b'.' && v_text[7].is_ascii_digit() => {
            return Err((StatusCode::HTTP_VERSION_NOT_SUPPORTED, code::BAD_REQUEST))
        }
        _ => return bad,
    };

    // Field lines, each checked before it is counted.
    let mut fields = Vec::new();
    for (at, l) in lines {
        let Some(f) = split_field(at, l) else { return bad };
        if fields.len() == max_headers {
            return Err((StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE, code::HEADERS_TOO_LARGE));
        }
        fields.push(f);
    }

    // Method and target.
    let Ok(m) = Method::from_bytes(method) else { return bad };
    if target.len() >= u16::MAX as usize - 1 {
        return Err((StatusCode::URI_TOO_LONG, code::URI_TOO_LONG));
    }
    let Ok(uri) = Uri::try_from(target) else { return bad };
    if m == Method::CONNECT {
        return Err((StatusCode::NOT_IMPLEMENTED, code::UNSUPPORTED));
    }
    if uri.scheme().is_none() && uri.path() != "*" && !uri.path().starts_with('/') {
        return bad;
    }
    if fields.iter().any(|f| f.name.len() > 65535) {
        return bad;
    }

    // Framing.
    let values = |n: &[u8]| fields.iter().filter(|f| f.name.eq_ignore_ascii_case(n)).map(|f| f.value).collect::<Vec<_>>();
    let (te, cl) = (values(b"transfer-encoding"), values(b"content-length"));
    let mut body = BodyState::Length(0);
    if !te.is_empty() && !cl.is_empty() {
        return smuggling;
    }
    if !te.is_empty() {
        if version == Version::HTTP_10 {
            return smuggling;
        }
        let mut codings = Vec::new();
        for v in &te {
            if !v.iter().all(|b| (32..127).contains(b) || *b == b'\t') {
                return bad;
            }
            for c in v.split(|b| *b == b',') {
                let c = c.trim_ascii().to_ascii_lowercase();
                if !c.is_empty() {
                    codings.push(c);
                }
            }
        }
        if codings.last().map(Vec::as_slice) != Some(&b"chunked"[..]) {
            return smuggling;
        }
        if codings.len() > 1 {
            return Err((StatusCode::NOT_IMPLEMENTED, code::UNSUPPORTED));
        }
        body = BodyState::Chunked(Chunk::Size);
    } else if !cl.is_empty() {
        let mut lengths = Vec::new();
        for v in &cl {
            for part in v.split(|b| *b == b',') {
                let part = part.trim_ascii();
                if part.is_empty() || part.len() > 19 || !part.iter().all(u8::is_ascii_digit) {
                    return smuggling;
                }
                lengths.push(std::str::from_utf8(part).unwrap().parse::<u64>().unwrap());
            }
        }
        if lengths.iter().any(|n| *n != lengths[0]) {
            return smuggling;
        }
        body = BodyState::Length(lengths[0]);
    }
    let hosts = values(b"host").len();
    if hosts > 1 || (version == Version::HTTP_11 && hosts == 0 && uri.authority().is_none()) {
        return bad;
    }
    let mut expect_continue = false;
    if let Some(e) = values(b"expect").first() {
        if !e.eq_ignore_ascii_case(b"100-continue") {
            return Err((StatusCode::EXPECTATION_FAILED, code::BAD_REQUEST));
        }
        expect_continue = version == Version::HTTP_11 && body != BodyState::Length(0);
    }
    let tokens: Vec<&[u8]> = values(b"connection").into_iter().flat_map(|v| v.split(|b| *b == b',')).map(<[u8]>::trim_ascii).collect();
    let close = tokens.iter().any(|t| t.eq_ignore_ascii_case(b"close"));
    let keep = tokens.iter().any(|t| t.eq_ignore_ascii_case(b"keep-alive"));
    let keep_alive = !close && (version == Version::HTTP_11 || keep);
    Ok(Want { method, uri, version, fields, body, keep_alive, expect_continue })
}

// ---------------------------------------------------------------------------------------------
// Structured inputs.

const METHODS: &[&[u8]] = &[b"GET", b"POST", b"HEAD", b"PUT", b"CONNECT", b"OPTIONS", b"get", b"G@T", b"", b"GET ", b"X-CUSTOM_METHOD!"];
const TARGETS: &[&[u8]] = &[
    b"/",
    b"/a?b=c&d",
    b"*",
    b"http://h.example/x",
    b"h.example:443",
    b"/%zz",
    "/é".as_bytes(),
    b"",
    b"/a b",
    b"a",
    b"//x",
    b"/\x7f",
    b"http://[::1]:8/",
    b"/\xff",
    b"https://u@h.example:8443/p?q#f",
];
const VERSIONS: &[&[u8]] = &[b"HTTP/1.1", b"HTTP/1.0", b"HTTP/2.0", b"HTTP/1.2", b"http/1.1", b"HTTP/1.10", b"HTTP/1", b"HTTP/0.9", b"HTTP/1.1 "];
const NAMES: &[&[u8]] = &[
    b"Host",
    b"host",
    b"HOST",
    b"Content-Length",
    b"content-length",
    b"Transfer-Encoding",
    b"transfer-encoding",
    b"Connection",
    b"Expect",
    b"X-A",
    b"x-a",
    b"Content-Length ",
    b" Host",
    b"Ho st",
    b"",
    b"Keep-Alive",
    b"Upgrade",
    b"TE",
    b"Transfer-Encoding\x00",
    b"Transfer_Encoding",
];
const VALUES: &[&[u8]] = &[
    b"h.example",
    b"",
    b"0",
    b"5",
    b"5, 5",
    b"5,6",
    b"+5",
    b"0x5",
    b"00000000000000000005",
    b"99999999999999999999",
    b"18446744073709551615",
    b"chunked",
    b"gzip, chunked",
    b"chunked, gzip",
    b" chunked ",
    b"CHUNKED",
    b"chunked, chunked",
    b",chunked,",
    b"identity",
    b"close",
    b"keep-alive",
    b"Keep-Alive, x-a",
    b"x-a, close",
    b"100-continue",
    b"100-Continue",
    b"h\x7fx",
    "é".as_bytes(),
    b"a\tb",
    b"  ",
    b"\x00",
    b"chunked\x0b",
    b"5\r\nContent-Length: 6",
    b"chunked\r\nContent-Length: 5",
];
const SEPARATORS: &[&[u8]] = &[b": ", b":", b":\t", b" : ", b":  ", b"\t:"];
const LINE_ENDS: &[&[u8]] = &[b"\n", b"\r\n ", b"\r\n\t", b"\r", b" \r\n", b"\t\r\n"];

struct Choices<'a>(std::slice::Iter<'a, u8>);

impl Choices<'_> {
    fn byte(&mut self) -> u8 {
        self.0.next().copied().unwrap_or(0)
    }
    fn pick<'t>(&mut self, xs: &[&'t [u8]]) -> &'t [u8] {
        xs[self.byte() as usize % xs.len()]
    }
    /// One of `xs` for a byte below 0xf0, else up to 15 raw input bytes.
    fn pick_or_raw(&mut self, xs: &[&[u8]], out: &mut Vec<u8>) {
        let b = self.byte();
        if b < 0xf0 {
            out.extend_from_slice(xs[b as usize % xs.len()]);
        } else {
            for _ in 0..b & 0x0f {
                out.push(self.byte());
            }
        }
    }
}

/// A head made of choices: request line, up to 15 fields (mostly CRLF-terminated), the empty
/// line, then the rest of the input as what follows the head.
fn build(data: &[u8]) -> Vec<u8> {
    let mut c = Choices(data.iter());
    let mut out = Vec::new();
    c.pick_or_raw(METHODS, &mut out);
    out.push(b' ');
    c.pick_or_raw(TARGETS, &mut out);
    out.push(b' ');
    out.extend_from_slice(c.pick(VERSIONS));
    out.extend_from_slice(b"\r\n");
    for _ in 0..c.byte() % 16 {
        c.pick_or_raw(NAMES, &mut out);
        let sep = c.byte();
        out.extend_from_slice(if sep < 0xc0 { &b": "[..] } else { SEPARATORS[sep as usize % SEPARATORS.len()] });
        c.pick_or_raw(VALUES, &mut out);
        let eol = c.byte();
        out.extend_from_slice(if eol < 0xe0 { &b"\r\n"[..] } else { LINE_ENDS[eol as usize % LINE_ENDS.len()] });
    }
    out.extend_from_slice(b"\r\n");
    out.extend(c.0.copied());
    out
}
