//! A SQL tokenizer covering the lexical union of MySQL, PostgreSQL, MSSQL, Oracle and SQLite.
//!
//! It never fails: every byte of the input ends up in exactly one token (or in skipped
//! whitespace), and every call to [`Lexer::next`] consumes at least one byte, so the work is
//! linear in the input. MySQL executable comments (`/*! ... */`, `/*!50000 ... */`) are
//! transparent: their content is tokenized as SQL, as MySQL does.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// String literal; `quote` is the opening quote byte; `closed` when the closing quote was found.
    Str {
        quote: u8,
        closed: bool,
    },
    Num,
    /// Identifier or keyword (qualified names `a.b.c`, `master..xp_cmdshell` are one word).
    Word,
    /// Quoted identifier: `` `x` ``, `[x]`.
    QIdent,
    /// `@x`, `@@x`, `@'x'`.
    Var,
    Op,
    LParen,
    RParen,
    Comma,
    Semi,
    Dot,
    /// Comment. `to_eof`: runs to the end of the input (terminates whatever follows it).
    Comment {
        to_eof: bool,
    },
    Other,
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Token<'a> {
    pub kind: Kind,
    pub text: &'a str,
}

#[derive(Clone)]
pub(crate) struct Lexer<'a> {
    src: &'a str,
    b: &'a [u8],
    pos: usize,
    /// Inside a MySQL `/*! ... */` executable comment.
    in_exec_comment: bool,
    /// Bytes examined (for the linearity tests).
    pub steps: usize,
}

/// The ASCII bytes that continue a word: letters, digits, `_` and `$` (a table: this test runs
/// for every byte of every word).
const WORD_BYTE: [bool; 128] = {
    let mut t = [false; 128];
    let mut c = 0;
    while c < 128 {
        let b = c as u8;
        t[c] = b.is_ascii_alphanumeric() || b == b'_' || b == b'$';
        c += 1;
    }
    t
};

fn is_ident_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_' || c >= 0x80
}

impl<'a> Lexer<'a> {
    pub fn new(src: &'a str) -> Self {
        Lexer { src, b: src.as_bytes(), pos: 0, in_exec_comment: false, steps: 0 }
    }

    fn at(&self, i: usize) -> u8 {
        self.b.get(i).copied().unwrap_or(0)
    }

    fn tok(&self, kind: Kind, start: usize) -> Token<'a> {
        Token { kind, text: &self.src[start..self.pos] }
    }

    /// Skips whitespace (ASCII, controls, and Unicode spaces such as U+00A0). Returns false at EOF.
    fn skip_ws(&mut self) -> bool {
        loop {
            let Some(&c) = self.b.get(self.pos) else { return false };
            if c <= b' ' || c == 0x7f {
                self.pos += 1;
            } else if c >= 0x80 {
                let ch = self.src[self.pos..].chars().next().unwrap_or('x');
                if ch.is_whitespace() || ch == '\u{feff}' || ch == '\u{200b}' || ch == '\u{fffd}' {
                    self.pos += ch.len_utf8();
                } else {
                    return true;
                }
            } else if self.in_exec_comment && c == b'*' && self.at(self.pos + 1) == b'/' {
                self.in_exec_comment = false;
                self.pos += 2;
            } else {
                return true;
            }
        }
    }

    /// Scans a quoted literal starting at the opening quote; returns whether it was closed.
    /// The quote doubled stays inside; a backslash escapes the next byte (MySQL, PostgreSQL `E''`).
    fn quoted(&mut self, q: u8, backslash: bool) -> bool {
        self.pos += 1;
        while self.pos < self.b.len() {
            let c = self.b[self.pos];
            if c == b'\\' && backslash {
                self.pos = (self.pos + 2).min(self.b.len());
                continue;
            }
            self.pos += 1;
            if c == q {
                if self.at(self.pos) == q {
                    self.pos += 1;
                    continue;
                }
                return true;
            }
        }
        // A closing quote at EOF is not needed; make sure we end on a char boundary.
        self.pos = self.b.len();
        false
    }

    fn word_end(&mut self) {
        // On locals (not `self.pos`): this loop runs for every byte of every word.
        let b = self.b;
        let mut p = self.pos;
        loop {
            while let Some(&c) = b.get(p) {
                if c < 0x80 {
                    if WORD_BYTE[c as usize] {
                        p += 1;
                        continue;
                    }
                    break;
                }
                // Non-ASCII: letters continue the word, spaces (U+00A0...) end it.
                let ch = self.src.get(p..).and_then(|r| r.chars().next()).unwrap_or(' ');
                if !ch.is_alphanumeric() {
                    break;
                }
                p += ch.len_utf8();
            }
            // Qualified names: a.b, a..b (MSSQL default schema).
            if b.get(p) == Some(&b'.') {
                let at = |i: usize| b.get(i).copied().unwrap_or(0);
                if is_ident_start(at(p + 1)) {
                    p += 1;
                    continue;
                }
                if at(p + 1) == b'.' && is_ident_start(at(p + 2)) {
                    p += 2;
                    continue;
                }
            }
            break;
        }
        while !self.src.is_char_boundary(p) {
            p += 1;
        }
        self.pos = p;
    }

    fn number(&mut self) {
        let b = self.b;
        let c1 = self.at(self.pos + 1) | 0x20;
        if b[self.pos] == b'0' && (c1 == b'x' || c1 == b'b') && self.at(self.pos + 2).is_ascii_hexdigit() {
            self.pos += 2;
            while self.pos < b.len() && b[self.pos].is_ascii_hexdigit() {
                self.pos += 1;
            }
            return;
        }
        while self.pos < b.len() && b[self.pos].is_ascii_digit() {
            self.pos += 1;
        }
        if self.at(self.pos) == b'.' {
            self.pos += 1;
            while self.pos < b.len() && b[self.pos].is_ascii_digit() {
                self.pos += 1;
            }
        }
        if self.at(self.pos) | 0x20 == b'e' {
            let mut p = self.pos + 1;
            if matches!(self.at(p), b'+' | b'-') {
                p += 1;
            }
            if self.at(p).is_ascii_digit() {
                self.pos = p;
                while self.pos < b.len() && b[self.pos].is_ascii_digit() {
                    self.pos += 1;
                }
            }
        }
    }

    fn find_bytes(&self, from: usize, needle: &[u8]) -> Option<usize> {
        crate::other_util::find_short(&self.b[from..], needle).map(|i| from + i)
    }
}

