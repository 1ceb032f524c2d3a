use crate::model::{Action, Cmp, Expr, Field, Op};
use crate::settings::parse_field;
use crate::testutil::{errors, errors_with, rules};

#[test]
fn fields_parse() {
    assert_eq!(parse_field("query.id"), Ok(Field::QueryParam("id".into())));
    assert_eq!(parse_field("header.X-Api-Key"), Ok(Field::Header("x-api-key".into())));
    assert_eq!(parse_field("cookie.sid"), Ok(Field::Cookie("sid".into())));
    assert_eq!(parse_field("body:/a~1b/~0c/0"), Ok(Field::BodyPointer(vec!["a/b".into(), "~c".into(), "0".into()])));
    assert_eq!(parse_field("body:"), Ok(Field::BodyPointer(vec![])));
    assert_eq!(parse_field("client_ip"), Ok(Field::Ip));
    assert!(parse_field("body:user").unwrap_err().to_string().contains("starts with `/`"));
    assert!(parse_field("body:/a~2").unwrap_err().to_string().contains("~"));
    assert!(parse_field("header.bad name").unwrap_err().to_string().contains("not a valid header name"));
    assert!(parse_field("query.").unwrap_err().to_string().contains("unknown field"));
    let e = parse_field("uri").unwrap_err();
    assert!(e.to_string().contains("expected one of: method, path"), "{e}");
    assert_eq!(e.kind(), crate::ErrorKind::Field);
    assert_eq!(Field::BodyPointer(vec!["a/b".into(), "~c".into()]).to_string(), "body:/a~1b/~0c");
}

#[test]
fn a_rule_decodes_with_every_part() {
    let rs = rules(
        "- id: r1\n  name: Admin from outside\n  when:\n    all:\n      - {field: path, prefix: /admin, ignore_case: true}\n      - not: {field: ip, cidr: 10.0.0.0/8}\n      - {field: query.n, length: {gt: 1, le: 5}}\n  then: {action: block, status: 451, tag: [admin, outside], skip: {detectors: [sqli, xss], fields: [body/comment]}}\n",
    );
    let r = &rs.rules()[0];
    assert_eq!(r.id, "r1");
    assert_eq!(r.name.as_deref(), Some("Admin from outside"));
    assert_eq!(r.action, Action::Block(Some(451)));
    assert_eq!(r.tags, ["admin", "outside"]);
    let skip = r.skip.as_ref().unwrap();
    assert_eq!((skip.detectors.clone(), skip.fields.clone()), (vec!["sqli".to_string(), "xss".into()], vec!["body/comment".to_string()]));
    assert_eq!(r.origin, "app.yaml:1:3");
    let Expr::All(parts) = &r.when else { panic!("{:?}", r.when) };
    assert_eq!(parts.len(), 3);
    let Expr::Atom(a) = &parts[0] else { panic!() };
    assert!(a.ignore_case && a.op == Op::Prefix(vec![b"/admin".to_vec()]));
    assert!(matches!(&parts[1], Expr::Not(_)));
    let Expr::All(len) = &parts[2] else { panic!("{:?}", parts[2]) };
    assert!(len.iter().any(|e| matches!(e, Expr::Atom(a) if a.op == Op::Length(Cmp::Gt, 1.0))));
    // Short forms.
    let rs = rules("- {id: a, when: {field: method, in: [PUT, DELETE]}, then: monitor}\n- {id: b, when: {field: path, exists: false}, then: {tag: x}}\n- {id: c, when: {field: path, prefix: /}, then: {skip: '*'}}\n");
    assert_eq!(rs.rules()[0].action, Action::Monitor);
    assert_eq!(rs.rules()[1].action, Action::None);
    assert!(matches!(rs.rules()[1].when, Expr::Not(_)));
    assert_eq!(rs.rules()[2].skip.as_ref().unwrap().detectors, ["*"]);
}

