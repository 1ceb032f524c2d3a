//! Context from a JSON value's neighbours: the language its content is written in.
//!
//! A code editor, a notebook or a rich-text editor stores code as the application's content:
//! `{"name": "query.sql", "content": "SELECT ..."}`, `{"language": "bash", "code": "..."}`, a
//! ProseMirror or Lexical `code_block` node whose text children hold the code, a markdown
//! document with code spans and fenced blocks. That code is not an injection into a string
//! context, and an application that stores it has to keep it apart from its own SQL, HTML
//! and shell. Calibration:
//!
//! - **Declared code**: a content field (`content`, `code`, `source`, `text`...) whose object
//!   declares a language (`language`, `lang`, `mode`, `syntax`, or a file name with an
//!   extension in `name`, `filename`, `path`...), or the text of a code-block node that names
//!   its language. Findings of the declared language's own detectors (`sqli` for SQL, `xss`
//!   and `code` for HTML and JavaScript, `cmdi` for shell, `code` for PHP, Python, Ruby; and
//!   `cmdi` for every programming language, whose statements `;` separates and whose calls
//!   share names with programs, and which no shell runs) are not reported at any level: code
//!   an application stores as its content is the content, not an injection. Every other
//!   detector is unchanged (a `<script>` in a file declared SQL is still an XSS). Only when the content begins as code
//!   of that language does (a statement, a tag, a word): a value that begins by closing a
//!   string (`' UNION SELECT ...`) or with a shell operator is an injection whatever its
//!   neighbours say.
//! - **Markdown**: a field named `markdown` (`md`, `*_markdown`) or whose object declares the
//!   format markdown. Code spans and fenced blocks are shown as code: what is found only there
//!   is not reported; what is found in the rest (raw HTML outside code) is unchanged.
//!
//! Only the body's JSON values that have a finding are looked at (the body is parsed again
//! then, bounded as any JSON body): benign traffic without findings pays nothing.
//!
//! **Free text** ([`Roles::free_text`]): a value's field tells its role too. The parameter of a
//! search box or a suggestion endpoint (`q`, `query`, `search`, `term`, `keywords`, `text`,
//! `prefix`...), in the query or a form, and the `Referer` (another page's address and its
//! parameters, most often a search engine's `?q=`) hold text a person typed, which an
//! application puts in a string literal, a full-text search, a log or a page, and never runs
//! as a command line, opens as a file or appends to an expression of its own. Findings there
//! are judged again by [`crate::Detector::in_free_text`]: a search phrase of words around SQL
//! or shell words (`order by 1 desc`, `cat /etc/hosts linux`) is not an injection, a value
//! that breaks out of the context by its grammar (`' or 1=1--`, `1 union select ...`,
//! `; cat /etc/passwd`, `<script>`) still is.

use palisade_json::{Kind, ValueRef};

use crate::decode::Decoder;
use crate::engine::{Engine, Finding};
use crate::extract::Location;
use crate::{FieldKind, Level};

/// The names that give a field its role: the conventions ([`search_name`], [`redirect_name`],
/// the `Referer`) unless an app turns them off, and the names an app adds
/// (`detection.fields`), stored folded (lowercased without `_` and `-`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Roles {
    pub conventions: bool,
    pub search: Vec<String>,
    pub redirect: Vec<String>,
}

impl Default for Roles {
    fn default() -> Self {
        Roles { conventions: true, search: Vec::new(), redirect: Vec::new() }
    }
}

impl Roles {
    /// `name` as the role lists store it: lowercased without `_` and `-`.
    pub fn fold(name: &str) -> String {
        name.bytes().filter(|&c| c != b'_' && c != b'-').map(|c| c.to_ascii_lowercase() as char).collect()
    }

    fn listed(list: &[String], name: &str) -> bool {
        !list.is_empty() && folded::<64>(name).is_some_and(|(buf, n)| list.iter().any(|l| l.as_bytes() == &buf[..n]))
    }

    /// Whether a parameter or key `name` is a search box's; `json` for a JSON document's key,
    /// where the conventional `text` and `query` hold content too (an editor's text nodes, a
    /// SQL editor's query), which the declared-code context judges.
    fn search(&self, name: &str, json: bool) -> bool {
        Self::listed(&self.search, name)
            || (self.conventions && search_name(name) && !(json && (name.eq_ignore_ascii_case("text") || name.eq_ignore_ascii_case("query"))))
    }

