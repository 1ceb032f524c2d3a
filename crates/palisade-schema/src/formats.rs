//! The `format` keyword: hand-written checks over the string's bytes (already valid UTF-8).
//! String formats apply to strings, numeric formats to numbers; other types pass.

/// A known format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Format {
    DateTime,
    Date,
    Time,
    Email,
    Uuid,
    Uri,
    UriReference,
    Ipv4,
    Ipv6,
    Hostname,
    IdnHostname,
    IdnEmail,
    Iri,
    IriReference,
    JsonPointer,
    RelativeJsonPointer,
    UriTemplate,
    Duration,
    Regex,
    Byte,
    Int32,
    Int64,
    /// `float`, `double`, `password`, `binary`: no check beyond the type.
    Any,
}

impl Format {
    pub fn from_name(name: &str) -> Option<Format> {
        Some(match name {
            "date-time" => Format::DateTime,
            "date" => Format::Date,
            "time" => Format::Time,
            "email" => Format::Email,
            "uuid" => Format::Uuid,
            "uri" => Format::Uri,
            "uri-reference" => Format::UriReference,
            "ipv4" => Format::Ipv4,
            "ipv6" => Format::Ipv6,
            "hostname" => Format::Hostname,
            "idn-hostname" => Format::IdnHostname,
            "idn-email" => Format::IdnEmail,
            "iri" => Format::Iri,
            "iri-reference" => Format::IriReference,
            "json-pointer" => Format::JsonPointer,
            "relative-json-pointer" => Format::RelativeJsonPointer,
            "uri-template" => Format::UriTemplate,
            "duration" => Format::Duration,
            "regex" => Format::Regex,
            "byte" => Format::Byte,
            "int32" => Format::Int32,
            "int64" => Format::Int64,
            "float" | "double" | "password" | "binary" => Format::Any,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Format::DateTime => "date-time",
            Format::Date => "date",
            Format::Time => "time",
            Format::Email => "email",
            Format::Uuid => "uuid",
            Format::Uri => "uri",
            Format::UriReference => "uri-reference",
            Format::Ipv4 => "ipv4",
            Format::Ipv6 => "ipv6",
            Format::Hostname => "hostname",
            Format::IdnHostname => "idn-hostname",
            Format::IdnEmail => "idn-email",
            Format::Iri => "iri",
            Format::IriReference => "iri-reference",
            Format::JsonPointer => "json-pointer",
            Format::RelativeJsonPointer => "relative-json-pointer",
            Format::UriTemplate => "uri-template",
            Format::Duration => "duration",
            Format::Regex => "regex",
            Format::Byte => "byte",
            Format::Int32 => "int32",
            Format::Int64 => "int64",
            Format::Any => "any",
        }
    }

    /// The formats whose valid strings are written with digits, the letters of hexadecimal
    /// digits and of RFC 3339 (`T`, `Z`, either case) and `-:.+` only (RFC 3339
    /// dates and times, RFC 4122 UUIDs): text that carries no attack of any class, whatever
    /// the field.
    pub fn closed_alphabet(self) -> bool {
        matches!(self, Format::DateTime | Format::Date | Format::Time | Format::Uuid)
    }

    /// Check a string value.
    pub fn check_str(self, s: &[u8]) -> bool {
        match self {
            Format::DateTime => date_time(s),
            Format::Date => date(s),
            Format::Time => time(s),
            Format::Email => email(s),
            Format::Uuid => uuid(s),
            Format::Uri => uri(s),
            Format::UriReference => uri_reference(s),
            Format::Ipv4 => ipv4(s),
            Format::Ipv6 => ipv6(s),
            Format::Hostname => hostname(s),
            Format::IdnHostname => idn_hostname(s),
            Format::IdnEmail => idn_email(s),
            Format::Iri => iri(s),
            Format::IriReference => iri_reference(s),
            Format::JsonPointer => json_pointer(s),
            Format::RelativeJsonPointer => relative_json_pointer(s),
            Format::UriTemplate => uri_template(s),
            Format::Duration => duration(s),
            Format::Regex => std::str::from_utf8(s).is_ok_and(crate::pattern::is_ecma_regex),
            Format::Byte => base64(s),
            Format::Int32 | Format::Int64 | Format::Any => true,
        }
    }

    /// Check a number (its JSON text).
    pub fn check_number(self, text: &[u8]) -> bool {
        let (lo, hi): (&[u8], &[u8]) = match self {
            Format::Int32 => (b"-2147483648", b"2147483647"),
            Format::Int64 => (b"-9223372036854775808", b"9223372036854775807"),
            _ => return true,
        };
        if !crate::num::is_integral_text(text) {
            return false;
        }
        matches!(crate::num::cmp(text, lo), Some(std::cmp::Ordering::Greater | std::cmp::Ordering::Equal))
            && matches!(crate::num::cmp(text, hi), Some(std::cmp::Ordering::Less | std::cmp::Ordering::Equal))
    }
}

fn digits(s: &[u8], at: usize, n: usize) -> Option<u32> {
    let d = s.get(at..at + n)?;
    let mut v = 0;
    for &b in d {
        if !b.is_ascii_digit() {
            return None;
        }
        v = v * 10 + (b - b'0') as u32;
    }
    Some(v)
}

/// RFC 3339 full-date.
pub(crate) fn date(s: &[u8]) -> bool {
    s.len() == 10 && full_date(s)
}

fn full_date(s: &[u8]) -> bool {
    let (Some(y), Some(m), Some(d)) = (digits(s, 0, 4), digits(s, 5, 2), digits(s, 8, 2)) else { return false };
    if s[4] != b'-' || s[7] != b'-' || !(1..=12).contains(&m) || d == 0 {
        return false;
    }
    d <= days_in_month(y, m)
}

/// Days of month `m` (1..=12) of year `y` (Gregorian leap years).
fn days_in_month(y: u32, m: u32) -> u32 {
    match m {
        2 if y % 4 == 0 && (y % 100 != 0 || y % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// RFC 3339 full-time (`hh:mm:ss[.frac](Z|±hh:mm)`); second 60 is allowed (leap second).
pub(crate) fn time(s: &[u8]) -> bool {
    let (Some(h), Some(m), Some(sec)) = (digits(s, 0, 2), digits(s, 3, 2), digits(s, 6, 2)) else { return false };
    if s[2] != b':' || s[5] != b':' || h > 23 || m > 59 || sec > 60 {
        return false;
    }
    time_rest(&s[8..]) && (sec < 60 || leap_second_ok(h, m, &s[8..]))
}

/// A leap second (`:60`) is only at 23:59 UTC: the time less its offset.
fn leap_second_ok(h: u32, m: u32, rest: &[u8]) -> bool {
    let p = rest.iter().position(|&b| matches!(b, b'Z' | b'z' | b'+' | b'-')).unwrap_or(rest.len());
    let offset = match rest.get(p) {
        Some(b'+' | b'-') => {
            let (Some(oh), Some(om)) = (digits(rest, p + 1, 2), digits(rest, p + 4, 2)) else { return false };
            let o = (oh * 60 + om) as i64;
            if rest[p] == b'+' {
                o
            } else {
                -o
            }
        }
        _ => 0,
    };
    ((h * 60 + m) as i64 - offset).rem_euclid(1440) == 23 * 60 + 59
}

/// RFC 3339 date-time: full-date, `T` (or `t`), full-time.
pub(crate) fn date_time(s: &[u8]) -> bool {
    if s.len() < 20 {
        return false;
    }
    // The fixed-layout part `YYYY-MM-DDTHH:MM:SS` read from a 19-byte array as three words
    // (no bounds checks, no loops); the same rules as `full_date` and `time`.
    let Some(h) = s.first_chunk::<19>() else { return false };
    let w0 = u64::from_le_bytes([h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7]]); // YYYY-MM-
    let w1 = u64::from_le_bytes([h[8], h[9], h[10], h[11], h[12], h[13], h[14], h[15]]); // DDTHH:MM
    let w2 = u32::from_le_bytes([h[15], h[16], h[17], h[18]]); // M:SS
                                                               // A byte is a digit when, xor '0', it is below 10: no bit of 0xF0 set, before or after
                                                               // adding 6. (A carry out of a non-digit position only happens when a separator is wrong,
                                                               // which fails below anyway.)
    let nondigit64 = |w: u64, mask: u64| {
        let x = w ^ 0x3030_3030_3030_3030;
        (x | x.wrapping_add(0x0606_0606_0606_0606)) & 0xF0F0_F0F0_F0F0_F0F0 & mask != 0
    };
    let x2 = w2 ^ 0x3030_3030;
    if nondigit64(w0, 0x00FF_FF00_FFFF_FFFF)
        || nondigit64(w1, 0xFFFF_00FF_FF00_FFFF)
        || (x2 | x2.wrapping_add(0x0606_0606)) & 0xF0F0_00F0 != 0
        || h[4] != b'-'
        || h[7] != b'-'
        || h[10] | 0x20 != b't'
        || h[13] != b':'
        || h[16] != b':'
    {
        return false;
    }
    // Two digits compare as numbers when read as a big-endian pair of bytes (all are digits).
    let pair = |i: usize| u16::from_be_bytes([h[i], h[i + 1]]);
    let two = |t: &[u8; 2]| u16::from_be_bytes(*t);
    if !(two(b"01")..=two(b"12")).contains(&pair(5)) || pair(8) < two(b"01") || pair(11) > two(b"23") || pair(14) > two(b"59") || pair(17) > two(b"60") {
        return false;
    }
    // Every month has days 1 to 28: the month's length is looked up only beyond that.
    if pair(8) > two(b"28") {
        let d = |i: usize| (h[i] - b'0') as u32;
        let (y, m, day) = (d(0) * 1000 + d(1) * 100 + d(2) * 10 + d(3), d(5) * 10 + d(6), d(8) * 10 + d(9));
        if day > days_in_month(y, m) {
            return false;
        }
    }
    let num = |i: usize| (h[i] - b'0') as u32 * 10 + (h[i + 1] - b'0') as u32;
    time_rest(&s[19..]) && (pair(17) < two(b"60") || leap_second_ok(num(11), num(14), &s[19..]))
}

/// What follows `hh:mm:ss` in a full-time: `[.frac](Z|±hh:mm)`.
fn time_rest(s: &[u8]) -> bool {
    // The usual shapes first: `Z`, `.fffZ`.
    match s {
        [b'Z' | b'z'] => return true,
        [b'.', a, b, c, b'Z' | b'z'] => return a.is_ascii_digit() && b.is_ascii_digit() && c.is_ascii_digit(),
        _ => {}
    }
    let mut p = 0;
    if s.first() == Some(&b'.') {
        p = 1 + s[1..].iter().take_while(|b| b.is_ascii_digit()).count();
        if p == 1 {
            return false;
        }
    }
    match s.get(p) {
        Some(b'Z' | b'z') => p + 1 == s.len(),
        Some(b'+' | b'-') => {
            let (Some(oh), Some(om)) = (digits(s, p + 1, 2), digits(s, p + 4, 2)) else { return false };
            s[p + 3] == b':' && oh <= 23 && om <= 59 && p + 6 == s.len()
        }
        _ => false,
    }
}

/// A pragmatic RFC 5321 mailbox: `local@domain`, local part of atext and dots (no leading,
/// trailing or double dot) or a quoted string, domain a hostname or an address literal.
pub(crate) fn email(s: &[u8]) -> bool {
    let Some(at) = s.iter().rposition(|&b| b == b'@') else { return false };
    let (local, domain) = (&s[..at], &s[at + 1..]);
    if local.is_empty() || local.len() > 64 || domain.is_empty() || s.len() > 254 {
        return false;
    }
    let local_ok = if local.len() >= 2 && local[0] == b'"' && local[local.len() - 1] == b'"' {
        let inner = &local[1..local.len() - 1];
        let mut i = 0;
        let mut ok = true;
        while i < inner.len() {
            match inner[i] {
                b'\\' if i + 1 < inner.len() => i += 2,
                b'"' | b'\\' => {
                    ok = false;
                    break;
                }
                0x20..=0x7E => i += 1,
                _ => {
                    ok = false;
                    break;
                }
            }
        }
        ok
    } else {
        const SPECIAL: &[u8] = b"!#$%&'*+-/=?^_`{|}~";
        local[0] != b'.'
            && local[local.len() - 1] != b'.'
            && !local.windows(2).any(|w| w == b"..")
            && local.iter().all(|&b| b.is_ascii_alphanumeric() || b == b'.' || SPECIAL.contains(&b))
    };
    if !local_ok {
        return false;
    }
    if domain[0] == b'[' && domain[domain.len() - 1] == b']' {
        let lit = &domain[1..domain.len() - 1];
        return ipv4(lit) || (lit.len() > 5 && lit[..5].eq_ignore_ascii_case(b"IPv6:") && ipv6(&lit[5..]));
    }
    hostname(domain)
}

/// `8-4-4-4-12` hex digits.
pub(crate) fn uuid(s: &[u8]) -> bool {
    s.len() == 36 && s.iter().enumerate().all(|(i, &b)| if matches!(i, 8 | 13 | 18 | 23) { b == b'-' } else { b.is_ascii_hexdigit() })
}

/// Dotted quad, each part 0..=255 without leading zeros.
pub(crate) fn ipv4(s: &[u8]) -> bool {
    let mut parts = 0;
    for part in s.split(|&b| b == b'.') {
        parts += 1;
        if part.is_empty() || part.len() > 3 || !part.iter().all(u8::is_ascii_digit) || (part.len() > 1 && part[0] == b'0') {
            return false;
        }
        if part.iter().fold(0u32, |v, &b| v * 10 + (b - b'0') as u32) > 255 {
            return false;
        }
    }
    parts == 4
}

/// RFC 4291 text forms: eight groups, `::` compression, embedded IPv4 in the last 32 bits.
/// Zone ids (`%eth0`) are not part of the format.
pub(crate) fn ipv6(s: &[u8]) -> bool {
    if s.len() < 2 || s.len() > 45 {
        return false;
    }
    let (head, tail): (&[u8], Option<&[u8]>) = match s.windows(2).position(|w| w == b"::") {
        Some(i) => (&s[..i], Some(&s[i + 2..])),
        None => (s, None),
    };
    if let Some(t) = tail {
        if t.windows(2).any(|w| w == b"::") {
            return false;
        }
    }
    // Count 16-bit groups on each side; an IPv4 tail counts as two and must be last.
    fn groups(part: &[u8], may_end_v4: bool) -> Option<usize> {
        if part.is_empty() {
            return Some(0);
        }
        let pieces: Vec<&[u8]> = part.split(|&b| b == b':').collect();
        let mut n = 0;
        for (i, g) in pieces.iter().enumerate() {
            let last = i + 1 == pieces.len();
            if last && may_end_v4 && g.contains(&b'.') {
                if !ipv4(g) {
                    return None;
                }
                n += 2;
            } else if g.is_empty() || g.len() > 4 || !g.iter().all(u8::is_ascii_hexdigit) {
                return None;
            } else {
                n += 1;
            }
        }
        Some(n)
    }
    match tail {
        None => groups(head, true) == Some(8),
        Some(t) => {
            let (Some(a), Some(b)) = (groups(head, false), groups(t, true)) else { return false };
            a + b <= 7
        }
    }
}

/// RFC 1123 host name: dot-separated labels of letters, digits and hyphens (1-63 bytes, no
/// leading or trailing hyphen), at most 253 bytes, no trailing dot (JSON Schema's reading).
/// A label with hyphens in its third and fourth places is an IDNA A-label (RFC 5891 §4.2.3.1):
/// `xn--` and valid Punycode of a valid U-label.
pub(crate) fn hostname(s: &[u8]) -> bool {
    if s.is_empty() || s.len() > 253 {
        return false;
    }
    s.split(|&b| b == b'.').all(|l| {
        !l.is_empty()
            && l.len() <= 63
            && l[0] != b'-'
            && l[l.len() - 1] != b'-'
            && l.iter().all(|&b| b.is_ascii_alphanumeric() || b == b'-')
            && (l.get(2..4) != Some(b"--") || (l[..2].eq_ignore_ascii_case(b"xn") && a_label_ok(&l[4..])))
    })
}

/// The Punycode of an A-label: decodes to a valid U-label and encodes back to itself.
fn a_label_ok(puny: &[u8]) -> bool {
    crate::idn::punycode_decode(puny).is_some_and(|u| {
        crate::idn::u_label_ok(&u)
            && !u.iter().all(char::is_ascii)
            && crate::idn::punycode_encode(&u).is_some_and(|back| back.as_bytes().eq_ignore_ascii_case(puny))
    })
}

/// RFC 5890 internationalized host name: labels separated by `.` or the ideographic full stops
/// (U+3002, U+FF0E, U+FF61), each an A-label or a valid U-label (RFC 5892 rules).
pub(crate) fn idn_hostname(s: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(s) else { return false };
    if text.is_empty() {
        return false;
    }
    let mut total = 0;
    for label in text.split(['.', '\u{3002}', '\u{FF0E}', '\u{FF61}']) {
        if label.is_ascii() {
            if !hostname(label.as_bytes()) || label.contains('.') {
                return false;
            }
            total += label.len() + 1;
            continue;
        }
        let chars: Vec<char> = label.chars().collect();
        if !crate::idn::u_label_ok(&chars) {
            return false;
        }
        let Some(a) = crate::idn::punycode_encode(&chars) else { return false };
        if a.len() + 4 > 63 {
            return false;
        }
        total += a.len() + 5;
    }
    total <= 254
}

/// RFC 6531 mailbox: as `email`, with UTF-8 in the local part and an idn-hostname domain.
pub(crate) fn idn_email(s: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(s) else { return false };
    let Some(at) = text.rfind('@') else { return false };
    let (local, domain) = (&text[..at], &text[at + 1..]);
    let ascii_local: String = local.chars().map(|c| if c.is_ascii() { c } else { 'a' }).collect();
    email(format!("{ascii_local}@example.com").as_bytes())
        && (idn_hostname(domain.as_bytes()) || (domain.starts_with('[') && email(format!("a@{domain}").as_bytes())))
}

/// RFC 3987 IRI: a URI whose unreserved characters may also be non-ASCII (not in the scheme).
pub(crate) fn iri(s: &[u8]) -> bool {
    std::str::from_utf8(s).is_ok_and(|t| scheme_end(t.as_bytes()).is_some() && uri(&ascii_stand_in(t)))
}

/// RFC 3987 IRI-reference.
pub(crate) fn iri_reference(s: &[u8]) -> bool {
    std::str::from_utf8(s).is_ok_and(|t| uri_reference(&ascii_stand_in(t)))
}

/// Non-ASCII characters (ucschar, iprivate) stand in as an unreserved letter.
fn ascii_stand_in(t: &str) -> Vec<u8> {
    t.chars().map(|c| if c.is_ascii() { c as u8 } else { b'a' }).collect()
}

/// RFC 6901 JSON pointer: empty, or `/`-prefixed tokens where `~` is `~0` or `~1`.
pub(crate) fn json_pointer(s: &[u8]) -> bool {
    (s.is_empty() || s[0] == b'/') && s.iter().enumerate().all(|(i, &b)| b != b'~' || matches!(s.get(i + 1), Some(b'0' | b'1')))
}

/// Relative JSON pointer (draft-bhutton-relative-json-pointer-00): a non-negative integer,
/// an optional index manipulation (`+n`, `-n`), then `#` or a JSON pointer.
pub(crate) fn relative_json_pointer(s: &[u8]) -> bool {
    let int = |s: &[u8]| -> usize {
        let n = s.iter().take_while(|b| b.is_ascii_digit()).count();
        if n > 1 && s[0] == b'0' {
            0
        } else {
            n
        }
    };
    let n = int(s);
    if n == 0 {
        return false;
    }
    let mut rest = &s[n..];
    if let Some(r) = rest.strip_prefix(b"+").or_else(|| rest.strip_prefix(b"-")) {
        let m = int(r);
        if m == 0 {
            return false;
        }
        rest = &r[m..];
    }
    rest == b"#" || json_pointer(rest)
}

/// RFC 6570 URI Template (any level): literals and `{[op]varspec,...}` expressions.
pub(crate) fn uri_template(s: &[u8]) -> bool {
    let mut i = 0;
    while i < s.len() {
        match s[i] {
            b'{' => {
                let Some(len) = s[i + 1..].iter().position(|&b| b == b'}') else { return false };
                let mut e = &s[i + 1..i + 1 + len];
                if let Some((&op, rest)) = e.split_first() {
                    if b"+#./;?&=,!@|".contains(&op) {
                        e = rest;
                    }
                }
                if e.is_empty() || !e.split(|&b| b == b',').all(varspec) {
                    return false;
                }
                i += len + 2;
            }
            b'%' => {
                if !(s.get(i + 1).is_some_and(u8::is_ascii_hexdigit) && s.get(i + 2).is_some_and(u8::is_ascii_hexdigit)) {
                    return false;
                }
                i += 3;
            }
            // RFC 6570 excludes `'` from literals too; JSON Schema's test suite reads the
            // errata that allows it
            b if b < 0x21 || b == 0x7F || b"\"<>\\^`|}".contains(&b) => return false,
            _ => i += 1,
        }
    }
    true
}

fn varspec(v: &[u8]) -> bool {
    let (name, modifier) = match v.iter().position(|&b| b == b':' || b == b'*') {
        Some(i) => (&v[..i], &v[i..]),
        None => (v, &v[..0]),
    };
    let modifier_ok = match modifier {
        [] | [b'*'] => true,
        [b':', d @ ..] => (1..=4).contains(&d.len()) && d[0] != b'0' && d.iter().all(u8::is_ascii_digit),
        _ => false,
    };
    let mut prev_dot = true;
    let mut i = 0;
    while i < name.len() {
        match name[i] {
            b'.' if !prev_dot => prev_dot = true,
            b'%' if name.get(i + 1).is_some_and(u8::is_ascii_hexdigit) && name.get(i + 2).is_some_and(u8::is_ascii_hexdigit) => {
                prev_dot = false;
                i += 2;
            }
            b if b.is_ascii_alphanumeric() || b == b'_' => prev_dot = false,
            _ => return false,
        }
        i += 1;
    }
    !name.is_empty() && !prev_dot && modifier_ok
}

/// RFC 3339 appendix A duration: `P` then date units (`Y`, `M`, `D`, each following the one
/// before without a gap) and/or `T` with time units (`H`, `M`, `S`), or weeks alone (`nW`).
pub(crate) fn duration(s: &[u8]) -> bool {
    let Some(rest) = s.strip_prefix(b"P") else { return false };
    if rest.is_empty() {
        return false;
    }
    // `nW` alone
    if let Some(n) = rest.strip_suffix(b"W") {
        return !n.is_empty() && n.iter().all(u8::is_ascii_digit);
    }
    let (date, time) = match rest.iter().position(|&b| b == b'T') {
        Some(i) => (&rest[..i], Some(&rest[i + 1..])),
        None => (rest, None),
    };
    fn units(mut s: &[u8], order: &[u8]) -> bool {
        let mut last: Option<usize> = None;
        while !s.is_empty() {
            let n = s.iter().take_while(|b| b.is_ascii_digit()).count();
            let Some(&u) = s.get(n) else { return false };
            let Some(k) = order.iter().position(|&o| o == u) else { return false };
            if n == 0 || last.is_some_and(|l| k != l + 1) {
                return false;
            }
            last = Some(k);
            s = &s[n + 1..];
        }
        true
    }
    match time {
        Some(t) => !t.is_empty() && units(date, b"YMD") && units(t, b"HMS"),
        None => units(date, b"YMD"),
    }
}

/// Standard base64 (RFC 4648 section 4), padded to a multiple of four.
pub(crate) fn base64(s: &[u8]) -> bool {
    if s.len() % 4 != 0 {
        return false;
    }
    let pad = s.iter().rev().take_while(|&&b| b == b'=').count();
    if pad > 2 {
        return false;
    }
    s[..s.len() - pad].iter().all(|&b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/')
}

fn is_unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

fn is_sub_delim(b: u8) -> bool {
    matches!(b, b'!' | b'$' | b'&' | b'\'' | b'(' | b')' | b'*' | b'+' | b',' | b';' | b'=')
}

/// Characters allowed by `allowed`, or percent-encoded octets.
fn pct_run(s: &[u8], allowed: impl Fn(u8) -> bool) -> bool {
    let mut i = 0;
    while i < s.len() {
        if s[i] == b'%' {
            if i + 2 >= s.len() || !s[i + 1].is_ascii_hexdigit() || !s[i + 2].is_ascii_hexdigit() {
                return false;
            }
            i += 3;
        } else if allowed(s[i]) {
            i += 1;
        } else {
            return false;
        }
    }
    true
}

fn pchar(b: u8) -> bool {
    is_unreserved(b) || is_sub_delim(b) || b == b':' || b == b'@'
}

/// Authority `[userinfo@]host[:port]`.
fn authority(a: &[u8]) -> bool {
    let (userinfo, hostport) = match a.iter().rposition(|&b| b == b'@') {
        Some(i) => (&a[..i], &a[i + 1..]),
        None => (&a[..0], a),
    };
    if !pct_run(userinfo, |b| is_unreserved(b) || is_sub_delim(b) || b == b':') {
        return false;
    }
    let (host, port) = if hostport.first() == Some(&b'[') {
        let Some(close) = hostport.iter().position(|&b| b == b']') else { return false };
        let lit = &hostport[1..close];
        let ok = ipv6(lit) || (lit.first().is_some_and(|&b| b == b'v' || b == b'V') && lit.len() > 3);
        if !ok {
            return false;
        }
        let rest = &hostport[close + 1..];
        match rest.first() {
            None => (&hostport[..0], &rest[..0]),
            Some(b':') => (&hostport[..0], &rest[1..]),
            _ => return false,
        }
    } else {
        match hostport.iter().rposition(|&b| b == b':') {
            Some(i) => (&hostport[..i], &hostport[i + 1..]),
            None => (hostport, &hostport[..0]),
        }
    };
    pct_run(host, |b| is_unreserved(b) || is_sub_delim(b)) && port.iter().all(u8::is_ascii_digit)
}

/// `hier-part` or `relative-part` after the scheme: `//authority path-abempty` or a path;
/// then `?query` and `#fragment`.
fn rest_of_uri(s: &[u8], relative: bool) -> bool {
    let (s, fragment) = match s.iter().position(|&b| b == b'#') {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    let (s, query) = match s.iter().position(|&b| b == b'?') {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    let qf = |b: u8| pchar(b) || b == b'/' || b == b'?';
    if !query.is_none_or(|q| pct_run(q, qf)) || !fragment.is_none_or(|f| pct_run(f, qf)) {
        return false;
    }
    let path = if let Some(after) = s.strip_prefix(b"//") {
        let end = after.iter().position(|&b| b == b'/').unwrap_or(after.len());
        if !authority(&after[..end]) {
            return false;
        }
        &after[end..]
    } else {
        if relative {
            // path-noscheme: the first segment has no colon.
            let first = s.split(|&b| b == b'/').next().unwrap_or(&[]);
            if first.contains(&b':') {
                return false;
            }
        }
        s
    };
    pct_run(path, |b| pchar(b) || b == b'/')
}

fn scheme_end(s: &[u8]) -> Option<usize> {
    let i = s.iter().position(|&b| b == b':')?;
    let scheme = &s[..i];
    (!scheme.is_empty() && scheme[0].is_ascii_alphabetic() && scheme.iter().all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'))).then_some(i)
}

/// RFC 3986 URI (with a scheme).
pub(crate) fn uri(s: &[u8]) -> bool {
    match scheme_end(s) {
        Some(i) => rest_of_uri(&s[i + 1..], false),
        None => false,
    }
}

/// RFC 3986 URI-reference: a URI or a relative reference.
pub(crate) fn uri_reference(s: &[u8]) -> bool {
    uri(s) || rest_of_uri(s, true)
}

#[cfg(test)]
mod tests;
