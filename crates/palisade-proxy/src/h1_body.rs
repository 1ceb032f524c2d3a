//! The HTTP/1 request body ([`RequestBody`]) and the connection state it shares with the
//! server loop (`h1.rs`): the read buffer, the body's framing, the `100 Continue` line, the
//! body read deadline and the per-worker budget for memory allocated ahead of body bytes.

use std::cell::RefCell;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http_body::{Body, Frame, SizeHint};
use tokio::io::AsyncWrite;
use tokio::time::{Instant, Sleep};

use crate::body_error::BodyError;
use crate::codec::{self, BodyState, Chunk};
use crate::io::Stream;

const CONTINUE: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";
/// Bodies with a Content-Length up to this are delivered as a single frame.
const WHOLE_BODY_MAX: u64 = 256 * 1024;
/// Room past a whole body's bytes for what its last read may bring of the next request (see
/// `poll_whole_body`).
const BODY_SLACK: usize = 4096;

pub(crate) struct Shared {
    pub(crate) io: Stream,
    pub(crate) rbuf: BytesMut,
    /// Sequence number of the request whose body may be read; older bodies read nothing.
    pub(crate) seq: u64,
    pub(crate) body: BodyState,
    /// Bytes of the `100 Continue` line still to write (`None`: not needed or done).
    pub(crate) continue_at: Option<usize>,
    pub(crate) body_timeout: Duration,
    /// Body read deadline, armed when a body read first has to wait (and re-armed after data).
    pub(crate) deadline: Pin<Box<Sleep>>,
    pub(crate) deadline_armed: bool,
    /// The body being gathered whole (see `poll_whole_body`), with its share of the budget.
    pub(crate) body_buf: Option<(BytesMut, Reservation)>,
}

/// Memory allocated for bodies ahead of their bytes, per worker. Past the budget, bodies take
/// the frame-by-frame path, so heads announcing large bodies cannot make a worker allocate
/// without bound.
const AHEAD_BUDGET: usize = 32 * 1024 * 1024;

