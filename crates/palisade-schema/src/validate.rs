//! Evaluation of compiled schemas over a JSON tape.
//!
//! - Paths are a linked list of segments on the Rust stack (tape indices of keys, item
//!   indices), rendered to a string only when a violation is recorded.
//! - Alternatives (`anyOf`, `oneOf`, `not`, `if`, `contains`) are evaluated "quietly": the
//!   first failure returns at once and nothing is recorded.
//! - `unevaluatedProperties`/`unevaluatedItems` need to know which members or items the
//!   in-place applicators evaluated: a node that has one of them opens a bitset (one bit per
//!   member or item, in a scratch stack) that its in-place subschemas mark; annotations of
//!   failed alternatives are discarded.
//! - Recursion is bounded: one level per instance level plus the in-place chain, which is
//!   acyclic (checked at compile time); [`MAX_EVAL_DEPTH`] is a hard stop on top of that.

use std::borrow::Cow;

use palisade_json::{Kind, ValueRef};

use crate::compile::{bytes_eq, quick, Const, NumChecks, SNode};
use crate::num;
use crate::{Direction, Options, SchemaId, Schemas, TypeSet, Violation, ViolationKind};

/// Evaluation depth (schema applications nested) after which validation stops with a
/// violation instead of risking the stack.
pub const MAX_EVAL_DEPTH: u32 = 300;

/// Scratch memory of a validation, reusable across validations (only schemas with
/// `unevaluatedProperties`/`unevaluatedItems` or `uniqueItems` use it).
#[derive(Debug, Default)]
pub struct Scratch {
    bits: Vec<u64>,
    hashes: Vec<(u64, u32)>,
}

#[derive(Clone, Copy)]
enum Seg {
    Root,
    Key(u32),
    Index(u32),
}

#[derive(Clone, Copy)]
struct Path<'p> {
    parent: Option<&'p Path<'p>>,
    seg: Seg,
}

impl<'p> Path<'p> {
    fn key(&'p self, k: &ValueRef<'_>) -> Path<'p> {
        Path { parent: Some(self), seg: Seg::Key(k.index()) }
    }
    fn index(&'p self, i: usize) -> Path<'p> {
        Path { parent: Some(self), seg: Seg::Index(i as u32) }
    }
}

/// Offset of an annotation bitset in the scratch stack.
type Ann = Option<usize>;

pub(crate) struct Cx<'a> {
    s: &'a Schemas,
    tape: &'a palisade_json::Tape,
    input: &'a [u8],
    opts: &'a Options,
    out: &'a mut Vec<Violation>,
    scratch: &'a mut Scratch,
    quiet: u32,
    depth: u32,
    /// Violations recorded ([`ViolationKind::Invalid`]): `max_violations` of them stop the
    /// evaluation.
    recorded: usize,
    /// Shadow-field findings recorded: capped by `max_unknown`, never a reason to stop.
    unknown: usize,
    pub invalid: bool,
    stop: bool,
    /// Set by `object` when every member was matched by `properties` (read right after).
    all_props: bool,
    /// The `$dynamicAnchor` tables of the schema resources being evaluated, outermost first.
    dyn_scope: Vec<u32>,
}

/// Up to `max` chars of `s`, with an ellipsis when cut.
pub(crate) fn truncate(s: &str, max: usize) -> Cow<'_, str> {
    match s.char_indices().nth(max) {
        None => Cow::Borrowed(s),
        Some((i, _)) => Cow::Owned(format!("{}...", &s[..i])),
    }
}

fn quoted(b: &[u8]) -> String {
    format!("{:?}", truncate(&String::from_utf8_lossy(b), 32))
}

