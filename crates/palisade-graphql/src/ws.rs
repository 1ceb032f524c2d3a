//! GraphQL over WebSocket: the client messages of the two subprotocols in use, chosen by the
//! `Sec-WebSocket-Protocol` the upstream agreed to.
//!
//! - `graphql-transport-ws` (the `graphql-ws` library's protocol): `connection_init`, `ping`,
//!   `pong`, `subscribe` (`{"id", "type": "subscribe", "payload": {"query", "variables",
//!   "operationName", "extensions"}}`) and `complete`. The protocol closes the connection with
//!   4400 on a message that is not one of these.
//! - `graphql-ws` (the legacy `subscriptions-transport-ws` protocol): `connection_init`,
//!   `start` (its `payload` the same request object), `stop` and `connection_terminate`.
//!
//! With no subprotocol agreed, `subscribe` and `start` are both read as operations, and other
//! messages are left alone (they are not GraphQL to this library).

use serde_json::{Map, Value as Json};

use crate::request::GraphqlRequest;
use crate::{Error, ErrorKind};

/// The subprotocol of a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// `graphql-transport-ws`.
    TransportWs,
    /// `graphql-ws` (`subscriptions-transport-ws`).
    Legacy,
    /// None agreed (or another one).
    Unknown,
}

impl Protocol {
    /// The protocol named by a `Sec-WebSocket-Protocol` value (the upstream's choice).
    pub fn from_header(value: Option<&str>) -> Protocol {
        match value.map(str::trim) {
            Some(v) if v.eq_ignore_ascii_case("graphql-transport-ws") => Protocol::TransportWs,
            Some(v) if v.eq_ignore_ascii_case("graphql-ws") => Protocol::Legacy,
            _ => Protocol::Unknown,
        }
    }

    /// The close code for a message the protocol does not allow: 4400 for
    /// `graphql-transport-ws` (its rule), 1008 (policy) otherwise.
    pub fn invalid_close(self) -> u16 {
        match self {
            Protocol::TransportWs => 4400,
            _ => 1008,
        }
    }
}

/// The operation a client message starts, if it starts one (`subscribe`, `start`).
/// `Err`: a message the protocol does not allow (not JSON, no `type`, an unknown type, an
/// operation message without an `id` or a request object as its payload).
pub fn operation(message: &str, protocol: Protocol) -> Result<Option<GraphqlRequest>, Error> {
    let invalid = |m: &str| Error::new(ErrorKind::Request, m.to_string());
    let json: Json = match serde_json::from_str(message) {
        Ok(j) => j,
        Err(_) if protocol == Protocol::Unknown => return Ok(None),
        Err(e) => return Err(Error::new(ErrorKind::Request, format!("the message is not JSON: {e}"))),
    };
    let Json::Object(mut o) = json else {
        return if protocol == Protocol::Unknown { Ok(None) } else { Err(invalid("the message is not a JSON object")) };
    };
    let ty = match o.get("type") {
        Some(Json::String(t)) => t.as_str(),
        _ if protocol == Protocol::Unknown => return Ok(None),
        _ => return Err(invalid("the message has no `type`")),
    };
    let starts = match (protocol, ty) {
        (Protocol::TransportWs, "subscribe") | (Protocol::Legacy, "start") | (Protocol::Unknown, "subscribe" | "start") => true,
        (Protocol::TransportWs, "connection_init" | "ping" | "pong" | "complete") => false,
        (Protocol::Legacy, "connection_init" | "stop" | "connection_terminate") => false,
        (Protocol::Unknown, _) => false,
        (_, other) => return Err(Error::new(ErrorKind::Request, format!("`{other}` is not a client message of this subprotocol"))),
    };
    if !starts {
        return Ok(None);
    }
    match o.get("id") {
        Some(Json::String(id)) if !id.is_empty() => {}
        Some(Json::Number(_)) if protocol != Protocol::TransportWs => {}
        _ => return Err(invalid("an operation message without an `id`")),
    }
    let Some(Json::Object(payload)) = o.remove("payload") else { return Err(invalid("an operation message without a request object as its `payload`")) };
    request(payload).map(Some)
}

