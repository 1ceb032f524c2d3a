use std::cell::RefCell;

use super::*;

/// Documents from memory; counts fetches.
pub(crate) struct MemFetch {
    pub docs: HashMap<String, String>,
    pub fetched: RefCell<Vec<String>>,
}

impl MemFetch {
    pub(crate) fn new(docs: &[(&str, &str)]) -> MemFetch {
        MemFetch { docs: docs.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect(), fetched: RefCell::new(Vec::new()) }
    }
}

impl Fetch for MemFetch {
    fn fetch(&self, location: &str) -> Result<String, FetchError> {
        self.fetched.borrow_mut().push(location.to_string());
        self.docs.get(location).cloned().ok_or_else(|| "no such document".into())
    }
}

fn load_mem(docs: &[(&str, &str)]) -> Result<SpecSet, Vec<SpecError>> {
    let f = MemFetch::new(docs);
    load(docs[0].0, &f, &Limits::default())
}

fn messages(r: Result<SpecSet, Vec<SpecError>>) -> Vec<String> {
    match r {
        Ok(_) => panic!("expected errors"),
        Err(e) => e.iter().map(|e| e.to_string()).collect(),
    }
}

const HEAD: &str = "openapi: 3.1.0\ninfo: {title: t, version: '1'}\n";

#[test]
fn join_locations() {
    assert_eq!(join_location("/a/b/api.yaml", "common.yaml"), "/a/b/common.yaml");
    assert_eq!(join_location("/a/b/api.yaml", "../models/pet.yaml"), "/a/models/pet.yaml");
    assert_eq!(join_location("/a/b/api.yaml", "./x/../y.yaml"), "/a/b/y.yaml");
    assert_eq!(join_location("/a/b/api.yaml", "/etc/spec.yaml"), "/etc/spec.yaml");
    assert_eq!(join_location("/a/b/api.yaml", "my%20file.yaml"), "/a/b/my file.yaml");
    assert_eq!(join_location("/a/b/api.yaml", "file:///c/d.yaml"), "/c/d.yaml");
    assert_eq!(join_location("/a/api.yaml", "../../../x.yaml"), "/x.yaml");
    assert_eq!(join_location("https://h.example/specs/v1/api.yaml", "common.yaml"), "https://h.example/specs/v1/common.yaml");
    assert_eq!(join_location("https://h.example/specs/v1/api.yaml?x=1", "../c.yaml"), "https://h.example/specs/c.yaml");
    assert_eq!(join_location("https://h.example/specs/api.yaml", "/root.yaml"), "https://h.example/root.yaml");
    assert_eq!(join_location("https://h.example/specs/api.yaml", "//other.example/a.yaml"), "https://other.example/a.yaml");
    assert_eq!(join_location("/a/api.yaml", "HTTPS://H.example/x/./y.yaml"), "https://h.example/x/y.yaml");
}

#[test]
fn pointers_unescape_and_index() {
    let root = yaml::parse("a/b: {x: 1}\nm~n: 2\nlist: [10, 20]\n'%25': 3\n").unwrap();
    assert_eq!(eval_pointer(&root, "/a~1b/x").unwrap().1, "/a~1b/x");
    assert_eq!(eval_pointer(&root, "/m~0n").unwrap().0.value, Value::Int(2));
    assert_eq!(eval_pointer(&root, "/list/1").unwrap().0.value, Value::Int(20));
    assert!(eval_pointer(&root, "/list/01").is_err());
    assert!(eval_pointer(&root, "/list/2").is_err());
    assert!(eval_pointer(&root, "/m~2n").unwrap_err().message().contains("escape"));
    assert!(eval_pointer(&root, "anchor").unwrap_err().message().contains("anchor"));
    let e = eval_pointer(&root, "/nope").unwrap_err();
    assert_eq!(e.kind(), crate::ErrorKind::Reference);
    assert_eq!(e.message(), "no \"nope\" at the document root");
}

