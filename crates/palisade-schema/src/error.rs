//! The error of palisade-schema's own operations: compiling one pattern, resolving one `$ref`.
//! (Problems in a schema found while compiling it are [`crate::SchemaError`]s: located
//! diagnostics, a list of them per spec, which the spec loader reports at their file and line.)

/// What failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A `pattern` that neither regex engine compiles (the cause is the engine's error).
    Pattern,
    /// A `$ref` that does not lead to a node: an unknown document, a fragment that is not a
    /// JSON pointer or a known anchor, a pointer to nothing.
    Reference,
}

/// An error of palisade-schema: its kind, the message with its context, and the cause when
/// there is one.
pub type Error = palisade_core::Error<ErrorKind>;
