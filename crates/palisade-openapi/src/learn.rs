//! Learning a spec from traffic: `palisade openapi learn` builds an OpenAPI 3.1 draft from
//! observed requests (and responses, when they were recorded), so that a user can start with no
//! spec, in monitor mode, and converge on one.
//!
//! - **Paths.** Observed paths go into a trie of segments. A segment that has the shape of an
//!   identifier (an integer, a UUID, a long hexadecimal or mixed letters-and-digits token, a
//!   date, an e-mail address) becomes a parameter, and so do the children of a node that has
//!   many distinct literal children each seen rarely (slugs, names). Subtrees merged into one
//!   parameter are merged recursively. A literal seen beside identifiers stays a static route
//!   (`/users/me` beside `/users/{userId}`). Parameters are named after the segment before them
//!   (`/users/{userId}`), else `id`.
//! - **Parameters.** Query parameters by name, typed from their values (integer, number,
//!   boolean, or a string with a format: uuid, date, date-time, email, uri), required when every
//!   request of the operation had them, arrays when repeated; `a[b]=` names grouped into one
//!   `deepObject` parameter.
//! - **Bodies.** JSON bodies merged into one schema per media type: types (with `null` as a
//!   type of its own), object properties (required when present in every sample), array items,
//!   string formats; form bodies as objects of typed fields; other media types accepted as they
//!   are.
//! - **Responses**, when sampled, the same way per status code.
//!
//! Pure: samples in, a `serde_json::Value` document out.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{json, Map, Value};

/// One observed request, and its response when it was recorded.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Sample {
    pub method: String,
    /// The path, without the query.
    pub path: String,
    pub query: Option<String>,
    pub content_type: Option<String>,
    pub body: Vec<u8>,
    pub response: Option<SampleResponse>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SampleResponse {
    pub status: u16,
    pub content_type: Option<String>,
    pub body: Vec<u8>,
}

/// How parameters are told from literals.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// A node with more distinct literal children than this, each seen in at most
    /// `rare_samples` requests, has a parameter there instead.
    pub max_literals: usize,
    pub rare_samples: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options { max_literals: 12, rare_samples: 2 }
    }
}

/// Collects samples and builds the document.
#[derive(Debug, Default)]
pub struct Learner {
    root: Node,
    samples: usize,
    options: Options,
}

#[derive(Debug, Default, Clone)]
struct Node {
    /// Literal segment → child.
    children: BTreeMap<String, Node>,
    /// Method (upper case) → what its requests looked like.
    ops: BTreeMap<String, Op>,
    /// Requests whose path went through this node.
    hits: usize,
    /// For a parameter child: the literal segments it stands for.
    values: Scalars,
}

#[derive(Debug, Default, Clone)]
struct Op {
    count: usize,
    /// Query parameter name → (requests that had it, values, repeated in one request).
    query: BTreeMap<String, Param>,
    /// Media type → body schema.
    bodies: BTreeMap<String, Shape>,
    /// Requests without a body.
    no_body: usize,
    /// Status → media type (empty: no body) → schema.
    responses: BTreeMap<u16, BTreeMap<String, Shape>>,
}

#[derive(Debug, Default, Clone)]
struct Param {
    present: usize,
    values: Scalars,
    repeated: bool,
    /// Sent with an empty value (`?tags=`) at least once.
    empty: bool,
}

/// What the string values of a parameter or field allow.
#[derive(Debug, Clone)]
struct Scalars {
    seen: usize,
    int: bool,
    num: bool,
    boolean: bool,
    formats: [bool; FORMATS.len()],
}

impl Default for Scalars {
    fn default() -> Self {
        Scalars { seen: 0, int: true, num: true, boolean: true, formats: [true; FORMATS.len()] }
    }
}

