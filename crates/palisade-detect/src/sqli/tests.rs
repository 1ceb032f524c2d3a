use super::*;
use crate::{Detector, FieldKind, Input, Level};
use palisade_testkit::rng::XorShift64;

fn hit(s: &str, level: Level) -> Option<Hit> {
    SqliDetector.check(&Input { raw: s, decoded: s, field: FieldKind::QueryValue }, level)
}

fn conf(s: &str) -> u8 {
    let mut steps = 0;
    analyze(s, &mut steps).map_or(0, |f| f.confidence)
}

#[test]
fn attacks_are_detected_at_balanced() {
    let attacks = [
        // UNION
        "1 union select 1,2,3--",
        "-1' UNION ALL SELECT username, password FROM users--",
        "1\" union select null,version()#",
        "1)) union all select 1,2,3 -- -",
        "1/**/UNION/**/SELECT/**/1,2,3",
        "1 /*!50000union*/ /*!50000select*/ 1,2",
        "1 uNiOn\tsElEcT\n1,2",
        "1\u{a0}union\u{a0}select\u{a0}1,2",
        "x' union (select 1,2)--",
        // stacked
        "1; DROP TABLE users--",
        // A backslash does not escape in standard SQL.
        "\\' OR 1=1 -- ",
        "x\\' union select password from users--",
        "DROP TABLE users",
        "drop table if exists users cascade",
        "DROP TABLE users; --",
        "create table t (a int)",
        "DROP TABLE users, accounts",
        "'; exec master..xp_cmdshell 'dir'--",
        "1; exec xp_cmdshell('whoami')",
        "'; shutdown--",
        "1'; insert into users values(1,'a')--",
        "1; update users set role='admin'--",
        "1; declare @s varchar(99) set @s=0x41--",
        // tautologies / contradictions
        "' OR 1=1--",
        "' or 'a'='a",
        "admin' or true--",
        "1 and 1=2",
        "1 or 1=1",
        "x\" or \"x\"=\"x",
        "1') or ('1'='1",
        "' OR '1",
        "'='",
        "-1 or x=x",
        // time-based
        "1 and sleep(5)",
        "1' AND BENCHMARK(5000000,MD5(1))--",
        "1; select pg_sleep(5)--",
        "1'; waitfor delay '0:0:5'--",
        "1 and 1=dbms_pipe.receive_message('a',5)",
        // error-based
        "1 and extractvalue(1,concat(0x7e,version()))",
        "1' and updatexml(1,concat(0x7e,(select user())),1)--",
        "1' + convert(int,@@version) + '",
        "1 and 1=cast(version() as int)",
        // out-of-band / files
        "1 union select load_file('/etc/passwd')",
        "1' into outfile '/var/www/x.php'--",
        "1; exec master..xp_dirtree '\\\\attacker\\x'",
        "1 and utl_http.request('http://x')=1",
        // comments
        "admin'--",
        "admin')-- -",
        "1 order by 3--",
        "1' group by 1--+",
        // sub-selects
        "1 and (select count(*) from users)>0",
        "'||(select password from users limit 1)||'",
        // arithmetic around a bare sub-select that is not a slug
        "0-select/*!1 union select version()*/from test;",
        "'-select/*!1 union select version()*/from test;",
        // typographic quotes (best-fit mapping) and a remaining URL-encoding layer
        "\u{2019} or \u{2018}1\u{2019}=\u{2019}1",
        "1%27%20or%201%3D1--",
        // comparison operators and odd spacing
        "1 or 2>1",
        "1 || 1=1",
        "1 && 2=2",
        "1'or(1)=(1)#",
    ];
    for a in attacks {
        let h = hit(a, Level::Balanced);
        assert!(h.is_some(), "missed {a:?} (confidence {})", conf(a));
        let h = h.unwrap();
        assert_eq!(h.detector, "sqli");
        assert_eq!(h.category, Category::Sqli);
        assert!(h.fragment.len() <= 64);
    }
}

#[test]
fn prose_and_lookalikes_are_not_blocked() {
    let benign = [
        "select your size",
        "Please select your size",
        "O'Reilly",
        "Tom's diner; open 9-5",
        "1 or 2 items",
        "union station",
        "Union Square",
        "drop me a line",
        "Drop-off at 5pm; pick up at 6",
        "john.doe@example.com",
        "https://example.com/a?b=1&c=2#frag",
        "It's a 'quoted' word, isn't it?",
        "I'd like to select the union of both; or not",
        "Don't drop the table; it's fine",
        "It\\'s a \\\"quoted\\\" word",
        "C:\\Users\\'s folder",
        "Drop table tennis lessons on Friday",
        "Create view of the old town",
        "rock 'n' roll",
        "5' 10\" tall",
        "He said \"hello\" and left",
        "the order by date is wrong",
        "Update your profile",
        "delete my account",
        "insert coin",
        "exec summary",
        "where is george",
        "1; exec will create the case 7",
        "if all else fails call grandma",
        "Please select pair #1",
        "40 AND FAB",
        "Mary's \"or\" John",
        "item #5 -- new",
        "price < 10 and rating > 4",
        "A-B-C -- D",
        "user@host:~$ ls -la",
        "2024-01-01T10:00:00Z",
        "C'est la vie; l'amour",
        "// comment: if (a == b) { return; }",
        "SELECT menu option 3",
        "sleep well",
        "1-800-FLOWERS",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abc",
        "aGVsbG8gd29ybGQ=",
        "Apt is gated; call when you get here, and we'll come down to get it.",
        // slugs and CSS class names around a keyword are identifiers
        "my-select-box",
        "drop-down-select-2",
        "multi_select-field",
    ];
    for b in benign {
        assert!(hit(b, Level::Balanced).is_none(), "false positive {b:?} (confidence {})", conf(b));
    }
}

#[test]
fn strict_catches_more() {
    assert!(hit("-1 order by 1", Level::Strict).is_some());
    assert!(hit("admin'#", Level::Strict).is_some());
}

#[test]
fn confidence_grows_with_structure() {
    assert!(conf("' or 1=1 union select password from users--") >= 95);
    assert!(conf("' or 1=1--") >= 80);
    assert!(conf("admin'--") < conf("' or 1=1--"));
}

#[test]
fn lexer_covers_dialect_literals() {
    let kinds: Vec<_> =
        lexer::Lexer::new("0x1F 0b101 1.5e-3 .5 N'x' E'a\\'b' $$dollar$$ `bq` [br] @v @@version -- c\n# h\n/* c */ a.b ::").map(|t| t.kind).collect();
    assert!(kinds.contains(&lexer::Kind::QIdent));
    assert!(kinds.contains(&lexer::Kind::Var));
    assert_eq!(kinds.iter().filter(|k| **k == lexer::Kind::Num).count(), 4);
    assert_eq!(kinds.iter().filter(|k| matches!(k, lexer::Kind::Str { closed: true, .. })).count(), 3);
    assert_eq!(kinds.iter().filter(|k| matches!(k, lexer::Kind::Comment { .. })).count(), 3);
}

/// Work must stay linear in the input: count steps, never wall-clock.
fn steps_for(s: &str) -> usize {
    let mut steps = 0;
    let _ = analyze(s, &mut steps);
    steps
}

#[test]
fn pathological_inputs_stay_linear() {
    let n = 1 << 20;
    let cases: Vec<String> = vec![
        "'".repeat(n),
        "\"".repeat(n),
        "(".repeat(100_000),
        format!("1 or {}1{}", "(".repeat(100_000), ")".repeat(100_000)),
        "/*".repeat(n / 2),
        "--".repeat(n / 2),
        "[".repeat(n),
        "$a".repeat(n / 2),
        "@".repeat(n),
        "1 union select ".repeat(n / 16),
        "a or ".repeat(n / 5),
        "\\".repeat(n),
        "%27".repeat(n / 3),
        "\u{2019}".repeat(n / 3),
        "sleep(".repeat(n / 6),
    ];
    for c in &cases {
        let steps = steps_for(c);
        assert!(steps <= 40 * c.len() + 1000, "{} steps for {} bytes starting {:?}", steps, c.len(), &c[..16]);
        // Also no panic at either level.
        let _ = hit(c, Level::Strict);
    }
}

#[test]
fn unicode_and_odd_bytes_do_not_panic() {
    for s in ["\u{0}'\u{0}", "é'é or é=é", "'\u{10ffff}", "0x", "0b", "1e", "@'", "$", "[]", "\\N", "/*!", "/*!123", "'--\u{2028}"] {
        let _ = hit(s, Level::Strict);
    }
}

#[test]
fn order_by_a_word_at_the_start_is_a_search() {
    assert!(conf("order by price") < 60);
    assert!(conf("group by color") < 60);
    assert!(conf(" ORDER BY 1-- ") >= 60);
    assert!(conf("1 order by 5") >= 60);
}

#[test]
fn a_sentence_quoting_statement_words_is_not_a_juxtaposed_statement() {
    // The words between the value's own quotes are its text, not a select list or an object.
    for s in [
        "Click 'Select' and then 'Update'",
        "Options: 'select', 'order', 'group'",
        "'Select' is a button label",
        "press \"select\" or \"insert\"",
        "Das Wort 'select' ist englisch",
        "He wrote 'drop table' on the board",
        "the words 'select' and 'drop' are reserved",
    ] {
        assert!(conf(s) < 60, "{s}: {}", conf(s));
    }
    // A statement after `;`, or with a select list or an object name, still is one.
    for s in [
        "1' select @@version--",
        "a' drop table users--",
        "x'; drop table 'users'--",
        "x' select * from users--",
        "x' select name from sysobjects--",
        "1' select 'a'--",
    ] {
        assert!(conf(s) >= 60, "{s}: {}", conf(s));
    }
}

#[test]
fn a_qualified_sleep_is_a_database_procedure_only_in_oracle_packages() {
    for s in ["Thread.sleep(5000);", "time.sleep(5)", "await asyncio.sleep(1)"] {
        assert!(conf(s) < 60, "{s}: {}", conf(s));
        assert!(hit(s, Level::Strict).is_none(), "{s}");
    }
    for s in [
        "1 and sleep(5)",
        "1 and dbms_lock.sleep(5)",
        "1' and user_lock.sleep(5)--",
        "x' or pg_catalog.pg_sleep(5)--",
        "1;select sys.dbms_lock.sleep(5) from dual--",
    ] {
        assert!(conf(s) >= 60, "{s}: {}", conf(s));
    }
}

