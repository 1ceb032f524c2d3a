//! The detection engine: compiled once from settings, shared by all workers.
//!
//! For each value the extractor yields ([`crate::extract`]), the engine
//! 1. classifies its bytes with one 256-entry table lookup per byte into "may need decoding"
//!    and "could be base64" bits, the detectors whose [`Gate`] bytes occur, and (for
//!    detectors without a gate) the bit set of [`FAMILIES`] the value could concern; a value
//!    with non-ASCII bytes has its non-ASCII characters read by [`CodePoint`] in a second pass
//!    (letters of other scripts open nothing, typographic quotes what `'`/`"` open, anything
//!    else every gate and family);
//! 2. decodes it into candidates when it may hold encodings ([`crate::decode`]);
//! 3. for each candidate, completes the gates with every gated detector's literals
//!    (`Gate::anchors`, `Gate::words`), looked for in the same byte pass by pairs of bytes
//!    (`pairs.rs`; no longer once every gate with literals is open), then the structural
//!    tests (`Gate::test`) of the gates still closed (skipped by class bits: when none of a
//!    test's `Gate::test_bytes` occurs, or an ASCII byte outside its `Gate::test_only` does):
//!    a benign value typically opens no gate and runs no detector; a text in the product-token
//!    shape of `User-Agent` values ([`crate::shape`]) is judged by the detectors'
//!    [`Detector::product_token_gate`]s instead, where declared;
//! 4. runs each detector whose gate is open (detectors without a gate: whose family bits are
//!    set; with a name not in [`FAMILIES`]: every value), keeps hits at or above the level's
//!    threshold (Balanced 60, Strict 40) that no exclusion covers, and reports at most one
//!    finding per detector and value.
//!
//! How a detector declares its pre-filter: implement [`Detector::gate`] (see [`Gate`] for the
//! semantics and the soundness rule; `tests/gate_soundness.rs` checks every gated detector on
//! every corpus value and decoded candidate). At most 64 detectors are gated; further ones
//! fall back to the family bits.

use std::fmt;
use std::ops::ControlFlow;

#[cfg(test)]
use aho_corasick::automaton::Automaton;
#[cfg(test)]
use aho_corasick::Anchored;
use aho_corasick::{dfa::DFA, MatchKind};
use palisade_core::{Phase, RequestView};

use crate::decode::{self, Decoder, Transforms, BASE64_MIN_LEN};
use crate::extract::{self, Counts, Exceeded, Extractor, Location, Stop};
use crate::{Category, Detector, FieldKind, Gate, Input, Level, PlainGate};

mod pairs;
#[cfg(test)]
mod tests;

use pairs::Pairs;

/// Per-family pre-filter: detector names (aliases share a family) and the ASCII punctuation
/// that may carry the family's attacks. Letters and digits never do; control characters
/// always may (for every family); non-ASCII characters as [`CodePoint`] says (letters of other
/// scripts never, typographic quotes as `'`/`"`, others always); a space only where listed.
///
/// The rule for adding a byte to a family's list is conservative: a value made only of
/// letters, digits and the bytes *not* listed must be unable to carry that family's attacks
/// in any context (an SQL injection in a numeric context needs at least a space or a
/// punctuation mark: `1 or 1=1`, `1/**/or/**/1`, `(1)or(1)`; markup needs `<`, a quote, `:`,
/// `=`, `(`...).
pub const FAMILIES: &[(&[&str], &str)] = &[
    (&["sqli", "sql"], " !\"#$%&'()*+,-/:;<=>?[\\]^`{|}~"),
    (&["xss", "html"], "\"'`()<>:=&\\%{}[];"),
    (&["cmdi", "shell", "argument"], " !\"#$%&'()*-/;<>?[\\]^`{|}~"),
    (&["path", "lfi", "path-traversal", "traversal", "rfi"], "./\\:%~$"),
    (&["ssti", "template"], "{}$#<>%[]()*@=|"),
    (&["xxe", "xml"], "<&%:("),
    (&["log4shell", "jndi"], "${}%"),
    (&["code", "code-injection"], "()`;$'\"[]{}<>\\"),
    (&["crlf"], "%\\"),
    (&["nosql"], "${}[]'\";()=|&:"),
    (&["ldap"], "*()|&=!\\~<>%"),
    (&["ssrf"], ":/@.[]%\\"),
];

/// Bits of the class table beyond the families.
const DECODE: u64 = 1 << 30;
const NON_B64: u64 = 1 << 29;
/// A byte that cannot occur in the product-token shape ([`crate::shape`]).
const NOT_SHAPE: u64 = 1 << 28;
/// A `/`, which the product-token shape needs (its first product has a version).
const SLASH: u64 = 1 << 27;
/// Families bits are `1 << index in FAMILIES`.
const ALL_FAMILIES: u64 = (1 << FAMILIES.len()) - 1;
// [`Engine::ungated_family`] holds 16 families.
const _: () = assert!(FAMILIES.len() <= 16);
/// A non-ASCII byte: the value's non-ASCII characters are classified by code point
/// ([`CodePoint`]) in a second pass.
const NON_ASCII: u64 = 1 << 26;
/// A byte other than an ASCII letter, digit or `_`: a text without one is a bare word, whose
/// tests are the [`Detector::bare_word_gate`]s where declared ([`Gates::admit_but`]).
const NON_WORD: u64 = 1 << 31;
/// Bits 32.. of the class table: bit `32 + k` is set for the bytes of the `k`-th gate test's
/// [`Gate::test_bytes`], bit `47 + k` for the ASCII bytes outside its [`Gate::test_only`]
/// (the first [`MAX_TEST_BITS`] tests; further ones always run).
const TEST_SHIFT: u32 = 32;
const ONLY_SHIFT: u32 = 47;
const MAX_TEST_BITS: usize = 15;
const TEST_MASK: u16 = (1 << MAX_TEST_BITS) - 1;
/// A byte of some [`Detector::plain_gate`]: a text without one is plain for every test, whose
/// plain tests run where declared ([`Gates::admit_but`]). (A non-ASCII character folded to an
/// ASCII quote does not set it: the plain tests read the bytes of the text.)
const NOT_PLAIN: u64 = 1 << 62;
const _: () = assert!(ONLY_SHIFT as usize + MAX_TEST_BITS <= 62 && TEST_SHIFT as usize + MAX_TEST_BITS <= ONLY_SHIFT as usize);
/// Slots of [`Gates::first_tests`] (a power of two at least [`MAX_TEST_BITS`]: indexes are
/// masked, not bounds-checked).
const TEST_SLOTS: usize = 16;
/// Bits of the class table no class uses, where [`Engine::classify`] carries the gates of the
/// first [`PACKED_WIDTH`] detectors ([`Gates::packed`]): gate `i` at bit `PACKED_SHIFT + i`.
const PACKED_SHIFT: u32 = 12;
const PACKED_WIDTH: u32 = 14;
const PACKED_GATES: u64 = ((1 << PACKED_WIDTH) - 1) << PACKED_SHIFT;

/// The gates packed in class bits ([`PACKED_GATES`]).
#[inline(always)]
fn unpack_gates(p: u64) -> u64 {
    (p & PACKED_GATES) >> PACKED_SHIFT
}

fn family_of(name: &str) -> Option<usize> {
    FAMILIES.iter().position(|(names, _)| names.contains(&name))
}

