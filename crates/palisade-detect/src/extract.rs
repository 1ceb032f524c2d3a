//! Every attacker-controlled value of a request, with where it came from.
//!
//! Head: path segments (percent-decoded; the whole path too when it holds `..`), query names
//! and values, the configured headers (by default `User-Agent`, `Referer`,
//! `X-Forwarded-For`, `X-Forwarded-Host`, `Origin`), cookie names and values. Body, by
//! `Content-Type`: form fields, multipart field names, values and file names (file contents
//! are not inspected), JSON (every key and every string at any depth; numbers and literals
//! cannot carry a payload and are skipped), XML
//! (the whole document for XXE, then text, CDATA and attribute values), and the raw text of
//! any other type. A body that does not parse as its type is inspected as raw text.
//!
//! Values are handed to a callback as [`Field`]s that borrow from the request and from a
//! reusable [`Scratch`]; the [`Location`] is rendered to a string only when asked (a
//! finding), so extraction does not allocate per value. Bounded by [`Limits`] per phase
//! (number of values, bytes of values): exceeding them stops extraction and is reported as
//! [`Stop::Exceeded`], never silently ignored.

use std::borrow::Cow;
use std::fmt;

use palisade_core::RequestView;
use palisade_openapi::media::{self, MediaKind};
use palisade_openapi::{multipart, xml};

use crate::decode::transport_decode;
use crate::FieldKind;

#[cfg(test)]
mod tests;

/// Bounds of one phase (head or body) of one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Values handed to the detectors.
    pub max_values: usize,
    /// Total bytes of those values.
    pub max_bytes: usize,
    /// JSON nesting depth.
    pub max_depth: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_values: 10_000, max_bytes: 4 << 20, max_depth: 128 }
    }
}

/// Which limit was exceeded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exceeded {
    Values { limit: usize },
    Bytes { limit: usize },
}

impl fmt::Display for Exceeded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Exceeded::Values { limit } => write!(f, "more than {limit} values to inspect"),
            Exceeded::Bytes { limit } => write!(f, "more than {limit} bytes to inspect"),
        }
    }
}

/// Why extraction stopped before the end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// The callback asked to stop.
    Caller,
    Exceeded(Exceeded),
}

/// One step of a JSON path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Seg<'a> {
    Key(Cow<'a, str>),
    Index(usize),
}

/// Where a value is in the request. Rendered (`Display`) as `path[2]`, `path`, `query.id`,
/// `header.User-Agent`, `cookie.session`, `body`, `body/comment` (form and multipart fields),
/// `body/users/3/name` (JSON; `/` and `~` in keys escaped as in JSON Pointer), `body/doc/item`
/// and `body/doc/item/@id` (XML).
#[derive(Clone, Copy, Debug)]
pub enum Location<'a> {
    PathSegment(usize),
    /// The whole path (inspected when it holds `..`).
    Path,
    Query(&'a str),
    Header(&'a str),
    Cookie(&'a str),
    Body,
    /// A form or multipart field.
    Field(&'a str),
    Json(&'a [Seg<'a>]),
    /// Element names from the root, and the attribute name.
    Xml(&'a [&'a str], Option<&'a str>),
}

fn write_pointer_seg(f: &mut fmt::Formatter<'_>, s: &str) -> fmt::Result {
    if !s.contains(['/', '~']) {
        return f.write_str(s);
    }
    for c in s.chars() {
        match c {
            '~' => f.write_str("~0")?,
            '/' => f.write_str("~1")?,
            c => write!(f, "{c}")?,
        }
    }
    Ok(())
}

impl fmt::Display for Location<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::PathSegment(i) => write!(f, "path[{i}]"),
            Location::Path => f.write_str("path"),
            Location::Query(n) => write!(f, "query.{n}"),
            Location::Header(n) => write!(f, "header.{n}"),
            Location::Cookie(n) => write!(f, "cookie.{n}"),
            Location::Body => f.write_str("body"),
            Location::Field(n) => {
                f.write_str("body/")?;
                write_pointer_seg(f, n)
            }
            Location::Json(segs) => {
                f.write_str("body")?;
                for s in segs.iter() {
                    f.write_str("/")?;
                    match s {
                        Seg::Key(k) => write_pointer_seg(f, k)?,
                        Seg::Index(i) => write!(f, "{i}")?,
                    }
                }
                Ok(())
            }
            Location::Xml(names, attr) => {
                f.write_str("body")?;
                for n in names.iter() {
                    write!(f, "/{n}")?;
                }
                if let Some(a) = attr {
                    write!(f, "/@{a}")?;
                }
                Ok(())
            }
        }
    }
}

