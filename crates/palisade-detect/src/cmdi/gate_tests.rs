//! The gate's test ([`gate_test_or_probe`], [`plain_or_walk`], [`command_position_walk`],
//! [`known_program_raw`]) on every value of the corpora, the benign sets and the bench bodies
//! (with their decoded candidates and variations), and on generated values: it is sound (it
//! admits every value the check reports), its shortcuts answer as the general
//! walk, and its word lookups answer as the program lists say.

use super::*;
use crate::decode::Decoder;
use palisade_testkit::rng::XorShift64;

/// Whether the word in `buf[..len]` (lowercase already), with a `.exe`, `.com` or `.bat`
/// suffix cut, is one of the [`PROGRAMS`] (a word of more than 20 bytes is none): the lookup
/// as the lists define it.
pub(super) fn known_program_spec(buf: &[u8; 20], len: usize) -> bool {
    let Some(w) = buf.get(..len).filter(|w| !w.is_empty()) else { return false };
    let w = [&b".exe"[..], b".com", b".bat"].iter().find_map(|x| w.strip_suffix(*x)).unwrap_or(w);
    PROGRAMS.iter().any(|p| p.as_bytes() == w)
}

/// Whether `w`, lowercased, is a program that is not [`AMBIGUOUS`]: what [`bare_program`] and
/// [`gate_bare_word`] answer, by the lists.
fn unambiguous_program_spec(w: &[u8]) -> bool {
    let lc = w.to_ascii_lowercase();
    PROGRAMS.iter().any(|p| p.as_bytes() == lc) && !AMBIGUOUS.iter().any(|p| p.as_bytes() == lc)
}

/// The gate on `v`: panics on the first violation of its properties; returns its answer.
/// - Sound: when the check reports `v`, the gate as declared (`%`, the literals, the test)
///   admits it.
/// - The plain path of [`plain_or_walk`] answers as [`command_position_walk`].
/// - [`gate_test`] is the walk's answer, then [`bare_program`] for a bare word, else not
///   [`harmless_prose`] (which the check reports nothing for).
fn agree(v: &str) -> bool {
    let gate = gate_test_or_probe(v);
    let b = v.as_bytes();
    let walk = command_position_walk(b);
    assert_eq!(program_in_command_position(v), walk, "program_in_command_position {v:?}");
    let test = gate_test(v);
    let want_test = walk && if is_bare(b) { unambiguous_program_spec(b) } else { !harmless_prose(b) };
    assert_eq!(test, want_test, "gate_test {v:?}");
    if walk && !test && !is_bare(b) {
        assert_no_finding(v);
    }
    if !gate && !v.contains('%') && !SPECIAL_ANCHORS.any(v) {
        assert_no_check(v);
    }
    // The test's [`Gate::test_bytes`] are needed for a yes.
    assert!(!gate || v.bytes().any(|c| GATE_TEST_BYTES.as_bytes().contains(&c)), "gate yes without a test byte {v:?}");
    if is_bare_word(v) {
        assert_eq!(gate_bare_word(v), gate, "gate_bare_word {v:?}");
    }
    gate
}

/// [`CmdiDetector::check`] reports nothing for `v` at the lowest threshold.
fn assert_no_check(v: &str) {
    let input = Input { raw: v, decoded: v, field: crate::FieldKind::QueryValue };
    assert_eq!(CmdiDetector.check(&input, Level::Strict), None, "check {v:?} while the gate is closed");
}

/// Whether `v` has no byte but ASCII letters, digits and `_` (what the engine runs
/// [`gate_bare_word`] on).
fn is_bare_word(v: &str) -> bool {
    v.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_')
}

