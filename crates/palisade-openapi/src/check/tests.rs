use crate::loader::{load_str, FsFetch, Limits};

fn errors(spec: &str) -> Vec<String> {
    match load_str("/t/api.yaml", spec, &FsFetch, &Limits::default()) {
        Ok(_) => Vec::new(),
        Err(e) => e.iter().map(|e| e.to_string()).collect(),
    }
}

fn warnings(spec: &str) -> Vec<String> {
    load_str("/t/api.yaml", spec, &FsFetch, &Limits::default()).unwrap().warnings.iter().map(|w| w.to_string()).collect()
}

fn has(list: &[String], needle: &str) -> bool {
    list.iter().any(|e| e.contains(needle))
}

const HEAD: &str = "openapi: 3.0.3\ninfo: {title: t, version: '1'}\n";

#[test]
fn valid_spec_has_no_errors() {
    let spec = format!(
        "{HEAD}paths:\n  /users/{{id}}:\n    parameters:\n      - {{name: id, in: path, required: true, schema: {{type: integer}}}}\n    get:\n      operationId: getUser\n      responses: {{'200': {{description: ok}}, 4XX: {{description: bad}}, default: {{description: x}}}}\n"
    );
    assert_eq!(errors(&spec), Vec::<String>::new());
}

#[test]
fn path_keys_and_templates() {
    let spec = format!("{HEAD}paths:\n  users: {{}}\n  /a/{{b: {{}}\n  /c/{{x}}/{{x}}:\n    get:\n      parameters: [{{name: x, in: path, required: true, schema: {{type: string}}}}]\n      responses: {{'200': {{description: ok}}}}\n");
    let e = errors(&spec);
    assert!(has(&e, "/t/api.yaml:4:3: #/paths/users: path \"users\" must start with '/'"), "{e:?}");
    assert!(has(&e, "#/paths/~1a~1{b: unclosed '{'"), "{e:?}");
    assert!(has(&e, "parameter {x} appears twice"), "{e:?}");
    assert!(errors("openapi: 3.0.3\n").iter().any(|e| e.contains("missing \"paths\"")));
}

#[test]
fn path_params_declared_both_ways() {
    let spec = format!(
        "{HEAD}paths:\n  /u/{{id}}/{{sub}}:\n    parameters:\n      - {{name: id, in: path, required: true, schema: {{type: integer}}}}\n    get:\n      parameters:\n        - {{name: extra, in: path, required: true, schema: {{type: string}}}}\n        - {{name: sub, in: query, schema: {{type: string}}}}\n      responses: {{'200': {{description: ok}}}}\n"
    );
    let e = errors(&spec);
    assert!(has(&e, "#/paths/~1u~1{id}~1{sub}/get: path parameter {sub} of the template is not declared"), "{e:?}");
    assert!(has(&e, "#/paths/~1u~1{id}~1{sub}/get/parameters/0: path parameter \"extra\" does not appear in the path template"), "{e:?}");
    assert_eq!(e.len(), 2, "{e:?}");
}

#[test]
fn parameter_rules() {
    let spec = format!(
        "{HEAD}paths:\n  /p/{{id}}:\n    get:\n      parameters:\n        - {{name: id, in: path, schema: {{type: integer}}}}\n        - {{name: q, in: query, style: simple, schema: {{type: string}}}}\n        - {{name: h, in: header, style: form, schema: {{type: string}}}}\n        - {{name: c, in: body}}\n        - {{in: query}}\n        - {{name: q, in: query, schema: {{type: string}}}}\n        - {{name: both, in: query, schema: {{type: string}}, content: {{application/json: {{}}}}}}\n        - {{name: two, in: query, content: {{application/json: {{}}, text/plain: {{}}}}}}\n        - {{name: d, in: query, style: deepObject, schema: {{type: object}}}}\n        - {{name: m, in: cookie, style: form, schema: {{type: string}}}}\n      responses: {{'200': {{description: ok}}}}\n"
    );
    let e = errors(&spec);
    assert!(has(&e, "path parameter \"id\" must have required: true"), "{e:?}");
    assert!(has(&e, "#/paths/~1p~1{id}/get/parameters/1/style: style \"simple\" is not valid for a query parameter"), "{e:?}");
    assert!(has(&e, "style \"form\" is not valid for a header parameter"), "{e:?}");
    assert!(has(&e, "\"in\" must be path, query, header or cookie, not \"body\""), "{e:?}");
    assert!(has(&e, "needs a non-empty string \"name\""), "{e:?}");
    assert!(has(&e, "duplicate parameter \"q\" in query"), "{e:?}");
    assert!(has(&e, "has both \"schema\" and \"content\""), "{e:?}");
    assert!(has(&e, "\"content\" must have exactly one media type"), "{e:?}");
    assert_eq!(e.len(), 8, "deepObject and cookie form are valid: {e:?}");
}

