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
            "<?php system($_GET['cmd']); ?>",
            "system('id')",
            ";system('cat /etc/passwd')",
            "eval(base64_decode('ZWNobyAxOw=='))",
            "{${phpinfo()}}",
            "${@print(system($_SERVER['HTTP_USER_AGENT']))}",
            "phpinfo()",
            "O:8:\"stdClass\":1:{s:1:\"a\";s:1:\"b\";}",
            "rO0ABXNyABFqYXZhLnV0aWwuSGFzaE1hcA==",
            "aced00057372",
            "__import__('os').system('id')",
            "require('child_process').exec('id')",
            "process.mainModule.require('child_process')",
            "{\"$type\":\"System.Windows.Data.ObjectDataProvider, PresentationFramework\"}",
            "cos\nsystem\n(S'id'\ntR.",
            "!!python/object/apply:os.system ['id']",
            "exec('whoami')",
            ";{$_GET[\"cmd\"]}",
            "{$_POST['x']}",
            "$_GET['f']($_GET['a'])",
            "$_REQUEST[0] ($_REQUEST[1])",
        ],
        Level::Balanced,
        q,
    );
}

#[test]
fn benign() {
    assert_all_below(
        &[
            "the system (of record) is down",
            "print (this page)",
            "We evaluate (eval) candidates",
            "Order O:12 shipped",
            "include (optional) gift wrap",
            "sleep(8 hours) is healthy",
            "{\"$type\": \"invoice\"}",
            "rO0 is not base64 here",
            "md5(file) checksum",
            "call me (maybe)",
            "Execute (the plan)",
            "read $_GET[\"id\"] and cast it to int",
            "{$_GET}",
            "$_SESSION is empty after redirect",
        ],
        Level::Balanced,
        q,
    );
}

#[test]
fn linear_on_large_inputs() {
    for unit in ["a(", "system(", "O:1:\"", "rO0AB", "<?php ", "{${", "eval('"] {
        let v = unit.repeat(1_000_000 / unit.len());
        take_steps();
        let _ = detector().check(&Input { raw: &v, decoded: &v, field: FieldKind::QueryValue }, Level::Strict);
        let steps = take_steps();
        assert!(steps < 80 * v.len() as u64, "{unit}: {steps}");
    }
}

/// Every value reaching a literal search holds one of the gate's anchors: one attack per group
/// of searches (PHP, Node, Python, Java, pickle, Json.NET, YAML) is still found.
#[test]
fn anchors_gate_each_literal_search() {
    for v in [
        "<?php system($_GET['c']); ?>",
        "require('child_process').exec('id')",
        "O:8:\"stdClass\":0:{}",
        "rO0ABXNyABFqYXZhLnV0aWwuSGFzaE1hcA",
        "cos\nsystem\n(S'id'\ntR.",
        "{\"$type\":\"System.Windows.Data.ObjectDataProvider, PresentationFramework\"}",
        "!!python/object/apply:os.system ['id']",
    ] {
        assert!(CodeDetector.check(&Input { raw: v, decoded: v, field: FieldKind::QueryValue }, Level::Balanced).is_some(), "{v}");
    }
}

/// What [`call_or_serialized`] looks for, by brute force from its documentation: a listed
/// function (of [`EXEC_CALLS`] or [`DECODE_CALLS`], case-blind) called by name, that is an
/// identifier of 2 to 24 bytes (letters, digits, `_`; digits that start it are no part of the
/// name) followed by blanks and `(`; or a PHP serialized object head, `O:` or `C:` and a digit.
fn call_or_serialized_spec(s: &str) -> bool {
    let listed = |name: &str| {
        let lc = name.to_ascii_lowercase();
        (2..=24).contains(&name.len()) && (EXEC_CALLS.contains(&lc.as_str()) || DECODE_CALLS.contains(&lc.as_str()))
    };
    let call = s.match_indices('(').any(|(p, _)| {
        let before = s[..p].trim_end_matches(' ');
        let ident = before.rsplit(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).next().unwrap_or("");
        listed(ident.trim_start_matches(|c: char| c.is_ascii_digit()))
    });
    let serialized = ["O:", "C:"].iter().any(|head| s.match_indices(head).any(|(p, _)| s.as_bytes().get(p + 2).is_some_and(u8::is_ascii_digit)));
    call || serialized
}

