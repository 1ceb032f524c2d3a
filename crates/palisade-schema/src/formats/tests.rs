use super::*;

fn check(f: Format, good: &[&str], bad: &[&str]) {
    for s in good {
        assert!(f.check_str(s.as_bytes()), "{} should accept {s:?}", f.name());
    }
    for s in bad {
        assert!(!f.check_str(s.as_bytes()), "{} should reject {s:?}", f.name());
    }
}

#[test]
fn date_time() {
    check(
        Format::DateTime,
        &[
            "2024-05-14T09:31:27Z",
            "2024-05-14t09:31:27z",
            "1985-04-12T23:20:50.52Z",
            "1996-12-19T16:39:57-08:00",
            "1990-12-31T23:59:60Z",
            "2000-02-29T00:00:00+14:00",
            "2024-01-01T00:00:00.123456789+00:00",
        ],
        &[
            "2024-05-14 09:31:27Z",
            "2024-05-14T09:31:27",
            "2023-02-29T00:00:00Z",
            "2024-13-01T00:00:00Z",
            "2024-05-14T24:00:00Z",
            "2024-05-14T09:60:00Z",
            "2024-05-14T09:31:61Z",
            "2024-05-14T09:31:27.Z",
            "2024-05-14T09:31:27+0100",
            "2024-05-14T09:31:27+24:00",
            "2024-5-14T09:31:27Z",
            "",
            "2024-05-14T09:31:27Zjunk",
            "１９９０-12-31T23:59:60Z",
        ],
    );
}

#[test]
fn date_and_time() {
    check(
        Format::Date,
        &["2024-02-29", "1900-01-31", "2000-02-29", "2024-04-30"],
        &["1900-02-29", "2024-04-31", "2024-00-10", "2024-01-00", "2024-1-01", "20240101", "2024-01-01T00:00:00Z", "2024-01-01 "],
    );
    check(
        Format::Time,
        &["09:31:27Z", "00:59:60+01:00", "23:59:60Z", "22:29:60-01:30", "00:00:00.5-12:30"],
        &["23:59:60+01:00", "22:59:60Z", "23:58:60Z", "09:31:27", "9:31:27Z", "25:00:00Z", "09:31Z", "09:31:27+1:00"],
    );
}

#[test]
fn email() {
    check(
        Format::Email,
        &["jane.doe@example.com", "a@b", "user+tag@sub.example.co.uk", "\"john doe\"@example.org", "x@[127.0.0.1]", "x@[IPv6:::1]", "o'hara@example.com"],
        &[
            "plain",
            "@example.com",
            "a@",
            "a..b@example.com",
            ".a@example.com",
            "a.@example.com",
            "a b@example.com",
            "a@-example.com",
            "a@exa_mple.com",
            "a@[300.0.0.1]",
            "a@b@c",
        ],
    );
    let long_local = format!("{}@example.com", "a".repeat(65));
    assert!(!super::email(long_local.as_bytes()));
}

#[test]
fn uuid() {
    check(
        Format::Uuid,
        &["123e4567-e89b-12d3-a456-426614174000", "00000000-0000-0000-0000-000000000000", "ABCDEF01-2345-6789-abcd-ef0123456789"],
        &[
            "123e4567e89b12d3a456426614174000",
            "123e4567-e89b-12d3-a456-42661417400",
            "g23e4567-e89b-12d3-a456-426614174000",
            "123e4567-e89b-12d3-a456_426614174000",
        ],
    );
}

#[test]
fn ipv4() {
    check(
        Format::Ipv4,
        &["0.0.0.0", "127.0.0.1", "255.255.255.255", "192.168.1.10"],
        &["256.0.0.1", "01.2.3.4", "1.2.3", "1.2.3.4.5", "1.2.3.", "a.b.c.d", "1.2.3.4 ", "", "1..2.3"],
    );
}

#[test]
fn ipv6() {
    check(
        Format::Ipv6,
        &[
            "::",
            "::1",
            "1::",
            "2001:db8::1",
            "2001:0db8:0000:0000:0000:ff00:0042:8329",
            "fe80::1:2:3:4",
            "::ffff:192.0.2.128",
            "64:ff9b::192.0.2.33",
            "1:2:3:4:5:6:1.2.3.4",
            "1:2:3:4:5:6:7::",
            "::2:3:4:5:6:7:8",
        ],
        &[
            ":",
            "1:2:3:4:5:6:7:8:9",
            "1:2:3:4:5:6:7",
            "1::2::3",
            "12345::",
            "g::1",
            "::1.2.3.256",
            "1.2.3.4::",
            "::1.2.3.4:5",
            "1:2:3:4:5:6:7:1.2.3.4",
            "fe80::1%eth0",
            ":1:2:3:4:5:6:7",
            "1:2:3:4:5:6:7:8::",
        ],
    );
}

#[test]
fn hostname() {
    check(
        Format::Hostname,
        &["example.com", "localhost", "a-b.c-d.example", "xn--bcher-kva.example", "1.2.3.4", &"a".repeat(63)],
        &["", "-example.com", "example-.com", "exa_mple.com", "a..b", &"a".repeat(64), &format!("{}.com", "a.".repeat(126)), "ex ample.com", "."],
    );
}