/// One value to inspect.
#[derive(Clone, Copy, Debug)]
pub struct Field<'a> {
    pub location: Location<'a>,
    pub kind: FieldKind,
    /// Already decoded once where the transport encodes (path, query, form, cookies).
    pub value: &'a str,
}

/// What the callback says of a value: `Break` stops the extraction; `Continue(true)`: the
/// value was judged clean, so that the same key at the same position of a later JSON object
/// at the same depth (the objects of an array) is counted without being handed over again
/// (the engine would find it in its memo of clean values anyway).
pub type Verdict = std::ops::ControlFlow<(), bool>;

/// Depths and key positions remembered by the JSON walk (see [`json_key`]).
const SHAPE_DEPTHS: usize = 16;
const SHAPE_KEYS: usize = 32;

/// Reusable buffers; keep one per worker.
#[derive(Debug, Default)]
pub struct Scratch {
    name: String,
    value: String,
    run: Vec<u8>,
    /// The open containers of the JSON walk.
    open: Vec<u32>,
    /// The allocations of the JSON walk's path and key memo, kept empty between bodies (see
    /// [`recycle`]).
    path: Vec<Seg<'static>>,
    memo: Vec<&'static str>,
}

/// `v`, emptied, as a vector of another element type of the same layout (here: the same type
/// with another lifetime), keeping its allocation: the buffers of the JSON walk borrow from one
/// body, and are kept in the [`Scratch`] for the next one without those borrows. (The standard
/// library collects in place when the layouts match; when not, this merely allocates.)
fn recycle<T, U>(mut v: Vec<T>) -> Vec<U> {
    v.clear();
    v.into_iter().filter_map(|_| None).collect()
}

/// Headers inspected by default (besides `Cookie`, which is split into cookies).
pub const DEFAULT_HEADERS: &[&str] = &["User-Agent", "Referer", "X-Forwarded-For", "X-Forwarded-Host", "Origin"];

/// Compiled extraction settings.
#[derive(Clone, Debug)]
pub struct Extractor {
    /// (name, as displayed in locations).
    headers: Vec<(http::HeaderName, String)>,
    limits: Limits,
}

impl Default for Extractor {
    fn default() -> Self {
        Extractor::new(&[], Limits::default()).expect("default headers are valid")
    }
}

struct Budget<'f> {
    values: usize,
    bytes: usize,
    limits: Limits,
    f: &'f mut dyn FnMut(&Field<'_>) -> Verdict,
}

impl Budget<'_> {
    #[inline]
    fn emit(&mut self, location: Location<'_>, kind: FieldKind, value: &str) -> Result<(), Stop> {
        self.emit_judged(location, kind, value).map(|_| ())
    }

    /// Hands a value over; `Ok(true)` when the callback judged it clean.
    #[inline]
    fn emit_judged(&mut self, location: Location<'_>, kind: FieldKind, value: &str) -> Result<bool, Stop> {
        if value.is_empty() {
            return Ok(false);
        }
        self.count(value)?;
        match (self.f)(&Field { location, kind, value }) {
            std::ops::ControlFlow::Continue(clean) => Ok(clean),
            std::ops::ControlFlow::Break(()) => Err(Stop::Caller),
        }
    }

    /// Counts a value against the limits (every value, handed over or not).
    #[inline]
    fn count(&mut self, value: &str) -> Result<(), Stop> {
        self.values += 1;
        self.bytes += value.len();
        // One branch on the way through (both limits tested at once).
        if (self.values > self.limits.max_values) | (self.bytes > self.limits.max_bytes) {
            return Err(self.exceeded());
        }
        Ok(())
    }

    /// Which limit [`Budget::count`] found exceeded (the values first).
    #[cold]
    fn exceeded(&self) -> Stop {
        if self.values > self.limits.max_values {
            Stop::Exceeded(Exceeded::Values { limit: self.limits.max_values })
        } else {
            Stop::Exceeded(Exceeded::Bytes { limit: self.limits.max_bytes })
        }
    }
}

/// Counters of one extraction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub values: usize,
    pub bytes: usize,
}

