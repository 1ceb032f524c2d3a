//! A GraphQL schema (SDL) as a compact index for request validation: types by name, fields with
//! their argument types, input object fields, enum values, the object types behind each
//! interface and union (for fragments' type conditions), the root operation types, and
//! directives with their arguments. Parsed once at configuration load; type extensions
//! (`extend type ...`) are merged into their types.

use apollo_parser::cst;
use apollo_parser::Parser;
use foldhash::{HashMap, HashMapExt};

use crate::doc::{line_col, TypeRef};
use crate::{Error, ErrorKind};

pub type TypeId = u32;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Scalar,
    Object,
    Interface,
    Union,
    Enum,
    InputObject,
}

/// A type reference with the named type resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SType {
    Named(TypeId),
    List(Box<SType>),
    NonNull(Box<SType>),
}

impl SType {
    pub fn base(&self) -> TypeId {
        match self {
            SType::Named(t) => *t,
            SType::List(t) | SType::NonNull(t) => t.base(),
        }
    }

    pub fn is_non_null(&self) -> bool {
        matches!(self, SType::NonNull(_))
    }
}

#[derive(Clone, Debug)]
pub struct InputValue {
    pub name: Box<str>,
    pub ty: SType,
    pub has_default: bool,
}

impl InputValue {
    /// Must be given: non-null and without a default.
    pub fn required(&self) -> bool {
        self.ty.is_non_null() && !self.has_default
    }
}

/// A field of an object or interface type, with what judging a selection of it needs resolved
/// at load: the named type inside its wrappers, whether that type has subfields, and whether
/// an argument must be given (so that a request reads this one record per field).
#[derive(Clone, Debug)]
pub struct FieldDef {
    pub ty: SType,
    pub args: Vec<InputValue>,
    /// `ty` without its list and non-null wrappers.
    pub base: TypeId,
    /// The base type is an object, an interface or a union: a selection of it needs subfields.
    pub composite: bool,
    /// Some argument is required (non-null without a default).
    pub required_args: bool,
}

/// A set of names, numbered in the order they were added, built once at load and then only
/// read: the names side by side in one string, and an open-addressing table (at most half
/// full) whose slots hold part of a name's hash, its length, its first [`HEAD`] bytes, where
/// it is in the string, and its number. Looking a name up costs one hash of it and a scan of
/// adjacent slots; a name of at most [`HEAD`] bytes (most GraphQL names) is compared within
/// its slot, without reading the string, and a miss ends at the first empty slot. The
/// schema's type names, each type's field names and each enum's values are such sets.
#[derive(Clone, Debug, Default)]
pub struct Names {
    /// Where each name is in `text`.
    spans: Vec<(u32, u32)>,
    text: String,
    slots: Box<[Slot]>,
}

/// Bytes of a name kept in its slot of a [`Names`] table.
pub const HEAD: usize = 16;

#[derive(Clone, Copy, Debug, Default)]
struct Slot {
    /// The upper half of the name's hash.
    hash: u32,
    at: u32,
    len: u32,
    /// `number + 1`; `0`: an empty slot.
    number: u32,
    /// The name's first bytes, zero-padded.
    head: [u8; HEAD],
}

fn head(name: &str) -> [u8; HEAD] {
    let mut h = [0; HEAD];
    let n = name.len().min(HEAD);
    h[..n].copy_from_slice(&name.as_bytes()[..n]);
    h
}

/// The hash of a name in [`Names`] (fixed: a set is built once and only read).
fn name_hash(name: &str) -> u64 {
    use std::hash::BuildHasher;
    foldhash::fast::FixedState::with_seed(0x005e_edf1_e1d5).hash_one(name)
}

impl Names {
    /// The number of `name`.
    pub fn index(&self, name: &str) -> Option<usize> {
        if self.spans.is_empty() {
            return None;
        }
        let h = name_hash(name);
        let (tag, first) = ((h >> 32) as u32, head(name));
        let mask = self.slots.len() - 1;
        let mut i = h as usize & mask;
        loop {
            let slot = &self.slots[i];
            if slot.number == 0 {
                return None;
            }
            if slot.hash == tag && slot.len as usize == name.len() && slot.head == first && (name.len() <= HEAD || self.rest(slot) == &name.as_bytes()[HEAD..])
            {
                return Some(slot.number as usize - 1);
            }
            i = (i + 1) & mask;
        }
    }

