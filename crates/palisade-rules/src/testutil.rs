//! Helpers shared by the unit tests: owned requests and rule sets from YAML.

use std::net::IpAddr;

use palisade_config::decode::Ctx;
use palisade_core::{Context, RequestView};

use crate::compile::{Phase, Rules};
use crate::eval::Scratch;

pub struct Req {
    pub method: http::Method,
    pub path: String,
    pub query: Option<String>,
    pub headers: http::HeaderMap,
    pub body: Vec<u8>,
    pub ip: IpAddr,
}

impl Req {
    /// `target` is a path with an optional `?query`.
    pub fn new(method: &str, target: &str) -> Req {
        let (path, query) = match target.split_once('?') {
            Some((p, q)) => (p.to_string(), Some(q.to_string())),
            None => (target.to_string(), None),
        };
        Req { method: method.parse().unwrap(), path, query, headers: http::HeaderMap::new(), body: Vec::new(), ip: "192.0.2.1".parse().unwrap() }
    }

    pub fn header(mut self, name: &str, value: &str) -> Req {
        self.headers.append(http::HeaderName::from_bytes(name.as_bytes()).unwrap(), http::HeaderValue::from_str(value).unwrap());
        self
    }

    pub fn body(mut self, body: &str) -> Req {
        self.body = body.as_bytes().to_vec();
        self
    }

    pub fn ip(mut self, ip: &str) -> Req {
        self.ip = ip.parse().unwrap();
        self
    }

    pub fn view(&self) -> RequestView<'_> {
        RequestView {
            request_id: "t",
            app: "a",
            client_ip: self.ip,
            method: &self.method,
            path: &self.path,
            raw_path: &self.path,
            query: self.query.as_deref(),
            headers: &self.headers,
            body: &self.body,
            body_truncated: false,
            tls: false,
        }
    }
}

/// Decode `yaml` (a `rules:` section) and return the errors, rendered.
pub fn errors(yaml: &str) -> Vec<String> {
    errors_with(yaml, &|_| Err(palisade_config::read::ReadError::Io(std::io::ErrorKind::NotFound.into())))
}

pub fn errors_with(yaml: &str, read: &dyn Fn(&std::path::Path) -> Result<String, palisade_config::read::ReadError>) -> Vec<String> {
    let node = palisade_config::yaml::parse(yaml).unwrap();
    let mut cx = Ctx::new("app.yaml");
    let opts = crate::settings::Options { detectors: &["sqli", "xss", "cmdi", "scanner"] };
    crate::settings::decode(&mut cx, &node, "rules", std::path::Path::new("/etc/p"), &opts, read);
    cx.errors.iter().map(|e| e.to_string()).collect()
}

/// Decode and compile `yaml`, which must be free of errors.
pub fn rules(yaml: &str) -> Rules {
    let node = palisade_config::yaml::parse(yaml).unwrap();
    let mut cx = Ctx::new("app.yaml");
    let list = crate::settings::decode(&mut cx, &node, "rules", std::path::Path::new("."), &Default::default(), &|_| {
        Err(palisade_config::read::ReadError::Io(std::io::ErrorKind::NotFound.into()))
    });
    assert!(cx.errors.is_empty(), "{:?}", cx.errors.iter().map(|e| e.to_string()).collect::<Vec<_>>());
    Rules::compile(list).unwrap()
}

/// Ids of the rules matching `req` in both phases (head then body), in that order.
pub fn matching(rules: &Rules, req: &Req, cx: &Context) -> Vec<String> {
    let mut out = Vec::new();
    let mut s = Scratch::default();
    rules.program(Phase::Head).matching(&req.view(), cx, &mut s, &mut out);
    rules.program(Phase::Body).matching(&req.view(), cx, &mut s, &mut out);
    out.iter().map(|&i| rules.rules()[i as usize].id.clone()).collect()
}

/// One rule `id: r` with condition `when` (flow YAML), blocking.
pub fn one(when: &str) -> Rules {
    rules(&format!("- id: r\n  when: {when}\n  then: block\n"))
}

/// Whether the single rule of [`one`] matches.
pub fn hit(when: &str, req: &Req) -> bool {
    !matching(&one(when), req, &Context::default()).is_empty()
}
