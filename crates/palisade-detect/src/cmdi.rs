//! OS command injection, by a shell tokenizer.
//!
//! The value is lexed the way `sh` and `cmd.exe` would split it: words (with quotes, `\`
//! and `^` escapes and `$@`/`$1` empty expansions removed, `${IFS}` as a blank, brace
//! expansion `{cat,/etc/passwd}` as words) and operators (`;`, `|`, `||`, `&`, `&&`, newline,
//! `$(`, backticks, `(`, `)`, redirections). A word in *command position* (start, after a
//! separator or inside a substitution) that names a known program or builtin is the core
//! evidence; how strong it is depends on the separator (a value that starts with `;` or `|`
//! is not prose), on whether the word is also an English word (`cat`, `type`, `more`), and on
//! whether its arguments look like shell arguments (flags, paths, redirections, end of input).
//! Prose with semicolons and the words "cat" or "ls" therefore stays below the threshold.

use crate::other_util::{best, gate, has_pct, mk, pct_decode, step, Anchors, WordSigs};
use crate::{Category, Detector, Gate, Hit, Input, Level};
use aho_corasick::{AhoCorasick, AhoCorasickKind, MatchKind};
use smallvec::SmallVec;
use std::borrow::Cow;
use std::sync::LazyLock;

const NAME: &str = "cmdi";

pub struct CmdiDetector;

pub fn detector() -> Box<dyn Detector> {
    LazyLock::force(&SPECIAL_ANCHORS);
    LazyLock::force(&SPECIAL_SEARCH);
    LazyLock::force(&SORTED_PROGRAMS);
    LazyLock::force(&PROGRAM_SHAPES);
    LazyLock::force(&SORTED_AMBIGUOUS);
    LazyLock::force(&UNAMBIGUOUS_SHAPES);
    Box::new(CmdiDetector)
}

/// Literals every [`specials`] pattern contains (also in its `+`-for-blank reading). The
/// Shellshock pattern `() {` is its own literal (and `()+{`): `()` alone would open the gate
/// (and the full analysis) on every function call in prose, `DATEPART() in SQL`.
/// The check's other views cannot make a `() {` the value does not hold: the `+` reading is
/// `()+{`, `%` opens the gate, and [`unescape_view`] replaces each escape by a character,
/// deleting none (`tests::shellshock_needs_its_literal`).
const SPECIAL_LITERALS: &[&str] = &[
    "-oproxycommand",
    "-olocalcommand",
    "-o proxycommand",
    "-o localcommand",
    "-o+proxycommand",
    "-o+localcommand",
    "--upload-pack",
    "--receive-pack",
    "--checkpoint-action",
    "--use-compress-program",
    "--to-command",
    "() {",
    "()+{",
    "<!--#exec",
    "/dev/",
    "%comspec%",
    "invoke-",
    "downloadstring",
    "downloadfile",
    "net.webclient",
    "start-process",
    "frombase64string",
    "iex",
    "powershell",
    "pwsh",
    "cmd",
    "/bin/",
    "sh -i",
    "sh+-i",
];

static SPECIAL_ANCHORS: LazyLock<Anchors> = LazyLock::new(|| Anchors::new(SPECIAL_LITERALS));

/// The pre-filter declared to the engine ([`Gate`]): exactly [`CmdiDetector::check`]'s own
/// (`%` for residual escapes, the [`specials`] anchors, [`gate_test`]: a program in command
/// position, or for a bare word, an unambiguous program). The test says yes only on a
/// program name (each holds an ASCII letter: `tests::every_program_holds_a_letter`), a glob
/// path (`/`), ANSI-C quoting (`$`) or a breakout probe (separators, quotes, a literal `\n`):
/// [`GATE_TEST_BYTES`]. Numbers, phone numbers and other values without a letter skip it.
const GATE: Gate = Gate { bytes: "%", anchors: SPECIAL_LITERALS, words: &[], test: Some(gate_test_or_probe), test_bytes: GATE_TEST_BYTES, test_only: "" };

/// The [`Gate::test_bytes`] of [`GATE`]: ASCII letters and the bytes of [`breakout_shape`]
/// and [`hidden_program`].
const GATE_TEST_BYTES: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz;|&`\n\r'\"\\/$";

/// [`gate_test`], or the shape of [`breakout_probe`] (a short value: one comparison of the
/// length for every other value). `gate_tests` checks it is sound: it admits every value
/// the check reports.
fn gate_test_or_probe(d: &str) -> bool {
    breakout_shape(d) || gate_test(d)
}

/// [`gate_test_or_probe`] for a value with no [`NOT_PLAIN`] byte (the operators, backtick and
/// newlines included, `$`, `\`, the quotes, `^` and `/`): such a value is no breakout probe
/// (it holds no separator or quote) and only its first word can be in command position
/// ([`plain_or_walk`]'s plain path), so its first 21 bytes at most are read, whatever its
/// length. The engine knows from its byte pass whether a value holds one of
/// [`NOT_PLAIN_BYTES`] and calls this instead of the test ([`Detector::plain_gate`], as it calls
/// [`gate_bare_word`] for bare words), which reads the whole value to find that out.
/// `gate_tests::plain_gate_agrees_with_the_test` compares both, and
/// `tests::not_plain_bytes_are_the_class` checks [`NOT_PLAIN_BYTES`].
pub(crate) fn gate_plain(d: &str) -> bool {
    let b = d.as_bytes();
    let mut i = 0;
    while i < b.len() && PLAIN_CLASS[b[i] as usize] == BLANK {
        i += 1;
    }
    let start = i;
    // A word of more than 20 bytes names no program: 21 bytes tell.
    let end = run_end(&PLAIN_WORD, b, i, b.len().min(start + 21));
    known_program_raw(&b[start..end]) && if is_bare(b) { bare_program(b) } else { !harmless_prose(b) }
}

/// The [`NOT_PLAIN`] bytes of [`PLAIN_CLASS`] ([`MAY_OPERATE`]'s and `'"^/`), declared with
/// [`gate_plain`] ([`Detector::plain_gate`]).
const NOT_PLAIN_BYTES: &str = ";|&`(){}<>\n\r$\\'\"^/";

#[cfg(test)]
mod plain_gate_tests {
    use super::*;

    /// [`NOT_PLAIN_BYTES`] holds exactly the bytes of class [`NOT_PLAIN`].
    #[test]
    fn not_plain_bytes_are_the_class() {
        for c in 0..=255u8 {
            assert_eq!(NOT_PLAIN_BYTES.as_bytes().contains(&c), PLAIN_CLASS[c as usize] == NOT_PLAIN, "{c}");
        }
    }
}

/// [`gate_test_or_probe`] for a bare word (ASCII letters, digits and `_` only, which the
/// engine knows from its byte pass: [`Detector::bare_word_gate`]): no breakout probe starts
/// with a word byte, and [`gate_test`] judges a bare word by [`bare_program`] (one of more
/// than 64 bytes, or empty, is no program either: [`known_program_raw`] takes at most 20).
/// `gate_tests::bare_word_gate_agrees_with_the_test` compares both.
fn gate_bare_word(d: &str) -> bool {
    let b = d.as_bytes();
    let n = b.len();
    if n == 0 || n > UNAMBIGUOUS_MAX {
        return false;
    }
    // (Two two-byte loads: the key of [`bare_key`] from the first and the last two bytes.)
    let k = if n > 1 { bare_key_pairs(u16::from_le_bytes([b[0], b[1]]), u16::from_le_bytes([b[n - 2], b[n - 1]]), n) } else { bare_key(b[0], 0, 0, b[0], 1) };
    let (s0, s1) = (bare_sig(k, BARE_MUL[0]), bare_sig(k, BARE_MUL[1]));
    BARE_SIGS[0][s0 / 64] >> (s0 % 64) & 1 != 0 && BARE_SIGS[1][s1 / 64] >> (s1 % 64) & 1 != 0 && lowercase_is_unambiguous(b)
}

/// [`bare_key`] of a word of `n` bytes (2 to [`UNAMBIGUOUS_MAX`]) whose first two bytes are
/// `head` and last two `tail` (little-endian: `a | b << 8`, `y | z << 8`): the same bits,
/// from two loads instead of four.
#[inline(always)]
const fn bare_key_pairs(head: u16, tail: u16, n: usize) -> u32 {
    let (head, tail) = ((head | 0x2020) as u32, (tail | 0x2020) as u32);
    head | (tail >> 8) << 16 | ((tail & 0x1F) | (n as u32) << 5) << 24
}

/// The key of a word of `n` bytes (1 to [`UNAMBIGUOUS_MAX`]) whose first, second, last but one
/// and last bytes are `a`, `b`, `y`, `z` (a word of one byte: `a`, 0, 0, `a`), for
/// [`BARE_SIGS`]: a function of the word's ASCII lowercase (each byte is read with its `0x20`
/// bit set), so that a word and a program equal to it lowercased have the same key. The last
/// byte but one tells `user_id` from `useradd`.
#[inline(always)]
const fn bare_key(a: u8, b: u8, y: u8, z: u8, n: usize) -> u32 {
    (a | 0x20) as u32 | ((b | 0x20) as u32) << 8 | ((z | 0x20) as u32) << 16 | (((y | 0x20) & 0x1F) as u32 | (n as u32) << 5) << 24
}

/// The signature of the key `k` ([`bare_key`]) in the bitmap of the multiplier `mul`: 11 bits.
#[inline(always)]
const fn bare_sig(k: u32, mul: u32) -> usize {
    (k.wrapping_mul(mul) >> 21) as usize
}

/// The multipliers of the two bitmaps of [`BARE_SIGS`]. Alone, either lets ~4% of the distinct
/// words of the benign sets through (216 of 5,661 with the first), each then costing a search
/// of the programs; together 20 of the 67,229 words of those sets.
const BARE_MUL: [u32; 2] = [0xC2B2_AE35, 0x9E37_79B1];