#[test]
fn same_document_refs_with_percent_encoding() {
    let spec = format!("{HEAD}paths: {{}}\ncomponents:\n  schemas:\n    'a b': {{type: string}}\n    'x/y': {{type: integer}}\n    R1: {{$ref: '#/components/schemas/a%20b'}}\n    R2: {{$ref: '#/components/schemas/x~1y'}}\n");
    let set = load_mem(&[("/s/api.yaml", &spec)]).unwrap();
    let r = set.resolve_ref(0, "#/components/schemas/a%20b").unwrap();
    assert_eq!(r.pointer, "/components/schemas/a b");
    assert_eq!(r.node.get("type").unwrap().value, Value::Str("string".into()));
    let r = set.resolve_ref(0, "#/components/schemas/x~1y").unwrap();
    assert_eq!(r.pointer, "/components/schemas/x~1y");
    assert_eq!(set.refs.len(), 2);
    // A fragment that does not percent-decode: the context in front, the decoder's error as
    // the cause.
    let e = set.resolve_ref(0, "#/components/%zz").unwrap_err();
    assert_eq!(e.kind(), crate::ErrorKind::Reference);
    assert_eq!(e.message(), "fragment of \"#/components/%zz\": invalid percent-encoding at byte 12");
    assert!(std::error::Error::source(&e).is_some_and(|c| c.to_string() == "invalid percent-encoding at byte 12"));
    let e = set.resolve_ref(0, "#/components/schemas/nope").unwrap_err();
    assert_eq!(e.message(), "no \"nope\" at /components/schemas in /s/api.yaml");
}

#[test]
fn documents_loaded_once_relative_to_referrer() {
    let api =
        format!("{HEAD}paths: {{}}\ncomponents:\n  schemas:\n    A: {{$ref: 'm/a.yaml#/A'}}\n    B: {{$ref: './m/b.yaml'}}\n    C: {{$ref: 'm/a.yaml#/C'}}\n");
    let f = MemFetch::new(&[
        ("/s/api.yaml", &api),
        ("/s/m/a.yaml", "A: {$ref: 'b.yaml'}\nC: {type: string}\n"),
        ("/s/m/b.yaml", "type: object\nproperties: {self: {$ref: '#'}, up: {$ref: '../api.yaml#/components/schemas/C'}}\n"),
    ]);
    let set = load("/s/api.yaml", &f, &Limits::default()).unwrap();
    assert_eq!(set.docs.len(), 3);
    assert_eq!(*f.fetched.borrow(), ["/s/api.yaml", "/s/m/a.yaml", "/s/m/b.yaml"]);
    // chain api A -> a.yaml A -> b.yaml (whole document)
    let a = set.entry().root.get("components").unwrap().get("schemas").unwrap().get("A").unwrap();
    let (doc, ptr, node) = set.deref(0, "/components/schemas/A", a).unwrap();
    assert_eq!(set.doc(doc).location, "/s/m/b.yaml");
    assert_eq!(ptr, "");
    assert!(node.get("properties").is_some());
    // and Resolver resolves relative to the referring document
    use palisade_schema::Resolver as _;
    let up = set.resolve(doc, "../api.yaml#/components/schemas/C").unwrap();
    assert_eq!((up.doc, up.pointer.as_str()), (0, "/components/schemas/C"));
}

#[test]
fn refs_in_data_are_not_followed() {
    let api = format!(
        "{HEAD}paths: {{}}\ncomponents:\n  schemas:\n    A:\n      type: object\n      example: {{$ref: 'nope.yaml'}}\n      default: {{$ref: 'nope.yaml'}}\n      enum: [{{$ref: 'nope.yaml'}}]\n      x-thing: {{$ref: 'nope.yaml'}}\n      properties:\n        default: {{$ref: '#/components/schemas/B'}}\n    B: {{type: string}}\n"
    );
    let set = load_mem(&[("/s/api.yaml", &api)]).unwrap();
    assert_eq!(set.refs.len(), 1);
    assert_eq!(set.refs[0].pointer, "/components/schemas/A/properties/default");
}

