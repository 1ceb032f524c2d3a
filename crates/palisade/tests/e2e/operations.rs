//! Operating the binary: port ownership (a listener belongs to one Palisade process; a second
//! instance, or any other socket, even one with `SO_REUSEPORT` under the same uid, cannot join
//! its port, so traffic is never split between two configurations), what `palisade demo` leaves
//! behind, and the log lines operators read.

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

/// `palisade demo` keeps its spec and events database in a private temporary directory, and
/// removes it when it exits.
#[tokio::test]
async fn the_demo_removes_its_temporary_directory_on_exit() {
    let tmp = TempDir::new();
    let demo_dirs = || std::fs::read_dir(tmp.path()).unwrap().filter_map(Result::ok).map(|e| e.file_name().to_string_lossy().into_owned()).collect::<Vec<_>>();
    let mut bin = Bin::spawn_env(&["--log-format", "text", "demo", "--listen", "127.0.0.1:0", "--admin", "127.0.0.1:0"], &[("TMPDIR", tmp.path())]);
    let addr = bin.started().await;
    assert_eq!(get(addr, "localhost", "/api/products").await.status, 200);
    let dirs = demo_dirs();
    assert!(dirs.len() == 1 && dirs[0].starts_with("palisade-demo-"), "{dirs:?}");
    bin.signal(libc::SIGTERM);
    assert!(bin.exit().await.success());
    assert_eq!(demo_dirs(), Vec::<String>::new(), "the demo left files behind");
}

/// JSON logs carry addresses as plain strings (no `Some(..)` from an optional field).
#[tokio::test]
async fn the_json_startup_line_has_plain_addresses() {
    let up = Upstream::tcp(reply("ok")).await;
    let dir = TempDir::new();
    let path = dir.write("p.yaml", config(&["127.0.0.1:0".into()], "127.0.0.1:0", &up.url()));
    let mut bin = Bin::spawn(&["--log-level", "info", "--log-format", "json", "run", "-c", path.to_str().unwrap()]);
    let line = bin.line("palisade started").await;
    let v: serde_json::Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
    let admin = v["admin"].as_str().unwrap_or_else(|| panic!("no admin string: {line}"));
    let admin: SocketAddr = admin.parse().unwrap_or_else(|_| panic!("admin is not an address: {line}"));
    assert_eq!(get(admin, "localhost", "/healthz").await.status, 200);
    let listeners = v["listeners"].as_str().unwrap_or_else(|| panic!("no listeners: {line}"));
    let listen: SocketAddr = listeners.trim_matches(['[', ']']).parse().unwrap_or_else(|_| panic!("listeners: {line}"));
    assert_eq!(get(listen, "localhost", "/").await.status, 200);

    // Without an admin listener the field is left out rather than printed as `None`.
    let path = dir.write("q.yaml", format!("workers: 1\nlisten:\n  - addr: 127.0.0.1:0\n{}", one_app(&up.url())));
    let mut bin = Bin::spawn(&["--log-level", "info", "--log-format", "json", "run", "-c", path.to_str().unwrap()]);
    let line = bin.line("palisade started").await;
    let v: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert!(v.get("admin").is_none(), "{line}");
    assert!(!line.contains("Some(") && !line.contains("None"), "{line}");
}
