//! Evaluation over whole requests: each labelled raw HTTP request goes through the detection
//! stage as the proxy runs it (head phase, then body phase when there is a body, with the
//! app's policy: mode, level, exclusions, path overrides), and the results are counted per
//! label, class, location and detector, with every false positive and every missed attack
//! listed.
//!
//! Corpus format (JSON lines, `data/requests/*.jsonl.gz` once decompressed): one object a line
//! with `label` (`benign` | `attack` | `ambiguous`: a working payload sent with no ill intent,
//! counted apart), `class`, `request` (the raw request as text) or
//! `request_base64` (its bytes, for binary bodies), and optionally `id`, `app` (the kind of
//! application it imitates), `location` (where the interesting part is: `path`, `query`,
//! `form`, `json`, `xml`, `multipart`, `cookie`, `header`, `body`) and `family` (the attack
//! under an evasion class). Reading files and decompressing is the caller's.

use std::collections::BTreeMap;
use std::fmt::{self, Write as _};

use palisade_body::json::write_json_str;
use palisade_body::media::{self, MediaKind};
use palisade_core::rawhttp::{parse_request, OwnedRequest};
use palisade_core::{Context, Phase, Verdict};

use super::Label;
use crate::engine::{Finding, Report};
use crate::stage::DetectionStage;

/// Why a corpus could not be read: the line (1-based) or entry, and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CorpusError {
    /// `line 12`, or the file name of a directory entry.
    pub at: String,
    pub message: String,
}

impl fmt::Display for CorpusError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.at, self.message)
    }
}

impl std::error::Error for CorpusError {}

/// One labelled request.
#[derive(Clone, Debug)]
pub struct LabelledRequest {
    pub id: String,
    pub label: Label,
    pub class: String,
    /// The attack under an evasion class (empty when not given).
    pub family: String,
    /// The kind of application the request imitates (empty when not given).
    pub app: String,
    /// Where the attack (or the benign part of interest) is; empty when not given.
    pub location: String,
    pub request: OwnedRequest,
}

impl LabelledRequest {
    /// A request read from raw bytes, labelled by the caller (a directory's layout).
    pub fn from_raw(id: &str, label: Label, class: &str, location: &str, raw: &[u8]) -> Result<Self, CorpusError> {
        let request = parse_request(raw).map_err(|e| CorpusError { at: id.to_string(), message: e.to_string() })?;
        Ok(LabelledRequest {
            id: id.to_string(),
            label,
            class: class.to_string(),
            family: String::new(),
            app: String::new(),
            location: location.to_string(),
            request,
        })
    }
}

/// Whether a JSON-lines text is a corpus of raw requests (its first object has `request` or
/// `request_base64`) rather than of values ([`super::parse_corpus`]).
pub fn is_request_corpus(text: &str) -> bool {
    let Some(line) = text.lines().find(|l| !l.trim().is_empty()) else {
        return false;
    };
    let mut tape = palisade_json::Tape::default();
    if palisade_json::parse_into(line.as_bytes(), &mut tape, &palisade_json::Limits::default()).is_err() {
        return false;
    }
    let root = tape.root(line.as_bytes());
    root.get("request").is_some() || root.get("request_base64").is_some()
}

