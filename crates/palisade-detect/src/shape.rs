//! The *product-token* shape of `User-Agent` values (RFC 9110 §10.1.5, restricted), which the
//! engine recognises in one pass so that the detectors whose gates open on its punctuation
//! (`/`, `(`, `)`, `;`, `,`, `:`) can decide on it by a cheaper test of their own
//! ([`crate::Detector::product_token_gate`]).
//!
//! ```text
//! value   = product *( SP token )          ; single blanks, none at either end
//! token   = product | comment
//! product = name [ "/" version ]
//! name    = ALPHA *( ALNUM | "." | "-" | "_" )
//! version = ALNUM *( ALNUM | "." | "-" | "_" | "+" )
//! comment = "(" item *( ( ";" | "," ) [ SP ] item ) ")"     ; no nesting
//! item    = word *( SP word )
//! word    = ALNUM *( ALNUM | "." | "-" | "_" | "+" | ":" ) [ "/" version ]   ; no "/" after a ":"
//! ```
//!
//! and the first product carries a version; no `..` anywhere; at most [`MAX_LEN`] bytes.
//! `Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko)
//! Chrome/126.0.0.0 Safari/537.36` is in the shape; a value with a quote, `<`, `=`, `&`, `%`,
//! `\`, `$`, `*`, `|`, a `//`, an absolute path, a nested parenthesis or two blanks is not.
//!
//! What the shape rules out, and so what each detector's product-token gate must still look
//! for (the gate soundness test checks them on every corpus value, and each detector's unit
//! tests on attacks written in the shape):
//! - no quote, backslash or `#`: no SQL, HTML or JavaScript string breakout; no `=`, `<`, `>`:
//!   no HTML tag or attribute, no SQL comparison; no `$`, `{`, `%`, `&`, `|`, `*`, `!`, `@`,
//!   backtick: no template, lookup, NoSQL operator, LDAP filter item or shell operator but `;`;
//! - a `/` only inside `name/version` (one per token, letters or digits on both sides): no
//!   absolute path, no climbing segment, no URL (`://`), no drive path (`C:/`);
//! - a `(` only after a blank, a `)` only before a blank or the end, and `;` only inside
//!   them: a parenthesised group is an argument list only behind a name ending in an
//!   identifier (`alert (1)`, `sleep (5)`, `x/alert (1)` is `x / alert(1)` in JavaScript), and
//!   a shell command after `;` is still in command position (left to the cmdi gate).

/// Longest value considered (a browser `User-Agent` is 70 to 200 bytes).
pub const MAX_LEN: usize = 512;

#[inline]
fn name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_')
}

#[inline]
fn version_byte(b: u8) -> bool {
    name_byte(b) || b == b'+'
}

/// Reads `version` at `i` (an ALNUM then version bytes); the index after it.
#[inline]
fn version(b: &[u8], i: usize) -> Option<usize> {
    if !b.get(i)?.is_ascii_alphanumeric() {
        return None;
    }
    let mut j = i + 1;
    while j < b.len() && version_byte(b[j]) {
        j += 1;
    }
    Some(j)
}

/// Reads a `product` at `i`; the index after it and whether it had a version.
#[inline]
fn product(b: &[u8], i: usize) -> Option<(usize, bool)> {
    if !b.get(i)?.is_ascii_alphabetic() {
        return None;
    }
    let mut j = i + 1;
    while j < b.len() && name_byte(b[j]) {
        j += 1;
    }
    if b.get(j) == Some(&b'/') {
        return Some((version(b, j + 1)?, true));
    }
    Some((j, false))
}

/// Reads a comment `word` at `i`; the index after it.
#[inline]
fn word(b: &[u8], i: usize) -> Option<usize> {
    if !b.get(i)?.is_ascii_alphanumeric() {
        return None;
    }
    let mut j = i + 1;
    let mut colon = false;
    while j < b.len() && (version_byte(b[j]) || b[j] == b':') {
        colon |= b[j] == b':';
        j += 1;
    }
    if b.get(j) == Some(&b'/') {
        if colon {
            return None;
        }
        return version(b, j + 1);
    }
    Some(j)
}

/// Reads a `comment` whose `(` is at `i`; the index after its `)`.
fn comment(b: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    loop {
        // One item: words separated by single blanks.
        j = word(b, j)?;
        while b.get(j) == Some(&b' ') {
            j = word(b, j + 1)?;
        }
        match *b.get(j)? {
            b')' => return Some(j + 1),
            b';' | b',' => {
                j += 1;
                if b.get(j) == Some(&b' ') {
                    j += 1;
                }
            }
            _ => return None,
        }
    }
}

/// Whether `s` is in the product-token shape (see the module docs).
pub fn product_tokens(s: &str) -> bool {
    let b = s.as_bytes();
    if b.is_empty() || b.len() > MAX_LEN {
        return false;
    }
    let Some((mut i, true)) = product(b, 0) else { return false };
    while i < b.len() {
        if b[i] != b' ' {
            return false;
        }
        i += 1;
        i = match b.get(i) {
            Some(b'(') => comment(b, i),
            _ => product(b, i).map(|(j, _)| j),
        }
        .unwrap_or(usize::MAX);
        if i == usize::MAX {
            return false;
        }
    }
    // (`memmem` would build a searcher per call: more than the walk on a short value.)
    crate::other_util::find_short(b, b"..").is_none()
}

