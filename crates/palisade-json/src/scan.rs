//! Building blocks for one-pass readers that validate while they scan, without a tape (the
//! fused validator of `palisade-schema`). They accept exactly what [`parse_into`](crate::parse_into) accepts:
//! same string, number and literal rules, same depth and token accounting.

use crate::lex;
use crate::{err, JsonError, Limits};

/// `inp` as text when it is UTF-8: the same answer as `std::str::from_utf8(inp).ok()`,
/// with the ASCII bytes before the first non-ASCII one checked 128 at a time (SSE2, where
/// there: eight loads, seven `por` and one `pmovmskb` per block).
#[inline]
pub fn text(inp: &[u8]) -> Option<&str> {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    {
        lex::sse2::text(inp)
    }
    #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
    {
        std::str::from_utf8(inp).ok()
    }
}

/// Offset of the first non-whitespace byte at or after `p`.
#[inline(always)]
pub fn skip_ws(inp: &[u8], p: usize) -> usize {
    lex::skip_ws(inp, p)
}

/// The string whose opening quote is at `q`: the offset of its closing quote, and whether
/// its contents hold a backslash escape. Contents are checked (UTF-8, escapes, control
/// characters) as by [`crate::parse_into`].
#[inline(always)]
pub fn string(inp: &[u8], q: usize) -> Result<(usize, bool), JsonError> {
    lex::string_end(inp, q)
}

/// [`string`] in a document known to be UTF-8 (a `&str`, whose UTF-8 was checked once as a
/// whole): the same result and errors (invalid UTF-8, the one error it skips, cannot occur
/// there), with non-ASCII contents scanned at the speed of ASCII.
#[inline(always)]
pub fn string_in_text(text: &str, q: usize) -> Result<(usize, bool), JsonError> {
    lex::string_end_utf8(text, q)
}

/// [`string_in_text`] with the string's contents (between its quotes, still escaped when
/// it holds an escape) borrowed from `text` without checking char boundaries again (both
/// quotes are ASCII): `(contents, offset of the closing quote, escaped)`. An error too when
/// the byte at `q` is not `"`.
#[inline(always)]
pub fn string_in_text_contents(text: &str, q: usize) -> Result<(&str, usize, bool), JsonError> {
    if text.as_bytes().get(q) != Some(&b'"') {
        return err(q, "expected a string");
    }
    let (end, escaped) = lex::string_end_utf8(text, q)?;
    // SAFETY: the byte at `q` is `"` (tested above), and `string_end_utf8` is `Ok` only at a
    // `"` after `q`: both ASCII, in order.
    #[allow(unsafe_code)]
    let contents = unsafe { lex::between_quotes(text, q, end) };
    Ok((contents, end, escaped))
}

/// The number starting at `start` (`-` or a digit): the offset after it, and whether it is
/// written as an integer (no fraction, no exponent).
#[inline(always)]
pub fn number(inp: &[u8], start: usize) -> Result<(usize, bool), JsonError> {
    let (end, flags) = lex::number_end(inp, start)?;
    Ok((end, flags & (crate::F_FRAC | crate::F_EXP) == 0))
}

/// Append the unescaped value of string contents (between the quotes, as checked by
/// [`string`]) to `out`.
pub fn unescape_into(raw: &[u8], out: &mut Vec<u8>) {
    crate::value::unescape_into(raw, out)
}

/// The literal `true`, `false` or `null` at `p`: the offset after it.
#[inline(always)]
pub fn literal(inp: &[u8], p: usize) -> Result<usize, JsonError> {
    // Four bytes compared as one word (`false`: the four after its `f`).
    let word = |at: usize| inp.get(at..at + 4).map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]));
    let (ok, len) = match inp[p] {
        b't' => (word(p) == Some(u32::from_le_bytes(*b"true")), 4),
        b'f' => (word(p + 1) == Some(u32::from_le_bytes(*b"alse")), 5),
        _ => (word(p) == Some(u32::from_le_bytes(*b"null")), 4),
    };
    if ok {
        Ok(p + len)
    } else {
        err(p, "invalid literal")
    }
}

/// Skip one value at `p` (after whitespace), checking its syntax; returns the offset after
/// it. `depth` is the number of containers already open around it and `tokens` the
/// tokens counted so far (both as [`crate::parse_into`] counts them, against `limits`).
/// Iterative: a bit stack of at most 128 levels (deeper limits are capped there).
pub fn skip_value(inp: &[u8], mut p: usize, depth: u32, tokens: &mut usize, limits: &Limits) -> Result<usize, JsonError> {
    let max_depth = limits.max_depth.min(depth + 128);
    // Bit i: level i (counted from this value) is an object.
    let mut stack: u128 = 0;
    let mut level: u32 = 0;
    'value: loop {
        if p >= inp.len() {
            return err(p, "unexpected end of input, expected a value");
        }
        *tokens += 1;
        if *tokens > limits.max_tokens {
            return err(p, "too many tokens");
        }
        match inp[p] {
            b'"' => p = string(inp, p)?.0 + 1,
            b'{' | b'[' => {
                let object = inp[p] == b'{';
                if depth + level >= max_depth {
                    return err(p, "nesting too deep");
                }
                if object {
                    stack |= 1 << level;
                } else {
                    stack &= !(1 << level);
                }
                level += 1;
                p = skip_ws(inp, p + 1);
                let close = if object { b'}' } else { b']' };
                if p < inp.len() && inp[p] == close {
                    level -= 1;
                    p += 1;
                } else {
                    if object {
                        p = key(inp, p, tokens, limits)?;
                    }
                    continue 'value;
                }
            }
            b'-' | b'0'..=b'9' => p = number(inp, p)?.0,
            b't' | b'f' | b'n' => p = literal(inp, p)?,
            _ => return err(p, "expected a value"),
        }
        loop {
            if level == 0 {
                return Ok(p);
            }
            p = skip_ws(inp, p);
            let object = stack & (1 << (level - 1)) != 0;
            if p >= inp.len() {
                return err(p, if object { "unexpected end of input in an object" } else { "unexpected end of input in an array" });
            }
            match inp[p] {
                b',' => {
                    p = skip_ws(inp, p + 1);
                    if object {
                        p = key(inp, p, tokens, limits)?;
                    }
                    continue 'value;
                }
                b'}' if object => {}
                b']' if !object => {}
                _ => return err(p, if object { "expected ',' or '}'" } else { "expected ',' or ']'" }),
            }
            level -= 1;
            p += 1;
        }
    }
}

/// An object key at `p`, then `:`; returns the offset of the value (after whitespace).
#[inline(always)]
pub fn key(inp: &[u8], p: usize, tokens: &mut usize, limits: &Limits) -> Result<usize, JsonError> {
    if p >= inp.len() || inp[p] != b'"' {
        return err(p, "expected a string key");
    }
    *tokens += 1;
    if *tokens > limits.max_tokens {
        return err(p, "too many tokens");
    }
    let end = string(inp, p)?.0;
    colon(inp, end + 1)
}

/// `:` (after whitespace) at or after `p`; returns the offset of the value after it.
#[inline(always)]
pub fn colon(inp: &[u8], p: usize) -> Result<usize, JsonError> {
    let p = skip_ws(inp, p);
    if p >= inp.len() || inp[p] != b':' {
        return err(p, "expected ':'");
    }
    Ok(skip_ws(inp, p + 1))
}
