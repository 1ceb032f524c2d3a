//! Scanners and probes: attack-tool user agents (in header values) and probe paths (in path
//! segments): VCS metadata, environment files, server status pages, backups and editor swap
//! files of scripts. Tool names are matched as whole tokens of the header value; probe paths
//! by the shape of the segment (a dot-file name, a backup suffix on a script or config name).

use crate::other_util::{gate, mk, step};
use crate::{Category, Detector, FieldKind, Hit, Input, Level};

const NAME: &str = "scanner";

pub struct ScannerDetector;

pub fn detector() -> Box<dyn Detector> {
    Box::new(ScannerDetector)
}

const TOOLS: &[&str] = &[
    "sqlmap",
    "nikto",
    "nmap",
    "masscan",
    "acunetix",
    "nessus",
    "wpscan",
    "dirbuster",
    "gobuster",
    "nuclei",
    "zgrab",
    "ffuf",
    "wfuzz",
    "openvas",
    "w3af",
    "arachni",
    "skipfish",
    "havij",
    "netsparker",
    "zmeu",
    "jaeles",
    "commix",
    "xsstrike",
    "whatweb",
    "feroxbuster",
    "dirb",
    "fimap",
    "joomscan",
    "qualys",
    "appscan",
    "webinspect",
    "paros",
    "burpcollaborator",
    "interactsh",
    "zap",
    "hydra",
    "brutus",
    "morfeus",
    "nsefinger",
    "sysscan",
    "vega",
    "grabber",
    "cgichk",
    "httpx",
    "zmap",
];

impl Detector for ScannerDetector {
    fn name(&self) -> &'static str {
        NAME
    }

    fn applies_to(&self, field: FieldKind) -> bool {
        matches!(field, FieldKind::Header | FieldKind::PathSegment)
    }

    fn check(&self, input: &Input<'_>, level: Level) -> Option<Hit> {
        let v = input.decoded;
        let h = match input.field {
            FieldKind::Header => user_agent(v),
            FieldKind::PathSegment => probe_segment(v),
            _ => None,
        };
        gate(h, level)
    }
}

/// [`TOOLS`] with a length filter before the binary search.
static SORTED_TOOLS: std::sync::LazyLock<crate::other_util::SortedWords> = std::sync::LazyLock::new(|| crate::other_util::SortedWords::new(TOOLS));

/// Longest header value lowercased on the stack by [`user_agent`] (longer ones go to the heap).
const STACK_UA: usize = 256;

fn user_agent(v: &str) -> Option<Hit> {
    let mut buf = [0u8; STACK_UA];
    let heap;
    let l: &str = if v.len() <= STACK_UA {
        let b = &mut buf[..v.len()];
        b.copy_from_slice(v.as_bytes());
        b.make_ascii_lowercase();
        // ASCII lowercasing keeps UTF-8 valid.
        std::str::from_utf8(b).unwrap_or_default()
    } else {
        heap = v.to_ascii_lowercase();
        &heap
    };
    step(l.len());
    user_agent_lowered(l, v)
}

/// [`user_agent`] past the lowercasing: the tool names and signatures in the lowercase `l`
/// (reported on `v`).
fn user_agent_lowered(l: &str, v: &str) -> Option<Hit> {
    let (mut nmap, mut masscan) = (false, false);
    // Tokens split on anything that is not a letter or digit: `sqlmap/1.7`, `Nmap Scripting Engine`.
    for tok in l.split(|c: char| !c.is_ascii_alphanumeric()) {
        step(1);
        nmap |= tok == "nmap";
        masscan |= tok == "masscan";
        if tok.len() >= 3 && SORTED_TOOLS.contains(tok) {
            let word = matches!(tok, "zap" | "vega" | "paros" | "httpx" | "qualys");
            // Names that are also words (Vega is a place name) count as a product token only:
            // `vega/1.0`.
            if word && !l.contains(&format!("{tok}/")) {
                continue;
            }
            let c = if word { 60 } else { 85 };
            return Some(mk(NAME, Category::Scanner, c, v, "attack tool user agent"));
        }
    }
    // (Each search only behind the token or byte it needs: a `memmem` search builds a
    // searcher per call, more than the rest of this function on a browser user agent.)
    if (nmap && l.contains("nmap scripting engine")) || (masscan && l.contains("masscan/")) || (l.contains('{') && l.contains("() {")) {
        return Some(mk(NAME, Category::Scanner, 85, v, "attack tool user agent"));
    }
    None
}

/// Longest segment lowercased on the stack by [`probe_segment`] (longer ones go to the heap).
const STACK_SEG: usize = 64;

