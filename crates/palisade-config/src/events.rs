//! The `events` section: where security events go and how (docs/CONFIG.md, `events`).

use std::time::Duration;

use crate::decode::{self, Ctx, MapReader};
use crate::yaml::{Node, Value};
use crate::{positive_duration, Loc, Located};

/// Where security events go and how (docs/CONFIG.md, `events`).
#[derive(Clone, Debug, PartialEq)]
pub struct EventsConfig {
    /// `sqlite:PATH`, `jsonl:PATH`, `stdout`, `postgres://...` or `off` (paths not resolved yet:
    /// relative ones are relative to [`Config::base_dir`]).
    pub sink: Located<String>,
    /// Events held between the request workers and the writer; beyond: dropped (counted).
    pub queue_size: usize,
    /// Most events per write (one transaction for SQLite).
    pub batch_size: usize,
    /// While the writer is behind, identical events (app, client IP, reason) within this window
    /// become one row with a count.
    pub aggregate_window: Duration,
    /// SQLite: rows older than this are deleted.
    pub retention_age: Option<Duration>,
    /// SQLite: the oldest rows are deleted while the database is larger than this.
    pub retention_size: Option<u64>,
    /// Field names (query parameters, body fields, headers) whose values are never stored;
    /// `None`: the built-in list.
    pub redact_fields: Option<Vec<String>>,
    /// Fraction (0..=1) of allowed requests recorded as events too.
    pub sample_allowed: f64,
    /// JSON lines files: rotate before a file grows past this size.
    pub rotate_size: u64,
    /// JSON lines files: rotated files kept.
    pub rotate_keep: u32,
}

impl EventsConfig {
    /// The settings for a sink written in the short form, with every default.
    pub fn with_sink(sink: Located<String>) -> EventsConfig {
        EventsConfig {
            sink,
            queue_size: 16_384,
            batch_size: 1024,
            aggregate_window: Duration::from_secs(10),
            retention_age: Some(Duration::from_secs(30 * 86_400)),
            retention_size: Some(1024 * 1024 * 1024),
            redact_fields: None,
            sample_allowed: 0.0,
            rotate_size: 100 * 1024 * 1024,
            rotate_keep: 5,
        }
    }
}

/// Sink forms accepted by `events.sink` (checked here; opened by the proxy).
pub const EVENT_SINKS: &[&str] = &["sqlite:PATH", "jsonl:PATH", "stdout", "postgres://...", "off"];

fn sink_ok(s: &str) -> bool {
    let s = s.trim();
    matches!(s, "stdout" | "off" | "none")
        || s.starts_with("postgres://")
        || s.starts_with("postgresql://")
        || s.strip_prefix("sqlite:").or_else(|| s.strip_prefix("jsonl:")).is_some_and(|p| !p.trim_start_matches('/').is_empty() || p == "-")
}

pub(crate) const EVENTS_KEYS: &[&str] = &[
    "sink",
    "queue_size",
    "batch_size",
    "aggregate_window",
    "retention_age",
    "retention_size",
    "redact_fields",
    "sample_allowed",
    "rotate_size",
    "rotate_keep",
];

fn decode_sink(cx: &mut Ctx, n: &Node, p: &str) -> Option<Located<String>> {
    let s = decode::non_empty_string(cx, n, p)?;
    if !sink_ok(&s) {
        cx.error(&n.origin, p, format!("`{s}` is not an events sink: use one of {}", EVENT_SINKS.join(", ")));
        return None;
    }
    Some(Located { value: s.trim().to_string(), loc: Loc::of(n, p) })
}

pub(crate) fn decode_events(cx: &mut Ctx, n: &Node, p: &str) -> Option<EventsConfig> {
    // Short form: `events: sqlite:palisade-events.db`.
    if let Value::Str(_) = n.value {
        return decode_sink(cx, n, p).map(EventsConfig::with_sink);
    }
    if let Value::Bool(false) = n.value {
        return Some(EventsConfig::with_sink(Located { value: "off".into(), loc: Loc::of(n, p) }));
    }
    let mut m = MapReader::new(cx, n, p)?;
    let sink = m.req(cx, "sink", decode_sink);
    let mut e = EventsConfig::with_sink(sink.clone().unwrap_or(Located { value: String::new(), loc: Loc::of(n, p) }));
    e.queue_size = m.opt(cx, "queue_size", |cx, n, p| decode::uint(cx, n, p, 16, 10_000_000)).map_or(e.queue_size, |v| v as usize);
    e.batch_size = m.opt(cx, "batch_size", |cx, n, p| decode::uint(cx, n, p, 1, 100_000)).map_or(e.batch_size, |v| v as usize);
    e.aggregate_window = m.opt(cx, "aggregate_window", decode::duration).unwrap_or(e.aggregate_window);
    if let Some(node) = m.node("retention_age") {
        e.retention_age = off_or(cx, node, &decode::join(p, "retention_age"), positive_duration).unwrap_or(e.retention_age);
    }
    if let Some(node) = m.node("retention_size") {
        e.retention_size = off_or(cx, node, &decode::join(p, "retention_size"), decode::size).unwrap_or(e.retention_size);
    }
    e.redact_fields = m.opt(cx, "redact_fields", |cx, n, p| decode::one_or_seq(cx, n, p, decode::non_empty_string)).or(e.redact_fields);
    e.sample_allowed = m
        .opt(cx, "sample_allowed", |cx, n, p| {
            let v = match &n.value {
                Value::Int(i) => Some(*i as f64),
                Value::Float(f) => Some(*f),
                Value::Str(s) => s.trim().parse::<f64>().ok(),
                _ => None,
            };
            match v {
                Some(v) if (0.0..=1.0).contains(&v) => Some(v),
                _ => {
                    cx.error(&n.origin, p, "expected a fraction between 0 and 1, e.g. 0.01");
                    None
                }
            }
        })
        .unwrap_or(e.sample_allowed);
    e.rotate_size = m.opt(cx, "rotate_size", decode::size).unwrap_or(e.rotate_size).max(1);
    e.rotate_keep = m.opt(cx, "rotate_keep", |cx, n, p| decode::uint(cx, n, p, 0, 1000)).map_or(e.rotate_keep, |v| v as u32);
    let origin = m.origin().clone();
    m.finish_with(cx, EVENTS_KEYS);
    if e.batch_size > e.queue_size {
        cx.error(&origin, &decode::join(p, "batch_size"), format!("batch_size ({}) is larger than queue_size ({})", e.batch_size, e.queue_size));
    }
    sink?;
    Some(e)
}

/// `off` (or `false`) for `None`, else the value.
fn off_or<T>(cx: &mut Ctx, n: &Node, p: &str, f: impl FnOnce(&mut Ctx, &Node, &str) -> Option<T>) -> Option<Option<T>> {
    match &n.value {
        Value::Bool(false) => Some(None),
        Value::Str(s) if s == "off" => Some(None),
        _ => f(cx, n, p).map(Some),
    }
}
