//! Palisade's security events: what was blocked or monitored, and why.
//!
//! - [`model`]: the [`Event`] record, built from a request and its reasons with secrets
//!   redacted ([`Redactor`]) and long values truncated;
//! - [`pipeline`]: the bounded queue between request workers and one writer thread; the request
//!   path never waits (full queue: aggregate, then drop, with exact counters);
//! - [`sink`]: the sink contract and specification; [`sqlite`] (the embedded default),
//!   [`pg`] (PostgreSQL, for fleets) and [`jsonl`] (stdout or a rotating file) implement it;
//! - [`query`]: filtered pages and statistics over an SQLite events database, for the admin
//!   API and the CLI.
#![forbid(unsafe_code)]

pub mod cli;
pub mod error;
pub mod jsonl;
pub mod model;
pub mod pg;
pub mod pipeline;
pub mod query;
pub mod sink;
pub mod sqlite;
pub mod suggest;

use std::time::Duration;

pub use error::{Error, ErrorKind};
pub use model::{Event, ReasonRef, Redactor, RequestRef, Verdict};
pub use pipeline::{Counters, EventSender, FoldKey, Options, Pipeline};
pub use sink::{Sink, SinkError, SinkSpec};

/// Everything needed to start a pipeline: where to, and how.
#[derive(Clone, Debug)]
pub struct Settings {
    pub sink: SinkSpec,
    pub options: Options,
    pub retention: sqlite::Retention,
    pub rotation: jsonl::Rotation,
}

/// Open the configured sink. `Ok(None)` for `off`.
pub fn open_sink(s: &Settings) -> Result<Option<Box<dyn Sink>>, SinkError> {
    Ok(match &s.sink {
        SinkSpec::Off => None,
        SinkSpec::Sqlite(p) => Some(Box::new(sqlite::SqliteSink::open(p, s.retention)?)),
        SinkSpec::Jsonl(p) => Some(Box::new(jsonl::JsonlSink::file(p, s.rotation)?)),
        SinkSpec::Stdout => Some(Box::new(jsonl::JsonlSink::stdout())),
        SinkSpec::Postgres(url) => Some(Box::new(pg::PostgresSink::open(url)?)),
    })
}

/// Open the sink and start the writer. `Ok(None)` for `off`.
pub fn start(s: &Settings) -> Result<Option<Pipeline>, SinkError> {
    match open_sink(s)? {
        None => Ok(None),
        Some(sink) => Ok(Some(Pipeline::start(sink, s.options.clone())?)),
    }
}

/// How long shutdown waits for the writer to store what is queued.
pub const CLOSE_TIMEOUT: Duration = Duration::from_secs(10);

#[cfg(test)]
mod tests;
