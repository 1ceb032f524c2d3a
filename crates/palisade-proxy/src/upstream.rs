//! Upstreams: targets, balancing, health, and keep-alive connection pools.
//!
//! Shared state (counters, ejection and health flags) lives in [`Upstream`], which belongs to a
//! configuration snapshot and is shared by all workers through atomics. Idle connections live in
//! a per-worker pool (a thread-local, no locks): each worker runs a single-threaded runtime, and
//! a hyper HTTP/1 connection is driven by a task on the worker that opened it.
//!
//! A request that fails before any byte of it reached the upstream (connect error, or a pooled
//! connection the upstream had already closed) is retried on another connection or target.

use std::cell::RefCell;
use std::future::Future;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{HeaderValue, Request, Response};
use http_body::{Body, Frame, SizeHint};
use hyper::body::Incoming;
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use palisade_config::{Balance, Target, UpstreamConfig};
use tokio::net::{TcpStream, UnixStream};
use tokio::time::Sleep;

use crate::body::{BodyError, UpBody};
use crate::io::Stream;

/// Where a target is reached, resolved at snapshot build time.
#[derive(Clone, Debug)]
pub enum Addr {
    Tcp(SocketAddr),
    Unix(PathBuf),
}

pub struct TargetState {
    pub target: Target,
    pub addr: Addr,
    /// `host:port` for `host_header: upstream`.
    pub authority: HeaderValue,
    active: AtomicUsize,
    fails: AtomicU32,
    /// Milliseconds since [`epoch`] until which the target is ejected.
    ejected_until: AtomicU64,
    /// Result of active health checks (true when none are configured).
    healthy: AtomicBool,
    check_streak: AtomicU32,
}

impl TargetState {
    pub fn is_healthy(&self) -> bool {
        self.healthy.load(Ordering::Relaxed)
    }

    pub fn active(&self) -> usize {
        self.active.load(Ordering::Relaxed)
    }

    fn available(&self, now_ms: u64) -> bool {
        self.healthy.load(Ordering::Relaxed) && self.ejected_until.load(Ordering::Relaxed) <= now_ms
    }
}

pub struct Upstream {
    pub cfg: UpstreamConfig,
    pub targets: Vec<TargetState>,
    /// Snapshot generation and index, which key the per-worker pools.
    pub generation: u64,
    pub index: usize,
    rr: AtomicUsize,
}

/// A monotonic millisecond clock shared by all workers.
fn now_ms() -> u64 {
    static EPOCH: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    EPOCH.get_or_init(Instant::now).elapsed().as_millis() as u64 + 1
}

impl Upstream {
    /// Resolve targets. Host names are resolved once here (at start and on reload).
    pub fn build(cfg: &UpstreamConfig, generation: u64, index: usize) -> Result<Upstream, (usize, String)> {
        let mut targets = Vec::with_capacity(cfg.targets.len());
        for (i, t) in cfg.targets.iter().enumerate() {
            let (addr, authority) = match &t.value {
                Target::Tcp { host, port } => {
                    let addr = (host.as_str(), *port)
                        .to_socket_addrs()
                        .map_err(|e| (i, format!("cannot resolve {host}: {e}")))?
                        .next()
                        .ok_or_else(|| (i, format!("{host} resolves to no address")))?;
                    let auth = if host.contains(':') { format!("[{host}]:{port}") } else { format!("{host}:{port}") };
                    (Addr::Tcp(addr), auth)
                }
                Target::Unix(p) => (Addr::Unix(p.clone()), "localhost".to_string()),
            };
            targets.push(TargetState {
                target: t.value.clone(),
                addr,
                authority: HeaderValue::from_str(&authority).map_err(|_| (i, "invalid host".to_string()))?,
                active: AtomicUsize::new(0),
                fails: AtomicU32::new(0),
                ejected_until: AtomicU64::new(0),
                healthy: AtomicBool::new(true),
                check_streak: AtomicU32::new(0),
            });
        }
        Ok(Upstream { cfg: cfg.clone(), targets, generation, index, rr: AtomicUsize::new(0) })
    }

