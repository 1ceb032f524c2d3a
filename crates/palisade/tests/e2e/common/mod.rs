//! Shared harness for the end-to-end tests: the real server started in-process, scriptable
//! raw HTTP/1.1 upstreams (TCP and unix sockets) that can misbehave, and a raw HTTP/1.1 client.
//!
//! Every network wait in here is bounded by [`LIMIT`]; a test that would hang panics instead.
#![allow(dead_code)]

use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, UnixListener};
use tokio::sync::{mpsc, Notify};

/// Upper bound of every single wait in the suite.
pub const LIMIT: Duration = Duration::from_secs(10);

/// Await with the suite's time limit, panicking with the call site on timeout.
#[macro_export]
macro_rules! w {
    ($e:expr) => {
        match tokio::time::timeout($crate::common::LIMIT, $e).await {
            Ok(v) => v,
            Err(_) => panic!("timed out after {:?} at {}:{}", $crate::common::LIMIT, file!(), line!()),
        }
    };
}

pub async fn within<F: Future>(what: &str, f: F) -> F::Output {
    match tokio::time::timeout(LIMIT, f).await {
        Ok(v) => v,
        Err(_) => panic!("timed out after {LIMIT:?}: {what}"),
    }
}

/// Poll `cond` every 10ms until it holds (panics after [`LIMIT`]).
pub async fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + LIMIT;
    while !cond() {
        if tokio::time::Instant::now() > deadline {
            panic!("condition never became true within {LIMIT:?}: {what}");
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

// ---------------------------------------------------------------------------------------------
// Temporary directories
// ---------------------------------------------------------------------------------------------

/// A directory under the system temp dir, removed on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new() -> TempDir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let p = std::env::temp_dir().join(format!("pal-e2e-{}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed)));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).expect("create temp dir");
        TempDir(p)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    pub fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    pub fn write(&self, name: &str, contents: impl AsRef<[u8]>) -> PathBuf {
        let p = self.0.join(name);
        std::fs::write(&p, contents).expect("write temp file");
        p
    }
}

impl Default for TempDir {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

// ---------------------------------------------------------------------------------------------
// Configuration and the proxy under test
// ---------------------------------------------------------------------------------------------

/// A configuration: one worker (so connection reuse is observable), one loopback listener on an
/// ephemeral port, a short shutdown timeout, the given extra `server:` settings, then `rest`
/// (the `upstreams:` and `apps:` sections).
pub fn cfg(server: &[&str], rest: &str) -> String {
    let mut s = String::from("workers: 1\nlisten:\n  - addr: 127.0.0.1:0\nserver:\n");
    if !server.iter().any(|l| l.starts_with("shutdown_timeout")) {
        s.push_str("  shutdown_timeout: 500ms\n");
    }
    for l in server {
        s.push_str("  ");
        s.push_str(l);
        s.push('\n');
    }
    s.push_str(rest);
    s
}

/// `apps:` with a single catch-all app in front of `target`.
pub fn one_app(target: &str) -> String {
    format!("apps:\n  - name: app\n    upstream: {target}\n")
}

pub fn parse(yaml: &str, dir: &Path) -> palisade_config::Config {
    palisade_config::parse_str(yaml, "test.yaml", dir).unwrap_or_else(|e| panic!("test configuration is invalid:\n{e}\n---\n{yaml}"))
}

/// The real server, started in-process. Shut down (gracefully) on drop.
pub struct Proxy {
    running: Option<palisade_proxy::Running>,
    /// The first listener's bound address.
    pub addr: SocketAddr,
    pub addrs: Vec<SocketAddr>,
    pub dir: TempDir,
}

impl Proxy {
    pub fn start(yaml: &str) -> Proxy {
        Self::start_in(yaml, TempDir::new())
    }

    /// Start with relative paths in the configuration resolved against `dir`.
    pub fn start_in(yaml: &str, dir: TempDir) -> Proxy {
        let config = parse(yaml, dir.path());
        let running = palisade_proxy::start(config, palisade::stages::factory(palisade::stages::Use::Serve)).unwrap_or_else(|e| panic!("start failed: {e}"));
        let addrs = running.listen_addrs.clone();
        Proxy { addr: addrs[0], addrs, running: Some(running), dir }
    }

    pub fn running(&self) -> &palisade_proxy::Running {
        self.running.as_ref().expect("proxy already stopped")
    }

    /// Take the running server out (to shut it down from another thread).
    pub fn take(&mut self) -> palisade_proxy::Running {
        self.running.take().expect("proxy already stopped")
    }

    /// Parse (must succeed) and reload.
    pub fn reload(&self, yaml: &str) -> Result<u64, palisade_config::ConfigErrors> {
        self.running().reload(parse(yaml, self.dir.path()))
    }

    pub fn snapshot(&self) -> Arc<palisade_proxy::Snapshot> {
        self.running().snapshot()
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        if let Some(r) = self.running.take() {
            r.shutdown();
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Scriptable upstreams
// ---------------------------------------------------------------------------------------------

/// Values of every header called `name` (any case), in order; names are stored lower-cased.
fn header_all<'a>(headers: &'a [(String, String)], name: &str) -> Vec<&'a str> {
    let name = name.to_ascii_lowercase();
    headers.iter().filter(|(k, _)| *k == name).map(|(_, v)| v.as_str()).collect()
}

/// A request as the upstream received it.
#[derive(Clone, Debug)]
pub struct Req {
    /// Index of the upstream connection it came on (0 for the first accepted connection).
    pub conn: usize,
    pub method: String,
    pub target: String,
    pub version: String,
    /// Lower-cased names, in order.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub raw_head: String,
}

impl Req {
    pub fn header(&self, name: &str) -> Option<&str> {
        header_all(&self.headers, name).into_iter().next()
    }

    pub fn header_all(&self, name: &str) -> Vec<&str> {
        header_all(&self.headers, name)
    }

    pub fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or("")
    }
}

/// What the upstream does after reading a request.
pub enum Step {
    Write(Vec<u8>),
    Sleep(Duration),
    /// Wait until the test releases it.
    Wait(Arc<Notify>),
    /// Half-close and stop (FIN).
    Close,
    /// Abort the connection with a RST (SO_LINGER 0) — a plain close on unix sockets.
    Reset,
    /// Keep the connection open and never answer.
    Hang,
}

pub type Handler = Arc<dyn Fn(&Req) -> Vec<Step> + Send + Sync>;

pub fn handler(f: impl Fn(&Req) -> Vec<Step> + Send + Sync + 'static) -> Handler {
    Arc::new(f)
}

/// A complete `200 OK` response with a Content-Length body.
pub fn ok(body: &str) -> Vec<u8> {
    response(200, &[("Content-Type", "text/plain")], body.as_bytes())
}

pub fn response(status: u16, headers: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
    let mut out = format!("HTTP/1.1 {status} X\r\n").into_bytes();
    for (k, v) in headers {
        out.extend_from_slice(format!("{k}: {v}\r\n").as_bytes());
    }
    out.extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
    out.extend_from_slice(body);
    out
}

/// A blocking HTTP/1.1 server on its own thread, for servers that must answer while the test's
/// runtime is blocked (a proxy's start waiting for a JWKS fetch, `palisade check`).
/// `answer(path)` gives the status and the JSON body of each request (the connection is then
/// closed), or `None` to hold the connection open without answering. Serves until dropped,
/// at most 60 s.
pub struct ThreadServer {
    pub url: String,
    stop: Arc<std::sync::atomic::AtomicBool>,
}

impl ThreadServer {
    pub fn start(mut answer: impl FnMut(&str) -> Option<(u16, Vec<u8>)> + Send + 'static) -> ThreadServer {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stop2 = stop.clone();
        std::thread::spawn(move || {
            let mut held = Vec::new();
            let deadline = std::time::Instant::now() + Duration::from_secs(60);
            while !stop2.load(Ordering::Relaxed) && std::time::Instant::now() < deadline {
                let Ok((mut c, _)) = listener.accept() else {
                    #[allow(clippy::disallowed_methods)] // a test thread, not an event loop
                    std::thread::sleep(Duration::from_millis(5));
                    continue;
                };
                let _ = c.set_nonblocking(false);
                let _ = c.set_read_timeout(Some(Duration::from_secs(2)));
                let mut head = Vec::new();
                let mut buf = [0u8; 4096];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match c.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let text = String::from_utf8_lossy(&head);
                match answer(text.split(' ').nth(1).unwrap_or("")) {
                    Some((status, body)) => {
                        let _ = c.write_all(&response(status, &[("Content-Type", "application/json"), ("Connection", "close")], &body));
                    }
                    None => held.push(c),
                }
            }
        });
        ThreadServer { url, stop }
    }
}

impl Drop for ThreadServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// A handler answering every request with `200 OK` and `body`.
pub fn reply(body: &'static str) -> Handler {
    handler(move |_| vec![Step::Write(ok(body))])
}

pub struct Upstream {
    pub addr: Option<SocketAddr>,
    pub path: Option<PathBuf>,
    accepts: Arc<AtomicUsize>,
    rx: mpsc::UnboundedReceiver<Req>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Upstream {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Upstream {
    /// A TCP upstream on an ephemeral loopback port.
    pub async fn tcp(h: Handler) -> Upstream {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind upstream");
        let addr = listener.local_addr().unwrap();
        let accepts = Arc::new(AtomicUsize::new(0));
        let (tx, rx) = mpsc::unbounded_channel();
        let acc = accepts.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((s, _)) = listener.accept().await else { continue };
                let conn = acc.fetch_add(1, Ordering::SeqCst);
                let (h, tx) = (h.clone(), tx.clone());
                tokio::spawn(async move {
                    if let Some(s) = serve_upstream_conn(s, conn, h, tx).await {
                        #[allow(deprecated)]
                        let _ = s.set_linger(Some(Duration::ZERO));
                        drop(s);
                    }
                });
            }
        });
        Upstream { addr: Some(addr), path: None, accepts, rx, task }
    }

    /// A unix socket upstream at `path`.
    pub async fn unix(path: PathBuf, h: Handler) -> Upstream {
        let _ = std::fs::remove_file(&path);
        let listener = UnixListener::bind(&path).expect("bind unix upstream");
        let accepts = Arc::new(AtomicUsize::new(0));
        let (tx, rx) = mpsc::unbounded_channel();
        let acc = accepts.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((s, _)) = listener.accept().await else { continue };
                let conn = acc.fetch_add(1, Ordering::SeqCst);
                let (h, tx) = (h.clone(), tx.clone());
                tokio::spawn(async move {
                    let _ = serve_upstream_conn(s, conn, h, tx).await;
                });
            }
        });
        Upstream { addr: None, path: Some(path), accepts, rx, task }
    }

    /// The target as written in a configuration.
    pub fn url(&self) -> String {
        match (&self.addr, &self.path) {
            (Some(a), _) => format!("http://{a}"),
            (None, Some(p)) => format!("unix:{}", p.display()),
            _ => unreachable!(),
        }
    }

    /// Connections accepted so far.
    pub fn accepts(&self) -> usize {
        self.accepts.load(Ordering::SeqCst)
    }

    /// The next complete request received (waits, bounded).
    pub async fn next_req(&mut self) -> Req {
        within("upstream request", self.rx.recv()).await.expect("upstream channel closed")
    }

    /// A request already received, if any.
    pub fn try_req(&mut self) -> Option<Req> {
        self.rx.try_recv().ok()
    }

    /// Every request received so far.
    pub fn drain(&mut self) -> Vec<Req> {
        let mut v = Vec::new();
        while let Some(r) = self.try_req() {
            v.push(r);
        }
        v
    }
}

