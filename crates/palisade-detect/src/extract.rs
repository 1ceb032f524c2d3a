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

use palisade_body::coding::{inflate, Coding, Inflated};
use palisade_body::media::{self, MediaKind};
use palisade_body::{multipart, xml};
use palisade_core::RequestView;

use crate::decode::transport_decode;
use crate::FieldKind;

#[cfg(test)]
mod head_tests;
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
    /// A value a protocol-aware stage took out of the request
    /// ([`palisade_core::ProtocolValues`]), with the location it gave
    /// (`graphql.query.user.name`).
    Named(&'a str),
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
            Location::Named(n) => f.write_str(n),
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

/// Depths and key positions remembered by the JSON walk (see [`key_step`]).
const SHAPE_DEPTHS: usize = 16;
const SHAPE_KEYS: usize = 32;

/// Depth (path length) below which an object that is a member's value is read by a call of
/// [`members`] from the enclosing object's (bounding the call stack), deeper by the walk.
const NESTED: usize = 16;

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
    memo: Vec<Known<'static>>,
    /// A body decompressed from its declared `Content-Encoding`.
    inflated: Vec<u8>,
}

impl Scratch {
    /// The last body [`Extractor::body`] read decompressed from its `Content-Encoding` (empty
    /// when it was read as sent).
    pub fn inflated_body(&self) -> Option<&[u8]> {
        (!self.inflated.is_empty()).then_some(&self.inflated[..])
    }
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

/// The callback of [`Extractor::head`].
type Callback<'c> = dyn FnMut(&Field<'_>) -> Verdict + 'c;

/// The counters of one phase against its limits.
#[derive(Clone, Copy, Debug)]
struct Tally {
    values: usize,
    bytes: usize,
    limits: Limits,
}

impl Tally {
    /// Counts a value of `len` bytes against the limits (every value, handed over or not).
    #[inline(always)]
    fn count(&mut self, len: usize) -> Result<(), Stop> {
        self.values += 1;
        self.bytes += len;
        // One branch on the way through (both limits tested at once).
        if (self.values > self.limits.max_values) | (self.bytes > self.limits.max_bytes) {
            return Err(self.exceeded());
        }
        Ok(())
    }

    /// Which limit [`Tally::count`] found exceeded (the values first).
    #[cold]
    fn exceeded(&self) -> Stop {
        if self.values > self.limits.max_values {
            Stop::Exceeded(Exceeded::Values { limit: self.limits.max_values })
        } else {
            Stop::Exceeded(Exceeded::Bytes { limit: self.limits.max_bytes })
        }
    }

    /// [`Tally::count`], or (`CHECK` false: the caller knows that the limits cannot be
    /// reached) only the counting.
    #[inline(always)]
    fn tick<const CHECK: bool>(&mut self, len: usize) -> Result<(), Stop> {
        if CHECK {
            return self.count(len);
        }
        self.values += 1;
        self.bytes += len;
        Ok(())
    }

    /// Counts a value and hands it over (not the empty one); `Ok(true)` when the callback
    /// judged it clean.
    #[inline(always)]
    fn hand<const CHECK: bool, F: ?Sized + FnMut(&Field<'_>) -> Verdict>(
        &mut self,
        f: &mut F,
        location: Location<'_>,
        kind: FieldKind,
        value: &str,
    ) -> Result<bool, Stop> {
        if value.is_empty() {
            return Ok(false);
        }
        self.tick::<CHECK>(value.len())?;
        judge(f, &Field { location, kind, value })
    }
}

impl Tally {
    /// [`Tally::hand`] with the callback called in place (no [`judge`] in between): for
    /// [`members`], whose loop has the registers to spare.
    #[inline(always)]
    fn hand_here<const CHECK: bool, F: ?Sized + FnMut(&Field<'_>) -> Verdict>(
        &mut self,
        f: &mut F,
        location: Location<'_>,
        kind: FieldKind,
        value: &str,
    ) -> Result<bool, Stop> {
        if value.is_empty() {
            return Ok(false);
        }
        self.tick::<CHECK>(value.len())?;
        match f(&Field { location, kind, value }) {
            std::ops::ControlFlow::Continue(clean) => Ok(clean),
            std::ops::ControlFlow::Break(()) => Err(Stop::Caller),
        }
    }
}

/// The callback's verdict on a field, as a `Result` (`Break`: [`Stop::Caller`]). Not inlined:
/// the walks keep their counters in registers around it.
#[inline(never)]
fn judge<F: ?Sized + FnMut(&Field<'_>) -> Verdict>(f: &mut F, field: &Field<'_>) -> Result<bool, Stop> {
    match f(field) {
        std::ops::ControlFlow::Continue(clean) => Ok(clean),
        std::ops::ControlFlow::Break(()) => Err(Stop::Caller),
    }
}

/// The counters and limits of one phase, and its callback: generic, so that the body's callback
/// (called for every value of a JSON body) is a direct call.
struct Budget<'f, F: ?Sized> {
    tally: Tally,
    f: &'f mut F,
}

impl<F: ?Sized + FnMut(&Field<'_>) -> Verdict> Budget<'_, F> {
    #[inline]
    fn emit(&mut self, location: Location<'_>, kind: FieldKind, value: &str) -> Result<(), Stop> {
        self.tally.hand::<true, F>(self.f, location, kind, value).map(|_| ())
    }
}

/// Counters of one extraction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub values: usize,
    pub bytes: usize,
    /// Why the body (or part of it) was not read as text: binary content or an encoding that
    /// is not decoded ([`Skipped`]).
    pub skipped: Option<Skipped>,
}

/// Why a body was not inspected as text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Skipped {
    /// A binary media type (`application/octet-stream`, protobuf, gRPC, images, audio,
    /// video, fonts, archives, PDF): no text grammar applies to its bytes.
    BinaryType,
    /// Declared as something else, the bytes are binary (NUL or other control bytes): what
    /// a client sends compressed or serialised without saying so.
    BinaryContent,
    /// A `Content-Encoding` that is not decoded (`br`, `zstd`, `compress`, several codings).
    Encoding,
    /// A gzip or deflate body that does not decompress.
    Inflate,
}

