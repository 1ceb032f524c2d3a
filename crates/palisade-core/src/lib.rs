//! Shared vocabulary of Palisade's decision engines.
//!
//! Every stage of the request pipeline (access control, OpenAPI validation, attack detection,
//! user rules) is a pure function of a borrowed [`RequestView`] that returns a [`Verdict`]. This
//! crate holds those types and the [`Stage`] contract, and nothing that does I/O, so that the
//! engines can be unit tested, fuzzed and benchmarked without a proxy around them.
//!
//! A stage is asked twice per request:
//! 1. [`Stage::check_head`] as soon as the request head is parsed, before the body is read
//!    (IP lists, rate limits, tokens, path and method checks): a stage that can decide early
//!    saves the cost of buffering a body it would reject anyway;
//! 2. [`Stage::check_body`] once the body has been buffered up to the app's inspection limit.
//!
//! The proxy runs the stages in order and stops at the first [`Verdict::Block`]. A
//! [`Verdict::Monitor`] records what would have been blocked and lets the request go on.
#![forbid(unsafe_code)]

pub mod base64;
pub mod error;
pub mod grpc;
pub mod rawhttp;

use std::borrow::Cow;
use std::fmt;
use std::net::IpAddr;

pub mod path;

pub use error::{Error, ErrorKind};
pub use http;

/// A borrowed view of one request, as the decision engines see it.
///
/// Everything is borrowed from buffers the proxy already owns: building a view allocates nothing.
#[derive(Clone, Copy)]
pub struct RequestView<'a> {
    /// The request id that is sent upstream and returned in `X-Request-Id`.
    pub request_id: &'a str,
    /// Name of the application the request was routed to.
    pub app: &'a str,
    /// Client address after trusted-proxy resolution (`X-Forwarded-For` from trusted peers only).
    pub client_ip: IpAddr,
    pub method: &'a http::Method,
    /// The canonical path ([`path::canonicalize`] under the app's policy), without the query:
    /// what every path matcher (routes, operations, rules, path policies) compares against.
    pub path: &'a str,
    /// The path exactly as the client sent it (still percent-encoded), for attack detection,
    /// which must see the original bytes.
    pub raw_path: &'a str,
    /// Raw query string without the leading `?`, if any.
    pub query: Option<&'a str>,
    pub headers: &'a http::HeaderMap,
    /// The buffered body: empty before the body phase, and a prefix of the body when the
    /// body was larger than the app's inspection limit (see [`RequestView::body_truncated`]).
    pub body: &'a [u8],
    /// True when `body` holds only the first part of a larger body that streams uninspected.
    pub body_truncated: bool,
    /// True when the client connected over TLS.
    pub tls: bool,
}

impl fmt::Debug for RequestView<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RequestView")
            .field("request_id", &self.request_id)
            .field("app", &self.app)
            .field("client_ip", &self.client_ip)
            .field("method", &self.method)
            .field("path", &self.path)
            .field("raw_path", &self.raw_path)
            .field("query", &self.query)
            .field("body_len", &self.body.len())
            .field("body_truncated", &self.body_truncated)
            .finish()
    }
}

/// A borrowed view of the upstream's response, for stages that judge responses (OpenAPI
/// response validation). The body is decoded (`Content-Encoding` removed) when the proxy could
/// decode it; `body_truncated` is set when only a prefix was buffered, `body_undecodable` when
/// the encoding is not one the proxy decodes (the body is then not judged).
#[derive(Clone, Copy)]
pub struct ResponseView<'a> {
    pub status: u16,
    pub headers: &'a http::HeaderMap,
    pub body: &'a [u8],
    pub body_truncated: bool,
    pub body_undecodable: bool,
}

impl fmt::Debug for ResponseView<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResponseView")
            .field("status", &self.status)
            .field("body_len", &self.body.len())
            .field("body_truncated", &self.body_truncated)
            .field("body_undecodable", &self.body_undecodable)
            .finish()
    }
}

