//! The lexical scanners: whitespace, string contents (eight bytes at a time in a word, or
//! sixteen with SSE2), escapes, UTF-8 sequences and numbers. Each returns the offset after
//! what it scanned or the error at the first bad byte.

use crate::{err, JsonError, F_EXP, F_FRAC, F_NEG};

#[inline(always)]
pub(crate) fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\n' | b'\r' | b'\t')
}

/// Offset of the first non-whitespace byte at or after `p`. Most calls land on a token
/// (compact JSON), so the first byte is tested on its own: anything above a space ends the run.
#[inline(always)]
pub(crate) fn skip_ws(inp: &[u8], mut p: usize) -> usize {
    loop {
        match inp.get(p) {
            Some(&b) if b <= b' ' && is_ws(b) => p += 1,
            _ => return p,
        }
    }
}

pub(crate) const LO: u64 = 0x0101_0101_0101_0101;
pub(crate) const HI: u64 = 0x8080_8080_8080_8080;

/// High bit set in the bytes of `w` that end a plain run of string contents: `"`, `\`, a
/// control character, or a non-ASCII byte. Exact for the lowest such byte (borrows can only
/// add false positives above a true one), which is all the scanner looks at.
#[inline(always)]
pub(crate) fn special_bytes(w: u64) -> u64 {
    let q = w ^ (LO * b'"' as u64);
    let b = w ^ (LO * b'\\' as u64);
    let quote = q.wrapping_sub(LO) & !q;
    let bslash = b.wrapping_sub(LO) & !b;
    let ctrl_or_high = w.wrapping_sub(LO * 0x20) | w;
    (quote | bslash | ctrl_or_high) & HI
}

/// The bytes of a sixteen-byte chunk that end a plain run of string contents (see
/// [`special_bytes`]) as `0xFF` lanes of a `u128` (little-endian: lane `i` is byte `i`), `0`
/// when there is none: `"`, `\\`, and a signed `< 0x20` (which also catches bytes `>= 0x80`),
/// or with `UTF8` an unsigned `< 0x20` (non-ASCII bytes are part of valid sequences there and
/// need no check). Portable: the compiler turns it into three SSE2 compares, but tests the
/// result through memory; [`sse2::first_special`] is used where SSE2 is there (every x86_64).
#[cfg_attr(all(target_arch = "x86_64", target_feature = "sse2", not(test)), allow(dead_code))]
#[inline(always)]
pub(crate) fn special_lanes<const UTF8: bool>(c: &[u8; 16]) -> u128 {
    let mut v = [0u8; 16];
    for (o, &b) in v.iter_mut().zip(c) {
        let ctrl = if UTF8 { b < 0x20 } else { (b as i8) < 0x20 };
        *o = if (b == b'"') | (b == b'\\') | ctrl { 0xFF } else { 0 };
    }
    u128::from_le_bytes(v)
}

/// Index (0 to 15) of the first byte of a sixteen-byte chunk that ends a plain run of string
/// contents (see [`special_lanes`]), 16 when there is none. (On x86_64 [`plain_run_with`] uses
/// [`sse2::plain_chunks`]; this is checked against the portable code in `tests`.)
#[cfg_attr(all(target_arch = "x86_64", target_feature = "sse2", not(test)), allow(dead_code))]
#[inline(always)]
pub(crate) fn first_special<const UTF8: bool>(c: &[u8; 16]) -> u32 {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    {
        sse2::first_special::<UTF8>(c)
    }
    #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
    {
        special_lanes::<UTF8>(c).trailing_zeros().min(128) / 8
    }
}

/// The one place of `unsafe` in this crate: SSE2 intrinsics (part of every x86_64 target), for
/// the sixteen-byte test of string contents and the ASCII blocks of [`crate::scan::text`] (whose
/// result is then made a `str` without a second check). The portable [`special_lanes`] compiles to the
/// same compares, but its result is tested through memory (a store and two loads per chunk);
/// here one `pmovmskb` gives a bit per byte. Checked against the
/// portable code for every byte value at every position (`tests`).
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[allow(unsafe_code)]
pub(crate) mod sse2 {
    use core::arch::x86_64::{_mm_cmpeq_epi8, _mm_cmplt_epi8, _mm_loadu_si128, _mm_min_epu8, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8};

    use core::arch::x86_64::__m128i;

