//! multipart/form-data: framing (CRLF only, preamble, epilogue, boundary inside data),
//! disposition parameters and escapes, limits, JSON representation.

use super::*;
use crate::params::tests::Fake;

fn parts(body: &[u8]) -> Result<Vec<Part<'_>>, MultipartError> {
    let mut v = Vec::new();
    parse(body, "XyZ", &Limits::default(), &mut v).map(|_| v)
}

const SIMPLE: &[u8] = b"preamble text\r\n--XyZ\r\nContent-Disposition: form-data; name=\"id\"\r\n\r\n42\r\n--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\nContent-Type: text/plain\r\n\r\nline1\r\nline2\r\n--XyZ--\r\nepilogue";

#[test]
fn parses_parts() {
    let p = parts(SIMPLE).unwrap();
    assert_eq!(p.len(), 2);
    assert_eq!(p[0].name, "id");
    assert_eq!(p[0].body, b"42");
    assert_eq!(p[0].filename, None);
    assert_eq!(p[1].name, "file");
    assert_eq!(p[1].filename.as_deref(), Some("a.txt"));
    assert_eq!(p[1].content_type, Some("text/plain"));
    assert_eq!(p[1].body, b"line1\r\nline2");
}

#[test]
fn boundary_from_content_type() {
    assert_eq!(boundary("multipart/form-data; boundary=XyZ").unwrap(), "XyZ");
    assert_eq!(boundary("Multipart/Form-Data; BOUNDARY=\"a b:c\"").unwrap(), "a b:c");
    assert_eq!(boundary("multipart/form-data"), Err(MultipartError::NoBoundary));
    assert_eq!(boundary("garbage"), Err(MultipartError::NoBoundary));
    assert_eq!(boundary("multipart/form-data; boundary=\"\""), Err(MultipartError::BadBoundary));
    let long = format!("multipart/form-data; boundary={}", "a".repeat(71));
    assert_eq!(boundary(&long), Err(MultipartError::BadBoundary));
}

#[test]
fn no_preamble_empty_body_part_and_padding() {
    let body = b"--XyZ  \r\nContent-Disposition: form-data; name=\"e\"\r\n\r\n\r\n--XyZ--";
    let p = parts(body).unwrap();
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].body, b"");
    // Only the close delimiter: no parts.
    assert_eq!(parts(b"--XyZ--\r\n").unwrap().len(), 0);
}

#[test]
fn bare_lf_is_rejected() {
    let body = b"--XyZ\nContent-Disposition: form-data; name=\"a\"\n\n1\n--XyZ--\n";
    assert_eq!(parts(body), Err(MultipartError::BareLf));
    let body = b"--XyZ\r\nContent-Disposition: form-data; name=\"a\"\n\n1\r\n--XyZ--";
    assert_eq!(parts(body), Err(MultipartError::BareLf));
    let body = b"pre\n--XyZ\nContent-Disposition: form-data; name=\"a\"\n\n1\n--XyZ--";
    assert_eq!(parts(body), Err(MultipartError::BareLf));
    let body = b"--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\nX: y\n\r\n1\r\n--XyZ--";
    assert_eq!(parts(body), Err(MultipartError::BareLf));
}

#[test]
fn boundary_text_inside_data() {
    // `--XyZ` not preceded by CRLF, and `CRLF--XyZ` followed by other characters, are data.
    let body = b"--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nx--XyZ\r\n--XyZabc\r\nend\r\n--XyZ--";
    let p = parts(body).unwrap();
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].body, b"x--XyZ\r\n--XyZabc\r\nend");
}

