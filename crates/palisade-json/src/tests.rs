use std::borrow::Cow;

use super::*;
use crate::value::unescape_into;
use palisade_testkit::rng::Rng;

fn parse(s: &[u8]) -> Result<Tape, JsonError> {
    let mut t = Tape::default();
    parse_into(s, &mut t, &Limits::default())?;
    Ok(t)
}

fn ok(s: &str) {
    if let Err(e) = parse(s.as_bytes()) {
        panic!("{s:?} should parse: {e}");
    }
    assert!(serde_json::from_str::<serde_json::Value>(s).is_ok(), "serde_json disagrees on {s:?}");
}

fn bad(s: &[u8]) -> JsonError {
    match parse(s) {
        Ok(_) => panic!("{:?} should be rejected", String::from_utf8_lossy(s)),
        Err(e) => e,
    }
}

#[test]
fn scalars() {
    for s in ["null", "true", "false", "0", "-0", "1", "-1", "1.5", "1e5", "1E+5", "1e-5", "-0.0e0", "\"\"", "\"abc\"", " 1 ", "\t\r\n[]\n"] {
        ok(s);
    }
    let t = parse(b"true").unwrap();
    assert_eq!(t.root(b"true").as_bool(), Some(true));
    let t = parse(b"false").unwrap();
    assert_eq!(t.root(b"false").as_bool(), Some(false));
    let t = parse(b"null").unwrap();
    assert!(t.root(b"null").is_null());
    assert_eq!(t.root(b"null").kind(), Kind::Null);
}

#[test]
fn rejects() {
    let cases: &[(&[u8], &str)] = &[
        (b"", "unexpected end of input, expected a value"),
        (b"   ", "unexpected end of input, expected a value"),
        (b"01", "leading zeros are not allowed"),
        (b"-01", "leading zeros are not allowed"),
        (b"1.", "expected a digit after the decimal point"),
        (b".5", "expected a value"),
        (b"1e", "expected a digit in the exponent"),
        (b"1e+", "expected a digit in the exponent"),
        (b"-", "expected a digit"),
        (b"+1", "expected a value"),
        (b"1 2", "trailing characters after the document"),
        (b"{} x", "trailing characters after the document"),
        (b"[1,]", "expected a value"),
        (b"{\"a\":1,}", "expected a string key"),
        (b"{\"a\" 1}", "expected ':'"),
        (b"{1:1}", "expected a string key"),
        (b"[1 2]", "expected ',' or ']'"),
        (b"{\"a\":1 \"b\":2}", "expected ',' or '}'"),
        (b"[", "unexpected end of input, expected a value"),
        (b"[1", "unexpected end of input in an array"),
        (b"{\"a\":1", "unexpected end of input in an object"),
        (b"\"abc", "unterminated string"),
        (b"\"a\x01b\"", "control character in string"),
        (b"\"a\tb\"", "control character in string"),
        (b"\"\\x\"", "invalid escape"),
        (b"\"\\u12\"", "invalid \\u escape"),
        (b"\"\\uD800\"", "lone high surrogate in \\u escape"),
        (b"\"\\uDC00\"", "lone low surrogate in \\u escape"),
        (b"\"\\uD83D\\u0041\"", "lone high surrogate in \\u escape"),
        (b"\"\xff\"", "invalid UTF-8 in string"),
        (b"\"\xc0\xaf\"", "invalid UTF-8 in string"),
        (b"\"\xed\xa0\x80\"", "invalid UTF-8 in string"),
        (b"\"\xe2\x82\"", "invalid UTF-8 in string"),
        (b"\xEF\xBB\xBF{}", "byte order mark is not allowed"),
        (b"tru", "invalid literal"),
        (b"nul", "invalid literal"),
        (b"True", "expected a value"),
        (b"NaN", "expected a value"),
        (b"[1]]", "trailing characters after the document"),
        (b"'a'", "expected a value"),
        (b"\x00", "expected a value"),
        (b"[\x0c]", "expected a value"),
    ];
    for (input, msg) in cases {
        let e = bad(input);
        assert_eq!(e.message, *msg, "input {:?}", String::from_utf8_lossy(input));
        if let Ok(s) = std::str::from_utf8(input) {
            assert!(serde_json::from_str::<serde_json::Value>(s).is_err(), "serde_json accepts {s:?}");
        }
    }
}

