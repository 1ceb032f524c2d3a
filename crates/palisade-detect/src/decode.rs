//! Normalisation and decoding of one value, bounded and linear.
//!
//! Attackers hide payloads behind encodings the application (or a browser, or a database)
//! will undo: several layers of percent-encoding, `%u1234`, overlong UTF-8 (`%c0%af` for `/`),
//! HTML character references, JavaScript and CSS escapes, base64. [`Decoder::decode`] runs the
//! pipeline and yields [`Candidate`]s, the raw value first, then the fully decoded text (when
//! it differs), then a base64 decoding (when the value is base64 of mostly printable text).
//! Detectors see each candidate as an [`crate::Input`]; a finding names the [`Transforms`]
//! that revealed it.
//!
//! Every step is length non-increasing (an escape is never shorter than what it decodes to),
//! so the output of any layer is at most as long as its input; the input is cut at
//! [`Limits::max_input`] bytes and at most [`Limits::max_layers`] layers run: time and memory
//! are linear in the input. Invalid sequences are kept as they were written (visible to the
//! detectors), never dropped. SQL comments and whitespace tricks are left alone: they are
//! structure for the SQL detector, not encoding.
//!
//! Also here: [`normalize_path`], the path normalisation the path-traversal detector uses
//! (`..`, `//`, backslashes, encoded separators).

use std::fmt;

use memchr::memchr;

#[cfg(test)]
mod tests;

/// Bounds of one decoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Full passes of the pipeline (URL, HTML, escapes); stops earlier at a fixed point.
    pub max_layers: u8,
    /// Only this many bytes of a value are decoded (the raw candidate stays whole).
    pub max_input: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_layers: 4, max_input: 64 * 1024 }
    }
}

/// The set of decodings that produced a candidate (bit set).
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Transforms(pub u16);

impl Transforms {
    pub const NONE: Transforms = Transforms(0);
    /// `%XX` (a further layer beyond the transport's own decoding).
    pub const URL: Transforms = Transforms(1);
    /// `%u1234` (IIS style).
    pub const URL_UNICODE: Transforms = Transforms(2);
    /// Overlong UTF-8 forms of ASCII (`%c0%af`, `%e0%80%af`, `%c1%1c`).
    pub const OVERLONG: Transforms = Transforms(4);
    /// HTML character references (named, decimal, hexadecimal, with or without `;`).
    pub const HTML: Transforms = Transforms(8);
    /// JavaScript escapes `\x41`, `\u0041`, `\u{41}`.
    pub const JS: Transforms = Transforms(16);
    /// CSS escapes `\41 `.
    pub const CSS: Transforms = Transforms(32);
    /// NUL characters removed.
    pub const NUL: Transforms = Transforms(64);
    /// Base64 decoded.
    pub const BASE64: Transforms = Transforms(128);
    /// `+` read as a space in a further form-encoded layer.
    pub const PLUS: Transforms = Transforms(256);
    /// Value cut at [`Limits::max_input`] before decoding.
    pub const CUT: Transforms = Transforms(512);
    /// Invisible format characters removed ([`is_invisible`]: zero-width space and joiners,
    /// word joiner, byte-order mark, soft hyphen), which split a keyword for a filter
    /// (`UN\u{200b}ION`) and which many applications strip or a database ignores.
    pub const INVISIBLE: Transforms = Transforms(1024);

    const NAMES: [(Transforms, &'static str); 11] = [
        (Transforms::URL, "url"),
        (Transforms::URL_UNICODE, "url-unicode"),
        (Transforms::OVERLONG, "overlong-utf8"),
        (Transforms::HTML, "html"),
        (Transforms::JS, "js-escape"),
        (Transforms::CSS, "css-escape"),
        (Transforms::NUL, "nul"),
        (Transforms::BASE64, "base64"),
        (Transforms::PLUS, "plus"),
        (Transforms::CUT, "cut"),
        (Transforms::INVISIBLE, "invisible"),
    ];

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    pub fn contains(self, other: Transforms) -> bool {
        self.0 & other.0 == other.0
    }

    /// Names of the transforms, in a fixed order.
    pub fn names(self) -> impl Iterator<Item = &'static str> {
        Transforms::NAMES.into_iter().filter(move |(t, _)| self.contains(*t)).map(|(_, n)| n)
    }
}

impl std::ops::BitOr for Transforms {
    type Output = Transforms;
    fn bitor(self, rhs: Transforms) -> Transforms {
        Transforms(self.0 | rhs.0)
    }
}

impl std::ops::BitOrAssign for Transforms {
    fn bitor_assign(&mut self, rhs: Transforms) {
        self.0 |= rhs.0;
    }
}

