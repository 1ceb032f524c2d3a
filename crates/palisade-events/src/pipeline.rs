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
//! **Folding on the request path.** An aggregate the writer holds open is also registered in a
//! small table shared with the producers ([`Folds`], keyed by app, client IP and reason code).
//! A producer that records an event first looks its key up there, from borrowed data
//! ([`EventSender::record`] with a [`FoldKey`]); when an aggregate with that key is open, it
//! only bumps that aggregate's counter: the event is never built, queued or freed, which is what
//! keeps a flood of identical events cheap for the request path. When the writer closes the
//! window it takes the entry's count (under the same lock) and adds it to the held row, so an
//! event is folded either before the row is written or not at all. An empty table costs the
//! producer one relaxed atomic load.
//!
//! **Busy keys roll over.** When a window ends and its key is still busy (at least as many
//! events were folded into it as would have kept the writer behind: `aggregate_after` per
//! `tick`, over the window), the writer writes the row and, under the same lock, re-opens the
//! entry for a new window at once instead of removing it. Producers never see a gap, so a flood
//! of identical events never falls back to building and queueing events at a window end (a
//! burst of a `tick`'s worth of events, allocated on the workers and freed on the writer, which
//! showed as an RSS step every window). The re-opened window's row takes its details from the
//! row that opened the run (path, fragment, request id: the events folded on the request path
//! are never built, so theirs are not known; a queued event of the key that reaches the writer
//! first lends the row its own); the first event folded into it heads the row (it counts as held
//! until the row is stored, then written), every later one counts as aggregated. A re-opened
//! window into which nothing was folded is closed without a row.
//!
//! Accounting is exact: every event produced ends in exactly one of `written` (it is, or heads,
//! a stored row), `aggregated` (it was folded into another row's count) or `dropped` (queue full,
//! pipeline closed, or the sink failed to store its batch). Events still in the queue or held
//! for aggregation are `in_flight`; once the pipeline is idle or closed,
//! `produced == written + aggregated + dropped`.

use std::collections::HashMap;
use std::hash::{BuildHasher, BuildHasherDefault, Hasher};
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
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

/// The aggregation key of an event (app, client IP, reason code), borrowed from the request:
/// what a producer checks before it builds an event. It must match the event that `make` would
/// build in [`EventSender::record`] (`app`, `client_ip` and `reason` of [`Event`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FoldKey<'a> {
    pub app: &'a str,
    pub client_ip: IpAddr,
    pub reason: &'a str,
}

impl<'a> FoldKey<'a> {
    /// The key of a built event; `None` when its client IP is not an address (such events are
    /// only folded by the writer).
    pub fn of(e: &'a Event) -> Option<FoldKey<'a>> {
        Some(FoldKey { app: &e.app, client_ip: e.client_ip.parse().ok()?, reason: &e.reason })
    }
}

/// One open aggregate as producers see it: the events folded into it on the request path.
#[derive(Debug)]
struct Fold {
    app: Box<str>,
    client_ip: IpAddr,
    reason: Box<str>,
    /// Events folded into the current window.
    count: u64,
    /// First and last time of those events.
    first_ms: i64,
    last_ms: i64,
    /// The window was re-opened at the end of the previous one: its first event heads the row.
    rolled: bool,
}

/// What [`Folds::fold`] did with an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Folded {
    /// No aggregate with this key is open.
    No,
    /// Counted into an open aggregate (`aggregated`).
    Aggregated,
    /// The first event of a re-opened window: it heads the row (`held` until it is written).
    Head,
}

/// What an aggregate's entry held when its window ended.
#[derive(Clone, Copy, Debug)]
struct Taken {
    count: u64,
    first_ms: i64,
    last_ms: i64,
    /// The entry stays open for a new window.
    reopened: bool,
}

impl Fold {
    fn is(&self, k: &FoldKey<'_>) -> bool {
        self.client_ip == k.client_ip && *self.reason == *k.reason && *self.app == *k.app
    }
}

/// Hashes are computed by [`Folds::hash`]; the table uses them as they are.
#[derive(Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// The aggregates the writer holds open, shared with the producers (see the module docs).
/// At most [`MAX_HELD`] entries: one per held aggregate.
#[derive(Default)]
struct Folds {
    /// Entries in `table`: producers skip the lock when it is 0.
    open: AtomicUsize,
    /// By key hash; a hash collision gives a list of two.
    table: Mutex<HashMap<u64, Vec<Fold>, BuildHasherDefault<IdHasher>>>,
    /// Seeded per process (client IPs are chosen by clients); foldhash costs a fraction of
    /// SipHash on the request path.
    hasher: foldhash::fast::RandomState,
}