fn class_table(gates: &Gates) -> [u64; 256] {
    let mut t = [0u64; 256];
    for (b, slot) in t.iter_mut().enumerate() {
        let b = b as u8;
        let mut m = 0;
        if b >= 0x80 {
            m |= NON_ASCII;
        } else if !(0x20..0x7F).contains(&b) {
            m |= ALL_FAMILIES;
        } else {
            for (i, (_, triggers)) in FAMILIES.iter().enumerate() {
                if triggers.as_bytes().contains(&b) {
                    m |= 1 << i;
                }
            }
        }
        if matches!(b, b'%' | b'&' | b'\\' | 0) {
            m |= DECODE;
        }
        if !(b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=' | b'-' | b'_')) {
            m |= NON_B64;
        }
        if !(b.is_ascii_alphanumeric() || matches!(b, b' ' | b'(' | b')' | b'/' | b';' | b',' | b':' | b'.' | b'-' | b'+' | b'_')) {
            m |= NOT_SHAPE;
        }
        if b == b'/' {
            m |= SLASH;
        }
        if gates.plain_bytes.contains(&b) {
            m |= NOT_PLAIN;
        }
        if !(b.is_ascii_alphanumeric() || b == b'_') {
            m |= NON_WORD;
        }
        for (k, &(_, need, excl, _, _)) in gates.tests.iter().enumerate() {
            if need != 0 && gates.test_bytes[k].contains(&b) {
                m |= need;
            }
            if excl != 0 && b < 0x80 && !gates.test_only[k].contains(&b) {
                m |= excl;
            }
        }
        *slot = m;
    }
    t
}

/// The gates of the detectors ([`Gate`]), compiled together. Bit `i` stands for detector `i`.
struct Gates {
    /// Per byte: the gates it opens (controls and DEL open every gate; non-ASCII bytes none:
    /// their characters are read by [`CodePoint`]).
    bytes: [u64; 256],
    /// Detectors that declared a gate.
    gated: u64,
    /// Gated detectors with literals.
    literal: u64,
    /// Every literal of every gate, ASCII case-insensitive, all matches (tests only: the
    /// `aho_corasick` reference of [`Pairs`] in `tests::check_fused_pass`).
    dfa: Option<DFA>,
    /// Per pattern of `dfa`: the gates it opens, whether it must stand as a word, its length.
    pats: Vec<(u64, bool, usize)>,
    /// The literals by pairs of bytes, looked for in the engine's byte pass
    /// ([`Engine::classify`]).
    lits: Option<Pairs>,
    /// (detector bit, class-table bit its test needs (0: none), class-table bit that rules
    /// its test out (0: none), test, test of a bare word ([`Detector::bare_word_gate`], else
    /// the test)).
    tests: Vec<(u64, u64, u64, GateTest, GateTest)>,
    /// Detectors with a test.
    tested: u64,
    /// Bit `k`: the `k`-th test needs no class bit (no [`Gate::test_bytes`]) (the first
    /// [`MAX_TEST_BITS`] tests).
    need_free: u16,
    /// The first [`MAX_TEST_BITS`] tests by index, for [`Gates::admit_but`]: the detector bit,
    /// and the tests to run on a text that is (bit 0 of the index) or is not a bare word, and
    /// that is (bit 1) or is not plain (no [`NOT_PLAIN`] byte): [`Gate::test`], the bare-word
    /// test ([`Detector::bare_word_gate`]), the plain test ([`Detector::plain_gate`]), and for
    /// a plain bare word the bare-word test, else the plain one (each [`Gate::test`] where not
    /// declared).
    first_bits: [u64; TEST_SLOTS],
    first_tests: [[GateTest; 4]; TEST_SLOTS],
    /// The bytes of the [`Detector::plain_gate`]s ([`NOT_PLAIN`]).
    plain_bytes: Vec<u8>,
    /// The [`Gate::test_bytes`] and [`Gate::test_only`] of each test.
    test_bytes: Vec<&'static [u8]>,
    test_only: Vec<&'static [u8]>,
    /// Gated detectors with a [`Detector::product_token_gate`], and those gates.
    shaped: u64,
    shape_tests: Vec<(u64, GateTest)>,
    /// The class table ([`class_table`]) with the gates of each byte (`bytes`) in its unused
    /// bits ([`PACKED_GATES`]), when they fit (`packed`): one lookup per byte in
    /// [`Engine::classify`].
    packed_table: [u64; 256],
    packed: bool,
}

/// What one pass over a text finds ([`Engine::classify`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Classes {
    /// Class bits: [`FAMILIES`], [`DECODE`], [`NON_B64`], the shape and test bits.
    mask: u64,
    /// The gates its bytes (and non-ASCII characters) open.
    open: u64,
    /// The gates its literals open ([`Gate::anchors`], [`Gate::words`]).
    lits: u64,
}

/// A gate's structural test ([`Gate::test`]).
type GateTest = fn(&str) -> bool;

/// The test of the slots of [`Gates::first_tests`] no test fills (never run: no class bit
/// and no [`Gates::need_free`] bit stands for them).
fn never(_: &str) -> bool {
    false
}

impl Gates {
    fn new(gates: &[Option<Gate>], shape_gates: &[Option<GateTest>], word_gates: &[Option<GateTest>], plain_gates: &[Option<PlainGate>]) -> Gates {
        let mut g = Gates {
            bytes: [0; 256],
            gated: 0,
            literal: 0,
            dfa: None,
            pats: Vec::new(),
            lits: None,
            tests: Vec::new(),
            tested: 0,
            need_free: 0,
            first_bits: [0; TEST_SLOTS],
            first_tests: [[never as GateTest; 4]; TEST_SLOTS],
            plain_bytes: Vec::new(),
            test_bytes: Vec::new(),
            test_only: Vec::new(),
            shaped: 0,
            shape_tests: Vec::new(),
            packed_table: [0; 256],
            packed: false,
        };
        let mut lits: Vec<(String, bool, u64)> = Vec::new();
        for (i, gate) in gates.iter().enumerate().take(64) {
            let Some(gate) = gate else { continue };
            let bit = 1u64 << i;
            g.gated |= bit;
            if let Some(Some(t)) = shape_gates.get(i) {
                g.shaped |= bit;
                g.shape_tests.push((bit, *t));
            }
            for (b, slot) in g.bytes.iter_mut().enumerate() {
                if b < 0x20 || b == 0x7F || gate.bytes.as_bytes().contains(&(b as u8)) {
                    *slot |= bit;
                }
            }
            for (list, word) in [(gate.anchors, false), (gate.words, true)] {
                for l in list {
                    let l = l.to_ascii_lowercase();
                    match lits.iter_mut().find(|(x, w, _)| *x == l && *w == word) {
                        Some(e) => e.2 |= bit,
                        None => lits.push((l, word, bit)),
                    }
                    g.literal |= bit;
                }
            }
            if let Some(t) = gate.test {
                let k = g.tests.len();
                let need = if gate.test_bytes.is_empty() || k >= MAX_TEST_BITS { 0 } else { 1u64 << (TEST_SHIFT as usize + k) };
                let excl = if gate.test_only.is_empty() || k >= MAX_TEST_BITS { 0 } else { 1u64 << (ONLY_SHIFT as usize + k) };
                let bare = word_gates.get(i).copied().flatten();
                let word = bare.unwrap_or(t);
                let plain = plain_gates.get(i).copied().flatten().filter(|_| k < MAX_TEST_BITS);
                if let Some((bytes, _)) = plain {
                    g.plain_bytes.extend(bytes.bytes());
                }
                let plain = plain.map(|p| p.1);
                if k < MAX_TEST_BITS {
                    g.first_bits[k] = bit;
                    g.first_tests[k] = [t, word, plain.unwrap_or(t), bare.or(plain).unwrap_or(t)];
                }
                g.tests.push((bit, need, excl, t, word));
                g.tested |= bit;
                if need == 0 && k < MAX_TEST_BITS {
                    g.need_free |= 1 << k;
                }
                g.test_bytes.push(gate.test_bytes.as_bytes());
                g.test_only.push(gate.test_only.as_bytes());
            }
        }
        if !lits.is_empty() {
            g.pats = lits.iter().map(|l| (l.2, l.1, l.0.len())).collect();
            g.lits = Some(Pairs::new(&lits));
            // The automaton is the reference of the tests only.
            if cfg!(test) {
                let dfa = DFA::builder()
                    .ascii_case_insensitive(true)
                    .match_kind(MatchKind::Standard)
                    .build(lits.iter().map(|l| l.0.as_str()))
                    .expect("gate literals compile");
                g.dfa = Some(dfa);
            }
        }
        let table = class_table(&g);
        g.packed = g.gated >> PACKED_WIDTH == 0 && table.iter().all(|&t| t & PACKED_GATES == 0);
        if g.packed {
            g.packed_table = std::array::from_fn(|c| table[c] | g.bytes[c] << PACKED_SHIFT);
        }
        g
    }

