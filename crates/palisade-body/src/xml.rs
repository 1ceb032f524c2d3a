//! A small, bounded XML 1.0 tokenizer and a well-formedness check on top of it.
//!
//! [`Tokenizer`] yields [`Token`]s with byte spans into the input: the XML declaration,
//! processing instructions, comments, CDATA sections, text, start/end tags (attributes as a
//! span, iterated with [`attributes`]) and the DOCTYPE declaration with its external id and its
//! internal subset captured as spans (the detection engine looks there for `<!ENTITY`
//! declarations). It never recurses and never allocates.
//!
//! [`Checker`] adds what well-formedness needs: input is UTF-8, tags balance, exactly one root
//! element, only whitespace, comments and PIs outside it, the XML declaration only at the
//! start, at most one DOCTYPE and only before the root, attribute syntax, unique attribute names
//! per element, no `<` in attribute values, well-formed entity and character references
//! (`&name;`, `&#10;`, `&#x1F600;` naming a legal character), no `]]>` in text, no `--`
//! inside comments. Bounded by [`Limits`]: total size, element depth (so 100,000 nested
//! elements fail fast at the limit), attributes per element.
//!
//! Entity references: without a DOCTYPE only the five predefined entities (`amp`, `lt`, `gt`,
//! `apos`, `quot`) may be referenced (XML 1.0 WFC "Entity Declared"); with a DOCTYPE any
//! well-formed name is accepted, since DTDs are not processed (by design: nothing is ever
//! expanded). Not checked: namespaces, the exact Unicode `Name` production (any
//! non-ASCII character is accepted in names), encodings other than UTF-8.

use std::ops::Range;

use memchr::{memchr, memmem};

#[cfg(test)]
mod tests;

/// A byte range of the input.
pub type Span = Range<usize>;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Token {
    /// `<?xml ...?>`: the whole declaration.
    XmlDecl { span: Span },
    /// `<?target data?>`.
    Pi { target: Span, data: Span },
    /// `<!--text-->`.
    Comment { text: Span },
    /// `<![CDATA[text]]>`.
    Cdata { text: Span },
    /// Character data between markup (raw: references not expanded).
    Text { text: Span },
    /// `<name attrs>` or `<name attrs/>`; `attrs` is the raw attribute section.
    StartTag { name: Span, attrs: Span, self_closing: bool },
    /// `</name>`.
    EndTag { name: Span },
    /// `<!DOCTYPE name [SYSTEM "x" | PUBLIC "p" "x"] [internal subset]>`. `external` spans the
    /// external id (`SYSTEM "x"`), `internal_subset` the text between `[` and `]`.
    Doctype { span: Span, name: Span, external: Option<Span>, internal_subset: Option<Span> },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum XmlErrorKind {
    TooLarge,
    NotUtf8,
    Unterminated,
    BadName,
    BadMarkup,
    BadAttribute,
    DuplicateAttribute,
    TooManyAttributes,
    LtInAttribute,
    BadReference,
    CdataEndInText,
    DoubleHyphenInComment,
    TooDeep,
    Unbalanced,
    UnclosedElement,
    MultipleRoots,
    NoRoot,
    TextOutsideRoot,
    MisplacedDeclaration,
    MisplacedDoctype,
}

/// Where and why the input is not (well-formed) XML.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct XmlError {
    pub offset: usize,
    pub kind: XmlErrorKind,
}

fn err<T>(offset: usize, kind: XmlErrorKind) -> Result<T, XmlError> {
    Err(XmlError { offset, kind })
}

fn is_name_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_' || b == b':' || b >= 0x80
}

fn is_name_char(b: u8) -> bool {
    is_name_start(b) || b.is_ascii_digit() || b == b'-' || b == b'.'
}

fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

/// Length of the name at `s[i..]` (0 if none).
fn name_len(s: &[u8], i: usize) -> usize {
    match s.get(i) {
        Some(&b) if is_name_start(b) => 1 + s[i + 1..].iter().take_while(|&&b| is_name_char(b)).count(),
        _ => 0,
    }
}

