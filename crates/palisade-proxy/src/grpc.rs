//! gRPC requests (`content-type: application/grpc*`): answers in the form gRPC clients expect,
//! and the judging of messages as they stream upstream.
//!
//! A response Palisade makes itself (a block, a limit, an upstream failure) becomes a
//! Trailers-Only response: HTTP 200, `content-type: application/grpc`, `grpc-status`, and
//! `grpc-message` holding the reason code and the request id (percent-encoded as the protocol
//! says), no body. Request messages are taken from the length-prefixed framing
//! ([`palisade_core::grpc`]), decompressed when their `grpc-encoding` is `gzip` or `deflate`, and
//! each is judged by the body stages as it arrives, before it is passed on; a message that is
//! blocked resets the upstream stream and ends the client's call with `grpc-status: 7`.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use crate::{Error, ErrorKind};
use bytes::{Bytes, BytesMut};
use http::{header, HeaderMap, HeaderValue, StatusCode};
use http_body::{Body, Frame, SizeHint};
use palisade_body::coding::{inflate, Coding, Inflated};
use palisade_core::grpc::descriptor::{Descriptors, MsgId};
use palisade_core::grpc::{self as wire, FrameError, HEADER_LEN};

use crate::body::ClientBody;
use crate::body_error::BodyError;
use crate::request_id::RequestId;

/// gRPC status codes used here (grpc/doc/statuscodes.md).
pub mod status {
    pub const INVALID_ARGUMENT: u8 = 3;
    pub const DEADLINE_EXCEEDED: u8 = 4;
    pub const UNIMPLEMENTED: u8 = 12;
    pub const PERMISSION_DENIED: u8 = 7;
    pub const RESOURCE_EXHAUSTED: u8 = 8;
    pub const INTERNAL: u8 = 13;
    pub const UNAVAILABLE: u8 = 14;
    pub const UNAUTHENTICATED: u8 = 16;
}

/// Whether a request is a gRPC call (`application/grpc`, `application/grpc+proto`,
/// `application/grpc-web`...).
pub fn is_grpc(headers: &HeaderMap) -> bool {
    headers.get(header::CONTENT_TYPE).and_then(|v| answer_type(v.as_bytes())).is_some()
}

/// For a request `content-type`, the content type of the answers Palisade makes to it when it
/// is a gRPC call: `application/grpc`, or gRPC-Web's (`application/grpc-web`,
/// `application/grpc-web-text`).
pub fn answer_type(ct: &[u8]) -> Option<&'static str> {
    if ct.len() < 16 || !ct[..16].eq_ignore_ascii_case(b"application/grpc") {
        return None;
    }
    let rest = &ct[16..];
    let starts = |p: &[u8]| rest.len() >= p.len() && rest[..p.len()].eq_ignore_ascii_case(p);
    Some(if starts(b"-web-text") {
        "application/grpc-web-text"
    } else if starts(b"-web") {
        "application/grpc-web"
    } else {
        "application/grpc"
    })
}

/// Whether a gRPC-Web request uses the text mode (`application/grpc-web-text`: the frames in
/// base64).
pub fn is_grpc_web_text(headers: &HeaderMap) -> bool {
    headers.get(header::CONTENT_TYPE).is_some_and(|v| {
        let v = v.as_bytes();
        v.len() >= 25 && v[..25].eq_ignore_ascii_case(b"application/grpc-web-text")
    })
}

/// Whether a gRPC call is gRPC-Web (`application/grpc-web*`): a browser's call, whose request
/// is one message (gRPC-Web has no client streaming), judged whole before it goes upstream.
pub fn is_grpc_web(headers: &HeaderMap) -> bool {
    headers.get(header::CONTENT_TYPE).and_then(|v| answer_type(v.as_bytes())).is_some_and(|t| t != "application/grpc")
}

/// Reason code of a gRPC-Web text body that is not base64.
pub const WEB_TEXT_BASE64: &str = "grpc.web_text_base64";

