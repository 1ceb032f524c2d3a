//! From located YAML schemas to the arena of compiled nodes.
//!
//! Subschemas are compiled recursively (the YAML tree is bounded in depth); `$ref` targets are
//! given an id at once and queued, so reference chains and cycles never recurse. A cycle that
//! does not consume any part of the instance (`A: {$ref: A}`, `A: {allOf: [{$ref: B}]}, B:
//! {anyOf: [{$ref: A}]}`) is a compile error, found after everything is compiled.
//! A schema compiled in place that checks exactly what an earlier one checks (same keywords,
//! same subschemas) is that earlier node: the arena grows with the distinct schemas of a spec,
//! not with its text (see `Compiler::share`).

use std::collections::HashMap;

use palisade_config::yaml::{Node, Origin, Value};

use crate::formats::Format;
use crate::num::Num;
use crate::pattern;
use crate::{ids, Dialect, DocId, Formats, Nullable, Resolved, Resolver, SchemaError, SchemaId, Schemas, TypeSet};

/// A constant for `enum` and `const`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Const {
    Null,
    Bool(bool),
    Num(Num),
    Str(Box<[u8]>),
    Arr(Vec<Const>),
    Obj(Vec<(Box<[u8]>, Const)>),
}

/// Property names with a small open-addressing hash table over their bytes.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct PropTable {
    pub names: Vec<Box<[u8]>>,
    pub ids: Vec<SchemaId>,
    /// Per property (filled at finish): the [`quick`] kinds of instance that its schema
    /// accepts without evaluating anything else.
    pub quick: Vec<u8>,
    slots: Vec<u16>,
    mask: usize,
}

const EMPTY: u16 = u16::MAX;

#[inline(always)]
pub(crate) fn key_hash(k: &[u8]) -> u64 {
    let n = k.len();
    let (a, b) = if n >= 8 {
        (u64::from_le_bytes(k[..8].try_into().unwrap()), u64::from_le_bytes(k[n - 8..].try_into().unwrap()))
    } else {
        let mut a = 0u64;
        for &c in k {
            a = a << 8 | c as u64;
        }
        (a, 0)
    };
    (a ^ b.rotate_left(29) ^ (n as u64).wrapping_mul(0x9E37_79B9)).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 20
}

/// Equality of short byte strings without a call to `memcmp`.
#[inline(always)]
pub(crate) fn bytes_eq(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    if n >= 8 {
        let w = |s: &[u8], i: usize| u64::from_le_bytes(s[i..i + 8].try_into().unwrap());
        if w(a, 0) != w(b, 0) || w(a, n - 8) != w(b, n - 8) {
            return false;
        }
        n <= 16 || (n <= 24 && w(a, 8) == w(b, 8)) || (n > 24 && a[8..n - 8] == b[8..n - 8])
    } else if n >= 4 {
        let w = |s: &[u8], i: usize| u32::from_le_bytes(s[i..i + 4].try_into().unwrap());
        w(a, 0) == w(b, 0) && w(a, n - 4) == w(b, n - 4)
    } else {
        a.iter().zip(b).all(|(x, y)| x == y)
    }
}

impl PropTable {
    pub fn push(&mut self, name: &[u8], id: SchemaId) {
        if let Some(i) = self.find(name) {
            self.ids[i] = id;
            return;
        }
        self.names.push(name.into());
        self.ids.push(id);
        self.quick.push(0);
        self.rebuild();
    }

    fn rebuild(&mut self) {
        let size = (self.names.len() * 2).next_power_of_two().max(4);
        self.mask = size - 1;
        self.slots = vec![EMPTY; size];
        for (i, n) in self.names.iter().enumerate() {
            let mut h = key_hash(n) as usize & self.mask;
            while self.slots[h] != EMPTY {
                h = (h + 1) & self.mask;
            }
            self.slots[h] = i as u16;
        }
    }

    #[inline]
    pub fn find(&self, key: &[u8]) -> Option<usize> {
        if self.names.is_empty() {
            return None;
        }
        let mut h = key_hash(key) as usize & self.mask;
        loop {
            let s = self.slots[h];
            if s == EMPTY {
                return None;
            }
            if bytes_eq(&self.names[s as usize], key) {
                return Some(s as usize);
            }
            h = (h + 1) & self.mask;
        }
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Required {
    pub name: Box<[u8]>,
    /// Index in the node's `properties`, when named there.
    pub prop: Option<usize>,
    /// The property's schema is `readOnly` / `writeOnly` (computed at finish).
    pub read_only: bool,
    pub write_only: bool,
}

/// A property name and the names it makes required.
pub(crate) type DependentRequired = (Box<[u8]>, Vec<Box<[u8]>>);

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Discriminator {
    pub property: Box<[u8]>,
    /// Explicit `mapping`, then implicit names of the `oneOf`/`anyOf` `$ref`s.
    pub mapping: Vec<(Box<[u8]>, SchemaId)>,
}

/// What `shadow_unknown` needs: every property name that the schema describes, looking
/// through in-place composition.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Known {
    /// The names, when they are not the node's own `properties` (`known_own`) and not every
    /// name is described (`all`): empty then.
    pub names: PropTable,
    pub patterns: Vec<u32>,
    /// Some schema in the composition describes or forbids all other properties
    /// (`additionalProperties` with constraints or `false`, `unevaluatedProperties` likewise).
    pub all: bool,
}

/// Numeric keywords (boxed: most schemas have none, and the node's hot part stays small).
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct NumChecks {
    pub minimum: Option<Num>,
    pub maximum: Option<Num>,
    pub exclusive_minimum: Option<Num>,
    pub exclusive_maximum: Option<Num>,
    pub multiple_of: Option<Num>,
}

impl NumChecks {
    fn any(&self) -> bool {
        self.minimum.is_some() || self.maximum.is_some() || self.exclusive_minimum.is_some() || self.exclusive_maximum.is_some() || self.multiple_of.is_some()
    }
}

/// A compiled schema. Absent keywords are `None`/empty. `repr(C)` with what the leaf path
/// reads first, so that a leaf evaluation touches one cache line of the node.
#[derive(Clone, Debug, Default, PartialEq)]
#[repr(C)]
pub(crate) struct SNode {
    /// No keyword at all: every instance is valid.
    pub accept_all: bool,
    /// Only `type`/`nullable` and string or number keywords: evaluation never recurses.
    pub leaf: bool,
    pub reject_all: bool,
    /// `TypeSet` bits; 0 when there is no `type`.
    pub types: u8,
    /// OpenAPI 3.0 `nullable: true`.
    pub nullable: bool,
    pub has_string: bool,
    pub has_number: bool,
    pub has_object: bool,
    pub has_array: bool,
    pub has_inplace: bool,
    pub read_only: bool,
    pub write_only: bool,
    pub unique_items: bool,
    pub format: Option<Format>,
    pub pattern: Option<u32>,
    pub min_length: Option<u64>,
    pub max_length: Option<u64>,
    pub num: Option<Box<NumChecks>>,
    pub enum_: Option<Vec<Const>>,
    pub items: Option<SchemaId>,
    pub min_items: Option<u64>,
    pub max_items: Option<u64>,
    pub props: PropTable,
    pub additional: Option<SchemaId>,
    pub required: Vec<Required>,
    pub all_of: Vec<SchemaId>,
    pub any_of: Vec<SchemaId>,
    pub one_of: Vec<SchemaId>,
    pub ref_: Option<SchemaId>,
    /// The table of `$dynamicAnchor`s of the schema resource this schema belongs to, when it
    /// has any (entered into the dynamic scope when evaluation reaches the resource).
    pub dyn_table: Option<u32>,
    pub known: Option<Box<Known>>,
    /// The shadow-field names are exactly `props` (no composition, no patterns): a member
    /// matched by `properties` is described, so an object all of whose members matched has
    /// nothing to report.
    pub known_own: bool,
    /// Keywords most schemas do not use (boxed: they would make every node several times larger).
    pub rare: Option<Box<Rare>>,
}

/// The keywords of a schema that most schemas do not have.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Rare {
    pub const_: Option<Const>,
    pub prefix_items: Vec<SchemaId>,
    pub contains: Option<SchemaId>,
    pub min_contains: Option<u64>,
    pub max_contains: Option<u64>,
    pub pattern_props: Vec<(u32, SchemaId)>,
    pub property_names: Option<SchemaId>,
    pub min_props: Option<u64>,
    pub max_props: Option<u64>,
    pub dependent_required: Vec<DependentRequired>,
    pub dependent_schemas: Vec<(Box<[u8]>, SchemaId)>,
    pub not: Option<SchemaId>,
    pub if_: Option<SchemaId>,
    pub then_: Option<SchemaId>,
    pub else_: Option<SchemaId>,
    /// `$dynamicRef`: the static target, and the anchor name when it is dynamic.
    pub dynamic_ref: Option<(SchemaId, Option<u32>)>,
    pub discriminator: Option<Discriminator>,
    pub unevaluated_props: Option<SchemaId>,
    pub unevaluated_items: Option<SchemaId>,
}

