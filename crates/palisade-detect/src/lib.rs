//! The negative security model: every attacker-controlled input of a request is extracted
//! with its location, decoded (bounded), and judged by detectors that understand the language
//! of the payload (SQL, HTML/JavaScript, shell, file paths, templates, XML, LDAP, NoSQL...)
//! rather than by keyword lists. Pure: no I/O; compiled once, shared by all workers.
//!
//! Contract between the parts (the implementation may add to it, not change it):
//! - [`Category`], [`Level`], [`FieldKind`]: vocabulary.
//! - [`Input`]: one value as a detector sees it: the raw text and its decoded form(s).
//! - [`Detector`]: `check(&Input, Level) -> Option<Hit>`; one per attack family, each with its
//!   own tokenizer or grammar, in its own module (`sqli`, `xss`, `cmdi`, `path`, ...).
//! - [`Hit`]: detector, category, confidence, and the decoded fragment that triggered.
#![forbid(unsafe_code)]

use std::fmt;

pub mod argument;
pub mod cmdi;
pub mod code;
pub mod context;
pub mod crlf;
pub mod headers;
pub mod ldap;
pub mod log4shell;
pub mod nosql;
pub(crate) mod other_util;
pub mod path;
pub mod scanner;
pub mod shape;
pub mod sqli;
pub mod ssrf;
pub mod ssti;
pub mod xss;
pub mod xxe;

/// Attack families. `as_str` gives the names of the development corpus
/// (`../shared/data/attack-corpus`) where they exist.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Category {
    Sqli,
    Xss,
    Cmdi,
    PathTraversal,
    Lfi,
    Rfi,
    Ssrf,
    Xxe,
    Ssti,
    Log4Shell,
    CodeInjection,
    Deserialization,
    Crlf,
    Nosql,
    Ldap,
    Scanner,
}

impl Category {
    pub const ALL: [Category; 16] = [
        Category::Sqli,
        Category::Xss,
        Category::Cmdi,
        Category::PathTraversal,
        Category::Lfi,
        Category::Rfi,
        Category::Ssrf,
        Category::Xxe,
        Category::Ssti,
        Category::Log4Shell,
        Category::CodeInjection,
        Category::Deserialization,
        Category::Crlf,
        Category::Nosql,
        Category::Ldap,
        Category::Scanner,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Category::Sqli => "sqli",
            Category::Xss => "xss",
            Category::Cmdi => "cmdi",
            Category::PathTraversal => "path-traversal",
            Category::Lfi => "lfi",
            Category::Rfi => "rfi",
            Category::Ssrf => "ssrf",
            Category::Xxe => "xxe",
            Category::Ssti => "ssti",
            Category::Log4Shell => "log4shell",
            Category::CodeInjection => "code-injection",
            Category::Deserialization => "deserialization",
            Category::Crlf => "crlf",
            Category::Nosql => "nosql",
            Category::Ldap => "ldap",
            Category::Scanner => "scanner",
        }
    }

    /// How specific a finding of this category is about what the attacker meant, for
    /// ranking findings of equal confidence (higher first): a family whose grammar only an
    /// attack speaks (a Log4j lookup, a DTD, a template expression) names the attack better
    /// than one that an attack shares with ordinary input (a URL to an internal host, a
    /// scanner's user agent). A Log4Shell lookup `${jndi:ldap://...}` also holds an `ldap:`
    /// URL: the event is `log4shell`, not `ssrf`.
    pub fn specificity(self) -> u8 {
        match self {
            Category::Log4Shell => 15,
            Category::Deserialization => 14,
            Category::Xxe => 13,
            Category::Ssti => 12,
            Category::CodeInjection => 11,
            Category::Cmdi => 10,
            Category::Sqli => 9,
            Category::Nosql => 8,
            Category::Ldap => 7,
            Category::Xss => 6,
            Category::Crlf => 5,
            Category::Lfi => 4,
            Category::PathTraversal => 3,
            Category::Rfi => 2,
            Category::Ssrf => 1,
            Category::Scanner => 0,
        }
    }

    pub fn from_name(s: &str) -> Option<Category> {
        Category::ALL.into_iter().find(|c| c.as_str() == s)
    }
}

impl fmt::Display for Category {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How eager the detectors are: `Strict` catches more at a small false-positive cost.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Level {
    #[default]
    Balanced,
    Strict,
}

/// Where a value came from. Detectors may use it as context (a bare file name is suspicious
/// in a file parameter, not in a comment; header values are not HTML).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FieldKind {
    PathSegment,
    QueryName,
    QueryValue,
    Header,
    Cookie,
    FormName,
    FormValue,
    MultipartValue,
    MultipartFilename,
    JsonKey,
    JsonValue,
    XmlText,
    XmlAttribute,
    /// A whole body of a type that is not parsed further (text/plain, unknown).
    Body,
    /// A whole XML document (for XXE).
    XmlDocument,
}

