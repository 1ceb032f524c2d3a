//! Reading events back, for the admin API and the CLI: filtered pages (newest first, with a
//! cursor) and statistics (counts per time bucket, top client IPs, reasons and paths). Over a
//! read-only SQLite connection, so queries never block the writer (WAL), or over a PostgreSQL
//! connection to the table the PostgreSQL sink writes (the same SQL, with `$N` placeholders,
//! typed parameters and `strpos` for `instr`). The PostgreSQL driver runs its own small runtime:
//! call it from a plain thread, never from inside tokio.
//!
//! Counts add up the `count` column: an aggregated row stands for all the events it folded.

use std::cell::RefCell;
use std::path::{Path, PathBuf};

use rusqlite::types::Value;
use rusqlite::Connection;
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
    pub fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, String)>, now_ms: i64) -> Result<Filter, crate::Error> {
        let err = |m: String| crate::Error::new(crate::ErrorKind::Filter, m);
        let mut f = Filter::default();
        for (k, v) in pairs {
            if v.is_empty() {
                continue;
            }
            let int = |v: &str| v.parse::<i64>().map_err(|_| err(format!("`{k}`: `{v}` is not a number")));
            match k {
                "since" => f.since_ms = Some(parse_when(&v, now_ms).ok_or_else(|| err(format!("`since`: `{v}` is not a time")))?),
                "until" => f.until_ms = Some(parse_when(&v, now_ms).ok_or_else(|| err(format!("`until`: `{v}` is not a time")))?),
                "app" => f.app = Some(v),
                "ip" => f.ip = Some(v),
                "category" => f.category = Some(v),
                "reason" => f.reason = Some(v),
                "path" => f.path = Some(v),
                "tag" => f.tag = Some(v),
                "status" => f.status = Some(v.parse().map_err(|_| err(format!("`status`: `{v}` is not a status")))?),
                "verdict" => f.verdict = Some(Verdict::parse(&v).ok_or_else(|| err(format!("`verdict`: `{v}` is not block, monitor or allow")))?),
                "cursor" | "before" => f.before_id = Some(int(&v)?),
                "after" => f.after_id = Some(int(&v)?),
                "limit" => f.limit = Some(int(&v)?.clamp(1, MAX_LIMIT as i64) as usize),
                _ => return Err(err(format!("unknown filter `{k}`"))),
            }
        }
        Ok(f)
    }

    fn clauses(&self, pg: bool) -> (String, Vec<Value>) {
        let mut w = Vec::new();
        let mut p: Vec<Value> = Vec::new();
        let mut add = |sql: &str, v: Value| {
            let placeholder = match (pg, &v) {
                (false, _) => format!("?{}", p.len() + 1),
                (true, Value::Integer(_)) => format!("${}::bigint", p.len() + 1),
                (true, _) => format!("${}::text", p.len() + 1),
            };
            p.push(v);
            let sql = if pg { sql.replace("instr(", "strpos(") } else { sql.to_string() };
            w.push(sql.replace('?', &placeholder));
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

/// Where events can be read from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Store {
    Sqlite(PathBuf),
    /// A `postgres://` URL (the table `palisade_events`).
    Postgres(String),
}

impl Store {
    /// `postgres://...` and `postgresql://...` are PostgreSQL; anything else is an SQLite file.
    pub fn parse(s: &str) -> Store {
        if s.starts_with("postgres://") || s.starts_with("postgresql://") {
            Store::Postgres(s.to_string())
        } else {
            Store::Sqlite(PathBuf::from(s))
        }
    }
}

enum Conn {
    Sqlite(Connection),
    Postgres(RefCell<postgres::Client>),
}

/// A read connection to an events database.
pub struct Reader {
    conn: Conn,
}

/// Rows as plain values, whichever database they came from.
enum Cell {
    Int(Option<i64>),
    Text(Option<String>),
}

fn pg_params(params: &[Value]) -> Vec<Box<dyn postgres::types::ToSql + Sync>> {
    params
        .iter()
        .map(|v| -> Box<dyn postgres::types::ToSql + Sync> {
            match v {
                Value::Integer(i) => Box::new(*i),
                Value::Text(t) => Box::new(t.clone()),
                Value::Real(r) => Box::new(*r),
                Value::Null => Box::new(None::<String>),
                Value::Blob(b) => Box::new(b.clone()),
            }
        })
        .collect()
}

impl std::fmt::Debug for Reader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Reader")
    }
}

impl Reader {
    pub fn open(path: &Path) -> Result<Reader, SinkError> {
        Ok(Reader { conn: Conn::Sqlite(open_ro(path)?) })
    }

    /// Open either kind of store (PostgreSQL: from a plain thread, see the module header).
    pub fn open_store(store: &Store) -> Result<Reader, SinkError> {
        match store {
            Store::Sqlite(p) => Self::open(p),
            Store::Postgres(url) => {
                let config = crate::pg::parse_url(url)?;
                let client = config.connect(postgres::NoTls).map_err(|e| SinkError::Other(format!("postgres: {e}")))?;
                Ok(Reader { conn: Conn::Postgres(RefCell::new(client)) })
            }
        }
    }

