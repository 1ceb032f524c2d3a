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
use crate::Level;

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
        let policy = self.policy_for(req.path, cx.operation.as_deref());
        let (mode, level) = (policy.mode, policy.level);
        if mode == Mode::Off || cx.allowed_by.is_some() {
            return Verdict::Allow;
        }
        SCRATCH.with(|cell| {
            let mut guard = match cell.try_borrow_mut() {
                Ok(g) => g,
                Err(_) => {
                    // Re-entered on this thread (not expected): use fresh buffers.
                    let mut scratch = self.engine.scratch();
                    let mut report = Report::default();
                    self.engine.inspect_phase_with(req, phase, level, cx.protocol_values.as_deref(), &mut scratch, &mut report);
                    return self.verdict(&policy, &report, cx);
                }
            };
            let (scratch, report) = guard.get_or_insert_with(|| (self.engine.scratch(), Report::default()));
            self.engine.inspect_phase_with(req, phase, level, cx.protocol_values.as_deref(), scratch, report);
            self.verdict(&policy, report, cx)
        })
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
        let covers = |x: &Exclusion, f: &Finding| {
            (x.detector == "*" || x.detector == f.detector || x.detector == f.category.as_str()) && glob(x.location.as_bytes(), f.location.as_bytes())
        };
        let excluded = |f: &&Finding| {
            (!cx.exclusions.is_empty() && (cx.is_excluded(f.detector, &f.location) || cx.is_excluded(f.category.as_str(), &f.location)))
                || policy.exclusions.iter().any(|xs| xs.iter().any(|x| covers(x, f)))
        };
        let mut reasons: Vec<Reason> = report.findings.iter().filter(|f| !excluded(f)).map(reason).collect();
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
}
