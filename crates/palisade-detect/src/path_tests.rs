use super::*;
use crate::other_util::take_steps;
use crate::test_tables::{assert_all_at_least, assert_all_below};
use palisade_testkit::rng::XorShift64;

fn conf(v: &str, field: FieldKind) -> u8 {
    detector().check(&Input { raw: v, decoded: v, field }, Level::Strict).map_or(0, |h| h.confidence)
}

fn q(v: &str) -> u8 {
    conf(v, FieldKind::QueryValue)
}

#[test]
fn traversal_forms() {
    assert_all_at_least(
        &[
            "../../../etc/passwd",
            "..\\..\\..\\windows\\win.ini",
            "....//....//....//etc/passwd",
            "..;/..;/WEB-INF/web.xml",
            "%2e%2e%2f%2e%2e%2fetc%2fpasswd",
            "%252e%252e%252fetc%252fpasswd",
            "%c0%ae%c0%ae%c0%afetc%c0%afpasswd",
            "%e0%80%ae%e0%80%ae/%e0%80%ae%e0%80%ae/boot.ini",
            "%uff0e%uff0e%u2215%uff0e%uff0e%u2215etc%u2215passwd",
            "0x2e0x2e0x2f0x2e0x2e0x2fetc0x2fpasswd",
            ".%00./.%00./etc/passwd",
            "../../../../../../../../",
            "Li4vLi4vLi4vLi4vZXRjL3Bhc3N3ZA==",
            "a/b/../../../../x",
            "../../etc/passwd%00.jpg",
            "\u{ff0e}\u{ff0e}/\u{ff0e}\u{ff0e}/secret",
        ],
        Level::Balanced,
        q,
    );
}

#[test]
fn lfi_forms() {
    assert_all_at_least(
        &[
            "/etc/passwd",
            "/etc/shadow",
            "/proc/self/environ",
            "/proc/self/fd/3",
            "C:\\Windows\\win.ini",
            "C:/windows/system32/config/sam",
            "c:\\boot.ini",
            "/var/log/apache2/access.log",
            "C:\\xampp\\apache\\logs\\error.log",
            "WEB-INF/web.xml",
            "/WEB-INF/web.xml",
            "php://filter/convert.base64-encode/resource=index.php",
            "php://input",
            "expect://id",
            "phar://uploads/x.jpg/shell",
            "zip://shell.jpg#payload.php",
            "file:///etc/passwd",
            "data://text/plain;base64,PD9waHAgc3lzdGVtKCRfR0VUWzFdKTsgPz4=",
            "data:text/plain,<?php phpinfo(); ?>",
            "members/.htpasswd",
            "/home/bob/.ssh/id_rsa",
            "/root/.bash_history",
        ],
        Level::Balanced,
        q,
    );
}

#[test]
fn benign_look_alikes() {
    assert_all_below(
        &[
            "passwd",
            "index.php",
            "/api/v1/users/42",
            "/account/settings?tab=security",
            "https://example.com/docs/guide.html",
            "https://example.com/a/b/../c",
            "images/logo.png",
            "Loading... please wait",
            "one... two... three",
            "see ./README.md for details",
            "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
            "10.5/2024",
            "and/or",
            "the hosts file is in etc but who cares",
            "100% sure / 50% done",
            "Q3JlYXRlZCBieSBib2I=",
            "/static/js/app.js",
            "/lib/jquery.min.js",
            "/library/books/12",
            "/home/feed",
            // A system directory named inside prose is a mention (a value that is the path is not).
            "The config lives in /etc/myapp/config.yaml",
            "Error: ENOENT: no such file or directory, open '/tmp/x.json'",
        ],
        Level::Balanced,
        q,
    );
}

#[test]
fn multipart_filename_with_drive_path_is_ok() {
    assert!(conf("C:\\Documents and Settings\\bob\\photo.jpg", FieldKind::MultipartFilename) < 60);
    assert!(conf("../../../etc/cron.d/x", FieldKind::MultipartFilename) >= 60);
}

#[test]
fn linear_on_large_inputs() {
    for unit in ["../", "%c0%ae", "%25", "0x2e", "a ", "/etc", "\u{ff0e}", "%%32%65", "=\"'"] {
        let v = unit.repeat(1_000_000 / unit.len());
        take_steps();
        let _ = detector().check(&Input { raw: &v, decoded: &v, field: FieldKind::QueryValue }, Level::Strict);
        let steps = take_steps();
        assert!(steps < 80 * v.len() as u64, "{unit}: {steps}");
    }
}

