//! LDAP filter injection, by an LDAP filter tokenizer (RFC 4515).
//!
//! Tokens: `(`, `)`, `&`, `|`, `!`, attribute names, comparison operators (`=`, `~=`, `>=`,
//! `<=`), values with `*` wildcards and the NUL byte. Injected input closes the
//! application's filter and opens a new one: a `)` followed by `(`, or a wildcard value and
//! a `(|`/`(&` group with `attr=` comparisons. Balanced, complete filters (`(cn=John)`) alone
//! are not reported: only structure that breaks out of a value is.

use crate::other_util::{best, gate, mk, step, views};
use crate::{Category, Detector, Gate, Hit, Input, Level};

const NAME: &str = "ldap";

pub struct LdapDetector;

pub fn detector() -> Box<dyn Detector> {
    Box::new(LdapDetector)
}

/// The pre-filter declared to the engine ([`Gate`]), from what [`analyse`] reports: every
/// finding but a probe needs a wildcard `*` (a wildcard comparison, a wildcard value closing
/// the filter) or a breakout, a `)` with a `(` after it (`x)(uid=*`); a NUL byte (a control
/// byte, which opens every gate) truncates; a probe is a value of one to four
/// metacharacters ([`metacharacter_probe`]); `%` may encode any of them (the analysis reads
/// one more percent-decoded view). A parenthesised aside in prose (`External (Metabase
/// level) linkages`, `DATEPART()`), an `&` of an HTML entity (`don&rsquo;t`), `=`, `!`, `|`
/// in a sentence open nothing.
const GATE: Gate = Gate { bytes: "*%", anchors: &[], words: &[], test: Some(gate_test), test_bytes: "()&|!", test_only: "" };

/// [`GATE`]'s structural test: a `(` after a `)`, or the shape of [`metacharacter_probe`].
fn gate_test(s: &str) -> bool {
    let b = s.as_bytes();
    memchr::memchr(b')', b).is_some_and(|i| memchr::memchr(b'(', &b[i..]).is_some()) || {
        let t = s.trim().as_bytes();
        !t.is_empty() && t.len() <= 4 && t.iter().all(|c| matches!(c, b'*' | b'(' | b')' | b'&' | b'|' | b'!'))
    }
}

impl Detector for LdapDetector {
    fn name(&self) -> &'static str {
        NAME
    }

    fn gate(&self) -> Option<Gate> {
        Some(GATE)
    }

    /// In the product-token shape ([`crate::shape`]) there is no `*`, `=`, `&`, `|`, `!` or
    /// `%`: no wildcard, comparison or boolean group, so a `)` then `(` between comments
    /// (`(X11; Linux) (KHTML, like Gecko)`) opens no filter with content, and the value starts
    /// with a product name, not a metacharacter. Nothing the analysis reports remains.
    fn product_token_gate(&self) -> Option<fn(&str) -> bool> {
        Some(|_| false)
    }

    fn check(&self, input: &Input<'_>, level: Level) -> Option<Hit> {
        let mut h = None;
        for v in views(input.decoded).iter().filter(|v| !v.is_empty()) {
            h = best(h, analyse(v));
        }
        gate(h, level)
    }

    /// Free text sits in the value of an assertion (`(cn=*TEXT*)`): it leaves the
    /// application's filter only by closing it, a `)` before any `(` (`*)(uid=*))(|(uid=*`).
    /// A filter written in a phrase (`ldap filter (&(uid=*)) syntax`) opens a parenthesis
    /// inside the value first, which makes the application's filter invalid, not wider.
    /// Metacharacters alone (`*()|&'`, no letter or digit) are a probe wherever they are.
    fn in_free_text(&self, input: &Input<'_>, hit: Hit, _level: Level) -> Option<Hit> {
        let d = input.decoded;
        let closes = d.bytes().find(|&b| b == b'(' || b == b')') == Some(b')');
        let probe = !d.chars().any(char::is_alphanumeric);
        (closes || probe).then_some(hit)
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum T {
    Open,
    Close,
    Bool,
    Cmp,
    Attr,
    Star,
    Nul,
    Other,
    /// Letters or digits that are not an attribute name (a value, prose).
    Word,
}

/// The filter tokens of `s`, one at a time: no allocation, each byte read once.
struct Lexer<'a> {
    b: &'a [u8],
    i: usize,
}

