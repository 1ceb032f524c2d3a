//! JSON values as the validator reads them: type names, the quick kinds, strings with their
//! escapes undone, equality with constants and between values (for `uniqueItems`).

use std::borrow::Cow;

use palisade_json::{Kind, ValueRef};

use crate::compile::{quick, Const};
use crate::{num, TypeSet};

/// Up to `max` chars of `s`, with an ellipsis when cut.
pub(crate) fn truncate(s: &str, max: usize) -> Cow<'_, str> {
    match s.char_indices().nth(max) {
        None => Cow::Borrowed(s),
        Some((i, _)) => Cow::Owned(format!("{}...", &s[..i])),
    }
}

pub(super) fn quoted(b: &[u8]) -> String {
    format!("{:?}", truncate(&String::from_utf8_lossy(b), 32))
}

pub(super) fn type_name(k: Kind, v: &ValueRef<'_>) -> &'static str {
    match k {
        Kind::Null => "null",
        Kind::Bool => "boolean",
        Kind::Number if v.is_integer_text() => "integer",
        Kind::Number => "number",
        Kind::String => "string",
        Kind::Array => "array",
        Kind::Object => "object",
    }
}

pub(super) fn types_text(t: u8) -> String {
    let mut parts = Vec::new();
    for (bit, name) in [
        (TypeSet::OBJECT, "object"),
        (TypeSet::ARRAY, "array"),
        (TypeSet::STRING, "string"),
        (TypeSet::NUMBER, "number"),
        (TypeSet::INTEGER, "integer"),
        (TypeSet::BOOLEAN, "boolean"),
        (TypeSet::NULL, "null"),
    ] {
        if t & bit != 0 && !(bit == TypeSet::INTEGER && t & TypeSet::NUMBER != 0) {
            parts.push(name);
        }
    }
    parts.join(" or ")
}

#[inline(always)]
pub(super) fn type_fits(t: u8, kind: Kind, v: &ValueRef<'_>) -> bool {
    match kind {
        Kind::Null => t & TypeSet::NULL != 0,
        Kind::Bool => t & TypeSet::BOOLEAN != 0,
        Kind::String => t & TypeSet::STRING != 0,
        Kind::Array => t & TypeSet::ARRAY != 0,
        Kind::Object => t & TypeSet::OBJECT != 0,
        Kind::Number => t & TypeSet::NUMBER != 0 || (t & TypeSet::INTEGER != 0 && (v.is_integer_text() || num::is_integral_text(v.raw()))),
    }
}

/// The [`quick`] bit of an instance's kind.
#[inline(always)]
pub(super) fn quick_kind(v: &ValueRef<'_>) -> u8 {
    match v.kind() {
        Kind::Null => quick::NULL,
        Kind::Bool => quick::BOOL,
        Kind::Number if v.is_integer_text() => quick::INT_TEXT,
        Kind::Number => quick::FRAC_TEXT,
        Kind::String => quick::STRING,
        Kind::Array => quick::ARRAY,
        Kind::Object => quick::OBJECT,
    }
}

/// `i64` value of a plain integer text of at most 18 digits (the common case), else `None`.
#[inline]
pub(super) fn fast_int(v: &ValueRef<'_>) -> Option<i64> {
    if !v.is_integer_text() {
        return None;
    }
    let t = v.raw();
    let (neg, d) = if t[0] == b'-' { (true, &t[1..]) } else { (false, t) };
    if d.len() > 18 {
        return v.as_i64();
    }
    let mut x: i64 = 0;
    for &b in d {
        x = x * 10 + (b - b'0') as i64;
    }
    Some(if neg { -x } else { x })
}

/// The string's bytes, unescaped (borrowed when there is no escape).
#[inline]
pub(super) fn str_bytes<'t>(v: &ValueRef<'t>) -> Cow<'t, [u8]> {
    if v.has_escapes() {
        match v.as_str() {
            Some(Cow::Owned(s)) => Cow::Owned(s.into_bytes()),
            Some(Cow::Borrowed(s)) => Cow::Borrowed(s.as_bytes()),
            None => Cow::Borrowed(&[]),
        }
    } else {
        Cow::Borrowed(v.raw())
    }
}

