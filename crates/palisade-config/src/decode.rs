//! Decoding of the located YAML tree into typed configuration, collecting every problem
//! instead of stopping at the first one.

use std::net::SocketAddr;
use std::time::Duration;

use crate::error::ConfigError;
use crate::yaml::{Key, Node, Origin, Value};

/// Accumulates errors while decoding one file.
pub struct Ctx {
    pub file: String,
    pub errors: Vec<ConfigError>,
    /// Problems beyond [`MAX_KEPT`], counted but not kept (a file of millions of unknown keys
    /// must not take gigabytes to report).
    pub omitted: usize,
}

/// Most problems one [`Ctx`] keeps.
pub const MAX_KEPT: usize = 1000;

impl Ctx {
    pub fn new(file: impl Into<String>) -> Self {
        Ctx { file: file.into(), errors: Vec::new(), omitted: 0 }
    }

    pub fn error(&mut self, origin: &Origin, path: &str, message: impl Into<String>) {
        if self.errors.len() >= MAX_KEPT {
            self.omitted += 1;
            return;
        }
        self.errors.push(ConfigError::new(&self.file, origin, path, message));
    }

    /// The problems, with one closing the list that counts those not kept.
    pub fn into_errors(mut self) -> Vec<ConfigError> {
        if self.omitted > 0 {
            let n = self.omitted;
            self.errors.push(ConfigError::file(&self.file, format!("{n} more problem(s) not collected (only the first {MAX_KEPT} are)")));
        }
        self.errors
    }
}

/// Join a key path: `join("apps[0]", "name") == "apps[0].name"`.
pub fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

pub fn index(path: &str, i: usize) -> String {
    format!("{path}[{i}]")
}

/// Reads a mapping key by key and reports the keys nobody asked for as unknown.
pub struct MapReader<'n> {
    node: &'n Node,
    path: String,
    entries: &'n [(Key, Node)],
    used: Vec<bool>,
}

impl<'n> MapReader<'n> {
    /// `None` (with an error recorded) when `node` is not a mapping. Null counts as empty.
    pub fn new(cx: &mut Ctx, node: &'n Node, path: &str) -> Option<Self> {
        let entries: &[(Key, Node)] = match &node.value {
            Value::Map(entries) => entries,
            Value::Null => &[],
            _ => {
                cx.error(&node.origin, path, format!("expected a mapping, found {}", node.kind()));
                return None;
            }
        };
        Some(MapReader { node, path: path.to_string(), used: vec![false; entries.len()], entries })
    }

    pub fn path(&self) -> &str {
        &self.path
    }

    pub fn origin(&self) -> &'n Origin {
        &self.node.origin
    }

    /// The raw node for `key`, marking it used.
    pub fn node(&mut self, key: &str) -> Option<&'n Node> {
        let i = self.entries.iter().position(|(k, _)| k.name == key)?;
        self.used[i] = true;
        Some(&self.entries[i].1)
    }

    pub fn has(&self, key: &str) -> bool {
        self.entries.iter().any(|(k, _)| k.name == key)
    }

    /// Decode an optional key. `null` counts as absent.
    pub fn opt<T>(&mut self, cx: &mut Ctx, key: &str, f: impl FnOnce(&mut Ctx, &'n Node, &str) -> Option<T>) -> Option<T> {
        let node = self.node(key)?;
        if matches!(node.value, Value::Null) {
            return None;
        }
        f(cx, node, &join(&self.path, key))
    }

    /// Decode a required key, reporting its absence.
    pub fn req<T>(&mut self, cx: &mut Ctx, key: &str, f: impl FnOnce(&mut Ctx, &'n Node, &str) -> Option<T>) -> Option<T> {
        if !self.has(key) {
            cx.error(&self.node.origin, &self.path, format!("missing required key `{key}`"));
            return None;
        }
        self.opt(cx, key, f)
    }

    /// Report every key that was not read, with a suggestion when one is close.
    pub fn finish(self, cx: &mut Ctx) {
        let known: Vec<&str> = Vec::new();
        self.finish_with(cx, &known)
    }

    /// Like [`MapReader::finish`] with the list of accepted keys for "did you mean" hints.
    pub fn finish_with(self, cx: &mut Ctx, known: &[&str]) {
        for (i, (k, _)) in self.entries.iter().enumerate() {
            if !self.used[i] {
                if cx.errors.len() >= MAX_KEPT {
                    cx.omitted += 1;
                    continue;
                }
                let mut msg = format!("unknown key `{}`", k.name);
                if let Some(s) = suggest(&k.name, known) {
                    msg.push_str(&format!(" (did you mean `{s}`?)"));
                } else if !known.is_empty() {
                    msg.push_str(&format!("; expected one of: {}", known.join(", ")));
                }
                cx.error(&k.origin, &join(&self.path, &k.name), msg);
            }
        }
    }
}

pub(crate) fn suggest<'a>(word: &str, known: &[&'a str]) -> Option<&'a str> {
    known.iter().map(|k| (levenshtein(word, k), *k)).filter(|(d, k)| *d <= 2.max(k.len() / 4)).min_by_key(|(d, _)| *d).map(|(_, k)| k)
}

fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != *cb)).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// Iterate a list, calling `f` with each item and its path. A scalar is an error.
pub fn seq<'n, T>(cx: &mut Ctx, node: &'n Node, path: &str, mut f: impl FnMut(&mut Ctx, &'n Node, &str) -> Option<T>) -> Option<Vec<T>> {
    match &node.value {
        Value::Seq(items) => {
            let mut out = Vec::with_capacity(items.len());
            let mut ok = true;
            for (i, item) in items.iter().enumerate() {
                match f(cx, item, &index(path, i)) {
                    Some(v) => out.push(v),
                    None => ok = false,
                }
            }
            ok.then_some(out)
        }
        Value::Null => Some(Vec::new()),
        _ => {
            cx.error(&node.origin, path, format!("expected a list, found {}", node.kind()));
            None
        }
    }
}

/// Like [`seq`], but keeps the items that decoded when others did not (their errors are
/// recorded), so that checks across items still run.
pub fn seq_partial<'n, T>(cx: &mut Ctx, node: &'n Node, path: &str, mut f: impl FnMut(&mut Ctx, &'n Node, &str) -> Option<T>) -> Vec<T> {
    match &node.value {
        Value::Seq(items) => items.iter().enumerate().filter_map(|(i, item)| f(cx, item, &index(path, i))).collect(),
        Value::Null => Vec::new(),
        _ => {
            cx.error(&node.origin, path, format!("expected a list, found {}", node.kind()));
            Vec::new()
        }
    }
}

/// A list, or a single item accepted as a one-element list.
pub fn one_or_seq<'n, T>(cx: &mut Ctx, node: &'n Node, path: &str, mut f: impl FnMut(&mut Ctx, &'n Node, &str) -> Option<T>) -> Option<Vec<T>> {
    match &node.value {
        Value::Seq(_) | Value::Null => seq(cx, node, path, f),
        _ => f(cx, node, path).map(|v| vec![v]),
    }
}

pub fn string(cx: &mut Ctx, node: &Node, path: &str) -> Option<String> {
    match &node.value {
        Value::Str(s) => Some(s.clone()),
        _ => {
            cx.error(&node.origin, path, format!("expected a string, found {}", node.kind()));
            None
        }
    }
}

pub fn non_empty_string(cx: &mut Ctx, node: &Node, path: &str) -> Option<String> {
    let s = string(cx, node, path)?;
    if s.trim().is_empty() {
        cx.error(&node.origin, path, "must not be empty");
        return None;
    }
    Some(s)
}

pub fn boolean(cx: &mut Ctx, node: &Node, path: &str) -> Option<bool> {
    match &node.value {
        Value::Bool(b) => Some(*b),
        Value::Str(s) if matches!(node.origin, Origin::Env(_)) && (s == "true" || s == "false") => Some(s == "true"),
        _ => {
            cx.error(&node.origin, path, format!("expected true or false, found {}", node.kind()));
            None
        }
    }
}

/// An unsigned integer within `[min, max]`.
pub fn uint(cx: &mut Ctx, node: &Node, path: &str, min: u64, max: u64) -> Option<u64> {
    let v = match &node.value {
        Value::Int(i) if *i >= 0 => *i as u64,
        Value::Str(s) if s.trim().parse::<u64>().is_ok() => s.trim().parse().unwrap(),
        _ => {
            cx.error(&node.origin, path, format!("expected a non-negative integer, found {}", node.kind()));
            return None;
        }
    };
    if v < min || v > max {
        cx.error(&node.origin, path, format!("{v} is out of range {min}..={max}"));
        return None;
    }
    Some(v)
}

