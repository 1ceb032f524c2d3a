//! The errors of palisade-openapi. A spec that does not load yields [`SpecError`]s: located
//! diagnostics (file, line, column, JSON pointer), a list of them per spec, which the
//! configuration reports beside its own problems; [`Warning`]s have the same shape. One
//! operation that fails on its own (following a `$ref`) returns an [`Error`] (kind, message,
//! cause), the shape the other libraries share.

use std::borrow::Cow;
use std::fmt;

use palisade_config::yaml::Origin;

/// What failed, for an [`Error`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A `$ref` or JSON pointer that does not lead to a node (an unknown document, a fragment
    /// that is not a pointer, a pointer to nothing, a chain that loops or is too long).
    Reference,
    /// A path template's syntax (`/users/{id`).
    Template,
    /// A HAR file (HTTP Archive) that is not JSON or lacks what a sample needs.
    Har,
}

/// An error of palisade-openapi: its kind, the message with its context, and the cause when
/// there is one.
pub type Error = palisade_core::Error<ErrorKind>;

/// A problem that stops a spec from loading. Displayed as `file:line:col: #/json/pointer:
/// message`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpecError {
    /// Location of the document (absolute path or URL).
    pub file: String,
    /// 1-based; 0 when unknown (a document that could not be read).
    pub line: usize,
    pub col: usize,
    /// JSON pointer inside the document (`/paths/~1users/get`); empty for the whole document.
    pub pointer: String,
    pub message: String,
}

/// Something unsupported or suspicious in a spec, and what Palisade does about it. Same shape
/// and display as [`SpecError`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Warning {
    pub file: String,
    pub line: usize,
    pub col: usize,
    pub pointer: String,
    pub message: String,
}

fn origin_line_col(origin: &Origin) -> (usize, usize) {
    match origin {
        Origin::File { line, col } => (*line, *col),
        Origin::Env(_) => (0, 0),
    }
}

impl SpecError {
    pub fn new(file: &str, origin: &Origin, pointer: &str, message: impl Into<String>) -> SpecError {
        let (line, col) = origin_line_col(origin);
        SpecError { file: file.to_string(), line, col, pointer: pointer.to_string(), message: message.into() }
    }
}

impl Warning {
    pub fn new(file: &str, origin: &Origin, pointer: &str, message: impl Into<String>) -> Warning {
        let (line, col) = origin_line_col(origin);
        Warning { file: file.to_string(), line, col, pointer: pointer.to_string(), message: message.into() }
    }
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}: #{}: {}", self.file, self.line, self.col, self.pointer, self.message)
    }
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}: #{}: {}", self.file, self.line, self.col, self.pointer, self.message)
    }
}

impl std::error::Error for SpecError {}

/// Escape one JSON pointer reference token (`~` → `~0`, `/` → `~1`).
pub fn escape_token(token: &str) -> Cow<'_, str> {
    if token.contains(['~', '/']) {
        Cow::Owned(token.replace('~', "~0").replace('/', "~1"))
    } else {
        Cow::Borrowed(token)
    }
}

/// `pointer` + `/` + escaped `token`.
pub fn push_token(pointer: &str, token: &str) -> String {
    let t = escape_token(token);
    let mut s = String::with_capacity(pointer.len() + 1 + t.len());
    s.push_str(pointer);
    s.push('/');
    s.push_str(&t);
    s
}
