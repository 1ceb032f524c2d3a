//! JSON Schema for OpenAPI: the OpenAPI 3.0 schema dialect and JSON Schema 2020-12 (OpenAPI
//! 3.1), compiled once at load into an arena of validators and evaluated over a
//! [`palisade_json`] tape without building a document tree.
#![forbid(unsafe_code)]

// Placeholders so that dependants compile while the engine is written; replaced by the real types.
/// Index of a compiled schema in a [`Schemas`] arena.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SchemaId(pub u32);

/// The arena of compiled schemas of one spec.
#[derive(Debug, Default)]
pub struct Schemas {}
