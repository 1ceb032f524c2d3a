//! Internationalized domain names for the `hostname` and `idn-hostname` formats: Punycode
//! (RFC 3492) and the IDNA2008 rules on U-labels that need no Unicode database beyond a few
//! ranges (RFC 5891 §4.2.3, RFC 5892 appendix A contextual rules and its DISALLOWED
//! exceptions). Not checked: the full derived-property table and the Bidi rule (RFC 5893).

const BASE: u32 = 36;
const TMIN: u32 = 1;
const TMAX: u32 = 26;
const SKEW: u32 = 38;
const DAMP: u32 = 700;
const INITIAL_BIAS: u32 = 72;
const INITIAL_N: u32 = 128;

fn adapt(mut delta: u32, points: u32, first: bool) -> u32 {
    delta /= if first { DAMP } else { 2 };
    delta += delta / points;
    let mut k = 0;
    while delta > ((BASE - TMIN) * TMAX) / 2 {
        delta /= BASE - TMIN;
        k += BASE;
    }
    k + (BASE - TMIN + 1) * delta / (delta + SKEW)
}

fn digit_value(b: u8) -> Option<u32> {
    match b {
        b'a'..=b'z' => Some((b - b'a') as u32),
        b'A'..=b'Z' => Some((b - b'A') as u32),
        b'0'..=b'9' => Some((b - b'0') as u32 + 26),
        _ => None,
    }
}

fn digit_char(d: u32) -> char {
    (if d < 26 { b'a' + d as u8 } else { b'0' + (d - 26) as u8 }) as char
}

/// Decode the part of an A-label after `xn--`; `None` when it is not valid Punycode.
pub(crate) fn punycode_decode(input: &[u8]) -> Option<Vec<char>> {
    let (basic, rest) = match input.iter().rposition(|&b| b == b'-') {
        Some(i) => (&input[..i], &input[i + 1..]),
        None => (&input[..0], input),
    };
    if !basic.is_ascii() {
        return None;
    }
    let mut out: Vec<char> = basic.iter().map(|&b| b as char).collect();
    let (mut n, mut i, mut bias) = (INITIAL_N, 0u32, INITIAL_BIAS);
    let mut p = 0;
    while p < rest.len() {
        let old_i = i;
        let mut w = 1u32;
        let mut k = BASE;
        loop {
            let d = digit_value(*rest.get(p)?)?;
            p += 1;
            i = i.checked_add(d.checked_mul(w)?)?;
            let t = if k <= bias {
                TMIN
            } else if k >= bias + TMAX {
                TMAX
            } else {
                k - bias
            };
            if d < t {
                break;
            }
            w = w.checked_mul(BASE - t)?;
            k += BASE;
        }
        let len = out.len() as u32 + 1;
        bias = adapt(i - old_i, len, old_i == 0);
        n = n.checked_add(i / len)?;
        i %= len;
        out.insert(i as usize, char::from_u32(n)?);
        i += 1;
    }
    Some(out)
}

/// Encode a label as Punycode (without `xn--`); `None` on overflow.
pub(crate) fn punycode_encode(input: &[char]) -> Option<String> {
    let mut out: String = input.iter().filter(|c| c.is_ascii()).collect();
    let basic = out.len() as u32;
    let mut h = basic;
    if basic > 0 {
        out.push('-');
    }
    let (mut n, mut delta, mut bias) = (INITIAL_N, 0u32, INITIAL_BIAS);
    while (h as usize) < input.len() {
        let m = input.iter().map(|&c| c as u32).filter(|&c| c >= n).min()?;
        delta = delta.checked_add((m - n).checked_mul(h + 1)?)?;
        n = m;
        for &c in input {
            let c = c as u32;
            if c < n {
                delta = delta.checked_add(1)?;
            }
            if c == n {
                let mut q = delta;
                let mut k = BASE;
                loop {
                    let t = if k <= bias {
                        TMIN
                    } else if k >= bias + TMAX {
                        TMAX
                    } else {
                        k - bias
                    };
                    if q < t {
                        break;
                    }
                    out.push(digit_char(t + (q - t) % (BASE - t)));
                    q = (q - t) / (BASE - t);
                    k += BASE;
                }
                out.push(digit_char(q));
                bias = adapt(delta, h + 1, h == basic);
                delta = 0;
                h += 1;
            }
        }
        delta += 1;
        n += 1;
    }
    Some(out)
}

/// General category M (combining marks) for the blocks where they occur.
fn is_mark(c: char) -> bool {
    matches!(c as u32,
        0x0300..=0x036F | 0x0483..=0x0489 | 0x0591..=0x05BD | 0x05BF | 0x05C1..=0x05C2 | 0x05C4..=0x05C5 | 0x05C7
        | 0x0610..=0x061A | 0x064B..=0x065F | 0x0670 | 0x06D6..=0x06DC | 0x06DF..=0x06E4 | 0x06E7..=0x06E8 | 0x06EA..=0x06ED
        | 0x0900..=0x0903 | 0x093A..=0x094F | 0x0951..=0x0957 | 0x0962..=0x0963 | 0x0981..=0x0983 | 0x09BC..=0x09D7
        | 0x0A01..=0x0A03 | 0x0A3C..=0x0A51 | 0x0A81..=0x0A83 | 0x0ABC..=0x0ACD | 0x0B01..=0x0B03 | 0x0B3C..=0x0B57
        | 0x0BBE..=0x0BCD | 0x0C00..=0x0C04 | 0x0C3E..=0x0C56 | 0x0D00..=0x0D03 | 0x0D3E..=0x0D4D | 0x0E31 | 0x0E34..=0x0E3A
        | 0x0E47..=0x0E4E | 0x1AB0..=0x1AFF | 0x1DC0..=0x1DFF | 0x20D0..=0x20FF | 0x302A..=0x302F | 0x3099..=0x309A
        | 0xFE00..=0xFE0F | 0xFE20..=0xFE2F)
}

