use super::*;

struct Fixed(&'static str, Verdict, bool);

impl Stage for Fixed {
    fn name(&self) -> &'static str {
        self.0
    }
    fn check_head(&self, _req: &RequestView<'_>, _cx: &mut Context) -> Verdict {
        if self.2 {
            self.1.clone()
        } else {
            Verdict::Allow
        }
    }
    fn check_body(&self, _req: &RequestView<'_>, _cx: &mut Context) -> Verdict {
        if self.2 {
            Verdict::Allow
        } else {
            self.1.clone()
        }
    }
}

fn with_view<R>(f: impl FnOnce(&RequestView<'_>) -> R) -> R {
    let headers = http::HeaderMap::new();
    let method = http::Method::GET;
    let view = RequestView {
        request_id: "r1",
        app: "api",
        client_ip: "127.0.0.1".parse().unwrap(),
        method: &method,
        path: "/x",
        raw_path: "/x",
        query: None,
        headers: &headers,
        body: b"",
        body_truncated: false,
        tls: false,
    };
    f(&view)
}

#[test]
fn first_block_stops_the_pipeline_and_monitors_accumulate() {
    let stages: Vec<Box<dyn Stage>> = vec![
        Box::new(Fixed("a", Verdict::monitor(Reason::new("a.m").at("query.x")), true)),
        Box::new(Fixed("b", Verdict::block_with_status(429, Reason::new("b.rate")), true)),
        Box::new(Fixed("c", Verdict::block(Reason::new("c.never")), true)),
    ];
    let mut outcome = Outcome::default();
    let blocked = with_view(|v| run_stages(&stages, Phase::Head, v, &mut outcome));
    assert!(blocked);
    let (stage, status, reasons) = outcome.blocked.unwrap();
    assert_eq!(stage, "b");
    assert_eq!(status, Some(429));
    assert_eq!(reasons[0].code, "b.rate");
    assert_eq!(outcome.monitored.len(), 1);
    assert_eq!(outcome.monitored[0].0, "a");
    assert_eq!(outcome.monitored[0].1.location.as_deref(), Some("query.x"));
}

#[test]
fn phases_call_the_matching_hook() {
    let stages: Vec<Box<dyn Stage>> = vec![Box::new(Fixed("body", Verdict::block(Reason::new("x")), false))];
    let mut outcome = Outcome::default();
    assert!(!with_view(|v| run_stages(&stages, Phase::Head, v, &mut outcome)));
    assert!(with_view(|v| run_stages(&stages, Phase::Body, v, &mut outcome)));
}

#[test]
fn mode_maps_findings_to_verdicts() {
    let r = || vec![Reason::new("x")];
    assert!(matches!(Mode::Block.verdict(r()), Verdict::Block { status: None, .. }));
    assert!(matches!(Mode::Monitor.verdict(r()), Verdict::Monitor { .. }));
    assert_eq!(Mode::Off.verdict(r()), Verdict::Allow);
    assert_eq!(Mode::Block.verdict(vec![]), Verdict::Allow);
}

#[test]
fn reason_display_includes_location_and_detail() {
    let r = Reason::new("openapi.parameter_invalid").at("query.limit").detail("must be <= 100");
    assert_eq!(r.to_string(), "openapi.parameter_invalid at query.limit: must be <= 100");
}

struct RespJudge(&'static str, bool);

impl Stage for RespJudge {
    fn name(&self) -> &'static str {
        self.0
    }
    fn wants_response(&self) -> bool {
        self.1
    }
    fn check_response(&self, _req: &RequestView<'_>, resp: &ResponseView<'_>, _cx: &Context) -> Verdict {
        if resp.status >= 500 {
            Verdict::block(Reason::new("test.bad_status"))
        } else if resp.body.is_empty() {
            Verdict::monitor(Reason::new("test.empty_body"))
        } else {
            Verdict::Allow
        }
    }
}

#[test]
fn response_stages_only_ask_stages_that_want_responses() {
    let headers = http::HeaderMap::new();
    let stages: Vec<Box<dyn Stage>> = vec![Box::new(RespJudge("off", false)), Box::new(RespJudge("on", true))];
    with_view(|req| {
        let resp = ResponseView { status: 200, headers: &headers, body: b"", body_truncated: false, body_undecodable: false };
        let mut out = Outcome::default();
        assert!(!run_response_stages(&stages, req, &resp, &mut out));
        assert_eq!(out.monitored, vec![("on", Reason::new("test.empty_body"))]);

        let resp = ResponseView { status: 502, ..resp };
        let mut out = Outcome::default();
        assert!(run_response_stages(&stages, req, &resp, &mut out));
        assert_eq!(out.blocked.map(|b| b.0), Some("on"));
    });
}

/// Sets an identity in the head phase; the next stage blocks in the body phase unless it sees
/// that identity and an exclusion for its detector.
struct Authn;
impl Stage for Authn {
    fn name(&self) -> &'static str {
        "access"
    }
    fn check_head(&self, _req: &RequestView<'_>, cx: &mut Context) -> Verdict {
        cx.identity.subject = Some("alice".into());
        cx.exclusions.push(Exclusion { detector: Some("sqli".into()), location: Some("body/comment".into()) });
        Verdict::Allow
    }
}
struct NeedsAlice;
impl Stage for NeedsAlice {
    fn name(&self) -> &'static str {
        "detect"
    }
    fn check_body(&self, _req: &RequestView<'_>, cx: &mut Context) -> Verdict {
        if cx.identity.subject.as_deref() == Some("alice") && cx.is_excluded("sqli", "body/comment/0") && !cx.is_excluded("xss", "body/comment") {
            Verdict::Allow
        } else {
            Verdict::block(Reason::new("detect.sqli"))
        }
    }
}

