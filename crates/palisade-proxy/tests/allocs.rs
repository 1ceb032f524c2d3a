//! Heap allocations per proxied request, counted by a global allocator wrapper.
//!
//! The proxy runs in-process (one worker, no stages, events off) in front of a loopback
//! upstream; the client and the upstream are plain `std::net` loops over fixed buffers that
//! allocate nothing while requests flow, so every allocation counted during the measured
//! requests is the proxy's (its worker; the control thread is idle). The budgets are regression
//! guards for the request path (docs/BENCHMARKS.md has the history); the count does not depend
//! on timing, only on the code path taken.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

use palisade_testkit::alloc;

// Counts every allocation of the process (the proxy's worker thread is the one that matters).
#[global_allocator]
static GLOBAL: alloc::Counting = alloc::Counting;

const RESPONSE: &[u8] = b"HTTP/1.1 200 OK\r\nServer: up\r\nDate: Sun, 22 Nov 2026 10:00:00 GMT\r\nContent-Type: application/json\r\nContent-Length: 11\r\nConnection: keep-alive\r\n\r\n{\"ok\":true}";

/// End of the head in `buf` and the Content-Length it declares (0 when none).
fn head_and_length(buf: &[u8]) -> Option<(usize, usize)> {
    let end = buf.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let mut len = 0;
    for line in buf[..end].split(|b| *b == b'\n') {
        let Some(colon) = line.iter().position(|b| *b == b':') else { continue };
        if line[..colon].eq_ignore_ascii_case(b"content-length") {
            len = line[colon + 1..].iter().filter(|b| b.is_ascii_digit()).fold(0usize, |n, d| n * 10 + usize::from(d - b'0'));
        }
    }
    Some((end, len))
}

/// Read one whole message (head and Content-Length body) into `buf`; false on close or error.
fn read_message(s: &mut TcpStream, buf: &mut [u8]) -> bool {
    let mut have = 0;
    loop {
        if let Some((end, len)) = head_and_length(&buf[..have]) {
            if have >= end + len {
                return have == end + len;
            }
        }
        match s.read(&mut buf[have..]) {
            Ok(0) | Err(_) => return false,
            Ok(n) => have += n,
        }
    }
}

/// An upstream answering every request with [`RESPONSE`], after reading its whole body.
fn upstream() -> std::net::SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind upstream");
    let addr = l.local_addr().expect("upstream address");
    std::thread::spawn(move || {
        // Bounded: the proxy opens one connection per concurrent request, here one or two.
        for s in l.incoming().take(8) {
            let Ok(mut s) = s else { return };
            std::thread::spawn(move || {
                let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
                let mut buf = vec![0u8; 64 * 1024];
                while read_message(&mut s, &mut buf) {
                    if s.write_all(RESPONSE).is_err() {
                        return;
                    }
                }
            });
        }
    });
    addr
}

/// Allocations per request for `n` keep-alive requests of `request` (after a warm-up).
fn allocations_per_request(request: &[u8], n: u64) -> f64 {
    let up = upstream();
    let dir = std::env::temp_dir();
    let yaml = format!(
        "workers: 1\nevents: off\nlisten:\n  - addr: 127.0.0.1:0\nserver:\n  shutdown_timeout: 500ms\napps:\n  - name: app\n    upstream: http://{up}\n"
    );
    let config = palisade_config::parse_str(&yaml, "allocs.yaml", &dir).unwrap_or_else(|e| panic!("{e}"));
    let running = palisade_proxy::start(config, palisade_proxy::no_stages()).unwrap_or_else(|e| panic!("start: {e}"));
    #[allow(clippy::disallowed_methods)] // a test client on loopback; the proxy listens already
    let mut c = TcpStream::connect(running.listen_addrs[0]).expect("connect to the proxy");
    c.set_nodelay(true).expect("nodelay");
    c.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    let mut buf = vec![0u8; 64 * 1024];
    let mut one = |c: &mut TcpStream| {
        c.write_all(request).expect("send");
        assert!(read_message(c, &mut buf), "no complete response");
        assert!(buf.starts_with(b"HTTP/1.1 200 "), "{}", String::from_utf8_lossy(&buf[..64]));
    };
    for _ in 0..200 {
        one(&mut c);
    }
    let before = alloc::total();
    for _ in 0..n {
        one(&mut c);
    }
    let after = alloc::total();
    drop(c);
    running.shutdown();
    (after - before) as f64 / n as f64
}

fn post(path: &str, body: &[u8]) -> Vec<u8> {
    let mut r = format!("POST {path} HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n", body.len()).into_bytes();
    r.extend_from_slice(body);
    r
}

/// A JSON body of exactly `n` bytes.
fn json_body(n: usize) -> Vec<u8> {
    let mut b = b"{\"pad\":\"".to_vec();
    b.resize(n - 2, b'x');
    b.extend_from_slice(b"\"}");
    b
}

// One test (one server at a time), so that no other test's threads allocate while counting.
#[test]
fn allocations_per_proxied_request_stay_within_budget() {
    let get = allocations_per_request(b"GET /test HTTP/1.1\r\nHost: bench\r\nUser-Agent: wrk\r\nAccept: */*\r\n\r\n", 1000);
    let small = allocations_per_request(&post("/orders", &json_body(1024)), 1000);
    let large = allocations_per_request(&post("/test/signup", &json_body(28_118)), 500);
    println!("allocations per request: GET {get:.2}, 1 KiB POST {small:.2}, 28 KiB POST {large:.2}");
    // GET: the boxed request head (an app without stages builds no header map: the request's
    // lines go upstream as they are). The 28 KiB body adds the shared header of its frozen
    // buffer (the buffer itself comes from the worker's pool). A little room for rare growth of
    // a kept buffer.
    assert!(get <= 1.2, "GET: {get:.2} allocations per request");
    assert!(small <= 1.2, "1 KiB POST: {small:.2} allocations per request");
    assert!(large <= 2.2, "28 KiB POST: {large:.2} allocations per request");
}
