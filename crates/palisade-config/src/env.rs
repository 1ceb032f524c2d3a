//! Environment handling: `${VAR}` interpolation inside string values, and `PALISADE_*`
//! variables that override scalar settings (for containers).
//!
//! An override variable names a key path in upper case with `_` between the parts and list
//! indexes as numbers: `PALISADE_ADMIN_ADDR`, `PALISADE_LISTEN_0_ADDR`,
//! `PALISADE_APPS_0_UPSTREAM`, `PALISADE_SERVER_MAX_BODY_SIZE`. It replaces a scalar that the
//! file sets, or sets one of the top-level settings listed in [`INSERTABLE`] that it does not.

use crate::decode::Ctx;
use crate::yaml::{Key, Node, Origin, Value};

/// Key paths that an environment variable may set even when the file does not mention them.
pub const INSERTABLE: &[&[&str]] = &[
    &["workers"],
    &["log", "level"],
    &["log", "format"],
    &["log", "access_log"],
    &["admin", "addr"],
    &["admin", "token"],
    &["authz", "addr"],
    &["authz", "token"],
    &["server", "max_connections"],
    &["server", "shutdown_timeout"],
    &["server", "busy_poll"],
];

/// Replace `${NAME}` (error when unset) and `${NAME:-default}` in every string; `$${` is a
/// literal `${`.
pub fn interpolate(cx: &mut Ctx, node: &mut Node, path: &str, lookup: &dyn Fn(&str) -> Option<String>) {
    match &mut node.value {
        Value::Str(s) if s.contains('$') => match expand(s, lookup) {
            Ok(out) => *s = out,
            Err(msg) => cx.error(&node.origin, path, msg),
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

fn expand(s: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(pos) = rest.find('$') {
        out.push_str(&rest[..pos]);
        let after = &rest[pos..];
        if let Some(tail) = after.strip_prefix("$${") {
            out.push_str("${");
            rest = tail;
        } else if let Some(tail) = after.strip_prefix("${") {
            let end = tail.find('}').ok_or_else(|| "unterminated `${` in value".to_string())?;
            let expr = &tail[..end];
            let (name, default) = match expr.split_once(":-") {
                Some((n, d)) => (n, Some(d)),
                None => (expr, None),
            };
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(format!("`${{{expr}}}` is not a valid variable reference"));
            }
            match lookup(name).or_else(|| default.map(str::to_string)) {
                Some(v) => out.push_str(&v),
                None => return Err(format!("environment variable {name} is not set (use ${{{name}:-default}} for a default)")),
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

/// Apply every `PALISADE_*` override in `vars` to the document.
pub fn apply_overrides(root: &mut Node, vars: &[(String, String)]) {
    for (name, value) in vars {
        let Some(rest) = name.strip_prefix("PALISADE_") else { continue };
        if rest.is_empty() {
            continue;
        }
        let value_node = Node { origin: Origin::Env(name.clone()), value: scalar_from_env(value) };
        if !replace_existing(root, rest, &value_node) {
            insert_known(root, rest, value_node);
        }
    }
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

fn insert_known(root: &mut Node, rest: &str, value: Node) {
    let Some(path) = INSERTABLE.iter().find(|p| p.iter().map(|k| env_part(k)).collect::<Vec<_>>().join("_") == rest) else {
        return;
    };
    let mut node = root;
    for (i, key) in path.iter().enumerate() {
        if matches!(node.value, Value::Null) {
            node.value = Value::Map(Vec::new());
        }
        let Value::Map(entries) = &mut node.value else { return };
        let pos = match entries.iter().position(|(k, _)| k.name == *key) {
            Some(p) => p,
            None => {
                let origin = value.origin.clone();
                let child = if i + 1 == path.len() { value.clone() } else { Node { origin: origin.clone(), value: Value::Map(Vec::new()) } };
                entries.push((Key { name: key.to_string(), origin }, child));
                entries.len() - 1
            }
        };
        node = &mut entries[pos].1;
    }
}
