//! Parameter decoding: every row of the OpenAPI "Style Examples" table, percent-encoding edge
//! cases, duplicates, empty values, headers, cookies, content parameters, unknown parameters.

use super::*;

/// A tiny schema arena implementing [`Hints`] for tests.
/// Types, items, properties, additionalProperties.
type Node = (u8, Option<SchemaId>, Vec<(String, SchemaId)>, Option<SchemaId>);

#[derive(Default)]
pub(crate) struct Fake {
    nodes: Vec<Node>,
}

impl Fake {
    pub(crate) fn add(&mut self, types: u8, items: Option<SchemaId>, props: &[(&str, SchemaId)], additional: Option<SchemaId>) -> SchemaId {
        self.nodes.push((types, items, props.iter().map(|(n, s)| (n.to_string(), *s)).collect(), additional));
        SchemaId(self.nodes.len() as u32 - 1)
    }
    pub(crate) fn t(&mut self, types: u8) -> SchemaId {
        self.add(types, None, &[], None)
    }
    pub(crate) fn array(&mut self, items: SchemaId) -> SchemaId {
        self.add(TypeSet::ARRAY, Some(items), &[], None)
    }
    pub(crate) fn object(&mut self, props: &[(&str, SchemaId)]) -> SchemaId {
        self.add(TypeSet::OBJECT, None, props, None)
    }
}

impl Hints for Fake {
    fn types(&self, id: SchemaId) -> TypeSet {
        TypeSet(self.nodes[id.0 as usize].0)
    }
    fn items(&self, id: SchemaId) -> Option<SchemaId> {
        self.nodes[id.0 as usize].1
    }
    fn property(&self, id: SchemaId, name: &str) -> Option<SchemaId> {
        let n = &self.nodes[id.0 as usize];
        n.2.iter().find(|(p, _)| p == name).map(|(_, s)| *s).or(n.3)
    }
}

const S: u8 = TypeSet::STRING;
const I: u8 = TypeSet::INTEGER;

struct World {
    h: Fake,
    prim: SchemaId,
    arr: SchemaId,
    obj: SchemaId,
    int: SchemaId,
}

fn world() -> World {
    let mut h = Fake::default();
    let prim = h.t(S);
    let arr = h.array(prim);
    let int = h.t(I);
    let obj = h.object(&[("R", int), ("G", int), ("B", int)]);
    World { h, prim, arr, obj, int }
}

fn param(name: &str, location: ParamIn, style: Style, explode: bool, schema: Option<SchemaId>) -> Param {
    Param { name: name.into(), location, required: false, style, explode, allow_empty_value: false, allow_reserved: false, schema, content_type: None }
}

struct Req<'a> {
    path: &'a [(&'a str, &'a str)],
    query: &'a str,
    headers: &'a [(&'a str, &'a str)],
    cookies: &'a [&'a str],
}

const NO: Req<'static> = Req { path: &[], query: "", headers: &[], cookies: &[] };

fn run_with(dec: &mut ParamDecoder, p: &Param, others: &[Param], req: &Req<'_>, h: &dyn Hints) -> (Decoded, String) {
    let mut q = Query::default();
    q.parse(req.query.as_bytes()).unwrap();
    let mut c = Cookies::default();
    for line in req.cookies {
        c.add_header(line.as_bytes()).unwrap();
    }
    let src = Sources { path: &req.path, query: &q, headers: &req.headers, cookies: &c, params: others };
    let mut out = String::new();
    let d = dec.decode(p, &src, h, &mut out);
    (d, out)
}

fn run(p: &Param, req: &Req<'_>, h: &dyn Hints) -> (Decoded, String) {
    run_with(&mut ParamDecoder::new(), p, std::slice::from_ref(p), req, h)
}

fn json(p: &Param, req: &Req<'_>, h: &dyn Hints) -> String {
    let (d, out) = run(p, req, h);
    assert_eq!(d, Decoded::Json, "{p:?} gave {out}");
    out
}

fn invalid(p: &Param, req: &Req<'_>, h: &dyn Hints) -> Invalid {
    match run(p, req, h) {
        (Decoded::Invalid(e), _) => e,
        other => panic!("expected Invalid, got {other:?}"),
    }
}

fn path<'a>(v: &'a [(&'a str, &'a str)]) -> Req<'a> {
    Req { path: v, ..NO }
}

fn query(q: &str) -> Req<'_> {
    Req { query: q, ..NO }
}

const OBJ: &str = r#"{"B":150,"G":200,"R":100}"#;
const ARR: &str = r#"["blue","black","brown"]"#;

// ----- matrix -----

