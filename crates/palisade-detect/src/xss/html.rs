//! HTML tokenization (the WHATWG tokenizer states that decide what a browser builds) and the
//! judgement of start tags and attributes.

use super::{js, Best};

pub(crate) fn is_ws(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r' | b'\x0c')
}

/// One attribute as the browser sees it (name lowercased by the caller's comparison).
pub(crate) struct Attr<'a> {
    pub name: &'a str,
    pub value: Option<&'a str>,
    pub at: usize,
}

/// Reads attributes from `b[i..]` in the "before attribute name" state until `>` or EOF.
/// Returns the index after the tag (after `>`, or `len` when unclosed) and whether `>` was found.
fn attributes<'a>(s: &'a str, mut i: usize, out: &mut Vec<Attr<'a>>, steps: &mut usize) -> (usize, bool) {
    let b = s.as_bytes();
    let start = i;
    loop {
        while i < b.len() && (is_ws(b[i]) || b[i] == b'/') {
            i += 1;
        }
        if i >= b.len() {
            *steps += i - start;
            return (b.len(), false);
        }
        if b[i] == b'>' {
            *steps += i - start;
            return (i + 1, true);
        }
        // Attribute name: a leading `=` belongs to it.
        let ns = i;
        i += 1;
        while i < b.len() && !is_ws(b[i]) && !matches!(b[i], b'/' | b'>' | b'=') {
            i += 1;
        }
        let ne = i;
        while i < b.len() && is_ws(b[i]) {
            i += 1;
        }
        let mut value = None;
        if i < b.len() && b[i] == b'=' {
            i += 1;
            while i < b.len() && is_ws(b[i]) {
                i += 1;
            }
            if i < b.len() && (b[i] == b'"' || b[i] == b'\'') {
                let q = b[i];
                let vs = i + 1;
                match memchr::memchr(q, &b[vs..]) {
                    Some(e) => {
                        value = Some(&s[vs..vs + e]);
                        i = vs + e + 1;
                    }
                    None => {
                        value = Some(&s[vs..]);
                        i = b.len();
                    }
                }
            } else {
                let vs = i;
                while i < b.len() && !is_ws(b[i]) && b[i] != b'>' {
                    i += 1;
                }
                value = Some(&s[vs..i]);
            }
        }
        if s.is_char_boundary(ns) && s.is_char_boundary(ne) {
            out.push(Attr { name: &s[ns..ne], value, at: ns });
        }
    }
}

/// Scans the value as HTML text.
pub(crate) fn scan(s: &str, best: &mut Best, steps: &mut usize) {
    let b = s.as_bytes();
    let mut i = 0;
    let mut attrs = Vec::new();
    let mut css_done = 0;
    while let Some(p) = memchr::memchr(b'<', &b[i..]) {
        let at = i + p;
        *steps += p + 1;
        i = at + 1;
        let Some(&c) = b.get(at + 1) else { break };
        if c == b'/' {
            // End tag: `</script>` ends a script block (breakout from a JS context).
            let n = tag_name(b, at + 2);
            if eq_lower(&b[at + 2..n], b"script") {
                // Right after a JavaScript string, block or statement end (`'}}</script>`,
                // `";</script>`), the end tag is a breakout from a script block.
                let mut k = at;
                while k > 0 && is_ws(b[k - 1]) {
                    k -= 1;
                }
                let after_js = k > 0 && matches!(b[k - 1], b'\'' | b'"' | b'`' | b';' | b'}' | b')' | b']');
                best.add(if after_js { 65 } else { 50 }, "</script> end tag", at);
            }
            continue;
        }
        if c == b'?' && b.len() >= at + 16 && b[at + 2..at + 16].eq_ignore_ascii_case(b"xml-stylesheet") {
            // A stylesheet processing instruction makes the document run an XSLT or CSS sheet
            // of the attacker's choice.
            best.add(65, "<?xml-stylesheet> processing instruction", at);
            continue;
        }
        if c == b'?' && b.len() >= at + 8 && b[at + 2..at + 8].eq_ignore_ascii_case(b"import") {
            best.add(65, "<?import> element behaviour", at);
            continue;
        }
        if !c.is_ascii_alphabetic() {
            // `<!--`, `<!DOCTYPE`, `<?`, `< b`, `<3`: not a start tag. Comments are scanned
            // through: conditional comments and `-->` breakouts put tags there.
            continue;
        }
        let ne = tag_name(b, at + 1);
        *steps += ne - at;
        let name = &b[at + 1..ne];
        // Old parsers drop NUL in tag names: `<scr\0ipt>`, `<scr%00ipt>` after decoding.
        if name.len() <= 24 && (name.contains(&0) || crate::other_util::find_short(name, b"\\0").is_some()) {
            let mut buf = [0u8; 24];
            let mut n = 0;
            let mut k = 0;
            while k < name.len() {
                if name[k] == 0 {
                    k += 1;
                } else if name[k] == b'\\' && name.get(k + 1) == Some(&b'0') {
                    k += 2;
                } else {
                    buf[n] = name[k];
                    n += 1;
                    k += 1;
                }
            }
            if eq_lower(&buf[..n], b"script") {
                best.add(85, "<script> element with a NUL in its name", at);
            }
        }
        attrs.clear();
        let (end, closed) = attributes(s, ne, &mut attrs, steps);
        judge_tag(s, name, &attrs, closed, at, end, best, steps, &mut css_done);
        i = end.max(at + 1);
    }
}