thread_local! {
    pub(crate) static RESERVED_AHEAD: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

pub(crate) struct Reservation(usize);

/// Whole-body buffers of this worker kept for the next bodies (at most `BODY_POOL` of at most
/// `POOLED_BODY_MAX` bytes each): a body buffer is allocated and freed around every request,
/// and the allocator returning those pages to the kernel (and faulting them in again) showed as
/// page faults per 28 KiB POST.
const BODY_POOL: usize = 8;
const POOLED_BODY_MAX: usize = 64 * 1024 + BODY_SLACK;

thread_local! {
    static BODIES: RefCell<Vec<BytesMut>> = const { RefCell::new(Vec::new()) };
}

/// A buffer for a whole body of `cap` bytes (its slack included): pooled when one is there.
pub(crate) fn body_buffer(cap: usize) -> BytesMut {
    match BODIES.with(|b| b.borrow_mut().pop()) {
        Some(mut b) if b.capacity() >= cap => {
            b.clear();
            b
        }
        _ => BytesMut::with_capacity(cap),
    }
}

/// Give a whole body back once it has been sent (kept only when nothing else holds it).
pub fn recycle_body(body: Bytes) {
    if body.len() > POOLED_BODY_MAX {
        return;
    }
    if let Ok(b) = body.try_into_mut() {
        if b.capacity() <= POOLED_BODY_MAX {
            BODIES.with(|p| {
                let mut p = p.borrow_mut();
                if p.len() < BODY_POOL {
                    p.push(b);
                }
            });
        }
    }
}

impl Reservation {
    pub(crate) fn take(n: usize) -> Option<Reservation> {
        RESERVED_AHEAD.with(|r| {
            let now = r.get();
            (now + n <= AHEAD_BUDGET).then(|| {
                r.set(now + n);
                Reservation(n)
            })
        })
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        RESERVED_AHEAD.with(|r| r.set(r.get().saturating_sub(self.0)));
    }
}

impl Shared {
    /// Read more bytes of a head into `rbuf`. `Ok(0)` is end of stream.
    pub(crate) fn poll_read_more(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        codec::poll_read_more(&mut self.io, &mut self.rbuf, cx)
    }

    /// Read more bytes of a body read frame by frame into `rbuf` (see `codec::poll_read_body`).
    pub(crate) fn poll_read_body(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        codec::poll_read_body(&mut self.io, &mut self.rbuf, cx)
    }

    pub(crate) fn poll_write_continue(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while let Some(off) = self.continue_at {
            let n = ready!(Pin::new(&mut self.io).poll_write(cx, &CONTINUE[off..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.continue_at = if off + n >= CONTINUE.len() { None } else { Some(off + n) };
        }
        Poll::Ready(Ok(()))
    }

    /// Called when a body read has to wait: arms the deadline on the first wait since data last
    /// arrived, and says whether it has passed.
    pub(crate) fn body_deadline_passed(&mut self, cx: &mut Context<'_>) -> bool {
        if !self.deadline_armed {
            self.deadline_armed = true;
            let deadline = Instant::now() + self.body_timeout;
            self.deadline.as_mut().reset(deadline);
        }
        self.deadline.as_mut().poll(cx).is_ready()
    }

    /// Gather a body of `n` bytes into its own buffer; ready once it is complete.
    pub(crate) fn poll_whole_body(&mut self, cx: &mut Context<'_>, n: u64) -> Poll<Result<Bytes, BodyError>> {
        use bytes::BufMut;
        let Some((buf, _)) = self.body_buf.as_mut() else { return Poll::Ready(Err(BodyError::Incomplete)) };
        loop {
            let missing = n as usize - buf.len();
            if missing == 0 {
                self.body = BodyState::Done;
                let whole = self.body_buf.take().map(|(b, _)| b).unwrap_or_default();
                return Poll::Ready(Ok(whole.freeze()));
            }
            // Each read asks for up to BODY_SLACK bytes past the body. Usually fewer arrive: a
            // read that does not fill its buffer tells tokio the socket is drained, so the next
            // request's head is waited for in the poller instead of with a `recv` that fails with
            // EAGAIN (one syscall per request saved). Bytes past the body belong to the next
            // request (pipelining): they go to the connection's read buffer.
            match tokio_util::io::poll_read_buf(Pin::new(&mut self.io), cx, &mut (&mut *buf).limit(missing + BODY_SLACK)) {
                Poll::Ready(Ok(0)) => return Poll::Ready(Err(BodyError::Incomplete)),
                Poll::Ready(Ok(_)) => {
                    self.deadline_armed = false;
                    if buf.len() > n as usize {
                        // The connection's buffer is empty here: the body took all it held.
                        self.rbuf.extend_from_slice(&buf[n as usize..]);
                        buf.truncate(n as usize);
                    }
                }
                Poll::Ready(Err(e)) => return Poll::Ready(Err(BodyError::Io(e.to_string()))),
                Poll::Pending => {
                    if self.body_deadline_passed(cx) {
                        return Poll::Ready(Err(BodyError::Timeout));
                    }
                    return Poll::Pending;
                }
            }
        }
    }

    pub(crate) fn decode(&mut self) -> Result<Option<Option<Bytes>>, BodyError> {
        codec::decode(&mut self.body, &mut self.rbuf)
    }
}

/// The body of a request on an HTTP/1 connection.
pub struct RequestBody {
    pub(crate) shared: Rc<RefCell<Shared>>,
    pub(crate) seq: u64,
    pub(crate) hint: SizeHint,
    /// Bytes the body may still bring (see [`RequestBody::limit_to`]).
    pub(crate) allowed: u64,
}

impl RequestBody {
    /// Fail with [`BodyError::TooLarge`] as soon as the body is known to exceed `max` bytes: a
    /// chunk announcing more than is left is refused when its size line arrives, not after
    /// waiting for data that would be refused anyway.
    pub fn limit_to(&mut self, max: u64) {
        self.allowed = max;
    }
}

impl Body for RequestBody {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        let this = self.get_mut();
        let mut s = this.shared.borrow_mut();
        if s.seq != this.seq {
            return Poll::Ready(Some(Err(BodyError::Incomplete)));
        }
        if s.continue_at.is_some() {
            if let Err(e) = ready!(s.poll_write_continue(cx)) {
                s.body = BodyState::Failed;
                return Poll::Ready(Some(Err(BodyError::Io(e.to_string()))));
            }
            s.deadline_armed = false;
        }
        loop {
            // A body of known, moderate length is read into a buffer of its own, exactly its
            // size, and handed over as one frame: no reassembly copy, and the connection's read
            // buffer stays small. Only what the client has sent is ever copied.
            if let BodyState::Length(n) = s.body {
                let whole = s.body_buf.is_some()
                    || (n <= WHOLE_BODY_MAX && (s.rbuf.len() as u64) < n && {
                        match Reservation::take(n as usize + BODY_SLACK) {
                            Some(r) => {
                                let mut b = body_buffer(n as usize + BODY_SLACK);
                                let take = s.rbuf.len().min(n as usize);
                                b.extend_from_slice(&s.rbuf.split_to(take));
                                s.body_buf = Some((b, r));
                                true
                            }
                            None => false,
                        }
                    });
                if whole {
                    match s.poll_whole_body(cx, n) {
                        Poll::Ready(Ok(data)) => return Poll::Ready(Some(Ok(Frame::data(data)))),
                        Poll::Ready(Err(e)) => {
                            s.body = BodyState::Failed;
                            s.body_buf = None;
                            return Poll::Ready(Some(Err(e)));
                        }
                        Poll::Pending => return Poll::Pending,
                    }
                }
            }
            match s.decode() {
                Ok(Some(Some(data))) => {
                    let n = data.len() as u64;
                    if n > this.allowed {
                        s.body = BodyState::Failed;
                        return Poll::Ready(Some(Err(BodyError::TooLarge)));
                    }
                    this.allowed -= n;
                    return Poll::Ready(Some(Ok(Frame::data(data))));
                }
                Ok(Some(None)) => return Poll::Ready(None),
                Ok(None) => {}
                Err(e) => {
                    s.body = BodyState::Failed;
                    return Poll::Ready(Some(Err(e)));
                }
            }
            if let BodyState::Chunked(Chunk::Data(n)) = s.body {
                if n > this.allowed {
                    s.body = BodyState::Failed;
                    return Poll::Ready(Some(Err(BodyError::TooLarge)));
                }
            }
            match s.poll_read_body(cx) {
                Poll::Ready(Ok(0)) => {
                    s.body = BodyState::Failed;
                    return Poll::Ready(Some(Err(BodyError::Incomplete)));
                }
                Poll::Ready(Ok(_)) => {
                    s.deadline_armed = false;
                }
                Poll::Ready(Err(e)) => {
                    s.body = BodyState::Failed;
                    return Poll::Ready(Some(Err(BodyError::Io(e.to_string()))));
                }
                Poll::Pending => {
                    if s.body_deadline_passed(cx) {
                        s.body = BodyState::Failed;
                        return Poll::Ready(Some(Err(BodyError::Timeout)));
                    }
                    return Poll::Pending;
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        let s = self.shared.borrow();
        s.seq == self.seq && s.body == BodyState::Done
    }

    fn size_hint(&self) -> SizeHint {
        self.hint
    }
}
