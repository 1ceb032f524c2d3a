//! HTTP/1.1 server side, written for a firewall: strict request framing and full control over
//! every error response.
//!
//! hyper's server is not used for HTTP/1 because it accepts `Content-Length` together with
//! `Transfer-Encoding` (dropping the length), answers parse errors with empty bodies and closes
//! on header timeouts without a 408. Here:
//! - the head is parsed with `httparse` once `CRLFCRLF` has arrived (no quadratic re-parsing on
//!   slow clients), bounded by `max_header_size` (431) and `header_read_timeout` (408);
//! - bare LF line endings, obsolete line folding, `Transfer-Encoding` with `Content-Length`,
//!   differing `Content-Length`s, transfer codings other than `chunked`, and `Transfer-Encoding`
//!   in HTTP/1.0 are rejected with 400 (501 for unknown codings) and the connection is closed;
//! - chunked bodies are decoded strictly (CRLF only, bounded size lines and trailers);
//! - `Expect: 100-continue` is answered only when the body is first read, so a request rejected
//!   on its head never makes the client send its body;
//! - idle keep-alive connections close silently after `keepalive_timeout`.
//!
//! The connection state is shared between this loop and the request body handed to the proxy
//! through an `Rc<RefCell<_>>`: each worker runs on a single-threaded runtime, and no borrow is
//! held across an `.await`.

use std::cell::RefCell;
use std::future::{poll_fn, Future};
use std::io::{self, Write as _};
use std::net::SocketAddr;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use bytes::BytesMut;
use http::{header, HeaderValue, Method, Request, Response, StatusCode, Uri, Version};
use http_body::{Body, SizeHint};
use tokio::io::AsyncWrite;
use tokio::sync::watch;
use tokio::time::{Instant, Sleep};

use crate::body::ClientBody;
use crate::code;
use crate::codec::{self, BodyState, Chunk};
pub use crate::h1_body::RequestBody;
use crate::h1_body::Shared;
use crate::io::Stream;
use crate::problem;
use crate::raw_head::{spare_fields, visible_ascii, RawField};
pub use crate::raw_head::{spare_map, RawRequestHead};
use crate::resp_body::RespBody;

/// Limits of one listener's HTTP/1 connections.
#[derive(Clone, Debug)]
pub struct Limits {
    pub max_header_size: usize,
    pub max_headers: usize,
    pub header_timeout: Duration,
    pub body_timeout: Duration,
    pub keepalive_timeout: Duration,
}

/// What the proxy knows about the connection a request came on.
#[derive(Clone, Debug)]
pub struct ConnInfo {
    pub peer: SocketAddr,
    pub local: SocketAddr,
    pub tls: bool,
    /// The peer's IP as a header value, built once per connection (forwarding headers).
    pub peer_ip_header: HeaderValue,
    /// The forwarding lines of a request from this peer as an untrusted one, and where the
    /// part after `X-Forwarded-Host` starts (`headers::untrusted_lines`).
    pub untrusted_lines: (std::sync::Arc<[u8]>, usize),
}

impl ConnInfo {
    pub fn new(peer: SocketAddr, local: SocketAddr, tls: bool) -> Self {
        let ip = match peer.ip() {
            std::net::IpAddr::V6(v6) => v6.to_ipv4_mapped().map(std::net::IpAddr::V4).unwrap_or(peer.ip()),
            v4 => v4,
        };
        let peer_ip_header = HeaderValue::from_str(&ip.to_string()).unwrap_or(HeaderValue::from_static("unknown"));
        let (lines, split) = crate::headers::untrusted_lines(peer_ip_header.as_bytes(), tls);
        ConnInfo { peer, local, tls, peer_ip_header, untrusted_lines: (lines.into(), split) }
    }
}

/// The request handler a connection drives.
/// Workers run single-threaded runtimes, so the futures need not be `Send`.
#[allow(async_fn_in_trait)]
pub trait Handler {
    async fn call(&self, req: Request<ClientBody>, conn: &ConnInfo) -> Response<RespBody>;

    /// An HTTP/1 request: its header map is empty, `raw` holds its header fields. By default the
    /// map is built and the request goes to [`Handler::call`].
    async fn call_h1(&self, mut req: Request<ClientBody>, raw: RawRequestHead, conn: &ConnInfo) -> Response<RespBody> {
        *req.headers_mut() = raw.to_map();
        drop(raw);
        self.call(req, conn).await
    }
}

/// How a connection ended.
pub enum Served {
    /// Closed (by either side, after an error, or on shutdown).
    Closed,
    /// The client opened with the HTTP/2 preface: hand the stream (with the bytes read so far
    /// replayed) to the HTTP/2 server.
    H2(Stream),
}

const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// A parsed request head, or why there is none.
enum Head {
    /// The request (its header map empty) and its header fields.
    Request(Box<(Request<ClientBody>, RawRequestHead)>, Framing),
    /// The connection is idle and closed, timed out while idle, or shutdown was requested.
    Idle,
    H2,
    Reject(StatusCode, &'static str, &'static str),
}

struct Framing {
    keep_alive: bool,
    version: Version,
    is_head: bool,
    te_trailers: bool,
}

