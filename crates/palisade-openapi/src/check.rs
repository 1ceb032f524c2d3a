//! Structure checks of a loaded spec (run by [`crate::loader::load`] once every reference
//! resolves): what OpenAPI requires of paths, parameters, operations, responses and security
//! requirements, with every problem reported at its file, line, column and pointer.
//!
//! Errors: path keys not starting with `/`, malformed templates, a template parameter not
//! declared `in: path` (or a declared path parameter missing from the template), path
//! parameters without `required: true`, invalid `in` / `style` combinations, `schema` and
//! `content` together, `content` with other than one entry, duplicate parameters, templates identical apart from parameter names on the same method, invalid
//! response keys, security requirements naming unknown schemes.
//!
//! Warnings (kept in [`crate::loader::SpecSet::warnings`]): unknown keys in path items,
//! `webhooks`, `callbacks` and `links` (ignored), header parameters OpenAPI says to ignore,
//! parameters without a schema, operations without responses, templates that differ only in
//! parameter names, duplicate `operationId`s.

use std::collections::HashMap;

use palisade_config::yaml::{Node, Origin, Value};
use palisade_schema::DocId;

use crate::error::{push_token, SpecError, Warning};
use crate::loader::SpecSet;
use crate::model::{ParamIn, Version};
use crate::router::{template_params, template_shape, Method};

/// A parameter as seen by the checks.
struct PInfo {
    name: String,
    location: ParamIn,
    doc: DocId,
    pointer: String,
    origin: Origin,
}

struct Ctx<'a> {
    set: &'a SpecSet,
    errors: &'a mut Vec<SpecError>,
    warnings: Vec<Warning>,
    op_ids: HashMap<String, String>,
    /// shape → (template, methods, origin of the path key)
    shapes: HashMap<String, Vec<(String, Vec<Method>)>>,
    schemes: Option<Vec<String>>,
}

impl<'a> Ctx<'a> {
    fn err(&mut self, doc: DocId, origin: &Origin, pointer: &str, message: impl Into<String>) {
        self.errors.push(SpecError::new(&self.set.doc(doc).location, origin, pointer, message));
    }
    fn warn(&mut self, doc: DocId, origin: &Origin, pointer: &str, message: impl Into<String>) {
        self.warnings.push(Warning::new(&self.set.doc(doc).location, origin, pointer, message));
    }
    /// Follow references; `None` when they do not resolve (already reported by the loader).
    fn deref(&self, doc: DocId, pointer: &str, node: &'a Node) -> Option<(DocId, String, &'a Node)> {
        self.set.deref(doc, pointer, node).ok()
    }
}

/// Run the checks; errors go to `errors`, warnings to `set.warnings`.
pub(crate) fn check(set: &mut SpecSet, errors: &mut Vec<SpecError>) {
    let warnings = {
        let mut cx = Ctx { set, errors, warnings: Vec::new(), op_ids: HashMap::new(), shapes: HashMap::new(), schemes: None };
        check_document(&mut cx);
        cx.warnings
    };
    set.warnings.extend(warnings);
}

fn check_document(cx: &mut Ctx<'_>) {
    let set = cx.set;
    let root = &set.entry().root;
    // security schemes
    if let Some(schemes) = root.get("components").and_then(|c| c.get("securitySchemes")) {
        if let Value::Map(entries) = &schemes.value {
            cx.schemes = Some(entries.iter().map(|(k, _)| k.name.clone()).collect());
        }
    }
    if let Some(sec) = root.get("security") {
        check_security(cx, 0, "/security", sec);
    }
    if let Some(w) = root.get("webhooks") {
        cx.warn(0, &w.origin, "/webhooks", "webhooks are ignored: Palisade judges requests to the API, not the calls it makes");
    }
    match root.get("paths") {
        None if set.version == Version::V30 => cx.err(0, &root.origin, "", "missing \"paths\" (required in OpenAPI 3.0)"),
        None => {}
        Some(paths) => match &paths.value {
            Value::Map(entries) => {
                for (k, item) in entries {
                    if k.name.starts_with("x-") {
                        continue;
                    }
                    let ptr = push_token("/paths", &k.name);
                    if !k.name.starts_with('/') {
                        cx.err(0, &k.origin, &ptr, format!("path {:?} must start with '/'", k.name));
                        continue;
                    }
                    check_path(cx, &k.name, &k.origin, &ptr, item);
                }
            }
            Value::Null => {}
            _ => cx.err(0, &paths.origin, "/paths", format!("\"paths\" must be a mapping, not {}", paths.kind())),
        },
    }
    // templates that differ only in parameter names
    let mut shapes: Vec<_> = std::mem::take(&mut cx.shapes).into_iter().filter(|(_, v)| v.len() > 1).collect();
    shapes.sort();
    for (_, templates) in shapes {
        let (first, first_methods) = &templates[0];
        for (t, methods) in &templates[1..] {
            let ptr = push_token("/paths", t);
            let origin = root.get("paths").and_then(|p| match &p.value {
                Value::Map(e) => e.iter().find(|(k, _)| k.name == *t).map(|(k, _)| k.origin.clone()),
                _ => None,
            });
            let origin = origin.unwrap_or(Origin::File { line: 0, col: 0 });
            let shared: Vec<&str> = methods.iter().filter(|m| first_methods.contains(m)).map(|m| m.as_str()).collect();
            if shared.is_empty() {
                cx.warn(0, &origin, &ptr, format!("template {t:?} differs from {first:?} only in parameter names; requests match both by shape"));
            } else {
                cx.err(0, &origin, &ptr, format!("template {t:?} is identical to {first:?} apart from parameter names, with {} on both", shared.join(", ")));
            }
        }
    }
}