impl Extractor {
    /// `extra_headers`: header names inspected besides [`DEFAULT_HEADERS`].
    pub fn new(extra_headers: &[String], limits: Limits) -> Result<Self, String> {
        let mut headers: Vec<(http::HeaderName, String)> = Vec::new();
        for h in DEFAULT_HEADERS.iter().copied().chain(extra_headers.iter().map(String::as_str)) {
            let name = http::HeaderName::from_bytes(h.as_bytes()).map_err(|_| format!("`{h}` is not a valid header name"))?;
            if name == http::header::COOKIE || headers.iter().any(|(n, _)| *n == name) {
                continue;
            }
            headers.push((name, h.to_string()));
        }
        Ok(Extractor { headers, limits })
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Path, query, headers and cookies.
    pub fn head(&self, req: &RequestView<'_>, scratch: &mut Scratch, f: &mut dyn FnMut(&Field<'_>) -> Verdict) -> (Counts, Result<(), Stop>) {
        let mut budget = Budget { values: 0, bytes: 0, limits: self.limits, f };
        let r = self.head_inner(req, scratch, &mut budget);
        (Counts { values: budget.values, bytes: budget.bytes }, r)
    }

    /// The body, by its `Content-Type`.
    pub fn body(&self, req: &RequestView<'_>, scratch: &mut Scratch, f: &mut dyn FnMut(&Field<'_>) -> Verdict) -> (Counts, Result<(), Stop>) {
        let mut budget = Budget { values: 0, bytes: 0, limits: self.limits, f };
        let r = body_inner(req.headers, req.body, scratch, &mut budget);
        (Counts { values: budget.values, bytes: budget.bytes }, r)
    }

    fn head_inner(&self, req: &RequestView<'_>, sc: &mut Scratch, budget: &mut Budget<'_>) -> Result<(), Stop> {
        // Path segments.
        let path = req.path.strip_prefix('/').unwrap_or(req.path);
        for (i, seg) in path.split('/').enumerate() {
            let v = transport_decode(seg, false, &mut sc.value, &mut sc.run);
            budget.emit(Location::PathSegment(i), FieldKind::PathSegment, v)?;
        }
        if req.path.contains("..") || req.path.contains('\\') {
            let v = transport_decode(req.path, false, &mut sc.value, &mut sc.run);
            budget.emit(Location::Path, FieldKind::PathSegment, v)?;
        }
        if let Some(q) = req.query {
            pairs(q, sc, budget, true)?;
        }
        for (name, display) in &self.headers {
            for v in req.headers.get_all(name) {
                let text = String::from_utf8_lossy(v.as_bytes());
                budget.emit(Location::Header(display), FieldKind::Header, &text)?;
            }
        }
        for v in req.headers.get_all(http::header::COOKIE) {
            let text = String::from_utf8_lossy(v.as_bytes());
            for c in text.split(';') {
                let c = c.trim_matches([' ', '\t']);
                let (name, value) = c.split_once('=').unwrap_or(("", c));
                let name = name.trim_matches([' ', '\t']);
                let value = value.trim_matches([' ', '\t']);
                let value = value.strip_prefix('"').and_then(|v| v.strip_suffix('"')).unwrap_or(value);
                budget.emit(Location::Cookie(name), FieldKind::Cookie, name)?;
                let v = transport_decode(value, false, &mut sc.value, &mut sc.run);
                budget.emit(Location::Cookie(name), FieldKind::Cookie, v)?;
            }
        }
        Ok(())
    }
}

/// `name=value&...` (query strings and form bodies; `+` is a space).
fn pairs(q: &str, sc: &mut Scratch, budget: &mut Budget<'_>, query: bool) -> Result<(), Stop> {
    let (name_kind, value_kind) = if query { (FieldKind::QueryName, FieldKind::QueryValue) } else { (FieldKind::FormName, FieldKind::FormValue) };
    fn loc(query: bool, n: &str) -> Location<'_> {
        if query {
            Location::Query(n)
        } else {
            Location::Field(n)
        }
    }
    for pair in q.split('&') {
        if pair.is_empty() {
            continue;
        }
        let (n, v) = pair.split_once('=').unwrap_or((pair, ""));
        let name = transport_decode(n, true, &mut sc.name, &mut sc.run);
        budget.emit(loc(query, name), name_kind, name)?;
        let value = transport_decode(v, true, &mut sc.value, &mut sc.run);
        budget.emit(loc(query, name), value_kind, value)?;
    }
    Ok(())
}