/// Why a stage objected to a request: enough to explain the decision to a user and to an
/// operator, and never the raw attack payload beyond a short truncated fragment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reason {
    /// Stable, dotted reason code, e.g. `openapi.body_invalid` or `detect.sqli`.
    pub code: Cow<'static, str>,
    /// Where in the request the problem is, e.g. `query.limit` or `body/users/3/id`.
    pub location: Option<String>,
    /// Human-readable explanation (which constraint, which detector). Shown to the client in
    /// block responses: it must never carry request content.
    pub detail: Option<String>,
    /// The (decoded, truncated) piece of the request that triggered, for logs, events and
    /// `--explain` only: never sent back to the client.
    pub fragment: Option<String>,
}

impl Reason {
    pub fn new(code: impl Into<Cow<'static, str>>) -> Self {
        Reason { code: code.into(), location: None, detail: None, fragment: None }
    }

    pub fn at(mut self, location: impl Into<String>) -> Self {
        self.location = Some(location.into());
        self
    }

    pub fn detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = Some(detail.into());
        self
    }

    pub fn fragment(mut self, fragment: impl Into<String>) -> Self {
        self.fragment = Some(fragment.into());
        self
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.code)?;
        if let Some(loc) = &self.location {
            write!(f, " at {loc}")?;
        }
        if let Some(detail) = &self.detail {
            write!(f, ": {detail}")?;
        }
        if let Some(fragment) = &self.fragment {
            write!(f, " [{:?}]", fragment)?;
        }
        Ok(())
    }
}

/// Who the client is, as far as the access stage established it. Later stages read it (the
/// OpenAPI stage checks an operation's scopes against it) and events record it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Identity {
    /// Name of the API key that authenticated the request (never the key itself).
    pub api_key: Option<String>,
    /// `sub` of a verified JWT.
    pub subject: Option<String>,
    /// True once a JWT was verified (signature and claims).
    pub jwt_verified: bool,
    /// Scopes granted by the verified token (`scope` / `scp` claims).
    pub scopes: Vec<String>,
}

/// A detector (or every detector, `detector: None`) switched off for part of one request by a
/// user rule or a policy exclusion: a false-positive exception.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Exclusion {
    /// Detector name (`sqli`, `xss`...) or category; `None` means every detector.
    pub detector: Option<Cow<'static, str>>,
    /// Field location prefix the exclusion is limited to (`query.q`, `body/comment`); `None`
    /// means the whole request.
    pub location: Option<String>,
}

/// Per-request facts that a stage establishes for the stages after it and for the proxy. One
/// is created per request (empty: creating it allocates nothing) and handed to every stage.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Context {
    pub identity: Identity,
    /// Set when a user rule allowed the request: inspecting stages after it let it through.
    pub allowed_by: Option<String>,
    /// False-positive exceptions that apply to this request.
    pub exclusions: Vec<Exclusion>,
    /// Tags attached by user rules (recorded in events).
    pub tags: Vec<String>,
    /// The OpenAPI operation the request matched, set by the OpenAPI stage in the head phase:
    /// its `operationId`, else `METHOD /template` (`GET /users/{id}`). Shared, so setting it
    /// allocates nothing per request. Detection policy and user rules may depend on it.
    pub operation: Option<std::sync::Arc<str>>,
    /// Header names to remove from the request before it goes upstream (e.g. spoofed claim
    /// headers), applied before `upstream_headers` are added.
    pub strip_upstream: Vec<http::HeaderName>,
    /// Headers to add to the request sent upstream (e.g. verified JWT claims).
    pub upstream_headers: Vec<(http::HeaderName, http::HeaderValue)>,
    /// Headers to add to the response sent to the client, blocked or not (e.g. `RateLimit`,
    /// `Retry-After`).
    pub response_headers: Vec<(http::HeaderName, http::HeaderValue)>,
    /// The values of a request that a protocol-aware stage took apart (GraphQL: argument
    /// literals and variables rather than the query text), for attack detection to inspect in
    /// place of the parts they come from.
    pub protocol_values: Option<std::sync::Arc<ProtocolValues>>,
    /// The strings of the request body that a schema stage found settled by the spec (see
    /// [`SettledStrings`]): attack detection does not inspect them.
    pub settled: Option<SettledStrings>,
}

