//! The `openapi:` section of an app: where the spec comes from and how strictly it is applied.
//! Decoded with the configuration crate's collecting decoder, so that every problem is
//! reported with its line and key path.

use std::path::Path;
use std::time::Duration;

use palisade_config::decode::{self, Ctx, MapReader};
use palisade_config::yaml::{Node, Value};
use palisade_core::Mode;
use palisade_schema::{Formats, Nullable};

pub use crate::params::EmptyValues;

/// What to do with a finding that is not a schema violation as such (an undefined path, an
/// unknown query parameter, a shadow field).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    Block,
    Monitor,
    Pass,
}

impl Action {
    fn parse(s: &str) -> Action {
        match s {
            "block" => Action::Block,
            "monitor" => Action::Monitor,
            _ => Action::Pass,
        }
    }
}

/// Where the spec is read from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    File(std::path::PathBuf),
    Url(String),
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::File(p) => write!(f, "{}", p.display()),
            Source::Url(u) => f.write_str(u),
        }
    }
}

/// Per-operation override of the modes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Override {
    /// `operationId`, or `METHOD /template` as written under `paths` (e.g. `POST /users/{id}`).
    pub target: String,
    pub request: Option<Mode>,
    pub response: Option<Mode>,
    /// Line and key path, for "matches no operation" errors.
    pub line: usize,
    pub col: usize,
    pub path: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    pub source: Source,
    /// Extra request headers when fetching the spec from a URL (e.g. `Authorization`).
    pub fetch_headers: Vec<(String, String)>,
    /// Re-read the spec this often; a changed spec is swapped in, a broken one is logged and
    /// the old one keeps serving. `None` = never (files are still re-read on reload).
    pub refresh: Option<Duration>,
    pub request: Mode,
    pub response: Mode,
    /// Paths and methods the spec does not define.
    pub undefined: Action,
    /// Query parameters the operation does not declare.
    pub unknown_query: Action,
    /// Body properties the schema does not describe, where it does not forbid them either.
    pub unknown_fields: Action,
    /// Status of blocked requests; `None` = the app's `block_status`.
    pub block_status: Option<u16>,
    /// Answer 404 / 405 / 415 / 400 according to the violation instead of the block status.
    pub status_by_violation: bool,
    /// How many violations a block response and a log line list.
    pub max_violations: usize,
    pub ignore_trailing_slash: bool,
    /// Empty query values (`?tags=`) of parameters without `allowEmptyValue: true`.
    pub empty_values: EmptyValues,
    pub overrides: Vec<Override>,
    /// Documents one spec may pull in through `$ref`s, the entry one included.
    pub max_documents: usize,
    /// Whether a spec read from a file may refer to http(s) documents.
    pub remote_refs: bool,
    /// What `nullable: true` means in an OpenAPI 3.1 spec.
    pub nullable: palisade_schema::Nullable,
    /// Whether `format` rejects values (`assert`) or is only an annotation.
    pub formats: palisade_schema::Formats,
    /// `--offline` (the CLI tools): fetch nothing over the network, a spec URL included.
    pub offline: bool,
}

const KEYS: &[&str] = &[
    "spec",
    "headers",
    "refresh",
    "request",
    "response",
    "undefined",
    "unknown_query",
    "unknown_fields",
    "block_status",
    "status_by_violation",
    "max_violations",
    "ignore_trailing_slash",
    "empty_values",
    "operations",
    "max_documents",
    "remote_refs",
    "nullable",
    "formats",
];

fn mode(cx: &mut Ctx, n: &Node, p: &str) -> Option<Mode> {
    decode::one_of(cx, n, p, &["block", "monitor", "off"]).map(|v| match v {
        "block" => Mode::Block,
        "monitor" => Mode::Monitor,
        _ => Mode::Off,
    })
}

fn action(cx: &mut Ctx, n: &Node, p: &str) -> Option<Action> {
    decode::one_of(cx, n, p, &["block", "monitor", "pass"]).map(Action::parse)
}

