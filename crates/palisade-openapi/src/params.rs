//! Parameter decoding: raw request parts (path parameter spans from the router, the query
//! string, header lines, cookies) turned into JSON text that the schema engine validates.
//!
//! Each [`Param`] is located in its source, split according to its OpenAPI serialization
//! (`style` / `explode`, every row of the "Style Values" table), percent-decoded piece by piece
//! (so `%2C` inside an element is data, not a delimiter) and *coerced* into canonical JSON
//! guided by the schema's [`Hints`]:
//!
//! - a piece becomes a JSON number when the schema admits `integer` or `number` and the piece
//!   is a JSON number (`5`, `-1.5e3`; not `05`, `+5`, `.5`, `NaN`);
//! - `true` / `false` become booleans when the schema admits `boolean`;
//! - `null` becomes null when the schema admits `null` but not `string`;
//! - everything else (including every piece of a schema with no `type` constraint at all) is a
//!   JSON string, so a value that fits no admitted type reaches the schema engine as a string
//!   and is reported there with the usual `type` message;
//! - arrays and objects come from the style rules when the schema admits `array` or `object`
//!   (both admitted: array). Object keys are written in sorted order (canonical output; keys
//!   made of digits by numeric value).
//!
//! `deepObject` values (query parameters, and form body fields of that style) are read as a
//! tree of keys at any depth (up to [`MAX_DEEP_OBJECT_DEPTH`]): `f[a][b]=1` is `{"a":{"b":1}}`.
//! The standard defines one level; deeper keys and arrays follow the convention of the client
//! libraries that send them (Stripe's SDKs, `qs`, Rack): a node becomes an array when its
//! schema admits one and its children are indices (`f[0]=x&f[1]=y`, in numeric order) or
//! appends (`f[]=x`, one element each); a key given several times (`f=x&f=y`) or once
//! (`f=x`) is an array when the schema admits one. The plain `f=x` of a deepObject parameter
//! is its value like any other (a scalar coerced to the schema's types, `anyOf` included), so
//! it is validated, never skipped. A lone empty value for a schema that admits both an array
//! and a string is the string (`tax_rates=` as Stripe's "unset").
//!
//! Empty query values (`?a=`, `?a`) follow [`EmptyValues`]: by default the empty string is
//! validated against the schema like any value.
//!
//! The decoder owns only reusable scratch buffers ([`ParamDecoder`], [`Query`], [`Cookies`]):
//! decoding `id=5` allocates nothing once they have grown.

use std::ops::Range;

use memchr::memchr;
use palisade_body::form::{percent_decode, DecodeError, DecodeMode, Query};
use palisade_body::json::write_json_str;
use palisade_schema::{Hints, SchemaId, TypeSet};

use crate::model::{Param, ParamIn, Style};

#[cfg(test)]
pub(crate) mod tests;

// ---------------------------------------------------------------------------------------------
// JSON writing and coercion (shared by form and multipart)
// ---------------------------------------------------------------------------------------------

/// Whether `s` is a number in JSON syntax (`-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`).
pub fn is_json_number(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    if b.first() == Some(&b'-') {
        i = 1;
    }
    let digits = |i: &mut usize| {
        let s = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - s
    };
    match b.get(i) {
        Some(b'0') => i += 1,
        Some(b'1'..=b'9') => {
            digits(&mut i);
        }
        _ => return false,
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

/// Append `s` coerced to the most fitting type of `types` (see the module docs).
pub fn write_scalar(out: &mut String, s: &str, types: TypeSet) {
    if types.0 != TypeSet::ANY {
        if (types.has(TypeSet::INTEGER) || types.has(TypeSet::NUMBER)) && is_json_number(s) {
            out.push_str(s);
            return;
        }
        if types.has(TypeSet::BOOLEAN) && (s == "true" || s == "false") {
            out.push_str(s);
            return;
        }
        if types.has(TypeSet::NULL) && !types.has(TypeSet::STRING) && s == "null" {
            out.push_str(s);
            return;
        }
    }
    write_json_str(out, s);
}

/// Why a text is not JSON.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JsonSyntaxError {
    pub offset: usize,
    pub message: &'static str,
}

/// Maximum nesting accepted by [`validate_json`].
pub const JSON_MAX_DEPTH: u32 = 128;

/// Check that `s` is one JSON text (RFC 8259; surrounding whitespace allowed), without
/// allocating and without recursion; nesting deeper than [`JSON_MAX_DEPTH`] is an error.
pub fn validate_json(s: &[u8]) -> Result<(), JsonSyntaxError> {
    let err = |offset, message| Err(JsonSyntaxError { offset, message });
    let ws = |i: &mut usize| {
        while *i < s.len() && matches!(s[*i], b' ' | b'\t' | b'\n' | b'\r') {
            *i += 1;
        }
    };
    // One bit per open container: 1 = object, 0 = array.
    let mut stack: u128 = 0;
    let mut depth: u32 = 0;
    let mut i = 0;
    ws(&mut i);
    'value: loop {
        // Parse one value at `i`.
        match s.get(i) {
            None => return err(i, "unexpected end"),
            Some(b'{') | Some(b'[') => {
                let obj = s[i] == b'{';
                if depth >= JSON_MAX_DEPTH {
                    return err(i, "nesting too deep");
                }
                stack = (stack << 1) | obj as u128;
                depth += 1;
                i += 1;
                ws(&mut i);
                let close = if obj { b'}' } else { b']' };
                if s.get(i) == Some(&close) {
                    i += 1;
                    stack >>= 1;
                    depth -= 1;
                } else if obj {
                    i = json_key(s, i)?;
                    continue 'value;
                } else {
                    continue 'value;
                }
            }
            Some(b'"') => i = json_string(s, i)?,
            Some(b't') if s[i..].starts_with(b"true") => i += 4,
            Some(b'f') if s[i..].starts_with(b"false") => i += 5,
            Some(b'n') if s[i..].starts_with(b"null") => i += 4,
            Some(b'-' | b'0'..=b'9') => {
                let start = i;
                while i < s.len() && matches!(s[i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9') {
                    i += 1;
                }
                let n = std::str::from_utf8(&s[start..i]).unwrap_or("");
                if !is_json_number(n) {
                    return err(start, "invalid number");
                }
            }
            Some(_) => return err(i, "unexpected character"),
        }
        // After a value: close containers or continue with the next member.
        loop {
            ws(&mut i);
            if depth == 0 {
                break 'value;
            }
            let obj = stack & 1 == 1;
            match s.get(i) {
                Some(b',') => {
                    i += 1;
                    ws(&mut i);
                    if obj {
                        i = json_key(s, i)?;
                    }
                    continue 'value;
                }
                Some(b'}') if obj => {}
                Some(b']') if !obj => {}
                None => return err(i, "unexpected end"),
                Some(_) => return err(i, "expected ',' or a closing bracket"),
            }
            i += 1;
            stack >>= 1;
            depth -= 1;
        }
    }
    if i != s.len() {
        return err(i, "trailing characters");
    }
    Ok(())
}

/// A key and its colon, at `i` (whitespace before already skipped); returns the index of the
/// value (whitespace skipped).
fn json_key(s: &[u8], i: usize) -> Result<usize, JsonSyntaxError> {
    if s.get(i) != Some(&b'"') {
        return Err(JsonSyntaxError { offset: i, message: "expected a string key" });
    }
    let mut i = json_string(s, i)?;
    while i < s.len() && matches!(s[i], b' ' | b'\t' | b'\n' | b'\r') {
        i += 1;
    }
    if s.get(i) != Some(&b':') {
        return Err(JsonSyntaxError { offset: i, message: "expected ':'" });
    }
    i += 1;
    while i < s.len() && matches!(s[i], b' ' | b'\t' | b'\n' | b'\r') {
        i += 1;
    }
    Ok(i)
}

/// A string starting at the quote at `i`; returns the index after the closing quote.
fn json_string(s: &[u8], i: usize) -> Result<usize, JsonSyntaxError> {
    let start = i;
    let mut i = i + 1;
    loop {
        match s.get(i) {
            None => return Err(JsonSyntaxError { offset: start, message: "unterminated string" }),
            Some(b'"') => break,
            Some(b'\\') => match s.get(i + 1) {
                Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => i += 2,
                Some(b'u') if s.len() >= i + 6 && s[i + 2..i + 6].iter().all(|b| b.is_ascii_hexdigit()) => i += 6,
                _ => return Err(JsonSyntaxError { offset: i, message: "invalid escape" }),
            },
            Some(0..=0x1f) => return Err(JsonSyntaxError { offset: i, message: "control character in string" }),
            Some(_) => i += 1,
        }
    }
    if std::str::from_utf8(&s[start + 1..i]).is_err() {
        return Err(JsonSyntaxError { offset: start, message: "invalid UTF-8 in string" });
    }
    Ok(i + 1)
}

// ---------------------------------------------------------------------------------------------
// Cookies
// ---------------------------------------------------------------------------------------------

/// Too many cookies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TooManyCookies {
    pub limit: usize,
}

