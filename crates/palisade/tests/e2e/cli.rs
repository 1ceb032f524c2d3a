//! The real `palisade` binary: `run` with signals, `check`, `--version`.

use std::io::BufRead;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, TryRecvError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use crate::common::*;

pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_palisade");

pub(crate) fn command() -> Command {
    let mut cmd = Command::new(BIN);
    for (k, _) in std::env::vars() {
        if k.starts_with("PALISADE_") {
            cmd.env_remove(k);
        }
    }
    cmd.stdin(Stdio::null());
    cmd
}

/// A `palisade run` process, killed on drop.
pub(crate) struct Bin {
    pub(crate) child: Child,
    pub(crate) lines: mpsc::Receiver<String>,
    pub(crate) seen: Vec<String>,
}

impl Bin {
    pub(crate) fn run(config: &Path) -> Bin {
        Bin::spawn(&["--log-level", "info", "--log-format", "text", "run", "-c", config.to_str().unwrap()])
    }

    pub(crate) fn spawn(args: &[&str]) -> Bin {
        Bin::spawn_env(args, &[])
    }

    pub(crate) fn spawn_env(args: &[&str], env: &[(&str, &Path)]) -> Bin {
        let mut child = command().args(args).envs(env.iter().copied()).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().expect("spawn palisade");
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

    /// Wait for a log line matching `pred`.
    pub(crate) async fn line(&mut self, what: &str) -> String {
        let deadline = Instant::now() + LIMIT;
        loop {
            match self.lines.try_recv() {
                Ok(l) => {
                    self.seen.push(l.clone());
                    if l.contains(what) {
                        return l;
                    }
                }
                Err(TryRecvError::Empty) => {
                    assert!(Instant::now() < deadline, "no log line with {what:?}; log so far:\n{}", self.seen.join("\n"));
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                Err(TryRecvError::Disconnected) => panic!("palisade exited before logging {what:?}; log:\n{}", self.seen.join("\n")),
            }
        }
    }

    /// The proxy address from the startup line, once the signal handlers are installed.
    pub(crate) async fn started(&mut self) -> SocketAddr {
        let l = self.line("palisade started").await;
        let start = l.find("listeners=[").expect("listeners in the startup line") + "listeners=[".len();
        let end = l[start..].find(']').unwrap() + start;
        let addr = l[start..end].split(',').next().unwrap().trim().parse().expect("listen address");
        // Signals sent before the handlers exist would kill the process: wait until the kernel
        // reports SIGHUP and SIGTERM as caught.
        let pid = self.child.id();
        let caught = move || {
            let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
            let mask = status.lines().find_map(|l| l.strip_prefix("SigCgt:")).map(|m| u64::from_str_radix(m.trim(), 16).unwrap_or(0)).unwrap_or(0);
            let bit = |sig: i32| 1u64 << (sig - 1);
            mask & bit(libc::SIGHUP) != 0 && mask & bit(libc::SIGTERM) != 0
        };
        eventually("signal handlers installed", caught).await;
        addr
    }

    #[allow(unsafe_code)]
    pub(crate) fn signal(&self, sig: i32) {
        // SAFETY: kill(2) on our own child's pid.
        let rc = unsafe { libc::kill(self.child.id() as libc::pid_t, sig) };
        assert_eq!(rc, 0, "kill failed");
    }

    pub(crate) async fn exit(&mut self) -> ExitStatus {
        let deadline = Instant::now() + LIMIT;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return status;
            }
            assert!(Instant::now() < deadline, "palisade did not exit; log:\n{}", self.seen.join("\n"));
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

impl Drop for Bin {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn run_config(target: &str, shutdown_timeout: &str) -> String {
    format!("workers: 1\nlisten:\n  - addr: 127.0.0.1:0\nserver:\n  shutdown_timeout: {shutdown_timeout}\n{}", one_app(target))
}

#[tokio::test]
async fn version() {
    let out = command().arg("--version").output().expect("run palisade");
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), format!("palisade {}", env!("CARGO_PKG_VERSION")));
}

/// A command that prints ends quietly when its reader goes away (`palisade detect eval ... |
/// head`): killed by SIGPIPE as other Unix tools are, never a panic message.
#[test]
fn a_closed_pipe_ends_a_printing_command_without_a_panic() {
    use std::os::unix::process::ExitStatusExt;
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../palisade-detect/data/requests/benign.jsonl.gz");
    let mut child = command().args(["detect", "eval"]).arg(&corpus).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("run palisade");
    drop(child.stdout.take());
    let out = child.wait_with_output().expect("wait");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(out.status.signal(), Some(libc::SIGPIPE), "{:?} {stderr}", out.status);
}

#[tokio::test]
async fn check_reports_every_problem_with_its_location() {
    let dir = TempDir::new();
    let good = dir.write("good.yaml", run_config("http://127.0.0.1:9", "1s"));
    let out = command().args(["check", "-c"]).arg(&good).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("OK (1 app(s), 1 listener(s))"), "{stdout}");

    let broken = dir.write(
        "broken.yaml",
        "workers: 1\nlisten:\n  - addr: 127.0.0.1:0\nserver:\n  header_read_timeout: soon\napps:\n  - name: a\n    upstream: ftp://x\n    bogus: 1\n",
    );
    let lines = check_errors(&broken, 3);
    let paths: Vec<&str> = lines.iter().map(|(_, _, p, _)| p.as_str()).collect();
    assert!(paths.contains(&"server.header_read_timeout"), "{lines:?}");
    assert!(paths.contains(&"apps[0].upstream"), "{lines:?}");
    assert!(paths.contains(&"apps[0].bogus"), "{lines:?}");
    let timeout = lines.iter().find(|l| l.2 == "server.header_read_timeout").unwrap();
    assert_eq!(timeout.0, 5, "line of header_read_timeout");

    // Problems found while building (an unreadable certificate) have locations too.
    let tls = dir.write(
        "tls.yaml",
        "workers: 1\nlisten:\n  - addr: 127.0.0.1:0\n    tls:\n      cert: nope.pem\n      key: nope.key\napps:\n  - name: a\n    upstream: http://127.0.0.1:9\n",
    );
    let lines = check_errors(&tls, 1);
    assert_eq!(lines[0].2, "listen[0].tls.cert", "{lines:?}");
    assert_eq!(lines[0].0, 5);
    assert!(lines[0].3.contains("nope.pem"), "{lines:?}");
}

/// `check` reads an app's gRPC descriptor set: what it holds, or the reason it is refused, with
/// the key's line.
#[tokio::test]
async fn check_reads_a_grpc_descriptor_set() {
    let dir = TempDir::new();
    let set = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/e2e/grpc_echo.protoset");
    let conf = |file: &Path| {
        format!(
            "workers: 1\nlisten:\n  - addr: 127.0.0.1:0\napps:\n  - name: echo\n    upstream: h2c://127.0.0.1:9\n    grpc:\n      descriptor_set: {}\n",
            file.display()
        )
    };
    let good = dir.write("good.yaml", conf(&set));
    let out = command().args(["check", "-c"]).arg(&good).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("app `echo`: gRPC descriptor set") && stdout.contains("3 message type(s), 2 method(s)"), "{stdout}");
    let bad = dir.write("bad.yaml", conf(&set.with_extension("proto")));
    let lines = check_errors(&bad, 1);
    assert_eq!((lines[0].0, lines[0].2.as_str()), (8, "apps[0].grpc.descriptor_set"), "{lines:?}");
    assert!(lines[0].3.contains("not a binary FileDescriptorSet"), "{lines:?}");
}