impl Folds {
    fn hash(&self, k: &FoldKey<'_>) -> u64 {
        self.hasher.hash_one(k)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Vec<Fold>, BuildHasherDefault<IdHasher>>> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Fold one event into the open aggregate with this key, if there is one. A producer passes
    /// the counters: a head is counted (`produced`, `held`) under the lock, so that the writer
    /// never stores (and counts as written) a head not yet counted as produced; a plain fold is
    /// counted by the caller.
    fn fold(&self, k: &FoldKey<'_>, time_ms: i64, producer: Option<&Counters>) -> Folded {
        if self.open.load(Ordering::Relaxed) == 0 {
            return Folded::No;
        }
        let h = self.hash(k);
        let mut t = self.lock();
        let Some(f) = t.get_mut(&h).and_then(|l| l.iter_mut().find(|f| f.is(k))) else { return Folded::No };
        let head = f.rolled && f.count == 0;
        f.count += 1;
        f.first_ms = f.first_ms.min(time_ms);
        f.last_ms = f.last_ms.max(time_ms);
        if head {
            if let Some(c) = producer {
                c.produced.fetch_add(1, Ordering::SeqCst);
                c.held.fetch_add(1, Ordering::SeqCst);
            }
            Folded::Head
        } else {
            Folded::Aggregated
        }
    }

    /// Writer side: an aggregate with this key was opened.
    fn open(&self, k: &FoldKey<'_>) {
        let h = self.hash(k);
        let mut t = self.lock();
        let list = t.entry(h).or_default();
        if !list.iter().any(|f| f.is(k)) {
            list.push(Fold {
                app: k.app.into(),
                client_ip: k.client_ip,
                reason: k.reason.into(),
                count: 0,
                first_ms: i64::MAX,
                last_ms: i64::MIN,
                rolled: false,
            });
            self.open.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Writer side: the aggregate's window ends. Takes what was folded into it and, when
    /// `reopen` says so for that count (and it is not 0), keeps the entry open for a new window
    /// (emptied, its first event to head the next row); otherwise removes it.
    fn roll(&self, k: &FoldKey<'_>, reopen: impl FnOnce(u64) -> bool) -> Taken {
        let none = Taken { count: 0, first_ms: i64::MAX, last_ms: i64::MIN, reopened: false };
        let h = self.hash(k);
        let mut t = self.lock();
        let Some(list) = t.get_mut(&h) else { return none };
        let Some(i) = list.iter().position(|f| f.is(k)) else { return none };
        let f = &mut list[i];
        let mut taken = Taken { count: f.count, first_ms: f.first_ms, last_ms: f.last_ms, reopened: false };
        if f.count > 0 && reopen(f.count) {
            (f.count, f.first_ms, f.last_ms, f.rolled) = (0, i64::MAX, i64::MIN, true);
            taken.reopened = true;
        } else {
            list.swap_remove(i);
            if list.is_empty() {
                t.remove(&h);
            }
            self.open.fetch_sub(1, Ordering::Relaxed);
        }
        taken
    }
}

pub(crate) enum Msg {
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
    folds: Arc<Folds>,
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

    /// Record an event with this aggregation key: when the writer holds an aggregate with the
    /// same key open, the event is only counted into it (`produced` and `aggregated`) and `make`
    /// is not called; otherwise the event is built with `make` and [`send`](Self::send)t.
    /// Never waits (beyond a lock held for a table look-up).
    pub fn record(&self, key: FoldKey<'_>, time_ms: i64, make: impl FnOnce() -> Event) {
        if !self.closed.load(Ordering::Relaxed) {
            match self.folds.fold(&key, time_ms, Some(&self.counters)) {
                Folded::Aggregated => {
                    // `produced` first: a snapshot never shows more outcomes than productions.
                    self.counters.produced.fetch_add(1, Ordering::SeqCst);
                    self.counters.aggregated.fetch_add(1, Ordering::SeqCst);
                    return;
                }
                // Counted by `fold`.
                Folded::Head => return,
                Folded::No => {}
            }
        }
        self.send(make());
    }

    pub fn counters(&self) -> &Arc<Counters> {
        &self.counters
    }

    /// Ask the writer to write everything queued and held (for a writer driven by hand).
    #[cfg(test)]
    pub(crate) fn send_flush(&self, ack: SyncSender<()>) {
        let _ = self.tx.send(Msg::Flush(ack));
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
        let folds = Arc::new(Folds::default());
        let f = folds.clone();
        let writer = std::thread::Builder::new().name("palisade-events".into()).spawn(move || Writer::new(sink, opts, c, f).run(rx))?;
        Ok(Pipeline {
            sender: EventSender { tx, capacity, counters, closed: Arc::new(AtomicBool::new(false)), folds },
            writer: Mutex::new(Some(writer)),
            description,
        })
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

/// What one [`Writer::poll`] found.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Polled {
    /// A full batch: poll again at once.
    pub full: bool,
    /// A stop request was answered.
    pub stop: bool,
    /// Every sender is gone.
    pub gone: bool,
}

struct Held {
    /// The row's head; for a re-opened window ([`Held::rolled`]) the details its row is written
    /// with (time and count come from the fold).
    event: Event,
    /// When the window of this aggregate ends (writer clock).
    until: Instant,
    /// A window re-opened at the end of the previous one: `event` heads no event of its own,
    /// the first event folded into the window (on the request path or here) heads the row.
    rolled: bool,
}

pub(crate) struct Writer {
    sink: Box<dyn Sink>,
    opts: Options,
    c: Arc<Counters>,
    /// Held aggregates by `app \0 client_ip \0 reason`.
    held: HashMap<String, Held>,
    /// The same aggregates, as producers fold into them.
    folds: Arc<Folds>,
    key: String,
    last_maintain: Instant,
}

/// Most distinct aggregates held at once; beyond it events are written individually.
const MAX_HELD: usize = 4096;

#[cfg(test)]
impl Writer {
    /// A writer driven by hand (no thread; the test calls [`Writer::poll`]): the producers'
    /// handle, the writer, and the queue between them.
    pub(crate) fn manual(sink: Box<dyn Sink>, opts: Options) -> (EventSender, Writer, Receiver<Msg>) {
        let (tx, rx) = mpsc::channel();
        let counters = Arc::new(Counters::default());
        let folds = Arc::new(Folds::default());
        let w = Writer::new(sink, opts.clone(), counters.clone(), folds.clone());
        let sender = EventSender { tx, capacity: opts.queue_size as u64, counters, closed: Arc::new(AtomicBool::new(false)), folds };
        (sender, w, rx)
    }

    /// End every open window now: the next poll closes (or rolls over) them.
    pub(crate) fn end_windows(&mut self) {
        let now = Instant::now();
        for h in self.held.values_mut() {
            h.until = now;
        }
    }
}

impl Writer {
    fn new(sink: Box<dyn Sink>, opts: Options, c: Arc<Counters>, folds: Arc<Folds>) -> Writer {
        Writer { sink, opts, c, held: HashMap::new(), folds, key: String::new(), last_maintain: Instant::now() }
    }

    fn run(mut self, rx: Receiver<Msg>) {
        self.sink.start();
        let mut batch: Vec<Event> = Vec::with_capacity(self.opts.batch_size);
        loop {
            let p = self.poll(&rx, &mut batch);
            if p.stop || p.gone {
                break;
            }
            if !p.full {
                #[allow(clippy::disallowed_methods)] // the events writer's own thread, not a worker's event loop
                std::thread::sleep(self.opts.tick);
            }
        }
    }

    /// One poll: take up to a batch from the queue, fold or write it, end the windows that are
    /// due, answer flush and stop requests, run the sink's maintenance when it is time.
    pub(crate) fn poll(&mut self, rx: &Receiver<Msg>, batch: &mut Vec<Event>) -> Polled {
        let mut taken = 0u64;
        let mut acks: Vec<SyncSender<()>> = Vec::new();
        let (mut stop, mut gone) = (false, false);
        // A flush or stop request ends the batch: what was queued before it is in it.
        while batch.len() < self.opts.batch_size && acks.is_empty() {
            match rx.try_recv() {
                Ok(Msg::Event(e)) => {
                    taken += 1;
                    batch.push(*e);
                }
                Ok(Msg::Flush(tx)) => acks.push(tx),
                Ok(Msg::Stop(tx)) => {
                    acks.push(tx);
                    stop = true;
                }
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
        self.process(batch, behind);
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
        Polled { full, stop, gone }
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
                if h.rolled {
                    // Folded through the shared table, which knows whether the window has a
                    // head yet; a head lends the row its own details.
                    match FoldKey::of(&e).map(|k| self.folds.fold(&k, e.time_ms, None)) {
                        Some(Folded::Head) => {
                            // Already counted as produced and held (taken from the queue); the
                            // fold counted it into the window.
                            h.event = Event { count: 0, ..e };
                            continue;
                        }
                        Some(Folded::Aggregated) => {
                            // `held` first: a snapshot reads `aggregated` before `held`, so
                            // it never sees an event counted as both.
                            self.c.held.fetch_sub(1, Ordering::SeqCst);
                            self.c.aggregated.fetch_add(1, Ordering::SeqCst);
                            continue;
                        }
                        // A rolled window always has its entry in the table.
                        Some(Folded::No) | None => {}
                    }
                }
                h.event.count = h.event.count.saturating_add(e.count);
                h.event.last_ms = h.event.last_ms.max(e.last_ms);
                self.c.held.fetch_sub(1, Ordering::SeqCst);
                self.c.aggregated.fetch_add(1, Ordering::SeqCst);
                continue;
            }
            if behind && self.held.len() < MAX_HELD {
                if let Some(k) = FoldKey::of(&e) {
                    self.folds.open(&k);
                }
                self.held.insert(self.key.clone(), Held { event: e, until: now + self.opts.aggregate_window, rolled: false });
                continue;
            }
            rows.push(e);
        }
        self.write(rows);
    }

    /// Whether a key into which `folded` events were folded over a whole window (by producers;
    /// in a re-opened window, by the writer too) is still busy: at least as many as would have
    /// kept the writer behind (`aggregate_after` per `tick`) had they been queued.
    fn busy(opts: &Options, folded: u64) -> bool {
        let tick = opts.tick.as_nanos().max(1);
        u128::from(folded) * tick >= opts.aggregate_after.max(1) as u128 * opts.aggregate_window.as_nanos()
    }

    /// Write the aggregates whose window has ended (all of them when `all`). A busy key's
    /// aggregate is re-opened for a new window in the same step (see the module docs), unless
    /// `all`.
    fn close_windows(&mut self, all: bool) {
        if self.held.is_empty() {
            return;
        }
        let now = Instant::now();
        let (opts, folds) = (&self.opts, &self.folds);
        let mut rows: Vec<Event> = Vec::new();
        // Closed for good: removed below (their keys are cloned; a re-opened one stays in place).
        let mut closed: Vec<(String, Taken)> = Vec::new();
        for (key, h) in self.held.iter_mut().filter(|(_, h)| all || h.until <= now) {
            let none = Taken { count: 0, first_ms: i64::MAX, last_ms: i64::MIN, reopened: false };
            // What producers folded (into a re-opened window: every event of it, its head too).
            let taken = FoldKey::of(&h.event).map_or(none, |k| folds.roll(&k, |n| !all && Self::busy(opts, n)));
            if taken.reopened {
                rows.push(Self::row(h.event.clone(), h.rolled, &taken));
                h.event.count = 0;
                h.until = now + opts.aggregate_window;
                h.rolled = true;
            } else {
                closed.push((key.clone(), taken));
            }
        }
        for (key, taken) in closed {
            if let Some(h) = self.held.remove(&key) {
                let row = Self::row(h.event, h.rolled, &taken);
                // A re-opened window into which nothing was folded has no row.
                if row.count > 0 {
                    rows.push(row);
                }
            }
        }
        self.write(rows);
    }

    /// The row of a held aggregate whose window ended, with what producers folded into it.
    fn row(mut event: Event, rolled: bool, taken: &Taken) -> Event {
        event.count = event.count.saturating_add(u32::try_from(taken.count).unwrap_or(u32::MAX));
        if rolled {
            // Its events are the ones folded into the window (the writer's too).
            if taken.count > 0 {
                (event.time_ms, event.last_ms) = (taken.first_ms, taken.last_ms);
            }
        } else {
            event.last_ms = event.last_ms.max(taken.last_ms);
        }
        event
    }

    fn write(&mut self, mut rows: Vec<Event>) {
        if rows.is_empty() {
            return;
        }
        rows.sort_by_key(|e| e.time_ms);
        let n = rows.len() as u64;
        let stored = self.sink.write(&rows);
        // Out of `held` before into an outcome: a snapshot reads the outcomes before `held`, so
        // it never sees an event counted as both.
        self.c.held.fetch_sub(n, Ordering::SeqCst);
        match stored {
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
    }
}
