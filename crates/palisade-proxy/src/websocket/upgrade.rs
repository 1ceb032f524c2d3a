//! The handshake as an HTTP/1.1 upgrade, on a fresh connection of the upstream's own (never
//! pooled; TLS offering only `http/1.1` for `https://`): the request head, the upstream's
//! `101` checked against the key sent, any other answer read and relayed as it is.

use std::future::poll_fn;
use std::pin::Pin;
use std::time::Duration;

use bytes::{Buf, BytesMut};
use http::{header, HeaderMap, HeaderName, HeaderValue, Response, StatusCode};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpStream, UnixStream};

use super::handshake::reject;
use super::{accept_key, has_token, MAX_REFUSAL_BODY};
use crate::code;
use crate::io::Stream;
use crate::request_id::RequestId;
use crate::resp_body::RespBody;
use crate::targets::{Addr, Protocol, Upstream};
use crate::{Error, ErrorKind};

/// Largest upstream handshake response head.
const MAX_HEAD: usize = 64 * 1024;

/// Send the upgrade request `head` to target `t` on a connection of its own and read the
/// answer: `Ok` is an acceptance (the `101`'s headers, the connection, what the upstream sent
/// after its head); `Err` the client's answer (the upstream's refusal as it is, or Palisade's
/// own `502`/`504`). `fell_back`: the upstream speaks HTTP/2 without extended CONNECT (the log
/// says so when the exchange fails).
pub(super) async fn upgrade(
    up: &Upstream,
    t: usize,
    head: &[u8],
    key: &[u8],
    inspect: bool,
    id: RequestId,
    fell_back: bool,
) -> Result<(HeaderMap, Stream, BytesMut), Response<RespBody>> {
    let target = &up.targets[t];
    let cfg_up = &up.cfg;
    // Said in the log when an HTTP/1.1 exchange with an HTTP/2 upstream fails.
    let why_h1 = if fell_back { " (the upstream speaks HTTP/2 without extended CONNECT; the HTTP/1.1 upgrade it was sent instead failed)" } else { "" };
    let mut io = match connect_upstream(up, t).await {
        Ok(io) => io,
        Err(e) => {
            tracing::warn!(request_id = id.as_str(), upstream = %cfg_up.name, target = %target.target, error = %e, "websocket upstream unavailable{why_h1}");
            return Err(reject(StatusCode::BAD_GATEWAY, code::UPSTREAM_UNAVAILABLE, "Upstream unavailable", id));
        }
    };
    let exchange = async {
        io.write_all(head).await.map_err(|e| Error::caused_by(ErrorKind::Upstream, format!("write: {e}"), e))?;
        read_head(&mut io).await
    };
    let (resp_head, mut rbuf) = match tokio::time::timeout(cfg_up.read_timeout, exchange).await {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => {
            tracing::warn!(request_id = id.as_str(), upstream = %cfg_up.name, error = %e, "websocket handshake: upstream failed{why_h1}");
            return Err(reject(StatusCode::BAD_GATEWAY, code::UPSTREAM_ERROR, "Upstream failed", id));
        }
        Err(_) => {
            tracing::warn!(request_id = id.as_str(), upstream = %cfg_up.name, "websocket handshake: upstream timed out{why_h1}");
            return Err(reject(StatusCode::GATEWAY_TIMEOUT, code::UPSTREAM_TIMEOUT, "Upstream timed out", id));
        }
    };
    let (status, headers) = resp_head;
    if status != 101 {
        // Refused (401, 404, a plain 200...): the client gets the answer as it is.
        return Err(match refusal(status, headers, &mut io, &mut rbuf).await {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(request_id = id.as_str(), upstream = %cfg_up.name, error = %e, "websocket handshake: upstream answer unreadable");
                reject(StatusCode::BAD_GATEWAY, code::UPSTREAM_ERROR, "Upstream failed", id)
            }
        });
    }
    if let Err(why) = check_switch(&headers, key, inspect) {
        tracing::warn!(request_id = id.as_str(), upstream = %cfg_up.name, why, "websocket handshake: invalid upstream answer");
        return Err(reject(StatusCode::BAD_GATEWAY, code::UPSTREAM_ERROR, "Upstream failed", id));
    }
    Ok((headers, io, rbuf))
}

