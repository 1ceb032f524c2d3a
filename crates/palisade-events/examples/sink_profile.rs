//! Profile the SQLite sink's write path: write N batches of 1024 events (the bench's events:
//! 250 client IPs, time moving forward) into a fresh database, then print what it cost.
//!
//! `cargo run --release -p palisade-events --example sink_profile -- N [DIR]`; run it under
//! `valgrind --tool=callgrind` with N and 2N batches and divide the difference of the
//! instruction counts by N × 1024 for the steady-state instructions per stored event (the
//! events are built once and only their times change, so the difference is the sink's own
//! work). It also prints the bytes the process wrote (`/proc/self/io` `wchar`: WAL frames and
//! checkpoints) and its user and system CPU time, which callgrind does not see.

use std::path::PathBuf;

use palisade_events::sqlite::{Retention, SqliteSink};
use palisade_events::{Event, Sink};

#[path = "../benches/common/sample_event.rs"]
mod sample_event;
use sample_event::event;

fn io_field(name: &str) -> u64 {
    std::fs::read_to_string("/proc/self/io").ok().and_then(|s| s.lines().find_map(|l| l.strip_prefix(name).and_then(|v| v.trim().parse().ok()))).unwrap_or(0)
}

/// (user, system) CPU seconds of this process.
fn cpu() -> (f64, f64) {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<&str> = after.split_whitespace().collect();
    let tick = 100.0; // USER_HZ on Linux
    let get = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0) / tick;
    (get(11), get(12))
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n: i64 = args.next().and_then(|a| a.parse().ok()).expect("usage: sink_profile N [DIR]");
    let dir = args.next().map(PathBuf::from).unwrap_or_else(|| std::env::temp_dir().join(format!("pal-sink-profile-{}", std::process::id())));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut sink = SqliteSink::open(&dir.join("profile.db"), Retention::default()).unwrap();
    let mut batch: Vec<Event> = (0..1024).map(event).collect();
    let w0 = io_field("wchar:");
    let (u0, s0) = cpu();
    let start = std::time::Instant::now();
    for b in 0..n {
        for (i, e) in batch.iter_mut().enumerate() {
            e.time_ms = 1_795_000_000_000 + b * 1024 + i as i64;
            e.last_ms = e.time_ms;
        }
        sink.write(&batch).unwrap();
    }
    let wall = start.elapsed().as_secs_f64();
    let (u1, s1) = cpu();
    let events = (n * 1024) as f64;
    let wrote = io_field("wchar:") - w0;
    println!(
        "{n} batches, {events} events: {wall:.2} s wall ({:.0} events/s), user {:.2} s, system {:.2} s ({:.0} events per CPU second), {:.0} bytes written per event",
        events / wall,
        u1 - u0,
        s1 - s0,
        events / ((u1 - u0) + (s1 - s0)).max(1e-9),
        wrote as f64 / events
    );
    drop(sink);
    let _ = std::fs::remove_dir_all(&dir);
}
