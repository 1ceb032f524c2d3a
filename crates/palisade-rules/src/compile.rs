//! Compilation of rules into per-field multi-pattern matchers, so that the cost of a request
//! grows with the request and with what matched, not with the number of rules.
//!
//! Every atom (a field and one operator) is registered with the *slot* of its field (the field
//! and whether it reads the raw or the decoded form). A slot holds, per case mode:
//! - `equals` / `in`: a hash map from value to atoms;
//! - `prefix` / `suffix`: a byte trie walked from the start (or backwards from the end) of the
//!   value: every pattern that is a prefix (suffix) is found in one walk;
//! - `contains`: one Aho-Corasick automaton with every pattern (overlapping search);
//! - `regex`: one multi-pattern `regex_automata::meta::Regex` (which patterns match);
//! - `cidr`: the networks cut into disjoint sorted ranges, each with the atoms covering it
//!   (binary search);
//! - numeric and length comparisons: thresholds sorted per comparison (binary search).
//!
//! A request sets the bits of the atoms that hold; only rules with at least one true atom, plus
//! the rules that hold when no atom does (a `not` at the top), have their boolean structure
//! evaluated. Rules that read the body form a second program, evaluated in the body phase.

use std::collections::HashMap;
use std::net::IpAddr;

use aho_corasick::AhoCorasick;
use regex_automata::meta;

use crate::model::{Action, Atom, Cmp, Expr, Field, Op, Rule};

#[cfg(test)]
mod tests;

/// A fast hasher for the small keys of the per-request lookups (header, parameter and cookie
/// names, values for `equals`): FxHash's multiply-rotate, eight bytes at a time. The keys come
/// from the configuration's rules; a request only looks them up, so flooding is not a concern.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct FxBuild;

#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Fx(u64);

impl Fx {
    #[inline]
    fn add(&mut self, w: u64) {
        self.0 = (self.0.rotate_left(5) ^ w).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl std::hash::Hasher for Fx {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.add(u64::from_le_bytes(c.try_into().unwrap()));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut buf = [0u8; 8];
            buf[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(buf));
        }
    }

    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(i as u64);
    }

    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

impl std::hash::BuildHasher for FxBuild {
    type Hasher = Fx;
    #[inline]
    fn build_hasher(&self) -> Fx {
        Fx(0)
    }
}

pub(crate) type FastMap<K, V> = HashMap<K, V, FxBuild>;

/// A compiled expression over atom indexes.
#[derive(Clone, Debug)]
pub(crate) enum CExpr {
    Atom(u32),
    All(Vec<CExpr>),
    Any(Vec<CExpr>),
    Not(Box<CExpr>),
}

impl CExpr {
    pub(crate) fn eval(&self, atoms: &[u64]) -> bool {
        match self {
            CExpr::Atom(a) => atoms[*a as usize / 64] >> (a % 64) & 1 == 1,
            CExpr::All(v) => v.iter().all(|e| e.eval(atoms)),
            CExpr::Any(v) => v.iter().any(|e| e.eval(atoms)),
            CExpr::Not(e) => !e.eval(atoms),
        }
    }
}

/// A byte trie of patterns (lower-cased when case-insensitive): every pattern that is a prefix
/// of a value (or a suffix, walking backwards) in one walk.
#[derive(Debug, Default)]
pub(crate) struct Trie {
    nodes: Vec<TrieNode>,
}

#[derive(Debug, Default)]
struct TrieNode {
    /// Sorted by byte.
    next: Vec<(u8, u32)>,
    atoms: Vec<u32>,
}

impl Trie {
    fn insert(&mut self, pattern: impl Iterator<Item = u8>, atom: u32) {
        if self.nodes.is_empty() {
            self.nodes.push(TrieNode::default());
        }
        let mut node = 0usize;
        for b in pattern {
            node = match self.nodes[node].next.binary_search_by_key(&b, |e| e.0) {
                Ok(i) => self.nodes[node].next[i].1 as usize,
                Err(i) => {
                    let id = self.nodes.len();
                    self.nodes.push(TrieNode::default());
                    self.nodes[node].next.insert(i, (b, id as u32));
                    id
                }
            };
        }
        self.nodes[node].atoms.push(atom);
    }

