use std::path::Path;

use super::*;
use crate::judge::{Judge, Phase};

fn get(path: &str, query: Option<&str>) -> Sample {
    Sample { method: "GET".into(), path: path.into(), query: query.map(String::from), ..Sample::default() }
}

fn post(path: &str, ct: &str, body: &str) -> Sample {
    Sample { method: "POST".into(), path: path.into(), content_type: Some(ct.into()), body: body.as_bytes().to_vec(), ..Sample::default() }
}

/// A judge of the learned document, with unknown query parameters and body fields blocked, as
/// strict as a user would run it.
fn judge_of(doc: &Value) -> Judge {
    let text = serde_json::to_string_pretty(doc).unwrap();
    let set = crate::load_str("learned.json", &text, &crate::FsFetch, &crate::Limits::default()).unwrap_or_else(|e| panic!("{e:?}\n{text}"));
    let api = crate::compile(&set, &Default::default()).unwrap_or_else(|e| panic!("{e:?}\n{text}"));
    let node = palisade_config::yaml::parse("{spec: learned.json, request: block, unknown_query: block, unknown_fields: block}").unwrap();
    let mut cx = palisade_config::decode::Ctx::new("test");
    let settings = crate::settings::Settings::decode(&mut cx, &node, "openapi", Path::new("/")).unwrap();
    Judge::new(api, settings).unwrap()
}

fn findings(j: &Judge, s: &Sample) -> Vec<crate::judge::Finding> {
    let req = request_of(s);
    let mut out = Vec::new();
    j.check_request(&req.view(), Phase::Whole, &mut out);
    out
}

#[test]
fn identifiers_become_parameters_and_names_stay_literals() {
    let mut l = Learner::new(Options::default());
    for id in ["1", "2", "17", "300", "4096"] {
        l.add(&get(&format!("/users/{id}"), None));
        l.add(&get(&format!("/users/{id}/posts"), Some("limit=10")));
    }
    l.add(&get("/users/me", None));
    for u in ["6f1c2d9e-3b1a-4c55-9d2e-0b8f7a6c5d4e", "0b8f7a6c-5d4e-4c55-9d2e-6f1c2d9e3b1a"] {
        l.add(&get(&format!("/orders/{u}/items/3"), None));
    }
    l.add(&get("/health", None));
    let doc = l.spec("t");
    let ops: Vec<(String, String)> = operations(&doc).into_iter().collect();
    assert_eq!(
        ops,
        [
            ("GET".into(), "/health".into()),
            ("GET".into(), "/orders/{orderId}/items/{itemId}".into()),
            ("GET".into(), "/users/me".into()),
            ("GET".into(), "/users/{userId}".into()),
            ("GET".into(), "/users/{userId}/posts".into()),
        ] as [(String, String); 5],
        "{doc:#}"
    );
    let p = &doc["paths"]["/users/{userId}"]["get"]["parameters"][0];
    assert_eq!((p["name"].as_str(), p["in"].as_str(), &p["schema"]), (Some("userId"), Some("path"), &json!({"type": "integer"})));
    let p = &doc["paths"]["/orders/{orderId}/items/{itemId}"]["get"]["parameters"][0];
    assert_eq!(p["schema"], json!({"type": "string", "format": "uuid"}));
}

#[test]
fn many_rare_names_become_a_parameter_few_stay() {
    let mut l = Learner::new(Options::default());
    let slugs = [
        "how-to-list-files",
        "a-guide-to-rust",
        "why-waf",
        "intro",
        "release-notes",
        "roadmap",
        "faq",
        "pricing-plans",
        "contact-us",
        "about",
        "team",
        "jobs",
        "blog-tips",
        "security",
    ];
    for s in slugs {
        l.add(&get(&format!("/articles/{s}"), None));
    }
    for _ in 0..5 {
        for s in ["list", "search"] {
            l.add(&get(&format!("/catalog/{s}"), None));
        }
    }
    let ops = operations(&l.spec("t"));
    assert!(ops.contains(&("GET".into(), "/articles/{articleId}".into())), "{ops:?}");
    assert!(ops.contains(&("GET".into(), "/catalog/list".into())) && ops.contains(&("GET".into(), "/catalog/search".into())), "{ops:?}");
}