/// One to eight of `parts`, each followed by one of `seps`, picked by `rng`.
fn joined_parts(rng: &mut XorShift64, parts: &[&str], seps: &[&str]) -> String {
    let mut v = String::new();
    for _ in 0..=rng.below(8) {
        v.push_str(parts[rng.below(parts.len())]);
        v.push_str(seps[rng.below(seps.len())]);
    }
    v
}

/// Every word literal of `keywords::classify`, read from its source (`\\n`, the one literal
/// that is not a word, as the two characters it stands for).
fn classify_literals() -> Vec<&'static str> {
    let src = include_str!("keywords.rs");
    let start = src.find("pub(crate) fn classify(").unwrap();
    let body = &src[start..];
    let body = &body[body.find("match l {").unwrap()..body.find("_ => Kw::None").unwrap()];
    let lits: Vec<&'static str> = body.split('"').skip(1).step_by(2).map(|l| if l == "\\\\n" { "\\n" } else { l }).collect();
    assert!(lits.len() > 100, "{} keywords read", lits.len());
    lits
}

#[test]
fn gate_words_cover_the_keywords() {
    // Every word `keywords::keyword` classifies must open the gate (see `GATE`).
    for lit in classify_literals().into_iter().filter(|l| *l != "\\n") {
        assert!(super::GATE_WORDS.contains(&lit), "keyword {lit:?} is missing from the gate words");
    }
}

#[test]
fn the_keyword_table_agrees_with_the_grammar() {
    use super::keywords::{classify, keyword, Kw};
    // Every literal of `classify`, in three cases, and words that are not keywords.
    for lit in classify_literals() {
        let want = classify(lit);
        assert_ne!(want, Kw::None, "{lit:?}");
        for w in [lit.to_string(), lit.to_ascii_uppercase(), format!("{}{}", &lit[..1].to_ascii_uppercase(), &lit[1..])] {
            assert_eq!(keyword(&w), want, "{w:?}");
        }
    }
    for w in ["customer", "Returning", "selected", "unions", "x", "", "a_very_long_identifier_that_is_longer_than_the_buffer_of_48_bytes", "ordered", "byte"] {
        assert_eq!(keyword(w), classify(&w.to_ascii_lowercase()), "{w:?}");
    }
}

/// The class of a word by the grammar: [`keywords::classify`] of the lowercase word.
fn keyword_by_grammar(w: &str) -> super::keywords::Kw {
    super::keywords::classify(&w.to_ascii_lowercase())
}

#[test]
fn the_keyword_hash_is_perfect() {
    use super::keywords::{keyword, keyword_words};
    let words = keyword_words();
    assert!(words.len() > 100, "{}", words.len());
    // Every keyword is found (its own slot), in any ASCII case.
    for (w, kw) in &words {
        assert_eq!(keyword(w), *kw, "{w:?}");
        assert_eq!(keyword(&w.to_ascii_uppercase()), *kw, "{w:?}");
    }
}

/// The hashed lookup agrees with the grammar on every keyword changed by one byte (each
/// position replaced, dropped, doubled; a byte added before and after), in mixed case, and on
/// bounded pseudo-random words over the bytes of keywords and their neighbours.
#[test]
fn keyword_agrees_with_the_grammar_on_near_misses() {
    use super::keywords::{keyword, keyword_words};
    let bytes: &[u8] = b"abcdefghijklmnopqrstuvwxyzAEINORSTU_\\N0159.$@?{}[]\x7f ";
    let mut n = 0;
    let mut check = |w: &[u8]| {
        if let Ok(w) = std::str::from_utf8(w) {
            n += 1;
            assert_eq!(keyword(w), keyword_by_grammar(w), "{w:?}");
        }
    };
    for (w, _) in keyword_words() {
        let w = w.as_bytes();
        for i in 0..=w.len() {
            for &c in bytes {
                let mut v = w.to_vec();
                if i < w.len() {
                    v[i] = c;
                    check(&v);
                    v[i] = w[i];
                }
                v.insert(i, c);
                check(&v);
            }
            if i < w.len() {
                let mut v = w.to_vec();
                v.remove(i);
                check(&v);
                v.insert(i, w[i]);
                v.insert(i, w[i]);
                check(&v);
                let mut v = w.to_vec();
                v[i] = v[i].to_ascii_uppercase();
                check(&v);
            }
        }
        check(format!("{}\u{e9}", std::str::from_utf8(w).unwrap()).as_bytes());
    }
    let mut rng = XorShift64::new(0x2545_f491_4f6c_dd1d);
    for _ in 0..200_000 {
        let len = rng.below(19);
        let w: Vec<u8> = (0..len).map(|_| bytes[rng.below(bytes.len())]).collect();
        check(&w);
    }
    for w in ["", "a", "\\N", "\\n", "\u{e9}\u{e9}", "union\u{e9}", "current_timestamp", "current_timestampx", "CURRENT_DATE", "current_time", "sysdate"] {
        check(w.as_bytes());
    }
    assert!(n > 250_000, "{n}");
}

#[test]
fn boolean_probes_and_dynamic_sql_anywhere() {
    for v in [
        "1)(select (case when (5451=5451) then regexp_substring(repeat(right(char(5451),0),500000000),null) else char(108) end) from information_schema.system_users)",
        "1',(case when 2872=2872 then 1 else null end)",
        "1',iif(4861=6268,1,1/0)",
        "x\" (select case when 3<4 then 1 end)",
        "'goto label select 1 label: declare @s varchar(8000);set @s = cast(0x6578 as varchar(max));exec(@s)--",
    ] {
        assert!(conf(v) >= 60, "{v:?} scored {}", conf(v));
    }
    for v in [
        "if (1 == 1) { return true; }",
        "in case when 5 people come",
        "use a CASE WHEN status = 'open' THEN 1 END column",
        "if (x = 1) then y",
        "when 5 = 5, we stop",
        "exec (sh) the script",
    ] {
        assert!(conf(v) < 60, "{v:?} scored {}", conf(v));
    }
}

#[test]
fn union_select_extraction_and_blind_reads_anywhere() {
    // Behind text that fits no context (a path, a label, an operator the parser does not
    // know): the construct alone is the injection.
    for v in [
        "id:-00000043398 union select 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15--",
        "1001 sounds like '1001' union select 1,ccnumber,3,4 from credit_cards",
        "product/show-7 union all select null,null--",
        "x union select password from users",
        "product/show-7 or 1 group by concat(concat_ws(0x3a3a,version(),user(),database(),@@version_compile_os),floor(rand(0)*2)) having min(0) or 1--",
        "234 + (1 / ASCII(substring(passwd,1,1))-4)",
        "x ord(mid(pass,2,1))>64",
    ] {
        assert!(conf(v) >= 60, "{v:?} scored {}", conf(v));
    }
    for v in [
        "Navy Federal Credit Union Select Rewards card",
        "the union selected a new chair, then left",
        "Which version() of the app and user() do I need?",
        "ascii art, substring search",
    ] {
        assert!(conf(v) < 60, "{v:?} scored {}", conf(v));
    }
}

/// [`inert`] lets prose with apostrophes, entities and typographic quotes through early, and
/// no SQL structure.
#[test]
fn inert_values_skip_the_analysis() {
    for v in [
        "Welcome to Metabase's Discussion Forum",
        "Welcome to Metabase\u{2019}s Discussion Forum",
        "Welcome to Metabase&#39;s Discussion Forum",
        "Welcome to Metabase&rsquo;s Discussion Forum",
        "Deploy to Heroku isn't working",
        "\u{201c}We couldn\u{2019}t understand your question.\u{201d}",
        "l\u{2019}\u{e9}t\u{e9} d'Ana, 3 p.m.; ok?",
        "O'Reilly",
        "issue #42 closed",
        "2024-05-14T09:31:27Z",
        "https://example.com/a/{size}.png",
        "[solved: Mongo 3.0 required]",
        // keywords that cannot start a structure here
        "Welcome to Metabase's forum, as well",
        "\u{201c}We couldn\u{2019}t understand your question.\u{201d} when I query mongoDB",
        "Pulses posted to Slack don\u{2019}t show question output",
        "Pulses posted to Slack don't show question output",
        "It's not working on Heroku, and the logs show nothing",
        "Don't drop the ball; create a new one",
        "Set site url from admin panel's menu",
        "Can't update the dashboard, it's the default",
        "x' or y",
        "x' or @a",
        "x' or - y",
        "x' or",
        "Pulses posted to Slack don&rsquo;t show question output",
        "x'; it's to show; a use",
        "Welcome to Metabase's discussion forum. This is a place to get help on installation, setting up as well as sharing tips and tricks.",
        "What is the expected return order of columns for graphing results when using raw SQL? It's slow",
        "it's a in b",
        "it's x in y, is z and w",
        // parentheses without keywords, after no known function; a `#` comment to the end
        "Internationalization (i18n)",
        "Foo (bar) baz, (1, 2)",
        "x')",
        "(a) b (c (d))",
        "Welcome to Metabase&#39;s discussion forum. This is a place to get help on installation, setting up as well as sharing tips and tricks.",
        "issue #42 or later",
        // a comparison word after NOT, also under a condition
        "Query working on \u{201c}Questions\u{201d} but not in \u{201c}Pulses\u{201d}",
        "Query working on \"Questions\" but not in \"Pulses\"",
        "Query working on &ldquo;Questions&rdquo; but not in &ldquo;Pulses&rdquo;",
        "it was on x and not like y",
        "not in 1",
    ] {
        assert!(inert(v), "{v}");
        assert_eq!(conf(v), 0, "{v}");
    }
}

