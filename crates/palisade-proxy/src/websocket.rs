//! WebSocket proxying: the handshake, forwarded once every stage has allowed it, and the relay
//! of frames both ways with limits and optional inspection of the client's text messages.
//!
//! - HTTP/1.1: a `GET` with `Connection: Upgrade` and `Upgrade: websocket`. HTTP/2: an RFC 8441
//!   extended CONNECT (`:protocol = websocket`), judged by the stages as the `GET` it stands for.
//! - Upstream, whatever the client spoke: an HTTP/2 upstream whose SETTINGS allow extended
//!   CONNECT gets one, as a stream of the worker's connection ([`crate::h2up::websocket`]);
//!   any other gets an HTTP/1.1 upgrade on a fresh connection of its own (never pooled; TLS
//!   offering only `http/1.1` for `https://`), with a `Sec-WebSocket-Key` of Palisade's own
//!   for an HTTP/2 client, whose accept value the upstream must return. An HTTP/2 upstream
//!   without extended CONNECT is sent that upgrade too, to the same target, and the log says
//!   so (and why, when it fails). Anything but an acceptance (a `101` with a valid accept
//!   value, a `2xx` to an extended CONNECT) is answered as an ordinary response.
//! - Frames are read as they pass (headers only, payloads copied through untouched), so the
//!   limits hold whatever `inspect` says: a message larger than `max_message` closes with 1009,
//!   a malformed frame with 1002. With `inspect: text`, the client's text messages are held
//!   until complete and judged by the stages ([`palisade_core::Stage::check_message`]): a block
//!   closes with 1008 and records an event located at `ws.message`. Compression extensions are
//!   then not offered to the upstream (compressed messages could not be judged).
//! - A connection closes (1001) after `idle_timeout` without a frame either way and after
//!   `max_lifetime`. It keeps the configuration snapshot of its handshake: a reload applies to
//!   connections opened after it. On shutdown, open connections get the drain time
//!   (`server.shutdown_timeout`, less a margin for the close handshake) to finish, then a 1001
//!   close frame both ways.
//!
//! Close codes sent by Palisade: to the side at fault the code of the fault (1002, 1007, 1008,
//! 1009); to the other side the same code when the client was at fault, 1014 (bad gateway)
//! when the upstream was.
//!
//! The parts: `handshake` (the client's side, [`forward`]), `connect` (extended CONNECT to an
//! HTTP/2 upstream), `upgrade` (the HTTP/1.1 upgrade on a connection of its own), `frames` (the
//! frame reader and its close codes), `relay` (both directions, the limits and Palisade's
//! closes), `inspect` (judging the client's text messages).

mod connect;
mod frames;
mod handshake;
mod inspect;
mod relay;
mod upgrade;

use std::time::Duration;

use http::{Method, Request, Version};
use tokio::sync::watch;

use crate::body::ClientBody;
use crate::raw_head::RawRequestHead;

pub use crate::ws_session::Pending;
pub use frames::{close_frame, Parsed, Pump, Violation};
pub use handshake::{forward, handshake_done, serve_h1, Handshake};
pub use relay::relay;

/// Problem codes of refused handshakes.
pub const TOO_MANY: &str = "websocket.too_many_connections";
pub const DISABLED: &str = "websocket.disabled";

const GUID: &[u8] = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
/// Largest body of a non-101 answer to a handshake relayed to the client.
const MAX_REFUSAL_BODY: usize = 1024 * 1024;
/// How long Palisade's own close frames may take to go out.
const CLOSE_WRITE: Duration = Duration::from_secs(1);

/// How the client asked for the upgrade.
pub enum Kind {
    /// HTTP/1.1 `Upgrade: websocket`.
    H1,
    /// HTTP/2 extended CONNECT; the stream is handed over once the `200` is sent.
    H2(hyper::upgrade::OnUpgrade),
}

/// Whether `req` is a WebSocket handshake; an HTTP/2 extended CONNECT becomes the `GET` it
/// stands for (so that the stages judge what an HTTP/1.1 client would have sent), its
/// upgrade taken from the request.
pub fn detect(req: &mut Request<ClientBody>, raw: Option<&RawRequestHead>) -> Option<Kind> {
    if req.version() == Version::HTTP_2 {
        let ws =
            req.method() == Method::CONNECT && req.extensions().get::<hyper::ext::Protocol>().is_some_and(|p| p.as_str().eq_ignore_ascii_case("websocket"));
        if !ws {
            return None;
        }
        *req.method_mut() = Method::GET;
        return Some(Kind::H2(hyper::upgrade::on(req)));
    }
    if req.method() != Method::GET || req.version() != Version::HTTP_11 {
        return None;
    }
    let (mut upgrade, mut connection) = (false, false);
    let mut see = |name: &[u8], value: &[u8]| {
        if name.eq_ignore_ascii_case(b"upgrade") {
            upgrade |= has_token(value, b"websocket");
        } else if name.eq_ignore_ascii_case(b"connection") {
            connection |= has_token(value, b"upgrade");
        }
    };
    match raw {
        Some(r) => r.fields().for_each(|(n, v)| see(n, v)),
        None => req.headers().iter().for_each(|(n, v)| see(n.as_str().as_bytes(), v.as_bytes())),
    }
    (upgrade && connection).then_some(Kind::H1)
}

/// Whether a comma-separated header value holds `token` (case-insensitive).
fn has_token(value: &[u8], token: &[u8]) -> bool {
    value.split(|b| *b == b',').any(|t| t.trim_ascii().eq_ignore_ascii_case(token))
}

/// `Sec-WebSocket-Accept` for a key (RFC 6455 §4.2.2): base64 of the SHA-1 of key and GUID.
pub fn accept_key(key: &[u8]) -> String {
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY);
    ctx.update(key);
    ctx.update(GUID);
    base64(ctx.finish().as_ref())
}

/// Standard base64 with padding (RFC 4648 §4).
fn base64(data: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for c in data.chunks(3) {
        let n = (u32::from(c[0]) << 16) | (u32::from(*c.get(1).unwrap_or(&0)) << 8) | u32::from(*c.get(2).unwrap_or(&0));
        out.push(A[(n >> 18) as usize & 63] as char);
        out.push(A[(n >> 12) as usize & 63] as char);
        out.push(if c.len() > 1 { A[(n >> 6) as usize & 63] as char } else { '=' });
        out.push(if c.len() > 2 { A[n as usize & 63] as char } else { '=' });
    }
    out
}

fn random<const N: usize>() -> [u8; N] {
    use ring::rand::SecureRandom;
    let mut b = [0u8; N];
    if ring::rand::SystemRandom::new().fill(&mut b).is_err() {
        // No system randomness: masks and keys need not be secret, only varied.
        let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(7, |d| d.as_nanos());
        for (i, x) in b.iter_mut().enumerate() {
            *x = (t >> ((i % 16) * 8)) as u8 ^ (i as u8).wrapping_mul(151);
        }
    }
    b
}

// ---------------------------------------------------------------------------------------------
// Shutdown.

thread_local! {
    /// Turns true when shutdown starts on this worker ([`shutdown_started`]).
    static SHUTDOWN: watch::Sender<bool> = watch::channel(false).0;
}

/// Shutdown has started on this worker: its WebSocket connections close (1001) once the drain
/// time has passed.
pub fn shutdown_started() {
    SHUTDOWN.with(|s| s.send_replace(true));
}

#[cfg(test)]
mod tests;
