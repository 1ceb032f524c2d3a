//! A small YAML document tree that remembers where every node came from (line and column, or
//! the environment variable that overrode it), so that every configuration problem can be
//! reported precisely. Built from `saphyr-parser`'s events.

use std::fmt;

use saphyr::Scalar;
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

/// A YAML syntax error, with its position.
#[derive(Clone, Debug)]
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
/// deeply) use a higher one. JSON is read too, as the YAML 1.2 subset it is.
///
/// The tree is built straight from the parser's events: no intermediate document, so that the
/// memory a document takes is this tree's (a few times the text's size) and nothing more.
pub fn parse_with_max_depth(text: &str, max_depth: usize) -> Result<Node, SyntaxError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    // A JSON document (most large specs) goes through the JSON parser: the YAML parser holds
    // every token of a flow collection until it closes, many times the text's size for a
    // document that is one big `{...}`. Anything that is not strict JSON is read as YAML.
    if text.trim_start().starts_with(['{', '[']) {
        if let Some(node) = parse_json(text, max_depth) {
            return node;
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
                b.stack.push(Frame { origin: Origin::File { line, col }, map, items: Vec::new(), entries: Vec::new(), key: None, names: None });
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

/// The tree of a strict JSON text, with the positions the YAML parser would give (strings at
/// their opening quote); `None` when `text` is not strict JSON.
fn parse_json(text: &str, max_depth: usize) -> Option<Result<Node, SyntaxError>> {
    let mut tape = palisade_json::Tape::default();
    let limits = palisade_json::Limits { max_depth: u32::try_from(max_depth + 1).unwrap_or(u32::MAX), max_tokens: usize::MAX };
    palisade_json::parse_into(text.as_bytes(), &mut tape, &limits).ok()?;
    let mut b = Builder { stack: Vec::new(), root: None, documents: 1 };
    let mut at = Cursor { text: text.as_bytes(), offset: 0, line: 1, col: 1 };
    Some(json_node(&mut b, &mut at, tape.root(text.as_bytes())).map(|()| b.root.expect("a JSON text has a value")))
}

/// Line and column of byte offsets visited in increasing order (linear over the text).
struct Cursor<'a> {
    text: &'a [u8],
    offset: usize,
    line: usize,
    col: usize,
}

impl Cursor<'_> {
    fn origin(&mut self, offset: usize) -> Origin {
        for &b in &self.text[self.offset..offset] {
            if b == b'\n' {
                self.line += 1;
                self.col = 1;
            } else if b & 0xC0 != 0x80 {
                self.col += 1;
            }
        }
        self.offset = offset;
        Origin::File { line: self.line, col: self.col }
    }
}

fn json_node(b: &mut Builder, at: &mut Cursor<'_>, v: palisade_json::ValueRef<'_>) -> Result<(), SyntaxError> {
    use palisade_json::Kind;
    let kind = v.kind();
    // Strings start at their opening quote.
    let origin = at.origin(if kind == Kind::String { v.offset() - 1 } else { v.offset() });
    let value = match kind {
        Kind::Null => Value::Null,
        Kind::Bool => Value::Bool(v.as_bool().unwrap_or(false)),
        Kind::String => Value::Str(v.as_str().unwrap_or_default().into_owned()),
        Kind::Number => {
            let text = v.number_text().unwrap_or("0");
            match (v.as_i64(), v.is_integer_text()) {
                (Some(i), _) => Value::Int(i),
                // An integer too big for i64 keeps its digits (as from YAML).
                (None, true) => Value::Str(text.to_string()),
                (None, false) => Value::Float(v.as_f64().unwrap_or(f64::NAN)),
            }
        }
        Kind::Array | Kind::Object => {
            let map = kind == Kind::Object;
            // Sized exactly: the tape knows each container's length.
            let (items, entries) = if map { (Vec::new(), Vec::with_capacity(v.len())) } else { (Vec::with_capacity(v.len()), Vec::new()) };
            b.stack.push(Frame { origin, map, items, entries, key: None, names: None });
            if map {
                for (k, val) in v.members() {
                    json_node(b, at, k)?;
                    json_node(b, at, val)?;
                }
            } else {
                for item in v.items() {
                    json_node(b, at, item)?;
                }
            }
            let f = b.stack.pop().expect("pushed above");
            let value = if f.map { Value::Map(f.entries) } else { Value::Seq(f.items) };
            return b.add(Node { origin: f.origin, value });
        }
    };
    b.add(Node { origin, value })
}

/// A collection being built.
struct Frame {
    origin: Origin,
    map: bool,
    items: Vec<Node>,
    entries: Vec<(Key, Node)>,
    /// A mapping's key waiting for its value.
    key: Option<Key>,
    /// Hashes of the keys of a large mapping (to the first entry with that hash), to find
    /// duplicates without a quadratic scan and without copying the keys.
    names: Option<std::collections::HashMap<u64, usize>>,
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
            let first =
                match &f.names {
                    // A hash shared by two different keys is rare: then the keys are compared.
                    Some(names) => names.get(&key_hash(&name)).and_then(|&i| {
                        if f.entries[i].0.name == name {
                            Some(i)
                        } else {
                            f.entries.iter().position(|(k, _)| k.name == name)
                        }
                    }),
                    None => f.entries.iter().position(|(k, _)| k.name == name),
                };
            if let Some(i) = first {
                let Origin::File { line, col } = node.origin else { unreachable!() };
                return Err(SyntaxError { line, col, message: format!("duplicate key `{name}` (first at {})", f.entries[i].0.origin) });
            }
            f.key = Some(Key { name, origin: node.origin });
            return Ok(());
        };
        let i = f.entries.len();
        if f.names.is_none() && i + 1 > SCAN_KEYS {
            let mut names = std::collections::HashMap::with_capacity(2 * SCAN_KEYS);
            for (j, (k, _)) in f.entries.iter().enumerate() {
                names.entry(key_hash(&k.name)).or_insert(j);
            }
            f.names = Some(names);
        }
        if let Some(names) = &mut f.names {
            names.entry(key_hash(&key.name)).or_insert(i);
        }
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
            let json = parse_json(t, MAX_DEPTH).expect("strict JSON").unwrap();
            assert_eq!(json, parse_yaml(t, MAX_DEPTH).unwrap(), "{t}");
        }
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/openapi-specs");
        match std::fs::read_to_string(dir.join("oai30-petstore-expanded.json")) {
            Ok(t) => assert_eq!(parse_json(&t, 512).unwrap().unwrap(), parse_yaml(&t, 512).unwrap()),
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
