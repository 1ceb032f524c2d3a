//! JSON documents as located trees (the tree of [`crate::yaml`], with the line and column of
//! every key and value): what configuration files, specs and schemas written in JSON are read
//! into. One reader for all of them, built as the text is scanned.

use palisade_json::scan;

use crate::yaml::{Key, KeyIndex, Node, Origin, SyntaxError, Value};

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
/// pairs as JSON defines them, a leading BOM skipped and counted as the first character of its
/// line) into the located tree, with the line and column of every key and value (strings at
/// their opening quote). At most `max_depth` containers nest. Integers beyond `i64` are kept
/// as their digits. Every member of an object is kept, a repeated key too (in document order:
/// [`Node::get`] finds the first).
///
/// The tree is built as the text is scanned, with no token tape in between (for a large spec
/// the tape would be a third copy of it in memory, beside the text and the tree). A document
/// the scan refuses is parsed again by [`palisade_json::parse_into`], whose error (message and
/// place) is the one reported.
pub fn parse(text: &str, max_depth: usize) -> Result<Node, SyntaxError> {
    read(text, max_depth, Duplicates::Keep).map_err(|stop| {
        let at = match stop {
            Stop::Refused(at) => at,
            Stop::Duplicate(e) => return e,
        };
        let bom = if text.starts_with('\u{feff}') { 3 } else { 0 };
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

/// What a repeated key in an object does.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Duplicates {
    /// Kept as another member.
    Keep,
    /// The document is refused at the first repeated key (in document order), with the place
    /// of the first one, as the YAML reader refuses it, but only when the text is otherwise
    /// valid JSON ([`Stop::Refused`] wins).
    Refuse,
}

/// Why [`read`] gave no tree.
pub(crate) enum Stop {
    /// Not JSON (or nested deeper than allowed): the scan stopped at this offset.
    Refused(usize),
    /// Valid JSON with a repeated key, refused by [`Duplicates::Refuse`].
    Duplicate(SyntaxError),
}

/// The tree of a JSON text (see [`parse`]), or why there is none.
pub(crate) fn read(text: &str, max_depth: usize, duplicates: Duplicates) -> Result<Node, Stop> {
    let bom = if text.starts_with('\u{feff}') { 3 } else { 0 };
    let mut b = TreeBuilder { text, cur: Cursor::new(text), max_depth, duplicates, duplicate: None, buf: Vec::new(), members: Vec::new(), items: Vec::new() };
    let (node, end) = b.value(bom, 0).map_err(Stop::Refused)?;
    if scan::skip_ws(text.as_bytes(), end) != text.len() {
        return Err(Stop::Refused(end));
    }
    match b.duplicate {
        Some(e) => Err(Stop::Duplicate(e)),
        None => Ok(node),
    }
}

/// Builds the tree of a JSON text; errors are the offset where the scan stopped.
struct TreeBuilder<'a> {
    text: &'a str,
    cur: Cursor<'a>,
    max_depth: usize,
    duplicates: Duplicates,
    /// The first repeated key, under [`Duplicates::Refuse`] (the scan goes on to the end: a
    /// syntax error after it is what is reported).
    duplicate: Option<SyntaxError>,
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
                let mut keys = KeyIndex::default();
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
                            if self.duplicates == Duplicates::Refuse && self.duplicate.is_none() {
                                let entries = &self.members[base_members..];
                                if let Some(e) = keys.check(entries, &name, &origin) {
                                    self.duplicate = Some(e);
                                }
                                keys.add(entries, &name);
                            }
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

    /// Our tree against serde_json's reading of the same text: every value, with objects
    /// compared as serde_json keeps them (the last of repeated keys).
    fn same(ours: &Node, theirs: &serde_json::Value) -> Result<(), String> {
        use serde_json::Value as J;
        let fail = || Err(format!("{:?} vs {theirs}", ours.value));
        match (&ours.value, theirs) {
            (Value::Null, J::Null) => Ok(()),
            (Value::Bool(a), J::Bool(b)) if a == b => Ok(()),
            (Value::Str(a), J::String(b)) if a == b => Ok(()),
            (Value::Int(a), J::Number(b)) if b.as_i64() == Some(*a) || (*a == 0 && b.as_f64() == Some(0.0)) => Ok(()),
            (Value::Float(a), J::Number(b)) if b.as_f64() == Some(*a) => Ok(()),
            // Integers beyond i64, kept as their digits: serde_json has them as u64 or f64.
            (Value::Str(a), J::Number(b)) if b.as_u64().map_or_else(|| b.as_f64() == a.parse().ok(), |u| u.to_string() == *a) => Ok(()),
            (Value::Seq(a), J::Array(b)) if a.len() == b.len() => a.iter().zip(b).try_for_each(|(x, y)| same(x, y)),
            (Value::Map(a), J::Object(b)) => {
                let mut last: Vec<&(Key, Node)> = Vec::new();
                for m in a {
                    last.retain(|(k, _)| k.name != m.0.name);
                    last.push(m);
                }
                if last.len() != b.len() {
                    return fail();
                }
                last.iter().try_for_each(|(k, v)| b.get(&k.name).map_or_else(|| Err(format!("no key {:?} in {theirs}", k.name)), |t| same(v, t)))
            }
            _ => fail(),
        }
    }

    #[test]
    fn trees_agree_with_serde_json() {
        let deep = format!("{}{{\"leaf\": [0.25]}}{}", "[{\"x\": ".repeat(60), "}]".repeat(60));
        let docs = [
            // surrogate pairs, other escapes, raw multibyte text
            r#"{"emoji": "\ud83d\ude00 \uD834\uDD1E", "esc": "\"\\\/\b\f\n\r\t\u0000\u00e9", "raw": "é€😀", "": ""}"#.to_string(),
            // numbers: signs, zero, fractions, exponents, the ends of i64 and beyond
            "[0, -0, 1, -1, 0.5, -0.0, 1e3, 1E-3, 2.5e+10, 9223372036854775807, -9223372036854775808, \
             9223372036854775808, 18446744073709551615, 18446744073709551616, -9223372036854775809, \
             123456789012345678901234567890, 1.7976931348623157e308, 5e-324]"
                .to_string(),
            // repeated keys, at the top and nested (serde_json keeps the last)
            r#"{"a": 1, "b": {"c": true, "c": false}, "a": [null]}"#.to_string(),
            // minified, one line, every kind of value
            r#"{"openapi":"3.1.0","paths":{"/p/{id}":{"get":{"parameters":[{"name":"id","in":"path","required":true,"schema":{"type":"integer","minimum":-1.5e2}}],"responses":{"200":{"description":"ok"}}}}},"x":[[],{},[[]],null,false]}"#.to_string(),
            // pretty-printed with CRLF and tabs
            "{\r\n\t\"a\" : [ 1 ,\r\n\t\t2 ] ,\r\n\t\"b\" : { }\r\n}\r\n".to_string(),
            deep,
        ];
        for text in &docs {
            let theirs: serde_json::Value = serde_json::from_str(text).unwrap();
            let ours = parse(text, 256).unwrap_or_else(|e| panic!("{text}: {e:?}"));
            same(&ours, &theirs).unwrap_or_else(|e| panic!("{text}: {e}"));
        }
        // Repeated keys are all kept, in document order, with their own positions.
        let n = parse(&docs[2], 8).unwrap();
        let Value::Map(m) = &n.value else { panic!() };
        let keys: Vec<_> = m.iter().map(|(k, _)| (k.name.as_str(), k.origin.to_string())).collect();
        assert_eq!(keys, [("a", "1:2".to_string()), ("b", "1:10".to_string()), ("a", "1:40".to_string())]);
        assert_eq!(n.get("a").unwrap().value, Value::Int(1));
        // The nesting limit counts containers: the deep document has 122.
        assert!(parse(&docs[5], 122).is_ok());
        assert_eq!(parse(&docs[5], 121).unwrap_err().message, "nesting too deep");
    }

    #[test]
    fn refusing_repeated_keys_reports_the_first_in_document_order() {
        let refuse = |t: &str| match read(t, 8, Duplicates::Refuse) {
            Err(Stop::Duplicate(e)) => Some(e),
            _ => None,
        };
        // The outer repetition comes first in the text, the inner one inside its value.
        let e = refuse("{\"a\": 1, \"a\": {\"b\": 1, \"b\": 2}}").unwrap();
        assert_eq!((e.line, e.col, e.message.as_str()), (1, 10, "duplicate key `a` (first at 1:2)"));
        let e = refuse("{\"x\": {\"b\": 1,\n \"b\": 2}, \"x\": 0}").unwrap();
        assert_eq!((e.line, e.col, e.message.as_str()), (2, 2, "duplicate key `b` (first at 1:8)"));
        // Large objects (indexed keys) find it too.
        let mut t = String::from("{");
        for i in 0..40 {
            t.push_str(&format!("\"k{i}\": {i}, "));
        }
        t.push_str("\"k7\": 0}");
        assert!(refuse(&t).unwrap().message.contains("duplicate key `k7` (first at 1:"));
        // A syntax error anywhere wins over a repeated key: the text is not JSON.
        assert!(matches!(read("{\"a\": 1, \"a\": 2} x", 8, Duplicates::Refuse), Err(Stop::Refused(_))));
        // Same keys in different objects are no repetition.
        assert!(read("[{\"a\": 1}, {\"a\": 2}]", 8, Duplicates::Refuse).is_ok());
    }
}
