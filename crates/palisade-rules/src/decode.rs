//! The decoded forms rules see: percent-decoding (once, as the upstream application would),
//! `+` as a space in query strings, dot segments and repeated slashes resolved in paths, and
//! the splitting of query strings and cookie headers into pairs.

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Percent-decode `input` into `out` (cleared first); `plus` turns `+` into a space. Invalid
/// escapes are kept as they are.
pub fn percent_decode_into(input: &[u8], plus: bool, out: &mut Vec<u8>) {
    out.clear();
    let mut i = 0;
    while i < input.len() {
        let b = input[i];
        if b == b'%' && i + 2 < input.len() {
            if let (Some(h), Some(l)) = (hex(input[i + 1]), hex(input[i + 2])) {
                out.push(h << 4 | l);
                i += 3;
                continue;
            }
        }
        out.push(if plus && b == b'+' { b' ' } else { b });
        i += 1;
    }
}

/// Whether decoding `input` would change it (so the raw bytes can be used as they are).
pub fn needs_decoding(input: &[u8], plus: bool) -> bool {
    input.iter().any(|&b| b == b'%' || (plus && b == b'+'))
}

/// The decoded path: percent-decoded, then `.` and `..` segments resolved and runs of `/`
/// merged (never above the root), into `out`.
pub fn normalize_path_into(raw: &[u8], scratch: &mut Vec<u8>, out: &mut Vec<u8>) {
    percent_decode_into(raw, false, scratch);
    out.clear();
    out.push(b'/');
    let trailing = scratch.len() > 1 && scratch.ends_with(b"/");
    for seg in scratch.split(|&b| b == b'/') {
        match seg {
            b"" | b"." => {}
            b".." => {
                // Drop the last segment (and its slash), never the root.
                if out.len() > 1 {
                    out.pop();
                    let cut = out.iter().rposition(|&b| b == b'/').unwrap_or(0);
                    out.truncate(cut + 1);
                }
            }
            seg => {
                if !out.ends_with(b"/") {
                    out.push(b'/');
                }
                out.extend_from_slice(seg);
            }
        }
    }
    if trailing && !out.ends_with(b"/") {
        out.push(b'/');
    }
}

/// The `name=value` pairs of a query string, raw (split on `&`; a pair without `=` has an
/// empty value).
pub fn query_pairs(query: &[u8]) -> impl Iterator<Item = (&[u8], &[u8])> {
    query.split(|&b| b == b'&').filter(|p| !p.is_empty()).map(|p| match p.iter().position(|&b| b == b'=') {
        Some(i) => (&p[..i], &p[i + 1..]),
        None => (p, &p[p.len()..]),
    })
}

/// The `name=value` pairs of one `Cookie` header, raw, whitespace around pairs trimmed.
pub fn cookie_pairs(header: &[u8]) -> impl Iterator<Item = (&[u8], &[u8])> {
    header.split(|&b| b == b';').map(|p| p.trim_ascii()).filter(|p| !p.is_empty()).map(|p| match p.iter().position(|&b| b == b'=') {
        Some(i) => (p[..i].trim_ascii(), strip_quotes(p[i + 1..].trim_ascii())),
        None => (p, &p[p.len()..]),
    })
}

fn strip_quotes(v: &[u8]) -> &[u8] {
    if v.len() >= 2 && v[0] == b'"' && v[v.len() - 1] == b'"' {
        &v[1..v.len() - 1]
    } else {
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dec(s: &str, plus: bool) -> String {
        let mut out = Vec::new();
        percent_decode_into(s.as_bytes(), plus, &mut out);
        String::from_utf8_lossy(&out).into_owned()
    }

    fn path(s: &str) -> String {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        normalize_path_into(s.as_bytes(), &mut a, &mut b);
        String::from_utf8(b).unwrap()
    }

    #[test]
    fn percent_decoding() {
        assert_eq!(dec("wp%2Dconfig%2ephp", false), "wp-config.php");
        assert_eq!(dec("a+b%20c", true), "a b c");
        assert_eq!(dec("a+b", false), "a+b");
        // Invalid and truncated escapes stay.
        assert_eq!(dec("%zz%4", false), "%zz%4");
        assert_eq!(dec("%", false), "%");
        assert_eq!(dec("100%25", false), "100%");
        // Decoded once, like the upstream.
        assert_eq!(dec("%252e", false), "%2e");
        assert!(needs_decoding(b"a%20", false) && needs_decoding(b"a+b", true) && !needs_decoding(b"a+b", false));
    }

    #[test]
    fn path_normalisation() {
        assert_eq!(path("/a/b/../c"), "/a/c");
        assert_eq!(path("//admin/./x"), "/admin/x");
        assert_eq!(path("/../../etc/passwd"), "/etc/passwd");
        assert_eq!(path("/%61dmin/%2e%2e/x/"), "/x/");
        assert_eq!(path("/"), "/");
        assert_eq!(path(""), "/");
        assert_eq!(path("/a/.."), "/");
    }

    #[test]
    fn pairs() {
        let q: Vec<_> = query_pairs(b"a=1&&b&c=x=y").collect();
        assert_eq!(q, vec![(&b"a"[..], &b"1"[..]), (b"b", b""), (b"c", b"x=y")]);
        let c: Vec<_> = cookie_pairs(b"sid=abc; theme=\"dark\" ;flag").collect();
        assert_eq!(c, vec![(&b"sid"[..], &b"abc"[..]), (b"theme", b"dark"), (b"flag", b"")]);
    }
}
