//! User rules in the running proxy: blocking (the user's wp-config.php example), allows and
//! skip exceptions that detection honours, tags in the log, rules and detection policy per
//! OpenAPI operation, and located errors from `palisade check`.

use std::io::BufRead;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::common::*;

fn app_with(upstream: &str, sections: &str) -> String {
    format!("apps:\n  - name: app\n    upstream: {upstream}\n{sections}")
}

const SQLI: &str = "1%27%20union%20select%20password%20from%20users--";

#[tokio::test]
async fn the_wp_config_example_blocks_also_percent_encoded() {
    let mut up = Upstream::tcp(reply("ok")).await;
    let dir = TempDir::new();
    dir.write(
        "rules.yaml",
        "- id: wp-config\n  name: WordPress configuration probe\n  when: {field: query, contains: wp-config.php, ignore_case: true}\n  then: block\n",
    );
    let sections =
        "    rules:\n      files: [rules.yaml]\n      inline:\n        - {id: teapot, when: {field: path, equals: /tea}, then: {action: block, status: 418}}\n";
    let proxy = Proxy::start_in(&cfg(&[], &app_with(&up.url(), sections)), dir);

    for target in ["/download?file=../../wp-config.php", "/download?file=wp%2Dconfig%2Ephp", "/x?a=1&b=WP-CONFIG.PHP.bak"] {
        let r = get(proxy.addr, "api.test", target).await;
        let v = assert_problem(&r, 403, "rule.wp-config");
        assert_eq!(v["reasons"][0]["code"], "rule.wp-config", "{}", r.dump());
    }
    let r = get(proxy.addr, "api.test", "/tea").await;
    assert_problem(&r, 418, "rule.teapot");
    assert!(up.try_req().is_none(), "a blocked request reached the upstream");

    let r = get(proxy.addr, "api.test", "/download?file=readme.txt").await;
    assert_eq!(r.status, 200, "{}", r.dump());
    assert_eq!(up.next_req().await.target, "/download?file=readme.txt");
}

#[tokio::test]
async fn an_allow_rule_lets_through_what_detection_would_block() {
    let mut up = Upstream::tcp(reply("ok")).await;
    let sections = "    rules:\n      - {id: pentest, when: {field: header.x-pentest-token, equals: s3cret}, then: allow}\n";
    let proxy = Proxy::start(&cfg(&[], &app_with(&up.url(), sections)));
    let target = format!("/search?q={SQLI}");

    let r = get(proxy.addr, "api.test", &target).await;
    assert_problem(&r, 403, "detect.sqli");
    let wrong = format!("GET {target} HTTP/1.1\r\nHost: api.test\r\nX-Pentest-Token: guess\r\nConnection: close\r\n\r\n");
    assert_problem(&raw(proxy.addr, wrong).await, 403, "detect.sqli");

    let allowed = format!("GET {target} HTTP/1.1\r\nHost: api.test\r\nX-Pentest-Token: s3cret\r\nConnection: close\r\n\r\n");
    let r = raw(proxy.addr, allowed).await;
    assert_eq!(r.status, 200, "{}", r.dump());
    assert_eq!(up.next_req().await.path(), "/search");
}

#[tokio::test]
async fn a_skip_exception_covers_one_field_but_not_another() {
    let mut up = Upstream::tcp(reply("ok")).await;
    let sections =
        "    rules:\n      - id: report-sql\n        when: {field: path, prefix: /reports}\n        then: {skip: {detectors: [sqli], fields: [query.sql]}}\n";
    let proxy = Proxy::start(&cfg(&[], &app_with(&up.url(), sections)));

    let r = get(proxy.addr, "api.test", &format!("/reports/run?sql={SQLI}")).await;
    assert_eq!(r.status, 200, "{}", r.dump());
    assert_eq!(up.next_req().await.path(), "/reports/run");
    // Another field, or the same field elsewhere, is still inspected.
    assert_problem(&get(proxy.addr, "api.test", &format!("/reports/run?name={SQLI}")).await, 403, "detect.sqli");
    assert_problem(&get(proxy.addr, "api.test", &format!("/other?sql={SQLI}")).await, 403, "detect.sqli");
    // Another detector on the excepted field is still inspected.
    assert_problem(&get(proxy.addr, "api.test", "/reports/run?sql=%3Cscript%3Ealert(1)%3C/script%3E").await, 403, "detect.xss");
}

