//! SQL injection by grammar.
//!
//! A value is injected into a SQL statement in one of three contexts: as-is (a number, or
//! appended after a value: `id=1` + `v`), inside a single-quoted string, inside a
//! double-quoted string. For each context we find where the value would leave the context (the
//! first unescaped closing quote, or immediately for as-is), tokenize what follows with a
//! multi-dialect SQL lexer ([`lexer`]), and run a small expression/statement automaton over the
//! tokens (operand / operator / statement expected, parenthesis depth, clause keywords). The
//! automaton stops at the first token that cannot continue a SQL statement, so prose
//! ("O'Reilly", "1 or 2 items", "drop me a line") stops early, while injections keep parsing.
//! While it parses it records the SQL structures that an injection needs (UNION SELECT, a stacked
//! statement, a tautology, a time/error/out-of-band function call, a sub-select, a comment that
//! cuts the rest of the query); the confidence is the strongest structure found, lowered when the
//! continuation does not end cleanly (end of input, a comment, or the context's own closing
//! quote). No state is recursive: 100,000 nested parentheses are a counter.
#![forbid(unsafe_code)]

mod keywords;
mod lexer;

#[cfg(test)]
mod tests;

use crate::{truncate, Category, Detector, Gate, Hit, Input, Level};
use keywords::{function, keyword, Func, Kw, Stmt};
use lexer::{Kind, Lexer, Token};

/// The SQL injection detector.
#[derive(Debug, Default, Clone, Copy)]
pub struct SqliDetector;

/// The SQL injection detector, boxed.
pub fn detector() -> Box<dyn Detector> {
    Box::new(SqliDetector)
}

impl Detector for SqliDetector {
    fn name(&self) -> &'static str {
        "sqli"
    }

    fn gate(&self) -> Option<Gate> {
        Some(GATE)
    }

    fn product_token_gate(&self) -> Option<fn(&str) -> bool> {
        Some(product_token_gate)
    }

    fn check(&self, input: &Input<'_>, level: Level) -> Option<Hit> {
        judge(input, level, analyze)
    }

    fn in_free_text(&self, input: &Input<'_>, _hit: Hit, level: Level) -> Option<Hit> {
        judge(input, level, analyze_free_text)
    }
}

/// The detector's judgement of `input` at `level`, with `analyze` reading each text.
fn judge(input: &Input<'_>, level: Level, analyze: fn(&str, &mut usize) -> Option<Finding>) -> Option<Hit> {
    let threshold = crate::engine::threshold(level);
    let mut best = input.best_view(analyze, |f| f.confidence);
    if let Some(f) = best.as_mut() {
        if f.confidence > 55 && (about_sql(input.decoded, f) || call_in_prose(input.decoded, f)) {
            f.confidence = 55;
        }
    }
    best.filter(|f| f.confidence >= threshold).map(|f| Hit {
        detector: "sqli",
        category: Category::Sqli,
        confidence: f.confidence,
        fragment: f.fragment,
        why: f.why,
    })
}

/// Whether a finding is text about SQL rather than SQL that changes a query: a search
/// (`sql injection and 1=1`, `что такое select 1 from dual`, `select 1 from dual`) in a
/// value with nothing that leaves the application's literal or ends its statement: no quote,
/// no comment, no `;`, no parenthesis. Without a breakout the value is read in the as-is
/// context only, where it must continue an expression: two words in a row before the
/// condition (`sql injection and 1=1`: juxtaposed identifiers, which no expression allows) or
/// a SELECT starting the value (`id = select 1 from dual`: a sub-select needs its
/// parentheses; `what is select 1`) make it a syntax error, not an injection. So does a value
/// that begins with a condition and runs into a word of prose (`and 1=1 meaning`: no operand
/// of the application's before it, a name after it), and a UNION
/// after words that are not a value (`sql union select example`: an injection puts a number
/// or a literal there, `1 union select`), and a condition inside a SELECT that begins the value
/// (`select * from users where id = 1`: a statement, which the as-is context cannot hold
/// without parentheses). Such a finding is at most 55 (strict): the words can
/// still be a probe.
fn about_sql(v: &str, f: &Finding) -> bool {
    let leading = matches!(f.why, "tautology after the value" | "boolean condition after the value" | "ORDER/GROUP BY after the value");
    if !leading && !matches!(f.why, "SELECT ... FROM" | "sub-select" | "UNION SELECT") {
        return false;
    }
    let b = v.as_bytes();
    if b.iter().any(|c| matches!(c, b'\'' | b'"' | b'`' | b'#' | b';' | b'(' | b')' | b'\\'))
        || v.contains("--")
        || v.contains("/*")
        || !v.is_ascii() && fold_quotes(v).is_some()
    {
        return false;
    }
    // A condition that begins the value and runs into a word of prose (`and 1=1 meaning`):
    // `and 1=1` alone is what a scanner appends to a value, a probe kept as it is.
    let first = v.split_whitespace().next().unwrap_or("");
    let last = v.split_whitespace().last().unwrap_or("");
    if leading
        && ["and", "or", "xor"].iter().any(|k| first.eq_ignore_ascii_case(k))
        && last.chars().count() >= 2
        && last.chars().all(char::is_alphabetic)
        && keyword(last) == Kw::None
    {
        return true;
    }
    // The words before the first logic or SELECT word.
    let mut before = 0;
    for w in v.split_whitespace() {
        if ["and", "or", "xor", "not", "select", "union", "&&", "||"].iter().any(|k| w.eq_ignore_ascii_case(k)) {
            break;
        }
        if ["null", "true", "false"].iter().any(|k| w.eq_ignore_ascii_case(k)) || w.starts_with(|c: char| c.is_ascii_digit()) {
            // A literal completes the application's expression (`null union select`,
            // `0x31 union select`, `1e0union select`).
            return false;
        }
        if w.chars().count() < 2 || !w.chars().all(|c| c.is_alphanumeric() || c == '_') || w.bytes().all(|c| c.is_ascii_digit()) {
            // An operator, a number or a one-letter name continues an expression
            // (`1 and 1=1`, `x+1 or 1=1`).
            return false;
        }
        before += 1;
    }
    before >= 2
        || f.why == "UNION SELECT" && before >= 1
        || (f.why == "SELECT ... FROM" || leading) && before == 0 && v.trim_start().get(..6).is_some_and(|w| w.eq_ignore_ascii_case("select"))
}

/// Whether a time or out-of-band call is written after a word of prose (`mysql sleep(5)
/// function`) in a value with nothing that leaves the application's literal or ends its
/// statement (no quote, comment or `;`): the as-is context cannot hold a name juxtaposed with
/// a call, so it is a syntax error, not an injection. A call that begins the value
/// (`sleep(5)`) or follows an operator, a keyword or a parenthesis (`1 and sleep(5)`,
/// `x=sleep(5)`) is SQL.
fn call_in_prose(v: &str, f: &Finding) -> bool {
    if f.why != "time-based or out-of-band function call"
        || v.bytes().any(|c| matches!(c, b'\'' | b'"' | b'`' | b'#' | b';' | b'\\'))
        || v.contains("--")
        || v.contains("/*")
        || !v.is_ascii() && fold_quotes(v).is_some()
    {
        return false;
    }
    // The call's name begins the fragment.
    let name: String = f.fragment.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
    if name.is_empty() {
        return false;
    }
    let lower = v.to_ascii_lowercase();
    let Some(pos) = lower.find(&format!("{}(", name.to_ascii_lowercase())) else { return false };
    let before = v[..pos].trim_end();
    let last = before.rsplit(char::is_whitespace).next().unwrap_or("");
    // A blank between the word and the call: `mysql sleep(5)`, not `mysql_sleep(5)`.
    before.len() < pos
        && last.chars().count() >= 2
        && last.chars().all(|c| c.is_alphanumeric() || c == '_')
        && !last.bytes().all(|c| c.is_ascii_digit())
        && keyword(last) == Kw::None
}

/// The pre-filter ([`Gate`]). A value made only of letters, digits, blanks and `_ . , : / - @ + { }`
/// (braces only matter in ODBC escapes, `{fn f()}`, `{d '...'}`, `{oj a left join b}`, which
/// need a call, a quote or a keyword; URL templates such as `/avatar/{size}.png` are common
/// values; every other ASCII punctuation opens the gate; so do controls, typographic quotes (the
/// engine reads them as `'` and `"`: [`crate::engine::CodePoint`]) and every non-ASCII character
/// but the letters of other scripts, which are neither keyword letters nor operators) has no quote to break out of, no call, no comparison
/// operator, no `;`: the automaton can only record a structure through a keyword (UNION,
/// SELECT, OR, ORDER BY, a statement, a comparison word such as LIKE...), a server variable
/// (`@@`) or a comment (`--`). So such a value needs one of the [`keywords::keyword`] words
/// (the test `gate_words_cover_the_keywords` reads that function's source to keep the list
/// complete), `@@` or `--`. The word boundary of the gate allows a digit before a keyword
/// (`1union select`).
///
/// The punctuation of prose ([`GATE_TEST_BYTES`]: quotes and apostrophes, the `&` and `;` of
/// HTML character references, parentheses of an aside, `#`, `?`, square brackets) opens the
/// gate only through [`gate_test`]: in a value without a gate word, anchor or other gate byte
/// (`Deploy to Heroku isn&rsquo;t working`, `Internationalization (i18n)`, `don't`), they are
/// what [`inert`] reads, and a value it calls inert is one the analysis finds nothing in
/// (`tests::inert_values_are_those_the_analysis_finds_nothing_in`; `tests/gate_soundness.rs`
/// checks the gate on generated prose, entities, asides and SQL fragments).
pub(crate) const GATE: Gate =
    Gate { bytes: "!$%*<=>\\^`|~", anchors: &["--", "@@"], words: GATE_WORDS, test: Some(gate_test), test_bytes: GATE_TEST_BYTES, test_only: "" };

/// The bytes of [`GATE`] that open it only through [`gate_test`]: the punctuation [`inert`]
/// reads (quotes, `#`, `&`, parentheses) or passes over (`;`, `?`, `[`, `]`).
const GATE_TEST_BYTES: &str = "\"#&'();?[]";

/// [`GATE`]'s structural test, run on a value with a byte of [`GATE_TEST_BYTES`] and no gate
/// word, anchor or other gate byte: whether the analysis may find something in it (not
/// [`inert`]).
fn gate_test(s: &str) -> bool {
    !inert(s)
}

/// [`GATE_WORDS`] with a length filter before the binary search.
static SORTED_GATE_WORDS: std::sync::LazyLock<crate::other_util::SortedWords> = std::sync::LazyLock::new(|| crate::other_util::SortedWords::new(GATE_WORDS));

/// [`crate::Detector::product_token_gate`]: a text in the product-token shape
/// ([`crate::shape`]) has no quote, backslash or `#` (no string breakout, no `#` comment), no
/// comparison or arithmetic operator but `/`, `-`, `+` inside names, and its `;` stand inside
/// parentheses (no stacked statement can follow a closed one). What remains is a numeric
/// context continued by keywords (`a/1 union select pass from users`, `a/1 or true`), a call
/// (`sleep (5)`: [`crate::shape::call_shape`]) or a `--` comment: the gate words looked up
/// outside the parenthesised comments (inside one, they are at best an argument list, which
/// needs a call or a keyword before it), calls and `--`.
fn product_token_gate(s: &str) -> bool {
    crate::other_util::find_short(s.as_bytes(), b"--").is_some()
        || crate::shape::call_shape(s)
        || crate::shape::words_outside_comments(s, |w| SORTED_GATE_WORDS.contains_ignore_case(w))
}

pub(crate) const GATE_WORDS: &[&str] = &[
    "union",
    "intersect",
    "except",
    "minus",
    "select",
    "from",
    "where",
    "having",
    "order",
    "group",
    "by",
    "limit",
    "offset",
    "fetch",
    "into",
    "outfile",
    "dumpfile",
    "as",
    "asc",
    "desc",
    "join",
    "straight_join",
    "left",
    "right",
    "inner",
    "outer",
    "cross",
    "natural",
    "full",
    "on",
    "using",
    "procedure",
    "top",
    "all",
    "distinct",
    "distinctrow",
    "for",
    "and",
    "or",
    "xor",
    "not",
    "like",
    "rlike",
    "regexp",
    "in",
    "is",
    "between",
    "sounds",
    "glob",
    "ilike",
    "similar",
    "escape",
    "div",
    "mod",
    "collate",
    "match",
    "against",
    "null",
    "true",
    "false",
    "unknown",
    "current_user",
    "session_user",
    "system_user",
    "current_date",
    "current_time",
    "current_timestamp",
    "localtime",
    "localtimestamp",
    "sysdate",
    "rownum",
    "default",
    "binary",
    "interval",
    "exists",
    "any",
    "some",
    "prior",
    "connect_by_root",
    "case",
    "when",
    "then",
    "else",
    "end",
    "drop",
    "create",
    "alter",
    "truncate",
    "exec",
    "execute",
    "declare",
    "shutdown",
    "waitfor",
    "insert",
    "replace",
    "merge",
    "upsert",
    "update",
    "delete",
    "set",
    "grant",
    "revoke",
    "load",
    "copy",
    "begin",
    "call",
    "if",
    "use",
    "kill",
    "show",
    "prepare",
    "deallocate",
    "delay",
    "time",
];

/// The length from which [`analyze`] tries [`inert`] on a value without a quote (and with a
/// blank): measured on the bench bodies (shorter values are as cheap to analyse as to scan;
/// 20 rather than 24 takes `Change X and Y on graph`, `Support for Cassandra?` out of the full
/// analysis; 12 takes `USB-C Hub 7-in-1`, which [`inert`] accepts since a comparison word after
/// an operator is inert, [`after_operator_or_not`]: 2.5k of automaton for ~0.4k of scan).
const INERT_MIN_LEN: usize = 12;

/// The strongest finding over all contexts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Finding {
    pub confidence: u8,
    pub why: &'static str,
    pub fragment: String,
}

/// Analyses `s` in every context, and the views of it a database or a framework may see:
/// typographic quotes folded to ASCII (best-fit code page conversion in MSSQL does that), and one
/// more URL-decoding layer when `%XX` escapes remain. `steps` counts the work.
pub(crate) fn analyze(s: &str, steps: &mut usize) -> Option<Finding> {
    let slug = slug_class(s);
    if slug == Some(true) {
        *steps += s.len();
        return None;
    }
    // Worth its pass where a breakout or a folded view would double the work, and on prose (a
    // blank, 20 bytes or more), where it replaces the automaton and the call scan; a short
    // value or a path without a quote is left to those (an early keyword such as `in`, a late
    // `=`, or a hash full of hex words make the pass a loss there). A slug that opens with a
    // keyword (`set-site-url-from-admin-panel`, `update-the-docs`) is words and `-` only: the
    // pass is as cheap there as on prose.
    if (slug.is_some()
        || (s.len() >= INERT_MIN_LEN && memchr::memchr(b' ', s.as_bytes()).is_some())
        || memchr::memchr2(b'\'', b'"', s.as_bytes()).is_some()
        || !s.is_ascii())
        && inert(s)
    {
        *steps += s.len();
        return None;
    }
    analyze_all(s, steps)
}

