//! Request body types: what the client sends ([`ClientBody`]) and what goes upstream
//! ([`UpBody`]). What goes back to the client is [`crate::resp_body::RespBody`].

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};

use crate::body_error::BodyError;

/// The request body as received from the client.
pub enum ClientBody {
    Empty,
    H1(crate::h1_body::RequestBody),
    H2(hyper::body::Incoming),
}

impl ClientBody {
    /// Refuse the body ([`BodyError::TooLarge`]) as soon as it is known to exceed `max` bytes,
    /// from a chunk size too (HTTP/1; HTTP/2 data arrives in frames the peer's flow control
    /// bounds, counted as they come).
    pub fn limit_to(&mut self, max: u64) {
        if let ClientBody::H1(b) = self {
            b.limit_to(max);
        }
    }
}

impl Body for ClientBody {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        match self.get_mut() {
            ClientBody::Empty => Poll::Ready(None),
            ClientBody::H1(b) => Pin::new(b).poll_frame(cx),
            ClientBody::H2(b) => match Pin::new(b).poll_frame(cx) {
                Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(BodyError::Io(e.to_string())))),
                Poll::Ready(Some(Ok(f))) => Poll::Ready(Some(Ok(f))),
                Poll::Ready(None) => Poll::Ready(None),
                Poll::Pending => Poll::Pending,
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            ClientBody::Empty => true,
            ClientBody::H1(b) => b.is_end_stream(),
            ClientBody::H2(b) => b.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            ClientBody::Empty => SizeHint::with_exact(0),
            ClientBody::H1(b) => b.size_hint(),
            ClientBody::H2(b) => b.size_hint(),
        }
    }
}

/// A request body on its way upstream: fully buffered, or the inspected prefix (`head`), the
/// part of the last read that did not fit (`spill`), and the rest of the client's body streamed
/// as it arrives, limited to `remaining` more bytes.
pub enum UpBody {
    Full(Option<Bytes>),
    Chained { head: Option<Bytes>, spill: Option<Bytes>, rest: ClientBody, remaining: u64 },
}

impl Body for UpBody {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        match self.get_mut() {
            UpBody::Full(b) => Poll::Ready(b.take().map(|b| Ok(Frame::data(b)))),
            UpBody::Chained { head, spill, rest, remaining } => {
                if let Some(p) = head.take().or_else(|| spill.take()) {
                    return Poll::Ready(Some(Ok(Frame::data(p))));
                }
                match Pin::new(rest).poll_frame(cx) {
                    Poll::Ready(Some(Ok(f))) => {
                        let n = f.data_ref().map_or(0, |d| d.len() as u64);
                        if n > *remaining {
                            return Poll::Ready(Some(Err(BodyError::TooLarge)));
                        }
                        *remaining -= n;
                        Poll::Ready(Some(Ok(f)))
                    }
                    other => other,
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            UpBody::Full(b) => b.is_none(),
            UpBody::Chained { head, spill, rest, .. } => head.is_none() && spill.is_none() && rest.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            UpBody::Full(b) => SizeHint::with_exact(b.as_ref().map_or(0, |b| b.len() as u64)),
            UpBody::Chained { head, spill, rest, .. } => {
                let p = head.as_ref().map_or(0, |b| b.len() as u64) + spill.as_ref().map_or(0, |b| b.len() as u64);
                let r = rest.size_hint();
                match r.exact() {
                    Some(n) => SizeHint::with_exact(n + p),
                    None => {
                        let mut h = SizeHint::new();
                        h.set_lower(r.lower() + p);
                        h
                    }
                }
            }
        }
    }
}
