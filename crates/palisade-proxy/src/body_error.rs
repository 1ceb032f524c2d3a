//! Why a body could not be read ([`BodyError`]), shared by every body type and the framing
//! codec.

/// Why a body could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BodyError {
    #[error("client body timed out")]
    Timeout,
    #[error("invalid chunked encoding: {0}")]
    Chunked(&'static str),
    #[error("connection closed before the body was complete")]
    Incomplete,
    #[error("i/o error: {0}")]
    Io(String),
    #[error("body larger than the configured limit")]
    TooLarge,
    #[error("upstream body error: {0}")]
    Upstream(String),
}
