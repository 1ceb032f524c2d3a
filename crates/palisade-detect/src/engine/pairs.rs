//! The gates' literals ([`Gate::anchors`], [`Gate::words`]) found by pairs of bytes, in the
//! engine's byte pass ([`Engine::classify`]).
//!
//! Each literal is looked for at one pair of its adjacent bytes, the pair it holds that benign
//! text holds least (by a rough frequency of letter pairs and bytes in text: `q` and `:`
//! rather than `e` and a space). Bytes are folded into 64 classes (ASCII letters case-folded,
//! each byte that occurs in a literal a class of its own while they last, every other byte
//! class 0), and a bit per pair of classes ([`Pairs::rows`], 512 bytes used) tells whether some
//! literal is looked for at that pair. The byte pass tests, for each byte, the bit of the pair
//! it ends; on a set bit, the pair's rank among those looked for ([`Pairs::rank`], an 8 KB
//! table) indexes a filter on the bytes before and after the pair and on the gates still
//! closed ([`Pairs::wants`]: a word literal that starts with its pair, such as `or` or `in`,
//! is not compared inside a word of prose), and only then are the literals of that pair
//! compared with the bytes around it ([`Pairs::matched`], eight bytes at once).
//!
//! Why not the literals' Aho-Corasick DFA laid out as a dense table (1,170 states by 56 byte
//! classes, 256 KB): there every byte is a load that depends on the previous one, and under
//! load those loads miss the first-level cache; the table also makes the proxy 5 MiB larger.
//! Here the tables touched per byte are small (`fold` 256 bytes, `rows` 512) and no load
//! depends on the previous byte's: end to end, the same CPU per request on the 1 KiB body, less
//! on the 28 KiB one, and 5 MiB less resident memory (`docs/BENCHMARKS.md`).
//!
//! The result is the same function of the bytes as the automaton's: for each literal, whether
//! it occurs (ASCII case-insensitive, anywhere; a word literal only where it stands as a word),
//! the gates of those that do (checked against the `aho_corasick` walk, `Gates::literals`, by
//! `tests::check_fused_pass` on corpus and generated values).
//!
//! [`Gate::anchors`]: crate::Gate::anchors
//! [`Gate::words`]: crate::Gate::words
//! [`Engine::classify`]: super::Engine::classify

use super::WORD_BYTE;

/// The literals of the gates, indexed by one pair of bytes each.
pub(super) struct Pairs {
    /// The class of each byte (ASCII letters case-folded; 0: a byte no literal holds).
    pub(super) fold: [u8; 256],
    /// Bit `f` of `rows[e]`: some literal is looked for where a byte of class `e` is followed
    /// by one of class `f` (`f` = 0 at the end of the text too, for literals of one byte).
    /// (256 rows, of which the first 64 are used: indexed by a class with no mask.)
    pub(super) rows: [u64; 256],
    /// Per pair index (`e << 6 | f`): the rank of the pair among those looked for (in the
    /// order of their indexes), which indexes the dense tables below; 0 where none is looked
    /// for (never read there: `rows` says no first).
    slot: Box<[u16; 4096]>,
    /// Per pair looked for (by rank): the filters of [`Pairs::wants`] ([`Rank`]).
    ranks: Box<[Rank]>,
    /// Per pair looked for (by rank): its literals, `entries[first[k]..first[k + 1]]`.
    first: Box<[u16]>,
    entries: Box<[Entry]>,
    /// The bytes of every literal (ASCII lowercase), end to end.
    bytes: Box<[u8]>,
}

/// The filters of a pair looked for ([`Pairs::wants`]), read together.
#[derive(Clone, Copy, Default)]
struct Rank {
    /// Bit `g` set when some literal looked for there may be followed, after the pair, by a
    /// byte of class `g` (0 also for the end of the text): its next byte's class, or every
    /// class when the literal ends with the pair (for a word literal, only the classes of
    /// bytes that end a word).
    third: u64,
    /// Bit `g` set when some literal looked for there may be preceded, before the pair, by a
    /// byte of class `g` (0 also for the start of the text): its byte before the pair, or
    /// every class when the literal starts with the pair (for a word literal, only the
    /// classes of bytes after which a word starts, and 0).
    before: u64,
    /// The gates its literals open (together).
    gates: u64,
}

/// A literal looked for at a pair of its bytes.
struct Entry {
    /// Its first 8 bytes (fewer: zeros after), little-endian, and the mask of those bytes
    /// (`0xFF` each) with `0x20` set apart where the byte is a letter (`| 0x20` lowercases an
    /// ASCII letter and maps nothing else onto one): a quick comparison ([`Pairs::matched`]).
    head: u64,
    head_mask: u64,
    case: u64,
    /// The gates it opens.
    gates: u64,
    /// Its bytes: `bytes[at..at + len]`.
    at: u16,
    len: u16,
    /// The offset of its pair in it.
    off: u16,
    /// It must stand as a word: not preceded by an ASCII letter or `_`, not followed by an
    /// ASCII letter, digit or `_`.
    word: bool,
}

