//! Soundness of the pre-filters against the detectors, generic over every detector of the
//! registry: for every value of the development corpus (`$PALISADE_SHARED` or `../shared`, skipped with a message
//! when absent) and of our benign and handwritten attack sets (`data/`), and for every candidate the engine's decoder derives
//! from it, a detector that fires on the candidate (strict level, as a query value and as a
//! parameter name) must be admitted by the engine's pre-filter for that candidate
//! (`Engine::admitted`: the detector's declared `Gate`, or the family byte classes for a
//! detector without one). A detector that gains a pattern without the gate literal, byte or
//! test the pattern needs fails here.
//!
//! Debug builds check every `PALISADE_GATE_STEP`-th value (default 3); `PALISADE_GATE_STEP=1`
//! checks all of them (use `--release`).

use std::path::Path;

use palisade_detect::decode::{Decoder, Limits};
use palisade_detect::eval::parse_corpus;
use palisade_detect::{Engine, EngineConfig, FieldKind, Input, Level};

fn values() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<_> = std::fs::read_dir(root.join("data/benign")).unwrap().map(|e| e.unwrap().path()).collect();
    files.extend(std::fs::read_dir(root.join("data/attacks")).unwrap().map(|e| e.unwrap().path()));
    files.sort();
    // `$PALISADE_SHARED` when set, else `../shared` beside the repository.
    let shared = std::env::var_os("PALISADE_SHARED").map_or_else(|| root.join("../../../shared"), std::path::PathBuf::from);
    let corpus = shared.join("data/attack-corpus/corpus.jsonl");
    if corpus.exists() {
        files.push(corpus);
    } else {
        println!("skipping the development corpus ({} not found); benign sets only", corpus.display());
    }
    let mut out = Vec::new();
    for f in files.iter().filter(|p| p.extension().is_some_and(|e| e == "jsonl")) {
        out.extend(parse_corpus(&std::fs::read_to_string(f).unwrap()).unwrap().into_iter().map(|s| s.value));
    }
    out
}

fn step() -> usize {
    std::env::var("PALISADE_GATE_STEP").ok().and_then(|v| v.parse().ok()).unwrap_or(if cfg!(debug_assertions) { 3 } else { 1 }).max(1)
}

/// Checks every detector on every candidate of every value against the engine's pre-filter;
/// returns (candidates checked, hits).
fn check_soundness<'a>(values: impl Iterator<Item = &'a str>) -> (usize, usize) {
    let engine = Engine::new(EngineConfig::default()).unwrap();
    let detectors = palisade_detect::registry::detectors();
    let mut decoder = Decoder::new(Limits::default());
    let (mut checked, mut hits) = (0usize, 0usize);
    let mut failures = Vec::new();
    for v in values {
        for c in decoder.decode(v).iter() {
            let admitted = engine.admitted(c.text);
            checked += 1;
            for d in &detectors {
                for field in [FieldKind::QueryValue, FieldKind::QueryName] {
                    let input = Input { raw: c.text, decoded: c.text, field };
                    if let Some(h) = d.check(&input, Level::Strict) {
                        hits += 1;
                        if !admitted.contains(&d.name()) {
                            failures.push(format!(
                                "{} ({}, {:?}) fires at {} on {:?} but its pre-filter says no",
                                d.name(),
                                h.why,
                                field,
                                h.confidence,
                                c.text
                            ));
                        }
                    }
                }
            }
        }
    }
    println!("{checked} candidates checked, {hits} hits");
    assert!(failures.is_empty(), "{} unsound pre-filter decisions, first ones:\n{}", failures.len(), failures[..failures.len().min(20)].join("\n"));
    (checked, hits)
}

#[test]
fn every_hit_passes_the_pre_filter() {
    let values = values();
    let (checked, hits) = check_soundness(values.iter().step_by(step()).map(String::as_str));
    assert!(hits > 0 || checked == 0);
}

/// The pre-filters read non-ASCII characters by code point (letters of other scripts open
/// nothing, typographic quotes open what `'` and `"` open: `engine::CodePoint`). Checked on
/// the corpus with those characters put in: quotes made typographic, letters of other scripts
/// next to every word and in place of look-alike ASCII letters (Cyrillic `а`, `е`, `о`, Greek
/// `ο`), accented letters.
#[test]
fn every_hit_passes_the_pre_filter_with_letters_and_typographic_quotes() {
    let mutations: [fn(&str) -> String; 5] = [
        |v| v.replace('\'', "\u{2019}").replace('"', "\u{201d}"),
        |v| v.replace('\'', "\u{2018}").replace('"', "\u{201c}").replace('`', "\u{2032}"),
        |v| format!("é{}中", v.replace(' ', " жé")),
        |v| v.replace('a', "\u{430}").replace('e', "\u{435}").replace('o', "\u{3bf}"),
        |v| v.replace('e', "é").replace('u', "ü").replace('i', "ı"),
    ];
    let values = values();
    let mut mutated = Vec::new();
    for v in values.iter().step_by(step()) {
        for m in &mutations {
            let x = m(v);
            if x != *v {
                mutated.push(x);
            }
        }
    }
    let (checked, hits) = check_soundness(mutated.iter().map(String::as_str));
    assert!(hits > 0 || checked == 0);
}