/// Run `check` on a broken file: exit 1, `count` error lines `file:line:col: path: message`,
/// then a summary line. Returns (line, col, path, message) of each.
fn check_errors(file: &Path, count: usize) -> Vec<(usize, usize, String, String)> {
    let out = command().args(["check", "-c"]).arg(file).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let name = file.display().to_string();
    let all: Vec<&str> = stdout.lines().collect();
    assert_eq!(all.last().copied(), Some(format!("{name}: {count} problem(s)").as_str()), "{stdout}");
    let errors = &all[..all.len() - 1];
    assert_eq!(errors.len(), count, "{stdout}");
    errors
        .iter()
        .map(|l| {
            let rest = l.strip_prefix(&format!("{name}:")).unwrap_or_else(|| panic!("line does not start with the file: {l}"));
            let mut parts = rest.splitn(4, ':');
            let line: usize = parts.next().unwrap().parse().unwrap_or_else(|_| panic!("no line number: {l}"));
            let col: usize = parts.next().unwrap().parse().unwrap_or_else(|_| panic!("no column: {l}"));
            assert!(line > 0 && col > 0, "{l}");
            let path = parts.next().unwrap_or_else(|| panic!("no key path: {l}")).trim().to_string();
            let message = parts.next().unwrap_or_else(|| panic!("no message: {l}")).trim().to_string();
            assert!(!path.is_empty() && !message.is_empty(), "{l}");
            (line, col, path, message)
        })
        .collect()
}

#[tokio::test]
async fn sighup_reloads_and_a_broken_file_keeps_the_old_configuration() {
    let a = Upstream::tcp(reply("A")).await;
    let b = Upstream::tcp(reply("B")).await;
    let dir = TempDir::new();
    let config = dir.write("palisade.yaml", run_config(&a.url(), "2s"));
    let mut bin = Bin::run(&config);
    let addr = bin.started().await;
    assert_eq!(get(addr, "api.test", "/").await.text(), "A");

    dir.write("palisade.yaml", run_config(&b.url(), "2s"));
    bin.signal(libc::SIGHUP);
    bin.line("configuration reloaded").await;
    assert_eq!(get(addr, "api.test", "/").await.text(), "B");

    // Not YAML at all, then valid YAML with an invalid value.
    for broken in ["apps: [\n  - name: {\n", &run_config("ftp://nowhere", "2s")] {
        dir.write("palisade.yaml", broken);
        bin.signal(libc::SIGHUP);
        bin.line("reload rejected").await;
        assert_eq!(get(addr, "api.test", "/").await.text(), "B", "the previous configuration keeps serving");
    }

    bin.signal(libc::SIGTERM);
    let status = bin.exit().await;
    assert!(status.success(), "{status:?}");
}

