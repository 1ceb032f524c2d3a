//! The SQLite sink: the embedded default.
//!
//! One connection, owned by the writer thread: WAL journal (readers never block the writer, and
//! a `kill -9` loses nothing that was committed), `synchronous = NORMAL` (a commit survives a
//! process crash; only a power loss may lose the last commits), one transaction per batch with
//! cached multi-row inserts (8 rows a statement), indexes on time, app, client IP and category. Retention by age and by
//! size runs from [`Sink::maintain`]: rows older than `max_age` are deleted, then the oldest
//! rows while the database is larger than `max_size`; freed pages are returned to the file
//! system (`auto_vacuum = INCREMENTAL`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{params, Connection, OpenFlags};

use crate::model::{now_ms, Event};
use crate::sink::{Sink, SinkError};

/// Schema version stored in `PRAGMA user_version` (2: the `tags` column; 3: `operation`).
pub const SCHEMA_VERSION: i64 = 3;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY,
    time_ms INTEGER NOT NULL,
    last_ms INTEGER NOT NULL,
    count INTEGER NOT NULL DEFAULT 1,
    request_id TEXT NOT NULL,
    app TEXT NOT NULL,
    client_ip TEXT NOT NULL,
    method TEXT NOT NULL,
    host TEXT NOT NULL,
    path TEXT NOT NULL,
    query TEXT,
    verdict TEXT NOT NULL,
    stage TEXT NOT NULL,
    reason TEXT NOT NULL,
    detector TEXT,
    category TEXT,
    confidence INTEGER,
    location TEXT,
    fragment TEXT,
    detail TEXT,
    others TEXT,
    status INTEGER NOT NULL,
    upstream_status INTEGER,
    latency_us INTEGER NOT NULL,
    tags TEXT,
    operation TEXT
);
CREATE INDEX IF NOT EXISTS events_time ON events(time_ms);
CREATE INDEX IF NOT EXISTS events_app ON events(app, time_ms);
CREATE INDEX IF NOT EXISTS events_ip ON events(client_ip, time_ms);
CREATE INDEX IF NOT EXISTS events_category ON events(category, time_ms);
";

/// The columns in insert and select order.
pub const COLUMNS: &str = "time_ms, last_ms, count, request_id, app, client_ip, method, host, path, query, verdict, stage, reason, \
     detector, category, confidence, location, fragment, detail, others, status, upstream_status, latency_us, tags, operation";

/// Retention limits; `None` keeps everything.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Retention {
    pub max_age: Option<Duration>,
    pub max_size: Option<u64>,
}

pub struct SqliteSink {
    conn: Connection,
    path: PathBuf,
    retention: Retention,
    /// The insert statements' text (their prepared statements are cached on the connection).
    insert_many: String,
    insert_one: String,
}

/// Open (creating when missing) a database with the events schema, for writing.
pub fn open_rw(path: &Path) -> Result<Connection, SinkError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| SinkError::Other(format!("cannot create {}: {e}", dir.display())))?;
    }
    let conn = Connection::open(path)?;
    conn.busy_timeout(Duration::from_secs(5))?;
    // auto_vacuum must be chosen before the first table exists; it is a no-op afterwards.
    conn.execute_batch("PRAGMA auto_vacuum = INCREMENTAL;")?;
    let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(SinkError::Other(format!("{}: cannot use the WAL journal (got {mode})", path.display())));
    }
    // 16 MiB of page cache (the default is 2 MiB) keeps the four indexes' hot pages resident
    // as the file grows; it fills only as pages are used.
    conn.execute_batch("PRAGMA synchronous = NORMAL; PRAGMA cache_size = -16384;")?;
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if version > SCHEMA_VERSION {
        return Err(SinkError::Other(format!(
            "{}: events schema version {version} is newer than this Palisade understands ({SCHEMA_VERSION})",
            path.display()
        )));
    }
    if version == 1 {
        // Version 1 had no tags.
        conn.execute_batch("BEGIN IMMEDIATE; ALTER TABLE events ADD COLUMN tags TEXT; PRAGMA user_version = 2; COMMIT;")?;
    }
    if (1..=2).contains(&version) {
        // Versions 1 and 2 had no operation.
        conn.execute_batch("BEGIN IMMEDIATE; ALTER TABLE events ADD COLUMN operation TEXT; PRAGMA user_version = 3; COMMIT;")?;
    }
    conn.execute_batch(SCHEMA)?;
    conn.execute_batch(&format!("PRAGMA user_version = {SCHEMA_VERSION};"))?;
    Ok(conn)
}