    fn redirect(&self, name: &str) -> bool {
        Self::listed(&self.redirect, name) || (self.conventions && redirect_name(name))
    }

    /// Whether a value at `loc` of kind `field` is free text (module documentation): the value
    /// of a query or form parameter, or of a JSON body's key, named as search boxes and
    /// suggestion endpoints name theirs (GraphQL `variables` too, in a query parameter or the
    /// body), or the `Referer`.
    pub fn free_text(&self, loc: &Location<'_>, field: FieldKind) -> bool {
        match (loc, field) {
            (Location::Query(n), FieldKind::QueryValue) => self.search(n, false),
            (Location::Field(n), FieldKind::FormValue | FieldKind::MultipartValue) => self.search(n, false),
            (Location::Header(n), FieldKind::Header) => self.conventions && n.eq_ignore_ascii_case("referer"),
            (Location::Named(n), _) => n.starts_with("query.") && n.rsplit_once('/').is_some_and(|(_, last)| self.search(last, false)),
            (Location::Json(segs), FieldKind::JsonValue) => matches!(segs.last(), Some(crate::extract::Seg::Key(k)) if self.search(k, true)),
            _ => false,
        }
    }

    /// Whether a value at `loc` of kind `field` is where a browser is sent: a query or form
    /// parameter, or a JSON document's key, named as OAuth and sign-in flows name the address
    /// the user agent goes to next (`redirect_uri`, `post_logout_redirect_uri`, `return_to`,
    /// `returnUrl`, Stripe's `success_url`). The application redirects the browser there (RFC
    /// 6749 §3.1.2; a native app's loopback `http://127.0.0.1/cb`, RFC 8252 §7.3) and never
    /// fetches it: a loopback address there is no request forgery.
    pub fn redirect_target(&self, loc: &Location<'_>, field: FieldKind) -> bool {
        match (loc, field) {
            (Location::Query(n), FieldKind::QueryValue) | (Location::Field(n), FieldKind::FormValue | FieldKind::MultipartValue) => self.redirect(n),
            (Location::Json(segs), FieldKind::JsonValue) => matches!(segs.last(), Some(crate::extract::Seg::Key(k)) if self.redirect(k)),
            _ => false,
        }
    }
}

/// Whether a parameter name is a redirect target's ([`Roles::redirect_target`]): compared
/// without case, `_` and `-`.
pub fn redirect_name(name: &str) -> bool {
    let Some((buf, n)) = folded::<32>(name) else { return false };
    matches!(
        &buf[..n],
        b"redirecturi" | b"redirecturl" | b"redirectto" | b"postlogoutredirecturi" | b"returnto" | b"returnurl" | b"returnuri" | b"successurl" | b"cancelurl"
    )
}

/// `name` lowercased without `_` and `-`, when it fits in `N` bytes.
fn folded<const N: usize>(name: &str) -> Option<([u8; N], usize)> {
    let mut buf = [0u8; N];
    let mut n = 0;
    for &c in name.as_bytes() {
        if c == b'_' || c == b'-' {
            continue;
        }
        *buf.get_mut(n)? = c.to_ascii_lowercase();
        n += 1;
    }
    Some((buf, n))
}

/// Whether a parameter name is a search box's (`q`, `query`, `search_query`, `searchTerm`,
/// `keywords`) or a suggestion endpoint's (`prefix`, `text`), as the HTML forms of search
/// engines and sites, OpenSearch and autocomplete APIs name them: compared without case,
/// `_` and `-`.
pub fn search_name(name: &str) -> bool {
    let Some((buf, n)) = folded::<16>(name) else { return false };
    matches!(
        &buf[..n],
        b"q" | b"s"
            | b"query"
            | b"search"
            | b"term"
            | b"terms"
            | b"keyword"
            | b"keywords"
            | b"kw"
            | b"text"
            | b"prefix"
            | b"wd"
            | b"searchterm"
            | b"searchterms"
            | b"searchquery"
            | b"searchtext"
            | b"searchstring"
            | b"searchphrase"
            | b"searchkeywords"
            | b"userquery"
    )
}

