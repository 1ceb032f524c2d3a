//! The frames as they pass: [`Pump`] reads frame headers (payloads copied through untouched,
//! the client's text messages under inspection held until complete), checks them against the
//! limits and RFC 6455, and names the close code of a fault ([`Violation`]); [`close_frame`]
//! writes Palisade's own close frames.

use std::borrow::Cow;
use std::io::Cursor;

use bytes::{Bytes, BytesMut};
use tungstenite::protocol::frame::coding::{Control, Data, OpCode};
use tungstenite::protocol::frame::FrameHeader;

use super::random;

/// Why a connection is closed by Palisade: the close code and the close frame's reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    pub code: u16,
    pub reason: Cow<'static, str>,
}

pub(super) fn violation(code: u16, reason: impl Into<Cow<'static, str>>) -> Violation {
    Violation { code, reason: reason.into() }
}

/// What [`Pump::parse`] stopped at.
#[derive(Debug, PartialEq, Eq)]
pub enum Parsed {
    /// Everything buffered is parsed.
    NeedMore,
    /// The bytes ready to go must be written before the next frame can be held.
    Flush,
    /// A held text message is complete: [`Pump::held_text`] is to be judged, then
    /// [`Pump::release`]d.
    Judge,
}

/// One direction of the relay: reads frame headers as bytes pass and checks them; payloads are
/// copied through untouched, except the client's text messages under inspection, held (masked,
/// as they will be sent) and unmasked into a copy to judge.
pub struct Pump {
    from_client: bool,
    hold_text: bool,
    rsv_ok: bool,
    max_message: u64,
    /// Read, not yet written; its first `ready` bytes are parsed and may go out.
    pub rbuf: BytesMut,
    pub ready: usize,
    /// A judged message to write before `rbuf`.
    pub first: Bytes,
    /// Payload bytes of the current frame not yet parsed.
    left: u64,
    fin: bool,
    holding: bool,
    mask: [u8; 4],
    mask_off: usize,
    /// The data message in progress: whether it is held.
    in_msg: Option<bool>,
    msg_len: u64,
    hold_raw: BytesMut,
    hold_payload: Vec<u8>,
    pub close_seen: bool,
    pub messages: u64,
    /// Bytes read.
    pub bytes: u64,
    /// The reader ended and the writer was shut down.
    pub done: bool,
}

impl Pump {
    pub fn new(from_client: bool, hold_text: bool, rsv_ok: bool, max_message: u64, rbuf: BytesMut) -> Pump {
        Pump {
            from_client,
            hold_text,
            rsv_ok,
            max_message,
            rbuf,
            ready: 0,
            first: Bytes::new(),
            left: 0,
            fin: false,
            holding: false,
            mask: [0; 4],
            mask_off: 0,
            in_msg: None,
            msg_len: 0,
            hold_raw: BytesMut::new(),
            hold_payload: Vec::new(),
            close_seen: false,
            messages: 0,
            bytes: 0,
            done: false,
        }
    }

    /// Whether a frame of Palisade's own may be written to where this pump writes: no frame is
    /// half written there.
    pub fn at_boundary(&self) -> bool {
        self.first.is_empty() && self.ready == 0 && (self.left == 0 || self.holding)
    }

    /// The held text message, once [`Parsed::Judge`] was returned (valid UTF-8).
    pub fn held_text(&self) -> &str {
        std::str::from_utf8(&self.hold_payload).unwrap_or("")
    }

    /// The held message may go: it is written before anything read after it.
    pub fn release(&mut self) {
        self.first = self.hold_raw.split().freeze();
        self.hold_payload.clear();
    }

