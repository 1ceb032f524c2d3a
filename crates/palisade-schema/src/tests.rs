//! Keyword tables for both dialects (valid and invalid instances), with an in-test resolver
//! over one or two YAML documents.

use super::*;
use palisade_config::yaml;
use palisade_json::{parse_into, Limits, Tape};

/// Documents by name; `$ref`s are `#/pointer` (same document) or `name#/pointer`.
pub(crate) struct TestResolver {
    pub docs: Vec<(String, Node)>,
}

fn pointer_get<'a>(mut node: &'a Node, pointer: &str) -> Result<&'a Node, Error> {
    let err = |m: String| Error::new(ErrorKind::Reference, m);
    if pointer.is_empty() {
        return Ok(node);
    }
    let Some(rest) = pointer.strip_prefix('/') else { return Err(err(format!("not a JSON pointer: {pointer:?}"))) };
    for raw in rest.split('/') {
        let token = raw.replace("~1", "/").replace("~0", "~");
        node = match &node.value {
            yaml::Value::Map(_) => node.get(&token).ok_or_else(|| err(format!("no {token:?} in {pointer:?}")))?,
            yaml::Value::Seq(items) => {
                token.parse::<usize>().ok().and_then(|i| items.get(i)).ok_or_else(|| err(format!("no item {token:?} in {pointer:?}")))?
            }
            _ => return Err(err(format!("{pointer:?} goes through a scalar"))),
        };
    }
    Ok(node)
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let Ok(v) = u8::from_str_radix(&s[i + 1..i + 3], 16) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8(out).unwrap()
}

impl Resolver for TestResolver {
    fn resolve(&self, base: DocId, reference: &str) -> Result<Resolved<'_>, Error> {
        let err = |m: String| Error::new(ErrorKind::Reference, m);
        let (file, frag) = reference.split_once('#').unwrap_or((reference, ""));
        let doc =
            if file.is_empty() { base } else { self.docs.iter().position(|(n, _)| n == file).ok_or_else(|| err(format!("no document {file:?}")))? as DocId };
        let pointer = percent_decode(frag);
        if !pointer.is_empty() && !pointer.starts_with('/') {
            return Err(err(format!("{frag:?} is not a JSON pointer")));
        }
        let node = pointer_get(&self.docs[doc as usize].1, &pointer)?;
        Ok(Resolved { doc, pointer, node })
    }
}

pub(crate) fn resolver(docs: &[(&str, &str)]) -> TestResolver {
    TestResolver { docs: docs.iter().map(|(n, t)| (n.to_string(), yaml::parse(t).unwrap_or_else(|e| panic!("yaml: {e:?}")))).collect() }
}

/// Compile `#/<pointer>` of the first document.
pub(crate) fn build(dialect: Dialect, docs: &[(&str, &str)], pointer: &str) -> Result<(Schemas, SchemaId), Vec<SchemaError>> {
    let r = resolver(docs);
    let mut c = Compiler::new(dialect, &r);
    let node = pointer_get(&r.docs[0].1, pointer).unwrap();
    let id = c.compile(0, pointer, node);
    let s = c.finish()?;
    Ok((s, id))
}

pub(crate) fn one(dialect: Dialect, schema: &str) -> (Schemas, SchemaId) {
    build(dialect, &[("main", &format!("s: {schema}"))], "/s").unwrap_or_else(|e| panic!("compile {schema}: {e:?}"))
}

fn opts(direction: Direction) -> Options {
    Options { direction, shadow_unknown: false, max_violations: 100, max_unknown: 100 }
}

fn run(s: &Schemas, id: SchemaId, json: &str, o: &Options) -> (bool, Vec<Violation>) {
    let mut tape = Tape::default();
    parse_into(json.as_bytes(), &mut tape, &Limits::default()).unwrap_or_else(|e| panic!("bad test JSON {json}: {e}"));
    let mut out = Vec::new();
    let ok = s.validate(id, &tape, json.as_bytes(), o, &mut out);
    // Every case doubles as a differential case for the fused validator.
    crate::fused::tests::agree(s, id, json.as_bytes(), o);
    (ok, out)
}

/// Each case: instance JSON, expected validity, and (for invalid ones) the keyword expected
/// among the violations.
fn table(dialect: Dialect, schema: &str, cases: &[(&str, Option<&str>)]) {
    let (s, id) = one(dialect, schema);
    for (json, expect) in cases {
        let (ok, v) = run(&s, id, json, &opts(Direction::Request));
        match expect {
            None => assert!(ok && v.is_empty(), "{dialect:?} {schema}: {json} should be valid, got {v:?}"),
            Some(kw) => {
                assert!(!ok, "{dialect:?} {schema}: {json} should be invalid");
                assert!(v.iter().any(|x| x.keyword == *kw), "{dialect:?} {schema}: {json}: expected keyword {kw}, got {v:?}");
            }
        }
    }
}

const V: Option<&str> = None;

