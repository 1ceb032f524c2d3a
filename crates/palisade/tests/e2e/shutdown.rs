//! Graceful shutdown of the in-process server.

use std::sync::Arc;

use tokio::net::TcpStream;
use tokio::sync::{oneshot, Notify};

use crate::common::*;

/// Call `shutdown()` on a std thread; the receiver fires when it has returned.
fn shutdown_in_thread(running: palisade_proxy::Running) -> oneshot::Receiver<()> {
    let (tx, rx) = oneshot::channel();
    std::thread::spawn(move || {
        running.shutdown();
        let _ = tx.send(());
    });
    rx
}

#[tokio::test]
async fn in_flight_request_completes_then_new_connections_are_refused() {
    let gate = Arc::new(Notify::new());
    let g = gate.clone();
    let mut up =
        Upstream::tcp(handler(
            move |req| if req.path() == "/slow" { vec![Step::Wait(g.clone()), Step::Write(ok("slow-done"))] } else { vec![Step::Write(ok("quick"))] },
        ))
        .await;
    let mut proxy = Proxy::start(&cfg(&["shutdown_timeout: 5s"], &one_app(&up.url())));
    let addr = proxy.addr;

    let mut idle = Conn::connect(addr).await;
    assert_eq!(idle.roundtrip("GET / HTTP/1.1\r\nHost: api.test\r\n\r\n").await.text(), "quick");
    up.drain();
    let mut held = Conn::connect(addr).await;
    held.send("GET /slow HTTP/1.1\r\nHost: api.test\r\n\r\n").await;
    assert_eq!(up.next_req().await.path(), "/slow");

    let running = proxy.take();
    let shared = running.shared();
    let mut done = shutdown_in_thread(running);
    eventually("shutdown started", || *shared.shared_shutdown().borrow()).await;

    // Idle keep-alive connections are closed at once.
    assert!(idle.closed().await);
    // Shutdown waits for the request in flight.
    assert!(done.try_recv().is_err(), "shutdown must wait for the in-flight request");
    gate.notify_one();
    let r = held.response().await;
    assert_eq!(r.status, 200);
    assert_eq!(r.text(), "slow-done");
    assert_eq!(r.header("connection"), Some("close"), "no keep-alive while draining");
    assert!(held.closed().await);
    w!(done).expect("shutdown returned");

    let refused = w!(TcpStream::connect(addr));
    assert!(refused.is_err(), "new connections are refused after shutdown");
}

#[tokio::test]
async fn shutdown_timeout_cuts_requests_that_never_finish() {
    let mut up = Upstream::tcp(handler(|_| vec![Step::Hang])).await;
    let mut proxy = Proxy::start(&cfg(&["shutdown_timeout: 300ms"], &one_app(&up.url())));
    let mut held = Conn::connect(proxy.addr).await;
    held.send("GET /stuck HTTP/1.1\r\nHost: api.test\r\n\r\n").await;
    assert_eq!(up.next_req().await.path(), "/stuck");
    let done = shutdown_in_thread(proxy.take());
    w!(done).expect("shutdown returned despite the stuck request");
    assert!(held.closed().await, "the stuck connection is closed");
}
