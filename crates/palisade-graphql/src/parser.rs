//! A recursive-descent parser for executable GraphQL documents (the grammar of the GraphQL
//! specification, October 2021 edition: §2 "Language", operations and fragments; type system
//! definitions are refused), building the borrowed tree of [`crate::doc`] directly from the
//! text in one pass: names, numbers and strings without escapes are slices of the request, a
//! string with escapes is decoded into an owned value.
//!
//! It replaces a general-purpose lossless parser on the request path: that one builds a full
//! syntax tree (every token and every piece of whitespace a node) that was then converted into
//! this tree, which cost most of the time of judging a new document. Schemas (SDL) are still
//! parsed with `apollo-parser` ([`crate::schema`]), once at load. The grammar here is checked
//! against `apollo-parser` by a differential test on real and broken queries.
//!
//! Bounds: nesting of selection sets, lists, input objects and list types together is at most
//! [`NESTING_LIMIT`] (deeper is an [`ErrorKind::Limit`], never a deep recursion); the number of
//! tokens is at most the caller's `token_limit`.

use std::borrow::Cow;

use crate::doc::{
    line_col, Args, Definition, Directive, Dirs, Document, Field, Fragment, OpKind, Operation, Selection, Set, TypeRef, Value, VarDef, NESTING_LIMIT,
};
use crate::{Error, ErrorKind};

/// Parse an executable document.
pub fn parse(src: &str, token_limit: usize) -> Result<Document<'_>, Error> {
    document(src, token_limit).map_err(|e| *e)
}

/// The parser's results: the error boxed, so that the result of reading a token or a node is
/// as small as its value (the error is the rare, cold path).
type PResult<T> = Result<T, Box<Error>>;

fn document(src: &str, token_limit: usize) -> PResult<Document<'_>> {
    let mut p = Parser {
        src,
        b: src.as_bytes(),
        pos: 0,
        tok: Tok { t: T::Eof, start: 0, end: 0 },
        depth: 0,
        tokens: 0,
        token_limit,
        done: Vec::with_capacity(src.len() / 16),
        next: Vec::with_capacity(src.len() / 16),
        args: Vec::with_capacity(src.len() / 64),
        dirs: Vec::new(),
        strings: 0,
        owner: Definition::Operation(0),
        spreads: Vec::new(),
    };
    p.advance()?;
    let mut doc = Document::default();
    while p.tok.t != T::Eof {
        match p.tok.t {
            T::Punct(b'{') => {
                p.owner = Definition::Operation(doc.operations.len() as u32);
                let selections = p.selection_set()?;
                doc.operations.push(Operation { kind: OpKind::Query, name: None, variables: Vec::new(), directives: Dirs::default(), selections });
            }
            T::Name => {
                p.owner = match p.text() {
                    "fragment" => Definition::Fragment(doc.fragments.len() as u32),
                    _ => Definition::Operation(doc.operations.len() as u32),
                };
                match p.text() {
                    "query" => doc.operations.push(p.operation(OpKind::Query)?),
                    "mutation" => doc.operations.push(p.operation(OpKind::Mutation)?),
                    "subscription" => doc.operations.push(p.operation(OpKind::Subscription)?),
                    "fragment" => doc.fragments.push(p.fragment()?),
                    "schema" | "scalar" | "type" | "interface" | "union" | "enum" | "input" | "directive" | "extend" => {
                        return Err(p.error_at(p.tok.start, format!("a request holds operations and fragments only, not a `{}` definition", p.text())));
                    }
                    _ => return Err(p.unexpected("an operation or a fragment")),
                }
            }
            T::Str | T::Block => return Err(p.error_at(p.tok.start, "a request holds operations and fragments only, not described type definitions")),
            _ => return Err(p.unexpected("an operation or a fragment")),
        }
    }
    if doc.operations.is_empty() {
        return Err(Box::new(Error::new(ErrorKind::Syntax, "the document holds no operation")));
    }
    doc.selections = p.done;
    doc.next = p.next;
    doc.arguments = p.args;
    doc.directives = p.dirs;
    doc.spreads = p.spreads;
    Ok(doc)
}

