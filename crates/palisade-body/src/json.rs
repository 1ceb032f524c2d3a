//! Writing JSON text: string literals from text, and from arbitrary bytes one code point per
//! byte. What the decoders that turn form fields, parameters and multipart parts into JSON
//! share, and what reports written as JSON lines use.

#[cfg(test)]
mod tests;

fn push_escape(out: &mut String, b: u8) -> bool {
    match b {
        b'"' => out.push_str("\\\""),
        b'\\' => out.push_str("\\\\"),
        b'\n' => out.push_str("\\n"),
        b'\r' => out.push_str("\\r"),
        b'\t' => out.push_str("\\t"),
        0x08 => out.push_str("\\b"),
        0x0c => out.push_str("\\f"),
        0..=0x1f => {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            out.push_str("\\u00");
            out.push(HEX[(b >> 4) as usize] as char);
            out.push(HEX[(b & 15) as usize] as char);
        }
        _ => return false,
    }
    true
}

/// Append `s` as a JSON string literal (quotes included), escaping `"`, `\` and control
/// characters (short escapes where JSON has them, else `\u00XX`). Non-ASCII is kept as UTF-8.
pub fn write_json_str(out: &mut String, s: &str) {
    out.push('"');
    let mut start = 0;
    for (i, &b) in s.as_bytes().iter().enumerate() {
        if b < 0x20 || b == b'"' || b == b'\\' {
            out.push_str(&s[start..i]);
            push_escape(out, b);
            start = i + 1;
        }
    }
    out.push_str(&s[start..]);
    out.push('"');
}

/// Append arbitrary bytes as a JSON string in which each byte is one code point (U+0000 to
/// U+00FF, "Latin-1"): lossless, and the string's length in characters equals the byte count,
/// so `maxLength` / `minLength` measure bytes. Used for binary (file) parts.
pub fn write_json_bytes_latin1(out: &mut String, bytes: &[u8]) {
    out.push('"');
    for &b in bytes {
        if !push_escape(out, b) {
            out.push(char::from(b));
        }
    }
    out.push('"');
}