fn skip_ws(s: &[u8], mut i: usize) -> usize {
    while i < s.len() && is_ws(s[i]) {
        i += 1;
    }
    i
}

/// Yields the tokens of `input`; stops after the first error.
#[derive(Clone, Debug)]
pub struct Tokenizer<'a> {
    input: &'a [u8],
    pos: usize,
    failed: bool,
}

impl<'a> Tokenizer<'a> {
    pub fn new(input: &'a [u8]) -> Self {
        // A UTF-8 byte order mark is not content.
        let pos = if input.starts_with(b"\xEF\xBB\xBF") { 3 } else { 0 };
        Tokenizer { input, pos, failed: false }
    }

    /// Byte offset of the next token.
    pub fn offset(&self) -> usize {
        self.pos
    }

    fn find_from(&self, from: usize, needle: &[u8]) -> Result<usize, XmlError> {
        memmem::find(&self.input[from..], needle).map(|i| from + i).ok_or(XmlError { offset: self.pos, kind: XmlErrorKind::Unterminated })
    }

    fn markup(&mut self) -> Result<Token, XmlError> {
        let s = self.input;
        let start = self.pos;
        let rest = &s[start..];
        if rest.starts_with(b"<?") {
            let n = name_len(s, start + 2);
            if n == 0 {
                return err(start, XmlErrorKind::BadName);
            }
            let end = self.find_from(start + 2, b"?>")?;
            let target = start + 2..start + 2 + n;
            self.pos = end + 2;
            if s[target.clone()].eq_ignore_ascii_case(b"xml") {
                return Ok(Token::XmlDecl { span: start..end + 2 });
            }
            if target.end < end && !is_ws(s[target.end]) {
                return err(target.end, XmlErrorKind::BadName);
            }
            let data = skip_ws(s, target.end).min(end)..end;
            return Ok(Token::Pi { target, data });
        }
        if rest.starts_with(b"<!--") {
            let end = self.find_from(start + 4, b"--")?;
            if !s[end..].starts_with(b"-->") {
                return err(end, XmlErrorKind::DoubleHyphenInComment);
            }
            self.pos = end + 3;
            return Ok(Token::Comment { text: start + 4..end });
        }
        if rest.starts_with(b"<![CDATA[") {
            let end = self.find_from(start + 9, b"]]>")?;
            self.pos = end + 3;
            return Ok(Token::Cdata { text: start + 9..end });
        }
        if rest.starts_with(b"<!DOCTYPE") {
            return self.doctype();
        }
        if rest.starts_with(b"</") {
            let n = name_len(s, start + 2);
            if n == 0 {
                return err(start + 2, XmlErrorKind::BadName);
            }
            let i = skip_ws(s, start + 2 + n);
            match s.get(i) {
                Some(b'>') => {}
                None => return err(start, XmlErrorKind::Unterminated),
                Some(_) => return err(i, XmlErrorKind::BadMarkup),
            }
            self.pos = i + 1;
            return Ok(Token::EndTag { name: start + 2..start + 2 + n });
        }
        let n = name_len(s, start + 1);
        if n == 0 {
            return err(start + 1, XmlErrorKind::BadName);
        }
        // Attributes run to the first `>` outside quotes.
        let attrs_start = start + 1 + n;
        let mut i = attrs_start;
        let mut quote = 0u8;
        loop {
            let Some(&b) = s.get(i) else { return err(start, XmlErrorKind::Unterminated) };
            if quote != 0 {
                if b == quote {
                    quote = 0;
                }
            } else if b == b'"' || b == b'\'' {
                quote = b;
            } else if b == b'>' {
                break;
            }
            i += 1;
        }
        let self_closing = i > attrs_start && s[i - 1] == b'/';
        let attrs_end = if self_closing { i - 1 } else { i };
        if attrs_end > attrs_start && !is_ws(s[attrs_start]) {
            return err(attrs_start, XmlErrorKind::BadName);
        }
        self.pos = i + 1;
        Ok(Token::StartTag { name: start + 1..start + 1 + n, attrs: attrs_start..attrs_end, self_closing })
    }