/// The one-pass [`call_or_serialized`] answers what the brute-force spec answers: on a bounded
/// pseudo-random sample of texts made of call names, parentheses, blanks, serialized-object
/// heads and times, and on every real value of the sets and bench bodies.
#[test]
fn call_or_serialized_finds_calls_and_serialized_objects() {
    let parts = [
        "system",
        "SYSTEM",
        "eval",
        "exec",
        "base64_decode",
        "assert",
        "x",
        "_",
        "9",
        "12",
        "a1",
        " ",
        "  ",
        "(",
        ")",
        ":",
        "O",
        "C",
        "O:8",
        "C:1",
        "o:2",
        "16:55",
        "T",
        "(/",
        "&",
        "\u{e9}",
        ".",
        "passthru",
        "abcdefghijklmnopqrstuvwxyz",
    ];
    let mut rng = XorShift64::new(0x9e37_79b9_7f4a_7c15);
    let (mut yes, mut no) = (0, 0);
    let mut check = |v: &str| {
        let want = call_or_serialized_spec(v);
        assert_eq!(call_or_serialized(v), want, "{v:?}");
        if want {
            yes += 1;
        } else {
            no += 1;
        }
    };
    for _ in 0..100_000 {
        check(&rng.joined(&parts, 8));
    }
    for v in crate::other_util::test_values() {
        check(&v);
    }
    assert!(yes > 10_000 && no > 10_000, "{yes} {no}");
}

/// [`NAME_BYTES`] says of every byte what the comparisons said.
#[test]
fn name_table_is_the_comparisons() {
    for c in 0..=255u8 {
        assert_eq!(name_byte(c), c.is_ascii_alphanumeric() || c == b'_', "{c}");
    }
}

#[test]
fn a_call_named_in_a_search_is_a_word() {
    let free = |v: &str| {
        let input = Input { raw: v, decoded: v, field: FieldKind::QueryValue };
        detector().check(&input, Level::Strict).and_then(|h| detector().in_free_text(&input, h, Level::Strict)).map_or(0, |h| h.confidence)
    };
    for v in ["eval() in python security", "what does exec() do"] {
        assert_eq!(free(v), 0, "{v:?}");
    }
    for v in ["';system('id');//", "${@system(id)}", "{$_GET['cmd']}"] {
        assert!(free(v) >= 60, "{v:?}: {}", free(v));
    }
}

fn as_name(v: &str, field: FieldKind) -> u8 {
    detector().check(&Input { raw: v, decoded: v, field }, Level::Strict).map_or(0, |h| h.confidence)
}

/// Written for this rule: names that reach an object's prototype or a render element's
/// properties, in every way a parser reads keys.
#[test]
fn keys_that_reach_a_prototype_or_a_render_property() {
    for v in
        ["user[__proto__][role]", "__proto__.isAdmin", "a.constructor.prototype.b", "constructor[prototype][debug]", "cfg[#pre_render][0]", "field[#markup]"]
    {
        for f in [FieldKind::QueryName, FieldKind::FormName] {
            assert!(as_name(v, f) >= 60, "{v} {f:?}: {}", as_name(v, f));
        }
    }
    assert!(as_name("__proto__", FieldKind::JsonKey) >= 60);
    assert!(as_name("#lazy_builder", FieldKind::QueryName) == 0, "a base name that starts with # is no bracketed key");
    // Ordinary names, and the same words as values (a JavaScript tutorial, a color).
    for v in ["metadata[order_id]", "line_items[0][price_data][currency]", "prototype", "constructor", "filter[prototype_id]", "color[#fff]", "expand[]"] {
        assert_eq!(as_name(v, FieldKind::QueryName), 0, "{v}");
    }
    for v in ["Object.prototype.toString and __proto__ explained", "x[__proto__][a]"] {
        assert_eq!(as_name(v, FieldKind::QueryValue), 0, "{v}");
    }
}
