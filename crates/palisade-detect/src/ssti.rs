//! Server-side template injection.
//!
//! Template expressions are located by their delimiters (`{{ }}`, `{% %}`, `${ }`, `#{ }`,
//! `<%= %>`, `*{ }`, `%{ }`, `@( )`, `[[ ]]`, `{$ }`, `<#assign>`, `[#assign]`, `#set(`, and the
//! server-side include directives `<!--#exec ... -->` and `<esi:...>`), each body is
//! lexed (identifiers, numbers, strings, operators, `\x5f` escapes decoded) and judged:
//! sandbox-escape attribute chains (`__class__`, `__mro__`, `__globals__`, `|attr(`),
//! reflective Java (`T(java.lang.Runtime)`, `getClass().forName`, `#_memberAccess`),
//! Freemarker `?new()` executors, pure arithmetic probes (`7*7`), recon objects (`config`,
//! `self`, `request`), Java expression languages (the implicit objects of JSP/JSF EL
//! `pageContext`, `facesContext`, `applicationScope`...; calls of the servlet and reflection
//! APIs `getSession()`, `setAttribute(`; OGNL's static access `@java.lang.Runtime@getRuntime()`
//! and context variables `#context[...]`, `(#x=...)`). A placeholder like `{{name}}` in text
//! is an identifier and nothing else, so it is not reported. A server-side include directive
//! (`<!--#exec cmd=...-->`, `<!--#include virtual=...-->`, Apache mod_include) or an Edge Side
//! Includes element (`<esi:include src=...>`) has the web server or the CDN run a command,
//! include a file or fetch a URL.

use crate::other_util::{best, gate, mk, step, views, Anchors};
use crate::{Category, Detector, Gate, Hit, Input, Level};
use std::sync::LazyLock;

const NAME: &str = "ssti";

pub struct SstiDetector;

pub fn detector() -> Box<dyn Detector> {
    LazyLock::force(&OPENERS);
    Box::new(SstiDetector)
}

/// The pre-filter declared to the engine ([`Gate`]): every finding of [`analyse`] starts at an
/// opener of [`DELIMS`] (the Thymeleaf `__${` holds `${`), so the openers are the gate's
/// literals (`tests::the_gate_holds_every_opener`); `%` stands for the percent-decoded view.
/// A lone `{` (`/avatar/{size}.png`) opens nothing.
const GATE: Gate = Gate { bytes: "%", anchors: OPENER_LITERALS, words: &[], test: None, test_bytes: "", test_only: "" };

/// The openers of [`DELIMS`].
const OPENER_LITERALS: &[&str] = &["{{", "{%", "${", "#{", "<%", "*{", "%{", "@(", "[[", "{$", "<#", "[#", "{php}", "#set(", "<!--#", "<esi:"];

impl Detector for SstiDetector {
    fn name(&self) -> &'static str {
        NAME
    }

    fn gate(&self) -> Option<Gate> {
        Some(GATE)
    }

    /// Every template opener ([`DELIMS`]) holds one of `{ $ # < * @ [ %`, none of which the
    /// product-token shape ([`crate::shape`]) admits.
    fn product_token_gate(&self) -> Option<fn(&str) -> bool> {
        Some(|_| false)
    }

    fn check(&self, input: &Input<'_>, level: Level) -> Option<Hit> {
        let mut h = None;
        for v in views(input.decoded).iter().filter(|v| !v.is_empty()) {
            h = best(h, analyse(v));
        }
        gate(h, level)
    }
}

/// (opener, closer, flavour)
const DELIMS: &[(&str, &str, Flavour)] = &[
    ("{{", "}}", Flavour::Mustache),
    ("{%", "%}", Flavour::Statement),
    ("${", "}", Flavour::Dollar),
    ("#{", "}", Flavour::Hash),
    ("<%=", "%>", Flavour::Erb),
    ("<%", "%>", Flavour::Erb),
    ("*{", "}", Flavour::Dollar),
    ("%{", "}", Flavour::Dollar),
    ("@(", ")", Flavour::Razor),
    ("[[", "]]", Flavour::Mustache),
    ("{$", "}", Flavour::Smarty),
    ("<#", ">", Flavour::Freemarker),
    ("[#", "]", Flavour::Freemarker),
    ("{php}", "{/php}", Flavour::SmartyPhp),
    ("#set(", ")", Flavour::Velocity),
    ("<!--#", "-->", Flavour::Ssi),
    ("<esi:", ">", Flavour::Esi),
];

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Flavour {
    Mustache,
    Statement,
    Dollar,
    Hash,
    Erb,
    Razor,
    Smarty,
    Freemarker,
    SmartyPhp,
    Velocity,
    /// `<!--#directive attr="..." -->` (Apache mod_include, nginx ssi).
    Ssi,
    /// `<esi:element ...>` (Edge Side Includes 1.0).
    Esi,
}

