//! gRPC descriptor sets (`palisade_core::grpc::descriptor`) on any bytes: never a panic. Then
//! any bytes scanned as each message type of a real descriptor set (protoc's, from the core
//! crate's test data): never a panic, values within the scan's bounds, located under `grpc`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use palisade_core::grpc::descriptor::Descriptors;
use palisade_core::grpc::{scan_as, ScanLimits};

const USERS: &[u8] = include_bytes!("../../crates/palisade-core/tests/data/users.protoset");

fuzz_target!(|data: &[u8]| {
    let Some((&flags, input)) = data.split_first() else { return };
    let _ = Descriptors::decode(input);
    let Ok(d) = Descriptors::decode(USERS) else { panic!("the test descriptor set decodes") };
    let limits = ScanLimits { max_depth: usize::from(flags & 0x0f) + 1, max_fields: 4096, max_values: 256 };
    for name in ["demo.users.v1.GetUserRequest", "demo.users.v1.User", "google.protobuf.Timestamp"] {
        let Some(id) = d.message_named(name) else { panic!("{name} is in the set") };
        let s = scan_as(input, &limits, Some((&d, id)));
        assert!(s.values.len() <= limits.max_values);
        for v in &s.values {
            assert!(v.location == "grpc" || v.location.starts_with("grpc."), "{}", v.location);
        }
    }
});