/// [`analyze`] for free text ([`crate::context::Roles::free_text`]: a search box's value, a
/// `Referer`), which an application puts in a string literal (`LIKE '%...%'`), never after an
/// expression of its own: the as-is context holds only when the value begins with an operand
/// of its own or leaves an expression (`1 union select ...`, `-1 or 1=1`, `)) or 1=1`), or
/// ends the application's statement with a comment (` UNION ALL SELECT 1,2-- `, ` ORDER BY
/// 7#`: no phrase ends so), and a context counts only when the value,
/// put there, parses to its end (a comment, a string the application's closing quote closes,
/// a complete expression) or holds a structure no text has (a stacked statement after a
/// number, 90 and more), or when the quote that leaves the string comes after one word at
/// most (`x'; DROP TABLE users`, `admin' AND SLEEP(5)`: a value, then the breakout). A search
/// phrase with SQL words in it (`order by 1 desc`, `drop table if exists syntax`, `sql
/// injection ' or 1=1`: words before the quote, and the application's closing quote left open
/// after `1=1`) does neither; `what does ' or 1=1 -- do` and `x' or 'a'='a` do. Calls
/// (`sleep(5)`) count only in a continuation that counts.
pub(crate) fn analyze_free_text(s: &str, steps: &mut usize) -> Option<Finding> {
    let mut best = free_text_view(s, steps);
    let consider = |f: Option<Finding>, best: &mut Option<Finding>| {
        if f.as_ref().map_or(0, |f| f.confidence) > best.as_ref().map_or(0, |b| b.confidence) {
            *best = f;
        }
    };
    let folded = if s.is_ascii() { None } else { fold_quotes(s) };
    if let Some(f) = &folded {
        consider(free_text_view(f, steps), &mut best);
    }
    let view = folded.as_deref().unwrap_or(s);
    if let Some(d) = percent_decode(view) {
        consider(free_text_view(&d, steps), &mut best);
    }
    best
}

/// Whether a value begins with an operand of its own (a number: `1`, `-1`, `.5`, `0x1f`;
/// `null`, `true`, `false` before a blank or an operator) or by leaving the application's
/// expression (`)`, `;`, `,`).
fn begins_with_operand(s: &str) -> bool {
    let t = s.trim_start().trim_start_matches(['-', '+']);
    let b = t.as_bytes();
    match b.first() {
        Some(c) if c.is_ascii_digit() || matches!(c, b')' | b';' | b',') => true,
        Some(b'.') => b.get(1).is_some_and(u8::is_ascii_digit),
        _ => ["null", "true", "false"].iter().any(|w| {
            b.len() >= w.len() && b[..w.len()].eq_ignore_ascii_case(w.as_bytes()) && b.get(w.len()).is_none_or(|c| !c.is_ascii_alphanumeric() && *c != b'_')
        }),
    }
}

/// One view of [`analyze_free_text`].
fn free_text_view(s: &str, steps: &mut usize) -> Option<Finding> {
    let mut best: Option<Finding> = None;
    let mut consider = |f: Option<Finding>| {
        if let Some(f) = f {
            if best.as_ref().is_none_or(|b| f.confidence > b.confidence) {
                best = Some(f);
            }
        }
    };
    let calls = may_call(s.as_bytes()) && may_call_word(s.as_bytes());
    let (f, clean, comment) = run_ended(s, 0, 0, steps);
    // The automaton records a stacked statement or a UNION with its column list (90 and more)
    // before it has parsed the statement to its end: those stand as they are.
    if comment || begins_with_operand(s) && (clean || f.as_ref().is_some_and(|f| f.confidence >= 90)) {
        consider(f);
        if calls {
            consider(scan_calls(s, steps));
        }
    }
    for q in [b'\'', b'"'] {
        let mysql = breakout(s.as_bytes(), q, steps);
        let standard = breakout_standard(s.as_bytes(), q, steps).filter(|&at| Some(at) != mysql);
        for at in [mysql, standard].into_iter().flatten() {
            // A value, then the quote that closes it (`admin'`, `x"`, `'`): the shape of a
            // breakout, whose end may be left to the application (`x'; DROP TABLE users`).
            // After words of a phrase (`sql injection ' or 1=1`) the value must parse to its end.
            let one_word = !s[..at.saturating_sub(1)].bytes().any(|c| c <= b' ');
            let (f, clean, _) = run_ended(s, q, at, steps);
            if clean || one_word {
                consider(f);
                if calls {
                    consider(scan_calls(&s[at..], steps));
                }
            }
        }
    }
    best
}

/// [`analyze`] without the [`inert`] shortcut (the reference the shortcut is tested against).
fn analyze_all(s: &str, steps: &mut usize) -> Option<Finding> {
    let mut best = analyze_view(s, steps);
    let consider = |f: Option<Finding>, best: &mut Option<Finding>| {
        if f.as_ref().map_or(0, |f| f.confidence) > best.as_ref().map_or(0, |b| b.confidence) {
            *best = f;
        }
    };
    // An ASCII text has no typographic or fullwidth quote to fold.
    let folded = if s.is_ascii() { None } else { fold_quotes(s) };
    if let Some(f) = &folded {
        consider(analyze_view(f, steps), &mut best);
    }
    let view = folded.as_deref().unwrap_or(s);
    if let Some(d) = percent_decode(view) {
        *steps += view.len();
        consider(analyze_view(&d, steps), &mut best);
    }
    best
}

/// Whether no view and no context of `s` can record a structure: a value such as
/// `Welcome to Metabase's forum`, `it&#39;s`, `l’été` or `“We couldn’t understand”, when I
/// show it` (apostrophes, entities, prose words, keywords that cannot start a structure here).
///
/// Every structure the automaton ([`run`]) and [`scan_calls`] record needs one of: a keyword
/// (a word [`keywords::keyword`] classifies: UNION, SELECT, OR, ORDER, LIKE, a statement, CASE,
/// WAITFOR...), a parenthesis (calls, sub-selects, stacked expressions), a comparison (`=`, `<`,
/// `>`, `!`), `||` or `&&`, a server variable (`@@`), a comment that follows a breakout (`--`,
/// `/*`, `#` after a quote) or MySQL's `\N`. Without them the tokens are identifiers,
/// literals, strings, `@x` variables, `+ - / :` operators, `, . ; ? { } [ ]` and single `&`,
/// which continue an expression (or stop it) but record nothing, in the as-is context as after
/// a breakout (`;` then needs a statement keyword or `(` to go on). `%` (one more URL layer)
/// and `\`, `$` (escapes, dollar quoting, variables), `*` (comments, `*` items) and the other
/// operator bytes are left to the full analysis. Typographic quotes (folded to ASCII ones) and
/// every other non-ASCII character are neither letters of a keyword nor operators, except in
/// a value with a fullwidth quote, whose fullwidth letters and operators [`fold_quotes`] turns
/// into ASCII: such a value is never inert.
///
/// Words are checked as maximal runs of ASCII letters and `_` (keywords are made of those),
/// a superset of the lexer's words: a word that follows a number can follow a hex literal
/// (`0xabunion` is `0xab` then `union`), so after a digit the run is also checked without a
/// leading `x`/`b` and hex letters. [`keyword_is_inert`] tells which keywords cannot record a
/// structure in such a value either (`with_keywords`; [`slug_inert`] asks for none at all).
fn inert(s: &str) -> bool {
    inert_with(s, true)
}

fn inert_with(s: &str, with_keywords: bool) -> bool {
    let b = s.as_bytes();
    // What makes a value not inert only grows along it (`#` with a quote or a keyword, the
    // statements that need their second keyword): checked where it grows, so a value fails at
    // the byte that decides, not after the whole scan (`tests::inert_values_are_those_the_analysis_finds_nothing_in`).
    //
    // `#` is a comment, which only records a structure right after a breakout, or after a
    // logic keyword; a comment that ends at a line break is skipped like a blank, so the word
    // after a keyword is no longer the next token: no keyword then.
    let mut quote = false;
    // `#` (a comment) or a parenthesis seen: no keyword from there on.
    let mut mark = 0u8;
    let mut seen = 0u16;
    let mut words = WordSet::default();
    let mut wide_checked = false;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        match INERT_BYTES[c as usize] {
            // Words one after the other, one blank between them (prose): the next word is
            // read here, without a dispatch for the blank and one for its first letter (a
            // blank changes nothing: `tests::inert_with_agrees_with_its_byte_dispatch`).
            B_WORD => {
                // Whether the byte before the word is a digit (not after a blank).
                let mut after_digit = i > 0 && b[i - 1].is_ascii_digit();
                loop {
                    let start = i;
                    i = letters_end(b, i + 1);
                    let w = &b[start..i];
                    if !word_is_inert_here(w, b, start, i, with_keywords, mark, &mut seen, &mut words) {
                        return false;
                    }
                    if after_digit {
                        // After a digit: `0x1f`/`0b1` literals end before a later letter.
                        let mut k = usize::from(matches!(w[0], b'x' | b'X' | b'b' | b'B'));
                        loop {
                            if !word_is_inert_here(&w[k..], b, start + k, i, with_keywords, mark, &mut seen, &mut words) {
                                return false;
                            }
                            if k < w.len() && w[k].is_ascii_hexdigit() {
                                k += 1;
                            } else {
                                break;
                            }
                        }
                    }
                    if b.get(i) == Some(&b' ') && b.get(i + 1).is_some_and(|&c| INERT_BYTES[c as usize] == B_WORD) {
                        i += 1;
                        after_digit = false;
                    } else {
                        break;
                    }
                }
                continue;
            }
            B_NEUTRAL => {}
            B_QUOTE => {
                // A value with a fullwidth quote is never inert: looked for from the first
                // non-ASCII byte (none before it), not in a pass of its own.
                if c >= 0x80 && !wide_checked {
                    if has_fullwidth_quote(&b[i..]) {
                        return false;
                    }
                    wide_checked = true;
                }
                quote = true;
                if mark == b'#' {
                    return false;
                }
            }
            B_HASH => {
                if quote || seen != 0 || mark == b'(' {
                    return false;
                }
                if comment_to_the_end(b, i) {
                    return true;
                }
                mark = b'#';
            }
            // `-`, `@`, `&` alone; `--`, `@@`, `&&` are a comment, a server variable, a logic operator.
            B_SINGLE if b.get(i + 1) != Some(&c) => {}
            // A parenthesis, without a keyword or `#` before it (or after it: `mark`); whether
            // each `(` may call something is read at the end, once the rest of the value passed.
            _ if (c == b'(' || c == b')') && with_keywords && seen == 0 && mark != b'#' => mark = b'(',
            _ => return false,
        }
        i += 1;
    }
    mark != b'(' || memchr::memchr_iter(b'(', b).all(|i| paren_is_inert(b, i))
}

/// Whether the `#` at `i` of a value that [`inert_with`] accepts up to it, with no quote, no
/// keyword and no parenthesis before it, makes the rest of the value a comment in every view
/// and context: the rest holds no line break (a `#` comment runs to one), no quote (no
/// breakout context, no folded view: every non-ASCII byte counts) and no `%` (no URL-decoded
/// view), and no `[` comes before the `#` (inside `[...]`, a quoted identifier, `#` is no
/// comment; the other tokens that may hold one, strings, `` ` `` identifiers, `$$` strings,
/// `/* */` comments, need bytes [`inert_with`] refuses before it). The as-is context then
/// ends at the `#` with a comment, after tokens that record nothing and no logic keyword;
/// [`scan_calls`] skips the comment.
fn comment_to_the_end(b: &[u8], i: usize) -> bool {
    let rest = &b[i + 1..];
    rest.is_ascii() && memchr::memchr3(b'\n', b'\'', b'"', rest).is_none() && memchr::memchr(b'%', rest).is_none() && memchr::memchr(b'[', &b[..i]).is_none()
}

/// Whether the `(` at `i` of a value that [`inert_with`] accepts up to it, with no keyword and
/// no `#` before it (and none after it), can record nothing: the token before it is a word
/// that [`keywords::function`] does not know (a call of it records nothing: the time,
/// out-of-band, error and information functions, ASCII/ORD/UNICODE and IF/IIF of
/// [`scan_calls`] are all known), or no word (a `(` that opens a parenthesised
/// expression); and neither the `(` nor its word is the first token after a `;` (a stacked
/// expression). The word is read from the bytes as [`may_call_word`] does: a run of ASCII
/// letters and `_` after a byte that no word token holds or continues through (blanks,
/// `( ) , + - / : ? { } [ ] &`); anything else (a digit, `$`, `.`, a non-ASCII byte, which may
/// be a letter or a blank) makes the `(` not inert. Inside the parentheses, without keywords,
/// comparisons or logic operators, the tokens record nothing either; `)` alone only changes
/// the depth (`tests::inert_parens_agree_with_the_full_analysis`).
fn paren_is_inert(b: &[u8], i: usize) -> bool {
    let blank = |c: u8| c <= b' ' || c == 0x7f;
    let boundary = |c: u8| matches!(c, b'(' | b')' | b',' | b'+' | b'-' | b'/' | b':' | b'?' | b'{' | b'}' | b'[' | b']' | b'&');
    // The last non-blank byte before `e`, if any.
    let before = |mut e: usize| {
        while e > 0 && blank(b[e - 1]) {
            e -= 1;
        }
        e.checked_sub(1).map(|p| b[p])
    };
    let mut e = i;
    while e > 0 && blank(b[e - 1]) {
        e -= 1;
    }
    let mut j = e;
    while j > 0 && (b[j - 1].is_ascii_alphabetic() || b[j - 1] == b'_') {
        j -= 1;
    }
    if j == e {
        return before(e).is_none_or(boundary);
    }
    let ok_before = match j.checked_sub(1).map(|p| b[p]) {
        None => true,
        // After blanks: any token but `;` (and a non-ASCII byte, which may be a blank after one).
        Some(c) if blank(c) => before(j).is_none_or(|c| c != b';' && c < 0x80),
        Some(c) => boundary(c),
    };
    ok_before && std::str::from_utf8(&b[j..e]).is_ok_and(|w| function(w) == Func::Unknown)
}