/// Serve requests on one upstream connection. Returns the stream when a reset was asked for.
async fn serve_upstream_conn<S: AsyncRead + AsyncWrite + Unpin>(mut s: S, conn: usize, h: Handler, tx: mpsc::UnboundedSender<Req>) -> Option<S> {
    let mut buf = Vec::new();
    loop {
        let req = read_request(&mut s, &mut buf, conn).await?;
        let steps = h(&req);
        let _ = tx.send(req);
        for step in steps {
            match step {
                Step::Write(b) => {
                    if s.write_all(&b).await.is_err() {
                        return None;
                    }
                    let _ = s.flush().await;
                }
                Step::Sleep(d) => tokio::time::sleep(d).await,
                Step::Wait(n) => n.notified().await,
                Step::Close => {
                    let _ = s.shutdown().await;
                    return None;
                }
                Step::Reset => return Some(s),
                Step::Hang => std::future::pending::<()>().await,
            }
        }
    }
}

pub fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() || hay.len() < needle.len() {
        return None;
    }
    hay.windows(needle.len()).position(|w| w == needle)
}

async fn read_more<S: AsyncRead + Unpin>(s: &mut S, buf: &mut Vec<u8>) -> bool {
    let mut tmp = [0u8; 16 * 1024];
    match s.read(&mut tmp).await {
        Ok(0) | Err(_) => false,
        Ok(n) => {
            buf.extend_from_slice(&tmp[..n]);
            true
        }
    }
}