    fn doctype(&mut self) -> Result<Token, XmlError> {
        let s = self.input;
        let start = self.pos;
        let mut i = start + 9;
        if !s.get(i).is_some_and(|&b| is_ws(b)) {
            return err(i, XmlErrorKind::BadMarkup);
        }
        i = skip_ws(s, i);
        let n = name_len(s, i);
        if n == 0 {
            return err(i, XmlErrorKind::BadName);
        }
        let name = i..i + n;
        i = skip_ws(s, i + n);
        let quoted = |i: usize| -> Result<usize, XmlError> {
            // A quoted literal at `i` (after whitespace); returns the index after it.
            let i = skip_ws(s, i);
            match s.get(i) {
                Some(&q @ (b'"' | b'\'')) => memchr(q, &s[i + 1..]).map(|e| i + 1 + e + 1).ok_or(XmlError { offset: i, kind: XmlErrorKind::Unterminated }),
                _ => err(i, XmlErrorKind::BadMarkup),
            }
        };
        let mut external = None;
        if s[i..].starts_with(b"SYSTEM") {
            let e = quoted(i + 6)?;
            external = Some(i..e);
            i = skip_ws(s, e);
        } else if s[i..].starts_with(b"PUBLIC") {
            let e = quoted(quoted(i + 6)?)?;
            external = Some(i..e);
            i = skip_ws(s, e);
        }
        let mut internal_subset = None;
        if s.get(i) == Some(&b'[') {
            let sub_start = i + 1;
            let mut j = sub_start;
            loop {
                match s.get(j) {
                    None => return err(start, XmlErrorKind::Unterminated),
                    Some(b']') => break,
                    Some(&q @ (b'"' | b'\'')) => {
                        j = memchr(q, &s[j + 1..]).map(|e| j + 1 + e + 1).ok_or(XmlError { offset: j, kind: XmlErrorKind::Unterminated })?;
                    }
                    Some(b'<') if s[j..].starts_with(b"<!--") => j = self.find_from(j + 4, b"-->")? + 3,
                    Some(b'<') if s[j..].starts_with(b"<?") => j = self.find_from(j + 2, b"?>")? + 2,
                    Some(_) => j += 1,
                }
            }
            internal_subset = Some(sub_start..j);
            i = skip_ws(s, j + 1);
        }
        if s.get(i) != Some(&b'>') {
            return if i >= s.len() { err(start, XmlErrorKind::Unterminated) } else { err(i, XmlErrorKind::BadMarkup) };
        }
        self.pos = i + 1;
        Ok(Token::Doctype { span: start..i + 1, name, external, internal_subset })
    }
}

impl Iterator for Tokenizer<'_> {
    type Item = Result<Token, XmlError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.pos >= self.input.len() {
            return None;
        }
        let r = if self.input[self.pos] == b'<' {
            self.markup()
        } else {
            let start = self.pos;
            let end = memchr(b'<', &self.input[start..]).map_or(self.input.len(), |i| start + i);
            self.pos = end;
            Ok(Token::Text { text: start..end })
        };
        self.failed = r.is_err();
        Some(r)
    }
}

/// One attribute: spans of the name and of the raw value (without quotes).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attribute {
    pub name: Span,
    pub value: Span,
}

/// Attributes of a start tag, from its `attrs` span.
pub fn attributes(input: &[u8], attrs: Span) -> Attributes<'_> {
    Attributes { input, pos: attrs.start, end: attrs.end, failed: false }
}

#[derive(Clone, Debug)]
pub struct Attributes<'a> {
    input: &'a [u8],
    pos: usize,
    end: usize,
    failed: bool,
}

