//! Method + path → operation.
//!
//! Templates (`/users/{id}`, `/files/{name}.{ext}`, with any server base path already prefixed)
//! are compiled into a segment trie. A lookup walks the request path segment by segment,
//! without allocating: parameter values come back as raw byte spans into the request path, in
//! a caller-owned `Vec<Span>` that can be reused across lookups.
//!
//! Matching rules (what a request path matches, and what it never matches):
//! - **Priority.** At every segment a literal segment (`/users/me`) is tried first, then
//!   segments that mix literals and parameters (`/files/{name}.{ext}`, `/report.{format}`;
//!   fewer parameters first, then longer literals), then a whole-segment parameter
//!   (`/users/{id}`). When a more specific branch does not lead to a template that declares the
//!   request's method, the next branch is tried (so `DELETE /users/me` reaches
//!   `/users/{id}` when `/users/me` only declares `GET`); when templates match but none declares
//!   the method, the result is [`Lookup::MethodNotAllowed`] with the union of their methods.
//! - **Parameters** never match an empty string. Several parameters in one segment are split
//!   at their literal separators, shortest-first, with backtracking bounded by a step budget
//!   ([`STEP_BUDGET`] per lookup; past it the branch fails).
//! - **Percent-encoding.** Segments are split at raw `/` only: an encoded slash (`%2F`) stays
//!   inside its segment, so `/files/a%2Fb` matches `/files/{name}` (raw value `a%2Fb`, decoded
//!   `a/b`) and never `/files/{dir}/{name}`. Literal parts compare after decoding percent-encoded
//!   *unreserved* characters (`%7E` = `~`, `%75sers` = `users`; hex digits in either case);
//!   other encoded bytes compare as encoded (`%3A` is not `:`), as RFC 3986 says.
//! - **Dot segments** (`.` and `..`, raw or encoded as `%2e`) are never normalised and match
//!   nothing: neither a literal nor a parameter. A request that contains one is `NotFound`.
//! - **Trailing slash.** `/users/` has an empty last segment: it matches the template
//!   `/users/` only, never `/users` (and the other way round). With
//!   [`RouterOptions::ignore_trailing_slash`], one trailing slash is removed from templates and
//!   request paths before matching, so both forms match either template.
//! - **Empty segments** (`/a//b`) only match templates that have them literally.
//! - **HEAD** falls back to the `GET` operation of the template when the template declares no
//!   `HEAD` operation (a HEAD response is a GET response without a body).
//! - The path is the request target's path: anything from `?` or `#` on is ignored. A path that
//!   does not start with `/` (`*`, absolute-form) is `NotFound`.

use std::borrow::Cow;
use std::fmt;

use crate::model::OpId;
use crate::{Error, ErrorKind};

/// Upper bound on matching steps (trie nodes entered plus split points tried) in one lookup.
pub const STEP_BUDGET: u32 = 4096;

/// HTTP methods an OpenAPI path item can declare.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Method {
    Get,
    Put,
    Post,
    Delete,
    Options,
    Head,
    Patch,
    Trace,
}

impl Method {
    /// All methods, in the order OpenAPI lists them in a path item.
    pub const ALL: [Method; 8] = [Method::Get, Method::Put, Method::Post, Method::Delete, Method::Options, Method::Head, Method::Patch, Method::Trace];

    /// Parse a request method (case-sensitive, as HTTP methods are: `GET`, not `get`).
    #[inline]
    pub fn from_request(m: &str) -> Option<Method> {
        Some(match m.as_bytes() {
            b"GET" => Method::Get,
            b"POST" => Method::Post,
            b"PUT" => Method::Put,
            b"DELETE" => Method::Delete,
            b"PATCH" => Method::Patch,
            b"HEAD" => Method::Head,
            b"OPTIONS" => Method::Options,
            b"TRACE" => Method::Trace,
            _ => return None,
        })
    }

    /// Parse a path item key (`get`, `post`...).
    pub fn from_spec_key(k: &str) -> Option<Method> {
        Method::ALL.into_iter().find(|m| m.spec_key() == k)
    }