#[test]
fn errors_are_collected_and_located() {
    let api = format!("{HEAD}paths: {{}}\ncomponents:\n  schemas:\n    A: {{$ref: '#/components/schemas/Nope'}}\n    B: {{$ref: 'missing.yaml#/B'}}\n    C: {{$ref: 'bad.yaml'}}\n");
    let errs = messages(load_mem(&[("/s/api.yaml", &api), ("/s/bad.yaml", "a: [1,\n")]));
    assert_eq!(errs.len(), 3, "{errs:?}");
    assert!(
        errs.iter().any(|e| e
            .starts_with("/s/api.yaml:6:15: #/components/schemas/A/$ref: unresolved $ref \"#/components/schemas/Nope\": no \"Nope\" at /components/schemas")),
        "{errs:?}"
    );
    assert!(errs.iter().any(|e| e.starts_with("/s/api.yaml:7:15: #/components/schemas/B/$ref: cannot read /s/missing.yaml: no such document")), "{errs:?}");
    assert!(errs.iter().any(|e| e.starts_with("/s/bad.yaml:") && e.contains("syntax")), "{errs:?}");
}

#[test]
fn ref_cycles_print_the_chain() {
    let api = format!("{HEAD}paths: {{}}\ncomponents:\n  schemas:\n    A: {{$ref: '#/components/schemas/B'}}\n    B: {{$ref: '#/components/schemas/A'}}\n    S: {{$ref: '#/components/schemas/S'}}\n    Tree: {{type: object, properties: {{kids: {{type: array, items: {{$ref: '#/components/schemas/Tree'}}}}}}}}\n");
    let errs = messages(load_mem(&[("/s/api.yaml", &api)]));
    assert_eq!(errs.len(), 2, "one error per cycle, the recursive schema is fine: {errs:?}");
    assert!(
        errs[0].contains("$ref cycle: /s/api.yaml#/components/schemas/A -> /s/api.yaml#/components/schemas/B -> /s/api.yaml#/components/schemas/A"),
        "{errs:?}"
    );
    assert!(errs[1].contains("$ref cycle: /s/api.yaml#/components/schemas/S -> /s/api.yaml#/components/schemas/S"), "{errs:?}");
}

#[test]
fn versions() {
    let errs = messages(load_mem(&[("/s/api.yaml", "swagger: '2.0'\ninfo: {}\n")]));
    assert!(errs[0].contains("Swagger/OpenAPI 2.0 is not supported"), "{errs:?}");
    let errs = messages(load_mem(&[("/s/api.yaml", "openapi: 4.0.0\n")]));
    assert!(errs[0].contains("unsupported OpenAPI version \"4.0.0\""), "{errs:?}");
    let errs = messages(load_mem(&[("/s/api.yaml", "info: {}\n")]));
    assert!(errs[0].contains("missing \"openapi\""), "{errs:?}");
    let errs = messages(load_mem(&[("/s/api.yaml", "- a\n")]));
    assert!(errs[0].contains("mapping"), "{errs:?}");
    let set = load_mem(&[("/s/api.yaml", "openapi: 3.0\npaths: {}\n")]).unwrap();
    assert_eq!(set.version, Version::V30);
    let set = load_mem(&[("/s/api.yaml", "openapi: 3.1.1\n")]).unwrap();
    assert_eq!((set.version, set.version_text.as_str()), (Version::V31, "3.1.1"));
    // JSON is read too
    let set =
        load_mem(&[("/s/api.json", "{\"openapi\": \"3.0.2\", \"paths\": {\"/a\": {\"get\": {\"responses\": {\"200\": {\"description\": \"x\"}}}}}}")]).unwrap();
    assert_eq!(set.version, Version::V30);
}

