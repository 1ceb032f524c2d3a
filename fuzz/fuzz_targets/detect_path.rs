#![no_main]
//! The path traversal / LFI detector on arbitrary input: no panics, any field kind.
use libfuzzer_sys::fuzz_target;
use palisade_detect::{FieldKind, Input, Level};

fuzz_target!(|data: &[u8]| {
    let s = String::from_utf8_lossy(data);
    let d = palisade_detect::path::detector();
    for field in [FieldKind::QueryValue, FieldKind::MultipartFilename, FieldKind::PathSegment, FieldKind::JsonValue] {
        for level in [Level::Balanced, Level::Strict] {
            if let Some(h) = d.check(&Input { raw: &s, decoded: &s, field }, level) {
                assert!(h.confidence <= 100 && h.fragment.len() <= 64);
            }
        }
    }
});