/// The frames of a gRPC-Web text body (`application/grpc-web-text`): base64 (RFC 4648 §4) in
/// pieces that may each end padded (a client may encode each message on its own, so `=` may
/// close a piece in the middle of the body). With `truncated` (the body goes on beyond what
/// was read), an incomplete last group of four is left for later. `None`: not base64.
pub fn decode_web_text(body: &[u8], truncated: bool) -> Option<Vec<u8>> {
    let mut rest = if truncated { &body[..body.len() - body.len() % 4] } else { body };
    let mut out = Vec::with_capacity(rest.len() / 4 * 3);
    while !rest.is_empty() {
        // A piece ends with the first group of four that holds padding.
        let end = rest.chunks(4).position(|q| q.contains(&b'=')).map_or(rest.len(), |i| ((i + 1) * 4).min(rest.len()));
        out.extend(palisade_core::base64::decode(&rest[..end])?);
        rest = &rest[end..];
    }
    Some(out)
}

/// The gRPC status of a response Palisade made with this HTTP status: a block is
/// `PERMISSION_DENIED` (`RESOURCE_EXHAUSTED` for rate limits, `UNAUTHENTICATED` for missing
/// credentials); upstream failures are `UNAVAILABLE`, timeouts `DEADLINE_EXCEEDED`.
pub fn status_for(http: StatusCode, blocked: bool) -> u8 {
    match http.as_u16() {
        429 | 413 => status::RESOURCE_EXHAUSTED,
        401 => status::UNAUTHENTICATED,
        502 | 503 => status::UNAVAILABLE,
        504 | 408 => status::DEADLINE_EXCEEDED,
        _ if blocked => status::PERMISSION_DENIED,
        404 | 501 => status::UNIMPLEMENTED,
        400 | 431 | 414 => status::INVALID_ARGUMENT,
        _ => status::INTERNAL,
    }
}

/// `grpc-message`: the reason code and the request id.
pub fn message(code: &str, id: &str) -> HeaderValue {
    let text = format!("{code} (request id {id})");
    HeaderValue::from_str(&wire::percent_encode_message(&text)).unwrap_or(HeaderValue::from_static("blocked"))
}

/// What polling a body frame gives.
type Polled = Poll<Option<Result<Frame<Bytes>, BodyError>>>;

/// Why a stream was stopped: the gRPC status and `grpc-message` the client gets.
pub struct Stop {
    pub grpc_status: u8,
    pub code: String,
    /// The stages' block, when a stage blocked a message, and the request as it was judged (for
    /// the request's record).
    pub block: Option<(crate::judge::Block, Box<JudgedRequest>)>,
}

/// A request as its stages judged it: method, URI, headers (what its event records).
pub type JudgedRequest = (http::Method, http::Uri, HeaderMap);

/// Concludes the record of a streamed gRPC call once its response ends, with the block of a
/// message stopped after the response began.
pub type Finish = Box<dyn FnOnce(Option<(crate::judge::Block, Box<JudgedRequest>)>)>;

/// What the request side and the response side of one gRPC call share: the reason it was
/// stopped, and who to wake when it is.
#[derive(Default)]
pub struct Shared {
    stop: RefCell<Option<Stop>>,
    waker: RefCell<Option<Waker>>,
    /// The stop was answered (as a response or as trailers).
    answered: std::cell::Cell<bool>,
}

impl Shared {
    fn set(&self, stop: Stop) {
        if self.stop.borrow().is_none() {
            *self.stop.borrow_mut() = Some(stop);
        }
        if let Some(w) = self.waker.borrow_mut().take() {
            w.wake();
        }
    }

    /// Take the stop (once), registering `cx` to be woken when there is none yet.
    pub fn poll_stop(&self, cx: &mut Context<'_>) -> Poll<Stop> {
        if self.answered.get() {
            return Poll::Pending;
        }
        if let Some(s) = self.stop.borrow_mut().take() {
            self.answered.set(true);
            return Poll::Ready(s);
        }
        *self.waker.borrow_mut() = Some(cx.waker().clone());
        Poll::Pending
    }
}