/// `raw`, or the names joined with `+` (`url+html`).
impl fmt::Display for Transforms {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            return f.write_str("raw");
        }
        for (i, n) in self.names().enumerate() {
            if i > 0 {
                f.write_str("+")?;
            }
            f.write_str(n)?;
        }
        Ok(())
    }
}

impl fmt::Debug for Transforms {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// One text the detectors should look at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Candidate<'a> {
    pub text: &'a str,
    /// Empty for the raw value.
    pub transforms: Transforms,
}

/// The candidates of one value: raw first, then the decoded text, then base64.
#[derive(Clone, Copy, Debug)]
pub struct Candidates<'a> {
    raw: &'a str,
    decoded: Option<Candidate<'a>>,
    base64: Option<Candidate<'a>>,
}

impl<'a> Candidates<'a> {
    /// The value as given.
    pub fn raw(&self) -> &'a str {
        self.raw
    }

    /// The output of the normalisation pipeline (`raw` when nothing was decoded): what goes
    /// into [`crate::Input::decoded`].
    pub fn decoded(&self) -> Candidate<'a> {
        self.decoded.unwrap_or(Candidate { text: self.raw, transforms: Transforms::NONE })
    }

    /// The base64 reading, when the value is base64 of mostly printable text.
    pub fn base64(&self) -> Option<Candidate<'a>> {
        self.base64
    }

    /// Distinct candidates: raw, decoded (if different), base64 (if any).
    pub fn iter(&self) -> impl Iterator<Item = Candidate<'a>> + 'a {
        std::iter::once(Candidate { text: self.raw, transforms: Transforms::NONE }).chain(self.decoded).chain(self.base64)
    }

    /// The candidates after the raw value: the decoded text (if different), base64 (if any);
    /// [`Candidates::iter`] without its first.
    pub fn derived(&self) -> [Option<Candidate<'a>>; 2] {
        [self.decoded, self.base64]
    }

    pub fn len(&self) -> usize {
        1 + self.decoded.is_some() as usize + self.base64.is_some() as usize
    }

    pub fn is_empty(&self) -> bool {
        false
    }
}

/// Reusable buffers for decoding; keep one per worker.
#[derive(Debug)]
pub struct Decoder {
    limits: Limits,
    a: String,
    b: String,
    b64: String,
    bytes: Vec<u8>,
}

impl Default for Decoder {
    fn default() -> Self {
        Decoder::new(Limits::default())
    }
}

/// Whether `s` holds anything the pipeline could decode (`%`, `&`, `\`, NUL). A value
/// without any of these decodes to itself.
pub fn may_decode(s: &str) -> bool {
    let b = s.as_bytes();
    may_decode_layer(b) || memchr(0, b).is_some() || has_invisible(b)
}

/// The invisible format characters removed by the pipeline ([`Transforms::INVISIBLE`]):
/// U+00AD soft hyphen, U+180E Mongolian vowel separator, U+200B zero-width space, U+200C/D
/// zero-width non-joiner/joiner, U+2060 word joiner, U+FEFF zero-width no-break space.
pub fn is_invisible(c: char) -> bool {
    matches!(c, '\u{ad}' | '\u{180e}' | '\u{200b}' | '\u{200c}' | '\u{200d}' | '\u{2060}' | '\u{feff}')
}

/// Whether `b` holds an [`is_invisible`] character: its UTF-8 lead byte (`C2`, `E1`, `E2`,
/// `EF`) found first, then the character.
fn has_invisible(b: &[u8]) -> bool {
    b.iter().enumerate().any(|(i, &c)| {
        matches!(c, 0xC2 | 0xE1 | 0xE2 | 0xEF)
            && matches!(b.get(i..i + 3), Some([0xE2, 0x80, 0x8B..=0x8D] | [0xE2, 0x81, 0xA0] | [0xEF, 0xBB, 0xBF] | [0xE1, 0xA0, 0x8E]))
            || c == 0xC2 && b.get(i + 1) == Some(&0xAD)
    })
}

/// Whether a layer of the pipeline ([`url_layer`] without `+`, [`html_layer`],
/// [`escape_layer`]) can change `b`: each needs its trigger byte.
fn may_decode_layer(b: &[u8]) -> bool {
    memchr::memchr3(b'%', b'&', b'\\', b).is_some()
}

