//! `multipart/form-data` (RFC 7578 over RFC 2046) as one JSON object for schema validation
//! (the parts come from [`palisade_body::multipart::parse`]).
//!
//! JSON representation ([`MultipartDecoder::to_json`]): an object with one property per part
//! name (keys sorted); repeated names make an array when the property admits an array, else
//! [`PartError::Duplicate`]. A part's value is:
//! - **JSON text**, checked and passed through, when the part's `Content-Type` is JSON-like,
//!   or when it has none and the property's `encoding.contentType` is JSON-like, or when it
//!   has none, no filename, and the property's schema admits only `object`;
//! - **binary**, when the part has a filename or a `Content-Type` that is not text (`text/*`
//!   with a UTF-8 or US-ASCII charset or none, JSON, XML and form are text): a JSON string in
//!   which every byte of the body is one character U+0000..U+00FF. This is lossless, and makes
//!   `maxLength` / `minLength` count bytes, which is what they mean for `format: binary`
//!   (3.0) and `contentMediaType` (3.1) strings; `pattern` sees the bytes. The JSON text is at
//!   most 6 times the part size (control bytes as `\u00XX`), under the body limit the caller
//!   enforces;
//! - **text** otherwise: UTF-8 (else [`PartError::BadUtf8`]) coerced like a query value
//!   (numbers, booleans, strings per the schema's [`Hints`]).
//!
//! When a property's `encoding.contentType` is set (a comma-separated list of media ranges such
//! as `image/png, image/jpeg` or `image/*`), each of its parts' declared `Content-Type`
//! (`text/plain` when absent, RFC 7578 §4.4) is checked against it and a mismatch is reported
//! as a [`ContentTypeMismatch`] finding; decoding goes on.

use palisade_body::json::{write_json_bytes_latin1, write_json_str};
use palisade_body::media;
use palisade_body::multipart::{is_text_type, Part};
use palisade_schema::{Hints, SchemaId, TypeSet};

use crate::model::{encoding_for, Encoding};
use crate::params::{self, shape_of, Shape};

#[cfg(test)]
mod tests;

/// A part value that cannot be turned into JSON.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PartError {
    /// A property that is not an array given by several parts.
    Duplicate { name: String },
    /// A JSON part whose body is not JSON.
    NotJson { name: String, error: params::JsonSyntaxError },
    /// A text part that is not UTF-8.
    BadUtf8 { name: String },
}

/// A part whose declared `Content-Type` is not among its `encoding.contentType` ranges.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContentTypeMismatch {
    /// Index of the part.
    pub part: usize,
    pub name: String,
    /// What the part declared (`text/plain` when it declared nothing).
    pub declared: String,
    /// The encoding's `contentType`.
    pub expected: String,
}

/// Turns parts into JSON; holds a reusable buffer. Keep one per worker.
#[derive(Debug, Default)]
pub struct MultipartDecoder {
    order: Vec<u32>,
}

impl MultipartDecoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Write `parts` as one JSON object into `out` (cleared first); content-type mismatches
    /// are appended to `findings`.
    pub fn to_json(
        &mut self,
        parts: &[Part<'_>],
        schema: Option<SchemaId>,
        encoding: &[(String, Encoding)],
        hints: &dyn Hints,
        out: &mut String,
        findings: &mut Vec<ContentTypeMismatch>,
    ) -> Result<(), PartError> {
        out.clear();
        self.order.clear();
        self.order.extend(0..parts.len() as u32);
        self.order.sort_unstable_by(|&a, &b| parts[a as usize].name.cmp(&parts[b as usize].name).then(a.cmp(&b)));
        out.push('{');
        let mut i = 0;
        while i < self.order.len() {
            let name: &str = &parts[self.order[i] as usize].name;
            let mut j = i + 1;
            while j < self.order.len() && parts[self.order[j] as usize].name == name {
                j += 1;
            }
            if i > 0 {
                out.push(',');
            }
            write_json_str(out, name);
            out.push(':');
            let prop = schema.and_then(|s| hints.property(s, name));
            let enc = encoding_for(encoding, name);
            let group = &self.order[i..j];
            match shape_of(hints, prop) {
                Shape::Array(items) => {
                    out.push('[');
                    for (k, &pi) in group.iter().enumerate() {
                        if k > 0 {
                            out.push(',');
                        }
                        part_value(pi as usize, &parts[pi as usize], items, enc, hints, out, findings)?;
                    }
                    out.push(']');
                }
                _ => {
                    if group.len() > 1 {
                        return Err(PartError::Duplicate { name: name.to_owned() });
                    }
                    part_value(group[0] as usize, &parts[group[0] as usize], prop, enc, hints, out, findings)?;
                }
            }
            i = j;
        }
        out.push('}');
        Ok(())
    }
}

fn part_value(
    index: usize,
    part: &Part<'_>,
    schema: Option<SchemaId>,
    enc: Option<&Encoding>,
    hints: &dyn Hints,
    out: &mut String,
    findings: &mut Vec<ContentTypeMismatch>,
) -> Result<(), PartError> {
    let enc_ct = enc.and_then(|e| e.content_type.as_deref());
    if let Some(expected) = enc_ct {
        let declared = part.content_type.unwrap_or("text/plain");
        let ok = media::parse(declared).is_ok_and(|d| expected.split(',').filter_map(|r| media::parse(r.trim()).ok()).any(|r| r.match_score(&d).is_some()));
        if !ok {
            findings.push(ContentTypeMismatch { part: index, name: part.name.to_string(), declared: declared.to_owned(), expected: expected.to_owned() });
        }
    }
    let json = match part.content_type {
        Some(ct) => media::is_json(ct),
        None => enc_ct.is_some_and(media::is_json) || (part.filename.is_none() && enc_ct.is_none() && matches!(shape_of(hints, schema), Shape::Object(_))),
    };
    if json {
        params::validate_json(part.body).map_err(|error| PartError::NotJson { name: part.name.to_string(), error })?;
        let text = std::str::from_utf8(part.body).map_err(|_| PartError::BadUtf8 { name: part.name.to_string() })?;
        out.push_str(text.trim_matches([' ', '\t', '\r', '\n']));
    } else if part.filename.is_some() || !is_text_type(part.content_type) {
        write_json_bytes_latin1(out, part.body);
    } else {
        let text = std::str::from_utf8(part.body).map_err(|_| PartError::BadUtf8 { name: part.name.to_string() })?;
        let t = match shape_of(hints, schema) {
            Shape::Scalar(t) => t,
            _ => TypeSet(TypeSet::STRING),
        };
        params::write_scalar(out, text, t);
    }
    Ok(())
}
