use super::*;
use crate::eval::OwnedRequest;

type Got = Vec<(String, FieldKind, String)>;

fn collect(e: &Extractor, req: &OwnedRequest, body: bool) -> (Got, Result<(), Stop>) {
    let mut out = Vec::new();
    let mut sc = Scratch::default();
    let mut f = |fl: &Field<'_>| {
        out.push((fl.location.to_string(), fl.kind, fl.value.to_string()));
        std::ops::ControlFlow::Continue(false)
    };
    let (_, r) = if body { e.body(&req.view(), &mut sc, &mut f) } else { e.head(&req.view(), &mut sc, &mut f) };
    (out, r)
}

fn s(l: &str, k: FieldKind, v: &str) -> (String, FieldKind, String) {
    (l.to_string(), k, v.to_string())
}

#[test]
fn head_values() {
    let e = Extractor::new(&["X-Api-Version".to_string()], Limits::default()).unwrap();
    let mut r = OwnedRequest::new(http::Method::GET, "/files/a%20b/..%2fetc");
    r.query = Some("id=1%27+or+1&na%6De=x&flag&&e=".into());
    r.headers.insert("user-agent", "Mozilla/5.0".parse().unwrap());
    r.headers.insert("x-api-version", "${jndi:x}".parse().unwrap());
    r.headers.insert("accept", "text/html".parse().unwrap());
    r.headers.insert("cookie", "session=abc%3Cd; theme=\"dark\"; bare".parse().unwrap());
    let (v, res) = collect(&e, &r, false);
    assert_eq!(res, Ok(()));
    use FieldKind::*;
    assert_eq!(
        v,
        vec![
            s("path[0]", PathSegment, "files"),
            s("path[1]", PathSegment, "a b"),
            s("path[2]", PathSegment, "../etc"),
            s("path", PathSegment, "/files/a b/../etc"),
            s("query.id", QueryName, "id"),
            s("query.id", QueryValue, "1' or 1"),
            s("query.name", QueryName, "name"),
            s("query.name", QueryValue, "x"),
            s("query.flag", QueryName, "flag"),
            s("query.e", QueryName, "e"),
            s("header.User-Agent", Header, "Mozilla/5.0"),
            s("header.X-Api-Version", Header, "${jndi:x}"),
            s("cookie.session", Cookie, "session"),
            s("cookie.session", Cookie, "abc<d"),
            s("cookie.theme", Cookie, "theme"),
            s("cookie.theme", Cookie, "dark"),
            s("cookie.", Cookie, "bare"),
        ]
    );
    // The whole path when it climbs.
    let r = OwnedRequest::new(http::Method::GET, "/a/../../etc/passwd");
    let (v, _) = collect(&e, &r, false);
    assert_eq!(v.last().unwrap(), &s("path", PathSegment, "/a/../../etc/passwd"));
}

fn with_body(ct: &str, body: &str) -> OwnedRequest {
    let mut r = OwnedRequest::new(http::Method::POST, "/");
    r.headers.insert("content-type", ct.parse().unwrap());
    r.body = body.as_bytes().to_vec();
    r
}