    /// Upper-case name (`GET`).
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Put => "PUT",
            Method::Post => "POST",
            Method::Delete => "DELETE",
            Method::Options => "OPTIONS",
            Method::Head => "HEAD",
            Method::Patch => "PATCH",
            Method::Trace => "TRACE",
        }
    }

    /// Lower-case path item key (`get`).
    pub fn spec_key(self) -> &'static str {
        match self {
            Method::Get => "get",
            Method::Put => "put",
            Method::Post => "post",
            Method::Delete => "delete",
            Method::Options => "options",
            Method::Head => "head",
            Method::Patch => "patch",
            Method::Trace => "trace",
        }
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A set of methods (for `405 Method Not Allowed` and its `Allow` header).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Methods(u16);

impl Methods {
    pub fn contains(self, m: Method) -> bool {
        self.0 & (1 << m as u16) != 0
    }
    pub fn insert(&mut self, m: Method) {
        self.0 |= 1 << m as u16;
    }
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
    /// The methods in [`Method::ALL`] order.
    pub fn iter(self) -> impl Iterator<Item = Method> {
        Method::ALL.into_iter().filter(move |m| self.contains(*m))
    }
}

impl fmt::Display for Methods {
    /// `GET, HEAD, POST`: the value of an `Allow` header.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, m) in self.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            f.write_str(m.as_str())?;
        }
        Ok(())
    }
}

/// A parameter value's location in the request path given to [`Router::lookup`]: raw,
/// still percent-encoded (decode with [`percent_decode`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    pub start: u32,
    pub end: u32,
}

impl Span {
    /// The raw text of the span in `path` (the same string that was looked up).
    #[inline]
    pub fn get(self, path: &str) -> &str {
        &path[self.start as usize..self.end as usize]
    }
}

/// Result of [`Router::lookup`].
#[derive(Debug, PartialEq, Eq)]
pub enum Lookup<'r> {
    /// `op` is the operation; `names[i]` is the name of the path parameter whose raw value is at
    /// `out[i]` (the `out` vector given to the lookup), in template order.
    Found {
        op: OpId,
        names: &'r [String],
    },
    /// The path matches one or more templates, none of which declares the method.
    MethodNotAllowed {
        allowed: Methods,
    },
    NotFound,
}

/// Router settings.
#[derive(Clone, Copy, Debug, Default)]
pub struct RouterOptions {
    /// Treat `/users/` and `/users` alike (one trailing slash removed from templates and
    /// request paths). Default false: they are different paths.
    pub ignore_trailing_slash: bool,
}

/// Why a template could not be added.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InsertError {
    /// The template is malformed (the message says how; the kind is [`ErrorKind::Template`]).
    BadTemplate(Error),
    /// Another operation already has this method on a template of the same shape (same
    /// literals, parameters in the same places, whatever their names).
    Conflict { existing: OpId },
}

impl fmt::Display for InsertError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InsertError::BadTemplate(e) => write!(f, "{e}"),
            InsertError::Conflict { existing } => write!(f, "the route is already taken by operation #{existing}"),
        }
    }
}

/// One piece of a segment that mixes literals and parameters.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Part {
    /// Canonical units (see [`units`]).
    Lit(Box<[u16]>),
    Param,
}

#[derive(Debug)]
struct Entry {
    op: OpId,
    names: Box<[String]>,
}

#[derive(Debug, Default)]
struct Leaf {
    methods: Methods,
    entries: [Option<Entry>; 8],
}

#[derive(Debug, Default)]
struct Node {
    /// Canonical literal (see [`canonical`]) → child, sorted by key.
    statics: Vec<(Box<[u8]>, u32)>,
    /// Mixed segments in priority order.
    complex: Vec<(Box<[Part]>, u32)>,
    param: Option<u32>,
    leaf: Option<Box<Leaf>>,
}

/// Compiled path templates of one spec. Build with [`Router::new`] and [`Router::insert`];
/// immutable while serving.
#[derive(Debug)]
pub struct Router {
    nodes: Vec<Node>,
    options: RouterOptions,
    routes: usize,
}

impl Default for Router {
    fn default() -> Self {
        Router::new(RouterOptions::default())
    }
}