#[test]
fn error_offsets() {
    assert_eq!(bad(b"[1, 2, x]").offset, 7);
    assert_eq!(bad(b"{\"a\": 01}").offset, 7);
    assert_eq!(bad(b"\"abcdefghijklmnop\x01\"").offset, 17);
    assert_eq!(bad(b"  1  2").offset, 5);
    assert_eq!(bad(b"\"\\uD800\"").to_string(), "lone high surrogate in \\u escape at byte 1");
}

#[test]
fn unicode_and_escapes() {
    let src = r#""a\"b\\c\/d\b\f\n\r\t\u00e9\uD83D\uDE00""#;
    let t = parse(src.as_bytes()).unwrap();
    let r = t.root(src.as_bytes());
    assert!(r.has_escapes());
    assert_eq!(r.as_str().unwrap(), "a\"b\\c/d\u{8}\u{c}\n\r\té😀");
    assert!(matches!(r.as_str().unwrap(), Cow::Owned(_)));

    let src = "\"héllo wörld — 😀 long enough to use the word scan\"";
    let t = parse(src.as_bytes()).unwrap();
    let r = t.root(src.as_bytes());
    assert!(!r.has_escapes());
    assert!(matches!(r.as_str().unwrap(), Cow::Borrowed("héllo wörld — 😀 long enough to use the word scan")));
    ok("\"\\u0000\"");
    ok("\"\u{10FFFF}\"");
    ok("\"\\uDBFF\\uDFFF\"");
}

#[test]
fn numbers() {
    let src = b"[9007199254740993, 9223372036854775807, 9223372036854775808, -9223372036854775808, -9223372036854775809, 123456789012345678901234567890, 1.0, 1e2, 1.5e300, 1e400, -0]";
    let t = parse(src).unwrap();
    let items: Vec<_> = t.root(src).items().collect();
    assert_eq!(items.len(), 11);
    assert!(items.iter().all(|v| v.kind() == Kind::Number));
    assert_eq!(items[0].as_i64(), Some(9007199254740993));
    assert_eq!(items[0].number_text(), Some("9007199254740993"));
    assert_eq!(items[1].as_i64(), Some(i64::MAX));
    assert_eq!(items[2].as_i64(), None);
    assert_eq!(items[2].as_f64(), Some(9223372036854775808.0));
    assert_eq!(items[3].as_i64(), Some(i64::MIN));
    assert_eq!(items[4].as_i64(), None);
    assert_eq!(items[5].as_i64(), None);
    assert_eq!(items[5].number_text(), Some("123456789012345678901234567890"));
    assert_eq!(items[6].as_i64(), None);
    assert_eq!(items[6].as_f64(), Some(1.0));
    assert!(!items[7].is_integer_text());
    assert_eq!(items[7].as_f64(), Some(100.0));
    assert_eq!(items[8].as_f64(), Some(1.5e300));
    assert_eq!(items[9].as_f64(), Some(f64::INFINITY));
    assert_eq!(items[10].as_i64(), Some(0));
}

