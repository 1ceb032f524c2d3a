//! Located diagnostics: every problem in a spec says which file, line and column, and which
//! JSON pointer inside the document, it is about.

use std::borrow::Cow;
use std::fmt;

use palisade_config::yaml::Origin;

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
