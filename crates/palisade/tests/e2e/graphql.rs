//! The GraphQL stage in the running proxy: a schema loaded from a file, a depth bomb refused
//! with a located reason before the upstream is contacted, valid queries forwarded untouched,
//! detection judging argument values (not the query text as prose), and paths that are not
//! the endpoint left alone.

use crate::common::*;

const SCHEMA: &str = r#"
type Query { user(name: String!): User, search(q: String!, first: Int = 10): [User!]! }
type Mutation { addComment(input: AddCommentInput!): Comment }
type User { name: String!, friends(first: Int): [User!]!, posts(limit: Int): [Comment!]! }
type Comment { id: ID!, body: String! }
input AddCommentInput { subjectId: ID!, body: String! }
"#;

fn post(path: &str, body: &str) -> String {
    format!("POST {path} HTTP/1.1\r\nHost: api.test\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len())
}

fn config(upstream: &str) -> String {
    cfg(&[], &format!("apps:\n  - name: app\n    upstream: {upstream}\n    graphql:\n      path: /graphql\n      schema: schema.graphql\n      max_depth: 4\n"))
}

#[tokio::test]
async fn depth_bomb_is_blocked_with_its_location_and_valid_queries_pass() {
    let mut up = Upstream::tcp(reply(r#"{"data":{}}"#)).await;
    let dir = TempDir::new();
    dir.write("schema.graphql", SCHEMA);
    let proxy = Proxy::start_in(&config(&up.url()), dir);

    let valid = r#"{"query":"query Q($n: String!) { user(name: $n) { name posts(limit: 5) { id body } } }","variables":{"n":"ann"},"operationName":"Q"}"#;
    let r = raw(proxy.addr, post("/graphql", valid)).await;
    assert_eq!(r.status, 200, "{}", r.dump());
    let seen = up.next_req().await;
    assert_eq!(seen.body, valid.as_bytes(), "forwarded untouched");

    let bomb = r#"{"query":"{ user(name: \"a\") { friends { friends { friends { friends { name } } } } } }"}"#;
    let r = raw(proxy.addr, post("/graphql", bomb)).await;
    let v = assert_problem(&r, 403, "graphql.depth");
    assert_eq!(v["reasons"][0]["location"], "graphql.query.user.friends.friends.friends.friends", "{}", r.dump());

    let unknown = r#"{"query":"{ user(name: \"a\") { password } }"}"#;
    let v = assert_problem(&raw(proxy.addr, post("/graphql", unknown)).await, 403, "graphql.field_unknown");
    assert_eq!(v["reasons"][0]["location"], "graphql.query.user.password");

    let bad_var = r#"{"query":"mutation($i: AddCommentInput!) { addComment(input: $i) { id } }","variables":{"i":{"subjectId":"1"}}}"#;
    let v = assert_problem(&raw(proxy.addr, post("/graphql", bad_var)).await, 403, "graphql.variable_invalid");
    assert_eq!(v["reasons"][0]["location"], "graphql.variables.i.body");

    let intro = r#"{"query":"{ __schema { types { name } } }"}"#;
    assert_problem(&raw(proxy.addr, post("/graphql", intro)).await, 403, "graphql.introspection");
    assert_problem(&raw(proxy.addr, post("/graphql", "{\"query\": \"{ user(\"}")).await, 403, "graphql.syntax");

    // GET: judged in the head phase; a mutation over GET is refused.
    let r = get(proxy.addr, "api.test", "/graphql?query=%7B%20user(name%3A%20%22a%22)%20%7B%20name%20%7D%20%7D").await;
    assert_eq!(r.status, 200, "{}", r.dump());
    assert_eq!(up.next_req().await.target, "/graphql?query=%7B%20user(name%3A%20%22a%22)%20%7B%20name%20%7D%20%7D");
    assert_problem(&get(proxy.addr, "api.test", "/graphql?query=%7B%20nope%20%7D").await, 403, "graphql.field_unknown");

    // A persisted query passes (the hash names a document only the server knows).
    let persisted = r#"{"extensions":{"persistedQuery":{"version":1,"sha256Hash":"ecf4edb46db40b5132295c0291d62fb65d6759a9eedfa4d5d612dd5ec54a6b38"}}}"#;
    assert_eq!(raw(proxy.addr, post("/graphql", persisted)).await.status, 200);
    up.next_req().await;

    // Another path of the app is not a GraphQL endpoint.
    assert_eq!(raw(proxy.addr, post("/other", r#"{"query": "{ __schema { types { name } } }"}"#)).await.status, 200);
    up.next_req().await;
}

#[tokio::test]
async fn detection_judges_argument_values_not_the_query_text() {
    let mut up = Upstream::tcp(reply(r#"{"data":{}}"#)).await;
    let dir = TempDir::new();
    dir.write("schema.graphql", SCHEMA);
    let proxy = Proxy::start_in(&config(&up.url()), dir);

    // An injection in an argument literal is found (block responses do not tell clients where
    // detection found it; the unit tests of palisade-graphql and palisade-detect check the
    // location, `graphql.query.search.q`).
    let attack = r#"{"query":"{ search(q: \"x' UNION SELECT password FROM users --\") { name } }"}"#;
    assert_problem(&raw(proxy.addr, post("/graphql", attack)).await, 403, "detect.sqli");
    // In a variable too.
    let attack = r#"{"query":"query($q: String!) { search(q: $q) { name } }","variables":{"q":"<script>alert(document.cookie)</script>"}}"#;
    assert_problem(&raw(proxy.addr, post("/graphql", attack)).await, 403, "detect.xss");
    // The same words in a comment of the document are not a value: the request passes.
    let comment = r##"{"query":"# x' UNION SELECT password FROM users --\n{ search(q: \"books\") { name } }"}"##;
    let r = raw(proxy.addr, post("/graphql", comment)).await;
    assert_eq!(r.status, 200, "{}", r.dump());
    up.next_req().await;
}

/// `palisade graphql validate`: exit 0 allowed, 2 blocked (with the located reason), 1 on
/// error; and `palisade check` reports a schema that does not load at its key.
#[test]
fn offline_validation_and_check() {
    let dir = TempDir::new();
    dir.write("schema.graphql", SCHEMA);
    dir.write("ok.json", r#"{"query": "query($n: String!) { user(name: $n) { name } }", "variables": {"n": "a"}}"#);
    dir.write("bad.http", "POST /graphql HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\r\n{\"query\": \"{ user(name: 5) { name } }\"}");
    dir.write("doc.graphql", "{ user(name: \"a\") { friends { friends { friends { friends { friends { friends { friends { friends { friends { friends { friends { friends { friends { friends { friends { name } } } } } } } } } } } } } } } } }");
    dir.write("broken.graphql", "type Query { user: Nope }");
    let run = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_palisade")).args(args).current_dir(dir.path()).output().unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr))
    };
    let (code, out) = run(&["graphql", "validate", "schema.graphql", "--request", "ok.json"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.starts_with("allow"), "{out}");
    let (code, out) = run(&["graphql", "validate", "schema.graphql", "--request", "bad.http"]);
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains("graphql.argument_invalid at graphql.query.user.name"), "{out}");
    let (code, out) = run(&["graphql", "validate", "schema.graphql", "--request", "doc.graphql"]);
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains("graphql.depth"), "{out}");
    assert_eq!(run(&["graphql", "validate", "schema.graphql", "--request", "missing.json"]).0, Some(1));
    let (code, out) = run(&["graphql", "validate", "broken.graphql", "--request", "ok.json"]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("unknown type `Nope`"), "{out}");

    dir.write(
        "palisade.yaml",
        "listen: [{addr: 127.0.0.1:0}]\napps:\n  - name: app\n    upstream: http://127.0.0.1:9\n    graphql: {schema: broken.graphql, max_depth: 5}\n",
    );
    let (code, out) = run(&["check", "-c", "palisade.yaml"]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("apps[0].graphql.schema") && out.contains("Nope"), "{out}");
    dir.write(
        "palisade.yaml",
        "listen: [{addr: 127.0.0.1:0}]\napps:\n  - name: app\n    upstream: http://127.0.0.1:9\n    graphql: {schema: schema.graphql, max_depht: 5}\n",
    );
    let (code, out) = run(&["check", "-c", "palisade.yaml"]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("apps[0].graphql") && out.contains("max_depth"), "{out}");
    dir.write(
        "palisade.yaml",
        "listen: [{addr: 127.0.0.1:0}]\napps:\n  - name: app\n    upstream: http://127.0.0.1:9\n    graphql: {schema: schema.graphql}\n",
    );
    let (code, out) = run(&["check", "-c", "palisade.yaml"]);
    assert_eq!(code, Some(0), "{out}");
}
