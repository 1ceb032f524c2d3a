//! Loading a spec: the entry document and every document its `$ref`s reach, parsed into a
//! located tree (JSON documents by a JSON parser, YAML ones by the YAML parser; both keep the
//! line and column of every node), with references resolved and checked.
//!
//! - Documents come from a caller-supplied [`Fetch`] ([`FsFetch`] reads files; the proxy
//!   supplies http(s)). Locations are absolute file paths or http(s) URLs; a relative `$ref` is
//!   resolved against the location of the document that contains it (RFC 3986 rules for URLs,
//!   lexical `.`/`..` removal for files; `file://` URLs are files).
//! - A spec read from a file never leads to the network: a reference to an http(s) document
//!   in it is an error unless [`Limits::remote_refs`] allows it. A spec fetched by URL may
//!   refer to other URLs, and not to local files (`file:///etc/...`).
//! - `$ref` forms: `#/json/pointer` (with `~0`, `~1` and percent-encoding), `other.yaml#/X`,
//!   `../models/pet.yaml` (the whole document). Plain-name fragments (`#foo`, 3.1 `$anchor`)
//!   are left to the schema compiler.
//! - A chain of references that loops back on itself (`A: {$ref: B}`, `B: {$ref: A}`) is an
//!   error that prints the chain; a recursive schema (a `$ref` *inside* the schema it names) is
//!   fine.
//! - `$ref` is a reference only where the spec defines one: in the OpenAPI objects that may be
//!   Reference Objects (path items, parameters, responses, examples...) and in Schema Objects,
//!   found by walking the document from its root by object kind and JSON Schema keyword. A
//!   `$ref` key anywhere else is data: inside `example`, `examples.*.value`, `default`,
//!   `enum`, `const`, `x-*` extensions, unknown keywords, and as a name in `properties`.
//!   Discriminator `mapping` values that name other documents are loaded too.
//! - [`Limits`] bound the number of documents, their total size and nesting, and the length of a
//!   reference chain.
//! - Loading collects every error it can ([`SpecError`]s) rather than stopping at the first;
//!   the structure checks in [`crate::check`] run on a spec whose references all resolve.

use std::collections::{HashMap, HashSet, VecDeque};

use palisade_config::yaml::{self, Node, Origin, Value};
use palisade_schema::{DocId, Resolved, Resolver};

use crate::error::{push_token, Error, ErrorKind, SpecError, Warning};
use crate::model::Version;

/// Where documents come from. `location` is an absolute file path or an http(s) URL.
pub trait Fetch {
    fn fetch(&self, location: &str) -> Result<String, FetchError>;
}

/// Why a document could not be fetched; `line` and `col` (1-based, 0 when unknown) point into
/// the document when it was read but is not text (invalid UTF-8, a control character).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FetchError {
    pub message: String,
    pub line: usize,
    pub col: usize,
}

impl From<String> for FetchError {
    fn from(message: String) -> Self {
        FetchError { message, line: 0, col: 0 }
    }
}

impl From<&str> for FetchError {
    fn from(message: &str) -> Self {
        message.to_string().into()
    }
}

impl From<palisade_config::read::ReadError> for FetchError {
    fn from(e: palisade_config::read::ReadError) -> Self {
        match e {
            palisade_config::read::ReadError::NotText { line, col, message } => FetchError { message, line, col },
            other => other.to_string().into(),
        }
    }
}

impl std::fmt::Display for FetchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.line > 0 {
            write!(f, "{}:{}: ", self.line, self.col)?;
        }
        f.write_str(&self.message)
    }
}

/// Reads files (at most [`palisade_config::read::MAX_FILE_BYTES`] each, checked while
/// reading); refuses URLs (the proxy supplies an http fetcher).
#[derive(Clone, Copy, Debug, Default)]
pub struct FsFetch;

impl Fetch for FsFetch {
    fn fetch(&self, location: &str) -> Result<String, FetchError> {
        if is_url(location) {
            return Err("fetching over http(s) is not available here".into());
        }
        Ok(palisade_config::read::read_text(std::path::Path::new(location), palisade_config::read::MAX_FILE_BYTES)?)
    }
}

