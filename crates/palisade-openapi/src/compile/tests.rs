use std::path::Path;

use super::*;
use crate::loader::{load, load_str, FsFetch, Limits};
use crate::router::Lookup;

/// Stands in for the schema engine: records what it was asked to compile.
#[derive(Default)]
struct FakeSink {
    seen: std::rc::Rc<std::cell::RefCell<Vec<(DocId, String)>>>,
}

impl SchemaSink for FakeSink {
    fn compile(&mut self, doc: DocId, pointer: &str, _node: &Node) -> SchemaId {
        let mut seen = self.seen.borrow_mut();
        seen.push((doc, pointer.to_string()));
        SchemaId(seen.len() as u32 - 1)
    }
    fn finish(self: Box<Self>) -> Result<(Schemas, Vec<SchemaError>), Vec<SchemaError>> {
        Ok((Schemas::default(), Vec::new()))
    }
}

type Seen = std::rc::Rc<std::cell::RefCell<Vec<(DocId, String)>>>;

fn build(set: &SpecSet, options: &CompileOptions) -> (Api, Vec<Warning>, Seen) {
    let sink = FakeSink::default();
    let seen = sink.seen.clone();
    let (api, w) = compile_using(set, options, Box::new(sink)).unwrap_or_else(|e| panic!("{e:#?}"));
    (api, w, seen)
}

fn spec(text: &str) -> (Api, Vec<Warning>, Seen) {
    let set = load_str("/t/api.yaml", text, &FsFetch, &Limits::default()).unwrap_or_else(|e| panic!("{e:#?}"));
    build(&set, &CompileOptions::default())
}

fn op<'a>(api: &'a Api, method: &str, path: &str) -> (&'a Operation, Vec<(String, String)>) {
    let mut out = Vec::new();
    match api.router.lookup(method, path, &mut out) {
        Lookup::Found { op, names } => (&api.operations[op], names.iter().zip(&out).map(|(n, s)| (n.clone(), s.get(path).to_string())).collect()),
        other => panic!("{method} {path}: {other:?}"),
    }
}

const PARAMS: &str = r#"
openapi: 3.0.3
info: {title: Params, version: "1"}
paths:
  /users/{id}:
    parameters:
      - {name: id, in: path, required: true, schema: {type: integer}}
      - {name: q, in: query, schema: {type: string}}
      - {name: X-Trace, in: header, schema: {type: string}}
    get:
      parameters:
        - {name: q, in: query, required: true, schema: {type: integer}}
        - {name: x-trace, in: header, required: true, schema: {type: string}}
        - {name: s, in: cookie, explode: false, schema: {type: string}}
        - {name: list, in: query, style: pipeDelimited, allowEmptyValue: true, allowReserved: true, schema: {type: array}}
        - {name: filter, in: query, content: {application/json: {schema: {type: object}}}}
        - {name: Content-Type, in: header, schema: {type: string}}
      responses: {'200': {description: ok}}
    put:
      responses: {'204': {description: ok}}
"#;

