//! Policy bypass through the path: every spelling of a protected path (dot segments, encoded
//! dots and letters, doubled slashes, `;` parameters, backslashes, encoded slashes) is judged
//! as the protected path by every matcher (apps, access routes, user rules, OpenAPI operations,
//! detection path policies), over HTTP/1.1 and HTTP/2, or refused with 400; and the upstream
//! receives the canonical path or the original one as the app's `path.forward` says.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpStream;

use crate::common::*;

const KEY: &str = "k-path-123";

const SPEC: &str = r#"
openapi: 3.0.3
info: {title: paths, version: "1"}
paths:
  /items/{id}:
    get:
      parameters:
        - {name: id, in: path, required: true, schema: {type: integer}}
      responses: {"200": {description: ok}}
"#;

/// Two apps in front of one backend: `/admin` needs an API key; the catch-all app has an access
/// route (`/private` needs the key), a rule (`/blocked` is refused), an OpenAPI operation
/// (`/items/{id}` with an integer id, other paths pass) and a detection path policy
/// (detection off under `/public`). `path` is each app's `path:` section.
fn config(target: &str, path: &str) -> String {
    let h = palisade_access::encoding::sha256_hex(KEY.as_bytes());
    let keys = format!("      api_keys:\n        keys: [{{name: ops, sha256: {h}}}]\n");
    cfg(
        &[],
        &format!(
            "apps:
  - name: admin
    path_prefix: /admin
    upstream: {target}
    path: {path}
    access:
{keys}  - name: web
    upstream: {target}
    path: {path}
    access:
{keys}      require: none
      routes: [{{prefix: /private, require: api_key}}]
    openapi:
      spec: api.yaml
      undefined: pass
    rules:
      - id: no-blocked
        when: {{field: path, prefix: /blocked}}
        then: block
    detection:
      paths: [{{prefix: /public, mode: off}}]
"
        ),
    )
}

fn start(up: &Upstream, path: &str) -> Proxy {
    let dir = TempDir::new();
    dir.write("api.yaml", SPEC);
    Proxy::start_in(&config(&up.url(), path), dir)
}

/// The answer to one request: status and the problem code (if any).
#[derive(Debug)]
struct Answer {
    status: u16,
    code: Option<String>,
}

enum Client {
    H1(std::net::SocketAddr),
    H2(hyper::client::conn::http2::SendRequest<Full<Bytes>>),
}

impl Client {
    async fn h2(addr: std::net::SocketAddr) -> Client {
        let tcp = w!(TcpStream::connect(addr)).expect("connect");
        let (sender, conn) = w!(hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tcp))).expect("h2 handshake");
        tokio::spawn(async move {
            let _ = conn.await;
        });
        Client::H2(sender)
    }

    fn name(&self) -> &'static str {
        match self {
            Client::H1(_) => "HTTP/1.1",
            Client::H2(_) => "HTTP/2",
        }
    }

    async fn get(&mut self, target: &str, key: bool) -> Answer {
        let (status, body) = match self {
            Client::H1(addr) => {
                let k = if key { format!("X-Api-Key: {KEY}\r\n") } else { String::new() };
                let r = raw(*addr, format!("GET {target} HTTP/1.1\r\nHost: web.test\r\n{k}Connection: close\r\n\r\n")).await;
                (r.status, r.text())
            }
            Client::H2(sender) => {
                let mut b = http::Request::get(format!("http://web.test{target}"));
                if key {
                    b = b.header("x-api-key", KEY);
                }
                let req = b.body(Full::new(Bytes::new())).unwrap();
                w!(sender.ready()).expect("h2 ready");
                let resp = w!(sender.send_request(req)).expect("h2 request");
                let status = resp.status().as_u16();
                let body = w!(resp.into_body().collect()).expect("h2 body").to_bytes();
                (status, String::from_utf8_lossy(&body).into_owned())
            }
        };
        let code = serde_json::from_str::<serde_json::Value>(&body).ok().and_then(|v| v["code"].as_str().map(str::to_string));
        Answer { status, code }
    }
}

/// A protected path `/{seg}/{rest}{query}` and what guards it.
struct Guarded {
    matcher: &'static str,
    seg: &'static str,
    rest: &'static str,
    query: &'static str,
    /// A segment to climb out of (for detection: the prefix where it is off).
    decoy: &'static str,
    status: u16,
    code_prefix: &'static str,
}