/// Bounds on what one spec may pull in.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Documents, the entry one included.
    pub max_documents: usize,
    /// Bytes of all documents together.
    pub max_total_bytes: usize,
    /// Nesting depth of one document.
    pub max_depth: usize,
    /// References followed one after another (`A → B → C`) before giving up.
    pub max_ref_chain: usize,
    /// Whether a spec read from a file may refer to documents over http(s). A spec fetched
    /// by URL may always refer to other URLs.
    pub remote_refs: bool,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_documents: 10_000, max_total_bytes: 32 << 20, max_depth: 512, max_ref_chain: 32, remote_refs: false }
    }
}

/// One parsed document.
#[derive(Debug)]
pub struct Document {
    /// Normalised absolute path or URL; also the `file` of errors.
    pub location: String,
    pub root: Node,
}

/// A `$ref` found while loading.
#[derive(Debug, Clone)]
pub struct RefSite {
    pub doc: DocId,
    /// Pointer of the object that holds the `$ref`.
    pub pointer: String,
    pub origin: Origin,
    pub target: String,
}

/// A loaded spec: the entry document (id 0) and the documents its references reach.
#[derive(Debug)]
pub struct SpecSet {
    pub docs: Vec<Document>,
    /// The version the entry document declares.
    pub version: Version,
    /// The `openapi` field as written (`3.0.3`).
    pub version_text: String,
    /// Every `$ref` of every document.
    pub refs: Vec<RefSite>,
    /// Warnings found while loading and checking (see [`crate::lint`]).
    pub warnings: Vec<Warning>,
    index: HashMap<String, DocId>,
    max_ref_chain: usize,
}

pub(crate) fn is_url(s: &str) -> bool {
    let l = s.get(..8).unwrap_or(s).to_ascii_lowercase();
    l.starts_with("http://") || l.starts_with("https://")
}

/// Remove `.` and `..` segments (RFC 3986 section 5.2.4) from a `/`-separated path.
fn remove_dot_segments(path: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    let absolute = path.starts_with('/');
    let segs: Vec<&str> = path.split('/').collect();
    for (i, seg) in segs.iter().enumerate() {
        let last = i + 1 == segs.len();
        match *seg {
            "." => {
                if last {
                    out.push("");
                }
            }
            ".." => {
                if out.len() > usize::from(absolute) {
                    out.pop();
                }
                if last {
                    out.push("");
                }
            }
            s => out.push(s),
        }
    }
    let mut s = out.join("/");
    if absolute && !s.starts_with('/') {
        s.insert(0, '/');
    }
    s
}

/// Resolve `reference` (without fragment) against the document location `base`.
pub fn join_location(base: &str, reference: &str) -> String {
    if reference.is_empty() {
        return base.to_string();
    }
    if is_url(reference) {
        return normalise_url(reference);
    }
    if let Some(path) = reference.strip_prefix("file://") {
        return remove_dot_segments(&decode_lossy(path));
    }
    if is_url(base) {
        let scheme_end = base.find("://").map_or(0, |i| i + 3);
        let authority_end = base[scheme_end..].find('/').map_or(base.len(), |i| scheme_end + i);
        let base_path = &base[authority_end..];
        let base_path = base_path.split(['?', '#']).next().unwrap_or("");
        if let Some(rest) = reference.strip_prefix("//") {
            return normalise_url(&format!("{}{}", &base[..scheme_end], rest));
        }
        let (ref_path, query) = match reference.find('?') {
            Some(i) => (&reference[..i], &reference[i..]),
            None => (reference, ""),
        };
        let merged = if ref_path.starts_with('/') {
            ref_path.to_string()
        } else {
            let dir = base_path.rfind('/').map_or("/", |i| &base_path[..=i]);
            format!("{dir}{ref_path}")
        };
        return format!("{}{}{}", &base[..authority_end], remove_dot_segments(&merged), query);
    }
    let path = decode_lossy(reference);
    if path.starts_with('/') {
        return remove_dot_segments(&path);
    }
    let dir = base.rfind('/').map_or("", |i| &base[..=i]);
    remove_dot_segments(&format!("{dir}{path}"))
}

