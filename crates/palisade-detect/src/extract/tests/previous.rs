//! The JSON walk as it was before the one-pass rewrite of 2026-11-23 (f6ec655): the slow
//! reference the current walk is compared with (same values, kinds, locations, order, counts,
//! limits and stops). Kept verbatim but for the budget's type and the key memo's policy of
//! 2026-11-24 (w/extract5): an object that is not an array's element and whose first key is
//! not the one remembered at its depth neither looks up nor remembers its other keys
//! ([`NO_MEMO`]).

use std::borrow::Cow;

use super::super::{recycle, Budget, Callback, Location, Scratch, Seg, Stop, SHAPE_DEPTHS, SHAPE_KEYS};
use crate::FieldKind;

/// Marks an open array on [`Scratch::open`] (objects hold the position of their current key).
const ARRAY: u32 = u32::MAX;

/// The key position an object goes on from when its keys are not looked up in the memo (past
/// [`SHAPE_KEYS`], far below [`ARRAY`]).
const NO_MEMO: u32 = 1 << 20;

/// JSON: keys and strings at any depth, numbers and literals skipped. One streaming pass with
/// `palisade_json::scan` (the same syntax rules as the tape parser, no tape): values are
/// handed over as they are read, the path kept on a stack (one segment per open container,
/// replaced in place as keys and indexes advance). `Ok(false)` when the body is not JSON (or
/// deeper than the limit): the caller then inspects it as raw text, after whatever values came
/// before the syntax error (inspecting them too does no harm).
pub(super) fn json(body: &[u8], sc: &mut Scratch, budget: &mut Budget<'_, Callback<'_>>) -> Result<bool, Stop> {
    // Checked once for the whole body, so that each string is borrowed from it with an O(1)
    // boundary check (the scanner checks the strings' UTF-8 as it goes anyway).
    let Ok(text) = std::str::from_utf8(body) else { return Ok(false) };
    // The path to the current value: one segment per open container.
    let mut path: Vec<Seg<'_>> = recycle(std::mem::take(&mut sc.path));
    // Per depth and key position: the last clean key without escapes seen there.
    let mut memo: Vec<&str> = recycle(std::mem::take(&mut sc.memo));
    let r = json_walk(body, text, &mut sc.open, &mut sc.run, &mut path, &mut memo, budget);
    sc.path = recycle(path);
    sc.memo = recycle(memo);
    r
}

/// [`json`] with its buffers: `open` holds, per open container, the position of its current
/// key (objects) or `ARRAY`.
fn json_walk<'b>(
    b: &'b [u8],
    text: &'b str,
    open: &mut Vec<u32>,
    run: &mut Vec<u8>,
    path: &mut Vec<Seg<'b>>,
    memo: &mut Vec<&'b str>,
    budget: &mut Budget<'_, Callback<'_>>,
) -> Result<bool, Stop> {
    use palisade_json::scan;
    let max_depth = budget.tally.limits.max_depth as usize;
    open.clear();
    path.reserve(16);
    let mut p = scan::skip_ws(b, 0);
    'value: loop {
        match b.get(p) {
            Some(b'"') => {
                let Ok((end, escaped)) = scan::string(b, p) else { return Ok(false) };
                let v = if escaped { unescaped(&b[p + 1..end], run) } else { text.get(p + 1..end).unwrap_or("") };
                budget.emit(Location::Json(path), FieldKind::JsonValue, v)?;
                p = end + 1;
            }
            Some(&c @ (b'{' | b'[')) => {
                let object = c == b'{';
                let q = scan::skip_ws(b, p + 1);
                if b.get(q) == Some(if object { &b'}' } else { &b']' }) {
                    p = q + 1;
                } else {
                    if path.len() >= max_depth {
                        return Ok(false);
                    }
                    path.push(Seg::Index(0));
                    if object {
                        let in_array = open.last() == Some(&ARRAY);
                        open.push(0);
                        let Some((v, known)) = json_key(b, text, q, (path.len() - 1, 0), path, memo, run, budget)? else { return Ok(false) };
                        if !known && !in_array {
                            if let Some(top) = open.last_mut() {
                                *top = NO_MEMO;
                            }
                        }
                        p = v;
                    } else {
                        open.push(ARRAY);
                        p = q;
                    }
                    continue 'value;
                }
            }
            Some(b'-' | b'0'..=b'9') => match scan::number(b, p) {
                Ok((after, _)) => p = after,
                Err(_) => return Ok(false),
            },
            Some(b't' | b'f' | b'n') => match scan::literal(b, p) {
                Ok(after) => p = after,
                Err(_) => return Ok(false),
            },
            _ => return Ok(false),
        }
        // After a value: a separator, a closer, or the end (compact JSON has no whitespace here).
        loop {
            let c = match b.get(p) {
                Some(&c) if c > b' ' => c,
                _ => {
                    p = scan::skip_ws(b, p);
                    match b.get(p) {
                        Some(&c) => c,
                        None => return Ok(open.is_empty()),
                    }
                }
            };
            let Some(top) = open.last_mut() else { return Ok(false) };
            match c {
                b',' => {
                    let q = scan::skip_ws(b, p + 1);
                    if *top != ARRAY {
                        *top += 1;
                        let at = (path.len() - 1, *top as usize);
                        let Some((v, _)) = json_key(b, text, q, at, path, memo, run, budget)? else { return Ok(false) };
                        p = v;
                    } else {
                        if let Some(Seg::Index(i)) = path.last_mut() {
                            *i += 1;
                        }
                        p = q;
                    }
                    continue 'value;
                }
                b'}' if *top != ARRAY => {}
                b']' if *top == ARRAY => {}
                _ => return Ok(false),
            }
            open.pop();
            path.pop();
            p += 1;
        }
    }
}

