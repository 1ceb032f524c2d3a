//! Applicators to the same instance: `$ref`, `$dynamicRef`, `allOf`, the discriminator,
//! `anyOf`, `oneOf`, `not`, `if`/`then`/`else`; then `unevaluatedProperties` /
//! `unevaluatedItems` over what they evaluated, and the shadow fields no schema describes.

use palisade_json::{Kind, ValueRef};

use super::values::*;
use super::{Ann, Cx, Path};
use crate::compile::{Discriminator, SNode};
use crate::{SchemaId, ViolationKind};

impl Cx<'_> {
    /// The applicators to the same instance, in order: `$ref`, `$dynamicRef`, `allOf`, the
    /// discriminator (which, when present on an object, replaces `anyOf` / `oneOf`), `anyOf`,
    /// `oneOf`, `not`, `if`. Each one that fails is recorded; evaluation stops when bailing.
    pub(super) fn eval_inplace(&mut self, n: &SNode, v: ValueRef<'_>, kind: Kind, path: &Path<'_>, slot: Ann) -> bool {
        if !n.has_inplace && n.rare().dependent_schemas.is_empty() {
            return true;
        }
        let mut ok = true;
        macro_rules! bad {
            () => {{
                ok = false;
                if self.bail() {
                    return false;
                }
            }};
        }
        if let Some(r) = n.ref_ {
            if !self.eval(r, v, path, slot, false) {
                bad!();
            }
        }
        if let Some((fixed, name)) = n.rare().dynamic_ref {
            // The outermost resource of the dynamic scope that defines the anchor wins.
            let s = self.s;
            let target = name
                .and_then(|name| self.dyn_scope.iter().find_map(|&t| s.dyn_tables[t as usize].iter().find(|(a, _)| *a == name).map(|&(_, id)| id)))
                .unwrap_or(fixed);
            if !self.eval(target, v, path, slot, false) {
                bad!();
            }
        }
        for &a in &n.all_of {
            if !self.eval(a, v, path, slot, false) {
                bad!();
            }
        }
        let mut alternatives = true;
        if let (Some(d), Kind::Object) = (&n.rare().discriminator, kind) {
            alternatives = false;
            if !self.discriminated(d, v, path, slot) {
                bad!();
            }
        }
        if alternatives && !n.any_of.is_empty() && !self.any_of(n, v, path, slot) {
            bad!();
        }
        if alternatives && !n.one_of.is_empty() && !self.one_of(n, v, path, slot) {
            bad!();
        }
        if let Some(x) = n.rare().not {
            if self.quietly(x, v, path, None) {
                self.fail(path, "not", || "must not match the schema in not".into());
                bad!();
            }
        }
        if let Some(c) = n.rare().if_ {
            if !self.if_then_else(n, c, v, path, slot) {
                bad!();
            }
        }
        ok
    }

    /// The discriminator of an object: the schema its property's value maps to.
    fn discriminated(&mut self, d: &Discriminator, v: ValueRef<'_>, path: &Path<'_>, slot: Ann) -> bool {
        let Some((k, val)) = v.members().find(|(k, _)| *str_bytes(k) == *d.property) else {
            self.fail(path, "discriminator", || format!("missing discriminator property {}", quoted(&d.property)));
            return false;
        };
        let value = str_bytes(&val);
        match d.mapping.iter().find(|(name, _)| val.kind() == Kind::String && **name == *value) {
            Some(&(_, sid)) => self.eval(sid, v, path, slot, false),
            None => {
                let cp = path.key(&k);
                let shown = if val.kind() == Kind::String { quoted(&value) } else { "a non-string".to_string() };
                self.fail(&cp, "discriminator", || format!("{shown} is not a known value of {}", quoted(&d.property)));
                false
            }
        }
    }

    /// `anyOf`: each alternative quietly, the annotations of those that match kept.
    fn any_of(&mut self, n: &SNode, v: ValueRef<'_>, path: &Path<'_>, slot: Ann) -> bool {
        let mut any = false;
        for &b in &n.any_of {
            let tmp = slot.map(|_| self.alloc(v.len()));
            if self.quietly(b, v, path, tmp) {
                any = true;
                if let Some(t) = tmp {
                    self.merge(slot, t, v.len());
                }
                if self.shadowing() && self.quiet == 0 {
                    self.eval(b, v, path, None, false);
                }
            }
            if let Some(t) = tmp {
                self.release(t);
            }
            if any && slot.is_none() {
                break;
            }
        }
        if !any {
            self.fail(path, "anyOf", || format!("must match at least one of {} schemas", n.any_of.len()));
        }
        any
    }

    /// `oneOf`: quietly until a second alternative matches; the annotations of the one match
    /// kept.
    fn one_of(&mut self, n: &SNode, v: ValueRef<'_>, path: &Path<'_>, slot: Ann) -> bool {
        let mut count = 0;
        let mut first = None;
        let keep = slot.map(|_| self.alloc(v.len()));
        for &b in &n.one_of {
            let tmp = slot.map(|_| self.alloc(v.len()));
            if self.quietly(b, v, path, tmp) {
                count += 1;
                if count == 1 {
                    first = Some(b);
                    if let (Some(t), Some(k)) = (tmp, keep) {
                        self.merge(Some(k), t, v.len());
                    }
                }
            }
            if let Some(t) = tmp {
                self.release(t);
            }
            if count > 1 {
                break;
            }
        }
        if count == 1 {
            if let Some(k) = keep {
                self.merge(slot, k, v.len());
            }
            if self.shadowing() && self.quiet == 0 {
                if let Some(b) = first {
                    self.eval(b, v, path, None, false);
                }
            }
        }
        if let Some(k) = keep {
            self.release(k);
        }
        if count != 1 {
            let what = if count == 0 { "none" } else { "more than one" };
            self.fail(path, "oneOf", || format!("must match exactly one of {} schemas (matched {what})", n.one_of.len()));
        }
        count == 1
    }

    /// `if` (schema `c`) quietly, its annotations kept when it matches; then `then` or `else`.
    fn if_then_else(&mut self, n: &SNode, c: SchemaId, v: ValueRef<'_>, path: &Path<'_>, slot: Ann) -> bool {
        let tmp = slot.map(|_| self.alloc(v.len()));
        let cond = self.quietly(c, v, path, tmp);
        if cond {
            if let Some(t) = tmp {
                self.merge(slot, t, v.len());
            }
        }
        if let Some(t) = tmp {
            self.release(t);
        }
        let branch = if cond { n.rare().then_ } else { n.rare().else_ };
        match branch {
            Some(b) => self.eval(b, v, path, slot, false),
            None => true,
        }
    }

    pub(super) fn unevaluated(&mut self, n: &SNode, v: ValueRef<'_>, kind: Kind, path: &Path<'_>, off: usize) -> bool {
        let mut ok = true;
        match kind {
            Kind::Object => {
                let Some(u) = n.rare().unevaluated_props else { return true };
                let reject = self.s.nodes[u.0 as usize].reject_all;
                for (i, (k, val)) in v.members().enumerate() {
                    if self.marked(off, i) {
                        continue;
                    }
                    let cp = path.key(&k);
                    if reject {
                        self.fail(&cp, "unevaluatedProperties", || format!("property {} is not allowed", quoted(&str_bytes(&k))));
                        ok = false;
                    } else if !self.eval(u, val, &cp, None, true) {
                        ok = false;
                    }
                    if !ok && self.bail() {
                        return false;
                    }
                    self.mark(Some(off), i);
                }
            }
            Kind::Array => {
                let Some(u) = n.rare().unevaluated_items else { return true };
                for (i, item) in v.items().enumerate() {
                    if self.marked(off, i) {
                        continue;
                    }
                    let cp = path.index(i);
                    if self.s.nodes[u.0 as usize].reject_all {
                        self.fail(&cp, "unevaluatedItems", || "item is not allowed".into());
                        ok = false;
                    } else if !self.eval(u, item, &cp, None, true) {
                        ok = false;
                    }
                    if !ok && self.bail() {
                        return false;
                    }
                    self.mark(Some(off), i);
                }
            }
            _ => {}
        }
        ok
    }

    pub(super) fn shadow(&mut self, n: &SNode, v: ValueRef<'_>, path: &Path<'_>) {
        let Some(known) = &n.known else { return };
        if known.all {
            return;
        }
        for (k, _) in v.members() {
            if self.unknown >= self.opts.max_unknown {
                return;
            }
            let key = str_bytes(&k);
            let named = if n.known_own { n.props.find(&key).is_some() } else { known.names.find(&key).is_some() };
            if named || known.patterns.iter().any(|&re| self.s.regexes[re as usize].is_match(&key)) {
                continue;
            }
            let cp = path.key(&k);
            let msg = format!("property {} is not described by the schema", quoted(&key));
            self.push(ViolationKind::UnknownProperty, &cp, "properties", msg);
        }
    }
}
