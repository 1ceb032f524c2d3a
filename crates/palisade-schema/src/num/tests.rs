use super::*;
use std::cmp::Ordering::*;

fn c(a: &str, b: &str) -> Ordering {
    cmp(a.as_bytes(), b.as_bytes()).unwrap()
}

#[test]
fn parse_normalizes() {
    let d = parse(b"-0012.3400e2").unwrap();
    assert!(d.neg);
    assert_eq!(d.n, 4);
    assert_eq!(d.point, 4);
    assert_eq!((0..d.n).map(|i| d.digit(i)).collect::<Vec<_>>(), [1, 2, 3, 4]);
    assert_eq!(d.exp(), 0);
    assert!(parse(b"0.000").unwrap().is_zero());
    assert!(parse(b"1.").is_none());
    assert!(parse(b"abc").is_none());
    assert!(parse(b"1e").is_none());
    assert!(parse(b"").is_none());
}

#[test]
fn exact_comparisons() {
    assert_eq!(c("1", "1.0"), Equal);
    assert_eq!(c("1e2", "100"), Equal);
    assert_eq!(c("-0", "0"), Equal);
    assert_eq!(c("0.1", "0.10000000000000001"), Less);
    // Beyond 2^53: f64 cannot tell these apart.
    assert_eq!(c("9007199254740993", "9007199254740992"), Greater);
    assert_eq!((9007199254740993u64 as f64), (9007199254740992u64 as f64));
    // Beyond i64 and u64.
    assert_eq!(c("18446744073709551617", "18446744073709551616"), Greater);
    assert_eq!(c("-18446744073709551617", "-18446744073709551616"), Less);
    assert_eq!(c("123456789012345678901234567890", "1.2345678901234567890123456789e29"), Equal);
    assert_eq!(c("1e400", "1e399"), Greater);
    assert_eq!(c("-1e400", "1"), Less);
    assert_eq!(c("1e-400", "0"), Greater);
    assert_eq!(c("0.5", "-0.5"), Greater);
    assert_eq!(c("1e999999999999999999999", "1e1000"), Greater);
}

#[test]
fn instance_against_bounds() {
    let max = Num::from_text("9007199254740992").unwrap();
    assert_eq!(cmp_instance(b"9007199254740993", Some(9007199254740993), &max), Greater);
    let max = Num::from_text("18446744073709551616").unwrap();
    assert_eq!(cmp_instance(b"18446744073709551617", None, &max), Greater);
    assert_eq!(cmp_instance(b"18446744073709551616", None, &max), Equal);
    assert_eq!(cmp_instance(b"18446744073709551615", None, &max), Less);
    let m = Num::from_f64(0.1).unwrap();
    assert_eq!(&*m.text, "1e-1");
    assert_eq!(cmp_instance(b"0.1", None, &m), Equal);
    assert_eq!(cmp_instance(b"0.1000000000000000000001", None, &m), Greater);
    assert_eq!(Num::from_i64(-5).i, Some(-5));
}

#[test]
fn multiple_of() {
    let m = |s: &str| Num::from_text(s).unwrap();
    assert!(is_multiple(b"10", Some(10), &m("5")));
    assert!(!is_multiple(b"11", Some(11), &m("5")));
    assert!(is_multiple(b"0.3", None, &m("0.1")));
    assert!(is_multiple(b"4.5", None, &m("1.5")));
    assert!(!is_multiple(b"4.6", None, &m("1.5")));
    assert!(is_multiple(b"0.0075", None, &m("0.0001")));
    assert!(!is_multiple(b"0.00751", None, &m("0.0001")));
    assert!(is_multiple(b"1e308", None, &m("1")));
    assert!(!is_multiple(b"1e30", None, &m("7e29")));
    assert!(is_multiple(b"7e30", None, &m("7e29")));
    assert!(is_multiple(b"0", Some(0), &m("3")));
    assert!(!is_multiple(b"1", Some(1), &m("10")));
    // Beyond i64: 2^64 + 2 is even, 2^64 + 1 is odd.
    assert!(is_multiple(b"18446744073709551618", None, &m("2")));
    assert!(!is_multiple(b"18446744073709551617", None, &m("2")));
    assert!(is_multiple(b"123456789012345678901234567890", None, &m("10")));
    assert!(!is_multiple(b"123456789012345678901234567891", None, &m("3")));
    // A huge exponent does not loop.
    assert!(is_multiple(b"1e999999999", None, &m("2")));
    assert!(!is_multiple(b"1e-999999999", None, &m("2")));
}

#[test]
fn integral() {
    for s in ["1", "1.0", "1e2", "-0", "0.0", "1.5e1", "12345678901234567890123"] {
        assert!(is_integral_text(s.as_bytes()), "{s}");
    }
    for s in ["1.5", "1e-1", "0.001", "123.4567e2"] {
        assert!(!is_integral_text(s.as_bytes()), "{s}");
    }
}

/// Decimals compared with integer bounds without conversion agree with the general path.
#[test]
fn decimal_against_integer_bounds() {
    let texts = [
        "0.0",
        "-0.0",
        "0.5",
        "-0.5",
        "1.0",
        "1.5",
        "-1.5",
        "-1.0",
        "24.99",
        "999999.99",
        "1000000.0",
        "1000000.01",
        "-1000000.5",
        "12.000",
        "7.0001",
        "123456789012345678.5",
        "1234567890123456789.5",
        "1e2",
        "-2.5e1",
        "0.1",
    ];
    let bounds = [0i64, 1, -1, 7, 12, 24, 25, -2, 1000000, -1000000, i64::MAX, i64::MIN];
    for t in texts {
        for b in bounds {
            let bound = Num::from_i64(b);
            let general = {
                let f: f64 = t.parse().unwrap();
                match f.partial_cmp(&bound.f) {
                    Some(Equal) | None => cmp(t.as_bytes(), bound.text.as_bytes()).unwrap(),
                    Some(o) => o,
                }
            };
            let exact = cmp(t.as_bytes(), bound.text.as_bytes()).unwrap();
            assert_eq!(cmp_instance(t.as_bytes(), None, &bound), exact, "{t} vs {b}");
            assert_eq!(general, exact, "{t} vs {b}");
        }
    }
}