    /// Choose a target, skipping `tried` (a bit set) and unavailable ones; when every target is
    /// unavailable, fall back to any untried one rather than refusing outright.
    pub fn pick(&self, tried: u64) -> Option<usize> {
        let now = now_ms();
        let n = self.targets.len();
        if n == 1 {
            return (tried & 1 == 0).then_some(0);
        }
        let candidates = |require_available: bool| {
            (0..n).filter(move |i| *i >= 64 || tried & (1 << i) == 0).filter(move |i| !require_available || self.targets[*i].available(now))
        };
        for strict in [true, false] {
            let choice = match self.cfg.balance {
                Balance::RoundRobin => {
                    let start = self.rr.fetch_add(1, Ordering::Relaxed);
                    let list: Vec<usize> = candidates(strict).collect();
                    (!list.is_empty()).then(|| list[start % list.len()])
                }
                Balance::LeastConnections => {
                    let start = self.rr.fetch_add(1, Ordering::Relaxed);
                    candidates(strict).min_by_key(|i| (self.targets[*i].active(), (i + n - start % n) % n))
                }
            };
            if choice.is_some() {
                return choice;
            }
        }
        None
    }

    fn record_success(&self, t: usize) {
        let ts = &self.targets[t];
        if ts.fails.load(Ordering::Relaxed) != 0 {
            ts.fails.store(0, Ordering::Relaxed);
        }
    }

    fn record_failure(&self, t: usize) {
        let ts = &self.targets[t];
        if self.cfg.max_fails == 0 {
            return;
        }
        let fails = ts.fails.fetch_add(1, Ordering::Relaxed) + 1;
        if fails >= self.cfg.max_fails {
            ts.fails.store(0, Ordering::Relaxed);
            ts.ejected_until.store(now_ms() + self.cfg.eject_for.as_millis() as u64, Ordering::Relaxed);
            tracing::warn!(upstream = %self.cfg.name, target = %ts.target, eject_for = ?self.cfg.eject_for, "target ejected after {fails} consecutive failures");
        }
    }

    /// Whether a target is currently ejected by passive health checking.
    pub fn is_ejected(&self, t: usize) -> bool {
        self.targets[t].ejected_until.load(Ordering::Relaxed) > now_ms()
    }

    /// Feed one active health check result.
    pub fn record_check(&self, t: usize, ok: bool) {
        let Some(hc) = &self.cfg.health_check else { return };
        let ts = &self.targets[t];
        let healthy = ts.healthy.load(Ordering::Relaxed);
        if ok == healthy {
            ts.check_streak.store(0, Ordering::Relaxed);
            return;
        }
        let streak = ts.check_streak.fetch_add(1, Ordering::Relaxed) + 1;
        let needed = if ok { hc.rise } else { hc.fall };
        if streak >= needed {
            ts.healthy.store(ok, Ordering::Relaxed);
            ts.check_streak.store(0, Ordering::Relaxed);
            if ok {
                tracing::info!(upstream = %self.cfg.name, target = %ts.target, "target is healthy again");
            } else {
                tracing::warn!(upstream = %self.cfg.name, target = %ts.target, "target failed its health checks");
            }
        }
    }
}

/// Why the upstream could not answer.
#[derive(Debug)]
pub enum UpstreamError {
    /// No connection could be made (502).
    Connect(String),
    /// No response head within `read_timeout` (504).
    Timeout,
    /// The upstream closed or sent garbage (502).
    Protocol(String),
    /// Reading the client's body failed while it streamed upstream (too large, timeout, broken).
    ClientBody(BodyError),
}

/// Our own body error inside a hyper error (hyper wraps errors of the body it sends).
fn client_body_error(err: &hyper::Error) -> Option<BodyError> {
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(err);
    while let Some(e) = source {
        if let Some(b) = e.downcast_ref::<BodyError>() {
            return Some(b.clone());
        }
        source = e.source();
    }
    None
}

struct Idle {
    sender: http1::SendRequest<UpBody>,
    since: Instant,
}

#[derive(Default)]
struct LocalPools {
    generation: u64,
    /// [upstream][target] -> idle connections, most recent last.
    idle: Vec<Vec<Vec<Idle>>>,
}

thread_local! {
    static POOLS: RefCell<LocalPools> = RefCell::new(LocalPools::default());
}

fn pool_take(up: &Upstream, t: usize) -> Option<http1::SendRequest<UpBody>> {
    POOLS.with(|p| {
        let mut p = p.borrow_mut();
        if p.generation != up.generation {
            return None;
        }
        let list = p.idle.get_mut(up.index)?.get_mut(t)?;
        while let Some(idle) = list.pop() {
            if idle.since.elapsed() < up.cfg.idle_timeout && !idle.sender.is_closed() {
                return Some(idle.sender);
            }
        }
        None
    })
}