/// [`gate_bare_word`] answers as [`gate_test_or_probe`] on every bare word: every program and
/// ambiguous program in three cases, with a suffix and a prefix, and generated words of 0 to
/// 80 bytes over letters, digits and `_` (and over the letters of the programs).
#[test]
fn bare_word_gate_agrees_with_the_test() {
    let mut words: Vec<String> = vec![String::new()];
    for w in PROGRAMS.iter().chain(AMBIGUOUS.iter()).filter(|w| is_bare_word(w)) {
        for v in [w.to_string(), w.to_ascii_uppercase(), format!("{}{}", w[..1].to_ascii_uppercase(), &w[1..])] {
            words.extend([format!("{v}_"), format!("{v}1"), format!("x{v}"), format!("{v}{v}"), v]);
        }
    }
    let mut rng = XorShift64::new(0x3c6e_f372_fe94_f82b);
    const ALPHA: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_";
    const PROG: &[u8] = b"catlsidwhoamicurlwgetbashpythonncnetshpingPS_";
    for _ in 0..200_000 {
        let n = (rng.next_u64() % 81) as usize;
        let n = if rng.next_u64() % 4 == 0 { n } else { n % 9 };
        let set = if rng.next_u64() % 2 == 0 { ALPHA } else { PROG };
        words.push((0..n).map(|_| set[(rng.next_u64() % set.len() as u64) as usize] as char).collect());
    }
    let mut yes = 0;
    for v in &words {
        assert!(is_bare_word(v));
        let want = gate_test_or_probe(v);
        assert_eq!(gate_bare_word(v), want, "{v:?}");
        yes += want as usize;
    }
    assert!(yes > 100, "{yes}");
}

/// [`CmdiDetector::check`] reports nothing for `v` at the lowest threshold, and [`analyse`]
/// finds nothing in it.
fn assert_no_finding(v: &str) {
    assert_eq!(analyse(v, 0, false), None, "analyse {v:?}");
    let input = Input { raw: v, decoded: v, field: crate::FieldKind::QueryValue };
    assert_eq!(CmdiDetector.check(&input, Level::Strict), None, "check {v:?}");
}

/// Prose of ASCII letters and spaces that starts with an ambiguous program: the test says no
/// (unless a special anchor occurs, the engine's own yes), and the check finds nothing, for
/// every ambiguous program in three cases followed by generated words (plain English, program
/// names, recon commands); the programs [`harmless_prose`] leaves out (subcommands,
/// timing probes) and unambiguous ones keep the walk's yes.
#[test]
fn harmless_prose_is_not_reported() {
    const WORDS: &[&str] =
        &["site", "url", "from", "admin", "panel", "cat", "id", "whoami", "ls", "user", "a", "x", "etc", "passwd", "bin", "sh", "rf", "e", "c"];
    let mut rng = XorShift64::new(0x6a09_e667_f3bc_c908);
    let (mut no, mut kept) = (0, 0);
    let mut firsts: Vec<String> = Vec::new();
    for w in AMBIGUOUS.iter().chain(["curl", "whoami", "ls", "wget", "nmap"].iter()) {
        firsts.extend([w.to_string(), w.to_ascii_uppercase(), format!("{}{}", w[..1].to_ascii_uppercase(), &w[1..])]);
    }
    for first in &firsts {
        for _ in 0..40 {
            let n = 1 + (rng.next_u64() % 5) as usize;
            let mut v = first.clone();
            for _ in 0..n {
                v.push(' ');
                v.push_str(WORDS[(rng.next_u64() % WORDS.len() as u64) as usize]);
            }
            if rng.next_u64() % 4 == 0 {
                v.insert(0, ' ');
            }
            if SPECIAL_ANCHORS.any(&v) {
                continue;
            }
            let walk = program_in_command_position(&v);
            if harmless_prose(v.as_bytes()) {
                no += 1;
                assert!(!gate_test_or_probe(&v), "{v:?}");
                assert_no_finding(&v);
            } else {
                kept += 1;
                assert_eq!(gate_test_or_probe(&v), walk, "{v:?}");
            }
            agree(&v);
        }
    }
    assert!(no > 1_000 && kept > 1_000, "{no} {kept}");
    assert!(!gate_test("Set site url from admin panel") && gate_test("type cat file") && gate_test("sleep five") && gate_test("curl site"));
    assert!(!gate_test("id") && gate_test("whoami") && gate_test("id -a") && gate_test("set site url;"));
}

