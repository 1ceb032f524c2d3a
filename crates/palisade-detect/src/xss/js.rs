//! JavaScript contexts: string breakouts, template substitutions, script URLs and sink calls.

use super::html::{scheme, Scheme};
use super::Best;

/// ASCII letters and digits, `_`, `$` and every non-ASCII byte: the bytes of a JS identifier,
/// by byte (256 bytes; `tests::ident_table_is_the_comparisons`).
static IDENT: [bool; 256] = {
    let mut t = [false; 256];
    let mut c = 0usize;
    while c < 256 {
        let b = c as u8;
        t[c] = b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b >= 0x80;
        c += 1;
    }
    t
};

/// A byte of a JS identifier ([`IDENT`]): one load instead of the range comparisons, in the
/// word walk of [`find_sink`] over prose.
#[inline]
fn is_ident(c: u8) -> bool {
    IDENT[c as usize]
}

/// Functions that run code or show the proof of execution, and objects whose use is the goal.
fn sink_kind(w: &[u8]) -> Option<u8> {
    let lw: &[&[u8]] = &[b"alert", b"prompt", b"confirm", b"eval", b"settimeout", b"setinterval", b"execscript", b"fetch", b"import", b"fromcharcode", b"atob"];
    if lw.iter().any(|s| w.eq_ignore_ascii_case(s)) {
        return Some(1);
    }
    // Case-sensitive: `Function(...)` (not the `function` keyword), `constructor`, `write`.
    if matches!(w, b"Function" | b"constructor" | b"write" | b"writeln" | b"XMLHttpRequest" | b"sendBeacon" | b"createElement" | b"insertAdjacentHTML") {
        return Some(1);
    }
    None
}

/// Whether `before` (the text before a call) ends with a `<code>`, `<pre>`, `<kbd>`, `<samp>`
/// or `<tt>` start tag without attributes.
fn in_code_element(before: &str) -> bool {
    let b = before.as_bytes();
    let Some(lt) = b.len().checked_sub(1).filter(|&e| b[e] == b'>').and_then(|e| memchr::memrchr(b'<', &b[..e])) else {
        return false;
    };
    let name = &b[lt + 1..b.len() - 1];
    [&b"code"[..], b"pre", b"kbd", b"samp", b"tt"].iter().any(|t| name.eq_ignore_ascii_case(t))
}

/// Skips whitespace and JS comments from `i`.
fn skip_ws(b: &[u8], mut i: usize) -> usize {
    loop {
        while i < b.len() && (b[i] <= b' ' || b[i] == 0x7f) {
            i += 1;
        }
        if b.get(i) == Some(&b'/') && b.get(i + 1) == Some(&b'*') {
            i = crate::other_util::find_short(&b[i + 2..], b"*/").map_or(b.len(), |e| i + 2 + e + 2);
            continue;
        }
        return i;
    }
}

/// The position of the first sink use in `s`: a sink name called (`alert(1)`, ``alert`1` ``,
/// `alert.call(null,1)`, `top['alert'](1)`), or `document.cookie`/`document.domain`/`location=`.
pub(crate) fn find_sink(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    // Every finding is a `[` (a computed call) or a word whose next byte past blanks and
    // comments is `(`, a backtick, `.` or `=`: those bytes are visited in order, each word
    // found from its byte backwards (only blanks between: a comment there, ending in `*/`,
    // sends the value to the walk of every word). In prose most words are followed by none of
    // them, and the word walk read every byte (`tests::find_sink_finds_the_first_sink_use`).
    // Words and `[`s are met in the order of their starts: a word's bytes and the blanks after
    // it are neither a `[` nor another word's next byte.
    let (mut out, mut walk) = (None, false);
    crate::other_util::each_byte_of(b, [b'(', b'`', b'.', b'=', b'['], |q| {
        if b[q] == b'[' && bracket_call(b, q) {
            out = Some(q);
            return true;
        }
        // The byte after the word: `?` of an optional call (`alert?.(1)`), else `q`.
        let next = if b[q] == b'.' && q > 0 && b[q - 1] == b'?' { q - 1 } else { q };
        let mut e = next;
        while e > 0 && (b[e - 1] <= b' ' || b[e - 1] == 0x7f) {
            e -= 1;
        }
        if e >= 2 && b[e - 1] == b'/' && b[e - 2] == b'*' {
            walk = true;
            return true;
        }
        let mut st = e;
        while st > 0 && is_ident(b[st - 1]) {
            st -= 1;
        }
        if st < e && sink_word(b, &b[st..e], next) {
            out = Some(st);
            return true;
        }
        false
    });
    if walk {
        return find_sink_walk(b);
    }
    out
}