impl std::fmt::Display for Skipped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Skipped::BinaryType => "binary media type",
            Skipped::BinaryContent => "binary content",
            Skipped::Encoding => "content encoding not decoded",
            Skipped::Inflate => "compressed body does not decompress within the limits",
        })
    }
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
        let mut budget = Budget { tally: Tally { values: 0, bytes: 0, limits: self.limits }, f };
        let r = self.head_inner(req, scratch, &mut budget);
        (Counts { values: budget.tally.values, bytes: budget.tally.bytes, skipped: None }, r)
    }

    /// The body, by its `Content-Type`. Generic in the callback (a `&mut dyn FnMut` works too).
    ///
    /// A body with a `Content-Encoding` is read decompressed when the coding is `gzip` or
    /// `deflate` (zlib or raw), at most [`Limits::max_bytes`] bytes of output (more is
    /// [`Exceeded::Bytes`], as for an uncompressed body). Under any other coding, or when the
    /// body does not decompress, text is inspected as it is (servers that ignore a request's
    /// coding read it so) and binary bytes are not inspected, with the reason recorded
    /// ([`Counts::skipped`]).
    pub fn body<F: ?Sized + FnMut(&Field<'_>) -> Verdict>(&self, req: &RequestView<'_>, scratch: &mut Scratch, f: &mut F) -> (Counts, Result<(), Stop>) {
        let mut budget = Budget { tally: Tally { values: 0, bytes: 0, limits: self.limits }, f };
        let mut skipped = None;
        // Holds the body inflated below until the next body ([`Scratch::inflated_body`]).
        scratch.inflated.clear();
        let token = req.headers.get(http::header::CONTENT_ENCODING).map(|v| v.as_bytes().trim_ascii());
        let r = match (token, token.and_then(Coding::from_token)) {
            (None, _) => body_inner(req.headers, req.body, scratch, &mut budget, &mut skipped),
            (Some(c), _) if c.is_empty() || c.eq_ignore_ascii_case(b"identity") => body_inner(req.headers, req.body, scratch, &mut budget, &mut skipped),
            (Some(_), Some(coding)) => {
                let mut out = std::mem::take(&mut scratch.inflated);
                let inflated = inflate(req.body, coding, self.limits.max_bytes, &mut out);
                let r = match inflated {
                    Inflated::Done => body_inner(req.headers, &out, scratch, &mut budget, &mut skipped),
                    // A body that inflates beyond what is inspected is over the byte limit,
                    // as an uncompressed one would be: never a way to pass uninspected.
                    Inflated::TooLarge => Err(Stop::Exceeded(Exceeded::Bytes { limit: self.limits.max_bytes })),
                    // Not compressed after all: most servers ignore a request's coding and read
                    // the bytes, so text is inspected as it is.
                    Inflated::Corrupt if !binary_bytes(req.body) => body_inner(req.headers, req.body, scratch, &mut budget, &mut skipped),
                    Inflated::Corrupt => {
                        skipped = Some(Skipped::Inflate);
                        Ok(())
                    }
                };
                if !matches!(inflated, Inflated::Done) {
                    out.clear();
                }
                scratch.inflated = out;
                r
            }
            // A coding not decoded here: text is inspected as it is (a server that ignores the
            // header reads it so); binary bytes are skipped with the reason.
            (Some(_), None) if !binary_bytes(req.body) => body_inner(req.headers, req.body, scratch, &mut budget, &mut skipped),
            (Some(_), None) => {
                skipped = Some(Skipped::Encoding);
                Ok(())
            }
        };
        (Counts { values: budget.tally.values, bytes: budget.tally.bytes, skipped }, r)
    }

    /// Values a protocol-aware stage took out of the request (GraphQL arguments and
    /// variables), under the same limits as a phase: keys as JSON keys, values as JSON values.
    pub fn protocol_values<F: ?Sized + FnMut(&Field<'_>) -> Verdict>(&self, values: &[palisade_core::ProtocolValue], f: &mut F) -> (Counts, Result<(), Stop>) {
        let mut budget = Budget { tally: Tally { values: 0, bytes: 0, limits: self.limits }, f };
        let mut r = Ok(());
        for v in values {
            let kind = if v.key { FieldKind::JsonKey } else { FieldKind::JsonValue };
            if let Err(e) = budget.emit(Location::Named(&v.location), kind, &v.value) {
                r = Err(e);
                break;
            }
        }
        (Counts { values: budget.tally.values, bytes: budget.tally.bytes, skipped: None }, r)
    }

    fn head_inner(&self, req: &RequestView<'_>, sc: &mut Scratch, budget: &mut Budget<'_, Callback<'_>>) -> Result<(), Stop> {
        // Path segments, as the client sent them (the canonical form would hide a traversal).
        let raw = req.raw_path;
        let path = raw.strip_prefix('/').unwrap_or(raw);
        for (i, seg) in path.split('/').enumerate() {
            let v = transport_decode(seg, false, &mut sc.value, &mut sc.run);
            budget.emit(Location::PathSegment(i), FieldKind::PathSegment, v)?;
        }
        if climbs(raw.as_bytes()) || climbs_encoded(raw) || spans_segments(raw) || unsent_segment(raw) {
            let v = transport_decode(raw, false, &mut sc.value, &mut sc.run);
            budget.emit(Location::Path, FieldKind::PathSegment, v)?;
        }
        if let Some(q) = req.query {
            pairs(q, sc, budget, true)?;
        }
        // The inspected headers and the cookies, found in one pass over the request's headers
        // (instead of one hashed lookup per inspected name), then handed over in the order of
        // one `get_all` per name: the configured names in order, then `Cookie`; each name's
        // values in the order received (`HeaderMap::iter` gives them so, name after name).
        let mut found: [Option<(usize, &http::HeaderValue)>; FOUND] = [None; FOUND];
        let cookie = self.headers.len();
        let mut n = 0;
        for (name, v) in req.headers.iter() {
            let at = if *name == http::header::COOKIE {
                cookie
            } else {
                match self.headers.iter().position(|(h, _)| h == name) {
                    Some(i) => i,
                    None => continue,
                }
            };
            if n == FOUND {
                // Unusually many: looked up name by name.
                return self.headers_by_name(req, sc, budget);
            }
            // Stable insertion by position.
            let mut j = n;
            while j > 0 && found[j - 1].is_some_and(|(p, _)| p > at) {
                found[j] = found[j - 1];
                j -= 1;
            }
            found[j] = Some((at, v));
            n += 1;
        }
        for &(at, v) in found[..n].iter().flatten() {
            if at == cookie {
                cookies(v, sc, budget)?;
            } else {
                let text = String::from_utf8_lossy(v.as_bytes());
                header_value(&self.headers[at], &text, sc, budget)?;
            }
        }
        self.other_headers(req, budget)
    }

    /// Every other header (known names and unknown ones), in the order received, each judged
    /// by its grammar first ([`crate::headers::conforms`]): a value that conforms is clean
    /// without the detectors; any other is handed over as free text, at `header.NAME` (the
    /// name in lowercase).
    fn other_headers(&self, req: &RequestView<'_>, budget: &mut Budget<'_, Callback<'_>>) -> Result<(), Stop> {
        for (name, v) in req.headers.iter() {
            if *name == http::header::COOKIE || self.headers.iter().any(|(h, _)| h == name) || crate::headers::conforms(name.as_str(), v.as_bytes()) {
                continue;
            }
            let text = String::from_utf8_lossy(v.as_bytes());
            budget.emit(Location::Header(name.as_str()), FieldKind::Header, &text)?;
        }
        Ok(())
    }

    /// The inspected headers and the cookies of [`Extractor::head_inner`], one `get_all` per
    /// name (requests with more than [`FOUND`] such values).
    #[cold]
    fn headers_by_name(&self, req: &RequestView<'_>, sc: &mut Scratch, budget: &mut Budget<'_, Callback<'_>>) -> Result<(), Stop> {
        for (name, display) in &self.headers {
            for v in req.headers.get_all(name) {
                let text = String::from_utf8_lossy(v.as_bytes());
                header_value(&(name.clone(), display.clone()), &text, sc, budget)?;
            }
        }
        for v in req.headers.get_all(http::header::COOKIE) {
            cookies(v, sc, budget)?;
        }
        self.other_headers(req, budget)
    }
}

