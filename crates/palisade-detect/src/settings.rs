//! The `detection:` section of an app, decoded with the configuration crate's collecting
//! decoder (every problem reported with its line and key path).
//!
//! ```yaml
//! detection:                  # absent = block, balanced; also the short forms
//!   mode: block               # `detection: off` / `monitor` / `block`
//!   level: balanced           # balanced | strict
//!   headers: [X-Api-Version]  # inspected besides User-Agent, Referer, X-Forwarded-For/-Host, Origin
//!   exclusions:
//!     - {detector: sqli, location: 'body/comment'}     # detector, category or `*`;
//!     - {detector: xss, location: 'body/posts/*/html'} # `*` one step, `**` anything
//!   paths:
//!     - {prefix: /admin, mode: monitor, level: strict}  # longest prefix wins
//!       exclusions: [{detector: xss, location: body/html}]
//!   operations:               # per OpenAPI operation (operationId or `METHOD /template`);
//!     - {operation: createPost, mode: monitor, exclusions: [{detector: sqli, location: body/query}]}
//!   limits:
//!     max_values: 10000       # per phase (head, body)
//!     max_bytes: 4MiB
//!     max_depth: 128          # JSON nesting
//!     max_layers: 4           # decoding passes
//!     max_value_bytes: 64KiB  # decoded per value
//!     on_exceed: block        # block | monitor | off: what a request over the limits gets
//!   max_findings: 8
//!   fields:                   # names that give a value a role (compared without case, `_`, `-`)
//!     search: [site_lookup]   # free text, besides q, query, search, ... and the Referer
//!     redirect: [next_url]    # redirect targets, besides redirect_uri, return_to, ...
//!     conventions: true       # false: only the names above have a role
//! ```

use palisade_config::decode::{self, Ctx, MapReader};
use palisade_config::yaml::{Node, Value};
use palisade_core::Mode;

use crate::engine::{EngineConfig, Exclusion, FAMILIES};
use crate::{extract, Category, Level};

#[cfg(test)]
mod tests;

/// Per path prefix overrides.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathOverride {
    /// Starts with `/`; matches the path itself and anything under it (`/admin` matches
    /// `/admin` and `/admin/x`, not `/administrator`).
    pub prefix: String,
    pub mode: Option<Mode>,
    pub level: Option<Level>,
    /// Exclusions that apply under this prefix (besides the app's).
    pub exclusions: Vec<Exclusion>,
}

/// Per OpenAPI operation overrides: they win over path overrides. The operation is the one the
/// OpenAPI stage matched (`palisade_core::Context::operation`); without an `openapi:` section
/// no request has one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OperationOverride {
    /// `operationId`, or `METHOD /template` (method upper-cased) for operations without one.
    pub operation: String,
    pub mode: Option<Mode>,
    pub level: Option<Level>,
    /// Exclusions that apply to this operation (besides the app's and the path's).
    pub exclusions: Vec<Exclusion>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    pub mode: Mode,
    pub level: Level,
    pub headers: Vec<String>,
    pub exclusions: Vec<Exclusion>,
    pub paths: Vec<PathOverride>,
    pub operations: Vec<OperationOverride>,
    pub limits: extract::Limits,
    pub decode: crate::decode::Limits,
    /// What a request gets when a limit stops inspection (reason `detect.limit`).
    pub on_exceed: Mode,
    pub max_findings: usize,
    /// Field names that give values a role (`fields`).
    pub roles: crate::context::Roles,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            mode: Mode::Block,
            level: Level::Balanced,
            headers: Vec::new(),
            exclusions: Vec::new(),
            paths: Vec::new(),
            operations: Vec::new(),
            limits: extract::Limits::default(),
            decode: crate::decode::Limits::default(),
            on_exceed: Mode::Block,
            max_findings: 8,
            roles: crate::context::Roles::default(),
        }
    }
}

const KEYS: &[&str] = &["mode", "level", "headers", "exclusions", "paths", "operations", "limits", "max_findings", "fields"];
const LIMIT_KEYS: &[&str] = &["max_values", "max_bytes", "max_depth", "max_layers", "max_value_bytes", "on_exceed"];

fn mode(cx: &mut Ctx, n: &Node, p: &str) -> Option<Mode> {
    if matches!(n.value, Value::Bool(false)) {
        return Some(Mode::Off);
    }
    decode::one_of(cx, n, p, &["block", "monitor", "off"]).map(|v| match v {
        "block" => Mode::Block,
        "monitor" => Mode::Monitor,
        _ => Mode::Off,
    })
}

fn level(cx: &mut Ctx, n: &Node, p: &str) -> Option<Level> {
    decode::one_of(cx, n, p, &["balanced", "strict"]).map(|v| if v == "strict" { Level::Strict } else { Level::Balanced })
}

