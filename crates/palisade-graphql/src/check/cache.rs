//! The per-endpoint cache of analyses.

use std::sync::{Arc, Mutex};

use foldhash::HashMap;

use super::Analysis;

/// Analyses of the documents an endpoint has seen, by document, operation name and method:
/// real clients send a fixed set of documents with varying variables, so the parse and the
/// validation are done once per document. Bounded by entries and by bytes of documents; when
/// full, an arbitrary entry makes room (a client sending endless new documents gets the cost
/// of the uncached path, never unbounded memory).
#[derive(Debug)]
pub struct DocCache {
    map: Mutex<HashMap<u64, Arc<Analysis>>>,
    state: foldhash::fast::RandomState,
    bytes: std::sync::atomic::AtomicUsize,
    max_entries: usize,
    max_bytes: usize,
}

impl DocCache {
    pub fn new(max_entries: usize, max_bytes: usize) -> Self {
        DocCache { map: Mutex::new(HashMap::default()), state: Default::default(), bytes: Default::default(), max_entries, max_bytes }
    }

    pub fn len(&self) -> usize {
        self.map.lock().map_or(0, |m| m.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The analysis of `query` for `operation_name`, computed by `analyze` when not known.
    pub fn get_or_analyze(&self, query: &str, operation_name: Option<&str>, get: bool, analyze: impl FnOnce() -> Analysis) -> Arc<Analysis> {
        use std::hash::BuildHasher;
        use std::sync::atomic::Ordering;
        let key = self.state.hash_one((query, operation_name, get));
        if let Ok(m) = self.map.lock() {
            if let Some(a) = m.get(&key) {
                // The key is a hash: the entry is used only for the very same request.
                if &*a.query == query && a.operation_name.as_deref() == operation_name && a.get == get {
                    return a.clone();
                }
            }
        }
        let mut a = analyze();
        if self.max_entries == 0 || query.len() > self.max_bytes {
            return Arc::new(a);
        }
        (a.query, a.operation_name) = (query.into(), operation_name.map(Into::into));
        let a = Arc::new(a);
        if let Ok(mut m) = self.map.lock() {
            while m.len() >= self.max_entries || (self.bytes.load(Ordering::Relaxed) + query.len() > self.max_bytes && !m.is_empty()) {
                let Some(k) = m.keys().next().copied() else { break };
                if let Some(old) = m.remove(&k) {
                    self.bytes.fetch_sub(old.query.len(), Ordering::Relaxed);
                }
            }
            if let Some(old) = m.insert(key, a.clone()) {
                self.bytes.fetch_sub(old.query.len(), Ordering::Relaxed);
            }
            self.bytes.fetch_add(query.len(), Ordering::Relaxed);
        }
        a
    }
}
