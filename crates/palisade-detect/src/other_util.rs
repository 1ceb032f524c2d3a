//! Small helpers shared by the "other" detectors (path, ssrf, cmdi, ssti, log4shell, xxe, code,
//! crlf, nosql, ldap, scanner): hit construction, bounded lenient percent-decoding, and a step
//! counter used by the tests to prove linear work on large inputs.

use crate::{truncate, Category, Hit, Level};
use aho_corasick::automaton::Automaton;
use aho_corasick::dfa::DFA;
use aho_corasick::{Anchored, MatchKind};
use std::borrow::Cow;

/// A set of literal anchors searched in one pass (ASCII case-insensitive Aho-Corasick DFA),
/// compiled once: the pre-filters of the detectors (a detector whose anchors are absent from
/// a value, and whose structural gate says no, cannot fire on it). The DFA is walked byte by
/// byte: no per-search setup and no prefilter, which matter for the short values of a request
/// (a prefilter on a byte such as `.` restarts the search at every dot of a URL).
pub(crate) struct Anchors(DFA);

impl Anchors {
    pub(crate) fn new(pats: &[&str]) -> Anchors {
        Anchors(DFA::builder().ascii_case_insensitive(true).match_kind(MatchKind::Standard).build(pats).expect("anchor literals compile"))
    }

    /// Whether any anchor occurs in `s`.
    #[inline]
    pub(crate) fn any(&self, s: &str) -> bool {
        let dfa = &self.0;
        let Ok(mut sid) = dfa.start_state(Anchored::No) else { return true };
        for &c in s.as_bytes() {
            sid = dfa.next_state(Anchored::No, sid, c);
            if dfa.is_special(sid) {
                if dfa.is_match(sid) {
                    return true;
                }
                if dfa.is_dead(sid) {
                    return false;
                }
            }
        }
        false
    }
}

/// A 65,536-bit table of word signatures (first, second and last byte, length): most words
/// that are not in a set are rejected with one lookup, before the set itself is searched.
pub(crate) struct WordSigs(Box<[u64; 1024]>);

impl WordSigs {
    pub(crate) fn new<'a>(words: impl IntoIterator<Item = &'a [u8]>) -> WordSigs {
        let mut t = Box::new([0u64; 1024]);
        for w in words {
            let sig = Self::shape(w);
            t[sig / 64] |= 1 << (sig % 64);
        }
        WordSigs(t)
    }

    #[inline]
    fn shape(w: &[u8]) -> usize {
        let at = |i: usize| w.get(i).copied().unwrap_or(0) as u32;
        let k = at(0) | at(1) << 8 | (w.last().copied().unwrap_or(0) as u32) << 16 | (w.len().min(255) as u32) << 24;
        (k.wrapping_mul(0x9E37_79B1) >> 16) as usize
    }

    /// False when `w` is certainly not one of the words.
    #[inline]
    pub(crate) fn may_contain(&self, w: &[u8]) -> bool {
        let sig = Self::shape(w);
        self.0[sig / 64] & (1 << (sig % 64)) != 0
    }

    /// [`WordSigs::may_contain`] of `w` in ASCII lowercase (for a table of lowercase words),
    /// without lowercasing the word: the signature reads three bytes of it.
    #[inline]
    pub(crate) fn may_contain_lowercase_of(&self, w: &[u8]) -> bool {
        let at = |i: usize| w.get(i).map_or(0, |c| c.to_ascii_lowercase()) as u32;
        let last = w.last().map_or(0, |c| c.to_ascii_lowercase()) as u32;
        let k = at(0) | at(1) << 8 | last << 16 | (w.len().min(255) as u32) << 24;
        let sig = (k.wrapping_mul(0x9E37_79B1) >> 16) as usize;
        self.0[sig / 64] & (1 << (sig % 64)) != 0
    }
}

/// A byte table of ASCII letters and digits plus the bytes of `extra` (a `const` set for the
/// per-byte tests of tokenizers: one load instead of several comparisons).
pub(crate) const fn alnum_and(extra: &[u8]) -> [bool; 256] {
    let mut t = [false; 256];
    let mut c = 0u8;
    while c < 128 {
        t[c as usize] = c.is_ascii_alphanumeric();
        c += 1;
    }
    let mut k = 0;
    while k < extra.len() {
        t[extra[k] as usize] = true;
        k += 1;
    }
    t
}

