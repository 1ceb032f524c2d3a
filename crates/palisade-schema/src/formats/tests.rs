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

/// The fixed-layout `date_time` decides exactly as the reference (full-date, `T`, full-time
/// parsed separately) on valid samples, every one-byte substitution of them (digits, the
/// separators, letters, non-ASCII) and every truncation.
#[test]
fn date_time_fast_path_matches_reference() {
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
            assert_eq!(super::date_time(&b[..cut]), super::date_time_reference(&b[..cut]), "{:?}", &b[..cut]);
        }
        for i in 0..b.len() {
            for &c in subs {
                let mut m = b.to_vec();
                m[i] = c;
                assert_eq!(super::date_time(&m), super::date_time_reference(&m), "{:?}", String::from_utf8_lossy(&m));
                checked += 1;
            }
        }
    }
    assert!(checked > 2000);
}

/// Every day number 00 to 39 of every month 00 to 13, in leap, common and century years, with
/// each time-offset shape: the fast date-time check against the reference.
#[test]
fn date_time_every_day_of_every_month() {
    for y in ["2023", "2024", "1900", "2000", "2100"] {
        for m in 0..=13 {
            for d in 0..=39 {
                for rest in ["Z", ".123Z", ".5+01:00", "-00:00", ".12Z", ".1234z", "+24:00", "Zx"] {
                    let s = format!("{y}-{m:02}-{d:02}T12:34:56{rest}");
                    assert_eq!(super::date_time(s.as_bytes()), super::date_time_reference(s.as_bytes()), "{s}");
                }
            }
        }
    }
    for t in ["00:00:00", "23:59:60", "24:00:00", "23:60:00", "19:59:59", "20:00:61", "09:09:09"] {
        let s = format!("2024-02-29T{t}Z");
        assert_eq!(super::date_time(s.as_bytes()), super::date_time_reference(s.as_bytes()), "{s}");
    }
}
