//! The bounded pipeline between request workers and one sink.
//!
//! Workers call [`EventSender::send`], which never waits: the event goes into a bounded queue
//! or, when the queue is full, is dropped and counted. The queue is an unbounded
//! `std::sync::mpsc::channel` (it allocates small blocks as events arrive and frees them as the
//! writer takes them) bounded by the `queued` counter, so an idle proxy does not hold memory for
//! `queue_size` events (a `sync_channel` allocates and initialises all its slots up front).
//! One writer thread drains the queue in batches and hands them to the sink. The writer
//! polls (drains what is there, then sleeps one `tick` when it found less than a full batch)
//! instead of parking on the channel: a parked receiver would make every `send` of a worker
//! pay for a futex wake-up, and under a flood the writer would wake once per event.
//!
//! When the writer is behind (a poll found at least `aggregate_after` events waiting, or the
//! queue is more than half full), identical events (same app, client IP and reason code) are
//! **aggregated**: the first one is held for up to the aggregation window and every later one
//! within the window only increments its `count`. The held row is written when its window ends
//! (or on flush and shutdown).
//!
//! Accounting is exact: every event produced ends in exactly one of `written` (it is, or heads,
//! a stored row), `aggregated` (it was folded into another row's count) or `dropped` (queue full,
//! pipeline closed, or the sink failed to store its batch). Events still in the queue or held
//! for aggregation are `in_flight`; once the pipeline is idle or closed,
//! `produced == written + aggregated + dropped`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, Sender, SyncSender, TryRecvError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::model::Event;
use crate::sink::Sink;

/// Tuning of the pipeline.
#[derive(Clone, Debug)]
pub struct Options {
    /// Events the queue holds before new ones are dropped.
    pub queue_size: usize,
    /// Most events handed to the sink in one batch (one transaction for SQLite).
    pub batch_size: usize,
    /// Identical events within this window are folded into one row while the writer is behind.
    pub aggregate_window: Duration,
    /// How long the writer sleeps after a poll that found less than a full batch.
    pub tick: Duration,
    /// A poll that finds at least this many events means the writer is behind: identical
    /// events are then folded.
    pub aggregate_after: usize,
    /// How often the sink's maintenance (retention) runs.
    pub maintain_every: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            queue_size: 16_384,
            batch_size: 1024,
            aggregate_window: Duration::from_secs(10),
            tick: Duration::from_millis(50),
            aggregate_after: 256,
            maintain_every: Duration::from_secs(60),
        }
    }
}

/// The pipeline's counters (shared with the metrics exposition).
#[derive(Debug, Default)]
pub struct Counters {
    pub produced: AtomicU64,
    pub written: AtomicU64,
    pub aggregated: AtomicU64,
    pub dropped: AtomicU64,
    /// Events in the queue right now (incremented before a send, decremented on receipt).
    pub queued: AtomicU64,
    /// Events held by the writer (a batch being written, rows held for aggregation).
    pub held: AtomicU64,
    /// Batches the sink failed to store (their events count as dropped).
    pub sink_errors: AtomicU64,
    /// Batches stored.
    pub batches: AtomicU64,
}

/// A consistent-enough reading of the counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Snapshot {
    pub produced: u64,
    pub written: u64,
    pub aggregated: u64,
    pub dropped: u64,
    pub queued: u64,
    pub held: u64,
    pub sink_errors: u64,
    pub batches: u64,
}

impl Snapshot {
    /// Events neither written, aggregated nor dropped yet.
    pub fn in_flight(&self) -> u64 {
        self.produced.saturating_sub(self.written + self.aggregated + self.dropped)
    }
}

impl Counters {
    pub fn snapshot(&self) -> Snapshot {
        // Read the outcomes before `produced`, so that a reading taken while events flow never
        // shows more outcomes than productions.
        let written = self.written.load(Ordering::SeqCst);
        let aggregated = self.aggregated.load(Ordering::SeqCst);
        let dropped = self.dropped.load(Ordering::SeqCst);
        let queued = self.queued.load(Ordering::SeqCst);
        let held = self.held.load(Ordering::SeqCst);
        Snapshot {
            produced: self.produced.load(Ordering::SeqCst),
            written,
            aggregated,
            dropped,
            queued,
            held,
            sink_errors: self.sink_errors.load(Ordering::SeqCst),
            batches: self.batches.load(Ordering::SeqCst),
        }
    }
}

enum Msg {
    Event(Box<Event>),
    /// Write everything queued and held (aggregates included), then answer.
    Flush(SyncSender<()>),
    /// Like `Flush`, then end the writer.
    Stop(SyncSender<()>),
}