/// Open an existing events database read-only (for queries; never blocks the writer).
pub fn open_ro(path: &Path) -> Result<Connection, SinkError> {
    if !path.exists() {
        return Err(SinkError::Other(format!("{}: no such events database", path.display())));
    }
    let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI)?;
    conn.busy_timeout(Duration::from_secs(5))?;
    Ok(conn)
}

impl SqliteSink {
    pub fn open(path: &Path, retention: Retention) -> Result<SqliteSink, SinkError> {
        let conn = open_rw(path)?;
        Ok(SqliteSink { conn, path: path.to_path_buf(), retention, insert_many: insert_sql(ROWS_PER_INSERT), insert_one: insert_sql(1) })
    }

    /// Apply retention as of `now_ms`; returns the number of rows deleted.
    pub fn enforce_retention(&mut self, now_ms: i64) -> Result<u64, SinkError> {
        let mut deleted = 0u64;
        if let Some(age) = self.retention.max_age {
            let cutoff = now_ms - age.as_millis() as i64;
            deleted += self.conn.execute("DELETE FROM events WHERE time_ms < ?1", params![cutoff])? as u64;
        }
        if let Some(max) = self.retention.max_size {
            // Delete the oldest tenth of the rows until the live data fits (bounded rounds).
            for _ in 0..64 {
                if self.used_bytes()? <= max {
                    break;
                }
                let rows: i64 = self.conn.query_row("SELECT COUNT(*) FROM events", [], |r| r.get(0))?;
                if rows == 0 {
                    break;
                }
                let n = (rows / 10).max(1);
                deleted += self.conn.execute("DELETE FROM events WHERE id IN (SELECT id FROM events ORDER BY id LIMIT ?1)", params![n])? as u64;
            }
        }
        if deleted > 0 {
            // Each step of this pragma frees pages; step it to the end.
            let mut stmt = self.conn.prepare("PRAGMA incremental_vacuum")?;
            let mut rows = stmt.query([])?;
            while rows.next()?.is_some() {}
            // Fold the WAL back into the main file so the file size reflects the deletions.
            self.conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
        }
        Ok(deleted)
    }

    /// Bytes of pages in use (the file minus its free list).
    pub fn used_bytes(&self) -> Result<u64, SinkError> {
        let pages: i64 = self.conn.query_row("PRAGMA page_count", [], |r| r.get(0))?;
        let free: i64 = self.conn.query_row("PRAGMA freelist_count", [], |r| r.get(0))?;
        let size: i64 = self.conn.query_row("PRAGMA page_size", [], |r| r.get(0))?;
        Ok(((pages - free).max(0) * size) as u64)
    }
}

/// Rows per multi-row insert statement. One statement of several rows keeps the table's and the
/// indexes' cursors open between its rows, so an index that grows at its end (time; app and
/// category while one value dominates) takes SQLite's append shortcut instead of a search from
/// the root, and the statement's
/// setup (cursors opened, closed, reset) is paid once per [`ROWS_PER_INSERT`] rows. Measured with
/// callgrind (docs/BENCHMARKS.md, "SQLite sink: multi-row inserts"): 8 rows per statement cost
/// less per event than 4, 16, 32 or 64 (with more rows in flight, more of SQLite's
/// copies of the bound strings are alive at once and the C allocator's fast path overflows).
pub const ROWS_PER_INSERT: usize = 8;

/// Values per row.
const VALUES: usize = 25;

/// `INSERT OR FAIL INTO events (COLUMNS) VALUES (?, ...), ...` for `rows` rows.
///
/// `OR FAIL` rather than the default `ABORT`: a statement of several rows that may abort must
/// be undone on its own, so SQLite keeps a statement journal for it (a temporary file: it made
/// the multi-row insert write 3.7 times the bytes). `FAIL` needs none; the batch stays atomic
/// because an error rolls back the whole batch's transaction.
fn insert_sql(rows: usize) -> String {
    let row = format!("({})", vec!["?"; VALUES].join(", "));
    format!("INSERT OR FAIL INTO events ({COLUMNS}) VALUES {}", vec![row; rows].join(", "))
}

