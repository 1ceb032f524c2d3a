use super::*;

fn canon(raw: &str) -> Result<String, PathError> {
    canonicalize(raw, &PathPolicy::default()).map(Cow::into_owned)
}

fn with(raw: &str, policy: PathPolicy) -> Result<String, PathError> {
    canonicalize(raw, &policy).map(Cow::into_owned)
}

fn ok(raw: &str) -> String {
    canon(raw).unwrap_or_else(|e| panic!("{raw:?}: {e}"))
}

#[test]
fn canonical_ascii_paths_are_borrowed() {
    for p in ["/", "/admin/users", "/a/b/", "/v1/users/42:activate", "/a-b_c~d/e.f/.well-known/x", "/a%20b/%3B/%25", "/a..b/...", "/.x/x."] {
        assert!(matches!(canonicalize(p, &PathPolicy::default()), Ok(Cow::Borrowed(b)) if b == p), "{p:?}");
    }
}

#[test]
fn the_reported_bypasses_become_the_protected_path() {
    for raw in [
        "/x/../admin/users",
        "/%61dmin/users",
        "//admin/users",
        "/./admin/users",
        "/admin/./users",
        "/%2e/admin/users",
        "/x/%2E%2e/admin/users",
        "/x/.%2e/admin/users",
        "/admin//users",
        "/ADMIN/../admin/users",
    ] {
        assert_eq!(ok(raw), "/admin/users", "{raw:?}");
    }
}

#[test]
fn unreserved_escapes_are_decoded_and_the_rest_upper_cased() {
    assert_eq!(ok("/%41%7a%30%2D%2e%5F%7e"), "/Az0-._~");
    assert_eq!(ok("/a%3bb%3Fc%2a"), "/a%3Bb%3Fc%2A");
    assert_eq!(ok("/%25/%2541"), "/%25/%2541");
    // Characters that may not stand literally in a path are escaped, so both spellings are one.
    assert_eq!(ok("/a{b}\"c|d^e`f[g]h"), "/a%7Bb%7D%22c%7Cd%5Ee%60f%5Bg%5Dh");
    assert_eq!(ok("/a%7Bb%7D"), "/a%7Bb%7D");
    assert_eq!(ok("/caf\u{e9}"), "/caf%C3%A9");
    assert_eq!(ok("/caf%c3%a9"), "/caf%C3%A9");
    // Sub-delims, `:` and `@` stay literal, and their escapes stay escapes (RFC 3986 §2.2).
    assert_eq!(ok("/a!$&'()*+,=:@b/%21%40"), "/a!$&'()*+,=:@b/%21%40");
}

#[test]
fn malformed_escapes_are_refused() {
    for raw in ["/a%", "/a%2", "/a%zz", "/%g0/x", "/a%%41"] {
        assert_eq!(canon(raw), Err(PathError::BadEscape), "{raw:?}");
    }
}

#[test]
fn climbing_above_the_root_is_refused() {
    for raw in ["/..", "/../admin", "/a/../../admin", "/%2e%2e/admin", "/.%2E/", "//../x", "/a/./../.."] {
        assert_eq!(canon(raw), Err(PathError::AboveRoot), "{raw:?}");
    }
    assert_eq!(ok("/a/.."), "/");
    assert_eq!(ok("/a/b/.."), "/a/");
    assert_eq!(ok("/a/b/."), "/a/b/");
}

#[test]
fn not_absolute_and_empty() {
    assert_eq!(canon("admin"), Err(PathError::NotAbsolute));
    assert_eq!(canon("*"), Err(PathError::NotAbsolute));
    assert_eq!(ok(""), "/");
}

#[test]
fn slashes_merge_unless_told_not_to() {
    assert_eq!(ok("///a////b//"), "/a/b/");
    let keep = PathPolicy { merge_slashes: false, ..PathPolicy::default() };
    assert_eq!(with("//admin/users", keep), Ok("//admin/users".into()));
    assert_eq!(with("/a//../b", keep), Ok("/a/b".into()));
    assert_eq!(with("/a/..//b", keep), Ok("//b".into()));
}