/// `['alert']` / `["al"+"ert"]` followed by `(`: a computed member call at the `[` at `i`.
fn bracket_call(b: &[u8], i: usize) -> bool {
    if !matches!(b.get(i + 1), Some(b'\'' | b'"' | b'`')) {
        return false;
    }
    // Computed names are short: bound the search (keeps the scan linear).
    let win = &b[i..b.len().min(i + 64)];
    if let Some(e) = memchr::memchr(b']', win).map(|e| i + e) {
        let inner: Vec<u8> = b[i + 1..e].iter().filter(|c| c.is_ascii_alphabetic()).copied().collect();
        let j = skip_ws(b, e + 1);
        if sink_kind(&inner).is_some() && matches!(b.get(j), Some(b'(' | b'`')) {
            return true;
        }
    }
    false
}

/// [`find_sink`] by a walk over every word (for values with a comment before a call).
fn find_sink_walk(b: &[u8]) -> Option<usize> {
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if !is_ident(c) {
            if c == b'[' && bracket_call(b, i) {
                return Some(i);
            }
            i += 1;
            continue;
        }
        let st = i;
        while i < b.len() && is_ident(b[i]) {
            i += 1;
        }
        if st > 0 && is_ident(b[st - 1]) {
            continue;
        }
        let w = &b[st..i];
        let j = skip_ws(b, i);
        // Every finding below needs the word followed by `(`, a backtick, `.` or `=`: the
        // words of prose are passed over on that byte, before the sink names are compared
        // (`tests::find_sink_finds_the_first_sink_use`).
        if !matches!(b.get(j), Some(b'(' | b'`' | b'.' | b'=' | b'[' | b'?')) {
            continue;
        }
        if sink_word(b, w, j) {
            return Some(st);
        }
    }
    None
}

/// Whether the word `w`, whose next non-blank byte is at `j` in `b`, is a sink: a sink name
/// called (`alert(`, a tagged template, `.call(`/`.apply(`/`.bind(`), `document.cookie` or
/// `.domain`, or `location`/`innerHTML`/`outerHTML`/`srcdoc` assigned.
fn sink_word(b: &[u8], w: &[u8], j: usize) -> bool {
    if sink_kind(w).is_some() {
        match b.get(j) {
            Some(b'(' | b'`') => return true,
            // An optional call: `alert?.(1)` calls `alert` as `alert(1)` does.
            Some(b'?') if b[j + 1..].starts_with(b".(") => return true,
            Some(b'.') => {
                let r = &b[j + 1..];
                if r.starts_with(b"call(") || r.starts_with(b"apply(") || r.starts_with(b"bind(") {
                    return true;
                }
            }
            _ => {}
        }
    }
    // `document["cookie"]`, `document['domain']`: the same properties, computed.
    if w.eq_ignore_ascii_case(b"document") && b.get(j) == Some(&b'[') && matches!(b.get(j + 1), Some(b'\'' | b'"' | b'`')) {
        let win = &b[j..b.len().min(j + 64)];
        if let Some(e) = memchr::memchr(b']', win) {
            let inner: Vec<u8> = win[1..e].iter().filter(|c| c.is_ascii_alphabetic()).copied().collect();
            if inner.eq_ignore_ascii_case(b"cookie") || inner.eq_ignore_ascii_case(b"domain") {
                return true;
            }
        }
    }
    if w.eq_ignore_ascii_case(b"document") && b.get(j) == Some(&b'.') {
        let r = &b[j + 1..];
        if r.len() >= 6 && (r[..6].eq_ignore_ascii_case(b"cookie") || r[..6].eq_ignore_ascii_case(b"domain")) {
            return true;
        }
    }
    (w == b"location" || w == b"innerHTML" || w == b"outerHTML" || w == b"srcdoc") && b.get(j) == Some(&b'=') && b.get(j + 1) != Some(&b'=')
}

