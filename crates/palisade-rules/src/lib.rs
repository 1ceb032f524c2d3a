//! User rules: per-app YAML rules that match on request fields and block, monitor, allow
//! (later inspecting stages let the request through), add false-positive exceptions for the
//! detectors, or tag the request. Pure: no I/O at decision time (rule files are read by the
//! caller at configuration time).
//!
//! - [`settings`]: the `rules:` section and rule files, with located errors;
//! - [`model`]: rules as decoded (fields, operators, `all` / `any` / `not`, actions);
//! - [`compile`]: rules compiled into per-field multi-pattern automata (Aho-Corasick, a
//!   multi-pattern regex, tries, sorted ranges), one program per phase;
//! - [`eval`]: a request evaluated against a program (each field read once);
//! - [`stage`]: the pipeline stage (reason codes `rule.<id>`).
//!
//! ```
//! use palisade_config::decode::Ctx;
//! let yaml = "- id: wp-config\n  when: {field: query, contains: wp-config.php}\n  then: block\n";
//! let node = palisade_config::yaml::parse(yaml).unwrap();
//! let mut cx = Ctx::new("rules.yaml");
//! let rules = palisade_rules::settings::decode(&mut cx, &node, "rules", std::path::Path::new("."), &Default::default(), &|_| Err(palisade_config::read::ReadError::Io(std::io::ErrorKind::NotFound.into())));
//! assert!(cx.errors.is_empty());
//! let stage = palisade_rules::RulesStage::new(palisade_rules::Rules::compile(rules).unwrap());
//! # let _ = stage;
//! ```
#![forbid(unsafe_code)]

pub mod compile;
pub mod decode;
pub mod error;
pub mod eval;
pub mod model;
pub mod settings;
pub mod stage;
#[cfg(test)]
pub(crate) mod testutil;

pub use compile::{Phase, Program, Rules};
pub use error::{Error, ErrorKind};
pub use eval::Scratch;
pub use stage::RulesStage;
