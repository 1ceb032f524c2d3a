//! JSON Schema for OpenAPI: the OpenAPI 3.0 schema dialect and JSON Schema 2020-12 (OpenAPI
//! 3.1), compiled once at load into an arena of validators and evaluated over a
//! [`palisade_json`] tape without building a document tree.
//!
//! API contract (the implementation may add to it, not change it): [`Dialect`], [`DocId`],
//! [`Resolver`], [`Compiler`], [`Schemas`], [`SchemaId`], [`Options`], [`Direction`],
//! [`Violation`], [`ViolationKind`], [`Hints`], [`TypeSet`].
//!
//! Additions to the contract: [`Schemas::validate`] (takes the input bytes with the tape, as
//! `palisade_json` values are spans of them), [`Schemas::validate_fused`] (one pass over the bytes,
//! no tape: the fast path for valid documents), [`Schemas::validate_value`] (a subtree),
//! [`Schemas::validate_with`] (reusing a [`Scratch`]), [`Schemas::warnings`], [`Schemas::len`].
//!
//! Semantics worth knowing:
//! - Numbers: `integer` is any number with a zero fractional part (`1.0`, `1e2`). Bounds and
//!   `multipleOf` are exact for any size of number (see the `num` module): `i64` when both
//!   sides are plain integers, else `f64`, else an exact decimal comparison of the texts when
//!   the two `f64` are equal.
//! - `nullable: true` (3.0) makes `null` valid for that schema whatever its other keywords
//!   (`enum`, `allOf`...), which is what spec authors mean by it. In 3.1 schemas it is not a
//!   keyword; [`Nullable`] says whether it is honoured anyway (the default: specs converted from
//!   3.0 keep it and mean it) or ignored, with one warning for the spec either way.
//! - `readOnly` (`writeOnly`) schemas reject any value in requests (responses), and required
//!   properties whose schema is read-only (write-only) are not required there.
//! - `discriminator` (3.0, with `oneOf`/`anyOf`) selects the one subschema named by the
//!   property's value (`mapping`, then the names of the `$ref`s of the alternatives); an unknown
//!   or missing value is a violation. Without `oneOf`/`anyOf` it is ignored (a warning). In 3.1
//!   it is an annotation only (3.1.1: it "MUST NOT change the validation outcome"): `oneOf`
//!   and `anyOf` are evaluated in full.
//! - Shadow fields ([`Options::shadow_unknown`]): a property is described when a
//!   `properties`/`patternProperties` of the schema or of its in-place composition (`$ref`,
//!   `allOf`, `anyOf`, `oneOf`, `if`/`then`/`else`, `dependentSchemas`) names it. Schemas that
//!   name no property at all (free-form objects) and schemas whose `additionalProperties` or
//!   `unevaluatedProperties` is a constraining schema or `false` report nothing.
//! - Patterns are ECMA-262 translated to the `regex` crate (ECMA's `\d`, `\w`, `\b`, `\s`);
//!   patterns with lookaround or backreferences run on `fancy-regex` with a budget of
//!   100,000 backtracking steps per value: a value that exhausts it is rejected (fail closed,
//!   with its own message), and the spec gets a warning that the pattern needs backtracking.
//! - References: `$id` (and draft 4 `id` in 3.0 schemas) set base URIs, `$anchor` and
//!   `$dynamicAnchor` name schemas, `$dynamicRef` resolves through the dynamic scope at
//!   validation time (2020-12 §8.2.3.2); see the `ids` module. Relative references outside any
//!   `$id` resolve against the document through the [`Resolver`], as before.
//! - Keywords of other drafts honoured with a warning: `patternProperties` and `dependencies`
//!   in 3.0 schemas (not legal there, but written), `items` as a list (tuple) with
//!   `additionalItems`, `dependencies` in 3.1.
//! - `format` asserts by default (a firewall rejects what the spec's format excludes;
//!   [`Formats::Annotate`] makes it an annotation, as 2020-12 does by default): date-time, date,
//!   time (leap seconds only at 23:59 UTC), email, idn-email, hostname (Punycode A-labels
//!   checked), idn-hostname (IDNA2008 contextual rules; not the Bidi rule), ipv4, ipv6, uri,
//!   uri-reference, iri, iri-reference, uuid, json-pointer, relative-json-pointer,
//!   uri-template, duration, regex, byte, int32, int64. Unknown formats are a warning.
//! - The official JSON-Schema-Test-Suite runs in `tests/suite.rs`; the cases not followed,
//!   and why, are in `tests/suite/not-followed.txt`.
#![forbid(unsafe_code)]

mod compile;
mod error;
mod formats;
mod fused;
mod idn;
mod ids;
mod num;
mod pattern;
mod validate;

pub use compile::Compiler;
pub use error::{Error, ErrorKind};
pub use fused::FusedScratch;
pub use validate::{Scratch, MAX_EVAL_DEPTH};

use compile::SNode;
use palisade_config::yaml::{Node, Origin};
pub(crate) use validate::truncate;

