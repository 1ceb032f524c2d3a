//! Event sink throughput: SQLite batched inserts (one transaction per batch of 1024, WAL) and
//! JSON lines to a file; the bar is 50,000 events/s for SQLite.
//!
//! The `sink-cpu` group measures the same SQLite writes in CPU time of the writing thread
//! (`/proc/thread-self/schedstat`) instead of wall time: on a shared machine wall time mostly
//! measures the wait for a core, while the writer's own cost per event is what the bar is about.
//! SQLite does its work (page writes to the WAL included) on the calling thread, so its CPU time
//! is the sink's whole cost apart from I/O waits.

use std::time::Duration;

use criterion::measurement::{Measurement, ValueFormatter};
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use palisade_events::jsonl::{JsonlSink, Rotation};
use palisade_events::sqlite::{Retention, SqliteSink};
use palisade_events::{Event, Sink};

#[path = "common/sample_event.rs"]
mod sample_event;
use sample_event::event;

/// "sqlite batch of 1024": batches of new events written to `sqlite`, time moving forward
/// from batch to batch (the time index grows at its end), under any measurement.
fn sqlite_batches<M: Measurement>(g: &mut criterion::BenchmarkGroup<'_, M>, sqlite: &mut SqliteSink) {
    let mut next = 0i64;
    g.bench_function("sqlite batch of 1024", |b| {
        b.iter_batched(
            || {
                next += 1024;
                (0..1024).map(|i| event(next + i)).collect::<Vec<Event>>()
            },
            |batch| sqlite.write(&batch).unwrap(),
            BatchSize::SmallInput,
        )
    });
}

fn sinks(c: &mut Criterion) {
    let dir = std::env::temp_dir().join(format!("pal-bench-sink-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let batch: Vec<Event> = (0..1024).map(event).collect();
    let mut g = c.benchmark_group("sink");
    g.throughput(Throughput::Elements(batch.len() as u64));
    g.measurement_time(Duration::from_secs(3));
    let mut sqlite = SqliteSink::open(&dir.join("bench.db"), Retention::default()).unwrap();
    // Time moves forward from batch to batch, as it does in production (the time index grows
    // at its end); client IPs cycle over 250 addresses.
    sqlite_batches(&mut g, &mut sqlite);
    // The previous write path, for comparison in the same run: the statement prepared once per
    // batch and every row's values passed as a `params!` array of trait objects.
    let conn = palisade_events::sqlite::open_rw(&dir.join("baseline.db")).unwrap();
    let mut next_b = 0i64;
    g.bench_function("sqlite batch of 1024, previous write path", |b| {
        b.iter_batched(
            || {
                next_b += 1024;
                (0..1024).map(|i| event(next_b + i)).collect::<Vec<Event>>()
            },
            |batch| {
                let tx = conn.unchecked_transaction().unwrap();
                {
                    let mut stmt = tx
                        .prepare(&format!(
                            "INSERT INTO events ({}) VALUES ({})",
                            palisade_events::sqlite::COLUMNS,
                            (1..=24).map(|i| format!("?{i}")).collect::<Vec<_>>().join(", ")
                        ))
                        .unwrap();
                    for e in &batch {
                        let others = if e.others.is_empty() { None } else { serde_json::to_string(&e.others).ok() };
                        stmt.execute(rusqlite::params![
                            e.time_ms,
                            e.last_ms,
                            e.count,
                            e.request_id,
                            e.app,
                            e.client_ip,
                            e.method,
                            e.host,
                            e.path,
                            e.query,
                            e.verdict.as_str(),
                            e.stage,
                            e.reason,
                            e.detector,
                            e.category,
                            e.confidence,
                            e.location,
                            e.fragment,
                            e.detail,
                            others,
                            e.status,
                            e.upstream_status,
                            e.latency_us as i64,
                            palisade_events::model::tags_text(&e.tags),
                        ])
                        .unwrap();
                    }
                }
                tx.commit().unwrap();
            },
            BatchSize::SmallInput,
        )
    });
    let mut jsonl = JsonlSink::file(&dir.join("bench.jsonl"), Rotation { max_size: 64 * 1024 * 1024, keep: 1 }).unwrap();
    g.bench_function("jsonl batch of 1024", |b| b.iter(|| jsonl.write(&batch).unwrap()));
    g.finish();
    let _ = std::fs::remove_dir_all(&dir);
}

/// CPU time of the calling thread, in nanoseconds.
struct ThreadCpu;

fn thread_cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|n| n.parse().ok()))
        .expect("/proc/thread-self/schedstat (Linux) is needed for the CPU-time measurement")
}

impl Measurement for ThreadCpu {
    type Intermediate = u64;
    type Value = u64;
    fn start(&self) -> u64 {
        thread_cpu_ns()
    }
    fn end(&self, i: u64) -> u64 {
        thread_cpu_ns().saturating_sub(i)
    }
    fn add(&self, a: &u64, b: &u64) -> u64 {
        a + b
    }
    fn zero(&self) -> u64 {
        0
    }
    fn to_f64(&self, v: &u64) -> f64 {
        *v as f64
    }
    fn formatter(&self) -> &dyn ValueFormatter {
        &CpuFormatter
    }
}

struct CpuFormatter;

impl ValueFormatter for CpuFormatter {
    fn scale_values(&self, _typical: f64, values: &mut [f64]) -> &'static str {
        for v in values.iter_mut() {
            *v /= 1e6;
        }
        "ms (thread CPU)"
    }
    fn scale_throughputs(&self, _typical: f64, t: &Throughput, values: &mut [f64]) -> &'static str {
        let n = match t {
            Throughput::Elements(n) | Throughput::Bytes(n) | Throughput::BytesDecimal(n) => *n as f64,
            _ => 1.0,
        };
        for v in values.iter_mut() {
            *v = n * 1e9 / *v;
        }
        "elem/s (thread CPU)"
    }
    fn scale_for_machines(&self, _values: &mut [f64]) -> &'static str {
        "ns"
    }
}

fn sqlite_cpu(c: &mut Criterion<ThreadCpu>) {
    let dir = std::env::temp_dir().join(format!("pal-bench-sink-cpu-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut g = c.benchmark_group("sink-cpu");
    g.throughput(Throughput::Elements(1024));
    g.measurement_time(Duration::from_secs(3));
    let mut sqlite = SqliteSink::open(&dir.join("bench.db"), Retention::default()).unwrap();
    sqlite_batches(&mut g, &mut sqlite);
    g.finish();
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, sinks);
criterion_group! {
    name = cpu;
    config = Criterion::default().with_measurement(ThreadCpu);
    targets = sqlite_cpu
}
criterion_main!(benches, cpu);
