//! Path traversal and local file inclusion.
//!
//! The value is normalised the way file APIs and lax web servers see it (residual percent
//! layers, `%uXXXX`, overlong UTF-8 forms of `.`/`/`/`\`, Unicode look-alike dots and slashes,
//! literal `0x2e`, null bytes and control characters, `..;/`), then cut into path candidates
//! (the whole value and its whitespace/quote-delimited tokens) and each candidate is walked
//! segment by segment with a depth counter: climbing above the start is a traversal. Absolute
//! paths into system directories, sensitive files (by name, not by corpus line), and PHP stream
//! wrappers are local file inclusion. A bare file name (`passwd`, `index.php`) is not an attack
//! by itself and is not reported (docs/DETECTION.md, "What is missed").

use crate::other_util::{b64_decode, best, each_byte_of, gate, last_byte_of, lowercase_into, mk, pct_round, step, Anchors};
use crate::{Category, Detector, FieldKind, Gate, Hit, Input, Level};
use smallvec::SmallVec;
use std::borrow::Cow;
use std::sync::LazyLock;

const NAME: &str = "path";

pub struct PathDetector;

pub fn detector() -> Box<dyn Detector> {
    LazyLock::force(&ANCHORS);
    LazyLock::force(&WRAP_ANCHORS);
    Box::new(PathDetector)
}

/// Literals that can make a path without a separator byte: dot segments (`..`, `.?`, `?.`),
/// literal hex dots and slashes, stream wrappers and PHP filters.
const ANCHOR_LITERALS: &[&str] = &["..", ".?", "?.", "0x2", "0x5", "://", "file:", "data:", "ssh2.", "convert.", "string.", "zlib."];
static ANCHORS: LazyLock<Anchors> = LazyLock::new(|| Anchors::new(ANCHOR_LITERALS));

/// Characters [`normalise`] maps to `.`, `/` or `\`.
fn lookalike(c: char) -> bool {
    matches!(
        c,
        '\u{ff0e}'
            | '\u{2024}'
            | '\u{fe52}'
            | '\u{2025}'
            | '\u{2026}'
            | '\u{ff0f}'
            | '\u{2215}'
            | '\u{2044}'
            | '\u{f025}'
            | '\u{efc8}'
            | '\u{29f8}'
            | '\u{ff3c}'
            | '\u{2216}'
            | '\u{fe68}'
            | '\u{29f5}'
            | '\u{29f9}'
    )
}

/// The pre-filter: whether [`analyse`] could find anything in `s`. Every finding needs a
/// separator, a dot segment, an encoding or control character that [`normalise`] turns into
/// one, a wrapper, or a base64 value that decodes to printable text with a separator; one
/// pass over the bytes decides, with no allocation.
fn may_hold_path(s: &str) -> bool {
    if s.bytes().any(|c| matches!(c, b'/' | b'\\' | b'%') || c < 0x20 || c == 0x7f) {
        return true;
    }
    if !s.is_ascii() && s.chars().any(lookalike) {
        return true;
    }
    if ANCHORS.any(s) {
        return true;
    }
    let t = s.trim();
    t.len() >= 8 && t.len() <= 4096 && b64_path_like(t)
}

/// Whether `t` is base64 of printable ASCII holding `/` or `\` (what [`analyse`] decodes).
fn b64_path_like(t: &str) -> bool {
    let t = t.trim_end_matches('=');
    if t.len() < 4 {
        return false;
    }
    let (mut acc, mut bits, mut sep) = (0u32, 0, false);
    for c in t.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => return false,
        } as u32;
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            let o = (acc >> bits) as u8;
            acc &= (1 << bits) - 1;
            if !(0x20..0x7f).contains(&o) {
                return false;
            }
            sep |= o == b'/' || o == b'\\';
        }
    }
    sep
}

/// The pre-filter declared to the engine ([`Gate`]): exactly [`may_hold_path`] (separators,
/// `%`, the [`ANCHORS`] literals, a base64 value that decodes to a path; controls and the
/// non-ASCII look-alike characters always open a gate: [`crate::engine::CodePoint::Open`]).
const GATE: Gate = Gate { bytes: "/\\%", anchors: ANCHOR_LITERALS, words: &[], test: Some(b64_gate), test_bytes: "", test_only: B64_TEST_ONLY };

/// [`Detector::product_token_gate`]: in the product-token shape ([`crate::shape`]) a `/` only
/// stands inside `name/version`, so no segment climbs (no `..`), no path is absolute, no drive
/// (`C:/`) or URL (`://`) occurs and there is no NUL: [`judge`] can only report a relative path
/// whose last segment is a sensitive file (`etc/passwd`, `x/win.ini`, `x/access.log`); the
/// wrapper and hex-dot anchors and base64 are looked for as in [`GATE`].
fn product_token_gate(s: &str) -> bool {
    ANCHORS.any(s)
        || b64_gate(s)
        || crate::shape::slash_tails(s, |t| {
            // Every sensitive name and log pattern holds a letter (versions are digits and dots).
            if !t.bytes().any(|c| c.is_ascii_alphabetic()) {
                return false;
            }
            let mut buf = [0u8; 128];
            let Some(lc) = buf.get_mut(..t.len()) else { return true };
            lc.copy_from_slice(t.as_bytes());
            lc.make_ascii_lowercase();
            // A tail of a `str`, lowercased: UTF-8 (the `str` check was always true).
            sensitive_name(lc)
        })
}

/// The bytes [`b64_gate`] can say yes on ([`Gate::test_only`]): the ASCII whitespace it trims,
/// the `=` padding and [`b64_path_like`]'s alphabet.
const B64_TEST_ONLY: &str = "\t\n\x0b\x0c\r =+-/_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/// The base64 half of [`may_hold_path`]. Most values are decided by their length or their
/// first four bytes (below), else by their first byte (an ASCII byte that is neither
/// whitespace nor of the base64 alphabet: no trimming can remove it, and [`b64_path_like`]
/// rejects it), before any trimming.
///
/// A value whose first four bytes are of the alphabet (so that no trimming touches them) and
/// decode to a byte outside `0x20..0x7f` is rejected from those four bytes alone:
/// [`b64_path_like`] reads its text from them and rejects that byte (or the text is shorter
/// than four bytes).
/// `b64_gate_tests::agrees_with_its_definition` checks it against the form without that step.
fn b64_gate(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 8 {
        return false;
    }
    let v = [0, 1, 2, 3].map(|k| crate::decode::B64_VALUE[b[k] as usize] as u32);
    if (v[0] | v[1] | v[2] | v[3]) < 64 {
        let w = v[0] << 18 | v[1] << 12 | v[2] << 6 | v[3];
        if [w >> 16, w >> 8 & 0xFF, w & 0xFF].iter().any(|o| !(0x20..0x7f).contains(o)) {
            return false;
        }
    } else if b[0] < 0x80 && !(char_ws(b[0]) || b64_byte(b[0])) {
        // (With the four bytes of the alphabet, the first is a [`b64_byte`]: this test is
        // needed only otherwise.)
        return false;
    }
    let t = s.trim();
    t.len() >= 8 && t.len() <= 4096 && b64_path_like(t)
}

#[cfg(test)]
mod b64_gate_tests {
    use super::*;
    use palisade_testkit::rng::XorShift64;

    /// The bytes `B64_VALUE` gives a value below 64 are the [`b64_byte`]s (why [`b64_gate`]
    /// tests the first byte only when one of the first four is not of the alphabet).
    #[test]
    fn the_alphabet_is_b64_byte() {
        for c in 0..=255u8 {
            assert_eq!(crate::decode::B64_VALUE[c as usize] < 64, b64_byte(c), "{c}");
        }
    }

