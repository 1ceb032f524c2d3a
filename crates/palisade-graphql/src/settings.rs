//! The `graphql:` section of an app: one endpoint (a mapping) or several (a list of mappings),
//! each with its path, optional schema file, mode and limits. Decoded with the configuration
//! crate's collecting decoder, so that every problem is reported with its line and key path.
//! Reading the schema file is the caller's job (this crate does no I/O).

use std::path::{Path, PathBuf};

use palisade_config::decode::{self, Ctx, MapReader};
use palisade_config::yaml::{Node, Value};
use palisade_core::Mode;

use crate::check::Limits;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    /// The request path (canonical, exact match) the endpoint answers on.
    pub path: String,
    /// SDL schema file, resolved against the configuration file's directory.
    pub schema: Option<PathBuf>,
    pub mode: Mode,
    pub limits: Limits,
    /// How many findings a block response and a log line list.
    pub max_violations: usize,
    /// Key path of the endpoint's section, for errors about its schema.
    pub key_path: String,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Settings {
    pub endpoints: Vec<Endpoint>,
}

const KEYS: &[&str] = &[
    "path",
    "schema",
    "mode",
    "introspection",
    "max_depth",
    "max_aliases",
    "max_root_fields",
    "max_fields",
    "max_directives",
    "max_field_repeat",
    "max_batch",
    "max_query_bytes",
    "max_violations",
];

impl Settings {
    /// Decode the section at key path `p`; `base` is the configuration file's directory.
    pub fn decode(cx: &mut Ctx, n: &Node, p: &str, base: &Path) -> Option<Settings> {
        let endpoints = match &n.value {
            Value::Seq(_) => decode::seq(cx, n, p, |cx, n, p| endpoint(cx, n, p, base))?,
            _ => vec![endpoint(cx, n, p, base)?],
        };
        for (i, e) in endpoints.iter().enumerate() {
            if endpoints[..i].iter().any(|o| o.path == e.path) {
                cx.error(&n.origin, p, format!("two endpoints on the path `{}`", e.path));
            }
        }
        Some(Settings { endpoints })
    }
}

