//! Workers, listeners and the control thread.
//!
//! Worker model: `workers` threads (default: one per core this process may run on), each with
//! its own single-threaded tokio runtime. Each listener is one socket bound once, exclusively
//! (no `SO_REUSEPORT`: a second instance on the same address fails with "address already in
//! use"); every worker registers its own descriptor of it and accepts from it, so a connection
//! is served start to end by the worker that accepted it and a request never crosses threads. Per-worker state (upstream
//! pools, request id counter, date cache) is thread-local and lock-free; what all workers share
//! is the current [`Snapshot`] behind an `ArcSwap`, and a few atomic counters. See
//! docs/ARCHITECTURE.md for the measurements behind the choice.
//!
//! A control thread runs active health checks and the admin listener, so they never compete
//! with request handling for a worker's event loop.

use std::cell::Cell;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use arc_swap::ArcSwap;
use http::{Request, Response};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use palisade_config::{Config, ConfigErrors};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch};

use crate::body::ClientBody;
use crate::h1::{self, ConnInfo, Handler, Served};
use crate::io::Stream;
use crate::metrics::Metrics;
use crate::proxy::Proxy;
use crate::resp_body::RespBody;
use crate::snapshot::{Snapshot, StageFactory};
use crate::state::Control;
pub use crate::state::{ReloadError, Shared};

