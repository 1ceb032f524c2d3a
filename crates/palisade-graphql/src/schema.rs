//! A GraphQL schema (SDL) as a compact index for request validation: types by name, fields with
//! their argument types, input object fields, enum values, the object types behind each
//! interface and union (for fragments' type conditions), the root operation types, and
//! directives with their arguments. Parsed once at configuration load; type extensions
//! (`extend type ...`) are merged into their types.

use apollo_parser::cst;
use apollo_parser::Parser;
use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};

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

#[derive(Clone, Debug)]
pub struct TypeDef {
    pub name: Box<str>,
    pub kind: Kind,
    /// Objects and interfaces.
    pub fields: HashMap<Box<str>, FieldDef>,
    /// The object types a value of this type can be (itself for an object), sorted.
    pub possible: Vec<TypeId>,
    pub enum_values: HashSet<Box<str>>,
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
    names: HashMap<Box<str>, TypeId>,
    types: Vec<TypeDef>,
    pub query: Option<TypeId>,
    pub mutation: Option<TypeId>,
    pub subscription: Option<TypeId>,
    directives: HashMap<Box<str>, Vec<InputValue>>,
}

/// Types and the type names they link to, resolved after every type is declared: the
/// interfaces an object type implements, the members of a union.
type Links = Vec<(TypeId, Vec<String>)>;

const BUILTIN_SCALARS: [&str; 5] = ["Int", "Float", "String", "Boolean", "ID"];

impl Schema {
    pub fn type_id(&self, name: &str) -> Option<TypeId> {
        self.names.get(name).copied()
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
        let mut s = Schema::declare(&doc, file)?;
        let mut errors: Vec<String> = Vec::new();
        let (implements, members) = s.define(&doc, &mut errors);
        s.link_possible(implements, members, &mut errors);
        s.default_roots(&mut errors);
        if !errors.is_empty() {
            let n = errors.len();
            errors.truncate(5);
            let more = if n > 5 { format!(" (and {} more)", n - 5) } else { String::new() };
            return Err(Error::new(ErrorKind::Schema, format!("{}{more}", errors.join("; "))).context(file.to_string()));
        }
        Ok(s)
    }