/// The idle keep-alive connections of one thread (worker), woken when shutdown starts
/// ([`close_idle`]). Waiting idle costs a waker comparison, where a `watch` channel's
/// `changed()` took its lock twice per request (register, then deregister), shared by all
/// workers.
#[derive(Default)]
struct IdleSet {
    closing: bool,
    wakers: Vec<Option<std::task::Waker>>,
    free: Vec<usize>,
}

thread_local! {
    static IDLE: RefCell<IdleSet> = RefCell::new(IdleSet::default());
}

/// A connection's place in its thread's [`IdleSet`].
struct IdleSlot(usize);

impl IdleSlot {
    fn new() -> IdleSlot {
        IDLE.with(|i| {
            let mut i = i.borrow_mut();
            match i.free.pop() {
                Some(n) => IdleSlot(n),
                None => {
                    i.wakers.push(None);
                    IdleSlot(i.wakers.len() - 1)
                }
            }
        })
    }

    /// Ready once shutdown has started on this thread; otherwise the task is woken then.
    fn poll_closing(&self, cx: &mut Context<'_>) -> Poll<()> {
        IDLE.with(|i| {
            let mut i = i.borrow_mut();
            if i.closing {
                return Poll::Ready(());
            }
            match &mut i.wakers[self.0] {
                Some(w) if w.will_wake(cx.waker()) => {}
                slot => *slot = Some(cx.waker().clone()),
            }
            Poll::Pending
        })
    }
}

impl Drop for IdleSlot {
    fn drop(&mut self) {
        let _ = IDLE.try_with(|i| {
            let mut i = i.borrow_mut();
            i.wakers[self.0] = None;
            i.free.push(self.0);
        });
    }
}

/// Shutdown: close this thread's idle keep-alive connections now (each is woken and closes),
/// and any connection that goes idle from now on.
pub fn close_idle() {
    let wakers: Vec<std::task::Waker> = IDLE.with(|i| {
        let mut i = i.borrow_mut();
        i.closing = true;
        i.wakers.iter_mut().filter_map(Option::take).collect()
    });
    for w in wakers {
        w.wake();
    }
}

/// Serve one HTTP/1 connection until it closes.
pub async fn serve<H: Handler>(io: Stream, info: ConnInfo, handler: &H, limits: &Limits, mut shutdown: watch::Receiver<bool>, h2c: bool) -> Served {
    let shared = Rc::new(RefCell::new(Shared {
        io,
        rbuf: BytesMut::with_capacity(4096),
        seq: 0,
        body: BodyState::Done,
        continue_at: None,
        body_timeout: limits.body_timeout,
        deadline: Box::pin(tokio::time::sleep(limits.body_timeout)),
        deadline_armed: false,
        body_buf: None,
    }));
    if *shutdown.borrow() {
        // Already closing: let `closing` see it (it looks at changes only).
        shutdown.mark_changed();
    }
    let mut wbuf: Vec<u8> = Vec::with_capacity(1024);
    let mut idle_timer = Box::pin(tokio::time::sleep(limits.header_timeout));
    let mut first = true;
    let idle = IdleSlot::new();
    loop {
        let head = read_head(&shared, limits, &shutdown, &idle, &mut idle_timer, first && h2c, first).await;
        first = false;
        let ((req, raw), framing) = match head {
            Head::Request(req, framing) => (*req, framing),
            Head::Idle => return Served::Closed,
            Head::H2 => {
                let Ok(cell) = Rc::try_unwrap(shared) else { return Served::Closed };
                let s = cell.into_inner();
                let prefix = s.rbuf.freeze();
                return Served::H2(Stream::Rewind(Box::new(crate::io::Rewind { prefix, inner: s.io })));
            }
            Head::Reject(status, code, title) => {
                let id = crate::request_id::next();
                tracing::debug!(peer = %info.peer, %status, code, "rejected malformed request");
                let resp = problem::response(status, code, title, id.as_str(), &[]);
                let _ = write_response(&shared, &mut wbuf, resp, false, false, Version::HTTP_11, limits, false).await;
                return Served::Closed;
            }
        };
        let resp = handler.call_h1(req, raw, &info).await;
        if matches!(resp.body(), RespBody::Upgrade(_)) {
            // A WebSocket handshake the upstream accepted: the connection is relayed from here.
            drop(idle);
            let Ok(cell) = Rc::try_unwrap(shared) else { return Served::Closed };
            let s = cell.into_inner();
            crate::websocket::serve_h1(s.io, s.rbuf, resp).await;
            return Served::Closed;
        }
        let body_done = shared.borrow().body == BodyState::Done;
        let keep_alive = framing.keep_alive && body_done && !closing(&shutdown);
        match write_response(&shared, &mut wbuf, resp, framing.is_head, keep_alive, framing.version, limits, framing.te_trailers).await {
            // The response is out: busy-poll for the client's next request (`server.busy_poll`).
            Ok(true) => crate::spin::kick(),
            Ok(false) | Err(_) => {
                let _ = poll_fn(|cx| Pin::new(&mut shared.borrow_mut().io).poll_shutdown(cx)).await;
                return Served::Closed;
            }
        }
    }
}