impl Decoder {
    pub fn new(limits: Limits) -> Self {
        Decoder { limits, a: String::new(), b: String::new(), b64: String::new(), bytes: Vec::new() }
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    pub fn set_limits(&mut self, limits: Limits) {
        self.limits = limits;
    }

    /// Decode `raw` into its candidates. Linear in `raw.len()` (bounded by the limits).
    pub fn decode<'a>(&'a mut self, raw: &'a str) -> Candidates<'a> {
        self.decode_known(raw, true, true)
    }

    /// [`Decoder::decode`] when the caller already knows (from one pass over the bytes) that
    /// `raw` has no byte the pipeline decodes (`may_pipeline` false: [`may_decode`] is false)
    /// or that no base64 reading exists (`may_base64` false: a byte outside the base64
    /// alphabet and `=` within the first [`Limits::max_input`] bytes, or fewer than
    /// [`BASE64_MIN_LEN`] bytes); `true` means "maybe" and is always correct.
    pub fn decode_known<'a>(&'a mut self, raw: &'a str, may_pipeline: bool, may_base64: bool) -> Candidates<'a> {
        let limits = self.limits;
        let mut input = raw;
        let mut cut = Transforms::NONE;
        if input.len() > limits.max_input {
            input = crate::truncate(input, limits.max_input);
            cut = Transforms::CUT;
        }
        let mut tf = Transforms::NONE;
        if may_pipeline && may_decode(input) {
            tf = pipeline(input, limits.max_layers, &mut self.a, &mut self.b, &mut self.bytes);
        }
        let has_b64 = may_base64 && base64_candidate(input, &mut self.bytes, &mut self.b64);
        let mut b64tf = Transforms::BASE64;
        if has_b64 && may_decode(&self.b64) {
            // The decoded text may itself be encoded: one more pipeline run over it.
            let text = std::mem::take(&mut self.b64);
            b64tf |= pipeline(&text, limits.max_layers, &mut self.b64, &mut self.b, &mut self.bytes);
        }
        let decoded = (!tf.is_empty()).then(|| Candidate { text: self.a.as_str(), transforms: tf | cut });
        let base64 = has_b64.then(|| Candidate { text: self.b64.as_str(), transforms: b64tf | cut });
        Candidates { raw, decoded, base64 }
    }
}

/// Run the pipeline over `input`; the result is in `a` when the returned set is not empty.
fn pipeline(input: &str, max_layers: u8, a: &mut String, b: &mut String, bytes: &mut Vec<u8>) -> Transforms {
    a.clear();
    a.push_str(input);
    let mut tf = Transforms::NONE;
    for _ in 0..max_layers.max(1) {
        let mut changed = false;
        b.clear();
        let t = url_layer(a, false, true, b, bytes);
        if !t.is_empty() {
            std::mem::swap(a, b);
            tf |= t;
            changed = true;
        }
        b.clear();
        let t = html_layer(a, b);
        if !t.is_empty() {
            std::mem::swap(a, b);
            tf |= t;
            changed = true;
        }
        b.clear();
        let t = escape_layer(a, b);
        if !t.is_empty() {
            std::mem::swap(a, b);
            tf |= t;
            changed = true;
        }
        // Each layer returns at once without its trigger byte (`%`, `&`, `\\`): a text with
        // none of them is a fixed point, the next round would change nothing.
        if !changed || !may_decode_layer(a.as_bytes()) {
            break;
        }
    }
    if memchr(0, a.as_bytes()).is_some() {
        a.retain(|c| c != '\0');
        tf |= Transforms::NUL;
    }
    if has_invisible(a.as_bytes()) {
        a.retain(|c| !is_invisible(c));
        tf |= Transforms::INVISIBLE;
    }
    tf
}

fn hex(b: u8) -> Option<u32> {
    match b {
        b'0'..=b'9' => Some((b - b'0') as u32),
        b'a'..=b'f' => Some((b - b'a' + 10) as u32),
        b'A'..=b'F' => Some((b - b'A' + 10) as u32),
        _ => None,
    }
}

fn hex_n(s: &[u8], n: usize) -> Option<u32> {
    if s.len() < n {
        return None;
    }
    s[..n].iter().try_fold(0u32, |acc, &b| hex(b).map(|h| acc << 4 | h))
}

fn push_pct(out: &mut String, b: u8) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    out.push('%');
    out.push(HEX[(b >> 4) as usize] as char);
    out.push(HEX[(b & 15) as usize] as char);
}

