//! An executable GraphQL document (operations and fragments) as a small tree that borrows its
//! names and plain strings from the request text, built by [`crate::parser`] in one pass over
//! the text. A document with any syntax error is refused whole ([`ErrorKind::Syntax`]), so
//! everything below only sees well-formed documents.
//!
//! Nesting is bounded by the parser ([`NESTING_LIMIT`]), which also bounds the recursion of
//! the walks in [`crate::check`].

use std::borrow::Cow;

use crate::Error;
#[cfg(doc)]
use crate::ErrorKind;

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

/// The selections of every selection set live in one vector of the document, in document order
/// (each selection before the selections inside it), each linked to the next selection of its
/// set ([`Document::set`] reads a set by its [`Set`]): the parser writes each selection once,
/// where it stays. The arguments of every field and directive live in another vector
/// ([`Document::args`]) and the directives of everything in a third ([`Document::dirs`]): a
/// document is a handful of allocations, not one per list, and its nodes are small and plain.
#[derive(Clone, Debug, Default)]
pub struct Document<'s> {
    pub operations: Vec<Operation<'s>>,
    pub fragments: Vec<Fragment<'s>>,
    pub selections: Vec<Selection<'s>>,
    /// By selection: the index of the next selection of its set ([`Set::END`] after the last).
    pub next: Vec<u32>,
    pub arguments: Vec<(&'s str, Value<'s>)>,
    pub directives: Vec<Directive<'s>>,
    /// Every fragment spread with the definition it is written in, in document order: which
    /// fragments each definition uses, without walking its selections.
    pub spreads: Vec<(Definition, &'s str)>,
}

/// An operation or a fragment of a document, by its index in [`Document::operations`] or
/// [`Document::fragments`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Definition {
    Operation(u32),
    Fragment(u32),
}

/// The arguments of a field or a directive: a range of [`Document::arguments`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Args {
    pub start: u32,
    pub len: u32,
}

impl Args {
    pub fn is_empty(self) -> bool {
        self.len == 0
    }
}

/// The directives of a definition, a variable or a selection: a range of
/// [`Document::directives`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Dirs {
    pub start: u32,
    pub len: u32,
}

impl Dirs {
    pub fn is_empty(self) -> bool {
        self.len == 0
    }
}

/// A selection set: its first selection in [`Document::selections`] and how many it holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Set {
    pub start: u32,
    pub len: u32,
    /// A string literal is written somewhere inside (an argument at any depth): the walks that
    /// collect literals skip the sets without.
    pub literals: bool,
}

impl Set {
    /// The link after the last selection of a set.
    pub const END: u32 = u32::MAX;

    pub fn is_empty(self) -> bool {
        self.len == 0
    }
}

/// The selections of a set, in order.
#[derive(Clone, Debug)]
pub struct SetIter<'d, 's> {
    doc: &'d Document<'s>,
    at: u32,
    left: u32,
}

impl<'d, 's> Iterator for SetIter<'d, 's> {
    type Item = &'d Selection<'s>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        let i = self.at as usize;
        self.left -= 1;
        self.at = *self.doc.next.get(i)?;
        self.doc.selections.get(i)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, Some(self.left as usize))
    }
}

impl<'s> Document<'s> {
    /// The selections of a set.
    pub fn set(&self, s: Set) -> SetIter<'_, 's> {
        SetIter { doc: self, at: s.start, left: s.len }
    }

    /// The directives of a node.
    pub fn dirs(&self, d: Dirs) -> &[Directive<'s>] {
        &self.directives[d.start as usize..][..d.len as usize]
    }

    /// Arguments (name, value).
    pub fn args(&self, a: Args) -> &[(&'s str, Value<'s>)] {
        &self.arguments[a.start as usize..][..a.len as usize]
    }
}

#[derive(Clone, Debug)]
pub struct Operation<'s> {
    pub kind: OpKind,
    pub name: Option<&'s str>,
    pub variables: Vec<VarDef<'s>>,
    pub directives: Dirs,
    pub selections: Set,
}

#[derive(Clone, Debug)]
pub struct VarDef<'s> {
    pub name: &'s str,
    pub ty: TypeRef<'s>,
    pub default: Option<Value<'s>>,
    pub directives: Dirs,
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
    pub directives: Dirs,
    pub selections: Set,
}

#[derive(Clone, Debug)]
pub enum Selection<'s> {
    Field(Field<'s>),
    Spread { name: &'s str, directives: Dirs },
    Inline { on: Option<&'s str>, directives: Dirs, selections: Set },
}

#[derive(Clone, Debug)]
pub struct Field<'s> {
    pub alias: Option<&'s str>,
    pub name: &'s str,
    pub arguments: Args,
    pub directives: Dirs,
    pub selections: Set,
}

#[derive(Clone, Debug)]
pub struct Directive<'s> {
    pub name: &'s str,
    pub arguments: Args,
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

/// Parse an executable document. `token_limit` bounds the parser's work (tokens read).
pub fn parse(src: &str, token_limit: usize) -> Result<Document<'_>, Error> {
    crate::parser::parse(src, token_limit)
}
