//! The `rules:` section of an app, and rule files, decoded with the configuration crate's
//! collecting decoder: every problem is reported with its file, line, column and key path.
//!
//! ```yaml
//! rules:                              # a list of rules, or a mapping:
//!   files: [rules/common.yaml]        #   rule files (relative to the config file)
//!   inline:                           #   and rules written here
//!     - id: wp-config
//!       when: {field: query, contains: wp-config.php}
//!       then: block
//! ```
//!
//! File reading is the caller's (the binary's): this crate does no I/O.

use std::collections::HashMap;
use std::path::Path;

use palisade_config::decode::{self, Ctx, MapReader};
use palisade_config::yaml::{self, Node, Origin, Value};
use palisade_config::ConfigError;

use crate::model::{Action, Atom, Cmp, Expr, Field, Op, Rule, Skip};

#[cfg(test)]
mod tests;

/// What decoding needs to know from outside.
#[derive(Clone, Copy, Debug, Default)]
pub struct Options<'a> {
    /// Detector names and categories that `skip` may name (`*` is always accepted); empty =
    /// any name.
    pub detectors: &'a [&'a str],
}

/// Operator keys of an atom.
pub const OPERATORS: &[&str] = &["equals", "in", "prefix", "suffix", "contains", "regex", "cidr", "exists", "length", "lt", "le", "gt", "ge", "eq"];
const ATOM_KEYS: &[&str] =
    &["field", "raw", "ignore_case", "equals", "in", "prefix", "suffix", "contains", "regex", "cidr", "exists", "length", "lt", "le", "gt", "ge", "eq"];
const RULE_KEYS: &[&str] = &["id", "name", "when", "then"];
const THEN_KEYS: &[&str] = &["action", "status", "tag", "skip"];
/// The fields an atom may name, for messages.
pub const FIELDS: &str = "method, path, query, query.NAME, header.NAME, cookie.NAME, body, body:/JSON/POINTER, ip, operation";

/// Decode the `rules:` section at key path `p`. Rule files are read with `read` (paths
/// resolved against `base_dir`); their problems are reported against the file itself.
pub fn decode(
    cx: &mut Ctx,
    n: &Node,
    p: &str,
    base_dir: &Path,
    opts: &Options<'_>,
    read: &dyn Fn(&Path) -> Result<String, palisade_config::read::ReadError>,
) -> Vec<Rule> {
    let mut ids = HashMap::new();
    let mut rules = Vec::new();
    match &n.value {
        Value::Seq(_) | Value::Null => rules.extend(decode_list(cx, n, p, opts, &mut ids)),
        Value::Map(_) => {
            let Some(mut m) = MapReader::new(cx, n, p) else { return rules };
            let files = m.opt(cx, "files", |cx, n, p| {
                decode::one_or_seq(cx, n, p, |cx, n, p| decode::non_empty_string(cx, n, p).map(|s| (s, n.origin.clone(), p.to_string())))
            });
            let inline = m.node("inline").map(|n| (n, decode::join(p, "inline")));
            m.finish_with(cx, &["files", "inline"]);
            for (file, origin, fp) in files.unwrap_or_default() {
                let full = base_dir.join(&file);
                match read(&full) {
                    Ok(text) => rules.extend(decode_file(cx, &full.display().to_string(), &text, opts, &mut ids)),
                    Err(e) => cx.error(&origin, &fp, format!("cannot read rule file {}: {e}", full.display())),
                }
            }
            if let Some((n, ip)) = inline {
                rules.extend(decode_list(cx, n, &ip, opts, &mut ids));
            }
        }
        _ => cx.error(&n.origin, p, format!("expected a list of rules or a mapping with `files` and `inline`, found {}", n.kind())),
    }
    rules
}