    /// The bytes of the sixteen in `v` that end a plain run of string contents (see
    /// [`super::special_lanes`]), a bit each.
    #[inline(always)]
    fn special_mask<const UTF8: bool>(v: __m128i) -> u32 {
        // SAFETY: SSE2 is enabled for this target (the `cfg` of the module), so the intrinsics
        // can be called (they only compute on registers).
        unsafe {
            let quote = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8));
            let bslash = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8));
            let ctrl = if UTF8 {
                // Unsigned `< 0x20`: `min(b, 0x1F) == b`.
                _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(0x1F)), v)
            } else {
                // Signed `< 0x20`: control characters and bytes `>= 0x80`.
                _mm_cmplt_epi8(v, _mm_set1_epi8(0x20))
            };
            _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(quote, bslash), ctrl)) as u32
        }
    }

    /// See [`super::first_special`].
    #[cfg_attr(not(test), allow(dead_code))]
    #[inline(always)]
    pub(crate) fn first_special<const UTF8: bool>(c: &[u8; 16]) -> u32 {
        // SAFETY: SSE2 is enabled for this target (the `cfg` of the module), so the intrinsics
        // can be called; the load reads the sixteen bytes of `c` (no alignment required).
        let mask = special_mask::<UTF8>(unsafe { _mm_loadu_si128(c.as_ptr().cast()) });
        // Bit 16: none of the sixteen.
        (mask | 1 << 16).trailing_zeros()
    }

    /// The whole sixteen-byte chunks of [`super::plain_run_with`] from `at`: `Ok` with the
    /// offset of the first byte that ends the plain run (see [`super::special_lanes`]),
    /// `Err` with the offset where fewer than sixteen bytes are left. The test of
    /// [`first_special`], in a loop whose bound is one comparison per chunk (instead of a
    /// checked slice of sixteen bytes: an overflow test and a comparison).
    #[inline(always)]
    pub(crate) fn plain_chunks<const UTF8: bool>(inp: &[u8], mut at: usize) -> Result<usize, usize> {
        let Some(last) = inp.len().checked_sub(16) else { return Err(at) };
        while at <= last {
            // SAFETY: SSE2 is enabled for this target (the `cfg` of the module), so the
            // intrinsic can be called; `at + 16 <= inp.len()` (the loop's condition), so the
            // (unaligned) load reads sixteen bytes of `inp`.
            let mask = special_mask::<UTF8>(unsafe { _mm_loadu_si128(inp.as_ptr().add(at).cast()) });
            if mask != 0 {
                return Ok(at + mask.trailing_zeros() as usize);
            }
            at += 16;
        }
        Err(at)
    }

    /// See [`super::scan::text`]: blocks of 128 ASCII bytes skipped, the rest (from the first
    /// block holding a non-ASCII byte, or the last bytes) checked by the standard library. Not
    /// inlined: a loop of its own, not a part of the caller's register allocation.
    #[inline(never)]
    pub(crate) fn text(inp: &[u8]) -> Option<&str> {
        let mut i = 0;
        for c in inp.chunks_exact(128) {
            // SAFETY: SSE2 is enabled for this target (the `cfg` of the module), so the
            // intrinsics can be called; each load reads sixteen of the 128 bytes of `c` (no
            // alignment required).
            let high = unsafe {
                let l = |k: usize| _mm_loadu_si128(c[16 * k..].as_ptr().cast());
                let a = _mm_or_si128(_mm_or_si128(l(0), l(1)), _mm_or_si128(l(2), l(3)));
                let b = _mm_or_si128(_mm_or_si128(l(4), l(5)), _mm_or_si128(l(6), l(7)));
                _mm_movemask_epi8(_mm_or_si128(a, b))
            };
            if high != 0 {
                break;
            }
            i += 128;
        }
        std::str::from_utf8(inp.get(i..)?).ok()?;
        // SAFETY: `inp[..i]` is ASCII (every byte's high bit clear, above), so `i` is a char
        // boundary, and `inp[i..]` is UTF-8 (checked): `inp` is UTF-8.
        Some(unsafe { std::str::from_utf8_unchecked(inp) })
    }
}

