//! The authorization API for other gateways: a real nginx (Debian's) with `auth_request` to
//! Palisade's authz listener in front of a real upstream; the Envoy `ext_authz` HTTP contract
//! with requests shaped as Envoy sends them; `POST /v1/judge`.

use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use palisade_access::jwt::Alg;
use palisade_access::testing::TestKey;
use palisade_events::query::{Filter, Reader};
use palisade_proxy::metrics::Verdict;

use crate::common::*;

const NGINX: &str = "/usr/sbin/nginx";

const SPEC: &str = r#"
openapi: 3.0.3
info: {title: authz, version: "1"}
paths:
  /search:
    get:
      operationId: search
      parameters:
        - {name: q, in: query, schema: {type: string}}
      responses:
        '200': {description: ok}
  /items:
    get:
      parameters:
        - {name: limit, in: query, schema: {type: integer, minimum: 1, maximum: 100}}
      responses:
        '200': {description: ok}
    post:
      operationId: createItem
      requestBody:
        required: true
        content:
          application/json:
            schema:
              type: object
              additionalProperties: false
              required: [name]
              properties:
                name: {type: string, maxLength: 8}
      responses:
        '201': {description: created}
"#;

const SQLI: &str = "/search?q=1%27%20or%201%3D1--";

const SECRET: &str = "authz-secret-authz-secret-authz-s";

/// A token for app `jwt` with a subject and no email claim.
fn token(sub: &str) -> String {
    let exp = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() + 600;
    TestKey::hmac(Alg::HS256, SECRET.as_bytes()).token(&serde_json::json!({"sub": sub, "iss": "https://issuer.test", "aud": "api", "exp": exp}), None)
}

/// Palisade with the authz listener: app `api` (OpenAPI + default detection), app `limited`
/// (a per-client-IP rate limit), app `jwt` (a required JWT whose claims are forwarded) and app
/// `watch` (detection in monitor mode), all in front of `upstream` (which the authz API never
/// calls).
fn start(upstream: &str, authz_extra: &str) -> Proxy {
    let dir = TempDir::new();
    dir.write("api.yaml", SPEC);
    let yaml = format!(
        "workers: 1\nlisten:\n  - addr: 127.0.0.1:0\nauthz:\n  addr: 127.0.0.1:0\n{authz_extra}server:\n  shutdown_timeout: 500ms\nevents: sqlite:events.db\n\
apps:\n  - name: api\n    hosts: [api.test]\n    upstream: {upstream}\n    openapi:\n      spec: api.yaml\n  \
- name: limited\n    hosts: [limited.test]\n    upstream: {upstream}\n    access:\n      rate_limits:\n        - {{name: per-ip, key: client_ip, rate: 2/m, burst: 2}}\n  \
- name: jwt\n    hosts: [jwt.test]\n    upstream: {upstream}\n    detection: off\n    access:\n      jwt:\n        algorithms: [HS256]\n        secret: {SECRET}\n        \
issuer: https://issuer.test\n        audience: api\n        forward: {{sub: X-User-Id, email: X-User-Email}}\n  \
- name: watch\n    hosts: [watch.test]\n    upstream: {upstream}\n    detection: {{mode: monitor}}\n"
    );
    Proxy::start_in(&yaml, dir)
}

fn authz_addr(p: &Proxy) -> SocketAddr {
    p.running().authz_addr.expect("authz address")
}

fn events(p: &Proxy) -> Vec<palisade_events::Event> {
    let shared = p.running().shared();
    assert!(shared.events.as_ref().expect("events are on").flush(LIMIT), "events were not stored within {LIMIT:?}");
    Reader::open(&p.dir.join("events.db")).unwrap().events(&Filter::default()).unwrap().events
}

fn decisions(p: &Proxy, app: usize, verdict: Verdict, status: u16) -> u64 {
    p.snapshot().apps[app].metrics.authz_decisions(verdict, status)
}

// ---------------------------------------------------------------------------------------------
// nginx auth_request
// ---------------------------------------------------------------------------------------------

