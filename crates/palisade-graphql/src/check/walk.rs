//! The walk of the selected operation with fragments expanded: limits tallied and, with a
//! schema, fields, fragments' type conditions and directives validated.

use std::borrow::Cow;

use palisade_core::Reason;

use super::{over, Limits, HARD_MAX_DEPTH, MAX_FINDINGS, MAX_FRAGMENT_NESTING};
use crate::doc::{self, Document, Selection, VarDef};
use crate::schema::{SType, Schema, TypeId};

pub(crate) struct Walk<'a, 's> {
    pub(super) doc: &'a Document<'s>,
    pub(super) schema: Option<&'a Schema>,
    pub(super) limits: &'a Limits,
    pub(super) prefix: &'a str,
    pub(super) op_kind: &'static str,
    /// Field names from the root to the current field.
    pub(super) path: Vec<&'s str>,
    /// Fragments being expanded.
    pub(super) frags: Vec<&'s str>,
    /// Field names and how often each appears, of the selection sets being walked (each set's
    /// entries above its parent's).
    pub(super) counts: Vec<(&'s str, usize)>,
    pub(super) vars: &'a [VarDef<'s>],
    /// The schema's type of each variable (`None`: no schema, or an unknown type).
    pub(super) var_types: Vec<Option<SType>>,
    pub(super) fields: usize,
    pub(super) aliases: usize,
    pub(super) root_fields: usize,
    pub(super) directives: usize,
    pub(super) visits: usize,
    pub(super) budget: usize,
    pub(super) depth_reported: bool,
    pub(super) nesting: usize,
    /// The location below the current field (arguments, input fields), reused.
    pub(super) tail: Vec<Cow<'s, str>>,
    pub(super) out: &'a mut Vec<Reason>,
}

impl<'s> Walk<'_, 's> {
    /// The location of the current field, with `tail` appended.
    pub(super) fn location(&self, tail: &[Cow<'_, str>]) -> String {
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

    pub(super) fn report_at(&mut self, code: &'static str, location: String, detail: String) {
        if self.out.len() >= MAX_FINDINGS || self.out.iter().any(|r| r.code == code && r.location.as_deref() == Some(&location)) {
            return;
        }
        self.out.push(Reason::new(code).at(location).detail(detail));
    }

    pub(super) fn report(&mut self, code: &'static str, tail: &[Cow<'_, str>], detail: String) {
        let at = self.location(tail);
        self.report_at(code, at, detail);
    }

    pub(super) fn variable_definitions(&mut self) {
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
            self.directives(v.directives);
            if let (Some(d), Some(st)) = (&v.default, self.var_types[i].clone()) {
                let mut tail = vec![Cow::Borrowed("$default")];
                self.literal(d, &st, &mut tail, true, Some(&format!("{}.variables.{}", self.prefix, v.name)));
            }
        }
    }

    pub(super) fn directives(&mut self, ds: doc::Dirs) {
        for d in self.doc.dirs(ds) {
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

    /// Walk one selection set at field depth `depth`; `self.counts[from..]` tallies field
    /// names in it (fragments spread into it add to the same tally).
    pub(super) fn walk_set(&mut self, set: doc::Set, parent: Option<TypeId>, depth: usize, from: usize) {
        self.nesting += 1;
        if self.nesting > HARD_MAX_DEPTH {
            if !self.depth_reported {
                self.depth_reported = true;
                self.report("graphql.depth", &[], format!("selections nest more than {HARD_MAX_DEPTH} levels deep"));
            }
            self.nesting -= 1;
            return;
        }
        let d = self.doc;
        for sel in d.set(set) {
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
                    self.directives(*directives);
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
                    self.directives(frag.directives);
                    self.frags.push(name);
                    self.walk_set(frag.selections, inner, depth, from);
                    self.frags.pop();
                }
                Selection::Inline { on, directives, selections } => {
                    self.directives(*directives);
                    let inner = self.type_condition(*on, parent, "inline fragment");
                    self.walk_set(*selections, inner, depth, from);
                }
            }
        }
        self.nesting -= 1;
    }

    /// The type a fragment's selections are on: its type condition when it may apply to
    /// `parent`, else (reported) none.
    pub(super) fn type_condition(&mut self, on: Option<&'s str>, parent: Option<TypeId>, what: &str) -> Option<TypeId> {
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

    pub(super) fn field(&mut self, f: &doc::Field<'s>, parent: Option<TypeId>, depth: usize, from: usize) {
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
        self.directives(f.directives);
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
            self.walk_set(f.selections, child, depth + 1, start);
            self.counts.truncate(start);
        }
        self.path.pop();
    }
}
