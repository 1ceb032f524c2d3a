//! Media types (RFC 9110 §8.3.1): parsing `type/subtype; name=value` with `+suffix`,
//! case-insensitive type and parameter names, quoted-string parameter values; selecting the
//! operation's declared media range that best matches a request's `Content-Type`; and
//! classifying a media type (JSON-like, form, multipart, text, XML).
//!
//! Selection precedence, most specific first (ties go to the first range in spec order):
//! 1. exact type/subtype whose parameters are all present in the request with equal values
//!    (more matched parameters win);
//! 2. exact type/subtype without parameters;
//! 3. exact type/subtype whose parameters are absent from the request (`text/plain;
//!    charset=utf-8` for a bare `text/plain`);
//! 4. `type/*+suffix` (`application/*+json` matches `application/problem+json`, not
//!    `application/json`);
//! 5. `type/*`;
//! 6. `*/*+suffix`;
//! 7. `*/*`.
//!
//! A range parameter present in the request with a different value (`charset=utf-8` vs
//! `charset=latin1`) excludes the range. `charset` values compare case-insensitively, other
//! parameter values exactly.

use std::borrow::Cow;

#[cfg(test)]
mod tests;

/// Why a media type does not parse.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MediaError {
    /// Type or subtype missing or not a token.
    BadType,
    /// A parameter that is not `token=token` or `token="quoted"`.
    BadParameter,
}

/// A parsed media type, borrowing from the text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MediaType<'a> {
    /// As written (compare with `eq_ignore_ascii_case`).
    pub ty: &'a str,
    pub subtype: &'a str,
    /// The raw parameter section after the first `;` (syntax already checked).
    raw_params: &'a str,
}

/// Broad families of media types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MediaKind {
    /// `application/json`, `text/json`, any `+json` suffix.
    Json,
    /// `application/x-www-form-urlencoded`.
    Form,
    /// `multipart/*`.
    Multipart,
    /// `application/xml`, `text/xml`, any `+xml` suffix.
    Xml,
    /// Any other `text/*`.
    Text,
    Other,
}

/// RFC 9110 `tchar`, as a table.
const TCHAR: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 256 {
        let b = i as u8;
        t[i] = b.is_ascii_alphanumeric();
        i += 1;
    }
    let extra = b"!#$%&'*+-.^_`|~";
    let mut k = 0;
    while k < extra.len() {
        t[extra[k] as usize] = true;
        k += 1;
    }
    t
};

fn is_tchar(b: u8) -> bool {
    TCHAR[b as usize]
}

fn is_token(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(is_tchar)
}

fn trim(s: &str) -> &str {
    s.trim_matches(|c| c == ' ' || c == '\t')
}

/// Parse `s`. Surrounding whitespace is allowed; parameters may be empty (`text/plain;`).
pub fn parse(s: &str) -> Result<MediaType<'_>, MediaError> {
    // Byte searches (`;` and `/` are ASCII, so the offsets are character boundaries): a
    // `Content-Type` is short, and `str::find` sets up a memchr search for each call.
    let (essence, raw_params) = match s.bytes().position(|b| b == b';') {
        Some(i) => (&s[..i], &s[i + 1..]),
        None => (s, ""),
    };
    let essence = trim(essence);
    let slash = essence.bytes().position(|b| b == b'/').ok_or(MediaError::BadType)?;
    let (ty, subtype) = (&essence[..slash], &essence[slash + 1..]);
    if !is_token(ty) || !is_token(subtype) {
        return Err(MediaError::BadType);
    }
    let m = MediaType { ty, subtype, raw_params };
    for p in m.params() {
        p?;
    }
    Ok(m)
}

/// Iterator over `(name, value)` parameters; values unquoted and unescaped.
pub struct Params<'a> {
    rest: &'a str,
}

impl<'a> Iterator for Params<'a> {
    type Item = Result<(&'a str, Cow<'a, str>), MediaError>;

