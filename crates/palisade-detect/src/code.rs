//! Code injection (PHP, Python, Node, Perl) and deserialization markers (PHP serialized
//! objects, Java serialization, Python pickle, .NET `$type`).
//!
//! Code is recognised by a small lexer of identifiers and punctuation: a *call* is an
//! identifier followed (after blanks) by `(`; a dangerous call (`system`, `eval`, `exec`,
//! `passthru`, `assert`, `base64_decode`, ...) counts when its argument starts like code (a
//! string literal, a `$variable`, another call) — the word "system (of record)" in prose does
//! not. PHP openers, superglobals, nested calls and `{${...}}` complex-syntax interpolation
//! add to the evidence.
//!
//! Parameter and key names are code too where a parser builds objects from them
//! ([`key_injection`]): a key `__proto__`, or `constructor` then `prototype`, in a bracketed or
//! dotted name or a JSON key, writes to every object's prototype (prototype pollution); a
//! bracketed key that is a render-array property (`mail[#post_render][]`: `#` and a name, as
//! Drupal's Form API addresses an element's properties, which no browser form sends) sets a
//! callback or markup the server renders.

use crate::other_util::{best, each_byte_of, gate, has_pct, mk, step, views, Anchors};
use crate::{Category, Detector, FieldKind, Gate, Hit, Input, Level};
use std::sync::LazyLock;

const NAME: &str = "code";

pub struct CodeDetector;

pub fn detector() -> Box<dyn Detector> {
    LazyLock::force(&ANCHORS);
    Box::new(CodeDetector)
}

/// Literals of every pattern [`analyse`] and [`deser`] look for that is not a call (ASCII
/// case-insensitive; a superset of their case-sensitive forms).
const ANCHOR_LITERALS: &[&str] = &[
    "<?",
    "$_",
    "{${",
    "${@",
    "child_process",
    "process.",
    "global.process",
    "constructor.constructor(",
    "__import__",
    "os.popen(",
    "os.system(",
    "subprocess.",
    "pty.spawn(",
    "getruntime",
    "java.lang.runtime",
    "processbuilder",
    "aced0005",
    "\\xac\\xed",
    "ro0ab",
    "cos\nsystem",
    "cposix\nsystem",
    "c__builtin__\n",
    "cbuiltins\n",
    "\ntr.",
    "gasv",
    "\"$type\"",
    "ysoserial",
    "objectdataprovider",
    "system.diagnostics.process",
    "typeconfusedelegate",
    "!!python/",
    "!ruby/object",
    "!!javax.script",
    "!!java.net.url",
    "__proto__",
    "prototype",
    "[#",
];

static ANCHORS: LazyLock<Anchors> = LazyLock::new(|| Anchors::new(ANCHOR_LITERALS));

/// The pre-filter declared to the engine ([`Gate`]): exactly [`CodeDetector::check`]'s own
/// (`%` for encoded forms, the anchors, a listed call or a serialized object). The test can
/// only say yes on a `(` (a call) or on `O:`/`C:` (a serialized object): its
/// [`Gate::test_bytes`] are `(`, `O` and `C`, which a timestamp or a URL does not hold (a `:`
/// is in most of them).
const GATE: Gate = Gate { bytes: "%", anchors: ANCHOR_LITERALS, words: &[], test: Some(call_or_serialized), test_bytes: "(OC", test_only: "" };

/// The pre-filter: whether [`analyse`] could fire on `s`. It can only through a call of a
/// listed function (an identifier, blanks, `(`: found from each `(` backwards, no
/// allocation), a PHP serialized object (`O:<digits>` / `C:<digits>`), or an anchor.
fn may_hold_code(s: &str) -> bool {
    call_or_serialized(s) || ANCHORS.any(s)
}

/// The structural half of [`may_hold_code`]: one pass over the `(` and `:` of `s`
/// ([`each_byte_of`]; `tests::call_or_serialized_finds_calls_and_serialized_objects`).
fn call_or_serialized(s: &str) -> bool {
    let b = s.as_bytes();
    each_byte_of(b, [b'(', b':'], |p| {
        if b[p] == b'(' {
            listed_call_before(b, p)
        } else {
            p > 0 && matches!(b[p - 1], b'O' | b'C') && b.get(p + 1).is_some_and(u8::is_ascii_digit)
        }
    })
}