/// A parsed template segment.
enum Seg<'t> {
    Lit(Box<[u8]>),
    Param(&'t str),
    Mixed(Vec<Part>, Vec<&'t str>),
}

/// Parse a template into segments; errors say what is wrong.
fn parse_segments(template: &str) -> Result<Vec<Seg<'_>>, Error> {
    let err = |m: String| Error::new(ErrorKind::Template, m);
    let Some(rest) = template.strip_prefix('/') else {
        return Err(err(format!("path template {template:?} does not start with '/'")));
    };
    let mut segs = Vec::new();
    for seg in rest.split('/') {
        let mut parts: Vec<Part> = Vec::new();
        let mut names = Vec::new();
        let mut lit = String::new();
        let mut chars = seg.char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '{' => {
                    let start = i + 1;
                    let end = loop {
                        match chars.next() {
                            Some((j, '}')) => break j,
                            Some((_, '{')) => return Err(err(format!("nested '{{' in path template {template:?}"))),
                            Some(_) => {}
                            None => return Err(err(format!("unclosed '{{' in path template {template:?}"))),
                        }
                    };
                    let name = &seg[start..end];
                    if name.is_empty() {
                        return Err(err(format!("empty parameter name '{{}}' in path template {template:?}")));
                    }
                    if !lit.is_empty() {
                        parts.push(Part::Lit(units(lit.as_bytes()).collect()));
                        lit.clear();
                    }
                    parts.push(Part::Param);
                    names.push(name);
                }
                '}' => return Err(err(format!("unmatched '}}' in path template {template:?}"))),
                c => lit.push(c),
            }
        }
        if names.is_empty() {
            segs.push(Seg::Lit(canonical(seg.as_bytes()).into()));
            continue;
        }
        // A literal after the last parameter (`{sid}.json`) makes the segment mixed too.
        if !lit.is_empty() {
            parts.push(Part::Lit(units(lit.as_bytes()).collect()));
        }
        if parts.len() == 1 {
            segs.push(Seg::Param(names[0]));
        } else {
            segs.push(Seg::Mixed(parts, names));
        }
    }
    Ok(segs)
}

/// The parameter names of a path template, in order (`/files/{name}.{ext}` → `name`, `ext`),
/// or what is wrong with its syntax.
pub fn template_params(template: &str) -> Result<Vec<&str>, Error> {
    let mut out = Vec::new();
    for seg in parse_segments(template)? {
        match seg {
            Seg::Lit(_) => {}
            Seg::Param(n) => out.push(n),
            Seg::Mixed(_, names) => out.extend(names),
        }
    }
    Ok(out)
}

/// The template with parameter names erased (`/users/{id}` → `/users/{}`): two templates with
/// the same shape match exactly the same paths.
pub fn template_shape(template: &str) -> String {
    let mut out = String::with_capacity(template.len());
    let mut in_param = false;
    for c in template.chars() {
        match c {
            '{' => {
                in_param = true;
                out.push_str("{}");
            }
            '}' => in_param = false,
            c if !in_param => out.push(c),
            _ => {}
        }
    }
    out
}

fn mixed_priority(parts: &[Part]) -> (usize, std::cmp::Reverse<usize>) {
    let params = parts.iter().filter(|p| matches!(p, Part::Param)).count();
    let lits: usize = parts.iter().map(|p| if let Part::Lit(u) = p { u.len() } else { 0 }).sum();
    (params, std::cmp::Reverse(lits))
}

impl Router {
    pub fn new(options: RouterOptions) -> Router {
        Router { nodes: vec![Node::default()], options, routes: 0 }
    }

    pub fn options(&self) -> RouterOptions {
        self.options
    }

    /// Number of (method, template) routes inserted.
    pub fn len(&self) -> usize {
        self.routes
    }

    pub fn is_empty(&self) -> bool {
        self.routes == 0
    }

    fn child(&mut self) -> u32 {
        self.nodes.push(Node::default());
        (self.nodes.len() - 1) as u32
    }

