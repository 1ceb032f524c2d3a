//! From a loaded [`SpecSet`] to the compiled [`Api`]: operations with their merged parameters,
//! bodies, responses and security, schemas compiled through [`palisade_schema::Compiler`]
//! (dialect from the spec's version), and the router with every server base path.
//!
//! Defaults applied here, per OpenAPI: `style` is `form` for query and cookie parameters and
//! `simple` for path and header ones; `explode` is true for `form` and false otherwise;
//! `required` is false except for path parameters. Header parameters named `Accept`,
//! `Content-Type` or `Authorization`, and response headers named `Content-Type`, are ignored
//! as OpenAPI requires. Security: the operation's `security` replaces the document's; an
//! empty list means no requirement.
//!
//! `x-*` extensions, `callbacks`, `webhooks` and `links` are ignored (the checks report the
//! last three as warnings).

use std::collections::HashMap;

use palisade_config::yaml::{Node, Origin, Value};
use palisade_schema::{Compiler, Dialect, DocId, SchemaError, SchemaId, Schemas};

use crate::error::{push_token, SpecError, Warning};
use crate::loader::SpecSet;
use crate::model::*;
use crate::router::{InsertError, Method, Router, RouterOptions};
use crate::servers::base_paths;

/// Settings for [`compile`].
#[derive(Clone, Copy, Debug, Default)]
pub struct CompileOptions {
    pub router: RouterOptions,
    /// What `nullable` means in a 3.1 spec (`openapi.nullable`).
    pub nullable: palisade_schema::Nullable,
    /// Whether `format` asserts or only annotates (`openapi.formats`).
    pub formats: palisade_schema::Formats,
}

/// Where schemas go. The real one is [`palisade_schema::Compiler`]; tests of the structure
/// use a stand-in.
pub(crate) trait SchemaSink {
    fn compile(&mut self, doc: DocId, pointer: &str, node: &Node) -> SchemaId;
    /// The arena and the engine's warnings, or its errors.
    fn finish(self: Box<Self>) -> Result<(Schemas, Vec<SchemaError>), Vec<SchemaError>>;
}

struct RealSink<'r>(Compiler<'r>);

impl SchemaSink for RealSink<'_> {
    fn compile(&mut self, doc: DocId, pointer: &str, node: &Node) -> SchemaId {
        self.0.compile(doc, pointer, node)
    }
    fn finish(self: Box<Self>) -> Result<(Schemas, Vec<SchemaError>), Vec<SchemaError>> {
        self.0.finish().map(|s| {
            let warnings = s.warnings().to_vec();
            (s, warnings)
        })
    }
}

/// Compile a loaded spec.
pub fn compile(set: &SpecSet, options: &CompileOptions) -> Result<Api, Vec<SpecError>> {
    compile_with_warnings(set, options).map(|(api, _)| api)
}

/// [`compile`], also returning the warnings of loading and compiling (what [`crate::lint`]
/// reports).
pub fn compile_with_warnings(set: &SpecSet, options: &CompileOptions) -> Result<(Api, Vec<Warning>), Vec<SpecError>> {
    let dialect = match set.version {
        Version::V30 => Dialect::Oas30,
        Version::V31 => Dialect::Oas31,
    };
    let mut compiler = Compiler::new(dialect, set);
    compiler.set_nullable(options.nullable);
    compiler.set_formats(options.formats);
    let sink = Box::new(RealSink(compiler));
    compile_using(set, options, sink)
}

pub(crate) fn compile_using(set: &SpecSet, options: &CompileOptions, sink: Box<dyn SchemaSink + '_>) -> Result<(Api, Vec<Warning>), Vec<SpecError>> {
    let mut b = Builder { set, sink, cache: HashMap::new(), errors: Vec::new(), warnings: set.warnings.clone(), checked_bodies: Vec::new() };
    let (operations, router, security_schemes) = b.build(options);
    let Builder { sink, mut errors, mut warnings, .. } = b;
    let schemas = match sink.finish() {
        Ok((schemas, schema_warnings)) => {
            warnings.extend(schema_warnings.into_iter().map(|w| {
                let e = schema_error(set, w);
                Warning { file: e.file, line: e.line, col: e.col, pointer: e.pointer, message: e.message }
            }));
            Some(schemas)
        }
        Err(errs) => {
            errors.extend(errs.into_iter().map(|e| schema_error(set, e)));
            None
        }
    };
    match schemas {
        Some(schemas) if errors.is_empty() => {
            let title = set.entry().root.get("info").and_then(|i| i.get("title")).and_then(Node::scalar_text).unwrap_or_default();
            Ok((Api { version: set.version, title, operations, router, schemas, security_schemes }, warnings))
        }
        _ => Err(errors),
    }
}