#[test]
fn parameters_merge_and_defaults() {
    let (api, _, seen) = spec(PARAMS);
    assert_eq!(api.title, "Params");
    assert_eq!(api.version, Version::V30);
    let (get, params) = op(&api, "GET", "/users/42");
    assert_eq!(params, [("id".to_string(), "42".to_string())]);
    assert_eq!(get.method, "GET");
    assert_eq!(get.template, "/users/{id}");
    assert_eq!(get.pointer, "/paths/~1users~1{id}/get");
    let names: Vec<(&str, ParamIn)> = get.params.iter().map(|p| (p.name.as_str(), p.location)).collect();
    // path-level first (minus the overridden q and X-Trace), then the operation's; Content-Type dropped
    assert_eq!(
        names,
        [
            ("id", ParamIn::Path),
            ("q", ParamIn::Query),
            ("x-trace", ParamIn::Header),
            ("s", ParamIn::Cookie),
            ("list", ParamIn::Query),
            ("filter", ParamIn::Query)
        ]
    );
    let p = |n: &str| get.params.iter().find(|p| p.name == n).unwrap();
    assert!(p("id").required && p("id").style == Style::Simple && !p("id").explode);
    assert!(p("q").required, "the operation's q overrides the path item's");
    assert_eq!((p("q").style, p("q").explode), (Style::Form, true));
    assert_eq!((p("x-trace").style, p("x-trace").explode, p("x-trace").required), (Style::Simple, false, true));
    assert_eq!((p("s").style, p("s").explode), (Style::Form, false));
    assert_eq!((p("list").style, p("list").explode, p("list").allow_empty_value, p("list").allow_reserved), (Style::PipeDelimited, false, true, true));
    assert_eq!(p("filter").content_type.as_deref(), Some("application/json"));
    let seen = seen.borrow();
    let at = |id: Option<SchemaId>| seen[id.unwrap().0 as usize].1.clone();
    assert_eq!(at(p("q").schema), "/paths/~1users~1{id}/get/parameters/0/schema");
    assert_eq!(at(p("id").schema), "/paths/~1users~1{id}/parameters/0/schema");
    assert_eq!(at(p("filter").schema), "/paths/~1users~1{id}/get/parameters/4/content/application~1json/schema");
    // the PUT inherits the path-level parameters untouched
    let (put, _) = op(&api, "PUT", "/users/1");
    assert_eq!(put.params.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(), ["id", "q", "X-Trace"]);
    assert!(!put.params[1].required);
}

const BODIES: &str = r#"
openapi: 3.1.0
info: {title: Bodies, version: "1"}
paths:
  /upload:
    post:
      requestBody:
        $ref: '#/components/requestBodies/Upload'
      responses:
        '201':
          description: created
          headers:
            Location: {required: true, schema: {type: string}}
            Content-Type: {schema: {type: string}}
            X-Rate: {$ref: '#/components/headers/Rate'}
          content:
            application/json: {schema: {type: object, additionalProperties: false}}
        4XX: {description: client error}
        default: {description: other}