/// Error starting the server.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("{0}")]
    Config(#[from] ConfigErrors),
    #[error("cannot listen on {addr}: {source}")]
    Bind { addr: SocketAddr, source: std::io::Error },
    #[error("cannot start thread: {0}")]
    Thread(std::io::Error),
    /// The events sink is not valid or cannot be opened (see [`crate::events::start`]).
    #[error("{0}")]
    Events(#[source] palisade_events::Error),
}

/// A running server.
pub struct Running {
    shared: Arc<Shared>,
    workers: Vec<JoinHandle<()>>,
    control: Option<JoinHandle<()>>,
    /// Bound proxy addresses, in `listen` order (ports resolved when 0 was configured).
    pub listen_addrs: Vec<SocketAddr>,
    /// Bound admin address, when configured.
    pub admin_addr: Option<SocketAddr>,
    /// Bound authorization API address (`authz`), when configured.
    pub authz_addr: Option<SocketAddr>,
}

/// Number of workers for `auto`: the cores this process may run on (respects `taskset`).
pub fn auto_workers() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

/// Build the first snapshot, bind every listener, and start the workers.
pub fn start(config: Config, factory: StageFactory) -> Result<Running, StartError> {
    let workers = config.workers.unwrap_or_else(auto_workers).max(1);
    let metrics = Arc::new(Metrics::new(workers));
    let snapshot = Snapshot::build_with(config, 1, &factory, &metrics)?;
    let config = snapshot.config.clone();

    // Bind: one exclusive socket per listener (no `SO_REUSEPORT`), so a second process asking
    // for the same address fails with "address already in use"; each worker gets its own
    // descriptor of that socket and registers it in its own runtime.
    let mut per_worker: Vec<Vec<std::net::TcpListener>> = (0..workers).map(|_| Vec::new()).collect();
    let mut listen_addrs = Vec::new();
    for l in &config.listen {
        let socket = bind_exclusive(l.addr).map_err(|source| StartError::Bind { addr: l.addr, source })?;
        let actual = socket.local_addr().map_err(|source| StartError::Bind { addr: l.addr, source })?;
        listen_addrs.push(actual);
        for w in per_worker.iter_mut().skip(1) {
            w.push(socket.try_clone().map_err(|source| StartError::Bind { addr: actual, source })?);
        }
        per_worker[0].push(socket);
    }
    let admin_listener = match &config.admin {
        Some(a) => Some(bind_exclusive(a.addr).map_err(|source| StartError::Bind { addr: a.addr, source })?),
        None => None,
    };
    let admin_addr = admin_listener.as_ref().and_then(|l| l.local_addr().ok());
    // The authorization API is served by the workers too (its decisions run the stages), from
    // one exclusive socket like the proxy listeners.
    let mut authz_per_worker: Vec<Option<std::net::TcpListener>> = (0..workers).map(|_| None).collect();
    let mut authz_addr = None;
    if let Some(z) = &config.authz {
        let socket = bind_exclusive(z.addr).map_err(|source| StartError::Bind { addr: z.addr, source })?;
        let actual = socket.local_addr().map_err(|source| StartError::Bind { addr: z.addr, source })?;
        authz_addr = Some(actual);
        for w in authz_per_worker.iter_mut().skip(1) {
            *w = Some(socket.try_clone().map_err(|source| StartError::Bind { addr: actual, source })?);
        }
        authz_per_worker[0] = Some(socket);
    }

    let started = crate::events::start(&config).map_err(StartError::Events)?;
    if started.pipeline.is_some() {
        tracing::info!(sink = %started.description, "recording security events");
    }
    let (shutdown, _) = watch::channel(false);
    let snapshot = Arc::new(snapshot);
    let shared = Arc::new(Shared {
        snapshot: Arc::new(ArcSwap::new(snapshot.clone())),
        factory,
        generation: AtomicU64::new(1),
        shutdown,
        connections: AtomicUsize::new(0),
        ready: AtomicBool::new(false),
        control: Mutex::new(None),
        reload_lock: Mutex::new(()),
        metrics,
        events: started.pipeline,
        events_db: started.db,
        events_sink: started.description,
        config_path: Mutex::new(None),
    });

    // Control thread: health checks and admin.
    let (ctl_tx, ctl_rx) = mpsc::unbounded_channel();
    *shared.control.lock().unwrap_or_else(|e| e.into_inner()) = Some(ctl_tx.clone());
    let _ = ctl_tx.send(Control::Snapshot(snapshot));
    let control = {
        let shared = shared.clone();
        std::thread::Builder::new().name("palisade-control".into()).spawn(move || control_thread(shared, ctl_rx, admin_listener)).map_err(StartError::Thread)?
    };

    let mut handles = Vec::new();
    for (i, (listeners, authz)) in per_worker.into_iter().zip(authz_per_worker).enumerate() {
        let shared = shared.clone();
        let h = std::thread::Builder::new()
            .name(format!("palisade-worker-{i}"))
            .spawn(move || worker_thread(shared, listeners, authz, i))
            .map_err(StartError::Thread)?;
        handles.push(h);
    }
    shared.ready.store(true, Ordering::SeqCst);
    // `admin` is recorded only when there is one: an `Option` field prints its value, never `Some(..)`.
    let listeners = listen_addrs.iter().map(|a| a.to_string()).collect::<Vec<_>>().join(", ");
    tracing::info!(
        workers,
        listeners = %format_args!("[{listeners}]"),
        admin = admin_addr.map(tracing::field::display),
        authz = authz_addr.map(tracing::field::display),
        "palisade started"
    );
    Ok(Running { shared, workers: handles, control: Some(control), listen_addrs, admin_addr, authz_addr })
}

/// A listening socket this process owns alone: `SO_REUSEADDR` (rebinding while old connections
/// linger in TIME_WAIT) but not `SO_REUSEPORT`, so no other socket, of this or another process,
/// can listen on the same address while it is open. Hot restart is therefore not possible by
/// starting a second instance on the same port: stop the old one first, or reload with SIGHUP.
pub fn bind_exclusive(addr: SocketAddr) -> std::io::Result<std::net::TcpListener> {
    use socket2::{Domain, Protocol, Socket, Type};
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    socket.set_reuse_address(true)?;
    if addr.is_ipv6() {
        socket.set_only_v6(true)?;
    }
    socket.set_nonblocking(true)?;
    socket.bind(&addr.into())?;
    socket.listen(4096)?;
    Ok(socket.into())
}

impl Running {
    /// The snapshot currently serving.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.shared.snapshot.load_full()
    }

    pub fn shared(&self) -> Arc<Shared> {
        self.shared.clone()
    }

    /// Build a new snapshot from `config` and swap it in. On error the old one keeps serving.
    /// Listener addresses and the worker count cannot change without a restart: such changes are
    /// reported as errors.
    pub fn reload(&self, config: Config) -> Result<u64, ConfigErrors> {
        self.shared.reload(config)
    }

    /// Graceful shutdown: stop accepting, let in-flight requests finish (up to the configured
    /// `shutdown_timeout`), then stop every thread.
    pub fn shutdown(mut self) {
        self.shared.ready.store(false, Ordering::SeqCst);
        let _ = self.shared.shutdown.send(true);
        for h in self.workers.drain(..) {
            let _ = h.join();
        }
        if let Some(p) = &self.shared.events {
            p.close(crate::events::CLOSE_TIMEOUT);
        }
        *self.shared.control.lock().unwrap_or_else(|e| e.into_inner()) = None;
        if let Some(c) = self.control.take() {
            let _ = c.join();
        }
        tracing::info!("palisade stopped");
    }

    /// Number of client connections currently open.
    pub fn connections(&self) -> usize {
        self.shared.connections.load(Ordering::Relaxed)
    }
}