/// [`GATE_TEST_BYTES`] holds the ASCII letters for the program names: every program (and
/// with it every word the gate looks up) holds one.
#[test]
fn every_program_holds_a_letter() {
    for p in PROGRAMS {
        assert!(p.bytes().any(|c| c.is_ascii_alphabetic()), "{p:?}");
    }
}

/// Whether `v` holds a [`NOT_PLAIN`] byte (what [`gate_plain`] needs the engine to know).
fn has_not_plain(v: &str) -> bool {
    v.bytes().any(|c| PLAIN_CLASS[c as usize] == NOT_PLAIN)
}

/// [`gate_plain`] answers as [`gate_test_or_probe`] on every value with no [`NOT_PLAIN`] byte:
/// those of the corpora and bench bodies, their words and suffixes, and generated ones (programs
/// in three cases with suffixes, ambiguous ones before prose, blanks, long words, dates).
#[test]
fn plain_gate_agrees_with_the_test() {
    let mut values: Vec<String> = Vec::new();
    for v in all_values() {
        values.extend(v.split_whitespace().map(String::from));
        for (k, c) in v.char_indices() {
            if k > 0 && matches!(c, ' ' | ',' | '+' | '-' | '.') {
                values.push(v[k..].to_string());
            }
        }
        values.push(v);
    }
    const PARTS: &[&str] = &[
        "cat",
        "whoami",
        "id",
        "ls",
        "nc",
        "CAT.EXE",
        "Bash",
        "ncat.Bat",
        "cmd.com",
        ".exe",
        "size",
        "uname",
        "x",
        "Set",
        "site",
        "url",
        "ping",
        "net",
        "type",
        "abcdefghijklmnopqrstu",
        "abcdefghijklmnopqrst",
        "2016-01-14T06:30:45.397Z",
        "formatting-dates",
        " ",
        "  ",
        "+",
        ",",
        "\t",
        "\x0c",
        "\x0b",
        "-",
        ".",
        ":",
        "_",
        "=",
        "@",
        "%",
        "#",
        "!",
        "?",
        "*",
        "é",
        "Ｃat",
        "\u{a0}",
    ];
    let mut rng = XorShift64::new(0x510e_527f_ade6_82d1);
    for _ in 0..200_000 {
        let mut v = String::new();
        for _ in 0..1 + rng.below(8) {
            v.push_str(PARTS[rng.below(PARTS.len())]);
        }
        values.push(v);
    }
    let (mut n, mut yes) = (0usize, 0usize);
    for v in values.iter().filter(|v| !has_not_plain(v)) {
        let want = gate_test_or_probe(v);
        assert_eq!(gate_plain(v), want, "{v:?}");
        n += 1;
        yes += want as usize;
    }
    assert!(n > 100_000 && yes > 1_000, "{n} plain values, {yes} admitted");
}

fn json_strings(v: &serde_json::Value, out: &mut Vec<String>) {
    match v {
        serde_json::Value::String(s) => out.push(s.clone()),
        serde_json::Value::Array(a) => a.iter().for_each(|x| json_strings(x, out)),
        serde_json::Value::Object(o) => o.iter().for_each(|(k, x)| {
            out.push(k.clone());
            json_strings(x, out)
        }),
        _ => {}
    }
}