#[test]
fn byte() {
    check(Format::Byte, &["", "aGVsbG8=", "aGVsbG8h", "aGk=", "+/+/"], &["aGVsbG8", "aGVsbG8===", "aGVs bG8=", "a=bc", "aGk-"]);
}

#[test]
fn uri() {
    check(
        Format::Uri,
        &[
            "https://example.com",
            "http://user:pw@example.com:8080/a/b?c=d#e",
            "urn:isbn:0451450523",
            "mailto:a@b.c",
            "http://[::1]:80/",
            "file:///etc/hosts",
            "http://example.com/%20x",
            "a+b-c.d:x",
        ],
        &["", "/relative/path", "example.com", "http://exa mple.com", "1http://x", "http://example.com/%zz", "http://[::g]/", "http://example.com:80a/"],
    );
    check(Format::UriReference, &["/relative/path", "../a?b#c", "", "#frag", "//example.com/x", "https://example.com"], &["a b", "/%2", "this:that:/x y"]);
    assert!(!uri_reference(b"a:b c"));
}

#[test]
fn integers() {
    let f = Format::Int32;
    for s in ["0", "2147483647", "-2147483648", "1.0", "2.147483647e9"] {
        assert!(f.check_number(s.as_bytes()), "{s}");
    }
    for s in ["2147483648", "-2147483649", "1.5", "1e10"] {
        assert!(!f.check_number(s.as_bytes()), "{s}");
    }
    let f = Format::Int64;
    assert!(f.check_number(b"9223372036854775807"));
    assert!(f.check_number(b"-9223372036854775808"));
    assert!(!f.check_number(b"9223372036854775808"));
    assert!(!f.check_number(b"-9223372036854775809"));
    assert!(f.check_number(b"9007199254740993"));
    assert!(Format::Any.check_number(b"1.5"));
    assert!(Format::Int32.check_str(b"not a number: string formats only"));
    assert_eq!(Format::from_name("double"), Some(Format::Any));
    assert_eq!(Format::from_name("password"), Some(Format::Any));
    assert_eq!(Format::from_name("binary"), Some(Format::Any));
    assert_eq!(Format::from_name("x-custom"), None);
}