/// Probe paths, by the lowercase segment. An ordinary segment (no `.`, no `~`) can only be one
/// of the exact names: it is lowercased on the stack and compared, nothing more.
fn probe_segment(seg: &str) -> Option<Hit> {
    step(seg.len());
    let mut buf = [0u8; STACK_SEG];
    let heap;
    let lower: &[u8] = if seg.len() <= STACK_SEG {
        let b = &mut buf[..seg.len()];
        b.copy_from_slice(seg.as_bytes());
        b.make_ascii_lowercase();
        b
    } else {
        heap = seg.to_ascii_lowercase();
        heap.as_bytes()
    };
    // Every suffix below but `~` starts with a dot, and a backup needs a dot before its suffix:
    // a segment without a dot can only be one of the names without one (all of different
    // lengths: one comparison at most).
    if !lower.contains(&b'.') {
        let c: (u8, &'static str) = match lower {
            b"id_rsa" => (60, "probe for an application configuration file"),
            b"server-status" | b"server-info" | b"phpmyadmin" | b"pma" | b"actuator" | b"jolokia" => (60, "probe for a status or admin page"),
            _ => return None,
        };
        return Some(mk(NAME, Category::Scanner, c.0, seg, c.1));
    }
    // ASCII lowercasing keeps UTF-8 valid.
    let Ok(l) = std::str::from_utf8(lower) else { return None };
    probe_lowered(l, seg)
}