/// `top[...](`, `window[...](`, `self[...](`...: a property of the global object computed at run
/// time and called (`top[/al/.source+/ert/.source](1)`).
fn global_computed_call(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    // One search for the last `](`: any global-object bracket before it qualifies (linear).
    // By the `]` from the end (no searcher is built for a two-byte needle; the same position
    // as `memmem::rfind`, `tests::last_bracket_call_is_rfind`).
    let last = last_bracket_call(b)?;
    for g in [&b"top["[..], b"window[", b"self[", b"parent[", b"frames[", b"globalThis[", b"this["] {
        let mut from = 0;
        while let Some(p) = crate::other_util::find_short(&b[from..last], g) {
            let at = from + p;
            if at == 0 || !is_ident(b[at - 1]) {
                return Some(at);
            }
            from = at + 1;
        }
    }
    None
}

/// The position of the last `](` in `b`.
fn last_bracket_call(b: &[u8]) -> Option<usize> {
    let mut end = b.len();
    loop {
        let p = memchr::memrchr(b']', &b[..end])?;
        if b.get(p + 1) == Some(&b'(') {
            return Some(p);
        }
        end = p;
    }
}

fn is_proof(b: &[u8]) -> bool {
    [&b"alert"[..], b"prompt", b"confirm"].iter().any(|n| b.len() >= n.len() && b[..n.len()].eq_ignore_ascii_case(n))
}

/// `alert` passed or assigned rather than called directly: `(alert)(1)`, `a=alert,a(1)`,
/// `[1].find(alert)`, `x.onerror=alert`.
fn sink_as_value(s: &str) -> Option<usize> {
    // Each name is wanted right after `(`, `=` or `,`: one pass over those bytes finds the
    // first place of every name, and the first name that has one answers, as the search of
    // each name in turn did (`tests::sink_as_value_finds_the_first_name_used_as_a_value`; no name can
    // overlap itself, so that search saw every place).
    const NAMES: [&[u8]; 3] = [b"alert", b"prompt", b"confirm"];
    let b = s.as_bytes();
    let mut first = [None; 3];
    for p in memchr::memchr3_iter(b'(', b'=', b',', b) {
        for (k, name) in NAMES.iter().enumerate() {
            let at = p + 1;
            if first[k].is_none()
                && b.len() - at >= name.len()
                && b[at..at + name.len()].eq_ignore_ascii_case(name)
                && matches!(b.get(at + name.len()).copied().unwrap_or(b' '), b')' | b',' | b';')
            {
                first[k] = Some(at);
            }
        }
    }
    first.into_iter().flatten().next()
}

pub(crate) fn has_sink_call(s: &str) -> bool {
    find_sink(s).is_some()
}

/// Any call `name(` or a tagged template `` name`...` `` (code in an event handler).
pub(crate) fn has_call(s: &str) -> bool {
    let b = s.as_bytes();
    b.iter().enumerate().any(|(i, &c)| (c == b'(' || c == b'`') && i > 0 && (is_ident(b[i - 1]) || b[i - 1] == b')' || b[i - 1] == b']')) || has_sink_call(s)
}

/// `javascript:` / `vbscript:` anywhere (case-insensitive).
pub(crate) fn contains_script_scheme(s: &str) -> bool {
    let b = s.as_bytes();
    find_ci(b, b"javascript:").is_some() || find_ci(b, b"vbscript:").is_some()
}

