//! Phase 7, upstream, over HTTP/2 (see `proxy.rs`): the request as an HTTP/2 upstream gets it,
//! a streamed gRPC call's messages judged as they pass, and the answer when a message is
//! blocked or the upstream fails.

use std::net::IpAddr;
use std::rc::Rc;
use std::sync::Arc;

use http::{header, HeaderValue, Request, Response, StatusCode, Uri, Version};
use palisade_config::Oversize;
use palisade_core::{Outcome, RequestView};

use crate::body::{ClientBody, UpBody};
use crate::code;
use crate::headers;
use crate::judge;
use crate::metrics::UpstreamErr;
use crate::problem;
use crate::record::Record;
use crate::request_id::RequestId;
use crate::resp_body::RespBody;
use crate::snapshot::{App, Snapshot};
use crate::upstream::UpstreamError;

/// The request as an HTTP/2 upstream gets it: the forwarding header lines moved into the map,
/// `te: trailers` kept, and for a streamed gRPC call a body that judges its messages.
#[allow(clippy::too_many_arguments)]
pub(crate) fn h2_request(
    req: Request<UpBody>,
    forward_lines: &[u8],
    te_trailers: bool,
    grpc_body: Option<ClientBody>,
    grpc_judge: Option<(http::Method, Uri, http::HeaderMap, Option<String>, palisade_core::Context)>,
    snap: &Arc<Snapshot>,
    app_idx: usize,
    encoding: &crate::grpc::Encoding,
    id: RequestId,
    client_ip: IpAddr,
    tls: bool,
) -> (Request<crate::h2up::ReqBody>, Option<Rc<crate::grpc::Shared>>) {
    use crate::h2up::ReqBody;
    let (mut parts, body) = req.into_parts();
    for line in forward_lines.split(|b| *b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let Some(colon) = line.iter().position(|b| *b == b':') else { continue };
        if let (Ok(n), Ok(v)) = (http::HeaderName::from_bytes(&line[..colon]), HeaderValue::from_bytes(line[colon + 1..].trim_ascii())) {
            parts.headers.append(n, v);
        }
    }
    if te_trailers {
        parts.headers.insert(header::TE, HeaderValue::from_static("trailers"));
    }
    let app = &snap.apps[app_idx];
    let Some(client) = grpc_body else {
        let body = match body {
            UpBody::Full(b) => ReqBody::Full(b),
            other => ReqBody::Stream(other),
        };
        return (Request::from_parts(parts, body), None);
    };
    parts.headers.remove(header::CONTENT_LENGTH);
    let shared = Rc::new(crate::grpc::Shared::default());
    let body = match grpc_judge {
        None => ReqBody::Stream(UpBody::Chained { head: None, spill: None, rest: client, remaining: u64::MAX }),
        Some((method, uri, headers, canonical, cx)) => {
            let snap = snap.clone();
            let msg_type = crate::grpc::message_type(app.grpc_types.as_ref(), uri.path(), true);
            let judge: crate::grpc::Judge = Box::new(move |payload: &[u8]| {
                let app = &snap.apps[app_idx];
                let view = RequestView {
                    request_id: id.as_str(),
                    app: &app.cfg.name,
                    client_ip,
                    method: &method,
                    path: canonical.as_deref().unwrap_or(uri.path()),
                    raw_path: uri.path(),
                    query: uri.query(),
                    headers: &headers,
                    body: payload,
                    body_truncated: false,
                    tls,
                };
                let mut o = Outcome { context: cx.clone(), ..Outcome::default() };
                o.context.protocol_values = Some(Arc::new(crate::grpc::values(payload, msg_type.as_ref())));
                if let Some(b) = judge::body(app, &view, &mut o) {
                    let judged = Box::new((method.clone(), uri.clone(), headers.clone()));
                    return Some(crate::grpc::Stop { grpc_status: crate::grpc::status_for(b.status, true), code: b.code.clone(), block: Some((b, judged)) });
                }
                for (stage, reason) in &o.monitored {
                    tracing::warn!(request_id = id.as_str(), app = %app.cfg.name, stage, reason = %reason, "monitor: would have blocked");
                }
                None
            });
            let inspect = crate::grpc::Inspect::new(
                client,
                app.cfg.inspect_body as usize,
                app.cfg.oversize == Oversize::Stream,
                encoding.clone(),
                judge,
                shared.clone(),
                id,
            );
            ReqBody::Grpc(Box::new(inspect))
        }
    };
    (Request::from_parts(parts, body), Some(shared))
}

pub(crate) enum H2Outcome {
    Done(Box<Response<RespBody>>),
    /// The `https://` upstream speaks HTTP/1.1: the request goes that way.
    Http1(Box<Request<UpBody>>),
}

