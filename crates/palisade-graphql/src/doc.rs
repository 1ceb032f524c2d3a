//! An executable GraphQL document (operations and fragments) as a small tree that borrows its
//! names from the request text, built from `apollo-parser`'s lossless syntax tree. The parser
//! is error-tolerant and never panics; a document with any syntax error is refused whole
//! ([`ErrorKind::Syntax`]), so everything below only sees well-formed documents.
//!
//! Nesting is bounded by the parser's recursion limit ([`NESTING_LIMIT`]), which also bounds
//! the recursion of the conversion here and of the walks in [`crate::check`].

use std::borrow::Cow;

use apollo_parser::cst::{self, CstNode};
use apollo_parser::Parser;

use crate::{Error, ErrorKind};

/// Nesting of selection sets, lists and input objects the parser accepts in one document.
pub const NESTING_LIMIT: usize = 128;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpKind {
    Query,
    Mutation,
    Subscription,
}

impl OpKind {
    pub fn as_str(self) -> &'static str {
        match self {
            OpKind::Query => "query",
            OpKind::Mutation => "mutation",
            OpKind::Subscription => "subscription",
        }
    }
}

#[derive(Clone, Debug, Default)]
pub struct Document<'s> {
    pub operations: Vec<Operation<'s>>,
    pub fragments: Vec<Fragment<'s>>,
}

#[derive(Clone, Debug)]
pub struct Operation<'s> {
    pub kind: OpKind,
    pub name: Option<&'s str>,
    pub variables: Vec<VarDef<'s>>,
    pub directives: Vec<Directive<'s>>,
    pub selections: Vec<Selection<'s>>,
}

#[derive(Clone, Debug)]
pub struct VarDef<'s> {
    pub name: &'s str,
    pub ty: TypeRef<'s>,
    pub default: Option<Value<'s>>,
    pub directives: Vec<Directive<'s>>,
}

/// A type as written in a variable definition (`[ID!]!`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TypeRef<'s> {
    Named(&'s str),
    List(Box<TypeRef<'s>>),
    NonNull(Box<TypeRef<'s>>),
}

impl TypeRef<'_> {
    /// The named type inside the list and non-null wrappers.
    pub fn base(&self) -> &str {
        match self {
            TypeRef::Named(n) => n,
            TypeRef::List(t) | TypeRef::NonNull(t) => t.base(),
        }
    }
}

impl std::fmt::Display for TypeRef<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TypeRef::Named(n) => f.write_str(n),
            TypeRef::List(t) => write!(f, "[{t}]"),
            TypeRef::NonNull(t) => write!(f, "{t}!"),
        }
    }
}

#[derive(Clone, Debug)]
pub struct Fragment<'s> {
    pub name: &'s str,
    pub on: &'s str,
    pub directives: Vec<Directive<'s>>,
    pub selections: Vec<Selection<'s>>,
}

#[derive(Clone, Debug)]
pub enum Selection<'s> {
    Field(Field<'s>),
    Spread { name: &'s str, directives: Vec<Directive<'s>> },
    Inline { on: Option<&'s str>, directives: Vec<Directive<'s>>, selections: Vec<Selection<'s>> },
}

#[derive(Clone, Debug)]
pub struct Field<'s> {
    pub alias: Option<&'s str>,
    pub name: &'s str,
    pub arguments: Vec<(&'s str, Value<'s>)>,
    pub directives: Vec<Directive<'s>>,
    pub selections: Vec<Selection<'s>>,
}

#[derive(Clone, Debug)]
pub struct Directive<'s> {
    pub name: &'s str,
    pub arguments: Vec<(&'s str, Value<'s>)>,
}