/// The signatures ([`bare_sig`]) of the [`PROGRAMS`] that are not [`AMBIGUOUS`] (those
/// [`bare_program`] reports), in two bitmaps of 2048 bits (256 bytes each) built at compile
/// time: [`gate_bare_word`] looks a bare word up in both, and only when both bits are set
/// searches the programs.
static BARE_SIGS: [[u64; 32]; 2] = {
    let mut t = [[0u64; 32]; 2];
    let mut i = 0;
    while i < PROGRAMS.len() {
        let p = PROGRAMS[i].as_bytes();
        let mut ambiguous = false;
        let mut j = 0;
        while j < AMBIGUOUS.len() {
            ambiguous |= same_const(p, AMBIGUOUS[j].as_bytes());
            j += 1;
        }
        if !ambiguous && !p.is_empty() && p.len() <= UNAMBIGUOUS_MAX {
            let n = p.len();
            let k = if n > 1 { bare_key(p[0], p[1], p[n - 2], p[n - 1], n) } else { bare_key(p[0], 0, 0, p[0], 1) };
            let mut m = 0;
            while m < 2 {
                let sig = bare_sig(k, BARE_MUL[m]);
                t[m][sig / 64] |= 1 << (sig % 64);
                m += 1;
            }
        }
        i += 1;
    }
    t
};

/// `a == b`, in a constant.
const fn same_const(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// A value that is nothing but a shell separator or quotes, with blanks: `;`, `| `, `&&`,
/// `||`, `&`, a backtick, a newline (raw, or written `\n`/`\r` after one escaping layer),
/// `'`, `"`, `'"` (not `''` or `""`, an empty string written out). Appended to a command line, a separator ends the application's command
/// and a quote leaves its string: these are the probes that test for command injection (an
/// error or a changed answer), and a value carries nothing else. Strict level only (45): a
/// lone `;` or `|` is also a delimiter someone picks in a settings form, a lone quote a typo.
fn breakout_probe(d: &str) -> Option<Hit> {
    breakout_shape(d).then(|| mk(NAME, Category::Cmdi, 45, d, "shell separator or quote alone (injection probe)"))
}

/// Whether [`breakout_probe`] reports `d`, without building its hit. Most short values (keys,
/// numbers, words) start with a letter or digit: one look, inlined in the gate.
#[inline]
fn breakout_shape(d: &str) -> bool {
    d.len() <= 8
        && d.as_bytes().first().is_some_and(|c| matches!(c, b' ' | b'\t' | b';' | b'|' | b'&' | b'`' | b'\n' | b'\r' | b'\'' | b'"' | b'\\'))
        && breakout_rest(d)
}

/// [`breakout_shape`] past its first look.
fn breakout_rest(d: &str) -> bool {
    let t = d.trim_matches(|c: char| c == ' ' || c == '\t');
    let mut b = t.as_bytes();
    if b.is_empty() {
        return false;
    }
    let (mut seps, mut quotes) = (0, 0);
    while let Some(&c) = b.first() {
        match c {
            b';' | b'|' | b'&' | b'`' | b'\n' | b'\r' => seps += 1,
            b'\'' | b'"' => quotes += 1,
            b'\\' if matches!(b.get(1), Some(b'n' | b'r')) => {
                seps += 1;
                b = &b[1..];
            }
            _ => return false,
        }
        b = &b[1..];
    }
    // `''` and `""` are an empty string written out, not a breakout.
    let empty_string = seps == 0 && quotes == 2 && t.as_bytes()[0] == t.as_bytes()[1];
    seps + quotes <= 3 && !empty_string
}

/// The structural test of [`GATE`], run when no `%` and no special anchor occurs. A bare word
/// (1 to 64 ASCII letters, digits and `_`: most JSON keys and many values, `id`, `source`,
/// `created_at`) is reported by no check ([`bare_word`]); the test admits an unambiguous
/// program among them, with one signature lookup for most words (so `id` or `date` reach no
/// detector). Any other value: a program in command
/// position ([`program_in_command_position`], what [`may_hold_command`] adds to the anchors),
/// unless the value is prose that starts with an ambiguous program, which the check cannot
/// report ([`harmless_prose`], looked at only once a program is found).
/// `tests::gate_test_agrees_with_bare_word` compares both.
///
/// The value is not read first to tell a bare word: [`plain_or_walk`] finds every
/// [`bare_program`] (a bare word of at most 20 bytes is its own first word, with no
/// [`NOT_PLAIN`] byte, and a program lowercased), so whether the value is a bare word is asked
/// only after a yes (`gate_tests::gate_is_sound_on_every_corpus_value`,
/// `gate_is_sound_on_generated_values` check the composition with the bare word read first).
#[inline]
fn gate_test(d: &str) -> bool {
    let b = d.as_bytes();
    plain_or_walk(b, 0) && if is_bare(b) { bare_program(b) } else { !harmless_prose(b) }
}

/// Whether `b` is a bare word of 1 to 64 bytes ([`WORD_BYTE`]s only), which [`gate_test`]
/// judges by [`bare_program`].
#[cold]
#[inline(never)]
fn is_bare(b: &[u8]) -> bool {
    !b.is_empty() && b.len() <= 64 && b.iter().all(|&c| WORD_BYTE[c as usize] != 0)
}

/// Whether `b`, a value that is not a bare word and in which [`plain_or_walk`] found a program
/// in command position, is prose [`check`](CmdiDetector::check) reports nothing for whatever
/// that program is: ASCII letters and spaces only, two words or more, the first an
/// [`AMBIGUOUS`] program (lowercased) other than the ones [`analyse`] can still report with
/// plain words after them ([`known_subcommand`]'s `net`, `reg`, `netsh`, `which`, `type`,
/// `whereis`, and the timing probes `sleep`, `ping`, `timeout`): `Set site url from admin
/// panel` (a topic title), whose full analysis would find nothing.
///
/// [`lex`] reads such a value as words with no operator, no quote, no escape and no `$`: the
/// first word is the only one in command position, at the start ([`Sep::Start`]), ambiguous,
/// without a path and not obfuscated; its arguments are letters only, so none is a
/// [`shellish_arg`], a redirection or `$IFS`, and there is no `+`, `%` or `\` for the other
/// views of the check, nor a special anchor (the engine opens the gate on those itself).
/// [`Sep::Start`] gives 0 to an ambiguous program with such arguments
/// (`gate_tests::harmless_prose_is_not_reported`).
#[cold]
#[inline(never)]
fn harmless_prose(b: &[u8]) -> bool {
    if !b.iter().all(|&c| c.is_ascii_alphabetic() || c == b' ') {
        return false;
    }
    let mut words = b.split(|&c| c == b' ').filter(|w| !w.is_empty());
    let (Some(first), Some(_)) = (words.next(), words.next()) else { return false };
    let mut buf = [0u8; UNAMBIGUOUS_MAX];
    let Some(lc) = buf.get_mut(..first.len()) else { return false };
    lc.copy_from_slice(first);
    lc.make_ascii_lowercase();
    let Ok(w) = std::str::from_utf8(lc) else { return false };
    is_ambiguous(w) && !matches!(w, "net" | "reg" | "netsh" | "which" | "type" | "whereis" | "sleep" | "ping" | "timeout")
}

/// ASCII letters, digits and `_` (the bytes of [`bare_word`]'s words).
static WORD_BYTE: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut c = 0;
    while c < 256 {
        t[c] = ((c as u8).is_ascii_alphanumeric() || c == b'_' as usize) as u8;
        c += 1;
    }
    t
};

/// The first offset at or after `j` and before `stop` (`stop` if none) whose byte `c` has
/// `t[c] == 0`: eight table lookups per test.
#[inline]
fn run_end(t: &[u8; 256], b: &[u8], mut j: usize, stop: usize) -> usize {
    let stop = stop.min(b.len());
    while j + 8 <= stop {
        let c = &b[j..j + 8];
        if t[c[0] as usize] & t[c[1] as usize] & t[c[2] as usize] & t[c[3] as usize] & t[c[4] as usize] & t[c[5] as usize] & t[c[6] as usize] & t[c[7] as usize]
            == 0
        {
            break;
        }
        j += 8;
    }
    while j < stop && t[b[j] as usize] != 0 {
        j += 1;
    }
    j
}

/// The word bytes of [`PLAIN_CLASS`] (class 0), as 1.
static PLAIN_WORD: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut c = 0;
    while c < 256 {
        t[c] = (PLAIN_CLASS[c] == 0) as u8;
        c += 1;
    }
    t
};

/// Whether the bare word `b` (ASCII letters, digits, `_`; at most 64 bytes) is, lowercased, a
/// program that is not ambiguous. The signature table and the
/// sorted list hold only the unambiguous programs ([`UNAMBIGUOUS_PROGRAMS`]): an ambiguous
/// program (`id`, `source`, `date`: common keys) is rejected by the signature, with no copy
/// and no search. `gate_tests::bare_program_is_an_unambiguous_program` compares it with
/// the lists.
#[inline]
fn bare_program(b: &[u8]) -> bool {
    b.len() <= UNAMBIGUOUS_MAX && UNAMBIGUOUS_SHAPES.may_contain_lowercase_of(b) && lowercase_is_unambiguous(b)
}

/// Whether `w` (at most [`UNAMBIGUOUS_MAX`] bytes), lowercased, is one of the
/// [`UNAMBIGUOUS_PROGRAMS`].
#[inline(never)]
fn lowercase_is_unambiguous(w: &[u8]) -> bool {
    let mut buf = [0u8; UNAMBIGUOUS_MAX];
    let Some(lc) = buf.get_mut(..w.len()) else { return false };
    lc.copy_from_slice(w);
    lc.make_ascii_lowercase();
    UNAMBIGUOUS_PROGRAMS.binary_search_by(|p| p.as_bytes().cmp(lc)).is_ok()
}

/// The longest program name (`tests::unambiguous_programs_fit` checks it): a longer bare word
/// is no program.
const UNAMBIGUOUS_MAX: usize = 20;

/// The [`PROGRAMS`] that are not [`AMBIGUOUS`], sorted.
static UNAMBIGUOUS_PROGRAMS: LazyLock<Vec<&'static str>> = LazyLock::new(|| {
    let mut v: Vec<&'static str> = PROGRAMS.iter().copied().filter(|p| !AMBIGUOUS.contains(p)).collect();
    v.sort_unstable();
    v.dedup();
    v
});

/// The signatures of [`UNAMBIGUOUS_PROGRAMS`].
static UNAMBIGUOUS_SHAPES: LazyLock<WordSigs> = LazyLock::new(|| WordSigs::new(UNAMBIGUOUS_PROGRAMS.iter().map(|p| p.as_bytes())));

static SORTED_PROGRAMS: LazyLock<Vec<&'static str>> = LazyLock::new(|| {
    let mut v = PROGRAMS.to_vec();
    v.sort_unstable();
    v.dedup();
    v
});

