//! The relay: frames both ways until both sides are done or Palisade closes (a violation, a
//! blocked message, the idle timeout, the maximum lifetime, shutdown), with the close codes
//! each side gets and the metrics that follow the connection while it lives.

use std::borrow::Cow;
use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use bytes::{Buf, BytesMut};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::time::Instant;

use super::frames::{close_frame, Parsed, Pump, Violation};
use super::inspect::judge_message;
use super::{CLOSE_WRITE, SHUTDOWN};
use crate::metrics::WsClose;
use crate::ws_session::Pending;

/// Read buffer growth per read.
const READ_CHUNK: usize = 32 * 1024;

/// How a relay ended.
enum End {
    /// Both sides are done (closed their streams).
    Done,
    /// Palisade closes: the reason, the code for the client and the code for the upstream.
    Close(WsClose, u16, u16, Cow<'static, str>),
    Io,
}

/// One direction's progress: `Ok(true)` once its reader ended and its writer is shut.
fn poll_dir<R, W>(
    p: &mut Pump,
    r: &mut R,
    w: &mut W,
    cx: &mut Context<'_>,
    active: &mut bool,
    judge: &mut dyn FnMut(&str) -> Result<(), Violation>,
) -> Poll<Result<(), Result<Violation, std::io::Error>>>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    if p.done {
        return Poll::Ready(Ok(()));
    }
    loop {
        while !p.first.is_empty() {
            let n = ready!(Pin::new(&mut *w).poll_write(cx, &p.first)).map_err(Err)?;
            if n == 0 {
                return Poll::Ready(Err(Err(std::io::ErrorKind::WriteZero.into())));
            }
            p.first.advance(n);
        }
        while p.ready > 0 {
            let n = ready!(Pin::new(&mut *w).poll_write(cx, &p.rbuf[..p.ready])).map_err(Err)?;
            if n == 0 {
                return Poll::Ready(Err(Err(std::io::ErrorKind::WriteZero.into())));
            }
            p.rbuf.advance(n);
            p.ready -= n;
        }
        match p.parse().map_err(Ok)? {
            Parsed::Judge => {
                judge(p.held_text()).map_err(Ok)?;
                p.release();
                continue;
            }
            Parsed::Flush => continue,
            Parsed::NeedMore => {}
        }
        if p.ready > 0 {
            continue;
        }
        if p.rbuf.capacity() - p.rbuf.len() < 1024 {
            p.rbuf.reserve(READ_CHUNK);
        }
        let n = ready!(tokio_util::io::poll_read_buf(Pin::new(&mut *r), cx, &mut p.rbuf)).map_err(Err)?;
        if n == 0 {
            ready!(Pin::new(&mut *w).poll_shutdown(cx)).map_err(Err)?;
            p.done = true;
            return Poll::Ready(Ok(()));
        }
        p.bytes += n as u64;
        *active = true;
    }
}

