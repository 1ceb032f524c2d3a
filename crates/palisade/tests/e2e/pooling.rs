//! Keep-alive on both sides, and unix socket upstreams.

use crate::common::*;

#[tokio::test]
async fn sequential_requests_reuse_one_upstream_connection() {
    let mut up = Upstream::tcp(handler(|req| vec![Step::Write(ok(req.path()))])).await;
    let proxy = Proxy::start(&cfg(&[], &one_app(&up.url())));
    let mut c = Conn::connect(proxy.addr).await;
    for i in 0..10 {
        let r = c.roundtrip(format!("POST /r{i} HTTP/1.1\r\nHost: api.test\r\nContent-Length: 3\r\n\r\nabc")).await;
        assert_eq!(r.status, 200);
        assert_eq!(r.text(), format!("/r{i}"));
        assert!(r.header("connection").is_none(), "{}", r.raw_head);
    }
    let reqs = up.drain();
    assert_eq!(reqs.len(), 10);
    assert!(reqs.iter().all(|r| r.conn == 0));
    assert_eq!(up.accepts(), 1, "the upstream connection must be reused");

    // A new client connection (same worker) picks the pooled upstream connection too.
    let mut c2 = Conn::connect(proxy.addr).await;
    let r = c2.roundtrip("GET /other HTTP/1.1\r\nHost: api.test\r\n\r\n").await;
    assert_eq!(r.text(), "/other");
    assert_eq!(up.accepts(), 1);
}

#[tokio::test]
async fn client_keep_alive_and_pipelining() {
    let up = Upstream::tcp(handler(|req| vec![Step::Write(ok(req.path()))])).await;
    let proxy = Proxy::start(&cfg(&[], &one_app(&up.url())));
    let mut c = Conn::connect(proxy.addr).await;
    for i in 0..5 {
        let r = c.roundtrip(format!("GET /k{i} HTTP/1.1\r\nHost: api.test\r\n\r\n")).await;
        assert_eq!(r.text(), format!("/k{i}"));
    }
    assert_eq!(proxy.running().connections(), 1);

    // Three pipelined requests in one write: three responses, in order.
    c.send(
        "GET /p1 HTTP/1.1\r\nHost: api.test\r\n\r\nGET /p2 HTTP/1.1\r\nHost: api.test\r\n\r\nGET /p3 HTTP/1.1\r\nHost: api.test\r\nConnection: close\r\n\r\n",
    )
    .await;
    for p in ["/p1", "/p2", "/p3"] {
        let r = c.response().await;
        assert_eq!(r.text(), p);
    }
    assert!(c.closed().await, "Connection: close is honoured");

    // HTTP/1.0 without keep-alive: one request per connection; with keep-alive: reused.
    let mut c = Conn::connect(proxy.addr).await;
    let r = c.roundtrip("GET /old HTTP/1.0\r\nHost: api.test\r\n\r\n").await;
    assert_eq!(r.text(), "/old");
    assert!(c.closed().await);
    let mut c = Conn::connect(proxy.addr).await;
    let r = c.roundtrip("GET /old1 HTTP/1.0\r\nHost: api.test\r\nConnection: keep-alive\r\n\r\n").await;
    assert_eq!(r.header("connection"), Some("keep-alive"));
    let r = c.roundtrip("GET /old2 HTTP/1.0\r\nHost: api.test\r\nConnection: keep-alive\r\n\r\n").await;
    assert_eq!(r.text(), "/old2");
}

#[tokio::test]
async fn idle_client_connection_is_closed_after_keepalive_timeout() {
    let up = Upstream::tcp(reply("ok")).await;
    let proxy = Proxy::start(&cfg(&["keepalive_timeout: 200ms"], &one_app(&up.url())));
    let mut c = Conn::connect(proxy.addr).await;
    let r = c.roundtrip("GET / HTTP/1.1\r\nHost: api.test\r\n\r\n").await;
    assert_eq!(r.status, 200);
    assert!(c.closed().await, "idle connection closed silently");
}

