//! Where the time of a JSON body goes, value by value: every distinct string value and key of
//! FILE.json is inspected alone (as a JSON value or key, default engine, fresh memo per call as
//! in a request that holds it once) many times, and the values are printed by cost, with the
//! detectors the pre-filters admit for each (not a benchmark: the figures are minimums of
//! wall-clock trials on whatever machine runs it; read them as a ranking).
//!
//! `cargo run --release -p palisade-detect --example value_cost -- FILE.json [TOP]`
use palisade_detect::extract::Location;
use palisade_detect::{Engine, EngineConfig, FieldKind, Level};
use std::time::Instant;

fn walk(v: &serde_json::Value, out: &mut Vec<(String, FieldKind)>) {
    match v {
        serde_json::Value::String(s) => out.push((s.clone(), FieldKind::JsonValue)),
        serde_json::Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
        serde_json::Value::Object(o) => o.iter().for_each(|(k, x)| {
            out.push((k.clone(), FieldKind::JsonKey));
            walk(x, out)
        }),
        _ => {}
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(file) = args.first() else {
        eprintln!("usage: value_cost FILE.json [TOP]");
        std::process::exit(2);
    };
    let top: usize = args.get(1).map_or(40, |s| s.parse().expect("TOP is a number"));
    let doc: serde_json::Value = match std::fs::read(file).map_err(|e| e.to_string()).and_then(|b| serde_json::from_slice(&b).map_err(|e| e.to_string())) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("{file}: {e}");
            std::process::exit(1);
        }
    };
    let mut all = Vec::new();
    walk(&doc, &mut all);
    let occurrences = |v: &(String, FieldKind)| all.iter().filter(|x| *x == v).count();
    let mut vals = all.clone();
    vals.sort_by(|a, b| a.0.cmp(&b.0).then((a.1 as u8).cmp(&(b.1 as u8))));
    vals.dedup();
    let engine = Engine::new(EngineConfig::default()).expect("engine");
    let mut scratch = engine.scratch();
    let mut out = Vec::new();
    let loc = Location::Body;
    let mut rows = Vec::new();
    for v in &vals {
        let mut best = f64::MAX;
        for _ in 0..5 {
            let t = Instant::now();
            for _ in 0..200 {
                out.clear();
                engine.inspect_value(&v.0, v.1, &loc, Level::Balanced, &mut scratch, &mut out);
            }
            best = best.min(t.elapsed().as_nanos() as f64 / 200.0);
        }
        rows.push((best, v, occurrences(v), engine.admitted(&v.0)));
    }
    let total: f64 = rows.iter().map(|r| r.0).sum();
    rows.sort_by(|a, b| b.0.total_cmp(&a.0));
    println!("{} distinct values ({} in the document), {:.1} µs for one pass over the distinct ones", vals.len(), all.len(), total / 1000.0);
    println!("{:>9} {:>6} {:>4}  {:<40} value", "ns", "cum%", "occ", "admitted");
    let mut cum = 0.0;
    for (ns, v, occ, adm) in rows.iter().take(top) {
        cum += ns;
        let kind = if v.1 == FieldKind::JsonKey { "key " } else { "" };
        println!("{:>9.0} {:>5.1}% {:>4}  {:<40} {kind}{:?}", ns, 100.0 * cum / total, occ, adm.join(","), palisade_detect::truncate(&v.0, 90));
    }
}