#[tokio::test]
async fn rules_on_the_json_body() {
    let mut up = Upstream::tcp(reply("ok")).await;
    let sections = "    rules:\n      - {id: no-admin-signup, when: {all: [{field: path, equals: /signup}, {field: 'body:/user/role', equals: admin, ignore_case: true}]}, then: block}\n";
    let proxy = Proxy::start(&cfg(&[], &app_with(&up.url(), sections)));
    let post = |body: &str| {
        format!(
            "POST /signup HTTP/1.1\r\nHost: api.test\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
    };
    assert_problem(&raw(proxy.addr, post(r#"{"user":{"name":"eve","role":"Admin"}}"#)).await, 403, "rule.no-admin-signup");
    let r = raw(proxy.addr, post(r#"{"user":{"name":"bob","role":"reader"}}"#)).await;
    assert_eq!(r.status, 200, "{}", r.dump());
    assert_eq!(up.next_req().await.path(), "/signup");
}

const SPEC: &str = r#"
openapi: 3.0.3
info: {title: e2e, version: "1"}
paths:
  /search:
    get:
      operationId: searchItems
      parameters:
        - {name: q, in: query, schema: {type: string}}
      responses:
        '200': {description: ok}
  /notes:
    get:
      parameters:
        - {name: q, in: query, schema: {type: string}}
      responses:
        '200': {description: ok}
  /all:
    delete:
      operationId: deleteAll
      responses:
        '204': {description: gone}
"#;

#[tokio::test]
async fn detection_policy_and_rules_per_openapi_operation() {
    let mut up = Upstream::tcp(reply("ok")).await;
    let dir = TempDir::new();
    dir.write("api.yaml", SPEC);
    let sections = "    openapi: {spec: api.yaml}\n    rules:\n      - {id: no-delete-all, when: {field: operation, equals: deleteAll}, then: block}\n    detection:\n      operations:\n        - {operation: searchItems, mode: monitor}\n        - {operation: 'get /notes', exclusions: [{detector: xss, location: query.q}]}\n";
    let proxy = Proxy::start_in(&cfg(&[], &app_with(&up.url(), sections)), dir);

    // searchItems is monitored: the attack goes through (and is logged).
    let r = get(proxy.addr, "api.test", &format!("/search?q={SQLI}")).await;
    assert_eq!(r.status, 200, "{}", r.dump());
    assert_eq!(up.next_req().await.path(), "/search");
    // `GET /notes` keeps the app's blocking mode, with an exception for XSS in `q` only.
    assert_problem(&get(proxy.addr, "api.test", &format!("/notes?q={SQLI}")).await, 403, "detect.sqli");
    let r = get(proxy.addr, "api.test", "/notes?q=%3Cscript%3Ealert(1)%3C/script%3E").await;
    assert_eq!(r.status, 200, "{}", r.dump());
    assert_eq!(up.next_req().await.path(), "/notes");
    // A rule on the operation.
    let r = raw(proxy.addr, "DELETE /all HTTP/1.1\r\nHost: api.test\r\nConnection: close\r\n\r\n").await;
    assert_problem(&r, 403, "rule.no-delete-all");
    assert!(up.try_req().is_none());
}

/// A `palisade run` process whose log (stderr) is read line by line; killed on drop.
struct Bin {
    child: std::process::Child,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Bin {
    fn run(config: &std::path::Path) -> Bin {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_palisade"));
        for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("PALISADE_")) {
            cmd.env_remove(k);
        }
        let mut child = cmd
            .args(["--log-level", "info", "--log-format", "text", "run", "-c"])
            .arg(config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn palisade");
        let stderr = child.stderr.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr).lines() {
                let Ok(l) = line else { break };
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        Bin { child, lines, seen: Vec::new() }
    }

    async fn line(&mut self, what: &str) -> String {
        let deadline = Instant::now() + LIMIT;
        loop {
            match self.lines.try_recv() {
                Ok(l) => {
                    self.seen.push(l.clone());
                    if l.contains(what) {
                        return l;
                    }
                }
                Err(mpsc::TryRecvError::Empty) => {
                    assert!(Instant::now() < deadline, "no log line with {what:?}; log so far:\n{}", self.seen.join("\n"));
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                Err(mpsc::TryRecvError::Disconnected) => panic!("palisade exited before logging {what:?}; log:\n{}", self.seen.join("\n")),
            }
        }
    }
}

impl Drop for Bin {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test]
async fn tags_appear_in_the_log() {
    let mut up = Upstream::tcp(reply("ok")).await;
    let dir = TempDir::new();
    let sections = "    rules:\n      - {id: bots, when: {field: header.user-agent, contains: [curl, python-requests], ignore_case: true}, then: {tag: [bot, scripted]}}\n      - {id: probe, when: {field: path, prefix: /.git}, then: {action: block, tag: probe}}\n";
    let config = dir.write("palisade.yaml", cfg(&[], &app_with(&up.url(), sections)));
    let mut bin = Bin::run(&config);
    let started = bin.line("palisade started").await;
    let start = started.find("listeners=[").expect("listeners in the startup line") + "listeners=[".len();
    let addr: std::net::SocketAddr = started[start..].split([',', ']']).next().unwrap().trim().parse().unwrap();

    let r = raw(addr, "GET /x HTTP/1.1\r\nHost: api.test\r\nUser-Agent: Curl/8.5\r\nConnection: close\r\n\r\n").await;
    assert_eq!(r.status, 200, "{}", r.dump());
    let id = r.header("x-request-id").unwrap().to_string();
    assert_eq!(up.next_req().await.path(), "/x");
    let line = bin.line("tags=bot,scripted").await;
    assert!(line.contains(&id), "{line}");

    let r = raw(addr, "GET /.git/config HTTP/1.1\r\nHost: api.test\r\nConnection: close\r\n\r\n").await;
    assert_problem(&r, 403, "rule.probe");
    let line = bin.line("tags=probe").await;
    assert!(line.contains("blocked") && line.contains(r.header("x-request-id").unwrap()), "{line}");
}

#[test]
fn check_reports_rule_errors_with_file_line_and_key_path() {
    let dir = TempDir::new();
    dir.write("rules.yaml", "- id: ok\n  when: {field: query, contains: x}\n  then: block\n- id: bad\n  when: {field: query, regex: '(oops'}\n  then: block\n");
    let config = dir.write(
        "palisade.yaml",
        "listen:\n  - addr: 127.0.0.1:0\napps:\n  - name: a\n    upstream: http://127.0.0.1:9\n    rules:\n      files: [rules.yaml]\n      inline:\n        - {id: x, when: {field: nope, equals: 1}, then: block}\n",
    );
    let out = Command::new(env!("CARGO_BIN_EXE_palisade")).args(["check", "-c"]).arg(&config).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let rules_file = dir.join("rules.yaml").display().to_string();
    assert!(stdout.lines().any(|l| l.starts_with(&format!("{rules_file}:5:")) && l.contains("[1].when.regex: invalid regular expression")), "{stdout}");
    let cfg_file = config.display().to_string();
    assert!(
        stdout.lines().any(|l| l.starts_with(&format!("{cfg_file}:9:")) && l.contains("apps[0].rules.inline[0].when.field: unknown field `nope`")),
        "{stdout}"
    );

    // Matching on the operation needs the OpenAPI stage that names it.
    let config = dir.write(
        "no-openapi.yaml",
        "listen:\n  - addr: 127.0.0.1:0\napps:\n  - name: a\n    upstream: http://127.0.0.1:9\n    rules:\n      - {id: op, when: {field: operation, equals: x}, then: block}\n    detection:\n      operations: [{operation: x, mode: off}]\n",
    );
    let out = Command::new(env!("CARGO_BIN_EXE_palisade")).args(["check", "-c"]).arg(&config).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("apps[0].rules: a rule matches `operation`, which needs the app's `openapi:` section"), "{stdout}");
    assert!(stdout.contains(":9:19: apps[0].detection.operations: overrides per operation need the app's `openapi:` section"), "{stdout}");
}

#[test]
fn the_example_rules_check_clean() {
    let config = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/palisade.yaml");
    let out = Command::new(env!("CARGO_BIN_EXE_palisade")).args(["check", "-c", config]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
}