#[test]
fn navigation() {
    let src = br#" {"a": [1, {"b": null}, []], "c": {}, "d\u0041": "x", "e": true} "#;
    let t = parse(src).unwrap();
    let root = t.root(src);
    assert_eq!(root.kind(), Kind::Object);
    assert_eq!(root.len(), 4);
    assert_eq!(root.raw(), &src[1..src.len() - 1]);
    let keys: Vec<String> = root.members().map(|(k, _)| k.as_str().unwrap().into_owned()).collect();
    assert_eq!(keys, ["a", "c", "dA", "e"]);
    let a = root.get("a").unwrap();
    assert_eq!(a.kind(), Kind::Array);
    assert_eq!(a.len(), 3);
    let items: Vec<_> = a.items().collect();
    assert_eq!(items[0].as_i64(), Some(1));
    assert_eq!(items[1].len(), 1);
    assert!(items[1].get("b").unwrap().is_null());
    assert_eq!(items[2].len(), 0);
    assert!(items[2].is_empty());
    assert_eq!(root.get("c").unwrap().len(), 0);
    assert_eq!(root.get("dA").unwrap().as_str().unwrap(), "x");
    assert_eq!(root.get("e").unwrap().as_bool(), Some(true));
    assert!(root.get("zz").is_none());
    // Skipping a subtree lands on the next sibling key.
    let next = a.next_index();
    assert_eq!(t.get(src, next).as_str().unwrap(), "c");
    assert_eq!(root.next_index() as usize, t.token_count());
    // Scalars have no children.
    assert_eq!(items[0].members().count(), 0);
    assert_eq!(items[0].items().count(), 0);
    assert_eq!(root.items().count(), 0);
}

#[test]
fn limits() {
    let deep = "[".repeat(129) + &"]".repeat(129);
    assert_eq!(bad(deep.as_bytes()).message, "nesting too deep");
    let ok_deep = "[".repeat(128) + &"]".repeat(128);
    assert!(parse(ok_deep.as_bytes()).is_ok());
    // 100,000 deep: rejected by the limit, no stack overflow.
    let very = "[".repeat(100_000);
    assert_eq!(bad(very.as_bytes()).offset, 128);
    // A high limit: still iterative.
    let mut t = Tape::default();
    let huge = "[".repeat(100_000) + &"]".repeat(100_000);
    parse_into(huge.as_bytes(), &mut t, &Limits { max_depth: 200_000, max_tokens: 1 << 20 }).unwrap();
    assert_eq!(t.token_count(), 100_000);

    let many = format!("[{}0]", "0,".repeat(99));
    let e = parse_into(many.as_bytes(), &mut t, &Limits { max_depth: 8, max_tokens: 100 }).unwrap_err();
    assert_eq!(e.message, "too many tokens");
    parse_into(many.as_bytes(), &mut t, &Limits { max_depth: 8, max_tokens: 101 }).unwrap();
}

#[test]
fn tape_reuse_and_failure_clears() {
    let mut t = Tape::default();
    parse_into(b"[1,2,3]", &mut t, &Limits::default()).unwrap();
    assert_eq!(t.token_count(), 4);
    assert!(parse_into(b"[1,2", &mut t, &Limits::default()).is_err());
    assert_eq!(t.token_count(), 0);
    parse_into(b"{\"k\":\"v\"}", &mut t, &Limits::default()).unwrap();
    assert_eq!(t.token_count(), 3);
    let cap = t.tokens.capacity();
    parse_into(b"[true]", &mut t, &Limits::default()).unwrap();
    assert_eq!(t.tokens.capacity(), cap);
}

#[test]
#[should_panic(expected = "other bytes")]
fn root_with_other_input_panics() {
    let t = parse(b"[1]").unwrap();
    let _ = t.root(b"[12]");
}