fn type_name(k: Kind, v: &ValueRef<'_>) -> &'static str {
    match k {
        Kind::Null => "null",
        Kind::Bool => "boolean",
        Kind::Number if v.is_integer_text() => "integer",
        Kind::Number => "number",
        Kind::String => "string",
        Kind::Array => "array",
        Kind::Object => "object",
    }
}

fn types_text(t: u8) -> String {
    let mut parts = Vec::new();
    for (bit, name) in [
        (TypeSet::OBJECT, "object"),
        (TypeSet::ARRAY, "array"),
        (TypeSet::STRING, "string"),
        (TypeSet::NUMBER, "number"),
        (TypeSet::INTEGER, "integer"),
        (TypeSet::BOOLEAN, "boolean"),
        (TypeSet::NULL, "null"),
    ] {
        if t & bit != 0 && !(bit == TypeSet::INTEGER && t & TypeSet::NUMBER != 0) {
            parts.push(name);
        }
    }
    parts.join(" or ")
}

#[inline(always)]
fn type_fits(t: u8, kind: Kind, v: &ValueRef<'_>) -> bool {
    match kind {
        Kind::Null => t & TypeSet::NULL != 0,
        Kind::Bool => t & TypeSet::BOOLEAN != 0,
        Kind::String => t & TypeSet::STRING != 0,
        Kind::Array => t & TypeSet::ARRAY != 0,
        Kind::Object => t & TypeSet::OBJECT != 0,
        Kind::Number => t & TypeSet::NUMBER != 0 || (t & TypeSet::INTEGER != 0 && (v.is_integer_text() || num::is_integral_text(v.raw()))),
    }
}

/// The [`quick`] bit of an instance's kind.
#[inline(always)]
fn quick_kind(v: &ValueRef<'_>) -> u8 {
    match v.kind() {
        Kind::Null => quick::NULL,
        Kind::Bool => quick::BOOL,
        Kind::Number if v.is_integer_text() => quick::INT_TEXT,
        Kind::Number => quick::FRAC_TEXT,
        Kind::String => quick::STRING,
        Kind::Array => quick::ARRAY,
        Kind::Object => quick::OBJECT,
    }
}

/// `i64` value of a plain integer text of at most 18 digits (the common case), else `None`.
#[inline]
fn fast_int(v: &ValueRef<'_>) -> Option<i64> {
    if !v.is_integer_text() {
        return None;
    }
    let t = v.raw();
    let (neg, d) = if t[0] == b'-' { (true, &t[1..]) } else { (false, t) };
    if d.len() > 18 {
        return v.as_i64();
    }
    let mut x: i64 = 0;
    for &b in d {
        x = x * 10 + (b - b'0') as i64;
    }
    Some(if neg { -x } else { x })
}

/// The string's bytes, unescaped (borrowed when there is no escape).
#[inline]
fn str_bytes<'t>(v: &ValueRef<'t>) -> Cow<'t, [u8]> {
    if v.has_escapes() {
        match v.as_str() {
            Some(Cow::Owned(s)) => Cow::Owned(s.into_bytes()),
            Some(Cow::Borrowed(s)) => Cow::Borrowed(s.as_bytes()),
            None => Cow::Borrowed(&[]),
        }
    } else {
        Cow::Borrowed(v.raw())
    }
}

fn has_member(v: &ValueRef<'_>, name: &[u8]) -> bool {
    v.members().any(|(k, _)| *str_bytes(&k) == *name)
}

fn count_chars(s: &[u8]) -> usize {
    s.iter().filter(|&&b| b & 0xC0 != 0x80).count()
}

/// JSON equality of an instance value and a constant (numbers compare by value).
fn eq_const(v: &ValueRef<'_>, c: &Const) -> bool {
    match (v.kind(), c) {
        (Kind::Null, Const::Null) => true,
        (Kind::Bool, Const::Bool(b)) => v.as_bool() == Some(*b),
        (Kind::Number, Const::Num(n)) => num::cmp_instance(v.raw(), fast_int(v), n) == std::cmp::Ordering::Equal,
        (Kind::String, Const::Str(s)) => *str_bytes(v) == **s,
        (Kind::Array, Const::Arr(items)) => v.len() == items.len() && v.items().zip(items).all(|(x, y)| eq_const(&x, y)),
        (Kind::Object, Const::Obj(members)) => {
            v.len() == members.len() && members.iter().all(|(k, c)| v.members().any(|(vk, vv)| *str_bytes(&vk) == **k && eq_const(&vv, c)))
        }
        _ => false,
    }
}

const EQ_DEPTH: u32 = 64;

/// Structural hash for `uniqueItems` (object member order does not matter).
fn hash_value(v: &ValueRef<'_>, depth: u32) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mix = |h: u64, x: u64| (h ^ x).wrapping_mul(K).rotate_left(23);
    if depth > EQ_DEPTH {
        return 0;
    }
    match v.kind() {
        Kind::Null => 1,
        Kind::Bool => 2 + v.as_bool().unwrap_or(false) as u64,
        // Numbers equal in value may be written differently (1, 1.0, 1e0): hash the value.
        Kind::Number => {
            let d = num::parse(v.raw());
            match d {
                Some(d) if !d.is_zero() => {
                    let mut h = mix(4 + d.neg as u64, d.point as u64);
                    for i in 0..d.n.min(24) {
                        h = mix(h, d.digit(i) as u64);
                    }
                    h
                }
                _ => 4,
            }
        }
        Kind::String => str_bytes(v).iter().fold(5u64, |h, &b| mix(h, b as u64)),
        Kind::Array => v.items().fold(6u64, |h, x| mix(h, hash_value(&x, depth + 1))),
        Kind::Object => v.members().fold(7u64, |h, (k, x)| h.wrapping_add(mix(hash_value(&k, depth + 1), hash_value(&x, depth + 1)))),
    }
}