/// Every value of the development corpus and bench bodies (`../shared`, when present) and of
/// the data sets of this crate (`data/**/*.jsonl`).
fn all_values() -> Vec<String> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<std::path::PathBuf> = Vec::new();
    for dir in ["data/benign", "data/attacks"] {
        if let Ok(rd) = std::fs::read_dir(root.join(dir)) {
            files.extend(rd.map(|e| e.unwrap().path()));
        }
    }
    let shared = root.join("../../../shared");
    for f in ["data/attack-corpus/corpus.jsonl", "bench/large.json", "bench/small.json"] {
        let p = shared.join(f);
        if p.exists() {
            files.push(p);
        } else {
            println!("skipping {} (not found)", p.display());
        }
    }
    let mut values = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        match f.extension().and_then(|e| e.to_str()) {
            Some("jsonl") => values.extend(crate::eval::parse_corpus(&text).unwrap().into_iter().map(|s| s.value)),
            Some("json") => json_strings(&serde_json::from_str(&text).unwrap(), &mut values),
            _ => {}
        }
    }
    values
}

#[test]
fn gate_is_sound_on_every_corpus_value() {
    let values = all_values();
    let mut decoder = Decoder::default();
    let (mut n, mut yes) = (0usize, 0usize);
    for v in &values {
        let cands: Vec<String> = decoder.decode(v).iter().map(|c| c.text.to_string()).collect();
        let mut variants: Vec<String> = cands;
        variants.extend([
            format!("whoami {v}"),
            format!("{v} id"),
            format!("{v};id"),
            format!("x'{v}"),
            format!(" +,Cat.EXE {v}"),
            format!("/usr/bin/{v}"),
            format!("{v}'"),
            format!("{v}(x)"),
        ]);
        variants.extend(v.split_whitespace().map(String::from));
        // Every suffix that starts at a char boundary after a blank or an operator byte.
        for (k, c) in v.char_indices() {
            if k > 0 && matches!(c, ' ' | ';' | '|' | '&' | '(' | '\'' | '/' | '$') {
                variants.push(v[k..].to_string());
            }
        }
        variants.push(v.clone());
        for w in &variants {
            n += 1;
            yes += agree(w) as usize;
        }
    }
    println!("{} values, {n} checked, {yes} admitted", values.len());
    assert!(values.len() > 2_000 && yes > 1_000, "{} values, {yes} admitted", values.len());
}

#[test]
fn gate_is_sound_on_generated_values() {
    const PARTS: &[&str] = &[
        "cat",
        "whoami",
        "id",
        "ls",
        "nc",
        "CAT.EXE",
        "Bash",
        "ncat.Bat",
        "cmd.com",
        ".exe",
        "size",
        "uname",
        "x",
        "abc",
        "0ea827",
        "6_1",
        "abcdefghijklmnopqrstu",
        "abcdefghijklmnopqrst",
        "formatting-dates",
        "2016-01-14T06:30:45.397Z",
        "Welcome",
        "Metabase's",
        "don't",
        "(i18n)",
        "DATEPART()",
        "&rsquo;",
        "&#39;",
        "&ldquo;",
        "Can I use",
        "/",
        "/usr/bin/",
        "/bin/",
        "/???/?at",
        "/usr/*/id",
        "*",
        "?",
        "**",
        ".png",
        "https://avatars.discourse.org/v2/letter/z/",
        "/user_avatar/d.com/system/",
        "{size}",
        "{",
        "}",
        ";",
        "|",
        "||",
        "&",
        "&&",
        "`",
        "$(",
        "(",
        ")",
        "<",
        ">",
        "\n",
        "\r",
        "\\n",
        "\\r",
        " ",
        "  ",
        "+",
        ",",
        "\t",
        "\x0b",
        "\x0c",
        "'",
        "\"",
        "^",
        "$'\\x69d'",
        "$'id'",
        "$IFS",
        "${IFS}",
        "${IFS",
        "$@",
        "$1",
        "$*",
        "$",
        "\\",
        "\\033[0m",
        "\\e[1m",
        "\\x1b[",
        "\\u001B[2A",
        ".",
        "-",
        ":",
        "_",
        "=",
        "@",
        "%",
        "#",
        "!",
        "~",
        "é",
        "日本",
        "ß",
        "\u{2028}",
        "\u{a0}",
        "Ｃat",
    ];
    let mut rng = XorShift64::new(0x9e37_79b9_7f4a_7c15);
    let (mut yes, mut n) = (0usize, 0usize);
    for _ in 0..400_000 {
        let mut v = String::new();
        for _ in 0..1 + rng.below(10) {
            v.push_str(PARTS[rng.below(PARTS.len())]);
        }
        n += 1;
        yes += agree(&v) as usize;
    }
    assert!(yes > 50_000 && yes < n - 50_000, "{yes} of {n} admitted");
}

