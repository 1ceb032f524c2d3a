//! Strict decoders for what JWTs and keys are made of: base64url without padding (JWS, JWK),
//! standard base64 (PEM bodies), PEM armour, and the few DER structures public keys come in
//! (SubjectPublicKeyInfo, PKCS#1 RSAPublicKey). Hand-written and small, so that nothing is
//! accepted that the specifications do not allow (padding in JWS, non-canonical trailing bits,
//! trailing garbage in DER).

/// Decode base64url without padding (RFC 7515 §2). Rejects padding, whitespace, characters
/// outside the alphabet, impossible lengths and non-zero trailing bits.
pub fn b64url(input: &[u8]) -> Result<Vec<u8>, &'static str> {
    decode(input, true)
}

/// Decode standard base64 (with optional padding), as found in PEM bodies once whitespace is
/// removed.
pub fn b64std(input: &[u8]) -> Result<Vec<u8>, &'static str> {
    let trimmed = match input {
        [rest @ .., b'=', b'='] => rest,
        [rest @ .., b'='] => rest,
        _ => input,
    };
    if trimmed.len() != input.len() && input.len() % 4 != 0 {
        return Err("bad base64 padding");
    }
    decode(trimmed, false)
}

fn value(c: u8, url: bool) -> Option<u32> {
    Some(match c {
        b'A'..=b'Z' => (c - b'A') as u32,
        b'a'..=b'z' => (c - b'a') as u32 + 26,
        b'0'..=b'9' => (c - b'0') as u32 + 52,
        b'-' if url => 62,
        b'_' if url => 63,
        b'+' if !url => 62,
        b'/' if !url => 63,
        _ => return None,
    })
}

fn decode(input: &[u8], url: bool) -> Result<Vec<u8>, &'static str> {
    if input.len() % 4 == 1 {
        return Err("bad base64 length");
    }
    let mut out = Vec::with_capacity(input.len() * 3 / 4);
    let mut chunks = input.chunks_exact(4);
    for c in &mut chunks {
        let mut n = 0u32;
        for &b in c {
            n = (n << 6) | value(b, url).ok_or("bad base64 character")?;
        }
        out.extend_from_slice(&[(n >> 16) as u8, (n >> 8) as u8, n as u8]);
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut n = 0u32;
        for &b in rest {
            n = (n << 6) | value(b, url).ok_or("bad base64 character")?;
        }
        match rest.len() {
            2 => {
                if n & 0xf != 0 {
                    return Err("non-canonical base64");
                }
                out.push((n >> 4) as u8);
            }
            3 => {
                if n & 0x3 != 0 {
                    return Err("non-canonical base64");
                }
                out.extend_from_slice(&[(n >> 10) as u8, (n >> 2) as u8]);
            }
            _ => return Err("bad base64 length"),
        }
    }
    Ok(out)
}

/// Encode base64url without padding (tests, and the token hash is hex, so only tests and
/// benches use this).
pub fn b64url_encode(input: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut s = String::with_capacity(input.len().div_ceil(3) * 4);
    for c in input.chunks(3) {
        let n = (c[0] as u32) << 16 | (*c.get(1).unwrap_or(&0) as u32) << 8 | *c.get(2).unwrap_or(&0) as u32;
        let k = c.len() + 1;
        for i in 0..k {
            s.push(A[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    s
}

/// The PEM blocks of a file: (label, DER bytes).
pub fn pem_blocks(text: &str) -> Result<Vec<(String, Vec<u8>)>, crate::Error> {
    let err = |m: String| crate::Error::new(crate::ErrorKind::Pem, m);
    let mut out = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let line = line.trim();
        let Some(label) = line.strip_prefix("-----BEGIN ").and_then(|l| l.strip_suffix("-----")) else { continue };
        let end = format!("-----END {label}-----");
        let mut body = Vec::new();
        let mut closed = false;
        for l in lines.by_ref() {
            let l = l.trim();
            if l == end {
                closed = true;
                break;
            }
            if l.contains(':') {
                return Err(err(format!("PEM block `{label}` has headers (encrypted keys are not supported)")));
            }
            body.extend_from_slice(l.as_bytes());
        }
        if !closed {
            return Err(err(format!("PEM block `{label}` is not closed")));
        }
        let der = b64std(&body).map_err(|e| err(format!("PEM block `{label}`: {e}")))?;
        out.push((label.to_string(), der));
    }
    if out.is_empty() {
        return Err(err("no PEM block found".into()));
    }
    Ok(out)
}

/// One DER TLV: (tag, contents, rest).
pub fn der_tlv(input: &[u8]) -> Result<(u8, &[u8], &[u8]), &'static str> {
    let (&tag, rest) = input.split_first().ok_or("truncated DER")?;
    let (&l0, rest) = rest.split_first().ok_or("truncated DER")?;
    let (len, rest) = if l0 < 0x80 {
        (l0 as usize, rest)
    } else {
        let n = (l0 & 0x7f) as usize;
        if n == 0 || n > 4 || rest.len() < n {
            return Err("bad DER length");
        }
        let mut len = 0usize;
        for &b in &rest[..n] {
            len = (len << 8) | b as usize;
        }
        if len < 0x80 || (n > 1 && rest[0] == 0) {
            return Err("non-minimal DER length");
        }
        (len, &rest[n..])
    };
    if rest.len() < len {
        return Err("truncated DER");
    }
    Ok((tag, &rest[..len], &rest[len..]))
}

fn der_expect(input: &[u8], tag: u8) -> Result<(&[u8], &[u8]), &'static str> {
    let (t, c, rest) = der_tlv(input)?;
    if t != tag {
        return Err("unexpected DER structure");
    }
    Ok((c, rest))
}

pub const OID_RSA: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01];
pub const OID_EC: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01];
pub const OID_P256: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07];
pub const OID_P384: &[u8] = &[0x2b, 0x81, 0x04, 0x00, 0x22];
pub const OID_ED25519: &[u8] = &[0x2b, 0x65, 0x70];