/// Overlong (or IIS-lenient) encodings of an ASCII character at the start of `s`:
/// `C0/C1 xx` (the low six bits of the second byte, as IIS read `%c1%1c` as `\`) and
/// `E0 80..9F xx`. Returns the character and the bytes used.
fn overlong(s: &[u8]) -> Option<(char, usize)> {
    match *s {
        [b0 @ (0xC0 | 0xC1), b1, ..] => {
            let c = ((b0 as u32 & 1) << 6) | (b1 as u32 & 0x3F);
            Some((char::from_u32(c)?, 2))
        }
        [0xE0, b1 @ 0x80..=0x9F, b2 @ 0x80..=0xBF, ..] => {
            let c = ((b1 as u32 & 0x3F) << 6) | (b2 as u32 & 0x3F);
            (c < 0x80).then(|| (char::from_u32(c), 3)).and_then(|(c, n)| Some((c?, n)))
        }
        _ => None,
    }
}

/// Append the bytes of a run of `%XX` escapes as text: valid UTF-8 as is, overlong forms of
/// ASCII as the character, anything else as the `%XX` it was written as.
fn flush_run(run: &mut Vec<u8>, out: &mut String, tf: &mut Transforms) {
    let mut i = 0;
    while i < run.len() {
        match std::str::from_utf8(&run[i..]) {
            Ok(s) => {
                out.push_str(s);
                if !s.is_empty() {
                    *tf |= Transforms::URL;
                }
                break;
            }
            Err(e) => {
                let good = e.valid_up_to();
                if let Ok(s) = std::str::from_utf8(&run[i..i + good]) {
                    out.push_str(s);
                    if good > 0 {
                        *tf |= Transforms::URL;
                    }
                }
                i += good;
                if let Some((c, n)) = overlong(&run[i..]) {
                    out.push(c);
                    *tf |= Transforms::OVERLONG | Transforms::URL;
                    i += n;
                } else {
                    push_pct(out, run[i]);
                    i += 1;
                }
            }
        }
    }
    run.clear();
}

/// One layer of percent-decoding into `out` (cleared by the caller). `%XX` (runs decoded as
/// UTF-8, overlong forms of ASCII mapped, invalid bytes kept as `%XX`), `%uXXXX` (surrogate
/// pairs joined; fullwidth ASCII folded to ASCII, as IIS did), `+` as a space when `plus`, or
/// when `plus_heuristic` and the text has no literal space (it then looks form-encoded).
/// Returns what was decoded (empty: nothing, `out` is then meaningless).
pub fn url_layer(s: &str, plus: bool, plus_heuristic: bool, out: &mut String, run: &mut Vec<u8>) -> Transforms {
    let b = s.as_bytes();
    if memchr(b'%', b).is_none() && !(plus && memchr(b'+', b).is_some()) {
        return Transforms::NONE;
    }
    let plus_forced = plus;
    let plus = plus || (plus_heuristic && memchr(b' ', b).is_none());
    run.clear();
    let mut tf = Transforms::NONE;
    let mut i = 0;
    let mut lit = 0; // start of the pending literal text
    while i < b.len() {
        let c = b[i];
        if c == b'%' {
            if let Some(v) = hex_n(&b[i + 1..], 2) {
                out.push_str(&s[lit..i]);
                run.push(v as u8);
                i += 3;
                lit = i;
                continue;
            }
            if matches!(b.get(i + 1), Some(b'u' | b'U')) {
                if let Some(v) = hex_n(&b[i + 2..], 4) {
                    let mut used = 6;
                    let mut ch = None;
                    if (0xD800..0xDC00).contains(&v) {
                        if b.get(i + 6) == Some(&b'%') && matches!(b.get(i + 7), Some(b'u' | b'U')) {
                            if let Some(lo @ 0xDC00..=0xDFFF) = hex_n(&b[i + 8..], 4) {
                                ch = char::from_u32(0x10000 + ((v - 0xD800) << 10) + (lo - 0xDC00));
                                used = 12;
                            }
                        }
                    } else if (0xFF01..=0xFF5E).contains(&v) {
                        ch = char::from_u32(v - 0xFEE0);
                    } else {
                        ch = char::from_u32(v);
                    }
                    if let Some(ch) = ch {
                        out.push_str(&s[lit..i]);
                        flush_run(run, out, &mut tf);
                        out.push(ch);
                        tf |= Transforms::URL_UNICODE;
                        i += used;
                        lit = i;
                        continue;
                    }
                }
            }
        }
        if !run.is_empty() {
            flush_run(run, out, &mut tf);
        }
        if c == b'+' && plus {
            out.push_str(&s[lit..i]);
            out.push(' ');
            tf |= Transforms::PLUS;
            i += 1;
            lit = i;
            continue;
        }
        i += 1;
    }
    out.push_str(&s[lit..]);
    flush_run(run, out, &mut tf);
    if !(tf.contains(Transforms::URL) || tf.contains(Transforms::URL_UNICODE) || plus_forced && tf.contains(Transforms::PLUS)) {
        return Transforms::NONE;
    }
    tf
}