/// Parse a JSON-lines corpus of labelled raw requests (blank lines skipped). Errors name the
/// line; a request that does not parse as HTTP is an error too (a corpus is fixed input).
pub fn parse_request_corpus(text: &str) -> Result<Vec<LabelledRequest>, CorpusError> {
    let mut out = Vec::new();
    let mut tape = palisade_json::Tape::default();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let err = |m: &str| CorpusError { at: format!("line {}", i + 1), message: m.to_string() };
        palisade_json::parse_into(line.as_bytes(), &mut tape, &palisade_json::Limits::default()).map_err(|e| err(e.message))?;
        let root = tape.root(line.as_bytes());
        let get = |k: &str| root.get(k).and_then(|v| v.as_str()).map(|s| s.into_owned());
        let label = match get("label").as_deref() {
            Some("attack") => Label::Attack,
            Some("benign") => Label::Benign,
            Some("ambiguous") => Label::Ambiguous,
            _ => return Err(err("`label` must be attack, benign or ambiguous")),
        };
        let raw = match (get("request"), get("request_base64")) {
            (Some(t), None) => t.into_bytes(),
            (None, Some(b)) => palisade_core::base64::decode(b.as_bytes()).ok_or_else(|| err("`request_base64` is not base64"))?,
            (Some(_), Some(_)) => return Err(err("give `request` or `request_base64`, not both")),
            (None, None) => return Err(err("no string `request` or `request_base64`")),
        };
        let request = parse_request(&raw).map_err(|e| err(&format!("request: {e}")))?;
        out.push(LabelledRequest {
            id: get("id").unwrap_or_else(|| format!("line {}", i + 1)),
            label,
            class: get("class").unwrap_or_default(),
            family: get("family").unwrap_or_default(),
            app: get("app").unwrap_or_default(),
            location: get("location").unwrap_or_default(),
            request,
        });
    }
    Ok(out)
}

/// At most `max` requests per (label, class), evenly spread over the corpus order; `0` keeps
/// everything.
pub fn sample(reqs: Vec<LabelledRequest>, max: usize) -> Vec<LabelledRequest> {
    if max == 0 {
        return reqs;
    }
    let mut by: std::collections::BTreeMap<(Label, String), Vec<LabelledRequest>> = std::collections::BTreeMap::new();
    for r in reqs {
        by.entry((r.label, r.class.clone())).or_default().push(r);
    }
    let mut out = Vec::new();
    for (_, v) in by {
        let stride = v.len().div_ceil(max).max(1);
        out.extend(v.into_iter().step_by(stride));
    }
    out
}

/// The place of a finding's location (`query.q` is `query`, `body/a/b` of a JSON body is
/// `json`), for counting per location.
pub fn place_of(location: &str, req: &OwnedRequest) -> &'static str {
    if location == "path" || location.starts_with("path[") {
        "path"
    } else if location.starts_with("query.") {
        "query"
    } else if location.starts_with("header.") {
        "header"
    } else if location.starts_with("cookie.") {
        "cookie"
    } else if location == "body" || location.starts_with("body/") {
        let ct = req.headers.get(http::header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
        match (media::kind_of(ct), location == "body") {
            (MediaKind::Json, false) => "json",
            (MediaKind::Form, false) => "form",
            (MediaKind::Multipart, false) => "multipart",
            (MediaKind::Xml, false) => "xml",
            _ => "body",
        }
    } else {
        "other"
    }
}

/// What the stage made of one request.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub index: usize,
    /// The stage's verdict was not `Allow` in the head or the body phase.
    pub flagged: bool,
    /// The findings it acted on (exclusions applied), head then body.
    pub findings: Vec<Finding>,
    /// A limit that cut inspection short (`detect.limit`).
    pub limit: Option<String>,
    /// Why the body was not inspected (a content coding not decoded).
    pub skipped: Option<crate::extract::Skipped>,
}

/// Counts of one group.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Count {
    pub total: usize,
    pub flagged: usize,
}

impl Count {
    pub fn rate(&self) -> f64 {
        if self.total == 0 {
            0.0
        } else {
            self.flagged as f64 / self.total as f64
        }
    }

    fn add(&mut self, flagged: bool) {
        self.total += 1;
        self.flagged += usize::from(flagged);
    }
}

/// Every outcome of a corpus, and the summaries of [`RequestEvaluation::report`].
#[derive(Clone, Debug)]
pub struct RequestEvaluation {
    pub requests: Vec<LabelledRequest>,
    pub outcomes: Vec<Outcome>,
    /// The level the app's policy evaluated at (`balanced` | `strict`), for the report header.
    pub level: &'static str,
}