/// RFC 3339 `date-time` written from the RFC's text alone, as simply as possible, to test the
/// fixed-layout [`super::date_time`] against: the ABNF of §5.6 (`T` and `Z` case-insensitive,
/// as its note allows) and the restrictions of §5.7 (days per month and leap years; a leap
/// second, second 60, only in the last minute of a UTC day). Offsets of hours over 23 or minutes
/// over 59 are not times of day (the suite's `date-time` cases refuse them).
fn rfc3339_date_time(b: &[u8]) -> bool {
    let number = |r: std::ops::Range<usize>| {
        let d = b.get(r)?;
        d.iter().all(u8::is_ascii_digit).then(|| d.iter().fold(0u32, |n, &c| n * 10 + u32::from(c - b'0')))
    };
    // full-date = date-fullyear "-" date-month "-" date-mday
    let (Some(year), Some(month), Some(day)) = (number(0..4), number(5..7), number(8..10)) else { return false };
    if b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    if !(1..=days).contains(&day) || !matches!(b.get(10), Some(b'T' | b't')) {
        return false;
    }
    // partial-time = time-hour ":" time-minute ":" time-second [time-secfrac]
    let (Some(hour), Some(minute), Some(second)) = (number(11..13), number(14..16), number(17..19)) else { return false };
    if b[13] != b':' || b[16] != b':' || hour > 23 || minute > 59 || second > 60 {
        return false;
    }
    let mut i = 19;
    if b.get(i) == Some(&b'.') {
        let n = b[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
        if n == 0 {
            return false;
        }
        i += 1 + n;
    }
    // time-offset = "Z" / ("+" / "-") time-hour ":" time-minute
    let offset = match b.get(i) {
        Some(b'Z' | b'z') if i + 1 == b.len() => 0,
        Some(&sign @ (b'+' | b'-')) if i + 6 == b.len() && b[i + 3] == b':' => {
            let (Some(oh), Some(om)) = (number(i + 1..i + 3), number(i + 4..i + 6)) else { return false };
            if oh > 23 || om > 59 {
                return false;
            }
            let o = (oh * 60 + om) as i32;
            if sign == b'+' {
                o
            } else {
                -o
            }
        }
        _ => return false,
    };
    second < 60 || ((hour * 60 + minute) as i32 - offset).rem_euclid(24 * 60) == 23 * 60 + 59
}

#[test]
fn the_rfc3339_grammar_checker_on_the_rfcs_examples() {
    // RFC 3339 §5.8, and a leap second at 23:59:60 UTC written with an offset.
    for ok in ["1985-04-12T23:20:50.52Z", "1996-12-19T16:39:57-08:00", "1990-12-31T23:59:60Z", "1990-12-31T15:59:60-08:00", "1937-01-01T12:00:27.87+00:20"] {
        assert!(rfc3339_date_time(ok.as_bytes()), "{ok}");
    }
    for bad in
        ["1990-12-31T23:59:60+01:00", "1985-04-12 23:20:50Z", "1985-04-12T23:20:50", "2023-02-29T00:00:00Z", "1985-04-12T23:20:50.Z", "1985-4-12T23:20:50Z"]
    {
        assert!(!rfc3339_date_time(bad.as_bytes()), "{bad}");
    }
}

/// The fixed-layout `date_time` decides as the RFC 3339 reference on valid samples, every one-byte substitution of them (digits, the
/// separators, letters, non-ASCII) and every truncation.
#[test]
fn date_time_agrees_with_rfc3339() {
    let samples = [
        "2024-05-14T09:31:27Z",
        "2015-10-17T00:14:49.526Z",
        "1996-12-19T16:39:57-08:00",
        "2000-02-29T13:59:60.5+14:00",
        "1900-02-28t00:00:00z",
        "2024-04-30T12:00:00.000000001-00:00",
        "2024-01-31T00:00:00.123Z",
        "2023-02-28T10:20:30.999z",
        "2024-12-31T23:59:59.9Z",
    ];
    let subs = b"0123456789-:.+TtZz 9\xC3\x00";
    let mut checked = 0;
    for s in samples {
        let b = s.as_bytes();
        assert!(super::date_time(b), "{s}");
        for cut in 0..=b.len() {
            assert_eq!(super::date_time(&b[..cut]), rfc3339_date_time(&b[..cut]), "{:?}", &b[..cut]);
        }
        for i in 0..b.len() {
            for &c in subs {
                let mut m = b.to_vec();
                m[i] = c;
                assert_eq!(super::date_time(&m), rfc3339_date_time(&m), "{:?}", String::from_utf8_lossy(&m));
                checked += 1;
            }
        }
    }
    assert!(checked > 2000);
}

/// Every day number 00 to 39 of every month 00 to 13, in leap, common and century years, with
/// each time-offset shape: the fast date-time check against the RFC 3339 reference.
#[test]
fn date_time_every_day_of_every_month() {
    for y in ["2023", "2024", "1900", "2000", "2100"] {
        for m in 0..=13 {
            for d in 0..=39 {
                for rest in ["Z", ".123Z", ".5+01:00", "-00:00", ".12Z", ".1234z", "+24:00", "Zx"] {
                    let s = format!("{y}-{m:02}-{d:02}T12:34:56{rest}");
                    assert_eq!(super::date_time(s.as_bytes()), rfc3339_date_time(s.as_bytes()), "{s}");
                }
            }
        }
    }
    for t in ["00:00:00", "23:59:60", "24:00:00", "23:60:00", "19:59:59", "20:00:61", "09:09:09"] {
        let s = format!("2024-02-29T{t}Z");
        assert_eq!(super::date_time(s.as_bytes()), rfc3339_date_time(s.as_bytes()), "{s}");
    }
}

/// Every string a closed-alphabet format accepts is written with its alphabet only:
/// valid samples with each byte replaced by every byte value, and every byte inserted at
/// every position, are either rejected or made of that alphabet.
#[test]
fn closed_alphabet_formats_accept_only_their_alphabet() {
    const CLOSED_ALPHABET: &str = "0123456789abcdefABCDEFtTzZ-:.+";
    let samples: &[(Format, &str)] = &[
        (Format::DateTime, "2024-05-14T09:31:27.123+02:00"),
        (Format::DateTime, "1985-04-12t23:20:50z"),
        (Format::Date, "2024-02-29"),
        (Format::Time, "09:31:27.5-05:30"),
        (Format::Uuid, "3f2b8c1e-9a4d-4e7b-b1c2-5d6e7f8a9b0c"),
    ];
    let closed = |v: &[u8]| v.iter().all(|b| CLOSED_ALPHABET.as_bytes().contains(b));
    let mut accepted = 0;
    for &(f, s) in samples {
        assert!(f.closed_alphabet());
        assert!(f.check_str(s.as_bytes()), "{s:?} is a valid {f:?}");
        for i in 0..=s.len() {
            for b in 0..=255u8 {
                let mut variants = vec![[&s.as_bytes()[..i], &[b], &s.as_bytes()[i..]].concat()];
                if i < s.len() {
                    variants.push([&s.as_bytes()[..i], &[b], &s.as_bytes()[i + 1..]].concat());
                }
                for v in variants {
                    if f.check_str(&v) {
                        accepted += 1;
                        assert!(closed(&v), "{f:?} accepts {:?}", String::from_utf8_lossy(&v));
                    }
                }
            }
        }
    }
    // The variants that stay valid (another digit, hex letter, case) were seen.
    assert!(accepted > 100, "{accepted}");
    assert!(!Format::Email.closed_alphabet() && !Format::Uri.closed_alphabet() && !Format::Hostname.closed_alphabet());
}