#[test]
fn errors_carry_file_line_column_and_key_path() {
    let e = errors(
        "- id: ok\n  when: {field: uri, equals: x}\n  then: block\n- id: 'bad id'\n  when: {field: path}\n  then: explode\n- id: ok\n  when: {field: path, regex: '(unclosed', equals: x}\n  then: {action: allow, status: 400}\n- id: c\n  when: {any: [], not: {field: path, exists: true}}\n  then: {}\n- id: d\n  when: {field: method, raw: true, prefix: ''}\n  then: {skip: [sqlx]}\n  extra: 1\n",
    );
    let expect = [
        "app.yaml:2:17: rules[0].when.field: unknown field `uri`",
        "app.yaml:4:7: rules[1].id: `bad id` is not a rule id",
        "app.yaml:5:9: rules[1].when: a condition needs an operator",
        "app.yaml:6:9: rules[1].then: expected one of block | monitor | allow, found `explode`",
        "app.yaml:8:30: rules[2].when.regex: invalid regular expression",
        "app.yaml:9:33: rules[2].then.status: `status` goes with `action: block`",
        "app.yaml:11:9: rules[3].when: `any` must be alone in its mapping",
        "app.yaml:12:9: rules[3].then: `then` does nothing",
        "app.yaml:14:44: rules[4].when.prefix: must not be empty",
        "app.yaml:14:9: rules[4].when.raw: `raw` applies to path, query, query.NAME and cookie.NAME, not to `method`",
        "app.yaml:15:17: rules[4].then.skip[0]: unknown detector `sqlx`",
        "app.yaml:16:3: rules[4].extra: unknown key `extra`",
    ];
    for want in expect {
        assert!(e.iter().any(|got| got.starts_with(want)), "missing {want:?} in:\n{}", e.join("\n"));
    }
    assert_eq!(e.len(), expect.len(), "{}", e.join("\n"));
    // A duplicate id is reported where it repeats, with the first place.
    let e = errors("- {id: a, when: {field: path, prefix: /}, then: block}\n- {id: a, when: {field: path, prefix: /}, then: block}\n");
    assert_eq!(e, ["app.yaml:2:3: rules[1]: duplicate rule id `a` (first at app.yaml:1:3)"]);
    assert!(errors("3").iter().any(|e| e.contains("expected a list of rules or a mapping")));
    assert!(errors("{inline: [{id: a, when: {field: path, lt: x}, then: block}]}").iter().any(|e| e.contains("inline[0].when.lt: expected a number")));
    assert!(errors("- {id: a, when: {field: path, length: {gt: 1, over: 2}}, then: block}").iter().any(|e| e.contains("when.length.over: unknown key")));
    assert!(errors("- {id: a, when: {field: ip, cidr: 300.1.1.1/8}, then: block}").iter().any(|e| e.contains("is not an IP address or CIDR")));
}

#[test]
fn rule_files_and_inline_rules() {
    let read = |p: &std::path::Path| match p.to_str().unwrap() {
        "/etc/p/common.yaml" => Ok("- id: f1\n  when: {field: path, prefix: /a}\n  then: block\n".to_string()),
        "/etc/p/more.yaml" => Ok("rules:\n  - id: f2\n    when: {field: path, prefix: /b}\n    then: monitor\n".to_string()),
        "/etc/p/broken.yaml" => Ok("- id: x\n  when: {field: path, prefix: /c}\n  then: {action: block, status: 200}\n".to_string()),
        "/etc/p/dup.yaml" => Ok("- {id: f1, when: {field: path, prefix: /d}, then: block}\n".to_string()),
        "/etc/p/syntax.yaml" => Ok("- id: [\n".to_string()),
        _ => Err(palisade_config::read::ReadError::Io(std::io::ErrorKind::NotFound.into())),
    };
    let e = errors_with("files: [common.yaml, more.yaml]\ninline:\n  - {id: i1, when: {field: path, prefix: /c}, then: allow}\n", &read);
    assert!(e.is_empty(), "{e:?}");
    let e = errors_with("files: [common.yaml, broken.yaml, dup.yaml, missing.yaml, syntax.yaml]\n", &read);
    assert!(e.iter().any(|e| e.starts_with("/etc/p/broken.yaml:3:33: [0].then.status: 200 is out of range 400..=599")), "{e:?}");
    assert!(e.iter().any(|e| e.starts_with("/etc/p/dup.yaml:1:3: [0]: duplicate rule id `f1` (first at /etc/p/common.yaml:1:3)")), "{e:?}");
    assert!(e.iter().any(|e| e.starts_with("app.yaml:1:45: rules.files[3]: cannot read rule file /etc/p/missing.yaml")), "{e:?}");
    assert!(e.iter().any(|e| e.starts_with("/etc/p/syntax.yaml:") && e.contains("invalid YAML")), "{e:?}");
    assert!(errors_with("files: common.yaml\nfile: x\n", &read).iter().any(|e| e.contains("rules.file: unknown key `file` (did you mean `files`?)")));
}