#[test]
fn swar_boundaries() {
    // Special bytes at every position of an eight-byte word.
    for n in 0..20 {
        let s = format!("\"{}\\n{}\"", "a".repeat(n), "é".repeat(n));
        let t = parse(s.as_bytes()).unwrap();
        assert_eq!(t.root(s.as_bytes()).as_str().unwrap(), format!("{}\n{}", "a".repeat(n), "é".repeat(n)));
        let mut bad_s = format!("\"{}", "a".repeat(n)).into_bytes();
        bad_s.push(0x1f);
        bad_s.push(b'"');
        assert_eq!(bad(&bad_s).offset, n + 1);
        let mut bad_s = format!("\"{}", "b".repeat(n)).into_bytes();
        bad_s.push(0x80);
        bad_s.push(b'"');
        assert_eq!(bad(&bad_s).message, "invalid UTF-8 in string");
    }
    // DEL (0x7f) and all printable ASCII are fine.
    let all: String = (0x20u8..0x80).filter(|&b| b != b'"' && b != b'\\').map(|b| b as char).collect();
    let s = format!("\"{all}\"");
    let t = parse(s.as_bytes()).unwrap();
    assert_eq!(t.root(s.as_bytes()).as_str().unwrap(), all);
}

#[test]
fn agrees_with_serde_on_samples() {
    let samples = [
        "[]",
        "{}",
        "[[[]]]",
        r#"{"a":{"b":{"c":[1,2,{"d":"e"}]}}}"#,
        r#"{"a":1,"a":2}"#,
        "[-1e-1000]",
        "\"\\ud834\\udd1e\"",
        "[1,\n2\r\n,3]",
        "123.456e-789",
        "[\"\u{7f}\"]",
        "[0e0, 0E+1, 0.0e-1]",
    ];
    for s in samples {
        ok(s);
    }
    // RFC 8259 leaves number range to implementations: we accept, serde_json says "out of range".
    assert!(parse(b"[1e1000]").is_ok());
    let e = serde_json::from_str::<serde_json::Value>("[1e1000]").unwrap_err();
    assert!(e.to_string().contains("number out of range"));
}

#[test]
fn bench_file_if_present() {
    let Ok(data) = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/bench/large.json")) else {
        eprintln!("skipping: ../shared/bench/large.json not found");
        return;
    };
    let t = parse(&data).unwrap();
    let root = t.root(&data);
    assert_eq!(root.kind(), Kind::Object);
    let v: serde_json::Value = serde_json::from_slice(&data).unwrap();
    assert_eq!(root.get("users").unwrap().len(), v["users"].as_array().unwrap().len());
    // Throughput sanity (release builds only; debug builds are too slow to judge).
    if !cfg!(debug_assertions) {
        let mut tape = Tape::default();
        let n = 2000;
        let start = std::time::Instant::now();
        for _ in 0..n {
            parse_into(&data, &mut tape, &Limits::default()).unwrap();
        }
        let secs = start.elapsed().as_secs_f64();
        eprintln!("large.json: {:.2} GB/s", (data.len() * n) as f64 / secs / 1e9);
    }
}

#[test]
fn long_non_ascii_strings_are_linear() {
    // Many multi-byte characters in one long string: must not rescan to the quote each time.
    let body = "é".repeat(200_000) + "a\\n" + &"x".repeat(100) + "😀";
    let s = format!("\"{body}\"");
    let start = std::time::Instant::now();
    let t = parse(s.as_bytes()).unwrap();
    assert!(start.elapsed().as_secs() < 2);
    assert_eq!(t.root(s.as_bytes()).as_str().unwrap().chars().count(), 200_000 + 1 + 1 + 100 + 1);
    // Errors after the fast path are still found at the right offset.
    let mut bad_s = format!("\"{}", "a".repeat(100)).into_bytes();
    bad_s.push(0x01);
    bad_s.extend_from_slice(b"\"");
    assert_eq!(bad(&bad_s).offset, 101);
    let mut bad_s = format!("\"{}", "a".repeat(100)).into_bytes();
    bad_s.extend_from_slice(b"\xff\"");
    assert_eq!(bad(&bad_s).message, "invalid UTF-8 in string");
}

