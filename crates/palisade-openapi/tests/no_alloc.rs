//! The hot path allocates nothing once the reusable buffers have grown: parsing `id=5` and
//! coercing it to JSON, counted with a global allocator. (One test in this binary, so no other
//! test thread allocates meanwhile.)

use palisade_body::form::Query;
use palisade_openapi::model::{Param, ParamIn, Style};
use palisade_openapi::params::{Cookies, Decoded, ParamDecoder, Sources};
use palisade_schema::{Hints, SchemaId, TypeSet};
use palisade_testkit::alloc;

#[global_allocator]
static GLOBAL: alloc::Counting = alloc::Counting;

struct IntHints;

impl Hints for IntHints {
    fn types(&self, _: SchemaId) -> TypeSet {
        TypeSet(TypeSet::INTEGER)
    }
    fn items(&self, _: SchemaId) -> Option<SchemaId> {
        None
    }
    fn property(&self, _: SchemaId, _: &str) -> Option<SchemaId> {
        None
    }
}

#[test]
fn scalar_query_param_does_not_allocate() {
    let params = [Param {
        name: "id".into(),
        location: ParamIn::Query,
        required: true,
        style: Style::Form,
        explode: true,
        allow_empty_value: false,
        allow_reserved: false,
        schema: Some(SchemaId(0)),
        content_type: None,
    }];
    let mut q = Query::default();
    let cookies = Cookies::default();
    let mut dec = ParamDecoder::new();
    let mut out = String::new();
    let no_path: &[(&str, &str)] = &[];
    let no_headers: &[(&str, &str)] = &[];
    let mut round = |query: &[u8]| {
        q.parse(query).unwrap();
        let src = Sources { path: &no_path, query: &q, headers: &no_headers, cookies: &cookies, params: &params };
        dec.decode(&params[0], &src, &IntHints, &mut out)
    };
    // Warm-up grows the buffers.
    assert_eq!(round(b"id=12345&x=%41"), Decoded::Json);
    let before = alloc::total();
    assert!(before > 0, "the counting allocator sees allocations");
    for _ in 0..100 {
        assert_eq!(round(b"id=5"), Decoded::Json);
    }
    let after = alloc::total();
    assert_eq!(out, "5");
    assert_eq!(after - before, 0, "allocations on the hot path");
}
