//! Which string values and keys of a JSON document (and their decoded candidates) the engine's
//! pre-filters let reach which detectors, one line per candidate that reaches any:
//! `cargo run --release -p palisade-detect --example admitted -- FILE...`. A FILE ending in
//! `.jsonl` is a corpus (`eval` format: every value, in order, not deduplicated); any other is
//! read as JSON (its distinct string leaves and keys, sorted). Diffing the output before and
//! after a change to the gates shows whether their decisions changed.
use palisade_detect::decode::{Decoder, Limits};
use palisade_detect::eval::parse_corpus;
use palisade_detect::{Engine, EngineConfig};
fn walk(v: &serde_json::Value, out: &mut Vec<String>) {
    match v {
        serde_json::Value::String(s) => out.push(s.clone()),
        serde_json::Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
        serde_json::Value::Object(o) => o.iter().for_each(|(k, x)| {
            out.push(k.clone());
            walk(x, out)
        }),
        _ => {}
    }
}
fn main() {
    let engine = Engine::new(EngineConfig::default()).unwrap();
    let mut dec = Decoder::new(Limits::default());
    for f in std::env::args().skip(1) {
        let text = std::fs::read_to_string(&f).unwrap_or_else(|e| panic!("{f}: {e}"));
        let vals: Vec<String> = if f.ends_with(".jsonl") {
            parse_corpus(&text).expect("corpus").into_iter().map(|s| s.value).collect()
        } else {
            let mut vals = Vec::new();
            walk(&serde_json::from_str(&text).expect("JSON"), &mut vals);
            vals.sort();
            vals.dedup();
            vals
        };
        for s in &vals {
            let c = dec.decode(s);
            for cand in c.iter() {
                let a = engine.admitted(cand.text);
                if !a.is_empty() {
                    println!("{:?}\t{}", a, cand.text);
                }
            }
        }
    }
}
