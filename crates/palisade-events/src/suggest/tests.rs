use super::*;
use crate::model::OtherReason;

fn event(id: i64, ip: &str, path: &str, reason: &str, detector: Option<&str>, location: &str) -> Event {
    Event {
        id: Some(id),
        time_ms: 1_000 * id,
        last_ms: 1_000 * id,
        count: 1,
        request_id: format!("r{id}"),
        app: "shop".into(),
        client_ip: ip.into(),
        method: "GET".into(),
        host: "shop.example".into(),
        path: path.into(),
        query: None,
        verdict: Verdict::Monitor,
        stage: reason.split('.').next().unwrap_or_default().into(),
        reason: reason.into(),
        detector: detector.map(String::from),
        category: None,
        confidence: Some(60),
        location: Some(location.into()),
        fragment: None,
        detail: None,
        others: Vec::new(),
        status: 200,
        upstream_status: Some(200),
        latency_us: 10,
        tags: Vec::new(),
        operation: None,
    }
}

#[test]
fn locations_generalise_indexes_and_path_segments_only() {
    assert_eq!(generalise("body/items/3/name"), "body/items/*/name");
    assert_eq!(generalise("body/0"), "body/*");
    assert_eq!(generalise("body/v2/name"), "body/v2/name");
    assert_eq!(generalise("path[2]"), "path[*]");
    assert_eq!(generalise("path"), "path");
    assert_eq!(generalise("query.3"), "query.3", "a query parameter named 3 is a name, not an index");
    assert_eq!(generalise("header.user-agent"), "header.user-agent");
}

#[test]
fn prefixes_stop_before_identifiers() {
    assert_eq!(prefix_of("/search"), "/search");
    assert_eq!(prefix_of("/search?q=ls"), "/search");
    assert_eq!(prefix_of("/users/123/posts"), "/users");
    assert_eq!(prefix_of("/orders/6f1c2d9e-3b1a-4c55-9d2e-0b8f7a6c5d4e/items"), "/orders");
    assert_eq!(prefix_of("/api/v2/products/ab12cd34ef/reviews"), "/api/v2/products");
    assert_eq!(prefix_of("/123"), "/");
    assert_eq!(prefix_of("/"), "/");
    assert_eq!(prefix_of("/blog/how-to-list-files"), "/blog/how-to-list-files", "a slug is not an identifier");
    assert_eq!(prefix_of("/u/bob@example.com/settings"), "/u");
}

#[test]
fn one_exclusion_per_detector_location_and_scope_with_what_it_allows() {
    let mut events = vec![
        event(1, "192.0.2.1", "/search", "detect.cmdi", Some("cmdi"), "query.q"),
        event(2, "192.0.2.2", "/search", "detect.cmdi", Some("cmdi"), "query.q"),
        event(3, "192.0.2.3", "/search", "detect.cmdi", Some("cmdi"), "query.q"),
        event(4, "192.0.2.4", "/cart/items/7", "detect.sqli", Some("sqli"), "body/lines/0/note"),
        event(5, "192.0.2.4", "/cart/items/9", "detect.sqli", Some("sqli"), "body/lines/3/note"),
    ];
    // A request with a second finding: the cmdi exclusion alone does not allow it.
    events[2].others.push(OtherReason { stage: "detect".into(), reason: "detect.xss".into(), location: Some("query.q".into()) });
    // Another stage refused this one too.
    let mut e = event(6, "192.0.2.5", "/search", "detect.cmdi", Some("cmdi"), "query.q");
    e.others.push(OtherReason { stage: "openapi".into(), reason: "openapi.query_unknown".into(), location: Some("query.x".into()) });
    events.push(e);
    // Aggregated rows count their requests; allowed (sampled) events are ignored.
    let mut e = event(7, "192.0.2.6", "/search", "detect.cmdi", Some("cmdi"), "query.q");
    e.count = 5;
    events.push(e);
    let mut e = event(8, "192.0.2.7", "/search", "detect.cmdi", Some("cmdi"), "query.q");
    e.verdict = Verdict::Allow;
    events.push(e);

    let (s, summary) = suggest(&events, 1);
    assert_eq!(summary.events, 8);
    assert_eq!(summary.detection_requests, 11);
    assert_eq!(summary.other_stage_requests, 1);
    let find = |d: &str, l: &str| s.iter().find(|x| x.detector == d && x.location == l).unwrap_or_else(|| panic!("{d} {l}: {s:?}"));
    let cmdi = find("cmdi", "query.q");
    assert_eq!(cmdi.scope, Scope::Prefix("/search".into()));
    assert_eq!((cmdi.findings, cmdi.allows, cmdi.clients), (9, 7, 5));
    assert_eq!(cmdi.examples, ["r1", "r2", "r3"]);
    assert_eq!(cmdi.event_ids, [1, 2, 3, 6, 7]);
    let xss = find("xss", "query.q");
    assert_eq!((xss.findings, xss.allows), (1, 0));
    let sqli = find("sqli", "body/lines/*/note");
    assert_eq!(sqli.scope, Scope::Prefix("/cart/items".into()));
    assert_eq!((sqli.findings, sqli.allows, sqli.clients), (2, 2, 1));
    assert!(sqli.one_client());
    assert_eq!(s[0].detector, "cmdi", "most allowing first");
    // min_requests drops the rare ones.
    let (s, _) = suggest(&events, 2);
    assert!(s.iter().all(|x| x.findings >= 2) && s.len() == 2, "{s:?}");
}

