//! HTTP/2 upstreams: `h2c://` (prior knowledge) and `https://` targets that choose `h2` by ALPN.
//!
//! Each worker keeps one multiplexed connection per target (a thread-local, like the HTTP/1
//! pools), driven by hyper's HTTP/2 client as a task on the worker; requests are streams on it.
//! A connection without an open stream for the upstream's `idle_timeout` (at once with
//! `max_idle: 0`) is closed, and the next request opens another. WebSocket handshakes become
//! extended CONNECTs (RFC 8441) when the upstream's SETTINGS allow them ([`websocket`]).
//! Bodies stream both ways with HTTP/2 flow control (a stream's window bounds what is held for
//! it), trailers pass through in both directions, and `te: trailers` is kept. An `https://`
//! upstream that answers ALPN without `h2` is spoken to over HTTP/1.1 from then on
//! ([`Upstream::fall_back_to_http1`]).

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bytes::Bytes;
use http::{header, HeaderValue, Request, Response, Uri};
use http_body::{Body, Frame, SizeHint};
use hyper::body::Incoming;
use hyper::client::conn::http2::SendRequest;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::Instant;

use crate::body::UpBody;
use crate::body_error::BodyError;
use crate::targets::{Addr, Protocol, Upstream};
use crate::upstream::UpstreamError;

/// A request body sent on an HTTP/2 stream.
pub enum ReqBody {
    /// Buffered (or empty).
    Full(Option<Bytes>),
    /// The inspected prefix and the rest streaming from the client.
    Stream(UpBody),
    /// A gRPC request whose messages are judged as they pass ([`crate::grpc::Inspect`]).
    Grpc(Box<crate::grpc::Inspect>),
}

impl Body for ReqBody {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        match self.get_mut() {
            ReqBody::Full(b) => Poll::Ready(b.take().map(|b| Ok(Frame::data(b)))),
            ReqBody::Stream(b) => Pin::new(b).poll_frame(cx),
            ReqBody::Grpc(g) => Pin::new(&mut **g).poll_frame(cx),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            ReqBody::Full(b) => b.is_none(),
            ReqBody::Stream(b) => b.is_end_stream(),
            ReqBody::Grpc(g) => g.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            ReqBody::Full(b) => SizeHint::with_exact(b.as_ref().map_or(0, |b| b.len() as u64)),
            ReqBody::Stream(b) => b.size_hint(),
            ReqBody::Grpc(_) => SizeHint::new(),
        }
    }
}

type Sender = SendRequest<ReqBody>;

/// What one upstream HTTP/2 connection tells besides its sender: what the upstream's SETTINGS
/// allow, and how many streams are open on it. The task that drives the connection closes it
/// once it has had no open stream for the upstream's `idle_timeout` (at once with
/// `max_idle: 0`); the next request opens another.
pub(crate) struct ConnState {
    /// Asks the connection what the upstream's SETTINGS say: whether it allows extended
    /// CONNECT (RFC 8441 `SETTINGS_ENABLE_CONNECT_PROTOCOL`), and how many streams it takes at
    /// once; `None` once the connection is gone.
    settings: RefCell<Option<Settings>>,
    /// The upstream's first frame (its SETTINGS) was read, or the connection ended.
    settled: Cell<bool>,
    settled_now: tokio::sync::Notify,
    /// Bytes read from the upstream, and the first three of them (the length of its first
    /// frame).
    read: Cell<u64>,
    first: Cell<[u8; 3]>,
    /// Streams open on the connection ([`StreamGuard`]) and since when there are none.
    streams: Cell<usize>,
    idle_since: Cell<Instant>,
    driver: RefCell<Option<Waker>>,
}

impl ConnState {
    fn new() -> ConnState {
        ConnState {
            settings: RefCell::new(None),
            settled: Cell::new(false),
            settled_now: tokio::sync::Notify::new(),
            read: Cell::new(0),
            first: Cell::new([0; 3]),
            streams: Cell::new(0),
            idle_since: Cell::new(Instant::now()),
            driver: RefCell::new(None),
        }
    }

