//! `application/x-www-form-urlencoded` request bodies turned into one JSON object, guided by
//! the body schema's [`Hints`] and the media type's `encoding` map.
//!
//! The body is split with the query parser ([`Query`]: `+` is a space, strict `%XX`, names
//! decoded once). Each distinct field becomes one property of the object (keys sorted):
//! - a field whose `encoding.contentType` is JSON-like holds JSON text: checked and passed
//!   through;
//! - a field with `encoding.style: deepObject` gathers `field[a]=1&field[b][c]=2`, at any
//!   depth, with arrays as `field[]=`, `field[0]=` or repeated keys, and the plain `field=x`
//!   (the rules of deepObject query parameters, see [`crate::params`]); so does an object or
//!   array property whose encoding names no style when it is sent with brackets, the way
//!   every form library writes nested values;
//! - otherwise the field is decoded like a query parameter with the encoding's `style`
//!   (default `form`) and `explode` (default `true` for `form`, else `false`): repeated keys
//!   make an array when the property admits an array (`tags=a&tags=b`), `tags=a,b` with
//!   `explode: false`, `spaceDelimited` / `pipeDelimited` likewise; a scalar property given
//!   several times is [`Invalid::Duplicate`]; a field that the schema does not describe, given
//!   several times, is an array of strings for `additionalProperties` to judge;
//! - a property whose schema admits `object` (not `array`), sent without brackets and with no
//!   explicit `style`, is taken as JSON text (the OpenAPI default `contentType` for objects is
//!   `application/json`).
//!
//! Errors name the first offending field; the output is meaningful only on `Ok`.

use palisade_body::form::{percent_decode, DecodeError, DecodeMode, Query, QueryError};
use palisade_body::json::write_json_str;
use palisade_body::media;
use palisade_schema::{Hints, SchemaId};

use crate::model::{encoding_for, Encoding, Style};
use crate::params::{self, shape_of, Decoded, Invalid, ParamDecoder, Shape, Spec};

#[cfg(test)]
mod tests;

/// Why a form body is not acceptable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FormError {
    TooManyFields {
        limit: usize,
    },
    /// A field name that does not decode (bad `%XX` or UTF-8).
    BadName {
        index: usize,
        error: DecodeError,
    },
    /// Field `field` (the top-level property name) is not acceptable.
    Field {
        field: String,
        reason: Invalid,
    },
}

/// Decodes form bodies; holds reusable buffers. Keep one per worker.
#[derive(Debug, Default)]
pub struct FormDecoder {
    pub query: Query,
    params: ParamDecoder,
    /// (pair index, length of the top-level key, whether some pair of that key has brackets)
    /// sorted by key.
    tops: Vec<(u32, u32, bool)>,
}

impl FormDecoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Decode `body` into a JSON object written to `out` (cleared first).
    pub fn decode(
        &mut self,
        body: &[u8],
        schema: Option<SchemaId>,
        encoding: &[(String, Encoding)],
        hints: &dyn Hints,
        out: &mut String,
    ) -> Result<(), FormError> {
        out.clear();
        self.query.parse(body).map_err(|QueryError::TooManyPairs { limit }| FormError::TooManyFields { limit })?;
        let q = &self.query;
        self.tops.clear();
        for i in 0..q.len() {
            let pair = q.get(i);
            if let Some(error) = pair.name_error {
                return Err(FormError::BadName { index: i, error });
            }
            // `field[a][b]` belongs to `field` when `field` is a deepObject: declared so by its
            // encoding or, when the encoding names no style, an object or array property (the
            // way every form library writes nested values).
            let top = match pair.name.find('[') {
                Some(b) => {
                    let top = &pair.name[..b];
                    let deep = match encoding_for(encoding, top).and_then(|e| e.style) {
                        Some(style) => style == Style::DeepObject,
                        None => matches!(shape_of(hints, schema.and_then(|s| hints.property(s, top))), Shape::Array(_) | Shape::Object(_)),
                    };
                    if deep {
                        b
                    } else {
                        pair.name.len()
                    }
                }
                None => pair.name.len(),
            };
            self.tops.push((i as u32, top as u32, top < pair.name.len()));
        }
        let key = |&(i, len, _): &(u32, u32, bool)| &q.get(i as usize).name[..len as usize];
        self.tops.sort_unstable_by(|a, b| key(a).cmp(key(b)).then(a.0.cmp(&b.0)));
        self.tops.dedup_by(|later, kept| {
            let same = key(later) == key(kept);
            if same {
                kept.2 |= later.2;
            }
            same
        });

        out.push('{');
        for (n, top) in self.tops.iter().enumerate() {
            let name = key(top);
            if n > 0 {
                out.push(',');
            }
            write_json_str(out, name);
            out.push(':');
            let prop = schema.and_then(|s| hints.property(s, name));
            let enc = encoding_for(encoding, name);
            let fail = |reason| FormError::Field { field: name.to_owned(), reason };
            let bracketed = top.2;
            let json_content = enc.and_then(|e| e.content_type.as_deref()).map(|ct| (ct, media::is_json(ct)));
            let object_default = enc.and_then(|e| e.style).is_none() && !bracketed && matches!(shape_of(hints, prop), Shape::Object(_));
            if let Some((ct, true)) = json_content {
                content(q, name, ct, out).map_err(fail)?;
            } else if json_content.is_none() && object_default {
                content(q, name, "application/json", out).map_err(fail)?;
            } else {
                let style = enc.and_then(|e| e.style).unwrap_or(if bracketed { Style::DeepObject } else { Style::Form });
                let spec = Spec {
                    name,
                    style,
                    explode: enc.and_then(|e| e.explode).unwrap_or(style == Style::Form),
                    allow_empty_value: false,
                    allow_reserved: enc.is_some_and(|e| e.allow_reserved),
                    schema: prop,
                };
                match self.params.decode_query(&spec, q, &|_| false, hints, out) {
                    Ok(Decoded::Json) => {}
                    // A field that is present always decodes to something.
                    Ok(Decoded::Missing | Decoded::Empty) => out.push_str("null"),
                    Ok(Decoded::Invalid(reason)) | Err(reason) => return Err(fail(reason)),
                }
            }
        }
        out.push('}');
        Ok(())
    }
}

/// A field holding JSON text (or text of another media type, as a JSON string).
fn content(q: &Query, name: &str, content_type: &str, out: &mut String) -> Result<(), Invalid> {
    let mut it = q.iter().filter(|p| p.name == name);
    let Some(pair) = it.next() else { return Err(Invalid::Malformed("field vanished")) };
    if it.next().is_some() {
        return Err(Invalid::Duplicate);
    }
    let mut scratch = Vec::new();
    let text = percent_decode(pair.raw_value, DecodeMode::Form, &mut scratch)?;
    params::write_content(out, text, content_type)
}
