//! A minimal blocking Redis client (RESP2) for the shared rate-limit sync: connect with a
//! timeout, optional `AUTH` and `SELECT`, `EVALSHA` with a fallback to `EVAL`, and replies
//! parsed strictly with bounded sizes. It runs on the sync thread only, never on a request
//! path. Why not the `redis` crate: the sync needs one command (a script over a batch of keys)
//! on one connection from one thread; the crate with its tokio connection manager adds a few
//! dozen crates to the build for that, and its async machinery would have to run on a runtime
//! of its own anyway, since the request path must never wait for Redis.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use crate::{Error, ErrorKind};

/// A parsed `redis://[:password@]host[:port][/db]` URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub host: String,
    pub port: u16,
    pub password: Option<String>,
    pub db: u32,
}

/// `redis://[user:password@]host[:port][/db]`.
pub fn parse_url(url: &str) -> Result<Target, Error> {
    let rest = url.strip_prefix("redis://").ok_or_else(|| fail(format!("{url}: expected redis://host:port")))?;
    let (auth, rest) = match rest.rsplit_once('@') {
        Some((a, r)) => (Some(a), r),
        None => (None, rest),
    };
    let (hostport, db) = match rest.split_once('/') {
        Some((h, "")) => (h, 0),
        Some((h, d)) => (h, d.parse().map_err(|e| caused(format!("{url}: the database must be a number"), e))?),
        None => (rest, 0),
    };
    let (host, port) = match hostport.rsplit_once(':') {
        Some((h, p)) if !h.is_empty() && !p.contains(']') => (h, p.parse().map_err(|e| caused(format!("{url}: invalid port"), e))?),
        _ => (hostport, 6379),
    };
    if host.is_empty() {
        return Err(fail(format!("{url}: no host")));
    }
    let password = auth.map(|a| a.rsplit_once(':').map_or(a, |(_, p)| p).to_string()).filter(|p| !p.is_empty());
    Ok(Target { host: host.trim_matches(['[', ']']).to_string(), port, password, db })
}

/// An error about Redis, with nothing underneath.
fn fail(message: String) -> Error {
    Error::new(ErrorKind::Redis, message)
}

/// An error about Redis caused by `cause`.
fn caused(message: String, cause: impl std::error::Error + Send + Sync + 'static) -> Error {
    Error::caused_by(ErrorKind::Redis, message, cause)
}

/// A RESP reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    Status(String),
    Error(String),
    Int(i64),
    Bulk(Option<Vec<u8>>),
    Array(Option<Vec<Reply>>),
}

impl Reply {
    pub fn as_u64(&self) -> Option<u64> {
        match self {
            Reply::Int(i) => u64::try_from(*i).ok(),
            Reply::Bulk(Some(b)) => std::str::from_utf8(b).ok()?.parse().ok(),
            _ => None,
        }
    }
}

const MAX_BULK: usize = 64 * 1024 * 1024;
const MAX_ARRAY: usize = 1_000_000;

pub struct Conn {
    reader: BufReader<TcpStream>,
}

impl Conn {
    pub fn connect(t: &Target, timeout: Duration) -> Result<Conn, Error> {
        let addr = (t.host.as_str(), t.port)
            .to_socket_addrs()
            .map_err(|e| caused(format!("{}:{}: {e}", t.host, t.port), e))?
            .next()
            .ok_or_else(|| fail("no address".into()))?;
        let s = TcpStream::connect_timeout(&addr, timeout).map_err(|e| caused(format!("connect {addr}: {e}"), e))?;
        s.set_read_timeout(Some(timeout)).map_err(|e| caused(e.to_string(), e))?;
        s.set_write_timeout(Some(timeout)).map_err(|e| caused(e.to_string(), e))?;
        let _ = s.set_nodelay(true);
        let mut c = Conn { reader: BufReader::new(s) };
        if let Some(p) = &t.password {
            c.expect_ok(&[b"AUTH", p.as_bytes()])?;
        }
        if t.db != 0 {
            c.expect_ok(&[b"SELECT", t.db.to_string().as_bytes()])?;
        }
        Ok(c)
    }

    fn expect_ok(&mut self, args: &[&[u8]]) -> Result<(), Error> {
        match self.call(args)? {
            Reply::Status(_) => Ok(()),
            Reply::Error(e) => Err(fail(e)),
            other => Err(fail(format!("unexpected reply {other:?}"))),
        }
    }

    /// Send one command and read its reply.
    pub fn call(&mut self, args: &[&[u8]]) -> Result<Reply, Error> {
        let mut out = Vec::with_capacity(16 + args.iter().map(|a| a.len() + 16).sum::<usize>());
        out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
        for a in args {
            out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            out.extend_from_slice(a);
            out.extend_from_slice(b"\r\n");
        }
        self.reader.get_mut().write_all(&out).map_err(|e| caused(format!("write: {e}"), e))?;
        read_reply(&mut self.reader, 0)
    }

    pub fn ping(&mut self) -> Result<(), Error> {
        self.expect_ok(&[b"PING"])
    }