    fn next(&mut self) -> Option<Self::Item> {
        let s = self.rest.trim_start_matches([' ', '\t', ';']);
        if s.is_empty() {
            self.rest = s;
            return None;
        }
        let Some(eq) = s.find('=') else {
            self.rest = "";
            return Some(Err(MediaError::BadParameter));
        };
        let name = trim(&s[..eq]);
        if !is_token(name) {
            self.rest = "";
            return Some(Err(MediaError::BadParameter));
        }
        let v = s[eq + 1..].trim_start_matches([' ', '\t']);
        if let Some(q) = v.strip_prefix('"') {
            match unquote(q) {
                Some((value, used)) => {
                    let after = trim(&q[used..]);
                    if !(after.is_empty() || after.starts_with(';')) {
                        self.rest = "";
                        return Some(Err(MediaError::BadParameter));
                    }
                    self.rest = after;
                    return Some(Ok((name, value)));
                }
                None => {
                    self.rest = "";
                    return Some(Err(MediaError::BadParameter));
                }
            }
        }
        let end = v.find(';').unwrap_or(v.len());
        let value = trim(&v[..end]);
        self.rest = &v[end..];
        if !is_token(value) {
            self.rest = "";
            return Some(Err(MediaError::BadParameter));
        }
        Some(Ok((name, Cow::Borrowed(value))))
    }
}

/// Parameters in `s` (`; a=1; b="x"`), e.g. after a `Content-Disposition` type.
pub fn params_of(s: &str) -> Params<'_> {
    Params { rest: s }
}

/// Unquote a quoted-string whose opening quote was already consumed: the value and the number
/// of bytes used (closing quote included). `None` if unterminated or holding a control char.
pub fn unquote(q: &str) -> Option<(Cow<'_, str>, usize)> {
    let b = q.as_bytes();
    let mut i = 0;
    let mut owned: Option<String> = None;
    let mut last = 0;
    while i < b.len() {
        match b[i] {
            b'"' => {
                let v = match owned {
                    Some(mut o) => {
                        o.push_str(&q[last..i]);
                        Cow::Owned(o)
                    }
                    None => Cow::Borrowed(&q[..i]),
                };
                return Some((v, i + 1));
            }
            b'\\' if i + 1 < b.len() => {
                let o = owned.get_or_insert_with(String::new);
                o.push_str(&q[last..i]);
                // The escaped character may be multi-byte.
                let ch = q[i + 1..].chars().next()?;
                o.push(ch);
                i += 1 + ch.len_utf8();
                last = i;
            }
            b'\t' => i += 1,
            0..=0x1f | 0x7f => return None,
            _ => i += 1,
        }
    }
    None
}

