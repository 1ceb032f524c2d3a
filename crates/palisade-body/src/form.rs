//! `application/x-www-form-urlencoded` (the WHATWG URL standard's form encoding), which is
//! also the syntax of query strings: [`Query`] splits `name=value&...` into pairs (names
//! decoded once, values left raw, since how a value decodes depends on who reads it), and
//! [`percent_decode`] decodes a piece by the rules of its source (form, path, cookie, header).
//!
//! Strict: `%` must be followed by two hex digits (except in cookies, where a stray `%` is
//! data) and the decoded bytes must be UTF-8. Nothing allocates once the reusable buffers have
//! grown.

use std::ops::Range;

use memchr::memchr;

#[cfg(test)]
mod tests;

/// Why a piece could not be decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// `%` not followed by two hex digits.
    BadPercent,
    /// The decoded bytes are not UTF-8 (includes overlong forms such as `%C0%AF`).
    BadUtf8,
}

impl DecodeError {
    pub fn as_str(self) -> &'static str {
        match self {
            DecodeError::BadPercent => "invalid percent-encoding",
            DecodeError::BadUtf8 => "invalid UTF-8 after percent-decoding",
        }
    }
}

/// How the raw bytes of a source are decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecodeMode {
    /// `application/x-www-form-urlencoded`: `+` is a space, `%XX` strict.
    Form,
    /// Path segments: `%XX` strict, `+` literal.
    Path,
    /// Cookies: `%XX` decoded where well-formed, a stray `%` kept literally, `+` literal.
    Cookie,
    /// Headers: no decoding, only UTF-8 validation.
    None,
}

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Decode `raw` according to `mode`. Returns `raw` itself (validated as UTF-8) when it holds
/// nothing to decode, else the decoded text in `scratch` (cleared first). Never allocates once
/// `scratch` has grown to the longest piece.
pub fn percent_decode<'s>(raw: &'s [u8], mode: DecodeMode, scratch: &'s mut Vec<u8>) -> Result<&'s str, DecodeError> {
    let needs = match mode {
        DecodeMode::Form => memchr::memchr2(b'%', b'+', raw).is_some(),
        DecodeMode::Path | DecodeMode::Cookie => memchr(b'%', raw).is_some(),
        DecodeMode::None => false,
    };
    if !needs {
        return std::str::from_utf8(raw).map_err(|_| DecodeError::BadUtf8);
    }
    scratch.clear();
    let mut i = 0;
    while i < raw.len() {
        let b = raw[i];
        if b == b'%' {
            match (raw.get(i + 1).copied().and_then(hex), raw.get(i + 2).copied().and_then(hex)) {
                (Some(h), Some(l)) => {
                    scratch.push(h << 4 | l);
                    i += 3;
                    continue;
                }
                _ if mode == DecodeMode::Cookie => scratch.push(b'%'),
                _ => return Err(DecodeError::BadPercent),
            }
        } else if b == b'+' && mode == DecodeMode::Form {
            scratch.push(b' ');
        } else {
            scratch.push(b);
        }
        i += 1;
    }
    std::str::from_utf8(scratch).map_err(|_| DecodeError::BadUtf8)
}

/// The query string is not acceptable as a whole.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueryError {
    /// More pairs than the limit; the first `limit` were kept.
    TooManyPairs { limit: usize },
}

#[derive(Clone, Debug)]
struct RawPair {
    /// Decoded name in `Query::names` (or the raw name when it could not be decoded).
    name: Range<u32>,
    /// Raw (still encoded) value in `Query::raw`.
    value: Range<u32>,
    has_eq: bool,
    name_error: Option<DecodeError>,
}

/// One `name=value` pair of a query string (or of a form body).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueryPair<'q> {
    /// Decoded name. When `name_error` is set: the raw name if it is UTF-8, else empty.
    pub name: &'q str,
    /// The value as it was sent (not yet decoded: decoding depends on the parameter's style).
    pub raw_value: &'q [u8],
    /// `false` for a bare `name` without `=` (as opposed to `name=`).
    pub has_eq: bool,
    pub name_error: Option<DecodeError>,
}

/// A parsed query string (or `application/x-www-form-urlencoded` body): pairs in order,
/// duplicates kept, names decoded once, values left raw. Keep one per worker and reuse it.
#[derive(Debug)]
pub struct Query {
    raw: Vec<u8>,
    names: String,
    pairs: Vec<RawPair>,
    scratch: Vec<u8>,
    max_pairs: usize,
}

impl Default for Query {
    fn default() -> Self {
        Query::with_limit(1024)
    }
}

impl Query {
    /// A parser that keeps at most `max_pairs` pairs.
    pub fn with_limit(max_pairs: usize) -> Self {
        Query { raw: Vec::new(), names: String::new(), pairs: Vec::new(), scratch: Vec::new(), max_pairs }
    }

    /// Parse `raw` (without the leading `?`), replacing what was held. Empty segments
    /// (`a=1&&b=2`) are skipped.
    pub fn parse(&mut self, raw: &[u8]) -> Result<(), QueryError> {
        self.raw.clear();
        self.raw.extend_from_slice(raw);
        self.names.clear();
        self.pairs.clear();
        let mut pos = 0;
        while pos < raw.len() {
            let end = memchr(b'&', &raw[pos..]).map_or(raw.len(), |e| pos + e);
            let seg = &raw[pos..end];
            if !seg.is_empty() {
                if self.pairs.len() == self.max_pairs {
                    return Err(QueryError::TooManyPairs { limit: self.max_pairs });
                }
                let (name_raw, value, has_eq) = match memchr(b'=', seg) {
                    Some(eq) => (&seg[..eq], pos + eq + 1..end, true),
                    None => (seg, end..end, false),
                };
                let start = self.names.len();
                let name_error = match percent_decode(name_raw, DecodeMode::Form, &mut self.scratch) {
                    Ok(n) => {
                        self.names.push_str(n);
                        None
                    }
                    Err(e) => {
                        if let Ok(n) = std::str::from_utf8(name_raw) {
                            self.names.push_str(n);
                        }
                        Some(e)
                    }
                };
                self.pairs.push(RawPair { name: start as u32..self.names.len() as u32, value: value.start as u32..value.end as u32, has_eq, name_error });
            }
            pos = end + 1;
        }
        Ok(())
    }

    pub fn len(&self) -> usize {
        self.pairs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    /// Pair `i` in request order.
    pub fn get(&self, i: usize) -> QueryPair<'_> {
        let p = &self.pairs[i];
        QueryPair {
            name: &self.names[p.name.start as usize..p.name.end as usize],
            raw_value: &self.raw[p.value.start as usize..p.value.end as usize],
            has_eq: p.has_eq,
            name_error: p.name_error,
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = QueryPair<'_>> + '_ {
        (0..self.pairs.len()).map(|i| self.get(i))
    }

    /// The query string as parsed (what [`Query::value_range`] indexes).
    pub fn raw(&self) -> &[u8] {
        &self.raw
    }

    /// Where the raw value of pair `i` lies in [`Query::raw`].
    pub fn value_range(&self, i: usize) -> Range<usize> {
        let v = &self.pairs[i].value;
        v.start as usize..v.end as usize
    }
}