fn normalise_url(u: &str) -> String {
    let scheme_end = u.find("://").map_or(0, |i| i + 3);
    let authority_end = u[scheme_end..].find('/').map_or(u.len(), |i| scheme_end + i);
    let scheme = u[..scheme_end].to_ascii_lowercase();
    let authority = u[scheme_end..authority_end].to_ascii_lowercase();
    let rest = &u[authority_end..];
    let (path, query) = match rest.find('?') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    format!("{scheme}{authority}{}{query}", remove_dot_segments(path))
}

fn decode_lossy(s: &str) -> String {
    match crate::router::percent_decode(s) {
        Ok(d) => d.into_owned(),
        Err(_) => s.to_string(),
    }
}

/// What a node of a spec is, for finding its references: `$ref` is a reference only where the
/// OpenAPI object or JSON Schema keyword at that place allows one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum ObjKind {
    Document,
    Components,
    /// A mapping of names to objects of one kind (`paths`, `components.schemas`,
    /// `properties`...): `$ref` is a name there, not a reference.
    MapOf(&'static ObjKind),
    ListOf(&'static ObjKind),
    PathItem,
    Operation,
    Callback,
    Parameter,
    Header,
    RequestBody,
    Response,
    MediaType,
    Encoding,
    /// Example, Link, Security Scheme: a Reference Object or data.
    Leaf,
    Schema,
}

use ObjKind as K;

const HTTP_METHODS: &[&str] = &["get", "put", "post", "delete", "options", "head", "patch", "trace"];

/// The kind of the value of `key` in an object of kind `kind`; `None` for data (examples,
/// defaults, enums, extensions, unknown keywords).
fn child_kind(kind: ObjKind, key: &str) -> Option<ObjKind> {
    if key.starts_with("x-") {
        return None;
    }
    Some(match (kind, key) {
        (K::MapOf(k), _) => *k,
        (K::ListOf(k), _) => *k,
        (K::Document, "paths" | "webhooks") => K::MapOf(&K::PathItem),
        (K::Document, "components") => K::Components,
        (K::Components, "schemas") => K::MapOf(&K::Schema),
        (K::Components, "responses") => K::MapOf(&K::Response),
        (K::Components, "parameters") => K::MapOf(&K::Parameter),
        (K::Components, "requestBodies") => K::MapOf(&K::RequestBody),
        (K::Components, "headers") => K::MapOf(&K::Header),
        (K::Components, "callbacks") => K::MapOf(&K::Callback),
        (K::Components, "pathItems") => K::MapOf(&K::PathItem),
        (K::Components, "examples" | "links" | "securitySchemes") => K::MapOf(&K::Leaf),
        (K::PathItem | K::Operation, "parameters") => K::ListOf(&K::Parameter),
        (K::PathItem, m) if HTTP_METHODS.contains(&m) => K::Operation,
        (K::Operation, "requestBody") => K::RequestBody,
        (K::Operation, "responses") => K::MapOf(&K::Response),
        (K::Operation, "callbacks") => K::MapOf(&K::Callback),
        (K::Callback, _) => K::PathItem,
        (K::Parameter | K::Header | K::MediaType, "schema") => K::Schema,
        (K::Parameter | K::Header | K::RequestBody | K::Response, "content") => K::MapOf(&K::MediaType),
        (K::Parameter | K::Header | K::MediaType, "examples") => K::MapOf(&K::Leaf),
        (K::MediaType, "encoding") => K::MapOf(&K::Encoding),
        (K::Encoding | K::Response, "headers") => K::MapOf(&K::Header),
        (K::Response, "links") => K::MapOf(&K::Leaf),
        (K::Schema, k) => return schema_child(k),
        _ => return None,
    })
}

/// JSON Schema keywords (draft 4 to 2020-12) whose values hold subschemas.
fn schema_child(key: &str) -> Option<ObjKind> {
    Some(match key {
        "items"
        | "additionalItems"
        | "additionalProperties"
        | "not"
        | "if"
        | "then"
        | "else"
        | "contains"
        | "propertyNames"
        | "unevaluatedItems"
        | "unevaluatedProperties"
        | "contentSchema" => K::Schema,
        "properties" | "patternProperties" | "$defs" | "definitions" | "dependentSchemas" | "dependencies" => K::MapOf(&K::Schema),
        "allOf" | "anyOf" | "oneOf" | "prefixItems" => K::ListOf(&K::Schema),
        _ => return None,
    })
}

/// A reference found by [`walk`]: a `$ref` (`is_ref`) or a discriminator `mapping` value,
/// with the kind of object its target is.
struct Found {
    site: RefSite,
    kind: ObjKind,
    is_ref: bool,
}

/// Find the references of `node` (of kind `kind`) and below it.
fn walk(doc: DocId, node: &Node, pointer: &mut String, kind: ObjKind, out: &mut Vec<Found>) {
    match &node.value {
        Value::Map(entries) => {
            let container = matches!(kind, K::MapOf(_) | K::ListOf(_) | K::Document | K::Components);
            if !container {
                if let Some(Value::Str(s)) = node.get("$ref").map(|n| &n.value) {
                    let origin = node.get("$ref").map_or(node.origin.clone(), |n| n.origin.clone());
                    out.push(Found { site: RefSite { doc, pointer: pointer.clone(), origin, target: s.clone() }, kind, is_ref: true });
                    // A Reference Object's other fields are not looked at; a schema's and a
                    // path item's siblings of `$ref` are.
                    if !matches!(kind, K::Schema | K::PathItem) {
                        return;
                    }
                }
            }
            for (k, v) in entries {
                if k.name == "$ref" && !container {
                    continue;
                }
                if kind == K::Schema && k.name == "discriminator" {
                    if let Some(Value::Map(m)) = v.get("mapping").map(|m| &m.value) {
                        for (mk, mv) in m {
                            if let Value::Str(t) = &mv.value {
                                if t.contains(['/', '#']) {
                                    let p = push_token(&push_token(&push_token(pointer, "discriminator"), "mapping"), &mk.name);
                                    out.push(Found {
                                        site: RefSite { doc, pointer: p, origin: mv.origin.clone(), target: t.clone() },
                                        kind: K::Schema,
                                        is_ref: false,
                                    });
                                }
                            }
                        }
                    }
                    continue;
                }
                let Some(child) = (match kind {
                    K::MapOf(c) => Some(*c),
                    K::ListOf(_) => None,
                    _ => child_kind(kind, &k.name),
                }) else {
                    continue;
                };
                let len = pointer.len();
                *pointer = push_token(pointer, &k.name);
                walk(doc, v, pointer, child, out);
                pointer.truncate(len);
            }
        }
        Value::Seq(items) => {
            let child = match kind {
                K::ListOf(c) => *c,
                // draft 4 tuple `items`, `dependencies` lists of names
                K::Schema => K::Schema,
                _ => return,
            };
            for (i, v) in items.iter().enumerate() {
                let len = pointer.len();
                pointer.push('/');
                pointer.push_str(&i.to_string());
                walk(doc, v, pointer, child, out);
                pointer.truncate(len);
            }
        }
        _ => {}
    }
}

/// Evaluate a (percent-decoded) JSON pointer; the target and its canonical pointer.
pub fn eval_pointer<'a>(root: &'a Node, pointer: &str) -> Result<(&'a Node, String), Error> {
    let err = |m: String| Error::new(ErrorKind::Reference, m);
    if pointer.is_empty() {
        return Ok((root, String::new()));
    }
    let Some(rest) = pointer.strip_prefix('/') else {
        return Err(err(format!("fragment {pointer:?} is not a JSON pointer (plain-name fragments / $anchor are not supported)")));
    };
    let mut node = root;
    let mut canon = String::new();
    for raw in rest.split('/') {
        if raw.contains('~') {
            let b = raw.as_bytes();
            if b.iter().enumerate().any(|(i, &c)| c == b'~' && !matches!(b.get(i + 1), Some(b'0' | b'1'))) {
                return Err(err(format!("invalid escape in JSON pointer token {raw:?} (only ~0 and ~1)")));
            }
        }
        let token = raw.replace("~1", "/").replace("~0", "~");
        node = match &node.value {
            Value::Map(entries) => match entries.iter().find(|(k, _)| k.name == token) {
                Some((_, v)) => v,
                None => return Err(err(format!("no {token:?} at {}", if canon.is_empty() { "the document root" } else { &canon }))),
            },
            Value::Seq(items) => {
                let i = token.parse::<usize>().ok().filter(|_| token == "0" || !token.starts_with('0'));
                match i.and_then(|i| items.get(i)) {
                    Some(v) => v,
                    None => return Err(err(format!("no item {token:?} in the list at {}", if canon.is_empty() { "/" } else { &canon }))),
                }
            }
            _ => return Err(err(format!("{} is {}, not a mapping or list", if canon.is_empty() { "/" } else { &canon }, node.kind()))),
        };
        canon = push_token(&canon, &token);
    }
    Ok((node, canon))
}