/// What a node without [`Rare`] keywords reads.
static NO_RARE: Rare = Rare {
    const_: None,
    prefix_items: Vec::new(),
    contains: None,
    min_contains: None,
    max_contains: None,
    pattern_props: Vec::new(),
    property_names: None,
    min_props: None,
    max_props: None,
    dependent_required: Vec::new(),
    dependent_schemas: Vec::new(),
    not: None,
    if_: None,
    then_: None,
    else_: None,
    dynamic_ref: None,
    discriminator: None,
    unevaluated_props: None,
    unevaluated_items: None,
};

/// Kinds of instance, as bits, for [`PropTable::quick`].
pub(crate) mod quick {
    pub const NULL: u8 = 1;
    pub const BOOL: u8 = 2;
    /// A number written as an integer (no fraction, no exponent).
    pub const INT_TEXT: u8 = 4;
    /// A number written with a fraction or an exponent.
    pub const FRAC_TEXT: u8 = 8;
    pub const STRING: u8 = 16;
    pub const ARRAY: u8 = 32;
    pub const OBJECT: u8 = 64;
    pub const ALL: u8 = 127;
}

/// The kinds of instance that `n` accepts with no check beyond its type (and that are
/// evaluated without recording anything, shadow fields included).
pub(crate) fn quick_kinds(n: &SNode) -> u8 {
    if n.accept_all {
        return quick::ALL;
    }
    if !n.leaf {
        return 0;
    }
    let t = if n.types == 0 { TypeSet::ANY } else { n.types };
    let mut q = 0;
    if t & TypeSet::NULL != 0 || n.nullable {
        q |= quick::NULL;
    }
    if t & TypeSet::BOOLEAN != 0 {
        q |= quick::BOOL;
    }
    if !n.has_string && t & TypeSet::STRING != 0 {
        q |= quick::STRING;
    }
    if !n.has_number {
        if t & TypeSet::NUMBER != 0 {
            q |= quick::INT_TEXT | quick::FRAC_TEXT;
        } else if t & TypeSet::INTEGER != 0 {
            q |= quick::INT_TEXT;
        }
    }
    if t & TypeSet::ARRAY != 0 {
        q |= quick::ARRAY;
    }
    if t & TypeSet::OBJECT != 0 {
        q |= quick::OBJECT;
    }
    q
}

impl SNode {
    /// The rare keywords (all absent when the node has none).
    #[inline(always)]
    pub fn rare(&self) -> &Rare {
        self.rare.as_deref().unwrap_or(&NO_RARE)
    }

    /// The rare keywords, to set one.
    pub fn rare_mut(&mut self) -> &mut Rare {
        self.rare.get_or_insert_with(Default::default)
    }

    /// Subschemas applied to the same instance location.
    pub fn in_place(&self) -> impl Iterator<Item = SchemaId> + '_ {
        self.ref_
            .iter()
            .chain(self.rare().dynamic_ref.iter().map(|(s, _)| s))
            .chain(&self.all_of)
            .chain(&self.any_of)
            .chain(&self.one_of)
            .chain(&self.rare().not)
            .chain(&self.rare().if_)
            .chain(&self.rare().then_)
            .chain(&self.rare().else_)
            .chain(self.rare().dependent_schemas.iter().map(|(_, s)| s))
            .chain(self.rare().discriminator.iter().flat_map(|d| d.mapping.iter().map(|(_, s)| s)))
            .copied()
    }

    /// Every subschema: applied in place and to members or items.
    fn subschemas(&self) -> impl Iterator<Item = SchemaId> + '_ {
        let r = self.rare();
        self.in_place()
            .chain(self.items)
            .chain(self.props.ids.iter().copied())
            .chain(self.additional)
            .chain(r.prefix_items.iter().copied())
            .chain(r.contains)
            .chain(r.pattern_props.iter().map(|&(_, s)| s))
            .chain(r.property_names)
            .chain(r.unevaluated_props)
            .chain(r.unevaluated_items)
    }

    /// A hash of what the node checks, consistent with `==` (for finding an identical node).
    fn shape_hash(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        fn konst(c: &Const, h: &mut impl Hasher) {
            match c {
                Const::Null => 0u8.hash(h),
                Const::Bool(b) => b.hash(h),
                Const::Num(n) => n.text.hash(h),
                Const::Str(s) => s.hash(h),
                Const::Arr(a) => a.iter().for_each(|c| konst(c, h)),
                Const::Obj(o) => o.iter().for_each(|(k, c)| {
                    k.hash(h);
                    konst(c, h)
                }),
            }
        }
        let mut h = std::hash::DefaultHasher::new();
        let flags =
            [self.accept_all, self.reject_all, self.nullable, self.read_only, self.write_only, self.unique_items, self.num.is_some(), self.rare.is_some()];
        (self.types, flags, self.format, self.pattern, self.min_length, self.max_length, self.min_items, self.max_items, self.dyn_table).hash(&mut h);
        self.props.names.hash(&mut h);
        self.required.iter().for_each(|r| r.name.hash(&mut h));
        self.enum_.iter().flatten().for_each(|c| konst(c, &mut h));
        self.subschemas().for_each(|s| s.hash(&mut h));
        h.finish()
    }
}

struct Pending<'r> {
    id: SchemaId,
    doc: DocId,
    pointer: String,
    node: &'r Node,
}

