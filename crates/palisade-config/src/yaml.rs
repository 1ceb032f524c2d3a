//! A small YAML document tree that remembers where every node came from (line and column, or
//! the environment variable that overrode it), so that every configuration problem can be
//! reported precisely. Built from `saphyr`'s marked nodes.

use std::fmt;

use saphyr::{LoadableYamlNode, MarkedYamlOwned, ScalarOwned, YamlDataOwned};

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
pub fn parse_with_max_depth(text: &str, max_depth: usize) -> Result<Node, SyntaxError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let docs =
        MarkedYamlOwned::load_from_str(text).map_err(|e| SyntaxError { line: e.marker().line(), col: e.marker().col() + 1, message: e.info().to_string() })?;
    let mut docs = docs.into_iter();
    let Some(doc) = docs.next() else {
        return Ok(Node { origin: Origin::File { line: 1, col: 1 }, value: Value::Map(Vec::new()) });
    };
    if let Some(extra) = docs.next() {
        return Err(SyntaxError { line: extra.span.start.line(), col: extra.span.start.col() + 1, message: "only one YAML document is allowed".into() });
    }
    convert(doc, 0, max_depth, text)
}

/// Nesting limit of [`parse`].
pub const MAX_DEPTH: usize = 64;

fn convert(node: MarkedYamlOwned, depth: usize, max_depth: usize, text: &str) -> Result<Node, SyntaxError> {
    let origin = Origin::File { line: node.span.start.line(), col: node.span.start.col() + 1 };
    let err = |message: String| {
        let Origin::File { line, col } = origin else { unreachable!() };
        SyntaxError { line, col, message }
    };
    if depth > max_depth {
        return Err(err(format!("nesting deeper than {max_depth} levels")));
    }
    let (start, end) = (node.span.start.index(), node.span.end.index());
    let value = match node.data {
        YamlDataOwned::Value(s) => match s {
            // An integer too big for i64 would lose digits as a float: keep its text (schema
            // bounds compare it exactly).
            ScalarOwned::FloatingPoint(f) => match big_integer_text(text, start, end) {
                Some(digits) => Value::Str(digits),
                None => Value::Float(f.into_inner()),
            },
            ScalarOwned::Null => Value::Null,
            ScalarOwned::Boolean(b) => Value::Bool(b),
            ScalarOwned::Integer(i) => Value::Int(i),
            ScalarOwned::String(s) => Value::Str(s),
        },
        YamlDataOwned::Representation(s, _, _) => Value::Str(s),
        YamlDataOwned::Sequence(items) => Value::Seq(items.into_iter().map(|n| convert(n, depth + 1, max_depth, text)).collect::<Result<_, _>>()?),
        YamlDataOwned::Mapping(map) => {
            let mut entries = Vec::with_capacity(map.len());
            for (k, v) in map {
                let key_origin = Origin::File { line: k.span.start.line(), col: k.span.start.col() + 1 };
                let name = match k.data {
                    YamlDataOwned::Value(ScalarOwned::String(s)) => s,
                    YamlDataOwned::Value(ScalarOwned::Integer(i)) => i.to_string(),
                    YamlDataOwned::Value(ScalarOwned::Boolean(b)) => b.to_string(),
                    _ => {
                        let Origin::File { line, col } = key_origin else { unreachable!() };
                        return Err(SyntaxError { line, col, message: "mapping keys must be plain strings".into() });
                    }
                };
                entries.push((Key { name, origin: key_origin }, convert(v, depth + 1, max_depth, text)?));
            }
            Value::Map(entries)
        }
        YamlDataOwned::Tagged(_, inner) => return convert(*inner, depth, max_depth, text),
        YamlDataOwned::Alias(_) => return Err(err("YAML aliases are not supported".into())),
        YamlDataOwned::BadValue => return Err(err("invalid YAML value".into())),
    };
    Ok(Node { origin, value })
}

/// The source text of a scalar spanning the characters `start..end` when it is an integer
/// literal (`-?[0-9]+`) that does not fit in an `i64`.
fn big_integer_text(text: &str, start: usize, end: usize) -> Option<String> {
    let slice = if text.is_ascii() {
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
