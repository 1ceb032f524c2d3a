//! Steady-state validation of valid instances allocates nothing: counted with a counting
//! global allocator, over the shared benchmark bodies (when present) and an inline sample.

use palisade_config::yaml::{self, Node};
use palisade_json::{parse_into, Limits, Tape};
use palisade_schema::{Compiler, Dialect, Direction, DocId, Error, ErrorKind, Options, Resolved, Resolver, SchemaId, Schemas, Scratch};
use palisade_testkit::alloc;

// Counted per thread (`alloc::this_thread`): the tests of this binary run in parallel.
#[global_allocator]
static GLOBAL: alloc::Counting = alloc::Counting;

struct Local(Node);

impl Resolver for Local {
    fn resolve(&self, _base: DocId, reference: &str) -> Result<Resolved<'_>, Error> {
        let err = |m: &str| Error::new(ErrorKind::Reference, m);
        let pointer = reference.strip_prefix('#').ok_or_else(|| err("only local refs"))?;
        let mut node = &self.0;
        for token in pointer.split('/').skip(1) {
            node = node.get(&token.replace("~1", "/").replace("~0", "~")).ok_or_else(|| err("not found"))?;
        }
        Ok(Resolved { doc: 0, pointer: pointer.to_string(), node })
    }
}

fn compile(spec: &str, names: &[&str]) -> (Schemas, Vec<SchemaId>) {
    let r = Local(yaml::parse(spec).unwrap());
    let mut c = Compiler::new(Dialect::Oas30, &r);
    let schemas = r.0.get("components").unwrap().get("schemas").unwrap();
    let ids = names.iter().map(|n| c.compile(0, &format!("/components/schemas/{n}"), schemas.get(n).unwrap())).collect();
    (c.finish().unwrap(), ids)
}

/// Allocations per (parse + validate) after warm-up.
fn per_validation(s: &Schemas, id: SchemaId, body: &[u8]) -> f64 {
    alloc::assert_installed();
    let opts = Options { direction: Direction::Request, shadow_unknown: false, max_violations: 16, max_unknown: 16 };
    let mut tape = Tape::default();
    let mut scratch = Scratch::default();
    let mut out = Vec::new();
    let limits = Limits::default();
    for _ in 0..3 {
        parse_into(body, &mut tape, &limits).unwrap();
        assert!(s.validate_with(id, &tape, body, 0, &opts, &mut scratch, &mut out), "{out:?}");
    }
    let n = 100;
    let before = alloc::this_thread();
    for _ in 0..n {
        parse_into(body, &mut tape, &limits).unwrap();
        assert!(s.validate_with(id, &tape, body, 0, &opts, &mut scratch, &mut out));
        // The plain entry point too (its Scratch is empty and never grows for these schemas).
        assert!(s.validate(id, &tape, body, &opts, &mut out));
    }
    (alloc::this_thread() - before) as f64 / n as f64
}

#[test]
fn zero_allocations_on_bench_bodies() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/bench");
    let (Ok(spec), Ok(large), Ok(small)) =
        (std::fs::read_to_string(format!("{dir}/bench-api.yaml")), std::fs::read(format!("{dir}/large.json")), std::fs::read(format!("{dir}/small.json")))
    else {
        eprintln!("skipping: {dir} is missing");
        return;
    };
    let (s, ids) = compile(&spec, &["Large", "Order"]);
    let a = per_validation(&s, ids[0], &large);
    let b = per_validation(&s, ids[1], &small);
    eprintln!("allocations per validation: large.json {a}, small.json {b}");
    assert_eq!(a, 0.0);
    assert_eq!(b, 0.0);
}

#[test]
fn zero_allocations_inline() {
    let spec = r#"
components:
  schemas:
    T:
      type: object
      required: [id, tags, when]
      properties:
        id: {type: integer, minimum: 1, multipleOf: 1}
        tags: {type: array, uniqueItems: true, items: {type: string, pattern: '^[a-z]+$', maxLength: 8}}
        when: {type: string, format: date-time}
        kind: {type: string, enum: [a, b]}
        big: {type: number, maximum: 1e30}
        any: {oneOf: [{type: string}, {type: integer}]}
"#;
    let (s, ids) = compile(spec, &["T"]);
    let body = br#"{"id": 9007199254740993, "tags": ["abc", "de"], "when": "2024-01-01T00:00:00Z", "kind": "a", "big": 12345678901234567890123, "any": 5}"#;
    assert_eq!(per_validation(&s, ids[0], body), 0.0);
}

/// Alternatives fail quietly (no message is built), small uniqueItems arrays need no memory.
#[test]
fn zero_allocations_per_keyword() {
    for (schema, body) in [
        ("{type: integer, minimum: 1, multipleOf: 1}", "9007199254740993"),
        ("{type: array, uniqueItems: true, items: {type: string, pattern: '^[a-z]+$', maxLength: 8}}", r#"["abc", "de"]"#),
        ("{type: string, format: date-time}", r#""2024-01-01T00:00:00Z""#),
        ("{type: string, enum: [a, b]}", r#""a""#),
        ("{type: number, maximum: 1e30}", "12345678901234567890123"),
        ("{oneOf: [{type: string}, {type: integer}]}", "5"),
        ("{anyOf: [{type: string}, {type: object, required: [a]}, {type: integer}], not: {type: string}}", "5"),
        ("{type: object, discriminator: {propertyName: t}, oneOf: [{$ref: '#/components/schemas/A'}]}", r#"{"t": "A", "a": "x"}"#),
        ("{type: object, properties: {x: {readOnly: true}}, required: [x, y], additionalProperties: {type: string}}", r#"{"y": "s", "z": "t"}"#),
    ] {
        let spec = format!("components:\n  schemas:\n    T: {schema}\n    A: {{properties: {{a: {{type: string}}}}}}\n");
        let (s, ids) = compile(&spec, &["T"]);
        assert_eq!(per_validation(&s, ids[0], body.as_bytes()), 0.0, "{schema}");
    }
}
