//! Fuzz the request decoders of palisade-openapi on arbitrary bytes: parameter decoding in
//! every style, the form decoder, and multipart parts turned into JSON. Invariants: no panic;
//! whatever JSON the decoders produce passes the JSON syntax check. The body parsers beneath
//! (media types, query pairs, multipart framing, XML) have their own target, `body_parsers`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use palisade_body::form::Query;
use palisade_openapi::form::FormDecoder;
use palisade_openapi::model::{Param, ParamIn, Style};
use palisade_openapi::multipart::MultipartDecoder;
use palisade_openapi::params::{self, Cookies, Decoded, ParamDecoder, Sources};
use palisade_schema::{Hints, SchemaId, TypeSet};

/// 0: integer, 1: string, 2: array of integers, 3: object {a: 0, b: 2, c: 4}, 4: object {x: 1}.
struct H;

impl Hints for H {
    fn types(&self, id: SchemaId) -> TypeSet {
        TypeSet(match id.0 {
            0 => TypeSet::INTEGER | TypeSet::BOOLEAN,
            1 => TypeSet::STRING,
            2 => TypeSet::ARRAY,
            _ => TypeSet::OBJECT,
        })
    }
    fn items(&self, id: SchemaId) -> Option<SchemaId> {
        (id.0 == 2).then_some(SchemaId(0))
    }
    fn property(&self, id: SchemaId, name: &str) -> Option<SchemaId> {
        match (id.0, name) {
            (3, "a") => Some(SchemaId(0)),
            (3, "b") => Some(SchemaId(2)),
            (3, "c") => Some(SchemaId(4)),
            (4, "x") => Some(SchemaId(1)),
            _ => None,
        }
    }
}

const STYLES: [Style; 7] = [Style::Matrix, Style::Label, Style::Form, Style::Simple, Style::SpaceDelimited, Style::PipeDelimited, Style::DeepObject];
const PLACES: [ParamIn; 4] = [ParamIn::Path, ParamIn::Query, ParamIn::Header, ParamIn::Cookie];

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let sel = data[0];
    let input = &data[1..];

    // Parameters: every style, location and schema shape over the same request.
    let mut q = Query::default();
    let _ = q.parse(input);
    let mut cookies = Cookies::default();
    let _ = cookies.add_header(input);
    let path = [("p", input)];
    let headers = [("X-H", input), ("x-h", input)];
    let mut dec = ParamDecoder::new();
    dec.options.strict_reserved = sel & 0x80 != 0;
    let mut out = String::new();
    let mut ps = Vec::new();
    for (k, &style) in STYLES.iter().enumerate() {
        for (l, &location) in PLACES.iter().enumerate() {
            let name = match location {
                ParamIn::Path => "p",
                ParamIn::Header => "x-h",
                _ => "a",
            };
            ps.push(Param {
                name: name.into(),
                location,
                required: false,
                style,
                explode: (sel >> (k % 7)) & 1 == 1,
                allow_empty_value: l % 2 == 0,
                allow_reserved: sel & 0x40 != 0,
                schema: Some(SchemaId(((sel as usize + k + l) % 5) as u32)),
                content_type: (sel % 11 == 0).then(|| "application/json".into()),
            });
        }
    }
    for p in &ps {
        let src = Sources { path: &path, query: &q, headers: &headers, cookies: &cookies, params: &ps };
        if dec.decode(p, &src, &H, &mut out) == Decoded::Json {
            assert!(params::validate_json(out.as_bytes()).is_ok(), "{p:?} produced invalid JSON {out:?}");
        }
    }
    let mut unknown = Vec::new();
    params::unknown_query_params(&ps, &H, &q, &mut unknown);
    assert!(unknown.iter().all(|&i| i < q.len()));

    // Form body.
    let mut form = FormDecoder::new();
    if form.decode(input, Some(SchemaId(3)), &[], &H, &mut out).is_ok() {
        assert!(params::validate_json(out.as_bytes()).is_ok(), "form produced invalid JSON {out:?}");
    }

    // Multipart with a fixed boundary, then JSON.
    let mut parts = Vec::new();
    let limits = palisade_body::multipart::Limits { max_parts: 16, max_header_bytes: 256, max_headers: 8 };
    if palisade_body::multipart::parse(input, "b", &limits, &mut parts).is_ok() {
        let mut findings = Vec::new();
        if MultipartDecoder::new().to_json(&parts, Some(SchemaId(3)), &[], &H, &mut out, &mut findings).is_ok() {
            assert!(params::validate_json(out.as_bytes()).is_ok(), "multipart produced invalid JSON {out:?}");
        }
    }
});