/// The producers' handle: cheap to clone, never blocks.
#[derive(Clone)]
pub struct EventSender {
    tx: Sender<Msg>,
    /// Most events queued at once (`Options::queue_size`).
    capacity: u64,
    counters: Arc<Counters>,
    closed: Arc<AtomicBool>,
}

impl std::fmt::Debug for EventSender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventSender").field("counters", &self.counters.snapshot()).finish()
    }
}

impl EventSender {
    /// Queue an event, or drop it (counted) when the queue is full. Never waits.
    pub fn send(&self, event: Event) {
        let c = &self.counters;
        c.produced.fetch_add(1, Ordering::SeqCst);
        if self.closed.load(Ordering::Relaxed) {
            c.dropped.fetch_add(1, Ordering::SeqCst);
            return;
        }
        // The counter is the bound: a slot is taken before sending and given back by the
        // writer when it takes the event.
        if c.queued.fetch_add(1, Ordering::SeqCst) >= self.capacity || self.tx.send(Msg::Event(Box::new(event))).is_err() {
            c.queued.fetch_sub(1, Ordering::SeqCst);
            c.dropped.fetch_add(1, Ordering::SeqCst);
        }
    }

    pub fn counters(&self) -> &Arc<Counters> {
        &self.counters
    }
}

/// A running pipeline: the sender and the writer thread.
pub struct Pipeline {
    sender: EventSender,
    writer: Mutex<Option<JoinHandle<()>>>,
    description: String,
}

impl std::fmt::Debug for Pipeline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pipeline").field("sink", &self.description).finish()
    }
}

impl Pipeline {
    /// Start the writer thread over `sink`.
    pub fn start(sink: Box<dyn Sink>, opts: Options) -> std::io::Result<Pipeline> {
        let opts = Options { queue_size: opts.queue_size.max(1), batch_size: opts.batch_size.max(1), ..opts };
        let (tx, rx) = mpsc::channel();
        let capacity = opts.queue_size as u64;
        let counters = Arc::new(Counters::default());
        let description = sink.describe();
        let c = counters.clone();
        let writer = std::thread::Builder::new().name("palisade-events".into()).spawn(move || Writer::new(sink, opts, c).run(rx))?;
        Ok(Pipeline { sender: EventSender { tx, capacity, counters, closed: Arc::new(AtomicBool::new(false)) }, writer: Mutex::new(Some(writer)), description })
    }

    pub fn sender(&self) -> &EventSender {
        &self.sender
    }

    pub fn counters(&self) -> &Arc<Counters> {
        &self.sender.counters
    }

    /// What the sink is (`sqlite:/var/lib/palisade/events.db`).
    pub fn description(&self) -> &str {
        &self.description
    }

    /// Write everything queued or held for aggregation, and wait until it is stored (bounded by
    /// `timeout`). Returns false on timeout or when the writer is gone.
    pub fn flush(&self, timeout: Duration) -> bool {
        self.control(timeout, Msg::Flush)
    }

    fn control(&self, timeout: Duration, make: fn(SyncSender<()>) -> Msg) -> bool {
        let (tx, rx) = mpsc::sync_channel(1);
        let deadline = Instant::now() + timeout;
        // Control messages do not take a slot of the bound: they are never refused for a full
        // queue, and the writer answers them after what was queued before them.
        if self.sender.tx.send(make(tx)).is_err() {
            return false;
        }
        rx.recv_timeout(deadline.saturating_duration_since(Instant::now())).is_ok()
    }

    /// Stop accepting events (later ones count as dropped), write what is queued and held, and
    /// end the writer thread (waiting at most `timeout` for it).
    pub fn close(&self, timeout: Duration) {
        self.sender.closed.store(true, Ordering::SeqCst);
        let Some(h) = self.writer.lock().unwrap_or_else(|e| e.into_inner()).take() else { return };
        if self.control(timeout, Msg::Stop) {
            let _ = h.join();
        } else {
            tracing::warn!(sink = %self.description, "events writer did not finish within {timeout:?}; detached");
        }
    }
}

impl Drop for Pipeline {
    fn drop(&mut self) {
        self.close(Duration::from_secs(5));
    }
}

struct Held {
    event: Event,
    /// When the window of this aggregate ends (writer clock).
    until: Instant,
}

struct Writer {
    sink: Box<dyn Sink>,
    opts: Options,
    c: Arc<Counters>,
    /// Held aggregates by `app \0 client_ip \0 reason`.
    held: HashMap<String, Held>,
    key: String,
    last_maintain: Instant,
}

/// Most distinct aggregates held at once; beyond it events are written individually.
const MAX_HELD: usize = 4096;

impl Writer {
    fn new(sink: Box<dyn Sink>, opts: Options, c: Arc<Counters>) -> Writer {
        Writer { sink, opts, c, held: HashMap::new(), key: String::new(), last_maintain: Instant::now() }
    }

