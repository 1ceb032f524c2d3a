//! Sets of IPv4 / IPv6 networks matched in O(log n): every CIDR becomes an inclusive range of
//! integers, ranges are sorted and merged (overlapping or adjacent ones become one), and a
//! lookup is one binary search. 100,000 entries take 100,000 × 8 bytes (v4) or × 32 bytes (v6)
//! at most, fewer after merging.

use std::net::IpAddr;

use ipnet::IpNet;

/// A compiled set of networks.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IpSet {
    v4: Vec<(u32, u32)>,
    v6: Vec<(u128, u128)>,
}

impl IpSet {
    /// Build from networks (in any order, overlapping or not).
    pub fn new<'a>(nets: impl IntoIterator<Item = &'a IpNet>) -> Self {
        let mut v4 = Vec::new();
        let mut v6 = Vec::new();
        for n in nets {
            match n {
                IpNet::V4(n) => v4.push((u32::from(n.network()), u32::from(n.broadcast()))),
                IpNet::V6(n) => v6.push((u128::from(n.network()), u128::from(n.broadcast()))),
            }
        }
        IpSet { v4: merge(v4), v6: merge(v6) }
    }

    /// Whether `ip` is in one of the networks. IPv4-mapped IPv6 addresses (`::ffff:a.b.c.d`)
    /// are looked up as IPv4.
    pub fn contains(&self, ip: IpAddr) -> bool {
        match ip {
            IpAddr::V4(v4) => find(&self.v4, u32::from(v4)),
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => find(&self.v4, u32::from(v4)),
                None => find(&self.v6, u128::from(v6)),
            },
        }
    }

    pub fn is_empty(&self) -> bool {
        self.v4.is_empty() && self.v6.is_empty()
    }

    /// Number of ranges after merging.
    pub fn ranges(&self) -> usize {
        self.v4.len() + self.v6.len()
    }
}

fn merge<T: Copy + Ord + num::One>(mut r: Vec<(T, T)>) -> Vec<(T, T)> {
    r.sort_unstable();
    let mut out: Vec<(T, T)> = Vec::with_capacity(r.len());
    for (lo, hi) in r {
        if let Some(last) = out.last_mut() {
            // Overlapping or adjacent (last.1 + 1 == lo) ranges merge.
            if lo <= last.1 || last.1.checked_inc() == Some(lo) {
                if hi > last.1 {
                    last.1 = hi;
                }
                continue;
            }
        }
        out.push((lo, hi));
    }
    out.shrink_to_fit();
    out
}

fn find<T: Copy + Ord>(ranges: &[(T, T)], x: T) -> bool {
    // The last range starting at or before x is the only candidate.
    let i = ranges.partition_point(|&(lo, _)| lo <= x);
    i > 0 && x <= ranges[i - 1].1
}

mod num {
    pub trait One: Sized {
        fn checked_inc(self) -> Option<Self>;
    }
    impl One for u32 {
        fn checked_inc(self) -> Option<Self> {
            self.checked_add(1)
        }
    }
    impl One for u128 {
        fn checked_inc(self) -> Option<Self> {
            self.checked_add(1)
        }
    }
}

/// Parse a list file: one address or CIDR per line; `#` starts a comment; blank lines are
/// ignored. Errors name the line.
pub fn parse_list(text: &str) -> Result<Vec<IpNet>, crate::Error> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        match parse_net(line) {
            Some(n) => out.push(n),
            None => {
                return Err(crate::Error::new(crate::ErrorKind::IpList, format!("`{}` is not an IP address or CIDR", truncate(line, 64)))
                    .context(format_args!("line {}", i + 1)))
            }
        }
    }
    Ok(out)
}

/// An address (a host network) or a CIDR; host bits are cleared (`10.0.0.1/8` = `10.0.0.0/8`).
pub fn parse_net(s: &str) -> Option<IpNet> {
    if let Ok(n) = s.parse::<IpNet>() {
        return Some(n.trunc());
    }
    s.parse::<IpAddr>().ok().map(IpNet::from)
}