    /// Adds to `m` the gates whose literals occur in `b` (every match, overlapping ones too),
    /// found by the `aho_corasick` automaton of every literal: the independent reference the
    /// tests check the byte pass's [`Pairs`] against.
    #[cfg(test)]
    fn literals(&self, dfa: &DFA, b: &[u8], mut m: u64) -> u64 {
        let Ok(mut sid) = dfa.start_state(Anchored::No) else { return !0 };
        for (i, &c) in b.iter().enumerate() {
            sid = dfa.next_state(Anchored::No, sid, c);
            if !dfa.is_special(sid) {
                continue;
            }
            if dfa.is_dead(sid) {
                break;
            }
            for k in 0..dfa.match_len(sid) {
                let (dm, word, len) = self.pats[dfa.match_pattern(sid, k).as_usize()];
                if dm & !m == 0 {
                    continue;
                }
                if word {
                    let before = (i + 1).checked_sub(len + 1).map(|p| b[p]);
                    let after = b.get(i + 1).copied();
                    if before.is_some_and(|c| c.is_ascii_alphabetic() || c == b'_') || after.is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_') {
                        continue;
                    }
                }
                m |= dm;
            }
            if self.literal & !m == 0 {
                break;
            }
        }
        m
    }

    /// The gates `t` opens, given those its bytes and literals opened (`open`: [`Classes::open`]
    /// and [`Classes::lits`]) and its class bits (`class`, for [`Gate::test_bytes`]). Only gated
    /// detectors' bits are set.
    #[inline(always)]
    fn admit(&self, t: &str, open: u64, class: u64) -> u64 {
        self.admit_but(t, open, class, 0)
    }

    /// [`Gates::admit`] for a text in the product-token shape ([`crate::shape`]): the
    /// detectors with a [`Detector::product_token_gate`] are decided by it alone, the others
    /// by their gates.
    fn admit_shaped(&self, t: &str, open: u64, class: u64) -> u64 {
        let mut m = self.admit_but(t, open, class, self.shaped);
        for (bit, test) in &self.shape_tests {
            if test(t) {
                m |= bit;
            }
        }
        m
    }

    /// [`Gates::admit`] for every gate but those of `skip` (left closed). The literals were
    /// looked for in the byte pass ([`Engine::classify`]): only the structural tests are left.
    #[inline(always)]
    fn admit_but(&self, t: &str, open: u64, class: u64, skip: u64) -> u64 {
        let mut m = (open & self.gated) | skip;
        if self.tested & !m != 0 {
            // A bare word (no [`NON_WORD`] byte) is judged by the bare-word tests.
            let word = class & NON_WORD == 0;
            // The tests whose class bits let them run: bit `k` for the `k`-th test (the first
            // [`MAX_TEST_BITS`]; further ones always run, below).
            let bits = (class >> TEST_SHIFT) as u16 | self.need_free;
            let mut run = bits & !((class >> ONLY_SHIFT) as u16) & TEST_MASK;
            // Which of each test's variants ([`Gates::first_tests`]).
            let w = word as usize | ((class & NOT_PLAIN == 0) as usize) << 1;
            while run != 0 {
                let k = run.trailing_zeros() as usize % TEST_SLOTS;
                run &= run - 1;
                let bit = self.first_bits[k];
                if m & bit == 0 && self.first_tests[k][w](t) {
                    m |= bit;
                }
            }
            for &(bit, _, _, test, word_test) in self.tests.iter().skip(MAX_TEST_BITS) {
                if m & bit == 0 && (if word { word_test } else { test })(t) {
                    m |= bit;
                }
            }
        }
        m & !skip
    }
}

/// ASCII letters, digits and `_`: a byte after which a word literal does not end a word.
static WORD_BYTE: [bool; 256] = {
    let mut t = [false; 256];
    let mut c = 0;
    while c < 256 {
        t[c] = (c as u8).is_ascii_alphanumeric() || c == b'_' as usize;
        c += 1;
    }
    t
};

/// How the pre-filters read a non-ASCII character (a control byte, DEL, or any character not
/// listed here opens every gate and family, as before this reading existed):
/// - a letter of another script (Latin-1 and Latin Extended letters, Greek, Cyrillic,
///   Armenian, Hebrew, Arabic, the Indic scripts, Thai, Lao, Georgian, Vietnamese, kana, CJK
///   ideographs, Hangul: [`LETTER_RANGES`], alphabetic) opens nothing, like an ASCII letter.
///   No detector reads such a letter as anything but a word character: none folds it to
///   ASCII or drops its diacritics, and the letters whose Unicode case mapping yields ASCII
///   (`ſ`, `ı`, `İ`, `ß`...) are not in the class, nor the characters a detector reads
///   specially ([`NOT_LETTERS`]: `ʼ` is a quote to the SQL detector, `嘊`/`嘍` carry a
///   line break to the CRLF detector (`%E5%98%8A` reaches a server that keeps the low byte));
/// - a typographic quote (`‘’‛′ʼ`, `“”″`: the SQL detector folds them to `'` and `"`, as a
///   database's best-fit conversion does) opens what its ASCII quote opens
///   ([`CodePoint::Fold`]); no other detector reads them;
/// - everything else (look-alike dots and slashes, fullwidth forms, odd spaces, zero-width and
///   replacement characters, symbols, combining marks, private use...) opens every gate.
///
/// `tests::code_point_classes` checks the classes; `tests/gate_soundness.rs` checks every
/// detector on the corpus with letters of other scripts and typographic quotes put in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CodePoint {
    /// A letter of another script: opens nothing.
    Letter,
    /// A typographic quote: opens what this ASCII quote opens.
    Fold(u8),
    /// Opens every gate and family.
    Open,
}

/// The script blocks whose alphabetic characters are [`CodePoint::Letter`]s (inclusive ranges).
pub const LETTER_RANGES: &[(u32, u32)] = &[
    (0x00C0, 0x024F), // Latin-1 letters, Latin Extended-A and -B (× and ÷ are not alphabetic)
    (0x0370, 0x03FF), // Greek
    (0x0400, 0x052F), // Cyrillic
    (0x0531, 0x058F), // Armenian
    (0x05D0, 0x05EA), // Hebrew letters
    (0x0620, 0x06D3), // Arabic letters
    (0x0900, 0x0DFF), // Devanagari .. Sinhala
    (0x0E00, 0x0EFF), // Thai, Lao
    (0x10A0, 0x10FF), // Georgian
    (0x1E00, 0x1EFF), // Latin Extended Additional (Vietnamese)
    (0x3041, 0x30FF), // Hiragana, Katakana
    (0x4E00, 0x9FFF), // CJK unified ideographs
    (0xAC00, 0xD7A3), // Hangul syllables
];

/// Characters of [`LETTER_RANGES`] a detector reads specially: never [`CodePoint::Letter`]s.
pub const NOT_LETTERS: &[char] = &['\u{02bc}', '\u{560a}', '\u{560d}'];

/// The class of a non-ASCII character ([`CodePoint`]; ASCII characters are not classified
/// here: [`CodePoint::Open`]).
pub fn code_point(c: char) -> CodePoint {
    match c {
        '\u{2018}' | '\u{2019}' | '\u{201b}' | '\u{2032}' | '\u{02bc}' => CodePoint::Fold(b'\''),
        '\u{201c}' | '\u{201d}' | '\u{2033}' => CodePoint::Fold(b'"'),
        c if script_letter(c) => CodePoint::Letter,
        _ => CodePoint::Open,
    }
}