/// The most frequent letter pairs of English text, most frequent first.
const BIGRAMS: [&[u8; 2]; 50] = [
    b"th", b"he", b"in", b"er", b"an", b"re", b"on", b"at", b"en", b"nd", b"ti", b"es", b"or", b"te", b"of", b"ed", b"is", b"it", b"al", b"ar", b"st", b"to",
    b"nt", b"ng", b"se", b"ha", b"as", b"ou", b"io", b"le", b"ve", b"co", b"me", b"de", b"hi", b"ri", b"ro", b"ic", b"ne", b"ea", b"ra", b"ce", b"li", b"ch",
    b"ll", b"be", b"ma", b"si", b"om", b"ur",
];

/// How often a pair of bytes occurs in benign text, roughly: the frequent English letter pairs
/// first, then the product of the bytes' [`weight`]s.
fn pair_weight(a: u8, b: u8) -> u32 {
    let pair = [a.to_ascii_lowercase(), b.to_ascii_lowercase()];
    match BIGRAMS.iter().position(|g| **g == pair) {
        Some(r) => 100_000 - 1_000 * r as u32,
        None => weight(a) * weight(b),
    }
}

/// A rough frequency of a byte in benign text (letters by their frequency in English text,
/// per mille; blanks and common punctuation high; rare punctuation low): the pair of a literal
/// is the one with the least product.
fn weight(c: u8) -> u32 {
    const LETTERS: [u32; 26] = [82, 15, 28, 43, 127, 22, 20, 61, 70, 2, 8, 40, 24, 67, 75, 19, 1, 60, 63, 91, 28, 10, 24, 2, 20, 1];
    match c.to_ascii_lowercase() {
        c @ b'a'..=b'z' => LETTERS[(c - b'a') as usize],
        b' ' => 150,
        b'0'..=b'9' => 30,
        b'.' | b',' | b'-' | b'_' | b'/' => 15,
        b':' | b'=' | b'\'' | b'"' | b'(' | b')' | b'&' | b'?' | b';' => 5,
        _ => 2,
    }
}

impl Pairs {
    /// `lits`: (literal in ASCII lowercase, whether it must stand as a word, its gates).
    pub(super) fn new(lits: &[(String, bool, u64)]) -> Pairs {
        let mut fold = [0u8; 256];
        let mut next = 1u8;
        for (l, _, _) in lits {
            for &c in l.as_bytes() {
                let c = c.to_ascii_lowercase();
                if fold[c as usize] == 0 {
                    // Classes 1..=63; past them bytes share classes (more pairs to compare,
                    // the same matches).
                    fold[c as usize] = next;
                    fold[c.to_ascii_uppercase() as usize] = next;
                    next = if next == 63 { 1 } else { next + 1 };
                }
            }
        }
        let class = |c: u8| fold[c as usize] as usize;
        // (pair index, literal, offset) for every literal.
        let mut keyed: Vec<(usize, usize, usize)> = Vec::new();
        for (k, (l, _, _)) in lits.iter().enumerate() {
            let b = l.as_bytes();
            match b.len() {
                0 => {}
                // One byte: looked for before any byte and at the end.
                1 => keyed.extend((0..64).map(|f| (class(b[0]) << 6 | f, k, 0))),
                n => {
                    let o = (0..n - 1).min_by_key(|&o| pair_weight(b[o], b[o + 1])).unwrap_or(0);
                    keyed.push((class(b[o]) << 6 | class(b[o + 1]), k, o));
                }
            }
        }
        keyed.sort_unstable();
        // (The per-pair ranges of `entries` are counted in `u16`.)
        assert!(keyed.len() < 1 << 16, "gate literals: too many");
        // The classes that hold a byte ending a word (0 holds the end of the text).
        let mut not_word = 1u64;
        // The classes that hold a byte a word may follow (0 holds the start of the text).
        let mut word_start = 1u64;
        for c in 0..=255u8 {
            if !WORD_BYTE[c as usize] {
                not_word |= 1 << fold[c as usize];
            }
            if !(c.is_ascii_alphabetic() || c == b'_') {
                word_start |= 1 << fold[c as usize];
            }
        }
        let mut rows = [0u64; 256];
        for &(x, _, _) in &keyed {
            rows[x >> 6] |= 1 << (x & 63);
        }
        let mut slot = Box::new([0u16; 4096]);
        let mut pairs = 0;
        for (x, s) in slot.iter_mut().enumerate() {
            if rows[x >> 6] >> (x & 63) & 1 != 0 {
                *s = u16::try_from(pairs).expect("gate literals: too many pairs");
                pairs += 1;
            }
        }
        let (mut ranks, mut first) = (vec![Rank::default(); pairs], vec![0u16; pairs + 1]);
        let mut bytes = Vec::new();
        let mut entries = Vec::with_capacity(keyed.len());
        let mut at: Vec<Option<u16>> = vec![None; lits.len()];
        for &(x, k, o) in &keyed {
            let (l, word, gates) = &lits[k];
            let b = l.as_bytes();
            let r = slot[x] as usize;
            ranks[r].third |= match b.get(o + 2) {
                Some(&c) => 1 << fold[c as usize],
                // (A literal of one byte ends before the pair's second byte.)
                None if *word && b.len() >= 2 => not_word,
                None => !0,
            };
            ranks[r].before |= match o.checked_sub(1).map(|p| b[p]) {
                Some(c) => 1 << fold[c as usize],
                None if *word => word_start,
                None => !0,
            };
            first[r + 1] += 1;
            ranks[r].gates |= gates;
            let at = *at[k].get_or_insert_with(|| {
                bytes.extend_from_slice(b);
                u16::try_from(bytes.len() - b.len()).expect("gate literals: too many bytes")
            });
            let (mut head, mut head_mask, mut case) = (0u64, 0u64, 0u64);
            for (i, &c) in b.iter().take(8).enumerate() {
                head |= (c.to_ascii_lowercase() as u64) << (8 * i);
                head_mask |= 0xFF << (8 * i);
                if c.is_ascii_alphabetic() {
                    case |= 0x20 << (8 * i);
                }
            }
            let len = u16::try_from(b.len()).expect("gate literal too long");
            entries.push(Entry { head, head_mask, case, gates: *gates, at, len, off: o as u16, word: *word });
        }
        for r in 0..pairs {
            first[r + 1] += first[r];
        }
        Pairs {
            fold,
            rows,
            slot,
            ranks: ranks.into_boxed_slice(),
            first: first.into_boxed_slice(),
            entries: entries.into_boxed_slice(),
            bytes: bytes.into_boxed_slice(),
        }
    }

