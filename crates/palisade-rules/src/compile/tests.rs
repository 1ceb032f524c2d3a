use std::collections::HashMap;
use std::net::IpAddr;

use palisade_core::Context;
use palisade_testkit::rng::Rng;

use crate::model::{Action, Atom, Cmp, Expr, Field, Op, Rule};
use crate::testutil::{hit, matching, rules, Req};
use crate::Rules;

fn get(target: &str) -> Req {
    Req::new("GET", target)
}

#[test]
fn the_users_example_blocks_wp_config_in_the_query_also_encoded() {
    let when = "{field: query, contains: wp-config.php}";
    assert!(hit(when, &get("/x?file=../wp-config.php")));
    assert!(hit(when, &get("/x?file=wp%2Dconfig%2ephp")));
    assert!(hit(when, &get("/x?a=1&f=wp-config.php.bak")));
    assert!(!hit(when, &get("/wp-config.php")));
    assert!(!hit(when, &get("/x?file=wp-config")));
    assert!(!hit(when, &get("/x")));
    // The raw form sees the escapes.
    assert!(!hit("{field: query, raw: true, contains: wp-config.php}", &get("/x?file=wp%2Dconfig.php")));
    assert!(hit("{field: query, raw: true, contains: '%2D'}", &get("/x?file=wp%2Dconfig.php")));
}

#[test]
fn literal_operators() {
    let r = get("/api/users/42?name=Alice%20Smith&name=bob&id=7");
    assert!(hit("{field: path, equals: /api/users/42}", &r));
    assert!(!hit("{field: path, equals: /api/users}", &r));
    assert!(hit("{field: path, prefix: /api/}", &r));
    assert!(!hit("{field: path, prefix: /users}", &r));
    assert!(hit("{field: path, suffix: /42}", &r));
    assert!(!hit("{field: path, suffix: /4}", &r));
    assert!(hit("{field: path, contains: users}", &r));
    assert!(hit("{field: path, contains: [nothing, sers/4]}", &r));
    assert!(hit("{field: query.name, equals: Alice Smith}", &r));
    // Every value of a repeated parameter is tested.
    assert!(hit("{field: query.name, equals: bob}", &r));
    assert!(hit("{field: query.name, in: [carol, bob]}", &r));
    assert!(!hit("{field: query.name, in: [carol, dave]}", &r));
    assert!(hit("{field: method, equals: GET}", &r));
    assert!(!hit("{field: method, equals: get}", &r));
    // Equality is exact: a prefix or a contained value is not equal.
    assert!(!hit("{field: query.name, equals: Alice}", &r));
    assert!(hit("{field: query.name, equals: ''}", &get("/x?name=")));
    assert!(hit("{field: query.name, equals: ''}", &get("/x?name")));
    // Several operators in one condition must all hold.
    assert!(hit("{field: path, prefix: /api, suffix: '42'}", &r));
    assert!(!hit("{field: path, prefix: /api, suffix: '43'}", &r));
}

#[test]
fn prefixes_and_suffixes_that_nest() {
    let rs = rules(
        "- {id: a, when: {field: path, prefix: /a}, then: block}\n- {id: ab, when: {field: path, prefix: /ab}, then: block}\n- {id: abc, when: {field: path, prefix: [/abcd, /abc]}, then: block}\n- {id: c, when: {field: path, suffix: c}, then: block}\n- {id: bc, when: {field: path, suffix: bc}, then: block}\n",
    );
    assert_eq!(matching(&rs, &get("/abc"), &Context::default()), ["a", "ab", "abc", "c", "bc"]);
    assert_eq!(matching(&rs, &get("/ab"), &Context::default()), ["a", "ab"]);
    assert_eq!(matching(&rs, &get("/xbc"), &Context::default()), ["c", "bc"]);
}

#[test]
fn overlapping_contains_patterns_all_match() {
    let rs = rules("- {id: a, when: {field: query, contains: abc}, then: block}\n- {id: b, when: {field: query, contains: bcd}, then: block}\n- {id: c, when: {field: query, contains: c}, then: block}\n");
    assert_eq!(matching(&rs, &get("/?q=abcd"), &Context::default()), ["a", "b", "c"]);
    assert_eq!(matching(&rs, &get("/?q=bcd"), &Context::default()), ["b", "c"]);
}