/// Bind one event's values at parameters `base + 1 ..= base + 25`, in [`COLUMNS`] order; values
/// are bound in place (no per-row parameter array, no copies of the strings on the Rust side).
fn bind(stmt: &mut rusqlite::CachedStatement<'_>, base: usize, e: &Event) -> rusqlite::Result<()> {
    stmt.raw_bind_parameter(base + 1, e.time_ms)?;
    stmt.raw_bind_parameter(base + 2, e.last_ms)?;
    stmt.raw_bind_parameter(base + 3, e.count)?;
    stmt.raw_bind_parameter(base + 4, &e.request_id)?;
    stmt.raw_bind_parameter(base + 5, &e.app)?;
    stmt.raw_bind_parameter(base + 6, &e.client_ip)?;
    stmt.raw_bind_parameter(base + 7, &e.method)?;
    stmt.raw_bind_parameter(base + 8, &e.host)?;
    stmt.raw_bind_parameter(base + 9, &e.path)?;
    stmt.raw_bind_parameter(base + 10, &e.query)?;
    stmt.raw_bind_parameter(base + 11, e.verdict.as_str())?;
    stmt.raw_bind_parameter(base + 12, &e.stage)?;
    stmt.raw_bind_parameter(base + 13, &e.reason)?;
    stmt.raw_bind_parameter(base + 14, &e.detector)?;
    stmt.raw_bind_parameter(base + 15, &e.category)?;
    stmt.raw_bind_parameter(base + 16, e.confidence)?;
    stmt.raw_bind_parameter(base + 17, &e.location)?;
    stmt.raw_bind_parameter(base + 18, &e.fragment)?;
    stmt.raw_bind_parameter(base + 19, &e.detail)?;
    // JSON only for the rare events that have further reasons or tags.
    let others = if e.others.is_empty() { None } else { serde_json::to_string(&e.others).ok() };
    stmt.raw_bind_parameter(base + 20, others)?;
    stmt.raw_bind_parameter(base + 21, e.status)?;
    stmt.raw_bind_parameter(base + 22, e.upstream_status)?;
    stmt.raw_bind_parameter(base + 23, e.latency_us.min(i64::MAX as u64) as i64)?;
    stmt.raw_bind_parameter(base + 24, crate::model::tags_text(&e.tags))?;
    stmt.raw_bind_parameter(base + 25, &e.operation)?;
    Ok(())
}

impl Sink for SqliteSink {
    fn write(&mut self, batch: &[Event]) -> Result<(), SinkError> {
        // One transaction per batch: the batch is written (committed, so it survives a kill -9)
        // or not at all (an error drops `tx`, which rolls the whole batch back).
        let tx = self.conn.transaction()?;
        {
            let mut chunks = batch.chunks_exact(ROWS_PER_INSERT);
            if chunks.len() > 0 {
                let mut stmt = tx.prepare_cached(&self.insert_many)?;
                for chunk in &mut chunks {
                    for (i, e) in chunk.iter().enumerate() {
                        bind(&mut stmt, i * VALUES, e)?;
                    }
                    stmt.raw_execute()?;
                }
            }
            let rest = chunks.remainder();
            if !rest.is_empty() {
                let mut stmt = tx.prepare_cached(&self.insert_one)?;
                for e in rest {
                    bind(&mut stmt, 0, e)?;
                    stmt.raw_execute()?;
                }
            }
        }
        tx.commit()?;
        Ok(())
    }

    fn maintain(&mut self) -> Result<(), SinkError> {
        if self.retention.max_age.is_some() || self.retention.max_size.is_some() {
            let n = self.enforce_retention(now_ms())?;
            if n > 0 {
                tracing::info!(deleted = n, db = %self.path.display(), "events retention");
            }
        }
        Ok(())
    }

    fn describe(&self) -> String {
        format!("sqlite:{}", self.path.display())
    }
}
