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

mod cache;
mod input;
mod operation;
mod variables;
mod walk;

use std::sync::Arc;

use palisade_core::{ProtocolValue, Reason};

use crate::doc::{self, OpKind, TypeRef};
use crate::request::{Envelope, GraphqlRequest};
use crate::schema::{SType, Schema};

pub use cache::DocCache;
pub use operation::check;
pub use variables::check_variables;

/// How deep fragments may be spread within fragments.
pub const MAX_FRAGMENT_NESTING: usize = 32;
/// Depth bound when `max_depth` is off: the walk never recurses deeper.
pub const HARD_MAX_DEPTH: usize = 256;
/// How many findings one request collects at most.
pub(crate) const MAX_FINDINGS: usize = 32;

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

pub(crate) fn over(n: usize, limit: usize) -> bool {
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
    pub(crate) fn of(t: &TypeRef<'_>) -> OwnedType {
        match t {
            TypeRef::Named(n) => OwnedType::Named((*n).into()),
            TypeRef::List(t) => OwnedType::List(Box::new(OwnedType::of(t))),
            TypeRef::NonNull(t) => OwnedType::NonNull(Box::new(OwnedType::of(t))),
        }
    }

    pub(crate) fn of_schema(s: &Schema, t: &SType) -> OwnedType {
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
