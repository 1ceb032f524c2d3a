//! HTTP/1 framing shared by the server side (`h1.rs`) and the upstream client (`client.rs`):
//! finding the end of a head, and decoding message bodies (length-delimited, chunked, or up to
//! the close of the connection) strictly: CRLF only, bounded chunk-size lines and trailers.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};

use crate::body_error::BodyError;
use crate::io::Stream;

/// Bytes read from a socket at a time while a large head accumulates.
pub const READ_CHUNK: usize = 16 * 1024;
/// Bytes read from a socket at a time while a message body streams through (a response body,
/// a request body read frame by frame): about what nginx's default proxy buffers take per read.
pub const BODY_READ: usize = 64 * 1024;
/// A connection's read buffer past this capacity is given up once empty between messages, so
/// that an idle connection keeps a head-sized buffer, not the last body's.
pub const IDLE_BUF_MAX: usize = 16 * 1024;
const MAX_CHUNK_LINE: usize = 1024;
const MAX_TRAILERS: usize = 8 * 1024;

/// Where a message body decoder stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodyState {
    /// This many bytes are left.
    Length(u64),
    Chunked(Chunk),
    /// The body runs until the peer closes (responses without a length only).
    UntilClose,
    Done,
    Failed,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Chunk {
    Size,
    Data(u64),
    DataEnd,
    Trailers(usize),
}

/// `n` in decimal, written at the end of `buf` (no formatting machinery).
pub fn decimal(mut n: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return &buf[i..];
        }
    }
}

/// Read more bytes of a head into `rbuf`. `Ok(0)` is end of stream.
pub fn poll_read_more(io: &mut Stream, rbuf: &mut BytesMut, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
    // Keep buffers small for heads (4 KiB reclaims in place once earlier frames are gone); grow
    // to READ_CHUNK only while a large message is being read.
    let spare = rbuf.capacity() - rbuf.len();
    if spare < 1024 {
        rbuf.reserve(if rbuf.len() >= 2048 { READ_CHUNK } else { 4096 });
    }
    tokio_util::io::poll_read_buf(Pin::new(io), cx, rbuf)
}

/// Read more bytes of a message body into `rbuf`, up to [`BODY_READ`] at a time. A body
/// drained frame by frame leaves `rbuf` empty after each frame: sized for heads, each read would
/// bring 4 KiB. The allocation is taken back in place once the frames split from it are gone
/// (a relayed frame is written before the next read), so a streamed body reuses one buffer.
pub fn poll_read_body(io: &mut Stream, rbuf: &mut BytesMut, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
    if rbuf.capacity() - rbuf.len() < BODY_READ / 4 {
        rbuf.reserve(BODY_READ);
    }
    tokio_util::io::poll_read_buf(Pin::new(io), cx, rbuf)
}

/// A read buffer that is empty between messages, shrunk back to nothing when a body made it
/// large (the next head read allocates a head-sized one).
pub fn shrink_idle(rbuf: &mut BytesMut) {
    if rbuf.is_empty() && rbuf.capacity() > IDLE_BUF_MAX {
        *rbuf = BytesMut::new();
    }
}

/// Write all of `bufs`, in order, with vectored writes (one syscall when the socket takes it
/// all); `bufs` is advanced past what was written, so the call can be polled again after
/// `Pending`. `moved` is called after each write that moved bytes.
pub fn poll_write_all<W: tokio::io::AsyncWrite + Unpin>(io: &mut W, cx: &mut Context<'_>, bufs: &mut [&[u8]], mut moved: impl FnMut()) -> Poll<io::Result<()>> {
    loop {
        let mut slices = [io::IoSlice::new(&[]); 4];
        let mut k = 0;
        for b in bufs.iter().filter(|b| !b.is_empty()) {
            if k == slices.len() {
                break;
            }
            slices[k] = io::IoSlice::new(b);
            k += 1;
        }
        if k == 0 {
            return Poll::Ready(Ok(()));
        }
        let n = std::task::ready!(Pin::new(&mut *io).poll_write_vectored(cx, &slices[..k]))?;
        if n == 0 {
            return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
        }
        moved();
        advance(bufs, n);
    }
}

/// Drop the first `n` bytes of `bufs` (taken in order).
fn advance(bufs: &mut [&[u8]], mut n: usize) {
    for b in bufs.iter_mut() {
        let take = n.min(b.len());
        *b = &b[take..];
        n -= take;
        if n == 0 {
            break;
        }
    }
}

/// Decode the next piece of body from `rbuf`: `Ok(Some(Some(data)))` is data,
/// `Ok(Some(None))` the end of the body, `Ok(None)` means more input is needed. Trailer fields
/// are dropped.
pub fn decode(state: &mut BodyState, rbuf: &mut BytesMut) -> Result<Option<Option<Bytes>>, BodyError> {
    decode_keeping_trailers(state, rbuf, None)
}

