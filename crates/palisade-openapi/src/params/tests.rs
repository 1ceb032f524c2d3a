//! Parameter decoding: every row of the OpenAPI "Style Examples" table, percent-encoding edge
//! cases, duplicates, empty values, headers, cookies, content parameters, unknown parameters.

use super::*;
use palisade_body::json::write_json_str;

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
    // `color=`: the empty string; for an array one empty item, which the items' schema judges.
    assert_eq!(json(&p(w.prim), &query("color="), &w.h), r#""""#);
    assert_eq!(json(&p(w.arr), &query("color="), &w.h), r#"[""]"#);
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
    assert_eq!(invalid(&p, &query("color[R][=1"), &w.h), Invalid::BadBrackets);
    // Only `][` separates keys: a lone bracket is part of a key.
    assert_eq!(json(&p, &query("color[R[x]]=1"), &w.h), r#"{"R[x]":"1"}"#);
    assert_eq!(json(&p, &query("color[a]b][c[]=1"), &w.h), r#"{"a]b":{"c[":"1"}}"#);
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
    let body = h.object(&[
        ("payment_method_data", pmd),
        ("expand", expand),
        ("items", items),
        ("off_session", off),
        ("created", range),
        ("tax_rates", tax),
        ("confirm", b),
    ]);
    let p = param("b", ParamIn::Query, Style::DeepObject, true, Some(body));
    let j = |q: &str| json(&p, &query(q), &h);
    assert_eq!(
        j("b[payment_method_data][billing_details][address][city]=Paris"),
        r#"{"payment_method_data":{"billing_details":{"address":{"city":"Paris"}}}}"#
    );
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
    // An empty value for an object-only schema is the empty object; where a scalar is
    // admitted too, it stays the empty string.
    assert_eq!(j("b[payment_method_data]="), r#"{"payment_method_data":{}}"#);
    assert_eq!(j("b[created]="), r#"{"created":""}"#);
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

// ----- property test: decoding what a reference serializer writes -----

/// A reference serializer written from the OpenAPI "Style Values" table and RFC 6570, and
/// from the bracket convention of form libraries (Stripe's SDKs, `qs`, Rack) for deepObject
/// values deeper than one level: random schemas, random values, serialized in every form a
/// client may choose, must decode to exactly the value (canonical JSON, keys sorted).
mod reference {
    use super::*;
    use palisade_testkit::rng::Rng;

    #[derive(Clone, Debug)]
    pub(super) enum Kind {
        Str,
        Int,
        Bool,
        Arr(Box<Kind>),
        Obj(Vec<(String, Kind)>),
    }

    #[derive(Clone, Debug)]
    pub(super) enum Val {
        Str(String),
        Int(i64),
        Bool(bool),
        Arr(Vec<Val>),
        Obj(Vec<(String, Val)>),
    }

    const KEY_CHARS: &[char] = &['a', 'b', 'c', 'x', '_', '-', 'é', '0', '7', '[', ']', ' '];
    /// Characters that stress the serialization: delimiters of every style, `%`, `+`, space,
    /// quotes, non-ASCII.
    pub(super) const VALUE_CHARS: &[char] = &['a', 'Z', '5', ' ', '+', '%', '&', '=', ',', ';', '.', '|', '[', ']', '"', '\'', '/', '?', '#', 'é', '€', '😀'];

    /// A key; `][` is the one sequence a bracketed key cannot hold.
    fn key(rng: &mut Rng) -> String {
        loop {
            let k: String = (0..1 + rng.below(6)).map(|_| rng.pick(KEY_CHARS)).collect();
            if !k.contains("][") {
                return k;
            }
        }
    }

    pub(super) fn kind(rng: &mut Rng, depth: usize) -> Kind {
        let leaf = depth >= 4 || rng.chance(35);
        match (leaf, rng.below(3)) {
            (true, 0) => Kind::Str,
            (true, 1) => Kind::Int,
            (true, _) => Kind::Bool,
            (false, 0) => Kind::Arr(Box::new(if rng.chance(50) { kind(rng, 9) } else { kind(rng, depth + 1) })),
            (false, _) => {
                let mut members: Vec<(String, Kind)> = Vec::new();
                while members.len() < 1 + rng.below(4) {
                    let k = key(rng);
                    if !members.iter().any(|(n, _)| *n == k) {
                        members.push((k, kind(rng, depth + 1)));
                    }
                }
                Kind::Obj(members)
            }
        }
    }

    pub(super) fn value(rng: &mut Rng, k: &Kind, chars: &[char]) -> Val {
        match k {
            Kind::Str => Val::Str((0..1 + rng.below(8)).map(|_| rng.pick(chars)).collect()),
            Kind::Int => Val::Int(rng.next_u64() as i64 >> rng.below(63)),
            Kind::Bool => Val::Bool(rng.chance(50)),
            Kind::Arr(item) => Val::Arr((0..1 + rng.below(12)).map(|_| value(rng, item, chars)).collect()),
            // Never empty: an empty object has no serialization in these styles.
            Kind::Obj(members) => {
                let mut out = Vec::new();
                for (i, (n, k)) in members.iter().enumerate() {
                    if i == 0 || rng.chance(80) {
                        out.push((n.clone(), value(rng, k, chars)));
                    }
                }
                Val::Obj(out)
            }
        }
    }

    pub(super) fn schema(h: &mut Fake, k: &Kind) -> SchemaId {
        match k {
            Kind::Str => h.t(S),
            Kind::Int => h.t(I),
            Kind::Bool => h.t(TypeSet::BOOLEAN),
            Kind::Arr(item) => {
                let i = schema(h, item);
                h.array(i)
            }
            Kind::Obj(members) => {
                let props: Vec<(String, SchemaId)> = members.iter().map(|(n, k)| (n.clone(), schema(h, k))).collect();
                let props: Vec<(&str, SchemaId)> = props.iter().map(|(n, s)| (n.as_str(), *s)).collect();
                h.object(&props)
            }
        }
    }

    /// The decoder's documented key order: runs of digits by numeric value, else bytewise.
    fn key_order(a: &str, b: &str) -> std::cmp::Ordering {
        let num = |s: &str| !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit());
        if num(a) && num(b) {
            let (x, y) = (a.trim_start_matches('0'), b.trim_start_matches('0'));
            return (x.len(), x, a).cmp(&(y.len(), y, b));
        }
        a.cmp(b)
    }

    /// Canonical JSON: object keys sorted.
    pub(super) fn json(v: &Val) -> String {
        match v {
            Val::Str(s) => {
                let mut out = String::new();
                write_json_str(&mut out, s);
                out
            }
            Val::Int(n) => n.to_string(),
            Val::Bool(b) => b.to_string(),
            Val::Arr(items) => format!("[{}]", items.iter().map(json).collect::<Vec<_>>().join(",")),
            Val::Obj(members) => {
                let mut m: Vec<&(String, Val)> = members.iter().collect();
                m.sort_by(|a, b| key_order(&a.0, &b.0));
                let parts: Vec<String> = m
                    .iter()
                    .map(|(k, v)| {
                        let mut key = String::new();
                        write_json_str(&mut key, k);
                        format!("{key}:{}", json(v))
                    })
                    .collect();
                format!("{{{}}}", parts.join(","))
            }
        }
    }

    /// RFC 3986 percent-encoding of everything but unreserved characters (RFC 6570 simple
    /// expansion); in forms and queries a space as `+` or `%20` at random, as encoders differ.
    pub(super) fn enc(rng: &mut Rng, s: &str) -> String {
        enc_in(rng, s, true)
    }

    pub(super) fn enc_in(rng: &mut Rng, s: &str, form: bool) -> String {
        let plus = form && rng.chance(50);
        let mut out = String::new();
        for b in s.bytes() {
            match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => out.push(b as char),
                b' ' if plus => out.push('+'),
                _ => out.push_str(&format!("%{b:02X}")),
            }
        }
        out
    }

    fn scalar(v: &Val) -> String {
        match v {
            Val::Str(s) => s.clone(),
            Val::Int(n) => n.to_string(),
            Val::Bool(b) => b.to_string(),
            _ => unreachable!("not a scalar"),
        }
    }

    /// `name=value` pairs of a deepObject value, as a client library writes them: nested
    /// objects as `a[b][c]`, arrays of scalars as `a[]`, `a[0]` or the plain key repeated (the
    /// client's choice, made per array), arrays of objects as `a[0][b]`; brackets sometimes
    /// percent-encoded.
    pub(super) fn deep(rng: &mut Rng, name: &str, v: &Val, out: &mut Vec<String>) {
        let bracket = |rng: &mut Rng, name: &str, k: &str| {
            if rng.chance(20) {
                format!("{name}%5B{}%5D", enc(rng, k))
            } else {
                format!("{name}[{}]", enc(rng, k))
            }
        };
        match v {
            Val::Obj(members) => {
                for (k, m) in members {
                    let n = bracket(rng, name, k);
                    deep(rng, &n, m, out);
                }
            }
            Val::Arr(items) => {
                let scalars = items.iter().all(|i| !matches!(i, Val::Arr(_) | Val::Obj(_)));
                let form = if scalars { rng.below(3) } else { 1 };
                for (i, item) in items.iter().enumerate() {
                    let n = match form {
                        0 => format!("{name}[]"),
                        1 => bracket(rng, name, &i.to_string()),
                        _ => name.to_string(),
                    };
                    deep(rng, &n, item, out);
                }
            }
            _ => {
                let s = scalar(v);
                let e = enc(rng, &s);
                out.push(format!("{name}={e}"));
            }
        }
    }

    /// RFC 6570 expansion of `v` for `style` / `explode` (the "Style Values" table), without
    /// the `name=` of query styles for scalars and non-exploded values (added by the caller).
    pub(super) fn styled(rng: &mut Rng, style: Style, explode: bool, name: &str, v: &Val) -> String {
        let form = matches!(style, Style::Form | Style::SpaceDelimited | Style::PipeDelimited);
        let mut e = |s: &str| enc_in(rng, s, form);
        let items: Vec<String> = match v {
            Val::Arr(items) => items.iter().map(|i| e(&scalar(i))).collect(),
            // `k=v` pieces when exploded, else keys and values alternate as pieces.
            Val::Obj(members) if explode => members.iter().map(|(k, m)| format!("{}={}", e(k), e(&scalar(m)))).collect(),
            Val::Obj(members) => members.iter().flat_map(|(k, m)| [e(k), e(&scalar(m))]).collect(),
            _ => vec![e(&scalar(v))],
        };
        let obj = matches!(v, Val::Obj(_));
        let arr = matches!(v, Val::Arr(_));
        match style {
            Style::Simple => items.join(","),
            Style::Label => format!(".{}", items.join(if explode { "." } else { "," })),
            Style::Matrix if explode && arr => items.iter().map(|i| format!(";{name}={i}")).collect(),
            Style::Matrix if explode && obj => items.iter().map(|i| format!(";{i}")).collect(),
            Style::Matrix => format!(";{name}={}", items.join(",")),
            Style::Form if explode && arr => items.iter().map(|i| format!("{name}={i}")).collect::<Vec<_>>().join("&"),
            Style::Form if explode && obj => items.join("&"),
            Style::Form => format!("{name}={}", items.join(",")),
            Style::SpaceDelimited => format!("{name}={}", items.join("%20")),
            Style::PipeDelimited => format!("{name}={}", items.join("|")),
            Style::DeepObject => unreachable!(),
        }
    }
}

#[test]
fn deep_object_round_trips_what_client_libraries_write() {
    use palisade_testkit::rng::Rng;
    use reference::*;
    let mut rng = Rng::new(0x5eed_0fde);
    let mut dec = ParamDecoder::new();
    let mut form = crate::form::FormDecoder::new();
    for case in 0..3000 {
        // A top-level object, as deepObject parameters and form bodies are; its keys are form
        // field names, where the first `[` starts the brackets.
        let k = loop {
            if let Kind::Obj(m) = kind(&mut rng, 0) {
                if m.iter().all(|(n, _)| !n.contains('[')) {
                    break Kind::Obj(m);
                }
            }
        };
        let v = value(&mut rng, &k, VALUE_CHARS);
        let mut h = Fake::default();
        let s = schema(&mut h, &k);
        let want = json(&v);
        // As a query parameter `p[...]`.
        let mut pairs = Vec::new();
        deep(&mut rng, "p", &v, &mut pairs);
        let q = pairs.join("&");
        let p = param("p", ParamIn::Query, Style::DeepObject, true, Some(s));
        let (d, out) = run_with(&mut dec, &p, std::slice::from_ref(&p), &query(&q), &h);
        let got = if d == Decoded::Missing { "{}".to_string() } else { out };
        assert_eq!(got, want, "case {case}: query {q}");
        // As a form body whose object and array properties are `style: deepObject`.
        let Val::Obj(members) = &v else { unreachable!() };
        let mut fields = Vec::new();
        for (name, m) in members {
            let field = enc(&mut rng, name);
            deep(&mut rng, &field, m, &mut fields);
        }
        let body = fields.join("&");
        let Kind::Obj(props) = &k else { unreachable!() };
        let encoding: Vec<(String, crate::model::Encoding)> = props
            .iter()
            .filter(|(_, k)| matches!(k, Kind::Arr(_) | Kind::Obj(_)))
            .map(|(n, _)| (n.clone(), crate::model::Encoding { style: Some(Style::DeepObject), explode: Some(true), ..Default::default() }))
            .collect();
        let mut out = String::new();
        form.decode(body.as_bytes(), Some(s), &encoding, &h, &mut out).unwrap_or_else(|e| panic!("case {case}: body {body}: {e:?}"));
        assert_eq!(out, want, "case {case}: body {body}");
    }
}

#[test]
fn every_style_round_trips_the_reference_serialization() {
    use palisade_testkit::rng::Rng;
    use reference::*;
    let mut rng = Rng::new(0x57_1e5);
    let mut dec = ParamDecoder::new();
    // (location, style, explode) rows of the "Style Values" table.
    let rows: &[(ParamIn, Style, bool)] = &[
        (ParamIn::Path, Style::Simple, false),
        (ParamIn::Path, Style::Simple, true),
        (ParamIn::Path, Style::Label, false),
        (ParamIn::Path, Style::Label, true),
        (ParamIn::Path, Style::Matrix, false),
        (ParamIn::Path, Style::Matrix, true),
        (ParamIn::Query, Style::Form, false),
        (ParamIn::Query, Style::Form, true),
        (ParamIn::Query, Style::SpaceDelimited, false),
        (ParamIn::Query, Style::PipeDelimited, false),
    ];
    for case in 0..3000 {
        let (location, style, explode) = rows[rng.below(rows.len())];
        let shape = rng.below(3);
        let k = match shape {
            0 => [Kind::Str, Kind::Int, Kind::Bool][rng.below(3)].clone(),
            1 => Kind::Arr(Box::new([Kind::Str, Kind::Int, Kind::Bool][rng.below(3)].clone())),
            _ => Kind::Obj(vec![("R".into(), Kind::Int), ("G".into(), Kind::Str), ("B".into(), Kind::Bool)]),
        };
        if matches!(style, Style::SpaceDelimited | Style::PipeDelimited) && shape == 0 {
            continue; // defined for arrays and objects only
        }
        // Characters the style cannot carry unambiguously even when percent-encoded: the
        // space and pipe styles are split after decoding (the table writes `%20` and `|`).
        // Likewise `.` in label values: it is unreserved, so RFC 6570 never encodes it.
        let ambiguous = |c: &char| match style {
            Style::SpaceDelimited | Style::PipeDelimited => matches!(c, ' ' | '|'),
            Style::Label => *c == '.',
            _ => false,
        };
        let chars: Vec<char> = VALUE_CHARS.iter().copied().filter(|c| !ambiguous(c)).collect();
        let mut v = value(&mut rng, &k, &chars);
        if let Val::Obj(m) = &v {
            if m.is_empty() {
                v = Val::Obj(vec![("R".into(), Val::Int(1))]);
            }
        }
        let mut h = Fake::default();
        let s = schema(&mut h, &k);
        let raw = styled(&mut rng, style, explode, "color", &v);
        let p = param("color", location, style, explode, Some(s));
        let req = match location {
            ParamIn::Path => Req { path: &[("color", raw.as_str())], ..NO },
            _ => query(&raw),
        };
        let (d, out) = run_with(&mut dec, &p, std::slice::from_ref(&p), &req, &h);
        assert_eq!((d, out), (Decoded::Json, json(&v)), "case {case}: {style:?} explode={explode} in {location:?}: {raw}");
    }
}