const GUARDED: &[Guarded] = &[
    Guarded { matcher: "apps", seg: "admin", rest: "users", query: "", decoy: "x", status: 401, code_prefix: "access.api_key_missing" },
    Guarded { matcher: "access routes", seg: "private", rest: "users", query: "", decoy: "x", status: 401, code_prefix: "access.api_key_missing" },
    Guarded { matcher: "rules", seg: "blocked", rest: "users", query: "", decoy: "x", status: 403, code_prefix: "rule" },
    Guarded { matcher: "openapi", seg: "items", rest: "abc", query: "", decoy: "x", status: 403, code_prefix: "openapi." },
    Guarded {
        matcher: "detection exclusions",
        seg: "search",
        rest: "all",
        query: "?q=%3Cscript%3Ealert(1)%3C/script%3E",
        decoy: "public",
        status: 403,
        code_prefix: "detect.",
    },
];

/// How a bypass class is treated.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Expect {
    /// The matcher's own refusal.
    Guarded,
    /// 400 with this code.
    Refused(&'static str),
    /// Data inside a segment: another path than the protected one, which goes upstream encoded
    /// as it came.
    Data,
}

/// The `path:` sections the classes are tried under.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Policy {
    Default,
    /// `semicolon: strip, backslash: slash` (a Spring or Windows backend).
    Lenient,
    /// `encoded_backslash: reject, control: reject`.
    Strict,
}

const POLICIES: [(Policy, &str); 3] =
    [(Policy::Default, "{}"), (Policy::Lenient, "{semicolon: strip, backslash: slash}"), (Policy::Strict, "{encoded_backslash: reject, control: reject}")];

/// Every bypass class as (name, raw path, expectation under each of [`POLICIES`]).
fn variants(g: &Guarded) -> Vec<(&'static str, String, [Expect; 3])> {
    let (x, s, r, q) = (g.decoy, g.seg, g.rest, g.query);
    use Expect::*;
    // A byte kept encoded as data leaves the path another one for every matcher but the app
    // choice, whose broadest reading takes `%5C` for a separator and ends the path at a NUL:
    // there, the two readings name different apps. Detection judges it wherever it is on.
    let data = match g.matcher {
        "apps" => Refused("path.ambiguous"),
        "detection exclusions" => Guarded,
        _ => Data,
    };
    // A kept control byte other than NUL is data to the app choice too.
    let data_everywhere = if g.matcher == "detection exclusions" { Guarded } else { Data };
    // A rule's `path: {prefix}` is a string prefix, not a segment one: a path that starts with
    // the protected one and goes on in the same segment is still the rule's.
    let after = |e| if g.matcher == "rules" { Guarded } else { e };
    vec![
        ("dot-dot", format!("/{x}/../{s}/{r}{q}"), [Guarded; 3]),
        ("encoded letter", format!("/%{:02x}{}/{r}{q}", s.as_bytes()[0], &s[1..]), [Guarded; 3]),
        ("double slash", format!("//{s}/{r}{q}"), [Guarded; 3]),
        ("leading dot", format!("/./{s}/{r}{q}"), [Guarded; 3]),
        ("inner dot", format!("/{s}/./{r}{q}"), [Guarded; 3]),
        ("encoded dot-dot", format!("/{x}/%2e%2E/{s}/{r}{q}"), [Guarded; 3]),
        ("encoded dot-dot above root", format!("/%2e%2e/{s}/{r}{q}"), [Refused("path.above_root"); 3]),
        ("path parameter", format!("/{s};x/{r}{q}"), [Refused("path.semicolon"), Guarded, Refused("path.semicolon")]),
        ("dot-dot-semicolon", format!("/{x}/..;/{s}/{r}{q}"), [Refused("path.semicolon"), Guarded, Refused("path.semicolon")]),
        ("backslash", format!("/{x}\\..\\{s}\\{r}{q}"), [Refused("path.backslash"), Guarded, Refused("path.backslash")]),
        ("encoded backslash", format!("/{x}%5C..%5C{s}/{r}{q}"), [data, Guarded, Refused("path.backslash")]),
        ("encoded backslash separator", format!("/{s}%5C{r}{q}"), [after(data), Guarded, Refused("path.backslash")]),
        ("encoded slash", format!("/{s}%2F{r}{q}"), [Guarded; 3]),
        ("encoded slash dot-dot", format!("/{x}%2F..%2F{s}/{r}{q}"), [Guarded; 3]),
        ("overlong dot", format!("/{x}/%c0%ae%c0%ae/{s}/{r}{q}"), [Refused("path.invalid_utf8"); 3]),
        ("encoded NUL", format!("/{s}%00/{r}{q}"), [after(data), after(data), Refused("path.control")]),
        // `..%00` is a name, not a dot segment: under `/public` for detection too.
        ("encoded NUL dot-dot", format!("/{x}/..%00/{s}/{r}{q}"), [Data, Data, Refused("path.control")]),
        ("encoded line feed", format!("/{s}%0A/{r}{q}"), [after(data_everywhere), after(data_everywhere), Refused("path.control")]),
    ]
}