#[test]
fn case_folding() {
    let r = get("/Admin/Panel?q=SELECT").header("User-Agent", "Mozilla sqlMAP/1.5");
    assert!(!hit("{field: path, prefix: /admin}", &r));
    assert!(hit("{field: path, prefix: /admin, ignore_case: true}", &r));
    assert!(hit("{field: path, suffix: /PANEL, ignore_case: true}", &r));
    assert!(hit("{field: path, equals: /ADMIN/panel, ignore_case: true}", &r));
    assert!(hit("{field: header.user-agent, contains: sqlmap, ignore_case: true}", &r));
    assert!(!hit("{field: header.user-agent, contains: sqlmap}", &r));
    assert!(hit("{field: query, regex: 'select', ignore_case: true}", &r));
    assert!(!hit("{field: query, regex: 'select'}", &r));
    // Header names are case-insensitive in rules too.
    assert!(hit("{field: header.USER-AGENT, contains: Mozilla}", &r));
}

#[test]
fn regexes() {
    let r = get("/api/v2/items/123?sort=name");
    assert!(hit("{field: path, regex: '^/api/v[0-9]+/'}", &r));
    assert!(hit("{field: path, regex: '/[0-9]+$'}", &r));
    assert!(!hit("{field: path, regex: '^/items'}", &r));
    assert!(hit("{field: query.sort, regex: ['^id$', '^name$']}", &r));
    // Several regexes on one field, each its own rule, all reported.
    let rs = rules("- {id: a, when: {field: path, regex: 'api'}, then: block}\n- {id: b, when: {field: path, regex: 'i'}, then: block}\n- {id: c, when: {field: path, regex: 'zz'}, then: block}\n");
    assert_eq!(matching(&rs, &r, &Context::default()), ["a", "b"]);
}

#[test]
fn numbers_and_lengths() {
    let r = get("/x?limit=250&page=-1&name=abcdef&f=1e3&bad=12abc");
    assert!(hit("{field: query.limit, gt: 100}", &r));
    assert!(!hit("{field: query.limit, gt: 250}", &r));
    assert!(hit("{field: query.limit, ge: 250}", &r));
    assert!(hit("{field: query.limit, lt: 251}", &r));
    assert!(hit("{field: query.limit, le: 250}", &r));
    assert!(!hit("{field: query.limit, lt: 250}", &r));
    assert!(hit("{field: query.limit, eq: 250}", &r));
    assert!(hit("{field: query.limit, eq: 250.0}", &r));
    assert!(hit("{field: query.page, lt: 0}", &r));
    assert!(hit("{field: query.f, eq: 1000}", &r));
    assert!(hit("{field: query.limit, ge: 100, le: 300}", &r));
    assert!(!hit("{field: query.limit, ge: 100, le: 200}", &r));
    // Not a number: no numeric comparison holds.
    assert!(!hit("{field: query.bad, lt: 1000000}", &r));
    assert!(!hit("{field: query.name, gt: -1}", &r));
    assert!(hit("{field: query.name, length: 6}", &r));
    assert!(hit("{field: query.name, length: {gt: 5, lt: 7}}", &r));
    assert!(!hit("{field: query.name, length: {gt: 6}}", &r));
    assert!(hit("{field: query.name, length: {le: 6, ge: 6}}", &r));
    assert!(hit("{field: path, length: {eq: 2}}", &r));
    // Many thresholds on one field: exactly those that hold.
    let rs = rules(&(0..20).map(|t| format!("- {{id: gt{t}, when: {{field: query.n, gt: {t}}}, then: block}}\n")).collect::<String>());
    let ids = matching(&rs, &get("/?n=7"), &Context::default());
    assert_eq!(ids, (0..7).map(|t| format!("gt{t}")).collect::<Vec<_>>());
}

