//! The PostgreSQL events sink against a real PostgreSQL: a throwaway cluster started here on a
//! free loopback port (`initdb` + `pg_ctl` from `/usr/lib/postgresql/*/bin`; as root, through
//! `runuser -u postgres`), two Palisade instances writing into one database, exact counts, the
//! schema created once and left alone on restart, PostgreSQL stopped mid-run (the proxy keeps
//! serving; the drop counters account for every lost event) and started again (writes resume);
//! the admin API's queries over the shared table.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;

const SQLI: &str = "/search?q=%27%20or%201%3D1--";

/// A PostgreSQL cluster in a temporary directory, stopped (immediately) and removed on drop.
struct Pg {
    bin: PathBuf,
    dir: TempDir,
    port: u16,
    /// `Some("postgres")` when running as root (PostgreSQL refuses to run as root).
    user: Option<&'static str>,
}

impl Pg {
    /// The newest installed server's `bin` directory.
    fn bin_dir() -> Option<PathBuf> {
        let mut dirs: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
            .ok()?
            .filter_map(|e| e.ok())
            .map(|e| e.path().join("bin"))
            .filter(|b| b.join("initdb").exists() && b.join("pg_ctl").exists())
            .collect();
        dirs.sort_by_key(|d| d.parent().and_then(|v| v.file_name()).and_then(|v| v.to_str()).and_then(|v| v.parse::<u32>().ok()).unwrap_or(0));
        dirs.pop()
    }

    fn run(&self, tool: &str, args: &[&str]) -> std::process::Output {
        let exe = self.bin.join(tool);
        let mut cmd = match self.user {
            Some(u) => {
                let mut c = Command::new("runuser");
                c.args(["-u", u, "--"]).arg(&exe);
                c
            }
            None => Command::new(&exe),
        };
        // A working directory the postgres user can enter.
        cmd.args(args).current_dir(self.dir.path()).stdin(Stdio::null()).output().unwrap_or_else(|e| panic!("cannot run {tool}: {e}"))
    }

    fn data(&self) -> PathBuf {
        self.dir.join("data")
    }

