use super::*;

fn decode_str(yaml: &str) -> Result<Settings, Vec<String>> {
    let node = palisade_config::yaml::parse(yaml).unwrap();
    let mut cx = Ctx::new("test.yaml");
    let s = Settings::decode(&mut cx, &node, "apps[0].detection");
    if cx.errors.is_empty() {
        Ok(s.unwrap())
    } else {
        Err(cx.errors.iter().map(|e| e.to_string()).collect())
    }
}

#[test]
fn short_forms_and_defaults() {
    assert_eq!(decode_str("off").unwrap().mode, Mode::Off);
    assert_eq!(decode_str("monitor").unwrap().mode, Mode::Monitor);
    let s = decode_str("{}").unwrap();
    assert_eq!(s, Settings::default());
    assert_eq!((s.mode, s.level, s.on_exceed), (Mode::Block, Level::Balanced, Mode::Block));
}

#[test]
fn full_form() {
    let s = decode_str(
        "mode: monitor\nlevel: strict\nheaders: [X-Api-Version, X-Custom]\n\
         exclusions:\n  - {detector: sqli, location: 'body/comment'}\n  - {detector: '*', location: 'header.referer'}\n\
         paths:\n  - {prefix: /admin, mode: block, level: balanced}\n  - {prefix: /health, mode: off}\n\
         limits: {max_values: 100, max_bytes: 1MiB, max_depth: 32, max_layers: 2, max_value_bytes: 4KiB, on_exceed: monitor}\nmax_findings: 3\n",
    )
    .unwrap();
    assert_eq!((s.mode, s.level), (Mode::Monitor, Level::Strict));
    assert_eq!(s.headers, vec!["X-Api-Version", "X-Custom"]);
    assert_eq!(s.exclusions[0], Exclusion { detector: "sqli".into(), location: "body/comment".into() });
    assert_eq!(s.paths[1], PathOverride { prefix: "/health".into(), mode: Some(Mode::Off), level: None, exclusions: Vec::new() });
    assert_eq!(s.limits, extract::Limits { max_values: 100, max_bytes: 1 << 20, max_depth: 32 });
    assert_eq!(s.decode, crate::decode::Limits { max_layers: 2, max_input: 4096 });
    assert_eq!((s.on_exceed, s.max_findings), (Mode::Monitor, 3));
    let c = s.engine_config();
    assert_eq!((c.level, c.max_findings, c.exclusions.len()), (Level::Strict, 3, 2));
}

#[test]
fn every_problem_is_reported_with_its_place() {
    let errs = decode_str(
        "mode: blok\nlevel: paranoid\nheaders: ['bad header']\nexclusions: [{detector: sqlx, location: x}, {detector: xss}]\n\
         paths: [{prefix: admin}]\nlimits: {max_values: 0, on_exced: block}\nmodes: off\n",
    )
    .unwrap_err();
    let all = errs.join("\n");
    for needle in [
        "test.yaml:1:7: apps[0].detection.mode",
        "apps[0].detection.level",
        "not a valid header name",
        "unknown detector `sqlx`",
        "apps[0].detection.exclusions[1]",
        "starts with `/`",
        "apps[0].detection.limits.max_values",
        "did you mean `on_exceed`",
        "did you mean `mode`",
    ] {
        assert!(all.contains(needle), "missing {needle:?} in:\n{all}");
    }
    assert_eq!(errs.len(), 9, "{all}");
}

#[test]
fn operation_overrides_and_exclusions_per_path_and_operation() {
    let s = decode_str(
        "paths:\n  - {prefix: /cms, exclusions: [{detector: xss, location: body/html}]}\n\
         operations:\n  - {operation: createPost, mode: monitor, level: strict, exclusions: [{detector: sqli, location: 'body/query'}]}\n  - {match: 'get /users/{id}', mode: off}\n",
    )
    .unwrap();
    assert_eq!(s.paths[0].exclusions, [Exclusion { detector: "xss".into(), location: "body/html".into() }]);
    assert_eq!(
        s.operations[0],
        OperationOverride {
            operation: "createPost".into(),
            mode: Some(Mode::Monitor),
            level: Some(Level::Strict),
            exclusions: vec![Exclusion { detector: "sqli".into(), location: "body/query".into() }]
        }
    );
    // The method of `METHOD /template` is upper-cased, as the OpenAPI stage names operations.
    assert_eq!((s.operations[1].operation.as_str(), s.operations[1].mode), ("GET /users/{id}", Some(Mode::Off)));
    let errs = decode_str(
        "operations: [{mode: off}, {operation: x, exclusions: [{detector: sqlx, location: a}]}, {operation: y, levle: strict}, {operation: z, match: z}]\n",
    )
    .unwrap_err();
    let all = errs.join("\n");
    for needle in [
        "apps[0].detection.operations[0]: missing required key `operation`",
        "operations[1].exclusions[0].detector: unknown detector `sqlx`",
        "operations[2].levle: unknown key",
    ] {
        assert!(all.contains(needle), "{needle} not in:\n{all}");
    }
}

#[test]
fn fields_give_names_a_role() {
    let s = decode_str("fields: {search: [Site-Lookup, find_text], redirect: nextPage, conventions: false}").unwrap();
    assert_eq!(s.roles, crate::context::Roles { conventions: false, search: vec!["sitelookup".into(), "findtext".into()], redirect: vec!["nextpage".into()] });
    assert_eq!(s.engine_config().roles, s.roles);
    assert!(decode_str("fields: {}").unwrap().roles.conventions);
    let errs = decode_str("fields: {search: ['--'], redirect: [], other: 1, conventions: maybe}").unwrap_err();
    assert!(errs.iter().any(|e| e.contains("detection.fields.search[0]") && e.contains("is not a field name")), "{errs:?}");
    assert!(errs.iter().any(|e| e.contains("other")), "{errs:?}");
    assert!(errs.iter().any(|e| e.contains("detection.fields.conventions")), "{errs:?}");
}