/// High bit set in the bytes of `w` that are `"`, `\\` or a control character (exact for the
/// lowest such byte, as [`special_bytes`]; bytes `>= 0x80` are not flagged).
#[inline(always)]
pub(crate) fn special_bytes_utf8(w: u64) -> u64 {
    let q = w ^ (LO * b'"' as u64);
    let b = w ^ (LO * b'\\' as u64);
    let quote = q.wrapping_sub(LO) & !q;
    let bslash = b.wrapping_sub(LO) & !b;
    // A byte `< 0x20`: subtracting 0x20 borrows, and its high bit was clear.
    let ctrl = w.wrapping_sub(LO * 0x20) & !w;
    (quote | bslash | ctrl) & HI
}

/// Offset of the first byte at or after `p` that ends a plain run of string contents (see
/// [`special_bytes`]), or a position within the last seven bytes of `inp` from which the
/// caller goes on byte by byte. With `UTF8` the text is known to be UTF-8: non-ASCII bytes do
/// not end the run (there is nothing to validate), so prose in any script is scanned sixteen
/// bytes at a time too.
#[inline(always)]
pub(crate) fn plain_run_with<const UTF8: bool>(inp: &[u8], p: usize) -> usize {
    // Whole sixteen-byte chunks (one vector test each), then at most one word.
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    let mut at = match sse2::plain_chunks::<UTF8>(inp, p) {
        Ok(i) => return i,
        Err(at) => at,
    };
    #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
    let mut at = p;
    #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
    while let Some(c) = inp.get(at..at + 16) {
        let c: &[u8; 16] = c.try_into().unwrap_or(&[0; 16]);
        let i = first_special::<UTF8>(c);
        if i < 16 {
            return at + i as usize;
        }
        at += 16;
    }
    if let Some(rest) = inp.get(at..at + 8) {
        let w = u64::from_le_bytes([rest[0], rest[1], rest[2], rest[3], rest[4], rest[5], rest[6], rest[7]]);
        let m = if UTF8 { special_bytes_utf8(w) } else { special_bytes(w) };
        if m != 0 {
            return at + (m.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    at
}

/// Scan the number starting at `start`; returns the offset after it and its flags.
#[inline(always)]
pub(crate) fn number_end(inp: &[u8], start: usize) -> Result<(usize, u8), JsonError> {
    let mut p = start;
    let mut flags = 0;
    if inp[p] == b'-' {
        flags |= F_NEG;
        p += 1;
    }
    match inp.get(p) {
        Some(b'0') => {
            p += 1;
            if matches!(inp.get(p), Some(b'0'..=b'9')) {
                return err(p, "leading zeros are not allowed");
            }
        }
        Some(b'1'..=b'9') => {
            p += 1;
            while matches!(inp.get(p), Some(b'0'..=b'9')) {
                p += 1;
            }
        }
        _ => return err(p, "expected a digit"),
    }
    if inp.get(p) == Some(&b'.') {
        flags |= F_FRAC;
        p += 1;
        if !matches!(inp.get(p), Some(b'0'..=b'9')) {
            return err(p, "expected a digit after the decimal point");
        }
        while matches!(inp.get(p), Some(b'0'..=b'9')) {
            p += 1;
        }
    }
    if matches!(inp.get(p), Some(b'e' | b'E')) {
        flags |= F_EXP;
        p += 1;
        if matches!(inp.get(p), Some(b'+' | b'-')) {
            p += 1;
        }
        if !matches!(inp.get(p), Some(b'0'..=b'9')) {
            return err(p, "expected a digit in the exponent");
        }
        while matches!(inp.get(p), Some(b'0'..=b'9')) {
            p += 1;
        }
    }
    Ok((p, flags))
}

/// The text between the quotes at `q` and `end` of `text`.
///
/// # Safety
/// The bytes at `q` and `end` are ASCII and `q < end` (then `q + 1` and `end` are char
/// boundaries within `text`).
#[allow(unsafe_code)]
#[inline(always)]
pub(crate) unsafe fn between_quotes(text: &str, q: usize, end: usize) -> &str {
    debug_assert!(q < end && text.as_bytes()[q].is_ascii() && text.as_bytes()[end].is_ascii());
    // SAFETY: see the function's contract.
    unsafe { text.get_unchecked(q + 1..end) }
}

/// Scan the string whose opening quote is at `q`; returns the offset of the closing quote and
/// whether the contents hold an escape.
#[inline(always)]
pub(crate) fn string_end(inp: &[u8], q: usize) -> Result<(usize, bool), JsonError> {
    string_end_with::<false>(inp, q)
}

/// [`string_end`] in text known to be UTF-8 (a `&str`): the same result, without checking
/// the UTF-8 of the contents again (`"`, `\\` and control characters are ASCII, so they never
/// occur inside a multi-byte sequence, and every sequence of a `&str` is valid).
#[inline(always)]
pub(crate) fn string_end_utf8(text: &str, q: usize) -> Result<(usize, bool), JsonError> {
    string_end_with::<true>(text.as_bytes(), q)
}

/// [`string_end`] (`UTF8 = false`: non-ASCII sequences checked) or [`string_end_utf8`]
/// (`UTF8 = true`: `inp` is known to be UTF-8).
#[inline(always)]
pub(crate) fn string_end_with<const UTF8: bool>(inp: &[u8], q: usize) -> Result<(usize, bool), JsonError> {
    let mut p = q + 1;
    let mut escaped = false;
    loop {
        // Plain runs are scanned sixteen bytes at a time (one pass: the quote, the
        // backslash, control characters and, unless the text is known UTF-8, non-ASCII bytes
        // are found together); the last few bytes of the input byte by byte below.
        p = plain_run_with::<UTF8>(inp, p);
        let Some(&b) = inp.get(p) else {
            return err(inp.len(), "unterminated string");
        };
        match b {
            b'"' => return Ok((p, escaped)),
            b'\\' => {
                escaped = true;
                p = escape(inp, p)?;
            }
            0..=0x1F => return err(p, "control character in string"),
            0x20..=0x7F => p += 1,
            _ if UTF8 => p += 1,
            _ => p = utf8_char(inp, p)?,
        }
    }
}

/// An escape at `p` (the backslash); returns the offset after it.
pub(crate) fn escape(inp: &[u8], p: usize) -> Result<usize, JsonError> {
    match inp.get(p + 1) {
        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => Ok(p + 2),
        Some(b'u') => {
            let hi = hex4(inp, p + 2).ok_or(JsonError { offset: p, message: "invalid \\u escape" })?;
            if (0xDC00..0xE000).contains(&hi) {
                return err(p, "lone low surrogate in \\u escape");
            }
            if (0xD800..0xDC00).contains(&hi) {
                if inp.get(p + 6) != Some(&b'\\') || inp.get(p + 7) != Some(&b'u') {
                    return err(p, "lone high surrogate in \\u escape");
                }
                let lo = hex4(inp, p + 8).ok_or(JsonError { offset: p + 6, message: "invalid \\u escape" })?;
                if !(0xDC00..0xE000).contains(&lo) {
                    return err(p, "lone high surrogate in \\u escape");
                }
                return Ok(p + 12);
            }
            Ok(p + 6)
        }
        None => err(p, "unterminated string"),
        _ => err(p, "invalid escape"),
    }
}

pub(crate) fn hex4(inp: &[u8], p: usize) -> Option<u32> {
    let s = inp.get(p..p + 4)?;
    let mut v = 0u32;
    for &b in s {
        let d = match b {
            b'0'..=b'9' => b - b'0',
            b'a'..=b'f' => b - b'a' + 10,
            b'A'..=b'F' => b - b'A' + 10,
            _ => return None,
        };
        v = v << 4 | d as u32;
    }
    Some(v)
}

/// Validate one UTF-8 encoded character (not ASCII) at `p`; returns the offset after it.
pub(crate) fn utf8_char(inp: &[u8], p: usize) -> Result<usize, JsonError> {
    let b0 = inp[p];
    let (len, min) = match b0 {
        0xC2..=0xDF => (2, 0x80),
        0xE0..=0xEF => (3, 0x800),
        0xF0..=0xF4 => (4, 0x10000),
        _ => return err(p, "invalid UTF-8 in string"),
    };
    let Some(s) = inp.get(p..p + len) else {
        return err(p, "invalid UTF-8 in string");
    };
    let mut c = (b0 as u32) & (0x7F >> len);
    for &b in &s[1..] {
        if b & 0xC0 != 0x80 {
            return err(p, "invalid UTF-8 in string");
        }
        c = c << 6 | (b & 0x3F) as u32;
    }
    if c < min || c > 0x10FFFF || (0xD800..0xE000).contains(&c) {
        return err(p, "invalid UTF-8 in string");
    }
    Ok(p + len)
}