#[tokio::test]
async fn sigterm_drains_in_flight_requests_and_exits_0() {
    let gate = Arc::new(Notify::new());
    let g = gate.clone();
    let mut up = Upstream::tcp(handler(move |_| vec![Step::Wait(g.clone()), Step::Write(ok("drained"))])).await;
    let dir = TempDir::new();
    let config = dir.write("palisade.yaml", run_config(&up.url(), "5s"));
    let mut bin = Bin::run(&config);
    let addr = bin.started().await;

    let mut held = Conn::connect(addr).await;
    held.send("GET /slow HTTP/1.1\r\nHost: api.test\r\n\r\n").await;
    assert_eq!(up.next_req().await.path(), "/slow");
    bin.signal(libc::SIGTERM);
    bin.line("shutting down").await;
    assert!(bin.child.try_wait().unwrap().is_none(), "exits only after draining");
    gate.notify_one();
    let r = held.response().await;
    assert_eq!(r.status, 200);
    assert_eq!(r.text(), "drained");
    let status = bin.exit().await;
    assert_eq!(status.code(), Some(0));
    assert!(w!(tokio::net::TcpStream::connect(addr)).is_err(), "no longer listening");
}

#[test]
fn check_lists_spec_problems_in_the_spec_file_and_warnings() {
    let dir = TempDir::new();
    dir.write(
        "api.yaml",
        "openapi: 3.0.3\ninfo: {title: x, version: '1'}\npaths:\n  /a/{id}:\n    get:\n      responses:\n        '200': {description: ok}\n    callbacks: {}\n",
    );
    let conf = dir.write(
        "c.yaml",
        "listen:\n  - addr: 127.0.0.1:0\napps:\n  - name: a\n    upstream: http://127.0.0.1:9\n    openapi: {spec: api.yaml, request: blok}\n",
    );
    let out = command().args(["check", "-c"]).arg(&conf).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("c.yaml:6:") && stdout.contains("apps[0].openapi.request"), "{stdout}");

    let conf = dir.write("c.yaml", "listen:\n  - addr: 127.0.0.1:0\napps:\n  - name: a\n    upstream: http://127.0.0.1:9\n    openapi: api.yaml\n");
    let out = command().args(["check", "-c"]).arg(&conf).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    // The template parameter {id} is not declared: reported in the spec, with its pointer.
    assert!(stdout.lines().any(|l| l.contains("api.yaml:") && l.contains("#/paths/~1a~1{id}") && l.contains("id")), "{stdout}");
}

#[test]
fn openapi_validate_judges_a_request_offline() {
    let dir = TempDir::new();
    let spec = dir.write(
        "api.yaml",
        "openapi: 3.1.0\ninfo: {title: x, version: '1'}\npaths:\n  /items:\n    get:\n      parameters:\n        - {name: limit, in: query, schema: {type: integer, maximum: 10}}\n      responses:\n        '200':\n          description: ok\n          content:\n            application/json:\n              schema: {type: array}\n",
    );
    let good = dir.write("good.http", "GET /items?limit=3 HTTP/1.1\nHost: x\n\n");
    let out = command().args(["openapi", "validate"]).arg(&spec).arg("--request").arg(&good).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("allow"));

    let bad = dir.write("bad.http", "GET /items?limit=30 HTTP/1.1\nHost: x\n\n");
    let out = command().args(["openapi", "validate"]).arg(&spec).arg("--request").arg(&bad).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(2), "{stdout}");
    assert!(stdout.contains("openapi.parameter_invalid at query.limit"), "{stdout}");

    let resp = dir.write("resp.http", "HTTP/1.1 200 OK\nContent-Type: application/json\n\n{\"not\":\"an array\"}");
    let out = command().args(["openapi", "validate"]).arg(&spec).arg("--request").arg(&good).arg("--response").arg(&resp).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(2), "{stdout}");
    assert!(stdout.contains("openapi.response_body_invalid"), "{stdout}");

    let out = command().args(["openapi", "validate"]).arg(&spec).arg("--request").arg(dir.join("missing.http")).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("missing.http"));
}

#[test]
fn openapi_lint_reports_warnings_and_errors() {
    let dir = TempDir::new();
    let spec = dir.write(
        "api.yaml",
        "openapi: 3.0.3\ninfo: {title: x, version: '1'}\npaths:\n  /a:\n    get:\n      responses: {'200': {description: ok}}\n      callbacks: {}\n",
    );
    let out = command().args(["openapi", "lint"]).arg(&spec).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("callbacks") && stdout.contains("1 warning(s)"), "{stdout}");

    let swagger = dir.write("old.yaml", "swagger: '2.0'\ninfo: {title: x, version: '1'}\npaths: {}\n");
    let out = command().args(["openapi", "lint"]).arg(&swagger).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("2.0"), "{stdout}");
}