/// Finds closers left to right with a per-closer cursor: total work linear in the input.
struct Closers<'a> {
    hay: &'a str,
    cache: Vec<(usize, Option<usize>)>, // (searched from, found at)
}

impl<'a> Closers<'a> {
    fn find(&mut self, k: usize, pat: &str, from: usize) -> Option<usize> {
        let (f0, found) = self.cache[k];
        if f0 <= from && found.is_none_or(|p| p >= from) && f0 != usize::MAX {
            return found;
        }
        step(self.hay.len().saturating_sub(from).min(1 << 20) / 16 + 1);
        let r = self.hay[from..].find(pat).map(|p| p + from);
        step(r.map_or(self.hay.len() - from, |p| p - from));
        self.cache[k] = (from, r);
        r
    }
}

/// The openers of [`DELIMS`] (every finding starts at one): one pass, no allocation.
static OPENERS: LazyLock<Anchors> = LazyLock::new(|| {
    let v: Vec<&str> = DELIMS.iter().map(|d| d.0).collect();
    Anchors::new(&v)
});

fn analyse(s: &str) -> Option<Hit> {
    if !OPENERS.any(s) {
        return None;
    }
    let b = s.as_bytes();
    let mut closers = Closers { hay: s, cache: vec![(usize::MAX, None); DELIMS.len()] };
    let mut out: Option<Hit> = None;
    let mut i = 0;
    while i < b.len() {
        step(1);
        let c = b[i];
        if !matches!(c, b'{' | b'$' | b'#' | b'<' | b'*' | b'@' | b'[' | b'%') {
            i += 1;
            continue;
        }
        let mut advanced = false;
        for (k, (open, close, fl)) in DELIMS.iter().enumerate() {
            if !s[i..].starts_with(open) {
                continue;
            }
            let body_start = i + open.len();
            let Some(end) = closers.find(k, close, body_start) else { continue };
            let body = &s[body_start..end];
            if let Some((conf, why)) = judge(body, *fl, &s[i..(end + close.len()).min(s.len())]) {
                out = best(out, Some(mk(NAME, Category::Ssti, conf, &s[i..], why)));
            }
            // Do not re-enter the same region through an inner opener.
            i = end + close.len();
            advanced = true;
            break;
        }
        if !advanced {
            i += 1;
        }
    }
    out = best(out, polyglot(s));
    // Thymeleaf preprocessing `__${...}__::`.
    if let Some(p) = s.find("__${") {
        if s[p..].contains("}__") {
            out = best(out, Some(mk(NAME, Category::Ssti, 90, &s[p..], "Thymeleaf preprocessing expression")));
        }
    }
    out
}

/// The openers a template-syntax probe strings together to see which one a server evaluates
/// or chokes on (`${{<%[%'"}}%\\.`).
const PROBE_OPENERS: [&[u8]; 7] = [b"${", b"{{", b"<%", b"[%", b"#{", b"{%", b"*{"];

/// Three or more different template openers of [`PROBE_OPENERS`] within 16 bytes: no template
/// of one language and no text writes them so, a probe for which language evaluates does.
fn polyglot(s: &str) -> Option<Hit> {
    let b = s.as_bytes();
    let mut seen: Vec<(usize, usize)> = Vec::new();
    for i in 0..b.len().saturating_sub(1) {
        step(1);
        if let Some(k) = PROBE_OPENERS.iter().position(|o| b[i..].starts_with(o)) {
            seen.retain(|&(p, _)| i - p <= 16);
            seen.push((i, k));
            let mut kinds: Vec<usize> = seen.iter().map(|&(_, k)| k).collect();
            kinds.sort_unstable();
            kinds.dedup();
            if kinds.len() >= 3 {
                return Some(mk(NAME, Category::Ssti, 70, &s[seen[0].0..], "template-syntax probe of several languages"));
            }
        }
    }
    None
}

