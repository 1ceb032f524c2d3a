//! Request ids: 16 lowercase hex digits, unique per process run without coordination between
//! workers (a per-worker random seed pushed through a bijective mixer with a counter).

use std::cell::Cell;
use std::time::{SystemTime, UNIX_EPOCH};

thread_local! {
    static STATE: Cell<(u64, u64)> = Cell::new((seed(), 0));
}

fn seed() -> u64 {
    let t = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0);
    let addr = &t as *const u64 as u64;
    mix(t ^ addr.rotate_left(32) ^ u64::from(std::process::id()))
}

/// splitmix64's finaliser: a bijection on u64.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d049bb133111eb);
    z ^ (z >> 31)
}

/// A new request id.
pub fn next() -> RequestId {
    let v = STATE.with(|s| {
        let (seed, n) = s.get();
        s.set((seed, n.wrapping_add(1)));
        mix(seed.wrapping_add(n.wrapping_mul(0x9e3779b97f4a7c15)))
    });
    RequestId(hex16(v))
}

/// `v` as 16 lowercase hex digits, most significant first, eight at a time in a word: the
/// nibbles are spread one per byte, then each becomes `'0' + n`, plus 39 for `a`..`f`.
fn hex16(v: u64) -> [u8; 16] {
    fn eight(x: u32) -> [u8; 8] {
        let mut x = u64::from(x);
        x = (x | (x << 16)) & 0x0000_ffff_0000_ffff;
        x = (x | (x << 8)) & 0x00ff_00ff_00ff_00ff;
        x = (x | (x << 4)) & 0x0f0f_0f0f_0f0f_0f0f;
        let letters = ((x + 0x0606_0606_0606_0606) >> 4) & 0x0101_0101_0101_0101;
        (x + 0x3030_3030_3030_3030 + letters * 39).to_be_bytes()
    }
    let mut buf = [0u8; 16];
    buf[..8].copy_from_slice(&eight((v >> 32) as u32));
    buf[8..].copy_from_slice(&eight(v as u32));
    buf
}

/// A request id held inline (no allocation).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct RequestId([u8; 16]);

impl RequestId {
    /// As a header value (build once per request; clones are a reference count).
    pub fn header_value(&self) -> http::HeaderValue {
        http::HeaderValue::from_bytes(&self.0).unwrap_or(http::HeaderValue::from_static("0"))
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    pub fn as_str(&self) -> &str {
        // Only hex digits are ever stored.
        std::str::from_utf8(&self.0).unwrap_or("0000000000000000")
    }
}

impl std::fmt::Debug for RequestId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn hex16_is_lowercase_hex_of_the_value() {
        let mut vals = vec![0, u64::MAX, 0x0123_4567_89ab_cdef, 0xfedc_ba98_7654_3210, 0xa0a0_a0a0_9f9f_9f9f];
        vals.extend((0..64).map(|i| 1u64 << i));
        vals.extend((0..16).map(|n| n * 0x1111_1111_1111_1111));
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..100_000 {
            x = super::mix(x.wrapping_add(1));
            vals.push(x);
        }
        for v in vals {
            assert_eq!(super::hex16(v), *format!("{v:016x}").as_bytes(), "{v:#x}");
        }
    }

    #[test]
    fn ids_are_hex_and_distinct() {
        let ids: std::collections::HashSet<String> = (0..10_000).map(|_| super::next().as_str().to_string()).collect();
        assert_eq!(ids.len(), 10_000);
        assert!(ids.iter().all(|i| i.len() == 16 && i.bytes().all(|b| b.is_ascii_hexdigit())));
    }
}
