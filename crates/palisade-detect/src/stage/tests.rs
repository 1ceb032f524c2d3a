use super::*;
use crate::eval::{build, OwnedRequest, Place};
use crate::{Category, Detector, Hit, Input};
use palisade_core::Context;

struct Toy;

impl Detector for Toy {
    fn name(&self) -> &'static str {
        "sqli"
    }
    fn check(&self, input: &Input<'_>, level: Level) -> Option<Hit> {
        let i = input.decoded.find("' or 1=1")?;
        let confidence = if level == Level::Strict { 95 } else { 80 };
        Some(Hit { detector: "sqli", category: Category::Sqli, confidence, fragment: input.decoded[i..].to_string(), why: "tautology" })
    }
}

fn stage(settings: &Settings) -> DetectionStage {
    DetectionStage::with_engine(crate::Engine::with_detectors(vec![Box::new(Toy)], settings.engine_config()).unwrap(), settings)
}

#[test]
fn head_findings_block_with_reason() {
    let s = stage(&Settings::default());
    let req = build(Place::Query, "x' or 1=1 --").unwrap();
    let v = s.check_head(&req.view(), &mut Context::default());
    let Verdict::Block { status: None, reasons } = v else { panic!("{v:?}") };
    assert_eq!(reasons[0].code, "detect.sqli");
    assert_eq!(reasons[0].location.as_deref(), Some("query.q"));
    assert_eq!(reasons[0].detail.as_deref(), Some("sqli confidence 80 (tautology) via raw"));
    // The fragment is for logs and events, apart from the detail that clients see.
    assert_eq!(reasons[0].fragment.as_deref(), Some("' or 1=1 --"));
    assert_eq!(s.name(), "detection");
    assert!(s.wants_body());
}

#[test]
fn body_findings_in_the_body_phase_only() {
    let s = stage(&Settings::default());
    let req = build(Place::Json, "x' or 1=1").unwrap();
    assert!(s.check_head(&req.view(), &mut Context::default()).is_allow());
    assert!(matches!(s.check_body(&req.view(), &mut Context::default()), Verdict::Block { .. }));
}

#[test]
fn modes_and_path_overrides() {
    let mut settings = Settings { mode: Mode::Monitor, ..Settings::default() };
    settings.paths.push(PathOverride { prefix: "/admin".into(), mode: Some(Mode::Block), level: Some(Level::Strict), exclusions: Vec::new() });
    settings.paths.push(PathOverride { prefix: "/admin/open".into(), mode: Some(Mode::Off), level: None, exclusions: Vec::new() });
    let s = stage(&settings);
    let mut req = OwnedRequest::new(http::Method::GET, "/api");
    req.query = Some("q=x%27%20or%201%3D1".into());
    assert!(matches!(s.check_head(&req.view(), &mut Context::default()), Verdict::Monitor { .. }));
    for (path, blocked) in
        [("/admin", true), ("/admin/x", true), ("/x/../admin/y", true), ("/%61dmin/y", true), ("/administrator", false), ("/admin/open/z", false)]
    {
        req.path = path.into();
        // Path policies see the canonical path (the proxy computes it), attacks the raw one.
        let canonical = palisade_core::path::canonicalize(path, &Default::default()).unwrap();
        let view = palisade_core::RequestView { path: &canonical, ..req.view() };
        let v = s.check_head(&view, &mut Context::default());
        match (blocked, &v) {
            (true, Verdict::Block { reasons, .. }) => assert!(reasons[0].detail.as_deref().unwrap().contains("confidence 95"), "{path}: {v:?}"),
            (false, Verdict::Monitor { .. } | Verdict::Allow) => {}
            _ => panic!("{path}: {v:?}"),
        }
    }
    assert_eq!(s.policy("/admin/open"), (Mode::Off, Level::Balanced));
    let off = stage(&Settings { mode: Mode::Off, ..Settings::default() });
    assert!(!off.wants_body());
    assert!(off.check_head(&req.view(), &mut Context::default()).is_allow());
}