/// String values of a JSON body whose text the API's schema pins down, found by a schema stage
/// that validated the whole body and found it valid: strings valid against an `enum` (text of
/// the spec) or a format of a closed alphabet (`date`, `date-time`, `time`, `uuid`: digits,
/// hex letters and `-:.+TZ`, which carry no attack of any class). Each as the byte range of its
/// contents between the quotes (strings without escapes only), in document order. (Keys are
/// not listed: detection judges a repeated key once per body already, so listing every key
/// costs more than the few judgements it would spare.)
///
/// Only for the very body it was found on: [`SettledStrings::covers`] answers for values that
/// lie in the same buffer (its address and length), so a body the inspecting stage reads
/// elsewhere (decompressed, converted) is judged in full.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SettledStrings {
    body: (usize, usize),
    spans: Vec<(u32, u32)>,
}

impl SettledStrings {
    /// The settled `spans` (start and length of each string's contents, ascending starts) of
    /// `body`.
    pub fn new(body: &[u8], spans: &[(u32, u32)]) -> SettledStrings {
        SettledStrings { body: (body.as_ptr() as usize, body.len()), spans: spans.to_vec() }
    }

    /// Whether `value` is exactly the contents of a settled string of `body` (the same buffer
    /// as the one these spans were found on).
    pub fn covers(&self, body: &[u8], value: &str) -> bool {
        let start = body.as_ptr() as usize;
        if (start, body.len()) != self.body {
            return false;
        }
        let at = value.as_ptr() as usize;
        if at < start || at + value.len() > start + body.len() {
            return false;
        }
        let (Ok(off), Ok(len)) = (u32::try_from(at - start), u32::try_from(value.len())) else { return false };
        self.spans.binary_search_by_key(&off, |s| s.0).is_ok_and(|i| self.spans[i].1 == len)
    }

    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }
}

/// Values a protocol-aware stage extracted from a request by its grammar, with where they are.
/// Attack detection inspects these instead of the parts they replace: the whole body
/// (`replaces_body`) and the named query-string parameters (`replaces_query`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProtocolValues {
    pub replaces_body: bool,
    pub replaces_query: Vec<String>,
    pub values: Vec<ProtocolValue>,
}

/// One extracted value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProtocolValue {
    /// Where it is (`graphql.mutation.addComment.input.body`, `graphql.variables.q`).
    pub location: String,
    pub value: String,
    /// An object key (of JSON variables) rather than a value.
    pub key: bool,
}

impl Context {
    /// Whether the detector `name` is excluded at `location` for this request.
    pub fn is_excluded(&self, name: &str, location: &str) -> bool {
        self.exclusions.iter().any(|e| e.detector.as_deref().is_none_or(|d| d == name) && e.location.as_deref().is_none_or(|l| location_within(location, l)))
    }
}

/// Decode one `application/x-www-form-urlencoded` value (query parameters, cookies as sent):
/// `%XX` escapes and `+` as a space; a malformed escape stays as it is and invalid UTF-8
/// becomes U+FFFD. Borrows when there is nothing to decode.
pub fn form_decode(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.contains(['%', '+']) {
        return s.into();
    }
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' if i + 2 < b.len() => {
                let hex = |c: u8| (c as char).to_digit(16);
                match (hex(b[i + 1]), hex(b[i + 2])) {
                    (Some(h), Some(l)) => {
                        out.push((h * 16 + l) as u8);
                        i += 3;
                        continue;
                    }
                    _ => out.push(b'%'),
                }
            }
            b'+' => out.push(b' '),
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned().into()
}

/// True when `location` is `prefix` or lies under it (`body/a/b` is within `body/a`, `query.q`
/// within `query`), so that `body/ab` is not within `body/a`.
pub fn location_within(location: &str, prefix: &str) -> bool {
    match location.strip_prefix(prefix) {
        Some(rest) => rest.is_empty() || prefix.ends_with(['/', '.']) || rest.starts_with(['/', '.']),
        None => false,
    }
}