components:
  headers:
    Rate: {schema: {type: integer}}
  requestBodies:
    Upload:
      required: true
      content:
        multipart/form-data:
          schema:
            type: object
            properties: {file: {}, meta: {type: object}}
          encoding:
            file: {contentType: image/png, headers: {X-Part: {required: true, schema: {type: string}}}}
            meta: {style: deepObject, explode: true, allowReserved: true}
        application/*+json: {schema: {$ref: '#/components/schemas/Closed'}}
        text/plain: {}
  schemas:
    Closed: {type: object, additionalProperties: false}
"#;

#[test]
fn bodies_encodings_responses() {
    let (api, warnings, seen) = spec(BODIES);
    let (o, _) = op(&api, "POST", "/upload");
    let body = o.body.as_ref().unwrap();
    assert!(body.required);
    assert_eq!(body.content.iter().map(|m| m.range.as_str()).collect::<Vec<_>>(), ["multipart/form-data", "application/*+json", "text/plain"]);
    assert!(body.content[2].schema.is_none());
    let enc = &body.content[0].encoding;
    assert_eq!(enc[0].0, "file");
    assert_eq!(enc[0].1.content_type.as_deref(), Some("image/png"));
    assert_eq!(enc[0].1.headers[0].0, "X-Part");
    assert!(enc[0].1.headers[0].1.required);
    assert_eq!((enc[1].1.style, enc[1].1.explode, enc[1].1.allow_reserved), (Some(Style::DeepObject), Some(true), true));
    // schemas inside a referenced request body are compiled where they are
    assert!(seen.borrow().iter().any(|(_, p)| p == "/components/requestBodies/Upload/content/multipart~1form-data/schema"));
    let r = &o.responses;
    assert_eq!(r.by_status.iter().map(|(k, _)| *k).collect::<Vec<_>>(), [StatusKey::Exact(201), StatusKey::Range(4)]);
    assert!(r.default.is_some());
    let created = &r.by_status[0].1;
    assert_eq!(created.headers.iter().map(|(n, h)| (n.as_str(), h.required)).collect::<Vec<_>>(), [("Location", true), ("X-Rate", false)]);
    assert!(created.headers[1].1.schema.is_some());
    assert_eq!(created.content[0].range, "application/json");
    // lint: the multipart object schema is open, the Closed one is not
    let open: Vec<&Warning> = warnings.iter().filter(|w| w.message.contains("without additionalProperties")).collect();
    assert_eq!(open.len(), 1, "{warnings:#?}");
    assert_eq!(open[0].pointer, "/components/requestBodies/Upload/content/multipart~1form-data/schema");
}

const SECURITY: &str = r#"
openapi: 3.0.3
info: {title: Sec, version: "1"}
security: [{key: []}, {oauth: [read, write]}]
paths:
  /default: {get: {responses: {'200': {description: ok}}}}
  /none: {get: {security: [], responses: {'200': {description: ok}}}}
  /anon: {get: {security: [{}, {bearer: []}], responses: {'200': {description: ok}}}}
  /both: {get: {security: [{key: [], basic: []}], responses: {'200': {description: ok}}}}
components:
  securitySchemes:
    key: {type: apiKey, name: X-Key, in: header}
    cookie: {type: apiKey, name: sid, in: cookie}
    bearer: {type: http, scheme: Bearer}
    basic: {type: http, scheme: basic}
    digest: {type: http, scheme: digest}
    oauth: {type: oauth2, flows: {}}
    oidc: {type: openIdConnect, openIdConnectUrl: 'https://id.example/.well-known/openid-configuration'}
    mtls: {type: mutualTLS}
"#;

#[test]
fn security_requirements_and_schemes() {
    let (api, warnings, _) = spec(SECURITY);
    let req = |s: &str, scopes: &[&str]| SecurityRequirement { scheme: s.into(), scopes: scopes.iter().map(|x| x.to_string()).collect() };
    assert_eq!(op(&api, "GET", "/default").0.security, Some(vec![vec![req("key", &[])], vec![req("oauth", &["read", "write"])]]));
    assert_eq!(op(&api, "GET", "/none").0.security, None);
    assert_eq!(op(&api, "GET", "/anon").0.security, Some(vec![vec![], vec![req("bearer", &[])]]));
    assert_eq!(op(&api, "GET", "/both").0.security, Some(vec![vec![req("key", &[]), req("basic", &[])]]));
    assert_eq!(
        api.security_schemes,
        vec![
            ("key".to_string(), SecurityScheme::ApiKey { name: "X-Key".into(), location: ParamIn::Header }),
            ("cookie".to_string(), SecurityScheme::ApiKey { name: "sid".into(), location: ParamIn::Cookie }),
            ("bearer".to_string(), SecurityScheme::Bearer),
            ("basic".to_string(), SecurityScheme::Basic),
            ("digest".to_string(), SecurityScheme::OtherHttp("digest".into())),
            ("oauth".to_string(), SecurityScheme::OAuth2),
            ("oidc".to_string(), SecurityScheme::OpenIdConnect),
            ("mtls".to_string(), SecurityScheme::Unchecked("mutualTLS".into())),
        ]
    );
    assert!(warnings.iter().any(|w| w.pointer == "/components/securitySchemes/mtls" && w.message.contains("not checked")), "{warnings:#?}");
}

const SERVERS: &str = r#"
openapi: 3.0.3
info: {title: Servers, version: "1"}
servers:
  - url: https://api.example.com/{version}
    variables: {version: {enum: [v1, v2], default: v1}}
  - url: https://legacy.example.com/
paths:
  /a: {get: {responses: {'200': {description: ok}}}}
  /b:
    servers: [{url: /beta}]
    get: {responses: {'200': {description: ok}}}
    post:
      servers: [{url: 'http://x.example/ops/'}]
      responses: {'200': {description: ok}}
  /v1/a: {get: {responses: {'200': {description: ok}}}}
"#;

#[test]
fn server_base_paths() {
    let (api, warnings, _) = spec(SERVERS);
    let (a, _) = op(&api, "GET", "/v1/a");
    assert_eq!(a.template, "/a");
    assert_eq!(a.base_paths, ["/v1", "/v2", ""]);
    assert_eq!(op(&api, "GET", "/v2/a").0.template, "/a");
    assert_eq!(op(&api, "GET", "/a").0.template, "/a");
    assert_eq!(op(&api, "GET", "/beta/b").0.template, "/b");
    assert_eq!(op(&api, "POST", "/ops/b").0.template, "/b");
    let mut out = Vec::new();
    assert_eq!(api.router.lookup("GET", "/b", &mut out), Lookup::NotFound, "path-level servers replace the document's");
    assert!(matches!(api.router.lookup("POST", "/beta/b", &mut out), Lookup::MethodNotAllowed { .. }));
    // `/v1/a` under no prefix collides with `/a` under `/v1`: the first one wins, with a warning
    assert!(warnings.iter().any(|w| w.message.contains("GET /v1/a is also GET /a")), "{warnings:#?}");
}

#[test]
fn trailing_slash_option_reaches_the_router() {
    let set = load_str("/t/api.yaml", SERVERS, &FsFetch, &Limits::default()).unwrap();
    let opts = CompileOptions { router: RouterOptions { ignore_trailing_slash: true }, ..Default::default() };
    let (api, _, _) = build(&set, &opts);
    assert_eq!(op(&api, "GET", "/v2/a/").0.template, "/a");
}

fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name).to_string_lossy().into_owned()
}

#[test]
fn multi_file_fixture_compiles() {
    let set = load(&fixture("multi/api.yaml"), &FsFetch, &Limits::default()).unwrap_or_else(|e| panic!("{e:#?}"));
    assert_eq!(set.docs.len(), 3);
    let (api, warnings, seen) = build(&set, &CompileOptions::default());
    assert_eq!(api.operations.len(), 3);
    let (get, params) = op(&api, "GET", "/v1/pets/7");
    assert_eq!(get.id.as_deref(), Some("getPet"));
    assert_eq!(params, [("petId".to_string(), "7".to_string())]);
    let pet_id = get.params[0].schema.unwrap();
    let (doc, ptr) = seen.borrow()[pet_id.0 as usize].clone();
    assert!(set.doc(doc).location.ends_with("multi/models/common.yaml"));
    assert_eq!(ptr, "/parameters/PetId/schema");
    assert!(get.responses.default.as_ref().unwrap().content[0].schema.is_some());
    assert_eq!(op(&api, "POST", "/v1/pets").0.id.as_deref(), Some("createPet"));
    // Pet has additionalProperties: false, so no open-object warning for it
    assert!(!warnings.iter().any(|w| w.message.contains("additionalProperties")), "{warnings:#?}");
}

#[test]
fn bench_spec_loads_and_routes() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/bench/bench-api.yaml");
    if !Path::new(path).exists() {
        println!("skipped: {path} is not here");
        return;
    }
    let set = load(path, &FsFetch, &Limits::default()).unwrap_or_else(|e| panic!("{e:#?}"));
    let (api, _, _) = build(&set, &CompileOptions::default());
    let (get, _) = op(&api, "GET", "/test?id=5");
    assert_eq!(get.params[0].name, "id");
    assert!(op(&api, "POST", "/orders").0.body.as_ref().unwrap().required);
    assert_eq!(op(&api, "POST", "/test/signup").0.template, "/test/signup");
    let mut out = Vec::new();
    assert!(matches!(api.router.lookup("POST", "/test", &mut out), Lookup::MethodNotAllowed { .. }));
}