/// Every class against every matcher on one client; nothing reaches the upstream but data,
/// as the path it is.
async fn every_class_in_every_matcher(client: &mut Client, up: &mut Upstream, policy: Policy) {
    let proto = client.name();
    for g in GUARDED {
        // The controls: the plain protected path is guarded, a path beside it goes through.
        let plain = format!("/{}/{}{}", g.seg, g.rest, g.query);
        let a = client.get(&plain, false).await;
        assert_eq!(a.status, g.status, "{proto} {}: control {plain}: {a:?}", g.matcher);
        let beside = format!("/{}/{}/{}{}", g.decoy, g.seg, g.rest, if g.decoy == "public" { g.query } else { "" });
        let a = client.get(&beside, false).await;
        assert_eq!(a.status, 200, "{proto} {}: control {beside}: {a:?}", g.matcher);
        assert_eq!(up.next_req().await.path(), beside.split('?').next().unwrap());

        for (class, target, expect) in variants(g) {
            let a = client.get(&target, false).await;
            let what = format!("{proto} {} ({policy:?}), {class}: {target:?} -> {a:?}", g.matcher);
            let expect = expect[POLICIES.iter().position(|p| p.0 == policy).unwrap()];
            match expect {
                Expect::Guarded => {
                    assert_eq!(a.status, g.status, "{what}");
                    assert!(a.code.as_deref().is_some_and(|c| c.starts_with(g.code_prefix)), "{what}");
                }
                Expect::Refused(code) => {
                    assert_eq!(a.status, 400, "{what}");
                    assert_eq!(a.code.as_deref(), Some(code), "{what}");
                }
                Expect::Data => {
                    assert_eq!(a.status, 200, "{what}");
                    // Encoded as sent (the canonical form of these is the path itself).
                    assert_eq!(up.next_req().await.path(), target.split('?').next().unwrap(), "{what}");
                }
            }
            assert!(up.try_req().is_none(), "{what}: reached the upstream");
        }
    }
}

#[tokio::test]
async fn every_bypass_class_is_guarded_in_every_matcher_over_http1_and_http2() {
    for (policy, path) in POLICIES {
        let mut up = Upstream::tcp(reply("ok")).await;
        let proxy = start(&up, path);
        every_class_in_every_matcher(&mut Client::H1(proxy.addr), &mut up, policy).await;
        every_class_in_every_matcher(&mut Client::h2(proxy.addr).await, &mut up, policy).await;
    }
}

/// With the key, the request goes through: the upstream sees the canonical path by default
/// (`forward: canonical`) and the client's bytes with `forward: original`.
#[tokio::test]
async fn the_upstream_receives_the_path_the_forward_mode_names() {
    let cases = [
        ("/x/../admin/./users//list?k=v", "/admin/users/list?k=v"),
        ("/%61dmin/caf%c3%a9", "/admin/caf%C3%A9"),
        ("//admin/users;v=1", "/admin/users"),
        ("/admin\\users", "/admin/users"),
        ("/x%2F..%2Fadmin%2fusers", "/admin/users"),
        ("/admin/a%7bb%7D", "/admin/a%7Bb%7D"),
    ];
    for forward in ["canonical", "original"] {
        let mut up = Upstream::tcp(reply("ok")).await;
        let proxy = start(&up, &format!("{{forward: {forward}, semicolon: strip, backslash: slash}}"));
        for mut client in [Client::H1(proxy.addr), Client::h2(proxy.addr).await] {
            for (raw, canonical) in cases {
                let a = client.get(raw, true).await;
                assert_eq!(a.status, 200, "{} {forward} {raw}: {a:?}", client.name());
                let got = up.next_req().await;
                let want = if forward == "canonical" { canonical } else { raw };
                assert_eq!(got.target, want, "{} {forward} {raw}", client.name());
            }
            // Without the key, every spelling is the admin app's.
            for (raw, _) in cases {
                assert_eq!(client.get(raw, false).await.status, 401, "{} {forward} {raw}", client.name());
            }
            assert!(up.try_req().is_none());
        }
    }
}

/// An app whose own reading of a path would send it to another app than the broadest reading
/// does is not reachable by that path: `/admin%2Fusers` is `/admin/users` to the router, but
/// the admin app keeps `%2F` as data, and as `/admin%2Fusers` it is the catch-all's.
#[tokio::test]
async fn a_path_read_differently_by_the_chosen_app_is_refused_as_ambiguous() {
    let mut up = Upstream::tcp(reply("ok")).await;
    let yaml = cfg(&[], &format!("apps:\n  - name: admin\n    path_prefix: /admin\n    upstream: {u}\n    path: {{encoded_slash: keep}}\n    access:\n      api_keys:\n        keys: [{{name: ops, sha256: {h}}}]\n  - name: web\n    upstream: {u}\n", u = up.url(), h = palisade_access::encoding::sha256_hex(KEY.as_bytes())));
    let proxy = Proxy::start(&yaml);
    for mut client in [Client::H1(proxy.addr), Client::h2(proxy.addr).await] {
        let a = client.get("/admin%2Fusers", true).await;
        assert_eq!((a.status, a.code.as_deref()), (400, Some("path.ambiguous")), "{}", client.name());
        // Inside the app, `%2F` is data and goes upstream as such.
        assert_eq!(client.get("/admin/projects/a%2fb", true).await.status, 200);
        assert_eq!(up.next_req().await.target, "/admin/projects/a%2Fb");
        assert_eq!(client.get("/admin/projects/a%2fb", false).await.status, 401);
        assert!(up.try_req().is_none());
    }
}