/// Whether shutdown has been requested. The lock-free version check comes first: the value is
/// read (behind the channel's lock) only after a change.
fn closing(shutdown: &watch::Receiver<bool>) -> bool {
    !matches!(shutdown.has_changed(), Ok(false)) && *shutdown.borrow()
}

async fn read_head(
    shared: &Rc<RefCell<Shared>>,
    limits: &Limits,
    shutdown: &watch::Receiver<bool>,
    idle_slot: &IdleSlot,
    idle_timer: &mut Pin<Box<Sleep>>,
    sniff_h2: bool,
    first: bool,
) -> Head {
    // Wait for the first byte of the next request (idle keep-alive time).
    if shared.borrow().rbuf.is_empty() {
        // A body read frame by frame may have grown the buffer: idle, it is head-sized again.
        codec::shrink_idle(&mut shared.borrow_mut().rbuf);
        if closing(shutdown) {
            return Head::Idle;
        }
        let idle = if first { limits.header_timeout } else { limits.keepalive_timeout };
        // One timer per connection, moved only when it would fire too early by more than
        // `slack`: re-registering a timer on every request costs more than the request's parsing.
        let want = Instant::now() + idle;
        let slack = (idle / 8).min(Duration::from_secs(1));
        if idle_timer.deadline() + slack < want || idle_timer.deadline() > want {
            idle_timer.as_mut().reset(want);
        }
        let read = poll_fn(|cx| shared.borrow_mut().poll_read_more(cx));
        tokio::select! {
            biased;
            r = read => match r {
                Ok(n) if n > 0 => {}
                _ => return Head::Idle,
            },
            _ = idle_timer.as_mut() => return Head::Idle,
            _ = poll_fn(|cx| idle_slot.poll_closing(cx)) => return Head::Idle,
        }
    }
    // The head timer starts once a first part of the head is there and more must be waited for.
    let mut deadline: Option<Instant> = None;
    let mut scanned = 0usize;
    loop {
        {
            let mut s = shared.borrow_mut();
            // RFC 9112 §2.2: ignore empty lines before the request line.
            while s.rbuf.starts_with(b"\r\n") {
                let _ = s.rbuf.split_to(2);
                scanned = 0;
            }
            if sniff_h2 && s.rbuf.len() >= H2_PREFACE.len().min(s.rbuf.len()) && !s.rbuf.is_empty() {
                let n = s.rbuf.len().min(H2_PREFACE.len());
                if s.rbuf[..n] == H2_PREFACE[..n] {
                    if n == H2_PREFACE.len() {
                        return Head::H2;
                    }
                    // Could still become the preface: read more.
                } else if let Some((end, crlf)) = codec::find_head_end_checked(&s.rbuf, &mut scanned) {
                    return parse_head(&mut s, end, crlf, limits.max_headers, limits.max_header_size, shared);
                }
            } else if let Some((end, crlf)) = codec::find_head_end_checked(&s.rbuf, &mut scanned) {
                return parse_head(&mut s, end, crlf, limits.max_headers, limits.max_header_size, shared);
            }
            if s.rbuf.len() > limits.max_header_size {
                return Head::Reject(StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE, code::HEADERS_TOO_LARGE, "Request header fields too large");
            }
        }
        let deadline = *deadline.get_or_insert_with(|| Instant::now() + limits.header_timeout);
        let read = poll_fn(|cx| shared.borrow_mut().poll_read_more(cx));
        match tokio::time::timeout_at(deadline, read).await {
            Ok(Ok(0)) | Ok(Err(_)) => return Head::Idle,
            Ok(Ok(_)) => {}
            Err(_) => return Head::Reject(StatusCode::REQUEST_TIMEOUT, code::HEADER_TIMEOUT, "Request header timeout"),
        }
    }
}

fn parse_head(s: &mut Shared, end: usize, crlf_known: bool, max_headers: usize, max_header_size: usize, shared: &Rc<RefCell<Shared>>) -> Head {
    let p = match parse_request_head_known(&mut s.rbuf, end, crlf_known, max_headers, max_header_size) {
        Ok(p) => p,
        Err(r) => return Head::Reject(r.status, r.code, r.title),
    };
    let hint = match p.body {
        BodyState::Length(n) => SizeHint::with_exact(n),
        _ => SizeHint::new(),
    };
    let is_head = p.method == Method::HEAD;
    s.seq += 1;
    s.body_buf = None;
    s.body = if p.body == BodyState::Length(0) { BodyState::Done } else { p.body };
    s.continue_at = p.expect_continue.then_some(0);
    s.deadline_armed = false;
    let client_body =
        if s.body == BodyState::Done { ClientBody::Empty } else { ClientBody::H1(RequestBody { shared: shared.clone(), seq: s.seq, hint, allowed: u64::MAX }) };
    let mut req = Request::new(client_body);
    *req.method_mut() = p.method;
    *req.uri_mut() = p.uri;
    *req.version_mut() = p.version;
    Head::Request(Box::new((req, p.raw)), Framing { keep_alive: p.keep_alive, version: p.version, is_head, te_trailers: p.te_trailers })
}