fn truncate(s: &str, max: usize) -> &str {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(list: &[&str]) -> IpSet {
        let nets: Vec<IpNet> = list.iter().map(|s| parse_net(s).unwrap()).collect();
        IpSet::new(&nets)
    }

    #[test]
    fn cidrs_and_hosts() {
        let s = set(&["203.0.113.0/24", "10.0.0.1", "2001:db8::/32", "::1"]);
        assert!(s.contains("203.0.113.0".parse().unwrap()));
        assert!(s.contains("203.0.113.255".parse().unwrap()));
        assert!(!s.contains("203.0.114.0".parse().unwrap()));
        assert!(!s.contains("203.0.112.255".parse().unwrap()));
        assert!(s.contains("10.0.0.1".parse().unwrap()));
        assert!(!s.contains("10.0.0.2".parse().unwrap()));
        assert!(s.contains("2001:db8:ffff::1".parse().unwrap()));
        assert!(!s.contains("2001:db9::".parse().unwrap()));
        assert!(s.contains("::1".parse().unwrap()));
        // IPv4-mapped IPv6 is matched as IPv4.
        assert!(s.contains("::ffff:203.0.113.7".parse().unwrap()));
    }

    #[test]
    fn merging_overlapping_and_adjacent() {
        let s = set(&["10.0.0.0/25", "10.0.0.128/25", "10.0.0.0/24", "10.0.1.0/24", "0.0.0.0/0"]);
        assert_eq!(s.ranges(), 1);
        assert!(s.contains("255.255.255.255".parse().unwrap()));
        let s = set(&["::/0", "ffff::/16"]);
        assert_eq!(s.ranges(), 1);
        assert!(s.contains("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff".parse().unwrap()));
    }

    #[test]
    fn host_bits_cleared() {
        let s = set(&["10.1.2.3/16"]);
        assert!(s.contains("10.1.200.1".parse().unwrap()));
    }

    #[test]
    fn hundred_thousand_entries_agree_with_a_linear_scan() {
        // Deterministic pseudo-random networks (xorshift64), checked against the naive answer.
        let mut rng = palisade_testkit::rng::XorShift64::new(0x9e37_79b9_7f4a_7c15);
        let mut next = move || rng.next_u64();
        let mut nets = Vec::new();
        for _ in 0..100_000 {
            let r = next();
            let prefix = 16 + (r % 17) as u8;
            let addr = std::net::Ipv4Addr::from((r >> 32) as u32);
            nets.push(IpNet::V4(ipnet::Ipv4Net::new(addr, prefix).unwrap().trunc()));
        }
        for _ in 0..2_000 {
            let r = next();
            let addr = std::net::Ipv6Addr::from(((r as u128) << 64) | (next() as u128));
            nets.push(IpNet::V6(ipnet::Ipv6Net::new(addr, 48 + (r % 80) as u8).unwrap().trunc()));
        }
        let s = IpSet::new(&nets);
        for _ in 0..3_000 {
            let r = next();
            let ip = if r % 4 == 0 {
                IpAddr::V6(std::net::Ipv6Addr::from(((r as u128) << 64) | (next() as u128)))
            } else {
                IpAddr::V4(std::net::Ipv4Addr::from((r >> 32) as u32))
            };
            let naive = nets.iter().any(|n| n.contains(&ip));
            assert_eq!(s.contains(ip), naive, "{ip}");
        }
        // And every network's first and last address is in.
        for n in nets.iter().step_by(97) {
            assert!(s.contains(n.network()) && s.contains(n.broadcast()));
        }
    }

    #[test]
    fn list_files() {
        let nets = parse_list("# office\n192.0.2.0/24  # vpn\n\n2001:db8::1\n").unwrap();
        assert_eq!(nets.len(), 2);
        let e = parse_list("10.0.0.0/8\nnot-an-ip\n").unwrap_err();
        let m = e.to_string();
        assert!(m.contains("line 2") && m.contains("not-an-ip"), "{e}");
        assert_eq!(e.kind(), crate::ErrorKind::IpList);
        assert!(parse_list("10.0.0.0/33").is_err());
    }
}
