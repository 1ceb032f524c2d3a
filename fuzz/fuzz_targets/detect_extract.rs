//! Fuzz request extraction and the whole engine on arbitrary requests: the first bytes pick
//! the content type, then a path, a query, a cookie header and a body. Invariants: no panic;
//! the limits hold (never more values or bytes than allowed, and exceeding is reported);
//! every location renders.
#![no_main]

use libfuzzer_sys::fuzz_target;
use palisade_detect::eval::OwnedRequest;
use palisade_detect::extract::{Exceeded, Extractor, Limits, Scratch, Stop};
use palisade_detect::{Engine, EngineConfig};

const TYPES: [&str; 6] = ["application/json", "application/x-www-form-urlencoded", "multipart/form-data; boundary=XX", "application/xml", "text/plain", "image/png"];

static ENGINE: std::sync::LazyLock<Engine> =
    std::sync::LazyLock::new(|| Engine::new(EngineConfig { limits: Limits { max_values: 64, max_bytes: 2048, max_depth: 16 }, ..EngineConfig::default() }).unwrap());

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let ct = TYPES[data[0] as usize % TYPES.len()];
    let Ok(text) = std::str::from_utf8(&data[1..]) else { return };
    let mut parts = text.splitn(4, '\u{1}');
    let path = parts.next().unwrap_or("");
    let query = parts.next();
    let cookie = parts.next().unwrap_or("");
    let body = parts.next().unwrap_or("");
    let mut r = OwnedRequest::new(http::Method::POST, &format!("/{path}"));
    r.query = query.map(str::to_string);
    if let Ok(v) = http::HeaderValue::from_str(cookie) {
        r.headers.insert(http::header::COOKIE, v);
    }
    r.headers.insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static(ct));
    r.body = body.as_bytes().to_vec();
    let limits = Limits { max_values: 64, max_bytes: 2048, max_depth: 16 };
    let ex = Extractor::new(&[], limits).unwrap();
    let mut sc = Scratch::default();
    for body_phase in [false, true] {
        let (mut n, mut bytes) = (0usize, 0usize);
        let mut f = |fl: &palisade_detect::extract::Field<'_>| {
            n += 1;
            bytes += fl.value.len();
            let _ = fl.location.to_string();
            // `false`: not judged clean, so every value is handed over and counted here.
            std::ops::ControlFlow::Continue(false)
        };
        let (counts, res) = if body_phase { ex.body(&r.view(), &mut sc, &mut f) } else { ex.head(&r.view(), &mut sc, &mut f) };
        assert!(n <= limits.max_values && bytes <= limits.max_bytes);
        match res {
            Ok(()) => assert_eq!((counts.values, counts.bytes), (n, bytes)),
            Err(Stop::Exceeded(Exceeded::Values { .. } | Exceeded::Bytes { .. })) => {}
            Err(Stop::Caller) => panic!("the callback never stops"),
        }
    }
    // One engine for the whole run (building it per input would spend the run compiling
    // automata); the phases' memo and buffers are per call of `inspect`.
    let _ = ENGINE.inspect(&r.view());
});
