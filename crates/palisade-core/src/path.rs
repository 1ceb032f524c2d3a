//! The canonical request path: one form per request that every matcher (app routing, access
//! routes, OpenAPI operations, user rules, detection path policies) compares against, so that
//! no spelling of a path reaches a backend under a policy meant for another.
//!
//! [`canonicalize`] is a pure function of the raw path (without the query) and a
//! [`PathPolicy`]. The canonical form is:
//! - absolute (starts with `/`);
//! - percent-encoded unreserved characters (`ALPHA DIGIT - . _ ~`) decoded (`/%61dmin` is
//!   `/admin`), every other escape kept with upper-case hex (`%3b` is `%3B`), and every byte
//!   that may not appear literally in a path segment (RFC 3986 `pchar`) percent-encoded, raw
//!   non-ASCII included (`/café` and `/caf%C3%A9` are one path);
//! - dot segments removed as RFC 3986 §5.2.4 `remove_dot_segments` does, `%2e` counting as a
//!   dot; a `..` that would climb above the root is an error ([`PathError::AboveRoot`]), as
//!   nginx answers it with 400;
//! - runs of `/` merged into one (`merge_slashes`, as nginx's default);
//! - `%2F`, `\`, `%5C`, `;` path parameters, control bytes and percent-encoded bytes that
//!   are not UTF-8 handled as the policy says, each with a `reject` choice.
//!
//! What the defaults refuse and what they keep follows one line: a byte is refused when some
//! backend reads it as path structure that the canonical form would not show (a raw `\` is a
//! separator to browsers and Windows servers, `;` starts a parameter for Tomcat and Spring, an
//! overlong `%C0%AE` is a dot to lenient decoders), and kept percent-encoded when it is data to
//! the backends the defaults assume (an encoded control byte such as `%00` or `%0A`, an encoded
//! backslash `%5C`): kept encoded, it is matched as what it is, never decoded into a separator,
//! and goes upstream as it came. Whether such a value is an attack (a NUL that truncates a
//! file name) is attack detection's question, and detection sees it decoded.
//!
//! A malformed escape (`%` not followed by two hex digits) is always an error, as in nginx.
//!
//! An already-canonical path (the common case: ASCII, no `%`, no dot segment, no `//`) costs
//! one scan with a table lookup per byte and is returned borrowed.

use std::borrow::Cow;
use std::fmt;

/// What to do with `%2F`, an encoded `/`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EncodedSlash {
    /// A separator like `/` (what nginx, Go's `URL.Path` and WSGI's `PATH_INFO` make of it).
    Decode,
    /// Data inside a segment (stays `%2F`): for APIs whose identifiers contain `/`.
    Keep,
    /// 400 `path.encoded_slash`.
    Reject,
}

/// What to do with a backslash: a raw `\` ([`PathPolicy::backslash`]) or an encoded `%5C`
/// ([`PathPolicy::encoded_backslash`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Backslash {
    /// A separator like `/` (as Windows servers and the WHATWG URL standard read it).
    Slash,
    /// Data inside a segment (canonically `%5C`).
    Keep,
    /// 400 `path.backslash`.
    Reject,
}

/// What to do with a `;` path parameter (`/a;jsessionid=1/b`). `%3B` is data and untouched.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Semicolon {
    /// `;` is an ordinary character of the segment.
    Keep,
    /// Each segment loses its parameters, from `;` to the segment's end, as Tomcat and Spring
    /// route (`/admin;x/users` is `/admin/users`, `/x/..;/admin` is `/admin`).
    Strip,
    /// 400 `path.semicolon`.
    Reject,
}

/// What to do with control bytes (0x00-0x1F, 0x7F), raw or percent-encoded (`%00`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Control {
    /// Kept percent-encoded: data, matched and forwarded encoded.
    Keep,
    /// 400 `path.control`.
    Reject,
    /// The path ends before the first NUL, as a backend that reads the decoded path as a C
    /// string sees it; other control bytes kept. Only for [`PathPolicy::ROUTING`]: not a
    /// setting an app can choose.
    Truncate,
}