/// Anything that can record a structure goes to the full analysis.
#[test]
fn values_with_sql_features_are_not_inert() {
    for v in [
        // keywords, also glued to a number or behind a hex literal
        "Welcome to Metabase's forum, or 1",
        "it's in",
        "it's in 1",
        "it's in 'x'",
        "it's in null",
        "it's in n'x'",
        "it's in \u{2019}x",
        "it's x in x",
        "it's X in x.y",
        "it's 0xabx in x",
        "it's on a in b",
        "it's a or b is c",
        "it's a is not b",
        "it's a like in",
        "it's on x as not in y",
        "it's on x AS  not in y",
        "it's on x1not in y",
        "it's on x.not in y",
        "it's on x @not in y",
        "it's on x cannot in y",
        "it's on x\u{a0}not in y",
        "it's on x not\u{a0}in y",
        "it's on x not 1 in y",
        "it's a in\u{a0}b",
        "it's a in",
        "it's a#b in c",
        "it's 1 or 'x'",
        "it's or null",
        "it's or n'x'",
        "it's or 1",
        "it's or .5",
        "it\u{2019}s or \u{201c}x",
        "a' drop table x",
        "a' CREATE   User",
        "a' alter \u{a0}table",
        "merge into x'",
        "delete from x'",
        "update x set y'",
        "order by x'",
        "x'; show tables",
        "x';show tables",
        "x'; \u{a0}show tables",
        "x&rsquo; show tables; \n use x",
        "x' union all",
        "x' where",
        "x' having",
        "1' procedure analyse",
        "x' into outfile 'f",
        "x' exec xp_x",
        "x' declare @a",
        "x' waitfor delay '0:0:5",
        "x' shutdown",
        "x' select",
        "x on y #",
        "x' 1or 2",
        "1union select 1",
        "0xabunion",
        "0x1fselect",
        "x' or 'a",
        "it's in",
        // operators, calls, comments, variables
        "a'=1",
        "a' || 'b",
        "a' && 'b",
        "sleep(5)",
        "Sleep (5)",
        "x (sleep(5))",
        "version() version()",
        "count(x) y",
        "x', concat(y)",
        "ascii(substring(a,1,1))",
        "a; (b)",
        "a;foo(b)",
        "a; foo (b)",
        "a;\u{a0}(b)",
        "1x(2)",
        "a1 (2)",
        "a.sleep(1)",
        "a\u{e9}(1)",
        "x (y) or 1",
        "x or (y)",
        "(x) #",
        "x #\n or 1",
        "x [#] or 1",
        "x # it\u{2019}s or 1",
        "x # it's or 1",
        "x # %27 or 1",
        "admin'--",
        "admin'#",
        "admin\u{2019}#",
        "a'/*",
        "1,@@version",
        "\\N",
        "$$x$$",
        "a%27",
        "a`b`",
        "a|b",
        "a<b",
        "!x",
        "a*b",
    ] {
        assert!(!inert(v), "{v}");
    }
    // `#` without a quote is a comment that cannot follow a breakout.
    assert!(inert("Metabase&#39;s"));
}

/// The shortcut agrees with the full analysis on every value built from SQL fragments (a
/// bounded pseudo-random sample of sequences): whenever it says inert, nothing is found.
#[test]
fn inert_agrees_with_the_full_analysis() {
    let parts = [
        "1", "x", "it", "union", "select", "sleep", "case", "when", "'", "\"", " ", "#", "-", "@", "@@", "(", ")", "=", "or", "&", ";", "0xab", "\u{2019}",
        "/", "*", ",", "%27", "\\N", "\n", "e5", "from", "s", "?", "{", "[", "]", ":", "+", ".", "shutdown", "where", "in",
    ];
    let mut rng = XorShift64::new(0x2545_f491_4f6c_dd1d);
    let (mut inert_n, mut found_n) = (0, 0);
    for _ in 0..40_000 {
        let v = rng.joined(&parts, 7);
        let mut steps = 0;
        let full = analyze_all(&v, &mut steps);
        if inert(&v) {
            inert_n += 1;
            assert_eq!(full, None, "{v:?}");
        }
        found_n += usize::from(full.is_some());
    }
    // The sample exercises both sides.
    assert!(inert_n > 1000 && found_n > 1000, "{inert_n} {found_n}");
}

/// The same on values made of every keyword class [`keyword_is_inert`] lets through, their
/// partners and the tokens around them (literals of every kind after them, object words,
/// `;`, `#` and line breaks, typographic quotes, blanks), in sequences of up to eight parts.
#[test]
fn inert_keywords_agree_with_the_full_analysis() {
    let mut parts: Vec<&str> = vec![
        "1", "x", "it", "'", "\"", " ", "  ", "\t", "\n", "#", "-", "+", "@a", ";", ".", ".5", ",", "0xab", "n'", "e'x'", "\u{2019}", "\u{201c}", "\u{a0}",
        "\u{e9}", "[a]", "?", ":", "&", "s", "x.y", "a1", "1e5", "2",
    ];
    // Every keyword, and the words the automaton reads after some of them.
    parts.extend(GATE_WORDS.iter().copied());
    parts.extend(["analyse", "share", "data", "xml", "temporary", "login", "Table", "USER"]);
    parts.extend(["=", "(", ")", "--", "1=1", "'1'='1"]);
    let seps = [" ", " ", " ", " ", "", "  ", "\n", "\u{a0}"];
    // `SQLI_INERT_N`, `SQLI_INERT_SEED`: a longer run, another sample.
    let seed = std::env::var("SQLI_INERT_SEED").ok().and_then(|n| n.parse().ok()).unwrap_or(0x9e37_79b9_7f4a_7c15);
    let mut rng = XorShift64::new(seed);
    let (mut inert_n, mut found_n, mut keyword_n) = (0, 0, 0);
    let n: usize = std::env::var("SQLI_INERT_N").ok().and_then(|n| n.parse().ok()).unwrap_or(300_000);
    for _ in 0..n {
        let v = joined_parts(&mut rng, &parts, &seps);
        let mut steps = 0;
        let full = analyze_all(&v, &mut steps);
        if inert(&v) {
            inert_n += 1;
            keyword_n += usize::from(!inert_with(&v, false));
            assert_eq!(full, None, "{v:?}");
        }
        found_n += usize::from(full.is_some());
    }
    // Both sides, and many values that are inert only through a keyword class.
    assert!(inert_n > 20_000 && found_n > 10_000 && keyword_n > 10_000, "{inert_n} {found_n} {keyword_n}");
}

/// Whenever the strict form (no keyword at all, the form before keyword classes) says inert,
/// the form with keywords does too.
#[test]
fn inert_with_keywords_extends_the_strict_form() {
    generated_values(60_000, |v| {
        if inert_with(v, false) {
            assert!(inert(v), "{v:?}");
        }
    });
}

/// A generated slug: one to six `words` joined by `seps`, sometimes with a separator before or
/// after (the property tests of `slug_inert`).
fn slug(rng: &mut XorShift64, words: &[&str], seps: &[&str]) -> String {
    let len = 1 + (rng.next_u64() % 6) as usize;
    let mut v = String::new();
    if rng.next_u64() % 8 == 0 {
        v.push_str(seps[rng.below(seps.len())]);
    }
    for k in 0..len {
        if k > 0 {
            v.push_str(seps[rng.below(seps.len())]);
        }
        v.push_str(words[rng.below(words.len())]);
    }
    if rng.next_u64() % 8 == 0 {
        v.push_str(seps[rng.below(seps.len())]);
    }
    v
}

#[test]
fn slug_shortcut_agrees_with_the_full_analysis() {
    // Every keyword (gate word), numbers, hex and exponent literals, identifiers; joined by the
    // bytes of a slug (and none), with leading and doubled hyphens.
    let mut words: Vec<&str> = GATE_WORDS.to_vec();
    words.extend(["1", "x", "we", "a1", "9", "0x1f", "0b1", "h2", "_", "e5", "1e5", "x1", "0xabunion", "1union", "db", "0"]);
    let seps = ["-", "-", "-", "_", "", "--", "-_", "_-"];
    let mut rng = XorShift64::new(0x2545_f491_4f6c_dd1d);
    let (mut slugs, mut found) = (0, 0);
    for _ in 0..300_000 {
        let v = slug(&mut rng, &words, &seps);
        let mut steps = 0;
        let full = analyze_all(&v, &mut steps);
        found += usize::from(full.is_some());
        if slug_inert(&v) {
            slugs += 1;
            assert_eq!(full, None, "{v:?}");
        }
        // A slug that opens with a keyword goes through `inert` before the full analysis.
        assert_eq!(analyze(&v, &mut 0), full, "{v:?}");
    }
    // The sample exercises both sides.
    assert!(slugs > 20_000 && found > 2_000, "{slugs} {found}");
    for v in [
        "we-couldnt-understand-your-question-when-i-query-mongodb",
        "should-we-build-kafka-connecter-or-kafka-plugin",
        "migrating-from-internal-h2-to-postgres",
    ] {
        assert!(slug_inert(v), "{v}");
    }
    for v in ["where-x", "or-1", "x--", "-where-1", "1union-select", "select-1"] {
        assert!(!slug_inert(v), "{v}");
    }
}

/// What [`analyze_view`] means, without its pre-filters: the best finding of [`run`] and
/// [`scan_calls`] in every context (unquoted, and after each breakout of each quote in both
/// dialects). The pre-filters ([`may_call`], [`may_call_word`], no quote no breakout) must not
/// change the answer.
fn analyze_view_in_every_context(s: &str) -> Option<Finding> {
    let steps = &mut 0;
    if s.bytes().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.' | b'@' | b':' | b'/' | b',')) && !s.contains('-') && !s.contains('/') {
        return None;
    }
    let mut best: Option<Finding> = None;
    let mut consider = |f: Option<Finding>| {
        if let Some(f) = f {
            if best.as_ref().is_none_or(|b| f.confidence > b.confidence) {
                best = Some(f);
            }
        }
    };
    consider(run(s, 0, 0, steps));
    consider(scan_calls(s, steps));
    for q in [b'\'', b'"'] {
        let mysql = breakout(s.as_bytes(), q, steps);
        if let Some(at) = mysql {
            consider(run(s, q, at, steps));
            consider(scan_calls(&s[at..], steps));
        }
        if let Some(at) = breakout_standard(s.as_bytes(), q, steps).filter(|&at| Some(at) != mysql) {
            consider(run(s, q, at, steps));
            consider(scan_calls(&s[at..], steps));
        }
    }
    best
}

/// Values built from SQL fragments, quotes, backslashes and the words [`may_call`] looks for
/// (a bounded pseudo-random sample).
fn generated_values(n: usize, mut f: impl FnMut(&str)) {
    let parts = [
        "1",
        "x",
        "union",
        "UNION",
        "select",
        "sleep",
        "case",
        "waitfor",
        "delay",
        "when",
        "'",
        "\"",
        "\\",
        "\\'",
        "''",
        " ",
        "#",
        "--",
        "@@version",
        "(",
        ")",
        "=",
        "or",
        "and",
        ";",
        "0x1f",
        "\u{2019}",
        "/*",
        "*/",
        ",",
        "%27",
        "u",
        "a",
        "from",
        "1=1",
        "if",
        "version()",
        "concat",
        "exec",
        "@s",
        "'0:0:5'",
    ];
    let mut rng = XorShift64::new(0x9e37_79b9_7f4a_7c15);
    for _ in 0..n {
        let v = rng.joined(&parts, 9);
        f(&v);
    }
}