    /// Whether the upstream's first frame has been read whole.
    fn first_frame_read(&self) -> bool {
        let [a, b, c] = self.first.get();
        let len = (u64::from(a) << 16) | (u64::from(b) << 8) | u64::from(c);
        self.read.get() >= 9 + len
    }

    fn settle(&self) {
        if !self.settled.replace(true) {
            self.settled_now.notify_waiters();
        }
    }

    /// Whether the upstream allows extended CONNECT: known once its SETTINGS are in (waited
    /// for up to `timeout` on a fresh connection; `false` when they do not come).
    pub(crate) async fn connect_protocol(&self, timeout: Duration) -> bool {
        let settled = async {
            loop {
                let n = self.settled_now.notified();
                tokio::pin!(n);
                n.as_mut().enable();
                if self.settled.get() {
                    return;
                }
                n.await;
            }
        };
        let _ = tokio::time::timeout(timeout, settled).await;
        // The frame read is applied before the connection's task yields: let it.
        tokio::task::yield_now().await;
        self.settings.borrow().as_ref().and_then(|ask| ask()).is_some_and(|(connect, _)| connect)
    }

    /// Whether a long-lived stream (a WebSocket), already counted in `streams`, may keep its
    /// place on this connection: the open streams may fill at most half of what the upstream
    /// takes at once, or plain requests would queue behind WebSockets.
    fn room_for_long_stream(&self) -> bool {
        let max = self.settings.borrow().as_ref().and_then(|ask| ask()).map_or(0, |(_, max)| max);
        self.streams.get() <= max / 2
    }
}

type Settings = Box<dyn Fn() -> Option<(bool, usize)>>;

/// One open stream on an upstream HTTP/2 connection: the connection is not idle while it lives.
pub(crate) struct StreamGuard(Rc<ConnState>);

impl StreamGuard {
    pub(crate) fn new(state: &Rc<ConnState>) -> StreamGuard {
        state.streams.set(state.streams.get() + 1);
        StreamGuard(state.clone())
    }
}

impl Drop for StreamGuard {
    fn drop(&mut self) {
        let s = &self.0;
        s.streams.set(s.streams.get().saturating_sub(1));
        if s.streams.get() == 0 {
            s.idle_since.set(Instant::now());
            if let Some(w) = s.driver.borrow_mut().take() {
                w.wake();
            }
        }
    }
}

/// An upstream connection's reads, watched for the upstream's first frame.
struct Watched<S> {
    inner: S,
    state: Rc<ConnState>,
}

impl<S: AsyncRead + Unpin> AsyncRead for Watched<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        let state = &self.state;
        let read = state.read.get();
        if read < 3 {
            let mut first = state.first.get();
            for (i, b) in buf.filled()[before..].iter().take(3 - read as usize).enumerate() {
                first[read as usize + i] = *b;
            }
            state.first.set(first);
        }
        state.read.set(read + (buf.filled().len() - before) as u64);
        if !state.settled.get() && state.first_frame_read() {
            state.settle();
        }
        r
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Watched<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }
    fn poll_write_vectored(mut self: Pin<&mut Self>, cx: &mut Context<'_>, bufs: &[std::io::IoSlice<'_>]) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }
    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// A pooled connection: its sender and its state.
#[derive(Clone)]
pub(crate) struct Conn {
    pub(crate) sender: Sender,
    pub(crate) state: Rc<ConnState>,
}

#[derive(Default)]
struct Pool {
    generation: u64,
    /// [upstream][target] -> the worker's connection.
    conns: Vec<Vec<Option<Conn>>>,
}

thread_local! {
    static POOL: RefCell<Pool> = RefCell::new(Pool::default());
}

fn pooled(up: &Upstream, t: usize) -> Option<Conn> {
    POOL.with(|p| {
        let mut p = p.borrow_mut();
        if p.generation != up.generation {
            return None;
        }
        let slot = p.conns.get_mut(up.index)?.get_mut(t)?;
        match slot {
            Some(c) if !c.sender.is_closed() => Some(c.clone()),
            _ => {
                *slot = None;
                None
            }
        }
    })
}

