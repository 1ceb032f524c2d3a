//! The judge's budget of findings: `max_violations` bounds what blocks and what is only
//! monitored apart, so monitored findings never hide a violation that blocks.

use std::path::Path;

use palisade_core::{Mode, Verdict};

use super::*;
use crate::{compile, load_str, FsFetch, Limits};

const SPEC: &str = r#"
openapi: 3.0.3
info: {title: budget, version: "1"}
paths:
  /items:
    post:
      parameters:
        - {name: dry, in: query, schema: {type: boolean}}
      requestBody:
        content:
          application/json:
            schema:
              type: object
              properties:
                meta: {type: object, properties: {a: {type: string}}}
                n: {type: integer}
      responses: {'200': {description: ok}}
"#;

fn judge(settings: &str) -> Judge {
    let set = load_str("budget.yaml", SPEC, &FsFetch, &Limits::default()).unwrap();
    let node = palisade_config::yaml::parse(&format!("spec: budget.yaml\n{settings}")).unwrap();
    let mut cx = palisade_config::decode::Ctx::new("test.yaml");
    let settings = Settings::decode(&mut cx, &node, "openapi", Path::new("/")).unwrap();
    assert!(cx.errors.is_empty(), "{:?}", cx.errors);
    let api = compile(&set, &settings.compile_options()).unwrap();
    Judge::new(api, settings).unwrap()
}

fn findings(judge: &Judge, head: &str, body: &str) -> Vec<Finding> {
    let raw = format!("{head}\nContent-Type: application/json\n\n{body}");
    let req = palisade_core::rawhttp::parse_request(raw.as_bytes()).unwrap();
    let mut out = Vec::new();
    judge.check_request(&req.view(), Phase::Whole, &mut out);
    out
}

fn unknown_members(n: usize) -> String {
    (0..n).map(|i| format!(r#""u{i}":{i}"#)).collect::<Vec<_>>().join(",")
}

fn blocks(f: &[Finding]) -> Vec<&str> {
    f.iter().filter(|f| f.severity == Severity::Block).map(|f| f.location.as_str()).collect()
}

#[test]
fn monitored_shadow_fields_do_not_hide_a_violation() {
    for fused in [true, false] {
        let mut j = judge("max_violations: 2\nunknown_fields: monitor\n");
        j.set_fused(fused);
        // Ten shadow fields in `meta`, evaluated before the invalid `n`.
        let body = format!(r#"{{"meta":{{{}}},"n":"ten"}}"#, unknown_members(10));
        let f = findings(&j, "POST /items HTTP/1.1", &body);
        assert_eq!(blocks(&f), ["body/n"], "fused {fused}: {f:?}");
        let monitored = f.iter().filter(|f| f.severity == Severity::Monitor).count();
        assert_eq!(monitored, 2, "monitored findings are capped at max_violations on their own");
        match j.verdict(&f) {
            Verdict::Block { reasons, .. } => {
                assert_eq!(reasons.len(), 2, "the verdict lists max_violations reasons");
                assert_eq!(reasons[0].code, code::BODY_INVALID, "the blocking reason first");
            }
            v => panic!("fused {fused}: expected a block, got {v:?}"),
        }
        // Shadow fields only: monitored, never blocked.
        let f = findings(&j, "POST /items HTTP/1.1", &format!(r#"{{"meta":{{{}}},"n":1}}"#, unknown_members(10)));
        assert!(matches!(j.verdict(&f), Verdict::Monitor { .. }), "{f:?}");
    }
}

#[test]
fn monitored_unknown_query_parameters_do_not_skip_the_body() {
    let j = judge("max_violations: 1\nunknown_query: monitor\n");
    let query: Vec<String> = (0..5).map(|i| format!("q{i}=1")).collect();
    let head = format!("POST /items?{} HTTP/1.1", query.join("&"));
    let f = findings(&j, &head, r#"{"n":"ten"}"#);
    assert_eq!(blocks(&f), ["body/n"], "{f:?}");
    assert!(matches!(j.verdict(&f), Verdict::Block { .. }));
    // A declared parameter after undeclared ones is validated too.
    let f = findings(&j, &format!("POST /items?{}&dry=maybe HTTP/1.1", query.join("&")), r#"{"n":1}"#);
    assert_eq!(blocks(&f), ["query.dry"], "{f:?}");
}

#[test]
fn blocking_findings_are_still_capped() {
    let j = judge("max_violations: 2\nunknown_fields: block\n");
    let body = format!(r#"{{"meta":{{{}}},"n":"ten"}}"#, unknown_members(10));
    let f = findings(&j, "POST /items HTTP/1.1", &body);
    assert_eq!(f.len(), 2, "{f:?}");
    assert!(f.iter().all(|f| f.severity == Severity::Block));
}

#[test]
fn monitor_mode_reports_up_to_the_cap() {
    let j = judge("request: monitor\nmax_violations: 3\n");
    let body = format!(r#"{{"meta":{{{}}},"n":"ten"}}"#, unknown_members(10));
    let f = findings(&j, "POST /items?dry=maybe HTTP/1.1", &body);
    assert!(f.len() <= 3 && !f.is_empty(), "{f:?}");
    assert!(f.iter().all(|f| f.severity == Severity::Monitor));
    assert_eq!(severity(Action::Block, Mode::Monitor), Some(Severity::Monitor));
}