/// Compiles schemas of one spec into one arena. Schemas reached through the same `$ref`
/// target are compiled once (cycles are fine).
pub struct Compiler<'r> {
    dialect: Dialect,
    resolver: &'r dyn Resolver,
    nodes: Vec<SNode>,
    /// Whether a node's content has been compiled (ids are handed out before).
    filled: Vec<bool>,
    /// Schemas compiled or queued, by document and node (its address in the resolver's tree,
    /// which outlives the compiler): not by pointer text, which for a large spec would hold a
    /// copy of every schema's JSON pointer.
    by_node: HashMap<(DocId, usize), SchemaId>,
    queue: Vec<Pending<'r>>,
    /// Resources, anchors and base URIs of each document compiled from.
    indexes: HashMap<DocId, ids::DocIndex>,
    /// Per schema resource with `$dynamicAnchor`s: (name, schema).
    dyn_tables: Vec<Vec<(u32, SchemaId)>>,
    dyn_names: HashMap<String, u32>,
    dyn_by_resource: HashMap<(DocId, String), u32>,
    regexes: Vec<pattern::Pattern>,
    patterns: HashMap<String, Option<u32>>,
    errors: Vec<SchemaError>,
    warnings: Vec<SchemaError>,
    nullable: Nullable,
    formats: Formats,
    /// `nullable` in 3.1 schemas: how many, and the first one's place.
    nullable_31: Option<(usize, DocId, String, Origin)>,
    /// Schemas compiled in place that later identical ones share, by [`SNode::shape_hash`]
    /// (see [`Compiler::share`]).
    shared: HashMap<u64, Vec<SchemaId>>,
}

const MAX_SCHEMA_DEPTH: usize = 200;

/// The identity of a node of the resolver's tree.
fn node_key(n: &Node) -> usize {
    n as *const Node as usize
}

/// Percent-decode a URI fragment (invalid escapes and non-UTF-8 results are kept as written).
fn pct_decode(s: &str) -> String {
    if !s.contains('%') {
        return s.to_string();
    }
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let Some(v) = std::str::from_utf8(&b[i + 1..i + 3]).ok().and_then(|h| u8::from_str_radix(h, 16).ok()) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|_| s.to_string())
}

fn escape_token(s: &str) -> String {
    s.replace('~', "~0").replace('/', "~1")
}

impl std::fmt::Debug for Compiler<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Compiler").field("dialect", &self.dialect).field("nodes", &self.nodes.len()).finish()
    }
}

impl<'r> Compiler<'r> {
    pub fn new(dialect: Dialect, resolver: &'r dyn Resolver) -> Self {
        Compiler {
            dialect,
            resolver,
            nodes: Vec::new(),
            filled: Vec::new(),
            by_node: HashMap::new(),
            queue: Vec::new(),
            indexes: HashMap::new(),
            dyn_tables: Vec::new(),
            dyn_names: HashMap::new(),
            dyn_by_resource: HashMap::new(),
            regexes: Vec::new(),
            patterns: HashMap::new(),
            errors: Vec::new(),
            warnings: Vec::new(),
            nullable: Nullable::default(),
            formats: Formats::default(),
            nullable_31: None,
            shared: HashMap::new(),
        }
    }

    /// What `nullable` means in a 3.1 schema (in 3.0 it is a keyword).
    pub fn set_nullable(&mut self, nullable: Nullable) {
        self.nullable = nullable;
    }

    /// Whether `format` asserts (the default) or only annotates.
    pub fn set_formats(&mut self, formats: Formats) {
        self.formats = formats;
    }

    /// Compile the schema `node`, found at `pointer` in document `doc`. Errors are collected
    /// and returned by [`Compiler::finish`]; the id is usable either way.
    pub fn compile(&mut self, doc: DocId, pointer: &str, node: &Node) -> SchemaId {
        let id = self.subschema(doc, pointer.to_string(), node, 0);
        self.drain();
        id
    }

    fn drain(&mut self) {
        while let Some(p) = self.queue.pop() {
            if !self.filled[p.id.0 as usize] {
                self.fill(p.id, p.doc, &p.pointer, p.node, 0);
            }
        }
    }

    fn alloc(&mut self) -> SchemaId {
        let id = SchemaId(self.nodes.len() as u32);
        self.nodes.push(SNode::default());
        self.filled.push(false);
        id
    }

    fn subschema(&mut self, doc: DocId, pointer: String, node: &Node, depth: usize) -> SchemaId {
        let key = (doc, node_key(node));
        if let Some(&id) = self.by_node.get(&key) {
            if self.filled[id.0 as usize] {
                return id;
            }
            self.fill(id, doc, &pointer, node, depth);
            return id;
        }
        if let Some((origin, reference)) = self.pure_ref(node) {
            // A schema that is only a `$ref` is its target: no node of its own, no extra hop.
            let kp = format!("{pointer}/$ref");
            let id = match self.reference(doc, &kp, origin, reference) {
                Some(target) => target,
                None => {
                    let id = self.alloc();
                    self.filled[id.0 as usize] = true;
                    id
                }
            };
            self.by_node.insert(key, id);
            return id;
        }
        let id = self.alloc();
        self.by_node.insert(key, id);
        self.fill(id, doc, &pointer, node, depth);
        match self.share(id) {
            Some(same) => {
                self.by_node.insert(key, same);
                same
            }
            None => id,
        }
    }

    /// An identical schema compiled before, for schema `id` just compiled in place: its node
    /// is removed and the earlier one serves both. Specs repeat the same inline schemas
    /// (`{type: string, maxLength: 5000}` in thousands of places, whole request bodies across
    /// operations); compiled once each, they would take memory in proportion to the spec's
    /// text rather than to what it describes.
    ///
    /// Nodes are equal when they check the same things with the same subschemas (by id), so
    /// subschemas are shared first and their parents then compare equal. A node is removed
    /// only when it is the last one (so nothing compiled after it refers to it) and neither
    /// it nor a `$dynamicAnchor` table names it; one without a twin is kept for later ones.
    fn share(&mut self, id: SchemaId) -> Option<SchemaId> {
        let n = &self.nodes[id.0 as usize];
        let hash = n.shape_hash();
        let nodes = &self.nodes;
        let twin = self.shared.get(&hash).and_then(|ids| ids.iter().copied().find(|s| nodes[s.0 as usize] == *n));
        match twin {
            Some(twin)
                if id.0 as usize + 1 == self.nodes.len() && !n.subschemas().any(|s| s == id) && !self.dyn_tables.iter().flatten().any(|&(_, s)| s == id) =>
            {
                self.nodes.pop();
                self.filled.pop();
                Some(twin)
            }
            Some(_) => None,
            None => {
                self.shared.entry(hash).or_default().push(id);
                None
            }
        }
    }

