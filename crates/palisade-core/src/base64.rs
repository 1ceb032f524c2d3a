//! Standard base64 (RFC 4648 §4), strict: the one decoder of offline request files and the
//! authorization API's JSON bodies. (Detection's base64 reading of values is lenient on
//! purpose and lives with the decoders.)

/// Standard base64 (RFC 4648 §4), padding optional; `None` for anything else (whitespace
/// included).
pub fn decode(input: &[u8]) -> Option<Vec<u8>> {
    fn val(c: u8) -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    }
    let data = match input {
        [rest @ .., b'=', b'='] if input.len() % 4 == 0 => rest,
        [rest @ .., b'='] if input.len() % 4 == 0 => rest,
        _ => input,
    };
    if data.len() % 4 == 1 {
        return None;
    }
    let mut out = Vec::with_capacity(data.len() / 4 * 3 + 2);
    for chunk in data.chunks(4) {
        let mut n = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            n |= val(c)? << (18 - 6 * i);
        }
        out.push((n >> 16) as u8);
        if chunk.len() > 2 {
            out.push((n >> 8) as u8);
        }
        if chunk.len() > 3 {
            out.push(n as u8);
        }
        // Bits beyond the last byte must be zero (canonical encoding).
        let spare = match chunk.len() {
            2 => n & 0xffff,
            3 => n & 0xff,
            _ => 0,
        };
        if spare != 0 {
            return None;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_standard_with_and_without_padding() {
        assert_eq!(decode(b"").unwrap(), b"");
        assert_eq!(decode(b"Zg==").unwrap(), b"f");
        assert_eq!(decode(b"Zg").unwrap(), b"f");
        assert_eq!(decode(b"Zm8=").unwrap(), b"fo");
        assert_eq!(decode(b"Zm9v").unwrap(), b"foo");
        assert_eq!(decode(b"Zm9vYmFy").unwrap(), b"foobar");
        assert_eq!(decode(b"eyJpZCI6IjEnIE9SIDE9MSJ9").unwrap(), br#"{"id":"1' OR 1=1"}"#);
        assert_eq!(decode(b"+/8=").unwrap(), [0xfb, 0xff]);
        for bad in [&b"Zm9v YmFy"[..], b"Z", b"Zm9v=", b"Zh==", b"-_8=", b"Zg=a", b"Zg===", b"Zm9vY"] {
            assert!(decode(bad).is_none(), "{:?}", std::str::from_utf8(bad));
        }
    }
}
