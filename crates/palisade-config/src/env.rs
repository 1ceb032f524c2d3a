//! Environment handling: `${VAR}` interpolation inside string values, and `PALISADE_*`
//! variables that override scalar settings (for containers).
//!
//! An override variable names a key path in upper case with `_` between the parts and list
//! indexes as numbers: `PALISADE_ADMIN_ADDR`, `PALISADE_LISTEN_0_ADDR`,
//! `PALISADE_APPS_0_UPSTREAM`, `PALISADE_SERVER_MAX_HEADER_SIZE`. It replaces a scalar that
//! the file sets, or sets a setting the file leaves out (see [`apply_overrides`]); a name that
//! is no setting is an error.

use crate::decode::Ctx;
use crate::yaml::{Key, Node, Origin, Value};

/// Replace `${NAME}` (error when unset) and `${NAME:-default}` in every string; `$${` is a
/// literal `${`.
pub fn interpolate(cx: &mut Ctx, node: &mut Node, path: &str, lookup: &dyn Fn(&str) -> Option<String>) {
    match &mut node.value {
        Value::Str(s) if s.contains('$') => match expand(s, lookup) {
            Ok(out) => *s = out,
            Err(e) => cx.error(&node.origin, path, e.to_string()),
        },
        Value::Seq(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                interpolate(cx, item, &crate::decode::index(path, i), lookup);
            }
        }
        Value::Map(entries) => {
            for (k, v) in entries.iter_mut() {
                let p = crate::decode::join(path, &k.name);
                interpolate(cx, v, &p, lookup);
            }
        }
        _ => {}
    }
}

