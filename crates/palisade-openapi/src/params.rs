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
use palisade_schema::{Hints, SchemaId, TypeSet};

use crate::model::{Param, ParamIn, Style};

mod deep;
mod json;
mod sources;
#[cfg(test)]
pub(crate) mod tests;

use deep::Entry;
pub use deep::MAX_DEEP_OBJECT_DEPTH;
pub(crate) use json::write_content;
pub use json::{is_json_number, validate_json, write_scalar, JsonSyntaxError, JSON_MAX_DEPTH};
use sources::trim_ows;
pub use sources::{Cookies, HeaderSource, PathSource, Sources, TooManyCookies};

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