/// The pre-filter: whether [`analyse`] could fire on `d` or on its `+`/`\n` readings. It can
/// only when a [`specials`] anchor occurs or when a known program stands in *command
/// position* (start of the value, after an operator, a substitution or a lone quote), so one
/// pass over the bytes with no allocation finds the words in command position, normalises
/// them the way [`lex`] does (quotes, `^`, `$@`/`$1` dropped; base name after `/` or `\`;
/// `\` inside a word dropped; `.exe` cut) and looks them up. A superset of the tokenizer's
/// command positions: operators split words wherever they are, `+` and `$IFS` are blanks.
fn may_hold_command(d: &str) -> bool {
    SPECIAL_ANCHORS.any(d) || program_in_command_position(d)
}

/// The structural half of [`may_hold_command`].
fn program_in_command_position(d: &str) -> bool {
    plain_or_walk(d.as_bytes(), 0)
}

/// Classes of bytes for [`plain_or_walk`]: a word byte (0), one of the walk's
/// blanks ([`BLANK`]: whitespace but `\n` and `\r`, `+`, `,`), or a byte after which
/// [`command_position_walk`] reads a value as more than blank-separated plain words
/// ([`NOT_PLAIN`]: the operators and escapes of [`MAY_OPERATE`], the quotes and `^` it drops
/// from words, `/` for base names and glob paths).
static PLAIN_CLASS: [u8; 256] = {
    let mut t = [0u8; 256];
    let blanks = b" \t\x0c+,";
    let mut k = 0;
    while k < blanks.len() {
        t[blanks[k] as usize] = BLANK;
        k += 1;
    }
    let mut c = 0;
    while c < 256 {
        if MAY_OPERATE[c] {
            t[c] = NOT_PLAIN;
        }
        c += 1;
    }
    let more = b"'\"^/";
    k = 0;
    while k < more.len() {
        t[more[k] as usize] = NOT_PLAIN;
        k += 1;
    }
    t
};
const BLANK: u8 = 1;
const NOT_PLAIN: u8 = 2;

/// Whether a known program stands in command position in `b` (what [`command_position_walk`]
/// answers), whose first `known` bytes are known to be [`WORD_BYTE`]s (word bytes of
/// [`PLAIN_CLASS`]): they are not read again.
///
/// Most values (prose, slugs, dates, names, e-mail addresses) have no [`NOT_PLAIN`] byte:
/// only their first word is in command position (no operator ever puts another one there),
/// and that word is read as written (nothing to drop, no base name, no glob path), so one
/// table lookup per byte finds it and checks the rest. A value with a [`NOT_PLAIN`] byte whose
/// first word ends at a blank or an operator (prose with an apostrophe or a parenthesis) is
/// walked from its first [`NOT_PLAIN`] byte: the walk would have read that same first word,
/// then skipped to the next operator, and no operator comes before a [`NOT_PLAIN`] byte
/// ([`MAY_OPERATE`] bytes are [`NOT_PLAIN`]). Any other value is walked from its start.
#[inline(always)]
fn plain_or_walk(b: &[u8], known: usize) -> bool {
    let mut i = 0;
    while i < b.len() && PLAIN_CLASS[b[i] as usize] == BLANK {
        i += 1;
    }
    let start = i;
    i = i.max(known);
    // The first word, to its end: a value with no blank and no [`NOT_PLAIN`] byte (a date, a
    // slug, a hash) is read once, to its end, in this one run. (A word of more than 20 bytes
    // names no program: [`known_program_raw`] rejects it by its length.)
    i = run_end(&PLAIN_WORD, b, i, b.len());
    let word = &b[start..i];
    if i == b.len() {
        return known_program_raw(word);
    }
    let p = run_end(&NOT_NOT_PLAIN, b, i, b.len());
    if p == b.len() {
        return known_program_raw(word);
    }
    let ends = !word.is_empty() && (PLAIN_CLASS[b[i] as usize] == BLANK || is_gate_op(b[i], b.get(i + 1).copied().unwrap_or(0)));
    if !ends {
        return walk_from(b, 0, true);
    }
    known_program_raw(word) || walk_from(b, p, false)
}

/// Bytes that are not [`NOT_PLAIN`], as 1 ([`run_end`] finds the next [`NOT_PLAIN`] byte).
static NOT_NOT_PLAIN: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut c = 0;
    while c < 256 {
        t[c] = (PLAIN_CLASS[c] != NOT_PLAIN) as u8;
        c += 1;
    }
    t
};

/// Bytes that are not [`MAY_OPERATE`], as 1 ([`run_end`] finds the next operator's first byte).
static NOT_OPERATE: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut c = 0;
    while c < 256 {
        t[c] = !MAY_OPERATE[c] as u8;
        c += 1;
    }
    t
};

/// Bytes of a word the walk reads without dropping anything: [`PLAIN_CLASS`] 0, and `/` (a
/// base name is taken after the last one).
static FAST_WORD: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut c = 0;
    while c < 256 {
        if PLAIN_CLASS[c] == 0 || c == b'/' as usize {
            t[c] = 1;
        }
        c += 1;
    }
    t
};

/// [`FAST_WORD`] but `?` and `*` (the bytes of a glob path, noted as they are met).
static FAST_WORD_NO_GLOB: [u8; 256] = {
    let mut t = FAST_WORD;
    t[b'?' as usize] = 0;
    t[b'*' as usize] = 0;
    t
};

/// The first offset at or after `i` where the walk's skip to the next operator stops: an
/// operator of [`is_gate_op`] or a CSI escape ([`csi_len`]); `b.len()` if none.
#[inline(always)]
fn next_operator(b: &[u8], mut i: usize) -> usize {
    loop {
        i = run_end(&NOT_OPERATE, b, i, b.len());
        if i >= b.len() {
            return b.len();
        }
        let c = b[i];
        if is_gate_op(c, b.get(i + 1).copied().unwrap_or(0)) || (c == b'\\' && csi_len(&b[i..]) > 0) {
            return i;
        }
        i += 1;
    }
}

/// Every word in command position (at the start, after an operator), checked against the
/// programs (the walk alone, without [`plain_or_walk`]'s plain-value path).
#[cfg(test)]
fn command_position_walk(b: &[u8]) -> bool {
    walk_from(b, 0, true)
}

/// [`command_position_walk`] from offset `i`, in command position or (`cmdpos` false) just
/// after a word, skipping to the next operator.
fn walk_from(b: &[u8], mut i: usize, mut cmdpos: bool) -> bool {
    // [`hidden_program`] needs a `?` or `*` (glob path) or a `$` (ANSI-C quoting): without
    // them, no word is looked at for it (found once, for the first word that starts with `/` or
    // `$`).
    let mut may_hide: Option<bool> = None;
    if !cmdpos {
        i = next_operator(b, i);
    }
    while i < b.len() {
        let c = b[i];
        // Most words start with a plain byte or `/` (no operator, escape, `$` or blank): straight
        // to the word.
        if FAST_WORD[c as usize] == 0 {
            let next = b.get(i + 1).copied().unwrap_or(0);
            let csi = if c == b'\\' { csi_len(&b[i..]) } else { 0 };
            if csi > 0 {
                cmdpos = true;
                i += csi;
                continue;
            }
            if is_gate_op(c, next) {
                cmdpos = true;
                i += if c == b'$' || c == b'\\' { 2 } else { 1 };
                continue;
            }
            if c == b'$' && b[i + 1..].starts_with(b"IFS") {
                i += 4;
                continue;
            }
            if c == b'$' && b[i + 1..].starts_with(b"{IFS") {
                i += 1 + b[i + 1..].iter().position(|&x| x == b'}').map_or(4, |p| p + 1);
                continue;
            }
            if c.is_ascii_whitespace() || c == b'+' || c == b',' {
                i += 1;
                continue;
            }
        }
        // A word: up to a blank or an operator.
        let word_start = i;
        // Most words hold only plain bytes and `/` up to the blank or operator that ends them:
        // found with one table lookup per byte, the base name read once. The others are read
        // a byte at a time below.
        // (A `?` or `*` ends a run: whether one occurs is noted on the way, for
        // [`hidden_program`].)
        let mut j = run_end(&FAST_WORD_NO_GLOB, b, i, b.len());
        let mut glob = false;
        while j < b.len() && matches!(b[j], b'?' | b'*') {
            glob = true;
            j = run_end(&FAST_WORD_NO_GLOB, b, j + 1, b.len());
        }
        let blank = j < b.len() && PLAIN_CLASS[b[j] as usize] == BLANK;
        let fast = j > i && (j == b.len() || blank || is_gate_op(b[j], b.get(j + 1).copied().unwrap_or(0)));
        if fast {
            // The base name, looked up as written ([`known_program_raw`]: no copy). A glob path
            // starts with `/` and holds a `?` or `*` ([`glob_path_bytes`]); a fast word never
            // starts with `$` (a [`NOT_PLAIN`] byte).
            // (A base name of more than 20 bytes names no program ([`known_program_raw`]): only
            // the word's last 21 bytes are searched for its last `/`; without one there, the
            // base name taken is those 21 bytes, which [`known_program_raw`] rejects as the
            // longer true one. A URL or path word is read once more at most 21 bytes.)
            let from = i.max(j.saturating_sub(21));
            let base = b[from..j].iter().rposition(|&c| c == b'/').map_or(from, |p| from + p + 1);
            if cmdpos && (known_program_raw(&b[base..j]) || glob && c == b'/' && hidden_program(&b[word_start..j])) {
                return true;
            }
            cmdpos = false;
            // A word that ends at an operator: [`next_operator`] would stop there.
            i = if blank { next_operator(b, j) } else { j };
            continue;
        }
        let mut a = [0u8; 20];
        let mut la = 0usize; // after the last `/` or `\`
        let mut bb = [0u8; 20];
        let mut lb = 0usize; // after the last `/`, `\` dropped
        let mut content = false;
        while i < b.len() {
            let c = b[i];
            // Letters and digits (most bytes of most words) end nothing and are only recorded.
            if c.is_ascii_alphanumeric() {
                push_lower(&mut a, &mut la, c);
                push_lower(&mut bb, &mut lb, c);
                content = true;
                i += 1;
                continue;
            }
            let next = b.get(i + 1).copied().unwrap_or(0);
            if c.is_ascii_whitespace()
                || c == b'+'
                || c == b','
                || is_gate_op(c, next)
                || (c == b'\\' && csi_len(&b[i..]) > 0)
                || (c == b'$' && (b[i + 1..].starts_with(b"IFS") || b[i + 1..].starts_with(b"{IFS")))
            {
                break;
            }
            i += 1;
            match c {
                b'\'' | b'"' | b'^' => continue,
                b'$' if matches!(next, b'@' | b'*' | b'0'..=b'9') => {
                    i += 1;
                    continue;
                }
                b'/' => {
                    la = 0;
                    lb = 0;
                }
                b'\\' => la = 0,
                _ => {
                    push_lower(&mut a, &mut la, c);
                    push_lower(&mut bb, &mut lb, c);
                }
            }
            content = true;
        }
        if cmdpos
            && content
            && (known_program(&a, la)
                || known_program(&bb, lb)
                || matches!(b[word_start], b'/' | b'$')
                    && *may_hide.get_or_insert_with(|| memchr::memchr3(b'?', b'*', b'$', b).is_some())
                    && hidden_program(&b[word_start..i]))
        {
            return true;
        }
        if content {
            cmdpos = false;
            // Nothing is in command position again before the next operator: skip to it (a
            // superset of the tokenizer's resets: an operator inside `${IFS...}` counts too).
            i = next_operator(b, i);
        }
    }
    false
}