#[test]
fn ellipsis_and_phrases_are_not_one_level_traversal() {
    assert!(q("...") < 60);
    assert!(q("../ meaning") < 60);
    assert!(q("../config") >= 60);
    assert!(q("../../etc/passwd") >= 60);
}

#[test]
fn a_sentence_naming_a_dotfile_is_not_a_path() {
    assert!(q("Set `PATH=$PATH:/usr/local/bin` in your ~/.bashrc") < 60);
    assert!(q("C:\\Program Files\\app\\web.config") >= 60);
    assert!(q("../../etc/passwd and more words here") >= 60);
    assert!(q("please show me /etc/passwd now") >= 60);
    assert!(q("/etc/myapp/config.yaml") >= 60);
}

#[test]
fn the_wrapper_anchors_cover_every_wrapper_and_filter() {
    for (w, _, _) in WRAPPERS {
        assert!(WRAP_ANCHORS.any(w), "{w} is not anchored");
        assert!(WRAP_ANCHORS.any(&w.to_ascii_uppercase()), "{w} in capitals is not anchored");
    }
    for f in PHP_FILTERS {
        assert!(WRAP_ANCHORS.any(f), "{f} is not anchored");
    }
    // An ordinary URL does not pay for the wrapper search; a wrapper inside one does.
    assert!(!WRAP_ANCHORS.any("https://avatars.example.org/v2/letter/a/c37758/{size}.png"));
    assert!(q("https://example.org/?page=php://filter/convert.base64-encode/resource=index.php") >= 60);
}

/// [`plain_path`] lets URL paths and relative paths through without the walk.
#[test]
fn plain_paths_skip_the_walk() {
    for v in [
        "/user_avatar/discourse.metabase.com/system/{size}/6_1.png",
        "/uploads/default/original/1X/41bcf3b2a00dc7cfaff01cb3165d35d32a85bf1d.png",
        "/c/uncategorized/l/latest?page",
        "docs/guide.md",
        "/v2/letter/z/0ea827/{size}.png",
        "a\\b\\c.txt",
        "/./x/./",
    ] {
        assert!(plain_path(v), "{v}");
        assert!(judge_walk(v, false, FieldKind::QueryValue).is_none(), "{v}");
        assert_eq!(q(v), 0, "{v}");
    }
}

/// Roots, ends and dot paths that the walk reports are not plain.
#[test]
fn reportable_paths_are_not_plain() {
    for v in [
        "/etc/hosts",
        "/ETC/x",
        "\\windows\\system32\\x",
        "/c:/boot.ini",
        "C:\\x\\y",
        "x/web.config",
        "x/WEB.CONFIG",
        "logs/access.log",
        "a/passwd.",
        "/./\\.",
        "/home/u/.ssh/id_rsa",
        "/private/etc/x",
    ] {
        assert!(!plain_path(v), "{v}");
    }
}

/// Whenever [`judge`] stops at [`plain_path`], the walk finds nothing either (a bounded
/// pseudo-random sample of paths built from roots, system directories, sensitive names).
#[test]
fn plain_path_agrees_with_the_walk() {
    let parts = [
        "/",
        "\\",
        ".",
        "etc",
        "passwd",
        "web.config",
        "a",
        "1X",
        "C:",
        "c:",
        "windows",
        "system32",
        "home",
        ".ssh",
        "access.log",
        "tmp",
        "x.png",
        "{size}",
        "?",
        "=",
        " ",
        "dev",
        "null",
        "sess_1",
        "private",
        "Volumes",
        "WinNT",
        "win.ini",
        "proc",
        "self",
        "environ",
    ];
    let mut rng = XorShift64::new(0x9e37_79b9_7f4a_7c15);
    let (mut plain, mut found) = (0, 0);
    for _ in 0..40_000 {
        let v = rng.joined(&parts, 6);
        let walk = judge_walk(&v, false, FieldKind::QueryValue);
        found += usize::from(walk.is_some());
        if !may_climb(&v) && memchr::memchr2(b'/', b'\\', v.as_bytes()).is_some() && !is_url(&v) && plain_path(&v) {
            plain += 1;
            assert!(walk.is_none(), "{v:?}");
        }
    }
    assert!(plain > 1000 && found > 1000, "{plain} {found}");
}