/// ASCII letters and digits and `_`: the bytes of a call name, by byte (256 bytes;
/// `tests::name_table_is_the_comparisons`).
static NAME_BYTES: [bool; 256] = {
    let mut t = [false; 256];
    let mut c = 0u8;
    while c < 128 {
        t[c as usize] = c.is_ascii_alphanumeric() || c == b'_';
        c += 1;
    }
    t
};

/// A byte of a call name ([`NAME_BYTES`]): one load instead of four comparisons, in the walk
/// back over the word before a `(` of prose.
#[inline]
fn name_byte(c: u8) -> bool {
    NAME_BYTES[c as usize]
}

/// Whether the identifier before the `(` at `p` (after blanks; leading digits dropped) is a
/// listed call.
fn listed_call_before(b: &[u8], p: usize) -> bool {
    let mut e = p;
    while e > 0 && b[e - 1] == b' ' {
        e -= 1;
    }
    let mut st = e;
    while st > 0 && name_byte(b[st - 1]) {
        st -= 1;
    }
    while st < e && b[st].is_ascii_digit() {
        st += 1;
    }
    if e - st < 2 || e - st > 24 {
        return false;
    }
    let mut buf = [0u8; 24];
    for (k, &c) in b[st..e].iter().enumerate() {
        buf[k] = c.to_ascii_lowercase();
    }
    let Ok(name) = std::str::from_utf8(&buf[..e - st]) else { return false };
    EXEC_CALLS.contains(&name) || DECODE_CALLS.contains(&name)
}

impl Detector for CodeDetector {
    fn name(&self) -> &'static str {
        NAME
    }

    fn gate(&self) -> Option<Gate> {
        Some(GATE)
    }

    fn check(&self, input: &Input<'_>, level: Level) -> Option<Hit> {
        if !has_pct(input.decoded) && !may_hold_code(input.decoded) {
            return None;
        }
        let mut h = None;
        if matches!(input.field, FieldKind::QueryName | FieldKind::FormName | FieldKind::JsonKey) {
            h = key_injection(input.decoded);
        }
        for v in views(input.decoded).iter().filter(|v| !v.is_empty()) {
            h = best(h, analyse(v));
        }
        gate(h, level)
    }

    /// Free text reaches code as a string literal: without a byte that leaves one or
    /// interpolates in it (a quote, a backtick, `;`, `$`, `{`, `<`, `\\`), a call named in it
    /// (`eval() in python security`) is a word about the function.
    fn in_free_text(&self, input: &Input<'_>, hit: Hit, _level: Level) -> Option<Hit> {
        let leaves = input.decoded.bytes().any(|b| matches!(b, b'\'' | b'"' | b'`' | b';' | b'$' | b'{' | b'<' | b'\\'));
        leaves.then_some(hit)
    }
}

/// The properties of a render element that hold callbacks the server calls (Drupal's Form and
/// Render APIs).
const RENDER_CALLBACKS: &[&str] =
    &["post_render", "pre_render", "lazy_builder", "access_callback", "process", "after_build", "value_callback", "element_validate", "submit", "validate"];

/// The finding of a parameter or key name that reaches an object's prototype or a render
/// element's properties (module documentation). The name's keys are what query-string parsers
/// and JSON read: the parts between `[`, `]` and `.`.
fn key_injection(name: &str) -> Option<Hit> {
    step(name.len());
    let mut prev = "";
    for (i, key) in name.split(['[', ']', '.']).enumerate() {
        if key == "__proto__" || (key == "prototype" && prev == "constructor") {
            return Some(mk(NAME, Category::CodeInjection, 85, name, "prototype pollution through a parameter or key name"));
        }
        if !key.is_empty() {
            prev = key;
        }
        // A bracketed key (`a[#k]`): not the base name.
        if let Some(prop) = key.strip_prefix('#').filter(|_| i > 0 && name.contains("[#")) {
            // (A colour `#fff`, `#c0ffee` is all hex digits: no property is.)
            if !prop.is_empty() && prop.bytes().all(|b| b.is_ascii_lowercase() || b == b'_') && !prop.bytes().all(|b| b.is_ascii_hexdigit()) {
                let c = if RENDER_CALLBACKS.contains(&prop) { 90 } else { 70 };
                return Some(mk(NAME, Category::CodeInjection, c, name, "render-array property in a parameter name"));
            }
        }
    }
    None
}

