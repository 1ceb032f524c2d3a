use super::*;

fn dec(s: &str) -> (String, String) {
    let mut d = Decoder::default();
    let c = d.decode(s);
    let dc = c.decoded();
    (dc.text.to_string(), dc.transforms.to_string())
}

#[test]
fn url_layers() {
    assert_eq!(dec("%253Cscript%253E"), ("<script>".into(), "url".into()));
    assert_eq!(dec("%27%20or%201=1"), ("' or 1=1".into(), "url".into()));
    assert_eq!(dec("%u003Cscript%u003E"), ("<script>".into(), "url-unicode".into()));
    assert_eq!(dec("%uFF1Cscript%uFF1E"), ("<script>".into(), "url-unicode".into()));
    assert_eq!(dec("%uD83D%uDE00"), ("\u{1F600}".into(), "url-unicode".into()));
    assert_eq!(dec("..%c0%af..%c0%afetc"), ("../../etc".into(), "url+overlong-utf8".into()));
    assert_eq!(dec("..%c1%1c..%e0%80%afx"), ("..\\../x".into(), "url+overlong-utf8".into()));
    assert_eq!(dec("caf%C3%A9"), ("café".into(), "url".into()));
    // Invalid sequences stay visible.
    assert_eq!(dec("%ff%zz%"), ("%ff%zz%".into(), "raw".into()));
    assert_eq!(dec("a%ffb%41"), ("a%FFbA".into(), "url".into()));
    // `+` is a space in a further layer only when the text looks form-encoded.
    assert_eq!(dec("1%27+or+1=1"), ("1' or 1=1".into(), "url+plus".into()));
    assert_eq!(dec("a b+c%41"), ("a b+cA".into(), "url".into()));
    assert_eq!(dec("1+1"), ("1+1".into(), "raw".into()));
}

#[test]
fn html_references() {
    assert_eq!(dec("&lt;img src=x onerror=alert&#40;1&#x29;&gt;").0, "<img src=x onerror=alert(1)>");
    assert_eq!(dec("&#0000060script&#62").0, "<script>");
    assert_eq!(dec("&ltscript&gt").0, "<script>");
    assert_eq!(dec("javascript&colon;alert&lpar;1&rpar;").0, "javascript:alert(1)");
    assert_eq!(dec("Tom &amp; Jerry").0, "Tom & Jerry");
    // Unknown or invalid references stay.
    assert_eq!(dec("a &foo; b &#; &#x110000; &#0;"), ("a &foo; b &#; &#x110000; &#0;".into(), "raw".into()));
    // Layers combine: URL then HTML.
    assert_eq!(dec("%26lt%3Bscript%26gt%3B"), ("<script>".into(), "url+html".into()));
}

#[test]
fn js_and_css_escapes() {
    assert_eq!(dec("\\x3cscript\\x3e").0, "<script>");
    assert_eq!(dec("\\u003cscript\\u{3e}").0, "<script>");
    assert_eq!(dec("\\uD83D\\uDE00").0, "\u{1F600}");
    assert_eq!(dec("\\6a\\61 vascript:").0, "javascript:");
    // Windows paths and escaped backslashes are not mangled.
    assert_eq!(dec("C:\\dev\\be\\boot.ini"), ("C:\\dev\\be\\boot.ini".into(), "raw".into()));
    assert_eq!(dec("\\\\x41"), ("\\\\x41".into(), "raw".into()));
}

#[test]
fn nul_removed_and_base64_candidate() {
    assert_eq!(dec("<scr\0ipt>"), ("<script>".into(), "nul".into()));
    let mut d = Decoder::default();
    let c = d.decode("PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==");
    assert_eq!(c.base64().unwrap().text, "<script>alert(1)</script>");
    assert_eq!(c.len(), 2);
    let names: Vec<String> = c.iter().map(|c| c.transforms.to_string()).collect();
    assert_eq!(names, ["raw", "base64"]);
    // Words, numbers and binary are not base64 candidates.
    for v in ["administrator", "12345678901234", "AAAAAAAAAAAAAAAA", "////////////////", "dGVzdAB0ZXN0AHRlc3Q="] {
        assert!(d.decode(v).base64().is_none(), "{v}");
    }
}

#[test]
fn bounded_by_limits() {
    let mut d = Decoder::new(Limits { max_layers: 1, max_input: 8 });
    let c = d.decode("%2541%2541%2541");
    assert_eq!(c.decoded().text, "%41%");
    assert!(c.decoded().transforms.contains(Transforms::CUT));
    // Every step is length non-increasing.
    let nasty = "%u0041&#x41;\\u0041\\x41&lt;%c0%af".repeat(100);
    let mut d = Decoder::default();
    assert!(d.decode(&nasty).decoded().text.len() <= nasty.len());
}

#[test]
fn path_normalisation() {
    let mut out = String::new();
    let i = normalize_path("/var/www/../../../etc/passwd", &mut out);
    assert_eq!(out, "/../etc/passwd");
    assert_eq!((i.above_root, i.dot_dot, i.absolute), (1, 3, true));
    let i = normalize_path("..%2f..%5c..%c0%afwindows\\win.ini", &mut out);
    assert_eq!(out, "../../../windows/win.ini");
    assert!(i.encoded && i.backslashes && !i.absolute);
    assert_eq!(i.above_root, 3);
    let i = normalize_path("a//b/./c/....//d", &mut out);
    assert_eq!(out, "a/b/d");
    assert_eq!(i.above_root, 0);
    normalize_path("images/logo.png", &mut out);
    assert_eq!(out, "images/logo.png");
}

#[test]
fn entity_lookup_agrees_with_the_list() {
    // Every name of the list, and near misses (case, prefixes, extensions, unknown names).
    let mut names: Vec<String> = Vec::new();
    for (n, _) in ENTITIES {
        names.extend([n.to_string(), n.to_ascii_uppercase(), n.to_ascii_lowercase(), n[..n.len() - 1].to_string(), format!("{n}x"), format!("x{n}")]);
    }
    names.extend(["", "ldquo", "rdquo", "rsquo", "hellip", "foo", "ltscript", "Amp", "nbsp1"].map(String::from));
    for name in &names {
        let linear = ENTITIES.iter().find(|(k, _)| k == name).map(|(_, t)| *t);
        assert_eq!(entity(name), linear, "{name:?}");
    }
    assert_eq!(entity("rsquo"), Some("\u{2019}"));
}
