//! GraphQL requests as HTTP carries them (the GraphQL-over-HTTP conventions):
//!
//! - `GET` with `query`, `variables` (JSON), `operationName` and `extensions` (JSON) in the
//!   query string; a `GET` with neither `query` nor `extensions` is not a GraphQL request (an
//!   IDE page, say) and is left alone; these parameters may be given once each, under their
//!   plain names;
//! - `POST` with `application/json` (or any `+json` type): one request object, or a batch (a
//!   JSON array of request objects);
//! - `POST` with `application/graphql`: the body is the document;
//! - `POST` with `multipart/form-data` as the GraphQL multipart request specification defines
//!   it (file uploads: `operations`, `map`, then the files).
//!
//! A request with `extensions.persistedQuery.sha256Hash` and no `query` is a persisted query:
//! there is no document to judge, only a hash that the server looks up in its own store.

use palisade_body::multipart;
use palisade_core::http::Method;
use serde_json::{Map, Value as Json};

use crate::{Error, ErrorKind};

/// One GraphQL request (one entry of a batch).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GraphqlRequest {
    pub query: Option<String>,
    pub operation_name: Option<String>,
    pub variables: Option<Map<String, Json>>,
    pub extensions: Option<Map<String, Json>>,
    /// Other members of the request object (servers ignore them; detection still sees them).
    pub extra: Map<String, Json>,
}

impl GraphqlRequest {
    /// The persisted query hash, when the request names one.
    pub fn persisted_hash(&self) -> Option<&str> {
        self.extensions.as_ref()?.get("persistedQuery")?.get("sha256Hash")?.as_str()
    }
}

/// What one HTTP request carries.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Envelope {
    pub requests: Vec<GraphqlRequest>,
    /// A JSON array (even of one entry).
    pub batched: bool,
    /// Sent with `GET` (mutations must not be).
    pub get: bool,
    /// File parts of a multipart request (the GraphQL multipart request specification):
    /// (field name, file name).
    pub files: Vec<(String, String)>,
}

/// Take the GraphQL request(s) out of an HTTP request. `Ok(None)`: not a GraphQL request (a
/// `GET` without `query` or `extensions`, an `OPTIONS` preflight, a `HEAD`).
pub fn from_http(method: &Method, content_type: Option<&str>, query_string: Option<&str>, body: &[u8]) -> Result<Option<Envelope>, Error> {
    if method == Method::GET {
        let mut r = GraphqlRequest::default();
        let mut any = false;
        let mut seen: Vec<&str> = Vec::new();
        for pair in query_string.unwrap_or("").split('&') {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            // The parameters are plain names: an encoded name would be read as one of them by
            // some decoders and not by others.
            if k.contains(['%', '+']) {
                return Err(Error::new(ErrorKind::Request, "an encoded query parameter name on a GraphQL endpoint"));
            }
            if matches!(k, "query" | "variables" | "operationName" | "extensions") {
                if seen.contains(&k) {
                    return Err(Error::new(ErrorKind::Request, format!("the query parameter `{k}` is given twice")));
                }
                seen.push(k);
            }
            let v = palisade_core::form_decode(v);
            match k {
                "query" => {
                    any = true;
                    r.query = Some(v.into_owned());
                }
                "operationName" if !v.is_empty() => r.operation_name = Some(v.into_owned()),
                "variables" if !v.is_empty() => r.variables = object_param(&v, "variables")?,
                "extensions" if !v.is_empty() => {
                    any = true;
                    r.extensions = object_param(&v, "extensions")?;
                }
                _ => {}
            }
        }
        if !any {
            return Ok(None);
        }
        check_present(&r, "")?;
        return Ok(Some(Envelope { requests: vec![r], batched: false, get: true, files: Vec::new() }));
    }
    if method != Method::POST {
        return Ok(None);
    }
    let essence = content_type.unwrap_or("").split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    if essence == "application/graphql" {
        let text = std::str::from_utf8(body).map_err(|_| Error::new(ErrorKind::Request, "the body is not UTF-8"))?;
        let r = GraphqlRequest { query: Some(text.to_string()), ..GraphqlRequest::default() };
        return Ok(Some(Envelope { requests: vec![r], batched: false, get: false, files: Vec::new() }));
    }
    if essence == "multipart/form-data" {
        return multipart(content_type.unwrap_or(""), body).map(Some);
    }
    if essence != "application/json" && !essence.ends_with("+json") {
        return Err(Error::new(
            ErrorKind::Request,
            format!(
                "a GraphQL POST has the content type application/json or application/graphql, not `{}`",
                if essence.is_empty() { "(none)" } else { &essence }
            ),
        ));
    }
    let json: Json = serde_json::from_slice(body).map_err(|e| Error::new(ErrorKind::Request, format!("the body is not JSON: {e}")))?;
    envelope(json).map(Some)
}

/// One request object or a batch.
fn envelope(json: Json) -> Result<Envelope, Error> {
    match json {
        Json::Object(o) => Ok(Envelope { requests: vec![entry(o, "")?], batched: false, get: false, files: Vec::new() }),
        Json::Array(items) => {
            if items.is_empty() {
                return Err(Error::new(ErrorKind::Request, "an empty batch"));
            }
            let mut requests = Vec::with_capacity(items.len());
            for (i, item) in items.into_iter().enumerate() {
                let ctx = format!("[{i}]");
                match item {
                    Json::Object(o) => requests.push(entry(o, &ctx)?),
                    other => return Err(Error::new(ErrorKind::Request, format!("a batch entry is {}, not an object", kind(&other))).context(ctx)),
                }
            }
            Ok(Envelope { requests, batched: true, get: false, files: Vec::new() })
        }
        other => Err(Error::new(ErrorKind::Request, format!("the body is {}, not a request object or a batch", kind(&other)))),
    }
}