/// A language a field's neighbours can declare.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lang {
    Sql,
    /// HTML, XML, SVG and templates of components (Vue, Svelte).
    Markup,
    /// JavaScript, TypeScript, JSX.
    Script,
    Css,
    Shell,
    /// PHP, Python, Ruby.
    ServerScript,
    Markdown,
}

impl Lang {
    /// The detectors that judge this language's own grammar, and `cmdi` for every programming
    /// language (no shell runs its text; its `;` and its calls are its own).
    pub fn detectors(self) -> &'static [&'static str] {
        match self {
            Lang::Sql => &["sqli", "cmdi"],
            Lang::Markup | Lang::Script => &["xss", "code", "cmdi"],
            Lang::Css => &["xss", "cmdi"],
            Lang::Shell => &["cmdi"],
            Lang::ServerScript => &["code", "cmdi"],
            Lang::Markdown => &[],
        }
    }

    /// By a language name as editors and highlighters write it (`sql`, `postgresql`,
    /// `javascript`, `text/x-sql`, `ace/mode/sh`), case-insensitive.
    pub fn by_name(name: &str) -> Option<Lang> {
        let n = name.trim();
        // MIME-like and path-like forms: the last step, without an `x-` prefix.
        let n = n.rsplit('/').next().unwrap_or(n);
        let n = n.strip_prefix("x-").unwrap_or(n);
        let l = n.to_ascii_lowercase();
        Some(match l.as_str() {
            "sql" | "mysql" | "pgsql" | "postgres" | "postgresql" | "plsql" | "plpgsql" | "tsql" | "t-sql" | "mssql" | "sqlite" | "sqlserver" | "mariadb"
            | "oracle" | "bigquery" | "snowflake" | "hive" | "sparksql" | "cql" | "clickhouse" => Lang::Sql,
            "html" | "htm" | "xhtml" | "xml" | "svg" | "vue" | "svelte" | "handlebars" | "hbs" | "mustache" | "ejs" | "erb" | "liquid" => Lang::Markup,
            "javascript" | "js" | "jsx" | "mjs" | "cjs" | "typescript" | "ts" | "tsx" | "ecmascript" | "node" | "react" | "javascriptreact"
            | "typescriptreact" | "json5" => Lang::Script,
            "css" | "scss" | "sass" | "less" | "stylus" => Lang::Css,
            "sh" | "bash" | "shell" | "zsh" | "ksh" | "fish" | "console" | "shellsession" | "shell-session" | "powershell" | "ps1" | "pwsh" | "bat" | "cmd"
            | "batch" | "dockerfile" | "docker" | "makefile" | "make" => Lang::Shell,
            "php" | "python" | "py" | "python3" | "ruby" | "rb" | "perl" | "pl" => Lang::ServerScript,
            "markdown" | "md" | "gfm" | "commonmark" | "mdx" => Lang::Markdown,
            _ => return None,
        })
    }

    /// By a file name's extension (`App.jsx`, `db/schema.sql`, `build.sh`), or its whole
    /// name for the files named by convention (`Dockerfile`, `Makefile`).
    pub fn by_file_name(path: &str) -> Option<Lang> {
        let file = path.rsplit(['/', '\\']).next().unwrap_or(path);
        if file.eq_ignore_ascii_case("dockerfile") || file.eq_ignore_ascii_case("makefile") {
            return Some(Lang::Shell);
        }
        let (stem, ext) = file.rsplit_once('.')?;
        if stem.is_empty() || ext.is_empty() || ext.len() > 10 {
            return None;
        }
        Lang::by_name(ext)
    }
}