/// `plain_run_with::<false>` (sixteen-byte lane tests, then one word) stops exactly at the first special
/// byte (`"`, `\`, a control character, a non-ASCII byte) for every byte value at every
/// position of the first 48 bytes, with and without bytes after it; and a literal is matched
/// only whole.
#[test]
fn plain_run_every_byte_at_every_position() {
    let special = |b: u8| b == b'"' || b == b'\\' || !(0x20..0x80).contains(&b);
    for start in 0..3 {
        for k in 0..48 {
            for b in 0..=255u8 {
                for tail in [0usize, 1, 9, 20] {
                    let mut inp = vec![b'a'; start + k];
                    inp.push(b);
                    inp.extend(std::iter::repeat_n(b'"', tail));
                    let at = super::plain_run_with::<false>(&inp, start);
                    // Stops at the first special byte, or within the last seven bytes of the
                    // input (the caller goes on byte by byte from there), never past one.
                    let first = inp[start..].iter().position(|&c| special(c)).map(|i| i + start);
                    match first {
                        Some(f) => assert!(at == f || (inp.len() - at < 8 && at <= f), "start {start} k {k} byte {b:#x} tail {tail}: {at} vs {f:?}"),
                        None => assert!(inp.len() - at < 8, "start {start} k {k} byte {b:#x}"),
                    }
                }
            }
        }
    }
    for (text, ok) in
        [("true", true), ("false", true), ("null", true), ("tru", false), ("fals", false), ("nul", false), ("trux", false), ("falsy", false), ("nulL", false)]
    {
        let inp = format!("[{text}]");
        assert_eq!(super::scan::literal(inp.as_bytes(), 1).is_ok(), ok, "{text}");
        assert_eq!(super::scan::literal(&inp.as_bytes()[..inp.len() - 1], 1).is_ok(), ok, "{text} at the end");
    }
}

// Generated JSON texts for the property test below (`Rng`: a deterministic xorshift64*).

fn gen_value(r: &mut Rng, depth: u32, out: &mut String) {
    let ws = |r: &mut Rng, out: &mut String| {
        if r.below(4) == 0 {
            out.push_str(r.pick(&[" ", "\n", "\t", "\r\n  "]));
        }
    };
    match if depth == 0 { 2 + r.below(6) } else { r.below(8) } {
        0 | 1 => {
            let object = r.below(2) == 0;
            out.push(if object { '{' } else { '[' });
            ws(r, out);
            for i in 0..r.below(5) {
                if i > 0 {
                    out.push(',');
                    ws(r, out);
                }
                if object {
                    gen_value(r, 0, &mut String::new()); // keep the stream of choices varied
                    out.push('"');
                    out.push_str(r.pick(&["k", "", "a/b", "\\u00e9", "\\\"", "key_longer_than_sixteen"]));
                    out.push('"');
                    ws(r, out);
                    out.push(':');
                    ws(r, out);
                }
                gen_value(r, depth - 1, out);
                ws(r, out);
            }
            out.push(if object { '}' } else { ']' });
        }
        2..=4 => {
            out.push('"');
            let len = if r.below(6) == 0 { 15 + r.below(40) } else { r.below(10) };
            for _ in 0..len {
                out.push_str(match r.below(12) {
                    0 => r.pick(&["\\\"", "\\\\", "\\/", "\\b", "\\f", "\\n", "\\r", "\\t", "\\u0000", "\\u001F", "\\uD83D\\uDE00"]),
                    1 => r.pick(&["é", "中", "😀", "\u{7f}", "\u{80}", "\u{10FFFF}"]),
                    _ => r.pick(&["a", "b", "z", " ", "<", "'", "0"]),
                });
            }
            out.push('"');
        }
        5 => out.push_str(r.pick(&["0", "-0", "1.5e-3", "0.0", "1E+2", "-12.75", "42", "7e1"])),
        _ => out.push_str(r.pick(&["true", "false", "null"])),
    }
}

