//! Judging GraphQL requests: limits on the selected operation, with fragments expanded, and,
//! with a schema, validation of what the operation asks for.
//!
//! The walk expands fragment spreads in place (a fragment spread twice is counted twice, as a
//! server executes it twice). It is cycle-safe (a spread of a fragment already being expanded
//! is a `graphql.fragment_cycle`) and bounded: by the depth limit, by a nesting bound on
//! fragments within fragments ([`MAX_FRAGMENT_NESTING`]), and by a budget of visited
//! selections (a few times `max_fields`), so that a "fragment bomb" (fragments spreading each
//! other twice over, doubling at each level) costs no more than that budget to refuse.
//!
//! Findings are [`Reason`]s with codes `graphql.*` and locations like OpenAPI's: the batch
//! entry (`graphql`, `graphql[2]`), the operation type, the path of field names, then the
//! argument and input field (`graphql.query.repository.issues.first`); variables are located
//! as `graphql.variables.input.body`.

use std::borrow::Cow;
use std::sync::{Arc, Mutex};

use foldhash::HashMap;

use palisade_core::{ProtocolValue, Reason};
use serde_json::{Map, Value as Json};

use crate::doc::{self, Definition, Document, OpKind, Selection, TypeRef, Value, VarDef};
use crate::request::{Envelope, GraphqlRequest};
use crate::schema::{Kind, SType, Schema, TypeId};

/// How deep fragments may be spread within fragments.
pub const MAX_FRAGMENT_NESTING: usize = 32;
/// Depth bound when `max_depth` is off: the walk never recurses deeper.
pub const HARD_MAX_DEPTH: usize = 256;
/// How many findings one request collects at most.
const MAX_FINDINGS: usize = 32;

/// The limits of one GraphQL endpoint. `0` turns a limit off (except the hard bounds above).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Nesting of fields (a root field is at depth 1).
    pub max_depth: usize,
    /// Aliased fields in the operation.
    pub max_aliases: usize,
    /// Fields at the operation's top level (each is a resolver call at the root).
    pub max_root_fields: usize,
    /// Fields in the operation with fragments expanded (its complexity).
    pub max_fields: usize,
    /// Directives in the operation.
    pub max_directives: usize,
    /// Times one field (by name, aliased or not) appears in one selection set.
    pub max_field_repeat: usize,
    /// Operations in one batched request.
    pub max_batch: usize,
    /// Bytes of one document.
    pub max_query_bytes: usize,
    /// `__schema` and `__type` may be queried.
    pub introspection: bool,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_depth: 15,
            max_aliases: 30,
            max_root_fields: 20,
            max_fields: 1000,
            max_directives: 50,
            max_field_repeat: 20,
            max_batch: 10,
            max_query_bytes: 64 * 1024,
            introspection: false,
        }
    }
}

/// What the judged request was.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Entries with a persisted query hash and no document (passed through unjudged).
    pub persisted: usize,
    /// The operation types judged, one per entry with a document that parsed.
    pub operations: Vec<OpKind>,
}

fn over(n: usize, limit: usize) -> bool {
    limit != 0 && n > limit
}

/// Judge every entry of an envelope; findings go to `out`.
/// With `values`, the request's values for attack detection are collected there
/// ([`crate::values`]).
pub fn check_envelope(
    env: &Envelope,
    limits: &Limits,
    schema: Option<&Schema>,
    out: &mut Vec<Reason>,
    mut values: Option<&mut Vec<ProtocolValue>>,
    cache: Option<&DocCache>,
) -> Summary {
    let mut summary = Summary::default();
    if over(env.requests.len(), limits.max_batch) {
        out.push(Reason::new("graphql.batch").at("graphql").detail(format!(
            "a batch of {} operations; at most {} allowed",
            env.requests.len(),
            limits.max_batch
        )));
        return summary;
    }
    for (i, r) in env.requests.iter().enumerate() {
        let prefix = if env.batched { format!("graphql[{i}]") } else { "graphql".to_string() };
        check_request(r, env.get, limits, schema, &prefix, out, &mut summary, values.as_deref_mut(), cache);
        if out.len() >= MAX_FINDINGS {
            break;
        }
    }
    summary
}