/// Appends `c` lowercased to the word buffer `buf` of length `len` (counting past its end:
/// a word longer than the buffer is no program).
#[inline]
fn push_lower(buf: &mut [u8; 20], len: &mut usize, c: u8) {
    if let Some(slot) = buf.get_mut(*len) {
        *slot = c.to_ascii_lowercase();
    }
    *len += 1;
}

/// Whether the value is made only of ASCII letters, digits and `_` (at most 64 bytes, no
/// special anchor): one word in command position with no argument, in which [`analyse`] finds
/// nothing, without tokenizing it. A bare word is not a command line at any level: `ls`,
/// `gzip`, `hostname`, `whoami`, `pwd` are search terms, autocomplete prefixes, JSON values and
/// REST segments far more often than commands, and without a separator, a substitution or
/// arguments nothing makes the word run. (A query parameter named `id` is common; the full
/// analysis cost ~25x more.) `tests::bare_words_agree_with_the_analysis` compares both.
fn bare_word(d: &str) -> bool {
    let b = d.as_bytes();
    !b.is_empty() && b.len() <= 64 && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_') && !SPECIAL_ANCHORS.any(d)
}

/// The first bytes of the operators of [`is_gate_op`] and of the CSI escapes (`\\`), as a
/// table: the walk skips to the next of them.
static MAY_OPERATE: [bool; 256] = {
    let mut t = [false; 256];
    let ops = b";|&`(){}<>\n\r$\\";
    let mut k = 0;
    while k < ops.len() {
        t[ops[k] as usize] = true;
        k += 1;
    }
    t
};

/// Operators for [`may_hold_command`] (a superset of [`lex`]'s, plus a literal `\n`/`\r`).
#[inline]
fn is_gate_op(c: u8, next: u8) -> bool {
    matches!(c, b';' | b'|' | b'&' | b'`' | b'(' | b')' | b'{' | b'}' | b'<' | b'>' | b'\n' | b'\r')
        || (c == b'$' && next == b'(')
        || (c == b'\\' && matches!(next, b'n' | b'r'))
}

/// A word in command position whose program the shell computes: a glob path (`/???/?at`) or
/// ANSI-C quoting with escapes (`$'\x69\x64'`). Both start with `/` or `$`: one look for
/// most words.
#[inline]
fn hidden_program(w: &[u8]) -> bool {
    match w.first() {
        Some(b'/') => glob_path_bytes(w),
        Some(b'$') => w.starts_with(b"$'") && w.contains(&b'\\'),
        _ => false,
    }
}

/// Whether the lowercase word `buf[..len]` (a `len` past 20: a longer word), with a `.exe`,
/// `.com` or `.bat` suffix cut, is one of the [`PROGRAMS`].
fn known_program(buf: &[u8; 20], len: usize) -> bool {
    if len == 0 || len > buf.len() {
        return false;
    }
    let mut w = &buf[..len];
    // (Each suffix starts with `.`: one look for most words.)
    if len >= 4 && w[len - 4] == b'.' {
        for ext in [&b".exe"[..], b".com", b".bat"] {
            if let Some(x) = w.strip_suffix(ext) {
                w = x;
                break;
            }
        }
    }
    // Most words are not programs: a 65,536-bit signature table rejects them before the search.
    if !PROGRAM_SHAPES.may_contain(w) {
        return false;
    }
    SORTED_PROGRAMS.binary_search_by(|p| p.as_bytes().cmp(w)).is_ok()
}

/// Whether the word `w`, lowercased, with a `.exe`, `.com` or `.bat` suffix cut, is one of the
/// [`PROGRAMS`] (a word of more than 20 bytes is not looked at). The signature is taken on
/// `w` as written ([`WordSigs::may_contain_lowercase_of`]): most words are rejected without
/// being copied.
#[inline(always)]
fn known_program_raw(w: &[u8]) -> bool {
    let len = w.len();
    if len == 0 || len > 20 {
        return false;
    }
    let mut w = w;
    // (Each suffix starts with `.`: one look for most words.)
    if len >= 4 && w[len - 4] == b'.' {
        let ext = [w[len - 3].to_ascii_lowercase(), w[len - 2].to_ascii_lowercase(), w[len - 1].to_ascii_lowercase()];
        if matches!(&ext, b"exe" | b"com" | b"bat") {
            w = &w[..len - 4];
        }
    }
    // Most words are not programs: a 65,536-bit signature table rejects them before the search.
    PROGRAM_SHAPES.may_contain_lowercase_of(w) && lowercase_is_program(w)
}

/// Whether `w` (at most 20 bytes), lowercased, is one of the [`PROGRAMS`].
#[inline(never)]
fn lowercase_is_program(w: &[u8]) -> bool {
    let mut buf = [0u8; 20];
    let lc = &mut buf[..w.len()];
    lc.copy_from_slice(w);
    lc.make_ascii_lowercase();
    SORTED_PROGRAMS.binary_search_by(|p| p.as_bytes().cmp(lc)).is_ok()
}

/// The signatures of [`PROGRAMS`].
static PROGRAM_SHAPES: LazyLock<WordSigs> = LazyLock::new(|| WordSigs::new(PROGRAMS.iter().map(|p| p.as_bytes())));

impl Detector for CmdiDetector {
    fn name(&self) -> &'static str {
        NAME
    }

    fn gate(&self) -> Option<Gate> {
        Some(GATE)
    }

    fn bare_word_gate(&self) -> Option<fn(&str) -> bool> {
        Some(gate_bare_word)
    }

    fn plain_gate(&self) -> Option<crate::PlainGate> {
        Some((NOT_PLAIN_BYTES, gate_plain))
    }

    fn check(&self, input: &Input<'_>, level: Level) -> Option<Hit> {
        judge(input, level, false)
    }

    /// Free text is never run as a command line whole: a program's name that begins it (`cat
    /// /etc/hosts linux`, `nc -l port listen`) is a word of the text; what still counts is a
    /// command the text starts with an operator (`; cat /etc/passwd`, `$(id)`, `| sh`), an
    /// obfuscated one, and argument injection.
    fn in_free_text(&self, input: &Input<'_>, _hit: Hit, level: Level) -> Option<Hit> {
        judge(input, level, true)
    }
}

/// The detector's judgement of `input` at `level`; `free`: the value is free text
/// ([`crate::Detector::in_free_text`]).
fn judge(input: &Input<'_>, level: Level, free: bool) -> Option<Hit> {
    let d = input.decoded;
    if bare_word(d) {
        return None;
    }
    if let Some(h) = breakout_probe(d) {
        return gate(Some(h), level);
    }
    if !has_pct(d) && !may_hold_command(d) {
        return None;
    }
    let mut h = analyse(d, 0, free);
    // Form encoding leftovers (`+` for blanks) and residual percent layers.
    if d.contains('+') || has_pct(d) {
        let plus: Cow<'_, str> = if d.contains('+') { Cow::Owned(d.replace('+', " ")) } else { Cow::Borrowed(d) };
        let v = pct_decode(&plus, 3).into_owned();
        if v != d {
            h = best(h, analyse(&v, 0, free));
        }
    }
    // Literal `\n` written for a newline (a payload that went through one escaping layer).
    if memchr::memchr_iter(b'\\', d.as_bytes()).any(|i| matches!(d.as_bytes().get(i + 1), Some(b'n' | b'r'))) {
        h = best(h, analyse(&unescape_view(d), 5, free));
    }
    gate(h, level)
}

/// Length of a terminal control sequence written literally at the start of `b` (`\033[2A`,
/// `\e[0m`, `\x1b[1;31m`, `\u001b[K`: an escape, `[`, parameters, one final letter), or 0.
/// Payloads that go through a log or a terminal hide the command after one (cursor up, then the
/// command overwrites the line shown).
fn csi_len(b: &[u8]) -> usize {
    let esc = [&b"\\033["[..], b"\\e[", b"\\x1b[", b"\\x1B[", b"\\u001b[", b"\\u001B[", b"\\E["];
    let Some(p) = esc.iter().find(|e| b.starts_with(e)) else { return 0 };
    let mut i = p.len();
    while i < b.len() && i < p.len() + 16 && (b[i].is_ascii_digit() || b[i] == b';') {
        i += 1;
    }
    if i < b.len() && b[i].is_ascii_alphabetic() {
        i + 1
    } else {
        0
    }
}