/// [`decode`], with a chunked body's trailer field lines (each with its CRLF, within the
/// trailer section's bound) appended to `trailers` when given.
pub fn decode_keeping_trailers(state: &mut BodyState, rbuf: &mut BytesMut, mut trailers: Option<&mut Vec<u8>>) -> Result<Option<Option<Bytes>>, BodyError> {
    loop {
        match *state {
            BodyState::Done => return Ok(Some(None)),
            BodyState::Failed => return Err(BodyError::Incomplete),
            BodyState::UntilClose => {
                if rbuf.is_empty() {
                    return Ok(None);
                }
                return Ok(Some(Some(rbuf.split().freeze())));
            }
            BodyState::Length(0) => {
                *state = BodyState::Done;
                return Ok(Some(None));
            }
            BodyState::Length(n) => {
                if rbuf.is_empty() {
                    return Ok(None);
                }
                let take = (n.min(rbuf.len() as u64)) as usize;
                *state = if n == take as u64 { BodyState::Done } else { BodyState::Length(n - take as u64) };
                return Ok(Some(Some(rbuf.split_to(take).freeze())));
            }
            BodyState::Chunked(Chunk::Size) => {
                let Some(nl) = memchr::memchr(b'\n', rbuf) else {
                    if rbuf.len() > MAX_CHUNK_LINE {
                        return Err(BodyError::Chunked("chunk size line too long"));
                    }
                    return Ok(None);
                };
                if nl > MAX_CHUNK_LINE {
                    return Err(BodyError::Chunked("chunk size line too long"));
                }
                let size = parse_chunk_size(&rbuf[..=nl])?;
                let _ = rbuf.split_to(nl + 1);
                *state = BodyState::Chunked(if size == 0 { Chunk::Trailers(0) } else { Chunk::Data(size) });
            }
            BodyState::Chunked(Chunk::Data(n)) => {
                if rbuf.is_empty() {
                    return Ok(None);
                }
                let take = (n.min(rbuf.len() as u64)) as usize;
                let rest = n - take as u64;
                *state = BodyState::Chunked(if rest == 0 { Chunk::DataEnd } else { Chunk::Data(rest) });
                return Ok(Some(Some(rbuf.split_to(take).freeze())));
            }
            BodyState::Chunked(Chunk::DataEnd) => {
                if rbuf.len() < 2 {
                    return Ok(None);
                }
                if &rbuf[..2] != b"\r\n" {
                    return Err(BodyError::Chunked("chunk data not followed by CRLF"));
                }
                let _ = rbuf.split_to(2);
                *state = BodyState::Chunked(Chunk::Size);
            }
            BodyState::Chunked(Chunk::Trailers(seen)) => {
                let Some(nl) = memchr::memchr(b'\n', rbuf) else {
                    if seen + rbuf.len() > MAX_TRAILERS {
                        return Err(BodyError::Chunked("trailers too large"));
                    }
                    return Ok(None);
                };
                if nl == 0 || rbuf[nl - 1] != b'\r' {
                    return Err(BodyError::Chunked("bare LF in trailers"));
                }
                if seen + nl + 1 > MAX_TRAILERS {
                    return Err(BodyError::Chunked("trailers too large"));
                }
                let line_len = nl + 1;
                let line = rbuf.split_to(line_len);
                if line_len > 2 {
                    if let Some(t) = trailers.as_deref_mut() {
                        t.extend_from_slice(&line);
                    }
                }
                // An empty line ends the body.
                *state = if line_len == 2 { BodyState::Done } else { BodyState::Chunked(Chunk::Trailers(seen + line_len)) };
            }
        }
    }
}

/// Parse a chunk-size line (ending in `\n`): hex digits, optional extensions, CRLF.
pub fn parse_chunk_size(line: &[u8]) -> Result<u64, BodyError> {
    if line.len() < 2 || line[line.len() - 2] != b'\r' {
        return Err(BodyError::Chunked("bare LF after chunk size"));
    }
    let line = &line[..line.len() - 2];
    let digits_end = line.iter().position(|b| !b.is_ascii_hexdigit()).unwrap_or(line.len());
    if digits_end == 0 {
        return Err(BodyError::Chunked("missing chunk size"));
    }
    if digits_end > 16 {
        return Err(BodyError::Chunked("chunk size too large"));
    }
    let mut size: u64 = 0;
    for &b in &line[..digits_end] {
        let d = (b as char).to_digit(16).unwrap_or(0) as u64;
        size = size.checked_mul(16).and_then(|s| s.checked_add(d)).ok_or(BodyError::Chunked("chunk size too large"))?;
    }
    let ext = &line[digits_end..];
    if !ext.is_empty() {
        let trimmed = ext.iter().position(|b| *b != b' ' && *b != b'\t').map_or(&ext[..0], |i| &ext[i..]);
        if trimmed.first() != Some(&b';') || trimmed.iter().any(|b| *b < 0x20 && *b != b'\t' || *b == 0x7f) {
            return Err(BodyError::Chunked("invalid chunk extension"));
        }
    }
    Ok(size)
}

