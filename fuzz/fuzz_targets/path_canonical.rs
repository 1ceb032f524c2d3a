//! The path canonicaliser (`palisade_core::path`): never panics, and under every policy its
//! output starts with `/`, is its own canonical form (idempotent), has no dot segment, no `//`
//! when slashes are merged, only literal bytes and upper-case escapes, and the one-scan fast
//! path agrees with the general case (`check_invariants`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use palisade_core::path::{check_invariants, Backslash, Control, EncodedSlash, InvalidUtf8, PathPolicy, Semicolon};

fuzz_target!(|data: &[u8]| {
    let [knobs, more, rest @ ..] = data else { return };
    let (knobs, more) = (*knobs, *more);
    let Ok(path) = std::str::from_utf8(rest) else { return };
    let backslash = [Backslash::Slash, Backslash::Keep, Backslash::Reject];
    let mut policy = PathPolicy {
        merge_slashes: knobs & 1 == 0,
        encoded_slash: [EncodedSlash::Decode, EncodedSlash::Keep, EncodedSlash::Reject][(knobs >> 1 & 3) as usize % 3],
        backslash: backslash[(knobs >> 3 & 3) as usize % 3],
        encoded_backslash: backslash[(more & 3) as usize % 3],
        semicolon: [Semicolon::Keep, Semicolon::Strip, Semicolon::Reject][(knobs >> 5 & 3) as usize % 3],
        control: [Control::Keep, Control::Reject, Control::Truncate][(more >> 2 & 3) as usize % 3],
        invalid_utf8: if knobs & 0x80 == 0 { InvalidUtf8::Reject } else { InvalidUtf8::Keep },
    };
    if !policy.is_coherent() {
        policy.encoded_backslash = Backslash::Keep;
    }
    for p in [policy, PathPolicy::default(), PathPolicy::STRICT, PathPolicy::ROUTING] {
        if let Err(e) = check_invariants(path, &p) {
            panic!("{p:?}: {e}");
        }
    }
});
