//! The judge: a compiled spec plus the app's settings, applied to one request or response.
//!
//! Request, in order (each step reports findings; see [`Finding`]):
//! 1. route: method + path → operation ([`crate::router`]); none: `openapi.path_not_found` or
//!    `openapi.method_not_allowed` (the `undefined` action);
//! 2. security requirements: presence of the credentials the operation's requirement sets ask
//!    for (`openapi.security_missing`);
//! 3. parameters: path, query, header, cookie, decoded by style ([`crate::params`]), coerced to
//!    JSON and validated against their schemas (`openapi.parameter_missing`,
//!    `openapi.parameter_invalid`); query parameters nobody declares
//!    (`openapi.query_unknown`, the `unknown_query` action);
//! 4. body (body phase): required, media type selected among the declared ranges
//!    (`openapi.media_type_unsupported`), decoded (JSON, form, multipart, text, XML) and
//!    validated (`openapi.body_malformed`, `openapi.body_invalid`, shadow fields as
//!    `openapi.body_unknown_field`, the `unknown_fields` action).
//!
//! Response: status declared (or `default`), media type, headers, body schema.
//!
//! Per-request memory comes from a thread-local [`Scratch`] that is reused: judging a valid
//! request allocates nothing in the steady state except the findings it returns.

use std::cell::RefCell;
use std::sync::Arc;

use http::HeaderMap;
use palisade_core::{Mode, Reason, RequestView, ResponseView, Verdict};
use palisade_json::Tape;
use palisade_schema::{Direction, Options, Violation, ViolationKind};

use palisade_body::form::{Query, QueryError};
use palisade_body::json::write_json_str;
use palisade_body::media::{self, MediaKind};

use crate::model::{Api, MediaType, Operation, Param, ParamIn, SecurityRequirement, SecurityScheme, StatusKey, Style};
use crate::params::{self, Cookies, Decoded, HeaderSource, Invalid, ParamDecoder, PathSource, Sources};
use crate::router::{Lookup, Span};
use crate::settings::{Action, Settings};

/// Reason codes, stable: they appear in block responses, logs and events.
pub mod code {
    pub const PATH_NOT_FOUND: &str = "openapi.path_not_found";
    pub const METHOD_NOT_ALLOWED: &str = "openapi.method_not_allowed";
    pub const SECURITY_MISSING: &str = "openapi.security_missing";
    pub const SCOPE_MISSING: &str = "openapi.scope_missing";
    pub const PARAMETER_MISSING: &str = "openapi.parameter_missing";
    pub const PARAMETER_INVALID: &str = "openapi.parameter_invalid";
    pub const QUERY_UNKNOWN: &str = "openapi.query_unknown";
    pub const BODY_MISSING: &str = "openapi.body_missing";
    pub const BODY_UNEXPECTED: &str = "openapi.body_unexpected";
    pub const MEDIA_TYPE_UNSUPPORTED: &str = "openapi.media_type_unsupported";
    pub const BODY_MALFORMED: &str = "openapi.body_malformed";
    pub const BODY_INVALID: &str = "openapi.body_invalid";
    pub const BODY_UNKNOWN_FIELD: &str = "openapi.body_unknown_field";
    pub const RESPONSE_STATUS_UNDECLARED: &str = "openapi.response_status_undeclared";
    pub const RESPONSE_MEDIA_TYPE: &str = "openapi.response_media_type";
    pub const RESPONSE_HEADER_MISSING: &str = "openapi.response_header_missing";
    pub const RESPONSE_HEADER_INVALID: &str = "openapi.response_header_invalid";
    pub const RESPONSE_BODY_MALFORMED: &str = "openapi.response_body_malformed";
    pub const RESPONSE_BODY_INVALID: &str = "openapi.response_body_invalid";
}

/// What a finding asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    Block,
    Monitor,
}

/// One thing the spec does not allow.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    pub code: &'static str,
    /// `path.id`, `query.limit`, `header.X-Api-Key`, `cookie.session`, `body`,
    /// `body/users/3/id`, `response.body/items/0`.
    pub location: String,
    /// The constraint broken; never more than a short truncated piece of a value.
    pub detail: String,
    pub severity: Severity,
    /// The status this kind of violation maps to with `status_by_violation`.
    pub status: u16,
}

impl Finding {
    pub fn reason(&self) -> Reason {
        let mut r = Reason::new(self.code);
        if !self.location.is_empty() {
            r = r.at(self.location.clone());
        }
        if !self.detail.is_empty() {
            r = r.detail(self.detail.clone());
        }
        r
    }
}

/// Which phase of the request is judged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Route, security, parameters (no body yet).
    Head,
    /// The body only (the head was judged already).
    Body,
    /// Both, for offline judging.
    Whole,
}