#[test]
fn the_context_carries_what_earlier_stages_established_across_phases() {
    let stages: Vec<Box<dyn Stage>> = vec![Box::new(Authn), Box::new(NeedsAlice)];
    let mut outcome = Outcome::default();
    assert!(!with_view(|v| run_stages(&stages, Phase::Head, v, &mut outcome)));
    assert!(!with_view(|v| run_stages(&stages, Phase::Body, v, &mut outcome)));
    let stages: Vec<Box<dyn Stage>> = vec![Box::new(NeedsAlice)];
    let mut outcome = Outcome::default();
    assert!(with_view(|v| run_stages(&stages, Phase::Body, v, &mut outcome)));
}

#[test]
fn locations_nest_only_at_separators() {
    assert!(location_within("body/a", "body/a"));
    assert!(location_within("body/a/b", "body/a"));
    assert!(location_within("query.q", "query"));
    assert!(location_within("body/a/b", "body/"));
    assert!(!location_within("body/ab", "body/a"));
    assert!(!location_within("query.qq", "query.q"));
    assert!(!location_within("body", "body/a"));
}

#[test]
fn form_decode_escapes_plus_and_malformed_input() {
    use std::borrow::Cow;
    assert!(matches!(crate::form_decode("plain"), Cow::Borrowed("plain")));
    assert_eq!(crate::form_decode("a%20b+c%2Bd"), "a b c+d");
    assert_eq!(crate::form_decode("100%"), "100%");
    assert_eq!(crate::form_decode("%zz%4"), "%zz%4");
    assert_eq!(crate::form_decode("%ff"), "\u{fffd}");
}

/// Settled strings answer for the very buffer they were found on, by exact span only.
#[test]
fn settled_strings_cover_exact_spans_of_the_same_buffer() {
    let body = br#"{"kind":"gold","note":"gold"}"#.to_vec();
    let text = std::str::from_utf8(&body).unwrap();
    // `kind` (2..6) and `gold` (9..13).
    let s = crate::SettledStrings::new(&body, &[(2, 4), (9, 4)]);
    assert!(s.covers(&body, &text[2..6]));
    assert!(s.covers(&body, &text[9..13]));
    // The same text elsewhere in the body, a part of a span, a span's neighbourhood.
    assert!(!s.covers(&body, &text[22..26]));
    assert!(!s.covers(&body, &text[9..12]));
    assert!(!s.covers(&body, &text[8..13]));
    // Another buffer with the same bytes, and a text outside the body.
    let copy = body.clone();
    assert!(!s.covers(&copy, &std::str::from_utf8(&copy).unwrap()[9..13]));
    assert!(!s.covers(&body, "gold"));
    assert!(!s.covers(&body[..20], &text[9..13]));
    assert!(crate::SettledStrings::default().is_empty() && !s.is_empty());
}