/// Byte classes of the lexical grammar (§2.1), by byte: white space, line terminators and
/// commas (`IGNORED`), name characters (`NAME`), and those a name may start with
/// (`NAME_START`).
const IGNORED: u8 = 1;
const NAME: u8 = 2;
const NAME_START: u8 = 4;
static CLASS: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        t[c] = match b {
            b' ' | b'\t' | b'\n' | b'\r' | b',' => IGNORED,
            b'_' | b'a'..=b'z' | b'A'..=b'Z' => NAME | NAME_START,
            b'0'..=b'9' => NAME,
            _ => 0,
        };
        c += 1;
    }
    t
};

/// Token types. Punctuators are their byte (`!$&():=@[]{|}`); `...` is `Spread`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum T {
    Eof,
    Punct(u8),
    Spread,
    Name,
    Int,
    Float,
    /// A string; `Str` with escapes is `StrEsc`.
    Str,
    StrEsc,
    Block,
}

#[derive(Clone, Copy, Debug)]
struct Tok {
    t: T,
    start: usize,
    end: usize,
}

struct Parser<'s> {
    src: &'s str,
    b: &'s [u8],
    pos: usize,
    /// The current token (one token of lookahead).
    tok: Tok,
    depth: usize,
    tokens: usize,
    token_limit: usize,
    /// Selections read, in document order, and the link of each to the next of its set: the
    /// document's.
    done: Vec<Selection<'s>>,
    next: Vec<u32>,
    /// Arguments of the fields and directives read, each list contiguous (values hold no
    /// arguments, so lists never interleave): the document's.
    args: Vec<(&'s str, Value<'s>)>,
    /// Directives read, each list contiguous: the document's.
    dirs: Vec<Directive<'s>>,
    /// String literals read so far.
    strings: usize,
    /// The definition being read, and the spreads read.
    owner: Definition,
    spreads: Vec<(Definition, &'s str)>,
}

fn describe(t: T) -> &'static str {
    match t {
        T::Eof => "the end of the document",
        T::Punct(_) | T::Spread => "punctuation",
        T::Name => "a name",
        T::Int => "an integer",
        T::Float => "a float",
        T::Str | T::StrEsc | T::Block => "a string",
    }
}

impl<'s> Parser<'s> {
    #[cold]
    fn error_at(&self, offset: usize, message: impl Into<String>) -> Box<Error> {
        let (line, col) = line_col(self.src, offset);
        Box::new(Error::new(ErrorKind::Syntax, format!("{} at line {line}, column {col}", message.into())))
    }

    /// An error about the current token: `expected` was expected.
    #[cold]
    fn unexpected(&self, expected: &str) -> Box<Error> {
        let found = match self.tok.t {
            T::Punct(_) | T::Spread | T::Name => format!("`{}`", self.text()),
            t => describe(t).to_string(),
        };
        self.error_at(self.tok.start, format!("expected {expected}, found {found}"))
    }

