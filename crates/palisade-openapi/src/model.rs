//! The compiled form of a spec: what the validators consult at decision time. Built once by
//! [`crate::compile`] from a loaded [`crate::loader::SpecSet`]; immutable afterwards.

use palisade_schema::{SchemaId, Schemas};

use crate::router::Router;

/// Index of an operation in [`Api::operations`].
pub type OpId = usize;

/// Which OpenAPI version the entry document declared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    V30,
    V31,
}

/// A compiled spec.
#[derive(Debug)]
pub struct Api {
    pub version: Version,
    pub title: String,
    pub operations: Vec<Operation>,
    pub router: Router,
    pub schemas: Schemas,
    /// Security schemes by name (`components.securitySchemes`).
    pub security_schemes: Vec<(String, SecurityScheme)>,
}

/// One method on one path template.
#[derive(Debug)]
pub struct Operation {
    /// `operationId`, when the spec gives one.
    pub id: Option<String>,
    /// Upper-case method (`GET`).
    pub method: String,
    /// The path template as written under `paths` (without any server base path), e.g.
    /// `/files/{name}.{ext}`.
    pub template: String,
    /// Server base paths the template is accepted under (`""` = none; `/v1`): the operation's
    /// `servers`, else the path item's, else the document's.
    pub base_paths: Vec<String>,
    /// Path-level and operation-level parameters merged (operation wins on name + location).
    pub params: Vec<Param>,
    pub body: Option<RequestBody>,
    pub responses: Responses,
    /// Effective security requirements: the operation's, else the document's. Alternatives
    /// (OR) of requirement sets (AND). `None` = no requirement at all; an empty alternative
    /// (`{}`) means anonymous access is allowed.
    pub security: Option<Vec<Vec<SecurityRequirement>>>,
    /// Where the operation is in the spec, for messages: `#/paths/~1users~1{id}/get`.
    pub pointer: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ParamIn {
    Path,
    Query,
    Header,
    Cookie,
}

impl ParamIn {
    pub fn as_str(self) -> &'static str {
        match self {
            ParamIn::Path => "path",
            ParamIn::Query => "query",
            ParamIn::Header => "header",
            ParamIn::Cookie => "cookie",
        }
    }
}

/// Serialization style of a parameter (OpenAPI `style`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    Matrix,
    Label,
    Form,
    Simple,
    SpaceDelimited,
    PipeDelimited,
    DeepObject,
}

#[derive(Clone, Debug)]
pub struct Param {
    /// As written; header names are matched case-insensitively.
    pub name: String,
    pub location: ParamIn,
    pub required: bool,
    pub style: Style,
    pub explode: bool,
    pub allow_empty_value: bool,
    pub allow_reserved: bool,
    /// `schema`, or the schema of the single `content` entry.
    pub schema: Option<SchemaId>,
    /// Set when the parameter is described with `content` instead of `schema`: the media type
    /// its value is serialized in (e.g. `application/json`).
    pub content_type: Option<String>,
}

#[derive(Debug)]
pub struct RequestBody {
    pub required: bool,
    /// Declared media ranges in spec order.
    pub content: Vec<MediaType>,
}

#[derive(Debug)]
pub struct MediaType {
    /// The key as written (`application/json`, `application/*+json`, `*/*`,
    /// `text/plain; charset=utf-8`).
    pub range: String,
    pub schema: Option<SchemaId>,
    /// `encoding` for form and multipart bodies: per property.
    pub encoding: Vec<(String, Encoding)>,
}

#[derive(Debug, Default)]
pub struct Encoding {
    pub content_type: Option<String>,
    pub style: Option<Style>,
    pub explode: Option<bool>,
    pub allow_reserved: bool,
    pub headers: Vec<(String, Header)>,
}

/// The `encoding` entry of property `name` in a media type's encoding map.
pub fn encoding_for<'e>(encoding: &'e [(String, Encoding)], name: &str) -> Option<&'e Encoding> {
    encoding.iter().find(|(n, _)| n == name).map(|(_, e)| e)
}

#[derive(Debug, Default)]
pub struct Responses {
    /// Exact codes (`200`) and ranges (`2XX`, stored as 2 with `range: true`).
    pub by_status: Vec<(StatusKey, Response)>,
    pub default: Option<Response>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StatusKey {
    Exact(u16),
    /// `1XX`..`5XX`: the first digit.
    Range(u8),
}

#[derive(Debug, Default)]
pub struct Response {
    pub headers: Vec<(String, Header)>,
    pub content: Vec<MediaType>,
}

#[derive(Debug)]
pub struct Header {
    pub required: bool,
    pub schema: Option<SchemaId>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SecurityRequirement {
    /// Name of the scheme in `components.securitySchemes`.
    pub scheme: String,
    pub scopes: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SecurityScheme {
    ApiKey {
        name: String,
        location: ParamIn,
    },
    /// `http` with scheme `bearer`.
    Bearer,
    /// `http` with scheme `basic`.
    Basic,
    /// Another `http` scheme (digest...): presence of an `Authorization` header with that scheme.
    OtherHttp(String),
    /// `oauth2` and `openIdConnect`: a bearer token whose scopes the access stage may check.
    OAuth2,
    OpenIdConnect,
    /// `mutualTLS` and anything unknown: not checked (reported by lint).
    Unchecked(String),
}
