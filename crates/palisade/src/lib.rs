//! The wiring of the `palisade` binary that tests also need: building each app's pipeline
//! stages from its configuration ([`stages`]) and fetching documents by URL ([`fetch`]).
#![forbid(unsafe_code)]

pub mod fetch;
pub mod stages;