/// [`may_wrap`] says yes wherever the wrapper automaton finds an anchor: every wrapper and
/// filter in any case, and a bounded pseudo-random sample of texts made of anchor pieces,
/// look-alike names and delimiters.
#[test]
fn may_wrap_covers_the_wrapper_anchors() {
    for (w, _, _) in WRAPPERS {
        assert!(may_wrap(w.as_bytes()) && may_wrap(w.to_ascii_uppercase().as_bytes()), "{w}");
    }
    for f in PHP_FILTERS {
        assert!(may_wrap(f.as_bytes()), "{f}");
    }
    let parts = [
        "php", "PHP", "expect", "phar", "zip", "glob", "rar", "ogg", "file", "FILE", "data", "compress", "ssh2", "convert", "string", "zlib", "ph", "p", "hp",
        "a", "x", "2", ":", ".", "//", "/", ":/", "https", "{size}", ".png", "zli", "b", "Data", "sTrInG", "-", " ", "\u{e9}",
    ];
    let mut rng = XorShift64::new(0x2545_f491_4f6c_dd1d);
    let (mut anchored, mut skipped) = (0, 0);
    for _ in 0..100_000 {
        let v = rng.joined(&parts, 6);
        if WRAP_ANCHORS.any(&v) {
            anchored += 1;
            assert!(may_wrap(v.as_bytes()), "{v:?}");
        } else if !may_wrap(v.as_bytes()) {
            skipped += 1;
        }
    }
    assert!(anchored > 2_000 && skipped > 20_000, "{anchored} {skipped}");
    assert!(!may_wrap(b"https://avatars.discourse.org/v2/letter/z/0ea827/{size}.png"));
    assert!(!may_wrap(b"/user_avatar/discourse.metabase.com/system/{size}/6_1.png"));
}

/// What [`may_wrap`] looks for, by its documentation: one of the wrapper names right before a
/// `:` (`php`, `expect`, `phar`, `zip`, `glob`, `rar`, `ogg`, `file`, `data`) or a `.`
/// (`compress`, `ssh2`, `convert`, `string`, `zlib`), ASCII case-insensitive.
fn may_wrap_spec(b: &[u8]) -> bool {
    const COLON: [&[u8]; 9] = [b"php", b"expect", b"phar", b"zip", b"glob", b"rar", b"ogg", b"file", b"data"];
    const DOT: [&[u8]; 5] = [b"compress", b"ssh2", b"convert", b"string", b"zlib"];
    let lc = b.to_ascii_lowercase();
    let before = |sep: u8, names: &[&[u8]]| names.iter().any(|n| lc.windows(n.len() + 1).any(|w| w.starts_with(n) && w[n.len()] == sep));
    before(b':', &COLON) || before(b'.', &DOT)
}

/// [`may_wrap`] answers what its documentation says: on generated texts of wrapper pieces and
/// on every real value of the sets and bench bodies.
#[test]
fn may_wrap_finds_the_wrapper_names() {
    let parts = [
        "php", "PHP", "expect", "phar", "zip", "glob", "rar", "ogg", "file", "FILE", "data", "compress", "ssh2", "convert", "string", "zlib", "ph", "p", "hp",
        "a", "x", "2", ":", ".", "//", "/", ":/", "https", "{size}", ".png", "zli", "b", "Data", "sTrInG", "-", " ", "\u{e9}",
    ];
    let mut rng = XorShift64::new(0x51_7cc1_b727_220a);
    let mut yes = 0;
    for _ in 0..100_000 {
        let v = rng.joined(&parts, 8);
        let want = may_wrap_spec(v.as_bytes());
        yes += usize::from(want);
        assert_eq!(may_wrap(v.as_bytes()), want, "{v:?}");
    }
    for v in crate::other_util::test_values() {
        assert_eq!(may_wrap(v.as_bytes()), may_wrap_spec(v.as_bytes()), "{v:?}");
    }
    assert!(yes > 5_000, "{yes}");
}

/// What [`facts`] computes, one byte at a time with the pairs checked at each: the facts as their
/// fields define them.
fn facts_by_byte(b: &[u8]) -> Facts {
    let (mut all_plain, mut any) = (true, 0u16);
    let (mut fold, mut climb, mut wrap) = (false, false, false);
    for (i, &c) in b.iter().enumerate() {
        let k = CLASS[c as usize];
        all_plain &= (0x20..0x7f).contains(&c) && c != b'%';
        any |= k;
        if matches!(c, b'.' | b'?' | b'0' | b':') {
            let next = b.get(i + 1).copied().unwrap_or(0);
            match c {
                b'.' => {
                    fold |= next == b'.';
                    climb |= matches!(next, b'.' | b'?');
                    wrap = wrap || wrap_at(b, i);
                }
                b':' => wrap = wrap || wrap_at(b, i),
                b'?' => climb |= next == b'.',
                _ => fold |= next | 0x20 == b'x',
            }
        }
    }
    Facts {
        plain: all_plain && !fold,
        blank: any & BLANK != 0,
        sep: any & TOKEN_SEP != 0,
        climb,
        slash: any & SLASH != 0,
        colon: any & COLON != 0,
        wrap,
        not_b64: !b.iter().all(|&c| b64_byte(c) || c == b'='),
    }
}

