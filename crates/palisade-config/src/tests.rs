use super::*;

fn parse(text: &str) -> Result<Config, ConfigErrors> {
    parse_str(text, "test.yaml", Path::new("/etc/palisade"))
}

fn errors(text: &str) -> Vec<ConfigError> {
    parse(text).expect_err("expected errors").0
}

const MINIMAL: &str = "\
listen:
  - addr: 127.0.0.1:8080
admin:
  addr: 127.0.0.1:9901
apps:
  - name: api
    upstream: http://127.0.0.1:9090
    openapi:
      spec: api.yaml
      request: block
      response: off
    detection:
      mode: block
      level: balanced
    access:
      ip_deny: [203.0.113.0/24]
events:
  sink: sqlite:palisade-events.db
";

#[test]
fn minimal_design_shape_decodes() {
    let c = parse(MINIMAL).unwrap();
    assert_eq!(c.listen[0].addr, "127.0.0.1:8080".parse().unwrap());
    assert_eq!(c.admin.as_ref().unwrap().addr.port(), 9901);
    assert_eq!(c.apps[0].name, "api");
    let up = &c.upstreams[c.apps[0].upstream];
    assert_eq!(up.targets[0].value, Target::Tcp { host: "127.0.0.1".into(), port: 9090 });
    assert_eq!(up.name, "app:api");
    let stage_names: Vec<_> = c.apps[0].stages.iter().map(|s| s.0.as_str()).collect();
    assert_eq!(stage_names, ["access", "openapi", "detection"]);
    assert_eq!(c.events.unwrap().sink.value, "sqlite:palisade-events.db");
    assert_eq!(c.apps[0].block_status, 403);
}

#[test]
fn every_error_is_reported_with_line_and_path() {
    let errs = errors(
        "\
listen:
  - addr: not-an-addr
    tls_cert: x
server:
  header_read_timeout: soon
apps:
  - name: api
    upstream: ftp://x
    limitz: {}
",
    );
    let render: Vec<String> = errs.iter().map(|e| e.to_string()).collect();
    assert!(
        render.contains(&"test.yaml:2:11: listen[0].addr: `not-an-addr` is not an address such as 127.0.0.1:8080 or [::1]:8080".to_string()),
        "{render:#?}"
    );
    assert!(render.iter().any(|e| e.starts_with("test.yaml:3:5: listen[0].tls_cert: unknown key `tls_cert`")), "{render:#?}");
    assert!(render.iter().any(|e| e.starts_with("test.yaml:5:24: server.header_read_timeout: expected a duration")), "{render:#?}");
    assert!(render.iter().any(|e| e.starts_with("test.yaml:8:15: apps[0].upstream: `ftp://x` is not a target")), "{render:#?}");
    assert!(render.iter().any(|e| e.contains("apps[0].limitz: unknown key `limitz` (did you mean `limits`?)")), "{render:#?}");
    assert_eq!(errs.len(), 5, "{render:#?}");
}

#[test]
fn yaml_syntax_error_has_a_position() {
    let errs = errors("listen:\n  - addr: [unclosed\napps: []\n");
    assert_eq!(errs.len(), 1);
    assert!(errs[0].line > 0, "{:?}", errs[0]);
    assert!(errs[0].message.starts_with("invalid YAML"), "{:?}", errs[0]);
}

#[test]
fn missing_sections_are_reported() {
    let msgs: Vec<String> = errors("workers: 2\n").iter().map(|e| e.to_string()).collect();
    assert!(msgs.iter().any(|m| m.contains("missing required key `listen`")), "{msgs:?}");
    assert!(msgs.iter().any(|m| m.contains("missing required key `apps`")), "{msgs:?}");
}

