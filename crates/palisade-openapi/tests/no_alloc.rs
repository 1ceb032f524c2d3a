//! The hot path allocates nothing once the reusable buffers have grown: parsing `id=5` and
//! coercing it to JSON, counted with a global allocator. (One test in this binary, so no other
//! test thread allocates meanwhile.)
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use palisade_openapi::model::{Param, ParamIn, Style};
use palisade_openapi::params::{Cookies, Decoded, ParamDecoder, Query, Sources};
use palisade_schema::{Hints, SchemaId, TypeSet};

struct Counting;

static ALLOCS: AtomicUsize = AtomicUsize::new(0);

// SAFETY: delegates to the system allocator; only counts calls.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

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
    let before = ALLOCS.load(Ordering::Relaxed);
    assert!(before > 0, "the counting allocator sees allocations");
    for _ in 0..100 {
        assert_eq!(round(b"id=5"), Decoded::Json);
    }
    let after = ALLOCS.load(Ordering::Relaxed);
    assert_eq!(out, "5");
    assert_eq!(after - before, 0, "allocations on the hot path");
}
