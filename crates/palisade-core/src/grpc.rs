//! gRPC messages: the length-prefixed framing of a gRPC body (`grpc/PROTOCOL-HTTP2.md`: a
//! compressed flag byte, a 4-byte big-endian length, the message) and a scan of the protobuf
//! wire format that finds the strings a message carries, located by their field-number path
//! (`grpc.1.3.2`), or by field name (`grpc.user.name`) when the message's type is known from a
//! descriptor set ([`descriptor`]). Pure functions, no I/O: the proxy feeds them the bytes it
//! relays and hands the values to detection as [`crate::ProtocolValues`].

use crate::ProtocolValue;

pub mod descriptor;

use descriptor::{Descriptors, FieldKind, MsgId};

/// Length of a message's prefix: the compressed flag and the big-endian length.
pub const HEADER_LEN: usize = 5;

/// Why a gRPC body is not a sequence of well-formed messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameError {
    /// The flag byte is neither 0 (plain) nor 1 (compressed).
    BadFlag(u8),
    /// A message declares more bytes than the limit allows.
    TooLarge { declared: u64, limit: u64 },
    /// The body ended inside a message's prefix or payload.
    Truncated { missing: u64 },
}

impl FrameError {
    /// A stable reason code (`grpc.frame_flag`, `grpc.message_too_large`, `grpc.frame_truncated`).
    pub fn code(&self) -> &'static str {
        match self {
            FrameError::BadFlag(_) => "grpc.frame_flag",
            FrameError::TooLarge { .. } => "grpc.message_too_large",
            FrameError::Truncated { .. } => "grpc.frame_truncated",
        }
    }
}

impl std::fmt::Display for FrameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FrameError::BadFlag(b) => write!(f, "invalid compressed flag {b} in a gRPC message prefix"),
            FrameError::TooLarge { declared, limit } => write!(f, "gRPC message of {declared} bytes is larger than the limit of {limit}"),
            FrameError::Truncated { missing } => write!(f, "the body ends {missing} bytes short of the end of a gRPC message"),
        }
    }
}

impl std::error::Error for FrameError {}

/// A message prefix: whether the message is compressed, and its length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub compressed: bool,
    pub len: u32,
}

/// Parse a message prefix (the first [`HEADER_LEN`] bytes of `b`; `None` when there are fewer).
pub fn header(b: &[u8]) -> Option<Result<Header, FrameError>> {
    let h: &[u8; HEADER_LEN] = b.get(..HEADER_LEN)?.try_into().ok()?;
    let len = u32::from_be_bytes([h[1], h[2], h[3], h[4]]);
    Some(match h[0] {
        0 => Ok(Header { compressed: false, len }),
        1 => Ok(Header { compressed: true, len }),
        f => Err(FrameError::BadFlag(f)),
    })
}

/// One message of a whole gRPC body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Message<'a> {
    pub compressed: bool,
    pub payload: &'a [u8],
}

/// Split a whole body into its messages, each at most `limit` bytes.
pub fn split(body: &[u8], limit: u64) -> Result<Vec<Message<'_>>, FrameError> {
    let mut out = Vec::new();
    let mut rest = body;
    while !rest.is_empty() {
        let h = match header(rest) {
            None => return Err(FrameError::Truncated { missing: (HEADER_LEN - rest.len()) as u64 }),
            Some(h) => h?,
        };
        if u64::from(h.len) > limit {
            return Err(FrameError::TooLarge { declared: u64::from(h.len), limit });
        }
        let end = HEADER_LEN + h.len as usize;
        if rest.len() < end {
            return Err(FrameError::Truncated { missing: (end - rest.len()) as u64 });
        }
        out.push(Message { compressed: h.compressed, payload: &rest[HEADER_LEN..end] });
        rest = &rest[end..];
    }
    Ok(out)
}

/// Bounds of the protobuf scan.
#[derive(Clone, Copy, Debug)]
pub struct ScanLimits {
    /// Nested messages tried this deep at most (the top-level message is depth 1).
    pub max_depth: usize,
    /// Fields read in all, across nesting levels: beyond, the scan stops.
    pub max_fields: usize,
    /// Values returned at most.
    pub max_values: usize,
}

