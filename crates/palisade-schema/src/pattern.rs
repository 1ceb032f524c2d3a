//! ECMA-262 regular expressions (the dialect of `pattern` and `patternProperties`) on top of
//! the `regex` crate. The translation keeps ECMA's ASCII meaning of `\d`, `\w` (and their
//! negations) and `\b`; everything else is passed through. What Rust's regex cannot express
//! (lookaround, backreferences) fails to compile and is reported by the caller as a warning:
//! such a pattern is not enforced.

use regex::bytes::{Regex, RegexBuilder};

/// Translate an ECMA-262 pattern to Rust regex syntax.
pub(crate) fn translate(src: &str) -> String {
    let mut out = String::with_capacity(src.len() + 8);
    let mut chars = src.chars().peekable();
    let mut in_class = false;
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                let Some(e) = chars.next() else {
                    out.push('\\');
                    break;
                };
                match (e, in_class) {
                    ('d', false) => out.push_str("[0-9]"),
                    ('d', true) => out.push_str("0-9"),
                    ('D', false) => out.push_str("[^0-9]"),
                    ('w', false) => out.push_str("[0-9A-Za-z_]"),
                    ('w', true) => out.push_str("0-9A-Za-z_"),
                    ('W', false) => out.push_str("[^0-9A-Za-z_]"),
                    ('b', false) => out.push_str("(?-u:\\b)"),
                    ('B', false) => out.push_str("(?-u:\\B)"),
                    // ECMA \cX control escapes.
                    ('c', _) if chars.peek().is_some_and(|x| x.is_ascii_alphabetic()) => {
                        let x = chars.next().unwrap();
                        out.push_str(&format!("\\x{:02X}", (x as u8) % 32));
                    }
                    // `\/` and other identity escapes of punctuation are fine in Rust.
                    _ => {
                        out.push('\\');
                        out.push(e);
                    }
                }
            }
            '[' if !in_class => {
                in_class = true;
                out.push('[');
                // A leading `]` or `^]` in ECMA is an empty class; leave it to the compiler.
                if chars.peek() == Some(&'^') {
                    out.push(chars.next().unwrap());
                }
            }
            ']' if in_class => {
                in_class = false;
                out.push(']');
            }
            // Rust treats these as set operators inside classes; ECMA takes them literally.
            '[' | '&' | '~' | '-' if in_class && c != '-' => {
                out.push('\\');
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out
}

/// Compile an ECMA-262 pattern for unanchored search over UTF-8 bytes.
pub(crate) fn compile(src: &str) -> Result<Regex, String> {
    let translated = translate(src);
    RegexBuilder::new(&translated).size_limit(1 << 20).dfa_size_limit(1 << 20).build().map_err(|e| {
        let msg = e.to_string();
        let last = msg.lines().rfind(|l| !l.trim().is_empty()).unwrap_or("").trim().to_string();
        if src.contains("(?=") || src.contains("(?!") || src.contains("(?<=") || src.contains("(?<!") {
            "lookaround is not supported".to_string()
        } else if last.is_empty() {
            msg
        } else {
            last
        }
    })
}

/// A compiled pattern: the regex, and a byte-table matcher when the pattern is a simple
/// anchored sequence (`^[a-z0-9-]*$`, `^SKU-[0-9]{5}$`), which answers without the regex engine.
#[derive(Clone, Debug)]
pub(crate) struct Pattern {
    re: Regex,
    simple: Option<Simple>,
}

impl Pattern {
    pub fn new(src: &str) -> Result<Pattern, String> {
        Ok(Pattern { re: compile(src)?, simple: Simple::parse(src) })
    }

    #[inline]
    pub fn is_match(&self, s: &[u8]) -> bool {
        match &self.simple {
            Some(m) => m.is_match(s),
            None => self.re.is_match(s),
        }
    }

    /// The translated pattern (as given to the regex engine).
    pub fn as_str(&self) -> &str {
        self.re.as_str()
    }
}

/// One element of a simple pattern: a set of ASCII bytes repeated `min..=max` times.
#[derive(Clone, Debug)]
struct Atom {
    set: [u64; 2],
    /// `set` as a byte table (one load per input byte when matching).
    table: [bool; 256],
    min: u32,
    max: u32,
}

/// `^atom...atom$` where each atom is an ASCII character, an ASCII class (`[a-z_]`, `\d`,
/// `\w`) or an escaped ASCII punctuation character, with an optional greedy quantifier; and
/// where no repeated atom shares a byte with any atom after it, so that greedy matching is
/// the only way to match (no backtracking needed: it decides exactly what the regex decides).
#[derive(Clone, Debug)]
pub(crate) struct Simple {
    atoms: Vec<Atom>,
}

const META: &[u8] = b"\\.^$|?*+()[]{}";