/// JSON equality of two instance values (beyond [`EQ_DEPTH`] levels, values are taken as different).
fn eq_values(a: &ValueRef<'_>, b: &ValueRef<'_>, depth: u32) -> bool {
    if depth > EQ_DEPTH || a.kind() != b.kind() {
        return false;
    }
    match a.kind() {
        Kind::Null => true,
        Kind::Bool => a.as_bool() == b.as_bool(),
        Kind::Number => num::cmp(a.raw(), b.raw()) == Some(std::cmp::Ordering::Equal),
        Kind::String => str_bytes(a) == str_bytes(b),
        Kind::Array => a.len() == b.len() && a.items().zip(b.items()).all(|(x, y)| eq_values(&x, &y, depth + 1)),
        Kind::Object => {
            a.len() == b.len() && a.members().all(|(ka, va)| b.members().any(|(kb, vb)| str_bytes(&ka) == str_bytes(&kb) && eq_values(&va, &vb, depth + 1)))
        }
    }
}

impl<'a> Cx<'a> {
    pub fn new(
        s: &'a Schemas,
        tape: &'a palisade_json::Tape,
        input: &'a [u8],
        opts: &'a Options,
        scratch: &'a mut Scratch,
        out: &'a mut Vec<Violation>,
    ) -> Self {
        Cx {
            s,
            tape,
            input,
            opts,
            out,
            scratch,
            quiet: 0,
            depth: 0,
            recorded: 0,
            unknown: 0,
            invalid: false,
            stop: false,
            all_props: false,
            dyn_scope: Vec::new(),
        }
    }

    /// Start at evaluation depth `d` (a subtree validated on its own tape by the fused
    /// validator counts the levels around it).
    pub(crate) fn set_depth(&mut self, d: u32) {
        self.depth = d;
    }

    fn render(&self, path: &Path<'_>) -> String {
        let mut segs: Vec<Seg> = Vec::new();
        let mut p = Some(path);
        while let Some(x) = p {
            segs.push(x.seg);
            p = x.parent;
        }
        let mut out = String::new();
        for seg in segs.iter().rev() {
            let text = match *seg {
                Seg::Root => continue,
                Seg::Index(i) => i.to_string(),
                Seg::Key(k) => {
                    let key = self.tape.get(self.input, k);
                    key.as_str().unwrap_or_default().replace('~', "~0").replace('/', "~1")
                }
            };
            if !out.is_empty() {
                out.push('/');
            }
            out.push_str(&text);
        }
        out
    }

    /// Record a violation (unless quiet).
    #[cold]
    #[inline(never)]
    fn fail(&mut self, path: &Path<'_>, keyword: &'static str, message: impl FnOnce() -> String) {
        if self.quiet > 0 || self.stop {
            return;
        }
        self.invalid = true;
        self.push(ViolationKind::Invalid, path, keyword, message());
    }

    fn push(&mut self, kind: ViolationKind, path: &Path<'_>, keyword: &'static str, message: String) {
        let path = self.render(path);
        self.out.push(Violation { kind, path, keyword, message });
        match kind {
            ViolationKind::Invalid => {
                self.recorded += 1;
                if self.recorded >= self.opts.max_violations.max(1) {
                    self.stop = true;
                }
            }
            ViolationKind::UnknownProperty => self.unknown += 1,
        }
    }

    /// Whether shadow fields are still looked for (asked for, and their cap not reached).
    #[inline(always)]
    fn shadowing(&self) -> bool {
        self.opts.shadow_unknown && self.unknown < self.opts.max_unknown
    }

    /// Whether a failure must end the current evaluation at once.
    #[inline(always)]
    fn bail(&self) -> bool {
        self.quiet > 0 || self.stop
    }

    fn alloc(&mut self, children: usize) -> usize {
        let off = self.scratch.bits.len();
        self.scratch.bits.resize(off + children.div_ceil(64), 0);
        off
    }

    fn release(&mut self, off: usize) {
        self.scratch.bits.truncate(off);
    }

    #[inline]
    fn mark(&mut self, ann: Ann, i: usize) {
        if let Some(off) = ann {
            self.scratch.bits[off + i / 64] |= 1 << (i % 64);
        }
    }

    fn marked(&self, off: usize, i: usize) -> bool {
        self.scratch.bits[off + i / 64] & (1 << (i % 64)) != 0
    }

