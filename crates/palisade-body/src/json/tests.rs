//! JSON string writers, by example and against serde_json as the reader.

use super::*;

#[test]
fn escapes() {
    let mut s = String::new();
    write_json_str(&mut s, "a\"b\\c\n\u{1}\u{7f}é");
    assert_eq!(s, "\"a\\\"b\\\\c\\n\\u0001\u{7f}é\"");
    s.clear();
    write_json_bytes_latin1(&mut s, &[0, b'a', 0xff, b'"']);
    assert_eq!(s, "\"\\u0000a\u{ff}\\\"\"");
}

/// Whatever the text, serde_json reads back exactly that text; whatever the bytes, it reads
/// back one character per byte.
#[test]
fn serde_json_reads_back_what_is_written() {
    use palisade_testkit::rng::Rng;
    let mut rng = Rng::new(0x5eed_b0d1);
    let alphabet: Vec<char> = ['"', '\\', '/', '\n', '\r', '\t', '\u{0}', '\u{1f}', '\u{7f}', 'a', 'é', '€', '\u{2028}', '\u{1F600}'].into();
    let mut out = String::new();
    for _ in 0..2_000 {
        let len = rng.below(24);
        let s: String = (0..len).map(|_| rng.pick(&alphabet)).collect();
        out.clear();
        write_json_str(&mut out, &s);
        assert_eq!(serde_json::from_str::<String>(&out).unwrap(), s, "{out}");
        let bytes: Vec<u8> = (0..len).map(|_| rng.below(256) as u8).collect();
        out.clear();
        write_json_bytes_latin1(&mut out, &bytes);
        let back: Vec<u8> = serde_json::from_str::<String>(&out).unwrap().chars().map(|c| u8::try_from(u32::from(c)).unwrap()).collect();
        assert_eq!(back, bytes, "{out}");
    }
}
