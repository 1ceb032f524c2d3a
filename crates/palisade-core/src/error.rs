//! The error shape the libraries share: each library names its own kinds (`ErrorKind`) and
//! uses `Error<ErrorKind>` as its one error type. This crate's own errors (a raw HTTP message, a
//! gRPC descriptor set) are `Error<`[`ErrorKind`]`>`, which plain `Error` names.
//!
//! An error carries what kind of thing failed (for callers that act on it), the sentence a user
//! reads (with its context: the file, the line, the setting), and the underlying cause when there
//! is one (an I/O error, a parser's error), reachable through [`std::error::Error::source`].

use std::fmt;
use std::sync::Arc;

/// What failed, for palisade-core's own operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A raw HTTP request or response written as text ([`crate::rawhttp`]); the context is the
    /// head's line when the problem is on one (`line 2: expected ...`).
    RawHttp,
    /// A file that is not a usable gRPC descriptor set ([`crate::grpc::descriptor`]).
    Descriptor,
}

/// An error of kind `K`: a kind, a message that says what went wrong and where, and an
/// optional cause. It displays as its message (the cause is not repeated: the message already
/// names it when the user needs it).
#[derive(Clone)]
pub struct Error<K = ErrorKind> {
    kind: K,
    message: String,
    cause: Option<Arc<dyn std::error::Error + Send + Sync>>,
}

impl<K: Copy> Error<K> {
    /// An error of `kind` whose message is `message`.
    pub fn new(kind: K, message: impl Into<String>) -> Self {
        Error { kind, message: message.into(), cause: None }
    }

    /// An error of `kind` caused by `cause` (kept as the [`std::error::Error::source`]).
    pub fn caused_by(kind: K, message: impl Into<String>, cause: impl std::error::Error + Send + Sync + 'static) -> Self {
        Error { kind, message: message.into(), cause: Some(Arc::new(cause)) }
    }

    /// The same error with `context` (what was being done, or where) in front of its message:
    /// `line 3: ...`, `keys.txt: ...`.
    pub fn context(mut self, context: impl fmt::Display) -> Self {
        self.message = format!("{context}: {}", self.message);
        self
    }

    /// What kind of thing failed.
    pub fn kind(&self) -> K {
        self.kind
    }

    /// The message, with its context (what `Display` prints).
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl<K> fmt::Display for Error<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl<K: fmt::Debug> fmt::Debug for Error<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Error");
        d.field("kind", &self.kind).field("message", &self.message);
        if let Some(c) = &self.cause {
            d.field("cause", c);
        }
        d.finish()
    }
}

impl<K: fmt::Debug> std::error::Error for Error<K> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.cause.as_deref().map(|c| c as &(dyn std::error::Error + 'static))
    }
}

/// Errors are equal when their kinds and messages are (the cause is not compared).
impl<K: PartialEq> PartialEq for Error<K> {
    fn eq(&self, other: &Self) -> bool {
        self.kind == other.kind && self.message == other.message
    }
}

impl<K: Eq> Eq for Error<K> {}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum Kind {
        Read,
        Parse,
    }

    #[test]
    fn context_goes_in_front_and_the_cause_is_the_source() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
        let e = Error::caused_by(Kind::Read, "cannot read it", io).context("keys.txt");
        assert_eq!(e.to_string(), "keys.txt: cannot read it");
        assert_eq!(e.kind(), Kind::Read);
        let source = std::error::Error::source(&e).expect("the cause");
        assert_eq!(source.to_string(), "no such file");
        let p = Error::new(Kind::Parse, "bad digit").context("line 3").context("keys.txt");
        assert_eq!(p.message(), "keys.txt: line 3: bad digit");
        assert!(std::error::Error::source(&p).is_none());
        assert_ne!(p, Error::new(Kind::Read, "keys.txt: line 3: bad digit"));
        assert_eq!(p, Error::new(Kind::Parse, "keys.txt: line 3: bad digit"));
    }
}
