//! The logic behind `palisade events query` and `palisade events tail`: read events from an
//! SQLite file or from a running Palisade's admin API (`/api/events`, `/api/stats`), and print
//! them as text lines or JSON.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::path::PathBuf;
use std::time::Duration;

use crate::model::{format_time, now_ms, Event};
use crate::query::{Filter, Page, Reader, Stats, Store};
use crate::{Error, ErrorKind};

/// Where events are read from.
#[derive(Clone, Debug)]
pub enum Source {
    Db(PathBuf),
    /// A `postgres://` URL (the PostgreSQL sink's database).
    Postgres(String),
    /// `http://127.0.0.1:9901` and the admin token, if any.
    Admin {
        url: String,
        token: Option<String>,
    },
}

impl Source {
    fn store(&self) -> Store {
        match self {
            Source::Postgres(url) => Store::Postgres(url.clone()),
            Source::Db(p) => Store::Sqlite(p.clone()),
            Source::Admin { .. } => Store::Sqlite(PathBuf::new()),
        }
    }

    /// A page of events for the filter pairs (the API's query parameters).
    pub fn page(&self, pairs: &[(String, String)]) -> Result<Page, Error> {
        match self {
            Source::Db(_) | Source::Postgres(_) => {
                let f = Filter::from_pairs(pairs.iter().map(|(k, v)| (k.as_str(), v.clone())), now_ms())?;
                Reader::open_store(&self.store()).and_then(|r| r.events(&f)).map_err(store_error)
            }
            Source::Admin { url, token } => {
                let body = http_get(url, &format!("/api/events?{}", encode_pairs(pairs)), token.as_deref())?;
                serde_json::from_slice(&body).map_err(|e| Error::caused_by(ErrorKind::Admin, format!("unexpected answer from {url}: {e}"), e))
            }
        }
    }

    /// Detection exclusions suggested for the events of the filter pairs
    /// ([`crate::suggest::report`]).
    pub fn suggest(&self, pairs: &[(String, String)], min_requests: u64, max_events: usize) -> Result<crate::suggest::Report, Error> {
        match self {
            Source::Db(_) | Source::Postgres(_) => {
                let f = Filter::from_pairs(pairs.iter().map(|(k, v)| (k.as_str(), v.clone())), now_ms())?;
                Reader::open_store(&self.store()).and_then(|r| crate::suggest::report(&r, &f, max_events, min_requests, None)).map_err(store_error)
            }
            Source::Admin { url, token } => {
                let mut pairs = pairs.to_vec();
                pairs.push(("min".into(), min_requests.to_string()));
                pairs.push(("max".into(), max_events.to_string()));
                let body = http_get(url, &format!("/api/suggest?{}", encode_pairs(&pairs)), token.as_deref())?;
                serde_json::from_slice(&body).map_err(|e| Error::caused_by(ErrorKind::Admin, format!("unexpected answer from {url}: {e}"), e))
            }
        }
    }

    pub fn stats(&self, pairs: &[(String, String)], buckets: u32, top: usize) -> Result<Stats, Error> {
        match self {
            Source::Db(_) | Source::Postgres(_) => {
                let f = Filter::from_pairs(pairs.iter().map(|(k, v)| (k.as_str(), v.clone())), now_ms())?;
                Reader::open_store(&self.store()).and_then(|r| r.stats(&f, now_ms(), buckets, top)).map_err(store_error)
            }
            Source::Admin { url, token } => {
                let mut pairs = pairs.to_vec();
                pairs.push(("buckets".into(), buckets.to_string()));
                pairs.push(("top".into(), top.to_string()));
                let body = http_get(url, &format!("/api/stats?{}", encode_pairs(&pairs)), token.as_deref())?;
                serde_json::from_slice(&body).map_err(|e| Error::caused_by(ErrorKind::Admin, format!("unexpected answer from {url}: {e}"), e))
            }
        }
    }
}

/// One line per event: time, verdict, status, app, client IP, method, host+path, reason,
/// location, fragment.
pub fn line(e: &Event) -> String {
    let mut s = format!("{} {:<7} {} {} {} {} {}{}", format_time(e.time_ms), e.verdict.as_str(), e.status, e.app, e.client_ip, e.method, e.host, e.path);
    if let Some(q) = &e.query {
        s.push('?');
        s.push_str(q);
    }
    if !e.reason.is_empty() {
        s.push_str(&format!(" {}", e.reason));
    }
    if let Some(l) = &e.location {
        s.push_str(&format!(" at {l}"));
    }
    if let Some(f) = &e.fragment {
        s.push_str(&format!(" {:?}", f));
    }
    if e.count > 1 {
        s.push_str(&format!(" (x{} until {})", e.count, format_time(e.last_ms)));
    }
    s.push_str(&format!(" id={}", e.request_id));
    s
}

/// Print events, one text line or one JSON object per line.
pub fn print(out: &mut dyn Write, events: &[Event], json: bool) -> std::io::Result<()> {
    for e in events {
        if json {
            serde_json::to_writer(&mut *out, e)?;
            writeln!(out)?;
        } else {
            writeln!(out, "{}", line(e))?;
        }
    }
    out.flush()
}

