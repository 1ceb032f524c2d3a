#![no_main]
//! The other detectors (code, ssti, nosql, ldap, xxe, log4shell, ssrf, crlf, scanner) on
//! arbitrary input, the first byte choosing the field kind: no panics.
use libfuzzer_sys::fuzz_target;
use palisade_detect::{FieldKind, Input, Level};

const FIELDS: [FieldKind; 8] = [
    FieldKind::QueryValue,
    FieldKind::QueryName,
    FieldKind::Header,
    FieldKind::PathSegment,
    FieldKind::JsonKey,
    FieldKind::JsonValue,
    FieldKind::FormValue,
    FieldKind::XmlDocument,
];

fuzz_target!(|data: &[u8]| {
    let Some((&sel, rest)) = data.split_first() else { return };
    let s = String::from_utf8_lossy(rest);
    let field = FIELDS[sel as usize % FIELDS.len()];
    let dets = [
        palisade_detect::code::detector(),
        palisade_detect::ssti::detector(),
        palisade_detect::nosql::detector(),
        palisade_detect::ldap::detector(),
        palisade_detect::xxe::detector(),
        palisade_detect::log4shell::detector(),
        palisade_detect::ssrf::detector(),
        palisade_detect::crlf::detector(),
        palisade_detect::scanner::detector(),
    ];
    for d in &dets {
        for level in [Level::Balanced, Level::Strict] {
            if let Some(h) = d.check(&Input { raw: &s, decoded: &s, field }, level) {
                assert!(h.confidence <= 100 && h.fragment.len() <= 64);
            }
        }
    }
});