impl Default for ScanLimits {
    fn default() -> Self {
        ScanLimits { max_depth: 16, max_fields: 10_000, max_values: 1_000 }
    }
}

/// What a scan found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Scan {
    /// The strings, located `grpc.<field>.<field>...`.
    pub values: Vec<ProtocolValue>,
    /// A bound of [`ScanLimits`] was reached: the rest of the message was not scanned.
    pub truncated: bool,
    /// The message is not in the protobuf wire format (then, when it is text, it is one value
    /// located `grpc`: a JSON-encoded message, say).
    pub not_protobuf: bool,
}

/// Scan one message for strings without its descriptor. Every length-delimited field is read
/// as a string when it is text (valid UTF-8 without control characters other than tab, CR and
/// LF), and is also tried as a nested message (it may be both: the bytes of a small message
/// can be text); bytes that are neither are skipped.
pub fn scan(msg: &[u8], limits: &ScanLimits) -> Scan {
    scan_as(msg, limits, None)
}

/// Scan one message, of type `ty` of a descriptor set when known: then its fields are located
/// by name (`grpc.user.name`), a `string` field is a value whatever bytes it holds, fields of
/// numeric types are not read as text, and a `map` field's values are located by their keys.
/// Fields the type does not declare (a newer client, say) are read as without a descriptor.
pub fn scan_as(msg: &[u8], limits: &ScanLimits, ty: Option<(&Descriptors, MsgId)>) -> Scan {
    let mut s = Scanner { limits, fields: 0, out: Scan::default(), path: String::from("grpc") };
    if msg.is_empty() {
        return s.out;
    }
    if parse(msg, usize::MAX).is_some() {
        match ty {
            Some((d, id)) => s.walk_typed(msg, 1, d, id),
            None => s.walk(msg, 1),
        }
    } else {
        s.out.not_protobuf = true;
        if let Some(t) = text(msg) {
            s.push(t.to_string());
        }
    }
    s.out
}

struct Scanner<'l> {
    limits: &'l ScanLimits,
    fields: usize,
    out: Scan,
    path: String,
}