/// One value of an inspected header, at `header.NAME`. A `Referer` that is an absolute
/// `http(s)` URL with a query is a page's address and that page's parameters (on another site,
/// most often its search: `https://www.google.com/search?q=...`): the URL before the query is
/// judged as header text, each parameter's name (as a query name) and value (as header text,
/// which every header detector judges) once decoded, as the request's own query parameters
/// are, not the whole as one blob in which a search's words and the next parameter's `&hl=`
/// run together.
fn header_value<F: ?Sized + FnMut(&Field<'_>) -> Verdict>(
    (name, display): &(http::HeaderName, String),
    text: &str,
    sc: &mut Scratch,
    budget: &mut Budget<'_, F>,
) -> Result<(), Stop> {
    let loc = Location::Header(display);
    let Some((url, query)) = (*name == http::header::REFERER).then(|| referer_query(text)).flatten() else {
        return budget.emit(loc, FieldKind::Header, text);
    };
    budget.emit(loc, FieldKind::Header, url)?;
    for pair in query.split('&') {
        if pair.is_empty() {
            continue;
        }
        let (n, v) = pair.split_once('=').unwrap_or((pair, ""));
        let name = transport_decode(n, true, &mut sc.name, &mut sc.run);
        budget.emit(loc, FieldKind::QueryName, name)?;
        let value = transport_decode(v, true, &mut sc.value, &mut sc.run);
        budget.emit(loc, FieldKind::Header, value)?;
    }
    Ok(())
}

/// An absolute `http(s)` URL (scheme case-insensitive, an authority after `//`) split at its
/// query's `?`: the address and the query (without a fragment).
fn referer_query(text: &str) -> Option<(&str, &str)> {
    let b = text.as_bytes();
    let rest = if b.len() > 8 && b[..8].eq_ignore_ascii_case(b"https://") {
        8
    } else if b.len() > 7 && b[..7].eq_ignore_ascii_case(b"http://") {
        7
    } else {
        return None;
    };
    let q = rest + memchr::memchr(b'?', &b[rest..])?;
    let query = &text[q + 1..];
    Some((&text[..q], query.split('#').next().unwrap_or(query)))
}

/// Whether a segment of a (raw) path climbs once its escapes are decoded as servers decode
/// them ([`crate::path::normalise`]: percent escapes in up to four layers, `%uXXXX`, overlong
/// UTF-8 forms, full-width dots): `%2e%2e`, `.%2e`, `%252e%252e`, `%c0%ae%c0%ae`,
/// `%uff0e%uff0e`, `%2e%2e%2f`. Only segments with a `%` are decoded.
fn climbs_encoded(raw: &str) -> bool {
    memchr::memchr(b'%', raw.as_bytes()).is_some()
        && raw.split('/').any(|seg| {
            seg.contains('%') && {
                let (n, _) = crate::path::normalise(seg);
                climbs(n.as_bytes())
            }
        })
}

/// Whether a (raw) path has, before its last segment, a segment that no client sends (RFC
/// 3986 §5.2.4: clients remove dot segments): `.` (or `%2e`, or `.;` with a parameter), or a
/// segment that is nothing but
/// a path parameter (`/;/admin`), which servers that strip parameters resolve as empty after a
/// proxy matched its rules on the path as written. (Then the path is inspected whole too.)
fn unsent_segment(raw: &str) -> bool {
    let b = raw.as_bytes();
    if !b.iter().any(|&c| matches!(c, b'.' | b';' | b'%')) {
        return false;
    }
    let segs: Vec<&str> = raw.split('/').collect();
    segs.iter()
        .take(segs.len().saturating_sub(1))
        .skip(1)
        .any(|seg| seg.starts_with(';') || seg.starts_with(".;") || *seg == "." || seg.eq_ignore_ascii_case("%2e"))
}

/// Whether a value split at the path's slashes would be cut in pieces no detector reads
/// whole (then the path is inspected whole too): a URL inside the path (`/fetch/http://10.0.0.1/`,
/// as proxies and image resizers take one: `://`, encoded or not), or a segment that opens a
/// bracket, a brace or a parenthesis it does not close (an expression with a `/` inside,
/// `%{(#a='multipart/form-data')...}`). Paths with none of `:`, `{`, `(`, `[` and `%` (most)
/// are decided by one pass over the bytes.
fn spans_segments(raw: &str) -> bool {
    let b = raw.as_bytes();
    if !b.iter().any(|&c| matches!(c, b':' | b'{' | b'(' | b'[' | b'%')) {
        return false;
    }
    let path: std::borrow::Cow<'_, [u8]> = if b.contains(&b'%') { crate::other_util::pct_round(b).into() } else { b.into() };
    if memchr::memmem::find(&path, b"://").is_some() {
        return true;
    }
    let unbalanced = |seg: &[u8]| {
        let count = |c: u8| seg.iter().filter(|&&x| x == c).count();
        count(b'{') > count(b'}') || count(b'(') > count(b')') || count(b'[') > count(b']')
    };
    path.split(|&c| c == b'/').any(unbalanced)
}

/// Whether a (raw) path holds `..` or `\\` (then it is inspected whole too): one pass over the
/// bytes instead of two searches.
#[inline]
fn climbs(path: &[u8]) -> bool {
    let mut dot = false;
    for &c in path {
        if c == b'\\' || (dot && c == b'.') {
            return true;
        }
        dot = c == b'.';
    }
    false
}

/// Inspected header and cookie values a request head's single pass over its headers keeps
/// (beyond: looked up name by name).
const FOUND: usize = 16;

/// The cookies of one `Cookie` value: each name, then its value.
fn cookies(v: &http::HeaderValue, sc: &mut Scratch, budget: &mut Budget<'_, Callback<'_>>) -> Result<(), Stop> {
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
    Ok(())
}

/// `name=value&...` (query strings and form bodies; `+` is a space).
fn pairs<F: ?Sized + FnMut(&Field<'_>) -> Verdict>(q: &str, sc: &mut Scratch, budget: &mut Budget<'_, F>, query: bool) -> Result<(), Stop> {
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
        for part in bracket_parts(name) {
            budget.emit(loc(query, name), name_kind, part)?;
        }
        let value = transport_decode(v, true, &mut sc.value, &mut sc.run);
        budget.emit(loc(query, name), value_kind, value)?;
    }
    Ok(())
}

/// The keys of a bracketed parameter name as query-string parsers build objects from it (PHP,
/// Rack, `qs`: `a[b][c]=1` is `{"a": {"b": {"c": "1"}}}`): the text of each `[...]` after the
/// base name, to the first `]`, non-empty (`expand[]` adds nothing). Each is a key the
/// application receives, judged as a name is (`filter[1 OR 1=1]`, `x[__proto__][admin]`).
/// Names without a `[` after their first byte (most) yield nothing.
pub(crate) fn bracket_parts(name: &str) -> impl Iterator<Item = &str> {
    let start = match name.as_bytes().iter().position(|&c| c == b'[') {
        Some(p) if p > 0 => p,
        _ => name.len(),
    };
    let mut rest = &name[start..];
    std::iter::from_fn(move || loop {
        let inner = rest.strip_prefix('[')?;
        let end = inner.find(']')?;
        let part = &inner[..end];
        rest = &inner[end + 1..];
        if !part.is_empty() {
            return Some(part);
        }
    })
}

