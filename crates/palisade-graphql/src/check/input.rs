//! Argument and input values against the schema's input types, and variable usages against
//! their definitions.

use std::borrow::Cow;

use super::walk::Walk;
use crate::doc::Value;
use crate::schema::{Kind, SType};

impl<'s> Walk<'_, 's> {
    /// Variables referenced in a value, when there is no schema to type them.
    pub(super) fn variables_in(&mut self, v: &Value<'s>) {
        match v {
            Value::Variable(n) if !self.vars.iter().any(|d| d.name == *n) => {
                self.report("graphql.variable_undefined", &[], format!("variable `${n}` is not defined by the operation"));
            }
            Value::List(items) => items.iter().for_each(|i| self.variables_in(i)),
            Value::Object(fields) => fields.iter().for_each(|(_, v)| self.variables_in(v)),
            _ => {}
        }
    }

    pub(super) fn arguments(&mut self, given: &[(&'s str, Value<'s>)], defs: &[crate::schema::InputValue], tail: &mut Vec<Cow<'s, str>>) {
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
    pub(super) fn literal(&mut self, v: &Value<'s>, ty: &SType, tail: &mut Vec<Cow<'s, str>>, location_default: bool, base: Option<&str>) {
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
                        Value::Enum(e) if t.enum_values.contains(e) => {}
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
