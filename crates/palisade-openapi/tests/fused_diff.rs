//! Differential test of the fused (one-pass) body validator against the tape validator, on
//! random mutations of the benchmark bodies (../shared/bench/small.json and large.json against
//! bench-api.yaml): every mutant must get the same findings, field for field, from a judge
//! with the fused path and one without. Deterministic (fixed seeds), bounded in count.
//! Skipped (with a message) without ../shared.

use std::path::{Path, PathBuf};

use palisade_core::rawhttp::parse_request;
use palisade_openapi::judge::{Finding, Judge, Phase};
use palisade_testkit::rng::Rng;

fn shared() -> Option<PathBuf> {
    let p = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/bench"));
    p.join("bench-api.yaml").exists().then(|| p.to_path_buf())
}

fn judge(dir: &Path, settings: &str, fused: bool) -> Judge {
    let spec = dir.join("bench-api.yaml").canonicalize().unwrap().display().to_string();
    let set = palisade_openapi::load(&spec, &palisade_openapi::FsFetch, &palisade_openapi::Limits::default()).unwrap();
    let api = palisade_openapi::compile(&set, &Default::default()).unwrap();
    let node = palisade_config::yaml::parse(settings).unwrap();
    let mut cx = palisade_config::decode::Ctx::new("test");
    let settings = palisade_openapi::settings::Settings::decode(&mut cx, &node, "openapi", Path::new("/")).unwrap();
    let mut j = Judge::new(api, settings).unwrap();
    j.set_fused(fused);
    j
}

const PIECES: &[&[u8]] = &[
    b"\"",
    b"\\",
    b"{",
    b"}",
    b"[",
    b"]",
    b",",
    b":",
    b" ",
    b"0",
    b"-1",
    b"1.5",
    b"1e400",
    b"99999999999999999999",
    b"null",
    b"true",
    b"\"x\"",
    b"\\u00e9",
    b"\\ud800",
    b"\xff",
    b"\xc3\xa9",
    b"\x01",
    b"{}",
    b"[]",
    b"\"extra\":1,",
    b"\"id\":",
    b"2024-13-01T00:00:00Z",
    b"SKU-1",
];

fn mutate(base: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut v = base.to_vec();
    for _ in 0..1 + rng.below(3) {
        if v.is_empty() {
            v.extend_from_slice(b"{}");
        }
        let at = rng.below(v.len());
        match rng.below(8) {
            0 => {
                v.remove(at);
            }
            1 => v[at] = rng.next_u64() as u8,
            2 | 3 => {
                let piece = PIECES[rng.below(PIECES.len())];
                v.splice(at..at, piece.iter().copied());
            }
            4 => {
                // Replace the token at `at` (up to a delimiter) with a piece.
                let end = (at..v.len()).find(|&i| matches!(v[i], b',' | b'}' | b']' | b':')).unwrap_or(v.len());
                let piece = PIECES[rng.below(PIECES.len())];
                v.splice(at..end, piece.iter().copied());
            }
            5 => {
                // Change one digit or letter a little (keeps most mutants well-formed).
                if let Some(i) = (at..v.len()).find(|&i| v[i].is_ascii_alphanumeric()) {
                    v[i] = if v[i].is_ascii_digit() { b'0' + rng.below(10) as u8 } else { b'a' + rng.below(26) as u8 };
                }
            }
            6 => v.truncate(at),
            _ => {
                // Duplicate a span.
                let len = rng.below(40).min(v.len() - at);
                let span: Vec<u8> = v[at..at + len].to_vec();
                v.splice(at..at, span);
            }
        }
    }
    v
}

fn findings(j: &Judge, head: &str, body: &[u8]) -> Vec<Finding> {
    let mut raw = head.as_bytes().to_vec();
    raw.extend_from_slice(body);
    let req = parse_request(&raw).unwrap();
    let mut out = Vec::new();
    j.check_request(&req.view(), Phase::Whole, &mut out);
    out
}

fn run(file: &str, head: &str, count: usize, seed: u64) {
    let Some(dir) = shared() else {
        eprintln!("fused_diff skipped: ../shared/bench not found");
        return;
    };
    let base = std::fs::read(dir.join(file)).unwrap();
    for settings in ["spec: x", "spec: x\nunknown_fields: pass\nmax_violations: 1", "spec: x\nunknown_fields: block"] {
        let (fused, tape) = (judge(&dir, settings, true), judge(&dir, settings, false));
        assert_eq!(findings(&fused, head, &base), findings(&tape, head, &base));
        assert!(findings(&fused, head, &base).is_empty(), "{file} is valid");
        let mut rng = Rng::new(seed);
        let (mut clean, mut dirty) = (0, 0);
        for i in 0..count {
            let m = mutate(&base, &mut rng);
            let a = findings(&fused, head, &m);
            let b = findings(&tape, head, &m);
            assert_eq!(a, b, "{file} mutant {i} ({settings:?}): {:?}", String::from_utf8_lossy(&m[..m.len().min(300)]));
            if a.is_empty() {
                clean += 1;
            } else {
                dirty += 1;
            }
        }
        // Both outcomes were exercised.
        assert!(clean > 0 && dirty > 0, "{file}: {clean} clean, {dirty} with findings");
    }
}

#[test]
fn small_json_mutants_agree() {
    run("small.json", "POST /orders HTTP/1.1\nHost: b\nContent-Type: application/json\n\n", 3000, 0x5EED_0001);
}

#[test]
fn large_json_mutants_agree() {
    run("large.json", "POST /test/signup HTTP/1.1\nHost: b\nContent-Type: application/json\n\n", 400, 0x5EED_0002);
}