/// ASCII letters and digits, `-`, `;` and `.`: the bytes of a word of the [`Lexer`], by byte
/// (256 bytes; `tests::word_table_is_the_comparisons`).
static WORD_BYTES: [bool; 256] = crate::other_util::alnum_and(b"-;.");

/// A byte of a word ([`WORD_BYTES`]): one load instead of five comparisons per byte of prose.
#[inline]
fn word_byte(c: u8) -> bool {
    WORD_BYTES[c as usize]
}

impl Iterator for Lexer<'_> {
    type Item = T;

    fn next(&mut self) -> Option<T> {
        let b = self.b;
        while self.i < b.len() {
            step(1);
            let i = self.i;
            let c = b[i];
            self.i += 1;
            return Some(match c {
                b'(' => T::Open,
                b')' => T::Close,
                b'&' | b'|' | b'!' => T::Bool,
                b'*' => T::Star,
                0 => T::Nul,
                b'=' => T::Cmp,
                b'~' | b'>' | b'<' if b.get(i + 1) == Some(&b'=') => {
                    self.i += 1;
                    T::Cmp
                }
                c if c.is_ascii_alphanumeric() => {
                    let mut j = i;
                    while j < b.len() && word_byte(b[j]) {
                        step(1);
                        j += 1;
                    }
                    let is_attr =
                        c.is_ascii_alphabetic() && b.get(j).is_some_and(|&n| n == b'=' || (matches!(n, b'~' | b'>' | b'<') && b.get(j + 1) == Some(&b'=')));
                    self.i = j;
                    if is_attr {
                        T::Attr
                    } else {
                        T::Word
                    }
                }
                b' ' => continue,
                _ => T::Other,
            });
        }
        None
    }
}

/// What one pass over the tokens saw.
#[derive(Default)]
struct Shape {
    /// `)(` or `))(`: the application's filter closed and a new one opened.
    breakouts: u32,
    /// `(|(`, `(&(`, `(!(`: a boolean group of filters.
    groups: u32,
    /// `attr=*`: a presence (wildcard) comparison.
    wild_cmp: u32,
    /// `attr=`, `attr>=`...: a comparison.
    cmps: u32,
    /// Comparisons and groups after the first breakout: the filter the value opened has
    /// content (`x)(uid=*`), where a stack trace's `(<anonymous>) (file:1:2)` has none.
    after_breakout: u32,
    /// `*))`: a wildcard value then two closing parentheses.
    star_close_close: bool,
    /// `(&)`, `(|)`: the absolute TRUE and FALSE filters.
    absolute: bool,
    first: Option<T>,
    /// The first token that is not punctuation or a word is `*`.
    starts_wild: bool,
    stars: bool,
    closes: bool,
    opens: bool,
    bools: bool,
    nul: bool,
    words: bool,
    depth: i64,
    min_depth: i64,
    /// The last `)` brought the depth to the value's start level or below.
    top_close: bool,
}

fn shape(s: &str) -> Shape {
    let mut sh = Shape::default();
    let (mut p1, mut p2) = (None::<T>, None::<T>);
    let mut decided_start = false;
    for t in (Lexer { b: s.as_bytes(), i: 0 }) {
        if sh.first.is_none() {
            sh.first = Some(t);
        }
        if !decided_start && !matches!(t, T::Other | T::Word) {
            decided_start = true;
            sh.starts_wild = t == T::Star;
        }
        match t {
            T::Open => {
                sh.opens = true;
                sh.depth += 1;
                if p1 == Some(T::Close) && sh.top_close {
                    sh.breakouts += 1;
                }
                if p1 == Some(T::Bool) && p2 == Some(T::Open) {
                    sh.groups += 1;
                    sh.after_breakout += u32::from(sh.breakouts > 0);
                }
            }
            T::Close => {
                sh.closes = true;
                sh.depth -= 1;
                sh.min_depth = sh.min_depth.min(sh.depth);
                // Inside a group the value opened itself (`(&(a=1)(b=2))`), `)(` separates its
                // operands; at or above the value's own level it ends the application's filter.
                sh.top_close = sh.depth <= 0;
                if p1 == Some(T::Close) && p2 == Some(T::Star) {
                    sh.star_close_close = true;
                }
                if p1 == Some(T::Bool) && p2 == Some(T::Open) {
                    sh.absolute = true;
                }
            }
            T::Cmp if p1 == Some(T::Attr) => {
                sh.cmps += 1;
                sh.after_breakout += u32::from(sh.breakouts > 0);
            }
            T::Star => {
                sh.stars = true;
                if p1 == Some(T::Cmp) && p2 == Some(T::Attr) {
                    sh.wild_cmp += 1;
                }
            }
            T::Bool => sh.bools = true,
            T::Nul => sh.nul = true,
            T::Word | T::Attr => sh.words = true,
            _ => {}
        }
        p2 = p1;
        p1 = Some(t);
    }
    sh
}

