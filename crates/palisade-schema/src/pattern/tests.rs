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
    assert_eq!(compile("^(?=a)a$").unwrap_err(), "lookaround is not supported");
    assert_eq!(compile("^(?!a).$").unwrap_err(), "lookaround is not supported");
    assert!(compile(r"(a)\1").is_err());
    assert!(compile("(").is_err());
    assert!(compile("a{99999}{99999}").is_err(), "size limit");
}
