//! The fused validator: one pass over the input bytes that checks JSON syntax and the schema
//! together, without building a tape.
//!
//! It answers one question: is the document certainly well-formed and valid, with nothing to
//! report (no violation, no shadow-field finding)? `true` is final; `false` means "ask the
//! tape validator" ([`crate::Schemas::validate_with`] over a [`palisade_json::Tape`]), which
//! produces the error, its reason and its location. So verdicts and messages are those of the
//! tape validator by construction, as long as `true` is only given when the tape validator
//! would find nothing: the differential tests (`palisade-openapi/tests/fused_diff.rs`) and
//! the fuzz target `fused_vs_tape` check exactly that.
//!
//! How it reads:
//! - The tokenizer is [`palisade_json::scan`] (same string scanner, same grammar, same
//!   depth and token limits as the tape parser); strings are not copied unless a check needs
//!   their unescaped value, numbers are looked at only when the schema has numeric keywords.
//! - Containers go on an explicit stack ([`Frame`]s in [`FusedScratch`]), never recursion;
//!   values with no schema are skipped by [`palisade_json::scan::skip_value`] (a bit stack).
//! - Each compiled schema has a [`Plan`] (computed once at compile end): `$ref`-only nodes
//!   are looked through; the node is either accepted as is ([`Class::Any`]), checked here
//!   ([`Class::Fused`]: type, enum of scalars, string length/pattern/format, numeric bounds
//!   and format, properties with a required bitset, additionalProperties, shadow-field
//!   policy, items, min/max items and properties) or handed to the tape validator
//!   ([`Class::Tape`]: anything else — composition, conditionals, `uniqueItems`,
//!   `patternProperties`, read/write-only...). A [`Class::Tape`] value is skipped to find its
//!   span, parsed onto a scratch tape and validated there, starting at the same evaluation
//!   depth, so the answer is the same as in place.
//! - Evaluation depth is counted as the tape validator counts it ([`crate::MAX_EVAL_DEPTH`]).

use palisade_json::{scan, Limits, Tape};

use crate::compile::{bytes_eq, quick, quick_kinds, Const, SNode};
use crate::formats::Format;
use crate::validate::{Cx, Scratch};
use crate::{num, Direction, Options, SchemaId, Schemas, TypeSet, Violation, MAX_EVAL_DEPTH};

/// No schema: the value is only checked for syntax.
const NONE: u32 = u32::MAX;
/// Returned by [`Walker::member`] in place of a schema: the member's value was consumed
/// already (the offset returned is after it), continue with what follows it.
const DONE: u32 = u32::MAX - 1;

/// How the fused validator treats a schema.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Class {
    /// Every value is valid (syntax only).
    Any,
    /// Checked in the fused pass.
    Fused,
    /// Handed to the tape validator.
    #[default]
    Tape,
}

/// What the fused validator knows about one compiled schema.
#[derive(Clone, Debug, Default)]
pub(crate) struct Plan {
    /// The node whose keywords apply (`$ref`-only nodes looked through).
    pub target: u32,
    pub class: Class,
    /// Evaluation depth the tape validator spends entering this schema (non-leaf nodes on the
    /// `$ref` chain, the target included).
    pub cost: u32,
    /// Required properties as bits of `props` indices: in requests, in responses.
    pub required: [u64; 2],
    /// With shadow fields on, a member that `properties` does not name is a finding.
    pub shadow_strict: bool,
    /// Per property, in `properties` order: the key as it appears in compact input, for the
    /// in-place comparison with the expected next member (see [`Expect`]).
    pub expect: Box<[Expect]>,
    /// The [`quick`] kinds of value this schema (itself, not through `$ref`) accepts with no
    /// check beyond its type: such scalars are only scanned.
    pub quick: u8,
    /// For a number written as an integer that fits in `i64`: valid exactly when within this
    /// range (see [`int_range`]); `None` when the target's numeric checks are not just that.
    pub irange: Option<(i64, i64)>,
}

