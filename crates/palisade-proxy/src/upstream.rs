//! Upstream connections: the HTTP/1.1 client, keep-alive pools and the HTTP/1.1 health probe.
//!
//! Targets and balancing (counters, ejection and health flags) are [`crate::targets`]'s
//! [`Upstream`], which belongs to a configuration snapshot and is shared by all workers through
//! atomics. Idle connections live in a per-worker pool (a thread-local, no locks): each worker
//! runs a single-threaded runtime, and a hyper HTTP/1 connection is driven by a task on the
//! worker that opened it.
//!
//! The HTTP/1.1 client is inline: the request's own task writes the request on the pooled socket
//! and reads the response from it (no connection task, no channels), with the same strict
//! framing code as the server side (`codec.rs`). Idle pooled connections are checked for a close
//! by the upstream before reuse without a syscall (tokio's cached readiness). A request that
//! fails before reaching the upstream (connect error, dead pooled connection) is retried on
//! another connection or target; an idempotent request with a replayable body is also retried
//! once when a reused connection closes before any byte of the response.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use http::{header, HeaderMap, HeaderName, HeaderValue, Method, Request, Response, StatusCode, Version};
use http_body::{Body, Frame, SizeHint};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpStream, UnixStream};
use tokio::time::Sleep;

use crate::body::UpBody;
use crate::body_error::BodyError;
use crate::codec::{self, BodyState, Chunk};
use crate::io::Stream;
pub use crate::targets::{Addr, Protocol, TargetState, Upstream, UpstreamTls};