async fn read_request<S: AsyncRead + Unpin>(s: &mut S, buf: &mut Vec<u8>, conn: usize) -> Option<Req> {
    let end = loop {
        if let Some(i) = find(buf, b"\r\n\r\n") {
            break i + 4;
        }
        if !read_more(s, buf).await {
            return None;
        }
    };
    let raw: Vec<u8> = buf.drain(..end).collect();
    let raw_head = String::from_utf8_lossy(&raw).to_string();
    let mut lines = raw_head.split("\r\n");
    let mut first = lines.next()?.splitn(3, ' ');
    let method = first.next()?.to_string();
    let target = first.next()?.to_string();
    let version = first.next()?.to_string();
    let headers =
        lines.filter(|l| !l.is_empty()).filter_map(|l| l.split_once(':')).map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string())).collect();
    let mut req = Req { conn, method, target, version, headers, body: Vec::new(), raw_head: raw_head.clone() };
    let chunked = req.header("transfer-encoding").is_some_and(|v| v.to_ascii_lowercase().contains("chunked"));
    if chunked {
        loop {
            let line_end = loop {
                if let Some(i) = find(buf, b"\r\n") {
                    break i;
                }
                if !read_more(s, buf).await {
                    return None;
                }
            };
            let line = String::from_utf8_lossy(&buf[..line_end]).to_string();
            buf.drain(..line_end + 2);
            let size = usize::from_str_radix(line.split(';').next().unwrap_or("").trim(), 16).ok()?;
            if size == 0 {
                loop {
                    let e = loop {
                        if let Some(i) = find(buf, b"\r\n") {
                            break i;
                        }
                        if !read_more(s, buf).await {
                            return None;
                        }
                    };
                    buf.drain(..e + 2);
                    if e == 0 {
                        break;
                    }
                }
                break;
            }
            while buf.len() < size + 2 {
                if !read_more(s, buf).await {
                    return None;
                }
            }
            req.body.extend_from_slice(&buf[..size]);
            buf.drain(..size + 2);
        }
    } else if let Some(cl) = req.header("content-length") {
        let n: usize = cl.parse().ok()?;
        while buf.len() < n {
            if !read_more(s, buf).await {
                return None;
            }
        }
        req.body = buf.drain(..n).collect();
    }
    Some(req)
}