/// Multi-byte operators (the reference for [`op_len`]).
#[cfg(test)]
const OPS3: [&[u8]; 2] = [b"<=>", b"->>"];
#[cfg(test)]
const OPS2: [&[u8]; 15] = [b"<=", b">=", b"<>", b"!=", b"||", b"&&", b"::", b":=", b"<<", b">>", b"->", b"!<", b"!>", b"==", b"~*"];

/// Length of the [`OPS3`] or [`OPS2`] operator that starts with the bytes `c`, `c1`, `c2`
/// (0 when none does), decided by the first two bytes (a `match`, not a search of the lists;
/// `tests::op_len_agrees_with_the_lists` compares both).
#[inline]
fn op_len(c: u8, c1: u8, c2: u8) -> usize {
    match (c, c1) {
        (b'<', b'=') if c2 == b'>' => 3,
        (b'-', b'>') if c2 == b'>' => 3,
        (b'<', b'=' | b'>' | b'<')
        | (b'>', b'=' | b'>')
        | (b'!', b'=' | b'<' | b'>')
        | (b'|', b'|')
        | (b'&', b'&')
        | (b':', b':' | b'=')
        | (b'-', b'>')
        | (b'=', b'=')
        | (b'~', b'*') => 2,
        _ => 0,
    }
}

impl<'a> Iterator for Lexer<'a> {
    type Item = Token<'a>;

    fn next(&mut self) -> Option<Token<'a>> {
        let before = self.pos;
        let r = self.next_inner();
        self.steps += self.pos - before + 1;
        r
    }
}

