use super::*;
use crate::settings::Settings;

fn stage(yaml: &str) -> DetectionStage {
    let node = palisade_config::yaml::parse(yaml).unwrap();
    let mut cx = palisade_config::decode::Ctx::new("test");
    let s = Settings::decode(&mut cx, &node, "detection").unwrap();
    assert!(cx.errors.is_empty(), "{:?}", cx.errors);
    DetectionStage::new(&s).unwrap()
}

fn line(label: &str, class: &str, location: &str, raw: &str) -> String {
    let mut s = format!("{{\"label\":\"{label}\",\"class\":\"{class}\",\"location\":\"{location}\",\"request\":");
    write_json_str(&mut s, raw);
    s.push('}');
    s
}

const BENIGN_SEARCH: &str = "GET /search?q=weather+tomorrow HTTP/1.1\r\nHost: a.example\r\nUser-Agent: Mozilla/5.0\r\n\r\n";
const SQLI_QUERY: &str = "GET /items?id=1%27%20UNION%20SELECT%20password%20FROM%20users-- HTTP/1.1\r\nHost: a.example\r\n\r\n";
const XSS_JSON: &str =
    "POST /comments HTTP/1.1\r\nHost: a.example\r\nContent-Type: application/json\r\n\r\n{\"body\":\"<script>alert(document.cookie)</script>\"}";
const PLAIN_ATTACK_NOT_CAUGHT: &str = "GET /items?sort=name HTTP/1.1\r\nHost: a.example\r\n\r\n";

#[test]
fn counts_per_label_class_location_and_detector() {
    let text = [
        line("benign", "search", "query", BENIGN_SEARCH),
        line("attack", "sqli", "query", SQLI_QUERY),
        line("attack", "xss", "json", XSS_JSON),
        line("attack", "made-up", "query", PLAIN_ATTACK_NOT_CAUGHT),
        String::new(),
    ]
    .join("\n");
    assert!(is_request_corpus(&text));
    let reqs = parse_request_corpus(&text).unwrap();
    assert_eq!(reqs.len(), 4);
    let ev = evaluate_requests(&stage("mode: block"), reqs);
    assert_eq!(ev.overall(Label::Attack), Count { total: 3, flagged: 2 });
    assert_eq!(ev.overall(Label::Benign), Count { total: 1, flagged: 0 });
    assert_eq!(ev.by_class(Label::Attack)["sqli"], Count { total: 1, flagged: 1 });
    assert_eq!(ev.by_location(Label::Attack)["query"], Count { total: 2, flagged: 1 });
    assert_eq!(ev.by_location(Label::Attack)["json"], Count { total: 1, flagged: 1 });
    let det = ev.by_detector(Label::Attack);
    assert_eq!(det["sqli"].flagged, 1, "{det:?}");
    assert_eq!(det["xss"].flagged, 1, "{det:?}");
    // The XSS finding is in the JSON body.
    let o = &ev.outcomes[2];
    assert_eq!(place_of(&o.findings[0].location, &ev.requests[2].request), "json");
    let missed: Vec<_> = ev.missed().map(|(r, _)| r.class.as_str()).collect();
    assert_eq!(missed, ["made-up"]);
    let report = ev.report();
    assert!(report.contains("attacks detected: 2/3"), "{report}");
    assert!(report.contains("GET /items?sort=name"), "{report}");
    let json = ev.to_json();
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["attack"]["overall"]["flagged"], 2);
    assert_eq!(v["missed"][0]["class"], "made-up");
}

#[test]
fn false_positives_are_listed_and_exclusions_apply() {
    // A benign-labelled request that holds an attack: a false positive with its finding.
    let text = line("benign", "code-editor", "json", XSS_JSON);
    let ev = evaluate_requests(&stage("mode: block"), parse_request_corpus(&text).unwrap());
    assert_eq!(ev.overall(Label::Benign).flagged, 1);
    let (_, o) = ev.false_positives().next().unwrap();
    assert_eq!(o.findings[0].detector, "xss");
    assert_eq!(o.findings[0].location, "body/body");
    assert!(ev.report().contains("xss confidence"));
    assert_eq!(ev.false_positives_by_place()["json"].flagged, 1);
    // The app's path exclusion for that field: no longer flagged, as in the proxy.
    let ev = evaluate_requests(
        &stage("mode: block\npaths:\n  - prefix: /comments\n    exclusions: [{detector: xss, location: body/body}]"),
        parse_request_corpus(&text).unwrap(),
    );
    assert_eq!(ev.overall(Label::Benign).flagged, 0);
    // Monitor mode still flags (the event is recorded), `off` does not.
    let ev = evaluate_requests(&stage("mode: monitor"), parse_request_corpus(&text).unwrap());
    assert_eq!(ev.overall(Label::Benign).flagged, 1);
    let ev = evaluate_requests(&stage("mode: off"), parse_request_corpus(&text).unwrap());
    assert_eq!(ev.overall(Label::Benign).flagged, 0);
}