    fn merge(&mut self, into: Ann, from: usize, children: usize) {
        if let Some(dst) = into {
            for w in 0..children.div_ceil(64) {
                let x = self.scratch.bits[from + w];
                self.scratch.bits[dst + w] |= x;
            }
        }
    }

    fn quietly(&mut self, id: SchemaId, v: ValueRef<'_>, path: &Path<'_>, ann: Ann) -> bool {
        self.quiet += 1;
        let r = self.eval(id, v, path, ann, false);
        self.quiet -= 1;
        r
    }

    /// Evaluate schema `id` at instance `v`. `top`: the first schema applied at this location
    /// (where shadow-field findings are made).
    pub(crate) fn eval_root(&mut self, id: SchemaId, v: ValueRef<'_>) -> bool {
        let root = Path { parent: None, seg: Seg::Root };
        self.eval(id, v, &root, None, true)
    }

    fn eval(&mut self, id: SchemaId, v: ValueRef<'_>, path: &Path<'_>, ann: Ann, top: bool) -> bool {
        let s = self.s;
        let n = &s.nodes[id.0 as usize];
        if n.accept_all {
            return true;
        }
        if n.leaf {
            return self.leaf(n, v, path);
        }
        if self.depth >= MAX_EVAL_DEPTH {
            self.fail(path, "$ref", || format!("schema evaluation deeper than {MAX_EVAL_DEPTH} levels"));
            return false;
        }
        self.depth += 1;
        // Reaching a schema resource with `$dynamicAnchor`s enters it into the dynamic scope.
        let entered = n.dyn_table.filter(|t| self.dyn_scope.last() != Some(t));
        if let Some(t) = entered {
            self.dyn_scope.push(t);
        }
        let r = self.eval_node(n, v, path, ann, top);
        if entered.is_some() {
            self.dyn_scope.pop();
        }
        self.depth -= 1;
        r
    }

    /// A schema with only type and scalar keywords.
    #[inline(always)]
    fn leaf(&mut self, n: &SNode, v: ValueRef<'_>, path: &Path<'_>) -> bool {
        let kind = v.kind();
        if n.types != 0 && !type_fits(n.types, kind, &v) {
            if kind == Kind::Null && n.nullable {
                return true;
            }
            self.fail(path, "type", || format!("must be {}, not {}", types_text(n.types), type_name(kind, &v)));
            return false;
        }
        match kind {
            Kind::String if n.has_string => self.string(n, v, path),
            Kind::Number if n.has_number => self.number(n, v, path),
            _ => true,
        }
    }

    fn eval_node(&mut self, n: &SNode, v: ValueRef<'_>, path: &Path<'_>, ann: Ann, top: bool) -> bool {
        if n.reject_all {
            self.fail(path, "false", || "no value is allowed here".into());
            return false;
        }
        let kind = v.kind();
        if kind == Kind::Null && n.nullable {
            return true;
        }
        let mut ok = true;
        macro_rules! bad {
            () => {{
                ok = false;
                if self.bail() {
                    return false;
                }
            }};
        }
        if n.read_only && self.opts.direction == Direction::Request {
            self.fail(path, "readOnly", || "is read-only and must not be sent in a request".into());
            bad!();
        }
        if n.write_only && self.opts.direction == Direction::Response {
            self.fail(path, "writeOnly", || "is write-only and must not appear in a response".into());
            bad!();
        }
        if n.types != 0 {
            let t = n.types;
            if !type_fits(t, kind, &v) {
                self.fail(path, "type", || format!("must be {}, not {}", types_text(t), type_name(kind, &v)));
                return false;
            }
        }
        if let Some(c) = &n.rare().const_ {
            if !eq_const(&v, c) {
                self.fail(path, "const", || "must be equal to the constant".into());
                bad!();
            }
        }
        if let Some(e) = &n.enum_ {
            if !e.iter().any(|c| eq_const(&v, c)) {
                self.fail(path, "enum", || format!("must be one of the {} allowed values", e.len()));
                bad!();
            }
        }
        // Annotation slot of this location, when this node needs its own.
        let own = match kind {
            Kind::Object if n.rare().unevaluated_props.is_some() => Some(self.alloc(v.len())),
            Kind::Array if n.rare().unevaluated_items.is_some() => Some(self.alloc(v.len())),
            _ => None,
        };
        let slot = own.or(ann);
        self.all_props = false;
        if !self.eval_kinds(n, v, kind, path, slot) {
            ok = false;
        }
        let all_props = self.all_props;
        if (ok || !self.bail()) && !self.eval_inplace(n, v, kind, path, slot) {
            ok = false;
        }
        if let Some(off) = own {
            if (ok || !self.bail()) && !self.unevaluated(n, v, kind, path, off) {
                ok = false;
            }
            self.merge(ann, off, v.len());
            self.release(off);
        }
        if top && self.shadowing() && self.quiet == 0 && kind == Kind::Object && !self.stop && !(all_props && n.known_own) {
            self.shadow(n, v, path);
        }
        ok
    }