/// Why a request head is refused: the response's status, problem code and title. The
/// connection closes after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rejection {
    pub status: StatusCode,
    pub code: &'static str,
    pub title: &'static str,
}

const fn reject<T>(status: StatusCode, code: &'static str, title: &'static str) -> Result<T, Rejection> {
    Err(Rejection { status, code, title })
}

/// A request head accepted by [`parse_request_head`].
pub struct ParsedHead {
    pub method: Method,
    pub uri: Uri,
    pub version: Version,
    /// The header fields, as offsets into the head.
    pub raw: RawRequestHead,
    /// The body's framing: `Length(n)` (`Length(0)` when there is no body) or `Chunked`.
    pub body: BodyState,
    /// `Expect: 100-continue` on an HTTP/1.1 request with a body.
    pub expect_continue: bool,
    /// Whether the connection may stay open after this request (version and `Connection`).
    pub keep_alive: bool,
    /// `TE: trailers`: the client takes trailer fields in a chunked response (RFC 9110 §10.1.4).
    pub te_trailers: bool,
}

/// Parse the request head that ends at `end` in `rbuf` (as found by `codec::find_head_end`)
/// and check its framing (RFC 9112 §6: everything ambiguous is refused). On success the head
/// has left `rbuf`, which keeps exactly the bytes after it, and the fields and the target share
/// the head's bytes (no copy). A rejected head closes the connection, so what is left in `rbuf`
/// then does not matter.
///
/// Called by the connection loop; public for the fuzz target `fuzz/fuzz_targets/h1_head.rs`.
pub fn parse_request_head(rbuf: &mut BytesMut, end: usize, max_headers: usize, max_header_size: usize) -> Result<ParsedHead, Rejection> {
    parse_request_head_known(rbuf, end, false, max_headers, max_header_size)
}