/// A connection of its own to target `t` for an HTTP/1.1 upgrade: TCP or a Unix socket, TLS
/// (ALPN `http/1.1`) for an `https://` upstream.
async fn connect_upstream(up: &Upstream, t: usize) -> Result<Stream, Error> {
    if up.protocol == Protocol::Https {
        let tls = up.tls.as_ref().ok_or_else(|| Error::new(ErrorKind::Tls, "no TLS configuration"))?;
        let tls = crate::upstream::connect_tls(up, t, tls.http1.clone()).await.map_err(|e| Error::new(ErrorKind::Upstream, e))?;
        return Ok(Stream::TlsClient(Box::new(tls)));
    }
    connect(&up.targets[t].addr, up.cfg.connect_timeout).await.map_err(|e| Error::caused_by(ErrorKind::Upstream, e.to_string(), e))
}

/// The HTTP/1.1 upgrade request the upstream gets: the request's headers (no Content-Length),
/// the forwarding lines, `Connection: upgrade` and `Upgrade: websocket`.
pub(super) fn upgrade_head(parts: &http::request::Parts, extra_lines: &[u8]) -> Vec<u8> {
    let mut head = Vec::with_capacity(1024);
    head.extend_from_slice(b"GET ");
    head.extend_from_slice(parts.uri.path_and_query().map_or("/", |p| p.as_str()).as_bytes());
    head.extend_from_slice(b" HTTP/1.1\r\n");
    for (name, value) in &parts.headers {
        if name == header::CONTENT_LENGTH {
            continue;
        }
        head.extend_from_slice(name.as_str().as_bytes());
        head.extend_from_slice(b": ");
        head.extend_from_slice(value.as_bytes());
        head.extend_from_slice(b"\r\n");
    }
    head.extend_from_slice(extra_lines);
    head.extend_from_slice(b"connection: upgrade\r\nupgrade: websocket\r\n\r\n");
    head
}

/// Check the upstream's `101`: `Upgrade: websocket`, the accept value of the key sent, and no
/// extension when messages are judged (none was offered). `Err`: what is wrong, for the log.
fn check_switch(headers: &HeaderMap, key: &[u8], inspect: bool) -> Result<(), &'static str> {
    let upgrade_ok = headers.get_all(header::UPGRADE).iter().any(|v| has_token(v.as_bytes(), b"websocket"));
    let accept_ok = headers.get(header::SEC_WEBSOCKET_ACCEPT).is_some_and(|a| a.as_bytes() == accept_key(key).as_bytes());
    let extensions = headers.contains_key(header::SEC_WEBSOCKET_EXTENSIONS);
    if !upgrade_ok {
        Err("101 without Upgrade: websocket")
    } else if !accept_ok {
        Err("wrong Sec-WebSocket-Accept")
    } else if inspect && extensions {
        Err("an extension that was not offered")
    } else {
        Ok(())
    }
}

async fn connect(addr: &Addr, timeout: Duration) -> std::io::Result<Stream> {
    let io = match addr {
        Addr::Tcp(a) => {
            let s = tokio::time::timeout(timeout, TcpStream::connect(a)).await.map_err(|_| std::io::Error::from(std::io::ErrorKind::TimedOut))??;
            let _ = s.set_nodelay(true);
            Stream::Tcp(s)
        }
        Addr::Unix(p) => {
            Stream::Unix(tokio::time::timeout(timeout, UnixStream::connect(p)).await.map_err(|_| std::io::Error::from(std::io::ErrorKind::TimedOut))??)
        }
    };
    Ok(io)
}

type Head = (u16, HeaderMap);

