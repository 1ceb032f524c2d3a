//! The `detection` stage of the request pipeline: the [`Engine`] driven through
//! [`palisade_core::Stage`]. Head phase: path, query, headers, cookies; body phase: the body.
//!
//! Findings become reasons with code `detect.<category>` (`detect.sqli`), the location
//! (`query.id`) and a detail with the detector, its confidence, the decodings that revealed
//! it and the decoded fragment (at most 64 bytes, escaped). A phase cut short by a limit adds
//! `detect.limit`, acted on per `limits.on_exceed`. Mode, level and exclusions may be overridden
//! per path prefix (matched on the decoded, normalised path; longest prefix wins) and per
//! OpenAPI operation (`Context::operation`, set by the OpenAPI stage), which wins over paths.

use std::cell::RefCell;

use palisade_core::{Context, Mode, Phase, Reason, RequestView, Stage, Verdict};

use crate::engine::{glob, Engine, Exclusion, Finding, Report, Scratch};
use crate::settings::{OperationOverride, PathOverride, Settings};
use crate::{Category, Level};

#[cfg(test)]
mod tests;

thread_local! {
    static SCRATCH: RefCell<Option<(Scratch, Report)>> = const { RefCell::new(None) };
}

pub struct DetectionStage {
    engine: Engine,
    mode: Mode,
    level: Level,
    /// Longest prefix first.
    paths: Vec<PathOverride>,
    operations: std::collections::HashMap<String, OperationOverride>,
    on_exceed: Mode,
}

/// The policy that applies to one request.
#[derive(Clone, Copy, Debug)]
pub struct Policy<'a> {
    pub mode: Mode,
    pub level: Level,
    /// Exclusions of the matching path override and operation override (the app's are the
    /// engine's).
    pub exclusions: [&'a [Exclusion]; 2],
}

impl std::fmt::Debug for DetectionStage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DetectionStage").field("mode", &self.mode).field("level", &self.level).field("engine", &self.engine).finish()
    }
}

/// The reason for one finding.
pub fn reason(f: &Finding) -> Reason {
    // The detail goes to the client: detector, confidence and why, never request content. The
    // decoded fragment goes to logs and events only.
    Reason::new(format!("detect.{}", f.category.as_str()))
        .at(f.location.clone())
        .detail(format!("{} confidence {} ({}) via {}", f.detector, f.confidence, f.why, f.transforms))
        .fragment(f.fragment.clone())
}

/// The order of findings in a verdict: confidence, then how specific the category is.
pub fn strength(f: &Finding) -> (u8, u8) {
    (f.confidence, f.category.specificity())
}

impl DetectionStage {
    /// With the built-in detectors.
    pub fn new(settings: &Settings) -> Result<Self, String> {
        Ok(DetectionStage::with_engine(Engine::new(settings.engine_config())?, settings))
    }

    pub fn with_engine(engine: Engine, settings: &Settings) -> Self {
        let mut paths = settings.paths.clone();
        paths.sort_by_key(|p| std::cmp::Reverse(p.prefix.trim_end_matches('/').len()));
        let operations = settings.operations.iter().map(|o| (o.operation.clone(), o.clone())).collect();
        DetectionStage { engine, mode: settings.mode, level: settings.level, paths, operations, on_exceed: settings.on_exceed }
    }

    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// Mode and level for a canonical request path ([`palisade_core::path`]).
    pub fn policy(&self, path: &str) -> (Mode, Level) {
        let p = self.policy_for(path, None);
        (p.mode, p.level)
    }

