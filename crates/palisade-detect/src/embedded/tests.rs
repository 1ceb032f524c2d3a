use super::*;

/// Every part `parts` hands over, as (pointer, kind, value).
fn collect(value: &str, kind: FieldKind) -> Option<Vec<(Option<String>, FieldKind, String)>> {
    let mut out = Vec::new();
    let r = parts(value, kind, &mut |p, k, v| {
        out.push((p.map(str::to_string), k, v.to_string()));
        ControlFlow::Continue(())
    })?;
    assert_eq!(r, ControlFlow::Continue(()));
    Some(out)
}

#[test]
fn a_graphql_document_is_judged_by_its_string_literals() {
    // Written for this rule: variables, fragments, directives, a comment, block strings.
    let doc = "query Search($q: String!, $first: Int = 10) {\n  # the search box\n  search(q: $q, first: $first, lang: \"en\") @include(if: true) {\n    ...Hit\n  }\n}\nfragment Hit on Item { id title(format: \"\"\"plain\ntext\"\"\") }";
    for kind in [FieldKind::JsonValue, FieldKind::QueryValue, FieldKind::FormValue] {
        let got = collect(doc, kind).expect("a GraphQL document");
        assert_eq!(got, vec![(None, FieldKind::JsonValue, "en".to_string()), (None, FieldKind::JsonValue, "plain\ntext".to_string())]);
    }
    assert_eq!(collect("{ me { id name } }", FieldKind::QueryValue), Some(vec![]));
    assert_eq!(collect("mutation { login(user: \"a' or 1=1--\") { token } }", FieldKind::JsonValue).unwrap()[0].2, "a' or 1=1--");
    // Not GraphQL: a schema, a syntax error, prose, a header: judged as they are.
    for v in ["type Query { me: User }", "query { user(id: ) { id } }", "query the database {quickly}", "{ a b c", "select { x }"] {
        assert!(graphql_literals(v.trim()).is_none(), "{v}");
    }
    assert!(collect("query { me { id } }", FieldKind::Header).is_none());
    assert!(collect("query { me { id } }", FieldKind::Body).is_none());
}