/// The value with one escaping layer undone, as `echo -e`, `printf` or a log viewer would show
/// it: literal `\n`/`\r` are line breaks, `` \` `` is a backtick, literal terminal control
/// sequences are dropped (a line break). Linear: one pass.
fn unescape_view(d: &str) -> String {
    let b = d.as_bytes();
    let mut out = String::with_capacity(d.len());
    let mut i = 0;
    while i < b.len() {
        step(1);
        if b[i] == b'\\' {
            match b.get(i + 1) {
                Some(b'n' | b'r') => {
                    out.push('\n');
                    i += 2;
                    continue;
                }
                Some(b'`') => {
                    out.push('`');
                    i += 2;
                    continue;
                }
                _ => {
                    let n = csi_len(&b[i..]);
                    if n > 0 {
                        out.push('\n');
                        i += n;
                        continue;
                    }
                }
            }
        }
        let n = utf8_len(b[i]).min(b.len() - i);
        out.push_str(&d[i..i + n]);
        i += n;
    }
    out
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Sep {
    /// Start of the value.
    Start,
    /// `;` — prose uses it too.
    Semi,
    /// `|`, `||`, `&&`, `&`.
    Chain,
    /// Newline.
    Newline,
    /// `$(`, backtick, `(`, `{` opening a group or substitution.
    Subst,
    /// After a quote or `)` breakout at the start (`'; id`, `a); id`).
    Breakout,
}

#[derive(Debug)]
enum Tok {
    Word {
        raw: String,
        norm: String,
        obf: bool,
    },
    /// Operator, and whether the next character follows it without a blank.
    Op(&'static str, bool),
}

/// Unambiguous programs: not English words.
const PROGRAMS: &[&str] = &[
    "printf",
    "tr",
    "whoami",
    "ifconfig",
    "ipconfig",
    "uname",
    "netstat",
    "nslookup",
    "wget",
    "curl",
    "nc",
    "ncat",
    "netcat",
    "bash",
    "sh",
    "zsh",
    "ksh",
    "csh",
    "tcsh",
    "dash",
    "powershell",
    "pwsh",
    "cmd",
    "systeminfo",
    "sysinfo",
    "tasklist",
    "taskkill",
    "chmod",
    "chown",
    "useradd",
    "usermod",
    "nmap",
    "telnet",
    "python",
    "python2",
    "python3",
    "perl",
    "ruby",
    "php",
    "node",
    "nodejs",
    "gcc",
    "base64",
    "xxd",
    "awk",
    "gawk",
    "sed",
    "grep",
    "egrep",
    "ls",
    "pwd",
    "printenv",
    "busybox",
    "mkfifo",
    "dig",
    "scp",
    "ssh",
    "tftp",
    "ftp",
    "rm",
    "wc",
    "reg",
    "netsh",
    "wmic",
    "certutil",
    "bitsadmin",
    "rundll32",
    "regsvr32",
    "mshta",
    "cscript",
    "wscript",
    "icacls",
    "findstr",
    "getent",
    "crontab",
    "sudo",
    "killall",
    "lsof",
    "whereis",
    "xargs",
    "nohup",
    "hostname",
    "traceroute",
    "tracert",
    "ping",
    "id",
    "cat",
    "dir",
    "uname",
    "ps",
    "env",
    "curl",
    "socat",
    "openssl",
    "tcpdump",
    "iptables",
    "useradd",
    "passwd",
    "shutdown",
    "reboot",
    "tar",
    "unzip",
    "gzip",
    "chattr",
    "setsid",
    "nohup",
    "vssadmin",
    "schtasks",
    "net",
    "arp",
    "route",
    "ver",
    "mysql",
    "psql",
    "sqlite3",
    "java",
    "jrunscript",
    "lua",
    "tclsh",
    "expect",
    "timeout",
    "dd",
    "od",
    "strings",
    "nl",
    "tac",
    "rev",
    "fetch",
    "lwp-download",
    "jq",
    "bzip2",
    "xterm",
    "sleep",
    "echo",
    "type",
    "more",
    "which",
    "find",
    "head",
    "tail",
    "kill",
    "set",
    "copy",
    "del",
    "move",
    "touch",
    "mkdir",
    "export",
    "eval",
    "exec",
    "source",
    "true",
    "false",
    "print",
    "whois",
    "host",
    "sort",
    "uniq",
    "cut",
    "tee",
    "less",
    "date",
    "time",
    "mv",
    "cp",
    "ln",
    "su",
    "at",
    "start",
    "call",
    "test",
];

/// Programs and builtins that are also common English (or shopping) words: they need shell
/// context (a flag, a path, a redirection, the end of the value, a strong separator).
const AMBIGUOUS: &[&str] = &[
    "cat", "id", "dir", "type", "more", "which", "find", "head", "tail", "kill", "set", "copy", "del", "move", "touch", "export", "source", "true", "false",
    "print", "host", "sort", "uniq", "cut", "tee", "less", "date", "time", "su", "at", "start", "call", "test", "echo", "sleep", "ping", "net", "route",
    "expect", "timeout", "fetch", "strings", "nl", "tac", "rev", "dd", "od", "env", "ver", "java", "node", "ps", "rm", "mv", "cp", "ln", "sh", "nc", "tar",
    "exec", "eval", "reg", "arp", "php", "python", "perl", "ruby", "lua", "mysql", "cmd", "jq", "whois", "mkdir", "sed", "awk", "grep", "find", "dig", "ftp",
    "ssh", "wc", "less", "tr",
];

/// System-information commands with no meaning in prose.
const RECON: &[&str] = &["whoami", "ifconfig", "ipconfig", "netstat", "systeminfo", "sysinfo", "uname", "tasklist", "printenv", "pwd"];

fn is_program(w: &str) -> bool {
    SORTED_PROGRAMS.binary_search(&w).is_ok()
}

fn is_ambiguous(w: &str) -> bool {
    SORTED_AMBIGUOUS.binary_search(&w).is_ok()
}

static SORTED_AMBIGUOUS: LazyLock<Vec<&'static str>> = LazyLock::new(|| {
    let mut v = AMBIGUOUS.to_vec();
    v.sort_unstable();
    v.dedup();
    v
});

/// `/usr/bin/id` → `id`, `C:\Windows\System32\cmd.exe` → `cmd`.
fn base_name(w: &str) -> String {
    let b = w.rsplit(['/', '\\']).next().unwrap_or(w);
    let b = b.to_ascii_lowercase();
    for ext in [".exe", ".com", ".bat"] {
        if let Some(s) = b.strip_suffix(ext) {
            return s.to_string();
        }
    }
    b
}

/// After a glued `{`: further glued `{`, then one word, then `}`.
fn braced_single_word(rest: &[Tok]) -> bool {
    let mut k = 0;
    while matches!(rest.get(k), Some(Tok::Op("{", true))) {
        k += 1;
    }
    matches!(rest.get(k), Some(Tok::Word { .. })) && matches!(rest.get(k + 1), Some(Tok::Op("}", _)))
}

/// Whether the quote `q` that opened just before `rest` is closed before the word ends (no
/// blank or shell operator in between): `c''at`, `w'h'o'am'i`, `"i"d` hide a command name; the
/// apostrophe of `I'd like to...` does not.
fn quote_closes_in_word(rest: &[u8], q: u8) -> bool {
    for &x in rest {
        if x == q {
            return true;
        }
        if x.is_ascii_whitespace() || matches!(x, b';' | b'|' | b'&' | b'<' | b'>' | b'(' | b')') {
            return false;
        }
    }
    false
}

/// The length of an HTML tag without attributes at the start of `b` (`<p>`, `</li>`, `<br/>`),
/// or 0. In a shell, `more</p>` reads `/p` and redirects to the next word: in rich text it
/// closes a paragraph. A redirection to a path (`cat</etc/passwd`) is no tag.
fn bare_tag_len(b: &[u8]) -> usize {
    let mut k = 1 + usize::from(b.get(1) == Some(&b'/'));
    let name = k;
    while k < b.len() && k - name < 10 && b[k].is_ascii_alphanumeric() {
        k += 1;
    }
    if k == name || !b[name].is_ascii_alphabetic() {
        return 0;
    }
    if name == 1 && b.get(k) == Some(&b'/') {
        k += 1;
    }
    if b.get(k) == Some(&b'>') {
        k + 1
    } else {
        0
    }
}