#[test]
fn malformed_bodies() {
    assert_eq!(parts(b""), Err(MultipartError::MissingFirstBoundary));
    assert_eq!(parts(b"garbage garbage"), Err(MultipartError::MissingFirstBoundary));
    let no_final = b"--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n1";
    assert_eq!(parts(no_final), Err(MultipartError::MissingFinalBoundary));
    assert_eq!(parts(b"--XyZ"), Err(MultipartError::MissingFinalBoundary));
    assert_eq!(parts(b"--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\n"), Err(MultipartError::MissingFinalBoundary));
    assert_eq!(parts(b"--XyZ junk\r\n"), Err(MultipartError::BadDelimiter));
    let no_cd = b"--XyZ\r\nContent-Type: text/plain\r\n\r\n1\r\n--XyZ--";
    assert_eq!(parts(no_cd), Err(MultipartError::NoContentDisposition { part: 0 }));
    let att = b"--XyZ\r\nContent-Disposition: attachment; name=\"a\"\r\n\r\n1\r\n--XyZ--";
    assert_eq!(parts(att), Err(MultipartError::BadDisposition { part: 0 }));
    let no_name = b"--XyZ\r\nContent-Disposition: form-data; filename=\"a\"\r\n\r\n1\r\n--XyZ--";
    assert_eq!(parts(no_name), Err(MultipartError::NoName { part: 0 }));
    let bad_hdr = b"--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\nnocolon\r\n\r\n1\r\n--XyZ--";
    assert_eq!(parts(bad_hdr), Err(MultipartError::BadHeader { part: 0 }));
    let folded = b"--XyZ\r\nContent-Disposition: form-data;\r\n name=\"a\"\r\n\r\n1\r\n--XyZ--";
    assert_eq!(parts(folded), Err(MultipartError::BadHeader { part: 0 }));
    let unterminated_q = b"--XyZ\r\nContent-Disposition: form-data; name=\"a\r\n\r\n1\r\n--XyZ--";
    assert_eq!(parts(unterminated_q), Err(MultipartError::BadDisposition { part: 0 }));
    let mut v = Vec::new();
    assert_eq!(parse(b"--x--", "", &Limits::default(), &mut v), Err(MultipartError::BadBoundary));
}

#[test]
fn filename_escapes_and_rfc5987() {
    let body = b"--XyZ\r\ncontent-disposition: FORM-DATA; name=\"f\\\"q\"; filename=\"a\\\\b\\\".txt\"\r\n\r\nx\r\n--XyZ--";
    let p = parts(body).unwrap();
    assert_eq!(p[0].name, "f\"q");
    assert_eq!(p[0].filename.as_deref(), Some("a\\b\".txt"));
    let body = b"--XyZ\r\nContent-Disposition: form-data; name=f; filename=\"fallback.txt\"; filename*=UTF-8''%E2%82%AC%20rates.txt\r\n\r\nx\r\n--XyZ--";
    assert_eq!(parts(body).unwrap()[0].filename.as_deref(), Some("€ rates.txt"));
    let body = b"--XyZ\r\nContent-Disposition: form-data; name=f; filename*=iso-8859-1'en'%A3.txt\r\n\r\nx\r\n--XyZ--";
    assert_eq!(parts(body).unwrap()[0].filename.as_deref(), Some("£.txt"));
    let body = b"--XyZ\r\nContent-Disposition: form-data; name=f; filename*=UTF-8''%FF\r\n\r\nx\r\n--XyZ--";
    assert_eq!(parts(body), Err(MultipartError::BadDisposition { part: 0 }));
    // Raw UTF-8 in a quoted name (what browsers send).
    let body = "--XyZ\r\nContent-Disposition: form-data; name=\"prénom\"\r\n\r\nx\r\n--XyZ--";
    assert_eq!(parts(body.as_bytes()).unwrap()[0].name, "prénom");
}

#[test]
fn limits() {
    let mut body = Vec::new();
    for i in 0..5 {
        body.extend_from_slice(format!("--XyZ\r\nContent-Disposition: form-data; name=\"p{i}\"\r\n\r\nv\r\n").as_bytes());
    }
    body.extend_from_slice(b"--XyZ--");
    let mut v = Vec::new();
    let l = Limits { max_parts: 4, ..Limits::default() };
    assert_eq!(parse(&body, "XyZ", &l, &mut v), Err(MultipartError::TooManyParts { limit: 4 }));
    v.clear();
    assert_eq!(parse(&body, "XyZ", &Limits::default(), &mut v), Ok(()));
    assert_eq!(v.len(), 5);
    let big = format!("--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\nX-Pad: {}\r\n\r\nv\r\n--XyZ--", "p".repeat(10_000));
    v.clear();
    assert_eq!(parse(big.as_bytes(), "XyZ", &Limits::default(), &mut v), Err(MultipartError::HeadersTooLarge { part: 0 }));
    let many = format!("--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\n{}\r\nv\r\n--XyZ--", "X: y\r\n".repeat(40));
    v.clear();
    assert_eq!(parse(many.as_bytes(), "XyZ", &Limits::default(), &mut v), Err(MultipartError::TooManyHeaders { part: 0 }));
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
    let ps = parts(SIMPLE).unwrap();
    let mut out = String::new();
    MultipartDecoder::new().to_json(&ps, Some(body), &[], &h, &mut out, &mut Vec::new()).unwrap();
    assert_eq!(out, r#"{"file":"line1\r\nline2","id":42}"#);
}
