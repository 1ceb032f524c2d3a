//! Response judging: for apps whose stages validate upstream responses, the response body is
//! buffered up to the app's `inspect_response` limit, decoded when it is gzip- or
//! deflate-compressed (bounded by the same limit: a decompression bomb only costs the limit),
//! shown to the stages, and then sent on unchanged (the client gets the original bytes).

use bytes::{Bytes, BytesMut};
use http::HeaderMap;
use http_body::Body;
use palisade_body::coding::{inflate, Coding, Inflated};

use crate::body_error::BodyError;
use crate::resp_body::RespBody;
use crate::upstream::UpstreamBody;

/// A buffered response body, ready to be judged and then sent.
pub struct Buffered {
    /// What goes to the client: the whole body, or the buffered prefix followed by the rest.
    pub body: RespBody,
    /// The bytes the stages see (decoded when the encoding allows).
    pub judged: Bytes,
    /// Only a prefix was buffered (or decoded): the stages see part of the body.
    pub truncated: bool,
    /// Compressed with an encoding the proxy does not decode: the body is not judged.
    pub undecodable: bool,
}

/// Read up to `limit` bytes of `body`; its trailers, when the body ends within the limit,
/// follow the data to the client.
pub async fn buffer(mut body: UpstreamBody, headers: &HeaderMap, limit: u64) -> Result<Buffered, BodyError> {
    let (raw, complete, trailers) = read_head(&mut body, limit).await?;
    let send = if complete && trailers.is_none() {
        RespBody::Full(if raw.is_empty() { None } else { Some(raw.clone()) })
    } else {
        RespBody::Chained { head: if raw.is_empty() { None } else { Some(raw.clone()) }, trailers, rest: body }
    };
    let (judged, truncated, undecodable) = decode(headers, raw, limit, !complete);
    Ok(Buffered { body: send, judged, truncated, undecodable })
}

/// Read up to `limit` bytes of the body of an HTTP/2 upstream's response; its trailers, when
/// the body ends within the limit, follow the data to the client.
pub async fn buffer_h2(mut body: Box<crate::grpc::H2Body>, headers: &HeaderMap, limit: u64) -> Result<Buffered, BodyError> {
    let (raw, complete, trailers) = read_head(&mut *body, limit).await?;
    let send = RespBody::H2Buffered { head: if raw.is_empty() { None } else { Some(raw.clone()) }, trailers, rest: body };
    let (judged, truncated, undecodable) = decode(headers, raw, limit, !complete);
    Ok(Buffered { body: send, judged, truncated, undecodable })
}

/// The first `limit` bytes (or a little more: whole frames) of a body, whether it ended there,
/// and its trailers when it did.
async fn read_head<B: Body<Data = Bytes, Error = BodyError> + Unpin>(body: &mut B, limit: u64) -> Result<(Bytes, bool, Option<HeaderMap>), BodyError> {
    let mut buf = BytesMut::new();
    let mut trailers = None;
    let mut complete = true;
    loop {
        if body.is_end_stream() {
            break;
        }
        if buf.len() as u64 >= limit {
            complete = false;
            break;
        }
        let frame = std::future::poll_fn(|cx| std::pin::Pin::new(&mut *body).poll_frame(cx)).await;
        let Some(frame) = frame else { break };
        match frame?.into_data() {
            Ok(data) => buf.extend_from_slice(&data),
            Err(frame) => {
                if let Ok(t) = frame.into_trailers() {
                    trailers = Some(t);
                }
            }
        }
    }
    Ok((buf.freeze(), complete, trailers))
}

/// Remove `Content-Encoding` for judging. Returns the decoded bytes, whether they are only a
/// prefix of the body, and whether the encoding is unsupported.
pub fn decode(headers: &HeaderMap, raw: Bytes, limit: u64, raw_truncated: bool) -> (Bytes, bool, bool) {
    let encodings: Vec<String> = headers
        .get_all(http::header::CONTENT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|e| e.trim().to_ascii_lowercase())
        .filter(|e| !e.is_empty() && e != "identity")
        .collect();
    if encodings.is_empty() {
        return (raw, raw_truncated, false);
    }
    let mut data = raw;
    let mut truncated = raw_truncated;
    // Encodings are listed in the order they were applied: undo them last to first.
    for enc in encodings.iter().rev() {
        let Some(coding) = Coding::from_token(enc.as_bytes()) else { return (Bytes::new(), truncated, true) };
        let mut out = Vec::new();
        // A truncated compressed stream ends with an error; keep what was decoded.
        if inflate(&data, coding, usize::try_from(limit).unwrap_or(usize::MAX), &mut out) == Inflated::Corrupt && !truncated {
            return (Bytes::new(), false, true);
        }
        if out.len() as u64 > limit {
            out.truncate(limit as usize);
            truncated = true;
        }
        data = Bytes::from(out);
    }
    (data, truncated, false)
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    fn gz(data: &[u8]) -> Bytes {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(data).unwrap();
        Bytes::from(e.finish().unwrap())
    }

    fn with_encoding(enc: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(http::header::CONTENT_ENCODING, enc.parse().unwrap());
        h
    }

    #[test]
    fn identity_is_passed_through() {
        let (d, t, u) = decode(&HeaderMap::new(), Bytes::from_static(b"{}"), 100, false);
        assert_eq!((&d[..], t, u), (&b"{}"[..], false, false));
    }

    #[test]
    fn gzip_is_decoded() {
        let (d, t, u) = decode(&with_encoding("gzip"), gz(b"{\"status\":\"ok\"}"), 1000, false);
        assert_eq!((&d[..], t, u), (&b"{\"status\":\"ok\"}"[..], false, false));
    }

    #[test]
    fn a_decompression_bomb_costs_only_the_limit() {
        let bomb = gz(&vec![b'a'; 10 * 1024 * 1024]);
        assert!(bomb.len() < 64 * 1024);
        let (d, t, u) = decode(&with_encoding("gzip"), bomb, 4096, false);
        assert_eq!((d.len(), t, u), (4096, true, false));
    }

    #[test]
    fn unknown_and_corrupt_encodings_are_not_judged() {
        assert!(decode(&with_encoding("br"), Bytes::from_static(b"xx"), 100, false).2);
        assert!(decode(&with_encoding("gzip"), Bytes::from_static(b"not gzip"), 100, false).2);
    }

    #[test]
    fn stacked_encodings_are_undone_in_reverse() {
        let inner = gz(b"hello");
        let outer = gz(&inner);
        let (d, _, u) = decode(&with_encoding("gzip, gzip"), outer, 100, false);
        assert_eq!((&d[..], u), (&b"hello"[..], false));
    }
}