impl Scanner<'_> {
    fn push(&mut self, value: String) {
        if self.out.values.len() >= self.limits.max_values {
            self.out.truncated = true;
            return;
        }
        self.out.values.push(ProtocolValue { location: self.path.clone(), value, key: false });
    }

    /// Walk a message already known to parse, without its type.
    fn walk(&mut self, msg: &[u8], depth: usize) {
        let mut r = Reader { b: msg, at: 0 };
        while let Some(Ok((field, wire))) = r.field() {
            if !self.count_field() {
                return;
            }
            let Wire::Len(bytes) = wire else { continue };
            let mark = self.path.len();
            self.path.push('.');
            self.path.push_str(itoa(field, &mut [0u8; 10]));
            self.untyped(bytes, depth);
            self.path.truncate(mark);
            if self.full() {
                return;
            }
        }
    }

    /// One more field read; `false` (and the scan marked truncated) beyond the bound.
    fn count_field(&mut self) -> bool {
        self.fields += 1;
        if self.fields > self.limits.max_fields {
            self.out.truncated = true;
            return false;
        }
        true
    }

    /// A bound was reached: nothing more is read.
    fn full(&self) -> bool {
        self.out.truncated && (self.fields > self.limits.max_fields || self.out.values.len() >= self.limits.max_values)
    }

    /// A length-delimited value of unknown type at the current path (in a message at `depth`):
    /// a string when it is text, and also tried as a nested message.
    fn untyped(&mut self, bytes: &[u8], depth: usize) {
        if let Some(t) = text(bytes) {
            self.push(t.to_string());
        }
        if depth < self.limits.max_depth && !bytes.is_empty() && parse(bytes, usize::MAX).is_some() {
            self.walk(bytes, depth + 1);
        } else if depth >= self.limits.max_depth && text(bytes).is_none() && parse(bytes, 1).is_some() {
            // A binary field that may be a message nested deeper than the bound.
            self.out.truncated = true;
        }
    }

    /// Walk a message of type `id`, already known to parse: its fields located by name. A
    /// field the type does not declare is read as without a descriptor (located by number).
    fn walk_typed(&mut self, msg: &[u8], depth: usize, d: &Descriptors, id: MsgId) {
        let m = d.message(id);
        let mut r = Reader { b: msg, at: 0 };
        while let Some(Ok((number, wire))) = r.field() {
            if !self.count_field() {
                return;
            }
            let Wire::Len(bytes) = wire else { continue };
            let mark = self.path.len();
            self.path.push('.');
            match m.field(number) {
                None => {
                    self.path.push_str(itoa(number, &mut [0u8; 10]));
                    self.untyped(bytes, depth);
                }
                Some(f) => {
                    self.path.push_str(&f.name);
                    self.typed(bytes, depth, d, f.kind);
                }
            }
            self.path.truncate(mark);
            if self.full() {
                return;
            }
        }
    }

    /// A length-delimited value of a declared type at the current path.
    fn typed(&mut self, bytes: &[u8], depth: usize, d: &Descriptors, kind: FieldKind) {
        match kind {
            // A string field is text whatever it holds (invalid UTF-8 replaced).
            FieldKind::String if !bytes.is_empty() => self.push(String::from_utf8_lossy(bytes).into_owned()),
            FieldKind::String | FieldKind::Other => {}
            FieldKind::Bytes => self.untyped(bytes, depth),
            FieldKind::Message(_) if bytes.is_empty() => {}
            FieldKind::Message(sub) => {
                if parse(bytes, usize::MAX).is_none() {
                    // Not a message at all: judged like bytes of unknown type.
                    self.untyped(bytes, depth);
                } else if depth >= self.limits.max_depth {
                    self.out.truncated = true;
                } else if d.message(sub).map_entry {
                    self.map_entry(bytes, depth + 1, d, sub);
                } else {
                    self.walk_typed(bytes, depth + 1, d, sub);
                }
            }
        }
    }

    /// An entry of a `map<K, V>` field: the value located by its key (`grpc.labels.env`), the
    /// key judged too (as a key), as JSON objects are.
    fn map_entry(&mut self, entry: &[u8], depth: usize, d: &Descriptors, id: MsgId) {
        let m = d.message(id);
        let (mut key, mut value) = (None, None);
        let mut r = Reader { b: entry, at: 0 };
        while let Some(Ok((number, wire))) = r.field() {
            if !self.count_field() {
                return;
            }
            match (number, wire) {
                (1, Wire::Len(b)) => key = Some(String::from_utf8_lossy(b).into_owned()),
                (1, Wire::Varint(v)) => key = Some(v.to_string()),
                (2, Wire::Len(b)) => value = Some(b),
                _ => {}
            }
        }
        let Some(key) = key else {
            // No usable key: the entry as a plain message.
            self.walk_typed(entry, depth, d, id);
            return;
        };
        let mark = self.path.len();
        self.path.push('.');
        self.path.push_str(&key);
        if self.out.values.len() < self.limits.max_values {
            self.out.values.push(ProtocolValue { location: self.path.clone(), value: key, key: true });
        } else {
            self.out.truncated = true;
        }
        if let (Some(v), Some(f)) = (value, m.field(2)) {
            self.typed(v, depth, d, f.kind);
        }
        self.path.truncate(mark);
    }
}

fn itoa(mut n: u32, buf: &mut [u8; 10]) -> &str {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    std::str::from_utf8(&buf[i..]).unwrap_or("0")
}

/// `b` as text: valid UTF-8 with no control character but tab, LF and CR.
fn text(b: &[u8]) -> Option<&str> {
    let s = std::str::from_utf8(b).ok()?;
    (!s.is_empty() && !s.chars().any(|c| c.is_control() && !matches!(c, '\t' | '\n' | '\r'))).then_some(s)
}

/// Whether `b` is a whole message in the wire format with at least one field (reading at most
/// `budget` fields); `Some(number of fields)`.
fn parse(b: &[u8], budget: usize) -> Option<usize> {
    let mut r = Reader { b, at: 0 };
    let mut n = 0;
    loop {
        match r.field() {
            None => return (n > 0).then_some(n),
            Some(Err(())) => return None,
            Some(Ok(_)) => {
                n += 1;
                if n > budget {
                    return None;
                }
            }
        }
    }
}