    /// The bytes of a slot's name after its head.
    fn rest(&self, slot: &Slot) -> &[u8] {
        self.text.as_bytes().get(slot.at as usize + HEAD..(slot.at + slot.len) as usize).unwrap_or_default()
    }

    pub fn contains(&self, name: &str) -> bool {
        self.index(name).is_some()
    }

    /// The name numbered `k`.
    pub fn name(&self, k: usize) -> &str {
        let (at, len) = self.spans[k];
        &self.text[at as usize..][..len as usize]
    }

    /// Add a name (its number, and whether it is new).
    pub fn insert(&mut self, name: &str) -> (usize, bool) {
        if let Some(k) = self.index(name) {
            return (k, false);
        }
        self.spans.push((self.text.len() as u32, name.len() as u32));
        self.text.push_str(name);
        let n = self.spans.len();
        if n * 2 > self.slots.len() {
            self.slots = vec![Slot::default(); (n * 2).next_power_of_two().max(8)].into_boxed_slice();
            for k in 0..n {
                self.place(k);
            }
        } else {
            self.place(n - 1);
        }
        (n - 1, true)
    }

    fn place(&mut self, k: usize) {
        let h = name_hash(self.name(k));
        let mask = self.slots.len() - 1;
        let mut i = h as usize & mask;
        while self.slots[i].number != 0 {
            i = (i + 1) & mask;
        }
        let (at, len) = self.spans[k];
        self.slots[i] = Slot { hash: (h >> 32) as u32, at, len, number: k as u32 + 1, head: head(self.name(k)) };
    }

    pub fn len(&self) -> usize {
        self.spans.len()
    }

    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// The names, in the order they were added.
    pub fn iter(&self) -> impl Iterator<Item = &str> {
        (0..self.len()).map(|k| self.name(k))
    }
}

/// The fields of an object or interface type by name.
#[derive(Clone, Debug, Default)]
pub struct Fields {
    names: Names,
    /// By the name's number.
    defs: Vec<FieldDef>,
}

impl Fields {
    pub fn get(&self, name: &str) -> Option<&FieldDef> {
        self.names.index(name).map(|k| &self.defs[k])
    }

    /// Add a field, or replace the one of that name (a type extension redefining it).
    pub fn insert(&mut self, name: &str, def: FieldDef) {
        match self.names.insert(name) {
            (_, true) => self.defs.push(def),
            (k, false) => self.defs[k] = def,
        }
    }

    pub fn len(&self) -> usize {
        self.defs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.defs.is_empty()
    }

    /// The fields, in definition order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &FieldDef)> {
        self.defs.iter().enumerate().map(|(k, d)| (self.names.name(k), d))
    }
}

#[derive(Clone, Debug)]
pub struct TypeDef {
    pub name: Box<str>,
    pub kind: Kind,
    /// Objects and interfaces.
    pub fields: Fields,
    /// The object types a value of this type can be (itself for an object), sorted.
    pub possible: Vec<TypeId>,
    pub enum_values: Names,
    /// Input objects.
    pub inputs: Vec<InputValue>,
}

impl TypeDef {
    pub fn is_composite(&self) -> bool {
        matches!(self.kind, Kind::Object | Kind::Interface | Kind::Union)
    }

    pub fn is_input(&self) -> bool {
        matches!(self.kind, Kind::Scalar | Kind::Enum | Kind::InputObject)
    }
}

#[derive(Clone, Debug)]
pub struct Schema {
    /// Type names, numbered by their [`TypeId`].
    names: Names,
    types: Vec<TypeDef>,
    pub query: Option<TypeId>,
    pub mutation: Option<TypeId>,
    pub subscription: Option<TypeId>,
    directives: HashMap<Box<str>, Vec<InputValue>>,
}

const BUILTIN_SCALARS: [&str; 5] = ["Int", "Float", "String", "Boolean", "ID"];

