//! The error of the binary's library ([`Error`]): reading files the configuration names,
//! fetching documents by URL, talking to Redis, reading recorded traffic.

/// What failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A file could not be read as text (the cause is the read error).
    Read,
    /// Fetching a document by URL (OpenAPI spec, JWKS).
    Fetch,
    /// A JWK set fetched by URL is not usable.
    Jwks,
    /// A Redis URL, connection or reply.
    Redis,
    /// Recorded traffic (HAR files, raw requests, sampled events) for the OpenAPI tools.
    Traffic,
}

/// An error of the `palisade` library: its kind, the message with its context (the URL, the
/// file), and the cause when there is one.
pub type Error = palisade_core::Error<ErrorKind>;
