use super::*;

const S: u64 = 1_000_000_000;
const T0: u64 = 1_000 * S;

#[test]
fn rates_parse() {
    assert_eq!(Rate::parse("100/s"), Some(Rate { count: 100, period_ns: S }));
    assert_eq!(Rate::parse("1000/h"), Some(Rate { count: 1000, period_ns: 3600 * S }));
    assert_eq!(Rate::parse("5/10s"), Some(Rate { count: 5, period_ns: 10 * S }));
    assert_eq!(Rate::parse("20 / m"), Some(Rate { count: 20, period_ns: 60 * S }));
    for bad in ["", "100", "0/s", "x/s", "10/fortnight", "10/0s", "-1/s"] {
        assert_eq!(Rate::parse(bad), None, "{bad}");
    }
}

#[test]
fn burst_then_steady_rate() {
    let g = Gcra::new(Rate::parse("10/s").unwrap(), Some(5));
    let mut tat = 0;
    let mut admitted = 0;
    for _ in 0..20 {
        let (d, t) = gcra(tat, T0, &g);
        tat = t;
        admitted += u64::from(d.allowed);
    }
    assert_eq!(admitted, 5, "a burst of 5 at once");
    let (d, _) = gcra(tat, T0, &g);
    assert!(!d.allowed);
    assert_eq!(d.retry_after_ns, S / 10, "one emission interval");
    // After 100 ms exactly one more.
    let (d, t) = gcra(tat, T0 + S / 10, &g);
    assert!(d.allowed);
    assert_eq!(d.remaining, 0);
    let (d, _) = gcra(t, T0 + S / 10, &g);
    assert!(!d.allowed);
    // Over a simulated minute at 1,000 requests per second offered, 10/s (+ the burst) pass.
    let mut tat = 0;
    let mut admitted = 0;
    for i in 0..60_000u64 {
        let (d, t) = gcra(tat, T0 + i * S / 1000, &g);
        tat = t;
        admitted += u64::from(d.allowed);
    }
    assert!((600..=606).contains(&admitted), "{admitted}");
}

#[test]
fn remaining_and_reset() {
    let g = Gcra::new(Rate::parse("100/s").unwrap(), None);
    let (d, tat) = gcra(0, T0, &g);
    assert!(d.allowed);
    assert_eq!(d.remaining, 99);
    assert_eq!(d.reset_ns, S / 100);
    let (d, _) = gcra(tat, T0, &g);
    assert_eq!(d.remaining, 98);
}

#[test]
fn table_is_bounded_and_counts_evictions() {
    let t = Table::new(160);
    let g = Gcra::new(Rate::parse("1/h").unwrap(), Some(1));
    for i in 0..10_000 {
        assert!(t.hit(&format!("ip:{i}"), &g, T0, false).allowed);
    }
    assert!(t.len() <= 160, "{}", t.len());
    assert!(t.counters.evictions.load(Ordering::Relaxed) >= 10_000 - 160);
    // Idle keys go first, and are counted apart.
    let t = Table::new(16);
    let fast = Gcra::new(Rate::parse("1000/s").unwrap(), Some(1));
    for i in 0..1000 {
        t.hit(&format!("k{i}"), &fast, T0 + i * S, false);
    }
    assert!(t.counters.expired.load(Ordering::Relaxed) > 900);
    assert_eq!(t.counters.evictions.load(Ordering::Relaxed), 0);
}

#[test]
fn same_key_is_limited_across_calls() {
    let t = Table::new(1000);
    let g = Gcra::new(Rate::parse("3/m").unwrap(), None);
    let r: Vec<bool> = (0..5).map(|_| t.hit("k", &g, T0, false).allowed).collect();
    assert_eq!(r, [true, true, true, false, false]);
    assert!(t.hit("other", &g, T0, false).allowed);
    assert_eq!(t.counters.limited.load(Ordering::Relaxed), 2);
}

#[test]
fn bans() {
    let t = Table::new(100);
    assert_eq!(t.banned("ip", T0), None);
    t.ban("ip", T0 + 60 * S, T0);
    assert_eq!(t.banned("ip", T0 + S), Some(59 * S));
    assert_eq!(t.banned("ip", T0 + 60 * S), None);
}

#[test]
fn shared_sync_merges_other_instances_hits() {
    // Two instances (two tables) share one limit through a simulated store.
    let g = Gcra::new(Rate::parse("100/s").unwrap(), Some(10));
    let a = Table::new(100);
    let b = Table::new(100);
    let mut store: u64 = 0;
    let sync = |t: &Table, now: u64, store: &mut u64| {
        for it in t.drain_shared(now) {
            *store = (*store).max(now) + it.hits as u64 * it.t_ns;
            t.apply_shared(&it.key, *store);
        }
    };
    let mut admitted = 0u64;
    // 2 seconds, each instance offered 1,000 requests per second, sync every 20 ms.
    for ms in 0..2000u64 {
        let now = T0 + ms * S / 1000;
        admitted += u64::from(a.hit("k", &g, now, true).allowed);
        admitted += u64::from(b.hit("k", &g, now, true).allowed);
        if ms % 20 == 19 {
            sync(&a, now, &mut store);
            sync(&b, now, &mut store);
        }
    }
    // One shared limit: 200 over 2 s plus the burst, with at most one sync interval's worth
    // (2 per instance) of overshoot per interval being absorbed by the shared TAT.
    let expected = 200 + 10;
    assert!(admitted <= expected + 10 && admitted >= expected - 10, "admitted {admitted}, expected about {expected}");
    // Without syncing, each would admit the full limit.
    let c = Table::new(100);
    let d = Table::new(100);
    let mut alone = 0;
    for ms in 0..2000u64 {
        let now = T0 + ms * S / 1000;
        alone += u64::from(c.hit("k", &g, now, true).allowed) + u64::from(d.hit("k", &g, now, true).allowed);
    }
    assert!(alone > 400, "{alone}");
}

#[test]
fn failed_sync_keeps_hits_for_the_next() {
    let g = Gcra::new(Rate::parse("100/s").unwrap(), None);
    let t = Table::new(100);
    t.hit("k", &g, T0, true);
    t.hit("k", &g, T0, true);
    let items = t.drain_shared(T0);
    assert_eq!(items.len(), 1);
    assert_eq!(items[0].hits, 2);
    assert!(t.drain_shared(T0).is_empty(), "nothing new");
    t.restore_pending(&items);
    assert_eq!(t.drain_shared(T0)[0].hits, 2);
    // Local keys are never synced.
    t.hit("local", &g, T0, false);
    assert!(t.drain_shared(T0).iter().all(|i| i.key != "local"));
}