/// Cookies of one request (RFC 6265 `Cookie: a=1; b="2"`, from one or several header lines).
/// Pairs without `=` and empty names are ignored (RFC 6265 §5.2); surrounding double quotes
/// of a value are removed; values stay raw (decoded per parameter, leniently). Reusable.
#[derive(Debug)]
pub struct Cookies {
    raw: Vec<u8>,
    pairs: Vec<(Range<u32>, Range<u32>)>,
    max: usize,
}

impl Default for Cookies {
    fn default() -> Self {
        Cookies::with_limit(256)
    }
}

fn trim_ows(mut s: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = s {
        s = rest;
    }
    s
}

impl Cookies {
    pub fn with_limit(max: usize) -> Self {
        Cookies { raw: Vec::new(), pairs: Vec::new(), max }
    }

    /// Forget all cookies (start of a request).
    pub fn clear(&mut self) {
        self.raw.clear();
        self.pairs.clear();
    }

    /// Add the cookies of one `Cookie` header line.
    pub fn add_header(&mut self, value: &[u8]) -> Result<(), TooManyCookies> {
        let base = self.raw.len();
        self.raw.extend_from_slice(value);
        for seg in value.split(|&b| b == b';') {
            let Some(eq) = memchr(b'=', seg) else { continue };
            let name = trim_ows(&seg[..eq]);
            if name.is_empty() {
                continue;
            }
            let mut val = trim_ows(&seg[eq + 1..]);
            if val.len() >= 2 && val[0] == b'"' && val[val.len() - 1] == b'"' {
                val = &val[1..val.len() - 1];
            }
            if self.pairs.len() == self.max {
                return Err(TooManyCookies { limit: self.max });
            }
            let off = |s: &[u8]| {
                let start = base + (s.as_ptr() as usize - value.as_ptr() as usize);
                start as u32..(start + s.len()) as u32
            };
            self.pairs.push((off(name), off(val)));
        }
        Ok(())
    }

    pub fn len(&self) -> usize {
        self.pairs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    /// Cookie `i`: raw name and raw value (quotes removed).
    pub fn get(&self, i: usize) -> (&[u8], &[u8]) {
        let (n, v) = &self.pairs[i];
        (&self.raw[n.start as usize..n.end as usize], &self.raw[v.start as usize..v.end as usize])
    }

    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> + '_ {
        (0..self.pairs.len()).map(|i| self.get(i))
    }
}

// ---------------------------------------------------------------------------------------------
// Sources
// ---------------------------------------------------------------------------------------------

/// Path parameters found by the router: raw (still percent-encoded) spans by name.
pub trait PathSource {
    fn path_param(&self, name: &str) -> Option<&[u8]>;
}

fn find_path<'s, N: AsRef<str>, V: AsRef<[u8]>>(pairs: &'s [(N, V)], name: &str) -> Option<&'s [u8]> {
    pairs.iter().find(|(n, _)| n.as_ref() == name).map(|(_, v)| v.as_ref())
}

impl<N: AsRef<str>, V: AsRef<[u8]>> PathSource for &[(N, V)] {
    fn path_param(&self, name: &str) -> Option<&[u8]> {
        find_path(self, name)
    }
}

