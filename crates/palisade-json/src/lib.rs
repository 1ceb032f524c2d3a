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
#![forbid(unsafe_code)]

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

/// A parsed document: tokens over the input bytes. Keep one per worker and reuse it.
#[derive(Debug, Default)]
pub struct Tape {}

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

/// Parse `input` (one JSON text; surrounding whitespace allowed, a UTF-8 BOM is an error,
/// trailing garbage is an error) into `tape`, replacing what it held.
pub fn parse_into(_input: &[u8], _tape: &mut Tape, _limits: &Limits) -> Result<(), JsonError> {
    unimplemented!("palisade-json: being written")
}