/// Reusable per-thread memory for judging.
#[derive(Default)]
pub struct Scratch {
    spans: Vec<Span>,
    query: Query,
    cookies: Cookies,
    params: ParamDecoder,
    json: String,
    tape: Tape,
    schema: palisade_schema::Scratch,
    fused: palisade_schema::FusedScratch,
    violations: Vec<Violation>,
    unknown: Vec<usize>,
    form: crate::form::FormDecoder,
    multipart: crate::multipart::MultipartDecoder,
    mismatches: Vec<crate::multipart::ContentTypeMismatch>,
    /// The request body (address and length) that the fused validator last found valid with
    /// its settled strings listed in `fused` ([`Judge::settled_strings`]).
    settled: Option<(usize, usize)>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// A compiled spec with the app's settings applied.
pub struct Judge {
    pub api: Api,
    pub settings: Settings,
    /// Per operation: (request mode, response mode) after overrides.
    modes: Vec<(Mode, Mode)>,
    /// Per operation, per declared response (spec order, then `default`): its headers as
    /// parameters, so that they decode like header parameters.
    resp_headers: Vec<Vec<Vec<Param>>>,
    wants_body: bool,
    wants_response: bool,
    /// Per operation: its name for other stages (`operationId`, else `METHOD /template`).
    op_names: Vec<Arc<str>>,
    /// JSON bodies go through the fused validator first (see [`Judge::set_fused`]).
    fused: bool,
}

impl std::fmt::Debug for Judge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Judge").field("operations", &self.api.operations.len()).finish()
    }
}

/// An override that names no operation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OverrideError {
    pub line: usize,
    pub col: usize,
    pub path: String,
    pub message: String,
}