#[test]
fn exists_and_missing_fields() {
    let r = get("/x?a=1").header("X-Token", "t");
    assert!(hit("{field: header.x-token, exists: true}", &r));
    assert!(!hit("{field: header.authorization, exists: true}", &r));
    assert!(hit("{field: header.authorization, exists: false}", &r));
    assert!(hit("{field: query.a, exists: true}", &r));
    assert!(!hit("{field: query.b, exists: true}", &r));
    assert!(!hit("{field: query, exists: true}", &get("/x")));
    // An operator on a missing field does not hold; its negation does.
    assert!(!hit("{field: header.authorization, contains: Bearer}", &r));
    assert!(hit("{not: {field: header.authorization, contains: Bearer}}", &r));
}

#[test]
fn nesting_with_all_any_not() {
    let when = "{all: [{field: path, prefix: /admin}, {not: {field: ip, cidr: [10.0.0.0/8, '192.168.0.0/16']}}, {any: [{field: method, equals: POST}, {field: query.debug, exists: true}]}]}";
    assert!(hit(when, &Req::new("POST", "/admin/x").ip("203.0.113.5")));
    assert!(hit(when, &Req::new("GET", "/admin/x?debug").ip("203.0.113.5")));
    assert!(!hit(when, &Req::new("GET", "/admin/x").ip("203.0.113.5")));
    assert!(!hit(when, &Req::new("POST", "/admin/x").ip("10.2.3.4")));
    assert!(!hit(when, &Req::new("POST", "/public").ip("203.0.113.5")));
    // A list is `all`.
    assert!(hit("[{field: path, prefix: /a}, {field: path, suffix: z}]", &get("/a/z")));
    assert!(!hit("[{field: path, prefix: /a}, {field: path, suffix: z}]", &get("/a/y")));
    // A rule that holds when nothing matched (a top-level `not`) is still evaluated.
    assert!(hit("{not: {field: path, prefix: /api}}", &get("/other")));
    assert!(!hit("{not: {field: path, prefix: /api}}", &get("/api/x")));
    assert!(hit("{not: {not: {field: path, prefix: /api}}}", &get("/api/x")));
    assert!(hit("{any: [{field: path, prefix: /nope}, {not: {field: method, equals: DELETE}}]}", &get("/x")));
}

#[test]
fn path_decoding_and_raw_form() {
    // Decoded: percent-decoding, dot segments, repeated slashes.
    for p in ["/admin/x", "/%61dmin/x", "//admin/x", "/public/../admin/x", "/./admin/x"] {
        assert!(hit("{field: path, prefix: /admin/}", &get(p)), "{p}");
    }
    assert!(!hit("{field: path, raw: true, prefix: /admin/}", &get("/%61dmin/x")));
    assert!(hit("{field: path, raw: true, contains: '%61'}", &get("/%61dmin/x")));
    // Query parameter names and values are decoded (`+` is a space); the raw form is not.
    let r = get("/s?q%5B%5D=a+b%26c");
    assert!(hit("{field: 'query.q[]', equals: a b&c}", &r));
    assert!(hit("{field: 'query.q[]', raw: true, equals: a+b%26c}", &r));
    // Cookies.
    let r = get("/").header("Cookie", "sid=abc%3D; theme=dark").header("Cookie", "lang=en");
    assert!(hit("{field: cookie.sid, equals: abc=}", &r));
    assert!(hit("{field: cookie.sid, raw: true, equals: abc%3D}", &r));
    assert!(hit("{field: cookie.lang, equals: en}", &r));
    assert!(!hit("{field: cookie.theme, equals: en}", &r));
}