/// Position of the short literal `needle` (a few bytes) in `hay`: `memchr` on its first byte
/// and a comparison, with no searcher to build (`memchr::memmem::find` builds one per call,
/// which costs more than the search itself on the short values of a request). The work is at
/// most `hay.len() * needle.len()`: for literals only, never for a needle taken from the input.
#[inline]
pub(crate) fn find_short(hay: &[u8], needle: &[u8]) -> Option<usize> {
    let Some((&first, rest)) = needle.split_first() else { return Some(0) };
    let mut from = 0;
    while let Some(p) = memchr::memchr(first, &hay[from..]) {
        let at = from + p;
        if hay[at + 1..].starts_with(rest) {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

/// The lengths above which [`each_byte_of`] leaves the search of one, two or three bytes to
/// `memchr` (its setup costs about what three, five or seven words of arithmetic cost).
const LONG: [usize; 3] = [32, 48, 64];

/// Calls `f` with the position of each byte of `b` that is one of `set` (ASCII bytes), in
/// ascending order, until `f` says yes; whether it did. What `memchr::memchr3_iter(..).any(f)`
/// does, without its per-call dispatch and setup, which cost more than the search on the short
/// values of a request (a timestamp, a URL; longer texts, see [`LONG`], go to `memchr`):
/// eight bytes per step, each compared with every byte of the set by word arithmetic (SWAR,
/// exact per byte: no carry crosses a byte), one `trailing_zeros` per match.
/// `tests::each_byte_of_agrees_with_memchr` checks it.
#[inline]
pub(crate) fn each_byte_of<const N: usize>(b: &[u8], set: [u8; N], mut f: impl FnMut(usize) -> bool) -> bool {
    const LO: u64 = 0x0101_0101_0101_0101;
    const M7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    assert!(set.iter().all(|c| c.is_ascii()), "ASCII bytes only");
    // The high bit of each byte of `w` equal to a byte of the set: a byte is equal to the ASCII
    // `c` when its high bit is clear and its low seven bits xor `c` are zero, that is when
    // adding 0x7f to them carries nothing into the high bit (no carry leaves a byte).
    let hits = |w: u64| -> u64 {
        let low = w & M7;
        let mut all = !0u64;
        for c in set {
            all &= (low ^ (LO * c as u64)) + M7;
        }
        !(all | w) & !M7
    };
    let n = b.len();
    if n < 8 {
        return (0..n).any(|i| set.contains(&b[i]) && f(i));
    }
    if N <= 3 && n > LONG[N.saturating_sub(1).min(2)] {
        // Long texts: `memchr`'s vector search is faster than word arithmetic once its setup
        // is paid for.
        match *set.as_slice() {
            [x] => return memchr::memchr_iter(x, b).any(f),
            [x, y] => return memchr::memchr2_iter(x, y, b).any(f),
            [x, y, z] => return memchr::memchr3_iter(x, y, z, b).any(f),
            _ => {}
        }
    }
    let mut visit = |mut m: u64, at: usize| -> bool {
        while m != 0 {
            if f(at + (m.trailing_zeros() / 8) as usize) {
                return true;
            }
            m &= m - 1;
        }
        false
    };
    let word = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().expect("eight bytes"));
    let mut i = 0;
    while i + 8 <= n {
        if visit(hits(word(i)), i) {
            return true;
        }
        i += 8;
    }
    // The last bytes: the last word, without those of it already read.
    i < n && visit(hits(word(n - 8)) & (!0u64 << (8 * (i + 8 - n))), n - 8)
}

/// The position of the last byte of `b` that is one of `set` (ASCII bytes): `rposition`, eight
/// bytes per step from the end, as [`each_byte_of`] compares them
/// (`tests::last_byte_of_agrees_with_rposition`).
#[inline]
pub(crate) fn last_byte_of<const N: usize>(b: &[u8], set: [u8; N]) -> Option<usize> {
    const LO: u64 = 0x0101_0101_0101_0101;
    const M7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    assert!(set.iter().all(|c| c.is_ascii()), "ASCII bytes only");
    let hits = |w: u64| -> u64 {
        let low = w & M7;
        let mut all = !0u64;
        for c in set {
            all &= (low ^ (LO * c as u64)) + M7;
        }
        !(all | w) & !M7
    };
    let mut end = b.len();
    while end >= 8 {
        let m = hits(u64::from_le_bytes(b[end - 8..end].try_into().expect("eight bytes")));
        if m != 0 {
            return Some(end - 8 + (63 - m.leading_zeros() as usize) / 8);
        }
        end -= 8;
    }
    b[..end].iter().rposition(|c| set.contains(c))
}

/// `dst` = `src` in ASCII lowercase (the two have one length): eight bytes per step, the
/// bytes `A`..=`Z` found by word arithmetic and given their `0x20` bit
/// (`tests::lowercase_into_agrees_with_make_ascii_lowercase`).
#[inline]
pub(crate) fn lowercase_into(dst: &mut [u8], src: &[u8]) {
    const LO: u64 = 0x0101_0101_0101_0101;
    const M7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    let lower = |w: u64| -> u64 {
        let low = w & M7;
        // High bit of each byte: ASCII and >= `A`, and not >= `[`.
        let ge_a = low + LO * (0x80 - b'A' as u64);
        let ge_past_z = low + LO * (0x80 - b'[' as u64);
        let upper = ge_a & !ge_past_z & !w & !M7;
        w | (upper >> 2)
    };
    let n = src.len();
    let mut i = 0;
    while i + 8 <= n {
        let w = lower(u64::from_le_bytes(src[i..i + 8].try_into().expect("eight bytes")));
        dst[i..i + 8].copy_from_slice(&w.to_le_bytes());
        i += 8;
    }
    for k in i..n {
        dst[k] = src[k].to_ascii_lowercase();
    }
}

/// Every value of the development corpus (`../shared`, when present), of our benign and attack
/// sets, and every string (and key) of the bench bodies (`../shared/bench/*.json`, when present):
/// the real values the oracle tests of the fast paths run on, besides generated ones.
#[cfg(test)]
pub(crate) fn test_values() -> Vec<String> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<std::path::PathBuf> = Vec::new();
    for dir in ["data/benign", "data/attacks"] {
        files.extend(std::fs::read_dir(root.join(dir)).unwrap().map(|e| e.unwrap().path()));
    }
    files.push(root.join("../../../shared/data/attack-corpus/corpus.jsonl"));
    let mut values = Vec::new();
    for f in files.iter().filter(|p| p.extension().is_some_and(|e| e == "jsonl")) {
        let Ok(text) = std::fs::read_to_string(f) else { continue };
        values.extend(crate::eval::parse_corpus(&text).unwrap().into_iter().map(|s| s.value));
    }
    fn strings(v: &serde_json::Value, out: &mut Vec<String>) {
        match v {
            serde_json::Value::String(s) => out.push(s.clone()),
            serde_json::Value::Array(a) => a.iter().for_each(|x| strings(x, out)),
            serde_json::Value::Object(o) => o.iter().for_each(|(k, x)| {
                out.push(k.clone());
                strings(x, out)
            }),
            _ => {}
        }
    }
    for body in ["large.json", "small.json"] {
        let Ok(text) = std::fs::read_to_string(root.join("../../../shared/bench").join(body)) else { continue };
        strings(&serde_json::from_str(&text).unwrap(), &mut values);
    }
    values
}

#[cfg(test)]
thread_local! {
    static STEPS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Count `n` units of scanning work (tests only; free otherwise).
#[inline]
pub(crate) fn step(n: usize) {
    #[cfg(test)]
    STEPS.with(|s| s.set(s.get() + n as u64));
    #[cfg(not(test))]
    let _ = n;
}

#[cfg(test)]
pub(crate) fn take_steps() -> u64 {
    STEPS.with(|s| s.replace(0))
}

pub(crate) use crate::engine::threshold;

pub(crate) fn mk(detector: &'static str, category: Category, confidence: u8, fragment: &str, why: &'static str) -> Hit {
    Hit { detector, category, confidence: confidence.min(100), fragment: truncate(fragment, 64).to_string(), why }
}

/// Keep the best of two candidate hits.
pub(crate) fn best(a: Option<Hit>, b: Option<Hit>) -> Option<Hit> {
    match (a, b) {
        (Some(x), Some(y)) => Some(if y.confidence > x.confidence { y } else { x }),
        (x, None) => x,
        (None, y) => y,
    }
}

/// Drop a hit below the level's blocking threshold.
pub(crate) fn gate(h: Option<Hit>, level: Level) -> Option<Hit> {
    h.filter(|h| h.confidence >= threshold(level))
}

fn hexv(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// One round of lenient URL decoding on bytes: `%XX` and `%uXXXX`; anything invalid is kept.
pub(crate) fn pct_round(s: &[u8]) -> Vec<u8> {
    step(s.len());
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        let b = s[i];
        if b == b'%' && i + 2 < s.len() {
            if let (Some(h), Some(l)) = (hexv(s[i + 1]), hexv(s[i + 2])) {
                out.push(h * 16 + l);
                i += 3;
                continue;
            }
        }
        if b == b'%' && i + 5 < s.len() && (s[i + 1] == b'u' || s[i + 1] == b'U') {
            let q = &s[i + 2..i + 6];
            if q.iter().all(|c| hexv(*c).is_some()) {
                let v = q.iter().fold(0u32, |a, c| a * 16 + hexv(*c).unwrap_or(0) as u32);
                let ch = char::from_u32(v).unwrap_or('\u{fffd}');
                let mut buf = [0u8; 4];
                out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                i += 6;
                continue;
            }
        }
        out.push(b);
        i += 1;
    }
    out
}

/// True if `s` contains something percent-decodable.
pub(crate) fn has_pct(s: &str) -> bool {
    let b = s.as_bytes();
    memchr::memchr_iter(b'%', b)
        .any(|i| i + 2 < b.len() && hexv(b[i + 1]).is_some() && hexv(b[i + 2]).is_some() || (i + 1 < b.len() && (b[i + 1] | 0x20) == b'u'))
}

/// Up to `rounds` rounds of lenient percent-decoding (stops when nothing changes).
pub(crate) fn pct_decode(s: &str, rounds: usize) -> Cow<'_, str> {
    if !has_pct(s) {
        return Cow::Borrowed(s);
    }
    let mut cur = s.as_bytes().to_vec();
    for _ in 0..rounds {
        let next = pct_round(&cur);
        if next == cur {
            break;
        }
        cur = next;
        if !cur.contains(&b'%') {
            break;
        }
    }
    Cow::Owned(String::from_utf8_lossy(&cur).into_owned())
}

/// The views of an input a detector should look at: the decoded form and, when it still
/// carries percent-encoding (double-encoded attacks), that form decoded further.
pub(crate) fn views<'a>(decoded: &'a str) -> [Cow<'a, str>; 2] {
    let d = pct_decode(decoded, 3);
    match d {
        Cow::Borrowed(_) => [Cow::Borrowed(decoded), Cow::Borrowed("")],
        Cow::Owned(o) => [Cow::Borrowed(decoded), Cow::Owned(o)],
    }
}