    fn run(mut self, rx: Receiver<Msg>) {
        self.sink.start();
        let mut batch: Vec<Event> = Vec::with_capacity(self.opts.batch_size);
        let mut acks: Vec<SyncSender<()>> = Vec::new();
        let mut stop = false;
        let mut gone = false;
        while !stop && !gone {
            let mut taken = 0u64;
            let mut take = |m: Msg, batch: &mut Vec<Event>, acks: &mut Vec<SyncSender<()>>, stop: &mut bool| match m {
                Msg::Event(e) => {
                    taken += 1;
                    batch.push(*e);
                }
                Msg::Flush(tx) => acks.push(tx),
                Msg::Stop(tx) => {
                    acks.push(tx);
                    *stop = true;
                }
            };
            // A flush or stop request ends the batch: what was queued before it is in it.
            while batch.len() < self.opts.batch_size && acks.is_empty() {
                match rx.try_recv() {
                    Ok(m) => take(m, &mut batch, &mut acks, &mut stop),
                    Err(TryRecvError::Empty) => break,
                    Err(TryRecvError::Disconnected) => {
                        gone = true;
                        break;
                    }
                }
            }
            let full = batch.len() >= self.opts.batch_size;
            self.c.queued.fetch_sub(taken, Ordering::SeqCst);
            self.c.held.fetch_add(taken, Ordering::SeqCst);
            let behind = batch.len() >= self.opts.aggregate_after.max(1) || self.c.queued.load(Ordering::SeqCst) as usize >= self.opts.queue_size / 2;
            self.process(&mut batch, behind);
            self.close_windows(!acks.is_empty() || gone);
            for a in acks.drain(..) {
                let _ = a.try_send(());
            }
            if self.last_maintain.elapsed() >= self.opts.maintain_every {
                self.last_maintain = Instant::now();
                if let Err(e) = self.sink.maintain() {
                    tracing::warn!(error = %e, "events sink maintenance failed");
                }
            }
            if !full && !stop && !gone {
                #[allow(clippy::disallowed_methods)] // the events writer's own thread, not a worker's event loop
                std::thread::sleep(self.opts.tick);
            }
        }
    }

    /// Fold what can be folded, write the rest.
    fn process(&mut self, batch: &mut Vec<Event>, behind: bool) {
        if batch.is_empty() {
            return;
        }
        let now = Instant::now();
        let mut rows = Vec::with_capacity(batch.len());
        for e in batch.drain(..) {
            // The key is built in a reused buffer: no allocation unless a new aggregate opens.
            self.key.clear();
            for part in [&e.app, &e.client_ip, &e.reason] {
                self.key.push_str(part);
                self.key.push('\0');
            }
            if let Some(h) = self.held.get_mut(self.key.as_str()) {
                h.event.count = h.event.count.saturating_add(e.count);
                h.event.last_ms = h.event.last_ms.max(e.last_ms);
                self.c.aggregated.fetch_add(1, Ordering::SeqCst);
                self.c.held.fetch_sub(1, Ordering::SeqCst);
                continue;
            }
            if behind && self.held.len() < MAX_HELD {
                self.held.insert(self.key.clone(), Held { event: e, until: now + self.opts.aggregate_window });
                continue;
            }
            rows.push(e);
        }
        self.write(rows);
    }

    /// Write the aggregates whose window has ended (all of them when `all`).
    fn close_windows(&mut self, all: bool) {
        if self.held.is_empty() {
            return;
        }
        let now = Instant::now();
        let keys: Vec<String> = self.held.iter().filter(|(_, h)| all || h.until <= now).map(|(k, _)| k.clone()).collect();
        let rows: Vec<Event> = keys.iter().filter_map(|k| self.held.remove(k)).map(|h| h.event).collect();
        self.write(rows);
    }

    fn write(&mut self, mut rows: Vec<Event>) {
        if rows.is_empty() {
            return;
        }
        rows.sort_by_key(|e| e.time_ms);
        let n = rows.len() as u64;
        match self.sink.write(&rows) {
            Ok(()) => {
                self.c.written.fetch_add(n, Ordering::SeqCst);
                self.c.batches.fetch_add(1, Ordering::SeqCst);
            }
            Err(e) => {
                if !matches!(e, crate::sink::SinkError::Unavailable) {
                    tracing::warn!(error = %e, events = n, "events sink failed to store a batch; its events are dropped");
                }
                self.c.dropped.fetch_add(n, Ordering::SeqCst);
                self.c.sink_errors.fetch_add(1, Ordering::SeqCst);
            }
        }
        self.c.held.fetch_sub(n, Ordering::SeqCst);
    }
}