/// [`probe_segment`] past the lowercasing: the names, backups and dumps, by the lowercase
/// segment `l` (reported on `seg`).
fn probe_lowered(l: &str, seg: &str) -> Option<Hit> {
    let c: (u8, &'static str) = match l {
        ".env" | ".env.local" | ".env.production" | ".env.bak" | ".git" | ".svn" | ".hg" | ".bzr" | ".htpasswd" | ".aws" | ".ssh" | ".docker" | ".npmrc"
        | ".git-credentials" => (80, "probe for a secret dot-file or VCS metadata"),
        ".ds_store" | ".idea" | ".vscode" | ".htaccess" | "web.config" | ".travis.yml" | ".gitlab-ci.yml" => (65, "probe for a configuration file"),
        "wp-config.php" | "configuration.php" | "config.php" | "localsettings.php" | "settings.php" | "database.yml" | "credentials.json" | "id_rsa" => {
            (60, "probe for an application configuration file")
        }
        "server-status" | "server-info" | "phpinfo.php" | "info.php" | "test.php" | "phpmyadmin" | "pma" | "adminer.php" | "actuator" | "jolokia"
        | "elmah.axd" | "trace.axd" => (60, "probe for a status or admin page"),
        _ => (0, ""),
    };
    if c.0 > 0 {
        return Some(mk(NAME, Category::Scanner, c.0, seg, c.1));
    }
    // Backups and editor leftovers of scripts and configs: `index.php.bak`, `config.php~`,
    // `.index.php.swp`, `wp-config.php.old`, `db.sql.gz`.
    let script = ["php", "asp", "aspx", "jsp", "py", "rb", "conf", "config", "inc", "yml", "yaml", "env", "ini", "xml", "json", "js", "cgi", "pl"];
    for suf in [".bak", ".old", ".orig", ".save", ".swp", ".swo", "~", ".backup", ".tmp", ".copy", ".dist", ".1"] {
        if let Some(base) = l.strip_suffix(suf) {
            let base = base.trim_start_matches('.');
            if let Some((_, ext)) = base.rsplit_once('.') {
                if script.contains(&ext) {
                    return Some(mk(NAME, Category::Scanner, 70, seg, "probe for a backup or swap file of a script"));
                }
            }
        }
    }
    for dump in [".sql", ".sql.gz", ".sql.zip", ".tar.gz", ".tgz", ".zip", ".rar", ".7z"] {
        if let Some(base) = l.strip_suffix(dump) {
            if matches!(base, "backup" | "db" | "database" | "dump" | "site" | "www" | "htdocs" | "public_html" | "web" | "wwwroot" | "data" | "mysql") {
                return Some(mk(NAME, Category::Scanner, 65, seg, "probe for a site or database dump"));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::other_util::take_steps;

    fn c(v: &str, f: FieldKind) -> u8 {
        detector().check(&Input { raw: v, decoded: v, field: f }, Level::Strict).map_or(0, |h| h.confidence)
    }

    #[test]
    fn user_agents() {
        for ua in [
            "sqlmap/1.7.2#stable (https://sqlmap.org)",
            "Mozilla/5.00 (Nikto/2.1.6) (Evasions:None)",
            "Mozilla/5.0 (compatible; Nmap Scripting Engine)",
            "Fuzz Faster U Fool v2 ffuf",
            "gobuster/3.6",
            "Mozilla/5.0 nuclei",
        ] {
            assert!(c(ua, FieldKind::Header) >= 60, "{ua}");
        }
        for ua in [
            "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36",
            "curl/8.4.0",
            "okhttp/4.12",
            "Zappos app 1.0",
            "vega de san mateo",
        ] {
            assert!(c(ua, FieldKind::Header) < 60, "{ua}");
        }
        assert!(c("Vega/1.0", FieldKind::Header) >= 60);
        // Not a header: a comment mentioning sqlmap is not a scanner.
        assert_eq!(c("I ran sqlmap against my own site", FieldKind::JsonValue), 0);
    }

    #[test]
    fn probe_paths() {
        for s in [".env", ".git", "wp-config.php.bak", "index.php~", ".index.php.swp", "server-status", "phpinfo.php", "backup.sql", "config.php.old"] {
            assert!(c(s, FieldKind::PathSegment) >= 60, "{s}");
        }
        for s in ["index.php", "environment", "git", "status", "photo.jpg.bak2", "report.old-version", "products", "readme.md"] {
            assert!(c(s, FieldKind::PathSegment) < 60, "{s}");
        }
    }

    /// [`probe_segment`] judges a segment by its ASCII lowercase form ([`probe_lowered`] of
    /// it), whatever its length (lowercased on the stack or on the heap) and whether it holds a
    /// dot (the shortcut to the names without one): corpus values (and their path segments),
    /// generated probe names, case variants, and segments around the stack length.
    #[test]
    fn probe_segment_is_case_blind() {
        let same = |s: &str| {
            let (a, b) = (probe_segment(s), probe_lowered(&s.to_ascii_lowercase(), s));
            assert_eq!(a.map(|h| (h.confidence, h.fragment, h.why)), b.map(|h| (h.confidence, h.fragment, h.why)), "{s:?}");
        };
        let mut values = crate::other_util::test_values();
        let segs: Vec<String> = values.iter().flat_map(|v| v.split('/').map(str::to_string).collect::<Vec<_>>()).collect();
        values.extend(segs);
        let names = [
            ".env",
            ".GIT",
            "Web.Config",
            "index.PHP.bak",
            "config.php~",
            ".index.php.swp",
            "DB.sql.gz",
            "backup.tar.gz",
            "www.7z",
            "id_rsa",
            "PMA",
            "x.json.1",
        ];
        for n in names {
            values.push(n.to_string());
            values.push(n.to_uppercase());
            values.push(format!("ä{n}"));
            for pad in [STACK_SEG - n.len().min(STACK_SEG), STACK_SEG + 1 - n.len().min(STACK_SEG), 100] {
                values.push(format!("{}{n}", "a".repeat(pad)));
                values.push(format!("{}{n}", "é".repeat(pad / 2 + 1)));
            }
        }
        for v in &values {
            same(v);
        }
    }

    /// [`user_agent`] judges a value by its ASCII lowercase form ([`user_agent_lowered`] of it),
    /// on corpus values and tool names around the stack length.
    #[test]
    fn user_agent_is_case_blind() {
        let mut values = crate::other_util::test_values();
        for t in TOOLS.iter().chain(["Nmap Scripting Engine", "masscan/1.0", "() { :; };", "Vega/1.0", "ZAP/2"].iter()) {
            for pad in [0, STACK_UA - t.len(), STACK_UA + 1 - t.len(), 300] {
                values.push(format!("{}{t}", "a ".repeat(pad / 2)));
                values.push(format!("{}{}", "é".repeat(pad / 2), t.to_uppercase()));
                values.push(format!("{} {t}", "x".repeat(pad)));
            }
        }
        for v in &values {
            let (a, b) = (user_agent(v), user_agent_lowered(&v.to_ascii_lowercase(), v));
            assert_eq!(a.map(|h| (h.confidence, h.fragment, h.why)), b.map(|h| (h.confidence, h.fragment, h.why)), "{v:?}");
        }
    }

    #[test]
    fn linear() {
        let v = "sqlmap ".repeat(150_000) + &"a".repeat(1_000_000);
        take_steps();
        let _ = c(&v, FieldKind::Header);
        let _ = c(&v, FieldKind::PathSegment);
        assert!(take_steps() < 80 * v.len() as u64);
    }
}
