//! The detectors the engine runs, in order. Each detector module exposes
//! `pub fn detectors() -> Vec<Box<dyn Detector>>` and is plugged in here with one line.
//!
//! A detector whose [`Detector::name`] is listed in [`crate::engine::FAMILIES`] gets a
//! byte-class pre-filter (values made only of bytes that cannot carry its attacks are not
//! shown to it); any other name is shown every value.

use crate::Detector;

/// Every built-in detector.
pub fn detectors() -> Vec<Box<dyn Detector>> {
    vec![
        crate::sqli::detector(),
        crate::xss::detector(),
        crate::path::detector(),
        crate::ssrf::detector(),
        crate::cmdi::detector(),
        crate::argument::detector(),
        crate::ssti::detector(),
        crate::log4shell::detector(),
        crate::xxe::detector(),
        crate::code::detector(),
        crate::crlf::detector(),
        crate::nosql::detector(),
        crate::ldap::detector(),
        crate::scanner::detector(),
    ]
}
