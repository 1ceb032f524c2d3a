use palisade_core::{Context, Exclusion, Stage, Verdict};

use crate::testutil::{rules, Req};
use crate::RulesStage;

fn stage(yaml: &str) -> RulesStage {
    RulesStage::new(rules(yaml))
}

#[test]
fn block_with_reason_code_and_status() {
    let s = stage("- id: wp-config\n  name: WordPress config probe\n  when: {field: query, contains: wp-config.php}\n  then: block\n- {id: teapot, when: {field: path, equals: /tea}, then: {action: block, status: 418}}\n");
    let mut cx = Context::default();
    let v = s.check_head(&Req::new("GET", "/x?f=wp%2Dconfig.php").view(), &mut cx);
    let Verdict::Block { status: None, reasons } = v else { panic!("{v:?}") };
    assert_eq!(reasons[0].code, "rule.wp-config");
    assert_eq!(reasons[0].detail.as_deref(), Some("WordPress config probe"));
    let v = s.check_head(&Req::new("GET", "/tea").view(), &mut Context::default());
    assert!(matches!(v, Verdict::Block { status: Some(418), .. }), "{v:?}");
    assert!(s.check_head(&Req::new("GET", "/x?f=readme").view(), &mut Context::default()).is_allow());
    assert_eq!(s.name(), "rules");
    assert!(!s.wants_body());
}

#[test]
fn rules_act_in_order_and_block_or_allow_ends_evaluation() {
    let s = stage(
        "- {id: t1, when: {field: path, prefix: /}, then: {tag: seen}}\n- {id: m, when: {field: path, prefix: /api}, then: monitor}\n- {id: ok, when: {field: header.x-trusted, equals: yes}, then: allow}\n- {id: no, when: {field: path, prefix: /api/admin}, then: block}\n- {id: t2, when: {field: path, prefix: /}, then: {tag: late}}\n",
    );
    let mut cx = Context::default();
    let v = s.check_head(&Req::new("GET", "/api/admin").view(), &mut cx);
    assert!(matches!(&v, Verdict::Block { reasons, .. } if reasons[0].code == "rule.no"), "{v:?}");
    assert_eq!(cx.tags, ["seen"]);

    let mut cx = Context::default();
    let v = s.check_head(&Req::new("GET", "/api/admin").header("X-Trusted", "yes").view(), &mut cx);
    // The monitor rule before the allow is still reported; nothing after the allow runs.
    assert!(matches!(&v, Verdict::Monitor { reasons } if reasons.len() == 1 && reasons[0].code == "rule.m"), "{v:?}");
    assert_eq!(cx.allowed_by.as_deref(), Some("ok"));
    assert_eq!(cx.tags, ["seen"]);

    let mut cx = Context::default();
    assert!(s.check_head(&Req::new("GET", "/home").view(), &mut cx).is_allow());
    assert_eq!(cx.tags, ["seen", "late"]);
}

#[test]
fn skip_adds_exclusions_for_detection() {
    let s = stage(
        "- {id: cms, when: {field: path, prefix: /cms/}, then: {skip: {detectors: [xss, sqli], fields: [body/html, query.q]}}}\n- {id: all, when: {field: path, prefix: /import}, then: {skip: '*'}}\n",
    );
    let mut cx = Context::default();
    assert!(s.check_head(&Req::new("POST", "/cms/page").view(), &mut cx).is_allow());
    assert_eq!(cx.exclusions.len(), 4);
    assert!(cx.is_excluded("xss", "body/html"));
    assert!(cx.is_excluded("xss", "body/html/0"));
    assert!(cx.is_excluded("sqli", "query.q"));
    assert!(!cx.is_excluded("xss", "body/title"));
    assert!(!cx.is_excluded("cmdi", "body/html"));
    let mut cx = Context::default();
    s.check_head(&Req::new("POST", "/import").view(), &mut cx);
    assert_eq!(cx.exclusions, [Exclusion { detector: None, location: None }]);
    assert!(cx.is_excluded("anything", "anywhere"));
}

#[test]
fn body_rules_decide_in_the_body_phase() {
    let s = stage(
        "- {id: role, when: {field: 'body:/user/role', equals: admin}, then: block}\n- {id: head, when: {field: path, prefix: /signup}, then: {tag: signup}}\n",
    );
    assert!(s.wants_body());
    let req = Req::new("POST", "/signup").body(r#"{"user":{"role":"admin"}}"#);
    let mut cx = Context::default();
    assert!(s.check_head(&req.view(), &mut cx).is_allow());
    assert_eq!(cx.tags, ["signup"]);
    let v = s.check_body(&req.view(), &mut cx);
    assert!(matches!(&v, Verdict::Block { reasons, .. } if reasons[0].code == "rule.role"), "{v:?}");
    // Once allowed (by an earlier stage's rule or a head rule), body rules do not run.
    let mut cx = Context { allowed_by: Some("x".into()), ..Context::default() };
    assert!(s.check_body(&req.view(), &mut cx).is_allow());
}