/// What [`may_call`] looks for, one search at a time: a `(`, or `waitfor`, `case` or a `UNION`
/// ([`has_union_at`]) in any case.
fn may_call_spec(b: &[u8]) -> bool {
    let word_at = |i: usize, w: &[u8]| b[i..].get(..w.len()).is_some_and(|x| x.eq_ignore_ascii_case(w));
    memchr::memchr(b'(', b).is_some()
        || memchr::memchr2_iter(b'w', b'W', b).any(|i| word_at(i, b"waitfor"))
        || memchr::memchr2_iter(b'c', b'C', b).any(|i| word_at(i, b"case"))
        || memchr::memchr2_iter(b'u', b'U', b).any(|i| has_union_at(b, i))
}

/// On generated values, on every byte value at every position of a short text, and on the
/// words around every chunk boundary.
#[test]
fn may_call_finds_what_its_searches_find() {
    let mut yes = 0;
    generated_values(60_000, |v| {
        let want = may_call_spec(v.as_bytes());
        yes += usize::from(want);
        assert_eq!(may_call(v.as_bytes()), want, "{v:?}");
    });
    assert!(yes > 20_000, "{yes}");
    for c in 0..=255u8 {
        // Every length around the chunks (the last one read as the eight bytes that end the value).
        for n in 1..=17 {
            for at in 0..n {
                let mut v = vec![b'x'; n];
                v[at] = c;
                assert_eq!(may_call(&v), may_call_spec(&v), "{c} at {at} of {n}");
            }
        }
    }
    let words = ["waitfor", "WaitFor", "waitfo", "case", "CASE", "cas", "union", "UNION", "unio", "unions", "xunion", "(", "showcase", "aunion"];
    for w in words {
        for pad in 0..18 {
            for sep in ["", " ", "a", "1", "\u{e9}"] {
                let v = format!("{}{sep}{w}{sep}", "y".repeat(pad));
                assert_eq!(may_call(v.as_bytes()), may_call_spec(v.as_bytes()), "{v:?}");
            }
        }
    }
}

#[test]
fn may_call_of_a_tail_implies_may_call_of_the_value() {
    let mut tails = 0;
    generated_values(60_000, |v| {
        let b = v.as_bytes();
        for (i, &c) in b.iter().enumerate() {
            if matches!(c, b'\'' | b'"') && may_call(&b[i + 1..]) {
                tails += 1;
                assert!(may_call(b), "{v:?} at {i}");
            }
        }
    });
    assert!(tails > 10_000, "{tails}");
}

#[test]
fn analyze_view_is_the_best_of_every_context() {
    let mut found = 0;
    generated_values(60_000, |v| {
        let want = analyze_view_in_every_context(v);
        found += usize::from(want.is_some());
        assert_eq!(analyze_view(v, &mut 0), want, "{v:?}");
    });
    assert!(found > 5_000, "{found}");
}

/// The byte search for typographic quotes agrees with a search of the characters, on every
/// character around them (all of U+0000..U+3000 once, each between ASCII letters).
#[test]
fn typographic_quotes_are_found_by_their_bytes() {
    let is_q = |c: char| matches!(c, '\u{2018}' | '\u{2019}' | '\u{201b}' | '\u{2032}' | '\u{02bc}' | '\u{201c}' | '\u{201d}' | '\u{2033}');
    let mut quotes = 0;
    for c in (0..0x3000u32).filter_map(char::from_u32) {
        let v = format!("a{c}b");
        quotes += usize::from(is_q(c));
        assert_eq!(has_typographic_quote(v.as_bytes()), is_q(c), "{c:?}");
        assert_eq!(fold_quotes(&v).is_some(), is_q(c), "{c:?}");
    }
    assert_eq!(quotes, 8);
    assert_eq!(fold_quotes("l\u{2019}\u{e9}t\u{e9} \u{201c}x\u{201d}").as_deref(), Some("l'\u{e9}t\u{e9} \"x\""));
}

/// What [`fold_quotes`] does, character by character: nothing without a typographic or
/// fullwidth quote; else typographic single quotes and primes become `'`, double ones `"`, and
/// when a fullwidth quote occurs, every fullwidth form its ASCII character and the ideographic
/// space a space.
fn fold_quotes_spec(s: &str) -> Option<String> {
    let wide = has_fullwidth_quote(s.as_bytes());
    if !wide && !has_typographic_quote(s.as_bytes()) {
        return None;
    }
    Some(
        s.chars()
            .map(|c| match c {
                '\u{2018}' | '\u{2019}' | '\u{201b}' | '\u{2032}' | '\u{02bc}' => '\'',
                '\u{201c}' | '\u{201d}' | '\u{2033}' => '"',
                '\u{ff01}'..='\u{ff5e}' if wide => char::from_u32(c as u32 - 0xfee0).unwrap_or(c),
                '\u{3000}' if wide => ' ',
                c => c,
            })
            .collect(),
    )
}

#[test]
fn fold_quotes_folds_character_by_character() {
    let parts = [
        "a",
        " ",
        "\u{2018}",
        "\u{2019}",
        "\u{201b}",
        "\u{2032}",
        "\u{02bc}",
        "\u{201c}",
        "\u{201d}",
        "\u{2033}",
        "\u{2010}",
        "\u{2020}",
        "\u{2039}",
        "\u{0280}",
        "\u{02bd}",
        "\u{ff07}",
        "\u{ff02}",
        "\u{ff2f}",
        "\u{3000}",
        "\u{e9}",
        "'",
        "\"",
        "\u{1f600}",
    ];
    let mut rng = XorShift64::new(0x2545_f491_4f6c_dd1d);
    let mut folded = 0;
    for _ in 0..50_000 {
        let v = rng.joined(&parts, 8);
        let want = fold_quotes_spec(&v);
        folded += usize::from(want.is_some());
        assert_eq!(fold_quotes(&v), want, "{v:?}");
    }
    assert!(folded > 20_000, "{folded}");
    for c in (0..0x3100u32).filter_map(char::from_u32) {
        let v = format!("a{c}\u{2019}b{c}");
        assert_eq!(fold_quotes(&v), fold_quotes_spec(&v), "{c:?}");
    }
}

/// What [`slug_inert`] decides, part by part: a non-empty value of letters, digits, `_` and
/// single `-`, whose first part is inert and whose other parts are inert or not mixed letters
/// and digits.
fn slug_inert_spec(s: &str) -> bool {
    let b = s.as_bytes();
    if b.is_empty() || !b.iter().all(|&c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-') || memchr::memmem::find(b, b"--").is_some() {
        return false;
    }
    let mut parts = s.split('-');
    let first = parts.next().unwrap_or("");
    let one_token = |p: &str| !(p.bytes().any(|c| c.is_ascii_digit()) && p.bytes().any(|c| c.is_ascii_alphabetic())) || inert_with(p, false);
    !first.is_empty() && inert_with(first, false) && parts.all(one_token)
}

#[test]
fn slug_inert_decides_part_by_part() {
    let mut words: Vec<&str> = GATE_WORDS.to_vec();
    words.extend(["1", "x", "we", "a1", "9", "0x1f", "0b1", "h2", "_", "e5", "1e5", "x1", "0xabunion", "1union", "db", "0", "", "'", " ", ".", "\u{e9}"]);
    let seps = ["-", "-", "-", "_", "", "--", "-_", "_-"];
    let mut rng = XorShift64::new(0x9e37_79b9_7f4a_7c15);
    let (mut yes, mut no) = (0, 0);
    for _ in 0..200_000 {
        let v = slug(&mut rng, &words, &seps);
        let want = slug_inert_spec(&v);
        if want {
            yes += 1;
        } else {
            no += 1;
        }
        assert_eq!(slug_inert(&v), want, "{v:?}");
    }
    assert!(yes > 20_000 && no > 20_000, "{yes} {no}");
    for v in ["", "-", "a", "a-", "-a", "a--b", "a-1x", "1union-x", "x-0x1fmatch-1", "we-couldnt-understand"] {
        assert_eq!(slug_inert(v), slug_inert_spec(v), "{v:?}");
    }
}

#[test]
fn fullwidth_quotes_and_operators_are_folded_when_a_fullwidth_quote_is_present() {
    // Typed in fullwidth forms: a best-fit conversion (or NFKC) hands the database ASCII.
    for v in [
        "\u{ff07} or 1=1--",
        "\u{ff07}\u{3000}\u{ff2f}\u{ff32}\u{3000}\u{ff11}\u{ff1d}\u{ff11}\u{ff0d}\u{ff0d}",
        "admin\u{ff07} union select password from users--",
        "1\u{ff02} or \u{ff02}a\u{ff02}=\u{ff02}a",
    ] {
        assert!(conf(v) >= 60, "{v:?} scored {}", conf(v));
        let mut steps = 0;
        assert!(analyze(v, &mut steps).is_some(), "{v:?}");
    }
    // CJK prose with fullwidth quotes, brackets, digits and letters holds no SQL.
    for v in [
        "\u{4ed6}\u{8bf4}\u{ff1a}\u{ff02}\u{4f60}\u{597d}\u{ff02}",
        "\u{ff07}\u{ff19}\u{ff10}\u{5e74}\u{4ee3}\u{306e}\u{97f3}\u{697d}",
        "\u{ff08}\u{6ce8}\u{ff09}\u{ff21}\u{ff22}\u{ff23}\u{682a}\u{5f0f}\u{4f1a}\u{793e}",
        "\u{ff02}\u{ff33}\u{ff2f}\u{ff2e}\u{ff39}\u{ff02}\u{306e}\u{65b0}\u{88fd}\u{54c1}",
    ] {
        assert_eq!(conf(v), 0, "{v:?}");
    }
    // Without a fullwidth quote, fullwidth forms stay as they are (no breakout to fold).
    assert_eq!(fold_quotes("\u{ff2f}\u{ff32} \u{ff11}\u{ff1d}\u{ff11}"), None);
    assert_eq!(fold_quotes("\u{ff07}\u{3000}\u{ff2f}\u{ff32}").as_deref(), Some("' OR"));
    assert!(!inert("\u{ff07}\u{3000}\u{ff2f}\u{ff32}\u{3000}\u{ff11}\u{ff1d}\u{ff11}"));
}