/// Percent-decode `s` once as the transport does (query, form and path values, cookies):
/// `%XX` decoded, `+` as a space when `plus`; invalid sequences and overlong forms handled as
/// in [`url_layer`]. Returns `s` itself (no copy) when there is nothing to decode.
pub fn transport_decode<'a>(s: &'a str, plus: bool, out: &'a mut String, run: &mut Vec<u8>) -> &'a str {
    out.clear();
    if plus && memchr(b'%', s.as_bytes()).is_none() && memchr(b'+', s.as_bytes()).is_some() {
        out.extend(s.chars().map(|c| if c == '+' { ' ' } else { c }));
        return out;
    }
    if url_layer(s, plus, false, out, run).is_empty() {
        // Pluses alone (handled above) or nothing decodable.
        return s;
    }
    out
}

/// Named character references: the HTML ones that matter for markup and script (and a few
/// common typographic ones). `(name, text)`; names are case-sensitive. [`entity`] looks a name
/// up (a `match`, generated from the same list).
macro_rules! entities {
    ($(($name:literal, $text:literal)),* $(,)?) => {
        #[cfg(test)]
        const ENTITIES: &[(&str, &str)] = &[$(($name, $text)),*];

        /// The text of the named reference `name` (of the list below): a `match` dispatched on
        /// the length, not a search of the list (prose with `&rsquo;` and `&ldquo;` pays one
        /// comparison or two per reference instead of dozens).
        fn entity(name: &str) -> Option<&'static str> {
            match name {
                $($name => Some($text),)*
                _ => None,
            }
        }
    };
}

entities![
    ("lt", "<"),
    ("gt", ">"),
    ("amp", "&"),
    ("quot", "\""),
    ("apos", "'"),
    ("nbsp", "\u{a0}"),
    ("LT", "<"),
    ("GT", ">"),
    ("AMP", "&"),
    ("QUOT", "\""),
    ("Tab", "\t"),
    ("NewLine", "\n"),
    ("colon", ":"),
    ("sol", "/"),
    ("bsol", "\\"),
    ("lpar", "("),
    ("rpar", ")"),
    ("semi", ";"),
    ("comma", ","),
    ("period", "."),
    ("excl", "!"),
    ("num", "#"),
    ("dollar", "$"),
    ("percnt", "%"),
    ("lsqb", "["),
    ("rsqb", "]"),
    ("lbrack", "["),
    ("rbrack", "]"),
    ("lcub", "{"),
    ("rcub", "}"),
    ("lbrace", "{"),
    ("rbrace", "}"),
    ("grave", "`"),
    ("DiacriticalGrave", "`"),
    ("equals", "="),
    ("plus", "+"),
    ("ast", "*"),
    ("midast", "*"),
    ("quest", "?"),
    ("commat", "@"),
    ("verbar", "|"),
    ("vert", "|"),
    ("VerticalLine", "|"),
    ("lowbar", "_"),
    ("UnderBar", "_"),
    ("Hat", "^"),
    ("hyphen", "\u{2010}"),
    ("copy", "\u{a9}"),
    ("reg", "\u{ae}"),
    ("hellip", "\u{2026}"),
    ("mdash", "\u{2014}"),
    ("ndash", "\u{2013}"),
    ("laquo", "\u{ab}"),
    ("raquo", "\u{bb}"),
    ("lsquo", "\u{2018}"),
    ("rsquo", "\u{2019}"),
    ("ldquo", "\u{201c}"),
    ("rdquo", "\u{201d}"),
    ("euro", "\u{20ac}"),
    ("shy", "\u{ad}"),
    ("zwj", "\u{200d}"),
    ("zwnj", "\u{200c}"),
];

/// Entities browsers also accept without `;` (longest first), even as a prefix of a longer
/// run of letters (`&ltscript` reads as `<script`).
const LEGACY: &[(&str, &str)] =
    &[("quot", "\""), ("QUOT", "\""), ("nbsp", "\u{a0}"), ("amp", "&"), ("AMP", "&"), ("lt", "<"), ("LT", "<"), ("gt", ">"), ("GT", ">")];

/// One pass of HTML character reference decoding. Returns [`Transforms::HTML`] when
/// something was decoded.
pub fn html_layer(s: &str, out: &mut String) -> Transforms {
    let b = s.as_bytes();
    if memchr(b'&', b).is_none() {
        return Transforms::NONE;
    }
    let mut changed = false;
    let mut i = 0;
    let mut lit = 0;
    while let Some(off) = memchr(b'&', &b[i..]) {
        let amp = i + off;
        i = amp + 1;
        let Some((text, used)) = html_ref(&b[amp + 1..]) else { continue };
        out.push_str(&s[lit..amp]);
        match text {
            Ref::Char(c) => out.push(c),
            Ref::Str(t) => out.push_str(t),
        }
        i = amp + 1 + used;
        lit = i;
        changed = true;
    }
    out.push_str(&s[lit..]);
    if changed {
        Transforms::HTML
    } else {
        Transforms::NONE
    }
}

