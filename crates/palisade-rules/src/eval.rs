//! Evaluation of a compiled [`Program`] over one request: each source of values (method,
//! path, query, parameters, headers, cookies, body, JSON pointers, client address, operation)
//! is read once and its values fed to the matchers of the slots that want them; then the rules
//! whose atoms matched (and those that hold with none) have their structure evaluated.
//!
//! Memory comes from a reusable [`Scratch`]: bit sets, decoding buffers and the JSON tape.

use std::fmt::Write as _;
use std::net::IpAddr;

use palisade_core::{Context, RequestView};
use regex_automata::{Input, PatternSet};

use crate::compile::{addr_key, Program, Slot};
use crate::decode;

/// Reusable per-thread memory for evaluation.
#[derive(Default)]
pub struct Scratch {
    hits: Hits,
    lower: Vec<u8>,
    sets: Vec<Option<PatternSet>>,
    path: Vec<u8>,
    tmp: Vec<u8>,
    name: Vec<u8>,
    value: Vec<u8>,
    text: String,
    tape: palisade_json::Tape,
}

impl std::fmt::Debug for Scratch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scratch").finish_non_exhaustive()
    }
}

#[derive(Default)]
struct Hits {
    atoms: Vec<u64>,
    cand: Vec<u64>,
    cands: Vec<u32>,
}

impl Hits {
    fn reset(&mut self, atoms: usize, rules: usize) {
        self.atoms.clear();
        self.atoms.resize(atoms.div_ceil(64) + 1, 0);
        self.cand.clear();
        self.cand.resize(rules.div_ceil(64) + 1, 0);
        self.cands.clear();
    }

    #[inline]
    fn set(&mut self, atom: u32, atom_rule: &[u32]) {
        let (w, b) = (atom as usize / 64, atom % 64);
        if self.atoms[w] >> b & 1 == 1 {
            return;
        }
        self.atoms[w] |= 1 << b;
        let r = atom_rule[atom as usize];
        let (w, b) = (r as usize / 64, r % 64);
        if self.cand[w] >> b & 1 == 0 {
            self.cand[w] |= 1 << b;
            self.cands.push(r);
        }
    }
}

impl Program {
    /// The rules of this program that hold for `req`, as indexes into [`crate::Rules::rules`],
    /// in rule order, appended to `out`.
    pub fn matching(&self, req: &RequestView<'_>, cx: &Context, s: &mut Scratch, out: &mut Vec<u32>) {
        if self.rules.is_empty() {
            return;
        }
        s.hits.reset(self.atom_rule.len(), self.rules.len());
        if s.sets.len() < self.slots.len() {
            s.sets.resize_with(self.slots.len(), || None);
        }
        self.gather(req, cx, s);
        let Scratch { hits, .. } = s;
        hits.cands.extend_from_slice(&self.always);
        hits.cands.sort_unstable();
        hits.cands.dedup();
        for &pr in &hits.cands {
            if self.exprs[pr as usize].eval(&hits.atoms) {
                out.push(self.rules[pr as usize]);
            }
        }
    }

    fn gather(&self, req: &RequestView<'_>, cx: &Context, s: &mut Scratch) {
        let ix = &self.index;
        if let Some(slot) = ix.method {
            self.feed(slot, req.method.as_str().as_bytes(), None, s);
        }
        // `raw: true` matches the path as sent; the default form is the canonical path
        // (the one apps and routes are chosen on), percent-decoded.
        if let Some(slot) = ix.path[1] {
            self.feed(slot, req.raw_path.as_bytes(), None, s);
        }
        if let Some(slot) = ix.path[0] {
            let mut path = std::mem::take(&mut s.path);
            decode::normalize_path_into(req.path.as_bytes(), &mut s.tmp, &mut path);
            self.feed(slot, &path, None, s);
            s.path = path;
        }
        if let Some(q) = req.query {
            let q = q.as_bytes();
            if let Some(slot) = ix.query[1] {
                self.feed(slot, q, None, s);
            }
            if let Some(slot) = ix.query[0] {
                self.feed_decoded(slot, q, true, s);
            }
            if !ix.params.is_empty() {
                for (name, value) in decode::query_pairs(q) {
                    let mut nbuf = std::mem::take(&mut s.name);
                    let name: &[u8] = if decode::needs_decoding(name, true) {
                        decode::percent_decode_into(name, true, &mut nbuf);
                        &nbuf
                    } else {
                        name
                    };
                    if let Some(slots) = ix.params.get(name) {
                        for &(slot, raw) in slots {
                            if raw {
                                self.feed(slot, value, None, s);
                            } else {
                                self.feed_decoded(slot, value, true, s);
                            }
                        }
                    }
                    s.name = nbuf;
                }
            }
        }
        if !ix.headers.is_empty() {
            for (name, value) in req.headers {
                if let Some(slots) = ix.headers.get(name.as_str()) {
                    for &slot in slots {
                        self.feed(slot, value.as_bytes(), None, s);
                    }
                }
            }
        }
        if !ix.cookies.is_empty() {
            for header in req.headers.get_all(http::header::COOKIE) {
                for (name, value) in decode::cookie_pairs(header.as_bytes()) {
                    if let Some(slots) = ix.cookies.get(name) {
                        for &(slot, raw) in slots {
                            if raw {
                                self.feed(slot, value, None, s);
                            } else {
                                self.feed_decoded(slot, value, false, s);
                            }
                        }
                    }
                }
            }
        }
        if let Some(slot) = ix.body {
            self.feed(slot, req.body, None, s);
        }
        if !ix.pointers.is_empty() && !req.body.is_empty() {
            let mut tape = std::mem::take(&mut s.tape);
            if palisade_json::parse_into(req.body, &mut tape, &palisade_json::Limits::default()).is_ok() {
                let root = tape.root(req.body);
                for (segs, slot) in &ix.pointers {
                    if let Some(v) = resolve(root, segs) {
                        self.feed_json(*slot, v, s);
                    }
                }
            }
            s.tape = tape;
        }
        if let Some(slot) = ix.ip {
            let mut text = std::mem::take(&mut s.text);
            text.clear();
            if self.slots[slot as usize].text {
                let _ = write!(text, "{}", req.client_ip.to_canonical());
            }
            self.feed(slot, text.as_bytes(), Some(req.client_ip), s);
            s.text = text;
        }
        if let (Some(slot), Some(op)) = (ix.operation, cx.operation.as_deref()) {
            self.feed(slot, op.as_bytes(), None, s);
        }
    }