/// The unescaped value of string contents checked by `palisade_json::scan::string`, in `buf`.
fn unescaped<'r>(raw: &[u8], buf: &'r mut Vec<u8>) -> &'r str {
    buf.clear();
    palisade_json::scan::unescape_into(raw, buf);
    // Checked strings unescape to UTF-8 (lone surrogates are rejected); never fails.
    std::str::from_utf8(buf).unwrap_or("\u{FFFD}")
}

/// A JSON object key at `p` (after whitespace), the `at`-th key (position, from 0) of an
/// object at depth `at.0`: put on the path (replacing the segment of the object's previous
/// key) and handed over; returns the offset of its value (`None`: not a key and `:`). When the
/// last object at that depth had the same key at that position, unescaped and judged clean
/// ([`Verdict`]), the key is only counted: the objects of an array share their keys, and each
/// would otherwise be scanned and looked up again.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn json_key<'b>(
    b: &'b [u8],
    text: &'b str,
    p: usize,
    at: (usize, usize),
    path: &mut [Seg<'b>],
    memo: &mut Vec<&'b str>,
    esc_buf: &mut Vec<u8>,
    budget: &mut Budget<'_, Callback<'_>>,
) -> Result<Option<(usize, bool)>, Stop> {
    let (depth, pos) = at;
    if depth < SHAPE_DEPTHS && pos < SHAPE_KEYS {
        if let Some(&k) = memo.get(depth * SHAPE_KEYS + pos) {
            let n = k.len();
            // `"`, the same bytes, `"`: the same string, without escapes, and valid.
            if n != 0 && b.get(p) == Some(&b'"') && b.get(p + 1 + n) == Some(&b'"') && same_bytes(&b[p + 1..p + 1 + n], k.as_bytes()) {
                budget.count(k)?;
                if let Some(top) = path.last_mut() {
                    *top = Seg::Key(Cow::Borrowed(k));
                }
                return Ok(colon(b, p + 2 + n).map(|v| (v, true)));
            }
        }
    }
    Ok(json_key_read(b, text, p, at, path, memo, esc_buf, budget)?.map(|v| (v, false)))
}

/// `:` (after whitespace) at `p`; the offset of the value after it (after whitespace).
#[inline(always)]
fn colon(b: &[u8], p: usize) -> Option<usize> {
    if b.get(p) == Some(&b':') {
        return Some(palisade_json::scan::skip_ws(b, p + 1));
    }
    palisade_json::scan::colon(b, p).ok()
}

/// Whether `x` and `y` (of the same length) hold the same bytes: short keys compared as one or
/// two (overlapping) words.
#[inline(always)]
fn same_bytes(x: &[u8], y: &[u8]) -> bool {
    let n = x.len();
    if n != y.len() {
        return false;
    }
    let w8 = |s: &[u8], i: usize| s.get(i..i + 8).map(|w| u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]));
    let w4 = |s: &[u8], i: usize| s.get(i..i + 4).map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]));
    match n {
        0..=3 => x == y,
        4..=8 => w4(x, 0) == w4(y, 0) && w4(x, n - 4) == w4(y, n - 4),
        9..=16 => w8(x, 0) == w8(y, 0) && w8(x, n - 8) == w8(y, n - 8),
        _ => x == y,
    }
}

/// [`json_key`] for a key not seen at that place before: read, put on the path, handed over.
#[allow(clippy::too_many_arguments)]
#[inline(never)]
fn json_key_read<'b>(
    b: &'b [u8],
    text: &'b str,
    p: usize,
    at: (usize, usize),
    path: &mut [Seg<'b>],
    memo: &mut Vec<&'b str>,
    esc_buf: &mut Vec<u8>,
    budget: &mut Budget<'_, Callback<'_>>,
) -> Result<Option<usize>, Stop> {
    if b.get(p) != Some(&b'"') {
        return Ok(None);
    }
    let Ok((end, escaped)) = palisade_json::scan::string(b, p) else { return Ok(None) };
    let k: Cow<'b, str> = if escaped { Cow::Owned(unescaped(&b[p + 1..end], esc_buf).to_owned()) } else { Cow::Borrowed(text.get(p + 1..end).unwrap_or("")) };
    let Some(top) = path.last_mut() else { return Ok(None) };
    *top = Seg::Key(k);
    let mut clean = false;
    if let Some(Seg::Key(k)) = path.last() {
        clean = budget.emit_judged(Location::Json(path), FieldKind::JsonKey, k)?;
    }
    let (depth, pos) = at;
    if depth < SHAPE_DEPTHS && pos < SHAPE_KEYS {
        let slot = depth * SHAPE_KEYS + pos;
        if memo.len() <= slot {
            memo.resize((depth + 1) * SHAPE_KEYS, "");
        }
        memo[slot] = match path.last() {
            Some(Seg::Key(Cow::Borrowed(k))) if clean => k,
            _ => "",
        };
    }
    Ok(colon(b, end + 1))
}