#[test]
fn tape_skip_value_and_serde_agree_on_generated_and_mutated_documents() {
    let mut r = Rng::new(0x0123_4567_89AB_CDEF);
    let mut tape = Tape::default();
    let limits = Limits::default();
    let (mut accepted, mut rejected) = (0, 0);
    for case in 0..6000 {
        let mut doc = String::new();
        let depth = 1 + r.below(5) as u32;
        gen_value(&mut r, depth, &mut doc);
        let mut doc = doc.into_bytes();
        // Half the cases: one or two edits (cut, insert, delete, replace a byte).
        if case % 2 == 1 {
            for _ in 0..1 + r.below(2) {
                let at = r.below(doc.len() + 1);
                let bytes = b"\"\\{}[],: u0-.eE\x01\x80\xC3\xFFat";
                let byte = bytes[r.below(bytes.len())];
                match r.below(4) {
                    0 => doc.truncate(at),
                    1 => doc.insert(at, byte),
                    2 if at < doc.len() => {
                        doc.remove(at);
                    }
                    _ if at < doc.len() => doc[at] = byte,
                    _ => {}
                }
            }
        }
        let shown = String::from_utf8_lossy(&doc).into_owned();
        let serde = match serde_json::from_slice::<serde_json::Value>(&doc) {
            Ok(_) => true,
            // JSON allows any number; serde_json rejects those beyond f64 (see above).
            Err(e) if e.to_string().contains("number out of range") => continue,
            Err(_) => false,
        };
        let tape_ok = parse_into(&doc, &mut tape, &limits).is_ok();
        assert_eq!(tape_ok, serde, "case {case}: tape parser vs serde_json on {shown:?}");
        // The one-pass reader accepts the same texts (one value, then only whitespace).
        let p = scan::skip_ws(&doc, 0);
        let mut tokens = 0;
        let skip_ok = scan::skip_value(&doc, p, 0, &mut tokens, &limits).is_ok_and(|end| scan::skip_ws(&doc, end) == doc.len());
        assert_eq!(skip_ok, serde, "case {case}: scan::skip_value vs serde_json on {shown:?}");
        if tape_ok {
            assert_eq!(tokens, tape.token_count(), "case {case}: token counts on {shown:?}");
            accepted += 1;
        } else {
            rejected += 1;
        }
    }
    assert!(accepted > 2000 && rejected > 1000, "{accepted} accepted, {rejected} rejected");
}

#[test]
fn plain_run_utf8_every_byte_at_every_position() {
    // As `plain_run_with::<false>`, without stopping at non-ASCII bytes (the input is known to be UTF-8).
    let special = |b: u8| b == b'"' || b == b'\\' || b < 0x20;
    for start in 0..3 {
        for k in 0..48 {
            for b in 0..=255u8 {
                for tail in [0usize, 1, 9, 20] {
                    let mut inp = vec![b'a'; start + k];
                    inp.push(b);
                    inp.extend(std::iter::repeat_n(b'"', tail));
                    let at = super::plain_run_with::<true>(&inp, start);
                    let first = inp[start..].iter().position(|&c| special(c)).map(|i| i + start);
                    match first {
                        Some(f) => assert!(at == f || (inp.len() - at < 8 && at <= f), "start {start} k {k} byte {b:#x} tail {tail}: {at} vs {f:?}"),
                        None => assert!(inp.len() - at < 8, "start {start} k {k} byte {b:#x}"),
                    }
                }
            }
        }
    }
}