impl SpecSet {
    /// The entry document.
    pub fn entry(&self) -> &Document {
        &self.docs[0]
    }

    pub fn doc(&self, id: DocId) -> &Document {
        &self.docs[id as usize]
    }

    /// Document id of a loaded location.
    pub fn doc_id(&self, location: &str) -> Option<DocId> {
        self.index.get(location).copied()
    }

    /// Resolve one reference found in document `base` (one step: the target may itself be a
    /// `$ref`).
    pub fn resolve_ref(&self, base: DocId, reference: &str) -> Result<Resolved<'_>, Error> {
        let (doc_part, fragment) = reference.split_once('#').unwrap_or((reference, ""));
        let doc = if doc_part.is_empty() {
            base
        } else {
            let loc = join_location(&self.doc(base).location, doc_part);
            self.doc_id(&loc).ok_or_else(|| Error::new(ErrorKind::Reference, format!("document {loc} is not loaded")))?
        };
        let fragment = crate::router::percent_decode(fragment)
            .map_err(|e| Error::caused_by(ErrorKind::Reference, e.to_string(), e).context(format_args!("fragment of {reference:?}")))?;
        let (node, pointer) = eval_pointer(&self.doc(doc).root, &fragment).map_err(|e| Error::new(e.kind(), format!("{e} in {}", self.doc(doc).location)))?;
        Ok(Resolved { doc, pointer, node })
    }

    /// Follow `$ref`s from `node` (at `doc`/`pointer`) until a node that is not a reference.
    /// Returns the final document, pointer and node (the input when it is not a reference).
    pub fn deref<'a>(&'a self, doc: DocId, pointer: &str, node: &'a Node) -> Result<(DocId, String, &'a Node), Error> {
        let (mut doc, mut pointer, mut node) = (doc, pointer.to_string(), node);
        let mut seen: Vec<(DocId, String)> = Vec::new();
        while let Some(Value::Str(r)) = node.get("$ref").map(|n| &n.value) {
            if seen.iter().any(|(d, p)| *d == doc && *p == pointer) || seen.len() > self.max_ref_chain {
                return Err(Error::new(ErrorKind::Reference, format!("reference chain too long or cyclic at {r:?}")));
            }
            seen.push((doc, pointer.clone()));
            let t = self.resolve_ref(doc, r)?;
            (doc, pointer, node) = (t.doc, t.pointer, t.node);
        }
        Ok((doc, pointer, node))
    }
}