impl<N: AsRef<str>, V: AsRef<[u8]>> PathSource for Vec<(N, V)> {
    fn path_param(&self, name: &str) -> Option<&[u8]> {
        find_path(self, name)
    }
}

impl<N: AsRef<str>, V: AsRef<[u8]>, const K: usize> PathSource for [(N, V); K] {
    fn path_param(&self, name: &str) -> Option<&[u8]> {
        find_path(self, name)
    }
}

/// Request headers. `visit` calls `f` with each line's value of header `name`, matched
/// case-insensitively, in order.
pub trait HeaderSource {
    fn visit(&self, name: &str, f: &mut dyn FnMut(&[u8]));
}

fn visit_pairs<N: AsRef<str>, V: AsRef<[u8]>>(pairs: &[(N, V)], name: &str, f: &mut dyn FnMut(&[u8])) {
    for (n, v) in pairs {
        if n.as_ref().eq_ignore_ascii_case(name) {
            f(v.as_ref())
        }
    }
}

impl<N: AsRef<str>, V: AsRef<[u8]>> HeaderSource for &[(N, V)] {
    fn visit(&self, name: &str, f: &mut dyn FnMut(&[u8])) {
        visit_pairs(self, name, f)
    }
}

impl<N: AsRef<str>, V: AsRef<[u8]>> HeaderSource for Vec<(N, V)> {
    fn visit(&self, name: &str, f: &mut dyn FnMut(&[u8])) {
        visit_pairs(self, name, f)
    }
}

impl<N: AsRef<str>, V: AsRef<[u8]>, const K: usize> HeaderSource for [(N, V); K] {
    fn visit(&self, name: &str, f: &mut dyn FnMut(&[u8])) {
        visit_pairs(self, name, f)
    }
}

/// Everything a parameter can come from, for one request.
pub struct Sources<'a> {
    pub path: &'a dyn PathSource,
    pub query: &'a Query,
    pub headers: &'a dyn HeaderSource,
    pub cookies: &'a Cookies,
    /// All parameters of the operation: a form-exploded object parameter takes the query keys
    /// its schema names, except those that another parameter claims.
    pub params: &'a [Param],
}

// ---------------------------------------------------------------------------------------------
// Decoding one parameter
// ---------------------------------------------------------------------------------------------

/// Why a parameter's value is not acceptable before schema validation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Invalid {
    Decode(DecodeError),
    /// A parameter that is not an array (or a non-exploded one) appears several times.
    Duplicate,
    /// The value does not have the shape its style requires.
    Malformed(&'static str),
    /// A `deepObject` key whose brackets do not parse (`a[b`, `a[b]c`: not ending in `]`), or
    /// nested deeper than [`MAX_DEEP_OBJECT_DEPTH`] levels.
    BadBrackets,
    /// The style cannot be used in this location (`deepObject` outside the query).
    UnsupportedStyle,
    /// A `content` parameter declared as JSON whose value is not JSON.
    NotJson(JsonSyntaxError),
    /// With [`DecodeOptions::strict_reserved`] and `allowReserved: false`: a reserved
    /// character (`:/?#[]@!$&'()*+,;=`) sent unencoded inside a query value.
    UnencodedReserved(u8),
}

impl From<DecodeError> for Invalid {
    fn from(e: DecodeError) -> Self {
        Invalid::Decode(e)
    }
}

/// The outcome for one parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decoded {
    /// Not present in the request.
    Missing,
    /// A query parameter with `allowEmptyValue: true` sent without a value (`?a` or `?a=`):
    /// nothing to validate.
    Empty,
    /// JSON text was written to the output string.
    Json,
    Invalid(Invalid),
}

/// Knobs of the decoder.
#[derive(Clone, Copy, Debug, Default)]
pub struct DecodeOptions {
    /// Enforce `allowReserved: false`: an unencoded reserved character (other than the
    /// style's own delimiters) in a query value is [`Invalid::UnencodedReserved`]. Off by
    /// default: clients commonly send `/` and `:` unencoded.
    pub strict_reserved: bool,
    /// Empty query values of parameters without `allowEmptyValue: true`.
    pub empty_values: EmptyValues,
}

/// What the query-like decoder needs to know about a parameter or form field.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Spec<'n> {
    pub name: &'n str,
    pub style: Style,
    pub explode: bool,
    pub allow_empty_value: bool,
    pub allow_reserved: bool,
    pub schema: Option<SchemaId>,
}

impl<'n> Spec<'n> {
    fn of(p: &'n Param) -> Self {
        Spec { name: &p.name, style: p.style, explode: p.explode, allow_empty_value: p.allow_empty_value, allow_reserved: p.allow_reserved, schema: p.schema }
    }
}

#[derive(Clone, Copy, Debug)]
pub(crate) enum Shape {
    Scalar(TypeSet),
    Array(Option<SchemaId>),
    Object(Option<SchemaId>),
}

pub(crate) fn types_of(hints: &dyn Hints, schema: Option<SchemaId>) -> TypeSet {
    schema.map_or(TypeSet(TypeSet::ANY), |s| hints.types(s))
}

pub(crate) fn shape_of(hints: &dyn Hints, schema: Option<SchemaId>) -> Shape {
    let t = types_of(hints, schema);
    if t.0 == TypeSet::ANY {
        return Shape::Scalar(t);
    }
    match (t.has(TypeSet::ARRAY), t.has(TypeSet::OBJECT)) {
        (true, _) => Shape::Array(schema.and_then(|s| hints.items(s))),
        (false, true) => Shape::Object(schema),
        _ => Shape::Scalar(t),
    }
}

/// One value of an object or array being built: its key path (`a[b][0]` is `a`, `b`, `0`;
/// `[]` is an empty segment) as a range of `ParamDecoder::segs`, whose items are ranges of
/// `ParamDecoder::keys`; the value as a range of the base bytes; the request order.
#[derive(Clone, Debug)]
struct Entry {
    segs: Range<u32>,
    value: Range<u32>,
    order: u32,
}

/// Deepest bracket nesting of a `deepObject` key (`a[b][c]...`): deeper keys are
/// [`Invalid::BadBrackets`]. Real clients nest four or five levels.
pub const MAX_DEEP_OBJECT_DEPTH: usize = 32;

