//! `multipart/form-data` (RFC 7578 over RFC 2046) for a whole buffered body: parts as borrowed
//! spans.
//!
//! Parsing is strict about framing and bounded: delimiters are `CRLF--boundary` (the first may
//! start the body, after an optional preamble); a delimiter line may carry transport padding
//! (spaces, tabs) before its CRLF; the close delimiter `--boundary--` ends the body and
//! anything after it (the epilogue) is ignored. An occurrence of `CRLF--boundary` followed by
//! anything else is part data. Bare-LF framing is rejected ([`MultipartError::BareLf`]).
//! Limits: number of parts, bytes of one part's header block, header lines per part.
//!
//! Part headers: `Content-Disposition: form-data; name="x"; filename="y"` (quoted-string
//! escapes `\"` and `\\` undone; `filename*=UTF-8''%E2%82%AC.txt` per RFC 5987 wins over
//! `filename`; charsets UTF-8 and ISO-8859-1), `Content-Type` (kept as written). Header names
//! are case-insensitive; folded (obs-fold) lines are rejected.

use std::borrow::Cow;

use memchr::memmem;

use crate::media::{self, MediaKind};

#[cfg(test)]
mod tests;

/// Bounds on one body.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub max_parts: usize,
    /// Bytes of one part's header block.
    pub max_header_bytes: usize,
    /// Header lines in one part.
    pub max_headers: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_parts: 256, max_header_bytes: 8 * 1024, max_headers: 32 }
    }
}

/// Why a body is not a well-formed `multipart/form-data` body. `part` is the 0-based index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MultipartError {
    /// The Content-Type has no `boundary` parameter (or does not parse).
    NoBoundary,
    /// The boundary is empty, longer than 70 bytes or holds CR/LF.
    BadBoundary,
    /// No delimiter at all: not this multipart body.
    MissingFirstBoundary,
    /// Lines end with LF alone where CRLF is required.
    BareLf,
    /// A delimiter line with something other than padding and CRLF after the boundary.
    BadDelimiter,
    /// The body ends without the close delimiter `--boundary--`.
    MissingFinalBoundary,
    TooManyParts {
        limit: usize,
    },
    HeadersTooLarge {
        part: usize,
    },
    TooManyHeaders {
        part: usize,
    },
    /// A header line without a colon, a folded line, or not UTF-8.
    BadHeader {
        part: usize,
    },
    NoContentDisposition {
        part: usize,
    },
    /// A disposition other than `form-data`, or with bad parameters.
    BadDisposition {
        part: usize,
    },
    /// `Content-Disposition` without `name`.
    NoName {
        part: usize,
    },
}

impl std::fmt::Display for MultipartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MultipartError::NoBoundary => f.write_str("multipart content type without a boundary"),
            MultipartError::BadBoundary => f.write_str("invalid multipart boundary"),
            MultipartError::MissingFirstBoundary => f.write_str("no multipart boundary in the body"),
            MultipartError::BareLf => f.write_str("multipart lines must end with CRLF"),
            MultipartError::BadDelimiter => f.write_str("malformed multipart delimiter line"),
            MultipartError::MissingFinalBoundary => f.write_str("multipart body without its final boundary"),
            MultipartError::TooManyParts { limit } => write!(f, "more than {limit} multipart parts"),
            MultipartError::HeadersTooLarge { part } => write!(f, "part {part}: headers too large"),
            MultipartError::TooManyHeaders { part } => write!(f, "part {part}: too many headers"),
            MultipartError::BadHeader { part } => write!(f, "part {part}: malformed header"),
            MultipartError::NoContentDisposition { part } => write!(f, "part {part}: no Content-Disposition"),
            MultipartError::BadDisposition { part } => write!(f, "part {part}: Content-Disposition is not form-data"),
            MultipartError::NoName { part } => write!(f, "part {part}: Content-Disposition without a name"),
        }
    }
}

impl std::error::Error for MultipartError {}

/// One part, borrowing from the body (names own their text only when unescaping was needed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Part<'a> {
    pub name: Cow<'a, str>,
    pub filename: Option<Cow<'a, str>>,
    /// The part's `Content-Type` as written, trimmed.
    pub content_type: Option<&'a str>,
    /// The raw header block (without the blank line).
    pub headers: &'a [u8],
    pub body: &'a [u8],
}

