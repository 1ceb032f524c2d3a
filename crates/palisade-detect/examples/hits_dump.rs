//! Dump every detector's verdict on every value of a corpus (one line per value and place of
//! evaluation): `cargo run --release -p palisade-detect --example hits_dump -- FILE.jsonl...`.
//! Used to compare detection before and after a change to the engine (diff the outputs): each
//! line has the value's index, the engine's findings at the strict level (detector:confidence,
//! transforms), and each detector's own verdict on the raw value.

use palisade_detect::eval::parse_corpus;
use palisade_detect::extract::Location;
use palisade_detect::{Engine, EngineConfig, FieldKind, Input, Level};

fn main() {
    let engine = Engine::new(EngineConfig { level: Level::Strict, ..EngineConfig::default() }).unwrap();
    let dets = palisade_detect::registry::detectors();
    let mut scratch = engine.scratch();
    let mut out = Vec::new();
    for f in std::env::args().skip(1) {
        let text = std::fs::read_to_string(&f).unwrap();
        for (i, s) in parse_corpus(&text).unwrap().into_iter().enumerate() {
            out.clear();
            engine.inspect_value(&s.value, FieldKind::QueryValue, &Location::Query("q"), Level::Strict, &mut scratch, &mut out);
            let mut line = format!("{f}:{i} {:?} {}:", s.label, s.category);
            for h in &out {
                line.push_str(&format!(" {}={}/{}", h.detector, h.confidence, h.transforms));
            }
            line.push_str(" |");
            let input = Input { raw: &s.value, decoded: &s.value, field: FieldKind::QueryValue };
            for d in &dets {
                if let Some(h) = d.check(&input, Level::Strict) {
                    line.push_str(&format!(" {}={}", h.detector, h.confidence));
                }
            }
            println!("{line}");
        }
    }
}