    /// The rank of the pair of a byte of class `e` followed by one of class `f`, which some
    /// literal is looked for at (`rows[e]` has bit `f`), among those.
    #[inline(always)]
    pub(super) fn rank(&self, e: u8, f: u8) -> usize {
        self.slot[((e as usize) << 6 | f as usize) & 0xFFF] as usize
    }

    /// Whether the literals looked for at the pair of rank `r`, found at `b[j]`, may stand
    /// there by the class of the byte before the pair (tested first: it rules out most of the
    /// short word literals found inside words of prose) and of the byte after it (none: class
    /// 0, as at the start and end of the text), and open a gate `open` lacks.
    #[inline(always)]
    pub(super) fn wants(&self, r: usize, b: &[u8], j: usize, open: u64) -> bool {
        let Some(k) = self.ranks.get(r) else { return false };
        let e = j.checked_sub(1).and_then(|p| b.get(p)).map_or(0, |&c| self.fold[c as usize]);
        if (k.before >> (e & 63)) & 1 == 0 {
            return false;
        }
        let g = b.get(j + 2).map_or(0, |&c| self.fold[c as usize]);
        (k.third >> (g & 63)) & 1 != 0 && k.gates & !open != 0
    }

    /// `m` with the gates of the literals looked for at the pair of rank `r` that occur in `b`
    /// with that pair at `b[j]` (those whose gates `have` or `m` do not all hold already).
    #[inline(never)]
    pub(super) fn matched(&self, b: &[u8], j: usize, r: usize, mut m: u64, have: u64) -> u64 {
        let (Some(&lo), Some(&hi)) = (self.first.get(r), self.first.get(r + 1)) else { return m };
        for l in self.entries.get(lo as usize..hi as usize).unwrap_or_default() {
            if l.gates & !(have | m) == 0 {
                continue;
            }
            let Some(s) = j.checked_sub(l.off as usize) else { continue };
            let end = s + l.len as usize;
            // Eight bytes at `s` when there are: the first eight of the literal must be there.
            if let Some(w) = b.get(s..s + 8) {
                let w = u64::from_le_bytes(w.try_into().unwrap_or_default());
                if ((w | l.case) ^ l.head) & l.head_mask != 0 {
                    continue;
                }
            }
            let Some(w) = b.get(s..end) else { continue };
            if !w.eq_ignore_ascii_case(self.bytes.get(l.at as usize..l.at as usize + l.len as usize).unwrap_or_default()) {
                continue;
            }
            if l.word {
                let before = s.checked_sub(1).map(|p| b[p]);
                if before.is_some_and(|c| c.is_ascii_alphabetic() || c == b'_') || b.get(end).is_some_and(|&c| WORD_BYTE[c as usize]) {
                    continue;
                }
            }
            m |= l.gates;
        }
        m
    }