fn tag_name(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && !is_ws(b[i]) && b[i] != b'/' && b[i] != b'>' {
        i += 1;
    }
    i
}

fn eq_lower(a: &[u8], lower: &[u8]) -> bool {
    a.len() == lower.len() && a.iter().zip(lower).all(|(x, y)| x.to_ascii_lowercase() == *y)
}

fn name_is(name: &[u8], list: &[&[u8]]) -> bool {
    list.iter().any(|l| eq_lower(name, l))
}

/// An event handler attribute name: `on` and letters (`onload`, `onpointerrawupdate`).
pub(crate) fn is_handler(name: &str) -> bool {
    let n = name.as_bytes();
    n.len() >= 5 && n[..2].eq_ignore_ascii_case(b"on") && n[2..].iter().all(|c| c.is_ascii_alphabetic())
}

const URL_ATTRS: &[&[u8]] = &[
    b"href",
    b"src",
    b"action",
    b"formaction",
    b"data",
    b"xlink:href",
    b"background",
    b"dynsrc",
    b"lowsrc",
    b"poster",
    b"code",
    b"codebase",
    b"values",
    b"to",
    b"from",
    b"by",
    b"srcset",
    b"ping",
    b"cite",
    b"longdesc",
    b"usemap",
    b"profile",
    b"manifest",
    b"archive",
    b"classid",
    b"icon",
    b"content",
    b"folder",
    b"datasrc",
    b"xml:base",
    b"xmlns",
    b"target",
];

/// The text after `<script>` up to `</script` (or the end) is words, blanks and sentence
/// punctuation only, and not empty: nothing in it can call, assign or build code.
fn prose_script_body(rest: &[u8], steps: &mut usize) -> bool {
    let n = rest
        .iter()
        .position(|&c| !(c.is_ascii_alphanumeric() || c == b' ' || matches!(c, b',' | b'.' | b'?' | b'!' | b'-' | b':') || c >= 0x80))
        .unwrap_or(rest.len());
    *steps += n;
    let tail = &rest[n..];
    rest[..n].iter().any(|c| c.is_ascii_alphabetic()) && (tail.is_empty() || tail.len() >= 9 && tail[..8].eq_ignore_ascii_case(b"</script") && tail[8] == b'>')
}