fn content_type(headers: &http::HeaderMap) -> &str {
    headers.get(http::header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("")
}

fn body_inner(headers: &http::HeaderMap, body: &[u8], sc: &mut Scratch, budget: &mut Budget<'_>) -> Result<(), Stop> {
    if body.is_empty() {
        return Ok(());
    }
    let ct = content_type(headers);
    let kind = media::kind_of(ct);
    let handled = match kind {
        MediaKind::Json => json(body, sc, budget)?,
        MediaKind::Form => match std::str::from_utf8(body) {
            Ok(text) => {
                pairs(text, sc, budget, false)?;
                true
            }
            Err(_) => false,
        },
        MediaKind::Multipart => multipart_body(ct, body, budget)?,
        MediaKind::Xml => xml_body(body, budget)?,
        MediaKind::Text | MediaKind::Other => false,
    };
    // Other bodies are inspected as text when they are text (UTF-8). Binary bodies (images,
    // archives, protobuf...) are not: random bytes form "syntax" of every language, and a
    // payload the backend would parse as text is UTF-8 anyway.
    // A body declared as a text format (JSON, form, XML, text) that is not valid UTF-8 is
    // inspected with the invalid bytes replaced: a lenient backend may still read it.
    if !handled {
        match std::str::from_utf8(body) {
            Ok(text) => budget.emit(Location::Body, FieldKind::Body, text)?,
            Err(_) if matches!(kind, MediaKind::Json | MediaKind::Form | MediaKind::Xml | MediaKind::Text) => {
                budget.emit(Location::Body, FieldKind::Body, &String::from_utf8_lossy(body))?
            }
            Err(_) => {}
        }
    }
    Ok(())
}

/// Marks an open array on [`Scratch::open`] (objects hold the position of their current key).
const ARRAY: u32 = u32::MAX;

/// JSON: keys and strings at any depth, numbers and literals skipped. One streaming pass with
/// `palisade_json::scan` (the same syntax rules as the tape parser, no tape): values are
/// handed over as they are read, the path kept on a stack (one segment per open container,
/// replaced in place as keys and indexes advance). `Ok(false)` when the body is not JSON (or
/// deeper than the limit): the caller then inspects it as raw text, after whatever values came
/// before the syntax error (inspecting them too does no harm).
fn json(body: &[u8], sc: &mut Scratch, budget: &mut Budget<'_>) -> Result<bool, Stop> {
    // Checked once for the whole body, so that each string is borrowed from it with an O(1)
    // boundary check (the scanner checks the strings' UTF-8 as it goes anyway).
    let Ok(text) = std::str::from_utf8(body) else { return Ok(false) };
    // The path to the current value: one segment per open container.
    let mut path: Vec<Seg<'_>> = recycle(std::mem::take(&mut sc.path));
    // Per depth and key position: the last clean key without escapes seen there.
    let mut memo: Vec<&str> = recycle(std::mem::take(&mut sc.memo));
    let r = json_walk(body, text, &mut sc.open, &mut sc.run, &mut path, &mut memo, budget);
    sc.path = recycle(path);
    sc.memo = recycle(memo);
    r
}

/// [`json`] with its buffers: `open` holds, per open container, the position of its current
/// key (objects) or `ARRAY`.
fn json_walk<'b>(
    b: &'b [u8],
    text: &'b str,
    open: &mut Vec<u32>,
    run: &mut Vec<u8>,
    path: &mut Vec<Seg<'b>>,
    memo: &mut Vec<&'b str>,
    budget: &mut Budget<'_>,
) -> Result<bool, Stop> {
    use palisade_json::scan;
    let max_depth = budget.limits.max_depth as usize;
    open.clear();
    path.reserve(16);
    let mut p = scan::skip_ws(b, 0);
    'value: loop {
        match b.get(p) {
            Some(b'"') => {
                let Ok((end, escaped)) = scan::string(b, p) else { return Ok(false) };
                let v = if escaped { unescaped(&b[p + 1..end], run) } else { text.get(p + 1..end).unwrap_or("") };
                budget.emit(Location::Json(path), FieldKind::JsonValue, v)?;
                p = end + 1;
            }
            Some(&c @ (b'{' | b'[')) => {
                let object = c == b'{';
                let q = scan::skip_ws(b, p + 1);
                if b.get(q) == Some(if object { &b'}' } else { &b']' }) {
                    p = q + 1;
                } else {
                    if path.len() >= max_depth {
                        return Ok(false);
                    }
                    path.push(Seg::Index(0));
                    if object {
                        open.push(0);
                        let Some(v) = json_key(b, text, q, (path.len() - 1, 0), path, memo, run, budget)? else { return Ok(false) };
                        p = v;
                    } else {
                        open.push(ARRAY);
                        p = q;
                    }
                    continue 'value;
                }
            }
            Some(b'-' | b'0'..=b'9') => match scan::number(b, p) {
                Ok((after, _)) => p = after,
                Err(_) => return Ok(false),
            },
            Some(b't' | b'f' | b'n') => match scan::literal(b, p) {
                Ok(after) => p = after,
                Err(_) => return Ok(false),
            },
            _ => return Ok(false),
        }
        // After a value: a separator, a closer, or the end (compact JSON has no whitespace here).
        loop {
            let c = match b.get(p) {
                Some(&c) if c > b' ' => c,
                _ => {
                    p = scan::skip_ws(b, p);
                    match b.get(p) {
                        Some(&c) => c,
                        None => return Ok(open.is_empty()),
                    }
                }
            };
            let Some(top) = open.last_mut() else { return Ok(false) };
            match c {
                b',' => {
                    let q = scan::skip_ws(b, p + 1);
                    if *top != ARRAY {
                        *top += 1;
                        let at = (path.len() - 1, *top as usize);
                        let Some(v) = json_key(b, text, q, at, path, memo, run, budget)? else { return Ok(false) };
                        p = v;
                    } else {
                        if let Some(Seg::Index(i)) = path.last_mut() {
                            *i += 1;
                        }
                        p = q;
                    }
                    continue 'value;
                }
                b'}' if *top != ARRAY => {}
                b']' if *top == ARRAY => {}
                _ => return Ok(false),
            }
            open.pop();
            path.pop();
            p += 1;
        }
    }
}