impl Settings {
    /// Decode the section at key path `p`. Relative spec paths are resolved against `base`
    /// (the configuration file's directory).
    pub fn decode(cx: &mut Ctx, n: &Node, p: &str, base: &Path) -> Option<Settings> {
        // Short form: `openapi: api.yaml`.
        if let Value::Str(s) = &n.value {
            let source = source_of(s, base);
            return Some(Settings::defaults(source));
        }
        let mut m = MapReader::new(cx, n, p)?;
        let spec = m.req(cx, "spec", decode::non_empty_string);
        let fetch_headers = m
            .opt(cx, "headers", |cx, n, p| {
                let mut out = Vec::new();
                let Value::Map(entries) = &n.value else {
                    cx.error(&n.origin, p, format!("expected a mapping of header names to values, found {}", n.kind()));
                    return None;
                };
                for (k, v) in entries {
                    let vp = decode::join(p, &k.name);
                    if k.name.is_empty() || !k.name.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_".contains(&b)) {
                        cx.error(&k.origin, &vp, "not a valid header name");
                        continue;
                    }
                    if let Some(v) = decode::string_like(cx, v, &vp) {
                        out.push((k.name.clone(), v));
                    }
                }
                Some(out)
            })
            .unwrap_or_default();
        let refresh = m.opt(cx, "refresh", |cx, n, p| {
            if matches!(&n.value, Value::Str(s) if s == "off") || matches!(n.value, Value::Bool(false)) {
                return Some(None);
            }
            decode::duration(cx, n, p).map(|d| if d.is_zero() { None } else { Some(d) })
        });
        let request = m.opt(cx, "request", mode).unwrap_or(Mode::Block);
        let response = m.opt(cx, "response", mode).unwrap_or(Mode::Off);
        let undefined = m.opt(cx, "undefined", action);
        let unknown_query = m.opt(cx, "unknown_query", action);
        let unknown_fields = m.opt(cx, "unknown_fields", action).unwrap_or(Action::Monitor);
        let block_status = m.opt(cx, "block_status", |cx, n, p| decode::uint(cx, n, p, 400, 599)).map(|v| v as u16);
        let status_by_violation = m.opt(cx, "status_by_violation", decode::boolean).unwrap_or(false);
        let max_violations = m.opt(cx, "max_violations", |cx, n, p| decode::uint(cx, n, p, 1, 100)).map_or(5, |v| v as usize);
        let ignore_trailing_slash = m.opt(cx, "ignore_trailing_slash", decode::boolean).unwrap_or(false);
        let empty_values = m
            .opt(cx, "empty_values", |cx, n, p| {
                decode::one_of(cx, n, p, &["allow", "schema", "reject"]).map(|v| match v {
                    "allow" => EmptyValues::Allow,
                    "reject" => EmptyValues::Reject,
                    _ => EmptyValues::Schema,
                })
            })
            .unwrap_or_default();
        let overrides = m.opt(cx, "operations", |cx, n, p| decode::seq(cx, n, p, decode_override)).unwrap_or_default();
        let max_documents =
            m.opt(cx, "max_documents", |cx, n, p| decode::uint(cx, n, p, 1, 1_000_000)).map_or(crate::loader::Limits::default().max_documents, |v| v as usize);
        let remote_refs = m.opt(cx, "remote_refs", decode::boolean).unwrap_or(false);
        let nullable = m
            .opt(cx, "nullable", |cx, n, p| {
                decode::one_of(cx, n, p, &["honour", "ignore"]).map(|v| if v == "ignore" { Nullable::Ignore } else { Nullable::Honour })
            })
            .unwrap_or_default();
        let formats = m
            .opt(cx, "formats", |cx, n, p| {
                decode::one_of(cx, n, p, &["assert", "annotate"]).map(|v| if v == "annotate" { Formats::Annotate } else { Formats::Assert })
            })
            .unwrap_or_default();
        let origin = m.origin().clone();
        m.finish_with(cx, KEYS);
        let spec = spec?;
        let source = source_of(&spec, base);
        if !fetch_headers.is_empty() && matches!(source, Source::File(_)) {
            cx.error(&origin, &decode::join(p, "headers"), "`headers` only apply to a spec fetched from an http(s) URL");
        }
        let default_refresh = match source {
            Source::Url(_) => Some(Duration::from_secs(300)),
            Source::File(_) => None,
        };
        // Undefined paths and unknown query parameters follow the request mode unless set.
        let follow = match request {
            Mode::Block => Action::Block,
            Mode::Monitor => Action::Monitor,
            Mode::Off => Action::Pass,
        };
        Some(Settings {
            source,
            fetch_headers,
            refresh: refresh.unwrap_or(default_refresh),
            request,
            response,
            undefined: undefined.unwrap_or(follow),
            unknown_query: unknown_query.unwrap_or(follow),
            unknown_fields,
            block_status,
            status_by_violation,
            max_violations,
            ignore_trailing_slash,
            empty_values,
            overrides,
            max_documents,
            remote_refs,
            nullable,
            formats,
            offline: false,
        })
    }

    /// Bounds and network policy for loading the spec.
    pub fn load_limits(&self) -> crate::loader::Limits {
        crate::loader::Limits { max_documents: self.max_documents, remote_refs: self.remote_refs && !self.offline, ..Default::default() }
    }

    /// How the spec's schemas and routes are compiled.
    pub fn compile_options(&self) -> crate::compile::CompileOptions {
        crate::compile::CompileOptions {
            router: crate::router::RouterOptions { ignore_trailing_slash: self.ignore_trailing_slash },
            nullable: self.nullable,
            formats: self.formats,
        }
    }

    fn defaults(source: Source) -> Settings {
        let refresh = matches!(source, Source::Url(_)).then_some(Duration::from_secs(300));
        Settings {
            source,
            fetch_headers: Vec::new(),
            refresh,
            request: Mode::Block,
            response: Mode::Off,
            undefined: Action::Block,
            unknown_query: Action::Block,
            unknown_fields: Action::Monitor,
            block_status: None,
            status_by_violation: false,
            max_violations: 5,
            ignore_trailing_slash: false,
            empty_values: EmptyValues::Schema,
            overrides: Vec::new(),
            max_documents: crate::loader::Limits::default().max_documents,
            remote_refs: false,
            nullable: Nullable::default(),
            formats: Formats::default(),
            offline: false,
        }
    }
}