/// What [`is_url`] decides, by its documentation: the first `://` comes after two or more
/// bytes that are all ASCII letters, digits, `+`, `.` or `-`.
fn is_url_spec(s: &str) -> bool {
    let Some(p) = s.find("://") else { return false };
    p > 1 && s.as_bytes()[..p].iter().all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'.' | b'-'))
}

/// [`is_url`] answers what its documentation says: on generated texts of scheme pieces, on the
/// generated paths and on every real value of the sets and bench bodies.
#[test]
fn is_url_reads_the_scheme() {
    let parts = ["http", "s", "HTTPS", ":", "//", "/", "a", "1", "+", ".", "-", "x", " ", "?", "@", "://", "\u{e9}", "%", "_"];
    let mut rng = XorShift64::new(0x2f1e_44aa_9c13_7b05);
    let mut yes = 0;
    for _ in 0..100_000 {
        let v = rng.joined(&parts, 6);
        let want = is_url_spec(&v);
        yes += usize::from(want);
        assert_eq!(is_url(&v), want, "{v:?}");
    }
    generated_paths(50_000, |v| assert_eq!(is_url(v), is_url_spec(v), "{v:?}"));
    for v in crate::other_util::test_values() {
        assert_eq!(is_url(&v), is_url_spec(&v), "{v:?}");
    }
    assert!(yes > 1_000, "{yes}");
}

/// [`facts`] agrees with the questions it answers in one pass.
#[test]
fn facts_agree_with_the_separate_scans() {
    generated_paths(50_000, |v| {
        let f = facts(v.as_bytes());
        let (n, null) = normalise(v);
        assert_eq!(f.plain, matches!(n, Cow::Borrowed(_)) && !null && v.bytes().all(|c| (0x20..0x7f).contains(&c) && c != b'%'), "{v:?}");
        assert_eq!(f.blank, v.bytes().any(is_blank), "{v:?}");
        assert_eq!(f.sep, v.bytes().any(token_separator), "{v:?}");
        assert_eq!(f.climb, may_climb(v), "{v:?}");
        assert_eq!(f.slash, v.contains(['/', '\\']), "{v:?}");
        assert_eq!(f.colon, v.contains(':'), "{v:?}");
        assert_eq!(f.wrap, may_wrap(v.as_bytes()), "{v:?}");
    });
    generated_paths(50_000, |v| assert_eq!(facts(v.as_bytes()), facts_by_byte(v.as_bytes()), "{v:?}"));
    for v in crate::other_util::test_values() {
        assert_eq!(facts(v.as_bytes()), facts_by_byte(v.as_bytes()), "{v:?}");
        let f = facts(v.as_bytes());
        assert_eq!((f.climb, f.wrap, f.colon), (may_climb(&v), may_wrap(v.as_bytes()), v.contains(':')), "{v:?}");
    }
}

/// The one-pass path for URLs and paths of printable ASCII gives what the general path gives,
/// at both depths and for URL-borne and document field kinds.
#[test]
fn analyse_plain_agrees_with_the_general_path() {
    let (mut plain, mut found) = (0, 0);
    generated_paths(60_000, |v| {
        if !may_hold_path(v) {
            return;
        }
        let f = facts(v.as_bytes());
        for field in [FieldKind::QueryValue, FieldKind::JsonValue] {
            let want = analyse_general(v, field, 0, None);
            found += usize::from(want.is_some());
            assert_eq!(analyse(v, field, 0), want, "{v:?}");
            assert_eq!(analyse(v, field, 1), analyse_general(v, field, 1, None), "{v:?}");
        }
        plain += usize::from(f.plain && !f.blank && !f.sep);
    });
    assert!(plain > 5_000 && found > 5_000, "{plain} {found}");
    // Real values too (their plain ones with blanks or delimiters take the general path with
    // their facts).
    for v in crate::other_util::test_values() {
        if v.is_empty() || !may_hold_path(&v) {
            continue;
        }
        for field in [FieldKind::QueryValue, FieldKind::JsonValue] {
            assert_eq!(analyse(&v, field, 0), analyse_general(&v, field, 0, None), "{v:?}");
        }
    }
}