    /// `EVALSHA`, loading the script with `EVAL` when the server does not have it.
    pub fn eval(&mut self, script: &str, sha1: &str, keys: &[&[u8]], args: &[&[u8]]) -> Result<Reply, Error> {
        let nkeys = keys.len().to_string();
        let mut a: Vec<&[u8]> = Vec::with_capacity(3 + keys.len() + args.len());
        a.push(b"EVALSHA");
        a.push(sha1.as_bytes());
        a.push(nkeys.as_bytes());
        a.extend_from_slice(keys);
        a.extend_from_slice(args);
        match self.call(&a)? {
            Reply::Error(e) if e.starts_with("NOSCRIPT") => {
                a[0] = b"EVAL";
                a[1] = script.as_bytes();
                self.call(&a)
            }
            r => Ok(r),
        }
    }
}

fn read_line<R: BufRead>(r: &mut R) -> Result<String, Error> {
    let mut line = Vec::new();
    let n = r.by_ref().take(64 * 1024).read_until(b'\n', &mut line).map_err(|e| caused(format!("read: {e}"), e))?;
    if n == 0 {
        return Err(fail("connection closed".into()));
    }
    if !line.ends_with(b"\r\n") {
        return Err(fail("malformed reply line".into()));
    }
    line.truncate(line.len() - 2);
    String::from_utf8(line).map_err(|e| caused("reply line is not UTF-8".into(), e))
}

fn read_reply<R: BufRead>(r: &mut R, depth: usize) -> Result<Reply, Error> {
    if depth > 8 {
        return Err(fail("reply nested too deeply".into()));
    }
    let line = read_line(r)?;
    let (kind, rest) = line.split_at_checked(1).ok_or_else(|| fail("empty reply line".into()))?;
    let num = || rest.parse::<i64>().map_err(|e| caused(format!("bad number in reply: {rest:?}"), e));
    Ok(match kind {
        "+" => Reply::Status(rest.to_string()),
        "-" => Reply::Error(rest.to_string()),
        ":" => Reply::Int(num()?),
        "$" => {
            let n = num()?;
            if n < 0 {
                Reply::Bulk(None)
            } else {
                let n = usize::try_from(n).map_err(|e| caused("bad length".into(), e))?;
                if n > MAX_BULK {
                    return Err(fail("bulk reply too large".into()));
                }
                let mut b = vec![0; n + 2];
                r.read_exact(&mut b).map_err(|e| caused(format!("read: {e}"), e))?;
                if !b.ends_with(b"\r\n") {
                    return Err(fail("malformed bulk reply".into()));
                }
                b.truncate(n);
                Reply::Bulk(Some(b))
            }
        }
        "*" => {
            let n = num()?;
            if n < 0 {
                Reply::Array(None)
            } else {
                let n = usize::try_from(n).map_err(|e| caused("bad length".into(), e))?;
                if n > MAX_ARRAY {
                    return Err(fail("array reply too large".into()));
                }
                let mut v = Vec::with_capacity(n.min(1024));
                for _ in 0..n {
                    v.push(read_reply(r, depth + 1)?);
                }
                Reply::Array(Some(v))
            }
        }
        _ => return Err(fail(format!("unknown reply type {kind:?}"))),
    })
}

/// SHA-1 in hex, for `EVALSHA` (a tiny implementation: scripts are hashed once at start).
pub fn sha1_hex(data: &[u8]) -> String {
    let d = ring::digest::digest(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY, data);
    d.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        assert_eq!(parse_url("redis://127.0.0.1:6380").unwrap(), Target { host: "127.0.0.1".into(), port: 6380, password: None, db: 0 });
        assert_eq!(parse_url("redis://:pw@localhost/2").unwrap(), Target { host: "localhost".into(), port: 6379, password: Some("pw".into()), db: 2 });
        assert_eq!(parse_url("redis://[::1]:7000").unwrap().host, "::1");
        assert!(parse_url("http://x").is_err());
        assert!(parse_url("redis://h:port").is_err());
        assert!(parse_url("redis://h/x").is_err());
    }

    #[test]
    fn replies() {
        let mut r = std::io::Cursor::new(&b"*3\r\n:5\r\n$3\r\nabc\r\n$-1\r\n+OK\r\n-ERR x\r\n"[..]);
        assert_eq!(read_reply(&mut r, 0).unwrap(), Reply::Array(Some(vec![Reply::Int(5), Reply::Bulk(Some(b"abc".to_vec())), Reply::Bulk(None)])));
        assert_eq!(read_reply(&mut r, 0).unwrap(), Reply::Status("OK".into()));
        assert_eq!(read_reply(&mut r, 0).unwrap(), Reply::Error("ERR x".into()));
        for bad in [&b""[..], b"?x\r\n", b":x\r\n", b"$5\r\nab\r\n", b"*2\r\n:1\r\n", b"+OK\n"] {
            assert!(read_reply(&mut std::io::Cursor::new(bad), 0).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn sha1() {
        assert_eq!(sha1_hex(b"abc"), "a9993e364706816aba3e25717850c26c9cd0d89d");
    }
}
