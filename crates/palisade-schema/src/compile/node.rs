//! The compiled form of a schema: [`SNode`] and what it holds (constants, property tables,
//! the keywords few schemas use), and the [`quick`] kinds of instance the validators accept
//! without evaluating anything.

use palisade_config::yaml::{Node, Value};

use crate::formats::Format;
use crate::num::Num;
use crate::{SchemaId, TypeSet};

/// A constant for `enum` and `const`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Const {
    Null,
    Bool(bool),
    Num(Num),
    Str(Box<[u8]>),
    Arr(Vec<Const>),
    Obj(Vec<(Box<[u8]>, Const)>),
}

/// Property names with a small open-addressing hash table over their bytes.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct PropTable {
    pub names: Vec<Box<[u8]>>,
    pub ids: Vec<SchemaId>,
    /// Per property (filled at finish): the [`quick`] kinds of instance that its schema
    /// accepts without evaluating anything else.
    pub quick: Vec<u8>,
    slots: Vec<u16>,
    mask: usize,
}

const EMPTY: u16 = u16::MAX;

#[inline(always)]
pub(crate) fn key_hash(k: &[u8]) -> u64 {
    let n = k.len();
    let (a, b) = if n >= 8 {
        (u64::from_le_bytes(k[..8].try_into().unwrap()), u64::from_le_bytes(k[n - 8..].try_into().unwrap()))
    } else {
        let mut a = 0u64;
        for &c in k {
            a = a << 8 | c as u64;
        }
        (a, 0)
    };
    (a ^ b.rotate_left(29) ^ (n as u64).wrapping_mul(0x9E37_79B9)).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 20
}

/// Equality of short byte strings without a call to `memcmp`.
#[inline(always)]
pub(crate) fn bytes_eq(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    if n >= 8 {
        let w = |s: &[u8], i: usize| u64::from_le_bytes(s[i..i + 8].try_into().unwrap());
        if w(a, 0) != w(b, 0) || w(a, n - 8) != w(b, n - 8) {
            return false;
        }
        n <= 16 || (n <= 24 && w(a, 8) == w(b, 8)) || (n > 24 && a[8..n - 8] == b[8..n - 8])
    } else if n >= 4 {
        let w = |s: &[u8], i: usize| u32::from_le_bytes(s[i..i + 4].try_into().unwrap());
        w(a, 0) == w(b, 0) && w(a, n - 4) == w(b, n - 4)
    } else {
        a.iter().zip(b).all(|(x, y)| x == y)
    }
}

impl PropTable {
    pub fn push(&mut self, name: &[u8], id: SchemaId) {
        if let Some(i) = self.find(name) {
            self.ids[i] = id;
            return;
        }
        self.names.push(name.into());
        self.ids.push(id);
        self.quick.push(0);
        self.rebuild();
    }

    fn rebuild(&mut self) {
        let size = (self.names.len() * 2).next_power_of_two().max(4);
        self.mask = size - 1;
        self.slots = vec![EMPTY; size];
        for (i, n) in self.names.iter().enumerate() {
            let mut h = key_hash(n) as usize & self.mask;
            while self.slots[h] != EMPTY {
                h = (h + 1) & self.mask;
            }
            self.slots[h] = i as u16;
        }
    }