#[test]
fn a_json_document_serialised_into_a_json_string_is_walked() {
    // Written for this rule: a body field that holds a serialised document, twice nested.
    let inner = r#"{"filter": "{\"$regex\": \".*\"}", "name": "ann"}"#;
    let got = collect(inner, FieldKind::JsonValue).expect("a JSON document in a JSON string");
    assert_eq!(
        got,
        vec![
            (Some("filter".into()), FieldKind::JsonKey, "filter".into()),
            // The operator applies to `filter` (the key of the string): a pattern that
            // matches everything is handed over as a key.
            (Some("filter/$regex".into()), FieldKind::JsonKey, "$regex".into()),
            (Some("filter/$regex".into()), FieldKind::JsonValue, ".*".into()),
            (Some("name".into()), FieldKind::JsonKey, "name".into()),
            (Some("name".into()), FieldKind::JsonValue, "ann".into()),
        ]
    );
    let list = collect(r#"["a", "[\"b\", \"1 OR 1=1\"]"]"#, FieldKind::JsonValue).unwrap();
    assert_eq!(list.last().unwrap(), &(Some("1/1".into()), FieldKind::JsonValue, "1 OR 1=1".into()));
    // A filter's grammar in a serialised document stays grammar.
    let bound = collect(r#"{"q": "{\"price\": {\"$gte\": 10}}"}"#, FieldKind::JsonValue).unwrap();
    assert!(bound.iter().all(|x| x.2 != "$gte"), "{bound:?}");
    // Levels beyond the bound: the deepest string is handed over as text.
    let mut deep = r#"{"k": "x"}"#.to_string();
    for _ in 0..JSON_IN_JSON + 1 {
        deep = format!(r#"{{"k": {}}}"#, serde_json::to_string(&deep).unwrap());
    }
    let got = collect(&deep, FieldKind::JsonValue).unwrap();
    assert!(got.last().unwrap().2.starts_with('{'), "{got:?}");
    // Braces that are not a document: the string as it is.
    for v in ["{'a': 1}", "[1, 2", "{\"a\": }"] {
        assert!(collect(v, FieldKind::JsonValue).is_none(), "{v}");
    }
    assert_eq!(collect(r#"{"t": "{a} and {b}"}"#, FieldKind::JsonValue).unwrap().last().unwrap().2, "{a} and {b}");
}

#[test]
fn a_json_document_in_a_parameter_is_walked() {
    let got = collect(r#"{"select":["id","name"],"from":"users","where":{"name":{"$regex":"^ann"}}}"#, FieldKind::QueryValue).unwrap();
    let keys: Vec<_> = got.iter().filter(|x| x.1 == FieldKind::JsonKey).map(|x| (x.0.clone().unwrap(), x.2.clone())).collect();
    assert_eq!(
        keys,
        vec![
            ("select".to_string(), "select".to_string()),
            ("from".to_string(), "from".to_string()),
            ("where".to_string(), "where".to_string()),
            ("where/name".to_string(), "name".to_string()),
        ]
    );
    let values: Vec<_> = got.iter().filter(|x| x.1 == FieldKind::JsonValue).map(|x| (x.0.clone().unwrap(), x.2.clone())).collect();
    assert_eq!(
        values,
        vec![
            ("select/0".into(), "id".into()),
            ("select/1".into(), "name".into()),
            ("from".into(), "users".into()),
            ("where/name/$regex".into(), "^ann".into())
        ]
    );
    assert_eq!(collect(r#"{"a/b":{"c~":"x"}}"#, FieldKind::FormValue).unwrap().last().unwrap().0.as_deref(), Some("a~1b/c~0"));
    // Not JSON: as it is.
    for v in [r#"{"a":1"#, "{a:1}", "[1,2", "hello"] {
        assert!(collect(v, FieldKind::QueryValue).is_none(), "{v}");
    }
}

/// The operators `parts` hands over as keys (the injections) in a document.
fn operators_handed_over(doc: &str) -> Vec<String> {
    collect(doc, FieldKind::QueryValue).unwrap().into_iter().filter(|x| x.1 == FieldKind::JsonKey && x.2.starts_with('$')).map(|x| x.2).collect()
}

#[test]
fn filter_operators_with_constant_operands_are_grammar_always_true_conditions_are_not() {
    // Filters a client builds, written for this rule.
    for doc in [
        r#"{"where":{"price":{"$gte":10,"$lte":50}}}"#,
        r#"{"status":{"$in":["open","closed"]},"tags":{"$all":["a"]}}"#,
        r#"{"$or":[{"age":{"$gt":18}},{"name":{"$regex":"^ann","$options":"i"}}]}"#,
        r#"{"deleted":{"$ne":true},"created":{"$lt":"2024-01-01"}}"#,
        r#"{"avatar":{"$exists":true}}"#,
    ] {
        assert_eq!(operators_handed_over(doc), Vec::<String>::new(), "{doc}");
    }
    // Conditions that every document meets, code, conditions on credentials, an operator where
    // a value was expected.
    for (doc, op) in [
        (r#"{"username":"admin","password":{"$ne":null}}"#, "$ne"),
        (r#"{"name":{"$ne":""}}"#, "$ne"),
        (r#"{"name":{"$gt":""}}"#, "$gt"),
        (r#"{"name":{"$regex":".*"}}"#, "$regex"),
        (r#"{"name":{"$regex":"^.*$"}}"#, "$regex"),
        (r#"{"$where":"sleep(5000)"}"#, "$where"),
        (r#"{"a":{"$expr":{"$eq":[1,1]}}}"#, "$expr"),
        (r#"{"token":{"$exists":true}}"#, "$exists"),
        (r#"{"user":{"$regex":"^adm"}}"#, "$regex"),
        (r#"{"api_key":{"$gt":"a"}}"#, "$gt"),
        (r#"{"$gt":""}"#, "$gt"),
        (r#"{"tags":{"$nin":[]}}"#, "$nin"),
        (r#"{"$or": [{}, {"a": "a"}]}"#, "$or"),
    ] {
        assert!(operators_handed_over(doc).contains(&op.to_string()), "{doc}");
    }
    assert!(matches_everything("") && matches_everything(".*") && matches_everything("^.*?$") && !matches_everything("^a.*"));
    assert!(credential_field("Password") && credential_field("user_name") && credential_field("x-api-key") && !credential_field("price"));
}
