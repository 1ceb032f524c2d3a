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
//!
//! This file holds the evaluation context and the dispatch of a node; `keywords` the
//! keywords of each instance type, `inplace` the applicators to the same instance
//! (`$ref`, `allOf`, `anyOf`, `oneOf`, `not`, `if`, discriminator) with `unevaluated*` and
//! shadow fields, `values` what compares and describes JSON values.

use palisade_json::{Kind, ValueRef};

use crate::compile::SNode;
use crate::{Direction, Options, SchemaId, Schemas, Violation, ViolationKind};

mod inplace;
mod keywords;
mod values;

pub(crate) use values::truncate;
use values::{eq_const, type_fits, type_name, types_text};

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
}
