//! LDAP filter injection, by an LDAP filter tokenizer (RFC 4515).
//!
//! Tokens: `(`, `)`, `&`, `|`, `!`, attribute names, comparison operators (`=`, `~=`, `>=`,
//! `<=`), values with `*` wildcards and the NUL byte. Injected input closes the
//! application's filter and opens a new one: a `)` followed by `(`, or a wildcard value and
//! a `(|`/`(&` group with `attr=` comparisons. Balanced, complete filters (`(cn=John)`) alone
//! are not reported: only structure that breaks out of a value is.

use crate::other_util::{best, gate, mk, step, views};
use crate::{Category, Detector, Hit, Input, Level};

const NAME: &str = "ldap";

pub struct LdapDetector;

pub fn detector() -> Box<dyn Detector> {
    Box::new(LdapDetector)
}

impl Detector for LdapDetector {
    fn name(&self) -> &'static str {
        NAME
    }

    fn check(&self, input: &Input<'_>, level: Level) -> Option<Hit> {
        let mut h = None;
        for v in views(input.decoded).iter().filter(|v| !v.is_empty()) {
            h = best(h, analyse(v));
        }
        gate(h, level)
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
}

fn lex(s: &str) -> Vec<T> {
    let b = s.as_bytes();
    let mut v = Vec::new();
    let mut i = 0;
    while i < b.len() {
        step(1);
        let c = b[i];
        let t = match c {
            b'(' => T::Open,
            b')' => T::Close,
            b'&' | b'|' | b'!' => T::Bool,
            b'*' => T::Star,
            0 => T::Nul,
            b'=' => T::Cmp,
            b'~' | b'>' | b'<' if b.get(i + 1) == Some(&b'=') => {
                i += 1;
                T::Cmp
            }
            c if c.is_ascii_alphabetic() => {
                let mut j = i;
                while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'-' || b[j] == b';' || b[j] == b'.') {
                    j += 1;
                }
                let is_attr = b.get(j).is_some_and(|&n| n == b'=' || (matches!(n, b'~' | b'>' | b'<') && b.get(j + 1) == Some(&b'=')));
                i = j;
                v.push(if is_attr { T::Attr } else { T::Other });
                continue;
            }
            b' ' => {
                i += 1;
                continue;
            }
            _ => T::Other,
        };
        v.push(t);
        i += 1;
    }
    v
}

fn analyse(s: &str) -> Option<Hit> {
    if !s.contains(['(', ')']) {
        return None;
    }
    let toks = lex(s);
    let mut out = None;
    // `)(`: closes the application's filter and opens another; `(|(` / `(&(` groups with a
    // comparison; `attr=*` wildcard comparisons.
    let mut breakouts = 0u32;
    let mut groups = 0u32;
    let mut wild_cmp = 0u32;
    let mut cmps = 0u32;
    let mut depth: i32 = 0;
    let mut min_depth: i32 = 0;
    for (k, t) in toks.iter().enumerate() {
        step(1);
        match t {
            T::Open => depth += 1,
            T::Close => {
                depth -= 1;
                min_depth = min_depth.min(depth);
                if toks.get(k + 1) == Some(&T::Open) || toks.get(k + 1).is_some_and(|n| *n == T::Close) && toks.get(k + 2) == Some(&T::Open) {
                    breakouts += 1;
                }
            }
            T::Bool if k > 0 && toks[k - 1] == T::Open && toks.get(k + 1) == Some(&T::Open) => groups += 1,
            T::Cmp if k > 0 && toks[k - 1] == T::Attr => {
                cmps += 1;
                if toks.get(k + 1) == Some(&T::Star) {
                    wild_cmp += 1;
                }
            }
            _ => {}
        }
    }
    let starts_wild =
        toks.first() == Some(&T::Star) || toks.iter().take_while(|t| **t == T::Other).count() > 0 && toks.iter().find(|t| **t != T::Other) == Some(&T::Star);
    let unbalanced = min_depth < 0 || depth != 0;
    let mut put = |c: u8, why: &'static str| out = best(out.take(), Some(mk(NAME, Category::Ldap, c, s, why)));
    if breakouts > 0 && (cmps > 0 || groups > 0) {
        put(90, "LDAP filter breakout `)(` with a new comparison");
    }
    if groups > 0 && wild_cmp > 0 {
        put(if unbalanced || starts_wild { 90 } else { 65 }, "LDAP OR/AND group with wildcard comparison");
    }
    if unbalanced && (starts_wild || toks.contains(&T::Star)) && (toks.contains(&T::Close)) && (cmps > 0 || groups > 0 || toks.contains(&T::Nul)) {
        put(85, "wildcard value closing the LDAP filter");
    }
    if unbalanced && toks.contains(&T::Star) && toks.windows(3).any(|w| w == [T::Star, T::Close, T::Close]) {
        put(75, "wildcard then `))` closing the LDAP filter");
    }
    if unbalanced && toks.contains(&T::Nul) && toks.contains(&T::Close) {
        put(70, "NUL byte truncating an LDAP filter");
    }
    if breakouts > 0 && toks.windows(3).any(|w| w == [T::Open, T::Bool, T::Close]) {
        put(90, "LDAP filter breakout into an absolute TRUE/FALSE filter");
    }
    if breakouts > 0 && toks.first() == Some(&T::Star) {
        put(80, "wildcard then filter breakout");
    }
    out
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
        ] {
            assert!(q(v) >= 60, "{v}: {}", q(v));
        }
    }

    #[test]
    fn benign() {
        for v in
            ["John (Johnny) Smith", "(555) 123-4567", "a = b (see note)", "smile :)", "f(x) = y*(z)", "cn", "(cn=John)", "*", "2*(3+4)", "price (with tax)*"]
        {
            assert!(q(v) < 60, "{v}: {}", q(v));
        }
    }

    #[test]
    fn linear() {
        for unit in [")(", "(|(a=*", "*))", "a"] {
            let v = unit.repeat(1_000_000 / unit.len());
            take_steps();
            let _ = detector().check(&Input { raw: &v, decoded: &v, field: FieldKind::QueryValue }, Level::Strict);
            assert!(take_steps() < 80 * v.len() as u64, "{unit}");
        }
    }
}
