//! The `graphql` stage of the request pipeline. It judges requests to its endpoints' paths
//! only: `GET` in the head phase (the document is in the query string), `POST` in the body
//! phase; `OPTIONS` and `HEAD` pass; any other method is `graphql.method`. Requests that it
//! parsed hand their values to attack detection through [`Context::protocol_values`], so that
//! detection judges argument literals and variables, not the query text as prose. Operations
//! sent over a WebSocket on an endpoint's path are judged the same way ([`crate::ws`]).

use std::sync::Arc;

use palisade_core::http::{header, Method};
use palisade_core::{Context, Mode, ProtocolValues, Reason, RequestView, Stage, Verdict};

use crate::check::{check_envelope, DocCache};
use crate::schema::Schema;
use crate::settings::Endpoint;
use crate::{request, ws};

/// Documents whose analysis each endpoint keeps ([`DocCache`]), and their total size.
pub const CACHED_DOCUMENTS: usize = 1024;
pub const CACHED_BYTES: usize = 8 << 20;

pub struct GraphqlStage {
    endpoints: Vec<(Endpoint, Option<Arc<Schema>>)>,
    caches: Vec<DocCache>,
}

impl GraphqlStage {
    /// Endpoints with their parsed schemas; endpoints in mode `off` are left out.
    pub fn new(endpoints: Vec<(Endpoint, Option<Arc<Schema>>)>) -> Self {
        let endpoints: Vec<_> = endpoints.into_iter().filter(|(e, _)| e.mode != Mode::Off).collect();
        let caches = endpoints.iter().map(|_| DocCache::new(CACHED_DOCUMENTS, CACHED_BYTES)).collect();
        GraphqlStage { endpoints, caches }
    }

    pub fn is_empty(&self) -> bool {
        self.endpoints.is_empty()
    }

    fn endpoint(&self, path: &str) -> Option<usize> {
        let path = if path.len() > 1 { path.trim_end_matches('/') } else { path };
        self.endpoints.iter().position(|(e, _)| e.path == path)
    }

    /// Judge one request on endpoint `i` (in the phase that holds its document).
    fn judge(&self, i: usize, req: &RequestView<'_>, cx: &mut Context) -> Verdict {
        let ep = &self.endpoints[i].0;
        if req.body_truncated {
            let reasons =
                vec![Reason::new("graphql.query_size").at("graphql").detail("the body is larger than the app's inspection limit (limits.inspect_body)")];
            return self.verdict(ep, reasons);
        }
        let ct = req.headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok());
        match request::from_http(req.method, ct, req.query, req.body) {
            Ok(None) => Verdict::Allow,
            Ok(Some(env)) => self.judge_envelope(i, &env, cx),
            Err(e) => self.refuse(ep, &e),
        }
    }

    /// Judge the requests of an envelope on endpoint `i`; their values go to detection.
    fn judge_envelope(&self, i: usize, env: &request::Envelope, cx: &mut Context) -> Verdict {
        let (ep, schema) = (&self.endpoints[i].0, self.endpoints[i].1.as_deref());
        let mut reasons = Vec::new();
        let mut values = Vec::new();
        check_envelope(env, &ep.limits, schema, &mut reasons, Some(&mut values), Some(&self.caches[i]));
        let get = env.get;
        // The file names of an upload, which detection inspects in multipart bodies.
        values.extend(env.files.iter().map(|(name, file)| palisade_core::ProtocolValue {
            location: format!("graphql.files.{name}"),
            value: file.clone(),
            key: false,
        }));
        cx.protocol_values = Some(Arc::new(ProtocolValues {
            replaces_body: !get,
            replaces_query: if get { ["query", "variables", "operationName", "extensions"].map(String::from).to_vec() } else { Vec::new() },
            values,
        }));
        self.verdict(ep, reasons)
    }

    /// A request that is not a GraphQL request.
    fn refuse(&self, ep: &Endpoint, e: &crate::Error) -> Verdict {
        let at = match &e.context {
            Some(c) => format!("graphql{c}"),
            None => "graphql".to_string(),
        };
        self.verdict(ep, vec![Reason::new(e.code()).at(at).detail(e.message.clone())])
    }

    fn verdict(&self, ep: &Endpoint, mut reasons: Vec<Reason>) -> Verdict {
        reasons.truncate(ep.max_violations);
        ep.mode.verdict(reasons)
    }
}

