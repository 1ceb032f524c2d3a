//! Reading a parsed document: [`ValueRef`] (a value on the tape), its members and items,
//! strings unescaped on demand.

use std::borrow::Cow;

use crate::lex::hex4;
use crate::{Kind, Tape, Token, F_ESCAPED, F_EXP, F_FRAC, F_TRUE};

impl Tape {
    /// The document's root value. `input` must be the bytes that were parsed into this tape.
    ///
    /// # Panics
    /// If the tape is empty (the last parse failed or there was none) or `input` has another
    /// length than the parsed input.
    pub fn root<'t>(&'t self, input: &'t [u8]) -> ValueRef<'t> {
        assert!(!self.tokens.is_empty(), "palisade-json: no document on the tape");
        assert_eq!(input.len(), self.input_len, "palisade-json: Tape::root called with other bytes than were parsed");
        ValueRef { tape: self, input, idx: 0 }
    }

    /// Number of tokens (values and keys) of the parsed document.
    #[inline]
    pub fn token_count(&self) -> usize {
        self.tokens.len()
    }

    /// The value at token index `idx` (as given by [`ValueRef::index`]).
    #[inline]
    pub fn get<'t>(&'t self, input: &'t [u8], idx: u32) -> ValueRef<'t> {
        assert!((idx as usize) < self.tokens.len());
        assert_eq!(input.len(), self.input_len);
        ValueRef { tape: self, input, idx }
    }
}

/// A value (or object key) on a tape.
#[derive(Clone, Copy)]
pub struct ValueRef<'t> {
    tape: &'t Tape,
    input: &'t [u8],
    idx: u32,
}

impl std::fmt::Debug for ValueRef<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let raw = self.raw();
        let shown = &raw[..raw.len().min(64)];
        write!(f, "ValueRef({:?} #{} {:?})", self.kind(), self.idx, String::from_utf8_lossy(shown))
    }
}

impl<'t> ValueRef<'t> {
    #[inline(always)]
    fn tok(&self) -> &'t Token {
        &self.tape.tokens[self.idx as usize]
    }

    #[inline]
    pub fn kind(&self) -> Kind {
        self.tok().kind
    }

    /// Index of this token on the tape (stable for the life of the parse).
    #[inline]
    pub fn index(&self) -> u32 {
        self.idx
    }

    /// Index of the first token after this value's subtree.
    #[inline]
    pub fn next_index(&self) -> u32 {
        let t = self.tok();
        match t.kind {
            Kind::Array | Kind::Object => t.next,
            _ => self.idx + 1,
        }
    }

    /// The span of the input: string contents without the quotes (still escaped), number and
    /// literal text, containers from bracket to bracket.
    #[inline]
    pub fn raw(&self) -> &'t [u8] {
        let t = self.tok();
        &self.input[t.start as usize..t.end as usize]
    }

    /// Byte offset of the value in the input (for strings, of the first content byte).
    #[inline]
    pub fn offset(&self) -> usize {
        self.tok().start as usize
    }

    /// Whether this string contains backslash escapes (when not, `raw()` is its UTF-8 text).
    #[inline]
    pub fn has_escapes(&self) -> bool {
        self.tok().flags & F_ESCAPED != 0
    }

    /// The string's value, unescaped (borrowed when there is no escape). `None` if not a string.
    pub fn as_str(&self) -> Option<Cow<'t, str>> {
        let t = self.tok();
        if t.kind != Kind::String {
            return None;
        }
        let raw = self.raw();
        if t.flags & F_ESCAPED == 0 {
            // Validated at parse time; this cannot fail.
            return std::str::from_utf8(raw).ok().map(Cow::Borrowed);
        }
        Some(Cow::Owned(unescape(raw)))
    }

    #[inline]
    pub fn as_bool(&self) -> Option<bool> {
        let t = self.tok();
        (t.kind == Kind::Bool).then_some(t.flags & F_TRUE != 0)
    }

    #[inline]
    pub fn is_null(&self) -> bool {
        self.tok().kind == Kind::Null
    }

    /// The number's text as written (`-1.5e3`). `None` if not a number.
    #[inline]
    pub fn number_text(&self) -> Option<&'t str> {
        if self.tok().kind != Kind::Number {
            return None;
        }
        std::str::from_utf8(self.raw()).ok()
    }

    /// Whether the number is written without fraction and exponent.
    #[inline]
    pub fn is_integer_text(&self) -> bool {
        let t = self.tok();
        t.kind == Kind::Number && t.flags & (F_FRAC | F_EXP) == 0
    }

    /// The number as an `i64`, when written as an integer (no fraction, no exponent) that fits.
    pub fn as_i64(&self) -> Option<i64> {
        if !self.is_integer_text() {
            return None;
        }
        self.number_text()?.parse().ok()
    }

    /// The number as the nearest `f64` (infinite when beyond its range).
    pub fn as_f64(&self) -> Option<f64> {
        self.number_text()?.parse().ok()
    }

    /// Members (objects) or items (arrays); 0 for scalars.
    #[inline]
    pub fn len(&self) -> usize {
        let t = self.tok();
        match t.kind {
            Kind::Array | Kind::Object => t.count as usize,
            _ => 0,
        }
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Object members as `(key, value)` in document order; keys are string values. Empty for
    /// non-objects.
    #[inline]
    pub fn members(&self) -> Members<'t> {
        let t = self.tok();
        let (cur, end) = if t.kind == Kind::Object { (self.idx + 1, t.next) } else { (0, 0) };
        Members { tape: self.tape, input: self.input, cur, end }
    }

    /// Array items in order. Empty for non-arrays.
    #[inline]
    pub fn items(&self) -> Items<'t> {
        let t = self.tok();
        let (cur, end) = if t.kind == Kind::Array { (self.idx + 1, t.next) } else { (0, 0) };
        Items { tape: self.tape, input: self.input, cur, end }
    }

    /// Member `name` of an object (the first one with that unescaped key).
    #[inline]
    pub fn get(&self, name: &str) -> Option<ValueRef<'t>> {
        self.members().find(|(k, _)| k.str_eq(name)).map(|(_, v)| v)
    }

    /// Whether this string's value equals `s` (without allocating when there is no escape).
    #[inline]
    pub fn str_eq(&self, s: &str) -> bool {
        let t = self.tok();
        if t.kind != Kind::String {
            return false;
        }
        if t.flags & F_ESCAPED == 0 {
            self.raw() == s.as_bytes()
        } else {
            self.as_str().is_some_and(|v| v == s)
        }
    }
}

