//! Rate limiting with GCRA (the generic cell rate algorithm: a token bucket kept as one
//! timestamp per key, the "theoretical arrival time"), in a bounded, sharded in-process table.
//!
//! A limit `rate: 100/s, burst: 50` has an emission interval `T` = 10 ms and admits a request
//! when `max(TAT, now) + T - now <= burst × T`, then moves `TAT` there. A key whose TAT is in
//! the past is indistinguishable from a fresh one, which is what eviction relies on.
//!
//! Shared limits (Redis) keep the same table as a local tier: every decision is taken here,
//! without I/O, and hits are counted per key. The binary drains those counts in batches
//! ([`Table::drain_shared`]), adds them to the shared TAT atomically in the store, and hands the
//! store's TAT back ([`Table::apply_shared`]); a key's local TAT then covers what every
//! instance admitted up to the last sync. See docs/ARCHITECTURE.md for the accuracy bound.

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// `count` requests per `period_ns`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rate {
    pub count: u64,
    pub period_ns: u64,
}

impl Rate {
    /// `100/s`, `1000/h`, `5/10s`, `20/m`, `1/d` (the period is a duration as in the rest of
    /// the configuration).
    pub fn parse(s: &str) -> Option<Rate> {
        let (n, per) = s.split_once('/')?;
        let count: u64 = n.trim().parse().ok().filter(|&c| c > 0 && c <= 1_000_000_000)?;
        let per = per.trim();
        let period = match per {
            "s" | "sec" | "second" => std::time::Duration::from_secs(1),
            "m" | "min" | "minute" => std::time::Duration::from_secs(60),
            "h" | "hour" => std::time::Duration::from_secs(3600),
            "d" | "day" => std::time::Duration::from_secs(86400),
            other => palisade_config::decode::parse_duration(other)?,
        };
        let period_ns = u64::try_from(period.as_nanos()).ok().filter(|&p| p > 0)?;
        Some(Rate { count, period_ns })
    }
}

/// A compiled limit: emission interval and burst.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Gcra {
    /// Nanoseconds between two requests at the steady rate.
    pub t_ns: u64,
    /// Requests admitted at once from a fresh key.
    pub burst: u64,
    /// The policy as configured, for the `RateLimit-Policy` header.
    pub rate: Rate,
}

impl Gcra {
    /// `burst` defaults to the rate's count.
    pub fn new(rate: Rate, burst: Option<u64>) -> Gcra {
        let t_ns = (rate.period_ns / rate.count).max(1);
        Gcra { t_ns, burst: burst.unwrap_or(rate.count).max(1), rate }
    }

    fn tolerance(&self) -> u64 {
        self.burst.saturating_mul(self.t_ns)
    }
}

/// The outcome of one hit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decision {
    pub allowed: bool,
    /// Requests still admitted right now after this one.
    pub remaining: u64,
    /// Nanoseconds until the key is back to a full burst.
    pub reset_ns: u64,
    /// When refused: nanoseconds until one request would be admitted.
    pub retry_after_ns: u64,
}

/// Pure GCRA step: the decision and the new TAT (unchanged when refused).
pub fn gcra(tat: u64, now: u64, g: &Gcra) -> (Decision, u64) {
    let base = tat.max(now);
    let next = base.saturating_add(g.t_ns);
    let limit = now.saturating_add(g.tolerance());
    if next > limit {
        let retry = next - limit;
        return (Decision { allowed: false, remaining: 0, reset_ns: base - now, retry_after_ns: retry }, tat);
    }
    let remaining = (limit - next) / g.t_ns;
    (Decision { allowed: true, remaining, reset_ns: next - now, retry_after_ns: 0 }, next)
}

#[derive(Clone, Copy, Debug, Default)]
struct Entry {
    tat: u64,
    /// Emission interval of the limit this key belongs to (for shared syncing).
    t_ns: u64,
    /// Hits admitted since the last sync (shared limits).
    pending: u32,
    /// Asked about since the last sync (shared limits): its shared state is pulled back.
    touched: bool,
    shared: bool,
    /// Flood protection: refused until then.
    banned_until: u64,
}

impl Entry {
    fn idle(&self, now: u64) -> bool {
        self.tat <= now && self.banned_until <= now && self.pending == 0
    }
}

/// Counters of a table.
#[derive(Debug, Default)]
pub struct Counters {
    /// Keys dropped to make room (the table was full of active keys).
    pub evictions: AtomicU64,
    /// Idle keys dropped to make room (they held no state worth keeping).
    pub expired: AtomicU64,
    pub allowed: AtomicU64,
    pub limited: AtomicU64,
    pub bans: AtomicU64,
}

const SHARDS: usize = 16;

/// One item of a shared-store sync batch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyncItem {
    pub key: String,
    /// Hits admitted locally since the last sync.
    pub hits: u32,
    /// The limit's emission interval: the store adds `hits × t_ns` to the shared TAT.
    pub t_ns: u64,
    /// How long the store should keep the key (past it, the key is back to a full burst).
    pub ttl_ns: u64,
}

type Shard = Mutex<HashMap<Box<str>, Entry>>;