/// Judge one request (one batch entry) located at `prefix`. With a `cache`, the analysis of a
/// document seen before is reused.
#[allow(clippy::too_many_arguments)]
pub fn check_request(
    r: &GraphqlRequest,
    get: bool,
    limits: &Limits,
    schema: Option<&Schema>,
    prefix: &str,
    out: &mut Vec<Reason>,
    summary: &mut Summary,
    values: Option<&mut Vec<ProtocolValue>>,
    cache: Option<&DocCache>,
) {
    let Some(query) = r.query.as_deref().filter(|q| !q.trim().is_empty()) else {
        // A persisted query: the hash names a document in the server's store.
        summary.persisted += 1;
        if let Some(values) = values {
            crate::values::collect_json(r, prefix, values);
        }
        return;
    };
    let analysis = match cache {
        Some(c) => c.get_or_analyze(query, r.operation_name.as_deref(), get, || analyze(query, r.operation_name.as_deref(), get, limits, schema)),
        None => Arc::new(analyze(query, r.operation_name.as_deref(), get, limits, schema)),
    };
    for f in &analysis.findings {
        if out.len() >= MAX_FINDINGS {
            break;
        }
        let mut f = f.clone();
        f.location = Some(format!("{prefix}{}", f.location.as_deref().unwrap_or("")));
        out.push(f);
    }
    if let Some(kind) = analysis.kind {
        summary.operations.push(kind);
        check_variables(&analysis.variables, r.variables.as_ref(), schema, prefix, out);
    }
    if let Some(values) = values {
        match &analysis.values {
            Some(literals) => values.extend(literals.iter().map(|(at, v)| ProtocolValue { location: format!("{prefix}{at}"), value: v.clone(), key: false })),
            // A document that does not parse is handed over whole.
            None => values.push(ProtocolValue { location: format!("{prefix}.query"), value: query.to_string(), key: false }),
        }
        crate::values::collect_json(r, prefix, values);
    }
}

/// What a document gives for one operation name, whatever the values of its variables: the
/// findings (located relative to the request's place: `.query.user.name`), the selected
/// operation's variable definitions, and its string literals for detection. Owned, so that it
/// can be kept in a [`DocCache`].
#[derive(Debug)]
pub struct Analysis {
    /// The request it is the analysis of, set when a [`DocCache`] keeps it.
    query: Box<str>,
    operation_name: Option<Box<str>>,
    get: bool,
    /// The selected operation's type; `None` when the document does not parse or no operation
    /// could be selected.
    pub kind: Option<OpKind>,
    pub findings: Vec<Reason>,
    pub variables: Vec<VarSpec>,
    /// `None` when the document does not parse.
    pub values: Option<Vec<(String, String)>>,
}

/// A variable definition, owned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VarSpec {
    pub name: Box<str>,
    pub ty: OwnedType,
    pub has_default: bool,
}

/// A type as written in a request, owned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OwnedType {
    Named(Box<str>),
    List(Box<OwnedType>),
    NonNull(Box<OwnedType>),
}

impl OwnedType {
    fn of(t: &TypeRef<'_>) -> OwnedType {
        match t {
            TypeRef::Named(n) => OwnedType::Named((*n).into()),
            TypeRef::List(t) => OwnedType::List(Box::new(OwnedType::of(t))),
            TypeRef::NonNull(t) => OwnedType::NonNull(Box::new(OwnedType::of(t))),
        }
    }

    fn of_schema(s: &Schema, t: &SType) -> OwnedType {
        match t {
            SType::Named(i) => OwnedType::Named(s.ty(*i).name.clone()),
            SType::List(t) => OwnedType::List(Box::new(OwnedType::of_schema(s, t))),
            SType::NonNull(t) => OwnedType::NonNull(Box::new(OwnedType::of_schema(s, t))),
        }
    }
}

impl std::fmt::Display for OwnedType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OwnedType::Named(n) => f.write_str(n),
            OwnedType::List(t) => write!(f, "[{t}]"),
            OwnedType::NonNull(t) => write!(f, "{t}!"),
        }
    }
}

/// Parse and judge a document for one operation name (everything but the variables' values).
pub fn analyze(query: &str, operation_name: Option<&str>, get: bool, limits: &Limits, schema: Option<&Schema>) -> Analysis {
    let mut a = Analysis { query: Box::default(), operation_name: None, get, kind: None, findings: Vec::new(), variables: Vec::new(), values: None };
    if over(query.len(), limits.max_query_bytes) {
        a.findings.push(Reason::new("graphql.query_size").at("").detail(format!(
            "a document of {} bytes; at most {} allowed",
            query.len(),
            limits.max_query_bytes
        )));
        return a;
    }
    let token_limit = if limits.max_query_bytes == 0 { usize::MAX } else { limits.max_query_bytes };
    let doc = match doc::parse(query, token_limit) {
        Ok(d) => d,
        Err(e) => {
            a.findings.push(Reason::new(e.code()).at("").detail(e.message));
            return a;
        }
    };
    if let Some(op) = check(&doc, operation_name, get, limits, schema, "", &mut a.findings) {
        a.kind = Some(op.kind);
        a.variables = op.variables.iter().map(|v| VarSpec { name: v.name.into(), ty: OwnedType::of(&v.ty), has_default: v.default.is_some() }).collect();
    }
    let mut literals = Vec::new();
    crate::values::collect_document(&doc, "", &mut literals);
    a.values = Some(literals);
    a
}

