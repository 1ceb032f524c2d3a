//! Corpus evaluation: place each labelled value of a JSON-lines corpus in several locations of
//! a request (query value, form field, JSON string, header, cookie), encoded as a client would
//! send it, run the engine over the request, and count detections per category and location,
//! with the time spent per value. Attack rows give the detection rate, benign rows the
//! false-positive rate.
//!
//! Corpus format (`../shared/data/attack-corpus/corpus.jsonl`, `data/benign/*.jsonl`): one
//! object a line with `label` (`attack` | `benign`), `category`, `source`, `value`.

use std::collections::BTreeMap;
use std::fmt::{self, Write as _};
use std::time::Instant;

use palisade_core::Phase;

use crate::engine::{Engine, Report};

pub mod requests;
#[cfg(test)]
mod tests;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Label {
    Attack,
    Benign,
    /// Sent with no ill intent, yet by grammar a complete working payload in the context a
    /// detector assumes (a search for `what does ' or 1=1 -- do`): whole-request corpora only;
    /// reported apart, neither a false positive when flagged nor a miss when not.
    Ambiguous,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sample {
    pub label: Label,
    pub category: String,
    pub source: String,
    pub value: String,
}

/// Parse a JSON-lines corpus (blank lines skipped). Errors name the line.
pub fn parse_corpus(text: &str) -> Result<Vec<Sample>, String> {
    let mut out = Vec::new();
    let mut tape = palisade_json::Tape::default();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let err = |m: &str| format!("line {}: {m}", i + 1);
        palisade_json::parse_into(line.as_bytes(), &mut tape, &palisade_json::Limits::default()).map_err(|e| err(e.message))?;
        let root = tape.root(line.as_bytes());
        let get = |k: &str| root.get(k).and_then(|v| v.as_str()).map(|s| s.into_owned());
        let label = match get("label").as_deref() {
            Some("attack") => Label::Attack,
            Some("benign") => Label::Benign,
            _ => return Err(err("`label` must be attack or benign")),
        };
        let value = get("value").ok_or_else(|| err("no string `value`"))?;
        out.push(Sample { label, category: get("category").unwrap_or_default(), source: get("source").unwrap_or_default(), value });
    }
    Ok(out)
}

/// Where a value is placed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Place {
    Query,
    Form,
    Json,
    Header,
    Cookie,
}

impl Place {
    pub const ALL: [Place; 5] = [Place::Query, Place::Form, Place::Json, Place::Header, Place::Cookie];

    pub fn from_name(s: &str) -> Option<Place> {
        Place::ALL.into_iter().find(|p| p.as_str() == s)
    }

    /// A comma-separated list of place names (`query,json`); errors name the bad one.
    pub fn parse_list(s: &str) -> Result<Vec<Place>, String> {
        let mut out = Vec::new();
        for n in s.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            let p = Place::from_name(n).ok_or_else(|| format!("unknown location `{n}` (expected query, form, json, header or cookie)"))?;
            if !out.contains(&p) {
                out.push(p);
            }
        }
        if out.is_empty() {
            return Err("no location given".into());
        }
        Ok(out)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Place::Query => "query",
            Place::Form => "form",
            Place::Json => "json",
            Place::Header => "header",
            Place::Cookie => "cookie",
        }
    }
}

/// An owned request to take a [`palisade_core::RequestView`] of.
pub use palisade_core::rawhttp::OwnedRequest;

/// Percent-encode everything but the unreserved characters (RFC 3986).
pub fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 3);
    for &b in s.as_bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// The name of the parameter (query, form, JSON key) a value corpus's values are placed in: a
/// name with no role ([`crate::context`]: not a search box's, not a redirect target's), so that
/// the figures measure the detectors at the location. [`build_in`] places them under another.
pub const PARAM: &str = "v";

/// The request a client would send with `value` at `place` (as [`PARAM`]); `None` when the
/// value cannot be sent there (control characters in a header).
pub fn build(place: Place, value: &str) -> Option<OwnedRequest> {
    build_in(place, value, PARAM)
}

