//! The detectors the engine runs, in order. Each detector module exposes
//! `pub fn detectors() -> Vec<Box<dyn Detector>>` and is plugged in here with one line.
//!
//! A detector whose [`Detector::name`] is listed in [`crate::engine::FAMILIES`] gets a
//! byte-class pre-filter (values made only of bytes that cannot carry its attacks are not
//! shown to it); any other name is shown every value.

use crate::Detector;

/// Every built-in detector.
pub fn detectors() -> Vec<Box<dyn Detector>> {
    #[allow(unused_mut)]
    let mut all: Vec<Box<dyn Detector>> = Vec::new();
    // One line per detector module, e.g.:
    // all.extend(crate::sqli::detectors());
    // all.extend(crate::xss::detectors());
    all
}