/// Judge the JSON `variables` of a request against the selected operation's definitions: a
/// required variable missing, or a value that does not fit its type (with a schema, enums and
/// input objects too; without, the built-in scalars). Located `PREFIX.variables.NAME...`.
pub fn check_variables(defs: &[VarSpec], given: Option<&Map<String, Json>>, schema: Option<&Schema>, prefix: &str, out: &mut Vec<Reason>) {
    for v in defs {
        if out.len() >= MAX_FINDINGS {
            return;
        }
        let at = || format!("{prefix}.variables.{}", v.name);
        match given.and_then(|g| g.get(&*v.name)) {
            None if matches!(v.ty, OwnedType::NonNull(_)) && !v.has_default => {
                out.push(Reason::new("graphql.variable_missing").at(at()).detail(format!("variable `${}` of type `{}` is required", v.name, v.ty)));
            }
            None => {}
            Some(value) => {
                if let Some((tail, detail)) = json_problem(value, &v.ty, schema, &mut Vec::new()) {
                    let at = tail.iter().fold(at(), |mut s, t| {
                        s.push('.');
                        s.push_str(t);
                        s
                    });
                    out.push(Reason::new("graphql.variable_invalid").at(at).detail(detail));
                }
            }
        }
    }
}

/// Analyses of the documents an endpoint has seen, by document, operation name and method:
/// real clients send a fixed set of documents with varying variables, so the parse and the
/// validation are done once per document. Bounded by entries and by bytes of documents; when
/// full, an arbitrary entry makes room (a client sending endless new documents gets the cost
/// of the uncached path, never unbounded memory).
#[derive(Debug)]
pub struct DocCache {
    map: Mutex<HashMap<u64, Arc<Analysis>>>,
    state: foldhash::fast::RandomState,
    bytes: std::sync::atomic::AtomicUsize,
    max_entries: usize,
    max_bytes: usize,
}

impl DocCache {
    pub fn new(max_entries: usize, max_bytes: usize) -> Self {
        DocCache { map: Mutex::new(HashMap::default()), state: Default::default(), bytes: Default::default(), max_entries, max_bytes }
    }

