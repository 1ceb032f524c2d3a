//! API keys (stored as SHA-256 hex digests, never in clear) and denylists of revoked tokens
//! (by `jti` or by the SHA-256 of the whole token) and keys.
//!
//! The denylist is shared: the stage reads it on every request, a file reload replaces its
//! file-sourced part, and the admin API (events issue) can add entries at run time through
//! [`Denylist::add`] / [`Denylist::remove`] on the [`std::sync::Arc`] the stage hands out.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use arc_swap::ArcSwap;

use crate::encoding::sha256_hex;

/// One API key as configured.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiKey {
    /// Name recorded in the identity and events (never the key).
    pub name: String,
    /// Rate-limit tier (limits with a `tier` apply to keys of that tier only).
    pub tier: Option<String>,
}

/// API keys by the SHA-256 hex of the key.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ApiKeys {
    by_hash: HashMap<String, ApiKey>,
}

impl ApiKeys {
    pub fn insert(&mut self, sha256_hex: &str, key: ApiKey) {
        self.by_hash.insert(sha256_hex.to_ascii_lowercase(), key);
    }

    /// The key a client presented, if it is known.
    pub fn lookup(&self, presented: &str) -> Option<&ApiKey> {
        self.by_hash.get(&sha256_hex(presented.as_bytes()))
    }

    pub fn len(&self) -> usize {
        self.by_hash.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_hash.is_empty()
    }

    pub fn extend(&mut self, other: ApiKeys) {
        self.by_hash.extend(other.by_hash);
    }
}

/// Whether `s` is 64 hex digits.
pub fn is_sha256_hex(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Parse an API key file: one key per line, `SHA256HEX NAME [TIER]`; `#` comments.
pub fn parse_api_keys(text: &str) -> Result<ApiKeys, crate::Error> {
    let err = |i: usize, m: &str| crate::Error::new(crate::ErrorKind::ApiKeys, m).context(format_args!("line {}", i + 1));
    let mut keys = ApiKeys::default();
    for (i, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let mut parts = line.split_ascii_whitespace();
        let (Some(hash), Some(name)) = (parts.next(), parts.next()) else {
            return Err(err(i, "expected `SHA256HEX NAME [TIER]`"));
        };
        if !is_sha256_hex(hash) {
            return Err(err(i, "the first field must be the key's SHA-256 in hex (64 digits)"));
        }
        let tier = parts.next().map(str::to_string);
        if parts.next().is_some() {
            return Err(err(i, "expected `SHA256HEX NAME [TIER]`"));
        }
        keys.insert(hash, ApiKey { name: name.to_string(), tier });
    }
    Ok(keys)
}

/// What a denylist entry revokes.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum DenyEntry {
    /// A JWT's `jti`.
    Jti(String),
    /// The SHA-256 hex of a whole token as presented.
    Token(String),
    /// The SHA-256 hex of an API key.
    Key(String),
}

impl DenyEntry {
    /// `jti:ID`, `token:SHA256HEX` or `key:SHA256HEX`.
    pub fn parse(s: &str) -> Result<DenyEntry, crate::Error> {
        const FORMS: &str = "expected `jti:ID`, `token:SHA256HEX` or `key:SHA256HEX`";
        let err = |m: String| crate::Error::new(crate::ErrorKind::Denylist, m);
        let (kind, value) = s.split_once(':').ok_or_else(|| err(FORMS.into()))?;
        let value = value.trim();
        match kind.trim() {
            "jti" if !value.is_empty() => Ok(DenyEntry::Jti(value.to_string())),
            "token" if is_sha256_hex(value) => Ok(DenyEntry::Token(value.to_ascii_lowercase())),
            "key" if is_sha256_hex(value) => Ok(DenyEntry::Key(value.to_ascii_lowercase())),
            "token" | "key" => Err(err(format!("`{kind}:` takes a SHA-256 in hex (64 digits)"))),
            _ => Err(err(FORMS.into())),
        }
    }
}

/// Parse a denylist file: one entry per line (see [`DenyEntry::parse`]); `#` comments.
pub fn parse_denylist(text: &str) -> Result<HashSet<DenyEntry>, crate::Error> {
    let mut out = HashSet::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        out.insert(DenyEntry::parse(line).map_err(|e| e.context(format_args!("line {}", i + 1)))?);
    }
    Ok(out)
}

#[derive(Clone, Debug, Default)]
struct DenySets {
    file: HashSet<DenyEntry>,
    runtime: HashSet<DenyEntry>,
}

