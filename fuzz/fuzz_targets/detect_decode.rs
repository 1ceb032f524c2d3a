//! Fuzz the detection decoders: the candidate pipeline, each layer on its own, base64 and
//! path normalisation. Invariants: no panic; every decoding is length non-increasing (so
//! output is bounded by input, and time by layers x input); candidates start with the raw
//! value; the path normaliser's output is no longer than its input plus the `../` it adds.
#![no_main]

use libfuzzer_sys::fuzz_target;
use palisade_detect::decode::{self, Decoder, Limits, Transforms};

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else { return };
    let mut d = Decoder::new(Limits { max_layers: 4, max_input: 4096 });
    let c = d.decode(s);
    let all: Vec<_> = c.iter().collect();
    assert_eq!(all[0].text, s);
    assert!(all[0].transforms.is_empty());
    for cand in &all[1..] {
        assert!(cand.text.len() <= s.len().min(4096), "{:?} grew: {} > {}", cand.transforms, cand.text.len(), s.len());
        assert!(!cand.transforms.is_empty());
    }
    let (mut out, mut run) = (String::new(), Vec::new());
    for plus in [false, true] {
        out.clear();
        if !decode::url_layer(s, plus, !plus, &mut out, &mut run).is_empty() {
            assert!(out.len() <= s.len());
        }
    }
    out.clear();
    if decode::html_layer(s, &mut out) == Transforms::HTML {
        assert!(out.len() <= s.len());
    }
    out.clear();
    if !decode::escape_layer(s, &mut out).is_empty() {
        assert!(out.len() <= s.len());
    }
    let t = decode::transport_decode(s, true, &mut out, &mut run);
    assert!(t.len() <= s.len());
    let mut p = String::new();
    let info = decode::normalize_path(s, &mut p);
    assert!(p.len() <= s.len() + 1 + 3 * info.above_root);
});
