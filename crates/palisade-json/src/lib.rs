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
//!
//! Files: this one (the API: limits, tape, errors, [`parse_into`]), `parse` (the tape
//! builder), `lex` (the scanners of strings, numbers and whitespace, with module `sse2`),
//! `value` ([`ValueRef`] and its iterators), [`scan`] (the scanners for tape-less readers).
#![deny(unsafe_code)]

mod lex;
mod parse;
pub mod scan;
mod value;

#[cfg(test)]
use lex::{first_special, plain_run_with, special_lanes};
use parse::Parser;
pub use value::{Items, Members, ValueRef};

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

#[cfg(test)]
mod tests;