/// Run every request through `stage` as the proxy would.
pub fn evaluate_requests(stage: &DetectionStage, requests: Vec<LabelledRequest>) -> RequestEvaluation {
    let mut scratch = stage.engine().scratch();
    let mut report = Report::default();
    let mut outcomes = Vec::with_capacity(requests.len());
    for (index, r) in requests.iter().enumerate() {
        let view = r.request.view();
        let cx = Context::default();
        let policy = stage.policy_for(view.path, None);
        let mut out = Outcome { index, flagged: false, findings: Vec::new(), limit: None, skipped: None };
        for phase in [Phase::Head, Phase::Body] {
            // The proxy asks for the body phase only when there is a body.
            if phase == Phase::Body && view.body.is_empty() {
                break;
            }
            let verdict = stage.judge_into(&view, phase, &cx, &mut scratch, &mut report);
            out.flagged |= !matches!(verdict, Verdict::Allow);
            out.findings.extend(report.findings.drain(..).filter(|f| !stage.excludes(&policy, &cx, f)));
            if let Some(e) = report.exceeded {
                out.limit = Some(e.to_string());
            }
            out.skipped = out.skipped.or(report.counts.skipped);
        }
        outcomes.push(out);
    }
    let level = if stage.engine().config().level == crate::Level::Strict { "strict" } else { "balanced" };
    RequestEvaluation { requests, outcomes, level }
}

impl RequestEvaluation {
    fn each(&self, label: Label) -> impl Iterator<Item = (&LabelledRequest, &Outcome)> {
        self.requests.iter().zip(&self.outcomes).filter(move |(r, _)| r.label == label)
    }

    /// All requests of a label.
    pub fn overall(&self, label: Label) -> Count {
        let mut c = Count::default();
        for (_, o) in self.each(label) {
            c.add(o.flagged);
        }
        c
    }

    /// Per class.
    pub fn by_class(&self, label: Label) -> BTreeMap<String, Count> {
        let mut m: BTreeMap<String, Count> = BTreeMap::new();
        for (r, o) in self.each(label) {
            m.entry(r.class.clone()).or_default().add(o.flagged);
        }
        m
    }

    /// Per labelled location (attacks: where the attack is).
    pub fn by_location(&self, label: Label) -> BTreeMap<String, Count> {
        let mut m: BTreeMap<String, Count> = BTreeMap::new();
        for (r, o) in self.each(label) {
            let loc = if r.location.is_empty() { "-" } else { r.location.split('.').next().unwrap_or("-") };
            m.entry(loc.to_string()).or_default().add(o.flagged);
        }
        m
    }