#[test]
fn matrix_not_exploded() {
    let w = world();
    let p = |s| param("color", ParamIn::Path, Style::Matrix, false, Some(s));
    assert_eq!(json(&p(w.prim), &path(&[("color", ";color")]), &w.h), r#""""#);
    assert_eq!(json(&p(w.arr), &path(&[("color", ";color")]), &w.h), "[]");
    assert_eq!(json(&p(w.prim), &path(&[("color", ";color=blue")]), &w.h), r#""blue""#);
    assert_eq!(json(&p(w.arr), &path(&[("color", ";color=blue,black,brown")]), &w.h), ARR);
    assert_eq!(json(&p(w.obj), &path(&[("color", ";color=R,100,G,200,B,150")]), &w.h), OBJ);
}

#[test]
fn matrix_exploded() {
    let w = world();
    let p = |s| param("color", ParamIn::Path, Style::Matrix, true, Some(s));
    assert_eq!(json(&p(w.prim), &path(&[("color", ";color")]), &w.h), r#""""#);
    assert_eq!(json(&p(w.arr), &path(&[("color", ";color")]), &w.h), "[]");
    assert_eq!(json(&p(w.obj), &path(&[("color", ";color")]), &w.h), "{}");
    assert_eq!(json(&p(w.prim), &path(&[("color", ";color=blue")]), &w.h), r#""blue""#);
    assert_eq!(json(&p(w.arr), &path(&[("color", ";color=blue;color=black;color=brown")]), &w.h), ARR);
    assert_eq!(json(&p(w.obj), &path(&[("color", ";R=100;G=200;B=150")]), &w.h), OBJ);
}

#[test]
fn matrix_rejects_wrong_shapes() {
    let w = world();
    let p = |s, e| param("color", ParamIn::Path, Style::Matrix, e, Some(s));
    assert!(matches!(invalid(&p(w.prim, false), &path(&[("color", "color=blue")]), &w.h), Invalid::Malformed(_)));
    assert!(matches!(invalid(&p(w.prim, false), &path(&[("color", ";colour=blue")]), &w.h), Invalid::Malformed(_)));
    assert!(matches!(invalid(&p(w.arr, true), &path(&[("color", ";color=blue;shade=black")]), &w.h), Invalid::Malformed(_)));
    assert!(matches!(invalid(&p(w.arr, false), &path(&[("color", ";color=blue;color=black")]), &w.h), Invalid::Malformed(_)));
    assert!(matches!(invalid(&p(w.obj, true), &path(&[("color", ";R=100;G")]), &w.h), Invalid::Malformed(_)));
    assert!(matches!(invalid(&p(w.obj, false), &path(&[("color", ";color=R,100,G")]), &w.h), Invalid::Malformed(_)));
}

// ----- label -----

#[test]
fn label_not_exploded() {
    let w = world();
    let p = |s| param("color", ParamIn::Path, Style::Label, false, Some(s));
    assert_eq!(json(&p(w.prim), &path(&[("color", ".")]), &w.h), r#""""#);
    assert_eq!(json(&p(w.arr), &path(&[("color", ".")]), &w.h), "[]");
    assert_eq!(json(&p(w.prim), &path(&[("color", ".blue")]), &w.h), r#""blue""#);
    // RFC 6570 / OpenAPI 3.1 form, and the OpenAPI 3.0 table's form.
    assert_eq!(json(&p(w.arr), &path(&[("color", ".blue,black,brown")]), &w.h), ARR);
    assert_eq!(json(&p(w.arr), &path(&[("color", ".blue.black.brown")]), &w.h), ARR);
    assert_eq!(json(&p(w.obj), &path(&[("color", ".R,100,G,200,B,150")]), &w.h), OBJ);
    assert_eq!(json(&p(w.obj), &path(&[("color", ".R.100.G.200.B.150")]), &w.h), OBJ);
    // A primitive keeps its dots.
    let mut h = Fake::default();
    let num = h.t(TypeSet::NUMBER);
    assert_eq!(json(&param("v", ParamIn::Path, Style::Label, false, Some(num)), &path(&[("v", ".1.5")]), &h), "1.5");
}

#[test]
fn label_exploded() {
    let w = world();
    let p = |s| param("color", ParamIn::Path, Style::Label, true, Some(s));
    assert_eq!(json(&p(w.prim), &path(&[("color", ".blue")]), &w.h), r#""blue""#);
    assert_eq!(json(&p(w.arr), &path(&[("color", ".blue.black.brown")]), &w.h), ARR);
    assert_eq!(json(&p(w.obj), &path(&[("color", ".R=100.G=200.B=150")]), &w.h), OBJ);
    assert!(matches!(invalid(&p(w.prim), &path(&[("color", "blue")]), &w.h), Invalid::Malformed(_)));
    assert!(matches!(invalid(&p(w.obj), &path(&[("color", ".R=100.G")]), &w.h), Invalid::Malformed(_)));
}

// ----- simple -----

#[test]
fn simple_both_explodes() {
    let w = world();
    for explode in [false, true] {
        let p = |s| param("color", ParamIn::Path, Style::Simple, explode, Some(s));
        assert_eq!(json(&p(w.prim), &path(&[("color", "blue")]), &w.h), r#""blue""#);
        assert_eq!(json(&p(w.arr), &path(&[("color", "blue,black,brown")]), &w.h), ARR);
    }
    let p = |e| param("color", ParamIn::Path, Style::Simple, e, Some(w.obj));
    assert_eq!(json(&p(false), &path(&[("color", "R,100,G,200,B,150")]), &w.h), OBJ);
    assert_eq!(json(&p(true), &path(&[("color", "R=100,G=200,B=150")]), &w.h), OBJ);
    assert!(matches!(invalid(&p(false), &path(&[("color", "R,100,G")]), &w.h), Invalid::Malformed(_)));
    assert!(matches!(invalid(&p(true), &path(&[("color", "R=100,G")]), &w.h), Invalid::Malformed(_)));
    // Repeated object key.
    assert_eq!(invalid(&p(true), &path(&[("color", "R=1,R=2")]), &w.h), Invalid::Duplicate);
}

#[test]
fn simple_object_values_are_coerced_per_property() {
    let w = world();
    let p = param("color", ParamIn::Path, Style::Simple, true, Some(w.obj));
    // A non-numeric value for an integer property stays a string: the schema reports it.
    assert_eq!(json(&p, &path(&[("color", "R=red,G=1")]), &w.h), r#"{"G":1,"R":"red"}"#);
}

// ----- form -----

#[test]
fn form_not_exploded() {
    let w = world();
    let p = |s| param("color", ParamIn::Query, Style::Form, false, Some(s));
    // The table's "empty" serialization (`color=`): the empty string, the empty list.
    assert_eq!(json(&p(w.prim), &query("color="), &w.h), r#""""#);
    assert_eq!(json(&p(w.arr), &query("color="), &w.h), "[]");
    assert_eq!(json(&p(w.prim), &query("color=blue"), &w.h), r#""blue""#);
    assert_eq!(json(&p(w.arr), &query("color=blue,black,brown"), &w.h), ARR);
    assert_eq!(json(&p(w.obj), &query("color=R,100,G,200,B,150"), &w.h), OBJ);
    assert_eq!(invalid(&p(w.arr), &query("color=blue&color=black"), &w.h), Invalid::Duplicate);
}

#[test]
fn form_exploded() {
    let w = world();
    let p = |s| param("color", ParamIn::Query, Style::Form, true, Some(s));
    assert_eq!(json(&p(w.prim), &query("color=blue"), &w.h), r#""blue""#);
    assert_eq!(json(&p(w.arr), &query("color=blue&color=black&color=brown"), &w.h), ARR);
    // Exploded: a comma is data.
    assert_eq!(json(&p(w.arr), &query("color=blue,black"), &w.h), r#"["blue,black"]"#);
    assert_eq!(json(&p(w.obj), &query("R=100&G=200&B=150"), &w.h), OBJ);
    // Keys the schema does not name are not taken.
    assert_eq!(json(&p(w.obj), &query("R=100&other=1"), &w.h), r#"{"R":100}"#);
    assert_eq!(run(&p(w.obj), &query("other=1"), &w.h).0, Decoded::Missing);
    assert_eq!(run(&p(w.arr), &query("other=1"), &w.h).0, Decoded::Missing);
}

#[test]
fn form_exploded_object_leaves_other_params_keys() {
    let w = world();
    let obj = param("color", ParamIn::Query, Style::Form, true, Some(w.obj));
    let r = param("R", ParamIn::Query, Style::Form, true, Some(w.int));
    let all = [obj, r];
    let (d, out) = run_with(&mut ParamDecoder::new(), &all[0], &all, &query("R=1&G=2"), &w.h);
    assert_eq!((d, out.as_str()), (Decoded::Json, r#"{"G":2}"#));
}

// ----- spaceDelimited / pipeDelimited -----

#[test]
fn space_and_pipe_delimited() {
    let w = world();
    let sp = |s| param("color", ParamIn::Query, Style::SpaceDelimited, false, Some(s));
    assert_eq!(json(&sp(w.arr), &query("color=blue%20black%20brown"), &w.h), ARR);
    assert_eq!(json(&sp(w.arr), &query("color=blue+black+brown"), &w.h), ARR);
    assert_eq!(json(&sp(w.obj), &query("color=R%20100%20G%20200%20B%20150"), &w.h), OBJ);
    let pp = |s| param("color", ParamIn::Query, Style::PipeDelimited, false, Some(s));
    assert_eq!(json(&pp(w.arr), &query("color=blue|black|brown"), &w.h), ARR);
    assert_eq!(json(&pp(w.arr), &query("color=blue%7Cblack%7Cbrown"), &w.h), ARR);
    assert_eq!(json(&pp(w.obj), &query("color=R|100|G|200|B|150"), &w.h), OBJ);
    assert!(matches!(invalid(&pp(w.obj), &query("color=R|100|G"), &w.h), Invalid::Malformed(_)));
    // explode: true repeats the name, like form.
    let ex = param("color", ParamIn::Query, Style::PipeDelimited, true, Some(w.arr));
    assert_eq!(json(&ex, &query("color=blue&color=black&color=brown"), &w.h), ARR);
}

// ----- deepObject -----

#[test]
fn deep_object() {
    let w = world();
    let p = param("color", ParamIn::Query, Style::DeepObject, true, Some(w.obj));
    assert_eq!(json(&p, &query("color[R]=100&color[G]=200&color[B]=150"), &w.h), OBJ);
    // Encoded brackets are the same key.
    assert_eq!(json(&p, &query("color%5BR%5D=100"), &w.h), r#"{"R":100}"#);
    assert_eq!(run(&p, &query("colour[R]=1&colors=2"), &w.h).0, Decoded::Missing);
    assert_eq!(invalid(&p, &query("color[R]=1&color[R]=2"), &w.h), Invalid::Duplicate);
    // Deeper than the schema: an object where an integer is wanted (the schema reports it).
    assert_eq!(json(&p, &query("color[R][x][y]=1"), &w.h), r#"{"R":{"x":{"y":"1"}}}"#);
    assert_eq!(invalid(&p, &query("color[R=1"), &w.h), Invalid::BadBrackets);
    assert_eq!(invalid(&p, &query("color[R]x=1"), &w.h), Invalid::BadBrackets);
    assert_eq!(invalid(&p, &query("color[R[x]]=1"), &w.h), Invalid::BadBrackets);
    // The plain key is the parameter's value too: a string where an object is wanted, which
    // the schema rejects (it is never skipped).
    assert_eq!(json(&p, &query("color=%27%20OR%201%3D1--"), &w.h), r#""' OR 1=1--""#);
    assert!(matches!(invalid(&p, &query("color=x&color[R]=1"), &w.h), Invalid::Malformed(_)));
}

/// Stripe's shapes: nesting at any depth, arrays as `a[]`, `a[0]`, repeated or one plain key,
/// arrays of objects, `anyOf` scalars as plain keys, `""` for "unset".
#[test]
fn deep_object_any_depth_and_client_array_forms() {
    let mut h = Fake::default();
    let s = h.t(S);
    let int = h.t(I);
    let b = h.t(TypeSet::BOOLEAN);
    let city = h.object(&[("city", s), ("line1", s)]);
    let details = h.object(&[("address", city), ("name", s)]);
    let pmd = h.object(&[("billing_details", details), ("type", s)]);
    let expand = h.array(s);
    let item = h.object(&[("price", s), ("quantity", int)]);
    let items = h.array(item);
    // anyOf: [boolean, string]; anyOf: [object, integer]; anyOf: [array, enum [""]].
    let off = h.t(TypeSet::BOOLEAN | S);
    let range = h.add(TypeSet::OBJECT | I, None, &[("gt", int), ("lt", int)], None);
    let tax = h.add(TypeSet::ARRAY | S, Some(s), &[], None);
    let body = h.object(&[("payment_method_data", pmd), ("expand", expand), ("items", items), ("off_session", off), ("created", range), ("tax_rates", tax), ("confirm", b)]);
    let p = param("b", ParamIn::Query, Style::DeepObject, true, Some(body));
    let j = |q: &str| json(&p, &query(q), &h);
    assert_eq!(j("b[payment_method_data][billing_details][address][city]=Paris"), r#"{"payment_method_data":{"billing_details":{"address":{"city":"Paris"}}}}"#);
    assert_eq!(j("b%5Bpayment_method_data%5D%5Btype%5D=card"), r#"{"payment_method_data":{"type":"card"}}"#);
    for q in ["b[expand][]=x&b[expand][]=y", "b[expand][0]=x&b[expand][1]=y", "b[expand]=x&b[expand]=y", "b[expand][1]=y&b[expand][0]=x"] {
        assert_eq!(j(q), r#"{"expand":["x","y"]}"#, "{q}");
    }
    assert_eq!(j("b[expand]=x"), r#"{"expand":["x"]}"#);
    // Indices in numeric order, not text order.
    let many: Vec<String> = (0..12).rev().map(|i| format!("b[expand][{i}]={i}")).collect();
    let want: Vec<String> = (0..12).map(|i| format!("\"{i}\"")).collect();
    assert_eq!(j(&many.join("&")), format!(r#"{{"expand":[{}]}}"#, want.join(",")));
    assert_eq!(j("b[items][0][price]=p1&b[items][1][price]=p2&b[items][0][quantity]=2"), r#"{"items":[{"price":"p1","quantity":2},{"price":"p2"}]}"#);
    assert_eq!(j("b[off_session]=true&b[confirm]=false"), r#"{"confirm":false,"off_session":true}"#);
    assert_eq!(j("b[off_session]=recurring"), r#"{"off_session":"recurring"}"#);
    assert_eq!(j("b[created]=1700000000"), r#"{"created":1700000000}"#);
    assert_eq!(j("b[created][gt]=5"), r#"{"created":{"gt":5}}"#);
    assert_eq!(j("b[tax_rates]="), r#"{"tax_rates":""}"#);
    assert_eq!(j("b[tax_rates][0]=txr_1"), r#"{"tax_rates":["txr_1"]}"#);
    // `[]` under a key the schema does not describe: one array element per occurrence.
    assert_eq!(j("b[extra][]=1&b[extra][]=2"), r#"{"extra":["1","2"]}"#);
    // A repeated scalar is still a duplicate.
    assert_eq!(invalid(&p, &query("b[confirm]=true&b[confirm]=false"), &h), Invalid::Duplicate);
    // Nesting is bounded.
    let deep = format!("b{}=1", "[k]".repeat(MAX_DEEP_OBJECT_DEPTH + 1));
    assert_eq!(invalid(&p, &query(&deep), &h), Invalid::BadBrackets);
    let ok = format!("b{}=1", "[k]".repeat(MAX_DEEP_OBJECT_DEPTH));
    assert!(json(&p, &query(&ok), &h).contains(r#"{"k":"1"}"#));
    // A top-level deepObject parameter read from its plain key: Stripe's `created=` and `expand=`.
    let created = param("created", ParamIn::Query, Style::DeepObject, true, Some(range));
    assert_eq!(json(&created, &query("created=1700000000"), &h), "1700000000");
    assert_eq!(json(&created, &query("created[gt]=1&created[lt]=2"), &h), r#"{"gt":1,"lt":2}"#);
    let ex = param("expand", ParamIn::Query, Style::DeepObject, true, Some(expand));
    assert_eq!(json(&ex, &query("expand[]=data.customer"), &h), r#"["data.customer"]"#);
    assert_eq!(json(&ex, &query("expand=data.customer"), &h), r#"["data.customer"]"#);
}

#[test]
fn deep_object_one_nested_level_and_arrays() {
    let mut h = Fake::default();
    let int = h.t(I);
    let s = h.t(S);
    let tags = h.array(s);
    let size = h.object(&[("w", int), ("h", int)]);
    let filter = h.object(&[("size", size), ("tags", tags), ("name", s)]);
    let p = param("f", ParamIn::Query, Style::DeepObject, true, Some(filter));
    let out = json(&p, &query("f[size][w]=3&f[name]=x&f[size][h]=4&f[tags]=a&f[tags]=b"), &h);
    assert_eq!(out, r#"{"name":"x","size":{"h":4,"w":3},"tags":["a","b"]}"#);
    assert!(matches!(invalid(&p, &query("f[size]=1&f[size][w]=2"), &h), Invalid::Malformed(_)));
    assert_eq!(json(&p, &query("f[tags][]=a"), &h), r#"{"tags":["a"]}"#);
    // deepObject outside the query is not a thing.
    let bad = param("f", ParamIn::Path, Style::DeepObject, true, Some(filter));
    assert_eq!(invalid(&bad, &path(&[("f", "x")]), &h), Invalid::UnsupportedStyle);
}

// ----- coercion -----

#[test]
fn scalar_coercion() {
    let mut h = Fake::default();
    let int = h.t(I);
    let num = h.t(TypeSet::NUMBER);
    let b = h.t(TypeSet::BOOLEAN);
    let nint = h.t(I | TypeSet::NULL);
    let any = h.t(TypeSet::ANY);
    let q = |s, v: &str| {
        let p = param("v", ParamIn::Query, Style::Form, true, Some(s));
        json(&p, &query(&format!("v={v}")), &h)
    };
    assert_eq!(q(int, "5"), "5");
    assert_eq!(q(int, "-12"), "-12");
    assert_eq!(q(int, "05"), r#""05""#);
    assert_eq!(q(int, "%2B5"), r#""+5""#);
    assert_eq!(q(int, "abc"), r#""abc""#);
    assert_eq!(q(int, "1.5"), "1.5"); // a number: the schema reports "not an integer"
    assert_eq!(q(num, "-1.5e3"), "-1.5e3");
    assert_eq!(q(num, ".5"), r#"".5""#);
    assert_eq!(q(num, "NaN"), r#""NaN""#);
    assert_eq!(q(b, "true"), "true");
    assert_eq!(q(b, "TRUE"), r#""TRUE""#);
    assert_eq!(q(nint, "null"), "null");
    assert_eq!(q(int, "null"), r#""null""#);
    assert_eq!(q(any, "5"), r#""5""#);
    // No schema: any type, kept as a string.
    let p = param("v", ParamIn::Query, Style::Form, true, None);
    assert_eq!(json(&p, &query("v=5"), &h), r#""5""#);
}

#[test]
fn json_numbers_and_strings() {
    for ok in ["0", "-0", "5", "10", "1.25", "1e5", "1E+5", "-2.5e-3"] {
        assert!(is_json_number(ok), "{ok}");
    }
    for bad in ["", "-", "01", "+1", "1.", ".1", "1e", "1e+", "0x10", "1 ", "Infinity"] {
        assert!(!is_json_number(bad), "{bad}");
    }
    let mut s = String::new();
    write_json_str(&mut s, "a\"b\\c\n\u{1}\u{7f}é");
    assert_eq!(s, "\"a\\\"b\\\\c\\n\\u0001\u{7f}é\"");
    s.clear();
    write_json_bytes_latin1(&mut s, &[0, b'a', 0xff, b'"']);
    assert_eq!(s, "\"\\u0000a\u{ff}\\\"\"");
}

#[test]
fn json_validator() {
    for ok in [r#"{"a":[1,2,{"b":null}],"c":"\u00e9"}"#, " [ ] ", "1", r#""x""#, "true", r#"{"a" : {} }"#] {
        assert_eq!(validate_json(ok.as_bytes()), Ok(()), "{ok}");
    }
    for bad in ["", "{", "[1,]", r#"{"a"}"#, r#"{"a":1,}"#, "01", "[1 2]", "tru", r#""\x""#, "{} {}", "[\"\u{1}\"]", "{1:2}"] {
        assert!(validate_json(bad.as_bytes()).is_err(), "{bad}");
    }
    let deep = "[".repeat(10_000);
    assert_eq!(validate_json(deep.as_bytes()).unwrap_err().message, "nesting too deep");
    let ok_deep = format!("{}{}", "[".repeat(128), "]".repeat(128));
    assert_eq!(validate_json(ok_deep.as_bytes()), Ok(()));
}

// ----- percent-encoding -----

#[test]
fn percent_decoding_edge_cases() {
    let mut s = Vec::new();
    assert_eq!(percent_decode(b"a%2Fb", DecodeMode::Form, &mut s), Ok("a/b"));
    assert_eq!(percent_decode(b"a+b", DecodeMode::Form, &mut s), Ok("a b"));
    assert_eq!(percent_decode(b"a+b", DecodeMode::Path, &mut s), Ok("a+b"));
    assert_eq!(percent_decode(b"a%2Bb", DecodeMode::Form, &mut s), Ok("a+b"));
    assert_eq!(percent_decode(b"%00", DecodeMode::Form, &mut s), Ok("\0"));
    assert_eq!(percent_decode(b"%e2%82%ac", DecodeMode::Form, &mut s), Ok("€"));
    assert_eq!(percent_decode(b"%C0%AF", DecodeMode::Form, &mut s), Err(DecodeError::BadUtf8)); // overlong '/'
    assert_eq!(percent_decode(b"%ED%A0%80", DecodeMode::Form, &mut s), Err(DecodeError::BadUtf8)); // surrogate
    assert_eq!(percent_decode(b"%E2%82", DecodeMode::Form, &mut s), Err(DecodeError::BadUtf8)); // truncated
    assert_eq!(percent_decode(b"\xff", DecodeMode::Form, &mut s), Err(DecodeError::BadUtf8));
    assert_eq!(percent_decode(b"%zz", DecodeMode::Form, &mut s), Err(DecodeError::BadPercent));
    assert_eq!(percent_decode(b"%4", DecodeMode::Path, &mut s), Err(DecodeError::BadPercent));
    assert_eq!(percent_decode(b"100%", DecodeMode::Form, &mut s), Err(DecodeError::BadPercent));
    assert_eq!(percent_decode(b"100%", DecodeMode::Cookie, &mut s), Ok("100%"));
    assert_eq!(percent_decode(b"a%20b", DecodeMode::None, &mut s), Ok("a%20b"));
}

#[test]
fn parameter_decode_errors_are_per_parameter() {
    let w = world();
    let p = param("id", ParamIn::Query, Style::Form, true, Some(w.prim));
    assert_eq!(invalid(&p, &query("id=%zz&x=1"), &w.h), Invalid::Decode(DecodeError::BadPercent));
    assert_eq!(invalid(&p, &query("id=%C0%AF"), &w.h), Invalid::Decode(DecodeError::BadUtf8));
    // Another parameter's bad encoding does not affect this one.
    assert_eq!(json(&p, &query("id=1&x=%zz"), &w.h), r#""1""#);
    // NUL is data, escaped in the JSON.
    assert_eq!(json(&p, &query("id=a%00b"), &w.h), r#""a\u0000b""#);
    assert_eq!(json(&p, &query("id=a+b%2Fc"), &w.h), r#""a b/c""#);
}

#[test]
fn encoded_delimiters_are_data() {
    let w = world();
    let p = param("color", ParamIn::Path, Style::Simple, false, Some(w.arr));
    assert_eq!(json(&p, &path(&[("color", "a%2Cb,c")]), &w.h), r#"["a,b","c"]"#);
    let p = param("color", ParamIn::Query, Style::Form, false, Some(w.arr));
    assert_eq!(json(&p, &query("color=a%2Cb,c%26d"), &w.h), r#"["a,b","c&d"]"#);
    let p = param("x", ParamIn::Path, Style::Simple, false, Some(w.prim));
    assert_eq!(json(&p, &path(&[("x", "a+b%20c")]), &w.h), r#""a+b c""#);
}

// ----- query parser -----

#[test]
fn query_parser_pairs() {
    let mut q = Query::default();
    q.parse(b"a=1&b=&c&&d=x=y&a=2&%61%62=3&bad%zz=4&n+m=5").unwrap();
    let got: Vec<_> = q.iter().map(|p| (p.name, p.raw_value, p.has_eq, p.name_error)).collect();
    assert_eq!(
        got,
        vec![
            ("a", &b"1"[..], true, None),
            ("b", &b""[..], true, None),
            ("c", &b""[..], false, None),
            ("d", &b"x=y"[..], true, None),
            ("a", &b"2"[..], true, None),
            ("ab", &b"3"[..], true, None),
            ("bad%zz", &b"4"[..], true, Some(DecodeError::BadPercent)),
            ("n m", &b"5"[..], true, None),
        ]
    );
    // Reuse: the previous content is gone.
    q.parse(b"z=9").unwrap();
    assert_eq!(q.len(), 1);
    assert_eq!(q.get(0).name, "z");
    q.parse(b"").unwrap();
    assert!(q.is_empty());
}

#[test]
fn query_parser_limit() {
    let mut q = Query::with_limit(3);
    assert_eq!(q.parse(b"a&b&c&d"), Err(QueryError::TooManyPairs { limit: 3 }));
    assert_eq!(q.len(), 3);
    assert_eq!(q.parse(b"a&b&c"), Ok(()));
}

#[test]
fn duplicates_and_empty_values() {
    let w = world();
    let p = param("id", ParamIn::Query, Style::Form, true, Some(w.int));
    assert_eq!(invalid(&p, &query("id=1&id=2"), &w.h), Invalid::Duplicate);
    assert_eq!(json(&p, &query("id=1"), &w.h), "1");
    assert_eq!(run(&p, &query("x=1"), &w.h).0, Decoded::Missing);
    // By default (`EmptyValues::Schema`) an empty value is "" for the schema to judge.
    assert_eq!(json(&p, &query("id="), &w.h), r#""""#);
    assert_eq!(json(&p, &query("id"), &w.h), r#""""#);
    let tags = param("tags", ParamIn::Query, Style::Form, true, Some(w.arr));
    assert_eq!(json(&tags, &query("tags="), &w.h), r#"[""]"#);
    let s = param("s", ParamIn::Query, Style::Form, true, Some(w.prim));
    assert_eq!(json(&s, &query("s="), &w.h), r#""""#);
    let mut e = param("id", ParamIn::Query, Style::Form, true, Some(w.int));
    e.allow_empty_value = true;
    assert_eq!(run(&e, &query("id="), &w.h).0, Decoded::Empty);
    assert_eq!(run(&e, &query("id"), &w.h).0, Decoded::Empty);
    assert_eq!(json(&e, &query("id=3"), &w.h), "3");
    // `reject`: the letter of OpenAPI 3.0.3 (allowEmptyValue defaults to false).
    let empty = Decoded::Invalid(Invalid::Malformed("empty value (allowEmptyValue is false)"));
    let mut reject = ParamDecoder::new();
    reject.options.empty_values = EmptyValues::Reject;
    for q in ["id=", "id"] {
        assert_eq!(run_with(&mut reject, &p, std::slice::from_ref(&p), &query(q), &w.h).0, empty, "{q}");
    }
    assert_eq!(run_with(&mut reject, &e, std::slice::from_ref(&e), &query("id="), &w.h).0, Decoded::Empty);
    // `allow`: an empty value is not validated; a non-empty occurrence beside it still is.
    let mut allow = ParamDecoder::new();
    allow.options.empty_values = EmptyValues::Allow;
    assert_eq!(run_with(&mut allow, &p, std::slice::from_ref(&p), &query("id="), &w.h).0, Decoded::Empty);
    let (d, out) = run_with(&mut allow, &tags, std::slice::from_ref(&tags), &query("tags=&tags=a"), &w.h);
    assert_eq!((d, out.as_str()), (Decoded::Json, r#"["","a"]"#));
}

#[test]
fn strict_reserved() {
    let w = world();
    let mut dec = ParamDecoder::new();
    dec.options.strict_reserved = true;
    let p = param("q", ParamIn::Query, Style::Form, true, Some(w.prim));
    let (d, _) = run_with(&mut dec, &p, std::slice::from_ref(&p), &query("q=a/b"), &w.h);
    assert_eq!(d, Decoded::Invalid(Invalid::UnencodedReserved(b'/')));
    let (d, out) = run_with(&mut dec, &p, std::slice::from_ref(&p), &query("q=a%2Fb"), &w.h);
    assert_eq!((d, out.as_str()), (Decoded::Json, r#""a/b""#));
    let mut r = param("q", ParamIn::Query, Style::Form, true, Some(w.prim));
    r.allow_reserved = true;
    let (d, out) = run_with(&mut dec, &r, std::slice::from_ref(&r), &query("q=a/b?c:d@e"), &w.h);
    assert_eq!((d, out.as_str()), (Decoded::Json, r#""a/b?c:d@e""#));
    // The style's own delimiter is not a violation.
    let a = param("q", ParamIn::Query, Style::Form, false, Some(w.arr));
    let (d, out) = run_with(&mut dec, &a, std::slice::from_ref(&a), &query("q=a,b"), &w.h);
    assert_eq!((d, out.as_str()), (Decoded::Json, r#"["a","b"]"#));
    // Lenient by default.
    assert_eq!(json(&p, &query("q=a/b"), &w.h), r#""a/b""#);
}

// ----- headers -----

#[test]
fn headers_case_insensitive_and_combined() {
    let w = world();
    let p = param("X-Rate-Limit", ParamIn::Header, Style::Simple, false, Some(w.int));
    let r = Req { headers: &[("x-rate-limit", " 10 ")], ..NO };
    assert_eq!(json(&p, &r, &w.h), "10");
    let r = Req { headers: &[("X-RATE-LIMIT", "10")], ..NO };
    assert_eq!(json(&p, &r, &w.h), "10");
    assert_eq!(run(&p, &Req { headers: &[("x-other", "1")], ..NO }, &w.h).0, Decoded::Missing);
    let a = param("X-Tags", ParamIn::Header, Style::Simple, false, Some(w.arr));
    let r = Req { headers: &[("x-tags", "a, b"), ("Other", "z"), ("X-Tags", "c")], ..NO };
    assert_eq!(json(&a, &r, &w.h), r#"["a","b","c"]"#);
    // No percent-decoding in headers.
    let s = param("X-S", ParamIn::Header, Style::Simple, false, Some(w.prim));
    assert_eq!(json(&s, &Req { headers: &[("x-s", "a%20b")], ..NO }, &w.h), r#""a%20b""#);
    let o = param("X-O", ParamIn::Header, Style::Simple, true, Some(w.obj));
    assert_eq!(json(&o, &Req { headers: &[("x-o", "R=100, G=200,B=150")], ..NO }, &w.h), OBJ);
    let bin: &[(&str, &[u8])] = &[("x-s", b"\xff")];
    let q = Query::default();
    let c = Cookies::default();
    let no_path: &[(&str, &str)] = &[];
    let src = Sources { path: &no_path, query: &q, headers: &bin, cookies: &c, params: &[] };
    let mut out = String::new();
    assert_eq!(ParamDecoder::new().decode(&s, &src, &w.h, &mut out), Decoded::Invalid(Invalid::Decode(DecodeError::BadUtf8)));
}

// ----- cookies -----

#[test]
fn cookie_parsing() {
    let mut c = Cookies::default();
    c.add_header(b"a=1; b=\"quoted value\";c=; noequals; =empty; d = spaced ").unwrap();
    c.add_header(b"e=2").unwrap();
    let got: Vec<_> = c.iter().collect();
    assert_eq!(got, vec![(&b"a"[..], &b"1"[..]), (b"b", b"quoted value"), (b"c", b""), (b"d", b"spaced"), (b"e", b"2")]);
    c.clear();
    assert!(c.is_empty());
    let mut small = Cookies::with_limit(1);
    assert_eq!(small.add_header(b"a=1; b=2"), Err(TooManyCookies { limit: 1 }));
}

#[test]
fn cookie_params() {
    let w = world();
    let p = param("sid", ParamIn::Cookie, Style::Form, true, Some(w.prim));
    assert_eq!(json(&p, &Req { cookies: &["a=1; sid=\"x y\""], ..NO }, &w.h), r#""x y""#);
    assert_eq!(json(&p, &Req { cookies: &["a=1", "sid=abc%20d"], ..NO }, &w.h), r#""abc d""#);
    assert_eq!(json(&p, &Req { cookies: &["sid=100%"], ..NO }, &w.h), r#""100%""#);
    assert_eq!(invalid(&p, &Req { cookies: &["sid=a; sid=b"], ..NO }, &w.h), Invalid::Duplicate);
    assert_eq!(run(&p, &Req { cookies: &["SID=a"], ..NO }, &w.h).0, Decoded::Missing);
    let n = param("n", ParamIn::Cookie, Style::Form, true, Some(w.int));
    assert_eq!(json(&n, &Req { cookies: &["n=42"], ..NO }, &w.h), "42");
    let a = param("t", ParamIn::Cookie, Style::Form, false, Some(w.arr));
    assert_eq!(json(&a, &Req { cookies: &["t=blue,black,brown"], ..NO }, &w.h), ARR);
    let ae = param("t", ParamIn::Cookie, Style::Form, true, Some(w.arr));
    assert_eq!(json(&ae, &Req { cookies: &["t=blue; t=black", "t=brown"], ..NO }, &w.h), ARR);
    let o = param("c", ParamIn::Cookie, Style::Form, true, Some(w.obj));
    assert_eq!(json(&o, &Req { cookies: &["R=100; G=200; B=150; other=1"], ..NO }, &w.h), OBJ);
}

// ----- content parameters -----

#[test]
fn content_params() {
    let w = world();
    let mut p = param("filter", ParamIn::Query, Style::Form, true, Some(w.obj));
    p.content_type = Some("application/json".into());
    assert_eq!(json(&p, &query("filter=%7B%22R%22%3A1%7D"), &w.h), r#"{"R":1}"#);
    assert_eq!(json(&p, &query("filter=+%5B1,2%5D+"), &w.h), "[1,2]");
    assert!(matches!(invalid(&p, &query("filter=%7Bnope"), &w.h), Invalid::NotJson(_)));
    assert_eq!(invalid(&p, &query("filter=1&filter=2"), &w.h), Invalid::Duplicate);
    assert_eq!(run(&p, &NO, &w.h).0, Decoded::Missing);
    let mut h = param("X-Json", ParamIn::Header, Style::Simple, false, None);
    h.content_type = Some("application/vnd.api+json".into());
    assert_eq!(json(&h, &Req { headers: &[("x-json", r#"{"a": "b"}"#)], ..NO }, &w.h), r#"{"a": "b"}"#);
    let mut t = param("note", ParamIn::Query, Style::Form, true, None);
    t.content_type = Some("text/plain".into());
    assert_eq!(json(&t, &query("note=%7Bhi"), &w.h), r#""{hi""#);
}

// ----- unknown query parameters -----

#[test]
fn unknown_query_parameters() {
    let w = world();
    let params = [
        param("id", ParamIn::Query, Style::Form, true, Some(w.int)),
        param("color", ParamIn::Query, Style::DeepObject, true, Some(w.obj)),
        param("rgb", ParamIn::Query, Style::Form, true, Some(w.obj)),
        param("id", ParamIn::Header, Style::Simple, false, Some(w.int)),
    ];
    let mut q = Query::default();
    q.parse(b"id=1&color[R]=1&R=2&G=3&zzz=3&colorX=1&Id=2&B=4").unwrap();
    let mut out = Vec::new();
    unknown_query_params(&params, &w.h, &q, &mut out);
    let names: Vec<_> = out.iter().map(|&i| q.get(i).name).collect();
    assert_eq!(names, vec!["zzz", "colorX", "Id"]);
}

#[test]
fn path_missing() {
    let w = world();
    let p = param("id", ParamIn::Path, Style::Simple, false, Some(w.int));
    assert_eq!(run(&p, &path(&[("other", "1")]), &w.h).0, Decoded::Missing);
    assert_eq!(json(&p, &path(&[("id", "42")]), &w.h), "42");
    let _ = w.prim;
}

#[test]
fn decoder_reuse_gives_same_results() {
    let w = world();
    let mut dec = ParamDecoder::new();
    let p = param("color", ParamIn::Query, Style::DeepObject, true, Some(w.obj));
    let q = param("id", ParamIn::Query, Style::Form, true, Some(w.int));
    let req = query("color[R]=100&color[G]=200&color[B]=150&id=7");
    for _ in 0..3 {
        assert_eq!(run_with(&mut dec, &p, &[], &req, &w.h).1, OBJ);
        assert_eq!(run_with(&mut dec, &q, &[], &req, &w.h).1, "7");
    }
}
