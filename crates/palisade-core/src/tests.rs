use super::*;

struct Fixed(&'static str, Verdict, bool);

impl Stage for Fixed {
    fn name(&self) -> &'static str {
        self.0
    }
    fn check_head(&self, _req: &RequestView<'_>) -> Verdict {
        if self.2 {
            self.1.clone()
        } else {
            Verdict::Allow
        }
    }
    fn check_body(&self, _req: &RequestView<'_>) -> Verdict {
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
    fn check_response(&self, _req: &RequestView<'_>, resp: &ResponseView<'_>) -> Verdict {
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
