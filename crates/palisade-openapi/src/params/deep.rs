//! `deepObject` values (and form fields written with brackets) as a tree of keys: entries with
//! their key paths gathered from the pairs, sorted, then written as nested objects and arrays
//! shaped by the schema (see the module documentation of [`crate::params`]).

use std::ops::Range;

use palisade_body::json::write_json_str;
use palisade_schema::{SchemaId, TypeSet};

use super::{shape_of, types_of, Ctx, Invalid, ParamDecoder, Shape};

/// One value of an object or array being built: its key path (`a[b][0]` is `a`, `b`, `0`;
/// `[]` is an empty segment) as a range of `ParamDecoder::segs`, whose items are ranges of
/// `ParamDecoder::keys`; the value as a range of the base bytes; the request order.
#[derive(Clone, Debug)]
pub(super) struct Entry {
    pub(super) segs: Range<u32>,
    pub(super) value: Range<u32>,
    pub(super) order: u32,
}

/// Deepest bracket nesting of a `deepObject` key (`a[b][c]...`): deeper keys are
/// [`Invalid::BadBrackets`]. Real clients nest four or five levels.
pub const MAX_DEEP_OBJECT_DEPTH: usize = 32;

/// Compare two key segments: runs of digits by numeric value (`2` before `10`; `01` after
/// `1`), everything else bytewise.
fn cmp_segment(a: &str, b: &str) -> std::cmp::Ordering {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit());
    if digits(a) && digits(b) {
        let (ta, tb) = (a.trim_start_matches('0'), b.trim_start_matches('0'));
        return ta.len().cmp(&tb.len()).then_with(|| ta.cmp(tb)).then_with(|| a.cmp(b));
    }
    a.cmp(b)
}

/// Whether a key segment names an array position: `[]` or a decimal index.
fn is_index(s: &str) -> bool {
    s.bytes().all(|c| c.is_ascii_digit())
}

impl ParamDecoder {
    pub(super) fn begin_entries(&mut self) {
        self.entries.clear();
        self.segs.clear();
        self.keys.clear();
    }

    pub(super) fn push_segment(&mut self, s: &str) {
        let k = self.keys.len() as u32;
        self.keys.push_str(s);
        self.segs.push(k..self.keys.len() as u32);
    }

    /// An entry with the one-segment path `key`.
    pub(super) fn push_entry(&mut self, key: &str, value: Range<usize>, order: usize) {
        let start = self.segs.len() as u32;
        self.push_segment(key);
        self.entries.push(Entry { segs: start..self.segs.len() as u32, value: value.start as u32..value.end as u32, order: order as u32 });
    }

    /// An entry whose path is the bracketed segments of `brackets` (`[a][b][]`; empty for the
    /// plain key itself). The grammar is `"[" key *("][" key) "]"`: a key may hold a lone `[`
    /// or `]` (`[a]b]` is the key `a]b`, as map keys such as Stripe's `metadata` are any
    /// string), only `][` separates keys.
    pub(super) fn push_bracketed(&mut self, brackets: &str, value: Range<usize>, order: usize) -> Result<(), Invalid> {
        let start = self.segs.len() as u32;
        if !brackets.is_empty() {
            let inner = brackets.strip_prefix('[').and_then(|b| b.strip_suffix(']')).ok_or(Invalid::BadBrackets)?;
            for key in inner.split("][") {
                if self.segs.len() - start as usize >= MAX_DEEP_OBJECT_DEPTH {
                    return Err(Invalid::BadBrackets);
                }
                self.push_segment(key);
            }
        }
        self.entries.push(Entry { segs: start..self.segs.len() as u32, value: value.start as u32..value.end as u32, order: order as u32 });
        Ok(())
    }

    /// Write the value held in `self.entries` (values are ranges of `base`) shaped by `schema`
    /// (see [`ParamDecoder::emit_tree`]); `{}` when there is no entry.
    pub(super) fn emit_entries(&mut self, cx: Ctx<'_>, base: &[u8], schema: Option<SchemaId>, out: &mut String) -> Result<(), Invalid> {
        if self.entries.is_empty() {
            out.push_str("{}");
            return Ok(());
        }
        let keys = std::mem::take(&mut self.keys);
        let segs = std::mem::take(&mut self.segs);
        let mut entries = std::mem::take(&mut self.entries);
        let tree = Tree { base, keys: &keys, segs: &segs };
        entries.sort_unstable_by(|a, b| {
            let (pa, pb) = (tree.path(a), tree.path(b));
            for (x, y) in pa.iter().zip(pb) {
                match cmp_segment(tree.key(x), tree.key(y)) {
                    std::cmp::Ordering::Equal => {}
                    o => return o,
                }
            }
            pa.len().cmp(&pb.len()).then(a.order.cmp(&b.order))
        });
        let r = self.emit_tree(cx, &tree, schema, &entries, 0, out);
        self.keys = keys;
        self.segs = segs;
        self.entries = entries;
        r
    }