enum Wire<'a> {
    Varint(u64),
    Fixed,
    Len(&'a [u8]),
}

struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn varint(&mut self) -> Option<u64> {
        let mut v: u64 = 0;
        for i in 0..10 {
            let byte = *self.b.get(self.at)?;
            self.at += 1;
            if i == 9 && byte > 1 {
                return None; // more than 64 bits
            }
            v |= u64::from(byte & 0x7f) << (7 * i);
            if byte & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    }

    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.at.checked_add(n)?;
        let s = self.b.get(self.at..end)?;
        self.at = end;
        Some(s)
    }

    /// The next field: `None` at the end, `Err` on bytes that are not the wire format (groups,
    /// which proto3 does not have, are refused as well).
    fn field(&mut self) -> Option<Result<(u32, Wire<'a>), ()>> {
        if self.at >= self.b.len() {
            return None;
        }
        let Some(tag) = self.varint() else { return Some(Err(())) };
        let field = tag >> 3;
        if field == 0 || field > (1 << 29) - 1 {
            return Some(Err(()));
        }
        let wire = match tag & 7 {
            0 => self.varint().map(Wire::Varint),
            1 => self.take(8).map(|_| Wire::Fixed),
            2 => self.varint().and_then(|n| usize::try_from(n).ok()).and_then(|n| self.take(n)).map(Wire::Len),
            5 => self.take(4).map(|_| Wire::Fixed),
            _ => None,
        };
        Some(wire.map(|w| (field as u32, w)).ok_or(()))
    }
}

