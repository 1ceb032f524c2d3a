//! The committed whole-request corpora (`data/requests/`, made by `scripts/corpus/`) through the
//! detection stage as the proxy runs it, with a quality floor: the test fails when the
//! false-positive rate on the benign corpus rises above, or the detection rate on the attack
//! corpus falls below, the figures recorded here. The figures are what the engine measures
//! today, rounded a little in its favour; tighten them (one constant each) as precision and
//! coverage improve. The goal: at most 0.05 % false positives at balanced and 0.3 % at strict,
//! at least 97 % of attacks detected at balanced.
//!
//! Deterministic: counts only, no timing. The whole corpora are evaluated (the crate is built
//! optimised for tests, see the workspace `Cargo.toml`). `cargo run -p palisade -- detect eval
//! crates/palisade-detect/data/requests/benign.jsonl.gz` prints the full report with every
//! false positive and missed attack.

use std::io::Read as _;
use std::path::Path;

use palisade_detect::eval::requests::{evaluate_requests, parse_request_corpus, LabelledRequest, RequestEvaluation};
use palisade_detect::eval::Label;
use palisade_detect::settings::Settings;
use palisade_detect::stage::DetectionStage;
use palisade_detect::Level;

/// Ceilings on the share of benign requests flagged, in percent (measured: balanced 0.040,
/// strict 0.138; requests labelled `ambiguous`, working payloads sent with no ill intent, are
/// counted apart and not here).
const BALANCED_MAX_FALSE_POSITIVES: f64 = 0.05;
const STRICT_MAX_FALSE_POSITIVES: f64 = 0.15;
/// Floors on the share of attack requests detected, in percent (measured: balanced 97.77,
/// strict 98.25).
const BALANCED_MIN_DETECTION: f64 = 97.7;
const STRICT_MIN_DETECTION: f64 = 98.2;

fn load(name: &str) -> Vec<LabelledRequest> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/requests").join(name);
    let gz = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut text = String::new();
    flate2::read::GzDecoder::new(&gz[..]).read_to_string(&mut text).unwrap();
    parse_request_corpus(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn evaluate(level: Level) -> RequestEvaluation {
    let mut reqs = load("benign.jsonl.gz");
    reqs.extend(load("attacks.jsonl.gz"));
    let stage = DetectionStage::new(&Settings { level, ..Settings::default() }).unwrap();
    evaluate_requests(&stage, reqs)
}

fn check(level: Level, max_fp: f64, min_detection: f64) {
    let ev = evaluate(level);
    let (b, a) = (ev.overall(Label::Benign), ev.overall(Label::Attack));
    assert!(b.total >= 30_000, "the benign corpus has {} requests", b.total);
    let classes = ev.by_class(Label::Attack);
    assert!(classes.len() >= 25, "attack classes: {:?}", classes.keys());
    let (fp, det) = (100.0 * b.rate(), 100.0 * a.rate());
    println!("level {}: false positives {}/{} ({fp:.3} %), attacks detected {}/{} ({det:.2} %)", ev.level, b.flagged, b.total, a.flagged, a.total);
    for (class, c) in ev.by_class(Label::Benign).iter().filter(|(_, c)| c.flagged > 0) {
        println!("  benign {class:<30} {:>5}/{:<5} {:>6.2} %", c.flagged, c.total, 100.0 * c.rate());
    }
    for (class, c) in &classes {
        println!("  attack {class:<30} {:>5}/{:<5} {:>6.2} %", c.flagged, c.total, 100.0 * c.rate());
    }
    assert!(fp <= max_fp, "{} false positives rose to {fp:.3} % (ceiling {max_fp} %)", ev.level);
    assert!(det >= min_detection, "{} attack detection fell to {det:.2} % (floor {min_detection} %)", ev.level);
}

#[test]
fn balanced_quality_floor() {
    check(Level::Balanced, BALANCED_MAX_FALSE_POSITIVES, BALANCED_MIN_DETECTION);
}

#[test]
fn strict_quality_floor() {
    check(Level::Strict, STRICT_MAX_FALSE_POSITIVES, STRICT_MIN_DETECTION);
}

/// The evaluation is the stage's own judgement: a flagged request is one the stage does not
/// allow, and every finding listed is one the stage acts on.
#[test]
fn evaluation_agrees_with_the_stage() {
    use palisade_core::{Context, Stage, Verdict};
    let reqs: Vec<LabelledRequest> = load("attacks.jsonl.gz").into_iter().step_by(37).chain(load("benign.jsonl.gz").into_iter().step_by(211)).collect();
    let stage = DetectionStage::new(&Settings::default()).unwrap();
    let ev = evaluate_requests(&stage, reqs);
    for (r, o) in ev.requests.iter().zip(&ev.outcomes) {
        let view = r.request.view();
        let mut cx = Context::default();
        let mut flagged = !matches!(stage.check_head(&view, &mut cx), Verdict::Allow);
        if !view.body.is_empty() {
            flagged |= !matches!(stage.check_body(&view, &mut cx), Verdict::Allow);
        }
        assert_eq!(flagged, o.flagged, "{}", r.id);
        assert_eq!(o.flagged, !o.findings.is_empty() || o.limit.is_some(), "{}", r.id);
    }
}
