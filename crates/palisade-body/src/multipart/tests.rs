//! multipart/form-data: framing (CRLF only, preamble, epilogue, boundary inside data),
//! disposition parameters and escapes, limits.

use super::*;

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

#[test]
fn text_part_types() {
    assert!(is_text_type(None));
    for t in
        ["text/plain", "text/csv; charset=UTF-8", "application/json", "application/xml", "application/x-www-form-urlencoded", "text/plain; charset=us-ascii"]
    {
        assert!(is_text_type(Some(t)), "{t}");
    }
    for t in ["application/octet-stream", "image/png", "text/plain; charset=latin1", "not a type"] {
        assert!(!is_text_type(Some(t)), "{t}");
    }
}