    /// First pass: every type name, with its kind (the built-in scalars first).
    fn declare(doc: &cst::Document, file: &str) -> Result<Schema, Error> {
        let mut s = Schema { names: HashMap::new(), types: Vec::new(), query: None, mutation: None, subscription: None, directives: HashMap::new() };
        for b in BUILTIN_SCALARS {
            s.add_type(b.to_string(), Kind::Scalar);
        }
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
            s.add_type(name, kind);
        }
        Ok(s)
    }

    /// A type, unless one of that name is declared already.
    fn add_type(&mut self, name: String, kind: Kind) {
        if !self.names.contains_key(name.as_str()) {
            let id = self.types.len() as TypeId;
            self.names.insert(name.clone().into(), id);
            self.types.push(TypeDef { name: name.into(), kind, fields: HashMap::new(), possible: Vec::new(), enum_values: HashSet::new(), inputs: Vec::new() });
        }
    }

    /// Second pass: the members of each type (fields, enum values, input fields), directives
    /// and root types, their types resolved. Gives, for the third pass, the interfaces each
    /// object type implements and the members of each union, by name.
    fn define(&mut self, doc: &cst::Document, errors: &mut Vec<String>) -> (Links, Links) {
        let mut implements: Links = Vec::new();
        let mut members: Links = Vec::new();
        for def in doc.definitions() {
            use cst::Definition as D;
            match &def {
                D::ObjectTypeDefinition(d) => {
                    let id = self.names[name_of(d.name()).as_str()];
                    self.add_fields(id, d.fields_definition(), errors);
                    implements.push((id, names_in(d.implements_interfaces())));
                }
                D::ObjectTypeExtension(d) => {
                    let id = self.names[name_of(d.name()).as_str()];
                    self.add_fields(id, d.fields_definition(), errors);
                    implements.push((id, names_in(d.implements_interfaces())));
                }
                D::InterfaceTypeDefinition(d) => {
                    let id = self.names[name_of(d.name()).as_str()];
                    self.add_fields(id, d.fields_definition(), errors);
                }
                D::InterfaceTypeExtension(d) => {
                    let id = self.names[name_of(d.name()).as_str()];
                    self.add_fields(id, d.fields_definition(), errors);
                }
                D::UnionTypeDefinition(d) => members.push((self.names[name_of(d.name()).as_str()], union_members(d.union_member_types()))),
                D::UnionTypeExtension(d) => members.push((self.names[name_of(d.name()).as_str()], union_members(d.union_member_types()))),
                D::EnumTypeDefinition(d) => self.add_enum_values(self.names[name_of(d.name()).as_str()], d.enum_values_definition()),
                D::EnumTypeExtension(d) => self.add_enum_values(self.names[name_of(d.name()).as_str()], d.enum_values_definition()),
                D::InputObjectTypeDefinition(d) => self.add_input_fields(self.names[name_of(d.name()).as_str()], d.input_fields_definition(), errors),
                D::InputObjectTypeExtension(d) => self.add_input_fields(self.names[name_of(d.name()).as_str()], d.input_fields_definition(), errors),
                D::DirectiveDefinition(d) => {
                    let name = name_of(d.name());
                    let args = self.inputs(d.arguments_definition(), errors, &format!("@{name}"));
                    self.directives.insert(name.into(), args);
                }
                D::SchemaDefinition(d) => self.set_roots(d, errors),
                _ => {}
            }
        }
        (implements, members)
    }

    /// A type reference resolved, or the error recorded (at `at`).
    fn resolve_at(&self, t: Option<cst::Type>, errors: &mut Vec<String>, at: &str) -> Option<SType> {
        match self.resolve_cst(&t?) {
            Ok(st) => Some(st),
            Err(e) => {
                errors.push(format!("{at}: {e}"));
                None
            }
        }
    }

    /// The arguments of a field or directive (those whose type resolves).
    fn inputs(&self, d: Option<cst::ArgumentsDefinition>, errors: &mut Vec<String>, at: &str) -> Vec<InputValue> {
        d.map(|d| {
            d.input_value_definitions()
                .filter_map(|iv| {
                    let name = name_of(iv.name());
                    let ty = self.resolve_at(iv.ty(), errors, &format!("{at}({name})"))?;
                    Some(InputValue { name: name.into(), ty, has_default: iv.default_value().is_some() })
                })
                .collect()
        })
        .unwrap_or_default()
    }

    /// The fields of an object or interface type.
    fn add_fields(&mut self, id: TypeId, f: Option<cst::FieldsDefinition>, errors: &mut Vec<String>) {
        let Some(f) = f else { return };
        for fd in f.field_definitions() {
            let fname = name_of(fd.name());
            let at = format!("{}.{fname}", self.ty(id).name);
            let args = self.inputs(fd.arguments_definition(), errors, &at);
            if let Some(ty) = self.resolve_at(fd.ty(), errors, &at) {
                let base = ty.base();
                let composite = self.ty(base).is_composite();
                let required_args = args.iter().any(InputValue::required);
                self.types[id as usize].fields.insert(fname.into(), FieldDef { ty, args, base, composite, required_args });
            }
        }
    }

    fn add_enum_values(&mut self, id: TypeId, v: Option<cst::EnumValuesDefinition>) {
        for e in v.iter().flat_map(|v| v.enum_value_definitions()) {
            let n = e.enum_value().map(|e| e.text().to_string()).unwrap_or_default();
            self.types[id as usize].enum_values.insert(n.into());
        }
    }

    /// The fields of an input object type (those whose type resolves).
    fn add_input_fields(&mut self, id: TypeId, f: Option<cst::InputFieldsDefinition>, errors: &mut Vec<String>) {
        let at = self.ty(id).name.to_string();
        let mut list = Vec::new();
        for iv in f.iter().flat_map(|f| f.input_value_definitions()) {
            let name = name_of(iv.name());
            if let Some(ty) = self.resolve_at(iv.ty(), errors, &format!("{at}.{name}")) {
                list.push(InputValue { name: name.into(), ty, has_default: iv.default_value().is_some() });
            }
        }
        self.types[id as usize].inputs.extend(list);
    }

    /// `schema { query: ..., mutation: ..., subscription: ... }`.
    fn set_roots(&mut self, d: &cst::SchemaDefinition, errors: &mut Vec<String>) {
        for r in d.root_operation_type_definitions() {
            let Some(t) = r.named_type().map(|n| name_of(n.name())) else { continue };
            let Some(id) = self.type_id(&t) else {
                errors.push(format!("schema: unknown root type `{t}`"));
                continue;
            };
            match r.operation_type() {
                Some(o) if o.mutation_token().is_some() => self.mutation = Some(id),
                Some(o) if o.subscription_token().is_some() => self.subscription = Some(id),
                _ => self.query = Some(id),
            }
        }
    }

    /// Third pass: the object types possible behind each type (itself for an object type; the
    /// implementations of an interface; the members of a union).
    fn link_possible(&mut self, implements: Links, members: Links, errors: &mut Vec<String>) {
        for (i, t) in self.types.iter_mut().enumerate() {
            if t.kind == Kind::Object {
                t.possible.push(i as TypeId);
            }
        }
        for (obj, ifaces) in implements {
            for i in ifaces {
                match self.type_id(&i) {
                    Some(id) if self.ty(id).kind == Kind::Interface => self.types[id as usize].possible.push(obj),
                    _ => errors.push(format!("{}: implements `{i}`, which is not an interface of the schema", self.ty(obj).name)),
                }
            }
        }
        for (u, list) in members {
            for m in list {
                match self.type_id(&m) {
                    Some(id) if self.ty(id).kind == Kind::Object => self.types[u as usize].possible.push(id),
                    _ => errors.push(format!("{}: member `{m}` is not an object type of the schema", self.ty(u).name)),
                }
            }
        }
        for t in &mut self.types {
            t.possible.sort_unstable();
            t.possible.dedup();
        }
    }

    /// Root types by their conventional names when the schema names none, and the built-in
    /// `@skip` / `@include` directives.
    fn default_roots(&mut self, errors: &mut Vec<String>) {
        self.query = self.query.or_else(|| self.type_id("Query"));
        self.mutation = self.mutation.or_else(|| self.type_id("Mutation"));
        self.subscription = self.subscription.or_else(|| self.type_id("Subscription"));
        if self.query.is_none() {
            errors.push("no query root type (`type Query` or `schema { query: ... }`)".into());
        }
        let boolean = SType::NonNull(Box::new(SType::Named(self.names["Boolean"])));
        for d in ["skip", "include"] {
            self.directives.entry(d.into()).or_insert_with(|| vec![InputValue { name: "if".into(), ty: boolean.clone(), has_default: false }]);
        }
    }
}

fn name_of(n: Option<cst::Name>) -> String {
    n.map(|n| n.text().to_string()).unwrap_or_default()
}

/// The interface names of `implements A & B`.
fn names_in(i: Option<cst::ImplementsInterfaces>) -> Vec<String> {
    i.map(|i| i.named_types().map(|n| name_of(n.name())).collect()).unwrap_or_default()
}

/// The member names of `union U = A | B`.
fn union_members(m: Option<cst::UnionMemberTypes>) -> Vec<String> {
    m.map(|m| m.named_types().map(|n| name_of(n.name())).collect()).unwrap_or_default()
}
