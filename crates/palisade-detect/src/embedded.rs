//! Documents of another grammar carried in one value, judged by their parts instead of as one
//! text: a GraphQL executable document (the `query` member of a JSON body, a `query=`
//! parameter) and a JSON document in a query or form parameter (`?where={"price":{"$gte":10}}`).
//!
//! A GraphQL document's names, variables (`$id`), directives and comments are its grammar, not
//! data the application reads as text: only its string literals (arguments, variable defaults)
//! are judged, as JSON strings. A JSON document is walked as a JSON body is: its keys and
//! strings, at `query.NAME/pointer` locations; a MongoDB filter operator with a constant operand
//! that bounds or selects (`{"$gte": 10}`, `{"$in": ["a"]}`) is the document's grammar too and
//! is not handed over, while an operator whose condition is always true or runs code is (see
//! [`operator_is_injection`]), for the `nosql` detector to judge as a key.

use std::borrow::Cow;
use std::ops::ControlFlow;

use apollo_parser::cst::{self, CstNode};

use crate::FieldKind;

/// Nesting and tokens the GraphQL parser accepts here (a document beyond is judged as text).
const GRAPHQL_NESTING: usize = 64;
const GRAPHQL_TOKENS: usize = 20_000;

/// Levels of JSON documents serialised into strings of JSON documents that are walked (a
/// string deeper than that is judged as text).
pub const JSON_IN_JSON: usize = 4;

/// What [`parts`] hands each part to: the JSON pointer below the value's location (`None`: at
/// it), the kind to judge the part as, the part.
pub type Judge<'a> = dyn FnMut(Option<&str>, FieldKind, &str) -> ControlFlow<()> + 'a;

/// The parts of `value` when it is an embedded document of a grammar this module reads, each
/// handed to `judge` with the JSON pointer below the value's own location (`None`: at the
/// value's location) and the kind to judge it as. `None` when the value is no such document
/// (it is then judged as it is); otherwise what the last call of `judge` said.
pub fn parts(value: &str, kind: FieldKind, judge: &mut Judge<'_>) -> Option<ControlFlow<()>> {
    if !matches!(kind, FieldKind::JsonValue | FieldKind::QueryValue | FieldKind::FormValue) {
        return None;
    }
    let t = value.trim();
    let (first, last) = (*t.as_bytes().first()?, *t.as_bytes().last()?);
    if !matches!(first, b'{' | b'[' | b'q' | b'm' | b's' | b'f') || !matches!(last, b'}' | b']') {
        return None;
    }
    if last == b'}' {
        if let Some(literals) = graphql_literals(t) {
            for s in &literals {
                if judge(None, FieldKind::JsonValue, s).is_break() {
                    return Some(ControlFlow::Break(()));
                }
            }
            return Some(ControlFlow::Continue(()));
        }
    }
    if matches!(first, b'{' | b'[') {
        let mut path = String::new();
        return json_document(t, None, &mut path, JSON_IN_JSON, judge);
    }
    None
}

/// [`json_parts`] of `t` when it parses as a JSON document (an object or an array), `None`
/// otherwise; `levels`: how many more documents in strings below are walked.
fn json_document(t: &str, parent: Option<&str>, path: &mut String, levels: usize, judge: &mut Judge<'_>) -> Option<ControlFlow<()>> {
    let mut tape = palisade_json::Tape::default();
    palisade_json::parse_into(t.as_bytes(), &mut tape, &palisade_json::Limits { max_depth: 64, max_tokens: 1 << 16 }).ok()?;
    Some(json_parts(tape.root(t.as_bytes()), parent, path, levels, judge))
}

/// The string literals of `t` when it is a GraphQL executable document: it parses without an
/// error and holds operations and fragments only (at least one). `None` otherwise.
pub fn graphql_literals(t: &str) -> Option<Vec<String>> {
    let keyword = ["query", "mutation", "subscription", "fragment"]
        .iter()
        .any(|k| t.strip_prefix(k).is_some_and(|r| r.starts_with(|c: char| c.is_whitespace() || c == '{' || c == '(')));
    if !(t.starts_with('{') || keyword) {
        return None;
    }
    let tree = apollo_parser::Parser::new(t).recursion_limit(GRAPHQL_NESTING).token_limit(GRAPHQL_TOKENS).parse();
    if tree.errors().next().is_some() {
        return None;
    }
    let doc = tree.document();
    let mut n = 0;
    for d in doc.definitions() {
        if !matches!(d, cst::Definition::OperationDefinition(_) | cst::Definition::FragmentDefinition(_)) {
            return None;
        }
        n += 1;
    }
    if n == 0 {
        return None;
    }
    Some(doc.syntax().descendants().filter_map(cst::StringValue::cast).map(|s| String::from(&s)).collect())
}