/// The end of the run of ASCII letters and `_` ([`B_WORD`]) from `i`: eight bytes at a time
/// (most words of prose end in the first eight), then byte by byte
/// (`tests::letters_end_agrees_with_the_byte_loop`).
#[inline(always)]
fn letters_end(b: &[u8], mut i: usize) -> usize {
    const LO: u64 = 0x0101_0101_0101_0101;
    const M7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    const HI: u64 = !M7;
    while let Some(c) = b.get(i..i + 8) {
        let x = u64::from_le_bytes(c.try_into().unwrap_or([0; 8]));
        // Per byte (ASCII, so no carry crosses bytes): `| 0x20` folds the letters to `a..=z`
        // (and no other byte there: `@` `[` `\` `]` `^` `_` go to `` ` `` and `{..=\x7f`);
        // `+ (0x80 - c)` sets the high bit from `c` up. A non-ASCII byte is no letter.
        let l = (x & M7) | (LO * 0x20);
        let letter = (l + LO * u64::from(0x80 - b'a')) & !(l + LO * u64::from(0x80 - b'z' - 1)) & !x & HI;
        let u = x ^ (LO * u64::from(b'_'));
        let underscore = !(((u & M7) + M7) | u) & HI;
        let other = !(letter | underscore) & HI;
        if other != 0 {
            return i + (other.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < b.len() && INERT_BYTES[b[i] as usize] == B_WORD {
        i += 1;
    }
    i
}

/// Statements that need their second keyword, both seen.
#[inline]
fn needs_partner(seen: u16) -> bool {
    let both = |x: u16, y: u16| seen & x != 0 && seen & y != 0;
    both(SEEN_INSERT, SEEN_INTO) || both(SEEN_DELETE, SEEN_FROM) || both(SEEN_UPDATE, SEEN_SET) || both(SEEN_ORDER, SEEN_BY)
}

/// One word of [`inert_with`] (`b[start..end]`) as its loop asks it: not a keyword, or
/// (`with_keywords`) one of the [`keyword_is_inert`] classes; remembered in `words`. The
/// checks that only a keyword can fail are made for keywords only: no keyword after `#` or a
/// parenthesis (`mark`), and no statement with its partner ([`needs_partner`]). A word that is
/// no keyword changes nothing (`mark` is set only while `seen` is 0, so every keyword after it
/// changes `seen`, and a keyword that changes nothing keeps the pairs as they were;
/// `tests::inert_with_is_sound_on_every_byte_class`).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn word_is_inert_here(w: &[u8], b: &[u8], start: usize, end: usize, with_keywords: bool, mark: u8, seen: &mut u16, words: &mut WordSet) -> bool {
    let mixed = keywords::word_key(w).wrapping_mul(keywords::MUL);
    let kw = keywords::keyword_mixed(w, mixed);
    if kw == Kw::None {
        words.insert_mixed(mixed);
        return true;
    }
    if !with_keywords || mark != 0 {
        return false;
    }
    let ok = match pure_keyword_bits(kw) {
        Some(bits) => {
            *seen |= SEEN_ANY | bits;
            true
        }
        None => keyword_is_inert(kw, b, start, end, seen, words),
    };
    words.insert_mixed(mixed);
    ok && !needs_partner(*seen)
}

/// What [`keyword_is_inert`] adds to `seen` for the classes it accepts whatever the bytes around
/// the word (besides [`SEEN_ANY`]); `None` for the others.
#[inline(always)]
fn pure_keyword_bits(kw: Kw) -> Option<u16> {
    Some(match kw {
        Kw::AscDesc
        | Kw::Not
        | Kw::Prefix
        | Kw::Case
        | Kw::CaseMid
        | Kw::End
        | Kw::As
        | Kw::JoinMod
        | Kw::Join
        | Kw::Limit
        | Kw::Offset
        | Kw::For
        | Kw::Top
        | Kw::SetQuant
        | Kw::Delay
        | Kw::Value => 0,
        Kw::On => SEEN_LOGIC,
        Kw::Into => SEEN_INTO,
        Kw::From => SEEN_FROM,
        Kw::By => SEEN_BY,
        Kw::Order | Kw::Group => SEEN_ORDER,
        Kw::Stmt(Stmt::Insert) => SEEN_INSERT,
        Kw::Stmt(Stmt::Delete) => SEEN_DELETE,
        Kw::Stmt(Stmt::Update) => SEEN_UPDATE,
        Kw::Stmt(Stmt::Set) => SEEN_SET,
        _ => return None,
    })
}

/// The classes of bytes for [`inert_with`]: letters and `_` (words), bytes that continue or
/// stop an expression without recording anything (digits, `. , : ; / ? { } [ ] +`, blanks and
/// controls), quotes (`'`, `"`, and every non-ASCII byte: typographic quotes fold to ASCII
/// ones), `#`, the bytes that are inert alone (`-`, `@`, `&`), and the others.
const B_WORD: u8 = 0;
const B_NEUTRAL: u8 = 1;
const B_QUOTE: u8 = 2;
const B_HASH: u8 = 3;
const B_SINGLE: u8 = 4;
const B_OTHER: u8 = 5;

const INERT_BYTES: [u8; 256] = {
    let mut t = [B_OTHER; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        t[c] = match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'_' => B_WORD,
            b'0'..=b'9' | b'.' | b',' | b':' | b';' | b'/' | b'?' | b'{' | b'}' | b'[' | b']' | b'+' => B_NEUTRAL,
            b'\'' | b'"' => B_QUOTE,
            b'#' => B_HASH,
            b'-' | b'@' | b'&' => B_SINGLE,
            0..=b' ' | 0x7f => B_NEUTRAL,
            0x80..=0xff => B_QUOTE,
            _ => B_OTHER,
        };
        c += 1;
    }
    t
};

const SEEN_ANY: u16 = 1;
const SEEN_INSERT: u16 = 1 << 1;
const SEEN_INTO: u16 = 1 << 2;
const SEEN_DELETE: u16 = 1 << 3;
const SEEN_FROM: u16 = 1 << 4;
const SEEN_UPDATE: u16 = 1 << 5;
const SEEN_SET: u16 = 1 << 6;
const SEEN_ORDER: u16 = 1 << 7;
const SEEN_BY: u16 = 1 << 8;
const SEEN_LOGIC: u16 = 1 << 9;

/// A set of words (ASCII case-insensitive) that may answer yes for a word it does not hold: a
/// 512-bit filter of a hash of each word.
#[derive(Default)]
struct WordSet([u64; 8]);

impl WordSet {
    /// A hash of the word's [`keywords::word_key`] (its length and first two and last two
    /// bytes, ASCII case folded): words equal ignoring ASCII case have the same. Taken from
    /// `mixed`, the key times [`keywords::MUL`] (the keyword table's product, computed once).
    #[inline(always)]
    fn bit(mixed: u64) -> usize {
        (mixed >> 55) as usize
    }

    #[inline(always)]
    fn insert_mixed(&mut self, mixed: u64) {
        let b = Self::bit(mixed);
        self.0[b / 64] |= 1 << (b % 64);
    }

    /// Whether the set may hold the word whose [`keywords::word_key`] times [`keywords::MUL`]
    /// is `mixed`.
    #[inline(always)]
    fn may_contain_mixed(&self, mixed: u64) -> bool {
        let b = Self::bit(mixed);
        self.0[b / 64] & (1 << (b % 64)) != 0
    }
}

/// Whether the keyword class `kw`, of the word that ends at `end` in `b`, cannot record a
/// structure in a value that [`inert_with`] accepts otherwise (no parenthesis, no comparison
/// or logic operator, no `@@`, no comment but `#` without keywords). `seen` collects the
/// keywords that need a partner ([`inert_with`] checks the pairs at the end).
///
/// How the automaton treats each class there: clause and expression words (AS, ASC/DESC,
/// JOIN and its modifiers, ON, LIMIT, OFFSET, FOR, TOP, ALL/DISTINCT, NOT, the prefix
/// operators, CASE/WHEN/THEN/ELSE/END, DELAY, INTO, FROM, BY, NULL/TRUE...) continue or stop an
/// expression without recording anything: what they lead to needs a comparison, a call, a
/// SELECT, a comment or a partner (ORDER then BY; INTO then OUTFILE; FROM after SELECT). ON
/// makes the rest a condition, which records only a comparison or a comment. OR/AND/XOR record
/// a bare truth value only when a literal follows them (a number, a string, NULL/TRUE...):
/// the next token, read from the bytes after the word (ASCII blanks skipped; a non-ASCII
/// character may be a blank or a folded quote, so it counts as a literal). DROP/CREATE/
/// ALTER/TRUNCATE record a statement only when the next token is an object word (TABLE,
/// USER, OR...). INSERT/REPLACE/MERGE need INTO, DELETE needs FROM, UPDATE needs SET, ORDER
/// and GROUP need BY; SET needs `=`; GRANT, LOAD, COPY, BEGIN, CALL, IF, USE, KILL, SHOW,
/// PREPARE are statements only as the first token after `;`. A comparison word (LIKE, IN, IS...) records a
/// structure only in a condition (after ON, OR, AND, XOR: none may come before it), against
/// a literal, or between two equal names: the next token must be a name (a word that is no
/// keyword, not a prefixed string `N'..'`) that no earlier word spells (a [`WordSet`] of
/// every word before it, and of the words after a number's digits). UNION, SELECT, WHERE,
/// HAVING, OUTFILE, PROCEDURE, EXEC, DECLARE, WAITFOR and SHUTDOWN are never inert.
/// `tests::inert_agrees_with_the_full_analysis` checks it on generated values made of every
/// class.
fn keyword_is_inert(kw: Kw, b: &[u8], start: usize, end: usize, seen: &mut u16, before: &WordSet) -> bool {
    // The first byte of the next token, and the word there (letters and `_`).
    let mut at = end;
    while at < b.len() && (b[at] <= b' ' || b[at] == 0x7f) {
        at += 1;
    }
    let next = b.get(at).copied();
    // The run of letters and `_` there ([`letters_end`]).
    let next_word = || &b[at..letters_end(b, at)];
    *seen |= SEEN_ANY;
    *seen |= match kw {
        Kw::AscDesc
        | Kw::Not
        | Kw::Prefix
        | Kw::Case
        | Kw::CaseMid
        | Kw::End
        | Kw::As
        | Kw::JoinMod
        | Kw::Join
        | Kw::Limit
        | Kw::Offset
        | Kw::For
        | Kw::Top
        | Kw::SetQuant
        | Kw::Delay
        | Kw::Value => 0,
        Kw::On => SEEN_LOGIC,
        // After NOT (`but not in`) or an operator (`7-in-1`, `plug-in`, `Status: in transit`),
        // the automaton stops at the comparison word.
        Kw::BinOp if after_operator_or_not(b, start) => 0,
        Kw::BinOp => {
            // A comparison records only under a condition (after ON, OR...), against a literal,
            // or between two equal names: the next token must be a name (a word that is no
            // keyword) that no word before it spells.
            let name = match next {
                Some(c) if c.is_ascii_alphabetic() || c == b'_' => {
                    let prefixed = b.get(at + 1).is_some_and(|&q| q == b'\'' || q >= 0x80) && matches!(c | 0x20, b'n' | b'e' | b'x' | b'b' | b'q');
                    let w = next_word();
                    // One key for the keyword table and the word set.
                    let mixed = keywords::word_key(w).wrapping_mul(keywords::MUL);
                    !prefixed && keywords::keyword_mixed(w, mixed) == Kw::None && !before.may_contain_mixed(mixed)
                }
                _ => false,
            };
            if !name || *seen & SEEN_LOGIC != 0 {
                return false;
            }
            0
        }
        Kw::Into => SEEN_INTO,
        Kw::From => SEEN_FROM,
        Kw::By => SEEN_BY,
        Kw::Order | Kw::Group => SEEN_ORDER,
        Kw::Logic => {
            let literal = match next {
                None => false,
                Some(c) if c.is_ascii_alphabetic() || c == b'_' => {
                    // `N'..'`, `X'..'`...: a string (also with a quote that folds to `'`).
                    let prefixed = b.get(at + 1).is_some_and(|&q| q == b'\'' || q >= 0x80) && matches!(c | 0x20, b'n' | b'e' | b'x' | b'b' | b'q');
                    prefixed || keywords::keyword_bytes(next_word()) == Kw::Value
                }
                Some(b'.') => b.get(at + 1).is_some_and(u8::is_ascii_digit),
                Some(c) => c.is_ascii_digit() || c == b'\'' || c == b'"' || c >= 0x80,
            };
            if literal {
                return false;
            }
            SEEN_LOGIC
        }
        Kw::Stmt(Stmt::Drop | Stmt::Create | Stmt::Alter | Stmt::Truncate) => {
            const OBJECTS: &[&[u8]] = &[
                b"table",
                b"database",
                b"schema",
                b"view",
                b"user",
                b"procedure",
                b"function",
                b"index",
                b"trigger",
                b"login",
                b"column",
                b"proc",
                b"role",
                b"temporary",
                b"or",
            ];
            let object = match next {
                Some(c) if c.is_ascii_alphabetic() || c == b'_' => {
                    let w = next_word();
                    OBJECTS.iter().any(|o| o.eq_ignore_ascii_case(w))
                }
                Some(c) => c >= 0x80,
                None => false,
            };
            if object {
                return false;
            }
            0
        }
        Kw::Stmt(Stmt::Insert) => SEEN_INSERT,
        Kw::Stmt(Stmt::Delete) => SEEN_DELETE,
        Kw::Stmt(Stmt::Update) => SEEN_UPDATE,
        Kw::Stmt(Stmt::Set) => SEEN_SET,
        Kw::Stmt(Stmt::Grant | Stmt::Load | Stmt::Copy | Stmt::Begin | Stmt::Call | Stmt::If | Stmt::Use | Stmt::Kill | Stmt::Show | Stmt::Prepare) => {
            // A statement only as the first token after `;` (ASCII blanks between; a non-ASCII
            // character may be a blank too).
            let mut p = start;
            while p > 0 && (b[p - 1] <= b' ' || b[p - 1] == 0x7f) {
                p -= 1;
            }
            if p > 0 && (b[p - 1] == b';' || b[p - 1] >= 0x80) {
                return false;
            }
            0
        }
        Kw::None => 0,
        Kw::Union
        | Kw::Select
        | Kw::Where
        | Kw::Having
        | Kw::Outfile
        | Kw::Procedure
        | Kw::Stmt(Stmt::Exec | Stmt::Declare | Stmt::Waitfor | Stmt::Shutdown) => return false,
    };
    true
}

/// The operator half of [`after_operator_or_not`] (for the tests).
#[cfg(test)]
fn after_operator(b: &[u8], start: usize) -> bool {
    let e = blanks_before(b, start);
    e > 0 && matches!(b[e - 1], b'-' | b'+' | b'/' | b':')
}

/// Where the run of ASCII blanks that ends at `start` begins.
#[inline(always)]
fn blanks_before(b: &[u8], start: usize) -> usize {
    let mut e = start;
    while e > 0 && (b[e - 1] <= b' ' || b[e - 1] == 0x7f) {
        e -= 1;
    }
    e
}

/// Whether the comparison word (LIKE, IN, IS...) that starts at `start` follows one of the
/// tokens `-`, `+`, `/`, `:` (ASCII blanks between): then every context stops there. In a value
/// that [`inert_with`] accepts up to the word, such a byte is a token of its own (`--`, `/*`,
/// `*/`, `->`, `:=` need bytes it refuses; a number such as `1e-5` takes the `-` only with a
/// digit after it; a word, a variable or a quoted identifier holds none, and inside a string
/// or `[...]` the word is no token either), and no quote stands between it and the word, so
/// a context that reaches the word has read that token right before it. After `-`, `+` the
/// automaton waits for an operand (a prefix, or the right side of an arithmetic operator),
/// after `/` and `::` too, or it has stopped (`/` cannot open an operand; `:` is no SQL token,
/// which every state refuses; every pending construct refuses these tokens but a statement's
/// head after `;`, which [`inert_with`] refuses); with no
/// parenthesis in such a value (no keyword comes with one), a comparison word is no operand,
/// so the context stops (`tests::inert_operator_comparisons_agree_with_the_full_analysis`).
///
/// Or whether it follows the token NOT,
/// which does not follow AS: then every context stops there. The automaton reads NOT after an
/// operand (or at the start, or after a logic keyword) as a prefix and waits for an operand; a
/// comparison word is none (a `(` after it, a call, is no longer [`inert_with`]'s business: no
/// keyword comes with a parenthesis). Only AS makes NOT a name (an alias), after which the
/// comparison would compare; every other construct that reads a word as a name wants a
/// word that is no keyword (INTO, a statement's object), or stops. `not` must be that token:
/// ASCII blanks between it and the comparison word, an ASCII blank or nothing before it (a
/// letter, a digit, `.`, `@`, `$` or a non-ASCII byte before it may make it part of another
/// token), and the token before it is not AS (a run of letters `as`, or a non-ASCII byte, which
/// may be a blank after one). A breakout context starts after a quote, and none stands
/// between NOT and the comparison word: a context that reaches the word reads NOT right before
/// it, as its first token or after another (`tests::inert_keywords_agree_with_the_full_analysis`,
/// `tests::inert_not_comparisons_agree_with_the_full_analysis`).
fn after_operator_or_not(b: &[u8], start: usize) -> bool {
    let blank = |c: u8| c <= b' ' || c == 0x7f;
    let e = blanks_before(b, start);
    if e > 0 && matches!(b[e - 1], b'-' | b'+' | b'/' | b':') {
        return true;
    }
    if e == start || e < 3 || !b[e - 3..e].eq_ignore_ascii_case(b"not") {
        return false;
    }
    if e > 3 && !blank(b[e - 4]) {
        return false;
    }
    let p = blanks_before(b, e - 3);
    let mut q = p;
    while q > 0 && (b[q - 1].is_ascii_alphabetic() || b[q - 1] == b'_') {
        q -= 1;
    }
    !(b[q..p].eq_ignore_ascii_case(b"as") || (q > 0 && q == p && b[q - 1] >= 0x80))
}

/// Whether `s` is a slug that no view and no context can record a structure in: ASCII letters,
/// digits, `_` and `-` only (`we-couldnt-understand-your-question-when-i-query-mongodb`), no
/// `--` (a comment), no keyword in its first part (before the first `-`; checked as [`inert`]
/// checks words, so `1union` counts), and no keyword right after a digit in the other parts
/// (`x-0x1fmatch-1`). Such a value has no quote (no breakout, no other view), no parenthesis
/// (no call), no comparison, no `@@`: the tokens are words, numbers and `-` operators. A
/// structure then needs the value to open with a keyword that continues the application's
/// value (`where-1`, `or-1`, `like-1`, `-where-x`) or a keyword operator right after an
/// operand; after a first operand, `-` must be followed by an operand, which a keyword is not,
/// so the automaton stops there. `tests::slug_shortcut_agrees_with_the_full_analysis` checks it against
/// [`analyze_all`] on random slugs made of every keyword.
#[cfg(test)]
fn slug_inert(s: &str) -> bool {
    slug_class(s) == Some(true)
}

/// Whether `s` is a slug ([`slug_bytes`]: ASCII letters, digits, `_` and `-`, no `--`), and
/// then whether it is [`slug_inert`]: `None` for a value that is no slug
/// (`tests::slug_inert_decides_part_by_part`).
fn slug_class(s: &str) -> Option<bool> {
    let b = s.as_bytes();
    let digits = slug_bytes(b)?;
    Some(b.first().is_some_and(|&c| c != b'-') && slug_parts_inert(s, digits))
}

/// [`slug_inert`] of a slug that does not open with `-`, `digits` if it holds one.
fn slug_parts_inert(s: &str, digits: bool) -> bool {
    let b = s.as_bytes();
    if !digits {
        // Every part but the first is one token, a word.
        return inert_with(&s[..memchr::memchr(b'-', b).unwrap_or(b.len())], false);
    }
    // One pass over the bytes, part by part, a table lookup per byte.
    let (mut start, mut i) = (0, 0);
    loop {
        // The part from `start`: which of letters and digits it holds.
        let mut kinds = 0u8;
        while i < b.len() {
            let k = SLUG_BYTES[b[i] as usize];
            if k & (S_DASH | S_BAD) != 0 {
                break;
            }
            kinds |= k;
            i += 1;
        }
        if i < b.len() && SLUG_BYTES[b[i] as usize] & S_BAD != 0 {
            return false;
        }
        // At the end or at a `-`; `--` is a comment.
        if b.get(i + 1) == Some(&b'-') && i < b.len() {
            return false;
        }
        // A later part is one token (a word, or a number) unless it mixes digits and
        // letters: then a keyword may stand right after a number (`0x1fmatch`, `1union`), as
        // an operator.
        if (start == 0 || kinds & (S_ALPHA | S_DIGIT) == S_ALPHA | S_DIGIT) && !inert_with(&s[start..i], false) {
            return false;
        }
        if i >= b.len() {
            return true;
        }
        i += 1;
        start = i;
    }
}

/// Whether `b` is made only of ASCII letters, digits, `_` and `-` without `--` (`None` if
/// not), and then whether it holds a digit: eight bytes at a time
/// (`tests::slug_bytes_agrees_with_the_byte_loop`).
fn slug_bytes(b: &[u8]) -> Option<bool> {
    const LO: u64 = 0x0101_0101_0101_0101;
    const M7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    const HI: u64 = !M7;
    // Per byte of `y` (ASCII: below 0x80, so no carry crosses bytes), the high bit where it is `c`.
    let eq = |y: u64, c: u8| {
        let t = y ^ (LO * u64::from(c));
        !((t + M7) | t) & HI
    };
    let (mut digits, mut last_dash) = (0u64, 0u64);
    let mut i = 0;
    while i < b.len() {
        let x = match b.get(i..i + 8) {
            Some(c) => u64::from_le_bytes(c.try_into().unwrap_or([0; 8])),
            // The last bytes: the eight that end the value, when it has eight (the bytes
            // already seen again, and `--` across the last chunk's end inside this one), else
            // the value padded with letters.
            None if b.len() >= 8 => {
                last_dash = 0;
                i = b.len() - 8;
                u64::from_le_bytes(b[i..].try_into().unwrap_or([0; 8]))
            }
            None => {
                let mut x = LO * u64::from(b'a');
                for (k, &c) in b.iter().enumerate() {
                    x = x & !(0xff << (8 * k)) | u64::from(c) << (8 * k);
                }
                x
            }
        };
        i += 8;
        let y = x & M7;
        let l = y | (LO * 0x20);
        let letter = (l + LO * u64::from(0x80 - b'a')) & !(l + LO * u64::from(0x80 - b'z' - 1)) & HI;
        let digit = (y + LO * u64::from(0x80 - b'0')) & !(y + LO * u64::from(0x80 - b'9' - 1)) & HI;
        let dash = eq(y, b'-');
        let good = (letter | digit | eq(y, b'_') | dash) & !x;
        // A dash right after a dash, in this chunk or across the last one's end.
        if good != HI || dash & (dash >> 8) != 0 || dash & last_dash != 0 {
            return None;
        }
        digits |= digit;
        last_dash = (dash >> 56) & 0x80;
    }
    Some(digits != 0)
}

/// The classes of bytes for [`slug_inert`]: ASCII letters, digits, `_` (none of the two), `-`,
/// and every other byte.
const S_ALPHA: u8 = 1;
const S_DIGIT: u8 = 2;
const S_UNDERSCORE: u8 = 4;
const S_DASH: u8 = 8;
const S_BAD: u8 = 16;

const SLUG_BYTES: [u8; 256] = {
    let mut t = [S_BAD; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        t[c] = match b {
            b'a'..=b'z' | b'A'..=b'Z' => S_ALPHA,
            b'0'..=b'9' => S_DIGIT,
            b'_' => S_UNDERSCORE,
            b'-' => S_DASH,
            _ => S_BAD,
        };
        c += 1;
    }
    t
};

/// `‘’‛′ʼ` to `'` and `“”″` to `"`, when present.
fn fold_quotes(s: &str) -> Option<String> {
    let wide = has_fullwidth_quote(s.as_bytes());
    if !wide && !has_typographic_quote(s.as_bytes()) {
        return None;
    }
    let mut out = String::with_capacity(s.len());
    if !wide {
        // Only the quotes change: copy the text between them (`tests::fold_quotes_folds_character_by_character`).
        let b = s.as_bytes();
        let mut lit = 0;
        for i in memchr::memchr2_iter(0xE2, 0xCA, b) {
            let (q, len) = match (b[i], b.get(i + 1), b.get(i + 2)) {
                (0xE2, Some(0x80), Some(0x98 | 0x99 | 0x9B | 0xB2)) | (0xCA, Some(0xBC), _) => ('\'', if b[i] == 0xE2 { 3 } else { 2 }),
                (0xE2, Some(0x80), Some(0x9C | 0x9D | 0xB3)) => ('"', 3),
                _ => continue,
            };
            out.push_str(&s[lit..i]);
            out.push(q);
            lit = i + len;
        }
        out.push_str(&s[lit..]);
        return Some(out);
    }
    for c in s.chars() {
        out.push(match c {
            '\u{2018}' | '\u{2019}' | '\u{201b}' | '\u{2032}' | '\u{02bc}' => '\'',
            '\u{201c}' | '\u{201d}' | '\u{2033}' => '"',
            // Fullwidth ASCII (`＇ ｏｒ １＝１－－`) and the ideographic space, which best-fit
            // conversions and NFKC turn into ASCII: folded only when a fullwidth quote can
            // break out of a string, so CJK prose with fullwidth brackets is left as it is.
            '\u{ff01}'..='\u{ff5e}' if wide => char::from_u32(c as u32 - 0xfee0).unwrap_or(c),
            '\u{3000}' if wide => ' ',
            c => c,
        });
    }
    Some(out)
}

/// Whether the UTF-8 text `b` holds a fullwidth apostrophe or quotation mark (`＇` U+FF07 is
/// `EF BC 87`, `＂` U+FF02 is `EF BC 82`).
fn has_fullwidth_quote(b: &[u8]) -> bool {
    memchr::memchr_iter(0xEF, b).any(|i| b.get(i + 1) == Some(&0xBC) && matches!(b.get(i + 2), Some(0x82 | 0x87)))
}

/// Whether the UTF-8 text `b` holds one of the quotes [`fold_quotes`] folds: `‘ ’ ‛ “ ”` are
/// `E2 80 98/99/9B/9C/9D`, `′ ″` are `E2 80 B2/B3`, `ʼ` is `CA BC` (in valid UTF-8 these lead
/// bytes start a character), found by `memchr` on the lead bytes rather than by decoding every
/// character (`tests::typographic_quotes_are_found_by_their_bytes`).
fn has_typographic_quote(b: &[u8]) -> bool {
    memchr::memchr2_iter(0xE2, 0xCA, b).any(|i| match b[i] {
        0xE2 => b.get(i + 1) == Some(&0x80) && matches!(b.get(i + 2), Some(0x98 | 0x99 | 0x9B | 0x9C | 0x9D | 0xB2 | 0xB3)),
        _ => b.get(i + 1) == Some(&0xBC),
    })
}

/// One URL-decoding layer (`%XX`, and `+` as a space) when the value contains `%XX`.
fn percent_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let hex = |c: u8| (c as char).to_digit(16);
    if !memchr::memchr_iter(b'%', b).any(|i| b.get(i + 1).is_some_and(|&c| hex(c).is_some()) && b.get(i + 2).is_some_and(|&c| hex(c).is_some())) {
        return None;
    }
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' if i + 2 < b.len() => match (hex(b[i + 1]), hex(b[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push((h * 16 + l) as u8);
                    i += 3;
                }
                _ => {
                    out.push(b'%');
                    i += 1;
                }
            },
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    Some(String::from_utf8_lossy(&out).into_owned())
}