/// How the messages of a call are compressed (`grpc-encoding`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Encoding {
    Identity,
    Gzip,
    Deflate,
    /// Declared but not one Palisade decompresses: such messages pass uninspected, logged.
    Other(String),
}

impl Encoding {
    pub fn of(headers: &HeaderMap) -> Encoding {
        match headers.get("grpc-encoding").map(|v| v.to_str().unwrap_or("?").trim().to_ascii_lowercase()) {
            None => Encoding::Identity,
            Some(e) if e == "identity" => Encoding::Identity,
            Some(e) if e == "gzip" => Encoding::Gzip,
            Some(e) if e == "deflate" => Encoding::Deflate,
            Some(e) => Encoding::Other(e),
        }
    }
}

/// The payload of a message as the stages judge it: decompressed when it is compressed with the
/// declared, supported encoding (at most `limit` bytes); `Err` (kind [`ErrorKind::Grpc`]: why)
/// when it cannot be judged.
pub fn judged_payload<'a>(compressed: bool, payload: &'a [u8], enc: &Encoding, limit: usize) -> Result<std::borrow::Cow<'a, [u8]>, Error> {
    let why = |m: String| Error::new(ErrorKind::Grpc, m);
    if !compressed {
        return Ok(payload.into());
    }
    let coding = match enc {
        Encoding::Gzip => Coding::Gzip,
        Encoding::Deflate => Coding::Deflate,
        Encoding::Identity => return Err(why("a compressed message without a declared grpc-encoding".into())),
        Encoding::Other(e) => return Err(why(format!("a message compressed with `{e}`, which Palisade does not decompress"))),
    };
    let mut out = Vec::new();
    match inflate(payload, coding, limit, &mut out) {
        Inflated::Done => Ok(out.into()),
        Inflated::TooLarge => Err(why("a compressed message larger than the inspection limit once decompressed".into())),
        Inflated::Corrupt => Err(why("a compressed message that does not decompress".into())),
    }
}

/// The message type of a call's requests (`Some(true)`) or responses, when the app has a
/// descriptor set that holds the method its path names (`/pkg.Service/Method`).
pub fn message_type(types: Option<&Arc<Descriptors>>, path: &str, request: bool) -> Option<(Arc<Descriptors>, MsgId)> {
    let d = types?;
    let Some(m) = d.method(path) else {
        tracing::debug!(path, "gRPC method not in the app's descriptor set: its messages are scanned without their types");
        return None;
    };
    Some((d.clone(), if request { m.input } else { m.output }))
}

/// The values detection judges in one message, of a known type or not.
pub fn values(payload: &[u8], ty: Option<&(Arc<Descriptors>, MsgId)>) -> palisade_core::ProtocolValues {
    let scan = wire::scan_as(payload, &wire::ScanLimits::default(), ty.map(|(d, id)| (&**d, *id)));
    palisade_core::ProtocolValues { replaces_body: true, replaces_query: Vec::new(), values: scan.values }
}

/// Judges one message: `Some` to stop the call.
pub type Judge = Box<dyn FnMut(&[u8]) -> Option<Stop>>;

/// A gRPC request body on its way upstream: messages are cut from the client's DATA frames,
/// judged one by one, and passed on whole once allowed. At most one message (up to the app's
/// `inspect_body`) is held; the client's stream is not read while a judged message waits to
/// be sent, so HTTP/2 flow control bounds the rest.
pub struct Inspect {
    inner: ClientBody,
    buf: BytesMut,
    ready: VecDeque<Bytes>,
    limit: usize,
    /// `oversize: stream`: a message over the limit passes uninspected.
    stream_oversize: bool,
    /// Bytes of an uninspected message still to pass.
    passthrough: u64,
    encoding: Encoding,
    judge: Judge,
    shared: Rc<Shared>,
    request_id: RequestId,
    done: bool,
    logged_skip: bool,
}