/// Values built from path pieces: roots, system directories, sensitive names, dot segments,
/// encodings, wrappers, URL parts, base64 of `../`, blanks and delimiters (a bounded
/// pseudo-random sample).
fn generated_paths(n: usize, mut f: impl FnMut(&str)) {
    let parts = [
        "/",
        "\\",
        ".",
        "..",
        "?",
        "etc",
        "passwd",
        "web.config",
        "a",
        "1X",
        "C:",
        "windows",
        "win.ini",
        "home",
        ".ssh",
        "access.log",
        "x.png",
        "{size}",
        "=",
        " ",
        "dev",
        "null",
        "proc",
        "self",
        "environ",
        "https://",
        "http://",
        "avatars.example.org",
        "v2",
        "0x2e",
        "0X2F",
        "0",
        "x",
        "%2e",
        "%00",
        "php://",
        "filter",
        "file:",
        "data:",
        "zip://",
        "convert.",
        "Li4vLi4v",
        "ZXRj",
        "'",
        "\"",
        "&",
        "\u{ff0e}",
        "\t",
        "..;",
        "~",
        "latest?page=1",
        ":",
    ];
    let mut rng = XorShift64::new(0x9e37_79b9_7f4a_7c15);
    for _ in 0..n {
        let v = rng.joined(&parts, 7);
        f(&v);
    }
}

/// First bytes of the first segments [`system_root`] knows (lowercase), the list [`plain_path`]
/// searched before [`system_first`] (its oracle).
const SYSTEM_FIRST: &[&str] = &[
    "etc", "proc", "usr", "var", "opt", "root", "boot", "srv", "mnt", "tmp", "inetpub", "xampp", "wamp", "lampp", "dev", "sys", "private", "windows", "winnt",
    "home", "volumes", "library",
];

/// [`system_first`] is [`SYSTEM_FIRST`] searched in any case: every name in three cases, and
/// every string of up to four bytes over the names' letters.
#[test]
fn system_first_agrees_with_the_list() {
    let listed = |w: &[u8]| SYSTEM_FIRST.iter().any(|r| w.eq_ignore_ascii_case(r.as_bytes()));
    for r in SYSTEM_FIRST {
        for w in [r.to_string(), r.to_ascii_uppercase(), format!("{}{}", &r[..1].to_ascii_uppercase(), &r[1..])] {
            assert!(system_first(w.as_bytes()), "{w}");
        }
        for w in [format!("{r}x"), format!("x{r}"), r[1..].to_string(), format!("{r}\u{e9}")] {
            assert_eq!(system_first(w.as_bytes()), listed(w.as_bytes()), "{w}");
        }
    }
    let alphabet = b"etcprousvabinwdlyhmEX.";
    let mut buf = Vec::new();
    for len in 0..=4u32 {
        for n in 0..alphabet.len().pow(len) {
            buf.clear();
            let mut k = n;
            for _ in 0..len {
                buf.push(alphabet[k % alphabet.len()]);
                k /= alphabet.len();
            }
            assert_eq!(system_first(&buf), listed(&buf), "{buf:?}");
        }
    }
}

/// What [`sensitive_name`] means, from its lists: the name without its trailing blanks and dots
/// is one of [`SENSITIVE_NAMES`], or names a log (`sess_<id>`, `messages`, `syslog`, a name
/// that ends in `.err`, `.log` or `_log`, or holds `access_log`, `access.log`, `error_log`,
/// `error.log` or `.log.`).
fn sensitive_name_spec(name: &str) -> bool {
    let n = name.trim_end_matches([' ', '.']);
    SENSITIVE_NAMES.contains(&n)
        || n.starts_with("sess_")
        || n == "messages"
        || n == "syslog"
        || [".err", ".log", "_log"].iter().any(|x| n.ends_with(x))
        || ["access_log", "access.log", "error_log", "error.log", ".log."].iter().any(|x| n.contains(x))
}

