//! CPU-time measurement helper for a loaded machine (criterion reports wall time, which other
//! processes inflate): `cargo test --release -p palisade-schema --test throughput -- --ignored
//! --nocapture` prints the mean of the fastest batches of (parse + validate) runs (wall time),
//! and the mean CPU time of the thread over about two seconds of runs (from
//! /proc/thread-self/stat, in clock ticks of 10 ms: steadier than wall time on a loaded machine).

use palisade_config::yaml::{self, Node};
use palisade_json::{parse_into, Limits, Tape};
use palisade_schema::{Compiler, Dialect, Direction, DocId, Error, ErrorKind, Options, Resolved, Resolver, Scratch};

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

/// CPU time of this thread (user + system) in seconds, when /proc tells it.
fn thread_cpu() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").ok()?;
    // Fields after the command name (which is in parentheses): state is field 3, utime 14, stime 15.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split(' ').collect();
    let ticks: u64 = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
    Some(ticks as f64 / 100.0)
}

#[test]
#[ignore = "measurement, run explicitly in release"]
fn best_batches() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/bench");
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
    let opts = Options { direction: Direction::Request, shadow_unknown: false, max_violations: 16, max_unknown: 16 };
    let mut tape = Tape::default();
    let mut scratch = Scratch::default();
    let mut out = Vec::new();
    let limits = Limits::default();
    let shadow = Options { shadow_unknown: true, ..opts };
    for (name, id, body, batch) in [("large", large_id, &large, 50u64), ("small", order_id, &small, 1000)] {
        let mut best = [f64::MAX; 4];
        let mut cpu = [f64::NAN; 4];
        for (mode, slot) in [("parse", 0), ("validate", 1), ("parse+validate", 2), ("parse+validate+shadow", 3)] {
            let opts = if slot == 3 { &shadow } else { &opts };
            parse_into(body, &mut tape, &limits).unwrap();
            for _ in 0..200 {
                let t = std::time::Instant::now();
                for _ in 0..batch {
                    if mode != "validate" {
                        parse_into(body, &mut tape, &limits).unwrap();
                    }
                    if mode != "parse" {
                        out.clear();
                        assert!(s.validate_with(id, &tape, body, 0, opts, &mut scratch, &mut out));
                    }
                }
                best[slot] = best[slot].min(t.elapsed().as_secs_f64() / batch as f64);
            }
            if let Some(c0) = thread_cpu() {
                let mut runs = 0u64;
                let mut c1 = c0;
                while c1 - c0 < 2.0 {
                    for _ in 0..batch {
                        if mode != "validate" {
                            parse_into(body, &mut tape, &limits).unwrap();
                        }
                        if mode != "parse" {
                            out.clear();
                            assert!(s.validate_with(id, &tape, body, 0, opts, &mut scratch, &mut out));
                        }
                    }
                    runs += batch;
                    c1 = thread_cpu().unwrap_or(c0 + 3.0);
                }
                cpu[slot] = (c1 - c0) / runs as f64;
            }
        }
        eprintln!(
            "{name}.json ({} bytes): parse {:.2} µs ({:.2} GB/s), validate {:.2} µs, parse+validate {:.2} µs, with shadow fields {:.2} µs",
            body.len(),
            best[0] * 1e6,
            body.len() as f64 / best[0] / 1e9,
            best[1] * 1e6,
            best[2] * 1e6,
            best[3] * 1e6
        );
        eprintln!(
            "{name}.json CPU time: parse {:.2} µs, validate {:.2} µs, parse+validate {:.2} µs, with shadow fields {:.2} µs",
            cpu[0] * 1e6,
            cpu[1] * 1e6,
            cpu[2] * 1e6,
            cpu[3] * 1e6
        );
    }
}