    fn text(&self) -> &'s str {
        &self.src[self.tok.start..self.tok.end]
    }

    // -----------------------------------------------------------------------------------------
    // Lexing (§2.1).

    /// Read the next token into `self.tok`, skipping ignored tokens (white space, line
    /// terminators, commas, comments, a byte order mark).
    fn advance(&mut self) -> PResult<()> {
        let b = self.b;
        let mut i = self.pos;
        loop {
            while b.get(i).is_some_and(|&c| CLASS[c as usize] & IGNORED != 0) {
                i += 1;
            }
            match b.get(i) {
                Some(b'#') => {
                    while i < b.len() && b[i] != b'\n' && b[i] != b'\r' {
                        i += 1;
                    }
                }
                Some(0xEF) if b[i..].starts_with("\u{FEFF}".as_bytes()) => i += 3,
                _ => break,
            }
        }
        let start = i;
        let t = match b.get(i) {
            None => T::Eof,
            Some(&c @ (b'!' | b'$' | b'&' | b'(' | b')' | b':' | b'=' | b'@' | b'[' | b']' | b'{' | b'|' | b'}')) => {
                i += 1;
                T::Punct(c)
            }
            Some(b'.') => {
                if !b[i..].starts_with(b"...") {
                    return Err(self.error_at(i, "expected `...`"));
                }
                i += 3;
                T::Spread
            }
            Some(&c) if CLASS[c as usize] & NAME_START != 0 => {
                i += 1;
                while b.get(i).is_some_and(|&c| CLASS[c as usize] & NAME != 0) {
                    i += 1;
                }
                T::Name
            }
            Some(c) if c.is_ascii_digit() || *c == b'-' => {
                let (t, end) = self.number(i)?;
                i = end;
                t
            }
            Some(b'"') => {
                let (t, end) = self.string(i)?;
                i = end;
                t
            }
            Some(_) => {
                let c = self.src[i..].chars().next().unwrap_or('\u{FFFD}');
                return Err(self.error_at(i, format!("unexpected character {c:?}")));
            }
        };
        if t != T::Eof {
            self.tokens += 1;
            if self.tokens > self.token_limit {
                return Err(Box::new(Error::new(ErrorKind::Limit, format!("more than {} tokens", self.token_limit))));
            }
        }
        self.pos = i;
        self.tok = Tok { t, start, end: i };
        Ok(())
    }

    /// IntValue or FloatValue (§2.9.1, §2.9.2) starting at `i`.
    fn number(&self, start: usize) -> PResult<(T, usize)> {
        let b = self.b;
        let mut i = start;
        let digits = |mut i: usize| {
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            i
        };
        if b[i] == b'-' {
            i += 1;
        }
        match b.get(i) {
            Some(b'0') => {
                i += 1;
                if b.get(i).is_some_and(u8::is_ascii_digit) {
                    return Err(self.error_at(start, "a number with a leading zero"));
                }
            }
            Some(c) if c.is_ascii_digit() => i = digits(i),
            _ => return Err(self.error_at(start, "a `-` without digits")),
        }
        let mut t = T::Int;
        if b.get(i) == Some(&b'.') {
            let end = digits(i + 1);
            if end == i + 1 {
                return Err(self.error_at(start, "a float without digits after its `.`"));
            }
            i = end;
            t = T::Float;
        }
        if matches!(b.get(i), Some(b'e' | b'E')) {
            i += 1;
            if matches!(b.get(i), Some(b'+' | b'-')) {
                i += 1;
            }
            let end = digits(i);
            if end == i {
                return Err(self.error_at(start, "a float without digits in its exponent"));
            }
            i = end;
            t = T::Float;
        }
        // A number must not be followed by `.` or a name start (`1.2.3`, `12abc`).
        if b.get(i).is_some_and(|c| *c == b'.' || *c == b'_' || c.is_ascii_alphabetic()) {
            return Err(self.error_at(start, "a number followed by a name or a `.`"));
        }
        Ok((t, i))
    }

    /// StringValue (§2.9.4) starting at the `"` at `start`: checked here, decoded by
    /// [`Parser::string_value`].
    fn string(&self, start: usize) -> PResult<(T, usize)> {
        let b = self.b;
        if b[start..].starts_with(b"\"\"\"") {
            let mut i = start + 3;
            loop {
                match b.get(i) {
                    None => return Err(self.error_at(start, "an unterminated block string")),
                    Some(b'\\') if b[i..].starts_with(b"\\\"\"\"") => i += 4,
                    Some(b'"') if b[i..].starts_with(b"\"\"\"") => return Ok((T::Block, i + 3)),
                    Some(_) => i += 1,
                }
            }
        }
        let mut i = start + 1;
        let mut escaped = false;
        loop {
            match b.get(i) {
                None | Some(b'\n' | b'\r') => return Err(self.error_at(start, "an unterminated string")),
                Some(b'"') => return Ok((if escaped { T::StrEsc } else { T::Str }, i + 1)),
                Some(b'\\') => {
                    escaped = true;
                    match b.get(i + 1) {
                        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => i += 2,
                        Some(b'u') => {
                            let (_, end) = self.unicode_escape(i).map_err(|m| self.error_at(i, m))?;
                            i = end;
                        }
                        _ => return Err(self.error_at(i, "an invalid escape sequence in a string")),
                    }
                }
                Some(_) => i += 1,
            }
        }
    }

    /// The escape `\u...` at `i` (`\uXXXX`, a surrogate pair of two of them, or `\u{X...}`):
    /// its character and where it ends.
    fn unicode_escape(&self, i: usize) -> Result<(char, usize), &'static str> {
        let b = self.b;
        let hex4 = |at: usize| -> Option<u32> {
            let h = b.get(at..at + 4)?;
            if !h.iter().all(u8::is_ascii_hexdigit) {
                return None;
            }
            u32::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok()
        };
        if b.get(i + 2) == Some(&b'{') {
            let digits = b[i + 3..].iter().take_while(|c| c.is_ascii_hexdigit()).count();
            if digits == 0 || b.get(i + 3 + digits) != Some(&b'}') {
                return Err("an invalid \\u{...} escape");
            }
            let hex = self.src[i + 3..i + 3 + digits].trim_start_matches('0');
            let c = if hex.len() > 6 { None } else { char::from_u32(u32::from_str_radix(hex, 16).unwrap_or(0)) };
            return c.map(|c| (c, i + 4 + digits)).ok_or("a \\u{...} escape that is not a Unicode scalar value");
        }
        let Some(v) = hex4(i + 2) else { return Err("an invalid \\u escape") };
        match v {
            0xD800..=0xDBFF => {
                let low = if b.get(i + 6..i + 8) == Some(b"\\u") { hex4(i + 8) } else { None };
                match low {
                    Some(lo @ 0xDC00..=0xDFFF) => {
                        let c = 0x10000 + ((v - 0xD800) << 10) + (lo - 0xDC00);
                        char::from_u32(c).map(|c| (c, i + 12)).ok_or("an invalid surrogate pair")
                    }
                    _ => Err("a \\u escape of a lone surrogate"),
                }
            }
            0xDC00..=0xDFFF => Err("a \\u escape of a lone surrogate"),
            v => char::from_u32(v).map(|c| (c, i + 6)).ok_or("an invalid \\u escape"),
        }
    }

    /// The value of the current string token.
    fn string_value(&self) -> Cow<'s, str> {
        let Tok { t, start, end } = self.tok;
        match t {
            T::Str => Cow::Borrowed(&self.src[start + 1..end - 1]),
            T::Block => Cow::Owned(block_string_value(&self.src[start + 3..end - 3])),
            _ => {
                let b = self.b;
                let mut out = String::with_capacity(end - start);
                let mut i = start + 1;
                let mut run = i;
                while i < end - 1 {
                    if b[i] != b'\\' {
                        i += 1;
                        continue;
                    }
                    out.push_str(&self.src[run..i]);
                    let c = b[i + 1];
                    let (ch, next) = match c {
                        b'u' => self.unicode_escape(i).unwrap_or(('\u{FFFD}', i + 2)),
                        b'b' => ('\u{8}', i + 2),
                        b'f' => ('\u{c}', i + 2),
                        b'n' => ('\n', i + 2),
                        b'r' => ('\r', i + 2),
                        b't' => ('\t', i + 2),
                        other => (char::from(other), i + 2),
                    };
                    out.push(ch);
                    i = next;
                    run = i;
                }
                out.push_str(&self.src[run..end - 1]);
                Cow::Owned(out)
            }
        }
    }

    // -----------------------------------------------------------------------------------------
    // Parsing (§2.2 - §2.12).

    fn is(&self, c: u8) -> bool {
        self.tok.t == T::Punct(c)
    }

    fn expect(&mut self, c: u8) -> PResult<()> {
        if !self.is(c) {
            return Err(self.unexpected(&format!("`{}`", char::from(c))));
        }
        self.advance()
    }

    fn name(&mut self) -> PResult<&'s str> {
        if self.tok.t != T::Name {
            return Err(self.unexpected("a name"));
        }
        let n = self.text();
        self.advance()?;
        Ok(n)
    }

    fn enter(&mut self) -> PResult<()> {
        self.depth += 1;
        if self.depth > NESTING_LIMIT {
            return Err(Box::new(Error::new(ErrorKind::Limit, format!("the document nests more than {NESTING_LIMIT} levels deep"))));
        }
        Ok(())
    }

    fn operation(&mut self, kind: OpKind) -> PResult<Operation<'s>> {
        self.advance()?;
        let name = if self.tok.t == T::Name { Some(self.name()?) } else { None };
        let variables = if self.is(b'(') { self.variable_definitions()? } else { Vec::new() };
        let directives = self.directives(false)?;
        let selections = self.selection_set()?;
        Ok(Operation { kind, name, variables, directives, selections })
    }

    fn fragment(&mut self) -> PResult<Fragment<'s>> {
        self.advance()?;
        if self.tok.t == T::Name && self.text() == "on" {
            return Err(self.unexpected("a fragment name (not `on`)"));
        }
        let name = self.name()?;
        if !(self.tok.t == T::Name && self.text() == "on") {
            return Err(self.unexpected("`on`"));
        }
        self.advance()?;
        let on = self.name()?;
        let directives = self.directives(false)?;
        let selections = self.selection_set()?;
        Ok(Fragment { name, on, directives, selections })
    }

    fn variable_definitions(&mut self) -> PResult<Vec<VarDef<'s>>> {
        self.expect(b'(')?;
        let mut out = Vec::new();
        loop {
            self.expect(b'$')?;
            let name = self.name()?;
            self.expect(b':')?;
            let ty = self.ty()?;
            let default = if self.is(b'=') {
                self.advance()?;
                Some(self.value(true)?)
            } else {
                None
            };
            let directives = self.directives(true)?;
            out.push(VarDef { name, ty, default, directives });
            if self.is(b')') {
                self.advance()?;
                return Ok(out);
            }
        }
    }

    fn ty(&mut self) -> PResult<TypeRef<'s>> {
        let t = if self.is(b'[') {
            self.enter()?;
            self.advance()?;
            let inner = self.ty()?;
            self.expect(b']')?;
            self.depth -= 1;
            TypeRef::List(Box::new(inner))
        } else {
            TypeRef::Named(self.name()?)
        };
        if self.is(b'!') {
            self.advance()?;
            return Ok(TypeRef::NonNull(Box::new(t)));
        }
        Ok(t)
    }

    /// Directives, if any (arguments hold no directives, so a list is read in one piece).
    #[inline]
    fn directives(&mut self, constant: bool) -> PResult<Dirs> {
        if !self.is(b'@') {
            return Ok(Dirs::default());
        }
        self.directive_list(constant)
    }

    fn directive_list(&mut self, constant: bool) -> PResult<Dirs> {
        let start = self.dirs.len();
        while self.is(b'@') {
            self.advance()?;
            let name = self.name()?;
            let arguments = if self.is(b'(') { self.arguments(constant)? } else { Args::default() };
            self.dirs.push(Directive { name, arguments });
        }
        Ok(Dirs { start: start as u32, len: (self.dirs.len() - start) as u32 })
    }

    fn arguments(&mut self, constant: bool) -> PResult<Args> {
        self.expect(b'(')?;
        let start = self.args.len();
        loop {
            let name = self.name()?;
            self.expect(b':')?;
            let v = self.value(constant)?;
            self.args.push((name, v));
            if self.is(b')') {
                self.advance()?;
                return Ok(Args { start: start as u32, len: (self.args.len() - start) as u32 });
            }
        }
    }

    fn selection_set(&mut self) -> PResult<Set> {
        self.enter()?;
        self.expect(b'{')?;
        let strings = self.strings;
        let start = self.done.len() as u32;
        let mut len = 0;
        loop {
            let at = self.done.len();
            self.selection()?;
            len += 1;
            if self.is(b'}') {
                self.advance()?;
                self.depth -= 1;
                return Ok(Set { start, len, literals: self.strings > strings });
            }
            // The next selection of this set comes after this one's own.
            self.next[at] = self.done.len() as u32;
        }
    }

    /// Append a selection to the document, then read its set (if any) into its place.
    fn push(&mut self, s: Selection<'s>) -> usize {
        self.done.push(s);
        self.next.push(Set::END);
        self.done.len() - 1
    }

    fn selection(&mut self) -> PResult<()> {
        match self.tok.t {
            T::Spread => {
                self.advance()?;
                let on = self.tok.t == T::Name && self.text() == "on";
                if self.tok.t == T::Name && !on {
                    let name = self.name()?;
                    self.spreads.push((self.owner, name));
                    let directives = self.directives(false)?;
                    self.push(Selection::Spread { name, directives });
                    return Ok(());
                }
                let on = if on {
                    self.advance()?;
                    Some(self.name()?)
                } else {
                    None
                };
                let directives = self.directives(false)?;
                let at = self.push(Selection::Inline { on, directives, selections: Set::default() });
                let set = self.selection_set()?;
                if let Selection::Inline { selections, .. } = &mut self.done[at] {
                    *selections = set;
                }
                Ok(())
            }
            T::Name => {
                let first = self.name()?;
                let (alias, name) = if self.is(b':') {
                    self.advance()?;
                    (Some(first), self.name()?)
                } else {
                    (None, first)
                };
                let arguments = if self.is(b'(') { self.arguments(false)? } else { Args::default() };
                let directives = self.directives(false)?;
                let at = self.push(Selection::Field(Field { alias, name, arguments, directives, selections: Set::default() }));
                if self.is(b'{') {
                    let set = self.selection_set()?;
                    if let Selection::Field(f) = &mut self.done[at] {
                        f.selections = set;
                    }
                }
                Ok(())
            }
            _ => Err(self.unexpected("a field, a fragment spread or an inline fragment")),
        }
    }

    /// A value; `constant`: no variables (default values, directives of variables).
    fn value(&mut self, constant: bool) -> PResult<Value<'s>> {
        let v = match self.tok.t {
            T::Punct(b'$') if !constant => {
                self.advance()?;
                return Ok(Value::Variable(self.name()?));
            }
            T::Int => Value::Int(self.text()),
            T::Float => Value::Float(self.text()),
            T::Str | T::StrEsc | T::Block => {
                self.strings += 1;
                Value::String(self.string_value())
            }
            T::Name => match self.text() {
                "true" => Value::Boolean(true),
                "false" => Value::Boolean(false),
                "null" => Value::Null,
                e => Value::Enum(e),
            },
            T::Punct(b'[') => {
                self.enter()?;
                self.advance()?;
                let mut items = Vec::new();
                while !self.is(b']') {
                    items.push(self.value(constant)?);
                }
                self.advance()?;
                self.depth -= 1;
                return Ok(Value::List(items));
            }
            T::Punct(b'{') => {
                self.enter()?;
                self.advance()?;
                let mut fields = Vec::new();
                while !self.is(b'}') {
                    let name = self.name()?;
                    self.expect(b':')?;
                    fields.push((name, self.value(constant)?));
                }
                self.advance()?;
                self.depth -= 1;
                return Ok(Value::Object(fields));
            }
            _ => return Err(self.unexpected(if constant { "a constant value" } else { "a value" })),
        };
        self.advance()?;
        Ok(v)
    }
}

