//! The error of the proxy's set-up and upstream exchanges that are not on the HTTP request
//! path's typed enums: an upstream's TLS settings, a WebSocket handshake with the upstream, a
//! gRPC message that cannot be inspected.
//! (Starting and reloading the server answer [`crate::StartError`] and
//! [`crate::server::ReloadError`], whose configuration variant carries every located problem;
//! the request path's [`crate::body_error::BodyError`] and [`crate::upstream::UpstreamError`]
//! are matched to choose the status a client gets.)

/// What failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// An upstream's TLS settings: the CA bundle, the server name.
    Tls,
    /// The upstream's answer could not be read or was not HTTP (the cause is the I/O or
    /// decoding error when there is one).
    Upstream,
    /// A gRPC message that cannot be judged: compressed without a declared or supported
    /// encoding, or too large or corrupt once decompressed (it is forwarded uninspected).
    Grpc,
}

/// An error of palisade-proxy: its kind, the message with its context, and the cause when
/// there is one.
pub type Error = palisade_core::Error<ErrorKind>;