fn content_type(headers: &http::HeaderMap) -> &str {
    headers.get(http::header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("")
}

/// [`media::kind_of`], with the commonest JSON `Content-Type`s told by one comparison (the
/// same answer; parsing the media type costs more than a small JSON body's keys).
#[inline]
fn media_kind(ct: &str) -> MediaKind {
    match ct.as_bytes() {
        b"application/json" | b"application/json; charset=utf-8" | b"application/json;charset=UTF-8" => MediaKind::Json,
        _ => media::kind_of(ct),
    }
}

/// Media types whose bytes no text grammar applies to.
fn binary_media(ct: &str) -> bool {
    let t = ct.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    let (top, sub) = t.split_once('/').unwrap_or((&t, ""));
    matches!(top, "image" | "audio" | "video" | "font")
        || sub.starts_with("grpc")
        || sub.contains("protobuf")
        || sub.ends_with("+proto")
        || matches!(
            sub,
            "octet-stream"
                | "x-protobuf"
                | "zip"
                | "gzip"
                | "x-gzip"
                | "zstd"
                | "x-tar"
                | "x-7z-compressed"
                | "x-bzip2"
                | "pdf"
                | "wasm"
                | "msgpack"
                | "x-msgpack"
                | "cbor"
                | "vnd.apache.avro+binary"
                | "x-thrift"
                | "vnd.apache.thrift.binary"
        )
}

/// Whether bytes are binary rather than text: a NUL (the gzip header has one, protobuf's
/// zero fields and lengths too), or at least four C0 controls other than tab, newline, form
/// feed and carriage return, making more than one in 16 of the bytes (random bytes have one
/// in 9; a text with a stray control byte is still text). Looks at the first 4 KiB.
fn binary_bytes(b: &[u8]) -> bool {
    let b = &b[..b.len().min(4096)];
    if memchr::memchr(0, b).is_some() {
        return true;
    }
    let controls = b.iter().filter(|&&c| c < 0x20 && !matches!(c, b'\t' | b'\n' | b'\x0c' | b'\r')).count();
    controls >= 4 && controls * 16 > b.len()
}

fn body_inner<F: ?Sized + FnMut(&Field<'_>) -> Verdict>(
    headers: &http::HeaderMap,
    body: &[u8],
    sc: &mut Scratch,
    budget: &mut Budget<'_, F>,
    skipped: &mut Option<Skipped>,
) -> Result<(), Stop> {
    if body.is_empty() {
        return Ok(());
    }
    let ct = content_type(headers);
    if binary_media(ct) {
        *skipped = Some(Skipped::BinaryType);
        return Ok(());
    }
    let kind = media_kind(ct);
    // The bytes decide over the label: a compressed or serialised body sent as JSON, XML or
    // text, which no parser of those grammars accepts (a NUL or raw controls are invalid in
    // JSON and XML). Not a form body: form parsers are lenient, a NUL before `&q=...` leaves
    // the parameter readable; nor a multipart body, whose binary files sit beside text
    // fields (its parts are judged).
    if !matches!(kind, MediaKind::Multipart | MediaKind::Form) && binary_bytes(body) {
        *skipped = Some(Skipped::BinaryContent);
        return Ok(());
    }
    let handled = match kind {
        MediaKind::Json => json(body, sc, budget)? || json_text(body, false, sc, budget)?,
        MediaKind::Form => match std::str::from_utf8(body) {
            Ok(text) => {
                pairs(text, sc, budget, false)?;
                true
            }
            Err(_) => false,
        },
        MediaKind::Multipart => multipart_body(ct, body, budget)?,
        MediaKind::Xml => xml_body(body, budget)?,
        MediaKind::Text | MediaKind::Other => json_text(body, true, sc, budget)?,
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

/// The current container of the JSON walk: an open array; [`ROOT`]: none (the enclosing ones
/// are on [`Scratch::open`]); below, an open object: the slot of its current key in the key
/// memo (`(depth - 1) * SHAPE_KEYS + position`, see [`first_slot`]), or [`NO_SLOT`] past the
/// depths and positions it remembers. Ordered so that one comparison (`< NO_SLOT`) tells a slot.
const ARRAY: u32 = u32::MAX;
const ROOT: u32 = u32::MAX - 1;
const NO_SLOT: u32 = u32::MAX - 2;

/// The key memo's slot of the first key of an object at `depth` (its path's length less one):
/// depths 1 to `SHAPE_DEPTHS - 1` have a row each; beyond, [`NO_SLOT`]. Depth 0 has none: the
/// object there is the document's root, the only object at that depth, so its keys are never
/// looked up again; without its row, the rows of the depths that are (the objects of arrays)
/// start at the memo's first slot, and a body fills (copies) 32 slots fewer.
#[inline(always)]
fn first_slot(depth: usize) -> u32 {
    match depth.wrapping_sub(1) {
        d if d < SHAPE_DEPTHS - 1 => (d * SHAPE_KEYS) as u32,
        _ => NO_SLOT,
    }
}

/// Why the JSON walk ends early: the body is not JSON (or too deep), or [`Stop`].
enum Halt {
    NotJson,
    Stop(Stop),
}

impl From<Stop> for Halt {
    #[inline(always)]
    fn from(s: Stop) -> Self {
        Halt::Stop(s)
    }
}

/// JSON: keys and strings at any depth, numbers and literals skipped. One streaming pass with
/// `palisade_json::scan` (the same syntax rules as the tape parser, no tape): values are
/// handed over as they are read, the path kept on a stack (one segment per open container,
/// replaced in place as keys and indexes advance). `Ok(false)` when the body is not JSON (or
/// deeper than the limit): the caller then inspects it as raw text, after whatever values came
/// before the syntax error (inspecting them too does no harm).
fn json<F: ?Sized + FnMut(&Field<'_>) -> Verdict>(body: &[u8], sc: &mut Scratch, budget: &mut Budget<'_, F>) -> Result<bool, Stop> {
    // Checked once for the whole body: each string is then scanned without checking its UTF-8
    // again (`scan::string_in_text_contents`) and borrowed from it without a boundary check.
    let Some(text) = palisade_json::scan::text(body) else { return Ok(false) };
    // The path to the current value: one segment per open container.
    let mut path: Vec<Seg<'_>> = recycle(std::mem::take(&mut sc.path));
    // Per depth and key position: the last clean key without escapes seen there.
    let mut memo: Vec<Known<'_>> = recycle(std::mem::take(&mut sc.memo));
    // The counters as a local (kept in registers through the walk).
    let mut tally = budget.tally;
    // Every value counted takes three bytes of the body at least (`"x"`; empty strings are
    // not counted) and counts at most the bytes between its quotes (unescaping only shortens):
    // when the whole body cannot reach the limits, the walk does not test them.
    let limits = tally.limits;
    let unbounded = tally.values.saturating_add(body.len() / 3) <= limits.max_values && tally.bytes.saturating_add(body.len()) <= limits.max_bytes;
    let r = if unbounded {
        json_walk::<false, F>(text, &mut sc.open, &mut sc.run, &mut path, &mut memo, &mut tally, budget.f)
    } else {
        json_walk::<true, F>(text, &mut sc.open, &mut sc.run, &mut path, &mut memo, &mut tally, budget.f)
    };
    budget.tally = tally;
    sc.path = recycle(path);
    sc.memo = recycle(memo);
    match r {
        Ok(()) => Ok(true),
        Err(Halt::NotJson) => Ok(false),
        Err(Halt::Stop(s)) => Err(s),
    }
}

/// A body whose label is not JSON but whose text is (a `navigator.sendBeacon` payload sent as
/// `text/plain`, an error-report envelope, a log batch): walked as JSON, its values located,
/// instead of judged as one blob of text. `single`: also a body that is one JSON document
/// ([`json`] already tried that for a JSON label). Otherwise a body of JSON Lines, two
/// documents or more, one a line (NDJSON, the envelopes of error-report SDKs), each walked in
/// turn at the body's locations (the documents of a batch share their shape, so an exclusion
/// on `body/exception/...` covers every line). Only a body that is JSON throughout: every line
/// (or the whole) an object or an array that parses completely; anything else stays text.
/// `Ok(false)` when it is not.
fn json_text<F: ?Sized + FnMut(&Field<'_>) -> Verdict>(body: &[u8], single: bool, sc: &mut Scratch, budget: &mut Budget<'_, F>) -> Result<bool, Stop> {
    let opens = |b: &[u8]| matches!(b.iter().find(|c| !c.is_ascii_whitespace()), Some(b'{' | b'['));
    if !opens(body) {
        return Ok(false);
    }
    let limits = palisade_json::Limits::default();
    let mut tape = palisade_json::Tape::default();
    if single && palisade_json::parse_into(body, &mut tape, &limits).is_ok() {
        return json(body, sc, budget);
    }
    let lines = || body.split(|&c| c == b'\n').filter(|l| !l.iter().all(u8::is_ascii_whitespace));
    let mut count = 0usize;
    for line in lines() {
        if !opens(line) || palisade_json::parse_into(line, &mut tape, &limits).is_err() {
            return Ok(false);
        }
        count += 1;
    }
    if count < 2 {
        return Ok(false);
    }
    for line in lines() {
        if !json(line, sc, budget)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// [`json`] with its buffers. The current container's state (`top`: [`ARRAY`], an object's
/// key position, or [`ROOT`]) is kept in a local, the enclosing ones on `open`.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn json_walk<'b, const CHECK: bool, F: ?Sized + FnMut(&Field<'_>) -> Verdict>(
    text: &'b str,
    open: &mut Vec<u32>,
    run: &mut Vec<u8>,
    path: &mut Vec<Seg<'b>>,
    memo: &mut Vec<Known<'b>>,
    tally: &mut Tally,
    f: &mut F,
) -> Result<(), Halt> {
    use palisade_json::scan;
    let b = text.as_bytes();
    let max_depth = tally.limits.max_depth as usize;
    open.clear();
    path.reserve(16);
    let mut top = ROOT;
    let mut p = 0;
    // Set when [`members`] hands the walk back after a value (at its separator).
    let mut after = false;
    // Set when an object's key is at `p` (read by [`members`]).
    let mut at_key = false;
    'value: loop {
        // Inside an object, its members are read by `members` (a loop of its own, with its
        // own registers) until a container, whitespace, the object's end or an error.
        if top <= NO_SLOT {
            let parent = open.last().copied().unwrap_or(ROOT);
            let r = members::<CHECK, F>(text, p, at_key, top, parent, path, open, max_depth, memo, run, tally, f)?;
            at_key = false;
            match r {
                Resume::Value(q, t) => {
                    p = q;
                    top = t;
                }
                Resume::After(q, t) => {
                    p = q;
                    top = t;
                    after = true;
                }
            }
        }
        if !after {
            let Some(&c) = b.get(p) else { return Err(Halt::NotJson) };
            match c {
                b'"' => {
                    let Ok((raw, end, escaped)) = scan::string_in_text_contents(text, p) else { return Err(Halt::NotJson) };
                    let v = if escaped { unescaped(raw.as_bytes(), run) } else { raw };
                    tally.hand::<CHECK, F>(f, Location::Json(path), FieldKind::JsonValue, v)?;
                    p = end + 1;
                }
                b'{' | b'[' => {
                    let q = scan::skip_ws(b, p + 1);
                    // `}` and `]` are two after `{` and `[`: an empty container is skipped.
                    if b.get(q) == Some(&(c + 2)) {
                        p = q + 1;
                    } else {
                        if path.len() >= max_depth {
                            return Err(Halt::NotJson);
                        }
                        path.push(Seg::Index(0));
                        open.push(top);
                        if c == b'{' {
                            top = first_slot(path.len() - 1);
                            at_key = true;
                        } else {
                            top = ARRAY;
                        }
                        p = q;
                        continue 'value;
                    }
                }
                b'-' | b'0'..=b'9' => match scan::number(b, p) {
                    Ok((after, _)) => p = after,
                    Err(_) => return Err(Halt::NotJson),
                },
                b't' | b'f' | b'n' => match scan::literal(b, p) {
                    Ok(after) => p = after,
                    Err(_) => return Err(Halt::NotJson),
                },
                // Whitespace before a value (at the start, after `[`, `,` or a remembered key's `:`).
                b' ' | b'\n' | b'\r' | b'\t' => {
                    p = scan::skip_ws(b, p);
                    continue 'value;
                }
                _ => return Err(Halt::NotJson),
            }
        }
        after = false;
        // After a value: a separator, a closer, or the end (compact JSON has no whitespace here).
        loop {
            let c = match b.get(p) {
                Some(&c) if c > b' ' => c,
                _ => {
                    p = scan::skip_ws(b, p);
                    match b.get(p) {
                        Some(&c) => c,
                        None if top == ROOT => return Ok(()),
                        None => return Err(Halt::NotJson),
                    }
                }
            };
            if c == b',' {
                if top < NO_SLOT {
                    // An object's next key position; past the last one a row remembers, none.
                    let next = top + 1;
                    top = if next % SHAPE_KEYS as u32 == 0 { NO_SLOT } else { next };
                    // The key remembered there, written right after the `,` (compact JSON):
                    // only counted (see `key_step`, which decides every other case).
                    if let Some(known) = memo.get(top as usize) {
                        if known.matches(b, p + 1) {
                            let k = known.key;
                            tally.tick::<CHECK>(k.len())?;
                            if let Some(s) = path.last_mut() {
                                *s = Seg::Key(Cow::Borrowed(k));
                            }
                            // After `,"key":`.
                            p += k.len() + 4;
                            continue 'value;
                        }
                    }
                    p = scan::skip_ws(b, p + 1);
                    at_key = true;
                } else if top == ARRAY {
                    if let Some(Seg::Index(i)) = path.last_mut() {
                        *i += 1;
                    }
                    p += 1;
                } else if top == NO_SLOT {
                    p = scan::skip_ws(b, p + 1);
                    at_key = true;
                } else {
                    return Err(Halt::NotJson);
                }
                continue 'value;
            }
            let close = if top == ARRAY { b']' } else { b'}' };
            if c != close || top == ROOT {
                return Err(Halt::NotJson);
            }
            top = open.pop().unwrap_or(ROOT);
            path.pop();
            p += 1;
        }
    }
}

/// Where [`members`] hands the walk back: at a value it does not read (a container, or
/// whitespace before it), or after a value, at what follows it when that is not `,` (the
/// object's end, whitespace); with the object's current key slot.
enum Resume {
    Value(usize, u32),
    After(usize, u32),
}

/// The members of an object from the value at `p` (`top`: the slot of its key, or
/// [`NO_SLOT`]): strings, numbers and literals, and after each `,` the next key, as
/// [`json_walk`] reads them (the same steps in the same order, the same calls and errors),
/// until a value or separator it leaves to the walk ([`Resume`]); in an array of objects
/// (`parent`: the enclosing container's state, [`ARRAY`]), on to the next object when it
/// follows as `},{"`. Not inlined: the loop over an object's members (most of an API body)
/// gets registers of its own instead of sharing the walk's.
#[allow(clippy::too_many_arguments)]
#[inline(never)]
fn members<'b, const CHECK: bool, F: ?Sized + FnMut(&Field<'_>) -> Verdict>(
    text: &'b str,
    mut p: usize,
    at_key: bool,
    mut top: u32,
    parent: u32,
    segs: &mut Vec<Seg<'b>>,
    open: &mut Vec<u32>,
    max_depth: usize,
    memo: &mut Vec<Known<'b>>,
    run: &mut Vec<u8>,
    tally: &mut Tally,
    f: &mut F,
) -> Result<Resume, Halt> {
    use palisade_json::scan;
    let b = text.as_bytes();
    // The counters as locals of this loop (in registers), written back however it ends.
    let limits = tally.limits;
    // The path as a slice (its length is the same but around a nested object's call).
    let mut path = segs.as_mut_slice();
    // The segment of the object's current key (an object is open: the path is not empty).
    let Some(last) = path.len().checked_sub(1) else { return Err(Halt::NotJson) };
    let mut t = Tally { values: tally.values, bytes: tally.bytes, limits };
    if at_key {
        match key_step::<CHECK, F>(text, p, top, false, last, path, memo, run, &mut t, tally, f) {
            Ok((after, known)) => {
                p = after;
                // The first key of an object that is not an array's element (its slot is the
                // first of a row) not the one remembered there: the object is not of the
                // previous one's shape, and its other keys are neither looked up nor
                // remembered (see `first_slot`).
                if !known && parent != ARRAY && top < NO_SLOT && top % SHAPE_KEYS as u32 == 0 {
                    top = NO_SLOT;
                }
            }
            Err(e) => {
                tally.values = t.values;
                tally.bytes = t.bytes;
                return Err(e);
            }
        }
    }
    let r = 'member: loop {
        let Some(&c) = b.get(p) else { break Err(Halt::NotJson) };
        match c {
            b'"' => {
                let Ok((raw, end, escaped)) = scan::string_in_text_contents(text, p) else { break Err(Halt::NotJson) };
                let v = if escaped { unescaped(raw.as_bytes(), run) } else { raw };
                // The verdict is not kept (values are not remembered): only `Break` is looked at.
                if !v.is_empty() {
                    if let Err(e) = t.tick::<CHECK>(v.len()) {
                        break Err(e.into());
                    }
                    if f(&Field { location: Location::Json(path), kind: FieldKind::JsonValue, value: v }).is_break() {
                        break Err(Halt::Stop(Stop::Caller));
                    }
                }
                p = end + 1;
            }
            // A digit then `,` or `}` is a whole number (most of an API body's: counts, ids,
            // flags), known without the number's scan.
            b'0'..=b'9' if matches!(b.get(p + 1), Some(b',' | b'}')) => p += 1,
            b'1'..=b'9' if matches!(b.get(p + 1), Some(b'0'..=b'9')) && matches!(b.get(p + 2), Some(b',' | b'}')) => p += 2,
            b'-' | b'0'..=b'9' => match scan::number(b, p) {
                Ok((after, _)) => p = after,
                Err(_) => break Err(Halt::NotJson),
            },
            b't' | b'f' | b'n' => match scan::literal(b, p) {
                Ok(after) => p = after,
                Err(_) => break Err(Halt::NotJson),
            },
            // An object as a member's value (not too deep for the call stack): read by a call
            // of this loop, with the steps of the walk around it (the empty object skipped,
            // the depth limit, the object pushed on `open` and the path, and popped at its
            // `}`). Where the call hands back elsewhere (a value or whitespace it leaves to
            // the walk), the walk goes on from there, the open containers as it would have
            // left them.
            _ => {
                if !(c == b'{' && path.len() < NESTED) {
                    break Ok(Resume::Value(p, top));
                }
                match nested::<CHECK, F>(text, p, top, segs, open, max_depth, memo, run, tally, &mut t, f) {
                    Ok(e) => p = e,
                    Err(r) => break r,
                }
                path = segs.as_mut_slice();
            }
        }
        // After a value: its separator. Remembered keys whose values are short numbers or
        // literals are read on in this inner loop (see `short_scalar`).
        let (q, words_compared) = 'sep: loop {
            if b.get(p) != Some(&b',') {
                // `},{"` in an array of objects: the next object, read on here. What the walk does
                // there (pop the object, step the array's index, push the next object at the same
                // depth, read its first key) leaves the same path but for those two segments, and
                // the same open containers.
                if !(parent == ARRAY && b.get(p..p + 4) == Some(b"},{\"")) {
                    break 'member Ok(Resume::After(p, top));
                }
                let Some(depth) = path.len().checked_sub(1) else { break 'member Err(Halt::NotJson) };
                if let [.., Seg::Index(i), _] = path {
                    *i += 1;
                }
                top = first_slot(depth);
                p += 3;
                break 'sep (p, false);
            } else if top < NO_SLOT {
                let next = top + 1;
                top = if next % SHAPE_KEYS as u32 == 0 { NO_SLOT } else { next };
                if let Some(known) = memo.get(top as usize) {
                    if known.matches(b, p + 1) {
                        let k = known.key;
                        if let Err(e) = t.tick::<CHECK>(k.len()) {
                            break 'member Err(e.into());
                        }
                        // After `,"key":`.
                        let v = p + k.len() + 4;
                        // A short number or a literal: read here, and the key not put on the path
                        // (nothing reads the path before the next key replaces its segment or
                        // the object ends).
                        if let Some(after) = short_scalar(b, v) {
                            p = after;
                            continue 'sep;
                        }
                        path[last] = Seg::Key(Cow::Borrowed(k));
                        p = v;
                        continue 'member;
                    }
                }
                let q = scan::skip_ws(b, p + 1);
                break 'sep (q, q == p + 1);
            } else {
                break 'sep (scan::skip_ws(b, p + 1), false);
            }
        };
        match key_step::<CHECK, F>(text, q, top, words_compared, last, path, memo, run, &mut t, tally, f) {
            Ok((after, _)) => p = after,
            Err(e) => break Err(e),
        }
    };
    tally.values = t.values;
    tally.bytes = t.bytes;
    r
}

/// An object at `p` that is the value of a member of [`members`]' object (`top`: that object's
/// slot): read by a call of `members`, with the steps of the walk around it (the empty object
/// skipped, the depth limit, the object pushed on `open` and the path, and popped at its `}`):
/// `Ok` with the offset after it. `Err` with what `members` hands back elsewhere (a value or
/// whitespace it leaves to the walk: the walk goes on from there, the open containers as it
/// would have left them), or an error. Not inlined: the members loop keeps its registers.
#[allow(clippy::too_many_arguments)]
#[inline(never)]
fn nested<'b, const CHECK: bool, F: ?Sized + FnMut(&Field<'_>) -> Verdict>(
    text: &'b str,
    p: usize,
    top: u32,
    segs: &mut Vec<Seg<'b>>,
    open: &mut Vec<u32>,
    max_depth: usize,
    memo: &mut Vec<Known<'b>>,
    run: &mut Vec<u8>,
    tally: &mut Tally,
    t: &mut Tally,
    f: &mut F,
) -> Result<usize, Result<Resume, Halt>> {
    let b = text.as_bytes();
    let q = palisade_json::scan::skip_ws(b, p + 1);
    if b.get(q) == Some(&b'}') {
        return Ok(q + 1);
    }
    if segs.len() >= max_depth {
        return Err(Err(Halt::NotJson));
    }
    segs.push(Seg::Index(0));
    open.push(top);
    let child = first_slot(segs.len() - 1);
    // The counters go through memory around the call only.
    tally.values = t.values;
    tally.bytes = t.bytes;
    let r = members::<CHECK, F>(text, q, true, child, top, segs, open, max_depth, memo, run, tally, f);
    t.values = tally.values;
    t.bytes = tally.bytes;
    match r {
        Ok(Resume::After(e, _)) if b.get(e) == Some(&b'}') => {
            open.pop();
            segs.pop();
            Ok(e + 1)
        }
        r => Err(r),
    }
}

