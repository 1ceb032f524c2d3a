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
                    Some(Scalar::String(s)) => Value::Str(s.into_owned()),
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
                let f = b.stack.pop().expect("the parser balances collections");
                let value = if f.map { Value::Map(f.entries) } else { Value::Seq(f.items) };
                b.add(Node { origin: f.origin, value })?;
            }
            Event::StreamStart | Event::StreamEnd | Event::DocumentEnd | Event::Nothing => {}
        }
    }
    Ok(b.root.unwrap_or(Node { origin: Origin::File { line: 1, col: 1 }, value: Value::Map(Vec::new()) }))
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
    /// The keys of a large mapping, to find duplicates without a quadratic scan.
    names: Option<std::collections::HashMap<String, usize>>,
}

struct Builder {
    stack: Vec<Frame>,
    root: Option<Node>,
    documents: usize,
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
            let first = match &f.names {
                Some(names) => names.get(&name).copied(),
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
        if let Some(names) = &mut f.names {
            names.insert(key.name.clone(), i);
        } else if i + 1 > SCAN_KEYS {
            let mut names: std::collections::HashMap<String, usize> = f.entries.iter().enumerate().map(|(i, (k, _))| (k.name.clone(), i)).collect();
            names.insert(key.name.clone(), i);
            f.names = Some(names);
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
