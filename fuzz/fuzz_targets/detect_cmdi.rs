#![no_main]
//! The shell-tokenizer command injection detector on arbitrary input: no panics.
use libfuzzer_sys::fuzz_target;
use palisade_detect::{FieldKind, Input, Level};

fuzz_target!(|data: &[u8]| {
    let s = String::from_utf8_lossy(data);
    let d = palisade_detect::cmdi::detector();
    for level in [Level::Balanced, Level::Strict] {
        if let Some(h) = d.check(&Input { raw: &s, decoded: &s, field: FieldKind::QueryValue }, level) {
            assert!(h.confidence <= 100 && h.fragment.len() <= 64);
        }
    }
});