/// nginx in the foreground, one process (`master_process off`), killed and reaped on drop.
struct Nginx {
    child: Child,
    port: u16,
    dir: TempDir,
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn nginx_conf(d: &Path, port: u16, authz: SocketAddr, upstream: SocketAddr) -> String {
    let d = d.display();
    let user = if running_as_root() { "user root root;\n" } else { "" };
    format!(
        r#"{user}daemon off;
master_process off;
worker_processes 1;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 64; }}
http {{
    client_body_temp_path {d}/tmp/client_body;
    proxy_temp_path {d}/tmp/proxy;
    fastcgi_temp_path {d}/tmp/fastcgi;
    uwsgi_temp_path {d}/tmp/uwsgi;
    scgi_temp_path {d}/tmp/scgi;
    log_format palisade '$request_method $request_uri $status reason=$palisade_reason id=$palisade_request_id';
    access_log {d}/access.log palisade;
    server {{
        listen 127.0.0.1:{port};
        location / {{
            auth_request /_palisade;
            auth_request_set $palisade_reason $upstream_http_x_palisade_reason;
            auth_request_set $palisade_status $upstream_http_x_palisade_status;
            auth_request_set $palisade_request_id $upstream_http_x_request_id;
            auth_request_set $palisade_retry_after $upstream_http_retry_after;
            auth_request_set $palisade_user_id $upstream_http_x_user_id;
            auth_request_set $palisade_user_email $upstream_http_x_user_email;
            proxy_set_header X-User-Id $palisade_user_id;
            proxy_set_header X-User-Email $palisade_user_email;
            add_header X-Palisade-Reason $palisade_reason always;
            add_header X-Request-Id $palisade_request_id always;
            error_page 403 = @palisade_blocked;
            proxy_pass http://{upstream};
        }}
        location = /_palisade {{
            internal;
            proxy_pass http://{authz}/auth;
            proxy_pass_request_body off;
            proxy_set_header Content-Length "";
            proxy_set_header X-Original-URI $request_uri;
            proxy_set_header X-Original-Method $request_method;
            proxy_set_header X-Original-Host $host;
            proxy_set_header X-Real-IP $remote_addr;
        }}
        location @palisade_blocked {{
            add_header X-Palisade-Reason $palisade_reason always;
            add_header X-Request-Id $palisade_request_id always;
            add_header Retry-After $palisade_retry_after always;
            if ($palisade_status = 429) {{ return 429; }}
            return 403;
        }}
    }}
}}
"#
    )
}

/// Whether this process runs as root (nginx then needs `user root` to use the test directory).
fn running_as_root() -> bool {
    Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout.starts_with(b"0\n"))
}

