//! `palisade openapi lint SPEC`: what in a spec Palisade does not support or finds suspicious,
//! and what it will do about it.
//!
//! Reported: `callbacks`, `webhooks` and `links` (ignored); unknown path item keys (ignored);
//! parameters without a schema (only presence checked); header parameters OpenAPI says to
//! ignore; operations without responses; templates that differ only in parameter names;
//! routes hidden by another operation once server base paths are applied; server URLs whose
//! variables cannot be expanded; security schemes Palisade does not check (`mutualTLS`,
//! unknown types); request body object schemas without `additionalProperties` (suggesting
//! shadow-field detection); and the schema engine's own warnings (keywords or regex patterns
//! it cannot enforce exactly).

use crate::compile::{compile_with_warnings, CompileOptions};
use crate::error::{SpecError, Warning};
use crate::loader::{load, Fetch, Limits, SpecSet};

/// Warnings for a loaded spec, in document order; errors when it does not compile.
pub fn lint(set: &SpecSet, options: &CompileOptions) -> Result<Vec<Warning>, Vec<SpecError>> {
    let (_, mut warnings) = compile_with_warnings(set, options)?;
    sort(&mut warnings);
    Ok(warnings)
}

/// Load `location` and lint it: what the CLI runs.
pub fn lint_location(location: &str, fetch: &dyn Fetch, limits: &Limits, options: &CompileOptions) -> Result<Vec<Warning>, Vec<SpecError>> {
    let set = load(location, fetch, limits)?;
    lint(&set, options)
}

pub(crate) fn sort(warnings: &mut Vec<Warning>) {
    warnings.sort_by(|a, b| (&a.file, a.line, a.col).cmp(&(&b.file, b.line, b.col)));
    warnings.dedup();
}