/// [`build`] with the value in the parameter (or JSON key) `name` (`q`: a search box's).
pub fn build_in(place: Place, value: &str, name: &str) -> Option<OwnedRequest> {
    let mut r = OwnedRequest::new(http::Method::GET, "/api/items");
    match place {
        Place::Query => r.query = Some(format!("{}={}", percent_encode(name), percent_encode(value))),
        Place::Form => {
            r.method = http::Method::POST;
            r.headers.insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("application/x-www-form-urlencoded"));
            r.body = format!("{}={}", percent_encode(name), percent_encode(value)).into_bytes();
        }
        Place::Json => {
            r.method = http::Method::POST;
            r.headers.insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
            let mut s = String::from("{");
            palisade_body::json::write_json_str(&mut s, name);
            s.push(':');
            palisade_body::json::write_json_str(&mut s, value);
            s.push('}');
            r.body = s.into_bytes();
        }
        Place::Header => {
            let v = http::HeaderValue::from_bytes(value.trim_matches([' ', '\t']).as_bytes()).ok()?;
            r.headers.insert(http::header::USER_AGENT, v);
        }
        Place::Cookie => {
            let v = http::HeaderValue::from_str(&format!("session={}", percent_encode(value))).ok()?;
            r.headers.insert(http::header::COOKIE, v);
        }
    }
    Some(r)
}

/// Counts of one (category, place) cell.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cell {
    pub total: usize,
    pub detected: usize,
    /// Values that could not be placed there.
    pub skipped: usize,
    pub nanos: u128,
}

impl Cell {
    pub fn rate(&self) -> f64 {
        if self.total == 0 {
            0.0
        } else {
            self.detected as f64 / self.total as f64
        }
    }
}

/// Results keyed by (label, category, place).
#[derive(Clone, Debug, Default)]
pub struct Evaluation {
    pub cells: BTreeMap<(Label, String, Place), Cell>,
    pub places: Vec<Place>,
    /// Some detected attack values per category (for looking at misses and hits).
    pub examples_missed: BTreeMap<String, Vec<String>>,
    pub examples_fp: Vec<(String, String)>,
}

impl Evaluation {
    /// Totals over places for a label and category.
    pub fn total(&self, label: Label, category: &str) -> Cell {
        let mut c = Cell::default();
        for ((l, cat, _), v) in &self.cells {
            if *l == label && cat == category {
                c.total += v.total;
                c.detected += v.detected;
                c.skipped += v.skipped;
                c.nanos += v.nanos;
            }
        }
        c
    }

    /// Totals over all categories of a label, per place.
    pub fn by_place(&self, label: Label, place: Place) -> Cell {
        let mut c = Cell::default();
        for ((l, _, p), v) in &self.cells {
            if *l == label && *p == place {
                c.total += v.total;
                c.detected += v.detected;
                c.nanos += v.nanos;
            }
        }
        c
    }

    /// A plain-text table: detection (attacks) or false-positive (benign) rate per category
    /// and place, and µs per value.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let _ = write!(out, "{:<8} {:<28} {:>7}", "label", "category", "values");
        for p in &self.places {
            let _ = write!(out, " {:>7}", p.as_str());
        }
        let _ = writeln!(out, " {:>7} {:>8}", "all", "us/value");
        let mut keys: Vec<(Label, String)> = self.cells.keys().map(|(l, c, _)| (*l, c.clone())).collect();
        keys.dedup();
        for (label, cat) in keys {
            let t = self.total(label, &cat);
            let n = t.total / self.places.len().max(1);
            let _ = write!(out, "{:<8} {:<28} {:>7}", if label == Label::Attack { "attack" } else { "benign" }, cat, n);
            for p in &self.places {
                let c = self.cells.get(&(label, cat.clone(), *p)).copied().unwrap_or_default();
                let _ = write!(out, " {:>6.1}%", 100.0 * c.rate());
            }
            let us = if t.total == 0 { 0.0 } else { t.nanos as f64 / t.total as f64 / 1000.0 };
            let _ = writeln!(out, " {:>6.1}% {:>8.2}", 100.0 * t.rate(), us);
        }
        out
    }
}