/// The integer range equivalent to node `n`'s numeric keywords for integer-written numbers
/// within `i64` (type, bounds with integer values, `int32`/`int64` formats), or `None` when
/// something else applies (`multipleOf`, a fractional bound, `enum`) or numbers are not
/// admitted at all (then the full [`number_ok`] says no).
fn int_range(n: &SNode) -> Option<(i64, i64)> {
    if !(n.types == 0 || n.types & (TypeSet::INTEGER | TypeSet::NUMBER) != 0) || n.enum_.is_some() {
        return None;
    }
    let (mut lo, mut hi) = (i64::MIN, i64::MAX);
    if let Some(c) = n.num.as_deref() {
        if c.multiple_of.is_some() {
            return None;
        }
        if let Some(m) = &c.minimum {
            lo = lo.max(m.i?);
        }
        if let Some(m) = &c.exclusive_minimum {
            lo = lo.max(m.i?.checked_add(1)?);
        }
        if let Some(m) = &c.maximum {
            hi = hi.min(m.i?);
        }
        if let Some(m) = &c.exclusive_maximum {
            hi = hi.min(m.i?.checked_sub(1)?);
        }
    }
    if n.format == Some(Format::Int32) {
        (lo, hi) = (lo.max(i32::MIN.into()), hi.min(i32::MAX.into()));
    }
    Some((lo, hi))
}

fn ref_only(n: &SNode) -> Option<SchemaId> {
    let r = n.ref_?;
    let bare = !n.reject_all
        && n.rare().dynamic_ref.is_none()
        && n.dyn_table.is_none()
        && n.types == 0
        && !n.nullable
        && !n.read_only
        && !n.write_only
        && n.enum_.is_none()
        && n.rare().const_.is_none()
        && !n.has_string
        && !n.has_number
        && !n.has_object
        && !n.has_array
        && n.all_of.is_empty()
        && n.any_of.is_empty()
        && n.one_of.is_empty()
        && n.rare().not.is_none()
        && n.rare().if_.is_none()
        && n.rare().discriminator.is_none()
        && n.rare().unevaluated_props.is_none()
        && n.rare().unevaluated_items.is_none();
    bare.then_some(r)
}

fn fusable(n: &SNode) -> bool {
    !n.reject_all
        && !n.read_only
        && !n.write_only
        && n.rare().const_.is_none()
        && n.enum_.as_ref().is_none_or(|e| e.iter().all(|c| matches!(c, Const::Null | Const::Bool(_) | Const::Num(_) | Const::Str(_))))
        && n.rare().prefix_items.is_empty()
        && n.rare().contains.is_none()
        && !n.unique_items
        && n.rare().pattern_props.is_empty()
        && n.rare().property_names.is_none()
        && n.rare().dependent_required.is_empty()
        && n.rare().dependent_schemas.is_empty()
        && !n.has_inplace
        && n.rare().unevaluated_props.is_none()
        && n.rare().unevaluated_items.is_none()
        && n.required.iter().all(|r| r.prop.is_some_and(|p| p < 64))
}

/// Plans for every node of an arena (after `derive`).
pub(crate) fn plan(nodes: &[SNode]) -> Vec<Plan> {
    let quick: Vec<u8> = nodes.iter().map(quick_kinds).collect();
    (0..nodes.len())
        .map(|i| {
            let mut id = i;
            let mut cost = 0;
            // `$ref` chains are acyclic here (in-place cycles are compile errors); bounded anyway.
            for _ in 0..nodes.len() {
                match ref_only(&nodes[id]) {
                    Some(r) => {
                        cost += 1;
                        id = r.0 as usize;
                    }
                    None => break,
                }
            }
            let n = &nodes[id];
            if !n.leaf && !n.accept_all {
                cost += 1;
            }
            let class = if n.accept_all {
                Class::Any
            } else if fusable(n) {
                Class::Fused
            } else {
                Class::Tape
            };
            let mut required = [0u64; 2];
            for r in &n.required {
                if let Some(p) = r.prop.filter(|&p| p < 64) {
                    if !r.read_only {
                        required[0] |= 1 << p;
                    }
                    if !r.write_only {
                        required[1] |= 1 << p;
                    }
                }
            }
            let shadow_strict = n.known.as_ref().is_some_and(|k| !k.all);
            let irange = if class == Class::Fused { int_range(n) } else { None };
            let expect = (n.props.names.iter().zip(&n.props.ids).enumerate())
                .map(|(k, (name, sid))| {
                    let plain = !name.iter().any(|&b| b == b'"' || b == b'\\' || b < 0x20);
                    let quoted = if plain { [&b"\""[..], name, b"\""].concat().into() } else { Box::default() };
                    let quick = quick.get(sid.0 as usize).copied().unwrap_or(0);
                    let (words, masks) = key_words(&quoted);
                    Expect {
                        quoted,
                        words,
                        masks,
                        bit: if k < 64 { 1 << k } else { 0 },
                        sid: sid.0,
                        quick,
                        target: sid.0,
                        cost: 0,
                        inline: false,
                        irange: None,
                    }
                })
                .collect();
            Plan { target: id as u32, class, cost, required, shadow_strict, expect, quick: quick[i], irange }
        })
        .collect::<Vec<_>>()
}