impl Stage for GraphqlStage {
    fn name(&self) -> &'static str {
        "graphql"
    }

    fn check_head(&self, req: &RequestView<'_>, cx: &mut Context) -> Verdict {
        let Some(i) = self.endpoint(req.path) else { return Verdict::Allow };
        match *req.method {
            Method::GET => self.judge(i, req, cx),
            Method::POST | Method::OPTIONS | Method::HEAD => Verdict::Allow,
            ref m => self
                .verdict(&self.endpoints[i].0, vec![Reason::new("graphql.method").at("graphql").detail(format!("{m} is not a GraphQL method (GET or POST)"))]),
        }
    }

    fn wants_body(&self) -> bool {
        !self.endpoints.is_empty()
    }

    fn check_body(&self, req: &RequestView<'_>, cx: &mut Context) -> Verdict {
        if *req.method != Method::POST {
            return Verdict::Allow;
        }
        let Some(i) = self.endpoint(req.path) else { return Verdict::Allow };
        self.judge(i, req, cx)
    }

    fn wants_messages(&self, req: &RequestView<'_>) -> bool {
        self.endpoint(req.path).is_some()
    }

    /// An operation sent over a WebSocket on an endpoint's path ([`crate::ws`]) is judged as
    /// the same request over HTTP would be (same reason codes, same locations); its values go
    /// to detection. A blocked operation closes the connection with 1008; a message the
    /// subprotocol does not allow with the protocol's code (`graphql-transport-ws`: 4400).
    fn check_message(&self, req: &RequestView<'_>, message: &str, cx: &mut Context) -> Verdict {
        let Some(i) = self.endpoint(req.path) else { return Verdict::Allow };
        let protocol = ws::Protocol::from_header(req.headers.get(header::SEC_WEBSOCKET_PROTOCOL).and_then(|v| v.to_str().ok()));
        match ws::operation(message, protocol) {
            Ok(None) => Verdict::Allow,
            Ok(Some(r)) => {
                let env = request::Envelope { requests: vec![r], batched: false, get: false, files: Vec::new() };
                self.judge_envelope(i, &env, cx)
            }
            Err(e) => match self.refuse(&self.endpoints[i].0, &e) {
                Verdict::Block { reasons, .. } => Verdict::Block { status: Some(protocol.invalid_close()), reasons },
                other => other,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use palisade_core::http::{HeaderMap, HeaderValue};

    use super::*;
    use crate::check::Limits;

    fn stage(mode: Mode) -> GraphqlStage {
        let schema = Schema::parse("type Query { a: Int }\ntype Subscription { s(q: String): T }\ntype T { x: Int, t: T }", "s").unwrap();
        let ep = Endpoint {
            path: "/graphql".into(),
            schema: None,
            mode,
            limits: Limits { max_depth: 2, ..Limits::default() },
            max_violations: 5,
            key_path: "apps[0].graphql".into(),
        };
        GraphqlStage::new(vec![(ep, Some(Arc::new(schema)))])
    }

    fn judge(s: &GraphqlStage, path: &str, protocol: Option<&str>, message: &str, cx: &mut Context) -> Verdict {
        let mut headers = HeaderMap::new();
        if let Some(p) = protocol {
            headers.insert(header::SEC_WEBSOCKET_PROTOCOL, HeaderValue::from_str(p).unwrap());
        }
        let view = RequestView {
            request_id: "r",
            app: "app",
            client_ip: std::net::IpAddr::from([127, 0, 0, 1]),
            method: &Method::GET,
            path,
            raw_path: path,
            query: None,
            headers: &headers,
            body: b"",
            body_truncated: false,
            tls: false,
        };
        assert_eq!(s.wants_messages(&view), path == "/graphql");
        s.check_message(&view, message, cx)
    }

    #[test]
    fn websocket_operations_are_judged_and_their_values_go_to_detection() {
        let s = stage(Mode::Block);
        let op = |query: &str| format!(r#"{{"id": "1", "type": "subscribe", "payload": {{"query": "{query}", "variables": {{"v": "val"}}}}}}"#);
        let mut cx = Context::default();
        let v = judge(&s, "/graphql", Some("graphql-transport-ws"), &op("subscription { s(q: \\\"lit\\\") { x } }"), &mut cx);
        assert!(v.is_allow(), "{v:?}");
        let values = cx.protocol_values.take().expect("values for detection");
        assert!(values.replaces_body);
        let got: Vec<_> = values.values.iter().map(|v| (v.location.as_str(), v.value.as_str())).collect();
        assert!(got.contains(&("graphql.subscription.s.q", "lit")) && got.contains(&("graphql.variables.v", "val")), "{got:?}");
        // Too deep: the HTTP reason and location; the default close code (policy).
        let Verdict::Block { status, reasons } = judge(&s, "/graphql", Some("graphql-transport-ws"), &op("subscription { s { t { t { x } } } }"), &mut cx)
        else {
            panic!()
        };
        assert_eq!((status, reasons[0].code.as_ref(), reasons[0].location.as_deref()), (None, "graphql.depth", Some("graphql.subscription.s.t.t")));
        // A message the protocol does not allow: 4400 under graphql-transport-ws, policy under
        // graphql-ws; left alone when no GraphQL subprotocol was agreed.
        let Verdict::Block { status, reasons } = judge(&s, "/graphql", Some("graphql-transport-ws"), "{\"type\": \"start\"}", &mut cx) else { panic!() };
        assert_eq!((status, reasons[0].code.as_ref()), (Some(4400), "graphql.request_invalid"));
        let Verdict::Block { status, .. } = judge(&s, "/graphql", Some("graphql-ws"), "hello", &mut cx) else { panic!() };
        assert_eq!(status, Some(1008));
        assert!(judge(&s, "/graphql", None, "hello", &mut cx).is_allow());
        // Other messages and other paths are not this stage's business.
        cx.protocol_values = None;
        assert!(judge(&s, "/graphql", Some("graphql-transport-ws"), r#"{"type": "connection_init"}"#, &mut cx).is_allow());
        assert!(judge(&s, "/chat", Some("graphql-transport-ws"), &op("subscription { nope }"), &mut cx).is_allow());
        assert!(cx.protocol_values.is_none());
        // Monitor mode: findings, no block.
        let m = stage(Mode::Monitor);
        assert!(matches!(
            judge(&m, "/graphql", Some("graphql-ws"), &op("subscription { nope }").replace("subscribe", "start"), &mut cx),
            Verdict::Monitor { .. }
        ));
    }
}