/// What to do with percent-encoded bytes that are not UTF-8 (`%C0%AE`, an overlong `.`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum InvalidUtf8 {
    /// Kept percent-encoded (never decoded, so never a dot or a slash).
    Keep,
    /// 400 `path.invalid_utf8`.
    Reject,
}

/// How a path is made canonical. [`Default`] closes every known bypass class: slashes merged,
/// `%2F` a separator, and raw backslashes, `;` parameters and non-UTF-8 escapes refused (they
/// have no use in a well-formed API path, and each is a known way to make a proxy and a
/// backend disagree about which resource is meant). Encoded control bytes and `%5C` are kept
/// encoded: they are data in path parameters (a string parameter may hold any character), and
/// kept encoded they cannot change which path is meant to a backend that does not read them as
/// structure (see the module documentation). [`PathPolicy::STRICT`] refuses them too.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PathPolicy {
    pub merge_slashes: bool,
    pub encoded_slash: EncodedSlash,
    /// A raw `\`.
    pub backslash: Backslash,
    /// `%5C`.
    pub encoded_backslash: Backslash,
    pub semicolon: Semicolon,
    pub control: Control,
    pub invalid_utf8: InvalidUtf8,
}

impl Default for PathPolicy {
    fn default() -> Self {
        PathPolicy {
            merge_slashes: true,
            encoded_slash: EncodedSlash::Decode,
            backslash: Backslash::Reject,
            encoded_backslash: Backslash::Keep,
            semicolon: Semicolon::Reject,
            control: Control::Keep,
            invalid_utf8: InvalidUtf8::Reject,
        }
    }
}

impl PathPolicy {
    /// Whether the policy has a canonical form at all: a raw `\` kept as data is canonically
    /// `%5C`, so `%5C` must be data too (else the canonical form would read as another path).
    pub fn is_coherent(&self) -> bool {
        self.backslash != Backslash::Keep || self.encoded_backslash == Backslash::Keep
    }

    /// Everything refused that is not an ordinary path character or a separator: the default
    /// with encoded control bytes and `%5C` refused too. Configured path prefixes are read so.
    pub const STRICT: PathPolicy = PathPolicy {
        merge_slashes: true,
        encoded_slash: EncodedSlash::Decode,
        backslash: Backslash::Reject,
        encoded_backslash: Backslash::Reject,
        semicolon: Semicolon::Reject,
        control: Control::Reject,
        invalid_utf8: InvalidUtf8::Reject,
    };

    /// The broadest reading of a path, used to choose the app: every separator some backend
    /// honours is a separator (`%2F`, `\`, `%5C`, `;` parameters cut) and the path ends at a
    /// NUL (as a C-string backend reads it); nothing is refused but what no policy accepts. A
    /// request then goes to the app that any backend would serve it from; that app's own policy
    /// then decides (see the proxy).
    pub const ROUTING: PathPolicy = PathPolicy {
        merge_slashes: true,
        encoded_slash: EncodedSlash::Decode,
        backslash: Backslash::Slash,
        encoded_backslash: Backslash::Slash,
        semicolon: Semicolon::Strip,
        control: Control::Truncate,
        invalid_utf8: InvalidUtf8::Keep,
    };
}

/// Why a path has no canonical form under a policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PathError {
    /// Does not start with `/`.
    NotAbsolute,
    /// `%` not followed by two hex digits.
    BadEscape,
    /// A `..` segment climbs above the root.
    AboveRoot,
    EncodedSlash,
    Backslash,
    Semicolon,
    Control,
    InvalidUtf8,
}