/// The request object of an operation message (the same members as over HTTP).
fn request(mut o: Map<String, Json>) -> Result<GraphqlRequest, Error> {
    let invalid = |m: String| Error::new(ErrorKind::Request, m);
    let mut r = GraphqlRequest::default();
    match o.remove("query") {
        None | Some(Json::Null) => {}
        Some(Json::String(s)) => r.query = Some(s),
        Some(_) => return Err(invalid("`query` is not a string".into())),
    }
    match o.remove("operationName") {
        None | Some(Json::Null) => {}
        Some(Json::String(s)) => r.operation_name = Some(s),
        Some(_) => return Err(invalid("`operationName` is not a string".into())),
    }
    for (key, slot) in [("variables", &mut r.variables), ("extensions", &mut r.extensions)] {
        match o.remove(key) {
            None | Some(Json::Null) => {}
            Some(Json::Object(m)) => *slot = Some(m),
            Some(_) => return Err(invalid(format!("`{key}` is not an object"))),
        }
    }
    r.extra = o;
    if r.query.as_deref().is_none_or(|q| q.trim().is_empty()) && r.persisted_hash().is_none() {
        return Err(invalid("no `query` and no persisted query hash".into()));
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_of_both_subprotocols() {
        use Protocol::*;
        assert_eq!(Protocol::from_header(Some("graphql-transport-ws")), TransportWs);
        assert_eq!(Protocol::from_header(Some("graphql-ws")), Legacy);
        assert_eq!(Protocol::from_header(None), Unknown);
        let sub = r#"{"id": "1", "type": "subscribe", "payload": {"query": "subscription { a }", "variables": {"x": 1}, "operationName": null}}"#;
        let r = operation(sub, TransportWs).unwrap().unwrap();
        assert_eq!(r.query.as_deref(), Some("subscription { a }"));
        assert_eq!(r.variables.unwrap()["x"], 1);
        let start = r#"{"id": "1", "type": "start", "payload": {"query": "subscription { a }"}}"#;
        assert!(operation(start, Legacy).unwrap().is_some());
        assert!(operation(start, Unknown).unwrap().is_some());
        assert!(operation(sub, Unknown).unwrap().is_some());
        // Each protocol's other client messages start nothing.
        for m in [r#"{"type": "connection_init", "payload": {"token": "t"}}"#, r#"{"type": "ping"}"#, r#"{"id": "1", "type": "complete"}"#] {
            assert_eq!(operation(m, TransportWs).unwrap(), None, "{m}");
        }
        for m in [r#"{"type": "connection_init"}"#, r#"{"id": "1", "type": "stop"}"#, r#"{"type": "connection_terminate"}"#] {
            assert_eq!(operation(m, Legacy).unwrap(), None, "{m}");
        }
        // What the protocol does not allow.
        for m in [
            "not json",
            "[1]",
            r#"{"id": "1"}"#,
            r#"{"type": "start", "id": "1", "payload": {"query": "{a}"}}"#,
            r#"{"type": "subscribe", "payload": {"query": "{a}"}}"#,
            r#"{"type": "subscribe", "id": "1"}"#,
            r#"{"type": "subscribe", "id": "1", "payload": {"query": 5}}"#,
            r#"{"type": "subscribe", "id": "1", "payload": {"variables": {}}}"#,
        ] {
            assert!(operation(m, TransportWs).is_err(), "{m}");
        }
        assert!(operation(sub, Legacy).is_err(), "`subscribe` is not a message of the legacy protocol");
        // Without a subprotocol, what is not an operation message is not GraphQL's business.
        assert_eq!(operation("hello", Unknown).unwrap(), None);
        assert_eq!(operation(r#"{"type": "whatever"}"#, Unknown).unwrap(), None);
        assert_eq!(TransportWs.invalid_close(), 4400);
        assert_eq!(Legacy.invalid_close(), 1008);
    }
}