/// Every value of the development corpus (`../shared`, when present), of the benign sets and of
/// the handwritten attacks, as it comes and decoded (the candidates the engine shows sqli):
/// the shortcuts of [`analyze`] give the full analysis's answer, and [`may_call`],
/// [`fold_quotes`] and [`keywords::keyword`] (on every word) their references'.
#[test]
fn corpus_values_agree_with_the_specs() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<_> = ["data/benign", "data/attacks"].iter().flat_map(|d| std::fs::read_dir(root.join(d)).unwrap().map(|e| e.unwrap().path())).collect();
    let corpus = root.join("../../../shared/data/attack-corpus/corpus.jsonl");
    if corpus.exists() {
        files.push(corpus);
    } else {
        println!("skipping the development corpus ({} not found); our sets only", corpus.display());
    }
    let mut values: Vec<String> = Vec::new();
    for f in files.iter().filter(|p| p.extension().is_some_and(|e| e == "jsonl")) {
        values.extend(crate::eval::parse_corpus(&std::fs::read_to_string(f).unwrap()).unwrap().into_iter().map(|s| s.value));
    }
    // The string leaves and keys of the benchmark bodies.
    for f in ["large.json", "small.json"] {
        let p = root.join("../../../shared/bench").join(f);
        let Ok(text) = std::fs::read_to_string(&p) else { continue };
        fn walk(v: &serde_json::Value, out: &mut Vec<String>) {
            match v {
                serde_json::Value::String(s) => out.push(s.clone()),
                serde_json::Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
                serde_json::Value::Object(o) => o.iter().for_each(|(k, x)| {
                    out.push(k.clone());
                    walk(x, out)
                }),
                _ => {}
            }
        }
        walk(&serde_json::from_str(&text).unwrap(), &mut values);
    }
    let mut dec = crate::decode::Decoder::default();
    let (mut n, mut inert_n) = (0, 0);
    for v in &values {
        let texts: Vec<String> = dec.decode(v).iter().map(|c| c.text.to_string()).collect();
        for t in &texts {
            n += 1;
            let full = analyze_all(t, &mut 0);
            assert_eq!(analyze(t, &mut 0), full, "{t:?}");
            assert_eq!(full, analyze_every_view(t), "{t:?}");
            check_may_call_word(t);
            if inert(t) {
                inert_n += 1;
                assert_eq!(full, None, "{t:?}");
            }
            assert_eq!(may_call(t.as_bytes()), may_call_spec(t.as_bytes()), "{t:?}");
            assert_eq!(fold_quotes(t), fold_quotes_spec(t), "{t:?}");
            for w in t.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '\\')) {
                assert_eq!(super::keywords::keyword(w), keyword_by_grammar(w), "{w:?}");
            }
        }
    }
    println!("{n} texts, {inert_n} inert");
    assert!(n > 1000 && inert_n > 100, "{n} {inert_n}");
}

/// Parts of prose and of SQL for [`prose_values`]: prose words, keywords, the words
/// [`may_call_word`] looks for before a `(`, quotes (ASCII, typographic, fullwidth), HTML
/// entities, comments, operators, numbers, blanks (ASCII and Unicode).
const PROSE_PARTS: &[&str] = &[
    "Query",
    "working",
    "on",
    "the",
    "questions",
    "but",
    "not",
    "in",
    "Pulses",
    "We",
    "couldn",
    "t",
    "understand",
    "your",
    "question",
    "when",
    "I",
    "query",
    "mongoDB",
    "Can",
    "use",
    "DATEPART",
    "SQL",
    "queries",
    "External",
    "level",
    "linkages",
    "data",
    "schema",
    "i18n",
    "Set",
    "site",
    "url",
    "from",
    "admin",
    "panel",
    "and",
    "or",
    "select",
    "union",
    "all",
    "order",
    "by",
    "group",
    "drop",
    "table",
    "insert",
    "into",
    "update",
    "set",
    "delete",
    "exec",
    "execute",
    "waitfor",
    "delay",
    "case",
    "if",
    "iif",
    "ascii",
    "ord",
    "unicode",
    "substring",
    "mid",
    "sleep",
    "benchmark",
    "version",
    "user",
    "database",
    "concat",
    "count",
    "like",
    "is",
    "null",
    "true",
    "as",
    "where",
    "having",
    "limit",
    "dbo.sleep",
    "pg_sleep",
    "xp_cmdshell",
    "load_file",
    "char",
    "x",
    "a",
    "N",
    " ",
    " ",
    " ",
    "  ",
    "\n",
    "\t",
    "\u{a0}",
    "\u{3000}",
    "'",
    "\"",
    "`",
    "\u{2019}",
    "\u{2018}",
    "\u{201c}",
    "\u{201d}",
    "\u{ff07}",
    "\u{2032}",
    "&ldquo;",
    "&rdquo;",
    "&rsquo;",
    "&#39;",
    "&quot;",
    "&amp;",
    "&",
    ";",
    "(",
    ")",
    "()",
    "(5)",
    "(1)",
    ",",
    ".",
    "?",
    "!",
    ":",
    "=",
    "<",
    ">",
    "<>",
    "!=",
    "+",
    "-",
    "*",
    "/",
    "%",
    "%27",
    "%28",
    "\\",
    "\\N",
    "$",
    "@",
    "@@version",
    "@s",
    "#",
    "--",
    "/*",
    "*/",
    "0",
    "1",
    "5",
    "42",
    "3.0",
    "0x1f",
    "1e5",
    "2016-01-01",
    "'0:0:5'",
    "\u{e9}t\u{e9}",
    "H2",
    "[",
    "]",
    "{",
    "}",
    "|",
    "||",
    "^",
    "~",
];

/// Prose-like phrases made of [`PROSE_PARTS`], mostly separated by blanks (a bounded
/// pseudo-random sample).
fn prose_values(n: usize, seed: u64, mut f: impl FnMut(&str)) {
    let mut rng = XorShift64::new(seed);
    let mut v = String::new();
    for _ in 0..n {
        v.clear();
        let parts = 1 + rng.below(10);
        for _ in 0..parts {
            v.push_str(PROSE_PARTS[rng.below(PROSE_PARTS.len())]);
            if rng.below(3) != 0 {
                v.push(' ');
            }
        }
        f(&v);
    }
}

/// What [`analyze`] means, without its shortcuts: [`analyze_view_in_every_context`] of the
/// value, of its typographic quotes folded ([`fold_quotes_spec`]) and of that percent-decoded,
/// the best of them.
fn analyze_every_view(s: &str) -> Option<Finding> {
    let mut best = analyze_view_in_every_context(s);
    let consider = |f: Option<Finding>, best: &mut Option<Finding>| {
        if f.as_ref().map_or(0, |f| f.confidence) > best.as_ref().map_or(0, |b| b.confidence) {
            *best = f;
        }
    };
    let folded = fold_quotes_spec(s);
    if let Some(f) = &folded {
        consider(analyze_view_in_every_context(f), &mut best);
    }
    let view = folded.as_deref().unwrap_or(s);
    if let Some(d) = percent_decode(view) {
        consider(analyze_view_in_every_context(&d), &mut best);
    }
    best
}

/// [`may_call_word`] says false only where [`scan_calls`] finds nothing, in the value and in
/// every tail after a quote.
fn check_may_call_word(v: &str) -> bool {
    let b = v.as_bytes();
    if !may_call(b) || may_call_word(b) {
        return false;
    }
    assert_eq!(scan_calls(v, &mut 0), None, "{v:?}");
    for (i, &c) in b.iter().enumerate() {
        if matches!(c, b'\'' | b'"') {
            assert_eq!(scan_calls(&v[i + 1..], &mut 0), None, "{v:?} at {i}");
            assert!(!may_call_word(&b[i + 1..]) || !may_call(&b[i + 1..]), "{v:?} at {i}");
        }
    }
    true
}

#[test]
fn may_call_word_agrees_with_scan_calls() {
    let (mut skipped, mut found) = (0, 0);
    generated_values(100_000, |v| {
        skipped += usize::from(check_may_call_word(v));
        found += usize::from(may_call(v.as_bytes()) && scan_calls(v, &mut 0).is_some());
    });
    prose_values(300_000, 0x51ed_270b_d3a4_9f1c, |v| {
        skipped += usize::from(check_may_call_word(v));
        found += usize::from(may_call(v.as_bytes()) && scan_calls(v, &mut 0).is_some());
    });
    // Calls of every kind, with blanks and words around them.
    let words =
        ["sleep", "SLEEP", "benchmark", "version", "user", "exec", "ascii", "ord", "unicode", "if", "IIF", "xsleep", "sleepx", "datepart", "i18n", "dbo.sleep"];
    let args = ["", "5", "@s", "substring(a,1,1)", "'x'", ")", "1=1,1,0", "(1)"];
    for w in words {
        for pre in ["", " ", "1", "a", "\\", "\u{a0}", "\u{e9}", "'", "x.", "$", "@", "0x"] {
            for sep in ["", " ", "\n", "\u{a0}", "/**/", "--\n", "#\n"] {
                for a in args {
                    let v = format!("{pre}{w}{sep}({a}) and {w}({a})");
                    skipped += usize::from(check_may_call_word(&v));
                    found += usize::from(may_call(v.as_bytes()) && scan_calls(&v, &mut 0).is_some());
                }
            }
        }
    }
    assert!(skipped > 20_000 && found > 2_000, "{skipped} {found}");
}

#[test]
fn call_word_of_a_tail_implies_call_word_of_the_value() {
    let mut tails = 0;
    let mut check = |v: &str| {
        let b = v.as_bytes();
        for (i, &c) in b.iter().enumerate() {
            if matches!(c, b'\'' | b'"') && may_call(&b[i + 1..]) && may_call_word(&b[i + 1..]) {
                tails += 1;
                assert!(may_call(b) && may_call_word(b), "{v:?} at {i}");
            }
        }
    };
    generated_values(60_000, &mut check);
    prose_values(100_000, 0x2f6b_1c0d_9a8e_7355, &mut check);
    assert!(tails > 10_000, "{tails}");
}