#[test]
fn openapi_lint_and_validate_never_reach_the_network_for_a_local_spec() {
    // A listener that must never see a connection: the spec's example data and a remote
    // `$ref` both point at it.
    let trap = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    trap.set_nonblocking(true).unwrap();
    let url = format!("http://{}/x.json", trap.local_addr().unwrap());
    let dir = TempDir::new();
    let spec = dir.write(
        "api.json",
        format!(
            r#"{{"openapi": "3.1.0", "info": {{"title": "\ud83d\udc4d", "version": "1"}},
  "paths": {{"/m": {{"post": {{
    "operationId": "send",
    "requestBody": {{"content": {{"application/json": {{
      "schema": {{"type": "object", "properties": {{"max": {{"type": "integer", "nullable": true}}}}}},
      "examples": {{"a": {{"value": {{"$ref": "{url}"}}}}}}}}}}}},
    "responses": {{"200": {{"description": "ok"}}}}}}}},
  "/n": {{"get": {{"operationId": "send", "responses": {{"200": {{"description": "ok"}}}}}}}}}}}}"#
        ),
    );
    let out = command().args(["openapi", "lint"]).arg(&spec).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("duplicate operationId \"send\"") && stdout.contains("nullable is an OpenAPI 3.0 keyword"), "{stdout}");
    let req = dir.write("req.http", "POST /m HTTP/1.1\nHost: x\nContent-Type: application/json\n\n{\"max\": null}");
    let out = command().args(["openapi", "validate"]).arg(&spec).arg("--request").arg(&req).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "nullable honoured in 3.1 by default: {}", String::from_utf8_lossy(&out.stdout));

    let remote = dir.write("remote.yaml", format!("openapi: 3.1.0\ninfo: {{title: x, version: '1'}}\npaths:\n  /a: {{$ref: '{url}'}}\n"));
    let out = command().args(["openapi", "lint"]).arg(&remote).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("remote.yaml:4:") && stdout.contains("#/paths/~1a/$ref") && stdout.contains("does not use the network"), "{stdout}");
    assert!(matches!(trap.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock), "a connection was made");

    let out = command().args(["openapi", "lint", "--offline", &url]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--offline"));
    assert!(matches!(trap.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock), "a connection was made");
}

#[tokio::test]
async fn the_demo_runs_its_bundled_example_with_the_openapi_spec() {
    let mut bin = Bin::spawn(&["--log-format", "text", "demo", "--listen", "127.0.0.1:0", "--admin", "127.0.0.1:0"]);
    let addr = bin.started().await;
    assert_eq!(get(addr, "localhost", "/api/products").await.status, 200);
    assert_problem(&get(addr, "localhost", "/api/products/abc").await, 403, "openapi.parameter_invalid");
    assert_problem(&get(addr, "localhost", "/admin").await, 403, "openapi.path_not_found");
    bin.signal(libc::SIGTERM);
    assert!(bin.exit().await.success());
}