/// Which schema language a spec's schemas are written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    /// OpenAPI 3.0 Schema Object (a JSON Schema draft 4/5 variant with `nullable`, boolean
    /// `exclusiveMinimum`, `discriminator`, `readOnly`/`writeOnly`).
    Oas30,
    /// OpenAPI 3.1: JSON Schema 2020-12.
    Oas31,
}

/// What `nullable: true` means in an OpenAPI 3.1 schema, where it is not a keyword but specs
/// converted from 3.0 keep it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Nullable {
    /// As in 3.0: `null` is valid for the schema.
    #[default]
    Honour,
    /// As 3.1 says: an unknown keyword, no effect.
    Ignore,
}

/// What `format` does. JSON Schema 2020-12 makes it an annotation unless the format-assertion
/// vocabulary is on; an API firewall's users mostly mean "reject what is not a UUID".
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Formats {
    /// Values that do not match a known format are violations.
    #[default]
    Assert,
    /// `format` is an annotation: never checked, unknown names not warned about.
    Annotate,
}

/// Identifies one document of a multi-file spec (index into the loader's document list).
pub type DocId = u32;

/// A `$ref` target found by the spec loader.
#[derive(Debug)]
pub struct Resolved<'a> {
    pub doc: DocId,
    /// JSON pointer of the target inside `doc`, e.g. `/components/schemas/User`.
    pub pointer: String,
    pub node: &'a Node,
}

/// Resolves `$ref`s (`#/components/...`, `other.yaml#/Pet`, `../common.yaml`) relative to the
/// document that contains them. Implemented by the OpenAPI loader.
pub trait Resolver {
    fn resolve(&self, base: DocId, reference: &str) -> Result<Resolved<'_>, Error>;

    /// The base URI of document `doc` (its location), against which the `$id`s of the
    /// schemas in it resolve. Empty when it has none.
    fn base_uri(&self, _doc: DocId) -> String {
        String::new()
    }
}

/// A problem in a schema, found at compile time.
#[derive(Clone, Debug)]
pub struct SchemaError {
    pub doc: DocId,
    /// JSON pointer of the offending schema or keyword.
    pub pointer: String,
    pub origin: Origin,
    pub message: String,
}

/// Index of a compiled schema in a [`Schemas`] arena.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SchemaId(pub u32);

/// The arena of compiled schemas of one spec.
#[derive(Debug, Default)]
pub struct Schemas {
    pub(crate) nodes: Vec<SNode>,
    pub(crate) regexes: Vec<pattern::Pattern>,
    pub(crate) warnings: Vec<SchemaError>,
    /// Per node: how the fused validator treats it.
    pub(crate) plans: Vec<fused::Plan>,
    /// `$dynamicAnchor` tables of schema resources (see `SNode::dyn_table`).
    pub(crate) dyn_tables: Vec<Vec<(u32, SchemaId)>>,
}

impl Schemas {
    /// Validate the document on `tape` (parsed from `input`) against schema `id`. Violations
    /// are appended to `out` (at most `opts.max_violations` of them, plus at most
    /// `opts.max_unknown` shadow-field findings). Returns whether the
    /// instance is valid; shadow-field findings ([`ViolationKind::UnknownProperty`]) do not
    /// make it invalid.
    pub fn validate(&self, id: SchemaId, tape: &palisade_json::Tape, input: &[u8], opts: &Options, out: &mut Vec<Violation>) -> bool {
        self.validate_with(id, tape, input, tape.root(input).index(), opts, &mut Scratch::default(), out)
    }

    /// Validate one value of a tape (e.g. a parameter parsed on its own, or a subtree).
    pub fn validate_value(
        &self,
        id: SchemaId,
        value: palisade_json::ValueRef<'_>,
        tape: &palisade_json::Tape,
        input: &[u8],
        opts: &Options,
        out: &mut Vec<Violation>,
    ) -> bool {
        self.validate_with(id, tape, input, value.index(), opts, &mut Scratch::default(), out)
    }

    /// [`Schemas::validate`] for the value at tape index `index`, with reusable scratch memory.
    #[allow(clippy::too_many_arguments)]
    pub fn validate_with(
        &self,
        id: SchemaId,
        tape: &palisade_json::Tape,
        input: &[u8],
        index: u32,
        opts: &Options,
        scratch: &mut Scratch,
        out: &mut Vec<Violation>,
    ) -> bool {
        let value = tape.get(input, index);
        let mut cx = validate::Cx::new(self, tape, input, opts, scratch, out);
        let ok = cx.eval_root(id, value);
        ok && !cx.invalid
    }

    /// Problems that did not prevent compiling: unknown formats, patterns that cannot be
    /// enforced, keywords of the other dialect, unsupported keywords.
    pub fn warnings(&self) -> &[SchemaError] {
        &self.warnings
    }

    /// Number of compiled schemas (subschemas included).
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    fn node(&self, id: SchemaId) -> Option<&SNode> {
        self.nodes.get(id.0 as usize)
    }