fn read_error(e: std::io::Error) -> Error {
    Error::caused_by(ErrorKind::Upstream, format!("read: {e}"), e)
}

/// Read the upstream's response head; the bytes after it stay in the returned buffer.
async fn read_head(io: &mut Stream) -> Result<(Head, BytesMut), Error> {
    let mut buf = BytesMut::with_capacity(4096);
    let mut scanned = 0;
    loop {
        if let Some(end) = crate::codec::find_head_end(&buf, &mut scanned) {
            let mut slots = [httparse::EMPTY_HEADER; 128];
            let mut r = httparse::Response::new(&mut slots);
            match r.parse(&buf[..end]) {
                Ok(httparse::Status::Complete(_)) => {}
                _ => return Err(Error::new(ErrorKind::Upstream, "malformed response head")),
            }
            let status = r.code.unwrap_or(0);
            let mut headers = HeaderMap::new();
            for f in r.headers.iter() {
                if let (Ok(n), Ok(v)) = (HeaderName::from_bytes(f.name.as_bytes()), HeaderValue::from_bytes(f.value)) {
                    headers.append(n, v);
                }
            }
            buf.advance(end);
            return Ok(((status, headers), buf));
        }
        if buf.len() > MAX_HEAD {
            return Err(Error::new(ErrorKind::Upstream, "response head too large"));
        }
        buf.reserve(4096);
        let n = poll_fn(|cx| tokio_util::io::poll_read_buf(Pin::new(&mut *io), cx, &mut buf)).await.map_err(read_error)?;
        if n == 0 {
            return Err(Error::new(ErrorKind::Upstream, "upstream closed before its response head"));
        }
    }
}

/// A non-101 answer, relayed to the client as an ordinary response (its body read here, up to
/// [`MAX_REFUSAL_BODY`]).
async fn refusal(status: u16, mut headers: HeaderMap, io: &mut Stream, rbuf: &mut BytesMut) -> Result<Response<RespBody>, Error> {
    use crate::codec::BodyState;
    let err = |m: String| Error::new(ErrorKind::Upstream, m);
    let status = StatusCode::from_u16(status).map_err(|e| Error::caused_by(ErrorKind::Upstream, format!("invalid status {status}"), e))?;
    if status.is_informational() {
        return Err(err(format!("unexpected {status} to a WebSocket handshake")));
    }
    let chunked = headers.get_all(header::TRANSFER_ENCODING).iter().any(|v| has_token(v.as_bytes(), b"chunked"));
    let length = headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.trim().parse::<u64>().ok());
    let mut state = if status == StatusCode::NO_CONTENT || status == StatusCode::NOT_MODIFIED {
        BodyState::Done
    } else if chunked {
        BodyState::Chunked(crate::codec::Chunk::Size)
    } else {
        match length {
            Some(0) => BodyState::Done,
            Some(n) => BodyState::Length(n),
            None => BodyState::UntilClose,
        }
    };
    let mut body = BytesMut::new();
    loop {
        match crate::codec::decode(&mut state, rbuf).map_err(|e| Error::caused_by(ErrorKind::Upstream, e.to_string(), e))? {
            Some(Some(data)) => {
                body.extend_from_slice(&data);
                if body.len() > MAX_REFUSAL_BODY {
                    return Err(err("refusal body too large".into()));
                }
                continue;
            }
            Some(None) => break,
            None => {}
        }
        rbuf.reserve(8192);
        let n = poll_fn(|cx| tokio_util::io::poll_read_buf(Pin::new(&mut *io), cx, &mut *rbuf)).await.map_err(read_error)?;
        if n == 0 {
            if state == BodyState::UntilClose {
                break;
            }
            return Err(err("upstream closed in the middle of the body".into()));
        }
    }
    crate::headers::strip_hop_by_hop(&mut headers);
    headers.remove(header::CONTENT_LENGTH);
    let mut resp = Response::new(RespBody::full(body.freeze()));
    *resp.status_mut() = status;
    *resp.headers_mut() = headers;
    Ok(resp)
}
