//! Busy polling after requests (`server.busy_poll`): a worker that has just seen a request
//! keeps polling its sockets without sleeping for a while, so that the upstream's answer and the
//! client's next request are picked up without the worker's CPU going idle in between.
//!
//! Why: on a virtual machine an idle CPU halts, and waking it again (an interrupt from the CPU
//! where the peer ran, through the hypervisor) costs tens of microseconds. A request proxied at
//! low concurrency sleeps twice (waiting for the upstream, then for the client's next request),
//! so each round trip pays two such wake-ups on the worker's CPU (see docs/BENCHMARKS.md,
//! "Latency at -c 1"). HAProxy's `busy-polling` exists for the same reason; unlike it, the spin
//! here is bounded: it stops `busy_poll` after the last request seen, and the worker then sleeps
//! in the poller as before.
//!
//! How: one task per worker ([`run`]). Request handling calls [`kick`] (a counter increment on
//! the worker's thread, and a local wake-up when the spinner sleeps). While the spinner is
//! within its budget it yields on every turn; tokio's current-thread scheduler then polls the
//! I/O driver with a zero timeout (`epoll_wait(.., 0)`) instead of blocking in it, so ready
//! sockets are found by the running thread and nobody has to wake it. Under load the scheduler
//! rarely runs out of work, so the spinner costs one cheap task poll per empty run queue.

use std::cell::{Cell, RefCell};
use std::future::poll_fn;
use std::task::{Poll, Waker};
use std::time::{Duration, Instant};

thread_local! {
    static KICKS: Cell<u64> = const { Cell::new(0) };
    static SLEEPER: RefCell<Option<Waker>> = const { RefCell::new(None) };
}

/// A request was seen on this worker: spin (again) for the budget. Costs a thread-local
/// increment, plus one local wake-up when the spinner was asleep.
pub fn kick() {
    KICKS.with(|k| k.set(k.get().wrapping_add(1)));
    // `try_borrow_mut`: never reentrant in practice (wakers of local tasks do not call back).
    if let Some(w) = SLEEPER.with(|s| s.try_borrow_mut().ok().and_then(|mut s| s.take())) {
        w.wake();
    }
}

fn kicks() -> u64 {
    KICKS.with(Cell::get)
}

/// The spinner of one worker: spins for `budget` after each [`kick`], sleeps otherwise. Runs
/// until its task is dropped. A zero budget returns at once (nothing to do).
pub async fn run(budget: Duration) {
    if budget.is_zero() {
        return;
    }
    let mut seen = kicks();
    loop {
        // Asleep until a request is seen.
        poll_fn(|cx| {
            if kicks() != seen {
                return Poll::Ready(());
            }
            SLEEPER.with(|s| *s.borrow_mut() = Some(cx.waker().clone()));
            Poll::Pending
        })
        .await;
        seen = kicks();
        let mut until = Instant::now() + budget;
        loop {
            tokio::task::yield_now().await;
            let now = Instant::now();
            let k = kicks();
            if k != seen {
                seen = k;
                until = now + budget;
            } else if now >= until {
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests;