    /// In-place subschemas looked through by [`Hints`].
    fn composed(n: &SNode) -> impl Iterator<Item = SchemaId> + '_ {
        n.ref_.iter().chain(&n.all_of).chain(&n.any_of).chain(&n.one_of).copied()
    }

    fn types_at(&self, id: SchemaId, depth: u32) -> u8 {
        let Some(n) = self.node(id) else { return TypeSet::ANY };
        if depth > 32 {
            return TypeSet::ANY;
        }
        if n.reject_all {
            return 0;
        }
        let mut t = if n.types != 0 { n.types } else { TypeSet::ANY };
        if let Some(r) = n.ref_ {
            t &= self.types_at(r, depth + 1);
        }
        for &a in &n.all_of {
            t &= self.types_at(a, depth + 1);
        }
        for list in [&n.any_of, &n.one_of] {
            if !list.is_empty() {
                t &= list.iter().fold(0, |acc, &b| acc | self.types_at(b, depth + 1));
            }
        }
        if n.nullable {
            t |= TypeSet::NULL;
        }
        t
    }

    fn items_at(&self, id: SchemaId, depth: u32) -> Option<SchemaId> {
        let n = self.node(id)?;
        if depth > 32 {
            return None;
        }
        n.items.or_else(|| Self::composed(n).find_map(|c| self.items_at(c, depth + 1)))
    }

    fn property_at(&self, id: SchemaId, name: &str, depth: u32) -> Option<SchemaId> {
        let n = self.node(id)?;
        if depth > 32 {
            return None;
        }
        if let Some(i) = n.props.find(name.as_bytes()) {
            return Some(n.props.ids[i]);
        }
        if let Some(&(_, sid)) = n.rare().pattern_props.iter().find(|(re, _)| self.regexes[*re as usize].is_match(name.as_bytes())) {
            return Some(sid);
        }
        if let Some(sid) = Self::composed(n).find_map(|c| self.property_at(c, name, depth + 1)) {
            return Some(sid);
        }
        n.additional.filter(|a| !self.nodes[a.0 as usize].reject_all)
    }
}

impl Hints for Schemas {
    fn types(&self, id: SchemaId) -> TypeSet {
        TypeSet(self.types_at(id, 0))
    }

    fn items(&self, id: SchemaId) -> Option<SchemaId> {
        self.items_at(id, 0)
    }

    fn property(&self, id: SchemaId, name: &str) -> Option<SchemaId> {
        self.property_at(id, name, 0)
    }
}

/// Whether an instance is a request or a response (decides `readOnly` / `writeOnly`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    Request,
    Response,
}

/// How to validate.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    pub direction: Direction,
    /// Report properties that no `properties`/`patternProperties` of the schema names, even
    /// where `additionalProperties` allows them (as [`ViolationKind::UnknownProperty`]).
    pub shadow_unknown: bool,
    /// Stop after this many [`ViolationKind::Invalid`] violations (at least 1).
    pub max_violations: usize,
    /// Report at most this many shadow-field findings ([`ViolationKind::UnknownProperty`]).
    /// They are counted apart from `max_violations` and never stop validation: a caller that
    /// only monitors them must still see every violation that blocks, however many shadow
    /// fields come before it.
    pub max_unknown: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ViolationKind {
    /// The instance breaks a constraint of the schema.
    Invalid,
    /// Shadow-field finding: a property the schema does not describe (only with
    /// [`Options::shadow_unknown`]; a property forbidden by `additionalProperties: false` is
    /// [`ViolationKind::Invalid`]).
    UnknownProperty,
}

/// One reason an instance does not match.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    pub kind: ViolationKind,
    /// Location in the instance, slash-separated without a leading slash, RFC 6901-escaped
    /// (`users/3/id`); empty for the root.
    pub path: String,
    /// The keyword broken (`maximum`, `required`, `type`, `additionalProperties`, `format`...).
    pub keyword: &'static str,
    /// Short explanation that never repeats more than a truncated piece of the value
    /// (`must be <= 1000`, `missing required property "id"`).
    pub message: String,
}

/// A set of JSON types, for coercing parameter strings (`"5"` is 5 when the schema wants an
/// integer).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct TypeSet(pub u8);

impl TypeSet {
    pub const NULL: u8 = 1;
    pub const BOOLEAN: u8 = 2;
    pub const INTEGER: u8 = 4;
    pub const NUMBER: u8 = 8;
    pub const STRING: u8 = 16;
    pub const ARRAY: u8 = 32;
    pub const OBJECT: u8 = 64;
    /// No `type` constraint anywhere reachable: any type.
    pub const ANY: u8 = 127;

    pub fn has(self, bit: u8) -> bool {
        self.0 & bit != 0
    }
}

/// What parameter and form decoders need to know about a schema to turn strings into typed
/// values. Implemented by [`Schemas`]; `allOf`/`anyOf`/`oneOf`/`$ref` are looked through.
pub trait Hints {
    /// Types the schema admits (`number` admits `INTEGER` too; `nullable` adds `NULL`).
    fn types(&self, id: SchemaId) -> TypeSet;
    /// Schema of array items (`items`), if any.
    fn items(&self, id: SchemaId) -> Option<SchemaId>;
    /// Schema of property `name` (`properties`, then `patternProperties`, then
    /// `additionalProperties`), if any.
    fn property(&self, id: SchemaId, name: &str) -> Option<SchemaId>;
}

#[cfg(test)]
mod tests;