/// Decode `\x5f`-style escapes and normalise case for matching.
fn norm_body(body: &str) -> String {
    let mut o = String::with_capacity(body.len());
    let b = body.as_bytes();
    let mut i = 0;
    while i < b.len() {
        step(1);
        if b[i] == b'\\' && i + 3 < b.len() && (b[i + 1] == b'x' || b[i + 1] == b'X') {
            // Bytes, not a str slice: the two characters after `\x` may be anything,
            // including the middle of a multi-byte character.
            let hex = |c: u8| (c as char).to_digit(16);
            if let (Some(h), Some(l)) = (hex(b[i + 2]), hex(b[i + 3])) {
                let v = (h * 16 + l) as u8;
                if v.is_ascii() {
                    o.push(v as char);
                    i += 4;
                    continue;
                }
            }
        }
        o.push(b[i].to_ascii_lowercase() as char);
        i += 1;
    }
    o
}

const DUNDERS: &[&str] = &[
    "__class__",
    "__mro__",
    "__subclasses__",
    "__globals__",
    "__builtins__",
    "__init__",
    "__import__",
    "__base__",
    "__bases__",
    "__getitem__",
    "__dict__",
    "__code__",
    "__reduce__",
    "__getattribute__",
    "_templatereference__context",
    "_nsattr__parent",
];

const JAVA: &[&str] = &[
    "getclass(",
    "forname(",
    "t(java.",
    "java.lang.",
    "getruntime(",
    "processbuilder",
    "scriptenginemanager",
    "_memberaccess",
    "@java.",
    "new java.",
    "freemarker.template.utility",
    "?new(",
    "$class.inspect",
    "class.forname",
    "getenginebyname",
    "org.apache.",
    "javax.script",
];

const PY_EXEC: &[&str] = &[
    "os.system",
    "os.popen",
    ".popen(",
    "subprocess",
    "__import__",
    ".system(",
    "|filter(",
    "|attr(",
    "os.environ",
    "linecache",
    "module.cache",
    "module.runtime",
    "eval(",
    "exec(",
];

const RECON: &[&str] = &[
    "self",
    "config",
    "request",
    "settings",
    "app",
    "_self",
    "this",
    "session",
    "g",
    "url_for",
    "get_flashed_messages",
    "lipsum",
    "cycler",
    "joiner",
    "namespace",
];

/// The implicit objects of the JSP and JSF expression languages (JSP 2.x §JSP.2.2.3, Jakarta
/// Faces): server state no client-side template names.
const EL_IMPLICIT: &[&str] = &["pagecontext", "facescontext", "applicationscope", "sessionscope", "requestscope", "initparam", "externalcontext"];

/// Methods of the servlet API and Java reflection that an expression calls to reach server
/// state or code (`request.getSession()`, `session.setAttribute(...)`, `x.getClass()`).
const SERVER_METHODS: &[&str] = &[
    ".getsession(",
    ".setattribute(",
    ".getattribute(",
    ".getservletcontext(",
    ".getrequest(",
    ".getresponse(",
    ".getwriter(",
    ".getoutputstream(",
    ".getclass(",
    ".newinstance(",
    ".getmethod(",
    ".invoke(",
    ".getclassloader(",
];

/// An SSI directive (`exec`, `include`...) or an ESI element's body judged (module documentation).
fn judge_include(body: &str, fl: Flavour) -> Option<(u8, &'static str)> {
    let t = body.trim_start().to_ascii_lowercase();
    let word: String = t.chars().take_while(|c| c.is_ascii_alphabetic()).collect();
    let rest = t[word.len()..].trim_start();
    match fl {
        Flavour::Ssi => {
            // A directive names its attribute (`cmd=`, `virtual=`, `var=`) or stands alone (`printenv`).
            let attr = rest.split('=').next().is_some_and(|a| !a.is_empty() && a.bytes().all(|b| b.is_ascii_alphabetic())) && rest.contains('=');
            match word.as_str() {
                "exec" if attr => Some((95, "server-side include runs a command")),
                "include" if attr => Some((85, "server-side include of a file")),
                "echo" | "config" | "set" | "fsize" | "flastmod" if attr => Some((75, "server-side include directive")),
                "printenv" if rest.is_empty() => Some((75, "server-side include directive")),
                _ => None,
            }
        }
        _ => match word.as_str() {
            "include" | "inline" | "eval" if rest.contains("src=") => Some((85, "Edge Side Includes fetch")),
            "vars" | "assign" | "choose" | "try" | "remove" | "comment" | "debug" if rest.is_empty() || rest.contains('=') || rest == "/" => {
                Some((75, "Edge Side Includes element"))
            }
            _ => None,
        },
    }
}