/// A request superglobal used as code rather than named in prose: interpolated with PHP's
/// complex syntax into a string that is evaluated (`{$_GET["cmd"]}`, `${$_POST[x]}`), or
/// called as a function (`$_GET['f']($_GET['a'])`, the one-line web shell). `l` is lowercase.
fn superglobal_use(l: &str) -> Option<(usize, &'static str)> {
    let b = l.as_bytes();
    for p in memchr::memmem::find_iter(b, b"$_") {
        let name_end = p + 2 + b[p + 2..].iter().take_while(|c| c.is_ascii_alphabetic()).count();
        if !matches!(&l[p + 2..name_end], "get" | "post" | "request" | "server" | "cookie" | "files" | "env" | "session") {
            continue;
        }
        // `[ ... ]` subscripts (bounded: a key is short), then what follows them.
        let mut i = name_end;
        while b.get(i) == Some(&b'[') {
            match memchr::memchr(b']', &b[i..b.len().min(i + 64)]) {
                Some(e) => i += e + 1,
                None => break,
            }
        }
        let j = i + b[i..].iter().take_while(|c| **c == b' ').count();
        if i > name_end && b.get(j) == Some(&b'(') {
            return Some((p, "PHP superglobal called as a function"));
        }
        let opened = p > 0 && b[p - 1] == b'{';
        if opened && i > name_end && b.get(j) == Some(&b'}') {
            return Some((p - 1, "PHP superglobal in complex-syntax interpolation"));
        }
    }
    None
}

/// Calls that execute code or commands.
const EXEC_CALLS: &[&str] = &[
    "system",
    "exec",
    "shell_exec",
    "passthru",
    "popen",
    "proc_open",
    "pcntl_exec",
    "eval",
    "assert",
    "create_function",
    "call_user_func",
    "call_user_func_array",
    "preg_replace",
    "include",
    "include_once",
    "require",
    "require_once",
    "execfile",
    "compile",
    "spawn",
    "spawnsync",
    "execsync",
    "file_get_contents",
    "file_put_contents",
    "fopen",
    "readfile",
    "show_source",
    "highlight_file",
    "phpinfo",
    "phpversion",
    "sleep",
    "usleep",
    "print",
    "md5",
    "getenv",
    "__import__",
];

/// Calls that decode or obfuscate a payload (suspicious when chained into an exec call).
const DECODE_CALLS: &[&str] = &[
    "base64_decode",
    "gzinflate",
    "gzuncompress",
    "str_rot13",
    "strrev",
    "hex2bin",
    "chr",
    "urldecode",
    "atob",
    "fromcharcode",
    "unserialize",
    "hexdec",
    "dechex",
];

fn ident_at(b: &[u8], i: usize) -> usize {
    let mut j = i;
    while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'_') {
        j += 1;
    }
    j
}