    /// The policy for a canonical request path and matched operation: the operation's override, else
    /// the longest path prefix's, else the app's, field by field.
    pub fn policy_for(&self, path: &str, operation: Option<&str>) -> Policy<'_> {
        let path = self.path_override(path);
        let op = operation.and_then(|o| self.operations.get(o));
        let mode = op.and_then(|o| o.mode).or(path.and_then(|p| p.mode)).unwrap_or(self.mode);
        let level = op.and_then(|o| o.level).or(path.and_then(|p| p.level)).unwrap_or(self.level);
        let exclusions = [path.map_or(&[][..], |p| &p.exclusions[..]), op.map_or(&[][..], |o| &o.exclusions[..])];
        Policy { mode, level, exclusions }
    }

    /// The longest path prefix covering the canonical `path` (at a segment boundary).
    fn path_override(&self, path: &str) -> Option<&PathOverride> {
        self.paths.iter().find(|p| palisade_core::path::under_prefix(path, &p.prefix))
    }

    fn judge(&self, req: &RequestView<'_>, phase: Phase, cx: &Context) -> Verdict {
        self.judge_at(req, phase, cx, None)
    }

    /// [`DetectionStage::judge`], with the body's locations moved under `relocate` (`body/a`
    /// becomes `ws.message/a`) before exclusions are applied, so that they name the place the
    /// value came from.
    fn judge_at(&self, req: &RequestView<'_>, phase: Phase, cx: &Context, relocate: Option<&str>) -> Verdict {
        let policy = self.policy_for(req.path, cx.operation.as_deref());
        let (mode, level) = (policy.mode, policy.level);
        if mode == Mode::Off || cx.allowed_by.is_some() {
            return Verdict::Allow;
        }
        // The request's exclusions apply while inspecting, so that excluded hits never count
        // toward the engine's `max_findings` (a request full of excluded hits must not hide
        // the finding after them).
        let excluded = |detector: &str, category: Category, location: &str| {
            let relocated = relocate.and_then(|to| relocated(location, to));
            self.excludes_at(&policy, cx, detector, category, relocated.as_deref().unwrap_or(location))
        };
        let protocol = cx.protocol_values.as_deref();
        // A relocated text (a WebSocket message) is never the body a schema stage read.
        let settled = if relocate.is_none() { cx.settled.as_ref() } else { None };
        SCRATCH.with(|cell| {
            let mut guard = match cell.try_borrow_mut() {
                Ok(g) => g,
                Err(_) => {
                    // Re-entered on this thread (not expected): use fresh buffers.
                    let mut scratch = self.engine.scratch();
                    let mut report = Report::default();
                    self.engine.inspect_phase_excluding(req, phase, level, protocol, settled, &excluded, &mut scratch, &mut report);
                    relocate_findings(&mut report, relocate);
                    return self.verdict(&policy, &report, cx);
                }
            };
            let (scratch, report) = guard.get_or_insert_with(|| (self.engine.scratch(), Report::default()));
            self.engine.inspect_phase_excluding(req, phase, level, protocol, settled, &excluded, scratch, report);
            relocate_findings(report, relocate);
            self.verdict(&policy, report, cx)
        })
    }

    /// The stage's verdict on one phase of a request, as [`Stage::check_head`] and
    /// [`Stage::check_body`] give it, with the engine's findings left in `report` (those that
    /// [`DetectionStage::excludes`] drops included): for tools that show why
    /// (`palisade detect eval`). `report` is cleared when the policy inspects nothing.
    pub fn judge_into(&self, req: &RequestView<'_>, phase: Phase, cx: &Context, scratch: &mut Scratch, report: &mut Report) -> Verdict {
        let policy = self.policy_for(req.path, cx.operation.as_deref());
        if policy.mode == Mode::Off || cx.allowed_by.is_some() {
            report.clear();
            return Verdict::Allow;
        }
        self.engine.inspect_phase(req, phase, policy.level, scratch, report);
        self.verdict(&policy, report, cx)
    }

    /// Whether a finding is dropped by an exclusion: of user rules (`cx`), of the policy's path
    /// and operation overrides (the app's exclusions are the engine's: such findings are
    /// never made).
    pub fn excludes(&self, policy: &Policy<'_>, cx: &Context, f: &Finding) -> bool {
        self.excludes_at(policy, cx, f.detector, f.category, &f.location)
    }

    /// [`DetectionStage::excludes`] for a hit of `detector` (of `category`) at `location`.
    fn excludes_at(&self, policy: &Policy<'_>, cx: &Context, detector: &str, category: Category, location: &str) -> bool {
        let covers = |x: &Exclusion| {
            (x.detector == "*" || x.detector == detector || x.detector == category.as_str()) && glob(x.location.as_bytes(), location.as_bytes())
        };
        (!cx.exclusions.is_empty() && (cx.is_excluded(detector, location) || cx.is_excluded(category.as_str(), location)))
            || policy.exclusions.iter().any(|xs| xs.iter().any(covers))
    }

    fn verdict(&self, policy: &Policy<'_>, report: &Report, cx: &Context) -> Verdict {
        // Nothing found and no limit reached (the common case): `Allow` in every mode, as the
        // match below gives for no reasons and no limit, without building the empty list.
        if report.findings.is_empty() && report.exceeded.is_none() {
            return Verdict::Allow;
        }
        let mode = policy.mode;
        // Exceptions from user rules and from path and operation policy: a finding is dropped
        // when its detector or its category is excluded at its location.
        // Strongest first: the first reason names the event (its category and detector), so
        // it is the finding with the highest confidence, then the most specific category
        // (`Category::specificity`), then the first found.
        let mut kept: Vec<&Finding> = report.findings.iter().filter(|f| !self.excludes(policy, cx, f)).collect();
        kept.sort_by_key(|f| std::cmp::Reverse(strength(f)));
        let mut reasons: Vec<Reason> = kept.into_iter().map(reason).collect();
        let limit = report.exceeded.map(|e| Reason::new("detect.limit").detail(e.to_string()));
        match (mode, self.on_exceed, limit) {
            (_, _, None) | (_, Mode::Off, Some(_)) => mode.verdict(reasons),
            (Mode::Block, Mode::Block, Some(l)) | (Mode::Monitor, _, Some(l)) => {
                reasons.push(l);
                mode.verdict(reasons)
            }
            (Mode::Block, Mode::Monitor, Some(l)) => {
                if reasons.is_empty() {
                    Verdict::monitor(l)
                } else {
                    Mode::Block.verdict(reasons)
                }
            }
            (Mode::Off, _, Some(_)) => Verdict::Allow,
        }
    }
}