/// [`parts`] of a JSON value: keys and strings, at `path` (a JSON pointer below the
/// parameter), `parent`: the key of the object this value is the member of.
/// A string that is itself a JSON object or array (serialised into the field: `"{\"q\":
/// \"x\"}"`) is walked the same way, its parts below the string's pointer, while `levels`
/// allow; any other string is handed over.
fn json_parts(v: palisade_json::ValueRef<'_>, parent: Option<&str>, path: &mut String, levels: usize, judge: &mut Judge<'_>) -> ControlFlow<()> {
    use palisade_json::Kind;
    let at = path.len();
    match v.kind() {
        Kind::String => {
            if let Some(s) = v.as_str() {
                let t = s.trim();
                let bracketed = matches!((t.as_bytes().first(), t.as_bytes().last()), (Some(b'{'), Some(b'}')) | (Some(b'['), Some(b']')));
                match (levels > 0 && bracketed).then(|| json_document(t, parent, path, levels - 1, judge)).flatten() {
                    Some(r) => r?,
                    None => judge(Some(path.as_str()), FieldKind::JsonValue, &s)?,
                }
            }
        }
        Kind::Array => {
            for (i, item) in v.items().enumerate() {
                push_seg(path, at, &i.to_string());
                json_parts(item, parent, path, levels, judge)?;
            }
        }
        Kind::Object => {
            for (k, item) in v.members() {
                let key: Cow<'_, str> = k.as_str().unwrap_or_default();
                push_seg(path, at, &key);
                let structural = key.starts_with('$') && !operator_is_injection(&key[1..], item, parent);
                if !structural {
                    judge(Some(path.as_str()), FieldKind::JsonKey, &key)?;
                }
                // Below an operator, the field it applies to is still the parent's.
                let field = if key.starts_with('$') { parent } else { Some(&*key) };
                json_parts(item, field, path, levels, judge)?;
            }
        }
        Kind::Null | Kind::Bool | Kind::Number => {}
    }
    path.truncate(at);
    ControlFlow::Continue(())
}

/// `path` cut at `at`, then `/seg` (`/` and `~` escaped as in a JSON pointer).
fn push_seg(path: &mut String, at: usize, seg: &str) {
    path.truncate(at);
    if at > 0 {
        path.push('/');
    }
    for c in seg.chars() {
        match c {
            '~' => path.push_str("~0"),
            '/' => path.push_str("~1"),
            c => path.push(c),
        }
    }
}

/// Whether the MongoDB operator `op` (without its `$`, any case) with `operand`, on the field
/// `field` (the key of the enclosing object, `None` at the top), is an injection rather than a
/// filter's grammar: code (`$where`, `$function`, `$accumulator`, `$expr`); a condition that
/// every document meets (a negation of nothing, `{"$ne": null}`, `{"$nin": []}`; an `$or`
/// with an empty condition, `{"$or": [{}, ...]}`; a comparison
/// with an empty operand, `{"$gt": ""}`; a pattern that matches everything, `{"$regex": ".*"}`);
/// any condition on a credential field (`{"password": {"$ne": "x"}}`, `{"$exists": true}` on a
/// token); an operator with no field (`{"$gt": 1}` alone stands where a value was expected).
/// A comparison, set or pattern with a constant operand on another field is how a client
/// filters (`{"price": {"$gte": 10, "$lte": 50}}`). Unknown names and update operators are
/// handed over as they are.
pub fn operator_is_injection(op: &str, operand: palisade_json::ValueRef<'_>, field: Option<&str>) -> bool {
    use palisade_json::Kind;
    let op = op.to_ascii_lowercase();
    let empty = match operand.kind() {
        Kind::Null => true,
        Kind::String => operand.raw().iter().all(u8::is_ascii_whitespace),
        Kind::Array | Kind::Object => operand.is_empty(),
        Kind::Bool | Kind::Number => false,
    };
    let credential = field.is_some_and(credential_field);
    match op.as_str() {
        "where" | "function" | "accumulator" | "expr" => true,
        // Logical operators hold conditions, judged each in turn; an `$or` with an empty
        // condition (`{"$or": [{}, ...]}`) is met by every document.
        "or" => operand.kind() == Kind::Array && operand.items().any(|c| c.kind() == Kind::Object && c.is_empty()),
        "and" | "nor" => false,
        _ if field.is_none() || credential => is_query_operator(&op),
        "ne" | "nin" | "not" | "gt" | "gte" | "lt" | "lte" => empty,
        "regex" => operand.as_str().is_some_and(|p| matches_everything(&p)),
        "eq" | "in" | "all" | "size" | "type" | "mod" | "elemmatch" | "exists" | "text" | "comment" | "options" => false,
        _ => true,
    }
}

/// MongoDB's query operators (without `$`, lowercase).
fn is_query_operator(op: &str) -> bool {
    matches!(
        op,
        "ne" | "nin"
            | "not"
            | "gt"
            | "gte"
            | "lt"
            | "lte"
            | "regex"
            | "eq"
            | "in"
            | "all"
            | "size"
            | "type"
            | "mod"
            | "elemmatch"
            | "exists"
            | "text"
            | "options"
            | "where"
            | "expr"
    )
}

/// Whether a regular expression matches every string: made only of anchors and `.` with a
/// `*` (or nothing at all): `""`, `.*`, `^.*$`, `^`, `.*?`.
fn matches_everything(p: &str) -> bool {
    let core = p.trim_start_matches('^').trim_end_matches('$');
    core.is_empty() || core.trim_end_matches('?') == ".*"
}

/// A field that holds a credential or an account's identity (`password`, `passwd`, `pwd`,
/// `secret`, `token`, `user`, `username`, `login`, `email`, `api_key`, in any case and with
/// `_`, `-` or `.` between words).
fn credential_field(name: &str) -> bool {
    let n: String = name.chars().filter(|c| c.is_ascii_alphanumeric()).map(|c| c.to_ascii_lowercase()).collect();
    n.contains("pass")
        || n.contains("pwd")
        || n.contains("secret")
        || n.contains("token")
        || n.ends_with("apikey")
        || matches!(n.as_str(), "user" | "username" | "userid" | "login" | "email" | "mail")
}

#[cfg(test)]
mod tests;
