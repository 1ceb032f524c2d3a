//! The spec fixtures under `tests/fixtures/`, loaded from disk with `FsFetch`.

use std::path::Path;

use palisade_config::yaml::Value;
use palisade_openapi::loader::{load, FsFetch, Limits};
use palisade_openapi::model::Version;

fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name).to_string_lossy().into_owned()
}

#[test]
fn split_spec_with_chained_refs_and_recursion() {
    let set = load(&fixture("multi/api.yaml"), &FsFetch, &Limits::default()).unwrap_or_else(|e| panic!("{e:#?}"));
    assert_eq!(set.version, Version::V30);
    let names: Vec<&str> = set.docs.iter().map(|d| d.location.rsplit("fixtures/").next().unwrap()).collect();
    assert_eq!(names, ["multi/api.yaml", "multi/models/common.yaml", "multi/models/pet.yaml"]);
    // api Pet -> models/pet.yaml (whole document) -> owner -> common OwnerAlias -> common Owner
    let pet_ref = set.entry().root.get("components").unwrap().get("schemas").unwrap().get("Pet").unwrap();
    let (pet_doc, pet_ptr, pet) = set.deref(0, "/components/schemas/Pet", pet_ref).unwrap();
    assert!(set.doc(pet_doc).location.ends_with("multi/models/pet.yaml"));
    assert_eq!(pet_ptr, "");
    let owner = pet.get("properties").unwrap().get("owner").unwrap();
    let (odoc, optr, owner) = set.deref(pet_doc, "/properties/owner", owner).unwrap();
    assert!(set.doc(odoc).location.ends_with("multi/models/common.yaml"));
    assert_eq!(optr, "/schemas/Owner");
    assert_eq!(owner.get("type").unwrap().value, Value::Str("object".into()));
    // the recursive Category resolves to itself
    let r = set.resolve_ref(odoc, "#/schemas/Category").unwrap();
    let parent = r.node.get("properties").unwrap().get("parent").unwrap();
    let (_, p, _) = set.deref(odoc, "/schemas/Category/properties/parent", parent).unwrap();
    assert_eq!(p, "/schemas/Category");
    // `../api.yaml` from models/ goes back to the entry document
    let up = set.resolve_ref(odoc, "../api.yaml#/components/schemas/Pet").unwrap();
    assert_eq!(up.doc, 0);
}

#[test]
fn ref_cycle_across_files_is_an_error_with_the_chain() {
    let errs = load(&fixture("cycle/a.yaml"), &FsFetch, &Limits::default()).unwrap_err();
    assert_eq!(errs.len(), 1, "{errs:#?}");
    let msg = errs[0].to_string();
    let a = fixture("cycle/a.yaml");
    let b = fixture("cycle/b.yaml");
    assert!(msg.contains(&format!("$ref cycle: {a}#/components/schemas/A -> {b}#/B -> {a}#/components/schemas/A")), "{msg}");
}

#[test]
fn swagger_2_is_a_clear_error() {
    let errs = load(&fixture("swagger.yaml"), &FsFetch, &Limits::default()).unwrap_err();
    assert_eq!(errs.len(), 1);
    assert_eq!(errs[0].line, 1);
    assert_eq!(errs[0].pointer, "/swagger");
    assert!(errs[0].message.contains("Swagger/OpenAPI 2.0 is not supported"), "{}", errs[0]);
}

#[test]
fn broken_ref_reports_file_line_col_and_pointer() {
    let errs = load(&fixture("broken-ref.yaml"), &FsFetch, &Limits::default()).unwrap_err();
    assert_eq!(errs.len(), 1, "{errs:#?}");
    let e = &errs[0];
    assert_eq!(e.file, fixture("broken-ref.yaml"));
    assert_eq!((e.line, e.col), (14, 23));
    assert_eq!(e.pointer, "/paths/~1users~1{id}/get/responses/200/content/application~1json/schema/$ref");
    assert_eq!(
        e.to_string(),
        format!(
            "{}:14:23: #/paths/~1users~1{{id}}/get/responses/200/content/application~1json/schema/$ref: unresolved $ref \"#/components/schemas/Missing\": no \"Missing\" at /components/schemas in {}",
            fixture("broken-ref.yaml"),
            fixture("broken-ref.yaml")
        )
    );
}

#[test]
fn missing_entry_file() {
    let errs = load(&fixture("nope.yaml"), &FsFetch, &Limits::default()).unwrap_err();
    assert_eq!(errs[0].file, fixture("nope.yaml"));
    assert_eq!(errs[0].line, 0);
}
