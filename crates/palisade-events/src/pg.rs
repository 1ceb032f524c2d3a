//! The PostgreSQL sink, for fleets: several Palisade instances write into one database.
//!
//! - **Schema**: table `palisade_events` (the SQLite columns, `id` a `BIGINT` identity) and
//!   `palisade_schema_version`. Created or migrated at connection time inside one transaction
//!   that first takes a transaction-scoped advisory lock ([`LOCK_KEY`]), so two instances starting
//!   at once migrate one after the other and the second finds nothing to do; restarting an
//!   instance is a no-op. A database whose schema is newer than this build is refused.
//! - **Writes**: one `COPY palisade_events (...) FROM STDIN` (text format) per batch, on the
//!   pipeline's writer thread: one round trip and one transaction per batch, no per-row
//!   statements. The pipeline's aggregation and drop accounting apply unchanged.
//! - **Unreachable**: at start or later, the sink logs one clear line, and every batch while it
//!   is down (or the schema is newer than this build) fails with [`SinkError::Unavailable`] (counted as dropped by the pipeline, logged
//!   once by the sink, not per batch). It reconnects with exponential backoff (250 ms doubling
//!   to 30 s). The request path never waits: only the writer thread talks to PostgreSQL, and a
//!   writer stuck in a connect fills the bounded queue, whose overflow is dropped and counted.
//!
//! The URL is a libpq-style `postgres://user:password@host:port/dbname?...` URL; a
//! `connect_timeout` of 5 s, a `statement_timeout` of 30 s and a TCP user timeout of 30 s apply
//! unless the URL sets them; TCP keepalives are on. A writer stuck on a server that hangs only
//! fills the bounded queue (drops are counted): requests never wait for it.

use std::fmt::Write as _;
use std::io::Write as _;
use std::time::{Duration, Instant};

use postgres::{Client, Config, NoTls};

use crate::model::Event;
use crate::sink::{Sink, SinkError};

/// The schema version this build writes.
pub const SCHEMA_VERSION: i32 = 2;

/// Advisory lock key taken while the schema is created or migrated (`'PALISADE'` in ASCII,
/// truncated to 63 bits).
pub const LOCK_KEY: i64 = 0x5041_4c49_5341_4445;

/// Migrations, in order; migration `i` brings the schema from version `i` to `i + 1`.
const MIGRATIONS: &[&str] = &[
    "
CREATE TABLE IF NOT EXISTS palisade_events (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    time_ms BIGINT NOT NULL,
    last_ms BIGINT NOT NULL,
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
    confidence SMALLINT,
    location TEXT,
    fragment TEXT,
    detail TEXT,
    others TEXT,
    status SMALLINT NOT NULL,
    upstream_status SMALLINT,
    latency_us BIGINT NOT NULL,
    tags TEXT
);
CREATE INDEX IF NOT EXISTS palisade_events_time ON palisade_events(time_ms);
CREATE INDEX IF NOT EXISTS palisade_events_app ON palisade_events(app, time_ms);
CREATE INDEX IF NOT EXISTS palisade_events_ip ON palisade_events(client_ip, time_ms);
CREATE INDEX IF NOT EXISTS palisade_events_category ON palisade_events(category, time_ms);
",
    "ALTER TABLE palisade_events ADD COLUMN IF NOT EXISTS operation TEXT;",
];

/// The columns written, in COPY order.
pub const COLUMNS: &str = "time_ms, last_ms, count, request_id, app, client_ip, method, host, path, query, verdict, stage, reason, \
     detector, category, confidence, location, fragment, detail, others, status, upstream_status, latency_us, tags, operation";

const BACKOFF_MIN: Duration = Duration::from_millis(250);
const BACKOFF_MAX: Duration = Duration::from_secs(30);

pub struct PostgresSink {
    config: Config,
    /// The URL without credentials, for logs.
    shown: String,
    client: Option<Client>,
    next_attempt: Instant,
    backoff: Duration,
    /// Whether the "unreachable" line was logged for the current outage.
    down_logged: bool,
    buf: Vec<u8>,
}