impl Resolver for SpecSet {
    fn resolve(&self, base: DocId, reference: &str) -> Result<Resolved<'_>, palisade_schema::Error> {
        self.resolve_ref(base, reference).map_err(|e| palisade_schema::Error::new(palisade_schema::ErrorKind::Reference, e.message()))
    }
}

/// Load the spec at `location` (a file path, made absolute against the current directory, or
/// an http(s) URL) and every document it references, then check its structure.
pub fn load(location: &str, fetch: &dyn Fetch, limits: &Limits) -> Result<SpecSet, Vec<SpecError>> {
    let location = absolute_location(location);
    let text =
        fetch.fetch(&location).map_err(|e| vec![SpecError { file: location.clone(), line: e.line, col: e.col, pointer: String::new(), message: e.message }])?;
    let root = parse_entry(&location, &text, limits)?;
    let len = text.len();
    drop(text); // the tree is what the rest needs: do not hold both
    load_root(location, root, len, fetch, limits)
}

/// Like [`load`] with the entry document's text given (its location still resolves relative
/// references).
pub fn load_str(location: &str, text: &str, fetch: &dyn Fetch, limits: &Limits) -> Result<SpecSet, Vec<SpecError>> {
    let location = absolute_location(location);
    let root = parse_entry(&location, text, limits)?;
    load_root(location, root, text.len(), fetch, limits)
}