fn keep(up: &Upstream, t: usize, c: &Conn) {
    POOL.with(|p| {
        let mut p = p.borrow_mut();
        if p.generation != up.generation {
            if p.generation > up.generation {
                return;
            }
            p.generation = up.generation;
            p.conns.clear();
        }
        if p.conns.len() <= up.index {
            p.conns.resize_with(up.index + 1, Vec::new);
        }
        let ups = &mut p.conns[up.index];
        if ups.len() < up.targets.len() {
            ups.resize_with(up.targets.len(), || None);
        }
        ups[t] = Some(c.clone());
    })
}

fn forget(up: &Upstream, t: usize) {
    POOL.with(|p| {
        let mut p = p.borrow_mut();
        if p.generation == up.generation {
            if let Some(slot) = p.conns.get_mut(up.index).and_then(|u| u.get_mut(t)) {
                *slot = None;
            }
        }
    })
}

/// The worker's connection to target `t`, opened when there is none (or it has closed).
pub(crate) async fn connection(up: &Upstream, t: usize) -> Result<Conn, ConnectError> {
    if let Some(c) = pooled(up, t) {
        return Ok(c);
    }
    let c = open(up, t).await?;
    keep(up, t, &c);
    Ok(c)
}

/// Why no HTTP/2 connection could be had.
pub(crate) enum ConnectError {
    Failed(String),
    /// An `https://` target chose HTTP/1.1 by ALPN: the request goes the HTTP/1.1 way.
    Http1,
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

/// Open an HTTP/2 connection to target `t`: the task that drives it is spawned on this worker.
async fn open(up: &Upstream, t: usize) -> Result<Conn, ConnectError> {
    open_with(up, t, None).await
}

/// [`open`], closing the connection once it has been without a stream for `idle` (default:
/// the upstream's `idle_timeout`).
async fn open_with(up: &Upstream, t: usize, idle: Option<Duration>) -> Result<Conn, ConnectError> {
    let ts = &up.targets[t];
    let Addr::Tcp(addr) = &ts.addr else { return Err(ConnectError::Failed(format!("{} is not a TCP target", ts.target))) };
    let mut builder = hyper::client::conn::http2::Builder::new(LocalExec);
    builder
        .timer(TokioTimer::new())
        // Flow control bounds what a stream holds: 256 KiB per stream, 1 MiB per connection.
        .initial_stream_window_size(256 * 1024)
        .initial_connection_window_size(1024 * 1024)
        .max_frame_size(16 * 1024)
        .max_header_list_size(256 * 1024)
        .keep_alive_interval(Some(Duration::from_secs(30)))
        .keep_alive_timeout(up.cfg.read_timeout.min(Duration::from_secs(20)))
        .keep_alive_while_idle(true);
    let state = Rc::new(ConnState::new());
    // `max_idle: 0`: no connection is kept without a stream.
    let idle = idle.unwrap_or(if up.cfg.max_idle == 0 { Duration::ZERO } else { up.cfg.idle_timeout });
    let drive = Driver { state: state.clone(), idle, upstream: up.cfg.name.clone(), target: ts.target.to_string() };
    let sender = match up.protocol {
        Protocol::Https => {
            let tls = up.tls.as_ref().ok_or_else(|| ConnectError::Failed("no TLS configuration".into()))?;
            let s = crate::upstream::connect_tls(up, t, tls.h2.clone()).await.map_err(ConnectError::Failed)?;
            if s.get_ref().1.alpn_protocol() != Some(b"h2") {
                up.fall_back_to_http1();
                return Err(ConnectError::Http1);
            }
            let io = TokioIo::new(Watched { inner: s, state: state.clone() });
            let hs = tokio::time::timeout(up.cfg.connect_timeout, builder.handshake::<_, ReqBody>(io)).await;
            let (sender, conn) = hs
                .map_err(|_| ConnectError::Failed(format!("HTTP/2 handshake with {} timed out", ts.target)))?
                .map_err(|e| ConnectError::Failed(format!("HTTP/2 handshake with {}: {e}", ts.target)))?;
            drive.spawn(conn);
            sender
        }
        _ => {
            let s = tokio::time::timeout(up.cfg.connect_timeout, TcpStream::connect(addr))
                .await
                .map_err(|_| ConnectError::Failed(format!("connect to {} timed out", ts.target)))?
                .map_err(|e| ConnectError::Failed(format!("connect to {}: {e}", ts.target)))?;
            let _ = s.set_nodelay(true);
            let io = TokioIo::new(Watched { inner: s, state: state.clone() });
            let hs = tokio::time::timeout(up.cfg.connect_timeout, builder.handshake::<_, ReqBody>(io)).await;
            let (sender, conn) = hs
                .map_err(|_| ConnectError::Failed(format!("HTTP/2 handshake with {} timed out", ts.target)))?
                .map_err(|e| ConnectError::Failed(format!("HTTP/2 handshake with {}: {e}", ts.target)))?;
            drive.spawn(conn);
            sender
        }
    };
    Ok(Conn { sender, state })
}

/// What the task driving a connection needs besides it.
struct Driver {
    state: Rc<ConnState>,
    idle: Duration,
    upstream: String,
    target: String,
}

impl Driver {
    /// Drive `conn` (the connection's dispatch; hyper runs the HTTP/2 I/O as a task of its
    /// own) on this worker, and close the connection when it has been without a stream for
    /// `idle` (dropping the dispatch makes hyper end the connection with a GOAWAY).
    fn spawn<T>(self, conn: hyper::client::conn::http2::Connection<T, ReqBody, LocalExec>)
    where
        T: hyper::rt::Read + hyper::rt::Write + Unpin + 'static,
    {
        let Driver { state, idle, upstream, target } = self;
        let conn = Rc::new(RefCell::new(Box::pin(conn)));
        let weak = Rc::downgrade(&conn);
        *state.settings.borrow_mut() = Some(Box::new(move || {
            let c = weak.upgrade()?;
            let c = c.borrow();
            Some((c.is_extended_connect_protocol_enabled(), c.current_max_send_streams()))
        }));
        tokio::task::spawn_local(async move {
            let sleep = tokio::time::sleep(idle);
            tokio::pin!(sleep);
            let end = std::future::poll_fn(|cx| {
                if let Poll::Ready(r) = conn.borrow_mut().as_mut().poll(cx) {
                    return Poll::Ready(Some(r));
                }
                if state.streams.get() == 0 {
                    let deadline = state.idle_since.get() + idle;
                    if sleep.deadline() != deadline {
                        sleep.as_mut().reset(deadline);
                    }
                    if sleep.as_mut().poll(cx).is_ready() {
                        return Poll::Ready(None);
                    }
                }
                let mut w = state.driver.borrow_mut();
                if !w.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                    *w = Some(cx.waker().clone());
                }
                Poll::Pending
            })
            .await;
            drop(conn);
            state.settle();
            match end {
                Some(Err(e)) => tracing::warn!(upstream = %upstream, target = %target, error = %e, "HTTP/2 upstream connection failed{}", hint(&e)),
                None => tracing::debug!(upstream = %upstream, target = %target, idle = ?idle, "idle HTTP/2 upstream connection closed"),
                Some(Ok(())) => {}
            }
        });
    }
}