impl Iterator for Attributes<'_> {
    type Item = Result<Attribute, XmlError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let s = &self.input[..self.end];
        let start = self.pos;
        let i = skip_ws(s, start);
        if i == s.len() {
            self.pos = i;
            return None;
        }
        let r = (|| {
            if i == start {
                return err(i, XmlErrorKind::BadAttribute); // attributes are separated by whitespace
            }
            let n = name_len(s, i);
            if n == 0 {
                return err(i, XmlErrorKind::BadAttribute);
            }
            let mut j = skip_ws(s, i + n);
            if s.get(j) != Some(&b'=') {
                return err(j, XmlErrorKind::BadAttribute);
            }
            j = skip_ws(s, j + 1);
            let q = match s.get(j) {
                Some(&q @ (b'"' | b'\'')) => q,
                _ => return err(j, XmlErrorKind::BadAttribute),
            };
            let Some(e) = memchr(q, &s[j + 1..]) else { return err(j, XmlErrorKind::BadAttribute) };
            let value = j + 1..j + 1 + e;
            Ok((Attribute { name: i..i + n, value: value.clone() }, value.end + 1))
        })();
        match r {
            Ok((a, next)) => {
                self.pos = next;
                Some(Ok(a))
            }
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }
}

/// Check the references in character data or an attribute value (`&name;`, `&#N;`, `&#xH;`).
/// The entities every document may reference without declaring them.
const PREDEFINED_ENTITIES: [&[u8]; 5] = [b"amp", b"lt", b"gt", b"apos", b"quot"];

/// Check the references in `span`; `declared_only`: the document has no DOCTYPE, so a named
/// reference must be one of the predefined entities.
fn check_refs(s: &[u8], span: Span, declared_only: bool) -> Result<(), XmlError> {
    let mut i = span.start;
    while let Some(a) = memchr(b'&', &s[i..span.end]) {
        let at = i + a;
        let Some(semi) = memchr(b';', &s[at..span.end]) else { return err(at, XmlErrorKind::BadReference) };
        let body = &s[at + 1..at + semi];
        let ok = if let Some(num) = body.strip_prefix(b"#") {
            let (digits, radix) = match num.strip_prefix(b"x") {
                Some(h) => (h, 16),
                None => (num, 10),
            };
            !digits.is_empty()
                && digits.len() <= 8
                && std::str::from_utf8(digits)
                    .ok()
                    .and_then(|d| u32::from_str_radix(d, radix).ok())
                    .and_then(char::from_u32)
                    .is_some_and(|c| matches!(c, '\t' | '\n' | '\r') || (c >= ' ' && !matches!(c, '\u{FFFE}' | '\u{FFFF}')))
        } else {
            !body.is_empty() && name_len(body, 0) == body.len() && (!declared_only || PREDEFINED_ENTITIES.contains(&body))
        };
        if !ok {
            return err(at, XmlErrorKind::BadReference);
        }
        i = at + semi + 1;
    }
    Ok(())
}

/// Bounds of the well-formedness check.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub max_bytes: usize,
    pub max_depth: usize,
    pub max_attributes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_bytes: 8 << 20, max_depth: 256, max_attributes: 256 }
    }
}

/// What a successful check saw.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    pub elements: usize,
    pub max_depth: usize,
    /// Span of the DOCTYPE declaration, if any.
    pub doctype: Option<Span>,
}

/// Well-formedness checker with a reusable element stack. Keep one per worker.
#[derive(Debug, Default)]
pub struct Checker {
    stack: Vec<Span>,
    attrs: Vec<Span>,
}

/// Check `input` with a fresh [`Checker`].
pub fn check(input: &[u8], limits: &Limits) -> Result<Summary, XmlError> {
    Checker::default().check(input, limits)
}