#[test]
fn limits_are_enforced() {
    let api = format!("{HEAD}paths: {{}}\ncomponents:\n  schemas:\n    A: {{$ref: 'a.yaml'}}\n    B: {{$ref: 'b.yaml'}}\n");
    let f = MemFetch::new(&[("/s/api.yaml", &api), ("/s/a.yaml", "type: string\n"), ("/s/b.yaml", "type: string\n")]);
    let errs = load("/s/api.yaml", &f, &Limits { max_documents: 2, ..Limits::default() }).unwrap_err();
    assert_eq!(errs.len(), 1);
    assert!(errs[0].message.contains("more than 2 documents"), "{errs:?}");
    let errs = load("/s/api.yaml", &f, &Limits { max_total_bytes: api.len() + 5, ..Limits::default() }).unwrap_err();
    assert!(errs[0].message.contains("exceed"), "{errs:?}");
    let errs = load("/s/api.yaml", &f, &Limits { max_total_bytes: 10, ..Limits::default() }).unwrap_err();
    assert!(errs[0].message.contains("more than the limit"), "{errs:?}");
    let deep = format!("{HEAD}x: {}1{}\n", "[".repeat(40), "]".repeat(40));
    let errs = load_str("/s/api.yaml", &deep, &f, &Limits { max_depth: 20, ..Limits::default() }).unwrap_err();
    assert!(errs[0].message.contains("nesting deeper than 20"), "{errs:?}");
    // specs may nest deeper than configuration files
    assert!(load_str("/s/api.yaml", &deep, &f, &Limits::default()).is_ok());
}

#[test]
fn fs_fetch_refuses_urls() {
    assert!(FsFetch.fetch("https://example.com/x.yaml").unwrap_err().message.contains("http"));
    assert!(FsFetch.fetch("/definitely/not/here.yaml").is_err());
}

#[test]
fn refs_only_where_the_spec_defines_references() {
    // `$ref` keys in example values (media type and component examples), in parameter
    // examples, in data of unknown keywords and extensions: none is a reference, none is
    // fetched.
    let api = format!(
        "{HEAD}paths:\n  /a:\n    get:\n      parameters:\n        - name: q\n          in: query\n          schema: {{type: string}}\n          examples: {{one: {{value: {{$ref: 'https://h.example/q'}}}}}}\n      responses:\n        '200':\n          description: ok\n          content:\n            application/json:\n              schema: {{$ref: '#/components/schemas/Member'}}\n              example: {{$ref: 'https://h.example/e'}}\n              examples:\n                list: {{value: {{members: [{{$ref: 'https://h.example/users/1'}}]}}}}\n                shared: {{$ref: '#/components/examples/Shared'}}\ncomponents:\n  examples:\n    Shared: {{summary: s, value: {{$ref: 'https://h.example/users/2'}}}}\n  schemas:\n    Member:\n      type: object\n      properties:\n        $ref: {{type: string}}\n        value: {{type: string}}\n      x-data: {{$ref: 'https://h.example/x'}}\n      unknownKeyword: {{$ref: 'https://h.example/u'}}\n      const: {{$ref: 'https://h.example/c'}}\n"
    );
    let f = MemFetch::new(&[("/s/api.yaml", &api)]);
    let set = load("/s/api.yaml", &f, &Limits::default()).unwrap();
    assert_eq!(*f.fetched.borrow(), ["/s/api.yaml"]);
    let mut ptrs: Vec<&str> = set.refs.iter().map(|r| r.pointer.as_str()).collect();
    ptrs.sort();
    assert_eq!(
        ptrs,
        ["/paths/~1a/get/responses/200/content/application~1json/examples/shared", "/paths/~1a/get/responses/200/content/application~1json/schema"]
    );
}

#[test]
fn refs_in_referenced_documents_are_found_by_the_kind_of_the_referrer() {
    // a parameter file: its schema's `$ref` is followed, its example's is not
    let api = format!("{HEAD}paths:\n  /a:\n    get:\n      parameters: [{{$ref: 'p.yaml'}}]\n      responses: {{'200': {{description: ok}}}}\n");
    let f = MemFetch::new(&[
        ("/s/api.yaml", &api),
        ("/s/p.yaml", "name: q\nin: query\nschema: {$ref: 's.yaml'}\nexample: {$ref: 'nope.yaml'}\n"),
        ("/s/s.yaml", "type: object\nproperties: {n: {$ref: '#/$defs/N'}}\n$defs: {N: {type: integer}}\n"),
    ]);
    let set = load("/s/api.yaml", &f, &Limits::default()).unwrap();
    assert_eq!(*f.fetched.borrow(), ["/s/api.yaml", "/s/p.yaml", "/s/s.yaml"]);
    assert_eq!(set.refs.len(), 3, "{:?}", set.refs);
}

