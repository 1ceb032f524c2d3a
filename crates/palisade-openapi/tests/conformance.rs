//! The conformance suite: every file in `tests/conformance/` holds a spec (inline, or a file
//! under `tests/fixtures/`), optional `openapi:` settings, and cases: a raw request (and
//! optionally a raw upstream response) with the expected verdict and reason.
//!
//! ```yaml
//! spec: |                       # or spec_file: fixtures/split/main.yaml
//!   openapi: 3.0.3
//!   ...
//! settings: {unknown_query: monitor}
//! cases:
//!   - name: limit must be an integer
//!     request: "GET /items?limit=ten HTTP/1.1"
//!     body: '{"a": 1}'          # optional, sent as the body (Content-Length implied)
//!     response: "HTTP/1.1 200 OK\nContent-Type: application/json\n\n{}"   # judge this instead
//!     expect: block             # allow | block | monitor
//!     reason: openapi.parameter_invalid     # the first finding's code
//!     location: query.limit     # some finding has this location
//!     status: 400               # with status_by_violation: the block status
//!     scopes: [read]            # optional: the access stage verified a token granting these
//! ```
//!
//! Every case is also judged with the fused validator off ([`Judge::set_fused`]): the findings
//! must be the same, field for field (differential test of the one-pass path).
//!
//! Run one file with `CONFORMANCE=name cargo test -p palisade-openapi --test conformance`.

use std::path::{Path, PathBuf};

use palisade_config::yaml::{self, Key, Node, Origin, Value};
use palisade_core::Verdict;
use palisade_openapi::judge::{Finding, Judge, Phase};
use palisade_openapi::settings::Settings;
use palisade_openapi::{compile, load, load_str, FsFetch, Limits};

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests")
}

fn text<'a>(n: &'a Node, key: &str) -> Option<&'a str> {
    match n.get(key).map(|v| &v.value) {
        Some(Value::Str(s)) => Some(s.as_str()),
        _ => None,
    }
}

fn build_judge(file: &Path, doc: &Node) -> Result<Judge, String> {
    let set = if let Some(inline) = text(doc, "spec") {
        load_str(&file.display().to_string(), inline, &FsFetch, &Limits::default())
    } else if let Some(f) = text(doc, "spec_file") {
        load(&dir().join(f).display().to_string(), &FsFetch, &Limits::default())
    } else {
        return Err("no `spec` or `spec_file`".into());
    }
    .map_err(|e| e.iter().map(|e| e.to_string()).collect::<Vec<_>>().join("\n"))?;
    // Settings: the file's `settings` mapping with a placeholder `spec` key.
    let mut settings = doc.get("settings").cloned().unwrap_or(Node { origin: Origin::File { line: 1, col: 1 }, value: Value::Map(Vec::new()) });
    if let Value::Map(entries) = &mut settings.value {
        entries.push((
            Key { name: "spec".into(), origin: Origin::File { line: 1, col: 1 } },
            Node { origin: Origin::File { line: 1, col: 1 }, value: Value::Str("inline".into()) },
        ));
    }
    let mut cx = palisade_config::decode::Ctx::new(file.display().to_string());
    let settings = Settings::decode(&mut cx, &settings, "settings", Path::new("/"));
    if !cx.errors.is_empty() {
        return Err(cx.errors.iter().map(|e| e.to_string()).collect::<Vec<_>>().join("\n"));
    }
    let settings = settings.ok_or("settings did not decode")?;
    let opts = settings.compile_options();
    let api = compile(&set, &opts).map_err(|e| e.iter().map(|e| e.to_string()).collect::<Vec<_>>().join("\n"))?;
    Judge::new(api, settings).map_err(|e| format!("{e:?}"))
}