fn parse_entry(location: &str, text: &str, limits: &Limits) -> Result<Node, Vec<SpecError>> {
    if text.len() > limits.max_total_bytes {
        return Err(vec![SpecError {
            file: location.to_string(),
            line: 0,
            col: 0,
            pointer: String::new(),
            message: format!("document is {} bytes, more than the limit of {} bytes", text.len(), limits.max_total_bytes),
        }]);
    }
    parse(location, text, limits).map_err(|e| vec![e])
}

/// Load what the parsed entry document `root` (of `entry_len` bytes) references, and check it.
fn load_root(location: String, root: Node, entry_len: usize, fetch: &dyn Fetch, limits: &Limits) -> Result<SpecSet, Vec<SpecError>> {
    let mut errors = Vec::new();
    let (version, version_text) = match entry_version(&location, &root) {
        Ok(v) => v,
        Err(e) => return Err(vec![e]),
    };
    let mut set = SpecSet {
        docs: vec![Document { location: location.clone(), root }],
        version,
        version_text,
        refs: Vec::new(),
        warnings: Vec::new(),
        index: HashMap::from([(location, 0)]),
        max_ref_chain: limits.max_ref_chain,
    };
    let mut total = entry_len;
    let mut queue: VecDeque<(DocId, String, ObjKind)> = VecDeque::from([(0, String::new(), K::Document)]);
    let mut walked: HashSet<(DocId, String, ObjKind)> = HashSet::new();
    let mut sites_seen: HashSet<(DocId, String)> = HashSet::new();
    let mut failed: HashSet<String> = HashSet::new();
    let local_spec = !is_url(&set.docs[0].location);
    while let Some((d, ptr, kind)) = queue.pop_front() {
        if !walked.insert((d, ptr.clone(), kind)) {
            continue;
        }
        let mut found = Vec::new();
        if let Ok((node, _)) = eval_pointer(&set.docs[d as usize].root, &ptr) {
            walk(d, node, &mut ptr.clone(), kind, &mut found);
        }
        for Found { site, kind, is_ref } in found {
            let (doc_part, fragment) = site.target.split_once('#').unwrap_or((site.target.as_str(), ""));
            let target_doc = if doc_part.is_empty() {
                Some(d)
            } else {
                let loc = join_location(&set.docs[d as usize].location, doc_part);
                if let Some(&id) = set.index.get(&loc) {
                    Some(id)
                } else if failed.contains(&loc) {
                    None
                } else {
                    let here = &set.docs[d as usize].location;
                    let site_err = |message: String| {
                        let at = if is_ref { push_token(&site.pointer, "$ref") } else { site.pointer.clone() };
                        SpecError::new(here, &site.origin, &at, message)
                    };
                    let loaded = if local_spec && is_url(&loc) && !limits.remote_refs {
                        Err(site_err(format!(
                            "reference to the remote document {loc} in a spec read from a file: Palisade does not use the network for a local spec (save the document beside the spec and refer to it by path, or set openapi.remote_refs: true)"
                        )))
                    } else if !local_spec && !is_url(&loc) {
                        Err(site_err(format!("reference to the local file {loc} in a spec fetched by URL: a remote spec may only refer to URLs")))
                    } else if set.docs.len() >= limits.max_documents {
                        Err(site_err(format!("cannot load {loc}: more than {} documents (openapi.max_documents)", limits.max_documents)))
                    } else {
                        match fetch.fetch(&loc) {
                            // Read, but not text: the position is in that document.
                            Err(e) if e.line > 0 => Err(SpecError { file: loc.clone(), line: e.line, col: e.col, pointer: String::new(), message: e.message }),
                            Err(e) => Err(site_err(format!("cannot read {loc}: {e}"))),
                            Ok(text) => {
                                total += text.len();
                                if total > limits.max_total_bytes {
                                    Err(site_err(format!("cannot load {loc}: the spec's documents exceed {} bytes together", limits.max_total_bytes)))
                                } else {
                                    parse(&loc, &text, limits)
                                }
                            }
                        }
                    };
                    match loaded {
                        Ok(root) => {
                            let id = set.docs.len() as DocId;
                            set.docs.push(Document { location: loc.clone(), root });
                            set.index.insert(loc, id);
                            Some(id)
                        }
                        Err(e) => {
                            errors.push(e);
                            failed.insert(loc);
                            None
                        }
                    }
                }
            };
            if let Some(td) = target_doc {
                if let Ok(fragment) = crate::router::percent_decode(fragment) {
                    if let Ok((_, canon)) = eval_pointer(&set.docs[td as usize].root, &fragment) {
                        queue.push_back((td, canon, kind));
                    }
                }
            }
            if is_ref && sites_seen.insert((site.doc, site.pointer.clone())) {
                set.refs.push(site);
            }
        }
    }
    check_refs(&set, &failed, &mut errors);
    if errors.is_empty() {
        crate::check::check(&mut set, &mut errors);
    }
    if errors.is_empty() {
        Ok(set)
    } else {
        Err(errors)
    }
}