#[test]
fn long_form_upstreams_and_named_references() {
    let c = parse(
        "\
listen: [{addr: '127.0.0.1:8080'}]
upstreams:
  - name: pool
    targets: [http://10.0.0.1:80, 'unix:/run/api.sock', http://backend]
    balance: least_connections
    connect_timeout: 500ms
    health_check: {path: /healthz, interval: 2s}
apps:
  - name: a
    hosts: [api.example.com, '*.example.org']
    path_prefix: /v1
    upstream: pool
  - name: b
    upstream:
      targets: http://[::1]:9000
      read_timeout: 1m
    limits: {max_body_size: 2MiB, inspect_body: 64KiB, oversize: stream}
    host_header: upstream
",
    )
    .unwrap();
    let pool = &c.upstreams[c.apps[0].upstream];
    assert_eq!(pool.name, "pool");
    assert_eq!(pool.balance, Balance::LeastConnections);
    assert_eq!(pool.connect_timeout, Duration::from_millis(500));
    assert_eq!(pool.targets[1].value, Target::Unix("/run/api.sock".into()));
    assert_eq!(pool.targets[2].value, Target::Tcp { host: "backend".into(), port: 80 });
    assert_eq!(pool.health_check.as_ref().unwrap().interval, Duration::from_secs(2));
    let b = &c.apps[1];
    assert_eq!(c.upstreams[b.upstream].targets[0].value, Target::Tcp { host: "::1".into(), port: 9000 });
    assert_eq!(c.upstreams[b.upstream].read_timeout, Duration::from_secs(60));
    assert_eq!((b.max_body_size, b.inspect_body, b.oversize), (2 * 1024 * 1024, 64 * 1024, Oversize::Stream));
    assert_eq!(b.host_header, HostHeader::Upstream);
    assert_eq!(c.apps[0].hosts, ["api.example.com", "*.example.org"]);
}

#[test]
fn semantic_conflicts_are_errors() {
    let msgs: Vec<String> = errors(
        "\
listen: [{addr: '127.0.0.1:8080'}, {addr: '127.0.0.1:8080'}]
admin: {addr: '0.0.0.0:9901'}
apps:
  - {name: a, upstream: nope}
  - {name: a, upstream: 'http://x:1', limits: {max_body_size: 1KiB, inspect_body: 2KiB}}
  - {name: a, upstream: 'http://x:1', path_prefix: /other}
",
    )
    .iter()
    .map(|e| e.to_string())
    .collect();
    for needle in ["listed twice", "set admin.token", "no upstream named `nope`", "duplicate app name `a`", "larger than max_body_size"] {
        assert!(msgs.iter().any(|m| m.contains(needle)), "missing {needle:?} in {msgs:#?}");
    }
}

#[test]
fn environment_interpolation_and_overrides() {
    let vars = vec![
        ("PALISADE_LISTEN_0_ADDR".to_string(), "127.0.0.1:7000".to_string()),
        ("PALISADE_WORKERS".to_string(), "3".to_string()),
        ("PALISADE_SERVER_MAX_HEADER_SIZE".to_string(), "32KiB".to_string()),
        ("PALISADE_LOG_ACCESS_LOG".to_string(), "true".to_string()),
    ];
    let lookup = |name: &str| (name == "UP").then(|| "http://127.0.0.1:9999".to_string());
    let c = parse_with_env(
        "listen: [{addr: '127.0.0.1:8080'}]\nserver: {max_header_size: 8KiB}\napps: [{name: a, upstream: '${UP}', host_header: '${HOSTNAME_X:-fixed.example}'}]\n",
        "t.yaml",
        Path::new("."),
        &vars,
        &lookup,
    )
    .unwrap();
    assert_eq!(c.listen[0].addr.port(), 7000);
    assert_eq!(c.workers, Some(3));
    assert_eq!(c.server.max_header_size, 32 * 1024);
    assert!(c.log.access_log);
    assert_eq!(c.upstreams[0].targets[0].value, Target::Tcp { host: "127.0.0.1".into(), port: 9999 });
    assert_eq!(c.apps[0].host_header, HostHeader::Fixed("fixed.example".into()));
}

#[test]
fn bad_override_names_the_variable() {
    let vars = vec![("PALISADE_WORKERS".to_string(), "many".to_string())];
    let errs = parse_with_env("listen: [{addr: '127.0.0.1:8080'}]\napps: [{name: a, upstream: 'http://x:1'}]\n", "t.yaml", Path::new("."), &vars, &|_| None)
        .unwrap_err()
        .0;
    assert_eq!(errs.len(), 1);
    assert_eq!(errs[0].env.as_deref(), Some("PALISADE_WORKERS"));
    assert!(errs[0].to_string().contains("(from environment variable PALISADE_WORKERS)"), "{}", errs[0]);
}

#[test]
fn unset_variable_is_an_error() {
    let errs = errors("listen: [{addr: '127.0.0.1:8080'}]\napps: [{name: a, upstream: '${NOPE_NOT_SET}'}]\n");
    assert!(errs[0].to_string().contains("environment variable NOPE_NOT_SET is not set"), "{}", errs[0]);
    assert_eq!(errs[0].path, "apps[0].upstream");
}

#[test]
fn sizes_and_durations() {
    assert_eq!(decode::parse_size("16KiB"), Some(16384));
    assert_eq!(decode::parse_size("1MB"), Some(1_000_000));
    assert_eq!(decode::parse_size("12"), Some(12));
    assert_eq!(decode::parse_size("1TB"), None);
    assert_eq!(decode::parse_size("99999999999999999999GiB"), None);
    assert_eq!(decode::parse_duration("250ms"), Some(Duration::from_millis(250)));
    assert_eq!(decode::parse_duration("1.5s"), Some(Duration::from_millis(1500)));
    assert_eq!(decode::parse_duration("2m"), Some(Duration::from_secs(120)));
    assert_eq!(decode::parse_duration("10"), None);
    assert_eq!(decode::parse_duration("-1s"), None);
    assert_eq!(decode::parse_duration("150us"), Some(Duration::from_micros(150)));
    assert_eq!(decode::parse_duration("150µs"), Some(Duration::from_micros(150)));
}

#[test]
fn busy_poll_defaults_off_and_is_bounded() {
    let base = "listen: [{addr: '127.0.0.1:8080'}]\napps: [{name: a, upstream: 'http://x:1'}]\n";
    assert_eq!(parse(base).unwrap().server.busy_poll, Duration::ZERO);
    assert_eq!(parse(&format!("server: {{busy_poll: 200us}}\n{base}")).unwrap().server.busy_poll, Duration::from_micros(200));
    let msgs: Vec<String> = errors(&format!("server: {{busy_poll: 1s}}\n{base}")).iter().map(|e| e.to_string()).collect();
    assert!(msgs.iter().any(|m| m.contains("server.busy_poll") && m.contains("at most 10ms")), "{msgs:?}");
}

#[test]
fn targets() {
    let base = Path::new("/srv");
    assert_eq!(parse_target("unix:api.sock", base), Ok(Target::Unix("/srv/api.sock".into())));
    assert_eq!(parse_target("http://h:8/", base), Ok(Target::Tcp { host: "h".into(), port: 8 }));
    assert!(parse_target("http://h:8/path", base).is_err());
    assert!(parse_target("http://h:99999", base).is_err());
    assert_eq!(parse_target("https://h", base), Ok(Target::Https { host: "h".into(), port: 443 }));
    assert_eq!(parse_target("h2c://[::1]:50051", base), Ok(Target::H2c { host: "::1".into(), port: 50051 }));
    assert_eq!(parse_target("h2c://g", base), Ok(Target::H2c { host: "g".into(), port: 80 }));
    let e = parse_target("grpc://h:1", base).unwrap_err();
    assert!(e.to_string().contains("h2c://"), "{e}");
    assert_eq!(e.kind(), crate::ErrorKind::Target);
}

#[test]
fn http2_upstreams_tls_and_grpc_health_checks() {
    let text = "listen: [{addr: '127.0.0.1:8080'}]
upstreams:
  - name: g
    targets: [h2c://127.0.0.1:50051]
    health_check: {grpc: true, service: helloworld.Greeter, interval: 1s}
  - name: s
    targets: [https://api.internal:8443]
    tls: {ca: certs/ca.pem, server_name: api.internal}
apps: [{name: a, upstream: g}, {name: b, path_prefix: /b, upstream: s}]
";
    let c = parse(text).unwrap();
    let hc = c.upstreams[0].health_check.as_ref().unwrap();
    assert!(hc.grpc);
    assert_eq!(hc.service, "helloworld.Greeter");
    assert_eq!(c.upstreams[1].tls, UpstreamTls { ca: Some("/etc/palisade/certs/ca.pem".into()), server_name: Some("api.internal".into()) });
    let msgs = |t: &str| errors(t).iter().map(|e| e.to_string()).collect::<Vec<_>>();
    let mixed = msgs("listen: [{addr: '127.0.0.1:8080'}]\napps: [{name: a, upstream: {targets: [h2c://a:1, http://b:2]}}]\n");
    assert!(mixed.iter().any(|m| m.contains("share a protocol")), "{mixed:?}");
    let tls = msgs("listen: [{addr: '127.0.0.1:8080'}]\napps: [{name: a, upstream: {targets: [http://b:2], tls: {ca: x.pem}}}]\n");
    assert!(tls.iter().any(|m| m.contains("https:// targets only")), "{tls:?}");
    let hc = msgs("listen: [{addr: '127.0.0.1:8080'}]\napps: [{name: a, upstream: {targets: [http://b:2], health_check: {grpc: true}}}]\n");
    assert!(hc.iter().any(|m| m.contains("HTTP/2 targets")), "{hc:?}");
}

#[test]
fn workers_auto_and_number() {
    let base = "listen: [{addr: '127.0.0.1:8080'}]\napps: [{name: a, upstream: 'http://x:1'}]\n";
    assert_eq!(parse(&format!("workers: auto\n{base}")).unwrap().workers, None);
    assert_eq!(parse(&format!("workers: 4\n{base}")).unwrap().workers, Some(4));
    assert!(parse(&format!("workers: 0\n{base}")).is_err());
}

#[test]
fn tls_forms() {
    let c = parse(
        "\
listen:
  - addr: 127.0.0.1:8443
    tls: {cert: a.pem, key: a.key}
  - addr: 127.0.0.1:8444
    tls:
      certificates:
        - {cert: /x/b.pem, key: /x/b.key, server_names: [B.example.com]}
apps: [{name: a, upstream: 'http://x:1'}]
",
    )
    .unwrap();
    let t0 = c.listen[0].tls.as_ref().unwrap();
    assert_eq!(t0.certificates[0].cert.value, PathBuf::from("/etc/palisade/a.pem"));
    assert_eq!(t0.certificates[0].cert.loc.line, 3);
    let t1 = c.listen[1].tls.as_ref().unwrap();
    assert_eq!(t1.certificates[0].server_names, ["b.example.com"]);
    let errs = errors("listen: [{addr: '127.0.0.1:1', tls: {}}]\napps: [{name: a, upstream: 'http://x:1'}]\n");
    assert!(errs[0].message.contains("tls needs"), "{errs:?}");
}

#[test]
fn non_mapping_root_and_empty_file() {
    assert!(errors("- a\n- b\n")[0].message.contains("expected a mapping"));
    let msgs = errors("");
    assert!(msgs.iter().any(|e| e.message.contains("`listen`")));
}

#[test]
fn several_port_zero_listeners_do_not_collide() {
    let c = parse("listen: [{addr: '127.0.0.1:0'}, {addr: '127.0.0.1:0'}]\nadmin: {addr: '127.0.0.1:0'}\napps: [{name: a, upstream: 'http://x:1'}]\n").unwrap();
    assert_eq!(c.listen.len(), 2);
}

#[test]
fn integers_beyond_i64_keep_their_digits() {
    use crate::yaml::{parse, Value};
    let n = parse("a: 18446744073709551616\nb: -9223372036854775809\nc: 12\nd: 1.5\n# é\ne: 99999999999999999999\n").unwrap();
    let Value::Map(m) = n.value else { panic!() };
    let v: Vec<&Value> = m.iter().map(|(_, n)| &n.value).collect();
    assert_eq!(v[0], &Value::Str("18446744073709551616".into()));
    assert_eq!(v[1], &Value::Str("-9223372036854775809".into()));
    assert_eq!(v[2], &Value::Int(12));
    assert_eq!(v[3], &Value::Float(1.5));
    // After a non-ASCII character, spans are in characters, not bytes.
    assert_eq!(v[4], &Value::Str("99999999999999999999".into()));
}

#[test]
fn events_short_and_long_forms() {
    let base = "listen:\n  - addr: 127.0.0.1:8080\napps:\n  - name: api\n    upstream: http://127.0.0.1:9090\n";
    assert!(parse(base).unwrap().events.is_none());
    let c = parse(&format!("{base}events: jsonl:/var/log/ev.jsonl\n")).unwrap();
    let e = c.events.unwrap();
    assert_eq!(e.sink.value, "jsonl:/var/log/ev.jsonl");
    assert_eq!((e.queue_size, e.batch_size, e.sample_allowed), (16_384, 1024, 0.0));
    let c = parse(&format!(
        "{base}events:\n  sink: sqlite:ev.db\n  queue_size: 4096\n  batch_size: 256\n  aggregate_window: 5s\n  retention_age: 7d\n  retention_size: off\n  redact_fields: [password, x-api-key]\n  sample_allowed: 0.25\n  rotate_size: 10MiB\n  rotate_keep: 3\n"
    ))
    .unwrap();
    let e = c.events.unwrap();
    assert_eq!((e.queue_size, e.batch_size, e.aggregate_window), (4096, 256, Duration::from_secs(5)));
    assert_eq!((e.retention_age, e.retention_size), (Some(Duration::from_secs(7 * 86_400)), None));
    assert_eq!(e.redact_fields, Some(vec!["password".to_string(), "x-api-key".to_string()]));
    assert_eq!((e.sample_allowed, e.rotate_size, e.rotate_keep), (0.25, 10 * 1024 * 1024, 3));
    assert_eq!(parse(&format!("{base}events: off\n")).unwrap().events.unwrap().sink.value, "off");

    let errs = errors(&format!("{base}events:\n  sink: mysql://x\n  sample_allowed: 2\n  batch_size: 100\n  queue_size: 50\n  flush: 1s\n"));
    let text: Vec<String> = errs.iter().map(|e| e.to_string()).collect();
    assert!(text.iter().any(|t| t.contains("events.sink") && t.contains("not an events sink")), "{text:?}");
    assert!(text.iter().any(|t| t.contains("events.sample_allowed") && t.contains("between 0 and 1")), "{text:?}");
    assert!(text.iter().any(|t| t.contains("events.batch_size") && t.contains("larger than queue_size")), "{text:?}");
    assert!(text.iter().any(|t| t.contains("events.flush") && t.contains("unknown key")), "{text:?}");
}

#[test]
fn websocket_section_decodes_with_defaults_and_rejects_bad_values() {
    let c = parse("listen:\n  - addr: 127.0.0.1:8080\napps:\n  - name: a\n    upstream: http://127.0.0.1:9090\n").unwrap();
    assert_eq!(c.apps[0].websocket, WebSocketConfig::default());
    assert_eq!(c.apps[0].websocket.inspect, WsInspect::Off);
    let c = parse(
        "listen:\n  - addr: 127.0.0.1:8080\napps:\n  - name: a\n    upstream: http://127.0.0.1:9090\n    websocket:\n      inspect: text\n      max_message: 64KiB\n      idle_timeout: 5s\n      max_lifetime: 1h\n      max_per_ip: 3\n",
    )
    .unwrap();
    let ws = &c.apps[0].websocket;
    assert_eq!(
        (ws.inspect, ws.max_message, ws.idle_timeout, ws.max_lifetime, ws.max_per_ip),
        (WsInspect::Text, 65536, Duration::from_secs(5), Duration::from_secs(3600), 3)
    );
    // A bare `off` (a YAML 1.1 boolean to some readers) means off.
    let c =
        parse("listen:\n  - addr: 127.0.0.1:8080\napps:\n  - name: a\n    upstream: http://127.0.0.1:9090\n    websocket: {inspect: off, enabled: false}\n")
            .unwrap();
    assert_eq!((c.apps[0].websocket.inspect, c.apps[0].websocket.enabled), (WsInspect::Off, false));
    let e = errors("listen:\n  - addr: 127.0.0.1:8080\napps:\n  - name: a\n    upstream: http://127.0.0.1:9090\n    websocket:\n      inspect: binary\n      max_message: 0\n      idle: 3s\n");
    let text: Vec<String> = e.iter().map(|e| e.to_string()).collect();
    assert!(text.iter().any(|t| t.contains("apps[0].websocket.inspect") && t.contains("off | text")), "{text:?}");
    assert!(text.iter().any(|t| t.contains("max_message")), "{text:?}");
    assert!(text.iter().any(|t| t.contains("idle")), "{text:?}");
}

#[test]
fn grpc_section_names_a_descriptor_set_relative_to_the_file() {
    let c = parse("listen:\n  - addr: 127.0.0.1:8080\napps:\n  - name: a\n    upstream: h2c://127.0.0.1:9090\n").unwrap();
    assert_eq!(c.apps[0].grpc, GrpcConfig::default());
    let c = parse("listen:\n  - addr: 127.0.0.1:8080\napps:\n  - name: a\n    upstream: h2c://127.0.0.1:9090\n    grpc:\n      descriptor_set: protos/a.pb\n")
        .unwrap();
    let d = c.apps[0].grpc.descriptor_set.as_ref().unwrap();
    assert_eq!(d.value, Path::new("/etc/palisade/protos/a.pb"));
    assert_eq!(d.loc.path, "apps[0].grpc.descriptor_set");
    let e = errors("listen:\n  - addr: 127.0.0.1:8080\napps:\n  - name: a\n    upstream: h2c://127.0.0.1:9090\n    grpc:\n      descriptor: a.pb\n");
    let text: Vec<String> = e.iter().map(|e| e.to_string()).collect();
    assert!(text.iter().any(|t| t.contains("apps[0].grpc.descriptor") && t.contains("unknown key")), "{text:?}");
}

fn env_parse(text: &str, vars: &[(&str, &str)]) -> Result<Config, Vec<ConfigError>> {
    let vars: Vec<(String, String)> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    parse_with_env(text, "t.yaml", Path::new("."), &vars, &|_| None).map_err(|e| e.0)
}

const BARE: &str = "listen: [{addr: '127.0.0.1:8080'}]\napps: [{name: a, upstream: 'http://x:1'}]\n";

#[test]
fn overrides_apply_whether_or_not_the_file_has_the_key() {
    // No `server:` section at all: the documented example still takes effect.
    let c = env_parse(BARE, &[("PALISADE_SERVER_MAX_HEADER_SIZE", "2KiB")]).unwrap();
    assert_eq!(c.server.max_header_size, 2048);
    // Keys of list items that exist, and sections created on the way.
    let c = env_parse(
        MINIMAL,
        &[
            ("PALISADE_APPS_0_LIMITS_MAX_BODY_SIZE", "1MiB"),
            ("PALISADE_SERVER_KEEPALIVE_TIMEOUT", "5s"),
            ("PALISADE_EVENTS_SINK", "stdout"),
            ("PALISADE_LISTEN_0_HTTP2", "false"),
            ("PALISADE_APPS_0_DETECTION", "off"),
        ],
    )
    .unwrap();
    assert_eq!(c.apps[0].max_body_size, 1 << 20);
    assert_eq!(c.server.keepalive_timeout, Duration::from_secs(5));
    assert_eq!(c.events.as_ref().unwrap().sink.value, "stdout");
    assert!(!c.listen[0].http2);
    let det = c.apps[0].stages.iter().find(|(k, _, _)| k == "detection").unwrap();
    assert_eq!(det.1.value, yaml::Value::Str("off".into()));
    // A key inside a stage section goes to the stage's decoder (which checks it).
    let c = env_parse(BARE, &[("PALISADE_APPS_0_DETECTION_LEVEL", "strict")]).unwrap();
    let det = c.apps[0].stages.iter().find(|(k, _, _)| k == "detection").unwrap();
    assert_eq!(det.1.get("level").and_then(|n| n.scalar_text()).as_deref(), Some("strict"));
}

#[test]
fn unknown_override_names_are_errors() {
    let errs = env_parse(BARE, &[("PALISADE_ADMN_ADDR", "127.0.0.1:9901")]).unwrap_err();
    assert_eq!(errs.len(), 1, "{errs:?}");
    let msg = errs[0].to_string();
    assert!(msg.contains("`PALISADE_ADMN_ADDR` does not name a setting (did you mean `PALISADE_ADMIN_ADDR`?)"), "{msg}");
    assert_eq!(errs[0].env.as_deref(), Some("PALISADE_ADMN_ADDR"));
    // An item the file does not have.
    let errs = env_parse(BARE, &[("PALISADE_APPS_3_NAME", "x")]).unwrap_err();
    assert_eq!(errs[0].path, "apps");
    assert!(errs[0].message.contains("has 1 item(s)"), "{errs:?}");
    // A key inside a scalar.
    let errs = env_parse(BARE, &[("PALISADE_APPS_0_UPSTREAM_READ_TIMEOUT", "5s")]).unwrap_err();
    assert_eq!(errs[0].path, "apps[0].upstream");
    // The command line's own variable is not a setting.
    assert!(env_parse(BARE, &[("PALISADE_CONFIG", "/etc/palisade.yaml")]).is_ok());
}

#[test]
fn every_problem_of_a_file_is_listed_with_position_and_path() {
    let text = "listen: [{addr: '127.0.0.1:8080'}]\nserver: {max_headers: 0}\napps:\n  - name: a\n    upstream: 'http://x:1'\n    limits: {max_body_sise: 1MiB}\n    detection: {levle: strict}\n  - name: b\n    upstream: nope\n";
    let (config, errs) = decode_with_env(text, "t.yaml", Path::new("."), &[], &|_| None);
    let got: Vec<(usize, String)> = errs.iter().map(|e| (e.line, e.path.clone())).collect();
    assert_eq!(got, vec![(2, "server.max_headers".to_string()), (6, "apps[0].limits.max_body_sise".to_string()), (9, "apps[1].upstream".to_string())]);
    // The configuration decoded as far as it could: the stage sections can still be checked.
    let config = config.expect("partial configuration");
    assert_eq!(config.apps.len(), 1);
    assert!(config.apps[0].stages.iter().any(|(k, _, _)| k == "detection"));
}

#[test]
fn problems_are_capped() {
    let mut text = String::from(BARE);
    text.push_str("server:\n");
    for i in 0..5000 {
        text.push_str(&format!("  unknown_{i}: 1\n"));
    }
    let errs = env_parse(&text, &[]).unwrap_err();
    assert_eq!(errs.len(), decode::MAX_KEPT + 1);
    assert!(errs.last().unwrap().message.contains("4000 more problem(s) not collected"), "{:?}", errs.last());
    let shown = ConfigErrors(errs).to_string();
    assert_eq!(shown.lines().count(), error::MAX_SHOWN + 1);
    assert!(shown.ends_with("... and 901 more problem(s)"), "{}", shown.lines().last().unwrap());
}

#[test]
fn unreadable_files_are_reported_with_a_position() {
    let dir = std::env::temp_dir().join(format!("palisade-config-read-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("bad.yaml");
    std::fs::write(&f, b"listen: []\napps:\n  - name: \xff\n").unwrap();
    let errs = load_file(&f).unwrap_err().0;
    assert_eq!((errs[0].line, errs[0].col), (3, 11), "{errs:?}");
    assert!(errs[0].message.contains("invalid UTF-8"), "{errs:?}");
    std::fs::remove_dir_all(&dir).unwrap();
    // A device that never ends stops at once.
    if Path::new("/dev/zero").exists() {
        let errs = load_file(Path::new("/dev/zero")).unwrap_err().0;
        assert_eq!((errs[0].line, errs[0].col), (1, 1));
    }
}

#[test]
fn body_limit_defaults_agree() {
    let limits = |extra: &str| {
        let c = env_parse(&format!("listen: [{{addr: '127.0.0.1:8080'}}]\napps: [{{name: a, upstream: 'http://x:1'{extra}}}]\n"), &[]).unwrap();
        let a = &c.apps[0];
        (a.max_body_size, a.inspect_body, a.oversize)
    };
    // Nothing set: one limit, everything accepted is inspected.
    assert_eq!(limits(""), (1 << 20, 1 << 20, Oversize::Reject));
    // A larger max_body_size with `reject` is reachable: inspection follows it.
    assert_eq!(limits(", limits: {max_body_size: 10MiB}"), (10 << 20, 10 << 20, Oversize::Reject));
    // With `stream`, the first MiB is inspected and the rest streams up to the maximum.
    assert_eq!(limits(", limits: {max_body_size: 10MiB, oversize: stream}"), (10 << 20, 1 << 20, Oversize::Stream));
    assert_eq!(limits(", limits: {max_body_size: 100KiB, oversize: stream}"), (100 << 10, 100 << 10, Oversize::Stream));
    // Beyond what can be buffered, `reject` says what to do.
    let errs = env_parse("listen: [{addr: '127.0.0.1:8080'}]\napps: [{name: a, upstream: 'http://x:1', limits: {max_body_size: 1GiB}}]\n", &[]).unwrap_err();
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert_eq!(errs[0].path, "apps[0].limits.inspect_body");
    assert!(errs[0].message.contains("set `oversize: stream`"), "{errs:?}");
}

#[test]
fn authz_listener_settings_and_their_errors() {
    let c = parse("listen: [{addr: '127.0.0.1:8080'}]\napps: [{name: a, upstream: 'http://x:1'}]\n").unwrap();
    assert!(c.authz.is_none(), "off when absent");
    let c = parse(
        "listen: [{addr: '127.0.0.1:8080'}]\nauthz: {addr: '127.0.0.1:9902', trusted_gateways: [10.0.0.0/8, '::1'], max_request_size: 64KiB}\napps: [{name: a, upstream: 'http://x:1'}]\n",
    )
    .unwrap();
    let z = c.authz.unwrap();
    assert_eq!(z.addr.port(), 9902);
    assert_eq!(z.trusted_gateways.len(), 2);
    assert_eq!(z.max_request_size, 64 * 1024);
    assert!(z.token.is_none());
    let defaults = parse("listen: [{addr: '127.0.0.1:8080'}]\nauthz: {addr: '127.0.0.1:0'}\napps: [{name: a, upstream: 'http://x:1'}]\n").unwrap();
    assert_eq!(defaults.authz.unwrap().max_request_size, 2 * 1024 * 1024);
    let msgs: Vec<String> = errors(
        "listen: [{addr: '127.0.0.1:8080'}]\nauthz: {addr: '0.0.0.0:9902', max_request_size: 10, extra: 1}\napps: [{name: a, upstream: 'http://x:1'}]\n",
    )
    .iter()
    .map(|e| e.to_string())
    .collect();
    for needle in ["set authz.token", "between 1KiB and 1GiB", "extra"] {
        assert!(msgs.iter().any(|m| m.contains(needle)), "missing {needle:?} in {msgs:#?}");
    }
    let msgs: Vec<String> = errors("listen: [{addr: '127.0.0.1:8080'}]\nauthz: {addr: '127.0.0.1:8080'}\napps: [{name: a, upstream: 'http://x:1'}]\n")
        .iter()
        .map(|e| e.to_string())
        .collect();
    assert!(msgs.iter().any(|m| m.contains("also a proxy or admin listener")), "{msgs:#?}");
}

/// `path:`: encoded control bytes and `%5C` are data by default; `backslash` carries `%5C`
/// along when it makes `\` a separator or data; `encoded_backslash` sets it alone; a prefix
/// holding either is still an error.
#[test]
fn path_sections_decode_with_backslash_and_control_defaults() {
    use palisade_core::path::{Backslash, Control};
    let app = |path: &str| {
        let c = parse(&format!("listen: [{{addr: '127.0.0.1:8080'}}]\napps: [{{name: a, upstream: 'http://x:1', path: {path}}}]\n")).unwrap();
        c.apps[0].path.policy
    };
    let d = app("{}");
    assert_eq!((d.backslash, d.encoded_backslash, d.control), (Backslash::Reject, Backslash::Keep, Control::Keep));
    let s = app("{backslash: slash}");
    assert_eq!((s.backslash, s.encoded_backslash), (Backslash::Slash, Backslash::Slash));
    let k = app("{backslash: keep}");
    assert_eq!((k.backslash, k.encoded_backslash), (Backslash::Keep, Backslash::Keep));
    let r = app("{encoded_backslash: reject, control: reject}");
    assert_eq!((r.backslash, r.encoded_backslash, r.control), (Backslash::Reject, Backslash::Reject, Control::Reject));
    let m = app("{backslash: slash, encoded_backslash: keep}");
    assert_eq!((m.backslash, m.encoded_backslash), (Backslash::Slash, Backslash::Keep));
    let e = errors("listen: [{addr: '127.0.0.1:8080'}]\napps: [{name: a, upstream: 'http://x:1', path: {backslash: keep, encoded_backslash: slash}}]\n");
    assert!(e.iter().any(|e| e.path == "apps[0].path.encoded_backslash" && e.message.contains("must be `keep`")), "{e:#?}");
    let e = errors("listen: [{addr: '127.0.0.1:8080'}]\napps: [{name: a, upstream: 'http://x:1', path: {control: truncate}}]\n");
    assert!(e.iter().any(|e| e.path == "apps[0].path.control"), "{e:#?}");
    for prefix in ["/a%00", "/a%5Cb", "/a\\\\b"] {
        let e = errors(&format!("listen: [{{addr: '127.0.0.1:8080'}}]\napps: [{{name: a, upstream: 'http://x:1', path_prefix: \"{prefix}\"}}]\n"));
        assert!(e.iter().any(|e| e.path == "apps[0].path_prefix"), "{prefix}: {e:#?}");
    }
}
