//! Request bodies sent with a `Content-Encoding` (RFC 9110 §8.4): gzip and deflate are decoded
//! (bounded by the phase's byte limit) so that the body is inspected as what it declares to
//! be; a coding that is not decoded here (`br`, `zstd`, ...) leaves a body that is not text
//! uninspected, with the reason recorded ([`Skipped`]): compressed bytes read as a text
//! grammar are noise that every detector misreads. A body that is text all the same is
//! inspected as before: a backend that ignores the header reads that text.

use std::fmt;
use std::io::Read as _;

/// Why a body was not inspected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Skipped {
    /// Compressed with a coding that is not decoded here, and not text.
    UnknownCoding,
    /// Declared gzip or deflate, not text, and not decodable as such.
    Undecodable,
}

impl fmt::Display for Skipped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Skipped::UnknownCoding => "body not inspected: its content coding is not decoded (only gzip and deflate are) and it is not text",
            Skipped::Undecodable => "body not inspected: it does not decode as its declared content coding and it is not text",
        })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Coding {
    Gzip,
    Deflate,
}

/// The codings of `Content-Encoding`, in the order applied; `Ok(empty)` for none or only
/// `identity`; `Err(())` when one is not decoded here.
fn codings(headers: &http::HeaderMap) -> Result<smallvec::SmallVec<[Coding; 2]>, ()> {
    let mut out = smallvec::SmallVec::new();
    for v in headers.get_all(http::header::CONTENT_ENCODING) {
        let v = v.to_str().map_err(|_| ())?;
        for c in v.split(',').map(|c| c.trim_matches([' ', '\t'])).filter(|c| !c.is_empty()) {
            if c.eq_ignore_ascii_case("gzip") || c.eq_ignore_ascii_case("x-gzip") {
                out.push(Coding::Gzip);
            } else if c.eq_ignore_ascii_case("deflate") {
                out.push(Coding::Deflate);
            } else if !c.eq_ignore_ascii_case("identity") {
                return Err(());
            }
        }
    }
    Ok(out)
}

/// What to inspect of a body.
#[derive(Debug, PartialEq, Eq)]
pub enum Body {
    /// The body as received (no coding, or a text body under a coding not decoded).
    AsIs,
    /// Decoded into the buffer given to [`decode`].
    Decoded,
    /// Nothing (the reason).
    Skip(Skipped),
    /// Decoded beyond `max` bytes: the limit is exceeded.
    TooLarge,
}

fn inflate(coding: Coding, input: &[u8], max: usize, out: &mut Vec<u8>) -> std::io::Result<()> {
    out.clear();
    let limit = max as u64 + 1;
    match coding {
        Coding::Gzip => flate2::read::MultiGzDecoder::new(input).take(limit).read_to_end(out).map(|_| ()),
        // `deflate` is the zlib format (RFC 9110 §8.4.1.2); some clients send raw deflate.
        Coding::Deflate => match flate2::read::ZlibDecoder::new(input).take(limit).read_to_end(out) {
            Ok(_) => Ok(()),
            Err(_) => {
                out.clear();
                flate2::read::DeflateDecoder::new(input).take(limit).read_to_end(out).map(|_| ())
            }
        },
    }
}

/// Decide what to inspect of `body` under the request's `Content-Encoding`, decoding into
/// `out` (at most `max` bytes).
pub fn decode(headers: &http::HeaderMap, body: &[u8], max: usize, out: &mut Vec<u8>) -> Body {
    if !headers.contains_key(http::header::CONTENT_ENCODING) {
        return Body::AsIs;
    }
    let is_text = || std::str::from_utf8(body).is_ok();
    let list = match codings(headers) {
        Ok(l) if l.is_empty() => return Body::AsIs,
        Ok(l) => l,
        Err(()) if is_text() => return Body::AsIs,
        Err(()) => return Body::Skip(Skipped::UnknownCoding),
    };
    // Undo the codings last applied first.
    let mut tmp = Vec::new();
    for (i, &c) in list.iter().rev().enumerate() {
        let input: &[u8] = if i == 0 { body } else { &tmp };
        let mut next = Vec::new();
        if inflate(c, input, max, &mut next).is_err() {
            return if is_text() { Body::AsIs } else { Body::Skip(Skipped::Undecodable) };
        }
        if next.len() > max {
            return Body::TooLarge;
        }
        tmp = next;
    }
    *out = tmp;
    Body::Decoded
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;

    fn headers(ce: &str) -> http::HeaderMap {
        let mut h = http::HeaderMap::new();
        h.insert(http::header::CONTENT_ENCODING, ce.parse().unwrap());
        h
    }

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn zlib(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn gzip_and_deflate_are_decoded() {
        let doc = br#"{"events":[{"msg":"saved"}]}"#;
        let mut out = Vec::new();
        assert_eq!(decode(&headers("gzip"), &gzip(doc), 1 << 20, &mut out), Body::Decoded);
        assert_eq!(out, doc);
        assert_eq!(decode(&headers("X-GZIP"), &gzip(doc), 1 << 20, &mut out), Body::Decoded);
        assert_eq!(decode(&headers("deflate"), &zlib(doc), 1 << 20, &mut out), Body::Decoded);
        assert_eq!(out, doc);
        // Two codings, applied in order: the last is undone first.
        assert_eq!(decode(&headers("deflate, gzip"), &gzip(&zlib(doc)), 1 << 20, &mut out), Body::Decoded);
        assert_eq!(out, doc);
        assert_eq!(decode(&headers("identity"), doc, 1 << 20, &mut out), Body::AsIs);
        assert_eq!(decode(&http::HeaderMap::new(), doc, 1 << 20, &mut out), Body::AsIs);
    }

    #[test]
    fn what_is_not_decoded_is_skipped_unless_it_is_text() {
        let mut out = Vec::new();
        let binary = [0x1b, 0x8f, 0xff, 0x00, 0x9c, 0xfe];
        assert_eq!(decode(&headers("br"), &binary, 1 << 20, &mut out), Body::Skip(Skipped::UnknownCoding));
        assert_eq!(decode(&headers("gzip"), &binary, 1 << 20, &mut out), Body::Skip(Skipped::Undecodable));
        // Text under a coding it is not in: a backend that ignores the header reads it.
        assert_eq!(decode(&headers("br"), b"q=' or 1=1--", 1 << 20, &mut out), Body::AsIs);
        assert_eq!(decode(&headers("gzip"), b"q=' or 1=1--", 1 << 20, &mut out), Body::AsIs);
    }

    #[test]
    fn decoding_is_bounded() {
        let bomb = gzip(&vec![b'a'; 1 << 20]);
        let mut out = Vec::new();
        assert_eq!(decode(&headers("gzip"), &bomb, 4096, &mut out), Body::TooLarge);
        assert_eq!(decode(&headers("gzip"), &bomb, 1 << 20, &mut out), Body::Decoded);
    }
}
