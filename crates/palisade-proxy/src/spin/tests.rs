//! The spinner keeps a worker's runtime out of blocking parks for its budget after a request,
//! and lets it block again otherwise. Blocking parks are counted with tokio's `on_thread_park`
//! hook, which runs before every blocking poll of the driver (never before a zero-timeout one).

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::{kick, run};

/// Blocking parks of the runtime so far.
#[derive(Clone)]
struct Parks(Arc<AtomicUsize>);

impl Parks {
    fn get(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }
}

/// Run `body` on a current-thread runtime with a LocalSet (like a worker) beside a spinner of
/// `budget`.
fn with_spinner<F: Future<Output = ()> + 'static>(budget: Duration, body: impl FnOnce(Parks) -> F) {
    let parks = Parks(Arc::new(AtomicUsize::new(0)));
    let p = parks.clone();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .on_thread_park(move || {
            p.0.fetch_add(1, Ordering::Relaxed);
        })
        .build()
        .unwrap();
    let local = tokio::task::LocalSet::new();
    let fut = body(parks);
    local.block_on(&rt, async move {
        let spinner = tokio::task::spawn_local(run(budget));
        // Let the spinner reach its sleep first.
        tokio::task::yield_now().await;
        fut.await;
        spinner.abort();
    });
}

async fn sleep_ms(ms: u64) {
    tokio::time::sleep(Duration::from_millis(ms)).await;
}

#[test]
fn a_kicked_worker_polls_without_blocking() {
    // A budget far longer than the wait: the timer fires with no blocking park at all.
    with_spinner(Duration::from_secs(30), |parks| async move {
        kick();
        let before = parks.get();
        sleep_ms(30).await;
        assert_eq!(parks.get() - before, 0);
    });
}

#[test]
fn a_worker_without_requests_blocks() {
    with_spinner(Duration::from_secs(30), |parks| async move {
        let before = parks.get();
        sleep_ms(30).await;
        assert!(parks.get() > before);
    });
}

#[test]
fn spinning_stops_after_the_budget() {
    // 1 ms of spinning, then the runtime blocks until the 200 ms timer.
    with_spinner(Duration::from_millis(1), |parks| async move {
        kick();
        let before = parks.get();
        sleep_ms(200).await;
        assert!(parks.get() > before);
    });
}

#[test]
fn a_new_request_wakes_a_sleeping_spinner() {
    with_spinner(Duration::from_secs(30), |parks| async move {
        let start = parks.get();
        sleep_ms(20).await; // nothing kicked yet: blocks
        let slept = parks.get();
        assert!(slept > start);
        kick();
        sleep_ms(20).await; // spins
        assert_eq!(parks.get(), slept);
    });
}

#[test]
fn a_zero_budget_never_spins() {
    with_spinner(Duration::ZERO, |parks| async move {
        kick();
        let before = parks.get();
        sleep_ms(30).await;
        assert!(parks.get() > before);
    });
}
