use super::*;

fn m(p: &str, s: &str) -> bool {
    compile(p).unwrap().is_match(s.as_bytes())
}

#[test]
fn ascii_classes() {
    assert!(m(r"^\d+$", "0123"));
    assert!(!m(r"^\d+$", "١٢٣"), "ECMA \\d is ASCII only");
    assert!(m(r"^\w+$", "abc_123"));
    assert!(!m(r"^\w+$", "é"));
    assert!(m(r"^[\d\w-]+$", "a-1"));
    assert!(!m(r"^[\d]+$", "٣"));
    assert!(m(r"^\D$", "a"));
    assert!(m(r"^\W$", "é"));
    assert!(m(r"\bfoo\b", "a foo b"));
    assert_eq!(translate(r"\cJ"), r"\x0A");
    assert!(m(r"^\cJ$", "\n"));
}

#[test]
fn unanchored_search_and_escapes() {
    assert!(m("abc", "xxabcxx"));
    assert!(m(r"^a\/b$", "a/b"));
    assert!(m(r"^[a-z0-9-]*$", "hello-world-1"));
    assert!(!m(r"^[a-z0-9-]*$", "Hello"));
    assert!(m(r"^\+?[0-9 ()-]{7,20}$", "+1-202-555-0147"));
    assert!(m(r"^\u00e9$", "é"));
    assert!(m(r"^[&~]+$", "&~"));
    assert!(m(r"^[[]$", "["));
    assert!(m("^.{2}$", "é😀"), "counts code points, not bytes");
}

#[test]
fn unsupported_is_an_error_not_a_panic() {
    assert_eq!(compile("^(?=a)a$").unwrap_err().message(), "lookaround is not supported");
    assert_eq!(compile("^(?!a).$").unwrap_err().message(), "lookaround is not supported");
    assert!(compile(r"(a)\1").is_err());
    let e = compile("(").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Pattern);
    // The message is the regex engine's last line; the engine's whole error is the cause.
    let cause = std::error::Error::source(&e).expect("the regex error").to_string();
    assert!(cause.ends_with(e.message()) && cause.len() > e.message().len(), "{cause:?} / {e}");
    assert!(compile("a{99999}{99999}").is_err(), "size limit");
    // Neither engine: the message names both refusals.
    let e = Pattern::new(r"(?=a)(").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Pattern);
    assert!(e.message().starts_with("lookaround is not supported; "), "{e}");
}

/// The byte-table matcher decides exactly what the regex decides, on the patterns it accepts.
#[test]
fn simple_patterns_agree_with_the_regex() {
    let simple = [
        r"^[a-z0-9-]*$",
        r"^ord_[0-9a-f]{16}$",
        r"^SKU-[0-9]{5}$",
        r"^[0-9]{4}$",
        r"^[A-Z]{2}$",
        r"^[0-9A-Za-z -]{3,10}$",
        r"^\+?[0-9 ()-]{7,20}$",
        r"^\d+$",
        r"^\w{2,}$",
        r"^[\w.]+@-$",
        r"^a?b*c+d{2}e{1,}f{0,2}$",
        r"^[-a]$",
        r"^[a-]$",
        r"^\$\.x$",
        r"^$",
        r"^[\d\-]{1,3}x$",
    ];
    let not_simple = [
        r"^[a-z]+[a-z0-9]*$", // overlapping repeats: greedy is not exact
        r"^a*a$",
        r"^\d+\d$",
        r"abc",
        r"^abc",
        r"abc$",
        r"^a.c$",
        r"^(ab)+$",
        r"^a|b$",
        r"^[^a]$",
        r"^a+?$",
        r"^\s$",
        r"^é$",
        r"^a\$",
        r"^[\d-z]$",
        r"^[a&&b]$",
        r"^a{2,1}$",
    ];
    for p in not_simple {
        assert!(Simple::parse(p).is_none(), "{p} must not be simple");
    }
    let alphabet: &[u8] = b"aAbcdefzZ09_-+ ()$.@xSKUord5\n\xc3\xa9";
    let mut rng = palisade_testkit::rng::XorShift64::new(0x2545_F491_4F6C_DD1D);
    let mut rnd = move || rng.next_u64();
    for p in simple {
        let s = Simple::parse(p).unwrap_or_else(|| panic!("{p} must be simple"));
        let re = compile(p).unwrap();
        for n in 0..4000 {
            let len = (rnd() % 24) as usize;
            let mut text: Vec<u8> = (0..len).map(|_| alphabet[(rnd() % alphabet.len() as u64) as usize]).collect();
            if n % 4 == 0 {
                // Near misses of matching strings: mutate an example that matches.
                text = match p {
                    r"^ord_[0-9a-f]{16}$" => b"ord_7f3a9c2e41b84d0f".to_vec(),
                    r"^SKU-[0-9]{5}$" => b"SKU-10023".to_vec(),
                    r"^\+?[0-9 ()-]{7,20}$" => b"+1-202-555-0147".to_vec(),
                    _ => text,
                };
                if !text.is_empty() && n % 8 == 0 {
                    let i = (rnd() % text.len() as u64) as usize;
                    text[i] = alphabet[(rnd() % alphabet.len() as u64) as usize];
                }
            }
            assert_eq!(s.is_match(&text), re.is_match(&text), "{p} on {:?}", String::from_utf8_lossy(&text));
        }
    }
}
