//! Reading events back, for the admin API and the CLI: filtered pages (newest first, with a
//! cursor) and statistics (counts per time bucket, top client IPs, reasons and paths). Over a
//! read-only SQLite connection, so queries never block the writer (WAL).
//!
//! Counts add up the `count` column: an aggregated row stands for all the events it folded.

use std::path::Path;

use rusqlite::types::Value;
use rusqlite::{Connection, Row};
use serde::{Deserialize, Serialize};

use crate::model::{Event, Verdict};
use crate::sink::SinkError;
use crate::sqlite::{open_ro, COLUMNS};

/// Largest page.
pub const MAX_LIMIT: usize = 1000;

/// Which events. Every field is optional; set fields are combined with AND.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Filter {
    /// Unix ms, inclusive.
    pub since_ms: Option<i64>,
    /// Unix ms, exclusive.
    pub until_ms: Option<i64>,
    pub app: Option<String>,
    pub ip: Option<String>,
    pub category: Option<String>,
    pub reason: Option<String>,
    pub status: Option<u16>,
    pub verdict: Option<Verdict>,
    /// Substring of the path.
    pub path: Option<String>,
    /// Events carrying this rule tag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
    /// Newest first, older than this row id (the cursor of the previous page).
    pub before_id: Option<i64>,
    /// Oldest first, newer than this row id (for `tail`).
    pub after_id: Option<i64>,
    /// Page size (default 100, at most [`MAX_LIMIT`]).
    pub limit: Option<usize>,
}

impl Filter {
    /// Build from URL query pairs (`since`, `until`, `app`, `ip`, `category`, `reason`,
    /// `status`, `verdict`, `path`, `tag`, `cursor`, `after`, `limit`); times are Unix ms or
    /// RFC 3339, or a duration such as `15m` for "that long ago".
    pub fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, String)>, now_ms: i64) -> Result<Filter, String> {
        let mut f = Filter::default();
        for (k, v) in pairs {
            if v.is_empty() {
                continue;
            }
            let int = |v: &str| v.parse::<i64>().map_err(|_| format!("`{k}`: `{v}` is not a number"));
            match k {
                "since" => f.since_ms = Some(parse_when(&v, now_ms).ok_or_else(|| format!("`since`: `{v}` is not a time"))?),
                "until" => f.until_ms = Some(parse_when(&v, now_ms).ok_or_else(|| format!("`until`: `{v}` is not a time"))?),
                "app" => f.app = Some(v),
                "ip" => f.ip = Some(v),
                "category" => f.category = Some(v),
                "reason" => f.reason = Some(v),
                "path" => f.path = Some(v),
                "tag" => f.tag = Some(v),
                "status" => f.status = Some(v.parse().map_err(|_| format!("`status`: `{v}` is not a status"))?),
                "verdict" => f.verdict = Some(Verdict::parse(&v).ok_or_else(|| format!("`verdict`: `{v}` is not block, monitor or allow"))?),
                "cursor" | "before" => f.before_id = Some(int(&v)?),
                "after" => f.after_id = Some(int(&v)?),
                "limit" => f.limit = Some(int(&v)?.clamp(1, MAX_LIMIT as i64) as usize),
                _ => return Err(format!("unknown filter `{k}`")),
            }
        }
        Ok(f)
    }

    fn clauses(&self) -> (String, Vec<Value>) {
        let mut w = Vec::new();
        let mut p: Vec<Value> = Vec::new();
        let mut add = |sql: &str, v: Value| {
            p.push(v);
            w.push(sql.replace('?', &format!("?{}", p.len())));
        };
        if let Some(v) = self.since_ms {
            add("time_ms >= ?", Value::Integer(v));
        }
        if let Some(v) = self.until_ms {
            add("time_ms < ?", Value::Integer(v));
        }
        if let Some(v) = &self.app {
            add("app = ?", Value::Text(v.clone()));
        }
        if let Some(v) = &self.ip {
            add("client_ip = ?", Value::Text(v.clone()));
        }
        if let Some(v) = &self.category {
            add("category = ?", Value::Text(v.clone()));
        }
        if let Some(v) = &self.reason {
            add("reason = ?", Value::Text(v.clone()));
        }
        if let Some(v) = self.status {
            add("status = ?", Value::Integer(v as i64));
        }
        if let Some(v) = self.verdict {
            add("verdict = ?", Value::Text(v.as_str().to_string()));
        }
        if let Some(v) = &self.path {
            add("instr(path, ?) > 0", Value::Text(v.clone()));
        }
        if let Some(v) = &self.tag {
            // Tags are stored as a JSON array of strings: match the quoted element.
            add("instr(tags, ?) > 0", Value::Text(serde_json::to_string(v).unwrap_or_default()));
        }
        if let Some(v) = self.before_id {
            add("id < ?", Value::Integer(v));
        }
        if let Some(v) = self.after_id {
            add("id > ?", Value::Integer(v));
        }
        let sql = if w.is_empty() { String::new() } else { format!(" WHERE {}", w.join(" AND ")) };
        (sql, p)
    }
}