/// Decode standard or URL-safe base64 (padding optional); None if not base64.
pub(crate) fn b64_decode(s: &str) -> Option<Vec<u8>> {
    let s = s.trim_end_matches('=');
    if s.len() < 4 {
        return None;
    }
    step(s.len());
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let mut acc = 0u32;
    let mut bits = 0;
    for b in s.bytes() {
        let v = match b {
            b'A'..=b'Z' => b - b'A',
            b'a'..=b'z' => b - b'a' + 26,
            b'0'..=b'9' => b - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => return None,
        } as u32;
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

/// A sorted list of lowercase ASCII words with a length filter per first letter (bit `len` of
/// the slot of the first byte: `a`..`z`, then any other byte; a word of 32 bytes or more is in
/// no bit): most words not in the list are rejected by one table lookup, the rest by a binary
/// search.
pub(crate) struct SortedWords {
    words: Vec<&'static str>,
    lens: [u32; 27],
}

impl SortedWords {
    pub(crate) fn new(words: &[&'static str]) -> SortedWords {
        let mut words = words.to_vec();
        words.sort_unstable();
        let mut lens = [0u32; 27];
        for w in &words {
            lens[Self::slot(w.as_bytes()[0])] |= 1u32.checked_shl(w.len() as u32).unwrap_or(0);
        }
        SortedWords { words, lens }
    }

    fn slot(c: u8) -> usize {
        let c = c.to_ascii_lowercase();
        if c.is_ascii_lowercase() {
            (c - b'a') as usize
        } else {
            26
        }
    }

    fn may_hold(&self, w: &[u8]) -> bool {
        w.first().is_some_and(|&c| self.lens[Self::slot(c)] & 1u32.checked_shl(w.len() as u32).unwrap_or(0) != 0)
    }

    /// Whether the lowercase word `w` is in the list.
    pub(crate) fn contains(&self, w: &str) -> bool {
        self.may_hold(w.as_bytes()) && self.words.binary_search(&w).is_ok()
    }

    /// Whether `w`, in any ASCII case, is in the list.
    pub(crate) fn contains_ignore_case(&self, w: &[u8]) -> bool {
        if !self.may_hold(w) {
            return false;
        }
        let mut buf = [0u8; 32];
        let Some(lc) = buf.get_mut(..w.len()) else { return false };
        lc.copy_from_slice(w);
        lc.make_ascii_lowercase();
        std::str::from_utf8(lc).is_ok_and(|lc| self.words.binary_search(&lc).is_ok())
    }
}

#[cfg(test)]
mod tests {
    /// Calls `check` on every string over `alphabet` of at most `max_len` bytes.
    fn every_word(alphabet: &[u8], max_len: u32, mut check: impl FnMut(&[u8])) {
        let mut buf = Vec::new();
        for len in 0..=max_len {
            for n in 0..alphabet.len().pow(len) {
                buf.clear();
                let mut k = n;
                for _ in 0..len {
                    buf.push(alphabet[k % alphabet.len()]);
                    k /= alphabet.len();
                }
                check(&buf);
            }
        }
    }

    use super::*;

    #[test]
    fn pct() {
        assert_eq!(pct_decode("%252e%252e%2f", 3), "../");
        assert_eq!(pct_decode("%u002e%uFF0E", 3), ".\u{ff0e}");
        assert_eq!(pct_decode("100%", 3), "100%");
        assert_eq!(pct_decode("%zz%", 3), "%zz%");
        assert_eq!(b64_decode("Li4v").unwrap(), b"../");
    }

    #[test]
    fn anchors_find_every_occurrence_case_insensitively() {
        let pats = ["php://", "..", "file:", "convert.", "<!", "ab", "b"];
        let a = Anchors::new(&pats);
        // Every string over a small alphabet up to length 5, against a naive search.
        let alphabet = [b'a', b'B', b'.', b'/', b':', b'p', b'h', b'<', b'!'];
        let mut checked = 0;
        let mut buf = Vec::new();
        for len in 0..=5u32 {
            for n in 0..alphabet.len().pow(len) {
                buf.clear();
                let mut k = n;
                for _ in 0..len {
                    buf.push(alphabet[k % alphabet.len()]);
                    k /= alphabet.len();
                }
                let s = std::str::from_utf8(&buf).expect("ascii");
                let lc = s.to_ascii_lowercase();
                let naive = pats.iter().any(|p| lc.contains(p));
                assert_eq!(a.any(s), naive, "{s:?}");
                checked += 1;
            }
        }
        assert!(checked > 60_000);
        assert!(a.any("xx PHP://filter"));
        assert!(a.any("see FILE:///etc"));
        assert!(!a.any("https://example.org/x.png"));
    }

    /// [`each_byte_of`] visits exactly the positions `memchr3_iter` yields, in order, and stops
    /// where `f` says yes: every string over a small alphabet up to length 6, then a bounded
    /// pseudo-random sample of longer ones (word boundaries, the overlapping last word).
    #[test]
    fn each_byte_of_agrees_with_memchr() {
        let alphabet = [b':', b'(', b'&', b'a', 0x80, 0xff, b'9'];
        let check = |s: &[u8]| {
            let want: Vec<usize> = memchr::memchr3_iter(b':', b'(', b'&', s).collect();
            let mut got = Vec::new();
            assert!(!each_byte_of(s, [b':', b'(', b'&'], |p| {
                got.push(p);
                false
            }));
            assert_eq!(got, want, "{s:?}");
            for stop in 0..want.len() {
                let mut seen = 0;
                assert!(each_byte_of(s, [b':', b'(', b'&'], |_| {
                    seen += 1;
                    seen > stop
                }));
                assert_eq!(seen, stop + 1);
            }
            let five: Vec<usize> = (0..s.len()).filter(|&i| b":(&a9".contains(&s[i])).collect();
            let mut got = Vec::new();
            each_byte_of(s, [b':', b'(', b'&', b'a', b'9'], |p| {
                got.push(p);
                false
            });
            assert_eq!(got, five, "{s:?}");
            let one: Vec<usize> = memchr::memchr_iter(b':', s).collect();
            let mut got = Vec::new();
            each_byte_of(s, [b':'], |p| {
                got.push(p);
                false
            });
            assert_eq!(got, one, "{s:?}");
        };
        every_word(&alphabet, 6, check);
        let mut rng = palisade_testkit::rng::XorShift64::new(0x51_7cc1_b727_220a);
        for _ in 0..20_000 {
            let len = rng.below(200);
            let v: Vec<u8> = (0..len).map(|_| if rng.below(6) == 0 { alphabet[rng.below(3)] } else { rng.below(256) as u8 }).collect();
            check(&v);
        }
    }

    /// [`last_byte_of`] and [`lowercase_into`] against `rposition` and `make_ascii_lowercase`:
    /// every string over a small alphabet up to length 5, and a bounded sample of longer ones.
    #[test]
    fn last_byte_of_agrees_with_rposition() {
        let alphabet = [b'/', b'\\', b'A', b'z', b'Z', b'@', b'[', 0x80, 0xc1, 0xff, b'`', b'{'];
        let check = |s: &[u8]| {
            assert_eq!(last_byte_of(s, [b'/', b'\\']), s.iter().rposition(|&c| c == b'/' || c == b'\\'), "{s:?}");
            assert_eq!(last_byte_of(s, [b'@']), s.iter().rposition(|&c| c == b'@'), "{s:?}");
            let mut got = vec![0u8; s.len()];
            lowercase_into(&mut got, s);
            assert_eq!(got, s.to_ascii_lowercase(), "{s:?}");
        };
        every_word(&alphabet, 5, check);
        let mut rng = palisade_testkit::rng::XorShift64::new(0x2545_f491_4f6c_dd1d);
        for _ in 0..20_000 {
            let len = rng.below(100);
            let v: Vec<u8> = (0..len).map(|_| if rng.below(4) == 0 { alphabet[rng.below(alphabet.len())] } else { rng.below(256) as u8 }).collect();
            check(&v);
        }
        for c in 0..=255u8 {
            check(&[c; 9]);
        }
    }

    #[test]
    fn find_short_agrees_with_memmem() {
        let hays: [&[u8]; 7] = [b"", b"/", b"://", b"a:/b://c", b"****/", b"logcatalog", b"x*/y*/"];
        let needles: [&[u8]; 6] = [b"", b"://", b"*/", b"log", b"/", b"zz"];
        for h in hays {
            for n in needles {
                assert_eq!(find_short(h, n), memchr::memmem::find(h, n), "{:?} in {:?}", n, h);
            }
        }
    }

    #[test]
    fn sorted_words_find_exactly_their_words() {
        let w = SortedWords::new(&["union", "select", "or", "sqlmap", "_x", "9lives"]);
        for yes in ["union", "select", "or", "sqlmap", "_x", "9lives"] {
            assert!(w.contains(yes) && w.contains_ignore_case(yes.to_ascii_uppercase().as_bytes()), "{yes}");
        }
        for no in ["unio", "unions", "selects", "o", "", "x", "sqlmapx", "a".repeat(40).as_str(), "ünion"] {
            assert!(!w.contains(no) && !w.contains_ignore_case(no.as_bytes()), "{no}");
        }
    }
}