/// The revocation list of an app: entries from the configuration and its file, plus entries
/// added at run time. Reads are lock-free (one `ArcSwap` load); writes copy the set, which is
/// fine for lists that change rarely.
#[derive(Debug, Default)]
pub struct Denylist {
    sets: ArcSwap<DenySets>,
    /// Serialises writers (readers never wait).
    write: std::sync::Mutex<()>,
}

impl Denylist {
    pub fn new(initial: HashSet<DenyEntry>) -> Arc<Denylist> {
        Arc::new(Denylist { sets: ArcSwap::from_pointee(DenySets { file: initial, runtime: HashSet::new() }), write: Default::default() })
    }

    pub fn contains(&self, e: &DenyEntry) -> bool {
        let s = self.sets.load();
        s.file.contains(e) || s.runtime.contains(e)
    }

    /// Whether any entry is present (lets the stage skip hashing tokens when empty).
    pub fn is_empty(&self) -> bool {
        let s = self.sets.load();
        s.file.is_empty() && s.runtime.is_empty()
    }

    pub fn has_token_entries(&self) -> bool {
        let s = self.sets.load();
        s.file.iter().chain(s.runtime.iter()).any(|e| matches!(e, DenyEntry::Token(_)))
    }

    /// Add an entry at run time (admin API). Returns false if it was already there.
    pub fn add(&self, e: DenyEntry) -> bool {
        let _g = self.write.lock().unwrap_or_else(|p| p.into_inner());
        let cur = self.sets.load_full();
        if cur.runtime.contains(&e) {
            return false;
        }
        let mut next = (*cur).clone();
        next.runtime.insert(e);
        self.sets.store(Arc::new(next));
        true
    }

    /// Remove a run-time entry. Returns whether it was there.
    pub fn remove(&self, e: &DenyEntry) -> bool {
        let _g = self.write.lock().unwrap_or_else(|p| p.into_inner());
        let cur = self.sets.load_full();
        if !cur.runtime.contains(e) {
            return false;
        }
        let mut next = (*cur).clone();
        next.runtime.remove(e);
        self.sets.store(Arc::new(next));
        true
    }

    /// Replace the entries that come from configuration and file (a reload); run-time entries
    /// stay.
    pub fn replace_file_entries(&self, entries: HashSet<DenyEntry>) {
        let _g = self.write.lock().unwrap_or_else(|p| p.into_inner());
        let cur = self.sets.load_full();
        self.sets.store(Arc::new(DenySets { file: entries, runtime: cur.runtime.clone() }));
    }

    /// Every entry (file and run-time), for listing in the admin API.
    pub fn entries(&self) -> Vec<DenyEntry> {
        let s = self.sets.load();
        s.file.iter().chain(s.runtime.iter()).cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_keys_are_looked_up_by_hash() {
        let k = parse_api_keys(&format!("# ci\n{} ci gold\n{} partner\n", sha256_hex(b"secret-1"), sha256_hex(b"secret-2").to_uppercase())).unwrap();
        assert_eq!(k.lookup("secret-1"), Some(&ApiKey { name: "ci".into(), tier: Some("gold".into()) }));
        assert_eq!(k.lookup("secret-2").map(|k| k.name.as_str()), Some("partner"));
        assert_eq!(k.lookup("secret-3"), None);
        assert!(parse_api_keys("abc ci").unwrap_err().to_string().contains("line 1"));
        assert!(parse_api_keys(&sha256_hex(b"x")).is_err());
    }

    #[test]
    fn denylist_file_and_runtime_entries() {
        let file = parse_denylist(&format!("jti:abc\ntoken:{}\n# x\n", sha256_hex(b"t"))).unwrap();
        let d = Denylist::new(file);
        assert!(d.contains(&DenyEntry::Jti("abc".into())));
        assert!(d.contains(&DenyEntry::Token(sha256_hex(b"t"))));
        assert!(d.has_token_entries());
        assert!(d.add(DenyEntry::Key(sha256_hex(b"k"))));
        assert!(!d.add(DenyEntry::Key(sha256_hex(b"k"))));
        d.replace_file_entries(HashSet::new());
        assert!(!d.contains(&DenyEntry::Jti("abc".into())));
        assert!(d.contains(&DenyEntry::Key(sha256_hex(b"k"))), "run-time entries survive a reload");
        assert!(d.remove(&DenyEntry::Key(sha256_hex(b"k"))));
        assert!(d.is_empty());
        assert!(parse_denylist("jti:\n").is_err());
        let e = parse_denylist("token:abc\n").unwrap_err();
        assert!(e.to_string().starts_with("line 1: `token:` takes a SHA-256"), "{e}");
        assert_eq!(e.kind(), crate::ErrorKind::Denylist);
        assert!(parse_denylist("user:bob\n").is_err());
    }
}
