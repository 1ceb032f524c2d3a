//! Fuzz the GraphQL request path of palisade-graphql on arbitrary bytes: the HTTP envelope
//! (a JSON body, a batch, an `application/graphql` body, a GET query string, a multipart
//! upload, a WebSocket message of either GraphQL subprotocol), the parser, the
//! limits with fragments expanded, schema validation against a small schema, and the values
//! handed to detection. Invariants: no panic, no unbounded work (the walk's budget); every
//! finding has a `graphql.` code and a `graphql` location; every value is located under
//! `graphql`.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use palisade_core::http::Method;
use palisade_graphql::check::{check_envelope, DocCache, Limits};
use palisade_graphql::request::{from_http, Envelope};
use palisade_graphql::ws::Protocol;
use palisade_graphql::Schema;

const SDL: &str = r#"
schema { query: Query mutation: Mutation }
interface Node { id: ID! }
union Result = User | Post
type Query { node(id: ID!): Node, user(name: String!, age: Int): User, search(q: String, kinds: [Kind!], filter: Filter): [Result!]! }
type Mutation { addPost(input: PostInput!): Post }
type User implements Node { id: ID!, name: String, friends(first: Int = 10): [User], posts: [Post!]! }
type Post implements Node { id: ID!, title: String!, author: User }
enum Kind { USER POST }
input Filter { since: String, kinds: [Kind!], nested: Filter }
input PostInput { title: String!, tags: [String!], filter: Filter }
directive @cached(ttl: Int!) on FIELD
"#;

fn schema() -> &'static Schema {
    static S: OnceLock<Schema> = OnceLock::new();
    S.get_or_init(|| Schema::parse(SDL, "fuzz.graphql").expect("the fuzz schema loads"))
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else { return };
    let limits = Limits { max_depth: (mode as usize >> 2) % 20, introspection: mode & 0x40 != 0, ..Limits::default() };
    let query_string = String::from_utf8_lossy(rest);
    let env = match mode & 3 {
        _ if mode & 0x80 != 0 => from_http(&Method::POST, Some("multipart/form-data; boundary=b"), None, rest),
        0 => from_http(&Method::POST, Some("application/json"), None, rest),
        1 => from_http(&Method::POST, Some("application/graphql"), None, rest),
        2 => from_http(&Method::GET, None, Some(&query_string), b""),
        _ => {
            // The bytes as the document of a JSON request.
            let body = serde_json::json!({ "query": String::from_utf8_lossy(rest) }).to_string();
            from_http(&Method::POST, Some("application/json"), None, body.as_bytes())
        }
    };
    // The same bytes as a WebSocket message: an operation message becomes a request.
    let protocol = [Protocol::TransportWs, Protocol::Legacy, Protocol::Unknown][usize::from(mode % 3)];
    let ws_env = match palisade_graphql::ws::operation(&String::from_utf8_lossy(rest), protocol) {
        Ok(Some(r)) => Some(Envelope { requests: vec![r], batched: false, get: false, files: Vec::new() }),
        Ok(None) | Err(_) => None,
    };
    let Some(env) = env.ok().flatten().or(ws_env) else { return };
    let cache = DocCache::new(4, 1 << 16);
    for (schema, cache) in [(None, None), (Some(schema()), None), (Some(schema()), Some(&cache)), (Some(schema()), Some(&cache))] {
        let mut out = Vec::new();
        let mut values = Vec::new();
        check_envelope(&env, &limits, schema, &mut out, Some(&mut values), cache);
        for r in &out {
            assert!(r.code.starts_with("graphql."), "{r}");
            assert!(r.location.as_deref().is_some_and(|l| l.starts_with("graphql")), "{r}");
        }
        for v in &values {
            assert!(v.location.starts_with("graphql"), "{}", v.location);
        }
    }
});