#[test]
fn ambiguous_requests_are_counted_apart() {
    // A search that is a working payload whatever the intent: flagged, yet neither a false
    // positive nor an attack.
    const PAYLOAD_SEARCH: &str = "GET /search?q=what+does+%27+or+1%3D1+--+do HTTP/1.1\r\nHost: a.example\r\n\r\n";
    let text = [line("benign", "search", "query", BENIGN_SEARCH), line("ambiguous", "search", "query", PAYLOAD_SEARCH)].join("\n");
    let ev = evaluate_requests(&stage("mode: block"), parse_request_corpus(&text).unwrap());
    assert_eq!(ev.overall(Label::Ambiguous), Count { total: 1, flagged: 1 });
    assert_eq!(ev.overall(Label::Benign), Count { total: 1, flagged: 0 });
    assert_eq!(ev.overall(Label::Attack).total, 0);
    assert_eq!(ev.false_positives().count(), 0);
    let report = ev.report();
    assert!(report.contains("ambiguous (working payloads sent with no ill intent; not counted above): 1/1 flagged"), "{report}");
    let v: serde_json::Value = serde_json::from_str(&ev.to_json()).unwrap();
    assert_eq!(v["ambiguous"]["overall"]["flagged"], 1);
    assert_eq!(v["benign"]["overall"]["flagged"], 0);
}

#[test]
fn binary_requests_and_bad_lines() {
    let mut raw = b"POST /up HTTP/1.1\r\nContent-Type: application/octet-stream\r\n\r\n".to_vec();
    raw.extend_from_slice(&[0xff, 0xfe, 0x00, 0x27, 0x3c]);
    let b64 = "UE9TVCAvdXAgSFRUUC8xLjENCkNvbnRlbnQtVHlwZTogYXBwbGljYXRpb24vb2N0ZXQtc3RyZWFtDQoNCv/+ACc8";
    assert_eq!(palisade_core::base64::decode(b64.as_bytes()).unwrap(), raw);
    let text = format!("{{\"label\":\"benign\",\"class\":\"binary\",\"request_base64\":\"{b64}\"}}");
    let reqs = parse_request_corpus(&text).unwrap();
    assert_eq!(reqs[0].request.body, [0xff, 0xfe, 0x00, 0x27, 0x3c]);
    assert_eq!(reqs[0].id, "line 1");
    for (bad, why) in [
        ("{\"label\":\"x\",\"request\":\"GET / HTTP/1.1\\n\\n\"}", "label"),
        ("{\"label\":\"benign\"}", "no string"),
        ("{\"label\":\"benign\",\"request_base64\":\"@@\"}", "not base64"),
        ("{\"label\":\"benign\",\"request\":\"GET nopath HTTP/1.1\\n\\n\"}", "must start with"),
        ("not json", "invalid"),
    ] {
        let e = parse_request_corpus(&format!("\n{bad}")).unwrap_err();
        assert!(e.to_string().contains(why), "{bad}: {e}");
        assert_eq!(e.at, "line 2");
    }
    assert!(!is_request_corpus("{\"label\":\"attack\",\"value\":\"x\"}"));
}

fn gzip(data: &[u8]) -> Vec<u8> {
    use std::io::Write as _;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn encoded_request(coding: &str, body: &[u8]) -> LabelledRequest {
    let mut raw = format!("POST /v1/logs HTTP/1.1\r\nContent-Type: application/json\r\nContent-Encoding: {coding}\r\nContent-Length: {}\r\n\r\n", body.len())
        .into_bytes();
    raw.extend_from_slice(body);
    LabelledRequest::from_raw("r", Label::Attack, "x", "json", &raw).unwrap()
}

#[test]
fn compressed_bodies_are_judged_decoded_or_skipped_with_the_reason() {
    let attack = br#"{"events":[{"msg":"1' UNION SELECT password FROM users--"}]}"#;
    let benign = br#"{"events":[{"msg":"saved","level":"info"}]}"#;
    let st = stage("mode: block");
    // gzip is decoded: the attack inside is found at its JSON location, the benign document
    // is clean (its compressed bytes are not read as text).
    let ev = evaluate_requests(&st, vec![encoded_request("gzip", &gzip(attack)), encoded_request("gzip", &gzip(benign))]);
    assert!(ev.outcomes[0].flagged);
    assert_eq!(ev.outcomes[0].findings[0].location, "body/events/0/msg");
    assert!(!ev.outcomes[1].flagged, "{:?}", ev.outcomes[1].findings);
    // A coding not decoded here: binary bytes are skipped with the reason recorded; text is
    // inspected as it is.
    let brotli_like: Vec<u8> = (0..=255u8).rev().collect();
    let ev = evaluate_requests(&st, vec![encoded_request("br", &brotli_like), encoded_request("br", attack)]);
    assert!(!ev.outcomes[0].flagged);
    assert_eq!(ev.outcomes[0].skipped, Some(crate::extract::Skipped::Encoding));
    assert!(ev.report().contains("bodies not inspected"));
    assert!(ev.outcomes[1].flagged);
}