/// A loopback port with nothing listening on it.
pub fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

// ---------------------------------------------------------------------------------------------
// Raw HTTP/1.1 client
// ---------------------------------------------------------------------------------------------

/// A response as the client received it.
#[derive(Clone, Debug, Default)]
pub struct Resp {
    pub status: u16,
    pub raw_head: String,
    /// Lower-cased names, in order.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// A chunked body's trailer fields: lower-cased names, in order.
    pub trailers: Vec<(String, String)>,
    /// Whether the body arrived complete according to its framing.
    pub complete: bool,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<&str> {
        header_all(&self.headers, name).into_iter().next()
    }

    pub fn header_all(&self, name: &str) -> Vec<&str> {
        header_all(&self.headers, name)
    }

    pub fn trailer(&self, name: &str) -> Option<&str> {
        header_all(&self.trailers, name).into_iter().next()
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).to_string()
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("body is not JSON ({e}): {}", self.dump()))
    }

    pub fn dump(&self) -> String {
        format!("{}{}", self.raw_head, self.text())
    }
}

pub struct Conn<S = TcpStream> {
    pub s: S,
    buf: Vec<u8>,
}

impl Conn<TcpStream> {
    pub async fn connect(addr: SocketAddr) -> Conn<TcpStream> {
        let s = within("connect", TcpStream::connect(addr)).await.expect("connect to proxy");
        s.set_nodelay(true).unwrap();
        Conn { s, buf: Vec::new() }
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> Conn<S> {
    pub fn new(s: S) -> Conn<S> {
        Conn { s, buf: Vec::new() }
    }

    pub async fn send(&mut self, data: impl AsRef<[u8]>) {
        within("write", self.s.write_all(data.as_ref())).await.expect("write to proxy");
        let _ = within("flush", self.s.flush()).await;
    }

    /// Write, ignoring errors (the server may already have closed).
    pub async fn send_lossy(&mut self, data: impl AsRef<[u8]>) {
        let _ = within("write", self.s.write_all(data.as_ref())).await;
    }

    /// Read more bytes; false on end of stream or reset.
    async fn fill(&mut self) -> bool {
        let mut tmp = [0u8; 16 * 1024];
        match within("read", self.s.read(&mut tmp)).await {
            Ok(0) | Err(_) => false,
            Ok(n) => {
                self.buf.extend_from_slice(&tmp[..n]);
                true
            }
        }
    }

    /// Bytes received and not consumed yet.
    pub fn pending(&self) -> &[u8] {
        &self.buf
    }

    /// Read until `needle` has been received (true) or the stream ended (false). Nothing is
    /// consumed.
    pub async fn read_until(&mut self, needle: &[u8]) -> bool {
        loop {
            if find(&self.buf, needle).is_some() {
                return true;
            }
            if !self.fill().await {
                return false;
            }
        }
    }

    /// The next response head; `None` if the stream ended first.
    pub async fn head(&mut self) -> Option<Resp> {
        let end = loop {
            if let Some(i) = find(&self.buf, b"\r\n\r\n") {
                break i + 4;
            }
            if !self.fill().await {
                return None;
            }
        };
        let raw: Vec<u8> = self.buf.drain(..end).collect();
        let raw_head = String::from_utf8_lossy(&raw).to_string();
        let mut lines = raw_head.split("\r\n");
        let status_line = lines.next().unwrap_or("");
        assert!(status_line.starts_with("HTTP/1.1 "), "bad status line: {raw_head:?}");
        let status = status_line[9..12].parse().unwrap_or_else(|_| panic!("bad status line: {raw_head:?}"));
        let headers =
            lines.filter(|l| !l.is_empty()).filter_map(|l| l.split_once(':')).map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string())).collect();
        Some(Resp { status, raw_head, headers, body: Vec::new(), trailers: Vec::new(), complete: false })
    }