/// Relay frames between the client and the upstream until both are done or Palisade closes.
pub async fn relay<C: AsyncRead + AsyncWrite + Unpin>(mut client: C, leftover: BytesMut, p: Pending) {
    let Pending { mut upstream, upstream_buf, session: s, .. } = p;
    let app = &s.snap.apps[s.app_idx];
    let inspect = s.inspect;
    let mut c2u = Pump::new(true, inspect, s.extensions, s.cfg.max_message, leftover);
    let mut u2c = Pump::new(false, false, s.extensions, s.cfg.max_message, upstream_buf);
    // What the metrics have been told so far: they follow the connection while it lives.
    let mut told = [0u64; 4];
    let started = Instant::now();
    let lifetime = tokio::time::sleep_until(started + s.cfg.max_lifetime);
    let idle = tokio::time::sleep_until(started + s.cfg.idle_timeout);
    // On shutdown: the drain time, less a moment for the close frames before the worker stops.
    let drain = s.snap.config.server.shutdown_timeout;
    let drain = drain.saturating_sub((drain / 4).min(Duration::from_secs(1)));
    let mut shutdown = SHUTDOWN.with(|x| x.subscribe());
    let going_away = async move {
        if shutdown.wait_for(|v| *v).await.is_err() {
            std::future::pending::<()>().await;
        }
        tokio::time::sleep(drain).await;
    };
    tokio::pin!(lifetime, idle, going_away);
    // The handshake's context; what stages add for one message goes with it.
    let mut cx = s.context.clone();
    let mut judge = |text: &str| -> Result<(), Violation> { judge_message(&s, &mut cx, text) };
    let mut last_active = started;
    let end = poll_fn(|cx| {
        let mut active = false;
        let c = match poll_dir(&mut c2u, &mut client, &mut upstream, cx, &mut active, &mut judge) {
            Poll::Ready(Err(Ok(v))) => return Poll::Ready(close_for(v, true)),
            Poll::Ready(Err(Err(_))) => return Poll::Ready(End::Io),
            other => other.is_ready(),
        };
        let u = match poll_dir(&mut u2c, &mut upstream, &mut client, cx, &mut active, &mut |_| Ok(())) {
            Poll::Ready(Err(Ok(v))) => return Poll::Ready(close_for(v, false)),
            Poll::Ready(Err(Err(_))) => return Poll::Ready(End::Io),
            other => other.is_ready(),
        };
        if active {
            let now = [c2u.messages, c2u.bytes, u2c.messages, u2c.bytes];
            s.metrics.ws_traffic(now[0] - told[0], now[1] - told[1], now[2] - told[2], now[3] - told[3]);
            told = now;
        }
        // WebSocket does not half-close: once either side has ended its stream (everything
        // it sent was written on), or both close frames have gone through, the relay ends.
        let closed = c2u.close_seen && u2c.close_seen && c2u.ready == 0 && u2c.ready == 0 && c2u.first.is_empty() && u2c.first.is_empty();
        if c || u || closed {
            return Poll::Ready(End::Done);
        }
        let now = Instant::now();
        if active {
            last_active = now;
        }
        if lifetime.as_mut().poll(cx).is_ready() {
            return Poll::Ready(End::Close(WsClose::MaxLifetime, 1001, 1001, "max lifetime".into()));
        }
        if idle.as_mut().poll(cx).is_ready() {
            if now >= last_active + s.cfg.idle_timeout {
                return Poll::Ready(End::Close(WsClose::IdleTimeout, 1001, 1001, "idle timeout".into()));
            }
            idle.as_mut().reset(last_active + s.cfg.idle_timeout);
            let _ = idle.as_mut().poll(cx);
        }
        if going_away.as_mut().poll(cx).is_ready() {
            return Poll::Ready(End::Close(WsClose::Shutdown, 1001, 1001, "server shutting down".into()));
        }
        Poll::Pending
    })
    .await;
    let ended_by_a_side = matches!(end, End::Done);
    let reason = match end {
        End::Done | End::Io if c2u.close_seen || u2c.close_seen => WsClose::Normal,
        End::Done => {
            if c2u.done {
                WsClose::ClientGone
            } else {
                WsClose::UpstreamGone
            }
        }
        End::Io => WsClose::Io,
        End::Close(why, to_client, to_upstream, text) => {
            tracing::info!(request_id = s.id.as_str(), app = %app.cfg.name, close = ?why, to_client, to_upstream, reason = %text, "websocket closed by palisade");
            // Flush what is ready, then the close frames where no frame is half written.
            let flush = async {
                let _ = write_pending(&mut u2c, &mut client).await;
                let _ = write_pending(&mut c2u, &mut upstream).await;
                if u2c.at_boundary() {
                    let _ = client.write_all(&close_frame(to_client, &text, false)).await;
                }
                if c2u.at_boundary() {
                    let _ = upstream.write_all(&close_frame(to_upstream, &text, true)).await;
                }
                let _ = client.shutdown().await;
                let _ = upstream.shutdown().await;
            };
            let _ = tokio::time::timeout(CLOSE_WRITE, flush).await;
            why
        }
    };
    if ended_by_a_side {
        let _ = tokio::time::timeout(CLOSE_WRITE, async {
            let _ = client.shutdown().await;
            let _ = upstream.shutdown().await;
        })
        .await;
    }
    let now = [c2u.messages, c2u.bytes, u2c.messages, u2c.bytes];
    s.metrics.ws_traffic(now[0] - told[0], now[1] - told[1], now[2] - told[2], now[3] - told[3]);
    s.closed.set(reason);
    tracing::debug!(request_id = s.id.as_str(), close = ?reason, client_messages = c2u.messages, upstream_messages = u2c.messages, "websocket connection ended");
}

fn close_for(v: Violation, from_client: bool) -> End {
    let why = match (v.code, from_client) {
        // A stage's verdict: the policy code or the subprotocol's own (4000-4999).
        (1008 | 4000..=4999, _) => WsClose::Blocked,
        (1009, true) => WsClose::TooBig,
        (1009, false) => WsClose::UpstreamTooBig,
        (1007, true) => WsClose::InvalidUtf8,
        (_, true) => WsClose::ProtocolError,
        (_, false) => WsClose::UpstreamProtocolError,
    };
    if from_client {
        End::Close(why, v.code, v.code, v.reason)
    } else {
        End::Close(why, 1014, v.code, v.reason)
    }
}

async fn write_pending<W: AsyncWrite + Unpin>(p: &mut Pump, w: &mut W) -> std::io::Result<()> {
    w.write_all(&p.first).await?;
    p.first.clear();
    w.write_all(&p.rbuf[..p.ready]).await?;
    p.rbuf.advance(p.ready);
    p.ready = 0;
    Ok(())
}
