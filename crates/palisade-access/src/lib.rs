//! Access control for Palisade, as a pure decision library: IP allow and deny lists
//! ([`ipset`]), JWT verification with keys from secrets, PEM files and JWK sets ([`jwt`]), API
//! keys and denylists ([`keys`]), rate limits with GCRA in a bounded in-process table that can
//! be synchronised with a shared store ([`ratelimit`]), the `access:` section ([`settings`]) and
//! the pipeline stage ([`stage`]).
//!
//! Nothing here does I/O or reads a clock it is not given: the stage asks a [`stage::Clock`] for
//! the time, files are read by the caller and handed over as text, and the binary runs the
//! threads that refresh JWKS URLs, reload files and talk to Redis, through the handles the stage
//! exposes ([`stage::Handles`]).
#![forbid(unsafe_code)]

pub use error::{Error, ErrorKind};

pub mod encoding;
pub mod error;
pub mod ipset;
pub mod jwt;
pub mod keys;
pub mod ratelimit;
pub mod settings;
pub mod stage;
pub mod testing;
