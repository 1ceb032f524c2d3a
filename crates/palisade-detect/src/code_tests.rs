use super::*;
use crate::other_util::take_steps;
use crate::FieldKind;

fn q(v: &str) -> u8 {
    detector().check(&Input { raw: v, decoded: v, field: FieldKind::QueryValue }, Level::Strict).map_or(0, |h| h.confidence)
}

#[test]
fn attacks() {
    let mut bad: Vec<String> = Vec::new();
    for v in [
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
    ] {
        if q(v) < 60 {
            bad.push(format!("{v:?}: {}", q(v)));
        }
    }
    assert!(bad.is_empty(), "{bad:#?}");
}

#[test]
fn benign() {
    let mut bad: Vec<String> = Vec::new();
    for v in [
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
    ] {
        if q(v) >= 60 {
            bad.push(format!("{v:?}: {}", q(v)));
        }
    }
    assert!(bad.is_empty(), "{bad:#?}");
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