impl<'a> Lexer<'a> {
    fn next_inner(&mut self) -> Option<Token<'a>> {
        loop {
            if !self.skip_ws() {
                return None;
            }
            let start = self.pos;
            let c = self.b[start];
            let c1 = self.at(start + 1);
            match c {
                b'/' if c1 == b'*' => {
                    if self.at(start + 2) == b'!' {
                        // MySQL executable comment: the content is SQL.
                        self.pos += 3;
                        let mut n = 0;
                        while n < 6 && self.at(self.pos).is_ascii_digit() {
                            self.pos += 1;
                            n += 1;
                        }
                        self.in_exec_comment = true;
                        continue;
                    }
                    return Some(match self.find_bytes(start + 2, b"*/") {
                        Some(e) => {
                            self.pos = e + 2;
                            self.tok(Kind::Comment { to_eof: false }, start)
                        }
                        None => {
                            self.pos = self.b.len();
                            self.tok(Kind::Comment { to_eof: true }, start)
                        }
                    });
                }
                b'-' if c1 == b'-' => return Some(self.line_comment(start)),
                b'#' => return Some(self.line_comment(start)),
                b'\'' | b'"' => {
                    let closed = self.quoted(c, true);
                    return Some(self.tok(Kind::Str { quote: c, closed }, start));
                }
                b'`' => {
                    self.quoted(b'`', false);
                    return Some(self.tok(Kind::QIdent, start));
                }
                b'[' => {
                    let end = memchr::memchr2(b']', b'[', &self.b[start + 1..]).map(|i| start + 1 + i);
                    if let Some(e) = end.filter(|&e| self.b[e] == b']' && e > start + 1) {
                        self.pos = e + 1;
                        return Some(self.tok(Kind::QIdent, start));
                    }
                    self.pos += 1;
                    return Some(self.tok(Kind::Other, start));
                }
                b'$' => {
                    // PostgreSQL dollar quoting: $$...$$ or $tag$...$tag$.
                    let mut p = start + 1;
                    while p < self.b.len() && (self.b[p].is_ascii_alphanumeric() || self.b[p] == b'_') {
                        p += 1;
                    }
                    if self.at(p) == b'$' {
                        let tag = &self.b[start..=p];
                        let closed = match memchr::memmem::find(&self.b[p + 1..], tag) {
                            Some(i) => {
                                self.pos = p + 1 + i + tag.len();
                                true
                            }
                            None => {
                                self.pos = self.b.len();
                                false
                            }
                        };
                        return Some(self.tok(Kind::Str { quote: b'$', closed }, start));
                    }
                    self.pos = p.max(start + 1);
                    return Some(self.tok(Kind::Var, start));
                }
                b'@' => {
                    self.pos += 1;
                    if self.at(self.pos) == b'@' {
                        self.pos += 1;
                    }
                    match self.at(self.pos) {
                        q @ (b'\'' | b'"' | b'`') => {
                            self.quoted(q, true);
                        }
                        _ => self.word_end(),
                    }
                    return Some(self.tok(Kind::Var, start));
                }
                b'0'..=b'9' => {
                    self.number();
                    return Some(self.tok(Kind::Num, start));
                }
                b'.' if c1.is_ascii_digit() => {
                    self.number();
                    return Some(self.tok(Kind::Num, start));
                }
                // MySQL `\N` is NULL.
                b'\\' if c1 == b'N' => {
                    self.pos += 2;
                    return Some(self.tok(Kind::Word, start));
                }
                b'(' => return Some(self.single(Kind::LParen)),
                b')' => return Some(self.single(Kind::RParen)),
                b',' => return Some(self.single(Kind::Comma)),
                b';' => return Some(self.single(Kind::Semi)),
                b'.' => return Some(self.single(Kind::Dot)),
                _ if is_ident_start(c) => {
                    if c >= 0x80 {
                        let ch = self.src[start..].chars().next().unwrap_or(' ');
                        if !ch.is_alphanumeric() {
                            self.pos += ch.len_utf8();
                            return Some(self.tok(Kind::Other, start));
                        }
                    }
                    // String prefixes: N'..' (MSSQL), E'..' (PostgreSQL), X'..', B'..', Q'..' (Oracle).
                    if c1 == b'\'' && matches!(c | 0x20, b'n' | b'e' | b'x' | b'b' | b'q') {
                        self.pos += 1;
                        let closed = self.quoted(b'\'', true);
                        return Some(self.tok(Kind::Str { quote: b'\'', closed }, start));
                    }
                    self.word_end();
                    return Some(self.tok(Kind::Word, start));
                }
                _ => {
                    let long = op_len(c, c1, self.at(start + 2));
                    let len = if long > 0 {
                        long
                    } else if matches!(c, b'=' | b'<' | b'>' | b'+' | b'-' | b'*' | b'/' | b'%' | b'^' | b'&' | b'|' | b'~' | b'!') {
                        1
                    } else {
                        let ch = self.src[start..].chars().next().map_or(1, char::len_utf8);
                        self.pos += ch;
                        return Some(self.tok(Kind::Other, start));
                    };
                    self.pos += len;
                    return Some(self.tok(Kind::Op, start));
                }
            }
        }
    }

    fn single(&mut self, kind: Kind) -> Token<'a> {
        self.pos += 1;
        self.tok(kind, self.pos - 1)
    }

    fn line_comment(&mut self, start: usize) -> Token<'a> {
        match memchr::memchr(b'\n', &self.b[start..]) {
            Some(i) => {
                self.pos = start + i + 1;
                self.tok(Kind::Comment { to_eof: false }, start)
            }
            None => {
                self.pos = self.b.len();
                self.tok(Kind::Comment { to_eof: true }, start)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn op_len_agrees_with_the_lists() {
        let bytes: Vec<u8> = b"<=>-!|&:~*+/%^ab1 ".to_vec();
        for &c in &bytes {
            for &c1 in &bytes {
                for &c2 in &bytes {
                    let rest = [c, c1, c2];
                    let want = if OPS3.iter().any(|o| rest.starts_with(o)) {
                        3
                    } else if OPS2.iter().any(|o| rest.starts_with(o)) {
                        2
                    } else {
                        0
                    };
                    assert_eq!(op_len(c, c1, c2), want, "{:?}", std::str::from_utf8(&rest));
                }
            }
        }
    }
}
