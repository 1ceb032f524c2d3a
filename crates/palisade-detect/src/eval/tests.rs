use super::*;

#[test]
fn parses_corpus_lines() {
    let text = "{\"label\": \"attack\", \"category\": \"sqli\", \"source\": \"x\", \"value\": \"1' or '1'='1\"}\n\n\
                {\"label\": \"benign\", \"category\": \"benign\", \"source\": \"y\", \"value\": \"caf\\u00e9\"}\n";
    let s = parse_corpus(text).unwrap();
    assert_eq!(s.len(), 2);
    assert_eq!((s[0].label, s[0].category.as_str(), s[0].value.as_str()), (Label::Attack, "sqli", "1' or '1'='1"));
    assert_eq!((s[1].label, s[1].value.as_str()), (Label::Benign, "café"));
    assert!(parse_corpus("{\"label\": \"x\", \"value\": \"v\"}").unwrap_err().starts_with("line 1"));
    assert!(parse_corpus("{\"label\": \"attack\"}").is_err());
}

#[test]
fn builds_each_place_so_that_extraction_gives_the_value_back() {
    let engine = crate::Engine::with_detectors(Vec::new(), crate::EngineConfig::default()).unwrap();
    let value = "a'b \"c\"; d=1&e+f%20<g>\\h é";
    for place in Place::ALL {
        let req = build(place, value).unwrap();
        let mut got = Vec::new();
        let mut sc = crate::extract::Scratch::default();
        let mut f = |fl: &crate::extract::Field<'_>| {
            if matches!(fl.kind, crate::FieldKind::QueryValue | crate::FieldKind::FormValue | crate::FieldKind::JsonValue | crate::FieldKind::Header)
                || (fl.kind == crate::FieldKind::Cookie && fl.value != "session")
            {
                got.push(fl.value.to_string());
            }
            std::ops::ControlFlow::Continue(false)
        };
        let ex = crate::extract::Extractor::default();
        let _ = ex.head(&req.view(), &mut sc, &mut f);
        let _ = ex.body(&req.view(), &mut sc, &mut f);
        assert_eq!(got, vec![value.to_string()], "{place:?}");
    }
    assert!(build(Place::Header, "a\r\nb").is_none());
    let ev = evaluate(&engine, &parse_corpus("{\"label\": \"benign\", \"category\": \"benign\", \"value\": \"x\"}").unwrap(), &Place::ALL);
    assert_eq!(ev.total(Label::Benign, "benign").total, 5);
    assert!(ev.table().contains("benign"));
}

#[test]
fn places_parse_and_the_report_has_real_rates() {
    assert_eq!(Place::parse_list("query, json,query").unwrap(), vec![Place::Query, Place::Json]);
    assert!(Place::parse_list("query,body").unwrap_err().contains("`body`"));
    assert!(Place::parse_list("").is_err());
    let engine = crate::Engine::new(crate::EngineConfig::default()).unwrap();
    let corpus = "{\"label\": \"attack\", \"category\": \"sqli\", \"value\": \"1' UNION SELECT password FROM users--\"}\n\
                  {\"label\": \"attack\", \"category\": \"sqli\", \"value\": \"plain words\"}\n\
                  {\"label\": \"benign\", \"category\": \"benign\", \"value\": \"hello world\"}\n";
    let ev = evaluate(&engine, &parse_corpus(corpus).unwrap(), &[Place::Query, Place::Json]);
    let r = ev.report();
    let row = |name: &str| r.lines().find(|l| l.starts_with(name)).map(|l| l.split_whitespace().skip(1).take(2).collect::<Vec<_>>());
    assert_eq!(row("query "), Some(vec!["50.00%", "0.00%"]), "{r}");
    assert_eq!(row("all "), Some(vec!["50.00%", "0.00%"]), "{r}");
    assert!(r.contains("4 attack and 2 benign placements"), "{r}");
}

#[test]
fn explain_lists_layers_findings_and_signals() {
    let engine = crate::Engine::new(crate::EngineConfig::default()).unwrap();
    let e = explain(&engine, "%3Cscript%3Ealert(1)%3C%2Fscript%3E", Place::Query, crate::Level::Balanced).unwrap();
    assert_eq!(e.layers.len(), 2, "{e}");
    assert!(e.findings.iter().any(|f| f.detector == "xss" && f.location == "query.v"), "{e}");
    let text = e.to_string();
    assert!(text.contains("url") && text.contains("<script>alert(1)</script>") && text.contains("xss category=xss"), "{text}");
    let quiet = explain(&engine, "just a note", Place::Json, crate::Level::Balanced).unwrap();
    assert!(quiet.findings.is_empty() && quiet.to_string().contains("in json: none"), "{quiet}");
    assert!(explain(&engine, "a\r\nb", Place::Header, crate::Level::Balanced).is_none());
}