#[test]
fn limits_act_per_on_exceed() {
    let mut settings = Settings::default();
    settings.limits.max_values = 2;
    let mut req = OwnedRequest::new(http::Method::GET, "/a");
    req.query = Some("a=1&b=2&c=3".into());
    let v = stage(&settings).check_head(&req.view(), &mut Context::default());
    let Verdict::Block { reasons, .. } = v else { panic!("{v:?}") };
    assert_eq!(reasons[0].code, "detect.limit");
    settings.on_exceed = Mode::Monitor;
    assert!(matches!(stage(&settings).check_head(&req.view(), &mut Context::default()), Verdict::Monitor { .. }));
    settings.on_exceed = Mode::Off;
    assert!(stage(&settings).check_head(&req.view(), &mut Context::default()).is_allow());
}

#[test]
fn exclusions_and_rule_allows_from_the_context_are_honoured() {
    use palisade_core::Exclusion;
    let s = stage(&Settings::default());
    let req = build(Place::Query, "x' or 1=1 --").unwrap();
    let mut cx = Context::default();
    cx.exclusions.push(Exclusion { detector: Some("sqli".into()), location: Some("query.other".into()) });
    assert!(matches!(s.check_head(&req.view(), &mut cx), Verdict::Block { .. }), "an exclusion elsewhere changes nothing");
    cx.exclusions.push(Exclusion { detector: Some("xss".into()), location: Some("query.q".into()) });
    assert!(matches!(s.check_head(&req.view(), &mut cx), Verdict::Block { .. }), "an exclusion of another detector changes nothing");
    cx.exclusions.push(Exclusion { detector: Some("sqli".into()), location: Some("query.q".into()) });
    assert!(s.check_head(&req.view(), &mut cx).is_allow(), "the finding is excepted by detector and field");
    let mut cx = Context::default();
    cx.exclusions.push(Exclusion { detector: None, location: Some("query".into()) });
    assert!(s.check_head(&req.view(), &mut cx).is_allow(), "every detector excepted for the whole query");
    let cx = &mut Context { allowed_by: Some("trusted-scanner".into()), ..Context::default() };
    assert!(s.check_head(&req.view(), cx).is_allow(), "a rule allowed the request");
}

#[test]
fn operation_overrides_win_over_paths_and_bring_their_exclusions() {
    use crate::settings::OperationOverride;
    let mut settings = Settings::default();
    settings.paths.push(PathOverride { prefix: "/api".into(), mode: Some(Mode::Monitor), level: None, exclusions: Vec::new() });
    settings.operations.push(OperationOverride { operation: "search".into(), mode: Some(Mode::Block), level: Some(Level::Strict), exclusions: Vec::new() });
    settings.operations.push(OperationOverride { operation: "GET /api/free".into(), mode: Some(Mode::Off), level: None, exclusions: Vec::new() });
    settings.operations.push(OperationOverride {
        operation: "comment".into(),
        mode: None,
        level: None,
        exclusions: vec![crate::engine::Exclusion { detector: "sqli".into(), location: "query.q".into() }],
    });
    let s = stage(&settings);
    let mut req = OwnedRequest::new(http::Method::GET, "/api/x");
    req.query = Some("q=x%27%20or%201%3D1".into());
    let with_op = |op: Option<&str>| Context { operation: op.map(Into::into), ..Context::default() };
    // No operation: the path override (monitor).
    assert!(matches!(s.check_head(&req.view(), &mut with_op(None)), Verdict::Monitor { .. }));
    // The operation's mode and level win over the path's.
    let v = s.check_head(&req.view(), &mut with_op(Some("search")));
    assert!(matches!(&v, Verdict::Block { reasons, .. } if reasons[0].detail.as_deref().unwrap().contains("confidence 95")), "{v:?}");
    assert!(s.check_head(&req.view(), &mut with_op(Some("GET /api/free"))).is_allow());
    // An operation that is not overridden falls back to the path.
    assert!(matches!(s.check_head(&req.view(), &mut with_op(Some("other"))), Verdict::Monitor { .. }));
    // Operation exclusions: this detector on this field only.
    assert!(s.check_head(&req.view(), &mut with_op(Some("comment"))).is_allow());
    req.query = Some("other=x%27%20or%201%3D1".into());
    assert!(matches!(s.check_head(&req.view(), &mut with_op(Some("comment"))), Verdict::Monitor { .. }));
    let p = s.policy_for("/api/x", Some("search"));
    assert_eq!((p.mode, p.level), (Mode::Block, Level::Strict));
    // Path exclusions.
    let mut settings = Settings::default();
    settings.paths.push(PathOverride {
        prefix: "/cms".into(),
        mode: None,
        level: None,
        exclusions: vec![crate::engine::Exclusion { detector: "*".into(), location: "query.q".into() }],
    });
    let s = stage(&settings);
    req.query = Some("q=x%27%20or%201%3D1".into());
    req.path = "/cms/page".into();
    assert!(s.check_head(&req.view(), &mut Context::default()).is_allow());
    req.path = "/blog".into();
    assert!(matches!(s.check_head(&req.view(), &mut Context::default()), Verdict::Block { .. }));
    // An app that is off with an operation turned on still wants bodies.
    let off = stage(&Settings {
        mode: Mode::Off,
        operations: vec![OperationOverride { operation: "x".into(), mode: Some(Mode::Block), level: None, exclusions: Vec::new() }],
        ..Settings::default()
    });
    assert!(off.wants_body());
}