const PATH_ITEM_KEYS: &[&str] = &["summary", "description", "servers", "parameters", "$ref"];

fn check_path(cx: &mut Ctx<'_>, template: &str, key_origin: &Origin, ptr: &str, item: &Node) {
    let names = match template_params(template) {
        Ok(n) => n,
        Err(e) => {
            cx.err(0, key_origin, ptr, e.to_string());
            return;
        }
    };
    for (i, n) in names.iter().enumerate() {
        if names[..i].contains(n) {
            cx.err(0, key_origin, ptr, format!("parameter {{{n}}} appears twice in the template"));
        }
    }
    let Some((doc, iptr, item)) = cx.deref(0, ptr, item) else { return };
    let Value::Map(entries) = &item.value else {
        if !matches!(item.value, Value::Null) {
            cx.err(doc, &item.origin, &iptr, format!("a path item must be a mapping, not {}", item.kind()));
        }
        return;
    };
    let path_params = match item.get("parameters") {
        Some(p) => check_params(cx, doc, &push_token(&iptr, "parameters"), p),
        None => Vec::new(),
    };
    let mut methods = Vec::new();
    for (k, op) in entries {
        let Some(m) = Method::from_spec_key(&k.name) else {
            if !PATH_ITEM_KEYS.contains(&k.name.as_str()) && !k.name.starts_with("x-") {
                cx.warn(doc, &k.origin, &push_token(&iptr, &k.name), format!("unknown path item key {:?} is ignored", k.name));
            }
            continue;
        };
        methods.push(m);
        let optr = push_token(&iptr, &k.name);
        let Value::Map(_) = &op.value else {
            cx.err(doc, &op.origin, &optr, format!("an operation must be a mapping, not {}", op.kind()));
            continue;
        };
        check_operation(cx, doc, &optr, op, &names, &path_params);
    }
    cx.shapes.entry(template_shape(template)).or_default().push((template.to_string(), methods));
}

