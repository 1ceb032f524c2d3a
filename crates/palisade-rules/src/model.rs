//! Rules as decoded from YAML, before compilation: fields, operators, boolean structure and
//! actions. [`crate::compile`] turns a list of them into automata.

use std::fmt;

/// What part of a request an atom looks at.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Field {
    /// The method (`GET`).
    Method,
    /// The path: decoded (percent-decoding, dot segments resolved, `//` merged) or raw.
    Path,
    /// The whole query string (without `?`): decoded (percent-decoding, `+` as space) or raw.
    Query,
    /// Every value of the query parameter with this (decoded) name.
    QueryParam(String),
    /// Every value of the header with this name (lower case).
    Header(String),
    /// Every value of the cookie with this name: decoded (percent-decoding) or raw.
    Cookie(String),
    /// The raw body bytes (as buffered).
    Body,
    /// The value at a JSON pointer into the body (parsed once per request), as unescaped
    /// segments. An array there gives each of its items.
    BodyPointer(Vec<String>),
    /// The client address (after trusted-proxy resolution).
    Ip,
    /// The OpenAPI operation the request matched (operationId, else `METHOD /template`), set by
    /// the OpenAPI stage.
    Operation,
}

impl Field {
    /// Whether the field needs the body phase.
    pub fn needs_body(&self) -> bool {
        matches!(self, Field::Body | Field::BodyPointer(_))
    }

    /// Whether a decoded form differs from the raw form for this field.
    pub fn has_raw_form(&self) -> bool {
        matches!(self, Field::Path | Field::Query | Field::QueryParam(_) | Field::Cookie(_))
    }
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Field::Method => f.write_str("method"),
            Field::Path => f.write_str("path"),
            Field::Query => f.write_str("query"),
            Field::QueryParam(n) => write!(f, "query.{n}"),
            Field::Header(n) => write!(f, "header.{n}"),
            Field::Cookie(n) => write!(f, "cookie.{n}"),
            Field::Body => f.write_str("body"),
            Field::BodyPointer(segs) => {
                f.write_str("body:")?;
                for s in segs {
                    write!(f, "/{}", s.replace('~', "~0").replace('/', "~1"))?;
                }
                Ok(())
            }
            Field::Ip => f.write_str("ip"),
            Field::Operation => f.write_str("operation"),
        }
    }
}

/// A comparison on a number (the value parsed as a decimal number, or its length).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Cmp {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
}

impl Cmp {
    pub fn holds(self, value: f64, threshold: f64) -> bool {
        match self {
            Cmp::Lt => value < threshold,
            Cmp::Le => value <= threshold,
            Cmp::Gt => value > threshold,
            Cmp::Ge => value >= threshold,
            Cmp::Eq => value == threshold,
        }
    }

    pub const ALL: [(&'static str, Cmp); 5] = [("lt", Cmp::Lt), ("le", Cmp::Le), ("gt", Cmp::Gt), ("ge", Cmp::Ge), ("eq", Cmp::Eq)];
}

/// One test on the values of a field. Operators that take a list hold when any item does.
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    /// The field has at least one value (a header, parameter, cookie or pointer present).
    Exists,
    /// Equal to one of these (also written `in:`).
    Equals(Vec<Vec<u8>>),
    Prefix(Vec<Vec<u8>>),
    Suffix(Vec<Vec<u8>>),
    Contains(Vec<Vec<u8>>),
    /// Unanchored regular expression search (any of these patterns).
    Regex(Vec<String>),
    /// The value (an IP address) lies in one of these networks.
    Cidr(Vec<ipnet::IpNet>),
    /// The value parsed as a number compares so.
    Number(Cmp, f64),
    /// The value's length in bytes compares so.
    Length(Cmp, f64),
}

/// A test of one field: true when any value of the field passes `op`.
#[derive(Clone, Debug, PartialEq)]
pub struct Atom {
    pub field: Field,
    /// Match the raw (undecoded) form of the value.
    pub raw: bool,
    /// ASCII case-insensitive literals; case-insensitive (Unicode) regexes.
    pub ignore_case: bool,
    pub op: Op,
}

/// The boolean structure of a rule's `when`.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    Atom(Atom),
    All(Vec<Expr>),
    Any(Vec<Expr>),
    Not(Box<Expr>),
}

impl Expr {
    /// Whether any atom of the expression needs the body.
    pub fn needs_body(&self) -> bool {
        match self {
            Expr::Atom(a) => a.field.needs_body(),
            Expr::All(v) | Expr::Any(v) => v.iter().any(Expr::needs_body),
            Expr::Not(e) => e.needs_body(),
        }
    }

    /// Evaluate with every atom's truth given by `atom` (a reference evaluator for tests and
    /// explanations; the compiled form is [`crate::compile::Rules`]).
    pub fn eval_with(&self, atom: &mut dyn FnMut(&Atom) -> bool) -> bool {
        match self {
            Expr::Atom(a) => atom(a),
            Expr::All(v) => v.iter().all(|e| e.eval_with(atom)),
            Expr::Any(v) => v.iter().any(|e| e.eval_with(atom)),
            Expr::Not(e) => !e.eval_with(atom),
        }
    }
}

/// What a matching rule does with the request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Stop the request (with this status, else the app's block status). Ends rule evaluation.
    Block(Option<u16>),
    /// Record what would have been blocked and go on.
    Monitor,
    /// Let the request through the inspecting stages after this one. Ends rule evaluation.
    Allow,
    /// Only tags and exceptions.
    None,
}

/// A false-positive exception: skip these detectors (names or categories; `*` = every one),
/// on these field locations only when any are given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skip {
    pub detectors: Vec<String>,
    pub fields: Vec<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Rule {
    pub id: String,
    pub name: Option<String>,
    pub when: Expr,
    pub action: Action,
    pub tags: Vec<String>,
    pub skip: Option<Skip>,
    /// Where the rule was written (`rules.yaml:3:3`), for explanations.
    pub origin: String,
}