impl Inspect {
    #[allow(clippy::too_many_arguments)]
    pub fn new(inner: ClientBody, limit: usize, stream_oversize: bool, encoding: Encoding, judge: Judge, shared: Rc<Shared>, request_id: RequestId) -> Inspect {
        Inspect {
            inner,
            buf: BytesMut::new(),
            ready: VecDeque::new(),
            limit,
            stream_oversize,
            passthrough: 0,
            encoding,
            judge,
            shared,
            request_id,
            done: false,
            logged_skip: false,
        }
    }

    fn stop(&mut self, stop: Stop) -> Polled {
        self.done = true;
        self.buf.clear();
        self.ready.clear();
        self.shared.set(stop);
        Poll::Ready(Some(Err(BodyError::Io("gRPC call stopped by Palisade".into()))))
    }

    fn frame_error(&mut self, e: FrameError) -> Polled {
        tracing::warn!(request_id = self.request_id.as_str(), reason = e.code(), error = %e, "malformed gRPC request message");
        let grpc_status = if matches!(e, FrameError::TooLarge { .. }) { status::RESOURCE_EXHAUSTED } else { status::INTERNAL };
        self.stop(Stop { grpc_status, code: e.code().to_string(), block: None })
    }

    /// Cut the complete messages out of the buffer, judging each. `Some` ends the body.
    fn cut(&mut self) -> Option<Polled> {
        loop {
            if self.passthrough > 0 {
                if self.buf.is_empty() {
                    return None;
                }
                let n = (self.passthrough as usize).min(self.buf.len());
                self.ready.push_back(self.buf.split_to(n).freeze());
                self.passthrough -= n as u64;
                continue;
            }
            let h = match wire::header(&self.buf) {
                None => return None,
                Some(Err(e)) => return Some(self.frame_error(e)),
                Some(Ok(h)) => h,
            };
            if h.len as usize > self.limit {
                if !self.stream_oversize {
                    return Some(self.frame_error(FrameError::TooLarge { declared: u64::from(h.len), limit: self.limit as u64 }));
                }
                tracing::info!(
                    request_id = self.request_id.as_str(),
                    size = h.len,
                    limit = self.limit,
                    "gRPC message larger than inspect_body: passed uninspected"
                );
                self.passthrough = u64::from(h.len) + HEADER_LEN as u64;
                continue;
            }
            let end = HEADER_LEN + h.len as usize;
            if self.buf.len() < end {
                self.buf.reserve(end - self.buf.len());
                return None;
            }
            let msg = self.buf.split_to(end).freeze();
            match judged_payload(h.compressed, &msg[HEADER_LEN..], &self.encoding, self.limit) {
                Ok(payload) => {
                    if let Some(stop) = (self.judge)(&payload) {
                        return Some(self.stop(stop));
                    }
                }
                Err(why) => {
                    if !self.logged_skip {
                        self.logged_skip = true;
                        tracing::info!(request_id = self.request_id.as_str(), reason = "grpc.compressed_uninspected", "gRPC message not inspected: {why}");
                    }
                }
            }
            self.ready.push_back(msg);
        }
    }
}