/// Decode a rule file: a list of rules, or a mapping with a `rules` list.
pub fn decode_file(cx: &mut Ctx, file: &str, text: &str, opts: &Options<'_>, ids: &mut HashMap<String, String>) -> Vec<Rule> {
    let root = match yaml::parse(text) {
        Ok(root) => root,
        Err(e) => {
            cx.errors.push(ConfigError {
                file: file.to_string(),
                line: e.line,
                col: e.col,
                env: None,
                path: String::new(),
                message: format!("invalid YAML: {}", e.message),
            });
            return Vec::new();
        }
    };
    let mut fcx = Ctx::new(file);
    let rules = match &root.value {
        Value::Map(_) => {
            let mut rules = Vec::new();
            if let Some(mut m) = MapReader::new(&mut fcx, &root, "") {
                if let Some(list) = m.node("rules") {
                    rules = decode_list(&mut fcx, list, "rules", opts, ids);
                } else {
                    fcx.error(&root.origin, "", "a rule file is a list of rules or a mapping with a `rules` list");
                }
                m.finish_with(&mut fcx, &["rules"]);
            }
            rules
        }
        _ => decode_list(&mut fcx, &root, "", opts, ids),
    };
    cx.errors.append(&mut fcx.errors);
    rules
}

fn decode_list(cx: &mut Ctx, n: &Node, p: &str, opts: &Options<'_>, ids: &mut HashMap<String, String>) -> Vec<Rule> {
    decode::seq_partial(cx, n, p, |cx, n, p| {
        let rule = decode_rule(cx, n, p, opts)?;
        if let Some(first) = ids.get(&rule.id) {
            cx.error(&n.origin, p, format!("duplicate rule id `{}` (first at {first})", rule.id));
            return None;
        }
        ids.insert(rule.id.clone(), rule.origin.clone());
        Some(rule)
    })
}

fn origin_text(cx: &Ctx, o: &Origin) -> String {
    format!("{}:{o}", cx.file)
}

fn decode_rule(cx: &mut Ctx, n: &Node, p: &str, opts: &Options<'_>) -> Option<Rule> {
    let mut m = MapReader::new(cx, n, p)?;
    let id = m.req(cx, "id", |cx, n, p| {
        let s = decode::string_like(cx, n, p)?;
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_alphanumeric() || b"_-.:".contains(&b)) {
            cx.error(&n.origin, p, format!("`{s}` is not a rule id: use letters, digits, `_`, `-`, `.` and `:` (it becomes the reason code `rule.ID`)"));
            return None;
        }
        Some(s)
    });
    let name = m.opt(cx, "name", decode::non_empty_string);
    let when = m.req(cx, "when", decode_expr);
    let then = m.req(cx, "then", |cx, n, p| decode_then(cx, n, p, opts));
    m.finish_with(cx, RULE_KEYS);
    let (action, tags, skip) = then?;
    Some(Rule { id: id?, name, when: when?, action, tags, skip, origin: origin_text(cx, &n.origin) })
}

/// A condition: an atom (`field` and operators), `all`/`any` (lists), `not` (a condition), or
/// a list (all of its items).
pub fn decode_expr(cx: &mut Ctx, n: &Node, p: &str) -> Option<Expr> {
    match &n.value {
        Value::Seq(_) => decode::seq(cx, n, p, decode_expr).map(Expr::All),
        Value::Map(entries) => {
            let combinators: Vec<&str> = entries.iter().map(|(k, _)| k.name.as_str()).filter(|k| matches!(*k, "all" | "any" | "not")).collect();
            if combinators.is_empty() {
                return decode_atom(cx, n, p);
            }
            if entries.len() > 1 {
                cx.error(&n.origin, p, format!("`{}` must be alone in its mapping (nest conditions under it)", combinators[0]));
                return None;
            }
            let (k, v) = &entries[0];
            let kp = decode::join(p, &k.name);
            match k.name.as_str() {
                "all" => decode::seq(cx, v, &kp, decode_expr).map(Expr::All),
                "any" => decode::seq(cx, v, &kp, decode_expr).map(Expr::Any),
                _ => decode_expr(cx, v, &kp).map(|e| Expr::Not(Box::new(e))),
            }
        }
        _ => {
            cx.error(&n.origin, p, format!("expected a condition (a mapping with `field` and an operator, or `all`, `any`, `not`), found {}", n.kind()));
            None
        }
    }
}