    /// Parse what is buffered (see [`Parsed`]).
    pub fn parse(&mut self) -> Result<Parsed, Violation> {
        loop {
            let avail = self.rbuf.len() - self.ready;
            if self.left > 0 {
                if avail == 0 {
                    return Ok(Parsed::NeedMore);
                }
                let n = (self.left.min(avail as u64)) as usize;
                if self.holding {
                    if self.ready > 0 {
                        return Ok(Parsed::Flush);
                    }
                    let chunk = self.rbuf.split_to(n);
                    let start = self.hold_payload.len();
                    self.hold_payload.extend_from_slice(&chunk);
                    for (i, b) in self.hold_payload[start..].iter_mut().enumerate() {
                        *b ^= self.mask[(self.mask_off + i) & 3];
                    }
                    self.mask_off += n;
                    self.hold_raw.extend_from_slice(&chunk);
                } else {
                    self.ready += n;
                }
                self.left -= n as u64;
                if self.left == 0 && self.frame_done()? {
                    return Ok(Parsed::Judge);
                }
                continue;
            }
            if avail == 0 {
                return Ok(Parsed::NeedMore);
            }
            let mut cur = Cursor::new(&self.rbuf[self.ready..]);
            let (h, len) = match FrameHeader::parse(&mut cur) {
                Ok(Some(x)) => x,
                Ok(None) => return Ok(Parsed::NeedMore),
                Err(_) => return Err(violation(1002, "malformed frame header")),
            };
            let hlen = cur.position() as usize;
            if len > i64::MAX as u64 {
                return Err(violation(1002, "frame length with its most significant bit set"));
            }
            if self.from_client != h.mask.is_some() {
                return Err(violation(1002, if self.from_client { "unmasked client frame" } else { "masked server frame" }));
            }
            if (h.rsv1 && !self.rsv_ok) || h.rsv2 || h.rsv3 {
                return Err(violation(1002, "reserved bits set"));
            }
            if self.close_seen {
                return Err(violation(1002, "frame after close"));
            }
            match h.opcode {
                OpCode::Control(c) => {
                    if matches!(c, Control::Reserved(_)) {
                        return Err(violation(1002, "reserved opcode"));
                    }
                    if !h.is_final || len > 125 {
                        return Err(violation(1002, "fragmented or oversized control frame"));
                    }
                    if avail < hlen + len as usize {
                        return Ok(Parsed::NeedMore);
                    }
                    if c == Control::Close {
                        let mut payload = self.rbuf[self.ready + hlen..self.ready + hlen + len as usize].to_vec();
                        if let Some(m) = h.mask {
                            for (i, b) in payload.iter_mut().enumerate() {
                                *b ^= m[i & 3];
                            }
                        }
                        check_close(&payload)?;
                        self.close_seen = true;
                    }
                    self.ready += hlen + len as usize;
                }
                OpCode::Data(d) => {
                    let held = match (d, self.in_msg) {
                        (Data::Reserved(_), _) => return Err(violation(1002, "reserved opcode")),
                        (Data::Continue, None) => return Err(violation(1002, "continuation without a message")),
                        (Data::Continue, Some(held)) => held,
                        (_, Some(_)) => return Err(violation(1002, "new message inside a fragmented one")),
                        (Data::Text, None) => self.hold_text,
                        (Data::Binary, None) => false,
                    };
                    if self.msg_len.saturating_add(len) > self.max_message {
                        return Err(violation(1009, "message too big"));
                    }
                    if held && self.ready > 0 {
                        return Ok(Parsed::Flush);
                    }
                    self.in_msg = Some(held);
                    self.msg_len += len;
                    self.holding = held;
                    self.fin = h.is_final;
                    self.left = len;
                    if held {
                        self.hold_raw.extend_from_slice(&self.rbuf.split_to(hlen));
                        self.mask = h.mask.unwrap_or([0; 4]);
                        self.mask_off = 0;
                    } else {
                        self.ready += hlen;
                    }
                    if len == 0 && self.frame_done()? {
                        return Ok(Parsed::Judge);
                    }
                }
            }
        }
    }

    /// The current data frame is complete; true when a held message is complete (to judge).
    fn frame_done(&mut self) -> Result<bool, Violation> {
        self.holding = false;
        if !self.fin {
            return Ok(false);
        }
        let held = self.in_msg.take() == Some(true);
        self.msg_len = 0;
        self.messages += 1;
        if held {
            if std::str::from_utf8(&self.hold_payload).is_err() {
                return Err(violation(1007, "text message is not UTF-8"));
            }
            return Ok(true);
        }
        Ok(false)
    }
}

/// A close frame's payload: empty, or a valid code and a UTF-8 reason (RFC 6455 §7.4).
fn check_close(payload: &[u8]) -> Result<(), Violation> {
    match payload.len() {
        0 => Ok(()),
        1 => Err(violation(1002, "close frame with a one-byte payload")),
        _ => {
            let code = u16::from_be_bytes([payload[0], payload[1]]);
            let valid = matches!(code, 1000..=1003 | 1007..=1011 | 1012..=1014 | 3000..=4999);
            if !valid {
                return Err(violation(1002, "invalid close code"));
            }
            std::str::from_utf8(&payload[2..]).map(|_| ()).map_err(|_| violation(1007, "close reason is not UTF-8"))
        }
    }
}

/// A close frame with `code` and `reason`, masked when it goes to the upstream.
pub fn close_frame(code: u16, reason: &str, masked: bool) -> Vec<u8> {
    let reason = &reason.as_bytes()[..reason.len().min(120)];
    let mut payload = code.to_be_bytes().to_vec();
    payload.extend_from_slice(reason);
    let mut out = vec![0x88, payload.len() as u8];
    if masked {
        out[1] |= 0x80;
        let m = random::<4>();
        out.extend_from_slice(&m);
        for (i, b) in payload.iter_mut().enumerate() {
            *b ^= m[i & 3];
        }
    }
    out.extend_from_slice(&payload);
    out
}