#[test]
fn string_in_text_equals_string_on_utf8_input() {
    // `scan::string_in_text` skips the UTF-8 check of the contents: on any `&str` it gives the
    // same end, escape flag and acceptance as `scan::string`, on generated strings (escapes,
    // controls, every width of UTF-8, unterminated) at every length around the word sizes.
    let pieces = [
        "a",
        "Z",
        " ",
        "é",
        "中",
        "😀",
        "\u{7f}",
        "\u{80}",
        "\u{10FFFF}",
        "\\\"",
        "\\\\",
        "\\/",
        "\\n",
        "\\u0041",
        "\\ud83d\\ude00",
        "\\ud800",
        "\\udc00x",
        "\\x",
        "\\u12",
        "\u{1}",
        "\u{1f}",
        "\t",
        "\"",
        "\\",
    ];
    let mut r = Rng::new(0x51ED_2701_9A4C_33F1);
    for case in 0..20_000 {
        let mut s = String::from("\"");
        for _ in 0..r.below(40) {
            s.push_str(r.pick(&pieces));
        }
        if r.below(4) != 0 {
            s.push('"');
        }
        if r.below(2) == 0 {
            s.push_str(r.pick(&[",", "]", "   ", "\"x\"", "ééééééééééééééééé"]));
        }
        let want = scan::string(s.as_bytes(), 0);
        let got = scan::string_in_text(&s, 0);
        assert_eq!(got.is_ok(), want.is_ok(), "case {case}: {s:?} {got:?} {want:?}");
        if let (Ok(g), Ok(w)) = (got, want) {
            assert_eq!(g, w, "case {case}: {s:?}");
        }
        // With the contents, at every offset (most are not a quote: an error then).
        for q in 0..=s.len() {
            if !s.is_char_boundary(q) {
                continue;
            }
            let want = if s.as_bytes().get(q) == Some(&b'"') { scan::string_in_text(&s, q).ok() } else { None };
            let got = scan::string_in_text_contents(&s, q);
            assert_eq!(got.is_ok(), want.is_some(), "case {case}: {s:?} at {q}");
            if let (Ok((c, end, escaped)), Some(w)) = (got, want) {
                assert_eq!((end, escaped), w, "case {case}: {s:?} at {q}");
                assert_eq!(c, &s[q + 1..end], "case {case}: {s:?} at {q}");
            }
        }
    }
}

/// The contract of `plain_run_with`, written byte by byte from its definition: the run from
/// `p` holds only plain bytes (not `"`, `\\`, a control byte, nor, in the non-UTF-8 flavour, a
/// byte >= 0x80), and it ends at the first special byte or fewer than eight bytes before the
/// end (the caller reads that tail itself). A start past the end is returned as it is.
fn check_plain_run<const UTF8: bool>(inp: &[u8], start: usize, what: &dyn Fn() -> String) {
    let got = super::plain_run_with::<UTF8>(inp, start);
    if start >= inp.len() {
        assert_eq!(got, start, "{}", what());
        return;
    }
    let special = |b: u8| b == b'"' || b == b'\\' || b < 0x20 || (!UTF8 && b >= 0x80);
    let first = inp[start..].iter().position(|&b| special(b)).map_or(inp.len(), |i| start + i);
    assert!(got >= start && got <= first, "utf8 {UTF8}: run ends at {got}, first special at {first}: {}", what());
    assert!(got == first || inp.len() - got < 8, "utf8 {UTF8}: run stops at {got} before a plain word: {}", what());
}

#[test]
fn plain_run_keeps_its_contract() {
    // Every byte value at every position of inputs of every length to 70, from every start
    // (past the end too), both flavours; then random inputs mixing plain and special bytes.
    for len in 0..=70usize {
        for pos in 0..len.max(1) {
            for b in 0..=255u8 {
                let mut inp = vec![b'a'; len];
                if pos < len {
                    inp[pos] = b;
                }
                for start in [0, 1, pos.saturating_sub(1), pos, pos + 1, len, len + 3] {
                    let what = || format!("len {len} pos {pos} byte {b:#x} start {start}");
                    check_plain_run::<false>(&inp, start, &what);
                    check_plain_run::<true>(&inp, start, &what);
                }
            }
        }
    }
    let mut r = Rng::new(0x1234_5678_9ABC_DEF1);
    for _ in 0..20_000 {
        let len = r.below(100);
        let inp: Vec<u8> = (0..len).map(|_| if r.below(12) == 0 { r.below(256) as u8 } else { b'a' + r.below(26) as u8 }).collect();
        let start = r.below(len + 2);
        let what = || format!("{inp:?} {start}");
        check_plain_run::<false>(&inp, start, &what);
        check_plain_run::<true>(&inp, start, &what);
    }
    // The chunk test itself, against the portable lanes, for every byte at every lane.
    for pos in 0..16 {
        for b in 0..=255u8 {
            for fill in [b'a', 0x80, b'~'] {
                let mut c = [fill; 16];
                c[pos] = b;
                for (utf8, got) in [(false, super::first_special::<false>(&c)), (true, super::first_special::<true>(&c))] {
                    let lanes = if utf8 { super::special_lanes::<true>(&c) } else { super::special_lanes::<false>(&c) };
                    assert_eq!(got, lanes.trailing_zeros().min(128) / 8, "pos {pos} byte {b:#x} fill {fill:#x} utf8 {utf8}");
                }
            }
        }
    }
}

