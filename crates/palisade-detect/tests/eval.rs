//! Corpus evaluation with the built-in detectors: the development attack corpus in
//! `../shared` (skipped with a message when absent) and the benign sets kept in
//! `data/benign/`. Prints the table; asserts what holds today (no panic, every value placed
//! and inspected, false positives on our own benign sets under a bound).
//!
//! Debug builds sample at most `PALISADE_EVAL_MAX` values per category (default 1500);
//! `PALISADE_EVAL_MAX=0` runs everything (use `--release`).

use std::path::Path;

use palisade_detect::eval::{evaluate, parse_corpus, Label, Place, Sample};
use palisade_detect::{Engine, EngineConfig};

fn sample(samples: Vec<Sample>) -> Vec<Sample> {
    let max: usize = std::env::var("PALISADE_EVAL_MAX").ok().and_then(|v| v.parse().ok()).unwrap_or(1500);
    palisade_detect::eval::sample(samples, max)
}

fn benign_sets() -> Vec<Sample> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/benign");
    let mut all = Vec::new();
    let mut names: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|e| e == "jsonl")).collect();
    names.sort();
    for p in names {
        let text = std::fs::read_to_string(&p).unwrap();
        let s = parse_corpus(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        assert!(s.iter().all(|s| s.label == Label::Benign), "{}", p.display());
        all.extend(s);
    }
    all
}

#[test]
fn benign_sets_are_large_enough_and_well_formed() {
    let all = benign_sets();
    assert!(all.len() >= 2000, "{} benign values", all.len());
}

#[test]
fn evaluation_table() {
    let engine = Engine::new(EngineConfig::default()).unwrap();
    println!("detectors: {:?}", engine.detector_names());
    let mut samples = benign_sets();
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/attack-corpus/corpus.jsonl");
    match std::fs::read_to_string(&corpus) {
        Ok(text) => samples.extend(parse_corpus(&text).unwrap()),
        Err(e) => println!("skipping the development corpus ({}: {e}); benign sets only", corpus.display()),
    }
    let samples = sample(samples);
    let ev = evaluate(&engine, &samples, &Place::ALL);
    println!("{}", ev.table());
    for (cat, missed) in &ev.examples_missed {
        println!("missed {cat}: {:?}", &missed[..missed.len().min(3)]);
    }
    for (place, v) in ev.examples_fp.iter().take(20) {
        println!("false positive in {place}: {v:?}");
    }
    // Every value was placed at every place but headers (control characters).
    for ((_, _, place), cell) in &ev.cells {
        if *place != Place::Header {
            assert_eq!(cell.skipped, 0, "{place:?}");
        }
    }
    // Our own benign sets: false positives stay under 5% per set and place.
    for ((label, cat, place), cell) in &ev.cells {
        if *label == Label::Benign && cat.starts_with("benign-") {
            assert!(cell.rate() <= 0.05, "{cat} at {place:?}: {:.1}% false positives", 100.0 * cell.rate());
        }
    }
}
