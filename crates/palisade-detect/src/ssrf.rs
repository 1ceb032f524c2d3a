//! Server-side request forgery and remote file inclusion.
//!
//! URLs in the value are parsed (scheme, userinfo, host, port, path): hosts are resolved
//! *syntactically* — IPv4 in every notation `inet_aton` accepts (decimal `2130706433`, octal
//! `0177.0.0.1`, hex `0x7f000001`, short `127.1`), bracketed IPv6 including IPv4-mapped
//! `::ffff:127.0.0.1` — and classified: loopback, private, link-local, unspecified, cloud
//! metadata (`169.254.169.254`, `fd00:ec2::254`, `metadata.google.internal`). Alternate
//! notations are evasion and score high; a plain `http://localhost` scores low (OAuth loopback
//! redirects exist) unless its port is an internal service's (Redis, databases, SSH, Docker...). Schemes that speak raw protocols (`gopher:`, `dict:`, `ldap:`, `jar:`,
//! `tftp:`, `netdoc:`) are SSRF on their own. A remote script include (`http://host/x.txt?`
//! with the trailing `?` or a NUL to cut the appended extension) is RFI. Public URLs pass.

use crate::other_util::{best, each_byte_of, gate, mk, step, views};
use crate::{Category, Detector, FieldKind, Gate, Hit, Input, Level};

const NAME: &str = "ssrf";

pub struct SsrfDetector;

pub fn detector() -> Box<dyn Detector> {
    Box::new(SsrfDetector)
}

/// The pre-filter declared to the engine ([`Gate`]): every finding of [`analyse`] starts at a
/// `:` after a scheme that starts with a letter, followed by `/` or `\\` (or the scheme is
/// `jar`, `dict`, `gopher`); `%` for the percent-decoded view.
const GATE: Gate = Gate { bytes: "%", anchors: &[], words: &[], test: Some(may_hold_url_or_trick), test_bytes: ":/\\", test_only: "" };

/// The gate's test: [`may_hold_url`], or what [`redirect_trick`] needs without a control
/// character (which opens every gate): a value that starts (after blanks) with three or more
/// of `/` and `\\`, or two with a `\\` among them, or with `http` and holds a `:`. A path
/// (`/static/app.js`) or a scheme-relative URL (`//cdn.example/x.js`) does not.
fn may_hold_url_or_trick(s: &str) -> bool {
    let t = s.trim_start().as_bytes();
    let lead = &t[..t.iter().take_while(|c| matches!(c, b'/' | b'\\')).count()];
    (lead.len() >= 3 || (lead.len() == 2 && lead.contains(&b'\\')))
        || may_hold_url(s)
        || (t.len() > 5 && t[..4].eq_ignore_ascii_case(b"http") && t.contains(&b':'))
}

/// See [`GATE`]: the scheme walk of [`analyse`]. A `:` that is not followed by `/` or `\\` can
/// only count after `jar`, `dict` or `gopher`, whose last letter is `r` or `t`: any other `:`
/// (a time `16:55:37`, a `key: value`) is passed over on its two neighbours, before the
/// scheme walk (`tests::may_hold_url_is_sound`).
fn may_hold_url(s: &str) -> bool {
    let b = s.as_bytes();
    // The test on the two neighbours is small enough to be inlined in the scan, which calls
    // nothing for most colons (a time, a `key: value`).
    each_byte_of(b, [b':'], |p| {
        let slash = matches!(b.get(p + 1), Some(b'/' | b'\\'));
        (slash || p > 0 && matches!(b[p - 1] | 0x20, b'r' | b't')) && scheme_before_colon(b, p, slash)
    })
}

/// [`may_hold_url`] past the neighbours of the `:` at `p`: the scheme walk.
#[inline(never)]
fn scheme_before_colon(b: &[u8], p: usize, slash: bool) -> bool {
    let Some(st) = scheme_start(b, p) else { return false };
    let scheme = &b[st..p];
    let ends = |x: &[u8]| scheme.len() >= x.len() && scheme[scheme.len() - x.len()..].eq_ignore_ascii_case(x);
    slash || ends(b"jar") || ends(b"dict") || ends(b"gopher")
}

impl Detector for SsrfDetector {
    fn name(&self) -> &'static str {
        NAME
    }

    fn gate(&self) -> Option<Gate> {
        Some(GATE)
    }

    fn check(&self, input: &Input<'_>, level: Level) -> Option<Hit> {
        let mut h = value_hit(input.decoded);
        // A value that is nothing but a URL to a loopback host on its default port, or spelled
        // otherwise than development servers print it (`http://localhost/admin`,
        // `http://[::1]:8080/`): an address for the server to use, not a developer's page named
        // in text (a `Referer`, an `Origin`, any header: where a browser has been).
        if input.field != FieldKind::Header {
            if let Some(hit) = h.as_mut().filter(|h| h.confidence == LOOPBACK && h.category == Category::Ssrf) {
                let whole = input.decoded.trim();
                if whole.starts_with(hit.fragment.as_str()) && !whole.contains(char::is_whitespace) && port_is_number(&hit.fragment) {
                    hit.confidence = WHOLE_LOOPBACK;
                }
            }
        }
        if h.is_none() || h.as_ref().is_some_and(|h| h.confidence < 60) {
            h = best(h, redirect_trick(input.decoded.trim()));
        }
        gate(h, level)
    }

    /// Where a browser is sent, a loopback URL as native apps and local tools register it
    /// (`http://localhost/cb`, `http://127.0.0.1/cb`, `http://[::1]/cb`: RFC 8252 §7.3) is
    /// where the browser goes, not the server. Other spellings of the loopback host
    /// (`localhost.localdomain`, other notations), userinfo tricks, internal service ports and
    /// metadata addresses (scored above it) still count.
    fn in_redirect_target(&self, input: &Input<'_>, hit: Hit, _level: Level) -> Option<Hit> {
        // A whole-value loopback URL is judged as the URL alone is.
        let hit = if hit.confidence == WHOLE_LOOPBACK { Hit { confidence: value_hit(input.decoded).map_or(LOOPBACK, |h| h.confidence), ..hit } } else { hit };
        let authority = hit.fragment.split_once("://").map_or("", |(_, a)| a);
        let host =
            if authority.starts_with('[') { authority.split(']').next().map_or("", |h| &h[1..]) } else { authority.split([':', '/']).next().unwrap_or("") };
        let registered = host.eq_ignore_ascii_case("localhost") || host == "127.0.0.1" || host == "::1";
        (hit.category != Category::Ssrf || hit.confidence > LOOPBACK || !registered).then_some(hit)
    }
}

/// Whether [`quick_scan`] sends a value to the general path for the byte `c`: a byte below
/// `(` (tabs, newlines, the blank, `"`, `#`, `%`, `'` among them), one of `<=>?@`, `\`, or a
/// non-ASCII byte. Every byte for another view (`%`, tabs and newlines) and every delimiter
/// the scans of [`http_url`] stop at but `/` and `:` is one.
#[inline]
fn off_quick(c: u8) -> bool {
    c < 0x28 || (0x3c..=0x40).contains(&c) || c == b'\\' || c >= 0x80
}