fn absolute_location(location: &str) -> String {
    if is_url(location) {
        return normalise_url(location);
    }
    let path = location.strip_prefix("file://").unwrap_or(location);
    let abs = std::path::absolute(path).map(|p| p.to_string_lossy().into_owned()).unwrap_or_else(|_| path.to_string());
    remove_dot_segments(&abs)
}

/// Whether a document is JSON: its name says so, or its first significant character opens an
/// object or array (a YAML document starting with `{` is a flow mapping, which JSON is).
fn looks_like_json(location: &str, text: &str) -> bool {
    let path = location.split(['?', '#']).next().unwrap_or(location);
    path.to_ascii_lowercase().ends_with(".json") || text.trim_start_matches('\u{feff}').trim_start().starts_with(['{', '['])
}

fn parse(location: &str, text: &str, limits: &Limits) -> Result<Node, SpecError> {
    if looks_like_json(location, text) {
        match palisade_config::json::parse(text, limits.max_depth) {
            Ok(node) => return Ok(node),
            Err(e) => {
                let yaml_ok = !location.to_ascii_lowercase().ends_with(".json") && yaml::parse_with_max_depth(text, limits.max_depth).is_ok();
                if !yaml_ok {
                    return Err(SpecError {
                        file: location.to_string(),
                        line: e.line,
                        col: e.col,
                        pointer: String::new(),
                        message: format!("JSON syntax: {}", e.message),
                    });
                }
            }
        }
    }
    yaml::parse_with_max_depth(text, limits.max_depth).map_err(|e| SpecError {
        file: location.to_string(),
        line: e.line,
        col: e.col,
        pointer: String::new(),
        message: format!("syntax: {}", e.message),
    })
}

