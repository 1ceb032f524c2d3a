//! The keywords of each instance type: strings (length, pattern, format), numbers (bounds,
//! `multipleOf`), objects (properties, required, additional and pattern properties, counts)
//! and arrays (items, prefix items, contains, counts, uniqueness).

use palisade_json::ValueRef;

use super::values::*;
use super::{Ann, Cx, Path};
use crate::compile::{bytes_eq, NumChecks, SNode};
use crate::{num, Direction};

impl Cx<'_> {
    pub(super) fn string(&mut self, n: &SNode, v: ValueRef<'_>, path: &Path<'_>) -> bool {
        let s = str_bytes(&v);
        let mut ok = true;
        if n.min_length.is_some() || n.max_length.is_some() {
            let bytes = s.len() as u64;
            // Bytes bound chars from above: count only when that decides.
            let need_count = n.max_length.is_some_and(|m| bytes > m) || n.min_length.is_some_and(|m| bytes >= m && m > 0 && bytes < 4 * m);
            let chars = if need_count { count_chars(&s) as u64 } else { bytes };
            if let Some(m) = n.max_length {
                if chars > m {
                    self.fail(path, "maxLength", || format!("must be at most {m} characters"));
                    ok = false;
                    if self.bail() {
                        return false;
                    }
                }
            }
            if let Some(m) = n.min_length {
                let chars = if need_count || bytes < m { chars } else { m };
                if chars < m {
                    self.fail(path, "minLength", || format!("must be at least {m} characters"));
                    ok = false;
                    if self.bail() {
                        return false;
                    }
                }
            }
        }
        if let Some(p) = n.pattern {
            let re = &self.s.regexes[p as usize];
            let matched = re.check(&s);
            if matched != Some(true) {
                self.fail(path, "pattern", || match matched {
                    None => format!(
                        "rejected: matching the pattern {} took more than {} backtracking steps",
                        truncate(re.as_str(), 48),
                        crate::pattern::BACKTRACK_LIMIT
                    ),
                    _ => format!("must match the pattern {}", truncate(re.as_str(), 48)),
                });
                ok = false;
                if self.bail() {
                    return false;
                }
            }
        }
        if let Some(f) = n.format {
            if !f.check_str(&s) {
                self.fail(path, "format", || format!("must be a valid {}", f.name()));
                ok = false;
            }
        }
        ok
    }

    pub(super) fn number(&mut self, n: &SNode, v: ValueRef<'_>, path: &Path<'_>) -> bool {
        let text = v.raw();
        let int = fast_int(&v);
        let mut ok = true;
        if let Some(c) = n.num.as_deref() {
            self.bounds(c, text, int, path, &mut ok);
            if !ok && self.bail() {
                return false;
            }
        }
        if let Some(f) = n.format {
            if !f.check_number(text) {
                self.fail(path, "format", || format!("must be a valid {}", f.name()));
                ok = false;
            }
        }
        ok
    }

    pub(super) fn bounds(&mut self, n: &NumChecks, text: &[u8], int: Option<i64>, path: &Path<'_>, ok: &mut bool) {
        use std::cmp::Ordering::*;
        macro_rules! check {
            ($cond:expr, $kw:expr, $msg:expr) => {
                if !$cond {
                    self.fail(path, $kw, || $msg);
                    *ok = false;
                    if self.bail() {
                        return;
                    }
                }
            };
        }
        if let Some(m) = &n.minimum {
            check!(num::cmp_instance(text, int, m) != Less, "minimum", format!("must be >= {}", m.text));
        }
        if let Some(m) = &n.exclusive_minimum {
            check!(num::cmp_instance(text, int, m) == Greater, "exclusiveMinimum", format!("must be > {}", m.text));
        }
        if let Some(m) = &n.maximum {
            check!(num::cmp_instance(text, int, m) != Greater, "maximum", format!("must be <= {}", m.text));
        }
        if let Some(m) = &n.exclusive_maximum {
            check!(num::cmp_instance(text, int, m) == Less, "exclusiveMaximum", format!("must be < {}", m.text));
        }
        if let Some(m) = &n.multiple_of {
            check!(num::is_multiple(text, int, m), "multipleOf", format!("must be a multiple of {}", m.text));
        }
    }

    pub(super) fn object(&mut self, n: &SNode, v: ValueRef<'_>, path: &Path<'_>, slot: Ann) -> bool {
        let s = self.s;
        let mut ok = true;
        macro_rules! bad {
            () => {{
                ok = false;
                if self.bail() {
                    return false;
                }
            }};
        }
        let len = v.len() as u64;
        if let Some(m) = n.rare().min_props {
            if len < m {
                self.fail(path, "minProperties", || format!("must have at least {m} properties"));
                bad!();
            }
        }
        if let Some(m) = n.rare().max_props {
            if len > m {
                self.fail(path, "maxProperties", || format!("must have at most {m} properties"));
                bad!();
            }
        }
        let mut found: u64 = 0;
        let mut matched_props = 0usize;
        // Documents tend to list properties in the schema's order: try the next one first.
        let mut hint = 0usize;
        for (i, (k, val)) in v.members().enumerate() {
            let key = str_bytes(&k);
            let mut matched = false;
            let p = match n.props.names.get(hint) {
                Some(name) if bytes_eq(name, &key) => Some(hint),
                _ => n.props.find(&key),
            };
            if let Some(p) = p {
                hint = p + 1;
                matched = true;
                matched_props += 1;
                if p < 64 {
                    found |= 1 << p;
                }
                // Scalars of a plain type need neither the node nor a call.
                if n.props.quick[p] & quick_kind(&val) == 0 {
                    let cp = path.key(&k);
                    if !self.eval(n.props.ids[p], val, &cp, None, true) {
                        bad!();
                    }
                }
            }
            for &(re, sid) in &n.rare().pattern_props {
                if s.regexes[re as usize].is_match(&key) {
                    matched = true;
                    let cp = path.key(&k);
                    if !self.eval(sid, val, &cp, None, true) {
                        bad!();
                    }
                }
            }
            if matched {
                self.mark(slot, i);
            } else if let Some(a) = n.additional {
                self.mark(slot, i);
                let cp = path.key(&k);
                if s.nodes[a.0 as usize].reject_all {
                    self.fail(&cp, "additionalProperties", || format!("property {} is not allowed", quoted(&key)));
                    bad!();
                } else if !self.eval(a, val, &cp, None, true) {
                    bad!();
                }
            }
            if let Some(pn) = n.rare().property_names {
                let cp = path.key(&k);
                if !self.eval(pn, k, &cp, None, false) {
                    bad!();
                }
            }
        }
        for r in &n.required {
            if (r.read_only && self.opts.direction == Direction::Request) || (r.write_only && self.opts.direction == Direction::Response) {
                continue;
            }
            let present = match r.prop {
                Some(p) if p < 64 => found & (1 << p) != 0,
                _ => has_member(&v, &r.name),
            };
            if !present {
                self.fail(path, "required", || format!("missing required property {}", quoted(&r.name)));
                bad!();
            }
        }
        for (name, deps) in &n.rare().dependent_required {
            if has_member(&v, name) {
                for d in deps {
                    if !has_member(&v, d) {
                        self.fail(path, "dependentRequired", || format!("property {} is required when {} is present", quoted(d), quoted(name)));
                        bad!();
                    }
                }
            }
        }
        for (name, sid) in &n.rare().dependent_schemas {
            if has_member(&v, name) && !self.eval(*sid, v, path, slot, false) {
                bad!();
            }
        }
        self.all_props = matched_props == v.len();
        ok
    }

    pub(super) fn array(&mut self, n: &SNode, v: ValueRef<'_>, path: &Path<'_>, slot: Ann) -> bool {
        let mut ok = true;
        macro_rules! bad {
            () => {{
                ok = false;
                if self.bail() {
                    return false;
                }
            }};
        }
        let len = v.len();
        if let Some(m) = n.min_items {
            if (len as u64) < m {
                self.fail(path, "minItems", || format!("must have at least {m} items"));
                bad!();
            }
        }
        if let Some(m) = n.max_items {
            if len as u64 > m {
                self.fail(path, "maxItems", || format!("must have at most {m} items"));
                bad!();
            }
        }
        if !n.rare().prefix_items.is_empty() || n.items.is_some() {
            for (i, item) in v.items().enumerate() {
                let sid = match n.rare().prefix_items.get(i) {
                    Some(&s) => s,
                    None => match n.items {
                        Some(s) => s,
                        None => break,
                    },
                };
                self.mark(slot, i);
                let cp = path.index(i);
                if !self.eval(sid, item, &cp, None, true) {
                    bad!();
                }
            }
        }
        if let Some(c) = n.rare().contains {
            let mut matches = 0u64;
            for (i, item) in v.items().enumerate() {
                let cp = path.index(i);
                if self.quietly(c, item, &cp, None) {
                    matches += 1;
                    self.mark(slot, i);
                }
            }
            let min = n.rare().min_contains.unwrap_or(1);
            if matches < min {
                self.fail(path, "contains", || format!("must contain at least {min} matching items ({matches} found)"));
                bad!();
            }
            if let Some(max) = n.rare().max_contains {
                if matches > max {
                    self.fail(path, "maxContains", || format!("must contain at most {max} matching items ({matches} found)"));
                    bad!();
                }
            }
        }
        if n.unique_items && len > 1 {
            if let Some((a, b)) = self.duplicate(&v) {
                self.fail(path, "uniqueItems", || format!("items {a} and {b} are equal"));
                bad!();
            }
        }
        ok
    }

    pub(super) fn duplicate(&mut self, v: &ValueRef<'_>) -> Option<(u32, u32)> {
        if v.len() <= 16 {
            // Small arrays: pairwise, no memory needed.
            for (i, a) in v.items().enumerate() {
                for (j, b) in v.items().enumerate().skip(i + 1) {
                    if eq_values(&a, &b, 0) {
                        return Some((i as u32, j as u32));
                    }
                }
            }
            return None;
        }
        let mut hashes = std::mem::take(&mut self.scratch.hashes);
        hashes.clear();
        hashes.extend(v.items().enumerate().map(|(i, x)| (hash_value(&x, 0), i as u32)));
        hashes.sort_unstable();
        let items: Vec<ValueRef<'_>> = if hashes.windows(2).any(|w| w[0].0 == w[1].0) { v.items().collect() } else { Vec::new() };
        let mut found = None;
        'outer: for (i, w) in hashes.iter().enumerate() {
            for x in &hashes[i + 1..] {
                if x.0 != w.0 {
                    break;
                }
                if eq_values(&items[w.1 as usize], &items[x.1 as usize], 0) {
                    found = Some((w.1.min(x.1), w.1.max(x.1)));
                    break 'outer;
                }
            }
        }
        self.scratch.hashes = hashes;
        found
    }
}