/// Completes the [`Expect`] tables of `plans` (made by [`plan`]) with what each property's
/// own plan says: whether a scalar value is checked in the member loop, and how.
pub(crate) fn link(plans: &mut [Plan]) {
    let info: Vec<Plan> = plans.iter().map(|p| Plan { expect: Box::default(), ..p.clone() }).collect();
    for p in plans.iter_mut() {
        for e in p.expect.iter_mut() {
            if let Some(q) = info.get(e.sid as usize) {
                (e.target, e.cost, e.inline, e.irange) = (q.target, q.cost, q.class == Class::Fused, q.irange);
            }
        }
    }
}

/// `quoted` (at most 24 bytes) as three little-endian words, zero-padded, with the masks of
/// its bytes: a key at `p` is `quoted` when the 24 input bytes from `p`, masked, equal the
/// words (see [`Expect::is_at`]). Longer keys get all-zero masks and are compared by length.
fn key_words(quoted: &[u8]) -> ([u64; 3], [u64; 3]) {
    let (mut words, mut masks) = ([0u64; 3], [0u64; 3]);
    if quoted.len() <= 24 {
        for (i, &b) in quoted.iter().enumerate() {
            words[i / 8] |= (b as u64) << (8 * (i % 8));
            masks[i / 8] |= 0xFF << (8 * (i % 8));
        }
    }
    (words, masks)
}

/// A property of an object schema as the member loop expects it next.
#[derive(Clone, Debug)]
pub(crate) struct Expect {
    /// `"name"` with its quotes when the name can be compared with the input bytes as they are
    /// (no quote, backslash or control character in it), else empty: such a property is never
    /// expected in place (its key takes [`Walker::member_any`], which unescapes).
    pub quoted: Box<[u8]>,
    /// `quoted` as masked words (see [`key_words`]): compared with the input without a call
    /// or a branch on its length.
    pub words: [u64; 3],
    pub masks: [u64; 3],
    /// The property's bit in [`Frame::found`] (0 from index 64 on).
    pub bit: u64,
    /// The property's schema.
    pub sid: u32,
    /// The [`quick`] kinds of that schema (its [`Plan::quick`]).
    pub quick: u8,
    /// From the property schema's plan (filled in by [`link`]): its target, evaluation cost,
    /// whether it is [`Class::Fused`] (then a scalar value is checked in the member loop,
    /// [`Walker::scalar`]) and its [`Plan::irange`].
    pub target: u32,
    pub cost: u32,
    pub inline: bool,
    pub irange: Option<(i64, i64)>,
}

impl Expect {
    /// Whether the key at `p` (its opening quote) is this property's: its quoted name is
    /// there. (A key cannot hold an unescaped quote, so the closing quote ends it: a prefix
    /// match is an exact one.)
    #[inline(always)]
    fn is_at(&self, inp: &[u8], p: usize) -> bool {
        let n = self.quoted.len();
        // 1 to 24 bytes (a quoted name has at least 2), with 24 input bytes to read: as many
        // words as the name takes.
        if n.wrapping_sub(1) < 24 {
            if let Some(s) = inp.get(p..p + 24) {
                let w = |i: usize| u64::from_le_bytes([s[i], s[i + 1], s[i + 2], s[i + 3], s[i + 4], s[i + 5], s[i + 6], s[i + 7]]);
                let (k, m) = (&self.words, &self.masks);
                let d = (w(0) ^ k[0]) & m[0];
                return if n <= 8 {
                    d == 0
                } else if n <= 16 {
                    d | ((w(8) ^ k[1]) & m[1]) == 0
                } else {
                    d | ((w(8) ^ k[1]) & m[1]) | ((w(16) ^ k[2]) & m[2]) == 0
                };
            }
        }
        n != 0 && inp.get(p..p + n).is_some_and(|key| bytes_eq(key, &self.quoted))
    }
}

