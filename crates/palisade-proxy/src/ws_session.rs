//! A WebSocket connection the upstream accepted, between the handshake and the relay
//! (`websocket.rs`): the upstream connection, the client's upgrade, the session the relay
//! judges messages in, and the client IP's connection slot.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::BytesMut;
use http::{HeaderMap, Method, Uri};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::io::Stream;
use crate::metrics::{AppMetrics, WsClose};
use crate::request_id::RequestId;
use crate::snapshot::Snapshot;

/// A handshake the upstream accepted: what the relay needs, carried by the response
/// ([`crate::resp_body::RespBody::Upgrade`]) to the connection that will relay.
pub struct Pending {
    pub(crate) upstream: UpIo,
    pub(crate) upstream_buf: BytesMut,
    pub(crate) client: Option<hyper::upgrade::OnUpgrade>,
    pub(crate) session: Session,
}

/// The upstream side of a relayed connection: a connection of its own (an HTTP/1.1 upgrade),
/// or a stream of an HTTP/2 connection (an extended CONNECT, RFC 8441), which keeps that
/// connection from being closed as idle while it lives.
pub(crate) enum UpIo {
    Conn(Stream),
    H2 { io: TokioIo<hyper::upgrade::Upgraded>, _stream: crate::h2up::StreamGuard },
}

impl AsyncRead for UpIo {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            UpIo::Conn(s) => Pin::new(s).poll_read(cx, buf),
            UpIo::H2 { io: s, .. } => Pin::new(s).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for UpIo {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            UpIo::Conn(s) => Pin::new(s).poll_write(cx, buf),
            UpIo::H2 { io: s, .. } => Pin::new(s).poll_write(cx, buf),
        }
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            UpIo::Conn(s) => Pin::new(s).poll_flush(cx),
            UpIo::H2 { io: s, .. } => Pin::new(s).poll_flush(cx),
        }
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            UpIo::Conn(s) => Pin::new(s).poll_shutdown(cx),
            UpIo::H2 { io: s, .. } => Pin::new(s).poll_shutdown(cx),
        }
    }
}

pub(crate) struct Session {
    pub(crate) snap: Arc<Snapshot>,
    pub(crate) app_idx: usize,
    pub(crate) metrics: Arc<AppMetrics>,
    pub(crate) cfg: palisade_config::WebSocketConfig,
    /// Client text messages are held and judged.
    pub(crate) inspect: bool,
    pub(crate) judged: (Method, Uri, HeaderMap, Option<String>),
    pub(crate) context: palisade_core::Context,
    pub(crate) id: RequestId,
    pub(crate) client_ip: IpAddr,
    pub(crate) tls: bool,
    /// Extensions were negotiated: RSV bits are theirs.
    pub(crate) extensions: bool,
    pub(crate) events: Option<palisade_events::EventSender>,
    pub(crate) _slot: IpSlot,
    /// Why the connection ended, counted when the session goes (whichever way it goes: a
    /// connection whose relay never started counts as `client_gone`).
    pub(crate) closed: std::cell::Cell<WsClose>,
}

impl Drop for Session {
    fn drop(&mut self) {
        self.metrics.ws_closed(self.closed.get());
    }
}

static PER_IP: Mutex<Option<HashMap<(String, IpAddr), u64>>> = Mutex::new(None);

/// One open WebSocket connection of a client IP for an app; released when dropped.
pub struct IpSlot {
    pub(crate) key: (String, IpAddr),
}

impl IpSlot {
    pub(crate) fn take(app: &str, ip: IpAddr, max: u64) -> Option<IpSlot> {
        let mut m = PER_IP.lock().unwrap_or_else(|e| e.into_inner());
        let map = m.get_or_insert_with(HashMap::new);
        let key = (app.to_string(), ip);
        let n = map.entry(key.clone()).or_insert(0);
        if *n >= max {
            return None;
        }
        *n += 1;
        Some(IpSlot { key })
    }
}

impl Drop for IpSlot {
    fn drop(&mut self) {
        let mut m = PER_IP.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(map) = m.as_mut() {
            if let Some(n) = map.get_mut(&self.key) {
                *n -= 1;
                if *n == 0 {
                    map.remove(&self.key);
                }
            }
        }
    }
}
