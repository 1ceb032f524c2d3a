//! Fuzz the body parsers of palisade-body on arbitrary bytes: media types, query / form pairs
//! and percent-decoding, multipart framing and the XML tokenizer and checker. Invariants: no
//! panic; pairs and parts point into the input and respect their limits; the XML checker
//! agrees with the tokenizer about token errors.
#![no_main]

use libfuzzer_sys::fuzz_target;
use palisade_body::form::{percent_decode, DecodeMode, Query};
use palisade_body::{media, multipart, xml};

fn inside(input: &[u8], part: &[u8]) -> bool {
    part.is_empty() || (input.as_ptr_range().start <= part.as_ptr() && part.as_ptr_range().end <= input.as_ptr_range().end)
}

fuzz_target!(|data: &[u8]| {
    if data.is_empty() {
        return;
    }
    let sel = data[0];
    let input = &data[1..];

    // Media types.
    if let Ok(text) = std::str::from_utf8(input) {
        if let Ok(m) = media::parse(text) {
            let _ = m.kind();
            let _ = m.params().count();
        }
        let _ = media::select(text, ["*/*", "application/*+json", "text/plain; charset=utf-8"]);
        let _ = multipart::boundary(text);
    }

    // Query / form pairs: at most the limit, values are pieces of the input.
    let mut q = Query::with_limit(1 + (sel as usize % 64));
    let _ = q.parse(input);
    assert!(q.len() <= 1 + (sel as usize % 64));
    for i in 0..q.len() {
        let p = q.get(i);
        assert_eq!(p.raw_value, &q.raw()[q.value_range(i)]);
        assert!(!p.raw_value.contains(&b'&'));
    }
    let mut scratch = Vec::new();
    for mode in [DecodeMode::Form, DecodeMode::Path, DecodeMode::Cookie, DecodeMode::None] {
        if let Ok(text) = percent_decode(input, mode, &mut scratch) {
            assert!(text.len() <= input.len());
        }
    }

    // Multipart with a fixed boundary: parts borrow from the input, within the limits.
    let mut parts = Vec::new();
    let limits = multipart::Limits { max_parts: 16, max_header_bytes: 256, max_headers: 8 };
    if multipart::parse(input, "b", &limits, &mut parts).is_ok() {
        assert!(parts.len() <= limits.max_parts);
        for p in &parts {
            assert!(inside(input, p.body) && inside(input, p.headers));
            assert!(p.headers.len() <= limits.max_header_bytes);
        }
    }

    // XML: the checker never panics; a tokenizer error is a checker error.
    let limits = xml::Limits { max_bytes: 1 << 16, max_depth: 64, max_attributes: 16 };
    let checked = xml::check(input, &limits);
    let tokenizer_failed = xml::Tokenizer::new(input).any(|t| t.is_err());
    if tokenizer_failed && std::str::from_utf8(input).is_ok() {
        assert!(checked.is_err());
    }
    for tok in xml::Tokenizer::new(input).flatten() {
        if let xml::Token::StartTag { attrs, .. } = tok {
            for a in xml::attributes(input, attrs) {
                let _ = a;
            }
        }
    }
});