#[test]
fn the_operation_is_the_scope_when_recorded() {
    let mut a = event(1, "192.0.2.1", "/users/1", "detect.sqli", Some("sqli"), "query.filter");
    a.operation = Some("GET /users/{id}".into());
    let mut b = event(2, "192.0.2.2", "/users/2", "detect.sqli", Some("sqli"), "query.filter");
    b.operation = Some("GET /users/{id}".into());
    let (s, _) = suggest(&[a, b], 1);
    assert_eq!(s.len(), 1);
    assert_eq!(s[0].scope, Scope::Operation("GET /users/{id}".into()));
    let yaml = to_yaml(&s, &Summary::default());
    assert!(yaml.contains("      operations:\n        - operation: 'GET /users/{id}'\n          exclusions:\n            - {detector: sqli, location: query.filter}  # allows 2 of 2 request(s), 2 client(s)"), "{yaml}");
}

#[test]
fn the_snippet_is_yaml_with_the_config_shape() {
    let events = vec![
        event(1, "192.0.2.1", "/search", "detect.cmdi", Some("cmdi"), "query.q"),
        event(2, "192.0.2.2", "/cart/items/7", "detect.sqli", Some("sqli"), "body/lines/0/it's"),
        event(3, "192.0.2.3", "/search", "detect.scanner", Some("scanner"), "header.user-agent"),
    ];
    let (s, summary) = suggest(&events, 1);
    let yaml = to_yaml(&s, &summary);
    let doc: serde_json::Value = parse_yaml_subset(&yaml);
    let app = &doc["apps"][0];
    assert_eq!(app["name"], "shop");
    let paths = app["detection"]["paths"].as_array().unwrap();
    assert_eq!(paths.len(), 2, "{yaml}");
    let search = paths.iter().find(|p| p["prefix"] == "/search").unwrap();
    let ex: Vec<(String, String)> = search["exclusions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["detector"].as_str().unwrap().to_string(), e["location"].as_str().unwrap().to_string()))
        .collect();
    assert!(ex.contains(&("cmdi".into(), "query.q".into())) && ex.contains(&("scanner".into(), "header.user-agent".into())), "{ex:?}");
    let cart = paths.iter().find(|p| p["prefix"] == "/cart/items").unwrap();
    assert_eq!(cart["exclusions"][0]["location"], "body/lines/*/it's", "quoted, with the quote doubled: {yaml}");
}

/// Reads the snippet back with the YAML reader the configuration itself is read with.
fn parse_yaml_subset(yaml: &str) -> serde_json::Value {
    use palisade_config::yaml::{Node, Value};
    fn conv(n: &Node) -> serde_json::Value {
        match &n.value {
            Value::Map(m) => serde_json::Value::Object(m.iter().map(|(k, v)| (k.name.clone(), conv(v))).collect()),
            Value::Seq(s) => serde_json::Value::Array(s.iter().map(conv).collect()),
            Value::Str(s) => serde_json::Value::String(s.clone()),
            other => serde_json::Value::String(format!("{other:?}")),
        }
    }
    conv(&palisade_config::yaml::parse(yaml).expect("the snippet is YAML"))
}

#[test]
fn a_report_reads_every_page_of_the_database_and_can_narrow_to_one_event() {
    use crate::sink::Sink;
    use crate::sqlite::{Retention, SqliteSink};
    let dir = std::env::temp_dir().join(format!("palisade-suggest-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("events.db");
    let mut sink = SqliteSink::open(&db, Retention::default()).unwrap();
    // More than one page of events (MAX_LIMIT), two kinds.
    let batch: Vec<Event> = (0..2_500)
        .map(|i| {
            let mut e = event(0, &format!("192.0.2.{}", i % 200), "/search", "detect.cmdi", Some("cmdi"), "query.q");
            e.id = None;
            e.time_ms = 1_000 + i;
            e.last_ms = e.time_ms;
            e.request_id = format!("q{i}");
            if i % 500 == 0 {
                e.path = "/blog/1".into();
                e.reason = "detect.sqli".into();
                e.detector = Some("sqli".into());
                e.location = Some("body/text".into());
            }
            e
        })
        .collect();
    sink.write(&batch).unwrap();
    let reader = Reader::open(&db).unwrap();
    let all = report(&reader, &Filter::default(), 100_000, 1, None).unwrap();
    assert!(!all.truncated);
    assert_eq!(all.summary.events, 2_500);
    assert_eq!(all.suggestions.len(), 2, "{:?}", all.suggestions);
    assert_eq!((all.suggestions[0].detector.as_str(), all.suggestions[0].allows), ("cmdi", 2_495));
    assert_eq!((all.suggestions[1].detector.as_str(), all.suggestions[1].allows), ("sqli", 5));
    assert!(all.yaml.contains("- prefix: /blog"), "{}", all.yaml);
    // Capped: the newest events are read and the report says so.
    let some = report(&reader, &Filter::default(), 1_200, 1, None).unwrap();
    assert!(some.truncated);
    assert_eq!(some.summary.events, 1_200);
    // Narrowed to one event: only the suggestion that covers it.
    let sqli_id = reader.events(&Filter { reason: Some("detect.sqli".into()), limit: Some(1), ..Filter::default() }).unwrap().events[0].id.unwrap();
    let one = report(&reader, &Filter::default(), 100_000, 1, Some(sqli_id)).unwrap();
    assert_eq!(one.suggestions.len(), 1);
    assert_eq!(one.suggestions[0].detector, "sqli");
    drop(reader);
    drop(sink);
    let _ = std::fs::remove_dir_all(&dir);
}