    /// What [`b64_gate`] decides, by its definition, without the four-byte rejection: a value of
    /// at least eight bytes whose first byte, if ASCII, is a blank or of the alphabet, and whose
    /// trimmed text (8 to 4,096 bytes) [`b64_path_like`] accepts.
    fn b64_gate_spec(s: &str) -> bool {
        let b = s.as_bytes();
        if b.len() < 8 || (b[0] < 0x80 && !(char_ws(b[0]) || b64_byte(b[0]))) {
            return false;
        }
        let t = s.trim();
        t.len() >= 8 && t.len() <= 4096 && b64_path_like(t)
    }

    /// On base64 texts of paths and of other bytes, with padding, blanks, non-ASCII
    /// characters and stray bytes (a bounded pseudo-random sample), on every two-byte prefix
    /// of the alphabet, and on every real value of the sets and bench bodies.
    #[test]
    fn agrees_with_its_definition() {
        let alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+-/_";
        let parts = [
            "L2V0Yy9wYXNzd2Q",
            "Li4vLi4v",
            "ZXRj",
            "cGFzc3dk",
            "XHdpbmRvd3M",
            "SGVsbG8",
            "aGVsbG8gd29ybGQ",
            "=",
            "==",
            " ",
            "\t",
            "\n",
            "\u{a0}",
            "\u{e9}",
            "a",
            "Z",
            "9",
            "+",
            "-",
            "/",
            "_",
            ".",
            "%",
            "&",
            "avatar_template",
            "username",
            "\u{3000}",
        ];
        let mut rng = XorShift64::new(0x2545_f491_4f6c_dd1d);
        let (mut yes, mut no) = (0, 0);
        let mut check = |v: &str| {
            let want = b64_gate_spec(v);
            assert_eq!(b64_gate(v), want, "{v:?}");
            if want {
                yes += 1;
            } else {
                no += 1;
            }
        };
        for _ in 0..100_000 {
            check(&rng.joined(&parts, 6));
        }
        for x in alphabet.chars() {
            for y in alphabet.chars().chain("= \t".chars()) {
                for tail in ["vZXRjL3Bhc3N3ZA", "AAAAAAAA", "Li4vLi4v==", "ab", "  ", "=AAAAAA", "9_-+xyzw", "/Li4v", "\u{e9}abcdefg"] {
                    check(&format!("{x}{y}{tail}"));
                    check(&format!(" {x}{y}{tail}"));
                }
            }
        }
        for v in crate::other_util::test_values() {
            check(&v);
        }
        assert!(yes > 1_000 && no > 10_000, "{yes} {no}");
    }
}

/// An ASCII byte that `char::is_whitespace` accepts (what `str::trim` removes).
#[inline]
fn char_ws(c: u8) -> bool {
    matches!(c, b'\t'..=b'\r' | b' ')
}

/// A byte of [`b64_path_like`]'s alphabet.
#[inline]
const fn b64_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'+' | b'-' | b'/' | b'_')
}

impl Detector for PathDetector {
    fn name(&self) -> &'static str {
        NAME
    }

    fn gate(&self) -> Option<Gate> {
        Some(GATE)
    }

    fn product_token_gate(&self) -> Option<fn(&str) -> bool> {
        Some(product_token_gate)
    }

    fn check(&self, input: &Input<'_>, level: Level) -> Option<Hit> {
        let mut h = analyse(input.decoded, input.field, 0);
        if input.field == FieldKind::PathSegment && h.as_ref().is_none_or(|h| h.confidence < 80) {
            if let Some(seg) = input.decoded.split('/').find(|seg| dot_segment_with_parameter(seg)) {
                h = best(h, Some(mk(NAME, Category::PathTraversal, 80, seg, "dot segment with a path parameter")));
            }
            // The whole path: a segment before the last that is nothing but a path parameter
            // (see [`unsent_segment`]).
            if input.decoded.starts_with('/') {
                if let Some(seg) = unsent_segment(input.decoded) {
                    h = best(h, Some(mk(NAME, Category::PathTraversal, 70, seg, "dot or parameter-only segment that no client sends")));
                }
            }
        }
        // The engine shows one text as both (the same slice): no comparison of its bytes then.
        if !std::ptr::eq(input.raw, input.decoded) && input.raw != input.decoded && h.as_ref().is_none_or(|h| h.confidence < 90) {
            h = best(h, analyse(input.raw, input.field, 0));
        }
        gate(h, level)
    }

    /// Free text names a file rather than opens it when the path stands among words of a
    /// phrase (`cat /etc/hosts linux`, `logs are in /var/log`): a path alone, or inside
    /// markup or a directive (`<!--#include file="../../etc/passwd"-->`), still counts.
    fn in_free_text(&self, input: &Input<'_>, hit: Hit, _level: Level) -> Option<Hit> {
        (!path_in_phrase(input.decoded)).then_some(hit)
    }
}

/// Whether a text is a phrase with paths among its words: beside the blank-separated tokens
/// that hold a separator (the paths), at least one other, and all others words of prose
/// (letters and digits of any script, an apostrophe, a hyphen, closing punctuation).
fn path_in_phrase(text: &str) -> bool {
    let mut words = 0;
    for tok in text.split_whitespace() {
        if tok.contains(['/', '\\']) {
            continue;
        }
        if !tok.chars().all(|c| c.is_alphanumeric() || matches!(c, '\'' | '’' | '-' | ',' | '.' | '?' | '!' | ':')) {
            return false;
        }
        words += 1;
    }
    words > 0
}

/// Map overlong UTF-8 encodings (and the invalid variants IIS-era servers accepted) of
/// `.`, `/` and `\` to the ASCII character; other bytes pass through.
fn fold_overlong(b: &[u8]) -> Vec<u8> {
    step(b.len());
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        // Number of 0x80 filler continuation bytes after the lead for 3..6-byte overlongs.
        let fill = match c {
            0xE0 => 1,
            0xF0 => 2,
            0xF8 => 3,
            0xFC => 4,
            _ => usize::MAX,
        };
        if fill != usize::MAX && i + 1 + fill < b.len() && b[i + 1..i + 1 + fill].iter().all(|&x| x == 0x80) {
            if let Some(&last) = b.get(i + 1 + fill) {
                let v = last & 0x3f;
                if matches!(v, b'.' | b'/' | b'\\') || (v == 0x1c) {
                    out.push(if v == 0x1c { b'\\' } else { v });
                    i += fill + 2;
                    continue;
                }
            }
        }
        if (c == 0xC0 || c == 0xC1) && i + 1 < b.len() {
            let n = b[i + 1];
            let v = ((c & 1) << 6) | (n & 0x3f);
            let mapped = if matches!(n, b'.' | b'/' | b'\\') {
                Some((n, 2))
            } else if matches!(v, b'.' | b'/' | b'\\') {
                Some((v, 2))
            } else if n == 0x5e || n == 0xfe || n == 0xee {
                Some((b'.', 2))
            } else if n == b'%' {
                // `%c0%qf`, `%c1%8s`, `%c0%9v`: undecodable second byte, a separator in the lists
                // of known IIS bypasses.
                Some((b'/', 4.min(b.len() - i)))
            } else if n == 0x1c || n == 0x9c {
                Some((b'\\', 2))
            } else {
                // Never valid UTF-8: treat as a separator rather than let it hide a segment.
                Some((b'/', 2))
            };
            if let Some((ch, len)) = mapped {
                out.push(ch);
                i += len;
                continue;
            }
        }
        out.push(c);
        i += 1;
    }
    out
}

