//! Fuzz the JSON tape parser: it never panics, it agrees with serde_json on accept/reject for
//! valid UTF-8 inputs (except where serde_json is stricter by design: numbers beyond f64 and its
//! own nesting limit), and on acceptance the tape walks back to the same document.
#![no_main]

use libfuzzer_sys::fuzz_target;
use palisade_json::{parse_into, Kind, Limits, Tape, ValueRef};

fn same(v: ValueRef<'_>, s: &serde_json::Value) -> bool {
    match (v.kind(), s) {
        (Kind::Null, serde_json::Value::Null) => true,
        (Kind::Bool, serde_json::Value::Bool(b)) => v.as_bool() == Some(*b),
        (Kind::Number, serde_json::Value::Number(n)) => n.as_f64().is_some_and(|f| v.as_f64() == Some(f)) || n.as_i64().is_some_and(|i| v.as_i64() == Some(i)),
        (Kind::String, serde_json::Value::String(t)) => v.as_str().is_some_and(|x| x == t.as_str()),
        (Kind::Array, serde_json::Value::Array(a)) => v.len() == a.len() && v.items().zip(a).all(|(x, y)| same(x, y)),
        // serde_json keeps the last of duplicate keys; compare key by key from the end.
        (Kind::Object, serde_json::Value::Object(m)) => {
            let keys: Vec<_> = v.members().map(|(k, _)| k.as_str().unwrap().into_owned()).collect();
            v.len() == keys.len()
                && v.members().all(|(k, x)| {
                    let k = k.as_str().unwrap();
                    let last = v.members().filter(|(k2, _)| k2.as_str().unwrap() == k).last().unwrap().1;
                    last.index() != x.index() || m.get(k.as_ref()).is_some_and(|y| same(x, y))
                })
        }
        _ => false,
    }
}

fuzz_target!(|data: &[u8]| {
    let mut tape = Tape::default();
    let limits = Limits { max_depth: 100, max_tokens: 1 << 16 };
    let ours = parse_into(data, &mut tape, &limits);
    if let Ok(()) = ours {
        // Walking the whole tape must not panic.
        let root = tape.root(data);
        let _ = root.raw();
    }
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match (ours, serde_json::from_str::<serde_json::Value>(text)) {
        (Ok(()), Ok(v)) => assert!(same(tape.root(data), &v), "documents differ"),
        (Err(e), Ok(_)) => {
            assert!(
                e.message == "nesting too deep" || e.message == "too many tokens" || e.message == "byte order mark is not allowed",
                "we reject, serde accepts: {e}"
            )
        }
        (Ok(()), Err(e)) => {
            let m = e.to_string();
            assert!(m.contains("number out of range") || m.contains("recursion limit"), "we accept, serde rejects: {m}")
        }
        (Err(_), Err(_)) => {}
    }
});