#[test]
fn smoke_oas30_object() {
    table(
        Dialect::Oas30,
        "{type: object, required: [id], additionalProperties: false, properties: {id: {type: integer, minimum: 1}, name: {type: string, maxLength: 3}}}",
        &[
            (r#"{"id": 1}"#, V),
            (r#"{"id": 1, "name": "abc"}"#, V),
            (r#"{"id": 0}"#, Some("minimum")),
            (r#"{"name": "a"}"#, Some("required")),
            (r#"{"id": 1, "name": "abcd"}"#, Some("maxLength")),
            (r#"{"id": 1, "x": 1}"#, Some("additionalProperties")),
            (r#"{"id": "1"}"#, Some("type")),
            (r#"[]"#, Some("type")),
        ],
    );
}

const O30: Dialect = Dialect::Oas30;
const O31: Dialect = Dialect::Oas31;

#[test]
fn type_keyword() {
    for d in [O30, O31] {
        table(d, "{type: string}", &[(r#""x""#, V), ("1", Some("type")), ("null", Some("type")), ("true", Some("type"))]);
        table(
            d,
            "{type: integer}",
            &[
                ("1", V),
                ("1.0", V),
                ("1e2", V),
                ("-0", V),
                ("12345678901234567890123", V),
                ("1.5", Some("type")),
                ("1e-1", Some("type")),
                (r#""1""#, Some("type")),
            ],
        );
        table(d, "{type: number}", &[("1", V), ("1.5", V), ("-1e400", V), (r#""1""#, Some("type"))]);
        table(d, "{type: boolean}", &[("true", V), ("false", V), ("0", Some("type"))]);
        table(d, "{type: array}", &[("[]", V), ("{}", Some("type"))]);
        table(d, "{type: object}", &[("{}", V), ("[]", Some("type"))]);
    }
    table(O31, "{type: 'null'}", &[("null", V), ("0", Some("type"))]);
    table(O31, "{type: [string, 'null']}", &[("null", V), (r#""a""#, V), ("1", Some("type"))]);
    table(O31, "{type: [integer, boolean]}", &[("2", V), ("true", V), ("2.5", Some("type"))]);
    // The message names what was expected and what came, never the value.
    let (s, id) = one(O30, "{type: string}");
    let (_, v) = run(&s, id, "12345", &opts(Direction::Request));
    assert_eq!(v, [Violation { kind: ViolationKind::Invalid, path: String::new(), keyword: "type", message: "must be string, not integer".into() }]);
}

#[test]
fn nullable_oas30() {
    table(O30, "{type: string, nullable: true, maxLength: 2}", &[("null", V), (r#""ab""#, V), (r#""abc""#, Some("maxLength")), ("1", Some("type"))]);
    table(O30, "{type: string, nullable: false}", &[("null", Some("type"))]);
    table(O30, "{type: string, enum: [a, b], nullable: true}", &[("null", V), (r#""a""#, V), (r#""c""#, Some("enum"))]);
    // Not a keyword in 3.1: honoured by default (specs converted from 3.0 mean it), ignored on
    // request; one warning for the whole spec either way.
    let (s, id) = one(O31, "{type: object, properties: {a: {type: integer, nullable: true}, b: {type: string, nullable: true}}}");
    assert!(run(&s, id, r#"{"a": null, "b": null}"#, &opts(Direction::Request)).0);
    assert!(!run(&s, id, r#"{"a": "x"}"#, &opts(Direction::Request)).0);
    let w: Vec<_> = s.warnings().iter().filter(|w| w.message.contains("nullable is an OpenAPI 3.0 keyword")).collect();
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].message.contains("2 schema(s)") && w[0].message.contains("honoured") && w[0].pointer == "/s/properties/a/nullable", "{w:?}");
    let r = resolver(&[("main", "s: {type: string, nullable: true}")]);
    let mut c = Compiler::new(O31, &r);
    c.set_nullable(crate::Nullable::Ignore);
    let id = c.compile(0, "/s", r.docs[0].1.get("s").unwrap());
    let s = c.finish().unwrap();
    assert!(!run(&s, id, "null", &opts(Direction::Request)).0);
    assert!(run(&s, id, r#""x""#, &opts(Direction::Request)).0);
    assert!(s.warnings().iter().any(|w| w.message.contains("ignored, as 3.1 says")));
}

#[test]
fn formats_assert_by_default_and_annotate_on_request() {
    let r = resolver(&[("main", "s: {type: string, format: uuid}\nt: {type: string, format: no-such-format}")]);
    for (formats, valid_for_junk) in [(crate::Formats::Assert, false), (crate::Formats::Annotate, true)] {
        let mut c = Compiler::new(O31, &r);
        c.set_formats(formats);
        let id = c.compile(0, "/s", r.docs[0].1.get("s").unwrap());
        c.compile(0, "/t", r.docs[0].1.get("t").unwrap());
        let s = c.finish().unwrap();
        assert!(run(&s, id, r#""123e4567-e89b-12d3-a456-426614174000""#, &opts(Direction::Request)).0, "{formats:?}");
        assert_eq!(run(&s, id, r#""not a uuid""#, &opts(Direction::Request)).0, valid_for_junk, "{formats:?}");
        // Other keywords still apply, and an unknown format is only worth a warning when formats assert.
        assert!(!run(&s, id, "7", &opts(Direction::Request)).0, "{formats:?}");
        assert_eq!(s.warnings().iter().any(|w| w.message.contains("unknown format")), formats == crate::Formats::Assert, "{formats:?}");
    }
}

#[test]
fn enum_and_const() {
    for d in [O30, O31] {
        table(
            d,
            "{enum: [a, 1, 2.5, null, true, [1, 2], {k: v}]}",
            &[
                (r#""a""#, V),
                ("1", V),
                ("1.0", V),
                ("2.50", V),
                ("null", V),
                ("true", V),
                ("[1,2]", V),
                (r#"{"k":"v"}"#, V),
                (r#""\u0061""#, V),
                (r#""b""#, Some("enum")),
                ("false", Some("enum")),
                ("[2,1]", Some("enum")),
                (r#"{"k":"w"}"#, Some("enum")),
                (r#"{"k":"v","x":1}"#, Some("enum")),
            ],
        );
    }
    table(
        O31,
        "{const: {a: [1, {b: null}]}}",
        &[(r#"{"a":[1,{"b":null}]}"#, V), (r#"{"a":[1.0,{"b":null}]}"#, V), (r#"{"a":[1,{"b":0}]}"#, Some("const")), ("1", Some("const"))],
    );
    table(O31, "{const: 9007199254740993}", &[("9007199254740993", V), ("9007199254740992", Some("const"))]);
}

#[test]
fn numeric_bounds() {
    for d in [O30, O31] {
        table(d, "{minimum: 1, maximum: 10}", &[("1", V), ("10", V), ("5.5", V), ("0.999", Some("minimum")), ("10.0001", Some("maximum")), (r#""x""#, V)]);
        table(d, "{multipleOf: 0.01}", &[("19.99", V), ("0.07", V), ("1e2", V), ("19.991", Some("multipleOf"))]);
        table(d, "{multipleOf: 3}", &[("9", V), ("-9", V), ("0", V), ("10", Some("multipleOf")), ("9.5", Some("multipleOf"))]);
    }
    // Boolean exclusive bounds (3.0).
    table(
        O30,
        "{minimum: 0, exclusiveMinimum: true, maximum: 5, exclusiveMaximum: true}",
        &[("0.0001", V), ("4.9", V), ("0", Some("exclusiveMinimum")), ("5", Some("exclusiveMaximum")), ("-1", Some("exclusiveMinimum"))],
    );
    table(O30, "{minimum: 0, exclusiveMinimum: false}", &[("0", V), ("-1", Some("minimum"))]);
    // Numeric exclusive bounds (3.1), alongside inclusive ones.
    table(O31, "{exclusiveMinimum: 0, maximum: 5, exclusiveMaximum: 10}", &[("0.1", V), ("5", V), ("0", Some("exclusiveMinimum")), ("5.1", Some("maximum"))]);
    // Beyond 2^53 and beyond i64: exact.
    table(O31, "{maximum: 9007199254740992}", &[("9007199254740992", V), ("9007199254740993", Some("maximum")), ("9007199254740992.0000001", Some("maximum"))]);
    table(
        O31,
        "{minimum: 9223372036854775807}",
        &[("9223372036854775808", V), ("9223372036854775807", V), ("9223372036854775806", Some("minimum")), ("1e19", V)],
    );
    table(O31, "{type: integer, maximum: 1e30}", &[("1000000000000000000000000000000", V), ("1000000000000000000000000000001", Some("maximum"))]);
    table(O31, "{type: integer, multipleOf: 2}", &[("18446744073709551618", V), ("18446744073709551617", Some("multipleOf"))]);
    table(
        O30,
        "{type: integer, format: int64}",
        &[("9223372036854775807", V), ("9223372036854775808", Some("format")), ("-9223372036854775809", Some("format"))],
    );
    table(O30, "{type: integer, format: int32}", &[("2147483647", V), ("2147483648", Some("format"))]);
    table(O30, "{type: number, format: double}", &[("1.5", V), ("1e308", V)]);
    let (s, id) = one(O30, "{maximum: 1000}");
    let (_, v) = run(&s, id, "1001", &opts(Direction::Request));
    assert_eq!(v[0].message, "must be <= 1000");
}

#[test]
fn strings() {
    for d in [O30, O31] {
        table(d, "{minLength: 2, maxLength: 3}", &[(r#""ab""#, V), (r#""abc""#, V), (r#""a""#, Some("minLength")), (r#""abcd""#, Some("maxLength")), ("1", V)]);
        // Code points, not bytes and not UTF-16 units.
        table(d, "{maxLength: 2}", &[(r#""éé""#, V), (r#""😀😀""#, V), (r#""\uD83D\uDE00\u00e9""#, V), (r#""😀😀a""#, Some("maxLength"))]);
        table(d, "{minLength: 2}", &[(r#""😀😀""#, V), (r#""😀""#, Some("minLength")), (r#""é""#, Some("minLength"))]);
        table(d, "{pattern: '^[a-z]+\\d$'}", &[(r#""abc1""#, V), (r#""abc""#, Some("pattern")), (r#""abc١""#, Some("pattern")), ("5", V)]);
        table(d, "{pattern: 'b'}", &[(r#""abc""#, V), (r#""\u0062""#, V), (r#""xyz""#, Some("pattern"))]);
    }
}

#[test]
fn backtracking_patterns_are_enforced_with_a_budget() {
    // lookahead (a password rule) and a backreference: enforced, with a warning that says so
    let (s, id) = one(O30, "{type: string, pattern: '^(?!admin)\\w+$'}");
    let o = opts(Direction::Request);
    assert!(run(&s, id, r#""alice""#, &o).0);
    let (ok, v) = run(&s, id, r#""admin""#, &o);
    assert!(!ok && v[0].keyword == "pattern", "{v:?}");
    assert!(s.warnings().iter().any(|w| w.message.contains("needs backtracking") && w.pointer == "/s/pattern"));
    let (s, id) = one(O31, "{type: object, patternProperties: {'^(a+)-\\1$': {type: integer}}}");
    assert!(!run(&s, id, r#"{"aa-aa": "x"}"#, &o).0);
    assert!(run(&s, id, r#"{"aa-a": "x"}"#, &o).0);
    // a value that exhausts the budget is rejected, with its own message
    let (s, id) = one(O30, "{type: string, pattern: '^(?=x)(a|aa)+(?!b)c$'}");
    let evil = format!("\"x{}\"", "a".repeat(60));
    let (ok, v) = run(&s, id, &evil, &o);
    assert!(!ok);
    assert!(v[0].message.contains("backtracking steps") || v[0].message.contains("must match"), "{v:?}");
    // ECMA's \s includes U+FEFF, which Unicode White_Space does not
    table(O31, "{pattern: '^\\s$'}", &[("\"\\ufeff\"", V), ("\"\\u00a0\"", V), ("\"a\"", Some("pattern"))]);
    table(O31, "{pattern: '^\\S$'}", &[("\"\\ufeff\"", Some("pattern")), ("\"a\"", V)]);
}

#[test]
fn formats_apply_by_type() {
    table(O30, "{format: date-time}", &[(r#""2024-05-14T09:31:27Z""#, V), (r#""2024-05-14""#, Some("format")), ("5", V)]);
    table(O30, "{format: email}", &[(r#""a@example.com""#, V), (r#""nope""#, Some("format"))]);
    table(O30, "{format: uuid}", &[(r#""123e4567-e89b-12d3-a456-426614174000""#, V), (r#""123""#, Some("format"))]);
    table(O31, "{format: ipv6}", &[(r#""::ffff:1.2.3.4""#, V), (r#""1.2.3.4""#, Some("format"))]);
    table(O31, "{format: byte}", &[(r#""aGk=""#, V), (r#""aGk""#, Some("format"))]);
    let (s, id) = one(O30, "{format: x-custom}");
    assert!(run(&s, id, r#""anything""#, &opts(Direction::Request)).0);
    assert!(s.warnings()[0].message.contains("unknown format"));
}

#[test]
fn arrays() {
    for d in [O30, O31] {
        table(
            d,
            "{items: {type: integer}, minItems: 1, maxItems: 3}",
            &[("[1]", V), ("[1,2,3]", V), ("[]", Some("minItems")), ("[1,2,3,4]", Some("maxItems")), ("[1,\"a\"]", Some("type"))],
        );
        table(
            d,
            "{uniqueItems: true}",
            &[
                ("[1,2,3]", V),
                ("[]", V),
                (r#"[{"a":1,"b":2},{"b":2,"a":1}]"#, Some("uniqueItems")),
                ("[1, 1.0]", Some("uniqueItems")),
                (r#"["a","\u0061"]"#, Some("uniqueItems")),
                ("[[1],[1]]", Some("uniqueItems")),
                ("[[1],[2]]", V),
                ("[0, false, null, \"0\"]", V),
            ],
        );
    }
    table(
        O31,
        "{prefixItems: [{type: string}, {type: integer}], items: false}",
        &[(r#"["a", 1]"#, V), (r#"["a"]"#, V), (r#"[1, 1]"#, Some("type")), (r#"["a", 1, 2]"#, Some("false"))],
    );
    table(O31, "{contains: {type: string}}", &[(r#"[1, "a"]"#, V), ("[1, 2]", Some("contains")), ("[]", Some("contains"))]);
    table(
        O31,
        "{contains: {type: string}, minContains: 2, maxContains: 3}",
        &[(r#"["a","b"]"#, V), (r#"["a",1]"#, Some("contains")), (r#"["a","b","c","d"]"#, Some("maxContains"))],
    );
    table(O31, "{contains: {type: string}, minContains: 0}", &[("[1]", V), ("[]", V)]);
    // 3.1-only keywords are ignored in 3.0.
    table(O30, "{prefixItems: [{type: string}], contains: {type: string}}", &[("[1]", V)]);
}

#[test]
fn objects() {
    for d in [O30, O31] {
        table(
            d,
            "{minProperties: 1, maxProperties: 2}",
            &[(r#"{"a":1}"#, V), ("{}", Some("minProperties")), (r#"{"a":1,"b":2,"c":3}"#, Some("maxProperties"))],
        );
        table(
            d,
            "{properties: {a: {type: integer}}, additionalProperties: {type: string}}",
            &[(r#"{"a":1,"b":"x"}"#, V), (r#"{"a":1,"b":2}"#, Some("type")), (r#"{"a":"1"}"#, Some("type"))],
        );
        table(
            d,
            "{properties: {'a/b': {type: integer}, '~': {type: integer}}, required: ['a/b']}",
            &[(r#"{"a/b":1}"#, V), (r#"{"a\/b":1,"~":2}"#, V), ("{}", Some("required"))],
        );
        table(d, "{required: [x, y]}", &[(r#"{"x":1,"y":2}"#, V), (r#"{"x":1}"#, Some("required")), ("[]", V)]);
    }
    table(
        O31,
        "{patternProperties: {'^x-': {type: string}}, additionalProperties: false}",
        &[(r#"{"x-a":"1"}"#, V), (r#"{"x-a":1}"#, Some("type")), (r#"{"y":"1"}"#, Some("additionalProperties"))],
    );
    table(
        O31,
        "{propertyNames: {maxLength: 3, pattern: '^[a-z]+$'}}",
        &[(r#"{"abc":1}"#, V), (r#"{"abcd":1}"#, Some("maxLength")), (r#"{"A":1}"#, Some("pattern"))],
    );
    table(O31, "{dependentRequired: {card: [billing]}}", &[(r#"{"card":1,"billing":2}"#, V), (r#"{"x":1}"#, V), (r#"{"card":1}"#, Some("dependentRequired"))]);
    table(O31, "{dependentSchemas: {card: {required: [billing]}}}", &[(r#"{"card":1,"billing":2}"#, V), (r#"{"card":1}"#, Some("required"))]);
    // Many properties (beyond the 64-bit fast path of required).
    let props: Vec<String> = (0..80).map(|i| format!("p{i}: {{type: integer}}")).collect();
    let schema = format!("{{properties: {{{}}}, required: [p0, p70, q]}}", props.join(", "));
    table(O30, &schema, &[(r#"{"p0":1,"p70":2,"q":3}"#, V), (r#"{"p0":1,"q":3}"#, Some("required")), (r#"{"p0":1,"p70":"x","q":3}"#, Some("type"))]);
}

#[test]
fn violation_paths_are_pointers() {
    let (s, id) = one(O30, "{properties: {users: {items: {properties: {'i/d': {type: integer}, 'a~b': {type: integer}}}}}}");
    let (ok, v) = run(&s, id, r#"{"users":[{"i/d":1},{"i/d":1},{"i/d":1},{"i/d":"x","a~b":"y"}]}"#, &opts(Direction::Request));
    assert!(!ok);
    let paths: Vec<&str> = v.iter().map(|x| x.path.as_str()).collect();
    assert_eq!(paths, ["users/3/i~1d", "users/3/a~0b"]);
}

#[test]
fn messages_never_echo_long_values() {
    let (s, id) = one(O30, "{additionalProperties: false, required: [id]}");
    let long_key = "k".repeat(500);
    let (_, v) = run(&s, id, &format!(r#"{{"{long_key}": "{}"}}"#, "v".repeat(500)), &opts(Direction::Request));
    assert_eq!(v.len(), 2);
    for x in &v {
        assert!(x.message.len() < 80, "{}", x.message);
    }
    assert!(v[0].message.starts_with("property \"kkkk"));
    let (s, id) = one(O31, "{oneOf: [{const: a}], discriminator: {propertyName: t}}");
    let (_, v) = run(&s, id, &format!(r#"{{"t": "{}"}}"#, "z".repeat(300)), &opts(Direction::Request));
    assert!(v[0].message.len() < 100, "{}", v[0].message);
}

#[test]
fn max_violations_stops_early() {
    let (s, id) = one(O30, "{items: {type: string}}");
    let o = Options { direction: Direction::Request, shadow_unknown: false, max_violations: 2, max_unknown: 2 };
    let (ok, v) = run(&s, id, "[1,2,3,4,5]", &o);
    assert!(!ok);
    assert_eq!(v.len(), 2);
    assert_eq!(v[1].path, "1");
    let o = Options { max_violations: 0, ..o };
    assert_eq!(run(&s, id, "[1,2,3]", &o).1.len(), 1, "0 is read as 1");
}

/// Shadow-field findings have their own cap and never use up the budget of violations: a
/// violation after more shadow fields than `max_violations` is still found and reported.
#[test]
fn shadow_findings_do_not_use_the_violation_budget() {
    let (s, id) = one(O30, "{type: object, properties: {meta: {type: object, properties: {a: {}}}, n: {type: integer}}}");
    let o = Options { direction: Direction::Request, shadow_unknown: true, max_violations: 2, max_unknown: 3 };
    let unknown: Vec<String> = (0..10).map(|i| format!(r#""u{i}":{i}"#)).collect();
    // The shadow fields sit in an object evaluated before the invalid member.
    let body = format!(r#"{{"meta":{{{}}},"n":"not a number"}}"#, unknown.join(","));
    let (ok, v) = run(&s, id, &body, &o);
    assert!(!ok, "the violation after the shadow fields is found");
    let invalid: Vec<&str> = v.iter().filter(|x| x.kind == ViolationKind::Invalid).map(|x| x.path.as_str()).collect();
    assert_eq!(invalid, ["n"]);
    let shadows = v.iter().filter(|x| x.kind == ViolationKind::UnknownProperty).count();
    assert_eq!(shadows, 3, "shadow findings are capped by max_unknown");
    // Many violations still stop at max_violations, shadow findings or not.
    let body = format!(r#"{{"meta":{{{}}},"n":"x"}}"#, unknown.join(","));
    let (s2, id2) = one(O30, "{type: array, items: {type: integer}}");
    let (ok, v) = run(&s2, id2, r#"["a","b","c","d"]"#, &o);
    assert!(!ok);
    assert_eq!(v.len(), 2);
    // No shadow findings at all when their cap is 0; the violation is still there.
    let o = Options { max_unknown: 0, ..o };
    let (ok, v) = run(&s, id, &body, &o);
    assert!(!ok);
    assert_eq!(v.iter().map(|x| (x.path.as_str(), x.kind)).collect::<Vec<_>>(), [("n", ViolationKind::Invalid)]);
}

#[test]
fn composition() {
    for d in [O30, O31] {
        table(d, "{allOf: [{type: integer}, {minimum: 3}]}", &[("3", V), ("2", Some("minimum")), ("3.5", Some("type"))]);
        table(d, "{anyOf: [{type: string}, {minimum: 3}]}", &[(r#""a""#, V), ("4", V), ("2", Some("anyOf"))]);
        table(d, "{oneOf: [{type: integer}, {minimum: 3}]}", &[("2", V), ("3.5", V), ("4", Some("oneOf")), (r#""x""#, V), ("1.5", Some("oneOf"))]);
        table(d, "{not: {type: string}}", &[("1", V), (r#""a""#, Some("not"))]);
    }
    table(O31, "{if: {type: integer}, then: {minimum: 10}, else: {type: string}}", &[("10", V), ("9", Some("minimum")), (r#""a""#, V), ("1.5", Some("type"))]);
    table(O31, "{if: {minimum: 0}, then: {multipleOf: 2}}", &[("4", V), ("-3", V), ("3", Some("multipleOf"))]);
    // Boolean schemas.
    table(O31, "true", &[("1", V), ("{}", V)]);
    table(O31, "false", &[("1", Some("false")), ("null", Some("false"))]);
    table(O31, "{properties: {a: false}}", &[("{}", V), (r#"{"a":1}"#, Some("false"))]);
    table(O31, "{anyOf: [false, true]}", &[("1", V)]);
}

const PETS30: &str = r#"
components:
  schemas:
    Pet:
      type: object
      required: [petType]
      properties:
        petType: {type: string}
        name: {type: string}
      discriminator:
        propertyName: petType
    Cat:
      allOf:
        - $ref: '#/components/schemas/Pet'
        - type: object
          required: [claws]
          properties:
            claws: {type: integer}
    Dog:
      allOf:
        - $ref: '#/components/schemas/Pet'
        - type: object
          required: [bark]
          properties:
            bark: {type: boolean}
    Lizard:
      type: object
      required: [scales]
      properties:
        petType: {type: string}
        scales: {type: integer}
    AnyPet:
      oneOf:
        - $ref: '#/components/schemas/Cat'
        - $ref: '#/components/schemas/Dog'
        - $ref: '#/components/schemas/Lizard'
      discriminator:
        propertyName: petType
        mapping:
          kitty: '#/components/schemas/Cat'
          lizard: Lizard
"#;

#[test]
fn discriminator() {
    let (s, id) = build(O30, &[("main", PETS30)], "/components/schemas/AnyPet").unwrap();
    let o = opts(Direction::Request);
    // Explicit mapping, by pointer and by name; implicit names of the oneOf refs.
    assert!(run(&s, id, r#"{"petType":"kitty","claws":3}"#, &o).0);
    assert!(run(&s, id, r#"{"petType":"Cat","claws":3}"#, &o).0);
    assert!(run(&s, id, r#"{"petType":"Dog","bark":true}"#, &o).0);
    assert!(run(&s, id, r#"{"petType":"lizard","scales":9}"#, &o).0);
    // The selected schema's own violations are reported (not just "oneOf failed").
    let (ok, v) = run(&s, id, r#"{"petType":"Dog","claws":3}"#, &o);
    assert!(!ok);
    assert_eq!((v[0].keyword, v[0].message.as_str()), ("required", "missing required property \"bark\""));
    // Unknown and missing values.
    let (ok, v) = run(&s, id, r#"{"petType":"Hamster"}"#, &o);
    assert!(!ok);
    assert_eq!((v[0].keyword, v[0].path.as_str()), ("discriminator", "petType"));
    let (_, v) = run(&s, id, r#"{"claws":3}"#, &o);
    assert_eq!(v[0].keyword, "discriminator");
    let (_, v) = run(&s, id, r#"{"petType":7}"#, &o);
    assert_eq!(v[0].keyword, "discriminator");
    // Without the discriminator, a Cat-shaped Dog would match by oneOf alone.
    // A discriminator on a schema without oneOf/anyOf is a warning.
    assert!(s.warnings().iter().any(|w| w.pointer == "/components/schemas/Pet/discriminator"));
}

#[test]
fn ids_anchors_and_dynamic_refs() {
    let o = opts(Direction::Request);
    // `$id` changes the base of relative refs; `$anchor` names a schema in its resource
    let doc = r#"
s:
  $id: http://x.example/root.json
  properties:
    a: {$ref: 'item.json'}
    b: {$ref: 'item.json#num'}
    c: {$ref: '#/$defs/local'}
  $defs:
    item: {$id: item.json, type: string, $defs: {n: {$anchor: num, type: number}}}
    local: {type: boolean}
"#;
    let (s, id) = build(O31, &[("main", doc)], "/s").unwrap();
    assert!(run(&s, id, r#"{"a": "x", "b": 1, "c": true}"#, &o).0);
    assert!(!run(&s, id, r#"{"a": 1}"#, &o).0);
    assert!(!run(&s, id, r#"{"b": "x"}"#, &o).0);
    assert!(!run(&s, id, r#"{"c": 1}"#, &o).0);
    // a component schema with an `$id` still reaches the rest of the document by pointer
    let spec = "components:\n  schemas:\n    A: {$id: 'https://x.example/a', properties: {b: {$ref: '#/components/schemas/B'}}}\n    B: {type: integer}\n";
    let (s, id) = build(O31, &[("main", spec)], "/components/schemas/A").unwrap();
    assert!(!run(&s, id, r#"{"b": "x"}"#, &o).0);
    // $dynamicRef: the outermost resource defining the anchor wins (a generic list whose
    // items the extending schema constrains)
    let doc = r#"
s:
  $id: http://x.example/strings
  $ref: list
  $defs:
    item: {$dynamicAnchor: item, type: string}
    list:
      $id: list
      type: array
      items: {$dynamicRef: '#item'}
      $defs: {item: {$dynamicAnchor: item}}
"#;
    let (s, id) = build(O31, &[("main", doc)], "/s").unwrap();
    assert!(run(&s, id, r#"["a", "b"]"#, &o).0);
    assert!(!run(&s, id, r#"["a", 1]"#, &o).0);
    let (s, id) = build(O31, &[("main", doc)], "/s/$defs/list").unwrap();
    assert!(run(&s, id, r#"["a", 1]"#, &o).0, "alone, the list takes anything");
}

#[test]
fn discriminator_mapping_through_refs_and_names() {
    // A mapping target that is itself a `$ref` (an alias), a schema name with dots, and a
    // target in another document.
    let doc = r#"
components:
  schemas:
    Any:
      oneOf: [{$ref: '#/components/schemas/Alias'}, {$ref: '#/components/schemas/v1.Dog'}, {$ref: 'other#/Fish'}]
      discriminator:
        propertyName: t
        mapping: {cat: '#/components/schemas/Alias', dog: v1.Dog, fish: 'other#/Fish'}
    Alias: {$ref: '#/components/schemas/Cat'}
    Cat: {type: object, required: [claws], properties: {t: {type: string}, claws: {type: integer}}}
    v1.Dog: {type: object, required: [bark], properties: {t: {type: string}, bark: {type: boolean}}}
"#;
    let other = "Fish: {type: object, required: [fins], properties: {t: {type: string}, fins: {type: integer}}}\n";
    let (s, id) = build(O30, &[("main", doc), ("other", other)], "/components/schemas/Any").unwrap();
    let o = opts(Direction::Request);
    assert!(run(&s, id, r#"{"t":"cat","claws":3}"#, &o).0);
    assert!(run(&s, id, r#"{"t":"dog","bark":true}"#, &o).0);
    assert!(run(&s, id, r#"{"t":"fish","fins":2}"#, &o).0);
    let (ok, v) = run(&s, id, r#"{"t":"dog","claws":3}"#, &o);
    assert!(!ok && v[0].keyword == "required", "{v:?}");
    assert!(!run(&s, id, r#"{"t":"cow"}"#, &o).0);
    // A mapping to nothing: a warning, and the oneOf alone decides.
    let broken = doc.replace("dog: v1.Dog", "dog: v2.Dog");
    let (s, id) = build(O30, &[("main", &broken), ("other", other)], "/components/schemas/Any").unwrap();
    assert!(s.warnings().iter().any(|w| w.message.contains("\"v2.Dog\" names no schema")), "{:?}", s.warnings());
    assert!(run(&s, id, r#"{"t":"dog","bark":true}"#, &o).0);
    assert!(!run(&s, id, r#"{"t":"dog"}"#, &o).0);
}

#[test]
fn discriminator_with_anyof_in_31() {
    let doc = r#"
s:
  anyOf: [{$ref: '#/$defs/A'}, {$ref: '#/$defs/B'}]
  discriminator: {propertyName: kind}
$defs:
  A: {properties: {kind: {const: A}, a: {type: integer}}, required: [a]}
  B: {properties: {kind: {const: B}, b: {type: integer}}, required: [b]}
"#;
    let (s, id) = build(O31, &[("main", doc)], "/s").unwrap();
    let o = opts(Direction::Request);
    assert!(run(&s, id, r#"{"kind":"A","a":1}"#, &o).0);
    assert!(!run(&s, id, r#"{"kind":"A","b":1}"#, &o).0);
    assert!(!run(&s, id, r#"{"kind":"C"}"#, &o).0);
}

#[test]
fn read_only_write_only() {
    let schema = "{type: object, required: [id, name, password], properties: {id: {type: integer, readOnly: true}, name: {type: string}, password: {type: string, writeOnly: true}}}";
    for d in [O30, O31] {
        let (s, id) = one(d, schema);
        let req = opts(Direction::Request);
        let resp = opts(Direction::Response);
        // Request: id is not required, and must not be sent; password is required.
        assert!(run(&s, id, r#"{"name":"a","password":"p"}"#, &req).0);
        let (ok, v) = run(&s, id, r#"{"id":1,"name":"a","password":"p"}"#, &req);
        assert!(!ok);
        assert_eq!((v[0].keyword, v[0].path.as_str()), ("readOnly", "id"));
        let (_, v) = run(&s, id, r#"{"name":"a"}"#, &req);
        assert_eq!(v[0].message, "missing required property \"password\"");
        // Response: the mirror.
        assert!(run(&s, id, r#"{"id":1,"name":"a"}"#, &resp).0);
        let (_, v) = run(&s, id, r#"{"id":1,"name":"a","password":"p"}"#, &resp);
        assert_eq!(v[0].keyword, "writeOnly");
        let (_, v) = run(&s, id, r#"{"name":"a"}"#, &resp);
        assert_eq!(v[0].message, "missing required property \"id\"");
    }
    // readOnly through a $ref.
    let doc = "s: {required: [id], properties: {id: {$ref: '#/Id'}}}\nId: {type: integer, readOnly: true}";
    let (s, id) = build(O30, &[("main", doc)], "/s").unwrap();
    assert!(run(&s, id, "{}", &opts(Direction::Request)).0);
    assert!(!run(&s, id, r#"{"id":1}"#, &opts(Direction::Request)).0);
    assert!(!run(&s, id, "{}", &opts(Direction::Response)).0);
}

#[test]
fn unevaluated_properties() {
    // The classic: additionalProperties cannot see through allOf, unevaluatedProperties can.
    let schema = "{allOf: [{properties: {a: {type: integer}}}, {properties: {b: {type: integer}}}], unevaluatedProperties: false}";
    table(O31, schema, &[(r#"{"a":1,"b":2}"#, V), (r#"{"a":1,"c":2}"#, Some("unevaluatedProperties")), (r#"{"a":"x"}"#, Some("type"))]);
    table(O31, "{allOf: [{properties: {a: {}}}], additionalProperties: false}", &[(r#"{}"#, V), (r#"{"a":1}"#, Some("additionalProperties"))]);
    // Annotations of failed alternatives do not count.
    table(
        O31,
        "{anyOf: [{properties: {a: {type: integer}}, required: [a]}, {properties: {b: {type: integer}}, required: [b]}], unevaluatedProperties: false}",
        &[(r#"{"a":1}"#, V), (r#"{"a":1,"b":2}"#, V), (r#"{"a":1,"b":"x"}"#, Some("unevaluatedProperties"))],
    );
    table(
        O31,
        "{oneOf: [{properties: {a: {const: 1}}, required: [a]}, {properties: {b: {}}, required: [b]}], unevaluatedProperties: false}",
        &[(r#"{"a":1}"#, V), (r#"{"b":1,"a":2}"#, Some("unevaluatedProperties"))],
    );
    // if/then/else, $ref, patternProperties, additionalProperties and dependentSchemas evaluate.
    table(
        O31,
        "{if: {properties: {t: {const: x}}, required: [t]}, then: {properties: {x: {}}}, else: {properties: {y: {}}}, unevaluatedProperties: false}",
        &[
            (r#"{"t":"x","x":1}"#, V),
            (r#"{"t":"z","y":1}"#, Some("unevaluatedProperties")),
            (r#"{"y":1}"#, V),
            (r#"{"t":"x","y":1}"#, Some("unevaluatedProperties")),
        ],
    );
    let doc = "s: {$ref: '#/$defs/base', properties: {own: {}}, unevaluatedProperties: false}\n$defs: {base: {properties: {inherited: {}}, patternProperties: {'^x-': {}}}}";
    let (s, id) = build(O31, &[("main", doc)], "/s").unwrap();
    let o = opts(Direction::Request);
    assert!(run(&s, id, r#"{"own":1,"inherited":2,"x-y":3}"#, &o).0);
    assert!(!run(&s, id, r#"{"own":1,"other":2}"#, &o).0);
    table(O31, "{additionalProperties: true, unevaluatedProperties: false}", &[(r#"{"z":1}"#, V)]);
    table(
        O31,
        "{dependentSchemas: {a: {properties: {b: {}}}}, properties: {a: {}}, unevaluatedProperties: false}",
        &[(r#"{"a":1,"b":2}"#, V), (r#"{"b":2}"#, Some("unevaluatedProperties"))],
    );
    // A schema for the unevaluated ones, and nesting: the inner one sees only its own location.
    table(O31, "{properties: {a: {}}, unevaluatedProperties: {type: string}}", &[(r#"{"a":1,"b":"s"}"#, V), (r#"{"a":1,"b":2}"#, Some("type"))]);
    table(
        O31,
        "{properties: {n: {properties: {x: {}}, unevaluatedProperties: false}}, unevaluatedProperties: false}",
        &[(r#"{"n":{"x":1}}"#, V), (r#"{"n":{"y":1}}"#, Some("unevaluatedProperties"))],
    );
    // Nested in-place: the inner unevaluatedProperties passes its annotations up.
    table(
        O31,
        "{allOf: [{properties: {a: {}}, unevaluatedProperties: {type: integer}}], unevaluatedProperties: false}",
        &[(r#"{"a":1,"b":2}"#, V), (r#"{"b":"x"}"#, Some("type"))],
    );
}

#[test]
fn unevaluated_items() {
    table(O31, "{prefixItems: [{type: integer}], unevaluatedItems: false}", &[("[1]", V), ("[1, 2]", Some("unevaluatedItems"))]);
    table(O31, "{allOf: [{prefixItems: [{}, {}]}], unevaluatedItems: {type: string}}", &[("[1, 2, \"s\"]", V), ("[1, 2, 3]", Some("type"))]);
    table(O31, "{contains: {type: string}, unevaluatedItems: {type: integer}}", &[(r#"["a", 1, "b"]"#, V), (r#"["a", 1.5]"#, Some("type"))]);
    table(O31, "{items: {}, unevaluatedItems: false}", &[("[1,2,3]", V)]);
    table(
        O31,
        "{anyOf: [{prefixItems: [{type: string}]}, {prefixItems: [{}, {}]}], unevaluatedItems: false}",
        &[(r#"["a"]"#, V), (r#"[1, 2]"#, V), (r#"[1, 2, 3]"#, Some("unevaluatedItems"))],
    );
}

#[test]
fn refs_across_documents_with_escapes() {
    let main = r#"
s:
  type: object
  properties:
    pet: {$ref: 'common.yaml#/Pet'}
    slash: {$ref: '#/defs/a~1b'}
    tilde: {$ref: '#/defs/c~0d'}
    pct: {$ref: '#/defs/with%20space'}
defs:
  a/b: {type: integer}
  c~d: {type: boolean}
  with space: {type: string}
"#;
    let common = "Pet: {type: object, required: [name], properties: {name: {type: string}, owner: {$ref: '#/Owner'}}}\nOwner: {type: string, minLength: 2}";
    let (s, id) = build(O30, &[("main", main), ("common.yaml", common)], "/s").unwrap();
    let o = opts(Direction::Request);
    assert!(run(&s, id, r#"{"pet":{"name":"x","owner":"ab"},"slash":1,"tilde":true,"pct":"s"}"#, &o).0);
    let (_, v) = run(&s, id, r#"{"pet":{"owner":"a"},"slash":"1","tilde":1,"pct":2}"#, &o);
    let got: Vec<(&str, &str)> = v.iter().map(|x| (x.path.as_str(), x.keyword)).collect();
    assert_eq!(got, [("pet/owner", "minLength"), ("pet", "required"), ("slash", "type"), ("tilde", "type"), ("pct", "type")]);
    // A schema reached twice is compiled once.
    let doc = "s: {properties: {a: {$ref: '#/M'}, b: {$ref: '#/M'}}}\nM: {type: integer}";
    let r = resolver(&[("main", doc)]);
    let mut c = Compiler::new(O30, &r);
    let id = c.compile(0, "/s", r.docs[0].1.get("s").unwrap());
    let m = c.compile(0, "/M", r.docs[0].1.get("M").unwrap());
    let s = c.finish().unwrap();
    assert_eq!(s.len(), 2, "a $ref-only schema is its target");
    assert_eq!(s.property(id, "a"), Some(m));
    assert_eq!(s.property(id, "b"), Some(m));
}

#[test]
fn ref_siblings_by_dialect() {
    let doc = "s: {$ref: '#/T', maxLength: 2}\nT: {type: string}";
    let (s, id) = build(O30, &[("main", doc)], "/s").unwrap();
    assert!(run(&s, id, r#""long""#, &opts(Direction::Request)).0, "3.0 ignores siblings of $ref");
    let (s, id) = build(O31, &[("main", doc)], "/s").unwrap();
    let (ok, v) = run(&s, id, r#""long""#, &opts(Direction::Request));
    assert!(!ok && v[0].keyword == "maxLength", "3.1 applies them");
}

#[test]
fn anchors() {
    let doc = "s: {properties: {n: {$ref: '#node'}}, $defs: {x: {$anchor: node, type: integer}}}";
    let (s, id) = build(O31, &[("main", doc)], "/s").unwrap();
    assert!(run(&s, id, r#"{"n":1}"#, &opts(Direction::Request)).0);
    assert!(!run(&s, id, r#"{"n":"x"}"#, &opts(Direction::Request)).0);
    let err = build(O31, &[("main", "s: {$ref: '#nowhere'}")], "/s").unwrap_err();
    assert!(err[0].message.contains("no $anchor \"nowhere\""), "{err:?}");
}

#[test]
fn ref_cycles() {
    // A self-reference that consumes nothing is an error, not a hang.
    for doc in ["A: {$ref: '#/A'}", "A: {allOf: [{$ref: '#/B'}]}\nB: {anyOf: [{$ref: '#/A'}]}"] {
        let err = build(O31, &[("main", doc)], "/A").unwrap_err();
        assert!(err[0].message.contains("$ref cycle"), "{err:?}");
        // The schema is named by its JSON pointer in the document.
        assert!(["/A", "/B", "/A/allOf/0", "/B/anyOf/0"].contains(&err[0].pointer.as_str()), "{err:?}");
    }
    // Recursion through properties and items is fine.
    let doc = "Tree: {type: object, properties: {v: {type: integer}, kids: {type: array, items: {$ref: '#/Tree'}}}}";
    let (s, id) = build(O30, &[("main", doc)], "/Tree").unwrap();
    let o = opts(Direction::Request);
    assert!(run(&s, id, r#"{"v":1,"kids":[{"v":2,"kids":[{"v":3}]}]}"#, &o).0);
    let (_, v) = run(&s, id, r#"{"v":1,"kids":[{"v":2,"kids":[{"v":"x"}]}]}"#, &o);
    assert_eq!(v[0].path, "kids/0/kids/0/v");
}

#[test]
fn deep_nesting_is_bounded() {
    let doc = "T: {type: array, items: {$ref: '#/T'}}";
    let (s, id) = build(O31, &[("main", doc)], "/T").unwrap();
    // The parser's own limit stops 100,000 levels.
    let deep = "[".repeat(100_000) + &"]".repeat(100_000);
    let mut tape = Tape::default();
    assert!(parse_into(deep.as_bytes(), &mut tape, &Limits::default()).is_err());
    // With the parser limit lifted, the validator stops by itself, without overflowing the
    // (2 MiB) test thread stack.
    parse_into(deep.as_bytes(), &mut tape, &Limits { max_depth: 200_000, max_tokens: 1 << 20 }).unwrap();
    let mut out = Vec::new();
    assert!(!s.validate(id, &tape, deep.as_bytes(), &opts(Direction::Request), &mut out));
    assert_eq!(out.len(), 1);
    assert!(out[0].message.contains("deeper than"));
    // 120 levels (under the default parser limit) validate fine.
    let ok = "[".repeat(120) + &"]".repeat(120);
    parse_into(ok.as_bytes(), &mut tape, &Limits::default()).unwrap();
    assert!(s.validate(id, &tape, ok.as_bytes(), &opts(Direction::Request), &mut out));
}

#[test]
fn compile_errors_are_located() {
    let err = build(O30, &[("main", "s:\n  type: object\n  properties:\n    a: {minimum: abc}\n    b: {type: strin}\n    c: {$ref: '#/missing'}\n")], "/s")
        .unwrap_err();
    let got: Vec<(&str, String)> = err.iter().map(|e| (e.pointer.as_str(), e.origin.to_string())).collect();
    assert_eq!(
        got,
        [("/s/properties/a/minimum", "4:18".to_string()), ("/s/properties/b/type", "5:15".to_string()), ("/s/properties/c/$ref", "6:9".to_string())]
    );
    assert!(build(O30, &[("main", "s: {exclusiveMinimum: 3}")], "/s").is_err(), "numeric exclusiveMinimum is 3.1 syntax");
    assert!(build(O31, &[("main", "s: {multipleOf: 0}")], "/s").is_err());
    assert!(build(O31, &[("main", "s: [1]")], "/s").is_err());
    assert!(build(O31, &[("main", "s: {allOf: []}")], "/s").is_err());
}

#[test]
fn shadow_unknown_properties() {
    let doc = r#"
s:
  allOf:
    - $ref: '#/Base'
    - properties: {extra: {type: string}}
  properties:
    nested: {type: object, properties: {x: {}}}
    map: {type: object, additionalProperties: {type: string}}
    free: {type: object}
Base: {properties: {id: {type: integer}}}
"#;
    let (s, id) = build(O30, &[("main", doc)], "/s").unwrap();
    let o = Options { direction: Direction::Request, shadow_unknown: true, max_violations: 10, max_unknown: 10 };
    let (ok, v) = run(&s, id, r#"{"id":1,"extra":"e","nested":{"x":1,"y":2},"map":{"k":"v"},"free":{"any":1},"mystery":true}"#, &o);
    assert!(ok, "shadow findings do not invalidate");
    let got: Vec<(&str, ViolationKind)> = v.iter().map(|x| (x.path.as_str(), x.kind)).collect();
    assert_eq!(got, [("nested/y", ViolationKind::UnknownProperty), ("mystery", ViolationKind::UnknownProperty)]);
    // Off by default.
    assert!(run(&s, id, r#"{"mystery":true}"#, &opts(Direction::Request)).1.is_empty());
    // additionalProperties: false reports Invalid, not both.
    let (s, id) = one(O30, "{properties: {a: {}}, additionalProperties: false}");
    let (ok, v) = run(&s, id, r#"{"b":1}"#, &o);
    assert!(!ok);
    assert_eq!(v.len(), 1);
    assert_eq!(v[0].kind, ViolationKind::Invalid);
}

#[test]
fn hints() {
    let doc = r#"
s:
  type: object
  properties:
    n: {type: integer}
    f: {type: number, nullable: true}
    tags: {type: array, items: {type: string}}
    r: {$ref: '#/R'}
    u: {anyOf: [{type: string}, {type: integer}]}
    a: {allOf: [{type: [integer, string]}, {type: [string, boolean]}]}
  patternProperties: {'^x-': {type: boolean}}
  additionalProperties: {type: string}
R: {type: array, items: {type: integer}}
"#;
    let (s, id) = build(O31, &[("main", doc)], "/s").unwrap();
    assert_eq!(s.types(id), TypeSet(TypeSet::OBJECT));
    let p = |name: &str| s.property(id, name).unwrap();
    assert_eq!(s.types(p("n")), TypeSet(TypeSet::INTEGER));
    assert_eq!(s.types(p("tags")), TypeSet(TypeSet::ARRAY));
    assert_eq!(s.types(s.items(p("tags")).unwrap()), TypeSet(TypeSet::STRING));
    assert_eq!(s.types(s.items(p("r")).unwrap()), TypeSet(TypeSet::INTEGER));
    assert_eq!(s.types(p("u")), TypeSet(TypeSet::STRING | TypeSet::INTEGER));
    assert_eq!(s.types(p("a")), TypeSet(TypeSet::STRING));
    assert_eq!(s.types(p("x-flag")), TypeSet(TypeSet::BOOLEAN));
    assert_eq!(s.types(p("other")), TypeSet(TypeSet::STRING));
    assert!(s.items(id).is_none());
    // 3.0 nullable; number admits integers; no type = any.
    let (s, id) = one(O30, "{properties: {f: {type: number, nullable: true}, any: {}}}");
    let f = s.types(s.property(id, "f").unwrap());
    assert!(f.has(TypeSet::NUMBER) && f.has(TypeSet::INTEGER) && f.has(TypeSet::NULL) && !f.has(TypeSet::STRING));
    assert_eq!(s.types(s.property(id, "any").unwrap()), TypeSet(TypeSet::ANY));
    let (s, id) = one(O30, "{properties: {a: {}}, additionalProperties: false}");
    assert!(s.property(id, "b").is_none());
}

#[test]
fn bom_and_escaped_keys() {
    // A BOM is a parse error before validation; escaped keys match their properties.
    let mut tape = Tape::default();
    assert!(parse_into(b"\xEF\xBB\xBF{}", &mut tape, &Limits::default()).is_err());
    table(
        O30,
        "{properties: {name: {type: string}}, required: [name], additionalProperties: false}",
        &[(r#"{"n\u0061me":"x"}"#, V), (r#"{"n\u0061me":1}"#, Some("type"))],
    );
    table(
        O30,
        "{properties: {'é': {type: integer}}, additionalProperties: false}",
        &[(r#"{"\u00e9":1}"#, V), (r#"{"é":1}"#, V), (r#"{"e":1}"#, Some("additionalProperties"))],
    );
}

/// Property values whose schema is a plain type are checked inline by the object loop
/// (`PropTable::quick`): the outcome must be the one of evaluating the schema itself.
#[test]
fn quick_property_checks_agree_with_evaluation() {
    let values = [
        "null",
        "true",
        "false",
        "0",
        "-1",
        "7",
        "1.0",
        "1.5",
        "1e2",
        "-0.0",
        r#""""#,
        r#""ab""#,
        r#""abcd""#,
        r#""2024-05-14""#,
        "[]",
        "[1]",
        "{}",
        r#"{"a":1}"#,
        "99999999999999999999",
    ];
    let schemas = [
        (O30, "{}"),
        (O30, "{type: integer}"),
        (O30, "{type: number}"),
        (O30, "{type: string}"),
        (O30, "{type: boolean}"),
        (O30, "{type: boolean, nullable: true}"),
        (O30, "{type: integer, nullable: true}"),
        (O30, "{type: string, nullable: true, maxLength: 3}"),
        (O30, "{type: array}"),
        (O30, "{type: object}"),
        (O30, "{minLength: 2}"),
        (O30, "{type: integer, minimum: 0}"),
        (O30, "{type: integer, format: int32}"),
        (O30, "{type: string, format: date}"),
        (O30, "{type: string, readOnly: true}"),
        (O30, "{enum: [1, ab]}"),
        (O30, "{type: object, properties: {a: {type: string}}}"),
        (O31, "{type: [string, 'null']}"),
        (O31, "{type: [integer, boolean]}"),
        (O31, "false"),
        (O31, "true"),
        (O31, "{const: 7}"),
    ];
    for shadow in [false, true] {
        let o = Options { direction: Direction::Request, shadow_unknown: shadow, max_violations: 10, max_unknown: 10 };
        for (dialect, schema) in schemas {
            let (s, id) = one(dialect, schema);
            let (so, oid) = one(dialect, &format!("{{type: object, properties: {{p: {schema}}}}}"));
            for value in values {
                let (ok, v) = run(&s, id, value, &o);
                let (ook, ov) = run(&so, oid, &format!(r#"{{"p":{value}}}"#), &o);
                assert_eq!(ok, ook, "{schema} on {value}");
                let expect: Vec<(String, &str, ViolationKind)> =
                    v.iter().map(|x| (if x.path.is_empty() { "p".to_string() } else { format!("p/{}", x.path) }, x.keyword, x.kind)).collect();
                let got: Vec<(String, &str, ViolationKind)> = ov.iter().map(|x| (x.path.clone(), x.keyword, x.kind)).collect();
                assert_eq!(expect, got, "{schema} on {value}");
            }
        }
    }
}

/// Shadow-field detection is skipped for objects whose members all matched `properties`
/// when the schema describes no other names; every other case still reports.
#[test]
fn shadow_skip_when_all_members_matched() {
    let o = Options { direction: Direction::Request, shadow_unknown: true, max_violations: 10, max_unknown: 10 };
    let (s, id) = one(O30, "{type: object, properties: {a: {type: integer}, b: {type: object, properties: {x: {}}}}}");
    assert!(run(&s, id, r#"{"a":1,"b":{"x":1}}"#, &o).1.is_empty());
    let v = run(&s, id, r#"{"a":1,"b":{"x":1,"y":2},"c":3}"#, &o).1;
    let got: Vec<&str> = v.iter().map(|x| x.path.as_str()).collect();
    assert_eq!(got, ["b/y", "c"]);
    // A member matched by name twice (duplicate keys) still counts once per member.
    assert!(run(&s, id, r#"{"a":1,"a":2}"#, &o).1.is_empty());
    let (s, id) = one(O30, "{type: object, properties: {a: {}}, additionalProperties: true}");
    assert_eq!(run(&s, id, r#"{"a":1,"z":1}"#, &o).1.len(), 1);
}

#[test]
fn big_integers_compare_and_divide_exactly() {
    table(O30, "{type: integer, maximum: 18446744073709551615}", &[("18446744073709551615", V), ("18446744073709551616", Some("maximum"))]);
    table(
        O30,
        "{type: integer, multipleOf: 3}",
        &[
            ("9007199254740993", V),
            ("9007199254740995", Some("multipleOf")),
            ("300000000000000000000000000000", V),
            ("300000000000000000000000000001", Some("multipleOf")),
        ],
    );
    table(
        O30,
        "{type: object, properties: {mult: {type: integer, multipleOf: 3}}}",
        &[(r#"{"mult":9007199254740993}"#, V), (r#"{"mult":9007199254740995}"#, Some("multipleOf"))],
    );
}

/// 3.0: the discriminator picks the branch that decides; 3.1: it must not change the outcome,
/// so a value valid against two `oneOf` branches is invalid whatever the discriminator says.
#[test]
fn discriminator_decides_in_30_and_only_annotates_in_31() {
    let doc = r#"
s:
  oneOf: [{$ref: '#/$defs/Cat'}, {$ref: '#/$defs/Dog'}]
  discriminator: {propertyName: petType, mapping: {kitty: '#/$defs/Cat', puppy: '#/$defs/Dog'}}
$defs:
  Cat: {type: object, required: [meows], properties: {meows: {type: boolean}}}
  Dog: {type: object, required: [barks], properties: {barks: {type: boolean}}}
"#;
    let o = opts(Direction::Request);
    let both = r#"{"petType":"kitty","meows":true,"barks":true}"#;
    let (s30, id30) = build(O30, &[("main", doc)], "/s").unwrap();
    assert!(run(&s30, id30, both, &o).0);
    assert!(!run(&s30, id30, r#"{"petType":"kitty","barks":true}"#, &o).0);
    let (s31, id31) = build(O31, &[("main", doc)], "/s").unwrap();
    let (ok, v) = run(&s31, id31, both, &o);
    assert!(!ok);
    assert_eq!(v[0].keyword, "oneOf");
    assert!(run(&s31, id31, r#"{"petType":"kitty","meows":true}"#, &o).0);
    // An unknown discriminator value is not an error by itself in 3.1: oneOf decides.
    assert!(run(&s31, id31, r#"{"petType":"hamster","meows":true}"#, &o).0);
}

/// Compile each pointer of one document with one compiler.
fn build_many(dialect: Dialect, doc: &str, pointers: &[&str]) -> (Schemas, Vec<SchemaId>) {
    let r = resolver(&[("main", doc)]);
    let mut c = Compiler::new(dialect, &r);
    let ids = pointers.iter().map(|p| c.compile(0, p, pointer_get(&r.docs[0].1, p).unwrap())).collect();
    (c.finish().unwrap_or_else(|e| panic!("compile: {e:?}")), ids)
}

#[test]
fn identical_inline_schemas_are_compiled_once() {
    let doc = r#"
a: {type: object, required: [name], properties: {name: {type: string, maxLength: 5}, tags: {type: array, items: {type: string, maxLength: 5}}}}
b: {type: object, required: [name], description: same checks, properties: {name: {type: string, maxLength: 5}, tags: {type: array, items: {type: string, maxLength: 5}}}}
c: {type: object, required: [name], properties: {name: {type: string, maxLength: 6}, tags: {type: array, items: {type: string, maxLength: 5}}}}
d: {type: object, required: [name], properties: {name: {type: string, maxLength: 5, readOnly: true}, tags: {type: array, items: {type: string, maxLength: 5}}}}
e: {type: string, enum: [x, y]}
f: {type: string, enum: [x, z]}
"#;
    let (s, ids) = build_many(Dialect::Oas30, doc, &["/a", "/b", "/c", "/d", "/e", "/f"]);
    let [a, b, c, d, e, f] = ids[..] else { unreachable!() };
    assert_eq!(a, b, "same checks, one node");
    assert!(c != a && d != a && d != c && e != f);
    // a: the object, the string of at most 5 (name and items share it), the array; c and d
    // each their own object and name; e and f.
    assert_eq!(s.len(), 3 + 2 + 2 + 2);
    let o = opts(Direction::Request);
    let six = r#"{"name":"abcdef","tags":["abcde"]}"#;
    assert!(!run(&s, a, six, &o).0 && !run(&s, b, six, &o).0);
    assert!(run(&s, c, six, &o).0);
    assert!(!run(&s, c, r#"{"name":"abc","tags":["abcdef"]}"#, &o).0, "the shared items schema still checks c's tags");
    // readOnly is what d checks beyond a: a request may not send `name` there.
    assert!(run(&s, a, r#"{"name":"abc"}"#, &o).0);
    assert!(!run(&s, d, r#"{"name":"abc"}"#, &o).0);
    assert!(run(&s, e, r#""y""#, &o).0 && !run(&s, f, r#""y""#, &o).0);
}

#[test]
fn recursive_schemas_that_look_alike_stay_apart() {
    // Same text, each refers to itself: two schemas (their `$ref`s name different nodes).
    let doc = r#"
p: {type: object, properties: {next: {$ref: '#/p'}, v: {type: integer, maximum: 1}}}
q: {type: object, properties: {next: {$ref: '#/q'}, v: {type: integer, maximum: 2}}}
r: {type: object, properties: {next: {type: object, properties: {next: {$ref: '#/r'}}}}}
"#;
    let (s, ids) = build_many(Dialect::Oas30, doc, &["/p", "/q", "/r"]);
    let o = opts(Direction::Request);
    let deep = r#"{"next":{"next":{"v":2}}}"#;
    assert!(!run(&s, ids[0], deep, &o).0);
    assert!(run(&s, ids[1], deep, &o).0);
    assert!(!run(&s, ids[2], r#"{"next":{"next":{"next":{"next":3}}}}"#, &o).0);
    assert!(run(&s, ids[2], r#"{"next":{"next":{"next":{}}}}"#, &o).0);
}