/// Reusable memory of the fused validator (keep one per worker).
#[derive(Debug, Default)]
pub struct FusedScratch {
    stack: Vec<Frame>,
    buf: Vec<u8>,
    tape: Tape,
    dom: Scratch,
    violations: Vec<Violation>,
    /// Whether [`Schemas::validate_fused`] lists the settled strings ([`FusedScratch::settled`]).
    record: bool,
    settled: Vec<(u32, u32)>,
}

impl FusedScratch {
    /// Have [`Schemas::validate_fused`] list the settled strings of the documents it accepts.
    pub fn record_settled(&mut self, on: bool) {
        self.record = on;
        self.settled.clear();
    }

    /// After [`Schemas::validate_fused`] answered `true` with recording on: the string tokens
    /// whose text the schema pins down, as the start and length of their contents between the
    /// quotes, in document order: string values valid against a schema with `enum` or a format
    /// of a closed alphabet ([`Format::closed_alphabet`]), only those written without escapes
    /// (their contents are then their text). Not meaningful after `false`.
    pub fn settled(&self) -> &[(u32, u32)] {
        &self.settled
    }

    /// Lists the contents of the string token `p..=end` (quotes at both) as settled.
    #[inline(always)]
    fn settle(&mut self, p: usize, end: usize) {
        if self.record {
            // Offsets fit: the input is shorter than `u32::MAX` (see `validate_fused`).
            self.settled.push((p as u32 + 1, (end - p - 1) as u32));
        }
    }
}

/// An open container being checked against node `node` (a plan target).
#[derive(Clone, Copy, Debug)]
struct Frame {
    node: u32,
    object: bool,
    /// Members or items finished so far.
    count: u32,
    /// Properties seen (bits of `props` indices below 64).
    found: u64,
    /// The next property expected (documents tend to follow the schema's order).
    hint: u32,
    /// Evaluation depth this frame adds.
    cost: u32,
}

/// `COUNT`: count tokens against `limits.max_tokens`. Off when the input is no longer than
/// that limit: every token takes at least one byte of its own, so it cannot be exceeded.
struct Walker<'a, const COUNT: bool> {
    s: &'a Schemas,
    inp: &'a [u8],
    opts: &'a Options,
    limits: Limits,
    tokens: usize,
    /// Evaluation depth of the open frames (as the tape validator would count it).
    depth: u32,
    sc: &'a mut FusedScratch,
}

impl Schemas {
    /// The fused validator (see the module `fused`): `true` when `input` is one well-formed
    /// JSON document that is valid against schema `id` with nothing to report (not even a
    /// shadow-field finding under `opts.shadow_unknown`); `false` when the caller must parse
    /// and validate it with the tape validator to learn why (or whether: `false` is also the
    /// answer for what the fused pass does not decide itself, e.g. a root schema with `anyOf`).
    pub fn validate_fused(&self, id: SchemaId, input: &[u8], opts: &Options, scratch: &mut FusedScratch) -> bool {
        let Some(plan) = self.plans.get(id.0 as usize) else { return false };
        if plan.class == Class::Tape || input.len() > u32::MAX as usize - 1 {
            return false;
        }
        scratch.stack.clear();
        scratch.settled.clear();
        let limits = Limits::default();
        if input.len() > limits.max_tokens {
            Walker::<true> { s: self, inp: input, opts, limits, tokens: 0, depth: 0, sc: scratch }.run(id.0).is_some()
        } else {
            Walker::<false> { s: self, inp: input, opts, limits, tokens: 0, depth: 0, sc: scratch }.run(id.0).is_some()
        }
    }
}

#[inline(always)]
fn type_ok(types: u8, bit: u8) -> bool {
    types == 0 || types & bit != 0
}

/// `i64` of an integer text (as the tape validator computes it), else `None`.
#[inline(always)]
fn int_value(t: &[u8], integer: bool) -> Option<i64> {
    if !integer {
        return None;
    }
    let (neg, d) = if t[0] == b'-' { (true, &t[1..]) } else { (false, t) };
    if d.len() > 18 {
        return std::str::from_utf8(t).ok()?.parse().ok();
    }
    let mut x: i64 = 0;
    for &b in d {
        x = x * 10 + (b - b'0') as i64;
    }
    Some(if neg { -x } else { x })
}