/// [`parse_request_head`], told whether the head is already known to use CRLF only
/// (`codec::find_head_end_checked`), which then is not checked again.
#[inline]
fn parse_request_head_known(rbuf: &mut BytesMut, end: usize, crlf_known: bool, max_headers: usize, max_header_size: usize) -> Result<ParsedHead, Rejection> {
    let bad = |msg| reject(StatusCode::BAD_REQUEST, code::BAD_REQUEST, msg);
    if end > max_header_size {
        return reject(StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE, code::HEADERS_TOO_LARGE, "Request header fields too large");
    }
    // Bare LF line endings are a request smuggling vector: require CRLF everywhere.
    if !crlf_known && !codec::crlf_only(&rbuf[..end]) {
        return bad("Malformed request: bare LF line ending");
    }
    // The head leaves the read buffer before it is parsed (a rejected head closes the
    // connection), so that header values can be shared zero-copy straight from the parse.
    let head = rbuf.split_to(end).freeze();
    let head_bytes = &head[..];
    // Up to 128 header slots live on the stack (left uninitialised: httparse writes before it
    // reads, and zeroing 4 KiB per request showed in profiles); larger limits use the heap.
    let mut stack = [const { std::mem::MaybeUninit::<httparse::Header<'_>>::uninit() }; 128];
    let mut heap = Vec::new();
    let slots: &mut [std::mem::MaybeUninit<httparse::Header<'_>>] = if max_headers <= stack.len() {
        &mut stack[..max_headers]
    } else {
        heap.resize_with(max_headers, std::mem::MaybeUninit::uninit);
        &mut heap
    };
    let mut req = httparse::Request::new(&mut []);
    let status = match req.parse_with_uninit_headers(head_bytes, slots) {
        Ok(httparse::Status::Complete(n)) if n == end => n,
        Ok(_) => return bad("Malformed request head"),
        Err(httparse::Error::Version) if other_http_version(head_bytes) => {
            return reject(StatusCode::HTTP_VERSION_NOT_SUPPORTED, code::BAD_REQUEST, "HTTP version not supported")
        }
        Err(httparse::Error::TooManyHeaders) => {
            return reject(StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE, code::HEADERS_TOO_LARGE, "Too many request header fields")
        }
        Err(_) => return bad("Malformed request head"),
    };
    let _ = status;
    let version = match req.version {
        Some(1) => Version::HTTP_11,
        Some(0) => Version::HTTP_10,
        _ => return reject(StatusCode::HTTP_VERSION_NOT_SUPPORTED, code::BAD_REQUEST, "HTTP version not supported"),
    };
    let Some(method) = req.method.and_then(|m| Method::from_bytes(m.as_bytes()).ok()) else {
        return bad("Invalid method");
    };
    let path = req.path.unwrap_or("");
    // The `http` crate cannot represent targets of 64 KiB or more.
    if path.len() >= u16::MAX as usize - 1 {
        return reject(StatusCode::URI_TOO_LONG, code::URI_TOO_LONG, "Request target too long");
    }
    let Ok(uri) = Uri::from_maybe_shared(head.slice_ref(path.as_bytes())) else {
        return bad("Invalid request target");
    };
    if method == Method::CONNECT {
        return reject(StatusCode::NOT_IMPLEMENTED, code::UNSUPPORTED, "CONNECT is not supported");
    }
    if uri.scheme().is_none() && uri.path() != "*" && !uri.path().starts_with('/') {
        return bad("Invalid request target");
    }
    // An absolute-form target's authority is held to the Host grammar (no userinfo: RFC 9110
    // §4.2.4), since it routes the request and goes upstream as the Host.
    if uri.authority().is_some_and(|a| !codec::valid_host(a.as_str().as_bytes())) {
        return bad("Invalid request target");
    }
    // The header map is not built here: the fields are noted as offsets into the head
    // (`RawRequestHead`), and the map is made only when something needs it (a plain proxied
    // request goes upstream as these lines). Which framing-relevant headers are present is noted
    // while the names are at hand (told apart by length first).
    let base = head_bytes.as_ptr() as usize;
    let mut fields = spare_fields(req.headers.len());
    let (mut n_te, mut n_cl, mut n_host, mut n_expect, mut n_conn) = (0usize, 0usize, 0usize, 0usize, 0usize);
    let (mut host_at, mut cl_at, mut expect_at, mut conn_at) = (usize::MAX, usize::MAX, usize::MAX, usize::MAX);
    let mut te_trailers = false;
    for h in req.headers.iter() {
        let name = h.name.as_bytes();
        // httparse accepts exactly the name bytes (tchar) and value bytes that `HeaderName` and
        // `HeaderValue` accept; only the name length limit is left to check.
        if name.is_empty() || name.len() > MAX_HEADER_NAME_LEN {
            return bad("Invalid header name");
        }
        match req_name(name) {
            ReqName::TransferEncoding => n_te += 1,
            ReqName::ContentLength => {
                n_cl += 1;
                cl_at = cl_at.min(fields.len());
            }
            ReqName::Host => {
                n_host += 1;
                host_at = host_at.min(fields.len());
            }
            ReqName::Expect => {
                n_expect += 1;
                expect_at = expect_at.min(fields.len());
            }
            ReqName::Connection => {
                n_conn += 1;
                conn_at = conn_at.min(fields.len());
            }
            ReqName::Te => te_trailers |= h.value.split(|b| *b == b',').any(|t| codec::eq_lower(t.trim_ascii(), b"trailers")),
            ReqName::Other => {}
        }
        fields.push(RawField {
            name: (name.as_ptr() as usize - base) as u32,
            name_len: name.len() as u32,
            value: (h.value.as_ptr() as usize - base) as u32,
            value_len: h.value.len() as u32,
        });
    }
    let mut raw = RawRequestHead { head, fields, plain: false, host: None, content_length: None, normalized_length: None };
    let values = |kind: ReqName| raw.fields().filter(move |(n, _)| req_name(n) == kind).map(|(_, v)| v);

    let (body, normalized_length) = body_framing(&raw, n_te, n_cl, version)?;
    let hosts = n_host;
    if hosts > 1 || (version == Version::HTTP_11 && hosts == 0 && uri.authority().is_none()) {
        return bad("Exactly one Host header is required");
    }
    if n_host == 1 && !codec::valid_host(raw.field(host_at).1) {
        return bad("Invalid Host header");
    }
    let mut expect_continue = false;
    if n_expect > 0 {
        let expect = raw.field(expect_at).1;
        if expect.eq_ignore_ascii_case(b"100-continue") {
            expect_continue = version == Version::HTTP_11 && body != BodyState::Length(0);
        } else {
            return reject(StatusCode::EXPECTATION_FAILED, code::BAD_REQUEST, "Unsupported expectation");
        }
    }
    let (keep_alive, names_other) = match n_conn {
        0 => (version == Version::HTTP_11, false),
        1 => match raw.field(conn_at).1 {
            // The usual values, without the token walk.
            v if v.eq_ignore_ascii_case(b"keep-alive") => (true, false),
            v if v.eq_ignore_ascii_case(b"close") => (false, false),
            v => connection_tokens(std::iter::once(v), version),
        },
        _ => connection_tokens(values(ReqName::Connection), version),
    };
    // Plain: one Host, at most one Content-Length, and `Connection` names no header beyond the
    // hop-by-hop ones (see `RawRequestHead::plain`).
    raw.normalized_length = normalized_length;
    raw.plain = n_host == 1 && n_cl <= 1 && !names_other;
    raw.host = (n_host > 0).then_some(host_at as u32);
    raw.content_length = (n_cl > 0).then_some(cl_at as u32);
    Ok(ParsedHead { method, uri, version, raw, body, expect_continue, keep_alive, te_trailers })
}

/// Framing (RFC 9112 §6) from the head's `n_te` Transfer-Encoding and `n_cl` Content-Length
/// fields, refusing everything ambiguous. Returns the body's framing and, when several equal
/// lengths were sent, the one length the map gets.
fn body_framing(raw: &RawRequestHead, n_te: usize, n_cl: usize, version: Version) -> Result<(BodyState, Option<u64>), Rejection> {
    let bad = |msg| reject(StatusCode::BAD_REQUEST, code::BAD_REQUEST, msg);
    let values = |kind: ReqName| raw.fields().filter(move |(n, _)| req_name(n) == kind).map(|(_, v)| v);
    let te_present = n_te > 0;
    let cl_present = n_cl > 0;
    if te_present && cl_present {
        return reject(StatusCode::BAD_REQUEST, code::SMUGGLING, "Both Content-Length and Transfer-Encoding");
    }
    let mut body = BodyState::Length(0);
    let mut normalized_length = None;
    if te_present {
        if version == Version::HTTP_10 {
            return reject(StatusCode::BAD_REQUEST, code::SMUGGLING, "Transfer-Encoding in HTTP/1.0");
        }
        let mut codings = Vec::new();
        for v in values(ReqName::TransferEncoding) {
            let Ok(v) = visible_ascii(v) else { return bad("Invalid Transfer-Encoding") };
            codings.extend(v.split(',').map(|c| c.trim().to_ascii_lowercase()).filter(|c| !c.is_empty()));
        }
        if codings.last().map(String::as_str) != Some("chunked") {
            return reject(StatusCode::BAD_REQUEST, code::SMUGGLING, "Transfer-Encoding must end with chunked");
        }
        if codings.len() != 1 {
            return reject(StatusCode::NOT_IMPLEMENTED, code::UNSUPPORTED, "Unsupported transfer coding");
        }
        body = BodyState::Chunked(Chunk::Size);
    } else if cl_present {
        let mut len: Option<u64> = None;
        for v in values(ReqName::ContentLength) {
            for part in v.split(|b| *b == b',') {
                let part = part.trim_ascii();
                if part.is_empty() || part.len() > 19 || !part.iter().all(u8::is_ascii_digit) {
                    return reject(StatusCode::BAD_REQUEST, code::SMUGGLING, "Invalid Content-Length");
                }
                let n: u64 = std::str::from_utf8(part).ok().and_then(|p| p.parse().ok()).unwrap_or(u64::MAX);
                if len.is_some_and(|l| l != n) {
                    return reject(StatusCode::BAD_REQUEST, code::SMUGGLING, "Conflicting Content-Length values");
                }
                len = Some(n);
            }
        }
        let n = len.unwrap_or(0);
        body = BodyState::Length(n);
        if n_cl > 1 {
            // Several equal lengths: the map gets one.
            normalized_length = Some(n);
        }
    }
    Ok((body, normalized_length))
}

/// `HeaderName`'s length limit.
const MAX_HEADER_NAME_LEN: usize = (1 << 16) - 1;

/// The request header names the HTTP/1 server looks at, told apart by length first.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ReqName {
    TransferEncoding,
    ContentLength,
    Host,
    Expect,
    Connection,
    Te,
    Other,
}

fn req_name(name: &[u8]) -> ReqName {
    match name.len() {
        2 if codec::eq_lower(name, b"te") => ReqName::Te,
        4 if codec::eq_lower(name, b"host") => ReqName::Host,
        6 if codec::eq_lower(name, b"expect") => ReqName::Expect,
        10 if codec::eq_lower(name, b"connection") => ReqName::Connection,
        14 if codec::eq_lower(name, b"content-length") => ReqName::ContentLength,
        17 if codec::eq_lower(name, b"transfer-encoding") => ReqName::TransferEncoding,
        _ => ReqName::Other,
    }
}

/// Whether the request line is `METHOD SP TARGET SP HTTP/d.d` (a version we do not speak, as
/// opposed to a malformed line, which gets 400).
fn other_http_version(head: &[u8]) -> bool {
    let line = head.split(|b| *b == b'\r').next().unwrap_or(b"");
    let parts: Vec<&[u8]> = line.split(|b| *b == b' ').collect();
    matches!(parts.as_slice(), [m, t, v] if !m.is_empty() && !t.is_empty()
        && v.len() == 8 && v.starts_with(b"HTTP/") && v[5].is_ascii_digit() && v[6] == b'.' && v[7].is_ascii_digit())
}

#[cfg(test)]
fn connection_keep_alive(headers: &http::HeaderMap, version: Version) -> bool {
    connection_tokens(headers.get_all(header::CONNECTION).iter().map(HeaderValue::as_bytes), version).0
}

/// Whether the connection stays open after this request, from the `Connection` values; and
/// whether they name a header other than the hop-by-hop ones (`close` and `keep-alive`
/// included), which the proxy then removes by name.
fn connection_tokens<'a>(values: impl Iterator<Item = &'a [u8]>, version: Version) -> (bool, bool) {
    let mut close = false;
    let mut keep = false;
    let mut names_other = false;
    for v in values {
        for token in v.split(|b| *b == b',') {
            let t = token.trim_ascii();
            if t.eq_ignore_ascii_case(b"close") {
                close = true;
            } else if t.eq_ignore_ascii_case(b"keep-alive") {
                keep = true;
            } else if !t.is_empty() && !crate::headers::removed_anyway(t) {
                names_other = true;
            }
        }
    }
    (!close && (version == Version::HTTP_11 || keep), names_other)
}