/// Whether `v` is a valid `Host` field value (RFC 9110 §7.2: `uri-host [ ":" port ]`, with the
/// grammar of RFC 3986 §3.2.2-3.2.3): an IP-literal in brackets (an IPv6 address or an
/// IPvFuture), or a reg-name (which covers IPv4 addresses and DNS names) of unreserved,
/// percent-encoded and sub-delims characters; then an optional port of digits. Empty is valid
/// (RFC 9112 §3.2: the Host of a request without an authority). Spaces, `/`, `@`, `\` and other
/// delimiters or controls are not: `Host: local host` is a bad request, as nginx answers it.
pub fn valid_host(v: &[u8]) -> bool {
    let (host_ok, port) = if let Some(rest) = v.strip_prefix(b"[") {
        let Some(end) = rest.iter().position(|b| *b == b']') else { return false };
        let port = match &rest[end + 1..] {
            [] => &[][..],
            [b':', port @ ..] => port,
            _ => return false,
        };
        (ip_literal(&rest[..end]), port)
    } else {
        let (host, port) = match v.iter().position(|b| *b == b':') {
            Some(i) => (&v[..i], &v[i + 1..]),
            None => (v, &[][..]),
        };
        (reg_name(host), port)
    };
    host_ok && port.iter().all(u8::is_ascii_digit)
}

/// RFC 3986 `IP-literal` without its brackets: `IPv6address / IPvFuture`.
fn ip_literal(s: &[u8]) -> bool {
    if let [b'v' | b'V', rest @ ..] = s {
        // IPvFuture = "v" 1*HEXDIG "." 1*( unreserved / sub-delims / ":" )
        let Some(dot) = rest.iter().position(|b| *b == b'.') else { return false };
        let (ver, addr) = (&rest[..dot], &rest[dot + 1..]);
        return !ver.is_empty()
            && ver.iter().all(u8::is_ascii_hexdigit)
            && !addr.is_empty()
            && addr.iter().all(|b| unreserved(*b) || sub_delim(*b) || *b == b':');
    }
    std::str::from_utf8(s).ok().and_then(|t| t.parse::<std::net::Ipv6Addr>().ok()).is_some()
}

/// RFC 3986 `reg-name = *( unreserved / pct-encoded / sub-delims )`.
fn reg_name(s: &[u8]) -> bool {
    let mut i = 0;
    while i < s.len() {
        match s[i] {
            b'%' => {
                if !(i + 2 < s.len() && s[i + 1].is_ascii_hexdigit() && s[i + 2].is_ascii_hexdigit()) {
                    return false;
                }
                i += 3;
            }
            b if unreserved(b) || sub_delim(b) => i += 1,
            _ => return false,
        }
    }
    true
}

fn unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

fn sub_delim(b: u8) -> bool {
    matches!(b, b'!' | b'$' | b'&' | b'\'' | b'(' | b')' | b'*' | b'+' | b',' | b';' | b'=')
}

/// Find the end of a head (`\r\n\r\n`, or a bare-LF variant that parsing then rejects),
/// resuming from `scanned` so that a slow peer costs linear time.
///
/// The common case, a CRLF head, takes one vectorised substring search and one vectorised check
/// that no line before it ends in a bare LF; only otherwise are the lines walked one by one
/// (which finds the same end the walk alone would).
pub fn find_head_end(buf: &[u8], scanned: &mut usize) -> Option<usize> {
    find_head_end_checked(buf, scanned).map(|(end, _)| end)
}

/// [`find_head_end`], and whether the head is known to use CRLF only (`crlf_only(&buf[..end])`
/// holds: the common case, checked on the way); `false` means not known either way.
pub fn find_head_end_checked(buf: &[u8], scanned: &mut usize) -> Option<(usize, bool)> {
    static CRLFCRLF: std::sync::LazyLock<memchr::memmem::Finder<'static>> = std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"\r\n\r\n"));
    let from = scanned.saturating_sub(3);
    if let Some(i) = CRLFCRLF.find(&buf[from..]) {
        let end = from + i + 4;
        if crlf_only(&buf[..end]) {
            return Some((end, true));
        }
    }
    find_head_end_by_lines(buf, scanned).map(|end| (end, false))
}