/// A hint for the log when an HTTP/2 exchange fails the way a server that does not speak
/// HTTP/2 makes it fail (it answers the preface with an HTTP/1 error, or closes).
fn hint(e: &hyper::Error) -> &'static str {
    let s = e.to_string();
    let h2 = std::error::Error::source(e).map(|s| s.to_string()).unwrap_or_default();
    if s.contains("frame") || h2.contains("frame") || h2.contains("PROTOCOL_ERROR") || h2.contains("connection reset") || s.contains("closed") {
        " (does the upstream speak HTTP/2 with prior knowledge? h2c:// needs an HTTP/2 server)"
    } else {
        ""
    }
}

/// What [`send`] failed with.
pub(crate) enum SendFailure {
    Upstream(UpstreamError),
    /// The upstream speaks HTTP/1.1 only: send the request that way (its body is given back).
    Http1(Box<Request<ReqBody>>),
}

/// Send `req` (origin-form URI, final headers) on an HTTP/2 stream to a target of `up`. The Host
/// header (or, without one, the target's authority) becomes `:authority`.
pub(crate) async fn send(
    up: &Arc<Upstream>,
    mut req: Request<ReqBody>,
    set_host: &dyn Fn(&mut http::HeaderMap, &HeaderValue),
    metrics: &crate::metrics::AppMetrics,
) -> Result<(Response<Incoming>, StreamGuard), SendFailure> {
    let scheme = if up.protocol == Protocol::Https { http::uri::Scheme::HTTPS } else { http::uri::Scheme::HTTP };
    let mut tried: u64 = 0;
    let mut last_err: Option<String> = None;
    let mut reopened = false;
    for _ in 0..up.targets.len() + 2 {
        let Some(t) = up.pick(tried) else { break };
        let conn = match pooled(up, t) {
            Some(c) => c,
            None => match open(up, t).await {
                Ok(c) => {
                    keep(up, t, &c);
                    c
                }
                Err(ConnectError::Http1) => return Err(SendFailure::Http1(Box::new(req))),
                Err(ConnectError::Failed(e)) => {
                    tracing::warn!(upstream = %up.cfg.name, error = %e, "upstream connect failed");
                    metrics.upstream_error(crate::metrics::UpstreamErr::Connect);
                    up.record_failure(t);
                    last_err = Some(e);
                    if t < 64 {
                        tried |= 1 << t;
                    }
                    continue;
                }
            },
        };
        // The connection is not idle from here on, while the stream (its response body) lives.
        let stream = StreamGuard::new(&conn.state);
        let mut sender = conn.sender;
        // A pooled connection may have closed or reached its stream limit: wait for it (or find
        // it dead, then open another once).
        if let Err(e) = sender.ready().await {
            forget(up, t);
            if !reopened {
                reopened = true;
                continue;
            }
            up.record_failure(t);
            return Err(SendFailure::Upstream(UpstreamError::Protocol(format!("HTTP/2 connection to {} failed: {e}{}", up.targets[t].target, hint(&e)))));
        }
        set_host(req.headers_mut(), &up.targets[t].authority);
        let authority = req.headers_mut().remove(header::HOST).unwrap_or_else(|| up.targets[t].authority.clone());
        let mut parts = std::mem::take(req.uri_mut()).into_parts();
        parts.scheme = Some(scheme.clone());
        parts.authority = authority.to_str().ok().and_then(|a| a.parse().ok()).or_else(|| up.targets[t].authority.to_str().ok().and_then(|a| a.parse().ok()));
        if parts.path_and_query.is_none() {
            parts.path_and_query = Some(http::uri::PathAndQuery::from_static("/"));
        }
        *req.uri_mut() = Uri::from_parts(parts).unwrap_or_else(|_| Uri::from_static("/"));
        *req.version_mut() = http::Version::HTTP_2;
        let guard = crate::upstream::ActiveGuard::new(up.clone(), t);
        let result = tokio::time::timeout(up.cfg.read_timeout, sender.send_request(req)).await;
        drop(guard);
        return match result {
            Err(_) => {
                up.record_failure(t);
                Err(SendFailure::Upstream(UpstreamError::Timeout))
            }
            Ok(Ok(resp)) => {
                up.record_success(t);
                Ok((resp, stream))
            }
            Ok(Err(e)) => {
                if e.is_closed() || e.is_canceled() {
                    forget(up, t);
                }
                // A request body that failed (a blocked gRPC message) is the client's doing.
                if e.is_user() || std::error::Error::source(&e).is_some_and(|s| s.is::<BodyError>()) {
                    return Err(SendFailure::Upstream(UpstreamError::ClientBody(BodyError::Io(e.to_string()))));
                }
                up.record_failure(t);
                Err(SendFailure::Upstream(UpstreamError::Protocol(format!("HTTP/2 request to {} failed: {e}{}", up.targets[t].target, hint(&e)))))
            }
        };
    }
    Err(SendFailure::Upstream(UpstreamError::Connect(last_err.unwrap_or_else(|| "no target available".to_string()))))
}

