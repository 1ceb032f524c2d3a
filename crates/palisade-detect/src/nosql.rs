//! NoSQL (MongoDB-style) operator injection.
//!
//! Query operators arrive as JSON object keys (`{"$ne": 1}`), as bracketed parameter names
//! (`user[$ne]=x`) or inside JavaScript evaluated by `$where`/`mapReduce`. The value is lexed
//! into `$identifier` tokens with what surrounds them: an operator name used as a key (followed
//! by `:`) or as a bracketed name is the evidence; a dollar amount (`$5`) or a shell variable
//! is not. JavaScript breakouts into `$where` (`'; return true; var x='`, `' && this.password
//! .match(/.*/)//`, `sleep(5000)`) are recognised by a quote breakout followed by JS syntax.

use crate::other_util::{best, gate, mk, step, views};
use crate::{Category, Detector, FieldKind, Gate, Hit, Input, Level};

const NAME: &str = "nosql";

pub struct NosqlDetector;

pub fn detector() -> Box<dyn Detector> {
    Box::new(NosqlDetector)
}

/// The update operators of [`OPS`] (MongoDB field update operators).
const UPDATE_OPS: &[&str] = &["set", "unset", "push", "rename", "inc"];

const OPS: &[&str] = &[
    "ne",
    "eq",
    "gt",
    "gte",
    "lt",
    "lte",
    "in",
    "nin",
    "regex",
    "where",
    "exists",
    "expr",
    "function",
    "or",
    "and",
    "not",
    "nor",
    "elemmatch",
    "type",
    "comment",
    "accumulator",
    "lookup",
    "size",
    "all",
    "mod",
    "text",
    "jsonschema",
    "where",
    "set",
    "unset",
    "push",
    "rename",
    "inc",
];

/// The pre-filter declared to the engine ([`Gate`]): operators need `$` (or `%` encoding it),
/// a shell call `db.`, and JavaScript after a breakout a value that begins with the breakout
/// ([`begins_with_breakout`]: a quote, `0;`, `1;`, `||` or `&&` after leading blanks), as the
/// analysis reads it ([`may_hold_nosql`]). A quote, `;`, `|` or `&` further in (an apostrophe
/// in `don't`, an entity `&rsquo;`, `a || b`) opens nothing.
const GATE: Gate = Gate { bytes: "$%", anchors: &["db.", "this."], words: &[], test: Some(begins_with_breakout), test_bytes: "'\";|&", test_only: "" };

/// Whether `s` begins, after leading blanks, with what leaves the application's JavaScript
/// string or statement: a quote, `0;`, `1;`, `||` or `&&`.
fn begins_with_breakout(s: &str) -> bool {
    let t = s.trim_start().as_bytes();
    matches!(t.first(), Some(b'\'' | b'"')) || [&b"0;"[..], b"1;", b"||", b"&&"].iter().any(|p| t.starts_with(p))
}

impl Detector for NosqlDetector {
    fn name(&self) -> &'static str {
        NAME
    }

    fn gate(&self) -> Option<Gate> {
        Some(GATE)
    }

    /// In the product-token shape ([`crate::shape`]) there is no `$`, quote, `|`, `&` or `%`,
    /// and the value starts with a letter (no `0;` breakout): only the `db.` shell call remains.
    fn product_token_gate(&self) -> Option<fn(&str) -> bool> {
        Some(|s| s.as_bytes().windows(3).any(|w| w.eq_ignore_ascii_case(b"db.")))
    }

    fn check(&self, input: &Input<'_>, level: Level) -> Option<Hit> {
        let mut h = None;
        // The parameter or key name itself: `user[$ne]`, `{"$gt": ...}` keys.
        if matches!(input.field, FieldKind::QueryName | FieldKind::FormName | FieldKind::JsonKey) {
            let l = input.decoded.to_ascii_lowercase();
            let key = l.trim_matches(|c: char| c == '[' || c == ']' || c == '"');
            let inner = l.rsplit('[').next().unwrap_or("").trim_end_matches(']');
            for k in [key, inner] {
                if let Some(op) = k.strip_prefix('$') {
                    if OPS.contains(&op) {
                        // An update operator (`$set`, `$unset`, `$inc`...) changes a document
                        // only in the update of an update call, never in a query's filter; as a
                        // JSON key it is how product-analytics APIs set user properties
                        // (`{"$set": {"plan": "pro"}}`): the body's own grammar, not an
                        // injection, at any level. In a parameter name (`user[$set][role]=admin`,
                        // built into an object by a query-string parser, where no client writes
                        // it) and for every query operator, an injection.
                        if input.field == FieldKind::JsonKey && UPDATE_OPS.contains(&op) {
                            continue;
                        }
                        h = Some(mk(NAME, Category::Nosql, 90, input.decoded, "query operator as a parameter or key name"));
                    }
                }
            }
        }
        for v in views(input.decoded).iter().filter(|v| !v.is_empty()) {
            h = best(h, analyse(v));
            h = best(h, where_predicate(v));
        }
        gate(h, level)
    }
}