/// The unescaped value of string contents checked by `palisade_json::scan::string`, in `buf`.
fn unescaped<'r>(raw: &[u8], buf: &'r mut Vec<u8>) -> &'r str {
    buf.clear();
    palisade_json::scan::unescape_into(raw, buf);
    // Checked strings unescape to UTF-8 (lone surrogates are rejected); never fails.
    std::str::from_utf8(buf).unwrap_or("\u{FFFD}")
}

/// A JSON object key at `p` (after whitespace), the `at`-th key (position, from 0) of an
/// object at depth `at.0`: put on the path (replacing the segment of the object's previous
/// key) and handed over; returns the offset of its value (`None`: not a key and `:`). When the
/// last object at that depth had the same key at that position, unescaped and judged clean
/// ([`Verdict`]), the key is only counted: the objects of an array share their keys, and each
/// would otherwise be scanned and looked up again.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn json_key<'b>(
    b: &'b [u8],
    text: &'b str,
    p: usize,
    at: (usize, usize),
    path: &mut [Seg<'b>],
    memo: &mut Vec<&'b str>,
    esc_buf: &mut Vec<u8>,
    budget: &mut Budget<'_>,
) -> Result<Option<usize>, Stop> {
    let (depth, pos) = at;
    if depth < SHAPE_DEPTHS && pos < SHAPE_KEYS {
        if let Some(&k) = memo.get(depth * SHAPE_KEYS + pos) {
            let n = k.len();
            // `"`, the same bytes, `"`: the same string, without escapes, and valid.
            if n != 0 && b.get(p) == Some(&b'"') && b.get(p + 1 + n) == Some(&b'"') && same_bytes(&b[p + 1..p + 1 + n], k.as_bytes()) {
                budget.count(k)?;
                if let Some(top) = path.last_mut() {
                    *top = Seg::Key(Cow::Borrowed(k));
                }
                return Ok(colon(b, p + 2 + n));
            }
        }
    }
    json_key_read(b, text, p, at, path, memo, esc_buf, budget)
}

/// `:` (after whitespace) at `p`; the offset of the value after it (after whitespace).
#[inline(always)]
fn colon(b: &[u8], p: usize) -> Option<usize> {
    if b.get(p) == Some(&b':') {
        return Some(palisade_json::scan::skip_ws(b, p + 1));
    }
    palisade_json::scan::colon(b, p).ok()
}

/// Whether `x` and `y` (of the same length) hold the same bytes: short keys compared as one or
/// two (overlapping) words.
#[inline(always)]
fn same_bytes(x: &[u8], y: &[u8]) -> bool {
    let n = x.len();
    if n != y.len() {
        return false;
    }
    let w8 = |s: &[u8], i: usize| s.get(i..i + 8).map(|w| u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]));
    let w4 = |s: &[u8], i: usize| s.get(i..i + 4).map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]));
    match n {
        0..=3 => x == y,
        4..=8 => w4(x, 0) == w4(y, 0) && w4(x, n - 4) == w4(y, n - 4),
        9..=16 => w8(x, 0) == w8(y, 0) && w8(x, n - 8) == w8(y, n - 8),
        _ => x == y,
    }
}