impl Body for Inspect {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Polled {
        let this = &mut *self;
        loop {
            if let Some(b) = this.ready.pop_front() {
                return Poll::Ready(Some(Ok(Frame::data(b))));
            }
            if this.done {
                return Poll::Ready(None);
            }
            match Pin::new(&mut this.inner).poll_frame(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(None) => {
                    if !this.buf.is_empty() || this.passthrough > 0 {
                        let missing = match wire::header(&this.buf) {
                            Some(Ok(h)) => (HEADER_LEN + h.len as usize - this.buf.len()) as u64,
                            _ => (HEADER_LEN - this.buf.len().min(HEADER_LEN)) as u64 + this.passthrough,
                        };
                        return this.frame_error(FrameError::Truncated { missing });
                    }
                    this.done = true;
                    return Poll::Ready(None);
                }
                Poll::Ready(Some(Err(e))) => {
                    this.done = true;
                    return Poll::Ready(Some(Err(e)));
                }
                Poll::Ready(Some(Ok(frame))) => match frame.into_data() {
                    Ok(mut data) => {
                        if this.passthrough > 0 && this.buf.is_empty() {
                            let n = (this.passthrough as usize).min(data.len());
                            this.ready.push_back(data.split_to(n));
                            this.passthrough -= n as u64;
                        }
                        if !data.is_empty() {
                            this.buf.extend_from_slice(&data);
                        }
                        if let Some(end) = this.cut() {
                            return end;
                        }
                    }
                    Err(frame) => {
                        // Trailers from the client pass on after what is ready.
                        if frame.is_trailers() {
                            if !this.buf.is_empty() {
                                return this.frame_error(FrameError::Truncated { missing: 0 });
                            }
                            this.done = true;
                            return Poll::Ready(Some(Ok(frame)));
                        }
                    }
                },
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done && self.ready.is_empty()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::new()
    }
}

/// A response body from an HTTP/2 upstream. Data and trailers pass as they come. For a gRPC
/// call, a message Palisade stopped after the response began ends the response with trailers
/// holding the stop's status, and an upstream that fails mid-stream ends it with
/// `grpc-status: 14` (UNAVAILABLE).
pub struct H2Body {
    inner: hyper::body::Incoming,
    grpc: Option<(Rc<Shared>, RequestId)>,
    finished: bool,
    /// Called when the body ends or is dropped (see [`H2Body::on_finish`]).
    finish: Option<Finish>,
    late_block: Option<(crate::judge::Block, Box<JudgedRequest>)>,
    /// The upstream stream, counted open until the body goes.
    stream: Option<crate::h2up::StreamGuard>,
}

impl H2Body {
    pub fn new(inner: hyper::body::Incoming, grpc: Option<(Rc<Shared>, RequestId)>) -> H2Body {
        H2Body { inner, grpc, finished: false, finish: None, late_block: None, stream: None }
    }

    /// Keep the upstream connection from being closed as idle while this body lives.
    pub(crate) fn hold(&mut self, stream: crate::h2up::StreamGuard) {
        self.stream = Some(stream);
    }

    /// Whether this is the response of a streamed gRPC call, whose messages may still be
    /// blocked while it runs.
    pub fn streams_judged_messages(&self) -> bool {
        self.grpc.is_some()
    }

    /// Have `f` conclude the request's record when the response ends (or is dropped), with the
    /// block of a message stopped in the meantime.
    pub fn on_finish(&mut self, f: Finish) {
        self.finish = Some(f);
    }

    fn trailers(&mut self, grpc_status: u8, code: &str) -> Polled {
        self.finished = true;
        let id = self.grpc.as_ref().map_or("", |(_, id)| id.as_str()).to_string();
        let mut t = HeaderMap::new();
        t.insert("grpc-status", HeaderValue::from(u16::from(grpc_status)));
        t.insert("grpc-message", message(code, &id));
        Poll::Ready(Some(Ok(Frame::trailers(t))))
    }
}

impl Body for H2Body {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Polled {
        let this = &mut *self;
        if this.finished {
            return Poll::Ready(None);
        }
        if let Some((shared, _)) = &this.grpc {
            if let Poll::Ready(stop) = shared.poll_stop(cx) {
                this.late_block = stop.block;
                return this.trailers(stop.grpc_status, &stop.code);
            }
        }
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Err(e))) => {
                if this.grpc.is_some() {
                    tracing::warn!(request_id = this.grpc.as_ref().map_or("", |(_, id)| id.as_str()), error = %e, "upstream failed in the middle of a gRPC response");
                    return this.trailers(status::UNAVAILABLE, crate::code::UPSTREAM_ERROR);
                }
                this.finished = true;
                Poll::Ready(Some(Err(BodyError::Upstream(e.to_string()))))
            }
            Poll::Ready(None) => {
                this.finished = true;
                Poll::Ready(None)
            }
            Poll::Ready(Some(Ok(f))) => Poll::Ready(Some(Ok(f))),
            Poll::Pending => Poll::Pending,
        }
    }

    /// A response whose head ended the upstream's stream (a gRPC Trailers-Only response, its
    /// `grpc-status` in the head) ends the client's with its head too.
    fn is_end_stream(&self) -> bool {
        self.finished || self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        if self.grpc.is_some() {
            return SizeHint::new();
        }
        self.inner.size_hint()
    }
}