/// A request without a body gets `Allow` from `check_body` without the body phase: the same
/// verdict as the phase run in full (the oracle), in every mode, level and limit policy, on
/// heads with and without findings.
#[test]
fn empty_body_skips_the_phase_with_the_same_verdict() {
    for mode in [Mode::Block, Mode::Monitor, Mode::Off] {
        for on_exceed in [Mode::Block, Mode::Monitor, Mode::Off] {
            for level in [Level::Balanced, Level::Strict] {
                for max_values in [0, 1, 10_000] {
                    let settings =
                        Settings { mode, level, on_exceed, limits: crate::extract::Limits { max_values, ..Default::default() }, ..Settings::default() };
                    for s in [stage(&settings), DetectionStage::new(&settings).unwrap()] {
                        for place in Place::ALL {
                            let mut req = build(place, "x' or 1=1 --").unwrap();
                            req.body.clear();
                            let fast = s.check_body(&req.view(), &mut Context::default());
                            let full = s.judge(&req.view(), Phase::Body, &Context::default());
                            assert_eq!(fast, full, "{mode:?} {on_exceed:?} {level:?} {max_values} {place:?}");
                        }
                    }
                }
            }
        }
    }
}

/// A GraphQL request taken apart by the GraphQL stage: detection judges the values it was
/// given (argument literals, variables) in place of the body, located where they are.
#[test]
fn protocol_values_replace_the_body_and_the_named_query_parameters() {
    let s = stage(&Settings::default());
    let mut req = OwnedRequest::new(http::Method::POST, "/graphql");
    req.headers.insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
    // The query text holds the payload in a comment only: as prose the body is an attack.
    req.body = br#"{"query": "{ user(name: \"ann\") { id } } # x' or 1=1"}"#.to_vec();
    assert!(matches!(s.check_body(&req.view(), &mut Context::default()), Verdict::Block { .. }));
    let values = |v: &str| palisade_core::ProtocolValues {
        replaces_body: true,
        replaces_query: Vec::new(),
        values: vec![palisade_core::ProtocolValue { location: "graphql.query.user.name".into(), value: v.into(), key: false }],
    };
    let mut cx = Context { protocol_values: Some(std::sync::Arc::new(values("ann"))), ..Context::default() };
    assert!(s.check_body(&req.view(), &mut cx).is_allow());
    let mut cx = Context { protocol_values: Some(std::sync::Arc::new(values("x' or 1=1"))), ..Context::default() };
    let Verdict::Block { reasons, .. } = s.check_body(&req.view(), &mut cx) else { panic!() };
    assert_eq!(reasons[0].location.as_deref(), Some("graphql.query.user.name"));
    // GET: the named parameters are replaced, the others still inspected.
    let mut get = OwnedRequest::new(http::Method::GET, "/graphql");
    get.query = Some("query=%7B%20a%20%7D%20%23%20x%27%20or%201%3D1&q=fine".into());
    let head = palisade_core::ProtocolValues { replaces_body: false, replaces_query: vec!["query".into()], values: Vec::new() };
    let mut cx = Context { protocol_values: Some(std::sync::Arc::new(head.clone())), ..Context::default() };
    assert!(s.check_head(&get.view(), &mut cx).is_allow());
    get.query = Some("query=%7Ba%7D&q=x%27%20or%201%3D1".into());
    let mut cx = Context { protocol_values: Some(std::sync::Arc::new(head)), ..Context::default() };
    let Verdict::Block { reasons, .. } = s.check_head(&get.view(), &mut cx) else { panic!() };
    assert_eq!(reasons[0].location.as_deref(), Some("query.q"));
}