impl<'a> MediaType<'a> {
    /// The structured syntax suffix: `json` for `application/problem+json`.
    pub fn suffix(&self) -> Option<&'a str> {
        self.subtype.rsplit_once('+').map(|(_, s)| s)
    }

    pub fn params(&self) -> Params<'a> {
        Params { rest: self.raw_params }
    }

    /// Value of parameter `name` (case-insensitive name), the first if repeated.
    pub fn param(&self, name: &str) -> Option<Cow<'a, str>> {
        self.params().flatten().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v)
    }

    /// Whether type and subtype equal `ty`/`subtype` (case-insensitive).
    pub fn is(&self, ty: &str, subtype: &str) -> bool {
        self.ty.eq_ignore_ascii_case(ty) && self.subtype.eq_ignore_ascii_case(subtype)
    }

    pub fn kind(&self) -> MediaKind {
        let suffix = self.suffix();
        let sfx = |s: &str| suffix.is_some_and(|x| x.eq_ignore_ascii_case(s));
        if self.is("application", "json") || self.is("text", "json") || sfx("json") {
            MediaKind::Json
        } else if self.is("application", "x-www-form-urlencoded") {
            MediaKind::Form
        } else if self.ty.eq_ignore_ascii_case("multipart") {
            MediaKind::Multipart
        } else if self.is("application", "xml") || self.is("text", "xml") || sfx("xml") {
            MediaKind::Xml
        } else if self.ty.eq_ignore_ascii_case("text") {
            MediaKind::Text
        } else {
            MediaKind::Other
        }
    }

    /// How well this media *range* matches the concrete media type `req`; higher is more
    /// specific, `None` for no match (see the module docs for the order).
    pub fn match_score(&self, req: &MediaType<'_>) -> Option<u32> {
        let sub_wild_suffix = self.subtype.strip_prefix("*+");
        let suffix_ok = |x: &str| req.suffix().is_some_and(|s| s.eq_ignore_ascii_case(x));
        if self.ty == "*" {
            return match (self.subtype, sub_wild_suffix) {
                ("*", _) => Some(0),
                (_, Some(x)) if suffix_ok(x) => Some(100),
                _ => None,
            };
        }
        if !self.ty.eq_ignore_ascii_case(req.ty) {
            return None;
        }
        if self.subtype == "*" {
            return Some(200);
        }
        if let Some(x) = sub_wild_suffix {
            return suffix_ok(x).then_some(300);
        }
        if !self.subtype.eq_ignore_ascii_case(req.subtype) {
            return None;
        }
        let mut matched = 0;
        let mut absent = false;
        for (name, value) in self.params().flatten() {
            match req.param(name) {
                Some(v) => {
                    let eq = if name.eq_ignore_ascii_case("charset") { v.eq_ignore_ascii_case(&value) } else { v == value };
                    if !eq {
                        return None;
                    }
                    matched += 1;
                }
                None => absent = true,
            }
        }
        Some(match (matched, absent) {
            (_, true) => 400,
            (0, false) => 500,
            (n, false) => 600 + n.min(99),
        })
    }
}

/// Why no declared media range was selected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SelectError {
    /// The request's `Content-Type` does not parse.
    BadContentType(MediaError),
    /// No declared range matches (HTTP 415).
    NoMatch,
}

/// Index of the range in `ranges` that best matches `content_type` (ranges that do not parse
/// are skipped).
pub fn select<'r, I>(content_type: &str, ranges: I) -> Result<usize, SelectError>
where
    I: IntoIterator<Item = &'r str>,
{
    select_parsed(content_type, ranges).map(|(i, _)| i)
}

/// [`select`], also returning the parsed `content_type` (for its kind and parameters, so the
/// caller does not parse it a second time).
pub fn select_parsed<'c, 'r, I>(content_type: &'c str, ranges: I) -> Result<(usize, MediaType<'c>), SelectError>
where
    I: IntoIterator<Item = &'r str>,
{
    let req = parse(content_type).map_err(SelectError::BadContentType)?;
    let mut best: Option<(u32, usize)> = None;
    for (i, r) in ranges.into_iter().enumerate() {
        // The usual case, a range written exactly as the request's media type, with no
        // parameter and no wildcard: an exact type/subtype match without parameters (500)
        // without parsing the range again.
        let score = if r == content_type && !r.contains(['*', ';']) {
            Some(500)
        } else {
            let Ok(range) = parse(r) else { continue };
            range.match_score(&req)
        };
        if let Some(score) = score {
            if best.is_none_or(|(b, _)| score > b) {
                best = Some((score, i));
            }
        }
    }
    best.map(|(_, i)| (i, req)).ok_or(SelectError::NoMatch)
}

/// The family of `media_type` (`Other` if it does not parse).
pub fn kind_of(media_type: &str) -> MediaKind {
    parse(media_type).map_or(MediaKind::Other, |m| m.kind())
}

pub fn is_json(media_type: &str) -> bool {
    kind_of(media_type) == MediaKind::Json
}

pub fn is_form(media_type: &str) -> bool {
    kind_of(media_type) == MediaKind::Form
}

pub fn is_multipart(media_type: &str) -> bool {
    kind_of(media_type) == MediaKind::Multipart
}

pub fn is_xml(media_type: &str) -> bool {
    kind_of(media_type) == MediaKind::Xml
}

/// `text/*` that is not XML or JSON.
pub fn is_text(media_type: &str) -> bool {
    kind_of(media_type) == MediaKind::Text
}
