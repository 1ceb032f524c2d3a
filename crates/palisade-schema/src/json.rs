//! JSON documents as located trees: what specs and schemas written in JSON are read into.

use palisade_config::yaml::{Key, Node, Origin, Value};
use palisade_json::scan;

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

/// Parse a JSON document (RFC 8259, with [`palisade_json`]'s scanner: escapes and surrogate
/// pairs as JSON defines them, a leading BOM skipped) into the located tree the schema compiler
/// reads, with the line and column of every key and value. Integers beyond `i64` are kept as
/// their digits.
///
/// The tree is built as the text is scanned, with no token tape in between (for a large spec
/// the tape would be a third copy of it in memory, beside the text and the tree). A document
/// the scan refuses is parsed again by [`palisade_json::parse_into`], whose error (message and
/// place) is the one reported.
pub fn parse(text: &str, max_depth: usize) -> Result<Node, SyntaxError> {
    let bom = if text.starts_with('\u{feff}') { 3 } else { 0 };
    let mut b = TreeBuilder { text, cur: Cursor::new(text), max_depth, buf: Vec::new(), members: Vec::new(), items: Vec::new() };
    let built = b.value(bom, 0).and_then(|(node, end)| if scan::skip_ws(text.as_bytes(), end) == text.len() { Ok(node) } else { Err(end) });
    built.map_err(|at| {
        let jl = palisade_json::Limits { max_depth: u32::try_from(max_depth).unwrap_or(u32::MAX), max_tokens: usize::MAX };
        let (offset, message) = match palisade_json::parse_into(&text.as_bytes()[bom..], &mut palisade_json::Tape::default(), &jl) {
            Err(e) => (e.offset + bom, e.message),
            // Not expected: the scan accepts what `parse_into` accepts.
            Ok(()) => (at, "invalid JSON"),
        };
        let (line, col) = LineIndex::new(text).line_col(offset);
        SyntaxError { line, col, message: message.to_string() }
    })
}

/// Builds the tree of a JSON text; errors are the offset where the scan stopped.
struct TreeBuilder<'a> {
    text: &'a str,
    cur: Cursor<'a>,
    max_depth: usize,
    /// Unescaped string bytes.
    buf: Vec<u8>,
    /// The members and items of the containers being read, innermost last: each container
    /// takes its own off the top when it closes, into a list of exactly their number (a list
    /// grown by doubling would leave a quarter of a large tree unused on average).
    members: Vec<(Key, Node)>,
    items: Vec<Node>,
}

impl TreeBuilder<'_> {
    /// The value at or after `p` (inside `depth` containers) and the offset after it. Origins
    /// are taken in document order (a value before its contents, a key before its value), so
    /// the cursor only moves forwards.
    fn value(&mut self, p: usize, depth: usize) -> Result<(Node, usize), usize> {
        let inp = self.text.as_bytes();
        let p = scan::skip_ws(inp, p);
        let &c = inp.get(p).ok_or(p)?;
        let origin = self.cur.origin(p);
        let (value, end) = match c {
            b'"' => {
                let (s, end) = self.string(p)?;
                (Value::Str(s), end)
            }
            b'{' | b'[' => {
                if depth >= self.max_depth {
                    return Err(p);
                }
                let object = c == b'{';
                let close = if object { b'}' } else { b']' };
                let (base_members, base_items) = (self.members.len(), self.items.len());
                let mut q = scan::skip_ws(inp, p + 1);
                if inp.get(q) != Some(&close) {
                    loop {
                        if object {
                            q = scan::skip_ws(inp, q);
                            if inp.get(q) != Some(&b'"') {
                                return Err(q);
                            }
                            let origin = self.cur.origin(q);
                            let (name, end) = self.string(q)?;
                            q = scan::skip_ws(inp, end);
                            if inp.get(q) != Some(&b':') {
                                return Err(q);
                            }
                            let (v, end) = self.value(q + 1, depth + 1)?;
                            self.members.push((Key { name, origin }, v));
                            q = end;
                        } else {
                            let (v, end) = self.value(q, depth + 1)?;
                            self.items.push(v);
                            q = end;
                        }
                        q = scan::skip_ws(inp, q);
                        match inp.get(q) {
                            Some(b',') => q += 1,
                            Some(&b) if b == close => break,
                            _ => return Err(q),
                        }
                    }
                }
                let value =
                    if object { Value::Map(self.members.drain(base_members..).collect()) } else { Value::Seq(self.items.drain(base_items..).collect()) };
                (value, q + 1)
            }
            b't' | b'f' | b'n' => {
                let end = scan::literal(inp, p).map_err(|_| p)?;
                (
                    match c {
                        b't' => Value::Bool(true),
                        b'f' => Value::Bool(false),
                        _ => Value::Null,
                    },
                    end,
                )
            }
            b'-' | b'0'..=b'9' => {
                let (end, integer) = scan::number(inp, p).map_err(|_| p)?;
                let t = &self.text[p..end];
                let value = if integer {
                    // beyond i64: kept as its digits, as the YAML reader does
                    t.parse::<i64>().map_or_else(|_| Value::Str(t.to_string()), Value::Int)
                } else {
                    Value::Float(t.parse().map_err(|_| p)?)
                };
                (value, end)
            }
            _ => return Err(p),
        };
        Ok((Node { origin, value }, end))
    }

    /// The string whose opening quote is at `q`, unescaped, and the offset after it.
    fn string(&mut self, q: usize) -> Result<(String, usize), usize> {
        let (raw, end, escaped) = scan::string_in_text_contents(self.text, q).map_err(|e| e.offset)?;
        let s = if escaped {
            self.buf.clear();
            scan::unescape_into(raw.as_bytes(), &mut self.buf);
            String::from_utf8_lossy(&self.buf).into_owned()
        } else {
            raw.to_string()
        };
        Ok((s, end + 1))
    }
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
    fn refuses_what_the_json_parser_refuses_with_its_message() {
        for (text, depth) in [
            ("", 8),
            ("{", 8),
            ("[1,]", 8),
            ("{\"a\" 1}", 8),
            ("{\"a\":1,}", 8),
            ("{1:2}", 8),
            ("[1] x", 8),
            ("[tru]", 8),
            ("[01]", 8),
            ("[-]", 8),
            ("[\"\\x\"]", 8),
            ("[\"a\u{1}\"]", 8),
            ("[[[1]]]", 2),
            ("nul", 8),
        ] {
            let e = parse(text, depth).unwrap_err();
            let want = palisade_json::parse_into(
                text.as_bytes(),
                &mut palisade_json::Tape::default(),
                &palisade_json::Limits { max_depth: depth as u32, max_tokens: usize::MAX },
            )
            .unwrap_err();
            assert_eq!(e.message, want.message, "{text:?}");
        }
        // And accepts what it accepts, with the same values.
        assert!(parse("[[1]]", 2).is_ok() && parse("{\"a\":{\"b\":1}}", 2).is_ok());
        let n = parse(" {\"a\\u00e9\\n\":[-0.5e2, 12345678901234567890, \"\\ud83d\\ude00\", {}, []]} ", 8).unwrap();
        let Value::Map(m) = &n.value else { panic!() };
        assert_eq!(m[0].0.name, "a\u{e9}\n");
        let Value::Seq(items) = &m[0].1.value else { panic!() };
        assert_eq!(items[0].value, Value::Float(-50.0));
        assert_eq!(items[1].value, Value::Str("12345678901234567890".into()));
        assert_eq!(items[2].value, Value::Str("\u{1f600}".into()));
        assert_eq!((&items[3].value, &items[4].value), (&Value::Map(vec![]), &Value::Seq(vec![])));
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
