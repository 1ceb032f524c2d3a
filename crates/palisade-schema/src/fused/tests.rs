//! The fused validator against the tape validator: every keyword-table case of `tests.rs`
//! goes through [`agree`] as well; here the bad-input bars and the corners of the one-pass
//! reading (escaped keys, depth and token limits, evaluation depth, shadow fields).

use super::*;
use crate::tests::{build, one};
use crate::Dialect;
use palisade_json::parse_into;

/// The fused answer must be "nothing to report" exactly when the tape validator reports
/// nothing, except that a root schema the fused pass hands over entirely always says `false`.
pub(crate) fn agree(s: &Schemas, id: SchemaId, json: &[u8], o: &Options) -> bool {
    let mut tape = Tape::default();
    let clean = parse_into(json, &mut tape, &Limits::default()).is_ok() && {
        let mut out = Vec::new();
        s.validate(id, &tape, json, o, &mut out);
        out.is_empty()
    };
    let fused = s.validate_fused(id, json, o, &mut FusedScratch::default());
    if s.plans[id.0 as usize].class == Class::Tape {
        assert!(!fused, "a Tape-class root is never decided by the fused pass");
    } else {
        assert_eq!(
            fused,
            clean,
            "fused and tape validators disagree on {:?} (shadow {})",
            String::from_utf8_lossy(&json[..json.len().min(200)]),
            o.shadow_unknown
        );
    }
    fused
}

fn req() -> Options {
    Options { direction: Direction::Request, shadow_unknown: false, max_violations: 10, max_unknown: 10 }
}

const OBJ: &str = "{type: object, required: [id], additionalProperties: false, properties: {id: {type: integer, minimum: 1}, name: {type: string, maxLength: 3}, tags: {type: array, items: {type: string}}}}";

