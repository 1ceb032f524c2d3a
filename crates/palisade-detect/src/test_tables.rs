//! Assertions over tables of values, for the detectors' tests: every value of a table is
//! checked and all the ones that fail are listed in one panic, with their confidence.

use crate::engine::threshold;
use crate::Level;

/// Every value of `values` scores at least the blocking threshold of `level` (`score` gives a
/// value's confidence); panics listing each that does not.
pub(crate) fn assert_all_at_least(values: &[&str], level: Level, score: impl Fn(&str) -> u8) {
    let bad: Vec<String> = values.iter().filter(|v| score(v) < threshold(level)).map(|v| format!("{v:?}: {}", score(v))).collect();
    assert!(bad.is_empty(), "{bad:#?}");
}

/// Every value of `values` scores below the blocking threshold of `level`; panics listing each
/// that does not.
pub(crate) fn assert_all_below(values: &[&str], level: Level, score: impl Fn(&str) -> u8) {
    let bad: Vec<String> = values.iter().filter(|v| score(v) >= threshold(level)).map(|v| format!("{v:?}: {}", score(v))).collect();
    assert!(bad.is_empty(), "{bad:#?}");
}
