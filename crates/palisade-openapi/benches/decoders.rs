//! Decoder micro-benchmarks: a scalar query parameter (the hot path: no allocation), a
//! deepObject, a form body, a multipart body and an XML well-formedness check.

use criterion::{criterion_group, criterion_main, Criterion};
use palisade_body::form::Query;
use palisade_body::{multipart, xml};
use palisade_openapi::form::FormDecoder;
use palisade_openapi::model::{Param, ParamIn, Style};
use palisade_openapi::params::{Cookies, ParamDecoder, Sources};
use palisade_schema::{Hints, SchemaId, TypeSet};
use std::hint::black_box;

/// 0: integer, 1: object {R, G, B: integer}.
struct H;

impl Hints for H {
    fn types(&self, id: SchemaId) -> TypeSet {
        TypeSet(if id.0 == 1 { TypeSet::OBJECT } else { TypeSet::INTEGER })
    }
    fn items(&self, _: SchemaId) -> Option<SchemaId> {
        None
    }
    fn property(&self, id: SchemaId, _: &str) -> Option<SchemaId> {
        (id.0 == 1).then_some(SchemaId(0))
    }
}

fn param(name: &str, style: Style, schema: u32) -> Param {
    Param {
        name: name.into(),
        location: ParamIn::Query,
        required: true,
        style,
        explode: true,
        allow_empty_value: false,
        allow_reserved: false,
        schema: Some(SchemaId(schema)),
        content_type: None,
    }
}

fn bench(c: &mut Criterion) {
    let mut q = Query::default();
    let cookies = Cookies::default();
    let mut dec = ParamDecoder::new();
    let mut out = String::with_capacity(256);
    let no_path: &[(&str, &str)] = &[];
    let no_headers: &[(&str, &str)] = &[];

    let id = [param("id", Style::Form, 0)];
    c.bench_function("query id=5 parse+coerce", |b| {
        b.iter(|| {
            q.parse(black_box(b"id=5")).unwrap();
            let src = Sources { path: &no_path, query: &q, headers: &no_headers, cookies: &cookies, params: &id };
            black_box(dec.decode(&id[0], &src, &H, &mut out));
        })
    });

    let deep = [param("color", Style::DeepObject, 1)];
    c.bench_function("query deepObject 3 keys", |b| {
        b.iter(|| {
            q.parse(black_box(b"color[R]=100&color[G]=200&color[B]=150&page=2")).unwrap();
            let src = Sources { path: &no_path, query: &q, headers: &no_headers, cookies: &cookies, params: &deep };
            black_box(dec.decode(&deep[0], &src, &H, &mut out));
        })
    });

    let mut form = FormDecoder::new();
    c.bench_function("form body 3 fields", |b| b.iter(|| black_box(form.decode(black_box(b"R=1&G=2&B=3"), Some(SchemaId(1)), &[], &H, &mut out))));

    let body = b"--XyZ\r\nContent-Disposition: form-data; name=\"R\"\r\n\r\n42\r\n--XyZ\r\nContent-Disposition: form-data; name=\"f\"; filename=\"a.bin\"\r\nContent-Type: application/octet-stream\r\n\r\n0123456789abcdef0123456789abcdef\r\n--XyZ--\r\n";
    let mut parts = Vec::new();
    c.bench_function("multipart 2 parts", |b| {
        b.iter(|| {
            parts.clear();
            multipart::parse(black_box(body), "XyZ", &multipart::Limits::default(), &mut parts).unwrap();
            black_box(parts.len());
        })
    });

    let doc = "<?xml version=\"1.0\"?><order id=\"7\"><item sku=\"a&amp;b\">2</item><item sku=\"c\">1</item><note><![CDATA[x]]></note></order>";
    let mut checker = xml::Checker::default();
    c.bench_function("xml check small document", |b| b.iter(|| black_box(checker.check(black_box(doc.as_bytes()), &xml::Limits::default()).unwrap())));
}

criterion_group!(benches, bench);
criterion_main!(benches);