    pub(crate) fn walk(&self, bytes: impl Iterator<Item = u8>, fold: bool, mut hit: impl FnMut(u32)) {
        if self.nodes.is_empty() {
            return;
        }
        let mut node = 0usize;
        for b in bytes {
            let b = if fold { b.to_ascii_lowercase() } else { b };
            match self.nodes[node].next.binary_search_by_key(&b, |e| e.0) {
                Ok(i) => node = self.nodes[node].next[i].1 as usize,
                Err(_) => return,
            }
            for &a in &self.nodes[node].atoms {
                hit(a);
            }
        }
    }
}

/// Disjoint sorted ranges of addresses, each with the atoms whose networks cover it.
#[derive(Debug, Default)]
pub(crate) struct Ranges {
    starts: Vec<u128>,
    atoms: Vec<Vec<u32>>,
}

impl Ranges {
    /// A sweep over the network boundaries: O(n log n + size of the output).
    fn build(nets: &[(u128, u128, u32)]) -> Ranges {
        let mut opens: Vec<(u128, u32)> = nets.iter().map(|&(s, _, a)| (s, a)).collect();
        let mut closes: Vec<(u128, u32)> = nets.iter().filter_map(|&(_, e, a)| e.checked_add(1).map(|after| (after, a))).collect();
        opens.sort_unstable();
        closes.sort_unstable();
        let mut bounds: Vec<u128> = std::iter::once(0).chain(opens.iter().map(|o| o.0)).chain(closes.iter().map(|c| c.0)).collect();
        bounds.sort_unstable();
        bounds.dedup();
        let mut active: std::collections::BTreeMap<u32, u32> = std::collections::BTreeMap::new();
        let (mut oi, mut ci) = (0, 0);
        let mut atoms = Vec::with_capacity(bounds.len());
        for &b in &bounds {
            while ci < closes.len() && closes[ci].0 == b {
                if let Some(n) = active.get_mut(&closes[ci].1) {
                    *n -= 1;
                    if *n == 0 {
                        active.remove(&closes[ci].1);
                    }
                }
                ci += 1;
            }
            while oi < opens.len() && opens[oi].0 == b {
                *active.entry(opens[oi].1).or_insert(0) += 1;
                oi += 1;
            }
            atoms.push(active.keys().copied().collect());
        }
        Ranges { starts: bounds, atoms }
    }

    pub(crate) fn lookup(&self, addr: u128) -> &[u32] {
        let i = self.starts.partition_point(|&s| s <= addr);
        if i == 0 {
            return &[];
        }
        &self.atoms[i - 1]
    }
}

/// Thresholds of one comparison, sorted.
#[derive(Debug, Default)]
pub(crate) struct Cmps {
    by: [Vec<(f64, u32)>; 5],
}

impl Cmps {
    fn push(&mut self, c: Cmp, t: f64, atom: u32) {
        self.by[c as usize].push((t, atom));
    }

