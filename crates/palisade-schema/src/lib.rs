//! JSON Schema for OpenAPI: the OpenAPI 3.0 schema dialect and JSON Schema 2020-12 (OpenAPI
//! 3.1), compiled once at load into an arena of validators and evaluated over a
//! [`palisade_json`] tape without building a document tree.
#![forbid(unsafe_code)]