#[test]
fn benign_values_are_mostly_cleared() {
    // The point of the gates: typical benign values reach no detector (but the scanner, which
    // only looks at headers and path segments and has no gate).
    let engine = Engine::new(EngineConfig::default()).unwrap();
    for v in
        ["jane.doe42", "3f2b8c1e-9a4d-4e7b-b1c2-5d6e7f8a9b0c", "2024-05-14T09:31:27Z", "jane.doe+orders@example.co.uk", "Wireless Mouse", "+1-202-555-0147"]
    {
        let a = engine.admitted(v);
        assert!(a.iter().all(|n| *n == "scanner"), "{v}: {a:?}");
    }
    // And attacks reach theirs.
    assert!(engine.admitted("1 union select password from users").contains(&"sqli"));
    assert!(engine.admitted("1union select 1").contains(&"sqli"));
    assert!(engine.admitted("javascript:alert`1`").contains(&"xss"));
    assert!(engine.admitted("ls -la /etc").contains(&"cmdi"));
    assert!(engine.admitted("http://169.254.169.254/latest").contains(&"ssrf"));
    assert!(engine.admitted("Li4vLi4vZXRjL3Bhc3N3ZA==").contains(&"path"));
}

/// The NoSQL gate on generated values: it opens on a quote, `;`, `|` or `&` only at the
/// value's start (after blanks), where its JavaScript breakout begins; values joined from
/// quotes, apostrophes inside words, entities, `;`, `||`, `&&`, blanks, operators and
/// JavaScript around them, at every position, must keep every hit inside the gate.
#[test]
fn every_hit_passes_the_pre_filter_on_generated_breakouts() {
    let parts = [
        "'",
        "\"",
        " ",
        "\t",
        "0;",
        "1;",
        ";",
        "||",
        "&&",
        "|",
        "&",
        "don't",
        "&rsquo;",
        "&#39;",
        "$ne",
        "$where",
        ":",
        "{",
        "}",
        "[",
        "]",
        "return true",
        "this.",
        "sleep(5000)",
        "==",
        "db.",
        "users.find()",
        "x",
        "1",
        "%27",
        "%24gt",
    ];
    let mut rng = palisade_testkit::rng::XorShift64::new(0x6a7e_b0de);
    let values: Vec<String> = (0..20_000).map(|_| rng.joined(&parts, 6)).collect();
    let (checked, hits) = check_soundness(values.iter().map(String::as_str));
    assert!(hits > 1_000, "{checked} candidates, {hits} hits: the generator no longer reaches the detectors");
    // Prose with quotes, `;` and `&` inside reaches no NoSQL analysis.
    let engine = Engine::new(EngineConfig::default()).unwrap();
    for v in ["Welcome to Metabase's Discussion Forum", "Deploy to Heroku isn&rsquo;t working", "a || b; c && d", "Query working on \"Questions\""] {
        assert!(!engine.admitted(v).contains(&"nosql"), "{v}");
    }
    for v in ["';return 'a'=='a' && ''=='", " \"x", "0;return true", "||1", "&&this.x"] {
        assert!(engine.admitted(v).contains(&"nosql"), "{v}");
    }
}

/// The LDAP gate on generated values: it opens on `*`, on a `)` with a `(` after it, and on a
/// value of at most four metacharacters; values joined from parentheses, wildcards, boolean
/// operators, comparisons, words, blanks and percent-encodings, at every position, must keep
/// every hit inside the gate.
#[test]
fn every_hit_passes_the_pre_filter_on_generated_filters() {
    let parts = [
        "(", ")", "*", "&", "|", "!", "=", "~=", ">=", " ", "  ", "uid", "cn=", "x", "1", ")(", "(|(", "(&(", "*)", "))", "%28", "%29", "%2a", "admin",
        "&rsquo;", "\\28",
    ];
    let mut rng = palisade_testkit::rng::XorShift64::new(0x1da9_f117);
    let values: Vec<String> = (0..20_000).map(|_| rng.joined(&parts, 7)).collect();
    let (checked, hits) = check_soundness(values.iter().map(String::as_str));
    assert!(hits > 1_000, "{checked} candidates, {hits} hits: the generator no longer reaches the detectors");
    // Parentheses and entities in prose reach no LDAP analysis; breakouts and probes do.
    let engine = Engine::new(EngineConfig::default()).unwrap();
    for v in ["External (Metabase level) linkages", "Can I use DATEPART() in SQL queries?", "Deploy to Heroku isn&rsquo;t working", "a = b | c"] {
        assert!(!engine.admitted(v).contains(&"ldap"), "{v}");
    }
    for v in ["x)(uid=*", "*)(|(uid=*))", " )( ", "|", "(&)", "admin*"] {
        assert!(engine.admitted(v).contains(&"ldap"), "{v}");
    }
}

