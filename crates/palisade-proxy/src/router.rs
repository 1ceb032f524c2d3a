//! Application routing: the Host (exact, then the longest matching `*.domain` wildcard, then
//! apps without hosts) and the longest matching path prefix choose an app. Paths are canonical
//! ([`palisade_core::path`]): the prefixes are (the configuration stores them so) and so is
//! the path the proxy routes on.

use std::collections::HashMap;

/// Compiled routing table of a snapshot.
#[derive(Debug, Default)]
pub struct Router {
    /// Keyed by the host's bytes (looked up with a Host header's bytes).
    exact: HashMap<Vec<u8>, Vec<(String, usize)>>,
    /// Wildcard suffixes (`.example.com`), longest first.
    wildcard: Vec<(String, Vec<(String, usize)>)>,
    any: Vec<(String, usize)>,
}

impl Router {
    /// `apps` yields (host patterns, path prefix) in configuration order.
    pub fn new<'a>(apps: impl Iterator<Item = (&'a [String], &'a str)>) -> Router {
        let mut r = Router::default();
        for (i, (hosts, prefix)) in apps.enumerate() {
            let entry = (prefix.to_string(), i);
            if hosts.is_empty() {
                r.any.push(entry);
                continue;
            }
            for h in hosts {
                if let Some(suffix) = h.strip_prefix('*') {
                    match r.wildcard.iter_mut().find(|(s, _)| s == suffix) {
                        Some((_, list)) => list.push(entry.clone()),
                        None => r.wildcard.push((suffix.to_string(), vec![entry.clone()])),
                    }
                } else {
                    r.exact.entry(h.clone().into_bytes()).or_default().push(entry.clone());
                }
            }
        }
        let by_prefix_len = |l: &mut Vec<(String, usize)>| l.sort_by_key(|e| std::cmp::Reverse(e.0.len()));
        r.exact.values_mut().for_each(by_prefix_len);
        r.wildcard.iter_mut().for_each(|(_, l)| by_prefix_len(l));
        r.wildcard.sort_by_key(|e| std::cmp::Reverse(e.0.len()));
        by_prefix_len(&mut r.any);
        r
    }

    /// The app for `host` (without port, any case) and `path`.
    pub fn route(&self, host: &str, path: &str) -> Option<usize> {
        self.route_bytes(host.as_bytes(), path)
    }

    /// [`Router::route`] for a host given as bytes (visible ASCII in practice: a Host header's
    /// value, which then needs no UTF-8 check).
    pub fn route_bytes(&self, host: &[u8], path: &str) -> Option<usize> {
        let lower;
        let host = if host.iter().any(u8::is_ascii_uppercase) {
            lower = host.to_ascii_lowercase();
            lower.as_slice()
        } else {
            host
        };
        let host = host.strip_suffix(b".").unwrap_or(host);
        if let Some(list) = self.exact.get(host) {
            if let Some(i) = first_prefix(list, path) {
                return Some(i);
            }
        }
        for (suffix, list) in &self.wildcard {
            if host.len() > suffix.len() && host.ends_with(suffix.as_bytes()) {
                if let Some(i) = first_prefix(list, path) {
                    return Some(i);
                }
            }
        }
        first_prefix(&self.any, path)
    }
}

/// A prefix matches at a segment boundary: `/api` matches `/api`, `/api/x`, not `/apix`.
fn first_prefix(list: &[(String, usize)], path: &str) -> Option<usize> {
    list.iter().find(|(p, _)| prefix_matches(p, path)).map(|(_, i)| *i)
}

fn prefix_matches(prefix: &str, path: &str) -> bool {
    palisade_core::path::under_prefix(path, prefix)
}

/// The host part of a Host header or URI authority (port and IPv6 brackets removed).
#[cfg(test)]
pub fn host_only(authority: &str) -> &str {
    if let Some(rest) = authority.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    match authority.rsplit_once(':') {
        Some((h, port)) if port.bytes().all(|b| b.is_ascii_digit()) => h,
        _ => authority,
    }
}

/// [`host_only`] on bytes.
pub fn host_only_bytes(authority: &[u8]) -> &[u8] {
    if let Some(rest) = authority.strip_prefix(b"[") {
        return rest.split(|b| *b == b']').next().unwrap_or(rest);
    }
    match authority.iter().rposition(|b| *b == b':') {
        Some(i) if authority[i + 1..].iter().all(u8::is_ascii_digit) => &authority[..i],
        _ => authority,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn router(apps: &[(&[&str], &str)]) -> Router {
        let owned: Vec<(Vec<String>, String)> = apps.iter().map(|(h, p)| (h.iter().map(|s| s.to_string()).collect(), p.to_string())).collect();
        Router::new(owned.iter().map(|(h, p)| (h.as_slice(), p.as_str())))
    }

    #[test]
    fn exact_beats_wildcard_beats_any_and_longest_prefix_wins() {
        let r = router(&[(&[], "/"), (&["api.example.com"], "/"), (&["*.example.com"], "/"), (&["api.example.com"], "/v2"), (&["*.a.example.com"], "/")]);
        assert_eq!(r.route("api.example.com", "/x"), Some(1));
        assert_eq!(r.route("API.Example.com.", "/v2/users"), Some(3));
        assert_eq!(r.route("api.example.com", "/v2x"), Some(1));
        assert_eq!(r.route("www.example.com", "/"), Some(2));
        assert_eq!(r.route("x.a.example.com", "/"), Some(4));
        assert_eq!(r.route("example.com", "/"), Some(0));
        assert_eq!(r.route("other.org", "/"), Some(0));
    }

    #[test]
    fn no_match_without_catch_all() {
        let r = router(&[(&["a.example"], "/api")]);
        assert_eq!(r.route("a.example", "/api/x"), Some(0));
        assert_eq!(r.route("a.example", "/"), None);
        assert_eq!(r.route("b.example", "/api"), None);
    }

    #[test]
    fn host_only_bytes_is_host_only() {
        for a in [
            "a.example:8080",
            "[::1]:80",
            "[::1]",
            "[::1",
            "a.example",
            "a.example:",
            "a:b:c",
            "a:8x",
            ":80",
            "",
            "[",
            "]",
            "[]:1",
            "a.example.:443",
            "A.Example:1",
            "h\u{e9}:80",
            "x]:y",
            "[a]b]:9",
            "a:\u{661}",
        ] {
            assert_eq!(host_only_bytes(a.as_bytes()), host_only(a).as_bytes(), "{a:?}");
        }
    }

    #[test]
    fn host_parsing() {
        assert_eq!(host_only("a.example:8080"), "a.example");
        assert_eq!(host_only("[::1]:80"), "::1");
        assert_eq!(host_only("a.example"), "a.example");
    }
}