/// [`analyze`] (every shortcut) gives [`analyze_every_view`]'s answer on prose-like phrases
/// and on generated SQL fragments.
#[test]
fn analyze_is_the_best_of_every_view_on_prose() {
    let (mut n, mut found) = (0, 0);
    let mut check = |v: &str| {
        let want = analyze_every_view(v);
        found += usize::from(want.is_some());
        n += 1;
        assert_eq!(analyze(v, &mut 0), want, "{v:?}");
    };
    prose_values(400_000, 0x8c3d_51a7_e4b2_0f69, &mut check);
    generated_values(100_000, &mut check);
    assert!(n == 500_000 && found > 20_000, "{n} {found}");
}

/// [`CALL_WORD_LIST`] holds exactly the words without a `.` that [`keywords::function`]
/// classifies as time, out-of-band or information functions (every literal of its source,
/// and a qualified literal's last part), the words [`keywords::keyword`] classifies as EXEC,
/// and the five names [`scan_calls`] compares.
#[test]
fn call_words_are_the_call_finding_words() {
    let src = include_str!("keywords.rs");
    let start = src.find("pub(crate) fn function(").unwrap();
    let body = &src[start..];
    let body = &body[..body.find("\n}\n").unwrap()];
    let mut want: std::collections::BTreeSet<String> = std::collections::BTreeSet::new();
    let mut lits = 0;
    for lit in body.split('"').skip(1).step_by(2) {
        lits += 1;
        for w in [lit, lit.rsplit('.').next().unwrap()] {
            if !w.contains('.') && matches!(keywords::function(w), Func::Time | Func::Oob | Func::Info) {
                want.insert(w.to_string());
            }
        }
    }
    assert!(lits > 150, "{lits}");
    for lit in classify_literals() {
        if keywords::keyword(lit) == Kw::Stmt(Stmt::Exec) {
            want.insert(lit.to_ascii_lowercase());
        }
    }
    for w in ["ascii", "ord", "unicode", "if", "iif"] {
        want.insert(w.to_string());
    }
    let have: std::collections::BTreeSet<String> = CALL_WORD_LIST.iter().map(|w| w.to_string()).collect();
    assert_eq!(have, want);
    assert!(CALL_WORD_LIST.iter().all(|w| w.len() < 32 && w.bytes().all(|c| c.is_ascii_lowercase() || c == b'_')));
    for w in CALL_WORD_LIST {
        assert!(CALL_WORDS.contains_ignore_case(w.to_ascii_uppercase().as_bytes()), "{w}");
    }
}

/// [`inert_with`] is sound and says something: on generated values made of SQL fragments,
/// prose and keywords, and on every corpus value, a value it calls inert is one in which the
/// full analysis finds nothing ([`check_inert`]), and both answers occur often.
#[test]
fn inert_values_are_those_the_analysis_finds_nothing_in() {
    let parts = [
        "1", "x", "it", "union", "select", "case", "'", "\"", " ", "#", "-", "@", "&", ";", "0xab", "\u{2019}", "/", ",", "%27", "\n", "e5", "from", "s", "?",
        "in", "insert", "into", "delete", "update", "set", "order", "by", "group", "on", "or", "and", "is", "like", "drop", "table", "null", "limit", "as",
        "Welcome", "to", "Metabase", "&#39;", "&rsquo;", "\u{201c}", "x1", "1x", "b1",
    ];
    let mut rng = XorShift64::new(0x0dd_ba11_cafe_f00d);
    let (mut yes, mut no) = (0, 0);
    for _ in 0..60_000 {
        let v = rng.joined(&parts, 8);
        for k in [true, false] {
            let inert = check_inert(&v, k);
            yes += usize::from(inert);
            no += usize::from(!inert);
        }
    }
    assert!(yes > 5_000 && no > 5_000, "{yes} {no}");
    // Comparison keywords after names, numbers and hex literals that spell them or not (the
    // word set, filled at the first comparison).
    let parts = [
        "x", "y", "1", "0x", "0b", "ab", "in", "is", "like", "not", "1in", "0xbis", "9x", "xy", " ", ".", "on", "or", "b", "'", "-", "rlike", "\u{ff07}",
        "\u{ff02}", "\u{e9}", "\u{2019}",
    ];
    let mut rng = XorShift64::new(0x1a2_7e5e_7f11_1ed0);
    let (mut yes, mut no) = (0, 0);
    for _ in 0..60_000 {
        let v = rng.joined(&parts, 10);
        let inert = check_inert(&v, true);
        yes += usize::from(inert);
        no += usize::from(!inert);
    }
    assert!(yes > 5_000 && no > 5_000, "{yes} {no}");
    let values = crate::other_util::test_values();
    assert!(values.len() > 1000);
    for v in &values {
        for k in [true, false] {
            check_inert(v, k);
        }
    }
}

/// Panics unless [`inert_with`]`(v, k)` is sound: an inert value is one in which the full
/// analysis finds nothing, and one inert without keywords (`k` false, the stricter question) is
/// inert with them. Returns the answer.
fn check_inert(v: &str, k: bool) -> bool {
    let inert = inert_with(v, k);
    if inert {
        assert_eq!(analyze_all(v, &mut 0), None, "{v:?} is inert ({k})");
        assert!(k || inert_with(v, true), "{v:?} is inert without keywords but not with them");
    }
    inert
}

/// The NOT rule of [`keyword_is_inert`] ([`after_operator_or_not`]) against the full analysis, on values
/// made of NOT, the comparison words, AS and the words and tokens around them (logic keywords
/// and ON for a condition, names, literals, quotes, blanks).
#[test]
fn inert_not_comparisons_agree_with_the_full_analysis() {
    let parts = [
        "not",
        "NOT",
        "not",
        "in",
        "like",
        "is",
        "in",
        "between",
        "rlike",
        "regexp",
        "as",
        "was",
        "on",
        "or",
        "and",
        "x",
        "y",
        "but",
        "1",
        "'",
        "\"",
        "\u{201c}",
        "\u{2019}",
        ".",
        "@",
        ",",
        ";",
        "-",
        "0x",
        "a1",
        "null",
        "n'",
        "where",
        "order",
        "by",
        "into",
        "drop",
        "table",
        "not in",
        "NOT LIKE",
        "not  is",
        "as not in",
        "x on",
        "x or",
    ];
    let seps = [" ", " ", " ", " ", "", "  ", "\n", "\u{a0}"];
    let mut rng = XorShift64::new(0x6e07_1e55_c0de_0001);
    let (mut inert_n, mut not_n, mut found_n) = (0, 0, 0);
    for _ in 0..300_000 {
        let v = joined_parts(&mut rng, &parts, &seps);
        let full = analyze_all(&v, &mut 0);
        found_n += usize::from(full.is_some());
        if inert(&v) {
            inert_n += 1;
            let l = v.to_ascii_lowercase();
            not_n += usize::from(["not in", "not like", "not is", "not  in"].iter().any(|w| l.contains(w)) && (l.contains("on ") || l.contains("or ")));
            assert_eq!(full, None, "{v:?}");
        }
    }
    assert!(inert_n > 10_000 && not_n > 2_000 && found_n > 10_000, "{inert_n} {not_n} {found_n}");
}

/// The operator rule of [`keyword_is_inert`] ([`after_operator_or_not`]) against the full analysis, on
/// values made of the comparison words right after `-`, `+`, `/`, `:`, `::` (and with blanks
/// between), the tokens that could make them compare (ON, OR/AND for a condition, NOT, AS,
/// literals, names, numbers with an exponent, quotes, `;` and statement heads, `--`, `/*`)
/// and blanks: whenever the shortcut says inert, nothing is found.
#[test]
fn inert_operator_comparisons_agree_with_the_full_analysis() {
    let parts = [
        "-in",
        "-in",
        "-is",
        "+like",
        "/in",
        ":in",
        "::is",
        "- in",
        "-  IN",
        "+ between",
        "/ rlike",
        ": like",
        "-div",
        "-mod",
        "-collate",
        "-escape",
        "-match",
        "-glob",
        "-sounds",
        "in",
        "is",
        "like",
        "-",
        "+",
        "/",
        ":",
        "::",
        "7",
        "1",
        "1e",
        "1e-",
        "0x",
        "x",
        "y",
        "USB",
        "C",
        "Hub",
        "plug",
        "built",
        "not",
        "as",
        "on",
        "or",
        "and",
        "null",
        "true",
        "'",
        "\"",
        "\u{2019}",
        "\u{201c}",
        ".",
        ",",
        ";",
        "@a",
        "@",
        "[a",
        "]",
        "n'",
        "x'1'",
        "begin",
        "grant",
        "use",
        "drop",
        "table",
        "union",
        "select",
        "where",
        "from",
        "into",
        "order",
        "by",
        "set",
        "update",
        "case",
        "when",
        "then",
        "end",
        "--",
        "/*",
        "*/",
        "#",
        "=",
        "\n",
        "e",
    ];
    let seps = [" ", " ", " ", "", "", "  ", "\n", "\u{a0}", "-", "+"];
    let seed = std::env::var("SQLI_INERT_SEED").ok().and_then(|n| n.parse().ok()).unwrap_or(0x000b_5e55_ed0f_c0de);
    let n: usize = std::env::var("SQLI_INERT_N").ok().and_then(|n| n.parse().ok()).unwrap_or(300_000);
    let mut rng = XorShift64::new(seed);
    let (mut inert_n, mut op_n, mut found_n) = (0, 0, 0);
    for _ in 0..n {
        let v = joined_parts(&mut rng, &parts, &seps);
        let full = analyze_all(&v, &mut 0);
        found_n += usize::from(full.is_some());
        if inert(&v) {
            inert_n += 1;
            let b = v.as_bytes();
            op_n += usize::from((0..b.len()).any(|i| {
                b[i].is_ascii_alphabetic() && (i == 0 || !b[i - 1].is_ascii_alphabetic()) && after_operator(b, i) && {
                    let e = letters_end(b, i);
                    keywords::keyword_bytes(&b[i..e]) == Kw::BinOp
                }
            }));
            assert_eq!(full, None, "{v:?}");
        }
    }
    assert!(inert_n > 10_000 && op_n > 5_000 && found_n > 10_000, "{inert_n} {op_n} {found_n}");
    // The bench's product names and their kind.
    for v in ["USB-C Hub 7-in-1", "2-in-1 Laptop", "Built-in microphone", "Status: in transit", "Log-in page", "a/b is c", "opt-in"] {
        assert!(inert(v), "{v}");
        assert_eq!(analyze_all(v, &mut 0), None, "{v}");
    }
}