#[test]
fn body_and_json_pointer() {
    let body = r#"{"user":{"role":"admin","name":"A\u0042C","age":41},"tags":["x","wp"],"a/b":{"~k":true},"list":[{"id":1},{"id":2}]}"#;
    let r = Req::new("POST", "/u").body(body);
    assert!(hit("{field: 'body:/user/role', equals: admin}", &r));
    assert!(!hit("{field: 'body:/user/role', equals: user}", &r));
    // Strings are unescaped.
    assert!(hit("{field: 'body:/user/name', equals: ABC}", &r));
    assert!(hit("{field: 'body:/user/age', gt: 40}", &r));
    // An array gives each item.
    assert!(hit("{field: 'body:/tags', equals: wp}", &r));
    assert!(hit("{field: 'body:/tags/1', equals: wp}", &r));
    assert!(!hit("{field: 'body:/tags/2', exists: true}", &r));
    assert!(hit("{field: 'body:/a~1b/~0k', equals: 'true'}", &r));
    assert!(hit("{field: 'body:/list/1/id', eq: 2}", &r));
    assert!(!hit("{field: 'body:/user/missing', exists: true}", &r));
    assert!(hit("{field: body, contains: '\"role\":\"admin\"'}", &r));
    // A body that is not JSON has no pointer values.
    assert!(!hit("{field: 'body:/user/role', exists: true}", &Req::new("POST", "/u").body("role=admin")));
    assert!(hit("{field: body, contains: role=admin}", &Req::new("POST", "/u").body("role=admin")));
}

#[test]
fn body_rules_are_in_the_body_program_only() {
    let rs = rules(
        "- {id: h, when: {field: path, prefix: /}, then: block}\n- {id: b, when: {any: [{field: path, prefix: /}, {field: body, contains: x}]}, then: block}\n",
    );
    assert!(rs.needs_body());
    assert_eq!(rs.program(crate::Phase::Head).rules, [0]);
    assert_eq!(rs.program(crate::Phase::Body).rules, [1]);
    assert!(!rules("- {id: h, when: {field: path, prefix: /}, then: block}\n").needs_body());
}

#[test]
fn client_ip_and_cidr() {
    let when = "{field: ip, cidr: [10.0.0.0/8, 10.1.0.0/16, '2001:db8::/32', 192.0.2.7]}";
    assert!(hit(when, &get("/").ip("10.200.0.1")));
    assert!(hit(when, &get("/").ip("10.1.2.3")));
    assert!(hit(when, &get("/").ip("192.0.2.7")));
    assert!(!hit(when, &get("/").ip("192.0.2.8")));
    assert!(hit(when, &get("/").ip("2001:db8::5")));
    assert!(!hit(when, &get("/").ip("2001:db9::5")));
    // IPv4-mapped IPv6 addresses count as IPv4.
    assert!(hit(when, &get("/").ip("::ffff:10.9.9.9")));
    assert!(hit("{field: ip, equals: 10.9.9.9}", &get("/").ip("::ffff:10.9.9.9")));
    assert!(hit("{field: ip, prefix: '10.'}", &get("/").ip("10.9.9.9")));
    // Nested networks: each rule reports on its own.
    let rs = rules("- {id: wide, when: {field: ip, cidr: 10.0.0.0/8}, then: block}\n- {id: narrow, when: {field: ip, cidr: 10.1.0.0/16}, then: block}\n- {id: all, when: {field: ip, cidr: [0.0.0.0/0, '::/0']}, then: block}\n");
    assert_eq!(matching(&rs, &get("/").ip("10.1.0.1"), &Context::default()), ["wide", "narrow", "all"]);
    assert_eq!(matching(&rs, &get("/").ip("10.2.0.1"), &Context::default()), ["wide", "all"]);
    assert_eq!(matching(&rs, &get("/").ip("11.0.0.0"), &Context::default()), ["all"]);
    assert_eq!(matching(&rs, &get("/").ip("255.255.255.255"), &Context::default()), ["all"]);
    // CIDR on another field parses its value as an address.
    assert!(hit("{field: header.x-client, cidr: 10.0.0.0/8}", &get("/").header("X-Client", " 10.0.0.3 ")));
    assert!(!hit("{field: header.x-client, cidr: 10.0.0.0/8}", &get("/").header("X-Client", "not an ip")));
}

#[test]
fn operation_field() {
    let cx = Context { operation: Some("getUser".into()), ..Context::default() };
    let rs = rules("- {id: op, when: {field: operation, equals: getUser}, then: block}\n");
    assert_eq!(matching(&rs, &get("/"), &cx), ["op"]);
    assert!(matching(&rs, &get("/"), &Context::default()).is_empty());
}