#[test]
fn operation_ids_responses_security() {
    let spec = format!(
        "{HEAD}security: [{{nope: []}}]\npaths:\n  /a:\n    get:\n      operationId: same\n      responses: {{'200': {{description: ok}}, '600': {{description: x}}, 2xx: {{description: ok}}, '20': {{description: x}}, x-foo: 1}}\n  /b:\n    get:\n      operationId: same\n      security: [{{key: [read]}}]\n      responses: {{'200': {{description: ok}}}}\ncomponents:\n  securitySchemes:\n    key: {{type: apiKey, name: k, in: header}}\n"
    );
    let e = errors(&spec);
    assert!(!has(&e, "duplicate operationId"), "a warning, not an error: {e:?}");
    let w = warnings(&spec.replace("'600'", "'500'").replace("'20'", "'201'").replace("nope: []", "key: []"));
    assert!(has(&w, "/t/api.yaml:11:20: #/paths/~1b/get/operationId: duplicate operationId \"same\" (also at #/paths/~1a/get)"), "{w:?}");
    assert!(has(&e, "response key \"600\""), "{e:?}");
    assert!(has(&e, "response key \"20\""), "{e:?}");
    assert!(has(&e, "#/security/0/nope: security scheme \"nope\" is not defined"), "{e:?}");
    assert_eq!(e.len(), 3, "{e:?}");
}

#[test]
fn identical_templates() {
    let ok = "responses: {'200': {description: ok}}";
    let p = |n: &str| format!("[{{name: {n}, in: path, required: true, schema: {{type: string}}}}]");
    let spec = format!(
        "{HEAD}paths:\n  /u/{{id}}:\n    get: {{parameters: {}, {ok}}}\n  /u/{{name}}:\n    get: {{parameters: {}, {ok}}}\n  /v/{{id}}:\n    get: {{parameters: {}, {ok}}}\n  /v/{{name}}:\n    put: {{parameters: {}, {ok}}}\n",
        p("id"),
        p("name"),
        p("id"),
        p("name")
    );
    let e = errors(&spec);
    assert_eq!(e.len(), 1, "{e:?}");
    assert!(has(&e, "template \"/u/{name}\" is identical to \"/u/{id}\" apart from parameter names, with GET on both"), "{e:?}");
    let spec =
        format!("{HEAD}paths:\n  /v/{{id}}:\n    get: {{parameters: {}, {ok}}}\n  /v/{{name}}:\n    put: {{parameters: {}, {ok}}}\n", p("id"), p("name"));
    assert!(has(&warnings(&spec), "differs from \"/v/{id}\" only in parameter names"));
}

#[test]
fn warnings_for_ignored_things() {
    let spec = "openapi: 3.1.0\ninfo: {title: t, version: '1'}\nwebhooks: {}\npaths:\n  /a:\n    query: {}\n    get:\n      parameters:\n        - {name: Accept, in: header, schema: {type: string}}\n        - {name: free, in: query}\n      callbacks: {}\n      responses:\n        '200': {description: ok, links: {}}\n    post: {}\n";
    let w = warnings(spec);
    for needle in [
        "#/webhooks: webhooks are ignored",
        "#/paths/~1a/query: unknown path item key \"query\" is ignored",
        "header parameter \"Accept\" is ignored",
        "parameter \"free\" has no schema",
        "#/paths/~1a/get/callbacks: callbacks are ignored",
        "#/paths/~1a/get/responses/200/links: links are ignored",
        "#/paths/~1a/post: operation without responses",
    ] {
        assert!(has(&w, needle), "{needle}: {w:?}");
    }
}

#[test]
fn broken_ref_in_path_item_reports_once() {
    let spec = format!("{HEAD}paths:\n  /a:\n    $ref: '#/components/pathItems/Nope'\n");
    let e = errors(&spec);
    assert_eq!(e.len(), 1, "{e:?}");
    assert!(e[0].starts_with("/t/api.yaml:5:11: #/paths/~1a/$ref: unresolved $ref"), "{e:?}");
}
