//! The handshake to an HTTP/2 upstream: an extended CONNECT (RFC 8441) on a stream of the
//! worker's connection ([`crate::h2up::websocket`]); a `2xx` hands the stream over, another
//! answer is relayed as it is. An upstream without extended CONNECT gets the HTTP/1.1 upgrade
//! instead ([`super::upgrade`]).

use std::time::Duration;

use http::{header, HeaderMap, HeaderName, HeaderValue, Request, Response, StatusCode};

use super::handshake::reject;
use super::MAX_REFUSAL_BODY;
use crate::code;
use crate::h2up::WsAnswer;
use crate::request_id::RequestId;
use crate::resp_body::RespBody;
use crate::targets::Upstream;
use crate::ws_session::UpIo;

/// What became of an extended CONNECT to an HTTP/2 upstream.
// Returned once per handshake and taken apart at once: the stream is not worth a box.
#[allow(clippy::large_enum_variant)]
pub(super) enum Extended {
    /// The upstream accepted (a `2xx`): its answer's headers and the stream.
    Accepted(HeaderMap, UpIo),
    /// The client's answer: the upstream's refusal as it is, or Palisade's own `502`/`504`.
    Answered(Response<RespBody>),
    /// The handshake goes as an HTTP/1.1 upgrade on a connection of its own (`h2`: the
    /// upstream speaks HTTP/2 without extended CONNECT).
    Http1 { h2: bool },
}

/// Send the handshake (`parts`, with the forwarding lines `extra_lines`) to target `t` of an
/// HTTP/2 upstream as an extended CONNECT.
pub(super) async fn extended_connect(up: &Upstream, t: usize, parts: &http::request::Parts, extra_lines: &[u8], inspect: bool, id: RequestId) -> Extended {
    let target = &up.targets[t];
    let cfg_up = &up.cfg;
    match crate::h2up::websocket(up, t, h2_parts(parts, extra_lines)).await {
        WsAnswer::Answer(resp, stream) => {
            // (The key Palisade made for an HTTP/2 client is not sent: RFC 8441 has none.)
            match h2_switch(*resp, stream, inspect, cfg_up.read_timeout).await {
                Ok((headers, upstream)) => Extended::Accepted(headers, upstream),
                Err(Ok(refused)) => Extended::Answered(refused),
                Err(Err(why)) => {
                    tracing::warn!(request_id = id.as_str(), upstream = %cfg_up.name, target = %target.target, why, "websocket handshake: invalid upstream answer to the extended CONNECT");
                    Extended::Answered(reject(StatusCode::BAD_GATEWAY, code::UPSTREAM_ERROR, "Upstream failed", id))
                }
            }
        }
        WsAnswer::Http1 { h2 } => {
            if h2 {
                tracing::info!(request_id = id.as_str(), upstream = %cfg_up.name, target = %target.target, "websocket: the HTTP/2 upstream does not allow extended CONNECT (RFC 8441): the handshake goes as an HTTP/1.1 upgrade on a connection of its own");
            }
            Extended::Http1 { h2 }
        }
        WsAnswer::Failed(e) => {
            tracing::warn!(request_id = id.as_str(), upstream = %cfg_up.name, target = %target.target, error = %e, "websocket upstream unavailable");
            Extended::Answered(reject(StatusCode::BAD_GATEWAY, code::UPSTREAM_UNAVAILABLE, "Upstream unavailable", id))
        }
        WsAnswer::Timeout => {
            tracing::warn!(request_id = id.as_str(), upstream = %cfg_up.name, "websocket handshake: upstream timed out");
            Extended::Answered(reject(StatusCode::GATEWAY_TIMEOUT, code::UPSTREAM_TIMEOUT, "Upstream timed out", id))
        }
    }
}

/// The handshake as an HTTP/2 upstream gets it (before [`crate::h2up::websocket`] makes it an
/// extended CONNECT): the request's URI and headers, the forwarding lines among them.
fn h2_parts(parts: &http::request::Parts, extra_lines: &[u8]) -> http::request::Parts {
    let mut r = Request::new(());
    *r.uri_mut() = parts.uri.clone();
    *r.headers_mut() = parts.headers.clone();
    for line in extra_lines.split(|b| *b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let Some(colon) = line.iter().position(|b| *b == b':') else { continue };
        if let (Ok(n), Ok(v)) = (HeaderName::from_bytes(&line[..colon]), HeaderValue::from_bytes(line[colon + 1..].trim_ascii())) {
            r.headers_mut().append(n, v);
        }
    }
    r.into_parts().0
}

/// The upstream's answer to an extended CONNECT: a 2xx hands the stream over (`Ok`: the
/// answer's headers and the stream); another answer is relayed as it is (`Err(Ok)`);
/// `Err(Err)`: what is wrong with it, for the log.
async fn h2_switch(
    resp: Response<hyper::body::Incoming>,
    stream: crate::h2up::StreamGuard,
    inspect: bool,
    timeout: Duration,
) -> Result<(HeaderMap, UpIo), Result<Response<RespBody>, &'static str>> {
    use http_body_util::BodyExt;
    if resp.status().is_success() {
        if inspect && resp.headers().contains_key(header::SEC_WEBSOCKET_EXTENSIONS) {
            return Err(Err("an extension that was not offered"));
        }
        let headers = resp.headers().clone();
        let upgraded = tokio::time::timeout(timeout, hyper::upgrade::on(resp)).await;
        return match upgraded {
            Ok(Ok(u)) => Ok((headers, UpIo::H2 { io: hyper_util::rt::TokioIo::new(u), _stream: stream })),
            Ok(Err(_)) => Err(Err("the stream was not handed over")),
            Err(_) => Err(Err("the stream was not handed over in time")),
        };
    }
    if resp.status().is_informational() {
        return Err(Err("an informational answer to an extended CONNECT"));
    }
    let (mut parts, body) = resp.into_parts();
    let limited = http_body_util::Limited::new(body, MAX_REFUSAL_BODY);
    let body = match tokio::time::timeout(timeout, limited.collect()).await {
        Ok(Ok(b)) => b.to_bytes(),
        Ok(Err(_)) => return Err(Err("the refusal's body failed or is too large")),
        Err(_) => return Err(Err("the refusal's body timed out")),
    };
    crate::headers::strip_hop_by_hop(&mut parts.headers);
    parts.headers.remove(header::CONTENT_LENGTH);
    let mut out = Response::new(RespBody::full(body));
    *out.status_mut() = parts.status;
    *out.headers_mut() = parts.headers;
    Err(Ok(out))
}
