use super::*;
use crate::eval::OwnedRequest;
use palisade_testkit::rng::Rng;

type Got = Vec<(String, FieldKind, String)>;

fn collect(e: &Extractor, req: &OwnedRequest, body: bool) -> (Got, Result<(), Stop>) {
    let mut out = Vec::new();
    let mut sc = Scratch::default();
    let mut f = |fl: &Field<'_>| {
        out.push((fl.location.to_string(), fl.kind, fl.value.to_string()));
        std::ops::ControlFlow::Continue(false)
    };
    let (_, r) = if body { e.body(&req.view(), &mut sc, &mut f) } else { e.head(&req.view(), &mut sc, &mut f) };
    (out, r)
}

fn s(l: &str, k: FieldKind, v: &str) -> (String, FieldKind, String) {
    (l.to_string(), k, v.to_string())
}

#[test]
fn head_values() {
    let e = Extractor::new(&["X-Api-Version".to_string()], Limits::default()).unwrap();
    let mut r = OwnedRequest::new(http::Method::GET, "/files/a%20b/..%2fetc");
    r.query = Some("id=1%27+or+1&na%6De=x&flag&&e=".into());
    r.headers.insert("user-agent", "Mozilla/5.0".parse().unwrap());
    r.headers.insert("x-api-version", "${jndi:x}".parse().unwrap());
    r.headers.insert("accept", "text/html".parse().unwrap());
    r.headers.insert("cookie", "session=abc%3Cd; theme=\"dark\"; bare".parse().unwrap());
    let (v, res) = collect(&e, &r, false);
    assert_eq!(res, Ok(()));
    use FieldKind::*;
    assert_eq!(
        v,
        vec![
            s("path[0]", PathSegment, "files"),
            s("path[1]", PathSegment, "a b"),
            s("path[2]", PathSegment, "../etc"),
            s("path", PathSegment, "/files/a b/../etc"),
            s("query.id", QueryName, "id"),
            s("query.id", QueryValue, "1' or 1"),
            s("query.name", QueryName, "name"),
            s("query.name", QueryValue, "x"),
            s("query.flag", QueryName, "flag"),
            s("query.e", QueryName, "e"),
            s("header.User-Agent", Header, "Mozilla/5.0"),
            s("header.X-Api-Version", Header, "${jndi:x}"),
            s("cookie.session", Cookie, "session"),
            s("cookie.session", Cookie, "abc<d"),
            s("cookie.theme", Cookie, "theme"),
            s("cookie.theme", Cookie, "dark"),
            s("cookie.", Cookie, "bare"),
        ]
    );
    // The whole path when it climbs.
    let r = OwnedRequest::new(http::Method::GET, "/a/../../etc/passwd");
    let (v, _) = collect(&e, &r, false);
    assert_eq!(v.last().unwrap(), &s("path", PathSegment, "/a/../../etc/passwd"));
    // Written for this rule: dots and separators encoded once, twice, as overlong UTF-8 and
    // as `%u` escapes climb too; a percent-encoded name does not.
    for p in
        ["/s/%2e%2e/%2e%2e/etc/passwd", "/.%2e/x", "/%252e%252e/x", "/a/%c0%ae%c0%ae/win.ini", "/a/%uff0e%uff0e/x", "/%2e%2e%2fetc%2fpasswd", "/a/%5cwin.ini"]
    {
        let (v, _) = collect(&e, &OwnedRequest::new(http::Method::GET, p), false);
        assert_eq!((v.last().unwrap().0.as_str(), v.last().unwrap().1), ("path", PathSegment), "{p}");
    }
    // An encoded single dot before the last segment is no climb, but no client sends it: the
    // whole path is inspected too (`unsent_segment`); as the last segment it is left alone.
    let (v, _) = collect(&e, &OwnedRequest::new(http::Method::GET, "/a/%2e/b"), false);
    assert_eq!(v.last().unwrap(), &s("path", PathSegment, "/a/./b"));
    for p in ["/wiki/%E6%97%A5%E6%9C%AC", "/files/a%20b.txt", "/v/%2e"] {
        let (v, _) = collect(&e, &OwnedRequest::new(http::Method::GET, p), false);
        assert!(v.iter().all(|x| x.0 != "path"), "{p}: {v:?}");
    }
}

fn with_body(ct: &str, body: &str) -> OwnedRequest {
    let mut r = OwnedRequest::new(http::Method::POST, "/");
    r.headers.insert("content-type", ct.parse().unwrap());
    r.body = body.as_bytes().to_vec();
    r
}