// ---------------------------------------------------------------------------------------------
// Differential test: 1,000 generated rules, compiled, against a naive evaluator.

const WORDS: &[&str] = &[
    "a",
    "ab",
    "abc",
    "b",
    "bc",
    "wp-config.php",
    "admin",
    "/admin",
    "Admin",
    "GET",
    "post",
    "%41",
    "A",
    "x y",
    "1",
    "10",
    "12",
    "/",
    "role",
    "wp",
    "x",
    "en",
    "getUser",
    "10.1",
    "Mozilla",
];
const REGEXES: &[&str] = &["a.c", "^/ad", "[0-9]+$", "(?i)admin", "b|c", "^$", "x y", "^[a-z]+$", "\\d{2}"];
const NETS: &[&str] = &["10.0.0.0/8", "10.1.0.0/16", "192.0.2.0/24", "192.0.2.7/32", "2001:db8::/32", "0.0.0.0/0", "8.8.0.0/15"];

fn fields() -> Vec<(Field, bool)> {
    vec![
        (Field::Method, false),
        (Field::Path, false),
        (Field::Path, true),
        (Field::Query, false),
        (Field::Query, true),
        (Field::QueryParam("a".into()), false),
        (Field::QueryParam("b".into()), true),
        (Field::QueryParam("q".into()), false),
        (Field::Header("user-agent".into()), false),
        (Field::Header("x-a".into()), false),
        (Field::Cookie("sid".into()), false),
        (Field::Cookie("sid".into()), true),
        (Field::Body, false),
        (Field::BodyPointer(vec!["user".into(), "role".into()]), false),
        (Field::BodyPointer(vec!["tags".into()]), false),
        (Field::BodyPointer(vec!["n".into()]), false),
        (Field::Ip, false),
        (Field::Operation, false),
    ]
}

fn random_atom(rng: &mut Rng) -> Atom {
    let fs = fields();
    let (field, raw) = fs[rng.below(fs.len())].clone();
    let ignore_case = rng.chance(30);
    let lits = |rng: &mut Rng| (0..1 + rng.below(2)).map(|_| rng.pick(WORDS).as_bytes().to_vec()).collect::<Vec<_>>();
    let cmp = |rng: &mut Rng| rng.pick(&[Cmp::Lt, Cmp::Le, Cmp::Gt, Cmp::Ge, Cmp::Eq]);
    let op = match rng.below(10) {
        0 => Op::Exists,
        1 => Op::Equals(lits(rng)),
        2 => Op::Prefix(lits(rng)),
        3 => Op::Suffix(lits(rng)),
        4 => Op::Contains(lits(rng)),
        5 => Op::Regex((0..1 + rng.below(2)).map(|_| rng.pick(REGEXES).to_string()).collect()),
        6 => Op::Cidr((0..1 + rng.below(2)).map(|_| rng.pick(NETS).parse().unwrap()).collect()),
        7 => Op::Number(cmp(rng), rng.below(20) as f64),
        _ => Op::Length(cmp(rng), rng.below(12) as f64),
    };
    Atom { field, raw, ignore_case, op }
}

fn random_expr(rng: &mut Rng, depth: u32) -> Expr {
    if depth == 0 || rng.chance(55) {
        return Expr::Atom(random_atom(rng));
    }
    match rng.below(3) {
        0 => Expr::All((0..1 + rng.below(3)).map(|_| random_expr(rng, depth - 1)).collect()),
        1 => Expr::Any((0..1 + rng.below(3)).map(|_| random_expr(rng, depth - 1)).collect()),
        _ => Expr::Not(Box::new(random_expr(rng, depth - 1))),
    }
}

