//! The positive security model: OpenAPI 3.0 and 3.1 specs loaded (with `$ref` across files),
//! compiled into a router and validators, and used to judge requests and responses. Pure: no
//! I/O at decision time; loading reads documents through a caller-supplied fetcher.
//!
//! Pipeline: [`loader::load`] (documents, references, structure checks: [`SpecError`]s with
//! file, line, column and pointer) → [`compile::compile`] ([`model::Api`]: operations,
//! schemas, [`router::Router`]) → lookups at decision time with [`router::Router::lookup`].
//! [`lint::lint`] lists what Palisade does not support or finds suspicious in a spec.
#![forbid(unsafe_code)]

mod check;
pub mod compile;
pub mod error;
pub mod form;
pub mod judge;
pub mod learn;
pub mod lint;
pub mod loader;
pub mod model;
pub mod multipart;
pub mod params;
pub mod router;
pub mod servers;
pub mod settings;
pub mod stage;

pub use compile::{compile, compile_with_warnings, CompileOptions};
pub use error::{Error, ErrorKind, SpecError, Warning};
pub use lint::lint;
pub use loader::{load, load_str, Fetch, FetchError, FsFetch, Limits, SpecSet};