/// Literal `0x2e` / `0x2f` / `0x5c` (an encoding seen in traversal lists) and `..2f`/`..5c`.
fn fold_hex_literals(b: &[u8]) -> Vec<u8> {
    step(b.len());
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'0' && i + 3 < b.len() && (b[i + 1] | 0x20) == b'x' {
            let m = match (b[i + 2], b[i + 3] | 0x20) {
                (b'2', b'e') => Some(b'.'),
                (b'2', b'f') => Some(b'/'),
                (b'5', b'c') => Some(b'\\'),
                _ => None,
            };
            if let Some(m) = m {
                out.push(m);
                i += 4;
                continue;
            }
        }
        if i >= 2 && b[i - 1] == b'.' && b[i - 2] == b'.' && i + 1 < b.len() {
            let m = match (b[i], b[i + 1] | 0x20) {
                (b'2', b'f') => Some(b'/'),
                (b'5', b'c') => Some(b'\\'),
                _ => None,
            };
            if let Some(m) = m {
                out.push(m);
                i += 2;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    out
}

fn is_hex(b: u8) -> bool {
    b.is_ascii_hexdigit()
}

/// `%2%e` (what `%%32%%65`, an IIS double-decoding trick, becomes after one round) → `%2e`.
fn fold_split_escapes(b: &[u8]) -> Vec<u8> {
    step(b.len());
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 3 < b.len() && is_hex(b[i + 1]) && b[i + 2] == b'%' && is_hex(b[i + 3]) {
            out.extend_from_slice(&[b'%', b[i + 1], b[i + 3]]);
            i += 4;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    out
}

/// What is left of `%` after decoding is not an escape: `%bg%qf` and `%\` are separators in
/// the bypass lists (servers that map invalid escapes), so they become `/` for the path view.
fn fold_bogus_escapes(b: &[u8]) -> Vec<u8> {
    step(b.len());
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let a = b.get(i + 1).copied().unwrap_or(0);
            let c = b.get(i + 2).copied().unwrap_or(0);
            if is_hex(a) && is_hex(c) {
                out.push(b'%');
                i += 1;
                continue;
            }
            out.push(b'/');
            i += if a.is_ascii_alphanumeric() && c.is_ascii_alphanumeric() { 3 } else { 1 };
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    out
}

/// Normalised text plus whether a null byte was seen (borrowed when there is nothing to fold).
pub(crate) fn normalise(s: &str) -> (Cow<'_, str>, bool) {
    // Nothing to fold: no escape, control, non-ASCII character or hex literal.
    let b = s.as_bytes();
    let plain = b.iter().all(|&c| CLASS[c as usize] & NOT_PLAIN == 0)
        && !each_byte_of(b, [b'.'], |i| b.get(i + 1) == Some(&b'.'))
        && !each_byte_of(b, [b'0'], |i| b.get(i + 1).is_some_and(|c| c | 0x20 == b'x'));
    if plain {
        return (Cow::Borrowed(s), false);
    }
    let mut cur = s.as_bytes().to_vec();
    for _ in 0..4 {
        if !cur.contains(&b'%') {
            break;
        }
        let next = fold_split_escapes(&pct_round(&cur));
        if next == cur {
            break;
        }
        cur = next;
    }
    let mut null = cur.windows(3).any(|w| w.eq_ignore_ascii_case(b"%00"));
    step(cur.len());
    if cur.contains(&b'%') {
        cur = fold_bogus_escapes(&cur);
    }
    let cur = fold_hex_literals(&fold_overlong(&cur));
    let text = String::from_utf8_lossy(&cur);
    step(text.len());
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        let m = match ch {
            '\0' => {
                null = true;
                continue;
            }
            '\u{ff0e}' | '\u{2024}' | '\u{fe52}' => '.',
            '\u{2025}' => {
                out.push_str("..");
                continue;
            }
            '\u{2026}' => {
                out.push_str("...");
                continue;
            }
            '\u{ff0f}' | '\u{2215}' | '\u{2044}' | '\u{f025}' | '\u{efc8}' | '\u{29f8}' => '/',
            '\u{ff3c}' | '\u{2216}' | '\u{fe68}' | '\u{29f5}' | '\u{29f9}' => '\\',
            c if (c as u32) < 0x20 || c == '\u{7f}' => continue,
            c => c,
        };
        out.push(m);
    }
    (Cow::Owned(out), null)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Root {
    Relative,
    Unix,
    Backslash,
    Drive,
    Url,
}

/// A request path's segment that is `.` or `..` with a path parameter (`..;`, `.;x=1`): a
/// server that strips parameters (Tomcat, Jetty, Spring) resolves it as a dot segment after a
/// proxy matched its rules on the path as written. Clients remove dot segments before they
/// send a path (RFC 3986, 5.2.4), so none sends one, with a parameter or without.
fn dot_segment_with_parameter(seg: &str) -> bool {
    seg.split_once(';').is_some_and(|(dots, _)| dots == "." || dots == "..")
}

/// In a request path (decoded, from its leading `/`): a segment before the last that is nothing
/// but a path parameter (`/;/admin`, `/;x=1/admin`): empty once a server strips parameters
/// (Tomcat, Jetty, Spring), after a proxy matched its rules on the path as written. A `.`
/// segment is no such trick: the path canonicaliser removes dot segments (RFC 3986, 5.2.4)
/// before routing and policies, and the upstream gets the canonical path (`path.forward:
/// canonical`), so a client that leaves `./` in a path is not refused for it.
/// The last segment is left alone (`/;jsessionid=...`, a session id rewritten into the URL).
fn unsent_segment(path: &str) -> Option<&str> {
    let mut segs = path.split('/').skip(1).peekable();
    while let Some(seg) = segs.next() {
        if segs.peek().is_some() && seg.starts_with(';') {
            return Some(seg);
        }
    }
    None
}

fn is_up(seg: &str) -> bool {
    // `..;jsessionid` (Tomcat path parameters), trailing spaces/dots tolerated by Windows.
    let seg = seg.split(';').next().unwrap_or("");
    // `?` stands for a dot in some bypass lists (`.?/`, `?./`); a lone `?` segment does not.
    let t = seg.trim_matches(' ');
    t.len() >= 2 && t.bytes().all(|b| b == b'.' || b == b'?') && t.bytes().filter(|&b| b == b'.').count() >= 1
}

/// The names [`sensitive_file`] knows exactly (lowercase), the arms of the `match` it had
/// (`tests::sensitive_name_is_what_its_lists_say`).
const SENSITIVE_NAMES: [&str; 78] = [
    "passwd",
    "master.passwd",
    "shadow",
    "shadow-",
    "gshadow",
    "group",
    "hosts",
    "issue",
    "motd",
    "sudoers",
    "crontab",
    "fstab",
    "mtab",
    "boot.ini",
    "win.ini",
    "system.ini",
    "desktop.ini",
    "autoexec.bat",
    "config.sys",
    "sam",
    "ntds.dit",
    "httpd.conf",
    "httpd2.conf",
    "apache2.conf",
    "nginx.conf",
    "lighttpd.conf",
    "php.ini",
    "my.cnf",
    "my.ini",
    "web.config",
    "web.xml",
    ".htaccess",
    ".htpasswd",
    ".passwd",
    ".env",
    ".bash_history",
    ".bash_profile",
    ".bashrc",
    ".profile",
    ".zsh_history",
    ".mysql_history",
    ".viminfo",
    ".netrc",
    ".pgpass",
    ".git-credentials",
    "id_rsa",
    "id_dsa",
    "id_ecdsa",
    "id_ed25519",
    "authorized_keys",
    "known_hosts",
    "wp-config.php",
    "config.inc.php",
    "configuration.php",
    "localsettings.php",
    "settings.php",
    "database.yml",
    "environ",
    "cmdline",
    "sysprep.xml",
    "sysprep.inf",
    "unattend.xml",
    "unattended.xml",
    "php.ini-development",
    "tomcat-users.xml",
    "server.xml",
    "context.xml",
    "applicationhost.config",
    "credentials",
    "config.php",
    "ntuser.dat",
    "metabase.xml",
    ".rhosts",
    ".shosts",
    ".forward",
    ".cshrc",
    ".sh_history",
    ".xauthority",
];

/// Bit `len` of entry `c & 31`: a name of [`SENSITIVE_NAMES`] of `len` bytes starts
/// (`first`) or ends (not `first`) with a byte `c` (a necessary condition; 128 bytes each).
const fn names_by_len(first: bool) -> [u32; 32] {
    let mut t = [0u32; 32];
    let mut i = 0;
    while i < SENSITIVE_NAMES.len() {
        let n = SENSITIVE_NAMES[i].as_bytes();
        let c = if first { n[0] } else { n[n.len() - 1] };
        t[(c & 31) as usize] |= 1 << n.len();
        i += 1;
    }
    t
}
static NAME_START: [u32; 32] = names_by_len(true);
static NAME_END: [u32; 32] = names_by_len(false);

/// The [`SENSITIVE_NAMES`] of files that exist only in `/etc` and whose names are words
/// (a trailing `.` or blank ignored, as [`sensitive_name`] does).
fn etc_only(name: &str) -> bool {
    let n = name.trim_end_matches(['.', ' ']);
    ["passwd", "shadow", "gshadow", "group", "hosts", "issue", "motd", "sudoers", "crontab", "fstab", "mtab"].iter().any(|w| n.eq_ignore_ascii_case(w))
}

/// Files whose name alone says "configuration, credentials or logs of the host".
fn sensitive_file(name: &str) -> bool {
    sensitive_name(name.as_bytes())
}

/// [`sensitive_file`] on the bytes of a name (what [`plain_path`] has, with no `str` check to
/// pay). A name is looked up in [`SENSITIVE_NAMES`] only when its length, first and last bytes
/// are those of a name there ([`NAME_START`], [`NAME_END`]): most names are decided by two bit
/// tests instead of the comparisons of a `match`.
fn sensitive_name(name: &[u8]) -> bool {
    let mut n = name;
    while let [rest @ .., b' ' | b'.'] = n {
        n = rest;
    }
    let (Some(&f), Some(&l)) = (n.first(), n.last()) else { return false };
    let len = n.len();
    if len < 32 && ((NAME_START[(f & 31) as usize] & NAME_END[(l & 31) as usize]) >> len) & 1 != 0 && SENSITIVE_NAMES.iter().any(|x| x.as_bytes() == n) {
        return true;
    }
    // Logs: `access.log`, `error_log`, `mysql.log.1`, `syslog.2.gz`, `sess_<id>`.
    if n.starts_with(b"sess_") || n == b"messages" || n.ends_with(b".err") {
        return true;
    }
    // Every remaining pattern contains `log` (one search instead of eight).
    if !each_byte_of(n, [b'l'], |p| n[p..].starts_with(b"log")) {
        return false;
    }
    let has = |w: &[u8]| n.windows(w.len()).any(|x| x == w);
    has(b"access_log")
        || has(b"access.log")
        || has(b"error_log")
        || has(b"error.log")
        || n.ends_with(b".log")
        || n.ends_with(b"_log")
        || has(b".log.")
        || n == b"syslog"
}

/// Top directories of a Unix file system (or Windows ones written with a leading slash) that a
/// web parameter has no business naming, with a check on what follows.
fn system_root(segs: &[&str]) -> bool {
    let Some(first) = segs.first() else { return false };
    let second = segs.get(1).copied().unwrap_or("");
    match *first {
        "etc" | "proc" | "usr" | "var" | "opt" | "root" | "boot" | "srv" | "mnt" | "tmp" | "inetpub" | "xampp" | "wamp" | "lampp" => segs.len() >= 2,
        "dev" => {
            matches!(second, "null" | "zero" | "random" | "urandom" | "tcp" | "udp" | "fd" | "stdin" | "stdout" | "stderr" | "shm" | "mem" | "kmem" | "tty")
        }
        "sys" => matches!(second, "class" | "kernel" | "devices" | "power" | "block" | "bus" | "firmware" | "fs" | "module"),
        "private" => matches!(second, "etc" | "var" | "tmp"),
        "windows" | "winnt" => {
            segs.len() >= 2
                && matches!(second, "system32" | "system" | "repair" | "win.ini" | "system.ini" | "php.ini" | "panther" | "debug" | "iis7.log" | "inf" | "temp")
        }
        "home" => segs.iter().skip(2).any(|s| s.starts_with('.')),
        "volumes" => segs.len() >= 3,
        "library" => matches!(second, "webserver" | "preferences" | "logs" | "keychains"),
        _ => false,
    }
}

fn is_drive(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 3 && b[0].is_ascii_alphabetic() && b[1] == b':' && (b[2] == b'\\' || b[2] == b'/')
}

/// Whether `s` starts with a URL scheme: its first `://` comes after two or more bytes that are
/// all ASCII letters, digits, `+`, `.` or `-`. Read on the scheme alone: `:` is none of those
/// bytes, so the first byte that is not one must be the `:` of that `://` (any later `://`
/// has it before, and a `:` not followed by `//` is before every later one), and nothing
/// after it is looked at (`tests::is_url_reads_the_scheme`).
#[inline]
fn is_url(s: &str) -> bool {
    let b = s.as_bytes();
    // The common schemes, lowercase, by two word comparisons.
    if b.starts_with(b"https://") || b.starts_with(b"http://") {
        return true;
    }
    let p = b.iter().position(|&c| !(c.is_ascii_alphanumeric() || c == b'+' || c == b'.' || c == b'-')).unwrap_or(b.len());
    p > 1 && b.get(p) == Some(&b':') && b[p + 1..].starts_with(b"//")
}

struct Cand {
    conf: u8,
    why: &'static str,
    cat: Category,
}

/// Whether `c` may hold a segment [`is_up`] accepts.
fn may_climb(c: &str) -> bool {
    let b = c.as_bytes();
    each_byte_of(b, [b'.'], |i| matches!(b.get(i + 1), Some(b'.' | b'?')) || (i > 0 && b[i - 1] == b'?'))
}

/// Whether `c` holds a `/` or `\\` (with no `memchr` set-up on a short token).
#[inline]
fn has_slash(c: &str) -> bool {
    each_byte_of(c.as_bytes(), [b'/', b'\\'], |_| true)
}

fn judge(c: &str, null: bool, field: FieldKind) -> Option<Cand> {
    judge_known(c, null, field, may_climb(c), has_slash(c))
}

/// [`judge`] with [`may_climb`] of `c` (`climb`) and whether `c` holds a separator (`slash`)
/// already known.
fn judge_known(c: &str, null: bool, field: FieldKind, climb: bool, slash: bool) -> Option<Cand> {
    // Without a separator or a segment that climbs, only a NUL can make a finding; a URL
    // (`scheme://`) needs a climbing segment or a NUL.
    if !null && !climb && (!slash || is_url(c) || plain_path(c)) {
        step(c.len());
        return None;
    }
    judge_walk(c, null, field)
}

/// Whether `seg` is, in any ASCII case, a first segment [`system_root`] knows: lowercased into a
/// buffer (every name has 3 to 8 bytes) and compared by a `match` (the list it replaces is
/// `tests::SYSTEM_FIRST`; `tests::system_first_agrees_with_the_list`).
#[inline]
fn system_first(seg: &[u8]) -> bool {
    if !(3..=8).contains(&seg.len()) {
        return false;
    }
    let mut buf = [0u8; 8];
    let lc = &mut buf[..seg.len()];
    lc.copy_from_slice(seg);
    lc.make_ascii_lowercase();
    matches!(
        &*lc,
        b"etc"
            | b"proc"
            | b"usr"
            | b"var"
            | b"opt"
            | b"root"
            | b"boot"
            | b"srv"
            | b"mnt"
            | b"tmp"
            | b"inetpub"
            | b"xampp"
            | b"wamp"
            | b"lampp"
            | b"dev"
            | b"sys"
            | b"private"
            | b"windows"
            | b"winnt"
            | b"home"
            | b"volumes"
            | b"library"
    )
}

/// Whether [`judge_walk`] finds nothing in `c`, a text with a separator, no segment that
/// climbs ([`may_climb`] is false: the walk resolves nothing, its segments are those of the
/// text), no NUL and no URL scheme. Such a path can then only be reported for its root and its
/// ends: a drive (`C:\`), a first segment that is a system directory (`/etc/...`) or a drive
/// behind a slash (`/c:/`), a sensitive last segment (`x/web.config`), or a path of dots and
/// separators alone. `/user_avatar/example.com/{size}/6_1.png`, `/c/latest?page=1` and
/// `docs/guide.md` have none: two scans from the ends instead of the walk.
fn plain_path(c: &str) -> bool {
    let b = c.as_bytes();
    if is_drive(c) || b.iter().all(|&x| matches!(x, b'.' | b'/' | b'\\')) {
        return false;
    }
    let is_sep = |x: u8| x == b'/' || x == b'\\';
    // The segments the walk keeps: not empty, not `.`.
    let kept = |seg: &[u8]| !seg.is_empty() && seg != b".";
    // The last kept segment (`rsplit` of the separators, from the end); with none, nothing to
    // report.
    let mut end = b.len();
    let last = loop {
        let start = last_byte_of(&b[..end], [b'/', b'\\']).map_or(0, |p| p + 1);
        let seg = &b[start..end];
        if kept(seg) {
            break seg;
        }
        if start == 0 {
            return true;
        }
        end = start - 1;
    };
    // The first kept segment matters behind a leading separator alone (`/etc/`, `/c:/`).
    if is_sep(b[0]) {
        let mut i = 0;
        let first = loop {
            while i < b.len() && is_sep(b[i]) {
                i += 1;
            }
            let start = i;
            // A segment of nine bytes or more is kept and is neither a system directory (three
            // to eight bytes) nor a drive: its first nine bytes decide as well as the whole.
            let lim = b.len().min(start + 9);
            while i < lim && !is_sep(b[i]) {
                i += 1;
            }
            // There is a kept segment (`last`), so this ends on one before the end.
            if kept(&b[start..i]) || i == b.len() {
                break &b[start..i];
            }
        };
        if system_first(first) || (first.len() == 2 && first[0].is_ascii_alphabetic() && first[1] == b':') {
            return false;
        }
    }
    let mut buf = [0u8; 64];
    let Some(lc) = buf.get_mut(..last.len()) else { return false };
    lowercase_into(lc, last);
    // A whole segment of a `str`, lowercased: UTF-8 (the `str` check was always true).
    !sensitive_name(lc)
}

/// The walk of [`judge`]: segments after `..` resolution, root, sensitive names.
fn judge_walk(c: &str, null: bool, field: FieldKind) -> Option<Cand> {
    let lc: Cow<'_, str> = if c.bytes().any(|b| b.is_ascii_uppercase()) { Cow::Owned(c.to_ascii_lowercase()) } else { Cow::Borrowed(c) };
    step(lc.len());
    let root = if is_url(&lc) {
        Root::Url
    } else if is_drive(&lc) {
        Root::Drive
    } else if lc.starts_with('/') {
        Root::Unix
    } else if lc.starts_with('\\') {
        Root::Backslash
    } else {
        Root::Relative
    };
    // Segments after `..` resolution (a stack; most paths have few segments).
    let mut segs: SmallVec<[&str; 12]> = SmallVec::new();
    let mut depth: i64 = 0;
    let mut min_depth: i64 = 0;
    let mut ups = 0u32;
    let mut first_is_up = None;
    let mut seps = 0u32;
    let body = if root == Root::Drive { &lc[2..] } else { &lc[..] };
    for seg in body.split(['/', '\\']) {
        step(1);
        seps += 1;
        if seg.is_empty() || seg == "." {
            continue;
        }
        if is_up(seg) {
            first_is_up.get_or_insert(true);
            ups += 1;
            depth -= 1;
            min_depth = min_depth.min(depth);
            segs.pop();
        } else {
            first_is_up.get_or_insert(false);
            depth += 1;
            segs.push(seg);
        }
    }
    let seps = seps.saturating_sub(1);
    let escape = min_depth < 0;
    let last = segs.last().copied().unwrap_or("");
    let sens_last = sensitive_file(last);
    let sens = sens_last || (root != Root::Url && system_root(&segs));
    let trav = Category::PathTraversal;
    let lfi = Category::Lfi;
    let mut best: Option<Cand> = None;
    fn put_in(best: &mut Option<Cand>, conf: u8, why: &'static str, cat: Category) {
        if best.as_ref().is_none_or(|b| conf > b.conf) {
            *best = Some(Cand { conf, why, cat });
        }
    }
    if escape && ups >= 1 && (sens || segs.first().is_some_and(|f| system_root(std::slice::from_ref(f)) || matches!(*f, "windows" | "winnt" | "etc"))) {
        put_in(&mut best, 95, "traversal above the root to a sensitive file", trav);
    }
    if escape && ups >= 2 {
        put_in(&mut best, 85, "path climbs above its root", trav);
    }
    // Three dots or more without a separator (`...`, `wait...`) are an ellipsis: no path.
    if escape && ups == 1 && !(seps == 0 && body.contains("...")) {
        // `..` alone and `../ meaning` are a probe or a phrase: one level needs a separator
        // and segments that do not start with a blank.
        let phrase = seps == 0 || body.split(['/', '\\']).any(|seg| seg.starts_with(' '));
        put_in(&mut best, if first_is_up == Some(true) && root != Root::Url && !phrase { 65 } else { 50 }, CLIMB_ONE, trav);
    }
    if root != Root::Url && seps >= 1 {
        let sys = (root == Root::Unix || root == Root::Backslash) && system_root(&segs);
        let win_sys = root == Root::Drive
            && segs.first().is_some_and(|f| matches!(*f, "windows" | "winnt" | "inetpub" | "xampp" | "wamp" | "boot.ini" | "sysprep.xml" | "unattend.xml"));
        if (sys || win_sys) && sens_last {
            put_in(&mut best, 92, "absolute path to a sensitive system file", lfi);
        } else if sys || win_sys {
            put_in(&mut best, 75, "absolute path into a system directory", lfi);
        }
        // The system's own files (`hosts`, `passwd`, `group`, `issue`) exist only in `/etc`:
        // elsewhere the word is a REST resource (`/api/v1/hosts`, `/groups/group`), reported
        // only where a climb or a system directory leads to it (above).
        // (The directory's last word: in text, `see etc/passwd` reads `see etc` as one.)
        let in_etc = segs.len().checked_sub(2).and_then(|i| segs.get(i)).is_some_and(|d| d.rsplit([' ', '\t']).next() == Some("etc"));
        let route_word = etc_only(last) && !in_etc;
        if sens_last && !segs.is_empty() && !route_word {
            put_in(&mut best, if root == Root::Relative { 65 } else { 75 }, "path to a sensitive file", lfi);
        }
        if root == Root::Drive && field != FieldKind::MultipartFilename {
            // A drive path in a URL-borne value is a file inclusion attempt; inside documents
            // (JSON, forms, bodies) it is ordinary text (a user's `C:\Users\...\report.docx`)
            // unless it leads into a system directory or to a sensitive file (above).
            let url_borne = matches!(field, FieldKind::QueryValue | FieldKind::PathSegment | FieldKind::Header | FieldKind::Cookie | FieldKind::QueryName);
            // Under a user profile (`C:\Users\anna\Documents\report.docx`) to a file that is
            // not sensitive (above): the name of a document a page was opened from or a form
            // filled with (analytics send the page's title and address), not a file inclusion,
            // which goes where every system has the same files.
            // The profile's own settings (`NTUSER.DAT`, `AppData`, dot directories such as
            // `.ssh`) are not documents.
            let profile = segs.first().is_some_and(|f| matches!(*f, "users" | "documents and settings"))
                && !segs.iter().any(|g| g.starts_with('.') || g.starts_with("ntuser") || *g == "appdata");
            if url_borne && !profile {
                put_in(&mut best, if segs.is_empty() { 50 } else { 62 }, "absolute Windows path", lfi);
            }
        }
        if root != Root::Relative && lc.len() >= 4 && lc.bytes().all(|b| matches!(b, b'.' | b'/' | b'\\')) && lc.contains('/') && lc.contains('\\') {
            put_in(&mut best, 60, "mixed-separator dot path (normalisation probe)", lfi);
        }
        // `/c:/windows`: the first segment is a drive (`is_drive` of the segment and its slash).
        if root == Root::Unix && segs.first().is_some_and(|f| f.len() == 2 && f.as_bytes()[0].is_ascii_alphabetic() && f.as_bytes()[1] == b':') {
            put_in(&mut best, 70, "drive path behind a slash", lfi);
        }
    }
    if null && (seps >= 1 || ups > 0 || sens) && best.is_some() {
        if let Some(b) = best.as_mut() {
            b.conf = b.conf.saturating_add(5).min(100);
        }
    } else if null && c.contains('.') && !c.contains(' ') {
        put_in(&mut best, 55, "null byte truncation of a file name", lfi);
    }
    best
}

/// [`judge_walk`]'s reason for a path that climbs one level above where it starts.
const CLIMB_ONE: &str = "path climbs one level above its root";

const WRAPPERS: &[(&str, u8, &str)] = &[
    ("php://filter", 95, "php://filter stream wrapper"),
    ("php://input", 95, "php://input stream wrapper"),
    ("php://fd", 90, "php://fd stream wrapper"),
    ("php://stdin", 85, "php stream wrapper"),
    ("php://memory", 80, "php stream wrapper"),
    ("php://temp", 80, "php stream wrapper"),
    ("expect://", 95, "expect:// wrapper (command execution)"),
    ("phar://", 90, "phar:// wrapper (deserialization)"),
    ("zip://", 85, "zip:// wrapper"),
    ("glob://", 80, "glob:// wrapper"),
    ("compress.zlib://", 85, "compression stream wrapper"),
    ("compress.bzip2://", 85, "compression stream wrapper"),
    ("data://", 80, "data:// stream wrapper"),
    ("rar://", 80, "rar:// wrapper"),
    ("ogg://", 70, "ogg:// wrapper"),
    ("ssh2.", 70, "ssh2 wrapper"),
];

const PHP_FILTERS: &[&str] =
    &["convert.iconv.", "convert.base64-", "convert.quoted-printable-", "string.rot13", "string.toupper", "zlib.deflate", "zlib.inflate", "convert.iconv"];

/// Literals every wrapper, `file:`/`data:` URL and PHP filter contains (the schemes of
/// [`WRAPPERS`], not `://` alone: every `http://` URL would pay for the wrapper search).
static WRAP_ANCHORS: LazyLock<Anchors> = LazyLock::new(|| {
    Anchors::new(&[
        "php://",
        "expect://",
        "phar://",
        "zip://",
        "glob://",
        "compress.",
        "rar://",
        "ogg://",
        "file:",
        "data:",
        "ssh2.",
        "convert.",
        "string.",
        "zlib.",
    ])
});

/// A superset of [`WRAP_ANCHORS`]`.any(s)` without the automaton: every wrapper anchor is a
/// name right before a `:` (`php`, `expect`, `phar`, `zip`, `glob`, `rar`, `ogg`, `file`,
/// `data`) or a `.` (`compress`, `ssh2`, `convert`, `string`, `zlib`), so a value where no `:`
/// or `.` follows one of these names (ASCII case-insensitive) holds no anchor. A URL or path
/// has a few of these bytes, each rejected by the byte before it mostly; the automaton reads
/// every byte (`tests::may_wrap_covers_the_wrapper_anchors`).
fn may_wrap(b: &[u8]) -> bool {
    each_byte_of(b, [b':', b'.'], |p| wrap_before(b, p, if b[p] == b':' { WRAP_BEFORE_COLON } else { WRAP_BEFORE_DOT }) && wrap_at(b, p))
}

/// [`may_wrap`]'s question at the `:` or `.` at `p`: whether a wrapper name ends right before it.
#[inline]
fn wrap_at(b: &[u8], p: usize) -> bool {
    // The names by their last byte (lowercased): one or two comparisons, none for most bytes.
    let ends = |w: &[u8]| p >= w.len() && b[p - w.len()..p].eq_ignore_ascii_case(w);
    let Some(&prev) = p.checked_sub(1).and_then(|i| b.get(i)) else { return false };
    if b[p] == b':' {
        match prev | 0x20 {
            b'p' => ends(b"php") || ends(b"zip"),
            b't' => ends(b"expect"),
            b'r' => ends(b"phar") || ends(b"rar"),
            b'b' => ends(b"glob"),
            b'g' => ends(b"ogg"),
            b'e' => ends(b"file"),
            b'a' => ends(b"data"),
            _ => false,
        }
    } else {
        match prev | 0x20 {
            b's' => ends(b"compress"),
            b'2' => ends(b"ssh2"),
            b't' => ends(b"convert"),
            b'g' => ends(b"string"),
            b'b' => ends(b"zlib"),
            _ => false,
        }
    }
}

/// The last bytes (ASCII lowercase) of the wrapper names [`wrap_at`] looks for before a `.`
/// (`compress`, `ssh2`, `convert`, `string`, `zlib`) and before a `:` (`php`, `zip`,
/// `expect`, `phar`, `rar`, `glob`, `ogg`, `file`, `data`), as bits of a mask by the byte's
/// low six bits (a superset, for [`wrap_before`]).
const WRAP_BEFORE_DOT: u64 = mask6(b"s2tgb");
const WRAP_BEFORE_COLON: u64 = mask6(b"ptrbgea");

const fn mask6(s: &[u8]) -> u64 {
    let mut m = 0u64;
    let mut i = 0;
    while i < s.len() {
        m |= 1 << (s[i] & 63);
        i += 1;
    }
    m
}

/// Whether the byte before `p` may end a wrapper name [`wrap_at`] looks for at `p` (`mask`:
/// [`WRAP_BEFORE_DOT`] or [`WRAP_BEFORE_COLON`]): [`wrap_at`] says no without it, as its
/// first test is on that byte, lowercased (`A`..`Z` and `a`..`z` share their low six bits but
/// for the `0x20` bit: `| 0x20` then `& 63` keeps a letter's bits).
#[inline]
fn wrap_before(b: &[u8], p: usize, mask: u64) -> bool {
    p > 0 && (mask >> ((b[p - 1] | 0x20) & 63)) & 1 != 0
}

fn wrappers(lc: &str) -> Option<(u8, &'static str)> {
    if !WRAP_ANCHORS.any(lc) {
        return None;
    }
    let mut r: Option<(u8, &'static str)> = None;
    for (w, c, why) in WRAPPERS {
        step(lc.len() / 8 + 1);
        if lc.contains(w) && r.is_none_or(|x| *c > x.0) {
            r = Some((*c, why));
        }
    }
    if file_urls(lc) {
        r = Some(r.map_or(85, |x| x.0.max(85)).max(85)).map(|c| (c, "file: URL"));
    }
    // `data:` URIs carrying PHP code (images in data: URIs are ordinary).
    if let Some(p) = lc.find("data:") {
        let rest = &lc[p + 5..];
        let comma = rest.find(',').unwrap_or(rest.len());
        let meta = &rest[..comma];
        if !meta.starts_with("image/") && !meta.starts_with("font/") && comma < rest.len() {
            let payload = &rest[comma + 1..];
            let code = if meta.ends_with(";base64") {
                // base64 is case-sensitive: decode the original-case payload is not available
                // here, so look for the base64 forms of `<?php` / `<?=` instead.
                payload.starts_with("pd9wahag") || payload.starts_with("pd9waha") || payload.starts_with("pd89")
            } else {
                payload.trim_start().starts_with("<?")
            };
            if code {
                r = Some((95, "data: URI carrying PHP code"));
            }
        }
    }
    if r.is_none() {
        for f in PHP_FILTERS {
            step(lc.len() / 8 + 1);
            if let Some(p) = lc.find(f) {
                let before_ok = p == 0 || !lc.as_bytes()[p - 1].is_ascii_alphanumeric();
                if before_ok {
                    return Some((70, "PHP filter chain"));
                }
            }
        }
    }
    r
}

/// Whether `lc` (lowercased) holds a `file:` URL that reads a file the way an inclusion does.
/// Every `file:` URL is, except the one of a developer's own source file where it is written
/// as a script names it: a stack frame's location (`at f (file:///app/src/x.js:10:5)`, the
/// `:line:column` of [`file_url_path`]) or a resource a page loaded (a script, style or page:
/// [`source_file`]), and then only when its path reaches nothing a path is judged for (a
/// system directory, a sensitive file, a climb; a drive alone is not): `file:///etc/passwd:1:1` and
/// `file:///proc/self/environ` are read as they always are.
fn file_urls(lc: &str) -> bool {
    let b = lc.as_bytes();
    let mut from = 0;
    while let Some(q) = lc[from..].find("file:") {
        let p = from + q;
        from = p + 5;
        step(1);
        let rest = &lc[p + 5..];
        let before_ok = p == 0 || !b[p - 1].is_ascii_alphanumeric();
        if !(before_ok && (rest.starts_with('/') || rest.starts_with('\\') || is_drive(rest))) {
            continue;
        }
        let (path, frame) = file_url_path(rest);
        if !((frame || source_file(path)) && judge_walk(path, false, FieldKind::JsonValue).is_none_or(|c| c.conf < 60)) {
            return true;
        }
    }
    false
}

/// The path of a `file:` URL (`rest`: what follows `file:`, lowercased) as a file API reads
/// it, up to the first byte no URL in text holds (a blank, a quote, a bracket), without the
/// host of `//host/`, the query and the fragment; and whether it ends in a stack frame's
/// `:line` or `:line:column` (removed from the path).
fn file_url_path(rest: &str) -> (&str, bool) {
    let end = rest
        .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '`' | '<' | '>' | '(' | ')' | '[' | ']' | '{' | '}' | ',' | '|'))
        .unwrap_or(rest.len());
    let mut url = &rest[..end];
    url = &url[..url.find(['?', '#']).unwrap_or(url.len())];
    // `//host/path` (`///path`: an empty host).
    if let Some(h) = url.strip_prefix("//") {
        url = h.find(['/', '\\']).map_or("", |i| &h[i..]);
    }
    // `/c:/...`: the drive of a Windows path.
    if url.len() >= 4 && url.starts_with('/') && is_drive(&url[1..]) {
        url = &url[1..];
    }
    let digits = |s: &str| !s.is_empty() && s.len() <= 7 && s.bytes().all(|c| c.is_ascii_digit());
    // `:line:column` ends the location wherever it is (the line break after a frame is gone
    // once control characters are removed: `index.ts:12:3` then the next frame's name).
    let b = url.as_bytes();
    for (i, _) in url.match_indices(':') {
        let line = b[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
        let col = if b.get(i + 1 + line) == Some(&b':') { b[i + 2 + line..].iter().take_while(|c| c.is_ascii_digit()).count() } else { 0 };
        if i > 1 && (1..=7).contains(&line) && (1..=7).contains(&col) {
            return (&url[..i], true);
        }
    }
    let mut frame = false;
    for _ in 0..2 {
        match url.rsplit_once(':') {
            Some((head, n)) if digits(n) && !head.is_empty() && !(head.len() == 1 && head.as_bytes()[0].is_ascii_alphabetic()) => {
                url = head;
                frame = true;
            }
            _ => break,
        }
    }
    (url, frame)
}

/// Whether the last segment of `path` is a file a web page or a script loads from its
/// developer's tree: scripts (JavaScript, TypeScript and their module forms, JSX, the
/// single-file components of Vue and Svelte), styles, pages, source maps, WebAssembly.
pub(crate) fn source_file(path: &str) -> bool {
    let name = path.rsplit(['/', '\\']).next().unwrap_or("");
    let Some((stem, ext)) = name.rsplit_once('.') else { return false };
    !stem.is_empty()
        && matches!(
            ext,
            "js" | "mjs" | "cjs" | "jsx" | "ts" | "mts" | "cts" | "tsx" | "vue" | "svelte" | "css" | "scss" | "sass" | "less" | "html" | "htm" | "map" | "wasm"
        )
}

/// [`CLASS`] bits: `x` or `X`, the second byte of a `0x` [`normalise`] folds; a
/// [`token_separator`], an [`is_blank`] byte.
const HEX_X: u16 = 1;
const TOKEN_SEP: u16 = 2;
const BLANK: u16 = 4;
/// `.` and `?`: a byte of a pair [`normalise`] folds (`..`) or of a segment that may climb
/// ([`may_climb`]: `..`, `.?`, `?.`).
const PAIR: u16 = 8;
/// `/` and `\`.
const SLASH: u16 = 16;
/// `:`, after which a wrapper name or a URL scheme may end ([`wrap_at`], [`is_url`]).
const COLON: u16 = 32;
/// Not printable ASCII, or `%`: a byte [`normalise`] may fold (one OR over the bytes tells
/// whether there is one).
const NOT_PLAIN: u16 = 64;
/// Not of [`b64_path_like`]'s alphabet ([`b64_byte`]) nor `=`: a value with one is no base64.
const NOT_B64: u16 = 128;
/// `0`, the first byte of a `0x` [`normalise`] folds (with [`HEX_X`]).
const ZERO: u16 = 256;

/// Byte classes, one lookup per byte in the scans of [`analyse`] and [`normalise`].
static CLASS: [u16; 256] = {
    let mut t = [0u16; 256];
    let mut c = 0;
    while c < 256 {
        if !(c >= 0x20 && c < 0x7f && c != b'%' as usize) {
            t[c] |= NOT_PLAIN;
        }
        if !(b64_byte(c as u8) || c == b'=' as usize) {
            t[c] |= NOT_B64;
        }
        c += 1;
    }
    let seps = b"\"'=()<>|&,`";
    let mut i = 0;
    while i < seps.len() {
        t[seps[i] as usize] |= TOKEN_SEP;
        i += 1;
    }
    let blanks = b" \t\n\x0b\x0c\r";
    let mut i = 0;
    while i < blanks.len() {
        t[blanks[i] as usize] |= BLANK;
        i += 1;
    }
    t[b'.' as usize] |= PAIR;
    t[b'?' as usize] |= PAIR;
    t[b'x' as usize] |= HEX_X;
    t[b'X' as usize] |= HEX_X;
    t[b'0' as usize] |= ZERO;
    t[b'/' as usize] |= SLASH;
    t[b'\\' as usize] |= SLASH;
    t[b':' as usize] |= COLON;
    t
};

/// What one pass over the bytes of a value says, for [`analyse`]'s common case (a URL or a
/// path of printable ASCII: nothing to normalise, no blank, no delimiter to cut tokens at).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Facts {
    /// [`normalise`] returns the value itself, without a NUL: no byte is [`NOT_PLAIN`], and
    /// there is no `..` and no `0x`/`0X`.
    plain: bool,
    /// An [`is_blank`] byte.
    blank: bool,
    /// A [`token_separator`].
    sep: bool,
    /// [`may_climb`].
    climb: bool,
    /// A `/` or `\`.
    slash: bool,
    /// A `:`.
    colon: bool,
    /// [`may_wrap`].
    wrap: bool,
    /// A byte that is neither of the base64 alphabet nor `=` ([`b64_path_like`] says no).
    not_b64: bool,
}

fn facts(b: &[u8]) -> Facts {
    // One OR of the byte classes, then the pairs at the few `.`, `?` and `:` there are (and
    // `0`, when there is an `x` or `X` too: `0x`).
    let mut any = 0u16;
    for &c in b {
        any |= CLASS[c as usize];
    }
    let (mut fold, mut climb, mut wrap) = (false, false, false);
    let hex = any & (ZERO | HEX_X) == ZERO | HEX_X;
    if any & (PAIR | COLON) != 0 || hex {
        let mut visit = |i: usize| {
            let next = b.get(i + 1).copied().unwrap_or(0);
            match b[i] {
                b'.' => {
                    fold |= next == b'.';
                    climb |= matches!(next, b'.' | b'?');
                    wrap = wrap || (wrap_before(b, i, WRAP_BEFORE_DOT) && wrap_at(b, i));
                }
                b':' => wrap = wrap || (wrap_before(b, i, WRAP_BEFORE_COLON) && wrap_at(b, i)),
                b'?' => climb |= next == b'.',
                _ => fold |= next | 0x20 == b'x',
            }
            false
        };
        if hex {
            each_byte_of(b, [b'.', b'?', b':', b'0'], &mut visit);
        } else {
            each_byte_of(b, [b'.', b'?', b':'], &mut visit);
        }
    }
    Facts {
        plain: any & NOT_PLAIN == 0 && !fold,
        blank: any & BLANK != 0,
        sep: any & TOKEN_SEP != 0,
        climb,
        slash: any & SLASH != 0,
        colon: any & COLON != 0,
        wrap,
        not_b64: any & NOT_B64 != 0,
    }
}

/// Quotes, operators and delimiters around a path named inside a larger value.
#[inline]
fn token_separator(c: u8) -> bool {
    CLASS[c as usize] & TOKEN_SEP != 0
}

/// The ASCII characters `char::is_whitespace` accepts.
#[inline]
fn is_blank(c: u8) -> bool {
    CLASS[c as usize] & BLANK != 0
}

/// `str::contains(char::is_whitespace)`, by bytes when the text is ASCII.
#[inline]
fn has_whitespace(s: &str) -> bool {
    if s.is_ascii() {
        s.bytes().any(is_blank)
    } else {
        s.contains(char::is_whitespace)
    }
}

fn analyse(s: &str, field: FieldKind, depth: u8) -> Option<Hit> {
    if s.is_empty() {
        return None;
    }
    // A `/` or `\` ([`Facts::slash`]) is the first thing [`may_hold_path`] looks for: with
    // one, the facts answer it.
    let f = facts(s.as_bytes());
    if !f.slash && !may_hold_path(s) {
        return None;
    }
    if f.plain && !f.blank && !f.sep {
        return analyse_plain(s, field, depth, f);
    }
    analyse_general(s, field, depth, f.plain.then_some(f))
}

/// [`analyse_general`] of a value whose [`Facts`] say: nothing to normalise (the value is its
/// own normal form, with no NUL), nothing to trim, a single token. One pass over the bytes
/// ([`facts`]) instead of one per question (`tests::analyse_plain_agrees_with_the_general_path`).
fn analyse_plain(s: &str, field: FieldKind, depth: u8, f: Facts) -> Option<Hit> {
    step(s.len());
    let mut out: Option<Hit> = None;
    if f.wrap && WRAP_ANCHORS.any(s) {
        if let Some((c, why)) = wrappers(&s.to_ascii_lowercase()) {
            out = Some(mk(NAME, Category::Lfi, c, s, why));
        }
    }
    // [`judge_known`] without a NUL, knowing whether there is a `:` (no `:`, no URL).
    if f.climb || (f.slash && !(f.colon && is_url(s)) && !plain_path(s)) {
        if let Some(c) = judge_walk(s, false, field) {
            out = best(out, Some(mk(NAME, c.cat, c.conf, s, c.why)));
        }
    }
    if depth == 0 && out.is_none() && !f.not_b64 {
        out = b64_path(s, field);
    }
    out
}

/// A whole value in base64 (`Li4vLi4v...` = `../../`), for [`analyse`] (`t` trimmed, without
/// whitespace).
fn b64_path(t: &str, field: FieldKind) -> Option<Hit> {
    if t.len() < 8 || t.len() > 4096 || !b64_path_like(t) {
        return None;
    }
    let bytes = b64_decode(t)?;
    let t = std::str::from_utf8(&bytes).ok()?;
    if !(t.bytes().all(|b| (0x20..0x7f).contains(&b)) && t.contains(['/', '\\'])) {
        return None;
    }
    let mut h = analyse(t, field, 1)?;
    h.confidence = h.confidence.saturating_sub(5);
    h.why = "base64-encoded path";
    Some(h)
}

/// [`analyse`] of any value: normalised, the whole value then its tokens judged, base64.
///
/// `plain`: the [`Facts`] of `s` when they say [`Facts::plain`] (`s` is its own normal form,
/// without a NUL): the scans they answer are not made again (`None` reads everything).
fn analyse_general(s: &str, field: FieldKind, depth: u8, plain: Option<Facts>) -> Option<Hit> {
    let (n, null) = if plain.is_some() { (Cow::Borrowed(s), false) } else { normalise(s) };
    step(n.len());
    let mut out: Option<Hit> = None;
    if plain.map_or_else(|| may_wrap(n.as_bytes()), |f| f.wrap) && WRAP_ANCHORS.any(&n) {
        if let Some((c, why)) = wrappers(&n.to_ascii_lowercase()) {
            out = Some(mk(NAME, Category::Lfi, c, &n, why));
        }
    }
    // The whole value as one path (Windows paths contain spaces), then its tokens.
    let trimmed = n.trim();
    let whole_has_space = has_whitespace(trimmed);
    // Trimming removes blanks alone, none of them a byte of a climbing pair or a separator.
    let whole = match plain {
        Some(f) => judge_known(trimmed, false, field, f.climb, f.slash),
        None => judge(trimmed, null, field),
    };
    if let Some(c) = whole {
        // A prose value that happens to hold a slash is judged by its tokens instead.
        let words = trimmed.split_whitespace().count();
        let plain = trimmed.split_whitespace().filter(|w| w.len() >= 2 && w.bytes().all(|b| b.is_ascii_alphabetic())).count();
        let prose = whole_has_space && (words > 6 || words > 3 && plain >= 2);
        // One `../` before words (`../images/logo.png in CSS`) is a relative reference a
        // sentence names, judged as a token of the sentence (below).
        if !(prose || whole_has_space && c.why == CLIMB_ONE) {
            out = best(out, Some(mk(NAME, c.cat, c.conf, trimmed, c.why)));
        }
    }
    if whole_has_space || trimmed.bytes().any(token_separator) {
        let sep = |c: char| if c.is_ascii() { is_blank(c as u8) || token_separator(c as u8) } else { c.is_whitespace() };
        for tok in trimmed.split(sep) {
            step(1);
            if tok.len() < 3 || tok.len() == trimmed.len() {
                continue;
            }
            // A token holds no climbing pair the value does not hold.
            let found = match plain {
                Some(f) => judge_known(tok, false, field, f.climb && may_climb(tok), has_slash(tok)),
                None => judge(tok, null, field),
            };
            if let Some(c) = found {
                // Paths named inside prose are weaker evidence than a value that is a path,
                // except for traversal, which prose does not contain: a system directory
                // named in a sentence (`logs are in /var/log/app`) stays below the threshold.
                // One level up in a sentence is a relative reference (`see ../images/logo.png
                // in CSS`, `the ../README.md explains`): it climbs above the document it is
                // written in, not above a root; reported below every level.
                let conf = if c.cat == Category::PathTraversal && c.conf >= 85 {
                    c.conf
                } else if whole_has_space && c.why == CLIMB_ONE {
                    c.conf.min(35)
                } else {
                    c.conf.saturating_sub(20)
                };
                out = best(out, Some(mk(NAME, c.cat, conf, tok, c.why)));
            }
        }
    }
    // A whole value in base64 (`Li4vLi4v...` = `../../`).
    if depth == 0 && out.is_none() && !whole_has_space {
        out = b64_path(trimmed, field);
    }
    out
}

#[cfg(test)]
#[path = "path_tests.rs"]
mod tests;