fn count_chars(s: &[u8]) -> u64 {
    s.iter().filter(|&&b| b & 0xC0 != 0x80).count() as u64
}

/// A string value (unescaped) against a fusable node whose type admits strings.
fn string_ok(s: &Schemas, n: &SNode, v: &[u8]) -> bool {
    if n.min_length.is_some() || n.max_length.is_some() {
        let bytes = v.len() as u64;
        // Bytes bound characters from above: count only when that decides.
        let need = n.max_length.is_some_and(|m| bytes > m) || n.min_length.is_some_and(|m| bytes < 4 * m);
        let chars = if need { count_chars(v) } else { bytes };
        if n.max_length.is_some_and(|m| chars > m) || n.min_length.is_some_and(|m| chars < m) {
            return false;
        }
    }
    if let Some(p) = n.pattern {
        if !s.regexes[p as usize].is_match(v) {
            return false;
        }
    }
    if let Some(f) = n.format {
        if !f.check_str(v) {
            return false;
        }
    }
    if let Some(e) = &n.enum_ {
        if !e.iter().any(|c| matches!(c, Const::Str(x) if **x == *v)) {
            return false;
        }
    }
    true
}

/// A number (its text) against a fusable node whose [`Plan::irange`] is `irange`.
#[inline(always)]
fn number_ok_fast(n: &SNode, irange: Option<(i64, i64)>, text: &[u8], integer: bool) -> bool {
    if let (true, Some((lo, hi))) = (integer, irange) {
        // At most 18 characters: at most 18 digits, read exactly by `int_value`.
        if text.len() <= 18 {
            let x = int_value(text, true).unwrap_or(0);
            return lo <= x && x <= hi;
        }
    }
    number_ok(n, text, integer)
}

/// A number (its text) against a fusable node.
fn number_ok(n: &SNode, text: &[u8], integer: bool) -> bool {
    let t = n.types;
    if t != 0 && t & TypeSet::NUMBER == 0 && !(t & TypeSet::INTEGER != 0 && (integer || num::is_integral_text(text))) {
        return false;
    }
    if n.num.is_none() && n.format.is_none() && n.enum_.is_none() {
        return true;
    }
    let int = int_value(text, integer);
    if let Some(c) = n.num.as_deref() {
        use std::cmp::Ordering::*;
        // A decimal is read once for all integer bounds (as `cmp_instance` would read it).
        let dec = if integer { None } else { num::decimal_int(text) };
        let cmp = |m: &num::Num| match (dec, m.i) {
            (Some(d), Some(b)) => d.cmp_int(b),
            _ => num::cmp_instance(text, int, m),
        };
        if c.minimum.as_ref().is_some_and(|m| cmp(m) == Less)
            || c.exclusive_minimum.as_ref().is_some_and(|m| cmp(m) != Greater)
            || c.maximum.as_ref().is_some_and(|m| cmp(m) == Greater)
            || c.exclusive_maximum.as_ref().is_some_and(|m| cmp(m) != Less)
            || c.multiple_of.as_ref().is_some_and(|m| !num::is_multiple(text, int, m))
        {
            return false;
        }
    }
    if let Some(f) = n.format {
        if !f.check_number(text) {
            return false;
        }
    }
    if let Some(e) = &n.enum_ {
        if !e.iter().any(|c| matches!(c, Const::Num(m) if num::cmp_instance(text, int, m) == std::cmp::Ordering::Equal)) {
            return false;
        }
    }
    true
}

/// The scalar at `p` when its kind is one of `q` ([`quick`] bits): the offset after it, checked
/// for syntax. `None` when it is of another kind, a container (or malformed: the full path
/// then says so).
#[inline(always)]
fn quick_scalar(inp: &[u8], p: usize, q: u8) -> Option<usize> {
    match inp[p] {
        b'"' if q & quick::STRING != 0 => scan::string(inp, p).ok().map(|(e, _)| e + 1),
        b't' | b'f' if q & quick::BOOL != 0 => scan::literal(inp, p).ok(),
        b'n' if q & quick::NULL != 0 => scan::literal(inp, p).ok(),
        b'-' | b'0'..=b'9' if q & (quick::INT_TEXT | quick::FRAC_TEXT) != 0 => {
            let (end, integer) = scan::number(inp, p).ok()?;
            (q & if integer { quick::INT_TEXT } else { quick::FRAC_TEXT } != 0).then_some(end)
        }
        _ => None,
    }
}

