//! Keyword tables for both dialects (valid and invalid instances), with an in-test resolver
//! over one or two YAML documents.

use super::*;
use palisade_config::yaml;
use palisade_json::{parse_into, Limits, Tape};

/// Documents by name; `$ref`s are `#/pointer` (same document) or `name#/pointer`.
pub(crate) struct TestResolver {
    pub docs: Vec<(String, Node)>,
}

fn pointer_get<'a>(mut node: &'a Node, pointer: &str) -> Result<&'a Node, String> {
    if pointer.is_empty() {
        return Ok(node);
    }
    let Some(rest) = pointer.strip_prefix('/') else { return Err(format!("not a JSON pointer: {pointer:?}")) };
    for raw in rest.split('/') {
        let token = raw.replace("~1", "/").replace("~0", "~");
        node = match &node.value {
            yaml::Value::Map(_) => node.get(&token).ok_or_else(|| format!("no {token:?} in {pointer:?}"))?,
            yaml::Value::Seq(items) => token.parse::<usize>().ok().and_then(|i| items.get(i)).ok_or_else(|| format!("no item {token:?} in {pointer:?}"))?,
            _ => return Err(format!("{pointer:?} goes through a scalar")),
        };
    }
    Ok(node)
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let Ok(v) = u8::from_str_radix(&s[i + 1..i + 3], 16) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8(out).unwrap()
}

impl Resolver for TestResolver {
    fn resolve(&self, base: DocId, reference: &str) -> Result<Resolved<'_>, String> {
        let (file, frag) = reference.split_once('#').unwrap_or((reference, ""));
        let doc = if file.is_empty() { base } else { self.docs.iter().position(|(n, _)| n == file).ok_or_else(|| format!("no document {file:?}"))? as DocId };
        let pointer = percent_decode(frag);
        if !pointer.is_empty() && !pointer.starts_with('/') {
            return Err(format!("{frag:?} is not a JSON pointer"));
        }
        let node = pointer_get(&self.docs[doc as usize].1, &pointer)?;
        Ok(Resolved { doc, pointer, node })
    }
}

pub(crate) fn resolver(docs: &[(&str, &str)]) -> TestResolver {
    TestResolver { docs: docs.iter().map(|(n, t)| (n.to_string(), yaml::parse(t).unwrap_or_else(|e| panic!("yaml: {e:?}")))).collect() }
}

/// Compile `#/<pointer>` of the first document.
fn build(dialect: Dialect, docs: &[(&str, &str)], pointer: &str) -> Result<(Schemas, SchemaId), Vec<SchemaError>> {
    let r = resolver(docs);
    let mut c = Compiler::new(dialect, &r);
    let node = pointer_get(&r.docs[0].1, pointer).unwrap();
    let id = c.compile(0, pointer, node);
    let s = c.finish()?;
    Ok((s, id))
}

fn one(dialect: Dialect, schema: &str) -> (Schemas, SchemaId) {
    build(dialect, &[("main", &format!("s: {schema}"))], "/s").unwrap_or_else(|e| panic!("compile {schema}: {e:?}"))
}

fn opts(direction: Direction) -> Options {
    Options { direction, shadow_unknown: false, max_violations: 100 }
}

fn run(s: &Schemas, id: SchemaId, json: &str, o: &Options) -> (bool, Vec<Violation>) {
    let mut tape = Tape::default();
    parse_into(json.as_bytes(), &mut tape, &Limits::default()).unwrap_or_else(|e| panic!("bad test JSON {json}: {e}"));
    let mut out = Vec::new();
    let ok = s.validate(id, &tape, json.as_bytes(), o, &mut out);
    (ok, out)
}

/// Each case: instance JSON, expected validity, and (for invalid ones) the keyword expected
/// among the violations.
fn table(dialect: Dialect, schema: &str, cases: &[(&str, Option<&str>)]) {
    let (s, id) = one(dialect, schema);
    for (json, expect) in cases {
        let (ok, v) = run(&s, id, json, &opts(Direction::Request));
        match expect {
            None => assert!(ok && v.is_empty(), "{dialect:?} {schema}: {json} should be valid, got {v:?}"),
            Some(kw) => {
                assert!(!ok, "{dialect:?} {schema}: {json} should be invalid");
                assert!(v.iter().any(|x| x.keyword == *kw), "{dialect:?} {schema}: {json}: expected keyword {kw}, got {v:?}");
            }
        }
    }
}

const V: Option<&str> = None;

#[test]
fn smoke_oas30_object() {
    table(
        Dialect::Oas30,
        "{type: object, required: [id], additionalProperties: false, properties: {id: {type: integer, minimum: 1}, name: {type: string, maxLength: 3}}}",
        &[
            (r#"{"id": 1}"#, V),
            (r#"{"id": 1, "name": "abc"}"#, V),
            (r#"{"id": 0}"#, Some("minimum")),
            (r#"{"name": "a"}"#, Some("required")),
            (r#"{"id": 1, "name": "abcd"}"#, Some("maxLength")),
            (r#"{"id": 1, "x": 1}"#, Some("additionalProperties")),
            (r#"{"id": "1"}"#, Some("type")),
            (r#"[]"#, Some("type")),
        ],
    );
}