/// Write a response. Returns whether the connection may be reused. The body's trailer fields
/// end a chunked body when the client asked for them (`te_trailers`); they are dropped
/// otherwise, as RFC 9110 §6.5.1 lets a recipient that removes the chunked coding do.
#[allow(clippy::too_many_arguments)]
async fn write_response(
    shared: &Rc<RefCell<Shared>>,
    wbuf: &mut Vec<u8>,
    resp: Response<RespBody>,
    is_head: bool,
    keep_alive: bool,
    version: Version,
    limits: &Limits,
    te_trailers: bool,
) -> io::Result<bool> {
    let (parts, mut body) = resp.into_parts();
    let status = parts.status;
    let no_body = is_head || status.is_informational() || status == StatusCode::NO_CONTENT || status == StatusCode::NOT_MODIFIED;
    let exact = body.size_hint().exact();
    let mut keep_alive = keep_alive;
    // HTTP/1.0 clients do not understand chunked: a body of unknown length ends at close.
    let chunked = !no_body && exact.is_none() && version == Version::HTTP_11;
    if !no_body && exact.is_none() && version == Version::HTTP_10 {
        keep_alive = false;
    }
    let raw_id = write_head(wbuf, &parts, &mut body, ResponseFraming { is_head, no_body, exact, chunked, keep_alive, version });

    let send_timeout = limits.body_timeout;
    if no_body {
        drop(body);
        timed(send_timeout, write_all(shared, wbuf)).await?;
        return Ok(keep_alive);
    }
    // Small fixed bodies go out in the same write as the head.
    if let RespBody::Full(data) = &mut body {
        if let Some(d) = data.take() {
            if d.len() <= 64 * 1024 {
                wbuf.extend_from_slice(&d);
                timed(send_timeout, write_all(shared, wbuf)).await?;
            } else {
                timed(send_timeout, write_slices(shared, [wbuf, &d, b""])).await?;
            }
        } else {
            timed(send_timeout, write_all(shared, wbuf)).await?;
        }
        return Ok(keep_alive);
    }
    // A small upstream body that arrived with its head goes out in the same write, copied
    // straight from the upstream connection's buffer.
    if let (RespBody::Upstream(up), Some(n)) = (&mut body, exact) {
        if !chunked && n <= 16 * 1024 && up.take_buffered(wbuf, 16 * 1024).is_some() {
            timed(send_timeout, write_all(shared, wbuf)).await?;
            return Ok(keep_alive);
        }
    }
    // Streamed: the head goes out with the first frame (or with the terminator).
    let mut head_sent = false;
    let mut sent: u64 = 0;
    let mut trailers = None;
    loop {
        let frame = poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await;
        match frame {
            Some(Ok(frame)) => {
                let data = match frame.into_data() {
                    Ok(data) => data,
                    Err(frame) => {
                        if chunked && te_trailers {
                            trailers = frame.into_trailers().ok();
                        }
                        continue;
                    }
                };
                if data.is_empty() {
                    continue;
                }
                sent += data.len() as u64;
                if head_sent {
                    wbuf.clear();
                }
                head_sent = true;
                if chunked {
                    let _ = write!(wbuf, "{:x}\r\n", data.len());
                }
                // The head (first frame) or chunk size line, the data as it came from upstream
                // (not copied), and the chunk's CRLF: one vectored write.
                let end: &[u8] = if chunked { b"\r\n" } else { b"" };
                timed(send_timeout, write_slices(shared, [wbuf, &data, end])).await?;
            }
            Some(Err(e)) => {
                // The upstream failed mid-response: the only honest signal left is to cut the
                // connection without a terminating chunk, so the client sees a truncated body.
                tracing::warn!(error = %e, sent, "response body failed mid-stream; closing client connection");
                if !head_sent {
                    // Nothing reached the client yet: an honest 502 is still possible.
                    let rid = match (parts.headers.get(crate::headers::X_REQUEST_ID).and_then(|v| v.to_str().ok()), raw_id) {
                        (Some(v), _) => v.to_string(),
                        (None, Some(id)) => id.as_str().to_string(),
                        (None, None) => "-".to_string(),
                    };
                    let resp = problem::response(StatusCode::BAD_GATEWAY, code::UPSTREAM_ERROR, "Upstream failed", &rid, &[]);
                    return Box::pin(write_response(shared, wbuf, resp, is_head, false, version, limits, false)).await.map(|_| false);
                }
                return Ok(false);
            }
            None => break,
        }
    }
    if head_sent {
        wbuf.clear();
    }
    if chunked {
        wbuf.extend_from_slice(b"0\r\n");
        // An HTTP/2 upstream's trailers are held to what an HTTP/1 upstream's may carry.
        for (name, value) in trailers.iter().flatten().filter(|(n, _)| crate::upstream::trailer_may_pass(n.as_str().as_bytes())) {
            wbuf.extend_from_slice(name.as_str().as_bytes());
            wbuf.extend_from_slice(b": ");
            wbuf.extend_from_slice(value.as_bytes());
            wbuf.extend_from_slice(b"\r\n");
        }
        wbuf.extend_from_slice(b"\r\n");
    }
    if !wbuf.is_empty() {
        timed(send_timeout, write_all(shared, wbuf)).await?;
    }
    if exact.is_some_and(|n| n != sent) {
        keep_alive = false;
    }
    Ok(keep_alive)
}