fn lex(s: &str) -> Vec<Tok> {
    let b = s.as_bytes();
    // Sized once for a few words (a token per blank-separated word is the usual shape).
    let mut toks = Vec::with_capacity(8);
    // A word's normalised form is computed from its raw form once every word is known (below).
    let mut raw = String::with_capacity(16);
    let mut obf = false;
    let mut brace = 0u32;
    let flush = |toks: &mut Vec<Tok>, raw: &mut String, obf: &mut bool| {
        if !raw.is_empty() {
            // The next word's buffer, sized for most words (no growth while it is written).
            toks.push(Tok::Word { raw: std::mem::replace(raw, String::with_capacity(16)), norm: String::new(), obf: *obf });
        }
        *obf = false;
    };
    let mut i = 0;
    while i < b.len() {
        step(1);
        let c = b[i];
        let next = b.get(i + 1).copied().unwrap_or(0);
        let op: Option<(&'static str, usize)> = match c {
            b';' => Some((";", 1)),
            b'\n' | b'\r' => Some(("\n", 1)),
            b'|' if next == b'|' => Some(("||", 2)),
            b'|' => Some(("|", 1)),
            b'&' if next == b'&' => Some(("&&", 2)),
            // `&copy;`, `&amp;`: an HTML character reference, not `&` then a command (unless
            // it names a program that is no English word: `&whoami;`).
            b'&' if entity_ref(&b[i + 1..]) => None,
            b'&' => Some(("&", 1)),
            // A run of three or more backticks is a markdown code fence.
            b'`' if next == b'`' && b.get(i + 2) == Some(&b'`') => Some(("```", 3 + b[i + 3..].iter().take_while(|&&x| x == b'`').count())),
            b'`' => Some(("`", 1)),
            b'$' if next == b'(' => Some(("$(", 2)),
            b'<' if next == b'(' => Some(("$(", 2)),
            // `name(`: a function call in code (`printf("%d", n)`); in a shell a syntax error.
            b'(' if !raw.is_empty() && raw.as_bytes().last().is_some_and(|x| x.is_ascii_alphanumeric()) => Some(("call(", 1)),
            b'(' => Some(("(", 1)),
            b')' => Some((")", 1)),
            b'>' if next == b'>' => Some((">", 2)),
            b'>' | b'<' => Some((">", 1)),
            b'{' if raw.is_empty() => {
                brace += 1;
                Some(("{", 1))
            }
            b'}' if brace > 0 => {
                brace -= 1;
                Some(("}", 1))
            }
            _ => None,
        };
        if let Some((op, len)) = op {
            flush(&mut toks, &mut raw, &mut obf);
            // `<p>`, `</p>`: markup around the words, a blank to a shell reader.
            let tag = if c == b'<' { bare_tag_len(&b[i..]) } else { 0 };
            if tag > 0 {
                i += tag;
                continue;
            }
            toks.push(Tok::Op(op, b.get(i + len).is_some_and(|x| !x.is_ascii_whitespace())));
            i += len;
            continue;
        }
        if c.is_ascii_whitespace() || (c == b',' && brace > 0) {
            flush(&mut toks, &mut raw, &mut obf);
            i += 1;
            continue;
        }
        if c == b'$' {
            let rest = &b[i + 1..];
            // `$IFS`, `${IFS}`, `$IFS$9`: a blank.
            if rest.starts_with(b"IFS") || rest.starts_with(b"{IFS") {
                flush(&mut toks, &mut raw, &mut obf);
                toks.push(Tok::Op("ifs", true));
                i += 1 + if rest.starts_with(b"{") { rest.iter().position(|&x| x == b'}').map_or(4, |p| p + 1) } else { 3 };
                continue;
            }
            // `$@`, `$*`, `$1`..`$9`, `$u` (unset): empty expansions used to split words.
            if matches!(next, b'@' | b'*' | b'0'..=b'9') && !raw.is_empty() {
                obf = true;
                i += 2;
                continue;
            }
        }
        if c == b'$' && next == b'\'' {
            // ANSI-C quoting `$'\x69\x64'`: the shell decodes the escapes (hex, octal, `\n`...).
            let mut k = i + 2;
            let mut escaped = false;
            while k < b.len() && b[k] != b'\'' {
                step(1);
                if b[k] == b'\\' && k + 1 < b.len() {
                    escaped = true;
                    let (v, used) = ansi_c_escape(&b[k + 1..]);
                    if v.is_ascii() && v != 0 {
                        raw.push(v as char);
                    }
                    k += 1 + used;
                } else {
                    let n = utf8_len(b[k]).min(b.len() - k);
                    raw.push_str(&s[k..k + n]);
                    k += n;
                }
            }
            obf |= escaped;
            i = (k + 1).min(b.len());
            continue;
        }
        if matches!(c, b'\'' | b'"') {
            // Quotes are transparent for command words: `c''at`, `"c"at`, `'; id`.
            // Only a quote that the shell closes within the word hides anything (a closing one,
            // or an opening one closed before a blank): in `I'd like to go` the apostrophe
            // opens a string that never ends (or ends words later), so the word is not `Id`.
            if !raw.is_empty()
                && b.get(i + 1).is_some_and(|x| x.is_ascii_alphanumeric() || *x == b'\'' || *x == b'"')
                && (raw.bytes().filter(|&x| x == c).count() % 2 == 1 || quote_closes_in_word(&b[i + 1..], c))
            {
                obf = true;
            }
            raw.push(c as char);
            i += 1;
            continue;
        }
        if (c == b'\\' || c == b'^') && !raw.is_empty() && next.is_ascii_alphabetic() {
            // `c\at`, `w^h^o^a^m^i`: escapes that the shell drops. Keep them in `raw` for paths.
            if raw.as_bytes().last().is_some_and(|x| x.is_ascii_alphabetic()) {
                obf = true;
                raw.push(c as char);
                i += 1;
                continue;
            }
        }
        // Push the whole UTF-8 character.
        let ch_len = utf8_len(c);
        let end = (i + ch_len).min(b.len());
        let chunk = &s[i..end];
        raw.push_str(chunk);
        i = end;
    }
    flush(&mut toks, &mut raw, &mut obf);
    // Normalised forms: quotes, `^`, `\` inside letters removed.
    for t in toks.iter_mut() {
        if let Tok::Word { raw, norm, .. } = t {
            // Most words hold none of these: a copy, allocated once.
            let mut n = String::with_capacity(raw.len());
            if raw.bytes().any(|b| matches!(b, b'\'' | b'"' | b'^')) {
                n.extend(raw.chars().filter(|c| !matches!(c, '\'' | '"' | '^')));
            } else {
                n.push_str(raw);
            }
            *norm = n;
            if norm.bytes().any(|b| b == b'\\') && !norm.contains(':') && !norm.starts_with('\\') {
                let mut o = String::with_capacity(norm.len());
                let cs: Vec<char> = norm.chars().collect();
                for (k, ch) in cs.iter().enumerate() {
                    let between = *ch == '\\' && k > 0 && cs[k - 1].is_ascii_alphabetic() && cs.get(k + 1).is_some_and(|n| n.is_ascii_alphabetic());
                    if !between {
                        o.push(*ch);
                    }
                }
                *norm = o;
            }
        }
    }
    toks
}

fn utf8_len(b: u8) -> usize {
    match b {
        0x00..=0x7f => 1,
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf7 => 4,
        _ => 1,
    }
}

/// Arguments that look like a shell command line rather than prose.
fn shellish_arg(raw: &str) -> bool {
    let r = raw.trim_matches(['\'', '"']);
    // (`--` alone ends the options and adds none: between words it is a dash, `rm -- the band`.)
    (r.len() >= 2 && r.starts_with('-') && r.as_bytes()[1].is_ascii_alphanumeric() || r.starts_with("--") && r.len() > 2)
        || r.starts_with('/') && r.len() >= 2
        || r.starts_with("./")
        || r.starts_with("~/")
        || r.starts_with('%') && r[1..].contains('%')
        || (r.len() >= 3 && r.as_bytes()[0].is_ascii_alphabetic() && r.as_bytes()[1] == b':' && matches!(r.as_bytes()[2], b'\\' | b'/'))
        || (r.len() == 2 && r.as_bytes()[0].is_ascii_alphabetic() && r.as_bytes()[1] == b':')
        || r.contains("://")
        || r.starts_with('$')
        || r.starts_with("\\\\")
        || r.contains("/etc/")
        || r.contains('*') && !r.chars().any(char::is_whitespace)
        || r.split('.').count() == 4 && r.split('.').all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}

/// `name;` after a `&`: 2 to 10 letters then `;`, and the name is not an unambiguous program.
fn entity_ref(b: &[u8]) -> bool {
    let n = b.iter().take(11).take_while(|c| c.is_ascii_alphabetic()).count();
    if !(2..=10).contains(&n) || b.get(n) != Some(&b';') {
        return false;
    }
    let mut buf = [0u8; 10];
    for (d, c) in buf.iter_mut().zip(&b[..n]) {
        *d = c.to_ascii_lowercase();
    }
    std::str::from_utf8(&buf[..n]).is_ok_and(|w| !is_program(w) || is_ambiguous(w))
}

/// One escape of ANSI-C quoting after its `\`: the byte and how many bytes it used.
fn ansi_c_escape(b: &[u8]) -> (u8, usize) {
    let hex = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    match b[0] {
        b'x' => match (b.get(1).and_then(|&c| hex(c)), b.get(2).and_then(|&c| hex(c))) {
            (Some(h), Some(l)) => (h * 16 + l, 3),
            (Some(h), None) => (h, 2),
            _ => (b'x', 1),
        },
        b'0'..=b'7' => {
            let mut v: u32 = 0;
            let mut n = 0;
            while n < 3 && n < b.len() && (b'0'..=b'7').contains(&b[n]) {
                v = v * 8 + u32::from(b[n] - b'0');
                n += 1;
            }
            ((v & 0xff) as u8, n)
        }
        b'n' => (b'\n', 1),
        b't' => (b'\t', 1),
        b'r' => (b'\r', 1),
        // Any other character stands for itself; a multi-byte one is consumed whole.
        c => (c, utf8_len(c).min(b.len())),
    }
}

/// An absolute path with glob characters in its last segment or in a directory (`/???/?at`,
/// `/bin/c*t`, `/usr/bin/wh?ami`): a program named by a pattern.
fn glob_path(w: &str) -> bool {
    glob_path_bytes(w.as_bytes())
}

/// [`glob_path`] on bytes: `/` then at least two segments, each non-empty, of letters, digits,
/// `.`, `_`, `-` and glob characters, none made only of `*` (`/**/` is a comment), the last
/// with a letter or `?`.
fn glob_path_bytes(w: &[u8]) -> bool {
    if w.len() < 4 || w[0] != b'/' || !w.iter().any(|&b| b == b'?' || b == b'*') {
        return false;
    }
    let mut segs = 0;
    for seg in w[1..].split(|&b| b == b'/') {
        if seg.is_empty() || seg.iter().all(|&b| b == b'*') || !seg.iter().all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'?' | b'*' | b'.' | b'_' | b'-'))
        {
            return false;
        }
        segs += 1;
    }
    segs >= 2 && w[w.iter().rposition(|&b| b == b'/').unwrap_or(0)..].iter().any(|&b| b.is_ascii_alphabetic() || b == b'?')
}

/// Arguments that target the system rather than a project: absolute paths outside home and
/// web directories, drive and UNC paths, IP addresses (also in URLs), expansions.
fn strong_arg(raw: &str) -> bool {
    let r = raw.trim_matches(['\'', '"']);
    let b = r.as_bytes();
    let ip = |h: &str| h.split('.').count() == 4 && h.split('.').all(|p| !p.is_empty() && p.len() <= 3 && p.bytes().all(|b| b.is_ascii_digit()));
    let host = r.split_once("://").map(|(_, rest)| rest.split(['/', ':', '?']).next().unwrap_or(""));
    b.first() == Some(&b'/')
        || r.starts_with('%') && r[1..].contains('%')
        || r.contains("/etc/")
        || (b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':' && (b.len() == 2 || matches!(b[2], b'\\' | b'/')))
        || r.starts_with("\\\\")
        || r.starts_with('$')
        || ip(r)
        || host.is_some_and(|h| ip(h) || h == "localhost" || h.starts_with('['))
        || r.contains("|")
        || r.contains('`')
}

/// Windows `net` / `reg` / `sc` subcommands that make the word unambiguous.
fn known_subcommand(cmd: &str, arg: &str) -> bool {
    let a = arg.to_ascii_lowercase();
    match cmd {
        "net" => matches!(a.as_str(), "user" | "users" | "view" | "localgroup" | "group" | "share" | "use" | "start" | "stop" | "session" | "accounts"),
        "reg" => matches!(a.as_str(), "add" | "query" | "delete" | "save" | "export"),
        "netsh" => matches!(a.as_str(), "firewall" | "advfirewall" | "interface" | "wlan" | "http" | "portproxy" | "winhttp"),
        "which" | "type" | "whereis" => is_program(&base_name(&a)),
        _ => false,
    }
}