/// The object key at `q` of [`members`] (`top`: its slot; `words_compared`: the slot's words
/// were found not to match there): remembered at its slot, only counted; otherwise read, put
/// on the path and handed over (escaped: by [`json_key_read`]), and remembered. The offset
/// after its `:`. Inlined into both places of `members` that read a key.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn key_step<'b, const CHECK: bool, F: ?Sized + FnMut(&Field<'_>) -> Verdict>(
    text: &'b str,
    q: usize,
    top: u32,
    words_compared: bool,
    last: usize,
    path: &mut [Seg<'b>],
    memo: &mut Vec<Known<'b>>,
    run: &mut Vec<u8>,
    t: &mut Tally,
    tally: &mut Tally,
    f: &mut F,
) -> Result<(usize, bool), Halt> {
    use palisade_json::scan;
    let b = text.as_bytes();
    // Remembered at its slot: only counted.
    if let Some(known) = memo.get_mut(top as usize) {
        if !words_compared && known.matches(b, q) {
            let k = known.key;
            t.tick::<CHECK>(k.len())?;
            path[last] = Seg::Key(Cow::Borrowed(k));
            // After `"key":`.
            return Ok((q + k.len() + 3, true));
        }
        if !known.key.is_empty() {
            let after = known.quoted_at(b, q);
            if after != 0 {
                let k = known.key;
                // Seen a second time at this place: its words from now on (when it has them).
                if k.len() <= WINDOW - 3 && b.get(after) == Some(&b':') {
                    *known = Known::new(b, q, after - 1, k);
                }
                t.tick::<CHECK>(k.len())?;
                path[last] = Seg::Key(Cow::Borrowed(k));
                return Ok((colon(b, after)?, true));
            }
        }
    }
    // Not remembered there: read here (as `json_key_read` does), unless it holds an escape.
    let Ok((raw, end, escaped)) = scan::string_in_text_contents(text, q) else { return Err(Halt::NotJson) };
    if escaped {
        // The key's call takes the counters' address: they go through memory there only.
        tally.values = t.values;
        tally.bytes = t.bytes;
        let r = json_key_read::<CHECK, F>(text, q, top, path, memo, run, tally, f);
        t.values = tally.values;
        t.bytes = tally.bytes;
        return Ok((r?, false));
    }
    path[last] = Seg::Key(Cow::Borrowed(raw));
    let clean = t.hand_here::<CHECK, F>(f, Location::Json(path), FieldKind::JsonKey, raw)?;
    if top != NO_SLOT {
        remember(memo, top as usize, if clean { raw } else { "" });
    }
    Ok((colon(b, end + 1)?, false))
}