/// A problem response for a refused path, as every other: problem+json, request id, code.
#[tokio::test]
async fn a_refused_path_is_a_problem_response() {
    let up = Upstream::tcp(reply("ok")).await;
    let proxy = start(&up, "{}");
    let r = get(proxy.addr, "web.test", "/a/../../etc/passwd").await;
    let v = assert_problem(&r, 400, "path.above_root");
    assert_eq!(v["reasons"][0]["code"], "path.above_root", "{}", r.dump());
    assert_problem(&get(proxy.addr, "web.test", "/a%zz").await, 400, "path.bad_escape");
}

/// Encoded control bytes and `%5C` in a path parameter are data by default: the request is
/// routed and validated with them (the OpenAPI parameter is the decoded string), goes upstream
/// encoded as it came, and attack detection judges the decoded segment (a NUL truncating a
/// file name, a CRLF, a backslash traversal remain findings). A raw `\` is still refused.
#[tokio::test]
async fn encoded_control_bytes_and_backslashes_in_a_path_parameter_are_data() {
    const FILES: &str = r#"
openapi: 3.0.3
info: {title: files, version: "1"}
paths:
  /files/{name}:
    get:
      parameters:
        - {name: name, in: path, required: true, schema: {type: string, maxLength: 5}}
      responses: {"200": {description: ok}}
  /docs/{name}:
    get:
      parameters:
        - {name: name, in: path, required: true, schema: {type: string}}
      responses: {"200": {description: ok}}
"#;
    for detection in ["block", "'off'"] {
        let mut up = Upstream::tcp(reply("ok")).await;
        let dir = TempDir::new();
        dir.write("api.yaml", FILES);
        let yaml = cfg(
            &[],
            &format!("apps:\n  - name: files\n    upstream: {}\n    openapi: {{spec: api.yaml, request: block}}\n    detection: {detection}\n", up.url()),
        );
        let proxy = Proxy::start_in(&yaml, dir);
        let mut client = Client::H1(proxy.addr);
        let mut h2 = Client::h2(proxy.addr).await;
        for c in [&mut client, &mut h2] {
            // Five characters each once decoded: within `maxLength: 5`.
            for (raw, upstream) in [("/files/a%00b%1fc", "/files/a%00b%1Fc"), ("/files/%0d%0a%7F", "/files/%0D%0A%7F"), ("/files/D%5cjs", "/files/D%5Cjs")] {
                let a = c.get(raw, false).await;
                assert_eq!(a.status, 200, "{} {detection} {raw}: {a:?}", c.name());
                assert_eq!(up.next_req().await.target, upstream, "{} {raw}", c.name());
            }
            // Six decoded characters: the parameter is validated decoded, not as its escapes.
            let a = c.get("/files/ab%00cde", false).await;
            assert_eq!((a.status, a.code.as_deref()), (403, Some("openapi.parameter_invalid")), "{} {detection}", c.name());
            assert_eq!(c.get("/files/a\\b", false).await.code.as_deref(), Some("path.backslash"), "{}", c.name());
            // Read with `%5C` as a separator (as the app is chosen), this climbs above the root.
            assert_eq!(c.get("/docs/..%5C..%5Cboot.ini", false).await.code.as_deref(), Some("path.above_root"), "{}", c.name());
            // Attacks inside such a parameter (valid strings to the spec) are detection's
            // findings when it is on, and pass encoded when it is off.
            for (raw, code) in [("/docs/x%0D%0ASet-Cookie:%20a=b", "detect.crlf"), ("/docs/..%5Cboot.ini%00.txt", "detect.path-traversal")] {
                let a = c.get(raw, false).await;
                if detection == "block" {
                    assert_eq!((a.status, a.code.as_deref()), (403, Some(code)), "{} {raw}", c.name());
                } else {
                    assert_eq!(a.status, 200, "{} {raw}: {a:?}", c.name());
                    assert_eq!(up.next_req().await.target, raw, "{} {raw}", c.name());
                }
            }
            assert!(up.try_req().is_none());
        }
    }
}