/// How empty query values (`?a=`, `?a`) of parameters without `allowEmptyValue: true` are
/// treated.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum EmptyValues {
    /// An empty value is accepted without validation (as if `allowEmptyValue: true`).
    Allow,
    /// The empty string is validated against the schema like any other value (`""` for a
    /// string, `[""]` for an array of strings).
    #[default]
    Schema,
    /// Rejected, by the letter of OpenAPI 3.0 (`allowEmptyValue` defaults to false).
    Reject,
}

/// Compare two key segments: runs of digits by numeric value (`2` before `10`; `01` after
/// `1`), everything else bytewise.
fn cmp_segment(a: &str, b: &str) -> std::cmp::Ordering {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit());
    if digits(a) && digits(b) {
        let (ta, tb) = (a.trim_start_matches('0'), b.trim_start_matches('0'));
        return ta.len().cmp(&tb.len()).then_with(|| ta.cmp(tb)).then_with(|| a.cmp(b));
    }
    a.cmp(b)
}

/// Whether a key segment names an array position: `[]` or a decimal index.
fn is_index(s: &str) -> bool {
    s.bytes().all(|c| c.is_ascii_digit())
}

/// Decodes parameters; holds reusable scratch buffers. Keep one per worker.
#[derive(Debug, Default)]
pub struct ParamDecoder {
    scratch: Vec<u8>,
    header: Vec<u8>,
    keys: String,
    segs: Vec<Range<u32>>,
    entries: Vec<Entry>,
    pub options: DecodeOptions,
}

const RESERVED: &[u8] = b":/?#[]@!$&'()*+,;=";

/// Where pieces come from and how they are decoded.
#[derive(Clone, Copy)]
struct Ctx<'h> {
    hints: &'h dyn Hints,
    mode: DecodeMode,
    /// Trim optional whitespace around pieces (header lists).
    trim: bool,
}

