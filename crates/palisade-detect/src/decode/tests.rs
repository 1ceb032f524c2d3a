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

/// The premise of the pipeline's fixed-point shortcut: a layer changes nothing in a text
/// without its trigger byte (`%`, `&`, `\`), so a round over such a text changes nothing and
/// the loop may stop. Checked on `v` and on every layer's output.
fn layers_fix_texts_without_triggers(v: &str) {
    let (mut out, mut bytes) = (String::new(), Vec::new());
    let mut texts = vec![v.to_string()];
    for layer in 0..3 {
        out.clear();
        let t = match layer {
            0 => url_layer(v, false, true, &mut out, &mut bytes),
            1 => html_layer(v, &mut out),
            _ => escape_layer(v, &mut out),
        };
        if !t.is_empty() {
            texts.push(out.clone());
        }
    }
    for t in texts.iter().filter(|t| !t.bytes().any(|c| matches!(c, b'%' | b'&' | b'\\'))) {
        out.clear();
        assert!(url_layer(t, false, true, &mut out, &mut bytes).is_empty(), "url layer on {t:?}");
        assert!(html_layer(t, &mut out).is_empty(), "html layer on {t:?}");
        assert!(escape_layer(t, &mut out).is_empty(), "escape layer on {t:?}");
    }
}

/// What the pipeline's result is, whatever the layers did: no NUL and no invisible character
/// left, with the flags saying they were removed; no transform at all for a value without
/// anything to decode; and the text unchanged when no transform is reported.
fn pipeline_result_is_clean(v: &str, max_layers: u8, tf: Transforms, out: &str) {
    assert!(!out.contains('\0') && !out.chars().any(invisible_char), "{v:?} gives {out:?}");
    if !may_decode(v) {
        assert!(tf.is_empty(), "{v:?}");
    }
    if tf.is_empty() {
        assert_eq!(out, v, "{v:?} with {max_layers} layers");
    }
}

/// The invisible format characters, as listed in the pipeline's documentation: soft hyphen,
/// Mongolian vowel separator, zero-width space, non-joiner and joiner, word joiner, BOM.
fn invisible_char(c: char) -> bool {
    matches!(c, '\u{ad}' | '\u{180e}' | '\u{200b}' | '\u{200c}' | '\u{200d}' | '\u{2060}' | '\u{feff}')
}

/// One value through the pipeline (its properties and the premise of its shortcut) and through
/// [`base64_candidate`] (against [`base64_spec`]).
fn follows_the_rules(v: &str) {
    let (mut a, mut b, mut bytes) = (String::new(), String::new(), Vec::new());
    assert_eq!(may_decode(v), v.bytes().any(|b| matches!(b, b'%' | b'&' | b'\\' | 0)) || v.chars().any(invisible_char), "{v:?}");
    for layers in [1, 4] {
        let t = pipeline(v, layers, &mut a, &mut b, &mut bytes);
        pipeline_result_is_clean(v, layers, t, &a);
    }
    layers_fix_texts_without_triggers(v);
    base64_agrees(v);
}

/// What [`base64_candidate`] accepts, written from its documentation: at least
/// [`BASE64_MIN_LEN`] characters of the standard or URL-safe alphabet (a length that is not
/// one more than a multiple of four) and at most two `=` after them, with upper and lower case
/// letters or letters and digits, decoding (six bits a character, the bits left over dropped)
/// to UTF-8 text of at least four characters, no NUL, and nine in ten of them printable or
/// whitespace.
fn base64_spec(s: &str) -> Option<String> {
    let t = s.trim_end_matches('=');
    if t.len() < BASE64_MIN_LEN || s.len() - t.len() > 2 || t.len() % 4 == 1 {
        return None;
    }
    let has = |f: fn(&u8) -> bool| t.as_bytes().iter().any(f);
    let (upper, lower, digit) = (has(u8::is_ascii_uppercase), has(u8::is_ascii_lowercase), has(u8::is_ascii_digit));
    if !(upper && lower || digit && (upper || lower)) {
        return None;
    }
    const STD: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const URL: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut bits = String::new();
    for c in t.chars() {
        let v = STD.find(c).or_else(|| URL.find(c))?;
        bits.push_str(&format!("{v:06b}"));
    }
    let bytes: Vec<u8> = bits.as_bytes().chunks_exact(8).map(|b| u8::from_str_radix(std::str::from_utf8(b).unwrap(), 2).unwrap()).collect();
    let text = String::from_utf8(bytes).ok()?;
    let total = text.chars().count();
    let printable = text.chars().filter(|&c| !c.is_control() || matches!(c, '\n' | '\r' | '\t')).count();
    (total >= 4 && !text.contains('\0') && printable * 10 >= total * 9).then_some(text)
}

/// [`base64_candidate`] (with its early rejection) and [`base64_spec`]: same answer, same text.
fn base64_agrees(v: &str) {
    let (mut bytes, mut out) = (Vec::new(), String::new());
    let t = base64_candidate(v, &mut bytes, &mut out);
    assert_eq!(t.then_some(out), base64_spec(v), "{v:?}");
}

