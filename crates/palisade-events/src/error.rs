//! The error of this library's configuration, query and command-line side ([`Error`]). (The
//! sinks' write path has its own [`crate::SinkError`], which the writer thread matches on to
//! count a dropped batch or wait for a reconnection.)

/// What failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A sink specification (`sqlite:PATH`, `jsonl:PATH`, ...).
    SinkSpec,
    /// A filter of a query (`since`, `status`, an unknown name).
    Filter,
    /// Opening or reading the event store (the cause is the store's error).
    Store,
    /// Talking to a running Palisade's admin API, or its answer.
    Admin,
    /// Writing the output.
    Output,
}

/// An error of palisade-events: its kind, the message with its context, and the cause when
/// there is one.
pub type Error = palisade_core::Error<ErrorKind>;
