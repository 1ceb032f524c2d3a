//! Extracts the fields of one request body N times with a callback that does nothing but
//! count (no detection, no engine memo): the cost of the extractor's walk alone, to run under
//! `valgrind --tool=callgrind` (instructions per body = difference of two N, divided).
//!
//! `cargo run --release -p palisade-detect --example extract_n -- FILE [N] [CONTENT-TYPE] [clean]`
//! (`clean`: the callback judges every value clean, as the engine does for values without a
//! finding, so that repeated keys of an array of objects are only counted).

use palisade_detect::eval::OwnedRequest;
use palisade_detect::extract::{Extractor, Field, Scratch};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(file) = args.first() else {
        eprintln!("usage: extract_n FILE [N] [CONTENT-TYPE] [clean]");
        std::process::exit(2);
    };
    let n: usize = args.get(1).map_or(200, |s| s.parse().expect("N is a number"));
    let ct = args.get(2).map_or("application/json", String::as_str);
    let clean = args.get(3).is_some_and(|a| a == "clean");
    let mut req = OwnedRequest::new(http::Method::POST, "/orders");
    req.headers.insert(http::header::CONTENT_TYPE, ct.parse().expect("content type"));
    req.body = std::fs::read(file).unwrap_or_else(|e| panic!("{file}: {e}"));
    let ex = Extractor::default();
    let mut scratch = Scratch::default();
    let mut seen = 0usize;
    let mut last = Default::default();
    for _ in 0..n {
        let mut f = |fl: &Field<'_>| {
            seen += std::hint::black_box(fl.value).len();
            std::ops::ControlFlow::Continue(clean)
        };
        let (counts, r) = ex.body(&std::hint::black_box(&req).view(), &mut scratch, &mut f);
        r.expect("within the limits");
        last = counts;
    }
    println!("{last:?}, {seen} bytes handed over in all");
}