/// The boundary of a `multipart/*` Content-Type.
pub fn boundary(content_type: &str) -> Result<Cow<'_, str>, MultipartError> {
    let m = media::parse(content_type).map_err(|_| MultipartError::NoBoundary)?;
    boundary_of(&m)
}

/// [`boundary`] of a `Content-Type` parsed already.
pub fn boundary_of<'a>(m: &media::MediaType<'a>) -> Result<Cow<'a, str>, MultipartError> {
    let b = m.param("boundary").ok_or(MultipartError::NoBoundary)?;
    if b.is_empty() || b.len() > 70 || b.bytes().any(|c| c == b'\r' || c == b'\n') {
        return Err(MultipartError::BadBoundary);
    }
    Ok(b)
}

/// Parse `body` with `boundary`, appending its parts to `parts`.
pub fn parse<'a>(body: &'a [u8], boundary: &str, limits: &Limits, parts: &mut Vec<Part<'a>>) -> Result<(), MultipartError> {
    if boundary.is_empty() || boundary.len() > 70 {
        return Err(MultipartError::BadBoundary);
    }
    let mut delim_buf = [0u8; 2 + 2 + 70];
    delim_buf[..4].copy_from_slice(b"\r\n--");
    delim_buf[4..4 + boundary.len()].copy_from_slice(boundary.as_bytes());
    let crlf_delim = &delim_buf[..4 + boundary.len()];
    let delim = &crlf_delim[2..];
    let finder = memmem::Finder::new(crlf_delim);

    // Find the first delimiter line: at the very start, or after a preamble.
    let mut pos = if body.starts_with(delim) {
        0
    } else {
        match finder.find(body) {
            Some(i) => i + 2,
            None => {
                return Err(if memmem::find(body, delim).is_some() { MultipartError::BareLf } else { MultipartError::MissingFirstBoundary });
            }
        }
    };
    let mut index = 0;
    loop {
        // `pos` is at `--boundary`.
        let mut p = pos + delim.len();
        if body[p..].starts_with(b"--") {
            return Ok(()); // close delimiter; the epilogue is ignored
        }
        while p < body.len() && matches!(body[p], b' ' | b'\t') {
            p += 1;
        }
        if body[p..].starts_with(b"\n") {
            return Err(MultipartError::BareLf);
        }
        if !body[p..].starts_with(b"\r\n") {
            return Err(if p >= body.len() { MultipartError::MissingFinalBoundary } else { MultipartError::BadDelimiter });
        }
        p += 2;
        if parts.len() >= limits.max_parts {
            return Err(MultipartError::TooManyParts { limit: limits.max_parts });
        }
        // Header block.
        let (headers, body_start) = if body[p..].starts_with(b"\r\n") {
            (&body[p..p], p + 2)
        } else {
            let window = &body[p..body.len().min(p + limits.max_header_bytes + 4)];
            match memmem::find(window, b"\r\n\r\n") {
                Some(e) => (&body[p..p + e], p + e + 4),
                None if window.iter().enumerate().any(|(i, &b)| b == b'\n' && (i == 0 || window[i - 1] != b'\r')) => return Err(MultipartError::BareLf),
                None if window.len() == limits.max_header_bytes + 4 => return Err(MultipartError::HeadersTooLarge { part: index }),
                None => return Err(MultipartError::MissingFinalBoundary),
            }
        };
        // Body: up to the next CRLF--boundary that is a real delimiter line.
        let mut search = body_start;
        let end = loop {
            let Some(i) = finder.find(&body[search..]) else { return Err(MultipartError::MissingFinalBoundary) };
            let at = search + i;
            let after = &body[at + crlf_delim.len()..];
            let pad = after.iter().take_while(|b| matches!(b, b' ' | b'\t')).count();
            if after.starts_with(b"--") || after[pad..].starts_with(b"\r\n") || after[pad..].starts_with(b"\n") || pad == after.len() {
                break at;
            }
            search = at + 2;
        };
        parts.push(part_headers(headers, &body[body_start..end], index, limits)?);
        index += 1;
        pos = end + 2;
    }
}