/// [`json_key`] for a key not seen at that place before: read, put on the path, handed over.
#[allow(clippy::too_many_arguments)]
#[inline(never)]
fn json_key_read<'b>(
    b: &'b [u8],
    text: &'b str,
    p: usize,
    at: (usize, usize),
    path: &mut [Seg<'b>],
    memo: &mut Vec<&'b str>,
    esc_buf: &mut Vec<u8>,
    budget: &mut Budget<'_>,
) -> Result<Option<usize>, Stop> {
    if b.get(p) != Some(&b'"') {
        return Ok(None);
    }
    let Ok((end, escaped)) = palisade_json::scan::string(b, p) else { return Ok(None) };
    let k: Cow<'b, str> = if escaped { Cow::Owned(unescaped(&b[p + 1..end], esc_buf).to_owned()) } else { Cow::Borrowed(text.get(p + 1..end).unwrap_or("")) };
    let Some(top) = path.last_mut() else { return Ok(None) };
    *top = Seg::Key(k);
    let mut clean = false;
    if let Some(Seg::Key(k)) = path.last() {
        clean = budget.emit_judged(Location::Json(path), FieldKind::JsonKey, k)?;
    }
    let (depth, pos) = at;
    if depth < SHAPE_DEPTHS && pos < SHAPE_KEYS {
        let slot = depth * SHAPE_KEYS + pos;
        if memo.len() <= slot {
            memo.resize((depth + 1) * SHAPE_KEYS, "");
        }
        memo[slot] = match path.last() {
            Some(Seg::Key(Cow::Borrowed(k))) if clean => k,
            _ => "",
        };
    }
    Ok(colon(b, end + 1))
}

fn multipart_body(ct: &str, body: &[u8], budget: &mut Budget<'_>) -> Result<bool, Stop> {
    let Ok(boundary) = multipart::boundary(ct) else { return Ok(false) };
    let mut parts = Vec::new();
    if multipart::parse(body, &boundary, &multipart::Limits::default(), &mut parts).is_err() {
        return Ok(false);
    }
    for p in &parts {
        budget.emit(Location::Field(&p.name), FieldKind::FormName, &p.name)?;
        if let Some(fname) = &p.filename {
            budget.emit(Location::Field(&p.name), FieldKind::MultipartFilename, fname)?;
            continue;
        }
        if let Ok(text) = std::str::from_utf8(p.body) {
            budget.emit(Location::Field(&p.name), FieldKind::MultipartValue, text)?;
        }
    }
    Ok(true)
}

fn xml_body(body: &[u8], budget: &mut Budget<'_>) -> Result<bool, Stop> {
    let Ok(doc) = std::str::from_utf8(body) else { return Ok(false) };
    budget.emit(Location::Body, FieldKind::XmlDocument, doc)?;
    let mut stack: Vec<&str> = Vec::new();
    let text_of = |span: xml::Span| doc.get(span).unwrap_or("");
    for tok in xml::Tokenizer::new(body) {
        let tok = match tok {
            Ok(t) => t,
            Err(e) => {
                // Not well-formed: the rest is inspected as raw text.
                let rest = doc.get(e.offset..).unwrap_or("");
                budget.emit(Location::Body, FieldKind::Body, rest)?;
                break;
            }
        };
        match tok {
            xml::Token::Text { text } | xml::Token::Cdata { text } => {
                let t = text_of(text).trim();
                budget.emit(Location::Xml(&stack, None), FieldKind::XmlText, t)?;
            }
            xml::Token::StartTag { name, attrs, self_closing } => {
                stack.push(text_of(name));
                for a in xml::attributes(body, attrs).flatten() {
                    budget.emit(Location::Xml(&stack, Some(text_of(a.name))), FieldKind::XmlAttribute, text_of(a.value))?;
                }
                if self_closing {
                    stack.pop();
                }
            }
            xml::Token::EndTag { .. } => {
                stack.pop();
            }
            xml::Token::Comment { text } => budget.emit(Location::Xml(&stack, None), FieldKind::XmlText, text_of(text).trim())?,
            xml::Token::XmlDecl { .. } | xml::Token::Pi { .. } | xml::Token::Doctype { .. } => {}
        }
    }
    Ok(true)
}
