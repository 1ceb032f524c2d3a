//! From located YAML schemas to the arena of compiled nodes.
//!
//! Subschemas are compiled recursively (the YAML tree is bounded in depth); `$ref` targets are
//! given an id at once and queued, so reference chains and cycles never recurse. A cycle that
//! does not consume any part of the instance (`A: {$ref: A}`, `A: {allOf: [{$ref: B}]}, B:
//! {anyOf: [{$ref: A}]}`) is a compile error, found after everything is compiled.
//! A schema compiled in place that checks exactly what an earlier one checks (same keywords,
//! same subschemas) is that earlier node: the arena grows with the distinct schemas of a spec,
//! not with its text (see `Compiler::share`).
//!
//! The compiler is in four parts: this file (the arena, `$ref` resolution, sharing identical
//! nodes), [`node`] (what a compiled schema holds), `keywords` (one schema's keywords read into
//! a node) and `finish` (cycle check and the facts that need the whole arena).

mod finish;
mod keywords;
mod node;

use std::collections::HashMap;

use palisade_config::yaml::{Node, Origin, Value};

use crate::pattern;
use crate::{ids, Dialect, DocId, Formats, Nullable, Resolved, Resolver, SchemaError, SchemaId};

pub(crate) use node::{bytes_eq, quick, quick_kinds, Const, Discriminator, NumChecks, SNode};

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
}