impl FieldKind {
    /// Every kind, in declaration order (`kind as usize` indexes it).
    pub const ALL: [FieldKind; 15] = [
        FieldKind::PathSegment,
        FieldKind::QueryName,
        FieldKind::QueryValue,
        FieldKind::Header,
        FieldKind::Cookie,
        FieldKind::FormName,
        FieldKind::FormValue,
        FieldKind::MultipartValue,
        FieldKind::MultipartFilename,
        FieldKind::JsonKey,
        FieldKind::JsonValue,
        FieldKind::XmlText,
        FieldKind::XmlAttribute,
        FieldKind::Body,
        FieldKind::XmlDocument,
    ];
}

/// One value as the detectors see it.
#[derive(Clone, Copy, Debug)]
pub struct Input<'a> {
    /// As extracted (already URL-decoded once where the transport encodes: query and form
    /// values, path segments).
    pub raw: &'a str,
    /// After the normalisation pipeline (further URL layers, `%u`, HTML entities, JS/CSS
    /// escapes, null bytes removed...). Equal to `raw` when nothing was decoded.
    pub decoded: &'a str,
    pub field: FieldKind,
}

impl Input<'_> {
    /// `analyze` on the decoded text and, when the raw text differs, on that too (one step
    /// budget for both): the finding of higher confidence, as `confidence` reads it.
    pub(crate) fn best_view<F>(&self, mut analyze: impl FnMut(&str, &mut usize) -> Option<F>, confidence: impl Fn(&F) -> u8) -> Option<F> {
        let mut steps = 0;
        let best = analyze(self.decoded, &mut steps);
        // The engine shows one text as both (the same slice): no comparison of its bytes then.
        if std::ptr::eq(self.raw, self.decoded) || self.raw == self.decoded {
            return best;
        }
        let raw = analyze(self.raw, &mut steps);
        if raw.as_ref().map_or(0, &confidence) > best.as_ref().map_or(0, &confidence) {
            raw
        } else {
            best
        }
    }
}

/// A detection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hit {
    /// Stable detector name (`sqli`, `xss`, `cmdi`, `path`, ...); used in rules to skip it.
    pub detector: &'static str,
    pub category: Category,
    /// 0..=100: how sure the detector is. `Balanced` blocks at 60 and above, `Strict` at 40.
    pub confidence: u8,
    /// The decoded fragment that triggered, truncated (at most 64 bytes, on a char boundary).
    pub fragment: String,
    /// Short reason, e.g. `string breakout then UNION SELECT`.
    pub why: &'static str,
}