impl Schema {
    pub fn type_id(&self, name: &str) -> Option<TypeId> {
        self.names.index(name).map(|k| k as TypeId)
    }

    pub fn ty(&self, id: TypeId) -> &TypeDef {
        &self.types[id as usize]
    }

    pub fn type_named(&self, name: &str) -> Option<&TypeDef> {
        self.type_id(name).map(|i| self.ty(i))
    }

    /// Arguments of directive `name` (schema-defined or built in: `@skip`, `@include`).
    pub fn directive(&self, name: &str) -> Option<&[InputValue]> {
        self.directives.get(name).map(Vec::as_slice)
    }

    /// Number of types, for reports.
    pub fn len(&self) -> usize {
        self.types.len()
    }

    pub fn is_empty(&self) -> bool {
        self.types.is_empty()
    }

    /// Whether a fragment on `cond` may be spread where a `parent` is expected: the two share
    /// a possible object type.
    pub fn overlaps(&self, parent: TypeId, cond: TypeId) -> bool {
        let (a, b) = (&self.ty(parent).possible, &self.ty(cond).possible);
        let (small, large) = if a.len() <= b.len() { (a, b) } else { (b, a) };
        small.iter().any(|t| large.binary_search(t).is_ok())
    }

    /// Render a type for messages (`[String!]!`).
    pub fn display(&self, t: &SType) -> String {
        match t {
            SType::Named(i) => self.ty(*i).name.to_string(),
            SType::List(t) => format!("[{}]", self.display(t)),
            SType::NonNull(t) => format!("{}!", self.display(t)),
        }
    }

    /// Resolve a type written in a request (a variable definition) against the schema.
    pub fn resolve(&self, t: &TypeRef<'_>) -> Option<SType> {
        Some(match t {
            TypeRef::Named(n) => SType::Named(self.type_id(n)?),
            TypeRef::List(t) => SType::List(Box::new(self.resolve(t)?)),
            TypeRef::NonNull(t) => SType::NonNull(Box::new(self.resolve(t)?)),
        })
    }

    /// Resolve a type of the schema's syntax tree; `Err`: the unknown type (a missing one is
    /// named ``).
    fn resolve_cst(&self, t: &cst::Type) -> Result<SType, Error> {
        let unknown = |name: &str| Error::new(ErrorKind::Schema, format!("unknown type `{name}`"));
        let named = |n: Option<cst::NamedType>| -> Result<SType, Error> {
            let name = n.and_then(|n| n.name()).map(|n| n.text().to_string()).unwrap_or_default();
            self.type_id(&name).map(SType::Named).ok_or_else(|| unknown(&name))
        };
        Ok(match t {
            cst::Type::NamedType(n) => named(Some(n.clone()))?,
            cst::Type::ListType(l) => SType::List(Box::new(self.resolve_cst(&l.ty().ok_or_else(|| unknown(""))?)?)),
            cst::Type::NonNullType(n) => SType::NonNull(Box::new(match (n.named_type(), n.list_type()) {
                (Some(nt), _) => named(Some(nt))?,
                (None, Some(l)) => SType::List(Box::new(self.resolve_cst(&l.ty().ok_or_else(|| unknown(""))?)?)),
                (None, None) => return Err(unknown("")),
            })),
        })
    }

    /// Parse an SDL document. `file` names it in errors.
    pub fn parse(sdl: &str, file: &str) -> Result<Schema, Error> {
        let tree = Parser::new(sdl).parse();
        if let Some(e) = tree.errors().next() {
            let (line, col) = line_col(sdl, e.index());
            return Err(Error::new(ErrorKind::Schema, e.message().to_string()).context(format!("{file}:{line}:{col}")));
        }
        let doc = tree.document();
        let mut b = Builder::default();
        // First pass: every type name, with its kind; then the members, resolved.
        b.declare_types(&doc, file)?;
        for def in doc.definitions() {
            b.members(&def);
        }
        b.possible_types();
        b.finish(file)
    }
}

fn name_of(n: Option<cst::Name>) -> String {
    n.map(|n| n.text().to_string()).unwrap_or_default()
}

