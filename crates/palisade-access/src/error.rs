//! The error of this library ([`Error`]): parsing key material, key and list files, and
//! reading them.

/// What failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A file could not be read as text (the cause is the read error).
    Read,
    /// PEM text or the key in it.
    Pem,
    /// A JWK set.
    Jwks,
    /// An API key file.
    ApiKeys,
    /// A denylist entry or file.
    Denylist,
    /// An IP list file.
    IpList,
    /// Generating a test key (the `openssl` command).
    KeyGen,
}

/// An error of palisade-access: its kind, the message with its context (the file, the line),
/// and the cause when there is one.
pub type Error = palisade_core::Error<ErrorKind>;

/// The error for a file that could not be read.
pub fn read_error(e: palisade_config::read::ReadError) -> Error {
    Error::caused_by(ErrorKind::Read, e.to_string(), e)
}