/// How a response is framed for the client (see `write_response`).
struct ResponseFraming {
    is_head: bool,
    /// No body is sent (HEAD, 1xx, 204, 304).
    no_body: bool,
    /// The body's exact length, when known.
    exact: Option<u64>,
    chunked: bool,
    keep_alive: bool,
    version: Version,
}

/// Write a response head into `wbuf`: status line, the header lines (a pass-through response's
/// own lines as they are), `Date`, the framing and `Connection`. Returns the request id a
/// pass-through head carried.
fn write_head(wbuf: &mut Vec<u8>, parts: &http::response::Parts, body: &mut RespBody, f: ResponseFraming) -> Option<crate::request_id::RequestId> {
    let ResponseFraming { is_head, no_body, exact, chunked, keep_alive, version } = f;
    let status = parts.status;
    wbuf.clear();
    wbuf.extend_from_slice(b"HTTP/1.1 ");
    wbuf.extend_from_slice(status.as_str().as_bytes());
    wbuf.push(b' ');
    wbuf.extend_from_slice(status.canonical_reason().unwrap_or("Unknown").as_bytes());
    wbuf.extend_from_slice(b"\r\n");
    let mut has_date = false;
    // Pass-through: the upstream's own header lines, already filtered (see `upstream::RawHead`),
    // and the request id the proxy attached to them.
    let mut raw_id = None;
    if let RespBody::Upstream(up) = body {
        if let Some(raw) = up.take_raw_head() {
            wbuf.extend_from_slice(&raw.lines);
            has_date = raw.has_date;
            if let Some(id) = raw.request_id {
                wbuf.extend_from_slice(b"x-request-id: ");
                wbuf.extend_from_slice(id.as_bytes());
                wbuf.extend_from_slice(b"\r\n");
                raw_id = Some(id);
            }
        }
    }
    for (name, value) in parts.headers.iter() {
        if name == header::CONNECTION || name == header::TRANSFER_ENCODING {
            continue;
        }
        if name == header::CONTENT_LENGTH && !(is_head || status == StatusCode::NOT_MODIFIED) {
            continue;
        }
        if name == header::DATE {
            has_date = true;
        }
        wbuf.extend_from_slice(name.as_str().as_bytes());
        wbuf.extend_from_slice(b": ");
        wbuf.extend_from_slice(value.as_bytes());
        wbuf.extend_from_slice(b"\r\n");
    }
    if !has_date {
        wbuf.extend_from_slice(b"date: ");
        crate::date::with(|d| wbuf.extend_from_slice(d));
        wbuf.extend_from_slice(b"\r\n");
    }
    // The length: of the body we send, or, for a HEAD answered by Palisade itself, of the body
    // a GET would get (an upstream's own Content-Length was kept above).
    let length = match exact {
        Some(n) if !no_body => Some(n),
        Some(n) if is_head && n > 0 && !parts.headers.contains_key(header::CONTENT_LENGTH) => Some(n),
        _ => None,
    };
    if let Some(n) = length {
        wbuf.extend_from_slice(b"content-length: ");
        wbuf.extend_from_slice(codec::decimal(n, &mut [0u8; 20]));
        wbuf.extend_from_slice(b"\r\n");
    } else if chunked {
        wbuf.extend_from_slice(b"transfer-encoding: chunked\r\n");
    }
    if !keep_alive {
        wbuf.extend_from_slice(b"connection: close\r\n");
    } else if version == Version::HTTP_10 {
        wbuf.extend_from_slice(b"connection: keep-alive\r\n");
    }
    wbuf.extend_from_slice(b"\r\n");
    raw_id
}