/// Standard and URL-safe base64 (padded or not) of random bytes, of random text (ASCII,
/// controls, NUL, multi-byte characters) and random strings of the alphabet: the early
/// rejection of [`base64_candidate`] never changes its answer.
#[test]
fn generated_base64_decodes_as_the_spec() {
    use palisade_testkit::rng::XorShift64;
    const STD: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    fn encode(b: &[u8], url: bool, pad: bool) -> String {
        let mut s = String::new();
        for ch in b.chunks(3) {
            let n = ch.len();
            let w = (ch[0] as u32) << 16 | (*ch.get(1).unwrap_or(&0) as u32) << 8 | *ch.get(2).unwrap_or(&0) as u32;
            for k in 0..=n {
                let mut c = STD[(w >> (18 - 6 * k) & 63) as usize];
                if url {
                    c = match c {
                        b'+' => b'-',
                        b'/' => b'_',
                        c => c,
                    };
                }
                s.push(c as char);
            }
            if pad {
                for _ in n..3 {
                    s.push('=');
                }
            }
        }
        s
    }
    let pieces = ["a", "Z", " ", "\n", "\t", "\0", "\u{1}", "\u{7f}", "é", "\u{2019}", "\u{1F600}", "<script>", "1", "'"];
    let mut rng = XorShift64::new(0x9e37_79b9_7f4a_7c15);
    let mut trues = 0;
    for i in 0..200_000 {
        let raw: Vec<u8> = match i % 3 {
            0 => (0..rng.below(30)).map(|_| rng.below(256) as u8).collect(),
            1 => {
                let mut t = String::new();
                for _ in 0..rng.below(12) {
                    t.push_str(pieces[rng.below(pieces.len())]);
                }
                t.into_bytes()
            }
            _ => {
                let s: String = (0..rng.below(40)).map(|_| STD[rng.below(64)] as char).collect();
                base64_agrees(&s);
                continue;
            }
        };
        let s = encode(&raw, rng.below(2) == 1, rng.below(2) == 1);
        base64_agrees(&s);
        trues += base64_candidate(&s, &mut Vec::new(), &mut String::new()) as usize;
    }
    assert!(trues > 1000, "{trues}");
}

/// Generated values of escapes, entities, base64 and prose pieces (bounded, fixed seed): the
/// pipeline's result follows its rules and the premise of its fixed-point shortcut holds.
#[test]
fn generated_values_decode_by_the_pipelines_rules() {
    use palisade_testkit::rng::XorShift64;
    let parts = [
        "%",
        "%25",
        "%3C",
        "%2",
        "%u003c",
        "%c0%af",
        "&",
        "&amp;",
        "&ldquo;",
        "&#39;",
        "&#x3c;",
        "&lt",
        "&amp;lt;",
        "&#",
        "\\",
        "\\x3c",
        "\\u0041",
        "\\\\",
        "\\3c ",
        "\0",
        "+",
        "=",
        "==",
        "/",
        "_",
        "-",
        "a",
        "Zm9v",
        "YWxlcnQoMSk",
        "PHNjcmlwdD4",
        "QUJD",
        "1",
        "x",
        " ",
        "Query",
        "don",
        "\u{2019}",
        "é",
        "?",
        "page=1",
        ":",
        "T",
    ];
    let mut rng = XorShift64::new(0x2545_f491_4f6c_dd1d);
    for _ in 0..60_000 {
        let mut v = String::new();
        for _ in 0..=rng.below(10) {
            v.push_str(parts[rng.below(parts.len())]);
        }
        follows_the_rules(&v);
    }
}

/// Every value of the development corpus (when present), the benign sets and the handwritten
/// attacks, and the bench bodies' strings.
#[test]
fn corpus_values_decode_by_the_pipelines_rules() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<_> = ["data/benign", "data/attacks"].iter().flat_map(|d| std::fs::read_dir(root.join(d)).unwrap().map(|e| e.unwrap().path())).collect();
    let corpus = root.join("../../../shared/data/attack-corpus/corpus.jsonl");
    if corpus.exists() {
        files.push(corpus);
    }
    let mut n = 0;
    for f in files.iter().filter(|p| p.extension().is_some_and(|e| e == "jsonl")) {
        for s in crate::eval::parse_corpus(&std::fs::read_to_string(f).unwrap()).unwrap() {
            follows_the_rules(&s.value);
            n += 1;
        }
    }
    assert!(n > 1000, "{n}");
}

#[test]
fn invisible_characters_are_removed() {
    let mut d = Decoder::default();
    for (raw, want) in
        [("UN\u{200b}ION SEL\u{200c}ECT 1", "UNION SELECT 1"), ("<scr\u{feff}ipt>", "<script>"), ("al\u{ad}ert(1)", "alert(1)"), ("a%20b\u{2060}c", "a bc")]
    {
        let c = d.decode(raw);
        let dec = c.decoded.expect(raw);
        assert_eq!(dec.text, want, "{raw:?}");
        assert!(dec.transforms.contains(Transforms::INVISIBLE), "{raw:?}");
    }
    // Visible text of other scripts is left alone.
    assert!(d.decode("日本語 テキスト — “quoted”").decoded.is_none());
}
