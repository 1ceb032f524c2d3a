//! Schema resources of a document: `$id` base URIs (and draft 4 `id` in the 3.0 dialect),
//! `$anchor` and `$dynamicAnchor` names, found before compiling so that a reference to any of
//! them resolves wherever it is, and the base URI of any place (JSON Schema 2020-12 §8.2).
//!
//! Only schema keywords are looked into (an `$id` inside `enum`, `const`, `default`, examples
//! or an unknown keyword is data). In an OpenAPI document, everything but examples,
//! defaults and `x-` extensions is looked into, and schemas start at `schema` and under
//! `schemas`.

use std::collections::HashMap;

use palisade_config::yaml::{Node, Value};

/// What one document defines.
#[derive(Debug, Default)]
pub(crate) struct DocIndex {
    /// The document's own base URI (its location; empty when unknown).
    pub base: String,
    /// `(absolute URI without fragment, pointer of the resource root)`, the document root
    /// first.
    pub resources: Vec<(String, String)>,
    /// `(resource URI, anchor name)` → pointer; `$dynamicAnchor`s are anchors too.
    pub anchors: HashMap<(String, String), String>,
    /// Per resource URI: its `$dynamicAnchor` names and their pointers.
    pub dynamic: HashMap<String, Vec<(String, String)>>,
}

impl DocIndex {
    /// The base URI in force at `pointer`: that of the innermost resource containing it.
    pub fn base_at(&self, pointer: &str) -> &str {
        let mut best: Option<&(String, String)> = None;
        for r in &self.resources {
            let inside = pointer == r.1 || (pointer.starts_with(r.1.as_str()) && pointer.as_bytes().get(r.1.len()) == Some(&b'/'));
            if inside && best.is_none_or(|b| r.1.len() >= b.1.len()) {
                best = Some(r);
            }
        }
        best.map_or(self.base.as_str(), |r| r.0.as_str())
    }
}

/// Resolve `reference` (no fragment) against `base` (RFC 3986 §5.2, with dot-segment
/// removal; `urn:` and other absolute URIs stand alone).
pub(crate) fn join(base: &str, reference: &str) -> String {
    if reference.is_empty() {
        return base.to_string();
    }
    let has_scheme = |s: &str| {
        s.find(':').is_some_and(|i| i > 0 && s[..i].bytes().all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b)) && s.as_bytes()[0].is_ascii_alphabetic())
    };
    if has_scheme(reference) || base.is_empty() {
        return reference.to_string();
    }
    if !base.contains("://") {
        // urn: and the like have no hierarchy to resolve against
        return if has_scheme(base) { reference.to_string() } else { format!("{}{reference}", base.rfind('/').map_or("", |i| &base[..=i])) };
    }
    let scheme_end = base.find("://").map_or(0, |i| i + 3);
    let auth_end = base[scheme_end..].find('/').map_or(base.len(), |i| scheme_end + i);
    if let Some(rest) = reference.strip_prefix("//") {
        return format!("{}{rest}", &base[..scheme_end]);
    }
    let path = if reference.starts_with('/') {
        reference.to_string()
    } else {
        let base_path = &base[auth_end..];
        let dir = base_path.rfind('/').map_or("/", |i| &base_path[..=i]);
        format!("{dir}{reference}")
    };
    let mut out: Vec<&str> = Vec::new();
    let segs: Vec<&str> = path.split('/').skip(1).collect();
    for (i, s) in segs.iter().enumerate() {
        let last = i + 1 == segs.len();
        match *s {
            "." | ".." => {
                if *s == ".." {
                    out.pop();
                }
                if last {
                    out.push("");
                }
            }
            s => out.push(s),
        }
    }
    format!("{}/{}", &base[..auth_end], out.join("/"))
}

fn push(pointer: &str, token: &str) -> String {
    format!("{pointer}/{}", token.replace('~', "~0").replace('/', "~1"))
}

/// Index the document `root` whose base URI is `base`.
pub(crate) fn index(root: &Node, base: &str, oas30: bool) -> DocIndex {
    let mut idx = DocIndex { base: base.to_string(), resources: vec![(base.to_string(), String::new())], ..DocIndex::default() };
    // A document that is one schema is read by its keywords only; any other (an OpenAPI
    // document, a file of named schemas) is looked into everywhere but its data.
    let strict = match &root.value {
        Value::Map(m) => !m.is_empty() && root.get("openapi").is_none() && m.iter().any(|(k, _)| SCHEMA_ROOT_KEYS.contains(&k.name.as_str())),
        _ => true,
    };
    scan(root, "", base, &mut idx, oas30, strict);
    idx
}

const SCHEMA_ROOT_KEYS: &[&str] = &[
    "$schema",
    "$id",
    "$ref",
    "$defs",
    "definitions",
    "$anchor",
    "$dynamicAnchor",
    "$dynamicRef",
    "type",
    "properties",
    "items",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "if",
    "enum",
    "const",
    "required",
    "additionalProperties",
];