/// `1700000000000` (Unix ms), `2026-11-22T08:00:00Z`, or `15m` / `2h` / `1d` ago.
pub fn parse_when(s: &str, now_ms: i64) -> Option<i64> {
    let s = s.trim();
    if let Ok(ms) = s.parse::<i64>() {
        return Some(ms);
    }
    if let Some(t) = crate::model::parse_time(s) {
        return Some(t);
    }
    let split = s.find(|c: char| !c.is_ascii_digit())?;
    let (n, unit) = s.split_at(split);
    let n: i64 = n.parse().ok()?;
    let ms = match unit {
        "ms" => n,
        "s" => n * 1000,
        "m" => n * 60_000,
        "h" => n * 3_600_000,
        "d" => n * 86_400_000,
        _ => return None,
    };
    Some(now_ms - ms)
}

/// One page of events.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Page {
    pub events: Vec<Event>,
    /// Pass as `cursor` for the next (older) page; absent on the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<i64>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Bucket {
    /// Start of the bucket, Unix ms.
    pub start_ms: i64,
    pub total: u64,
    pub blocked: u64,
    pub monitored: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Top {
    pub key: String,
    pub count: u64,
}

/// Statistics over a time range.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Stats {
    pub since_ms: i64,
    pub until_ms: i64,
    pub bucket_ms: i64,
    pub total: u64,
    pub buckets: Vec<Bucket>,
    pub top_ips: Vec<Top>,
    pub top_reasons: Vec<Top>,
    pub top_paths: Vec<Top>,
    pub categories: Vec<Top>,
    pub apps: Vec<Top>,
}

/// A read connection to an events database.
pub struct Reader {
    conn: Connection,
}

impl std::fmt::Debug for Reader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Reader")
    }
}

impl Reader {
    pub fn open(path: &Path) -> Result<Reader, SinkError> {
        Ok(Reader { conn: open_ro(path)? })
    }

    /// Events matching `f`: newest first, or oldest first when `after_id` is set.
    pub fn events(&self, f: &Filter) -> Result<Page, SinkError> {
        let limit = f.limit.unwrap_or(100).clamp(1, MAX_LIMIT);
        let (wh, mut params) = f.clauses();
        let order = if f.after_id.is_some() { "ASC" } else { "DESC" };
        params.push(Value::Integer(limit as i64 + 1));
        let sql = format!("SELECT id, {COLUMNS} FROM events{wh} ORDER BY id {order} LIMIT ?{}", params.len());
        let mut stmt = self.conn.prepare(&sql)?;
        let mut events: Vec<Event> = stmt.query_map(rusqlite::params_from_iter(params), row_event)?.collect::<Result<_, _>>()?;
        let more = events.len() > limit;
        events.truncate(limit);
        let next_cursor = if more && f.after_id.is_none() { events.last().and_then(|e| e.id) } else { None };
        Ok(Page { events, next_cursor })
    }