impl Evaluation {
    /// Every value over all categories and places of a label.
    pub fn overall(&self, label: Label) -> Cell {
        let mut c = Cell::default();
        for ((l, _, _), v) in &self.cells {
            if *l == label {
                c.total += v.total;
                c.detected += v.detected;
                c.skipped += v.skipped;
                c.nanos += v.nanos;
            }
        }
        c
    }

    /// [`Evaluation::table`], then the detection and false-positive rates per location and
    /// overall, with µs per value (what `palisade detect eval` prints).
    pub fn report(&self) -> String {
        let mut out = self.table();
        let _ = writeln!(out);
        let _ = writeln!(out, "{:<10} {:>10} {:>10} {:>9}", "location", "detection", "false-pos", "us/value");
        let line = |out: &mut String, name: &str, a: Cell, b: Cell| {
            let pct = |c: Cell| if c.total == 0 { "-".to_string() } else { format!("{:.2}%", 100.0 * c.rate()) };
            let n = a.total + b.total;
            let us = if n == 0 { 0.0 } else { (a.nanos + b.nanos) as f64 / n as f64 / 1000.0 };
            let _ = writeln!(out, "{:<10} {:>10} {:>10} {:>9.2}", name, pct(a), pct(b), us);
        };
        for p in &self.places {
            line(&mut out, p.as_str(), self.by_place(Label::Attack, *p), self.by_place(Label::Benign, *p));
        }
        let (a, b) = (self.overall(Label::Attack), self.overall(Label::Benign));
        line(&mut out, "all", a, b);
        let _ = writeln!(out, "{} attack and {} benign placements ({} could not be placed)", a.total, b.total, a.skipped + b.skipped);
        out
    }
}

/// At most `max` samples per (label, category), evenly spread over the corpus order; `0`
/// keeps everything.
pub fn sample(samples: Vec<Sample>, max: usize) -> Vec<Sample> {
    if max == 0 {
        return samples;
    }
    let mut by_cat: BTreeMap<(Label, String), Vec<Sample>> = BTreeMap::new();
    for s in samples {
        by_cat.entry((s.label, s.category.clone())).or_default().push(s);
    }
    let mut out = Vec::new();
    for (_, v) in by_cat {
        let stride = v.len().div_ceil(max).max(1);
        out.extend(v.into_iter().step_by(stride));
    }
    out
}

/// Run `engine` over every sample at every place.
pub fn evaluate(engine: &Engine, samples: &[Sample], places: &[Place]) -> Evaluation {
    evaluate_in(engine, samples, places, PARAM)
}

/// [`evaluate`] with the values in the parameter `name` ([`build_in`]).
pub fn evaluate_in(engine: &Engine, samples: &[Sample], places: &[Place], name: &str) -> Evaluation {
    let mut ev = Evaluation { places: places.to_vec(), ..Evaluation::default() };
    let mut scratch = engine.scratch();
    let mut report = Report::default();
    let level = engine.config().level;
    for s in samples {
        for &place in places {
            let cell = ev.cells.entry((s.label, s.category.clone(), place)).or_default();
            let Some(req) = build_in(place, &s.value, name) else {
                cell.skipped += 1;
                continue;
            };
            let view = req.view();
            let t0 = Instant::now();
            engine.inspect_phase(&view, Phase::Head, level, &mut scratch, &mut report);
            let mut hit = !report.findings.is_empty() || report.exceeded.is_some();
            if !hit && !req.body.is_empty() {
                engine.inspect_phase(&view, Phase::Body, level, &mut scratch, &mut report);
                hit = !report.findings.is_empty() || report.exceeded.is_some();
            }
            cell.nanos += t0.elapsed().as_nanos();
            cell.total += 1;
            if hit {
                cell.detected += 1;
                if s.label == Label::Benign && ev.examples_fp.len() < 50 {
                    ev.examples_fp.push((place.as_str().to_string(), s.value.clone()));
                }
            } else if s.label == Label::Attack && place == Place::Query {
                let v = ev.examples_missed.entry(s.category.clone()).or_default();
                if v.len() < 10 {
                    v.push(s.value.clone());
                }
            }
        }
    }
    ev
}

