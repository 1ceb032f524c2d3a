//! Configuration reload on a running server.

use std::sync::Arc;

use tokio::sync::Notify;

use crate::common::*;

#[tokio::test]
async fn reload_switches_upstream_while_in_flight_requests_finish_on_the_old_one() {
    let gate = Arc::new(Notify::new());
    let g = gate.clone();
    let mut a = Upstream::tcp(handler(
        move |req| if req.path() == "/slow" { vec![Step::Wait(g.clone()), Step::Write(ok("A-slow"))] } else { vec![Step::Write(ok("A"))] },
    ))
    .await;
    let mut b = Upstream::tcp(reply("B")).await;
    let proxy = Proxy::start(&cfg(&[], &one_app(&a.url())));
    assert_eq!(get(proxy.addr, "api.test", "/").await.text(), "A");
    a.drain();

    let mut held = Conn::connect(proxy.addr).await;
    held.send("GET /slow HTTP/1.1\r\nHost: api.test\r\n\r\n").await;
    assert_eq!(a.next_req().await.path(), "/slow");

    let generation = proxy.reload(&cfg(&[], &one_app(&b.url()))).expect("reload");
    assert_eq!(generation, 2);
    assert_eq!(proxy.snapshot().generation, 2);
    for _ in 0..3 {
        assert_eq!(get(proxy.addr, "api.test", "/").await.text(), "B");
    }
    assert_eq!(b.drain().len(), 3);

    // The request that started before the reload completes against the old upstream.
    gate.notify_one();
    let r = held.response().await;
    assert_eq!(r.status, 200);
    assert_eq!(r.text(), "A-slow");
    // The next request on that same client connection uses the new configuration.
    let r = held.roundtrip("GET /after HTTP/1.1\r\nHost: api.test\r\n\r\n").await;
    assert_eq!(r.text(), "B");
    assert!(a.try_req().is_none());
}

#[tokio::test]
async fn reload_applies_new_routes_and_limits() {
    let a = Upstream::tcp(reply("A")).await;
    let b = Upstream::tcp(reply("B")).await;
    let proxy = Proxy::start(&cfg(&[], &format!("apps:\n  - name: a\n    hosts: a.test\n    upstream: {}\n", a.url())));
    assert_problem(&get(proxy.addr, "b.test", "/").await, 404, "route.no_app");
    let next = format!(
        "apps:\n  - name: a\n    hosts: a.test\n    upstream: {}\n    limits: {{max_body_size: 10, inspect_body: 10}}\n  - name: b\n    hosts: b.test\n    upstream: {}\n",
        a.url(),
        b.url()
    );
    proxy.reload(&cfg(&[], &next)).expect("reload");
    assert_eq!(get(proxy.addr, "b.test", "/").await.text(), "B");
    let r = raw(proxy.addr, "POST / HTTP/1.1\r\nHost: a.test\r\nContent-Length: 11\r\n\r\nhello world").await;
    assert_problem(&r, 413, "http.body_too_large");
}

#[tokio::test]
async fn invalid_reload_is_rejected_and_the_old_configuration_keeps_serving() {
    let dir = TempDir::new();
    let ck = rcgen::generate_simple_self_signed(vec!["a.example".to_string()]).unwrap();
    dir.write("a.pem", ck.cert.pem());
    dir.write("a.key", ck.signing_key.serialize_pem());
    let a = Upstream::tcp(reply("A")).await;
    let b = Upstream::tcp(reply("B")).await;
    let yaml = |target: &str, cert: &str, workers: u32| {
        format!(
            "workers: {workers}\nlisten:\n  - addr: 127.0.0.1:0\n  - addr: 127.0.0.2:0\n    tls: {{cert: {cert}, key: a.key}}\nserver:\n  shutdown_timeout: 500ms\n{}",
            one_app(target)
        )
    };
    let proxy = Proxy::start_in(&yaml(&a.url(), "a.pem", 1), dir);

    // A certificate file that does not exist.
    let err = proxy.reload(&yaml(&b.url(), "missing.pem", 1)).expect_err("a missing certificate must be rejected");
    let text = err.to_string();
    assert!(text.contains("missing.pem"), "{text}");
    assert!(err.0.iter().any(|e| e.path.contains("tls") && e.line > 0), "errors carry a location: {err:?}");

    // A setting that needs a restart.
    let err = proxy.reload(&yaml(&b.url(), "a.pem", 2)).expect_err("workers cannot change on reload");
    assert!(err.to_string().contains("workers"), "{err}");

    // A different listener set.
    let other = format!("workers: 1\nlisten:\n  - addr: 127.0.0.1:0\nserver:\n  shutdown_timeout: 500ms\n{}", one_app(&b.url()));
    assert!(proxy.reload(&other).is_err(), "listeners cannot change on reload");

    assert_eq!(proxy.snapshot().generation, 1);
    assert_eq!(get(proxy.addr, "api.test", "/").await.text(), "A", "the old configuration keeps serving");
    assert_eq!(b.accepts(), 0);

    // A valid reload after the failed ones works.
    proxy.reload(&yaml(&b.url(), "a.pem", 1)).expect("valid reload");
    assert_eq!(get(proxy.addr, "api.test", "/").await.text(), "B");
}

#[tokio::test]
async fn admin_readiness_reports_the_configuration_generation() {
    let a = Upstream::tcp(reply("A")).await;
    let yaml = |target: &str| {
        format!("workers: 1\nlisten:\n  - addr: 127.0.0.1:0\nadmin:\n  addr: 127.0.0.2:0\nserver:\n  shutdown_timeout: 500ms\n{}", one_app(target))
    };
    let proxy = Proxy::start(&yaml(&a.url()));
    let admin = proxy.running().admin_addr.expect("admin address");
    let r = get(admin, "localhost", "/healthz").await;
    assert_eq!(r.status, 200);
    let r = get(admin, "localhost", "/readyz").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["config_generation"], 1);
    proxy.reload(&yaml(&a.url())).expect("reload");
    assert_eq!(get(admin, "localhost", "/readyz").await.json()["config_generation"], 2);
    assert_problem(&get(admin, "localhost", "/nope").await, 404, "admin.not_found");
}
