//! Which string values and keys of a JSON document (and their decoded candidates) the engine's
//! pre-filters let reach which detectors, one line per candidate that reaches any:
//! `cargo run --release -p palisade-detect --example admitted -- FILE.json`.
use palisade_detect::decode::{Decoder, Limits};
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
    let f = std::env::args().nth(1).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(f).unwrap()).unwrap();
    let mut vals = Vec::new();
    walk(&v, &mut vals);
    vals.sort();
    vals.dedup();
    let engine = Engine::new(EngineConfig::default()).unwrap();
    let mut dec = Decoder::new(Limits::default());
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