/// Send a request to an HTTP/2 upstream. For a streamed gRPC call, a message blocked before the
/// response began is answered as a block (recorded like any); one blocked later ends the
/// response with the block's trailers.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn send_h2(
    app: &App,
    req: Request<crate::h2up::ReqBody>,
    set_host: &dyn Fn(&mut http::HeaderMap, &HeaderValue),
    shared: Option<Rc<crate::grpc::Shared>>,
    grpc_call: bool,
    id: RequestId,
    rec: &mut Record,
) -> H2Outcome {
    use crate::h2up::{ReqBody, SendFailure};
    let send = crate::h2up::send(&app.upstream, req, set_host, &app.metrics);
    tokio::pin!(send);
    let stopped = async {
        match &shared {
            Some(s) => std::future::poll_fn(|cx| s.poll_stop(cx)).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(stopped);
    let sent = tokio::select! {
        biased;
        stop = &mut stopped => {
            return H2Outcome::Done(Box::new(match stop.block {
                Some((b, judged)) => problem::blocked(b, id, rec, (&judged.0, &judged.1, &judged.2)),
                None => crate::grpc_answer::response(stop.grpc_status, &stop.code, id.as_str()),
            }));
        }
        r = &mut send => r,
    };
    // A stop may have come with the failure it caused.
    if let (Err(_), Some(s)) = (&sent, &shared) {
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        if let std::task::Poll::Ready(stop) = s.poll_stop(&mut cx) {
            return H2Outcome::Done(Box::new(match stop.block {
                Some((b, judged)) => problem::blocked(b, id, rec, (&judged.0, &judged.1, &judged.2)),
                None => crate::grpc_answer::response(stop.grpc_status, &stop.code, id.as_str()),
            }));
        }
    }
    let up = &app.upstream;
    let (resp, stream) = match sent {
        Ok(sent) => sent,
        Err(SendFailure::Http1(req)) => {
            let (parts, body) = (*req).into_parts();
            let body = match body {
                ReqBody::Full(b) => UpBody::Full(b),
                ReqBody::Stream(b) => b,
                ReqBody::Grpc(_) => {
                    tracing::warn!(request_id = id.as_str(), upstream = %up.cfg.name, "gRPC call to an upstream that does not offer HTTP/2");
                    return H2Outcome::Done(Box::new(problem::response(
                        StatusCode::BAD_GATEWAY,
                        code::UPSTREAM_UNAVAILABLE,
                        "Upstream does not speak HTTP/2",
                        id.as_str(),
                        &[],
                    )));
                }
            };
            return H2Outcome::Http1(Box::new(Request::from_parts(parts, body)));
        }
        Err(SendFailure::Upstream(e)) => {
            return H2Outcome::Done(Box::new(match e {
                UpstreamError::Timeout => {
                    rec.upstream_error = Some(UpstreamErr::Timeout);
                    tracing::warn!(request_id = id.as_str(), upstream = %up.cfg.name, "upstream timed out");
                    problem::response(StatusCode::GATEWAY_TIMEOUT, code::UPSTREAM_TIMEOUT, "Upstream timed out", id.as_str(), &[])
                }
                UpstreamError::Connect(e) => {
                    tracing::warn!(request_id = id.as_str(), upstream = %up.cfg.name, error = %e, "upstream unavailable");
                    problem::response(StatusCode::BAD_GATEWAY, code::UPSTREAM_UNAVAILABLE, "Upstream unavailable", id.as_str(), &[])
                }
                UpstreamError::ClientBody(e) => {
                    tracing::info!(request_id = id.as_str(), error = %e, "client body failed while streaming upstream");
                    problem::response(StatusCode::BAD_REQUEST, code::BAD_REQUEST, "Request body could not be read", id.as_str(), &[])
                }
                UpstreamError::Protocol(e) => {
                    rec.upstream_error = Some(UpstreamErr::Protocol);
                    tracing::warn!(request_id = id.as_str(), upstream = %up.cfg.name, error = %e, "upstream failed");
                    problem::response(StatusCode::BAD_GATEWAY, code::UPSTREAM_ERROR, "Upstream failed", id.as_str(), &[])
                }
            }));
        }
    };
    rec.upstream_status = Some(resp.status().as_u16());
    let (mut parts, body) = resp.into_parts();
    headers::strip_hop_by_hop(&mut parts.headers);
    parts.version = Version::HTTP_11;
    let grpc = if grpc_call { Some((shared.unwrap_or_default(), id)) } else { None };
    let mut body = crate::grpc::H2Body::new(body, grpc);
    body.hold(stream);
    H2Outcome::Done(Box::new(Response::from_parts(parts, RespBody::H2(Box::new(body)))))
}