/// Parse a field name.
pub fn parse_field(s: &str) -> Result<Field, crate::Error> {
    let bad = || field_error(format!("unknown field `{s}`; expected one of: {FIELDS}"));
    Ok(match s {
        "method" => Field::Method,
        "path" => Field::Path,
        "query" => Field::Query,
        "body" => Field::Body,
        "ip" | "client_ip" => Field::Ip,
        "operation" => Field::Operation,
        _ => {
            if let Some(name) = s.strip_prefix("query.") {
                if name.is_empty() {
                    return Err(bad());
                }
                Field::QueryParam(name.to_string())
            } else if let Some(name) = s.strip_prefix("header.") {
                let h = http::HeaderName::from_bytes(name.as_bytes())
                    .map_err(|e| crate::Error::caused_by(crate::ErrorKind::Field, format!("`{name}` is not a valid header name"), e))?;
                Field::Header(h.as_str().to_string())
            } else if let Some(name) = s.strip_prefix("cookie.") {
                if name.is_empty() {
                    return Err(bad());
                }
                Field::Cookie(name.to_string())
            } else if let Some(ptr) = s.strip_prefix("body:") {
                Field::BodyPointer(parse_pointer(ptr)?)
            } else {
                return Err(bad());
            }
        }
    })
}

fn field_error(message: String) -> crate::Error {
    crate::Error::new(crate::ErrorKind::Field, message)
}

/// A JSON pointer (RFC 6901) into unescaped segments.
pub fn parse_pointer(ptr: &str) -> Result<Vec<String>, crate::Error> {
    if ptr.is_empty() {
        return Ok(Vec::new());
    }
    let Some(rest) = ptr.strip_prefix('/') else {
        return Err(field_error(format!("`{ptr}` is not a JSON pointer (it starts with `/`, e.g. body:/user/role)")));
    };
    rest.split('/')
        .map(|seg| {
            let mut out = String::with_capacity(seg.len());
            let mut chars = seg.chars();
            while let Some(c) = chars.next() {
                if c == '~' {
                    match chars.next() {
                        Some('0') => out.push('~'),
                        Some('1') => out.push('/'),
                        _ => return Err(field_error(format!("`{ptr}`: `~` must be followed by 0 or 1 in a JSON pointer"))),
                    }
                } else {
                    out.push(c);
                }
            }
            Ok(out)
        })
        .collect()
}

fn number(cx: &mut Ctx, n: &Node, p: &str) -> Option<f64> {
    let v = match &n.value {
        Value::Int(i) => Some(*i as f64),
        Value::Float(f) if f.is_finite() => Some(*f),
        Value::Str(s) => s.trim().parse::<f64>().ok().filter(|f| f.is_finite()),
        _ => None,
    };
    if v.is_none() {
        cx.error(&n.origin, p, format!("expected a number, found {}", n.kind()));
    }
    v
}

fn literals(cx: &mut Ctx, n: &Node, p: &str, allow_empty: bool) -> Option<Vec<Vec<u8>>> {
    decode::one_or_seq(cx, n, p, |cx, n, p| {
        let s = decode::string_like(cx, n, p)?;
        if s.is_empty() && !allow_empty {
            cx.error(&n.origin, p, "must not be empty (use `exists: true` to test presence)");
            return None;
        }
        Some(s.into_bytes())
    })
    .and_then(|v| {
        if v.is_empty() {
            cx.error(&n.origin, p, "needs at least one value");
            None
        } else {
            Some(v)
        }
    })
}