#[test]
fn remote_refs_in_a_local_spec_are_refused_unless_allowed() {
    let api = format!("{HEAD}paths: {{}}\ncomponents:\n  schemas:\n    A: {{$ref: 'https://h.example/a.yaml'}}\n");
    let f = MemFetch::new(&[("/s/api.yaml", &api), ("https://h.example/a.yaml", "type: string\n")]);
    let errs = load("/s/api.yaml", &f, &Limits::default()).unwrap_err();
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(
        errs[0].to_string().starts_with("/s/api.yaml:6:15: #/components/schemas/A/$ref: reference to the remote document https://h.example/a.yaml"),
        "{errs:?}"
    );
    assert_eq!(*f.fetched.borrow(), ["/s/api.yaml"], "nothing fetched over the network");
    let set = load("/s/api.yaml", &f, &Limits { remote_refs: true, ..Limits::default() }).unwrap();
    assert_eq!(set.docs.len(), 2);
    // a spec fetched by URL may refer to other URLs (and relative ones are URLs)
    let api2 = format!("{HEAD}paths: {{}}\ncomponents:\n  schemas:\n    A: {{$ref: 'a.yaml'}}\n");
    let f = MemFetch::new(&[("https://h.example/api.yaml", &api2), ("https://h.example/a.yaml", "type: string\n")]);
    assert_eq!(load("https://h.example/api.yaml", &f, &Limits::default()).unwrap().docs.len(), 2);
    // and not to local files
    let api3 = format!("{HEAD}paths: {{}}\ncomponents:\n  schemas:\n    A: {{$ref: 'file:///etc/passwd'}}\n");
    let f = MemFetch::new(&[("https://h.example/api.yaml", &api3), ("/etc/passwd", "type: string\n")]);
    let errs = load("https://h.example/api.yaml", &f, &Limits::default()).unwrap_err();
    assert!(errs[0].message.contains("reference to the local file /etc/passwd in a spec fetched by URL"), "{errs:?}");
    assert_eq!(*f.fetched.borrow(), ["https://h.example/api.yaml"]);
}

#[test]
fn json_is_parsed_as_json_with_locations() {
    // surrogate pairs (a YAML parser refuses them), big integers, locations of keys and values
    let api = "{\n  \"openapi\": \"3.0.3\",\n  \"info\": {\"title\": \"\\ud83d\\udc4d\", \"version\": \"1\"},\n  \"paths\": {},\n  \"x-big\": 123456789012345678901234567890,\n  \"components\": {\"schemas\": {\"A\": {\"$ref\": \"#/components/schemas/Nope\"}}}\n}\n";
    let errs = load_mem(&[("/s/api.json", api)]).unwrap_err();
    assert_eq!(errs.len(), 1);
    assert_eq!(
        errs[0].to_string(),
        "/s/api.json:6:44: #/components/schemas/A/$ref: unresolved $ref \"#/components/schemas/Nope\": no \"Nope\" at /components/schemas in /s/api.json"
    );
    let ok = api.replace("Nope", "B\"}, \"B\": {\"type\": \"string");
    let set = load_mem(&[("/s/api.json", &ok)]).unwrap();
    let info = set.entry().root.get("info").unwrap();
    assert_eq!(info.get("title").unwrap().value, Value::Str("\u{1f44d}".into()));
    assert_eq!(info.get("title").unwrap().origin, Origin::File { line: 3, col: 21 });
    assert_eq!(set.entry().root.get("x-big").unwrap().value, Value::Str("123456789012345678901234567890".into()));
    // syntax errors say where, in characters
    let errs = load_mem(&[("/s/api.json", "{\"openapi\": \"3.0.3\", \"é\": [1,]}")]).unwrap_err();
    assert!(errs[0].to_string().starts_with("/s/api.json:1:30: #: JSON syntax:"), "{errs:?}");
    // a YAML document that starts with `{` but is not JSON is still read as YAML
    assert!(load_mem(&[("/s/api.yaml", "{openapi: 3.1.0, paths: {}}")]).is_ok());
    // a lone surrogate is an error
    assert!(load_mem(&[("/s/api.json", "{\"openapi\": \"3.1.0\", \"x\": \"\\ud83d\"}")]).is_err());
}

