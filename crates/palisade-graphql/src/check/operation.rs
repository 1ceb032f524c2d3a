//! Selecting the operation of a document, the document-wide rules, and the operation's totals
//! against the limits.

use palisade_core::Reason;

use super::walk::Walk;
use super::{over, Limits, MAX_FRAGMENT_NESTING};
use crate::doc::{self, Definition, Document, OpKind};
use crate::schema::Schema;

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
        path: Vec::with_capacity(limits.max_depth.clamp(8, 64)),
        frags: Vec::with_capacity(doc.fragments.len().min(MAX_FRAGMENT_NESTING)),
        counts: Vec::with_capacity(64),
        vars: &op.variables,
        var_types: Vec::with_capacity(op.variables.len()),
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
    w.directives(op.directives);
    w.walk_set(op.selections, root, 1, 0);
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
