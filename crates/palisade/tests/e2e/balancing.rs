//! Several targets: balancing, passive ejection, active health checks.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tokio::sync::Notify;

use crate::common::*;

fn pool(targets: &[String], extra: &str) -> String {
    let mut s = String::from("upstreams:\n  - name: pool\n    targets:\n");
    for t in targets {
        s.push_str(&format!("      - {t}\n"));
    }
    for l in extra.lines() {
        s.push_str("    ");
        s.push_str(l);
        s.push('\n');
    }
    s.push_str("apps:\n  - name: app\n    upstream: pool\n");
    s
}

#[tokio::test]
async fn round_robin_spreads_requests() {
    let a = Upstream::tcp(reply("A")).await;
    let b = Upstream::tcp(reply("B")).await;
    let proxy = Proxy::start(&cfg(&[], &pool(&[a.url(), b.url()], "balance: round_robin")));
    let mut c = Conn::connect(proxy.addr).await;
    let mut seen = Vec::new();
    for _ in 0..6 {
        let r = c.roundtrip("GET / HTTP/1.1\r\nHost: api.test\r\n\r\n").await;
        assert_eq!(r.status, 200);
        seen.push(r.text());
    }
    assert_eq!(seen.iter().filter(|s| *s == "A").count(), 3, "{seen:?}");
    assert_eq!(seen.iter().filter(|s| *s == "B").count(), 3, "{seen:?}");
    assert!(seen.windows(2).all(|w| w[0] != w[1]), "round robin alternates: {seen:?}");
    // Each target's connection is pooled and reused.
    assert_eq!(a.accepts(), 1);
    assert_eq!(b.accepts(), 1);
}

#[tokio::test]
async fn dead_target_is_skipped_and_ejected() {
    let live = Upstream::tcp(reply("live")).await;
    let dead = format!("http://127.0.0.1:{}", closed_port());
    let admin = "admin:\n  addr: 127.0.0.1:0\n";
    let proxy = Proxy::start(&cfg(&[], &format!("{admin}{}", pool(&[dead, live.url()], "max_fails: 2\neject_for: 60s"))));
    for _ in 0..8 {
        let r = get(proxy.addr, "api.test", "/").await;
        assert_eq!(r.status, 200, "a connect failure is retried on the other target: {}", r.dump());
        assert_eq!(r.text(), "live");
    }
    let snap = proxy.snapshot();
    let up = &snap.upstreams[0];
    assert!(up.is_ejected(0), "the dead target is ejected after max_fails failures");
    assert!(!up.is_ejected(1));
    // The failed attempts that ejected it are counted, although every request succeeded.
    let metrics = get(proxy.running().admin_addr.unwrap(), "admin", "/metrics").await.text();
    assert!(metrics.contains("palisade_upstream_errors_total{app=\"app\",kind=\"connect\"} 2\n"), "{metrics}");
}

#[tokio::test]
async fn every_target_dead_gives_502() {
    let t1 = format!("http://127.0.0.1:{}", closed_port());
    let t2 = format!("http://127.0.0.1:{}", closed_port());
    let proxy = Proxy::start(&cfg(&[], &pool(&[t1, t2], "max_fails: 1")));
    for _ in 0..3 {
        let r = get(proxy.addr, "api.test", "/").await;
        assert_problem(&r, 502, "upstream.unavailable");
    }
}

#[tokio::test]
async fn active_health_check_takes_a_failing_target_out() {
    let b_healthy = Arc::new(AtomicBool::new(false));
    let flag = b_healthy.clone();
    let a = Upstream::tcp(handler(|req| vec![Step::Write(ok(if req.path() == "/health" { "up" } else { "A" }))])).await;
    let b = Upstream::tcp(handler(move |req| {
        if req.path() == "/health" {
            if flag.load(Ordering::SeqCst) {
                vec![Step::Write(ok("up"))]
            } else {
                vec![Step::Write(response(500, &[], b"down"))]
            }
        } else {
            vec![Step::Write(ok("B"))]
        }
    }))
    .await;
    let hc = "health_check:\n  path: /health\n  interval: 50ms\n  timeout: 1s\n  fall: 1\n  rise: 1";
    let proxy = Proxy::start(&cfg(&[], &pool(&[a.url(), b.url()], hc)));
    let snap = proxy.snapshot();
    eventually("target B marked unhealthy", || !snap.upstreams[0].targets[1].is_healthy()).await;
    assert!(snap.upstreams[0].targets[0].is_healthy());
    let mut c = Conn::connect(proxy.addr).await;
    for _ in 0..6 {
        let r = c.roundtrip("GET /x HTTP/1.1\r\nHost: api.test\r\n\r\n").await;
        assert_eq!(r.text(), "A", "traffic avoids the unhealthy target");
    }
    // B recovers: traffic reaches it again.
    b_healthy.store(true, Ordering::SeqCst);
    eventually("target B healthy again", || snap.upstreams[0].targets[1].is_healthy()).await;
    let mut seen = Vec::new();
    for _ in 0..4 {
        seen.push(c.roundtrip("GET /x HTTP/1.1\r\nHost: api.test\r\n\r\n").await.text());
    }
    assert!(seen.iter().any(|s| s == "B"), "{seen:?}");
}

#[tokio::test]
async fn least_connections_prefers_the_idle_target() {
    let gate = Arc::new(Notify::new());
    let g = gate.clone();
    let mut a = Upstream::tcp(handler(
        move |req| {
            if req.path() == "/slow" {
                vec![Step::Wait(g.clone()), Step::Write(ok("A-slow"))]
            } else {
                vec![Step::Write(ok("A"))]
            }
        },
    ))
    .await;
    let b = Upstream::tcp(handler(|req| if req.path() == "/slow" { vec![Step::Write(ok("B-slow"))] } else { vec![Step::Write(ok("B"))] })).await;
    let proxy = Proxy::start(&cfg(&[], &pool(&[a.url(), b.url()], "balance: least_connections")));

    // Get one request held at A (a tie may send the first attempt to B).
    let mut held = None;
    for _ in 0..4 {
        let mut c = Conn::connect(proxy.addr).await;
        c.send("GET /slow HTTP/1.1\r\nHost: api.test\r\n\r\n").await;
        tokio::select! {
            req = a.next_req() => {
                assert_eq!(req.path(), "/slow");
                held = Some(c);
                break;
            }
            r = c.response() => assert_eq!(r.text(), "B-slow"),
        }
    }
    let mut held = held.expect("a request reached A");

    // While A has one request in flight, every new request goes to B.
    let mut c = Conn::connect(proxy.addr).await;
    for _ in 0..5 {
        let r = c.roundtrip("GET /fast HTTP/1.1\r\nHost: api.test\r\n\r\n").await;
        assert_eq!(r.text(), "B");
    }
    gate.notify_one();
    let r = held.response().await;
    assert_eq!(r.text(), "A-slow");
}
