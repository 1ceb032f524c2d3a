//! The end of compiling: `$ref` cycles that consume nothing are rejected, and the facts that
//! need the whole arena are derived (readOnly/writeOnly of required properties, the known
//! property names for shadow-field reporting, the quick kinds of each property).

use palisade_config::yaml::{Node, Origin, Value};

use super::node::{quick_kinds, Known, PropTable, SNode};
use super::{node_key, Compiler};
use crate::{DocId, Nullable, SchemaError, SchemaId, Schemas};

impl Compiler<'_> {
    /// The arena, or every error found; warnings (unsupported keywords, patterns that cannot be
    /// compiled exactly) are in [`Schemas::warnings`].
    pub fn finish(mut self) -> Result<Schemas, Vec<SchemaError>> {
        self.drain();
        if let Some((count, doc, pointer, origin)) = self.nullable_31.take() {
            let what = match self.nullable {
                Nullable::Honour => "honoured as in 3.0 (null is accepted where it is true; openapi.nullable: ignore follows 3.1 to the letter)",
                Nullable::Ignore => "ignored, as 3.1 says (openapi.nullable: honour accepts null where it is true)",
            };
            let message =
                format!("nullable is an OpenAPI 3.0 keyword, not one of 3.1 (type: [..., \"null\"]); {count} schema(s) use it, this one first: {what}");
            self.warn(doc, &pointer, &origin, message);
        }
        self.check_cycles();
        if !self.errors.is_empty() {
            return Err(self.errors);
        }
        self.derive();
        let mut plans = crate::fused::plan(&self.nodes);
        crate::fused::link(&mut plans);
        Ok(Schemas { nodes: self.nodes, regexes: self.regexes, warnings: self.warnings, plans, dyn_tables: self.dyn_tables })
    }

    /// Where schema `id` is: its document and JSON pointer, found by walking the document
    /// (for error messages only).
    fn pointer_of(&self, id: SchemaId) -> Option<(DocId, String)> {
        let &(doc, addr) = self.by_node.iter().find(|(_, &v)| v == id)?.0;
        fn walk(n: &Node, addr: usize, at: &mut String) -> bool {
            if node_key(n) == addr {
                return true;
            }
            let len = at.len();
            match &n.value {
                Value::Map(entries) => {
                    for (k, v) in entries {
                        at.push('/');
                        at.push_str(&k.name.replace('~', "~0").replace('/', "~1"));
                        if walk(v, addr, at) {
                            return true;
                        }
                        at.truncate(len);
                    }
                }
                Value::Seq(items) => {
                    for (i, v) in items.iter().enumerate() {
                        at.push_str(&format!("/{i}"));
                        if walk(v, addr, at) {
                            return true;
                        }
                        at.truncate(len);
                    }
                }
                _ => {}
            }
            false
        }
        let root = self.resolver.resolve(doc, "#").ok()?;
        let mut at = String::new();
        walk(root.node, addr, &mut at).then_some((doc, at))
    }

    /// In-place cycles (no part of the instance consumed) would loop forever: reject them.
    fn check_cycles(&mut self) {
        let n = self.nodes.len();
        // 0 = unvisited, 1 = on the stack, 2 = done.
        let mut state = vec![0u8; n];
        let mut reported = false;
        for start in 0..n {
            if state[start] != 0 {
                continue;
            }
            let mut stack: Vec<(usize, Vec<SchemaId>, usize)> = vec![(start, self.nodes[start].in_place().collect(), 0)];
            state[start] = 1;
            while let Some(top) = stack.last_mut() {
                if top.2 < top.1.len() {
                    let next = top.1[top.2].0 as usize;
                    top.2 += 1;
                    match state[next] {
                        0 => {
                            state[next] = 1;
                            let edges = self.nodes[next].in_place().collect();
                            stack.push((next, edges, 0));
                        }
                        1 if !reported => {
                            reported = true;
                            let (doc, ptr) = self.pointer_of(SchemaId(next as u32)).unwrap_or((0, String::new()));
                            self.errors.push(SchemaError {
                                doc,
                                pointer: ptr.clone(),
                                origin: Origin::File { line: 0, col: 0 },
                                message: format!("schema {ptr:?} refers to itself without consuming any part of the instance ($ref cycle)"),
                            });
                        }
                        _ => {}
                    }
                } else {
                    state[top.0] = 2;
                    stack.pop();
                }
            }
        }
    }

    /// Facts that need the whole arena: readOnly/writeOnly of required properties, and the
    /// known-property sets for shadow-field reporting.
    fn derive(&mut self) {
        let flags = |nodes: &[SNode], mut id: SchemaId| -> (bool, bool) {
            let (mut ro, mut wo) = (false, false);
            for _ in 0..32 {
                let n = &nodes[id.0 as usize];
                ro |= n.read_only;
                wo |= n.write_only;
                for a in &n.all_of {
                    ro |= nodes[a.0 as usize].read_only;
                    wo |= nodes[a.0 as usize].write_only;
                }
                match n.ref_ {
                    Some(r) => id = r,
                    None => break,
                }
            }
            (ro, wo)
        };
        for i in 0..self.nodes.len() {
            let mut req = std::mem::take(&mut self.nodes[i].required);
            for r in &mut req {
                if let Some(p) = r.prop {
                    (r.read_only, r.write_only) = flags(&self.nodes, self.nodes[i].props.ids[p]);
                }
            }
            self.nodes[i].required = req;
        }
        for i in 0..self.nodes.len() {
            let mut known = Known::default();
            let mut any = false;
            let mut seen = vec![SchemaId(i as u32)];
            let mut todo = vec![SchemaId(i as u32)];
            while let Some(id) = todo.pop() {
                let n = &self.nodes[id.0 as usize];
                for (name, _) in n.props.names.iter().zip(&n.props.ids) {
                    if known.names.find(name).is_none() {
                        known.names.push(name, SchemaId(0));
                    }
                    any = true;
                }
                for (re, _) in &n.rare().pattern_props {
                    known.patterns.push(*re);
                    any = true;
                }
                for extra in [n.additional, n.rare().unevaluated_props].into_iter().flatten() {
                    if !self.nodes[extra.0 as usize].accept_all {
                        known.all = true;
                    }
                }
                for next in n.in_place() {
                    if !seen.contains(&next) && seen.len() < 256 {
                        seen.push(next);
                        todo.push(next);
                    }
                }
            }
            if any {
                let n = &self.nodes[i];
                let own = !known.all && known.patterns.is_empty() && n.rare().pattern_props.is_empty() && known.names.len() == n.props.len();
                if own || known.all {
                    // The names are the node's own `properties` (or every name is described):
                    // no copy of them.
                    known.names = PropTable::default();
                }
                self.nodes[i].known_own = own;
                self.nodes[i].known = Some(Box::new(known));
            }
        }
        for i in 0..self.nodes.len() {
            let quick: Vec<u8> = self.nodes[i].props.ids.iter().map(|id| quick_kinds(&self.nodes[id.0 as usize])).collect();
            self.nodes[i].props.quick = quick;
        }
    }
}