/// Percent-encode a `grpc-message` value as the gRPC HTTP/2 protocol asks: bytes outside
/// printable ASCII (0x20..=0x7E) and `%` itself as `%XX`.
pub fn percent_encode_message(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if (0x20..=0x7e).contains(&b) && b != b'%' {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn varint(mut v: u64, out: &mut Vec<u8>) {
        loop {
            let b = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                out.push(b);
                return;
            }
            out.push(b | 0x80);
        }
    }

    fn len_field(field: u32, bytes: &[u8], out: &mut Vec<u8>) {
        varint(u64::from(field) << 3 | 2, out);
        varint(bytes.len() as u64, out);
        out.extend_from_slice(bytes);
    }

    fn frame(compressed: bool, payload: &[u8]) -> Vec<u8> {
        let mut f = vec![u8::from(compressed)];
        f.extend_from_slice(&(payload.len() as u32).to_be_bytes());
        f.extend_from_slice(payload);
        f
    }

    fn values(s: &Scan) -> Vec<(&str, &str)> {
        s.values.iter().map(|v| (v.location.as_str(), v.value.as_str())).collect()
    }

    #[test]
    fn frames_split_and_every_malformation_is_named() {
        let mut body = frame(false, b"ab");
        body.extend(frame(true, b""));
        body.extend(frame(false, b"xyz"));
        let m = split(&body, 10).unwrap();
        assert_eq!(m.iter().map(|m| (m.compressed, m.payload)).collect::<Vec<_>>(), [(false, &b"ab"[..]), (true, b""), (false, b"xyz")]);
        assert_eq!(split(&body[..body.len() - 1], 10), Err(FrameError::Truncated { missing: 1 }));
        assert_eq!(split(&body[..3], 10), Err(FrameError::Truncated { missing: 2 }));
        assert_eq!(split(&body, 2), Err(FrameError::TooLarge { declared: 3, limit: 2 }));
        assert_eq!(split(&[2, 0, 0, 0, 0], 10), Err(FrameError::BadFlag(2)));
        // A length that claims more than the body holds.
        assert_eq!(split(&[0, 0, 0, 1, 0, b'a'], 1 << 20), Err(FrameError::Truncated { missing: 255 }));
        assert_eq!(split(b"", 0), Ok(Vec::new()));
        assert_eq!(FrameError::BadFlag(2).code(), "grpc.frame_flag");
    }

    #[test]
    fn strings_are_located_by_field_path_through_nested_messages() {
        // message { 1: "alice", 2: 42 (varint), 3: { 1: "x' OR 1=1 --", 5: fixed32 }, 4: fixed64, 3: { 1: "second" } }
        let mut inner = Vec::new();
        len_field(1, b"x' OR 1=1 --", &mut inner);
        inner.extend_from_slice(&[(5 << 3) | 5, 1, 2, 3, 4]);
        let mut inner2 = Vec::new();
        len_field(1, b"second", &mut inner2);
        let mut msg = Vec::new();
        len_field(1, "alice é".as_bytes(), &mut msg);
        msg.extend_from_slice(&[2 << 3, 0xac, 0x02]);
        len_field(3, &inner, &mut msg);
        msg.push((4 << 3) | 1);
        msg.extend_from_slice(&[0; 8]);
        len_field(3, &inner2, &mut msg);
        let s = scan(&msg, &ScanLimits::default());
        assert!(!s.truncated && !s.not_protobuf);
        assert_eq!(values(&s), [("grpc.1", "alice é"), ("grpc.3.1", "x' OR 1=1 --"), ("grpc.3.1", "second")]);
    }

    #[test]
    fn a_text_field_that_also_parses_as_a_message_is_judged_both_ways() {
        // "\n <32 bytes>" is text and also a message {1: <32 bytes>}.
        let payload = "A".repeat(32);
        let mut nested = Vec::new();
        len_field(1, payload.as_bytes(), &mut nested);
        let mut msg = Vec::new();
        len_field(7, &nested, &mut msg);
        let s = scan(&msg, &ScanLimits::default());
        let v = values(&s);
        assert!(v.contains(&("grpc.7.1", payload.as_str())), "{v:?}");
        assert_eq!(v[0].0, "grpc.7");
    }

    #[test]
    fn binary_bytes_and_invalid_utf8_are_not_values() {
        let mut msg = Vec::new();
        len_field(1, &[0xff, 0xfe, 0x00], &mut msg);
        len_field(2, b"ok\x01", &mut msg);
        let s = scan(&msg, &ScanLimits::default());
        assert!(s.values.is_empty(), "{:?}", s.values);
    }

    #[test]
    fn text_that_is_not_protobuf_is_one_value() {
        let s = scan(br#"{"name": "x' or 1=1"}"#, &ScanLimits::default());
        assert!(s.not_protobuf);
        assert_eq!(values(&s), [("grpc", r#"{"name": "x' or 1=1"}"#)]);
        // Groups (wire types 3 and 4), field 0, truncated lengths: not the wire format.
        for bad in [&[0x0b, 0x0c][..], &[0x02, 0x01], &[0x0a, 0x05, b'a'], &[0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02]] {
            assert!(scan(bad, &ScanLimits::default()).not_protobuf, "{bad:?}");
        }
    }

    #[test]
    fn depth_field_and_value_bounds_hold() {
        // 40 levels of nesting with a string at the bottom.
        let mut msg = Vec::new();
        len_field(1, b"deep value", &mut msg);
        for _ in 0..40 {
            let mut outer = Vec::new();
            len_field(2, &msg, &mut outer);
            msg = outer;
        }
        let s = scan(&msg, &ScanLimits { max_depth: 8, ..ScanLimits::default() });
        assert!(s.truncated);
        assert!(s.values.iter().all(|v| v.location.matches('.').count() <= 8));
        let s = scan(&msg, &ScanLimits { max_depth: 64, ..ScanLimits::default() });
        assert!(!s.truncated);
        assert_eq!(s.values.last().unwrap().value, "deep value");
        assert_eq!(s.values.last().unwrap().location.matches('.').count(), 41);

        let mut many = Vec::new();
        for i in 0..50 {
            len_field(1, format!("v{i}").as_bytes(), &mut many);
        }
        let s = scan(&many, &ScanLimits { max_values: 10, ..ScanLimits::default() });
        assert!(s.truncated);
        assert_eq!(s.values.len(), 10);
        let s = scan(&many, &ScanLimits { max_fields: 5, ..ScanLimits::default() });
        assert!(s.truncated && s.values.len() < 50);
    }

    /// Arbitrary bytes (and arbitrary bytes after a valid message prefix) never panic, and every
    /// value found is text that stands in the message, within the bounds (the `grpc_messages`
    /// fuzz target checks the same on libFuzzer's inputs).
    #[test]
    fn arbitrary_bytes_keep_the_scan_within_its_bounds() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let limits = ScanLimits { max_depth: 4, max_fields: 200, max_values: 20 };
        for round in 0..20_000 {
            let len = (next() % 64) as usize;
            let mut msg: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            if round % 2 == 0 {
                // Bias towards the wire format: small tags, wire types 0 and 2.
                for b in msg.iter_mut().step_by(3) {
                    *b = (*b & 0x3a) | 0x02;
                }
            }
            let s = scan(&msg, &limits);
            assert!(s.values.len() <= limits.max_values);
            for v in &s.values {
                assert!(v.location.matches('.').count() <= limits.max_depth, "{}", v.location);
                assert!(msg.windows(v.value.len()).any(|w| w == v.value.as_bytes()));
            }
            if let Ok(m) = split(&msg, 1 << 10) {
                assert_eq!(m.iter().map(|m| HEADER_LEN + m.payload.len()).sum::<usize>(), msg.len());
            }
        }
    }

    #[test]
    fn with_a_descriptor_fields_are_located_by_name_and_judged_by_type() {
        use descriptor::tests::{demo_set, Enc};
        let d = Descriptors::decode(&demo_set()).unwrap();
        let method = d.method("/demo.v1.Users/Get").unwrap();
        let address = Enc::default().str(1, "Main St");
        let user = Enc::default()
            // A string whose bytes also parse as a message: one value, not read further.
            .str(1, "\n\x05alice")
            .int(2, 42)
            .bytes(3, &[0x89, b'P', b'N', b'G', 0, 0xff])
            .msg(4, Enc::default().str(1, "env").str(2, "x' OR 1=1 --"))
            .msg(4, Enc::default().str(1, "team").str(2, "core"))
            .msg(5, address)
            .str(6, "first tag")
            .str(6, "second tag")
            .int(7, 1);
        let req = Enc::default().msg(1, user).str(2, "tab\tand\x01control").str(9, "a field the type does not declare");
        let s = scan_as(&req.0, &ScanLimits::default(), Some((&d, method.input)));
        assert!(!s.truncated && !s.not_protobuf);
        let got: Vec<(&str, &str, bool)> = s.values.iter().map(|v| (v.location.as_str(), v.value.as_str(), v.key)).collect();
        assert_eq!(
            got,
            [
                ("grpc.user.name", "\n\x05alice", false),
                ("grpc.user.labels.env", "env", true),
                ("grpc.user.labels.env", "x' OR 1=1 --", false),
                ("grpc.user.labels.team", "team", true),
                ("grpc.user.labels.team", "core", false),
                ("grpc.user.address.street", "Main St", false),
                ("grpc.user.tags", "first tag", false),
                ("grpc.user.tags", "second tag", false),
                ("grpc.query", "tab\tand\x01control", false),
                ("grpc.9", "a field the type does not declare", false),
            ]
        );
        // Without the descriptor: numbers; the string with a control byte is not taken for
        // text, and its bytes are read as a nested message.
        let plain = scan(&req.0, &ScanLimits::default());
        let plain = values(&plain);
        assert!(plain.contains(&("grpc.1.1.1", "alice")) && plain.contains(&("grpc.1.4.2", "x' OR 1=1 --")), "{plain:?}");
        assert!(!plain.iter().any(|(at, _)| *at == "grpc.1.1" || *at == "grpc.2"), "{plain:?}");
        // The response type of the same method.
        let reply = Enc::default().msg(1, Enc::default().str(1, "bob"));
        let s = scan_as(&reply.0, &ScanLimits::default(), Some((&d, method.output)));
        assert_eq!(values(&s), [("grpc.user.name", "bob")]);
        // A message field holding bytes that are not a message: judged as bytes of unknown type.
        let odd = Enc::default().str(1, "not a message \u{1}");
        let s = scan_as(&odd.0, &ScanLimits::default(), Some((&d, method.output)));
        assert!(s.values.is_empty(), "{:?}", s.values);
        let odd = Enc::default().str(1, "# plain words");
        let s = scan_as(&odd.0, &ScanLimits::default(), Some((&d, method.output)));
        assert_eq!(values(&s), [("grpc.user", "# plain words")]);
    }

    /// A descriptor set and a message both written by protoc (tests/data/users.proto says how).
    #[test]
    fn a_protoc_descriptor_set_locates_a_protoc_encoded_message() {
        let d = Descriptors::decode(include_bytes!("../tests/data/users.protoset")).unwrap();
        let get = d.method("/demo.users.v1.Users/Get").unwrap();
        let watch = d.method("/demo.users.v1.Users/Watch").unwrap();
        assert_eq!((get.input, get.output), (watch.input, watch.output));
        assert!(d.message_named("google.protobuf.Timestamp").is_some());
        let s = scan_as(include_bytes!("../tests/data/get_user_request.bin"), &ScanLimits::default(), Some((&d, get.input)));
        assert!(!s.truncated && !s.not_protobuf);
        let got: Vec<(&str, &str, bool)> = s.values.iter().map(|v| (v.location.as_str(), v.value.as_str(), v.key)).collect();
        assert_eq!(
            got,
            [
                ("grpc.user.name", "alice", false),
                ("grpc.user.labels.env", "env", true),
                ("grpc.user.labels.env", "x' OR 1=1 --", false),
                ("grpc.user.address.street", "1 Main St", false),
                ("grpc.user.address.city", "Springfield", false),
                ("grpc.user.tags", "first", false),
                ("grpc.user.tags", "second", false),
                ("grpc.user.email", "alice@example.com", false),
                ("grpc.query", "name:alice", false),
            ]
        );
    }

    #[test]
    fn typed_scans_keep_their_bounds() {
        use descriptor::tests::{field, Enc};
        // message Node { string v = 1; Node next = 2; map<string, Node> kids = 3; }
        let entry =
            Enc::default().str(1, "KidsEntry").msg(2, field("key", 1, 9, None)).msg(2, field("value", 2, 11, Some(".Node"))).msg(7, Enc::default().int(7, 1));
        let node = Enc::default()
            .str(1, "Node")
            .msg(2, field("v", 1, 9, None))
            .msg(2, field("next", 2, 11, Some(".Node")))
            .msg(2, field("kids", 3, 11, Some(".Node.KidsEntry")))
            .msg(3, entry);
        let set = Enc::default().msg(1, Enc::default().str(1, "n.proto").msg(4, node)).0;
        let d = Descriptors::decode(&set).unwrap();
        let id = d.message_named("Node").unwrap();
        let mut m = Enc::default().str(1, "bottom");
        for i in 0..40 {
            m = if i % 2 == 0 { Enc::default().msg(2, m) } else { Enc::default().msg(3, Enc::default().str(1, "k").msg(2, m)) };
        }
        let s = scan_as(&m.0, &ScanLimits { max_depth: 8, ..ScanLimits::default() }, Some((&d, id)));
        assert!(s.truncated);
        assert!(s.values.iter().all(|v| v.value != "bottom"));
        let s = scan_as(&m.0, &ScanLimits { max_depth: 64, ..ScanLimits::default() }, Some((&d, id)));
        assert!(!s.truncated);
        let last = s.values.last().unwrap();
        assert_eq!(last.value, "bottom");
        assert!(last.location.starts_with("grpc.kids.k.next.kids.k.next"), "{}", last.location);
        let s = scan_as(&m.0, &ScanLimits { max_values: 3, ..ScanLimits::default() }, Some((&d, id)));
        assert!(s.truncated && s.values.len() == 3);
        // Arbitrary bytes against the type: within the bounds, never a panic.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let limits = ScanLimits { max_depth: 6, max_fields: 300, max_values: 20 };
        for _ in 0..10_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let mut b = m.0.clone();
            let i = (x as usize) % b.len();
            b[i] ^= (x >> 40) as u8 | 1;
            b.truncate(b.len() - (x >> 50) as usize % 8);
            let s = scan_as(&b, &limits, Some((&d, id)));
            assert!(s.values.len() <= limits.max_values);
        }
    }

    #[test]
    fn grpc_message_is_percent_encoded_as_the_protocol_says() {
        assert_eq!(percent_encode_message("blocked: sqli 100% sure"), "blocked: sqli 100%25 sure");
        assert_eq!(percent_encode_message("é\n"), "%C3%A9%0A");
    }
}