fn find_head_end_by_lines(buf: &[u8], scanned: &mut usize) -> Option<usize> {
    let mut from = scanned.saturating_sub(3);
    while let Some(i) = memchr::memchr(b'\n', &buf[from..]) {
        let nl = from + i;
        if buf.get(nl + 1) == Some(&b'\n') {
            return Some(nl + 2);
        }
        if buf.get(nl + 1) == Some(&b'\r') && buf.get(nl + 2) == Some(&b'\n') {
            return Some(nl + 3);
        }
        from = nl + 1;
    }
    *scanned = buf.len();
    None
}

/// Whether a head uses CRLF everywhere (a bare LF is a request smuggling vector). Branch-free
/// over the bytes, so that it compiles to vector compares.
pub fn crlf_only(head: &[u8]) -> bool {
    match head.first() {
        None => return true,
        Some(b'\n') => return false,
        Some(_) => {}
    }
    let bare = head[1..].iter().zip(head).fold(0u8, |acc, (&b, &prev)| acc | (u8::from(b == b'\n') & u8::from(prev != b'\r')));
    bare == 0
}

/// Copies header lines of a parsed head into a new head: consecutive lines that the parsed head
/// already holds written exactly `name: value\r\n` go as one copy (the usual case), others are
/// written piece by piece. Offsets are into the parsed head.
#[derive(Default)]
pub struct LineRuns {
    /// The run of lines pending, as a range of the head.
    run: Option<(usize, usize)>,
}

impl LineRuns {
    /// Copy the line of the field whose name is at `n` (`nl` bytes) and value at `v` (`vl`).
    #[inline]
    pub fn keep(&mut self, head: &[u8], out: &mut Vec<u8>, (n, nl): (usize, usize), (v, vl): (usize, usize)) {
        let end = v + vl + 2;
        if v == n + nl + 2 && head[n + nl] == b':' && head[n + nl + 1] == b' ' && head.get(v + vl..end) == Some(b"\r\n") {
            match self.run {
                Some((a, b)) if b == n => self.run = Some((a, end)),
                _ => {
                    self.flush(head, out);
                    self.run = Some((n, end));
                }
            }
        } else {
            self.flush(head, out);
            out.extend_from_slice(&head[n..n + nl]);
            out.extend_from_slice(b": ");
            out.extend_from_slice(&head[v..v + vl]);
            out.extend_from_slice(b"\r\n");
        }
    }

    /// Write the pending run (before a line that is not copied, and at the end).
    #[inline]
    pub fn flush(&mut self, head: &[u8], out: &mut Vec<u8>) {
        if let Some((a, b)) = self.run.take() {
            out.extend_from_slice(&head[a..b]);
        }
    }
}

/// `name.eq_ignore_ascii_case(lit)` for a literal `lit` made of lowercase ASCII letters, digits
/// and `-` (header names), eight bytes at a time: a letter of `lit` matches either case, any
/// other byte only itself. Exact for any `name` (see the test against `eq_ignore_ascii_case`).
#[inline]
pub fn eq_lower(name: &[u8], lit: &[u8]) -> bool {
    debug_assert!(lit.iter().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-'));
    let n = lit.len();
    if name.len() != n {
        return false;
    }
    // The 0x20 bit is set in the mask at the bytes of `lit` that are letters (0x40 bit set);
    // digits and `-` have it clear there.
    #[inline(always)]
    fn word8(a: &[u8], l: &[u8], i: usize) -> bool {
        let a = u64::from_le_bytes([a[i], a[i + 1], a[i + 2], a[i + 3], a[i + 4], a[i + 5], a[i + 6], a[i + 7]]);
        let l = u64::from_le_bytes([l[i], l[i + 1], l[i + 2], l[i + 3], l[i + 4], l[i + 5], l[i + 6], l[i + 7]]);
        a | ((l >> 1) & 0x2020_2020_2020_2020) == l
    }
    #[inline(always)]
    fn word4(a: &[u8], l: &[u8], i: usize) -> bool {
        let a = u32::from_le_bytes([a[i], a[i + 1], a[i + 2], a[i + 3]]);
        let l = u32::from_le_bytes([l[i], l[i + 1], l[i + 2], l[i + 3]]);
        a | ((l >> 1) & 0x2020_2020) == l
    }
    if n >= 8 {
        let mut i = 0;
        while i + 8 <= n {
            if !word8(name, lit, i) {
                return false;
            }
            i += 8;
        }
        i == n || word8(name, lit, n - 8)
    } else if n >= 4 {
        word4(name, lit, 0) && word4(name, lit, n - 4)
    } else {
        name.eq_ignore_ascii_case(lit)
    }
}
