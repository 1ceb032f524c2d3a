use std::io::Read;
use std::sync::OnceLock;

use palisade_core::http::Method;
use palisade_core::Reason;

use crate::check::{check_envelope, Limits, Summary};
use crate::request::{from_http, Envelope};
use crate::Schema;

/// GitHub's public schema (MIT, vendored compressed in tests/data).
pub(crate) fn github() -> &'static Schema {
    static S: OnceLock<Schema> = OnceLock::new();
    S.get_or_init(|| {
        let gz = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/github-schema.graphql.gz")).unwrap();
        let mut sdl = String::new();
        flate2::read::GzDecoder::new(&gz[..]).read_to_string(&mut sdl).unwrap();
        Schema::parse(&sdl, "github-schema.graphql").unwrap()
    })
}

fn post(body: &str) -> Envelope {
    from_http(&Method::POST, Some("application/json"), None, body.as_bytes()).unwrap().unwrap()
}

fn judge_env(env: &Envelope, limits: &Limits, schema: Option<&Schema>) -> (Vec<Reason>, Summary) {
    let mut out = Vec::new();
    let s = check_envelope(env, limits, schema, &mut out, None, None);
    (out, s)
}

/// Findings for a query (and variables JSON) against the GitHub schema with default limits.
fn gh(query: &str, variables: &str) -> Vec<Reason> {
    let body = serde_json::json!({"query": query, "variables": serde_json::from_str::<serde_json::Value>(variables).unwrap()});
    judge_env(&post(&body.to_string()), &Limits::default(), Some(github())).0
}

fn codes_at(r: &[Reason]) -> Vec<(String, String)> {
    r.iter().map(|r| (r.code.to_string(), r.location.clone().unwrap_or_default())).collect()
}

fn no_schema(query: &str, limits: &Limits) -> Vec<(String, String)> {
    let body = serde_json::json!({ "query": query });
    codes_at(&judge_env(&post(&body.to_string()), limits, None).0)
}

const VALID: &[(&str, &str, &str)] = &[
    ("viewer", "query { viewer { login name avatarUrl(size: 80) createdAt } }", "{}"),
    (
        "repository issues with pagination",
        r#"query Issues($owner: String!, $name: String!, $after: String) {
          repository(owner: $owner, name: $name) {
            issues(first: 50, after: $after, states: [OPEN], orderBy: {field: CREATED_AT, direction: DESC}) {
              totalCount
              pageInfo { hasNextPage endCursor }
              nodes { number title createdAt author { login } labels(first: 5) { nodes { name color } } }
            }
          }
        }"#,
        r#"{"owner": "rust-lang", "name": "rust", "after": null}"#,
    ),
    (
        "search repositories with an inline fragment",
        r#"query Search($q: String!) {
          search(query: $q, type: REPOSITORY, first: 10) {
            repositoryCount
            edges { cursor node { ... on Repository { nameWithOwner stargazerCount primaryLanguage { name } } } }
          }
        }"#,
        r#"{"q": "language:rust stars:>1000"}"#,
    ),
    (
        "addComment mutation with an input variable",
        r#"mutation AddComment($input: AddCommentInput!) {
          addComment(input: $input) { clientMutationId commentEdge { node { id body url } } subject { id } }
        }"#,
        r#"{"input": {"subjectId": "I_kwDOA", "body": "Thanks, this fixed it!"}}"#,
    ),
    (
        "fragments on an interface and a union",
        r#"query Timeline($owner: String!, $name: String!, $number: Int!) {
          repository(owner: $owner, name: $name) {
            issue(number: $number) {
              ...IssueParts
              timelineItems(first: 20, itemTypes: [ISSUE_COMMENT, LABELED_EVENT, CLOSED_EVENT]) {
                nodes { __typename ...Comment ... on LabeledEvent { label { name } actor { ...ActorParts } } ... on ClosedEvent { createdAt } }
              }
            }
          }
        }
        fragment IssueParts on Issue { id title state body author { ...ActorParts } }
        fragment ActorParts on Actor { login avatarUrl }
        fragment Comment on Comment { body createdAt author { login } }"#,
        r#"{"owner": "octocat", "name": "hello-world", "number": 1}"#,
    ),
    (
        "node lookup by id with type conditions",
        r#"query ($id: ID!) { node(id: $id) { id ... on PullRequest { title merged mergedAt } ... on Issue { title closed } } }"#,
        r#"{"id": "PR_kwDOAbc"}"#,
    ),
    (
        "pull requests with reviews",
        r#"query {
          repository(owner: "octocat", name: "Hello-World") {
            pullRequests(last: 10, states: MERGED, baseRefName: "main") {
              nodes {
                number title additions deletions changedFiles
                reviews(first: 5, states: [APPROVED, CHANGES_REQUESTED]) { nodes { state author { login } submittedAt } }
                commits(last: 1) { nodes { commit { oid messageHeadline statusCheckRollup { state } } } }
              }
            }
          }
        }"#,
        "{}",
    ),
    (
        "user with contributions",
        r#"query User($login: String!, $from: DateTime, $to: DateTime) {
          user(login: $login) {
            name bio company location websiteUrl
            followers { totalCount } following { totalCount }
            contributionsCollection(from: $from, to: $to) {
              totalCommitContributions
              contributionCalendar { totalContributions weeks { contributionDays { date contributionCount color } } }
            }
            pinnedItems(first: 6, types: [REPOSITORY]) { nodes { ... on Repository { name description stargazerCount } } }
          }
        }"#,
        r#"{"login": "torvalds", "from": "2024-01-01T00:00:00Z", "to": "2024-12-31T23:59:59Z"}"#,
    ),
    (
        "organization repositories and teams",
        r#"query Org($org: String!, $cursor: String) {
          organization(login: $org) {
            name description
            repositories(first: 100, after: $cursor, orderBy: {field: PUSHED_AT, direction: DESC}, privacy: PUBLIC) {
              pageInfo { hasNextPage endCursor }
              nodes { name isArchived pushedAt defaultBranchRef { name } }
            }
            teams(first: 20) { nodes { name slug members { totalCount } } }
          }
        }"#,
        r#"{"org": "github", "cursor": "Y3Vyc29yOnYyOpHOAAA="}"#,
    ),
    (
        "rate limit and aliases",
        r#"query {
          rateLimit { limit cost remaining resetAt }
          rust: repository(owner: "rust-lang", name: "rust") { stargazerCount }
          go: repository(owner: "golang", name: "go") { stargazerCount }
        }"#,
        "{}",
    ),
    (
        "file contents through object(expression:)",
        r#"query File($owner: String!, $name: String!, $expr: String!) {
          repository(owner: $owner, name: $name) { object(expression: $expr) { ... on Blob { text byteSize isBinary } ... on Tree { entries { name type mode } } } }
        }"#,
        r#"{"owner": "octocat", "name": "Hello-World", "expr": "main:README.md"}"#,
    ),
    (
        "createIssue mutation with list ids",
        r#"mutation CreateIssue($repo: ID!, $title: String!, $body: String, $labels: [ID!]) {
          createIssue(input: {repositoryId: $repo, title: $title, body: $body, labelIds: $labels}) { issue { number url } }
        }"#,
        r#"{"repo": "R_kgDOA", "title": "Crash on start", "body": "Steps to reproduce...", "labels": ["LA_kwDOA1", "LA_kwDOA2"]}"#,
    ),
    (
        "addReaction with an enum literal",
        r#"mutation { addReaction(input: {subjectId: "IC_kwDOA", content: HOORAY}) { reaction { content } subject { id } } }"#,
        "{}",
    ),
    (
        "directives with variables",
        r#"query Repo($owner: String!, $name: String!, $withIssues: Boolean!, $skipPRs: Boolean = false) {
          repository(owner: $owner, name: $name) {
            name
            issues(first: 5) @include(if: $withIssues) { totalCount }
            pullRequests(first: 5) @skip(if: $skipPRs) { totalCount }
          }
        }"#,
        r#"{"owner": "a", "name": "b", "withIssues": true}"#,
    ),
    (
        "releases and tags",
        r#"query {
          repository(owner: "nodejs", name: "node") {
            releases(first: 5, orderBy: {field: CREATED_AT, direction: DESC}) { nodes { name tagName publishedAt isPrerelease releaseAssets(first: 3) { nodes { name downloadCount } } } }
            refs(refPrefix: "refs/tags/", first: 5) { nodes { name target { oid ... on Tag { message } } } }
          }
        }"#,
        "{}",
    ),
    (
        "search issues with union results",
        r#"query ($q: String!) {
          search(query: $q, type: ISSUE, first: 20) {
            issueCount
            nodes { ... on Issue { number title repository { nameWithOwner } } ... on PullRequest { number title isDraft } }
          }
        }"#,
        r#"{"q": "repo:rust-lang/rust is:open label:C-bug"}"#,
    ),
    (
        "discussion with nested comments",
        r#"query { repository(owner: "vercel", name: "next.js") { discussions(first: 3, orderBy: {field: UPDATED_AT, direction: DESC}) { nodes { title category { name } comments(first: 3) { nodes { body replies(first: 2) { nodes { body } } } } } } } }"#,
        "{}",
    ),
];

