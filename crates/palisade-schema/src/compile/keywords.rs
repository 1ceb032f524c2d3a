//! One schema's keywords read into a compiled node ([`SNode`]).

use palisade_config::yaml::{Node, Origin, Value};

use super::node::{to_const, Discriminator, NumChecks, Required, SNode};
use super::{escape_token, pct_decode, Compiler, MAX_SCHEMA_DEPTH};
use crate::formats::Format;
use crate::num::Num;
use crate::pattern;
use crate::{Dialect, DocId, Formats, Nullable, SchemaId, TypeSet};

/// What reading one schema's keywords gathers. Keywords that depend on others (`exclusive*`
/// booleans of 3.0, `additionalItems`, `required`, `discriminator`) are settled after all of
/// them are read.
#[derive(Default)]
struct Draft<'n> {
    doc: DocId,
    depth: usize,
    n: SNode,
    num: NumChecks,
    /// OpenAPI 3.0's boolean `exclusiveMinimum` / `exclusiveMaximum`.
    excl_min_bool: bool,
    excl_max_bool: bool,
    discriminator: Option<&'n Node>,
    /// The `$ref`s of `oneOf` / `anyOf` by their last segment: the discriminator's implicit
    /// mapping.
    implicit: Vec<(Box<[u8]>, SchemaId)>,
    required_names: Vec<Box<[u8]>>,
    /// `items` was a list (the tuple syntax before 2020-12).
    tuple_items: bool,
    additional_items: Option<(String, &'n Node)>,
}

/// Keywords of JSON Schema 2020-12 that OpenAPI 3.0 schemas do not have.
fn only_31(k: &str) -> bool {
    matches!(
        k,
        "const"
            | "prefixItems"
            | "contains"
            | "minContains"
            | "maxContains"
            | "propertyNames"
            | "dependentRequired"
            | "dependentSchemas"
            | "if"
            | "then"
            | "else"
            | "$defs"
            | "$anchor"
            | "unevaluatedProperties"
            | "unevaluatedItems"
    )
}

/// The strings of a list, others skipped.
fn string_list(l: &[Node]) -> Vec<Box<[u8]>> {
    l.iter().filter_map(|x| if let Value::Str(s) = &x.value { Some(s.as_bytes().into()) } else { None }).collect()
}

