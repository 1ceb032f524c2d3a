//! Development measurement of the "other" detectors (path, ssrf, cmdi, ssti, log4shell, xxe,
//! code, crlf, nosql, ldap, scanner) on `../shared/data/attack-corpus/corpus.jsonl`.
//! Skipped (with a message) when the corpus is absent. Run with
//! `cargo test --release -p palisade-detect --test other_corpus -- --nocapture`;
//! `OTHER_MISSES=path` writes the misses and false positives there.

use palisade_detect::{Detector, FieldKind, Input, Level};
use std::collections::BTreeMap;

const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/data/attack-corpus/corpus.jsonl");

fn detectors() -> Vec<Box<dyn Detector>> {
    vec![
        palisade_detect::path::detector(),
        palisade_detect::cmdi::detector(),
        palisade_detect::code::detector(),
        palisade_detect::ssti::detector(),
        palisade_detect::nosql::detector(),
        palisade_detect::ldap::detector(),
        palisade_detect::xxe::detector(),
        palisade_detect::log4shell::detector(),
        palisade_detect::ssrf::detector(),
        palisade_detect::crlf::detector(),
        palisade_detect::scanner::detector(),
    ]
}

/// Minimal JSON string field extraction (the corpus is flat objects of strings).
fn field(line: &str, key: &str) -> Option<String> {
    let pat = format!("\"{key}\": \"");
    let start = line.find(&pat).or_else(|| line.find(&format!("\"{key}\":\"")).map(|p| p - 1))? + pat.len();
    let mut out = String::new();
    let mut it = line[start..].chars();
    while let Some(c) = it.next() {
        match c {
            '"' => return Some(out),
            '\\' => match it.next()? {
                'n' => out.push('\n'),
                'r' => out.push('\r'),
                't' => out.push('\t'),
                'b' => out.push('\u{8}'),
                'f' => out.push('\u{c}'),
                'u' => {
                    let h: String = it.by_ref().take(4).collect();
                    let mut v = u32::from_str_radix(&h, 16).ok()?;
                    if (0xd800..0xdc00).contains(&v) {
                        let rest: String = it.by_ref().take(6).collect();
                        let lo = u32::from_str_radix(rest.get(2..)?, 16).ok()?;
                        v = 0x10000 + ((v - 0xd800) << 10) + (lo - 0xdc00);
                    }
                    out.push(char::from_u32(v).unwrap_or('\u{fffd}'));
                }
                c => out.push(c),
            },
            c => out.push(c),
        }
    }
    None
}

const CATS: [&str; 7] = ["path-traversal", "lfi", "cmdi", "ssti", "xxe", "ldap", "nosql"];

#[test]
fn corpus_detection_and_false_positives() {
    // `$PALISADE_CORPUS` names another copy (a worktree has no `../shared` beside it).
    let path = std::env::var("PALISADE_CORPUS").unwrap_or_else(|_| CORPUS.to_string());
    let Ok(text) = std::fs::read_to_string(&path) else {
        println!("corpus not found at {path}: skipping the development measurement");
        return;
    };
    let dets = detectors();
    let judge = |v: &str, level: Level| -> Option<(u8, &'static str, &'static str)> {
        let input = Input { raw: v, decoded: v, field: FieldKind::QueryValue };
        dets.iter().filter_map(|d| d.check(&input, level)).max_by_key(|h| h.confidence).map(|h| (h.confidence, h.detector, h.why))
    };
    // category -> (total, balanced hits, strict hits)
    let mut stats: BTreeMap<String, (usize, usize, usize)> = BTreeMap::new();
    let mut misses = String::new();
    for line in text.lines() {
        let (Some(label), Some(cat), Some(v)) = (field(line, "label"), field(line, "category"), field(line, "value")) else { continue };
        let is_benign = label == "benign";
        if !is_benign && !CATS.contains(&cat.as_str()) {
            continue;
        }
        let b = judge(&v, Level::Balanced);
        let s = judge(&v, Level::Strict);
        let e = stats.entry(cat.clone()).or_default();
        e.0 += 1;
        e.1 += b.is_some() as usize;
        e.2 += s.is_some() as usize;
        if is_benign && s.is_some() {
            misses.push_str(&format!("FP {cat} {:?} {v:?}\n", s));
        } else if !is_benign && b.is_none() {
            misses.push_str(&format!("MISS {cat} strict={:?} {v:?}\n", s.map(|x| x.0)));
        }
    }
    if let Ok(p) = std::env::var("OTHER_MISSES") {
        std::fs::write(p, &misses).unwrap();
    }
    let pct = |n: usize, d: usize| if d == 0 { 0.0 } else { 100.0 * n as f64 / d as f64 };
    println!("{:<16} {:>7} {:>10} {:>10}", "category", "total", "balanced%", "strict%");
    for (cat, (t, b, s)) in &stats {
        println!("{cat:<16} {t:>7} {:>10.2} {:>10.2}", pct(*b, *t), pct(*s, *t));
    }
    let rate = |cat: &str, strict: bool| stats.get(cat).map_or(100.0, |(t, b, s)| pct(if strict { *s } else { *b }, *t));
    // Floors at the figures reached on the development set.
    assert!(rate("benign", false) <= 0.1, "balanced FP rate {}", rate("benign", false));
    // Below the 95% bar: cmdi, xxe and ldap, whose lists hold fragments that are not attacks in
    // context (bare `'`, `|`, attribute names, plain XML, XSS and XPath payloads): see
    // docs/DETECTION.md, "What is missed".
    assert!(rate("benign", true) <= 0.1, "strict FP rate {}", rate("benign", true));
    // cmdi and lfi lost a few corpus values by design: a bare word is not a command (`id`,
    // `whoami` alone are strict probes), and the name of an `/etc` file alone is a REST route.
    for (cat, min) in [("path-traversal", 99.5), ("lfi", 98.85), ("cmdi", 92.5), ("ssti", 99.0), ("xxe", 73.5), ("ldap", 16.6), ("nosql", 96.0)] {
        assert!(rate(cat, false) >= min, "{cat}: {} < {min}", rate(cat, false));
    }
}
