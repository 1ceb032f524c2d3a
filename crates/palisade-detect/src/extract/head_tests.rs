//! [`Extractor::head`] (one pass over the request's headers) against the head extraction as
//! its documentation orders it, written plainly (one `get_all` per inspected name): same
//! fields in the same order, same counts, same outcome, on generated requests (inspected,
//! ignored and repeated headers, cookies, more than [`FOUND`] inspected values), with limits and
//! with the callback stopping early.

use super::*;
use crate::eval::OwnedRequest;
use palisade_testkit::rng::Rng;

/// The head extraction in its documented order: the path's segments (and the whole path when
/// it holds `..` or `\`), the query's pairs, the inspected headers by name, the cookies, then
/// every other header whose value breaks its grammar, in the order received.
fn head_spec(e: &Extractor, req: &RequestView<'_>, sc: &mut Scratch, f: &mut dyn FnMut(&Field<'_>) -> Verdict) -> (Counts, Result<(), Stop>) {
    let mut budget = Budget { tally: Tally { values: 0, bytes: 0, limits: e.limits }, f };
    let r = head_inner_spec(e, req, sc, &mut budget);
    (Counts { values: budget.tally.values, bytes: budget.tally.bytes, skipped: None }, r)
}

fn head_inner_spec(e: &Extractor, req: &RequestView<'_>, sc: &mut Scratch, budget: &mut Budget<'_, Callback<'_>>) -> Result<(), Stop> {
    let path = req.path.strip_prefix('/').unwrap_or(req.path);
    for (i, seg) in path.split('/').enumerate() {
        let v = transport_decode(seg, false, &mut sc.value, &mut sc.run);
        budget.emit(Location::PathSegment(i), FieldKind::PathSegment, v)?;
    }
    if req.path.contains("..") || req.path.contains('\\') {
        let v = transport_decode(req.path, false, &mut sc.value, &mut sc.run);
        budget.emit(Location::Path, FieldKind::PathSegment, v)?;
    }
    if let Some(q) = req.query {
        pairs(q, sc, budget, true)?;
    }
    for (name, display) in &e.headers {
        for v in req.headers.get_all(name) {
            let text = String::from_utf8_lossy(v.as_bytes());
            // Each value as [`header_value`] hands it over (a `Referer`'s query by parameter).
            header_value(&(name.clone(), display.clone()), &text, sc, budget)?;
        }
    }
    for v in req.headers.get_all(http::header::COOKIE) {
        cookies(v, sc, budget)?;
    }
    // Every other header whose value breaks its grammar, in the order received.
    for (name, v) in req.headers.iter() {
        if *name != http::header::COOKIE && !e.headers.iter().any(|(h, _)| h == name) && !crate::headers::conforms(name.as_str(), v.as_bytes()) {
            budget.emit(Location::Header(name.as_str()), FieldKind::Header, &String::from_utf8_lossy(v.as_bytes()))?;
        }
    }
    Ok(())
}

type Got = (Vec<(String, FieldKind, String)>, Counts, Result<(), Stop>);

/// The fields handed over (the callback stops after `stop_after` of them), counts and outcome.
fn run(e: &Extractor, req: &OwnedRequest, stop_after: usize, spec: bool) -> Got {
    let mut out = Vec::new();
    let mut sc = Scratch::default();
    let mut f = |fl: &Field<'_>| {
        out.push((fl.location.to_string(), fl.kind, fl.value.to_string()));
        if out.len() >= stop_after {
            std::ops::ControlFlow::Break(())
        } else {
            std::ops::ControlFlow::Continue(false)
        }
    };
    let view = req.view();
    let (c, r) = if spec { head_spec(e, &view, &mut sc, &mut f) } else { e.head(&view, &mut sc, &mut f) };
    (out, c, r)
}

