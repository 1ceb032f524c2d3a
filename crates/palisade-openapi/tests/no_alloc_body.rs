//! Judging a valid JSON body allocates nothing once the thread's scratch buffers have grown,
//! on the fused path and on the tape path: `POST /orders` with ../shared/bench/small.json and
//! `POST /test/signup` with large.json, counted with a global allocator. (One test in this
//! binary, so no other test thread allocates meanwhile.) Skipped without ../shared.

use std::path::Path;

use palisade_core::rawhttp::parse_request;
use palisade_openapi::judge::{Judge, Phase};
use palisade_testkit::alloc;

#[global_allocator]
static GLOBAL: alloc::Counting = alloc::Counting;

#[test]
fn valid_bodies_do_not_allocate() {
    alloc::assert_installed();
    let dir = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/bench"));
    if !dir.join("bench-api.yaml").exists() {
        eprintln!("no_alloc_body skipped: ../shared/bench not found");
        return;
    }
    let spec = dir.join("bench-api.yaml").canonicalize().unwrap().display().to_string();
    for fused in [true, false] {
        let set = palisade_openapi::load(&spec, &palisade_openapi::FsFetch, &palisade_openapi::Limits::default()).unwrap();
        let api = palisade_openapi::compile(&set, &Default::default()).unwrap();
        let node = palisade_config::yaml::parse("spec: x").unwrap();
        let mut cx = palisade_config::decode::Ctx::new("test");
        let settings = palisade_openapi::settings::Settings::decode(&mut cx, &node, "openapi", Path::new("/")).unwrap();
        let mut judge = Judge::new(api, settings).unwrap();
        judge.set_fused(fused);
        for (head, file) in [
            ("POST /orders HTTP/1.1\nHost: b\nContent-Type: application/json\n\n", "small.json"),
            ("POST /test/signup HTTP/1.1\nHost: b\nContent-Type: application/json\n\n", "large.json"),
        ] {
            let mut raw = head.as_bytes().to_vec();
            raw.extend_from_slice(&std::fs::read(dir.join(file)).unwrap());
            let req = parse_request(&raw).unwrap();
            let mut out = Vec::with_capacity(8);
            // Warm-up grows the buffers.
            judge.check_request(&req.view(), Phase::Whole, &mut out);
            assert!(out.is_empty(), "{file}: {out:?}");
            let before = alloc::total();
            for _ in 0..20 {
                out.clear();
                judge.check_request(&req.view(), Phase::Whole, &mut out);
            }
            let after = alloc::total();
            assert!(out.is_empty());
            assert_eq!(after - before, 0, "{file} (fused: {fused}): allocations per 20 requests");
        }
    }
}
