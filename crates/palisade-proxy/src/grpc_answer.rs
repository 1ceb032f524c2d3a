//! The answers Palisade makes to gRPC clients (a block, a limit, an upstream failure): a
//! Trailers-Only response with `grpc-status` and `grpc-message`, in the content type of the
//! call (gRPC or gRPC-Web).

use http::{header, HeaderValue, Response};

use crate::grpc::{message, status_for};
use crate::problem::Made;
use crate::request_id::RequestId;
use crate::resp_body::RespBody;

/// Marks a gRPC answer Palisade made (its content type follows the request's, see [`reshape`]).
#[derive(Clone, Copy, Debug)]
pub struct Answer;

/// A Trailers-Only gRPC response.
pub fn response(grpc_status: u8, code: &str, id: &str) -> Response<RespBody> {
    let mut resp = Response::new(RespBody::empty());
    resp.extensions_mut().insert(Answer);
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
    h.insert("grpc-status", HeaderValue::from(u16::from(grpc_status)));
    h.insert("grpc-message", message(code, id));
    resp
}

/// Re-shape a response Palisade made into the gRPC form, with the content type `ctype` (see
/// [`crate::grpc::answer_type`]; headers the stages set, such as `Retry-After`, are kept). Responses from
/// the upstream pass unchanged.
pub fn reshape(mut resp: Response<RespBody>, id: &RequestId, ctype: &'static str) -> Response<RespBody> {
    if resp.extensions().get::<Answer>().is_some() {
        resp.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(ctype));
        return resp;
    }
    let Some(made) = resp.extensions().get::<Made>().cloned() else { return resp };
    let grpc_status = status_for(resp.status(), made.blocked);
    let (parts, _) = resp.into_parts();
    let mut out = response(grpc_status, &made.code, id.as_str());
    out.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(ctype));
    for (name, value) in &parts.headers {
        if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH && name != header::CACHE_CONTROL {
            out.headers_mut().append(name.clone(), value.clone());
        }
    }
    out
}