impl Compiler<'_> {
    /// Compile `node` (at `pointer` of `doc`) into node `id`: its keywords one by one, then
    /// what depends on several of them.
    pub(super) fn fill(&mut self, id: SchemaId, doc: DocId, pointer: &str, node: &Node, depth: usize) {
        self.filled[id.0 as usize] = true;
        if depth > MAX_SCHEMA_DEPTH {
            self.error(doc, pointer, &node.origin, "schema nested too deeply");
            return;
        }
        let entries = match &node.value {
            Value::Bool(b) => {
                let n = &mut self.nodes[id.0 as usize];
                n.reject_all = !*b;
                n.accept_all = *b;
                return;
            }
            Value::Map(entries) => entries,
            _ => {
                self.error(doc, pointer, &node.origin, format!("a schema must be a mapping, not {}", node.kind()));
                return;
            }
        };
        let mut d = Draft { doc, depth, n: SNode { dyn_table: self.dyn_table(doc, pointer), ..SNode::default() }, ..Draft::default() };
        let oas30 = self.dialect == Dialect::Oas30;
        let has_ref = entries.iter().any(|(k, _)| k.name == "$ref");
        for (key, v) in entries {
            let k = key.name.as_str();
            if oas30 && has_ref && k != "$ref" {
                continue; // siblings of $ref are ignored in OpenAPI 3.0
            }
            let kp = format!("{pointer}/{}", escape_token(k));
            if oas30 && only_31(k) {
                self.warn(doc, &kp, &key.origin, format!("{k} is not a keyword of OpenAPI 3.0 schemas; ignored"));
                continue;
            }
            self.keyword(&mut d, k, kp, &key.origin, v);
        }
        self.settle(&mut d, pointer, node);
        let Draft { mut n, discriminator, implicit, .. } = d;
        if let Some(disc) = discriminator {
            self.discriminator(&mut n, doc, pointer, disc, implicit);
        }
        self.store(id, n);
    }

    /// One keyword `k`, found at `kp`.
    fn keyword<'n>(&mut self, d: &mut Draft<'n>, k: &str, kp: String, origin: &Origin, v: &'n Node) {
        let (doc, depth) = (d.doc, d.depth);
        match k {
            "$ref" => {
                if let Some(r) = self.string(doc, &kp, v) {
                    d.n.ref_ = self.reference(doc, &kp, origin, &r);
                }
            }
            "type" => d.n.types |= self.types(doc, &kp, v),
            "nullable" => self.nullable_keyword(d, &kp, origin, v),
            "readOnly" => d.n.read_only = self.boolean(doc, &kp, v).unwrap_or(false),
            "writeOnly" => d.n.write_only = self.boolean(doc, &kp, v).unwrap_or(false),
            "enum" => match &v.value {
                Value::Seq(items) => d.n.enum_ = Some(items.iter().map(to_const).collect()),
                _ => self.error(doc, &kp, &v.origin, "enum must be a list"),
            },
            "const" => d.n.rare_mut().const_ = Some(to_const(v)),
            "format" => {
                if let Some(f) = self.string(doc, &kp, v).filter(|_| self.formats == Formats::Assert) {
                    match Format::from_name(&f) {
                        Some(fmt) => d.n.format = Some(fmt),
                        None => self.warn(doc, &kp, &v.origin, format!("unknown format {f:?}; not checked")),
                    }
                }
            }
            "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum" | "multipleOf" => self.number_keyword(d, k, &kp, v),
            "minLength" => d.n.min_length = self.count(doc, &kp, v),
            "maxLength" => d.n.max_length = self.count(doc, &kp, v),
            "minItems" => d.n.min_items = self.count(doc, &kp, v),
            "maxItems" => d.n.max_items = self.count(doc, &kp, v),
            "minProperties" => d.n.rare_mut().min_props = self.count(doc, &kp, v),
            "maxProperties" => d.n.rare_mut().max_props = self.count(doc, &kp, v),
            "minContains" => d.n.rare_mut().min_contains = self.count(doc, &kp, v),
            "maxContains" => d.n.rare_mut().max_contains = self.count(doc, &kp, v),
            "uniqueItems" => d.n.unique_items = self.boolean(doc, &kp, v).unwrap_or(false),
            "pattern" => {
                if let Some(p) = self.string(doc, &kp, v) {
                    d.n.pattern = self.regex(doc, &kp, &v.origin, &p);
                }
            }
            "items" | "additionalItems" | "prefixItems" | "contains" => self.array_keyword(d, k, kp, v),
            "properties" | "patternProperties" | "required" => self.properties_keyword(d, k, &kp, origin, v),
            "dependencies" | "dependentRequired" | "dependentSchemas" => self.dependency_keyword(d, k, &kp, origin, v),
            "allOf" | "anyOf" | "oneOf" => self.composition_keyword(d, k, &kp, v),
            "additionalProperties" => d.n.additional = Some(self.subschema(doc, kp, v, depth + 1)),
            "unevaluatedProperties" => d.n.rare_mut().unevaluated_props = Some(self.subschema(doc, kp, v, depth + 1)),
            "unevaluatedItems" => d.n.rare_mut().unevaluated_items = Some(self.subschema(doc, kp, v, depth + 1)),
            "propertyNames" => d.n.rare_mut().property_names = Some(self.subschema(doc, kp, v, depth + 1)),
            "not" => d.n.rare_mut().not = Some(self.subschema(doc, kp, v, depth + 1)),
            "if" => d.n.rare_mut().if_ = Some(self.subschema(doc, kp, v, depth + 1)),
            "then" => d.n.rare_mut().then_ = Some(self.subschema(doc, kp, v, depth + 1)),
            "else" => d.n.rare_mut().else_ = Some(self.subschema(doc, kp, v, depth + 1)),
            "$defs" | "definitions" => {
                // Compiled so that refs and anchors into them are ready.
                if let Value::Map(defs) = &v.value {
                    for (dk, dv) in defs {
                        self.subschema(doc, format!("{kp}/{}", escape_token(&dk.name)), dv, depth + 1);
                    }
                }
            }
            // found by the document index before compiling
            "$anchor" | "$dynamicAnchor" | "$id" => {}
            "$dynamicRef" => self.dynamic_ref_keyword(d, &kp, origin, v),
            "discriminator" => d.discriminator = Some(v),
            "$recursiveRef" => {
                self.warn(doc, &kp, origin, format!("{k} (draft 2019-09) is not supported; ignored"));
            }
            _ => {} // annotations, extensions and unknown keywords
        }
    }

    /// `nullable`: a keyword of 3.0; in 3.1 counted for one warning, and honoured or not as
    /// configured.
    fn nullable_keyword(&mut self, d: &mut Draft<'_>, kp: &str, origin: &Origin, v: &Node) {
        let doc = d.doc;
        if self.dialect == Dialect::Oas30 {
            d.n.nullable = self.boolean(doc, kp, v).unwrap_or(false);
            return;
        }
        match &mut self.nullable_31 {
            Some((count, ..)) => *count += 1,
            None => self.nullable_31 = Some((1, doc, kp.to_string(), origin.clone())),
        }
        if self.nullable == Nullable::Honour {
            d.n.nullable = self.boolean(doc, kp, v).unwrap_or(false);
        }
    }

    /// `minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum` (numbers, or 3.0's
    /// booleans), `multipleOf`.
    fn number_keyword(&mut self, d: &mut Draft<'_>, k: &str, kp: &str, v: &Node) {
        let doc = d.doc;
        let oas30 = self.dialect == Dialect::Oas30;
        let num = &mut d.num;
        match k {
            "minimum" => num.minimum = self.number(doc, kp, v),
            "maximum" => num.maximum = self.number(doc, kp, v),
            "multipleOf" => {
                num.multiple_of = self.number(doc, kp, v);
                if num.multiple_of.as_ref().is_some_and(|m| m.f <= 0.0) {
                    self.error(doc, kp, &v.origin, "multipleOf must be greater than 0");
                    num.multiple_of = None;
                }
            }
            _ => {
                let min = k == "exclusiveMinimum";
                if let Value::Bool(b) = v.value {
                    if !oas30 {
                        self.warn(doc, kp, &v.origin, format!("boolean {k} is OpenAPI 3.0 syntax; read as such"));
                    }
                    if min {
                        d.excl_min_bool = b;
                    } else {
                        d.excl_max_bool = b;
                    }
                } else if oas30 {
                    self.error(doc, kp, &v.origin, format!("{k} must be a boolean in OpenAPI 3.0"));
                } else if min {
                    num.exclusive_minimum = self.number(doc, kp, v);
                } else {
                    num.exclusive_maximum = self.number(doc, kp, v);
                }
            }
        }
    }

    /// `items` (a schema, or a list before 2020-12), `additionalItems`, `prefixItems`,
    /// `contains`.
    fn array_keyword<'n>(&mut self, d: &mut Draft<'n>, k: &str, kp: String, v: &'n Node) {
        let (doc, depth) = (d.doc, d.depth);
        match (k, &v.value) {
            ("items", Value::Seq(list)) => {
                let syntax = if self.dialect == Dialect::Oas30 { "draft 4 tuple syntax, not OpenAPI 3.0" } else { "draft 2019 syntax" };
                self.warn(doc, &kp, &v.origin, format!("items as a list is {syntax}; read as prefixItems (with additionalItems for the rest)"));
                d.n.rare_mut().prefix_items = self.schema_list(doc, &kp, list, depth);
                d.tuple_items = true;
            }
            ("items", _) => d.n.items = Some(self.subschema(doc, kp, v, depth + 1)),
            ("additionalItems", _) => d.additional_items = Some((kp, v)),
            ("prefixItems", Value::Seq(list)) => d.n.rare_mut().prefix_items = self.schema_list(doc, &kp, list, depth),
            ("prefixItems", _) => self.error(doc, &kp, &v.origin, "prefixItems must be a list of schemas"),
            _ => d.n.rare_mut().contains = Some(self.subschema(doc, kp, v, depth + 1)),
        }
    }

    /// `properties`, `patternProperties` and `required`.
    fn properties_keyword(&mut self, d: &mut Draft<'_>, k: &str, kp: &str, origin: &Origin, v: &Node) {
        let (doc, depth) = (d.doc, d.depth);
        match (k, &v.value) {
            ("properties", Value::Map(props)) => {
                for (pk, pv) in props {
                    let id = self.subschema(doc, format!("{kp}/{}", escape_token(&pk.name)), pv, depth + 1);
                    d.n.props.push(pk.name.as_bytes(), id);
                }
            }
            ("patternProperties", Value::Map(props)) => {
                if self.dialect == Dialect::Oas30 {
                    self.warn(doc, kp, origin, "patternProperties is not an OpenAPI 3.0 keyword; enforced as JSON Schema defines it");
                }
                for (pk, pv) in props {
                    let sp = format!("{kp}/{}", escape_token(&pk.name));
                    let id = self.subschema(doc, sp.clone(), pv, depth + 1);
                    if let Some(re) = self.regex(doc, &sp, &pk.origin, &pk.name) {
                        d.n.rare_mut().pattern_props.push((re, id));
                    }
                }
            }
            ("required", Value::Seq(list)) => {
                for r in list {
                    match &r.value {
                        Value::Str(s) => d.required_names.push(s.as_bytes().into()),
                        _ => self.error(doc, kp, &r.origin, "required must be a list of strings"),
                    }
                }
            }
            ("required", _) => self.error(doc, kp, &v.origin, "required must be a list of strings"),
            _ => self.error(doc, kp, &v.origin, format!("{k} must be a mapping")),
        }
    }

    /// `dependentRequired`, `dependentSchemas`, and draft 4's `dependencies` that is both.
    fn dependency_keyword(&mut self, d: &mut Draft<'_>, k: &str, kp: &str, origin: &Origin, v: &Node) {
        let (doc, depth) = (d.doc, d.depth);
        let Value::Map(m) = &v.value else {
            self.error(doc, kp, &v.origin, format!("{k} must be a mapping"));
            return;
        };
        if k == "dependencies" {
            let name =
                if self.dialect == Dialect::Oas30 { "not an OpenAPI 3.0 keyword" } else { "draft 4 syntax (dependentRequired / dependentSchemas in 3.1)" };
            self.warn(doc, kp, origin, format!("dependencies is {name}; enforced as JSON Schema draft 4 defines it"));
        }
        for (dk, dv) in m {
            let names = match (k, &dv.value) {
                ("dependentSchemas", _) => None,
                (_, Value::Seq(l)) => Some(string_list(l)),
                ("dependencies", _) => None,
                _ => {
                    self.error(doc, kp, &dv.origin, "dependentRequired values must be lists of strings");
                    Some(Vec::new())
                }
            };
            match names {
                Some(names) => d.n.rare_mut().dependent_required.push((dk.name.as_bytes().into(), names)),
                None => {
                    let id = self.subschema(doc, format!("{kp}/{}", escape_token(&dk.name)), dv, depth + 1);
                    d.n.rare_mut().dependent_schemas.push((dk.name.as_bytes().into(), id));
                }
            }
        }
    }

    /// `allOf`, `anyOf`, `oneOf`; the `$ref`s of the last two make the discriminator's
    /// implicit mapping.
    fn composition_keyword(&mut self, d: &mut Draft<'_>, k: &str, kp: &str, v: &Node) {
        let (doc, depth) = (d.doc, d.depth);
        let Value::Seq(list) = &v.value else {
            self.error(doc, kp, &v.origin, format!("{k} must be a list of schemas"));
            return;
        };
        if list.is_empty() {
            self.error(doc, kp, &v.origin, format!("{k} must not be empty"));
        }
        let ids = self.schema_list(doc, kp, list, depth);
        if k != "allOf" {
            for (item, &sid) in list.iter().zip(&ids) {
                if let Some(Value::Str(r)) = item.get("$ref").map(|r| &r.value) {
                    let name = r.rsplit('/').next().unwrap_or(r);
                    d.implicit.push((name.as_bytes().into(), sid));
                }
            }
        }
        match k {
            "allOf" => d.n.all_of = ids,
            "anyOf" => d.n.any_of = ids,
            _ => d.n.one_of = ids,
        }
    }

    /// `$dynamicRef`: dynamic only when its static target has the same `$dynamicAnchor`
    /// (2020-12 §8.2.3.2); otherwise a plain reference.
    fn dynamic_ref_keyword(&mut self, d: &mut Draft<'_>, kp: &str, origin: &Origin, v: &Node) {
        let doc = d.doc;
        let Some(r) = self.string(doc, kp, v) else { return };
        match self.locate(doc, kp, &r) {
            Ok(target) => {
                let name = r.split_once('#').map(|(_, f)| pct_decode(f)).filter(|f| !f.is_empty() && !f.starts_with('/'));
                let dynamic = name.filter(|nm| target.node.get("$dynamicAnchor").is_some_and(|a| matches!(&a.value, Value::Str(s) if s == nm)));
                let sid = self.id_of(target);
                let name = dynamic.map(|nm| self.dyn_name(&nm));
                d.n.rare_mut().dynamic_ref = Some((sid, name));
            }
            Err(e) => self.error(doc, kp, origin, format!("cannot resolve $dynamicRef {r:?}: {e}")),
        }
    }

    /// What depends on several keywords: `additionalItems` after a list of `items` (draft 4
    /// to 2019-09), 3.0's boolean exclusive bounds, `required` names against `properties`.
    fn settle(&mut self, d: &mut Draft<'_>, pointer: &str, node: &Node) {
        let (doc, depth) = (d.doc, d.depth);
        if let (true, Some((kp, v))) = (d.tuple_items, d.additional_items.take()) {
            d.n.items = Some(self.subschema(doc, kp, v, depth + 1));
        }
        let num = &mut d.num;
        if d.excl_min_bool {
            match num.minimum.take() {
                Some(m) => num.exclusive_minimum = Some(m),
                None => self.warn(doc, pointer, &node.origin, "exclusiveMinimum without minimum; ignored"),
            }
        }
        if d.excl_max_bool {
            match num.maximum.take() {
                Some(m) => num.exclusive_maximum = Some(m),
                None => self.warn(doc, pointer, &node.origin, "exclusiveMaximum without maximum; ignored"),
            }
        }
        if num.any() {
            d.n.num = Some(Box::new(std::mem::take(num)));
        }
        for name in std::mem::take(&mut d.required_names) {
            let prop = d.n.props.find(&name);
            d.n.required.push(Required { name, prop, read_only: false, write_only: false });
        }
    }

    /// `discriminator`: its `mapping` resolved (names or references) and, in 3.0, joined by
    /// the implicit mapping of the `oneOf` / `anyOf` `$ref`s.
    fn discriminator(&mut self, n: &mut SNode, doc: DocId, pointer: &str, d: &Node, implicit: Vec<(Box<[u8]>, SchemaId)>) {
        let dp = format!("{pointer}/discriminator");
        let Some(prop) = d.get("propertyName").and_then(|p| if let Value::Str(s) = &p.value { Some(s.clone()) } else { None }) else {
            self.error(doc, &dp, &d.origin, "discriminator needs a propertyName");
            return;
        };
        let mut mapping = Vec::new();
        let mut broken_mapping = false;
        if let Some(Value::Map(m)) = d.get("mapping").map(|m| &m.value) {
            for (mk, mv) in m {
                let Value::Str(target) = &mv.value else {
                    self.error(doc, &dp, &mv.origin, "discriminator mapping values must be strings");
                    continue;
                };
                // A schema name, or a reference (`#/components/schemas/Pet`,
                // `pets.yaml#/Pet`, `Pet.yaml`); a name is tried first, dots and all.
                let mut candidates = Vec::new();
                if !target.contains(['/', '#']) {
                    candidates.push(format!("#/components/schemas/{}", escape_token(target)));
                }
                if target.contains(['/', '#', '.']) {
                    candidates.push(target.clone());
                }
                let mp = format!("{dp}/mapping/{}", escape_token(&mk.name));
                match candidates.iter().find(|c| self.resolver.resolve(doc, c).is_ok()) {
                    Some(reference) => {
                        if let Some(sid) = self.reference(doc, &mp, &mv.origin, reference) {
                            mapping.push((mk.name.as_bytes().into(), sid));
                        }
                    }
                    None => {
                        broken_mapping = true;
                        let msg = format!("discriminator mapping {target:?} names no schema: the discriminator is not used, oneOf/anyOf are evaluated in full");
                        self.warn(doc, &mp, &mv.origin, msg);
                    }
                }
            }
        }
        if n.one_of.is_empty() && n.any_of.is_empty() {
            self.warn(doc, &dp, &d.origin, "discriminator without oneOf/anyOf does not select anything; ignored");
        } else if self.dialect == Dialect::Oas30 && !broken_mapping {
            mapping.extend(implicit);
            n.rare_mut().discriminator = Some(Discriminator { property: prop.as_bytes().into(), mapping });
        }
        // OpenAPI 3.1: "the discriminator MUST NOT change the validation outcome of the
        // schema" (3.1.1): `oneOf`/`anyOf` decide alone. The mapping was still checked above
        // so that a broken one is reported.
    }

    fn store(&mut self, id: SchemaId, mut n: SNode) {
        if n.nullable && n.types != 0 {
            n.types |= TypeSet::NULL;
        }
        n.has_string = n.min_length.is_some() || n.max_length.is_some() || n.pattern.is_some() || n.format.is_some();
        n.has_number = n.num.is_some() || n.format.is_some();
        n.has_object = n.props.len() > 0
            || !n.rare().pattern_props.is_empty()
            || n.additional.is_some()
            || n.rare().property_names.is_some()
            || !n.required.is_empty()
            || n.rare().min_props.is_some()
            || n.rare().max_props.is_some()
            || !n.rare().dependent_required.is_empty()
            || !n.rare().dependent_schemas.is_empty();
        n.has_array = !n.rare().prefix_items.is_empty()
            || n.items.is_some()
            || n.rare().contains.is_some()
            || n.min_items.is_some()
            || n.max_items.is_some()
            || n.unique_items
            || n.rare().unevaluated_items.is_some();
        n.has_inplace = n.ref_.is_some()
            || n.rare().dynamic_ref.is_some()
            || n.dyn_table.is_some()
            || !n.all_of.is_empty()
            || !n.any_of.is_empty()
            || !n.one_of.is_empty()
            || n.rare().not.is_some()
            || n.rare().if_.is_some()
            || n.rare().discriminator.is_some();
        n.accept_all = !n.reject_all
            && n.types == 0
            && !n.read_only
            && !n.write_only
            && n.enum_.is_none()
            && n.rare().const_.is_none()
            && !n.has_string
            && !n.has_number
            && !n.has_object
            && !n.has_array
            && !n.has_inplace
            && n.rare().unevaluated_props.is_none();
        n.leaf = !n.reject_all
            && !n.accept_all
            && !n.read_only
            && !n.write_only
            && n.enum_.is_none()
            && n.rare().const_.is_none()
            && !n.has_object
            && !n.has_array
            && !n.has_inplace
            && n.rare().unevaluated_props.is_none();
        self.nodes[id.0 as usize] = n;
    }

    fn schema_list(&mut self, doc: DocId, kp: &str, list: &[Node], depth: usize) -> Vec<SchemaId> {
        list.iter().enumerate().map(|(i, s)| self.subschema(doc, format!("{kp}/{i}"), s, depth + 1)).collect()
    }

    fn regex(&mut self, doc: DocId, kp: &str, origin: &Origin, src: &str) -> Option<u32> {
        if let Some(&r) = self.patterns.get(src) {
            return r;
        }
        let r = match pattern::Pattern::new(src) {
            Ok(re) => {
                if re.backtracking() {
                    let msg = format!(
                        "pattern {:?} needs backtracking (lookaround or backreferences): enforced with a budget of {} steps per value; a value that exhausts it is rejected",
                        crate::truncate(src, 64),
                        pattern::BACKTRACK_LIMIT
                    );
                    self.warn(doc, kp, origin, msg);
                }
                self.regexes.push(re);
                Some(self.regexes.len() as u32 - 1)
            }
            Err(e) => {
                self.warn(doc, kp, origin, format!("pattern {:?} cannot be compiled ({e}); not enforced", crate::truncate(src, 64)));
                None
            }
        };
        self.patterns.insert(src.to_string(), r);
        r
    }

    fn string(&mut self, doc: DocId, kp: &str, v: &Node) -> Option<String> {
        match &v.value {
            Value::Str(s) => Some(s.clone()),
            _ => {
                self.error(doc, kp, &v.origin, format!("expected a string, found {}", v.kind()));
                None
            }
        }
    }

    fn boolean(&mut self, doc: DocId, kp: &str, v: &Node) -> Option<bool> {
        match v.value {
            Value::Bool(b) => Some(b),
            _ => {
                self.error(doc, kp, &v.origin, format!("expected a boolean, found {}", v.kind()));
                None
            }
        }
    }

    fn number(&mut self, doc: DocId, kp: &str, v: &Node) -> Option<Num> {
        let n = match &v.value {
            Value::Int(i) => Some(Num::from_i64(*i)),
            Value::Float(f) => Num::from_f64(*f),
            // Big integers that YAML could not hold come as strings of digits.
            Value::Str(s) => Num::from_text(s.trim()),
            _ => None,
        };
        if n.is_none() {
            self.error(doc, kp, &v.origin, format!("expected a number, found {}", v.kind()));
        }
        n
    }

    fn count(&mut self, doc: DocId, kp: &str, v: &Node) -> Option<u64> {
        match v.value {
            Value::Int(i) if i >= 0 => Some(i as u64),
            Value::Float(f) if f >= 0.0 && f.fract() == 0.0 => Some(f as u64),
            _ => {
                self.error(doc, kp, &v.origin, format!("expected a non-negative integer, found {}", v.kind()));
                None
            }
        }
    }

    fn types(&mut self, doc: DocId, kp: &str, v: &Node) -> u8 {
        let one = |s: &str| -> Option<u8> {
            Some(match s {
                "null" => TypeSet::NULL,
                "boolean" => TypeSet::BOOLEAN,
                "integer" => TypeSet::INTEGER,
                "number" => TypeSet::NUMBER | TypeSet::INTEGER,
                "string" => TypeSet::STRING,
                "array" => TypeSet::ARRAY,
                "object" => TypeSet::OBJECT,
                _ => return None,
            })
        };
        match &v.value {
            Value::Str(s) => match one(s) {
                Some(t) => t,
                None => {
                    self.error(doc, kp, &v.origin, format!("unknown type {:?}", crate::truncate(s, 32)));
                    0
                }
            },
            Value::Seq(list) => {
                if self.dialect == Dialect::Oas30 {
                    self.warn(doc, kp, &v.origin, "type must be a single string in OpenAPI 3.0; the list is read as a union");
                }
                let mut t = 0;
                for item in list {
                    match &item.value {
                        Value::Str(s) if one(s).is_some() => t |= one(s).unwrap(),
                        _ => self.error(doc, kp, &item.origin, "type must name JSON types"),
                    }
                }
                if t == 0 {
                    self.error(doc, kp, &v.origin, "type must not be empty");
                }
                t
            }
            _ => {
                self.error(doc, kp, &v.origin, format!("type must be a string, found {}", v.kind()));
                0
            }
        }
    }
}
