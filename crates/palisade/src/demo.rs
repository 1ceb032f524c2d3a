//! The embedded demo API that `palisade demo` protects: a tiny in-process HTTP service on an
//! ephemeral loopback port, served with Palisade's own HTTP/1 codec.

use std::net::SocketAddr;
use std::rc::Rc;
use std::time::Duration;

use bytes::Bytes;
use http::{header, HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::BodyExt;
use palisade_proxy::body::ClientBody;
use palisade_proxy::h1::{self, ConnInfo, Handler};
use palisade_proxy::resp_body::RespBody;

struct DemoApi;

const PRODUCTS: &str = r#"[{"id":1,"name":"Lamp","price":19.9},{"id":2,"name":"Desk","price":149.0},{"id":3,"name":"Chair","price":89.5}]"#;

impl Handler for DemoApi {
    async fn call(&self, req: Request<ClientBody>, _conn: &ConnInfo) -> Response<RespBody> {
        {
            let (parts, body) = req.into_parts();
            let path = parts.uri.path().to_string();
            match (&parts.method, path.as_str()) {
                (&Method::GET, "/health") => json(StatusCode::OK, Bytes::from_static(b"{\"status\":\"ok\"}")),
                (&Method::GET, "/api/products") => json(StatusCode::OK, Bytes::from_static(PRODUCTS.as_bytes())),
                (&Method::GET, p) if p.starts_with("/api/products/") => match p["/api/products/".len()..].parse::<u32>() {
                    Ok(id @ 1..=3) => json(StatusCode::OK, Bytes::from(format!("{{\"id\":{id}}}"))),
                    _ => json(StatusCode::NOT_FOUND, Bytes::from_static(b"{\"error\":\"no such product\"}")),
                },
                (&Method::POST, "/api/orders") => {
                    let Ok(collected) = body.collect().await else {
                        return json(StatusCode::BAD_REQUEST, Bytes::from_static(b"{\"error\":\"unreadable body\"}"));
                    };
                    let data = collected.to_bytes();
                    match serde_json::from_slice::<serde_json::Value>(&data) {
                        Ok(v) => json(StatusCode::CREATED, Bytes::from(serde_json::json!({"order": v, "status": "created"}).to_string())),
                        Err(_) => json(StatusCode::BAD_REQUEST, Bytes::from_static(b"{\"error\":\"expected JSON\"}")),
                    }
                }
                _ => json(StatusCode::NOT_FOUND, Bytes::from_static(b"{\"error\":\"not found\"}")),
            }
        }
    }
}

fn json(status: StatusCode, body: Bytes) -> Response<RespBody> {
    let mut r = Response::new(RespBody::full(body));
    *r.status_mut() = status;
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}

/// Start the demo API on a background thread; returns its address.
pub fn start_upstream() -> anyhow::Result<SocketAddr> {
    let std_listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    std_listener.set_nonblocking(true)?;
    let addr = std_listener.local_addr()?;
    std::thread::Builder::new().name("palisade-demo-api".into()).spawn(move || {
        let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() else { return };
        let local = tokio::task::LocalSet::new();
        local.block_on(&rt, async move {
            let Ok(listener) = tokio::net::TcpListener::from_std(std_listener) else { return };
            let api = Rc::new(DemoApi);
            let limits = h1::Limits {
                max_header_size: 16 * 1024,
                max_headers: 100,
                header_timeout: Duration::from_secs(10),
                body_timeout: Duration::from_secs(10),
                keepalive_timeout: Duration::from_secs(60),
            };
            let (_tx, rx) = tokio::sync::watch::channel(false);
            loop {
                let Ok((tcp, peer)) = listener.accept().await else { continue };
                let api = api.clone();
                let limits = limits.clone();
                let rx = rx.clone();
                tokio::task::spawn_local(async move {
                    let local = tcp.local_addr().unwrap_or(peer);
                    let _ = h1::serve(palisade_proxy::io::Stream::Tcp(tcp), ConnInfo::new(peer, local, false), &*api, &limits, rx, false).await;
                });
            }
        });
    })?;
    Ok(addr)
}

/// The demo's private temporary directory (the spec and the events database), removed when
/// the demo ends: on drop, and by [`remove_dir`] on the paths that exit without unwinding.
pub struct DemoDir(std::path::PathBuf);

static DIR: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();

impl DemoDir {
    pub fn create() -> std::io::Result<DemoDir> {
        let dir = std::env::temp_dir().join(format!("palisade-demo-{}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        let _ = DIR.set(dir.clone());
        Ok(DemoDir(dir))
    }

    /// Write the demo API's spec (embedded in the binary) into the directory.
    pub fn write_spec(&self) -> std::io::Result<std::path::PathBuf> {
        let path = self.0.join("demo-api.yaml");
        std::fs::write(&path, include_str!("../../../examples/demo-api.yaml"))?;
        Ok(path)
    }
}

impl Drop for DemoDir {
    fn drop(&mut self) {
        remove_dir();
    }
}

/// Remove the demo's directory, if this process made one.
pub fn remove_dir() {
    if let Some(dir) = DIR.get() {
        if let Err(e) = std::fs::remove_dir_all(dir) {
            if e.kind() != std::io::ErrorKind::NotFound {
                eprintln!("palisade: cannot remove {}: {e}", dir.display());
            }
        }
    }
}

pub fn print_intro(listen: SocketAddr, admin: SocketAddr, events_db: &std::path::Path) {
    let db = events_db.display();
    println!(
        "\
Palisade demo: a protected API on http://{listen} (admin on http://{admin})
Dashboard: open http://{admin}/ in a browser to see what is blocked and why.

Try:
  curl -i http://{listen}/api/products                  # allowed: forwarded to the demo API
  curl -i -X POST http://{listen}/api/orders -H 'content-type: application/json' -d '{{\"product\":1,\"qty\":2}}'
  curl -i http://{listen}/api/products/abc              # blocked by the OpenAPI spec: id must be an integer
  curl -i http://{listen}/admin                         # blocked: not in the spec
  curl -i -X POST http://{listen}/api/orders -H 'content-type: application/json' -d '{{\"product\":1,\"qty\":2,\"admin\":true}}'
                                                         # blocked: a property the schema forbids
  curl -i -X POST http://{listen}/api/orders -H 'content-type: application/json' -d '{{\"product\":1,\"qty\":2,\"note\":\"x\\u0027 union select password from users--\"}}'
                                                         # blocked by attack detection (detect.sqli)
  curl -i http://{listen}/api/products -H 'Content-Length: 1' -H 'Transfer-Encoding: chunked'
                                                         # blocked: request smuggling attempt (400)
  head -c 2000000 /dev/zero | curl -i -X POST http://{listen}/api/orders --data-binary @-
                                                         # blocked: body over the limit (413)
  curl -i http://{admin}/healthz                        # admin: liveness
  curl -s http://{admin}/api/events                     # admin: the security events recorded
  curl -s http://{admin}/metrics                        # admin: Prometheus metrics
  palisade events tail --db {db}                        # follow the events (SQLite file)

Every response carries X-Request-Id; blocks are application/problem+json.
Press Ctrl-C to stop."
    );
}