fn analyze_view(s: &str, steps: &mut usize) -> Option<Finding> {
    // Fast path: a value of letters, digits, spaces and a few inert characters can carry no
    // breakout and no operator; only keyword sequences could matter, and those need two words.
    if s.bytes().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.' | b'@' | b':' | b'/' | b',')) {
        *steps += s.len();
        if !s.contains('-') && !s.contains('/') {
            return None;
        }
    }
    let mut best: Option<Finding> = None;
    let mut consider = |f: Option<Finding>| {
        if let Some(f) = f {
            if best.as_ref().is_none_or(|b| f.confidence > b.confidence) {
                best = Some(f);
            }
        }
    };
    consider(run(s, 0, 0, steps));
    // The pre-filters of [`scan_calls`] hold for every tail after a breakout when they hold for
    // nothing of `s`: a tail starts after a quote, so `union` at its start has no letter before
    // it in `s` either, and the word before a `(` of the tail is the word before it in `s`
    // (`tests::may_call_of_a_tail_implies_may_call_of_the_value`,
    // `tests::call_word_of_a_tail_implies_call_word_of_the_value`).
    let calls = may_call(s.as_bytes()) && may_call_word(s.as_bytes());
    if calls {
        consider(scan_calls(s, steps));
    }
    // Without a quote there is no breakout (one pass instead of one per quote and dialect).
    if memchr::memchr2(b'\'', b'"', s.as_bytes()).is_none() {
        *steps += s.len();
        return best;
    }
    for q in [b'\'', b'"'] {
        let mysql = breakout(s.as_bytes(), q, steps);
        if let Some(at) = mysql {
            consider(run(s, q, at, steps));
            // The calls and probes after the breakout (from the start, the quote opened a string).
            if calls {
                consider(scan_calls(&s[at..], steps));
            }
        }
        // In standard SQL (PostgreSQL's default, SQL Server, Oracle, SQLite) a backslash is an
        // ordinary character: `\' OR 1=1--` closes the string there.
        if let Some(at) = breakout_standard(s.as_bytes(), q, steps).filter(|&at| Some(at) != mysql) {
            consider(run(s, q, at, steps));
            if calls {
                consider(scan_calls(&s[at..], steps));
            }
        }
    }
    best
}

/// [`breakout`] where only a doubled quote escapes (a backslash is an ordinary character);
/// `None` when the value has no backslash before a quote (then both agree).
fn breakout_standard(b: &[u8], q: u8, steps: &mut usize) -> Option<usize> {
    if !memchr::memchr_iter(b'\\', b).any(|p| b.get(p + 1) == Some(&q)) {
        return None;
    }
    let mut i = 0;
    while let Some(p) = memchr::memchr(q, &b[i..]) {
        let j = i + p;
        *steps += p + 1;
        if b.get(j + 1) == Some(&q) {
            i = j + 2;
            continue;
        }
        return Some(j + 1);
    }
    None
}