    /// Add `method template → op`. The template is complete (server base path included), as
    /// written in a spec: `/v1/users/{id}`.
    pub fn insert(&mut self, method: Method, template: &str, op: OpId) -> Result<(), InsertError> {
        let mut template = template;
        if self.options.ignore_trailing_slash && template.len() > 1 {
            template = template.strip_suffix('/').unwrap_or(template);
        }
        let segs = parse_segments(template).map_err(InsertError::BadTemplate)?;
        let mut names: Vec<String> = Vec::new();
        let mut node = 0u32;
        for seg in segs {
            node = match seg {
                Seg::Lit(key) => {
                    let n = &self.nodes[node as usize];
                    match n.statics.binary_search_by(|(k, _)| k[..].cmp(&key[..])) {
                        Ok(i) => n.statics[i].1,
                        Err(i) => {
                            let c = self.child();
                            self.nodes[node as usize].statics.insert(i, (key, c));
                            c
                        }
                    }
                }
                Seg::Param(name) => {
                    names.push(name.to_string());
                    match self.nodes[node as usize].param {
                        Some(c) => c,
                        None => {
                            let c = self.child();
                            self.nodes[node as usize].param = Some(c);
                            c
                        }
                    }
                }
                Seg::Mixed(parts, ns) => {
                    names.extend(ns.iter().map(|s| s.to_string()));
                    let n = &self.nodes[node as usize];
                    match n.complex.iter().find(|(p, _)| p[..] == parts[..]) {
                        Some((_, c)) => *c,
                        None => {
                            let c = self.child();
                            let prio = mixed_priority(&parts);
                            let list = &mut self.nodes[node as usize].complex;
                            let at = list.iter().position(|(p, _)| mixed_priority(p) > prio).unwrap_or(list.len());
                            list.insert(at, (parts.into_boxed_slice(), c));
                            c
                        }
                    }
                }
            };
        }
        let leaf = self.nodes[node as usize].leaf.get_or_insert_with(Default::default);
        if let Some(e) = &leaf.entries[method as usize] {
            return Err(InsertError::Conflict { existing: e.op });
        }
        leaf.methods.insert(method);
        leaf.entries[method as usize] = Some(Entry { op, names: names.into_boxed_slice() });
        self.routes += 1;
        Ok(())
    }

    /// Find the operation for `method` and `path` (the request target's path; a query string is
    /// ignored). `out` is cleared and receives the raw spans of the path parameters when the
    /// result is [`Lookup::Found`]. Allocation-free once `out` has grown to the largest number
    /// of parameters.
    pub fn lookup<'r>(&'r self, method: &str, path: &str, out: &mut Vec<Span>) -> Lookup<'r> {
        out.clear();
        let bytes = path.as_bytes();
        let mut len = bytes.iter().position(|&b| b == b'?' || b == b'#').unwrap_or(bytes.len());
        if len == 0 || bytes[0] != b'/' || len > u32::MAX as usize {
            return Lookup::NotFound;
        }
        if self.options.ignore_trailing_slash && len > 1 && bytes[len - 1] == b'/' {
            len -= 1;
        }
        let method = Method::from_request(method);
        let mut st = State { method, steps: 0, allowed: Methods::default(), found: None };
        if self.walk(0, &bytes[..len], Some(1), out, &mut st) {
            let (op, names) = st.found.expect("set when walk succeeds");
            return Lookup::Found { op, names };
        }
        out.clear();
        if st.allowed.is_empty() {
            Lookup::NotFound
        } else {
            Lookup::MethodNotAllowed { allowed: st.allowed }
        }
    }

    fn walk<'r>(&'r self, node: u32, path: &[u8], start: Option<usize>, out: &mut Vec<Span>, st: &mut State<'r>) -> bool {
        st.steps += 1;
        if st.steps > STEP_BUDGET {
            return false;
        }
        let n = &self.nodes[node as usize];
        let Some(start) = start else {
            return self.at_leaf(n, st);
        };
        // one pass: where the segment ends, and whether it is already in canonical form
        let mut end = start;
        let mut plain = true;
        while end < path.len() {
            let b = path[end];
            if b == b'/' {
                break;
            }
            plain &= CANONICAL[b as usize];
            end += 1;
        }
        let next = if end < path.len() { Some(end + 1) } else { None };
        let seg = &path[start..end];
        if seg.len() <= 6 && matches!(seg.first(), Some(b'.' | b'%')) && is_dot_segment(seg) {
            return false;
        }
        if !n.statics.is_empty() {
            let child = if plain {
                n.statics.binary_search_by(|(k, _)| k[..].cmp(seg)).ok().map(|i| n.statics[i].1)
            } else {
                n.statics.iter().find(|(k, _)| canonical_eq(seg, k)).map(|(_, c)| *c)
            };
            if let Some(c) = child {
                if self.walk(c, path, next, out, st) {
                    return true;
                }
            }
        }
        for (parts, c) in &n.complex {
            let mark = out.len();
            if match_mixed(parts, seg, 0, start as u32, out, &mut st.steps) && self.walk(*c, path, next, out, st) {
                return true;
            }
            out.truncate(mark);
        }
        if let Some(c) = n.param {
            if !seg.is_empty() {
                out.push(Span { start: start as u32, end: end as u32 });
                if self.walk(c, path, next, out, st) {
                    return true;
                }
                out.pop();
            }
        }
        false
    }

    #[inline]
    fn at_leaf<'r>(&'r self, n: &'r Node, st: &mut State<'r>) -> bool {
        let Some(leaf) = &n.leaf else { return false };
        if let Some(m) = st.method {
            let entry = match &leaf.entries[m as usize] {
                Some(e) => Some(e),
                None if m == Method::Head => leaf.entries[Method::Get as usize].as_ref(),
                None => None,
            };
            if let Some(e) = entry {
                st.found = Some((e.op, &e.names));
                return true;
            }
        }
        st.allowed.0 |= leaf.methods.0;
        false
    }
}