impl Drop for H2Body {
    fn drop(&mut self) {
        if let Some(f) = self.finish.take() {
            f(self.late_block.take());
        }
    }
}

/// Judge the messages of a buffered gRPC body one by one (a gRPC request that is not streamed:
/// from an HTTP/1 client, or to an HTTP/1 upstream): `Err` with the stop for the first message
/// that is malformed or blocked.
pub fn judge_buffered(body: &[u8], truncated: bool, limit: usize, enc: &Encoding, mut judge: impl FnMut(&[u8]) -> Option<Stop>) -> Result<(), Box<Stop>> {
    let mut rest = body;
    while !rest.is_empty() {
        let h = match wire::header(rest) {
            None if truncated => return Ok(()),
            None => return Err(frame_stop(FrameError::Truncated { missing: (HEADER_LEN - rest.len()) as u64 })),
            Some(Err(e)) => return Err(frame_stop(e)),
            Some(Ok(h)) => h,
        };
        let end = HEADER_LEN + h.len as usize;
        if rest.len() < end {
            if truncated {
                return Ok(()); // the rest streams uninspected (`oversize: stream`)
            }
            return Err(frame_stop(FrameError::Truncated { missing: (end - rest.len()) as u64 }));
        }
        if let Ok(payload) = judged_payload(h.compressed, &rest[HEADER_LEN..end], enc, limit) {
            if let Some(stop) = judge(&payload) {
                return Err(Box::new(stop));
            }
        }
        rest = &rest[end..];
    }
    Ok(())
}