fn names_in(i: Option<cst::ImplementsInterfaces>) -> Vec<String> {
    i.map(|i| i.named_types().map(|n| name_of(n.name())).collect()).unwrap_or_default()
}

fn union_members(m: Option<cst::UnionMemberTypes>) -> Vec<String> {
    m.map(|m| m.named_types().map(|n| name_of(n.name())).collect()).unwrap_or_default()
}

/// A schema being read from an SDL syntax tree: what is resolved so far, the problems found,
/// and the interfaces and union members to resolve once every type is known.
struct Builder {
    s: Schema,
    errors: Vec<String>,
    implements: Vec<(TypeId, Vec<String>)>,
    members: Vec<(TypeId, Vec<String>)>,
}

impl Default for Builder {
    fn default() -> Self {
        let s = Schema { names: Names::default(), types: Vec::new(), query: None, mutation: None, subscription: None, directives: HashMap::new() };
        let mut b = Builder { s, errors: Vec::new(), implements: Vec::new(), members: Vec::new() };
        for name in BUILTIN_SCALARS {
            b.declare(name.to_string(), Kind::Scalar);
        }
        b
    }
}

impl Builder {
    /// A type name, with its kind (the first declaration of a name wins).
    fn declare(&mut self, name: String, kind: Kind) {
        let s = &mut self.s;
        if s.names.insert(&name).1 {
            s.types.push(TypeDef {
                name: name.into(),
                kind,
                fields: Fields::default(),
                possible: Vec::new(),
                enum_values: Names::default(),
                inputs: Vec::new(),
            });
        }
    }

    fn declare_types(&mut self, doc: &cst::Document, file: &str) -> Result<(), Error> {
        for def in doc.definitions() {
            use cst::Definition as D;
            let (name, kind) = match &def {
                D::ScalarTypeDefinition(d) => (name_of(d.name()), Kind::Scalar),
                D::ScalarTypeExtension(d) => (name_of(d.name()), Kind::Scalar),
                D::ObjectTypeDefinition(d) => (name_of(d.name()), Kind::Object),
                D::ObjectTypeExtension(d) => (name_of(d.name()), Kind::Object),
                D::InterfaceTypeDefinition(d) => (name_of(d.name()), Kind::Interface),
                D::InterfaceTypeExtension(d) => (name_of(d.name()), Kind::Interface),
                D::UnionTypeDefinition(d) => (name_of(d.name()), Kind::Union),
                D::UnionTypeExtension(d) => (name_of(d.name()), Kind::Union),
                D::EnumTypeDefinition(d) => (name_of(d.name()), Kind::Enum),
                D::EnumTypeExtension(d) => (name_of(d.name()), Kind::Enum),
                D::InputObjectTypeDefinition(d) => (name_of(d.name()), Kind::InputObject),
                D::InputObjectTypeExtension(d) => (name_of(d.name()), Kind::InputObject),
                D::OperationDefinition(_) | D::FragmentDefinition(_) => {
                    return Err(Error::new(ErrorKind::Schema, "a schema holds type definitions, not operations or fragments").context(file.to_string()))
                }
                _ => continue,
            };
            self.declare(name, kind);
        }
        Ok(())
    }

    fn id(&self, name: Option<cst::Name>) -> TypeId {
        self.s.type_id(&name_of(name)).expect("every type is declared by the first pass")
    }