/// Calls of time-based and out-of-band functions (`sleep(5)`, `xp_cmdshell '...'`,
/// `waitfor delay '0:0:5'`), dynamic SQL (`exec(@s)`) and conditionals on a comparison of two numbers (`case when
/// (5451=5451) then`, `iif(4861=6268,1,1/0)`: the boolean probes of blind injection) wherever
/// they are, even when the surrounding text does not fit one of the contexts (sqlmap payloads
/// for exotic contexts, nested queries): these do not occur in prose.
fn scan_calls(s: &str, steps: &mut usize) -> Option<Finding> {
    // A call needs `(`; `WAITFOR DELAY '...'` and `CASE WHEN` need their words (an apostrophe
    // in prose is neither).
    // `WHEN` only matters after `CASE` (the conditional probe), so `case` is looked for instead:
    // prose says "when" far more often than "case".
    if !may_call(s.as_bytes()) {
        return None;
    }
    let mut lx = Lexer::new(s);
    // The previous tokens, each with its keyword class (looked up once per word).
    let mut prev: Option<(Token<'_>, Kw)> = None;
    let mut prev2: Option<(Token<'_>, Kw)> = None;
    let mut prev3: Option<(Token<'_>, Kw)> = None;
    let mut found = None;
    // The conditional probe: 1 after CASE, 2 after IF/IIF, 3 in the condition (after WHEN or
    // `(`), 4 after its first number, 5 after the comparison.
    let mut cond = (0u8, None::<&str>);
    // UNION [ALL] SELECT and its first item: 1 after UNION, 2 after SELECT, 3 after the item.
    let mut union = (0u8, None::<&str>);
    // Calls that reveal the server (`version()`, `user()`, `@@version`): two are extraction.
    let mut info = (0u32, None::<&str>);
    for t in lx.by_ref() {
        let kw = if t.kind == Kind::Word { keyword(t.text) } else { Kw::None };
        if matches!(t.kind, Kind::Comment { .. }) {
            if union.0 == 3 {
                found = union.1.map(|u| (u, 75, "UNION SELECT of a column list"));
                break;
            }
            continue;
        }
        union = match (union.0, t.kind) {
            (1, Kind::Word) if kw == Kw::SetQuant => union,
            (1, Kind::Word) if kw == Kw::Select => (2, union.1),
            (2, Kind::Num | Kind::Var | Kind::Str { .. }) => (3, union.1),
            (2, Kind::Word) if kw == Kw::Value || kw == Kw::None => (3, union.1),
            (2, Kind::Op) if t.text == "*" => (3, union.1),
            (3, Kind::Comma) => {
                found = union.1.map(|u| (u, 75, "UNION SELECT of a column list"));
                break;
            }
            (3, Kind::Word) if kw == Kw::From => {
                found = union.1.map(|u| (u, 75, "UNION SELECT of a column list"));
                break;
            }
            _ if kw == Kw::Union && t.text.eq_ignore_ascii_case("union") => (1, Some(t.text)),
            _ => (0, None),
        };
        if t.kind == Kind::Var && t.text.starts_with("@@") && prev.is_some_and(|(x, _)| matches!(x.kind, Kind::Comma | Kind::LParen | Kind::Op)) {
            info = (info.0 + 1, info.1.or(Some(t.text)));
        }
        cond = match (cond.0, t.kind) {
            (1, Kind::Word) if t.text.eq_ignore_ascii_case("when") => (3, cond.1),
            (2, Kind::LParen) | (3, Kind::LParen) => (3, cond.1),
            (3, Kind::Num) => (4, cond.1),
            // `==` is a script comparison (`if (1 == 1) {`), not SQL's.
            (4, Kind::Op) if is_cmp(t.text) && t.text != "==" => (5, cond.1),
            (5, Kind::Num) => {
                found = cond.1.map(|c| (c, 75, "conditional on a comparison of two numbers (boolean probe)"));
                break;
            }
            _ if kw == Kw::Case => (1, Some(t.text)),
            _ if t.kind == Kind::Word && (t.text.eq_ignore_ascii_case("if") || t.text.eq_ignore_ascii_case("iif")) => (2, Some(t.text)),
            _ => (0, None),
        };
        if let (Some((p, pkw)), Some((f, fkw))) = (prev2, prev) {
            if p.kind == Kind::Word
                && f.kind == Kind::LParen
                && matches!(t.kind, Kind::Num | Kind::Str { .. } | Kind::Word | Kind::Var | Kind::LParen)
                && matches!(function(p.text), Func::Time | Func::Oob)
                && !frame_location(s, p.text)
                && !log_message_call(s, p.text)
                && !prev3.is_some_and(|(x, _)| x.kind == Kind::Word && x.text.eq_ignore_ascii_case("await"))
            {
                found = Some((p.text, 70, "time-based or out-of-band function call"));
                break;
            }
            // `exec(@s)`: a string variable executed as SQL (MSSQL dynamic SQL).
            if p.kind == Kind::Word && f.kind == Kind::LParen && t.kind == Kind::Var && pkw == Kw::Stmt(Stmt::Exec) {
                found = Some((p.text, 75, "a variable executed as SQL"));
                break;
            }
            if p.kind == Kind::Word && pkw == Kw::Stmt(Stmt::Waitfor) && fkw == Kw::Delay && matches!(t.kind, Kind::Str { .. }) {
                found = Some((p.text, 70, "time-based or out-of-band function call"));
                break;
            }
            // Counted as an argument or operand (`concat_ws(0x3a,version(),user())`), not in prose.
            let operand = prev3.is_some_and(|(x, _)| matches!(x.kind, Kind::Comma | Kind::LParen | Kind::Op));
            if operand && p.kind == Kind::Word && f.kind == Kind::LParen && t.kind == Kind::RParen && function(p.text) == Func::Info {
                info = (info.0 + 1, info.1.or(Some(p.text)));
            }
            // `ascii(substring(col,1,1))`: one character of a value at a time (blind extraction).
            if p.kind == Kind::Word
                && f.kind == Kind::LParen
                && t.kind == Kind::Word
                && ["ascii", "ord", "unicode"].iter().any(|n| p.text.eq_ignore_ascii_case(n))
                && ["substring", "substr", "mid"].iter().any(|n| t.text.eq_ignore_ascii_case(n))
            {
                found = Some((p.text, 70, "character-by-character extraction (blind)"));
                break;
            }
        }
        prev3 = prev2;
        prev2 = prev;
        prev = Some((t, kw));
    }
    *steps += lx.steps;
    if found.is_none() && info.0 >= 2 {
        found = info.1.map(|f| (f, 70, "server information functions (extraction)"));
    }
    let (f, confidence, why) = found?;
    let at = f.as_ptr() as usize - s.as_ptr() as usize;
    Some(Finding { confidence, why, fragment: truncate(&s[at..], 64).to_string() })
}

/// A time-based call that opens an English log message (`sleep(250) then retry`,
/// `benchmark(5000) took 1234ms`): the call is the value's first token, its arguments close,
/// and what follows is words of a sentence. In SQL an expression can be followed by an
/// operator, a clause, a comment or `;`, or one alias; a word that is none of these followed
/// by another word or number is prose, and so is the call before it. The injection forms
/// keep their grammar: after a breakout or an operator the call is not first (`1 and
/// sleep(5)`), a stacked or commented call is followed by `;`, `#`, `--` (`sleep(5)-- -`),
/// a condition by its operator (`sleep(5) and 1=1`), an alias by nothing or a clause.
fn log_message_call(src: &str, name: &str) -> bool {
    let Some(at) = (name.as_ptr() as usize).checked_sub(src.as_ptr() as usize) else { return false };
    let Some(before) = src.get(..at) else { return false };
    // First in the message, or after a sentence's word (`drained before sleep(250)
    // completed`): a word that is not SQL's cannot precede a call in SQL.
    let first = error_label(before);
    let in_sentence = !first && {
        let last = before.trim_end();
        let w = &last[last.bytes().rposition(|c| !c.is_ascii_alphabetic()).map_or(0, |i| i + 1)..];
        w.len() >= 2 && w.len() < last.len() && last[..last.len() - w.len()].ends_with([' ', '\t']) && keyword(w) == Kw::None && before.len() > last.len()
    };
    if !(first || in_sentence) {
        return false;
    }
    let Some(rest) = src.get(at + name.len()..) else { return false };
    let Some(inner) = rest.trim_start_matches([' ', '\t']).strip_prefix('(') else { return false };
    // The arguments: the first `)` closes them when none opens inside (numbers, a name).
    let Some(end) = inner.find(')') else { return false };
    if inner[..end].bytes().any(|b| matches!(b, b'(' | b'\'' | b'"' | b'`' | b';' | b'#')) {
        return false;
    }
    // The message's line: a stack trace's frames follow on the next ones.
    let mut lines = inner[end + 1..].split(['\n', '\r']).filter(|l| !l.trim().is_empty());
    let after = inner[end + 1..].split(['\n', '\r']).next().unwrap_or("");
    let stack_follows = after.trim().len() < inner[end + 1..].trim_end().len() && lines.nth(1).is_some_and(stack_frame_line);
    // Nothing of SQL's own punctuation in the sentence: no quote, comment, statement end,
    // comparison or call.
    if after.bytes().any(|b| matches!(b, b'\'' | b'"' | b'`' | b';' | b'#' | b'=' | b'<' | b'>' | b'(' | b')' | b'|' | b'&'))
        || after.contains("--")
        || after.contains("/*")
    {
        return false;
    }
    // What may follow an expression in SQL (an operator word, a clause, a set operation).
    const CONTINUES: &[&str] = &[
        "and",
        "or",
        "xor",
        "not",
        "is",
        "in",
        "like",
        "rlike",
        "regexp",
        "between",
        "div",
        "mod",
        "from",
        "where",
        "union",
        "intersect",
        "except",
        "into",
        "as",
        "order",
        "group",
        "limit",
        "having",
        "procedure",
        "for",
        "collate",
        "sounds",
        "escape",
        "offset",
        "fetch",
        "window",
    ];
    let mut words = after.split_whitespace().map(|w| w.trim_end_matches([',', '.', ':', '!', '?', '\u{2026}']));
    let Some(next) = words.next() else { return false };
    if in_sentence {
        return !next.is_empty() && next.bytes().all(|b| b.is_ascii_alphanumeric()) && !CONTINUES.iter().any(|k| next.eq_ignore_ascii_case(k));
    }
    let second = match words.next() {
        Some(w) => w,
        // One word, then the frames of a stack trace: the message of an exception.
        None if stack_follows => "0",
        None => return false,
    };
    let first = next;
    let word = |w: &str| !w.is_empty() && w.bytes().all(|b| b.is_ascii_alphabetic()) && !CONTINUES.iter().any(|k| w.eq_ignore_ascii_case(k));
    let number_or_word = |w: &str| !w.is_empty() && w.bytes().all(|b| b.is_ascii_alphanumeric()) && !CONTINUES.iter().any(|k| w.eq_ignore_ascii_case(k));
    word(first) && first.len() >= 2 && number_or_word(second)
}

/// A line of a JavaScript stack trace: `at name (location:line:column)`, `at location:line`
/// (V8), `name@location:line:column` (Firefox, Safari).
fn stack_frame_line(l: &str) -> bool {
    let t = l.trim();
    let t = t.strip_suffix(')').unwrap_or(t);
    let b = t.as_bytes();
    let num = |end: usize| b[..end].iter().rev().take_while(|c| c.is_ascii_digit()).count();
    let n = num(b.len());
    if n == 0 || b.len() <= n || b[b.len() - n - 1] != b':' {
        return false;
    }
    (t.starts_with("at ") || t.contains('@')) && !t.contains(['\'', '"', ';'])
}

/// Whether `before` (what precedes a call in a value) is nothing, or the label a log message
/// or an exception opens with: names ending in `:` (`Error:`, `Uncaught TypeError:`,
/// `[worker] RangeError:`), which SQL never puts before an expression.
fn error_label(before: &str) -> bool {
    let t = before.trim();
    if t.is_empty() {
        return true;
    }
    let Some(head) = t.strip_suffix(':') else { return false };
    !head.is_empty()
        && head.len() <= 64
        && head.split_whitespace().all(|w| {
            let w = w.trim_start_matches('[').trim_end_matches(']');
            !w.is_empty() && w.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
        })
        && head.bytes().next().is_some_and(|b| b.is_ascii_alphabetic() || b == b'[')
}

/// Whether the word `name` (a slice of `src`) is followed by a parenthesised source location,
/// `(https://cdn.example/app.js:10:5)`, `(/app/index.js:3)`, `(bench.js:4:2)`: a frame of a
/// JavaScript (V8, `at sleep (...)`) or similar stack trace naming the function that ran, not
/// a call (an argument list of SQL holds no `name:line:column`). Error-report and telemetry
/// bodies are full of them.
fn frame_location(src: &str, name: &str) -> bool {
    let Some(at) = (name.as_ptr() as usize).checked_sub(src.as_ptr() as usize) else { return false };
    let Some(rest) = src.get(at + name.len()..) else { return false };
    let Some(inner) = rest.trim_start_matches([' ', '\t']).strip_prefix('(') else { return false };
    let Some(end) = inner.find(')') else { return false };
    file_line_col(&inner[..end])
}

/// Whether the `@` token `var` of `src` begins a stack frame's location in the format of
/// Firefox and Safari (`exec@https://cdn.example/app.js:12:3`, `exec@/app/x.js:4:1`): the text
/// from after the `@` to the next blank is [`file_line_col`].
fn at_frame_location(src: &str, var: &str) -> bool {
    let Some(at) = (var.as_ptr() as usize).checked_sub(src.as_ptr() as usize) else { return false };
    let Some(rest) = src.get(at + 1..) else { return false };
    file_line_col(rest.split([' ', '\t', '\n', '\r']).next().unwrap_or(""))
}

/// `file:line` or `file:line:column`, the file with a `.` or a `/` (or V8's `<anonymous>`), no
/// blank, bracket or quote.
fn file_line_col(loc: &str) -> bool {
    if loc.is_empty() || loc.bytes().any(|b| b.is_ascii_whitespace() || b == b'(' || b == b'\'' || b == b'"') {
        return false;
    }
    let mut parts = loc.rsplitn(3, ':');
    let last = parts.next().unwrap_or("");
    let digits = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
    if !digits(last) {
        return false;
    }
    let file = match (parts.next(), parts.next()) {
        (Some(line), Some(file)) if digits(line) => file,
        (Some(file), _) => file,
        _ => return false,
    };
    // (`<anonymous>`: V8's name for code evaluated without a file.)
    !file.is_empty() && file.bytes().any(|b| b == b'.' || b == b'/') || file == "<anonymous>"
}

/// The pre-filter of [`scan_calls`]: a `(`, `waitfor`, `case` (any case) or the word `union`
/// (no letter before or after it). One pass over eight bytes at a time marks the bytes that
/// are `(` or one of the letters `w c u` (any case); only those are looked at
/// (`tests::may_call_finds_what_its_searches_find`).
fn may_call(b: &[u8]) -> bool {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    // Every byte set to `c`.
    const fn all(c: u8) -> u64 {
        LO * c as u64
    }
    // The high bit of every byte of `x` that is zero (exact: no carry between bytes).
    let zero = |x: u64| !(((x & !HI) + !HI) | x | !HI);
    let word_at = |i: usize, w: &[u8]| b[i..].get(..w.len()).is_some_and(|x| x.eq_ignore_ascii_case(w));
    let mut at = 0;
    while at < b.len() {
        let x = match b.get(at..at + 8) {
            Some(c) => u64::from_le_bytes(c.try_into().unwrap_or([0; 8])),
            // The last bytes: the eight that end the value, when it has eight (bytes seen
            // again, whose hits are hits all the same), else the value padded with zeros (no
            // hit). Not a copy of a variable length, which is a call per chunk
            // (`tests::may_call_finds_what_its_searches_find`).
            None if b.len() >= 8 => {
                at = b.len() - 8;
                u64::from_le_bytes(b[at..].try_into().unwrap_or([0; 8]))
            }
            None => b.iter().rev().fold(0, |x, &c| x << 8 | u64::from(c)),
        };
        let l = x | all(0x20);
        let mut m = zero(x ^ all(b'(')) | zero(l ^ all(b'w')) | zero(l ^ all(b'c')) | zero(l ^ all(b'u'));
        while m != 0 {
            let i = at + (m.trailing_zeros() / 8) as usize;
            m &= m - 1;
            let hit = match b[i] | 0x20 {
                _ if b[i] == b'(' => true,
                b'w' => word_at(i, b"waitfor"),
                b'c' => word_at(i, b"case"),
                _ => has_union_at(b, i),
            };
            if hit {
                return true;
            }
        }
        at += 8;
    }
    false
}

/// The second pre-filter of [`scan_calls`], for a value that [`may_call`] lets through: false
/// when a `(` is all it has, and no `(` follows a word that can make a call finding. Every
/// finding of [`scan_calls`] but those of UNION, CASE, WAITFOR (words [`may_call`] looks for)
/// and `@@` variables (two of them are extraction) needs a word token right before a `(`
/// token: a time or out-of-band function (`sleep(`), an information function (`version()`),
/// EXEC (`exec(@s)`), ASCII/ORD/UNICODE (`ascii(substring(`), IF/IIF (the conditional probe).
/// Without a comment (`--`, `#`, `/*`: [`scan_calls`] skips them, so the token before a `(`
/// may stand before one) the token before a `(` is read from the bytes: ASCII blanks
/// skipped, then the run of bytes a word can hold (letters, digits, `_`, `$`, `.`, non-ASCII).
/// A run of ASCII letters and `_` only, after a byte that no token ends a word with, is that
/// word token when the lexer makes one there (a word is maximal; numbers, strings, variables and
/// operators end in no letter); anything else (a digit, a qualified name, `$`, a non-ASCII
/// byte before the `(`, which may be a Unicode blank, `\N`) is taken as a possible call.
/// `tests::may_call_word_agrees_with_scan_calls` checks that [`scan_calls`] finds nothing
/// where it says false.
fn may_call_word(b: &[u8]) -> bool {
    let Some(first) = memchr::memchr(b'(', b) else { return true };
    if memchr::memchr(b'#', b).is_some()
        || crate::other_util::find_short(b, b"--").is_some()
        || crate::other_util::find_short(b, b"/*").is_some()
        || crate::other_util::find_short(b, b"@@").is_some()
    {
        return true;
    }
    let word_at = |i: usize, w: &[u8]| b[i..].get(..w.len()).is_some_and(|x| x.eq_ignore_ascii_case(w));
    if memchr::memchr2_iter(b'w', b'W', b).any(|i| word_at(i, b"waitfor"))
        || memchr::memchr2_iter(b'c', b'C', b).any(|i| word_at(i, b"case"))
        || memchr::memchr2_iter(b'u', b'U', b).any(|i| has_union_at(b, i))
    {
        return true;
    }
    let in_run = |c: u8| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'$' | b'.') || c >= 0x80;
    for i in std::iter::once(first).chain(memchr::memchr_iter(b'(', &b[first + 1..]).map(|p| first + 1 + p)) {
        let mut e = i;
        while e > 0 && (b[e - 1] <= b' ' || b[e - 1] == 0x7f) {
            e -= 1;
        }
        let mut j = e;
        while j > 0 && in_run(b[j - 1]) {
            j -= 1;
        }
        let w = &b[j..e];
        if w.is_empty() {
            continue;
        }
        if !w.iter().all(|&c| c.is_ascii_alphabetic() || c == b'_') || (j > 0 && b[j - 1] == b'\\') {
            return true;
        }
        if CALL_WORDS.contains_ignore_case(w) {
            return true;
        }
    }
    false
}

/// The words before a `(` that [`may_call_word`] takes as a possible call finding: the
/// unqualified names [`keywords::function`] classifies as time, out-of-band or information
/// functions, the EXEC keywords, ASCII/ORD/UNICODE and IF/IIF
/// (`tests::call_words_are_the_call_finding_words` reads `function`'s source to keep the list
/// complete).
static CALL_WORDS: std::sync::LazyLock<crate::other_util::SortedWords> = std::sync::LazyLock::new(|| crate::other_util::SortedWords::new(CALL_WORD_LIST));

const CALL_WORD_LIST: &[&str] = &[
    // Time.
    "sleep",
    "benchmark",
    "pg_sleep",
    "pg_sleep_for",
    "pg_sleep_until",
    "randomblob",
    "receive_message",
    // Out-of-band.
    "load_file",
    "xp_cmdshell",
    "xp_dirtree",
    "xp_fileexist",
    "xp_regread",
    "xp_regwrite",
    "xp_servicecontrol",
    "xp_availablemedia",
    "xp_subdirs",
    "xp_ntsec_enumdomains",
    "xp_terminate_process",
    "xp_makecab",
    "sp_oacreate",
    "sp_oamethod",
    "sp_executesql",
    "sp_makewebtask",
    "sp_addlogin",
    "sp_addsrvrolemember",
    "sp_password",
    "sp_configure",
    "openrowset",
    "opendatasource",
    "openquery",
    "lo_import",
    "lo_export",
    "lo_get",
    "pg_read_file",
    "pg_read_binary_file",
    "pg_ls_dir",
    "pg_stat_file",
    "dblink",
    "dblink_exec",
    "load_extension",
    "httpuritype",
    "request",
    "get_host_address",
    "get_host_name",
    "fopen",
    "runjava",
    "sys_eval",
    "sys_exec",
    "writefile",
    "readfile",
    // Information.
    "version",
    "database",
    "user",
    "schema",
    "current_user",
    "system_user",
    "session_user",
    "db_name",
    "user_name",
    "suser_name",
    "suser_sname",
    "host_name",
    "is_srvrolemember",
    "is_member",
    "current_database",
    "current_schema",
    "pg_backend_pid",
    "sqlite_version",
    "connection_id",
    "last_insert_id",
    "sys_context",
    "userenv",
    "uid",
    "serverproperty",
    "object_id",
    "object_name",
    "col_name",
    "has_dbaccess",
    "inet_server_addr",
    "getuserid",
    "current_setting",
    "sqlite_source_id",
    // EXEC, blind extraction, the conditional probe.
    "exec",
    "execute",
    "ascii",
    "ord",
    "unicode",
    "if",
    "iif",
];

/// Whether `b` holds the word `union` (any case) at `i`, with no letter before or after it.
fn has_union_at(b: &[u8], i: usize) -> bool {
    b[i..].get(..5).is_some_and(|x| x.eq_ignore_ascii_case(b"union"))
        && (i == 0 || !b[i - 1].is_ascii_alphabetic())
        && b.get(i + 5).is_none_or(|c| !c.is_ascii_alphabetic())
}

/// The index just after the quote that closes a string of quote `q` opened before the value:
/// the first `q` that is neither doubled nor backslash-escaped.
fn breakout(b: &[u8], q: u8, steps: &mut usize) -> Option<usize> {
    let mut i = 0;
    // Jump from quote or backslash to the next (most values hold neither).
    while i < b.len() {
        let Some(p) = memchr::memchr2(q, b'\\', &b[i..]) else {
            *steps += b.len() - i;
            return None;
        };
        let j = i + p;
        *steps += p + 1;
        if b[j] == b'\\' {
            i = j + 2;
            continue;
        }
        if b.get(j + 1) == Some(&q) {
            i = j + 2;
            continue;
        }
        return Some(j + 1);
    }
    None
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum St {
    /// Beginning of an as-is value: an operand, an operator continuing the app's value, or a statement.
    Start,
    Operand,
    Operator,
    /// After `;`: a statement.
    Stmt,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pending {
    None,
    /// After UNION: ALL/DISTINCT, SELECT or `(`.
    Union,
    /// After ORDER/GROUP: BY.
    By,
    /// After INTO: OUTFILE/DUMPFILE, a variable or a table.
    Into,
    /// After OUTFILE: the file name.
    File,
    /// After AS: an alias.
    As,
    /// After LEFT/RIGHT/...: JOIN or OUTER.
    Join,
    /// After WAITFOR: DELAY/TIME then a string.
    Waitfor,
    /// After a statement keyword: its object (checked by `stmt_head`).
    StmtHead(Stmt),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum End {
    Eof,
    Comment,
    OpenString,
    Invalid,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Opnd {
    Literal,
    Ident,
    Call,
    Var,
}

struct Parser<'a> {
    lx: Lexer<'a>,
    peeked: Option<Option<Token<'a>>>,
    quote: u8,
    st: St,
    pending: Pending,
    depth: i64,
    best: u8,
    why: &'static str,
    /// Strongest expression-level structure (tautology, clause after the value): these need a
    /// breakout to mean anything, so they are lowered when the value is an expression of its own.
    expr_best: u8,
    expr_why: &'static str,
    /// The value starts with a clause and no quote (`where ...`, `order by ...`): see
    /// [`HEAD_CLAUSE`].
    head_clause: bool,
    /// The text before the breaking quote is one token (`admin'`, `1'`), not prose.
    prefix_single: bool,
    prefix_empty: bool,
    /// A logic operator was seen anywhere.
    logic_seen: bool,
    last_text: &'a str,
    cmp_lhs_text: &'a str,
    /// A logic operator (AND/OR/XOR/&&/||) was seen and its right side is being parsed.
    logic: bool,
    /// Operand kind before the last comparison operator (`None`: no comparison pending).
    cmp_lhs: Option<Opnd>,
    last: Opnd,
    alias_ok: bool,
    /// Tokens consumed since the breakout.
    n: usize,
    /// The value starts with a plain identifier (as-is context): it is an expression of its own,
    /// not a continuation of the application's value.
    ident_start: bool,
    /// A SELECT is open (for FROM) at this depth.
    select_depth: Option<i64>,
    /// The statement being checked started the value or followed an expression without `;`.
    stacked_head: bool,
    /// The statement being checked follows an expression without `;` (MSSQL juxtaposition).
    juxtaposed: bool,
    select_at_start: bool,
    /// The select list has a literal, a call or a variable (not only column names).
    select_items: bool,
    case_seen: bool,
    /// A comparison directly after the breakout (`'='`, `x'^0!='1`, `aa' like '0`).
    direct_cmp: bool,
    alias_used: bool,
    direct_cmp_armed: bool,
    /// As `direct_cmp_armed` after prose: a symbol quoted in a sentence (`token '<', ...`).
    quoted_symbol_armed: bool,
    /// An arithmetic operator since the last comparison or logic operator; `cmp_arith`: on
    /// the left side of the comparison being read (`1 + 1 = 2`).
    arith: bool,
    cmp_arith: bool,
    last_kind: Kind,
    steps: usize,
    /// The as-is value starts with ORDER/GROUP: no operand of the application's before it
    /// (`order by price` is a search, `1 order by 5` a column probe).
    by_at_start: bool,
    /// The whole value.
    src: &'a str,
}

/// Letters, digits, `_` and `-` only, with at least one `-`: a slug or an identifier.
fn is_slug(s: &str) -> bool {
    s.contains('-') && s.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_')
}

/// Runs the automaton over `s[at..]` in the context `quote` (0: as-is).
fn run(s: &str, quote: u8, at: usize, steps: &mut usize) -> Option<Finding> {
    run_ended(s, quote, at, steps).0
}

/// [`run`], whether the continuation ends cleanly in its context (at a comment, in a string
/// the application's closing quote closes, or as-is at the end of a complete expression or
/// statement), and whether it ends at a comment.
fn run_ended(s: &str, quote: u8, at: usize, steps: &mut usize) -> (Option<Finding>, bool, bool) {
    let tail = &s[at..];
    let mut p = Parser {
        lx: Lexer::new(tail),
        peeked: None,
        quote,
        st: if quote == 0 { St::Start } else { St::Operator },
        pending: Pending::None,
        depth: 0,
        best: 0,
        why: "",
        logic: false,
        expr_best: 0,
        head_clause: false,
        expr_why: "",
        prefix_single: !s[..at.saturating_sub(1)].bytes().any(|c| c <= b' '),
        prefix_empty: at <= 1,
        logic_seen: false,
        last_text: "",
        cmp_lhs_text: "",
        cmp_lhs: None,
        last: Opnd::Literal,
        alias_ok: quote != 0,
        n: 0,
        ident_start: false,
        select_depth: None,
        stacked_head: false,
        juxtaposed: false,
        select_at_start: false,
        select_items: false,
        case_seen: false,
        direct_cmp: false,
        alias_used: false,
        direct_cmp_armed: false,
        quoted_symbol_armed: false,
        arith: false,
        cmp_arith: false,
        last_kind: Kind::Other,
        steps: 0,
        by_at_start: false,
        src: s,
    };
    let mut end = p.parse();
    if end == End::Eof && p.last_kind == (Kind::Str { quote, closed: false }) && quote != 0 {
        end = End::OpenString;
    }
    if p.direct_cmp && end == End::OpenString {
        p.signal_expr(60, "string breakout then comparison");
    }
    *steps += p.steps + p.lx.steps;
    let clean = match end {
        End::Comment | End::OpenString => true,
        End::Eof => quote == 0 && p.st != St::Operand && p.pending == Pending::None,
        End::Invalid => false,
    };
    if p.logic_seen && end == End::Comment {
        p.signal_expr(65, "boolean expression then comment");
    }
    let mut expr = p.expr_best;
    if p.ident_start {
        expr = expr.saturating_sub(25);
    }
    let (mut c, why) = if expr > p.best { (expr, p.expr_why) } else { (p.best, p.why) };
    if c == 0 {
        return (None, clean, end == End::Comment);
    }
    if c < 90 && !clean {
        // A value that begins with a clause word and does not go on as SQL is a sentence
        // (`Where are you from?`, `Order by phone: +1 ...`): no fragment of a query either.
        let sentence = p.head_clause && expr > p.best && expr == HEAD_CLAUSE;
        c = c.saturating_sub(if sentence { 25 } else { 10 });
    }
    let frag_start = if quote == 0 { 0 } else { at.saturating_sub(1) };
    (Some(Finding { confidence: c, why, fragment: truncate(&s[frag_start..], 64).to_string() }), clean, end == End::Comment)
}

/// Confidence of a clause (`WHERE`, `ORDER BY` a name) that begins a value without a quote:
/// SQL of its own when the rest parses, a strict probe; lowered below every level when it does
/// not.
const HEAD_CLAUSE: u8 = 50;

/// Keywords that are also function names when a `(` follows (`left(`, `if(`, `like(`, `time(`...).
fn callable(kw: Kw) -> bool {
    matches!(kw, Kw::None | Kw::Value | Kw::JoinMod | Kw::Stmt(Stmt::If | Stmt::Insert) | Kw::Delay | Kw::Outfile | Kw::BinOp)
}

fn is_cmp(op: &str) -> bool {
    // On the bytes (a slice pattern compares lengths and bytes; a `&str` pattern calls `memcmp`).
    matches!(op.as_bytes(), b"=" | b"==" | b"<" | b">" | b"<=" | b">=" | b"<>" | b"!=" | b"<=>" | b"!<" | b"!>")
}

fn is_binop(op: &str) -> bool {
    !matches!(op.as_bytes(), b"!" | b"~")
}

impl<'a> Parser<'a> {
    fn next(&mut self) -> Option<Token<'a>> {
        self.steps += 1;
        let t = match self.peeked.take() {
            Some(t) => t,
            None => self.lx.next(),
        };
        if let Some(t) = t {
            self.last_kind = t.kind;
        }
        t
    }

    fn peek(&mut self) -> Option<Token<'a>> {
        if self.peeked.is_none() {
            self.peeked = Some(self.lx.next());
        }
        self.peeked.flatten()
    }

    /// Peek past closed inline comments (`/**/` is whitespace).
    fn peek_kind(&mut self) -> Option<Kind> {
        loop {
            let t = self.peek()?;
            if t.kind == (Kind::Comment { to_eof: false }) && t.text.starts_with("/*") {
                self.next();
                continue;
            }
            return Some(t.kind);
        }
    }

    fn signal(&mut self, c: u8, why: &'static str) {
        if c > self.best {
            self.best = c;
            self.why = why;
        }
    }

    fn signal_expr(&mut self, c: u8, why: &'static str) {
        if c > self.expr_best {
            self.expr_best = c;
            self.expr_why = why;
        }
    }

    fn parse(&mut self) -> End {
        loop {
            let Some(t) = self.next() else {
                return End::Eof;
            };
            self.n += 1;
            match t.kind {
                Kind::Comment { to_eof: true } => {
                    // `<a href="#" ...>` after prose: the value's own quoted `#` (a link to
                    // nowhere), not a comment after a breakout.
                    let quoted_hash = !self.prefix_single && t.text.as_bytes().get(1) == Some(&self.quote) && t.text.starts_with('#');
                    if self.quote != 0 && self.n == 1 + self.leading_parens() && !quoted_hash {
                        // `admin'--`, `1')/*`; `#` is MySQL-only and common in prose (`7" #2`).
                        let c = match (t.text.starts_with('#'), self.prefix_single) {
                            (false, true) => 60,
                            (true, true) => 55,
                            _ => 40,
                        };
                        self.signal_expr(c, "string breakout then comment");
                    }
                    return End::Comment;
                }
                Kind::Comment { to_eof: false } => {
                    self.n -= 1;
                    continue;
                }
                _ => {}
            }
            if !self.step(t) {
                return End::Invalid;
            }
            if let Some(End::OpenString) = self.open_string_end(t) {
                return End::OpenString;
            }
        }
    }

    fn leading_parens(&self) -> usize {
        if self.depth < 0 {
            (-self.depth) as usize
        } else {
            0
        }
    }

    fn open_string_end(&self, t: Token<'a>) -> Option<End> {
        match t.kind {
            Kind::Str { quote, closed: false } if quote == self.quote => Some(End::OpenString),
            _ => None,
        }
    }

    /// One token; false when it cannot continue SQL.
    fn step(&mut self, t: Token<'a>) -> bool {
        let kw = if t.kind == Kind::Word { keyword(t.text) } else { Kw::None };
        // Multi-token constructs first.
        match self.pending {
            Pending::None => {}
            Pending::Union => {
                return match (t.kind, kw) {
                    (_, Kw::SetQuant) => true,
                    (_, Kw::Select) => {
                        self.pending = Pending::None;
                        self.signal(95, "UNION SELECT");
                        self.begin_select();
                        true
                    }
                    (Kind::LParen, _) => {
                        self.depth += 1;
                        self.st = St::Operand;
                        self.pending = Pending::None;
                        self.peek_kind();
                        if self.peek().is_some_and(|t| keyword(t.text) == Kw::Select) {
                            self.signal(95, "UNION SELECT");
                        }
                        true
                    }
                    _ => false,
                };
            }
            Pending::By => {
                self.pending = Pending::None;
                if kw != Kw::By {
                    return false;
                }
                self.st = St::Operand;
                if self.select_depth.is_none() {
                    let c = if self.quote == 0 && self.by_at_start && self.peek_kind() != Some(Kind::Num) {
                        self.head_clause = true;
                        HEAD_CLAUSE
                    } else if self.quote == 0 && self.depth >= 0 {
                        60
                    } else {
                        70
                    };
                    self.signal_expr(c, "ORDER/GROUP BY after the value");
                }
                return true;
            }
            Pending::Into => {
                self.pending = Pending::None;
                return match (t.kind, kw) {
                    (_, Kw::Outfile) => {
                        self.pending = Pending::File;
                        true
                    }
                    (Kind::Var, _) | (Kind::Word, Kw::None) | (Kind::QIdent, _) => {
                        self.st = St::Operator;
                        true
                    }
                    _ => false,
                };
            }
            Pending::File => {
                self.pending = Pending::None;
                if matches!(t.kind, Kind::Str { .. }) {
                    self.signal(92, "INTO OUTFILE");
                    self.st = St::Operator;
                    return true;
                }
                return false;
            }
            Pending::As => {
                self.pending = Pending::None;
                self.st = St::Operator;
                self.alias_ok = false;
                return matches!(t.kind, Kind::Word | Kind::QIdent | Kind::Str { .. });
            }
            Pending::Join => {
                return match kw {
                    Kw::JoinMod => true,
                    Kw::Join => {
                        self.pending = Pending::None;
                        self.st = St::Operand;
                        true
                    }
                    _ => false,
                };
            }
            Pending::Waitfor => {
                self.pending = Pending::None;
                if kw == Kw::Delay && matches!(self.peek_kind(), Some(Kind::Str { .. }) | Some(Kind::Var)) {
                    self.signal(92, "WAITFOR DELAY");
                    self.st = St::Operand;
                    return true;
                }
                return false;
            }
            Pending::StmtHead(s) => {
                self.pending = Pending::None;
                return self.stmt_head(s, t, kw);
            }
        }
        match self.st {
            St::Start => {
                // Leading `)` closes the application's parentheses.
                if t.kind == Kind::RParen {
                    self.depth -= 1;
                    self.st = St::Operator;
                    return true;
                }
                if t.kind == Kind::Semi {
                    self.st = St::Stmt;
                    return true;
                }
                if t.kind == Kind::Comma {
                    self.st = St::Operand;
                    return true;
                }
                if t.kind == Kind::Word && callable(kw) && self.peek_kind() == Some(Kind::LParen) {
                    self.st = St::Operand;
                    return self.operand(t, kw);
                }
                match kw {
                    Kw::Stmt(_) => return self.statement(t, kw, true),
                    Kw::Union | Kw::Order | Kw::Group | Kw::Logic | Kw::Having | Kw::Where | Kw::Limit | Kw::Procedure | Kw::Into | Kw::BinOp => {
                        self.by_at_start = matches!(kw, Kw::Order | Kw::Group) && self.depth == 0;
                        self.st = St::Operator;
                        return self.operator(t, kw);
                    }
                    _ => {}
                }
                if t.kind == Kind::Word && kw == Kw::None && self.peek_kind() != Some(Kind::LParen) {
                    self.ident_start = true;
                }
                self.st = St::Operand;
                self.operand(t, kw)
            }
            St::Operand => self.operand(t, kw),
            St::Operator => self.operator(t, kw),
            St::Stmt => {
                if t.kind == Kind::LParen || (t.kind == Kind::Word && callable(kw) && self.peek_kind() == Some(Kind::LParen)) {
                    self.signal(70, "stacked expression");
                    self.st = St::Operand;
                    return self.operand(t, kw);
                }
                self.statement(t, kw, false)
            }
        }
    }

    fn begin_select(&mut self) {
        self.select_at_start = self.n == 1;
        self.st = St::Operand;
        self.select_depth = Some(self.depth);
        self.alias_ok = false;
        // SELECT [ALL|DISTINCT|TOP n]
        loop {
            let Some(t) = self.peek() else { return };
            match keyword(t.text) {
                Kw::SetQuant if t.kind == Kind::Word => {
                    self.next();
                }
                Kw::Top if t.kind == Kind::Word => {
                    self.next();
                    if self.peek().is_some_and(|t| t.kind == Kind::Num) {
                        self.next();
                    }
                }
                _ => return,
            }
        }
    }

    fn operand(&mut self, t: Token<'a>, kw: Kw) -> bool {
        self.last_text = t.text;
        let opnd = match (t.kind, kw) {
            (Kind::Num, _) | (Kind::Str { .. }, _) => Opnd::Literal,
            (Kind::QIdent, _) => Opnd::Ident,
            (Kind::Var, _) => {
                if t.text.starts_with("@@") && (self.logic || self.n > 1 || self.quote != 0) {
                    self.signal(if self.quote == 0 && self.n == 1 { 55 } else { 75 }, "server variable");
                }
                Opnd::Var
            }
            (Kind::Word, _) if callable(kw) && self.peek_kind() == Some(Kind::LParen) => {
                return self.call(t);
            }
            (Kind::Word, Kw::None) => Opnd::Ident,
            (Kind::Word, Kw::Value) => Opnd::Literal,
            (Kind::Word, Kw::Select) => {
                // A hyphenated slug (`my-select-box`, `drop-down-select-2`) is one identifier
                // of the application, not arithmetic around a sub-select.
                if (self.depth > 0 || self.n > 1) && !is_slug(self.src) {
                    self.signal(85, "sub-select");
                }
                self.begin_select();
                return true;
            }
            (Kind::LParen, _) => {
                self.depth += 1;
                self.peek_kind();
                if self.peek().is_some_and(|t| t.kind == Kind::Word && keyword(t.text) == Kw::Select) {
                    self.signal(85, "sub-select");
                }
                return true;
            }
            (Kind::RParen, _) if self.last == Opnd::Call => {
                // Empty argument list: `version()`.
                self.depth -= 1;
                self.st = St::Operator;
                return true;
            }
            (Kind::Op, _) if matches!(t.text.as_bytes(), b"-" | b"+" | b"~" | b"!") => return true,
            (Kind::Op, _) if t.text == "*" => Opnd::Ident,
            (Kind::Word, Kw::Case) => {
                self.case_seen = true;
                return true;
            }
            // CASE WHEN (searched CASE).
            (Kind::Word, Kw::CaseMid) if self.last_kind == Kind::Word && self.case_seen => return true,
            (Kind::Word, Kw::Not | Kw::Prefix) => return true,
            (Kind::Word, Kw::Stmt(Stmt::Exec)) if self.depth > 0 => return true,
            _ => return false,
        };
        self.finish_operand(opnd);
        true
    }

    /// `'='`, `'<>'`, `x'^0!='1`: a comparison right after the breakout, whose right side the
    /// application's own closing quote completes (checked at the end).
    fn note_direct_cmp(&mut self) {
        if self.quote != 0 && !self.logic && self.alias_ok && self.n <= 3 + self.leading_parens() {
            if self.prefix_single {
                self.direct_cmp_armed = true;
            } else if !self.prefix_empty {
                self.quoted_symbol_armed = true;
            }
        }
    }

    fn finish_operand(&mut self, opnd: Opnd) {
        let open_right = self.last_kind == (Kind::Str { quote: self.quote, closed: false });
        if std::mem::take(&mut self.direct_cmp_armed) && open_right {
            self.direct_cmp = true;
        }
        // `Unexpected token '<', "<!DOCTYPE"...`: prose, a quoted symbol, and the rest of the
        // sentence as the right side; `1 + 1 = 2`: arithmetic written in text. Neither
        // compares two constants to steer a query.
        let text_cmp = std::mem::take(&mut self.quoted_symbol_armed) && open_right || self.cmp_arith && self.quote == 0;
        if let Some(lhs) = self.cmp_lhs.take() {
            // Constant against constant (`1=1`, `'a'='a'`, `x=x`) is a tautology or a contradiction.
            let constant = (lhs == Opnd::Literal && opnd == Opnd::Literal)
                || (lhs == Opnd::Ident && opnd == Opnd::Ident && self.cmp_lhs_text.eq_ignore_ascii_case(self.last_text));
            let strong = constant || matches!(lhs, Opnd::Literal | Opnd::Call | Opnd::Var) || matches!(opnd, Opnd::Literal | Opnd::Call | Opnd::Var);
            if self.logic && constant {
                self.signal(82, "tautology after the value");
            } else if self.logic {
                self.signal_expr(if strong { 80 } else { 50 }, "boolean condition after the value");
            } else if constant && (self.depth > 0 || self.case_seen) {
                self.signal(60, "constant comparison in a condition");
            } else if constant && !text_cmp {
                self.signal_expr(55, "constant comparison");
            }
        }
        if self.select_depth.is_some() && self.depth == self.select_depth.unwrap_or(0) && opnd != Opnd::Ident {
            self.select_items = true;
        }
        self.last = opnd;
        self.st = St::Operator;
        self.alias_ok = true;
    }

    fn call(&mut self, t: Token<'a>) -> bool {
        // The `(` follows.
        self.next();
        self.depth += 1;
        let after = self.n > 1 || self.quote != 0 || self.logic;
        match function(t.text) {
            Func::Time | Func::Oob if frame_location(self.src, t.text) || log_message_call(self.src, t.text) => {}
            Func::Time => self.signal(92, "time-based function"),
            Func::Oob => self.signal(90, "out-of-band / file function"),
            Func::Error => self.signal(if after { 85 } else { 50 }, "error-based function"),
            Func::Info if after => self.signal(75, "server information function"),
            Func::Common | Func::Info if self.logic => self.signal(75, "function call in a boolean condition"),
            Func::Common if after => self.signal(55, "SQL function after the value"),
            _ => {}
        }
        self.last = Opnd::Call;
        self.st = St::Operand;
        true
    }

    fn operator(&mut self, t: Token<'a>, kw: Kw) -> bool {
        match (t.kind, kw) {
            (Kind::Op, _) if is_binop(t.text) => {
                if is_cmp(t.text) {
                    self.cmp_lhs = Some(self.last);
                    self.cmp_lhs_text = self.last_text;
                    self.cmp_arith = std::mem::take(&mut self.arith);
                    self.note_direct_cmp();
                    self.st = St::Operand;
                } else if matches!(t.text.as_bytes(), b"||" | b"&&") {
                    self.logic_op();
                } else {
                    self.arith |= matches!(t.text.as_bytes(), b"+" | b"-" | b"*" | b"/" | b"%");
                    self.st = St::Operand;
                }
                true
            }
            (Kind::Word, Kw::Logic) => {
                self.logic_op();
                true
            }
            (Kind::Word, Kw::BinOp) => {
                let l = t.text.as_bytes();
                // IS [NOT] NULL/TRUE; IN (...); others are comparisons when they compare.
                if !(l.eq_ignore_ascii_case(b"div") || l.eq_ignore_ascii_case(b"mod") || l.eq_ignore_ascii_case(b"collate")) {
                    self.cmp_lhs = Some(self.last);
                    self.cmp_lhs_text = self.last_text;
                    // `x' like '0`; not `"IS" STAMP` (a quoted word).
                    if !self.prefix_empty {
                        self.note_direct_cmp();
                    }
                }
                self.st = St::Operand;
                true
            }
            (Kind::Word, Kw::Not) => {
                // NOT LIKE / NOT IN / NOT BETWEEN / IS NOT
                self.st = St::Operand;
                true
            }
            (Kind::Word, Kw::CaseMid) => {
                self.st = St::Operand;
                true
            }
            (Kind::Word, Kw::End) => true,
            (Kind::RParen, _) => {
                self.depth -= 1;
                if self.depth < 0 {
                    self.ident_start = false;
                }
                if self.select_depth.is_some_and(|d| d > self.depth) {
                    self.select_depth = None;
                }
                if self.last == Opnd::Call {
                    self.last = Opnd::Literal;
                }
                self.alias_ok = true;
                true
            }
            (Kind::Comma, _) => {
                self.st = St::Operand;
                true
            }
            (Kind::Semi, _) => {
                self.st = St::Stmt;
                self.ident_start = false;
                self.logic = false;
                true
            }
            (Kind::Dot, _) => {
                self.st = St::Operand;
                true
            }
            (Kind::Word, Kw::Union) => {
                self.pending = Pending::Union;
                self.logic = false;
                true
            }
            (Kind::Word, Kw::Order | Kw::Group) => {
                self.pending = Pending::By;
                true
            }
            (Kind::Word, Kw::From) => {
                if let Some(d) = self.select_depth {
                    // A whole query as the value is SQL, but a weaker sign of injection than one after a breakout.
                    let c = match (d == 0 && self.select_at_start, self.select_items) {
                        (false, _) => 80,
                        (true, true) => 75,
                        (true, false) => 65,
                    };
                    self.signal(c, "SELECT ... FROM");
                }
                self.st = St::Operand;
                true
            }
            (Kind::Word, Kw::Where | Kw::Having | Kw::On | Kw::Limit | Kw::Offset) => {
                if self.n <= 1 + self.leading_parens() + usize::from(self.alias_ok && self.quote != 0) && matches!(kw, Kw::Where | Kw::Having) {
                    let c = if self.quote == 0 || !self.prefix_single { HEAD_CLAUSE } else { 65 };
                    self.head_clause |= self.quote == 0;
                    self.signal_expr(c, "clause after the value");
                }
                if kw != Kw::Limit && kw != Kw::Offset {
                    self.logic = true;
                    self.logic_seen = true;
                }
                self.st = St::Operand;
                true
            }
            (Kind::Word, Kw::Into) => {
                self.pending = Pending::Into;
                true
            }
            (Kind::Word, Kw::As) => {
                self.pending = Pending::As;
                true
            }
            (Kind::Word, Kw::AscDesc) => true,
            (Kind::Word, Kw::For) => {
                // FOR UPDATE / FOR SHARE (a locking clause, then UNION may follow).
                if self.peek().is_some_and(|n| n.kind == Kind::Word && (n.text.eq_ignore_ascii_case("update") || n.text.eq_ignore_ascii_case("share"))) {
                    self.next();
                }
                true
            }
            (Kind::Word, Kw::JoinMod) => {
                self.pending = Pending::Join;
                true
            }
            (Kind::Word, Kw::Join) => {
                self.st = St::Operand;
                true
            }
            (Kind::Word, Kw::Procedure) => {
                if self.peek().is_some_and(|t| t.text.eq_ignore_ascii_case("analyse") || t.text.eq_ignore_ascii_case("analyze")) {
                    self.signal(80, "PROCEDURE ANALYSE");
                }
                self.st = St::Operand;
                true
            }
            // MSSQL runs a statement after an expression without `;`.
            (Kind::Word, Kw::Stmt(Stmt::Waitfor | Stmt::Exec | Stmt::Declare)) if self.depth <= 0 => self.statement(t, kw, true),
            (Kind::Word, Kw::Select | Kw::Stmt(Stmt::Drop | Stmt::Alter | Stmt::Insert | Stmt::Update | Stmt::Delete | Stmt::Shutdown))
                if self.depth <= 0 && !self.alias_used && !self.ident_start && (self.quote == 0 || self.n <= 2 + self.leading_parens()) =>
            {
                self.statement(t, kw, false)
            }
            // `1 limit 1 into @` ... or an alias.
            (Kind::Word, Kw::None) | (Kind::QIdent, _) | (Kind::Str { .. }, _) if self.alias_ok => {
                self.alias_ok = false;
                self.alias_used = true;
                true
            }
            _ => false,
        }
    }

    /// After AND/OR/XOR/&&/||: the right side. A bare truth value followed by a comment
    /// (`' or true--`, `1 or 1#`) is a tautology of its own. Leaves the state to continue in.
    fn logic_op(&mut self) {
        self.arith = false;
        self.logic = true;
        self.logic_seen = true;
        self.cmp_lhs = None;
        self.st = St::Operand;
        let Some(t) = self.peek() else { return };
        let lit = matches!(t.kind, Kind::Num | Kind::Str { .. }) || (t.kind == Kind::Word && keyword(t.text) == Kw::Value);
        if !lit {
            return;
        }
        self.next();
        self.n += 1;
        match self.peek_kind() {
            Some(Kind::Comment { to_eof: true }) | Some(Kind::Semi) => self.signal_expr(65, "boolean literal then comment"),
            None if self.prefix_single && t.text.len() > 1 && matches!(t.kind, Kind::Str { closed: false, quote } if quote == self.quote) => {
                self.signal_expr(65, "boolean string literal")
            }
            None => self.signal_expr(35, "boolean literal"),
            _ => {}
        }
        self.finish_operand(Opnd::Literal);
    }

    /// A statement keyword; `head`: at the start of the value or without `;` (MSSQL).
    fn statement(&mut self, t: Token<'a>, kw: Kw, head: bool) -> bool {
        self.juxtaposed = !head && self.st == St::Operator;
        let Kw::Stmt(s) = kw else {
            if kw == Kw::Select {
                if !head {
                    // After `;`, or juxtaposed to the value (MSSQL batches need no `;`).
                    // `Click 'Select' and then 'Update'`, `'select' auf deutsch`: a
                    // sentence quoting a word, no statement; what follows is still read.
                    let c = if self.st != St::Operator {
                        88
                    } else if self.quotes_own_text() {
                        0
                    } else {
                        70
                    };
                    if c > 0 {
                        self.signal(c, "stacked SELECT");
                    }
                }
                self.begin_select();
                return true;
            }
            if kw == Kw::Union && !head {
                return false;
            }
            if kw == Kw::None && t.kind == Kind::Word && !head {
                return false;
            }
            return matches!(t.kind, Kind::Comment { .. });
        };
        self.stacked_head = head;
        self.pending = Pending::StmtHead(s);
        if s == Stmt::Waitfor {
            self.pending = Pending::Waitfor;
        }
        if s == Stmt::Shutdown {
            self.pending = Pending::None;
            if matches!(self.peek_kind(), None | Some(Kind::Comment { to_eof: true }) | Some(Kind::Semi)) {
                self.signal(if head && self.n == 1 { 50 } else { 90 }, "stacked SHUTDOWN");
                self.st = St::Operator;
                return true;
            }
            return false;
        }
        true
    }

    /// In a quoted context, the next token is a string in the value's own quote that holds a
    /// blank: the value's words between two of its quotes (`He wrote 'drop table' on the
    /// board`), where a statement juxtaposed to the value would need its select list or object
    /// name (`' select 'a'--` still selects a literal).
    fn quotes_own_text(&mut self) -> bool {
        let q = self.quote;
        // Or the value's own quoted word ending the value: `(reading 'select')`, the keyword
        // between the quotes and the quote after it never closed.
        q != 0
            && self.peek().is_some_and(|n| match n.kind {
                Kind::Str { quote, closed } if quote == q => !closed || n.text.bytes().any(|c| c == b' ' || c == b'\t'),
                _ => false,
            })
    }

    /// A value that starts with `DROP TABLE name` (no breakout) and goes on with a plain word
    /// is a sentence (`Drop table tennis lessons on Friday`), not a statement: after the object
    /// name SQL has an end, `;`, a comment, a list, `(`, or a keyword.
    fn ddl_reads_as_prose(&self) -> bool {
        let mut first = self.peeked;
        let mut lx = self.lx.clone();
        let mut next = move || loop {
            let t = match first.take() {
                Some(t) => t,
                None => lx.next(),
            }?;
            if !(t.kind == (Kind::Comment { to_eof: false }) && t.text.starts_with("/*")) {
                return Some(t);
            }
        };
        let mut t = next();
        for w in ["if", "not", "exists"] {
            if t.is_some_and(|t| t.kind == Kind::Word && t.text.eq_ignore_ascii_case(w)) {
                t = next();
            }
        }
        if !t.is_some_and(|t| matches!(t.kind, Kind::Word | Kind::QIdent)) {
            return false;
        }
        const DDL_WORDS: &[&str] = &["cascade", "restrict", "purge", "add", "modify", "rename", "identified", "owner", "to", "with", "using"];
        next().is_some_and(|t| {
            t.kind == Kind::Word
                && keyword(t.text) == Kw::None
                && t.text.bytes().all(|c| c.is_ascii_alphabetic())
                && !DDL_WORDS.iter().any(|w| t.text.eq_ignore_ascii_case(w))
        })
    }

    /// The word after a statement keyword decides whether it is a statement.
    fn stmt_head(&mut self, s: Stmt, t: Token<'a>, kw: Kw) -> bool {
        let head = self.stacked_head;
        let word = |x: &str| t.kind == Kind::Word && t.text.eq_ignore_ascii_case(x);
        let strong = if head && self.n <= 2 && self.quote == 0 { 70 } else { 90 };
        match s {
            Stmt::Drop | Stmt::Create | Stmt::Alter | Stmt::Truncate => {
                let obj = t.kind == Kind::Word
                    && [
                        "table",
                        "database",
                        "schema",
                        "view",
                        "user",
                        "procedure",
                        "function",
                        "index",
                        "trigger",
                        "login",
                        "column",
                        "proc",
                        "role",
                        "temporary",
                        "or",
                    ]
                    .iter()
                    .any(|o| word(o));
                if !obj || head && self.quote == 0 && self.ddl_reads_as_prose() || self.juxtaposed && self.quotes_own_text() {
                    return false;
                }
                self.signal(strong, "stacked DDL statement");
                self.st = St::Operand;
                true
            }
            Stmt::Exec => {
                let name = match t.kind {
                    Kind::Word if kw == Kw::None => t.text,
                    // `at exec (webpack:///./src/db.js:12:3)`: a stack frame.
                    Kind::LParen if frame_location(self.src, &t.text[..0]) => return false,
                    Kind::LParen => {
                        self.depth += 1;
                        self.signal(if head { 60 } else { 85 }, "stacked EXEC");
                        self.st = St::Operand;
                        return true;
                    }
                    // `exec@https://cdn.example/vue.js:4:12`: a stack frame.
                    Kind::Var if at_frame_location(self.src, t.text) => return false,
                    Kind::Var => {
                        self.signal(if head { 60 } else { 85 }, "stacked EXEC");
                        self.st = St::Operator;
                        return true;
                    }
                    _ => return false,
                };
                let l = name.to_ascii_lowercase();
                let last = l.rsplit('.').next().unwrap_or(&l);
                let known = last.starts_with("xp_") || last.starts_with("sp_") || l.starts_with("master.");
                if known {
                    self.signal(92, "EXEC of a system procedure");
                } else if !head {
                    match self.peek_kind() {
                        None | Some(Kind::Comment { to_eof: true }) | Some(Kind::Semi) | Some(Kind::Str { .. }) | Some(Kind::Var) | Some(Kind::Num) => {
                            self.signal(75, "stacked EXEC")
                        }
                        _ => return false,
                    }
                } else {
                    return false;
                }
                self.last = Opnd::Call;
                self.st = St::Operand;
                // Arguments are optional.
                matches!(self.peek_kind(), None | Some(Kind::Comment { .. }) | Some(Kind::Semi)).then(|| self.st = St::Operator);
                true
            }
            Stmt::Declare => {
                if t.kind != Kind::Var {
                    return false;
                }
                self.signal(strong, "stacked DECLARE");
                self.st = St::Operator;
                self.alias_ok = true;
                true
            }
            Stmt::Insert => {
                if kw != Kw::Into {
                    return false;
                }
                self.signal(strong, "stacked INSERT");
                self.st = St::Operand;
                true
            }
            Stmt::Update => {
                if !matches!(t.kind, Kind::Word | Kind::QIdent) || kw != Kw::None {
                    return false;
                }
                if self.peek().is_some_and(|n| n.kind == Kind::Word && keyword(n.text) == Kw::Stmt(Stmt::Set)) {
                    self.next();
                    self.signal(strong, "stacked UPDATE");
                    self.st = St::Operand;
                    return true;
                }
                false
            }
            Stmt::Delete => {
                if kw != Kw::From {
                    return false;
                }
                self.signal(strong, "stacked DELETE");
                self.st = St::Operand;
                true
            }
            Stmt::Set => {
                if t.kind == Kind::Var && self.peek().is_some_and(|n| n.text == "=" || n.text == ":=") {
                    self.signal(if head { 50 } else { 80 }, "stacked SET");
                    self.st = St::Operator;
                    return true;
                }
                false
            }
            Stmt::Grant | Stmt::Load | Stmt::Copy | Stmt::Call | Stmt::Kill | Stmt::Show | Stmt::Prepare | Stmt::Use | Stmt::Begin | Stmt::If => {
                if head {
                    return false;
                }
                let ok = match s {
                    Stmt::Load => word("data") || word("xml") || word("file"),
                    Stmt::Copy => t.kind == Kind::Word && kw == Kw::None,
                    Stmt::Call => t.kind == Kind::Word && self.peek_kind() == Some(Kind::LParen),
                    Stmt::Use | Stmt::Kill | Stmt::Show | Stmt::Grant => t.kind == Kind::Word,
                    Stmt::Prepare => t.kind == Kind::Word && kw == Kw::None,
                    Stmt::If => matches!(t.kind, Kind::LParen | Kind::Num | Kind::Word | Kind::Var),
                    _ => true,
                };
                if !ok {
                    return false;
                }
                self.signal(80, "stacked statement");
                self.st = St::Operand;
                if t.kind == Kind::LParen {
                    self.depth += 1;
                }
                true
            }
            Stmt::Waitfor | Stmt::Shutdown => false,
        }
    }
}