enum Ref {
    Char(char),
    Str(&'static str),
}

/// The reference after a `&`: what it stands for and the bytes it used (after the `&`).
fn html_ref(b: &[u8]) -> Option<(Ref, usize)> {
    if b.first() == Some(&b'#') {
        let (radix, start) = if matches!(b.get(1), Some(b'x' | b'X')) { (16, 2) } else { (10, 1) };
        let mut i = start;
        let mut v: u32 = 0;
        while let Some(d) = b.get(i).and_then(|&c| if radix == 16 { hex(c) } else { c.is_ascii_digit().then(|| (c - b'0') as u32) }) {
            v = v.saturating_mul(radix).saturating_add(d);
            i += 1;
        }
        if i == start {
            return None;
        }
        if b.get(i) == Some(&b';') {
            i += 1;
        }
        let c = char::from_u32(v).filter(|&c| c != '\0')?;
        return Some((Ref::Char(c), i));
    }
    let n = b.iter().take(32).take_while(|c| c.is_ascii_alphanumeric()).count();
    if n == 0 {
        return None;
    }
    let name = std::str::from_utf8(&b[..n]).ok()?;
    if b.get(n) == Some(&b';') {
        if let Some(t) = entity(name) {
            return Some((Ref::Str(t), n + 1));
        }
    }
    LEGACY.iter().find(|(k, _)| name.starts_with(k)).map(|(k, t)| (Ref::Str(t), k.len()))
}

/// One pass of JavaScript (`\xHH`, `\uHHHH` with surrogate pairs, `\u{H..}`) and CSS (`\H..`
/// of two to six hex digits naming a printable ASCII character, one optional whitespace
/// after) escapes. `\\` is kept as written (an escaped backslash). CSS escapes are limited to
/// printable ASCII so that Windows paths (`C:\dev\be`) are not mangled.
pub fn escape_layer(s: &str, out: &mut String) -> Transforms {
    let b = s.as_bytes();
    if memchr(b'\\', b).is_none() {
        return Transforms::NONE;
    }
    let mut tf = Transforms::NONE;
    let mut i = 0;
    let mut lit = 0;
    while let Some(off) = memchr(b'\\', &b[i..]) {
        let bs = i + off;
        i = bs + 1;
        let rest = &b[bs + 1..];
        let (ch, used, t) = match rest.first() {
            Some(b'\\') => {
                i = bs + 2;
                continue;
            }
            Some(b'x') => match hex_n(&rest[1..], 2).and_then(char::from_u32) {
                Some(c) => (c, 3, Transforms::JS),
                None => continue,
            },
            Some(b'u') if rest.get(1) == Some(&b'{') => {
                let n = rest[2..].iter().take(7).take_while(|&&c| hex(c).is_some()).count();
                if n == 0 || n > 6 || rest.get(2 + n) != Some(&b'}') {
                    continue;
                }
                match hex_n(&rest[2..], n).and_then(char::from_u32) {
                    Some(c) => (c, 3 + n, Transforms::JS),
                    None => continue,
                }
            }
            Some(b'u') => {
                let Some(v) = hex_n(&rest[1..], 4) else { continue };
                if (0xD800..0xDC00).contains(&v) {
                    if rest.get(5) == Some(&b'\\') && rest.get(6) == Some(&b'u') {
                        if let Some(lo @ 0xDC00..=0xDFFF) = hex_n(&rest[7..], 4) {
                            if let Some(c) = char::from_u32(0x10000 + ((v - 0xD800) << 10) + (lo - 0xDC00)) {
                                (c, 11, Transforms::JS)
                            } else {
                                continue;
                            }
                        } else {
                            continue;
                        }
                    } else {
                        continue;
                    }
                } else {
                    match char::from_u32(v) {
                        Some(c) => (c, 5, Transforms::JS),
                        None => continue,
                    }
                }
            }
            Some(&c) if hex(c).is_some() => {
                let n = rest.iter().take(6).take_while(|&&c| hex(c).is_some()).count();
                let v = hex_n(rest, n).unwrap_or(0);
                if n < 2 || !(0x20..0x7F).contains(&v) {
                    continue;
                }
                let mut used = n;
                match rest.get(n) {
                    Some(b' ' | b'\t' | b'\n' | b'\x0c') => used += 1,
                    Some(b'\r') => used += if rest.get(n + 1) == Some(&b'\n') { 2 } else { 1 },
                    _ => {}
                }
                (v as u8 as char, used, Transforms::CSS)
            }
            _ => continue,
        };
        out.push_str(&s[lit..bs]);
        out.push(ch);
        tf |= t;
        i = bs + 1 + used;
        lit = i;
    }
    out.push_str(&s[lit..]);
    tf
}

fn b64_value(c: u8) -> Option<u32> {
    Some(match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' | b'-' => 62,
        b'/' | b'_' => 63,
        _ => return None,
    } as u32)
}

