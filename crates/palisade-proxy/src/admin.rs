//! The admin listener (separate address, loopback by default): liveness and readiness for now.
//! The events issue extends it with metrics, the API and the dashboard.

use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use http::{header, HeaderValue, Request, Response, StatusCode};
use tokio::net::TcpListener;

use crate::body::{ClientBody, RespBody};
use crate::h1::{self, ConnInfo, Handler};
use crate::io::Stream;
use crate::problem;
use crate::server::Shared;

struct Admin {
    shared: Arc<Shared>,
}

impl Handler for Admin {
    async fn call(&self, req: Request<ClientBody>, _conn: &ConnInfo) -> Response<RespBody> {
        let id = crate::request_id::next();
        let resp = match (req.method().as_str(), req.uri().path()) {
            ("GET" | "HEAD", "/healthz") => json(StatusCode::OK, "{\"status\":\"ok\"}\n"),
            ("GET" | "HEAD", "/readyz") => {
                if self.shared.ready.load(Ordering::SeqCst) {
                    let generation = self.shared.snapshot.load().generation;
                    json(StatusCode::OK, &format!("{{\"status\":\"ready\",\"config_generation\":{generation}}}\n"))
                } else {
                    json(StatusCode::SERVICE_UNAVAILABLE, "{\"status\":\"not ready\"}\n")
                }
            }
            _ => problem::response(StatusCode::NOT_FOUND, "admin.not_found", "Not found", id.as_str(), &[]),
        };
        resp
    }
}

fn json(status: StatusCode, body: &str) -> Response<RespBody> {
    let mut r = Response::new(RespBody::full(body.to_string()));
    *r.status_mut() = status;
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

pub async fn serve(listener: TcpListener, shared: Arc<Shared>) {
    let admin = Rc::new(Admin { shared: shared.clone() });
    let limits = h1::Limits {
        max_header_size: 16 * 1024,
        max_headers: 64,
        header_timeout: std::time::Duration::from_secs(10),
        body_timeout: std::time::Duration::from_secs(10),
        keepalive_timeout: std::time::Duration::from_secs(30),
    };
    loop {
        let Ok((tcp, peer)) = listener.accept().await else { continue };
        let admin = admin.clone();
        let limits = limits.clone();
        let shutdown = shared.shared_shutdown();
        let local = tcp.local_addr().unwrap_or(peer);
        tokio::task::spawn_local(async move {
            let _ = h1::serve(Stream::Tcp(tcp), ConnInfo::new(peer, local, false), &*admin, &limits, shutdown, false).await;
        });
    }
}