fn random_request(rng: &mut Rng) -> (Req, Context) {
    let method = rng.pick(&["GET", "POST", "DELETE"]);
    let path = rng.pick(&["/", "/admin", "/a/../admin/x", "/%61dmin", "/wp-config.php", "/x//y/", "/ab/abc", "/Admin/12"]);
    let query = rng.pick(&["", "?a=1", "?a=abc&b=%41", "?q=wp-config.php", "?a=x+y&a=10", "?b=ab%2Fc&q=role", "?", "?a=12&b=bc&q=Admin"]);
    let mut r = Req::new(method, &format!("{path}{query}"));
    if rng.chance(60) {
        r = r.header("User-Agent", rng.pick(&["Mozilla/5.0", "curl/8", "sqlmap admin", "ab", "x y"]));
    }
    for _ in 0..rng.below(3) {
        r = r.header("X-A", rng.pick(WORDS));
    }
    if rng.chance(50) {
        r = r.header("Cookie", rng.pick(&["sid=abc", "sid=%41b; x=1", "x=2; sid=\"10\"", "sid="]));
    }
    if rng.chance(60) {
        let body = match rng.below(4) {
            0 => format!(r#"{{"user":{{"role":"{}"}},"tags":["{}","{}"],"n":{}}}"#, rng.pick(WORDS), rng.pick(WORDS), rng.pick(WORDS), rng.below(30)),
            1 => format!(r#"{{"tags":"{}","n":"{}"}}"#, rng.pick(WORDS), rng.below(30)),
            2 => format!("role={}&n={}", rng.pick(WORDS), rng.below(30)),
            _ => r#"{"user":{"role":"a\"b"},"tags":[],"n":-3}"#.to_string(),
        };
        r = r.body(&body);
    }
    r = r.ip(rng.pick(&["10.1.2.3", "10.2.0.1", "192.0.2.7", "192.0.2.9", "2001:db8::1", "::ffff:10.0.0.1", "8.9.9.9", "127.0.0.1"]));
    let cx = Context { operation: rng.chance(50).then(|| (rng.pick(&["getUser", "GET /admin", "ab"])).into()), ..Context::default() };
    (r, cx)
}

/// The values of a field, computed the simple way.
fn naive_values(f: &Field, raw: bool, r: &Req, cx: &Context) -> Vec<Vec<u8>> {
    let dec = |v: &[u8], plus: bool| {
        let mut out = Vec::new();
        crate::decode::percent_decode_into(v, plus, &mut out);
        out
    };
    let raw = raw && f.has_raw_form();
    match f {
        Field::Method => vec![r.method.as_str().as_bytes().to_vec()],
        Field::Path if raw => vec![r.path.as_bytes().to_vec()],
        Field::Path => {
            let (mut a, mut b) = (Vec::new(), Vec::new());
            crate::decode::normalize_path_into(r.path.as_bytes(), &mut a, &mut b);
            vec![b]
        }
        Field::Query => r.query.iter().map(|q| if raw { q.as_bytes().to_vec() } else { dec(q.as_bytes(), true) }).collect(),
        Field::QueryParam(name) => {
            let q = r.query.clone().unwrap_or_default();
            q.split('&')
                .filter(|p| !p.is_empty())
                .filter_map(|p| {
                    let (n, v) = p.split_once('=').unwrap_or((p, ""));
                    (dec(n.as_bytes(), true) == name.as_bytes()).then(|| if raw { v.as_bytes().to_vec() } else { dec(v.as_bytes(), true) })
                })
                .collect()
        }
        Field::Header(name) => r.headers.get_all(name.as_str()).iter().map(|v| v.as_bytes().to_vec()).collect(),
        Field::Cookie(name) => r
            .headers
            .get_all("cookie")
            .iter()
            .flat_map(|h| {
                crate::decode::cookie_pairs(h.as_bytes())
                    .filter(|(n, _)| *n == name.as_bytes())
                    .map(|(_, v)| if raw { v.to_vec() } else { dec(v, false) })
                    .collect::<Vec<_>>()
            })
            .collect(),
        Field::Body => vec![r.body.clone()],
        Field::BodyPointer(segs) => {
            let Ok(doc) = serde_json::from_slice::<serde_json::Value>(&r.body) else { return Vec::new() };
            let ptr: String = segs.iter().map(|s| format!("/{s}")).collect();
            let scalar = |v: &serde_json::Value| match v {
                serde_json::Value::String(s) => s.as_bytes().to_vec(),
                other => other.to_string().into_bytes(),
            };
            match doc.pointer(&ptr) {
                None => Vec::new(),
                Some(serde_json::Value::Array(items)) => items.iter().map(scalar).collect(),
                Some(v) => vec![scalar(v)],
            }
        }
        Field::Ip => vec![r.ip.to_canonical().to_string().into_bytes()],
        Field::Operation => cx.operation.iter().map(|o| o.as_bytes().to_vec()).collect(),
    }
}

fn naive_atom(a: &Atom, r: &Req, cx: &Context, regexes: &mut HashMap<String, regex_automata::meta::Regex>) -> bool {
    let values = naive_values(&a.field, a.raw, r, cx);
    let low = |v: &[u8]| if a.ignore_case { v.to_ascii_lowercase() } else { v.to_vec() };
    values.iter().any(|v| {
        let lv = low(v);
        match &a.op {
            Op::Exists => true,
            Op::Equals(ps) => ps.iter().any(|p| low(p) == lv),
            Op::Prefix(ps) => ps.iter().any(|p| lv.starts_with(&low(p))),
            Op::Suffix(ps) => ps.iter().any(|p| lv.ends_with(&low(p))),
            Op::Contains(ps) => ps.iter().any(|p| lv.windows(p.len()).any(|w| w == low(p))),
            Op::Regex(ps) => ps.iter().any(|p| {
                let pat = if a.ignore_case { format!("(?i){p}") } else { p.clone() };
                regexes.entry(pat.clone()).or_insert_with(|| regex_automata::meta::Regex::new(&pat).unwrap()).is_match(&v[..])
            }),
            Op::Cidr(nets) => {
                let ip: Option<IpAddr> = if a.field == Field::Ip { Some(r.ip) } else { std::str::from_utf8(v).ok().and_then(|t| t.trim().parse().ok()) };
                ip.is_some_and(|ip| nets.iter().any(|n| n.contains(&ip.to_canonical())))
            }
            Op::Number(c, t) => crate::eval::parse_number(v).is_some_and(|n| c.holds(n, *t)),
            Op::Length(c, t) => c.holds(v.len() as f64, *t),
        }
    })
}

#[test]
fn a_thousand_generated_rules_agree_with_a_naive_evaluator() {
    let mut rng = Rng::new(0x5eed_1234_abcd_0001);
    let list: Vec<Rule> = (0..1000)
        .map(|i| Rule {
            id: format!("r{i}"),
            name: None,
            when: random_expr(&mut rng, 3),
            action: Action::Monitor,
            tags: Vec::new(),
            skip: None,
            origin: String::new(),
        })
        .collect();
    let compiled = Rules::compile(list.clone()).unwrap();
    assert!(compiled.program(crate::Phase::Head).atom_count() + compiled.program(crate::Phase::Body).atom_count() >= 1000);
    let mut regexes = HashMap::new();
    let (mut total, mut requests) = (0usize, 0usize);
    for _ in 0..300 {
        let (req, cx) = random_request(&mut rng);
        // Head rules first, then body rules, each in rule order: the naive order is the same.
        let got = matching(&compiled, &req, &cx);
        let (body_rules, head_rules): (Vec<&Rule>, Vec<&Rule>) = list.iter().partition(|r| r.when.needs_body());
        let want: Vec<String> = head_rules
            .into_iter()
            .chain(body_rules)
            .filter(|r| r.when.eval_with(&mut |a| naive_atom(a, &req, &cx, &mut regexes)))
            .map(|r| r.id.clone())
            .collect();
        for id in want.iter().filter(|w| !got.contains(w)).chain(got.iter().filter(|g| !want.contains(g))) {
            eprintln!("differs: {:?}", list.iter().find(|r| &r.id == id).unwrap().when);
        }
        assert_eq!(got, want, "request {:?} {:?} {:?} {:?}", req.method, req.path, req.query, String::from_utf8_lossy(&req.body));
        total += got.len();
        requests += 1;
    }
    // The generator must exercise both outcomes: many rules match, most do not.
    assert!(total > requests * 20 && total < requests * 900, "{total} matches over {requests} requests");
}