impl PathError {
    /// Stable reason code (`path.above_root`...).
    pub fn code(self) -> &'static str {
        match self {
            PathError::NotAbsolute => "path.not_absolute",
            PathError::BadEscape => "path.bad_escape",
            PathError::AboveRoot => "path.above_root",
            PathError::EncodedSlash => "path.encoded_slash",
            PathError::Backslash => "path.backslash",
            PathError::Semicolon => "path.semicolon",
            PathError::Control => "path.control",
            PathError::InvalidUtf8 => "path.invalid_utf8",
        }
    }

    /// What is wrong, for the client (never request content).
    pub fn detail(self) -> &'static str {
        match self {
            PathError::NotAbsolute => "the path does not start with /",
            PathError::BadEscape => "a % in the path is not followed by two hex digits",
            PathError::AboveRoot => "a .. segment climbs above the root",
            PathError::EncodedSlash => "an encoded slash (%2F) in the path is refused",
            PathError::Backslash => "a backslash (\\ or %5C) in the path is refused",
            PathError::Semicolon => "a ; path parameter is refused",
            PathError::Control => "a control byte (such as %00) in the path is refused",
            PathError::InvalidUtf8 => "percent-encoded bytes in the path are not UTF-8",
        }
    }
}

impl fmt::Display for PathError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code(), self.detail())
    }
}

impl std::error::Error for PathError {}

/// Bytes that stand for themselves in a canonical segment: RFC 3986 `pchar` without `%`
/// (unreserved, sub-delims, `:` and `@`). `;` is decided by the policy.
const fn literal_table() -> [bool; 256] {
    let mut t = [false; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        t[c] = b.is_ascii_alphanumeric()
            || matches!(b, b'-' | b'.' | b'_' | b'~' | b'!' | b'$' | b'&' | b'\'' | b'(' | b')' | b'*' | b'+' | b',' | b'=' | b':' | b'@' | b';');
        c += 1;
    }
    t
}

static LITERAL: [bool; 256] = literal_table();

fn unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

/// The canonical form of `raw` (a request path without its query) under `policy`. Borrows when
/// `raw` is already canonical. An empty path is `/`.
pub fn canonicalize<'a>(raw: &'a str, policy: &PathPolicy) -> Result<Cow<'a, str>, PathError> {
    if raw.is_empty() {
        return Ok(Cow::Borrowed("/"));
    }
    if !raw.starts_with('/') {
        return Err(PathError::NotAbsolute);
    }
    if is_canonical(raw.as_bytes(), policy) {
        return Ok(Cow::Borrowed(raw));
    }
    rebuild(raw.as_bytes(), policy).map(Cow::Owned)
}

/// One scan: only literal bytes, no dot segment, no `//` when merging (and `;` only when kept).
fn is_canonical(b: &[u8], policy: &PathPolicy) -> bool {
    let keep_semicolon = policy.semicolon == Semicolon::Keep;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'/' {
            let rest = &b[i + 1..];
            match rest {
                [b'/', ..] if policy.merge_slashes => return false,
                [b'.'] | [b'.', b'/', ..] | [b'.', b'.'] | [b'.', b'.', b'/', ..] => return false,
                _ => {}
            }
        } else if c == b'%' {
            // An escape that stays as it is: upper-case hex, not an unreserved byte, and not
            // one the policy turns into something else or must check.
            let upper = |h: u8| h.is_ascii_digit() || (b'A'..=b'F').contains(&h);
            let (Some(&h), Some(&l)) = (b.get(i + 1), b.get(i + 2)) else { return false };
            if !upper(h) || !upper(l) {
                return false;
            }
            let v = (hex(h).unwrap_or(0) << 4) | hex(l).unwrap_or(0);
            let stays = match v {
                b'/' => policy.encoded_slash == EncodedSlash::Keep,
                b'\\' => policy.encoded_backslash == Backslash::Keep,
                0 => policy.control == Control::Keep,
                0x01..=0x1F | 0x7F => policy.control != Control::Reject,
                0x80.. => policy.invalid_utf8 == InvalidUtf8::Keep,
                v => !unreserved(v),
            };
            if !stays {
                return false;
            }
            i += 3;
            continue;
        } else if !LITERAL[c as usize] || (c == b';' && !keep_semicolon) {
            return false;
        }
        i += 1;
    }
    true
}

fn hex(c: u8) -> Option<u8> {
    (c as char).to_digit(16).map(|d| d as u8)
}

fn push_escaped(out: &mut String, b: u8) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    out.push('%');
    out.push(HEX[(b >> 4) as usize] as char);
    out.push(HEX[(b & 15) as usize] as char);
}

