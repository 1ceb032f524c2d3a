//! ECMA-262 regular expressions (the dialect of `pattern` and `patternProperties`) on top of
//! the `regex` crate. The translation keeps ECMA's ASCII meaning of `\d`, `\w` (and their
//! negations) and `\b`, and ECMA's `\s` (which includes U+FEFF); everything else is passed
//! through. A pattern that Rust's regex cannot express because it needs backtracking
//! (lookaround, backreferences) is run by `fancy-regex` with a budget of
//! [`BACKTRACK_LIMIT`] steps per match; a value that exhausts the budget does not match (fail
//! closed, with its own violation message).

use crate::{Error, ErrorKind};
use regex::bytes::{Regex, RegexBuilder};

/// Backtracking steps one match of a lookaround / backreference pattern may take.
pub(crate) const BACKTRACK_LIMIT: usize = 100_000;

/// ECMA-262 WhiteSpace and LineTerminator (`\s`), as the inside of a class.
const ECMA_SPACE: &str = "\\t\\n\\x0B\\x0C\\r \\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}\\x{FEFF}";

fn src_rest_is_negated_empty(chars: &std::iter::Peekable<std::str::Chars<'_>>) -> bool {
    let mut c = chars.clone();
    c.next() == Some('^') && c.next() == Some(']')
}

/// Translate an ECMA-262 pattern to Rust regex syntax.
pub(crate) fn translate(src: &str) -> String {
    translate_for(src, false)
}

/// `fancy`: for `fancy-regex`, whose syntax has no `(?-u:...)` groups.
fn translate_for(src: &str, fancy: bool) -> String {
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
                    ('b', false) if !fancy => out.push_str("(?-u:\\b)"),
                    ('B', false) if !fancy => out.push_str("(?-u:\\B)"),
                    ('s', false) => out.push_str(&format!("[{ECMA_SPACE}]")),
                    ('s', true) => out.push_str(ECMA_SPACE),
                    ('S', false) => out.push_str(&format!("[^{ECMA_SPACE}]")),
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
            // ECMA's empty class matches nothing, its negation anything.
            '[' if !in_class && chars.peek() == Some(&']') => {
                chars.next();
                out.push_str("[^\\x00-\\x{10FFFF}]");
            }
            '[' if !in_class && src_rest_is_negated_empty(&chars) => {
                chars.next();
                chars.next();
                out.push_str("(?s:.)");
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

/// Compile an ECMA-262 pattern for unanchored search over UTF-8 bytes. The message is the
/// regex engine's last line (what is wrong), or that lookaround is not supported.
pub(crate) fn compile(src: &str) -> Result<Regex, Error> {
    let translated = translate(src);
    RegexBuilder::new(&translated).size_limit(1 << 20).dfa_size_limit(1 << 20).build().map_err(|e| {
        let msg = e.to_string();
        let last = msg.lines().rfind(|l| !l.trim().is_empty()).unwrap_or("").trim().to_string();
        let message = if src.contains("(?=") || src.contains("(?!") || src.contains("(?<=") || src.contains("(?<!") {
            "lookaround is not supported".to_string()
        } else if last.is_empty() {
            msg
        } else {
            last
        };
        Error::caused_by(ErrorKind::Pattern, message, e)
    })
}

/// A compiled pattern: the regex (or the backtracking one), and a byte-table matcher when the
/// pattern is a simple anchored sequence (`^[a-z0-9-]*$`, `^SKU-[0-9]{5}$`), which answers
/// without the regex engine.
#[derive(Clone, Debug)]
pub(crate) struct Pattern {
    engine: Engine,
    simple: Option<Simple>,
}

#[derive(Clone, Debug)]
enum Engine {
    Plain(Regex),
    Backtracking(Box<fancy_regex::Regex>),
}

/// Whether a pattern has constructs that only a backtracking engine runs.
fn needs_backtracking(src: &str) -> bool {
    let b = src.as_bytes();
    src.contains("(?=")
        || src.contains("(?!")
        || src.contains("(?<=")
        || src.contains("(?<!")
        || b.windows(2).any(|w| w[0] == b'\\' && (w[1].is_ascii_digit() && w[1] != b'0' || w[1] == b'k'))
}

impl Pattern {
    pub fn new(src: &str) -> Result<Pattern, Error> {
        match compile(src) {
            Ok(re) => Ok(Pattern { engine: Engine::Plain(re), simple: Simple::parse(src) }),
            Err(e) if needs_backtracking(src) => {
                let re = fancy_regex::RegexBuilder::new(&translate_for(src, true))
                    .backtrack_limit(BACKTRACK_LIMIT)
                    .build()
                    .map_err(|f| Error::caused_by(ErrorKind::Pattern, format!("{e}; {f}"), f))?;
                Ok(Pattern { engine: Engine::Backtracking(Box::new(re)), simple: None })
            }
            Err(e) => Err(e),
        }
    }

    /// Whether the pattern needs the backtracking engine (and its budget).
    pub fn backtracking(&self) -> bool {
        matches!(self.engine, Engine::Backtracking(_))
    }

    /// `Some(matched)`, or `None` when the backtracking budget ran out.
    #[inline]
    pub fn check(&self, s: &[u8]) -> Option<bool> {
        match (&self.simple, &self.engine) {
            (Some(m), _) => Some(m.is_match(s)),
            (None, Engine::Plain(re)) => Some(re.is_match(s)),
            (None, Engine::Backtracking(re)) => re.is_match(String::from_utf8_lossy(s).as_ref()).ok(),
        }
    }

    /// [`Pattern::check`], failing closed: a value that exhausts the budget does not match.
    #[inline]
    pub fn is_match(&self, s: &[u8]) -> bool {
        self.check(s).unwrap_or(false)
    }

    /// The translated pattern (as given to the regex engine).
    pub fn as_str(&self) -> &str {
        match &self.engine {
            Engine::Plain(re) => re.as_str(),
            Engine::Backtracking(re) => re.as_str(),
        }
    }
}

/// The `regex` format: an ECMA-262 pattern Palisade can run, without the syntax of other
/// dialects (`(?P<name>`, `(?#comment)`, inline flags `(?i)`, escapes ECMA lacks like `\a`,
/// `\z`, `\A`).
pub(crate) fn is_ecma_regex(src: &str) -> bool {
    let b = src.as_bytes();
    let mut i = 0;
    let mut in_class = false;
    while i < b.len() {
        match b[i] {
            b'\\' => {
                let Some(&e) = b.get(i + 1) else { return false };
                if e.is_ascii_alphabetic() && !b"dDwWsSbBnrtfvcxukpP".contains(&e) {
                    return false;
                }
                i += 2;
                continue;
            }
            b'[' if !in_class => in_class = true,
            b']' if in_class => in_class = false,
            b'(' if !in_class && b.get(i + 1) == Some(&b'?') => {
                let ok = match b.get(i + 2) {
                    Some(b':' | b'=' | b'!') => true,
                    Some(b'<') => {
                        matches!(b.get(i + 3), Some(b'=' | b'!')) || b.get(i + 3).is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_' || *c == b'$')
                    }
                    _ => false,
                };
                if !ok {
                    return false;
                }
            }
            _ => {}
        }
        i += 1;
    }
    Pattern::new(src).is_ok()
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