/// Whether a comment follows a product whose last word (the run of letters, digits and `_`
/// that ends it) starts like an identifier: the comment may be an argument list
/// (`alert (1)`, `sleep (5)`, `a/alert (1)`, `a/1-sleep (5)`), the only way a text in the
/// shape can hold a call. (In the shape every `(` opens a comment, after a blank.)
pub fn call_shape(s: &str) -> bool {
    let b = s.as_bytes();
    memchr::memchr_iter(b'(', b).any(|p| {
        if p < 2 || b[p - 1] != b' ' || b[p - 2] == b')' {
            return false;
        }
        let mut k = p - 1;
        while k > 0 && (b[k - 1].is_ascii_alphanumeric() || b[k - 1] == b'_') {
            k -= 1;
        }
        b[k].is_ascii_alphabetic() || b[k] == b'_'
    })
}

/// Calls `f` with each word (a run of letters, digits and `_`, from its start or from a letter
/// that follows a digit, to its end, when that starts with a letter) outside the comments of a text in the shape; `f` returns true to stop, the result is
/// whether it did.
pub fn words_outside_comments(s: &str, mut f: impl FnMut(&[u8]) -> bool) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'(' {
            i = memchr::memchr(b')', &b[i..]).map_or(b.len(), |p| i + p + 1);
        } else if c.is_ascii_alphanumeric() || c == b'_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            // A word may also start after digits (`1union`: MySQL reads a number, then a
            // keyword), as the engine's gate words do.
            for j in start..i {
                if ((j == start && !b[j].is_ascii_digit()) || (b[j].is_ascii_alphabetic() && b[j - 1].is_ascii_digit())) && f(&b[j..i]) {
                    return true;
                }
            }
        } else {
            i += 1;
        }
    }
    false
}

/// The texts a path reading of a value in the shape can end with after a `/`: from each `/`
/// to the end of its version (`;` excluded and included: a token split at blanks, `(`, `)`
/// and `,` keeps a trailing `;`), and from the last `/` to the end of the value (the whole
/// value read as one path). `f` returns true to stop; the result is whether it did.
pub fn slash_tails(s: &str, mut f: impl FnMut(&str) -> bool) -> bool {
    let b = s.as_bytes();
    let mut last = None;
    for p in memchr::memchr_iter(b'/', b) {
        last = Some(p);
        let rest = &b[p + 1..];
        let end = |semi: bool| rest.iter().position(|&c| matches!(c, b' ' | b')' | b',') || (semi && c == b';')).map_or(b.len(), |q| p + 1 + q);
        let (short, long) = (end(true), end(false));
        if f(&s[p + 1..short]) || (long != short && f(&s[p + 1..long])) {
            return true;
        }
    }
    last.is_some_and(|p| f(&s[p + 1..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn browser_user_agents_are_in_the_shape() {
        for ua in [
            "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0",
            "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36",
            "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36 Edg/126.0.0.0",
            "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15",
            "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1",
            "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Mobile Safari/537.36",
            "Mozilla/5.0 (Windows NT 6.1; WOW64; Trident/7.0; rv:11.0) like Gecko",
            "Dalvik/2.1.0 (Linux; U; Android 12; M2101K6G Build/SKQ1.210908.001)",
            "curl/8.5.0",
            "python-requests/2.31.0",
        ] {
            assert!(product_tokens(ua), "{ua}");
        }
    }

    #[test]
    fn other_values_are_not() {
        for v in [
            "",
            "Mozilla",
            "Mozilla/5.0  (X11)",
            "Mozilla/5.0 (X11",
            "Mozilla/5.0 (X11 (nested))",
            "Mozilla/5.0 (x) ",
            "Mozilla/5.0 ../../etc/passwd",
            "Mozilla/5.0 /etc/passwd",
            "Mozilla/5.0 (C:/boot.ini)",
            "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
            "Mozilla/5.0 (x) union select 1,2",
            "Mozilla/5.0 ' OR 1=1--",
            "Mozilla/5.0 <script>alert(1)</script>",
            "Mozilla/5.0 (x); cat /etc/passwd",
            "Mozilla/5.0 alert(1)",
            "1/0 (x)",
            "https://example.com/",
        ] {
            assert!(!product_tokens(v), "{v}");
        }
    }

    #[test]
    fn calls_words_and_slash_tails() {
        let mut words = Vec::new();
        words_outside_comments("Mozilla/5.0 (X11; Linux) like Gecko/2010 x_1-sel a/1union", |w| {
            words.push(String::from_utf8_lossy(w).into_owned());
            false
        });
        assert_eq!(words, ["Mozilla", "like", "Gecko", "x_1", "sel", "a", "union"]);
        assert!(!call_shape("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36"));
        assert!(call_shape("Mozilla/5.0 alert (1)"));
        assert!(call_shape("Mozilla/alert (1)"));
        assert!(call_shape("Mozilla/5.0 (x) sleep (5)"));
        assert!(call_shape("a/1-sleep (5)"));
        assert!(call_shape("a/window.alert (5)"));
        assert!(!call_shape("Gecko/20100101 (x)"));
        let mut tails = Vec::new();
        slash_tails("Mozilla/5.0 (X11; Trident/7.0; x) etc/passwd x", |t| {
            tails.push(t.to_string());
            false
        });
        assert_eq!(tails, ["5.0", "7.0", "7.0;", "passwd", "passwd x"]);
    }
}
