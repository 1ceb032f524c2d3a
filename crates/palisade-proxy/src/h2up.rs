//! HTTP/2 upstreams: `h2c://` (prior knowledge) and `https://` targets that choose `h2` by ALPN.
//!
//! Each worker keeps one multiplexed connection per target (a thread-local, like the HTTP/1
//! pools), driven by hyper's HTTP/2 client as a task on the worker; requests are streams on it.
//! Bodies stream both ways with HTTP/2 flow control (a stream's window bounds what is held for
//! it), trailers pass through in both directions, and `te: trailers` is kept. An `https://`
//! upstream that answers ALPN without `h2` is spoken to over HTTP/1.1 from then on
//! ([`Upstream::fall_back_to_http1`]).

use std::cell::RefCell;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{header, HeaderValue, Request, Response, Uri};
use http_body::{Body, Frame, SizeHint};
use hyper::body::Incoming;
use hyper::client::conn::http2::SendRequest;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpStream;

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

#[derive(Default)]
struct Pool {
    generation: u64,
    /// [upstream][target] -> the worker's connection.
    conns: Vec<Vec<Option<Sender>>>,
}

thread_local! {
    static POOL: RefCell<Pool> = RefCell::new(Pool::default());
}

fn pooled(up: &Upstream, t: usize) -> Option<Sender> {
    POOL.with(|p| {
        let mut p = p.borrow_mut();
        if p.generation != up.generation {
            return None;
        }
        let slot = p.conns.get_mut(up.index)?.get_mut(t)?;
        match slot {
            Some(s) if !s.is_closed() => Some(s.clone()),
            _ => {
                *slot = None;
                None
            }
        }
    })
}

fn keep(up: &Upstream, t: usize, s: &Sender) {
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
        ups[t] = Some(s.clone());
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

/// Open an HTTP/2 connection to target `t`: its connection task is spawned on this worker.
async fn open(up: &Upstream, t: usize) -> Result<Sender, ConnectError> {
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
    let target = ts.target.to_string();
    let name = up.cfg.name.clone();
    let spawn = move |conn: Pin<Box<dyn std::future::Future<Output = hyper::Result<()>>>>| {
        tokio::task::spawn_local(async move {
            if let Err(e) = conn.await {
                tracing::warn!(upstream = %name, target = %target, error = %e, "HTTP/2 upstream connection failed{}", hint(&e));
            }
        });
    };
    match up.protocol {
        Protocol::Https => {
            let tls = up.tls.as_ref().ok_or_else(|| ConnectError::Failed("no TLS configuration".into()))?;
            let s = crate::upstream::connect_tls(up, t, tls.h2.clone()).await.map_err(ConnectError::Failed)?;
            if s.get_ref().1.alpn_protocol() != Some(b"h2") {
                up.fall_back_to_http1();
                return Err(ConnectError::Http1);
            }
            let hs = tokio::time::timeout(up.cfg.connect_timeout, builder.handshake::<_, ReqBody>(TokioIo::new(s))).await;
            let (sender, conn) = hs
                .map_err(|_| ConnectError::Failed(format!("HTTP/2 handshake with {} timed out", ts.target)))?
                .map_err(|e| ConnectError::Failed(format!("HTTP/2 handshake with {}: {e}", ts.target)))?;
            spawn(Box::pin(conn));
            Ok(sender)
        }
        _ => {
            let s = tokio::time::timeout(up.cfg.connect_timeout, TcpStream::connect(addr))
                .await
                .map_err(|_| ConnectError::Failed(format!("connect to {} timed out", ts.target)))?
                .map_err(|e| ConnectError::Failed(format!("connect to {}: {e}", ts.target)))?;
            let _ = s.set_nodelay(true);
            let hs = tokio::time::timeout(up.cfg.connect_timeout, builder.handshake::<_, ReqBody>(TokioIo::new(s))).await;
            let (sender, conn) = hs
                .map_err(|_| ConnectError::Failed(format!("HTTP/2 handshake with {} timed out", ts.target)))?
                .map_err(|e| ConnectError::Failed(format!("HTTP/2 handshake with {}: {e}", ts.target)))?;
            spawn(Box::pin(conn));
            Ok(sender)
        }
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
) -> Result<Response<Incoming>, SendFailure> {
    let scheme = if up.protocol == Protocol::Https { http::uri::Scheme::HTTPS } else { http::uri::Scheme::HTTP };
    let mut tried: u64 = 0;
    let mut last_err: Option<String> = None;
    let mut reopened = false;
    for _ in 0..up.targets.len() + 2 {
        let Some(t) = up.pick(tried) else { break };
        let sender = match pooled(up, t) {
            Some(s) => s,
            None => match open(up, t).await {
                Ok(s) => {
                    keep(up, t, &s);
                    s
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
        let mut sender = sender;
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
                Ok(resp)
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
    let Ok(mut sender) = open(up, t).await else { return false };
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
