//! The wiring of the `palisade` binary that tests also need: building each app's pipeline
//! stages from its configuration ([`stages`]), fetching documents by URL ([`fetch`]), and the
//! access stage's file watching, JWKS refresh and Redis sync threads ([`access`], [`redis`]).
#![forbid(unsafe_code)]

pub mod access;
pub mod fetch;
pub mod graphql_cmd;
pub mod redis;
pub mod stages;