/// Iterator over an object's members.
#[derive(Clone, Debug)]
pub struct Members<'t> {
    tape: &'t Tape,
    input: &'t [u8],
    cur: u32,
    end: u32,
}

impl<'t> Iterator for Members<'t> {
    type Item = (ValueRef<'t>, ValueRef<'t>);
    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.cur >= self.end {
            return None;
        }
        let key = ValueRef { tape: self.tape, input: self.input, idx: self.cur };
        let value = ValueRef { tape: self.tape, input: self.input, idx: self.cur + 1 };
        self.cur = value.next_index();
        Some((key, value))
    }
}

/// Iterator over an array's items.
#[derive(Clone, Debug)]
pub struct Items<'t> {
    tape: &'t Tape,
    input: &'t [u8],
    cur: u32,
    end: u32,
}

impl<'t> Iterator for Items<'t> {
    type Item = ValueRef<'t>;
    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.cur >= self.end {
            return None;
        }
        let v = ValueRef { tape: self.tape, input: self.input, idx: self.cur };
        self.cur = v.next_index();
        Some(v)
    }
}

/// Decode the escapes of validated string contents.
pub(crate) fn unescape(raw: &[u8]) -> String {
    let mut out = Vec::with_capacity(raw.len());
    unescape_into(raw, &mut out);
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// Append the decoded contents of validated string contents `raw` to `out`: the plain runs
/// between escapes copied whole (not byte by byte).
pub(crate) fn unescape_into(raw: &[u8], out: &mut Vec<u8>) {
    let mut i = 0;
    while i < raw.len() {
        let run = raw.get(i..).and_then(|r| r.iter().position(|&b| b == b'\\')).map_or(raw.len(), |k| i + k);
        out.extend_from_slice(raw.get(i..run).unwrap_or_default());
        i = run;
        if i >= raw.len() {
            break;
        }
        i = unescape_one(raw, i, out);
    }
}

/// Appends the character of the escape at `raw[i]` (a `\\`; the text is valid JSON) to `out`
/// and returns the index past it (a `\\uD8xx\\uDCxx` pair is one character).
#[inline(always)]
pub(crate) fn unescape_one(raw: &[u8], mut i: usize, out: &mut Vec<u8>) -> usize {
    let e = raw[i + 1];
    i += 2;
    let c = match e {
        b'"' => '"',
        b'\\' => '\\',
        b'/' => '/',
        b'b' => '\u{8}',
        b'f' => '\u{c}',
        b'n' => '\n',
        b'r' => '\r',
        b't' => '\t',
        _ => {
            let hi = hex4(raw, i).unwrap_or(0xFFFD);
            i += 4;
            let cp = if (0xD800..0xDC00).contains(&hi) {
                let lo = hex4(raw, i + 2).unwrap_or(0xDC00);
                i += 6;
                0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
            } else {
                hi
            };
            char::from_u32(cp).unwrap_or('\u{FFFD}')
        }
    };
    let mut buf = [0u8; 4];
    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
    i
}