/// A timeout that costs nothing when `f` completes at once: the timer is created the first time
/// `f` has to wait (most writes complete immediately).
pub(crate) async fn timed<T>(d: Duration, f: impl Future<Output = io::Result<T>>) -> io::Result<T> {
    let mut f = std::pin::pin!(f);
    let mut sleep: Option<Pin<Box<Sleep>>> = None;
    poll_fn(|cx| {
        if let Poll::Ready(v) = f.as_mut().poll(cx) {
            return Poll::Ready(v);
        }
        let s = sleep.get_or_insert_with(|| Box::pin(tokio::time::sleep(d)));
        match s.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::ErrorKind::TimedOut.into())),
            Poll::Pending => Poll::Pending,
        }
    })
    .await
}

/// Write `bufs` in order with vectored writes (see `codec::poll_write_all`).
async fn write_slices(shared: &Rc<RefCell<Shared>>, mut bufs: [&[u8]; 3]) -> io::Result<()> {
    poll_fn(|cx| codec::poll_write_all(&mut shared.borrow_mut().io, cx, &mut bufs, || {})).await
}

async fn write_all(shared: &Rc<RefCell<Shared>>, mut buf: &[u8]) -> io::Result<()> {
    poll_fn(|cx| {
        let mut s = shared.borrow_mut();
        while !buf.is_empty() {
            let n = ready!(Pin::new(&mut s.io).poll_write(cx, buf))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            buf = &buf[n..];
        }
        Poll::Ready(Ok(()))
    })
    .await
}

#[cfg(test)]
mod tests;