#[tokio::test]
async fn upstream_connection_close_is_honoured() {
    let up = Upstream::tcp(handler(|_| vec![Step::Write(response(200, &[("Connection", "close")], b"bye")), Step::Close])).await;
    let proxy = Proxy::start(&cfg(&[], &one_app(&up.url())));
    let mut c = Conn::connect(proxy.addr).await;
    for _ in 0..5 {
        let r = c.roundtrip("GET / HTTP/1.1\r\nHost: api.test\r\n\r\n").await;
        assert_eq!(r.status, 200, "{}", r.dump());
        assert_eq!(r.text(), "bye");
        assert!(r.header("connection").is_none(), "the upstream's Connection header is hop-by-hop: {}", r.raw_head);
    }
    assert_eq!(up.accepts(), 5);
}

#[tokio::test]
async fn unix_socket_upstream() {
    let dir = TempDir::new();
    let mut up = Upstream::unix(dir.join("up.sock"), handler(|req| vec![Step::Write(ok(&format!("unix {} {}", req.method, req.path())))])).await;
    let rest = format!(
        "apps:\n  - name: plain\n    path_prefix: /\n    upstream: {u}\n  - name: up\n    path_prefix: /uh\n    upstream: {u}\n    host_header: upstream\n",
        u = up.url()
    );
    let proxy = Proxy::start(&cfg(&[], &rest));
    let mut c = Conn::connect(proxy.addr).await;
    let r = c.roundtrip("POST /u HTTP/1.1\r\nHost: api.test\r\nContent-Length: 4\r\n\r\ndata").await;
    assert_eq!(r.status, 200, "{}", r.dump());
    assert_eq!(r.text(), "unix POST /u");
    let got = up.next_req().await;
    assert_eq!(got.body, b"data");
    assert_eq!(got.header("host"), Some("api.test"));
    assert_eq!(got.header("x-forwarded-for"), Some("127.0.0.1"));
    for _ in 0..3 {
        let r = c.roundtrip("GET /u HTTP/1.1\r\nHost: api.test\r\n\r\n").await;
        assert_eq!(r.text(), "unix GET /u");
    }
    let r = c.roundtrip("GET /uh HTTP/1.1\r\nHost: api.test\r\n\r\n").await;
    assert_eq!(r.status, 200);
    up.drain();
    // One app per pool: the second app's upstream is another pool.
    assert_eq!(up.accepts(), 2, "one pooled connection per upstream");
    let r = c.roundtrip("GET /uh/x HTTP/1.1\r\nHost: api.test\r\n\r\n").await;
    assert_eq!(r.status, 200);
    assert_eq!(up.next_req().await.header("host"), Some("localhost"));
    assert_eq!(up.accepts(), 2);
}

#[tokio::test]
async fn busy_polling_worker_forwards_requests_and_shuts_down() {
    // `server.busy_poll`: the worker spins after each request instead of sleeping in the poller
    // (spin.rs). Requests, bodies and keep-alive on both sides behave exactly as without it, and
    // the spinning worker still stops on shutdown.
    let mut up = Upstream::tcp(handler(|req| vec![Step::Write(ok(&format!("{} {}", req.path(), req.body.len())))])).await;
    let mut proxy = Proxy::start(&cfg(&["busy_poll: 2ms"], &one_app(&up.url())));
    assert_eq!(proxy.snapshot().config.server.busy_poll, std::time::Duration::from_millis(2));
    let mut c = Conn::connect(proxy.addr).await;
    let body = "x".repeat(40_000);
    for i in 0..20 {
        let r = if i % 2 == 0 {
            c.roundtrip(format!("GET /b{i} HTTP/1.1\r\nHost: api.test\r\n\r\n")).await
        } else {
            c.roundtrip(format!("POST /b{i} HTTP/1.1\r\nHost: api.test\r\nContent-Length: {}\r\n\r\n{body}", body.len())).await
        };
        assert_eq!(r.status, 200);
        assert_eq!(r.text(), format!("/b{i} {}", if i % 2 == 0 { 0 } else { body.len() }));
    }
    assert_eq!(up.drain().len(), 20);
    assert_eq!(up.accepts(), 1, "the upstream connection is reused");
    let running = proxy.take();
    within("shutdown of a busy-polling worker", tokio::task::spawn_blocking(move || running.shutdown())).await.unwrap();
}