/// The general case: segment by segment, each decoded and re-encoded canonically, then dot
/// segments and empty segments applied to the output as a stack.
fn rebuild(b: &[u8], policy: &PathPolicy) -> Result<String, PathError> {
    let mut out = String::with_capacity(b.len() + 8);
    let mut seg = String::new();
    let mut i = 1; // after the leading `/`
    loop {
        seg.clear();
        let mut high = false;
        let mut in_params = false;
        let last = loop {
            if i >= b.len() {
                break true;
            }
            let c = b[i];
            let (byte, encoded) = if c == b'%' {
                match (b.get(i + 1).copied().and_then(hex), b.get(i + 2).copied().and_then(hex)) {
                    (Some(h), Some(l)) => {
                        i += 3;
                        (h << 4 | l, true)
                    }
                    _ => return Err(PathError::BadEscape),
                }
            } else {
                i += 1;
                (c, false)
            };
            match byte {
                b'/' if !encoded => break false,
                b'/' => match policy.encoded_slash {
                    EncodedSlash::Decode => break false,
                    EncodedSlash::Reject => return Err(PathError::EncodedSlash),
                    EncodedSlash::Keep => {}
                },
                b'\\' => match if encoded { policy.encoded_backslash } else { policy.backslash } {
                    Backslash::Slash => break false,
                    Backslash::Reject => return Err(PathError::Backslash),
                    Backslash::Keep => {}
                },
                0 if policy.control == Control::Truncate => {
                    i = b.len();
                    break true;
                }
                _ => {}
            }
            if in_params {
                continue;
            }
            if byte == b';' && !encoded {
                match policy.semicolon {
                    Semicolon::Keep => seg.push(';'),
                    Semicolon::Strip => in_params = true,
                    Semicolon::Reject => return Err(PathError::Semicolon),
                }
                continue;
            }
            if byte < 0x20 || byte == 0x7F {
                if policy.control == Control::Reject {
                    return Err(PathError::Control);
                }
                push_escaped(&mut seg, byte);
            } else if byte >= 0x80 {
                high = true;
                push_escaped(&mut seg, byte);
            } else if unreserved(byte) || (!encoded && LITERAL[byte as usize]) {
                seg.push(byte as char);
            } else {
                push_escaped(&mut seg, byte);
            }
        };
        if high && policy.invalid_utf8 == InvalidUtf8::Reject && !decodes_to_utf8(&seg) {
            return Err(PathError::InvalidUtf8);
        }
        match seg.as_str() {
            "." => {}
            ".." => match out.rfind('/') {
                Some(at) => out.truncate(at),
                None => return Err(PathError::AboveRoot),
            },
            "" if policy.merge_slashes && !last => {}
            s => {
                out.push('/');
                out.push_str(s);
            }
        }
        if last {
            // A path ending in `/.` or `/..` names a directory: it keeps its trailing `/`.
            if matches!(seg.as_str(), "." | "..") {
                out.push('/');
            }
            break;
        }
    }
    if out.is_empty() {
        out.push('/');
    }
    Ok(out)
}

fn has_high_escape(c: &str) -> bool {
    c.as_bytes().windows(2).any(|w| w[0] == b'%' && matches!(w[1], b'8'..=b'9' | b'A'..=b'F'))
}

/// Whether a canonical segment's escapes decode to UTF-8.
fn decodes_to_utf8(seg: &str) -> bool {
    let b = seg.as_bytes();
    let mut bytes = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            bytes.push(hex(b[i + 1]).unwrap_or(0) << 4 | hex(b[i + 2]).unwrap_or(0));
            i += 3;
        } else {
            bytes.push(b[i]);
            i += 1;
        }
    }
    std::str::from_utf8(&bytes).is_ok()
}

