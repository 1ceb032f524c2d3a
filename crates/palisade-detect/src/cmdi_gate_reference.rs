//! The cmdi gate's test as it was before the single-scan rewrite (commit 7e8f338): the oracle
//! [`gate_test_or_probe`](super::gate_test_or_probe) is compared with, on generated values and
//! on every value of the corpora and bench bodies (`cmdi_gate_tests.rs`). Verbatim copies,
//! renamed `*_reference`; they share the unchanged helpers (tables, [`super::breakout_probe`],
//! [`super::bare_program`], [`super::csi_len`], [`super::hidden_program`]) with the fast code.

#![allow(clippy::all)]

use super::*;

pub(super) fn gate_test_or_probe_reference(d: &str) -> bool {
    (d.len() <= 8 && breakout_probe(d).is_some()) || gate_test_reference(d)
}

pub(super) fn gate_test_reference(d: &str) -> bool {
    let b = d.as_bytes();
    let mut i = 0;
    while i < b.len() && WORD_BYTE[b[i] as usize] != 0 {
        i += 1;
    }
    if i == b.len() && !b.is_empty() && b.len() <= 64 {
        return bare_program(b);
    }
    // `b[..i]` are word bytes: the plain path goes on from there.
    plain_first_word_program_after_reference(b, i).unwrap_or_else(|| command_position_walk_reference(b))
}

pub(super) fn run_end_reference(t: &[u8; 256], b: &[u8], mut j: usize, stop: usize) -> usize {
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

pub(super) fn plain_first_word_program_after_reference(b: &[u8], known: usize) -> Option<bool> {
    let class = |i: usize| PLAIN_CLASS[b[i] as usize];
    let mut i = 0;
    while i < b.len() && class(i) == BLANK {
        i += 1;
    }
    let start = i;
    i = i.max(known);
    // A word of more than 20 bytes names no program: its end need not be found (the bytes after
    // the 21st are checked by `any_not_plain_reference` below like the rest).
    let stop = b.len().min(start + 21);
    i = run_end_reference(&PLAIN_WORD, b, i, stop);
    let word = &b[start..i];
    if any_not_plain_reference(&b[i..]) {
        return None;
    }
    let mut a = [0u8; 20];
    if word.is_empty() || word.len() > a.len() {
        return Some(false);
    }
    for (o, c) in a.iter_mut().zip(word) {
        *o = c.to_ascii_lowercase();
    }
    Some(known_program_reference(&a, word.len()))
}

/// Whether a [`NOT_PLAIN`] byte occurs in `b` (eight table lookups per test).

pub(super) fn any_not_plain_reference(b: &[u8]) -> bool {
    let t = &PLAIN_CLASS;
    let mut chunks = b.chunks_exact(8);
    for c in &mut chunks {
        let m = t[c[0] as usize]
            | t[c[1] as usize]
            | t[c[2] as usize]
            | t[c[3] as usize]
            | t[c[4] as usize]
            | t[c[5] as usize]
            | t[c[6] as usize]
            | t[c[7] as usize];
        if m & NOT_PLAIN != 0 {
            return true;
        }
    }
    chunks.remainder().iter().any(|&c| t[c as usize] & NOT_PLAIN != 0)
}

static FAST_WORD_REFERENCE: [u8; 256] = {
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

/// The first offset at or after `j` whose byte is not a [`FAST_WORD_REFERENCE`] byte (`b.len()` if none):
/// eight table lookups per test.

pub(super) fn fast_word_end_reference(b: &[u8], mut j: usize) -> usize {
    let t = &FAST_WORD_REFERENCE;
    while let Some(c) = b.get(j..j + 8) {
        if t[c[0] as usize] & t[c[1] as usize] & t[c[2] as usize] & t[c[3] as usize] & t[c[4] as usize] & t[c[5] as usize] & t[c[6] as usize] & t[c[7] as usize]
            == 0
        {
            break;
        }
        j += 8;
    }
    while j < b.len() && t[b[j] as usize] != 0 {
        j += 1;
    }
    j
}

pub(super) fn command_position_walk_reference(b: &[u8]) -> bool {
    // [`hidden_program`] needs a `?` or `*` (glob path) or a `$` (ANSI-C quoting): without
    // them, no word is looked at for it (found once, for the first word that starts with `/` or
    // `$`).
    let mut may_hide: Option<bool> = None;
    let mut cmdpos = true;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
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
        // A word: up to a blank or an operator.
        let word_start = i;
        let mut a = [0u8; 20];
        let mut la = 0usize; // after the last `/` or `\`
        let mut bb = [0u8; 20];
        let mut lb = 0usize; // after the last `/`, `\` dropped
        let mut content = false;
        // Most words hold only plain bytes and `/` up to the blank or operator that ends them:
        // found with one table lookup per byte, the base name read once. The others are read
        // a byte at a time below.
        let j = fast_word_end_reference(b, i);
        let fast = j > i && (j == b.len() || PLAIN_CLASS[b[j] as usize] == BLANK || is_gate_op(b[j], b.get(j + 1).copied().unwrap_or(0)));
        if fast {
            let base = b[i..j].iter().rposition(|&c| c == b'/').map_or(i, |p| i + p + 1);
            for (o, c) in a.iter_mut().zip(&b[base..j]) {
                *o = c.to_ascii_lowercase();
            }
            la = j - base;
            (bb, lb) = (a, la);
            content = true;
            i = j;
        }
        while !fast && i < b.len() {
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
        // (A word read by the fast path has `bb` equal to `a`: looked up once.)
        if cmdpos
            && content
            && (known_program_reference(&a, la)
                || !fast && known_program_reference(&bb, lb)
                || word_start < b.len()
                    && matches!(b[word_start], b'/' | b'$')
                    && *may_hide.get_or_insert_with(|| memchr::memchr3(b'?', b'*', b'$', b).is_some())
                    && hidden_program(&b[word_start..i]))
        {
            return true;
        }
        if content {
            cmdpos = false;
            // Nothing is in command position again before the next operator: skip to it (a
            // superset of the tokenizer's resets: an operator inside `${IFS...}` counts too).
            loop {
                let Some(k) = b[i..].iter().position(|&c| MAY_OPERATE[c as usize]) else {
                    i = b.len();
                    break;
                };
                i += k;
                let c = b[i];
                if is_gate_op(c, b.get(i + 1).copied().unwrap_or(0)) || (c == b'\\' && csi_len(&b[i..]) > 0) {
                    break;
                }
                i += 1;
            }
        }
    }
    false
}

pub(super) fn known_program_reference(buf: &[u8; 20], len: usize) -> bool {
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