fn script_letter(c: char) -> bool {
    let u = c as u32;
    LETTER_RANGES.iter().any(|&(a, b)| (a..=b).contains(&u))
        && c.is_alphabetic()
        && !NOT_LETTERS.contains(&c)
        && c.to_lowercase().chain(c.to_uppercase()).all(|x| !x.is_ascii())
}

/// The ranges of [`LETTER_RANGES`] whose scripts have no case: no character of them has a
/// case mapping (`tests::code_point_classes` compares [`CodePoints`] with [`code_point`] over the
/// whole Basic Multilingual Plane), and none is a typographic quote.
const CASELESS_RANGES: &[(u32, u32)] =
    &[(0x05D0, 0x05EA), (0x0620, 0x06D3), (0x0900, 0x0DFF), (0x0E00, 0x0EFF), (0x3041, 0x30FF), (0x4E00, 0x9FFF), (0xAC00, 0xD7A3)];

/// The ranges of [`CASELESS_RANGES`] whose characters are all assigned and alphabetic (CJK
/// unified ideographs, Hangul syllables; `tests::code_point_classes` checks it).
const ALPHABETIC_RANGES: &[(u32, u32)] = &[(0x4E00, 0x9FFF), (0xAC00, 0xD7A3)];

/// [`CodePoints`], built on first use and shared by every engine of the process (its build
/// reads the Unicode tables for the letters of [`LETTER_RANGES`], work an engine built again, on
/// a reload, need not repeat).
static CODE_POINTS: std::sync::LazyLock<CodePoints> = std::sync::LazyLock::new(CodePoints::new);

/// [`code_point`] as a bitmap over the Basic Multilingual Plane (built once per process,
/// [`CODE_POINTS`]; every class lies in it: beyond it, [`CodePoint::Open`]).
struct CodePoints {
    letters: Box<[u64]>,
}

impl CodePoints {
    fn new() -> CodePoints {
        let mut letters = vec![0u64; 0x10000 / 64].into_boxed_slice();
        for &(a, b) in LETTER_RANGES {
            let caseless = CASELESS_RANGES.contains(&(a, b));
            for u in a..=b {
                let Some(c) = char::from_u32(u) else { continue };
                // In a script without case, [`code_point`] without its case-mapping reads (most
                // of this build's cost: the CJK and Hangul blocks).
                // In a block whose characters are all alphabetic, without the alphabetic
                // lookup either (the rest of the cost).
                let alphabetic = || ALPHABETIC_RANGES.contains(&(a, b)) || c.is_alphabetic();
                let letter = if caseless { alphabetic() && !NOT_LETTERS.contains(&c) } else { code_point(c) == CodePoint::Letter };
                if letter {
                    letters[u as usize / 64] |= 1 << (u % 64);
                }
            }
        }
        CodePoints { letters }
    }

    #[inline]
    fn class(&self, c: char) -> CodePoint {
        let u = c as usize;
        if u < 0x10000 && self.letters[u / 64] & (1 << (u % 64)) != 0 {
            return CodePoint::Letter;
        }
        code_point(c)
    }
}

/// Blocking threshold of a level: Balanced 60, Strict 40.
pub fn threshold(level: Level) -> u8 {
    match level {
        Level::Balanced => 60,
        Level::Strict => 40,
    }
}

/// Skip a detector (or a category, or `*` for all) for locations matching a pattern:
/// `*` matches within one path step (no `/`), `**` matches anything; case-insensitive.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Exclusion {
    pub detector: String,
    pub location: String,
}

impl Exclusion {
    fn covers(&self, detector: &str, category: Category, location: &str) -> bool {
        (self.detector == "*" || self.detector == detector || self.detector == category.as_str()) && glob(self.location.as_bytes(), location.as_bytes())
    }
}

/// Glob match: `*` any run without `/`, `**` any run; ASCII case-insensitive. O(p·s).
pub fn glob(pattern: &[u8], s: &[u8]) -> bool {
    // dp[j]: pattern[..i] matches s[..j].
    let mut dp = vec![false; s.len() + 1];
    dp[0] = true;
    let mut i = 0;
    while i < pattern.len() {
        let mut next = vec![false; s.len() + 1];
        if pattern[i] == b'*' {
            let any = pattern.get(i + 1) == Some(&b'*');
            for j in 0..=s.len() {
                next[j] = dp[j] || (j > 0 && next[j - 1] && (any || s[j - 1] != b'/'));
            }
            i += if any { 2 } else { 1 };
        } else {
            for j in 1..=s.len() {
                next[j] = dp[j - 1] && pattern[i].eq_ignore_ascii_case(&s[j - 1]);
            }
            i += 1;
        }
        dp = next;
    }
    dp[s.len()]
}

/// The exclusions of one inspection: `hit` is set when one of them dropped a hit; `extra`
/// holds those of the request (see [`Engine::inspect_phase_excluding`]).
struct Excluded<'a> {
    hit: bool,
    extra: Option<&'a ExcludeFn<'a>>,
}

/// Whether a hit of `detector` (of a category) at a rendered location is excluded.
pub type ExcludeFn<'a> = dyn Fn(&str, Category, &str) -> bool + 'a;

/// What the engine is built from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EngineConfig {
    pub level: Level,
    /// Headers inspected besides [`extract::DEFAULT_HEADERS`].
    pub headers: Vec<String>,
    pub exclusions: Vec<Exclusion>,
    pub limits: extract::Limits,
    pub decode: decode::Limits,
    /// Stop inspecting a request after this many findings.
    pub max_findings: usize,
    /// Field names that give values a role (search box, redirect target).
    pub roles: crate::context::Roles,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            level: Level::Balanced,
            headers: Vec::new(),
            exclusions: Vec::new(),
            limits: extract::Limits::default(),
            decode: decode::Limits::default(),
            max_findings: 8,
            roles: crate::context::Roles::default(),
        }
    }
}

/// One detection in a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    pub detector: &'static str,
    pub category: Category,
    pub confidence: u8,
    /// Rendered [`Location`], e.g. `query.id`, `body/users/3/name`.
    pub location: String,
    pub field: FieldKind,
    /// The decoded fragment that triggered (at most 64 bytes).
    pub fragment: String,
    pub why: &'static str,
    /// The decodings that revealed it (empty: the raw value).
    pub transforms: Transforms,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ({}, confidence {}) at {} via {}: {}",
            self.detector,
            self.why,
            self.confidence,
            self.location,
            self.transforms,
            self.fragment.escape_debug()
        )
    }
}

/// The result of inspecting one phase of a request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    pub findings: Vec<Finding>,
    /// Set when a limit stopped extraction: the rest of the phase was not inspected.
    pub exceeded: Option<Exceeded>,
    pub counts: Counts,
}

impl Report {
    pub fn clear(&mut self) {
        self.findings.clear();
        self.exceeded = None;
        self.counts = Counts::default();
    }
}

/// Reusable per-worker buffers.
#[derive(Debug, Default)]
pub struct Scratch {
    pub decoder: Decoder,
    pub extract: extract::Scratch,
    memo: Memo,
}

/// The values of the current phase that were judged clean, so that a value repeated in one
/// request (the keys of an array of objects, enumerations, flags) is judged once. Keyed by
/// field kind and the exact bytes (compared, not only hashed: a hash collision cannot hide a
/// value); only values of at most [`Memo::MAX_LEN`] bytes; bounded table and arena, at most
/// [`Memo::PROBES`] comparisons per lookup (colliding values are simply judged again).
///
/// A slot holds the value's first and last 8 bytes ([`Memo::key`]), which for a value of at
/// most [`Memo::INLINE`] bytes are all of them: such a value is compared and remembered in
/// its slot alone (most keys and values), a longer one also in the arena.
#[derive(Debug)]
struct Memo {
    /// Per slot; a slot of an older generation is empty.
    slots: Box<[Slot; Memo::SLOTS]>,
    arena: Vec<u8>,
    generation: u32,
}