fn part_headers<'a>(headers: &'a [u8], body: &'a [u8], part: usize, limits: &Limits) -> Result<Part<'a>, MultipartError> {
    let mut name = None;
    let mut filename = None;
    let mut content_type = None;
    let mut seen_cd = false;
    if !headers.is_empty() {
        for (n, line) in headers.split(|&b| b == b'\n').enumerate() {
            if n >= limits.max_headers {
                return Err(MultipartError::TooManyHeaders { part });
            }
            // Every line but the last ended with CRLF: it must end with CR here.
            let line = match line.strip_suffix(b"\r") {
                Some(l) => l,
                None if line.as_ptr_range().end == headers.as_ptr_range().end => line,
                None => return Err(MultipartError::BareLf),
            };
            if line.first().is_some_and(|b| matches!(b, b' ' | b'\t')) {
                return Err(MultipartError::BadHeader { part });
            }
            let line = std::str::from_utf8(line).map_err(|_| MultipartError::BadHeader { part })?;
            let (hname, value) = line.split_once(':').ok_or(MultipartError::BadHeader { part })?;
            let value = value.trim_matches([' ', '\t']);
            if hname.eq_ignore_ascii_case("content-disposition") {
                if seen_cd {
                    return Err(MultipartError::BadDisposition { part });
                }
                seen_cd = true;
                let (ty, rest) = value.split_once(';').unwrap_or((value, ""));
                if !ty.trim_matches([' ', '\t']).eq_ignore_ascii_case("form-data") {
                    return Err(MultipartError::BadDisposition { part });
                }
                let mut ext_filename = None;
                for p in media::params_of(rest) {
                    let (k, v) = p.map_err(|_| MultipartError::BadDisposition { part })?;
                    if k.eq_ignore_ascii_case("name") {
                        name = Some(v);
                    } else if k.eq_ignore_ascii_case("filename") {
                        filename = Some(v);
                    } else if k.eq_ignore_ascii_case("filename*") {
                        ext_filename = Some(decode_ext_value(&v).ok_or(MultipartError::BadDisposition { part })?);
                    }
                }
                if ext_filename.is_some() {
                    filename = ext_filename.map(Cow::Owned);
                }
            } else if hname.eq_ignore_ascii_case("content-type") {
                content_type = Some(value);
            }
        }
    }
    if !seen_cd {
        return Err(MultipartError::NoContentDisposition { part });
    }
    let name = name.ok_or(MultipartError::NoName { part })?;
    Ok(Part { name, filename, content_type, headers, body })
}

/// RFC 5987 `ext-value`: `charset'[language]'pct-encoded`.
fn decode_ext_value(v: &str) -> Option<String> {
    let (charset, rest) = v.split_once('\'')?;
    let (_lang, enc) = rest.split_once('\'')?;
    let mut bytes = Vec::with_capacity(enc.len());
    let b = enc.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let h = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
            bytes.push(u8::from_str_radix(h, 16).ok()?);
            i += 3;
        } else {
            bytes.push(b[i]);
            i += 1;
        }
    }
    if charset.eq_ignore_ascii_case("utf-8") {
        String::from_utf8(bytes).ok()
    } else if charset.eq_ignore_ascii_case("iso-8859-1") {
        Some(bytes.iter().map(|&c| char::from(c)).collect())
    } else {
        None
    }
}

/// Whether a part with this `Content-Type` holds text: none (RFC 7578 §4.4: `text/plain`), or
/// `text/*`, JSON, XML or form with a UTF-8 or US-ASCII charset or none.
pub fn is_text_type(ct: Option<&str>) -> bool {
    let Some(ct) = ct else { return true };
    let Ok(m) = media::parse(ct) else { return false };
    let charset_ok = m.param("charset").is_none_or(|c| c.eq_ignore_ascii_case("utf-8") || c.eq_ignore_ascii_case("us-ascii"));
    charset_ok && matches!(m.kind(), MediaKind::Text | MediaKind::Json | MediaKind::Xml | MediaKind::Form)
}
