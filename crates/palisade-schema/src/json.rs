//! JSON documents as located trees: what specs and schemas written in JSON are read into.

use palisade_config::yaml::{Key, Node, Origin, Value};

/// Byte offset to 1-based line and column (in characters).
pub struct LineIndex<'a> {
    text: &'a str,
    starts: Vec<usize>,
}

impl<'a> LineIndex<'a> {
    pub fn new(text: &'a str) -> Self {
        let mut starts = vec![0];
        starts.extend(memchr::memchr_iter(b'\n', text.as_bytes()).map(|i| i + 1));
        LineIndex { text, starts }
    }

    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        let offset = offset.min(self.text.len());
        let line = self.starts.partition_point(|&s| s <= offset);
        let start = self.starts[line - 1];
        let col = self.text.get(start..offset).map_or(offset - start, |s| s.chars().count());
        (line, col + 1)
    }
}

/// A JSON syntax error and where it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyntaxError {
    /// 1-based line and column (in characters).
    pub line: usize,
    pub col: usize,
    pub message: String,
}

/// Parse a JSON document (RFC 8259, with [`palisade_json`]: escapes and surrogate pairs as JSON
/// defines them, a leading BOM skipped) into the located tree the schema compiler reads, with
/// the line and column of every key and value. Integers beyond `i64` are kept as their digits.
pub fn parse(text: &str, max_depth: usize) -> Result<Node, SyntaxError> {
    let bom = if text.starts_with('\u{feff}') { 3 } else { 0 };
    let input = &text.as_bytes()[bom..];
    let mut tape = palisade_json::Tape::default();
    let jl = palisade_json::Limits { max_depth: u32::try_from(max_depth).unwrap_or(u32::MAX), max_tokens: usize::MAX };
    let lines = LineIndex::new(text);
    palisade_json::parse_into(input, &mut tape, &jl).map_err(|e| {
        let (line, col) = lines.line_col(e.offset + bom);
        SyntaxError { line, col, message: e.message.to_string() }
    })?;
    let origin = |offset: usize| {
        // strings point at their first content byte: report the opening quote
        let (line, col) = lines.line_col(offset + bom);
        Origin::File { line, col }
    };
    fn build(v: palisade_json::ValueRef<'_>, origin: &dyn Fn(usize) -> Origin) -> Node {
        use palisade_json::Kind as J;
        let at = match v.kind() {
            J::String => v.offset().saturating_sub(1),
            _ => v.offset(),
        };
        let value = match v.kind() {
            J::Null => Value::Null,
            J::Bool => Value::Bool(v.as_bool().unwrap_or(false)),
            J::Number => {
                let t = v.number_text().unwrap_or("0");
                if v.is_integer_text() {
                    match t.parse::<i64>() {
                        Ok(i) => Value::Int(i),
                        // beyond i64: kept as its digits, as the YAML reader does
                        Err(_) => Value::Str(t.to_string()),
                    }
                } else {
                    Value::Float(v.as_f64().unwrap_or(0.0))
                }
            }
            J::String => Value::Str(v.as_str().map(|s| s.into_owned()).unwrap_or_default()),
            J::Array => {
                let mut items = Vec::with_capacity(v.len());
                items.extend(v.items().map(|i| build(i, origin)));
                Value::Seq(items)
            }
            J::Object => {
                let mut members = Vec::with_capacity(v.len());
                members.extend(v.members().map(|(k, val)| {
                    let key = Key { name: k.as_str().map(|s| s.into_owned()).unwrap_or_default(), origin: origin(k.offset().saturating_sub(1)) };
                    (key, build(val, origin))
                }));
                Value::Map(members)
            }
        };
        Node { origin: origin(at), value }
    }
    Ok(build(tape.root(input), &origin))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_index_counts_characters() {
        let li = LineIndex::new("ab\néx\n\nz");
        assert_eq!(li.line_col(0), (1, 1));
        assert_eq!(li.line_col(2), (1, 3));
        assert_eq!(li.line_col(3), (2, 1));
        assert_eq!(li.line_col(5), (2, 2));
        assert_eq!(li.line_col(7), (3, 1));
        assert_eq!(li.line_col(8), (4, 1));
        assert_eq!(li.line_col(9), (4, 2));
    }

    #[test]
    fn values_keys_and_positions() {
        let n = parse("\u{feff}{\"a\": [1, -2.5, true, null, \"\\ud83d\\udc4d\"],\n \"big\": 18446744073709551616}", 16).unwrap();
        let Value::Seq(items) = &n.get("a").unwrap().value else { panic!() };
        assert_eq!(
            items.iter().map(|i| i.value.clone()).collect::<Vec<_>>(),
            [Value::Int(1), Value::Float(-2.5), Value::Bool(true), Value::Null, Value::Str("\u{1f44d}".into())]
        );
        // the BOM is the first character of the line
        assert_eq!(items[4].origin, Origin::File { line: 1, col: 30 });
        assert_eq!(n.get("big").unwrap().value, Value::Str("18446744073709551616".into()));
        let Value::Map(m) = &n.value else { panic!() };
        assert_eq!(m[1].0.origin, Origin::File { line: 2, col: 2 });
        assert_eq!(parse("[[[1]]]", 2).unwrap_err().line, 1);
        assert_eq!(parse("{\n\"a\": tru}", 8).unwrap_err(), SyntaxError { line: 2, col: 6, message: parse("{\n\"a\": tru}", 8).unwrap_err().message });
    }
}
