//! The error of this library ([`Error`]): field names of rules, and compiling rules into
//! automata. (Problems in the `rules:` section and rule files are reported as located
//! configuration errors, [`palisade_config::ConfigError`].)

/// What failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A field name (`query.NAME`, `header.NAME`, `body:/POINTER`...).
    Field,
    /// Building the automata of the rules (the cause is the automaton builder's error).
    Compile,
}

/// An error of palisade-rules: its kind, the message with its context, and the cause when
/// there is one.
pub type Error = palisade_core::Error<ErrorKind>;