/// A value that is nothing but one to four LDAP filter metacharacters, at least one of them
/// structural (`(`, `)`, `&`, `|`, `!`): `)`, `(`, `*|`, `|`. Pasted into a filter unescaped
/// such a value makes it unbalanced (an error page) or changes its operators: these are the
/// probes that test for LDAP injection, and carry nothing a person types as a search or a
/// name. A lone `*` (a wildcard in any search box), `**` or `!!` are not probes. Strict level
/// only (45): a lone `&` or `|` is also a delimiter someone may choose in a settings form.
fn metacharacter_probe(s: &str) -> Option<Hit> {
    let t = s.trim();
    let b = t.as_bytes();
    if b.is_empty() || b.len() > 4 || !b.iter().all(|c| matches!(c, b'*' | b'(' | b')' | b'&' | b'|' | b'!')) {
        return None;
    }
    // `(*)` is a footnote marker.
    if b.iter().all(|&c| c == b'*') || (b.len() > 1 && b.iter().all(|&c| c == b'!')) || (b.len() > 2 && b[0] == b'(' && b[b.len() - 1] == b')') {
        return None;
    }
    Some(mk(NAME, Category::Ldap, 45, t, "LDAP filter metacharacters alone (injection probe)"))
}

/// Whether the value (blanks aside) is one parenthesised filter: it begins with `(` and ends
/// with `)`.
fn whole_filter(s: &str) -> bool {
    let t = s.trim();
    t.starts_with('(') && t.ends_with(')')
}