/// A string format and the test of a value for it.
type FormatTest = (&'static str, fn(&str) -> bool);

const FORMATS: [FormatTest; 5] = [("uuid", is_uuid), ("date-time", is_date_time), ("date", is_date), ("email", is_email), ("uri", is_uri)];

impl Scalars {
    fn add(&mut self, v: &str) {
        self.seen += 1;
        self.int &= is_int(v);
        self.num &= is_int(v) || is_number(v);
        self.boolean &= v == "true" || v == "false";
        for (i, (_, f)) in FORMATS.iter().enumerate() {
            self.formats[i] &= f(v);
        }
    }

    fn merge(&mut self, o: &Scalars) {
        self.seen += o.seen;
        self.int &= o.int;
        self.num &= o.num;
        self.boolean &= o.boolean;
        for i in 0..FORMATS.len() {
            self.formats[i] &= o.formats[i];
        }
    }

    /// The schema of values seen only as text (path, query, form fields).
    fn schema(&self) -> Value {
        if self.seen == 0 {
            return json!({"type": "string"});
        }
        if self.int {
            return json!({"type": "integer"});
        }
        if self.num {
            return json!({"type": "number"});
        }
        if self.boolean {
            return json!({"type": "boolean"});
        }
        match FORMATS.iter().zip(self.formats).find(|(_, ok)| *ok) {
            Some(((name, _), _)) => json!({"type": "string", "format": name}),
            None => json!({"type": "string"}),
        }
    }
}

/// The inferred shape of JSON values seen at one place.
#[derive(Debug, Default, Clone)]
struct Shape {
    seen: usize,
    null: bool,
    boolean: bool,
    int: bool,
    num: bool,
    string: Option<Scalars>,
    array: Option<Box<Shape>>,
    object: Option<Object>,
}

#[derive(Debug, Default, Clone)]
struct Object {
    seen: usize,
    /// Property → (objects that had it, its shape).
    props: BTreeMap<String, (usize, Shape)>,
}

impl Shape {
    fn add(&mut self, v: &Value) {
        self.seen += 1;
        match v {
            Value::Null => self.null = true,
            Value::Bool(_) => self.boolean = true,
            Value::Number(n) => {
                if n.is_i64() || n.is_u64() {
                    self.int = true
                } else {
                    self.num = true
                }
            }
            Value::String(s) => self.string.get_or_insert_with(Scalars::default).add_text(s),
            Value::Array(items) => {
                let a = self.array.get_or_insert_with(Box::default);
                for it in items {
                    a.add(it);
                }
            }
            Value::Object(m) => {
                let o = self.object.get_or_insert_with(Object::default);
                o.seen += 1;
                for (k, v) in m {
                    let e = o.props.entry(k.clone()).or_default();
                    e.0 += 1;
                    e.1.add(v);
                }
            }
        }
    }

    fn merge(&mut self, o: &Shape) {
        self.seen += o.seen;
        self.null |= o.null;
        self.boolean |= o.boolean;
        self.int |= o.int;
        self.num |= o.num;
        match (&mut self.string, &o.string) {
            (Some(a), Some(b)) => a.merge(b),
            (None, Some(b)) => self.string = Some(b.clone()),
            _ => {}
        }
        match (&mut self.array, &o.array) {
            (Some(a), Some(b)) => a.merge(b),
            (None, Some(b)) => self.array = Some(b.clone()),
            _ => {}
        }
        match (&mut self.object, &o.object) {
            (Some(a), Some(b)) => {
                a.seen += b.seen;
                for (k, (n, s)) in &b.props {
                    let e = a.props.entry(k.clone()).or_default();
                    e.0 += n;
                    e.1.merge(s);
                }
            }
            (None, Some(b)) => self.object = Some(b.clone()),
            _ => {}
        }
    }

    fn schema(&self) -> Value {
        let mut types: Vec<&str> = Vec::new();
        let mut out = Map::new();
        if let Some(o) = &self.object {
            types.push("object");
            let mut props = Map::new();
            let mut required = Vec::new();
            for (k, (n, s)) in &o.props {
                props.insert(k.clone(), s.schema());
                if *n == o.seen {
                    required.push(Value::String(k.clone()));
                }
            }
            if !props.is_empty() {
                out.insert("properties".into(), Value::Object(props));
            }
            if !required.is_empty() {
                out.insert("required".into(), Value::Array(required));
            }
        }
        if let Some(a) = &self.array {
            types.push("array");
            out.insert("items".into(), if a.seen == 0 { json!({}) } else { a.schema() });
        }
        if let Some(s) = &self.string {
            types.push("string");
            if let Some(((name, _), _)) = FORMATS.iter().zip(s.formats).find(|(_, ok)| *ok) {
                out.insert("format".into(), Value::String((*name).into()));
            }
        }
        if self.num {
            types.push("number");
        } else if self.int {
            types.push("integer");
        }
        if self.boolean {
            types.push("boolean");
        }
        if self.null {
            types.push("null");
        }
        match types.as_slice() {
            [] => {}
            [one] => {
                out.insert("type".into(), Value::String((*one).into()));
            }
            many => {
                out.insert("type".into(), Value::Array(many.iter().map(|t| Value::String((*t).into())).collect()));
            }
        }
        // A format only holds for strings: with other types it would be ignored, keep it.
        let mut ordered = Map::new();
        if let Some(t) = out.remove("type") {
            ordered.insert("type".into(), t);
        }
        ordered.extend(out);
        Value::Object(ordered)
    }
}

impl Scalars {
    /// A JSON string: its formats only (its type is string whatever it holds).
    fn add_text(&mut self, v: &str) {
        self.seen += 1;
        self.int = false;
        self.num = false;
        self.boolean = false;
        for (i, (_, f)) in FORMATS.iter().enumerate() {
            self.formats[i] &= f(v);
        }
    }
}

impl Learner {
    pub fn new(options: Options) -> Learner {
        Learner { options, ..Learner::default() }
    }

    /// Requests added so far.
    pub fn samples(&self) -> usize {
        self.samples
    }

    pub fn add(&mut self, s: &Sample) {
        self.samples += 1;
        let mut node = &mut self.root;
        node.hits += 1;
        for seg in segments(&s.path) {
            node = node.children.entry(seg.to_string()).or_default();
            node.hits += 1;
        }
        let op = node.ops.entry(s.method.to_ascii_uppercase()).or_default();
        op.count += 1;
        let mut seen: BTreeMap<String, usize> = BTreeMap::new();
        for (k, v) in form_pairs(s.query.as_deref().unwrap_or("")) {
            *seen.entry(k.clone()).or_default() += 1;
            let p = op.query.entry(k).or_default();
            if v.is_empty() {
                p.empty = true;
            } else {
                p.values.add(&v);
            }
        }
        for (k, n) in seen {
            let p = op.query.entry(k).or_default();
            p.present += 1;
            p.repeated |= n > 1;
        }
        if s.body.is_empty() {
            op.no_body += 1;
        } else {
            let media = media_type(s.content_type.as_deref());
            let shape = op.bodies.entry(media.clone()).or_default();
            add_body(shape, &media, &s.body);
        }
        if let Some(r) = &s.response {
            // A response without a body and without a declared type has no content.
            let media = if r.body.is_empty() && r.content_type.is_none() { String::new() } else { media_type(r.content_type.as_deref()) };
            let shape = op.responses.entry(r.status).or_default().entry(media.clone()).or_default();
            if !r.body.is_empty() {
                add_body(shape, &media, &r.body);
            }
        }
    }

    /// The OpenAPI 3.1 document.
    pub fn spec(&self, title: &str) -> Value {
        let mut root = self.root.clone();
        generalise(&mut root, &self.options);
        let mut paths = Map::new();
        let mut names = Vec::new();
        emit(&root, &mut Vec::new(), &mut names, &mut paths);
        json!({
            "openapi": "3.1.0",
            "info": {
                "title": title,
                "version": "0.1.0",
                "description": format!("Learned by `palisade openapi learn` from {} request(s). Review before use: what was not observed is not described.", self.samples),
            },
            "paths": Value::Object(paths),
        })
    }
}

fn add_body(shape: &mut Shape, media: &str, body: &[u8]) {
    if is_json(media) {
        match serde_json::from_slice::<Value>(body) {
            Ok(v) => shape.add(&v),
            Err(_) => shape.seen += 1,
        }
    } else if media == "application/x-www-form-urlencoded" {
        let text = String::from_utf8_lossy(body);
        let mut obj = Map::new();
        for (k, v) in form_pairs(&text) {
            // Form fields are text: typed like query values, then shaped as JSON would be.
            let typed = typed_text(&v);
            match obj.get_mut(&k) {
                Some(Value::Array(a)) => a.push(typed),
                Some(prev) => {
                    let first = prev.take();
                    *prev = Value::Array(vec![first, typed]);
                }
                None => {
                    obj.insert(k, typed);
                }
            }
        }
        shape.add(&Value::Object(obj));
    } else {
        shape.seen += 1;
    }
}

/// A text value as the JSON value it reads as (for form fields).
fn typed_text(v: &str) -> Value {
    if is_int(v) {
        v.parse::<i64>().map(Value::from).unwrap_or_else(|_| Value::String(v.into()))
    } else if is_number(v) {
        v.parse::<f64>().ok().and_then(serde_json::Number::from_f64).map(Value::Number).unwrap_or_else(|| Value::String(v.into()))
    } else if v == "true" || v == "false" {
        Value::Bool(v == "true")
    } else {
        Value::String(v.into())
    }
}

fn is_json(media: &str) -> bool {
    media == "application/json" || media.ends_with("+json")
}

fn media_type(ct: Option<&str>) -> String {
    let m = ct.unwrap_or("application/octet-stream").split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    if m.is_empty() {
        "application/octet-stream".into()
    } else {
        m
    }
}

fn segments(path: &str) -> impl Iterator<Item = &str> {
    path.split('/').filter(|s| !s.is_empty())
}

/// `name=value` pairs of a query string or form body, percent-decoded (`+` as a blank).
pub fn form_pairs(q: &str) -> Vec<(String, String)> {
    q.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (pct_decode(k), pct_decode(v))
        })
        .collect()
}