impl ParamDecoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Decode parameter `p` from `src`, writing JSON into `out` (cleared first; its content is
    /// meaningful only when [`Decoded::Json`] is returned).
    pub fn decode(&mut self, p: &Param, src: &Sources<'_>, hints: &dyn Hints, out: &mut String) -> Decoded {
        out.clear();
        match self.decode_inner(p, src, hints, out) {
            Ok(d) => d,
            Err(e) => Decoded::Invalid(e),
        }
    }

    fn decode_inner(&mut self, p: &Param, src: &Sources<'_>, hints: &dyn Hints, out: &mut String) -> Result<Decoded, Invalid> {
        if let Some(ct) = &p.content_type {
            return self.decode_content(p, ct, src, out);
        }
        let shape = shape_of(hints, p.schema);
        match p.location {
            ParamIn::Path => {
                let Some(raw) = src.path.path_param(&p.name) else { return Ok(Decoded::Missing) };
                let cx = Ctx { hints, mode: DecodeMode::Path, trim: false };
                self.single(cx, p.style, p.explode, &p.name, raw, shape, out)?;
            }
            ParamIn::Header => {
                self.header.clear();
                let mut n = 0;
                let buf = &mut self.header;
                src.headers.visit(&p.name, &mut |v| {
                    if n > 0 {
                        buf.push(b',');
                    }
                    buf.extend_from_slice(trim_ows(v));
                    n += 1;
                });
                if n == 0 {
                    return Ok(Decoded::Missing);
                }
                let raw = std::mem::take(&mut self.header);
                let cx = Ctx { hints, mode: DecodeMode::None, trim: true };
                let r = self.single(cx, p.style, p.explode, &p.name, &raw, shape, out);
                self.header = raw;
                r?;
            }
            ParamIn::Cookie => {
                let cookies = src.cookies;
                let cx = Ctx { hints, mode: DecodeMode::Cookie, trim: false };
                let name = p.name.as_bytes();
                let mut matching = (0..cookies.len()).filter(|&i| cookies.get(i).0 == name);
                let first = matching.next();
                if p.style == Style::Form && p.explode {
                    if let Shape::Object(schema) = shape {
                        let others = |n: &str| src.params.iter().any(|q| q.location == ParamIn::Cookie && q.name == n);
                        self.begin_entries();
                        for i in 0..cookies.len() {
                            let (n, v) = cookies.get(i);
                            let Ok(n) = std::str::from_utf8(n) else { continue };
                            if others(n) || schema.and_then(|s| hints.property(s, n)).is_none() && schema.is_some() {
                                continue;
                            }
                            self.push_entry(n, range_in(&cookies.raw, v), i);
                        }
                        if self.entries.is_empty() {
                            return Ok(Decoded::Missing);
                        }
                        self.emit_entries(cx, &cookies.raw, schema, out)?;
                        return Ok(Decoded::Json);
                    }
                }
                let Some(first) = first else { return Ok(Decoded::Missing) };
                if let (Shape::Array(items), Style::Form, true) = (shape, p.style, p.explode) {
                    out.push('[');
                    for (k, i) in std::iter::once(first).chain(matching).enumerate() {
                        if k > 0 {
                            out.push(',');
                        }
                        self.piece(cx, cookies.get(i).1, types_of(hints, items), out)?;
                    }
                    out.push(']');
                } else {
                    if matching.next().is_some() {
                        return Err(Invalid::Duplicate);
                    }
                    self.single(cx, p.style, p.explode, &p.name, cookies.get(first).1, shape, out)?;
                }
            }
            ParamIn::Query => {
                if !p.allow_empty_value && src.query.iter().any(|q| q.name == p.name && q.raw_value.is_empty()) {
                    match self.options.empty_values {
                        EmptyValues::Reject => return Err(Invalid::Malformed("empty value (allowEmptyValue is false)")),
                        EmptyValues::Allow if src.query.iter().filter(|q| q.name == p.name).all(|q| q.raw_value.is_empty()) => return Ok(Decoded::Empty),
                        // Validated: `""` against the schema.
                        _ => {}
                    }
                }
                let spec = Spec::of(p);
                let claimed = |n: &str| claimed_by_other(src.params, p, n);
                return self.decode_query(&spec, src.query, &claimed, hints, out);
            }
        }
        Ok(Decoded::Json)
    }

    fn decode_content(&mut self, p: &Param, ct: &str, src: &Sources<'_>, out: &mut String) -> Result<Decoded, Invalid> {
        // Locate the single raw value.
        let (raw, mode): (&[u8], DecodeMode) = match p.location {
            ParamIn::Path => match src.path.path_param(&p.name) {
                Some(r) => (r, DecodeMode::Path),
                None => return Ok(Decoded::Missing),
            },
            ParamIn::Query => {
                let q = src.query;
                let mut it = (0..q.len()).filter(|&i| q.get(i).name == p.name);
                let Some(i) = it.next() else { return Ok(Decoded::Missing) };
                if it.next().is_some() {
                    return Err(Invalid::Duplicate);
                }
                if q.get(i).raw_value.is_empty() {
                    match self.options.empty_values {
                        _ if p.allow_empty_value => return Ok(Decoded::Empty),
                        EmptyValues::Allow => return Ok(Decoded::Empty),
                        EmptyValues::Reject => return Err(Invalid::Malformed("empty value (allowEmptyValue is false)")),
                        EmptyValues::Schema => {}
                    }
                }
                (q.get(i).raw_value, DecodeMode::Form)
            }
            ParamIn::Cookie => {
                let c = src.cookies;
                let mut it = (0..c.len()).filter(|&i| c.get(i).0 == p.name.as_bytes());
                let Some(i) = it.next() else { return Ok(Decoded::Missing) };
                if it.next().is_some() {
                    return Err(Invalid::Duplicate);
                }
                (c.get(i).1, DecodeMode::Cookie)
            }
            ParamIn::Header => {
                self.header.clear();
                let mut n = 0;
                let buf = &mut self.header;
                src.headers.visit(&p.name, &mut |v| {
                    if n > 0 {
                        buf.push(b',');
                    }
                    buf.extend_from_slice(trim_ows(v));
                    n += 1;
                });
                if n == 0 {
                    return Ok(Decoded::Missing);
                }
                let text = std::str::from_utf8(&self.header).map_err(|_| DecodeError::BadUtf8)?;
                write_content(out, text, ct)?;
                return Ok(Decoded::Json);
            }
        };
        let text = percent_decode(raw, mode, &mut self.scratch)?;
        write_content(out, text, ct)?;
        Ok(Decoded::Json)
    }

    /// Decode a query-like parameter (query string or form body field) described by `p` from
    /// `q`, appending to `out`. `claimed(name)`: whether another parameter owns a key (for
    /// form-exploded objects).
    pub(crate) fn decode_query(
        &mut self,
        p: &Spec<'_>,
        q: &Query,
        claimed: &dyn Fn(&str) -> bool,
        hints: &dyn Hints,
        out: &mut String,
    ) -> Result<Decoded, Invalid> {
        let shape = shape_of(hints, p.schema);
        let cx = Ctx { hints, mode: DecodeMode::Form, trim: false };
        let strict = self.options.strict_reserved && !p.allow_reserved;
        match (p.style, shape) {
            (Style::DeepObject, _) => {
                // `name[a][b]=1`, `name[a][]=x`, `name[a][0]=x`, and the plain `name=x`: one
                // tree of values, shaped by the schema (see `emit_tree`).
                self.begin_entries();
                for i in 0..q.len() {
                    let name = q.get(i).name;
                    let Some(rest) = name.strip_prefix(p.name) else { continue };
                    if !(rest.is_empty() || rest.starts_with('[')) {
                        continue;
                    }
                    let vr = q.value_range(i);
                    if strict {
                        check_reserved(&q.raw()[vr.clone()], b"")?;
                    }
                    self.push_bracketed(rest, vr, i)?;
                }
                if self.entries.is_empty() {
                    return Ok(Decoded::Missing);
                }
                self.emit_entries(cx, q.raw(), p.schema, out)?;
                return Ok(Decoded::Json);
            }
            (Style::Form, Shape::Object(schema)) if p.explode => {
                self.begin_entries();
                for i in 0..q.len() {
                    let pair = q.get(i);
                    if pair.name_error.is_some() || claimed(pair.name) {
                        continue;
                    }
                    if let Some(s) = schema {
                        if hints.property(s, pair.name).is_none() {
                            continue;
                        }
                    }
                    let vr = q.value_range(i);
                    if strict {
                        check_reserved(&q.raw()[vr.clone()], b"")?;
                    }
                    self.push_entry(pair.name, vr, i);
                }
                if self.entries.is_empty() {
                    return Ok(Decoded::Missing);
                }
                self.emit_entries(cx, q.raw(), schema, out)?;
                return Ok(Decoded::Json);
            }
            (Style::Form | Style::SpaceDelimited | Style::PipeDelimited, Shape::Array(items)) if p.explode => {
                return self.repeated(cx, p.name, q, types_of(hints, items), strict, out);
            }
            _ => {}
        }
        let mut it = (0..q.len()).filter(|&i| q.get(i).name == p.name);
        let Some(i) = it.next() else { return Ok(Decoded::Missing) };
        if it.next().is_some() {
            // A schema that admits anything admits the repeated values, as an array of strings
            // (an undeclared form field where `additionalProperties` is open).
            if p.explode && matches!(p.style, Style::Form | Style::SpaceDelimited | Style::PipeDelimited) && types_of(hints, p.schema).0 == TypeSet::ANY {
                return self.repeated(cx, p.name, q, TypeSet(TypeSet::ANY), strict, out);
            }
            return Err(Invalid::Duplicate);
        }
        let raw = q.get(i).raw_value;
        if raw.is_empty() && p.allow_empty_value {
            return Ok(Decoded::Empty);
        }
        if strict {
            let delims: &[u8] = match (p.style, shape) {
                (_, Shape::Scalar(_)) => b"",
                (Style::Form | Style::Simple, _) => b",",
                (Style::PipeDelimited, _) => b"|",
                (Style::Label, _) => b".,=",
                (Style::Matrix, _) => b";,=",
                _ => b"",
            };
            check_reserved(raw, delims)?;
        }
        if let (true, Shape::Array(items)) = (raw.is_empty(), shape) {
            // `?a=` for an array: one empty item, as `?a=&a=x` has one (and as other
            // validators read it), so that `minLength` and `enum` of the items apply.
            out.push('[');
            self.piece(cx, raw, types_of(hints, items), out)?;
            out.push(']');
            return Ok(Decoded::Json);
        }
        self.single(cx, p.style, p.explode, p.name, raw, shape, out)?;
        Ok(Decoded::Json)
    }

    /// Every occurrence of `name` in `q` as one element of an array (`a=1&a=2`).
    fn repeated(&mut self, cx: Ctx<'_>, name: &str, q: &Query, items: TypeSet, strict: bool, out: &mut String) -> Result<Decoded, Invalid> {
        let mut n = 0;
        for i in 0..q.len() {
            if q.get(i).name != name {
                continue;
            }
            let raw = q.get(i).raw_value;
            if strict {
                check_reserved(raw, b"")?;
            }
            out.push(if n == 0 { '[' } else { ',' });
            n += 1;
            self.piece(cx, raw, items, out)?;
        }
        if n == 0 {
            return Ok(Decoded::Missing);
        }
        out.push(']');
        Ok(Decoded::Json)
    }

    fn begin_entries(&mut self) {
        self.entries.clear();
        self.segs.clear();
        self.keys.clear();
    }

    fn push_segment(&mut self, s: &str) {
        let k = self.keys.len() as u32;
        self.keys.push_str(s);
        self.segs.push(k..self.keys.len() as u32);
    }

    /// An entry with the one-segment path `key`.
    fn push_entry(&mut self, key: &str, value: Range<usize>, order: usize) {
        let start = self.segs.len() as u32;
        self.push_segment(key);
        self.entries.push(Entry { segs: start..self.segs.len() as u32, value: value.start as u32..value.end as u32, order: order as u32 });
    }

    /// An entry whose path is the bracketed segments of `brackets` (`[a][b][]`; empty for the
    /// plain key itself). The grammar is `"[" key *("][" key) "]"`: a key may hold a lone `[`
    /// or `]` (`[a]b]` is the key `a]b`, as map keys such as Stripe's `metadata` are any
    /// string), only `][` separates keys.
    fn push_bracketed(&mut self, brackets: &str, value: Range<usize>, order: usize) -> Result<(), Invalid> {
        let start = self.segs.len() as u32;
        if !brackets.is_empty() {
            let inner = brackets.strip_prefix('[').and_then(|b| b.strip_suffix(']')).ok_or(Invalid::BadBrackets)?;
            for key in inner.split("][") {
                if self.segs.len() - start as usize >= MAX_DEEP_OBJECT_DEPTH {
                    return Err(Invalid::BadBrackets);
                }
                self.push_segment(key);
            }
        }
        self.entries.push(Entry { segs: start..self.segs.len() as u32, value: value.start as u32..value.end as u32, order: order as u32 });
        Ok(())
    }

    /// Decode one piece and write it coerced to `types`.
    fn piece(&mut self, cx: Ctx<'_>, raw: &[u8], types: TypeSet, out: &mut String) -> Result<(), Invalid> {
        let raw = if cx.trim { trim_ows(raw) } else { raw };
        let s = percent_decode(raw, cx.mode, &mut self.scratch)?;
        write_scalar(out, s, types);
        Ok(())
    }

    /// Parse a single serialized value `raw` of parameter `name` by `style`.
    #[allow(clippy::too_many_arguments)]
    fn single(&mut self, cx: Ctx<'_>, style: Style, explode: bool, name: &str, raw: &[u8], shape: Shape, out: &mut String) -> Result<(), Invalid> {
        match style {
            Style::Simple | Style::Form => self.delimited(cx, raw, b',', explode && style == Style::Simple, shape, out),
            Style::Label => {
                let Some(rest) = raw.strip_prefix(b".") else { return Err(Invalid::Malformed("a label value starts with '.'")) };
                if explode {
                    // `.blue.black` / `.R=100.G=200`
                    return match shape {
                        Shape::Scalar(_) => self.delimited(cx, rest, b'.', false, shape, out),
                        _ => self.delimited(cx, rest, b'.', true, shape, out),
                    };
                }
                // RFC 6570 `{.list}` is `.blue,black`; the OpenAPI 3.0 table shows `.blue.black`:
                // accept dots when there is no comma.
                let sep = if memchr(b',', rest).is_none() && !matches!(shape, Shape::Scalar(_)) { b'.' } else { b',' };
                self.delimited(cx, rest, sep, false, shape, out)
            }
            Style::Matrix => self.matrix(cx, explode, name, raw, shape, out),
            Style::SpaceDelimited | Style::PipeDelimited => {
                let sep = if style == Style::SpaceDelimited { b' ' } else { b'|' };
                // The delimiter itself is percent-encoded (`%20`, `%7C`): decode, then split.
                let decoded = percent_decode(raw, cx.mode, &mut self.scratch)?;
                let mut tmp = std::mem::take(&mut self.header);
                tmp.clear();
                tmp.extend_from_slice(decoded.as_bytes());
                let cx2 = Ctx { mode: DecodeMode::None, ..cx };
                let r = self.delimited(cx2, &tmp, sep, false, shape, out);
                self.header = tmp;
                r
            }
            Style::DeepObject => Err(Invalid::UnsupportedStyle),
        }
    }

    /// Values separated by `sep`: a scalar (no splitting), an array of pieces, or an object
    /// from `k,v,k,v` (`kv_pairs == false`) or `k=v` pieces (`kv_pairs == true`).
    fn delimited(&mut self, cx: Ctx<'_>, raw: &[u8], sep: u8, kv_pairs: bool, shape: Shape, out: &mut String) -> Result<(), Invalid> {
        match shape {
            Shape::Scalar(t) => self.piece(cx, raw, t, out),
            Shape::Array(items) => {
                let t = types_of(cx.hints, items);
                out.push('[');
                if !raw.is_empty() {
                    for (k, part) in raw.split(|&b| b == sep).enumerate() {
                        if k > 0 {
                            out.push(',');
                        }
                        self.piece(cx, part, t, out)?;
                    }
                }
                out.push(']');
                Ok(())
            }
            Shape::Object(schema) => {
                self.begin_entries();
                if !raw.is_empty() {
                    let base = raw.as_ptr() as usize;
                    let mut parts = raw.split(|&b| b == sep);
                    let mut order = 0;
                    while let Some(k) = parts.next() {
                        let (k, v) = if kv_pairs {
                            match memchr(b'=', k) {
                                Some(eq) => (&k[..eq], &k[eq + 1..]),
                                None => return Err(Invalid::Malformed("an exploded object member needs '='")),
                            }
                        } else {
                            match parts.next() {
                                Some(v) => (k, v),
                                None => return Err(Invalid::Malformed("an object needs an even number of key and value pieces")),
                            }
                        };
                        let k = if cx.trim { trim_ows(k) } else { k };
                        let key = percent_decode(k, cx.mode, &mut self.scratch)?;
                        let vs = (v.as_ptr() as usize - base) as u32;
                        // Fields, not `push_entry`: `key` borrows `self.scratch`.
                        let (k0, s0) = (self.keys.len() as u32, self.segs.len() as u32);
                        self.keys.push_str(key);
                        self.segs.push(k0..self.keys.len() as u32);
                        self.entries.push(Entry { segs: s0..s0 + 1, value: vs..vs + v.len() as u32, order });
                        order += 1;
                    }
                }
                self.emit_entries(cx, raw, schema, out)
            }
        }
    }

    fn matrix(&mut self, cx: Ctx<'_>, explode: bool, name: &str, raw: &[u8], shape: Shape, out: &mut String) -> Result<(), Invalid> {
        let Some(rest) = raw.strip_prefix(b";") else { return Err(Invalid::Malformed("a matrix value starts with ';'")) };
        let name_b = name.as_bytes();
        let seg_value = |seg| matrix_segment(seg, name_b);
        match shape {
            Shape::Object(_) if explode && rest == name_b => {
                out.push_str("{}"); // `;color`: the empty object
                Ok(())
            }
            Shape::Object(schema) if explode => {
                // `;R=100;G=200`
                self.delimited(cx, rest, b';', true, Shape::Object(schema), out)
            }
            Shape::Array(items) if explode => {
                // `;color=blue;color=black`
                let t = types_of(cx.hints, items);
                out.push('[');
                let mut n = 0;
                for seg in rest.split(|&b| b == b';') {
                    let Some(v) = seg_value(seg) else { return Err(Invalid::Malformed("matrix segment with another name")) };
                    if v.is_empty() && seg.len() == name_b.len() {
                        continue; // `;color`: the empty array
                    }
                    if n > 0 {
                        out.push(',');
                    }
                    n += 1;
                    self.piece(cx, v, t, out)?;
                }
                out.push(']');
                Ok(())
            }
            _ => {
                if memchr(b';', rest).is_some() {
                    return Err(Invalid::Malformed("several matrix segments for a non-exploded value"));
                }
                let Some(v) = seg_value(rest) else { return Err(Invalid::Malformed("matrix segment with another name")) };
                self.delimited(cx, v, b',', false, shape, out)
            }
        }
    }

    /// Write the value held in `self.entries` (values are ranges of `base`) shaped by `schema`
    /// (see [`ParamDecoder::emit_tree`]); `{}` when there is no entry.
    fn emit_entries(&mut self, cx: Ctx<'_>, base: &[u8], schema: Option<SchemaId>, out: &mut String) -> Result<(), Invalid> {
        if self.entries.is_empty() {
            out.push_str("{}");
            return Ok(());
        }
        let keys = std::mem::take(&mut self.keys);
        let segs = std::mem::take(&mut self.segs);
        let mut entries = std::mem::take(&mut self.entries);
        let tree = Tree { base, keys: &keys, segs: &segs };
        entries.sort_unstable_by(|a, b| {
            let (pa, pb) = (tree.path(a), tree.path(b));
            for (x, y) in pa.iter().zip(pb) {
                match cmp_segment(tree.key(x), tree.key(y)) {
                    std::cmp::Ordering::Equal => {}
                    o => return o,
                }
            }
            pa.len().cmp(&pb.len()).then(a.order.cmp(&b.order))
        });
        let r = self.emit_tree(cx, &tree, schema, &entries, 0, out);
        self.keys = keys;
        self.segs = segs;
        self.entries = entries;
        r
    }

    /// Write the node at `depth` of the key tree formed by `entries` (sorted, all sharing the
    /// path up to `depth`). Entries whose path ends here are the node's own values (see
    /// [`ParamDecoder::leaf`]); the others are its children, grouped by their segment at
    /// `depth`. Children make an array when the schema admits an array and every child is an
    /// index (`a[0]`, `a[1]`, in numeric order) or an append (`a[]`, each one element; also
    /// when the schema says nothing); otherwise an object whose members are shaped by the
    /// schema of each property. A node with both its own value and children is malformed.
    fn emit_tree(&mut self, cx: Ctx<'_>, t: &Tree<'_>, schema: Option<SchemaId>, entries: &[Entry], depth: usize, out: &mut String) -> Result<(), Invalid> {
        let seg = |e: &Entry| t.path(e).get(depth).map(|r| t.key(r));
        let own = entries.iter().take_while(|e| seg(e).is_none()).count();
        let (values, kids) = entries.split_at(own);
        if kids.is_empty() {
            return self.leaf(cx, t.base, schema, values, out);
        }
        if !values.is_empty() {
            return Err(Invalid::Malformed("a key is both a value and an object"));
        }
        let types = types_of(cx.hints, schema);
        let appends = kids.iter().all(|e| seg(e) == Some(""));
        let as_array = types.has(TypeSet::ARRAY) && kids.iter().all(|e| seg(e).is_some_and(is_index)) && (types.0 != TypeSet::ANY || appends);
        let items = if as_array { schema.and_then(|s| cx.hints.items(s)) } else { None };
        out.push(if as_array { '[' } else { '{' });
        let (mut i, mut n) = (0, 0);
        while i < kids.len() {
            let k = seg(&kids[i]).unwrap_or("");
            let mut j = i + 1;
            while j < kids.len() && seg(&kids[j]) == Some(k) {
                j += 1;
            }
            let group = &kids[i..j];
            if as_array && k.is_empty() {
                for e in group {
                    if n > 0 {
                        out.push(',');
                    }
                    n += 1;
                    self.emit_tree(cx, t, items, std::slice::from_ref(e), depth + 1, out)?;
                }
            } else {
                if n > 0 {
                    out.push(',');
                }
                n += 1;
                if as_array {
                    self.emit_tree(cx, t, items, group, depth + 1, out)?;
                } else {
                    write_json_str(out, k);
                    out.push(':');
                    let prop = schema.and_then(|s| cx.hints.property(s, k));
                    self.emit_tree(cx, t, prop, group, depth + 1, out)?;
                }
            }
            i = j;
        }
        out.push(if as_array { ']' } else { '}' });
        Ok(())
    }

    /// The values given for one key: an array of them when the schema admits an array (a lone
    /// empty value is the empty string when the schema also admits a string: Stripe's
    /// `tax_rates=` for "none"), or when the schema admits anything and there are several;
    /// else one scalar coerced to the schema's types (several are [`Invalid::Duplicate`]). A
    /// lone empty value where the schema admits an object and no scalar is the empty object
    /// (`offline=` for `offline: {}`, the only value the key can carry there).
    fn leaf(&mut self, cx: Ctx<'_>, base: &[u8], schema: Option<SchemaId>, values: &[Entry], out: &mut String) -> Result<(), Invalid> {
        let raw = |e: &Entry| &base[e.value.start as usize..e.value.end as usize];
        let types = types_of(cx.hints, schema);
        let lone_empty = values.len() == 1 && raw(&values[0]).is_empty();
        const SCALARS: u8 = TypeSet::NULL | TypeSet::BOOLEAN | TypeSet::INTEGER | TypeSet::NUMBER | TypeSet::STRING;
        if lone_empty && types.has(TypeSet::OBJECT) && !types.has(TypeSet::ARRAY) && types.0 & SCALARS == 0 {
            out.push_str("{}");
            return Ok(());
        }
        let items = match shape_of(cx.hints, schema) {
            Shape::Array(items) if !(lone_empty && types.has(TypeSet::STRING)) => Some(types_of(cx.hints, items)),
            _ if values.len() > 1 && types.0 == TypeSet::ANY => Some(types),
            _ => None,
        };
        let Some(item_types) = items else {
            return match values {
                [one] => self.piece(cx, raw(one), types, out),
                _ => Err(Invalid::Duplicate),
            };
        };
        out.push('[');
        for (k, e) in values.iter().enumerate() {
            if k > 0 {
                out.push(',');
            }
            self.piece(cx, raw(e), item_types, out)?;
        }
        out.push(']');
        Ok(())
    }
}