/// Parse a `postgres://` URL, with the sink's default timeouts.
pub fn parse_url(url: &str) -> Result<Config, SinkError> {
    let mut config: Config = url.parse().map_err(|e| SinkError::Other(format!("invalid PostgreSQL URL: {e}")))?;
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(Duration::from_secs(5));
    }
    if config.get_options().is_none() {
        config.options("-c statement_timeout=30000");
    }
    // A peer that vanished (host down, network cut) is noticed within about 30 s instead of the
    // kernel's default of many minutes; the writer then reconnects with backoff.
    if config.get_tcp_user_timeout().is_none() {
        config.tcp_user_timeout(Duration::from_secs(30));
    }
    config.keepalives(true);
    config.keepalives_idle(Duration::from_secs(30));
    if config.get_application_name().is_none() {
        config.application_name("palisade");
    }
    Ok(config)
}

/// Connect, and create or migrate the schema (idempotent; serialised by an advisory lock).
/// Returns the client and the version found before migrating (0 for a fresh database).
pub fn connect(config: &Config) -> Result<(Client, i32), SinkError> {
    let mut client = config.connect(NoTls).map_err(pg_err)?;
    let before = migrate(&mut client)?;
    Ok((client, before))
}

/// Create or migrate the schema; returns the version found before.
pub fn migrate(client: &mut Client) -> Result<i32, SinkError> {
    let mut tx = client.transaction().map_err(pg_err)?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&LOCK_KEY]).map_err(pg_err)?;
    tx.batch_execute("CREATE TABLE IF NOT EXISTS palisade_schema_version (version INTEGER NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())")
        .map_err(pg_err)?;
    let row = tx.query_one("SELECT COALESCE(MAX(version), 0) FROM palisade_schema_version", &[]).map_err(pg_err)?;
    let before: i32 = row.get(0);
    if before > SCHEMA_VERSION {
        return Err(SinkError::Other(format!("events schema version {before} is newer than this Palisade understands ({SCHEMA_VERSION})")));
    }
    for (i, m) in MIGRATIONS.iter().enumerate().skip(before as usize) {
        tx.batch_execute(m).map_err(pg_err)?;
        tx.execute("INSERT INTO palisade_schema_version (version) VALUES ($1)", &[&(i as i32 + 1)]).map_err(pg_err)?;
    }
    tx.commit().map_err(pg_err)?;
    Ok(before)
}

fn pg_err(e: postgres::Error) -> SinkError {
    // The driver's Display omits the server's message; the source carries it.
    let mut s = e.to_string();
    if let Some(db) = e.as_db_error() {
        s = format!("{}: {}", db.code().code(), db.message());
    } else if let Some(src) = std::error::Error::source(&e) {
        let _ = write!(s, ": {src}");
    }
    SinkError::Other(format!("postgres: {s}"))
}

/// `postgres://[redacted]@host:port/db` (no credentials).
pub fn shown(url: &str) -> String {
    crate::sink::SinkSpec::Postgres(url.to_string()).to_string()
}

impl PostgresSink {
    /// A sink for `url`. An invalid URL is an error; nothing is connected yet: the writer thread
    /// connects in [`Sink::start`] (the driver runs its own small runtime, which must not be
    /// entered from the proxy's), and an unreachable server is logged, not fatal (events are
    /// dropped, counted, until it is reachable).
    pub fn open(url: &str) -> Result<PostgresSink, SinkError> {
        let config = parse_url(url)?;
        Ok(PostgresSink {
            config,
            shown: shown(url),
            client: None,
            next_attempt: Instant::now(),
            backoff: BACKOFF_MIN,
            down_logged: false,
            buf: Vec::with_capacity(256 * 1024),
        })
    }

    /// A connected client, or `Unavailable` while backing off.
    fn ensure(&mut self) -> Result<(), SinkError> {
        if self.client.as_ref().is_some_and(|c| !c.is_closed()) {
            return Ok(());
        }
        self.client = None;
        if Instant::now() < self.next_attempt {
            return Err(SinkError::Unavailable);
        }
        match connect(&self.config) {
            Ok((client, before)) => {
                if before < SCHEMA_VERSION {
                    tracing::info!(sink = %self.shown, from = before, to = SCHEMA_VERSION, "events: PostgreSQL schema created or migrated");
                }
                if self.down_logged {
                    tracing::info!(sink = %self.shown, "events: PostgreSQL reachable again; events are written");
                } else {
                    tracing::info!(sink = %self.shown, "events: connected to PostgreSQL");
                }
                self.client = Some(client);
                self.backoff = BACKOFF_MIN;
                self.down_logged = false;
                Ok(())
            }
            Err(e) => {
                self.down(&e);
                Err(SinkError::Unavailable)
            }
        }
    }