    #[inline]
    pub fn find(&self, key: &[u8]) -> Option<usize> {
        if self.names.is_empty() {
            return None;
        }
        let mut h = key_hash(key) as usize & self.mask;
        loop {
            let s = self.slots[h];
            if s == EMPTY {
                return None;
            }
            if bytes_eq(&self.names[s as usize], key) {
                return Some(s as usize);
            }
            h = (h + 1) & self.mask;
        }
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Required {
    pub name: Box<[u8]>,
    /// Index in the node's `properties`, when named there.
    pub prop: Option<usize>,
    /// The property's schema is `readOnly` / `writeOnly` (computed at finish).
    pub read_only: bool,
    pub write_only: bool,
}

/// A property name and the names it makes required.
pub(crate) type DependentRequired = (Box<[u8]>, Vec<Box<[u8]>>);

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Discriminator {
    pub property: Box<[u8]>,
    /// Explicit `mapping`, then implicit names of the `oneOf`/`anyOf` `$ref`s.
    pub mapping: Vec<(Box<[u8]>, SchemaId)>,
}

/// What `shadow_unknown` needs: every property name that the schema describes, looking
/// through in-place composition.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Known {
    /// The names, when they are not the node's own `properties` (`known_own`) and not every
    /// name is described (`all`): empty then.
    pub names: PropTable,
    pub patterns: Vec<u32>,
    /// Some schema in the composition describes or forbids all other properties
    /// (`additionalProperties` with constraints or `false`, `unevaluatedProperties` likewise).
    pub all: bool,
}

/// Numeric keywords (boxed: most schemas have none, and the node's hot part stays small).
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct NumChecks {
    pub minimum: Option<Num>,
    pub maximum: Option<Num>,
    pub exclusive_minimum: Option<Num>,
    pub exclusive_maximum: Option<Num>,
    pub multiple_of: Option<Num>,
}

impl NumChecks {
    pub(super) fn any(&self) -> bool {
        self.minimum.is_some() || self.maximum.is_some() || self.exclusive_minimum.is_some() || self.exclusive_maximum.is_some() || self.multiple_of.is_some()
    }
}

/// A compiled schema. Absent keywords are `None`/empty. `repr(C)` with what the leaf path
/// reads first, so that a leaf evaluation touches one cache line of the node.
#[derive(Clone, Debug, Default, PartialEq)]
#[repr(C)]
pub(crate) struct SNode {
    /// No keyword at all: every instance is valid.
    pub accept_all: bool,
    /// Only `type`/`nullable` and string or number keywords: evaluation never recurses.
    pub leaf: bool,
    pub reject_all: bool,
    /// `TypeSet` bits; 0 when there is no `type`.
    pub types: u8,
    /// OpenAPI 3.0 `nullable: true`.
    pub nullable: bool,
    pub has_string: bool,
    pub has_number: bool,
    pub has_object: bool,
    pub has_array: bool,
    pub has_inplace: bool,
    pub read_only: bool,
    pub write_only: bool,
    pub unique_items: bool,
    pub format: Option<Format>,
    pub pattern: Option<u32>,
    pub min_length: Option<u64>,
    pub max_length: Option<u64>,
    pub num: Option<Box<NumChecks>>,
    pub enum_: Option<Vec<Const>>,
    pub items: Option<SchemaId>,
    pub min_items: Option<u64>,
    pub max_items: Option<u64>,
    pub props: PropTable,
    pub additional: Option<SchemaId>,
    pub required: Vec<Required>,
    pub all_of: Vec<SchemaId>,
    pub any_of: Vec<SchemaId>,
    pub one_of: Vec<SchemaId>,
    pub ref_: Option<SchemaId>,
    /// The table of `$dynamicAnchor`s of the schema resource this schema belongs to, when it
    /// has any (entered into the dynamic scope when evaluation reaches the resource).
    pub dyn_table: Option<u32>,
    pub known: Option<Box<Known>>,
    /// The shadow-field names are exactly `props` (no composition, no patterns): a member
    /// matched by `properties` is described, so an object all of whose members matched has
    /// nothing to report.
    pub known_own: bool,
    /// Keywords most schemas do not use (boxed: they would make every node several times larger).
    pub rare: Option<Box<Rare>>,
}

/// The keywords of a schema that most schemas do not have.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Rare {
    pub const_: Option<Const>,
    pub prefix_items: Vec<SchemaId>,
    pub contains: Option<SchemaId>,
    pub min_contains: Option<u64>,
    pub max_contains: Option<u64>,
    pub pattern_props: Vec<(u32, SchemaId)>,
    pub property_names: Option<SchemaId>,
    pub min_props: Option<u64>,
    pub max_props: Option<u64>,
    pub dependent_required: Vec<DependentRequired>,
    pub dependent_schemas: Vec<(Box<[u8]>, SchemaId)>,
    pub not: Option<SchemaId>,
    pub if_: Option<SchemaId>,
    pub then_: Option<SchemaId>,
    pub else_: Option<SchemaId>,
    /// `$dynamicRef`: the static target, and the anchor name when it is dynamic.
    pub dynamic_ref: Option<(SchemaId, Option<u32>)>,
    pub discriminator: Option<Discriminator>,
    pub unevaluated_props: Option<SchemaId>,
    pub unevaluated_items: Option<SchemaId>,
}

/// What a node without [`Rare`] keywords reads.
static NO_RARE: Rare = Rare {
    const_: None,
    prefix_items: Vec::new(),
    contains: None,
    min_contains: None,
    max_contains: None,
    pattern_props: Vec::new(),
    property_names: None,
    min_props: None,
    max_props: None,
    dependent_required: Vec::new(),
    dependent_schemas: Vec::new(),
    not: None,
    if_: None,
    then_: None,
    else_: None,
    dynamic_ref: None,
    discriminator: None,
    unevaluated_props: None,
    unevaluated_items: None,
};

/// Kinds of instance, as bits, for [`PropTable::quick`].
pub(crate) mod quick {
    pub const NULL: u8 = 1;
    pub const BOOL: u8 = 2;
    /// A number written as an integer (no fraction, no exponent).
    pub const INT_TEXT: u8 = 4;
    /// A number written with a fraction or an exponent.
    pub const FRAC_TEXT: u8 = 8;
    pub const STRING: u8 = 16;
    pub const ARRAY: u8 = 32;
    pub const OBJECT: u8 = 64;
    pub const ALL: u8 = 127;
}

