//! CPU-time measurement helper for a loaded machine (criterion reports wall time, which other
//! processes inflate): `cargo test --release -p palisade-schema --test throughput -- --ignored
//! --nocapture` prints the mean of the fastest batches of (parse + validate) runs.

use palisade_config::yaml::{self, Node};
use palisade_json::{parse_into, Limits, Tape};
use palisade_schema::{Compiler, Dialect, Direction, DocId, Options, Resolved, Resolver, Scratch};

struct Local(Node);

impl Resolver for Local {
    fn resolve(&self, _base: DocId, reference: &str) -> Result<Resolved<'_>, String> {
        let pointer = reference.strip_prefix('#').ok_or("only local refs")?;
        let mut node = &self.0;
        for token in pointer.split('/').skip(1) {
            node = node.get(&token.replace("~1", "/").replace("~0", "~")).ok_or("not found")?;
        }
        Ok(Resolved { doc: 0, pointer: pointer.to_string(), node })
    }
}

#[test]
#[ignore = "measurement, run explicitly in release"]
fn best_batches() {
    let dir = "/work/shared/bench";
    let (Ok(spec), Ok(large), Ok(small)) =
        (std::fs::read_to_string(format!("{dir}/bench-api.yaml")), std::fs::read(format!("{dir}/large.json")), std::fs::read(format!("{dir}/small.json")))
    else {
        eprintln!("skipping: {dir} is missing");
        return;
    };
    let r = Local(yaml::parse(&spec).unwrap());
    let mut c = Compiler::new(Dialect::Oas30, &r);
    let schemas = r.0.get("components").unwrap().get("schemas").unwrap();
    let large_id = c.compile(0, "/components/schemas/Large", schemas.get("Large").unwrap());
    let order_id = c.compile(0, "/components/schemas/Order", schemas.get("Order").unwrap());
    let s = c.finish().unwrap();
    let opts = Options { direction: Direction::Request, shadow_unknown: false, max_violations: 16 };
    let mut tape = Tape::default();
    let mut scratch = Scratch::default();
    let mut out = Vec::new();
    let limits = Limits::default();
    for (name, id, body, batch) in [("large", large_id, &large, 50), ("small", order_id, &small, 1000)] {
        let mut best = [f64::MAX; 3];
        for (mode, slot) in [("parse", 0), ("validate", 1), ("parse+validate", 2)] {
            parse_into(body, &mut tape, &limits).unwrap();
            for _ in 0..200 {
                let t = std::time::Instant::now();
                for _ in 0..batch {
                    if mode != "validate" {
                        parse_into(body, &mut tape, &limits).unwrap();
                    }
                    if mode != "parse" {
                        assert!(s.validate_with(id, &tape, body, 0, &opts, &mut scratch, &mut out));
                    }
                }
                best[slot] = best[slot].min(t.elapsed().as_secs_f64() / batch as f64);
            }
        }
        eprintln!(
            "{name}.json ({} bytes): parse {:.2} µs ({:.2} GB/s), validate {:.2} µs, parse+validate {:.2} µs",
            body.len(),
            best[0] * 1e6,
            body.len() as f64 / best[0] / 1e9,
            best[1] * 1e6,
            best[2] * 1e6
        );
    }
}