    /// Create and start a cluster, or `None` (with the reason printed) when PostgreSQL is not
    /// installed.
    fn start() -> Option<Pg> {
        let Some(bin) = Self::bin_dir() else {
            eprintln!("skipping: PostgreSQL server binaries are not installed under /usr/lib/postgresql (scripts/test installs `postgresql`)");
            return None;
        };
        let root = Command::new("id").arg("-u").output().map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0").unwrap_or(false);
        let pg = Pg { bin, dir: TempDir::new(), port: free_port(), user: root.then_some("postgres") };
        if root {
            let ok = Command::new("chown").args(["-R", "postgres:postgres"]).arg(pg.dir.path()).status().is_ok_and(|s| s.success());
            assert!(ok, "cannot chown the cluster directory to the postgres user");
        }
        let data = pg.data();
        let out = pg.run("initdb", &["-D", data.to_str().unwrap(), "-U", "palisade", "--auth=trust", "-E", "UTF8", "--no-sync", "--no-instructions"]);
        assert!(out.status.success(), "initdb failed: {}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        pg.pg_start();
        Some(pg)
    }

    fn pg_start(&self) {
        let opts = format!("-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=40", self.port, self.dir.path().display());
        let log = self.dir.join("server.log");
        let out = self.run("pg_ctl", &["-D", self.data().to_str().unwrap(), "-l", log.to_str().unwrap(), "-o", &opts, "-w", "-t", "60", "start"]);
        assert!(out.status.success(), "pg_ctl start failed: {}\n{}", String::from_utf8_lossy(&out.stderr), std::fs::read_to_string(&log).unwrap_or_default());
    }

    /// Stop at once (no shutdown checkpoint: as close to a crash as pg_ctl offers).
    fn kill(&self) {
        let out = self.run("pg_ctl", &["-D", self.data().to_str().unwrap(), "-m", "immediate", "-w", "-t", "60", "stop"]);
        assert!(out.status.success(), "pg_ctl stop failed: {}", String::from_utf8_lossy(&out.stderr));
    }

    fn url(&self) -> String {
        format!("postgres://palisade@127.0.0.1:{}/postgres", self.port)
    }

    /// One integer from a query (run on a plain thread: the driver has its own runtime).
    fn scalar(&self, sql: &str) -> i64 {
        let url = self.url();
        let sql = sql.to_string();
        std::thread::spawn(move || {
            let mut c = postgres::Client::connect(&url, postgres::NoTls).expect("connect to the test cluster");
            let row = c.query_one(sql.as_str(), &[]).unwrap_or_else(|e| panic!("{sql}: {e}"));
            row.try_get::<_, i64>(0).or_else(|_| row.try_get::<_, i32>(0).map(i64::from)).expect("an integer")
        })
        .join()
        .expect("query thread")
    }
}

impl Drop for Pg {
    fn drop(&mut self) {
        let _ = self.run("pg_ctl", &["-D", self.data().to_str().unwrap_or(""), "-m", "immediate", "-w", "stop"]);
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn config(target: &str, url: &str) -> String {
    format!(
        "workers: 1\nlisten:\n  - addr: 127.0.0.1:0\nadmin:\n  addr: 127.0.0.1:0\nserver:\n  shutdown_timeout: 500ms\nevents:\n  sink: {url}\n{}",
        one_app(target)
    )
}

fn counters(p: &Proxy) -> palisade_events::pipeline::Snapshot {
    p.running().shared().events.as_ref().expect("events are on").counters().snapshot()
}

fn flush(p: &Proxy) {
    let shared = p.running().shared();
    assert!(shared.events.as_ref().expect("events are on").flush(LIMIT), "the events writer did not answer within {LIMIT:?}");
}

/// Every event is accounted for: produced = written + aggregated + dropped, nothing in flight.
fn assert_balanced(p: &Proxy) -> palisade_events::pipeline::Snapshot {
    let s = counters(p);
    assert_eq!(s.produced, s.written + s.aggregated + s.dropped, "{s:?}");
    s
}

async fn block(p: &Proxy, n: usize) {
    for _ in 0..n {
        assert_eq!(get(p.addr, "api.test", SQLI).await.status, 403);
    }
}

fn metric(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|l| l.strip_prefix(series).and_then(|rest| rest.strip_prefix(' ')).and_then(|v| v.parse().ok()))
}

#[tokio::test]
async fn postgres_sink_two_instances_exact_counts_outage_and_recovery() {
    let Some(pg) = Pg::start() else { return };
    let url = pg.url();
    let up = Upstream::tcp(reply("ok")).await;
    // Two instances start at once: each creates or migrates the schema under the advisory lock.
    let (a, b) = {
        let (ca, cb) = (config(&up.url(), &url), config(&up.url(), &url));
        let ta = std::thread::spawn(move || Proxy::start(&ca));
        let tb = std::thread::spawn(move || Proxy::start(&cb));
        (ta.join().unwrap(), tb.join().unwrap())
    };
    block(&a, 30).await;
    block(&b, 20).await;
    assert_eq!(get(a.addr, "api.test", "/search?q=shoes").await.status, 200);
    flush(&a);
    flush(&b);
    let (sa, sb) = (assert_balanced(&a), assert_balanced(&b));
    assert_eq!((sa.produced, sa.dropped, sb.produced, sb.dropped), (30, 0, 20, 0), "{sa:?} {sb:?}");
    assert_eq!(pg.scalar("SELECT COALESCE(SUM(count), 0) FROM palisade_events"), 50);
    assert_eq!(
        pg.scalar("SELECT COUNT(*) FROM palisade_events WHERE reason = 'detect.sqli' AND status = 403 AND category = 'sqli'"),
        (sa.written + sb.written) as i64
    );
    assert_eq!(pg.scalar("SELECT COUNT(DISTINCT request_id) FROM palisade_events"), 50, "every row is one request (no aggregation at this pace)");
    assert_eq!(
        pg.scalar("SELECT COUNT(*) FROM palisade_schema_version"),
        palisade_events::pg::SCHEMA_VERSION as i64,
        "each migration is applied once, by one of the two instances"
    );
    assert_eq!(pg.scalar("SELECT MAX(version) FROM palisade_schema_version"), palisade_events::pg::SCHEMA_VERSION as i64);

    // The admin API reads the shared table: both instances' events, filtered, paged, counted.
    let admin = a.running().admin_addr.unwrap();
    let api = |path: &str| raw(admin, format!("GET {path} HTTP/1.1\r\nHost: admin\r\nConnection: close\r\n\r\n"));
    let v = api("/api/events?reason=detect.sqli&status=403&limit=20").await.json();
    assert_eq!(v["events"].as_array().unwrap().len(), 20, "{v}");
    assert!(v["next_cursor"].as_i64().is_some(), "{v}");
    assert_eq!(v["events"][0]["category"], "sqli", "{v}");
    let v2 = api(&format!("/api/events?cursor={}&limit=1000", v["next_cursor"])).await.json();
    assert_eq!(v2["events"].as_array().unwrap().len(), 30, "{v2}");
    let v = api("/api/events?tag=none&path=/search&since=1h").await.json();
    assert_eq!(v["events"].as_array().unwrap().len(), 0, "{v}");
    let v = api("/api/stats?since=1h").await.json();
    assert_eq!(v["total"], 50, "{v}");
    assert_eq!(v["top_reasons"][0]["key"], "detect.sqli", "{v}");
    assert_eq!(v["top_reasons"][0]["count"], 50, "{v}");

    // PostgreSQL goes away mid-run: the proxy keeps answering, every event is dropped and counted.
    pg.kill();
    block(&a, 25).await;
    flush(&a);
    let s = assert_balanced(&a);
    assert_eq!((s.produced, s.written, s.dropped), (55, 30, 25), "{s:?}");
    // The counters are in /metrics too.
    let m = raw(admin, "GET /metrics HTTP/1.1\r\nHost: admin\r\nConnection: close\r\n\r\n").await.text();
    assert_eq!(metric(&m, "palisade_events_dropped_total"), Some(25.0), "{m}");
    assert_eq!(metric(&m, "palisade_events_written_total"), Some(30.0), "{m}");
    assert_eq!(metric(&m, "palisade_events_queued"), Some(0.0), "{m}");
    // A third instance starts while PostgreSQL is down: it serves, and connects later.
    let c = Proxy::start(&config(&up.url(), &url));
    block(&c, 3).await;
    flush(&c);
    assert_eq!(assert_balanced(&c).dropped, 3);

    // PostgreSQL is back: writes resume (after the sink's backoff) on every instance.
    pg.pg_start();
    for p in [&a, &b, &c] {
        let deadline = Instant::now() + LIMIT;
        let written = counters(p).written;
        loop {
            block(p, 1).await;
            flush(p);
            if counters(p).written > written {
                break;
            }
            assert!(Instant::now() < deadline, "writes never resumed: {:?}", counters(p));
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    // Exact: every event counted as written (or folded into a written row) is in the table,
    // and nothing else is.
    let stored: u64 = [&a, &b, &c].iter().map(|p| assert_balanced(p)).map(|s| s.written + s.aggregated).sum();
    assert_eq!(pg.scalar("SELECT SUM(count) FROM palisade_events") as u64, stored);
    // The restarted server and the late instance left the schema as it was.
    assert_eq!(pg.scalar("SELECT COUNT(*) FROM palisade_schema_version"), palisade_events::pg::SCHEMA_VERSION as i64);
    drop((a, b, c));

    // A restart of an instance against the existing schema: no migration, writes go on.
    let d = Proxy::start(&config(&up.url(), &url));
    block(&d, 4).await;
    flush(&d);
    let s = assert_balanced(&d);
    assert_eq!((s.written + s.aggregated, s.dropped), (4, 0), "{s:?}");
    assert_eq!(pg.scalar("SELECT COUNT(*) FROM palisade_schema_version"), palisade_events::pg::SCHEMA_VERSION as i64);
    assert_eq!(pg.scalar("SELECT SUM(count) FROM palisade_events") as u64, stored + 4);
}