fn analyse(s: &str) -> Option<Hit> {
    let l = s.to_ascii_lowercase();
    let b = l.as_bytes();
    step(b.len());
    let mut out: Option<Hit> = None;
    let mut add = |c: u8, cat: Category, frag: &str, why: &'static str| out = best(out.take(), Some(mk(NAME, cat, c, frag, why)));
    // The gate's anchors hold a piece of every literal searched below: one pass says whether
    // any can occur; most values hold none, and then no literal search runs at all.
    let lits = ANCHORS.any(&l);
    let has = |p: &str| lits && l.contains(p);
    let php_open = has("<?php") || has("<?=") || has("<? ");
    let superglobal = ["$_get", "$_post", "$_request", "$_server", "$_cookie", "$_files", "$_env", "$_session"].iter().any(|g| has(g));
    let interp = has("{${") || has("${@");
    // Lex identifiers followed by `(`.
    let mut i = 0;
    let mut calls = 0u32;
    let mut prev_call_end: Option<usize> = None;
    while i < b.len() {
        step(1);
        let c = b[i];
        if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            let end = ident_at(b, i);
            i = end;
            let prev = if start > 0 { b[start - 1] } else { b' ' };
            if prev == b'.' && !matches!(&l[start..end], "system" | "exec" | "popen" | "eval" | "execsync" | "spawn" | "spawnsync") {
                continue;
            }
            let mut k = end;
            while k < b.len() && b[k] == b' ' {
                k += 1;
            }
            if k >= b.len() || b[k] != b'(' {
                continue;
            }
            let name = &l[start..end];
            let mut a = k + 1;
            while a < b.len() && b[a] == b' ' {
                a += 1;
            }
            let arg0 = b.get(a).copied().unwrap_or(0);
            let arg_code = (name == "phpversion" && arg0 == b')')
                || matches!(arg0, b'\'' | b'"' | b'$' | b'`' | b')')
                || (arg0.is_ascii_alphabetic() && l.as_bytes()[a..(a + 40).min(b.len())].contains(&b'('));
            let chained = prev_call_end.is_some_and(|e| e + 8 >= start);
            calls += 1;
            prev_call_end = Some(k);
            let tight = k == end; // `name(` without a blank: code style, not prose
            if EXEC_CALLS.contains(&name) && arg_code {
                let weak =
                    matches!(name, "print" | "md5" | "sleep" | "usleep" | "compile" | "fopen" | "getenv" | "include" | "require" | "spawn" | "phpversion");
                let strength: u8 = if php_open || superglobal || interp {
                    95
                } else if name == "__import__" || (name == "phpinfo" || name == "phpversion") && arg0 == b')' {
                    90
                } else if weak {
                    if chained || interp {
                        80
                    } else {
                        40
                    }
                } else if tight && arg0 != b')' {
                    // `system('id')`, `eval($x)`: a call with a literal or variable argument.
                    let lead = l[..start].trim_end();
                    if lead.is_empty() || lead.ends_with([';', '|', '&', '\'', '"', '{', '(', '@', '.', '=', '>', ',']) {
                        85
                    } else {
                        60
                    }
                } else {
                    45
                };
                add(strength, Category::CodeInjection, &s[start..], "call of a code or command execution function");
            } else if DECODE_CALLS.contains(&name) && tight && (chained || php_open) {
                add(80, Category::CodeInjection, &s[start..], "decoding chain in code");
            }
        } else {
            i += 1;
        }
    }
    if php_open && (calls > 0 || superglobal) {
        add(95, Category::CodeInjection, &s[l.find("<?").unwrap_or(0)..], "PHP code block");
    } else if superglobal && calls > 0 {
        add(80, Category::CodeInjection, s, "PHP superglobal in code");
    }
    if superglobal {
        if let Some((at, why)) = superglobal_use(&l) {
            add(if why.starts_with("PHP superglobal called") { 90 } else { 75 }, Category::CodeInjection, &s[at..], why);
        }
    }
    if interp && calls > 0 {
        add(90, Category::CodeInjection, s, "PHP complex-syntax interpolation with a call");
    }
    // Node.
    for (pat, c, why) in [
        ("child_process", 90u8, "Node child_process"),
        ("process.mainmodule", 90, "Node process.mainModule"),
        ("process.binding(", 85, "Node process.binding"),
        ("constructor.constructor(", 85, "Function constructor escape"),
        ("global.process", 80, "Node global.process"),
        ("__import__('os')", 95, "Python __import__('os')"),
        ("__import__(\"os\")", 95, "Python __import__(\"os\")"),
        ("os.popen(", 85, "Python os.popen"),
        ("os.system(", 85, "Python os.system"),
        ("subprocess.", 75, "Python subprocess"),
        ("pty.spawn(", 90, "Python pty.spawn"),
        ("runtime.getruntime().exec(", 95, "Java Runtime.exec"),
        ("java.lang.runtime", 85, "Java Runtime"),
        ("processbuilder", 80, "Java ProcessBuilder"),
    ] {
        if let Some(p) = l.find(pat).filter(|_| lits) {
            add(c, Category::CodeInjection, &s[p..], why);
        }
    }
    deser(s, &l, lits, &mut add);
    out
}