/// Minimum length of a value considered for base64 decoding.
pub const BASE64_MIN_LEN: usize = 12;

/// The base64 value of each byte (both alphabets); `0xFF`: not in the alphabet (also read by
/// `path::b64_gate`).
pub(crate) static B64_VALUE: [u8; 256] = {
    let mut t = [0xFFu8; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        t[c] = match b {
            b'A'..=b'Z' => b - b'A',
            b'a'..=b'z' => b - b'a' + 26,
            b'0'..=b'9' => b - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => 0xFF,
        };
        c += 1;
    }
    t
};

/// Whether decoded bytes starting with `p` can never be NUL-free valid UTF-8: a NUL among
/// them, or a UTF-8 error within them (a byte that starts no character, a lead byte without
/// its continuation). A necessary condition only (a lead byte's finer ranges are left to the
/// full check).
#[inline]
fn cannot_start_text(p: [u8; 3]) -> bool {
    let bad_lead = |c: u8| matches!(c, 0 | 0x80..=0xC1 | 0xF5..=0xFF);
    let cont = |c: u8| (0x80..=0xBF).contains(&c);
    if p.contains(&0) || bad_lead(p[0]) {
        return true;
    }
    if p[0] >= 0x80 {
        // A lead byte: the next is a continuation.
        return !cont(p[1]);
    }
    if bad_lead(p[1]) {
        return true;
    }
    p[1] >= 0x80 && !cont(p[2])
}

/// Base64 (standard or URL-safe alphabet, padding optional) of mostly printable UTF-8 text
/// (at least 90% of the characters printable or whitespace, no NUL): the text in `out`.
pub fn base64_candidate(s: &str, bytes: &mut Vec<u8>, out: &mut String) -> bool {
    out.clear();
    let t = s.trim_end_matches('=');
    if t.len() < BASE64_MIN_LEN || s.len() - t.len() > 2 || t.len() % 4 == 1 {
        return false;
    }
    // The first three bytes it decodes to (every length here has a first quad), before any
    // pass over the whole: most ids, hashes and slugs of the base64 alphabet decode to bytes
    // that are not UTF-8 from the first ones (or a character outside the alphabet), and every
    // check below would say no.
    if let [a, b, c, d, ..] = *t.as_bytes() {
        let (a, b, c, d) = (B64_VALUE[a as usize], B64_VALUE[b as usize], B64_VALUE[c as usize], B64_VALUE[d as usize]);
        if (a | b | c | d) & 0x80 != 0 {
            return false;
        }
        let q = (a as u32) << 18 | (b as u32) << 12 | (c as u32) << 6 | d as u32;
        if cannot_start_text([(q >> 16) as u8, (q >> 8) as u8, q as u8]) {
            return false;
        }
    }
    base64_checked(t, bytes, out)
}

/// The checks of [`base64_candidate`] on `t` (without padding; its length checked).
fn base64_checked(t: &str, bytes: &mut Vec<u8>, out: &mut String) -> bool {
    // Words and numbers are valid base64 too: require some mix that encoders produce.
    let tb = t.as_bytes();
    let (mut upper, mut lower, mut digit) = (false, false, false);
    for &c in tb {
        upper |= c.is_ascii_uppercase();
        lower |= c.is_ascii_lowercase();
        digit |= c.is_ascii_digit();
    }
    if !(upper && lower) && !(digit && (upper || lower)) {
        return false;
    }
    bytes.clear();
    let mut acc = 0u32;
    let mut nbits = 0;
    for &c in tb {
        let Some(v) = b64_value(c) else { return false };
        acc = acc << 6 | v;
        nbits += 6;
        if nbits >= 8 {
            nbits -= 8;
            bytes.push((acc >> nbits) as u8);
            acc &= (1 << nbits) - 1;
        }
    }
    let Ok(text) = std::str::from_utf8(bytes) else { return false };
    let mut total = 0usize;
    let mut printable = 0usize;
    for c in text.chars() {
        total += 1;
        if c == '\0' {
            return false;
        }
        if !c.is_control() || matches!(c, '\n' | '\r' | '\t') {
            printable += 1;
        }
    }
    if total < 4 || printable * 10 < total * 9 {
        return false;
    }
    out.push_str(text);
    true
}

