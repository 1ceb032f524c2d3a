//! JSON Schema for OpenAPI: the OpenAPI 3.0 schema dialect and JSON Schema 2020-12 (OpenAPI
//! 3.1), compiled once at load into an arena of validators and evaluated over a
//! [`palisade_json`] tape without building a document tree.
//!
//! API contract (the implementation may add to it, not change it): [`Dialect`], [`DocId`],
//! [`Resolver`], [`Compiler`], [`Schemas`], [`SchemaId`], [`Options`], [`Direction`],
//! [`Violation`], [`ViolationKind`], [`Hints`], [`TypeSet`].
#![forbid(unsafe_code)]

use palisade_config::yaml::{Node, Origin};

/// Which schema language a spec's schemas are written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    /// OpenAPI 3.0 Schema Object (a JSON Schema draft 4/5 variant with `nullable`, boolean
    /// `exclusiveMinimum`, `discriminator`, `readOnly`/`writeOnly`).
    Oas30,
    /// OpenAPI 3.1: JSON Schema 2020-12.
    Oas31,
}

/// Identifies one document of a multi-file spec (index into the loader's document list).
pub type DocId = u32;

/// A `$ref` target found by the spec loader.
#[derive(Debug)]
pub struct Resolved<'a> {
    pub doc: DocId,
    /// JSON pointer of the target inside `doc`, e.g. `/components/schemas/User`.
    pub pointer: String,
    pub node: &'a Node,
}

/// Resolves `$ref`s (`#/components/...`, `other.yaml#/Pet`, `../common.yaml`) relative to the
/// document that contains them. Implemented by the OpenAPI loader.
pub trait Resolver {
    fn resolve(&self, base: DocId, reference: &str) -> Result<Resolved<'_>, String>;
}

/// A problem in a schema, found at compile time.
#[derive(Clone, Debug)]
pub struct SchemaError {
    pub doc: DocId,
    /// JSON pointer of the offending schema or keyword.
    pub pointer: String,
    pub origin: Origin,
    pub message: String,
}

/// Index of a compiled schema in a [`Schemas`] arena.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SchemaId(pub u32);

/// Compiles schemas of one spec into one arena. Schemas reached through the same `$ref`
/// target are compiled once (cycles are fine).
pub struct Compiler<'r> {
    _dialect: Dialect,
    _resolver: &'r dyn Resolver,
}

impl<'r> Compiler<'r> {
    pub fn new(dialect: Dialect, resolver: &'r dyn Resolver) -> Self {
        Compiler { _dialect: dialect, _resolver: resolver }
    }

    /// Compile the schema `node`, found at `pointer` in document `doc`. Errors are collected
    /// and returned by [`Compiler::finish`]; the id is usable either way.
    pub fn compile(&mut self, _doc: DocId, _pointer: &str, _node: &Node) -> SchemaId {
        unimplemented!("palisade-schema: being written")
    }

    /// The arena, or every error found; warnings (unsupported keywords, patterns that cannot be
    /// compiled exactly) are in [`Schemas::warnings`].
    pub fn finish(self) -> Result<Schemas, Vec<SchemaError>> {
        unimplemented!("palisade-schema: being written")
    }
}

/// The arena of compiled schemas of one spec.
#[derive(Debug, Default)]
pub struct Schemas {}

/// Whether an instance is a request or a response (decides `readOnly` / `writeOnly`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    Request,
    Response,
}

/// How to validate.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    pub direction: Direction,
    /// Report properties that no `properties`/`patternProperties` of the schema names, even
    /// where `additionalProperties` allows them (as [`ViolationKind::UnknownProperty`]).
    pub shadow_unknown: bool,
    /// Stop after this many violations (at least 1).
    pub max_violations: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ViolationKind {
    /// The instance breaks a constraint of the schema.
    Invalid,
    /// Shadow-field finding: a property the schema does not describe (only with
    /// [`Options::shadow_unknown`]; a property forbidden by `additionalProperties: false` is
    /// [`ViolationKind::Invalid`]).
    UnknownProperty,
}

/// One reason an instance does not match.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    pub kind: ViolationKind,
    /// Location in the instance, slash-separated without a leading slash, RFC 6901-escaped
    /// (`users/3/id`); empty for the root.
    pub path: String,
    /// The keyword broken (`maximum`, `required`, `type`, `additionalProperties`, `format`...).
    pub keyword: &'static str,
    /// Short explanation that never repeats more than a truncated piece of the value
    /// (`must be <= 1000`, `missing required property "id"`).
    pub message: String,
}

/// A set of JSON types, for coercing parameter strings (`"5"` is 5 when the schema wants an
/// integer).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct TypeSet(pub u8);

impl TypeSet {
    pub const NULL: u8 = 1;
    pub const BOOLEAN: u8 = 2;
    pub const INTEGER: u8 = 4;
    pub const NUMBER: u8 = 8;
    pub const STRING: u8 = 16;
    pub const ARRAY: u8 = 32;
    pub const OBJECT: u8 = 64;
    /// No `type` constraint anywhere reachable: any type.
    pub const ANY: u8 = 127;

    pub fn has(self, bit: u8) -> bool {
        self.0 & bit != 0
    }
}

/// What parameter and form decoders need to know about a schema to turn strings into typed
/// values. Implemented by [`Schemas`]; `allOf`/`anyOf`/`oneOf`/`$ref` are looked through.
pub trait Hints {
    /// Types the schema admits.
    fn types(&self, id: SchemaId) -> TypeSet;
    /// Schema of array items (`items`), if any.
    fn items(&self, id: SchemaId) -> Option<SchemaId>;
    /// Schema of property `name` (`properties`, then `patternProperties`, then
    /// `additionalProperties`), if any.
    fn property(&self, id: SchemaId, name: &str) -> Option<SchemaId>;
}