fn check_operation(cx: &mut Ctx<'_>, doc: DocId, optr: &str, op: &Node, names: &[&str], path_params: &[PInfo]) {
    let op_params = match op.get("parameters") {
        Some(p) => check_params(cx, doc, &push_token(optr, "parameters"), p),
        None => Vec::new(),
    };
    // merged path parameters: operation-level wins on name + location
    let declared: Vec<&PInfo> = path_params
        .iter()
        .filter(|p| !op_params.iter().any(|o| o.location == p.location && o.name == p.name))
        .chain(op_params.iter())
        .filter(|p| p.location == ParamIn::Path)
        .collect();
    for n in names {
        if !declared.iter().any(|p| p.name == *n) {
            cx.err(doc, &op.origin, optr, format!("path parameter {{{n}}} of the template is not declared (a parameter with name: {n}, in: path)"));
        }
    }
    for p in &declared {
        if !names.contains(&p.name.as_str()) {
            cx.err(p.doc, &p.origin, &p.pointer, format!("path parameter {:?} does not appear in the path template", p.name));
        }
    }
    if let Some(id) = op.get("operationId") {
        match &id.value {
            Value::Str(s) => {
                if let Some(prev) = cx.op_ids.get(s) {
                    // OpenAPI requires them unique; Palisade only uses them as names.
                    let msg = format!("duplicate operationId {s:?} (also at #{prev}): overrides and rules that name it apply to both operations");
                    cx.warn(doc, &id.origin, &push_token(optr, "operationId"), msg);
                } else {
                    cx.op_ids.insert(s.clone(), optr.to_string());
                }
            }
            _ => cx.err(doc, &id.origin, &push_token(optr, "operationId"), format!("operationId must be a string, not {}", id.kind())),
        }
    }
    match op.get("responses") {
        None => cx.warn(doc, &op.origin, optr, "operation without responses: responses will not be validated"),
        Some(r) => check_responses(cx, doc, &push_token(optr, "responses"), r),
    }
    if let Some(sec) = op.get("security") {
        check_security(cx, doc, &push_token(optr, "security"), sec);
    }
    if let Some(c) = op.get("callbacks") {
        cx.warn(doc, &c.origin, &push_token(optr, "callbacks"), "callbacks are ignored: they describe requests the API makes, not requests it receives");
    }
    if let Some(b) = op.get("requestBody") {
        if let Some((bdoc, bptr, body)) = cx.deref(doc, &push_token(optr, "requestBody"), b) {
            match body.get("content") {
                Some(Node { value: Value::Map(_), .. }) => {}
                Some(c) => cx.err(bdoc, &c.origin, &push_token(&bptr, "content"), format!("content must be a mapping of media types, not {}", c.kind())),
                None => cx.err(bdoc, &body.origin, &bptr, "a request body needs \"content\""),
            }
        }
    }
}

fn check_params(cx: &mut Ctx<'_>, doc: DocId, ptr: &str, list: &Node) -> Vec<PInfo> {
    let mut out: Vec<PInfo> = Vec::new();
    let Value::Seq(items) = &list.value else {
        cx.err(doc, &list.origin, ptr, format!("parameters must be a list, not {}", list.kind()));
        return out;
    };
    for (i, p) in items.iter().enumerate() {
        let Some((pdoc, pptr, p)) = cx.deref(doc, &format!("{ptr}/{i}"), p) else { continue };
        if !matches!(p.value, Value::Map(_)) {
            cx.err(pdoc, &p.origin, &pptr, format!("a parameter must be a mapping, not {}", p.kind()));
            continue;
        }
        let name = match p.get("name").map(|n| &n.value) {
            Some(Value::Str(s)) if !s.is_empty() => s.clone(),
            _ => {
                cx.err(pdoc, &p.origin, &pptr, "a parameter needs a non-empty string \"name\"");
                continue;
            }
        };
        let location = match p.get("in").map(|n| (&n.value, n)) {
            Some((Value::Str(s), n)) => match s.as_str() {
                "path" => ParamIn::Path,
                "query" => ParamIn::Query,
                "header" => ParamIn::Header,
                "cookie" => ParamIn::Cookie,
                other => {
                    cx.err(
                        pdoc,
                        &n.origin,
                        &push_token(&pptr, "in"),
                        format!("parameter {name:?}: \"in\" must be path, query, header or cookie, not {other:?}"),
                    );
                    continue;
                }
            },
            _ => {
                cx.err(pdoc, &p.origin, &pptr, format!("parameter {name:?} needs \"in\" (path, query, header or cookie)"));
                continue;
            }
        };
        if location == ParamIn::Path && !matches!(p.get("required").map(|n| &n.value), Some(Value::Bool(true))) {
            let origin = p.get("required").map_or(&p.origin, |n| &n.origin);
            cx.err(pdoc, origin, &pptr, format!("path parameter {name:?} must have required: true"));
        }
        if let Some(st) = p.get("style") {
            let ok: &[&str] = match location {
                ParamIn::Path => &["matrix", "label", "simple"],
                ParamIn::Query => &["form", "spaceDelimited", "pipeDelimited", "deepObject"],
                ParamIn::Header => &["simple"],
                ParamIn::Cookie => &["form"],
            };
            match &st.value {
                Value::Str(s) if ok.contains(&s.as_str()) => {}
                _ => {
                    let shown = st.scalar_text().unwrap_or_else(|| st.kind().to_string());
                    let msg = format!("style {shown:?} is not valid for a {} parameter (one of: {})", location.as_str(), ok.join(", "));
                    cx.err(pdoc, &st.origin, &push_token(&pptr, "style"), msg);
                }
            }
        }
        match (p.get("schema"), p.get("content")) {
            (Some(_), Some(c)) => cx.err(pdoc, &c.origin, &pptr, format!("parameter {name:?} has both \"schema\" and \"content\"; use one")),
            (None, Some(c)) => {
                if !matches!(&c.value, Value::Map(e) if e.len() == 1) {
                    cx.err(pdoc, &c.origin, &push_token(&pptr, "content"), format!("parameter {name:?}: \"content\" must have exactly one media type"));
                }
            }
            (None, None) => cx.warn(pdoc, &p.origin, &pptr, format!("parameter {name:?} has no schema: only its presence is checked")),
            (Some(_), None) => {}
        }
        if location == ParamIn::Header && ["accept", "content-type", "authorization"].contains(&name.to_ascii_lowercase().as_str()) {
            cx.warn(
                pdoc,
                &p.origin,
                &pptr,
                format!("header parameter {name:?} is ignored, as OpenAPI requires (use the body media types and security schemes)"),
            );
        }
        let same = |o: &PInfo| o.location == location && if location == ParamIn::Header { o.name.eq_ignore_ascii_case(&name) } else { o.name == name };
        if out.iter().any(same) {
            cx.err(pdoc, &p.origin, &pptr, format!("duplicate parameter {name:?} in {}", location.as_str()));
            continue;
        }
        out.push(PInfo { name, location, doc: pdoc, pointer: pptr, origin: p.origin.clone() });
    }
    out
}