#[test]
fn encoded_slash_policies() {
    let p = |e| PathPolicy { encoded_slash: e, ..PathPolicy::default() };
    assert_eq!(with("/admin%2Fusers", p(EncodedSlash::Decode)), Ok("/admin/users".into()));
    assert_eq!(with("/x%2F..%2Fadmin%2fusers", p(EncodedSlash::Decode)), Ok("/admin/users".into()));
    assert_eq!(with("/projects/a%2fb", p(EncodedSlash::Keep)), Ok("/projects/a%2Fb".into()));
    assert_eq!(with("/x%2F..%2Fadmin", p(EncodedSlash::Keep)), Ok("/x%2F..%2Fadmin".into()));
    assert_eq!(with("/a%2Fb", p(EncodedSlash::Reject)), Err(PathError::EncodedSlash));
}

#[test]
fn backslash_policies() {
    // Raw `\` and `%5C` each under its own key.
    let p = |b, e| PathPolicy { backslash: b, encoded_backslash: e, ..PathPolicy::default() };
    let slash = p(Backslash::Slash, Backslash::Slash);
    assert_eq!(with("/x\\..\\admin\\users", slash), Ok("/admin/users".into()));
    assert_eq!(with("/x%5C..%5cadmin", slash), Ok("/admin".into()));
    let keep = p(Backslash::Keep, Backslash::Keep);
    assert_eq!(with("/DOMAIN\\user", keep), Ok("/DOMAIN%5Cuser".into()));
    assert_eq!(with("/DOMAIN%5cuser", keep), Ok("/DOMAIN%5Cuser".into()));
    let reject = p(Backslash::Reject, Backslash::Reject);
    assert_eq!(with("/a\\b", reject), Err(PathError::Backslash));
    assert_eq!(with("/a%5Cb", reject), Err(PathError::Backslash));
    // Mixed: a raw `\` is a separator while `%5C` stays data, and the other way round.
    assert_eq!(with("/a\\b%5Cc", p(Backslash::Slash, Backslash::Keep)), Ok("/a/b%5Cc".into()));
    assert_eq!(with("/a%5Cb", p(Backslash::Keep, Backslash::Slash)), Ok("/a/b".into()));
    assert_eq!(with("/a\\b", p(Backslash::Reject, Backslash::Keep)), Err(PathError::Backslash));
}

/// By default a raw `\` is refused (browsers and Windows servers read it as `/`), while `%5C`
/// is data: kept encoded, it stays inside its segment, so it can neither climb (`..%5C` is a
/// name, not a dot segment) nor split a segment, and a path parameter may hold it.
#[test]
fn by_default_an_encoded_backslash_is_data_and_a_raw_one_refused() {
    assert_eq!(canon("/a\\b"), Err(PathError::Backslash));
    assert_eq!(canon("/x\\..\\admin"), Err(PathError::Backslash));
    assert_eq!(ok("/users/DOMAIN%5cjsmith"), "/users/DOMAIN%5Cjsmith");
    assert_eq!(ok("/x%5C..%5Cadmin/users"), "/x%5C..%5Cadmin/users");
    assert_eq!(ok("/x/..%5C/admin"), "/x/..%5C/admin");
    assert!(matches!(canonicalize("/a%5Cb", &PathPolicy::default()), Ok(Cow::Borrowed(_))));
    // Still separators to the app-choosing reading, and refused by the strict policy.
    assert_eq!(with("/x%5C..%5Cadmin/users", PathPolicy::ROUTING), Ok("/admin/users".into()));
    assert_eq!(with("/a%5Cb", PathPolicy::STRICT), Err(PathError::Backslash));
}

