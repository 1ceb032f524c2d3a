//! What goes back to the client ([`RespBody`]): a body Palisade made, the upstream's (HTTP/1.1 or
//! HTTP/2), or the answer to a WebSocket handshake.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};

use crate::body_error::BodyError;
use crate::upstream::UpstreamBody;

/// A response body for the client.
pub enum RespBody {
    Full(Option<Bytes>),
    Upstream(UpstreamBody),
    /// A judged prefix that was buffered, the trailers when the body ended within it, then the
    /// rest of the upstream's body.
    Chained {
        head: Option<Bytes>,
        trailers: Option<http::HeaderMap>,
        rest: UpstreamBody,
    },
    /// The answer to a WebSocket handshake the upstream accepted: no body, the connection is
    /// relayed from here on (`websocket.rs`).
    Upgrade(Box<crate::ws_session::Pending>),
    /// From an HTTP/2 upstream: data and trailers as they come.
    H2(Box<crate::grpc::H2Body>),
    /// From an HTTP/2 upstream, judged: the buffered prefix, the trailers when the body ended
    /// within it, then the rest.
    H2Buffered {
        head: Option<Bytes>,
        trailers: Option<http::HeaderMap>,
        rest: Box<crate::grpc::H2Body>,
    },
}

impl RespBody {
    pub fn full(b: impl Into<Bytes>) -> Self {
        let b = b.into();
        RespBody::Full(if b.is_empty() { None } else { Some(b) })
    }

    pub fn empty() -> Self {
        RespBody::Full(None)
    }
}

/// The buffered prefix, then the trailers that ended the body within it, then the rest.
fn buffered_then(
    head: &mut Option<Bytes>,
    trailers: &mut Option<http::HeaderMap>,
    rest: impl FnOnce() -> Poll<Option<Result<Frame<Bytes>, BodyError>>>,
) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
    if let Some(h) = head.take() {
        return Poll::Ready(Some(Ok(Frame::data(h))));
    }
    if let Some(t) = trailers.take() {
        return Poll::Ready(Some(Ok(Frame::trailers(t))));
    }
    rest()
}

fn at_least(n: u64) -> SizeHint {
    let mut hint = SizeHint::new();
    hint.set_lower(n);
    hint
}

impl Body for RespBody {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        match self.get_mut() {
            RespBody::Full(b) => Poll::Ready(b.take().map(|b| Ok(Frame::data(b)))),
            RespBody::Upstream(u) => Pin::new(u).poll_frame(cx),
            RespBody::Upgrade(_) => Poll::Ready(None),
            RespBody::H2(b) => Pin::new(&mut **b).poll_frame(cx),
            RespBody::Chained { head, trailers, rest } => buffered_then(head, trailers, || Pin::new(rest).poll_frame(cx)),
            RespBody::H2Buffered { head, trailers, rest } => buffered_then(head, trailers, || Pin::new(&mut **rest).poll_frame(cx)),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            RespBody::Full(b) => b.is_none(),
            RespBody::Upstream(u) => u.is_end_stream(),
            RespBody::Upgrade(_) => true,
            RespBody::H2(b) => b.is_end_stream(),
            RespBody::Chained { head, trailers, rest } => head.is_none() && trailers.is_none() && rest.is_end_stream(),
            RespBody::H2Buffered { head, trailers, rest } => head.is_none() && trailers.is_none() && rest.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            RespBody::Full(b) => SizeHint::with_exact(b.as_ref().map_or(0, |b| b.len() as u64)),
            RespBody::Upstream(u) => u.size_hint(),
            RespBody::Upgrade(_) => SizeHint::with_exact(0),
            RespBody::H2(b) => b.size_hint(),
            // Trailers held back make the length inexact: an HTTP/1.1 client gets the body
            // chunked, with room for them.
            RespBody::H2Buffered { head, trailers, rest } => {
                let h = head.as_ref().map_or(0, |b| b.len() as u64);
                if trailers.is_some() {
                    return at_least(h);
                }
                if rest.is_end_stream() {
                    return SizeHint::with_exact(h);
                }
                at_least(h + rest.size_hint().lower())
            }
            RespBody::Chained { head, trailers, rest } => {
                let h = head.as_ref().map_or(0, |b| b.len() as u64);
                if trailers.is_some() {
                    return at_least(h);
                }
                let r = rest.size_hint();
                match r.exact() {
                    Some(n) => SizeHint::with_exact(n + h),
                    None => at_least(r.lower() + h),
                }
            }
        }
    }
}