/// One of a fixed set of words.
pub fn one_of<'a>(cx: &mut Ctx, node: &Node, path: &str, choices: &[&'a str]) -> Option<&'a str> {
    let text = node.scalar_text();
    match text.as_deref().and_then(|t| choices.iter().find(|c| **c == t)) {
        Some(c) => Some(c),
        None => {
            let found = text.map(|t| format!("`{t}`")).unwrap_or_else(|| node.kind().to_string());
            cx.error(&node.origin, path, format!("expected one of {}, found {found}", choices.join(" | ")));
            None
        }
    }
}

/// `10s`, `500ms`, `100us` (or `100µs`), `2m`, `1h`, `1d`, or a bare number of seconds.
pub fn duration(cx: &mut Ctx, node: &Node, path: &str) -> Option<Duration> {
    let parsed = match &node.value {
        Value::Int(i) if *i >= 0 => Some(Duration::from_secs(*i as u64)),
        Value::Float(f) if *f >= 0.0 && f.is_finite() => Some(Duration::from_secs_f64(*f)),
        Value::Str(s) => parse_duration(s),
        _ => None,
    };
    if parsed.is_none() {
        cx.error(&node.origin, path, "expected a duration such as 500ms, 10s, 2m or 1h");
    }
    parsed
}

pub fn parse_duration(s: &str) -> Option<Duration> {
    let s = s.trim();
    let split = s.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
    let (num, unit) = s.split_at(split);
    let n: f64 = num.parse().ok()?;
    if !n.is_finite() || n < 0.0 {
        return None;
    }
    let secs = match unit.trim() {
        "us" | "µs" => n / 1_000_000.0,
        "ms" => n / 1000.0,
        "s" => n,
        "m" => n * 60.0,
        "h" => n * 3600.0,
        "d" => n * 86400.0,
        _ => return None,
    };
    Some(Duration::from_secs_f64(secs))
}

/// `16KiB`, `10MiB`, `1GiB`, `64KB`, `1MB`, or a bare number of bytes.
pub fn size(cx: &mut Ctx, node: &Node, path: &str) -> Option<u64> {
    let parsed = match &node.value {
        Value::Int(i) if *i >= 0 => Some(*i as u64),
        Value::Str(s) => parse_size(s),
        _ => None,
    };
    if parsed.is_none() {
        cx.error(&node.origin, path, "expected a size such as 4096, 16KiB or 10MiB");
    }
    parsed
}

pub fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: u64 = num.parse().ok()?;
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" => 1000,
        "kib" => 1024,
        "m" | "mb" => 1000 * 1000,
        "mib" => 1024 * 1024,
        "g" | "gb" => 1000 * 1000 * 1000,
        "gib" => 1024 * 1024 * 1024,
        _ => return None,
    };
    n.checked_mul(mult)
}

pub fn socket_addr(cx: &mut Ctx, node: &Node, path: &str) -> Option<SocketAddr> {
    let text = string_like(cx, node, path)?;
    match text.parse::<SocketAddr>() {
        Ok(a) => Some(a),
        Err(_) => {
            cx.error(&node.origin, path, format!("`{text}` is not an address such as 127.0.0.1:8080 or [::1]:8080"));
            None
        }
    }
}

pub fn cidr(cx: &mut Ctx, node: &Node, path: &str) -> Option<ipnet::IpNet> {
    let text = string_like(cx, node, path)?;
    if let Ok(net) = text.parse::<ipnet::IpNet>() {
        return Some(net.trunc());
    }
    if let Ok(ip) = text.parse::<std::net::IpAddr>() {
        return Some(ipnet::IpNet::from(ip));
    }
    cx.error(&node.origin, path, format!("`{text}` is not an IP address or CIDR such as 10.0.0.0/8"));
    None
}

/// A scalar as text: strings, and numbers written without quotes.
pub fn string_like(cx: &mut Ctx, node: &Node, path: &str) -> Option<String> {
    match node.scalar_text() {
        Some(t) => Some(t),
        None => {
            cx.error(&node.origin, path, format!("expected a string, found {}", node.kind()));
            None
        }
    }
}