fn frame_stop(e: FrameError) -> Box<Stop> {
    tracing::warn!(reason = e.code(), error = %e, "malformed gRPC request message");
    Box::new(Stop { grpc_status: status::INTERNAL, code: e.code().to_string(), block: None })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grpc_answer::{reshape, response};
    use crate::problem::Made;

    #[test]
    fn grpc_content_types() {
        let mut h = HeaderMap::new();
        for (ct, yes) in [
            ("application/grpc", true),
            ("application/grpc+proto", true),
            ("Application/GRPC-web", true),
            ("application/json", false),
            ("application/grp", false),
        ] {
            h.insert(header::CONTENT_TYPE, HeaderValue::from_static(ct));
            assert_eq!(is_grpc(&h), yes, "{ct}");
        }
        h.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/grpc-web-text+proto"));
        assert!(is_grpc(&h) && is_grpc_web_text(&h));
        h.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/grpc-web+proto"));
        assert!(!is_grpc_web_text(&h));
        assert_eq!(answer_type(b"application/grpc-web+proto"), Some("application/grpc-web"));
        assert_eq!(answer_type(b"application/grpc-Web-Text"), Some("application/grpc-web-text"));
        assert_eq!(answer_type(b"application/grpc+json"), Some("application/grpc"));
        assert_eq!(answer_type(b"text/plain"), None);
        // A block of a gRPC-Web call answers in gRPC-Web's content type.
        let id = crate::request_id::next();
        let blocked = crate::problem::response(StatusCode::FORBIDDEN, "detect.sqli", "Request blocked", id.as_str(), &[]);
        let mut blocked = blocked;
        blocked.extensions_mut().insert(Made { code: "detect.sqli".into(), blocked: true });
        let r = reshape(blocked, &id, "application/grpc-web");
        assert_eq!(r.status(), 200);
        assert_eq!(r.headers()["content-type"], "application/grpc-web");
        assert_eq!(r.headers()["grpc-status"], "7");
    }

    #[test]
    fn grpc_web_text_is_base64_in_pieces_each_maybe_padded() {
        // Two messages, {1: "hi"} and {1: "a"}, encoded together and each on its own.
        let frames: &[u8] = &[0, 0, 0, 0, 4, 0x0a, 2, b'h', b'i', 0, 0, 0, 0, 3, 0x0a, 1, b'a'];
        assert_eq!(decode_web_text(b"AAAAAAQKAmhpAAAAAAMKAWE=", false).unwrap(), frames);
        // "AAAAAAQKAmhp" is the first message (9 bytes, unpadded), "AAAAAAMKAWE=" the second.
        assert_eq!(
            decode_web_text(b"AAAAAAQKAmhpAAAAAAMKAWE=", false),
            decode_web_text(b"AAAAAAQKAmhp" as &[u8], false).map(|mut a| {
                a.extend(decode_web_text(b"AAAAAAMKAWE=", false).unwrap());
                a
            })
        );
        // Padded pieces one after the other: "AA==" is one zero byte.
        assert_eq!(decode_web_text(b"AA==AAAAAAMKAWE=", false).unwrap(), [0, 0, 0, 0, 0, 3, 0x0a, 1, b'a']);
        assert_eq!(decode_web_text(b"", false).unwrap(), b"");
        // Cut short: the incomplete group waits for the rest.
        assert_eq!(decode_web_text(b"AAAAAAQKAm", true).unwrap(), [0, 0, 0, 0, 4, 0x0a]);
        for bad in [&b"AAAA AAQK"[..], b"AAAAA", b"AA=A", b"*AAA", b"AAAAAAQKAmhp\n"] {
            assert!(decode_web_text(bad, false).is_none(), "{:?}", String::from_utf8_lossy(bad));
        }
        let mut h = HeaderMap::new();
        for (ct, web) in
            [("application/grpc-web+proto", true), ("application/grpc-web-text", true), ("application/grpc", false), ("application/grpc+proto", false)]
        {
            h.insert(header::CONTENT_TYPE, HeaderValue::from_static(ct));
            assert_eq!(is_grpc_web(&h), web, "{ct}");
        }
    }

    #[test]
    fn statuses_map_as_grpc_clients_expect() {
        assert_eq!(status_for(StatusCode::FORBIDDEN, true), 7);
        assert_eq!(status_for(StatusCode::from_u16(406).unwrap(), true), 7);
        assert_eq!(status_for(StatusCode::TOO_MANY_REQUESTS, true), 8);
        assert_eq!(status_for(StatusCode::UNAUTHORIZED, true), 16);
        assert_eq!(status_for(StatusCode::BAD_GATEWAY, false), 14);
        assert_eq!(status_for(StatusCode::GATEWAY_TIMEOUT, false), 4);
        assert_eq!(status_for(StatusCode::NOT_FOUND, false), 12);
        let r = response(7, "detect.sqli", "abc");
        assert_eq!(r.status(), 200);
        assert_eq!(r.headers()["grpc-message"], "detect.sqli (request id abc)");
        assert_eq!(r.headers()["content-type"], "application/grpc");
        assert!(r.body().is_end_stream());
    }

    #[test]
    fn compressed_messages_are_judged_when_the_encoding_is_declared_and_supported() {
        use std::io::Write;
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(b"hello").unwrap();
        let packed = gz.finish().unwrap();
        assert_eq!(&*judged_payload(true, &packed, &Encoding::Gzip, 100).unwrap(), b"hello");
        let e = judged_payload(true, &packed, &Encoding::Gzip, 3).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::Grpc);
        assert!(e.message().contains("inspection limit"), "{e}");
        assert!(judged_payload(true, &packed, &Encoding::Identity, 100).is_err());
        assert!(judged_payload(true, &packed, &Encoding::Other("snappy".into()), 100).unwrap_err().message().contains("snappy"));
        assert_eq!(&*judged_payload(false, b"raw", &Encoding::Gzip, 100).unwrap(), b"raw");
    }
}
