//! Message inspection: the handshake as the stages judged it is the view every client text
//! message is judged against; a block records an event and closes with the stage's code.

use std::borrow::Cow;
use std::net::IpAddr;
use std::time::Duration;

use http::{HeaderMap, Method, Uri};
use palisade_core::{Reason, RequestView};

use super::frames::{violation, Violation};
use crate::record::{self, Captured, Record};
use crate::request_id::RequestId;
use crate::ws_session::Session;

/// Whether a stage judges this connection's messages whatever `inspect` says (a GraphQL
/// endpoint), asked with the handshake as judged.
pub(super) fn stage_wants_messages(
    app: &crate::snapshot::App,
    judged: &(Method, Uri, HeaderMap, Option<String>),
    id: RequestId,
    client_ip: IpAddr,
    tls: bool,
) -> bool {
    let view = handshake_view(app, judged, id.as_str(), client_ip, tls);
    app.stages.iter().any(|st| st.wants_messages(&view))
}

/// The handshake as the stages judged it (canonical path, no body): the view messages are
/// judged against.
fn handshake_view<'a>(
    app: &'a crate::snapshot::App,
    judged: &'a (Method, Uri, HeaderMap, Option<String>),
    id: &'a str,
    client_ip: IpAddr,
    tls: bool,
) -> RequestView<'a> {
    let (method, uri, headers, canonical) = judged;
    RequestView {
        request_id: id,
        app: &app.cfg.name,
        client_ip,
        method,
        path: canonical.as_deref().unwrap_or(uri.path()),
        raw_path: uri.path(),
        query: uri.query(),
        headers,
        body: b"",
        body_truncated: false,
        tls,
    }
}

/// Judge one text message from the client; a block records an event and closes with 1008.
/// The close code is the blocking stage's (1008 unless it chose one: a GraphQL subprotocol's
/// 4400 for a message it does not allow) and the close reason the first reason's code.
pub(super) fn judge_message(s: &Session, cx: &mut palisade_core::Context, text: &str) -> Result<(), Violation> {
    let app = &s.snap.apps[s.app_idx];
    if app.stages.is_empty() {
        return Ok(());
    }
    let (method, uri, headers, _) = &s.judged;
    let view = handshake_view(app, &s.judged, s.id.as_str(), s.client_ip, s.tls);
    let mut monitored = Vec::new();
    let blocked = palisade_core::run_message_stages(&app.stages, &view, text, cx, &mut monitored);
    if blocked.is_none() && monitored.is_empty() {
        return Ok(());
    }
    let mut rec = Record { app: Some(s.app_idx), ..Record::default() };
    for (stage, reason) in &monitored {
        tracing::warn!(request_id = s.id.as_str(), app = %app.cfg.name, stage, reason = %reason, "monitor: websocket message would have been blocked");
    }
    rec.monitored(monitored.into_iter(), || Captured::new(method, uri, headers));
    let verdict = match blocked {
        Some((stage, close, reasons)) => {
            let first: Option<&Reason> = reasons.first();
            tracing::warn!(request_id = s.id.as_str(), app = %app.cfg.name, stage, reason = %first.map(|r| r.to_string()).unwrap_or_default(), "websocket message blocked");
            let why = first.map_or(Cow::Borrowed("message blocked"), |r| r.code.clone());
            let code = close.filter(|c| matches!(c, 1008 | 4000..=4999)).unwrap_or(1008);
            rec.blocked(stage, reasons, || Captured::new(method, uri, headers));
            Err(violation(code, why))
        }
        None => Ok(()),
    };
    record::event(&s.snap, s.events.as_ref(), rec, &s.id, s.client_ip, 101, Duration::ZERO);
    verdict
}
