//! Palisade's GraphQL positive security model: a pure library (no I/O) that takes a GraphQL
//! request over HTTP apart and judges it.
//!
//! - [`request`]: the GraphQL-over-HTTP envelopes: `POST` with `application/json`
//!   (`{"query", "variables", "operationName", "extensions"}`, or a batched array of those),
//!   `POST` with `application/graphql`, and `GET ?query=&variables=&operationName=`.
//!   Persisted queries (`extensions.persistedQuery.sha256Hash` without `query`) carry no
//!   document to judge and pass through: the hash names a query in the server's store, which
//!   this library does not see.
//! - [`doc`] and [`parser`]: the executable document, parsed in one pass by a recursive-descent
//!   parser of the specification's grammar into a small tree that borrows from the request.
//! - [`check`]: limits on the selected operation with fragments expanded (depth, aliases, root
//!   fields, fields, directives, repetitions of one field, introspection), cycle-safe and
//!   bounded; with a [`schema::Schema`], validation of types, fields, arguments, variables and
//!   fragments. Findings are [`palisade_core::Reason`]s located like OpenAPI ones
//!   (`graphql.query.repository.issues.first`).
//! - [`schema`]: an SDL schema, parsed once into a compact index.
//! - [`values`]: the string values a request really carries (argument literals, variables),
//!   for attack detection, instead of the query text as prose.
//! - [`settings`] and [`stage`]: the `graphql:` section of an app and the pipeline stage.
//! - [`ws`]: operations sent over WebSocket (`graphql-transport-ws` and legacy `graphql-ws`).
#![forbid(unsafe_code)]

use std::fmt;

pub mod check;
pub mod doc;
pub mod parser;
pub mod request;
pub mod schema;
pub mod settings;
pub mod stage;
pub mod values;
pub mod ws;

#[cfg(test)]
mod tests;

pub use check::{check, Limits};
pub use schema::Schema;

/// What went wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The GraphQL document does not parse.
    Syntax,
    /// The document is larger or more deeply nested than the parser accepts.
    Limit,
    /// The HTTP request is not a GraphQL request as the GraphQL-over-HTTP conventions define
    /// one (body not JSON, no `query`, a `variables` that is not an object...).
    Request,
    /// The schema (SDL) does not parse or is inconsistent.
    Schema,
}

/// The one error type of this crate: a kind, a message, and the place it concerns when known
/// (a schema file's line, a batch entry).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    pub kind: ErrorKind,
    pub message: String,
    pub context: Option<String>,
}

impl Error {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error { kind, message: message.into(), context: None }
    }

    pub fn context(mut self, context: impl Into<String>) -> Self {
        self.context = Some(context.into());
        self
    }

    /// The reason code of a request refused for this error.
    pub fn code(&self) -> &'static str {
        match self.kind {
            ErrorKind::Syntax | ErrorKind::Schema => "graphql.syntax",
            ErrorKind::Limit => "graphql.query_size",
            ErrorKind::Request => "graphql.request_invalid",
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(c) = &self.context {
            write!(f, "{c}: ")?;
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}
