//! Content codings (RFC 9110 §8.4.1) a body is decompressed from before it is judged: `gzip`
//! (`x-gzip`, members concatenated as `gzip -c a b` writes them) and `deflate`, which RFC 9110
//! defines as zlib-wrapped and which some clients and servers send as raw deflate (both are
//! accepted). Other codings (`br`, `zstd`, `compress`) are not decoded; callers say what they
//! do with them.
//!
//! Decompression is bounded by the caller's output limit: a small compressed body cannot
//! expand into unbounded memory.

use std::io::Read;

#[cfg(test)]
mod tests;

/// A content coding that can be decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Coding {
    Gzip,
    Deflate,
}

impl Coding {
    /// The coding a `Content-Encoding` token names (case-insensitive, surrounding whitespace
    /// ignored); `None` for `identity`, an empty token and codings not decoded here.
    pub fn from_token(token: &[u8]) -> Option<Coding> {
        let t = token.trim_ascii();
        if t.eq_ignore_ascii_case(b"gzip") || t.eq_ignore_ascii_case(b"x-gzip") {
            Some(Coding::Gzip)
        } else if t.eq_ignore_ascii_case(b"deflate") {
            Some(Coding::Deflate)
        } else {
            None
        }
    }
}

/// What decompressing a body gave.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Inflated {
    /// The whole body, at most the limit, is in the output.
    Done,
    /// The body decompresses to more than the limit; the output holds the first `limit + 1`
    /// bytes.
    TooLarge,
    /// Not data of this coding, or cut short; the output holds what decoded before the error
    /// (what a truncated stream yields).
    Corrupt,
}

/// Decompress `body` from `coding` into `out` (cleared first), at most `max` bytes of output
/// (one more is read to tell [`Inflated::TooLarge`]). For `deflate`, zlib is tried first, then
/// raw deflate.
pub fn inflate(body: &[u8], coding: Coding, max: usize, out: &mut Vec<u8>) -> Inflated {
    out.clear();
    let limit = (max as u64).saturating_add(1);
    let ok = match coding {
        Coding::Gzip => flate2::read::MultiGzDecoder::new(body).take(limit).read_to_end(out).is_ok(),
        Coding::Deflate => {
            flate2::read::ZlibDecoder::new(body).take(limit).read_to_end(out).is_ok() || {
                out.clear();
                flate2::read::DeflateDecoder::new(body).take(limit).read_to_end(out).is_ok()
            }
        }
    };
    match (ok, out.len() <= max) {
        (true, true) => Inflated::Done,
        (true, false) => Inflated::TooLarge,
        (false, _) => Inflated::Corrupt,
    }
}