impl<const COUNT: bool> Walker<'_, COUNT> {
    #[inline(always)]
    fn token(&mut self) -> Option<()> {
        if !COUNT {
            return Some(());
        }
        self.tokens += 1;
        (self.tokens <= self.limits.max_tokens).then_some(())
    }

    fn run(&mut self, root: u32) -> Option<()> {
        let inp = self.inp;
        let s = self.s;
        let mut p = scan::skip_ws(inp, 0);
        // The schema of the value at `p` (a schema id, or NONE).
        let mut sid = root;
        'value: loop {
            if p >= inp.len() {
                return None;
            }
            let plan = if sid == NONE { None } else { Some(&s.plans[sid as usize]) };
            // Scalars the schema takes as they come (a plain `{type: integer}`...): scan only.
            if let Some(q) = plan.map(|pl| pl.quick).filter(|&q| q != 0) {
                if let Some(end) = quick_scalar(inp, p, q) {
                    self.token()?;
                    p = end;
                    if let Some(done) = self.after_value(&mut p, &mut sid) {
                        return done;
                    }
                    continue 'value;
                }
            }
            if let Some(plan) = plan {
                // The tape validator stops entering schemas at this depth (with a violation).
                if plan.class != Class::Tape && plan.cost > 0 && self.depth + plan.cost > MAX_EVAL_DEPTH {
                    return None;
                }
            }
            match plan {
                None => p = scan::skip_value(inp, p, self.sc.stack.len() as u32, &mut self.tokens, &self.limits).ok()?,
                Some(plan) if plan.class == Class::Any => {
                    p = scan::skip_value(inp, p, self.sc.stack.len() as u32, &mut self.tokens, &self.limits).ok()?;
                }
                Some(plan) if plan.class == Class::Tape => {
                    let end = scan::skip_value(inp, p, self.sc.stack.len() as u32, &mut self.tokens, &self.limits).ok()?;
                    self.tape(sid, p, end)?;
                    p = end;
                }
                Some(plan) => {
                    let n = &s.nodes[plan.target as usize];
                    self.token()?;
                    match inp[p] {
                        open @ (b'{' | b'[') => {
                            let object = open == b'{';
                            if !type_ok(n.types, if object { TypeSet::OBJECT } else { TypeSet::ARRAY }) || n.enum_.is_some() {
                                return None;
                            }
                            if self.sc.stack.len() as u32 >= self.limits.max_depth {
                                return None;
                            }
                            self.depth += plan.cost;
                            self.sc.stack.push(Frame { node: plan.target, object, count: 0, found: 0, hint: 0, cost: plan.cost });
                            p = scan::skip_ws(inp, p + 1);
                            let close = if object { b'}' } else { b']' };
                            if inp.get(p) == Some(&close) {
                                p += 1;
                                self.close()?;
                            } else if object {
                                (p, sid) = self.member(p)?;
                                if sid != DONE {
                                    continue 'value;
                                }
                            } else {
                                sid = n.items.map_or(NONE, |i| i.0);
                                continue 'value;
                            }
                        }
                        _ => p = self.scalar(p, n, plan.irange)?,
                    }
                }
            }
            if let Some(done) = self.after_value(&mut p, &mut sid) {
                return done;
            }
        }
    }

    /// The value at `p`, not a container, against [`Class::Fused`] node `n` (whose
    /// [`Plan::irange`] is `irange`): the offset after it when it is well-formed and valid.
    #[inline(always)]
    fn scalar(&mut self, p: usize, n: &SNode, irange: Option<(i64, i64)>) -> Option<usize> {
        let inp = self.inp;
        match inp[p] {
            b'"' => {
                let (end, escaped) = scan::string(inp, p).ok()?;
                if !type_ok(n.types, TypeSet::STRING) {
                    return None;
                }
                if n.has_string || n.enum_.is_some() {
                    let raw = &inp[p + 1..end];
                    let ok = if escaped {
                        self.sc.buf.clear();
                        scan::unescape_into(raw, &mut self.sc.buf);
                        string_ok(self.s, n, &self.sc.buf)
                    } else {
                        string_ok(self.s, n, raw)
                    };
                    if !ok {
                        return None;
                    }
                    if !escaped && (n.enum_.is_some() || n.format.is_some_and(Format::closed_alphabet)) {
                        self.sc.settle(p, end);
                    }
                }
                Some(end + 1)
            }
            b'-' | b'0'..=b'9' => {
                let (end, integer) = scan::number(inp, p).ok()?;
                number_ok_fast(n, irange, &inp[p..end], integer).then_some(end)
            }
            b't' | b'f' => {
                let end = scan::literal(inp, p).ok()?;
                if !type_ok(n.types, TypeSet::BOOLEAN) {
                    return None;
                }
                if let Some(e) = &n.enum_ {
                    let b = inp[p] == b't';
                    if !e.iter().any(|c| matches!(c, Const::Bool(x) if *x == b)) {
                        return None;
                    }
                }
                Some(end)
            }
            b'n' => {
                let end = scan::literal(inp, p).ok()?;
                // `nullable` admits null whatever the other keywords say.
                if !n.nullable && (!type_ok(n.types, TypeSet::NULL) || n.enum_.as_ref().is_some_and(|e| !e.iter().any(|c| matches!(c, Const::Null)))) {
                    return None;
                }
                Some(end)
            }
            _ => None,
        }
    }

    /// After a value: a separator, closers, or the end. `Some(result)` when the walk is over,
    /// else `None` with `p` and `sid` set to the next value and its schema.
    #[inline(always)]
    fn after_value(&mut self, p: &mut usize, sid: &mut u32) -> Option<Option<()>> {
        let inp = self.inp;
        loop {
            *p = scan::skip_ws(inp, *p);
            let Some(top) = self.sc.stack.last_mut() else {
                return Some((*p == inp.len()).then_some(()));
            };
            if *p >= inp.len() {
                return Some(None);
            }
            top.count += 1;
            match inp[*p] {
                b',' => {
                    let at = scan::skip_ws(inp, *p + 1);
                    if top.object {
                        match self.member(at) {
                            // Members up to the last one consumed: what follows it.
                            Some((v, DONE)) => {
                                *p = v;
                                continue;
                            }
                            Some((v, s)) => (*p, *sid) = (v, s),
                            None => return Some(None),
                        }
                    } else {
                        *p = at;
                        *sid = self.s.nodes[top.node as usize].items.map_or(NONE, |i| i.0);
                    }
                    return None;
                }
                b'}' if top.object => {}
                b']' if !top.object => {}
                _ => return Some(None),
            }
            *p += 1;
            if self.close().is_none() {
                return Some(None);
            }
        }
    }

    /// A member key at `p` of the object on top of the stack: the offset of its value and
    /// the value's schema. The expected next property (documents tend to follow the schema's
    /// order), or the one after it (an optional property left out), is compared in place with
    /// its quotes; anything else takes [`Self::member_any`]. A run of such members
    /// whose values are scalars of a [`quick`] kind, or scalars for a [`Class::Fused`] schema
    /// (checked by [`Self::scalar`]), is read here in one loop: then the answer is the offset
    /// after the last such value and [`DONE`], and the caller goes on with what follows it
    /// (the `}`, or a member this loop does not take).
    #[inline(always)]
    fn member(&mut self, mut p: usize) -> Option<(usize, u32)> {
        let inp = self.inp;
        let s = self.s;
        let top = *self.sc.stack.last()?;
        let plan = &s.plans[top.node as usize];
        // The frame's counters in registers while the loop runs; stored back on the way out.
        let (mut found, mut hint, mut count) = (top.found, top.hint, top.count);
        let is_key = |m: &Expect, p: usize| m.is_at(inp, p);
        let out = 'members: loop {
            // The expected property, or the one after it (an optional property left out).
            let m = match plan.expect.get(hint as usize) {
                Some(m) if is_key(m, p) => m,
                _ => match plan.expect.get(hint as usize + 1) {
                    Some(m) if is_key(m, p) => {
                        hint += 1;
                        m
                    }
                    _ => break 'members None,
                },
            };
            found |= m.bit;
            hint += 1;
            if COUNT {
                self.tokens += 1;
                if self.tokens > self.limits.max_tokens {
                    return None;
                }
            }
            let e = p + m.quoted.len();
            // `:` right after the key (compact input), else after whitespace.
            let v = if inp.get(e) == Some(&b':') { scan::skip_ws(inp, e + 1) } else { scan::colon(inp, e).ok()? };
            let Some(&b) = inp.get(v) else { break 'members Some((v, m.sid)) };
            let end = match (m.quick != 0).then(|| quick_scalar(inp, v, m.quick)).flatten() {
                Some(end) => end,
                // A scalar for a schema checked here: checked in place.
                None if m.inline && b != b'{' && b != b'[' => {
                    if m.cost > 0 && self.depth + m.cost > MAX_EVAL_DEPTH {
                        return None;
                    }
                    self.scalar(v, &s.nodes[m.target as usize], m.irange)?
                }
                None => break 'members Some((v, m.sid)),
            };
            if COUNT {
                self.tokens += 1;
                if self.tokens > self.limits.max_tokens {
                    return None;
                }
            }
            let q = scan::skip_ws(inp, end);
            if inp.get(q) != Some(&b',') {
                break 'members Some((q, DONE));
            }
            // The member is complete (as `after_value` counts it); the next key.
            count += 1;
            p = scan::skip_ws(inp, q + 1);
        };
        let f = self.sc.stack.last_mut()?;
        (f.found, f.hint, f.count) = (found, hint, count);
        match out {
            Some(r) => Some(r),
            None => self.member_any(p),
        }
    }

    /// [`Self::member`] for a key other than the expected one: looked up by name.
    #[inline(never)]
    fn member_any(&mut self, p: usize) -> Option<(usize, u32)> {
        let inp = self.inp;
        let s = self.s;
        if inp.get(p) != Some(&b'"') {
            return None;
        }
        self.token()?;
        let f = self.sc.stack.last()?;
        let n = &s.nodes[f.node as usize];
        let plan = &s.plans[f.node as usize];
        let props = &n.props;
        let (end, escaped) = scan::string(inp, p).ok()?;
        let raw = &inp[p + 1..end];
        let found = if escaped {
            self.sc.buf.clear();
            scan::unescape_into(raw, &mut self.sc.buf);
            props.find(&self.sc.buf)
        } else {
            props.find(raw)
        };
        let f = self.sc.stack.last_mut()?;
        let sid = match found {
            Some(i) => {
                if i < 64 {
                    f.found |= 1 << i;
                }
                f.hint = i as u32 + 1;
                props.ids[i].0
            }
            // Not named by `properties`: a shadow field (unless `additionalProperties`
            // constrains the rest, see `Known::all`), else checked by `additionalProperties`.
            None if self.opts.shadow_unknown && self.opts.max_unknown > 0 && plan.shadow_strict => return None,
            None => match n.additional {
                Some(a) if s.nodes[a.0 as usize].reject_all => return None,
                Some(a) => a.0,
                None => NONE,
            },
        };
        let v = scan::colon(inp, end + 1).ok()?;
        Some((v, sid))
    }

    /// The container on top of the stack is complete: its checks, and pop it.
    #[inline]
    fn close(&mut self) -> Option<()> {
        let f = self.sc.stack.pop()?;
        self.depth -= f.cost;
        let n = &self.s.nodes[f.node as usize];
        let count = f.count as u64;
        if f.object {
            let dir = match self.opts.direction {
                Direction::Request => 0,
                Direction::Response => 1,
            };
            let req = self.s.plans[f.node as usize].required[dir];
            if f.found & req != req || n.rare().min_props.is_some_and(|m| count < m) || n.rare().max_props.is_some_and(|m| count > m) {
                return None;
            }
        } else if n.min_items.is_some_and(|m| count < m) || n.max_items.is_some_and(|m| count > m) {
            return None;
        }
        Some(())
    }

    /// The value `start..end` with schema `sid`, by the tape validator (at the current
    /// evaluation depth); nothing to report or `None`.
    #[cold]
    fn tape(&mut self, sid: u32, start: usize, end: usize) -> Option<()> {
        let sub = &self.inp[start..end];
        let sc = &mut *self.sc;
        palisade_json::parse_into(sub, &mut sc.tape, &Limits::default()).ok()?;
        sc.violations.clear();
        let opts = Options { max_violations: 1, ..*self.opts };
        let root = sc.tape.root(sub);
        let mut cx = Cx::new(self.s, &sc.tape, sub, &opts, &mut sc.dom, &mut sc.violations);
        cx.set_depth(self.depth);
        cx.eval_root(SchemaId(sid), root);
        sc.violations.is_empty().then_some(())
    }
}

#[cfg(test)]
pub(crate) mod tests;