/// The parenthesis and `#` rules of [`inert_with`] against the full analysis, on values made
/// of parentheses, the words before them (unknown words, functions of every class, keywords),
/// `;`, `#`, line breaks, brackets, quotes, `%27`, blanks (also non-ASCII ones), digits and
/// other separators, in sequences of up to nine parts: whenever the shortcut says inert,
/// nothing is found.
#[test]
fn inert_parens_agree_with_the_full_analysis() {
    let parts = [
        "(",
        "(",
        ")",
        ")",
        "x",
        "foo",
        "Bar",
        "i18n",
        "sleep",
        "version",
        "user",
        "ascii",
        "substring",
        "count",
        "datepart",
        "if",
        "iif",
        "exec",
        "concat",
        "extractvalue",
        "load_file",
        "select",
        "or",
        "and",
        "in",
        "on",
        "is",
        "union",
        "as",
        "from",
        ";",
        "#",
        "\n",
        "[",
        "]",
        "'",
        "\"",
        "%27",
        " ",
        " ",
        " ",
        "\u{a0}",
        "\u{2019}",
        "1",
        "0x1f",
        ",",
        ".",
        "-",
        "+",
        "/",
        ":",
        "?",
        "&",
        "@",
        "$",
        "_",
        "1=1",
        "=",
        "--",
        "\\N",
    ];
    let seeds = [0x005e_ed0f_9a4e_11e5_u64, 0x0123_4567_89ab_cdef];
    let (mut inert_n, mut paren_n, mut hash_n, mut found_n) = (0, 0, 0, 0);
    for seed in seeds {
        let mut rng = XorShift64::new(seed);
        for _ in 0..150_000 {
            let v = rng.joined(&parts, 9);
            let full = analyze_all(&v, &mut 0);
            found_n += usize::from(full.is_some());
            if inert(&v) {
                inert_n += 1;
                paren_n += usize::from(v.contains('('));
                hash_n += usize::from(v.contains('#'));
                assert_eq!(full, None, "{v:?}");
                check_inert(&v, true);
            }
        }
    }
    assert!(inert_n > 10_000 && paren_n > 3_000 && hash_n > 1_000 && found_n > 10_000, "{inert_n} {paren_n} {hash_n} {found_n}");
}

/// [`letters_end`] is the byte loop that defines it (the end of the run of word bytes), from every offset of values made of every
/// byte (letters, `_`, the bytes next to the letter ranges, non-ASCII bytes whose low seven
/// bits are letters) and of every corpus value.
#[test]
fn letters_end_agrees_with_the_byte_loop() {
    let reference = |b: &[u8], mut i: usize| {
        while i < b.len() && INERT_BYTES[b[i] as usize] == B_WORD {
            i += 1;
        }
        i
    };
    let mut rng = XorShift64::new(0x1e77_e125_e9d0_0001);
    let alphabet: Vec<u8> = (0..=255u8).collect();
    for _ in 0..50_000 {
        let n = rng.below(40);
        let b: Vec<u8> = (0..n).map(|_| if rng.below(3) == 0 { alphabet[rng.below(256)] } else { b"aZz_AmQ@[`{^\\xe1\xdf\xc1"[rng.below(16)] }).collect();
        for i in 0..=b.len() {
            assert_eq!(letters_end(&b, i), reference(&b, i), "{b:?} {i}");
        }
    }
    for c in 0..=255u8 {
        for at in 0..12 {
            let mut b = vec![b'a'; 12];
            b[at] = c;
            assert_eq!(letters_end(&b, 0), reference(&b, 0), "{c} {at}");
        }
    }
    for v in &crate::other_util::test_values() {
        for i in 0..v.len().min(64) {
            assert_eq!(letters_end(v.as_bytes(), i), reference(v.as_bytes(), i), "{v:?} {i}");
        }
    }
}

/// [`check_inert`] on values made of every class of byte the loop of [`inert_with`] tells apart
/// (words, neutral bytes, quotes, `#`, the doubled operators, parentheses, fullwidth quotes,
/// controls), on every corpus value and on short values written for the edges.
#[test]
fn inert_with_is_sound_on_every_byte_class() {
    let parts = [
        "1", "x", "it", "union", "select", "case", "'", "\"", " ", "  ", "#", "-", "--", "@", "@@", "&", "&&", ";", "0xab", "\u{2019}", "\u{ff07}", "/", ",",
        "%27", "\n", "\t", "e5", "from", "s", "?", "in", "insert", "into", "delete", "update", "set", "order", "by", "group", "on", "or", "and", "is", "like",
        "drop", "table", "null", "limit", "as", "not", "use", "Welcome", "to", "Metabase", "&#39;", "&rsquo;", "\u{201c}", "x1", "1x", "b1", "(", ")", "sleep",
        "f(", "=", "[", "]", "{", "}", ".", ":", "+", "9", "\u{e9}", "\u{7f}", "\0",
    ];
    let mut rng = XorShift64::new(0x5eed_0fd1_57a7_c001);
    let (mut yes, mut no) = (0, 0);
    for _ in 0..150_000 {
        let v = rng.joined(&parts, 12);
        for k in [true, false] {
            let inert = check_inert(&v, k);
            yes += usize::from(inert);
            no += usize::from(!inert);
        }
    }
    assert!(yes > 10_000 && no > 10_000, "{yes} {no}");
    for v in &crate::other_util::test_values() {
        for k in [true, false] {
            check_inert(v, k);
        }
    }
    for v in ["we couldn't", "x # y", "f(x) (y)", "it's 1 or 2"] {
        check_inert(v, true);
        check_inert(v, false);
    }
    for v in ["", " ", "1", "a", "a ", " a", "1 2 3", "a1 b2"] {
        assert!(check_inert(v, true) && check_inert(v, false), "{v:?}");
    }
}

/// [`slug_bytes`] is the byte loop that defines it (slug alphabet, no `--`, a digit or not), on values made of every byte near the slug
/// alphabet and of slug parts, at every length around the eight-byte chunks.
#[test]
fn slug_bytes_agrees_with_the_byte_loop() {
    let reference = |b: &[u8]| {
        if !b.iter().all(|&c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-') || b.windows(2).any(|w| w == b"--") {
            return None;
        }
        Some(b.iter().any(u8::is_ascii_digit))
    };
    let mut rng = XorShift64::new(0x51a9_b17e_5000_0001);
    let near = b"aZz_AmQ09-/:@[`{^\\xe1\xdf\xc1 .\x7f\x00";
    for _ in 0..100_000 {
        let n = rng.below(30);
        let b: Vec<u8> = (0..n)
            .map(|_| match rng.below(8) {
                0 => rng.below(256) as u8,
                1 | 2 => near[rng.below(near.len())],
                3 => b'-',
                4 => b'0' + rng.below(10) as u8,
                _ => b"abcxyzABCXYZ_"[rng.below(13)],
            })
            .collect();
        assert_eq!(slug_bytes(&b), reference(&b), "{b:?}");
    }
    for c in 0..=255u8 {
        for n in 1..18 {
            for at in 0..n {
                let mut b = vec![b'a'; n];
                b[at] = c;
                assert_eq!(slug_bytes(&b), reference(&b), "{c} {n} {at}");
                if at + 1 < n {
                    b[at + 1] = c;
                    assert_eq!(slug_bytes(&b), reference(&b), "{c} {n} {at} twice");
                }
            }
        }
    }
    for v in &crate::other_util::test_values() {
        assert_eq!(slug_bytes(v.as_bytes()), reference(v.as_bytes()), "{v:?}");
    }
}

/// [`pure_keyword_bits`] is what [`keyword_is_inert`] does for those classes, on every keyword
/// of the table in values of every shape around it (next token a literal, a name, a keyword, a
/// quote, nothing; `;` or NOT before it).
#[test]
fn pure_keyword_classes_are_keyword_is_inert() {
    use super::keywords::{keyword, keyword_words};
    let around = ["", " ", "; ", "not ", "x "];
    let after = ["", " 1", " 'a'", " x", " null", " table", " select", " \u{2019}", "(", " .5", " or"];
    let mut pure = 0;
    for (w, _) in keyword_words() {
        let kw = keyword(w);
        let Some(bits) = pure_keyword_bits(kw) else { continue };
        pure += 1;
        for pre in around {
            for post in after {
                for before in [0, SEEN_ANY, SEEN_ANY | SEEN_LOGIC, SEEN_ANY | SEEN_INSERT] {
                    let v = format!("{pre}{w}{post}");
                    let (start, end) = (pre.len(), pre.len() + w.len());
                    let mut seen = before;
                    let ok = keyword_is_inert(kw, v.as_bytes(), start, end, &mut seen, &WordSet::default());
                    assert!(ok, "{v:?}");
                    assert_eq!(seen, before | SEEN_ANY | bits, "{v:?}");
                }
            }
        }
    }
    assert!(pure > 30, "{pure}");
}

#[test]
fn stack_frames_and_script_timers_are_not_calls() {
    // Frames of error reports and telemetry, written for this rule.
    for v in [
        "TypeError: x is undefined\n    at sleep (https://cdn.shop.example/static/app.9f3c.js:10:5)",
        "at Object.benchmark (bench.js:4:2)",
        "Error: timeout at sleep (/srv/app/node_modules/delay/index.js:5:11) at async main (/srv/app/index.js:3:1)",
        "    at pg_sleep (webpack:///./src/db.ts:42)",
        "await sleep(1000)",
        "const t = await sleep(250);",
        "    at exec (webpack-internal:///./node_modules/pg/lib/client.js:52:19)",
    ] {
        assert!(conf(v) < 60, "{v}: {}", conf(v));
    }
    assert!(frame_location("at sleep (app.js:1:2)", &"at sleep (app.js:1:2)"[3..8]));
    assert!(!frame_location("sleep(5)", &"sleep(5)"[..5]));
    assert!(!frame_location("sleep(a:1)", &"sleep(a:1)"[..5]));
    // Calls still are.
    for v in ["sleep(5)", "1 and sleep(5)", "1' and sleep(5)-- -", "benchmark(5000000,md5(1))", "1;select pg_sleep(5)--", "x' or sleep(5) or 'x"] {
        assert!(conf(v) >= 60, "{v}: {}", conf(v));
    }
}

