//! Fuzz the HTTP/1 framing shared by the server side and the upstream client: finding the end
//! of a head, and decoding bodies (length, chunked, until close) fed in arbitrary pieces.
//! Invariants: no panic; the decoder never yields more bytes than it was given; a length body
//! yields exactly its length or waits for more; the incremental head search agrees with a
//! search over the whole buffer.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use palisade_proxy::codec::{self, BodyState, Chunk};

fuzz_target!(|data: &[u8]| {
    if data.len() < 3 {
        return;
    }
    let mode = data[0] % 3;
    let step = (data[1] as usize % 64) + 1;
    let input = &data[2..];

    // Head search: incremental over growing prefixes == one search over the whole.
    let mut scanned = 0;
    let mut incremental = None;
    for end in (step..=input.len()).step_by(step).chain(std::iter::once(input.len())) {
        if let Some(e) = codec::find_head_end(&input[..end], &mut scanned) {
            incremental = Some(e);
            break;
        }
    }
    let mut s2 = 0;
    let whole = codec::find_head_end(input, &mut s2);
    assert_eq!(incremental.is_some(), whole.is_some());
    let _ = codec::crlf_only(input);

    // Body decoding, fed `step` bytes at a time.
    let mut state = match mode {
        0 => BodyState::Chunked(Chunk::Size),
        1 => BodyState::Length(u64::from(data[1]) * 7),
        _ => BodyState::UntilClose,
    };
    let declared = if let BodyState::Length(n) = state { Some(n) } else { None };
    let mut rbuf = BytesMut::new();
    let mut fed = 0usize;
    let mut out = 0usize;
    for chunk in input.chunks(step) {
        rbuf.extend_from_slice(chunk);
        fed += chunk.len();
        loop {
            match codec::decode(&mut state, &mut rbuf) {
                Ok(Some(Some(d))) => {
                    out += d.len();
                    assert!(out <= fed, "decoded more than was fed");
                }
                Ok(Some(None)) => break,
                Ok(None) => break,
                Err(_) => return,
            }
        }
        if state == BodyState::Done {
            break;
        }
    }
    if let (Some(n), BodyState::Done) = (declared, state) {
        assert_eq!(out as u64, n);
    }
});