/// A stage's decision about one request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Nothing to object to.
    Allow,
    /// Stop the request. `status` overrides the app's block status when set (e.g. 401, 429).
    Block { status: Option<u16>, reasons: Vec<Reason> },
    /// Would have blocked, but the stage runs in monitor mode: record and let it through.
    Monitor { reasons: Vec<Reason> },
}

impl Verdict {
    /// Block with the app's configured block status.
    pub fn block(reason: Reason) -> Self {
        Verdict::Block { status: None, reasons: vec![reason] }
    }

    /// Block with a specific status (e.g. 401 for a missing token, 429 for a rate limit).
    pub fn block_with_status(status: u16, reason: Reason) -> Self {
        Verdict::Block { status: Some(status), reasons: vec![reason] }
    }

    pub fn monitor(reason: Reason) -> Self {
        Verdict::Monitor { reasons: vec![reason] }
    }

    pub fn is_allow(&self) -> bool {
        matches!(self, Verdict::Allow)
    }
}

/// How a stage acts on what it finds; shared by every engine's configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Mode {
    #[default]
    Block,
    Monitor,
    Off,
}

impl Mode {
    /// Turn a finding into a verdict according to the mode.
    pub fn verdict(self, reasons: Vec<Reason>) -> Verdict {
        if reasons.is_empty() {
            return Verdict::Allow;
        }
        match self {
            Mode::Block => Verdict::Block { status: None, reasons },
            Mode::Monitor => Verdict::Monitor { reasons },
            Mode::Off => Verdict::Allow,
        }
    }
}

/// One step of the request pipeline. Implementations are pure: no I/O, no clocks they do not
/// receive, no global state. They are built once per configuration snapshot and shared by all
/// workers, hence `Send + Sync`.
pub trait Stage: Send + Sync {
    /// Short stable name, used in metrics, logs and reason reporting (`access`, `openapi`...).
    fn name(&self) -> &'static str;

    /// Called once the request head is parsed, before any body byte is read. `cx` carries what
    /// earlier stages established (identity, exceptions) and takes what this one adds.
    fn check_head(&self, _req: &RequestView<'_>, _cx: &mut Context) -> Verdict {
        Verdict::Allow
    }

    /// Whether this stage needs the request body. When no stage of an app does, the proxy
    /// streams bodies straight through without buffering them.
    fn wants_body(&self) -> bool {
        false
    }

    /// Called after the body has been buffered (up to the app's inspection limit).
    fn check_body(&self, _req: &RequestView<'_>, _cx: &mut Context) -> Verdict {
        Verdict::Allow
    }

    /// Called with one WebSocket message from the client (a whole text message, reassembled
    /// from its fragments), on a connection whose handshake `req` passed every stage (its
    /// `Sec-WebSocket-Protocol` header is the subprotocol the upstream chose, if any); `cx` is
    /// what the stages established about the handshake, and what earlier stages added for this
    /// message (a protocol-aware stage's [`Context::protocol_values`], which hold for this
    /// message only). Findings are located under `ws.message` (`ws.message/user/name` for a
    /// field of a JSON message) or by the protocol's own locations. The `status` of a
    /// [`Verdict::Block`] is the close code (1008 when `None`).
    fn check_message(&self, _req: &RequestView<'_>, _message: &str, _cx: &mut Context) -> Verdict {
        Verdict::Allow
    }

    /// Whether this stage judges the messages of a WebSocket whose handshake is `req`, whatever
    /// the app's `websocket.inspect` says (a GraphQL endpoint's operations sent over it).
    fn wants_messages(&self, _req: &RequestView<'_>) -> bool {
        false
    }

    /// Whether this stage judges upstream responses. When one does, the proxy buffers the
    /// response (up to the app's response inspection limit) before sending it on.
    fn wants_response(&self) -> bool {
        false
    }

    /// Called with the upstream's response; `req` is the request as it was judged (its body
    /// is empty in this phase). A [`Verdict::Block`] replaces the response with an error.
    fn check_response(&self, _req: &RequestView<'_>, _resp: &ResponseView<'_>, _cx: &Context) -> Verdict {
        Verdict::Allow
    }

