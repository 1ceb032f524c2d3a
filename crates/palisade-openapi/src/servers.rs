//! Server base paths: the path part of `servers[].url`, which requests carry in front of the
//! `paths` templates.
//!
//! `https://api.example.com/v1` and `/v1` both give `/v1`; `https://api.example.com` and `/`
//! give no prefix (the empty string). Server variables in the path (`/{version}`) expand to
//! every value of their `enum`, else to their `default`; variables in the scheme or host do
//! not matter. A relative URL without a leading slash (`v1`) is taken as `/v1`. Trailing
//! slashes are dropped (`/v1/` = `/v1`). At most [`MAX_BASE_PATHS`] prefixes per `servers`
//! list.

use palisade_config::yaml::{Node, Origin, Value};

use crate::error::push_token;

/// Bound on the prefixes one `servers` list expands to.
pub const MAX_BASE_PATHS: usize = 64;

/// Base paths of a `servers` list (`servers_ptr` is its pointer, for messages). Problems are
/// passed to `warn` (origin, pointer, message); a server that cannot be understood is skipped.
/// An empty or absent list means no prefix: `[""]`.
pub fn base_paths(servers: Option<&Node>, servers_ptr: &str, warn: &mut dyn FnMut(&Origin, &str, String)) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let Some(servers) = servers else { return vec![String::new()] };
    let Value::Seq(items) = &servers.value else {
        warn(&servers.origin, servers_ptr, format!("servers must be a list, not {}; ignored", servers.kind()));
        return vec![String::new()];
    };
    for (i, s) in items.iter().enumerate() {
        let ptr = format!("{servers_ptr}/{i}");
        let Some(Value::Str(url)) = s.get("url").map(|n| &n.value) else {
            warn(&s.origin, &ptr, "server without a string \"url\"; ignored".into());
            continue;
        };
        let path = url_path(url);
        let mut expanded = vec![String::new()];
        let mut rest = path;
        let mut ok = true;
        while let Some(open) = rest.find('{') {
            let Some(close) = rest[open..].find('}').map(|c| open + c) else {
                warn(&s.origin, &push_token(&ptr, "url"), format!("unclosed '{{' in server url {url:?}; server ignored"));
                ok = false;
                break;
            };
            let lit = &rest[..open];
            let name = &rest[open + 1..close];
            let values = variable_values(s.get("variables").and_then(|v| v.get(name)));
            if values.is_empty() {
                warn(&s.origin, &push_token(&ptr, "url"), format!("server variable {{{name}}} has no enum or default; server ignored"));
                ok = false;
                break;
            }
            let mut next = Vec::new();
            for prefix in &expanded {
                for v in &values {
                    if next.len() < MAX_BASE_PATHS {
                        next.push(format!("{prefix}{lit}{v}"));
                    }
                }
            }
            expanded = next;
            rest = &rest[close + 1..];
        }
        if !ok {
            continue;
        }
        for e in expanded {
            let full = format!("{e}{rest}");
            let mut p = if full.starts_with('/') { full } else { format!("/{full}") };
            while p.ends_with('/') {
                p.pop();
            }
            if !out.contains(&p) && out.len() < MAX_BASE_PATHS {
                out.push(p);
            }
        }
    }
    if out.is_empty() {
        out.push(String::new());
    }
    out
}

/// The path part of a server URL (without scheme, authority, query and fragment).
fn url_path(url: &str) -> &str {
    let after_authority = if let Some(i) = url.find("://") {
        let rest = &url[i + 3..];
        rest.find('/').map_or("", |j| &rest[j..])
    } else if let Some(rest) = url.strip_prefix("//") {
        rest.find('/').map_or("", |j| &rest[j..])
    } else {
        url
    };
    after_authority.split(['?', '#']).next().unwrap_or("")
}

fn variable_values(var: Option<&Node>) -> Vec<String> {
    let Some(var) = var else { return Vec::new() };
    if let Some(Value::Seq(items)) = var.get("enum").map(|n| &n.value) {
        let vals: Vec<String> = items.iter().filter_map(Node::scalar_text).collect();
        if !vals.is_empty() {
            return vals;
        }
    }
    var.get("default").and_then(Node::scalar_text).into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use palisade_config::yaml::parse;

    fn paths(yaml: &str) -> (Vec<String>, Vec<String>) {
        let n = parse(yaml).unwrap();
        let mut warnings = Vec::new();
        let p = base_paths(n.get("servers"), "/servers", &mut |_, ptr, m| warnings.push(format!("{ptr}: {m}")));
        (p, warnings)
    }

    #[test]
    fn urls_to_prefixes() {
        assert_eq!(paths("servers: [{url: 'https://api.example.com/v1'}]").0, ["/v1"]);
        assert_eq!(paths("servers: [{url: /v1/}]").0, ["/v1"]);
        assert_eq!(paths("servers: [{url: 'https://api.example.com'}, {url: /}]").0, [""]);
        assert_eq!(paths("servers: [{url: 'https://a.example/v1?x=1'}, {url: v2}, {url: '//cdn.example/v3/'}]").0, ["/v1", "/v2", "/v3"]);
        assert_eq!(paths("servers: []").0, [""]);
        assert_eq!(paths("x: 1").0, [""]);
    }

    #[test]
    fn variables_expand() {
        let (p, w) = paths(
            "servers:\n  - url: 'https://{env}.example.com/{version}/api'\n    variables:\n      env: {default: prod}\n      version: {enum: [v1, v2], default: v1}\n",
        );
        assert_eq!(p, ["/v1/api", "/v2/api"]);
        assert!(w.is_empty());
        let (p, _) = paths("servers:\n  - url: '/{base}'\n    variables: {base: {default: api}}\n");
        assert_eq!(p, ["/api"]);
        let (p, w) = paths("servers:\n  - url: '/{nope}'\n");
        assert_eq!(p, [""]);
        assert!(w[0].contains("{nope}"), "{w:?}");
    }
}