    /// Read the body of `r` according to its framing (`head_request`: the request was HEAD).
    pub async fn body(&mut self, r: &mut Resp, head_request: bool) {
        if head_request || r.status / 100 == 1 || r.status == 204 || r.status == 304 {
            r.complete = true;
            return;
        }
        let chunked = r.header("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked"));
        if chunked {
            loop {
                let line_end = loop {
                    if let Some(i) = find(&self.buf, b"\r\n") {
                        break i;
                    }
                    if !self.fill().await {
                        return;
                    }
                };
                let line = String::from_utf8_lossy(&self.buf[..line_end]).to_string();
                let size = usize::from_str_radix(line.split(';').next().unwrap_or("").trim(), 16).unwrap_or_else(|_| panic!("bad chunk size line {line:?}"));
                self.buf.drain(..line_end + 2);
                if size == 0 {
                    // Trailer fields, up to an empty line.
                    loop {
                        while find(&self.buf, b"\r\n").is_none() {
                            if !self.fill().await {
                                return;
                            }
                        }
                        let e = find(&self.buf, b"\r\n").unwrap();
                        let line = String::from_utf8_lossy(&self.buf[..e]).to_string();
                        self.buf.drain(..e + 2);
                        if line.is_empty() {
                            r.complete = true;
                            return;
                        }
                        let (name, value) = line.split_once(':').unwrap_or_else(|| panic!("bad trailer line {line:?}"));
                        r.trailers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
                    }
                }
                while self.buf.len() < size + 2 {
                    if !self.fill().await {
                        r.body.extend_from_slice(&self.buf);
                        self.buf.clear();
                        return;
                    }
                }
                r.body.extend_from_slice(&self.buf[..size]);
                assert_eq!(&self.buf[size..size + 2], b"\r\n", "chunk not followed by CRLF");
                self.buf.drain(..size + 2);
            }
        } else if let Some(cl) = r.header("content-length") {
            let n: usize = cl.parse().expect("content-length");
            while self.buf.len() < n {
                if !self.fill().await {
                    r.body = std::mem::take(&mut self.buf);
                    return;
                }
            }
            r.body = self.buf.drain(..n).collect();
            r.complete = true;
        } else {
            // Delimited by close.
            while self.fill().await {}
            r.body = std::mem::take(&mut self.buf);
            r.complete = true;
        }
    }

    /// A full response, which must arrive complete.
    pub async fn response(&mut self) -> Resp {
        self.response_to("GET").await
    }

    pub async fn response_to(&mut self, method: &str) -> Resp {
        let mut r = self.head().await.unwrap_or_else(|| panic!("connection closed before a response head; got {:?}", String::from_utf8_lossy(&self.buf)));
        self.body(&mut r, method == "HEAD").await;
        assert!(r.complete, "response body incomplete: {}", r.dump());
        r
    }

    /// Send a request and read its complete response.
    pub async fn roundtrip(&mut self, raw: impl AsRef<[u8]>) -> Resp {
        let raw = raw.as_ref();
        self.send(raw).await;
        let method = raw.split(|b| *b == b' ').next().map(|m| String::from_utf8_lossy(m).to_string()).unwrap_or_default();
        self.response_to(&method).await
    }

    /// Everything until the peer closes (or resets) the connection.
    pub async fn rest(&mut self) -> Vec<u8> {
        while self.fill().await {}
        std::mem::take(&mut self.buf)
    }

    /// Whether the peer closes the connection without sending anything more.
    pub async fn closed(&mut self) -> bool {
        self.rest().await.is_empty()
    }
}