fn find_ci(h: &[u8], n: &[u8]) -> Option<usize> {
    // First byte both cases via memchr2, then compare.
    let (a, b) = (n[0].to_ascii_lowercase(), n[0].to_ascii_uppercase());
    let mut i = 0;
    while let Some(p) = memchr::memchr2(a, b, &h[i..]) {
        let at = i + p;
        if h.len() - at >= n.len() && h[at..at + n.len()].eq_ignore_ascii_case(n) {
            return Some(at);
        }
        i = at + 1;
    }
    None
}

/// After the first quote of each kind: optional `\` escapes and closing brackets, then a JS
/// operator, `;` or `,`, then code that uses a sink: `';alert(1)//`, `"-alert(1)-"`,
/// `'}};alert(1);{{'`. In a template literal, `${...}` with a sink.
pub(crate) fn string_breakout(s: &str, best: &mut Best, steps: &mut usize) {
    let b = s.as_bytes();
    for q in [b'\'', b'"', b'`'] {
        let Some(p) = memchr::memchr(q, b) else { continue };
        *steps += p;
        let mut i = p + 1;
        // `)`, `]`, `}` close the application's expression; then an operator or a separator.
        i = skip_ws(b, i);
        while i < b.len() && matches!(b[i], b')' | b']' | b'}') {
            i = skip_ws(b, i + 1);
        }
        let Some(&c) = b.get(i) else { continue };
        let joins = matches!(c, b';' | b'+' | b'-' | b'*' | b'/' | b'%' | b'|' | b'&' | b'^' | b',' | b'?' | b':' | b'<' | b'>' | b'=' | b'!' | b'~')
            || (i > p + 1 && matches!(b[i - 1], b')' | b']' | b'}'))
            || b[i..].starts_with(b"in ")
            || b[i..].starts_with(b"instanceof");
        if !joins {
            continue;
        }
        let tail = &s[i..];
        *steps += tail.len();
        if let Some(at) = find_sink(tail) {
            best.add(85, "script string breakout then a sink call", p);
            let _ = at;
            break;
        }
    }
    // Template literal substitution.
    let mut from = 0;
    while let Some(p) = crate::other_util::find_short(&b[from..], b"${") {
        let at = from + p;
        let end = memchr::memchr(b'}', &b[at..]).map_or(b.len(), |e| at + e);
        *steps += end - from;
        if find_sink(&s[at + 2..end]).is_some() {
            best.add(80, "template substitution with a sink call", at);
            break;
        }
        from = end.max(at + 2);
    }
}

/// Whether the sink at `at` is the function name of a stack frame rather than a call: what
/// its parentheses hold is a source location, `file:line` or `file:line:column` with a `/` or
/// `.` in the file (or V8's `<anonymous>`) and no blank or quote (`eval (webpack-internal:///./src/a.js:12:3)`,
/// `setTimeout (https://cdn.example.com/app.js:40:7)`); no script reads that as an argument.
pub(crate) fn frame_argument(s: &str, at: usize) -> bool {
    let rest = &s[at..];
    let Some(open) = rest.find('(') else { return false };
    if !rest[..open].trim_end().bytes().all(|c| is_ident(c) || c == b'.') {
        return false;
    }
    let inner = &rest[open + 1..];
    let Some(close) = inner.find(')') else { return false };
    let loc = &inner[..close];
    if loc.is_empty() || loc.bytes().any(|c| c.is_ascii_whitespace() || matches!(c, b'\'' | b'"' | b'`' | b'(' | b',' | b';')) {
        return false;
    }
    let mut parts = loc.rsplitn(3, ':');
    let digits = |p: &str| !p.is_empty() && p.bytes().all(|c| c.is_ascii_digit());
    if !parts.next().is_some_and(digits) {
        return false;
    }
    let file = match (parts.next(), parts.next()) {
        (Some(line), Some(file)) if digits(line) => file,
        (Some(file), _) => file,
        _ => return false,
    };
    // (`<anonymous>`: V8's name for code evaluated without a file.)
    file.bytes().any(|c| c == b'/' || c == b'.') || file == "<anonymous>"
}