/// Open a TLS connection to target `t` of an `https://` upstream with `config`.
pub(crate) async fn connect_tls(up: &Upstream, t: usize, config: Arc<rustls::ClientConfig>) -> Result<tokio_rustls::client::TlsStream<TcpStream>, String> {
    let ts = &up.targets[t];
    let Addr::Tcp(addr) = &ts.addr else { return Err(format!("{} is not a TCP target", ts.target)) };
    let name = up.server_name(t).map_err(|e| e.to_string())?;
    let fut = async {
        let s = TcpStream::connect(addr).await.map_err(|e| format!("connect to {}: {e}", ts.target))?;
        let _ = s.set_nodelay(true);
        tokio_rustls::TlsConnector::from(config).connect(name, s).await.map_err(|e| format!("TLS handshake with {}: {e}", ts.target))
    };
    tokio::time::timeout(up.cfg.connect_timeout, fut).await.map_err(|_| format!("connect to {} timed out", ts.target))?
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

/// An upstream connection: the socket and what has been read from it but not consumed.
pub struct UpConn {
    io: Stream,
    rbuf: BytesMut,
    /// The connection's response timer, moved only when it would fire too early by more than a
    /// slack (see [`UpConn::arm`]): re-registering a timer per request costs more than parsing.
    timer: Option<Pin<Box<Sleep>>>,
    /// When the last request on this connection started: its idle time in the pool is counted
    /// from there (a little early, never late), which saves reading the clock on release.
    used: Instant,
    /// The request head being written (with a small body), kept for the next request.
    wbuf: Vec<u8>,
}

impl UpConn {
    /// Arm the timer for a deadline `d` from `now`, accepting up to min(d/8, 1s) of earliness.
    fn arm(&mut self, d: Duration, now: Instant) -> Pin<Box<Sleep>> {
        let want = tokio::time::Instant::from_std(now) + d;
        let Some(mut timer) = self.timer.take() else { return Box::pin(tokio::time::sleep_until(want)) };
        let slack = (d / 8).min(Duration::from_secs(1));
        let current = timer.deadline();
        if current + slack < want || current > want {
            timer.as_mut().reset(want);
        }
        timer
    }

    /// Whether an idle connection is still usable. If the socket became readable while idle,
    /// the upstream closed it (or sent something unasked): either way it cannot carry a request.
    /// Costs no syscall when nothing happened (tokio keeps the readiness the poller reported).
    fn idle_ok(&mut self) -> bool {
        if !self.rbuf.is_empty() {
            return false;
        }
        let mut cx = Context::from_waker(std::task::Waker::noop());
        let mut probe = [0u8; 1];
        let mut buf = ReadBuf::new(&mut probe);
        matches!(Pin::new(&mut self.io).poll_read(&mut cx, &mut buf), Poll::Pending)
    }
}

/// Connections are boxed for their whole life: a request moves a pointer in and out of the
/// pool and through the response body, not the connection's state.
struct Idle {
    conn: Box<UpConn>,
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

fn pool_take(up: &Upstream, t: usize, now: Instant) -> Option<Box<UpConn>> {
    POOLS.with(|p| {
        let mut p = p.borrow_mut();
        if p.generation != up.generation {
            return None;
        }
        let list = p.idle.get_mut(up.index)?.get_mut(t)?;
        while let Some(mut idle) = list.pop() {
            if now.saturating_duration_since(idle.since) < up.cfg.idle_timeout && idle.conn.idle_ok() {
                let mut conn = idle.conn;
                conn.used = now;
                return Some(conn);
            }
        }
        None
    })
}

fn pool_put(up: &Upstream, t: usize, conn: Box<UpConn>) {
    let max_idle = up.cfg.max_idle;
    if max_idle == 0 {
        return;
    }
    POOLS.with(|p| {
        let mut p = p.borrow_mut();
        if p.generation != up.generation {
            if p.generation > up.generation {
                return; // a connection of an older snapshot: let it close
            }
            p.generation = up.generation;
            p.idle.clear();
        }
        if p.idle.len() <= up.index {
            p.idle.resize_with(up.index + 1, Vec::new);
        }
        let ups = &mut p.idle[up.index];
        if ups.len() < up.targets.len() {
            ups.resize_with(up.targets.len(), Vec::new);
        }
        let list = &mut ups[t];
        if list.len() >= max_idle {
            list.remove(0);
        }
        list.push(Idle { since: conn.used, conn });
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

async fn connect(up: &Upstream, t: usize, now: Instant) -> Result<Box<UpConn>, String> {
    let ts = &up.targets[t];
    let io = match &ts.addr {
        Addr::Tcp(_) if up.protocol == Protocol::Https => {
            let tls = up.tls.as_ref().ok_or("no TLS configuration")?;
            Stream::TlsClient(Box::new(connect_tls(up, t, tls.http1.clone()).await?))
        }
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
    Ok(Box::new(UpConn { io, rbuf: BytesMut::with_capacity(4096), timer: None, used: now, wbuf: Vec::new() }))
}

/// Serialise a request head in origin form.
fn encode_head(parts: &http::request::Parts, extra: &[u8], chunked: bool, out: &mut Vec<u8>) {
    out.extend_from_slice(parts.method.as_str().as_bytes());
    out.push(b' ');
    let pq = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    out.extend_from_slice(if pq.is_empty() { b"/" } else { pq.as_bytes() });
    out.extend_from_slice(b" HTTP/1.1\r\n");
    for (name, value) in &parts.headers {
        out.extend_from_slice(name.as_str().as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(extra);
    if chunked {
        out.extend_from_slice(b"transfer-encoding: chunked\r\n");
    }
    out.extend_from_slice(b"\r\n");
}

async fn write_all(io: &mut Stream, mut buf: &[u8], progress: &Progress) -> std::io::Result<()> {
    while !buf.is_empty() {
        let n = std::future::poll_fn(|cx| Pin::new(&mut *io).poll_write(cx, buf)).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        progress.mark();
        buf = &buf[n..];
    }
    Ok(())
}

/// Write `bufs` in order, with vectored writes.
async fn write_slices(io: &mut Stream, mut bufs: [&[u8]; 3], progress: &Progress) -> std::io::Result<()> {
    std::future::poll_fn(|cx| codec::poll_write_all(&mut *io, cx, &mut bufs, || progress.mark())).await
}

/// When the exchange with the upstream last moved, for `read_timeout`: the timeout runs between
/// two steps (a write to the upstream, the end of the request, a read of the response head), as
/// nginx's `proxy_send_timeout` / `proxy_read_timeout` do, never over a whole upload. While the
/// proxy waits for the client's next body bytes, the wait is the client's: it is bounded by
/// `body_read_timeout` instead (a 408, whatever the protocol the client speaks).
struct Progress(Cell<(tokio::time::Instant, Turn)>);

#[derive(Clone, Copy, PartialEq, Eq)]
enum Turn {
    Upstream,
    Client,
}

/// What the exchange timer firing means.
enum Fired {
    /// The exchange moved since the timer was armed: wait on until this deadline.
    Extend(tokio::time::Instant),
    UpstreamTimeout,
    ClientTimeout,
}

impl Progress {
    fn new(at: tokio::time::Instant) -> Progress {
        Progress(Cell::new((at, Turn::Upstream)))
    }

    fn mark(&self) {
        self.0.set((tokio::time::Instant::now(), Turn::Upstream));
    }

    /// The proxy now waits for the client's body.
    fn client_turn(&self) {
        self.0.set((tokio::time::Instant::now(), Turn::Client));
    }

    /// `check`: the longest the timer may sleep, so that a turn that began after it was set is
    /// looked at in time (a wait may run up to `check` past its timeout).
    fn fired(&self, read_timeout: Duration, body_timeout: Duration, check: Duration) -> Fired {
        let (at, turn) = self.0.get();
        let (deadline, timeout) = match turn {
            Turn::Upstream => (at + read_timeout, Fired::UpstreamTimeout),
            Turn::Client => (at + body_timeout, Fired::ClientTimeout),
        };
        let now = tokio::time::Instant::now();
        if deadline > now {
            Fired::Extend(deadline.min(now + check))
        } else {
            timeout
        }
    }
}

enum SendError {
    /// The connection failed before the request was fully written.
    Write(std::io::Error),
    /// The client's body failed while it streamed upstream.
    ClientBody(BodyError),
}

/// Bodies up to this size are copied behind the head and go out in one plain write; larger ones
/// go in the same vectored write as the head.
const BODY_IN_HEAD: usize = 16 * 1024;

/// Write the request. Streams the client's body for `UpBody::Chained`. A small full body has
/// already been appended to `head` (see [`BODY_IN_HEAD`]).
async fn write_request(conn_io: &mut Stream, head: &[u8], body: &mut UpBody, chunked: bool, progress: &Progress) -> Result<(), SendError> {
    match body {
        UpBody::Full(None) => write_all(conn_io, head, progress).await.map_err(SendError::Write),
        UpBody::Full(Some(b)) if b.len() <= BODY_IN_HEAD => write_all(conn_io, head, progress).await.map_err(SendError::Write),
        UpBody::Full(Some(b)) => write_slices(conn_io, [head, b, b""], progress).await.map_err(SendError::Write),
        UpBody::Chained { .. } => {
            write_all(conn_io, head, progress).await.map_err(SendError::Write)?;
            loop {
                progress.client_turn();
                let frame = std::future::poll_fn(|cx| Pin::new(&mut *body).poll_frame(cx)).await;
                progress.mark();
                match frame {
                    None => break,
                    Some(Err(e)) => return Err(SendError::ClientBody(e)),
                    Some(Ok(f)) => {
                        let Ok(data) = f.into_data() else { continue };
                        if data.is_empty() {
                            continue;
                        }
                        if chunked {
                            // Size line, data and CRLF in one vectored write.
                            let size = format!("{:x}\r\n", data.len());
                            write_slices(conn_io, [size.as_bytes(), &data, b"\r\n"], progress).await.map_err(SendError::Write)?;
                        } else {
                            write_all(conn_io, &data, progress).await.map_err(SendError::Write)?;
                        }
                    }
                }
            }
            if chunked {
                write_all(conn_io, b"0\r\n\r\n", progress).await.map_err(SendError::Write)?;
            }
            Ok(())
        }
    }
}

/// What reading a response head produced.
enum HeadError {
    /// The upstream closed before sending a byte of the response.
    ClosedEarly,
    Io(std::io::Error),
    Invalid(&'static str),
}

const MAX_RESPONSE_HEAD: usize = 64 * 1024;
const MAX_RESPONSE_HEADERS: usize = 128;

/// A parsed upstream response head: the parts (headers empty in pass-through mode), the body
/// framing, whether the connection may be reused, and in pass-through mode the header lines to
/// forward verbatim.
struct ParsedHead {
    parts: http::response::Parts,
    body: BodyState,
    keep_alive: bool,
    raw: Option<RawHead>,
}

/// The upstream's response header lines, hop-by-hop headers (and framing headers the client
/// side recomputes) removed, ready to be copied into the client's response head: the HTTP/1
/// server writes them without building a `HeaderMap` (see `h1::write_response`).
pub struct RawHead {
    pub lines: Vec<u8>,
    pub has_date: bool,
    /// Palisade's request id, written by the HTTP/1 writer as `X-Request-Id` (set by the proxy).
    pub request_id: Option<crate::request_id::RequestId>,
}

thread_local! {
    /// A `RawHead` line buffer kept for the next response (one per worker, instead of one
    /// allocation per response).
    static SPARE_LINES: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

fn spare_lines(min: usize) -> Vec<u8> {
    let mut v = SPARE_LINES.with(std::cell::Cell::take);
    v.clear();
    v.reserve(min);
    v
}

impl Drop for RawHead {
    fn drop(&mut self) {
        if self.lines.capacity() <= 16 * 1024 {
            let v = std::mem::take(&mut self.lines);
            SPARE_LINES.with(|s| s.set(v));
        }
    }
}

/// Read a response head (skipping 1xx interim responses).
async fn read_response_head(conn: &mut UpConn, method: &Method, raw: bool) -> Result<ParsedHead, HeadError> {
    let mut scanned = 0;
    let mut received_any = false;
    loop {
        if let Some((end, crlf)) = codec::find_head_end_checked(&conn.rbuf, &mut scanned) {
            scanned = 0;
            match parse_response_head(&mut conn.rbuf, end, crlf, method, raw)? {
                Some(parsed) => return Ok(parsed),
                None => continue, // a 1xx: read the next head
            }
        }
        if conn.rbuf.len() > MAX_RESPONSE_HEAD {
            return Err(HeadError::Invalid("response head too large"));
        }
        let n = std::future::poll_fn(|cx| codec::poll_read_more(&mut conn.io, &mut conn.rbuf, cx)).await.map_err(|e| {
            if !received_any && matches!(e.kind(), std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::BrokenPipe) {
                HeadError::ClosedEarly
            } else {
                HeadError::Io(e)
            }
        })?;
        if n == 0 {
            return Err(if received_any { HeadError::Invalid("upstream closed in the middle of the response head") } else { HeadError::ClosedEarly });
        }
        received_any = true;
    }
}

/// What the response header names that matter here are, told apart by length first: most names
/// are classified without a comparison.
#[derive(Clone, Copy, PartialEq, Eq)]
enum RespName {
    Connection,
    TransferEncoding,
    ContentLength,
    Date,
    /// Hop-by-hop (RFC 9110 §7.6.1, plus the non-standard ones proxies drop), `Upgrade` (upgrades
    /// are not proxied) and `X-Request-Id` (the client gets Palisade's, never the upstream's):
    /// never forwarded as they are.
    Dropped,
    Other,
}

fn resp_name(name: &[u8]) -> RespName {
    let is = |n: &[u8]| codec::eq_lower(name, n);
    let dropped = |b: bool| if b { RespName::Dropped } else { RespName::Other };
    match name.len() {
        2 => dropped(is(b"te")),
        4 if is(b"date") => RespName::Date,
        7 => dropped(is(b"trailer") || is(b"upgrade")),
        10 if is(b"connection") => RespName::Connection,
        10 => dropped(is(b"keep-alive")),
        12 => dropped(is(b"x-request-id")),
        14 if is(b"content-length") => RespName::ContentLength,
        16 => dropped(is(b"proxy-connection")),
        17 if is(b"transfer-encoding") => RespName::TransferEncoding,
        18 => dropped(is(b"proxy-authenticate")),
        19 => dropped(is(b"proxy-authorization")),
        _ => RespName::Other,
    }
}

fn comma_tokens(v: &[u8]) -> impl Iterator<Item = &[u8]> {
    v.split(|b| *b == b',').map(<[u8]>::trim_ascii).filter(|t| !t.is_empty())
}

/// Parse one response head. With `raw`, the headers are not put in a `HeaderMap`: the lines to
/// forward are collected into a [`RawHead`] instead (the common case when no response stage
/// needs to look at the headers). Framing, reuse and the lines to forward come from one pass
/// over the header lines.
fn parse_response_head(rbuf: &mut BytesMut, end: usize, crlf_known: bool, method: &Method, raw: bool) -> Result<Option<ParsedHead>, HeadError> {
    use bytes::Buf;
    let head_bytes = &rbuf[..end];
    if !crlf_known && !codec::crlf_only(head_bytes) {
        return Err(HeadError::Invalid("bare LF in response head"));
    }
    let mut slots = [const { std::mem::MaybeUninit::<httparse::Header<'_>>::uninit() }; MAX_RESPONSE_HEADERS];
    let mut resp = httparse::Response::new(&mut []);
    match httparse::ParserConfig::default().parse_response_with_uninit_headers(&mut resp, head_bytes, &mut slots) {
        Ok(httparse::Status::Complete(n)) if n == end => {}
        _ => return Err(HeadError::Invalid("malformed response head")),
    }
    let status = resp.code.and_then(|c| StatusCode::from_u16(c).ok()).ok_or(HeadError::Invalid("invalid status"))?;
    let version = if resp.version == Some(1) { Version::HTTP_11 } else { Version::HTTP_10 };
    if status.is_informational() {
        if status == StatusCode::SWITCHING_PROTOCOLS {
            return Err(HeadError::Invalid("protocol upgrades are not supported"));
        }
        rbuf.advance(end);
        return Ok(None);
    }
    // An upstream's Content-Length stays only where the client side cannot recompute it.
    let keep_length = *method == Method::HEAD || status == StatusCode::NOT_MODIFIED;
    let mut keep_alive = version == Version::HTTP_11;
    // Whether Connection names a header that is not dropped anyway (rare: then a second pass).
    let mut connection_names_other = false;
    let mut chunked: Option<bool> = None; // Some(last coding is chunked) when Transfer-Encoding is present
    let mut len: Option<u64> = None;
    let mut lines = if raw { spare_lines(end) } else { Vec::new() };
    let mut has_date = false;
    // The lines to forward, copied in runs (see `codec::LineRuns`).
    let base = head_bytes.as_ptr() as usize;
    let mut runs = codec::LineRuns::default();
    for h in resp.headers.iter() {
        let name = h.name.as_bytes();
        let kind = resp_name(name);
        match kind {
            RespName::Connection => {
                for t in comma_tokens(h.value) {
                    if codec::eq_lower(t, b"keep-alive") {
                        keep_alive |= version == Version::HTTP_10;
                    } else if !matches!(resp_name(t), RespName::Dropped | RespName::Connection | RespName::TransferEncoding) {
                        // `close`, or a header this message must not pass on.
                        keep_alive &= !t.eq_ignore_ascii_case(b"close");
                        connection_names_other = true;
                    }
                }
            }
            RespName::TransferEncoding => {
                if let Some(last) = comma_tokens(h.value).last() {
                    chunked = Some(last.eq_ignore_ascii_case(b"chunked"));
                } else if chunked.is_none() {
                    chunked = Some(false);
                }
            }
            RespName::ContentLength => {
                for part in h.value.split(|b| *b == b',') {
                    let part = part.trim_ascii();
                    let n = if part.is_empty() {
                        None
                    } else {
                        part.iter().try_fold(0u64, |n, d| if d.is_ascii_digit() { n.checked_mul(10)?.checked_add(u64::from(d - b'0')) } else { None })
                    };
                    match (n, len) {
                        (None, _) => return Err(HeadError::Invalid("invalid Content-Length")),
                        (Some(n), Some(l)) if n != l => return Err(HeadError::Invalid("conflicting Content-Length")),
                        (Some(n), _) => len = Some(n),
                    }
                }
            }
            RespName::Date | RespName::Dropped | RespName::Other => {}
        }
        if raw
            && kind != RespName::Dropped
            && kind != RespName::Connection
            && kind != RespName::TransferEncoding
            && (keep_length || kind != RespName::ContentLength)
        {
            // Values need no check here: httparse accepts exactly the bytes `HeaderValue` does
            // (HTAB, SP, visible ASCII, obs-text).
            has_date |= kind == RespName::Date;
            let at = |s: &[u8]| s.as_ptr() as usize - base;
            runs.keep(head_bytes, &mut lines, (at(name), name.len()), (at(h.value), h.value.len()));
        } else if raw {
            runs.flush(head_bytes, &mut lines);
        }
    }
    runs.flush(head_bytes, &mut lines);
    let body = if *method == Method::HEAD || status == StatusCode::NO_CONTENT || status == StatusCode::NOT_MODIFIED {
        BodyState::Done
    } else if let Some(is_chunked) = chunked {
        if is_chunked {
            BodyState::Chunked(Chunk::Size)
        } else {
            keep_alive = false;
            BodyState::UntilClose
        }
    } else if let Some(n) = len {
        if n == 0 {
            BodyState::Done
        } else {
            BodyState::Length(n)
        }
    } else {
        keep_alive = false;
        BodyState::UntilClose
    };
    let mut response = Response::new(());
    *response.status_mut() = status;
    *response.version_mut() = version;
    if raw {
        if connection_names_other {
            // Headers named in Connection are hop-by-hop too: drop those lines as well.
            let named: Vec<&[u8]> =
                resp.headers.iter().filter(|h| resp_name(h.name.as_bytes()) == RespName::Connection).flat_map(|h| comma_tokens(h.value)).collect();
            lines.clear();
            has_date = false;
            for h in resp.headers.iter() {
                let name = h.name.as_bytes();
                let kind = resp_name(name);
                let hop = matches!(kind, RespName::Dropped | RespName::Connection | RespName::TransferEncoding);
                if hop || (!keep_length && kind == RespName::ContentLength) || named.iter().any(|n| name.eq_ignore_ascii_case(n)) {
                    continue;
                }
                has_date |= kind == RespName::Date;
                lines.extend_from_slice(name);
                lines.extend_from_slice(b": ");
                lines.extend_from_slice(h.value);
                lines.extend_from_slice(b"\r\n");
            }
        }
        rbuf.advance(end);
        return Ok(Some(ParsedHead { parts: response.into_parts().0, body, keep_alive, raw: Some(RawHead { lines, has_date, request_id: None }) }));
    }
    let mut ranges: Vec<(HeaderName, usize, usize)> = Vec::with_capacity(resp.headers.len());
    for h in resp.headers.iter() {
        let name = HeaderName::from_bytes(h.name.as_bytes()).map_err(|_| HeadError::Invalid("invalid header name"))?;
        ranges.push((name, h.value.as_ptr() as usize - base, h.value.len()));
    }
    let head = rbuf.split_to(end).freeze();
    let mut headers = HeaderMap::with_capacity(ranges.len());
    for (name, off, len) in ranges {
        let value = HeaderValue::from_maybe_shared(head.slice(off..off + len)).map_err(|_| HeadError::Invalid("invalid header value"))?;
        headers.append(name, value);
    }
    *response.headers_mut() = headers;
    Ok(Some(ParsedHead { parts: response.into_parts().0, body, keep_alive, raw: None }))
}

/// What [`send`] needs from the request's app and server.
pub struct SendContext<'a> {
    /// Each failed connection attempt is counted here (`upstream_errors_total{kind="connect"}`).
    pub metrics: &'a crate::metrics::AppMetrics,
    /// `body_read_timeout`: the longest wait for the client's next body bytes while they stream.
    pub body_timeout: Duration,
}

/// Send `req` to the upstream. The request's URI must be in origin form and its headers final;
/// `set_host` sets the `Host` header for the chosen target; `extra_lines` (complete header
/// lines, e.g. the forwarding headers) are appended to the head as they are (`length_in_lines`:
/// they hold the Content-Length). With `raw`, the
/// response's header lines are kept for pass-through ([`RawHead`]) instead of a `HeaderMap`.
pub async fn send(
    up: &Arc<Upstream>,
    req: Request<UpBody>,
    set_host: &dyn Fn(&mut http::HeaderMap, &HeaderValue),
    raw: bool,
    extra_lines: &[u8],
    length_in_lines: bool,
    cx: &SendContext<'_>,
) -> Result<Response<UpstreamBody>, UpstreamError> {
    let (mut parts, mut body) = req.into_parts();
    let idempotent = matches!(parts.method, Method::GET | Method::HEAD | Method::OPTIONS | Method::PUT | Method::DELETE | Method::TRACE);
    let chunked = matches!(body, UpBody::Chained { .. }) && !length_in_lines && !parts.headers.contains_key(header::CONTENT_LENGTH);
    let mut tried: u64 = 0;
    let mut last_err: Option<String> = None;
    let mut fresh_retry_used = false;
    for _ in 0..up.targets.len() + 2 {
        let Some(t) = up.pick(tried) else { break };
        set_host(&mut parts.headers, &up.targets[t].authority);
        let now = Instant::now();
        let (mut conn, reused) = match pool_take(up, t, now) {
            Some(c) => (c, true),
            None => match connect(up, t, now).await {
                Ok(c) => (c, false),
                Err(e) => {
                    tracing::warn!(upstream = %up.cfg.name, error = %e, "upstream connect failed");
                    // Every failed attempt counts, also when another target then answers.
                    cx.metrics.upstream_error(crate::metrics::UpstreamErr::Connect);
                    up.record_failure(t);
                    last_err = Some(e);
                    if t < 64 {
                        tried |= 1 << t;
                    }
                    continue;
                }
            },
        };
        let guard = ActiveGuard::new(up.clone(), t);
        // The head goes into the connection's own buffer, with a small body behind it.
        let mut head = std::mem::take(&mut conn.wbuf);
        head.clear();
        encode_head(&parts, extra_lines, chunked, &mut head);
        if let UpBody::Full(Some(b)) = &body {
            if b.len() <= BODY_IN_HEAD {
                head.extend_from_slice(b);
            }
        }
        let replayable = matches!(body, UpBody::Full(_));
        // A fresh connection may have taken a while: its read timeout starts after the connect.
        // When it fires, it is moved on to `read_timeout` after the exchange last moved (see
        // `Progress`): a slow but flowing upload never times out, and the wait for the response
        // head runs from the end of the request.
        let start = if reused { now } else { Instant::now() };
        // A streamed body has turns where the client is waited for (`Progress`): the timer then
        // wakes often enough to see either side's timeout.
        let check = if matches!(body, UpBody::Chained { .. }) { up.cfg.read_timeout.min(cx.body_timeout) } else { up.cfg.read_timeout };
        let mut timer = conn.arm(check, start);
        let progress = Progress::new(tokio::time::Instant::from_std(start));
        let outcome = {
            let exchange = async {
                match write_request(&mut conn.io, &head, &mut body, chunked, &progress).await {
                    Ok(()) => {}
                    Err(SendError::ClientBody(e)) => return Err(e),
                    Err(SendError::Write(e)) => return Ok(Err(HeadError::Io(e))),
                }
                Ok(read_response_head(&mut conn, &parts.method, raw).await)
            };
            tokio::pin!(exchange);
            loop {
                tokio::select! {
                    biased;
                    r = &mut exchange => break Some(r),
                    _ = timer.as_mut() => match progress.fired(up.cfg.read_timeout, cx.body_timeout, check) {
                        Fired::Extend(deadline) => timer.as_mut().reset(deadline),
                        Fired::UpstreamTimeout => break None,
                        Fired::ClientTimeout => break Some(Err(BodyError::Timeout)),
                    },
                }
            }
        };
        conn.timer = Some(timer);
        if head.capacity() <= 64 * 1024 {
            conn.wbuf = head;
        }
        let result = match outcome {
            None => {
                up.record_failure(t);
                return Err(UpstreamError::Timeout);
            }
            Some(Err(body_err)) => return Err(UpstreamError::ClientBody(body_err)),
            Some(Ok(r)) => r,
        };
        match result {
            Ok(ParsedHead { parts: resp_parts, body: state, keep_alive, raw }) => {
                up.record_success(t);
                // The request body is not needed again (no retry after a response): its buffer
                // goes back to the worker's pool.
                if let UpBody::Full(Some(b)) = body {
                    crate::h1_body::recycle_body(b);
                }
                let ub = UpstreamBody {
                    conn: Some(conn),
                    state,
                    reusable: keep_alive,
                    read_timeout: up.cfg.read_timeout,
                    sleep: None,
                    guard,
                    raw_head: raw,
                    trailers: Vec::new(),
                };
                return Ok(Response::from_parts(resp_parts, ub));
            }
            Err(e) => {
                let closed_early = matches!(e, HeadError::ClosedEarly)
                    || matches!(&e, HeadError::Io(io) if matches!(io.kind(), std::io::ErrorKind::BrokenPipe | std::io::ErrorKind::ConnectionReset));
                // A reused connection the upstream closed as we used it: the request most likely
                // never reached it. Retry once on a fresh connection when that is safe.
                if reused && closed_early && replayable && idempotent && !fresh_retry_used {
                    fresh_retry_used = true;
                    drop(guard);
                    POOLS.with(|p| {
                        let mut p = p.borrow_mut();
                        if let Some(list) = p.idle.get_mut(up.index).and_then(|u| u.get_mut(t)) {
                            list.clear(); // its siblings are likely just as dead
                        }
                    });
                    continue;
                }
                up.record_failure(t);
                let msg = match e {
                    HeadError::ClosedEarly => "upstream closed the connection without a response".to_string(),
                    HeadError::Io(e) => format!("upstream i/o error: {e}"),
                    HeadError::Invalid(m) => m.to_string(),
                };
                return Err(UpstreamError::Protocol(msg));
            }
        }
    }
    Err(UpstreamError::Connect(last_err.unwrap_or_else(|| "no target available".to_string())))
}

pub(crate) struct ActiveGuard {
    up: Arc<Upstream>,
    t: usize,
}

impl ActiveGuard {
    pub(crate) fn new(up: Arc<Upstream>, t: usize) -> Self {
        up.targets[t].active.fetch_add(1, Ordering::Relaxed);
        ActiveGuard { up, t }
    }
}

impl Drop for ActiveGuard {
    fn drop(&mut self) {
        self.up.targets[self.t].active.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A response body read straight from the upstream connection. When it has been read to the
/// end, the connection goes back to the worker's pool (if the upstream allows reuse); dropped
/// earlier, the connection is closed. Each read must complete within the upstream's
/// `read_timeout`.
pub struct UpstreamBody {
    conn: Option<Box<UpConn>>,
    state: BodyState,
    reusable: bool,
    read_timeout: Duration,
    sleep: Option<Pin<Box<Sleep>>>,
    guard: ActiveGuard,
    /// In pass-through mode, the header lines to forward (taken by the HTTP/1 writer).
    raw_head: Option<RawHead>,
    /// A chunked body's trailer field lines, until they are sent on as a trailers frame.
    trailers: Vec<u8>,
}

impl UpstreamBody {
    /// In pass-through mode, have the HTTP/1 writer send `id` as `X-Request-Id` with the
    /// upstream's header lines. False (nothing done) when the response has a header map.
    pub fn set_raw_request_id(&mut self, id: crate::request_id::RequestId) -> bool {
        match self.raw_head.as_mut() {
            Some(raw) => {
                raw.request_id = Some(id);
                true
            }
            None => false,
        }
    }

    /// The upstream's header lines, when the response was read in pass-through mode.
    pub fn take_raw_head(&mut self) -> Option<RawHead> {
        self.raw_head.take()
    }

    /// When the whole rest of a length-delimited body (at most `max` bytes) already arrived with
    /// the head, append it to `out` and finish the body (the connection goes back to the pool)
    /// without making a frame of it. Returns the number of bytes appended, `None` when the body
    /// must be streamed.
    pub fn take_buffered(&mut self, out: &mut Vec<u8>, max: usize) -> Option<usize> {
        use bytes::Buf;
        let BodyState::Length(n) = self.state else { return None };
        let conn = self.conn.as_mut()?;
        let n = usize::try_from(n).ok().filter(|n| *n <= max && *n <= conn.rbuf.len())?;
        out.extend_from_slice(&conn.rbuf[..n]);
        conn.rbuf.advance(n);
        self.state = BodyState::Done;
        self.release();
        Some(n)
    }

    fn release(&mut self) {
        if let Some(mut conn) = self.conn.take() {
            if self.reusable && conn.rbuf.is_empty() {
                codec::shrink_idle(&mut conn.rbuf);
                pool_put(&self.guard.up, self.guard.t, conn);
            }
        }
    }

    fn fail(&mut self, msg: String) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        self.conn = None;
        self.state = BodyState::Failed;
        Poll::Ready(Some(Err(BodyError::Upstream(msg))))
    }
}

impl Body for UpstreamBody {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        let this = &mut *self;
        loop {
            if this.state == BodyState::Done {
                this.release();
                return Poll::Ready(None);
            }
            let Some(conn) = this.conn.as_mut() else {
                return Poll::Ready(Some(Err(BodyError::Upstream("upstream connection lost".into()))));
            };
            match codec::decode_keeping_trailers(&mut this.state, &mut conn.rbuf, Some(&mut this.trailers)) {
                Ok(Some(Some(data))) => {
                    this.sleep = None;
                    return Poll::Ready(Some(Ok(Frame::data(data))));
                }
                Ok(Some(None)) => {
                    let trailers = trailer_fields(&std::mem::take(&mut this.trailers));
                    if !trailers.is_empty() {
                        return Poll::Ready(Some(Ok(Frame::trailers(trailers))));
                    }
                    continue;
                }
                Ok(None) => {}
                Err(e) => return this.fail(e.to_string()),
            }
            match codec::poll_read_body(&mut conn.io, &mut conn.rbuf, cx) {
                Poll::Ready(Ok(0)) => {
                    if this.state == BodyState::UntilClose {
                        this.state = BodyState::Done;
                        this.conn = None;
                        return Poll::Ready(None);
                    }
                    return this.fail("upstream closed the connection mid-body".into());
                }
                Poll::Ready(Ok(_)) => {
                    this.sleep = None;
                }
                Poll::Ready(Err(e)) => return this.fail(format!("upstream i/o error: {e}")),
                Poll::Pending => {
                    let timeout = this.read_timeout;
                    let sleep = this.sleep.get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
                    if sleep.as_mut().poll(cx).is_ready() {
                        return this.fail("upstream read timeout".into());
                    }
                    return Poll::Pending;
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.state == BodyState::Done
    }

    fn size_hint(&self) -> SizeHint {
        match self.state {
            BodyState::Done => SizeHint::with_exact(0),
            BodyState::Length(n) => SizeHint::with_exact(n),
            _ => SizeHint::new(),
        }
    }
}

/// The trailer fields of a chunked response that go on to the client: well-formed fields (a
/// malformed line is dropped, as a recipient may drop any trailer field: RFC 9110 §6.5.1), other
/// than the ones a response head's filter would not forward as they are (framing, hop-by-hop,
/// `Date`, `X-Request-Id`), which have no meaning in a trailer section.
fn trailer_fields(lines: &[u8]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for line in lines.split(|b| *b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let Some(colon) = memchr::memchr(b':', line) else { continue };
        let (name, value) = (&line[..colon], line[colon + 1..].trim_ascii());
        if !trailer_may_pass(name) {
            continue;
        }
        if let (Ok(name), Ok(value)) = (HeaderName::from_bytes(name), HeaderValue::from_bytes(value)) {
            map.append(name, value);
        }
    }
    map
}

/// Whether a trailer field passes on to the client: not one a response head's filter would not
/// forward as it is (framing, hop-by-hop, `Date`, `X-Request-Id`).
pub(crate) fn trailer_may_pass(name: &[u8]) -> bool {
    resp_name(name) == RespName::Other
}

impl Drop for UpstreamBody {
    fn drop(&mut self) {
        if self.state == BodyState::Done {
            self.release();
        }
    }
}

/// An HTTP/1.1 health probe of target `t`: a `GET` of `path`, healthy on 2xx or 3xx.
pub(crate) async fn probe(up: &Upstream, t: usize, path: &str) -> bool {
    let Ok(mut conn) = connect(up, t, Instant::now()).await else { return false };
    let authority = up.targets[t].authority.to_str().unwrap_or("localhost");
    let req = format!("GET {path} HTTP/1.1\r\nhost: {authority}\r\nuser-agent: palisade-health-check\r\nconnection: close\r\n\r\n");
    if write_all(&mut conn.io, req.as_bytes(), &Progress::new(tokio::time::Instant::now())).await.is_err() {
        return false;
    }
    match read_response_head(&mut conn, &Method::GET, true).await {
        Ok(ParsedHead { parts, .. }) => parts.status.is_success() || parts.status.is_redirection(),
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trailer_fields_keep_what_a_trailer_section_may_carry() {
        let t = trailer_fields(b"X-Checksum:  abc \r\nnot a field\r\nContent-Length: 9\r\nTransfer-Encoding: gzip\r\nConnection: close\r\nTE: trailers\r\nTrailer: x\r\nDate: x\r\nX-Request-Id: theirs\r\nBad Name: v\r\nX-Bad-Value: a\x01b\r\nx-checksum: def\r\n: empty\r\n");
        let got: Vec<(&str, &str)> = t.iter().map(|(n, v)| (n.as_str(), v.to_str().unwrap())).collect();
        assert_eq!(got, [("x-checksum", "abc"), ("x-checksum", "def")]);
        assert!(trailer_fields(b"").is_empty());
    }

    fn parse(head: &[u8], method: &Method, raw: bool) -> ParsedHead {
        let mut buf = BytesMut::from(head);
        let mut scanned = 0;
        let (end, crlf) = codec::find_head_end_checked(&buf, &mut scanned).expect("complete head");
        // Known CRLF-only or not, the parse is the same.
        let mut again = buf.clone();
        let other = parse_response_head(&mut again, end, !crlf && codec::crlf_only(&buf[..end]), method, raw);
        assert_eq!(other.as_ref().ok().and_then(Option::as_ref).map(|p| (p.parts.status, p.body, p.keep_alive)), {
            let mut b = buf.clone();
            parse_response_head(&mut b, end, false, method, raw).ok().flatten().map(|p| (p.parts.status, p.body, p.keep_alive))
        });
        match parse_response_head(&mut buf, end, crlf, method, raw) {
            Ok(Some(p)) => p,
            _ => panic!("head did not parse"),
        }
    }

    /// The header lines of a pass-through head as (lowercase name, value) pairs.
    fn lines(p: &ParsedHead) -> Vec<(String, String)> {
        let raw = p.raw.as_ref().expect("pass-through head");
        std::str::from_utf8(&raw.lines)
            .unwrap()
            .split_terminator("\r\n")
            .map(|l| {
                let (n, v) = l.split_once(": ").unwrap();
                (n.to_ascii_lowercase(), v.to_string())
            })
            .collect()
    }

    const HEAD: &[u8] = b"HTTP/1.1 200 OK\r\nServer: up\r\nConnection: keep-alive, X-Secret\r\nX-Secret: 1\r\nKeep-Alive: timeout=5\r\nTE: x\r\nTrailer: y\r\nUpgrade: h2c\r\nProxy-Authenticate: Basic\r\nProxy-Connection: x\r\nX-Request-Id: theirs\r\nContent-Length: 2\r\nDATE: Sun, 22 Nov 2026 10:00:00 GMT\r\n\r\nok";

    /// Lines are copied in runs where the head holds them as `name: value\r\n`, and rewritten
    /// that way where it does not: the same bytes either way.
    #[test]
    fn pass_through_lines_are_canonical_whether_copied_in_runs_or_not() {
        let head = b"HTTP/1.1 200 OK\r\nServer: up\r\nX-A: a\r\nConnection: keep-alive\r\nX-B:  b  \r\nX-C:\tc\r\nX-D: d\r\nX-E:\r\nX-F: \r\nContent-Length: 2\r\nX-G: g\r\n\r\nok";
        let p = parse(head, &Method::GET, true);
        let raw = p.raw.as_ref().unwrap();
        assert_eq!(std::str::from_utf8(&raw.lines).unwrap(), "Server: up\r\nX-A: a\r\nX-B: b\r\nX-C: c\r\nX-D: d\r\nX-E: \r\nX-F: \r\nX-G: g\r\n");
    }

    #[test]
    fn pass_through_head_keeps_end_to_end_headers_only() {
        let p = parse(HEAD, &Method::GET, true);
        assert!(p.parts.headers.is_empty());
        assert_eq!(p.body, BodyState::Length(2));
        assert!(p.keep_alive);
        let got = lines(&p);
        let names: Vec<&str> = got.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["server", "date"], "{got:?}");
        assert!(p.raw.as_ref().unwrap().has_date);
        // The map path removes the same hop-by-hop headers (the proxy then strips them).
        let mut m = parse(HEAD, &Method::GET, false).parts.headers;
        crate::headers::strip_hop_by_hop(&mut m);
        for (n, _) in &got {
            assert!(m.contains_key(n.as_str()), "{n}");
        }
        assert!(!m.contains_key("x-secret") && !m.contains_key("keep-alive") && !m.contains_key("upgrade"));
    }

    #[test]
    fn pass_through_head_keeps_content_length_only_where_the_client_side_cannot_recompute_it() {
        let head = b"HTTP/1.1 200 OK\r\nContent-Length: 42\r\n\r\n";
        let p = parse(head, &Method::HEAD, true);
        assert_eq!(lines(&p), [("content-length".to_string(), "42".to_string())]);
        assert_eq!(p.body, BodyState::Done);
        assert!(!p.raw.as_ref().unwrap().has_date);
        let p = parse(head, &Method::GET, true);
        assert!(lines(&p).is_empty());
        let p = parse(b"HTTP/1.1 304 Not Modified\r\nContent-Length: 42\r\n\r\n", &Method::GET, true);
        assert_eq!(lines(&p).len(), 1);
    }

    #[test]
    fn connection_close_and_named_headers_in_one_pass() {
        let p = parse(b"HTTP/1.1 200 OK\r\nX-A: 1\r\nConnection: Close\r\nContent-Length: 00000000000000000002\r\nDate: x\r\n\r\nok", &Method::GET, true);
        assert!(!p.keep_alive);
        assert_eq!(p.body, BodyState::Length(2));
        assert_eq!(lines(&p), [("x-a".to_string(), "1".to_string()), ("date".to_string(), "x".to_string())]);
        assert!(p.raw.as_ref().unwrap().has_date);
        let p = parse(b"HTTP/1.0 200 OK\r\nX-A: 1\r\nconnection: x-a, keep-alive\r\nContent-Length: 2\r\n\r\nok", &Method::GET, true);
        assert!(p.keep_alive);
        assert!(lines(&p).is_empty());
        let mut buf = BytesMut::from(&b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n"[..]);
        let end = buf.len();
        assert!(matches!(parse_response_head(&mut buf, end, false, &Method::GET, true), Err(HeadError::Invalid("invalid Content-Length"))));
    }

    #[test]
    fn framing_comes_from_the_last_transfer_coding_and_consistent_lengths() {
        let p = parse(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n", &Method::GET, true);
        assert_eq!(p.body, BodyState::Chunked(Chunk::Size));
        let p = parse(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", &Method::GET, false);
        assert_eq!(p.body, BodyState::UntilClose);
        assert!(!p.keep_alive);
        let p = parse(b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 3, 3\r\n\r\n", &Method::GET, true);
        assert_eq!(p.body, BodyState::Length(3));
        assert!(p.keep_alive);
        let mut buf = BytesMut::from(&b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n"[..]);
        let end = buf.len();
        assert!(matches!(parse_response_head(&mut buf, end, false, &Method::GET, true), Err(HeadError::Invalid("conflicting Content-Length"))));
    }
}
