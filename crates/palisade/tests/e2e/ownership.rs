//! Port ownership: a listener belongs to one Palisade process. A second instance (or any other
//! socket, even one with `SO_REUSEPORT` under the same uid) cannot join its port, so traffic is
//! never split between two configurations.

use std::net::SocketAddr;
use std::time::Instant;

use crate::cli::Bin;
use crate::common::*;

/// Addresses from the startup line of `bin`: (proxy listeners, admin).
async fn bound(bin: &mut Bin) -> (Vec<SocketAddr>, SocketAddr) {
    let _ = bin.started().await;
    let l = bin.seen.iter().rev().find(|l| l.contains("palisade started")).cloned().expect("startup line");
    let start = l.find("listeners=[").expect("listeners in the startup line") + "listeners=[".len();
    let end = l[start..].find(']').unwrap() + start;
    let listeners = l[start..end].split(',').map(|a| a.trim().parse().expect("listen address")).collect();
    let admin = l.split("admin=").nth(1).expect("admin in the startup line").split_whitespace().next().unwrap();
    assert!(!admin.starts_with("Some("), "{l}");
    (listeners, admin.parse().unwrap_or_else(|_| panic!("admin address in {l}")))
}

fn config(listen: &[String], admin: &str, target: &str) -> String {
    let mut s = String::from("workers: 2\nlisten:\n");
    for a in listen {
        s.push_str(&format!("  - addr: {a}\n"));
    }
    s.push_str(&format!("admin:\n  addr: {admin}\nserver:\n  shutdown_timeout: 500ms\n{}", one_app(target)));
    s
}

/// A second `palisade run` on an address in use exits non-zero with "address already in use".
async fn second_instance_fails(dir: &TempDir, name: &str, yaml: &str, addr: SocketAddr) {
    let path = dir.write(name, yaml);
    let started = Instant::now();
    let mut second = Bin::run(&path);
    let status = second.exit().await;
    let took = started.elapsed();
    let log = {
        // Everything it wrote to stderr: the reader thread ends when the pipe closes.
        while let Ok(l) = second.lines.recv_timeout(LIMIT) {
            second.seen.push(l);
        }
        second.seen.join("\n")
    };
    assert!(!status.success(), "the second instance started on {addr}: {log}");
    assert!(log.to_ascii_lowercase().contains("address already in use"), "{log}");
    assert!(log.contains(&addr.to_string()), "the error names {addr}: {log}");
    println!("second instance on {addr} refused after {took:?}");
}

#[tokio::test]
async fn a_second_instance_on_a_busy_port_fails_and_the_first_keeps_all_traffic() {
    let mut up = Upstream::tcp(reply("first")).await;
    let dir = TempDir::new();
    let first_cfg = dir.write("first.yaml", config(&["127.0.0.1:0".into(), "127.0.0.1:0".into()], "127.0.0.1:0", &up.url()));
    let mut first = Bin::run(&first_cfg);
    let (listeners, admin) = bound(&mut first).await;
    assert_eq!(listeners.len(), 2);

    // Each proxy listener, and the admin listener, is refused to a second instance; the other
    // addresses of that instance are free ports, so the busy one is the cause.
    for (i, busy) in listeners.iter().enumerate() {
        let yaml = config(&[busy.to_string()], "127.0.0.1:0", &up.url());
        second_instance_fails(&dir, &format!("second-{i}.yaml"), &yaml, *busy).await;
    }
    let yaml = config(&["127.0.0.1:0".into()], &admin.to_string(), &up.url());
    second_instance_fails(&dir, "second-admin.yaml", &yaml, admin).await;

    // Nor can any other socket join, even with SO_REUSEPORT under the same uid.
    for addr in listeners.iter().chain([&admin]) {
        let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
        s.set_reuse_address(true).unwrap();
        s.set_reuse_port(true).unwrap();
        let err = s.bind(&(*addr).into()).expect_err("a SO_REUSEPORT socket joined the port");
        assert_eq!(err.kind(), std::io::ErrorKind::AddrInUse, "{err}");
    }

    // The first instance serves every request, on new connections spread over its workers.
    let n = 40;
    for i in 0..n {
        let r = get(listeners[i % 2], "localhost", &format!("/r{i}")).await;
        assert_eq!(r.status, 200, "{}", r.dump());
        assert_eq!(r.text(), "first");
    }
    assert_eq!(up.drain().len(), n);
    assert_eq!(get(admin, "localhost", "/healthz").await.status, 200);

    first.signal(libc::SIGTERM);
    assert!(first.exit().await.success());
}
