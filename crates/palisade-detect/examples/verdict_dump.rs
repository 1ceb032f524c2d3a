//! Dump everything the detection code decides about every value of some corpora, in full, so
//! that a change meant to be behaviour-preserving (a faster path, an early exit) can be checked
//! by diffing the output before and after it:
//! `cargo run --release -p palisade-detect --example verdict_dump -- FILE...`.
//!
//! A FILE ending in `.jsonl` is a corpus (`eval` format); any other FILE is read as JSON and
//! every string leaf and key is a value. For each value: the decoder's candidates (transforms
//! and text), every detector's [`palisade_detect::Hit`] (detector, category, confidence, why,
//! fragment) on each candidate at both levels and for a query value and a JSON value, and the
//! engine's findings at both levels. Not a benchmark.

use palisade_detect::decode::Decoder;
use palisade_detect::eval::parse_corpus;
use palisade_detect::extract::Location;
use palisade_detect::{Engine, EngineConfig, FieldKind, Input, Level};
use std::fmt::Write;

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
    let dets = palisade_detect::registry::detectors();
    let engines = [Level::Balanced, Level::Strict].map(|level| Engine::new(EngineConfig { level, ..EngineConfig::default() }).expect("engine"));
    let mut scratch = engines[0].scratch();
    let mut decoder = Decoder::default();
    let mut findings = Vec::new();
    for f in std::env::args().skip(1) {
        let text = std::fs::read_to_string(&f).unwrap_or_else(|e| panic!("{f}: {e}"));
        let values: Vec<String> = if f.ends_with(".jsonl") {
            parse_corpus(&text).expect("corpus").into_iter().map(|s| s.value).collect()
        } else {
            let mut v = Vec::new();
            walk(&serde_json::from_str(&text).expect("JSON"), &mut v);
            v
        };
        for (i, value) in values.iter().enumerate() {
            let mut line = format!("{f}:{i}");
            let cands: Vec<(String, String)> = decoder.decode(value).iter().map(|c| (c.transforms.to_string(), c.text.to_string())).collect();
            for (tf, t) in &cands {
                if tf != "raw" {
                    let _ = write!(line, " [{tf}:{t:?}]");
                }
            }
            for field in [FieldKind::QueryValue, FieldKind::JsonValue] {
                for level in [Level::Balanced, Level::Strict] {
                    for (tf, t) in &cands {
                        let input = Input { raw: t, decoded: t, field };
                        for d in &dets {
                            if let Some(h) = d.check(&input, level) {
                                let _ = write!(line, " {field:?}/{level:?}/{tf}:{h:?}");
                            }
                        }
                    }
                    // The contract's full input (raw and decoded together).
                    let dec = &cands.get(1).map_or(value.as_str(), |c| c.1.as_str());
                    let input = Input { raw: value, decoded: dec, field };
                    for d in &dets {
                        if let Some(h) = d.check(&input, level) {
                            let _ = write!(line, " {field:?}/{level:?}/both:{h:?}");
                        }
                    }
                }
            }
            for (k, e) in engines.iter().enumerate() {
                findings.clear();
                let level = [Level::Balanced, Level::Strict][k];
                e.inspect_value(value, FieldKind::JsonValue, &Location::Query("q"), level, &mut scratch, &mut findings);
                for x in &findings {
                    let _ = write!(line, " E{level:?}:{x:?}");
                }
            }
            println!("{line}");
        }
    }
}