/// Whether [`analyse`] can find anything in `s`: an operator needs `$`, JavaScript a value that
/// starts with a breakout (a quote, `0;`, `1;`, `||`, `&&`), a shell call `db.` (any case).
/// Prose such as `Metabase's forum` or `don't; fine` has none (no lowercase copy is made).
fn may_hold_nosql(s: &str) -> bool {
    let b = s.as_bytes();
    begins_with_breakout(s)
        // A `$`, or `db.` found at its `.` (rarer in prose than `d`): one search for both.
        || memchr::memchr2_iter(b'$', b'.', b).any(|i| b[i] == b'$' || (i >= 2 && b[i - 2..i].eq_ignore_ascii_case(b"db")))
}

fn analyse(s: &str) -> Option<Hit> {
    if !may_hold_nosql(s) {
        step(s.len());
        return None;
    }
    let l = s.to_ascii_lowercase();
    let b = l.as_bytes();
    step(b.len());
    let mut out = operators(s, &l);
    // JavaScript for `$where` / mapReduce after a string breakout.
    let t = l.trim_start();
    let breakout = t.starts_with('\'') || t.starts_with('"') || t.starts_with("0;") || t.starts_with("1;") || t.starts_with("||") || t.starts_with("&&");
    if breakout {
        step(l.len() * JS.len() / 8);
        // The count matters only with a `;`, `&&` or `||`: those first (a value that starts
        // with a quote is mostly quoted prose, without them), the twelve searches only then.
        if l.contains(';') || l.contains("&&") || l.contains("||") {
            let hits = JS.iter().filter(|p| l.contains(*p)).count();
            if hits >= 1 {
                out = best(out, Some(mk(NAME, Category::Nosql, if hits >= 2 { 85 } else { 70 }, s, "JavaScript injected after a string breakout")));
            }
        }
    }
    // (`find_short`: the first `db.` as `find` gives it, no searcher built per value.)
    out = best(out, shell_call(s, &l, crate::other_util::find_short(l.as_bytes(), b"db.")));
    out
}

/// A `$where` predicate (JavaScript run against each document, `this` the document) that is
/// the whole value, or follows a closed string and `&&` / `||` (`admin' && this...`): `this.`,
/// a field name, then a regular-expression match (`.match(/`) or a comparison; at the end a
/// `//` comments out the rest of the application's expression. Text that only names
/// `this.x.match(...)` in a sentence or in a program does not begin with it.
fn where_predicate(s: &str) -> Option<Hit> {
    let t = s.trim();
    let p = memchr::memmem::find(t.as_bytes(), b"this.")?;
    step(t.len());
    let before = t[..p].trim_end();
    let joined = before.is_empty() || {
        let b = before.strip_suffix("&&").or_else(|| before.strip_suffix("||"));
        b.map(str::trim_end).is_some_and(|b| {
            let b = b.strip_suffix(['\'', '"']);
            b.is_some_and(|w| !w.contains(char::is_whitespace))
        })
    };
    if !joined {
        return None;
    }
    let rest = &t[p + 5..];
    let field = rest.bytes().take_while(|c| c.is_ascii_alphanumeric() || *c == b'_').count();
    if field == 0 {
        return None;
    }
    let after = rest[field..].trim_start();
    let predicate = after.starts_with(".match(/") || ["==", "!=", ">", "<"].iter().any(|op| after.starts_with(op));
    if !predicate {
        return None;
    }
    let c = if t.ends_with("//") || !before.is_empty() { 85 } else { 70 };
    Some(mk(NAME, Category::Nosql, c, s, "JavaScript predicate over the document ($where)"))
}

/// JavaScript pieces looked for after a string breakout.
const JS: [&str; 12] = ["return true", "return(true)", "return 1", "this.", "sleep(", "while(", "db.", "==", ".match(", "tojson(", "return '", "return \""];