fn pool_put(generation: u64, index: usize, t: usize, ntargets: usize, max_idle: usize, sender: http1::SendRequest<UpBody>) {
    if max_idle == 0 || sender.is_closed() {
        return;
    }
    POOLS.with(|p| {
        let mut p = p.borrow_mut();
        if p.generation != generation {
            if p.generation > generation {
                return; // a connection of an older snapshot: let it close
            }
            p.generation = generation;
            p.idle.clear();
        }
        if p.idle.len() <= index {
            p.idle.resize_with(index + 1, Vec::new);
        }
        let ups = &mut p.idle[index];
        if ups.len() < ntargets {
            ups.resize_with(ntargets, Vec::new);
        }
        let list = &mut ups[t];
        if list.len() >= max_idle {
            list.remove(0);
        }
        list.push(Idle { sender, since: Instant::now() });
    })
}

/// Number of idle pooled connections this worker holds for a target (for tests and metrics).
pub fn idle_count(up: &Upstream, t: usize) -> usize {
    POOLS.with(|p| {
        let p = p.borrow();
        if p.generation != up.generation {
            return 0;
        }
        p.idle.get(up.index).and_then(|u| u.get(t)).map_or(0, Vec::len)
    })
}

async fn connect(up: &Upstream, t: usize) -> Result<http1::SendRequest<UpBody>, String> {
    let ts = &up.targets[t];
    let stream = match &ts.addr {
        Addr::Tcp(addr) => {
            let s = tokio::time::timeout(up.cfg.connect_timeout, TcpStream::connect(addr))
                .await
                .map_err(|_| format!("connect to {} timed out", ts.target))?
                .map_err(|e| format!("connect to {}: {e}", ts.target))?;
            let _ = s.set_nodelay(true);
            Stream::Tcp(s)
        }
        Addr::Unix(path) => {
            let s = tokio::time::timeout(up.cfg.connect_timeout, UnixStream::connect(path))
                .await
                .map_err(|_| format!("connect to {} timed out", ts.target))?
                .map_err(|e| format!("connect to {}: {e}", ts.target))?;
            Stream::Unix(s)
        }
    };
    let (sender, conn) = http1::Builder::new().handshake::<_, UpBody>(TokioIo::new(stream)).await.map_err(|e| format!("handshake with {}: {e}", ts.target))?;
    tokio::task::spawn_local(async move {
        if let Err(e) = conn.await {
            tracing::debug!(error = %e, "upstream connection ended with an error");
        }
    });
    Ok(sender)
}

/// Send `req` to the upstream. The request's URI must be in origin form and its headers final.
/// `set_host` is called with the chosen target's authority to set the `Host` header if needed.
pub async fn send(
    up: &Arc<Upstream>,
    mut req: Request<UpBody>,
    set_host: &dyn Fn(&mut http::HeaderMap, &HeaderValue),
) -> Result<Response<UpstreamBody>, UpstreamError> {
    let mut tried: u64 = 0;
    let mut last_err = String::from("no target available");
    let max_attempts = up.targets.len() + 1;
    let mut stale_retry_used = false;
    let mut attempt = 0;
    while attempt < max_attempts {
        attempt += 1;
        let Some(t) = up.pick(tried) else { break };
        set_host(req.headers_mut(), &up.targets[t].authority);
        let (mut sender, pooled) = match pool_take(up, t) {
            Some(s) => (s, true),
            None => match connect(up, t).await {
                Ok(s) => (s, false),
                Err(e) => {
                    tracing::warn!(upstream = %up.cfg.name, error = %e, "upstream connect failed");
                    up.record_failure(t);
                    last_err = e;
                    if t < 64 {
                        tried |= 1 << t;
                    }
                    continue;
                }
            },
        };
        if sender.ready().await.is_err() {
            // A pooled connection closed under us: nothing was sent, try a fresh one.
            attempt -= usize::from(pooled && !stale_retry_used);
            stale_retry_used |= pooled;
            continue;
        }
        let ts = &up.targets[t];
        ts.active.fetch_add(1, Ordering::Relaxed);
        let guard = ActiveGuard { up: up.clone(), t };
        let fut = sender.try_send_request(req);
        match tokio::time::timeout(up.cfg.read_timeout, fut).await {
            Err(_) => {
                up.record_failure(t);
                return Err(UpstreamError::Timeout);
            }
            Ok(Ok(resp)) => {
                up.record_success(t);
                let (parts, body) = resp.into_parts();
                let ub = UpstreamBody {
                    inner: body,
                    sender: Some(sender),
                    generation: up.generation,
                    index: up.index,
                    target: t,
                    ntargets: up.targets.len(),
                    max_idle: up.cfg.max_idle,
                    read_timeout: up.cfg.read_timeout,
                    sleep: None,
                    done: false,
                    _guard: guard,
                };
                return Ok(Response::from_parts(parts, ub));
            }
            Ok(Err(mut e)) => {
                drop(guard);
                match e.take_message() {
                    Some(back) => {
                        // Not sent: safe to retry elsewhere.
                        req = back;
                        if !pooled {
                            up.record_failure(t);
                        }
                        last_err = e.into_error().to_string();
                        attempt -= usize::from(pooled && !stale_retry_used);
                        stale_retry_used |= pooled;
                        continue;
                    }
                    None => {
                        let err = e.into_error();
                        if let Some(body_err) = client_body_error(&err) {
                            // The client's fault, not the target's: no passive-health penalty.
                            return Err(UpstreamError::ClientBody(body_err));
                        }
                        up.record_failure(t);
                        return Err(UpstreamError::Protocol(err.to_string()));
                    }
                }
            }
        }
    }
    Err(UpstreamError::Connect(last_err))
}

