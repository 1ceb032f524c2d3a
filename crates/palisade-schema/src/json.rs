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

/// Line and column (in characters) of byte offsets asked for in increasing order, counted
/// in one pass over the text: a spec written on one line (minified JSON) would otherwise
/// cost a scan from the start of its line for every value.
struct Cursor<'a> {
    text: &'a [u8],
    at: usize,
    line: usize,
    col: usize,
}

impl<'a> Cursor<'a> {
    fn new(text: &'a str) -> Self {
        Cursor { text: text.as_bytes(), at: 0, line: 1, col: 1 }
    }

    fn origin(&mut self, offset: usize) -> Origin {
        let offset = offset.min(self.text.len());
        if offset < self.at {
            // Backwards (not the order the tree is built in): count again from the start.
            *self = Cursor { text: self.text, at: 0, line: 1, col: 1 };
        }
        let seg = &self.text[self.at..offset];
        // Characters: bytes that do not continue a UTF-8 sequence.
        let chars = |b: &[u8]| b.iter().filter(|&&c| c & 0xC0 != 0x80).count();
        match memchr::memrchr(b'\n', seg) {
            Some(last) => {
                self.line += memchr::memchr_iter(b'\n', seg).count();
                self.col = 1 + chars(&seg[last + 1..]);
            }
            None => self.col += chars(seg),
        }
        self.at = offset;
        Origin::File { line: self.line, col: self.col }
    }
}

/// Parse a JSON document (RFC 8259, with [`palisade_json`]: escapes and surrogate pairs as JSON
/// defines them, a leading BOM skipped) into the located tree the schema compiler reads, with
/// the line and column of every key and value. Integers beyond `i64` are kept as their digits.
pub fn parse(text: &str, max_depth: usize) -> Result<Node, SyntaxError> {
    let bom = if text.starts_with('\u{feff}') { 3 } else { 0 };
    let input = &text.as_bytes()[bom..];
    let mut tape = palisade_json::Tape::default();
    let jl = palisade_json::Limits { max_depth: u32::try_from(max_depth).unwrap_or(u32::MAX), max_tokens: usize::MAX };
    palisade_json::parse_into(input, &mut tape, &jl).map_err(|e| {
        let (line, col) = LineIndex::new(text).line_col(e.offset + bom);
        SyntaxError { line, col, message: e.message.to_string() }
    })?;
    /// The tree of `v`, with origins taken in document order (a value before its contents, a
    /// key before its value) so that `cur` only moves forwards.
    fn build(v: palisade_json::ValueRef<'_>, bom: usize, cur: &mut Cursor<'_>) -> Node {
        use palisade_json::Kind as J;
        // strings point at their first content byte: report the opening quote
        let at = match v.kind() {
            J::String => v.offset().saturating_sub(1),
            _ => v.offset(),
        };
        let origin = cur.origin(at + bom);
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
                items.extend(v.items().map(|i| build(i, bom, cur)));
                Value::Seq(items)
            }
            J::Object => {
                let mut members = Vec::with_capacity(v.len());
                for (k, val) in v.members() {
                    let key = Key { origin: cur.origin(k.offset().saturating_sub(1) + bom), name: k.as_str().map(|s| s.into_owned()).unwrap_or_default() };
                    members.push((key, build(val, bom, cur)));
                }
                Value::Map(members)
            }
        };
        Node { origin, value }
    }
    Ok(build(tape.root(input), bom, &mut Cursor::new(text)))
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
    fn positions_on_one_long_line_and_after_multibyte_characters() {
        // Minified: every value on line 1; columns count characters, not bytes.
        let n = parse(r#"{"é":"ü","b":[1,{"c":null}],"d":"\u00e9x"}"#, 8).unwrap();
        let Value::Map(m) = &n.value else { panic!() };
        let at = |i: usize| (m[i].0.origin.clone(), m[i].1.origin.clone());
        assert_eq!(at(0), (Origin::File { line: 1, col: 2 }, Origin::File { line: 1, col: 6 }));
        assert_eq!(at(1), (Origin::File { line: 1, col: 10 }, Origin::File { line: 1, col: 14 }));
        let Value::Seq(items) = &m[1].1.value else { panic!() };
        assert_eq!(items[1].origin, Origin::File { line: 1, col: 17 });
        assert_eq!(items[1].get("c").unwrap().origin, Origin::File { line: 1, col: 22 });
        assert_eq!(at(2), (Origin::File { line: 1, col: 29 }, Origin::File { line: 1, col: 33 }));
        // Lines after the first start again at column 1, whatever came before.
        let n = parse("{\"a\": \"é\",\n  \"b\": [\n\ttrue]}", 8).unwrap();
        assert_eq!(n.get("b").unwrap().origin, Origin::File { line: 2, col: 8 });
        let Value::Seq(items) = &n.get("b").unwrap().value else { panic!() };
        assert_eq!(items[0].origin, Origin::File { line: 3, col: 2 });
        // Agrees with the line index at every value of a document with both.
        let text = "{\"x\": [\"ä\", {\"y\": 1.5}],\n\"z\": {\"w\": [true, false, \"ö\"]}}";
        let li = LineIndex::new(text);
        fn each(n: &Node, f: &mut dyn FnMut(&Origin)) {
            f(&n.origin);
            match &n.value {
                Value::Seq(items) => items.iter().for_each(|i| each(i, f)),
                Value::Map(m) => m.iter().for_each(|(k, v)| {
                    f(&k.origin);
                    each(v, f)
                }),
                _ => {}
            }
        }
        let mut offsets = text.char_indices().filter(|&(_, c)| !c.is_whitespace() && !matches!(c, ':' | ',' | ']' | '}')).map(|(i, _)| i);
        let mut seen = 0;
        each(&parse(text, 8).unwrap(), &mut |o| {
            let Origin::File { line, col } = o.clone() else { panic!() };
            // Each origin is the position of some token start of the text.
            assert!(offsets.any(|i| li.line_col(i) == (line, col)), "{line}:{col}");
            seen += 1;
        });
        assert_eq!(seen, 14);
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