/// Names an exclusion may use: detector names and aliases, categories, `*`.
pub fn known_detector_names() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = vec!["*", "scanner"];
    names.extend(FAMILIES.iter().flat_map(|(n, _)| n.iter().copied()));
    names.extend(Category::ALL.iter().map(|c| c.as_str()));
    names.extend(crate::registry::detectors().iter().map(|d| d.name()));
    names.sort_unstable();
    names.dedup();
    names
}

impl Settings {
    /// Decode the section at key path `p`.
    pub fn decode(cx: &mut Ctx, n: &Node, p: &str) -> Option<Settings> {
        // Short forms: `detection: off | monitor | block`.
        if matches!(n.value, Value::Str(_) | Value::Bool(_)) {
            let mode = mode(cx, n, p)?;
            return Some(Settings { mode, ..Settings::default() });
        }
        let d = Settings::default();
        let mut m = MapReader::new(cx, n, p)?;
        let mode = m.opt(cx, "mode", mode).unwrap_or(d.mode);
        let level = m.opt(cx, "level", level).unwrap_or(d.level);
        let headers = m
            .opt(cx, "headers", |cx, n, p| {
                decode::one_or_seq(cx, n, p, |cx, n, p| {
                    let h = decode::non_empty_string(cx, n, p)?;
                    if http::HeaderName::from_bytes(h.as_bytes()).is_err() {
                        cx.error(&n.origin, p, format!("`{h}` is not a valid header name"));
                        return None;
                    }
                    Some(h)
                })
            })
            .unwrap_or_default();
        let known = known_detector_names();
        let exclusions = m.opt(cx, "exclusions", |cx, n, p| decode::seq(cx, n, p, |cx, n, p| decode_exclusion(cx, n, p, &known))).unwrap_or_default();
        let paths = m.opt(cx, "paths", |cx, n, p| decode::seq(cx, n, p, |cx, n, p| decode_path(cx, n, p, &known))).unwrap_or_default();
        let operations = m.opt(cx, "operations", |cx, n, p| decode::seq(cx, n, p, |cx, n, p| decode_operation(cx, n, p, &known))).unwrap_or_default();
        let limits = m.opt(cx, "limits", decode_limits);
        let max_findings = m.opt(cx, "max_findings", |cx, n, p| decode::uint(cx, n, p, 1, 1000)).map_or(d.max_findings, |v| v as usize);
        let roles = m.opt(cx, "fields", decode_roles).unwrap_or_default();
        m.finish_with(cx, KEYS);
        let (limits, decode, on_exceed) = limits.unwrap_or((d.limits, d.decode, d.on_exceed));
        Some(Settings { mode, level, headers, exclusions, paths, operations, limits, decode, on_exceed, max_findings, roles })
    }

    /// The engine configuration (the global level; path overrides are applied by the stage).
    pub fn engine_config(&self) -> EngineConfig {
        EngineConfig {
            level: self.level,
            headers: self.headers.clone(),
            exclusions: self.exclusions.clone(),
            limits: self.limits,
            decode: self.decode,
            max_findings: self.max_findings,
            roles: self.roles.clone(),
        }
    }
}

/// `fields: {search: [...], redirect: [...], conventions: bool}`.
fn decode_roles(cx: &mut Ctx, n: &Node, p: &str) -> Option<crate::context::Roles> {
    let mut m = MapReader::new(cx, n, p)?;
    let names = |cx: &mut Ctx, n: &Node, p: &str| {
        decode::one_or_seq(cx, n, p, |cx, n, p| {
            let s = decode::non_empty_string(cx, n, p)?;
            let folded = crate::context::Roles::fold(&s);
            if folded.is_empty() || folded.len() > 64 || !folded.bytes().all(|c| c.is_ascii_graphic()) {
                cx.error(&n.origin, p, format!("`{s}` is not a field name: printable ASCII, at most 64 characters besides `_` and `-`"));
                return None;
            }
            Some(folded)
        })
    };
    let search = m.opt(cx, "search", names).unwrap_or_default();
    let redirect = m.opt(cx, "redirect", names).unwrap_or_default();
    let conventions = m.opt(cx, "conventions", decode::boolean).unwrap_or(true);
    m.finish_with(cx, &["search", "redirect", "conventions"]);
    Some(crate::context::Roles { conventions, search, redirect })
}

