//! One stream type for every client and upstream connection, so that the HTTP code is not
//! generic over transports (no dynamic dispatch, one instantiation).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpStream, UnixStream};
use tokio_rustls::server::TlsStream;

pub enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
    Tls(Box<TlsStream<TcpStream>>),
    /// A TLS connection to an `https://` upstream.
    TlsClient(Box<tokio_rustls::client::TlsStream<TcpStream>>),
    /// Bytes already read (e.g. while sniffing for the HTTP/2 preface) replayed first.
    Rewind(Box<Rewind>),
}

pub struct Rewind {
    pub prefix: bytes::Bytes,
    pub inner: Stream,
}

macro_rules! each {
    ($self:ident, $s:ident => $e:expr) => {
        match $self.get_mut() {
            Stream::Tcp($s) => {
                let $s = Pin::new($s);
                $e
            }
            Stream::Unix($s) => {
                let $s = Pin::new($s);
                $e
            }
            Stream::Tls($s) => {
                let $s = Pin::new(&mut **$s);
                $e
            }
            Stream::TlsClient($s) => {
                let $s = Pin::new(&mut **$s);
                $e
            }
            Stream::Rewind(r) => {
                let $s = Pin::new(&mut r.inner);
                $e
            }
        }
    };
}

impl AsyncRead for Stream {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        if let Stream::Rewind(r) = self.as_ref().get_ref() {
            if !r.prefix.is_empty() {
                let Stream::Rewind(r) = self.get_mut() else { unreachable!() };
                let n = r.prefix.len().min(buf.remaining());
                buf.put_slice(&r.prefix.split_to(n));
                return Poll::Ready(Ok(()));
            }
        }
        each!(self, s => s.poll_read(cx, buf))
    }
}

impl AsyncWrite for Stream {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        each!(self, s => s.poll_write(cx, buf))
    }

    fn poll_write_vectored(self: Pin<&mut Self>, cx: &mut Context<'_>, bufs: &[io::IoSlice<'_>]) -> Poll<io::Result<usize>> {
        each!(self, s => s.poll_write_vectored(cx, bufs))
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Stream::Tcp(s) => s.is_write_vectored(),
            Stream::Unix(s) => s.is_write_vectored(),
            Stream::Tls(s) => s.is_write_vectored(),
            Stream::TlsClient(s) => s.is_write_vectored(),
            Stream::Rewind(r) => r.inner.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        each!(self, s => s.poll_flush(cx))
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        each!(self, s => s.poll_shutdown(cx))
    }
}