#[test]
fn head_extracts_in_the_documented_order() {
    let names = [
        "user-agent",
        "referer",
        "x-forwarded-for",
        "x-forwarded-host",
        "origin",
        "cookie",
        "accept",
        "host",
        "x-api-version",
        "x-custom",
        "content-type",
        "authorization",
    ];
    let values = ["Mozilla/5.0", "sqlmap/1.7", "' or 1=1--", "a=1; b=%3Cscript%3E", "\"q\"=\"v\"", "", "x", "10.0.0.1, 10.0.0.2", "caf\u{e9}"];
    let extractors = [
        Extractor::default(),
        Extractor::new(&["X-Api-Version".to_string(), "x-custom".to_string(), "Accept".to_string()], Limits::default()).unwrap(),
        Extractor::new(&["X-Custom".to_string()], Limits { max_values: 7, max_bytes: 60, max_depth: 8 }).unwrap(),
    ];
    let mut rng = Rng::new(0x5eed_4ead);
    for case in 0..6000 {
        let mut req = OwnedRequest::new(http::Method::GET, rng.pick(&["/test", "/a/b/../c", "/x%20y/z", "/"]));
        if rng.chance(40) {
            req.query = Some(rng.pick(&["id=1", "q=%27+or&x", "a=b&c=d&e=f"]).to_string());
        }
        // Up to 40 header lines, many inspected ones at times (beyond `FOUND`).
        let lines = if case % 10 == 0 { 17 + rng.below(24) } else { rng.below(8) };
        for _ in 0..lines {
            let name = http::HeaderName::from_static(rng.pick(&names));
            let value = http::HeaderValue::from_bytes(rng.pick(&values).as_bytes()).unwrap();
            req.headers.append(name, value);
        }
        if rng.chance(5) {
            req.headers.append("user-agent", http::HeaderValue::from_bytes(b"bad \xff utf8").unwrap());
        }
        let e = &extractors[case % extractors.len()];
        let stop_after = if rng.chance(30) { 1 + rng.below(12) } else { usize::MAX };
        let got = run(e, &req, stop_after, false);
        let want = run(e, &req, stop_after, true);
        assert_eq!(got, want, "case {case}: {:?}", req.headers);
    }
}

/// [`climbs`] is whether the path holds `..` or `\`, as two searches tell.
#[test]
fn climbs_matches_contains() {
    let mut rng = Rng::new(0xc11b5);
    for _ in 0..20_000 {
        let n = rng.below(12);
        let p: String = (0..n).map(|_| rng.pick(&['.', '/', '\\', 'a', '%', 'é'])).collect();
        assert_eq!(climbs(p.as_bytes()), p.contains("..") || p.contains('\\'), "{p:?}");
    }
}

/// The header fields of a request with this `Referer`.
fn referer_fields(value: &str) -> Vec<(String, FieldKind, String)> {
    let mut got = Vec::new();
    let mut f = |fl: &Field<'_>| {
        if matches!(fl.location, Location::Header(_)) {
            got.push((fl.location.to_string(), fl.kind, fl.value.to_string()));
        }
        std::ops::ControlFlow::Continue(false)
    };
    let mut req = OwnedRequest::new(http::Method::GET, "/blog/a");
    req.headers.insert(http::header::REFERER, http::HeaderValue::from_str(value).unwrap());
    let _ = Extractor::default().head(&req.view(), &mut Scratch::default(), &mut f);
    got
}

/// A `Referer` URL's query is handed over parameter by parameter, decoded once, at
/// `header.Referer`; the address before it as header text; a `Referer` that is not an absolute
/// URL with a query stays one value.
#[test]
fn referer_query_parameters_are_values() {
    let want = |v: &[(&str, FieldKind, &str)]| v.iter().map(|(l, k, s)| (l.to_string(), *k, s.to_string())).collect::<Vec<_>>();
    assert_eq!(
        referer_fields("HTTPS://www.google.com/search?q=and+1%3D1+meaning&hl=fr#x"),
        want(&[
            ("header.Referer", FieldKind::Header, "HTTPS://www.google.com/search"),
            ("header.Referer", FieldKind::QueryName, "q"),
            ("header.Referer", FieldKind::Header, "and 1=1 meaning"),
            ("header.Referer", FieldKind::QueryName, "hl"),
            ("header.Referer", FieldKind::Header, "fr"),
        ])
    );
    for plain in ["https://example.com/page", "/relative?q=1", "x' or 1=1 --?a=b", "ftp://h/?a=b"] {
        assert_eq!(referer_fields(plain), want(&[("header.Referer", FieldKind::Header, plain)]), "{plain}");
    }
}