#[test]
fn semicolon_policies() {
    let p = |s| PathPolicy { semicolon: s, ..PathPolicy::default() };
    let strip = p(Semicolon::Strip);
    assert_eq!(with("/admin;x/users", strip), Ok("/admin/users".into()));
    assert_eq!(with("/x/..;/admin/users", strip), Ok("/admin/users".into()));
    assert_eq!(with("/public/..;jsessionid=1/admin", strip), Ok("/admin".into()));
    assert_eq!(with("/a/b;v=1.2", strip), Ok("/a/b".into()));
    assert_eq!(with("/a/;x/b", strip), Ok("/a/b".into()));
    let keep = p(Semicolon::Keep);
    assert_eq!(with("/admin;x/users", keep), Ok("/admin;x/users".into()));
    // Kept, `..;` is a name, not a dot segment.
    assert_eq!(with("/x/..;/admin", keep), Ok("/x/..;/admin".into()));
    assert_eq!(canon("/admin;x/users"), Err(PathError::Semicolon));
    assert_eq!(canon("/x/..;/admin"), Err(PathError::Semicolon));
    // `%3B` is data under every policy.
    assert_eq!(with("/a%3bb", strip), Ok("/a%3Bb".into()));
    assert_eq!(ok("/a%3bb"), "/a%3Bb");
}

#[test]
fn control_byte_policies() {
    let reject = PathPolicy { control: Control::Reject, ..PathPolicy::default() };
    assert_eq!(with("/admin%00/users", reject), Err(PathError::Control));
    assert_eq!(with("/a%0d%0aSet-Cookie", reject), Err(PathError::Control));
    assert_eq!(with("/a%7F", reject), Err(PathError::Control));
    assert_eq!(with("/a\u{1}b", reject), Err(PathError::Control));
    assert_eq!(with("/a%00", PathPolicy::STRICT), Err(PathError::Control));
    let keep = PathPolicy { control: Control::Keep, ..PathPolicy::default() };
    assert_eq!(with("/a%00b%0a", keep), Ok("/a%00b%0A".into()));
    assert_eq!(with("/a\tb", keep), Ok("/a%09b".into()));
}

/// By default encoded control bytes are data: kept encoded (upper-case hex), inside their
/// segment, so a path parameter may hold them and no matcher sees a different path.
#[test]
fn by_default_control_bytes_are_kept_encoded() {
    assert_eq!(ok("/v1/customers/a%00b"), "/v1/customers/a%00b");
    assert_eq!(ok("/v1/customers/%1f%7f%0d%0a"), "/v1/customers/%1F%7F%0D%0A");
    assert!(matches!(canonicalize("/v1/customers/%00%1F", &PathPolicy::default()), Ok(Cow::Borrowed(_))));
    // A NUL is not an end, a separator or a dot: `/admin%00` is not under `/admin`, and
    // `..%00` is a name.
    assert_eq!(ok("/admin%00/users"), "/admin%00/users");
    assert!(!under_prefix(&ok("/admin%00/users"), "/admin"));
    assert_eq!(ok("/x/..%00/admin"), "/x/..%00/admin");
}

/// The app-choosing reading ends the path at a NUL, as a backend that handles the decoded
/// path as a C string does; other control bytes stay encoded.
#[test]
fn routing_reading_ends_at_a_nul() {
    let r = |raw| with(raw, PathPolicy::ROUTING);
    assert_eq!(r("/admin%00/users"), Ok("/admin".into()));
    assert_eq!(r("/admin/us%00ers/x"), Ok("/admin/us".into()));
    assert_eq!(r("/a/..%00/b"), Ok("/".into()));
    assert_eq!(r("/%00"), Ok("/".into()));
    assert_eq!(r("/a%01b%0A"), Ok("/a%01b%0A".into()));
    // What follows the NUL is not read at all.
    assert_eq!(r("/a%00%zz/../.."), Ok("/a".into()));
}

#[test]
fn invalid_utf8_policies() {
    // `%C0%AE` is an overlong `.`: never a dot, refused by default.
    assert_eq!(canon("/x/%C0%AE%C0%AE/admin"), Err(PathError::InvalidUtf8));
    assert_eq!(canon("/a%FF"), Err(PathError::InvalidUtf8));
    assert_eq!(canon("/a%C3"), Err(PathError::InvalidUtf8));
    // A sequence cut by a separator is cut.
    assert_eq!(canon("/a%C3/%A9"), Err(PathError::InvalidUtf8));
    assert_eq!(ok("/%E2%82%AC"), "/%E2%82%AC");
    let keep = PathPolicy { invalid_utf8: InvalidUtf8::Keep, ..PathPolicy::default() };
    assert_eq!(with("/x/%c0%ae%c0%ae/admin", keep), Ok("/x/%C0%AE%C0%AE/admin".into()));
}

