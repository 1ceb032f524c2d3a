//! The values a GraphQL request really carries, for attack detection: string literals in
//! arguments (of fields and directives, at any depth of lists and input objects) and in
//! variable defaults, and every string and object key of `variables`, `extensions` and any
//! other member of the request object. The query text itself is not handed over as prose:
//! names are confined to `[_A-Za-z][_0-9A-Za-z]*` by the grammar, numbers and enum values
//! cannot carry a payload, and comments are ignored by servers.
//!
//! Locations: `graphql.query.user.posts.filter` for a literal of an operation (field names
//! from the root, then the argument and input fields), `graphql.fragment.Name.field.arg` for
//! one in a fragment, `graphql.variables.input.body` for JSON; batch entries are
//! `graphql[2]....`.

use palisade_core::ProtocolValue;
use serde_json::{Map, Value as Json};

use crate::doc::{Document, Selection, Value};

use crate::request::GraphqlRequest;

/// Append the string literals of a document (every operation and fragment) to `out`, as
/// (location, value) with locations under `prefix`.
pub fn collect_document(doc: &Document<'_>, prefix: &str, out: &mut Vec<(String, String)>) {
    let mut found = Vec::new();
    for op in &doc.operations {
        let base = format!("{prefix}.{}", op.kind.as_str());
        for v in &op.variables {
            if let Some(d) = &v.default {
                literal(d, &format!("{prefix}.variables.{}", v.name), &mut found);
            }
        }
        selections(&op.selections, &base, &mut found);
    }
    for f in &doc.fragments {
        selections(&f.selections, &format!("{prefix}.fragment.{}", f.name), &mut found);
    }
    out.extend(found.into_iter().map(|v| (v.location, v.value)));
}

/// Append the JSON members of one request (`operationName`, `variables`, `extensions` and any
/// other member) to `out`.
pub fn collect_json(r: &GraphqlRequest, prefix: &str, out: &mut Vec<ProtocolValue>) {
    if let Some(name) = &r.operation_name {
        out.push(ProtocolValue { location: format!("{prefix}.operationName"), value: name.clone(), key: false });
    }
    for (member, map) in [("variables", r.variables.as_ref()), ("extensions", r.extensions.as_ref()), ("", Some(&r.extra))] {
        if let Some(map) = map {
            let base = if member.is_empty() { prefix.to_string() } else { format!("{prefix}.{member}") };
            object(map, &base, out);
        }
    }
}

fn selections(sels: &[Selection<'_>], base: &str, out: &mut Vec<ProtocolValue>) {
    for s in sels {
        match s {
            Selection::Field(f) => {
                let here = format!("{base}.{}", f.name);
                for (name, v) in &f.arguments {
                    literal(v, &format!("{here}.{name}"), out);
                }
                for d in &f.directives {
                    for (name, v) in &d.arguments {
                        literal(v, &format!("{here}.@{}.{name}", d.name), out);
                    }
                }
                selections(&f.selections, &here, out);
            }
            Selection::Spread { directives, .. } => {
                for d in directives {
                    for (name, v) in &d.arguments {
                        literal(v, &format!("{base}.@{}.{name}", d.name), out);
                    }
                }
            }
            Selection::Inline { directives, selections: inner, .. } => {
                for d in directives {
                    for (name, v) in &d.arguments {
                        literal(v, &format!("{base}.@{}.{name}", d.name), out);
                    }
                }
                selections(inner, base, out);
            }
        }
    }
}

fn literal(v: &Value<'_>, at: &str, out: &mut Vec<ProtocolValue>) {
    match v {
        Value::String(s) if !s.is_empty() => out.push(ProtocolValue { location: at.to_string(), value: s.to_string(), key: false }),
        Value::List(items) => items.iter().enumerate().for_each(|(i, item)| literal(item, &format!("{at}.{i}"), out)),
        Value::Object(fields) => fields.iter().for_each(|(k, item)| literal(item, &format!("{at}.{k}"), out)),
        _ => {}
    }
}

fn object(map: &Map<String, Json>, at: &str, out: &mut Vec<ProtocolValue>) {
    for (k, v) in map {
        let here = format!("{at}.{k}");
        out.push(ProtocolValue { location: here.clone(), value: k.clone(), key: true });
        json(v, &here, out);
    }
}

fn json(v: &Json, at: &str, out: &mut Vec<ProtocolValue>) {
    match v {
        Json::String(s) if !s.is_empty() => out.push(ProtocolValue { location: at.to_string(), value: s.clone(), key: false }),
        Json::Array(items) => items.iter().enumerate().for_each(|(i, item)| json(item, &format!("{at}.{i}"), out)),
        Json::Object(m) => object(m, at, out),
        _ => {}
    }
}