/// The value of a block string (§2.9.4 `BlockStringValue()`): `\"""` unescaped, the common
/// indentation of the lines after the first removed, leading and trailing blank lines removed,
/// lines joined with `\n`.
fn block_string_value(raw: &str) -> String {
    let raw = raw.replace("\\\"\"\"", "\"\"\"");
    let mut lines: Vec<&str> = Vec::new();
    let mut rest = raw.as_str();
    while let Some(i) = rest.find(['\n', '\r']) {
        lines.push(&rest[..i]);
        let skip = if rest[i..].starts_with("\r\n") { 2 } else { 1 };
        rest = &rest[i + skip..];
    }
    lines.push(rest);
    let indent_of = |l: &str| l.len() - l.trim_start_matches([' ', '\t']).len();
    let common = lines.iter().skip(1).filter(|l| indent_of(l) < l.len()).map(|l| indent_of(l)).min();
    if let Some(common) = common {
        for l in lines.iter_mut().skip(1) {
            *l = &l[common.min(l.len())..];
        }
    }
    let blank = |l: &&str| l.trim_start_matches([' ', '\t']).is_empty();
    let first = lines.iter().position(|l| !blank(l)).unwrap_or(lines.len());
    let last = lines.iter().rposition(|l| !blank(l)).map_or(first, |i| i + 1);
    lines[first..last.max(first)].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(src: &str) -> Document<'_> {
        parse(src, usize::MAX).unwrap_or_else(|e| panic!("{src}: {e}"))
    }

    fn err(src: &str) -> Error {
        match parse(src, usize::MAX) {
            Ok(d) => panic!("{src}: parsed as {d:?}"),
            Err(e) => e,
        }
    }

    fn first_arg<'a>(d: &'a Document<'_>) -> &'a Value<'a> {
        let Some(Selection::Field(f)) = d.set(d.operations[0].selections).next() else { panic!() };
        &d.args(f.arguments)[0].1
    }

    #[test]
    fn strings_are_unescaped_by_the_specification() {
        let cases: &[(&str, &str)] = &[
            (r#""plain""#, "plain"),
            (r#""""#, ""),
            (r#""a\"b\\c\/d\be\ff\ng\rh\ti""#, "a\"b\\c/d\u{8}e\u{c}f\ng\rh\ti"),
            (r#""\u00e9\u20AC""#, "é€"),
            (r#""\uD83D\uDE00""#, "😀"),
            (r#""\u{1F600}\u{e9}\u{0000041}""#, "😀éA"),
            ("\"\"\"\n    first\n      second\n    \"\"\"", "first\n  second"),
            ("\"\"\"  keep\n  a\r\n  b\r  c\n\n\"\"\"", "  keep\na\nb\nc"),
            (r#""""esc \""" quote""""#, "esc \"\"\" quote"),
            ("\"\"\"\"\"\"", ""),
        ];
        for (lit, want) in cases {
            let src = format!("{{ f(a: {lit}) }}");
            let d = ok(&src);
            assert_eq!(first_arg(&d), &Value::String(Cow::Owned(want.to_string())), "{lit}");
        }
        // A plain string borrows from the request.
        let d = ok(r#"{ f(a: "x y") }"#);
        assert!(matches!(first_arg(&d), Value::String(Cow::Borrowed("x y"))));
        for bad in [r#""\x""#, r#""\u12""#, r#""\uD800""#, r#""\uDC00x""#, r#""\u{}""#, r#""\u{110000}""#, r#""\u{D800}""#, "\"a\nb\"", "\"open", "\"\"\"open"]
        {
            let e = err(&format!("{{ f(a: {bad}) }}"));
            assert_eq!(e.kind, ErrorKind::Syntax, "{bad}");
        }
    }

    #[test]
    fn numbers_follow_the_lexical_grammar() {
        for (lit, int) in
            [("0", true), ("-0", true), ("123", true), ("-12", true), ("1.5", false), ("-0.0", false), ("1e10", false), ("1.2E-3", false), ("6e+2", false)]
        {
            let src = format!("{{ f(a: {lit}) }}");
            let d = ok(&src);
            let want = if int { Value::Int(lit) } else { Value::Float(lit) };
            assert_eq!(first_arg(&d), &want);
        }
        for bad in ["01", "-", "1.", ".5", "1e", "1.2.3", "12abc", "0x1F", "1_000", "--1", "+1"] {
            assert_eq!(err(&format!("{{ f(a: {bad}) }}")).kind, ErrorKind::Syntax, "{bad}");
        }
    }

    #[test]
    fn the_document_grammar() {
        let d = ok("\u{FEFF}# c\nquery Q($a: [Int!]! = [1, 2], $b: In @d(x: 1)) @o { a: f(x: $a, y: {k: [$b]}) @skip(if: true) { ...F ... on T { z } ... @include(if: $c) { w } } }\n,,fragment F on T @fd { y }\n{ s }");
        assert_eq!(d.operations.len(), 2);
        assert_eq!(d.fragments.len(), 1);
        let op = &d.operations[0];
        assert_eq!((op.kind, op.name, op.variables.len(), op.directives.len), (OpKind::Query, Some("Q"), 2, 1));
        assert_eq!(op.variables[0].ty.to_string(), "[Int!]!");
        assert_eq!(op.variables[0].default, Some(Value::List(vec![Value::Int("1"), Value::Int("2")])));
        assert_eq!(d.dirs(op.variables[1].directives)[0].name, "d");
        let Some(Selection::Field(f)) = d.set(op.selections).next() else { panic!() };
        assert_eq!((f.alias, f.name, f.arguments.len, f.directives.len, f.selections.len), (Some("a"), "f", 2, 1, 3));
        let inner: Vec<_> = d.set(f.selections).collect();
        assert!(matches!(inner[0], Selection::Spread { name: "F", .. }));
        assert!(matches!(inner[1], Selection::Inline { on: Some("T"), .. }));
        assert!(matches!(inner[2], Selection::Inline { on: None, directives, .. } if directives.len == 1));
        assert_eq!(d.fragments[0].on, "T");
        assert_eq!(d.operations[1].kind, OpKind::Query);
        // A spread of a fragment named like a keyword other than `on` is a spread.
        let d = ok("{ ...query } fragment query on Q { a }");
        assert!(matches!(d.set(d.operations[0].selections).next(), Some(Selection::Spread { name: "query", .. })));
        for bad in [
            "{}",
            "{ a() }",
            "query Q() { a }",
            "{ a(x: $v) }extra",
            "fragment on on T { a }",
            "fragment F T { a }",
            "query Q($v: Int = $w) { a }",
            "{ a(x: 1 }",
            "{ a .. }",
            "{ a } }",
            "{ a(x: [1, 2) }",
            "{ a(x: {k 1}) }",
            "subscription",
            "query ($a: Int",
            "type T { a: Int }",
            "\"described\" type T { a: Int }",
            "fragment F on T { a }",
            "{ a ? }",
            "{ a } query",
        ] {
            let e = err(bad);
            assert_eq!(e.kind, ErrorKind::Syntax, "{bad}: {e}");
        }
        assert!(err("{ a(x: 1 }").message.contains("line 1, column 10"), "{}", err("{ a(x: 1 }").message);
    }

    #[test]
    fn nesting_and_tokens_are_bounded() {
        let ok_deep = format!("{}{}", "{ a ".repeat(NESTING_LIMIT), "}".repeat(NESTING_LIMIT));
        ok(&ok_deep);
        let deep = format!("{}{}", "{ a ".repeat(NESTING_LIMIT + 1), "}".repeat(NESTING_LIMIT + 1));
        assert_eq!(err(&deep).kind, ErrorKind::Limit);
        let deep = format!("{{ a(x: {}1{}) }}", "[{k: ".repeat(100), "}]".repeat(100));
        assert_eq!(err(&deep).kind, ErrorKind::Limit);
        let deep = format!("query ($v: {}Int{}) {{ a }}", "[".repeat(200), "]".repeat(200));
        assert_eq!(err(&deep).kind, ErrorKind::Limit);
        assert_eq!(parse("{ a b c }", 4).map(|_| ()).unwrap_err().kind, ErrorKind::Limit);
        assert!(parse("{ a b c }", 5).is_ok());
    }
}