pub(super) fn has_member(v: &ValueRef<'_>, name: &[u8]) -> bool {
    v.members().any(|(k, _)| *str_bytes(&k) == *name)
}

pub(super) fn count_chars(s: &[u8]) -> usize {
    s.iter().filter(|&&b| b & 0xC0 != 0x80).count()
}

/// JSON equality of an instance value and a constant (numbers compare by value).
pub(super) fn eq_const(v: &ValueRef<'_>, c: &Const) -> bool {
    match (v.kind(), c) {
        (Kind::Null, Const::Null) => true,
        (Kind::Bool, Const::Bool(b)) => v.as_bool() == Some(*b),
        (Kind::Number, Const::Num(n)) => num::cmp_instance(v.raw(), fast_int(v), n) == std::cmp::Ordering::Equal,
        (Kind::String, Const::Str(s)) => *str_bytes(v) == **s,
        (Kind::Array, Const::Arr(items)) => v.len() == items.len() && v.items().zip(items).all(|(x, y)| eq_const(&x, y)),
        (Kind::Object, Const::Obj(members)) => {
            v.len() == members.len() && members.iter().all(|(k, c)| v.members().any(|(vk, vv)| *str_bytes(&vk) == **k && eq_const(&vv, c)))
        }
        _ => false,
    }
}

pub(super) const EQ_DEPTH: u32 = 64;

/// Structural hash for `uniqueItems` (object member order does not matter).
pub(super) fn hash_value(v: &ValueRef<'_>, depth: u32) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mix = |h: u64, x: u64| (h ^ x).wrapping_mul(K).rotate_left(23);
    if depth > EQ_DEPTH {
        return 0;
    }
    match v.kind() {
        Kind::Null => 1,
        Kind::Bool => 2 + v.as_bool().unwrap_or(false) as u64,
        // Numbers equal in value may be written differently (1, 1.0, 1e0): hash the value.
        Kind::Number => {
            let d = num::parse(v.raw());
            match d {
                Some(d) if !d.is_zero() => {
                    let mut h = mix(4 + d.neg as u64, d.point as u64);
                    for i in 0..d.n.min(24) {
                        h = mix(h, d.digit(i) as u64);
                    }
                    h
                }
                _ => 4,
            }
        }
        Kind::String => str_bytes(v).iter().fold(5u64, |h, &b| mix(h, b as u64)),
        Kind::Array => v.items().fold(6u64, |h, x| mix(h, hash_value(&x, depth + 1))),
        Kind::Object => v.members().fold(7u64, |h, (k, x)| h.wrapping_add(mix(hash_value(&k, depth + 1), hash_value(&x, depth + 1)))),
    }
}

/// JSON equality of two instance values (beyond [`EQ_DEPTH`] levels, values are taken as different).
pub(super) fn eq_values(a: &ValueRef<'_>, b: &ValueRef<'_>, depth: u32) -> bool {
    if depth > EQ_DEPTH || a.kind() != b.kind() {
        return false;
    }
    match a.kind() {
        Kind::Null => true,
        Kind::Bool => a.as_bool() == b.as_bool(),
        Kind::Number => num::cmp(a.raw(), b.raw()) == Some(std::cmp::Ordering::Equal),
        Kind::String => str_bytes(a) == str_bytes(b),
        Kind::Array => a.len() == b.len() && a.items().zip(b.items()).all(|(x, y)| eq_values(&x, &y, depth + 1)),
        Kind::Object => {
            a.len() == b.len() && a.members().all(|(ka, va)| b.members().any(|(kb, vb)| str_bytes(&ka) == str_bytes(&kb) && eq_values(&va, &vb, depth + 1)))
        }
    }
}