fn analyse(s: &str) -> Option<Hit> {
    // A byte search (`str::contains` with a char set walks the characters one by one).
    if memchr::memchr2(b'(', b')', s.as_bytes()).is_none() {
        return metacharacter_probe(s);
    }
    let sh = shape(s);
    let mut out = None;
    let unbalanced = sh.min_depth < 0 || sh.depth != 0;
    let mut put = |c: u8, why: &'static str| out = best(out.take(), Some(mk(NAME, Category::Ldap, c, s, why)));
    if sh.breakouts > 0 && sh.after_breakout > 0 {
        put(90, "LDAP filter breakout `)(` with a new comparison");
    }
    if sh.groups > 0 && sh.wild_cmp > 0 {
        // A balanced filter is an injection only as the whole value (an application that
        // takes a filter); with words around it (`ldap filter (&(uid=*)) syntax`) it is in no
        // filter at all: a parenthesis inside an assertion value is a syntax error.
        let whole = whole_filter(s);
        put(
            if unbalanced || sh.starts_wild {
                90
            } else if whole {
                65
            } else {
                45
            },
            "LDAP OR/AND group with wildcard comparison",
        );
    }
    if unbalanced && sh.stars && sh.closes && (sh.cmps > 0 || sh.groups > 0 || sh.nul) {
        put(85, "wildcard value closing the LDAP filter");
    }
    if unbalanced && sh.star_close_close {
        put(75, "wildcard then `))` closing the LDAP filter");
    }
    if unbalanced && sh.nul && sh.closes {
        put(70, "NUL byte truncating an LDAP filter");
    }
    if sh.breakouts > 0 && sh.absolute {
        put(90, "LDAP filter breakout into an absolute TRUE/FALSE filter");
    }
    if sh.breakouts > 0 && sh.first == Some(T::Star) {
        put(80, "wildcard then filter breakout");
    }
    if !sh.words && sh.stars && sh.opens && sh.closes && sh.bools && s.len() <= 64 {
        // `*()|&'`: nothing but filter metacharacters, every kind of them: a probe for
        // unescaped filter syntax.
        put(60, "LDAP filter metacharacter probe");
    }
    out.or_else(|| metacharacter_probe(s))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::other_util::take_steps;
    use crate::FieldKind;

    /// [`WORD_BYTES`] says of every byte what the comparisons said.
    #[test]
    fn word_table_is_the_comparisons() {
        for c in 0..=255u8 {
            assert_eq!(word_byte(c), c.is_ascii_alphanumeric() || c == b'-' || c == b';' || c == b'.', "{c}");
        }
    }

    fn q(v: &str) -> u8 {
        detector().check(&Input { raw: v, decoded: v, field: FieldKind::QueryValue }, Level::Strict).map_or(0, |h| h.confidence)
    }

    #[test]
    fn attacks() {
        for v in [
            "*)(uid=*))(|(uid=*",
            ")(cn=*",
            "admin*)((|userPassword=*)",
            "*(|(objectclass=*))",
            "*))\0",
            "admin)(&)",
            "x*)(|(mail=*))",
            "%2A%28%7C%28mail%3D%2A%29%29",
            "*)(&",
            // Written for this detector, not taken from a corpus.
            "jdoe)(|(objectClass=*",
            "x*)(!(memberOf=cn=admins",
            "*))(|(sn=*",
            "bob)(&(uid=*)(userPassword=*))",
            "*()|&'",
            "*)(|(cn>=a",
            "guest)(mail~=*",
            "alice))\0",
        ] {
            assert!(q(v) >= 60, "{v}: {}", q(v));
        }
    }

    #[test]
    fn a_filter_inside_a_sentence_is_a_probe() {
        let c = |v: &str| analyse(v).map_or(0, |h| h.confidence);
        for v in ["ldap filter (&(uid=*)) syntax", "what does (|(cn=*)) match", "ldap filter (&(uid=*))"] {
            assert_eq!(c(v), 45, "{v}");
        }
        for v in ["(&(uid=*))", " (|(cn=*)(mail=*)) ", "*)(|(uid=*))(|(uid=*", "x)(|(cn=*))"] {
            assert!(c(v) >= 60, "{v}: {}", c(v));
        }
    }

    #[test]
    fn benign() {
        for v in [
            "John (Johnny) Smith",
            "(555) 123-4567",
            "a = b (see note)",
            "smile :)",
            "f(x) = y*(z)",
            "cn",
            "(cn=John)",
            "*",
            "2*(3+4)",
            "price (with tax)*",
            "Tom & Jerry (1940)",
            "rating: 5* (excellent!)",
            "x = (a | b) & !c",
            "(*) see footnote",
            "f(*args)",
            "SELECT count(*) FROM t",
            "a)b",
            "(&)",
            "filter: (&(cn=John)(sn=Smith))",
            "(|(mail=a@example.com)(mail=b@example.com))",
            // A stack trace after a message with a comparison: the groups after the `)(` hold
            // none (written for the rule that the new filter must have content).
            "see decoder.html?invariant=418\n    at Array.forEach (<anonymous>) (<anonymous>:1047:138)",
            "a=1 (x) (y)",
        ] {
            assert!(q(v) < 60, "{v}: {}", q(v));
        }
    }

    #[test]
    fn lone_metacharacters_are_a_strict_probe() {
        let balanced = |v: &str| detector().check(&Input { raw: v, decoded: v, field: FieldKind::QueryValue }, Level::Balanced);
        for v in [")", "(", "*|", "|", "&", "!", "()", ")(", "*)", " | ", "%29", "%2A%7C"] {
            assert_eq!(q(v), 45, "{v}");
            assert!(balanced(v).is_none(), "{v}");
        }
        for v in ["*", "**", "!!", "!!!", ":)", "(555)", "a|b", "R&D", "|||||", "(a)", "(*)", "* ", "*/*", "//*", "admin*"] {
            assert_eq!(q(v), 0, "{v}");
        }
    }

    #[test]
    fn linear() {
        for unit in [")(", "(|(a=*", "*))", "a", "(", ")", "*()|&"] {
            let v = unit.repeat(1_000_000 / unit.len());
            take_steps();
            let _ = detector().check(&Input { raw: &v, decoded: &v, field: FieldKind::QueryValue }, Level::Strict);
            assert!(take_steps() < 80 * v.len() as u64, "{unit}");
        }
    }
}
