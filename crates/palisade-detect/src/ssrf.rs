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

use crate::other_util::{best, gate, mk, step, views};
use crate::{Category, Detector, Gate, Hit, Input, Level};

const NAME: &str = "ssrf";

pub struct SsrfDetector;

pub fn detector() -> Box<dyn Detector> {
    Box::new(SsrfDetector)
}

/// The pre-filter declared to the engine ([`Gate`]): every finding of [`analyse`] starts at a
/// `:` after a scheme that starts with a letter, followed by `/` or `\\` (or the scheme is
/// `jar`, `dict`, `gopher`); `%` for the percent-decoded view.
const GATE: Gate = Gate { bytes: "%", anchors: &[], words: &[], test: Some(may_hold_url), test_bytes: ":", test_only: "" };

/// See [`GATE`]: the scheme walk of [`analyse`] without its allocation.
fn may_hold_url(s: &str) -> bool {
    let b = s.as_bytes();
    memchr::memchr_iter(b':', b).any(|p| {
        let mut st = p;
        while st > 0 && p - st < 16 && (b[st - 1].is_ascii_alphanumeric() || matches!(b[st - 1], b'+' | b'-' | b'.')) {
            st -= 1;
        }
        if st == p || !b[st].is_ascii_alphabetic() {
            return false;
        }
        let scheme = &b[st..p];
        let ends = |x: &[u8]| scheme.len() >= x.len() && scheme[scheme.len() - x.len()..].eq_ignore_ascii_case(x);
        matches!(b.get(p + 1), Some(b'/' | b'\\')) || ends(b"jar") || ends(b"dict") || ends(b"gopher")
    })
}

impl Detector for SsrfDetector {
    fn name(&self) -> &'static str {
        NAME
    }

    fn gate(&self) -> Option<Gate> {
        Some(GATE)
    }

    fn check(&self, input: &Input<'_>, level: Level) -> Option<Hit> {
        let mut h = None;
        for v in views(input.decoded).iter().filter(|v| !v.is_empty()) {
            h = best(h, analyse(v));
            // WHATWG URL parsing (browsers, Node's `URL`) removes every ASCII tab and newline
            // from a URL before reading it: `htt\tp://6\t6.0x7.147/` is `http://66.0x7.147/`.
            if memchr::memchr3(b'\t', b'\n', b'\r', v.as_bytes()).is_some() {
                let joined: String = v.chars().filter(|c| !matches!(c, '\t' | '\n' | '\r')).collect();
                h = best(h, analyse(&joined));
            }
        }
        gate(h, level)
    }
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

