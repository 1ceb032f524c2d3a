//! Decompression by coding: round trips through flate2's encoders, the output limit, data that
//! is not of the coding, truncated streams.

use std::io::Write;

use super::*;

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn zlib(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn raw_deflate(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

#[test]
fn tokens() {
    assert_eq!(Coding::from_token(b"gzip"), Some(Coding::Gzip));
    assert_eq!(Coding::from_token(b" X-GZIP "), Some(Coding::Gzip));
    assert_eq!(Coding::from_token(b"Deflate"), Some(Coding::Deflate));
    for t in [&b"identity"[..], b"", b"br", b"zstd", b"compress", b"gzip, br"] {
        assert_eq!(Coding::from_token(t), None, "{:?}", String::from_utf8_lossy(t));
    }
}

#[test]
fn round_trips() {
    let text = b"{\"q\":\"1 UNION SELECT password FROM users\"}".repeat(20);
    let mut out = Vec::new();
    assert_eq!(inflate(&gzip(&text), Coding::Gzip, 4096, &mut out), Inflated::Done);
    assert_eq!(out, text);
    assert_eq!(inflate(&zlib(&text), Coding::Deflate, 4096, &mut out), Inflated::Done);
    assert_eq!(out, text);
    assert_eq!(inflate(&raw_deflate(&text), Coding::Deflate, 4096, &mut out), Inflated::Done);
    assert_eq!(out, text);
    // Concatenated gzip members are one body.
    let two = [gzip(b"a=1&"), gzip(b"b=2")].concat();
    assert_eq!(inflate(&two, Coding::Gzip, 100, &mut out), Inflated::Done);
    assert_eq!(out, b"a=1&b=2");
    // Empty input data compresses and decompresses to nothing.
    assert_eq!(inflate(&gzip(b""), Coding::Gzip, 0, &mut out), Inflated::Done);
    assert!(out.is_empty());
}

#[test]
fn output_limit() {
    let big = vec![b'a'; 10_000];
    let mut out = Vec::new();
    assert_eq!(inflate(&gzip(&big), Coding::Gzip, 10_000, &mut out), Inflated::Done);
    assert_eq!(inflate(&gzip(&big), Coding::Gzip, 9_999, &mut out), Inflated::TooLarge);
    assert_eq!(out.len(), 10_000, "limit + 1 bytes read");
    assert_eq!(inflate(&zlib(&big), Coding::Deflate, 100, &mut out), Inflated::TooLarge);
    assert_eq!(out.len(), 101);
}

#[test]
fn not_compressed_or_cut_short() {
    let mut out = vec![1, 2, 3];
    assert_eq!(inflate(b"id=1&name=x", Coding::Gzip, 100, &mut out), Inflated::Corrupt);
    assert_eq!(inflate(&gzip(b"hello")[..], Coding::Deflate, 100, &mut out), Inflated::Corrupt);
    // A gzip stream cut short: an error, with the part that decoded kept.
    let text = (0..2000).map(|i| format!("{i},")).collect::<String>();
    let z = gzip(text.as_bytes());
    assert_eq!(inflate(&z[..z.len() - 10], Coding::Gzip, 100_000, &mut out), Inflated::Corrupt);
    assert!(text.as_bytes().starts_with(&out), "a prefix of the text");
}