/// Keys whose values are data, never schemas.
const DATA: &[&str] = &["example", "examples", "default", "enum", "const"];

/// Keywords whose value is a schema (or a list of schemas: draft 4 `items`).
const ONE: &[&str] = &[
    "items",
    "additionalItems",
    "additionalProperties",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contentSchema",
    "allOf",
    "anyOf",
    "oneOf",
    "prefixItems",
];
/// Keywords whose value maps names to schemas.
const MAP: &[&str] = &["properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies"];

fn scan(node: &Node, pointer: &str, base: &str, idx: &mut DocIndex, oas30: bool, strict: bool) {
    let entries = match &node.value {
        Value::Map(m) => m,
        Value::Seq(items) => {
            for (i, v) in items.iter().enumerate() {
                scan(v, &format!("{pointer}/{i}"), base, idx, oas30, strict);
            }
            return;
        }
        _ => return,
    };
    if oas30 && node.get("$ref").is_some() {
        return; // draft 4: the siblings of `$ref` are ignored, `id` included
    }
    let mut base = base.to_string();
    // draft 4's `id` only in a document that is a schema: in an OpenAPI document it is a
    // common property name and data key
    let id = node.get("$id").or_else(|| if oas30 && strict { node.get("id") } else { None });
    if let Some(Value::Str(id)) = id.map(|n| &n.value) {
        let (uri, fragment) = id.split_once('#').unwrap_or((id.as_str(), ""));
        if !uri.is_empty() {
            base = join(&base, uri);
            idx.resources.push((base.clone(), pointer.to_string()));
        }
        if oas30 && !fragment.is_empty() && !fragment.starts_with('/') {
            idx.anchors.insert((base.clone(), fragment.to_string()), pointer.to_string());
        }
    }
    if let Some(Value::Str(a)) = node.get("$anchor").map(|n| &n.value) {
        idx.anchors.insert((base.clone(), a.clone()), pointer.to_string());
    }
    if let Some(Value::Str(a)) = node.get("$dynamicAnchor").map(|n| &n.value) {
        idx.anchors.entry((base.clone(), a.clone())).or_insert_with(|| pointer.to_string());
        idx.dynamic.entry(base.clone()).or_default().push((a.clone(), pointer.to_string()));
    }
    for (k, v) in entries {
        let key = k.name.as_str();
        let p = push(pointer, key);
        if strict {
            if ONE.contains(&key) {
                scan(v, &p, &base, idx, oas30, true);
            } else if MAP.contains(&key) {
                if let Value::Map(m) = &v.value {
                    for (sk, sv) in m {
                        scan(sv, &push(&p, &sk.name), &base, idx, oas30, true);
                    }
                }
            }
        } else if !key.starts_with("x-") && !DATA.contains(&key) {
            scan(v, &p, &base, idx, oas30, false);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joins_references() {
        assert_eq!(join("http://x.example/a/b.json", "c.json"), "http://x.example/a/c.json");
        assert_eq!(join("http://x.example/a/b.json", "../c.json"), "http://x.example/c.json");
        assert_eq!(join("http://x.example/a/", "/root"), "http://x.example/root");
        assert_eq!(join("http://x.example/a/b", "urn:uuid:1"), "urn:uuid:1");
        assert_eq!(join("urn:uuid:1", "x.json"), "x.json");
        assert_eq!(join("", "x.json"), "x.json");
        assert_eq!(join("http://x.example/a/b", ""), "http://x.example/a/b");
        assert_eq!(join("http://x.example/a/b", "//y.example/z"), "http://y.example/z");
    }

    #[test]
    fn resources_anchors_and_bases() {
        let doc = palisade_config::yaml::parse(
            "$id: http://x.example/root.json\n$defs:\n  a: {$id: a/b.json, $anchor: here, properties: {p: {$id: c.json}}}\n  d: {$dynamicAnchor: meta}\nenum: [{$id: http://nope.example/}]\n",
        )
        .unwrap();
        let idx = index(&doc, "", false);
        assert_eq!(idx.base_at("/$defs/a/properties/p/type"), "http://x.example/a/c.json");
        assert_eq!(idx.base_at("/$defs/a/$ref"), "http://x.example/a/b.json");
        assert_eq!(idx.base_at("/$defs/d"), "http://x.example/root.json");
        assert_eq!(idx.anchors.get(&("http://x.example/a/b.json".into(), "here".into())).map(String::as_str), Some("/$defs/a"));
        assert_eq!(idx.dynamic["http://x.example/root.json"], [("meta".to_string(), "/$defs/d".to_string())]);
        assert!(!idx.resources.iter().any(|r| r.0.contains("nope")), "an $id in enum is data");
    }
}