impl Simple {
    pub fn parse(src: &str) -> Option<Simple> {
        let b = src.as_bytes();
        if b.len() < 2 || b[0] != b'^' || b[b.len() - 1] != b'$' || !b.is_ascii() {
            return None;
        }
        let body = &b[1..b.len() - 1];
        // A trailing `\$` is an escaped dollar, not the anchor.
        let backslashes = body.iter().rev().take_while(|&&c| c == b'\\').count();
        if backslashes % 2 == 1 {
            return None;
        }
        let mut atoms: Vec<Atom> = Vec::new();
        let mut i = 0;
        while i < body.len() {
            let mut set = [0u64; 2];
            let add = |set: &mut [u64; 2], lo: u8, hi: u8| {
                for c in lo..=hi {
                    set[(c >> 6) as usize] |= 1 << (c & 63);
                }
            };
            // A class escape (`\d`, `\w`) or an escaped punctuation character.
            let escape = |set: &mut [u64; 2], e: u8| -> Option<()> {
                match e {
                    b'd' => add(set, b'0', b'9'),
                    b'w' => {
                        add(set, b'0', b'9');
                        add(set, b'a', b'z');
                        add(set, b'A', b'Z');
                        add(set, b'_', b'_');
                    }
                    c if c.is_ascii_punctuation() => add(set, c, c),
                    _ => return None,
                }
                Some(())
            };
            match body[i] {
                b'\\' => {
                    escape(&mut set, *body.get(i + 1)?)?;
                    i += 2;
                }
                b'[' => {
                    i += 1;
                    if matches!(body.get(i), Some(b'^' | b']')) {
                        return None;
                    }
                    loop {
                        let c = *body.get(i)?;
                        match c {
                            b']' => {
                                i += 1;
                                break;
                            }
                            b'\\' => {
                                escape(&mut set, *body.get(i + 1)?)?;
                                i += 2;
                            }
                            // Characters that the translation or the regex syntax treat specially,
                            // and a `-` that is neither first nor last.
                            b'[' | b'&' | b'~' => return None,
                            b'-' if body[i - 1] != b'[' && body.get(i + 1) != Some(&b']') => return None,
                            _ => {
                                if body.get(i + 1) == Some(&b'-') && body.get(i + 2).is_some_and(|&h| h != b']') {
                                    let h = body[i + 2];
                                    if h == b'\\' || h == b'[' || h < c {
                                        return None;
                                    }
                                    add(&mut set, c, h);
                                    i += 3;
                                } else {
                                    add(&mut set, c, c);
                                    i += 1;
                                }
                            }
                        }
                    }
                }
                c if (0x20..0x7F).contains(&c) && !META.contains(&c) => {
                    add(&mut set, c, c);
                    i += 1;
                }
                _ => return None,
            }
            let (min, max, len) = match body.get(i) {
                Some(b'?') => (0, 1, 1),
                Some(b'*') => (0, u32::MAX, 1),
                Some(b'+') => (1, u32::MAX, 1),
                Some(b'{') => {
                    let close = i + body[i..].iter().position(|&c| c == b'}')?;
                    let inner = std::str::from_utf8(&body[i + 1..close]).ok()?;
                    let num = |t: &str| -> Option<u32> {
                        if t.is_empty() || t.len() > 6 || !t.bytes().all(|c| c.is_ascii_digit()) {
                            None
                        } else {
                            t.parse().ok()
                        }
                    };
                    let (lo, hi) = match inner.split_once(',') {
                        None => (num(inner)?, num(inner)?),
                        Some((a, "")) => (num(a)?, u32::MAX),
                        Some((a, b)) => (num(a)?, num(b)?),
                    };
                    if lo > hi {
                        return None;
                    }
                    (lo, hi, close + 1 - i)
                }
                _ => (1, 1, 0),
            };
            i += len;
            // Lazy or stacked quantifiers are not simple.
            if matches!(body.get(i), Some(b'?' | b'*' | b'+' | b'{')) {
                return None;
            }
            if set == [0, 0] {
                return None;
            }
            let table = std::array::from_fn(|b| b < 128 && set[b >> 6] & (1 << (b & 63)) != 0);
            atoms.push(Atom { set, table, min, max });
        }
        // Greedy is exact only when a repeated atom cannot give bytes to a later one.
        for (k, a) in atoms.iter().enumerate() {
            if a.min != a.max && atoms[k + 1..].iter().any(|b| a.set[0] & b.set[0] != 0 || a.set[1] & b.set[1] != 0) {
                return None;
            }
        }
        Some(Simple { atoms })
    }

    #[inline]
    pub fn is_match(&self, s: &[u8]) -> bool {
        let mut i = 0;
        for a in &self.atoms {
            let rest = &s[i..];
            let window = &rest[..rest.len().min(a.max as usize)];
            let n = run_len(&a.table, window);
            if n < a.min as usize {
                return false;
            }
            i += n;
        }
        i == s.len()
    }
}

/// The length of the longest prefix of `w` whose bytes are all in `table`. Eight bytes at a
/// time without a branch per byte, then byte by byte from the first chunk that leaves the set.
#[inline(always)]
fn run_len(table: &[bool; 256], w: &[u8]) -> usize {
    let mut i = 0;
    for c in w.chunks_exact(8) {
        if !c.iter().fold(true, |all, &b| all & table[b as usize]) {
            break;
        }
        i += 8;
    }
    let rest = &w[i..];
    i + rest.iter().position(|&b| !table[b as usize]).unwrap_or(rest.len())
}

#[cfg(test)]
mod tests;