/// `lits`: whether an anchor of [`ANCHOR_LITERALS`] occurs in `l` (the lower-cased `s`); only
/// the PHP serialized-object scan runs without one.
fn deser(s: &str, l: &str, lits: bool, add: &mut impl FnMut(u8, Category, &str, &'static str)) {
    let b = s.as_bytes();
    // PHP serialized object: O:<len>:"<Class>":<n>:{   (also C: for custom serialization)
    let mut i = 0;
    while i + 4 < b.len() {
        step(1);
        if (b[i] == b'O' || b[i] == b'C') && b[i + 1] == b':' && (i == 0 || !b[i - 1].is_ascii_alphanumeric()) {
            let mut j = i + 2;
            let ds = j;
            while j < b.len() && b[j].is_ascii_digit() {
                j += 1;
            }
            if j > ds && j + 1 < b.len() && b[j] == b':' && b[j + 1] == b'"' {
                let n: usize = s[ds..j].parse().unwrap_or(0);
                let name_start = j + 2;
                let name_end = name_start + n;
                if n > 0 && name_end + 2 < b.len() && b[name_end] == b'"' && b[name_end + 1] == b':' {
                    add(90, Category::Deserialization, &s[i..], "PHP serialized object");
                    return;
                }
            }
        }
        i += 1;
    }
    if !lits {
        return;
    }
    // Java serialization stream: hex or base64 magic at a token start.
    for (pat, c, why) in [("aced0005", 85u8, "Java serialized object (hex)"), ("\\xac\\xed\\x00\\x05", 85, "Java serialized object")] {
        if let Some(p) = l.find(pat) {
            add(c, Category::Deserialization, &s[p..], why);
        }
    }
    for (p, _) in s.match_indices("rO0AB") {
        step(1);
        if p == 0 || !b[p - 1].is_ascii_alphanumeric() {
            add(85, Category::Deserialization, &s[p..], "Java serialized object (base64)");
            break;
        }
    }
    // Python pickle: `cos\nsystem\n`, `c__builtin__\neval`, `(S'...'\ntR.`
    if l.contains("cos\nsystem")
        || l.contains("cposix\nsystem")
        || l.contains("c__builtin__\n")
        || l.contains("cbuiltins\n")
        || (l.contains("\ntr.") && l.contains("(s'"))
    {
        add(90, Category::Deserialization, s, "Python pickle opcodes");
    }
    if let Some(p) = s.find("gASV") {
        if p == 0 || !b[p - 1].is_ascii_alphanumeric() {
            add(60, Category::Deserialization, &s[p..], "Python pickle (base64, protocol 4)");
        }
    }
    // .NET Json.NET TypeNameHandling / gadget types.
    if let Some(p) = l.find("\"$type\"") {
        let rest = &l[p..];
        let gadget = [
            "system.windows.data.objectdataprovider",
            "system.diagnostics.process",
            "system.management.automation",
            "windowsidentity",
            "system.configuration.install",
            "textformattingrunproperties",
            "system.workflow",
        ]
        .iter()
        .any(|g| rest.contains(g));
        add(if gadget { 95 } else { 55 }, Category::Deserialization, &s[p..], "Json.NET $type polymorphic deserialization");
    }
    for g in ["ysoserial", "objectdataprovider", "system.diagnostics.process, system", "typeconfusedelegate"] {
        if let Some(p) = l.find(g) {
            add(85, Category::Deserialization, &s[p..], ".NET/Java deserialization gadget");
        }
    }
    // YAML/ruby/python object tags.
    for g in ["!!python/object", "!!python/apply", "!ruby/object", "!!javax.script", "!!java.net.url"] {
        if let Some(p) = l.find(g) {
            add(90, Category::Deserialization, &s[p..], "YAML object instantiation tag");
        }
    }
}

#[cfg(test)]
mod tests;