    fn finish(&mut self) {
        for v in &mut self.by {
            v.sort_by(|a, b| a.0.total_cmp(&b.0));
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.by.iter().all(Vec::is_empty)
    }

    /// Every atom whose comparison holds for `v`.
    pub(crate) fn hits(&self, v: f64, mut hit: impl FnMut(u32)) {
        let below = |s: &[(f64, u32)]| s.partition_point(|e| e.0 < v);
        let upto = |s: &[(f64, u32)]| s.partition_point(|e| e.0 <= v);
        let [lt, le, gt, ge, eq] = &self.by;
        // value > t for t < v; value >= t for t <= v; value < t for t > v; value <= t for t >= v.
        gt[..below(gt)].iter().for_each(|e| hit(e.1));
        ge[..upto(ge)].iter().for_each(|e| hit(e.1));
        lt[upto(lt)..].iter().for_each(|e| hit(e.1));
        le[below(le)..].iter().for_each(|e| hit(e.1));
        eq[below(eq)..upto(eq)].iter().for_each(|e| hit(e.1));
    }
}

/// Unanchored literal search: one automaton, overlapping matches, atoms per pattern.
#[derive(Debug)]
pub(crate) struct Contains {
    pub(crate) ac: AhoCorasick,
    pub(crate) atoms: Vec<Vec<u32>>,
}

/// Everything tested on one slot (a field, in its raw or decoded form).
#[derive(Debug, Default)]
pub(crate) struct Slot {
    pub(crate) exists: Vec<u32>,
    /// [case-sensitive, case-insensitive (keys lower-cased)].
    pub(crate) equals: [FastMap<Vec<u8>, Vec<u32>>; 2],
    pub(crate) prefix: [Trie; 2],
    pub(crate) suffix: [Trie; 2],
    pub(crate) contains: [Option<Contains>; 2],
    pub(crate) regex: Option<(meta::Regex, Vec<u32>)>,
    pub(crate) v4: Option<Ranges>,
    pub(crate) v6: Option<Ranges>,
    pub(crate) number: Cmps,
    pub(crate) length: Cmps,
    /// Whether anything but `exists` and `cidr` reads the value as text.
    pub(crate) text: bool,
}

#[derive(Default)]
struct SlotBuilder {
    slot: Slot,
    contains: [Vec<(Vec<u8>, u32)>; 2],
    regex: Vec<(String, u32)>,
    v4: Vec<(u128, u128, u32)>,
    v6: Vec<(u128, u128, u32)>,
}

/// Where a request's values go: slot indexes per source.
#[derive(Debug, Default)]
pub(crate) struct Index {
    pub(crate) method: Option<u32>,
    /// [decoded, raw].
    pub(crate) path: [Option<u32>; 2],
    pub(crate) query: [Option<u32>; 2],
    /// Decoded parameter name → (slot, raw).
    pub(crate) params: FastMap<Vec<u8>, Vec<(u32, bool)>>,
    /// Lower-case header name → slots.
    pub(crate) headers: FastMap<String, Vec<u32>>,
    /// Cookie name → (slot, raw).
    pub(crate) cookies: FastMap<Vec<u8>, Vec<(u32, bool)>>,
    pub(crate) body: Option<u32>,
    pub(crate) pointers: Vec<(Vec<String>, u32)>,
    pub(crate) ip: Option<u32>,
    pub(crate) operation: Option<u32>,
}

/// The rules of one phase, compiled.
#[derive(Debug, Default)]
pub struct Program {
    /// Indexes (into [`Rules::rules`]) of this program's rules, in order.
    pub(crate) rules: Vec<u32>,
    pub(crate) exprs: Vec<CExpr>,
    pub(crate) atom_rule: Vec<u32>,
    /// Program rules that hold when no atom does.
    pub(crate) always: Vec<u32>,
    pub(crate) slots: Vec<Slot>,
    pub(crate) index: Index,
}

impl Program {
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    pub fn atom_count(&self) -> usize {
        self.atom_rule.len()
    }

