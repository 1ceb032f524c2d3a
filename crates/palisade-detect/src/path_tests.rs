use super::*;
use crate::other_util::take_steps;
use palisade_testkit::rng::XorShift64;

fn conf(v: &str, field: FieldKind) -> u8 {
    detector().check(&Input { raw: v, decoded: v, field }, Level::Strict).map_or(0, |h| h.confidence)
}

fn q(v: &str) -> u8 {
    conf(v, FieldKind::QueryValue)
}

#[test]
fn traversal_forms() {
    let mut bad: Vec<String> = Vec::new();
    for v in [
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
    ] {
        if q(v) < 60 {
            bad.push(format!("{v:?}: {}", q(v)));
        }
    }
    assert!(bad.is_empty(), "{bad:#?}");
}

#[test]
fn lfi_forms() {
    let mut bad: Vec<String> = Vec::new();
    for v in [
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
    ] {
        if q(v) < 60 {
            bad.push(format!("{v:?}: {}", q(v)));
        }
    }
    assert!(bad.is_empty(), "{bad:#?}");
}

#[test]
fn benign_look_alikes() {
    let mut bad: Vec<String> = Vec::new();
    for v in [
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
    ] {
        if q(v) >= 60 {
            bad.push(format!("{v:?}: {}", q(v)));
        }
    }
    assert!(bad.is_empty(), "{bad:#?}");
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

/// [`facts`] agrees with the questions it answers in one pass.
#[test]
fn facts_agree_with_the_separate_scans() {
    generated_paths(50_000, |v| {
        let f = facts(v.as_bytes());
        let (n, null) = normalise(v);
        assert_eq!(f.plain, matches!(n, Cow::Borrowed(_)) && !null && v.bytes().all(|c| CLASS[c as usize] & PLAIN != 0), "{v:?}");
        assert_eq!(f.blank, v.bytes().any(is_blank), "{v:?}");
        assert_eq!(f.sep, v.bytes().any(token_separator), "{v:?}");
        assert_eq!(f.climb, may_climb(v), "{v:?}");
        assert_eq!(f.slash, v.contains(['/', '\\']), "{v:?}");
    });
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
            let want = analyse_general(v, field, 0);
            found += usize::from(want.is_some());
            assert_eq!(analyse(v, field, 0), want, "{v:?}");
            assert_eq!(analyse(v, field, 1), analyse_general(v, field, 1), "{v:?}");
        }
        plain += usize::from(f.plain && !f.blank && !f.sep);
    });
    assert!(plain > 5_000 && found > 5_000, "{plain} {found}");
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