/// Connection counter guard: also enforces `max_connections`.
struct ConnGuard<'a>(&'a AtomicUsize, Rc<Cell<usize>>);

impl Drop for ConnGuard<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
        self.1.set(self.1.get() - 1);
    }
}

fn worker_thread(shared: Arc<Shared>, listeners: Vec<std::net::TcpListener>, authz: Option<std::net::TcpListener>, index: usize) {
    crate::metrics::set_worker(index);
    let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            tracing::error!(error = %e, "cannot start worker runtime");
            return;
        }
    };
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async move {
        let proxy =
            Rc::new(Proxy { snapshot: shared.snapshot.clone(), metrics: shared.metrics.clone(), events: shared.events.as_ref().map(|p| p.sender().clone()) });
        let active = Rc::new(Cell::new(0usize));
        let mut accept_tasks = Vec::new();
        for (idx, l) in listeners.into_iter().enumerate() {
            let listener = match TcpListener::from_std(l) {
                Ok(l) => l,
                Err(e) => {
                    tracing::error!(error = %e, "cannot register listener");
                    continue;
                }
            };
            accept_tasks.push(tokio::task::spawn_local(accept_loop(shared.clone(), listener, Listen::Proxy(idx), proxy.clone(), active.clone())));
        }
        if let Some(l) = authz {
            match TcpListener::from_std(l) {
                Ok(listener) => {
                    accept_tasks.push(tokio::task::spawn_local(accept_loop(shared.clone(), listener, Listen::Authz, proxy.clone(), active.clone())))
                }
                Err(e) => tracing::error!(error = %e, "cannot register the authz listener"),
            }
        }
        // Busy polling after requests (`server.busy_poll`, read at start; see spin.rs).
        let busy_poll = shared.snapshot.load().config.server.busy_poll;
        let spinner = (!busy_poll.is_zero()).then(|| tokio::task::spawn_local(crate::spin::run(busy_poll)));
        let mut rx = shared.shutdown.subscribe();
        while !*rx.borrow() {
            if rx.changed().await.is_err() {
                break;
            }
        }
        for t in &accept_tasks {
            t.abort();
        }
        if let Some(t) = &spinner {
            t.abort();
        }
        // Idle keep-alive connections of this worker close at once.
        h1::close_idle();
        // WebSocket connections close (1001) once the drain time has passed.
        crate::websocket::shutdown_started();
        // Drain: wait for open connections to finish their in-flight requests.
        let timeout = shared.snapshot.load().config.server.shutdown_timeout;
        let deadline = tokio::time::Instant::now() + timeout;
        while active.get() > 0 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        if active.get() > 0 {
            tracing::warn!(open = active.get(), "shutdown timeout reached; closing remaining connections");
        }
    });
}

