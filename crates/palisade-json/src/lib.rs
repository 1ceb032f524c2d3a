//! A strict JSON parser (RFC 8259) that writes a flat tape of tokens into a reusable buffer:
//! no allocation per value, strings and numbers kept as byte spans of the input and decoded
//! only when asked. Shared by OpenAPI validation and attack detection, so that one parse
//! serves both. Bounded: nesting depth and token count are limits, never recursion.
//!
//! API contract (the implementation may add to it, not change it):
//! - [`Limits`], [`Tape`] (reusable; `Tape::default()`), [`parse_into`].
//! - [`Tape::root`] gives a [`ValueRef`] to walk the document: `kind()`, `as_str()` (unescaped,
//!   `Cow`), `raw()` (the span of the input), `number_text()`, `as_i64()`, `as_f64()`,
//!   `members()` (object: key/value pairs in document order), `items()` (array), `len()`.
//!
//! Implementation notes:
//! - The tape does not own the input: [`Tape::root`] takes the same bytes that were parsed
//!   (it panics if their length differs, which catches most misuse). Spans are `u32`, so an
//!   input is at most 4 GiB - 1.
//! - Tokens are laid out in document order. An object is followed by its members as
//!   `key, value, key, value...`; an array by its items. Every container token records the
//!   index of the token after its subtree (skip in O(1)) and its child count.
//! - Strings are scanned sixteen bytes at a time (SSE2 compares and one `pmovmskb` on x86_64,
//!   `unsafe` in module `sse2`; elsewhere one lane-wise test that compilers vectorise; one word
//!   at the end of input) for `"`, `\`, control
//!   characters and non-ASCII bytes; non-ASCII sequences are validated as UTF-8 in place; escapes are
//!   validated at parse time (including surrogate pairs) and decoded only by
//!   [`ValueRef::as_str`].
//! - [`scan::text`] (a whole body as `str`, for the streaming walk of attack detection) skips
//!   ASCII 128 bytes at a time with SSE2 and leaves the rest to `std::str::from_utf8`; this and
//!   the string test are the crate's only `unsafe` (module `sse2`), with the contents of a
//!   scanned string sliced without a second boundary check ([`scan::string_in_text_contents`]).
#![deny(unsafe_code)]

use std::borrow::Cow;

/// Bounds on what one parse may consume.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Maximum nesting of arrays and objects.
    pub max_depth: u32,
    /// Maximum number of tokens (values and keys) in the document.
    pub max_tokens: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_depth: 128, max_tokens: 1 << 20 }
    }
}

/// What a token is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Null,
    Bool,
    Number,
    String,
    Array,
    Object,
}

/// Token flags.
const F_TRUE: u8 = 1; // Bool: the value is `true`
const F_ESCAPED: u8 = 2; // String: contains at least one backslash escape
const F_FRAC: u8 = 4; // Number: has a fraction part
const F_EXP: u8 = 8; // Number: has an exponent part
const F_NEG: u8 = 16; // Number: starts with '-'

/// One token of the tape. Strings span their contents (without quotes); numbers and literals
/// their text; containers from the opening to one past the closing bracket.
#[derive(Clone, Copy, Debug)]
struct Token {
    start: u32,
    end: u32,
    /// Containers: index of the first token after the subtree.
    next: u32,
    /// Containers: number of members (objects) or items (arrays).
    count: u32,
    kind: Kind,
    flags: u8,
}

#[derive(Clone, Copy, Debug)]
struct Frame {
    token: u32,
    count: u32,
    object: bool,
}

/// A parsed document: tokens over the input bytes. Keep one per worker and reuse it.
#[derive(Debug, Default)]
pub struct Tape {
    tokens: Vec<Token>,
    stack: Vec<Frame>,
    input_len: usize,
}

/// Why a document is not acceptable JSON, and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JsonError {
    /// Byte offset in the input.
    pub offset: usize,
    pub message: &'static str,
}

impl std::fmt::Display for JsonError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} at byte {}", self.message, self.offset)
    }
}

impl std::error::Error for JsonError {}

#[inline]
fn err<T>(offset: usize, message: &'static str) -> Result<T, JsonError> {
    Err(JsonError { offset, message })
}

