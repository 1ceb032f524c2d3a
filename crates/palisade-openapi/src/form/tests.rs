//! Form bodies: scalars, arrays from repeated keys and delimited values, JSON-encoded
//! properties, deepObject properties, errors.

use super::*;
use crate::params::tests::Fake;
use palisade_schema::TypeSet;

fn enc(ct: Option<&str>, style: Option<Style>, explode: Option<bool>) -> Encoding {
    Encoding { content_type: ct.map(Into::into), style, explode, ..Default::default() }
}

struct W {
    h: Fake,
    body: SchemaId,
}

fn world() -> W {
    let mut h = Fake::default();
    let int = h.t(TypeSet::INTEGER);
    let s = h.t(TypeSet::STRING);
    let b = h.t(TypeSet::BOOLEAN);
    let tags = h.array(s);
    let ids = h.array(int);
    let meta = h.object(&[("a", int)]);
    let body = h.object(&[("id", int), ("name", s), ("tags", tags), ("ids", ids), ("meta", meta), ("ok", b), ("raw", s)]);
    W { h, body }
}

fn decode(w: &W, body: &str, encoding: &[(String, Encoding)]) -> Result<String, FormError> {
    let mut out = String::new();
    FormDecoder::new().decode(body.as_bytes(), Some(w.body), encoding, &w.h, &mut out).map(|_| out)
}

#[test]
fn scalars_are_coerced_and_keys_sorted() {
    let w = world();
    assert_eq!(decode(&w, "name=J%C3%B6rg+M&id=42&ok=true", &[]).unwrap(), r#"{"id":42,"name":"Jörg M","ok":true}"#);
    assert_eq!(decode(&w, "id=x%22y", &[]).unwrap(), r#"{"id":"x\"y"}"#);
    assert_eq!(decode(&w, "", &[]).unwrap(), "{}");
    // Unknown fields are kept (the schema decides about additionalProperties).
    assert_eq!(decode(&w, "zz=1", &[]).unwrap(), r#"{"zz":"1"}"#);
}

#[test]
fn repeated_keys_make_arrays() {
    let w = world();
    assert_eq!(decode(&w, "tags=a&ids=1&tags=b&ids=2", &[]).unwrap(), r#"{"ids":[1,2],"tags":["a","b"]}"#);
    assert_eq!(decode(&w, "tags=a", &[]).unwrap(), r#"{"tags":["a"]}"#);
    assert_eq!(decode(&w, "id=1&id=2", &[]), Err(FormError::Field { field: "id".into(), reason: Invalid::Duplicate }));
    // A field the schema does not describe, repeated: an array of strings for the schema
    // (its `additionalProperties`) to judge, not a malformed body.
    assert_eq!(decode(&w, "zz=1&zz=2", &[]).unwrap(), r#"{"zz":["1","2"]}"#);
}

/// Stripe's bodies: every object and array property has `encoding: {style: deepObject}`;
/// SDKs write `expand[]=`, `expand[0]=`, nested keys at any depth and plain keys.
#[test]
fn deep_object_fields_as_sdks_send_them() {
    let w = world();
    let deep = |names: &[&str]| names.iter().map(|n| (n.to_string(), enc(None, Some(Style::DeepObject), Some(true)))).collect::<Vec<_>>();
    let e = deep(&["tags", "meta", "ids"]);
    for body in ["tags[]=a&tags[]=b", "tags[0]=a&tags[1]=b", "tags=a&tags=b"] {
        assert_eq!(decode(&w, body, &e).unwrap(), r#"{"tags":["a","b"]}"#, "{body}");
    }
    assert_eq!(decode(&w, "tags=a", &e).unwrap(), r#"{"tags":["a"]}"#);
    assert_eq!(decode(&w, "meta[a]=1&meta[b][c][d]=x&ids[0]=7", &e).unwrap(), r#"{"ids":[7],"meta":{"a":1,"b":{"c":{"d":"x"}}}}"#);
    // A plain key of a deepObject field is its value (the schema judges a string for an object).
    assert_eq!(decode(&w, "meta=x", &e).unwrap(), r#"{"meta":"x"}"#);
    // Without an encoding entry, brackets on an object or array property mean the same.
    assert_eq!(decode(&w, "meta[a]=1&tags[]=x", &[]).unwrap(), r#"{"meta":{"a":1},"tags":["x"]}"#);
    // ... but not on a scalar property, where `name[x]` is a field of its own.
    assert_eq!(decode(&w, "name[x]=1", &[]).unwrap(), r#"{"name[x]":"1"}"#);
}

#[test]
fn encoding_style_and_explode() {
    let w = world();
    let e = vec![("tags".to_string(), enc(None, Some(Style::Form), Some(false)))];
    assert_eq!(decode(&w, "tags=a,b,c", &e).unwrap(), r#"{"tags":["a","b","c"]}"#);
    let e = vec![("tags".to_string(), enc(None, Some(Style::PipeDelimited), None))];
    assert_eq!(decode(&w, "tags=a|b", &e).unwrap(), r#"{"tags":["a","b"]}"#);
    let e = vec![("meta".to_string(), enc(None, Some(Style::DeepObject), Some(true)))];
    assert_eq!(decode(&w, "meta[a]=1&id=2&meta[b]=x", &e).unwrap(), r#"{"id":2,"meta":{"a":1,"b":"x"}}"#);
}

#[test]
fn json_encoded_properties() {
    let w = world();
    let e = vec![("raw".to_string(), enc(Some("application/json"), None, None))];
    assert_eq!(decode(&w, "raw=%7B%22k%22%3A%5B1%2C2%5D%7D", &e).unwrap(), r#"{"raw":{"k":[1,2]}}"#);
    assert!(matches!(decode(&w, "raw=%7Bnot", &e), Err(FormError::Field { reason: Invalid::NotJson(_), .. })));
    // An object property without a style is JSON by default.
    assert_eq!(decode(&w, "meta=%7B%22a%22%3A1%7D", &[]).unwrap(), r#"{"meta":{"a":1}}"#);
    assert!(matches!(decode(&w, "meta=a", &[]), Err(FormError::Field { reason: Invalid::NotJson(_), .. })));
    // A non-JSON content type is text.
    let e = vec![("raw".to_string(), enc(Some("text/plain"), None, None))];
    assert_eq!(decode(&w, "raw=%7Bx", &e).unwrap(), r#"{"raw":"{x"}"#);
}

#[test]
fn bad_encoding_is_an_error() {
    let w = world();
    assert_eq!(
        decode(&w, "name=%zz", &[]),
        Err(FormError::Field { field: "name".into(), reason: Invalid::Decode(palisade_body::form::DecodeError::BadPercent) })
    );
    assert_eq!(decode(&w, "n%ffx=1", &[]), Err(FormError::BadName { index: 0, error: palisade_body::form::DecodeError::BadUtf8 }));
    let mut d = FormDecoder { query: Query::with_limit(2), ..Default::default() };
    let mut out = String::new();
    assert_eq!(d.decode(b"a=1&b=2&c=3", None, &[], &w.h, &mut out), Err(FormError::TooManyFields { limit: 2 }));
}
