//! Observed traffic for `palisade openapi learn` and `palisade openapi diff`: HAR files, raw
//! HTTP request files (one request per file, or a directory of them), and the allowed requests
//! the events pipeline sampled (`events.sample_allowed`; method, path and query only).

use std::path::{Path, PathBuf};

use palisade_openapi::learn::{har_samples, Sample};

use crate::{Error, ErrorKind};

/// Where samples come from.
#[derive(Debug, Default)]
pub struct Sources {
    pub har: Vec<PathBuf>,
    pub raw: Vec<PathBuf>,
    /// An events database (SQLite file or `postgres://` URL).
    pub events: Option<String>,
    /// Only events of this app.
    pub app: Option<String>,
}

/// Most bytes read from one traffic file.
const MAX_FILE: u64 = 256 * 1024 * 1024;
/// Most files read from one directory.
const MAX_FILES: usize = 1_000_000;
/// Most sampled events read.
const MAX_EVENTS: usize = 1_000_000;

/// The samples, and one line for each raw file that could not be read as a request (skipped,
/// so that one bad file in a directory of recordings does not void the rest).
pub fn read(src: &Sources) -> Result<(Vec<Sample>, Vec<String>), Error> {
    let mut out = Vec::new();
    let mut skipped = Vec::new();
    for f in &src.har {
        out.extend(har_samples(&read_bounded(f)?).map_err(|e| fail(e.to_string()).context(f.display()))?);
    }
    for p in &src.raw {
        let files = if p.is_dir() { list_dir(p)? } else { vec![p.clone()] };
        let many = p.is_dir();
        for f in files {
            let r = match palisade_core::rawhttp::parse_request(&read_bounded(&f)?) {
                Ok(r) => r,
                Err(e) if many => {
                    skipped.push(format!("{}: {e}", f.display()));
                    continue;
                }
                Err(e) => return Err(Error::caused_by(ErrorKind::Traffic, e.to_string(), e).context(f.display())),
            };
            let content_type = r.headers.get(http::header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).map(String::from);
            out.push(Sample { method: r.method.to_string(), path: r.path, query: r.query, content_type, body: r.body, response: None });
        }
    }
    if let Some(db) = &src.events {
        out.extend(events(db, src.app.as_deref())?);
    }
    if out.is_empty() {
        return Err(fail("no requests: give --har FILE, --raw FILE|DIR or --events DB (with events.sample_allowed set)".into()));
    }
    Ok((out, skipped))
}

fn read_bounded(f: &Path) -> Result<Vec<u8>, Error> {
    use std::io::Read;
    let file = std::fs::File::open(f).map_err(|e| io(e, f))?;
    let mut buf = Vec::new();
    file.take(MAX_FILE + 1).read_to_end(&mut buf).map_err(|e| io(e, f))?;
    if buf.len() as u64 > MAX_FILE {
        return Err(fail(format!("larger than {} MiB", MAX_FILE >> 20)).context(f.display()));
    }
    Ok(buf)
}

fn list_dir(dir: &Path) -> Result<Vec<PathBuf>, Error> {
    let mut files = Vec::new();
    for e in std::fs::read_dir(dir).map_err(|e| io(e, dir))? {
        let p = e.map_err(|e| io(e, dir))?.path();
        if p.is_file() {
            files.push(p);
            if files.len() > MAX_FILES {
                return Err(fail(format!("more than {MAX_FILES} files")).context(dir.display()));
            }
        }
    }
    files.sort();
    Ok(files)
}

/// An error about recorded traffic, with nothing underneath.
fn fail(message: String) -> Error {
    Error::new(ErrorKind::Traffic, message)
}

/// A file or directory of recorded traffic that could not be read.
fn io(e: std::io::Error, path: &Path) -> Error {
    Error::caused_by(ErrorKind::Traffic, e.to_string(), e).context(path.display())
}

/// Allowed requests sampled by the events pipeline, newest first.
fn events(db: &str, app: Option<&str>) -> Result<Vec<Sample>, Error> {
    use palisade_events::query::{Filter, Reader, Store, MAX_LIMIT};
    let reader = Reader::open_store(&Store::parse(db)).map_err(|e| Error::caused_by(ErrorKind::Traffic, e.to_string(), e).context(db))?;
    let mut f = Filter { verdict: Some(palisade_events::Verdict::Allow), app: app.map(String::from), limit: Some(MAX_LIMIT), ..Filter::default() };
    let mut out = Vec::new();
    loop {
        let page = reader.events(&f).map_err(|e| Error::caused_by(ErrorKind::Traffic, e.to_string(), e).context(db))?;
        out.extend(page.events.into_iter().map(|e| Sample { method: e.method, path: e.path, query: e.query, ..Sample::default() }));
        match page.next_cursor {
            Some(c) if out.len() < MAX_EVENTS => f.before_id = Some(c),
            _ => break,
        }
    }
    Ok(out)
}