/// [`known_program_raw`] of a word is [`known_program_spec`] of its lowercase form, on every
/// program with its case, suffixes and neighbours changed, and on random words.
#[test]
fn known_program_raw_looks_words_up_as_the_lists_say() {
    let mut words: Vec<Vec<u8>> = Vec::new();
    for p in PROGRAMS.iter().chain(AMBIGUOUS).chain(RECON) {
        for w in [
            p.to_string(),
            p.to_uppercase(),
            format!("{p}.exe"),
            format!("{p}.EXE"),
            format!("{p}.Com"),
            format!("{p}.bat"),
            format!("{p}.txt"),
            format!("{p}x"),
            format!("x{p}"),
            format!("{p}.exe.exe"),
        ] {
            words.push(w.into_bytes());
        }
    }
    words.extend(
        [&b""[..], b".exe", b".EXE", b"x.exe", b"\xc3\xa9", b"abcdefghijklmnopqrst", b"abcdefghijklmnopqrstu", b"whoami.exe.abcdefghij"].map(|w| w.to_vec()),
    );
    let mut rng = XorShift64::new(7);
    let alphabet = b"aAcdeEhiImnostwx.-_9\xc3\xa9";
    for _ in 0..200_000 {
        let w: Vec<u8> = (0..rng.below(24)).map(|_| alphabet[rng.below(alphabet.len())]).collect();
        words.push(w);
    }
    let mut yes = 0;
    for w in &words {
        let mut a = [0u8; 20];
        for (o, c) in a.iter_mut().zip(w) {
            *o = c.to_ascii_lowercase();
        }
        let want = known_program_spec(&a, w.len());
        assert_eq!(known_program_raw(w), want, "{:?}", String::from_utf8_lossy(w));
        assert_eq!(known_program(&a, w.len()), want, "{:?}", String::from_utf8_lossy(w));
        yes += want as usize;
    }
    assert!(yes > 1_000, "{yes}");
}

/// [`run_end`] (a bit per byte, the last eight bytes overlapped) is the first position from `j`
/// before `stop` (at most the end) whose byte the table does not hold, else where the run
/// stops: for every table it is used with, on random bytes, starts and stops (also past the
/// end and before the start).
#[test]
fn run_end_finds_the_end_of_the_run() {
    let spec = |t: &[u8; 256], b: &[u8], j: usize, stop: usize| {
        let stop = stop.min(b.len());
        (j..stop).find(|&k| t[b[k] as usize] == 0).unwrap_or(j.max(stop))
    };
    let tables: [&[u8; 256]; 6] = [&WORD_BYTE, &PLAIN_WORD, &FAST_WORD, &FAST_WORD_NO_GLOB, &NOT_NOT_PLAIN, &NOT_OPERATE];
    let alphabet = b"ab_9 /?*;'(\\$\xc3\xa9-.";
    let mut rng = XorShift64::new(11);
    for _ in 0..300_000 {
        let n = rng.below(40);
        // Long runs of one byte as well as mixed ones.
        let b: Vec<u8> = if rng.below(3) == 0 {
            let c = alphabet[rng.below(alphabet.len())];
            let mut v = vec![c; n];
            if n > 0 {
                v[rng.below(n)] = alphabet[rng.below(alphabet.len())];
            }
            v
        } else {
            (0..n).map(|_| alphabet[rng.below(alphabet.len())]).collect()
        };
        let j = rng.below(n + 3);
        let stop = rng.below(n + 10);
        for t in tables {
            assert_eq!(run_end(t, &b, j, stop), spec(t, &b, j, stop), "{:?} {j} {stop}", String::from_utf8_lossy(&b));
        }
    }
}