#[test]
fn github_schema_indexes() {
    let s = github();
    assert!(s.len() > 1000, "{} types", s.len());
    assert!(s.query.is_some() && s.mutation.is_some());
    let actor = s.type_id("Actor").unwrap();
    assert!(s.overlaps(actor, s.type_id("User").unwrap()));
    assert!(!s.overlaps(s.type_id("Issue").unwrap(), s.type_id("User").unwrap()));
}

#[test]
fn real_github_queries_are_allowed() {
    for (name, q, vars) in VALID {
        let r = gh(q, vars);
        assert!(r.is_empty(), "{name}: {:#?}", r);
    }
}

#[test]
fn invalid_github_queries_are_located() {
    let cases: &[(&str, &str, &str, &str)] = &[
        ("query { viewer { login passwordHash } }", "{}", "graphql.field_unknown", "graphql.query.viewer.passwordHash"),
        (
            r#"query { repository(owner: "a", name: "b") { issues(first: "ten") { totalCount } } }"#,
            "{}",
            "graphql.argument_invalid",
            "graphql.query.repository.issues.first",
        ),
        (
            r#"query { repository(owner: "a", name: "b") { issues(frist: 10) { totalCount } } }"#,
            "{}",
            "graphql.argument_unknown",
            "graphql.query.repository.issues.frist",
        ),
        (r#"query { repository(owner: "a") { name } }"#, "{}", "graphql.argument_missing", "graphql.query.repository.name"),
        (
            r#"query { repository(owner: "a", name: "b") { issues(first: 5, states: [OPENED]) { totalCount } } }"#,
            "{}",
            "graphql.argument_invalid",
            "graphql.query.repository.issues.states.0",
        ),
        (
            r#"query { repository(owner: "a", name: "b") { issues(first: 5, orderBy: {field: CREATED_AT}) { totalCount } } }"#,
            "{}",
            "graphql.argument_invalid",
            "graphql.query.repository.issues.orderBy.direction",
        ),
        (
            r#"query { repository(owner: "a", name: "b") { issues(first: 99999999999) { totalCount } } }"#,
            "{}",
            "graphql.argument_invalid",
            "graphql.query.repository.issues.first",
        ),
        ("query { viewer }", "{}", "graphql.selection_missing", "graphql.query.viewer"),
        ("query { viewer { login { x } } }", "{}", "graphql.selection_invalid", "graphql.query.viewer.login"),
        ("query { viewer { ... on Organization { name } } }", "{}", "graphql.fragment_type_invalid", "graphql.query.viewer....on Organization"),
        ("query { viewer { ... on Nope { name } } }", "{}", "graphql.type_unknown", "graphql.query.viewer....on Nope"),
        ("query { viewer { ...Missing } }", "{}", "graphql.fragment_unknown", "graphql.query.viewer....Missing"),
        ("query ($n: Int) { viewer { login(x: $n) } }", "{}", "graphql.argument_unknown", "graphql.query.viewer.login.x"),
        (
            "query ($first: String) { viewer { repositories(first: $first) { totalCount } } }",
            "{}",
            "graphql.variable_type_mismatch",
            "graphql.query.viewer.repositories.first",
        ),
        (r#"query ($o: String) { repository(owner: $o, name: "x") { name } }"#, "{}", "graphql.variable_type_mismatch", "graphql.query.repository.owner"),
        ("query { viewer { repositories(first: $n) { totalCount } } }", "{}", "graphql.variable_undefined", "graphql.query.viewer.repositories.first"),
        ("query ($n: Int!) { viewer { repositories(first: $n) { totalCount } } }", "{}", "graphql.variable_missing", "graphql.variables.n"),
        ("query ($n: Int!) { viewer { repositories(first: $n) { totalCount } } }", r#"{"n": "ten"}"#, "graphql.variable_invalid", "graphql.variables.n"),
        (
            "mutation ($input: AddCommentInput!) { addComment(input: $input) { clientMutationId } }",
            r#"{"input": {"subjectId": "x", "body": 5}}"#,
            "graphql.variable_invalid",
            "graphql.variables.input.body",
        ),
        (
            "mutation ($input: AddCommentInput!) { addComment(input: $input) { clientMutationId } }",
            r#"{"input": {"subjectId": "x", "body": "hi", "isAdmin": true}}"#,
            "graphql.variable_invalid",
            "graphql.variables.input.isAdmin",
        ),
        ("query ($x: Repository) { viewer { login } }", "{}", "graphql.variable_type_invalid", "graphql.variables.x"),
        ("query { viewer { login @cached } }", "{}", "graphql.directive_unknown", "graphql.query.viewer.login.@cached"),
        ("query { viewer { login @include } }", "{}", "graphql.argument_missing", "graphql.query.viewer.login.@include.if"),
        ("subscription { viewer { login } }", "{}", "graphql.operation_unsupported", "graphql.subscription"),
        ("query { __schema { types { name } } }", "{}", "graphql.introspection", "graphql.query.__schema"),
        ("query { viewer { __typename login } }", "{}", "", ""),
    ];
    for (q, vars, code, at) in cases {
        let r = codes_at(&gh(q, vars));
        if code.is_empty() {
            assert!(r.is_empty(), "{q}: {r:?}");
        } else {
            assert!(r.contains(&(code.to_string(), at.to_string())), "{q}: expected {code} at {at}, got {r:?}");
        }
    }
}

#[test]
fn depth_aliases_root_fields_fields_directives_repeat() {
    let l = Limits { max_depth: 3, max_aliases: 2, max_root_fields: 2, max_fields: 6, max_directives: 1, max_field_repeat: 2, ..Limits::default() };
    assert_eq!(no_schema("{ a { b { c } } }", &l), vec![]);
    assert_eq!(no_schema("{ a { b { c { d } } } }", &l), vec![("graphql.depth".into(), "graphql.query.a.b.c.d".into())]);
    assert_eq!(no_schema("{ x: a y: a z: a }", &l).iter().filter(|(c, _)| c == "graphql.aliases").count(), 1);
    assert!(no_schema("{ x: a y: a z: a }", &l).contains(&("graphql.field_repeat".into(), "graphql.query.a".into())));
    assert!(no_schema("{ a b c }", &l).contains(&("graphql.root_fields".into(), "graphql.query".into())));
    assert!(no_schema("{ a { b c d e f g } }", &l).contains(&("graphql.fields".into(), "graphql.query".into())));
    assert!(no_schema("{ a @skip(if: false) b @skip(if: false) }", &l).contains(&("graphql.directives".into(), "graphql.query".into())));
    // Fragments count where they are spread: depth through a fragment, fields twice when
    // spread twice.
    assert!(no_schema("{ a { ...F } } fragment F on T { b { c { d } } }", &l).contains(&("graphql.depth".into(), "graphql.query.a.b.c.d".into())));
    assert!(no_schema("{ a { ...F } b { ...F } } fragment F on T { c d }", &l).is_empty());
    assert!(no_schema("{ a { ...F } b { ...F } c { ...F } } fragment F on T { c d }", &l).contains(&("graphql.fields".into(), "graphql.query".into())));
    // Repetition counts across fragments spread into one selection set.
    assert!(no_schema("{ a ...F ... on Q { a } } fragment F on Q { a }", &l).contains(&("graphql.field_repeat".into(), "graphql.query.a".into())));
    // 0 turns a limit off.
    let off = Limits { max_depth: 0, max_aliases: 0, max_root_fields: 0, max_fields: 0, max_directives: 0, max_field_repeat: 0, ..Limits::default() };
    assert!(no_schema("{ x: a y: a z: a { b { c { d { e } } } } }", &off).is_empty());
}

#[test]
fn introspection_is_blocked_unless_allowed_and_typename_always_is() {
    let block = Limits::default();
    assert_eq!(no_schema("{ __schema { types { name } } }", &block), vec![("graphql.introspection".into(), "graphql.query.__schema".into())]);
    assert_eq!(no_schema(r#"{ __type(name: "User") { fields { name } } }"#, &block), vec![("graphql.introspection".into(), "graphql.query.__type".into())]);
    // Hidden in a fragment, it is found where the fragment is spread.
    assert_eq!(no_schema("{ ...I } fragment I on Query { __schema { queryType { name } } }", &block)[0].0, "graphql.introspection");
    assert!(no_schema("{ user { __typename name } }", &block).is_empty());
    let allow = Limits { introspection: true, ..Limits::default() };
    assert!(no_schema("{ __schema { types { name } } }", &allow).is_empty());
    // With the schema, allowed introspection is not validated against the SDL.
    let body = serde_json::json!({"query": "{ __schema { types { name kind } } __type(name: \"User\") { name } }"}).to_string();
    assert!(judge_env(&post(&body), &allow, Some(github())).0.is_empty());
}

#[test]
fn fragment_cycles_and_bombs_are_bounded() {
    let l = Limits::default();
    let r = no_schema("{ ...A } fragment A on Q { a ...B } fragment B on Q { b ...A }", &l);
    assert!(r.iter().any(|(c, at)| c == "graphql.fragment_cycle" && at == "graphql.query....A"), "{r:?}");
    let r = no_schema("{ ...A } fragment A on Q { ...A }", &l);
    assert_eq!(r[0].0, "graphql.fragment_cycle");
    // A fragment bomb: each level spreads the next twice (2^30 fields once expanded).
    let mut q = String::from("{ ...F0 }\n");
    for i in 0..30 {
        q.push_str(&format!("fragment F{i} on Q {{ ...F{} ...F{} }}\n", i + 1, i + 1));
    }
    q.push_str("fragment F30 on Q { a }\n");
    let r = no_schema(&q, &l);
    assert!(r.iter().any(|(c, _)| c == "graphql.fields"), "{r:?}");
    // Also without a field limit: the visit budget still stops it.
    let r = no_schema(&q, &Limits { max_fields: 0, ..l.clone() });
    assert!(r.iter().any(|(c, _)| c == "graphql.fields"), "{r:?}");
    // A long chain of fragments is cut at the nesting bound, not by the stack.
    let mut q = String::from("{ ...F0 }\n");
    for i in 0..200 {
        q.push_str(&format!("fragment F{i} on Q {{ ...F{} }}\n", i + 1));
    }
    q.push_str("fragment F200 on Q { a }\n");
    assert!(no_schema(&q, &l).iter().any(|(c, _)| c == "graphql.depth"));
}

#[test]
fn operation_selection() {
    let l = Limits::default();
    let body = r#"{"query": "query A { a } query B { b }", "operationName": "B"}"#;
    assert!(judge_env(&post(body), &l, None).0.is_empty());
    let body = r#"{"query": "query A { a } query B { b }"}"#;
    assert_eq!(judge_env(&post(body), &l, None).0[0].code, "graphql.operation_unknown");
    let body = r#"{"query": "query A { a }", "operationName": "C"}"#;
    assert_eq!(judge_env(&post(body), &l, None).0[0].code, "graphql.operation_unknown");
    // Only the selected operation is judged.
    let deep = format!("query A {}x{} query B {{ b }}", "{ a ".repeat(20), " }".repeat(20));
    let body = serde_json::json!({"query": deep, "operationName": "B"}).to_string();
    assert!(judge_env(&post(&body), &l, None).0.is_empty());
}

#[test]
fn ambiguous_documents_are_refused() {
    let l = Limits::default();
    for q in ["query A { a } query A { b }", "{ a } query B { b }", "{ ...F } fragment F on Q { a } fragment F on Q { b }", "{ a } fragment Unused on Q { b }"]
    {
        let body = serde_json::json!({ "query": q, "operationName": "A" }).to_string();
        let r = judge_env(&post(&body), &l, None).0;
        assert_eq!(r[0].code, "graphql.document_invalid", "{q}: {r:?}");
    }
    // A fragment used only through another fragment is used.
    assert!(no_schema("{ ...F } fragment F on Q { ...G } fragment G on Q { a }", &l).is_empty());
}

#[test]
fn batches() {
    let l = Limits { max_batch: 2, ..Limits::default() };
    let two = r#"[{"query": "{ a }"}, {"query": "mutation { b }"}]"#;
    let (r, s) = judge_env(&post(two), &l, None);
    assert!(r.is_empty(), "{r:?}");
    assert_eq!(s.operations.len(), 2);
    let three = r#"[{"query": "{ a }"}, {"query": "{ a }"}, {"query": "{ a }"}]"#;
    assert_eq!(codes_at(&judge_env(&post(three), &l, None).0), vec![("graphql.batch".into(), "graphql".into())]);
    // Findings in an entry are located by its index.
    let bad = r#"[{"query": "{ a }"}, {"query": "{ __schema { types { name } } }"}]"#;
    assert_eq!(codes_at(&judge_env(&post(bad), &l, None).0), vec![("graphql.introspection".into(), "graphql[1].query.__schema".into())]);
    assert!(from_http(&Method::POST, Some("application/json"), None, b"[]").is_err());
    let e = from_http(&Method::POST, Some("application/json"), None, br#"[{"query": "{a}"}, 5]"#).unwrap_err();
    assert_eq!(e.context.as_deref(), Some("[1]"));
}

#[test]
fn get_requests() {
    let env =
        from_http(&Method::GET, None, Some("query=%7B%20viewer%20%7B%20login%20%7D%20%7D&variables=%7B%22a%22%3A1%7D&operationName="), b"").unwrap().unwrap();
    assert!(env.get);
    assert_eq!(env.requests[0].query.as_deref(), Some("{ viewer { login } }"));
    assert_eq!(env.requests[0].variables.as_ref().unwrap()["a"], 1);
    assert!(judge_env(&env, &Limits::default(), Some(github())).0.is_empty());
    // Mutations are not sent with GET.
    let env = from_http(&Method::GET, None, Some("query=mutation+%7B+a+%7D"), b"").unwrap().unwrap();
    assert_eq!(judge_env(&env, &Limits::default(), None).0[0].code, "graphql.method");
    // Not a GraphQL request: an IDE page.
    assert_eq!(from_http(&Method::GET, None, Some("tab=1"), b"").unwrap(), None);
    assert_eq!(from_http(&Method::GET, None, None, b"").unwrap(), None);
    assert!(from_http(&Method::GET, None, Some("query={a}&variables=[1]"), b"").is_err());
    // One document per request, under the plain parameter name.
    assert!(from_http(&Method::GET, None, Some("query={a}&query={b}"), b"").is_err());
    assert!(from_http(&Method::GET, None, Some("%71uery={a}"), b"").is_err());
}

#[test]
fn persisted_queries_pass_through() {
    let body = r#"{"operationName": "Q", "variables": {"id": 1}, "extensions": {"persistedQuery": {"version": 1, "sha256Hash": "ecf4edb46db40b5132295c0291d62fb65d6759a9eedfa4d5d612dd5ec54a6b38"}}}"#;
    let (r, s) = judge_env(&post(body), &Limits::default(), Some(github()));
    assert!(r.is_empty());
    assert_eq!(s.persisted, 1);
    let get = from_http(&Method::GET, None, Some("extensions=%7B%22persistedQuery%22%3A%7B%22version%22%3A1%2C%22sha256Hash%22%3A%22abc%22%7D%7D"), b"")
        .unwrap()
        .unwrap();
    assert_eq!(judge_env(&get, &Limits::default(), None).1.persisted, 1);
    // With the query too (the registration round trip), the query is judged.
    let body = r#"{"query": "{ __schema { types { name } } }", "extensions": {"persistedQuery": {"version": 1, "sha256Hash": "x"}}}"#;
    assert_eq!(judge_env(&post(body), &Limits::default(), None).0[0].code, "graphql.introspection");
    // Neither a query nor a hash.
    assert!(from_http(&Method::POST, Some("application/json"), None, br#"{"variables": {}}"#).is_err());
}

#[test]
fn envelopes() {
    let env = from_http(&Method::POST, Some("application/graphql; charset=utf-8"), None, b"{ a }").unwrap().unwrap();
    assert_eq!(env.requests[0].query.as_deref(), Some("{ a }"));
    assert!(from_http(&Method::POST, Some("text/plain"), None, b"{ a }").is_err());
    assert!(from_http(&Method::POST, Some("application/json"), None, b"{ a }").is_err());
    assert!(from_http(&Method::POST, Some("application/json"), None, br#"{"query": 5}"#).is_err());
    assert!(from_http(&Method::POST, Some("application/json"), None, br#"{"query": "{a}", "variables": "x"}"#).is_err());
    assert!(from_http(&Method::POST, Some("application/vnd.api+json"), None, br#"{"query": "{a}"}"#).unwrap().is_some());
    assert_eq!(from_http(&Method::PUT, Some("application/json"), None, b"{}").unwrap(), None);
}

#[test]
fn syntax_errors_and_sizes() {
    let l = Limits { max_query_bytes: 100, ..Limits::default() };
    assert_eq!(no_schema("{ a { b }", &l)[0], ("graphql.syntax".into(), "graphql".into()));
    assert_eq!(no_schema("type T { a: Int }", &l)[0].0, "graphql.syntax");
    assert_eq!(no_schema(&format!("{{ a(x: \"{}\") }}", "y".repeat(200)), &l)[0].0, "graphql.query_size");
    // Nesting beyond the parser's bound is refused, not recursed into.
    let deep = format!("{}{}", "{ a ".repeat(5000), "}".repeat(5000));
    let r = no_schema(&deep, &Limits { max_query_bytes: 0, max_depth: 0, ..Limits::default() });
    assert_eq!(r[0].0, "graphql.query_size");
    let deep_list = format!("{{ a(x: {}1{}) }}", "[".repeat(5000), "]".repeat(5000));
    assert_eq!(no_schema(&deep_list, &Limits { max_query_bytes: 0, ..Limits::default() })[0].0, "graphql.query_size");
}

/// Inputs from a small generator: every prefix and a byte-flipped copy of real queries must
/// parse or be refused, never panic.
#[test]
fn malformed_input_never_panics() {
    let limits = Limits::default();
    for (_, q, vars) in VALID {
        let bytes = q.as_bytes();
        for cut in (0..bytes.len()).step_by(7) {
            let Ok(prefix) = std::str::from_utf8(&bytes[..cut]) else { continue };
            let body = serde_json::json!({"query": prefix, "variables": serde_json::from_str::<serde_json::Value>(vars).unwrap()}).to_string();
            if let Ok(Some(env)) = from_http(&Method::POST, Some("application/json"), None, body.as_bytes()) {
                let _ = judge_env(&env, &limits, Some(github()));
            }
        }
        let mut flipped = bytes.to_vec();
        for i in (0..flipped.len()).step_by(11) {
            flipped[i] = b"{}()[]$@!:\"\\."[i % 13];
        }
        let text = String::from_utf8_lossy(&flipped);
        let _ = judge_env(&post(&serde_json::json!({ "query": text }).to_string()), &limits, Some(github()));
    }
}

#[test]
fn values_for_detection_are_arguments_and_variables() {
    let body = r#"{"query": "query Q($v: String = \"dflt\") { user(name: \"a' OR 1=1 --\") { posts(filter: {title: \"<script>\", tags: [\"x\", \"y\"]}, first: 5) { id } } ...F } fragment F on Query { b(s: \"\"\"block\"\"\") } # comment ' OR 1=1", "variables": {"input": {"body": "hello"}}, "operationName": "Q", "other": "z"}"#;
    let env = post(body);
    let mut out = Vec::new();
    let mut values = Vec::new();
    check_envelope(&env, &Limits::default(), None, &mut out, Some(&mut values), None);
    let got: Vec<(String, String, bool)> = values.into_iter().map(|v| (v.location, v.value, v.key)).collect();
    let want = [
        ("graphql.variables.v", "dflt", false),
        ("graphql.query.user.name", "a' OR 1=1 --", false),
        ("graphql.query.user.posts.filter.title", "<script>", false),
        ("graphql.query.user.posts.filter.tags.0", "x", false),
        ("graphql.query.user.posts.filter.tags.1", "y", false),
        ("graphql.fragment.F.b.s", "block", false),
        ("graphql.operationName", "Q", false),
        ("graphql.variables.input", "input", true),
        ("graphql.variables.input.body", "body", true),
        ("graphql.variables.input.body", "hello", false),
        ("graphql.other", "other", true),
        ("graphql.other", "z", false),
    ];
    let want: Vec<(String, String, bool)> = want.iter().map(|(a, b, c)| (a.to_string(), b.to_string(), *c)).collect();
    assert_eq!(got, want);
    // The comment is not a value.
    assert!(!got.iter().any(|(_, v, _)| v.contains("comment")));
}

#[test]
fn cached_analyses_give_the_same_verdicts_and_stay_bounded() {
    use crate::check::DocCache;
    let cache = DocCache::new(3, 4096);
    let judge = |body: &str, cache: Option<&DocCache>| {
        let mut out = Vec::new();
        let mut values = Vec::new();
        check_envelope(&post(body), &Limits::default(), Some(github()), &mut out, Some(&mut values), cache);
        (codes_at(&out), values)
    };
    let q = "query ($n: Int!) { viewer { repositories(first: $n) { totalCount } login(x: \\\"a\\\") } }";
    let bodies = [
        format!(r#"{{"query": "{q}", "variables": {{"n": 5}}}}"#),
        format!(r#"{{"query": "{q}", "variables": {{"n": "five"}}}}"#),
        format!(r#"{{"query": "{q}"}}"#),
        format!(r#"[{{"query": "{{ viewer {{ login }} }}"}}, {{"query": "{q}", "variables": {{"n": 1}}}}]"#),
        r#"{"query": "query A { viewer { login } } query B { viewer { nope } }", "operationName": "A"}"#.to_string(),
        r#"{"query": "query A { viewer { login } } query B { viewer { nope } }", "operationName": "B"}"#.to_string(),
        r#"{"query": "{ viewer { "}"#.to_string(),
    ];
    // Twice over: the second round takes every analysis from the cache (or recomputes an
    // evicted one); each verdict is the uncached one, variables judged per request, locations
    // under each request's own place.
    for _ in 0..2 {
        for b in &bodies {
            assert_eq!(judge(b, Some(&cache)), judge(b, None), "{b}");
        }
    }
    let (r, _) = judge(&bodies[3], Some(&cache));
    assert!(r.contains(&("graphql.argument_unknown".into(), "graphql[1].query.viewer.login.x".into())), "{r:?}");
    let (r, _) = judge(&bodies[1], Some(&cache));
    assert!(r.contains(&("graphql.variable_invalid".into(), "graphql.variables.n".into())), "{r:?}");
    assert!(cache.len() <= 3);
    // Bounded by bytes too: a document larger than the cache is analysed, not kept.
    let big = format!(r#"{{"query": "{{ viewer {{ login }} }} {}"}}"#, "#".repeat(5000));
    assert!(judge(&big, Some(&cache)).0.is_empty());
    assert!(cache.len() <= 3);
}

#[test]
fn multipart_uploads() {
    let body = "--XyZ\r\nContent-Disposition: form-data; name=\"operations\"\r\n\r\n\
{\"query\": \"mutation ($file: Upload!, $files: [Upload!]!) { up(f: $file, fs: $files) }\", \"variables\": {\"file\": null, \"files\": [null, null]}}\r\n\
--XyZ\r\nContent-Disposition: form-data; name=\"map\"\r\n\r\n{\"0\": [\"variables.file\"], \"1\": [\"variables.files.0\"], \"2\": [\"variables.files.1\"]}\r\n\
--XyZ\r\nContent-Disposition: form-data; name=\"0\"; filename=\"a.txt\"\r\nContent-Type: text/plain\r\n\r\nhello\r\n\
--XyZ\r\nContent-Disposition: form-data; name=\"1\"; filename=\"b.png\"\r\n\r\n\x01\x02\r\n\
--XyZ\r\nContent-Disposition: form-data; name=\"2\"; filename=\"c.png\"\r\n\r\n\r\n--XyZ--\r\n";
    let env = from_http(&Method::POST, Some("multipart/form-data; boundary=XyZ"), None, body.as_bytes()).unwrap().unwrap();
    assert_eq!(env.files, vec![("0".into(), "a.txt".into()), ("1".into(), "b.png".into()), ("2".into(), "c.png".into())]);
    let vars = env.requests[0].variables.as_ref().unwrap();
    assert_eq!(vars["file"], "(file part 0)");
    assert_eq!(vars["files"][1], "(file part 2)");
    // The non-null `Upload!` variables are present once mapped.
    let schema = Schema::parse("scalar Upload\ntype Query { a: Int }\ntype Mutation { up(f: Upload!, fs: [Upload!]!): Int }", "s").unwrap();
    assert!(judge_env(&env, &Limits::default(), Some(&schema)).0.is_empty());
    // A map that names no variable, a missing `operations`, a broken part.
    let bad_map = body.replace("variables.files.1", "query");
    assert!(from_http(&Method::POST, Some("multipart/form-data; boundary=XyZ"), None, bad_map.as_bytes()).is_err());
    let no_ops = body.replace("name=\"operations\"", "name=\"ops\"");
    assert!(from_http(&Method::POST, Some("multipart/form-data; boundary=XyZ"), None, no_ops.as_bytes()).is_err());
    for cut in (0..body.len()).step_by(13) {
        let _ = from_http(&Method::POST, Some("multipart/form-data; boundary=XyZ"), None, &body.as_bytes()[..cut]);
    }
    assert!(from_http(&Method::POST, Some("multipart/form-data"), None, body.as_bytes()).is_err());
    // The framing is RFC 7578's: a preamble is skipped, bare-LF lines and a body without its
    // close delimiter are refused, a quoted boundary and an RFC 5987 file name are read.
    let preamble = format!("ignored preamble\r\n{body}");
    assert_eq!(from_http(&Method::POST, Some("multipart/form-data; boundary=XyZ"), None, preamble.as_bytes()).unwrap().unwrap(), env);
    let bare_lf = body.replace("\r\n", "\n");
    let e = from_http(&Method::POST, Some("multipart/form-data; boundary=XyZ"), None, bare_lf.as_bytes()).unwrap_err();
    assert!(e.to_string().contains("CRLF"), "{e}");
    let unclosed = body.replace("--XyZ--", "--XyZ");
    assert!(from_http(&Method::POST, Some("multipart/form-data; boundary=XyZ"), None, unclosed.as_bytes()).is_err());
    let ext = body.replace("filename=\"a.txt\"", "filename*=UTF-8''%E2%82%AC.txt");
    let env = from_http(&Method::POST, Some("multipart/form-data; boundary=\"XyZ\""), None, ext.as_bytes()).unwrap().unwrap();
    assert_eq!(env.files[0], ("0".into(), "\u{20ac}.txt".into()));
}

/// The request parser against an independent one (`apollo-parser`, the parser of Apollo's
/// Rust tooling): on real queries, on hand-written documents covering the grammar, and on every
/// broken variant the generator below makes of them, both accept the same documents and read
/// the same tree (compared in a canonical printed form), or both refuse.
mod differential {
    use std::fmt::Write;

    use apollo_parser::cst::{self, CstNode};

    use crate::doc::{self, Document, Selection, TypeRef, Value, NESTING_LIMIT};

    const EXTRA: &[&str] = &[
        "{ a }",
        "query { a b: c(x: 1, y: -2.5e3, z: \"s\", w: ENUM, v: null, u: true, t: [1, [2]], o: {k: {j: false}}) }",
        "query Q($a: Int = 3, $b: [String!]! = [\"x\"], $c: In @d) @op(x: 1) { f(a: $a, b: $b) @skip(if: $c) { ...F ... on T { g } ... @include(if: true) { h } } }\nfragment F on T @fd { i }",
        "mutation M { add(input: {body: \"\"\"\n    block\n      indented\n    \"\"\"}) { id } }",
        "subscription S { onEvent(filter: {kinds: [A, B]}) { id __typename } }",
        "# comment\n,,, query A { a } query B { b }",
        "{ f(s: \"esc \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u00e9 \\uD83D\\uDE00 end\") }",
        "{ f(s: \"\"\"with \\\"\"\" inside\"\"\") }",
        "{ a(x: 0, y: -0, z: 1.0, w: 1E2, v: 1e-2) }",
        "query ($v: [[Int!]]!) { a(x: $v) }",
        "{ ...on }",
        "{ ... on on { a } }",
        "fragment query on Query { a } { ...query }",
        "\u{FEFF}{ a }",
        "{ a(x: \"\u{1F600} ünï\") }",
        // Refused by both.
        "{}",
        "{ a() }",
        "query Q() { a }",
        "{ a(x: 01) }",
        "{ a(x: 1.) }",
        "{ a(x: .5) }",
        "{ a(x: 1.5.2) }",
        "{ a(x: 12ab) }",
        "{ a(x: \"unterminated) }",
        "{ a(x: \"\\q\") }",
        "{ a(x: \"\\u12\") }",
        "query ($v: Int = $w) { a }",
        "fragment on on T { a }",
        "{ a .. b }",
        "{ a } }",
        "{ a(x: [1 2) }",
        "query",
        "{ a ? }",
        "{ a(x: {k 1}) }",
    ];

    /// Our tree, printed.
    fn ours(src: &str) -> Option<String> {
        let d = doc::parse(src, usize::MAX).ok()?;
        Some(print_doc(&d))
    }

    fn print_doc(d: &Document<'_>) -> String {
        let mut s = String::new();
        for op in &d.operations {
            write!(s, "op {} {:?} (", op.kind.as_str(), op.name).unwrap();
            for v in &op.variables {
                write!(s, "${}: {} = ", v.name, v.ty).unwrap();
                match &v.default {
                    Some(d) => value(&mut s, d),
                    None => s.push('-'),
                }
                dirs(&mut s, d, v.directives);
                s.push(' ');
            }
            s.push(')');
            dirs(&mut s, d, op.directives);
            sels(&mut s, d, d.set(op.selections));
            s.push('\n');
        }
        for f in &d.fragments {
            write!(s, "fragment {} on {}", f.name, f.on).unwrap();
            dirs(&mut s, d, f.directives);
            sels(&mut s, d, d.set(f.selections));
            s.push('\n');
        }
        s
    }

    fn dirs(s: &mut String, doc: &Document<'_>, ds: doc::Dirs) {
        for d in doc.dirs(ds) {
            write!(s, " @{}", d.name).unwrap();
            args(s, doc.args(d.arguments));
        }
    }

    fn args(s: &mut String, a: &[(&str, Value<'_>)]) {
        s.push('(');
        for (n, v) in a {
            write!(s, "{n}: ").unwrap();
            value(s, v);
            s.push(' ');
        }
        s.push(')');
    }

    fn value(s: &mut String, v: &Value<'_>) {
        match v {
            Value::Variable(n) => write!(s, "${n}").unwrap(),
            Value::Int(i) => write!(s, "int {i}").unwrap(),
            Value::Float(f) => write!(s, "float {f}").unwrap(),
            Value::String(t) => write!(s, "{t:?}").unwrap(),
            Value::Boolean(b) => write!(s, "{b}").unwrap(),
            Value::Null => s.push_str("null"),
            Value::Enum(e) => write!(s, "enum {e}").unwrap(),
            Value::List(items) => {
                s.push('[');
                items.iter().for_each(|i| {
                    value(s, i);
                    s.push(' ');
                });
                s.push(']');
            }
            Value::Object(fields) => {
                s.push('{');
                fields.iter().for_each(|(k, v)| {
                    write!(s, "{k}: ").unwrap();
                    value(s, v);
                    s.push(' ');
                });
                s.push('}');
            }
        }
    }

    fn sels<'d>(s: &mut String, d: &Document<'_>, list: impl Iterator<Item = &'d Selection<'d>>) {
        s.push_str(" {");
        for sel in list {
            match sel {
                Selection::Field(f) => {
                    write!(s, " {:?}:{}", f.alias, f.name).unwrap();
                    args(s, d.args(f.arguments));
                    dirs(s, d, f.directives);
                    if !f.selections.is_empty() {
                        sels(s, d, d.set(f.selections));
                    }
                }
                Selection::Spread { name, directives } => {
                    write!(s, " ...{name}").unwrap();
                    dirs(s, d, *directives);
                }
                Selection::Inline { on, directives, selections } => {
                    write!(s, " ... {on:?}").unwrap();
                    dirs(s, d, *directives);
                    sels(s, d, d.set(*selections));
                }
            }
        }
        s.push_str(" }");
    }

    /// `apollo-parser`'s tree, read into ours' shape and printed the same way. `None`: a
    /// syntax error, a type system definition, or no operation.
    fn theirs(src: &str) -> Option<String> {
        let tree = apollo_parser::Parser::new(src).recursion_limit(NESTING_LIMIT).parse();
        if tree.errors().next().is_some() {
            return None;
        }
        let mut d = Document::default();
        ARGS.with(|a| a.borrow_mut().clear());
        DIRS.with(|a| a.borrow_mut().clear());
        let arena = std::cell::RefCell::new(Vec::new());
        let arena = &arena;
        for def in tree.document().definitions() {
            match def {
                cst::Definition::OperationDefinition(op) => {
                    let kind = match op.operation_type() {
                        Some(t) if t.mutation_token().is_some() => doc::OpKind::Mutation,
                        Some(t) if t.subscription_token().is_some() => doc::OpKind::Subscription,
                        _ => doc::OpKind::Query,
                    };
                    let variables = op
                        .variable_definitions()
                        .map(|v| {
                            v.variable_definitions()
                                .map(|v| {
                                    Some(doc::VarDef {
                                        name: leak(v.variable()?.name()?.text()),
                                        ty: ty(&v.ty()?)?,
                                        default: v.default_value().and_then(|d| d.value()).map(|v| val(&v)),
                                        directives: directives(v.directives()),
                                    })
                                })
                                .collect::<Option<Vec<_>>>()
                        })
                        .unwrap_or(Some(Vec::new()))?;
                    d.operations.push(doc::Operation {
                        kind,
                        name: op.name().map(|n| leak(n.text())),
                        variables,
                        directives: directives(op.directives()),
                        selections: selections(op.selection_set(), arena),
                    });
                }
                cst::Definition::FragmentDefinition(f) => d.fragments.push(doc::Fragment {
                    name: leak(f.fragment_name()?.name()?.text()),
                    on: leak(f.type_condition()?.named_type()?.name()?.text()),
                    directives: directives(f.directives()),
                    selections: selections(f.selection_set(), arena),
                }),
                _ => return None,
            }
        }
        if d.operations.is_empty() {
            return None;
        }
        d.selections = arena.take();
        // Each set is contiguous here: linked in order.
        d.next = (1..=d.selections.len() as u32).collect();
        for op in &d.operations {
            end_set(&mut d.next, op.selections);
        }
        for f in &d.fragments {
            end_set(&mut d.next, f.selections);
        }
        for s in d.selections.clone() {
            match s {
                Selection::Field(f) => end_set(&mut d.next, f.selections),
                Selection::Inline { selections, .. } => end_set(&mut d.next, selections),
                Selection::Spread { .. } => {}
            }
        }
        d.arguments = ARGS.with(|a| a.take());
        d.directives = DIRS.with(|a| a.take());
        Some(print_doc(&d))
    }

    fn end_set(next: &mut [u32], s: doc::Set) {
        if s.len > 0 {
            next[(s.start + s.len - 1) as usize] = doc::Set::END;
        }
    }

    /// Test-only: names outlive the syntax tree they were read from.
    fn leak(s: impl std::fmt::Display) -> &'static str {
        Box::leak(s.to_string().into_boxed_str())
    }

    fn ty(t: &cst::Type) -> Option<TypeRef<'static>> {
        Some(match t {
            cst::Type::NamedType(n) => TypeRef::Named(leak(n.name()?.text())),
            cst::Type::ListType(l) => TypeRef::List(Box::new(ty(&l.ty()?)?)),
            cst::Type::NonNullType(n) => TypeRef::NonNull(Box::new(match (n.named_type(), n.list_type()) {
                (Some(named), _) => TypeRef::Named(leak(named.name()?.text())),
                (None, Some(l)) => TypeRef::List(Box::new(ty(&l.ty()?)?)),
                _ => return None,
            })),
        })
    }

    fn directives(d: Option<cst::Directives>) -> doc::Dirs {
        let items: Vec<_> = d
            .map(|d| {
                d.directives()
                    .map(|d| doc::Directive { name: leak(d.name().map(|n| n.text().to_string()).unwrap_or_default()), arguments: arguments(d.arguments()) })
                    .collect()
            })
            .unwrap_or_default();
        DIRS.with(|all| {
            let mut all = all.borrow_mut();
            let start = all.len() as u32;
            all.extend(items);
            doc::Dirs { start, len: all.len() as u32 - start }
        })
    }

    thread_local! {
        /// The arguments of the document being read from `apollo-parser`'s tree.
        static ARGS: std::cell::RefCell<Vec<(&'static str, Value<'static>)>> = const { std::cell::RefCell::new(Vec::new()) };
        /// Its directives.
        static DIRS: std::cell::RefCell<Vec<doc::Directive<'static>>> = const { std::cell::RefCell::new(Vec::new()) };
    }

    fn arguments(a: Option<cst::Arguments>) -> doc::Args {
        let items: Vec<_> = a
            .map(|a| {
                a.arguments().map(|a| (leak(a.name().map(|n| n.text().to_string()).unwrap_or_default()), a.value().map_or(Value::Null, |v| val(&v)))).collect()
            })
            .unwrap_or_default();
        ARGS.with(|all| {
            let mut all = all.borrow_mut();
            let start = all.len() as u32;
            all.extend(items);
            doc::Args { start, len: all.len() as u32 - start }
        })
    }

    /// A set, its subsets first, then its own selections together at the end of `arena`.
    fn selections(s: Option<cst::SelectionSet>, arena: &std::cell::RefCell<Vec<Selection<'static>>>) -> doc::Set {
        let Some(s) = s else { return doc::Set::default() };
        let items: Vec<_> = s
            .selections()
            .map(|s| match s {
                cst::Selection::Field(f) => Selection::Field(doc::Field {
                    alias: f.alias().and_then(|a| a.name()).map(|n| leak(n.text())),
                    name: leak(f.name().map(|n| n.text().to_string()).unwrap_or_default()),
                    arguments: arguments(f.arguments()),
                    directives: directives(f.directives()),
                    selections: selections(f.selection_set(), arena),
                }),
                cst::Selection::FragmentSpread(sp) => Selection::Spread {
                    name: leak(sp.fragment_name().and_then(|n| n.name()).map(|n| n.text().to_string()).unwrap_or_default()),
                    directives: directives(sp.directives()),
                },
                cst::Selection::InlineFragment(i) => Selection::Inline {
                    on: i.type_condition().and_then(|t| t.named_type()).and_then(|n| n.name()).map(|n| leak(n.text())),
                    directives: directives(i.directives()),
                    selections: selections(i.selection_set(), arena),
                },
            })
            .collect();
        let mut a = arena.borrow_mut();
        let start = a.len() as u32;
        a.extend(items);
        doc::Set { start, len: a.len() as u32 - start, literals: true }
    }

    fn val(v: &cst::Value) -> Value<'static> {
        match v {
            cst::Value::Variable(v) => Value::Variable(leak(v.name().map(|n| n.text().to_string()).unwrap_or_default())),
            cst::Value::StringValue(s) => Value::String(String::from(s).into()),
            cst::Value::FloatValue(f) => Value::Float(leak(f.syntax().text().to_string().trim())),
            cst::Value::IntValue(i) => Value::Int(leak(i.syntax().text().to_string().trim())),
            cst::Value::BooleanValue(b) => Value::Boolean(b.true_token().is_some()),
            cst::Value::NullValue(_) => Value::Null,
            cst::Value::EnumValue(e) => Value::Enum(leak(e.name().map(|n| n.text().to_string()).unwrap_or_default())),
            cst::Value::ListValue(l) => Value::List(l.values().map(|v| val(&v)).collect()),
            cst::Value::ObjectValue(o) => Value::Object(
                o.object_fields()
                    .map(|f| (leak(f.name().map(|n| n.text().to_string()).unwrap_or_default()), f.value().map_or(Value::Null, |v| val(&v))))
                    .collect(),
            ),
        }
    }

    /// The documents, then every 5th prefix and byte-flipped copies of each.
    fn corpus() -> Vec<String> {
        let mut base: Vec<String> = super::VALID.iter().map(|(_, q, _)| q.to_string()).chain(EXTRA.iter().map(|q| q.to_string())).collect();
        let mut out = base.clone();
        for q in base.drain(..) {
            let bytes = q.as_bytes();
            for cut in (1..bytes.len()).step_by(5) {
                if let Ok(p) = std::str::from_utf8(&bytes[..cut]) {
                    out.push(p.to_string());
                }
            }
            for (k, set) in [b"{}()[]$@!:\"\\.".as_slice(), b" ,#\n-0e.".as_slice()].iter().enumerate() {
                let mut flipped = bytes.to_vec();
                for i in (k..flipped.len()).step_by(13) {
                    if flipped[i].is_ascii() {
                        flipped[i] = set[i % set.len()];
                    }
                }
                if let Ok(s) = String::from_utf8(flipped) {
                    out.push(s);
                }
            }
        }
        out
    }

    #[test]
    fn the_parser_agrees_with_apollo_parser() {
        let corpus = corpus();
        let (mut accepted, mut refused) = (0, 0);
        for src in &corpus {
            let (a, b) = (ours(src), theirs(src));
            assert_eq!(a, b, "the two parsers disagree on {src:?}");
            if a.is_some() {
                accepted += 1;
            } else {
                refused += 1;
            }
        }
        // The corpus exercises both sides.
        assert!(accepted >= 40 && refused >= 200, "{accepted} accepted, {refused} refused");
    }
}

/// A schema that names a type it does not define: refused as a schema error, each unknown
/// name at the field or argument that uses it.
#[test]
fn schema_with_unknown_types_is_refused_at_each_use() {
    let e = Schema::parse("type Query { a: Nope, b(x: [Missing!]): Int, c: [Int!]! }", "s.graphql").unwrap_err();
    assert_eq!(e.kind, crate::ErrorKind::Schema);
    assert_eq!(e.to_string(), "s.graphql: Query.a: unknown type `Nope`; Query.b(x): unknown type `Missing`");
}