/// A literal or a variable, as written in the document.
#[derive(Clone, Debug, PartialEq)]
pub enum Value<'s> {
    Variable(&'s str),
    Int(&'s str),
    Float(&'s str),
    /// Unescaped (block strings with their indentation removed).
    String(Cow<'s, str>),
    Boolean(bool),
    Null,
    Enum(&'s str),
    List(Vec<Value<'s>>),
    Object(Vec<(&'s str, Value<'s>)>),
}

impl Value<'_> {
    /// What kind of literal this is, for messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Variable(_) => "a variable",
            Value::Int(_) => "an integer",
            Value::Float(_) => "a float",
            Value::String(_) => "a string",
            Value::Boolean(_) => "a boolean",
            Value::Null => "null",
            Value::Enum(_) => "an enum value",
            Value::List(_) => "a list",
            Value::Object(_) => "an input object",
        }
    }
}

/// Line and column (1-based) of byte `offset` in `src`.
pub fn line_col(src: &str, offset: usize) -> (usize, usize) {
    let before = &src.as_bytes()[..offset.min(src.len())];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let col = before.iter().rev().take_while(|&&b| b != b'\n').count() + 1;
    (line, col)
}

/// Parse an executable document. `token_limit` bounds the parser's work.
pub fn parse(src: &str, token_limit: usize) -> Result<Document<'_>, Error> {
    let tree = Parser::new(src).recursion_limit(NESTING_LIMIT).token_limit(token_limit).parse();
    if let Some(e) = tree.errors().next() {
        let (line, col) = line_col(src, e.index());
        let kind = if e.is_limit() { ErrorKind::Limit } else { ErrorKind::Syntax };
        return Err(Error::new(kind, format!("{} at line {line}, column {col}", e.message())));
    }
    let mut doc = Document::default();
    let cv = Conv { src };
    for def in tree.document().definitions() {
        match def {
            cst::Definition::OperationDefinition(op) => doc.operations.push(cv.operation(&op)),
            cst::Definition::FragmentDefinition(f) => doc.fragments.push(cv.fragment(&f)),
            other => {
                let (line, col) = line_col(src, usize::from(other.syntax().text_range().start()));
                return Err(Error::new(
                    ErrorKind::Syntax,
                    format!("a request holds operations and fragments only, not a {} (line {line}, column {col})", other.kind()),
                ));
            }
        }
    }
    if doc.operations.is_empty() {
        return Err(Error::new(ErrorKind::Syntax, "the document holds no operation"));
    }
    Ok(doc)
}

/// Conversion from the syntax tree, borrowing names from the source text.
struct Conv<'s> {
    src: &'s str,
}