#[test]
fn routing_reading_cuts_at_every_separator() {
    let r = |raw| with(raw, PathPolicy::ROUTING);
    assert_eq!(r("/admin;x/users"), Ok("/admin/users".into()));
    assert_eq!(r("/x\\..\\admin"), Ok("/admin".into()));
    assert_eq!(r("/x%2F..%2Fadmin"), Ok("/admin".into()));
    assert_eq!(r("/admin%0A"), Ok("/admin%0A".into()));
    assert_eq!(r("/x/%C0%AE%C0%AE/admin"), Ok("/x/%C0%AE%C0%AE/admin".into()));
    assert_eq!(r("/../admin"), Err(PathError::AboveRoot));
}

/// RFC 3986 §5.4: the reference resolutions, as the path part of the merged reference
/// (`base path up to its last /` + reference) made canonical. `;` is kept (the base path has a
/// parameter), slashes are not merged, so only `remove_dot_segments` is at work.
#[test]
fn rfc3986_section_5_4_dot_segments() {
    let policy = PathPolicy { merge_slashes: false, semicolon: Semicolon::Keep, ..PathPolicy::default() };
    let merged = |r: &str| format!("/b/c/{r}");
    let cases = [
        ("g", "/b/c/g"),
        ("./g", "/b/c/g"),
        ("g/", "/b/c/g/"),
        (";x", "/b/c/;x"),
        ("g;x", "/b/c/g;x"),
        ("", "/b/c/"),
        (".", "/b/c/"),
        ("./", "/b/c/"),
        ("..", "/b/"),
        ("../", "/b/"),
        ("../g", "/b/g"),
        ("../..", "/"),
        ("../../", "/"),
        ("../../g", "/g"),
        // §5.4.2 abnormal examples.
        ("/./g", "/b/c/g"),
        ("/../g", "/b/g"),
        ("g.", "/b/c/g."),
        (".g", "/b/c/.g"),
        ("g..", "/b/c/g.."),
        ("..g", "/b/c/..g"),
        ("./../g", "/b/g"),
        ("./g/.", "/b/c/g/"),
        ("g/./h", "/b/c/g/h"),
        ("g/../h", "/b/c/h"),
        ("g;x=1/./y", "/b/c/g;x=1/y"),
        ("g;x=1/../y", "/b/c/y"),
    ];
    for (r, want) in cases {
        // `/./g` and `/../g` are absolute references: resolved against the root, not merged.
        let input = if r.starts_with('/') { format!("/b/c{r}") } else { merged(r) };
        assert_eq!(with(&input, policy).as_deref(), Ok(want), "{r:?}");
    }
    // RFC 3986 resolves `../../../g` to `/g`; here (as in nginx) climbing above the root is
    // refused rather than clamped.
    assert_eq!(with(&merged("../../../g"), policy), Err(PathError::AboveRoot));
    assert_eq!(with(&merged("../../../../g"), policy), Err(PathError::AboveRoot));
}

#[test]
fn prefixes_match_at_segment_boundaries() {
    assert!(under_prefix("/admin", "/admin"));
    assert!(under_prefix("/admin/users", "/admin"));
    assert!(under_prefix("/admin/users", "/admin/"));
    assert!(!under_prefix("/adminx", "/admin"));
    assert!(under_prefix("/anything", "/"));
    assert_eq!(canonical_prefix("/caf\u{e9}/"), Some("/caf%C3%A9/".into()));
    assert_eq!(canonical_prefix("/%61dmin"), Some("/admin".into()));
    assert_eq!(canonical_prefix("/../x"), None);
}