#[test]
fn query_parameters_are_typed_required_repeated_and_grouped() {
    let mut l = Learner::new(Options::default());
    l.add(&get("/search", Some("q=shoes&limit=10&tag=a&tag=b&filter%5Bstatus%5D=paid&since=2024-05-01T10:00:00Z")));
    l.add(&get("/search", Some("q=red+hat&limit=25&filter[status]=open&filter[owner]=bob@example.com&since=2024-06-01T00:00:00.5%2B02:00")));
    l.add(&get("/search", Some("q=%E9t%E9&exact=true")));
    let doc = l.spec("t");
    let params = doc["paths"]["/search"]["get"]["parameters"].as_array().unwrap();
    let by = |n: &str| params.iter().find(|p| p["name"] == n).unwrap_or_else(|| panic!("{n}: {params:?}")).clone();
    assert_eq!(by("q")["required"], true);
    assert_eq!(by("q")["schema"], json!({"type": "string"}));
    assert_eq!(by("limit")["schema"], json!({"type": "integer"}));
    assert!(by("limit").get("required").is_none());
    assert_eq!(by("exact")["schema"], json!({"type": "boolean"}));
    assert_eq!(by("tag")["schema"], json!({"type": "array", "items": {"type": "string"}}));
    assert_eq!(by("since")["schema"], json!({"type": "string", "format": "date-time"}));
    let f = by("filter");
    assert_eq!((f["style"].as_str(), f["explode"].as_bool()), (Some("deepObject"), Some(true)));
    assert_eq!(f["schema"]["properties"]["status"], json!({"type": "string"}));
}

