//! Media type parsing, matching precedence and classification.

use super::*;

#[test]
fn parses_types_suffixes_and_parameters() {
    let m = parse("Application/JSON; Charset=\"UTF-8\"").unwrap();
    assert!(m.is("application", "json"));
    assert_eq!(m.param("charset").as_deref(), Some("UTF-8"));
    assert_eq!(m.kind(), MediaKind::Json);
    let m = parse(" application/problem+json ; a=1;b=\"x;y\\\"z\" ").unwrap();
    assert_eq!(m.suffix(), Some("json"));
    let ps: Vec<_> = m.params().map(|p| p.unwrap()).collect();
    assert_eq!(ps, vec![("a", Cow::Borrowed("1")), ("b", Cow::Owned("x;y\"z".to_string()))]);
    let m = parse("multipart/form-data; boundary=----WebKitFormBoundary7MA4YWxkTrZu0gW").unwrap();
    assert_eq!(m.param("BOUNDARY").as_deref(), Some("----WebKitFormBoundary7MA4YWxkTrZu0gW"));
    assert_eq!(parse("text/plain;").unwrap().params().count(), 0);
}

#[test]
fn rejects_malformed() {
    for bad in [
        "",
        "json",
        "application/",
        "/json",
        "app lication/json",
        "text/plain; charset",
        "text/plain; charset=\"utf-8",
        "text/plain; a=b c",
        "text/plain; =x",
        "text/plain; a=\"x\" junk",
    ] {
        assert!(parse(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn selection_precedence() {
    let ranges = ["*/*", "application/*", "application/*+json", "application/json", "application/json; charset=utf-8"];
    assert_eq!(select("application/json; charset=UTF-8", ranges), Ok(4));
    assert_eq!(select("Application/JSON", ranges), Ok(3));
    assert_eq!(select("application/problem+json", ranges), Ok(2));
    assert_eq!(select("application/xml", ranges), Ok(1));
    assert_eq!(select("text/plain", ranges), Ok(0));
    // Spec order breaks ties; order of declaration does not beat specificity.
    assert_eq!(select("application/json", ["*/*", "application/json", "application/json"]), Ok(1));
    assert_eq!(select("application/json", ["application/json; charset=utf-8", "application/json"]), Ok(1));
}

#[test]
fn parameters_in_ranges() {
    // A range parameter absent from the request still matches, below a plain exact range.
    assert_eq!(select("text/plain", ["text/plain; charset=utf-8"]), Ok(0));
    assert_eq!(select("text/plain", ["text/plain; charset=utf-8", "text/plain"]), Ok(1));
    // Conflicting values exclude the range.
    assert_eq!(select("text/plain; charset=latin1", ["text/plain; charset=utf-8"]), Err(SelectError::NoMatch));
    assert_eq!(select("text/plain; charset=latin1", ["text/plain; charset=utf-8", "text/*"]), Ok(1));
    // More matched parameters win.
    assert_eq!(select("text/plain; charset=utf-8; format=flowed", ["text/plain; charset=utf-8", "text/plain; charset=utf-8; format=flowed"]), Ok(1));
    // Non-charset values compare exactly.
    assert_eq!(select("text/plain; format=Flowed", ["text/plain; format=flowed"]), Err(SelectError::NoMatch));
}

#[test]
fn suffix_wildcards() {
    assert_eq!(select("application/vnd.api+json", ["application/*+json"]), Ok(0));
    assert_eq!(select("application/json", ["application/*+json"]), Err(SelectError::NoMatch));
    assert_eq!(select("text/foo+json", ["application/*+json"]), Err(SelectError::NoMatch));
    assert_eq!(select("text/foo+json", ["*/*+json"]), Ok(0));
    assert_eq!(select("text/foo+json", ["*/*", "*/*+json"]), Ok(1));
    assert_eq!(select("image/png", ["image/*", "*/*"]), Ok(0));
}

#[test]
fn no_match_and_bad_content_type() {
    assert_eq!(select("text/plain", ["application/json"]), Err(SelectError::NoMatch));
    assert_eq!(select("text/plain", std::iter::empty()), Err(SelectError::NoMatch));
    assert_eq!(select("garbage", ["*/*"]), Err(SelectError::BadContentType(MediaError::BadType)));
    // Unparsable declared ranges are skipped.
    assert_eq!(select("text/plain", ["not a range", "text/plain"]), Ok(1));
}

#[test]
fn classification() {
    assert!(is_json("application/json"));
    assert!(is_json("APPLICATION/JSON; charset=utf-8"));
    assert!(is_json("application/merge-patch+json"));
    assert!(is_json("text/json"));
    assert!(!is_json("application/jsonx"));
    assert!(is_form("application/x-www-form-urlencoded; charset=utf-8"));
    assert!(is_multipart("multipart/form-data; boundary=x"));
    assert!(is_multipart("Multipart/Mixed"));
    assert!(is_xml("application/xml"));
    assert!(is_xml("text/xml"));
    assert!(is_xml("application/atom+xml"));
    assert!(is_text("text/plain"));
    assert!(!is_text("text/xml"));
    assert_eq!(kind_of("image/png"), MediaKind::Other);
    assert_eq!(kind_of("nonsense"), MediaKind::Other);
}

#[test]
fn unquote_escapes() {
    assert_eq!(unquote("a\\\\b\\\"c\" rest"), Some((Cow::Owned("a\\b\"c".to_string()), 8)));
    assert_eq!(unquote("plain\""), Some((Cow::Borrowed("plain"), 6)));
    assert_eq!(unquote("unterminated"), None);
    assert_eq!(unquote("a\nb\""), None);
    assert_eq!(unquote("é\\é\""), Some((Cow::Owned("éé".to_string()), 6)));
}