/// The query operators of `s` (`l`: `s` lowercased): `$ne`, `$where`... as an object key or
/// followed by a colon.
fn operators(s: &str, l: &str) -> Option<Hit> {
    let b = l.as_bytes();
    let mut out: Option<Hit> = None;
    let mut i = 0;
    while i < b.len() {
        step(1);
        if b[i] != b'$' {
            i += 1;
            continue;
        }
        let start = i + 1;
        let mut j = start;
        while j < b.len() && b[j].is_ascii_alphabetic() {
            j += 1;
        }
        let op = &l[start..j];
        if !op.is_empty() && OPS.contains(&op) {
            let before = l[..i].trim_end_matches([' ', '"', '\'']);
            let mut k = j;
            while k < b.len() && matches!(b[k], b' ' | b'"' | b'\'') {
                k += 1;
            }
            let after = b.get(k).copied().unwrap_or(0);
            let key_pos = after == b':' && (before.is_empty() || before.ends_with(['{', ',', '[']));
            let bracket = before.ends_with('[') && after == b']';
            if key_pos || bracket {
                let c = if op == "where" || op == "function" || op == "accumulator" || op == "expr" { 95 } else { 90 };
                out = best(out, Some(mk(NAME, Category::Nosql, c, &s[i..], "query operator injected as an object key")));
            } else if after == b':' {
                out = best(out, Some(mk(NAME, Category::Nosql, 55, &s[i..], "query operator followed by a colon")));
            }
        }
        i = j.max(i + 1);
    }
    out
}

/// A MongoDB shell call at `at`, the first `db.` of `l` (`s` lowercased): `db.users.find(`...
fn shell_call(s: &str, l: &str, at: Option<usize>) -> Option<Hit> {
    let p = at?;
    let rest = &l[p + 3..];
    let coll_end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len());
    let after = &rest[coll_end..];
    if coll_end > 0
        && after.starts_with('.')
        && ["insert", "find", "remove", "drop", "update", "mapreduce", "aggregate", "delete", "getcollection"].iter().any(|m| after[1..].starts_with(m))
    {
        return Some(mk(NAME, Category::Nosql, 85, &s[p..], "MongoDB shell call"));
    }
    None
}

#[cfg(test)]
mod tests {
    /// Written for this rule: `$where` predicates as a whole value or after a closed string.
    #[test]
    fn where_predicates() {
        for v in ["this.role.match(/adm.*/)//", "bob\" || this.age > 0//", "x' && this.token == 'a'", "this.pin != 0"] {
            assert!(super::where_predicate(v).is_some_and(|h| h.confidence >= 60), "{v:?}");
        }
        for v in [
            "In JS, this.value.match(/x/) returns an array",
            "I like this. match it",
            "this.state = {}",
            "this.handleClick()",
            "const a = this.b == c",
            "function f() { return this.x == 1 }",
        ] {
            assert!(super::where_predicate(v).is_none(), "{v:?}");
        }
    }

    /// What [`super::may_hold_nosql`] answers, from its documentation: a `$` anywhere, a value
    /// that starts (after blanks) with a quote, `0;`, `1;`, `||` or `&&`, or `db.` in any case.
    fn may_hold_nosql_spec(s: &str) -> bool {
        let t = s.trim_start();
        s.contains('$') || ["'", "\"", "0;", "1;", "||", "&&"].iter().any(|p| t.starts_with(p)) || s.to_ascii_lowercase().contains("db.")
    }

    /// On generated values around `db.` in every case, and on every corpus value.
    #[test]
    fn may_hold_nosql_is_its_documentation() {
        let parts = ["d", "D", "b", "B", ".", "db.", "DB.", "dB", " ", "x", "$", "'", "0;", "||", "\u{e9}", "data", "."];
        let mut rng = palisade_testkit::rng::XorShift64::new(0xdb_0d_b0_0b);
        let (mut yes, mut no) = (0, 0);
        for _ in 0..50_000 {
            let v = rng.joined(&parts, 8);
            let want = may_hold_nosql_spec(&v);
            assert_eq!(super::may_hold_nosql(&v), want, "{v:?}");
            yes += usize::from(want);
            no += usize::from(!want);
        }
        assert!(yes > 5_000 && no > 5_000, "{yes} {no}");
        for v in crate::other_util::test_values() {
            assert_eq!(super::may_hold_nosql(&v), may_hold_nosql_spec(&v), "{v:?}");
        }
    }

    use super::*;
    use crate::other_util::take_steps;

    fn q(v: &str) -> u8 {
        detector().check(&Input { raw: v, decoded: v, field: FieldKind::QueryValue }, Level::Strict).map_or(0, |h| h.confidence)
    }