#[test]
fn malformed_json_is_never_clean() {
    let (s, id) = one(Dialect::Oas30, OBJ);
    for bad in [
        &b""[..],
        b" ",
        b"{",
        b"{\"id\":1",
        b"{\"id\":1,}",
        b"{\"id\":1}x",
        b"{\"id\":1} {}",
        b"{\"id\":01}",
        b"{\"id\":1.}",
        b"{\"id\":-}",
        b"{\"id\" 1}",
        b"{id:1}",
        b"{\"id\":1,\"name\":\"a\x01\"}",
        b"{\"id\":1,\"name\":\"\xff\"}",
        b"{\"id\":1,\"name\":\"\xc3\"}",
        b"{\"id\":1,\"name\":\"\\ud800\"}",
        b"{\"id\":1,\"name\":\"\\x\"}",
        b"{\"id\":1,\"tags\":[\"a\",]}",
        b"{\"id\":1,\"tags\":[\"a\"}",
        b"\xef\xbb\xbf{\"id\":1}",
        b"{\"id\":tru}",
        b"{\"id\":1,\"tags\":[nul]}",
    ] {
        assert!(!agree(&s, id, bad, &req()), "{:?}", String::from_utf8_lossy(bad));
    }
    // Unknown members skipped without a schema are still checked for syntax.
    let (s, id) = one(Dialect::Oas30, "{type: object}");
    for bad in [&b"{\"a\":[1,]}"[..], b"{\"a\":{\"b\" 1}}", b"{\"a\":\"\xff\"}", b"{\"a\":[}"] {
        assert!(!agree(&s, id, bad, &req()));
    }
    assert!(agree(&s, id, br#"{"a":[1,{"b":[true,false,null,"x\u00e9"]}],"c":{}}"#, &req()));
}

#[test]
fn escaped_keys_and_strings() {
    let (s, id) = one(Dialect::Oas30, OBJ);
    assert!(agree(&s, id, br#"{"\u0069d":1,"n\u0061me":"a\"b"}"#, &req()));
    assert!(!agree(&s, id, br#"{"\u0069d":1,"name":"\u00e9\u00e9\u00e9\u00e9"}"#, &req()));
    assert!(agree(&s, id, br#"{"id":1,"name":"\u00e9\u00e9\u00e9"}"#, &req()));
    // A key that starts like a property name but is longer.
    assert!(!agree(&s, id, br#"{"idx":1}"#, &req()));
    assert!(!agree(&s, id, br#"{"id":1,"id2":1}"#, &req()));
    // Duplicates: each occurrence is checked.
    assert!(!agree(&s, id, br#"{"id":1,"id":0}"#, &req()));
}

#[test]
fn nesting_100000_deep_does_not_overflow() {
    let doc = "T: {type: array, items: {$ref: '#/T'}}";
    let (s, id) = build(Dialect::Oas31, &[("main", doc)], "/T").unwrap();
    let deep = "[".repeat(100_000) + &"]".repeat(100_000);
    assert!(!agree(&s, id, deep.as_bytes(), &req()));
    // Also below a schema-less member (the skipper's bit stack).
    let (s2, id2) = one(Dialect::Oas30, "{type: object}");
    let deep = format!("{{\"a\":{}{}}}", "[".repeat(100_000), "]".repeat(100_000));
    assert!(!agree(&s2, id2, deep.as_bytes(), &req()));
    // The parser's limit is 128 open containers, in both readers.
    for n in [126, 127, 128, 129] {
        let t = "[".repeat(n) + &"]".repeat(n);
        agree(&s, id, t.as_bytes(), &req());
        let t = format!("{{\"a\":{}{}}}", "[".repeat(n), "]".repeat(n));
        agree(&s2, id2, t.as_bytes(), &req());
    }
}

#[test]
fn evaluation_depth_is_counted_like_the_tape_validator() {
    // Two `$ref`-only hops per level: the tape validator stops at its evaluation depth
    // before the parser's nesting limit.
    let doc = "T: {type: object, properties: {c: {$ref: '#/U'}}}\nU: {$ref: '#/T'}";
    let (s, id) = build(Dialect::Oas31, &[("main", doc)], "/T").unwrap();
    for n in [50, 99, 100, 101, 110, 127] {
        let t = "{\"c\":".repeat(n) + "{}" + &"}".repeat(n);
        agree(&s, id, t.as_bytes(), &req());
    }
    // A handed-over subtree starts at the depth around it.
    let doc = "T: {type: object, properties: {c: {$ref: '#/U'}, d: {anyOf: [{$ref: '#/T'}, {type: string}]}}}\nU: {$ref: '#/T'}";
    let (s, id) = build(Dialect::Oas31, &[("main", doc)], "/T").unwrap();
    for n in [20, 60, 99, 100, 101, 120] {
        let t = "{\"c\":".repeat(n) + &"{\"d\":".repeat(20) + "\"x\"" + &"}".repeat(n + 20);
        agree(&s, id, t.as_bytes(), &req());
    }
}

#[test]
fn token_limit_matches_the_parser() {
    let (s, id) = one(Dialect::Oas30, "{type: array, items: {type: integer}}");
    let n = (1 << 20) - 1;
    let ok = format!("[{}]", vec!["1"; n].join(","));
    assert!(agree(&s, id, ok.as_bytes(), &req()));
    let over = format!("[{}]", vec!["1"; n + 1].join(","));
    assert!(!agree(&s, id, over.as_bytes(), &req()));
}

#[test]
fn shadow_fields_and_fallback_subtrees() {
    let doc = r#"
s:
  type: object
  properties:
    id: {type: integer}
    nested: {type: object, properties: {x: {}}}
    map: {type: object, additionalProperties: {type: string}}
    free: {type: object}
    alt: {anyOf: [{type: string}, {type: object, properties: {k: {type: integer}}}]}
    ro: {type: string, readOnly: true}
    r: {$ref: '#/R'}
R: {type: object, required: [a], properties: {a: {type: string, enum: [x, y]}}}
"#;
    let (s, id) = build(Dialect::Oas30, &[("main", doc)], "/s").unwrap();
    let shadow = Options { shadow_unknown: true, ..req() };
    let cases: &[&[u8]] = &[
        br#"{"id":1,"nested":{"x":1},"map":{"k":"v"},"free":{"any":1}}"#,
        br#"{"id":1,"nested":{"x":1,"y":2}}"#,
        br#"{"mystery":true}"#,
        br#"{"map":{"k":1}}"#,
        br#"{"alt":"s"}"#,
        br#"{"alt":{"k":1}}"#,
        br#"{"alt":{"k":"1"}}"#,
        br#"{"alt":{"k":1,"z":0}}"#,
        br#"{"alt":5}"#,
        br#"{"ro":"x"}"#,
        br#"{"r":{"a":"x"}}"#,
        br#"{"r":{"a":"z"}}"#,
        br#"{"r":{}}"#,
        br#"{"r":{"a":"x","b":1}}"#,
        br#"{"r":null}"#,
    ];
    for c in cases {
        agree(&s, id, c, &req());
        agree(&s, id, c, &shadow);
        agree(&s, id, c, &Options { direction: Direction::Response, ..shadow });
    }
    assert!(agree(&s, id, cases[0], &shadow));
    assert!(!agree(&s, id, cases[1], &shadow));
    assert!(agree(&s, id, cases[1], &req()));
    assert!(agree(&s, id, cases[5], &req()));
    assert!(!agree(&s, id, cases[9], &req()));
}

/// The expected-member comparison (key with its quotes, against a per-plan table): names of
/// every length class of `bytes_eq` (under 4, 4..8, 8..16, 16..24, over 24 bytes), in schema
/// order, out of order, with whitespace around the colon, prefixes and extensions of names,
/// a key cut short at the end of input, and shadow fields.
#[test]
fn expected_member_keys() {
    let names = ["a", "abcd", "abcdefghij", "abcdefghijklmnopqrst", "abcdefghijklmnopqrstuvwxyz0123"];
    let props: Vec<String> = names.iter().map(|n| format!("{n}: {{type: integer, minimum: 1}}")).collect();
    let schema = format!("{{type: object, required: [a], properties: {{{}}}}}", props.join(", "));
    let (s, id) = one(Dialect::Oas30, &schema);
    let in_order: Vec<String> = names.iter().map(|n| format!("\"{n}\":1")).collect();
    let shadow = Options { shadow_unknown: true, ..req() };
    for o in [req(), shadow] {
        assert!(agree(&s, id, format!("{{{}}}", in_order.join(",")).as_bytes(), &o));
        let mut rev = in_order.clone();
        rev.reverse();
        assert!(agree(&s, id, format!("{{{}}}", rev.join(",")).as_bytes(), &o));
        let spaced: Vec<String> = names.iter().map(|n| format!("\"{n}\" :\t1")).collect();
        assert!(agree(&s, id, format!("{{ {} }}", spaced.join(" , ")).as_bytes(), &o));
        for n in names {
            // A failing value right after the key: the key must have been recognised.
            assert!(!agree(&s, id, format!("{{\"a\":1,\"{n}\":0}}").as_bytes(), &o));
            // One byte shorter, one byte longer, last byte changed.
            let short = &n[..n.len() - 1];
            for other in [short.to_string(), format!("{n}x"), format!("{short}_")] {
                if other.is_empty() || names.contains(&other.as_str()) {
                    continue;
                }
                let doc = format!("{{\"a\":1,\"{other}\":0}}");
                let verdict = agree(&s, id, doc.as_bytes(), &o);
                // Unknown members pass unless shadow fields are on.
                assert_eq!(verdict, !o.shadow_unknown, "{doc}");
            }
            // Input ending inside the key.
            let cut = format!("{{\"a\":1,\"{n}");
            assert!(!agree(&s, id, cut.as_bytes(), &o));
        }
    }
}

#[test]
fn bytes_eq_all_lengths() {
    let base: Vec<u8> = (0..40u8).map(|i| b'a' + i % 26).collect();
    for n in 0..40 {
        let a = &base[..n];
        let copy = a.to_vec();
        assert!(bytes_eq(a, &copy));
        for i in 0..n {
            let mut b = a.to_vec();
            b[i] ^= 1;
            assert!(!bytes_eq(a, &b), "length {n}, byte {i}");
        }
        if n > 0 {
            assert!(!bytes_eq(a, &base[..n - 1]));
        }
    }
}

/// The member loop for runs of quick-kind values (`Walker::member` reading key, value and
/// separator itself): every value kind, wrong kinds, whitespace, broken separators and
/// truncations, against the tape validator.
#[test]
fn quick_member_runs() {
    let schema = "{type: object, required: [i, s], properties: {i: {type: integer}, s: {type: string}, b: {type: boolean}, \
                  n: {type: string, nullable: true}, f: {type: number}, a: {}, o: {type: object}, t: {type: integer, minimum: 0}}}";
    let (s, id) = one(Dialect::Oas30, schema);
    let good = r#"{"i":1,"s":"x","b":true,"n":null,"f":1.5e3,"a":[1,{"z":2}],"o":{"k":"v"},"t":3}"#;
    let docs = [
        good,
        r#"{ "i" : 1 , "s" : "x" , "b" : false , "n" : "y" , "f" : -0.5 , "a" : "q" , "o" : {} , "t" : 0 }"#,
        r#"{"i":1.5,"s":"x"}"#,
        r#"{"i":1,"s":2}"#,
        r#"{"i":1,"s":"x","b":null}"#,
        r#"{"i":1,"s":"x","n":1}"#,
        r#"{"i":1,"s":"x","f":"1"}"#,
        r#"{"i":1,"s":"x","o":[]}"#,
        r#"{"i":1,"s":"x","t":-1}"#,
        r#"{"i":1,"s":"x",}"#,
        r#"{"i":1,,"s":"x"}"#,
        r#"{"i":1 "s":"x"}"#,
        r#"{"i":1,"s":"x"]"#,
        r#"{"i":01,"s":"x"}"#,
        r#"{"i":1,"s":"x\u00"}"#,
        r#"{"s":"x","i":1}"#,
        r#"{"i":1,"i":2,"s":"x"}"#,
        r#"{"i":1,"s":"x","zz":1}"#,
        r#"{"i":1}"#,
        r#"[{"i":1,"s":"x"}]"#,
    ];
    let shadow = Options { shadow_unknown: true, ..req() };
    for o in [req(), shadow] {
        assert!(agree(&s, id, good.as_bytes(), &o));
        for d in docs {
            agree(&s, id, d.as_bytes(), &o);
            for cut in 0..d.len() {
                assert!(!agree(&s, id, &d.as_bytes()[..cut], &o));
            }
        }
    }
}

/// Scalars for [`Class::Fused`] schemas checked in the member loop (`Walker::scalar`), and the
/// integer-range fast path (`Plan::irange`): bounds inclusive and exclusive (both dialects),
/// `int32`/`int64`, fractional bounds and `multipleOf` (no range: the full check), integers
/// written long, negative, with exponents or fractions, and values of the wrong kind.
#[test]
fn inline_scalars_and_integer_ranges() {
    let cases = [
        (Dialect::Oas30, "{type: integer, minimum: -3, maximum: 7}"),
        (Dialect::Oas30, "{type: integer, minimum: -3, exclusiveMinimum: true, maximum: 7, exclusiveMaximum: true}"),
        (Dialect::Oas31, "{type: integer, exclusiveMinimum: -3, exclusiveMaximum: 7}"),
        (Dialect::Oas30, "{type: integer, format: int32}"),
        (Dialect::Oas30, "{type: integer, format: int64, minimum: 0}"),
        (Dialect::Oas30, "{type: number, minimum: 0.5, maximum: 7}"),
        (Dialect::Oas30, "{type: integer, minimum: 0, multipleOf: 3}"),
        (Dialect::Oas30, "{type: number, maximum: 9223372036854775807}"),
        (Dialect::Oas30, "{minimum: 1}"),
        (Dialect::Oas30, "{type: integer, minimum: 1, nullable: true}"),
        (Dialect::Oas30, "{type: string, maxLength: 3}"),
        (Dialect::Oas30, "{type: string, format: date-time, nullable: true}"),
        (Dialect::Oas30, "{type: boolean, enum: [true]}"),
    ];
    let values = [
        "-4",
        "-3",
        "-2",
        "0",
        "6",
        "7",
        "8",
        "-0",
        "1",
        "3",
        "4",
        "9",
        "0.5",
        "0.4",
        "7.0",
        "1e0",
        "-1E2",
        "2147483647",
        "2147483648",
        "-2147483648",
        "-2147483649",
        "123456789012345678",
        "1234567890123456789",
        "9223372036854775807",
        "9223372036854775808",
        "-9223372036854775808",
        "-9223372036854775809",
        "99999999999999999999999",
        "-999999999999999999",
        "true",
        "false",
        "null",
        "\"abc\"",
        "\"abcd\"",
        "\"a\\u00e9c\"",
        "\"2020-01-01T00:00:00Z\"",
        "\"2020-02-30T00:00:00Z\"",
        "[]",
        "{}",
        "01",
        "1.",
        "-",
    ];
    for (dialect, prop) in cases {
        let schema = format!("{{type: object, properties: {{a: {{type: integer}}, v: {prop}, w: {{type: string}}}}}}");
        let (s, id) = one(dialect, &schema);
        for v in values {
            for doc in [
                format!("{{\"a\":1,\"v\":{v},\"w\":\"x\"}}"),
                format!("{{\"v\":{v}}}"),
                format!("{{\"a\":1,\"v\" : {v} }}"),
                format!("{{\"w\":\"x\",\"v\":{v},\"a\":2}}"),
            ] {
                agree(&s, id, doc.as_bytes(), &req());
            }
        }
    }
}

/// The member loop takes the property after the expected one when the expected one is left
/// out, and anything else by name: optional properties missing, out of order, repeated.
#[test]
fn skipped_optional_members() {
    let schema = "{type: object, required: [a, d], additionalProperties: false, properties: \
                  {a: {type: integer}, b: {type: string}, c: {type: integer, minimum: 0}, d: {type: boolean}, e: {type: string, maxLength: 2}}}";
    let (s, id) = one(Dialect::Oas30, schema);
    let shadow = Options { shadow_unknown: true, ..req() };
    let docs = [
        (r#"{"a":1,"b":"x","c":2,"d":true,"e":"yy"}"#, true),
        (r#"{"a":1,"c":2,"d":true}"#, true),
        (r#"{"a":1,"d":true}"#, true),
        (r#"{"a":1,"c":-1,"d":true}"#, false),
        (r#"{"a":1,"c":2,"e":"yyy","d":true}"#, false),
        (r#"{"a":1,"c":2,"e":"yy"}"#, false),
        (r#"{"b":"x","a":1,"d":true}"#, true),
        (r#"{"a":1,"b":"x","b":"y","d":true}"#, true),
        (r#"{"a":1,"x":1,"d":true}"#, false),
        (r#"{"a":1,"c":2,"c":-2,"d":true}"#, false),
    ];
    for o in [req(), shadow] {
        for (d, ok) in docs {
            assert_eq!(agree(&s, id, d.as_bytes(), &o), ok, "{d}");
        }
    }
}

/// `Expect::is_at` (masked words for quoted names up to 24 bytes, a byte comparison beyond)
/// against a plain prefix comparison: every name length, with and without 24 bytes of input
/// after the key, every one-byte change of the key.
#[test]
fn expect_is_at_every_length() {
    for len in 1..=30usize {
        let name: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
        let quoted: Vec<u8> = [&b"\""[..], &name, b"\""].concat();
        let (words, masks) = key_words(&quoted);
        let e = Expect { quoted: quoted.clone().into(), words, masks, bit: 1, sid: 0, quick: 0, target: 0, cost: 0, inline: false, irange: None };
        for tail in [&b":1}"[..], b":1,\"zzzzzzzzzzzzzzzzzzzzzzzzzzzz\":2}"] {
            let doc: Vec<u8> = [&b"{"[..], &quoted, tail].concat();
            assert!(e.is_at(&doc, 1), "length {len}, tail {}", tail.len());
            for i in 0..quoted.len() {
                let mut bad = doc.clone();
                bad[1 + i] ^= 0x20;
                assert!(!e.is_at(&bad, 1), "length {len}, byte {i}");
            }
            // Cut inside the key.
            assert!(!e.is_at(&doc[..quoted.len()], 1), "length {len}, cut");
        }
    }
}

/// A property whose name holds a quote, a backslash or a control character is never matched
/// in place (its key is unescaped by `member_any`); in particular not by a NUL byte where a
/// key should start (invalid JSON, which the fused pass accepted before).
#[test]
fn non_plain_names_never_match_in_place() {
    let (s, id) = one(Dialect::Oas30, r#"{type: object, properties: {"a\"b": {type: integer}, "c\\d": {type: integer}}}"#);
    for o in [req(), Options { shadow_unknown: true, ..req() }] {
        assert!(agree(&s, id, br#"{"a\"b":1,"c\\d":2}"#, &o));
        assert!(!agree(&s, id, br#"{"a\"b":"x"}"#, &o));
        assert!(!agree(&s, id, b"{\x00:1}", &o));
        assert!(!agree(&s, id, b"{\"a\\\"b\":1,\x00:1}", &o));
    }
}

/// The settled strings of a valid document: string values of an `enum` and of date, time and
/// UUID formats, written without escapes (whether their key is read in the expected order,
/// escaped or not); not keys, free strings, nor anything escaped.
#[test]
fn settled_strings_are_enum_and_closed_format_values() {
    let schema = "{type: object, properties: {id: {type: integer}, kind: {type: string, enum: [a, 'b c']}, at: {type: string, format: date-time}, \
        note: {type: string}, tags: {type: array, items: {type: string, format: uuid}}, meta: {type: object, additionalProperties: {type: string}}}}";
    let (s, id) = one(Dialect::Oas30, schema);
    let json = br#"{"id":1,"kind":"b c","at":"2024-05-14T09:31:27Z","note":"hi","tags":["3f2b8c1e-9a4d-4e7b-b1c2-5d6e7f8a9b0c"],"meta":{"free":"x"},"kin\u0064":"a","at":"2024-05-14T09:31:27\u005a","kind":"a"}"#;
    let mut sc = FusedScratch::default();
    sc.record_settled(true);
    assert!(s.validate_fused(id, json, &req(), &mut sc));
    let texts: Vec<&str> = sc.settled().iter().map(|&(p, n)| std::str::from_utf8(&json[p as usize..(p + n) as usize]).unwrap()).collect();
    assert_eq!(texts, ["b c", "2024-05-14T09:31:27Z", "3f2b8c1e-9a4d-4e7b-b1c2-5d6e7f8a9b0c", "a", "a"]);
    // Each is a whole string's contents: a quote on either side.
    assert!(sc.settled().iter().all(|&(p, n)| json[p as usize - 1] == b'"' && json[(p + n) as usize] == b'"'));
    // Not recording: nothing listed; a new document: the list starts afresh.
    sc.record_settled(false);
    assert!(s.validate_fused(id, json, &req(), &mut sc));
    assert!(sc.settled().is_empty());
    sc.record_settled(true);
    assert!(s.validate_fused(id, br#"{"at":"2024-05-14T00:00:00Z"}"#, &req(), &mut sc));
    assert_eq!(sc.settled(), [(7, 20)]);
    assert!(s.validate_fused(id, br#"{"note":"2024-05-14"}"#, &req(), &mut sc));
    assert!(sc.settled().is_empty());
}