/// Whether the canonical `path` lies under the path prefix `prefix` at a segment boundary:
/// `/api` (or `/api/`) covers `/api` and `/api/x`, not `/apix`; `/` covers everything.
pub fn under_prefix(path: &str, prefix: &str) -> bool {
    let p = prefix.strip_suffix('/').unwrap_or(prefix);
    path.strip_prefix(p).is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// A configured path prefix in canonical form (so that `/café` and `/caf%c3%a9` match the same
/// requests), under [`PathPolicy::STRICT`]; `None` when it has none (`/../x`, `/a%zz`, `/a%00`).
pub fn canonical_prefix(prefix: &str) -> Option<String> {
    canonicalize(prefix, &PathPolicy::STRICT).ok().map(Cow::into_owned)
}

/// An invariant of canonical paths ([`check_invariants`]), the kind of the error it returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Invariant {
    /// A canonical form starts with `/`.
    Rooted,
    /// A canonical form is its own canonical form.
    Idempotent,
    /// The one-scan check recognises what the general case produces, and agrees with it.
    FastPath,
    /// No `/./` or `/../` is left, nor a trailing `/.` or `/..`.
    NoDotSegment,
    /// No `//` is left when slashes are merged.
    NoDoubleSlash,
    /// Escapes are upper-case hex of reserved bytes.
    Escapes,
    /// Other bytes are those allowed literally.
    Literals,
}

/// The invariants a canonical path keeps, as a check for tests and the fuzz target: a
/// canonical form starts with `/`, is its own canonical form, never contains `/./` or
/// `/../` (nor ends in `/.` or `/..`), has no `//` when slashes are merged, and has only
/// literal bytes and upper-case escapes; the one-scan fast path agrees with the general case.
/// Returns the first broken invariant, with the path it broke on.
pub fn check_invariants(raw: &str, policy: &PathPolicy) -> Result<(), crate::Error<Invariant>> {
    let broken = |kind: Invariant, message: String| Err(crate::Error::new(kind, message));
    let canon = match canonicalize(raw, policy) {
        Ok(c) => c,
        Err(_) => return Ok(()),
    };
    let c = canon.as_ref();
    if !c.starts_with('/') {
        return broken(Invariant::Rooted, format!("{raw:?} -> {c:?}: does not start with /"));
    }
    match canonicalize(c, policy) {
        Ok(again) if again == c => {}
        other => return broken(Invariant::Idempotent, format!("{raw:?} -> {c:?} -> {other:?}: not idempotent")),
    }
    // (Escapes of non-ASCII bytes need a UTF-8 check that the scan leaves to the general case.)
    let checks_utf8 = policy.invalid_utf8 == InvalidUtf8::Reject && c.contains(['%']) && has_high_escape(c);
    if !checks_utf8 && !matches!(canonicalize(c, policy), Ok(Cow::Borrowed(_))) {
        return broken(Invariant::FastPath, format!("{raw:?} -> {c:?}: a canonical path is not recognised by the one-scan check"));
    }
    if c.contains("/./") || c.contains("/../") || c.ends_with("/.") || c.ends_with("/..") {
        return broken(Invariant::NoDotSegment, format!("{raw:?} -> {c:?}: dot segment left"));
    }
    if policy.merge_slashes && c.contains("//") {
        return broken(Invariant::NoDoubleSlash, format!("{raw:?} -> {c:?}: // left"));
    }
    let b = c.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                let ok = b.len() > i + 2 && b[i + 1..i + 3].iter().all(|h| h.is_ascii_digit() || (b'A'..=b'F').contains(h));
                if !ok {
                    return broken(Invariant::Escapes, format!("{raw:?} -> {c:?}: escape at {i} not upper-case hex"));
                }
                let v = hex(b[i + 1]).unwrap_or(0) << 4 | hex(b[i + 2]).unwrap_or(0);
                if unreserved(v) {
                    return broken(Invariant::Escapes, format!("{raw:?} -> {c:?}: unreserved byte left encoded at {i}"));
                }
                i += 3;
            }
            x if x == b'/' || LITERAL[x as usize] => i += 1,
            x => return broken(Invariant::Literals, format!("{raw:?} -> {c:?}: byte {x:#04x} not allowed literally")),
        }
    }
    if raw.starts_with('/') && is_canonical(raw.as_bytes(), policy) && rebuild(raw.as_bytes(), policy).as_deref() != Ok(raw) {
        return broken(Invariant::FastPath, format!("{raw:?}: the one-scan check and the general case disagree"));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
