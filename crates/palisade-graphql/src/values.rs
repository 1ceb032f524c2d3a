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

use crate::doc::{Dirs, Document, Selection, Set, Value};

use crate::request::GraphqlRequest;

/// Append the string literals of a document (every operation and fragment) to `out`, as
/// (location, value) with locations under `prefix`. One path buffer grows and shrinks along the
/// walk; a location is materialised only for a literal found.
pub fn collect_document(doc: &Document<'_>, prefix: &str, out: &mut Vec<(String, String)>) {
    let mut path = String::with_capacity(128);
    for op in &doc.operations {
        for v in &op.variables {
            if let Some(d) = &v.default {
                path.clear();
                path.push_str(prefix);
                path.push_str(".variables.");
                path.push_str(v.name);
                literal(d, &mut path, out);
            }
        }
        path.clear();
        path.push_str(prefix);
        path.push('.');
        path.push_str(op.kind.as_str());
        selections(doc, op.selections, &mut path, out);
    }
    for f in &doc.fragments {
        path.clear();
        path.push_str(prefix);
        path.push_str(".fragment.");
        path.push_str(f.name);
        selections(doc, f.selections, &mut path, out);
    }
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

/// `path.seg` for the duration of `f`.
fn under<R>(path: &mut String, seg: &str, f: impl FnOnce(&mut String) -> R) -> R {
    let len = path.len();
    path.push('.');
    path.push_str(seg);
    let r = f(path);
    path.truncate(len);
    r
}

fn directive_values(doc: &Document<'_>, ds: Dirs, path: &mut String, out: &mut Vec<(String, String)>) {
    for d in doc.dirs(ds) {
        for (name, v) in doc.args(d.arguments) {
            let len = path.len();
            path.push_str(".@");
            path.push_str(d.name);
            under(path, name, |p| literal(v, p, out));
            path.truncate(len);
        }
    }
}

/// The literals of a set; a set without any is not walked.
fn selections(doc: &Document<'_>, set: Set, path: &mut String, out: &mut Vec<(String, String)>) {
    if !set.literals {
        return;
    }
    for s in doc.set(set) {
        match s {
            Selection::Field(f) => under(path, f.name, |path| {
                for (name, v) in doc.args(f.arguments) {
                    under(path, name, |p| literal(v, p, out));
                }
                directive_values(doc, f.directives, path, out);
                selections(doc, f.selections, path, out);
            }),
            Selection::Spread { directives, .. } => directive_values(doc, *directives, path, out),
            Selection::Inline { directives, selections: inner, .. } => {
                directive_values(doc, *directives, path, out);
                selections(doc, *inner, path, out);
            }
        }
    }
}

fn literal(v: &Value<'_>, path: &mut String, out: &mut Vec<(String, String)>) {
    match v {
        Value::String(s) if !s.is_empty() => out.push((path.clone(), s.to_string())),
        Value::List(items) => {
            let mut n = itoa_buf();
            items.iter().enumerate().for_each(|(i, item)| under(path, index(&mut n, i), |p| literal(item, p, out)))
        }
        Value::Object(fields) => fields.iter().for_each(|(k, item)| under(path, k, |p| literal(item, p, out))),
        _ => {}
    }
}

fn itoa_buf() -> String {
    String::with_capacity(8)
}

fn index(buf: &mut String, i: usize) -> &str {
    use std::fmt::Write;
    buf.clear();
    let _ = write!(buf, "{i}");
    buf
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