/// Every program fits [`bare_program`]'s buffer ([`UNAMBIGUOUS_MAX`]) and is lowercase (its
/// signature table is built from the names as written).
#[test]
fn unambiguous_programs_fit() {
    for p in PROGRAMS {
        assert!(p.len() <= UNAMBIGUOUS_MAX, "{p:?}");
        assert_eq!(*p, p.to_ascii_lowercase(), "{p:?}");
    }
}

/// [`bare_program`] is true exactly for the programs that are not ambiguous, lowercased: on
/// every program, ambiguous word and reconnaissance command with its case and neighbours
/// changed, on every bare word of the corpora, and on random words.
#[test]
fn bare_program_is_an_unambiguous_program() {
    let mut words: Vec<Vec<u8>> = Vec::new();
    for p in PROGRAMS.iter().chain(AMBIGUOUS).chain(RECON) {
        let up = p.to_uppercase();
        let mut title = p.to_string();
        title[..1].make_ascii_uppercase();
        for w in
            [p.to_string(), up, title, format!("{p}x"), format!("x{p}"), format!("{p}_"), format!("{p}1"), p[1..].to_string(), p[..p.len() - 1].to_string()]
        {
            words.push(w.into_bytes());
        }
    }
    for v in all_values() {
        for w in v.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
            words.push(w.as_bytes().to_vec());
        }
    }
    words.extend([&b"abcdefghijklmnopqrstu"[..], b"abcdefghijklmnopqrst", &[b'a'; 64], b"whoami_whoami_whoami_"].map(|w| w.to_vec()));
    let mut rng = XorShift64::new(13);
    let alphabet = b"aAcdeEhiImnoOstTwWx_9";
    for _ in 0..300_000 {
        let w: Vec<u8> = (0..1 + rng.below(14)).map(|_| alphabet[rng.below(alphabet.len())]).collect();
        words.push(w);
    }
    let mut yes = 0;
    for w in words.iter().filter(|w| !w.is_empty() && w.len() <= 64 && w.iter().all(|c| WORD_BYTE[*c as usize] != 0)) {
        let want = unambiguous_program_spec(w);
        assert_eq!(bare_program(w), want, "{:?}", String::from_utf8_lossy(w));
        yes += want as usize;
    }
    assert!(yes > 300, "{yes}");
}

/// [`bare_key_pairs`] is [`bare_key`] for every pair of first and last two bytes and every
/// length, and [`gate_bare_word`] is true exactly for the programs that are not ambiguous, on
/// every program and generated words.
#[test]
fn bare_key_pairs_is_bare_key() {
    for a in 0..=255u8 {
        for b in 0..=255u8 {
            for (y, z) in [(a, b), (b, a), (b'_', a), (b, b'D'), (0, 0xff), (0x1f, 0x20), (a ^ 0x20, b ^ 0x20)] {
                for n in 2..=UNAMBIGUOUS_MAX {
                    let want = bare_key(a, b, y, z, n);
                    assert_eq!(bare_key_pairs(u16::from_le_bytes([a, b]), u16::from_le_bytes([y, z]), n), want, "{a} {b} {y} {z} {n}");
                }
            }
        }
    }
    let mut rng = XorShift64::new(0x1f83_d9ab_fb41_bd6b);
    const ALPHA: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_";
    let mut words: Vec<String> = PROGRAMS.iter().chain(AMBIGUOUS.iter()).flat_map(|w| [w.to_string(), w.to_ascii_uppercase()]).collect();
    for _ in 0..200_000 {
        let n = (rng.next_u64() % 24) as usize;
        words.push((0..n).map(|_| ALPHA[(rng.next_u64() % ALPHA.len() as u64) as usize] as char).collect());
    }
    for w in &words {
        assert_eq!(gate_bare_word(w), unambiguous_program_spec(w.as_bytes()), "{w:?}");
    }
}