fn analyse(s: &str, penalty: u8, free: bool) -> Option<Hit> {
    if s.is_empty() {
        return None;
    }
    let mut out = if SPECIAL_ANCHORS.any(s) { specials(s) } else { None };
    let toks = lex(s);
    let ifs = toks.iter().any(|t| matches!(t, Tok::Op("ifs", _)));
    let mut sep = Some(Sep::Start);
    let mut seen_word = false;
    let mut in_backtick = false;
    let mut bt_prose = false;
    // `a`uname -a`b`: a span glued to letters or digits on both sides is a substitution inside
    // a word, not a markdown code span between prose words.
    let glued_span = memchr::memchr(b'`', s.as_bytes()).is_some() && glued_backtick_span(s.as_bytes());
    let mut in_fence = false;
    let mut glued = false;
    // A value without blanks is a URL or a query string where `&` comes after a `name=value`
    // (or the `?`): `https://shop.example/list?page=2&sort`, `q=x&debug`. There `&word` is one
    // more parameter, not a background job and a program.
    let blankless = !s.bytes().any(|b| b.is_ascii_whitespace());
    let mut query_amp = false;
    let mut i = 0;
    while i < toks.len() {
        step(1);
        match &toks[i] {
            Tok::Op(op, g) => {
                let op = *op;
                glued = *g;
                query_amp = op == "&" && glued && blankless && toks[..i].iter().any(|t| matches!(t, Tok::Word { raw, .. } if raw.contains(['=', '?'])));
                sep = match op {
                    ";" if glued && seen_word => Some(Sep::Chain),
                    ";" => Some(if !seen_word { Sep::Breakout } else { Sep::Semi }),
                    "\n" => Some(Sep::Newline),
                    "|" | "||" | "&&" | "&" => Some(if !seen_word { Sep::Breakout } else { Sep::Chain }),
                    // `{word}` (nothing to split it, no blank after `{`) is a literal word to
                    // the shell, not a group or a brace expansion: template placeholders
                    // (`{{id}}`, `{name}`) run nothing.
                    "{" if glued && braced_single_word(&toks[i + 1..]) => None,
                    "$(" | "{" => Some(Sep::Subst),
                    "(" | "call(" => Some(Sep::Semi),
                    "`" => {
                        in_backtick = !in_backtick;
                        if in_backtick {
                            // Markdown code spans sit between prose words (of any script:
                            // CJK prose glues them, `使用`ls`命令`).
                            // A word glued to the span by `=` or `/` (`?user=`whoami``) is an assignment or a
                            // URL being built, not prose.
                            bt_prose = i > 0
                                && !glued_span
                                && matches!(&toks[i - 1], Tok::Word { raw, .. } if raw.bytes().any(|b| b.is_ascii_alphanumeric() || b >= 0x80) && !raw.ends_with(['=', '/']));
                            Some(Sep::Subst)
                        } else {
                            None
                        }
                    }
                    "```" => {
                        // Markdown: what follows the fence is a code listing.
                        in_fence = !in_fence;
                        Some(Sep::Newline)
                    }
                    "ifs" => sep,
                    ")" | "}" => None,
                    _ => None,
                };
                i += 1;
            }
            Tok::Word { norm, .. } if !seen_word && norm.is_empty() => {
                // A lone quote before anything else: a string breakout (`' whoami`).
                sep = Some(Sep::Breakout);
                i += 1;
            }
            Tok::Word { raw, norm, obf } => {
                let Some(kind) = sep.take() else {
                    seen_word = true;
                    i += 1;
                    continue;
                };
                let cmd = base_name(norm);
                let has_path = raw.contains('/') || raw.contains('\\');
                if kind != Sep::Start && glob_path(norm) {
                    // `/???/?at`, `/bin/c*t`: the shell expands the pattern to a program.
                    out = best(out, Some(mk(NAME, Category::Cmdi, 85u8.saturating_sub(penalty), raw, "glob pattern in command position")));
                }
                // Arguments up to the next operator.
                let mut args: SmallVec<[&str; 8]> = SmallVec::new();
                let mut j = i + 1;
                let mut redirect = false;
                while j < toks.len() {
                    step(1);
                    match &toks[j] {
                        Tok::Word { raw, .. } => args.push(raw),
                        Tok::Op(">", _) => redirect = true,
                        Tok::Op("ifs", _) => {}
                        _ => break,
                    }
                    j += 1;
                }
                let ends = j >= toks.len() || matches!(toks[j], Tok::Op(";" | "|" | "||" | "&" | "&&" | "\n" | ")" | "`" | "}", _));
                let called = matches!(toks.get(i + 1), Some(Tok::Op("call(", _)));
                if is_program(&cmd) && !called {
                    let bin_path = raw.contains("bin/") || raw.to_ascii_lowercase().contains("system32");
                    let amb = is_ambiguous(&cmd) && !bin_path;
                    let shell_args = args.first().is_some_and(|a| shellish_arg(a) || known_subcommand(&cmd, a))
                        || args.iter().any(|a| shellish_arg(a))
                        || redirect
                        || ifs
                        || has_path && !amb;
                    let no_args_end = args.is_empty() && ends;
                    let whole_span = i == 1 && matches!(toks[0], Tok::Op("`", _)) && j + 1 == toks.len() && matches!(toks[j], Tok::Op("`", _));
                    // `sleep 5`, `timeout 10`: a blind timing probe once a separator precedes it.
                    let timing = matches!(cmd.as_str(), "sleep" | "timeout") && args.len() == 1 && args[0].bytes().all(|b| b.is_ascii_digit());
                    let shell_args = shell_args || timing && kind != Sep::Start;
                    let conf: u8 = match kind {
                        Sep::Subst => {
                            // A backtick span in prose (markdown code) is not a substitution
                            // attack unless something shell-like surrounds it.
                            let prose_bt = in_backtick && bt_prose && i > 0 && matches!(toks[i - 1], Tok::Op("`", _));
                            // Prose on both sides of a span that holds a program name alone
                            // (`use the `ls` command`): a word being named, not run.
                            let named = prose_bt
                                && args.is_empty()
                                && matches!(toks.get(j), Some(Tok::Op("`", _)))
                                && matches!(toks.get(j + 1), Some(Tok::Word { raw, .. }) if raw.bytes().any(|b| b.is_ascii_alphabetic() || b >= 0x80));
                            if named && !*obf {
                                0
                            } else if prose_bt {
                                if shell_args {
                                    55
                                } else {
                                    40
                                }
                            } else if whole_span && !args.is_empty() && !redirect && !ifs && !*obf && !args.iter().any(|a| strong_arg(a)) {
                                // The whole value is one backtick span holding a command line
                                // with flags or relative names only: a markdown code span
                                // (`` `ls -la ~/Downloads` ``), as likely as a substitution.
                                55
                            } else if !amb || shell_args || no_args_end {
                                90
                            } else {
                                60
                            }
                        }
                        Sep::Breakout | Sep::Newline => {
                            if !amb || shell_args || no_args_end {
                                90
                            } else if !args.is_empty() && matches!(toks.get(j), Some(Tok::Op("(", _))) {
                                // A word then its words then `(`: a syntax error in a shell
                                // (no subshell follows a command's words), the frame of a stack
                                // trace in text (`\n    at sleep (app.js:12:8)`).
                                0
                            } else {
                                60
                            }
                        }
                        Sep::Chain => {
                            if !amb && (shell_args || no_args_end || args.len() <= 2) {
                                85
                            } else if shell_args || (no_args_end && (!amb || glued)) {
                                80
                            } else {
                                40
                            }
                        }
                        Sep::Semi => {
                            // An ambiguous word alone in parentheses after a word of text is an
                            // aside or a grouping (`sum by (host) (up)`, `the slot (time) we
                            // agreed`): no subshell follows a word without a separator.
                            let aside = amb
                                && args.is_empty()
                                && i >= 2
                                && matches!(toks[i - 1], Tok::Op("(", _))
                                && matches!(toks[i - 2], Tok::Word { .. })
                                && matches!(toks.get(j), Some(Tok::Op(")", _)));
                            if aside && !*obf {
                                0
                            } else if shell_args || no_args_end && !amb {
                                80
                            } else if !amb {
                                55
                            } else if no_args_end {
                                50
                            } else {
                                0
                            }
                        }
                        Sep::Start => {
                            // `${IFS}id`: a blank written as `$IFS` before the program, which
                            // only a filter of blanks makes anyone write.
                            if *obf || i > 0 && matches!(toks[i - 1], Tok::Op("ifs", _)) {
                                85
                            } else if shell_args && (!amb || args.iter().find(|a| **a != "--").is_some_and(|a| shellish_arg(a) || known_subcommand(&cmd, a))) {
                                // A command line without any separator runs only where the
                                // whole value is executed: it takes a target that is an attack
                                // anywhere (system path, IP address, expansion, redirection).
                                // Flags and relative or web names alone are how documentation
                                // shows a command (`rm -rf build`, `curl -H '...' https://api...`).
                                let interp =
                                    matches!(cmd.as_str(), "perl" | "python" | "python2" | "python3" | "ruby" | "php" | "node" | "bash" | "sh" | "zsh" | "lua");
                                let code_flag = interp && args.first().is_some_and(|a| matches!(*a, "-e" | "-c" | "-r" | "-E"));
                                // `wget URL`, `curl URL`: the fetch stage of a dropper (a
                                // documented API call carries headers and options).
                                let fetch = matches!(cmd.as_str(), "curl" | "wget" | "fetch") && args.len() == 1 && args[0].contains("://");
                                let sub = args.first().is_some_and(|a| known_subcommand(&cmd, a));
                                if redirect
                                    || ifs
                                    || has_path && !amb
                                    || code_flag
                                    || fetch
                                    || sub
                                    || args.iter().any(|a| strong_arg(a))
                                    || RECON.contains(&cmd.as_str())
                                {
                                    65
                                } else {
                                    55
                                }
                            } else if !amb && args.is_empty() && ends && j < toks.len() {
                                // `whoami;`, `id|`: a command terminated by a separator.
                                70
                            } else if is_ambiguous(&cmd) && ends && j < toks.len() && args.is_empty() && matches!(toks[j], Tok::Op(";" | "|" | "&&" | "||", _))
                            {
                                65
                            } else if !amb && !args.is_empty() && (args.len() > 1 || !args[0].bytes().all(|b| b.is_ascii_alphabetic())) {
                                // A program name then words: a sentence about the program
                                // (`curl is a tool...`) as often as a command line.
                                55
                            } else if !amb && !args.is_empty() {
                                // `curl cream`: a program name followed by one plain word.
                                50
                            } else if matches!(cmd.as_str(), "sleep" | "ping" | "timeout") && args.len() == 1 && args[0].bytes().all(|b| b.is_ascii_digit()) {
                                // Blind timing probe.
                                60
                            } else {
                                // A program name alone (`ls`, `gzip`): a word, not a command.
                                0
                            }
                        }
                    };
                    let conf = if *obf && conf > 0 { conf.max(85) } else { conf };
                    // Free text is not a command line: a program that begins it is a word.
                    let conf = if free && kind == Sep::Start && !*obf { 0 } else { conf };
                    // `?page=2&sort`: a parameter name after a query's `&`, nothing after it.
                    let conf = if kind == Sep::Chain && query_amp && args.is_empty() && !*obf { 0 } else { conf };
                    // Inside a markdown code span that follows prose, or a fenced code block,
                    // a command is being shown, not injected: below the balanced threshold.
                    let conf = if (in_backtick && bt_prose || in_fence) && !*obf { conf.min(55) } else { conf };
                    if conf > 0 {
                        let why = match kind {
                            Sep::Subst => "command substitution runs a program",
                            Sep::Start => "value is a command line",
                            _ => "separator then a program in command position",
                        };
                        out = best(out, Some(mk(NAME, Category::Cmdi, conf.saturating_sub(penalty), raw, why)));
                    }
                }
                seen_word = true;
                i += 1;
            }
        }
    }
    out
}