/// `palisade events tail`: the last `last` events, then (when `follow`) new ones as they come,
/// polling every `interval`. Returns when `follow` is false, or on error.
pub fn tail(src: &Source, pairs: &[(String, String)], last: usize, follow: bool, interval: Duration, json: bool, out: &mut dyn Write) -> Result<(), Error> {
    let mut first = pairs.to_vec();
    first.push(("limit".into(), last.max(1).to_string()));
    let page = src.page(&first)?;
    let mut events = page.events;
    events.reverse();
    let mut after = events.last().and_then(|e| e.id).unwrap_or(0);
    if last > 0 {
        print(out, &events, json).map_err(output_error)?;
    }
    if !follow {
        return Ok(());
    }
    if after == 0 {
        // Nothing matched yet: follow from the newest row there is.
        after = src.page(&[("limit".into(), "1".into())]).ok().and_then(|p| p.events.first().and_then(|e| e.id)).unwrap_or(0);
    }
    loop {
        #[allow(clippy::disallowed_methods)] // the CLI's own thread, not a worker's event loop
        std::thread::sleep(interval);
        let mut q = pairs.to_vec();
        q.push(("after".into(), after.to_string()));
        q.push(("limit".into(), "1000".into()));
        let page = src.page(&q)?;
        if let Some(id) = page.events.last().and_then(|e| e.id) {
            after = id;
        }
        print(out, &page.events, json).map_err(output_error)?;
    }
}

fn store_error(e: crate::SinkError) -> Error {
    Error::caused_by(ErrorKind::Store, e.to_string(), e)
}

fn output_error(e: std::io::Error) -> Error {
    Error::caused_by(ErrorKind::Output, e.to_string(), e)
}

fn encode_pairs(pairs: &[(String, String)]) -> String {
    let enc = |s: &str| {
        let mut o = String::new();
        for b in s.bytes() {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                o.push(b as char);
            } else {
                o.push_str(&format!("%{b:02X}"));
            }
        }
        o
    };
    pairs.iter().map(|(k, v)| format!("{}={}", enc(k), enc(v))).collect::<Vec<_>>().join("&")
}

/// A minimal blocking HTTP/1.1 GET for the CLI (`http://host:port` only; the admin listener is
/// plain HTTP on loopback or behind the operator's own TLS).
pub fn http_get(base: &str, path_and_query: &str, token: Option<&str>) -> Result<Vec<u8>, Error> {
    let err = |m: String| Error::new(ErrorKind::Admin, m);
    let rest = base.strip_prefix("http://").ok_or_else(|| err(format!("`{base}`: the admin URL must start with http://")))?;
    let authority = rest.trim_end_matches('/');
    if authority.contains('/') {
        return Err(err(format!("`{base}`: give the admin listener's address only, e.g. http://127.0.0.1:9901")));
    }
    let io = |e: std::io::Error| Error::caused_by(ErrorKind::Admin, format!("{authority}: {e}"), e);
    let addrs: Vec<SocketAddr> = authority.to_socket_addrs().map_err(io)?.collect();
    let addr = addrs.first().ok_or_else(|| err(format!("{authority}: no address")))?;
    #[allow(clippy::disallowed_methods)] // the CLI, not the request path
    let mut s = TcpStream::connect_timeout(addr, Duration::from_secs(5)).map_err(io)?;
    s.set_read_timeout(Some(Duration::from_secs(30))).map_err(io)?;
    let auth = token.map(|t| format!("Authorization: Bearer {t}\r\n")).unwrap_or_default();
    write!(s, "GET {path_and_query} HTTP/1.1\r\nHost: {authority}\r\n{auth}Connection: close\r\nAccept: application/json\r\n\r\n").map_err(io)?;
    let mut raw = Vec::new();
    s.take(64 * 1024 * 1024).read_to_end(&mut raw).map_err(io)?;
    let end = raw.windows(4).position(|w| w == b"\r\n\r\n").ok_or_else(|| err(format!("{authority}: incomplete response")))?;
    let head = String::from_utf8_lossy(&raw[..end]).to_string();
    let mut body = raw[end + 4..].to_vec();
    let status: u16 = head.get(9..12).and_then(|s| s.parse().ok()).ok_or_else(|| err(format!("{authority}: bad status line")))?;
    if head.lines().any(|l| l.to_ascii_lowercase().starts_with("transfer-encoding:") && l.to_ascii_lowercase().contains("chunked")) {
        body = dechunk(&body).ok_or_else(|| err(format!("{authority}: bad chunked body")))?;
    }
    if status != 200 {
        return Err(err(format!("{authority}: HTTP {status}: {}", String::from_utf8_lossy(&body).trim())));
    }
    Ok(body)
}

fn dechunk(mut b: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let eol = b.windows(2).position(|w| w == b"\r\n")?;
        let size = usize::from_str_radix(std::str::from_utf8(&b[..eol]).ok()?.split(';').next()?.trim(), 16).ok()?;
        b = &b[eol + 2..];
        if size == 0 {
            return Some(out);
        }
        out.extend_from_slice(b.get(..size)?);
        b = b.get(size + 2..)?;
    }
}
