//! Security events, metrics and the admin API in the running proxy: real blocked requests land
//! in SQLite, in `/api/events` and `/api/stats`, and in the `/metrics` counters; secrets are
//! redacted; the admin token is enforced; `POST /api/reload` re-reads the file; the CLI reads
//! the database and the API.

use std::net::SocketAddr;
use std::process::{Command, Stdio};

use palisade_events::query::{Filter, Reader};

use crate::common::*;

const SQLI: &str = "/search?q=%27%20or%201%3D1--";

fn config(target: &str, admin_extra: &str, events: &str, app_extra: &str) -> String {
    format!(
        "workers: 1\nlisten:\n  - addr: 127.0.0.1:0\nadmin:\n  addr: 127.0.0.1:0\n{admin_extra}server:\n  shutdown_timeout: 500ms\n{events}{}{app_extra}",
        one_app(target)
    )
}

fn admin(p: &Proxy) -> SocketAddr {
    p.running().admin_addr.expect("admin address")
}

/// Wait until everything produced so far is stored.
fn flush(p: &Proxy) {
    let shared = p.running().shared();
    let pipeline = shared.events.as_ref().expect("events are on");
    assert!(pipeline.flush(LIMIT), "events were not stored within {LIMIT:?}");
}

async fn admin_get(addr: SocketAddr, path: &str, token: Option<&str>) -> Resp {
    let auth = token.map(|t| format!("Authorization: Bearer {t}\r\n")).unwrap_or_default();
    raw(addr, format!("GET {path} HTTP/1.1\r\nHost: admin\r\n{auth}Connection: close\r\n\r\n")).await
}

fn metric(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|l| l.strip_prefix(series).and_then(|rest| rest.strip_prefix(' ')).and_then(|v| v.parse().ok()))
}

#[tokio::test]
async fn blocked_requests_appear_in_sqlite_the_api_and_the_metrics() {
    let up = Upstream::tcp(reply("ok")).await;
    let proxy = Proxy::start(&config(&up.url(), "", "events: sqlite:ev/events.db\n", ""));
    let r = get(proxy.addr, "api.test", SQLI).await;
    let body = assert_problem(&r, 403, "detect.sqli");
    let rid = body["request_id"].as_str().unwrap().to_string();
    assert_eq!(get(proxy.addr, "api.test", "/search?q=shoes").await.status, 200);
    flush(&proxy);

    // SQLite (relative paths are relative to the configuration's directory).
    let db = proxy.dir.join("ev/events.db");
    let page = Reader::open(&db).unwrap().events(&Filter::default()).unwrap();
    assert_eq!(page.events.len(), 1, "{:?}", page.events);
    let e = &page.events[0];
    assert_eq!((e.request_id.as_str(), e.reason.as_str(), e.stage.as_str(), e.status), (rid.as_str(), "detect.sqli", "detection", 403));
    assert_eq!((e.app.as_str(), e.client_ip.as_str(), e.method.as_str(), e.path.as_str(), e.host.as_str()), ("app", "127.0.0.1", "GET", "/search", "api.test"));
    assert_eq!(e.category.as_deref(), Some("sqli"));
    assert_eq!(e.location.as_deref(), Some("query.q"));
    assert!(e.fragment.as_deref().is_some_and(|f| f.contains("or 1=1")), "{e:?}");
    assert_eq!(e.upstream_status, None);

    // The API: filters and stats.
    let a = admin(&proxy);
    let v = admin_get(a, "/api/events?reason=detect.sqli&status=403", None).await.json();
    assert_eq!(v["events"].as_array().unwrap().len(), 1, "{v}");
    assert_eq!(v["events"][0]["request_id"], rid.as_str());
    let v = admin_get(a, "/api/events?ip=192.0.2.1", None).await.json();
    assert_eq!(v["events"].as_array().unwrap().len(), 0, "{v}");
    let r = admin_get(a, "/api/events?status=abc", None).await;
    assert_eq!(r.status, 400, "{}", r.dump());
    let v = admin_get(a, "/api/stats?since=1h", None).await.json();
    assert_eq!(v["total"], 1, "{v}");
    assert_eq!(v["top_ips"][0]["key"], "127.0.0.1");
    assert_eq!(v["top_reasons"][0]["key"], "detect.sqli");
    assert_eq!(v["top_paths"][0]["key"], "/search");

    // Metrics.
    let r = admin_get(a, "/metrics", None).await;
    assert_eq!(r.status, 200);
    assert!(r.header("content-type").unwrap().starts_with("text/plain"));
    let m = r.text();
    assert_eq!(metric(&m, "palisade_requests_total{app=\"app\",verdict=\"block\",status=\"403\"}"), Some(1.0), "{m}");
    assert_eq!(metric(&m, "palisade_requests_total{app=\"app\",verdict=\"allow\",status=\"200\"}"), Some(1.0), "{m}");
    assert_eq!(metric(&m, "palisade_request_duration_seconds_count{app=\"app\"}"), Some(2.0), "{m}");
    assert!(metric(&m, "palisade_stage_duration_seconds_count{app=\"app\",phase=\"head\"}").is_some_and(|n| n >= 2.0), "{m}");
    assert_eq!(metric(&m, "palisade_events_produced_total"), Some(1.0), "{m}");
    assert_eq!(metric(&m, "palisade_events_written_total"), Some(1.0), "{m}");
    assert_eq!(metric(&m, "palisade_events_dropped_total"), Some(0.0), "{m}");
    assert!(metric(&m, "palisade_process_resident_memory_bytes").is_some_and(|v| v > 1e6), "{m}");
}