fn class_host(host: &str) -> (HostClass, bool) {
    let h = host.trim_end_matches('.');
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

fn analyse(s: &str) -> Option<Hit> {
    let l = s.to_ascii_lowercase();
    step(l.len());
    let mut out = None;
    for (p, _) in l.match_indices(':') {
        step(1);
        // Scheme: letters before the colon, starting at a token boundary.
        let bs = l.as_bytes();
        let mut st = p;
        while st > 0 && p - st < 16 && (bs[st - 1].is_ascii_alphanumeric() || matches!(bs[st - 1], b'+' | b'-' | b'.')) {
            st -= 1;
        }
        let scheme = &l[st..p];
        if scheme.is_empty() || !scheme.as_bytes()[0].is_ascii_alphabetic() {
            continue;
        }
        let rest = &l[p + 1..];
        if let Some((_, c)) = RAW_SCHEMES.iter().find(|(n, _)| *n == scheme) {
            if scheme == "file" {
                // file: URLs are local file inclusion; the path detector reports them.
                continue;
            }
            if rest.starts_with("//") || scheme == "jar" || scheme == "dict" || scheme == "gopher" {
                out = best(out, Some(mk(NAME, Category::Ssrf, *c, &s[st..], "URL scheme that speaks a raw protocol")));
            }
            continue;
        }
        if !matches!(scheme, "http" | "https" | "ftp" | "ws" | "wss") {
            continue;
        }
        // Lenient: `http:/x`, `http:\\x` also reach the network in many clients.
        let auth_start = rest.trim_start_matches(['/', '\\']);
        if auth_start.len() == rest.len() {
            continue;
        }
        let off = p + 1 + (rest.len() - auth_start.len());
        let win = crate::truncate(auth_start, 512);
        // Byte searches (every delimiter is ASCII, so each match is on a char boundary).
        let auth_end = win.bytes().position(|b| matches!(b, b'/' | b'\\' | b'?' | b'#' | b' ' | b'"' | b'\'' | b'<' | b'>')).unwrap_or(win.len());
        let auth = &auth_start[..auth_end];
        let hostport = auth.rsplit('@').next().unwrap_or(auth);
        let host = if hostport.starts_with('[') { hostport.find(']').map_or(hostport, |e| &hostport[..=e]) } else { hostport.split(':').next().unwrap_or("") };
        if host.is_empty() {
            continue;
        }
        let (class, alt) = class_host(host);
        let userinfo_trick = auth.contains('@');
        let frag = &s[st..(off + auth_end).min(s.len())];
        let c: u8 = match (class, alt) {
            (HostClass::Metadata, _) => 95,
            (HostClass::Loopback | HostClass::Private | HostClass::LinkLocal | HostClass::Unspecified, true) => 90,
            (HostClass::Unspecified, false) => 80,
            (HostClass::LinkLocal, false) => 80,
            (HostClass::Loopback, false) => 55,
            (HostClass::Private, false) => 60,
            (HostClass::Public, _) => 0,
        };
        let c = if userinfo_trick && c > 0 { c.max(85) } else { c };
        // A loopback or private host on the port of a service that speaks no HTTP to browsers
        // (Redis, memcached, databases, SSH, SMTP, the Docker and kubelet APIs): no OAuth
        // redirect or development server lives there.
        let port = hostport[host.len()..].strip_prefix(':').and_then(|p| p.parse::<u16>().ok());
        let c = if matches!(class, HostClass::Loopback | HostClass::Private) && port.is_some_and(internal_service_port) { c.max(80) } else { c };
        if c > 0 {
            out = best(out, Some(mk(NAME, Category::Ssrf, c, frag, "URL to an internal or metadata address")));
        } else if alt && parse_ipv4_loose(host.trim_end_matches('.')).is_some() {
            // A public address written as one number, in octal or hex, or padded: no link is
            // written that way except to get past a URL filter (`http://1113982867/`).
            out = best(out, Some(mk(NAME, Category::Ssrf, 70, frag, "URL host in an alternate IPv4 notation (filter evasion)")));
        } else if encoded_host(host) {
            out = best(out, Some(mk(NAME, Category::Ssrf, 65, frag, "URL host with percent-encoded letters (filter evasion)")));
        }
        // RFI: a URL to a script-ish resource whose end is cut with `?` or a NUL.
        let after = crate::truncate(&auth_start[auth_end..], 2048);
        let path_end = after.bytes().position(|b| matches!(b, b' ' | b'"' | b'\'' | b'<' | b'>')).unwrap_or(after.len());
        let url_rest = &after[..path_end];
        let trimmed_q = url_rest.ends_with('?') || url_rest.ends_with("%00") || url_rest.ends_with('\0');
        let path_only = url_rest.split('?').next().unwrap_or("");
        let scripty = [".txt", ".php", ".sh", ".pl", ".py", ".jsp", ".asp", ".inc", ".cgi"].iter().any(|e| path_only.ends_with(e));
        if trimmed_q && scripty {
            out = best(out, Some(mk(NAME, Category::Rfi, 80, &s[st..], "remote include with the appended extension cut off")));
        } else if scripty && path_only.ends_with(".txt") && p == st + scheme.len() && st == 0 && url_rest.contains("?") {
            out = best(out, Some(mk(NAME, Category::Rfi, 50, &s[st..], "remote text file with a query")));
        }
    }
    out
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

    fn q(v: &str) -> u8 {
        detector().check(&Input { raw: v, decoded: v, field: FieldKind::QueryValue }, Level::Strict).map_or(0, |h| h.confidence)
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
}
