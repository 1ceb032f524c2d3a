//! The JSON lines sink, for SIEMs: one event per line, to stdout or to a file that rotates by
//! size (`events.jsonl` → `events.jsonl.1` → ... → `events.jsonl.N`, the oldest removed).

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::model::Event;
use crate::sink::{Sink, SinkError};

/// Rotation of a JSON lines file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rotation {
    /// A file is rotated before a line would take it past this size (a single longer line is
    /// written alone into a fresh file).
    pub max_size: u64,
    /// Rotated files kept besides the current one.
    pub keep: u32,
}

impl Default for Rotation {
    fn default() -> Self {
        Rotation { max_size: 100 * 1024 * 1024, keep: 5 }
    }
}

enum Out {
    Stdout(io::Stdout),
    File { w: BufWriter<File>, path: PathBuf, size: u64, rotation: Rotation },
}

pub struct JsonlSink {
    out: Out,
    line: Vec<u8>,
}

impl JsonlSink {
    pub fn stdout() -> JsonlSink {
        JsonlSink { out: Out::Stdout(io::stdout()), line: Vec::new() }
    }

    /// Append to `path` (created when missing), rotating by size.
    pub fn file(path: &Path, rotation: Rotation) -> Result<JsonlSink, SinkError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        let f = OpenOptions::new().create(true).append(true).open(path).map_err(|e| SinkError::Other(format!("{}: {e}", path.display())))?;
        let size = f.metadata()?.len();
        Ok(JsonlSink { out: Out::File { w: BufWriter::new(f), path: path.to_path_buf(), size, rotation }, line: Vec::new() })
    }
}

/// `events.jsonl` → `events.jsonl.1` etc.
pub fn rotated_name(path: &Path, n: u32) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(format!(".{n}"));
    PathBuf::from(s)
}

fn rotate(path: &Path, keep: u32) -> io::Result<()> {
    if keep == 0 {
        return std::fs::remove_file(path).or_else(|e| if e.kind() == io::ErrorKind::NotFound { Ok(()) } else { Err(e) });
    }
    let _ = std::fs::remove_file(rotated_name(path, keep));
    for n in (1..keep).rev() {
        let from = rotated_name(path, n);
        if from.exists() {
            std::fs::rename(&from, rotated_name(path, n + 1))?;
        }
    }
    std::fs::rename(path, rotated_name(path, 1))
}

impl Sink for JsonlSink {
    fn write(&mut self, batch: &[Event]) -> Result<(), SinkError> {
        match &mut self.out {
            Out::Stdout(s) => {
                let mut lock = s.lock();
                for e in batch {
                    serde_json::to_writer(&mut lock, e).map_err(io::Error::from)?;
                    lock.write_all(b"\n")?;
                }
                lock.flush()?;
            }
            Out::File { w, path, size, rotation } => {
                for e in batch {
                    self.line.clear();
                    serde_json::to_writer(&mut self.line, e).map_err(io::Error::from)?;
                    self.line.push(b'\n');
                    let len = self.line.len() as u64;
                    if *size > 0 && *size + len > rotation.max_size {
                        w.flush()?;
                        rotate(path, rotation.keep)?;
                        let f = OpenOptions::new().create(true).append(true).open(&*path)?;
                        *w = BufWriter::new(f);
                        *size = 0;
                    }
                    w.write_all(&self.line)?;
                    *size += len;
                }
                w.flush()?;
            }
        }
        Ok(())
    }

    fn describe(&self) -> String {
        match &self.out {
            Out::Stdout(_) => "stdout".into(),
            Out::File { path, .. } => format!("jsonl:{}", path.display()),
        }
    }
}
