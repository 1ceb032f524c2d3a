//! Request bodies as the engines read them, below every engine: which grammar a
//! `Content-Type` names ([`media`]), `application/x-www-form-urlencoded` pairs and
//! percent-decoding ([`form`], also the syntax of query strings), `multipart/form-data` parts
//! ([`multipart`]), an XML tokenizer and well-formedness check ([`xml`]), and the JSON string
//! writers the decoders share ([`json`]); and the content codings a body is decompressed from
//! ([`coding`]). JSON itself is parsed by `palisade-json`.
//!
//! Pure and bounded: no I/O, every parser has limits, nothing recurses, and the parsers borrow
//! from the body instead of copying it. The positive model (`palisade-openapi`) turns these
//! into JSON for its schemas; the negative model (`palisade-detect`) walks them for values to
//! judge. Neither depends on the other.
#![forbid(unsafe_code)]

pub mod coding;
pub mod form;
pub mod json;
pub mod media;
pub mod multipart;
pub mod xml;