/// Whether a pair of backticks (the first and second, the third and fourth...) has an ASCII
/// letter or digit right before its opening and right after its closing backtick. A markdown
/// fence (three backticks) is a listing: no.
fn glued_backtick_span(b: &[u8]) -> bool {
    if memchr::memmem::find(b, b"```").is_some() {
        return false;
    }
    let mut it = memchr::memchr_iter(b'`', b);
    while let (Some(o), Some(c)) = (it.next(), it.next()) {
        step(1);
        if o > 0 && b[o - 1].is_ascii_alphanumeric() && b.get(c + 1).is_some_and(|x| x.is_ascii_alphanumeric()) {
            return true;
        }
    }
    false
}

/// The literal patterns of [`specials`] (`(pattern, confidence, why)`), searched for anywhere.
const SHELL_LITERALS: [(&str, u8, &str); 20] = [
    // Argument injection: options of command-line tools whose value is a command the tool
    // runs (an application passing a user value as an argument of ssh, git, tar). Written as
    // options (`-o`, `--`): the directive alone (`ProxyCommand` in an ssh configuration being
    // edited) is text.
    ("-oproxycommand", 85, "argument injection: ssh -oProxyCommand runs a command"),
    ("-o proxycommand", 85, "argument injection: ssh -oProxyCommand runs a command"),
    ("-olocalcommand", 80, "argument injection: ssh -oLocalCommand runs a command"),
    ("-o localcommand", 80, "argument injection: ssh -oLocalCommand runs a command"),
    ("--upload-pack", 85, "argument injection: git --upload-pack runs a command"),
    ("--receive-pack", 80, "argument injection: git --receive-pack runs a command"),
    ("--checkpoint-action", 85, "argument injection: tar --checkpoint-action runs a command"),
    ("--use-compress-program", 80, "argument injection: tar --use-compress-program runs a command"),
    ("--to-command", 80, "argument injection: tar --to-command runs a command"),
    ("/dev/tcp/", 95, "bash /dev/tcp reverse shell"),
    ("/dev/udp/", 90, "bash /dev/udp socket"),
    ("%comspec%", 85, "cmd.exe through %COMSPEC%"),
    ("invoke-expression", 90, "PowerShell Invoke-Expression"),
    ("invoke-webrequest", 80, "PowerShell Invoke-WebRequest"),
    ("invoke-restmethod", 75, "PowerShell Invoke-RestMethod"),
    ("downloadstring(", 90, "PowerShell DownloadString"),
    ("downloadfile(", 85, "PowerShell DownloadFile"),
    ("net.webclient", 85, "PowerShell Net.WebClient"),
    ("start-process", 70, "PowerShell Start-Process"),
    ("frombase64string(", 75, "PowerShell FromBase64String"),
];

/// Shells invoked with a command, for [`specials`].
const SHELL_INVOKED: [&str; 8] = ["cmd /c", "cmd.exe /c", "cmd /k", "cmd.exe /k", "/bin/sh -c", "/bin/bash -c", "bash -i", "sh -i"];

/// Indexes of the patterns of [`SPECIAL_SEARCH`]: `() {`, `<!--#exec`, [`SHELL_LITERALS`],
/// `iex`, `powershell`, `pwsh`, ` -e`, [`SHELL_INVOKED`].
const SP_SHELLSHOCK: usize = 0;
const SP_SSI: usize = 1;
const SP_LITERALS: usize = 2;
const SP_IEX: usize = SP_LITERALS + SHELL_LITERALS.len();
const SP_POWERSHELL: usize = SP_IEX + 1;
const SP_PWSH: usize = SP_IEX + 2;
const SP_DASH_E: usize = SP_IEX + 3;
const SP_INVOKED: usize = SP_DASH_E + 1;
const SP_COUNT: usize = SP_INVOKED + SHELL_INVOKED.len();

/// Every pattern [`specials`] looks for (lowercase), in one automaton (all matches,
/// overlapping ones too): one pass over the value instead of one substring search per pattern.
static SPECIAL_SEARCH: LazyLock<AhoCorasick> = LazyLock::new(|| {
    AhoCorasick::builder().match_kind(MatchKind::Standard).kind(Some(AhoCorasickKind::DFA)).build(special_patterns()).expect("special patterns compile")
});

/// The patterns of [`SPECIAL_SEARCH`], in the order of their indexes (`SP_*`).
fn special_patterns() -> Vec<&'static str> {
    let mut pats: Vec<&str> = vec!["() {", "<!--#exec"];
    pats.extend(SHELL_LITERALS.iter().map(|p| p.0));
    pats.extend(["iex", "powershell", "pwsh", " -e"]);
    pats.extend(SHELL_INVOKED);
    debug_assert_eq!(pats.len(), SP_COUNT);
    pats
}

/// Where the patterns of [`SPECIAL_SEARCH`] occur in a lowercased value: the first occurrence
/// of each, and every occurrence of `iex` and ` -e` (neither overlaps itself, so these are
/// also the occurrences `match_indices` yields).
#[derive(Debug, PartialEq, Eq)]
struct SpecialMatches {
    first: [Option<usize>; SP_COUNT],
    iex: SmallVec<[usize; 4]>,
    dash_e: SmallVec<[usize; 4]>,
}

/// [`SpecialMatches`] of `l` (lowercase), in one pass of the automaton.
/// `tests::special_matches_are_those_of_a_search_per_pattern` compares it with `str::find` and
/// `str::match_indices` per pattern.
fn special_matches(l: &str) -> SpecialMatches {
    let mut m = SpecialMatches { first: [None; SP_COUNT], iex: SmallVec::new(), dash_e: SmallVec::new() };
    for hit in SPECIAL_SEARCH.find_overlapping_iter(l) {
        let k = hit.pattern().as_usize();
        // Matches come by end position; for one pattern (fixed length) also by start.
        m.first[k].get_or_insert(hit.start());
        if k == SP_IEX {
            m.iex.push(hit.start());
        } else if k == SP_DASH_E {
            m.dash_e.push(hit.start());
        }
    }
    m
}

/// Patterns that are command execution whatever the tokenizer says. The positions are those
/// of the lowercased value (`to_ascii_lowercase` keeps every byte where it is), found by
/// [`special_matches`].
fn specials(s: &str) -> Option<Hit> {
    let l = s.to_ascii_lowercase();
    step(l.len() * 2);
    let SpecialMatches { first, iex, dash_e } = special_matches(&l);
    let mut out = None;
    let mut add = |c: u8, frag: &str, why: &'static str| out = best(out.take(), Some(mk(NAME, Category::Cmdi, c, frag, why)));
    if let Some(p) = first[SP_SHELLSHOCK] {
        // Bash imports `() {` at the start of an environment value as a function: nothing but
        // blanks, a quote or an assignment before it (`f() { ... }` in code is a named
        // function, not Shellshock).
        let before = l[..p].trim_end().as_bytes().last().copied();
        if matches!(before, None | Some(b'=' | b'\'' | b'"' | b':')) && l[p..].contains(';') && l[p..].contains('}') {
            add(98, &s[p..], "shellshock function definition");
        }
    }
    if let Some(p) = first[SP_SSI] {
        add(95, &s[p..], "server-side include exec");
    }
    for (k, (_, c, why)) in SHELL_LITERALS.iter().enumerate() {
        if let Some(p) = first[SP_LITERALS + k] {
            add(*c, &s[p..], why);
        }
    }
    // `iex(...)` / `| iex`, `powershell -enc <base64>`, `cmd /c`.
    for &i in &iex {
        step(1);
        let before = l[..i].trim_end();
        let after = l[i + 3..].trim_start();
        let word = (i == 0 || !l.as_bytes()[i - 1].is_ascii_alphanumeric()) && !l.as_bytes().get(i + 3).is_some_and(|b| b.is_ascii_alphanumeric());
        if word && (after.starts_with('(') || before.ends_with('|') || before.ends_with(';')) {
            add(85, &s[i..], "PowerShell IEX");
        }
    }
    let has_ps = first[SP_POWERSHELL].is_some() || first[SP_PWSH].is_some();
    for &i in dash_e.iter().take_while(|_| has_ps) {
        step(1);
        let rest = &l[i + 3..];
        let flag_end = rest.find(' ').unwrap_or(rest.len());
        let flag = &rest[..flag_end];
        if "ncodedcommand".starts_with(flag) || flag.is_empty() || flag == "nc" || flag == "c" {
            add(90, &s[i..], "PowerShell encoded command");
        }
    }
    for k in 0..SHELL_INVOKED.len() {
        if let Some(p) = first[SP_INVOKED + k] {
            add(85, &s[p..], "shell invoked with a command");
        }
    }
    out
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod gate_tests;