/// `None` if `b` holds an [`off_quick`] byte or more than one `:`, else the position of its
/// `:` if any: eight bytes at a time (`tests::quick_scan_agrees_with_the_bytes`).
#[inline]
fn quick_scan(b: &[u8]) -> Option<Option<usize>> {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    const M7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    let mut colon = None;
    let mut i = 0;
    while i + 8 <= b.len() {
        let w = u64::from_le_bytes(b[i..i + 8].try_into().expect("eight bytes"));
        // With every byte below 0x80 no sum or difference below crosses a byte: a byte below
        // 0x28 borrows into its high bit, one of 0x3c..=0x41 or more carries into it.
        if w & HI != 0 {
            return None;
        }
        let below = w.wrapping_sub(LO * 0x28) & HI;
        let in_range = (w + LO * 0x44) & !(w + LO * 0x3f) & HI;
        let eq = |c: u8| !((w ^ (LO * c as u64)) + M7) & HI;
        if below | in_range | eq(b'\\') != 0 {
            return None;
        }
        let colons = eq(b':');
        if colons != 0 {
            if colon.is_some() || colons.count_ones() > 1 {
                return None;
            }
            colon = Some(i + (colons.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    for (k, &c) in b[i..].iter().enumerate() {
        if off_quick(c) {
            return None;
        }
        if c == b':' {
            if colon.is_some() {
                return None;
            }
            colon = Some(i + k);
        }
    }
    Some(colon)
}

/// What [`SsrfDetector::check`] finds in `d` before its level gate: [`value_hit_general`], with
/// a quick path for the common value (a public URL, a path, a slug). A value with no `%`, no
/// tab or newline and at most one `:` has one view (itself: [`views`] decodes nothing without
/// a `%`) and [`analyse`] looks at that `:` alone; with none of the other delimiters of
/// [`http_url`] either, the scans there meet `/` alone ([`http_url`]'s `plain`). One pass
/// ([`quick_scan`]) instead of `memchr` runs for `%`, the tabs and newlines and the `:`, and
/// the two delimiter scans (`tests::value_hit_agrees_with_the_general_path`).
fn value_hit(d: &str) -> Option<Hit> {
    match quick_scan(d.as_bytes()) {
        None => value_hit_general(d),
        Some(None) => None,
        Some(Some(p)) => colon_hit(d, p, true),
    }
}

/// [`value_hit`] read the general way: every view, and the value without its tabs and newlines.
fn value_hit_general(d: &str) -> Option<Hit> {
    let mut h = None;
    for v in views(d).iter().filter(|v| !v.is_empty()) {
        h = best(h, analyse(v));
        // WHATWG URL parsing (browsers, Node's `URL`) removes every ASCII tab and newline
        // from a URL before reading it: `htt\tp://6\t6.0x7.147/` is `http://66.0x7.147/`.
        if memchr::memchr3(b'\t', b'\n', b'\r', v.as_bytes()).is_some() {
            let joined: String = v.chars().filter(|c| !matches!(c, '\t' | '\n' | '\r')).collect();
            h = best(h, analyse(&joined));
        }
    }
    h
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum HostClass {
    Metadata,
    Loopback,
    Private,
    LinkLocal,
    Unspecified,
    Public,
}

/// `inet_aton` semantics: 1 to 4 parts, each decimal, octal (leading 0) or hex (0x).
pub(crate) fn parse_ipv4_loose(h: &str) -> Option<(u32, bool)> {
    // Decimal, octal and hex parts only: a name with any other letter is no address (most
    // hosts; decided before any allocation).
    if h.is_empty() || !h.bytes().all(|b| b.is_ascii_hexdigit() || matches!(b, b'.' | b'x' | b'X')) {
        return None;
    }
    let parts: Vec<&str> = h.split('.').collect();
    if parts.is_empty() || parts.len() > 4 || parts.iter().any(|p| p.is_empty()) {
        return None;
    }
    let mut vals = Vec::with_capacity(4);
    let mut alternate = parts.len() != 4;
    for p in &parts {
        let (digits, radix) = if let Some(x) = p.strip_prefix("0x").or_else(|| p.strip_prefix("0X")) {
            alternate = true;
            (x, 16)
        } else if p.len() > 1 && p.starts_with('0') {
            alternate = true;
            (&p[1..], 8)
        } else {
            (*p, 10)
        };
        if digits.is_empty() && radix == 16 {
            vals.push(0u64);
            continue;
        }
        vals.push(u64::from_str_radix(digits, radix).ok()?);
    }
    let n = vals.len();
    let mut addr: u64 = 0;
    for (k, v) in vals.iter().enumerate() {
        if k + 1 < n {
            if *v > 255 {
                return None;
            }
            addr |= v << (8 * (3 - k));
        } else {
            let bits = 8 * (4 - k as u32);
            if bits < 64 && *v >= (1u64 << bits) {
                return None;
            }
            addr |= v;
        }
    }
    Some((addr as u32, alternate))
}

fn class_v4(a: u32) -> HostClass {
    let o = a.to_be_bytes();
    match o {
        [169, 254, 169, 254] | [100, 100, 100, 200] => HostClass::Metadata,
        [127, ..] => HostClass::Loopback,
        [0, 0, 0, 0] => HostClass::Unspecified,
        [0, ..] => HostClass::Loopback,
        [10, ..] | [192, 168, ..] => HostClass::Private,
        [172, b, ..] if (16..32).contains(&b) => HostClass::Private,
        [100, b, ..] if (64..128).contains(&b) => HostClass::Private,
        [169, 254, ..] => HostClass::LinkLocal,
        _ => HostClass::Public,
    }
}

fn class_v6(h: &str) -> Option<(HostClass, bool)> {
    let ip: std::net::Ipv6Addr = h.split('%').next()?.parse().ok()?;
    let seg = ip.segments();
    if let Some(v4) = ip.to_ipv4_mapped() {
        return Some((class_v4(u32::from(v4)), true));
    }
    if ip.is_loopback() {
        return Some((HostClass::Loopback, false));
    }
    if ip.is_unspecified() {
        return Some((HostClass::Unspecified, false));
    }
    if seg == [0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254] {
        return Some((HostClass::Metadata, false));
    }
    if seg[0] & 0xfe00 == 0xfc00 {
        return Some((HostClass::Private, false));
    }
    if seg[0] & 0xffc0 == 0xfe80 {
        return Some((HostClass::LinkLocal, false));
    }
    // IPv4-compatible ::a.b.c.d
    if seg[..6] == [0, 0, 0, 0, 0, 0] {
        let a = ((seg[6] as u32) << 16) | seg[7] as u32;
        return Some((class_v4(a), true));
    }
    Some((HostClass::Public, false))
}

/// The last labels of every name [`class_host`] does not call public (its names, the
/// `.localhost` names, the public names and wildcard DNS services that resolve to an address).
const SPECIAL_LABELS: [&str; 10] = ["internal", "metadata", "instance-data", "com", "localhost", "localdomain", "ip6-localhost", "ip6-loopback", "me", "io"];

/// Whether [`class_host`] says `(Public, false)` of `h` (trailing dots trimmed) by its last
/// label alone: `h` is not bracketed (IPv6), its last label holds a byte that is neither a hex
/// digit nor `x` (so `h` is no IPv4 address in any notation), and is none of
/// [`SPECIAL_LABELS`] in any case, or is `com`, `me` or `io` under a name that is none of the
/// special ones there: `avatars.example.org` and `cdn.example.com` are decided here,
/// `metadata.azure.com.` and `127.0.0.1.nip.io` by the slow path
/// (`tests::class_host_agrees_with_the_general_path`).
#[inline]
fn surely_public(h: &[u8]) -> bool {
    let last = h.iter().rposition(|&c| c == b'.').map_or(h, |d| &h[d + 1..]);
    if h.first() == Some(&b'[') || last.iter().all(|c| c.is_ascii_hexdigit() || matches!(c, b'x' | b'X')) {
        return false;
    }
    // `com`, `me` and `io` are special for a few names alone: the other names under them
    // (`cdn.example.com`, `x.github.io`) are public, as the slow path finds.
    let ends = |x: &[u8]| h.len() >= x.len() && h[h.len() - x.len()..].eq_ignore_ascii_case(x);
    if last.eq_ignore_ascii_case(b"com") {
        return !(h.eq_ignore_ascii_case(b"metadata.azure.com") || h.eq_ignore_ascii_case(b"lacolhost.com"));
    }
    if last.eq_ignore_ascii_case(b"me") {
        return !(ends(b"lvh.me") || ends(b"localtest.me") || h.eq_ignore_ascii_case(b"vcap.me"));
    }
    if last.eq_ignore_ascii_case(b"io") {
        return !(ends(b".nip.io") || ends(b".sslip.io") || ends(b".xip.io"));
    }
    !SPECIAL_LABELS.iter().any(|l| last.eq_ignore_ascii_case(l.as_bytes()))
}

fn class_host(host: &str) -> (HostClass, bool) {
    let h = host.trim_end_matches('.');
    if surely_public(h.as_bytes()) {
        return (HostClass::Public, false);
    }
    class_host_general(h)
}

/// [`class_host`] past its [`surely_public`] shortcut: `h` without trailing dots.
fn class_host_general(h: &str) -> (HostClass, bool) {
    let h: std::borrow::Cow<'_, str> = if h.bytes().any(|b| b.is_ascii_uppercase()) { h.to_ascii_lowercase().into() } else { h.into() };
    if let Some(inner) = h.strip_prefix('[').and_then(|x| x.strip_suffix(']')) {
        return class_v6(inner).unwrap_or((HostClass::Public, false));
    }
    if let Some((a, alt)) = parse_ipv4_loose(&h) {
        return (class_v4(a), alt);
    }
    match &*h {
        "metadata.google.internal" | "metadata" | "instance-data" | "instance-data.ec2.internal" | "metadata.azure.com" => (HostClass::Metadata, false),
        "localhost" | "localhost.localdomain" | "ip6-localhost" | "ip6-loopback" => (HostClass::Loopback, false),
        _ if h.ends_with(".localhost") => (HostClass::Loopback, true),
        // Public names that resolve to 127.0.0.1 (with every subdomain): filter evasion.
        "localtest.me" | "lvh.me" | "vcap.me" | "lacolhost.com" => (HostClass::Loopback, true),
        _ => {
            // Wildcard DNS services that embed an address: 127.0.0.1.nip.io, 10-0-0-1.sslip.io
            for svc in [".nip.io", ".sslip.io", ".xip.io", ".localtest.me", ".lvh.me"] {
                if let Some(pre) = h.strip_suffix(svc) {
                    if svc == ".localtest.me" || svc == ".lvh.me" {
                        return (HostClass::Loopback, true);
                    }
                    let dotted = pre.replace('-', ".");
                    let parts: Vec<&str> = dotted.rsplit('.').take(4).collect();
                    let ip = parts.into_iter().rev().collect::<Vec<_>>().join(".");
                    if let Some((a, _)) = parse_ipv4_loose(&ip) {
                        return (class_v4(a), true);
                    }
                }
            }
            (HostClass::Public, false)
        }
    }
}

const RAW_SCHEMES: &[(&str, u8)] =
    &[("gopher", 90), ("dict", 90), ("ldap", 70), ("ldaps", 70), ("jar", 80), ("tftp", 80), ("netdoc", 85), ("sftp", 55), ("file", 80)];

/// Whether a host name holds a percent escape of a letter, digit, `.` or `-`: bytes that never
/// need escaping in a host, so only a filter bypass writes them so (`%77%77%77%2e...`).
fn encoded_host(host: &str) -> bool {
    let b = host.as_bytes();
    memchr::memchr_iter(b'%', b).any(|p| {
        let hex = |c: u8| (c as char).to_digit(16);
        match (b.get(p + 1).copied().and_then(hex), b.get(p + 2).copied().and_then(hex)) {
            (Some(h), Some(l)) => {
                let c = (h * 16 + l) as u8;
                c.is_ascii_alphanumeric() || c == b'.' || c == b'-'
            }
            _ => false,
        }
    })
}

/// The scheme of a URL whose `:` is at `p`: letters, digits, `+ - .` before it, at most 16,
/// starting with a letter (its start), or None.
#[inline]
fn scheme_start(b: &[u8], p: usize) -> Option<usize> {
    let mut st = p;
    while st > 0 && p - st < 16 && scheme_byte(b[st - 1]) {
        st -= 1;
    }
    (st < p && b[st].is_ascii_alphabetic()).then_some(st)
}

/// ASCII letters and digits, `+`, `-` and `.`: the bytes of a scheme, by byte (256 bytes).
static SCHEME_BYTES: [bool; 256] = crate::other_util::alnum_and(b"+-.");

/// A byte of a scheme ([`SCHEME_BYTES`]): one load instead of five comparisons.
#[inline]
fn scheme_byte(c: u8) -> bool {
    SCHEME_BYTES[c as usize]
}

/// The schemes [`analyse`] reads, by their ASCII-lowercase bytes (at most 6; longer schemes
/// are none of them): a raw-protocol scheme's confidence ([`RAW_SCHEMES`]), or 0 for `http`,
/// `https`, `ftp`, `ws`, `wss`.
#[inline]
fn known_scheme(scheme: &[u8]) -> Option<(&'static str, u8)> {
    // The common schemes first, by one comparison each (neither is a raw-protocol scheme).
    if scheme.eq_ignore_ascii_case(b"https") || scheme.eq_ignore_ascii_case(b"http") {
        return Some(("", 0));
    }
    let mut buf = [0u8; 6];
    let lc = buf.get_mut(..scheme.len())?;
    lc.copy_from_slice(scheme);
    lc.make_ascii_lowercase();
    if let Some(&(n, c)) = RAW_SCHEMES.iter().find(|(n, _)| n.as_bytes() == &*lc) {
        return Some((n, c));
    }
    matches!(&*lc, b"http" | b"https" | b"ftp" | b"ws" | b"wss").then_some(("", 0))
}

/// The confidence of a loopback URL that is the location of a developer's source file
/// ([`source_location`]): below every level.
const LOOPBACK_SOURCE: u8 = 35;

/// Whether the path of a URL (`rest`: what follows its authority) names a source file a page
/// loaded from a development server, where a script names it: a stack frame's location
/// (`/static/js/bundle.js:668:12`) or a script, style or page (`/src/main.tsx`, a resource
/// timing entry). A browser fetched it; the value names where code came from, not a target for
/// the server to request. A loopback URL to anything else stays a probe (strict).
fn source_location(rest: &str) -> bool {
    let end = rest.find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '<' | '>' | '(' | ')' | '?' | '#')).unwrap_or(rest.len());
    let path = &rest[..end];
    if !path.starts_with('/') {
        return false;
    }
    let b = path.as_bytes();
    // `:line:column` ends the location wherever it is (a frame's line break is gone once
    // control characters are removed: `bundle.js:12:3` then the next frame's name).
    for (i, _) in path.match_indices(':') {
        let line = b[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
        let col = if b.get(i + 1 + line) == Some(&b':') { b[i + 2 + line..].iter().take_while(|c| c.is_ascii_digit()).count() } else { 0 };
        if i > 1 && (1..=7).contains(&line) && (1..=7).contains(&col) {
            return true;
        }
    }
    // `:line` (or `:line:column`) at the end.
    let mut frame = path.len();
    for _ in 0..2 {
        let digits = b[..frame].iter().rev().take_while(|c| c.is_ascii_digit()).count();
        if digits == 0 || frame <= digits || b[frame - digits - 1] != b':' {
            break;
        }
        frame -= digits + 1;
    }
    let file = &path[..frame];
    frame < path.len() && file.len() > 1 || crate::path::source_file(file)
}

/// The extensions of a script-ish resource (RFI).
const SCRIPT_EXTS: [&str; 9] = [".txt", ".php", ".sh", ".pl", ".py", ".jsp", ".asp", ".inc", ".cgi"];

/// Whether `path` ends with one of [`SCRIPT_EXTS`] (ASCII case-insensitive): the extension is
/// what follows the last `.` of the last 4 bytes (an extension holds no `.`).
#[inline]
fn scripty_ext(path: &[u8]) -> bool {
    // The last letters of the extensions, in any case: most paths (`.png`, `/`) end otherwise.
    if !path.last().is_some_and(|&c| matches!(c | 0x20, b't' | b'p' | b'h' | b'l' | b'y' | b'c' | b'i')) {
        return false;
    }
    let tail = &path[path.len().saturating_sub(4)..];
    tail.iter().rposition(|&c| c == b'.').is_some_and(|d| SCRIPT_EXTS.iter().any(|e| tail[d..].eq_ignore_ascii_case(e.as_bytes())))
}

/// Every SSRF and RFI finding in `s`: at each `:` after a scheme [`analyse`] knows. Read on
/// the bytes of `s` with ASCII case-insensitive comparisons (no lowercase copy: every test
/// below is case-blind or case-folds itself, as [`class_host`] does; `tests::analyse_is_case_blind`).
fn analyse(s: &str) -> Option<Hit> {
    step(s.len());
    let bs = s.as_bytes();
    let mut out = None;
    each_byte_of(bs, [b':'], |p| {
        if let Some(h) = colon_hit(s, p, false) {
            out = best(out.take(), Some(h));
        }
        false
    });
    out
}

/// The finding of [`analyse`] at the `:` at `p` of `s` (`plain`: see [`http_url`]).
fn colon_hit(s: &str, p: usize, plain: bool) -> Option<Hit> {
    step(1);
    let bs = s.as_bytes();
    let st = scheme_start(bs, p)?;
    let (raw, c) = known_scheme(&bs[st..p])?;
    let rest = &s[p + 1..];
    if c > 0 {
        // file: URLs are local file inclusion; the path detector reports them.
        if raw != "file" && (rest.starts_with("//") || matches!(raw, "jar" | "dict" | "gopher")) {
            return Some(mk(NAME, Category::Ssrf, c, &s[st..], "URL scheme that speaks a raw protocol"));
        }
        return None;
    }
    http_url(s, st, p, plain)
}

/// The finding of an `http`, `https`, `ftp`, `ws` or `wss` URL whose scheme is `s[st..p]`.
/// `plain`: `s[p + 1..]` holds no `:` and none of the other delimiters of the two scans below
/// but `/` (see [`off_quick`]), so that the first scan stops at the first `/` alone and the second
/// at nothing.
fn http_url(s: &str, st: usize, p: usize, plain: bool) -> Option<Hit> {
    let rest = &s[p + 1..];
    // Lenient: `http:/x`, `http:\\x` also reach the network in many clients.
    let auth_start = rest.trim_start_matches(['/', '\\']);
    if auth_start.len() == rest.len() {
        return None;
    }
    let off = p + 1 + (rest.len() - auth_start.len());
    let win = crate::truncate(auth_start, 512).as_bytes();
    // One pass to the end of the authority (every delimiter is ASCII, so each match is on a
    // char boundary): its last `@` (userinfo before it) and the first `:` after that (a port).
    let (mut auth_end, mut at, mut colon) = (win.len(), None, None);
    if plain {
        auth_end = win.iter().position(|&c| c == b'/').unwrap_or(win.len());
    } else {
        each_byte_of(win, [b'/', b'\\', b'?', b'#', b' ', b'"', b'\'', b'<', b'>', b'@', b':'], |i| match win[i] {
            b'@' => {
                (at, colon) = (Some(i), None);
                false
            }
            b':' => {
                colon = colon.or(Some(i));
                false
            }
            _ => {
                auth_end = i;
                true
            }
        });
    }
    let auth = &auth_start[..auth_end];
    let hostport = at.map_or(auth, |a| &auth[a + 1..]);
    let host = if hostport.starts_with('[') {
        hostport.find(']').map_or(hostport, |e| &hostport[..=e])
    } else {
        colon.map_or(hostport, |c| &auth[at.map_or(0, |a| a + 1)..c])
    };
    if host.is_empty() {
        return None;
    }
    let (class, alt) = class_host(host);
    let userinfo_trick = at.is_some();
    let frag = &s[st..(off + auth_end).min(s.len())];
    let c: u8 = match (class, alt) {
        (HostClass::Metadata, _) => 95,
        (HostClass::Loopback | HostClass::Private | HostClass::LinkLocal | HostClass::Unspecified, true) => 90,
        (HostClass::Unspecified, false) => 80,
        (HostClass::LinkLocal, false) => 80,
        (HostClass::Loopback, false) => LOOPBACK,
        (HostClass::Private, false) => 60,
        (HostClass::Public, _) => 0,
    };
    let c = if userinfo_trick && c > 0 { c.max(85) } else { c };
    // `ftp:` to an internal host: no browser, OAuth flow or development server uses it.
    let c = if c > 0 && s[st..p].eq_ignore_ascii_case("ftp") { c.max(80) } else { c };
    let c = if class == HostClass::Loopback && !alt && !userinfo_trick && source_location(&auth_start[auth_end..]) { LOOPBACK_SOURCE } else { c };
    // A loopback or private host on the port of a service that speaks no HTTP to browsers
    // (Redis, memcached, databases, SSH, SMTP, the Docker and kubelet APIs): no OAuth
    // redirect or development server lives there.
    let port = hostport[host.len()..].strip_prefix(':').and_then(|p| p.parse::<u16>().ok());
    let c = if matches!(class, HostClass::Loopback | HostClass::Private) && port.is_some_and(internal_service_port) { c.max(80) } else { c };
    let c = if c == LOOPBACK && !userinfo_trick && dev_server(host, port) { DEV_SERVER } else { c };
    let mut out = None;
    if c == 0 && class == HostClass::Public && out_of_band(host) {
        return Some(mk(NAME, Category::Ssrf, 80, frag, "URL to an out-of-band interaction service (callback of an injected payload)"));
    }
    if c > 0 {
        out = Some(mk(NAME, Category::Ssrf, c, frag, "URL to an internal or metadata address"));
    } else if alt && parse_ipv4_loose(host.trim_end_matches('.')).is_some() {
        // A public address written as one number, in octal or hex, or padded: no link is
        // written that way except to get past a URL filter (`http://1113982867/`).
        out = Some(mk(NAME, Category::Ssrf, 70, frag, "URL host in an alternate IPv4 notation (filter evasion)"));
    } else if !plain && encoded_host(host) {
        // (`plain`: the value holds no `%`, see [`off_quick`].)
        out = Some(mk(NAME, Category::Ssrf, 65, frag, "URL host with percent-encoded letters (filter evasion)"));
    }
    // RFI: a URL to a script-ish resource whose end is cut with `?` or a NUL.
    let after = crate::truncate(&auth_start[auth_end..], 2048).as_bytes();
    // One pass to the end of the URL: where it ends, and its first `?`.
    let (mut path_end, mut query) = (after.len(), None);
    if !plain {
        each_byte_of(after, [b' ', b'"', b'\'', b'<', b'>', b'?'], |i| {
            if after[i] == b'?' {
                query = query.or(Some(i));
                return false;
            }
            path_end = i;
            true
        });
    }
    let url_rest = &after[..path_end];
    let path_only = &url_rest[..query.unwrap_or(url_rest.len())];
    if !scripty_ext(path_only) {
        return out;
    }
    let trimmed_q = url_rest.ends_with(b"?") || url_rest.ends_with(b"%00") || url_rest.ends_with(b"\0");
    if trimmed_q {
        out = best(out, Some(mk(NAME, Category::Rfi, 80, &s[st..], "remote include with the appended extension cut off")));
    } else if path_only.len() >= 4 && path_only[path_only.len() - 4..].eq_ignore_ascii_case(b".txt") && st == 0 && query.is_some() {
        out = best(out, Some(mk(NAME, Category::Rfi, 50, &s[st..], "remote text file with a query")));
    }
    out
}

/// The domains of out-of-band interaction services: hosts that exist to record the DNS lookups
/// and requests an injected payload makes (Burp Collaborator, ProjectDiscovery's interactsh,
/// DNSLog, CEYE, Canarytokens, RequestBin). No application links to them; a URL to one in a
/// request is a probe for a blind injection.
const OUT_OF_BAND: &[&str] = &[
    "burpcollaborator.net",
    "oastify.com",
    "interact.sh",
    "interactsh.com",
    "oast.fun",
    "oast.pro",
    "oast.live",
    "oast.site",
    "oast.online",
    "oast.me",
    "dnslog.cn",
    "ceye.io",
    "canarytokens.com",
    "requestbin.net",
];

/// Whether `host` is one of [`OUT_OF_BAND`] or under one (ASCII case-insensitive).
fn out_of_band(host: &str) -> bool {
    let h = host.trim_end_matches('.').as_bytes();
    OUT_OF_BAND.iter().any(|d| {
        let d = d.as_bytes();
        h.len() >= d.len() && h[h.len() - d.len()..].eq_ignore_ascii_case(d) && (h.len() == d.len() || h[h.len() - d.len() - 1] == b'.')
    })
}

/// Confidence of a plain loopback URL (`http://localhost/x`, strict): OAuth loopback
/// redirects and local tools name one too.
const LOOPBACK: u8 = 55;

/// Whether the authority of a URL (`scheme://authority`) has no port or a port of digits
/// (`http://localhost:6379x/` is no address a client can use).
fn port_is_number(url: &str) -> bool {
    let auth = url.split_once("://").map_or("", |(_, a)| a);
    let auth = auth.split(['/', '?', '#']).next().unwrap_or("");
    let hostport = auth.rsplit_once('@').map_or(auth, |(_, h)| h);
    let port = if hostport.starts_with('[') { hostport.split_once("]:").map(|(_, p)| p) } else { hostport.split_once(':').map(|(_, p)| p) };
    port.is_none_or(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}

/// Confidence of a value that is a loopback URL and nothing else, outside headers (see
/// [`SsrfDetector::check`]); in a redirect target it is judged as [`LOOPBACK`].
const WHOLE_LOOPBACK: u8 = 65;

/// A whole value written to pass a check that a redirect or fetch target is on the same site,
/// while clients read it as another host (WHATWG URL parsing): `/\\host` and `\\/host` (a
/// `\\` is a `/` in a special URL), `///host`, `/<tab>/host` (tabs and newlines are removed),
/// `https:host` (a special scheme with no slashes still takes a host), a userinfo that is a
/// host name (`https://good.example@evil.example/`), or a UNC path `\\\\host\\share` (a
/// server that opens it connects over SMB with its credentials). The host after the slashes
/// must look like one (a dotted name or an address), so a path like `//comments` or `/\\n`
/// is none.
fn redirect_trick(v: &str) -> Option<Hit> {
    if v.len() > 2048 {
        return None;
    }
    step(v.len());
    let b = v.as_bytes();
    let lead = b.iter().take_while(|c| matches!(c, b'/' | b'\\' | b'\t' | b'\n' | b'\r')).count();
    let host_like = |rest: &str| {
        let host = rest.split(['/', '\\', '?', '#', ':']).next().unwrap_or("");
        host.len() > 3
            && host.contains('.')
            && !host.starts_with('.')
            && !host.ends_with('.')
            && host.bytes().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'-'))
    };
    if lead >= 2 {
        let slashes = &b[..lead];
        let backslash = slashes.contains(&b'\\');
        let blank = slashes.iter().any(|c| matches!(c, b'\t' | b'\n' | b'\r'));
        let n = slashes.iter().filter(|c| matches!(c, b'/' | b'\\')).count();
        let unc = slashes == b"\\\\";
        if host_like(&v[lead..]) && n >= 2 && (backslash || blank || n >= 3) {
            let c = if unc { 60 } else { 70 };
            return Some(mk(NAME, Category::Ssrf, c, v, "address that clients read as another host (slashes, backslashes, blanks)"));
        }
        return None;
    }
    // `https:host`: a special scheme, no slash.
    let colon = v.find(':')?;
    let scheme = &v[..colon];
    let rest = &v[colon + 1..];
    if (scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https")) && !rest.starts_with(['/', '\\']) && host_like(rest) {
        return Some(mk(NAME, Category::Ssrf, 65, v, "special-scheme URL without slashes (another host)"));
    }
    // A userinfo that is a host name: `https://good.example@evil.example/`.
    if (scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https")) && rest.starts_with("//") {
        let auth = rest[2..].split(['/', '?', '#']).next().unwrap_or("");
        if let Some((user, host)) = auth.rsplit_once('@') {
            if !user.contains(':') && host_like(user) && host_like(host) {
                return Some(mk(NAME, Category::Ssrf, 70, v, "URL whose userinfo is a host name (another host)"));
            }
        }
    }
    None
}

/// Confidence of a development server's address (below every level): see [`dev_server`].
const DEV_SERVER: u8 = 35;

/// `localhost` or `127.0.0.1`, spelled as development servers print their address, with an
/// explicit unprivileged port that is no internal service's ([`internal_service_port`]):
/// `http://localhost:3000`, `http://127.0.0.1:8000`. A developer tool's settings, a dev
/// server's callback or a source map name it; an SSRF probe aims at the default port, at an
/// internal service, or hides the host (other notations, IPv6, userinfo), which all keep
/// their confidence.
fn dev_server(host: &str, port: Option<u16>) -> bool {
    (host.eq_ignore_ascii_case("localhost") || host == "127.0.0.1") && port.is_some_and(|p| p >= 1024 && !internal_service_port(p))
}

/// Ports of services an SSRF reaches on an internal host (not web servers: a development
/// server on `localhost:3000` or `:8080` is an ordinary redirect target).
fn internal_service_port(p: u16) -> bool {
    matches!(p, 22 | 23 | 25 | 110 | 143 | 389 | 1433 | 1521 | 2375 | 2379 | 3306 | 5432 | 5984 | 6379 | 9200 | 10250 | 11211 | 27017)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::other_util::take_steps;
    use crate::FieldKind;
    use palisade_testkit::rng::XorShift64;

    fn q(v: &str) -> u8 {
        detector().check(&Input { raw: v, decoded: v, field: FieldKind::QueryValue }, Level::Strict).map_or(0, |h| h.confidence)
    }

    /// [`scheme_byte`] is the test it replaces, on every byte.
    #[test]
    fn scheme_byte_is_the_comparisons() {
        for c in 0..=255u8 {
            assert_eq!(scheme_byte(c), c.is_ascii_alphanumeric() || matches!(c, b'+' | b'-' | b'.'), "{c}");
        }
    }

    /// URL-ish values: schemes in every case, separators, hosts of every class and notation,
    /// userinfo, ports, script extensions, query marks, NULs, escapes, blanks, times and
    /// non-ASCII text (a bounded pseudo-random sample).
    fn generated_urls(n: usize, mut f: impl FnMut(&str)) {
        let parts = [
            "http",
            "HTTPS",
            "hTtP",
            "ftp",
            "ws",
            "wss",
            "gopher",
            "GoPher",
            "dict",
            "jar",
            "ldap",
            "file",
            "netdoc",
            "sftp",
            "tftp",
            "x",
            "a+b",
            "2",
            "://",
            ":/",
            ":\\",
            ":",
            "//",
            "/",
            "\\",
            "127.0.0.1",
            "0x7f.1",
            "2130706433",
            "localhost",
            "LOCALHOST",
            "metadata.google.internal",
            "Example.COM",
            "avatars.discourse.org",
            "[::1]",
            "[::ffff:127.0.0.1]",
            "[fd00:ec2::254]",
            "10-0-0-1.sslip.io",
            "127.0.0.1.NIP.IO",
            "app.lvh.me",
            "%77%77",
            "@",
            ":6379",
            ":80",
            "/x.TXT",
            ".php",
            ".Sh",
            "shell.txt",
            "?",
            "%00",
            "\0",
            "%2e",
            " ",
            "'",
            "\"",
            "<",
            "#",
            "16:55",
            "T",
            "-",
            ".",
            "\t",
            "\u{e9}",
            "{size}.png",
        ];
        let schemes = ["http", "HTTPS", "hTtP", "ftp", "wss", "gopher", "Dict", "jar", "ldap", "file", "netdoc", "sftp", "xhttp", "url=http", "a.http"];
        let seps = ["://", ":/", ":\\\\", ":", "://user@", "://a:b@"];
        let hosts = [
            "127.0.0.1",
            "0177.0.0.1",
            "0x7F.1",
            "2130706433",
            "1113982867",
            "0x42.0x0000066.0x7.0x93",
            "localhost",
            "LocalHost.",
            "metadata.google.internal",
            "Example.COM",
            "[::1]",
            "[::FFFF:127.0.0.1]",
            "[fd00:ec2::254]",
            "10-0-0-1.sslip.io",
            "127.0.0.1.NIP.IO",
            "x.localtest.me",
            "%77%77%77%2E%67",
            "169.254.169.254",
            "10.0.0.5",
            "192.168.1.1",
            "8.8.8.8",
            "",
        ];
        let tails = ["", ":6379", ":80", ":3000", "/", "/x.TXT", "/s.php?", "/a.txt?q=1", "/x.sh%00", "/y.PL\0", "#f", " more", "'", "?a=b", "/{size}.png"];
        let mut rng = XorShift64::new(0x2545_f491_4f6c_dd1d);
        for i in 0..n {
            if i % 2 == 0 {
                f(&rng.joined(&parts, 8));
            } else {
                let pre = if rng.below(3) == 0 { rng.joined(&parts, 2) } else { String::new() };
                let v = format!(
                    "{pre}{}{}{}{}{}",
                    schemes[rng.below(schemes.len())],
                    seps[rng.below(seps.len())],
                    hosts[rng.below(hosts.len())],
                    tails[rng.below(tails.len())],
                    tails[rng.below(tails.len())]
                );
                f(&v);
            }
        }
    }

    /// [`class_host`] (with [`surely_public`]) classifies as its general path does: host names
    /// made of labels of every kind (special last labels in any case, hex and `x` labels,
    /// addresses, wildcard DNS names, brackets, trailing dots, non-ASCII; a bounded
    /// pseudo-random sample).
    #[test]
    fn class_host_agrees_with_the_general_path() {
        let labels = [
            "internal",
            "Metadata",
            "instance-data",
            "COM",
            "com",
            "localhost",
            "localdomain",
            "ip6-localhost",
            "ip6-loopback",
            "me",
            "IO",
            "io",
            "org",
            "example",
            "google",
            "azure",
            "ec2",
            "127",
            "0x7f",
            "0X7F",
            "0177",
            "1",
            "10-0-0-1",
            "nip",
            "sslip",
            "xip",
            "localtest",
            "lvh",
            "vcap",
            "lacolhost",
            "abc",
            "x",
            "",
            "[::1]",
            "[",
            "]",
            "\u{e9}t\u{e9}",
            "ffff",
            "deadbeef",
            "app",
            "LVH",
            "Nip",
            "LacolHost",
            "vCap",
            "LOCALTEST",
            "SSLIP",
            "Me",
        ];
        let mut rng = XorShift64::new(0x9e37_79b9_7f4a_7c15);
        let (mut public, mut other) = (0, 0);
        for _ in 0..200_000 {
            let n = 1 + rng.below(5);
            let mut h = (0..n).map(|_| labels[rng.below(labels.len())]).collect::<Vec<_>>().join(".");
            if rng.below(4) == 0 {
                h.push('.');
            }
            let want = class_host_general(h.trim_end_matches('.'));
            assert_eq!(class_host(&h), want, "{h:?}");
            if want == (HostClass::Public, false) {
                public += 1;
            } else {
                other += 1;
            }
        }
        assert!(public > 50_000 && other > 10_000, "{public} {other}");
    }

    /// [`analyse`] is blind to ASCII case (schemes, hosts, extensions): a value and its
    /// lowercase form give the same finding, on the same fragment up to case, on generated
    /// URL-ish values and every real value of the sets and bench bodies.
    #[test]
    fn analyse_is_case_blind() {
        let mut found = 0;
        let mut check = |v: &str| {
            let got = analyse(v).map(|h| (h.confidence, h.category, h.why, h.fragment.to_ascii_lowercase()));
            let lower = analyse(&v.to_ascii_lowercase()).map(|h| (h.confidence, h.category, h.why, h.fragment));
            found += usize::from(got.is_some());
            assert_eq!(got, lower, "{v:?}");
        };
        generated_urls(150_000, &mut check);
        for v in crate::other_util::test_values() {
            check(&v);
        }
        assert!(found > 20_000, "{found}");
    }

    /// Every one-byte edit (replacement by a byte of `alphabet`, insertion, deletion) of each
    /// of `bases`, and the bases themselves.
    fn mutated(bases: &[&str], alphabet: &[char], mut f: impl FnMut(&str)) {
        for base in bases {
            f(base);
            let cs: Vec<char> = base.chars().collect();
            for i in 0..=cs.len() {
                for &a in alphabet {
                    let mut v = cs.clone();
                    v.insert(i, a);
                    f(&v.iter().collect::<String>());
                    if i < cs.len() {
                        v.remove(i + 1);
                        v[i] = a;
                        f(&v.iter().collect::<String>());
                    }
                }
                if i < cs.len() {
                    let mut v = cs.clone();
                    v.remove(i);
                    f(&v.iter().collect::<String>());
                }
            }
        }
    }

    /// The bytes that matter to [`value_hit`] and [`analyse`], and some that do not.
    const EDIT_ALPHABET: [char; 37] = [
        ':', '/', '\\', '%', '\t', '\n', '\r', '?', '#', ' ', '"', '\'', '<', '>', '@', '.', '[', ']', '0', '1', '7', 'x', 'X', 'a', 'z', 'T', 'L', '-', '+',
        '{', '}', '\0', '=', '&', ';', '\u{e9}', '_',
    ];

    /// URLs and paths of the bench bodies and the data sets, and URLs of every host class.
    const URL_BASES: [&str; 16] = [
        "https://avatars.discourse.org/v2/letter/k/cab0a1/{size}.png",
        "https://cdn.example.com/img/123.png",
        "/uploads/default/original/1X/9d2806517bf3598b10be135b2c58923b47ba23e7.png",
        "/user_avatar/discourse.metabase.com/tom/{size}/21_1.png",
        "http://127.0.0.1:6379/",
        "http://localhost/x.php",
        "http://evil.com/shell.txt",
        "http://user@10.0.0.1/",
        "gopher://10.0.0.1:25/_HELO",
        "ftp://0x7f.1/a.sh",
        "HTTP://[::1]/",
        "wss://api.github.com./socket",
        "http://metadata.google.internal/computeMetadata/v1/",
        "https://10-0-0-1.sslip.io/",
        "http://2130706433/",
        "dict://x:11211/stat",
    ];

    /// [`value_hit`] (with its quick path) finds what [`value_hit_general`] finds: every real
    /// value of the sets and bench bodies, generated URL-ish values, and every one-byte edit of
    /// URLs and paths.
    #[test]
    fn value_hit_agrees_with_the_general_path() {
        let (mut quick, mut found) = (0, 0);
        let mut check = |v: &str| {
            let want = value_hit_general(v);
            found += usize::from(want.is_some());
            quick += usize::from(quick_scan(v.as_bytes()).is_some());
            assert_eq!(value_hit(v), want, "{v:?}");
        };
        generated_urls(150_000, &mut check);
        for v in crate::other_util::test_values() {
            check(&v);
        }
        mutated(&URL_BASES, &EDIT_ALPHABET, &mut check);
        assert!(quick > 20_000 && found > 20_000, "{quick} {found}");
    }

    /// [`quick_scan`] answers what a look at each byte answers.
    #[test]
    fn quick_scan_agrees_with_the_bytes() {
        let reference = |b: &[u8]| -> Option<Option<usize>> {
            if b.iter().any(|&c| off_quick(c)) || b.iter().filter(|&&c| c == b':').count() > 1 {
                return None;
            }
            Some(b.iter().position(|&c| c == b':'))
        };
        let mut check = |v: &str| assert_eq!(quick_scan(v.as_bytes()), reference(v.as_bytes()), "{v:?}");
        generated_urls(50_000, &mut check);
        for v in crate::other_util::test_values() {
            check(&v);
        }
        mutated(&URL_BASES, &EDIT_ALPHABET, &mut check);
        for c in 0..=255u8 {
            for len in 1..20 {
                for at in 0..len {
                    let mut v = vec![b'a'; len];
                    v[at] = c;
                    assert_eq!(quick_scan(&v), reference(&v), "{c} {len} {at}");
                    v[len - 1 - at.min(len - 1)] = b':';
                    assert_eq!(quick_scan(&v), reference(&v), "{c} {len} {at} :");
                }
            }
        }
    }

    /// [`may_hold_url`] says yes wherever [`analyse`] finds something (the `%` of the gate
    /// admits the values whose percent-decoded view may hold a URL).
    #[test]
    fn may_hold_url_is_sound() {
        let (mut yes, mut no) = (0, 0);
        let mut check = |v: &str| {
            if may_hold_url(v) {
                yes += 1;
            } else {
                no += 1;
                assert!(v.contains('%') || analyse(v).is_none(), "{v:?}");
            }
        };
        generated_urls(150_000, &mut check);
        for v in crate::other_util::test_values() {
            check(&v);
        }
        for v in ["2015-12-08T16:55:37.397Z", "key: value", "a:b", "JAR:x", "xdict:", "Gopher:", "http:\\x", ":", "r:", "9jar:"] {
            check(v);
        }
        assert!(yes > 10_000 && no > 20_000, "{yes} {no}");
    }

    #[test]
    fn tabs_and_newlines_inside_a_url_are_removed_as_url_parsers_do() {
        // The same confidence as the URL written without them.
        for (with, without) in [
            ("htt\tp://6\t6.000146.0x7.147/", "http://66.000146.0x7.147/"),
            ("http://127.0.0\t.1:6379/", "http://127.0.0.1:6379/"),
            ("http://169.254.169\n.254/latest/meta-data/", "http://169.254.169.254/latest/meta-data/"),
            ("gop\r\nher://10.0.0.1:25/_HELO", "gopher://10.0.0.1:25/_HELO"),
        ] {
            assert!(q(without) >= 60, "{without:?} scored {}", q(without));
            assert_eq!(q(with), q(without), "{with:?}");
        }
        // Lines of text that mention a public site stay clean when joined.
        for v in ["see https://example.com/docs\nand https://github.com/a/b", "first line\r\nsecond: line\tthird", "Visit\thttps://www.example.org/\tfor more"]
        {
            assert_eq!(q(v), 0, "{v:?}");
        }
    }

    fn at(v: &str, field: FieldKind) -> u8 {
        detector().check(&Input { raw: v, decoded: v, field }, Level::Strict).map_or(0, |h| h.confidence)
    }

    /// Written for these rules: targets that clients read as another host, loopback URLs that
    /// are a whole value, `ftp:` to an internal host; then values that only look alike.
    #[test]
    fn redirect_tricks_and_whole_value_loopback_urls() {
        for v in [
            "/\\other.example/path",
            "\\/other.example",
            "////other.example/x",
            "/\t/other.example",
            "https:other.example/a",
            "http://trusted.example@other.example/",
            "\\\\files.corp.example\\public",
            "http://localhost/internal",
            "http://[::1]:9000/",
            "http://localhost.localdomain:80/x",
            "ftp://10.1.2.3/pub/",
        ] {
            for f in [FieldKind::QueryValue, FieldKind::JsonValue, FieldKind::FormValue] {
                assert!(at(v, f) >= 60, "{v:?} {f:?}: {}", at(v, f));
            }
        }
        for v in [
            "//comments",
            "/\\n",
            "/path/to/page",
            "//cdn.example.com/lib.js",
            "https://user:pw@host.example/",
            "https://git@github.com/a/b",
            "see http://localhost/admin for the panel",
            "http://localhost:3000/",
            "https: the secure scheme",
            "ftp://ftp.example.org/pub/",
        ] {
            assert!(at(v, FieldKind::JsonValue) < 60, "{v:?}: {}", at(v, FieldKind::JsonValue));
        }
        // In a header (a `Referer`, an `Origin`) a loopback URL is where a browser has been.
        assert!(at("http://localhost/app", FieldKind::Header) < 60);
        for v in ["/\\x.example", "https:x.example", "  ///x", "\\\\x.example"] {
            assert!(may_hold_url_or_trick(v), "{v:?}");
        }
        for v in ["/static/app.js", "//cdn.example/x.js", "a/b"] {
            assert!(!may_hold_url_or_trick(v), "{v:?}");
        }
    }

    #[test]
    fn out_of_band_interaction_hosts() {
        for v in ["http://k3j2.oastify.com/", "https://Z9.OAST.PRO/a", "https://q.dnslog.cn", "<img src=http://x.burpcollaborator.net/p>"] {
            assert!(q(v) >= 60, "{v}: {}", q(v));
        }
        for v in ["https://oastify.com.example.org/", "https://notinteract.sh/", "https://blog.example.com/oast.fun"] {
            assert!(q(v) < 60, "{v}: {}", q(v));
        }
    }

    #[test]
    fn ipv4_forms() {
        assert_eq!(parse_ipv4_loose("2130706433").map(|x| x.0), Some(0x7f000001));
        assert_eq!(parse_ipv4_loose("0177.0.0.1").map(|x| x.0), Some(0x7f000001));
        assert_eq!(parse_ipv4_loose("0x7f000001").map(|x| x.0), Some(0x7f000001));
        assert_eq!(parse_ipv4_loose("127.1").map(|x| x.0), Some(0x7f000001));
        assert_eq!(parse_ipv4_loose("127.0.0.1"), Some((0x7f000001, false)));
        assert_eq!(parse_ipv4_loose("256.0.0.1"), None);
        assert_eq!(parse_ipv4_loose("example.com"), None);
    }

    #[test]
    fn attacks() {
        for v in [
            "http://169.254.169.254/latest/meta-data/",
            "http://metadata.google.internal/computeMetadata/v1/",
            "http://[fd00:ec2::254]/latest/",
            "http://2130706433/",
            "http://0177.0.0.1/admin",
            "http://0x7f000001/",
            "http://127.1/",
            "http://[::ffff:127.0.0.1]/",
            "http://[::]:80/",
            "http://0.0.0.0:8080/",
            "gopher://127.0.0.1:6379/_SET",
            "dict://localhost:11211/stat",
            "jar:http://evil/x.jar!/",
            "http://evil.com/shell.txt?",
            "http://user@127.0.0.1/",
            "url=http://10.0.0.5/admin",
            "http://127.0.0.1.nip.io/",
            "<A HREF=\"http://1113982867/\">XSS</A>",
            "http://0x42.0x0000066.0x7.0x93/",
            "http://0102.0146.0007.00000223/",
            "http://%77%77%77%2E%67%6F%6F%67%6C%65%2E%63%6F%6D",
            "http://127.0.0.1:6379/",
            "http://localtest.me/",
            "http://app.lvh.me:3000/",
            "http://localhost:11211/",
            "http://[::1]:2375/containers/json",
            "http://10.1.2.3:10250/pods",
        ] {
            assert!(q(v) >= 60, "{v}: {}", q(v));
        }
    }

    #[test]
    fn benign() {
        for v in [
            "https://example.com/",
            "https://www.google.com/search?q=127.0.0.1",
            "http://8.8.8.8/",
            "see https://docs.rs/foo",
            "time 10:30",
            "mailto:a@b.c",
            "https://example.com/robots.txt",
            "http://localhost:3000/callback",
            "http://127.0.0.1:8080/oauth/callback",
            "http://localhost:6379x/",
            "http://66.102.7.147/",
            "http://8.8.8.8.nip.io/",
            "https://example.com/a%20b?q=%41",
            "http://[2001:db8::1]/",
            "http://v1.2/",
        ] {
            assert!(q(v) < 60, "{v}: {}", q(v));
        }
    }

    #[test]
    fn linear() {
        for unit in ["http://", ":", "http://127.1 ", "gopher:", "a:"] {
            let v = unit.repeat(1_000_000 / unit.len());
            take_steps();
            let _ = detector().check(&Input { raw: &v, decoded: &v, field: FieldKind::QueryValue }, Level::Strict);
            assert!(take_steps() < 80 * v.len() as u64, "{unit}");
        }
    }

    #[test]
    fn a_loopback_url_of_a_loaded_source_file_is_not_a_target() {
        // Written for this rule: frames and resource names of pages served by a dev server.
        for v in [
            "http://localhost:3000/static/js/bundle.js",
            "    at useEffect (http://localhost:3000/static/js/bundle.js:7592:165)",
            "render@http://127.0.0.1:5173/src/main.tsx:12:3",
            "http://[::1]:8080/assets/app.css?v=3",
        ] {
            assert!(q(v) < 40, "{v}: {}", q(v));
        }
        // Any other loopback URL stays a strict probe; alternate notations, userinfo and
        // internal service ports stay what they were.
        for (v, at_least) in [
            ("http://localhost/callback", 40),
            ("http://127.0.0.1/admin", 40),
            ("http://0x7f000001/x.js", 60),
            ("http://user@localhost/app.js", 60),
            ("http://localhost:6379/x.js:1:1", 60),
        ] {
            assert!(q(v) >= at_least, "{v}: {}", q(v));
        }
        assert!(source_location("/a/b.js:1:2") && source_location("/x:10:5") && !source_location("/callback") && !source_location(":1:2"));
        assert!(source_location("/static/js/bundle.js:7592:165select@app:///main.jsbundle:7203:6"));
    }

    /// A development server's address is not a probe at any level; the same hosts on the
    /// default port, on an internal service's port, in another notation or behind userinfo are.
    #[test]
    fn development_server_addresses_pass() {
        for v in
            ["http://localhost:3000", "http://localhost:5173/", "http://LOCALHOST:4200/callback?code=x", "http://127.0.0.1:8000/admin/", "ws://localhost:24678"]
        {
            assert!(q(v) < 40, "{v}: {}", q(v));
        }
        for (v, at_least) in [
            ("http://localhost/admin", 40),
            ("http://localhost:80/admin", 40),
            ("http://127.0.0.1:443/", 40),
            ("http://localhost:9200/_cat/indices", 60),
            ("http://127.0.0.1:6379/", 60),
            ("http://admin@localhost:3000/", 60),
            ("http://2130706433:3000/", 60),
            ("http://[::1]:8080/", 40),
            ("http://10.0.0.5:3000/", 40),
        ] {
            assert!(q(v) >= at_least, "{v}: {}", q(v));
        }
    }
}
