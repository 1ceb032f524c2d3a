//! The wiring of the `palisade` binary that tests also need: building each app's pipeline
//! stages from its configuration ([`stages`]), fetching documents by URL ([`fetch`]), and the
//! access stage's file watching, JWKS refresh and Redis sync threads ([`access`], [`redis`]).
#![forbid(unsafe_code)]

pub mod access;
pub mod error;
pub mod fetch;
pub mod graphql_cmd;
pub mod redis;
pub mod stages;
pub mod traffic;

/// Read a file the configuration names (rule files, IP and key lists) as text, bounded by
/// [`palisade_config::read::MAX_FILE_BYTES`] while reading; a position in the message when it
/// is not text.
pub fn read_text(path: &std::path::Path) -> Result<String, palisade_config::read::ReadError> {
    palisade_config::read::read_text(path, palisade_config::read::MAX_FILE_BYTES)
}

pub use error::{Error, ErrorKind};