/// Start nginx, or `None` (with the reason printed) when it is not installed.
async fn nginx(authz: SocketAddr, upstream: SocketAddr) -> Option<Nginx> {
    if !Path::new(NGINX).exists() {
        eprintln!("skipped: {NGINX} is not installed (Debian package `nginx`; scripts/test installs it)");
        return None;
    }
    let dir = TempDir::new();
    std::fs::create_dir_all(dir.join("tmp")).unwrap();
    let port = free_port();
    let conf = dir.write("nginx.conf", nginx_conf(dir.path(), port, authz, upstream));
    let child = Command::new(NGINX)
        .arg("-p")
        .arg(dir.path())
        .arg("-c")
        .arg(&conf)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start nginx");
    let mut n = Nginx { child, port, dir };
    let deadline = tokio::time::Instant::now() + LIMIT;
    loop {
        if tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
            return Some(n);
        }
        if let Ok(Some(status)) = n.child.try_wait() {
            let log = std::fs::read_to_string(n.dir.join("error.log")).unwrap_or_default();
            panic!("nginx exited ({status}):\n{log}");
        }
        assert!(tokio::time::Instant::now() < deadline, "nginx did not listen on {port} within {LIMIT:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn via(n: &Nginx, host: &str, method: &str, target: &str, body: &str) -> Resp {
    via_with(n, host, method, target, "", body).await
}

async fn via_with(n: &Nginx, host: &str, method: &str, target: &str, headers: &str, body: &str) -> Resp {
    let addr: SocketAddr = ([127, 0, 0, 1], n.port).into();
    let ct = if body.is_empty() { String::new() } else { format!("Content-Type: application/json\r\nContent-Length: {}\r\n", body.len()) };
    raw(addr, format!("{method} {target} HTTP/1.1\r\nHost: {host}\r\n{headers}{ct}Connection: close\r\n\r\n{body}")).await
}

#[tokio::test]
async fn nginx_auth_request_blocks_what_palisade_judges_and_lets_valid_requests_through() {
    let mut up = Upstream::tcp(reply("from upstream")).await;
    let proxy = start(&up.url(), "  trusted_gateways: [127.0.0.1/32]\n");
    let Some(n) = nginx(authz_addr(&proxy), up.addr.unwrap()).await else { return };

    // Valid requests reach the upstream through nginx.
    let r = via(&n, "api.test", "GET", "/search?q=shoes", "").await;
    assert_eq!((r.status, r.text().as_str()), (200, "from upstream"), "{}", r.dump());
    assert_eq!(up.next_req().await.target, "/search?q=shoes");
    let r = via(&n, "api.test", "POST", "/items", r#"{"name":"ok"}"#).await;
    assert_eq!(r.status, 200, "{}", r.dump());
    assert_eq!(up.next_req().await.body, br#"{"name":"ok"}"#);

    // An SQL injection and an OpenAPI violation: 403 at the client, the upstream never reached,
    // the reason visible to nginx (returned through auth_request_set and in its access log).
    let r = via(&n, "api.test", "GET", SQLI, "").await;
    assert_eq!(r.status, 403, "{}", r.dump());
    assert_eq!(r.header("x-palisade-reason"), Some("detect.sqli"), "{}", r.dump());
    let sqli_id = r.header("x-request-id").expect("request id").to_string();
    let r = via(&n, "api.test", "GET", "/items?limit=500", "").await;
    assert_eq!(r.status, 403, "{}", r.dump());
    assert_eq!(r.header("x-palisade-reason"), Some("openapi.parameter_invalid"), "{}", r.dump());
    let r = via(&n, "api.test", "DELETE", "/items", "").await;
    assert_eq!(r.status, 403, "{}", r.dump());
    assert_eq!(r.header("x-palisade-reason"), Some("openapi.method_not_allowed"), "{}", r.dump());
    // (A request for a host no app serves is refused too.)
    assert_eq!(via(&n, "other.test", "GET", "/search", "").await.status, 403);
    let got: Vec<String> = up.drain().into_iter().map(|r| r.target).collect();
    assert!(got.is_empty(), "blocked requests reached the upstream: {got:?}");

    // The rate limit's 429 reaches the client through nginx's error_page (X-Palisade-Status),
    // keyed by the client address nginx gave in X-Real-IP.
    for _ in 0..2 {
        assert_eq!(via(&n, "limited.test", "GET", "/x", "").await.status, 200);
    }
    let r = via(&n, "limited.test", "GET", "/x", "").await;
    assert_eq!(r.status, 429, "{}", r.dump());
    assert_eq!(r.header("x-palisade-reason"), Some("access.rate_limited"), "{}", r.dump());
    assert!(r.header("retry-after").is_some_and(|v| v.parse::<u64>().is_ok()), "{}", r.dump());
    assert_eq!(up.drain().len(), 2);

    // Access control's 401 reaches the client with its WWW-Authenticate; with a valid token the
    // verified claims go upstream through auth_request_set, and spoofed copies do not.
    let r = via(&n, "jwt.test", "GET", "/me", "").await;
    assert_eq!(r.status, 401, "{}", r.dump());
    assert_eq!(r.header("www-authenticate"), Some("Bearer realm=\"api\""), "{}", r.dump());
    let spoofed = format!("Authorization: Bearer {}\r\nX-User-Id: admin\r\nX-User-Email: root@example.com\r\n", token("alice"));
    let r = via_with(&n, "jwt.test", "GET", "/me", &spoofed, "").await;
    assert_eq!(r.status, 200, "{}", r.dump());
    let seen = up.next_req().await;
    assert_eq!(seen.header_all("x-user-id"), ["alice"], "{}", seen.raw_head);
    assert_eq!(seen.header_all("x-user-email"), Vec::<&str>::new(), "{}", seen.raw_head);

    let log = std::fs::read_to_string(n.dir.join("access.log")).unwrap();
    assert!(log.lines().any(|l| l.contains(SQLI) && l.contains(" 403 ") && l.contains("reason=detect.sqli") && l.contains(&sqli_id)), "{log}");
    assert!(log.lines().any(|l| l.starts_with("GET /search?q=shoes 200 reason= ")), "{log}");

    // Events and metrics as for proxied requests, in the authz series.
    let ev = events(&proxy);
    let e = ev.iter().find(|e| e.request_id == sqli_id).unwrap_or_else(|| panic!("no event {sqli_id}: {ev:?}"));
    assert_eq!(
        (e.reason.as_str(), e.stage.as_str(), e.status, e.method.as_str(), e.path.as_str(), e.host.as_str()),
        ("detect.sqli", "detection", 403, "GET", "/search", "api.test")
    );
    assert_eq!(e.client_ip, "127.0.0.1");
    assert!(decisions(&proxy, 0, Verdict::Block, 403) >= 3);
    assert_eq!(decisions(&proxy, 0, Verdict::Allow, 200), 2);
    assert_eq!(decisions(&proxy, 1, Verdict::Block, 429), 1);
    assert_eq!(proxy.snapshot().apps[0].metrics.requests(Verdict::Block, 403), 0, "proxied requests are a series of their own");
}

// ---------------------------------------------------------------------------------------------
// Envoy ext_authz (HTTP service)
// ---------------------------------------------------------------------------------------------

/// A check request as Envoy's HTTP ext_authz sends it with `path_prefix: /envoy`: the original
/// method, the prefix and the original path, the original headers (`allowed_headers`), and with
/// `with_request_body` the body and `x-envoy-auth-partial-body`.
fn envoy_check(method: &str, path: &str, host: &str, extra: &str, body: Option<&str>) -> String {
    let body_part = match body {
        Some(b) => format!("x-envoy-auth-partial-body: false\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{b}", b.len()),
        None => "content-length: 0\r\n\r\n".to_string(),
    };
    format!("{method} /envoy{path} HTTP/1.1\r\nhost: {host}\r\nx-forwarded-for: 198.51.100.7\r\nx-forwarded-proto: https\r\nx-request-id: 6f1e\r\n{extra}{body_part}")
}

#[tokio::test]
async fn envoy_ext_authz_http_contract() {
    let up = Upstream::tcp(reply("never")).await;
    let proxy = start(&up.url(), "  trusted_gateways: [127.0.0.1/32]\n");
    let a = authz_addr(&proxy);
    let mut c = Conn::connect(a).await;

    // Allowed: 200 with the request id.
    let r = c.roundtrip(envoy_check("GET", "/search?q=shoes", "api.test", "", None)).await;
    assert_eq!(r.status, 200, "{}", r.dump());
    assert_eq!(r.header("x-palisade-verdict"), Some("allow"));
    assert!(r.header("x-request-id").is_some_and(|v| v.len() == 16), "{}", r.dump());

    // Denied: the proxy's own block response (status, problem body, reason header), which Envoy
    // relays to the client.
    let r = c.roundtrip(envoy_check("GET", SQLI, "api.test", "", None)).await;
    assert_problem(&r, 403, "detect.sqli");
    assert_eq!(r.header("x-palisade-reason"), Some("detect.sqli"));
    // The body, when Envoy sends it, is judged.
    let r = c.roundtrip(envoy_check("POST", "/items", "api.test", "", Some(r#"{"name":"much too long"}"#))).await;
    let v = assert_problem(&r, 403, "openapi.body_invalid");
    assert_eq!(v["reasons"][0]["location"], "body/name", "{}", r.dump());
    let r = c.roundtrip(envoy_check("POST", "/items", "api.test", "", Some(r#"{"name":"ok"}"#))).await;
    assert_eq!(r.status, 200, "{}", r.dump());
    // Without `with_request_body` the body is unknown: the head alone is judged.
    let r = c.roundtrip(envoy_check("POST", "/items", "api.test", "", None)).await;
    assert_eq!(r.status, 200, "{}", r.dump());
    // Statuses other than 403 pass through as they are (Envoy sends them to the client).
    for _ in 0..2 {
        assert_eq!(c.roundtrip(envoy_check("GET", "/x", "limited.test", "", None)).await.status, 200);
    }
    let r = c.roundtrip(envoy_check("GET", "/x", "limited.test", "", None)).await;
    assert_problem(&r, 429, "access.rate_limited");
    assert!(r.header("retry-after").is_some(), "{}", r.dump());
    // The client is the X-Forwarded-For entry a trusted gateway appended: another address has
    // its own budget.
    let r = c.roundtrip(envoy_check("GET", "/x", "limited.test", "", None).replace("198.51.100.7", "198.51.100.8")).await;
    assert_eq!(r.status, 200, "{}", r.dump());
    // Verified claims for the upstream on allow (`allowed_upstream_headers`), and the spoofed
    // claim header no claim replaces in `x-envoy-auth-headers-to-remove`.
    let auth = format!("authorization: Bearer {}\r\nx-user-id: admin\r\nx-user-email: root@example.com\r\n", token("alice"));
    let r = c.roundtrip(envoy_check("GET", "/me", "jwt.test", &auth, None)).await;
    assert_eq!(r.status, 200, "{}", r.dump());
    assert_eq!(r.header_all("x-user-id"), ["alice"], "{}", r.dump());
    assert_eq!(r.header("x-envoy-auth-headers-to-remove"), Some("x-user-email"), "{}", r.dump());
    let r = c.roundtrip(envoy_check("GET", "/me", "jwt.test", "", None)).await;
    assert_problem(&r, 401, "access.token_missing");
    assert_eq!(r.header("www-authenticate"), Some("Bearer realm=\"api\""), "{}", r.dump());
    // No app for the host: refused (fail closed), with the proxy's status.
    let r = c.roundtrip(envoy_check("GET", "/", "other.test", "", None)).await;
    assert_problem(&r, 404, "route.no_app");
    // The canonical path rules apply (`palisade_core::path`): a path above the root is refused.
    let r = c.roundtrip(envoy_check("GET", "/search/..%2f..%2fetc", "api.test", "", None)).await;
    assert_problem(&r, 400, "path.above_root");
    assert_eq!(r.header("x-palisade-reason"), Some("path.above_root"));

    let ev = events(&proxy);
    let e = ev.iter().find(|e| e.reason == "access.rate_limited").unwrap_or_else(|| panic!("{ev:?}"));
    assert_eq!(e.client_ip, "198.51.100.7");
}

#[tokio::test]
async fn gateway_headers_name_the_client_only_from_trusted_gateways_and_the_token_is_enforced() {
    let up = Upstream::tcp(reply("never")).await;
    // No trusted gateway: the peer (127.0.0.1) is the client whatever the headers say.
    let proxy = start(&up.url(), "  token: s3cret\n");
    let a = authz_addr(&proxy);
    let check = |ip: &str, token: &str| {
        format!("GET /auth HTTP/1.1\r\nHost: authz\r\nX-Original-URI: /x\r\nX-Original-Method: GET\r\nX-Original-Host: limited.test\r\nX-Real-IP: {ip}\r\nX-Forwarded-For: {ip}\r\n{token}Connection: close\r\n\r\n")
    };
    let r = raw(a, check("203.0.113.1", "")).await;
    assert_problem(&r, 401, "authz.unauthorized");
    let r = raw(a, check("203.0.113.1", "X-Palisade-Authz-Token: wrong\r\n")).await;
    assert_eq!(r.status, 401, "{}", r.dump());
    for ip in ["203.0.113.1", "203.0.113.2"] {
        let r = raw(a, check(ip, "X-Palisade-Authz-Token: s3cret\r\n")).await;
        assert_eq!(r.status, 200, "{}", r.dump());
    }
    // Spoofed addresses did not give a fresh budget: the third request from 127.0.0.1 is limited.
    let r = raw(a, check("203.0.113.3", "X-Palisade-Authz-Token: s3cret\r\n")).await;
    assert_eq!(r.status, 403, "{}", r.dump());
    assert_eq!((r.header("x-palisade-reason"), r.header("x-palisade-status")), (Some("access.rate_limited"), Some("429")), "{}", r.dump());

    // A gateway that omits the original request is refused, never allowed.
    let r = raw(a, "GET /auth HTTP/1.1\r\nHost: limited.test\r\nX-Palisade-Authz-Token: s3cret\r\nConnection: close\r\n\r\n").await;
    let v = assert_problem(&r, 400, "authz.bad_request");
    assert!(v["title"].as_str().unwrap().contains("X-Original-Method"), "{v}");
    // A target the proxy would refuse (400) is a block, not an allow.
    let r = raw(a, "GET /auth HTTP/1.1\r\nHost: x\r\nX-Original-URI: /a b<\r\nX-Original-Method: GET\r\nX-Original-Host: limited.test\r\nX-Palisade-Authz-Token: s3cret\r\nConnection: close\r\n\r\n").await;
    assert_eq!((r.status, r.header("x-palisade-reason"), r.header("x-palisade-status")), (403, Some("http.bad_request"), Some("400")), "{}", r.dump());
    let r = raw(a, "PUT /auth HTTP/1.1\r\nHost: x\r\nX-Palisade-Authz-Token: s3cret\r\nContent-Length: 0\r\nConnection: close\r\n\r\n").await;
    assert_eq!(r.status, 405, "{}", r.dump());
}

// ---------------------------------------------------------------------------------------------
// POST /v1/judge
// ---------------------------------------------------------------------------------------------

async fn judge(a: SocketAddr, body: &str) -> Resp {
    raw(
        a,
        format!(
            "POST /v1/judge HTTP/1.1\r\nHost: authz\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        ),
    )
    .await
}

#[tokio::test]
async fn judge_api_answers_verdicts_with_their_reasons() {
    let up = Upstream::tcp(reply("never")).await;
    let proxy = start(&up.url(), "  max_request_size: 4KiB\n");
    let a = authz_addr(&proxy);

    let r = judge(a, r#"{"method":"GET","path":"/search","query":"q=shoes","headers":{"host":"api.test","accept":["application/json","text/plain"]}}"#).await;
    assert_eq!(r.status, 200, "{}", r.dump());
    let v = r.json();
    assert_eq!((v["verdict"].as_str(), v["status"].as_u64(), v["app"].as_str()), (Some("allow"), Some(200), Some("api")), "{v}");
    assert_eq!(v["operation"], "search", "{v}");
    assert_eq!(v["reasons"].as_array().unwrap().len(), 0, "{v}");
    assert_eq!(v["request_id"].as_str(), r.header("x-request-id"));

    // Blocked in the head (detection) and in the body (OpenAPI, body in base64).
    let r = judge(a, &format!(r#"{{"method":"GET","path":"{SQLI}","headers":{{"host":"api.test"}},"client_ip":"192.0.2.9"}}"#)).await;
    let v = r.json();
    assert_eq!((v["verdict"].as_str(), v["status"].as_u64()), (Some("block"), Some(403)), "{v}");
    assert_eq!(v["reasons"][0]["stage"], "detection", "{v}");
    assert_eq!(v["reasons"][0]["code"], "detect.sqli", "{v}");
    assert_eq!(v["reasons"][0]["location"], "query.q", "{v}");
    let sqli_id = v["request_id"].as_str().unwrap().to_string();
    let body = base64(br#"{"name":"much too long"}"#);
    let r =
        judge(a, &format!(r#"{{"method":"POST","path":"/items","headers":{{"host":"api.test","content-type":"application/json"}},"body":"{body}"}}"#)).await;
    let v = r.json();
    assert_eq!((v["verdict"].as_str(), v["operation"].as_str()), (Some("block"), Some("createItem")), "{v}");
    assert_eq!(
        (v["reasons"][0]["stage"].as_str(), v["reasons"][0]["code"].as_str(), v["reasons"][0]["location"].as_str()),
        (Some("openapi"), Some("openapi.body_invalid"), Some("body/name")),
        "{v}"
    );
    // A body is judged as the proxy judges it: a POST without its required body is blocked.
    let r = judge(a, r#"{"method":"POST","path":"/items","headers":{"host":"api.test","content-type":"application/json"}}"#).await;
    assert_eq!(r.json()["verdict"], "block", "{}", r.dump());
    // The app by name, whatever the host.
    let r = judge(
        a,
        &format!(r#"{{"method":"POST","path":"/items","app":"api","body":"{}","headers":{{"content-type":"application/json"}}}}"#, base64(br#"{"name":"ok"}"#)),
    )
    .await;
    assert_eq!(r.json()["verdict"], "allow", "{}", r.dump());
    // Monitor mode: allowed, with the finding as a reason.
    let v = judge(a, &format!(r#"{{"method":"GET","path":"{SQLI}","headers":{{"host":"watch.test"}}}}"#)).await.json();
    assert_eq!((v["verdict"].as_str(), v["status"].as_u64(), v["app"].as_str()), (Some("monitor"), Some(200), Some("watch")), "{v}");
    assert_eq!((v["reasons"][0]["stage"].as_str(), v["reasons"][0]["code"].as_str()), (Some("detection"), Some("detect.sqli")), "{v}");
    // No app for the host: a block verdict with the proxy's status.
    let v = judge(a, r#"{"method":"GET","path":"/","headers":{"host":"other.test"}}"#).await.json();
    assert_eq!((v["verdict"].as_str(), v["status"].as_u64(), v["reasons"][0]["code"].as_str()), (Some("block"), Some(404), Some("route.no_app")), "{v}");

    // A target the proxy would refuse is judged as that refusal.
    let v = judge(a, r#"{"method":"GET","path":"/a\"b<>","headers":{"host":"api.test"}}"#).await.json();
    assert_eq!((v["verdict"].as_str(), v["status"].as_u64(), v["reasons"][0]["code"].as_str()), (Some("block"), Some(400), Some("http.bad_request")), "{v}");

    // Caller mistakes: problem responses, not verdicts.
    assert_problem(&judge(a, r#"{"method":"GET","path":"/","app":"nope"}"#).await, 404, "authz.unknown_app");
    for bad in [
        "{not json",
        r#"{"method":"GET"}"#,
        r#"{"method":"GET","path":"relative"}"#,
        r#"{"method":"GET","path":"/","body":"not base64!"}"#,
        r#"{"method":"G T","path":"/"}"#,
        r#"{"method":"GET","path":"/","headers":{"bad name":"x"}}"#,
        r#"{"method":"GET","path":"/","unknown":1}"#,
        r#"{"method":"GET","path":"/a?b","query":"c"}"#,
    ] {
        let r = judge(a, bad).await;
        assert_problem(&r, 400, "authz.bad_request");
    }
    let big = format!(r#"{{"method":"POST","path":"/items","headers":{{"host":"api.test"}},"body":"{}"}}"#, "A".repeat(8 * 1024));
    assert_problem(&judge(a, &big).await, 413, "authz.too_large");
    let r = raw(a, "POST /v1/judge HTTP/1.1\r\nHost: authz\r\nContent-Type: text/plain\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}").await;
    assert_eq!(r.status, 415, "{}", r.dump());
    let r = raw(a, "GET /v1/judge HTTP/1.1\r\nHost: authz\r\nConnection: close\r\n\r\n").await;
    assert_eq!((r.status, r.header("allow")), (405, Some("POST")), "{}", r.dump());
    assert_problem(&raw(a, "GET /other HTTP/1.1\r\nHost: authz\r\nConnection: close\r\n\r\n").await, 404, "authz.not_found");

    // The blocked verdict is an event like a proxied block, with the client the caller named.
    let ev = events(&proxy);
    let e = ev.iter().find(|e| e.request_id == sqli_id).unwrap_or_else(|| panic!("no event {sqli_id}: {ev:?}"));
    assert_eq!((e.reason.as_str(), e.client_ip.as_str(), e.path.as_str()), ("detect.sqli", "192.0.2.9", "/search"));
}