    /// The members of one definition or extension.
    fn members(&mut self, def: &cst::Definition) {
        use cst::Definition as D;
        match def {
            D::ObjectTypeDefinition(d) => self.object(self.id(d.name()), d.fields_definition(), names_in(d.implements_interfaces())),
            D::ObjectTypeExtension(d) => self.object(self.id(d.name()), d.fields_definition(), names_in(d.implements_interfaces())),
            D::InterfaceTypeDefinition(d) => self.fields(self.id(d.name()), d.fields_definition()),
            D::InterfaceTypeExtension(d) => self.fields(self.id(d.name()), d.fields_definition()),
            D::UnionTypeDefinition(d) => self.members.push((self.id(d.name()), union_members(d.union_member_types()))),
            D::UnionTypeExtension(d) => self.members.push((self.id(d.name()), union_members(d.union_member_types()))),
            D::EnumTypeDefinition(d) => self.enum_values(self.id(d.name()), d.enum_values_definition()),
            D::EnumTypeExtension(d) => self.enum_values(self.id(d.name()), d.enum_values_definition()),
            D::InputObjectTypeDefinition(d) => self.input_fields(self.id(d.name()), d.input_fields_definition()),
            D::InputObjectTypeExtension(d) => self.input_fields(self.id(d.name()), d.input_fields_definition()),
            D::DirectiveDefinition(d) => {
                let name = name_of(d.name());
                let args = self.inputs(d.arguments_definition(), &format!("@{name}"));
                self.s.directives.insert(name.into(), args);
            }
            D::SchemaDefinition(d) => self.root_types(d),
            _ => {}
        }
    }

    /// A type of the SDL resolved, or (reported at `at`) none.
    fn resolve(&mut self, t: Option<cst::Type>, at: &str) -> Option<SType> {
        match self.s.resolve_cst(&t?) {
            Ok(st) => Some(st),
            Err(e) => {
                self.errors.push(format!("{at}: {e}"));
                None
            }
        }
    }

    /// Argument definitions.
    fn inputs(&mut self, d: Option<cst::ArgumentsDefinition>, at: &str) -> Vec<InputValue> {
        let Some(d) = d else { return Vec::new() };
        d.input_value_definitions()
            .filter_map(|iv| {
                let name = name_of(iv.name());
                let ty = self.resolve(iv.ty(), &format!("{at}({name})"))?;
                Some(InputValue { name: name.into(), ty, has_default: iv.default_value().is_some() })
            })
            .collect()
    }

    fn object(&mut self, id: TypeId, f: Option<cst::FieldsDefinition>, interfaces: Vec<String>) {
        self.fields(id, f);
        self.implements.push((id, interfaces));
    }

    fn fields(&mut self, id: TypeId, f: Option<cst::FieldsDefinition>) {
        let Some(f) = f else { return };
        for fd in f.field_definitions() {
            let fname = name_of(fd.name());
            let at = format!("{}.{fname}", self.s.ty(id).name);
            let args = self.inputs(fd.arguments_definition(), &at);
            if let Some(ty) = self.resolve(fd.ty(), &at) {
                let base = ty.base();
                let composite = self.s.ty(base).is_composite();
                let required_args = args.iter().any(InputValue::required);
                self.s.types[id as usize].fields.insert(&fname, FieldDef { ty, args, base, composite, required_args });
            }
        }
    }

    fn enum_values(&mut self, id: TypeId, v: Option<cst::EnumValuesDefinition>) {
        for e in v.iter().flat_map(|v| v.enum_value_definitions()) {
            let n = e.enum_value().map(|e| e.text().to_string()).unwrap_or_default();
            self.s.types[id as usize].enum_values.insert(&n);
        }
    }

    fn input_fields(&mut self, id: TypeId, f: Option<cst::InputFieldsDefinition>) {
        let at = self.s.ty(id).name.to_string();
        for iv in f.iter().flat_map(|f| f.input_value_definitions()) {
            let name = name_of(iv.name());
            if let Some(ty) = self.resolve(iv.ty(), &format!("{at}.{name}")) {
                self.s.types[id as usize].inputs.push(InputValue { name: name.into(), ty, has_default: iv.default_value().is_some() });
            }
        }
    }

    /// `schema { query: ... }`.
    fn root_types(&mut self, d: &cst::SchemaDefinition) {
        for r in d.root_operation_type_definitions() {
            let Some(t) = r.named_type().map(|n| name_of(n.name())) else { continue };
            let Some(id) = self.s.type_id(&t) else {
                self.errors.push(format!("schema: unknown root type `{t}`"));
                continue;
            };
            match r.operation_type() {
                Some(o) if o.mutation_token().is_some() => self.s.mutation = Some(id),
                Some(o) if o.subscription_token().is_some() => self.s.subscription = Some(id),
                _ => self.s.query = Some(id),
            }
        }
    }