impl Checker {
    pub fn check(&mut self, input: &[u8], limits: &Limits) -> Result<Summary, XmlError> {
        if input.len() > limits.max_bytes {
            return err(limits.max_bytes, XmlErrorKind::TooLarge);
        }
        if let Err(e) = std::str::from_utf8(input) {
            return err(e.valid_up_to(), XmlErrorKind::NotUtf8);
        }
        self.stack.clear();
        let mut summary = Summary::default();
        let mut root_done = false;
        let mut first = true;
        for tok in Tokenizer::new(input) {
            let in_root = !self.stack.is_empty();
            match tok? {
                Token::XmlDecl { span } => {
                    if !first {
                        return err(span.start, XmlErrorKind::MisplacedDeclaration);
                    }
                }
                Token::Pi { .. } => {}
                Token::Comment { .. } => {}
                Token::Doctype { span, .. } => {
                    if in_root || root_done || summary.doctype.is_some() {
                        return err(span.start, XmlErrorKind::MisplacedDoctype);
                    }
                    summary.doctype = Some(span);
                }
                Token::Cdata { text } => {
                    if !in_root {
                        return err(text.start, XmlErrorKind::TextOutsideRoot);
                    }
                }
                Token::Text { text } => {
                    if !in_root {
                        if let Some(p) = input[text.clone()].iter().position(|&b| !is_ws(b)) {
                            return err(text.start + p, XmlErrorKind::TextOutsideRoot);
                        }
                    } else {
                        if let Some(p) = memmem::find(&input[text.clone()], b"]]>") {
                            return err(text.start + p, XmlErrorKind::CdataEndInText);
                        }
                        check_refs(input, text, summary.doctype.is_none())?;
                    }
                }
                Token::StartTag { name, attrs, self_closing } => {
                    if root_done {
                        return err(name.start - 1, XmlErrorKind::MultipleRoots);
                    }
                    self.check_attributes(input, attrs, limits, summary.doctype.is_none())?;
                    summary.elements += 1;
                    if self_closing {
                        if !in_root {
                            root_done = true;
                        }
                    } else {
                        if self.stack.len() >= limits.max_depth {
                            return err(name.start - 1, XmlErrorKind::TooDeep);
                        }
                        self.stack.push(name);
                    }
                    summary.max_depth = summary.max_depth.max(self.stack.len() + self_closing as usize);
                }
                Token::EndTag { name } => {
                    let Some(open) = self.stack.pop() else { return err(name.start - 2, XmlErrorKind::Unbalanced) };
                    if input[open] != input[name.clone()] {
                        return err(name.start - 2, XmlErrorKind::Unbalanced);
                    }
                    if self.stack.is_empty() {
                        root_done = true;
                    }
                }
            }
            first = false;
        }
        if !self.stack.is_empty() {
            return err(input.len(), XmlErrorKind::UnclosedElement);
        }
        if !root_done {
            return err(input.len(), XmlErrorKind::NoRoot);
        }
        Ok(summary)
    }

    fn check_attributes(&mut self, input: &[u8], attrs: Span, limits: &Limits, declared_only: bool) -> Result<(), XmlError> {
        self.attrs.clear();
        for a in attributes(input, attrs) {
            let a = a?;
            if self.attrs.len() == limits.max_attributes {
                return err(a.name.start, XmlErrorKind::TooManyAttributes);
            }
            if let Some(p) = memchr(b'<', &input[a.value.clone()]) {
                return err(a.value.start + p, XmlErrorKind::LtInAttribute);
            }
            check_refs(input, a.value.clone(), declared_only)?;
            self.attrs.push(a.name);
        }
        // Unique names: sort by name, compare neighbours (n log n, no hashing).
        if self.attrs.len() > 1 {
            self.attrs.sort_unstable_by(|a, b| input[a.clone()].cmp(&input[b.clone()]).then(a.start.cmp(&b.start)));
            if let Some(w) = self.attrs.windows(2).find(|w| input[w[0].clone()] == input[w[1].clone()]) {
                return err(w[1].start, XmlErrorKind::DuplicateAttribute);
            }
        }
        Ok(())
    }
}