#[tokio::test]
async fn kill_9_during_a_flood_keeps_every_event_acknowledged_as_written() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let up = Upstream::tcp(reply("ok")).await;
    let dir = TempDir::new();
    let admin_port = closed_port();
    let admin: SocketAddr = ([127, 0, 0, 1], admin_port).into();
    let cfg = dir.write(
        "palisade.yaml",
        format!("workers: 1\nlisten:\n  - addr: 127.0.0.1:0\nadmin:\n  addr: {admin}\nevents: sqlite:events.db\n{}", one_app(&up.url())),
    );
    let mut bin = Bin::run(&cfg);
    let addr = bin.started().await;
    // Attack traffic from 4 clients until the process dies (bounded in count). Every
    // connection comes from its own loopback address (127.x.y.z), so that events do not share
    // an aggregation key (app, client IP, reason): identical events from one address would be
    // folded into one held row, and on a fast machine the whole flood could fold before the
    // first row is stored.
    let stop = Arc::new(AtomicBool::new(false));
    let mut clients = Vec::new();
    for c in 0..4u32 {
        let stop = stop.clone();
        clients.push(tokio::spawn(async move {
            for j in 0..20_000u32 {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                let n = c * 20_000 + j;
                let ip = std::net::Ipv4Addr::new(127, 1 + (n / 62_500) as u8, ((n / 250) % 250) as u8, (n % 250 + 1) as u8);
                let Ok(sock) = tokio::net::TcpSocket::new_v4() else { break };
                if sock.bind(SocketAddr::new(ip.into(), 0)).is_err() {
                    break;
                }
                let Ok(Ok(mut s)) = tokio::time::timeout(LIMIT, sock.connect(addr)).await else { break };
                let req = "GET /search?q=%27%20or%201%3D1-- HTTP/1.1\r\nHost: api.test\r\nConnection: close\r\n\r\n";
                if s.write_all(req.as_bytes()).await.is_err() {
                    break;
                }
                let mut buf = Vec::new();
                if !matches!(tokio::time::timeout(LIMIT, s.read_to_end(&mut buf)).await, Ok(Ok(_))) {
                    break;
                }
            }
        }));
    }
    // Wait until a good number of events are acknowledged as stored, then kill -9 mid-flood.
    let deadline = Instant::now() + LIMIT;
    let written = loop {
        let m = get(admin, "admin", "/metrics").await.text();
        let written = m.lines().find_map(|l| l.strip_prefix("palisade_events_written_total ")).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        if written >= 300 {
            break written;
        }
        assert!(Instant::now() < deadline, "events were not written: {m}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    bin.signal(libc::SIGKILL);
    let status = bin.exit().await;
    assert!(!status.success());
    stop.store(true, Ordering::Relaxed);
    for c in clients {
        let _ = w!(c);
    }
    // The database opens cleanly (WAL recovery) and holds at least every acknowledged row.
    let conn = palisade_events::sqlite::open_rw(&dir.join("events.db")).expect("reopen after kill -9");
    let check: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
    assert_eq!(check, "ok");
    let rows: i64 = conn.query_row("SELECT COUNT(*) FROM events", [], |r| r.get(0)).unwrap();
    assert!(rows as u64 >= written, "{rows} rows, {written} acknowledged");
}

#[test]
fn detect_eval_prints_rates_computed_from_the_corpus() {
    let dir = TempDir::new();
    let corpus = dir.write(
        "c.jsonl",
        "{\"label\": \"attack\", \"category\": \"sqli\", \"value\": \"1' UNION SELECT password FROM users--\"}\n\
         {\"label\": \"attack\", \"category\": \"xss\", \"value\": \"<img src=x onerror=alert(1)>\"}\n\
         {\"label\": \"attack\", \"category\": \"xss\", \"value\": \"a harmless sentence\"}\n\
         {\"label\": \"benign\", \"category\": \"benign\", \"value\": \"It's a nice day; see you at 5.\"}\n",
    );
    let out = command().args(["detect", "eval"]).arg(&corpus).args(["--locations", "query,json"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    // Two of three attacks found in each location, the benign value passes.
    let row = |name: &str| stdout.lines().find(|l| l.starts_with(name)).map(|l| l.split_whitespace().skip(1).take(2).collect::<Vec<_>>());
    assert_eq!(row("query "), Some(vec!["66.67%", "0.00%"]), "{stdout}");
    assert_eq!(row("json "), Some(vec!["66.67%", "0.00%"]), "{stdout}");
    assert!(stdout.contains("6 attack and 2 benign placements"), "{stdout}");
    assert!(!stdout.contains("cookie"), "{stdout}");

    let out = command().args(["detect", "eval"]).arg(&corpus).args(["--locations", "body"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown location `body`"));
    let bad = dir.write("bad.jsonl", "{\"label\": \"maybe\", \"value\": \"x\"}\n");
    let out = command().args(["detect", "eval"]).arg(&bad).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("line 1"));
}

#[test]
fn detect_eval_over_raw_requests_from_a_directory_and_a_gzip_file() {
    let dir = TempDir::new();
    let root = dir.join("corpus");
    let files = [
        ("attack/sqli/query/1.http", "GET /items?id=1%27%20UNION%20SELECT%20password%20FROM%20users-- HTTP/1.1\r\nHost: a\r\n\r\n"),
        ("attack/xss/json/2.http", "POST /comments HTTP/1.1\nHost: a\nContent-Type: application/json\n\n{\"body\":\"<img src=x onerror=alert(1)>\"}"),
        ("attack/made-up/query/3.http", "GET /items?sort=name HTTP/1.1\r\nHost: a\r\n\r\n"),
        ("benign/editor/json/4.http", "POST /pens/1 HTTP/1.1\nHost: a\nContent-Type: application/json\n\n{\"code\":\"<img src=x onerror=alert(1)>\"}"),
        ("benign/search/query/5.http", "GET /search?q=weather+tomorrow HTTP/1.1\r\nHost: a\r\n\r\n"),
        // A search that is a working payload whatever the intent: counted apart.
        ("ambiguous/search/query/7.http", "GET /search?q=what+does+%27+or+1%3D1+--+do HTTP/1.1\r\nHost: a\r\n\r\n"),
    ];
    for (name, text) in files {
        let p = root.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, text).unwrap();
    }
    let out = command().args(["detect", "eval"]).arg(&root).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("attacks detected: 2/3 (66.67%)"), "{stdout}");
    assert!(stdout.contains("benign flagged (false positives): 1/2 (50.00%)"), "{stdout}");
    assert!(stdout.contains("ambiguous (working payloads sent with no ill intent; not counted above): 1/1 flagged"), "{stdout}");
    // The false positive is listed with its detector, location and fragment; the miss with its
    // request line.
    assert!(stdout.contains("benign/editor/json/4.http [editor]"), "{stdout}");
    assert!(stdout.contains("xss confidence") && stdout.contains("at body/code"), "{stdout}");
    assert!(stdout.contains("attack/made-up/query/3.http [made-up] at query: GET /items?sort=name"), "{stdout}");

    // The app's settings from a configuration: an exclusion for the editor's code field.
    let conf = dir.write(
        "c.yaml",
        "listen:\n  - addr: 127.0.0.1:0\napps:\n  - name: api\n    upstream: http://127.0.0.1:9\n    detection:\n      level: strict\n      exclusions: [{detector: xss, location: body/code}]\n",
    );
    let out = command().args(["detect", "eval"]).arg(&root).arg("--config").arg(&conf).args(["--app", "api", "--json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["level"], "strict");
    assert_eq!(v["benign"]["overall"]["flagged"], 0, "{v}");
    assert_eq!(v["attack"]["by_class"]["sqli"]["flagged"], 1, "{v}");
    assert_eq!(v["missed"][0]["class"], "made-up", "{v}");
    let out = command().args(["detect", "eval"]).arg(&root).arg("--config").arg(&conf).args(["--app", "nope"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no app `nope` (apps: api)"));

    // A gzip-compressed JSON-lines corpus, binary requests in `request_base64`.
    use std::io::Write as _;
    let lines = "{\"label\":\"attack\",\"class\":\"sqli\",\"location\":\"query\",\"request\":\"GET /?id=1%27%20OR%201%3D1-- HTTP/1.1\\r\\n\\r\\n\"}\n\
                 {\"label\":\"benign\",\"class\":\"binary\",\"request_base64\":\"UE9TVCAvdXAgSFRUUC8xLjENCkNvbnRlbnQtVHlwZTogYXBwbGljYXRpb24vb2N0ZXQtc3RyZWFtDQoNCv/+ACc8\"}\n";
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(lines.as_bytes()).unwrap();
    let file = dir.write("c.jsonl.gz", gz.finish().unwrap());
    let out = command().args(["detect", "eval"]).arg(&file).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("attacks detected: 1/1") && stdout.contains("benign flagged (false positives): 0/1"), "{stdout}");

    // A directory not laid out by label, and a request that does not parse.
    std::fs::write(root.join("stray.http"), "GET / HTTP/1.1\n\n").unwrap();
    let out = command().args(["detect", "eval"]).arg(&root).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("LABEL/CLASS"));
    std::fs::remove_file(root.join("stray.http")).unwrap();
    std::fs::write(root.join("benign/search/query/6.http"), "GET nopath HTTP/1.1\n\n").unwrap();
    let out = command().args(["detect", "eval"]).arg(&root).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("6.http: line 1: request target must start with `/`"), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn detect_explain_shows_layers_and_findings() {
    let out = command().args(["detect", "explain", "%27%20OR%201%3D1--", "--location", "cookie"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(2), "{stdout}");
    assert!(stdout.contains("' OR 1=1--") && stdout.contains("sqli category=sqli"), "{stdout}");
    assert!(stdout.contains("location=cookie.session"), "{stdout}");
    let out = command().args(["detect", "explain", "hello there", "--location", "json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("in json: none"));
    let out = command().args(["detect", "explain", "x", "--location", "nowhere"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
}

/// A loopback JWKS server for `check`: `/good.json` is a JWK set, `/missing.json` a 404,
/// `/garbage.json` HTML, `/nokey.json` a set whose only key is unusable. Counts the requests
/// per path.
struct JwksFiles {
    server: ThreadServer,
    hits: Arc<std::sync::Mutex<std::collections::HashMap<String, usize>>>,
}

impl JwksFiles {
    fn start() -> JwksFiles {
        let good = serde_json::json!({"keys": [palisade_access::testing::TestKey::hmac(palisade_access::jwt::Alg::HS256, b"check-key-check-key-check-key-32").jwk("k1")]}).to_string();
        let hits = Arc::new(std::sync::Mutex::new(std::collections::HashMap::new()));
        let counted = hits.clone();
        let server = ThreadServer::start(move |path| {
            *counted.lock().unwrap().entry(path.to_string()).or_insert(0) += 1;
            Some(match path {
                "/good.json" => (200, good.clone().into_bytes()),
                "/garbage.json" => (200, b"<html>oops</html>".to_vec()),
                "/nokey.json" => (200, br#"{"keys": [{"kty": "oct", "kid": "x"}]}"#.to_vec()),
                _ => (404, b"not found".to_vec()),
            })
        });
        JwksFiles { server, hits }
    }

    fn hits(&self, path: &str) -> usize {
        self.hits.lock().unwrap().get(path).copied().unwrap_or(0)
    }
}

/// A configuration whose apps each name one JWKS URL (`jwks_url` on line 10 for the first app).
fn jwks_config(urls: &[String]) -> String {
    let mut s = "workers: 1\nlisten:\n  - addr: 127.0.0.1:0\napps:\n".to_string();
    for (i, url) in urls.iter().enumerate() {
        s.push_str(&format!(
            "  - name: a{i}\n    upstream: http://127.0.0.1:9\n    access:\n      jwt:\n        algorithms: [HS256]\n        jwks_url: {url}\n    path_prefix: /a{i}\n"
        ));
    }
    s
}

#[test]
fn check_fetches_each_jwks_url_once_and_says_why_one_is_unusable() {
    let server = JwksFiles::start();
    let dir = TempDir::new();
    let url = |p: &str| format!("{}/{p}", server.server.url);

    // A good set named by two apps: fetched once, exit 0.
    let good = dir.write("good.yaml", jwks_config(&[url("good.json"), url("good.json")]));
    let out = command().args(["check", "-c"]).arg(&good).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("OK (2 app(s), 1 listener(s))"), "{stdout}");
    assert_eq!(server.hits("/good.json"), 1, "one fetch per URL per check");

    // Each unusable URL: exit 1, the key's file:line:col and path, the URL and the reason.
    let unreachable = format!("http://127.0.0.1:{}/jwks.json", closed_port());
    for (target, reason) in
        [(url("missing.json"), "HTTP status 404"), (url("garbage.json"), "not JSON"), (url("nokey.json"), "no usable key"), (unreachable.clone(), "connect")]
    {
        let conf = dir.write("bad.yaml", jwks_config(std::slice::from_ref(&target)));
        let lines = check_errors(&conf, 1);
        let (line, col, path, message) = &lines[0];
        assert_eq!((*line, *col, path.as_str()), (10, 19, "apps[0].access.jwt.jwks_url"), "{lines:?}");
        assert!(message.contains(&target) && message.contains(reason), "{target}: {message}");
    }
    assert_eq!(server.hits("/missing.json"), 1);

    // --offline: no fetch, a note, exit 0.
    let conf = dir.write("offline.yaml", jwks_config(&[url("missing.json"), unreachable]));
    let out = command().args(["check", "--offline", "-c"]).arg(&conf).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("apps[0].access.jwt.jwks_url") && stdout.contains("not fetched (--offline)"), "{stdout}");
    assert_eq!(server.hits("/missing.json"), 1, "--offline fetched nothing");
}

/// The allocator does not ask the kernel for transparent huge pages (mimalloc's `no_thp`):
/// with them, the first small allocations of each thread pinned a 2 MiB page, 12 of the 22 MiB
/// of idle RSS with four threads. `hg` in a mapping's `VmFlags` is what `madvise(MADV_HUGEPAGE)`
/// leaves, whatever the system's THP mode.
#[tokio::test]
async fn the_heap_is_not_madvised_into_huge_pages() {
    let up = Upstream::tcp(reply("ok")).await;
    let dir = TempDir::new();
    let config = dir.write("palisade.yaml", run_config(&up.url(), "1s"));
    let mut bin = Bin::run(&config);
    let addr = bin.started().await;
    assert_eq!(get(addr, "api.test", "/").await.text(), "ok");
    let smaps = std::fs::read_to_string(format!("/proc/{}/smaps", bin.child.id())).expect("read smaps");
    assert!(smaps.contains("VmFlags:"), "smaps without VmFlags");
    let mut mapping = "";
    let mut huge = Vec::new();
    for l in smaps.lines() {
        if l.split_whitespace().next().is_some_and(|range| range.contains('-') && !range.ends_with(':')) {
            mapping = l;
        } else if l.starts_with("VmFlags:") && l.split_whitespace().any(|f| f == "hg") {
            huge.push(mapping);
        }
    }
    assert!(huge.is_empty(), "mappings madvised for huge pages: {huge:?}");
}

impl Bin {
    fn run_with_env(config: &Path, env: &[(&str, &str)]) -> Bin {
        let mut cmd = command();
        cmd.envs(env.iter().copied());
        let mut child = cmd
            .args(["--log-level", "info", "--log-format", "text", "run", "-c", config.to_str().unwrap()])
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
}

/// A request with one header of `size` bytes.
fn big_header_request(size: usize) -> Vec<u8> {
    format!("GET / HTTP/1.1\r\nHost: api.test\r\nX-Big: {}\r\nConnection: close\r\n\r\n", "a".repeat(size)).into_bytes()
}

#[tokio::test]
async fn an_environment_override_applies_when_the_file_has_no_such_section() {
    let up = Upstream::tcp(reply("up")).await;
    let dir = TempDir::new();
    // No `server:` section at all.
    let config = dir.write("palisade.yaml", format!("workers: 1\nlisten:\n  - addr: 127.0.0.1:0\n{}", one_app(&up.url())));
    // Without the variable, the default (16KiB) lets a 3 KB header through.
    let mut plain = Bin::run(&config);
    let addr = plain.started().await;
    assert_eq!(raw(addr, big_header_request(3000)).await.status, 200);
    drop(plain);
    // The documented example: 2KiB makes the same request a 431.
    let mut bin = Bin::run_with_env(&config, &[("PALISADE_SERVER_MAX_HEADER_SIZE", "2KiB")]);
    let addr = bin.started().await;
    assert_problem(&raw(addr, big_header_request(3000)).await, 431, "http.headers_too_large");
    assert_eq!(raw(addr, big_header_request(1000)).await.status, 200);
}

#[tokio::test]
async fn an_unknown_palisade_variable_fails_check_and_start() {
    let dir = TempDir::new();
    let config = dir.write("palisade.yaml", run_config("http://127.0.0.1:9", "1s"));
    let out = command().env("PALISADE_ADMN_ADDR", "127.0.0.1:0").args(["check", "-c"]).arg(&config).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("(from environment variable PALISADE_ADMN_ADDR): `PALISADE_ADMN_ADDR` does not name a setting (did you mean `PALISADE_ADMIN_ADDR`?)"),
        "{stdout}"
    );
    let mut bin = Bin::run_with_env(&config, &[("PALISADE_ADMN_ADDR", "127.0.0.1:0")]);
    let status = bin.exit().await;
    assert_eq!(status.code(), Some(1));
    // `PALISADE_CONFIG` (the command line's) is not a setting.
    let out = command().env("PALISADE_CONFIG", &config).args(["check", "-c"]).arg(&config).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
}

#[test]
fn check_lists_the_problems_of_every_section_at_once() {
    let dir = TempDir::new();
    // A typo in the core settings, one in a stage section, a missing spec file, a bad rule.
    let config = dir.write(
        "many.yaml",
        "workers: 1\nlisten:\n  - addr: 127.0.0.1:0\napps:\n  - name: a\n    upstream: http://127.0.0.1:9\n    limits:\n      max_body_sise: 1MiB\n    detection:\n      levle: strict\n  - name: b\n    path_prefix: /b\n    upstream: http://127.0.0.1:9\n    openapi:\n      spec: missing.yaml\n",
    );
    let lines = check_errors(&config, 3);
    let got: Vec<(usize, &str)> = lines.iter().map(|(l, _, p, _)| (*l, p.as_str())).collect();
    assert_eq!(got, vec![(8, "apps[0].limits.max_body_sise"), (10, "apps[0].detection.levle"), (15, "apps[1].openapi.spec")], "{lines:?}");
    assert!(lines[2].3.contains("missing.yaml") && lines[2].3.contains("No such file"), "{lines:?}");
}

#[test]
fn check_refuses_endless_and_binary_files_at_once() {
    let dir = TempDir::new();
    let started = Instant::now();
    if Path::new("/dev/zero").exists() {
        let out = command().args(["check", "-c", "/dev/zero"]).output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(1), "{stdout}");
        assert!(stdout.starts_with("/dev/zero:1:1: control character 0x00"), "{stdout}");
        // A spec that never ends, named by the configuration.
        let config = dir.write("zero-spec.yaml", format!("{}    openapi:\n      spec: /dev/zero\n", run_config("http://127.0.0.1:9", "1s")));
        let out = command().args(["check", "-c"]).arg(&config).output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.starts_with("/dev/zero:1:1: control character 0x00"), "{stdout}");
    }
    // A file over the limit stops at the limit, whatever it holds.
    let big = dir.write("big.yaml", "# comment\n".repeat(3_400_000));
    let out = command().args(["check", "-c"]).arg(&big).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("larger than the limit of 32 MiB"), "{stdout}");
    // Invalid UTF-8, at its position.
    let bad = dir.write("bad.yaml", b"workers: 1\nlisten:\n  - addr: \"127.0.0.1:\xe9\"\n");
    let lines = check_errors_raw(&bad);
    assert!(lines.starts_with(&format!("{}:3:22: invalid UTF-8", bad.display())), "{lines}");
    assert!(started.elapsed() < LIMIT);
}

fn check_errors_raw(file: &Path) -> String {
    let out = command().args(["check", "-c"]).arg(file).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    String::from_utf8_lossy(&out.stdout).to_string()
}

#[test]
fn check_says_what_happens_to_large_bodies() {
    let dir = TempDir::new();
    let config = dir.write(
        "bodies.yaml",
        "workers: 1\nlisten:\n  - addr: 127.0.0.1:0\napps:\n  - name: plain\n    upstream: http://127.0.0.1:9\n  - name: big\n    path_prefix: /big\n    upstream: http://127.0.0.1:9\n    limits: {max_body_size: 10MiB}\n  - name: streamed\n    path_prefix: /s\n    upstream: http://127.0.0.1:9\n    limits: {max_body_size: 100MiB, oversize: stream}\n",
    );
    let out = command().args(["check", "-c"]).arg(&config).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    for line in [
        "app `plain`: bodies inspected up to 1 MiB; over 1 MiB: 413",
        "app `big`: bodies inspected up to 10 MiB; over 10 MiB: 413",
        "app `streamed`: bodies inspected up to 1 MiB; over 1 MiB: the rest streamed uninspected up to 100 MiB; over 100 MiB: 413",
    ] {
        assert!(stdout.lines().any(|l| l == line), "missing {line:?} in\n{stdout}");
    }
}
