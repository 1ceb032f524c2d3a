//! multipart/form-data as JSON: part values by type, repeated names, content-type findings.

use std::borrow::Cow;

use palisade_body::multipart::{parse, Limits};

use super::*;
use crate::params::tests::Fake;

const SIMPLE: &[u8] = b"preamble text\r\n--XyZ\r\nContent-Disposition: form-data; name=\"id\"\r\n\r\n42\r\n--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\nContent-Type: text/plain\r\n\r\nline1\r\nline2\r\n--XyZ--\r\nepilogue";

fn parts(body: &[u8]) -> Vec<Part<'_>> {
    let mut v = Vec::new();
    parse(body, "XyZ", &Limits::default(), &mut v).unwrap();
    v
}

fn part<'a>(name: &'a str, filename: Option<&'a str>, ct: Option<&'a str>, body: &'a [u8]) -> Part<'a> {
    Part { name: Cow::Borrowed(name), filename: filename.map(Cow::Borrowed), content_type: ct, headers: b"", body }
}

#[test]
fn json_representation() {
    let mut h = Fake::default();
    let int = h.t(TypeSet::INTEGER);
    let s = h.t(TypeSet::STRING);
    let files = h.array(s);
    let meta = h.object(&[("a", int)]);
    let body = h.object(&[("id", int), ("note", s), ("file", s), ("files", files), ("meta", meta)]);
    let ps = vec![
        part("note", None, None, b"hi \"x\""),
        part("id", None, None, b"42"),
        part("file", Some("a.bin"), Some("application/octet-stream"), &[0, 0x89, b'P', b'N', b'G']),
        part("files", Some("1.txt"), Some("text/plain"), b"one"),
        part("files", Some("2.txt"), Some("text/plain"), b"two"),
        part("meta", None, None, br#" {"a": 1} "#),
        part("raw", None, Some("image/png"), b"\xff"),
    ];
    let mut out = String::new();
    let mut findings = Vec::new();
    MultipartDecoder::new().to_json(&ps, Some(body), &[], &h, &mut out, &mut findings).unwrap();
    assert_eq!(out, "{\"file\":\"\\u0000\u{89}PNG\",\"files\":[\"one\",\"two\"],\"id\":42,\"meta\":{\"a\": 1},\"note\":\"hi \\\"x\\\"\",\"raw\":\"\u{ff}\"}");
    assert!(findings.is_empty());
}

#[test]
fn json_errors_and_content_type_findings() {
    let mut h = Fake::default();
    let s = h.t(TypeSet::STRING);
    let body = h.object(&[("a", s), ("img", s)]);
    let mut out = String::new();
    let mut f = Vec::new();
    let mut d = MultipartDecoder::new();
    let dup = vec![part("a", None, None, b"1"), part("a", None, None, b"2")];
    assert_eq!(d.to_json(&dup, Some(body), &[], &h, &mut out, &mut f), Err(PartError::Duplicate { name: "a".into() }));
    let bad_json = vec![part("a", None, Some("application/json"), b"{")];
    assert!(matches!(d.to_json(&bad_json, Some(body), &[], &h, &mut out, &mut f), Err(PartError::NotJson { .. })));
    let bad_utf8 = vec![part("a", None, None, b"\xff")];
    assert_eq!(d.to_json(&bad_utf8, Some(body), &[], &h, &mut out, &mut f), Err(PartError::BadUtf8 { name: "a".into() }));
    let enc = vec![("img".to_string(), Encoding { content_type: Some("image/png, image/jpeg".into()), ..Default::default() })];
    let ps = vec![part("img", Some("x.gif"), Some("image/gif"), b"GIF89a"), part("img2", None, None, b"")];
    let ok = vec![part("img", Some("x.png"), Some("Image/PNG"), b"\x89PNG")];
    d.to_json(&ps, Some(body), &enc, &h, &mut out, &mut f).unwrap();
    assert_eq!(f, vec![ContentTypeMismatch { part: 0, name: "img".into(), declared: "image/gif".into(), expected: "image/png, image/jpeg".into() }]);
    assert_eq!(out, r#"{"img":"GIF89a","img2":""}"#);
    f.clear();
    d.to_json(&ok, Some(body), &enc, &h, &mut out, &mut f).unwrap();
    assert!(f.is_empty());
    // A part without Content-Type counts as text/plain.
    let enc = vec![("a".to_string(), Encoding { content_type: Some("image/*".into()), ..Default::default() })];
    d.to_json(&[part("a", None, None, b"x")], Some(body), &enc, &h, &mut out, &mut f).unwrap();
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].declared, "text/plain");
}

#[test]
fn parse_then_json_end_to_end() {
    let mut h = Fake::default();
    let int = h.t(TypeSet::INTEGER);
    let s = h.t(TypeSet::STRING);
    let body = h.object(&[("id", int), ("file", s)]);
    let ps = parts(SIMPLE);
    let mut out = String::new();
    MultipartDecoder::new().to_json(&ps, Some(body), &[], &h, &mut out, &mut Vec::new()).unwrap();
    assert_eq!(out, r#"{"file":"line1\r\nline2","id":42}"#);
}