/// Whether `text` begins as code of `lang` does, rather than by closing the string or command
/// an application would have put it in: SQL begins with a statement keyword, `(` or a
/// comment; markup with a tag, a comment or text; script and server script with anything but
/// a quote; shell with a word, `#` or a redirection, not with an operator or a quote.
pub fn begins_as_code(lang: Lang, text: &str) -> bool {
    let t = text.trim_start();
    let Some(&c) = t.as_bytes().first() else { return false };
    match lang {
        Lang::Sql => {
            if c == b'(' || t.starts_with("--") || t.starts_with("/*") {
                return true;
            }
            let word: String = t.bytes().take_while(|b| b.is_ascii_alphabetic()).map(|b| b.to_ascii_lowercase() as char).collect();
            matches!(
                word.as_str(),
                "select"
                    | "with"
                    | "insert"
                    | "update"
                    | "delete"
                    | "create"
                    | "alter"
                    | "drop"
                    | "truncate"
                    | "merge"
                    | "explain"
                    | "begin"
                    | "declare"
                    | "set"
                    | "use"
                    | "show"
                    | "describe"
                    | "grant"
                    | "revoke"
                    | "call"
                    | "exec"
                    | "execute"
                    | "values"
                    | "copy"
                    | "analyze"
                    | "vacuum"
                    | "pragma"
                    | "replace"
                    | "upsert"
                    | "comment"
            )
        }
        Lang::Shell => !matches!(c, b';' | b'|' | b'&' | b'`' | b'\'' | b'"' | b')' | b'$' | b'\n') || t.starts_with("$ ") || t.starts_with("${"),
        Lang::Markup | Lang::Script | Lang::Css | Lang::ServerScript | Lang::Markdown => !matches!(c, b'\'' | b'"' | b'`'),
    }
}

/// Keys whose value is the content of a file or snippet its object describes.
fn content_key(k: &str) -> bool {
    matches!(
        k.to_ascii_lowercase().as_str(),
        "content"
            | "contents"
            | "code"
            | "source"
            | "src"
            | "text"
            | "body"
            | "value"
            | "snippet"
            | "script"
            | "query"
            | "sql"
            | "html"
            | "markup"
            | "template"
            | "data"
            | "raw"
    )
}

/// Content keys that name a query (`{"type": "graph", "query": "SELECT mean(value) FROM cpu
/// ..."}` in a dashboard, `{"sql": "SELECT ..."}` in a notebook): a value that begins as a SQL
/// statement is SQL its application stores and runs as written, when its object declares no
/// other language; one that begins by closing a string is not ([`begins_as_code`]).
fn query_key(k: &str) -> bool {
    matches!(k.to_ascii_lowercase().as_str(), "query" | "sql")
}

/// Keys that name a language (as code editors and highlighters name it).
fn language_key(k: &str) -> bool {
    matches!(k.to_ascii_lowercase().as_str(), "language" | "lang" | "mode" | "syntax" | "languageid" | "language_id")
}

/// Keys that name a document format: they declare markdown, never code (a `format: html`
/// beside a comment is the rich text where stored XSS lives).
fn format_key(k: &str) -> bool {
    matches!(k.to_ascii_lowercase().as_str(), "format" | "content_type" | "contenttype" | "mime" | "mimetype" | "markup")
}

/// Keys that name a file.
fn file_key(k: &str) -> bool {
    matches!(k.to_ascii_lowercase().as_str(), "name" | "filename" | "file_name" | "file" | "path" | "filepath" | "file_path")
}

/// Keys whose value is markdown by their name.
fn markdown_key(k: &str) -> bool {
    let l = k.to_ascii_lowercase();
    l == "markdown" || l == "md" || l.ends_with("_markdown") || l.ends_with("markdown") && l.len() > 8 || l.ends_with("_md")
}

/// Node types of editors' code blocks (ProseMirror/Tiptap `code_block`/`codeBlock`, Lexical
/// and Slate `code`, Draft.js `code-block`).
fn code_block_type(t: &str) -> bool {
    matches!(t, "code_block" | "codeBlock" | "code" | "code-block" | "codeblock" | "CodeBlock")
}

/// A string of a JSON document whose language its neighbours declare.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Declared {
    /// Rendered as the engine renders locations (`body/files/0/content`).
    pub location: String,
    pub lang: Lang,
    pub value: String,
}