/// Parse `input` (one JSON text; surrounding whitespace allowed, a UTF-8 BOM is an error,
/// trailing garbage is an error) into `tape`, replacing what it held.
pub fn parse_into(input: &[u8], tape: &mut Tape, limits: &Limits) -> Result<(), JsonError> {
    tape.tokens.clear();
    tape.stack.clear();
    tape.input_len = input.len();
    let r = Parser { input, tape, limits }.run();
    if r.is_err() {
        tape.tokens.clear();
        tape.stack.clear();
    }
    r
}

struct Parser<'a, 't> {
    input: &'a [u8],
    tape: &'t mut Tape,
    limits: &'t Limits,
}

#[inline(always)]
fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\n' | b'\r' | b'\t')
}

/// Offset of the first non-whitespace byte at or after `p`. Most calls land on a token
/// (compact JSON), so the first byte is tested on its own: anything above a space ends the run.
#[inline(always)]
fn skip_ws(inp: &[u8], mut p: usize) -> usize {
    loop {
        match inp.get(p) {
            Some(&b) if b <= b' ' && is_ws(b) => p += 1,
            _ => return p,
        }
    }
}

const LO: u64 = 0x0101_0101_0101_0101;
const HI: u64 = 0x8080_8080_8080_8080;

/// High bit set in the bytes of `w` that end a plain run of string contents: `"`, `\`, a
/// control character, or a non-ASCII byte. Exact for the lowest such byte (borrows can only
/// add false positives above a true one), which is all the scanner looks at.
#[inline(always)]
fn special_bytes(w: u64) -> u64 {
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
fn special_lanes<const UTF8: bool>(c: &[u8; 16]) -> u128 {
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
fn first_special<const UTF8: bool>(c: &[u8; 16]) -> u32 {
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
/// the sixteen-byte test of string contents and the ASCII blocks of [`scan::text`] (whose
/// result is then made a `str` without a second check). The portable [`special_lanes`] compiles to the
/// same compares, but its result is tested through memory (a store and two loads per chunk);
/// here one `pmovmskb` gives a bit per byte. Checked against the
/// portable code for every byte value at every position (`tests`).
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[allow(unsafe_code)]
mod sse2 {
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
    pub(super) fn first_special<const UTF8: bool>(c: &[u8; 16]) -> u32 {
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
    pub(super) fn plain_chunks<const UTF8: bool>(inp: &[u8], mut at: usize) -> Result<usize, usize> {
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
    pub(super) fn text(inp: &[u8]) -> Option<&str> {
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
fn special_bytes_utf8(w: u64) -> u64 {
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
fn plain_run_with<const UTF8: bool>(inp: &[u8], p: usize) -> usize {
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

impl Parser<'_, '_> {
    #[inline(always)]
    fn skip_ws(&self, p: usize) -> usize {
        skip_ws(self.input, p)
    }

    #[inline(always)]
    fn push(&mut self, tok: Token, at: usize) -> Result<u32, JsonError> {
        let idx = self.tape.tokens.len();
        if idx >= self.limits.max_tokens {
            return err(at, "too many tokens");
        }
        self.tape.tokens.push(tok);
        Ok(idx as u32)
    }

    fn run(mut self) -> Result<(), JsonError> {
        let inp = self.input;
        if inp.len() > u32::MAX as usize - 1 {
            return err(0, "document too large");
        }
        if inp.starts_with(&[0xEF, 0xBB, 0xBF]) {
            return err(0, "byte order mark is not allowed");
        }
        let mut p = self.skip_ws(0);
        'value: loop {
            // Parse one value at `p`.
            if p >= inp.len() {
                return err(p, "unexpected end of input, expected a value");
            }
            match inp[p] {
                b'"' => {
                    p = self.string(p)?;
                }
                b'{' | b'[' => {
                    let object = inp[p] == b'{';
                    if self.tape.stack.len() as u32 >= self.limits.max_depth {
                        return err(p, "nesting too deep");
                    }
                    let kind = if object { Kind::Object } else { Kind::Array };
                    let token = self.push(Token { start: p as u32, end: 0, next: 0, count: 0, kind, flags: 0 }, p)?;
                    self.tape.stack.push(Frame { token, count: 0, object });
                    p = self.skip_ws(p + 1);
                    let close = if object { b'}' } else { b']' };
                    if p < inp.len() && inp[p] == close {
                        // Empty container: fall through to the closing logic below.
                    } else if object {
                        p = self.key(p)?;
                        continue 'value;
                    } else {
                        continue 'value;
                    }
                    // Empty: close it right away (handled as "after value" with the closer).
                    let f = self.tape.stack.pop().unwrap();
                    p += 1;
                    let n = self.tape.tokens.len() as u32;
                    let t = &mut self.tape.tokens[f.token as usize];
                    t.end = p as u32;
                    t.next = n;
                    t.count = 0;
                }
                b'-' | b'0'..=b'9' => {
                    p = self.number(p)?;
                }
                b't' => p = self.literal(p, b"true", Kind::Bool, F_TRUE)?,
                b'f' => p = self.literal(p, b"false", Kind::Bool, 0)?,
                b'n' => p = self.literal(p, b"null", Kind::Null, 0)?,
                _ => return err(p, "expected a value"),
            }
            // After a value: a separator, a closer, or the end.
            loop {
                p = self.skip_ws(p);
                let Some(top) = self.tape.stack.last_mut() else {
                    if p != inp.len() {
                        return err(p, "trailing characters after the document");
                    }
                    return Ok(());
                };
                if p >= inp.len() {
                    return err(p, if top.object { "unexpected end of input in an object" } else { "unexpected end of input in an array" });
                }
                top.count += 1;
                let b = inp[p];
                if b == b',' {
                    let object = top.object;
                    p = self.skip_ws(p + 1);
                    if object {
                        p = self.key(p)?;
                    }
                    continue 'value;
                }
                let close = if top.object { b'}' } else { b']' };
                if b != close {
                    return err(p, if top.object { "expected ',' or '}'" } else { "expected ',' or ']'" });
                }
                let f = *top;
                self.tape.stack.pop();
                p += 1;
                let n = self.tape.tokens.len() as u32;
                let t = &mut self.tape.tokens[f.token as usize];
                t.end = p as u32;
                t.next = n;
                t.count = f.count;
            }
        }
    }

    /// An object key at `p` (after whitespace), then `:` and whitespace; returns the offset of the value.
    #[inline(always)]
    fn key(&mut self, p: usize) -> Result<usize, JsonError> {
        let inp = self.input;
        if p >= inp.len() || inp[p] != b'"' {
            return err(p, "expected a string key");
        }
        let after = self.string(p)?;
        let mut p = self.skip_ws(after);
        if p >= inp.len() || inp[p] != b':' {
            return err(p, "expected ':'");
        }
        p = self.skip_ws(p + 1);
        Ok(p)
    }

    fn literal(&mut self, p: usize, word: &[u8], kind: Kind, flags: u8) -> Result<usize, JsonError> {
        if !self.input[p..].starts_with(word) {
            return err(p, "invalid literal");
        }
        let end = p + word.len();
        self.push(Token { start: p as u32, end: end as u32, next: 0, count: 0, kind, flags }, p)?;
        Ok(end)
    }

    fn number(&mut self, start: usize) -> Result<usize, JsonError> {
        let (p, flags) = number_end(self.input, start)?;
        self.push(Token { start: start as u32, end: p as u32, next: 0, count: 0, kind: Kind::Number, flags }, start)?;
        Ok(p)
    }

    /// A string whose opening quote is at `q`; returns the offset after the closing quote.
    fn string(&mut self, q: usize) -> Result<usize, JsonError> {
        let (end, escaped) = string_end(self.input, q)?;
        let flags = if escaped { F_ESCAPED } else { 0 };
        self.push(Token { start: q as u32 + 1, end: end as u32, next: 0, count: 0, kind: Kind::String, flags }, q)?;
        Ok(end + 1)
    }
}

/// Scan the number starting at `start`; returns the offset after it and its flags.
#[inline(always)]
fn number_end(inp: &[u8], start: usize) -> Result<(usize, u8), JsonError> {
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
unsafe fn between_quotes(text: &str, q: usize, end: usize) -> &str {
    debug_assert!(q < end && text.as_bytes()[q].is_ascii() && text.as_bytes()[end].is_ascii());
    // SAFETY: see the function's contract.
    unsafe { text.get_unchecked(q + 1..end) }
}

/// Scan the string whose opening quote is at `q`; returns the offset of the closing quote and
/// whether the contents hold an escape.
#[inline(always)]
fn string_end(inp: &[u8], q: usize) -> Result<(usize, bool), JsonError> {
    string_end_with::<false>(inp, q)
}

/// [`string_end`] in text known to be UTF-8 (a `&str`): the same result, without checking
/// the UTF-8 of the contents again (`"`, `\\` and control characters are ASCII, so they never
/// occur inside a multi-byte sequence, and every sequence of a `&str` is valid).
#[inline(always)]
fn string_end_utf8(text: &str, q: usize) -> Result<(usize, bool), JsonError> {
    string_end_with::<true>(text.as_bytes(), q)
}

/// [`string_end`] (`UTF8 = false`: non-ASCII sequences checked) or [`string_end_utf8`]
/// (`UTF8 = true`: `inp` is known to be UTF-8).
#[inline(always)]
fn string_end_with<const UTF8: bool>(inp: &[u8], q: usize) -> Result<(usize, bool), JsonError> {
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
fn escape(inp: &[u8], p: usize) -> Result<usize, JsonError> {
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

fn hex4(inp: &[u8], p: usize) -> Option<u32> {
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
fn utf8_char(inp: &[u8], p: usize) -> Result<usize, JsonError> {
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

impl Tape {
    /// The document's root value. `input` must be the bytes that were parsed into this tape.
    ///
    /// # Panics
    /// If the tape is empty (the last parse failed or there was none) or `input` has another
    /// length than the parsed input.
    pub fn root<'t>(&'t self, input: &'t [u8]) -> ValueRef<'t> {
        assert!(!self.tokens.is_empty(), "palisade-json: no document on the tape");
        assert_eq!(input.len(), self.input_len, "palisade-json: Tape::root called with other bytes than were parsed");
        ValueRef { tape: self, input, idx: 0 }
    }

    /// Number of tokens (values and keys) of the parsed document.
    #[inline]
    pub fn token_count(&self) -> usize {
        self.tokens.len()
    }

    /// The value at token index `idx` (as given by [`ValueRef::index`]).
    #[inline]
    pub fn get<'t>(&'t self, input: &'t [u8], idx: u32) -> ValueRef<'t> {
        assert!((idx as usize) < self.tokens.len());
        assert_eq!(input.len(), self.input_len);
        ValueRef { tape: self, input, idx }
    }
}

/// A value (or object key) on a tape.
#[derive(Clone, Copy)]
pub struct ValueRef<'t> {
    tape: &'t Tape,
    input: &'t [u8],
    idx: u32,
}

impl std::fmt::Debug for ValueRef<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let raw = self.raw();
        let shown = &raw[..raw.len().min(64)];
        write!(f, "ValueRef({:?} #{} {:?})", self.kind(), self.idx, String::from_utf8_lossy(shown))
    }
}

impl<'t> ValueRef<'t> {
    #[inline(always)]
    fn tok(&self) -> &'t Token {
        &self.tape.tokens[self.idx as usize]
    }

    #[inline]
    pub fn kind(&self) -> Kind {
        self.tok().kind
    }

    /// Index of this token on the tape (stable for the life of the parse).
    #[inline]
    pub fn index(&self) -> u32 {
        self.idx
    }

    /// Index of the first token after this value's subtree.
    #[inline]
    pub fn next_index(&self) -> u32 {
        let t = self.tok();
        match t.kind {
            Kind::Array | Kind::Object => t.next,
            _ => self.idx + 1,
        }
    }

    /// The span of the input: string contents without the quotes (still escaped), number and
    /// literal text, containers from bracket to bracket.
    #[inline]
    pub fn raw(&self) -> &'t [u8] {
        let t = self.tok();
        &self.input[t.start as usize..t.end as usize]
    }

    /// Byte offset of the value in the input (for strings, of the first content byte).
    #[inline]
    pub fn offset(&self) -> usize {
        self.tok().start as usize
    }

    /// Whether this string contains backslash escapes (when not, `raw()` is its UTF-8 text).
    #[inline]
    pub fn has_escapes(&self) -> bool {
        self.tok().flags & F_ESCAPED != 0
    }

    /// The string's value, unescaped (borrowed when there is no escape). `None` if not a string.
    pub fn as_str(&self) -> Option<Cow<'t, str>> {
        let t = self.tok();
        if t.kind != Kind::String {
            return None;
        }
        let raw = self.raw();
        if t.flags & F_ESCAPED == 0 {
            // Validated at parse time; this cannot fail.
            return std::str::from_utf8(raw).ok().map(Cow::Borrowed);
        }
        Some(Cow::Owned(unescape(raw)))
    }

    #[inline]
    pub fn as_bool(&self) -> Option<bool> {
        let t = self.tok();
        (t.kind == Kind::Bool).then_some(t.flags & F_TRUE != 0)
    }

    #[inline]
    pub fn is_null(&self) -> bool {
        self.tok().kind == Kind::Null
    }

    /// The number's text as written (`-1.5e3`). `None` if not a number.
    #[inline]
    pub fn number_text(&self) -> Option<&'t str> {
        if self.tok().kind != Kind::Number {
            return None;
        }
        std::str::from_utf8(self.raw()).ok()
    }

    /// Whether the number is written without fraction and exponent.
    #[inline]
    pub fn is_integer_text(&self) -> bool {
        let t = self.tok();
        t.kind == Kind::Number && t.flags & (F_FRAC | F_EXP) == 0
    }

    /// The number as an `i64`, when written as an integer (no fraction, no exponent) that fits.
    pub fn as_i64(&self) -> Option<i64> {
        if !self.is_integer_text() {
            return None;
        }
        self.number_text()?.parse().ok()
    }

    /// The number as the nearest `f64` (infinite when beyond its range).
    pub fn as_f64(&self) -> Option<f64> {
        self.number_text()?.parse().ok()
    }

    /// Members (objects) or items (arrays); 0 for scalars.
    #[inline]
    pub fn len(&self) -> usize {
        let t = self.tok();
        match t.kind {
            Kind::Array | Kind::Object => t.count as usize,
            _ => 0,
        }
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Object members as `(key, value)` in document order; keys are string values. Empty for
    /// non-objects.
    #[inline]
    pub fn members(&self) -> Members<'t> {
        let t = self.tok();
        let (cur, end) = if t.kind == Kind::Object { (self.idx + 1, t.next) } else { (0, 0) };
        Members { tape: self.tape, input: self.input, cur, end }
    }

    /// Array items in order. Empty for non-arrays.
    #[inline]
    pub fn items(&self) -> Items<'t> {
        let t = self.tok();
        let (cur, end) = if t.kind == Kind::Array { (self.idx + 1, t.next) } else { (0, 0) };
        Items { tape: self.tape, input: self.input, cur, end }
    }

    /// Member `name` of an object (the first one with that unescaped key).
    #[inline]
    pub fn get(&self, name: &str) -> Option<ValueRef<'t>> {
        self.members().find(|(k, _)| k.str_eq(name)).map(|(_, v)| v)
    }

    /// Whether this string's value equals `s` (without allocating when there is no escape).
    #[inline]
    pub fn str_eq(&self, s: &str) -> bool {
        let t = self.tok();
        if t.kind != Kind::String {
            return false;
        }
        if t.flags & F_ESCAPED == 0 {
            self.raw() == s.as_bytes()
        } else {
            self.as_str().is_some_and(|v| v == s)
        }
    }
}

/// Iterator over an object's members.
#[derive(Clone, Debug)]
pub struct Members<'t> {
    tape: &'t Tape,
    input: &'t [u8],
    cur: u32,
    end: u32,
}

impl<'t> Iterator for Members<'t> {
    type Item = (ValueRef<'t>, ValueRef<'t>);
    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.cur >= self.end {
            return None;
        }
        let key = ValueRef { tape: self.tape, input: self.input, idx: self.cur };
        let value = ValueRef { tape: self.tape, input: self.input, idx: self.cur + 1 };
        self.cur = value.next_index();
        Some((key, value))
    }
}

/// Iterator over an array's items.
#[derive(Clone, Debug)]
pub struct Items<'t> {
    tape: &'t Tape,
    input: &'t [u8],
    cur: u32,
    end: u32,
}

impl<'t> Iterator for Items<'t> {
    type Item = ValueRef<'t>;
    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.cur >= self.end {
            return None;
        }
        let v = ValueRef { tape: self.tape, input: self.input, idx: self.cur };
        self.cur = v.next_index();
        Some(v)
    }
}