fn pct_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => match (hex(b[i + 1]), hex(b[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push(h << 4 | l);
                    i += 3;
                    continue;
                }
                _ => out.push(b'%'),
            },
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hex(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

/// Turn identifier-like and rare literal children into a parameter child, recursively.
fn generalise(node: &mut Node, o: &Options) {
    let ids: Vec<String> = node.children.keys().filter(|k| looks_like_id(k)).cloned().collect();
    let literals = node.children.len() - ids.len();
    let rare: Vec<String> = node.children.iter().filter(|(k, c)| !looks_like_id(k) && c.hits <= o.rare_samples).map(|(k, _)| k.clone()).collect();
    let mut merged: Option<Node> = None;
    let mut take = |node: &mut Node, k: &str| {
        if let Some(mut c) = node.children.remove(k) {
            c.values.add(&pct_decode(k));
            match &mut merged {
                Some(m) => merge(m, c),
                None => merged = Some(c),
            }
        }
    };
    for k in &ids {
        take(node, k);
    }
    if literals > o.max_literals && rare.len() * 2 > literals {
        for k in &rare {
            take(node, k);
        }
    }
    if let Some(mut m) = merged {
        // Literal siblings shaped like the parameter (the same methods and the same literal
        // segments below, e.g. `dinner/playlists` beside `{id}/playlists`) and seen no more
        // often are values of it too.
        let sig = signature(&m);
        let alike: Vec<String> =
            node.children.iter().filter(|(_, c)| !sig.is_empty() && signature(c) == sig && c.hits <= m.hits).map(|(k, _)| k.clone()).collect();
        for k in alike {
            if let Some(mut c) = node.children.remove(&k) {
                c.values.add(&pct_decode(&k));
                merge(&mut m, c);
            }
        }
        node.children.insert(PARAM.to_string(), m);
    }
    for c in node.children.values_mut() {
        generalise(c, o);
    }
}

/// What a node offers below it: its methods and its children's literal segments (empty for a
/// bare leaf, which says nothing about what it is).
fn signature(n: &Node) -> Vec<String> {
    if n.children.is_empty() {
        return Vec::new();
    }
    n.ops.keys().map(|m| format!("{m} ")).chain(n.children.keys().filter(|k| !looks_like_id(k)).cloned()).collect()
}

/// The key of a parameter child (not a valid literal segment: segments never hold `{`).
const PARAM: &str = "{}";

fn merge(into: &mut Node, from: Node) {
    into.hits += from.hits;
    into.values.merge(&from.values);
    for (k, c) in from.children {
        match into.children.get_mut(&k) {
            Some(x) => merge(x, c),
            None => {
                into.children.insert(k, c);
            }
        }
    }
    for (m, op) in from.ops {
        let e = into.ops.entry(m).or_default();
        e.count += op.count;
        e.no_body += op.no_body;
        for (k, p) in op.query {
            let q = e.query.entry(k).or_default();
            q.present += p.present;
            q.values.merge(&p.values);
            q.repeated |= p.repeated;
            q.empty |= p.empty;
        }
        for (k, s) in op.bodies {
            e.bodies.entry(k).or_default().merge(&s);
        }
        for (st, by) in op.responses {
            let r = e.responses.entry(st).or_default();
            for (k, s) in by {
                r.entry(k).or_default().merge(&s);
            }
        }
    }
}

/// A path parameter of the current template, with the schema of the segments it stands for.
struct PathParam {
    name: String,
    schema: Value,
}

fn emit(node: &Node, path: &mut Vec<String>, params: &mut Vec<PathParam>, out: &mut Map<String, Value>) {
    if !node.ops.is_empty() {
        let template = if path.is_empty() { "/".to_string() } else { format!("/{}", path.join("/")) };
        let mut item = Map::new();
        for (method, op) in &node.ops {
            item.insert(method.to_ascii_lowercase(), operation(op, params));
        }
        out.insert(template, Value::Object(item));
    }
    for (seg, child) in &node.children {
        if seg == PARAM {
            let base = path.iter().rev().find(|s| !s.starts_with('{')).map(|s| singular(s)).unwrap_or_default();
            let mut name = if base.is_empty() { "id".to_string() } else { format!("{base}Id") };
            let mut n = 2;
            while params.iter().any(|p| p.name == name) {
                name = format!("{}{n}", name.trim_end_matches(char::is_numeric));
                n += 1;
            }
            path.push(format!("{{{name}}}"));
            params.push(PathParam { name, schema: child.values.schema() });
            emit(child, path, params, out);
            params.pop();
        } else {
            path.push(seg.clone());
            emit(child, path, params, out);
        }
        path.pop();
    }
}

fn singular(seg: &str) -> String {
    let word: String = seg.chars().filter(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-').collect();
    let mut parts = word.split(['-', '_']).filter(|p| !p.is_empty());
    let mut out = parts.next().unwrap_or("").to_ascii_lowercase();
    for p in parts {
        let mut c = p.chars();
        if let Some(f) = c.next() {
            out.push(f.to_ascii_uppercase());
            out.push_str(&c.as_str().to_ascii_lowercase());
        }
    }
    if let Some(s) = out.strip_suffix("ies") {
        format!("{s}y")
    } else if out.ends_with("ss") {
        out
    } else if let Some(s) = out.strip_suffix('s') {
        s.to_string()
    } else {
        out
    }
}

fn operation(op: &Op, path_params: &[PathParam]) -> Value {
    let mut params: Vec<Value> = path_params.iter().map(|p| json!({"name": p.name, "in": "path", "required": true, "schema": p.schema})).collect();
    // `a[b]=` names grouped into one deepObject parameter `a`.
    let mut deep: BTreeMap<String, (usize, BTreeMap<String, Value>)> = BTreeMap::new();
    for (name, p) in &op.query {
        if let Some((base, key)) = bracketed(name) {
            let e = deep.entry(base.to_string()).or_default();
            e.0 = e.0.max(p.present);
            e.1.insert(key.to_string(), p.values.schema());
            continue;
        }
        let mut schema = p.values.schema();
        if p.repeated {
            schema = json!({"type": "array", "items": schema});
        }
        let mut v = json!({"name": name, "in": "query", "schema": schema});
        if p.present == op.count {
            v["required"] = Value::Bool(true);
        }
        if p.repeated {
            v["style"] = Value::String("form".into());
            v["explode"] = Value::Bool(true);
        }
        if p.empty {
            v["allowEmptyValue"] = Value::Bool(true);
        }
        params.push(v);
    }
    for (name, (present, props)) in deep {
        let mut v = json!({"name": name, "in": "query", "style": "deepObject", "explode": true, "schema": {"type": "object", "properties": Value::Object(props.into_iter().collect())}});
        if present == op.count {
            v["required"] = Value::Bool(true);
        }
        params.push(v);
    }
    let mut out = Map::new();
    if !params.is_empty() {
        out.insert("parameters".into(), Value::Array(params));
    }
    if !op.bodies.is_empty() {
        let content: Map<String, Value> = op.bodies.iter().map(|(m, s)| (m.clone(), json!({"schema": body_schema(m, s)}))).collect();
        out.insert("requestBody".into(), json!({"required": op.no_body == 0, "content": Value::Object(content)}));
    }
    let mut responses = Map::new();
    for (status, by) in &op.responses {
        let mut r = Map::new();
        r.insert("description".into(), Value::String(format!("Observed {status}")));
        let content: Map<String, Value> = by.iter().filter(|(m, _)| !m.is_empty()).map(|(m, s)| (m.clone(), json!({"schema": body_schema(m, s)}))).collect();
        if !content.is_empty() {
            r.insert("content".into(), Value::Object(content));
        }
        responses.insert(status.to_string(), Value::Object(r));
    }
    if responses.is_empty() {
        responses.insert("default".into(), json!({"description": "Responses were not observed"}));
    }
    out.insert("responses".into(), Value::Object(responses));
    Value::Object(out)
}

fn body_schema(media: &str, s: &Shape) -> Value {
    if is_json(media) || media == "application/x-www-form-urlencoded" {
        s.schema()
    } else {
        json!({})
    }
}

fn bracketed(name: &str) -> Option<(&str, &str)> {
    let (base, rest) = name.split_once('[')?;
    let key = rest.strip_suffix(']')?;
    (!base.is_empty() && !key.is_empty() && !key.contains(['[', ']'])).then_some((base, key))
}

/// A path segment with the shape of an identifier or a value rather than a name. Route names
/// are made of unreserved ASCII (RFC 3986: letters, digits, `- . _ ~`); a segment with any other
/// byte (percent-escapes, non-ASCII, `@`, `+`, `:`) holds data.
pub fn looks_like_id(seg: &str) -> bool {
    let b = seg.as_bytes();
    if b.is_empty() {
        return false;
    }
    if !b.iter().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_' | b'~')) {
        return true;
    }
    let digits = b.iter().filter(|c| c.is_ascii_digit()).count();
    b.iter().all(u8::is_ascii_digit)
        || is_uuid(seg)
        || is_date(seg)
        || (b.len() >= 8 && digits > 0 && b.iter().all(|c| c.is_ascii_hexdigit()))
        || (b.len() >= 12 && digits >= 2 && b.iter().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_')))
        || (b.len() >= 16
            && b.iter().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_'))
            && b.iter().any(u8::is_ascii_uppercase)
            && b.iter().any(u8::is_ascii_lowercase))
}

fn is_int(v: &str) -> bool {
    let d = v.strip_prefix('-').unwrap_or(v);
    !d.is_empty() && d.len() <= 18 && d.bytes().all(|b| b.is_ascii_digit()) && (d == "0" || !d.starts_with('0'))
}

fn is_number(v: &str) -> bool {
    !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit() || matches!(b, b'-' | b'+' | b'.' | b'e' | b'E')) && v.parse::<f64>().is_ok_and(f64::is_finite)
}

fn is_uuid(v: &str) -> bool {
    let b = v.as_bytes();
    b.len() == 36 && b.iter().enumerate().all(|(i, c)| if matches!(i, 8 | 13 | 18 | 23) { *c == b'-' } else { c.is_ascii_hexdigit() })
}

fn is_date(v: &str) -> bool {
    if !v.is_ascii() {
        return false;
    }
    let b = v.as_bytes();
    b.len() == 10 && b[4] == b'-' && b[7] == b'-' && b.iter().enumerate().all(|(i, c)| matches!(i, 4 | 7) || c.is_ascii_digit()) && {
        let m: u32 = v[5..7].parse().unwrap_or(0);
        let d: u32 = v[8..10].parse().unwrap_or(0);
        (1..=12).contains(&m) && (1..=31).contains(&d)
    }
}

fn is_date_time(v: &str) -> bool {
    // RFC 3339: date, `T`, hh:mm:ss, optional fraction, `Z` or an offset.
    if !v.is_ascii() || v.len() < 20 || !is_date(&v[..10]) || !matches!(v.as_bytes()[10], b'T' | b't') {
        return false;
    }
    let t = &v[11..];
    let b = t.as_bytes();
    if b.len() < 9 || b[2] != b':' || b[5] != b':' || ![0, 1, 3, 4, 6, 7].iter().all(|&i| b[i].is_ascii_digit()) {
        return false;
    }
    let mut rest = &t[8..];
    if let Some(f) = rest.strip_prefix('.') {
        let n = f.bytes().take_while(u8::is_ascii_digit).count();
        if n == 0 {
            return false;
        }
        rest = &f[n..];
    }
    matches!(rest, "Z" | "z") || (rest.len() == 6 && matches!(rest.as_bytes()[0], b'+' | b'-') && rest.as_bytes()[3] == b':')
}

fn is_email(v: &str) -> bool {
    let Some((local, domain)) = v.rsplit_once('@') else { return false };
    !local.is_empty() && domain.contains('.') && !domain.starts_with('.') && !domain.ends_with('.') && !v.contains(char::is_whitespace)
}

fn is_uri(v: &str) -> bool {
    (v.starts_with("http://") || v.starts_with("https://")) && v.len() > 8 && !v.contains(char::is_whitespace)
}

/// Samples from a HAR file (HTTP Archive 1.2: `log.entries[].request` and `.response`).
pub fn har_samples(text: &[u8]) -> Result<Vec<Sample>, crate::Error> {
    use crate::{Error, ErrorKind};
    let v: Value = serde_json::from_slice(text).map_err(|e| Error::caused_by(ErrorKind::Har, format!("not a HAR file (JSON): {e}"), e))?;
    let entries = v.pointer("/log/entries").and_then(Value::as_array).ok_or_else(|| Error::new(ErrorKind::Har, "not a HAR file: no log.entries"))?;
    let mut out = Vec::with_capacity(entries.len());
    for (i, e) in entries.iter().enumerate() {
        let missing = |what: &str| Error::new(ErrorKind::Har, format!("no {what}")).context(format_args!("entry {i}"));
        let req = e.get("request").ok_or_else(|| missing("request"))?;
        let method = req.get("method").and_then(Value::as_str).ok_or_else(|| missing("request method"))?;
        let url = req.get("url").and_then(Value::as_str).ok_or_else(|| missing("request url"))?;
        let (path, query) = split_url(url);
        let header = |m: &Value, name: &str| {
            m.get("headers").and_then(Value::as_array).and_then(|hs| {
                hs.iter()
                    .find(|h| h.get("name").and_then(Value::as_str).is_some_and(|n| n.eq_ignore_ascii_case(name)))
                    .and_then(|h| h.get("value"))
                    .and_then(Value::as_str)
                    .map(String::from)
            })
        };
        let post = req.get("postData");
        let content_type = post.and_then(|p| p.get("mimeType")).and_then(Value::as_str).map(String::from).or_else(|| header(req, "content-type"));
        let body = post.and_then(|p| p.get("text")).and_then(Value::as_str).map(|t| t.as_bytes().to_vec()).unwrap_or_default();
        let response = e.get("response").and_then(|r| {
            let status = r.get("status").and_then(Value::as_u64).filter(|s| (100..=599).contains(s))? as u16;
            let content = r.get("content");
            let text = content.and_then(|c| c.get("text")).and_then(Value::as_str).unwrap_or("");
            let base64 = content.and_then(|c| c.get("encoding")).and_then(Value::as_str) == Some("base64");
            Some(SampleResponse {
                status,
                content_type: content.and_then(|c| c.get("mimeType")).and_then(Value::as_str).map(String::from).or_else(|| header(r, "content-type")),
                // Base64 content is binary: its shape is not learned.
                body: if base64 { Vec::new() } else { text.as_bytes().to_vec() },
            })
        });
        out.push(Sample { method: method.to_string(), path, query, content_type, body, response });
    }
    Ok(out)
}

/// Path and query of an absolute URL or an origin-form target.
pub fn split_url(url: &str) -> (String, Option<String>) {
    let rest = match url.find("://") {
        Some(i) => {
            let after = &url[i + 3..];
            after.find('/').map_or("/", |j| &after[j..])
        }
        None => url,
    };
    let rest = rest.split('#').next().unwrap_or(rest);
    match rest.split_once('?') {
        Some((p, q)) => (if p.is_empty() { "/".into() } else { p.to_string() }, Some(q.to_string())),
        None => (if rest.is_empty() { "/".into() } else { rest.to_string() }, None),
    }
}

/// Every path template and method of a spec document (for comparing a learned spec with one).
pub fn operations(doc: &Value) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    if let Some(paths) = doc.get("paths").and_then(Value::as_object) {
        for (p, item) in paths {
            if let Some(item) = item.as_object() {
                for m in ["get", "put", "post", "delete", "options", "head", "patch", "trace"] {
                    if item.contains_key(m) {
                        out.insert((m.to_ascii_uppercase(), p.clone()));
                    }
                }
            }
        }
    }
    out
}

/// The request of a sample, as the judge reads requests.
pub fn request_of(s: &Sample) -> palisade_core::rawhttp::OwnedRequest {
    let mut headers = http::HeaderMap::new();
    if let Some(ct) = s.content_type.as_deref().and_then(|c| http::HeaderValue::from_str(c).ok()) {
        headers.insert(http::header::CONTENT_TYPE, ct);
    }
    if !s.body.is_empty() {
        headers.insert(http::header::CONTENT_LENGTH, http::HeaderValue::from(s.body.len()));
    }
    palisade_core::rawhttp::OwnedRequest {
        method: http::Method::from_bytes(s.method.to_ascii_uppercase().as_bytes()).unwrap_or(http::Method::GET),
        path: s.path.clone(),
        query: s.query.clone(),
        headers,
        body: s.body.clone(),
    }
}

/// What a spec does not describe in observed traffic (`palisade openapi diff`).
#[derive(Debug, Default)]
pub struct Diff {
    /// Requests the spec has no operation for, learned into templates: (method, template) →
    /// requests.
    pub shadow_endpoints: BTreeMap<(String, String), usize>,
    /// (operation, finding code, location with indexes as `*`) → requests.
    pub undescribed: BTreeMap<(String, String, String), usize>,
    pub requests: usize,
    /// Requests the spec describes fully.
    pub described: usize,
}

/// Judge every sample against `judge` (built with unknown query parameters and body fields
/// reported) and sort what it does not describe.
pub fn diff(judge: &crate::judge::Judge, samples: &[Sample]) -> Diff {
    let mut d = Diff { requests: samples.len(), ..Diff::default() };
    let mut unrouted = Learner::new(Options::default());
    for s in samples {
        let req = request_of(s);
        let mut out = Vec::new();
        let op = judge.check_request(&req.view(), crate::judge::Phase::Whole, &mut out);
        if out.is_empty() {
            d.described += 1;
            continue;
        }
        if out.iter().any(|f| f.code == crate::judge::code::PATH_NOT_FOUND || f.code == crate::judge::code::METHOD_NOT_ALLOWED) {
            unrouted.add(s);
            continue;
        }
        let name = op.map(|i| judge.operation_name(i).to_string()).unwrap_or_default();
        let mut seen = BTreeSet::new();
        for f in out {
            let loc = f
                .location
                .split('/')
                .map(|seg| if !seg.is_empty() && seg.bytes().all(|b| b.is_ascii_digit()) { "*" } else { seg })
                .collect::<Vec<_>>()
                .join("/");
            if seen.insert((f.code, loc.clone())) {
                *d.undescribed.entry((name.clone(), f.code.to_string(), loc)).or_default() += 1;
            }
        }
    }
    if unrouted.samples() > 0 {
        let spec = unrouted.spec("shadow");
        let counts = count_by_template(&spec, samples, judge);
        d.shadow_endpoints = counts;
    }
    d
}

/// Requests per (method, template) of a learned document, for the samples the judge does not
/// route.
fn count_by_template(spec: &Value, samples: &[Sample], judge: &crate::judge::Judge) -> BTreeMap<(String, String), usize> {
    let templates: Vec<(String, String)> = operations(spec).into_iter().collect();
    let mut out = BTreeMap::new();
    for s in samples {
        let req = request_of(s);
        let mut f = Vec::new();
        judge.check_request(&req.view(), crate::judge::Phase::Head, &mut f);
        if !f.iter().any(|f| f.code == crate::judge::code::PATH_NOT_FOUND || f.code == crate::judge::code::METHOD_NOT_ALLOWED) {
            continue;
        }
        let m = s.method.to_ascii_uppercase();
        let hit = templates.iter().filter(|(tm, _)| *tm == m).find(|(_, t)| template_matches(t, &s.path));
        let key = hit.cloned().unwrap_or((m, s.path.clone()));
        *out.entry(key).or_default() += 1;
    }
    out
}

/// Whether a learned template (`/users/{userId}`) matches a path, segment by segment.
pub fn template_matches(template: &str, path: &str) -> bool {
    let t: Vec<&str> = segments(template).collect();
    let p: Vec<&str> = segments(path).collect();
    t.len() == p.len() && t.iter().zip(&p).all(|(t, p)| t.starts_with('{') || t == p)
}

#[cfg(test)]
mod tests;