fn entry_version(location: &str, root: &Node) -> Result<(Version, String), SpecError> {
    let at_root = |m: &str| SpecError::new(location, &root.origin, "", m);
    if !matches!(root.value, Value::Map(_)) {
        return Err(at_root(&format!("an OpenAPI document is a mapping, not {}", root.kind())));
    }
    if let Some(s) = root.get("swagger") {
        return Err(SpecError::new(
            location,
            &s.origin,
            "/swagger",
            format!(
                "Swagger/OpenAPI {} is not supported: Palisade reads OpenAPI 3.0 and 3.1; convert the spec (e.g. with swagger2openapi)",
                s.scalar_text().unwrap_or_default()
            ),
        ));
    }
    let Some(v) = root.get("openapi") else {
        return Err(at_root("missing \"openapi\" field: not an OpenAPI 3.x document"));
    };
    let text = match &v.value {
        Value::Str(s) => s.clone(),
        // `openapi: 3.0` unquoted is a YAML number
        Value::Float(f) => format!("{f:?}"),
        _ => return Err(SpecError::new(location, &v.origin, "/openapi", format!("\"openapi\" must be a version string like \"3.1.0\", not {}", v.kind()))),
    };
    let mut parts = text.split('.');
    let version = match (parts.next(), parts.next()) {
        (Some("3"), Some("0")) => Version::V30,
        (Some("3"), Some("1")) => Version::V31,
        _ => {
            return Err(SpecError::new(location, &v.origin, "/openapi", format!("unsupported OpenAPI version {text:?}: Palisade reads 3.0.x and 3.1.x")));
        }
    };
    if parts.next().is_some_and(|p| p.is_empty() || !p.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')) {
        return Err(SpecError::new(location, &v.origin, "/openapi", format!("malformed OpenAPI version {text:?}")));
    }
    Ok((version, text))
}

/// Every reference must resolve, and no chain of references may loop.
fn check_refs(set: &SpecSet, failed: &HashSet<String>, errors: &mut Vec<SpecError>) {
    let mut cycles_seen: HashSet<Vec<(DocId, String)>> = HashSet::new();
    for site in &set.refs {
        let file = &set.doc(site.doc).location;
        let at = push_token(&site.pointer, "$ref");
        match set.resolve_ref(site.doc, &site.target) {
            Ok(t) => {
                // follow the chain from here
                let mut chain: Vec<(DocId, String)> = vec![(site.doc, site.pointer.clone())];
                let mut next = t;
                loop {
                    let key = (next.doc, next.pointer.clone());
                    if let Some(i) = chain.iter().position(|c| *c == key) {
                        let mut members: Vec<(DocId, String)> = chain[i..].to_vec();
                        members.sort();
                        if cycles_seen.insert(members) {
                            let shown: Vec<String> = chain[i..].iter().chain([&key]).map(|(d, p)| format!("{}#{}", set.doc(*d).location, p)).collect();
                            errors.push(SpecError::new(file, &site.origin, &at, format!("$ref cycle: {}", shown.join(" -> "))));
                        }
                        break;
                    }
                    if chain.len() > set.max_ref_chain {
                        errors.push(SpecError::new(file, &site.origin, &at, format!("$ref chain longer than {} references", set.max_ref_chain)));
                        break;
                    }
                    let Some(Value::Str(r)) = next.node.get("$ref").map(|n| &n.value) else { break };
                    chain.push(key);
                    match set.resolve_ref(next.doc, r) {
                        Ok(t) => next = t,
                        Err(_) => break, // reported at its own site
                    }
                }
            }
            Err(e) => {
                let doc_part = site.target.split_once('#').map_or(site.target.as_str(), |(a, _)| a);
                if !doc_part.is_empty() && failed.contains(&join_location(file, doc_part)) {
                    continue; // the read error was reported
                }
                errors.push(SpecError::new(file, &site.origin, &at, format!("unresolved $ref {:?}: {e}", site.target)));
            }
        }
    }
}

#[cfg(test)]
mod tests;
