//! Run one detector (or `all`) N times on a value or on the lines of a file (for callgrind:
//! the difference between two N is the detector's cost, without the engine around it).
//!
//! `cargo run --release -p palisade-detect --example detector_loop -- DETECTOR (TEXT|@FILE) N [json]`
//! (`json`: the values are shown as JSON string values; default: query values).
use palisade_detect::{FieldKind, Input, Level};
fn main() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let dets = palisade_detect::registry::detectors();
    let n: usize = a[2].parse().unwrap();
    let kind = if a.get(3).is_some_and(|k| k == "json") { FieldKind::JsonValue } else { FieldKind::QueryValue };
    let vals: Vec<String> =
        if a[1].starts_with('@') { std::fs::read_to_string(&a[1][1..]).unwrap().lines().map(String::from).collect() } else { vec![a[1].clone()] };
    let mut hits = 0;
    for d in dets.iter().filter(|d| a[0] == "all" || d.name() == a[0]) {
        for _ in 0..n {
            for v in &vals {
                let input = Input { raw: v, decoded: v, field: kind };
                if std::hint::black_box(d.check(&input, Level::Strict)).is_some() {
                    hits += 1;
                }
            }
        }
    }
    println!("{hits}");
}