/// A value that is itself a script URL, a script URL after a separator (Flash vars, nested
/// parameters), and sink calls in bare script context.
pub(crate) fn url_and_calls(s: &str, best: &mut Best, steps: &mut usize) {
    *steps += s.len();
    match scheme(s) {
        Some(Scheme::Script) if super::inert::script_url_code(s).is_some_and(super::inert::inert_script_url) => {
            best.add(super::inert::INERT, "script URL with inert code", 0);
            return;
        }
        Some(Scheme::Script) => {
            best.add(85, "script URL", 0);
            return;
        }
        Some(Scheme::DataHtml) => {
            best.add(75, "data:text/html URL", 0);
            return;
        }
        _ => {}
    }
    let sink = find_sink(s);
    if let Some(at) = sink.filter(|&at| !frame_argument(s, at)) {
        if contains_script_scheme(s) {
            best.add(75, "script URL with a sink call", at);
            return;
        }
        // A call in bare script context (reflected inside <script> without quotes):
        // `alert(1)`, `prompt(1);`, `;confirm(1)//`.
        let b = s.as_bytes();
        let before = s[..at].trim_end();
        let close = memchr::memchr(b')', &b[at..]).map(|e| at + e + 1);
        let after = close.map(|c| s[c..].trim_start()).unwrap_or("");
        let statementish = before.ends_with([';', '}', ')', '>', '(', '=', '+', '-', '|', '&', ',', '"', '\''])
            || after.starts_with([';', '}', ')', '>', '<', '/', '-', '+', '"', '\'']);
        // The whole value is one call: `alert(1)`, ``alert`1` ``, `top['al'+'ert'](1)`.
        let t = s.trim_end();
        let whole = before.bytes().all(|c| is_ident(c) || c == b'.')
            && (close.is_some_and(|c| c == t.len()) || t.ends_with('`'))
            && (is_proof(&b[at..]) || b[at] == b'[');
        // Code being shown: a statement that starts with a keyword or name and opens a block
        // after a condition or parameter list (`if (x) { alert('saved'); }`). Breakouts
        // into such code are judged by `string_breakout`.
        // So is a call right inside a code-formatting element (`Use the <code>fetch()</code>
        // API`): markup there is text, and in a script context the tag is a syntax error.
        let shown_code = b.first().is_some_and(|c| c.is_ascii_alphabetic()) && (before.contains("){") || before.contains(") {")) || in_code_element(before);
        best.add(if (statementish || whole) && !shown_code { 65 } else { 55 }, "sink call in script context", at);
    } else if let Some(at) = global_computed_call(s) {
        best.add(65, "computed call on the global object", at);
    } else if let Some(at) = sink_as_value(s) {
        best.add(60, "sink function used as a value", at);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use palisade_testkit::rng::XorShift64;

    /// What [`find_sink`] means, written as its definition rather than as a scan: the first
    /// offset that starts a sink use, a `[` that opens a computed call ([`bracket_call`]) or a
    /// word (a whole run of identifier bytes) that [`sink_word`] accepts with what follows it
    /// past blanks.
    fn find_sink_spec(s: &str) -> Option<usize> {
        let b = s.as_bytes();
        (0..b.len()).find(|&i| {
            if b[i] == b'[' {
                return bracket_call(b, i);
            }
            if !is_ident(b[i]) || (i > 0 && is_ident(b[i - 1])) {
                return false;
            }
            let end = b[i..].iter().position(|&c| !is_ident(c)).map_or(b.len(), |n| i + n);
            sink_word(b, &b[i..end], skip_ws(b, end))
        })
    }

    /// What [`sink_as_value`] means: the first of `alert`, `prompt` and `confirm` (in that
    /// order, any case) that stands somewhere between `(`, `=` or `,` and `)`, `,` or `;`, at its
    /// first such place.
    fn sink_as_value_spec(s: &str) -> Option<usize> {
        let l = s.to_ascii_lowercase();
        let b = l.as_bytes();
        ["alert", "prompt", "confirm"].iter().find_map(|name| {
            l.match_indices(name)
                .map(|(at, _)| at)
                .find(|&at| at > 0 && matches!(b[at - 1], b'(' | b'=' | b',') && matches!(b.get(at + name.len()), Some(b')' | b',' | b';')))
        })
    }

    const PARTS: [&str; 43] = [
        "(alert)",
        "=Prompt,",
        ",confirm;",
        "alert",
        "ALERT",
        "Alert",
        "prompt",
        "confirm",
        "eval",
        "setTimeout",
        "document",
        "cookie",
        "domain",
        "location",
        "innerHTML",
        "srcdoc",
        "write",
        "Function",
        "(",
        ")",
        "`",
        ".",
        "=",
        "==",
        ",",
        ";",
        " ",
        "\t",
        "/*",
        "*/",
        "[",
        "]",
        "'",
        "\"",
        "call(",
        "apply(",
        "bind(",
        "x",
        "1",
        "top",
        "\u{e9}",
        "$",
        "_",
    ];

    /// On generated values made of sink names, delimiters and blanks, and on every corpus value.
    #[test]
    fn find_sink_finds_the_first_sink_use() {
        let mut rng = XorShift64::new(0xf1d5_1a4c_0ffe_e000);
        let mut found = 0;
        for _ in 0..100_000 {
            let v = rng.joined(&PARTS, 8);
            let want = find_sink_spec(&v);
            assert_eq!(find_sink(&v), want, "{v:?}");
            found += usize::from(want.is_some());
        }
        assert!(found > 2_000, "{found}");
        for v in crate::other_util::test_values() {
            assert_eq!(find_sink(&v), find_sink_spec(&v), "{v:?}");
        }
    }

    /// As [`find_sink_finds_the_first_sink_use`], for [`sink_as_value`].
    #[test]
    fn sink_as_value_finds_the_first_name_used_as_a_value() {
        let mut rng = XorShift64::new(0x005a_1e0f_ba5e);
        let mut found = 0;
        for _ in 0..100_000 {
            let v = rng.joined(&PARTS, 8);
            let want = sink_as_value_spec(&v);
            assert_eq!(sink_as_value(&v), want, "{v:?}");
            found += usize::from(want.is_some());
        }
        assert!(found > 2_000, "{found}");
        for v in crate::other_util::test_values() {
            assert_eq!(sink_as_value(&v), sink_as_value_spec(&v), "{v:?}");
        }
    }
    /// [`IDENT`] says of every byte what the comparisons said.
    #[test]
    fn ident_table_is_the_comparisons() {
        for c in 0..=255u8 {
            assert_eq!(is_ident(c), c.is_ascii_alphanumeric() || c == b'_' || c == b'$' || c >= 0x80, "{c}");
        }
    }

    /// [`last_bracket_call`] finds the position `memmem::rfind` found, on generated values
    /// made of brackets and parentheses and on every corpus value.
    #[test]
    fn last_bracket_call_is_rfind() {
        const BITS: [&str; 8] = ["]", "(", "](", ")", "[", "x", "]]", "(("];
        let mut rng = XorShift64::new(0x0b5a_c4e7_1a57);
        let mut found = 0;
        for _ in 0..100_000 {
            let v = rng.joined(&BITS, 8);
            let want = memchr::memmem::rfind(v.as_bytes(), b"](");
            assert_eq!(last_bracket_call(v.as_bytes()), want, "{v:?}");
            found += usize::from(want.is_some());
        }
        assert!(found > 2_000, "{found}");
        for v in crate::other_util::test_values() {
            assert_eq!(last_bracket_call(v.as_bytes()), memchr::memmem::rfind(v.as_bytes(), b"]("), "{v:?}");
        }
    }
}