/// Slot `slot` of the key memo remembers `key` (`""`: none), its words not made yet; the memo
/// is first filled with empty slots up to the end of the slot's group of eight: a body fills
/// the slots of the positions it uses, not whole rows of 32.
#[inline(always)]
fn remember<'b>(memo: &mut Vec<Known<'b>>, slot: usize, key: &'b str) {
    if memo.len() <= slot {
        grow(memo, slot);
    }
    if let Some(known) = memo.get_mut(slot) {
        known.forget(key);
    }
}

/// The memo's empty slots up to the end of the group of eight of `slot` (see [`remember`]),
/// written in place (not copied from a static row through `memcpy`).
#[inline(never)]
fn grow(memo: &mut Vec<Known<'_>>, slot: usize) {
    memo.resize((slot | 7) + 1, Known::EMPTY);
}

/// The value at `v` when it is a number of one or two digits followed by `,` or `}`, or a
/// literal: the offset after it, read as [`members`] reads it; otherwise (and for an invalid
/// literal, which `members` then rejects) `None`.
#[inline(always)]
fn short_scalar(b: &[u8], v: usize) -> Option<usize> {
    match *b.get(v)? {
        b'0'..=b'9' if matches!(b.get(v + 1), Some(b',' | b'}')) => Some(v + 1),
        b'1'..=b'9' if matches!(b.get(v + 1), Some(b'0'..=b'9')) && matches!(b.get(v + 2), Some(b',' | b'}')) => Some(v + 2),
        b't' | b'f' | b'n' => palisade_json::scan::literal(b, v).ok(),
        _ => None,
    }
}

