//! Fuzz the fused (one-pass) body validator against the tape validator: for any body sent to
//! any operation of a spec that mixes fused and handed-over schemas, a judge with the fused
//! path and one without give the same findings, field for field; neither panics.
#![no_main]

use std::path::Path;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use palisade_openapi::judge::{Judge, Phase};

const SPEC: &str = r#"
openapi: 3.0.3
info: {title: fuzz, version: "1"}
paths:
  /a:
    post:
      requestBody:
        content:
          application/json:
            schema: {$ref: '#/components/schemas/A'}
      responses: {'200': {description: ok}}
  /b:
    post:
      requestBody:
        content:
          application/json:
            schema:
              type: array
              maxItems: 8
              items: {oneOf: [{type: integer, minimum: 0}, {$ref: '#/components/schemas/A'}]}
      responses: {'200': {description: ok}}
components:
  schemas:
    A:
      type: object
      required: [id]
      properties:
        id: {type: integer, minimum: 1, maximum: 1000}
        name: {type: string, minLength: 1, maxLength: 8, pattern: '^[a-z]+$'}
        when: {type: string, format: date-time}
        kind: {type: string, enum: [x, y], nullable: true}
        price: {type: number, exclusiveMinimum: true, minimum: 0, multipleOf: 0.5}
        tags: {type: array, minItems: 1, items: {type: string, maxLength: 4}}
        sub: {$ref: '#/components/schemas/A'}
        map: {type: object, additionalProperties: {type: boolean}}
        closed: {type: object, additionalProperties: false, properties: {k: {type: integer, format: int32}}}
        any: {}
        alt: {anyOf: [{type: string}, {type: object, properties: {q: {type: integer}}}]}
        ro: {type: string, readOnly: true}
"#;

fn judges() -> &'static [(Judge, Judge); 2] {
    static J: OnceLock<[(Judge, Judge); 2]> = OnceLock::new();
    J.get_or_init(|| {
        let make = |settings: &str, fused: bool| {
            let set = palisade_openapi::load_str("fuzz.yaml", SPEC, &palisade_openapi::FsFetch, &palisade_openapi::Limits::default()).unwrap();
            let api = palisade_openapi::compile(&set, &Default::default()).unwrap();
            let node = palisade_config::yaml::parse(settings).unwrap();
            let mut cx = palisade_config::decode::Ctx::new("fuzz");
            let s = palisade_openapi::settings::Settings::decode(&mut cx, &node, "openapi", Path::new("/")).unwrap();
            let mut j = Judge::new(api, s).unwrap();
            j.set_fused(fused);
            j
        };
        let pair = |s: &str| (make(s, true), make(s, false));
        [pair("spec: x"), pair("spec: x\nunknown_fields: pass\nmax_violations: 1")]
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&sel, body)) = data.split_first() else { return };
    let (fused, tape) = &judges()[(sel & 1) as usize];
    let path = if sel & 2 == 0 { "/a" } else { "/b" };
    let mut raw = format!("POST {path} HTTP/1.1\nHost: f\nContent-Type: application/json\nContent-Length: {}\n\n", body.len()).into_bytes();
    raw.extend_from_slice(body);
    let Ok(req) = palisade_core::rawhttp::parse_request(&raw) else { return };
    let (mut a, mut b) = (Vec::new(), Vec::new());
    fused.check_request(&req.view(), Phase::Whole, &mut a);
    tape.check_request(&req.view(), Phase::Whole, &mut b);
    assert_eq!(a, b);
});