/// Virama (canonical combining class 9) of the Indic scripts and others.
fn is_virama(c: char) -> bool {
    matches!(
        c as u32,
        0x094D
            | 0x09CD
            | 0x0A4D
            | 0x0ACD
            | 0x0B4D
            | 0x0BCD
            | 0x0C4D
            | 0x0CCD
            | 0x0D3B
            | 0x0D3C
            | 0x0D4D
            | 0x0DCA
            | 0x0E3A
            | 0x0EBA
            | 0x0F84
            | 0x1039
            | 0x103A
            | 0x1714
            | 0x1715
            | 0x1734
            | 0x17D2
            | 0x1A60
            | 0x1B44
            | 0x1BAA
            | 0x1BAB
            | 0x1BF2
            | 0x1BF3
            | 0x2D7F
            | 0xA806
            | 0xA8C4
            | 0xA953
            | 0xA9C0
            | 0xAAF6
            | 0xABED
    )
}

fn is_greek(c: char) -> bool {
    matches!(c as u32, 0x0370..=0x03FF | 0x1F00..=0x1FFF) && c != '\u{0375}'
}

fn is_hebrew(c: char) -> bool {
    matches!(c as u32, 0x0590..=0x05FF)
}

fn is_hira_kata_han(c: char) -> bool {
    c != '\u{30FB}'
        && matches!(c as u32, 0x3040..=0x309F | 0x30A0..=0x30FF | 0x31F0..=0x31FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0x20000..=0x2FA1F)
}

/// RFC 5891 §4.2.3 and RFC 5892 on a U-label: not empty, no hyphens in places 3-4 or at
/// either end, no leading combining mark, no DISALLOWED exceptions, the CONTEXTJ and
/// CONTEXTO rules, and letters, digits, hyphens or non-ASCII characters only.
pub(crate) fn u_label_ok(label: &[char]) -> bool {
    let Some((&first, _)) = label.split_first() else { return false };
    let last = label[label.len() - 1];
    if first == '-' || last == '-' || (label.len() >= 4 && label[2] == '-' && label[3] == '-') || is_mark(first) {
        return false;
    }
    let arabic_indic = label.iter().any(|c| ('\u{0660}'..='\u{0669}').contains(c));
    let extended = label.iter().any(|c| ('\u{06F0}'..='\u{06F9}').contains(c));
    if arabic_indic && extended {
        return false;
    }
    for (i, &c) in label.iter().enumerate() {
        let prev = i.checked_sub(1).map(|j| label[j]);
        let next = label.get(i + 1).copied();
        let ok = match c {
            c if c.is_ascii() => c.is_ascii_alphanumeric() || c == '-',
            // DISALLOWED exceptions (RFC 5892 §2.6)
            '\u{0640}' | '\u{07FA}' | '\u{302E}' | '\u{302F}' | '\u{3031}'..='\u{3035}' | '\u{303B}' => false,
            '\u{00B7}' => prev == Some('l') && next == Some('l'),
            '\u{0375}' => next.is_some_and(is_greek),
            '\u{05F3}' | '\u{05F4}' => prev.is_some_and(is_hebrew),
            '\u{30FB}' => label.iter().any(|&x| is_hira_kata_han(x)),
            '\u{200C}' | '\u{200D}' => prev.is_some_and(is_virama),
            c => !c.is_whitespace() && !c.is_control(),
        };
        if !ok {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn punycode_round_trips_rfc_3492_samples() {
        // RFC 3492 §7.1 (L) and a German label
        let jp: Vec<char> = "3年B組金八先生".chars().collect();
        assert_eq!(punycode_encode(&jp).unwrap(), "3B-ww4c5e180e575a65lsy2b");
        assert_eq!(punycode_decode(b"3B-ww4c5e180e575a65lsy2b").unwrap(), jp);
        assert_eq!(punycode_decode(b"mnchen-3ya").unwrap().iter().collect::<String>(), "münchen");
        assert!(punycode_decode(b"a-b-c-9999999999").is_none());
        assert!(punycode_decode(b"\xff").is_none());
    }

    #[test]
    fn contextual_rules() {
        let ok = |s: &str| u_label_ok(&s.chars().collect::<Vec<_>>());
        assert!(ok("münchen"));
        assert!(ok("l·l") && !ok("a·l") && !ok("·l"));
        assert!(ok("α͵β") && ok("͵β") && !ok("a͵") && !ok("͵"));
        assert!(ok("א׳") && !ok("a׳"));
        assert!(ok("ア・") && !ok("a・"));
        assert!(!ok("٠۰") && ok("٠١"));
        assert!(ok("क्\u{200D}") && !ok("a\u{200D}"));
        assert!(!ok("\u{0300}a") && !ok("ab--c") && !ok("-ab") && !ok("a\u{302E}"));
    }
}