/// One gRPC health check (`grpc.health.v1.Health/Check`) of target `t`: healthy when the
/// answer is `SERVING` with `grpc-status: 0`.
pub(crate) async fn grpc_probe(up: &Upstream, t: usize, service: &str) -> bool {
    use http_body_util::BodyExt;
    let Ok(conn) = open(up, t).await else { return false };
    let _stream = StreamGuard::new(&conn.state);
    let mut sender = conn.sender;
    if sender.ready().await.is_err() {
        return false;
    }
    // HealthCheckRequest { string service = 1; } in one uncompressed message.
    let mut msg = Vec::with_capacity(service.len() + 8);
    if !service.is_empty() {
        msg.push(0x0a);
        let mut n = service.len();
        while n >= 0x80 {
            msg.push((n as u8) | 0x80);
            n >>= 7;
        }
        msg.push(n as u8);
        msg.extend_from_slice(service.as_bytes());
    }
    let mut body = vec![0u8];
    body.extend_from_slice(&(msg.len() as u32).to_be_bytes());
    body.extend_from_slice(&msg);
    let scheme = if up.protocol == Protocol::Https { "https" } else { "http" };
    let authority = up.targets[t].authority.to_str().unwrap_or("localhost");
    let Ok(req) = Request::post(format!("{scheme}://{authority}/grpc.health.v1.Health/Check"))
        .version(http::Version::HTTP_2)
        .header(header::CONTENT_TYPE, "application/grpc")
        .header(header::TE, "trailers")
        .header(header::USER_AGENT, "palisade-health-check")
        .body(ReqBody::Full(Some(Bytes::from(body))))
    else {
        return false;
    };
    let Ok(resp) = sender.send_request(req).await else { return false };
    if resp.status() != http::StatusCode::OK {
        return false;
    }
    let status_in_head = resp.headers().get("grpc-status").cloned();
    let Ok(collected) = resp.into_body().collect().await else { return false };
    let trailers = collected.trailers().cloned();
    let status = trailers.as_ref().and_then(|t| t.get("grpc-status").cloned()).or(status_in_head);
    if status.as_ref().map(HeaderValue::as_bytes) != Some(b"0") {
        return false;
    }
    let bytes = collected.to_bytes();
    // HealthCheckResponse { ServingStatus status = 1; } with SERVING = 1.
    let Ok(msgs) = palisade_core::grpc::split(&bytes, 1 << 16) else { return false };
    msgs.first().is_some_and(|m| !m.compressed && m.payload == [0x08, 0x01])
}