/// Re-judge the findings of a JSON body's values in the context their neighbours give
/// (module documentation): findings of declared code in its own language, and findings only
/// in markdown code, go.
pub(crate) fn judge_json_findings(engine: &Engine, body: &[u8], level: Level, dec: &mut Decoder, findings: &mut Vec<Finding>) {
    let declared = declared_languages(body);
    if declared.is_empty() {
        return;
    }
    // Per markdown location: the detectors that still fire with its code blanked.
    let mut markdown: Vec<(usize, Vec<&'static str>)> = Vec::new();
    let mut code = vec![false; findings.len()];
    for (n, f) in findings.iter().enumerate() {
        if f.field != FieldKind::JsonValue {
            continue;
        }
        let Some(i) = declared.iter().position(|d| d.location == f.location) else { continue };
        let d = &declared[i];
        let in_code = match d.lang {
            Lang::Markdown => {
                let still = match markdown.iter().find(|(j, _)| *j == i) {
                    Some((_, s)) => s,
                    None => {
                        let blank = blank_markdown_code(&d.value);
                        let s = if blank == d.value {
                            vec![f.detector]
                        } else {
                            engine.findings_on(&blank, FieldKind::JsonValue, &d.location, level, dec).iter().map(|g| g.detector).collect()
                        };
                        markdown.push((i, s));
                        &markdown.last().expect("pushed").1
                    }
                };
                !still.contains(&f.detector)
            }
            lang => lang.detectors().contains(&f.detector) && begins_as_code(lang, &d.value),
        };
        code[n] = in_code;
    }
    let mut n = 0;
    findings.retain(|_| {
        n += 1;
        !code[n - 1]
    });
}

/// The language declared for each string of a JSON document that has one.
pub fn declared_languages(body: &[u8]) -> Vec<Declared> {
    let mut tape = palisade_json::Tape::default();
    if palisade_json::parse_into(body, &mut tape, &palisade_json::Limits::default()).is_err() {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut path = String::from("body");
    walk(tape.root(body), &mut path, None, crate::embedded::JSON_IN_JSON, &mut out);
    out
}

fn push_seg(path: &mut String, seg: &str) {
    path.push('/');
    for c in seg.chars() {
        match c {
            '~' => path.push_str("~0"),
            '/' => path.push_str("~1"),
            c => path.push(c),
        }
    }
}

/// The language an editor node declares for its text when it is a code block.
fn code_block_language(v: ValueRef<'_>) -> Option<Lang> {
    let ty = v.get("type")?.as_str()?;
    if !code_block_type(&ty) {
        return None;
    }
    let named = |o: ValueRef<'_>| ["language", "lang", "params"].iter().find_map(|k| o.get(k).and_then(|l| l.as_str()).and_then(|l| Lang::by_name(&l)));
    named(v).or_else(|| v.get("attrs").and_then(named))
}

/// A JSON document serialised into a string (`"json": "{\"panels\": ...}"`), walked below the
/// string's path as the engine walks it ([`crate::embedded`]), while `levels` allow.
fn json_in_string(value: &str, path: &mut String, block: Option<Lang>, levels: usize, out: &mut Vec<Declared>) {
    let t = value.trim();
    if !matches!((t.as_bytes().first(), t.as_bytes().last()), (Some(b'{'), Some(b'}')) | (Some(b'['), Some(b']'))) {
        return;
    }
    let mut tape = palisade_json::Tape::default();
    if palisade_json::parse_into(t.as_bytes(), &mut tape, &palisade_json::Limits::default()).is_ok() {
        walk(tape.root(t.as_bytes()), path, block, levels, out);
    }
}

fn walk(v: ValueRef<'_>, path: &mut String, block: Option<Lang>, levels: usize, out: &mut Vec<Declared>) {
    match v.kind() {
        Kind::Object => {
            let block = code_block_language(v).or(block);
            // What the object declares for its content keys.
            let mut declared = None;
            let mut markdown = false;
            for (k, val) in v.members() {
                let (Some(k), Some(s)) = (k.as_str(), val.as_str()) else { continue };
                if language_key(&k) || format_key(&k) {
                    match Lang::by_name(&s) {
                        Some(Lang::Markdown) => markdown = true,
                        Some(l) if language_key(&k) => declared = Some(l),
                        _ => {}
                    }
                } else if file_key(&k) && declared.is_none() {
                    declared = Lang::by_file_name(&s);
                }
            }
            for (k, val) in v.members() {
                let Some(k) = k.as_str() else { continue };
                let len = path.len();
                push_seg(path, &k);
                if val.kind() == Kind::String {
                    let lang = if markdown_key(&k) || (markdown && content_key(&k)) {
                        Some(Lang::Markdown)
                    } else if content_key(&k) {
                        declared.or(block.filter(|_| k == "text")).or_else(|| query_key(&k).then_some(Lang::Sql))
                    } else {
                        None
                    };
                    match (lang, val.as_str()) {
                        (Some(lang), Some(value)) => out.push(Declared { location: path.clone(), lang, value: value.into_owned() }),
                        (None, Some(value)) if levels > 0 => json_in_string(&value, path, block, levels - 1, out),
                        _ => {}
                    }
                } else {
                    walk(val, path, block, levels, out);
                }
                path.truncate(len);
            }
        }
        Kind::Array => {
            for (i, item) in v.items().enumerate() {
                let len = path.len();
                path.push('/');
                path.push_str(&i.to_string());
                walk(item, path, block, levels, out);
                path.truncate(len);
            }
        }
        _ => {}
    }
}

/// `text` with markdown code spans and fenced code blocks blanked (each byte of their
/// contents replaced by a space, line ends kept), as CommonMark reads them: a fence is a line
/// of three or more backticks or tildes, closed by a line of the same character at least as
/// long (or the end); a code span is a run of backticks closed by a run of the same length.
pub fn blank_markdown_code(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let mut i = 0;
    let mut line_start = true;
    while i < b.len() {
        if line_start {
            // A fence: up to three spaces, then ``` or ~~~.
            let mut j = i;
            while j < b.len() && j - i < 3 && b[j] == b' ' {
                j += 1;
            }
            let fc = b.get(j).copied();
            if matches!(fc, Some(b'`') | Some(b'~')) {
                let fc = fc.unwrap_or(b'`');
                let n = b[j..].iter().take_while(|&&c| c == fc).count();
                if n >= 3 {
                    // The block runs from the next line to a closing fence line.
                    let mut k = j + n;
                    while k < b.len() && b[k] != b'\n' {
                        k += 1;
                    }
                    let body_start = k;
                    let mut end = b.len();
                    let mut close_end = b.len();
                    let mut p = k;
                    while p < b.len() {
                        // p at '\n'
                        let ls = p + 1;
                        let mut q = ls;
                        while q < b.len() && q - ls < 3 && b[q] == b' ' {
                            q += 1;
                        }
                        let m = b[q.min(b.len())..].iter().take_while(|&&c| c == fc).count();
                        let mut r = q + m;
                        while r < b.len() && (b[r] == b' ' || b[r] == b'\t') {
                            r += 1;
                        }
                        if m >= n && (r >= b.len() || b[r] == b'\n') {
                            end = ls;
                            close_end = r;
                            break;
                        }
                        p = match b[ls.min(b.len())..].iter().position(|&c| c == b'\n') {
                            Some(o) => ls + o,
                            None => b.len(),
                        };
                    }
                    for c in &mut out[body_start..end] {
                        if *c != b'\n' {
                            *c = b' ';
                        }
                    }
                    i = close_end;
                    line_start = false;
                    continue;
                }
            }
        }
        let c = b[i];
        if c == b'`' {
            let n = b[i..].iter().take_while(|&&x| x == b'`').count();
            // The closing run of exactly n backticks.
            let mut p = i + n;
            let mut close = None;
            while p < b.len() {
                if b[p] == b'`' {
                    let m = b[p..].iter().take_while(|&&x| x == b'`').count();
                    if m == n {
                        close = Some(p);
                        break;
                    }
                    p += m;
                } else {
                    p += 1;
                }
            }
            if let Some(p) = close {
                for c in &mut out[i + n..p] {
                    if *c != b'\n' {
                        *c = b' ';
                    }
                }
                i = p + n;
            } else {
                i += n;
            }
            line_start = false;
            continue;
        }
        line_start = c == b'\n';
        i += 1;
    }
    // Only ASCII bytes were replaced, by ASCII, inside runs that began and ended on ASCII
    // bytes: still UTF-8. (Multi-byte characters inside a span are all replaced, each byte
    // by a space.)
    String::from_utf8(out).unwrap_or_default()
}

#[cfg(test)]
mod tests;