/// The unescaped value of string contents checked by `palisade_json::scan::string`, in `buf`.
fn unescaped<'r>(raw: &[u8], buf: &'r mut Vec<u8>) -> &'r str {
    buf.clear();
    palisade_json::scan::unescape_into(raw, buf);
    // Checked strings unescape to UTF-8 (lone surrogates are rejected); never fails.
    std::str::from_utf8(buf).unwrap_or("\u{FFFD}")
}

/// Bytes of a remembered key (`"key":`) compared as words by [`Known::at`]: keys of up to
/// `WINDOW - 3` bytes are told by them alone.
const WINDOW: usize = 24;

/// A key the JSON walk remembers at a depth and key position (see [`key_step`]): a clean key
/// without escapes, borrowed from the body. When it was written `"key":` (the `:` right after,
/// as compact and pretty-printed JSON write it) with up to `WINDOW - 3` bytes, those bytes are
/// kept as three words and masks, so that the key written so again at a later place is
/// recognised by comparing three words ([`Known::at`]); otherwise by byte slices
/// ([`Known::quoted_at`]; the words are made when the key is seen there a second time).
#[derive(Clone, Copy, Debug)]
struct Known<'b> {
    /// The key; `""`: an empty slot.
    key: &'b str,
    /// `"key":` and the masks of its bytes; otherwise eight bytes `0xFF` under a full mask,
    /// which never occur in UTF-8: such an entry matches nowhere, with no test of its own.
    /// (When they match, `"key":` is the key's length and 3: no length of its own, and an
    /// entry of 64 bytes.)
    word: [u64; 3],
    mask: [u64; 3],
}