#[tokio::test]
async fn secrets_never_reach_the_events_database() {
    let up = Upstream::tcp(reply("ok")).await;
    let proxy = Proxy::start(&config(&up.url(), "", "events:\n  sink: sqlite:events.db\n  redact_fields: [token, card]\n", ""));
    // An attack inside a cookie: its fragment is not stored.
    let r = raw(
        proxy.addr,
        "GET /a HTTP/1.1\r\nHost: api.test\r\nCookie: session=1%27%20union%20select%20password%20from%20users--%20TOPSECRET1\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert_eq!(r.status, 403, "{}", r.dump());
    // Secret query values next to an attack: redacted in the stored query.
    let r = raw(
        proxy.addr,
        "GET /b?token=TOPSECRET2&card=TOPSECRET3&q=%3Cscript%3Ealert(1)%3C/script%3E HTTP/1.1\r\nHost: api.test\r\nAuthorization: Bearer TOPSECRET4\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert_eq!(r.status, 403, "{}", r.dump());
    flush(&proxy);
    let page = Reader::open(&proxy.dir.join("events.db")).unwrap().events(&Filter::default()).unwrap();
    assert_eq!(page.events.len(), 2, "{:?}", page.events);
    let dump = serde_json::to_string(&page.events).unwrap();
    for s in ["TOPSECRET1", "TOPSECRET2", "TOPSECRET3", "TOPSECRET4"] {
        assert!(!dump.contains(s), "{s} stored: {dump}");
    }
    let cookie = page.events.iter().find(|e| e.path == "/a").unwrap();
    assert_eq!(cookie.location.as_deref(), Some("cookie.session"));
    assert_eq!(cookie.fragment.as_deref(), Some("[redacted]"));
    let q = page.events.iter().find(|e| e.path == "/b").unwrap();
    assert!(q.query.as_deref().unwrap().starts_with("token=[redacted]&card=[redacted]&q="), "{q:?}");
    // The raw database file holds none of them either.
    let raw_db = std::fs::read(proxy.dir.join("events.db")).unwrap();
    let wal = std::fs::read(proxy.dir.join("events.db-wal")).unwrap_or_default();
    for s in ["TOPSECRET1", "TOPSECRET2", "TOPSECRET3", "TOPSECRET4"] {
        assert!(!raw_db.windows(s.len()).any(|w| w == s.as_bytes()) && !wal.windows(s.len()).any(|w| w == s.as_bytes()), "{s} in the file");
    }
}

#[tokio::test]
async fn the_admin_token_is_enforced_and_never_shown() {
    let up = Upstream::tcp(reply("ok")).await;
    let proxy = Proxy::start(&config(&up.url(), "  token: s3cr3t-admin-token\n", "events: sqlite:events.db\n", ""));
    let a = admin(&proxy);
    for path in ["/metrics", "/api/events", "/api/stats", "/api/config"] {
        let r = admin_get(a, path, None).await;
        assert_problem(&r, 401, "admin.unauthorized");
        assert!(r.header("www-authenticate").is_some_and(|v| v.starts_with("Bearer")), "{}", r.dump());
        assert_problem(&admin_get(a, path, Some("wrong")).await, 401, "admin.unauthorized");
        assert_eq!(admin_get(a, path, Some("s3cr3t-admin-token")).await.status, 200, "{path}");
    }
    let r = raw(a, "POST /api/reload HTTP/1.1\r\nHost: admin\r\nContent-Length: 0\r\nConnection: close\r\n\r\n").await;
    assert_problem(&r, 401, "admin.unauthorized");
    // Probes stay open.
    assert_eq!(admin_get(a, "/healthz", None).await.status, 200);
    assert_eq!(admin_get(a, "/readyz", None).await.status, 200);
    let cfg = admin_get(a, "/api/config", Some("s3cr3t-admin-token")).await;
    assert!(!cfg.text().contains("s3cr3t-admin-token"), "{}", cfg.text());
    let v = cfg.json();
    assert_eq!(v["admin"]["token"], "[redacted]");
    assert_eq!(v["apps"][0]["name"], "app");
    assert_eq!(v["events"]["sink"], "sqlite:events.db");
}

#[tokio::test]
async fn monitored_requests_are_recorded_with_the_upstream_status() {
    let up = Upstream::tcp(reply("ok")).await;
    let proxy = Proxy::start(&config(&up.url(), "", "events: sqlite:events.db\n", "    detection: {mode: monitor}\n"));
    let r = get(proxy.addr, "api.test", SQLI).await;
    assert_eq!(r.status, 200, "{}", r.dump());
    flush(&proxy);
    let page = Reader::open(&proxy.dir.join("events.db")).unwrap().events(&Filter::default()).unwrap();
    assert_eq!(page.events.len(), 1);
    let e = &page.events[0];
    assert_eq!((e.verdict, e.status, e.upstream_status, e.reason.as_str()), (palisade_events::Verdict::Monitor, 200, Some(200), "detect.sqli"));
    let m = admin_get(admin(&proxy), "/metrics", None).await.text();
    assert_eq!(metric(&m, "palisade_requests_total{app=\"app\",verdict=\"monitor\",status=\"200\"}"), Some(1.0), "{m}");
}

#[tokio::test]
async fn allowed_requests_are_sampled_only_when_asked_and_jsonl_records_them() {
    let up = Upstream::tcp(reply("ok")).await;
    let proxy = Proxy::start(&config(&up.url(), "", "events:\n  sink: jsonl:ev.jsonl\n  sample_allowed: 1\n", ""));
    for _ in 0..3 {
        assert_eq!(get(proxy.addr, "api.test", "/ok?token=TOPSECRET5").await.status, 200);
    }
    assert_eq!(get(proxy.addr, "api.test", SQLI).await.status, 403);
    flush(&proxy);
    let text = std::fs::read_to_string(proxy.dir.join("ev.jsonl")).unwrap();
    let lines: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 4, "{text}");
    assert_eq!(lines.iter().filter(|l| l["verdict"] == "allow").count(), 3);
    assert_eq!(lines[0]["query"], "token=[redacted]");
    assert!(!text.contains("TOPSECRET5"));
    // Not SQLite: the API says the events cannot be queried.
    assert_problem(&admin_get(admin(&proxy), "/api/events", None).await, 501, "admin.events_not_queryable");
}

#[tokio::test]
async fn api_reload_rereads_the_configuration_file() {
    let up = Upstream::tcp(reply("ok")).await;
    let proxy = Proxy::start(&config(&up.url(), "", "events: sqlite:events.db\n", ""));
    let a = admin(&proxy);
    let post = |a: SocketAddr| raw(a, "POST /api/reload HTTP/1.1\r\nHost: admin\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    assert_problem(&post(a).await, 409, "admin.no_config_file");
    let file = proxy.dir.join("palisade.yaml");
    proxy.running().shared().set_config_path(Some(file.clone()));
    // A broken file is refused with its errors, counted as a failed reload.
    std::fs::write(&file, "listen: []\napps: 5\n").unwrap();
    let r = post(a).await;
    assert_eq!(r.status, 422, "{}", r.dump());
    assert!(r.json()["errors"].to_string().contains("palisade.yaml"), "{}", r.dump());
    // The file turns detection off.
    std::fs::write(&file, config(&up.url(), "", "events: sqlite:events.db\n", "    detection: off\n")).unwrap();
    let r = post(a).await;
    assert_eq!(r.status, 200, "{}", r.dump());
    assert_eq!(r.json()["config_generation"], 2);
    assert_eq!(get(proxy.addr, "api.test", SQLI).await.status, 200, "the reloaded file turned detection off");
    let m = admin_get(a, "/metrics", None).await.text();
    assert_eq!(metric(&m, "palisade_config_reloads_total{result=\"ok\"}"), Some(1.0), "{m}");
    assert_eq!(metric(&m, "palisade_config_reloads_total{result=\"error\"}"), Some(1.0), "{m}");
    // Changing the sink needs a restart.
    let err = proxy.reload(&config(&up.url(), "", "events: sqlite:other.db\n", "")).unwrap_err();
    assert!(err.to_string().contains("`events`"), "{err}");
}

#[tokio::test]
async fn the_cli_reads_events_from_the_database_and_the_admin_api() {
    let up = Upstream::tcp(reply("ok")).await;
    let proxy = Proxy::start(&config(&up.url(), "  token: tok-123\n", "events: sqlite:events.db\n", ""));
    for _ in 0..3 {
        assert_eq!(get(proxy.addr, "api.test", SQLI).await.status, 403);
    }
    assert_eq!(get(proxy.addr, "api.test", "/x?q=%3Cscript%3Ealert(1)%3C/script%3E").await.status, 403);
    flush(&proxy);
    let db = proxy.dir.join("events.db");
    let run = |args: Vec<String>| {
        let out =
            Command::new(env!("CARGO_BIN_EXE_palisade")).args(&args).env_remove("PALISADE_ADMIN_TOKEN").stdin(Stdio::null()).output().expect("run palisade");
        (out.status.code(), String::from_utf8_lossy(&out.stdout).to_string(), String::from_utf8_lossy(&out.stderr).to_string())
    };
    let (code, out, err) = tokio::task::spawn_blocking(move || {
        run(vec!["events".into(), "query".into(), "--db".into(), db.display().to_string(), "--json".into(), "--category".into(), "sqli".into()])
    })
    .await
    .unwrap();
    assert_eq!(code, Some(0), "{err}");
    let lines: Vec<serde_json::Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 3, "{out}");
    assert!(lines.iter().all(|l| l["reason"] == "detect.sqli"));

    let admin_url = format!("http://{}", admin(&proxy));
    let url = admin_url.clone();
    let (code, out, err) = tokio::task::spawn_blocking(move || {
        let mut c = Command::new(env!("CARGO_BIN_EXE_palisade"));
        c.args(["events", "tail", "--no-follow", "-n", "2", "--admin", &url]).env("PALISADE_ADMIN_TOKEN", "tok-123").stdin(Stdio::null());
        let o = c.output().expect("run palisade");
        (o.status.code(), String::from_utf8_lossy(&o.stdout).to_string(), String::from_utf8_lossy(&o.stderr).to_string())
    })
    .await
    .unwrap();
    assert_eq!(code, Some(0), "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert!(lines[0].contains("detect.sqli") && lines[1].contains("detect.xss"), "oldest first: {out}");
    assert!(lines[1].contains(" block ") && lines[1].contains(" 403 ") && lines[1].contains("/x?q="), "{out}");

    // Without the token the API refuses, and the CLI says so.
    let (code, _, err) = tokio::task::spawn_blocking(move || run(vec!["events".into(), "query".into(), "--admin".into(), admin_url])).await.unwrap();
    assert_eq!(code, Some(1));
    assert!(err.contains("401"), "{err}");
}

#[tokio::test]
async fn under_a_burst_every_event_is_written_aggregated_or_dropped_exactly() {
    let up = Upstream::tcp(reply("ok")).await;
    // A small queue and batches, so that a burst makes the writer fall behind.
    let proxy = Proxy::start(&config(&up.url(), "", "events:\n  sink: sqlite:events.db\n  queue_size: 64\n  batch_size: 16\n", ""));
    let addr = proxy.addr;
    let mut clients = Vec::new();
    for _ in 0..8 {
        clients.push(tokio::spawn(async move {
            let mut c = Conn::connect(addr).await;
            for _ in 0..50 {
                let r = c.roundtrip(format!("GET {SQLI} HTTP/1.1\r\nHost: api.test\r\n\r\n")).await;
                assert_eq!(r.status, 403);
            }
        }));
    }
    for c in clients {
        w!(c).unwrap();
    }
    flush(&proxy);
    let m = admin_get(admin(&proxy), "/metrics", None).await.text();
    let n = |s: &str| metric(&m, s).unwrap_or_else(|| panic!("{s} missing: {m}")) as u64;
    let (produced, written, aggregated, dropped) =
        (n("palisade_events_produced_total"), n("palisade_events_written_total"), n("palisade_events_aggregated_total"), n("palisade_events_dropped_total"));
    assert_eq!(produced, 400);
    assert_eq!(produced, written + aggregated + dropped, "{m}");
    assert_eq!(n("palisade_events_queued"), 0);
    let st = Reader::open(&proxy.dir.join("events.db"))
        .unwrap()
        .stats(&Filter { since_ms: Some(0), ..Filter::default() }, palisade_events::model::now_ms(), 10, 5)
        .unwrap();
    assert_eq!(st.total, written + aggregated, "the rows' counts add up to every event not dropped");
    let rows = Reader::open(&proxy.dir.join("events.db")).unwrap().events(&Filter { limit: Some(1000), ..Filter::default() }).unwrap().events.len() as u64;
    assert_eq!(rows, written);
}

#[tokio::test]
async fn rule_tags_are_recorded_in_events_and_filterable() {
    let up = Upstream::tcp(reply("ok")).await;
    let rules = "    rules:\n      - {id: bots, when: {field: header.user-agent, contains: curl, ignore_case: true}, then: {tag: [bot, scripted]}}\n      - {id: probe, when: {field: path, prefix: /staff}, then: {action: block, tag: probe}}\n";
    let proxy = Proxy::start(&config(&up.url(), "", "events:\n  sink: sqlite:events.db\n  sample_allowed: 1\n", rules));
    let send = |path: &'static str, ua: &'static str| {
        raw(proxy.addr, format!("GET {path} HTTP/1.1\r\nHost: api.test\r\nUser-Agent: {ua}\r\nConnection: close\r\n\r\n"))
    };
    assert_problem(&send("/staff/area", "curl/8.5").await, 403, "rule.probe");
    assert_eq!(send("/items", "curl/8.5").await.status, 200);
    assert_eq!(send("/items", "Mozilla/5.0").await.status, 200);
    flush(&proxy);

    let page = Reader::open(&proxy.dir.join("events.db")).unwrap().events(&Filter::default()).unwrap();
    assert_eq!(page.events.len(), 3, "{:?}", page.events);
    let by_path_ua: Vec<(&str, Vec<String>)> = page.events.iter().rev().map(|e| (e.path.as_str(), e.tags.clone())).collect();
    assert_eq!(
        by_path_ua,
        vec![
            ("/staff/area", vec!["bot".to_string(), "scripted".into(), "probe".into()]),
            ("/items", vec!["bot".into(), "scripted".into()]),
            ("/items", vec![])
        ]
    );
    let a = admin(&proxy);
    let v = admin_get(a, "/api/events?tag=probe", None).await.json();
    assert_eq!(v["events"].as_array().unwrap().len(), 1, "{v}");
    assert_eq!(v["events"][0]["tags"], serde_json::json!(["bot", "scripted", "probe"]), "{v}");
    let v = admin_get(a, "/api/events?tag=bot", None).await.json();
    assert_eq!(v["events"].as_array().unwrap().len(), 2, "{v}");
    let v = admin_get(a, "/api/events?tag=scrip", None).await.json();
    assert_eq!(v["events"].as_array().unwrap().len(), 0, "a tag filter matches whole tags: {v}");
}

/// The tuning workflow end to end: a monitor-mode trial records what would have been blocked,
/// `palisade detect suggest` turns the events into exclusions, the snippet pasted into the
/// configuration lets exactly those requests through in block mode, and the admin API offers
/// the suggestion for one event.
#[tokio::test]
async fn suggested_exclusions_let_the_recorded_requests_through_and_nothing_else() {
    let up = Upstream::tcp(reply("ok")).await;
    let proxy = Proxy::start(&config(&up.url(), "", "events: sqlite:events.db\n", "    detection: {mode: monitor}\n"));
    for _ in 0..3 {
        assert_eq!(get(proxy.addr, "api.test", SQLI).await.status, 200);
    }
    flush(&proxy);
    let db = proxy.dir.join("events.db");
    let out = Command::new(env!("CARGO_BIN_EXE_palisade"))
        .args(["detect", "suggest", "--db"])
        .arg(&db)
        .args(["--since", "1h"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let yaml = String::from_utf8(out.stdout).unwrap();
    assert!(yaml.contains("- prefix: /search") && yaml.contains("location: query.q") && yaml.contains("allows 3 of 3 request(s), 1 client(s)"), "{yaml}");
    assert!(yaml.contains("all from one client"), "one client is flagged: {yaml}");

    // Paste the app's `detection:` part of the snippet into the app, in block mode.
    let detection: String = yaml.lines().filter(|l| !l.starts_with('#')).skip(2).map(|l| format!("{l}\n")).collect();
    assert!(detection.starts_with("    detection:\n"), "{detection}");
    let detection = detection.replacen("    detection:\n", "    detection:\n      mode: block\n", 1);
    proxy.reload(&config(&up.url(), "", "events: sqlite:events.db\n", &detection)).unwrap();
    assert_eq!(get(proxy.addr, "api.test", SQLI).await.status, 200, "the excluded request passes");
    assert_problem(&get(proxy.addr, "api.test", "/other?q=%27%20or%201%3D1--").await, 403, "detect.sqli");
    assert_problem(&get(proxy.addr, "api.test", "/search?x=%27%20or%201%3D1--").await, 403, "detect.sqli");

    // The admin API answers the same suggestion for one event.
    let id = Reader::open(&db).unwrap().events(&Filter::default()).unwrap().events[0].id.unwrap();
    let r = admin_get(admin(&proxy), &format!("/api/suggest?for={id}&since=1h"), None).await;
    assert_eq!(r.status, 200, "{}", r.dump());
    let v = r.json();
    assert_eq!(v["suggestions"].as_array().map(Vec::len), Some(1), "{v}");
    assert_eq!(v["suggestions"][0]["location"], "query.q");
    assert_eq!(v["suggestions"][0]["scope"], serde_json::json!({"kind": "prefix", "value": "/search"}));
    assert!(v["yaml"].as_str().unwrap().contains("- prefix: /search"));
    let r = admin_get(admin(&proxy), "/api/suggest?for=x", None).await;
    assert_eq!(r.status, 400, "{}", r.dump());
}