    pub fn len(&self) -> usize {
        self.map.lock().map_or(0, |m| m.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The analysis of `query` for `operation_name`, computed by `analyze` when not known.
    pub fn get_or_analyze(&self, query: &str, operation_name: Option<&str>, get: bool, analyze: impl FnOnce() -> Analysis) -> Arc<Analysis> {
        use std::hash::BuildHasher;
        use std::sync::atomic::Ordering;
        let key = self.state.hash_one((query, operation_name, get));
        if let Ok(m) = self.map.lock() {
            if let Some(a) = m.get(&key) {
                // The key is a hash: the entry is used only for the very same request.
                if &*a.query == query && a.operation_name.as_deref() == operation_name && a.get == get {
                    return a.clone();
                }
            }
        }
        let mut a = analyze();
        if self.max_entries == 0 || query.len() > self.max_bytes {
            return Arc::new(a);
        }
        (a.query, a.operation_name) = (query.into(), operation_name.map(Into::into));
        let a = Arc::new(a);
        if let Ok(mut m) = self.map.lock() {
            while m.len() >= self.max_entries || (self.bytes.load(Ordering::Relaxed) + query.len() > self.max_bytes && !m.is_empty()) {
                let Some(k) = m.keys().next().copied() else { break };
                if let Some(old) = m.remove(&k) {
                    self.bytes.fetch_sub(old.query.len(), Ordering::Relaxed);
                }
            }
            if let Some(old) = m.insert(key, a.clone()) {
                self.bytes.fetch_sub(old.query.len(), Ordering::Relaxed);
            }
            self.bytes.fetch_add(query.len(), Ordering::Relaxed);
        }
        a
    }
}

/// Judge a parsed document: select the operation (`operation_name`, or the only one), then
/// apply the limits and, with a schema, validate it. The JSON `variables` are judged apart
/// ([`check_variables`]). Returns the selected operation.
#[allow(clippy::too_many_arguments)]
pub fn check<'d, 's>(
    doc: &'d Document<'s>,
    operation_name: Option<&str>,
    get: bool,
    limits: &Limits,
    schema: Option<&Schema>,
    prefix: &str,
    out: &mut Vec<Reason>,
) -> Option<&'d doc::Operation<'s>> {
    if !unambiguous(doc, prefix, out) {
        return None;
    }
    let op = match operation_name {
        Some(name) => match doc.operations.iter().find(|o| o.name == Some(name)) {
            Some(op) => op,
            None => {
                out.push(Reason::new("graphql.operation_unknown").at(prefix).detail(format!("no operation named `{name}` in the document")));
                return None;
            }
        },
        None if doc.operations.len() == 1 => &doc.operations[0],
        None => {
            out.push(
                Reason::new("graphql.operation_unknown")
                    .at(prefix)
                    .detail("the document holds several operations and the request names none (`operationName`)"),
            );
            return None;
        }
    };
    let at_op = || format!("{prefix}.{}", op.kind.as_str());
    if get && op.kind == OpKind::Mutation {
        out.push(Reason::new("graphql.method").at(at_op()).detail("a mutation sent with GET (GraphQL over HTTP allows mutations over POST only)"));
    }
    let root = match (schema, op.kind) {
        (None, _) => None,
        (Some(s), kind) => {
            let root = match kind {
                OpKind::Query => s.query,
                OpKind::Mutation => s.mutation,
                OpKind::Subscription => s.subscription,
            };
            if root.is_none() {
                out.push(Reason::new("graphql.operation_unsupported").at(at_op()).detail(format!("the schema defines no {} type", kind.as_str())));
                return Some(op);
            }
            root
        }
    };
    let mut w = Walk {
        doc,
        schema,
        limits,
        prefix,
        op_kind: op.kind.as_str(),
        path: Vec::new(),
        frags: Vec::new(),
        counts: Vec::with_capacity(64),
        vars: &op.variables,
        var_types: Vec::new(),
        fields: 0,
        aliases: 0,
        root_fields: 0,
        directives: 0,
        visits: 0,
        budget: if limits.max_fields == 0 { 1_000_000 } else { limits.max_fields.saturating_mul(4).max(10_000) },
        depth_reported: false,
        nesting: 0,
        tail: Vec::with_capacity(8),
        out,
    };
    w.variable_definitions();
    w.directives(&op.directives);
    w.walk_set(doc.set(op.selections), root, 1, 0);
    let totals = [
        (w.fields, limits.max_fields, "graphql.fields", "fields (with fragments expanded)"),
        (w.aliases, limits.max_aliases, "graphql.aliases", "aliases"),
        (w.root_fields, limits.max_root_fields, "graphql.root_fields", "root fields"),
        (w.directives, limits.max_directives, "graphql.directives", "directives"),
    ];
    for (n, limit, code, what) in totals {
        if over(n, limit) && !w.out.iter().any(|r| r.code == code) {
            w.out.push(Reason::new(code).at(at_op()).detail(format!("{n} {what}; at most {limit} allowed")));
        }
    }
    Some(op)
}

/// The document-wide rules that make what a server executes unambiguous (the specification's
/// "Operation Name Uniqueness", "Lone Anonymous Operation", "Fragment Name Uniqueness") and
/// "Fragments Must Be Used": a server refuses such a document, and a lenient one could pick
/// another definition than the one judged here. Reported as `graphql.document_invalid`.
fn unambiguous(doc: &Document<'_>, prefix: &str, out: &mut Vec<Reason>) -> bool {
    let before = out.len();
    let mut bad = |detail: String| out.push(Reason::new("graphql.document_invalid").at(prefix).detail(detail));
    for (i, op) in doc.operations.iter().enumerate() {
        if let Some(name) = op.name {
            if doc.operations[..i].iter().any(|o| o.name == Some(name)) {
                bad(format!("two operations are named `{name}`"));
            }
        }
    }
    if doc.operations.len() > 1 && doc.operations.iter().any(|o| o.name.is_none()) {
        bad("an anonymous operation must be the only operation of its document".to_string());
    }
    for (i, f) in doc.fragments.iter().enumerate() {
        if doc.fragments[..i].iter().any(|o| o.name == f.name) {
            bad(format!("two fragments are named `{}`", f.name));
        }
    }
    // Fragments reachable from the operations, by the spreads each definition holds.
    let mut used: Vec<&str> = Vec::new();
    if !doc.fragments.is_empty() {
        let mut todo: Vec<Definition> = (0..doc.operations.len() as u32).map(Definition::Operation).collect();
        while let Some(def) = todo.pop() {
            for (_, name) in doc.spreads.iter().filter(|(d, _)| *d == def) {
                if !used.contains(name) {
                    used.push(name);
                    if let Some(i) = doc.fragments.iter().position(|f| f.name == *name) {
                        todo.push(Definition::Fragment(i as u32));
                    }
                }
            }
        }
    }
    if let Some(f) = doc.fragments.iter().find(|f| !used.contains(&f.name)) {
        bad(format!("fragment `{}` is never used", f.name));
    }
    out.len() == before
}

struct Walk<'a, 's> {
    doc: &'a Document<'s>,
    schema: Option<&'a Schema>,
    limits: &'a Limits,
    prefix: &'a str,
    op_kind: &'static str,
    /// Field names from the root to the current field.
    path: Vec<&'s str>,
    /// Fragments being expanded.
    frags: Vec<&'s str>,
    /// Field names and how often each appears, of the selection sets being walked (each set's
    /// entries above its parent's).
    counts: Vec<(&'s str, usize)>,
    vars: &'a [VarDef<'s>],
    /// The schema's type of each variable (`None`: no schema, or an unknown type).
    var_types: Vec<Option<SType>>,
    fields: usize,
    aliases: usize,
    root_fields: usize,
    directives: usize,
    visits: usize,
    budget: usize,
    depth_reported: bool,
    nesting: usize,
    /// The location below the current field (arguments, input fields), reused.
    tail: Vec<Cow<'s, str>>,
    out: &'a mut Vec<Reason>,
}

impl<'s> Walk<'_, 's> {
    /// The location of the current field, with `tail` appended.
    fn location(&self, tail: &[Cow<'_, str>]) -> String {
        let mut s = format!("{}.{}", self.prefix, self.op_kind);
        for p in &self.path {
            s.push('.');
            s.push_str(p);
        }
        for t in tail {
            s.push('.');
            s.push_str(t);
        }
        s
    }

    fn report_at(&mut self, code: &'static str, location: String, detail: String) {
        if self.out.len() >= MAX_FINDINGS || self.out.iter().any(|r| r.code == code && r.location.as_deref() == Some(&location)) {
            return;
        }
        self.out.push(Reason::new(code).at(location).detail(detail));
    }

    fn report(&mut self, code: &'static str, tail: &[Cow<'_, str>], detail: String) {
        let at = self.location(tail);
        self.report_at(code, at, detail);
    }

    fn variable_definitions(&mut self) {
        for (i, v) in self.vars.iter().enumerate() {
            if self.vars[..i].iter().any(|o| o.name == v.name) {
                self.report_at("graphql.variable_invalid", format!("{}.variables.{}", self.prefix, v.name), format!("variable `${}` is defined twice", v.name));
            }
            let st = match self.schema {
                Some(s) => match s.resolve(&v.ty) {
                    Some(st) if s.ty(st.base()).is_input() => Some(st),
                    Some(_) => {
                        self.report_at(
                            "graphql.variable_type_invalid",
                            format!("{}.variables.{}", self.prefix, v.name),
                            format!("variable `${}` has the output type `{}`", v.name, v.ty),
                        );
                        None
                    }
                    None => {
                        self.report_at("graphql.type_unknown", format!("{}.variables.{}", self.prefix, v.name), format!("unknown type `{}`", v.ty.base()));
                        None
                    }
                },
                None => None,
            };
            self.var_types.push(st);
        }
        for (i, v) in self.vars.iter().enumerate() {
            self.directives(&v.directives);
            if let (Some(d), Some(st)) = (&v.default, self.var_types[i].clone()) {
                let mut tail = vec![Cow::Borrowed("$default")];
                self.literal(d, &st, &mut tail, true, Some(&format!("{}.variables.{}", self.prefix, v.name)));
            }
        }
    }

    fn directives(&mut self, ds: &[doc::Directive<'s>]) {
        for d in ds {
            self.directives += 1;
            let Some(s) = self.schema else {
                for (_, v) in self.doc.args(d.arguments) {
                    self.variables_in(v);
                }
                continue;
            };
            let Some(defs) = s.directive(d.name) else {
                let tail = [Cow::Owned(format!("@{}", d.name))];
                self.report("graphql.directive_unknown", &tail, format!("the schema defines no directive `@{}`", d.name));
                continue;
            };
            let mut tail = vec![Cow::Owned(format!("@{}", d.name))];
            self.arguments(self.doc.args(d.arguments), defs, &mut tail);
        }
    }

    /// Variables referenced in a value, when there is no schema to type them.
    fn variables_in(&mut self, v: &Value<'s>) {
        match v {
            Value::Variable(n) if !self.vars.iter().any(|d| d.name == *n) => {
                self.report("graphql.variable_undefined", &[], format!("variable `${n}` is not defined by the operation"));
            }
            Value::List(items) => items.iter().for_each(|i| self.variables_in(i)),
            Value::Object(fields) => fields.iter().for_each(|(_, v)| self.variables_in(v)),
            _ => {}
        }
    }

    fn arguments(&mut self, given: &[(&'s str, Value<'s>)], defs: &[crate::schema::InputValue], tail: &mut Vec<Cow<'s, str>>) {
        for (i, (name, value)) in given.iter().enumerate() {
            tail.push(Cow::Borrowed(name));
            if given[..i].iter().any(|(n, _)| n == name) {
                self.report("graphql.argument_invalid", tail, format!("argument `{name}` is given twice"));
            }
            match defs.iter().find(|d| &*d.name == *name) {
                None => self.report("graphql.argument_unknown", tail, format!("no argument `{name}` here")),
                Some(def) => self.literal(value, &def.ty, tail, def.has_default, None),
            }
            tail.pop();
        }
        for d in defs.iter().filter(|d| d.required()) {
            if !given.iter().any(|(n, _)| *n == &*d.name) {
                tail.push(Cow::Owned(d.name.to_string()));
                let ty = self.schema.map(|s| s.display(&d.ty)).unwrap_or_default();
                self.report("graphql.argument_missing", tail, format!("required argument `{}` of type `{ty}` is missing", d.name));
                tail.pop();
            }
        }
    }

    /// Check a literal against an input type; problems go to `base` (the current field's
    /// location when `None`, built only for a problem found) + `tail`.
    fn literal(&mut self, v: &Value<'s>, ty: &SType, tail: &mut Vec<Cow<'s, str>>, location_default: bool, base: Option<&str>) {
        let Some(s) = self.schema else { return };
        let at = |w: &Self, tail: &[Cow<'_, str>]| {
            let start = match base {
                Some(b) => b.to_string(),
                None => w.location(&[]),
            };
            tail.iter().fold(start, |mut a, t| {
                a.push('.');
                a.push_str(t);
                a
            })
        };
        if let Value::Variable(n) = v {
            match self.vars.iter().position(|d| d.name == *n) {
                None => self.report_at("graphql.variable_undefined", at(self, tail), format!("variable `${n}` is not defined by the operation")),
                Some(i) => {
                    let has_default = self.vars[i].default.as_ref().is_some_and(|d| *d != Value::Null);
                    if let Some(vt) = &self.var_types[i] {
                        if !usage_allowed(vt, ty, has_default || location_default) {
                            let loc = at(self, tail);
                            self.report_at(
                                "graphql.variable_type_mismatch",
                                loc,
                                format!("variable `${n}` of type `{}` is used where `{}` is expected", s.display(vt), s.display(ty)),
                            );
                        }
                    }
                }
            }
            return;
        }
        let bad = |w: &mut Self, tail: &[Cow<'_, str>], why: String| {
            let loc = at(w, tail);
            w.report_at("graphql.argument_invalid", loc, why)
        };
        match ty {
            SType::NonNull(inner) => {
                if *v == Value::Null {
                    bad(self, tail, format!("null where `{}` is expected", s.display(ty)));
                } else {
                    self.literal(v, inner, tail, false, base);
                }
            }
            _ if *v == Value::Null => {}
            SType::List(inner) => match v {
                Value::List(items) => {
                    for (i, item) in items.iter().enumerate() {
                        tail.push(index(i));
                        self.literal(item, inner, tail, false, base);
                        tail.pop();
                    }
                }
                other => self.literal(other, inner, tail, false, base),
            },
            SType::Named(id) => {
                let t = s.ty(*id);
                match t.kind {
                    Kind::Scalar => {
                        if !scalar_literal_ok(&t.name, v) {
                            bad(self, tail, format!("{} where `{}` is expected", v.kind(), t.name));
                        }
                    }
                    Kind::Enum => match v {
                        Value::Enum(e) if t.enum_values.contains(*e) => {}
                        Value::Enum(e) => bad(self, tail, format!("`{e}` is not a value of enum `{}`", t.name)),
                        other => bad(self, tail, format!("{} where enum `{}` is expected", other.kind(), t.name)),
                    },
                    Kind::InputObject => match v {
                        Value::Object(fields) => {
                            for (name, fv) in fields {
                                tail.push(Cow::Borrowed(name));
                                match t.inputs.iter().find(|f| &*f.name == *name) {
                                    None => bad(self, tail, format!("input type `{}` has no field `{name}`", t.name)),
                                    Some(f) => self.literal(fv, &f.ty, tail, f.has_default, base),
                                }
                                tail.pop();
                            }
                            for f in t.inputs.iter().filter(|f| f.required()) {
                                if !fields.iter().any(|(n, _)| *n == &*f.name) {
                                    tail.push(Cow::Owned(f.name.to_string()));
                                    bad(self, tail, format!("required field `{}` of `{}` is missing", f.name, t.name));
                                    tail.pop();
                                }
                            }
                        }
                        other => bad(self, tail, format!("{} where input type `{}` is expected", other.kind(), t.name)),
                    },
                    Kind::Object | Kind::Interface | Kind::Union => {}
                }
            }
        }
    }

    /// Walk one selection set at field depth `depth`; `self.counts[from..]` tallies field
    /// names in it (fragments spread into it add to the same tally).
    /// (fragments spread into it add to the same tally).
    fn walk_set(&mut self, sels: &[Selection<'s>], parent: Option<TypeId>, depth: usize, from: usize) {
        self.nesting += 1;
        if self.nesting > HARD_MAX_DEPTH {
            if !self.depth_reported {
                self.depth_reported = true;
                self.report("graphql.depth", &[], format!("selections nest more than {HARD_MAX_DEPTH} levels deep"));
            }
            self.nesting -= 1;
            return;
        }
        for sel in sels {
            self.visits += 1;
            if self.visits > self.budget {
                if !self.out.iter().any(|r| r.code == "graphql.fields") {
                    let at = format!("{}.{}", self.prefix, self.op_kind);
                    self.report_at("graphql.fields", at, format!("the operation expands to more than {} selections", self.budget));
                }
                break;
            }
            match sel {
                Selection::Field(f) => self.field(f, parent, depth, from),
                Selection::Spread { name, directives } => {
                    self.directives(directives);
                    let Some(frag) = self.doc.fragments.iter().find(|fr| fr.name == *name) else {
                        let tail = [Cow::Owned(format!("...{name}"))];
                        self.report("graphql.fragment_unknown", &tail, format!("no fragment named `{name}` in the document"));
                        continue;
                    };
                    if self.frags.contains(name) {
                        let tail = [Cow::Owned(format!("...{name}"))];
                        self.report("graphql.fragment_cycle", &tail, format!("fragment `{name}` spreads itself (through {})", self.frags.join(" > ")));
                        continue;
                    }
                    if self.frags.len() >= MAX_FRAGMENT_NESTING {
                        let tail = [Cow::Owned(format!("...{name}"))];
                        self.report("graphql.depth", &tail, format!("fragments nest more than {MAX_FRAGMENT_NESTING} levels deep"));
                        continue;
                    }
                    let inner = self.type_condition(Some(frag.on), parent, name);
                    self.directives(&frag.directives);
                    self.frags.push(name);
                    self.walk_set(self.doc.set(frag.selections), inner, depth, from);
                    self.frags.pop();
                }
                Selection::Inline { on, directives, selections } => {
                    self.directives(directives);
                    let inner = self.type_condition(*on, parent, "inline fragment");
                    self.walk_set(self.doc.set(*selections), inner, depth, from);
                }
            }
        }
        self.nesting -= 1;
    }

    /// The type a fragment's selections are on: its type condition when it may apply to
    /// `parent`, else (reported) none.
    fn type_condition(&mut self, on: Option<&'s str>, parent: Option<TypeId>, what: &str) -> Option<TypeId> {
        let (Some(s), Some(parent)) = (self.schema, parent) else { return None };
        let Some(on) = on else { return Some(parent) };
        let tail = || [Cow::Owned(format!("...on {on}"))];
        let Some(id) = s.type_id(on) else {
            self.report("graphql.type_unknown", &tail(), format!("{what}: unknown type `{on}`"));
            return None;
        };
        if !s.ty(id).is_composite() {
            self.report("graphql.fragment_type_invalid", &tail(), format!("{what}: `{on}` is not an object, interface or union type"));
            return None;
        }
        if !s.overlaps(parent, id) {
            self.report("graphql.fragment_type_invalid", &tail(), format!("{what}: `{on}` can never be a `{}`", s.ty(parent).name));
            return None;
        }
        Some(id)
    }

    fn field(&mut self, f: &doc::Field<'s>, parent: Option<TypeId>, depth: usize, from: usize) {
        self.fields += 1;
        if f.alias.is_some() {
            self.aliases += 1;
        }
        if depth == 1 {
            self.root_fields += 1;
        }
        self.path.push(f.name);
        let repeated = match self.counts[from..].iter_mut().find(|(n, _)| *n == f.name) {
            Some((_, c)) => {
                *c += 1;
                *c
            }
            None => {
                self.counts.push((f.name, 1));
                1
            }
        };
        if over(repeated, self.limits.max_field_repeat) {
            self.report(
                "graphql.field_repeat",
                &[],
                format!("field `{}` appears more than {} times in one selection set", f.name, self.limits.max_field_repeat),
            );
        }
        let introspection = matches!(f.name, "__schema" | "__type");
        if introspection && !self.limits.introspection {
            self.report("graphql.introspection", &[], "introspection is not allowed on this endpoint".to_string());
        }
        self.directives(&f.directives);
        let mut child = None;
        let mut descend = true;
        match (self.schema, parent) {
            (Some(s), Some(pt)) if !f.name.starts_with("__") => {
                let t = s.ty(pt);
                match t.fields.get(f.name) {
                    None => {
                        self.report("graphql.field_unknown", &[], format!("type `{}` has no field `{}`", t.name, f.name));
                        descend = false;
                    }
                    Some(fd) => {
                        if !f.arguments.is_empty() || fd.required_args {
                            let mut tail = std::mem::take(&mut self.tail);
                            self.arguments(self.doc.args(f.arguments), &fd.args, &mut tail);
                            tail.clear();
                            self.tail = tail;
                        }
                        if fd.composite && f.selections.is_empty() {
                            self.report(
                                "graphql.selection_missing",
                                &[],
                                format!("field `{}` of type `{}` needs a selection of subfields", f.name, s.display(&fd.ty)),
                            );
                        } else if !fd.composite && !f.selections.is_empty() {
                            self.report("graphql.selection_invalid", &[], format!("field `{}` of type `{}` has no subfields", f.name, s.display(&fd.ty)));
                            descend = false;
                        }
                        child = Some(fd.base);
                    }
                }
            }
            (Some(_), Some(_)) if f.name == "__typename" && !f.selections.is_empty() => {
                self.report("graphql.selection_invalid", &[], "`__typename` has no subfields".to_string());
            }
            (Some(s), Some(pt)) if introspection && Some(pt) != s.query => {
                self.report("graphql.field_unknown", &[], format!("`{}` is a field of the query root only", f.name));
            }
            (Some(_), Some(_)) if f.name.starts_with("__") && !introspection && f.name != "__typename" => {
                self.report("graphql.field_unknown", &[], format!("unknown meta-field `{}`", f.name));
            }
            _ => {
                // No schema (or an introspection field, whose types the SDL does not hold):
                // still every variable must be defined.
                for (_, v) in self.doc.args(f.arguments) {
                    self.variables_in(v);
                }
            }
        }
        if over(depth, self.limits.max_depth) || depth > HARD_MAX_DEPTH {
            if !self.depth_reported {
                self.depth_reported = true;
                let limit = if self.limits.max_depth == 0 { HARD_MAX_DEPTH } else { self.limits.max_depth };
                self.report("graphql.depth", &[], format!("fields nest {depth} levels deep here; at most {limit} allowed"));
            }
            descend = false;
        }
        if descend && !f.selections.is_empty() {
            // The subfields' tally sits above this set's, and goes with them.
            let start = self.counts.len();
            self.walk_set(self.doc.set(f.selections), child, depth + 1, start);
            self.counts.truncate(start);
        }
        self.path.pop();
    }
}

/// A list index as a location segment; the indexes of short lists are not allocated.
fn index(i: usize) -> Cow<'static, str> {
    const SMALL: [&str; 16] = ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13", "14", "15"];
    match SMALL.get(i) {
        Some(s) => Cow::Borrowed(s),
        None => Cow::Owned(i.to_string()),
    }
}

/// Whether a scalar literal fits a built-in scalar (custom scalars take any literal).
fn scalar_literal_ok(name: &str, v: &Value<'_>) -> bool {
    match name {
        "Int" => matches!(v, Value::Int(i) if i.parse::<i32>().is_ok()),
        "Float" => matches!(v, Value::Int(_) | Value::Float(_)),
        "String" => matches!(v, Value::String(_)),
        "Boolean" => matches!(v, Value::Boolean(_)),
        "ID" => matches!(v, Value::String(_) | Value::Int(_)),
        _ => true,
    }
}

/// Whether a variable of type `var` may be used where `loc` is expected (the specification's
/// "All Variable Usages Are Allowed"); `relaxed`: the variable or the location has a default.
fn usage_allowed(var: &SType, loc: &SType, relaxed: bool) -> bool {
    match (loc, var) {
        (SType::NonNull(l), v) if !v.is_non_null() => relaxed && compatible(v, l),
        _ => compatible(var, loc),
    }
}

fn compatible(var: &SType, loc: &SType) -> bool {
    match (var, loc) {
        (SType::NonNull(v), SType::NonNull(l)) => compatible(v, l),
        (_, SType::NonNull(_)) => false,
        (SType::NonNull(v), l) => compatible(v, l),
        (SType::List(v), SType::List(l)) => compatible(v, l),
        (SType::List(_), _) | (_, SType::List(_)) => false,
        (SType::Named(a), SType::Named(b)) => a == b,
    }
}

/// Why a JSON variable value does not fit its declared type: the path below the variable and
/// the reason. Without a schema only the built-in scalars are checked.
fn json_problem(v: &Json, ty: &OwnedType, schema: Option<&Schema>, tail: &mut Vec<String>) -> Option<(Vec<String>, String)> {
    let fail = |tail: &Vec<String>, why: String| Some((tail.clone(), why));
    match ty {
        OwnedType::NonNull(inner) => {
            if v.is_null() {
                return fail(tail, format!("null where `{ty}` is expected"));
            }
            json_problem(v, inner, schema, tail)
        }
        _ if v.is_null() => None,
        OwnedType::List(inner) => match v {
            Json::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    tail.push(i.to_string());
                    let p = json_problem(item, inner, schema, tail);
                    tail.pop();
                    if p.is_some() {
                        return p;
                    }
                }
                None
            }
            other => json_problem(other, inner, schema, tail),
        },
        OwnedType::Named(name) => {
            let ok = match &**name {
                "Int" => v.as_i64().is_some_and(|i| i32::try_from(i).is_ok()) || v.as_f64().is_some_and(|f| f.fract() == 0.0 && f.abs() <= i32::MAX as f64),
                "Float" => v.is_number(),
                "String" => v.is_string(),
                "Boolean" => v.is_boolean(),
                "ID" => v.is_string() || v.is_i64() || v.is_u64(),
                other => {
                    let t = schema.and_then(|s| s.type_named(other))?;
                    match t.kind {
                        Kind::Enum => match v.as_str() {
                            Some(e) if t.enum_values.contains(e) => true,
                            Some(e) => return fail(tail, format!("`{e}` is not a value of enum `{other}`")),
                            None => false,
                        },
                        Kind::InputObject => {
                            let Json::Object(m) = v else { return fail(tail, format!("{} where input type `{other}` is expected", json_kind(v))) };
                            let s = schema?;
                            for (k, fv) in m {
                                tail.push(k.clone());
                                let Some(f) = t.inputs.iter().find(|f| &*f.name == k.as_str()) else {
                                    return fail(tail, format!("input type `{other}` has no field `{k}`"));
                                };
                                let fty = OwnedType::of_schema(s, &f.ty);
                                let p = json_problem(fv, &fty, schema, tail);
                                tail.pop();
                                if p.is_some() {
                                    return p;
                                }
                            }
                            for f in t.inputs.iter().filter(|f| f.required()) {
                                if !m.contains_key(&*f.name) {
                                    tail.push(f.name.to_string());
                                    return fail(tail, format!("required field `{}` of `{other}` is missing", f.name));
                                }
                            }
                            true
                        }
                        _ => true,
                    }
                }
            };
            if ok {
                None
            } else {
                fail(tail, format!("{} where `{name}` is expected", json_kind(v)))
            }
        }
    }
}

fn json_kind(v: &Json) -> &'static str {
    match v {
        Json::Null => "null",
        Json::Bool(_) => "a boolean",
        Json::Number(_) => "a number",
        Json::String(_) => "a string",
        Json::Array(_) => "a list",
        Json::Object(_) => "an object",
    }
}
