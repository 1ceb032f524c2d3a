//! Where events go: the [`Sink`] contract the writer thread drives, and the sink specification
//! of the configuration (`sqlite:PATH`, `jsonl:PATH`, `stdout`, `postgres://...`, `off`).

use std::path::{Path, PathBuf};

use crate::model::Event;

/// A sink error: the batch is counted as dropped, and the writer goes on.
#[derive(Debug, thiserror::Error)]
pub enum SinkError {
    #[error("sqlite: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("{0}")]
    Other(String),
    /// The sink's server is unreachable and the sink is waiting to reconnect; it logs the
    /// outage itself (once), so the writer does not log each dropped batch.
    #[error("the sink is unavailable (reconnecting)")]
    Unavailable,
}

/// A destination for batches of events. Driven by one writer thread only.
pub trait Sink: Send {
    /// Store a batch (for databases: in one transaction). On error nothing of the batch counts
    /// as written.
    fn write(&mut self, batch: &[Event]) -> Result<(), SinkError>;

    /// Called once on the writer thread before the first batch (connect, for network sinks).
    fn start(&mut self) {}

    /// Periodic housekeeping (retention); called from the writer thread between batches.
    fn maintain(&mut self) -> Result<(), SinkError> {
        Ok(())
    }

    /// For logs and metrics: `sqlite:/var/lib/palisade/events.db`.
    fn describe(&self) -> String;
}

/// The configured destination.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SinkSpec {
    /// Events are not recorded (metrics still count requests).
    Off,
    Sqlite(PathBuf),
    Jsonl(PathBuf),
    Stdout,
    Postgres(String),
}

impl SinkSpec {
    /// Parse the short form; relative paths are resolved against `base`.
    pub fn parse(s: &str, base: &Path) -> Result<SinkSpec, crate::Error> {
        let err = |m: String| crate::Error::new(crate::ErrorKind::SinkSpec, m);
        let s = s.trim();
        if s == "off" || s == "none" {
            return Ok(SinkSpec::Off);
        }
        if s == "stdout" || s == "jsonl:-" || s == "jsonl:stdout" {
            return Ok(SinkSpec::Stdout);
        }
        if s.starts_with("postgres://") || s.starts_with("postgresql://") {
            return Ok(SinkSpec::Postgres(s.to_string()));
        }
        let path = |p: &str| -> Result<PathBuf, crate::Error> {
            let p = p.strip_prefix("//").unwrap_or(p);
            if p.is_empty() {
                return Err(err(format!("`{s}` needs a file path")));
            }
            Ok(base.join(p))
        };
        if let Some(p) = s.strip_prefix("sqlite:") {
            return path(p).map(SinkSpec::Sqlite);
        }
        if let Some(p) = s.strip_prefix("jsonl:") {
            return path(p).map(SinkSpec::Jsonl);
        }
        Err(err(format!("`{s}` is not an events sink: use sqlite:PATH, jsonl:PATH, stdout, postgres://... or off")))
    }

    /// The PostgreSQL URL.
    pub fn postgres_url(&self) -> Option<&str> {
        match self {
            SinkSpec::Postgres(u) => Some(u),
            _ => None,
        }
    }

    /// The SQLite file, when events can be queried.
    pub fn sqlite_path(&self) -> Option<&Path> {
        match self {
            SinkSpec::Sqlite(p) => Some(p),
            _ => None,
        }
    }
}

impl std::fmt::Display for SinkSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SinkSpec::Off => f.write_str("off"),
            SinkSpec::Sqlite(p) => write!(f, "sqlite:{}", p.display()),
            SinkSpec::Jsonl(p) => write!(f, "jsonl:{}", p.display()),
            SinkSpec::Stdout => f.write_str("stdout"),
            // Credentials in the URL are not shown.
            SinkSpec::Postgres(url) => match url.split_once('@') {
                Some((_, host)) => write!(f, "postgres://[redacted]@{host}"),
                None => f.write_str(url),
            },
        }
    }
}