    fn eval_kinds(&mut self, n: &SNode, v: ValueRef<'_>, kind: Kind, path: &Path<'_>, slot: Ann) -> bool {
        match kind {
            Kind::String if n.has_string => self.string(n, v, path),
            Kind::Number if n.has_number => self.number(n, v, path),
            Kind::Object if n.has_object => self.object(n, v, path, slot),
            Kind::Array if n.has_array => self.array(n, v, path, slot),
            _ => true,
        }
    }

    fn string(&mut self, n: &SNode, v: ValueRef<'_>, path: &Path<'_>) -> bool {
        let s = str_bytes(&v);
        let mut ok = true;
        if n.min_length.is_some() || n.max_length.is_some() {
            let bytes = s.len() as u64;
            // Bytes bound chars from above: count only when that decides.
            let need_count = n.max_length.is_some_and(|m| bytes > m) || n.min_length.is_some_and(|m| bytes >= m && m > 0 && bytes < 4 * m);
            let chars = if need_count { count_chars(&s) as u64 } else { bytes };
            if let Some(m) = n.max_length {
                if chars > m {
                    self.fail(path, "maxLength", || format!("must be at most {m} characters"));
                    ok = false;
                    if self.bail() {
                        return false;
                    }
                }
            }
            if let Some(m) = n.min_length {
                let chars = if need_count || bytes < m { chars } else { m };
                if chars < m {
                    self.fail(path, "minLength", || format!("must be at least {m} characters"));
                    ok = false;
                    if self.bail() {
                        return false;
                    }
                }
            }
        }
        if let Some(p) = n.pattern {
            let re = &self.s.regexes[p as usize];
            let matched = re.check(&s);
            if matched != Some(true) {
                self.fail(path, "pattern", || match matched {
                    None => format!(
                        "rejected: matching the pattern {} took more than {} backtracking steps",
                        truncate(re.as_str(), 48),
                        crate::pattern::BACKTRACK_LIMIT
                    ),
                    _ => format!("must match the pattern {}", truncate(re.as_str(), 48)),
                });
                ok = false;
                if self.bail() {
                    return false;
                }
            }
        }
        if let Some(f) = n.format {
            if !f.check_str(&s) {
                self.fail(path, "format", || format!("must be a valid {}", f.name()));
                ok = false;
            }
        }
        ok
    }

    fn number(&mut self, n: &SNode, v: ValueRef<'_>, path: &Path<'_>) -> bool {
        let text = v.raw();
        let int = fast_int(&v);
        let mut ok = true;
        if let Some(c) = n.num.as_deref() {
            self.bounds(c, text, int, path, &mut ok);
            if !ok && self.bail() {
                return false;
            }
        }
        if let Some(f) = n.format {
            if !f.check_number(text) {
                self.fail(path, "format", || format!("must be a valid {}", f.name()));
                ok = false;
            }
        }
        ok
    }

    fn bounds(&mut self, n: &NumChecks, text: &[u8], int: Option<i64>, path: &Path<'_>, ok: &mut bool) {
        use std::cmp::Ordering::*;
        macro_rules! check {
            ($cond:expr, $kw:expr, $msg:expr) => {
                if !$cond {
                    self.fail(path, $kw, || $msg);
                    *ok = false;
                    if self.bail() {
                        return;
                    }
                }
            };
        }
        if let Some(m) = &n.minimum {
            check!(num::cmp_instance(text, int, m) != Less, "minimum", format!("must be >= {}", m.text));
        }
        if let Some(m) = &n.exclusive_minimum {
            check!(num::cmp_instance(text, int, m) == Greater, "exclusiveMinimum", format!("must be > {}", m.text));
        }
        if let Some(m) = &n.maximum {
            check!(num::cmp_instance(text, int, m) != Greater, "maximum", format!("must be <= {}", m.text));
        }
        if let Some(m) = &n.exclusive_maximum {
            check!(num::cmp_instance(text, int, m) == Less, "exclusiveMaximum", format!("must be < {}", m.text));
        }
        if let Some(m) = &n.multiple_of {
            check!(num::is_multiple(text, int, m), "multipleOf", format!("must be a multiple of {}", m.text));
        }
    }