    /// Statistics between `since` and `until` (Unix ms) in about `buckets` buckets; the other
    /// filters of `f` apply too.
    pub fn stats(&self, f: &Filter, now_ms: i64, buckets: u32, top: usize) -> Result<Stats, SinkError> {
        let until = f.until_ms.unwrap_or(now_ms + 1);
        let since = f.since_ms.unwrap_or(until - 86_400_000);
        let span = (until - since).max(1);
        let bucket_ms = nice_bucket(span / buckets.max(1) as i64);
        let f = Filter { since_ms: Some(since), until_ms: Some(until), before_id: None, after_id: None, ..f.clone() };
        let (wh, params) = f.clauses();
        let top = top.clamp(1, 100);
        let mut stmt = self.conn.prepare(&format!(
            "SELECT (time_ms / {bucket_ms}) * {bucket_ms} AS b, SUM(count), SUM(CASE WHEN verdict = 'block' THEN count ELSE 0 END), \
             SUM(CASE WHEN verdict = 'monitor' THEN count ELSE 0 END) FROM events{wh} GROUP BY b ORDER BY b"
        ))?;
        let buckets: Vec<Bucket> = stmt
            .query_map(rusqlite::params_from_iter(params.clone()), |r| {
                Ok(Bucket {
                    start_ms: r.get(0)?,
                    total: r.get::<_, i64>(1)? as u64,
                    blocked: r.get::<_, i64>(2)? as u64,
                    monitored: r.get::<_, i64>(3)? as u64,
                })
            })?
            .collect::<Result<_, _>>()?;
        let total = buckets.iter().map(|b| b.total).sum();
        let top_of = |col: &str| -> Result<Vec<Top>, SinkError> {
            let mut stmt = self.conn.prepare(&format!(
                "SELECT {col}, SUM(count) AS n FROM events{wh}{} {col} IS NOT NULL AND {col} != '' GROUP BY {col} ORDER BY n DESC, {col} LIMIT {top}",
                if wh.is_empty() { " WHERE" } else { " AND" }
            ))?;
            let rows = stmt.query_map(rusqlite::params_from_iter(params.clone()), |r| Ok(Top { key: r.get(0)?, count: r.get::<_, i64>(1)? as u64 }))?;
            Ok(rows.collect::<Result<_, _>>()?)
        };
        Ok(Stats {
            since_ms: since,
            until_ms: until,
            bucket_ms,
            total,
            buckets,
            top_ips: top_of("client_ip")?,
            top_reasons: top_of("reason")?,
            top_paths: top_of("path")?,
            categories: top_of("category")?,
            apps: top_of("app")?,
        })
    }
}

/// Round a bucket width up to a readable one (1s, 5s, 10s, 30s, 1m, 5m, 15m, 1h, 6h, 1d).
fn nice_bucket(ms: i64) -> i64 {
    const STEPS: &[i64] = &[1_000, 5_000, 10_000, 30_000, 60_000, 300_000, 900_000, 3_600_000, 21_600_000, 86_400_000];
    STEPS.iter().copied().find(|s| *s >= ms).unwrap_or(86_400_000)
}

fn row_event(r: &Row<'_>) -> rusqlite::Result<Event> {
    let verdict: String = r.get(11)?;
    let others: Option<String> = r.get(20)?;
    Ok(Event {
        id: Some(r.get(0)?),
        time_ms: r.get(1)?,
        last_ms: r.get(2)?,
        count: r.get(3)?,
        request_id: r.get(4)?,
        app: r.get(5)?,
        client_ip: r.get(6)?,
        method: r.get(7)?,
        host: r.get(8)?,
        path: r.get(9)?,
        query: r.get(10)?,
        verdict: Verdict::parse(&verdict).unwrap_or(Verdict::Block),
        stage: r.get(12)?,
        reason: r.get(13)?,
        detector: r.get(14)?,
        category: r.get(15)?,
        confidence: r.get(16)?,
        location: r.get(17)?,
        fragment: r.get(18)?,
        detail: r.get(19)?,
        others: others.and_then(|o| serde_json::from_str(&o).ok()).unwrap_or_default(),
        status: r.get(21)?,
        upstream_status: r.get(22)?,
        latency_us: r.get::<_, i64>(23)? as u64,
        tags: crate::model::tags_from_text(r.get::<_, Option<String>>(24)?.as_deref()),
    })
}