/// A [`Detector::plain_gate`]: the bytes that make a text not plain, and the test for the
/// others.
pub type PlainGate = (&'static str, fn(&str) -> bool);

/// One attack family.
pub trait Detector: Send + Sync {
    fn name(&self) -> &'static str;
    fn check(&self, input: &Input<'_>, level: Level) -> Option<Hit>;
    /// The detector's pre-filter, declared to the engine ([`Gate`]). `None` (the default): the
    /// engine's coarse byte classes ([`engine::FAMILIES`]) decide, or every value is shown.
    fn gate(&self) -> Option<Gate> {
        None
    }
    /// Whether the detector judges values of this kind at all (the engine does not show it the
    /// others). Default: every kind.
    fn applies_to(&self, _field: FieldKind) -> bool {
        true
    }
    /// The detector's pre-filter for a text in the product-token shape of `User-Agent` values
    /// ([`shape::product_tokens`]: `Mozilla/5.0 (X11; Linux x86_64) Gecko/20100101`), which
    /// replaces [`Detector::gate`] for such texts: the engine shows the detector a shaped text
    /// only when this test says yes. The shape's punctuation (`/ ( ) ; , :`) opens many gates
    /// while carrying no attack by itself (see [`shape`]); the test looks only for what an
    /// attack written in the shape still needs (a keyword, a call, a sensitive file name).
    /// Same soundness rule as [`Gate`]. `None` (the default): the gate decides as for any text.
    fn product_token_gate(&self) -> Option<fn(&str) -> bool> {
        None
    }

    /// [`Gate::test`] for a text of ASCII letters, digits and `_` only (a bare word: most JSON
    /// keys, `id`, `created_at`), which the engine knows from its byte pass: it must answer as
    /// [`Gate::test`] does on every such text, and is run instead of it there. `None` (the
    /// default): [`Gate::test`] runs.
    fn bare_word_gate(&self) -> Option<fn(&str) -> bool> {
        None
    }
    /// [`Gate::test`] for a text none of whose bytes is one of the bytes given (`"plain"` for
    /// this test: most prose, names, dates and slugs), which the engine knows from its byte
    /// pass: the test given must answer as [`Gate::test`] does on every such text, and is run
    /// instead of it there (a bare word, when [`Detector::bare_word_gate`] is declared, is
    /// judged by that one). `None` (the default): [`Gate::test`] runs.
    fn plain_gate(&self) -> Option<PlainGate> {
        None
    }
    /// The detector's judgement of a value it found `hit` in, when the value is free text
    /// ([`context::Roles::free_text`]: a search box's parameter, a `Referer`): text a person typed,
    /// which an application puts in a string literal, a full-text search or a log, and never
    /// runs as a command line, opens as a file or appends to an expression of its own. There
    /// a finding stands only when the value leaves such a context by its grammar (closes the
    /// string and parses to the end, starts a command with an operator); a sentence with the
    /// language's words in it does not. Called only on a hit (clean values pay nothing);
    /// `None` drops the finding. Default: the hit as it is.
    fn in_free_text(&self, _input: &Input<'_>, hit: Hit, _level: Level) -> Option<Hit> {
        Some(hit)
    }
    /// The detector's judgement of a value it found `hit` in, when the value is where a
    /// browser is sent ([`context::Roles::redirect_target`]: an OAuth `redirect_uri`, a `return_to`):
    /// the application redirects the user agent there and never fetches it itself. Called only
    /// on a hit; `None` drops the finding. Default: the hit as it is.
    fn in_redirect_target(&self, _input: &Input<'_>, hit: Hit, _level: Level) -> Option<Hit> {
        Some(hit)
    }
}

/// What a value must contain for a detector to be able to fire on it: a necessary condition,
/// declared once and checked by the engine for all detectors together in one byte pass (the
/// literals by pairs of bytes in it, [`engine`]), so that a benign value is cleared
/// without running any detector. The engine shows the detector a text (the raw value or a
/// decoded candidate, as `Input { raw: t, decoded: t }`) only when, in `t`,
/// - a byte of [`Gate::bytes`] occurs, or any control byte or DEL (always), or a non-ASCII
///   character that is not a letter of another script or a typographic quote
///   ([`engine::CodePoint`]: letters open nothing, typographic quotes what `'` or `"` opens), or
/// - a literal of [`Gate::anchors`] occurs (ASCII case-insensitive, anywhere), or
/// - a literal of [`Gate::words`] occurs as a word: ASCII case-insensitive, not preceded by an
///   ASCII letter or `_`, not followed by an ASCII letter, digit or `_`, or
/// - [`Gate::test`] returns true (a structural check with no allocation, run only when the
///   bytes and literals said no, and only when one of [`Gate::test_bytes`] occurs, if any are
///   declared: a test that can only say yes with a `:` in the value declares `":"`; and only
///   when every ASCII byte of the text is one of [`Gate::test_only`], if declared: a test of a
///   base64 shape declares its alphabet, whitespace and `=`).
///
/// Soundness rule (checked generically over the corpus by `tests/gate_soundness.rs`): if the
/// gate says no for `t`, `check` returns `None` for `t` at every level. A detector that adds a
/// pattern must add a byte, literal or test that the pattern needs.
#[derive(Clone, Copy, Debug, Default)]
pub struct Gate {
    /// ASCII bytes any of which lets a value through.
    pub bytes: &'static str,
    pub anchors: &'static [&'static str],
    pub words: &'static [&'static str],
    pub test: Option<fn(&str) -> bool>,
    /// ASCII bytes one of which must occur for [`Gate::test`] to be able to return true
    /// (empty: the test runs on every value the bytes and literals did not let through).
    pub test_bytes: &'static str,
    /// ASCII bytes outside which [`Gate::test`] always says no: the test runs only when every
    /// ASCII byte of the text is one of these (non-ASCII characters never exclude it; empty:
    /// no such condition).
    pub test_only: &'static str,
}

/// Cut `s` to at most `max` bytes on a char boundary (for [`Hit::fragment`]).
pub fn truncate(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

// Around the detectors: decoding, extraction, the engine, its settings and pipeline stage,
// corpus evaluation.
pub mod decode;
pub mod embedded;
pub mod engine;
pub mod eval;
pub mod extract;
pub mod registry;
pub mod settings;
pub mod stage;
#[cfg(test)]
mod test_tables;

pub use engine::{Engine, EngineConfig, Finding};
pub use settings::Settings;
pub use stage::DetectionStage;