/// The key paths of [`Entry`]s and the bytes their values are ranges of.
struct Tree<'a> {
    base: &'a [u8],
    keys: &'a str,
    segs: &'a [Range<u32>],
}

impl Tree<'_> {
    fn path(&self, e: &Entry) -> &[Range<u32>] {
        &self.segs[e.segs.start as usize..e.segs.end as usize]
    }

    fn key(&self, r: &Range<u32>) -> &str {
        &self.keys[r.start as usize..r.end as usize]
    }
}

/// The value of a matrix segment `name=value` (empty for a bare `name`), if it has that name.
fn matrix_segment<'a>(seg: &'a [u8], name: &[u8]) -> Option<&'a [u8]> {
    let eq = memchr(b'=', seg).unwrap_or(seg.len());
    if &seg[..eq] != name {
        return None;
    }
    Some(if eq < seg.len() { &seg[eq + 1..] } else { &seg[seg.len()..] })
}

fn range_in(base: &[u8], part: &[u8]) -> Range<usize> {
    let s = part.as_ptr() as usize - base.as_ptr() as usize;
    s..s + part.len()
}

fn check_reserved(raw: &[u8], allowed: &[u8]) -> Result<(), Invalid> {
    match raw.iter().find(|b| RESERVED.contains(b) && !allowed.contains(b) && **b != b'+') {
        Some(&b) => Err(Invalid::UnencodedReserved(b)),
        None => Ok(()),
    }
}