    fn build(all: &[Rule], which: &[u32]) -> Result<Program, crate::Error> {
        let mut p = Program { rules: which.to_vec(), ..Program::default() };
        let mut slot_of: HashMap<(Field, bool), u32> = HashMap::new();
        let mut builders: Vec<SlotBuilder> = Vec::new();
        for (pi, &ri) in which.iter().enumerate() {
            let rule = &all[ri as usize];
            let mut add = |atom: &Atom| -> u32 {
                let raw = atom.raw && atom.field.has_raw_form();
                let key = (atom.field.clone(), raw);
                let slot = *slot_of.entry(key).or_insert_with(|| {
                    let id = builders.len() as u32;
                    builders.push(SlotBuilder::default());
                    p.index.register(&atom.field, raw, id);
                    id
                });
                let id = p.atom_rule.len() as u32;
                p.atom_rule.push(pi as u32);
                builders[slot as usize].add(atom, id);
                id
            };
            let expr = compile_expr(&rule.when, &mut add);
            if expr.eval(&vec![0u64; p.atom_rule.len().div_ceil(64) + 1]) {
                p.always.push(pi as u32);
            }
            p.exprs.push(expr);
        }
        for b in builders {
            p.slots.push(b.finish()?);
        }
        Ok(p)
    }
}

fn compile_expr(e: &Expr, add: &mut dyn FnMut(&Atom) -> u32) -> CExpr {
    match e {
        Expr::Atom(a) => CExpr::Atom(add(a)),
        Expr::All(v) => CExpr::All(v.iter().map(|e| compile_expr(e, add)).collect()),
        Expr::Any(v) => CExpr::Any(v.iter().map(|e| compile_expr(e, add)).collect()),
        Expr::Not(e) => CExpr::Not(Box::new(compile_expr(e, add))),
    }
}

impl Index {
    fn register(&mut self, field: &Field, raw: bool, slot: u32) {
        let r = usize::from(raw);
        match field {
            Field::Method => self.method = Some(slot),
            Field::Path => self.path[r] = Some(slot),
            Field::Query => self.query[r] = Some(slot),
            Field::QueryParam(n) => self.params.entry(n.as_bytes().to_vec()).or_default().push((slot, raw)),
            Field::Header(n) => self.headers.entry(n.clone()).or_default().push(slot),
            Field::Cookie(n) => self.cookies.entry(n.as_bytes().to_vec()).or_default().push((slot, raw)),
            Field::Body => self.body = Some(slot),
            Field::BodyPointer(segs) => self.pointers.push((segs.clone(), slot)),
            Field::Ip => self.ip = Some(slot),
            Field::Operation => self.operation = Some(slot),
        }
    }
}

fn net_range(net: &ipnet::IpNet) -> (bool, u128, u128) {
    match net {
        ipnet::IpNet::V4(n) => (true, u32::from(n.network()) as u128, u32::from(n.broadcast()) as u128),
        ipnet::IpNet::V6(n) => (false, u128::from(n.network()), u128::from(n.broadcast())),
    }
}

impl SlotBuilder {
    fn add(&mut self, atom: &Atom, id: u32) {
        let ci = usize::from(atom.ignore_case);
        let fold = |p: &[u8]| if atom.ignore_case { p.to_ascii_lowercase() } else { p.to_vec() };
        let s = &mut self.slot;
        match &atom.op {
            Op::Exists => s.exists.push(id),
            Op::Equals(v) => {
                s.text = true;
                for p in v {
                    let list = s.equals[ci].entry(fold(p)).or_default();
                    if !list.contains(&id) {
                        list.push(id);
                    }
                }
            }
            Op::Prefix(v) => {
                s.text = true;
                v.iter().for_each(|p| s.prefix[ci].insert(fold(p).into_iter(), id));
            }
            Op::Suffix(v) => {
                s.text = true;
                v.iter().for_each(|p| s.suffix[ci].insert(fold(p).into_iter().rev(), id));
            }
            Op::Contains(v) => {
                s.text = true;
                self.contains[ci].extend(v.iter().map(|p| (fold(p), id)));
            }
            Op::Regex(v) => {
                s.text = true;
                self.regex.extend(v.iter().map(|p| (if atom.ignore_case { format!("(?i:{p})") } else { p.clone() }, id)));
            }
            Op::Cidr(nets) => {
                for n in nets {
                    let (v4, a, b) = net_range(n);
                    if v4 {
                        self.v4.push((a, b, id));
                    } else {
                        self.v6.push((a, b, id));
                    }
                }
            }
            Op::Number(c, t) => {
                s.text = true;
                s.number.push(*c, *t, id);
            }
            Op::Length(c, t) => {
                s.text = true;
                s.length.push(*c, *t, id);
            }
        }
    }

