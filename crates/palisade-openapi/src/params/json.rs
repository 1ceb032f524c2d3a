//! JSON text as the decoders write and check it: numbers in JSON syntax, scalars coerced to
//! the schema's types, a syntax check for JSON carried in a parameter, a form field or a
//! multipart part, and `content` values (shared by parameters, form and multipart bodies).

use palisade_body::json::write_json_str;
use palisade_schema::TypeSet;

use super::Invalid;

/// Whether `s` is a number in JSON syntax (`-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`).
pub fn is_json_number(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    if b.first() == Some(&b'-') {
        i = 1;
    }
    let digits = |i: &mut usize| {
        let s = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - s
    };
    match b.get(i) {
        Some(b'0') => i += 1,
        Some(b'1'..=b'9') => {
            digits(&mut i);
        }
        _ => return false,
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

/// Append `s` coerced to the most fitting type of `types` (see the module docs).
pub fn write_scalar(out: &mut String, s: &str, types: TypeSet) {
    if types.0 != TypeSet::ANY {
        if (types.has(TypeSet::INTEGER) || types.has(TypeSet::NUMBER)) && is_json_number(s) {
            out.push_str(s);
            return;
        }
        if types.has(TypeSet::BOOLEAN) && (s == "true" || s == "false") {
            out.push_str(s);
            return;
        }
        if types.has(TypeSet::NULL) && !types.has(TypeSet::STRING) && s == "null" {
            out.push_str(s);
            return;
        }
    }
    write_json_str(out, s);
}

/// Why a text is not JSON.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JsonSyntaxError {
    pub offset: usize,
    pub message: &'static str,
}

/// Maximum nesting accepted by [`validate_json`].
pub const JSON_MAX_DEPTH: u32 = 128;

/// Check that `s` is one JSON text (RFC 8259; surrounding whitespace allowed), without
/// allocating and without recursion; nesting deeper than [`JSON_MAX_DEPTH`] is an error.
pub fn validate_json(s: &[u8]) -> Result<(), JsonSyntaxError> {
    let err = |offset, message| Err(JsonSyntaxError { offset, message });
    let ws = |i: &mut usize| {
        while *i < s.len() && matches!(s[*i], b' ' | b'\t' | b'\n' | b'\r') {
            *i += 1;
        }
    };
    // One bit per open container: 1 = object, 0 = array.
    let mut stack: u128 = 0;
    let mut depth: u32 = 0;
    let mut i = 0;
    ws(&mut i);
    'value: loop {
        // Parse one value at `i`.
        match s.get(i) {
            None => return err(i, "unexpected end"),
            Some(b'{') | Some(b'[') => {
                let obj = s[i] == b'{';
                if depth >= JSON_MAX_DEPTH {
                    return err(i, "nesting too deep");
                }
                stack = (stack << 1) | obj as u128;
                depth += 1;
                i += 1;
                ws(&mut i);
                let close = if obj { b'}' } else { b']' };
                if s.get(i) == Some(&close) {
                    i += 1;
                    stack >>= 1;
                    depth -= 1;
                } else if obj {
                    i = json_key(s, i)?;
                    continue 'value;
                } else {
                    continue 'value;
                }
            }
            Some(b'"') => i = json_string(s, i)?,
            Some(b't') if s[i..].starts_with(b"true") => i += 4,
            Some(b'f') if s[i..].starts_with(b"false") => i += 5,
            Some(b'n') if s[i..].starts_with(b"null") => i += 4,
            Some(b'-' | b'0'..=b'9') => {
                let start = i;
                while i < s.len() && matches!(s[i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9') {
                    i += 1;
                }
                let n = std::str::from_utf8(&s[start..i]).unwrap_or("");
                if !is_json_number(n) {
                    return err(start, "invalid number");
                }
            }
            Some(_) => return err(i, "unexpected character"),
        }
        // After a value: close containers or continue with the next member.
        loop {
            ws(&mut i);
            if depth == 0 {
                break 'value;
            }
            let obj = stack & 1 == 1;
            match s.get(i) {
                Some(b',') => {
                    i += 1;
                    ws(&mut i);
                    if obj {
                        i = json_key(s, i)?;
                    }
                    continue 'value;
                }
                Some(b'}') if obj => {}
                Some(b']') if !obj => {}
                None => return err(i, "unexpected end"),
                Some(_) => return err(i, "expected ',' or a closing bracket"),
            }
            i += 1;
            stack >>= 1;
            depth -= 1;
        }
    }
    if i != s.len() {
        return err(i, "trailing characters");
    }
    Ok(())
}

/// A key and its colon, at `i` (whitespace before already skipped); returns the index of the
/// value (whitespace skipped).
fn json_key(s: &[u8], i: usize) -> Result<usize, JsonSyntaxError> {
    if s.get(i) != Some(&b'"') {
        return Err(JsonSyntaxError { offset: i, message: "expected a string key" });
    }
    let mut i = json_string(s, i)?;
    while i < s.len() && matches!(s[i], b' ' | b'\t' | b'\n' | b'\r') {
        i += 1;
    }
    if s.get(i) != Some(&b':') {
        return Err(JsonSyntaxError { offset: i, message: "expected ':'" });
    }
    i += 1;
    while i < s.len() && matches!(s[i], b' ' | b'\t' | b'\n' | b'\r') {
        i += 1;
    }
    Ok(i)
}

/// A string starting at the quote at `i`; returns the index after the closing quote.
fn json_string(s: &[u8], i: usize) -> Result<usize, JsonSyntaxError> {
    let start = i;
    let mut i = i + 1;
    loop {
        match s.get(i) {
            None => return Err(JsonSyntaxError { offset: start, message: "unterminated string" }),
            Some(b'"') => break,
            Some(b'\\') => match s.get(i + 1) {
                Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => i += 2,
                Some(b'u') if s.len() >= i + 6 && s[i + 2..i + 6].iter().all(|b| b.is_ascii_hexdigit()) => i += 6,
                _ => return Err(JsonSyntaxError { offset: i, message: "invalid escape" }),
            },
            Some(0..=0x1f) => return Err(JsonSyntaxError { offset: i, message: "control character in string" }),
            Some(_) => i += 1,
        }
    }
    if std::str::from_utf8(&s[start + 1..i]).is_err() {
        return Err(JsonSyntaxError { offset: start, message: "invalid UTF-8 in string" });
    }
    Ok(i + 1)
}

/// A `content` parameter's decoded value: JSON media types must hold JSON text (passed
/// through, surrounding whitespace trimmed); other media types are carried as a JSON string.
pub(crate) fn write_content(out: &mut String, text: &str, content_type: &str) -> Result<(), Invalid> {
    let json = palisade_body::media::parse(content_type).map(|m| m.kind() == palisade_body::media::MediaKind::Json).unwrap_or(false);
    if json {
        validate_json(text.as_bytes()).map_err(Invalid::NotJson)?;
        out.push_str(text.trim_matches(|c| matches!(c, ' ' | '\t' | '\n' | '\r')));
    } else {
        write_json_str(out, text);
    }
    Ok(())
}