/// A free slot of the [`Memo`], and the [`Memo::tag`] and [`Memo::key`] of the value to
/// remember in it.
type MemoSlot = (usize, u64, (u64, u64));

#[derive(Clone, Copy, Debug, Default)]
struct Slot {
    /// [`Memo::tag`]: generation, length and kind of the value.
    tag: u64,
    /// [`Memo::key`] of the value.
    key: (u64, u64),
    /// Arena offset (values longer than [`Memo::INLINE`]).
    off: u32,
}

impl Default for Memo {
    fn default() -> Self {
        Memo { slots: Box::new([Slot::default(); Memo::SLOTS]), arena: Vec::new(), generation: 1 }
    }
}

impl Memo {
    const SLOTS: usize = 512;
    const MAX_LEN: usize = 64;
    const MAX_ARENA: usize = 16 << 10;
    const PROBES: usize = 4;
    /// Values of at most this many bytes are held by their [`Memo::key`].
    const INLINE: usize = 16;

    /// Forget every value (one per phase).
    fn reset(&mut self) {
        self.arena.clear();
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 {
            self.slots.fill(Slot::default());
            self.generation = 1;
        }
    }

    /// The first and last 8 bytes of `v` (at most [`Memo::MAX_LEN`] bytes), overlapping when
    /// it is shorter than 16 bytes; a value of fewer than 8 bytes in the first word
    /// ([`short_word`]). For a value of at most [`Memo::INLINE`] bytes, every byte is in it:
    /// two values of the same length are equal exactly when their keys are.
    #[inline]
    fn key(v: &[u8]) -> (u64, u64) {
        let n = v.len();
        if n >= 8 {
            (word8(v, 0), word8(v, n - 8))
        } else {
            (short_word(v), 0)
        }
    }

    /// A hash of `kind` and `v` (at most [`Memo::MAX_LEN`] bytes, `key`: [`Memo::key`]): each
    /// 8-byte word mixed in, the last one read overlapping the one before (no copy of a tail).
    #[inline]
    fn hash(kind: u8, v: &[u8], key: (u64, u64)) -> usize {
        const K: u64 = 0x517c_c1b7_2722_0a95;
        let n = v.len();
        let mut h = (kind as u64) ^ ((n as u64) << 8);
        h = (h.rotate_left(5) ^ key.0).wrapping_mul(K);
        let mut i = 8;
        while i + 8 < n {
            h = (h.rotate_left(5) ^ word8(v, i)).wrapping_mul(K);
            i += 8;
        }
        h = (h.rotate_left(5) ^ key.1).wrapping_mul(K);
        (h >> 32) as usize
    }

    /// The generation (high half), length and kind of a value of `n` bytes (at most
    /// [`Memo::MAX_LEN`]), compared in one word.
    #[inline(always)]
    fn tag(&self, kind: u8, n: usize) -> u64 {
        (self.generation as u64) << 32 | (n as u64) << 8 | kind as u64
    }

    /// Whether `v` (of `kind`) was judged clean in this phase; else the slot to remember it in
    /// (with its tag and key).
    #[inline]
    fn find(&self, kind: u8, v: &[u8]) -> Result<(), Option<MemoSlot>> {
        if v.len() > Memo::MAX_LEN {
            return Err(None);
        }
        let key = Memo::key(v);
        let h = Memo::hash(kind, v, key);
        let tag = self.tag(kind, v.len());
        for p in 0..Memo::PROBES {
            let i = (h + p) % Memo::SLOTS;
            let s = &self.slots[i];
            if (s.tag ^ tag) >> 32 != 0 {
                return Err(Some((i, tag, key)));
            }
            if s.tag == tag
                && s.key == key
                && (v.len() <= Memo::INLINE || self.arena.get(s.off as usize..s.off as usize + v.len()).is_some_and(|a| same_bytes(a, v)))
            {
                return Ok(());
            }
        }
        Err(None)
    }

    #[inline]
    fn remember(&mut self, (slot, tag, key): MemoSlot, v: &[u8]) {
        let mut off = 0;
        if v.len() > Memo::INLINE {
            if self.arena.len() + v.len() > Memo::MAX_ARENA {
                return;
            }
            off = self.arena.len() as u32;
            self.arena.extend_from_slice(v);
        }
        self.slots[slot % Memo::SLOTS] = Slot { tag, key, off };
    }
}

/// The 8 bytes of `v` at `i` (little-endian).
#[inline]
fn word8(v: &[u8], i: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&v[i..i + 8]);
    u64::from_le_bytes(w)
}

/// The bytes of `v` (at most 8) in a word: two overlapping 4-byte halves, or for fewer than 4
/// bytes the first, middle and last byte (which are all of them).
#[inline]
fn short_word(v: &[u8]) -> u64 {
    let n = v.len();
    if n >= 4 {
        let half = |i: usize| {
            let mut w = [0u8; 4];
            w.copy_from_slice(&v[i..i + 4]);
            u32::from_le_bytes(w) as u64
        };
        half(0) | half(n - 4) << 32
    } else if n > 0 {
        v[0] as u64 | (v[n / 2] as u64) << 8 | (v[n - 1] as u64) << 16
    } else {
        0
    }
}

/// `a == b` for slices of the same length of at most [`Memo::MAX_LEN`] bytes, a word at a time
/// and without a call.
#[inline]
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    if n >= 8 {
        let mut i = 0;
        while i + 8 < n {
            if word8(a, i) != word8(b, i) {
                return false;
            }
            i += 8;
        }
        word8(a, n - 8) == word8(b, n - 8)
    } else {
        short_word(a) == short_word(b)
    }
}

/// [`Decoder::decode`] of `raw`, told by its class bits `mask` ([`Engine::classify`]) which
/// decodings cannot apply: none of the pipeline's bytes ([`DECODE`] clear), or a byte outside
/// the base64 alphabet ([`NON_B64`]; only when the decoder reads the whole value, not past its
/// input limit) or too short for base64.
#[inline]
fn decode_by_classes<'a>(dec: &'a mut Decoder, raw: &'a str, mask: u64) -> decode::Candidates<'a> {
    let may_b64 = (mask & NON_B64 == 0 && raw.len() >= BASE64_MIN_LEN) || raw.len() > dec.limits().max_input;
    dec.decode_known(raw, mask & DECODE != 0, may_b64)
}

struct Entry {
    det: Box<dyn Detector>,
}

/// Number of [`FieldKind`]s (indexes of [`Engine::by_field`]).
const FIELD_KINDS: usize = FieldKind::XmlDocument as usize + 1;

/// The compiled engine.
pub struct Engine {
    detectors: Vec<Entry>,
    table: [u64; 256],
    gates: Gates,
    /// [`CODE_POINTS`], built once per process.
    code_points: &'static CodePoints,
    /// Ungated detectors shown every value (not in [`FAMILIES`]).
    ungated_always: u64,
    /// Ungated detectors with a family, by the family's index in [`FAMILIES`] (at most 16).
    ungated_family: [u64; 16],
    /// The family bits of `ungated_family` that have some detector.
    ungated_families: u64,
    /// Per field kind: the detectors that judge it ([`Detector::applies_to`]; whole XML
    /// documents only go to the XML detectors).
    by_field: [u64; FIELD_KINDS],
    /// The detectors of the HTML family, which do not judge what decoding character
    /// references revealed in a value that is markup already ([`markup_document`]).
    html_family: u64,
    extractor: Extractor,
    config: EngineConfig,
}

/// Whether `raw` is HTML markup itself: a start tag and an end tag of an element
/// (`<p>...</p>`). A browser reads the character references in such a text's content as text
/// (`&lt;script&gt;` shows `<script>`), and those in its attribute values the HTML detector
/// decodes itself: the candidate in which they are all decoded is not what a browser parses.
pub(crate) fn markup_document(raw: &str) -> bool {
    let b = raw.as_bytes();
    let tag_at = |i: usize| b.get(i).is_some_and(|c| c.is_ascii_alphabetic());
    let Some(start) = memchr::memchr_iter(b'<', b).find(|&i| tag_at(i + 1)) else { return false };
    memchr::memmem::find_iter(&b[start..], b"</").any(|i| {
        let n = start + i + 2;
        let len = b[n..].iter().take_while(|c| c.is_ascii_alphanumeric()).count();
        len > 0 && tag_at(n) && b.get(n + len) == Some(&b'>')
    })
}