/// The XSS gate on generated values: a quote, `>`, `)`, `;` or a square bracket opens it no
/// more (the analysis needs a `<`, `(`, backtick, `=`, an encoding or a scheme or sink
/// literal); values joined from those bytes, tags, handlers, sinks, schemes, entities and
/// escapes, at every position, must keep every hit inside the gate.
#[test]
fn every_hit_passes_the_pre_filter_on_generated_markup() {
    let parts = [
        "'",
        "\"",
        ">",
        ")",
        ";",
        "[",
        "]",
        " ",
        "x",
        "<",
        "(",
        "`",
        "=",
        "onload",
        "onerror",
        " onfocus",
        "autofocus",
        "alert",
        "prompt",
        "document.cookie",
        "javascript:",
        "data:text/html,",
        "svg",
        "img src",
        "//",
        "-",
        "+",
        "&lt;",
        "&#60;",
        "&#x3c;",
        "%3c",
        "\\x3c",
        "\\u003c",
        "+ADw-",
        "1",
        "location",
        "top",
        "eval",
    ];
    let mut rng = palisade_testkit::rng::XorShift64::new(0x855_6a7e);
    let values: Vec<String> = (0..20_000).map(|_| rng.joined(&parts, 7)).collect();
    let (checked, hits) = check_soundness(values.iter().map(String::as_str));
    assert!(hits > 1_000, "{checked} candidates, {hits} hits: the generator no longer reaches the detectors");
    // Quotes, brackets and `;` in prose reach no XSS analysis; markup and calls do.
    let engine = Engine::new(EngineConfig::default()).unwrap();
    for v in ["Welcome to Metabase's Discussion Forum", "Query working on \"Questions\"", "Mongo query [solved: Mongo 3.0 required]", "a; b) c > d"] {
        assert!(!engine.admitted(v).contains(&"xss"), "{v}");
    }
    for v in ["\"><svg onload=alert(1)>", "'-alert`1`-'", "\" autofocus onfocus=x", "'+document.cookie+'", "&lt;script&gt;"] {
        assert!(engine.admitted(v).contains(&"xss"), "{v}");
    }
}

/// The SQL and XSS gates on generated prose: the punctuation of prose (quotes, apostrophes,
/// `#`, `?`, `;`, square brackets, the parentheses of an aside) opens the SQL gate only where
/// its analysis may find something, and an `&` opens the XSS gate only where a reference or an
/// encoded angle may matter; values joined from prose words, SQL keywords and fragments, HTML
/// character references (typographic, quotes, ones that decode to `<`, `(`, `:`, a letter, a
/// blank or `&`), handler and sink names, at every position, must keep every hit inside the
/// gates.
#[test]
fn every_hit_passes_the_pre_filter_on_generated_prose() {
    let parts = [
        " ",
        "Welcome",
        "to",
        "it",
        "x",
        "1",
        "0x1",
        "'",
        "\"",
        "(",
        ")",
        "()",
        "#",
        "?",
        ";",
        "[",
        "]",
        "&",
        "&&",
        "&rsquo;",
        "&ldquo;",
        "&rdquo;",
        "&#39;",
        "&quot;",
        "&amp;",
        "&lt;",
        "&gt;",
        "&#60;",
        "&#x28;",
        "&colon;",
        "&Tab;",
        "&#32;",
        "&#x61;",
        "&apos;",
        "on",
        "load",
        "onload",
        "in",
        "or",
        "and",
        "union",
        "select",
        "from",
        "where",
        "sleep",
        "char",
        "set",
        "order",
        "by",
        "is",
        "null",
        "-",
        "--",
        "/",
        ",",
        ".",
        "=",
        "\u{2019}",
        "javascript",
        "script",
        "alert",
        "svg",
        "i18n",
        "DATEPART",
        "\n",
        "@",
    ];
    let mut rng = palisade_testkit::rng::XorShift64::new(0x5e91_9a7e);
    let values: Vec<String> = (0..30_000).map(|_| rng.joined(&parts, 7)).collect();
    let (checked, hits) = check_soundness(values.iter().map(String::as_str));
    assert!(hits > 1_000, "{checked} candidates, {hits} hits: the generator no longer reaches the detectors");
    // Prose with entities, asides, quotes and `#` reaches no SQL or XSS analysis; SQL and
    // markup written with the same bytes do.
    let engine = Engine::new(EngineConfig::default()).unwrap();
    for v in ["Deploy to Heroku isn&rsquo;t working", "Welcome to Metabase&rsquo;s Discussion Forum", "Issue #42 [fixed]"] {
        let a = engine.admitted(v);
        assert!(!a.contains(&"sqli") && !a.contains(&"xss"), "{v}: {a:?}");
    }
    for v in ["Internationalization (i18n)", "Don't", "Who's ready?", "(a) (b)"] {
        assert!(!engine.admitted(v).contains(&"sqli"), "{v}");
    }
    for v in ["x'||'", "1;waitfor delay'0:0:5'", "'#", "x')#", "sleep(5)", "ascii(x)"] {
        assert!(engine.admitted(v).contains(&"sqli"), "{v}");
    }
    for v in ["&lt;script&gt;", "&#x28;1&#x29;", "java&#x09;script&colon;x", "&amp;lt;svg", "&#x6f;nload"] {
        assert!(engine.admitted(v).contains(&"xss"), "{v}");
    }
}