/// [`plain_path`] is sound: where [`judge_known`] takes it instead of the walk (a separator, no
/// segment that climbs, no NUL, no URL), a path it calls plain is one [`judge_walk`] finds
/// nothing in, for every kind of field; and [`sensitive_file`] is [`sensitive_name_spec`]. On
/// generated paths (roots, system directories in every case, sensitive names, logs, trailing
/// separators and dots, long segments) and on every real value of the sets and bench bodies.
#[test]
fn plain_paths_are_those_the_walk_finds_nothing_in() {
    let parts = [
        "/",
        "\\",
        "//",
        ".",
        "etc",
        "ETC",
        "Windows",
        "passwd",
        "web.config",
        "WEB.CONFIG",
        "access.log",
        "error_log",
        "x.LOG",
        "sess_9",
        "syslog",
        "messages",
        "a.err",
        "catalog",
        "1X",
        "C:",
        "c:",
        "{size}",
        "41bcf3b2a00dc7cfaff01cb3165d35d32a85bf1d.png",
        "user_avatar",
        "Volumes",
        "home",
        ".ssh",
        "id_rsa",
        " ",
        "\u{e9}",
        "Ab",
        "x",
    ];
    let mut rng = XorShift64::new(0x51_7cc1_b727_220a);
    let (mut yes, mut no) = (0, 0);
    let mut check = |v: &str| {
        let lc = v.to_ascii_lowercase();
        assert_eq!(sensitive_file(&lc), sensitive_name_spec(&lc), "{v:?}");
        if may_climb(v) || !has_slash(v) || is_url(v) || v.contains('\0') {
            return;
        }
        if plain_path(v) {
            for field in [FieldKind::QueryValue, FieldKind::JsonValue, FieldKind::Header] {
                assert!(judge_walk(v, false, field).is_none(), "{v:?} is plain but the walk finds something ({field:?})");
            }
            yes += 1;
        } else {
            no += 1;
        }
    };
    for _ in 0..100_000 {
        check(&rng.joined(&parts, 8));
    }
    for v in crate::other_util::test_values() {
        if v.contains(['/', '\\']) {
            check(&v);
        }
    }
    assert!(yes > 10_000 && no > 10_000, "{yes} {no}");
}

/// [`sensitive_name`] (the bit tests, then [`SENSITIVE_NAMES`]) answers what its lists say
/// ([`sensitive_name_spec`]): every name, in two cases, with trailing blanks and dots, cut,
/// extended and with each byte changed, is judged alike.
#[test]
fn sensitive_name_is_what_its_lists_say() {
    let mut checked = 0;
    let mut check = |v: &str| {
        assert_eq!(sensitive_file(v), sensitive_name_spec(v), "{v:?}");
        assert_eq!(sensitive_name(v.as_bytes()), sensitive_name_spec(v), "{v:?}");
        checked += 1;
    };
    let extra = ["access.log", "error_log", "x.log.1", "syslog", "messages", "sess_1", "a.err", "catalog", "log", "6_1.png", "{size}.png", ""];
    for n in SENSITIVE_NAMES.iter().chain(extra.iter()) {
        for v in [n.to_string(), n.to_ascii_uppercase(), format!("{n} "), format!("{n}."), format!("{n} . "), format!("x{n}"), format!("{n}x"), format!(".{n}")]
        {
            check(&v);
            for k in 0..v.len() {
                if v.is_char_boundary(k) && v.is_char_boundary(k + 1) {
                    check(&v[..k]);
                    check(&v[k + 1..]);
                    for c in ["a", "z", ".", "_", "-", "0", "9", "\u{e9}", "L", "G"] {
                        check(&format!("{}{c}{}", &v[..k], &v[k + 1..]));
                    }
                }
            }
        }
    }
    assert!(checked > 50_000, "{checked}");
}

/// [`wrap_before`] says yes wherever [`wrap_at`] does: every byte before a `:` or `.` that
/// ends a wrapper name in any case, and every byte before each at all.
#[test]
fn wrap_before_covers_wrap_at() {
    let names = ["php", "zip", "expect", "phar", "rar", "glob", "ogg", "file", "data", "compress", "ssh2", "convert", "string", "zlib"];
    let mut yes = 0;
    for n in names {
        for v in [n.to_string(), n.to_ascii_uppercase()] {
            for sep in [b':', b'.'] {
                let mut b = v.as_bytes().to_vec();
                b.push(sep);
                let mask = if sep == b':' { WRAP_BEFORE_COLON } else { WRAP_BEFORE_DOT };
                if wrap_at(&b, b.len() - 1) {
                    yes += 1;
                    assert!(wrap_before(&b, b.len() - 1, mask), "{v}{}", sep as char);
                }
            }
        }
    }
    assert_eq!(yes, 2 * names.len());
    for prev in 0..=255u8 {
        for sep in [b':', b'.'] {
            for head in [&b""[..], b"ph", b"zi", b"expec", b"pha", b"ra", b"glo", b"og", b"fil", b"dat", b"compres", b"ssh", b"conver", b"strin", b"zli"] {
                let mut b = head.to_vec();
                b.extend([prev, sep]);
                let mask = if sep == b':' { WRAP_BEFORE_COLON } else { WRAP_BEFORE_DOT };
                if wrap_at(&b, b.len() - 1) {
                    assert!(wrap_before(&b, b.len() - 1, mask), "{b:?}");
                }
            }
        }
    }
}

