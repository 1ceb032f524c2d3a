//! XML tokenizer and well-formedness: tokens with spans, balance, attributes, references,
//! DOCTYPE with an internal subset, depth limits.

use super::*;

fn ok(s: &str) -> Summary {
    check(s.as_bytes(), &Limits::default()).unwrap_or_else(|e| panic!("{s:?}: {e:?}"))
}

fn bad(s: &str) -> XmlErrorKind {
    check(s.as_bytes(), &Limits::default()).expect_err(s).kind
}

#[test]
fn tokens_with_spans() {
    let s = br#"<?xml version="1.0"?><!-- c --><a x="1" y='&amp;'>t<![CDATA[<raw>]]><b/><?pi data?></a>"#;
    let toks: Vec<_> = Tokenizer::new(s).map(|t| t.unwrap()).collect();
    let text = |r: &Span| std::str::from_utf8(&s[r.clone()]).unwrap();
    assert!(matches!(&toks[0], Token::XmlDecl { span } if text(span) == r#"<?xml version="1.0"?>"#));
    assert!(matches!(&toks[1], Token::Comment { text: t } if text(t) == " c "));
    let Token::StartTag { name, attrs, self_closing: false } = &toks[2] else { panic!("{:?}", toks[2]) };
    assert_eq!(text(name), "a");
    let at: Vec<_> = attributes(s, attrs.clone()).map(|a| a.unwrap()).map(|a| (text(&a.name), text(&a.value))).collect();
    assert_eq!(at, vec![("x", "1"), ("y", "&amp;")]);
    assert!(matches!(&toks[3], Token::Text { text: t } if text(t) == "t"));
    assert!(matches!(&toks[4], Token::Cdata { text: t } if text(t) == "<raw>"));
    assert!(matches!(&toks[5], Token::StartTag { name, self_closing: true, .. } if text(name) == "b"));
    assert!(matches!(&toks[6], Token::Pi { target, data } if text(target) == "pi" && text(data) == "data"));
    assert!(matches!(&toks[7], Token::EndTag { name } if text(name) == "a"));
    assert_eq!(toks.len(), 8);
}

#[test]
fn well_formed_documents() {
    let s = ok("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!-- top -->\n<root a=\"1\" b='2'>\n  <child>text &lt; &#60; &#x3C; &quot;&apos;&gt;&amp;</child>\n  <empty/>\n  <![CDATA[ <not> & markup ]]>\n</root>\n<?after pi?>\n");
    assert_eq!(s.elements, 3);
    assert_eq!(s.max_depth, 2);
    assert_eq!(s.doctype, None);
    ok("<a/>");
    ok("\u{feff}<a></a>");
    ok("<a:b xmlns:a='urn:x'><a:c/></a:b>");
    ok("<é>ü</é>");
    ok("<a >x</a >");
}

#[test]
fn unbalanced_and_roots() {
    assert_eq!(bad("<a><b></a></b>"), XmlErrorKind::Unbalanced);
    assert_eq!(bad("<a></b>"), XmlErrorKind::Unbalanced);
    assert_eq!(bad("</a>"), XmlErrorKind::Unbalanced);
    assert_eq!(bad("<a><b>"), XmlErrorKind::UnclosedElement);
    assert_eq!(bad("<a/><b/>"), XmlErrorKind::MultipleRoots);
    assert_eq!(bad("<a></a><b></b>"), XmlErrorKind::MultipleRoots);
    assert_eq!(bad(""), XmlErrorKind::NoRoot);
    assert_eq!(bad("<!-- only -->"), XmlErrorKind::NoRoot);
    assert_eq!(bad("text<a/>"), XmlErrorKind::TextOutsideRoot);
    assert_eq!(bad("<a/>text"), XmlErrorKind::TextOutsideRoot);
    assert_eq!(bad("<![CDATA[x]]><a/>"), XmlErrorKind::TextOutsideRoot);
    assert_eq!(bad(" <?xml version='1.0'?><a/>"), XmlErrorKind::MisplacedDeclaration);
    assert_eq!(bad("<a"), XmlErrorKind::Unterminated);
    assert_eq!(bad("<a><!-- x </a>"), XmlErrorKind::Unterminated);
    assert_eq!(bad("< a/>"), XmlErrorKind::BadName);
    assert_eq!(bad("<1a/>"), XmlErrorKind::BadName);
    assert_eq!(bad("<a></a x>"), XmlErrorKind::BadMarkup);
}

#[test]
fn attributes_syntax_and_uniqueness() {
    assert_eq!(bad("<a x='1' x='2'/>"), XmlErrorKind::DuplicateAttribute);
    assert_eq!(bad("<a x='1' y='2' z='3' y=\"4\"></a>"), XmlErrorKind::DuplicateAttribute);
    ok("<a x='1' X='2' x:y='3'/>");
    assert_eq!(bad("<a x=1/>"), XmlErrorKind::BadAttribute);
    assert_eq!(bad("<a x/>"), XmlErrorKind::BadAttribute);
    assert_eq!(bad("<a x='1'y='2'/>"), XmlErrorKind::BadAttribute);
    assert_eq!(bad("<a x='<'/>"), XmlErrorKind::LtInAttribute);
    assert_eq!(bad("<a x='&'/>"), XmlErrorKind::BadReference);
    ok("<a x='>' y=\"'\"/>");
    let many: String = (0..300).map(|i| format!(" a{i}='1'")).collect();
    assert_eq!(bad(&format!("<a{many}/>")), XmlErrorKind::TooManyAttributes);
}

#[test]
fn references_and_text_rules() {
    for r in ["&amp;", "&lt;", "&#65;", "&#x1F600;"] {
        ok(&format!("<a>{r}</a>"));
    }
    // Without a DOCTYPE only the predefined entities exist (WFC: Entity Declared); with one,
    // any name may have been declared there.
    assert_eq!(bad("<a>&custom;</a>"), XmlErrorKind::BadReference);
    assert_eq!(bad("<a x='&nope;'/>"), XmlErrorKind::BadReference);
    ok("<!DOCTYPE a [<!ENTITY name-with.dots 'v'>]><a x='&name-with.dots;'>&name-with.dots;</a>");
    for r in ["& ", "&;", "&#;", "&#x;", "&#0;", "&#xD800;", "&#x110000;", "&#12a;", "&1a;", "&amp"] {
        assert_eq!(bad(&format!("<a>{r}</a>")), XmlErrorKind::BadReference, "{r}");
    }
    assert_eq!(bad("<a>x]]>y</a>"), XmlErrorKind::CdataEndInText);
    assert_eq!(bad("<a><!-- a -- b --></a>"), XmlErrorKind::DoubleHyphenInComment);
    assert_eq!(check(b"<a>\xff</a>", &Limits::default()).unwrap_err(), XmlError { offset: 3, kind: XmlErrorKind::NotUtf8 });
}

#[test]
fn doctype_with_internal_subset() {
    let doc = "<?xml version=\"1.0\"?>\n<!DOCTYPE foo [\n  <!ELEMENT foo ANY>\n  <!-- ] in a comment -->\n  <!ENTITY xxe SYSTEM \"file:///etc/passwd\">\n  <!ENTITY q '] quoted >'>\n]>\n<foo>&xxe;</foo>";
    let s = ok(doc);
    let span = s.doctype.clone().unwrap();
    assert!(doc[span].starts_with("<!DOCTYPE foo"));
    let tok = Tokenizer::new(doc.as_bytes()).map(|t| t.unwrap()).find(|t| matches!(t, Token::Doctype { .. })).unwrap();
    let Token::Doctype { name, external, internal_subset, .. } = tok else { unreachable!() };
    assert_eq!(&doc[name], "foo");
    assert_eq!(external, None);
    let subset = &doc[internal_subset.unwrap()];
    assert!(subset.contains("<!ENTITY xxe SYSTEM \"file:///etc/passwd\">"));
    assert!(subset.trim_end().ends_with("'] quoted >'>"));
    // External ids.
    let doc = "<!DOCTYPE html PUBLIC \"-//W3C//DTD XHTML 1.0//EN\" 'x.dtd'><html/>";
    let Some(Ok(Token::Doctype { external: Some(e), internal_subset: None, .. })) = Tokenizer::new(doc.as_bytes()).next() else { panic!() };
    assert_eq!(&doc[e], "PUBLIC \"-//W3C//DTD XHTML 1.0//EN\" 'x.dtd'");
    ok("<!DOCTYPE a SYSTEM \"a.dtd\" [<!ENTITY e 'v'>]><a>&e;</a>");
    assert_eq!(bad("<a/><!DOCTYPE a>"), XmlErrorKind::MisplacedDoctype);
    assert_eq!(bad("<!DOCTYPE a><!DOCTYPE a><a/>"), XmlErrorKind::MisplacedDoctype);
    assert_eq!(bad("<!DOCTYPE a [<!ENTITY e 'v'>"), XmlErrorKind::Unterminated);
    assert_eq!(bad("<!DOCTYPE a SYSTEM><a/>"), XmlErrorKind::BadMarkup);
}

#[test]
fn deep_nesting_fails_fast_without_recursion() {
    let depth = 100_000;
    let doc = format!("{}{}", "<a>".repeat(depth), "</a>".repeat(depth));
    let start = std::time::Instant::now();
    let e = check(doc.as_bytes(), &Limits::default()).unwrap_err();
    assert_eq!(e.kind, XmlErrorKind::TooDeep);
    assert_eq!(e.offset, 256 * 3);
    assert!(start.elapsed() < std::time::Duration::from_secs(1));
    // With a limit above the depth it is fine (iterative: no stack overflow).
    let l = Limits { max_depth: depth, ..Limits::default() };
    assert_eq!(check(doc.as_bytes(), &l).unwrap().max_depth, depth);
    // And the tokenizer alone streams through it.
    assert_eq!(Tokenizer::new(doc.as_bytes()).count(), 2 * depth);
}

#[test]
fn size_limit_and_checker_reuse() {
    let l = Limits { max_bytes: 10, ..Limits::default() };
    assert_eq!(check(b"<a>0123456789</a>", &l).unwrap_err().kind, XmlErrorKind::TooLarge);
    let mut c = Checker::default();
    assert!(c.check(b"<a><b>", &Limits::default()).is_err());
    assert_eq!(c.check(b"<a><b/></a>", &Limits::default()).unwrap().elements, 2);
}