    fn finish(mut self) -> Result<Slot, crate::Error> {
        for ci in 0..2 {
            let pats = std::mem::take(&mut self.contains[ci]);
            if pats.is_empty() {
                continue;
            }
            // One automaton pattern per distinct literal.
            let mut distinct: HashMap<Vec<u8>, usize> = HashMap::new();
            let mut lits: Vec<Vec<u8>> = Vec::new();
            let mut atoms: Vec<Vec<u32>> = Vec::new();
            for (p, a) in pats {
                let i = *distinct.entry(p.clone()).or_insert_with(|| {
                    lits.push(p);
                    atoms.push(Vec::new());
                    lits.len() - 1
                });
                if !atoms[i].contains(&a) {
                    atoms[i].push(a);
                }
            }
            let ac = AhoCorasick::builder()
                .ascii_case_insensitive(ci == 1)
                .build(&lits)
                .map_err(|e| crate::Error::caused_by(crate::ErrorKind::Compile, format!("cannot build the literal automaton: {e}"), e))?;
            self.slot.contains[ci] = Some(Contains { ac, atoms });
        }
        if !self.regex.is_empty() {
            let pats: Vec<&str> = self.regex.iter().map(|(p, _)| p.as_str()).collect();
            let re = meta::Builder::new()
                .configure(meta::Config::new().match_kind(regex_automata::MatchKind::All).nfa_size_limit(Some(256 << 20)))
                .build_many(&pats)
                .map_err(|e| crate::Error::caused_by(crate::ErrorKind::Compile, format!("cannot compile the rules' regular expressions: {e}"), e))?;
            self.slot.regex = Some((re, self.regex.iter().map(|(_, a)| *a).collect()));
        }
        if !self.v4.is_empty() {
            self.slot.v4 = Some(Ranges::build(&self.v4));
        }
        if !self.v6.is_empty() {
            self.slot.v6 = Some(Ranges::build(&self.v6));
        }
        self.slot.number.finish();
        self.slot.length.finish();
        Ok(self.slot)
    }
}

/// Precomputed effects of a rule.
#[derive(Debug)]
pub(crate) struct Effects {
    pub(crate) code: String,
    pub(crate) exclusions: Vec<palisade_core::Exclusion>,
}

/// A compiled rule set: the rules, and a program per phase.
#[derive(Debug)]
pub struct Rules {
    pub(crate) rules: Vec<Rule>,
    pub(crate) effects: Vec<Effects>,
    pub(crate) head: Program,
    pub(crate) body: Program,
}

/// Which rules a phase evaluates: head rules read nothing of the body; body rules read it
/// (and may read head fields too).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Head,
    Body,
}

impl Rules {
    /// Compile `rules` (in their order).
    pub fn compile(rules: Vec<Rule>) -> Result<Rules, crate::Error> {
        let (body, head): (Vec<u32>, Vec<u32>) = (0..rules.len() as u32).partition(|&i| rules[i as usize].when.needs_body());
        let head = Program::build(&rules, &head)?;
        let body = Program::build(&rules, &body)?;
        let effects = rules
            .iter()
            .map(|r| {
                let mut exclusions = Vec::new();
                if let Some(skip) = &r.skip {
                    for d in &skip.detectors {
                        let detector = (d != "*").then(|| std::borrow::Cow::Owned(d.clone()));
                        if skip.fields.is_empty() {
                            exclusions.push(palisade_core::Exclusion { detector, location: None });
                        } else {
                            for f in &skip.fields {
                                exclusions.push(palisade_core::Exclusion { detector: detector.clone(), location: Some(f.clone()) });
                            }
                        }
                    }
                }
                Effects { code: format!("rule.{}", r.id), exclusions }
            })
            .collect();
        Ok(Rules { rules, effects, head, body })
    }

    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    pub fn program(&self, phase: Phase) -> &Program {
        match phase {
            Phase::Head => &self.head,
            Phase::Body => &self.body,
        }
    }

    /// Whether some rule reads the body.
    pub fn needs_body(&self) -> bool {
        !self.body.is_empty()
    }

    /// Whether some rule reads the OpenAPI operation (which needs an `openapi:` section).
    pub fn uses_operation(&self) -> bool {
        fn uses(e: &Expr) -> bool {
            match e {
                Expr::Atom(a) => a.field == Field::Operation,
                Expr::All(v) | Expr::Any(v) => v.iter().any(uses),
                Expr::Not(e) => uses(e),
            }
        }
        self.rules.iter().any(|r| uses(&r.when))
    }

    /// Whether some rule can end in a block.
    pub fn can_block(&self) -> bool {
        self.rules.iter().any(|r| matches!(r.action, Action::Block(_)))
    }
}

/// The address as a number in its family (IPv4-mapped IPv6 addresses count as IPv4).
pub(crate) fn addr_key(ip: IpAddr) -> (bool, u128) {
    match ip.to_canonical() {
        IpAddr::V4(a) => (true, u32::from(a) as u128),
        IpAddr::V6(a) => (false, u128::from(a)),
    }
}
