//! Parse + validate the shared benchmark bodies against the benchmark spec (OpenAPI 3.0):
//! `large.json` against `#/components/schemas/Large`, `small.json` against `Order`.
//! Skips with a message when ../shared/bench is not there.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use palisade_config::yaml::{self, Node};
use palisade_json::{parse_into, Limits, Tape};
use palisade_schema::{Compiler, Dialect, Direction, DocId, Error, ErrorKind, Options, Resolved, Resolver, SchemaId, Schemas, Scratch};

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/bench");

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

/// The compiled spec, the ids of `Large` and `Order`, and the two bodies.
type Loaded = (Schemas, SchemaId, SchemaId, Vec<u8>, Vec<u8>);

fn load() -> Option<Loaded> {
    let spec = std::fs::read_to_string(format!("{DIR}/bench-api.yaml")).ok()?;
    let large = std::fs::read(format!("{DIR}/large.json")).ok()?;
    let small = std::fs::read(format!("{DIR}/small.json")).ok()?;
    let r = Local(yaml::parse(&spec).expect("bench-api.yaml"));
    let mut c = Compiler::new(Dialect::Oas30, &r);
    let schemas = r.0.get("components").and_then(|c| c.get("schemas")).expect("components/schemas");
    let large_id = c.compile(0, "/components/schemas/Large", schemas.get("Large").unwrap());
    let order_id = c.compile(0, "/components/schemas/Order", schemas.get("Order").unwrap());
    let s = c.finish().expect("bench schemas compile");
    Some((s, large_id, order_id, large, small))
}

fn bench(c: &mut Criterion) {
    let Some((s, large_id, order_id, large, small)) = load() else {
        println!("skipping palisade-schema benches: {DIR} is missing");
        return;
    };
    let opts = Options { direction: Direction::Request, shadow_unknown: false, max_violations: 16, max_unknown: 16 };
    let limits = Limits::default();
    let mut tape = Tape::default();
    let mut scratch = Scratch::default();
    let mut out = Vec::new();
    for (name, id, body) in [("large", large_id, &large), ("small", order_id, &small)] {
        parse_into(body, &mut tape, &limits).unwrap();
        assert!(s.validate(id, &tape, body, &opts, &mut out), "{name}.json must be valid: {out:?}");
    }

    let mut g = c.benchmark_group("json");
    g.throughput(Throughput::Bytes(large.len() as u64));
    g.bench_function("parse large.json", |b| b.iter(|| parse_into(black_box(&large), &mut tape, &limits).unwrap()));
    g.finish();

    let mut g = c.benchmark_group("schema");
    for (name, id, body) in [("parse+validate large.json (Large)", large_id, &large), ("parse+validate small.json (Order)", order_id, &small)] {
        g.throughput(Throughput::Bytes(body.len() as u64));
        g.bench_function(name, |b| {
            b.iter(|| {
                parse_into(black_box(body), &mut tape, &limits).unwrap();
                let root = tape.root(body).index();
                let ok = s.validate_with(id, &tape, body, root, &opts, &mut scratch, &mut out);
                assert!(ok);
            })
        });
    }
    parse_into(&large, &mut tape, &limits).unwrap();
    g.bench_function("validate only large.json", |b| b.iter(|| assert!(s.validate(large_id, &tape, &large, &opts, &mut out))));
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30).warm_up_time(std::time::Duration::from_millis(500)).measurement_time(std::time::Duration::from_secs(2));
    targets = bench
}
criterion_main!(benches);
