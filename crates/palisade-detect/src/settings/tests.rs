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
    assert_eq!(s.paths[1], PathOverride { prefix: "/health".into(), mode: Some(Mode::Off), level: None });
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