    fn feed_decoded(&self, slot: u32, raw: &[u8], plus: bool, s: &mut Scratch) {
        if !decode::needs_decoding(raw, plus) {
            return self.feed(slot, raw, None, s);
        }
        let mut buf = std::mem::take(&mut s.value);
        decode::percent_decode_into(raw, plus, &mut buf);
        self.feed(slot, &buf, None, s);
        s.value = buf;
    }

    fn feed_json(&self, slot: u32, v: palisade_json::ValueRef<'_>, s: &mut Scratch) {
        use palisade_json::Kind;
        match v.kind() {
            Kind::Array => {
                for item in v.items() {
                    if item.kind() == Kind::Array {
                        self.feed(slot, item.raw(), None, s);
                    } else {
                        self.feed_json(slot, item, s);
                    }
                }
            }
            Kind::String => match v.as_str() {
                Some(text) => self.feed(slot, text.as_bytes(), None, s),
                None => self.feed(slot, v.raw(), None, s),
            },
            _ => self.feed(slot, v.raw(), None, s),
        }
    }

    /// Run every matcher of `slot` over one value.
    fn feed(&self, slot: u32, v: &[u8], ip: Option<IpAddr>, s: &mut Scratch) {
        let sl: &Slot = &self.slots[slot as usize];
        let ar = &self.atom_rule[..];
        let hits = &mut s.hits;
        for &a in &sl.exists {
            hits.set(a, ar);
        }
        if !sl.text && sl.v4.is_none() && sl.v6.is_none() {
            return;
        }
        if let Some(list) = sl.equals[0].get(v) {
            list.iter().for_each(|&a| hits.set(a, ar));
        }
        if !sl.equals[1].is_empty() {
            s.lower.clear();
            s.lower.extend(v.iter().map(u8::to_ascii_lowercase));
            if let Some(list) = sl.equals[1].get(&s.lower[..]) {
                list.iter().for_each(|&a| hits.set(a, ar));
            }
        }
        for ci in 0..2 {
            let fold = ci == 1;
            sl.prefix[ci].walk(v.iter().copied(), fold, |a| hits.set(a, ar));
            sl.suffix[ci].walk(v.iter().rev().copied(), fold, |a| hits.set(a, ar));
            if let Some(c) = &sl.contains[ci] {
                for m in c.ac.find_overlapping_iter(v) {
                    c.atoms[m.pattern().as_usize()].iter().for_each(|&a| hits.set(a, ar));
                }
            }
        }
        if let Some((re, atoms)) = &sl.regex {
            // The scratch serves every program on this thread: size the set for this regex.
            let entry = &mut s.sets[slot as usize];
            if entry.as_ref().is_none_or(|set| set.capacity() != re.pattern_len()) {
                *entry = Some(PatternSet::new(re.pattern_len()));
            }
            let set = entry.as_mut().unwrap();
            set.clear();
            re.which_overlapping_matches(&Input::new(v), set);
            for p in set.iter() {
                hits.set(atoms[p.as_usize()], ar);
            }
        }
        if sl.v4.is_some() || sl.v6.is_some() {
            let addr = ip.or_else(|| std::str::from_utf8(v).ok().and_then(|t| t.trim().parse::<IpAddr>().ok()));
            if let Some(addr) = addr {
                let (v4, key) = addr_key(addr);
                if let Some(r) = if v4 { &sl.v4 } else { &sl.v6 } {
                    r.lookup(key).iter().for_each(|&a| hits.set(a, ar));
                }
            }
        }
        if !sl.length.is_empty() {
            sl.length.hits(v.len() as f64, |a| hits.set(a, ar));
        }
        if !sl.number.is_empty() {
            if let Some(n) = parse_number(v) {
                sl.number.hits(n, |a| hits.set(a, ar));
            }
        }
    }
}

/// A decimal number (surrounding whitespace allowed); not NaN nor infinite.
pub fn parse_number(v: &[u8]) -> Option<f64> {
    let t = std::str::from_utf8(v).ok()?.trim();
    if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit() || b"+-.eE".contains(&b)) {
        return None;
    }
    t.parse::<f64>().ok().filter(|n| n.is_finite())
}

/// The value at a JSON pointer (unescaped segments).
pub fn resolve<'t>(root: palisade_json::ValueRef<'t>, segs: &[String]) -> Option<palisade_json::ValueRef<'t>> {
    let mut v = root;
    for seg in segs {
        v = match v.kind() {
            palisade_json::Kind::Object => v.get(seg)?,
            palisade_json::Kind::Array => {
                if seg.is_empty() || (seg.len() > 1 && seg.starts_with('0')) || !seg.bytes().all(|b| b.is_ascii_digit()) {
                    return None;
                }
                v.items().nth(seg.parse().ok()?)?
            }
            _ => return None,
        };
    }
    Some(v)
}