#[test]
fn json_bodies_merge_into_one_schema() {
    let mut l = Learner::new(Options::default());
    l.add(&post("/orders", "application/json; charset=utf-8", r#"{"id": 1, "items": [{"sku": "A-1", "qty": 2}], "note": null, "email": "a@b.example"}"#));
    l.add(&post(
        "/orders",
        "application/json",
        r#"{"id": 2, "items": [{"sku": "B", "qty": 1, "gift": true}], "note": "ring twice", "email": "c@d.example", "total": 9.5}"#,
    ));
    let doc = l.spec("t");
    let s = &doc["paths"]["/orders"]["post"]["requestBody"]["content"]["application/json"]["schema"];
    assert_eq!(s["type"], "object");
    assert_eq!(s["required"], json!(["email", "id", "items", "note"]));
    assert_eq!(s["properties"]["id"], json!({"type": "integer"}));
    assert_eq!(s["properties"]["total"], json!({"type": "number"}));
    assert_eq!(s["properties"]["note"], json!({"type": ["string", "null"]}));
    assert_eq!(s["properties"]["email"], json!({"type": "string", "format": "email"}));
    assert_eq!(s["properties"]["items"]["items"]["required"], json!(["qty", "sku"]));
    assert_eq!(s["properties"]["items"]["items"]["properties"]["gift"], json!({"type": "boolean"}));
    assert_eq!(doc["paths"]["/orders"]["post"]["requestBody"]["required"], true);
}

/// The property that matters: the traffic a spec was learned from validates under it, with
/// unknown query parameters and body fields blocked; and traffic it never saw does not.
#[test]
fn the_learned_spec_accepts_its_own_traffic_and_rejects_other_shapes() {
    let mut samples = Vec::new();
    for i in 0..40 {
        samples.push(get(&format!("/users/{}", 100 + i * 7), if i % 3 == 0 { Some("expand=posts") } else { None }));
        samples.push(post(
            &format!("/users/{}/posts", 100 + i),
            "application/json",
            &format!(r#"{{"title": "Post {i}", "tags": ["a", "b{i}"], "draft": {}, "score": {}}}"#, i % 2 == 0, i as f64 / 3.0),
        ));
        samples.push(post("/login", "application/x-www-form-urlencoded", &format!("user=u{i}&remember={}", i % 2 == 0)));
        samples.push(get("/search", Some(&format!("q=w{i}&page={}", i % 5))));
    }
    let mut l = Learner::new(Options::default());
    for s in &samples {
        l.add(s);
    }
    let doc = l.spec("t");
    let j = judge_of(&doc);
    for s in &samples {
        let f = findings(&j, s);
        assert!(f.is_empty(), "{s:?}: {f:?}\n{doc:#}");
    }
    let not = [
        get("/admin", None),
        get("/search", Some("q=x&debug=1")),
        post("/users/5/posts", "application/json", r#"{"title": "t", "tags": [], "draft": false, "score": 1, "owner": "root"}"#),
        post("/users/5/posts", "application/json", r#"{"title": 5, "tags": [], "draft": false, "score": 1}"#),
        get("/users/abc", None),
    ];
    for s in &not {
        assert!(!findings(&j, s).is_empty(), "{s:?} should not be described\n{doc:#}");
    }
}

#[test]
fn har_files_give_requests_and_responses() {
    let har = br#"{"log": {"version": "1.2", "entries": [
      {"request": {"method": "POST", "url": "https://api.example/v1/items?dry=true#x", "headers": [{"name": "Content-Type", "value": "application/json"}],
                   "postData": {"mimeType": "application/json", "text": "{\"name\": \"x\"}"}},
       "response": {"status": 201, "headers": [], "content": {"mimeType": "application/json", "text": "{\"id\": 7}"}}},
      {"request": {"method": "GET", "url": "/v1/items/7", "headers": []},
       "response": {"status": 200, "headers": [], "content": {"mimeType": "image/png", "text": "iVBORw0=", "encoding": "base64"}}}
    ]}}"#;
    let s = har_samples(har).unwrap();
    assert_eq!(s.len(), 2);
    assert_eq!((s[0].method.as_str(), s[0].path.as_str(), s[0].query.as_deref()), ("POST", "/v1/items", Some("dry=true")));
    assert_eq!(s[0].body, br#"{"name": "x"}"#);
    assert_eq!(s[0].response.as_ref().map(|r| r.status), Some(201));
    assert_eq!(s[1].path, "/v1/items/7");
    assert!(s[1].response.as_ref().unwrap().body.is_empty(), "base64 content is not learned");
    let mut l = Learner::new(Options::default());
    for x in &s {
        l.add(x);
    }
    let doc = l.spec("t");
    assert_eq!(doc["paths"]["/v1/items"]["post"]["responses"]["201"]["content"]["application/json"]["schema"]["properties"]["id"], json!({"type": "integer"}));
    assert!(doc["paths"]["/v1/items/{itemId}"]["get"]["responses"]["200"].get("content").is_some());
    let e = har_samples(b"{}").unwrap_err();
    assert_eq!((e.kind(), e.message()), (crate::ErrorKind::Har, "not a HAR file: no log.entries"));
    assert_eq!(har_samples(br#"{"log": {"entries": [{"request": {"url": "/"}}]}}"#).unwrap_err().message(), "entry 0: no request method");
    assert!(har_samples(b"not json").is_err());
}

#[test]
fn diff_reports_shadow_endpoints_and_undescribed_fields() {
    let mut l = Learner::new(Options::default());
    for i in 0..5 {
        l.add(&get(&format!("/users/{i}"), Some("fields=name")));
        l.add(&post("/users", "application/json", r#"{"name": "a"}"#));
    }
    let j = judge_of(&l.spec("t"));
    let traffic = vec![
        get("/users/9", Some("fields=name")),
        get("/users/9", Some("fields=name&debug=1")),
        post("/users", "application/json", r#"{"name": "a", "role": "admin"}"#),
        get("/internal/metrics/42", None),
        get("/internal/metrics/43", None),
    ];
    let d = diff(&j, &traffic);
    assert_eq!((d.requests, d.described), (5, 1));
    assert_eq!(d.shadow_endpoints.get(&("GET".into(), "/internal/metrics/{metricId}".into())), Some(&2), "{:?}", d.shadow_endpoints);
    assert!(
        d.undescribed.keys().any(|(op, code, loc)| op == "GET /users/{userId}" && code == crate::judge::code::QUERY_UNKNOWN && loc == "query.debug"),
        "{:?}",
        d.undescribed
    );
    assert!(
        d.undescribed.keys().any(|(op, code, loc)| op == "POST /users" && code == crate::judge::code::BODY_UNKNOWN_FIELD && loc.contains("role")),
        "{:?}",
        d.undescribed
    );
}

#[test]
fn template_matching_is_by_segment() {
    assert!(template_matches("/users/{userId}", "/users/5"));
    assert!(!template_matches("/users/{userId}", "/users/5/posts"));
    assert!(!template_matches("/users/me", "/users/5"));
}

#[test]
fn singular_names() {
    assert_eq!(singular("users"), "user");
    assert_eq!(singular("categories"), "category");
    assert_eq!(singular("address"), "address");
    assert_eq!(singular("line-items"), "lineItem");
}

#[test]
fn value_predicates_take_any_text() {
    // Generated and real traffic holds any Unicode: multi-byte characters at every offset.
    let mut texts = vec![String::new(), "2024-01-01T00:00:00Z".to_string(), "é".repeat(15), "2024-01-0é".into(), "2024-01-01Té0:00:00Z€€".into()];
    for n in 0..30 {
        texts.push(format!("{}{}", "9".repeat(n), "ÿ€😀"));
        texts.push(format!("{}{}", "😀", "2024-05-01T10:00:00.123+02:00".chars().take(n).collect::<String>()));
    }
    for t in &texts {
        let mut sc = Scalars::default();
        sc.add(t);
        sc.add_text(t);
        let _ = (looks_like_id(t), is_number(t), form_pairs(t), pct_decode(t), singular(t), split_url(t), bracketed(t));
    }
    assert!(!is_date_time("2024-01-01Té0:00:00Z€€"));
    assert!(is_date_time("2024-05-01T10:00:00.123+02:00"));
}

#[test]
fn a_literal_shaped_like_the_parameter_beside_it_is_a_value_of_it() {
    let mut l = Learner::new(Options::default());
    l.add(&get("/browse/categories/dinner", None));
    l.add(&get("/browse/categories/dinner/playlists", None));
    l.add(&get("/browse/categories/%C3%A9t%C3%A9", None));
    l.add(&get("/browse/categories/%C3%A9t%C3%A9/playlists", None));
    l.add(&get("/browse/categories/party", None));
    l.add(&get("/browse/new-releases", None));
    let ops = operations(&l.spec("t"));
    let want: Vec<(String, String)> = [
        ("GET", "/browse/categories/party"),
        ("GET", "/browse/categories/{categoryId}"),
        ("GET", "/browse/categories/{categoryId}/playlists"),
        ("GET", "/browse/new-releases"),
    ]
    .iter()
    .map(|(m, p)| (m.to_string(), p.to_string()))
    .collect();
    assert_eq!(ops.into_iter().collect::<Vec<_>>(), want, "a bare leaf says nothing about what it is: party stays");
}

#[test]
fn empty_values_are_declared_allowed() {
    let mut l = Learner::new(Options::default());
    l.add(&get("/pets", Some("tags=&limit=2")));
    l.add(&get("/pets", Some("tags=cat&tags=dog")));
    let doc = l.spec("t");
    let p = doc["paths"]["/pets"]["get"]["parameters"].as_array().unwrap().iter().find(|p| p["name"] == "tags").unwrap().clone();
    assert_eq!(p["allowEmptyValue"], true);
    assert_eq!(p["schema"], json!({"type": "array", "items": {"type": "string"}}));
    let j = judge_of(&doc);
    for s in [get("/pets", Some("tags=&limit=2")), get("/pets", Some("tags=cat&tags=dog"))] {
        assert!(findings(&j, &s).is_empty(), "{s:?}: {:?}", findings(&j, &s));
    }
}