/// The little-endian word of the eight bytes at `i` of `w`.
#[inline(always)]
fn word_at(w: &[u8], i: usize) -> u64 {
    u64::from_le_bytes([w[i], w[i + 1], w[i + 2], w[i + 3], w[i + 4], w[i + 5], w[i + 6], w[i + 7]])
}

impl<'b> Known<'b> {
    const EMPTY: Known<'static> = Known { key: "", word: [u64::MAX, 0, 0], mask: [u64::MAX, 0, 0] };

    /// The key (`""`: an empty slot).
    #[inline(always)]
    fn key(&self) -> &'b str {
        self.key
    }

    /// Whether the words hold `"key":` (the first byte of a word-less entry is `0xFF`, never
    /// `"`).
    #[cfg(test)]
    fn has_words(&self) -> bool {
        self.word[0] != u64::MAX
    }

    /// A slot remembering `key` (not empty), its words not made yet.
    #[inline(always)]
    fn remember(key: &'b str) -> Self {
        Known { key, ..Known::EMPTY }
    }

    /// The slot remembering `key` (`""`: none), its words not made yet: the same entry as
    /// [`Known::remember`] (or [`Known::EMPTY`]) for every use, written in three stores
    /// instead of the whole entry (the other words are read only when the first word matches,
    /// which `0xFF` bytes under a full mask never do).
    #[inline(always)]
    fn forget(&mut self, key: &'b str) {
        self.key = key;
        self.word[0] = u64::MAX;
        self.mask[0] = u64::MAX;
    }

    /// The key `key` read at `p` of `b` (its opening quote; its closing quote at `end`).
    #[inline]
    fn new(b: &[u8], p: usize, end: usize, key: &'b str) -> Self {
        let n = key.len();
        if n <= WINDOW - 3 && b.get(end + 1) == Some(&b':') {
            if let Some(w) = b.get(p..p + WINDOW) {
                // The bytes of `"key":` in each word.
                let mask = |i: usize| match (n + 3).saturating_sub(i) {
                    0 => 0,
                    c if c >= 8 => u64::MAX,
                    c => (1u64 << (8 * c)) - 1,
                };
                let mask = [mask(0), mask(8), mask(16)];
                let word = [word_at(w, 0) & mask[0], word_at(w, 8) & mask[1], word_at(w, 16) & mask[2]];
                return Known { key, word, mask };
            }
        }
        Known::remember(key)
    }

    /// Whether `"key":` is written at `p` (the same bytes: the same string, without escapes,
    /// and valid, then its `:`), told by three words (if not, [`Known::quoted_at`] decides);
    /// the `:` is then at `p + key.len() + 2`.
    #[inline(always)]
    fn matches(&self, b: &[u8], p: usize) -> bool {
        // `p + WINDOW <= b.len()`: one comparison when `b.len() - WINDOW` is kept out of the
        // caller's loop.
        let Some(last) = b.len().checked_sub(WINDOW) else { return false };
        if p > last {
            return false;
        }
        let w = &b[p..p + WINDOW];
        // The first word (`"` and the key's first seven bytes) first: at a place where another
        // key is written (or the slot has no words) it differs, and the other two are not read.
        if (word_at(w, 0) ^ self.word[0]) & self.mask[0] != 0 {
            return false;
        }
        let diff = ((word_at(w, 8) ^ self.word[1]) & self.mask[1]) | ((word_at(w, 16) ^ self.word[2]) & self.mask[2]);
        // Only an entry with words can match.
        diff == 0
    }

    /// [`Known::matches`] as the offset after the `:` (0: no match).
    #[cfg(test)]
    fn at(&self, b: &[u8], p: usize) -> usize {
        if self.matches(b, p) {
            p + self.key.len() + 3
        } else {
            0
        }
    }

    /// Whether `"key"` is written at `p`, by byte slices (long keys, whitespace before the
    /// `:`, a key that differs, the last bytes of the body); if so, the offset after its
    /// closing quote, else 0.
    #[inline(always)]
    fn quoted_at(&self, b: &[u8], p: usize) -> usize {
        let n = self.key().len();
        // The quotes first: a key of another length fails there.
        let same = n != 0 && b.get(p + 1 + n) == Some(&b'"') && b.get(p) == Some(&b'"') && b.get(p + 1..p + 1 + n) == Some(self.key().as_bytes());
        if same {
            p + n + 2
        } else {
            0
        }
    }
}

/// [`key_step`] for a key not seen at that place before and holding an escape: read, put on
/// the path, handed over.
#[allow(clippy::too_many_arguments)]
#[inline(never)]
fn json_key_read<'b, const CHECK: bool, F: ?Sized + FnMut(&Field<'_>) -> Verdict>(
    text: &'b str,
    p: usize,
    slot: u32,
    path: &mut [Seg<'b>],
    memo: &mut Vec<Known<'b>>,
    esc_buf: &mut Vec<u8>,
    tally: &mut Tally,
    f: &mut F,
) -> Result<usize, Halt> {
    let b = text.as_bytes();
    // Not a string at `p`: not JSON either.
    let Ok((raw, end, escaped)) = palisade_json::scan::string_in_text_contents(text, p) else { return Err(Halt::NotJson) };
    let k: Cow<'b, str> = if escaped { Cow::Owned(unescaped(raw.as_bytes(), esc_buf).to_owned()) } else { Cow::Borrowed(raw) };
    let Some(top) = path.last_mut() else { return Err(Halt::NotJson) };
    *top = Seg::Key(k);
    let mut clean = false;
    if let Some(Seg::Key(k)) = path.last() {
        clean = tally.hand_here::<CHECK, F>(f, Location::Json(path), FieldKind::JsonKey, k)?;
    }
    if slot != NO_SLOT {
        // Its words are made when it is seen again (most keys of a body are not).
        let key = match path.last() {
            Some(Seg::Key(Cow::Borrowed(k))) if clean => k,
            _ => "",
        };
        remember(memo, slot as usize, key);
    }
    colon(b, end + 1)
}

/// `:` (after whitespace) at `p`; the offset after it (whitespace before the value is skipped
/// by the walk).
#[inline(always)]
fn colon(b: &[u8], p: usize) -> Result<usize, Halt> {
    if b.get(p) == Some(&b':') {
        return Ok(p + 1);
    }
    palisade_json::scan::colon(b, p).map_err(|_| Halt::NotJson)
}

fn multipart_body<F: ?Sized + FnMut(&Field<'_>) -> Verdict>(ct: &str, body: &[u8], budget: &mut Budget<'_, F>) -> Result<bool, Stop> {
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

/// An XML element's text as its value: indentation around it is layout (`<a>\n  text\n</a>`),
/// but a line break before the text that none follows is part of the value
/// (`<domain>\nwhoami</domain>`, the `%0a` that starts a new command), and is kept.
fn xml_text_value(t: &str) -> &str {
    let end = t.trim_end();
    let start = end.trim_start();
    let lead = &end[..end.len() - start.len()];
    match lead.rfind(['\n', '\r']) {
        Some(p) if !t[end.len()..].contains(['\n', '\r']) => &end[p..],
        _ => start,
    }
}

fn xml_body<F: ?Sized + FnMut(&Field<'_>) -> Verdict>(body: &[u8], budget: &mut Budget<'_, F>) -> Result<bool, Stop> {
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
                let t = xml_text_value(text_of(text));
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