/// `GET path` with `Host: host` on a new connection, closed after the response.
pub async fn get(addr: SocketAddr, host: &str, path: &str) -> Resp {
    let mut c = Conn::connect(addr).await;
    c.roundtrip(format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n")).await
}

/// Send raw bytes on a new connection and read one response (which must be complete).
pub async fn raw(addr: SocketAddr, bytes: impl AsRef<[u8]>) -> Resp {
    let mut c = Conn::connect(addr).await;
    c.roundtrip(bytes).await
}

/// Check a response generated by Palisade itself: problem+json with the request id in both the
/// header and the body, the status and the code. Returns the JSON.
pub fn assert_problem(r: &Resp, status: u16, code: &str) -> serde_json::Value {
    assert_eq!(r.status, status, "unexpected status: {}", r.dump());
    assert_eq!(r.header("content-type"), Some("application/problem+json"), "{}", r.dump());
    let rid = r.header("x-request-id").unwrap_or_else(|| panic!("no x-request-id: {}", r.dump()));
    assert!(rid.len() == 16 && rid.bytes().all(|b| b.is_ascii_hexdigit()), "request id {rid:?}");
    let v = r.json();
    assert_eq!(v["status"], status, "{}", r.dump());
    assert_eq!(v["code"], code, "{}", r.dump());
    assert_eq!(v["request_id"], rid, "{}", r.dump());
    assert!(v["type"].as_str().is_some_and(|t| t.ends_with(code)), "{}", r.dump());
    assert!(v["title"].as_str().is_some_and(|t| !t.is_empty()), "{}", r.dump());
    v
}

/// A deterministic, non-repeating-looking payload of `n` bytes (all byte values).
pub fn payload(n: usize) -> Vec<u8> {
    let mut x: u32 = 0x9e37_79b9;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            (x >> 24) as u8
        })
        .collect()
}

/// Encode `parts` as a chunked body (with the final chunk).
pub fn chunked(parts: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::new();
    for p in parts {
        out.extend_from_slice(format!("{:x}\r\n", p.len()).as_bytes());
        out.extend_from_slice(p);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"0\r\n\r\n");
    out
}

/// Standard base64 with padding (RFC 4648 §4): gRPC-Web's text mode, `/v1/judge` bodies.
pub(crate) fn base64(data: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for c in data.chunks(3) {
        let n = (u32::from(c[0]) << 16) | (u32::from(*c.get(1).unwrap_or(&0)) << 8) | u32::from(*c.get(2).unwrap_or(&0));
        out.push(A[(n >> 18) as usize & 63] as char);
        out.push(A[(n >> 12) as usize & 63] as char);
        out.push(if c.len() > 1 { A[(n >> 6) as usize & 63] as char } else { '=' });
        out.push(if c.len() > 2 { A[n as usize & 63] as char } else { '=' });
    }
    out
}