fn kind(v: &Json) -> &'static str {
    match v {
        Json::Null => "null",
        Json::Bool(_) => "a boolean",
        Json::Number(_) => "a number",
        Json::String(_) => "a string",
        Json::Array(_) => "an array",
        Json::Object(_) => "an object",
    }
}

fn object_param(v: &str, name: &str) -> Result<Option<Map<String, Json>>, Error> {
    match serde_json::from_str::<Json>(v) {
        Ok(Json::Object(o)) => Ok(Some(o)),
        Ok(Json::Null) => Ok(None),
        Ok(other) => Err(Error::new(ErrorKind::Request, format!("`{name}` is {}, not an object", kind(&other)))),
        Err(e) => Err(Error::new(ErrorKind::Request, format!("`{name}` is not JSON: {e}"))),
    }
}

fn entry(mut o: Map<String, Json>, ctx: &str) -> Result<GraphqlRequest, Error> {
    let err = |m: String| {
        let e = Error::new(ErrorKind::Request, m);
        if ctx.is_empty() {
            e
        } else {
            e.context(ctx.to_string())
        }
    };
    let mut r = GraphqlRequest::default();
    match o.remove("query") {
        None | Some(Json::Null) => {}
        Some(Json::String(s)) => r.query = Some(s),
        Some(other) => return Err(err(format!("`query` is {}, not a string", kind(&other)))),
    }
    match o.remove("operationName") {
        None | Some(Json::Null) => {}
        Some(Json::String(s)) => r.operation_name = Some(s),
        Some(other) => return Err(err(format!("`operationName` is {}, not a string", kind(&other)))),
    }
    for (key, slot) in [("variables", &mut r.variables), ("extensions", &mut r.extensions)] {
        match o.remove(key) {
            None | Some(Json::Null) => {}
            Some(Json::Object(m)) => *slot = Some(m),
            Some(other) => return Err(err(format!("`{key}` is {}, not an object", kind(&other)))),
        }
    }
    r.extra = o;
    check_present(&r, ctx)?;
    Ok(r)
}

/// A request carries a document or a persisted query hash.
fn check_present(r: &GraphqlRequest, ctx: &str) -> Result<(), Error> {
    if r.query.as_deref().is_some_and(|q| !q.trim().is_empty()) || r.persisted_hash().is_some() {
        return Ok(());
    }
    let e = Error::new(ErrorKind::Request, "no `query` and no persisted query hash");
    Err(if ctx.is_empty() { e } else { e.context(ctx.to_string()) })
}

/// Bounds on a multipart request: the parser's defaults, with room for many files.
const UPLOAD_LIMITS: multipart::Limits = multipart::Limits { max_parts: 1000, max_header_bytes: 8 * 1024, max_headers: 32 };

/// A multipart request as the GraphQL multipart request specification defines it (file
/// uploads): an `operations` field (a request object or a batch, with `null` where files go),
/// a `map` field (`{"0": ["variables.file"]}`: which file part goes where) and the file parts.
/// Each mapped variable is set to a placeholder string naming its part, so that an `Upload!`
/// variable is present when judged; the files themselves are not judged here. The framing is
/// `palisade_body::multipart`'s (RFC 7578), the one multipart parser of the project.
fn multipart(content_type: &str, body: &[u8]) -> Result<Envelope, Error> {
    let err = |m: &str| Error::new(ErrorKind::Request, format!("multipart GraphQL request: {m}"));
    let framing = |e: multipart::MultipartError| err(&e.to_string());
    let boundary = multipart::boundary(content_type).map_err(framing)?;
    let mut parts = Vec::new();
    multipart::parse(body, &boundary, &UPLOAD_LIMITS, &mut parts).map_err(framing)?;
    let field = |n: &str| parts.iter().find(|p| p.name == n && p.filename.is_none()).map(|p| p.body);
    let operations = field("operations").ok_or_else(|| err("no `operations` field"))?;
    let mut json: Json = serde_json::from_slice(operations).map_err(|e| err(&format!("`operations` is not JSON: {e}")))?;
    let map: Json = match field("map") {
        Some(m) => serde_json::from_slice(m).map_err(|e| err(&format!("`map` is not JSON: {e}")))?,
        None => Json::Object(Map::new()),
    };
    let Json::Object(map) = map else { return Err(err("`map` is not an object")) };
    for (part, paths) in &map {
        let Json::Array(paths) = paths else { return Err(err("a `map` entry is not a list of paths")) };
        for p in paths {
            let Some(p) = p.as_str() else { return Err(err("a `map` path is not a string")) };
            let slot = p.split('.').try_fold(&mut json, |v, step| match v {
                Json::Object(o) => o.get_mut(step),
                Json::Array(a) => step.parse::<usize>().ok().and_then(|i| a.get_mut(i)),
                _ => None,
            });
            match slot {
                Some(slot) if p.starts_with("variables.") || p.split('.').nth(1) == Some("variables") => *slot = Json::String(format!("(file part {part})")),
                _ => return Err(err(&format!("the `map` path `{p}` names no variable of `operations`"))),
            }
        }
    }
    let mut env = envelope(json)?;
    env.files = parts.into_iter().filter_map(|p| p.filename.map(|f| (p.name.into_owned(), f.into_owned()))).collect();
    Ok(env)
}