    #[test]
    fn attacks() {
        for v in [
            "{\"$gt\": \"\"}",
            "{ $ne: 1 }",
            "[$ne]=1",
            "', $where: '1 == 1'",
            "{\"$where\": \"sleep(5000)\"}",
            "';return 'a'=='a' && ''=='",
            "' && this.password.match(/.*/)//",
            "0;return true",
            "db.injection.insert({success:1});",
            "{\"username\": {\"$regex\": \"^adm\"}}",
        ] {
            assert!(q(v) >= 60, "{v}: {}", q(v));
        }
        let k = Input { raw: "user[$ne]", decoded: "user[$ne]", field: FieldKind::QueryName };
        assert!(detector().check(&k, Level::Balanced).is_some());
    }

    #[test]
    fn update_operators_as_json_keys_pass() {
        let at = |v: &str, field: FieldKind, level: Level| detector().check(&Input { raw: v, decoded: v, field }, level).map_or(0, |h| h.confidence);
        for k in ["$set", "$unset", "$inc", "$push", "$rename", "$SET"] {
            assert_eq!(at(k, FieldKind::JsonKey, Level::Balanced), 0, "{k}");
            assert_eq!(at(k, FieldKind::JsonKey, Level::Strict), 0, "{k}");
            assert_eq!(at(&format!("user[{k}][role]"), FieldKind::QueryName, Level::Balanced), 90, "{k}");
        }
        for k in ["$ne", "$gt", "$regex", "$where", "$expr", "$or"] {
            assert_eq!(at(k, FieldKind::JsonKey, Level::Balanced), 90, "{k}");
        }
    }

    #[test]
    fn benign() {
        for v in ["costs $5", "$where is my order", "price in $: 10", "{\"amount\": \"$10\"}", "I'd say 1 == 1", "echo $HOME", "Don't; this.is fine"] {
            assert!(q(v) < 60, "{v}: {}", q(v));
        }
    }

    /// [`may_hold_nosql`] lets prose through early, and none of the attack shapes.
    #[test]
    fn prefilter() {
        for v in ["Welcome to Metabase's Discussion Forum", "Don't; this.is fine", "a || b", "it's 1 == 1", "/c/l/latest?page=1&x=2"] {
            assert!(!may_hold_nosql(v), "{v}");
            assert!(analyse(v).is_none(), "{v}");
        }
        for v in ["{\"$gt\": 1}", " 'x", "\"x", "0;return true", "1;x", "||1", "&&1", "DB.users.find()", "x db.a.drop()"] {
            assert!(may_hold_nosql(v), "{v}");
        }
    }

    #[test]
    fn linear() {
        for unit in ["$ne", "{$gt:", "'db.", "$"] {
            let v = unit.repeat(1_000_000 / unit.len());
            take_steps();
            let _ = detector().check(&Input { raw: &v, decoded: &v, field: FieldKind::QueryValue }, Level::Strict);
            assert!(take_steps() < 80 * v.len() as u64, "{unit}");
        }
    }

    /// [`analyse`] finds nothing where [`may_hold_nosql`] says no (the pre-filter is sound), and
    /// never panics: on generated values (breakouts, operators, JavaScript pieces, `db.` calls,
    /// mutated at one byte) and on every corpus value.
    #[test]
    fn analyse_needs_what_the_pre_filter_finds() {
        let sound = |v: &str| assert!(may_hold_nosql(v) || analyse(v).is_none(), "{v:?}");
        let mut found = 0;
        let parts = [
            "'",
            "\"",
            " ",
            "0;",
            "1;",
            "||",
            "&&",
            ";",
            "&",
            "|",
            "$ne",
            "$where",
            ":",
            "{",
            "[",
            "]",
            "return true",
            "this.",
            "sleep(",
            "==",
            "db.",
            "DB.",
            "users",
            ".find(",
            ".drop",
            "x",
            "\u{e9}",
            "mongoDB",
        ];
        let mut rng = palisade_testkit::rng::XorShift64::new(0x0a5e_a1f5_0123_4567);
        for _ in 0..50_000 {
            let v = rng.joined(&parts, 8);
            sound(&v);
            found += usize::from(analyse(&v).is_some());
            let mut b = v.clone().into_bytes();
            let at = rng.below(b.len());
            if b[at].is_ascii() {
                b[at] = [b';', b'&', b'|', b'.', b'\''][rng.below(5)];
                let w = String::from_utf8(b).unwrap();
                sound(&w);
            }
        }
        for v in crate::other_util::test_values() {
            sound(&v);
        }
        assert!(found > 5_000, "{found}");
    }
}