fn source_of(spec: &str, base: &Path) -> Source {
    let lower = spec.get(..8).unwrap_or(spec).to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") {
        Source::Url(spec.to_string())
    } else {
        Source::File(base.join(spec))
    }
}

fn decode_override(cx: &mut Ctx, n: &Node, p: &str) -> Option<Override> {
    let mut m = MapReader::new(cx, n, p)?;
    let target = m.req(cx, "match", decode::non_empty_string);
    let request = m.opt(cx, "request", mode);
    let response = m.opt(cx, "response", mode);
    let (line, col) = match m.origin() {
        palisade_config::yaml::Origin::File { line, col } => (*line, *col),
        palisade_config::yaml::Origin::Env(_) => (0, 0),
    };
    m.finish_with(cx, &["match", "request", "response"]);
    Some(Override { target: target?, request, response, line, col, path: p.to_string() })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_str(yaml: &str) -> Result<Settings, Vec<String>> {
        let node = palisade_config::yaml::parse(yaml).unwrap();
        let mut cx = Ctx::new("test.yaml");
        let s = Settings::decode(&mut cx, &node, "apps[0].openapi", Path::new("/etc/palisade"));
        if cx.errors.is_empty() {
            Ok(s.unwrap())
        } else {
            Err(cx.errors.iter().map(|e| e.to_string()).collect())
        }
    }

    #[test]
    fn short_form_is_a_spec_path_with_defaults() {
        let s = decode_str("api.yaml").unwrap();
        assert_eq!(s.source, Source::File("/etc/palisade/api.yaml".into()));
        assert_eq!(
            (s.request, s.response, s.undefined, s.unknown_query, s.unknown_fields),
            (Mode::Block, Mode::Off, Action::Block, Action::Block, Action::Monitor)
        );
        assert_eq!(s.refresh, None);
        assert_eq!(s.empty_values, EmptyValues::Schema);
    }

    #[test]
    fn empty_values_policy() {
        assert_eq!(decode_str("spec: a.yaml\nempty_values: allow\n").unwrap().empty_values, EmptyValues::Allow);
        assert_eq!(decode_str("spec: a.yaml\nempty_values: reject\n").unwrap().empty_values, EmptyValues::Reject);
        assert_eq!(decode_str("spec: a.yaml\n").unwrap().empty_values, EmptyValues::Schema);
        let errs = decode_str("spec: a.yaml\nempty_values: never\n").unwrap_err();
        assert!(errs[0].contains("apps[0].openapi.empty_values"), "{errs:?}");
    }

    #[test]
    fn full_form() {
        let s = decode_str(
            "spec: https://specs.example/api.json\nheaders: {Authorization: Bearer abc}\nrefresh: 30s\nrequest: monitor\nresponse: block\n\
             unknown_fields: block\nblock_status: 400\nstatus_by_violation: true\nmax_violations: 3\n\
             operations:\n  - {match: createUser, request: off}\n  - {match: 'GET /users/{id}', response: monitor}\n",
        )
        .unwrap();
        assert_eq!(s.source, Source::Url("https://specs.example/api.json".into()));
        assert_eq!(s.fetch_headers, vec![("Authorization".to_string(), "Bearer abc".to_string())]);
        assert_eq!(s.refresh, Some(Duration::from_secs(30)));
        // Undefined paths and unknown query parameters follow the request mode.
        assert_eq!((s.request, s.undefined, s.unknown_query), (Mode::Monitor, Action::Monitor, Action::Monitor));
        assert_eq!((s.response, s.unknown_fields, s.block_status, s.status_by_violation, s.max_violations), (Mode::Block, Action::Block, Some(400), true, 3));
        assert_eq!(s.overrides.len(), 2);
        assert_eq!((s.overrides[0].target.as_str(), s.overrides[0].request), ("createUser", Some(Mode::Off)));
        assert_eq!((s.overrides[1].target.as_str(), s.overrides[1].response), ("GET /users/{id}", Some(Mode::Monitor)));
    }

    #[test]
    fn every_problem_is_reported_with_its_place() {
        let errs = decode_str("spec: api.yaml\nrequest: blok\nheaders: {X-Token: a}\nmax_violations: 0\nundefind: pass\n").unwrap_err();
        let all = errs.join("\n");
        assert!(all.contains("test.yaml:2:10: apps[0].openapi.request"), "{all}");
        assert!(all.contains("apps[0].openapi.max_violations"), "{all}");
        assert!(all.contains("undefind") && all.contains("did you mean `undefined`"), "{all}");
        assert!(all.contains("only apply to a spec fetched from an http(s) URL"), "{all}");
        assert_eq!(errs.len(), 4, "{all}");
    }

    #[test]
    fn loading_settings() {
        let s = decode_str("spec: api.yaml\n").unwrap();
        assert_eq!((s.max_documents, s.remote_refs, s.nullable), (10_000, false, Nullable::Honour));
        assert_eq!(s.load_limits().max_documents, 10_000);
        let mut s = decode_str("spec: api.yaml\nmax_documents: 3000\nremote_refs: true\nnullable: ignore\n").unwrap();
        assert_eq!((s.max_documents, s.remote_refs, s.nullable), (3000, true, Nullable::Ignore));
        assert_eq!(s.compile_options().nullable, Nullable::Ignore);
        assert_eq!(s.compile_options().formats, Formats::Assert);
        assert!(s.load_limits().remote_refs);
        s.offline = true;
        assert!(!s.load_limits().remote_refs, "--offline wins");
        let s = decode_str("spec: api.yaml\nformats: annotate\n").unwrap();
        assert_eq!(s.compile_options().formats, Formats::Annotate);
        let errs = decode_str("spec: api.yaml\nmax_documents: 0\nnullable: auto\nformats: loose\n").unwrap_err();
        assert_eq!(errs.len(), 3, "{errs:?}");
    }

    #[test]
    fn spec_is_required() {
        let errs = decode_str("request: block\n").unwrap_err();
        assert!(errs[0].contains("spec"), "{errs:?}");
    }
}