/// OGNL (Struts) and SpEL reaching Java: static member access `@a.b.C@member`, the context
/// and its maps (`#context[...]`, `#_memberAccess`, `#application`), a variable assigned in a
/// chain `(#x=...)`. `t` is the lowercase body.
fn ognl(t: &str) -> Option<(u8, &'static str)> {
    let b = t.as_bytes();
    // `@` then a dotted class name then `@`.
    for p in memchr::memchr_iter(b'@', b) {
        let name = b[p + 1..].iter().take_while(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'$')).count();
        if name > 2 && b[p + 1..p + 1 + name].contains(&b'.') && b.get(p + 1 + name) == Some(&b'@') {
            return Some((90, "OGNL static member access"));
        }
    }
    for v in ["#context[", "#context.", "#_memberaccess", "#application", "#parameters", "#attr[", "#request[", "#session["] {
        if t.contains(v) {
            return Some((85, "OGNL context variable"));
        }
    }
    let assigned = memchr::memmem::find_iter(b, b"(#").any(|p| {
        let n = b[p + 2..].iter().take_while(|c| c.is_ascii_alphanumeric() || **c == b'_').count();
        n > 0 && b.get(p + 2 + n) == Some(&b'=') && b.get(p + 3 + n) != Some(&b'=')
    });
    assigned.then_some((80, "OGNL variable assignment in an expression"))
}

