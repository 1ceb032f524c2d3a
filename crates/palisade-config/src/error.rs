//! Configuration errors: every one carries the file, the position and the key path
//! ([`ConfigError`], what a user reads). The value parsers that other crates call on their own
//! (a target URL) return an [`Error`], which the decoder reports at the value's position.

use std::fmt;

use crate::yaml::Origin;

/// What a value parser refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// An upstream target URL (`http://host:port`, `unix:/path`...).
    Target,
    /// A `${VAR}` reference in a value.
    Env,
}

/// An error of a value parser of palisade-config: its kind, the message, and the cause when
/// there is one.
pub type Error = palisade_core::Error<ErrorKind>;

/// One configuration problem.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    pub file: String,
    /// 1-based line; 0 when the value came from the environment or the problem concerns the
    /// whole file.
    pub line: usize,
    pub col: usize,
    /// Set when the value came from an environment variable override.
    pub env: Option<String>,
    /// Key path such as `apps[0].upstream`; empty for the document root.
    pub path: String,
    pub message: String,
}

impl ConfigError {
    pub fn new(file: &str, origin: &Origin, path: &str, message: impl Into<String>) -> Self {
        let (line, col, env) = match origin {
            Origin::File { line, col } => (*line, *col, None),
            Origin::Env(var) => (0, 0, Some(var.clone())),
        };
        ConfigError { file: file.to_string(), line, col, env, path: path.to_string(), message: message.into() }
    }

    /// A file that [`crate::read::read_text`] refused, at the position of the offending byte
    /// when there is one.
    pub fn read(file: &str, e: &crate::read::ReadError) -> Self {
        match e {
            crate::read::ReadError::NotText { line, col, message } => {
                ConfigError { file: file.to_string(), line: *line, col: *col, env: None, path: String::new(), message: message.clone() }
            }
            other => ConfigError::file(file, other.to_string()),
        }
    }

    /// A problem with the file as a whole (unreadable, not YAML).
    pub fn file(file: &str, message: impl Into<String>) -> Self {
        ConfigError { file: file.to_string(), line: 0, col: 0, env: None, path: String::new(), message: message.into() }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.file)?;
        if self.line > 0 {
            write!(f, ":{}:{}", self.line, self.col)?;
        }
        if let Some(var) = &self.env {
            write!(f, " (from environment variable {var})")?;
        }
        f.write_str(": ")?;
        if !self.path.is_empty() {
            write!(f, "{}: ", self.path)?;
        }
        f.write_str(&self.message)
    }
}

/// Every problem found in a configuration, in file order.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct ConfigErrors(pub Vec<ConfigError>);

/// Most problems [`ConfigErrors`] prints; the rest are counted in a last line.
pub const MAX_SHOWN: usize = 100;

impl fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().take(MAX_SHOWN).enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{e}")?;
        }
        if self.0.len() > MAX_SHOWN {
            write!(f, "\n... and {} more problem(s)", self.0.len() - MAX_SHOWN)?;
        }
        Ok(())
    }
}

impl ConfigErrors {
    pub fn single(e: ConfigError) -> Self {
        ConfigErrors(vec![e])
    }
}
