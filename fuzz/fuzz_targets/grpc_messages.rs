//! gRPC message framing and the descriptor-free protobuf scan (`palisade_core::grpc`), and the
//! proxy's judging of a buffered gRPC body (`palisade_proxy::grpc::judge_buffered`), on any
//! bytes: never a panic; the messages split out account for every byte; every value found is
//! text that stands in its message, located under `grpc`, within the scan's bounds.
#![no_main]

use libfuzzer_sys::fuzz_target;
use palisade_core::grpc::{scan, split, ScanLimits, HEADER_LEN};
use palisade_proxy::grpc::{judge_buffered, Encoding};

fuzz_target!(|data: &[u8]| {
    let Some((&flags, input)) = data.split_first() else { return };
    let limits = ScanLimits { max_depth: usize::from(flags & 0x0f) + 1, max_fields: 4096, max_values: 256 };
    // The input as one protobuf message.
    check_scan(input, &limits);
    // The input as a gRPC body.
    if let Ok(msgs) = split(input, 1 << 20) {
        let total: usize = msgs.iter().map(|m| HEADER_LEN + m.payload.len()).sum();
        assert_eq!(total, input.len());
        for m in &msgs {
            check_scan(m.payload, &limits);
        }
    }
    let mut judged = 0usize;
    let enc = if flags & 0x10 != 0 { Encoding::Gzip } else { Encoding::Identity };
    let _ = judge_buffered(input, flags & 0x20 != 0, 1 << 16, &enc, |payload| {
        judged += 1;
        check_scan(payload, &limits);
        None
    });
});

fn check_scan(msg: &[u8], limits: &ScanLimits) {
    let s = scan(msg, limits);
    assert!(s.values.len() <= limits.max_values);
    for v in &s.values {
        assert!(v.location == "grpc" || v.location.starts_with("grpc."), "{}", v.location);
        assert!(v.location.matches('.').count() <= limits.max_depth, "{}", v.location);
        assert!(!v.value.is_empty());
        // The value's bytes are in the message as they are.
        assert!(msg.windows(v.value.len()).any(|w| w == v.value.as_bytes()), "{:?}", v.value);
    }
}