    fn down(&mut self, e: &SinkError) {
        self.client = None;
        self.next_attempt = Instant::now() + self.backoff;
        if !self.down_logged {
            tracing::error!(sink = %self.shown, error = %e, retry_in = ?self.backoff, "events: PostgreSQL unreachable; events are dropped (and counted) until it is back; retrying with backoff");
            self.down_logged = true;
        }
        self.backoff = (self.backoff * 2).min(BACKOFF_MAX);
    }

    /// Whether a connection is up right now.
    pub fn connected(&self) -> bool {
        self.client.as_ref().is_some_and(|c| !c.is_closed())
    }
}

/// Append one COPY text-format field: `\N` for NULL, else the text with backslash, tab,
/// newline and carriage return escaped.
fn field(buf: &mut Vec<u8>, v: Option<&str>) {
    match v {
        None => buf.extend_from_slice(b"\\N"),
        Some(s) => {
            for &b in s.as_bytes() {
                match b {
                    b'\\' => buf.extend_from_slice(b"\\\\"),
                    b'\t' => buf.extend_from_slice(b"\\t"),
                    b'\n' => buf.extend_from_slice(b"\\n"),
                    b'\r' => buf.extend_from_slice(b"\\r"),
                    // NUL cannot be stored in a PostgreSQL text value.
                    0 => buf.extend_from_slice(b"\\\\0"),
                    _ => buf.push(b),
                }
            }
        }
    }
}

fn num(buf: &mut Vec<u8>, v: Option<i64>) {
    match v {
        None => buf.extend_from_slice(b"\\N"),
        Some(n) => {
            let _ = write!(buf, "{n}");
        }
    }
}

/// The COPY text rows of a batch.
pub fn copy_rows(buf: &mut Vec<u8>, batch: &[Event]) {
    for e in batch {
        num(buf, Some(e.time_ms));
        buf.push(b'\t');
        num(buf, Some(e.last_ms));
        buf.push(b'\t');
        num(buf, Some(e.count as i64));
        for v in [Some(&*e.request_id), Some(&*e.app), Some(&*e.client_ip), Some(&*e.method), Some(&*e.host), Some(&*e.path), e.query.as_deref()] {
            buf.push(b'\t');
            field(buf, v);
        }
        buf.push(b'\t');
        field(buf, Some(e.verdict.as_str()));
        for v in [Some(&*e.stage), Some(&*e.reason), e.detector.as_deref(), e.category.as_deref()] {
            buf.push(b'\t');
            field(buf, v);
        }
        buf.push(b'\t');
        num(buf, e.confidence.map(i64::from));
        for v in [e.location.as_deref(), e.fragment.as_deref(), e.detail.as_deref()] {
            buf.push(b'\t');
            field(buf, v);
        }
        buf.push(b'\t');
        let others = if e.others.is_empty() { None } else { serde_json::to_string(&e.others).ok() };
        field(buf, others.as_deref());
        buf.push(b'\t');
        num(buf, Some(e.status as i64));
        buf.push(b'\t');
        num(buf, e.upstream_status.map(i64::from));
        buf.push(b'\t');
        num(buf, Some(e.latency_us.min(i64::MAX as u64) as i64));
        buf.push(b'\t');
        let tags = crate::model::tags_text(&e.tags);
        field(buf, tags.as_deref());
        buf.push(b'\t');
        field(buf, e.operation.as_deref());
        buf.push(b'\n');
    }
}

impl Sink for PostgresSink {
    fn start(&mut self) {
        let _ = self.ensure();
    }

    fn write(&mut self, batch: &[Event]) -> Result<(), SinkError> {
        self.ensure()?;
        self.buf.clear();
        copy_rows(&mut self.buf, batch);
        let client = self.client.as_mut().expect("connected");
        let result = (|| -> Result<u64, postgres::Error> {
            let mut w = client.copy_in(&format!("COPY palisade_events ({COLUMNS}) FROM STDIN"))?;
            // An I/O error here surfaces again from finish().
            let _ = w.write_all(&self.buf);
            w.finish()
        })();
        match result {
            Ok(_) => Ok(()),
            Err(e) => {
                let closed = e.is_closed() || e.as_db_error().is_none() || self.client.as_ref().is_some_and(|c| c.is_closed());
                let err = pg_err(e);
                if closed {
                    // The connection is gone: reconnect later; this batch is dropped (counted).
                    self.down(&err);
                    return Err(SinkError::Unavailable);
                }
                Err(err)
            }
        }
    }

    fn describe(&self) -> String {
        self.shown.clone()
    }
}