    fn object(&mut self, n: &SNode, v: ValueRef<'_>, path: &Path<'_>, slot: Ann) -> bool {
        let s = self.s;
        let mut ok = true;
        macro_rules! bad {
            () => {{
                ok = false;
                if self.bail() {
                    return false;
                }
            }};
        }
        let len = v.len() as u64;
        if let Some(m) = n.rare().min_props {
            if len < m {
                self.fail(path, "minProperties", || format!("must have at least {m} properties"));
                bad!();
            }
        }
        if let Some(m) = n.rare().max_props {
            if len > m {
                self.fail(path, "maxProperties", || format!("must have at most {m} properties"));
                bad!();
            }
        }
        let mut found: u64 = 0;
        let mut matched_props = 0usize;
        // Documents tend to list properties in the schema's order: try the next one first.
        let mut hint = 0usize;
        for (i, (k, val)) in v.members().enumerate() {
            let key = str_bytes(&k);
            let mut matched = false;
            let p = match n.props.names.get(hint) {
                Some(name) if bytes_eq(name, &key) => Some(hint),
                _ => n.props.find(&key),
            };
            if let Some(p) = p {
                hint = p + 1;
                matched = true;
                matched_props += 1;
                if p < 64 {
                    found |= 1 << p;
                }
                // Scalars of a plain type need neither the node nor a call.
                if n.props.quick[p] & quick_kind(&val) == 0 {
                    let cp = path.key(&k);
                    if !self.eval(n.props.ids[p], val, &cp, None, true) {
                        bad!();
                    }
                }
            }
            for &(re, sid) in &n.rare().pattern_props {
                if s.regexes[re as usize].is_match(&key) {
                    matched = true;
                    let cp = path.key(&k);
                    if !self.eval(sid, val, &cp, None, true) {
                        bad!();
                    }
                }
            }
            if matched {
                self.mark(slot, i);
            } else if let Some(a) = n.additional {
                self.mark(slot, i);
                let cp = path.key(&k);
                if s.nodes[a.0 as usize].reject_all {
                    self.fail(&cp, "additionalProperties", || format!("property {} is not allowed", quoted(&key)));
                    bad!();
                } else if !self.eval(a, val, &cp, None, true) {
                    bad!();
                }
            }
            if let Some(pn) = n.rare().property_names {
                let cp = path.key(&k);
                if !self.eval(pn, k, &cp, None, false) {
                    bad!();
                }
            }
        }
        for r in &n.required {
            if (r.read_only && self.opts.direction == Direction::Request) || (r.write_only && self.opts.direction == Direction::Response) {
                continue;
            }
            let present = match r.prop {
                Some(p) if p < 64 => found & (1 << p) != 0,
                _ => has_member(&v, &r.name),
            };
            if !present {
                self.fail(path, "required", || format!("missing required property {}", quoted(&r.name)));
                bad!();
            }
        }
        for (name, deps) in &n.rare().dependent_required {
            if has_member(&v, name) {
                for d in deps {
                    if !has_member(&v, d) {
                        self.fail(path, "dependentRequired", || format!("property {} is required when {} is present", quoted(d), quoted(name)));
                        bad!();
                    }
                }
            }
        }
        for (name, sid) in &n.rare().dependent_schemas {
            if has_member(&v, name) && !self.eval(*sid, v, path, slot, false) {
                bad!();
            }
        }
        self.all_props = matched_props == v.len();
        ok
    }

    fn array(&mut self, n: &SNode, v: ValueRef<'_>, path: &Path<'_>, slot: Ann) -> bool {
        let mut ok = true;
        macro_rules! bad {
            () => {{
                ok = false;
                if self.bail() {
                    return false;
                }
            }};
        }
        let len = v.len();
        if let Some(m) = n.min_items {
            if (len as u64) < m {
                self.fail(path, "minItems", || format!("must have at least {m} items"));
                bad!();
            }
        }
        if let Some(m) = n.max_items {
            if len as u64 > m {
                self.fail(path, "maxItems", || format!("must have at most {m} items"));
                bad!();
            }
        }
        if !n.rare().prefix_items.is_empty() || n.items.is_some() {
            for (i, item) in v.items().enumerate() {
                let sid = match n.rare().prefix_items.get(i) {
                    Some(&s) => s,
                    None => match n.items {
                        Some(s) => s,
                        None => break,
                    },
                };
                self.mark(slot, i);
                let cp = path.index(i);
                if !self.eval(sid, item, &cp, None, true) {
                    bad!();
                }
            }
        }
        if let Some(c) = n.rare().contains {
            let mut matches = 0u64;
            for (i, item) in v.items().enumerate() {
                let cp = path.index(i);
                if self.quietly(c, item, &cp, None) {
                    matches += 1;
                    self.mark(slot, i);
                }
            }
            let min = n.rare().min_contains.unwrap_or(1);
            if matches < min {
                self.fail(path, "contains", || format!("must contain at least {min} matching items ({matches} found)"));
                bad!();
            }
            if let Some(max) = n.rare().max_contains {
                if matches > max {
                    self.fail(path, "maxContains", || format!("must contain at most {max} matching items ({matches} found)"));
                    bad!();
                }
            }
        }
        if n.unique_items && len > 1 {
            if let Some((a, b)) = self.duplicate(&v) {
                self.fail(path, "uniqueItems", || format!("items {a} and {b} are equal"));
                bad!();
            }
        }
        ok
    }