fn expand(s: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<String, crate::Error> {
    let err = |m: String| crate::Error::new(crate::ErrorKind::Env, m);
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(pos) = rest.find('$') {
        out.push_str(&rest[..pos]);
        let after = &rest[pos..];
        if let Some(tail) = after.strip_prefix("$${") {
            out.push_str("${");
            rest = tail;
        } else if let Some(tail) = after.strip_prefix("${") {
            let end = tail.find('}').ok_or_else(|| err("unterminated `${` in value".to_string()))?;
            let expr = &tail[..end];
            let (name, default) = match expr.split_once(":-") {
                Some((n, d)) => (n, Some(d)),
                None => (expr, None),
            };
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(err(format!("`${{{expr}}}` is not a valid variable reference")));
            }
            match lookup(name).or_else(|| default.map(str::to_string)) {
                Some(v) => out.push_str(&v),
                None => return Err(err(format!("environment variable {name} is not set (use ${{{name}:-default}} for a default)"))),
            }
            rest = &tail[end + 1..];
        } else {
            out.push('$');
            rest = &after[1..];
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// `PALISADE_*` variables that are not settings (read by the command line).
pub const NOT_SETTINGS: &[&str] = &["PALISADE_CONFIG"];

/// Apply every `PALISADE_*` override in `vars` to the document. A variable replaces the scalar
/// it names when the file has it, else sets the setting of `settable` it names (creating the
/// sections on the way); a name that is neither is an error, as is one that would need a list
/// item the file does not have.
///
/// `settable` holds key paths: `#` stands for a list index, and a last part `*` for any one
/// key of a section that its own decoder checks (`apps.#.detection.*`).
pub fn apply_overrides(cx: &mut Ctx, root: &mut Node, vars: &[(String, String)], settable: &[Vec<&str>]) {
    for (name, value) in vars {
        let Some(rest) = name.strip_prefix("PALISADE_") else { continue };
        if NOT_SETTINGS.contains(&name.as_str()) {
            continue;
        }
        let origin = Origin::Env(name.clone());
        let value_node = Node { origin: origin.clone(), value: scalar_from_env(value) };
        if !rest.is_empty() && replace_existing(root, rest, &value_node) {
            continue;
        }
        match settable.iter().find_map(|p| match_path(rest, p)) {
            Some(segs) => {
                if let Err((path, msg)) = insert(root, &segs, value_node) {
                    cx.error(&origin, &path, msg);
                }
            }
            None => {
                let mut msg = format!("`{name}` does not name a setting");
                let forms: Vec<String> = settable.iter().filter(|p| p.last() != Some(&"*")).map(|p| env_form(p)).collect();
                let forms: Vec<&str> = forms.iter().map(String::as_str).collect();
                match crate::decode::suggest(rest, &forms) {
                    Some(s) => msg.push_str(&format!(" (did you mean `PALISADE_{s}`?)")),
                    None => msg.push_str(" (the key path in upper case with `_` between parts, e.g. PALISADE_SERVER_MAX_HEADER_SIZE; see docs/CONFIG.md)"),
                }
                cx.error(&origin, "", msg);
            }
        }
    }
}

/// `apps.#.limits.max_body_size` as `APPS_0_LIMITS_MAX_BODY_SIZE`.
fn env_form(path: &[&str]) -> String {
    path.iter().map(|k| if *k == "#" { "0".to_string() } else { env_part(k) }).collect::<Vec<_>>().join("_")
}

/// One step of a key path.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Seg {
    Key(String),
    Index(usize),
}

/// The key path that `rest` (`APPS_0_LIMITS_MAX_BODY_SIZE`) names by `pattern`, if it does.
fn match_path(rest: &str, pattern: &[&str]) -> Option<Vec<Seg>> {
    let mut segs = Vec::with_capacity(pattern.len());
    let mut rest = rest;
    for (i, part) in pattern.iter().enumerate() {
        if i > 0 {
            rest = rest.strip_prefix('_')?;
        }
        match *part {
            "#" => {
                let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
                segs.push(Seg::Index(rest[..digits].parse().ok()?));
                rest = &rest[digits..];
            }
            "*" => {
                if rest.is_empty() || !rest.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_') {
                    return None;
                }
                segs.push(Seg::Key(rest.to_ascii_lowercase()));
                rest = "";
            }
            key => {
                rest = rest.strip_prefix(env_part(key).as_str())?;
                segs.push(Seg::Key(key.to_string()));
            }
        }
    }
    rest.is_empty().then_some(segs)
}

fn seg_path(segs: &[Seg]) -> String {
    let mut p = String::new();
    for s in segs {
        match s {
            Seg::Key(k) => p = crate::decode::join(&p, k),
            Seg::Index(i) => p = crate::decode::index(&p, *i),
        }
    }
    p
}

/// Set the value at `segs`, creating the mappings on the way.
fn insert(root: &mut Node, segs: &[Seg], value: Node) -> Result<(), (String, String)> {
    let mut node = root;
    for (i, seg) in segs.iter().enumerate() {
        let last = i + 1 == segs.len();
        let here = seg_path(&segs[..i]);
        match seg {
            Seg::Key(key) => {
                if matches!(node.value, Value::Null) {
                    node.value = Value::Map(Vec::new());
                }
                let kind = node.kind();
                let Value::Map(entries) = &mut node.value else {
                    return Err((here, format!("is {kind} in the file, so it has no key `{key}` to set")));
                };
                let pos = match entries.iter().position(|(k, _)| k.name == *key) {
                    Some(p) => p,
                    None => {
                        let origin = value.origin.clone();
                        entries.push((Key { name: key.clone(), origin: origin.clone() }, Node { origin, value: Value::Null }));
                        entries.len() - 1
                    }
                };
                node = &mut entries[pos].1;
            }
            Seg::Index(idx) => {
                let Value::Seq(items) = &mut node.value else {
                    return Err((here, format!("is not a list in the file, so it has no item {idx}")));
                };
                let len = items.len();
                let Some(item) = items.get_mut(*idx) else {
                    return Err((here, format!("has {len} item(s) in the file: an override sets keys of items that exist")));
                };
                node = item;
            }
        }
        if last {
            *node = value;
            return Ok(());
        }
    }
    Ok(())
}

fn scalar_from_env(v: &str) -> Value {
    match v {
        "true" => Value::Bool(true),
        "false" => Value::Bool(false),
        _ => match v.parse::<i64>() {
            Ok(i) => Value::Int(i),
            Err(_) => Value::Str(v.to_string()),
        },
    }
}

fn env_part(key: &str) -> String {
    key.to_ascii_uppercase().replace(['-', '.'], "_")
}

/// Find the scalar named by `rest` (e.g. `LISTEN_0_ADDR`) and replace it. Returns true if found.
fn replace_existing(node: &mut Node, rest: &str, value: &Node) -> bool {
    match &mut node.value {
        Value::Map(entries) => {
            for (k, v) in entries.iter_mut() {
                let part = env_part(&k.name);
                if rest == part {
                    if matches!(v.value, Value::Map(_) | Value::Seq(_)) {
                        return false;
                    }
                    *v = value.clone();
                    return true;
                }
                if let Some(tail) = rest.strip_prefix(&part).and_then(|t| t.strip_prefix('_')) {
                    if replace_existing(v, tail, value) {
                        return true;
                    }
                }
            }
            false
        }
        Value::Seq(items) => {
            let digits = rest.find('_').unwrap_or(rest.len());
            let Ok(i) = rest[..digits].parse::<usize>() else { return false };
            let Some(item) = items.get_mut(i) else { return false };
            if digits == rest.len() {
                if matches!(item.value, Value::Map(_) | Value::Seq(_)) {
                    return false;
                }
                *item = value.clone();
                return true;
            }
            replace_existing(item, &rest[digits + 1..], value)
        }
        _ => false,
    }
}