/// The parts of a SubjectPublicKeyInfo: (algorithm OID, parameter OID if any, public key bytes).
pub type Spki<'a> = (&'a [u8], Option<&'a [u8]>, &'a [u8]);

/// Split a SubjectPublicKeyInfo.
pub fn spki(der: &[u8]) -> Result<Spki<'_>, &'static str> {
    let (seq, rest) = der_expect(der, 0x30)?;
    if !rest.is_empty() {
        return Err("trailing data after the public key");
    }
    let (alg, seq_rest) = der_expect(seq, 0x30)?;
    let (oid, params) = der_expect(alg, 0x06)?;
    let param_oid = match der_tlv(params) {
        Ok((0x06, p, _)) => Some(p),
        _ => None,
    };
    let (bits, tail) = der_expect(seq_rest, 0x03)?;
    if !tail.is_empty() {
        return Err("trailing data in the public key");
    }
    match bits.split_first() {
        Some((0, key)) => Ok((oid, param_oid, key)),
        _ => Err("bad public key bit string"),
    }
}

/// A PKCS#1 RSAPublicKey: (modulus, exponent), leading zero bytes removed.
pub fn rsa_public_key(der: &[u8]) -> Result<(Vec<u8>, Vec<u8>), &'static str> {
    let (seq, rest) = der_expect(der, 0x30)?;
    if !rest.is_empty() {
        return Err("trailing data after the RSA key");
    }
    let (n, seq) = der_expect(seq, 0x02)?;
    let (e, tail) = der_expect(seq, 0x02)?;
    if !tail.is_empty() {
        return Err("trailing data in the RSA key");
    }
    Ok((strip_zeros(n).to_vec(), strip_zeros(e).to_vec()))
}

pub fn strip_zeros(b: &[u8]) -> &[u8] {
    let i = b.iter().position(|&x| x != 0).unwrap_or(b.len());
    &b[i..]
}

/// Lower-case hex.
pub fn hex(bytes: &[u8]) -> String {
    const H: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        s.push(H[(b >> 4) as usize] as char);
        s.push(H[(b & 15) as usize] as char);
    }
    s
}

/// SHA-256 of `data` in lower-case hex.
pub fn sha256_hex(data: &[u8]) -> String {
    hex(ring::digest::digest(&ring::digest::SHA256, data).as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64url_strict() {
        assert_eq!(b64url(b"").unwrap(), b"");
        assert_eq!(b64url(b"Zg").unwrap(), b"f");
        assert_eq!(b64url(b"Zm8").unwrap(), b"fo");
        assert_eq!(b64url(b"Zm9v").unwrap(), b"foo");
        assert_eq!(b64url(b"-_8").unwrap(), [0xfb, 0xff]);
        assert!(b64url(b"Zg==").is_err(), "padding");
        assert!(b64url(b"Zh").is_err(), "non-zero trailing bits");
        assert!(b64url(b"Z").is_err(), "impossible length");
        assert!(b64url(b"Zm9v+").is_err(), "standard alphabet");
        assert!(b64url(b"Zm 9").is_err(), "whitespace");
        for n in 0..40u8 {
            let data: Vec<u8> = (0..n).map(|i| i.wrapping_mul(37)).collect();
            assert_eq!(b64url(b64url_encode(&data).as_bytes()).unwrap(), data);
        }
    }

    #[test]
    fn base64_standard_padding() {
        assert_eq!(b64std(b"Zm8=").unwrap(), b"fo");
        assert_eq!(b64std(b"Zg==").unwrap(), b"f");
        assert!(b64std(b"Zg=").is_err());
        assert!(b64std(b"Zm9v-").is_err());
    }

    #[test]
    fn der_lengths() {
        assert!(der_tlv(&[0x30, 0x81, 0x05, 1, 2, 3, 4, 5]).is_err(), "non-minimal long form");
        assert!(der_tlv(&[0x30, 0x05, 1]).is_err(), "truncated");
        assert!(der_tlv(&[0x30]).is_err());
        let (t, c, r) = der_tlv(&[0x02, 0x01, 0x07, 0xff]).unwrap();
        assert_eq!((t, c, r), (0x02, &[7u8][..], &[0xffu8][..]));
    }

    #[test]
    fn pem() {
        let blocks = pem_blocks("junk\n-----BEGIN PUBLIC KEY-----\nZm9v\nYmFy\n-----END PUBLIC KEY-----\n").unwrap();
        assert_eq!(blocks, vec![("PUBLIC KEY".to_string(), b"foobar".to_vec())]);
        assert!(pem_blocks("-----BEGIN X-----\nZm9v\n").is_err());
        assert!(pem_blocks("nothing").is_err());
    }

    #[test]
    fn sha256() {
        assert_eq!(sha256_hex(b"abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }
}
