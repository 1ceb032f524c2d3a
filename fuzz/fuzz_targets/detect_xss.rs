//! The xss detector never panics, and its hits respect the contract (confidence 0..=100,
//! fragment at most 64 bytes). Time linearity is checked by the unit tests (step counts).
#![no_main]

use libfuzzer_sys::fuzz_target;
use palisade_detect::{FieldKind, Input, Level};

fuzz_target!(|data: &[u8]| {
    let s = String::from_utf8_lossy(data);
    let d = palisade_detect::xss::detector();
    for level in [Level::Balanced, Level::Strict] {
        let input = Input { raw: &s, decoded: &s, field: FieldKind::QueryValue };
        if let Some(h) = d.check(&input, level) {
            assert!(h.confidence <= 100);
            assert!(h.fragment.len() <= 64);
            assert_eq!(h.detector, d.name());
        }
    }
});