#[allow(clippy::too_many_arguments)]
fn judge_tag(s: &str, name: &[u8], attrs: &[Attr<'_>], closed: bool, at: usize, end: usize, best: &mut Best, steps: &mut usize, css_done: &mut usize) {
    // An unclosed tag is completed by the page's next `>`: still a tag, slightly less certain.
    let adj = |c: u8| if closed { c } else { c.saturating_sub(5) };
    if eq_lower(name, b"script") {
        let b = s.as_bytes();
        let in_prose = at > 0 && b[at - 1] == b' ' && b.get(end) == Some(&b' ');
        if attrs.is_empty() && closed && in_prose && prose_script_body(b.get(end..).unwrap_or_default(), steps) {
            // `Learn <script> tags in HTML`: a tag between blanks in a sentence (no breakout
            // before it) whose script holds words only (no call, no assignment, no string):
            // it runs nothing. Glued to markup (`"><script>KCF`) or to its text (VBScript
            // `<script>MsgBox 1` calls without parentheses) it stays a script.
            best.add(50, "<script> element holding only words", at);
        } else {
            best.add(adj(92), "<script> element", at);
        }
    } else if name_is(name, &[b"iframe", b"frame", b"frameset", b"object", b"embed", b"applet", b"layer", b"ilayer"]) {
        best.add(adj(if attrs.is_empty() { 55 } else { 70 }), "embedding element", at);
    } else if name_is(name, &[b"base", b"import", b"xml"]) {
        best.add(adj(if attrs.is_empty() { 40 } else { 65 }), "base/import/xml element", at);
    } else if eq_lower(name, b"link") && attrs.iter().any(|a| a.name.eq_ignore_ascii_case("href")) {
        best.add(adj(62), "<link> to an external resource", at);
    } else if eq_lower(name, b"meta") && attrs.iter().any(|a| a.name.eq_ignore_ascii_case("http-equiv")) {
        best.add(adj(65), "<meta http-equiv>", at);
    } else if eq_lower(name, b"meta")
        && attrs.iter().any(|a| {
            a.name.eq_ignore_ascii_case("charset")
                && a.value.is_some_and(|v| v.to_ascii_lowercase().contains("utf7") || v.to_ascii_lowercase().contains("utf-7"))
        })
    {
        // The rest of the page is read as UTF-7: `+ADw-script+AD4-` becomes markup.
        best.add(adj(75), "<meta charset> switching to UTF-7", at);
    } else if name_is(name, &[b"style"]) && end < *css_done {
        best.add(40, "<style> element", at);
    } else if name_is(name, &[b"style"]) {
        // The style body up to `</`, bounded; each byte is examined once (`css_done`).
        let win = &s.as_bytes()[end..s.len().min(end + 8192)];
        let mut body_end = crate::other_util::find_short(win, b"</").map_or(end + win.len(), |e| end + e);
        while !s.is_char_boundary(body_end) {
            body_end -= 1;
        }
        *steps += body_end.saturating_sub(end);
        *css_done = body_end.max(end + 1);
        if end <= body_end && css_dangerous(&s[end..body_end]) {
            best.add(85, "<style> with script in CSS", at);
        } else {
            best.add(40, "<style> element", at);
        }
    } else if name_is(name, &[b"form", b"button", b"input"])
        && attrs.iter().any(|a| (a.name.eq_ignore_ascii_case("action") || a.name.eq_ignore_ascii_case("formaction")) && a.value.is_some_and(absolute_url))
    {
        // An injected form that submits to another site (credential phishing in the page).
        best.add(adj(65), "form submitting to an absolute URL", at);
    } else if name_is(name, &[b"svg", b"math", b"template", b"isindex", b"link", b"meta", b"form", b"video", b"audio", b"marquee"]) {
        best.add(if closed { 30 } else { 20 }, "active element", at);
    }
    let animates_handler = name_is(name, &[b"set", b"animate", b"animatetransform", b"animatemotion"])
        && attrs.iter().any(|a| a.name.eq_ignore_ascii_case("attributename") && a.value.is_some_and(|v| is_handler(v.trim()) || ends_with_href(v.trim())));
    // XML Events (`<listener event="load" handler="#x">`, `ev:handler=`): a handler bound by
    // markup, no `on...` attribute needed.
    if attrs.iter().any(|a| a.value.is_some_and(|v| v.contains("w3.org/2001/xml-events")))
        && attrs
            .iter()
            .any(|a| a.name.len() >= 7 && a.name.as_bytes()[a.name.len() - 7..].eq_ignore_ascii_case(b"handler") || a.name.eq_ignore_ascii_case("ev:event"))
    {
        best.add(adj(75), "XML Events handler", at);
    }
    let is_meta = eq_lower(name, b"meta");
    for a in attrs {
        judge_attr(name, a, animates_handler, is_meta, best, steps, adj);
    }
}

/// `//host/...` or `http(s)://...`: a URL that leaves the page's site.
fn absolute_url(v: &str) -> bool {
    let t = v.trim_start().as_bytes();
    t.starts_with(b"//") || [&b"http://"[..], b"https://"].iter().any(|p| t.len() >= p.len() && t[..p.len()].eq_ignore_ascii_case(p))
}

/// `href`, `xlink:href`: the attribute an SVG animation must not rewrite.
fn ends_with_href(v: &str) -> bool {
    let b = v.as_bytes();
    b.len() >= 4 && b[b.len() - 4..].eq_ignore_ascii_case(b"href") && (b.len() == 4 || b[b.len() - 5] == b':')
}

fn judge_attr(tag: &[u8], a: &Attr<'_>, animates_handler: bool, is_meta: bool, best: &mut Best, steps: &mut usize, adj: impl Fn(u8) -> u8) {
    let n = a.name.as_bytes();
    let v = a.value.unwrap_or("");
    *steps += n.len() + v.len();
    if is_handler(a.name) {
        if a.value.is_some_and(|v| super::inert::inert_code(&decode_entities(v))) {
            best.add(adj(super::inert::INERT), "event handler attribute with inert code", a.at);
        } else if a.value.is_some_and(|v| !v.trim().is_empty()) {
            best.add(adj(90), "event handler attribute", a.at);
        } else {
            best.add(adj(55), "event handler attribute without code", a.at);
        }
        return;
    }
    if a.value.is_none() {
        return;
    }
    let decoded = decode_entities(v);
    if eq_lower(n, b"style") {
        if css_dangerous(&decoded) {
            best.add(adj(85), "script in a style attribute", a.at);
        }
        return;
    }
    if name_is(n, &[b"datasrc", b"dataformatas"]) {
        best.add(adj(65), "data binding attribute", a.at);
        return;
    }
    if eq_lower(n, b"srcdoc") {
        if decoded.contains('<') {
            best.add(adj(88), "srcdoc document", a.at);
        }
        return;
    }
    if animates_handler && name_is(n, &[b"to", b"values", b"from", b"by"]) {
        best.add(adj(85), "SVG animation of a handler or href", a.at);
    }
    let url = if is_meta && eq_lower(n, b"content") {
        // <meta http-equiv=refresh content="0;url=javascript:...">
        let l = decoded.to_ascii_lowercase();
        match l.find("url=") {
            Some(p) => decoded[p + 4..].to_string(),
            None => return,
        }
    } else {
        decoded
    };
    match scheme(&url) {
        Some(Scheme::Script) if super::inert::script_url_code(&url).is_some_and(super::inert::inert_script_url) => {
            best.add(adj(super::inert::INERT), "script URL with inert code", a.at);
        }
        Some(Scheme::Script) => {
            let c = if name_is(n, URL_ATTRS) { 90 } else { 60 };
            best.add(adj(c), "script URL in an attribute", a.at);
        }
        Some(Scheme::DataHtml) => {
            let c = if name_is(n, URL_ATTRS) { 85 } else { 50 };
            best.add(adj(c), "data:text/html URL in an attribute", a.at);
        }
        Some(Scheme::Data) if name_is(tag, &[b"script", b"iframe", b"object", b"embed", b"frame"]) => {
            best.add(adj(80), "data: URL in an embedding element", a.at);
        }
        _ => {
            // `&{alert(1)}` (JavaScript entities, old Netscape) and script schemes after
            // garbage (`\x05javascript:`): weaker.
            if url.contains("&{") && js::has_sink_call(&url) {
                best.add(adj(70), "JavaScript entity in an attribute", a.at);
            } else if js::contains_script_scheme(&url) && js::has_sink_call(&url) && name_is(n, URL_ATTRS) {
                best.add(adj(70), "script URL in an attribute", a.at);
            }
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Scheme {
    Script,
    DataHtml,
    Data,
}

/// The one scheme of [`scheme`] that starts with the (lowercase) letter `c`, if any.
#[inline]
pub(crate) fn scheme_of_letter(c: u8) -> Option<&'static [u8]> {
    Some(match c {
        b'j' => b"javascript:",
        b'v' => b"vbscript:",
        b'l' => b"livescript:",
        b'm' => b"mocha:",
        b'd' => b"data:",
        _ => return None,
    })
}

/// The scheme of a URL as a browser resolves it: leading C0 controls and spaces stripped, tabs
/// and newlines removed anywhere, case-insensitive.
pub(crate) fn scheme(url: &str) -> Option<Scheme> {
    let mut buf = [0u8; 24];
    let mut n = 0;
    let mut want: &[u8] = b"";
    for c in url.bytes() {
        if n == 0 && (c <= b' ' || c == b'"' || c == b'\'' || c == b'`') {
            continue;
        }
        // Tabs and newlines are removed by the URL parser; other controls (NUL) by old engines.
        if c < b' ' {
            continue;
        }
        if n == buf.len() {
            break;
        }
        let c = c.to_ascii_lowercase();
        buf[n] = c;
        // Every scheme below starts with its own letter: the bytes must spell that scheme
        // (`Deploy to...` stops at its `e`, not after 24 bytes copied;
        // `tests::scheme_is_the_one_the_rules_read`). A script scheme is decided once spelled.
        if n == 0 {
            want = scheme_of_letter(c)?;
        }
        if n < want.len() && c != want[n] {
            return None;
        }
        n += 1;
        if n == want.len() && want[0] != b'd' {
            return Some(Scheme::Script);
        }
    }
    let l = &buf[..n];
    if l.starts_with(b"javascript:") || l.starts_with(b"vbscript:") || l.starts_with(b"livescript:") || l.starts_with(b"mocha:") {
        return Some(Scheme::Script);
    }
    if l.starts_with(b"data:") {
        let rest = &l[5..];
        if rest.starts_with(b"text/html") || rest.starts_with(b"image/svg") || rest.starts_with(b"application/xhtml") || rest.starts_with(b"text/xml") {
            return Some(Scheme::DataHtml);
        }
        return Some(Scheme::Data);
    }
    None
}

/// CSS that runs script: `expression(`, `url(javascript:`, `behavior:`, `-moz-binding`, `@import` of a script URL.
pub(crate) fn css_dangerous(css: &str) -> bool {
    // Remove comments and whitespace, decode CSS escapes (`\65` is `e`, `\x` is `x`); lowercase.
    let b = css.as_bytes();
    let mut t = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
            i = crate::other_util::find_short(&b[i + 2..], b"*/").map_or(b.len(), |e| i + 2 + e + 2);
            continue;
        }
        if b[i] == b'\\' {
            let mut j = i + 1;
            let mut v: u32 = 0;
            while j < b.len() && j < i + 7 && b[j].is_ascii_hexdigit() {
                v = v * 16 + (b[j] as char).to_digit(16).unwrap_or(0);
                j += 1;
            }
            if j > i + 1 {
                if v < 0x80 && v > 0x20 {
                    t.push((v as u8).to_ascii_lowercase());
                }
                if j < b.len() && b[j] <= b' ' {
                    j += 1;
                }
                i = j;
            } else {
                i += 1;
            }
            continue;
        }
        if b[i] > b' ' {
            t.push(b[i].to_ascii_lowercase());
        }
        i += 1;
    }
    let has = |n: &[u8]| crate::other_util::find_short(&t, n).is_some();
    has(b"expression(")
        || has(b"javascript:")
        || has(b"vbscript:")
        || has(b"behavior:")
        || has(b"behaviour:")
        || has(b"binding:")
        || has(b"@import")
        || has(b"url(data:text/html")
}

/// The named references [`decode_entities`] decodes (ASCII case-insensitive, `;` required), as
/// a list: the reference `named_entity` is tested against.
#[cfg(test)]
pub(crate) const NAMED: &[(&[u8], char)] = &[
    (b"colon;", ':'),
    (b"tab;", '\t'),
    (b"newline;", '\n'),
    (b"lpar;", '('),
    (b"rpar;", ')'),
    (b"lt;", '<'),
    (b"gt;", '>'),
    (b"quot;", '"'),
    (b"apos;", '\''),
    (b"amp;", '&'),
    (b"sol;", '/'),
    (b"bsol;", '\\'),
    (b"grave;", '`'),
    (b"period;", '.'),
    (b"semi;", ';'),
    (b"equals;", '='),
    (b"excl;", '!'),
    (b"nbsp;", ' '),
];

/// The named reference at the start of `rest` (after its `&`): its character and the bytes it
/// used. Every name of the list (`NAMED`) is letters then `;`, so a name matches exactly when the run of
/// letters at the start of `rest` is that name (in any case) and a `;` follows: one `match` on
/// the lowercased run instead of a comparison with each name (`tests::named_entity_agrees_with_the_list`).
pub(crate) fn named_entity(rest: &[u8]) -> Option<(char, usize)> {
    let n = rest.iter().take(8).take_while(|c| c.is_ascii_alphabetic()).count();
    if rest.get(n) != Some(&b';') {
        return None;
    }
    // A name of the list starts with this letter and has this length (`n >= 1` here: `rest[0]`
    // is a letter, and `& 31` is its case-free number): most runs (`ldquo`, `rsquo`, a query's
    // `&id;`) are passed over on one bit test, before any lowercasing.
    if (NAMED_LENS[(rest[0] & 31) as usize] >> n) & 1 == 0 {
        return None;
    }
    let mut buf = [0u8; 8];
    for (d, c) in buf.iter_mut().zip(&rest[..n]) {
        *d = c.to_ascii_lowercase();
    }
    let c = match &buf[..n] {
        b"colon" => ':',
        b"tab" => '\t',
        b"newline" => '\n',
        b"lpar" => '(',
        b"rpar" => ')',
        b"lt" => '<',
        b"gt" => '>',
        b"quot" => '"',
        b"apos" => '\'',
        b"amp" => '&',
        b"sol" => '/',
        b"bsol" => '\\',
        b"grave" => '`',
        b"period" => '.',
        b"semi" => ';',
        b"equals" => '=',
        b"excl" => '!',
        b"nbsp" => ' ',
        _ => return None,
    };
    Some((c, n + 1))
}

/// Bit `len` of entry `c & 31`: a name of [`named_entity`] (its letters, without the `;`) of
/// `len` letters starts with the letter `c` (either case). 64 bytes
/// (`tests::named_lens_are_those_of_the_list`).
pub(crate) const NAMED_LENS: [u16; 32] = {
    const NAMES: [&[u8]; 18] = [
        b"colon", b"tab", b"newline", b"lpar", b"rpar", b"lt", b"gt", b"quot", b"apos", b"amp", b"sol", b"bsol", b"grave", b"period", b"semi", b"equals",
        b"excl", b"nbsp",
    ];
    let mut t = [0u16; 32];
    let mut i = 0;
    while i < NAMES.len() {
        t[(NAMES[i][0] & 31) as usize] |= 1 << NAMES[i].len();
        i += 1;
    }
    t
};

/// The reference [`decode_entities`] decodes at `b[i]` (an `&`), if any: its character and the
/// number of bytes it takes (also what [`entity_scan`] reads).
#[inline]
fn entity_at(b: &[u8], i: usize) -> Option<(char, usize)> {
    if b.get(i + 1) == Some(&b'#') {
        let hexa = matches!(b.get(i + 2), Some(b'x' | b'X'));
        let mut j = i + 2 + usize::from(hexa);
        let ds = j;
        let mut val: u32 = 0;
        while j < b.len() && (if hexa { b[j].is_ascii_hexdigit() } else { b[j].is_ascii_digit() }) {
            val = val.saturating_mul(if hexa { 16 } else { 10 }).saturating_add((b[j] as char).to_digit(16).unwrap_or(0));
            j += 1;
        }
        if j == ds {
            return None;
        }
        if b.get(j) == Some(&b';') {
            j += 1;
        }
        return Some((char::from_u32(val).unwrap_or('\u{fffd}'), j - i));
    }
    named_entity(&b[i + 1..]).map(|(c, used)| (c, 1 + used))
}

/// What [`decode_entities`] makes of `v`, without making it: `None` when it decodes no
/// reference (the text is unchanged), else the length of its output and whether every
/// character it decodes is *inert* for [`super::may_hold_script`]: neither an ASCII letter
/// (no sink name can be spelled through it) nor `<`, `(`, `` ` `` or `=`. References hold no
/// `&`, so every `&` is visited as [`decode_entities`] meets them
/// (`tests::entity_scan_agrees_with_decode_entities`).
pub(crate) fn entity_scan(v: &str) -> Option<(usize, bool)> {
    let b = v.as_bytes();
    let (mut any, mut len, mut inert) = (false, b.len(), true);
    for i in memchr::memchr_iter(b'&', b) {
        if let Some((c, used)) = entity_at(b, i) {
            any = true;
            len = len - used + c.len_utf8();
            inert &= !(c.is_ascii_alphabetic() || matches!(c, '<' | '(' | '`' | '='));
        }
    }
    any.then_some((len, inert))
}

/// (The oracle of `tests::entity_scan_agrees_with_decode_entities`.)
/// Whether [`decode_entities`] changes `v`: some `&` starts a reference it decodes (references
/// hold no `&`, so it visits every `&`; each decoded reference is shorter than its text, so the
/// output differs exactly then). No allocation: most values with `&` hold only references this
/// list does not decode (`&ldquo;`, `&rsquo;`, query strings' `&`).
#[cfg(test)]
pub(crate) fn decodes_an_entity(v: &str) -> bool {
    let b = v.as_bytes();
    memchr::memchr_iter(b'&', b).any(|i| {
        if b.get(i + 1) == Some(&b'#') {
            let hexa = matches!(b.get(i + 2), Some(b'x' | b'X'));
            b.get(i + 2 + usize::from(hexa)).is_some_and(|c| if hexa { c.is_ascii_hexdigit() } else { c.is_ascii_digit() })
        } else {
            named_entity(&b[i + 1..]).is_some()
        }
    })
}

/// HTML character references: numeric (`&#106;`, `&#x6A`, with or without `;`, leading zeros)
/// and the named ones that matter for schemes and scripts (`named_entity`).
pub(crate) fn decode_entities(v: &str) -> String {
    if !v.contains('&') {
        return v.to_string();
    }
    let b = v.as_bytes();
    let mut out = String::with_capacity(v.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'&' {
            if let Some((c, used)) = entity_at(b, i) {
                out.push(c);
                i += used;
                continue;
            }
        }
        // Copy up to the next `&` at once (`&` is ASCII: the cut is on a char boundary).
        let next = memchr::memchr(b'&', &b[i + 1..]).map_or(b.len(), |p| i + 1 + p);
        out.push_str(&v[i..next]);
        i = next;
    }
    out
}

/// The value reflected inside an attribute: after the first quote of each kind (quoted
/// attribute) and from the start (unquoted), read attributes as the tokenizer does. A handler
/// whose code calls something, or a script URL, is a breakout.
pub(crate) fn attribute_breakout(s: &str, best: &mut Best, steps: &mut usize) {
    let b = s.as_bytes();
    // Every judgement below needs an attribute with a value, and the tokenizer gives a value
    // only after an `=` (read from some start in `s`): without one, nothing to judge
    // (`tests::attribute_breakout_returns_early_only_where_nothing_is_found`).
    if memchr::memchr(b'=', b).is_none() {
        return;
    }
    attribute_breakout_from_starts(s, best, steps);
}

/// [`attribute_breakout`] past its early return: the attributes read from the value's start,
/// after its first `"` and after its first `'`, judged (the general path that
/// `tests::attribute_breakout_returns_early_only_where_nothing_is_found` compares the early
/// return with).
pub(crate) fn attribute_breakout_from_starts(s: &str, best: &mut Best, steps: &mut usize) {
    let b = s.as_bytes();
    let mut starts = [None; 3];
    starts[0] = Some(0);
    starts[1] = memchr::memchr(b'"', b).map(|i| i + 1);
    starts[2] = memchr::memchr(b'\'', b).map(|i| i + 1);
    let mut attrs = Vec::new();
    for (k, st) in starts.into_iter().enumerate() {
        let Some(st) = st else { continue };
        attrs.clear();
        // Unquoted context: the value's first word is the attribute's own value.
        let from = if k == 0 { b.iter().position(|&c| is_ws(c)).unwrap_or(b.len()) } else { st };
        if k == 0 && from == b.len() && !s.contains('=') {
            continue;
        }
        let from = if k == 0 && from == b.len() { 0 } else { from };
        attributes(s, from, &mut attrs, steps);
        for a in &attrs {
            let Some(v) = a.value else { continue };
            // Inert code (`javascript:void(0)`, `return false`) is judged by the tag walk.
            if super::inert::inert_code(&decode_entities(v))
                || super::inert::script_url_code(&decode_entities(v)).is_some_and(super::inert::inert_script_url)
                    && scheme(&decode_entities(v)) == Some(Scheme::Script)
            {
                continue;
            }
            if is_handler(a.name) {
                if js::has_call(v) {
                    best.add(if k == 0 && from == 0 { 70 } else { 85 }, "attribute breakout with an event handler", a.at);
                } else if k != 0 && !v.trim().is_empty() {
                    best.add(60, "attribute breakout with an event handler", a.at);
                }
            } else if a.name.eq_ignore_ascii_case("style") && css_dangerous(&decode_entities(v)) {
                best.add(75, "attribute breakout with script in CSS", a.at);
            } else if name_is(a.name.as_bytes(), &[b"href", b"src", b"formaction", b"action", b"xlink:href"])
                && scheme(&decode_entities(v)) == Some(Scheme::Script)
            {
                best.add(75, "attribute breakout with a script URL", a.at);
            }
        }
    }
}
