//! Glue between the configuration's `events:` section and the `palisade-events` pipeline: the
//! default when the section is absent, the pipeline's settings, and what a snapshot needs on the
//! request path (redaction list, sampling ratio).

use std::time::Duration;

use palisade_config::{Config, EventsConfig, Loc, Located};
use palisade_events::query::Store;
use palisade_events::{jsonl, sqlite, Error, ErrorKind, Options, Redactor, Settings, SinkSpec};

/// File name of the default SQLite database, beside the configuration file.
pub const DEFAULT_DB: &str = "palisade-events.db";

/// The events section in force: the configured one, or the default (SQLite beside the
/// configuration file). The flag says whether it is the default.
pub fn effective(config: &Config) -> (EventsConfig, bool) {
    match &config.events {
        Some(e) => (e.clone(), false),
        None => (EventsConfig::with_sink(Located { value: format!("sqlite:{DEFAULT_DB}"), loc: Loc::default() }), true),
    }
}

/// Pipeline settings for an events section; relative paths are resolved against the
/// configuration's directory.
pub fn settings(config: &Config, e: &EventsConfig) -> Result<Settings, Error> {
    let sink = SinkSpec::parse(&e.sink.value, &config.base_dir)?;
    if let SinkSpec::Postgres(url) = &sink {
        // Checked here so that `palisade check` and a reload catch a bad URL; connecting is the
        // writer thread's job.
        palisade_events::pg::parse_url(url).map_err(|e| Error::caused_by(ErrorKind::SinkSpec, e.to_string(), e))?;
    }
    Ok(Settings {
        sink,
        options: Options {
            queue_size: e.queue_size,
            batch_size: e.batch_size,
            aggregate_window: e.aggregate_window,
            aggregate_after: (e.batch_size / 4).max(1),
            ..Options::default()
        },
        retention: sqlite::Retention { max_age: e.retention_age, max_size: e.retention_size },
        rotation: jsonl::Rotation { max_size: e.rotate_size, keep: e.rotate_keep },
    })
}

/// What the request path reads from the snapshot.
#[derive(Clone, Debug)]
pub struct Runtime {
    pub redactor: Redactor,
    /// 0 = no allowed request is recorded.
    pub sample_allowed: f64,
}

impl Runtime {
    pub fn new(config: &Config) -> Runtime {
        let (e, _) = effective(config);
        let redactor = match &e.redact_fields {
            Some(f) => Redactor::new(f.iter().map(String::as_str)),
            None => Redactor::default(),
        };
        Runtime { redactor, sample_allowed: e.sample_allowed }
    }
}

/// A started pipeline and the database it can be queried from.
pub struct Started {
    pub pipeline: Option<palisade_events::Pipeline>,
    pub db: Option<Store>,
    pub description: String,
}

/// Start the pipeline for `config`. An explicit sink that cannot be opened is an error; the
/// default one (no `events:` section) that cannot be opened is logged and events are off. The
/// error's kind is [`ErrorKind::SinkSpec`] for a sink that is not valid, [`ErrorKind::Store`]
/// for one that cannot be opened.
pub fn start(config: &Config) -> Result<Started, Error> {
    let (e, default) = effective(config);
    let s = settings(config, &e)?;
    let description = s.sink.to_string();
    match palisade_events::start(&s) {
        Ok(p) => {
            let db = p.as_ref().and(match &s.sink {
                SinkSpec::Sqlite(path) => Some(Store::Sqlite(path.clone())),
                SinkSpec::Postgres(url) => Some(Store::Postgres(url.clone())),
                _ => None,
            });
            Ok(Started { pipeline: p, db, description })
        }
        Err(err) if default => {
            tracing::warn!(sink = %description, error = %err, "cannot open the default events database; events are not recorded (set `events:` to choose a sink)");
            Ok(Started { pipeline: None, db: None, description: "off".into() })
        }
        Err(err) => Err(Error::caused_by(ErrorKind::Store, err.to_string(), err).context(format_args!("events sink {description}"))),
    }
}

/// Settings that need a restart to change (everything but redaction and sampling).
pub fn restart_key(config: &Config) -> String {
    let (e, _) = effective(config);
    format!(
        "{:?}|{}|{}|{:?}|{:?}|{:?}|{}|{}",
        settings(config, &e).map(|s| s.sink.to_string()),
        e.queue_size,
        e.batch_size,
        e.aggregate_window,
        e.retention_age,
        e.retention_size,
        e.rotate_size,
        e.rotate_keep
    )
}

/// How long shutdown waits for queued events to be stored.
pub const CLOSE_TIMEOUT: Duration = palisade_events::CLOSE_TIMEOUT;

#[cfg(test)]
mod tests {
    use super::*;

    fn config(sink: &str) -> Config {
        let text = format!("listen:\n  - addr: 127.0.0.1:0\napps:\n  - name: api\n    upstream: http://127.0.0.1:9\nevents:\n  sink: '{sink}'\n");
        palisade_config::parse_str(&text, "test.yaml", std::path::Path::new("/")).unwrap()
    }

    /// A sink that is not valid and one that cannot be opened are told apart by kind (the
    /// first is the configuration's fault, the second the store's); the message names the sink.
    #[test]
    fn sink_errors_say_which_sink_and_why() {
        let e = start(&config("postgres://u@h:notaport/db")).err().expect("an invalid URL");
        assert_eq!(e.kind(), ErrorKind::SinkSpec, "{e}");
        assert!(e.message().starts_with("invalid PostgreSQL URL"), "{e}");
        // A parent that is a file, not a directory: nothing is created.
        let e = start(&config("sqlite:/dev/null/events.db")).err().expect("an unopenable database");
        assert_eq!(e.kind(), ErrorKind::Store, "{e}");
        assert!(e.message().starts_with("events sink sqlite:/dev/null/events.db: "), "{e}");
        assert!(std::error::Error::source(&e).is_some(), "the store's error is the cause");
    }
}