fn decode_exclusion(cx: &mut Ctx, n: &Node, p: &str, known: &[&str]) -> Option<Exclusion> {
    let mut m = MapReader::new(cx, n, p)?;
    let detector = m.req(cx, "detector", |cx, n, p| {
        let s = decode::non_empty_string(cx, n, p)?;
        if !known.contains(&s.as_str()) {
            cx.error(&n.origin, p, format!("unknown detector `{s}`; expected one of: {}", known.join(", ")));
            return None;
        }
        Some(s)
    });
    let location = m.req(cx, "location", decode::non_empty_string);
    m.finish_with(cx, &["detector", "location"]);
    Some(Exclusion { detector: detector?, location: location? })
}

fn decode_exclusions(cx: &mut Ctx, m: &mut MapReader<'_>, known: &[&str]) -> Vec<Exclusion> {
    m.opt(cx, "exclusions", |cx, n, p| decode::seq(cx, n, p, |cx, n, p| decode_exclusion(cx, n, p, known))).unwrap_or_default()
}

fn decode_operation(cx: &mut Ctx, n: &Node, p: &str, known: &[&str]) -> Option<OperationOverride> {
    let mut m = MapReader::new(cx, n, p)?;
    // `match` as in the OpenAPI section's `operations`, or `operation`.
    let key = if m.has("match") && !m.has("operation") { "match" } else { "operation" };
    let operation = m.req(cx, key, |cx, n, p| {
        let s = decode::non_empty_string(cx, n, p)?;
        // `get /users/{id}` names the same operation as `GET /users/{id}`.
        Some(match s.trim().split_once(' ') {
            Some((method, template)) if template.trim().starts_with('/') => format!("{} {}", method.to_ascii_uppercase(), template.trim()),
            _ => s.trim().to_string(),
        })
    });
    let mode = m.opt(cx, "mode", mode);
    let level = m.opt(cx, "level", level);
    let exclusions = decode_exclusions(cx, &mut m, known);
    m.finish_with(cx, &["operation", "match", "mode", "level", "exclusions"]);
    Some(OperationOverride { operation: operation?, mode, level, exclusions })
}

fn decode_path(cx: &mut Ctx, n: &Node, p: &str, known: &[&str]) -> Option<PathOverride> {
    let mut m = MapReader::new(cx, n, p)?;
    let prefix = m.req(cx, "prefix", |cx, n, p| {
        let s = decode::non_empty_string(cx, n, p)?;
        if !s.starts_with('/') {
            cx.error(&n.origin, p, "a path prefix starts with `/`");
            return None;
        }
        // Compared with the canonical request path, so written in canonical form.
        let c = palisade_core::path::canonical_prefix(&s);
        if c.is_none() {
            cx.error(&n.origin, p, "not a valid path prefix (a `..` above the root, a malformed escape, or a `\\`, `;` or control byte)");
        }
        c
    });
    let mode = m.opt(cx, "mode", mode);
    let level = m.opt(cx, "level", level);
    let exclusions = decode_exclusions(cx, &mut m, known);
    m.finish_with(cx, &["prefix", "mode", "level", "exclusions"]);
    Some(PathOverride { prefix: prefix?, mode, level, exclusions })
}

fn decode_limits(cx: &mut Ctx, n: &Node, p: &str) -> Option<(extract::Limits, crate::decode::Limits, Mode)> {
    let d = Settings::default();
    let mut m = MapReader::new(cx, n, p)?;
    let max_values = m.opt(cx, "max_values", |cx, n, p| decode::uint(cx, n, p, 1, 10_000_000)).map_or(d.limits.max_values, |v| v as usize);
    let max_bytes = m
        .opt(cx, "max_bytes", |cx, n, p| {
            let v = decode::size(cx, n, p)?;
            if v == 0 {
                cx.error(&n.origin, p, "must be positive");
                return None;
            }
            Some(v)
        })
        .map_or(d.limits.max_bytes, |v| v as usize);
    let max_depth = m.opt(cx, "max_depth", |cx, n, p| decode::uint(cx, n, p, 1, 10_000)).map_or(d.limits.max_depth, |v| v as u32);
    let max_layers = m.opt(cx, "max_layers", |cx, n, p| decode::uint(cx, n, p, 1, 16)).map_or(d.decode.max_layers, |v| v as u8);
    let max_input = m
        .opt(cx, "max_value_bytes", |cx, n, p| {
            let v = decode::size(cx, n, p)?;
            if v < 64 {
                cx.error(&n.origin, p, "must be at least 64 bytes");
                return None;
            }
            Some(v)
        })
        .map_or(d.decode.max_input, |v| v as usize);
    let on_exceed = m.opt(cx, "on_exceed", mode).unwrap_or(d.on_exceed);
    m.finish_with(cx, LIMIT_KEYS);
    Some((extract::Limits { max_values, max_bytes, max_depth }, crate::decode::Limits { max_layers, max_input }, on_exceed))
}