struct ActiveGuard {
    up: Arc<Upstream>,
    t: usize,
}

impl Drop for ActiveGuard {
    fn drop(&mut self) {
        self.up.targets[self.t].active.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A response body from an upstream. When it has been read to the end, its connection goes
/// back to the worker's pool; if it is dropped earlier, the connection is closed. Each frame must
/// arrive within the upstream's `read_timeout`.
pub struct UpstreamBody {
    inner: Incoming,
    sender: Option<http1::SendRequest<UpBody>>,
    generation: u64,
    index: usize,
    target: usize,
    ntargets: usize,
    max_idle: usize,
    read_timeout: Duration,
    sleep: Option<Pin<Box<Sleep>>>,
    done: bool,
    _guard: ActiveGuard,
}

impl UpstreamBody {
    fn release(&mut self) {
        if let Some(sender) = self.sender.take() {
            pool_put(self.generation, self.index, self.target, self.ntargets, self.max_idle, sender);
        }
    }
}

impl Body for UpstreamBody {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        let this = &mut *self;
        if this.done {
            return Poll::Ready(None);
        }
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(f))) => {
                this.sleep = None;
                Poll::Ready(Some(Ok(f)))
            }
            Poll::Ready(Some(Err(e))) => {
                this.done = true;
                this.sender = None;
                Poll::Ready(Some(Err(BodyError::Upstream(e.to_string()))))
            }
            Poll::Ready(None) => {
                this.done = true;
                this.release();
                Poll::Ready(None)
            }
            Poll::Pending => {
                let timeout = this.read_timeout;
                let sleep = this.sleep.get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
                if sleep.as_mut().poll(cx).is_ready() {
                    this.done = true;
                    this.sender = None;
                    return Poll::Ready(Some(Err(BodyError::Upstream("upstream read timeout".into()))));
                }
                Poll::Pending
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done || self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for UpstreamBody {
    fn drop(&mut self) {
        if !self.done && self.inner.is_end_stream() {
            self.release();
        }
    }
}

/// Run active health checks for `up` until `alive` says the snapshot is gone.
pub async fn health_loop(up: Arc<Upstream>, alive: impl Fn() -> bool) {
    let Some(hc) = up.cfg.health_check.clone() else { return };
    let mut tick = tokio::time::interval(hc.interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        if !alive() {
            return;
        }
        for t in 0..up.targets.len() {
            let ok = tokio::time::timeout(hc.timeout, probe(&up, t, &hc.path)).await.unwrap_or(false);
            up.record_check(t, ok);
        }
    }
}

async fn probe(up: &Upstream, t: usize, path: &str) -> bool {
    let Ok(mut sender) = connect(up, t).await else { return false };
    let Ok(req) = Request::get(path)
        .header(http::header::HOST, up.targets[t].authority.clone())
        .header(http::header::USER_AGENT, "palisade-health-check")
        .body(UpBody::Full(None))
    else {
        return false;
    };
    match sender.send_request(req).await {
        Ok(resp) => resp.status().is_success() || resp.status().is_redirection(),
        Err(_) => false,
    }
}
