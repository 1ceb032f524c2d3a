//! The WebSocket relay's frame reader (`palisade_proxy::websocket::Pump`): any bytes, fed in
//! pieces of any size, either direction, with or without held text messages. It must never
//! panic nor let through more than it was given, and without holding, what it lets through
//! is exactly a prefix of its input (held messages go out once judged, after the control
//! frames that arrived between their fragments).
#![no_main]

use bytes::{Buf, BytesMut};
use libfuzzer_sys::fuzz_target;
use palisade_proxy::websocket::{Parsed, Pump};

fuzz_target!(|data: &[u8]| {
    let Some((&flags, input)) = data.split_first() else { return };
    let from_client = flags & 1 != 0;
    let hold = flags & 2 != 0;
    let rsv_ok = flags & 4 != 0;
    let step = usize::from(flags >> 3) + 1;
    let max_message = if flags & 0x80 != 0 { 64 } else { 1 << 20 };
    let mut p = Pump::new(from_client, hold, rsv_ok, max_message, BytesMut::new());
    let mut out = Vec::new();
    let mut fed = 0usize;
    'feed: for piece in input.chunks(step) {
        p.rbuf.extend_from_slice(piece);
        fed += piece.len();
        loop {
            out.extend_from_slice(&p.first);
            p.first.clear();
            out.extend_from_slice(&p.rbuf[..p.ready]);
            p.rbuf.advance(p.ready);
            p.ready = 0;
            match p.parse() {
                Ok(Parsed::Judge) => {
                    assert!(std::str::from_utf8(p.held_text().as_bytes()).is_ok());
                    p.release();
                }
                Ok(Parsed::Flush) => assert!(p.ready > 0, "a flush with nothing to write"),
                Ok(Parsed::NeedMore) => {
                    if p.ready == 0 && p.first.is_empty() {
                        break;
                    }
                }
                Err(v) => {
                    assert!(matches!(v.code, 1002 | 1007 | 1009), "{v:?}");
                    break 'feed;
                }
            }
        }
    }
    assert!(out.len() <= fed);
    if !hold {
        assert_eq!(&out[..], &input[..out.len()], "frames go out unchanged and in order");
    }
});