fn endpoint(cx: &mut Ctx, n: &Node, p: &str, base: &Path) -> Option<Endpoint> {
    let mut m = MapReader::new(cx, n, p)?;
    let path = m
        .opt(cx, "path", |cx, n, p| {
            let s = decode::non_empty_string(cx, n, p)?;
            match palisade_core::path::canonical_prefix(&s) {
                Some(c) if s.starts_with('/') => Some(if c.len() > 1 { c.trim_end_matches('/').to_string() } else { c }),
                _ => {
                    cx.error(&n.origin, p, "must be a request path starting with / (no `..` above the root, no malformed escape)");
                    None
                }
            }
        })
        .unwrap_or_else(|| "/graphql".to_string());
    let schema = m.opt(cx, "schema", decode::non_empty_string).map(|s| base.join(s));
    let mode = m
        .opt(cx, "mode", |cx, n, p| {
            decode::one_of(cx, n, p, &["block", "monitor", "off"]).map(|v| match v {
                "block" => Mode::Block,
                "monitor" => Mode::Monitor,
                _ => Mode::Off,
            })
        })
        .unwrap_or(Mode::Block);
    let d = Limits::default();
    let introspection = m.opt(cx, "introspection", |cx, n, p| decode::one_of(cx, n, p, &["allow", "block"]).map(|v| v == "allow")).unwrap_or(d.introspection);
    let mut limit =
        |cx: &mut Ctx, key: &str, default: usize, max: u64| m.opt(cx, key, |cx, n, p| decode::uint(cx, n, p, 0, max)).map_or(default, |v| v as usize);
    let limits = Limits {
        max_depth: limit(cx, "max_depth", d.max_depth, 10_000),
        max_aliases: limit(cx, "max_aliases", d.max_aliases, 1_000_000),
        max_root_fields: limit(cx, "max_root_fields", d.max_root_fields, 1_000_000),
        max_fields: limit(cx, "max_fields", d.max_fields, 1_000_000),
        max_directives: limit(cx, "max_directives", d.max_directives, 1_000_000),
        max_field_repeat: limit(cx, "max_field_repeat", d.max_field_repeat, 1_000_000),
        max_batch: limit(cx, "max_batch", d.max_batch, 10_000),
        max_query_bytes: d.max_query_bytes,
        introspection,
    };
    let max_query_bytes = m
        .opt(cx, "max_query_bytes", |cx, n, p| match &n.value {
            Value::Int(0) => Some(0),
            _ => decode::size(cx, n, p),
        })
        .map_or(d.max_query_bytes, |v| v as usize);
    let max_violations = m.opt(cx, "max_violations", |cx, n, p| decode::uint(cx, n, p, 1, 100)).map_or(5, |v| v as usize);
    m.finish_with(cx, KEYS);
    Some(Endpoint { path, schema, mode, limits: Limits { max_query_bytes, ..limits }, max_violations, key_path: p.to_string() })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_str(yaml: &str) -> Result<Settings, Vec<String>> {
        let node = palisade_config::yaml::parse(yaml).unwrap();
        let mut cx = Ctx::new("test.yaml");
        let s = Settings::decode(&mut cx, &node, "apps[0].graphql", Path::new("/etc/palisade"));
        if cx.errors.is_empty() {
            Ok(s.unwrap())
        } else {
            Err(cx.errors.iter().map(|e| e.to_string()).collect())
        }
    }

    #[test]
    fn defaults_and_full_form() {
        let s = decode_str("{}").unwrap();
        assert_eq!(s.endpoints.len(), 1);
        let e = &s.endpoints[0];
        assert_eq!((e.path.as_str(), e.mode, e.schema.clone(), e.limits.clone()), ("/graphql", Mode::Block, None, Limits::default()));
        let s = decode_str(
            "path: /api/graphql\nschema: schema.graphql\nmode: monitor\nintrospection: allow\nmax_depth: 8\nmax_aliases: 5\nmax_root_fields: 3\n\
             max_fields: 200\nmax_directives: 4\nmax_field_repeat: 2\nmax_batch: 0\nmax_query_bytes: 8KiB\nmax_violations: 9\n",
        )
        .unwrap();
        let e = &s.endpoints[0];
        assert_eq!(e.path, "/api/graphql");
        assert_eq!(e.schema.as_deref(), Some(Path::new("/etc/palisade/schema.graphql")));
        assert_eq!(e.mode, Mode::Monitor);
        assert_eq!(
            e.limits,
            Limits {
                max_depth: 8,
                max_aliases: 5,
                max_root_fields: 3,
                max_fields: 200,
                max_directives: 4,
                max_field_repeat: 2,
                max_batch: 0,
                max_query_bytes: 8192,
                introspection: true
            }
        );
        assert_eq!(e.max_violations, 9);
    }

    #[test]
    fn a_list_of_endpoints() {
        let s = decode_str("- {path: /graphql/}\n- {path: /admin/graphql, introspection: allow}\n").unwrap();
        assert_eq!(s.endpoints.iter().map(|e| e.path.as_str()).collect::<Vec<_>>(), ["/graphql", "/admin/graphql"]);
        assert!(s.endpoints[1].limits.introspection && !s.endpoints[0].limits.introspection);
        let errs = decode_str("- {path: /g}\n- {path: /g}\n").unwrap_err();
        assert!(errs[0].contains("two endpoints on the path `/g`"), "{errs:?}");
    }

    #[test]
    fn every_problem_is_reported_with_its_place() {
        let errs = decode_str("path: graphql\nmode: blok\nmax_depth: -1\nintrospection: yes\nmax_dept: 3\n").unwrap_err();
        let all = errs.join("\n");
        assert!(all.contains("test.yaml:1:7: apps[0].graphql.path"), "{all}");
        assert!(all.contains("apps[0].graphql.mode"), "{all}");
        assert!(all.contains("apps[0].graphql.max_depth"), "{all}");
        assert!(all.contains("apps[0].graphql.introspection"), "{all}");
        assert!(all.contains("did you mean `max_depth`"), "{all}");
        assert_eq!(errs.len(), 5, "{all}");
    }
}