    /// `{$ref: ...}` alone (3.0: whatever its siblings; 3.1: with annotations only).
    fn pure_ref<'n>(&self, node: &'n Node) -> Option<(&'n Origin, &'n str)> {
        let Value::Map(entries) = &node.value else { return None };
        let (key, target) = entries.iter().find(|(k, _)| k.name == "$ref")?;
        let Value::Str(reference) = &target.value else { return None };
        let annotation_only = entries.iter().all(|(k, _)| {
            matches!(k.name.as_str(), "$ref" | "description" | "summary" | "title" | "example" | "examples" | "$comment" | "deprecated")
                || k.name.starts_with("x-")
        });
        (self.dialect == Dialect::Oas30 || annotation_only).then_some((&key.origin, reference.as_str()))
    }

    fn error(&mut self, doc: DocId, pointer: &str, origin: &Origin, message: impl Into<String>) {
        self.errors.push(SchemaError { doc, pointer: pointer.to_string(), origin: origin.clone(), message: message.into() });
    }

    fn warn(&mut self, doc: DocId, pointer: &str, origin: &Origin, message: impl Into<String>) {
        self.warnings.push(SchemaError { doc, pointer: pointer.to_string(), origin: origin.clone(), message: message.into() });
    }

    /// Resolve a `$ref` to an id (compiled now or later).
    fn reference(&mut self, doc: DocId, pointer: &str, origin: &Origin, reference: &str) -> Option<SchemaId> {
        match self.locate(doc, pointer, reference) {
            Ok(r) => Some(self.id_of(r)),
            Err(e) => {
                self.error(doc, pointer, origin, format!("cannot resolve $ref {reference:?}: {e}"));
                None
            }
        }
    }

    /// The id of a resolved schema (allocated and queued when new).
    fn id_of(&mut self, r: Resolved<'r>) -> SchemaId {
        let key = (r.doc, node_key(r.node));
        if let Some(&id) = self.by_node.get(&key) {
            return id;
        }
        let id = self.alloc();
        self.by_node.insert(key, id);
        self.queue.push(Pending { id, doc: r.doc, pointer: r.pointer, node: r.node });
        id
    }

    fn ensure_index(&mut self, doc: DocId) {
        if self.indexes.contains_key(&doc) {
            return;
        }
        let base = self.resolver.base_uri(doc);
        let idx = match self.resolver.resolve(doc, "#") {
            Ok(root) => ids::index(root.node, &base, self.dialect == Dialect::Oas30),
            Err(_) => ids::DocIndex { resources: vec![(base.clone(), String::new())], base, ..Default::default() },
        };
        self.indexes.insert(doc, idx);
    }

    /// Where `reference`, found at `pointer` of `doc`, leads: resolved against the base URI in
    /// force there (`$id`s), to a schema resource of a document already seen, or to a document
    /// of the resolver; the fragment is a JSON pointer from that resource, or an anchor in it.
    fn locate(&mut self, doc: DocId, pointer: &str, reference: &str) -> Result<Resolved<'r>, crate::Error> {
        self.ensure_index(doc);
        let (uri, fragment) = reference.split_once('#').unwrap_or((reference, ""));
        let here = &self.indexes[&doc];
        let abs = ids::join(here.base_at(pointer), uri);
        let mut found: Option<(DocId, String, String)> = here.resources.iter().rev().find(|r| r.0 == abs).map(|r| (doc, r.1.clone(), abs.clone()));
        if found.is_none() && !abs.is_empty() {
            found = self.indexes.iter().find_map(|(d, idx)| idx.resources.iter().find(|r| r.0 == abs).map(|r| (*d, r.1.clone(), abs.clone())));
        }
        let (tdoc, rptr, resource) = match found {
            Some(f) => f,
            None => {
                // Another document: by the absolute URI, else as written (relative to the
                // document's location, which is how the spec loader finds documents).
                let by_abs = if !abs.is_empty() && abs != uri { self.resolver.resolve(doc, &abs).ok() } else { None };
                let r = match by_abs {
                    Some(r) => r,
                    None => self.resolver.resolve(doc, uri)?,
                };
                self.ensure_index(r.doc);
                let res = self.indexes[&r.doc].base_at(&r.pointer).to_string();
                (r.doc, r.pointer, res)
            }
        };
        let decoded = pct_decode(fragment);
        let target = if decoded.is_empty() {
            rptr
        } else if decoded.starts_with('/') {
            format!("{rptr}{decoded}")
        } else {
            match self.indexes[&tdoc].anchors.get(&(resource.clone(), decoded.clone())) {
                Some(p) => p.clone(),
                None => {
                    let within = if resource.is_empty() { "the document" } else { &resource };
                    return Err(crate::Error::new(crate::ErrorKind::Reference, format!("no $anchor {decoded:?} in {within}")));
                }
            }
        };
        match self.resolver.resolve(tdoc, &format!("#{}", target.replace('%', "%25"))) {
            Ok(r) => Ok(r),
            // Specs that give a component schema an `$id` still mean `#/components/...`
            // relative to the document: fall back to that reading.
            Err(e) => self.resolver.resolve(doc, reference).map_err(|_| e),
        }
    }

    /// The `$dynamicAnchor`s of the schema resource that contains `pointer`, as a table index
    /// (one per resource); `None` when it has none.
    fn dyn_table(&mut self, doc: DocId, pointer: &str) -> Option<u32> {
        self.ensure_index(doc);
        let idx = &self.indexes[&doc];
        let uri = idx.base_at(pointer).to_string();
        let anchors = idx.dynamic.get(&uri)?.clone();
        if let Some(&t) = self.dyn_by_resource.get(&(doc, uri.clone())) {
            return Some(t);
        }
        let t = self.dyn_tables.len() as u32;
        self.dyn_by_resource.insert((doc, uri), t);
        self.dyn_tables.push(Vec::new());
        let mut table = Vec::new();
        for (name, p) in anchors {
            if let Ok(r) = self.resolver.resolve(doc, &format!("#{}", p.replace('%', "%25"))) {
                let sid = self.id_of(r);
                let n = self.dyn_name(&name);
                table.push((n, sid));
            }
        }
        self.dyn_tables[t as usize] = table;
        Some(t)
    }

    fn dyn_name(&mut self, name: &str) -> u32 {
        let next = self.dyn_names.len() as u32;
        *self.dyn_names.entry(name.to_string()).or_insert(next)
    }

    fn fill(&mut self, id: SchemaId, doc: DocId, pointer: &str, node: &Node, depth: usize) {
        self.filled[id.0 as usize] = true;
        if depth > MAX_SCHEMA_DEPTH {
            self.error(doc, pointer, &node.origin, "schema nested too deeply");
            return;
        }
        let entries = match &node.value {
            Value::Bool(b) => {
                let n = &mut self.nodes[id.0 as usize];
                n.reject_all = !*b;
                n.accept_all = *b;
                return;
            }
            Value::Map(entries) => entries,
            _ => {
                self.error(doc, pointer, &node.origin, format!("a schema must be a mapping, not {}", node.kind()));
                return;
            }
        };
        let mut n = SNode { dyn_table: self.dyn_table(doc, pointer), ..SNode::default() };
        let mut num = NumChecks::default();
        let oas30 = self.dialect == Dialect::Oas30;
        let has_ref = entries.iter().any(|(k, _)| k.name == "$ref");
        let mut excl_min_bool = false;
        let mut excl_max_bool = false;
        let mut disc_node: Option<&Node> = None;
        let mut implicit: Vec<(Box<[u8]>, SchemaId)> = Vec::new();
        let mut required_names: Vec<Box<[u8]>> = Vec::new();
        let mut tuple_items = false;
        let mut additional_items: Option<(String, &Node)> = None;
        for (key, v) in entries {
            let k = key.name.as_str();
            if oas30 && has_ref && k != "$ref" {
                continue; // siblings of $ref are ignored in OpenAPI 3.0
            }
            let kp = format!("{pointer}/{}", escape_token(k));
            let origin = &key.origin;
            let only31 = matches!(
                k,
                "const"
                    | "prefixItems"
                    | "contains"
                    | "minContains"
                    | "maxContains"
                    | "propertyNames"
                    | "dependentRequired"
                    | "dependentSchemas"
                    | "if"
                    | "then"
                    | "else"
                    | "$defs"
                    | "$anchor"
                    | "unevaluatedProperties"
                    | "unevaluatedItems"
            );
            if oas30 && only31 {
                self.warn(doc, &kp, origin, format!("{k} is not a keyword of OpenAPI 3.0 schemas; ignored"));
                continue;
            }
            match k {
                "$ref" => {
                    let Some(r) = self.string(doc, &kp, v) else { continue };
                    n.ref_ = self.reference(doc, &kp, origin, &r);
                }
                "type" => n.types |= self.types(doc, &kp, v),
                "nullable" => {
                    if oas30 {
                        n.nullable = self.boolean(doc, &kp, v).unwrap_or(false);
                    } else {
                        match &mut self.nullable_31 {
                            Some((count, ..)) => *count += 1,
                            None => self.nullable_31 = Some((1, doc, kp.clone(), origin.clone())),
                        }
                        if self.nullable == Nullable::Honour {
                            n.nullable = self.boolean(doc, &kp, v).unwrap_or(false);
                        }
                    }
                }
                "readOnly" => n.read_only = self.boolean(doc, &kp, v).unwrap_or(false),
                "writeOnly" => n.write_only = self.boolean(doc, &kp, v).unwrap_or(false),
                "enum" => match &v.value {
                    Value::Seq(items) => n.enum_ = Some(items.iter().map(to_const).collect()),
                    _ => self.error(doc, &kp, &v.origin, "enum must be a list"),
                },
                "const" => n.rare_mut().const_ = Some(to_const(v)),
                "format" => {
                    if let Some(f) = self.string(doc, &kp, v).filter(|_| self.formats == Formats::Assert) {
                        match Format::from_name(&f) {
                            Some(fmt) => n.format = Some(fmt),
                            None => self.warn(doc, &kp, &v.origin, format!("unknown format {f:?}; not checked")),
                        }
                    }
                }
                "minimum" => num.minimum = self.number(doc, &kp, v),
                "maximum" => num.maximum = self.number(doc, &kp, v),
                "exclusiveMinimum" | "exclusiveMaximum" => {
                    let min = k == "exclusiveMinimum";
                    if let Value::Bool(b) = v.value {
                        if !oas30 {
                            self.warn(doc, &kp, &v.origin, format!("boolean {k} is OpenAPI 3.0 syntax; read as such"));
                        }
                        if min {
                            excl_min_bool = b;
                        } else {
                            excl_max_bool = b;
                        }
                    } else if oas30 {
                        self.error(doc, &kp, &v.origin, format!("{k} must be a boolean in OpenAPI 3.0"));
                    } else if min {
                        num.exclusive_minimum = self.number(doc, &kp, v);
                    } else {
                        num.exclusive_maximum = self.number(doc, &kp, v);
                    }
                }
                "multipleOf" => {
                    num.multiple_of = self.number(doc, &kp, v);
                    if num.multiple_of.as_ref().is_some_and(|m| m.f <= 0.0) {
                        self.error(doc, &kp, &v.origin, "multipleOf must be greater than 0");
                        num.multiple_of = None;
                    }
                }
                "minLength" => n.min_length = self.count(doc, &kp, v),
                "maxLength" => n.max_length = self.count(doc, &kp, v),
                "minItems" => n.min_items = self.count(doc, &kp, v),
                "maxItems" => n.max_items = self.count(doc, &kp, v),
                "minProperties" => n.rare_mut().min_props = self.count(doc, &kp, v),
                "maxProperties" => n.rare_mut().max_props = self.count(doc, &kp, v),
                "minContains" => n.rare_mut().min_contains = self.count(doc, &kp, v),
                "maxContains" => n.rare_mut().max_contains = self.count(doc, &kp, v),
                "uniqueItems" => n.unique_items = self.boolean(doc, &kp, v).unwrap_or(false),
                "pattern" => {
                    if let Some(p) = self.string(doc, &kp, v) {
                        n.pattern = self.regex(doc, &kp, &v.origin, &p);
                    }
                }
                "items" => match &v.value {
                    Value::Seq(list) => {
                        let syntax = if oas30 { "draft 4 tuple syntax, not OpenAPI 3.0" } else { "draft 2019 syntax" };
                        self.warn(doc, &kp, &v.origin, format!("items as a list is {syntax}; read as prefixItems (with additionalItems for the rest)"));
                        n.rare_mut().prefix_items = self.schema_list(doc, &kp, list, depth);
                        tuple_items = true;
                    }
                    _ => n.items = Some(self.subschema(doc, kp, v, depth + 1)),
                },
                "additionalItems" => additional_items = Some((kp, v)),
                "dependencies" => match &v.value {
                    Value::Map(m) => {
                        let name = if oas30 { "not an OpenAPI 3.0 keyword" } else { "draft 4 syntax (dependentRequired / dependentSchemas in 3.1)" };
                        self.warn(doc, &kp, origin, format!("dependencies is {name}; enforced as JSON Schema draft 4 defines it"));
                        for (dk, dv) in m {
                            match &dv.value {
                                Value::Seq(l) => {
                                    let names = l.iter().filter_map(|x| if let Value::Str(s) = &x.value { Some(s.as_bytes().into()) } else { None }).collect();
                                    n.rare_mut().dependent_required.push((dk.name.as_bytes().into(), names));
                                }
                                _ => {
                                    let id = self.subschema(doc, format!("{kp}/{}", escape_token(&dk.name)), dv, depth + 1);
                                    n.rare_mut().dependent_schemas.push((dk.name.as_bytes().into(), id));
                                }
                            }
                        }
                    }
                    _ => self.error(doc, &kp, &v.origin, "dependencies must be a mapping"),
                },
                "prefixItems" => match &v.value {
                    Value::Seq(list) => n.rare_mut().prefix_items = self.schema_list(doc, &kp, list, depth),
                    _ => self.error(doc, &kp, &v.origin, "prefixItems must be a list of schemas"),
                },
                "contains" => n.rare_mut().contains = Some(self.subschema(doc, kp, v, depth + 1)),
                "properties" => match &v.value {
                    Value::Map(props) => {
                        for (pk, pv) in props {
                            let id = self.subschema(doc, format!("{kp}/{}", escape_token(&pk.name)), pv, depth + 1);
                            n.props.push(pk.name.as_bytes(), id);
                        }
                    }
                    _ => self.error(doc, &kp, &v.origin, "properties must be a mapping"),
                },
                "patternProperties" => match &v.value {
                    Value::Map(props) => {
                        if oas30 {
                            self.warn(doc, &kp, origin, "patternProperties is not an OpenAPI 3.0 keyword; enforced as JSON Schema defines it");
                        }
                        for (pk, pv) in props {
                            let sp = format!("{kp}/{}", escape_token(&pk.name));
                            let id = self.subschema(doc, sp.clone(), pv, depth + 1);
                            if let Some(re) = self.regex(doc, &sp, &pk.origin, &pk.name) {
                                n.rare_mut().pattern_props.push((re, id));
                            }
                        }
                    }
                    _ => self.error(doc, &kp, &v.origin, "patternProperties must be a mapping"),
                },
                "additionalProperties" => n.additional = Some(self.subschema(doc, kp, v, depth + 1)),
                "unevaluatedProperties" => n.rare_mut().unevaluated_props = Some(self.subschema(doc, kp, v, depth + 1)),
                "unevaluatedItems" => n.rare_mut().unevaluated_items = Some(self.subschema(doc, kp, v, depth + 1)),
                "propertyNames" => n.rare_mut().property_names = Some(self.subschema(doc, kp, v, depth + 1)),
                "required" => match &v.value {
                    Value::Seq(list) => {
                        for r in list {
                            match &r.value {
                                Value::Str(s) => required_names.push(s.as_bytes().into()),
                                _ => self.error(doc, &kp, &r.origin, "required must be a list of strings"),
                            }
                        }
                    }
                    _ => self.error(doc, &kp, &v.origin, "required must be a list of strings"),
                },
                "dependentRequired" => match &v.value {
                    Value::Map(m) => {
                        for (dk, dv) in m {
                            let names = match &dv.value {
                                Value::Seq(l) => l.iter().filter_map(|x| if let Value::Str(s) = &x.value { Some(s.as_bytes().into()) } else { None }).collect(),
                                _ => {
                                    self.error(doc, &kp, &dv.origin, "dependentRequired values must be lists of strings");
                                    Vec::new()
                                }
                            };
                            n.rare_mut().dependent_required.push((dk.name.as_bytes().into(), names));
                        }
                    }
                    _ => self.error(doc, &kp, &v.origin, "dependentRequired must be a mapping"),
                },
                "dependentSchemas" => match &v.value {
                    Value::Map(m) => {
                        for (dk, dv) in m {
                            let id = self.subschema(doc, format!("{kp}/{}", escape_token(&dk.name)), dv, depth + 1);
                            n.rare_mut().dependent_schemas.push((dk.name.as_bytes().into(), id));
                        }
                    }
                    _ => self.error(doc, &kp, &v.origin, "dependentSchemas must be a mapping"),
                },
                "allOf" | "anyOf" | "oneOf" => {
                    let Value::Seq(list) = &v.value else {
                        self.error(doc, &kp, &v.origin, format!("{k} must be a list of schemas"));
                        continue;
                    };
                    if list.is_empty() {
                        self.error(doc, &kp, &v.origin, format!("{k} must not be empty"));
                    }
                    let ids = self.schema_list(doc, &kp, list, depth);
                    if k != "allOf" {
                        for (item, &sid) in list.iter().zip(&ids) {
                            if let Some(Value::Str(r)) = item.get("$ref").map(|r| &r.value) {
                                let name = r.rsplit('/').next().unwrap_or(r);
                                implicit.push((name.as_bytes().into(), sid));
                            }
                        }
                    }
                    match k {
                        "allOf" => n.all_of = ids,
                        "anyOf" => n.any_of = ids,
                        _ => n.one_of = ids,
                    }
                }
                "not" => n.rare_mut().not = Some(self.subschema(doc, kp, v, depth + 1)),
                "if" => n.rare_mut().if_ = Some(self.subschema(doc, kp, v, depth + 1)),
                "then" => n.rare_mut().then_ = Some(self.subschema(doc, kp, v, depth + 1)),
                "else" => n.rare_mut().else_ = Some(self.subschema(doc, kp, v, depth + 1)),
                "$defs" | "definitions" => {
                    // Compiled so that refs and anchors into them are ready.
                    if let Value::Map(defs) = &v.value {
                        for (dk, dv) in defs {
                            self.subschema(doc, format!("{kp}/{}", escape_token(&dk.name)), dv, depth + 1);
                        }
                    }
                }
                // found by the document index before compiling
                "$anchor" | "$dynamicAnchor" | "$id" => {}
                "$dynamicRef" => {
                    let Some(r) = self.string(doc, &kp, v) else { continue };
                    match self.locate(doc, &kp, &r) {
                        Ok(target) => {
                            // Dynamic only when the static target has the same `$dynamicAnchor`
                            // (2020-12 §8.2.3.2); otherwise a plain reference.
                            let name = r.split_once('#').map(|(_, f)| pct_decode(f)).filter(|f| !f.is_empty() && !f.starts_with('/'));
                            let dynamic = name.filter(|nm| target.node.get("$dynamicAnchor").is_some_and(|a| matches!(&a.value, Value::Str(s) if s == nm)));
                            let sid = self.id_of(target);
                            let name = dynamic.map(|nm| self.dyn_name(&nm));
                            n.rare_mut().dynamic_ref = Some((sid, name));
                        }
                        Err(e) => self.error(doc, &kp, origin, format!("cannot resolve $dynamicRef {r:?}: {e}")),
                    }
                }
                "discriminator" => disc_node = Some(v),
                "$recursiveRef" => {
                    self.warn(doc, &kp, origin, format!("{k} (draft 2019-09) is not supported; ignored"));
                }
                _ => {} // annotations, extensions and unknown keywords
            }
        }
        // `additionalItems` applies after a list of `items` only (draft 4 to 2019-09).
        if let (true, Some((kp, v))) = (tuple_items, additional_items) {
            n.items = Some(self.subschema(doc, kp, v, depth + 1));
        }
        if excl_min_bool {
            match num.minimum.take() {
                Some(m) => num.exclusive_minimum = Some(m),
                None => self.warn(doc, pointer, &node.origin, "exclusiveMinimum without minimum; ignored"),
            }
        }
        if excl_max_bool {
            match num.maximum.take() {
                Some(m) => num.exclusive_maximum = Some(m),
                None => self.warn(doc, pointer, &node.origin, "exclusiveMaximum without maximum; ignored"),
            }
        }
        if num.any() {
            n.num = Some(Box::new(num));
        }
        for name in required_names {
            let prop = n.props.find(&name);
            n.required.push(Required { name, prop, read_only: false, write_only: false });
        }
        if let Some(d) = disc_node {
            let dp = format!("{pointer}/discriminator");
            let Some(prop) = d.get("propertyName").and_then(|p| if let Value::Str(s) = &p.value { Some(s.clone()) } else { None }) else {
                self.error(doc, &dp, &d.origin, "discriminator needs a propertyName");
                return self.store(id, n);
            };
            let mut mapping = Vec::new();
            let mut broken_mapping = false;
            if let Some(Value::Map(m)) = d.get("mapping").map(|m| &m.value) {
                for (mk, mv) in m {
                    let Value::Str(target) = &mv.value else {
                        self.error(doc, &dp, &mv.origin, "discriminator mapping values must be strings");
                        continue;
                    };
                    // A schema name, or a reference (`#/components/schemas/Pet`,
                    // `pets.yaml#/Pet`, `Pet.yaml`); a name is tried first, dots and all.
                    let mut candidates = Vec::new();
                    if !target.contains(['/', '#']) {
                        candidates.push(format!("#/components/schemas/{}", escape_token(target)));
                    }
                    if target.contains(['/', '#', '.']) {
                        candidates.push(target.clone());
                    }
                    let mp = format!("{dp}/mapping/{}", escape_token(&mk.name));
                    match candidates.iter().find(|c| self.resolver.resolve(doc, c).is_ok()) {
                        Some(reference) => {
                            if let Some(sid) = self.reference(doc, &mp, &mv.origin, reference) {
                                mapping.push((mk.name.as_bytes().into(), sid));
                            }
                        }
                        None => {
                            broken_mapping = true;
                            let msg =
                                format!("discriminator mapping {target:?} names no schema: the discriminator is not used, oneOf/anyOf are evaluated in full");
                            self.warn(doc, &mp, &mv.origin, msg);
                        }
                    }
                }
            }
            if n.one_of.is_empty() && n.any_of.is_empty() {
                self.warn(doc, &dp, &d.origin, "discriminator without oneOf/anyOf does not select anything; ignored");
            } else if self.dialect == Dialect::Oas30 && !broken_mapping {
                mapping.extend(implicit);
                n.rare_mut().discriminator = Some(Discriminator { property: prop.as_bytes().into(), mapping });
            }
            // OpenAPI 3.1: "the discriminator MUST NOT change the validation outcome of the
            // schema" (3.1.1): `oneOf`/`anyOf` decide alone. The mapping was still checked above
            // so that a broken one is reported.
        }
        self.store(id, n);
    }

    fn store(&mut self, id: SchemaId, mut n: SNode) {
        if n.nullable && n.types != 0 {
            n.types |= TypeSet::NULL;
        }
        n.has_string = n.min_length.is_some() || n.max_length.is_some() || n.pattern.is_some() || n.format.is_some();
        n.has_number = n.num.is_some() || n.format.is_some();
        n.has_object = n.props.len() > 0
            || !n.rare().pattern_props.is_empty()
            || n.additional.is_some()
            || n.rare().property_names.is_some()
            || !n.required.is_empty()
            || n.rare().min_props.is_some()
            || n.rare().max_props.is_some()
            || !n.rare().dependent_required.is_empty()
            || !n.rare().dependent_schemas.is_empty();
        n.has_array = !n.rare().prefix_items.is_empty()
            || n.items.is_some()
            || n.rare().contains.is_some()
            || n.min_items.is_some()
            || n.max_items.is_some()
            || n.unique_items
            || n.rare().unevaluated_items.is_some();
        n.has_inplace = n.ref_.is_some()
            || n.rare().dynamic_ref.is_some()
            || n.dyn_table.is_some()
            || !n.all_of.is_empty()
            || !n.any_of.is_empty()
            || !n.one_of.is_empty()
            || n.rare().not.is_some()
            || n.rare().if_.is_some()
            || n.rare().discriminator.is_some();
        n.accept_all = !n.reject_all
            && n.types == 0
            && !n.read_only
            && !n.write_only
            && n.enum_.is_none()
            && n.rare().const_.is_none()
            && !n.has_string
            && !n.has_number
            && !n.has_object
            && !n.has_array
            && !n.has_inplace
            && n.rare().unevaluated_props.is_none();
        n.leaf = !n.reject_all
            && !n.accept_all
            && !n.read_only
            && !n.write_only
            && n.enum_.is_none()
            && n.rare().const_.is_none()
            && !n.has_object
            && !n.has_array
            && !n.has_inplace
            && n.rare().unevaluated_props.is_none();
        self.nodes[id.0 as usize] = n;
    }

    fn schema_list(&mut self, doc: DocId, kp: &str, list: &[Node], depth: usize) -> Vec<SchemaId> {
        list.iter().enumerate().map(|(i, s)| self.subschema(doc, format!("{kp}/{i}"), s, depth + 1)).collect()
    }

    fn regex(&mut self, doc: DocId, kp: &str, origin: &Origin, src: &str) -> Option<u32> {
        if let Some(&r) = self.patterns.get(src) {
            return r;
        }
        let r = match pattern::Pattern::new(src) {
            Ok(re) => {
                if re.backtracking() {
                    let msg = format!(
                        "pattern {:?} needs backtracking (lookaround or backreferences): enforced with a budget of {} steps per value; a value that exhausts it is rejected",
                        crate::truncate(src, 64),
                        pattern::BACKTRACK_LIMIT
                    );
                    self.warn(doc, kp, origin, msg);
                }
                self.regexes.push(re);
                Some(self.regexes.len() as u32 - 1)
            }
            Err(e) => {
                self.warn(doc, kp, origin, format!("pattern {:?} cannot be compiled ({e}); not enforced", crate::truncate(src, 64)));
                None
            }
        };
        self.patterns.insert(src.to_string(), r);
        r
    }

    fn string(&mut self, doc: DocId, kp: &str, v: &Node) -> Option<String> {
        match &v.value {
            Value::Str(s) => Some(s.clone()),
            _ => {
                self.error(doc, kp, &v.origin, format!("expected a string, found {}", v.kind()));
                None
            }
        }
    }

    fn boolean(&mut self, doc: DocId, kp: &str, v: &Node) -> Option<bool> {
        match v.value {
            Value::Bool(b) => Some(b),
            _ => {
                self.error(doc, kp, &v.origin, format!("expected a boolean, found {}", v.kind()));
                None
            }
        }
    }

    fn number(&mut self, doc: DocId, kp: &str, v: &Node) -> Option<Num> {
        let n = match &v.value {
            Value::Int(i) => Some(Num::from_i64(*i)),
            Value::Float(f) => Num::from_f64(*f),
            // Big integers that YAML could not hold come as strings of digits.
            Value::Str(s) => Num::from_text(s.trim()),
            _ => None,
        };
        if n.is_none() {
            self.error(doc, kp, &v.origin, format!("expected a number, found {}", v.kind()));
        }
        n
    }

    fn count(&mut self, doc: DocId, kp: &str, v: &Node) -> Option<u64> {
        match v.value {
            Value::Int(i) if i >= 0 => Some(i as u64),
            Value::Float(f) if f >= 0.0 && f.fract() == 0.0 => Some(f as u64),
            _ => {
                self.error(doc, kp, &v.origin, format!("expected a non-negative integer, found {}", v.kind()));
                None
            }
        }
    }

    fn types(&mut self, doc: DocId, kp: &str, v: &Node) -> u8 {
        let one = |s: &str| -> Option<u8> {
            Some(match s {
                "null" => TypeSet::NULL,
                "boolean" => TypeSet::BOOLEAN,
                "integer" => TypeSet::INTEGER,
                "number" => TypeSet::NUMBER | TypeSet::INTEGER,
                "string" => TypeSet::STRING,
                "array" => TypeSet::ARRAY,
                "object" => TypeSet::OBJECT,
                _ => return None,
            })
        };
        match &v.value {
            Value::Str(s) => match one(s) {
                Some(t) => t,
                None => {
                    self.error(doc, kp, &v.origin, format!("unknown type {:?}", crate::truncate(s, 32)));
                    0
                }
            },
            Value::Seq(list) => {
                if self.dialect == Dialect::Oas30 {
                    self.warn(doc, kp, &v.origin, "type must be a single string in OpenAPI 3.0; the list is read as a union");
                }
                let mut t = 0;
                for item in list {
                    match &item.value {
                        Value::Str(s) if one(s).is_some() => t |= one(s).unwrap(),
                        _ => self.error(doc, kp, &item.origin, "type must name JSON types"),
                    }
                }
                if t == 0 {
                    self.error(doc, kp, &v.origin, "type must not be empty");
                }
                t
            }
            _ => {
                self.error(doc, kp, &v.origin, format!("type must be a string, found {}", v.kind()));
                0
            }
        }
    }

    /// The arena, or every error found; warnings (unsupported keywords, patterns that cannot be
    /// compiled exactly) are in [`Schemas::warnings`].
    pub fn finish(mut self) -> Result<Schemas, Vec<SchemaError>> {
        self.drain();
        if let Some((count, doc, pointer, origin)) = self.nullable_31.take() {
            let what = match self.nullable {
                Nullable::Honour => "honoured as in 3.0 (null is accepted where it is true; openapi.nullable: ignore follows 3.1 to the letter)",
                Nullable::Ignore => "ignored, as 3.1 says (openapi.nullable: honour accepts null where it is true)",
            };
            let message =
                format!("nullable is an OpenAPI 3.0 keyword, not one of 3.1 (type: [..., \"null\"]); {count} schema(s) use it, this one first: {what}");
            self.warn(doc, &pointer, &origin, message);
        }
        self.check_cycles();
        if !self.errors.is_empty() {
            return Err(self.errors);
        }
        self.derive();
        let mut plans = crate::fused::plan(&self.nodes);
        crate::fused::link(&mut plans);
        Ok(Schemas { nodes: self.nodes, regexes: self.regexes, warnings: self.warnings, plans, dyn_tables: self.dyn_tables })
    }

    /// Where schema `id` is: its document and JSON pointer, found by walking the document
    /// (for error messages only).
    fn pointer_of(&self, id: SchemaId) -> Option<(DocId, String)> {
        let &(doc, addr) = self.by_node.iter().find(|(_, &v)| v == id)?.0;
        fn walk(n: &Node, addr: usize, at: &mut String) -> bool {
            if node_key(n) == addr {
                return true;
            }
            let len = at.len();
            match &n.value {
                Value::Map(entries) => {
                    for (k, v) in entries {
                        at.push('/');
                        at.push_str(&k.name.replace('~', "~0").replace('/', "~1"));
                        if walk(v, addr, at) {
                            return true;
                        }
                        at.truncate(len);
                    }
                }
                Value::Seq(items) => {
                    for (i, v) in items.iter().enumerate() {
                        at.push_str(&format!("/{i}"));
                        if walk(v, addr, at) {
                            return true;
                        }
                        at.truncate(len);
                    }
                }
                _ => {}
            }
            false
        }
        let root = self.resolver.resolve(doc, "#").ok()?;
        let mut at = String::new();
        walk(root.node, addr, &mut at).then_some((doc, at))
    }

    /// In-place cycles (no part of the instance consumed) would loop forever: reject them.
    fn check_cycles(&mut self) {
        let n = self.nodes.len();
        // 0 = unvisited, 1 = on the stack, 2 = done.
        let mut state = vec![0u8; n];
        let mut reported = false;
        for start in 0..n {
            if state[start] != 0 {
                continue;
            }
            let mut stack: Vec<(usize, Vec<SchemaId>, usize)> = vec![(start, self.nodes[start].in_place().collect(), 0)];
            state[start] = 1;
            while let Some(top) = stack.last_mut() {
                if top.2 < top.1.len() {
                    let next = top.1[top.2].0 as usize;
                    top.2 += 1;
                    match state[next] {
                        0 => {
                            state[next] = 1;
                            let edges = self.nodes[next].in_place().collect();
                            stack.push((next, edges, 0));
                        }
                        1 if !reported => {
                            reported = true;
                            let (doc, ptr) = self.pointer_of(SchemaId(next as u32)).unwrap_or((0, String::new()));
                            self.errors.push(SchemaError {
                                doc,
                                pointer: ptr.clone(),
                                origin: Origin::File { line: 0, col: 0 },
                                message: format!("schema {ptr:?} refers to itself without consuming any part of the instance ($ref cycle)"),
                            });
                        }
                        _ => {}
                    }
                } else {
                    state[top.0] = 2;
                    stack.pop();
                }
            }
        }
    }

    /// Facts that need the whole arena: readOnly/writeOnly of required properties, and the
    /// known-property sets for shadow-field reporting.
    fn derive(&mut self) {
        let flags = |nodes: &[SNode], mut id: SchemaId| -> (bool, bool) {
            let (mut ro, mut wo) = (false, false);
            for _ in 0..32 {
                let n = &nodes[id.0 as usize];
                ro |= n.read_only;
                wo |= n.write_only;
                for a in &n.all_of {
                    ro |= nodes[a.0 as usize].read_only;
                    wo |= nodes[a.0 as usize].write_only;
                }
                match n.ref_ {
                    Some(r) => id = r,
                    None => break,
                }
            }
            (ro, wo)
        };
        for i in 0..self.nodes.len() {
            let mut req = std::mem::take(&mut self.nodes[i].required);
            for r in &mut req {
                if let Some(p) = r.prop {
                    (r.read_only, r.write_only) = flags(&self.nodes, self.nodes[i].props.ids[p]);
                }
            }
            self.nodes[i].required = req;
        }
        for i in 0..self.nodes.len() {
            let mut known = Known::default();
            let mut any = false;
            let mut seen = vec![SchemaId(i as u32)];
            let mut todo = vec![SchemaId(i as u32)];
            while let Some(id) = todo.pop() {
                let n = &self.nodes[id.0 as usize];
                for (name, _) in n.props.names.iter().zip(&n.props.ids) {
                    if known.names.find(name).is_none() {
                        known.names.push(name, SchemaId(0));
                    }
                    any = true;
                }
                for (re, _) in &n.rare().pattern_props {
                    known.patterns.push(*re);
                    any = true;
                }
                for extra in [n.additional, n.rare().unevaluated_props].into_iter().flatten() {
                    if !self.nodes[extra.0 as usize].accept_all {
                        known.all = true;
                    }
                }
                for next in n.in_place() {
                    if !seen.contains(&next) && seen.len() < 256 {
                        seen.push(next);
                        todo.push(next);
                    }
                }
            }
            if any {
                let n = &self.nodes[i];
                let own = !known.all && known.patterns.is_empty() && n.rare().pattern_props.is_empty() && known.names.len() == n.props.len();
                if own || known.all {
                    // The names are the node's own `properties` (or every name is described):
                    // no copy of them.
                    known.names = PropTable::default();
                }
                self.nodes[i].known_own = own;
                self.nodes[i].known = Some(Box::new(known));
            }
        }
        for i in 0..self.nodes.len() {
            let quick: Vec<u8> = self.nodes[i].props.ids.iter().map(|id| quick_kinds(&self.nodes[id.0 as usize])).collect();
            self.nodes[i].props.quick = quick;
        }
    }
}

pub(crate) fn to_const(v: &Node) -> Const {
    match &v.value {
        Value::Null => Const::Null,
        Value::Bool(b) => Const::Bool(*b),
        Value::Int(i) => Const::Num(Num::from_i64(*i)),
        Value::Float(f) => Num::from_f64(*f).map(Const::Num).unwrap_or(Const::Null),
        Value::Str(s) => Const::Str(s.as_bytes().into()),
        Value::Seq(items) => Const::Arr(items.iter().map(to_const).collect()),
        Value::Map(entries) => Const::Obj(entries.iter().map(|(k, v)| (k.name.as_bytes().into(), to_const(v))).collect()),
    }
}
