//! The JSON `variables` of a request against the selected operation's definitions.

use palisade_core::Reason;
use serde_json::{Map, Value as Json};

use super::{OwnedType, VarSpec, MAX_FINDINGS};
use crate::schema::{Kind, Schema};

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