/// What [`normalize_path`] saw.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PathInfo {
    /// `..` segments (and longer runs of dots) that climbed above the start.
    pub above_root: usize,
    /// All `..`-like segments.
    pub dot_dot: usize,
    /// Backslashes read as separators.
    pub backslashes: bool,
    /// Encoded separators or dots (`%2f`, `%5c`, `%2e`, overlong forms) decoded.
    pub encoded: bool,
    /// The path starts at a root (`/`, `\`, `C:\`, `\\host`).
    pub absolute: bool,
}

/// Normalise a path-like value into `out`: encoded separators and dots decoded (`%2f`,
/// `%5c`, `%2e`, `%c0%af`, `%c1%9c`, `%e0%80%af`, `%u2215`...), backslashes read as `/`,
/// repeated separators collapsed, `.` segments removed, `..` segments resolved (a `..`
/// above the start is counted in [`PathInfo::above_root`] and dropped). Segments of three or
/// more dots count as `..` (IIS and some Windows APIs strip trailing dots). Linear.
pub fn normalize_path(s: &str, out: &mut String) -> PathInfo {
    let mut info = PathInfo::default();
    // Pass 1: decode separators and dots into `tmp`.
    let mut tmp = String::with_capacity(s.len());
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'%' {
            let decoded = match (hex_n(&b[i + 1..], 2), b.get(i + 1)) {
                (Some(0x2F), _) => Some(('/', 3)),
                (Some(0x5C), _) => Some(('\\', 3)),
                (Some(0x2E), _) => Some(('.', 3)),
                (Some(v @ (0xC0 | 0xC1 | 0xE0)), _) => {
                    // %c0%af, %c1%9c, %e0%80%af
                    let mut raw = [v as u8, 0, 0];
                    let mut n = 1;
                    let mut j = i + 3;
                    while n < 3 && b.get(j) == Some(&b'%') {
                        match hex_n(&b[j + 1..], 2) {
                            Some(x) => {
                                raw[n] = x as u8;
                                n += 1;
                                j += 3;
                            }
                            None => break,
                        }
                    }
                    overlong(&raw[..n]).filter(|(c, _)| matches!(c, '/' | '\\' | '.')).map(|(c, used)| (c, 3 * used))
                }
                (None, Some(b'u' | b'U')) => match hex_n(&b[i + 2..], 4) {
                    Some(0x2215 | 0x2044 | 0xFF0F) => Some(('/', 6)),
                    Some(0x2216 | 0xFF3C) => Some(('\\', 6)),
                    Some(0xFF0E) => Some(('.', 6)),
                    _ => None,
                },
                _ => None,
            };
            if let Some((ch, used)) = decoded {
                tmp.push(ch);
                info.encoded = true;
                i += used;
                continue;
            }
        }
        let ch_len = utf8_len(c);
        tmp.push_str(&s[i..(i + ch_len).min(s.len())]);
        i += ch_len;
    }
    if tmp.contains('\\') {
        info.backslashes = true;
    }
    let t = tmp.as_str();
    let tb = t.as_bytes();
    info.absolute =
        tb.first().is_some_and(|&c| c == b'/' || c == b'\\') || (tb.len() > 2 && tb[0].is_ascii_alphabetic() && tb[1] == b':' && matches!(tb[2], b'/' | b'\\'));
    // Pass 2: segments.
    out.clear();
    let mut stack: Vec<(usize, usize)> = Vec::new(); // segment spans in `t`
    for seg in t.split(['/', '\\']) {
        if seg.is_empty() || seg == "." {
            continue;
        }
        if seg.len() >= 2 && seg.bytes().all(|c| c == b'.') {
            info.dot_dot += 1;
            if stack.pop().is_none() {
                info.above_root += 1;
            }
            continue;
        }
        let start = seg.as_ptr() as usize - t.as_ptr() as usize;
        stack.push((start, start + seg.len()));
    }
    if info.absolute {
        out.push('/');
    }
    for _ in 0..info.above_root {
        out.push_str("../");
    }
    for (k, &(a, z)) in stack.iter().enumerate() {
        if k > 0 {
            out.push('/');
        }
        out.push_str(&t[a..z]);
    }
    info
}

fn utf8_len(b: u8) -> usize {
    match b {
        0..=0x7F => 1,
        0xC0..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF7 => 4,
        _ => 1,
    }
}
