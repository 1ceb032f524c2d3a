//! `palisade graphql validate SCHEMA --request FILE`: judge one GraphQL request offline
//! against an SDL schema with an endpoint's default limits. The request file is a raw HTTP
//! request (`POST /graphql HTTP/1.1` with headers and body, or a `GET` with `?query=`), a JSON
//! request body (one request or a batch), or a bare GraphQL document.

use std::path::Path;
use std::process::ExitCode;

use palisade_core::http::Method;
use palisade_graphql::check::{check_envelope, Limits};
use palisade_graphql::request::from_http;
use palisade_graphql::Schema;

/// Exit 0 when the request is allowed, 2 when blocked, 1 on error (unreadable files, a schema
/// that does not load, a file that is none of the forms above).
pub fn validate(schema: &Path, request: &Path, introspection: bool) -> ExitCode {
    let fail = |msg: String| {
        eprintln!("palisade: {msg}");
        ExitCode::from(1)
    };
    let sdl = match std::fs::read_to_string(schema) {
        Ok(s) => s,
        Err(e) => return fail(format!("{}: {e}", schema.display())),
    };
    let schema = match Schema::parse(&sdl, &schema.display().to_string()) {
        Ok(s) => s,
        Err(e) => return fail(format!("the schema does not load: {e}")),
    };
    let raw = match std::fs::read(request) {
        Ok(b) => b,
        Err(e) => return fail(format!("{}: {e}", request.display())),
    };
    let starts_http = raw.split(|&b| b == b'\n').next().is_some_and(|l| l.windows(5).any(|w| w == b"HTTP/"));
    let env = if starts_http {
        let req = match palisade_core::rawhttp::parse_request(&raw) {
            Ok(r) => r,
            Err(e) => return fail(format!("{}: {e}", request.display())),
        };
        let ct = req.headers.get(palisade_core::http::header::CONTENT_TYPE).and_then(|v| v.to_str().ok());
        from_http(&req.method, ct, req.query.as_deref(), &req.body)
    } else {
        let first = raw.iter().find(|b| !b.is_ascii_whitespace()).copied();
        let ct = if matches!(first, Some(b'{' | b'[')) && serde_json::from_slice::<serde_json::Value>(&raw).is_ok() {
            "application/json"
        } else {
            "application/graphql"
        };
        from_http(&Method::POST, Some(ct), None, &raw)
    };
    let limits = Limits { introspection, ..Limits::default() };
    let mut findings = Vec::new();
    let summary = match env {
        Ok(Some(env)) => check_envelope(&env, &limits, Some(&schema), &mut findings, None, None),
        Ok(None) => return fail(format!("{}: not a GraphQL request (no `query` or `extensions`)", request.display())),
        Err(e) => {
            let at = e.context.as_ref().map_or("graphql".to_string(), |c| format!("graphql{c}"));
            findings.push(palisade_core::Reason::new(e.code()).at(at).detail(e.message));
            Default::default()
        }
    };
    if findings.is_empty() {
        let persisted = if summary.persisted > 0 { format!(", {} persisted quer(ies) passed through unjudged", summary.persisted) } else { String::new() };
        println!("allow ({} operation(s){persisted})", summary.operations.len());
        return ExitCode::SUCCESS;
    }
    println!("block");
    for f in &findings {
        println!("  {f}");
    }
    ExitCode::from(2)
}