/// A fetcher that fails the test if it is called.
struct NoFetch;

impl Fetch for NoFetch {
    fn fetch(&self, location: &str) -> Result<String, FetchError> {
        panic!("the loader fetched {location}");
    }
}

/// The real specs of `../shared/data/openapi-specs` (or `$PALISADE_SHARED/data/openapi-specs`;
/// skipped when absent): all load and
/// compile from their text without the loader fetching anything (GitHub's has `"$ref"` keys
/// pointing at api.github.com inside example data; Twilio's has surrogate-pair escapes).
#[test]
fn shared_real_specs_load_without_fetching() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/openapi-specs");
    let dir = match std::env::var_os("PALISADE_SHARED") {
        Some(shared) => std::path::Path::new(&shared).join("data/openapi-specs"),
        None => dir,
    };
    let Ok(entries) = std::fs::read_dir(&dir) else {
        eprintln!("skipped: {} is not there", dir.display());
        return;
    };
    let mut n = 0;
    for e in entries.flatten() {
        let p = e.path();
        if !matches!(p.extension().and_then(|x| x.to_str()), Some("json" | "yaml" | "yml")) {
            continue;
        }
        let text = std::fs::read_to_string(&p).unwrap();
        let set = load_str(&p.to_string_lossy(), &text, &NoFetch, &Limits::default()).unwrap_or_else(|e| panic!("{}: {:?}", p.display(), &e[..e.len().min(5)]));
        assert_eq!(set.docs.len(), 1, "{}", p.display());
        let compiled = crate::compile(&set, &crate::CompileOptions::default());
        assert!(compiled.is_ok(), "{}: {:?}", p.display(), compiled.err().map(|e| e.into_iter().take(5).collect::<Vec<_>>()));
        n += 1;
    }
    assert!(n >= 7, "{n} specs");
}

#[test]
fn many_documents_load_up_to_the_configured_limit() {
    // a spec split into 150 files (DigitalOcean's has more than 100)
    let mut api = format!("{HEAD}paths: {{}}\ncomponents:\n  schemas:\n");
    let mut docs = vec![];
    for i in 0..150 {
        api.push_str(&format!("    S{i}: {{$ref: 'models/s{i}.yaml'}}\n"));
        docs.push((format!("/s/models/s{i}.yaml"), format!("type: object\nproperties: {{next: {{$ref: 's{}.yaml'}}}}\n", (i + 1) % 150)));
    }
    let mut all: Vec<(&str, &str)> = vec![("/s/api.yaml", &api)];
    all.extend(docs.iter().map(|(a, b)| (a.as_str(), b.as_str())));
    let f = MemFetch::new(&all);
    assert_eq!(load("/s/api.yaml", &f, &Limits::default()).unwrap().docs.len(), 151);
    let errs = load("/s/api.yaml", &f, &Limits { max_documents: 100, ..Limits::default() }).unwrap_err();
    assert!(errs[0].message.contains("more than 100 documents (openapi.max_documents)"), "{errs:?}");
}

#[test]
fn a_document_that_is_not_text_is_reported_at_its_position() {
    let dir = std::env::temp_dir().join(format!("palisade-loader-text-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let api = dir.join("api.yaml");
    std::fs::write(&api, "openapi: 3.0.3\ninfo: {title: t, version: '1'}\npaths:\n  /a:\n    get:\n      responses: {'200': {$ref: 'r.yaml'}}\n").unwrap();
    std::fs::write(dir.join("r.yaml"), b"description: ok\nx: \"\xff\"\n").unwrap();
    let errs = load(api.to_str().unwrap(), &FsFetch, &Limits::default()).unwrap_err();
    let r = dir.join("r.yaml").display().to_string();
    assert!(errs.iter().any(|e| e.file == r && (e.line, e.col) == (2, 5) && e.message.contains("invalid UTF-8")), "{errs:#?}");
    std::fs::remove_dir_all(&dir).unwrap();
}