/// Decode the escapes of validated string contents.
fn unescape(raw: &[u8]) -> String {
    let mut out = Vec::with_capacity(raw.len());
    unescape_into(raw, &mut out);
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// Append the decoded contents of validated string contents `raw` to `out`: the plain runs
/// between escapes copied whole (not byte by byte).
fn unescape_into(raw: &[u8], out: &mut Vec<u8>) {
    let mut i = 0;
    while i < raw.len() {
        let run = raw.get(i..).and_then(|r| r.iter().position(|&b| b == b'\\')).map_or(raw.len(), |k| i + k);
        out.extend_from_slice(raw.get(i..run).unwrap_or_default());
        i = run;
        if i >= raw.len() {
            break;
        }
        i = unescape_one(raw, i, out);
    }
}

/// Appends the character of the escape at `raw[i]` (a `\\`; the text is valid JSON) to `out`
/// and returns the index past it (a `\\uD8xx\\uDCxx` pair is one character).
#[inline(always)]
fn unescape_one(raw: &[u8], mut i: usize, out: &mut Vec<u8>) -> usize {
    let e = raw[i + 1];
    i += 2;
    let c = match e {
        b'"' => '"',
        b'\\' => '\\',
        b'/' => '/',
        b'b' => '\u{8}',
        b'f' => '\u{c}',
        b'n' => '\n',
        b'r' => '\r',
        b't' => '\t',
        _ => {
            let hi = hex4(raw, i).unwrap_or(0xFFFD);
            i += 4;
            let cp = if (0xD800..0xDC00).contains(&hi) {
                let lo = hex4(raw, i + 2).unwrap_or(0xDC00);
                i += 6;
                0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
            } else {
                hi
            };
            char::from_u32(cp).unwrap_or('\u{FFFD}')
        }
    };
    let mut buf = [0u8; 4];
    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
    i
}

/// Building blocks for one-pass readers that validate while they scan, without a tape (the
/// fused validator of `palisade-schema`). They accept exactly what [`parse_into`] accepts:
/// same string, number and literal rules, same depth and token accounting.
pub mod scan {
    use super::{err, JsonError, Limits};

    /// `inp` as text when it is UTF-8: the same answer as `std::str::from_utf8(inp).ok()`,
    /// with the ASCII bytes before the first non-ASCII one checked 128 at a time (SSE2, where
    /// there: eight loads, seven `por` and one `pmovmskb` per block).
    #[inline]
    pub fn text(inp: &[u8]) -> Option<&str> {
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        {
            super::sse2::text(inp)
        }
        #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
        {
            std::str::from_utf8(inp).ok()
        }
    }

    /// Offset of the first non-whitespace byte at or after `p`.
    #[inline(always)]
    pub fn skip_ws(inp: &[u8], p: usize) -> usize {
        super::skip_ws(inp, p)
    }

    /// The string whose opening quote is at `q`: the offset of its closing quote, and whether
    /// its contents hold a backslash escape. Contents are checked (UTF-8, escapes, control
    /// characters) as by [`super::parse_into`].
    #[inline(always)]
    pub fn string(inp: &[u8], q: usize) -> Result<(usize, bool), JsonError> {
        super::string_end(inp, q)
    }

    /// [`string`] in a document known to be UTF-8 (a `&str`, whose UTF-8 was checked once as a
    /// whole): the same result and errors (invalid UTF-8, the one error it skips, cannot occur
    /// there), with non-ASCII contents scanned at the speed of ASCII.
    #[inline(always)]
    pub fn string_in_text(text: &str, q: usize) -> Result<(usize, bool), JsonError> {
        super::string_end_utf8(text, q)
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
        let (end, escaped) = super::string_end_utf8(text, q)?;
        // SAFETY: the byte at `q` is `"` (tested above), and `string_end_utf8` is `Ok` only at a
        // `"` after `q`: both ASCII, in order.
        #[allow(unsafe_code)]
        let contents = unsafe { super::between_quotes(text, q, end) };
        Ok((contents, end, escaped))
    }

    /// The number starting at `start` (`-` or a digit): the offset after it, and whether it is
    /// written as an integer (no fraction, no exponent).
    #[inline(always)]
    pub fn number(inp: &[u8], start: usize) -> Result<(usize, bool), JsonError> {
        let (end, flags) = super::number_end(inp, start)?;
        Ok((end, flags & (super::F_FRAC | super::F_EXP) == 0))
    }

    /// Append the unescaped value of string contents (between the quotes, as checked by
    /// [`string`]) to `out`.
    pub fn unescape_into(raw: &[u8], out: &mut Vec<u8>) {
        super::unescape_into(raw, out)
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
    /// tokens counted so far (both as [`super::parse_into`] counts them, against `limits`).
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
}

#[cfg(test)]
mod tests;