    /// The object types behind each type: itself for an object, the implementations of an
    /// interface, the members of a union.
    fn possible_types(&mut self) {
        let s = &mut self.s;
        for (i, t) in s.types.iter_mut().enumerate() {
            if t.kind == Kind::Object {
                t.possible.push(i as TypeId);
            }
        }
        for (obj, ifaces) in std::mem::take(&mut self.implements) {
            for i in ifaces {
                match s.type_id(&i) {
                    Some(id) if s.ty(id).kind == Kind::Interface => s.types[id as usize].possible.push(obj),
                    _ => self.errors.push(format!("{}: implements `{i}`, which is not an interface of the schema", s.ty(obj).name)),
                }
            }
        }
        for (u, list) in std::mem::take(&mut self.members) {
            for m in list {
                match s.type_id(&m) {
                    Some(id) if s.ty(id).kind == Kind::Object => s.types[u as usize].possible.push(id),
                    _ => self.errors.push(format!("{}: member `{m}` is not an object type of the schema", s.ty(u).name)),
                }
            }
        }
        for t in &mut s.types {
            t.possible.sort_unstable();
            t.possible.dedup();
        }
    }

    /// Default root types by name, the built-in directives, and the verdict.
    fn finish(mut self, file: &str) -> Result<Schema, Error> {
        let s = &mut self.s;
        s.query = s.query.or_else(|| s.type_id("Query"));
        s.mutation = s.mutation.or_else(|| s.type_id("Mutation"));
        s.subscription = s.subscription.or_else(|| s.type_id("Subscription"));
        if s.query.is_none() {
            self.errors.push("no query root type (`type Query` or `schema { query: ... }`)".into());
        }
        let boolean = SType::NonNull(Box::new(SType::Named(s.type_id("Boolean").expect("a built-in scalar"))));
        for d in ["skip", "include"] {
            s.directives.entry(d.into()).or_insert_with(|| vec![InputValue { name: "if".into(), ty: boolean.clone(), has_default: false }]);
        }
        if !self.errors.is_empty() {
            let n = self.errors.len();
            self.errors.truncate(5);
            let more = if n > 5 { format!(" (and {} more)", n - 5) } else { String::new() };
            return Err(Error::new(ErrorKind::Schema, format!("{}{more}", self.errors.join("; "))).context(file.to_string()));
        }
        Ok(self.s)
    }
}

#[cfg(test)]
mod tests {
    use super::{Names, HEAD};

    #[test]
    fn name_sets_find_exactly_the_names_added() {
        let words = ["a", "id", "nameWithOwner", "exactlySixteen16", "exactlySixteen1", "statusCheckRollup", "statusCheckRollups", "statusCheckRollupX"];
        assert!(words.iter().any(|w| w.len() == HEAD) && words.iter().any(|w| w.len() > HEAD));
        let mut n = Names::default();
        for (i, w) in words.iter().enumerate() {
            assert_eq!(n.insert(w), (i, true), "{w}");
        }
        assert_eq!(n.insert("id"), (1, false));
        assert_eq!(n.len(), words.len());
        for (i, w) in words.iter().enumerate() {
            assert_eq!(n.index(w), Some(i), "{w}");
            assert_eq!(n.name(i), *w);
        }
        // Same head, other tail; prefixes; other case.
        for miss in
            ["b", "ID", "Id", "statusCheckRollupY", "statusCheckRollu", "statusCheckRollupsX", "exactlySixteen16x", "exactlySixteen", "nameWithOwne", ""]
        {
            assert_eq!(n.index(miss), None, "{miss}");
        }
        assert!(Names::default().index("a").is_none());
        // A table that grew many times still holds every name, and only them.
        let many: Vec<String> = (0..3000).map(|i| format!("someLongFieldName{i}")).collect();
        let mut n = Names::default();
        for (i, w) in many.iter().enumerate() {
            assert_eq!(n.insert(w), (i, true));
        }
        for (i, w) in many.iter().enumerate() {
            assert_eq!(n.index(w), Some(i));
        }
        assert_eq!(n.index("someLongFieldName3000"), None);
        assert!(n.iter().eq(many.iter().map(String::as_str)));
    }
}