/// The findings of one case.
fn findings_of(judge: &Judge, case: &Node) -> Result<Vec<Finding>, String> {
    let raw = text(case, "request").ok_or("case without `request`")?;
    let mut bytes = raw.trim_end_matches('\n').as_bytes().to_vec();
    bytes.extend_from_slice(b"\n\n");
    if let Some(body) = text(case, "body") {
        bytes.extend_from_slice(body.as_bytes());
    }
    let req = palisade_core::rawhttp::parse_request(&bytes).map_err(|e| e.to_string())?;
    let mut findings = Vec::new();
    match text(case, "response") {
        Some(resp) => {
            let resp = palisade_core::rawhttp::parse_response(resp.as_bytes()).map_err(|e| e.to_string())?;
            judge.check_response(&req.view(), &resp.view(), &mut findings);
        }
        None => match case.get("scopes").map(|n| &n.value) {
            Some(Value::Seq(items)) => {
                let granted: Vec<String> = items.iter().filter_map(|n| n.scalar_text()).collect();
                judge.check_request_granted(&req.view(), Phase::Whole, Some(&granted), &mut findings);
            }
            _ => {
                judge.check_request(&req.view(), Phase::Whole, &mut findings);
            }
        },
    }
    Ok(findings)
}

fn run_case(judge: &Judge, case: &Node) -> Result<(), String> {
    let findings = findings_of(judge, case)?;
    let verdict = judge.verdict(&findings);
    let got = match &verdict {
        Verdict::Allow => "allow",
        Verdict::Block { .. } => "block",
        Verdict::Monitor { .. } => "monitor",
    };
    let want = text(case, "expect").ok_or("case without `expect`")?;
    let show = || findings.iter().map(|f| format!("{} at {:?}: {}", f.code, f.location, f.detail)).collect::<Vec<_>>().join("; ");
    if got != want {
        return Err(format!("expected {want}, got {got} [{}]", show()));
    }
    if let Some(reason) = text(case, "reason") {
        if findings.first().map(|f| f.code) != Some(reason) {
            return Err(format!("expected first reason {reason}, got [{}]", show()));
        }
    }
    if let Some(loc) = text(case, "location") {
        if !findings.iter().any(|f| f.location == loc) {
            return Err(format!("expected a finding at {loc}, got [{}]", show()));
        }
    }
    if let Some(Value::Int(status)) = case.get("status").map(|n| &n.value) {
        let got = match &verdict {
            Verdict::Block { status, .. } => *status,
            _ => None,
        };
        if got != Some(*status as u16) {
            return Err(format!("expected status {status}, got {got:?} [{}]", show()));
        }
    }
    Ok(())
}

#[test]
fn conformance() {
    let only = std::env::var("CONFORMANCE").ok();
    let mut files: Vec<PathBuf> =
        std::fs::read_dir(dir().join("conformance")).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|e| e == "yaml")).collect();
    files.sort();
    let (mut cases, mut failures) = (0, Vec::new());
    for file in &files {
        let name = file.file_stem().unwrap().to_string_lossy().to_string();
        if only.as_ref().is_some_and(|o| *o != name) {
            continue;
        }
        let src = std::fs::read_to_string(file).unwrap();
        let doc = yaml::parse(&src).unwrap_or_else(|e| panic!("{}:{}:{}: {}", file.display(), e.line, e.col, e.message));
        let judge = match build_judge(file, &doc) {
            Ok(j) => j,
            Err(e) => {
                failures.push(format!("{name}: the spec does not load: {e}"));
                continue;
            }
        };
        let mut tape_judge = build_judge(file, &doc).expect("loads twice");
        tape_judge.set_fused(false);
        let Some(Value::Seq(list)) = doc.get("cases").map(|n| &n.value) else { panic!("{name}: no cases") };
        for (i, case) in list.iter().enumerate() {
            cases += 1;
            let label = text(case, "name").map_or_else(|| format!("case {i}"), str::to_string);
            let line = match case.origin {
                Origin::File { line, .. } => line,
                Origin::Env(_) => 0,
            };
            if let Err(e) = run_case(&judge, case) {
                failures.push(format!("{name}.yaml:{line}: {label}: {e}"));
            }
            // Differential: the same findings, field for field, without the fused validator.
            let fused = findings_of(&judge, case);
            let tape = findings_of(&tape_judge, case);
            if fused != tape {
                failures.push(format!("{name}.yaml:{line}: {label}: fused and tape judges differ: {fused:?} vs {tape:?}"));
            }
        }
    }
    println!("conformance: {cases} cases in {} files, {} failed", files.len(), failures.len());
    assert!(cases > 0, "no conformance cases ran");
    assert!(failures.is_empty(), "{} of {cases} conformance cases failed:\n{}", failures.len(), failures.join("\n"));
}