struct State<'r> {
    method: Option<Method>,
    steps: u32,
    allowed: Methods,
    found: Option<(OpId, &'r [String])>,
}

/// Match a mixed segment: `parts` against `seg[i..]`; spans are offset by `base`.
fn match_mixed(parts: &[Part], seg: &[u8], i: usize, base: u32, out: &mut Vec<Span>, steps: &mut u32) -> bool {
    match parts.split_first() {
        None => i == seg.len(),
        Some((Part::Lit(lit), rest)) => match match_units_at(seg, i, lit) {
            Some(j) => match_mixed(rest, seg, j, base, out, steps),
            None => false,
        },
        Some((Part::Param, rest)) => {
            if i >= seg.len() {
                return false;
            }
            if rest.is_empty() {
                out.push(Span { start: base + i as u32, end: base + seg.len() as u32 });
                return true;
            }
            // the next literal's first unit, when it is a plain byte: split points where the
            // raw byte is neither it nor '%' cannot match, so they are skipped without a try
            let first = match rest.first() {
                Some(Part::Lit(l)) if l.first().is_some_and(|&u| u < 0x100) => Some(l[0] as u8),
                _ => None,
            };
            let mut j = unit_end(seg, i);
            loop {
                if let Some(c) = first {
                    while j < seg.len() && seg[j] != c && seg[j] != b'%' {
                        j += 1;
                    }
                    if j >= seg.len() {
                        return false;
                    }
                }
                *steps += 1;
                if *steps > STEP_BUDGET {
                    return false;
                }
                out.push(Span { start: base + i as u32, end: base + j as u32 });
                if match_mixed(rest, seg, j, base, out, steps) {
                    return true;
                }
                out.pop();
                if j >= seg.len() {
                    return false;
                }
                j = unit_end(seg, j);
            }
        }
    }
}

// ---- canonical form of path segments -------------------------------------------------------
//
// A segment is compared as a sequence of units: a `u16` below 0x100 is a literal byte (an
// unreserved character, decoded from `%XX` if it was encoded, or a sub-delimiter, `:` or `@`
// as written); `0x100 | b` is the byte `b` percent-encoded (anything else, whether the request
// encoded it or not). The canonical text of a literal writes encoded units as `%XX` with
// upper-case hex, so that a request segment made only of canonical bytes can be compared with
// plain byte comparison.

#[inline]
fn is_unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

/// Bytes that stand for themselves in the canonical form.
#[inline]
fn is_canonical_byte(b: u8) -> bool {
    is_unreserved(b) || matches!(b, b'!' | b'$' | b'&' | b'\'' | b'(' | b')' | b'*' | b'+' | b',' | b';' | b'=' | b':' | b'@')
}