#[test]
fn rest_routes_named_like_system_files_are_routes() {
    let at = |v: &str| detector().check(&Input { raw: v, decoded: v, field: FieldKind::QueryValue }, Level::Strict).map_or(0, |h| h.confidence);
    for v in ["...", "…", "/hosts", "/api/v1/hosts", "/api/v2/clusters/7/hosts", "/groups/group", "/projects/42/issue", "/settings/passwd"] {
        assert!(at(v) < 40, "{v}: {}", at(v));
    }
    for v in [
        "/etc/hosts",
        "/etc/passwd",
        "../../../etc/group",
        "../../hosts",
        "/var/www/../../etc/shadow",
        "c:\\windows\\system32\\drivers\\etc\\hosts",
        "/app/.env",
        "/var/www/wp-config.php",
    ] {
        assert!(at(v) >= 60, "{v}: {}", at(v));
    }
    // Two dots alone climb one level: a strict probe, as before.
    assert_eq!(at(".."), 50);
}

#[test]
fn a_source_file_url_in_a_stack_frame_or_a_resource_name_is_not_inclusion() {
    let j = |v: &str| conf(v, FieldKind::JsonValue);
    // Written for this rule: frames of V8 and Firefox traces, resource-timing names, a
    // Windows developer's tree.
    for v in [
        "at Function.from (file:///Users/dev/project/src/index.ts:2004:19)",
        "    at main (file:///home/dev/app/dist/main.mjs:12:3)\n    at run (file:///home/dev/app/dist/run.mjs:4:1)",
        "render@file:///Users/ana/site/app.js:88:14",
        "file:///Users/dev/project/src/index.ts",
        "file:///C:/Users/dev/app/src/main.tsx",
        "file://localhost/Users/dev/www/index.html?debug=1",
        "file:///opt-not/project/styles/site.css",
        "AbortError: aborted.\nwaitFor@app:///main.jsbundle:1223:144\nsleep@file:///Users/dev/project/src/index.ts:6044:20\nModule.x@webpack-internal:///./src/a.js:4747:186",
    ] {
        assert!(j(v) < 40, "{v:?}: {}", j(v));
        assert!(q(v) < 40, "{v:?}: {}", q(v));
    }
    // The target decides: system files, secrets and climbs stay file inclusion, in a frame or
    // not; and a file: URL that is neither a frame nor a source file is read as before.
    for v in [
        "file:///etc/passwd",
        "file:///etc/passwd:1:1",
        "at x (file:///proc/self/environ:1:1)",
        "file:///var/www/html/app.js",
        "file:///C:/windows/win.ini",
        "file:///home/dev/.ssh/id_rsa",
        "file:///app/config/parameters.yml",
        "file:///app/../../etc/shadow.js",
        "file:///tmp/x.js:1:2",
        "file://localhost/etc/hosts",
    ] {
        assert!(j(v) >= 60, "{v:?}: {}", j(v));
    }
    assert_eq!(file_url_path("///users/a/x.ts:10:5"), ("/users/a/x.ts", true));
    assert_eq!(file_url_path("///c:/u/x.ts"), ("c:/u/x.ts", false));
    assert_eq!(file_url_path("///users/a/x.ts:10:5next@app:///y.js:1:2"), ("/users/a/x.ts", true));
    assert_eq!(file_url_path("///etc/passwd:1:1x"), ("/etc/passwd", true));
    assert_eq!(file_url_path("//host/share/x.js?v=1 more"), ("/share/x.js", false));
}

#[test]
fn one_level_up_inside_a_sentence_is_a_relative_reference() {
    // Written for this rule: prose naming a relative reference.
    for v in [
        "../images/logo.png in CSS",
        "see ../README.md for details",
        "the stylesheet loads ../fonts/inter.woff2 first",
        "moved to ..\\shared\\notes.txt yesterday",
    ] {
        assert!(q(v) < 40, "{v:?}: {}", q(v));
        assert!(conf(v, FieldKind::JsonValue) < 40, "{v:?}: {}", conf(v, FieldKind::JsonValue));
    }
    // A climb alone, two levels, or one level to a system file, in prose or not.
    for v in ["../config.php", "../../images/logo.png in CSS", "see ../../../etc/passwd now", "read ../etc/passwd please"] {
        assert!(q(v) >= 60, "{v:?}: {}", q(v));
    }
}