    /// Counters this stage keeps about its own decisions, read when `/metrics` is scraped (not
    /// on the request path). The proxy adds the `app` label. Counters live in the stage, so a
    /// reload that rebuilds the stage starts them again from zero (a counter reset, which
    /// Prometheus' `rate()` handles).
    fn counters(&self) -> Vec<CounterSample> {
        Vec::new()
    }
}

/// One counter a stage exports through [`Stage::counters`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CounterSample {
    /// Metric family (`palisade_access_rate_limited_total`).
    pub name: &'static str,
    /// The family's `# HELP` text.
    pub help: &'static str,
    /// Labels besides `app`.
    pub labels: Vec<(&'static str, String)>,
    pub value: u64,
}

/// The outcome of running a list of stages over a request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Set when a stage blocked: the stage's name, the status override and the reasons.
    pub blocked: Option<(&'static str, Option<u16>, Vec<Reason>)>,
    /// Everything that monitor-mode stages would have blocked, with the stage name.
    pub monitored: Vec<(&'static str, Reason)>,
    /// What the stages established about the request (identity, exceptions, header edits).
    pub context: Context,
}

/// Which phase of the request the stages are asked about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Head,
    Body,
}

/// Run the stages that judge responses over one upstream response; stops at the first block.
/// Returns true when the response was blocked.
pub fn run_response_stages(stages: &[Box<dyn Stage>], req: &RequestView<'_>, resp: &ResponseView<'_>, outcome: &mut Outcome) -> bool {
    for stage in stages.iter().filter(|s| s.wants_response()) {
        match stage.check_response(req, resp, &outcome.context) {
            Verdict::Allow => {}
            Verdict::Monitor { reasons } => outcome.monitored.extend(reasons.into_iter().map(|r| (stage.name(), r))),
            Verdict::Block { status, reasons } => {
                outcome.blocked = Some((stage.name(), status, reasons));
                return true;
            }
        }
    }
    false
}

/// Run the stages over one WebSocket message (see [`Stage::check_message`]); stops at the
/// first block, whose stage, close code (when the stage chose one) and reasons are returned.
/// Monitor-mode findings go to `monitored`. What the stages add to `cx` for the message
/// ([`Context::protocol_values`]) is gone when this returns.
pub fn run_message_stages(
    stages: &[Box<dyn Stage>],
    req: &RequestView<'_>,
    message: &str,
    cx: &mut Context,
    monitored: &mut Vec<(&'static str, Reason)>,
) -> Option<(&'static str, Option<u16>, Vec<Reason>)> {
    let saved = cx.protocol_values.take();
    let mut blocked = None;
    for stage in stages {
        match stage.check_message(req, message, cx) {
            Verdict::Allow => {}
            Verdict::Monitor { reasons } => monitored.extend(reasons.into_iter().map(|r| (stage.name(), r))),
            Verdict::Block { status, reasons } => {
                blocked = Some((stage.name(), status, reasons));
                break;
            }
        }
    }
    cx.protocol_values = saved;
    blocked
}

/// Run `stages` in order over `req` for one phase, accumulating into `outcome`; stops at the
/// first block. Returns true when the request was blocked.
pub fn run_stages(stages: &[Box<dyn Stage>], phase: Phase, req: &RequestView<'_>, outcome: &mut Outcome) -> bool {
    // Settled strings are those a stage before the next ones found in this very body.
    if phase == Phase::Body {
        outcome.context.settled = None;
    }
    for stage in stages {
        let verdict = match phase {
            Phase::Head => stage.check_head(req, &mut outcome.context),
            Phase::Body => stage.check_body(req, &mut outcome.context),
        };
        match verdict {
            Verdict::Allow => {}
            Verdict::Monitor { reasons } => {
                outcome.monitored.extend(reasons.into_iter().map(|r| (stage.name(), r)));
            }
            Verdict::Block { status, reasons } => {
                outcome.blocked = Some((stage.name(), status, reasons));
                return true;
            }
        }
    }
    false
}

#[cfg(test)]
mod tests;
