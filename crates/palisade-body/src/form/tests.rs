//! Percent-decoding by source and the pair splitter of query strings and form bodies.

use super::*;

#[test]
fn percent_decoding_edge_cases() {
    let mut s = Vec::new();
    assert_eq!(percent_decode(b"a%2Fb", DecodeMode::Form, &mut s), Ok("a/b"));
    assert_eq!(percent_decode(b"a+b", DecodeMode::Form, &mut s), Ok("a b"));
    assert_eq!(percent_decode(b"a+b", DecodeMode::Path, &mut s), Ok("a+b"));
    assert_eq!(percent_decode(b"a%2Bb", DecodeMode::Form, &mut s), Ok("a+b"));
    assert_eq!(percent_decode(b"%00", DecodeMode::Form, &mut s), Ok("\0"));
    assert_eq!(percent_decode(b"%e2%82%ac", DecodeMode::Form, &mut s), Ok("€"));
    assert_eq!(percent_decode(b"%C0%AF", DecodeMode::Form, &mut s), Err(DecodeError::BadUtf8)); // overlong '/'
    assert_eq!(percent_decode(b"%ED%A0%80", DecodeMode::Form, &mut s), Err(DecodeError::BadUtf8)); // surrogate
    assert_eq!(percent_decode(b"%E2%82", DecodeMode::Form, &mut s), Err(DecodeError::BadUtf8)); // truncated
    assert_eq!(percent_decode(b"\xff", DecodeMode::Form, &mut s), Err(DecodeError::BadUtf8));
    assert_eq!(percent_decode(b"%zz", DecodeMode::Form, &mut s), Err(DecodeError::BadPercent));
    assert_eq!(percent_decode(b"%4", DecodeMode::Path, &mut s), Err(DecodeError::BadPercent));
    assert_eq!(percent_decode(b"100%", DecodeMode::Form, &mut s), Err(DecodeError::BadPercent));
    assert_eq!(percent_decode(b"100%", DecodeMode::Cookie, &mut s), Ok("100%"));
    assert_eq!(percent_decode(b"a%20b", DecodeMode::None, &mut s), Ok("a%20b"));
}

#[test]
fn query_parser_pairs() {
    let mut q = Query::default();
    q.parse(b"a=1&b=&c&&d=x=y&a=2&%61%62=3&bad%zz=4&n+m=5").unwrap();
    let got: Vec<_> = q.iter().map(|p| (p.name, p.raw_value, p.has_eq, p.name_error)).collect();
    assert_eq!(
        got,
        vec![
            ("a", &b"1"[..], true, None),
            ("b", &b""[..], true, None),
            ("c", &b""[..], false, None),
            ("d", &b"x=y"[..], true, None),
            ("a", &b"2"[..], true, None),
            ("ab", &b"3"[..], true, None),
            ("bad%zz", &b"4"[..], true, Some(DecodeError::BadPercent)),
            ("n m", &b"5"[..], true, None),
        ]
    );
    // Reuse: the previous content is gone.
    q.parse(b"z=9").unwrap();
    assert_eq!(q.len(), 1);
    assert_eq!(q.get(0).name, "z");
    q.parse(b"").unwrap();
    assert!(q.is_empty());
}

#[test]
fn query_parser_limit() {
    let mut q = Query::with_limit(3);
    assert_eq!(q.parse(b"a&b&c&d"), Err(QueryError::TooManyPairs { limit: 3 }));
    assert_eq!(q.len(), 3);
    assert_eq!(q.parse(b"a&b&c"), Ok(()));
}

#[test]
fn value_ranges_index_the_raw_text() {
    let mut q = Query::default();
    q.parse(b"a=1&bb=x%20y&c").unwrap();
    let values: Vec<&[u8]> = (0..q.len()).map(|i| &q.raw()[q.value_range(i)]).collect();
    assert_eq!(values, [&b"1"[..], b"x%20y", b""]);
}