/// The bounded key table.
#[derive(Debug)]
pub struct Table {
    shards: Box<[Shard]>,
    per_shard: usize,
    hasher: RandomState,
    pub counters: Counters,
}

impl Table {
    /// A table holding at most about `max_keys` keys (rounded up to a multiple of the shard
    /// count).
    pub fn new(max_keys: usize) -> Table {
        let per_shard = max_keys.div_ceil(SHARDS).max(1);
        Table { shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(), per_shard, hasher: RandomState::new(), counters: Counters::default() }
    }

    fn shard(&self, key: &str) -> std::sync::MutexGuard<'_, HashMap<Box<str>, Entry>> {
        let i = (self.hasher.hash_one(key) as usize) % SHARDS;
        self.shards[i].lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Make room for one key in a full shard: drop an idle key if one of a few sampled is,
    /// otherwise the sampled key with the earliest TAT (the closest to being idle).
    fn make_room(&self, map: &mut HashMap<Box<str>, Entry>, now: u64) {
        let mut victim: Option<(&Box<str>, u64, bool)> = None;
        for (k, e) in map.iter().take(8) {
            let idle = e.idle(now);
            if idle {
                victim = Some((k, e.tat, true));
                break;
            }
            if victim.is_none_or(|(_, t, _)| e.tat < t) {
                victim = Some((k, e.tat, false));
            }
        }
        if let Some((k, _, idle)) = victim {
            let k = k.clone();
            map.remove(&k);
            if idle {
                self.counters.expired.fetch_add(1, Ordering::Relaxed);
            } else {
                self.counters.evictions.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// One request for `key` under limit `g` at `now`. `shared` marks keys synchronised with
    /// a shared store.
    pub fn hit(&self, key: &str, g: &Gcra, now: u64, shared: bool) -> Decision {
        let mut map = self.shard(key);
        let d = match map.get_mut(key) {
            Some(e) => {
                let (d, tat) = gcra(e.tat, now, g);
                e.tat = tat;
                e.touched = true;
                if d.allowed && shared {
                    e.pending = e.pending.saturating_add(1);
                }
                d
            }
            None => {
                if map.len() >= self.per_shard {
                    self.make_room(&mut map, now);
                }
                let (d, tat) = gcra(0, now, g);
                map.insert(key.into(), Entry { tat, t_ns: g.t_ns, pending: u32::from(shared && d.allowed), touched: true, shared, banned_until: 0 });
                d
            }
        };
        let c = if d.allowed { &self.counters.allowed } else { &self.counters.limited };
        c.fetch_add(1, Ordering::Relaxed);
        d
    }

    /// The remaining ban of `key` in nanoseconds, if it is banned at `now`.
    pub fn banned(&self, key: &str, now: u64) -> Option<u64> {
        let map = self.shard(key);
        map.get(key).filter(|e| e.banned_until > now).map(|e| e.banned_until - now)
    }

    /// Ban `key` until `until`.
    pub fn ban(&self, key: &str, until: u64, now: u64) {
        let mut map = self.shard(key);
        if !map.contains_key(key) && map.len() >= self.per_shard {
            self.make_room(&mut map, now);
        }
        map.entry(key.into()).or_default().banned_until = until;
        self.counters.bans.fetch_add(1, Ordering::Relaxed);
    }

    /// Take the shared keys touched since the last sync, with their admitted hits (reset to
    /// zero). Keys asked about but with no admitted hit come with `hits: 0`, to pull back what
    /// other instances did.
    pub fn drain_shared(&self, now: u64) -> Vec<SyncItem> {
        let mut out = Vec::new();
        for shard in self.shards.iter() {
            let mut map = shard.lock().unwrap_or_else(|p| p.into_inner());
            for (k, e) in map.iter_mut() {
                if e.shared && (e.touched || e.pending > 0) {
                    let ttl_ns = e.tat.saturating_sub(now).saturating_add(e.t_ns).max(1_000_000_000);
                    out.push(SyncItem { key: k.to_string(), hits: e.pending, t_ns: e.t_ns, ttl_ns });
                    e.pending = 0;
                    e.touched = false;
                }
            }
        }
        out
    }

    /// Put back hits that could not be synchronised (the store was unreachable), so the next
    /// sync carries them.
    pub fn restore_pending(&self, items: &[SyncItem]) {
        for it in items {
            let mut map = self.shard(&it.key);
            if let Some(e) = map.get_mut(it.key.as_str()) {
                e.pending = e.pending.saturating_add(it.hits);
            }
        }
    }

    /// The shared TAT of `key` as the store has it after adding this instance's hits: the local
    /// TAT becomes at least that, plus the hits admitted here since the batch was taken.
    pub fn apply_shared(&self, key: &str, shared_tat: u64) {
        let mut map = self.shard(key);
        if let Some(e) = map.get_mut(key) {
            let ahead = shared_tat.saturating_add(e.t_ns.saturating_mul(e.pending as u64));
            if ahead > e.tat {
                e.tat = ahead;
            }
        }
    }

    /// Keys held now.
    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| s.lock().unwrap_or_else(|p| p.into_inner()).len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests;