impl Judge {
    /// Apply `settings` to a compiled spec. Fails when an override names no operation.
    pub fn new(api: Api, settings: Settings) -> Result<Judge, Vec<OverrideError>> {
        let mut modes = vec![(settings.request, settings.response); api.operations.len()];
        let mut errors = Vec::new();
        for o in &settings.overrides {
            let hits: Vec<usize> = api.operations.iter().enumerate().filter(|(_, op)| names_operation(op, &o.target)).map(|(i, _)| i).collect();
            if hits.is_empty() {
                errors.push(OverrideError {
                    line: o.line,
                    col: o.col,
                    path: o.path.clone(),
                    message: format!("`{}` matches no operation of the spec (use an operationId or `METHOD /template`)", o.target),
                });
            }
            for i in hits {
                if let Some(m) = o.request {
                    modes[i].0 = m;
                }
                if let Some(m) = o.response {
                    modes[i].1 = m;
                }
            }
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        let resp_headers = api
            .operations
            .iter()
            .map(|op| op.responses.by_status.iter().map(|(_, r)| r).chain(op.responses.default.iter()).map(|r| header_params(&r.headers)).collect())
            .collect();
        // Decided by the settings, not by this version of the spec: a refreshed spec may add
        // bodies and responses, and the proxy asks only once per configuration.
        let wants_body = settings.request != Mode::Off || settings.overrides.iter().any(|o| o.request.is_some_and(|m| m != Mode::Off));
        let wants_response = settings.response != Mode::Off || settings.overrides.iter().any(|o| o.response.is_some_and(|m| m != Mode::Off));
        let op_names = api.operations.iter().map(|op| Arc::from(op.id.clone().unwrap_or_else(|| format!("{} {}", op.method, op.template)))).collect();
        Ok(Judge { api, settings, modes, resp_headers, wants_body, wants_response, op_names, fused: true })
    }

    /// Whether JSON bodies are first checked by the one-pass fused validator
    /// ([`palisade_schema::Schemas::validate_fused`]; on by default). Findings are the same
    /// either way (a body it does not pass is judged by the tape validator); off is for
    /// differential tests and diagnostics.
    pub fn set_fused(&mut self, on: bool) {
        self.fused = on;
    }

    pub fn wants_body(&self) -> bool {
        self.wants_body
    }

    pub fn wants_response(&self) -> bool {
        self.wants_response
    }

    /// Judge a request (or one phase of it). Findings are appended to `out`: at most
    /// `max_violations` that block and, apart from them, at most `max_violations` that are only
    /// monitored, so monitored findings (shadow fields, unknown query parameters under
    /// `monitor`) never use up the budget of the findings that decide a block. Returns the index of the operation the request matched (see
    /// [`Judge::operation_name`]), from the same router lookup.
    pub fn check_request(&self, req: &RequestView<'_>, phase: Phase, out: &mut Vec<Finding>) -> Option<usize> {
        self.check_request_granted(req, phase, None, out)
    }

    /// Like [`Judge::check_request`], for a client whose token the access stage verified:
    /// `granted` holds its scopes, and an operation whose security requirements name scopes
    /// (OAuth2 / OpenID Connect / bearer) that no alternative grants gets
    /// `openapi.scope_missing` (403).
    pub fn check_request_granted(&self, req: &RequestView<'_>, phase: Phase, granted: Option<&[String]>, out: &mut Vec<Finding>) -> Option<usize> {
        SCRATCH.with(|s| match s.try_borrow_mut() {
            Ok(mut s) => self.request(req, phase, granted, &mut s, out),
            Err(_) => self.request(req, phase, granted, &mut Scratch::default(), out),
        })
    }

    /// After [`Judge::check_request_granted`] judged the body phase of a request on this
    /// thread: the strings of its JSON body `body` that the schema settles
    /// ([`palisade_schema::FusedScratch::settled`]: strings valid against an `enum` or a
    /// date, time or UUID format), when the body was valid as sent
    /// (the one-pass validator accepted it; a body with findings lists none).
    pub fn settled_strings(body: &[u8]) -> Option<palisade_core::SettledStrings> {
        SCRATCH.with(|s| {
            let s = s.try_borrow().ok()?;
            let spans = s.fused.settled();
            (s.settled == Some((body.as_ptr() as usize, body.len())) && !spans.is_empty()).then(|| palisade_core::SettledStrings::new(body, spans))
        })
    }

    /// Judge an upstream response to `req`.
    pub fn check_response(&self, req: &RequestView<'_>, resp: &ResponseView<'_>, out: &mut Vec<Finding>) {
        SCRATCH.with(|s| match s.try_borrow_mut() {
            Ok(mut s) => self.response(req, resp, &mut s, out),
            Err(_) => self.response(req, resp, &mut Scratch::default(), out),
        })
    }

    /// Turn findings into a verdict: block when any finding blocks (with the status the
    /// settings ask for), monitor when all only monitor. The reasons are at most
    /// `max_violations`, those that block first.
    pub fn verdict(&self, findings: &[Finding]) -> Verdict {
        if findings.is_empty() {
            return Verdict::Allow;
        }
        let limit = self.limit().max(1);
        let blocking = findings.iter().filter(|f| f.severity == Severity::Block);
        let monitored = findings.iter().filter(|f| f.severity == Severity::Monitor);
        let reasons: Vec<Reason> = blocking.chain(monitored).take(limit).map(Finding::reason).collect();
        match findings.iter().find(|f| f.severity == Severity::Block) {
            Some(first) => {
                let status = if self.settings.status_by_violation { Some(first.status) } else { self.settings.block_status };
                Verdict::Block { status, reasons }
            }
            None => Verdict::Monitor { reasons },
        }
    }

    fn limit(&self) -> usize {
        self.settings.max_violations
    }

    /// The name of operation `op` for other stages: its `operationId`, else `METHOD /template`.
    pub fn operation_name(&self, op: usize) -> &Arc<str> {
        &self.op_names[op]
    }

    fn request(&self, req: &RequestView<'_>, phase: Phase, granted: Option<&[String]>, s: &mut Scratch, out: &mut Vec<Finding>) -> Option<usize> {
        s.settled = None;
        let method = req.method.as_str();
        let (op_id, names) = match self.api.router.lookup(method, req.path, &mut s.spans) {
            Lookup::Found { op, names } => (op, names),
            Lookup::MethodNotAllowed { allowed } => {
                if phase != Phase::Body {
                    let detail = format!("{method} is not declared for this path (allowed: {allowed})");
                    push(out, self.limit(), self.settings.undefined, Mode::Block, code::METHOD_NOT_ALLOWED, String::new(), detail, 405);
                }
                return None;
            }
            Lookup::NotFound => {
                if phase != Phase::Body {
                    let detail = format!("{method} {} is not in the spec", truncate(req.path, 64));
                    push(out, self.limit(), self.settings.undefined, Mode::Block, code::PATH_NOT_FOUND, String::new(), detail, 404);
                }
                return None;
            }
        };
        let op = &self.api.operations[op_id];
        let mode = self.modes[op_id].0;
        if mode == Mode::Off {
            return Some(op_id);
        }
        if phase != Phase::Body {
            self.head(op, mode, req, names, granted, s, out);
        }
        if phase != Phase::Head && !decided(out, self.limit(), mode) {
            self.body(op, mode, req, s, out);
        }
        Some(op_id)
    }

    #[allow(clippy::too_many_arguments)]
    fn head(&self, op: &Operation, mode: Mode, req: &RequestView<'_>, names: &[String], granted: Option<&[String]>, s: &mut Scratch, out: &mut Vec<Finding>) {
        let limit = self.limit();
        let headers = Headers(req.headers);
        s.cookies.clear();
        for v in req.headers.get_all(http::header::COOKIE) {
            if s.cookies.add_header(v.as_bytes()).is_err() {
                break;
            }
        }
        let query_ok = s.query.parse(req.query.unwrap_or("").as_bytes());
        if let Err(QueryError::TooManyPairs { limit: l }) = query_ok {
            push(out, limit, Action::Block, mode, code::PARAMETER_INVALID, "query".into(), format!("more than {l} query parameters"), 400);
            return;
        }
        // Security requirements.
        if let Some(alternatives) = &op.security {
            if !alternatives.is_empty() && !alternatives.iter().any(|all| all.iter().all(|r| self.satisfied(r, req.headers, &s.query, &s.cookies))) {
                let wanted: Vec<String> = alternatives.iter().map(|all| all.iter().map(|r| r.scheme.as_str()).collect::<Vec<_>>().join(" + ")).collect();
                let detail = format!("credentials required: {}", wanted.join(" or "));
                push(out, limit, Action::Block, mode, code::SECURITY_MISSING, String::new(), detail, 401);
            } else if let Some(granted) = granted {
                // A verified token: some alternative must also grant every scope it names on
                // token schemes.
                let token_scheme = |r: &SecurityRequirement| {
                    self.api
                        .security_schemes
                        .iter()
                        .any(|(n, sc)| *n == r.scheme && matches!(sc, SecurityScheme::Bearer | SecurityScheme::OAuth2 | SecurityScheme::OpenIdConnect))
                };
                let scopes_ok = |all: &Vec<SecurityRequirement>| {
                    all.iter().filter(|r| token_scheme(r)).all(|r| r.scopes.iter().all(|want| granted.iter().any(|g| g == want)))
                };
                if !alternatives.is_empty()
                    && !alternatives.iter().any(|all| all.iter().all(|r| self.satisfied(r, req.headers, &s.query, &s.cookies)) && scopes_ok(all))
                {
                    let wanted: Vec<String> = alternatives.iter().flatten().filter(|r| token_scheme(r)).flat_map(|r| r.scopes.iter().cloned()).collect();
                    let detail = format!("the token lacks a required scope ({})", wanted.join(" "));
                    push(out, limit, Action::Block, mode, code::SCOPE_MISSING, String::new(), detail, 403);
                }
            }
        }
        // Parameters.
        s.params.options.empty_values = self.settings.empty_values;
        let path = PathParams { names, spans: &s.spans, path: req.path };
        let src = Sources { path: &path, query: &s.query, headers: &headers, cookies: &s.cookies, params: &op.params };
        for p in &op.params {
            if decided(out, limit, mode) {
                return;
            }
            let location = || format!("{}.{}", p.location.as_str(), p.name);
            match s.params.decode(p, &src, &self.api.schemas, &mut s.json) {
                Decoded::Missing => {
                    if p.required {
                        push(out, limit, Action::Block, mode, code::PARAMETER_MISSING, location(), "required parameter is missing".into(), 400);
                    }
                }
                Decoded::Empty => {}
                Decoded::Invalid(why) => push(out, limit, Action::Block, mode, code::PARAMETER_INVALID, location(), describe_invalid(why), 400),
                Decoded::Json => {
                    let Some(schema) = p.schema else { continue };
                    let opts = Options { direction: Direction::Request, shadow_unknown: false, max_violations: room(out, limit, mode), max_unknown: 0 };
                    if self.fused && self.api.schemas.validate_fused(schema, s.json.as_bytes(), &opts, &mut s.fused) {
                        continue;
                    }
                    if let Err(e) = palisade_json::parse_into(s.json.as_bytes(), &mut s.tape, &palisade_json::Limits::default()) {
                        // A `content` parameter whose JSON is malformed (the decoder checked
                        // syntax already, so this is a limit).
                        push(out, limit, Action::Block, mode, code::PARAMETER_INVALID, location(), e.to_string(), 400);
                        continue;
                    }
                    s.violations.clear();
                    let root = s.tape.root(s.json.as_bytes()).index();
                    self.api.schemas.validate_with(schema, &s.tape, s.json.as_bytes(), root, &opts, &mut s.schema, &mut s.violations);
                    for v in &s.violations {
                        let loc = if v.path.is_empty() { location() } else { format!("{}/{}", location(), v.path) };
                        push(out, limit, Action::Block, mode, code::PARAMETER_INVALID, loc, v.message.clone(), 400);
                    }
                }
            }
        }
        // Query parameters nobody declared.
        if self.settings.unknown_query != Action::Pass {
            s.unknown.clear();
            params::unknown_query_params(&op.params, &self.api.schemas, &s.query, &mut s.unknown);
            for &i in &s.unknown {
                let name = s.query.get(i).name;
                if self.is_security_query_key(op, name) {
                    // An API key sent in the query is declared by the security scheme.
                    continue;
                }
                push(
                    out,
                    limit,
                    self.settings.unknown_query,
                    mode,
                    code::QUERY_UNKNOWN,
                    format!("query.{}", truncate(name, 64)),
                    "not declared by the operation".into(),
                    400,
                );
            }
        }
    }

    /// Is `name` the query parameter of an apiKey scheme the operation's requirements name?
    fn is_security_query_key(&self, op: &Operation, name: &str) -> bool {
        let Some(alternatives) = &op.security else { return false };
        alternatives.iter().flatten().any(|r| {
            self.api
                .security_schemes
                .iter()
                .any(|(n, scheme)| *n == r.scheme && matches!(scheme, SecurityScheme::ApiKey { name: key, location: ParamIn::Query } if key == name))
        })
    }

    fn satisfied(&self, r: &SecurityRequirement, headers: &HeaderMap, query: &Query, cookies: &Cookies) -> bool {
        let Some((_, scheme)) = self.api.security_schemes.iter().find(|(n, _)| *n == r.scheme) else { return true };
        let auth_scheme = |want: &str| {
            headers.get_all(http::header::AUTHORIZATION).iter().any(|v| {
                let v = v.as_bytes();
                v.len() > want.len() + 1
                    && v[..want.len()].eq_ignore_ascii_case(want.as_bytes())
                    && v[want.len()] == b' '
                    && v[want.len() + 1..].iter().any(|b| *b != b' ')
            })
        };
        match scheme {
            SecurityScheme::ApiKey { name, location } => match location {
                ParamIn::Header => headers.get_all(name.as_str()).iter().any(|v| !v.is_empty()),
                ParamIn::Query => query.iter().any(|p| p.name == name && !p.raw_value.is_empty()),
                ParamIn::Cookie => cookies.iter().any(|(n, v)| n == name.as_bytes() && !v.is_empty()),
                ParamIn::Path => true,
            },
            SecurityScheme::Bearer | SecurityScheme::OAuth2 | SecurityScheme::OpenIdConnect => auth_scheme("bearer"),
            SecurityScheme::Basic => auth_scheme("basic"),
            SecurityScheme::OtherHttp(s) => auth_scheme(s),
            SecurityScheme::Unchecked(_) => true,
        }
    }

    fn body(&self, op: &Operation, mode: Mode, req: &RequestView<'_>, s: &mut Scratch, out: &mut Vec<Finding>) {
        let limit = self.limit();
        let Some(rb) = &op.body else {
            if !req.body.is_empty() {
                push(out, limit, Action::Block, mode, code::BODY_UNEXPECTED, "body".into(), "the operation declares no request body".into(), 400);
            }
            return;
        };
        if req.body.is_empty() {
            // A zero-length body sent as a declared form, text or binary media type is that
            // type's empty value (the empty form is `{}`, empty text is `""`: Stripe's SDKs
            // POST an empty form when no parameter is set), judged like any other. JSON, XML
            // and multipart have no empty value, and an undeclared type says nothing: there,
            // no body was sent.
            let ct = req.headers.get(http::header::CONTENT_TYPE).and_then(|v| v.to_str().ok());
            let empty_value = ct
                .and_then(|ct| media::select_parsed(ct, rb.content.iter().map(|m| m.range.as_str())).ok())
                .is_some_and(|(_, sent)| matches!(sent.kind(), MediaKind::Form | MediaKind::Text | MediaKind::Other));
            if !empty_value {
                if rb.required {
                    push(out, limit, Action::Block, mode, code::BODY_MISSING, "body".into(), "a request body is required".into(), 400);
                }
                return;
            }
        }
        let content_type = req.headers.get(http::header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("application/octet-stream");
        let (idx, sent) = match media::select_parsed(content_type, rb.content.iter().map(|m| m.range.as_str())) {
            Ok(x) => x,
            Err(media::SelectError::BadContentType(_)) => {
                let detail = format!("Content-Type {:?} is not a media type", truncate(content_type, 64));
                push(out, limit, Action::Block, mode, code::MEDIA_TYPE_UNSUPPORTED, "header.Content-Type".into(), detail, 415);
                return;
            }
            Err(media::SelectError::NoMatch) => {
                let declared: Vec<&str> = rb.content.iter().map(|m| m.range.as_str()).collect();
                let detail = format!("{} is not declared (declared: {})", truncate(content_type, 64), declared.join(", "));
                push(out, limit, Action::Block, mode, code::MEDIA_TYPE_UNSUPPORTED, "header.Content-Type".into(), detail, 415);
                return;
            }
        };
        if req.body_truncated {
            // Only a prefix was buffered: it cannot be parsed as a whole. The proxy logs that
            // the rest streamed uninspected.
            return;
        }
        let mt = &rb.content[idx];
        let shadow = self.settings.unknown_fields != Action::Pass;
        self.payload(mt, &sent, req.body, Direction::Request, shadow, mode, s, out);
    }

    /// Decode and validate a body of media type `mt` (the declared entry) sent as `sent` (the
    /// `Content-Type`, parsed once by [`media::select_parsed`]).
    #[allow(clippy::too_many_arguments)]
    fn payload(
        &self,
        mt: &MediaType,
        sent: &media::MediaType<'_>,
        body: &[u8],
        dir: Direction,
        shadow: bool,
        mode: Mode,
        s: &mut Scratch,
        out: &mut Vec<Finding>,
    ) {
        let limit = self.limit();
        // A bad request is the client's fault (400), a bad response the upstream's (502).
        let (malformed, invalid, loc, status) = match dir {
            Direction::Request => (code::BODY_MALFORMED, code::BODY_INVALID, "body", 400),
            Direction::Response => (code::RESPONSE_BODY_MALFORMED, code::RESPONSE_BODY_INVALID, "response.body", 502),
        };
        let kind = sent.kind();
        // What to validate: the body itself (JSON) or JSON made from it (form, multipart, text).
        let from_body = match kind {
            MediaKind::Json => true,
            MediaKind::Form => {
                if let Err(e) = s.form.decode(body, mt.schema, &mt.encoding, &self.api.schemas, &mut s.json) {
                    push(out, limit, Action::Block, mode, malformed, loc.into(), describe_form(&e), status);
                    return;
                }
                false
            }
            MediaKind::Multipart => {
                let boundary = match palisade_body::multipart::boundary_of(sent) {
                    Ok(b) => b,
                    Err(e) => {
                        push(out, limit, Action::Block, mode, malformed, loc.into(), e.to_string(), status);
                        return;
                    }
                };
                let mut parts = Vec::new();
                if let Err(e) = palisade_body::multipart::parse(body, &boundary, &palisade_body::multipart::Limits::default(), &mut parts) {
                    push(out, limit, Action::Block, mode, malformed, loc.into(), e.to_string(), status);
                    return;
                }
                s.mismatches.clear();
                if let Err(e) = s.multipart.to_json(&parts, mt.schema, &mt.encoding, &self.api.schemas, &mut s.json, &mut s.mismatches) {
                    push(out, limit, Action::Block, mode, malformed, loc.into(), describe_part(&e), status);
                    return;
                }
                for m in &s.mismatches {
                    let detail = format!("part content type {} is not {}", truncate(&m.declared, 64), m.expected);
                    push(out, limit, Action::Block, mode, invalid, format!("{loc}/{}", m.name), detail, status);
                }
                false
            }
            MediaKind::Xml => {
                if let Err(e) = palisade_body::xml::check(body, &palisade_body::xml::Limits::default()) {
                    push(out, limit, Action::Block, mode, malformed, loc.into(), format!("not well-formed XML: {:?} at byte {}", e.kind, e.offset), status);
                }
                // XML bodies are checked for well-formedness and size only.
                return;
            }
            MediaKind::Text => {
                let Ok(text) = std::str::from_utf8(body) else {
                    push(out, limit, Action::Block, mode, malformed, loc.into(), "text body is not UTF-8".into(), status);
                    return;
                };
                s.json.clear();
                write_json_str(&mut s.json, text);
                false
            }
            // Binary and other media types: the schema (if any) describes bytes.
            _ => return,
        };
        let Some(schema) = mt.schema else {
            if from_body {
                // No schema: still insist on well-formed JSON.
                if let Err(e) = palisade_json::parse_into(body, &mut s.tape, &palisade_json::Limits::default()) {
                    push(out, limit, Action::Block, mode, malformed, loc.into(), e.to_string(), status);
                }
            }
            return;
        };
        let input: &[u8] = if from_body { body } else { s.json.as_bytes() };
        // Shadow fields are findings of the `unknown_fields` action: their own budget.
        let max_unknown = match severity(self.settings.unknown_fields, mode) {
            Some(sev) if shadow => limit.saturating_sub(count(out, sev)),
            _ => 0,
        };
        let opts = Options { direction: dir, shadow_unknown: shadow, max_violations: room(out, limit, mode), max_unknown };
        // Fast path: one pass, no tape, for a body with nothing to report; anything else is
        // judged below by the tape validator, which says what is wrong and where.
        // A request body valid as sent: its settled strings are listed for the stages after
        // this one ([`Judge::settled_strings`]).
        let settle = from_body && dir == Direction::Request;
        s.fused.record_settled(settle);
        if self.fused && self.api.schemas.validate_fused(schema, input, &opts, &mut s.fused) {
            if settle {
                s.settled = Some((input.as_ptr() as usize, input.len()));
            }
            return;
        }
        if let Err(e) = palisade_json::parse_into(input, &mut s.tape, &palisade_json::Limits::default()) {
            push(out, limit, Action::Block, mode, malformed, loc.into(), e.to_string(), status);
            return;
        }
        s.violations.clear();
        let root = s.tape.root(input).index();
        self.api.schemas.validate_with(schema, &s.tape, input, root, &opts, &mut s.schema, &mut s.violations);
        for v in &s.violations {
            let location = if v.path.is_empty() { loc.to_string() } else { format!("{loc}/{}", v.path) };
            match v.kind {
                ViolationKind::Invalid => push(out, limit, Action::Block, mode, invalid, location, v.message.clone(), status),
                ViolationKind::UnknownProperty => {
                    if dir == Direction::Request {
                        push(out, limit, self.settings.unknown_fields, mode, code::BODY_UNKNOWN_FIELD, location, v.message.clone(), 400)
                    }
                }
            }
        }
    }

    fn response(&self, req: &RequestView<'_>, resp: &ResponseView<'_>, s: &mut Scratch, out: &mut Vec<Finding>) {
        let limit = self.limit();
        let op_id = match self.api.router.lookup(req.method.as_str(), req.path, &mut s.spans) {
            Lookup::Found { op, .. } => op,
            _ => return,
        };
        let mode = self.modes[op_id].1;
        if mode == Mode::Off {
            return;
        }
        let op = &self.api.operations[op_id];
        let responses = &op.responses;
        let exact = responses.by_status.iter().position(|(k, _)| *k == StatusKey::Exact(resp.status));
        let range = || responses.by_status.iter().position(|(k, _)| *k == StatusKey::Range((resp.status / 100) as u8));
        let (idx, declared) = match exact.or_else(range) {
            Some(i) => (i, &responses.by_status[i].1),
            None => match &responses.default {
                Some(d) => (responses.by_status.len(), d),
                None => {
                    let detail = format!("status {} is not declared for {} {}", resp.status, op.method, op.template);
                    push(out, limit, Action::Block, mode, code::RESPONSE_STATUS_UNDECLARED, "response.status".into(), detail, 502);
                    return;
                }
            },
        };
        // Headers.
        let headers = Headers(resp.headers);
        let no_path = PathParams { names: &[], spans: &[], path: "" };
        s.query.parse(b"").ok();
        s.cookies.clear();
        let hparams = &self.resp_headers[op_id][idx];
        let src = Sources { path: &no_path, query: &s.query, headers: &headers, cookies: &s.cookies, params: hparams };
        for p in hparams {
            let location = || format!("response.header.{}", p.name);
            match s.params.decode(p, &src, &self.api.schemas, &mut s.json) {
                Decoded::Missing => {
                    if p.required {
                        push(out, limit, Action::Block, mode, code::RESPONSE_HEADER_MISSING, location(), "required header is missing".into(), 502);
                    }
                }
                Decoded::Empty => {}
                Decoded::Invalid(why) => push(out, limit, Action::Block, mode, code::RESPONSE_HEADER_INVALID, location(), describe_invalid(why), 502),
                Decoded::Json => {
                    let Some(schema) = p.schema else { continue };
                    if palisade_json::parse_into(s.json.as_bytes(), &mut s.tape, &palisade_json::Limits::default()).is_err() {
                        continue;
                    }
                    let opts = Options { direction: Direction::Response, shadow_unknown: false, max_violations: room(out, limit, mode), max_unknown: 0 };
                    s.violations.clear();
                    let root = s.tape.root(s.json.as_bytes()).index();
                    self.api.schemas.validate_with(schema, &s.tape, s.json.as_bytes(), root, &opts, &mut s.schema, &mut s.violations);
                    for v in &s.violations {
                        push(out, limit, Action::Block, mode, code::RESPONSE_HEADER_INVALID, location(), v.message.clone(), 502);
                    }
                }
            }
        }
        // Body. A response that declares no content is not judged on its body (many specs
        // leave error bodies undescribed).
        if declared.content.is_empty() || resp.body.is_empty() || resp.body_truncated || resp.body_undecodable {
            return;
        }
        let content_type = resp.headers.get(http::header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("application/octet-stream");
        let (i, sent) = match media::select_parsed(content_type, declared.content.iter().map(|m| m.range.as_str())) {
            Ok(x) => x,
            Err(_) => {
                let list: Vec<&str> = declared.content.iter().map(|m| m.range.as_str()).collect();
                let detail = format!("{} is not declared (declared: {})", truncate(content_type, 64), list.join(", "));
                push(out, limit, Action::Block, mode, code::RESPONSE_MEDIA_TYPE, "response.header.Content-Type".into(), detail, 502);
                return;
            }
        };
        self.payload(&declared.content[i], &sent, resp.body, Direction::Response, false, mode, s, out);
    }
}

/// Does `target` (`operationId` or `METHOD /template`) name `op`?
fn names_operation(op: &Operation, target: &str) -> bool {
    if op.id.as_deref() == Some(target) {
        return true;
    }
    match target.split_once(' ') {
        Some((m, t)) => m.eq_ignore_ascii_case(&op.method) && t.trim() == op.template,
        None => false,
    }
}

fn header_params(headers: &[(String, crate::model::Header)]) -> Vec<Param> {
    headers
        .iter()
        .map(|(name, h)| Param {
            name: name.clone(),
            location: ParamIn::Header,
            required: h.required,
            style: Style::Simple,
            explode: false,
            allow_empty_value: false,
            allow_reserved: false,
            schema: h.schema,
            content_type: None,
        })
        .collect()
}

/// What a finding of a category with `action` is under the operation's `mode` (`None`: not
/// recorded).
fn severity(action: Action, mode: Mode) -> Option<Severity> {
    match (action, mode) {
        (Action::Pass, _) | (_, Mode::Off) => None,
        (Action::Block, Mode::Block) => Some(Severity::Block),
        _ => Some(Severity::Monitor),
    }
}

fn count(out: &[Finding], severity: Severity) -> usize {
    out.iter().filter(|f| f.severity == severity).count()
}

/// Whether the verdict can no longer change: `limit` findings of the kind that violations
/// (the `block` action) produce under `mode` are recorded. Monitored findings of other
/// categories (`unknown_fields: monitor`, `unknown_query: monitor`) never decide this, so a
/// violation after any number of them is still looked for.
fn decided(out: &[Finding], limit: usize, mode: Mode) -> bool {
    severity(Action::Block, mode).is_some_and(|sev| count(out, sev) >= limit)
}

/// How many more violations a validation may report (at least 1).
fn room(out: &[Finding], limit: usize, mode: Mode) -> usize {
    severity(Action::Block, mode).map_or(limit, |sev| limit.saturating_sub(count(out, sev))).max(1)
}

/// Record a finding according to the category's `action` and the operation's `mode`. Findings
/// that block and findings that are only monitored are capped apart, at `limit` each.
#[allow(clippy::too_many_arguments)]
fn push(out: &mut Vec<Finding>, limit: usize, action: Action, mode: Mode, code: &'static str, location: String, detail: String, status: u16) {
    let Some(severity) = severity(action, mode) else { return };
    if count(out, severity) >= limit {
        return;
    }
    out.push(Finding { code, location, detail, severity, status });
}

fn truncate(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

fn describe_invalid(why: Invalid) -> String {
    match why {
        Invalid::Decode(e) => e.as_str().to_string(),
        Invalid::Duplicate => "given more than once".into(),
        Invalid::Malformed(m) => format!("malformed: {m}"),
        Invalid::BadBrackets => format!("brackets of a deepObject key not understood (or nested deeper than {})", crate::params::MAX_DEEP_OBJECT_DEPTH),
        Invalid::UnsupportedStyle => "style not usable in this location".into(),
        Invalid::NotJson(e) => format!("not JSON: {} at byte {}", e.message, e.offset),
        Invalid::UnencodedReserved(b) => format!("reserved character {:?} must be percent-encoded", b as char),
    }
}

fn describe_form(e: &crate::form::FormError) -> String {
    use crate::form::FormError;
    match e {
        FormError::TooManyFields { limit } => format!("more than {limit} form fields"),
        FormError::BadName { index, error } => format!("field {index}: {}", error.as_str()),
        FormError::Field { field, reason } => format!("field {}: {}", truncate(field, 64), describe_invalid(*reason)),
    }
}

fn describe_part(e: &crate::multipart::PartError) -> String {
    use crate::multipart::PartError;
    match e {
        PartError::Duplicate { name } => format!("part {} given more than once", truncate(name, 64)),
        PartError::NotJson { name, error } => format!("part {}: not JSON: {} at byte {}", truncate(name, 64), error.message, error.offset),
        PartError::BadUtf8 { name } => format!("part {}: not UTF-8", truncate(name, 64)),
    }
}

/// The router's spans as a parameter source.
struct PathParams<'a> {
    names: &'a [String],
    spans: &'a [Span],
    path: &'a str,
}

impl PathSource for PathParams<'_> {
    fn path_param(&self, name: &str) -> Option<&[u8]> {
        let i = self.names.iter().position(|n| n == name)?;
        self.spans.get(i).map(|s| s.get(self.path).as_bytes())
    }
}

/// A header map as a parameter source.
struct Headers<'a>(&'a HeaderMap);

impl HeaderSource for Headers<'_> {
    fn visit(&self, name: &str, f: &mut dyn FnMut(&[u8])) {
        for v in self.0.get_all(name) {
            f(v.as_bytes())
        }
    }
}

#[cfg(test)]
mod tests;