#[test]
fn json_keys_and_strings_at_any_depth_numbers_skipped() {
    let e = Extractor::default();
    let r = with_body("application/json", r#"{"users":[{"name":"a\u0027b","age":42,"ok":true},{"a/b":[["x"]]}],"n":null}"#);
    let (v, _) = collect(&e, &r, true);
    use FieldKind::*;
    assert_eq!(
        v,
        vec![
            s("body/users", JsonKey, "users"),
            s("body/users/0/name", JsonKey, "name"),
            s("body/users/0/name", JsonValue, "a'b"),
            s("body/users/0/age", JsonKey, "age"),
            s("body/users/0/ok", JsonKey, "ok"),
            s("body/users/1/a~1b", JsonKey, "a/b"),
            s("body/users/1/a~1b/0/0", JsonValue, "x"),
            s("body/n", JsonKey, "n"),
        ]
    );
    // Not JSON: raw text.
    let (v, _) = collect(&e, &with_body("application/json", "{'a': 1"), true);
    assert_eq!(v, vec![s("body", Body, "{'a': 1")]);
    // A scalar root.
    let (v, _) = collect(&e, &with_body("application/json", "\"<x>\""), true);
    assert_eq!(v, vec![s("body", JsonValue, "<x>")]);
}

#[test]
fn form_multipart_xml_text() {
    use FieldKind::*;
    let e = Extractor::default();
    let (v, _) = collect(&e, &with_body("application/x-www-form-urlencoded", "comment=it%27s+fine&x="), true);
    assert_eq!(v, vec![s("body/comment", FormName, "comment"), s("body/comment", FormValue, "it's fine"), s("body/x", FormName, "x")]);
    let mp = "--XX\r\nContent-Disposition: form-data; name=\"title\"\r\n\r\nhello\r\n--XX\r\nContent-Disposition: form-data; name=\"f\"; filename=\"../a.php\"\r\nContent-Type: image/png\r\n\r\n\x01\x02\r\n--XX--\r\n";
    let (v, _) = collect(&e, &with_body("multipart/form-data; boundary=XX", mp), true);
    assert_eq!(
        v,
        vec![
            s("body/title", FormName, "title"),
            s("body/title", MultipartValue, "hello"),
            s("body/f", FormName, "f"),
            s("body/f", MultipartFilename, "../a.php")
        ]
    );
    let xml = "<?xml version=\"1.0\"?><doc id=\"7\"><item a='x'>one &lt;b&gt;</item><![CDATA[two]]><e/></doc>";
    let (v, _) = collect(&e, &with_body("application/xml", xml), true);
    assert_eq!(
        v,
        vec![
            s("body", XmlDocument, xml),
            s("body/doc/@id", XmlAttribute, "7"),
            s("body/doc/item/@a", XmlAttribute, "x"),
            s("body/doc/item", XmlText, "one &lt;b&gt;"),
            s("body/doc", XmlText, "two"),
        ]
    );
    // Indentation is layout; a line break before the text that none follows is the value's.
    let xml = "<r>\n  <a>\n    pretty\n  </a><b>\nwhoami</b><c>  x </c></r>";
    let (v, _) = collect(&e, &with_body("application/xml", xml), true);
    let texts: Vec<_> = v.iter().filter(|f| f.1 == XmlText).map(|f| f.2.as_str()).collect();
    assert_eq!(texts, vec!["pretty", "\nwhoami", "x"]);
    let (v, _) = collect(&e, &with_body("text/plain", "just text"), true);
    assert_eq!(v, vec![s("body", Body, "just text")]);
    let (v, _) = collect(&e, &OwnedRequest::new(http::Method::POST, "/"), true);
    assert!(v.is_empty());
}

#[test]
fn limits_stop_and_report() {
    let e = Extractor::new(&[], Limits { max_values: 100, max_bytes: 10, max_depth: 8 }).unwrap();
    let mut r = OwnedRequest::new(http::Method::GET, "/");
    r.query = Some("a=0123456789".into());
    let (v, res) = collect(&e, &r, false);
    assert_eq!(res, Err(Stop::Exceeded(Exceeded::Bytes { limit: 10 })));
    assert_eq!(v.len(), 1);
    let e = Extractor::new(&[], Limits { max_values: 100, max_bytes: 1000, max_depth: 2 }).unwrap();
    // Too deep for the JSON parser: inspected as raw text instead.
    let (v, _) = collect(&e, &with_body("application/json", "[[[\"x\"]]]"), true);
    assert_eq!(v, vec![s("body", FieldKind::Body, "[[[\"x\"]]]")]);
}

#[test]
fn json_streaming_paths_empty_containers_escapes() {
    use FieldKind::*;
    let e = Extractor::default();
    let body = r#" { "a" : [ ] , "b":{}, "c":[[],["x", {"k\u002fy":"v\"w"}]], "d":[1,"z"] } "#;
    let (v, r) = collect(&e, &with_body("application/json", body), true);
    assert_eq!(r, Ok(()));
    assert_eq!(
        v,
        vec![
            s("body/a", JsonKey, "a"),
            s("body/b", JsonKey, "b"),
            s("body/c", JsonKey, "c"),
            s("body/c/1/0", JsonValue, "x"),
            s("body/c/1/1/k~1y", JsonKey, "k/y"),
            s("body/c/1/1/k~1y", JsonValue, "v\"w"),
            s("body/d", JsonKey, "d"),
            s("body/d/1", JsonValue, "z"),
        ]
    );
}

#[test]
fn json_that_breaks_off_is_inspected_as_text_too() {
    use FieldKind::*;
    let e = Extractor::default();
    // Values read before the syntax error are handed over, then the whole body as text.
    for body in [r#"{"a":"<x>","b":"#, r#"{"a":"<x>"} trailing"#, r#"{"a":"<x>" "b":1}"#, r#"{"a":"<x>","b":tru}"#, r#"["<x>",]"#] {
        let (v, r) = collect(&e, &with_body("application/json", body), true);
        assert_eq!(r, Ok(()));
        assert_eq!(v.last().unwrap(), &s("body", Body, body), "{body}");
        assert!(v.iter().any(|x| x.2 == "<x>" && x.1 == JsonValue), "{body}: {v:?}");
    }
    // Deeper than the limit: text.
    let shallow = Extractor::new(&[], Limits { max_depth: 3, ..Limits::default() }).unwrap();
    let (v, _) = collect(&shallow, &with_body("application/json", r#"[[[["deep"]]]]"#), true);
    assert_eq!(v, vec![s("body", Body, r#"[[[["deep"]]]]"#)]);
    let (v, _) = collect(&shallow, &with_body("application/json", r#"[[["ok"]]]"#), true);
    assert_eq!(v, vec![s("body/0/0/0", JsonValue, "ok")]);
    // Declared JSON but not UTF-8: inspected as text with the bad bytes replaced; a binary
    // type that is not UTF-8 is not inspected.
    let mut r = with_body("application/json", "");
    r.body = b"{\"a\":\"<x>\xff\"}".to_vec();
    let (v, _) = collect(&e, &r, true);
    assert_eq!(v, vec![s("body", Body, "{\"a\":\"<x>\u{FFFD}\"}")]);
    let mut r = with_body("application/octet-stream", "");
    r.body = b"<x>\xff".to_vec();
    assert!(collect(&e, &r, true).0.is_empty());
}

#[test]
fn text_bodies_that_are_json_are_walked_as_json() {
    use FieldKind::*;
    let e = Extractor::default();
    // A beacon sent as text/plain: one document.
    let (v, r) = collect(&e, &with_body("text/plain;charset=UTF-8", r#" {"type":"perf","names":["a.js"]} "#), true);
    assert_eq!(r, Ok(()));
    assert_eq!(
        v,
        vec![s("body/type", JsonKey, "type"), s("body/type", JsonValue, "perf"), s("body/names", JsonKey, "names"), s("body/names/0", JsonValue, "a.js")]
    );
    // An envelope of JSON Lines, under an unknown type, under a text type and labelled JSON:
    // each line walked at the body's locations.
    let env = "{\"event_id\":\"e1\"}\n{\"type\":\"event\"}\r\n\n{\"message\":\"sleep(250) then retry\"}\n";
    for ct in ["application/x-sentry-envelope", "text/plain", "application/json"] {
        let (v, _) = collect(&e, &with_body(ct, env), true);
        // (Labelled JSON, the first line's values were handed over by the walk that broke off.)
        let mut got: Vec<_> = v.iter().filter(|x| x.1 == JsonValue).map(|x| (x.0.as_str(), x.2.as_str())).collect();
        got.dedup();
        assert_eq!(got, vec![("body/event_id", "e1"), ("body/type", "event"), ("body/message", "sleep(250) then retry")], "{ct}");
        assert!(!v.iter().any(|x| x.1 == Body), "{ct}: {v:?}");
    }
    // Not JSON throughout: one text, as before.
    for body in ["{\"a\":1}\nnot json\n", "{\"a\":1} tail", "[1,2", "\"a string\"", "{\"a\":1}\n\"x\"\n"] {
        let (v, _) = collect(&e, &with_body("text/plain", body), true);
        assert_eq!(v, vec![s("body", Body, body)], "{body:?}");
    }
}

/// Collects body fields with a callback that calls every key clean except those in `dirty`.
fn collect_judged(sc: &mut Scratch, body: &str, dirty: &[&str]) -> (Got, Counts) {
    let e = Extractor::default();
    let r = with_body("application/json", body);
    let mut out = Vec::new();
    let mut f = |fl: &Field<'_>| {
        out.push((fl.location.to_string(), fl.kind, fl.value.to_string()));
        std::ops::ControlFlow::Continue(!dirty.contains(&fl.value))
    };
    let (counts, r) = e.body(&r.view(), sc, &mut f);
    assert_eq!(r, Ok(()));
    (out, counts)
}

#[test]
fn repeated_clean_keys_of_an_array_of_objects_are_counted_not_handed_over_again() {
    use FieldKind::*;
    let mut sc = Scratch::default();
    let body = r#"{"items":[{"k":"1","j":"x"},{"k":"2","j":"y"},{"k":"3","z":"w","j":"v"}]}"#;
    let (v, counts) = collect_judged(&mut sc, body, &[]);
    let keys: Vec<String> = v.iter().filter(|x| x.1 == JsonKey).map(|x| x.0.clone()).collect();
    // `k` at position 0 repeats; `j` repeats at position 1, then moves to position 2 (handed
    // over again there); `z` is new.
    assert_eq!(keys, ["body/items", "body/items/0/k", "body/items/0/j", "body/items/2/z", "body/items/2/j"]);
    // Every value is still handed over with its full location, and every key counted.
    let vals: Vec<(String, String)> = v.iter().filter(|x| x.1 == JsonValue).map(|x| (x.0.clone(), x.2.clone())).collect();
    assert_eq!(vals.len(), 7);
    assert!(vals.contains(&("body/items/1/k".into(), "2".into())) && vals.contains(&("body/items/2/j".into(), "v".into())));
    assert_eq!(counts.values, 1 + 7 + 7);

    // A key the callback did not call clean is handed over every time.
    let (v, _) = collect_judged(&mut sc, body, &["k"]);
    assert_eq!(v.iter().filter(|x| x.1 == JsonKey && x.2 == "k").count(), 3);

    // Keys with escapes are not remembered; equal prefixes are not equal keys.
    let (v, _) = collect_judged(&mut sc, r#"[{"k\u0041":1},{"k\u0041":2},{"kk":3},{"k":4}]"#, &[]);
    let keys: Vec<String> = v.iter().filter(|x| x.1 == JsonKey).map(|x| x.2.clone()).collect();
    assert_eq!(keys, ["kA", "kA", "kk", "k"]);

    // Nothing is carried over to the next body (the scratch is reused across requests).
    let (v, _) = collect_judged(&mut sc, r#"[{"k":1}]"#, &[]);
    assert_eq!(v.iter().filter(|x| x.1 == JsonKey).count(), 1);
    let (v, _) = collect_judged(&mut sc, r#"[{"k":1}]"#, &[]);
    assert_eq!(v.iter().filter(|x| x.1 == JsonKey).count(), 1);
}

#[test]
fn objects_that_are_not_array_elements_use_the_key_memo_once_their_first_key_repeats() {
    use FieldKind::*;
    let mut sc = Scratch::default();
    let keys_of = |v: &Got| -> Vec<String> { v.iter().filter(|x| x.1 == JsonKey).map(|x| x.0.clone()).collect() };
    // Objects of other shapes side by side (an order's customer, address, payment): each key
    // handed over once, and the same key at the same position of a sibling of another shape
    // is handed over again (`id` in `b`: `a`'s first key was not the one remembered there).
    let (v, counts) = collect_judged(&mut sc, r#"{"a":{"id":1,"x":"1"},"b":{"y":2,"x":"2"},"c":{"y":3,"x":"3"}}"#, &[]);
    // `c` begins as `b` did: its other keys are looked up, but `b`, whose first key was not
    // the one remembered, did not remember `x`.
    assert_eq!(keys_of(&v), ["body/a", "body/a/id", "body/a/x", "body/b", "body/b/y", "body/b/x", "body/c", "body/c/x"]);
    assert_eq!(counts.values, 9 + 3);
    // A map of records: from the third record on, its keys are only counted.
    let body = r#"{"m":{"u1":{"n":"a","e":"b","t":1},"u2":{"n":"c","e":"d","t":2},"u3":{"n":"e","e":"f","t":3},"u4":{"n":"g","e":"h","t":4}}}"#;
    let (v, counts) = collect_judged(&mut sc, body, &[]);
    assert_eq!(
        keys_of(&v),
        ["body/m", "body/m/u1", "body/m/u1/n", "body/m/u1/e", "body/m/u1/t", "body/m/u2", "body/m/u2/e", "body/m/u2/t", "body/m/u3", "body/m/u4"]
    );
    assert_eq!(counts.values, 1 + 4 + 12 + 8);
    // The objects of an array use it from the second one on, whatever their first key.
    let (v, _) = collect_judged(&mut sc, r#"[{"a":1,"b":2},{"c":1,"b":2},{"c":1,"b":2}]"#, &[]);
    assert_eq!(keys_of(&v), ["body/0/a", "body/0/b", "body/1/c"]);
    // Judged not clean, every key is handed over, whatever the policy.
    let (v, _) = collect_judged(&mut sc, body, &["n", "e", "t"]);
    assert_eq!(v.iter().filter(|x| x.1 == JsonKey).count(), 1 + 4 + 12);
}

#[test]
fn a_repeated_attack_key_is_reported_in_every_object() {
    // End to end through the engine: a key that is an attack is never skipped.
    let engine = crate::Engine::new(crate::EngineConfig::default()).unwrap();
    let r = with_body("application/json", r#"[{"' or 1=1--":1},{"' or 1=1--":2},{"<script>alert(1)</script>":3}]"#);
    let findings = engine.inspect(&r.view());
    let mut locs: Vec<String> = findings.iter().map(|f| f.location.clone()).collect();
    locs.dedup();
    assert_eq!(locs.len(), 3, "{findings:?}");
}

// Property tests of the JSON walk: on generated documents (escapes, unicode, long strings,
// whitespace, repeated object shapes, deep nesting) the values and locations handed over equal
// those of a reference walk over serde_json's parser, and mutated documents are rejected (the
// body then inspected as text) exactly when serde_json rejects them.

/// A reference walk: serde_json's parser, visited in document order, with the extractor's
/// rules (keys and non-empty strings, JSON Pointer locations).
mod reference {
    use super::Got;
    use crate::FieldKind;
    use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
    use std::fmt;

    enum Seg {
        Key(String),
        Index(usize),
    }

    #[derive(Default)]
    pub struct Walk {
        path: Vec<Seg>,
        pub out: Got,
    }

    impl Walk {
        fn location(&self) -> String {
            let mut s = String::from("body");
            for seg in &self.path {
                s.push('/');
                match seg {
                    Seg::Key(k) => s.push_str(&k.replace('~', "~0").replace('/', "~1")),
                    Seg::Index(i) => s.push_str(&i.to_string()),
                }
            }
            s
        }
    }

    struct Node<'w>(&'w mut Walk);

    impl<'de> DeserializeSeed<'de> for Node<'_> {
        type Value = ();
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
            d.deserialize_any(self)
        }
    }

    impl<'de> Visitor<'de> for Node<'_> {
        type Value = ();
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("any JSON value")
        }
        fn visit_bool<E>(self, _: bool) -> Result<(), E> {
            Ok(())
        }
        fn visit_i64<E>(self, _: i64) -> Result<(), E> {
            Ok(())
        }
        fn visit_u64<E>(self, _: u64) -> Result<(), E> {
            Ok(())
        }
        fn visit_f64<E>(self, _: f64) -> Result<(), E> {
            Ok(())
        }
        fn visit_unit<E>(self) -> Result<(), E> {
            Ok(())
        }
        fn visit_str<E>(self, v: &str) -> Result<(), E> {
            if !v.is_empty() {
                let loc = self.0.location();
                self.0.out.push((loc, FieldKind::JsonValue, v.to_string()));
            }
            Ok(())
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<(), A::Error> {
            for i in 0.. {
                self.0.path.push(Seg::Index(i));
                let more = a.next_element_seed(Node(self.0))?;
                self.0.path.pop();
                if more.is_none() {
                    break;
                }
            }
            Ok(())
        }
        fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<(), A::Error> {
            while let Some(k) = a.next_key::<String>()? {
                self.0.path.push(Seg::Key(k.clone()));
                if !k.is_empty() {
                    let loc = self.0.location();
                    self.0.out.push((loc, FieldKind::JsonKey, k));
                }
                a.next_value_seed(Node(self.0))?;
                self.0.path.pop();
            }
            Ok(())
        }
    }

    /// The fields of `body`, and whether serde_json accepts it (when not: those seen before
    /// the error). Numbers beyond the range of `f64` (`1e400`), which serde_json rejects and
    /// JSON allows, are accepted here as the extractor does.
    pub fn walk(body: &[u8]) -> (Got, bool) {
        let mut w = Walk::default();
        let mut de = serde_json::Deserializer::from_slice(body);
        let r = Node(&mut w).deserialize(&mut de).and_then(|_| de.end());
        let ok = match r {
            Ok(()) => true,
            Err(e) if e.to_string().contains("number out of range") => return (out_of_range(body), true),
            Err(_) => false,
        };
        (w.out, ok)
    }

    /// [`walk`] of a document with out-of-range numbers: the same document with each number
    /// replaced by `0` (numbers are not handed over, so the fields are the same).
    fn out_of_range(body: &[u8]) -> Got {
        let text = String::from_utf8_lossy(body);
        let mut out = String::new();
        let mut in_str = false;
        let mut esc = false;
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            if in_str {
                out.push(c);
                match (esc, c) {
                    (true, _) => esc = false,
                    (false, '\\') => esc = true,
                    (false, '"') => in_str = false,
                    _ => {}
                }
            } else if c == '"' {
                in_str = true;
                out.push(c);
            } else if c == '-' || c.is_ascii_digit() {
                while chars.peek().is_some_and(|d| d.is_ascii_digit() || matches!(d, '.' | '+' | '-' | 'e' | 'E')) {
                    chars.next();
                }
                out.push('0');
            } else {
                out.push(c);
            }
        }
        let (got, ok) = walk(out.as_bytes());
        assert!(ok, "{out}");
        got
    }
}

// Generated documents: `Rng` is a deterministic xorshift64*, so that failures reproduce.

fn gen_ws(r: &mut Rng, out: &mut String) {
    if r.below(4) == 0 {
        out.push_str(r.pick(&[" ", "\n", "\t", "\r\n", "  \n\t "]));
    }
}

/// A string literal (with its quotes) of random contents, each character written raw or
/// escaped.
fn gen_string(r: &mut Rng, out: &mut String) {
    out.push('"');
    let len = match r.below(8) {
        0 => 20 + r.below(80),
        1 => 0,
        _ => r.below(12),
    };
    for _ in 0..len {
        let piece = match r.below(16) {
            0 => r.pick(&["\\\"", "\\\\", "\\/", "/", "~", "\\b", "\\f", "\\n", "\\r", "\\t", "\\u0000", "\\u001f", "\\u0041", "\\u00e9"]),
            1 => r.pick(&["é", "中", "😀", "\\u4e2d", "\\ud83d\\ude00", "\\uD834\\uDD1E", "ß", "\u{7f}", "\u{80}", "\u{10FFFF}"]),
            2 => r.pick(&["<script>", "' or 1=1--", "${jndi:x}", "../", "%27"]),
            _ => {
                let c = (b'a' + r.below(26) as u8) as char;
                out.push(c);
                continue;
            }
        };
        out.push_str(piece);
    }
    out.push('"');
}

fn gen_key(r: &mut Rng, out: &mut String) {
    if r.below(2) == 0 {
        out.push('"');
        out.push_str(r.pick(&["id", "name", "a/b", "t~x", "", "k\\u0041", "a_key_longer_than_sixteen_bytes", "é", "abcdefgh", "abcdefg", "abcdefghi"]));
        out.push('"');
    } else {
        gen_string(r, out);
    }
}

fn gen_number(r: &mut Rng, out: &mut String) {
    if r.below(3) == 0 {
        out.push_str(r.pick(&["0", "-0", "1.5e-3", "0.0", "1E+2", "-12.75", "123456789012345678901234567890", "2e10"]));
    } else {
        out.push_str(&(r.next_u64() as i64 % 100_000).to_string());
    }
}

fn gen_value(r: &mut Rng, depth: u32, out: &mut String) {
    let choice = if depth == 0 { 2 + r.below(8) } else { r.below(10) };
    match choice {
        0 => {
            // An object; sometimes an array of objects of one shape (the key memo's case).
            if r.below(3) == 0 {
                let keys: Vec<String> = (0..1 + r.below(4))
                    .map(|_| {
                        let mut k = String::new();
                        gen_key(r, &mut k);
                        k
                    })
                    .collect();
                out.push('[');
                for i in 0..r.below(5) {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push('{');
                    for (j, k) in keys.iter().enumerate() {
                        if j > 0 {
                            out.push(',');
                        }
                        // Now and then another key at that position.
                        if r.below(6) == 0 {
                            gen_key(r, out);
                        } else {
                            out.push_str(k);
                        }
                        out.push(':');
                        gen_value(r, depth - 1, out);
                    }
                    out.push('}');
                }
                out.push(']');
                return;
            }
            out.push('{');
            gen_ws(r, out);
            for i in 0..r.below(5) {
                if i > 0 {
                    out.push(',');
                    gen_ws(r, out);
                }
                gen_key(r, out);
                gen_ws(r, out);
                out.push(':');
                gen_ws(r, out);
                gen_value(r, depth - 1, out);
                gen_ws(r, out);
            }
            out.push('}');
        }
        1 => {
            out.push('[');
            gen_ws(r, out);
            for i in 0..r.below(5) {
                if i > 0 {
                    out.push(',');
                    gen_ws(r, out);
                }
                gen_value(r, depth - 1, out);
                gen_ws(r, out);
            }
            out.push(']');
        }
        2..=5 => gen_string(r, out),
        6 | 7 => gen_number(r, out),
        _ => out.push_str(r.pick(&["true", "false", "null"])),
    }
}

fn gen_document(r: &mut Rng) -> String {
    let mut doc = String::new();
    gen_ws(r, &mut doc);
    let depth = 1 + r.below(6) as u32;
    // Mostly containers at the root, like request bodies.
    if r.below(4) == 0 {
        gen_value(r, depth, &mut doc);
    } else {
        doc.push('{');
        for i in 0..1 + r.below(4) {
            if i > 0 {
                doc.push(',');
            }
            gen_key(r, &mut doc);
            doc.push(':');
            gen_value(r, depth, &mut doc);
        }
        doc.push('}');
    }
    gen_ws(r, &mut doc);
    doc
}

fn body_fields(body: &[u8], clean: bool, sc: &mut Scratch) -> (Got, Counts, Result<(), Stop>) {
    let e = Extractor::default();
    let mut r = with_body("application/json", "");
    r.body = body.to_vec();
    let mut out = Vec::new();
    let mut f = |fl: &Field<'_>| {
        out.push((fl.location.to_string(), fl.kind, fl.value.to_string()));
        std::ops::ControlFlow::Continue(clean)
    };
    let (counts, res) = e.body(&r.view(), sc, &mut f);
    (out, counts, res)
}

#[test]
fn json_walk_equals_a_serde_reference_walk_on_generated_documents() {
    let mut r = Rng::new(0x9E37_79B9_7F4A_7C15);
    let mut sc = Scratch::default();
    for case in 0..3000 {
        let doc = gen_document(&mut r);
        let (want, ok) = reference::walk(doc.as_bytes());
        assert!(ok, "case {case}: the generator wrote invalid JSON: {doc}");
        let (got, counts, res) = body_fields(doc.as_bytes(), false, &mut sc);
        assert_eq!(res, Ok(()));
        assert_eq!(got, want, "case {case}: {doc}");
        assert_eq!(counts.values, want.len());
        assert_eq!(counts.bytes, want.iter().map(|x| x.2.len()).sum::<usize>());

        // Every value judged clean: repeated keys are counted, not handed over again; the
        // values (with their locations) are unchanged.
        let (got, counts, _) = body_fields(doc.as_bytes(), true, &mut sc);
        let values = |v: &Got| v.iter().filter(|x| x.1 == FieldKind::JsonValue).cloned().collect::<Vec<_>>();
        assert_eq!(values(&got), values(&want), "case {case}: {doc}");
        let mut rest = want.iter().filter(|x| x.1 == FieldKind::JsonKey);
        for k in got.iter().filter(|x| x.1 == FieldKind::JsonKey) {
            assert!(rest.any(|w| w == k), "case {case}: key {k:?} not in order: {doc}");
        }
        assert_eq!(counts.values, want.len(), "case {case}: {doc}");
    }
}

#[test]
fn json_walk_rejects_mutated_documents_as_serde_does() {
    let mut r = Rng::new(0xD1B5_4A32_D192_ED03);
    let mut sc = Scratch::default();
    let mut rejected = 0;
    for case in 0..4000 {
        let mut doc = gen_document(&mut r).into_bytes();
        // One or two edits: cut, insert, delete or replace a byte (structural bytes, escape
        // bytes and invalid UTF-8 among them).
        for _ in 0..1 + r.below(2) {
            let at = r.below(doc.len() + 1);
            let byte = *[b'"', b'\\', b'{', b'}', b'[', b']', b',', b':', b' ', b'u', b'0', b'-', b'.', b'e', 0x01, 0x80, 0xC3, 0xFF, b'a', b't']
                .get(r.below(20))
                .unwrap_or(&b'x');
            match r.below(4) {
                0 => doc.truncate(at),
                1 => doc.insert(at, byte),
                2 if at < doc.len() => {
                    doc.remove(at);
                }
                _ if at < doc.len() => doc[at] = byte,
                _ => {}
            }
        }
        if doc.is_empty() {
            continue; // An empty body is not inspected.
        }
        let (want, ok) = reference::walk(&doc);
        let (got, _, res) = body_fields(&doc, false, &mut sc);
        assert_eq!(res, Ok(()));
        let shown = String::from_utf8_lossy(&doc);
        if ok {
            assert_eq!(got, want, "case {case}: {shown}");
            continue;
        }
        rejected += 1;
        // Not JSON: whatever came before the error, then the whole body as text.
        let (last, before) = got.split_last().unwrap_or_else(|| panic!("case {case}: nothing handed over: {shown}"));
        assert_eq!(last, &s("body", FieldKind::Body, &shown), "case {case}");
        assert!(before.len() <= want.len() && before == &want[..before.len()], "case {case}: {shown}\n got {before:?}\nwant {want:?}");
    }
    assert!(rejected > 1000, "the mutations should break most documents ({rejected})");
}

#[test]
fn json_walk_deep_nesting_matches_serde_at_the_limit() {
    let mut sc = Scratch::default();
    for depth in [1usize, 2, 16, 17, 127, 128, 129, 200] {
        for inner in ["\"x\"", "{\"k\":\"v\"}", "[]", "{}"] {
            let doc = format!("{}{inner}{}", "[".repeat(depth), "]".repeat(depth));
            let (want, ok) = reference::walk(doc.as_bytes());
            let (got, _, _) = body_fields(doc.as_bytes(), false, &mut sc);
            // The extractor's limit: 128 open containers that hold something (an empty one
            // is skipped without opening); serde_json's recursion limit: 127 containers.
            let containers = depth + usize::from(inner.starts_with(['{', '[']));
            let extractor_ok = depth + usize::from(inner.starts_with("{\"")) <= 128;
            assert_eq!(ok, containers <= 127, "serde_json at depth {depth} {inner}");
            if extractor_ok && ok {
                assert_eq!(got, want, "depth {depth} {inner}");
            } else if extractor_ok {
                // Past serde_json's limit, within the extractor's: still walked as JSON.
                assert!(got.iter().all(|x| x.1 != FieldKind::Body), "depth {depth} {inner}");
            } else {
                assert_eq!(got, vec![s("body", FieldKind::Body, &doc)], "depth {depth} {inner}");
            }
        }
    }
}

#[test]
fn reference_walk_accepts_numbers_beyond_f64_as_the_extractor_does() {
    let doc = r#"{"a":[1e400,"x"],"b":-12e-999}"#;
    let (want, ok) = reference::walk(doc.as_bytes());
    assert!(ok);
    assert_eq!(want, vec![s("body/a", FieldKind::JsonKey, "a"), s("body/a/1", FieldKind::JsonValue, "x"), s("body/b", FieldKind::JsonKey, "b")]);
    assert_eq!(body_fields(doc.as_bytes(), false, &mut Scratch::default()).0, want);
}

// The JSON walk under limits and callback verdicts, against the serde_json reference walk
// ([`reference::walk`]) and the rules of the budget: on generated, corpus-like, mutated, deep,
// whitespace-laden and invalid UTF-8 documents, under random limits and random verdicts of the
// callback (clean, not clean, stop), the walk counts every field serde_json sees, in its order,
// against the limits; hands each over, except a key whose text the callback judged clean
// before (the key memo); and ends as the rules say (JSON or not, exceeded, stopped).

/// What a callback says of the `i`-th field it sees (`Err`: stop there).
#[derive(Clone, Copy)]
enum Judge {
    AllClean,
    NoneClean,
    /// Clean unless the value's bytes hash to a multiple of the number.
    Mixed(u64),
    /// Clean, and `Break` at the field of that index.
    StopAt(usize),
}

fn judged(j: Judge, i: usize, value: &str) -> Verdict {
    match j {
        Judge::AllClean => Verdict::Continue(true),
        Judge::NoneClean => Verdict::Continue(false),
        Judge::Mixed(m) => {
            let h = value.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3));
            Verdict::Continue(h % m != 0)
        }
        Judge::StopAt(k) if i == k => Verdict::Break(()),
        Judge::StopAt(_) => Verdict::Continue(true),
    }
}

type Walked = (Got, Counts, Result<bool, Stop>);

/// The JSON walk of `body`, as the body extractor runs it, with its fields, counts and result.
fn walk_json(body: &[u8], limits: Limits, judge: Judge, sc: &mut Scratch) -> Walked {
    let mut out = Vec::new();
    let mut f = |fl: &Field<'_>| {
        let v = judged(judge, out.len(), fl.value);
        out.push((fl.location.to_string(), fl.kind, fl.value.to_string()));
        v
    };
    let f: &mut Callback<'_> = &mut f;
    let mut budget = Budget { tally: Tally { values: 0, bytes: 0, limits }, f };
    let r = json(body, sc, &mut budget);
    let counts = Counts { values: budget.tally.values, bytes: budget.tally.bytes, skipped: None };
    (out, counts, r)
}

/// Open containers at the deepest point of `body` (brackets outside strings).
fn nesting(body: &[u8]) -> usize {
    let (mut depth, mut max, mut in_str, mut esc) = (0usize, 0, false, false);
    for &c in body {
        match (in_str, esc, c) {
            (true, true, _) => esc = false,
            (true, false, b'\\') => esc = true,
            (true, false, b'"') => in_str = false,
            (true, ..) => {}
            (false, _, b'"') => in_str = true,
            (false, _, b'[' | b'{') => {
                depth += 1;
                max = max.max(depth);
            }
            (false, _, b']' | b'}') => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

/// The walk of `body` under `limits` and `judge`, checked against the serde_json reference
/// walk: every field serde_json sees is counted in order (values, then bytes, against the
/// limits: the field that exceeds one ends the walk with [`Stop::Exceeded`]); each is handed
/// over, except a key whose text was handed over before and judged clean; a `Break` ends the
/// walk with [`Stop::Caller`]; a body serde_json refuses (or nested deeper than the limit) ends
/// it with `Ok(false)` after no more fields than serde_json saw before its error; else `Ok(true)`
/// with every field counted. Returns the walk's result.
fn checked_walk(body: &[u8], limits: Limits, judge: Judge, sc: &mut Scratch, what: &str) -> Walked {
    let got = walk_json(body, limits, judge, sc);
    let (fields, counts, res) = &got;
    let (want, ok) = reference::walk(body);
    if !ok && nesting(body) > 127 {
        // Past serde_json's recursion limit: no reference (`json_walk_deep_nesting_matches_serde_at_the_limit`).
        return got;
    }
    let shown = String::from_utf8_lossy(body);
    let fail = |why: &str| -> ! { panic!("{what}: {why} on {shown:?}\n got {got:?}\nwant {want:?} (serde_json accepts: {ok})") };
    let (mut handed, mut values, mut bytes) = (0usize, 0usize, 0usize);
    let mut clean_keys = std::collections::HashSet::new();
    let mut ended = None;
    for w in &want {
        if handed == fields.len() && *res == Ok(false) {
            break; // The walk found the body not JSON here.
        }
        values += 1;
        bytes += w.2.len();
        if values > limits.max_values {
            ended = Some(Err(Stop::Exceeded(Exceeded::Values { limit: limits.max_values })));
            break;
        }
        if bytes > limits.max_bytes {
            ended = Some(Err(Stop::Exceeded(Exceeded::Bytes { limit: limits.max_bytes })));
            break;
        }
        if fields.get(handed) == Some(w) {
            let verdict = judged(judge, handed, &w.2);
            handed += 1;
            match verdict {
                Verdict::Break(()) => {
                    ended = Some(Err(Stop::Caller));
                    break;
                }
                Verdict::Continue(true) if w.1 == FieldKind::JsonKey => {
                    clean_keys.insert(w.2.as_str());
                }
                Verdict::Continue(_) => {}
            }
        } else if !(w.1 == FieldKind::JsonKey && clean_keys.contains(w.2.as_str())) {
            fail(&format!("{w:?} not handed over"));
        }
    }
    if handed != fields.len() {
        fail("fields serde_json does not see, or out of order");
    }
    match (ended, res) {
        (Some(e), r) if *r == e => assert_eq!((counts.values, counts.bytes), (values, bytes), "{what}: counts on {shown:?}"),
        (Some(_), _) => fail("not the expected end"),
        (None, Ok(true)) => {
            if !ok {
                fail("JSON to the walk, not to serde_json");
            }
            assert_eq!((counts.values, counts.bytes), (values, bytes), "{what}: counts on {shown:?}");
        }
        (None, Ok(false)) => {
            if ok && nesting(body) <= limits.max_depth as usize {
                fail("not JSON to the walk");
            }
        }
        (None, Err(_)) => fail("stopped without a reason"),
    }
    got
}

fn random_limits(r: &mut Rng) -> Limits {
    match r.below(4) {
        0 => Limits::default(),
        1 => Limits { max_values: 1 + r.below(40), ..Limits::default() },
        2 => Limits { max_bytes: 1 + r.below(400), ..Limits::default() },
        _ => Limits { max_values: 1 + r.below(60), max_bytes: 1 + r.below(600), max_depth: 1 + r.below(8) as u32 },
    }
}

fn random_judge(r: &mut Rng) -> Judge {
    match r.below(4) {
        0 => Judge::AllClean,
        1 => Judge::NoneClean,
        2 => Judge::Mixed(2 + r.below(5) as u64),
        _ => Judge::StopAt(r.below(30)),
    }
}

/// A document like an API's (arrays of objects of one shape, nested objects, ids, timestamps,
/// flags), its strings drawn from the benign corpus (prose in several scripts, tokens, code,
/// browser strings), written by serde_json (its escapes), compact or pretty.
fn corpus_document(r: &mut Rng, values: &[String]) -> String {
    let pick = |r: &mut Rng| values[r.below(values.len())].as_str();
    const KEYS: &[&str] = &["id", "username", "avatar_template", "created_at", "title", "slug", "a/b", "t~x", "é", "", "posts_count", "reply_count"];
    let mut keys: Vec<&str> = (0..1 + r.below(6)).map(|_| r.pick(KEYS)).collect();
    keys.dedup();
    let mut items = Vec::new();
    for _ in 0..r.below(12) {
        let mut o = serde_json::Map::new();
        for &k in &keys {
            let v = match r.below(6) {
                0 => serde_json::json!(r.below(100_000)),
                1 => serde_json::json!(r.below(2) == 0),
                2 => serde_json::Value::Null,
                3 => serde_json::json!({ "name": pick(r), "tags": [pick(r), pick(r)] }),
                _ => serde_json::json!(pick(r)),
            };
            o.insert(k.to_string(), v);
        }
        items.push(serde_json::Value::Object(o));
    }
    let doc = serde_json::json!({ "users": items, "more": pick(r), "n": r.below(10) });
    if r.below(3) == 0 {
        serde_json::to_string_pretty(&doc).unwrap()
    } else {
        doc.to_string()
    }
}

fn corpus_values() -> Vec<String> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/data/benign");
    let mut out = Vec::new();
    for name in ["prose.jsonl", "tokens.jsonl", "code.jsonl", "browser.jsonl", "handwritten.jsonl"] {
        let text = std::fs::read_to_string(format!("{dir}/{name}")).unwrap();
        for line in text.lines().take(400) {
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(line) {
                if let Some(s) = v.get("value").and_then(|v| v.as_str()) {
                    out.push(s.to_string());
                }
            }
        }
    }
    assert!(out.len() > 500, "{}", out.len());
    out
}

/// `doc` with one or two random edits (cut, insert, delete, replace), structural bytes, escape
/// bytes, control characters and invalid UTF-8 among the bytes written.
fn mutated(r: &mut Rng, doc: &str) -> Vec<u8> {
    let mut doc = doc.as_bytes().to_vec();
    for _ in 0..1 + r.below(2) {
        let at = r.below(doc.len() + 1);
        let byte =
            r.pick(&[b'"', b'\\', b'{', b'}', b'[', b']', b',', b':', b' ', b'u', b'0', b'-', b'.', b'e', 0x01, 0x1F, 0x80, 0xC3, 0xFF, b'a', b't', b'\n']);
        match r.below(4) {
            0 => doc.truncate(at),
            1 => doc.insert(at, byte),
            2 if at < doc.len() => {
                doc.remove(at);
            }
            _ if at < doc.len() => doc[at] = byte,
            _ => {}
        }
    }
    doc
}

#[test]
fn json_walk_agrees_with_serde_on_generated_and_mutated_documents() {
    let mut r = Rng::new(0x2545_F491_4F6C_DD1D);
    let mut sc = Scratch::default();
    let mut exceeded = 0;
    let mut stopped = 0;
    let mut not_json = 0;
    for case in 0..6000 {
        let doc = gen_document(&mut r);
        let body = if r.below(2) == 0 { doc.into_bytes() } else { mutated(&mut r, &doc) };
        let (limits, judge) = (random_limits(&mut r), random_judge(&mut r));
        let (_, _, res) = checked_walk(&body, limits, judge, &mut sc, &format!("case {case}"));
        match res {
            Err(Stop::Exceeded(_)) => exceeded += 1,
            Err(Stop::Caller) => stopped += 1,
            Ok(false) => not_json += 1,
            Ok(true) => {}
        }
    }
    // Every way to end is exercised.
    assert!(exceeded > 300 && stopped > 100 && not_json > 1000, "{exceeded} {stopped} {not_json}");
}

#[test]
fn json_walk_agrees_with_serde_on_corpus_like_documents() {
    let values = corpus_values();
    let mut r = Rng::new(0x9E37_79B9_7F4A_7C15 ^ 0xFFFF);
    let mut sc = Scratch::default();
    for case in 0..1500 {
        let doc = corpus_document(&mut r, &values);
        let judge = random_judge(&mut r);
        let limits = if r.below(2) == 0 { Limits::default() } else { random_limits(&mut r) };
        let _ = checked_walk(doc.as_bytes(), limits, judge, &mut sc, &format!("case {case}"));
        // Also as the serde reference walks it (every field, nothing judged clean).
        let (got, _, res) = checked_walk(doc.as_bytes(), Limits::default(), Judge::NoneClean, &mut sc, &format!("case {case}"));
        assert_eq!(res, Ok(true));
        assert_eq!((got, true), reference::walk(doc.as_bytes()), "case {case}");
        let m = mutated(&mut r, &doc);
        let _ = checked_walk(&m, limits, judge, &mut sc, &format!("case {case} mutated"));
    }
}

#[test]
fn json_walk_agrees_with_serde_on_edge_documents() {
    let mut sc = Scratch::default();
    let mut docs: Vec<Vec<u8>> = Vec::new();
    // Deep nesting around the limit, in arrays and objects.
    for depth in [1usize, 15, 16, 17, 127, 128, 129] {
        docs.push(format!("{}\"x\"{}", "[".repeat(depth), "]".repeat(depth)).into_bytes());
        docs.push(format!("{}1{}", "{\"k\":".repeat(depth), "}".repeat(depth)).into_bytes());
        docs.push(format!("{}{{}}{}", "[".repeat(depth), "]".repeat(depth)).into_bytes());
    }
    // Keys repeated at more positions and depths than the memo holds.
    let wide: Vec<String> = (0..40).map(|i| format!("\"k{i}\":{i}")).collect();
    let obj = format!("{{{}}}", wide.join(","));
    docs.push(format!("[{obj},{obj},{obj}]").into_bytes());
    let mut deep = String::from("\"v\"");
    for _ in 0..20 {
        deep = format!("[{{\"a\":{deep},\"b\":\"w\"}},{{\"a\":{deep},\"b\":\"w\"}}]");
        if deep.len() > 200_000 {
            break;
        }
    }
    docs.push(deep.into_bytes());
    // Keys near the end of the body (the word compares' bounds), of every length to 30 (the
    // words hold keys of up to 21 bytes).
    for n in 1..=30 {
        let k = "k".repeat(n);
        docs.push(format!("[{{\"{k}\":1}},{{\"{k}\":2}}]").into_bytes());
        docs.push(format!("[{{\"{k}\":1}},{{\"{k}\"").into_bytes());
        docs.push(format!("[{{\"{k}\":1}},{{\"{k}x\":1}},{{\"{k}\":1}}]").into_bytes());
        docs.push(format!("[{{\"{k}\":1}},{{\"{}\":1}}]", "k".repeat(n - 1) + "\\u006b").into_bytes());
        docs.push(format!("[{{\"{k}\" : 1}},{{\"{k}\"\t:\n1}}]").into_bytes());
    }
    // Whitespace everywhere, escapes, invalid UTF-8, controls, literals and numbers cut short.
    for d in [
        " { \"a\" : [ 1 , \"x\" , { } , [ ] , true , null ] , \"b\" : \"\\u00e9\\n\" } ",
        "{\"a\":\"\u{7f}é中😀\",\"\\ud83d\\ude00\":\"\\\"\"}",
        "[\"a\u{1}\"]",
        "[tru]",
        "[nul",
        "[-]",
        "[01]",
        "[1.]",
        "[1e]",
        "{\"a\" 1}",
        "{\"a\":1,}",
        "[1,]",
        "[1]]",
        "{}}",
        "\"x\" \"y\"",
        "",
        "   ",
        "[\"\\ud800\"]",
        "[\"\\x\"]",
    ] {
        docs.push(d.as_bytes().to_vec());
    }
    docs.push(b"[\"a\xff\"]".to_vec());
    docs.push(b"{\"k\":\"\xc3\"}".to_vec());
    docs.push(b"[\"\xed\xa0\x80\"]".to_vec());
    for (i, d) in docs.iter().enumerate() {
        for judge in [Judge::AllClean, Judge::NoneClean, Judge::Mixed(3), Judge::StopAt(5)] {
            for limits in [Limits::default(), Limits { max_values: 7, max_bytes: 50, max_depth: 16 }, Limits { max_depth: 17, ..Limits::default() }] {
                let _ = checked_walk(d, limits, judge, &mut sc, &format!("edge {i}"));
            }
        }
    }
}

#[test]
fn a_remembered_key_is_recognised_exactly_where_it_is_written() {
    // `Known::at` (three masked words) and `Known::quoted_at` against a plain comparison, for
    // keys of every length around the window, at every position of a body holding the key,
    // its prefixes and extensions, with and without a `:` right after.
    let mut r = Rng::new(0x5DEE_CE66_D1CE_4E5B);
    for _ in 0..3000 {
        let n = 1 + r.below(30);
        let key: String = (0..n).map(|_| r.pick(&['a', 'b', '"', ':', ' '])).filter(|c| *c != '"').collect();
        if key.is_empty() {
            continue;
        }
        let mut body = String::new();
        for _ in 0..1 + r.below(6) {
            let cut = r.below(key.len() + 1);
            let piece = match r.below(5) {
                0 => format!("\"{key}\":"),
                1 => format!("\"{key}\" :"),
                2 => format!("\"{}\":", &key[..cut]),
                3 => format!("\"{key}x\":"),
                _ => format!("\"{key}\""),
            };
            body.push_str(&piece);
            body.push_str(r.pick(&["", "1,", " ", "\"", "{"]));
        }
        let b = body.as_bytes();
        // Remembered where it was written with `:` right after, or ` :`, or at the end.
        let kind = r.below(3);
        let src = match kind {
            0 => format!("\"{key}\":{}", " ".repeat(30)),
            1 => format!("\"{key}\" :{}", " ".repeat(30)),
            _ => format!("\"{key}\":"),
        };
        let known = Known::new(src.as_bytes(), 0, key.len() + 1, &src[1..1 + key.len()]);
        assert_eq!(known.key(), key);
        let words = kind != 1 && key.len() <= WINDOW - 3 && src.len() >= WINDOW;
        assert_eq!(known.has_words(), words, "{key:?} {kind}");
        for p in 0..=b.len() {
            let quoted = format!("\"{key}\"");
            let want_quoted = b.get(p..).is_some_and(|t| t.starts_with(quoted.as_bytes()));
            let want_colon = want_quoted && b.get(p + quoted.len()) == Some(&b':');
            let fast = known.at(b, p);
            if fast != 0 {
                assert!(want_colon && fast == p + key.len() + 3, "{key:?} at {p} of {body:?}");
            } else {
                // Only keys without words and the last bytes of the body are left to the slices.
                assert!(!want_colon || !known.has_words() || p + WINDOW > b.len(), "{key:?} at {p} of {body:?}");
            }
            let slow = known.quoted_at(b, p);
            assert_eq!(slow, if want_quoted { p + key.len() + 2 } else { 0 }, "{key:?} at {p} of {body:?}");
        }
    }
    // The empty slot matches nothing.
    let b = br#""":"":1,"a":2"#;
    for p in 0..=b.len() {
        assert_eq!((Known::EMPTY.at(b, p), Known::EMPTY.quoted_at(b, p)), (0, 0));
    }
}

/// `doc` written again with `sep` after every `,` and `:` outside strings (a space, a newline
/// and indentation...): the places where the walk looks for a remembered key right after the
/// `,`, and where it has to skip whitespace first.
fn respaced(doc: &str, sep: &str) -> String {
    let mut out = String::with_capacity(doc.len() * 2);
    let (mut in_str, mut esc) = (false, false);
    for c in doc.chars() {
        out.push(c);
        if in_str {
            match (esc, c) {
                (true, _) => esc = false,
                (false, '\\') => esc = true,
                (false, '"') => in_str = false,
                _ => {}
            }
        } else if c == '"' {
            in_str = true;
        } else if c == ',' || c == ':' {
            out.push_str(sep);
        }
    }
    out
}

#[test]
fn json_walk_agrees_with_serde_on_every_corpus_value_wrapped_in_json() {
    // Every value of the corpora (and every string and key of the bench bodies), as a value, as
    // a key, and as the repeated key and value of an array of objects (the key memo), compact
    // and with whitespace after the separators.
    let values = crate::other_util::test_values();
    assert!(values.len() > 4000, "{}", values.len());
    let mut sc = Scratch::default();
    let mut r = Rng::new(0xA076_1D64_78BD_642F);
    for (i, v) in values.iter().enumerate() {
        let q = serde_json::to_string(v).unwrap();
        let docs = [
            format!("{{\"v\":{q}}}"),
            format!("[{q}]"),
            format!("{{{q}:1}}"),
            format!("[{{{q}:{q},\"k\":{q}}},{{{q}:2,\"k\":{q}}},{{\"k\":{q},{q}:[{q}]}}]"),
            format!("[{{\"k\":1,{q}:{q}}},{{\"k\":2,{q}:3}}]"),
        ];
        for d in &docs {
            for doc in [d.clone(), respaced(d, " ")] {
                let judge = if i % 2 == 0 { Judge::AllClean } else { random_judge(&mut r) };
                let _ = checked_walk(doc.as_bytes(), Limits::default(), judge, &mut sc, &format!("value {i}"));
            }
        }
    }
}

#[test]
fn json_walk_agrees_with_serde_on_the_bench_bodies() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/bench");
    let mut seen = 0;
    let mut sc = Scratch::default();
    for name in ["large.json", "small.json"] {
        let Ok(text) = std::fs::read_to_string(root.join(name)) else {
            eprintln!("skipped {name}: ../shared/bench is not there");
            continue;
        };
        seen += 1;
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let pretty = serde_json::to_string_pretty(&v).unwrap();
        for doc in [text.clone(), pretty, respaced(&text, " "), respaced(&text, "\n\t")] {
            for judge in [Judge::AllClean, Judge::NoneClean, Judge::Mixed(3), Judge::Mixed(7), Judge::StopAt(500)] {
                for limits in [Limits::default(), Limits { max_values: 900, ..Limits::default() }, Limits { max_bytes: 5000, ..Limits::default() }] {
                    let (_, _, res) = checked_walk(doc.as_bytes(), limits, judge, &mut sc, name);
                    assert!(res != Ok(false), "{name}");
                }
            }
        }
    }
    if seen == 0 {
        eprintln!("json_walk_agrees_with_serde_on_the_bench_bodies: skipped (no ../shared/bench)");
    }
}

#[test]
fn json_walk_agrees_with_serde_around_word_and_chunk_lengths() {
    // Keys and strings of every length around 8, 16, 24, 32 and 64 bytes, with an escape, a
    // non-ASCII character, a control character or a quote at each of their ends, in arrays of
    // objects (remembered keys) written compact, spaced, and cut at every byte near the end.
    let mut sc = Scratch::default();
    let mut docs: Vec<Vec<u8>> = Vec::new();
    for n in (0..=34).chain(60..=68) {
        for tail in ["", "\\n", "é", "\\u00e9", "\u{1}", "\\\"", "中"] {
            let k = format!("{}{tail}", "k".repeat(n));
            let s = format!("{tail}{}", "v".repeat(n));
            let doc = format!("[{{\"{k}\":\"{s}\",\"a\":1}},{{\"{k}\":\"{s}\",\"a\":2}},{{\"{k}\":null,\"a\":\"{s}\"}}]");
            for d in [doc.clone(), respaced(&doc, " "), respaced(&doc, "\r\n")] {
                for cut in [d.len(), d.len() - 1, d.len().saturating_sub(n / 2 + 3)] {
                    docs.push(d.as_bytes()[..cut].to_vec());
                }
            }
        }
    }
    for (i, d) in docs.iter().enumerate() {
        for judge in [Judge::AllClean, Judge::NoneClean, Judge::Mixed(2)] {
            for limits in [Limits::default(), Limits { max_values: 5, max_bytes: 90, max_depth: 3 }] {
                let _ = checked_walk(d, limits, judge, &mut sc, &format!("length doc {i}"));
            }
        }
    }
}

#[test]
fn media_kind_agrees_with_the_media_type_parser() {
    use palisade_body::media;
    for ct in [
        "application/json",
        "application/json; charset=utf-8",
        "application/json;charset=UTF-8",
        "Application/JSON",
        "application/json ; charset=latin1",
        "application/json; charset=utf-8 ",
        "application/jsonx",
        "application/problem+json",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "text/xml",
        "text/plain",
        "",
    ] {
        assert_eq!(super::media_kind(ct), media::kind_of(ct), "{ct:?}");
    }
}

#[test]
fn json_walk_agrees_with_serde_on_bench_bodies_cut_and_spoilt() {
    // The UTF-8 check of the whole body (ASCII blocks of 128 bytes, then the standard library):
    // the bench bodies cut at many lengths, with an invalid byte, a cut or a whole two-byte
    // character put at positions around the blocks' ends.
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/bench");
    let mut sc = Scratch::default();
    for name in ["large.json", "small.json"] {
        let Ok(text) = std::fs::read(root.join(name)) else {
            eprintln!("skipped {name}: ../shared/bench is not there");
            continue;
        };
        let n = text.len();
        for cut in (0..n).step_by(61).chain(n.saturating_sub(300)..n) {
            let (_, _, res) = checked_walk(&text[..cut], Limits::default(), Judge::Mixed(3), &mut sc, name);
            // A cut body is not JSON, unless only the whitespace after it was cut.
            let whole = text[cut..].iter().all(u8::is_ascii_whitespace);
            assert_eq!(res, Ok(whole), "{name} cut at {cut}");
        }
        let mut at: Vec<usize> = (0..n).step_by(97).collect();
        for k in 1..=n / 128 {
            at.extend([128 * k - 1, 128 * k, 128 * k + 1]);
        }
        at.retain(|&i| i < n);
        for &i in &at {
            for bad in [&b"\xFF"[..], b"\xC3", "é".as_bytes(), b"\xE2\x82"] {
                let mut v = text.clone();
                v.splice(i..i, bad.iter().copied());
                let (_, _, res) = checked_walk(&v, Limits::default(), Judge::AllClean, &mut sc, name);
                if std::str::from_utf8(bad).is_err() {
                    assert_eq!(res, Ok(false), "{name}: not UTF-8");
                }
            }
        }
    }
}

#[test]
fn a_forgotten_slot_is_the_slot_remembered_anew() {
    // `Known::forget` writes three fields of an entry that may hold another key's words: it
    // must then behave as `Known::remember` (or `Known::EMPTY` for `""`) everywhere, also
    // where the previous key's stale words would have matched.
    let bodies: Vec<String> = ["id", "username", "a", "avatar_template", "last_poster_username_x", "é"]
        .iter()
        .flat_map(|k| [format!("\"{k}\":1,\"{k}\":\"x\",{{\"{k}\" :2}}"), format!("{{\"id\":1,\"{k}\":true,\"b\":null}}")])
        .collect();
    let old_src = |k: &str| format!("\"{k}\":{}", " ".repeat(30));
    for old in ["id", "username", "a", "avatar_template", "last_poster_username_x"] {
        let src = old_src(old);
        for new in ["", "id", "b", "username", "avatar_template", "é"] {
            let mut known = Known::new(src.as_bytes(), 0, old.len() + 1, &src[1..1 + old.len()]);
            known.forget(new);
            let want = if new.is_empty() { Known::EMPTY } else { Known::remember(new) };
            assert_eq!(known.key(), want.key());
            for body in &bodies {
                let b = body.as_bytes();
                for p in 0..=b.len() {
                    assert_eq!(known.at(b, p), want.at(b, p), "{old:?} then {new:?} at {p} of {body:?}");
                    assert_eq!(known.quoted_at(b, p), want.quoted_at(b, p), "{old:?} then {new:?} at {p} of {body:?}");
                }
            }
        }
    }
}

#[test]
fn json_walk_agrees_with_serde_on_short_numbers_and_wide_objects() {
    // `members` reads a digit (or two) before `,` or `}` without the number's scan, and the
    // key memo is filled by groups of eight slots: numbers of every short shape, valid or not,
    // as the values of objects of 1 to 40 keys, repeated in arrays, nested, compact and spaced.
    const NUMBERS: &[&str] =
        &["0", "5", "9", "00", "05", "10", "99", "100", "1.5", "0.", "1.", "1e5", "9e", "-", "-1", "-0", "12a", "1-", "0x1", "1,", "2}", "3]", "07,"];
    let mut sc = Scratch::default();
    let mut r = Rng::new(0x0DD_B1A5);
    for &n in NUMBERS {
        for keys in [1usize, 2, 7, 8, 9, 31, 32, 33, 40] {
            let obj = |shift: usize| {
                let members: Vec<String> = (0..keys).map(|i| format!("\"k{}\":{}", (i + shift) % (keys + 1), if i % 3 == 0 { n } else { "1" })).collect();
                format!("{{{}}}", members.join(","))
            };
            for doc in [
                obj(0),
                format!("[{},{},{}]", obj(0), obj(0), obj(1)),
                format!("{{\"a\":{},\"b\":[{},{}],\"c\":{n}}}", obj(0), obj(0), obj(0)),
                format!("{{\"x\":{n},\"y\":{n}}}"),
                format!("[{n},{n}]"),
                format!("{{\"x\":{n}}}"),
            ] {
                for d in [doc.clone(), respaced(&doc, " "), respaced(&doc, "\n  ")] {
                    for judge in [Judge::AllClean, Judge::NoneClean, Judge::Mixed(3), Judge::StopAt(r.below(20))] {
                        let _ = checked_walk(d.as_bytes(), Limits::default(), judge, &mut sc, "short numbers");
                        let _ = checked_walk(d.as_bytes(), random_limits(&mut r), judge, &mut sc, "short numbers, limits");
                    }
                }
            }
        }
    }
}

#[test]
fn json_walk_agrees_with_serde_from_object_to_object_of_an_array() {
    // `members` goes on from one object of an array to the next at `},{"`: arrays of objects
    // of one shape and of changing shapes, empty objects, whitespace around the separators,
    // arrays in arrays, objects of arrays of objects, at the memo's depth limit and past it,
    // cut short and spoilt, under four callback verdicts and random limits.
    let mut sc = Scratch::default();
    let mut r = Rng::new(0xA11A_0F0B);
    let objs = ["{\"a\":1}", "{\"a\":\"x\",\"b\":2}", "{\"b\":true}", "{}", "{ \"a\":1}", "{\"a\":[{\"c\":1},{\"c\":\"y\"}]}", "{\"a\":{\"d\":1}}"];
    for round in 0..400 {
        let mut items = Vec::new();
        for _ in 0..1 + r.below(6) {
            items.push(objs[r.below(objs.len())].to_string());
        }
        let sep = r.pick(&[",", ",", ",", ", ", ",\n", " ,"]);
        let mut doc = format!("[{}]", items.join(sep));
        for _ in 0..r.below(3) {
            doc = match r.below(3) {
                0 => format!("[{doc},{doc}]"),
                1 => format!("{{\"k\":{doc},\"n\":[{doc}]}}"),
                _ => format!("[{{\"k\":{doc}}},{{\"k\":{doc}}}]"),
            };
        }
        if round % 50 == 0 {
            // Around the key memo's 16 depths.
            for _ in 0..14 {
                doc = format!("[{{\"z\":{doc}}},{{\"z\":1}}]");
            }
        }
        for judge in [Judge::AllClean, Judge::NoneClean, Judge::Mixed(3), Judge::StopAt(r.below(30))] {
            let _ = checked_walk(doc.as_bytes(), Limits::default(), judge, &mut sc, "arrays of objects");
            let _ = checked_walk(doc.as_bytes(), random_limits(&mut r), judge, &mut sc, "arrays of objects, limits");
        }
        for _ in 0..4 {
            let m = mutated(&mut r, &doc);
            let _ = checked_walk(&m, random_limits(&mut r), random_judge(&mut r), &mut sc, "arrays of objects, mutated");
        }
        let cut = r.below(doc.len());
        let _ = checked_walk(&doc.as_bytes()[..cut], Limits::default(), Judge::AllClean, &mut sc, "arrays of objects, cut");
    }
}

/// Written for these rules: the keys of bracketed names, and the paths inspected whole because
/// a value spans their segments or a segment is one no client sends.
#[test]
fn bracket_parts_and_whole_path_triggers() {
    fn parts(n: &str) -> Vec<&str> {
        super::bracket_parts(n).collect()
    }
    assert_eq!(parts("a[b][c]"), ["b", "c"]);
    assert_eq!(parts("filter[1 OR 1=1]"), ["1 OR 1=1"]);
    assert_eq!(parts("expand[]"), Vec::<&str>::new());
    assert_eq!(parts("x[__proto__][admin]"), ["__proto__", "admin"]);
    assert_eq!(parts("plain"), Vec::<&str>::new());
    assert_eq!(parts("[lead]"), Vec::<&str>::new());
    assert_eq!(parts("a[unclosed"), Vec::<&str>::new());
    assert!(super::spans_segments("/fetch/http://10.0.0.1/x"));
    assert!(super::spans_segments("/p/http%3A%2F%2Fa.example%2F"));
    assert!(super::spans_segments("/x/%{(#a='multipart/form-data')}"));
    assert!(!super::spans_segments("/api/v1/items/42"));
    assert!(!super::spans_segments("/wiki/Foo_(bar)/edit"));
    assert!(super::unsent_segment("/;/admin") && super::unsent_segment("/%2e/admin") && super::unsent_segment("/.;/WEB-INF/web.xml"));
    assert!(!super::unsent_segment("/;jsessionid=1") && !super::unsent_segment("/a/b.c/d"));
}