    /// Write the node at `depth` of the key tree formed by `entries` (sorted, all sharing the
    /// path up to `depth`). Entries whose path ends here are the node's own values (see
    /// [`ParamDecoder::leaf`]); the others are its children, grouped by their segment at
    /// `depth`. Children make an array when the schema admits an array and every child is an
    /// index (`a[0]`, `a[1]`, in numeric order) or an append (`a[]`, each one element; also
    /// when the schema says nothing); otherwise an object whose members are shaped by the
    /// schema of each property. A node with both its own value and children is malformed.
    fn emit_tree(&mut self, cx: Ctx<'_>, t: &Tree<'_>, schema: Option<SchemaId>, entries: &[Entry], depth: usize, out: &mut String) -> Result<(), Invalid> {
        let seg = |e: &Entry| t.path(e).get(depth).map(|r| t.key(r));
        let own = entries.iter().take_while(|e| seg(e).is_none()).count();
        let (values, kids) = entries.split_at(own);
        if kids.is_empty() {
            return self.leaf(cx, t.base, schema, values, out);
        }
        if !values.is_empty() {
            return Err(Invalid::Malformed("a key is both a value and an object"));
        }
        let types = types_of(cx.hints, schema);
        let appends = kids.iter().all(|e| seg(e) == Some(""));
        let as_array = types.has(TypeSet::ARRAY) && kids.iter().all(|e| seg(e).is_some_and(is_index)) && (types.0 != TypeSet::ANY || appends);
        let items = if as_array { schema.and_then(|s| cx.hints.items(s)) } else { None };
        out.push(if as_array { '[' } else { '{' });
        let (mut i, mut n) = (0, 0);
        while i < kids.len() {
            let k = seg(&kids[i]).unwrap_or("");
            let mut j = i + 1;
            while j < kids.len() && seg(&kids[j]) == Some(k) {
                j += 1;
            }
            let group = &kids[i..j];
            if as_array && k.is_empty() {
                for e in group {
                    if n > 0 {
                        out.push(',');
                    }
                    n += 1;
                    self.emit_tree(cx, t, items, std::slice::from_ref(e), depth + 1, out)?;
                }
            } else {
                if n > 0 {
                    out.push(',');
                }
                n += 1;
                if as_array {
                    self.emit_tree(cx, t, items, group, depth + 1, out)?;
                } else {
                    write_json_str(out, k);
                    out.push(':');
                    let prop = schema.and_then(|s| cx.hints.property(s, k));
                    self.emit_tree(cx, t, prop, group, depth + 1, out)?;
                }
            }
            i = j;
        }
        out.push(if as_array { ']' } else { '}' });
        Ok(())
    }

    /// The values given for one key: an array of them when the schema admits an array (a lone
    /// empty value is the empty string when the schema also admits a string: Stripe's
    /// `tax_rates=` for "none"), or when the schema admits anything and there are several;
    /// else one scalar coerced to the schema's types (several are [`Invalid::Duplicate`]). A
    /// lone empty value where the schema admits an object and no scalar is the empty object
    /// (`offline=` for `offline: {}`, the only value the key can carry there).
    fn leaf(&mut self, cx: Ctx<'_>, base: &[u8], schema: Option<SchemaId>, values: &[Entry], out: &mut String) -> Result<(), Invalid> {
        let raw = |e: &Entry| &base[e.value.start as usize..e.value.end as usize];
        let types = types_of(cx.hints, schema);
        let lone_empty = values.len() == 1 && raw(&values[0]).is_empty();
        const SCALARS: u8 = TypeSet::NULL | TypeSet::BOOLEAN | TypeSet::INTEGER | TypeSet::NUMBER | TypeSet::STRING;
        if lone_empty && types.has(TypeSet::OBJECT) && !types.has(TypeSet::ARRAY) && types.0 & SCALARS == 0 {
            out.push_str("{}");
            return Ok(());
        }
        let items = match shape_of(cx.hints, schema) {
            Shape::Array(items) if !(lone_empty && types.has(TypeSet::STRING)) => Some(types_of(cx.hints, items)),
            _ if values.len() > 1 && types.0 == TypeSet::ANY => Some(types),
            _ => None,
        };
        let Some(item_types) = items else {
            return match values {
                [one] => self.piece(cx, raw(one), types, out),
                _ => Err(Invalid::Duplicate),
            };
        };
        out.push('[');
        for (k, e) in values.iter().enumerate() {
            if k > 0 {
                out.push(',');
            }
            self.piece(cx, raw(e), item_types, out)?;
        }
        out.push(']');
        Ok(())
    }
}

/// The key paths of [`Entry`]s and the bytes their values are ranges of.
struct Tree<'a> {
    base: &'a [u8],
    keys: &'a str,
    segs: &'a [Range<u32>],
}

impl Tree<'_> {
    fn path(&self, e: &Entry) -> &[Range<u32>] {
        &self.segs[e.segs.start as usize..e.segs.end as usize]
    }

    fn key(&self, r: &Range<u32>) -> &str {
        &self.keys[r.start as usize..r.end as usize]
    }
}
