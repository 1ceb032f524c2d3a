//! A small YAML document tree that remembers where every node came from (line and column, or
//! the environment variable that overrode it), so that every configuration problem can be
//! reported precisely. Built from `saphyr-parser`'s events.

use std::fmt;

use saphyr::Scalar;

use crate::json::{self, Duplicates, Stop};
use saphyr_parser::{Event, Marker, Parser};

/// Where a node's value came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// 1-based line and column in the file.
    File { line: usize, col: usize },
    /// Set or replaced by an environment variable.
    Env(String),
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::File { line, col } => write!(f, "{line}:{col}"),
            Origin::Env(var) => write!(f, "environment variable {var}"),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Seq(Vec<Node>),
    Map(Vec<(Key, Node)>),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Key {
    pub name: String,
    pub origin: Origin,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    pub origin: Origin,
    pub value: Value,
}

/// A syntax error (YAML or JSON), with its position.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyntaxError {
    pub line: usize,
    pub col: usize,
    pub message: String,
}

impl Node {
    pub fn kind(&self) -> &'static str {
        match self.value {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Int(_) => "an integer",
            Value::Float(_) => "a number",
            Value::Str(_) => "a string",
            Value::Seq(_) => "a list",
            Value::Map(_) => "a mapping",
        }
    }

    pub fn get(&self, key: &str) -> Option<&Node> {
        match &self.value {
            Value::Map(entries) => entries.iter().find(|(k, _)| k.name == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// Scalar rendered as text (numbers and booleans too); `None` for collections and null.
    pub fn scalar_text(&self) -> Option<String> {
        match &self.value {
            Value::Bool(b) => Some(b.to_string()),
            Value::Int(i) => Some(i.to_string()),
            Value::Float(f) => Some(f.to_string()),
            Value::Str(s) => Some(s.clone()),
            _ => None,
        }
    }
}

/// Parse one YAML document. An empty document is an empty mapping. Nesting is limited to
/// [`MAX_DEPTH`] levels (enough for configuration files).
pub fn parse(text: &str) -> Result<Node, SyntaxError> {
    parse_with_max_depth(text, MAX_DEPTH)
}

/// Like [`parse`] with another nesting limit: API specs (OpenAPI documents, whose schemas nest
/// deeply) use a higher one. JSON is read too, as the YAML 1.2 subset it is (by
/// [`crate::json`]'s reader, with the YAML reader's positions, nesting limit and refusal of
/// repeated keys).
///
/// The tree is built straight from the parser's events: no intermediate document, so that the
/// memory a document takes is this tree's (a few times the text's size) and nothing more.
pub fn parse_with_max_depth(text: &str, max_depth: usize) -> Result<Node, SyntaxError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    // A JSON document (most large specs) goes through the JSON parser: the YAML parser holds
    // every token of a flow collection until it closes, many times the text's size for a
    // document that is one big `{...}`. Anything that is not strict JSON is read as YAML.
    if text.trim_start().starts_with(['{', '[']) {
        match json::read(text, max_depth + 1, Duplicates::Refuse) {
            Ok(node) => return Ok(node),
            Err(Stop::Duplicate(e)) => return Err(e),
            Err(Stop::Refused(_)) => {}
        }
    }
    parse_yaml(text, max_depth)
}

fn parse_yaml(text: &str, max_depth: usize) -> Result<Node, SyntaxError> {
    let ascii = text.is_ascii();
    let mut b = Builder { stack: Vec::new(), root: None, documents: 0 };
    for item in Parser::new_from_str(text) {
        let (ev, span) = item.map_err(|e| SyntaxError { line: e.marker().line(), col: e.marker().col() + 1, message: e.info().to_string() })?;
        let at = |m: &Marker| (m.line(), m.col() + 1);
        match ev {
            Event::DocumentStart(_) => {
                b.documents += 1;
                if b.documents > 1 {
                    let (line, col) = at(&span.start);
                    return Err(SyntaxError { line, col, message: "only one YAML document is allowed".into() });
                }
            }
            Event::Alias(_) => {
                let (line, col) = at(&span.start);
                return Err(SyntaxError { line, col, message: "YAML aliases are not supported".into() });
            }
            Event::Scalar(v, style, _, tag) => {
                let (line, col) = at(&span.start);
                let origin = Origin::File { line, col };
                let value = match Scalar::parse_from_cow_and_metadata(v, style, tag.as_ref()) {
                    // An integer too big for i64 would lose digits as a float: keep its text
                    // (schema bounds compare it exactly).
                    Some(Scalar::FloatingPoint(f)) => match big_integer_text(text, ascii, span.start.index(), span.end.index()) {
                        Some(digits) => Value::Str(digits),
                        None => Value::Float(f.into_inner()),
                    },
                    Some(Scalar::Null) => Value::Null,
                    Some(Scalar::Boolean(v)) => Value::Bool(v),
                    Some(Scalar::Integer(i)) => Value::Int(i),
                    // The parser's strings grow as they are read: keep only their text.
                    Some(Scalar::String(s)) => Value::Str(compact(s.into_owned())),
                    None => return Err(SyntaxError { line, col, message: "invalid YAML value".into() }),
                };
                b.add(Node { origin, value })?;
            }
            Event::SequenceStart(..) | Event::MappingStart(..) => {
                let (line, col) = at(&span.start);
                if b.stack.len() > max_depth {
                    return Err(SyntaxError { line, col, message: format!("nesting deeper than {max_depth} levels") });
                }
                let map = matches!(ev, Event::MappingStart(..));
                b.stack.push(Frame { origin: Origin::File { line, col }, map, items: Vec::new(), entries: Vec::new(), key: None, keys: KeyIndex::default() });
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let mut f = b.stack.pop().expect("the parser balances collections");
                // Most collections are small: growth leaves up to half their room unused.
                f.entries.shrink_to_fit();
                f.items.shrink_to_fit();
                let value = if f.map { Value::Map(f.entries) } else { Value::Seq(f.items) };
                b.add(Node { origin: f.origin, value })?;
            }
            Event::StreamStart | Event::StreamEnd | Event::DocumentEnd | Event::Nothing => {}
        }
    }
    Ok(b.root.unwrap_or(Node { origin: Origin::File { line: 1, col: 1 }, value: Value::Map(Vec::new()) }))
}

/// `s` without spare capacity (scalars are most of a document's allocations).
fn compact(mut s: String) -> String {
    s.shrink_to_fit();
    s
}

/// Nesting limit of [`parse`].
pub const MAX_DEPTH: usize = 64;

/// A collection being built.
struct Frame {
    origin: Origin,
    map: bool,
    items: Vec<Node>,
    entries: Vec<(Key, Node)>,
    /// A mapping's key waiting for its value.
    key: Option<Key>,
    keys: KeyIndex,
}

struct Builder {
    stack: Vec<Frame>,
    root: Option<Node>,
    documents: usize,
}

fn key_hash(name: &str) -> u64 {
    use std::hash::{BuildHasher, BuildHasherDefault};
    BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default().hash_one(name)
}

/// Mappings with more keys than this index them to find duplicates.
const SCAN_KEYS: usize = 16;

/// The keys of a mapping being built, to find a repeated one: compared one by one while the
/// mapping is small, then through the hashes of the keys (to the first entry with that hash),
/// without a quadratic scan and without copying the keys.
#[derive(Default)]
pub(crate) struct KeyIndex {
    names: Option<std::collections::HashMap<u64, usize>>,
}

impl KeyIndex {
    /// The error for a key `name` at `origin` when `entries` has it already.
    pub(crate) fn check(&self, entries: &[(Key, Node)], name: &str, origin: &Origin) -> Option<SyntaxError> {
        let first = match &self.names {
            // A hash shared by two different keys is rare: then the keys are compared.
            Some(names) => {
                names.get(&key_hash(name)).and_then(|&i| if entries[i].0.name == name { Some(i) } else { entries.iter().position(|(k, _)| k.name == name) })
            }
            None => entries.iter().position(|(k, _)| k.name == name),
        }?;
        let (line, col) = match origin {
            Origin::File { line, col } => (*line, *col),
            Origin::Env(_) => (0, 0),
        };
        Some(SyntaxError { line, col, message: format!("duplicate key `{name}` (first at {})", entries[first].0.origin) })
    }

    /// Notes that the entry about to be added after `entries` is named `name`.
    pub(crate) fn add(&mut self, entries: &[(Key, Node)], name: &str) {
        let i = entries.len();
        if self.names.is_none() && i + 1 > SCAN_KEYS {
            let mut names = std::collections::HashMap::with_capacity(2 * SCAN_KEYS);
            for (j, (k, _)) in entries.iter().enumerate() {
                names.entry(key_hash(&k.name)).or_insert(j);
            }
            self.names = Some(names);
        }
        if let Some(names) = &mut self.names {
            names.entry(key_hash(name)).or_insert(i);
        }
    }
}

impl Builder {
    fn add(&mut self, node: Node) -> Result<(), SyntaxError> {
        let Some(f) = self.stack.last_mut() else {
            self.root = Some(node);
            return Ok(());
        };
        if !f.map {
            f.items.push(node);
            return Ok(());
        }
        let Some(key) = f.key.take() else {
            let name = match node.value {
                Value::Str(s) => s,
                Value::Int(i) => i.to_string(),
                Value::Bool(b) => b.to_string(),
                _ => {
                    let Origin::File { line, col } = node.origin else { unreachable!() };
                    return Err(SyntaxError { line, col, message: "mapping keys must be plain strings".into() });
                }
            };
            if let Some(e) = f.keys.check(&f.entries, &name, &node.origin) {
                return Err(e);
            }
            f.key = Some(Key { name, origin: node.origin });
            return Ok(());
        };
        f.keys.add(&f.entries, &key.name);
        f.entries.push((key, node));
        Ok(())
    }
}

/// The source text of a scalar spanning the characters `start..end` when it is an integer
/// literal (`-?[0-9]+`) that does not fit in an `i64`.
fn big_integer_text(text: &str, ascii: bool, start: usize, end: usize) -> Option<String> {
    let slice = if ascii {
        text.get(start..end)?
    } else {
        let mut it = text.char_indices().map(|(i, _)| i).chain(std::iter::once(text.len()));
        let s = it.nth(start)?;
        let e = if end > start { it.nth(end - start - 1)? } else { s };
        &text[s..e]
    };
    let slice = slice.trim();
    let digits = slice.strip_prefix(['-', '+']).unwrap_or(slice);
    let integer = !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit());
    (integer && slice.parse::<i64>().is_err()).then(|| slice.trim_start_matches('+').to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The JSON path gives the tree the YAML parser gives (values, kinds and positions).
    #[test]
    fn json_and_yaml_parsers_agree() {
        let texts = [
            "{\"a\": 1, \"b\": [true, null, -0, 1.5, 1e3, \"x\\u00e9\\n\"], \"c\": {}}",
            "[\n  {\"k\": \"é\", \"n\": 123456789012345678901234567890},\n  [[], {\"z\": -9223372036854775808}]\n]",
            "  {\n\"200\": {\"description\": \"ok\"},\n \"€uro\": \"💶\", \"t\": \"tab\\there\"}\n",
        ];
        for t in texts {
            let json = json::read(t, MAX_DEPTH + 1, Duplicates::Refuse).ok().expect("strict JSON");
            assert_eq!(json, parse_yaml(t, MAX_DEPTH).unwrap(), "{t}");
        }
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/openapi-specs");
        match std::fs::read_to_string(dir.join("oai30-petstore-expanded.json")) {
            Ok(t) => assert_eq!(json::read(&t, 513, Duplicates::Refuse).ok().unwrap(), parse_yaml(&t, 512).unwrap()),
            Err(_) => eprintln!("skipped the petstore spec: ../shared is not here"),
        }
    }

    #[test]
    fn json_keeps_the_rules_of_the_tree() {
        let e = parse("{\"a\": 1, \"b\": 2, \"a\": 3}").unwrap_err();
        assert_eq!((e.line, e.col), (1, 18));
        assert!(e.message.contains("duplicate key `a` (first at 1:2)"), "{}", e.message);
        let deep = format!("{}{}", "[".repeat(MAX_DEPTH + 2), "]".repeat(MAX_DEPTH + 2));
        assert!(parse(&deep).unwrap_err().message.contains("nesting deeper than"));
        // Not strict JSON: read as YAML.
        assert_eq!(parse("{a: 1}").unwrap().get("a").map(|n| n.value.clone()), Some(Value::Int(1)));
    }

    #[test]
    fn yaml_duplicate_keys_are_errors() {
        let mut text = String::new();
        for i in 0..40 {
            text.push_str(&format!("k{i}: {i}\n"));
        }
        text.push_str("k7: again\n");
        let e = parse(&text).unwrap_err();
        assert_eq!((e.line, e.col), (41, 1));
        assert!(e.message.contains("duplicate key `k7` (first at 8:1)"), "{}", e.message);
    }
}
