//! A minimal W3C WebDriver client (blocking, loopback only) for driving Debian's `chromium`
//! through `chromedriver` in the dashboard test: sessions, navigation, element lookup, clicks,
//! typing, script execution and screenshots. Every wait is bounded.
#![allow(clippy::disallowed_methods)] // blocking I/O and sleeps: this runs on a blocking test thread

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// Where Debian puts them (packages `chromium` and `chromium-driver`).
pub const CHROMIUM: &str = "/usr/bin/chromium";
pub const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

/// Why the browser test cannot run here, if it cannot.
pub fn unavailable() -> Option<String> {
    for p in [CHROMIUM, CHROMEDRIVER] {
        if !Path::new(p).exists() {
            return Some(format!("{p} is missing (Debian packages chromium and chromium-driver; scripts/test installs them)"));
        }
    }
    None
}

/// A running chromedriver with one headless browser session; both end on drop.
pub struct Browser {
    driver: Child,
    addr: SocketAddr,
    session: String,
}

/// The W3C web element identifier key.
const ELEMENT_KEY: &str = "element-6066-11e4-a52e-4f735466cecf";

impl Browser {
    pub fn start() -> Result<Browser, String> {
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
            l.local_addr().map_err(|e| e.to_string())?.port()
        };
        let driver = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .arg("--allowed-ips=127.0.0.1")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("starting {CHROMEDRIVER}: {e}"))?;
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let mut b = Browser { driver, addr, session: String::new() };
        let started = Instant::now();
        while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
            if started.elapsed() > Duration::from_secs(20) {
                return Err("chromedriver did not listen within 20 s".into());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": CHROMIUM,
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,1100",
                         "--no-first-run", "--disable-extensions", "--disable-background-networking"]
            }
        }}});
        let v = b.call("POST", "/session", Some(caps))?;
        b.session = v["sessionId"].as_str().ok_or_else(|| format!("no session id in {v}"))?.to_string();
        Ok(b)
    }

    /// One WebDriver command; returns its `value`.
    fn call(&self, method: &str, path: &str, body: Option<Value>) -> Result<Value, String> {
        let body = body.map(|b| b.to_string()).unwrap_or_default();
        let mut s = TcpStream::connect_timeout(&self.addr, Duration::from_secs(5)).map_err(|e| format!("chromedriver: {e}"))?;
        s.set_read_timeout(Some(Duration::from_secs(60))).ok();
        let req = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            self.addr,
            body.len()
        );
        s.write_all(req.as_bytes()).map_err(|e| e.to_string())?;
        // chromedriver may keep the connection open: read the head, then exactly the body.
        let mut raw = Vec::new();
        let mut buf = [0u8; 16 * 1024];
        let read_more = |s: &mut TcpStream, raw: &mut Vec<u8>, buf: &mut [u8]| -> Result<bool, String> {
            let n = s.read(buf).map_err(|e| format!("{method} {path}: {e}"))?;
            raw.extend_from_slice(&buf[..n]);
            Ok(n > 0)
        };
        let split = loop {
            if let Some(i) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
                break i;
            }
            if !read_more(&mut s, &mut raw, &mut buf)? {
                return Err(format!("{method} {path}: connection closed before the response head"));
            }
        };
        let head = String::from_utf8_lossy(&raw[..split]).to_string();
        let lower = head.to_ascii_lowercase();
        let length = lower.lines().find_map(|l| l.strip_prefix("content-length:")).and_then(|v| v.trim().parse::<usize>().ok());
        let chunked = lower.contains("transfer-encoding: chunked");
        loop {
            let body = &raw[split + 4..];
            let complete = match length {
                Some(n) => body.len() >= n,
                None if chunked => body.windows(5).any(|w| w == b"0\r\n\r\n"),
                None => false,
            };
            if complete || !read_more(&mut s, &mut raw, &mut buf)? {
                break;
            }
        }
        let mut payload = raw[split + 4..].to_vec();
        if let Some(n) = length {
            payload.truncate(n);
        } else if chunked {
            payload = dechunk(&payload);
        }
        let v: Value = serde_json::from_slice(&payload).map_err(|e| format!("{method} {path}: bad JSON ({e}): {}", String::from_utf8_lossy(&payload)))?;
        if !head.starts_with("HTTP/1.1 200") {
            return Err(format!("{method} {path}: {head}: {}", v["value"]));
        }
        Ok(v["value"].clone())
    }

    fn sess(&self, rest: &str) -> String {
        format!("/session/{}{rest}", self.session)
    }

    pub fn goto(&self, url: &str) -> Result<(), String> {
        self.call("POST", &self.sess("/url"), Some(json!({ "url": url }))).map(|_| ())
    }

    /// Run a script in the page (`return ...` to get a value).
    pub fn script(&self, js: &str) -> Result<Value, String> {
        self.call("POST", &self.sess("/execute/sync"), Some(json!({ "script": js, "args": [] })))
    }

    pub fn find(&self, css: &str) -> Result<String, String> {
        let v = self.call("POST", &self.sess("/element"), Some(json!({ "using": "css selector", "value": css })))?;
        v[ELEMENT_KEY].as_str().map(str::to_string).ok_or_else(|| format!("no element for {css}: {v}"))
    }

    pub fn click(&self, css: &str) -> Result<(), String> {
        let id = self.find(css)?;
        self.call("POST", &self.sess(&format!("/element/{id}/click")), Some(json!({}))).map(|_| ())
    }

    pub fn type_into(&self, css: &str, text: &str) -> Result<(), String> {
        let id = self.find(css)?;
        self.call("POST", &self.sess(&format!("/element/{id}/value")), Some(json!({ "text": text }))).map(|_| ())
    }

    /// Poll `js` (an expression) until it is truthy; returns its last value.
    pub fn wait_for(&self, what: &str, js: &str, timeout: Duration) -> Result<Value, String> {
        let start = Instant::now();
        loop {
            let v = self.script(&format!("return ({js});"))?;
            let truthy = match &v {
                Value::Null => false,
                Value::Bool(b) => *b,
                Value::Number(n) => n.as_f64() != Some(0.0),
                Value::String(s) => !s.is_empty(),
                _ => true,
            };
            if truthy {
                return Ok(v);
            }
            if start.elapsed() > timeout {
                let err = self.script("return document.querySelector('#error') && document.querySelector('#error').textContent").unwrap_or_default();
                return Err(format!("timed out after {timeout:?} waiting for {what} (last value {v}; page error: {err})"));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// A PNG of the viewport.
    pub fn screenshot(&self) -> Result<Vec<u8>, String> {
        let v = self.call("GET", &self.sess("/screenshot"), None)?;
        base64_decode(v.as_str().ok_or("screenshot is not a string")?)
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let _ = self.call("DELETE", &self.sess(""), None);
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

fn dechunk(mut b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(nl) = b.windows(2).position(|w| w == b"\r\n") {
        let size = usize::from_str_radix(String::from_utf8_lossy(&b[..nl]).trim(), 16).unwrap_or(0);
        if size == 0 || b.len() < nl + 2 + size {
            break;
        }
        out.extend_from_slice(&b[nl + 2..nl + 2 + size]);
        b = &b[(nl + 4 + size).min(b.len())..];
    }
    out
}

fn base64_decode(s: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in s.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            b'=' | b'\n' | b'\r' => continue,
            _ => return Err(format!("bad base64 byte {c}")),
        } as u32;
        acc = acc << 6 | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    Ok(out)
}