    /// Per detector: the requests of a label with a finding of that detector (`total` is every
    /// request of the label, so that `rate` is the detector's share: its false-positive rate
    /// on benign requests).
    pub fn by_detector(&self, label: Label) -> BTreeMap<&'static str, Count> {
        let total = self.overall(label).total;
        let mut m: BTreeMap<&'static str, Count> = BTreeMap::new();
        for (_, o) in self.each(label) {
            let mut seen: Vec<&'static str> = o.findings.iter().map(|f| f.detector).collect();
            seen.sort_unstable();
            seen.dedup();
            for d in seen {
                m.entry(d).or_insert(Count { total, flagged: 0 }).flagged += 1;
            }
        }
        m
    }

    /// Benign findings per place of the finding (`query`, `header`, `json`...): the requests
    /// with a finding there, over every benign request.
    pub fn false_positives_by_place(&self) -> BTreeMap<&'static str, Count> {
        let total = self.overall(Label::Benign).total;
        let mut m: BTreeMap<&'static str, Count> = BTreeMap::new();
        for (r, o) in self.each(Label::Benign) {
            let mut seen: Vec<&'static str> = o.findings.iter().map(|f| place_of(&f.location, &r.request)).collect();
            seen.sort_unstable();
            seen.dedup();
            for p in seen {
                m.entry(p).or_insert(Count { total, flagged: 0 }).flagged += 1;
            }
        }
        m
    }

    /// Flagged benign requests.
    pub fn false_positives(&self) -> impl Iterator<Item = (&LabelledRequest, &Outcome)> {
        self.each(Label::Benign).filter(|(_, o)| o.flagged)
    }

    /// Attacks let through.
    pub fn missed(&self) -> impl Iterator<Item = (&LabelledRequest, &Outcome)> {
        self.each(Label::Attack).filter(|(_, o)| !o.flagged)
    }

    /// The human report: rates per class, location and detector, then every false positive
    /// (detector, location, fragment, confidence) and every missed attack.
    pub fn report(&self) -> String {
        let mut out = String::new();
        let pct = |c: Count| if c.total == 0 { "-".to_string() } else { format!("{:.2}%", 100.0 * c.rate()) };
        let (a, b) = (self.overall(Label::Attack), self.overall(Label::Benign));
        let _ = writeln!(out, "level {}: {} attack and {} benign requests", self.level, a.total, b.total);
        let _ = writeln!(out, "attacks detected: {}/{} ({})", a.flagged, a.total, pct(a));
        let _ = writeln!(out, "benign flagged (false positives): {}/{} ({})", b.flagged, b.total, pct(b));
        let amb = self.overall(Label::Ambiguous);
        if amb.total > 0 {
            let _ =
                writeln!(out, "ambiguous (working payloads sent with no ill intent; not counted above): {}/{} flagged ({})", amb.flagged, amb.total, pct(amb));
        }
        let skipped = self.outcomes.iter().filter(|o| o.skipped.is_some()).count();
        if skipped > 0 {
            let _ = writeln!(out, "bodies not inspected (content coding not decoded, not text): {skipped}");
        }
        let table = |out: &mut String, title: &str, rows: Vec<(String, Count)>| {
            if rows.is_empty() {
                return;
            }
            let _ = writeln!(out, "\n{title}");
            for (k, c) in rows {
                let _ = writeln!(out, "  {:<34} {:>6}/{:<6} {:>8}", k, c.flagged, c.total, pct(c));
            }
        };
        let own = |m: BTreeMap<String, Count>| m.into_iter().collect::<Vec<_>>();
        let stat = |m: BTreeMap<&'static str, Count>| m.into_iter().map(|(k, v)| (k.to_string(), v)).collect::<Vec<_>>();
        table(&mut out, "attack detection per class:", own(self.by_class(Label::Attack)));
        table(&mut out, "attack detection per location:", own(self.by_location(Label::Attack)));
        table(&mut out, "attacks caught per detector:", stat(self.by_detector(Label::Attack)));
        table(&mut out, "false positives per class:", own(self.by_class(Label::Benign)));
        table(&mut out, "false positives per detector:", stat(self.by_detector(Label::Benign)));
        table(&mut out, "false positives per location of the finding:", stat(self.false_positives_by_place()));
        table(&mut out, "ambiguous requests flagged per class:", own(self.by_class(Label::Ambiguous)));
        let fps: Vec<_> = self.false_positives().collect();
        if !fps.is_empty() {
            let _ = writeln!(out, "\nfalse positives ({}):", fps.len());
            for (r, o) in fps {
                let _ = writeln!(out, "  {} [{}]", r.id, r.class);
                for f in &o.findings {
                    let _ = writeln!(out, "    {} confidence {} at {} ({}): {:?}", f.detector, f.confidence, f.location, f.why, f.fragment);
                }
                if let Some(l) = &o.limit {
                    let _ = writeln!(out, "    limit: {l}");
                }
            }
        }
        let missed: Vec<_> = self.missed().collect();
        if !missed.is_empty() {
            let _ = writeln!(out, "\nmissed attacks ({}):", missed.len());
            for (r, _) in missed {
                let fam = if r.family.is_empty() || r.family == r.class { String::new() } else { format!(" ({})", r.family) };
                let _ =
                    writeln!(out, "  {} [{}{}] at {}: {}", r.id, r.class, fam, if r.location.is_empty() { "-" } else { &r.location }, request_line(&r.request));
            }
        }
        out
    }

    /// The same as JSON: `{"level", "attack": {...}, "benign": {...}, "false_positives": [...],
    /// "missed": [...]}`.
    pub fn to_json(&self) -> String {
        let mut out = String::new();
        let count = |out: &mut String, c: Count| {
            let _ = write!(out, "{{\"total\":{},\"flagged\":{},\"rate\":{}}}", c.total, c.flagged, json_num(c.rate()));
        };
        let map = |out: &mut String, rows: Vec<(String, Count)>| {
            out.push('{');
            for (i, (k, c)) in rows.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json_str(out, &k);
                out.push(':');
                count(out, c);
            }
            out.push('}');
        };
        let own = |m: BTreeMap<String, Count>| m.into_iter().collect::<Vec<_>>();
        let stat = |m: BTreeMap<&'static str, Count>| m.into_iter().map(|(k, v)| (k.to_string(), v)).collect::<Vec<_>>();
        let _ = write!(out, "{{\"level\":\"{}\",\"bodies_skipped\":{}", self.level, self.outcomes.iter().filter(|o| o.skipped.is_some()).count());
        for (name, label) in [("attack", Label::Attack), ("benign", Label::Benign), ("ambiguous", Label::Ambiguous)] {
            let _ = write!(out, ",\"{name}\":{{\"overall\":");
            count(&mut out, self.overall(label));
            out.push_str(",\"by_class\":");
            map(&mut out, own(self.by_class(label)));
            out.push_str(",\"by_location\":");
            map(&mut out, own(self.by_location(label)));
            out.push_str(",\"by_detector\":");
            map(&mut out, stat(self.by_detector(label)));
            if label == Label::Benign {
                out.push_str(",\"by_finding_location\":");
                map(&mut out, stat(self.false_positives_by_place()));
            }
            out.push('}');
        }
        out.push_str(",\"false_positives\":[");
        for (i, (r, o)) in self.false_positives().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str("{\"id\":");
            write_json_str(&mut out, &r.id);
            out.push_str(",\"class\":");
            write_json_str(&mut out, &r.class);
            out.push_str(",\"app\":");
            write_json_str(&mut out, &r.app);
            out.push_str(",\"findings\":[");
            for (j, f) in o.findings.iter().enumerate() {
                if j > 0 {
                    out.push(',');
                }
                out.push_str("{\"detector\":");
                write_json_str(&mut out, f.detector);
                let _ = write!(out, ",\"category\":\"{}\",\"confidence\":{},\"location\":", f.category.as_str(), f.confidence);
                write_json_str(&mut out, &f.location);
                out.push_str(",\"place\":");
                write_json_str(&mut out, place_of(&f.location, &r.request));
                out.push_str(",\"why\":");
                write_json_str(&mut out, f.why);
                out.push_str(",\"fragment\":");
                write_json_str(&mut out, &f.fragment);
                out.push('}');
            }
            out.push(']');
            if let Some(l) = &o.limit {
                out.push_str(",\"limit\":");
                write_json_str(&mut out, l);
            }
            out.push('}');
        }
        out.push_str("],\"missed\":[");
        for (i, (r, _)) in self.missed().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str("{\"id\":");
            write_json_str(&mut out, &r.id);
            out.push_str(",\"class\":");
            write_json_str(&mut out, &r.class);
            out.push_str(",\"family\":");
            write_json_str(&mut out, &r.family);
            out.push_str(",\"location\":");
            write_json_str(&mut out, &r.location);
            out.push_str(",\"request_line\":");
            write_json_str(&mut out, &request_line(&r.request));
            out.push('}');
        }
        out.push_str("]}");
        out
    }
}

fn json_num(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.6}")
    } else {
        "0".into()
    }
}

/// `METHOD /path?query` (at most 160 bytes), for listing a request.
fn request_line(r: &OwnedRequest) -> String {
    let mut s = format!("{} {}", r.method, r.path);
    if let Some(q) = &r.query {
        s.push('?');
        s.push_str(q);
    }
    crate::truncate(&s, 160).to_string()
}

#[cfg(test)]
mod tests;
