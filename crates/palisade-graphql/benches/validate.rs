//! Parse + validate of a 2 KiB GraphQL query (a realistic GitHub API query: variables,
//! pagination, input objects, enum lists, fragments on an interface and a union) against
//! GitHub's public schema, with the default limits: the issue's bar. Also the parse alone (the
//! request parser, and `apollo-parser`, the general-purpose parser schemas are read with, for
//! comparison), to show where the time goes, and a whole request whose document the endpoint
//! has seen before (its analysis cached; the JSON envelope and the variables judged). Before
//! each measurement, the on-CPU time per iteration is printed (from
//! `/proc/thread-self/schedstat`, so that waiting for a core on a shared machine does not
//! count).
//!
//! `cargo bench -p palisade-graphql --bench validate`

use std::io::Read;

use criterion::{criterion_group, criterion_main, Criterion};
use palisade_core::http::Method;
use palisade_graphql::check::{analyze, check_envelope, check_variables, DocCache, Limits};
use palisade_graphql::request::from_http;
use palisade_graphql::{doc, Schema};

const QUERY: &str = r#"query RepoOverview($owner: String!, $name: String!, $first: Int = 20, $after: String, $labels: [String!]) {
  repository(owner: $owner, name: $name) {
    id name nameWithOwner description url stargazerCount forkCount isPrivate isArchived
    owner { login avatarUrl(size: 64) ... on Organization { name description } ... on User { name bio } }
    issues(first: $first, after: $after, labels: $labels, states: [OPEN], orderBy: {field: CREATED_AT, direction: DESC}) {
      totalCount
      pageInfo { hasNextPage endCursor }
      edges { cursor node { ...IssueFields } }
    }
    pullRequests(first: 10, states: [OPEN, MERGED], orderBy: {field: UPDATED_AT, direction: DESC}) {
      nodes {
        number title isDraft mergeable additions deletions changedFiles
        author { ...ActorFields }
        reviews(first: 5, states: [APPROVED, CHANGES_REQUESTED]) { nodes { state submittedAt author { ...ActorFields } } }
        commits(last: 1) { nodes { commit { oid messageHeadline statusCheckRollup { state } } } }
      }
    }
    releases(first: 3, orderBy: {field: CREATED_AT, direction: DESC}) { nodes { name tagName publishedAt isPrerelease } }
    languages(first: 5) { edges { size node { name color } } }
    discussions(first: 3, orderBy: {field: UPDATED_AT, direction: DESC}) { nodes { title category { name } comments(first: 3) { nodes { body replies(first: 2) { nodes { body } } } } } }
    defaultBranchRef { name target { ... on Commit { oid committedDate } } }
  }
  rateLimit { limit cost remaining resetAt }
}
fragment ActorFields on Actor { login avatarUrl url }
fragment IssueFields on Issue {
  id number title body createdAt updatedAt closed state
  author { ...ActorFields }
  labels(first: 10) { nodes { name color description } }
  comments(first: 5) { totalCount nodes { id body createdAt author { ...ActorFields } } }
  assignees(first: 5) { nodes { login name } }
  milestone { title dueOn number }
  timelineItems(first: 5, itemTypes: [LABELED_EVENT, CLOSED_EVENT]) { nodes { __typename ... on LabeledEvent { label { name } } ... on ClosedEvent { createdAt } } }
}
"#;

fn schema() -> Schema {
    let gz = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/github-schema.graphql.gz")).unwrap();
    let mut sdl = String::new();
    flate2::read::GzDecoder::new(&gz[..]).read_to_string(&mut sdl).unwrap();
    Schema::parse(&sdl, "github-schema.graphql").unwrap()
}

fn cpu_ns() -> Option<u64> {
    std::fs::read_to_string("/proc/thread-self/schedstat").ok()?.split_whitespace().next()?.parse().ok()
}

fn cpu_per_iter(name: &str, mut f: impl FnMut()) {
    let n = 10_000;
    let Some(t0) = cpu_ns() else { return };
    for _ in 0..n {
        f();
    }
    let t1 = cpu_ns().unwrap_or(t0);
    eprintln!("{name}: {:.2} µs on-CPU per iteration ({} bytes)", (t1 - t0) as f64 / n as f64 / 1000.0, QUERY.len());
}

fn bench(c: &mut Criterion) {
    let schema = schema();
    let limits = Limits::default();
    let vars: serde_json::Map<String, serde_json::Value> = serde_json::from_str(r#"{"owner": "rust-lang", "name": "rust", "labels": ["C-bug"]}"#).unwrap();
    let run = || {
        let a = analyze(QUERY, None, false, &limits, Some(&schema));
        let mut out = a.findings.clone();
        check_variables(&a.variables, Some(&vars), Some(&schema), "graphql", &mut out);
        assert!(out.is_empty(), "{out:?}");
        out.len()
    };
    run();
    cpu_per_iter("parse_validate_2k", || {
        std::hint::black_box(run());
    });
    c.bench_function("graphql/parse_validate_2k", |b| b.iter(run));
    // A document seen before (what real clients send: a fixed set of documents with varying
    // variables): the whole request judged, the analysis taken from the endpoint's cache.
    let body = serde_json::json!({"query": QUERY, "variables": vars}).to_string();
    let cache = DocCache::new(16, 1 << 20);
    let cached = || {
        let env = from_http(&Method::POST, Some("application/json"), None, body.as_bytes()).unwrap().unwrap();
        let mut out = Vec::new();
        check_envelope(&env, &limits, Some(&schema), &mut out, None, Some(&cache));
        assert!(out.is_empty(), "{out:?}");
        out.len()
    };
    cpu_per_iter("cached_request_2k", || {
        std::hint::black_box(cached());
    });
    c.bench_function("graphql/cached_request_2k", |b| b.iter(cached));
    let parse = || doc::parse(std::hint::black_box(QUERY), usize::MAX).unwrap().operations.len();
    cpu_per_iter("parse_2k", || {
        std::hint::black_box(parse());
    });
    c.bench_function("graphql/parse_2k", |b| b.iter(parse));
    let tree = || apollo_parser::Parser::new(std::hint::black_box(QUERY)).parse().errors().len();
    cpu_per_iter("apollo_parser_2k", || {
        std::hint::black_box(tree());
    });
    c.bench_function("graphql/apollo_parser_2k", |b| b.iter(tree));
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).warm_up_time(std::time::Duration::from_millis(500)).measurement_time(std::time::Duration::from_secs(2));
    targets = bench
}
criterion_main!(benches);