fn judge(body: &str, fl: Flavour, whole: &str) -> Option<(u8, &'static str)> {
    if body.len() > 8192 {
        return None;
    }
    if matches!(fl, Flavour::Ssi | Flavour::Esi) {
        return judge_include(body, fl);
    }
    let n = norm_body(body);
    let t = n.trim().trim_matches(['{', '}', ' ']);
    // Thymeleaf inlining wraps an expression: `[[${7*7}]]`, `[[*{x}]]`.
    let t = t.strip_prefix(['$', '*', '#', '@', '~']).and_then(|r| r.strip_prefix('{')).map_or(t, |r| r.trim_matches(['{', '}', ' ']));
    // An output marker after the opener (doT `{{= x }}`, Jinja's whitespace control `{{- x }}`).
    let t = if matches!(fl, Flavour::Mustache | Flavour::Statement) { t.strip_prefix(['=', '-']).map_or(t, str::trim_start) } else { t };
    if t.is_empty() {
        return None;
    }
    let mut best_c: Option<(u8, &'static str)> = None;
    let mut put = |c: u8, why: &'static str| {
        if best_c.is_none_or(|b| c > b.0) {
            best_c = Some((c, why));
        }
    };
    // `["_"*2,"class"]|join` builds a dunder at run time.
    let built_dunder = (t.contains("\"_\"*2") || t.contains("'_'*2") || t.contains("\"__\",") || t.contains("'__',")) && t.contains("join");
    if DUNDERS.iter().any(|d| t.contains(d)) || built_dunder {
        put(95, "template sandbox escape through dunder attributes");
    }
    // Spaced-out dunders (`.__ class __.`) survive some filters.
    let squeezed: String = t.chars().filter(|c| !c.is_whitespace()).collect();
    if squeezed != t && DUNDERS.iter().any(|d| squeezed.contains(d)) {
        put(90, "template sandbox escape through dunder attributes");
    }
    if JAVA.iter().any(|j| t.contains(j)) {
        put(95, "template reflection into the Java runtime");
    }
    if matches!(fl, Flavour::Dollar | Flavour::Hash) {
        if let Some((c, why)) = ognl(t) {
            put(c, why);
        }
        let head: &str = &t[..t.bytes().take_while(|c| c.is_ascii_alphanumeric() || *c == b'_').count()];
        let rest = &t[head.len()..];
        if EL_IMPLICIT.contains(&head) && (rest.is_empty() || rest.starts_with(['.', '['])) {
            put(75, "expression-language implicit object");
        }
        if SERVER_METHODS.iter().any(|m| t.contains(m)) {
            put(80, "expression calls the servlet or reflection API");
        }
    }
    if PY_EXEC.iter().any(|j| t.contains(j)) && fl != Flavour::Razor {
        put(if t.contains('.') || t.contains('|') || t.contains('(') { 90 } else { 60 }, "template expression reaches code execution");
    }
    match fl {
        Flavour::Freemarker if t.starts_with("assign") || t.starts_with("import") || t.starts_with("include") => put(80, "Freemarker directive"),
        Flavour::SmartyPhp => put(90, "Smarty {php} block"),
        Flavour::Smarty if t.starts_with("smarty.") => put(75, "Smarty internals"),
        Flavour::Velocity if t.contains('$') => put(65, "Velocity #set directive"),
        _ => {}
    }
    if fl == Flavour::Freemarker
        && !(t.starts_with("assign") || t.starts_with("import") || t.starts_with("include") || t.starts_with("list") || t.starts_with("if"))
    {
        // `<#` is also the start of ordinary markup-ish text; only directives count.
        return best_c.filter(|b| b.0 >= 90);
    }
    // Arithmetic probe: numbers (or quoted numbers) and operators only, at least one operator.
    let arith = {
        let mut ops = 0;
        let mut nums = 0;
        let mut ok = true;
        let mut prev_num = false;
        for tok in t.split(|c: char| c.is_whitespace()).flat_map(|w| split_ops(w)) {
            step(1);
            let tk = tok.trim_matches(['\'', '"']);
            if tk.is_empty() {
                continue;
            }
            if tk.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
                nums += 1;
                prev_num = true;
            } else if matches!(tk, "*" | "+" | "-" | "/" | "%" | "**" | "(" | ")") {
                if tk != "(" && tk != ")" {
                    ops += 1;
                }
                prev_num = false;
            } else {
                ok = false;
                break;
            }
        }
        let _ = prev_num;
        ok && ops >= 1 && nums >= 2
    };
    if arith {
        let c = match fl {
            Flavour::Mustache | Flavour::Dollar | Flavour::Hash | Flavour::Erb | Flavour::Razor => 85,
            Flavour::Statement => 70,
            _ => 50,
        };
        put(c, "template arithmetic probe");
    }
    // Recon objects and calls on literals.
    let head: String = t.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
    if matches!(fl, Flavour::Mustache | Flavour::Dollar | Flavour::Statement | Flavour::Erb) {
        let rest = &t[head.len()..];
        if RECON.contains(&head.as_str())
            && (rest.is_empty() || rest.starts_with('.') || rest.starts_with('|') || rest.starts_with('[') || rest.starts_with('('))
        {
            let strong =
                matches!(head.as_str(), "config" | "self" | "_self" | "lipsum" | "cycler" | "joiner" | "namespace" | "get_flashed_messages" | "url_for");
            put(if strong || rest.contains('(') { 75 } else { 65 }, "template recon object");
        }
        if head == "dump" && rest.starts_with('(') {
            put(70, "template dump() of internals");
        }
        if (t.starts_with('\'') || t.starts_with('"') || t.starts_with("[]") || t.starts_with("()"))
            && (t.contains(").") || t.contains("].") || t.contains("'.") || t.contains("\"."))
        {
            put(75, "method call on a literal in a template");
        }
        if fl == Flavour::Statement
            && (t.starts_with("for ")
                || t.starts_with("if ")
                || t.starts_with("set ")
                || t.starts_with("import")
                || t.starts_with("include")
                || t.starts_with("macro"))
        {
            put(45, "template statement in a value");
        }
        if fl == Flavour::Erb && (t.contains("file.") || t.contains('`') || t.contains("io.popen") || t.contains("system") || t.contains("%x")) {
            put(90, "ERB code execution");
        }
        if fl == Flavour::Dollar && t.contains("@print") {
            put(80, "expression with PHP print");
        }
        if t.contains("get_user_file(") || t.contains("file(") || t.contains("include(") {
            put(75, "template file access");
        }
    }
    let _ = whole;
    best_c
}

/// Split `7*7` into `7`, `*`, `7` (operators as separate tokens).
fn split_ops(w: &str) -> Vec<&str> {
    let mut v = Vec::new();
    let mut start = 0;
    for (i, ch) in w.char_indices() {
        if matches!(ch, '*' | '+' | '-' | '/' | '%' | '(' | ')') {
            if start < i {
                v.push(&w[start..i]);
            }
            v.push(&w[i..i + 1]);
            start = i + 1;
        }
    }
    if start < w.len() {
        v.push(&w[start..]);
    }
    v
}

#[cfg(test)]
mod tests;