fn decode_atom(cx: &mut Ctx, n: &Node, p: &str) -> Option<Expr> {
    let mut m = MapReader::new(cx, n, p)?;
    let field = m.req(cx, "field", |cx, n, p| {
        let s = decode::non_empty_string(cx, n, p)?;
        parse_field(&s).map_err(|e| cx.error(&n.origin, p, e.to_string())).ok()
    });
    let raw = m.opt(cx, "raw", decode::boolean).unwrap_or(false);
    let ignore_case = m.opt(cx, "ignore_case", decode::boolean).unwrap_or(false);
    let mut ops: Vec<Expr> = Vec::new();
    let mut ok = true;
    let mk = |op: Op| Atom { field: Field::Method, raw, ignore_case, op };
    for key in OPERATORS {
        let Some(node) = m.node(key) else { continue };
        let kp = decode::join(p, key);
        let got: Option<Expr> = match *key {
            "equals" | "in" => literals(cx, node, &kp, true).map(|v| Expr::Atom(mk(Op::Equals(v)))),
            "prefix" => literals(cx, node, &kp, false).map(|v| Expr::Atom(mk(Op::Prefix(v)))),
            "suffix" => literals(cx, node, &kp, false).map(|v| Expr::Atom(mk(Op::Suffix(v)))),
            "contains" => literals(cx, node, &kp, false).map(|v| Expr::Atom(mk(Op::Contains(v)))),
            "regex" => decode::one_or_seq(cx, node, &kp, |cx, n, p| {
                let s = decode::string(cx, n, p)?;
                let config = regex_automata::util::syntax::Config::new().case_insensitive(ignore_case);
                match regex_automata::util::syntax::parse_with(&s, &config) {
                    Ok(_) => Some(s),
                    Err(e) => {
                        cx.error(&n.origin, p, format!("invalid regular expression: {}", e.to_string().lines().last().unwrap_or("")));
                        None
                    }
                }
            })
            .filter(|v| !v.is_empty())
            .map(|v| Expr::Atom(mk(Op::Regex(v)))),
            "cidr" => decode::one_or_seq(cx, node, &kp, decode::cidr).filter(|v| !v.is_empty()).map(|v| Expr::Atom(mk(Op::Cidr(v)))),
            "exists" => decode::boolean(cx, node, &kp).map(|b| if b { Expr::Atom(mk(Op::Exists)) } else { Expr::Not(Box::new(Expr::Atom(mk(Op::Exists)))) }),
            "length" => decode_cmps(cx, node, &kp).map(|v| all_of(v.into_iter().map(|(c, t)| Expr::Atom(mk(Op::Length(c, t)))).collect())),
            cmp => {
                let c = Cmp::ALL.iter().find(|(k, _)| *k == cmp).map(|(_, c)| *c).unwrap_or(Cmp::Eq);
                number(cx, node, &kp).map(|t| Expr::Atom(mk(Op::Number(c, t))))
            }
        };
        match got {
            Some(e) => ops.push(e),
            None => ok = false,
        }
    }
    let origin = m.origin().clone();
    m.finish_with(cx, ATOM_KEYS);
    let field = field?;
    if raw && !field.has_raw_form() {
        cx.error(&origin, &decode::join(p, "raw"), format!("`raw` applies to path, query, query.NAME and cookie.NAME, not to `{field}`"));
        return None;
    }
    if !ok {
        return None;
    }
    if ops.is_empty() {
        cx.error(&origin, p, format!("a condition needs an operator: one of {}", OPERATORS.join(", ")));
        return None;
    }
    fn set_field(e: &mut Expr, f: &Field) {
        match e {
            Expr::Atom(a) => a.field = f.clone(),
            Expr::All(v) | Expr::Any(v) => v.iter_mut().for_each(|e| set_field(e, f)),
            Expr::Not(e) => set_field(e, f),
        }
    }
    let mut e = all_of(ops);
    set_field(&mut e, &field);
    Some(e)
}

fn all_of(mut v: Vec<Expr>) -> Expr {
    if v.len() == 1 {
        v.pop().unwrap()
    } else {
        Expr::All(v)
    }
}