impl fmt::Debug for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Engine").field("detectors", &self.detector_names()).field("config", &self.config).finish()
    }
}

/// Most detectors an engine holds (bit sets of `u64`).
pub const MAX_DETECTORS: usize = 64;

impl Engine {
    /// The built-in detectors ([`crate::registry::detectors`]).
    pub fn new(config: EngineConfig) -> Result<Engine, String> {
        Engine::with_detectors(crate::registry::detectors(), config)
    }

    pub fn with_detectors(detectors: Vec<Box<dyn Detector>>, config: EngineConfig) -> Result<Engine, String> {
        if detectors.len() > MAX_DETECTORS {
            return Err(format!("{} detectors: an engine holds at most {MAX_DETECTORS}", detectors.len()));
        }
        let extractor = Extractor::new(&config.headers, config.limits)?;
        let declared: Vec<Option<Gate>> = detectors.iter().map(|d| d.gate()).collect();
        let shape_gates: Vec<Option<GateTest>> = detectors.iter().map(|d| d.product_token_gate()).collect();
        let word_gates: Vec<Option<GateTest>> = detectors.iter().map(|d| d.bare_word_gate()).collect();
        let plain_gates: Vec<Option<PlainGate>> = detectors.iter().map(|d| d.plain_gate()).collect();
        let gates = Gates::new(&declared, &shape_gates, &word_gates, &plain_gates);
        let (mut ungated_always, mut ungated_family, mut ungated_families, mut by_field) = (0u64, [0u64; 16], 0u64, [0u64; FIELD_KINDS]);
        let mut html_family = 0u64;
        let mut entries = Vec::with_capacity(detectors.len());
        for (i, det) in detectors.into_iter().enumerate() {
            let bit = 1u64 << i;
            let fam = family_of(det.name());
            let xml_document = fam.is_some() && fam == family_of("xxe");
            if gates.gated & bit == 0 {
                match fam {
                    Some(f) => {
                        ungated_family[f] |= bit;
                        ungated_families |= 1u64 << f;
                    }
                    None => ungated_always |= bit,
                }
            }
            for (k, slot) in by_field.iter_mut().enumerate() {
                let kind = FieldKind::ALL[k];
                if det.applies_to(kind) && (kind != FieldKind::XmlDocument || xml_document) {
                    *slot |= bit;
                }
            }
            if fam.is_some() && fam == family_of("xss") {
                html_family |= bit;
            }
            entries.push(Entry { det });
        }
        let table = class_table(&gates);
        Ok(Engine {
            detectors: entries,
            table,
            gates,
            code_points: &CODE_POINTS,
            ungated_always,
            ungated_family,
            ungated_families,
            by_field,
            html_family,
            extractor,
            config,
        })
    }