fn all_policies() -> Vec<PathPolicy> {
    let mut out = Vec::new();
    for merge_slashes in [true, false] {
        for encoded_slash in [EncodedSlash::Decode, EncodedSlash::Keep, EncodedSlash::Reject] {
            for backslash in [Backslash::Slash, Backslash::Keep, Backslash::Reject] {
                for encoded_backslash in [Backslash::Slash, Backslash::Keep, Backslash::Reject] {
                    for semicolon in [Semicolon::Keep, Semicolon::Strip, Semicolon::Reject] {
                        for control in [Control::Keep, Control::Reject, Control::Truncate] {
                            for invalid_utf8 in [InvalidUtf8::Keep, InvalidUtf8::Reject] {
                                let policy = PathPolicy { merge_slashes, encoded_slash, backslash, encoded_backslash, semicolon, control, invalid_utf8 };
                                if policy.is_coherent() {
                                    out.push(policy);
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    out
}

/// Pieces that make up generated paths: every class the canonicaliser treats specially.
const PIECES: &[&str] = &[
    "/", "/", "/", "a", "B", "admin", ".", "..", "%2e", "%2E", ".%2e", "%2f", "%2F", "\\", "%5c", ";", ";x=1", "%3b", "%00", "%0A", "\t", "%C0%AE", "%c3%a9",
    "\u{e9}", "%e2%82", "%ac", "%ff", "%61", "%7e", "%25", "%", "%z", "{", "\"", "~", "!", "@", ":", "//", "/..", "/.", "%41%42",
];

/// A deterministic generator (xorshift64*), so that a failure reproduces.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn path(&mut self) -> String {
        let n = 1 + (self.next() % 10) as usize;
        let mut s = String::from("/");
        for _ in 0..n {
            s.push_str(PIECES[(self.next() % PIECES.len() as u64) as usize]);
        }
        s
    }
}

#[test]
fn generated_paths_keep_the_invariants_under_every_policy() {
    let policies = all_policies();
    let mut g = Gen(0x9E37_79B9_7F4A_7C15);
    for _ in 0..20_000 {
        let raw = g.path();
        let policy = &policies[(g.next() % policies.len() as u64) as usize];
        if let Err(e) = check_invariants(&raw, policy) {
            panic!("{policy:?}: {e}");
        }
        // Under the default policy, no output contains a dot segment or `//` whatever came in.
        if let Ok(c) = canonicalize(&raw, &PathPolicy::default()) {
            assert!(!c.contains("//") && !c.contains("/./") && !c.contains("/../"), "{raw:?} -> {c:?}");
        }
    }
}

#[test]
fn invariants_hold_on_hand_written_edge_cases() {
    for policy in all_policies() {
        for raw in [
            "",
            "/",
            "//",
            "/.",
            "/..",
            "/%2e",
            "/a/%2e%2E",
            "/;",
            "/..;",
            "/a;/..",
            "/%2F",
            "/\\",
            "/%5C..",
            "/a%2F%2F",
            "/%2F.%2F",
            "/%C0%AE%2F..",
            "/\u{7f}",
            "/%00",
            "/a%00/..",
            "/..%00",
            "/%00%2e%2e",
        ] {
            if let Err(e) = check_invariants(raw, &policy) {
                panic!("{policy:?}: {e}");
            }
        }
    }
}

/// The checker itself catches a broken form (so that the tests above can fail).
#[test]
fn the_invariant_checker_reports_violations() {
    // A canonical form under one policy is not canonical under another: `//` with merging.
    let no_merge = PathPolicy { merge_slashes: false, ..PathPolicy::default() };
    let c = canonicalize("//a", &no_merge).unwrap();
    assert_eq!(c, "//a");
    assert!(!is_canonical(c.as_bytes(), &PathPolicy::default()));
    assert!(!is_canonical(b"/a/../b", &PathPolicy::default()));
    assert!(!is_canonical(b"/a%2fb", &PathPolicy::default()));
    assert!(!is_canonical(b"/a%41", &PathPolicy::default()));
}