impl<'s> Conv<'s> {
    fn token(&self, t: Option<apollo_parser::SyntaxToken>) -> &'s str {
        t.map_or("", |t| {
            let r = t.text_range();
            &self.src[usize::from(r.start())..usize::from(r.end())]
        })
    }

    fn name(&self, n: Option<cst::Name>) -> &'s str {
        self.token(n.and_then(|n| n.ident_token()))
    }

    fn operation(&self, op: &cst::OperationDefinition) -> Operation<'s> {
        let kind = match op.operation_type() {
            Some(t) if t.mutation_token().is_some() => OpKind::Mutation,
            Some(t) if t.subscription_token().is_some() => OpKind::Subscription,
            _ => OpKind::Query,
        };
        let name = op.name().map(|n| self.name(Some(n)));
        let variables = op
            .variable_definitions()
            .map(|v| {
                v.variable_definitions()
                    .map(|d| VarDef {
                        name: self.name(d.variable().and_then(|v| v.name())),
                        ty: d.ty().map_or(TypeRef::Named(""), |t| self.ty(&t)),
                        default: d.default_value().and_then(|dv| dv.value()).map(|v| self.value(&v)),
                        directives: self.directives(d.directives()),
                    })
                    .collect()
            })
            .unwrap_or_default();
        Operation { kind, name, variables, directives: self.directives(op.directives()), selections: self.selections(op.selection_set()) }
    }

    fn fragment(&self, f: &cst::FragmentDefinition) -> Fragment<'s> {
        Fragment {
            name: self.name(f.fragment_name().and_then(|n| n.name())),
            on: self.name(f.type_condition().and_then(|t| t.named_type()).and_then(|n| n.name())),
            directives: self.directives(f.directives()),
            selections: self.selections(f.selection_set()),
        }
    }

    fn ty(&self, t: &cst::Type) -> TypeRef<'s> {
        match t {
            cst::Type::NamedType(n) => TypeRef::Named(self.name(n.name())),
            cst::Type::ListType(l) => TypeRef::List(Box::new(l.ty().map_or(TypeRef::Named(""), |t| self.ty(&t)))),
            cst::Type::NonNullType(n) => {
                let inner = match (n.named_type(), n.list_type()) {
                    (Some(named), _) => TypeRef::Named(self.name(named.name())),
                    (None, Some(list)) => TypeRef::List(Box::new(list.ty().map_or(TypeRef::Named(""), |t| self.ty(&t)))),
                    (None, None) => TypeRef::Named(""),
                };
                TypeRef::NonNull(Box::new(inner))
            }
        }
    }

    fn directives(&self, d: Option<cst::Directives>) -> Vec<Directive<'s>> {
        d.map(|d| d.directives().map(|d| Directive { name: self.name(d.name()), arguments: self.arguments(d.arguments()) }).collect()).unwrap_or_default()
    }

    fn arguments(&self, a: Option<cst::Arguments>) -> Vec<(&'s str, Value<'s>)> {
        a.map(|a| a.arguments().map(|a| (self.name(a.name()), a.value().map_or(Value::Null, |v| self.value(&v)))).collect()).unwrap_or_default()
    }

    fn selections(&self, s: Option<cst::SelectionSet>) -> Vec<Selection<'s>> {
        let Some(s) = s else { return Vec::new() };
        s.selections()
            .map(|s| match s {
                cst::Selection::Field(f) => Selection::Field(Field {
                    alias: f.alias().map(|a| self.name(a.name())),
                    name: self.name(f.name()),
                    arguments: self.arguments(f.arguments()),
                    directives: self.directives(f.directives()),
                    selections: self.selections(f.selection_set()),
                }),
                cst::Selection::FragmentSpread(sp) => {
                    Selection::Spread { name: self.name(sp.fragment_name().and_then(|n| n.name())), directives: self.directives(sp.directives()) }
                }
                cst::Selection::InlineFragment(i) => Selection::Inline {
                    on: i.type_condition().and_then(|t| t.named_type()).map(|n| self.name(n.name())),
                    directives: self.directives(i.directives()),
                    selections: self.selections(i.selection_set()),
                },
            })
            .collect()
    }

    fn value(&self, v: &cst::Value) -> Value<'s> {
        match v {
            cst::Value::Variable(v) => Value::Variable(self.name(v.name())),
            cst::Value::StringValue(s) => {
                let raw = s.syntax().text_range();
                let text = &self.src[usize::from(raw.start())..usize::from(raw.end())];
                // A plain string without escapes is its own value, borrowed.
                let plain = text.trim();
                if plain.len() >= 2 && plain.ends_with('"') && !plain.starts_with("\"\"\"") && !plain[1..plain.len() - 1].contains(['\\', '"']) {
                    let start = text.find('"').unwrap_or(0) + 1;
                    Value::String(Cow::Borrowed(&text[start..start + plain.len() - 2]))
                } else {
                    Value::String(Cow::Owned(String::from(s)))
                }
            }
            cst::Value::FloatValue(f) => Value::Float(self.token(f.float_token())),
            cst::Value::IntValue(i) => Value::Int(self.token(i.int_token())),
            cst::Value::BooleanValue(b) => Value::Boolean(b.true_token().is_some()),
            cst::Value::NullValue(_) => Value::Null,
            cst::Value::EnumValue(e) => Value::Enum(self.name(e.name())),
            cst::Value::ListValue(l) => Value::List(l.values().map(|v| self.value(&v)).collect()),
            cst::Value::ObjectValue(o) => {
                Value::Object(o.object_fields().map(|f| (self.name(f.name()), f.value().map_or(Value::Null, |v| self.value(&v)))).collect())
            }
        }
    }
}
