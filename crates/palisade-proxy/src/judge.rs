//! The decision on one request, shared by the two ways a request reaches Palisade: proxied
//! ([`crate::proxy`]) and asked about by another gateway ([`crate::authz`]). Both choose the app
//! and the canonical path with [`choose_app`], run the head and body phases with [`head`] and
//! [`body`] (timed into the app's phase histograms), and conclude with [`Block::record`] or
//! [`allowed`], which log the decision and fill the request's [`Record`] (the event and metrics
//! it leaves behind). No I/O here beyond logging: the callers read bodies and answer.

use std::borrow::Cow;
use std::time::Instant;

use http::{HeaderName, HeaderValue, StatusCode, Uri};
use palisade_core::path::PathPolicy;
use palisade_core::{run_stages, Context, Outcome, Phase, Reason, RequestView};

use crate::code;
use crate::metrics::PhaseKind;
use crate::record::{Captured, Record};
use crate::request_id::RequestId;
use crate::snapshot::{App, Snapshot};

/// Why a request's path is refused: a reason code and its explanation, and the app when one
/// was chosen.
pub struct PathRefusal {
    pub app: Option<usize>,
    pub code: &'static str,
    pub detail: &'static str,
}

/// Choose the app for a request, and the request's canonical path under that app's policy
/// (`None` when it is the path as sent). The app is chosen on the broadest reading of the path
/// ([`PathPolicy::ROUTING`]: every separator some backend honours), so that no spelling of a
/// protected path reaches another app; the app's own reading must then choose the same app,
/// else the path is refused as ambiguous (an app that keeps `%2F` as data, say, cannot be
/// reached by `/admin%2Fx` routed to it as `/admin/x`).
pub fn choose_app(snap: &Snapshot, host: &[u8], raw: &str) -> Result<Option<(usize, Option<String>)>, PathRefusal> {
    use palisade_core::path::canonicalize;
    // `OPTIONS *` (asterisk form) names no path: it is routed as `/` and forwarded as it is.
    if raw == "*" {
        return Ok(snap.router.route_bytes(host, "/").map(|i| (i, None)));
    }
    let refuse = |app, e: palisade_core::path::PathError| PathRefusal { app, code: e.code(), detail: e.detail() };
    let routing = canonicalize(raw, &PathPolicy::ROUTING).map_err(|e| refuse(None, e))?;
    let Some(app) = snap.router.route_bytes(host, &routing) else { return Ok(None) };
    let own = canonicalize(raw, &snap.apps[app].cfg.path.policy).map_err(|e| refuse(Some(app), e))?;
    if own != routing && snap.router.route_bytes(host, &own) != Some(app) {
        return Err(PathRefusal { app: Some(app), code: code::PATH_AMBIGUOUS, detail: "the path names a different application depending on how it is read" });
    }
    Ok(Some((app, own_path(own))))
}

/// The canonical path of a request sent to a named app (the authorization API's `app`): the
/// app's own reading, without routing.
pub fn canonical_for(app: &App, raw: &str) -> Result<Option<String>, PathRefusal> {
    if raw == "*" {
        return Ok(None);
    }
    palisade_core::path::canonicalize(raw, &app.cfg.path.policy).map(own_path).map_err(|e| PathRefusal { app: None, code: e.code(), detail: e.detail() })
}

fn own_path(p: Cow<'_, str>) -> Option<String> {
    match p {
        Cow::Borrowed(_) => None,
        Cow::Owned(s) => Some(s),
    }
}

/// The view the stages get of a request head (`body` empty before the body phase).
#[allow(clippy::too_many_arguments)]
pub fn view<'a>(
    parts: &'a http::request::Parts,
    canonical: Option<&'a str>,
    id: &'a RequestId,
    app: &'a App,
    client_ip: std::net::IpAddr,
    body: &'a [u8],
    truncated: bool,
    tls: bool,
) -> RequestView<'a> {
    RequestView {
        request_id: id.as_str(),
        app: &app.cfg.name,
        client_ip,
        method: &parts.method,
        path: canonical.unwrap_or(parts.uri.path()),
        raw_path: parts.uri.path(),
        query: parts.uri.query(),
        headers: &parts.headers,
        body,
        body_truncated: truncated,
        tls,
    }
}

/// The request as events record it: method, URI, headers.
pub type ReqParts<'a> = (&'a http::Method, &'a Uri, &'a http::HeaderMap);

/// Run the head phase; `Some` when a stage blocked.
pub fn head(app: &App, view: &RequestView<'_>, outcome: &mut Outcome) -> Option<Block> {
    phase(app, Phase::Head, PhaseKind::Head, view, outcome)
}

/// Run the body phase (`view.body` set); `Some` when a stage blocked.
pub fn body(app: &App, view: &RequestView<'_>, outcome: &mut Outcome) -> Option<Block> {
    phase(app, Phase::Body, PhaseKind::Body, view, outcome)
}