/// [`is_canonical_byte`] as a table, for the lookup's segment scan.
const CANONICAL: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 256 {
        let b = i as u8;
        t[i] = b.is_ascii_alphanumeric()
            || matches!(b, b'-' | b'.' | b'_' | b'~' | b'!' | b'$' | b'&' | b'\'' | b'(' | b')' | b'*' | b'+' | b',' | b';' | b'=' | b':' | b'@');
        i += 1;
    }
    t
};

#[inline]
fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// The unit at `s[i]` and the index after it.
#[inline]
fn unit_at(s: &[u8], i: usize) -> (u16, usize) {
    let b = s[i];
    if b == b'%' {
        if let (Some(h), Some(l)) = (s.get(i + 1).and_then(|&c| hex(c)), s.get(i + 2).and_then(|&c| hex(c))) {
            let v = h << 4 | l;
            return (if is_unreserved(v) { v as u16 } else { 0x100 | v as u16 }, i + 3);
        }
    }
    (if is_canonical_byte(b) { b as u16 } else { 0x100 | b as u16 }, i + 1)
}

#[inline]
fn unit_end(s: &[u8], i: usize) -> usize {
    unit_at(s, i).1
}

fn units(s: &[u8]) -> impl Iterator<Item = u16> + '_ {
    let mut i = 0;
    std::iter::from_fn(move || {
        if i >= s.len() {
            return None;
        }
        let (u, j) = unit_at(s, i);
        i = j;
        Some(u)
    })
}

/// Canonical text of a literal segment.
fn canonical(s: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len());
    for u in units(s) {
        if u < 0x100 {
            out.push(u as u8);
        } else {
            let b = u as u8;
            out.extend_from_slice(&[b'%', b"0123456789ABCDEF"[(b >> 4) as usize], b"0123456789ABCDEF"[(b & 15) as usize]]);
        }
    }
    out
}

/// Raw request segment equals canonical literal?
fn canonical_eq(raw: &[u8], canon: &[u8]) -> bool {
    units(raw).eq(units(canon))
}

/// Match literal units at `s[i..]`; the index after them.
#[inline]
fn match_units_at(s: &[u8], mut i: usize, lit: &[u16]) -> Option<usize> {
    for &want in lit {
        if i >= s.len() {
            return None;
        }
        let (u, j) = unit_at(s, i);
        if u != want {
            return None;
        }
        i = j;
    }
    Some(i)
}

/// `.` or `..`, raw or encoded.
#[inline]
fn is_dot_segment(seg: &[u8]) -> bool {
    if seg.is_empty() || seg.len() > 6 || !seg.iter().all(|&b| b == b'.' || b == b'%' || b == b'2' || b == b'e' || b == b'E') {
        return false;
    }
    let mut n = 0;
    for u in units(seg) {
        if u != b'.' as u16 {
            return false;
        }
        n += 1;
    }
    n == 1 || n == 2
}

/// Why a raw value could not be decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// `%` not followed by two hex digits, at this byte offset of the raw value.
    InvalidPercent { at: usize },
    /// The decoded bytes are not UTF-8.
    InvalidUtf8,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::InvalidPercent { at } => write!(f, "invalid percent-encoding at byte {at}"),
            DecodeError::InvalidUtf8 => f.write_str("percent-decoded value is not valid UTF-8"),
        }
    }
}

impl std::error::Error for DecodeError {}

/// Percent-decode a raw path parameter value (`+` stays `+`: it means a space only in form
/// encoding). Borrows when there is nothing to decode.
pub fn percent_decode(raw: &str) -> Result<Cow<'_, str>, DecodeError> {
    let b = raw.as_bytes();
    let Some(first) = b.iter().position(|&c| c == b'%') else {
        return Ok(Cow::Borrowed(raw));
    };
    let mut out = Vec::with_capacity(b.len());
    out.extend_from_slice(&b[..first]);
    let mut i = first;
    while i < b.len() {
        if b[i] == b'%' {
            match (b.get(i + 1).and_then(|&c| hex(c)), b.get(i + 2).and_then(|&c| hex(c))) {
                (Some(h), Some(l)) => {
                    out.push(h << 4 | l);
                    i += 3;
                }
                _ => return Err(DecodeError::InvalidPercent { at: i }),
            }
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map(Cow::Owned).map_err(|_| DecodeError::InvalidUtf8)
}

#[cfg(test)]
mod tests;