/// What a listener serves.
#[derive(Clone, Copy)]
enum Listen {
    /// The proxy listener at this index of `listen`.
    Proxy(usize),
    /// The authorization API.
    Authz,
}

async fn accept_loop(shared: Arc<Shared>, listener: TcpListener, kind: Listen, proxy: Rc<Proxy>, active: Rc<Cell<usize>>) {
    let local = listener.local_addr().ok();
    loop {
        let (tcp, peer) = match listener.accept().await {
            Ok(x) => x,
            Err(e) => {
                // EMFILE and friends: back off briefly instead of spinning.
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let snap = shared.snapshot.load_full();
        let max = snap.config.server.max_connections;
        if shared.connections.fetch_add(1, Ordering::Relaxed) >= max {
            shared.connections.fetch_sub(1, Ordering::Relaxed);
            tracing::warn!(%peer, max, "max_connections reached; closing new connection");
            drop(tcp);
            continue;
        }
        active.set(active.get() + 1);
        let _ = tcp.set_nodelay(true);
        let shared2 = shared.clone();
        let proxy = proxy.clone();
        let active2 = active.clone();
        let local_addr = local.unwrap_or(peer);
        tokio::task::spawn_local(async move {
            let _guard = ConnGuard(&shared2.connections, active2);
            match kind {
                Listen::Proxy(idx) => serve_conn(&shared2, snap, idx, tcp, peer, local_addr, proxy).await,
                Listen::Authz => serve_authz(&shared2, snap, tcp, peer, local_addr, proxy).await,
            }
        });
    }
}

async fn serve_conn(shared: &Shared, snap: Arc<Snapshot>, idx: usize, tcp: tokio::net::TcpStream, peer: SocketAddr, local: SocketAddr, proxy: Rc<Proxy>) {
    let server = &snap.config.server;
    let limits = h1::Limits {
        max_header_size: server.max_header_size,
        max_headers: server.max_headers,
        header_timeout: server.header_read_timeout,
        body_timeout: server.body_read_timeout,
        keepalive_timeout: server.keepalive_timeout,
    };
    let http2 = snap.config.listen.get(idx).is_some_and(|l| l.http2);
    let shutdown = shared.shutdown.subscribe();
    let tls_cfg = snap.tls.get(idx).cloned().flatten();
    drop(snap);
    let (stream, info, alpn_h2) = match tls_cfg {
        Some(cfg) => {
            let acceptor = tokio_rustls::TlsAcceptor::from(cfg);
            let tls = match tokio::time::timeout(limits.header_timeout, acceptor.accept(tcp)).await {
                Ok(Ok(s)) => s,
                Ok(Err(e)) => {
                    tracing::debug!(%peer, error = %e, "TLS handshake failed");
                    return;
                }
                Err(_) => {
                    tracing::debug!(%peer, "TLS handshake timed out");
                    return;
                }
            };
            let h2 = tls.get_ref().1.alpn_protocol() == Some(b"h2");
            (Stream::Tls(Box::new(tls)), ConnInfo::new(peer, local, true), h2)
        }
        None => (Stream::Tcp(tcp), ConnInfo::new(peer, local, false), false),
    };
    if alpn_h2 {
        serve_h2(stream, info, proxy, &limits, shutdown).await;
        return;
    }
    let h2c = http2 && !info.tls;
    match h1::serve(stream, info.clone(), &*proxy, &limits, shutdown.clone(), h2c).await {
        Served::Closed => {}
        Served::H2(stream) => serve_h2(stream, info, proxy, &limits, shutdown).await,
    }
}

/// A connection to the authorization API: plain HTTP/1.1 with the server's limits.
async fn serve_authz(shared: &Shared, snap: Arc<Snapshot>, tcp: tokio::net::TcpStream, peer: SocketAddr, local: SocketAddr, proxy: Rc<Proxy>) {
    let server = &snap.config.server;
    let limits = h1::Limits {
        max_header_size: server.max_header_size,
        max_headers: server.max_headers,
        header_timeout: server.header_read_timeout,
        body_timeout: server.body_read_timeout,
        keepalive_timeout: server.keepalive_timeout,
    };
    drop(snap);
    let authz = crate::authz::Authz { proxy };
    let _ = h1::serve(Stream::Tcp(tcp), ConnInfo::new(peer, local, false), &authz, &limits, shared.shutdown.subscribe(), false).await;
}

#[derive(Clone, Copy)]
struct LocalExec;

impl<F> hyper::rt::Executor<F> for LocalExec
where
    F: std::future::Future + 'static,
{
    fn execute(&self, fut: F) {
        tokio::task::spawn_local(fut);
    }
}

async fn serve_h2(stream: Stream, info: ConnInfo, proxy: Rc<Proxy>, limits: &h1::Limits, mut shutdown: watch::Receiver<bool>) {
    let info = Rc::new(info);
    let service = hyper::service::service_fn(move |req: Request<Incoming>| {
        let proxy = proxy.clone();
        let info = info.clone();
        async move { Ok::<Response<RespBody>, Infallible>(proxy.call(req.map(ClientBody::H2), &info).await) }
    });
    let mut builder = hyper::server::conn::http2::Builder::new(LocalExec);
    builder
        .timer(TokioTimer::new())
        .max_concurrent_streams(256)
        // RFC 8441 extended CONNECT: WebSocket over HTTP/2.
        .enable_connect_protocol()
        // A backstop only: the configured limit is enforced by the proxy, so that the client gets
        // the same problem response as over HTTP/1 (`proxy.rs`, `h2_head_too_large`).
        .max_header_list_size((limits.max_header_size as u32).saturating_mul(4).max(64 * 1024))
        .keep_alive_interval(Some(Duration::from_secs(30)))
        .keep_alive_timeout(limits.keepalive_timeout.min(Duration::from_secs(60)));
    let conn = builder.serve_connection(TokioIo::new(stream), service);
    tokio::pin!(conn);
    tokio::select! {
        r = conn.as_mut() => {
            if let Err(e) = r {
                tracing::debug!(error = %e, "HTTP/2 connection ended with an error");
            }
            return;
        }
        _ = shutdown.wait_for(|v| *v) => {}
    }
    conn.as_mut().graceful_shutdown();
    let _ = conn.await;
}

fn control_thread(shared: Arc<Shared>, mut rx: mpsc::UnboundedReceiver<Control>, admin: Option<std::net::TcpListener>) {
    let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() else {
        tracing::error!("cannot start control runtime");
        return;
    };
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async move {
        if let Some(l) = admin {
            match TcpListener::from_std(l) {
                Ok(l) => {
                    tokio::task::spawn_local(crate::admin::serve(l, shared.clone()));
                }
                Err(e) => tracing::error!(error = %e, "cannot register admin listener"),
            }
        }
        let mut shutdown = shared.shutdown.subscribe();
        loop {
            tokio::select! {
                msg = rx.recv() => match msg {
                    Some(Control::Snapshot(snap)) => {
                        for up in &snap.upstreams {
                            if up.cfg.health_check.is_some() {
                                let generation = snap.generation;
                                let shared2 = shared.clone();
                                tokio::task::spawn_local(crate::health::health_loop(up.clone(), move || shared2.snapshot.load().generation == generation && !*shared2.shutdown.borrow()));
                            }
                        }
                    }
                    None => return,
                },
                _ = shutdown.wait_for(|v| *v) => return,
            }
        }
    });
}