/// `length: 5` (equal) or `length: {gt: 1, le: 64}`.
fn decode_cmps(cx: &mut Ctx, n: &Node, p: &str) -> Option<Vec<(Cmp, f64)>> {
    if !matches!(n.value, Value::Map(_)) {
        return number(cx, n, p).map(|t| vec![(Cmp::Eq, t)]);
    }
    let mut m = MapReader::new(cx, n, p)?;
    let mut out = Vec::new();
    let mut ok = true;
    for (k, c) in Cmp::ALL {
        if let Some(node) = m.node(k) {
            match number(cx, node, &decode::join(p, k)) {
                Some(t) => out.push((c, t)),
                None => ok = false,
            }
        }
    }
    let origin = m.origin().clone();
    m.finish_with(cx, &["lt", "le", "gt", "ge", "eq"]);
    if out.is_empty() && ok {
        cx.error(&origin, p, "expected a number or a mapping of lt, le, gt, ge, eq");
        return None;
    }
    ok.then_some(out)
}

fn decode_then(cx: &mut Ctx, n: &Node, p: &str, opts: &Options<'_>) -> Option<(Action, Vec<String>, Option<Skip>)> {
    let action = |cx: &mut Ctx, n: &Node, p: &str| {
        decode::one_of(cx, n, p, &["block", "monitor", "allow"]).map(|v| match v {
            "block" => Action::Block(None),
            "monitor" => Action::Monitor,
            _ => Action::Allow,
        })
    };
    if !matches!(n.value, Value::Map(_)) {
        return action(cx, n, p).map(|a| (a, Vec::new(), None));
    }
    let mut m = MapReader::new(cx, n, p)?;
    let tried = m.has("skip") || m.has("tag") || m.has("action");
    let mut act = m.opt(cx, "action", action);
    let status = m.opt(cx, "status", |cx, n, p| decode::uint(cx, n, p, 400, 599)).map(|s| (s as u16, n.get("status").map(|s| s.origin.clone())));
    let tags = m.opt(cx, "tag", |cx, n, p| decode::one_or_seq(cx, n, p, decode::non_empty_string)).unwrap_or_default();
    let skip = m.opt(cx, "skip", |cx, n, p| decode_skip(cx, n, p, opts));
    let origin = m.origin().clone();
    m.finish_with(cx, THEN_KEYS);
    if let Some((s, so)) = status {
        match &mut act {
            Some(Action::Block(st)) => *st = Some(s),
            _ => cx.error(so.as_ref().unwrap_or(&origin), &decode::join(p, "status"), "`status` goes with `action: block`"),
        }
    }
    let act = act.unwrap_or(Action::None);
    if act == Action::None && tags.is_empty() && skip.is_none() {
        if tried {
            // An effect was given and failed to decode: that error says it all.
            return None;
        }
        cx.error(&origin, p, "`then` does nothing: give an `action` (block, monitor, allow), a `tag` or a `skip`");
        return None;
    }
    Some((act, tags, skip))
}

fn decode_skip(cx: &mut Ctx, n: &Node, p: &str, opts: &Options<'_>) -> Option<Skip> {
    let detector = |cx: &mut Ctx, n: &Node, p: &str| {
        let s = decode::non_empty_string(cx, n, p)?;
        if s != "*" && !opts.detectors.is_empty() && !opts.detectors.contains(&s.as_str()) {
            cx.error(&n.origin, p, format!("unknown detector `{s}`; expected `*` or one of: {}", opts.detectors.join(", ")));
            return None;
        }
        Some(s)
    };
    if !matches!(n.value, Value::Map(_)) {
        let detectors = decode::one_or_seq(cx, n, p, detector)?;
        if detectors.is_empty() {
            cx.error(&n.origin, p, "`skip` names no detector (use `*` for every one)");
            return None;
        }
        return Some(Skip { detectors, fields: Vec::new() });
    }
    let mut m = MapReader::new(cx, n, p)?;
    let detectors = m.req(cx, "detectors", |cx, n, p| decode::one_or_seq(cx, n, p, detector));
    let fields = m.opt(cx, "fields", |cx, n, p| decode::one_or_seq(cx, n, p, decode::non_empty_string)).unwrap_or_default();
    m.finish_with(cx, &["detectors", "fields"]);
    let detectors = detectors?;
    if detectors.is_empty() {
        cx.error(&n.origin, p, "`skip` names no detector (use `*` for every one)");
        return None;
    }
    Some(Skip { detectors, fields })
}