fn schema_error(set: &SpecSet, e: SchemaError) -> SpecError {
    let file = set.docs.get(e.doc as usize).map_or("?", |d| d.location.as_str());
    SpecError::new(file, &e.origin, &e.pointer, e.message)
}

struct Builder<'s> {
    set: &'s SpecSet,
    sink: Box<dyn SchemaSink + 's>,
    cache: HashMap<(DocId, String), SchemaId>,
    errors: Vec<SpecError>,
    warnings: Vec<Warning>,
    /// Request body schemas already looked at for `additionalProperties`.
    checked_bodies: Vec<(DocId, String)>,
}

/// A node and where it is.
#[derive(Clone)]
struct Loc<'a> {
    doc: DocId,
    ptr: String,
    node: &'a Node,
}

impl<'s> Builder<'s> {
    fn warn(&mut self, doc: DocId, origin: &Origin, pointer: &str, message: impl Into<String>) {
        self.warnings.push(Warning::new(&self.set.doc(doc).location, origin, pointer, message));
    }
    fn err(&mut self, doc: DocId, origin: &Origin, pointer: &str, message: impl Into<String>) {
        self.errors.push(SpecError::new(&self.set.doc(doc).location, origin, pointer, message));
    }

    fn deref(&mut self, doc: DocId, ptr: &str, node: &'s Node) -> Option<Loc<'s>> {
        match self.set.deref(doc, ptr, node) {
            Ok((doc, ptr, node)) => Some(Loc { doc, ptr, node }),
            Err(e) => {
                self.err(doc, &node.origin, ptr, e.to_string());
                None
            }
        }
    }

    fn schema(&mut self, doc: DocId, ptr: &str, node: &'s Node) -> SchemaId {
        if let Some(id) = self.cache.get(&(doc, ptr.to_string())) {
            return *id;
        }
        let id = self.sink.compile(doc, ptr, node);
        self.cache.insert((doc, ptr.to_string()), id);
        id
    }

    fn build(&mut self, options: &CompileOptions) -> (Vec<Operation>, Router, Vec<(String, SecurityScheme)>) {
        let set = self.set;
        let root = &set.entry().root;
        let mut router = Router::new(options.router);
        let mut operations: Vec<Operation> = Vec::new();
        let security_schemes = self.security_schemes(root);
        let doc_security = root.get("security").map(security);
        let doc_bases = self.bases(0, root, "");
        let paths = match root.get("paths").map(|p| &p.value) {
            Some(Value::Map(entries)) => entries.as_slice(),
            _ => &[],
        };
        for (k, item) in paths {
            if k.name.starts_with("x-") {
                continue;
            }
            let template = k.name.as_str();
            let ptr = push_token("/paths", template);
            let Some(item) = self.deref(0, &ptr, item) else { continue };
            let path_bases = if item.node.get("servers").is_some() { self.bases(item.doc, item.node, &item.ptr) } else { doc_bases.clone() };
            let path_params = self.param_list(&item, "parameters");
            for m in Method::ALL {
                let Some(op) = item.node.get(m.spec_key()) else { continue };
                let optr = push_token(&item.ptr, m.spec_key());
                let op = Loc { doc: item.doc, ptr: optr, node: op };
                let bases = if op.node.get("servers").is_some() { self.bases(op.doc, op.node, &op.ptr) } else { path_bases.clone() };
                let op_params = self.param_list(&op, "parameters");
                let mut params: Vec<Param> = path_params.iter().filter(|p| !op_params.iter().any(|o| same_param(o, p))).cloned().collect();
                params.extend(op_params);
                let body = op.node.get("requestBody").and_then(|b| self.request_body(&op, b));
                let responses = self.responses(&op);
                let security = match op.node.get("security") {
                    Some(s) => security(s),
                    None => doc_security.clone().flatten(),
                };
                let id = match op.node.get("operationId").map(|n| &n.value) {
                    Some(Value::Str(s)) => Some(s.clone()),
                    _ => None,
                };
                let op_id = operations.len();
                for base in &bases {
                    let full = format!("{base}{template}");
                    match router.insert(m, &full, op_id) {
                        Ok(()) => {}
                        Err(InsertError::Conflict { existing }) => {
                            let other = &operations[existing];
                            let msg = format!("{m} {full} is also {} {} (#{}); the first one in the spec is used", other.method, other.template, other.pointer);
                            self.warn(op.doc, &op.node.origin, &op.ptr, msg);
                        }
                        Err(InsertError::BadTemplate(e)) => self.err(0, &k.origin, &ptr, e.to_string()),
                    }
                }
                operations.push(Operation {
                    id,
                    method: m.as_str().to_string(),
                    template: template.to_string(),
                    base_paths: bases,
                    params,
                    body,
                    responses,
                    security,
                    pointer: push_token(&ptr, m.spec_key()),
                });
            }
        }
        (operations, router, security_schemes)
    }

    fn bases(&mut self, doc: DocId, holder: &Node, holder_ptr: &str) -> Vec<String> {
        let mut w = Vec::new();
        let ptr = push_token(holder_ptr, "servers");
        let out = base_paths(holder.get("servers"), &ptr, &mut |o, p, m| w.push((o.clone(), p.to_string(), m)));
        for (o, p, m) in w {
            self.warn(doc, &o, &p, m);
        }
        out
    }

    fn security_schemes(&mut self, root: &'s Node) -> Vec<(String, SecurityScheme)> {
        let mut out = Vec::new();
        let Some(Value::Map(entries)) = root.get("components").and_then(|c| c.get("securitySchemes")).map(|n| &n.value) else {
            return out;
        };
        for (k, s) in entries {
            let Some(s) = self.deref(0, &push_token("/components/securitySchemes", &k.name), s) else { continue };
            let text = |key: &str| s.node.get(key).and_then(Node::scalar_text);
            let scheme = match text("type").as_deref() {
                Some("apiKey") => {
                    let location = match text("in").as_deref() {
                        Some("query") => Some(ParamIn::Query),
                        Some("header") => Some(ParamIn::Header),
                        Some("cookie") => Some(ParamIn::Cookie),
                        _ => None,
                    };
                    match (text("name"), location) {
                        (Some(name), Some(location)) => SecurityScheme::ApiKey { name, location },
                        _ => {
                            self.err(s.doc, &s.node.origin, &s.ptr, format!("apiKey scheme {:?} needs \"name\" and \"in\" (query, header or cookie)", k.name));
                            continue;
                        }
                    }
                }
                Some("http") => match text("scheme").map(|t| t.to_ascii_lowercase()) {
                    Some(t) if t == "bearer" => SecurityScheme::Bearer,
                    Some(t) if t == "basic" => SecurityScheme::Basic,
                    Some(t) => SecurityScheme::OtherHttp(t),
                    None => {
                        self.err(s.doc, &s.node.origin, &s.ptr, format!("http scheme {:?} needs \"scheme\"", k.name));
                        continue;
                    }
                },
                Some("oauth2") => SecurityScheme::OAuth2,
                Some("openIdConnect") => SecurityScheme::OpenIdConnect,
                Some(other) => {
                    let msg = format!("security scheme {:?} of type {other:?} is not checked by Palisade (requests are not judged on it)", k.name);
                    self.warn(s.doc, &s.node.origin, &s.ptr, msg);
                    SecurityScheme::Unchecked(other.to_string())
                }
                None => {
                    self.err(s.doc, &s.node.origin, &s.ptr, format!("security scheme {:?} needs \"type\"", k.name));
                    continue;
                }
            };
            out.push((k.name.clone(), scheme));
        }
        out
    }

    fn param_list(&mut self, holder: &Loc<'s>, key: &str) -> Vec<Param> {
        let mut out = Vec::new();
        let Some(Value::Seq(items)) = holder.node.get(key).map(|n| &n.value) else { return out };
        let list_ptr = push_token(&holder.ptr, key);
        for (i, p) in items.iter().enumerate() {
            let Some(p) = self.deref(holder.doc, &format!("{list_ptr}/{i}"), p) else { continue };
            if let Some(param) = self.param(&p) {
                if !out.iter().any(|o| same_param(o, &param)) {
                    out.push(param);
                }
            }
        }
        out
    }

    fn param(&mut self, p: &Loc<'s>) -> Option<Param> {
        let n = p.node;
        let name = n.get("name").and_then(Node::scalar_text)?;
        let location = match n.get("in").and_then(Node::scalar_text)?.as_str() {
            "path" => ParamIn::Path,
            "query" => ParamIn::Query,
            "header" => ParamIn::Header,
            "cookie" => ParamIn::Cookie,
            _ => return None,
        };
        if location == ParamIn::Header && ["accept", "content-type", "authorization"].contains(&name.to_ascii_lowercase().as_str()) {
            return None;
        }
        let flag = |k: &str| matches!(n.get(k).map(|v| &v.value), Some(Value::Bool(true)));
        let style = match n.get("style").and_then(Node::scalar_text) {
            Some(s) => parse_style(&s)?,
            None => match location {
                ParamIn::Query | ParamIn::Cookie => Style::Form,
                ParamIn::Path | ParamIn::Header => Style::Simple,
            },
        };
        let explode = match n.get("explode").map(|v| &v.value) {
            Some(Value::Bool(b)) => *b,
            _ => style == Style::Form,
        };
        let (schema, content_type) = self.schema_or_content(p);
        Some(Param {
            name,
            location,
            required: location == ParamIn::Path || flag("required"),
            style,
            explode,
            allow_empty_value: location == ParamIn::Query && flag("allowEmptyValue"),
            allow_reserved: location == ParamIn::Query && flag("allowReserved"),
            schema,
            content_type,
        })
    }

    /// `schema`, or the schema of the single `content` entry and its media type.
    fn schema_or_content(&mut self, p: &Loc<'s>) -> (Option<SchemaId>, Option<String>) {
        if let Some(s) = p.node.get("schema") {
            return (Some(self.schema(p.doc, &push_token(&p.ptr, "schema"), s)), None);
        }
        if let Some(Value::Map(entries)) = p.node.get("content").map(|c| &c.value) {
            if let Some((k, media)) = entries.first() {
                let mptr = push_token(&push_token(&p.ptr, "content"), &k.name);
                let schema = media.get("schema").map(|s| self.schema(p.doc, &push_token(&mptr, "schema"), s));
                return (schema, Some(k.name.clone()));
            }
        }
        (None, None)
    }

    fn request_body(&mut self, op: &Loc<'s>, b: &'s Node) -> Option<RequestBody> {
        let b = self.deref(op.doc, &push_token(&op.ptr, "requestBody"), b)?;
        let required = matches!(b.node.get("required").map(|v| &v.value), Some(Value::Bool(true)));
        let content = self.content(&b, true);
        Some(RequestBody { required, content })
    }

    fn content(&mut self, holder: &Loc<'s>, request: bool) -> Vec<MediaType> {
        let mut out = Vec::new();
        let Some(Value::Map(entries)) = holder.node.get("content").map(|c| &c.value) else { return out };
        let cptr = push_token(&holder.ptr, "content");
        for (k, media) in entries {
            let mptr = push_token(&cptr, &k.name);
            let schema = media.get("schema").map(|s| {
                let sptr = push_token(&mptr, "schema");
                if request {
                    self.check_open_object(holder.doc, &sptr, s);
                }
                self.schema(holder.doc, &sptr, s)
            });
            let mut encoding = Vec::new();
            if let Some(Value::Map(encs)) = media.get("encoding").map(|e| &e.value) {
                for (prop, e) in encs {
                    let eptr = push_token(&push_token(&mptr, "encoding"), &prop.name);
                    let loc = Loc { doc: holder.doc, ptr: eptr, node: e };
                    let style = e.get("style").and_then(Node::scalar_text).and_then(|s| parse_style(&s));
                    let explode = match e.get("explode").map(|v| &v.value) {
                        Some(Value::Bool(b)) => Some(*b),
                        _ => None,
                    };
                    encoding.push((
                        prop.name.clone(),
                        Encoding {
                            content_type: e.get("contentType").and_then(Node::scalar_text),
                            style,
                            explode,
                            allow_reserved: matches!(e.get("allowReserved").map(|v| &v.value), Some(Value::Bool(true))),
                            headers: self.headers(&loc),
                        },
                    ));
                }
            }
            out.push(MediaType { range: k.name.clone(), schema, encoding });
        }
        out
    }

    fn headers(&mut self, holder: &Loc<'s>) -> Vec<(String, Header)> {
        let mut out = Vec::new();
        let Some(Value::Map(entries)) = holder.node.get("headers").map(|c| &c.value) else { return out };
        let hptr = push_token(&holder.ptr, "headers");
        for (k, h) in entries {
            if k.name.eq_ignore_ascii_case("content-type") {
                continue;
            }
            let Some(h) = self.deref(holder.doc, &push_token(&hptr, &k.name), h) else { continue };
            let required = matches!(h.node.get("required").map(|v| &v.value), Some(Value::Bool(true)));
            let (schema, _) = self.schema_or_content(&h);
            out.push((k.name.clone(), Header { required, schema }));
        }
        out
    }

    fn responses(&mut self, op: &Loc<'s>) -> Responses {
        let mut out = Responses::default();
        let Some(Value::Map(entries)) = op.node.get("responses").map(|c| &c.value) else { return out };
        let rptr = push_token(&op.ptr, "responses");
        for (k, r) in entries {
            if k.name.starts_with("x-") {
                continue;
            }
            let Some(r) = self.deref(op.doc, &push_token(&rptr, &k.name), r) else { continue };
            let response = Response { headers: self.headers(&r), content: self.content(&r, false) };
            let key = k.name.as_bytes();
            if k.name == "default" {
                out.default = Some(response);
            } else if key.len() == 3 && key[1..].eq_ignore_ascii_case(b"XX") {
                out.by_status.push((StatusKey::Range(key[0] - b'0'), response));
            } else if let Ok(code) = k.name.parse::<u16>() {
                out.by_status.push((StatusKey::Exact(code), response));
            }
        }
        out
    }

    /// Lint: a request body object schema that leaves `additionalProperties` open.
    fn check_open_object(&mut self, doc: DocId, ptr: &str, node: &'s Node) {
        let Ok((tdoc, tptr, target)) = self.set.deref(doc, ptr, node) else { return };
        if self.checked_bodies.iter().any(|(d, p)| *d == tdoc && *p == tptr) {
            return;
        }
        self.checked_bodies.push((tdoc, tptr.clone()));
        let is_object = matches!(target.get("type").map(|t| &t.value), Some(Value::Str(t)) if t == "object") || target.get("properties").is_some();
        if is_object && target.get("additionalProperties").is_none() && target.get("unevaluatedProperties").is_none() {
            self.warn(
                tdoc,
                &target.origin,
                &tptr,
                "request body object schema without additionalProperties: unknown fields are accepted; consider additionalProperties: false or shadow-field detection",
            );
        }
    }
}

fn same_param(a: &Param, b: &Param) -> bool {
    a.location == b.location && if a.location == ParamIn::Header { a.name.eq_ignore_ascii_case(&b.name) } else { a.name == b.name }
}

fn parse_style(s: &str) -> Option<Style> {
    Some(match s {
        "matrix" => Style::Matrix,
        "label" => Style::Label,
        "form" => Style::Form,
        "simple" => Style::Simple,
        "spaceDelimited" => Style::SpaceDelimited,
        "pipeDelimited" => Style::PipeDelimited,
        "deepObject" => Style::DeepObject,
        _ => return None,
    })
}

/// A `security` list: `[]` = no requirement (`None`); `[{}]` = anonymous allowed.
fn security(node: &Node) -> Option<Vec<Vec<SecurityRequirement>>> {
    let Value::Seq(items) = &node.value else { return None };
    if items.is_empty() {
        return None;
    }
    Some(
        items
            .iter()
            .map(|req| match &req.value {
                Value::Map(entries) => entries
                    .iter()
                    .map(|(k, scopes)| SecurityRequirement {
                        scheme: k.name.clone(),
                        scopes: match &scopes.value {
                            Value::Seq(s) => s.iter().filter_map(Node::scalar_text).collect(),
                            _ => Vec::new(),
                        },
                    })
                    .collect(),
                _ => Vec::new(),
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests;