fn claimed_by_other(params: &[Param], me: &Param, name: &str) -> bool {
    params.iter().any(|q| {
        q.location == ParamIn::Query
            && !std::ptr::eq(q, me)
            && (q.name == name || (q.style == Style::DeepObject && name.strip_prefix(q.name.as_str()).is_some_and(|r| r.starts_with('['))))
    })
}

/// A `content` parameter's decoded value: JSON media types must hold JSON text (passed
/// through, surrounding whitespace trimmed); other media types are carried as a JSON string.
pub(crate) fn write_content(out: &mut String, text: &str, content_type: &str) -> Result<(), Invalid> {
    let json = palisade_body::media::parse(content_type).map(|m| m.kind() == palisade_body::media::MediaKind::Json).unwrap_or(false);
    if json {
        validate_json(text.as_bytes()).map_err(Invalid::NotJson)?;
        out.push_str(text.trim_matches(|c| matches!(c, ' ' | '\t' | '\n' | '\r')));
    } else {
        write_json_str(out, text);
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Unknown query parameters
// ---------------------------------------------------------------------------------------------

/// Indices (into `query`) of the pairs that no query parameter of `params` claims: not a
/// parameter's name, not `name[...]` of a deepObject parameter, not a key named by the schema
/// of a form-exploded object parameter. Appended to `out` in request order.
pub fn unknown_query_params(params: &[Param], hints: &dyn Hints, query: &Query, out: &mut Vec<usize>) {
    for i in 0..query.len() {
        let name = query.get(i).name;
        let claimed = params.iter().any(|p| {
            if p.location != ParamIn::Query {
                return false;
            }
            if p.name == name {
                return true;
            }
            match p.style {
                Style::DeepObject => name.strip_prefix(p.name.as_str()).is_some_and(|r| r.starts_with('[')),
                Style::Form if p.explode && p.content_type.is_none() => match shape_of(hints, p.schema) {
                    Shape::Object(Some(s)) => hints.property(s, name).is_some(),
                    Shape::Object(None) => true,
                    _ => false,
                },
                _ => false,
            }
        });
        if !claimed {
            out.push(i);
        }
    }
}