/// `200`, `2XX`, `default` (and `x-` extensions).
pub(crate) fn valid_response_key(k: &str) -> bool {
    let b = k.as_bytes();
    k == "default"
        || k.starts_with("x-")
        || (b.len() == 3 && (b'1'..=b'5').contains(&b[0]) && (b[1..].iter().all(u8::is_ascii_digit) || b[1..].eq_ignore_ascii_case(b"XX")))
}

fn check_responses(cx: &mut Ctx<'_>, doc: DocId, ptr: &str, responses: &Node) {
    let Value::Map(entries) = &responses.value else {
        cx.err(doc, &responses.origin, ptr, format!("responses must be a mapping, not {}", responses.kind()));
        return;
    };
    if entries.is_empty() {
        cx.warn(doc, &responses.origin, ptr, "operation without responses: responses will not be validated");
    }
    for (k, r) in entries {
        let rptr = push_token(ptr, &k.name);
        if !valid_response_key(&k.name) {
            cx.err(doc, &k.origin, &rptr, format!("response key {:?} is not a status code (100-599), a range (1XX-5XX) or \"default\"", k.name));
            continue;
        }
        if k.name.starts_with("x-") {
            continue;
        }
        let Some((rdoc, rptr, r)) = cx.deref(doc, &rptr, r) else { continue };
        if !matches!(r.value, Value::Map(_)) {
            cx.err(rdoc, &r.origin, &rptr, format!("a response must be a mapping, not {}", r.kind()));
            continue;
        }
        if let Some(l) = r.get("links") {
            cx.warn(rdoc, &l.origin, &push_token(&rptr, "links"), "links are ignored");
        }
    }
}

fn check_security(cx: &mut Ctx<'_>, doc: DocId, ptr: &str, sec: &Node) {
    let Value::Seq(items) = &sec.value else {
        cx.err(doc, &sec.origin, ptr, format!("security must be a list of requirements, not {}", sec.kind()));
        return;
    };
    for (i, req) in items.iter().enumerate() {
        let rptr = format!("{ptr}/{i}");
        let Value::Map(entries) = &req.value else {
            cx.err(doc, &req.origin, &rptr, format!("a security requirement must be a mapping of scheme names to scopes, not {}", req.kind()));
            continue;
        };
        for (k, scopes) in entries {
            let known = cx.schemes.as_ref().is_some_and(|s| s.contains(&k.name));
            if !known {
                cx.err(doc, &k.origin, &push_token(&rptr, &k.name), format!("security scheme {:?} is not defined in components.securitySchemes", k.name));
            }
            if !matches!(&scopes.value, Value::Seq(v) if v.iter().all(|s| matches!(s.value, Value::Str(_)))) {
                cx.err(doc, &scopes.origin, &push_token(&rptr, &k.name), "scopes must be a list of strings");
            }
        }
    }
}

#[cfg(test)]
mod tests;
