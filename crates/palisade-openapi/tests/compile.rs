//! End to end with the real schema engine: load, compile, route, validate a body.

use std::path::Path;

use palisade_openapi::router::Lookup;
use palisade_openapi::{compile, lint, load, load_str, CompileOptions, FsFetch, Limits};
use palisade_schema::{Direction, Options};

fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name).to_string_lossy().into_owned()
}

fn valid(api: &palisade_openapi::model::Api, id: palisade_schema::SchemaId, json: &str) -> bool {
    let mut tape = palisade_json::Tape::default();
    palisade_json::parse_into(json.as_bytes(), &mut tape, &palisade_json::Limits::default()).unwrap();
    let opts = Options { direction: Direction::Request, shadow_unknown: false, max_violations: 8, max_unknown: 8 };
    let mut out = Vec::new();
    api.schemas.validate(id, &tape, json.as_bytes(), &opts, &mut out)
}

#[test]
fn split_spec_compiles_across_files() {
    let set = load(&fixture("multi/api.yaml"), &FsFetch, &Limits::default()).unwrap_or_else(|e| panic!("{e:#?}"));
    let api = compile(&set, &CompileOptions::default()).unwrap_or_else(|e| panic!("{e:#?}"));
    let mut out = Vec::new();
    let Lookup::Found { op, .. } = api.router.lookup("POST", "/v1/pets", &mut out) else { panic!() };
    let schema = api.operations[op].body.as_ref().unwrap().content[0].schema.unwrap();
    // Pet (pet.yaml) -> owner via the OwnerAlias chain (common.yaml) -> recursive Category
    assert!(valid(&api, schema, r#"{"name":"rex","owner":{"name":"ann"},"category":{"name":"dogs","parent":{"name":"animals"}}}"#));
    assert!(!valid(&api, schema, r#"{"name":"rex","extra":1}"#), "additionalProperties: false in pet.yaml");
    assert!(!valid(&api, schema, r#"{"name":"rex","owner":{"name":5}}"#), "Owner reached through the chain");
    assert!(!valid(&api, schema, r#"{"name":"rex","category":{"parent":{"parent":{"name":false}}}}"#), "recursion");
    let Lookup::Found { op, .. } = api.router.lookup("GET", "/v1/pets/3", &mut out) else { panic!() };
    let id = api.operations[op].params[0].schema.unwrap();
    assert!(valid(&api, id, "3"));
    assert!(!valid(&api, id, "0"), "minimum: 1 from common.yaml");
}

#[test]
fn bench_spec_compiles_routes_and_validates() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/bench/bench-api.yaml");
    if !Path::new(path).exists() {
        println!("skipped: {path} is not here");
        return;
    }
    let set = load(path, &FsFetch, &Limits::default()).unwrap_or_else(|e| panic!("{e:#?}"));
    let api = compile(&set, &CompileOptions::default()).unwrap_or_else(|e| panic!("{e:#?}"));
    let mut out = Vec::new();
    let Lookup::Found { op, .. } = api.router.lookup("GET", "/test?id=5", &mut out) else { panic!() };
    let id = api.operations[op].params[0].schema.unwrap();
    assert!(valid(&api, id, "5"));
    assert!(!valid(&api, id, "-1"));
    let Lookup::Found { op, .. } = api.router.lookup("POST", "/orders", &mut out) else { panic!() };
    let order = api.operations[op].body.as_ref().unwrap().content[0].schema.unwrap();
    assert!(!valid(&api, order, r#"{"id":"ord_0123456789abcdef"}"#), "required fields missing");
    assert!(lint(&set, &CompileOptions::default()).is_ok());
}

#[test]
fn schema_errors_are_located_spec_errors() {
    let spec = "openapi: 3.1.0\ninfo: {title: t, version: '1'}\npaths:\n  /a:\n    post:\n      requestBody:\n        content:\n          application/json:\n            schema: {type: object, minProperties: -1}\n      responses: {'200': {description: ok}}\n";
    let set = load_str("/t/api.yaml", spec, &FsFetch, &Limits::default()).unwrap();
    match compile(&set, &CompileOptions::default()) {
        Err(errs) => {
            assert!(errs[0].file == "/t/api.yaml" && errs[0].line == 9, "{errs:#?}");
            assert!(errs[0].pointer.starts_with("/paths/~1a/post/requestBody/content/application~1json/schema"), "{errs:#?}");
        }
        Ok(_) => panic!("minProperties: -1 should not compile"),
    }
}

#[test]
fn lint_reports_schema_engine_warnings_and_ignored_constructs() {
    let spec = "openapi: 3.1.0\ninfo: {title: t, version: '1'}\nwebhooks: {}\npaths:\n  /a/{id}:\n    get:\n      parameters:\n        - {name: id, in: path, required: true, schema: {type: string, pattern: '^(?=a)\\w+(?<!z)$'}}\n      callbacks: {}\n      responses: {'200': {description: ok}}\n";
    let set = load_str("/t/api.yaml", spec, &FsFetch, &Limits::default()).unwrap();
    let warnings: Vec<String> = lint(&set, &CompileOptions::default()).unwrap().iter().map(|w| w.to_string()).collect();
    assert!(warnings.iter().any(|w| w.starts_with("/t/api.yaml:3:11: #/webhooks: webhooks are ignored")), "{warnings:#?}");
    assert!(warnings.iter().any(|w| w.contains("#/paths/~1a~1{id}/get/callbacks: callbacks are ignored")), "{warnings:#?}");
    assert!(warnings.iter().any(|w| w.contains("/parameters/0/schema") && w.to_lowercase().contains("pattern")), "{warnings:#?}");
}
