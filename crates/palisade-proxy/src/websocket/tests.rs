use super::*;
use bytes::{Buf, BytesMut};
use http::{HeaderName, HeaderValue};

fn frame(fin: bool, opcode: u8, payload: &[u8], mask: Option<[u8; 4]>) -> Vec<u8> {
    let mut out = vec![(if fin { 0x80 } else { 0 }) | opcode];
    let m = if mask.is_some() { 0x80 } else { 0 };
    match payload.len() {
        n if n < 126 => out.push(m | n as u8),
        n if n < 65536 => {
            out.push(m | 126);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            out.push(m | 127);
            out.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    let mut p = payload.to_vec();
    if let Some(k) = mask {
        out.extend_from_slice(&k);
        for (i, b) in p.iter_mut().enumerate() {
            *b ^= k[i % 4];
        }
    }
    out.extend_from_slice(&p);
    out
}

const K: Option<[u8; 4]> = Some([1, 2, 3, 4]);

/// Feed `bytes` in pieces of `step`, releasing held messages; returns what would be
/// written and the judged texts.
fn run(p: &mut Pump, bytes: &[u8], step: usize) -> Result<(Vec<u8>, Vec<String>), Violation> {
    let mut out = Vec::new();
    let mut judged = Vec::new();
    for piece in bytes.chunks(step.max(1)) {
        p.rbuf.extend_from_slice(piece);
        loop {
            out.extend_from_slice(&p.first);
            p.first.clear();
            out.extend_from_slice(&p.rbuf[..p.ready]);
            p.rbuf.advance(p.ready);
            p.ready = 0;
            match p.parse()? {
                Parsed::Judge => {
                    judged.push(p.held_text().to_string());
                    p.release();
                }
                Parsed::Flush => {}
                Parsed::NeedMore => {
                    if p.ready == 0 && p.first.is_empty() {
                        break;
                    }
                }
            }
        }
    }
    Ok((out, judged))
}

#[test]
fn accept_key_is_the_rfc_example() {
    // RFC 6455 §1.3.
    assert_eq!(accept_key(b"dGhlIHNhbXBsZSBub25jZQ=="), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
    assert_eq!(base64(b""), "");
    assert_eq!(base64(b"f"), "Zg==");
    assert_eq!(base64(b"fo"), "Zm8=");
    assert_eq!(base64(b"foobar"), "Zm9vYmFy");
}

#[test]
fn frames_pass_unchanged_in_any_split_and_held_text_is_reassembled() {
    let mut stream = Vec::new();
    stream.extend(frame(true, 2, &[0xff; 300], K));
    stream.extend(frame(false, 1, b"hel", K));
    stream.extend(frame(true, 9, b"ping", K)); // a control frame between fragments
    stream.extend(frame(false, 0, b"lo ", K));
    stream.extend(frame(true, 0, "wörld".as_bytes(), K));
    stream.extend(frame(true, 1, b"", K));
    stream.extend(frame(true, 8, &[0x03, 0xe8], K));
    for step in [1, 2, 3, 7, 64, 1000, stream.len()] {
        let mut p = Pump::new(true, true, false, 1024, BytesMut::new());
        let (out, judged) = run(&mut p, &stream, step).unwrap();
        assert_eq!(judged, ["hello wörld", ""], "step {step}");
        assert_eq!(out.len(), stream.len(), "step {step}");
        assert_eq!(p.messages, 3);
        assert!(p.close_seen);
        // Not inspecting: the bytes go out exactly as they came.
        let mut p = Pump::new(true, false, false, 1024, BytesMut::new());
        let (out, judged) = run(&mut p, &stream, step).unwrap();
        assert!(judged.is_empty());
        assert_eq!(out, stream, "step {step}");
    }
}

#[test]
fn violations_get_their_close_codes() {
    let cases: Vec<(Vec<u8>, bool, u16)> = vec![
        (frame(true, 1, b"hi", None), true, 1002),                                            // unmasked from the client
        (frame(true, 1, b"hi", K), false, 1002),                                              // masked from the server
        (frame(true, 3, b"hi", K), true, 1002),                                               // reserved opcode
        (frame(true, 0, b"hi", K), true, 1002),                                               // continuation of nothing
        (frame(false, 9, b"hi", K), true, 1002),                                              // fragmented control frame
        (frame(true, 9, &[0; 126], K), true, 1002),                                           // oversized control frame
        ([frame(false, 1, b"a", K), frame(true, 1, b"b", K)].concat(), true, 1002),           // message inside a message
        (frame(true, 8, &[0x03], K), true, 1002),                                             // one-byte close
        (frame(true, 8, &[0x03, 0xed], K), true, 1002),                                       // close code 1005 is not sent
        (frame(true, 1, &[0xc3, 0x28], K), true, 1007),                                       // text not UTF-8 (inspected)
        (frame(true, 2, &[0; 2000], K), true, 1009),                                          // too big
        ([frame(false, 2, &[0; 600], K), frame(true, 0, &[0; 600], K)].concat(), true, 1009), // too big in fragments
        ([frame(true, 8, b"", K), frame(true, 1, b"x", K)].concat(), true, 1002),             // after close
        ([0xc1, 0x82, 1, 2, 3, 4, 0, 0].to_vec(), true, 1002),                                // RSV1 without an extension
        ([0x82, 0xff, 0x80, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4].to_vec(), true, 1002),           // 64-bit length with its top bit
    ];
    for (bytes, from_client, want) in cases {
        let mut p = Pump::new(from_client, true, false, 1024, BytesMut::new());
        let got = run(&mut p, &bytes, 1).map(|_| ()).expect_err(&format!("{bytes:02x?}"));
        assert_eq!(got.code, want, "{bytes:02x?}: {got:?}");
    }
    // With an extension negotiated RSV1 is its business.
    let mut p = Pump::new(true, false, true, 1024, BytesMut::new());
    assert!(run(&mut p, &[0xc1, 0x82, 1, 2, 3, 4, 0, 0], 3).is_ok());
}

#[test]
fn close_frames_are_valid_frames() {
    let f = close_frame(1008, "message blocked", false);
    let mut p = Pump::new(false, false, false, 1024, BytesMut::from(&f[..]));
    assert_eq!(p.parse(), Ok(Parsed::NeedMore));
    assert!(p.close_seen && p.ready == f.len());
    let f = close_frame(1009, "message too big", true);
    let mut p = Pump::new(true, false, false, 1024, BytesMut::from(&f[..]));
    assert_eq!(p.parse(), Ok(Parsed::NeedMore));
    assert!(p.close_seen);
}

#[test]
fn upgrade_requests_are_told_apart() {
    let req = |m: Method, v: Version, h: &[(&str, &str)]| {
        let mut r = Request::new(ClientBody::Empty);
        *r.method_mut() = m;
        *r.version_mut() = v;
        for (n, val) in h {
            r.headers_mut().append(HeaderName::from_bytes(n.as_bytes()).unwrap(), HeaderValue::from_str(val).unwrap());
        }
        r
    };
    let ws = [("connection", "keep-alive, Upgrade"), ("upgrade", "WebSocket")];
    assert!(matches!(detect(&mut req(Method::GET, Version::HTTP_11, &ws), None), Some(Kind::H1)));
    assert!(detect(&mut req(Method::POST, Version::HTTP_11, &ws), None).is_none());
    assert!(detect(&mut req(Method::GET, Version::HTTP_10, &ws), None).is_none());
    assert!(detect(&mut req(Method::GET, Version::HTTP_11, &[("upgrade", "websocket")]), None).is_none());
    assert!(detect(&mut req(Method::GET, Version::HTTP_11, &[("connection", "upgrade"), ("upgrade", "h2c")]), None).is_none());
    assert!(detect(&mut req(Method::CONNECT, Version::HTTP_2, &[]), None).is_none(), "a CONNECT without :protocol");
}