    fn pg(&self) -> bool {
        matches!(self.conn, Conn::Postgres(_))
    }

    fn table(&self) -> &'static str {
        if self.pg() {
            "palisade_events"
        } else {
            "events"
        }
    }

    /// Run `sql` and convert each row with `f`, over either database; `kinds` says which
    /// columns are integers (`true`) and which are text.
    fn rows<T>(&self, sql: &str, params: &[Value], kinds: &[bool], f: impl Fn(Vec<Cell>) -> T) -> Result<Vec<T>, SinkError> {
        match &self.conn {
            Conn::Sqlite(c) => {
                let mut stmt = c.prepare(sql)?;
                let rows = stmt.query_map(rusqlite::params_from_iter(params.iter().cloned()), |r| {
                    let mut cells = Vec::with_capacity(kinds.len());
                    for (i, int) in kinds.iter().enumerate() {
                        cells.push(if *int { Cell::Int(r.get(i)?) } else { Cell::Text(r.get(i)?) });
                    }
                    Ok(f(cells))
                })?;
                Ok(rows.collect::<Result<_, _>>()?)
            }
            Conn::Postgres(c) => {
                let boxed = pg_params(params);
                let refs: Vec<&(dyn postgres::types::ToSql + Sync)> = boxed.iter().map(|b| &**b).collect();
                let rows = c.borrow_mut().query(sql, &refs).map_err(|e| SinkError::Other(format!("postgres: {e}")))?;
                let mut out = Vec::with_capacity(rows.len());
                for r in rows {
                    let mut cells = Vec::with_capacity(kinds.len());
                    for (i, int) in kinds.iter().enumerate() {
                        cells.push(if *int {
                            Cell::Int(pg_int(&r, i)?)
                        } else {
                            Cell::Text(r.try_get(i).map_err(|e| SinkError::Other(format!("postgres: {e}")))?)
                        });
                    }
                    out.push(f(cells));
                }
                Ok(out)
            }
        }
    }

    /// Events matching `f`: newest first, or oldest first when `after_id` is set.
    pub fn events(&self, f: &Filter) -> Result<Page, SinkError> {
        let limit = f.limit.unwrap_or(100).clamp(1, MAX_LIMIT);
        let (sql, params) = self.events_sql(f, limit);
        let mut events: Vec<Event> = self.rows(&sql, &params, &EVENT_KINDS, row_event)?;
        let more = events.len() > limit;
        events.truncate(limit);
        let next_cursor = if more && f.after_id.is_none() { events.last().and_then(|e| e.id) } else { None };
        Ok(Page { events, next_cursor })
    }

    /// The query of [`events`](Self::events) for a page of `limit` rows (one more is asked for,
    /// to know whether there is a next page).
    fn events_sql(&self, f: &Filter, limit: usize) -> (String, Vec<Value>) {
        let (wh, params) = f.clauses(self.pg());
        let order = if f.after_id.is_some() { "ASC" } else { "DESC" };
        (format!("SELECT id, {COLUMNS} FROM {}{wh} ORDER BY id {order} LIMIT {}", self.table(), limit + 1), params)
    }

    /// SQLite's plan for the events query of `f` (`EXPLAIN QUERY PLAN`, one line per step).
    pub fn explain(&self, f: &Filter) -> Result<String, SinkError> {
        let Conn::Sqlite(c) = &self.conn else { return Err(SinkError::Other("explain: SQLite only".into())) };
        let (sql, params) = self.events_sql(f, f.limit.unwrap_or(100).clamp(1, MAX_LIMIT));
        let mut stmt = c.prepare(&format!("EXPLAIN QUERY PLAN {sql}"))?;
        let rows = stmt.query_map(rusqlite::params_from_iter(params), |r| r.get::<_, String>(3))?;
        Ok(rows.collect::<Result<Vec<_>, _>>()?.join("\n"))
    }

    /// Statistics between `since` and `until` (Unix ms) in about `buckets` buckets; the other
    /// filters of `f` apply too.
    pub fn stats(&self, f: &Filter, now_ms: i64, buckets: u32, top: usize) -> Result<Stats, SinkError> {
        let until = f.until_ms.unwrap_or(now_ms + 1);
        let since = f.since_ms.unwrap_or(until - 86_400_000);
        let span = (until - since).max(1);
        let bucket_ms = nice_bucket(span / buckets.max(1) as i64);
        let f = Filter { since_ms: Some(since), until_ms: Some(until), before_id: None, after_id: None, ..f.clone() };
        let (wh, params) = f.clauses(self.pg());
        let top = top.clamp(1, 100);
        let table = self.table();
        // SUM over an integer column is a bigint in PostgreSQL; the casts keep both databases
        // answering plain 64-bit integers.
        let sql = format!(
            "SELECT (time_ms / {bucket_ms}) * {bucket_ms} AS b, CAST(SUM(count) AS BIGINT), CAST(SUM(CASE WHEN verdict = 'block' THEN count ELSE 0 END) AS BIGINT), \
             CAST(SUM(CASE WHEN verdict = 'monitor' THEN count ELSE 0 END) AS BIGINT) FROM {table}{wh} GROUP BY b ORDER BY b"
        );
        let int = |c: &Cell| match c {
            Cell::Int(v) => v.unwrap_or(0),
            Cell::Text(_) => 0,
        };
        let buckets: Vec<Bucket> = self.rows(&sql, &params, &[true, true, true, true], |c| Bucket {
            start_ms: int(&c[0]),
            total: int(&c[1]) as u64,
            blocked: int(&c[2]) as u64,
            monitored: int(&c[3]) as u64,
        })?;
        let total = buckets.iter().map(|b| b.total).sum();
        let top_of = |col: &str| -> Result<Vec<Top>, SinkError> {
            let sql = format!(
                "SELECT {col}, CAST(SUM(count) AS BIGINT) AS n FROM {table}{wh}{} {col} IS NOT NULL AND {col} != '' GROUP BY {col} ORDER BY n DESC, {col} LIMIT {top}",
                if wh.is_empty() { " WHERE" } else { " AND" }
            );
            self.rows(&sql, &params, &[false, true], |mut c| {
                let count = int(&c[1]) as u64;
                let key = match c.swap_remove(0) {
                    Cell::Text(t) => t.unwrap_or_default(),
                    Cell::Int(i) => i.unwrap_or(0).to_string(),
                };
                Top { key, count }
            })
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

/// Column kinds of `SELECT id, COLUMNS` (true: integer).
const EVENT_KINDS: [bool; 26] = [
    true, true, true, true, false, false, false, false, false, false, false, false, false, false, false, false, true, false, false, false, false, true, true,
    true, false, false,
];

fn pg_int(r: &postgres::Row, i: usize) -> Result<Option<i64>, SinkError> {
    use postgres::types::Type;
    let err = |e: postgres::Error| SinkError::Other(format!("postgres: {e}"));
    Ok(match *r.columns()[i].type_() {
        Type::INT2 => r.try_get::<_, Option<i16>>(i).map_err(err)?.map(i64::from),
        Type::INT4 => r.try_get::<_, Option<i32>>(i).map_err(err)?.map(i64::from),
        _ => r.try_get::<_, Option<i64>>(i).map_err(err)?,
    })
}

fn next_int(it: &mut impl Iterator<Item = Cell>) -> Option<i64> {
    match it.next() {
        Some(Cell::Int(v)) => v,
        _ => None,
    }
}

fn next_text(it: &mut impl Iterator<Item = Cell>) -> Option<String> {
    match it.next() {
        Some(Cell::Text(v)) => v,
        _ => None,
    }
}

fn row_event(c: Vec<Cell>) -> Event {
    // Read in column order (see `EVENT_KINDS`).
    let it = &mut c.into_iter();
    let id = next_int(it);
    let time_ms = next_int(it).unwrap_or(0);
    let last_ms = next_int(it).unwrap_or(0);
    let count = next_int(it).unwrap_or(1);
    let request_id = next_text(it).unwrap_or_default();
    let app = next_text(it).unwrap_or_default();
    let client_ip = next_text(it).unwrap_or_default();
    let method = next_text(it).unwrap_or_default();
    let host = next_text(it).unwrap_or_default();
    let path = next_text(it).unwrap_or_default();
    let query = next_text(it);
    let verdict = next_text(it).unwrap_or_default();
    let stage = next_text(it).unwrap_or_default();
    let reason = next_text(it).unwrap_or_default();
    let detector = next_text(it);
    let category = next_text(it);
    let confidence = next_int(it);
    let location = next_text(it);
    let fragment = next_text(it);
    let detail = next_text(it);
    let others = next_text(it);
    let status = next_int(it).unwrap_or(0);
    let upstream_status = next_int(it);
    let latency_us = next_int(it).unwrap_or(0);
    let tags = next_text(it);
    let operation = next_text(it);
    Event {
        id,
        time_ms,
        last_ms,
        count: u32::try_from(count).unwrap_or(1),
        request_id,
        app,
        client_ip,
        method,
        host,
        path,
        query,
        verdict: Verdict::parse(&verdict).unwrap_or(Verdict::Block),
        stage,
        reason,
        detector,
        category,
        confidence: confidence.and_then(|c| u8::try_from(c).ok()),
        location,
        fragment,
        detail,
        others: others.and_then(|o| serde_json::from_str(&o).ok()).unwrap_or_default(),
        status: u16::try_from(status).unwrap_or(0),
        upstream_status: upstream_status.and_then(|s| u16::try_from(s).ok()),
        latency_us: u64::try_from(latency_us).unwrap_or(0),
        tags: crate::model::tags_from_text(tags.as_deref()),
        operation,
    }
}