    pub fn detector_names(&self) -> Vec<&'static str> {
        self.detectors.iter().map(|e| e.det.name()).collect()
    }

    pub fn config(&self) -> &EngineConfig {
        &self.config
    }

    /// Scratch buffers sized for this engine.
    pub fn scratch(&self) -> Scratch {
        Scratch { decoder: Decoder::new(self.config.decode), extract: extract::Scratch::default(), memo: Memo::default() }
    }

    /// Both phases at the configured level, with fresh buffers (tests, tools). The proxy uses
    /// [`Engine::inspect_phase`] with per-worker scratch.
    pub fn inspect(&self, req: &RequestView<'_>) -> Vec<Finding> {
        let mut scratch = self.scratch();
        let mut report = Report::default();
        self.inspect_phase(req, Phase::Head, self.config.level, &mut scratch, &mut report);
        let head = std::mem::take(&mut report.findings);
        self.inspect_phase(req, Phase::Body, self.config.level, &mut scratch, &mut report);
        let mut all = head;
        all.append(&mut report.findings);
        all
    }

    /// Inspect one phase (head: path, query, headers, cookies; body: the body) into `report`
    /// (cleared first). A value that occurs again in the phase with the same field kind is
    /// judged once when it was clean the first time ([`Memo`]).
    pub fn inspect_phase(&self, req: &RequestView<'_>, phase: Phase, level: Level, scratch: &mut Scratch, report: &mut Report) {
        self.inspect_phase_with(req, phase, level, None, scratch, report)
    }

    /// [`Engine::inspect_phase`], with the values a protocol-aware stage took out of the
    /// request inspected in place of the parts they replace (a GraphQL body; the `query`,
    /// `variables`, `operationName` and `extensions` parameters of a GraphQL GET).
    pub fn inspect_phase_with(
        &self,
        req: &RequestView<'_>,
        phase: Phase,
        level: Level,
        protocol: Option<&palisade_core::ProtocolValues>,
        scratch: &mut Scratch,
        report: &mut Report,
    ) {
        self.inspect_into(req, phase, level, protocol, None, None, scratch, report)
    }

    /// [`Engine::inspect_phase_with`] with exclusions beyond the engine's own: a hit for
    /// which `excluded(detector, category, location)` holds is no finding, exactly like one
    /// the configured exclusions cover. Exclusions that depend on the request (user rules,
    /// path and operation policies) must be given here rather than filtered out of the
    /// report afterwards: findings stop at `max_findings`, and excluded hits counted there
    /// would hide the findings after them.
    ///
    /// `settled`: the strings of the body that a schema stage found settled by the spec
    /// ([`palisade_core::SettledStrings`]); they are counted against the limits but not
    /// inspected.
    #[allow(clippy::too_many_arguments)]
    pub fn inspect_phase_excluding(
        &self,
        req: &RequestView<'_>,
        phase: Phase,
        level: Level,
        protocol: Option<&palisade_core::ProtocolValues>,
        settled: Option<&palisade_core::SettledStrings>,
        excluded: &ExcludeFn<'_>,
        scratch: &mut Scratch,
        report: &mut Report,
    ) {
        self.inspect_into(req, phase, level, protocol, settled, Some(excluded), scratch, report)
    }

    #[allow(clippy::too_many_arguments)]
    fn inspect_into(
        &self,
        req: &RequestView<'_>,
        phase: Phase,
        level: Level,
        protocol: Option<&palisade_core::ProtocolValues>,
        settled: Option<&palisade_core::SettledStrings>,
        extra: Option<&ExcludeFn<'_>>,
        scratch: &mut Scratch,
        report: &mut Report,
    ) {
        report.clear();
        // Settled strings only concern the body as sent (the bytes the schema stage read).
        let settled = settled.filter(|s| phase == Phase::Body && !s.is_empty());
        let Scratch { decoder, extract, memo } = scratch;
        decoder.set_limits(self.config.decode);
        memo.reset();
        let findings = &mut report.findings;
        let mut f = |field: &extract::Field<'_>| {
            // A kind no detector judges is clean (without a look at the memo).
            if self.by_field[field.kind as usize] == 0 {
                return ControlFlow::Continue(true);
            }
            // A string of an `enum` or of a date, time or UUID format
            // in a body the schema stage found valid: text of the spec or of an alphabet that
            // carries no attack (see `SettledStrings`).
            if settled.is_some_and(|s| s.covers(req.body, field.value)) {
                return ControlFlow::Continue(true);
            }
            let kind = field.kind as u8;
            // JSON keys skip the memo: the extraction does not hand over again the keys of
            // the objects of an array ([`extract::Verdict`]), which are most repeated keys, so
            // that few keys of a body are found there (2 of 39 lookups per small.json body,
            // 15 of 57 per large.json body): a lookup and a remember cost more than the
            // judgements they spare.
            let slot = if field.kind == FieldKind::JsonKey {
                None
            } else {
                match memo.find(kind, field.value.as_bytes()) {
                    Ok(()) => return ControlFlow::Continue(true),
                    Err(slot) => slot,
                }
            };
            let before = findings.len();
            let mut excluded = Excluded { hit: false, extra };
            // A GraphQL or JSON document in the value: its parts ([`crate::embedded`]).
            let mut part = |sub: Option<&str>, kind: FieldKind, v: &str| match sub {
                None => self.scan(v, kind, &field.location, level, decoder, findings, &mut excluded),
                Some(p) => {
                    let at = format!("{}/{p}", field.location);
                    self.scan(v, kind, &Location::Named(&at), level, decoder, findings, &mut excluded)
                }
            };
            match crate::embedded::parts(field.value, field.kind, &mut part) {
                Some(r) => r?,
                None => self.scan(field.value, field.kind, &field.location, level, decoder, findings, &mut excluded)?,
            }
            // Clean: no finding and no exclusion (an excluded finding is clean only at this
            // location, so it must not be remembered).
            let clean = findings.len() == before && !excluded.hit;
            if let Some(slot) = slot.filter(|_| clean) {
                memo.remember(slot, field.value.as_bytes());
            }
            ControlFlow::Continue(clean)
        };
        let (counts, r) = match (phase, protocol) {
            (Phase::Head, Some(p)) if !p.replaces_query.is_empty() => {
                let mut skip = |field: &extract::Field<'_>| match field.location {
                    Location::Query(n) if p.replaces_query.iter().any(|q| q == n) => ControlFlow::Continue(true),
                    _ => f(field),
                };
                let (head, r) = self.extractor.head(req, extract, &mut skip);
                match r {
                    Ok(()) => {
                        let (more, r) = self.extractor.protocol_values(&p.values, &mut f);
                        (Counts { values: head.values + more.values, bytes: head.bytes + more.bytes, skipped: None }, r)
                    }
                    Err(e) => (head, Err(e)),
                }
            }
            (Phase::Body, Some(p)) if p.replaces_body => self.extractor.protocol_values(&p.values, &mut f),
            (Phase::Head, _) => self.extractor.head(req, extract, &mut f),
            (Phase::Body, _) => self.extractor.body(req, extract, &mut f),
        };
        report.counts = counts;
        if let Err(Stop::Exceeded(e)) = r {
            report.exceeded = Some(e);
        }
        // Context from the neighbours of a JSON body's values (code, markdown): only when a
        // value of the body has a finding.
        if phase == Phase::Body && !protocol.is_some_and(|p| p.replaces_body) && report.findings.iter().any(|f| f.field == FieldKind::JsonValue) {
            let body = extract.inflated_body().unwrap_or(req.body);
            crate::context::judge_json_findings(self, body, level, decoder, &mut report.findings);
        }
    }

    /// The detectors' findings on `text` as a value of `kind` (at `location`), at `level`:
    /// what [`Engine::inspect_value`] gives, with this engine's decoder.
    pub(crate) fn findings_on(&self, text: &str, kind: FieldKind, location: &str, level: Level, dec: &mut Decoder) -> Vec<Finding> {
        let mut out = Vec::new();
        let segs = [extract::Seg::Key(std::borrow::Cow::Borrowed(location))];
        let _ = self.scan(text, kind, &Location::Json(&segs), level, dec, &mut out, &mut Excluded { hit: false, extra: None });
        out
    }

    /// Inspect one value (corpus evaluation, benchmarks, tests).
    pub fn inspect_value(&self, value: &str, kind: FieldKind, location: &Location<'_>, level: Level, scratch: &mut Scratch, findings: &mut Vec<Finding>) {
        let _ = self.scan(value, kind, location, level, &mut scratch.decoder, findings, &mut Excluded { hit: false, extra: None });
    }

    /// Class bits ([`FAMILIES`], decoding, test bytes), the gates the bytes open (and the
    /// non-ASCII characters, by [`CodePoint`]) and those the literals open ([`Pairs`]), in
    /// one pass over the bytes (the literals are no longer looked for once every gate with
    /// literals is open). When the gates fit in the unused bits of the class table
    /// ([`Gates::packed`]), one lookup per byte gives both.
    #[inline(always)]
    fn classify(&self, s: &str) -> Classes {
        let b = s.as_bytes();
        let (mut m, mut g, lit);
        match &self.gates.lits {
            Some(l) if self.gates.packed => {
                let p;
                (p, lit) = self.classify_packed(b, l);
                (m, g) = (p & !PACKED_GATES, unpack_gates(p));
            }
            Some(l) => {
                (m, g) = self.byte_classes_each(b);
                lit = if self.gates.literal & !g != 0 { l.walk(b, g, self.gates.literal) } else { 0 };
            }
            None => ((m, g), lit) = (self.byte_classes_each(b), 0),
        }
        if m & NON_ASCII != 0 {
            self.classify_non_ascii(s, &mut m, &mut g);
        }
        Classes { mask: m, open: g, lits: lit }
    }

    /// The bits of [`Gates::packed_table`] of the bytes of `b` (class bits and gates, packed)
    /// and the gates the literals open ([`Pairs`]), fused: per byte one lookup of its bits,
    /// one of its class, and a test of the bit of the pair it ends; on a set bit, the classes
    /// of the bytes around the pair are filtered ([`Pairs::wants`]) and the literals that pass
    /// compared with the bytes there ([`Pairs::matched`], out of the loop). Once every
    /// gate with literals is open, the bytes left are only or-ed.
    #[inline(always)]
    fn classify_packed(&self, b: &[u8], l: &Pairs) -> (u64, u64) {
        let bits = &self.gates.packed_table;
        let all = self.gates.literal;
        let Some(&c0) = b.first() else { return (0, 0) };
        let (mut p, mut lit) = (bits[c0 as usize], 0u64);
        // The class of the byte before and its row of pairs.
        let mut f = l.fold[c0 as usize];
        let mut r = l.rows[f as usize];
        // The byte at `i` (from 1 on): its bits, and the pair it ends (`i - 1`, `i`), with the
        // byte after it, if any.
        macro_rules! step {
            ($c:expr, $i:expr) => {{
                p |= bits[$c as usize];
                let g = l.fold[$c as usize];
                if r >> (g & 63) & 1 != 0 {
                    let k = l.rank(f, g);
                    let have = unpack_gates(p);
                    if l.wants(k, b, $i - 1, have | lit) {
                        lit = l.matched(b, $i - 1, k, lit, have);
                        if all & !(lit | have) == 0 {
                            for &c in b.get($i + 1..).unwrap_or_default() {
                                p |= bits[c as usize];
                            }
                            return (p, lit);
                        }
                    }
                }
                r = l.rows[g as usize];
                f = g;
            }};
        }
        let rest = b.get(1..).unwrap_or_default();
        let quads = rest.chunks_exact(4);
        let tail = quads.remainder();
        for (k, q) in quads.enumerate() {
            let i = 4 * k + 1;
            step!(q[0], i);
            step!(q[1], i + 1);
            step!(q[2], i + 2);
            step!(q[3], i + 3);
        }
        let i = b.len() - tail.len();
        for (k, &c) in tail.iter().enumerate() {
            step!(c, i + k);
        }
        // A literal of one byte at the end.
        if r & 1 != 0 {
            let k = l.rank(f, 0);
            if l.wants(k, b, b.len() - 1, unpack_gates(p) | lit) {
                lit = l.matched(b, b.len() - 1, k, lit, unpack_gates(p));
            }
        }
        (p, lit)
    }

    /// The class bits and gates of the bytes of `b`, one lookup per byte.
    #[inline]
    fn byte_classes_each(&self, b: &[u8]) -> (u64, u64) {
        let (mut m, mut g) = (0, 0);
        for &c in b {
            m |= self.table[c as usize];
            g |= self.gates.bytes[c as usize];
        }
        (m, g)
    }

    /// Adds the class bits and gates of the non-ASCII characters of `s` ([`CodePoint`]).
    #[inline(never)]
    fn classify_non_ascii(&self, s: &str, m: &mut u64, g: &mut u64) {
        for c in s.chars().filter(|c| !c.is_ascii()) {
            if decode::is_invisible(c) {
                // Removed by the decoder: the text without it may open anything.
                *m |= DECODE | ALL_FAMILIES;
                *g |= self.gates.gated;
                return;
            }
            match self.code_points.class(c) {
                CodePoint::Letter => {}
                CodePoint::Fold(b) => {
                    // Not the [`Gate::test_only`] bits: those concern ASCII bytes only.
                    *m |= self.table[b as usize] & !(u64::MAX << ONLY_SHIFT);
                    *g |= self.gates.bytes[b as usize];
                }
                CodePoint::Open => {
                    *m |= ALL_FAMILIES;
                    *g |= self.gates.gated;
                    return;
                }
            }
        }
    }

    /// The detectors the pre-filters let see a text with class bits `mask` that opened the
    /// gates `admit`.
    #[inline]
    fn admitted_set(&self, mask: u64, admit: u64) -> u64 {
        let mut m = (admit & self.gates.gated) | self.ungated_always;
        let mut fams = mask & self.ungated_families;
        while fams != 0 {
            m |= self.ungated_family[fams.trailing_zeros() as usize % 16];
            fams &= fams - 1;
        }
        m
    }

    /// The detectors the pre-filters let see a text `t` of classes `c` ([`Engine::classify`]).
    /// A text in the product-token shape ([`crate::shape`]) is judged
    /// by the [`Detector::product_token_gate`]s where declared, and shows the ungated family
    /// detectors nothing: the shape's punctuation carries no LDAP filter (no `=`, `*`, `&`,
    /// `|`, `!`, NUL, and `)(` cannot occur) and no XML.
    #[inline(always)]
    fn todo(&self, t: &str, c: Classes) -> u64 {
        let (mask, open) = (c.mask, c.open | c.lits);
        if mask & (NOT_SHAPE | SLASH) == SLASH && crate::shape::product_tokens(t) {
            (self.gates.admit_shaped(t, open, mask) & self.gates.gated) | self.ungated_always
        } else {
            self.admitted_set(mask, self.gates.admit(t, open, mask))
        }
    }

    /// Names of the detectors the pre-filters (gates, or family bits for detectors without a
    /// gate) let see `t` as a candidate (tests and tools: the soundness check of the gates).
    pub fn admitted(&self, t: &str) -> Vec<&'static str> {
        let set = self.todo(t, self.classify(t));
        self.detectors.iter().enumerate().filter(|(i, _)| set & (1u64 << i) != 0).map(|(_, e)| e.det.name()).collect()
    }

    /// Judges `raw` into `out`. The common case, a value with nothing to decode whose
    /// pre-filters admit no detector, ends here (inlined in the callers); the rest
    /// ([`Engine::scan_rest`]) is out of line, so that this path keeps its few values in
    /// registers.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn scan(
        &self,
        raw: &str,
        kind: FieldKind,
        loc: &Location<'_>,
        level: Level,
        dec: &mut Decoder,
        out: &mut Vec<Finding>,
        excluded: &mut Excluded<'_>,
    ) -> ControlFlow<()> {
        let applies = self.by_field[kind as usize];
        if applies == 0 {
            return ControlFlow::Continue(());
        }
        let classes = self.classify(raw);
        let mask = classes.mask;
        let may_b64 = mask & NON_B64 == 0 && raw.len() >= BASE64_MIN_LEN;
        let todo = if mask & DECODE == 0 && !may_b64 {
            let todo = self.todo(raw, classes) & applies;
            if todo == 0 {
                return ControlFlow::Continue(());
            }
            Some(todo)
        } else {
            None
        };
        self.scan_rest(raw, kind, loc, level, dec, out, excluded, classes, todo)
    }

    /// [`Engine::scan`] past the pre-filters: `todo` holds the detectors to run on the raw value
    /// when it has nothing to decode, else (`None`) the value is decoded into candidates.
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    fn scan_rest(
        &self,
        raw: &str,
        kind: FieldKind,
        loc: &Location<'_>,
        level: Level,
        dec: &mut Decoder,
        out: &mut Vec<Finding>,
        excluded: &mut Excluded<'_>,
        classes: Classes,
        todo: Option<u64>,
    ) -> ControlFlow<()> {
        let applies = self.by_field[kind as usize];
        let mut fired = 0u64;
        let mut location: Option<String> = None;
        if let Some(todo) = todo {
            let input = Input { raw, decoded: raw, field: kind };
            return self.run(&input, todo, Transforms::NONE, level, loc, &mut location, &mut fired, out, excluded);
        }
        let cands = decode_by_classes(dec, raw, classes.mask);
        // The raw value first, then the derived candidates ([`decode::Candidates::iter`], each
        // taken in turn here rather than through that chain of iterators).
        let todo = self.todo(raw, classes) & applies;
        if todo != 0 {
            let input = Input { raw, decoded: raw, field: kind };
            self.run(&input, todo, Transforms::NONE, level, loc, &mut location, &mut fired, out, excluded)?;
        }
        let markup = self.html_family != 0 && markup_document(raw);
        for c in cands.derived().into_iter().flatten() {
            let mut todo = self.todo(c.text, self.classify(c.text)) & applies;
            if markup && c.transforms.contains(Transforms::HTML) {
                todo &= !self.html_family;
            }
            if todo & !fired == 0 {
                continue;
            }
            // The raw value is the first candidate and every detector has judged it already:
            // a derived candidate is shown alone (detectors that also look at `raw` would
            // only repeat that work).
            let input = Input { raw: c.text, decoded: c.text, field: kind };
            self.run(&input, todo, c.transforms, level, loc, &mut location, &mut fired, out, excluded)?;
        }
        ControlFlow::Continue(())
    }

    /// Runs the detectors of the set `todo` (minus those that `fired` already on this value).
    #[allow(clippy::too_many_arguments)]
    fn run(
        &self,
        input: &Input<'_>,
        todo: u64,
        transforms: Transforms,
        level: Level,
        loc: &Location<'_>,
        location: &mut Option<String>,
        fired: &mut u64,
        out: &mut Vec<Finding>,
        excluded: &mut Excluded<'_>,
    ) -> ControlFlow<()> {
        let threshold = threshold(level);
        let mut todo = todo & !*fired;
        while todo != 0 {
            let i = todo.trailing_zeros() as usize;
            todo &= todo - 1;
            let e = &self.detectors[i];
            let Some(mut hit) = e.det.check(input, level) else { continue };
            if hit.confidence < threshold {
                continue;
            }
            // A search box's text, a `Referer`, a redirect target: judged again in that role.
            let judged = if self.config.roles.free_text(loc, input.field) {
                e.det.in_free_text(input, hit, level)
            } else if self.config.roles.redirect_target(loc, input.field) {
                e.det.in_redirect_target(input, hit, level)
            } else {
                Some(hit)
            };
            match judged {
                Some(h) if h.confidence >= threshold => hit = h,
                _ => continue,
            }
            let loc_str = location.get_or_insert_with(|| loc.to_string());
            if self.config.exclusions.iter().any(|x| x.covers(hit.detector, hit.category, loc_str))
                || excluded.extra.is_some_and(|f| f(hit.detector, hit.category, loc_str))
            {
                excluded.hit = true;
                continue;
            }
            *fired |= 1u64 << i;
            out.push(Finding {
                detector: hit.detector,
                category: hit.category,
                confidence: hit.confidence,
                location: loc_str.clone(),
                field: input.field,
                fragment: crate::truncate(&hit.fragment, 64).to_string(),
                why: hit.why,
                transforms,
            });
            if out.len() >= self.config.max_findings {
                return ControlFlow::Break(());
            }
        }
        ControlFlow::Continue(())
    }
}