/// How an HTTP/2 upstream took a WebSocket handshake ([`websocket`]).
pub(crate) enum WsAnswer {
    /// Its answer to the extended CONNECT (RFC 8441), and the stream it is on.
    Answer(Box<Response<Incoming>>, StreamGuard),
    /// It does not allow extended CONNECT (no `SETTINGS_ENABLE_CONNECT_PROTOCOL`), or it chose
    /// HTTP/1.1 by ALPN (`h2: false`): the handshake goes as an HTTP/1.1 upgrade.
    Http1 {
        h2: bool,
    },
    /// No connection, or the stream failed.
    Failed(String),
    Timeout,
}

/// Send a WebSocket handshake to target `t` of an HTTP/2 upstream as an extended CONNECT
/// (`:protocol = websocket`, RFC 8441) when the upstream allows it. `req` is the `GET` as it
/// goes upstream (final headers, origin-form URI, Host set).
pub(crate) async fn websocket(up: &Upstream, t: usize, req: http::request::Parts) -> WsAnswer {
    let conn = match connection(up, t).await {
        Ok(c) => c,
        Err(ConnectError::Http1) => return WsAnswer::Http1 { h2: false },
        Err(ConnectError::Failed(e)) => {
            up.record_failure(t);
            return WsAnswer::Failed(e);
        }
    };
    let mut stream = StreamGuard::new(&conn.state);
    if !conn.state.connect_protocol(up.cfg.connect_timeout).await {
        return WsAnswer::Http1 { h2: true };
    }
    let mut conn = conn;
    if !conn.state.room_for_long_stream() {
        // Half the worker's connection is taken by WebSockets already: this one gets an
        // HTTP/2 connection of its own, closed when it ends.
        conn = match open_with(up, t, Some(Duration::ZERO)).await {
            Ok(c) => c,
            Err(ConnectError::Http1) => return WsAnswer::Http1 { h2: false },
            Err(ConnectError::Failed(e)) => {
                up.record_failure(t);
                return WsAnswer::Failed(e);
            }
        };
        stream = StreamGuard::new(&conn.state);
        if !conn.state.connect_protocol(up.cfg.connect_timeout).await {
            return WsAnswer::Http1 { h2: true };
        }
    }
    let mut sender = conn.sender;
    if let Err(e) = sender.ready().await {
        forget(up, t);
        return WsAnswer::Failed(format!("HTTP/2 connection to {} failed: {e}{}", up.targets[t].target, hint(&e)));
    }
    let mut parts = req;
    let authority = parts.headers.remove(header::HOST).unwrap_or_else(|| up.targets[t].authority.clone());
    // RFC 8441 §5: no key, no accept value; the connection-specific fields have no place.
    for name in [header::SEC_WEBSOCKET_KEY, header::CONNECTION, header::UPGRADE, header::CONTENT_LENGTH, header::TRANSFER_ENCODING] {
        parts.headers.remove(name);
    }
    let mut uri = std::mem::take(&mut parts.uri).into_parts();
    uri.scheme = Some(if up.protocol == Protocol::Https { http::uri::Scheme::HTTPS } else { http::uri::Scheme::HTTP });
    uri.authority = authority.to_str().ok().and_then(|a| a.parse().ok()).or_else(|| up.targets[t].authority.to_str().ok().and_then(|a| a.parse().ok()));
    if uri.path_and_query.is_none() {
        uri.path_and_query = Some(http::uri::PathAndQuery::from_static("/"));
    }
    parts.uri = Uri::from_parts(uri).unwrap_or_else(|_| Uri::from_static("/"));
    parts.method = http::Method::CONNECT;
    parts.version = http::Version::HTTP_2;
    parts.extensions = http::Extensions::new();
    parts.extensions.insert(hyper::ext::Protocol::from_static("websocket"));
    let req = Request::from_parts(parts, ReqBody::Full(None));
    match tokio::time::timeout(up.cfg.read_timeout, sender.send_request(req)).await {
        Err(_) => {
            up.record_failure(t);
            WsAnswer::Timeout
        }
        Ok(Ok(resp)) => {
            up.record_success(t);
            WsAnswer::Answer(Box::new(resp), stream)
        }
        Ok(Err(e)) => {
            if e.is_closed() || e.is_canceled() {
                forget(up, t);
            }
            up.record_failure(t);
            WsAnswer::Failed(format!("extended CONNECT to {} failed: {e}{}", up.targets[t].target, hint(&e)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    /// The upstream's first frame is known to be in once its 9-byte header and the payload its
    /// length gives have been read, however the reads cut them.
    #[tokio::test]
    async fn the_first_frame_is_seen_whole_whatever_the_reads() {
        // SETTINGS (type 4) with one setting: ENABLE_CONNECT_PROTOCOL (8) = 1; then a PING.
        let mut bytes = vec![0, 0, 6, 4, 0, 0, 0, 0, 0, 0, 8, 0, 0, 0, 1];
        bytes.extend_from_slice(&[0, 0, 8, 6, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8]);
        for step in [1, 2, 5, 14, 15, 64] {
            let state = Rc::new(ConnState::new());
            let mut w = Watched { inner: &bytes[..], state: state.clone() };
            let mut buf = vec![0u8; step];
            let mut read = 0;
            while read < bytes.len() {
                let n = w.read(&mut buf).await.unwrap();
                read += n;
                assert_eq!(state.settled.get(), read >= 15, "step {step}, {read} bytes read");
            }
            assert_eq!(state.first.get(), [0, 0, 6]);
        }
    }
}
