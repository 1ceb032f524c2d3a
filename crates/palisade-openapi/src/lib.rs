//! The positive security model: OpenAPI 3.0 and 3.1 specs loaded (with `$ref` across files),
//! compiled into a router and validators, and used to judge requests and responses. Pure: no
//! I/O at decision time; loading reads documents through a caller-supplied fetcher.
#![forbid(unsafe_code)]

pub mod form;
pub mod media;
pub mod model;
pub mod multipart;
pub mod params;
pub mod router;
pub mod xml;