#[test]
fn json_keys_and_strings_at_any_depth_numbers_skipped() {
    let e = Extractor::default();
    let r = with_body("application/json", r#"{"users":[{"name":"a\u0027b","age":42,"ok":true},{"a/b":[["x"]]}],"n":null}"#);
    let (v, _) = collect(&e, &r, true);
    use FieldKind::*;
    assert_eq!(
        v,
        vec![
            s("body/users", JsonKey, "users"),
            s("body/users/0/name", JsonKey, "name"),
            s("body/users/0/name", JsonValue, "a'b"),
            s("body/users/0/age", JsonKey, "age"),
            s("body/users/0/ok", JsonKey, "ok"),
            s("body/users/1/a~1b", JsonKey, "a/b"),
            s("body/users/1/a~1b/0/0", JsonValue, "x"),
            s("body/n", JsonKey, "n"),
        ]
    );
    // Not JSON: raw text.
    let (v, _) = collect(&e, &with_body("application/json", "{'a': 1"), true);
    assert_eq!(v, vec![s("body", Body, "{'a': 1")]);
    // A scalar root.
    let (v, _) = collect(&e, &with_body("application/json", "\"<x>\""), true);
    assert_eq!(v, vec![s("body", JsonValue, "<x>")]);
}

#[test]
fn form_multipart_xml_text() {
    use FieldKind::*;
    let e = Extractor::default();
    let (v, _) = collect(&e, &with_body("application/x-www-form-urlencoded", "comment=it%27s+fine&x="), true);
    assert_eq!(v, vec![s("body/comment", FormName, "comment"), s("body/comment", FormValue, "it's fine"), s("body/x", FormName, "x")]);
    let mp = "--XX\r\nContent-Disposition: form-data; name=\"title\"\r\n\r\nhello\r\n--XX\r\nContent-Disposition: form-data; name=\"f\"; filename=\"../a.php\"\r\nContent-Type: image/png\r\n\r\n\x01\x02\r\n--XX--\r\n";
    let (v, _) = collect(&e, &with_body("multipart/form-data; boundary=XX", mp), true);
    assert_eq!(
        v,
        vec![
            s("body/title", FormName, "title"),
            s("body/title", MultipartValue, "hello"),
            s("body/f", FormName, "f"),
            s("body/f", MultipartFilename, "../a.php")
        ]
    );
    let xml = "<?xml version=\"1.0\"?><doc id=\"7\"><item a='x'>one &lt;b&gt;</item><![CDATA[two]]><e/></doc>";
    let (v, _) = collect(&e, &with_body("application/xml", xml), true);
    assert_eq!(
        v,
        vec![
            s("body", XmlDocument, xml),
            s("body/doc/@id", XmlAttribute, "7"),
            s("body/doc/item/@a", XmlAttribute, "x"),
            s("body/doc/item", XmlText, "one &lt;b&gt;"),
            s("body/doc", XmlText, "two"),
        ]
    );
    let (v, _) = collect(&e, &with_body("text/plain", "just text"), true);
    assert_eq!(v, vec![s("body", Body, "just text")]);
    let (v, _) = collect(&e, &OwnedRequest::new(http::Method::POST, "/"), true);
    assert!(v.is_empty());
}

#[test]
fn limits_stop_and_report() {
    let e = Extractor::new(&[], Limits { max_values: 100, max_bytes: 10, max_depth: 8 }).unwrap();
    let mut r = OwnedRequest::new(http::Method::GET, "/");
    r.query = Some("a=0123456789".into());
    let (v, res) = collect(&e, &r, false);
    assert_eq!(res, Err(Stop::Exceeded(Exceeded::Bytes { limit: 10 })));
    assert_eq!(v.len(), 1);
    let e = Extractor::new(&[], Limits { max_values: 100, max_bytes: 1000, max_depth: 2 }).unwrap();
    // Too deep for the JSON parser: inspected as raw text instead.
    let (v, _) = collect(&e, &with_body("application/json", "[[[\"x\"]]]"), true);
    assert_eq!(v, vec![s("body", FieldKind::Body, "[[[\"x\"]]]")]);
}

#[test]
fn json_streaming_paths_empty_containers_escapes() {
    use FieldKind::*;
    let e = Extractor::default();
    let body = r#" { "a" : [ ] , "b":{}, "c":[[],["x", {"k\u002fy":"v\"w"}]], "d":[1,"z"] } "#;
    let (v, r) = collect(&e, &with_body("application/json", body), true);
    assert_eq!(r, Ok(()));
    assert_eq!(
        v,
        vec![
            s("body/a", JsonKey, "a"),
            s("body/b", JsonKey, "b"),
            s("body/c", JsonKey, "c"),
            s("body/c/1/0", JsonValue, "x"),
            s("body/c/1/1/k~1y", JsonKey, "k/y"),
            s("body/c/1/1/k~1y", JsonValue, "v\"w"),
            s("body/d", JsonKey, "d"),
            s("body/d/1", JsonValue, "z"),
        ]
    );
}

#[test]
fn json_that_breaks_off_is_inspected_as_text_too() {
    use FieldKind::*;
    let e = Extractor::default();
    // Values read before the syntax error are handed over, then the whole body as text.
    for body in [r#"{"a":"<x>","b":"#, r#"{"a":"<x>"} trailing"#, r#"{"a":"<x>" "b":1}"#, r#"{"a":"<x>","b":tru}"#, r#"["<x>",]"#] {
        let (v, r) = collect(&e, &with_body("application/json", body), true);
        assert_eq!(r, Ok(()));
        assert_eq!(v.last().unwrap(), &s("body", Body, body), "{body}");
        assert!(v.iter().any(|x| x.2 == "<x>" && x.1 == JsonValue), "{body}: {v:?}");
    }
    // Deeper than the limit: text.
    let shallow = Extractor::new(&[], Limits { max_depth: 3, ..Limits::default() }).unwrap();
    let (v, _) = collect(&shallow, &with_body("application/json", r#"[[[["deep"]]]]"#), true);
    assert_eq!(v, vec![s("body", Body, r#"[[[["deep"]]]]"#)]);
    let (v, _) = collect(&shallow, &with_body("application/json", r#"[[["ok"]]]"#), true);
    assert_eq!(v, vec![s("body/0/0/0", JsonValue, "ok")]);
    // Declared JSON but not UTF-8: inspected as text with the bad bytes replaced; a binary
    // type that is not UTF-8 is not inspected.
    let mut r = with_body("application/json", "");
    r.body = b"{\"a\":\"<x>\xff\"}".to_vec();
    let (v, _) = collect(&e, &r, true);
    assert_eq!(v, vec![s("body", Body, "{\"a\":\"<x>\u{FFFD}\"}")]);
    let mut r = with_body("application/octet-stream", "");
    r.body = b"<x>\xff".to_vec();
    assert!(collect(&e, &r, true).0.is_empty());
}

/// Collects body fields with a callback that calls every key clean except those in `dirty`.
fn collect_judged(sc: &mut Scratch, body: &str, dirty: &[&str]) -> (Got, Counts) {
    let e = Extractor::default();
    let r = with_body("application/json", body);
    let mut out = Vec::new();
    let mut f = |fl: &Field<'_>| {
        out.push((fl.location.to_string(), fl.kind, fl.value.to_string()));
        std::ops::ControlFlow::Continue(!dirty.contains(&fl.value))
    };
    let (counts, r) = e.body(&r.view(), sc, &mut f);
    assert_eq!(r, Ok(()));
    (out, counts)
}

#[test]
fn repeated_clean_keys_of_an_array_of_objects_are_counted_not_handed_over_again() {
    use FieldKind::*;
    let mut sc = Scratch::default();
    let body = r#"{"items":[{"k":"1","j":"x"},{"k":"2","j":"y"},{"k":"3","z":"w","j":"v"}]}"#;
    let (v, counts) = collect_judged(&mut sc, body, &[]);
    let keys: Vec<String> = v.iter().filter(|x| x.1 == JsonKey).map(|x| x.0.clone()).collect();
    // `k` at position 0 repeats; `j` repeats at position 1, then moves to position 2 (handed
    // over again there); `z` is new.
    assert_eq!(keys, ["body/items", "body/items/0/k", "body/items/0/j", "body/items/2/z", "body/items/2/j"]);
    // Every value is still handed over with its full location, and every key counted.
    let vals: Vec<(String, String)> = v.iter().filter(|x| x.1 == JsonValue).map(|x| (x.0.clone(), x.2.clone())).collect();
    assert_eq!(vals.len(), 7);
    assert!(vals.contains(&("body/items/1/k".into(), "2".into())) && vals.contains(&("body/items/2/j".into(), "v".into())));
    assert_eq!(counts.values, 1 + 7 + 7);

    // A key the callback did not call clean is handed over every time.
    let (v, _) = collect_judged(&mut sc, body, &["k"]);
    assert_eq!(v.iter().filter(|x| x.1 == JsonKey && x.2 == "k").count(), 3);

    // Keys with escapes are not remembered; equal prefixes are not equal keys.
    let (v, _) = collect_judged(&mut sc, r#"[{"k\u0041":1},{"k\u0041":2},{"kk":3},{"k":4}]"#, &[]);
    let keys: Vec<String> = v.iter().filter(|x| x.1 == JsonKey).map(|x| x.2.clone()).collect();
    assert_eq!(keys, ["kA", "kA", "kk", "k"]);

    // Nothing is carried over to the next body (the scratch is reused across requests).
    let (v, _) = collect_judged(&mut sc, r#"[{"k":1}]"#, &[]);
    assert_eq!(v.iter().filter(|x| x.1 == JsonKey).count(), 1);
    let (v, _) = collect_judged(&mut sc, r#"[{"k":1}]"#, &[]);
    assert_eq!(v.iter().filter(|x| x.1 == JsonKey).count(), 1);
}

#[test]
fn a_repeated_attack_key_is_reported_in_every_object() {
    // End to end through the engine: a key that is an attack is never skipped.
    let engine = crate::Engine::new(crate::EngineConfig::default()).unwrap();
    let r = with_body("application/json", r#"[{"' or 1=1--":1},{"' or 1=1--":2},{"<script>alert(1)</script>":3}]"#);
    let findings = engine.inspect(&r.view());
    let mut locs: Vec<String> = findings.iter().map(|f| f.location.clone()).collect();
    locs.dedup();
    assert_eq!(locs.len(), 3, "{findings:?}");
}