/// What `palisade detect explain` shows for one value: the decoding layers and what the
/// engine found at a place (as the proxy would), and the weaker signals of each detector on
/// each candidate at the strict level.
#[derive(Clone, Debug)]
pub struct Explanation {
    pub place: Place,
    pub level: crate::Level,
    /// `(transforms, text)` of each candidate: the raw value first.
    pub layers: Vec<(crate::decode::Transforms, String)>,
    /// The findings of the engine with the value at `place` (they block at `level`).
    pub findings: Vec<crate::Finding>,
    /// Every detector's hit on every candidate at the strict level (confidence 40 and up).
    pub signals: Vec<(crate::decode::Transforms, crate::Hit)>,
}

/// Explain `value` placed at `place`. `None` when it cannot be sent there (control
/// characters in a header).
pub fn explain(engine: &Engine, value: &str, place: Place, level: crate::Level) -> Option<Explanation> {
    let req = build(place, value)?;
    let view = req.view();
    let mut scratch = engine.scratch();
    let mut report = Report::default();
    let mut findings = Vec::new();
    for phase in [Phase::Head, Phase::Body] {
        engine.inspect_phase(&view, phase, level, &mut scratch, &mut report);
        findings.append(&mut report.findings);
    }
    let mut dec = crate::decode::Decoder::new(engine.config().decode);
    let cands = dec.decode(value);
    let layers: Vec<_> = cands.iter().map(|c| (c.transforms, c.text.to_string())).collect();
    let kind = match place {
        Place::Query => crate::FieldKind::QueryValue,
        Place::Form => crate::FieldKind::FormValue,
        Place::Json => crate::FieldKind::JsonValue,
        Place::Header => crate::FieldKind::Header,
        Place::Cookie => crate::FieldKind::Cookie,
    };
    let mut signals = Vec::new();
    for (tf, text) in &layers {
        for d in crate::registry::detectors() {
            if let Some(h) = d.check(&crate::Input { raw: text, decoded: text, field: kind }, crate::Level::Strict) {
                signals.push((*tf, h));
            }
        }
    }
    Some(Explanation { place, level, layers, findings, signals })
}

impl fmt::Display for Explanation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "decoding layers:")?;
        for (tf, text) in &self.layers {
            writeln!(f, "  {:<24} {}", tf.to_string(), crate::truncate(text, 200).escape_debug())?;
        }
        let level = if self.level == crate::Level::Strict { "strict" } else { "balanced" };
        if self.findings.is_empty() {
            writeln!(f, "findings at level {level} with the value in {}: none", self.place.as_str())?;
        } else {
            writeln!(f, "findings at level {level} with the value in {}:", self.place.as_str())?;
            for x in &self.findings {
                writeln!(
                    f,
                    "  {} category={} confidence={} location={} via={} why={:?} fragment={:?}",
                    x.detector, x.category, x.confidence, x.location, x.transforms, x.why, x.fragment
                )?;
            }
        }
        writeln!(f, "signals of each detector (strict level, confidence >= 40):")?;
        if self.signals.is_empty() {
            writeln!(f, "  none")?;
        }
        for (tf, h) in &self.signals {
            writeln!(f, "  {} category={} confidence={} via={} why={:?} fragment={:?}", h.detector, h.category, h.confidence, tf, h.why, h.fragment)?;
        }
        Ok(())
    }
}
