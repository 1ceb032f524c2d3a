//! Reading the corpora of `palisade detect eval`: a JSON-lines file (gzip-compressed or not)
//! of values or of raw requests, or a directory of raw request files.

use std::io::Read as _;
use std::path::{Path, PathBuf};

use palisade_detect::eval::requests::{is_request_corpus, parse_request_corpus, LabelledRequest};
use palisade_detect::eval::{parse_corpus, Label, Sample};

/// What a corpus holds.
pub enum Corpus {
    /// Values to place in requests.
    Values(Vec<Sample>),
    /// Whole requests.
    Requests(Vec<LabelledRequest>),
}

/// The text of a file, decompressed when it is gzip (by its magic bytes).
fn read_text(path: &Path) -> Result<String, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let bytes = if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        flate2::read::MultiGzDecoder::new(&bytes[..]).read_to_end(&mut out).map_err(|e| format!("{}: not valid gzip: {e}", path.display()))?;
        out
    } else {
        bytes
    };
    String::from_utf8(bytes).map_err(|_| format!("{}: not UTF-8 text (binary requests go in `request_base64`)", path.display()))
}

/// Read a corpus: a directory of raw requests, or a JSON-lines file of requests or values.
pub fn load(path: &Path) -> Result<Corpus, String> {
    if path.is_dir() {
        return load_dir(path).map(Corpus::Requests);
    }
    let text = read_text(path)?;
    if is_request_corpus(&text) {
        parse_request_corpus(&text).map(Corpus::Requests).map_err(|e| format!("{}: {e}", path.display()))
    } else {
        parse_corpus(&text).map(Corpus::Values).map_err(|e| format!("{}: {e}", path.display()))
    }
}

/// Every regular file under `dir` (sorted, hidden files and `README*` skipped) is one raw
/// request, labelled by where it is: `LABEL/CLASS/[LOCATION/]NAME`, LABEL `benign`,
/// `attack` or `ambiguous`.
fn load_dir(dir: &Path) -> Result<Vec<LabelledRequest>, String> {
    let mut files = Vec::new();
    walk(dir, &mut files)?;
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let rel = f.strip_prefix(dir).unwrap_or(&f);
        let parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
        let id = parts.join("/");
        let label = match parts.first().map(String::as_str) {
            Some("benign") => Label::Benign,
            Some("attack") => Label::Attack,
            Some("ambiguous") => Label::Ambiguous,
            _ => return Err(format!("{}: expected LABEL/CLASS/[LOCATION/]FILE under the directory, with LABEL benign, attack or ambiguous", f.display())),
        };
        let class = if parts.len() >= 3 { parts[1].as_str() } else { "" };
        let location = if parts.len() >= 4 { parts[2].as_str() } else { "" };
        let raw = std::fs::read(&f).map_err(|e| format!("{}: {e}", f.display()))?;
        out.push(LabelledRequest::from_raw(&id, label, class, location, &raw).map_err(|e| format!("{}: {}", f.display(), e.message))?);
    }
    if out.is_empty() {
        return Err(format!("{}: no request files", dir.display()));
    }
    Ok(out)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for e in entries {
        let e = e.map_err(|e| format!("{}: {e}", dir.display()))?;
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') || name.starts_with("README") {
            continue;
        }
        let p = e.path();
        let ty = e.file_type().map_err(|e| format!("{}: {e}", p.display()))?;
        if ty.is_dir() {
            walk(&p, out)?;
        } else if ty.is_file() {
            out.push(p);
        }
    }
    Ok(())
}