fn phase(app: &App, phase: Phase, kind: PhaseKind, view: &RequestView<'_>, outcome: &mut Outcome) -> Option<Block> {
    let t = Instant::now();
    let stop = run_stages(&app.stages, phase, view, outcome);
    app.metrics.phase(kind, t.elapsed());
    stop.then(|| block(app, std::mem::take(outcome), view.request_id))
}

/// Both phases over a request whose body (if any) is already at hand, concluded: the
/// authorization API's decision. `body`: the body and whether it is only its first part;
/// `None` when the body is not known (a gateway that does not send it), and the body phase
/// does not run. On allow, the outcome's context (header edits for upstream and client) is
/// returned.
pub fn judge(
    app: &App,
    view: &RequestView<'_>,
    body_in: Option<(&[u8], bool)>,
    id: RequestId,
    rec: &mut Record,
    req: ReqParts<'_>,
) -> Result<Outcome, Box<Block>> {
    let mut outcome = Outcome::default();
    if !app.stages.is_empty() {
        if let Some(b) = head(app, view, &mut outcome) {
            return Err(Box::new(b));
        }
        if let (Some((bytes, truncated)), true) = (body_in, app.wants_body) {
            let v = RequestView { body: bytes, body_truncated: truncated, ..*view };
            if let Some(b) = body(app, &v, &mut outcome) {
                return Err(Box::new(b));
            }
        }
    }
    allowed(app, &mut outcome, id, rec, req);
    Ok(outcome)
}

/// A stage blocked the request.
pub struct Block {
    pub stage: &'static str,
    /// The status the client gets (the stage's, else the app's `block_status`).
    pub status: StatusCode,
    /// The first reason's code (`STAGE.blocked` when the stage gave none).
    pub code: String,
    pub reasons: Vec<Reason>,
    /// What the stages established (response headers such as `Retry-After`, tags, operation).
    pub context: Context,
}

/// Conclude a blocked outcome (logged here).
pub fn block(app: &App, outcome: Outcome, id: &str) -> Block {
    let Some((stage, status, reasons)) = outcome.blocked else {
        return Block { stage: "internal", status: StatusCode::INTERNAL_SERVER_ERROR, code: "internal".into(), reasons: Vec::new(), context: outcome.context };
    };
    let status = StatusCode::from_u16(status.unwrap_or(app.cfg.block_status)).unwrap_or(StatusCode::FORBIDDEN);
    let code = reasons.first().map(|r| r.code.to_string()).unwrap_or_else(|| format!("{stage}.blocked"));
    let tags = outcome.context.tags.join(",");
    tracing::warn!(request_id = id, app = %app.cfg.name, stage, reason = %reasons.first().map(|r| r.to_string()).unwrap_or_default(), tags = %tags, "blocked");
    Block { stage, status, code, reasons, context: outcome.context }
}

impl Block {
    /// Record the block (its reasons, tags and operation go to the event); the headers the
    /// stages set for the client are returned.
    pub fn record(self, rec: &mut Record, req: ReqParts<'_>) -> Vec<(HeaderName, HeaderValue)> {
        rec.blocked(self.stage, self.reasons, || Captured::new(req.0, req.1, req.2));
        rec.tags = self.context.tags;
        rec.operation = self.context.operation;
        self.context.response_headers
    }
}

/// Conclude an allowed outcome: monitor-mode findings and user-rule tags are logged and
/// recorded.
pub fn allowed(app: &App, outcome: &mut Outcome, id: RequestId, rec: &mut Record, req: ReqParts<'_>) {
    monitored(app, outcome, id, rec, req);
    log_rules(app, outcome, id, rec);
}

/// Monitor-mode findings are logged and recorded (also those of response stages).
#[inline]
pub fn monitored(app: &App, outcome: &mut Outcome, id: RequestId, rec: &mut Record, req: ReqParts<'_>) {
    if outcome.monitored.is_empty() {
        return;
    }
    for (stage, reason) in &outcome.monitored {
        tracing::warn!(request_id = id.as_str(), app = %app.cfg.name, stage, reason = %reason, "monitor: would have blocked");
    }
    rec.monitored(outcome.monitored.drain(..), || Captured::new(req.0, req.1, req.2));
}

/// Tags and allows from user rules: logged, and recorded in the request's event when it has one
/// (monitored or sampled).
fn log_rules(app: &App, outcome: &Outcome, id: RequestId, rec: &mut Record) {
    let cx = &outcome.context;
    if !cx.tags.is_empty() || cx.allowed_by.is_some() {
        tracing::info!(request_id = id.as_str(), app = %app.cfg.name, tags = %cx.tags.join(","), allowed_by = cx.allowed_by.as_deref().unwrap_or("-"), "rules");
    }
    if rec.req.is_some() {
        if !cx.tags.is_empty() {
            rec.tags = cx.tags.clone();
        }
        rec.operation = cx.operation.clone();
    }
}