    /// The gates the literals of `b` open that `have` lacks, or some of those `have` holds:
    /// the walk stops once `have` and the matches so far hold every gate with literals (`all`).
    /// (The byte pass without class bits, for detector sets whose gates do not fit in them.)
    pub(super) fn walk(&self, b: &[u8], have: u64, all: u64) -> u64 {
        let mut lit = 0;
        let Some(&c0) = b.first() else { return 0 };
        let mut f = self.fold[c0 as usize];
        for (i, &c) in b.iter().enumerate().skip(1) {
            let g = self.fold[c as usize];
            if self.rows[f as usize] >> (g & 63) & 1 != 0 {
                let r = self.rank(f, g);
                if self.wants(r, b, i - 1, have | lit) {
                    lit = self.matched(b, i - 1, r, lit, have);
                    if all & !(lit | have) == 0 {
                        return lit;
                    }
                }
            }
            f = g;
        }
        if self.rows[f as usize] & 1 != 0 {
            let r = self.rank(f, 0);
            if self.wants(r, b, b.len() - 1, have | lit) {
                lit = self.matched(b, b.len() - 1, r, lit, have);
            }
        }
        lit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The gates of the literals of `lits` that occur in `b`, by brute force.
    fn naive(lits: &[(String, bool, u64)], b: &[u8]) -> u64 {
        let mut m = 0;
        for (l, word, gates) in lits {
            let l = l.as_bytes();
            for s in 0..b.len() {
                let Some(w) = b.get(s..s + l.len()) else { break };
                if !w.eq_ignore_ascii_case(l) {
                    continue;
                }
                if *word {
                    let before = s.checked_sub(1).map(|p| b[p]);
                    if before.is_some_and(|c| c.is_ascii_alphabetic() || c == b'_') || b.get(s + l.len()).is_some_and(|&c| WORD_BYTE[c as usize]) {
                        continue;
                    }
                }
                m |= gates;
            }
        }
        m
    }

    /// [`Pairs::walk`] against a brute-force search, on literal sets the gates do not have
    /// today: literals of one byte (words and not), literals that overlap and share pairs,
    /// words with digits and `_`, and more distinct bytes than classes (classes shared).
    #[test]
    fn walk_agrees_with_a_brute_force_search() {
        let sets: Vec<Vec<(&str, bool)>> = vec![
            vec![("x", false), ("y", true), ("in", true), ("ing", false), ("--", false), ("a_b", true), ("x9", true), ("9x", false)],
            vec![("ab", false), ("abab", true), ("bab", false), ("b", true), ("::", false), ("<!", false), ("select", true), ("sel", false)],
            // 90 distinct bytes: classes are shared.
            (33u8..123)
                .map(|c| c as char)
                .collect::<Vec<_>>()
                .chunks(3)
                .map(|w| (Box::leak(w.iter().collect::<String>().into_boxed_str()) as &str, w[0] as u8 % 2 == 0))
                .collect(),
        ];
        let mut rng = palisade_testkit::rng::XorShift64::new(0x5eed_1234_abcd_0042);
        for set in sets {
            let lits: Vec<(String, bool, u64)> = set.iter().enumerate().map(|(k, (l, w))| (l.to_ascii_lowercase(), *w, 1u64 << (k % 60))).collect();
            let all = lits.iter().fold(0, |m, l| m | l.2);
            let pairs = Pairs::new(&lits);
            let mut alphabet: Vec<u8> = lits.iter().flat_map(|l| format!("{}{}", l.0, l.0.to_ascii_uppercase()).into_bytes()).collect();
            alphabet.extend_from_slice(b" _9aZ.-\x01\xc3");
            for n in 0..14 {
                for _ in 0..3_000 {
                    let mut b: Vec<u8> = (0..n).map(|_| alphabet[rng.below(alphabet.len())]).collect();
                    if rng.below(3) == 0 {
                        let l = &lits[rng.below(lits.len())].0;
                        let at = rng.below(b.len() + 1);
                        b.splice(at..at, l.bytes());
                    }
                    assert_eq!(pairs.walk(&b, 0, all), naive(&lits, &b), "{:?}", String::from_utf8_lossy(&b));
                    // With gates already open the walk may stop early: the union agrees.
                    let have = 1u64 << rng.below(8);
                    assert_eq!(pairs.walk(&b, have, all) | have, naive(&lits, &b) | have, "{:?}", String::from_utf8_lossy(&b));
                }
            }
        }
    }
}