/// `scan::text` answers as `std::str::from_utf8` does: ASCII runs of every length around the
/// sixty-four-byte blocks, then a non-ASCII byte (valid or not, whole or cut sequences) at every
/// position, and random bytes.
#[test]
fn text_is_checked_as_the_standard_library_checks_utf8() {
    let tails: [&[u8]; 9] = [b"", "é".as_bytes(), "€x".as_bytes(), "😀".as_bytes(), b"\xC3", b"\xE2\x82", b"\xFF", b"\x80abc", b"\xED\xA0\x80"];
    for len in 0..200 {
        for tail in tails {
            for after in [0usize, 1, 70] {
                let mut v: Vec<u8> = (0..len).map(|i| b"{\"ab\": [1, 2]}\n"[i % 15]).collect();
                v.extend_from_slice(tail);
                v.extend((0..after).map(|i| b'a' + (i % 26) as u8));
                assert_eq!(scan::text(&v), std::str::from_utf8(&v).ok(), "{v:?}");
            }
        }
    }
    let mut r = Rng::new(0x7E57_0F0A_5C11_D0D0);
    for _ in 0..20_000 {
        let n = r.below(300);
        let v: Vec<u8> = (0..n)
            .map(|_| match r.below(400) {
                0 => r.next_u64() as u8,
                1 => 0xC3,
                2 => 0xA9,
                _ => b' ' + r.below(95) as u8,
            })
            .collect();
        assert_eq!(scan::text(&v), std::str::from_utf8(&v).ok(), "{v:?}");
    }
}

/// `unescape_into` against serde_json on generated string contents: plain ASCII and non-ASCII
/// runs of every length around the escapes (simple, `\u` of one unit, surrogate pairs),
/// appended to a buffer already holding bytes, which stay as they were.
#[test]
fn unescape_agrees_with_serde_json() {
    let mut r = Rng::new(0x5EED_0E5C_A9E5_0001);
    let escapes = ["\\\"", "\\\\", "\\/", "\\b", "\\f", "\\n", "\\r", "\\t", "\\u0041", "\\u00e9", "\\u20AC", "\\ud83d\\ude00", "\\u0000"];
    let plain = ["a", "bc", "xyz0123456789", "é", "€", "😀", " ", "~", "<script>"];
    for case in 0..20_000 {
        let mut raw = String::new();
        for _ in 0..r.below(8) {
            if r.chance(50) {
                raw.push_str(r.pick(&escapes));
            } else {
                for _ in 0..1 + r.below(40) {
                    raw.push_str(r.pick(&plain));
                }
            }
        }
        let mut got = b"prefix".to_vec();
        unescape_into(raw.as_bytes(), &mut got);
        assert_eq!(&got[..6], b"prefix", "case {case}: {raw:?}");
        let quoted = format!("\"{raw}\"");
        let decoded: String = serde_json::from_str(&quoted).expect("valid contents");
        assert_eq!(&got[6..], decoded.as_bytes(), "case {case}: {raw:?}");
    }
}