#[test]
fn a_log_message_that_opens_with_a_timer_call_is_not_sql() {
    // Telemetry messages written for this rule: the call first, then words of a sentence.
    for v in [
        "sleep(250) then retry",
        "benchmark(5000) took 1234ms",
        "Sleep(3) before reconnecting",
        "pg_sleep(1) returned after 1002 ms",
        "delay(100) done.",
        "Error: benchmark(200) took 950ms",
        "Uncaught RangeError: sleep(10) returned early",
        "the worker drained before sleep(250) completed",
        "Error: benchmark(5000) took 1234ms\n    at dispatchEvent (webpack:///./src/app.js:5518:92)",
        "sleep(250) completed\nwait@<anonymous>:6630:66\nasync@https://cdn.example.com/a.js:1:2",
    ] {
        assert!(conf(v) < 40, "{v}: {}", conf(v));
    }
    // A keyword the message quotes as a word, the quote after it the value's last: a strict
    // probe at most.
    for v in ["Cannot read properties of undefined (reading 'select')", "TypeError: Cannot read properties of null (reading 'select')"] {
        assert!(conf(v) < 60, "{v}: {}", conf(v));
    }
    // The call in SQL's grammar: first but followed by an operator, a clause, a comment, `;`,
    // one alias; or not first.
    for v in [
        "sleep(5) and 1=1",
        "sleep(5)-- -",
        "sleep(5)#",
        "sleep(5); select 1",
        "sleep(5) or true",
        "sleep(5) from dual",
        "sleep(5) x",
        "benchmark(5000000,md5(1)) took ms",
        "1 and sleep(5) then retry",
        "' or sleep(5) then retry",
        "1 or sleep(5) completed",
        "x' select sleep(5) then",
        "a' waitfor delay '0:0:5'--",
        "1'; select pg_sleep(5) then retry",
        "(select sleep(5)) took it",
    ] {
        assert!(conf(v) >= 60, "{v}: {}", conf(v));
    }
    assert!(log_message_call("sleep(250) then retry", &"sleep(250) then retry"[..5]));
    assert!(!log_message_call("x sleep(250) then retry", &"x sleep(250) then retry"[2..7]));
}

#[test]
fn a_sentence_about_sql_is_not_sql() {
    let judged = |v: &str| hit(v, Level::Strict).map_or(0, |h| h.confidence);
    // Searches written for this rule, in several languages.
    for v in [
        "sql injection and 1=1",
        "how does or 1=1 work",
        "what is select 1 from dual",
        "select 1 from dual",
        "что такое select 1 from dual",
        "ejemplo de inyeccion and 1=1",
        "SQLインジェクション とは and 1=1",
    ] {
        assert!(judged(v) < 60, "{v}: {}", judged(v));
    }
    // Still a probe at strict.
    for v in ["sql injection and 1=1", "select 1 from dual"] {
        assert_eq!(judged(v), 55, "{v}");
    }
    // A breakout, a comment, a statement end or a value that continues an expression is SQL.
    for v in [
        "1 and 1=1",
        "' or 1=1 --",
        "sql injection' or 1=1 --",
        "x' and 1=1 and 'a'='a",
        "1) or (1=1",
        "1;select 1 from dual",
        "' union select 1 from dual--",
        "-1 or 1=1#",
    ] {
        assert!(judged(v) >= 60, "{v}: {}", judged(v));
    }
}

#[test]
fn a_time_call_after_a_word_of_prose_is_a_sentence() {
    let judged = |v: &str| hit(v, Level::Strict).map_or(0, |h| h.confidence);
    for v in ["mysql sleep(5) function", "postgres pg_sleep(1) example", "mysql benchmark(1000, md5(1)) explained"] {
        assert!(judged(v) < 60, "{v}: {}", judged(v));
    }
    for v in ["sleep(5)", "1 and sleep(5)", "x=sleep(5)", "1 or pg_sleep(5)", "name' and sleep(5) and 'a'='a", "mysql sleep(5)-- x"] {
        assert!(judged(v) >= 60, "{v}: {}", judged(v));
    }
}

#[test]
fn a_condition_that_begins_the_value_and_runs_into_prose_is_a_sentence() {
    let judged = |v: &str| hit(v, Level::Strict).map_or(0, |h| h.confidence);
    // Nothing of the application's before them in the as-is context, no quote to leave.
    for v in [
        "and 1=1 meaning",
        "or 1=1 explained",
        "sql union select example",
        "select * from users where id = 1",
        "select name from t where a = 1 or 1=1",
        "что значит union select",
        "difference union select vs join",
    ] {
        assert!(judged(v) < 60, "{v}: {}", judged(v));
    }
    // A number or a literal completes the application's expression; a quote or a comment
    // leaves it.
    // What scanners append to a value (the condition or clause alone) is kept.
    for v in [
        "1 union select password from users",
        "null union select password from users",
        "0x31 union select @@version,username,password from users",
        "1e0UNION SELECT 2",
        "0 or 1=1",
        " AND 1=1",
        "or 1=1",
        " ORDER BY 3 ",
        "1 order by 3--",
        "x' union select 1--",
    ] {
        assert!(judged(v) >= 60, "{v}: {}", judged(v));
    }
}

#[test]
fn a_quoted_select_in_a_sentence_is_no_probe() {
    // Written for this rule: the word `select` between the value's own quotes is a word.
    for s in
        ["'select' auf deutsch", "Cannot read properties of undefined (reading 'select')", "Click 'Select' and then 'Update'", "le mot 'select' en français"]
    {
        assert!(conf(s) < 40, "{s}: {}", conf(s));
    }
    // A select list after the quoted word, or a stacked statement, still is one.
    for s in ["x' select password from users--", "1'; select pg_sleep(5)--"] {
        assert!(conf(s) >= 40, "{s}: {}", conf(s));
    }
}

#[test]
fn a_sentence_beginning_with_a_clause_word_is_prose() {
    // Written for this rule: `where` or `order by` opening a sentence that is no SQL.
    for s in ["Where are you from?", "Order by phone: +1 (555) 010-2030", "where can I buy it? thanks", "Group by age: who comes?"] {
        assert!(conf(s) < 40, "{s}: {}", conf(s));
    }
    // A clause that goes on as SQL stays a strict probe or more.
    for s in ["where 1=1", "order by 1--", "where id = 1 or 1=1", "1 order by 5"] {
        assert!(conf(s) >= 40, "{s}: {}", conf(s));
    }
}

#[test]
fn arithmetic_and_quoted_symbols_in_text_compare_no_constants() {
    // Written for this rule: an equation in a note, a parser's message quoting a character.
    for s in ["1 + 1 = 2", "2*3=6 and so on", "Unexpected token '<', \"<!DOCTYPE \"... is not valid JSON", "unexpected character '>', expected a name"] {
        assert!(conf(s) < 40, "{s}: {}", conf(s));
    }
    // Constants compared after a value or a breakout stay probes.
    for s in ["1=1", "x' or 2-1=1--", "1 and 1+1=2", "a'='a", "'<'"] {
        assert!(conf(s) >= 40, "{s}: {}", conf(s));
    }
}

#[test]
fn an_exec_stack_frame_of_firefox_is_no_statement() {
    // Written for this rule: frames in the `name@location:line:column` format.
    for s in [
        "exec@<anonymous>:21:8",
        "at exec (<anonymous>:3:1)",
        "exec@https://cdn.example.net/lib/vue.global.js:4:12",
        "exec@/srv/app/router/layer.js:95:5\nnext@/srv/app/router/route.js:149:13",
        "exec@webpack-internal:///./src/db.js:7:1",
    ] {
        assert!(conf(s) < 40, "{s}: {}", conf(s));
    }
    // A variable executed after a value stays a stacked EXEC.
    for s in ["1; exec @cmd", "x'; exec @q--", "1 exec @sql"] {
        assert!(conf(s) >= 40, "{s}: {}", conf(s));
    }
}

#[test]
fn a_quoted_hash_in_markup_is_no_comment() {
    // Written for this rule: an anchor to nowhere in saved rich text.
    for s in ["<p>Read <a href=\"#\" onclick=\"return false;\">more</a></p>", "see <a href='#'>top</a>"] {
        assert!(conf(s) < 40, "{s}: {}", conf(s));
    }
    // A breakout then a `#` comment stays what it was.
    for s in ["admin\"#", "admin'#", "x' or 1=1#"] {
        assert!(conf(s) >= 40, "{s}: {}", conf(s));
    }
}

/// The detector's judgement of `s` as free text (a search box's value): what the engine
/// reports there.
fn free(s: &str, level: Level) -> Option<Hit> {
    let input = Input { raw: s, decoded: s, field: FieldKind::QueryValue };
    SqliDetector.check(&input, level).and_then(|h| SqliDetector.in_free_text(&input, h, level))
}

#[test]
fn searches_with_sql_words_are_not_injections_in_free_text() {
    for v in [
        "order by 1 desc",
        "waitfor delay '0:0:5' sql server",
        "drop table if exists syntax",
        "delete from table where id in (select id from",
        "sql インジェクション 対策 ' or 1=1",
        "and 1=1 meaning",
        "select 1 from dual",
        "mysql sleep(5) function",
        "insert into select from another table",
        "group by having count(*) > 1",
        "1=1 と は",
        "o'reilly books",
    ] {
        assert!(free(v, Level::Strict).is_none(), "{v:?}: {:?}", free(v, Level::Strict));
    }
    // Elsewhere (a parameter appended to the application's SQL) the same words still count.
    assert!(hit("order by 1 desc", Level::Balanced).is_some());
}

#[test]
fn breakouts_are_injections_in_free_text() {
    for v in [
        "' or 1=1--",
        "x' or 'a'='a",
        "1 union select null,version()--",
        "-1 union select 1,2,3",
        "x'; DROP TABLE users",
        "admin' AND SLEEP(5)",
        "abc\" OR benchmark(10000000,MD5(1))",
        "0; INSERT INTO admins VALUES ('x','y')--",
        "1') AND 1=CONVERT(int,(SELECT @@version))",
        "what does ' or 1=1 -- do",
        " UNION ALL SELECT 1,2,3-- ",
        " ORDER BY 7#",
        "));waitfor delay '0:0:5'--",
    ] {
        assert!(free(v, Level::Balanced).is_some(), "{v:?}");
    }
}