#[test]
fn a_users_drive_path_in_a_document_is_text() {
    // Written for this rule: a document's file path under a user's folder names a file.
    for v in ["C:\\Users\\maria\\Desktop\\plan.xlsx", "D:\\photos\\2024\\beach.jpg", "attached C:\\work\\notes.txt"] {
        assert!(conf(v, FieldKind::JsonValue) < 40, "{v}: {}", conf(v, FieldKind::JsonValue));
    }
    // In a URL-borne value a drive path is a file inclusion attempt, except a document under
    // a user's profile (a page's title or address sent by analytics), unless it is sensitive.
    for v in ["D:\\photos\\2024\\beach.jpg", "C:\\work\\notes.txt"] {
        assert!(conf(v, FieldKind::QueryValue) >= 60, "{v}: {}", conf(v, FieldKind::QueryValue));
    }
    for v in ["C:\\Users\\maria\\Desktop\\plan.xlsx", "C:\\Users\\anna\\Documents\\report.docx", "C:\\Users\\bob\\Downloads\\invoice.pdf"] {
        assert!(conf(v, FieldKind::QueryValue) < 40, "{v}: {}", conf(v, FieldKind::QueryValue));
    }
    for v in [
        "C:/users/administrator/ntuser.ini",
        "C:\\Users\\bob\\AppData\\Roaming\\app\\config.xml",
        "C:\\Users\\Administrator\\.ssh\\id_rsa",
        "C:\\Users\\bob\\..\\..\\Windows\\win.ini",
    ] {
        assert!(conf(v, FieldKind::QueryValue) >= 60, "{v}: {}", conf(v, FieldKind::QueryValue));
    }
    // Into a system directory or to a sensitive file, in a document too.
    for v in ["C:\\Windows\\win.ini", "c:\\inetpub\\wwwroot\\web.config", "C:\\boot.ini"] {
        assert!(conf(v, FieldKind::JsonValue) >= 60, "{v}: {}", conf(v, FieldKind::JsonValue));
    }
}

/// What the engine reports for `v` as free text (a search box's value).
fn free(v: &str) -> u8 {
    let input = Input { raw: v, decoded: v, field: FieldKind::QueryValue };
    detector().check(&input, Level::Strict).and_then(|h| detector().in_free_text(&input, h, Level::Strict)).map_or(0, |h| h.confidence)
}

#[test]
fn a_path_among_words_of_a_search_is_named_not_opened() {
    for v in ["cat /etc/hosts linux", "what's in /etc/passwd?", "windows C:\\Windows\\win.ini location"] {
        assert!(q(v) >= 40, "{v:?}: {}", q(v));
        assert_eq!(free(v), 0, "{v:?}");
    }
    // Alone, or inside markup or a directive, a path still counts.
    for v in ["/etc/passwd", "../../../etc/passwd", "<!--#include file=\"../../etc/passwd\"-->", "x\" src=\"../../../../etc/passwd"] {
        assert!(free(v) >= 60, "{v:?}: {}", free(v));
    }
}

#[test]
fn dot_segments_with_a_path_parameter_in_a_request_path() {
    // Written for this rule: Tomcat-style parameters on dot segments.
    for v in ["..;", "/manager/..;/html", "/.;/WEB-INF/web.xml", "/app/.;x=1/admin", "..;jsessionid=1"] {
        assert!(conf(v, FieldKind::PathSegment) >= 80, "{v}: {}", conf(v, FieldKind::PathSegment));
    }
    // Parameters on names, and dots that are no segment of their own.
    for v in ["/shop;jsessionid=A1B2", "/a/b.;c", "/files/v1.2;rev=3", "/a/...;x"] {
        assert!(conf(v, FieldKind::PathSegment) < 60, "{v}: {}", conf(v, FieldKind::PathSegment));
    }
    // Elsewhere than a request path, a `;` after dots is text.
    assert!(conf("see ..; then", FieldKind::JsonValue) < 60);
}

/// Written for this rule: whole request paths with a segment no client sends before the last
/// one; then paths with dots and parameters that clients do send.
#[test]
fn dot_and_parameter_only_segments_in_a_whole_path() {
    for v in ["/;/manage/users", "/;a=1/internal", "/app/.;/secret/file"] {
        assert!(conf(v, FieldKind::PathSegment) >= 60, "{v}: {}", conf(v, FieldKind::PathSegment));
    }
    // Dot segments are removed by the canonicaliser before anything judges or forwards the path.
    for v in ["/;jsessionid=ABC123", "/shop/cart;jsessionid=ABC", "/a//b", "/v1.2/items", "/files/.well-known/x", "/.", "/./private/x", "/a/b%20c/./d"] {
        assert!(conf(v, FieldKind::PathSegment) < 60, "{v}: {}", conf(v, FieldKind::PathSegment));
    }
}