/// Move the findings located in the body under `to` (see [`DetectionStage::judge_at`]).
fn relocate_findings(report: &mut Report, to: Option<&str>) {
    let Some(to) = to else { return };
    for f in &mut report.findings {
        if let Some(moved) = relocated(&f.location, to) {
            f.location = moved;
        }
    }
}

/// `location` moved under `to` when it is in the body.
fn relocated(location: &str, to: &str) -> Option<String> {
    let rest = location.strip_prefix("body")?;
    (rest.is_empty() || rest.starts_with(['/', '.'])).then(|| format!("{to}{rest}"))
}

thread_local! {
    /// The `Content-Type` a WebSocket message is judged under: JSON for a message that opens
    /// like a JSON document, text otherwise ([`Stage::check_message`]).
    static MESSAGE_TYPES: [http::HeaderMap; 2] = {
        let mut json = http::HeaderMap::new();
        json.insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
        let mut text = http::HeaderMap::new();
        text.insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("text/plain; charset=utf-8"));
        [json, text]
    };
}

/// Where the findings in a WebSocket message are located.
pub const MESSAGE_LOCATION: &str = "ws.message";

impl Stage for DetectionStage {
    fn name(&self) -> &'static str {
        "detection"
    }

    fn check_head(&self, req: &RequestView<'_>, cx: &mut Context) -> Verdict {
        self.judge(req, Phase::Head, cx)
    }

    fn wants_body(&self) -> bool {
        self.mode != Mode::Off
            || self.paths.iter().any(|p| p.mode.is_some_and(|m| m != Mode::Off))
            || self.operations.values().any(|o| o.mode.is_some_and(|m| m != Mode::Off))
    }

    fn check_body(&self, req: &RequestView<'_>, cx: &mut Context) -> Verdict {
        // No body (a GET): nothing to extract, no finding, no limit reached; the verdict is
        // `Allow` in every mode, without the phase's setup.
        if req.body.is_empty() {
            return Verdict::Allow;
        }
        self.judge(req, Phase::Body, cx)
    }

    fn check_message(&self, req: &RequestView<'_>, message: &str, cx: &mut Context) -> Verdict {
        if message.is_empty() {
            return Verdict::Allow;
        }
        // A JSON message is walked like a JSON body (each string a value of its own, located by
        // its path); anything else is judged as one text value.
        let json = matches!(message.trim_start().as_bytes().first(), Some(b'{' | b'['));
        MESSAGE_TYPES.with(|types| {
            let view = RequestView { headers: &types[usize::from(!json)], body: message.as_bytes(), body_truncated: false, ..*req };
            self.judge_at(&view, Phase::Body, cx, Some(MESSAGE_LOCATION))
        })
    }
}