    fn duplicate(&mut self, v: &ValueRef<'_>) -> Option<(u32, u32)> {
        if v.len() <= 16 {
            // Small arrays: pairwise, no memory needed.
            for (i, a) in v.items().enumerate() {
                for (j, b) in v.items().enumerate().skip(i + 1) {
                    if eq_values(&a, &b, 0) {
                        return Some((i as u32, j as u32));
                    }
                }
            }
            return None;
        }
        let mut hashes = std::mem::take(&mut self.scratch.hashes);
        hashes.clear();
        hashes.extend(v.items().enumerate().map(|(i, x)| (hash_value(&x, 0), i as u32)));
        hashes.sort_unstable();
        let items: Vec<ValueRef<'_>> = if hashes.windows(2).any(|w| w[0].0 == w[1].0) { v.items().collect() } else { Vec::new() };
        let mut found = None;
        'outer: for (i, w) in hashes.iter().enumerate() {
            for x in &hashes[i + 1..] {
                if x.0 != w.0 {
                    break;
                }
                if eq_values(&items[w.1 as usize], &items[x.1 as usize], 0) {
                    found = Some((w.1.min(x.1), w.1.max(x.1)));
                    break 'outer;
                }
            }
        }
        self.scratch.hashes = hashes;
        found
    }

    fn eval_inplace(&mut self, n: &SNode, v: ValueRef<'_>, kind: Kind, path: &Path<'_>, slot: Ann) -> bool {
        if !n.has_inplace && n.rare().dependent_schemas.is_empty() {
            return true;
        }
        let mut ok = true;
        macro_rules! bad {
            () => {{
                ok = false;
                if self.bail() {
                    return false;
                }
            }};
        }
        if let Some(r) = n.ref_ {
            if !self.eval(r, v, path, slot, false) {
                bad!();
            }
        }
        if let Some((fixed, name)) = n.rare().dynamic_ref {
            // The outermost resource of the dynamic scope that defines the anchor wins.
            let s = self.s;
            let target = name
                .and_then(|name| self.dyn_scope.iter().find_map(|&t| s.dyn_tables[t as usize].iter().find(|(a, _)| *a == name).map(|&(_, id)| id)))
                .unwrap_or(fixed);
            if !self.eval(target, v, path, slot, false) {
                bad!();
            }
        }
        for &a in &n.all_of {
            if !self.eval(a, v, path, slot, false) {
                bad!();
            }
        }
        let mut alternatives = true;
        if let (Some(d), Kind::Object) = (&n.rare().discriminator, kind) {
            alternatives = false;
            match v.members().find(|(k, _)| *str_bytes(k) == *d.property) {
                None => {
                    self.fail(path, "discriminator", || format!("missing discriminator property {}", quoted(&d.property)));
                    bad!();
                }
                Some((k, val)) => {
                    let value = str_bytes(&val);
                    match d.mapping.iter().find(|(name, _)| val.kind() == Kind::String && **name == *value) {
                        Some(&(_, sid)) => {
                            if !self.eval(sid, v, path, slot, false) {
                                bad!();
                            }
                        }
                        None => {
                            let cp = path.key(&k);
                            let shown = if val.kind() == Kind::String { quoted(&value) } else { "a non-string".to_string() };
                            self.fail(&cp, "discriminator", || format!("{shown} is not a known value of {}", quoted(&d.property)));
                            bad!();
                        }
                    }
                }
            }
        }
        if alternatives && !n.any_of.is_empty() {
            let mut any = false;
            for &b in &n.any_of {
                let tmp = slot.map(|_| self.alloc(v.len()));
                if self.quietly(b, v, path, tmp) {
                    any = true;
                    if let Some(t) = tmp {
                        self.merge(slot, t, v.len());
                    }
                    if self.shadowing() && self.quiet == 0 {
                        self.eval(b, v, path, None, false);
                    }
                }
                if let Some(t) = tmp {
                    self.release(t);
                }
                if any && slot.is_none() {
                    break;
                }
            }
            if !any {
                self.fail(path, "anyOf", || format!("must match at least one of {} schemas", n.any_of.len()));
                bad!();
            }
        }
        if alternatives && !n.one_of.is_empty() {
            let mut count = 0;
            let mut first = None;
            let keep = slot.map(|_| self.alloc(v.len()));
            for &b in &n.one_of {
                let tmp = slot.map(|_| self.alloc(v.len()));
                if self.quietly(b, v, path, tmp) {
                    count += 1;
                    if count == 1 {
                        first = Some(b);
                        if let (Some(t), Some(k)) = (tmp, keep) {
                            self.merge(Some(k), t, v.len());
                        }
                    }
                }
                if let Some(t) = tmp {
                    self.release(t);
                }
                if count > 1 {
                    break;
                }
            }
            if count == 1 {
                if let Some(k) = keep {
                    self.merge(slot, k, v.len());
                }
                if self.shadowing() && self.quiet == 0 {
                    if let Some(b) = first {
                        self.eval(b, v, path, None, false);
                    }
                }
            }
            if let Some(k) = keep {
                self.release(k);
            }
            if count != 1 {
                let what = if count == 0 { "none" } else { "more than one" };
                self.fail(path, "oneOf", || format!("must match exactly one of {} schemas (matched {what})", n.one_of.len()));
                bad!();
            }
        }
        if let Some(x) = n.rare().not {
            if self.quietly(x, v, path, None) {
                self.fail(path, "not", || "must not match the schema in not".into());
                bad!();
            }
        }
        if let Some(c) = n.rare().if_ {
            let tmp = slot.map(|_| self.alloc(v.len()));
            let cond = self.quietly(c, v, path, tmp);
            if cond {
                if let Some(t) = tmp {
                    self.merge(slot, t, v.len());
                }
            }
            if let Some(t) = tmp {
                self.release(t);
            }
            let branch = if cond { n.rare().then_ } else { n.rare().else_ };
            if let Some(b) = branch {
                if !self.eval(b, v, path, slot, false) {
                    bad!();
                }
            }
        }
        ok
    }

    fn unevaluated(&mut self, n: &SNode, v: ValueRef<'_>, kind: Kind, path: &Path<'_>, off: usize) -> bool {
        let mut ok = true;
        match kind {
            Kind::Object => {
                let Some(u) = n.rare().unevaluated_props else { return true };
                let reject = self.s.nodes[u.0 as usize].reject_all;
                for (i, (k, val)) in v.members().enumerate() {
                    if self.marked(off, i) {
                        continue;
                    }
                    let cp = path.key(&k);
                    if reject {
                        self.fail(&cp, "unevaluatedProperties", || format!("property {} is not allowed", quoted(&str_bytes(&k))));
                        ok = false;
                    } else if !self.eval(u, val, &cp, None, true) {
                        ok = false;
                    }
                    if !ok && self.bail() {
                        return false;
                    }
                    self.mark(Some(off), i);
                }
            }
            Kind::Array => {
                let Some(u) = n.rare().unevaluated_items else { return true };
                for (i, item) in v.items().enumerate() {
                    if self.marked(off, i) {
                        continue;
                    }
                    let cp = path.index(i);
                    if self.s.nodes[u.0 as usize].reject_all {
                        self.fail(&cp, "unevaluatedItems", || "item is not allowed".into());
                        ok = false;
                    } else if !self.eval(u, item, &cp, None, true) {
                        ok = false;
                    }
                    if !ok && self.bail() {
                        return false;
                    }
                    self.mark(Some(off), i);
                }
            }
            _ => {}
        }
        ok
    }

    fn shadow(&mut self, n: &SNode, v: ValueRef<'_>, path: &Path<'_>) {
        let Some(known) = &n.known else { return };
        if known.all {
            return;
        }
        for (k, _) in v.members() {
            if self.unknown >= self.opts.max_unknown {
                return;
            }
            let key = str_bytes(&k);
            let named = if n.known_own { n.props.find(&key).is_some() } else { known.names.find(&key).is_some() };
            if named || known.patterns.iter().any(|&re| self.s.regexes[re as usize].is_match(&key)) {
                continue;
            }
            let cp = path.key(&k);
            let msg = format!("property {} is not described by the schema", quoted(&key));
            self.push(ViolationKind::UnknownProperty, &cp, "properties", msg);
        }
    }
}