/// The kinds of instance that `n` accepts with no check beyond its type (and that are
/// evaluated without recording anything, shadow fields included).
pub(crate) fn quick_kinds(n: &SNode) -> u8 {
    if n.accept_all {
        return quick::ALL;
    }
    if !n.leaf {
        return 0;
    }
    let t = if n.types == 0 { TypeSet::ANY } else { n.types };
    let mut q = 0;
    if t & TypeSet::NULL != 0 || n.nullable {
        q |= quick::NULL;
    }
    if t & TypeSet::BOOLEAN != 0 {
        q |= quick::BOOL;
    }
    if !n.has_string && t & TypeSet::STRING != 0 {
        q |= quick::STRING;
    }
    if !n.has_number {
        if t & TypeSet::NUMBER != 0 {
            q |= quick::INT_TEXT | quick::FRAC_TEXT;
        } else if t & TypeSet::INTEGER != 0 {
            q |= quick::INT_TEXT;
        }
    }
    if t & TypeSet::ARRAY != 0 {
        q |= quick::ARRAY;
    }
    if t & TypeSet::OBJECT != 0 {
        q |= quick::OBJECT;
    }
    q
}

impl SNode {
    /// The rare keywords (all absent when the node has none).
    #[inline(always)]
    pub fn rare(&self) -> &Rare {
        self.rare.as_deref().unwrap_or(&NO_RARE)
    }

    /// The rare keywords, to set one.
    pub fn rare_mut(&mut self) -> &mut Rare {
        self.rare.get_or_insert_with(Default::default)
    }

    /// Subschemas applied to the same instance location.
    pub fn in_place(&self) -> impl Iterator<Item = SchemaId> + '_ {
        self.ref_
            .iter()
            .chain(self.rare().dynamic_ref.iter().map(|(s, _)| s))
            .chain(&self.all_of)
            .chain(&self.any_of)
            .chain(&self.one_of)
            .chain(&self.rare().not)
            .chain(&self.rare().if_)
            .chain(&self.rare().then_)
            .chain(&self.rare().else_)
            .chain(self.rare().dependent_schemas.iter().map(|(_, s)| s))
            .chain(self.rare().discriminator.iter().flat_map(|d| d.mapping.iter().map(|(_, s)| s)))
            .copied()
    }

    /// Every subschema: applied in place and to members or items.
    pub(super) fn subschemas(&self) -> impl Iterator<Item = SchemaId> + '_ {
        let r = self.rare();
        self.in_place()
            .chain(self.items)
            .chain(self.props.ids.iter().copied())
            .chain(self.additional)
            .chain(r.prefix_items.iter().copied())
            .chain(r.contains)
            .chain(r.pattern_props.iter().map(|&(_, s)| s))
            .chain(r.property_names)
            .chain(r.unevaluated_props)
            .chain(r.unevaluated_items)
    }

    /// A hash of what the node checks, consistent with `==` (for finding an identical node).
    pub(super) fn shape_hash(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        fn konst(c: &Const, h: &mut impl Hasher) {
            match c {
                Const::Null => 0u8.hash(h),
                Const::Bool(b) => b.hash(h),
                Const::Num(n) => n.text.hash(h),
                Const::Str(s) => s.hash(h),
                Const::Arr(a) => a.iter().for_each(|c| konst(c, h)),
                Const::Obj(o) => o.iter().for_each(|(k, c)| {
                    k.hash(h);
                    konst(c, h)
                }),
            }
        }
        let mut h = std::hash::DefaultHasher::new();
        let flags =
            [self.accept_all, self.reject_all, self.nullable, self.read_only, self.write_only, self.unique_items, self.num.is_some(), self.rare.is_some()];
        (self.types, flags, self.format, self.pattern, self.min_length, self.max_length, self.min_items, self.max_items, self.dyn_table).hash(&mut h);
        self.props.names.hash(&mut h);
        self.required.iter().for_each(|r| r.name.hash(&mut h));
        self.enum_.iter().flatten().for_each(|c| konst(c, &mut h));
        self.subschemas().for_each(|s| s.hash(&mut h));
        h.finish()
    }
}

pub(crate) fn to_const(v: &Node) -> Const {
    match &v.value {
        Value::Null => Const::Null,
        Value::Bool(b) => Const::Bool(*b),
        Value::Int(i) => Const::Num(Num::from_i64(*i)),
        Value::Float(f) => Num::from_f64(*f).map(Const::Num).unwrap_or(Const::Null),
        Value::Str(s) => Const::Str(s.as_bytes().into()),
        Value::Seq(items) => Const::Arr(items.iter().map(to_const).collect()),
        Value::Map(entries) => Const::Obj(entries.iter().map(|(k, v)| (k.name.as_bytes().into(), to_const(v))).collect()),
    }
}
