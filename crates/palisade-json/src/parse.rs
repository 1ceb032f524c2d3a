//! The tape builder: one pass over the input, containers on an explicit stack of frames (no
//! recursion), each token pushed in document order.

use crate::lex::{number_end, skip_ws, string_end};
use crate::{err, Frame, JsonError, Kind, Limits, Tape, Token, F_ESCAPED, F_TRUE};

pub(crate) struct Parser<'a, 't> {
    pub(crate) input: &'a [u8],
    pub(crate) tape: &'t mut Tape,
    pub(crate) limits: &'t Limits,
}

impl Parser<'_, '_> {
    #[inline(always)]
    fn skip_ws(&self, p: usize) -> usize {
        skip_ws(self.input, p)
    }

    #[inline(always)]
    fn push(&mut self, tok: Token, at: usize) -> Result<u32, JsonError> {
        let idx = self.tape.tokens.len();
        if idx >= self.limits.max_tokens {
            return err(at, "too many tokens");
        }
        self.tape.tokens.push(tok);
        Ok(idx as u32)
    }

    pub(crate) fn run(mut self) -> Result<(), JsonError> {
        let inp = self.input;
        if inp.len() > u32::MAX as usize - 1 {
            return err(0, "document too large");
        }
        if inp.starts_with(&[0xEF, 0xBB, 0xBF]) {
            return err(0, "byte order mark is not allowed");
        }
        let mut p = self.skip_ws(0);
        'value: loop {
            // Parse one value at `p`.
            if p >= inp.len() {
                return err(p, "unexpected end of input, expected a value");
            }
            match inp[p] {
                b'"' => {
                    p = self.string(p)?;
                }
                b'{' | b'[' => {
                    let object = inp[p] == b'{';
                    if self.tape.stack.len() as u32 >= self.limits.max_depth {
                        return err(p, "nesting too deep");
                    }
                    let kind = if object { Kind::Object } else { Kind::Array };
                    let token = self.push(Token { start: p as u32, end: 0, next: 0, count: 0, kind, flags: 0 }, p)?;
                    self.tape.stack.push(Frame { token, count: 0, object });
                    p = self.skip_ws(p + 1);
                    let close = if object { b'}' } else { b']' };
                    if p < inp.len() && inp[p] == close {
                        // Empty container: fall through to the closing logic below.
                    } else if object {
                        p = self.key(p)?;
                        continue 'value;
                    } else {
                        continue 'value;
                    }
                    // Empty: close it right away (handled as "after value" with the closer).
                    let f = self.tape.stack.pop().unwrap();
                    p += 1;
                    let n = self.tape.tokens.len() as u32;
                    let t = &mut self.tape.tokens[f.token as usize];
                    t.end = p as u32;
                    t.next = n;
                    t.count = 0;
                }
                b'-' | b'0'..=b'9' => {
                    p = self.number(p)?;
                }
                b't' => p = self.literal(p, b"true", Kind::Bool, F_TRUE)?,
                b'f' => p = self.literal(p, b"false", Kind::Bool, 0)?,
                b'n' => p = self.literal(p, b"null", Kind::Null, 0)?,
                _ => return err(p, "expected a value"),
            }
            // After a value: a separator, a closer, or the end.
            loop {
                p = self.skip_ws(p);
                let Some(top) = self.tape.stack.last_mut() else {
                    if p != inp.len() {
                        return err(p, "trailing characters after the document");
                    }
                    return Ok(());
                };
                if p >= inp.len() {
                    return err(p, if top.object { "unexpected end of input in an object" } else { "unexpected end of input in an array" });
                }
                top.count += 1;
                let b = inp[p];
                if b == b',' {
                    let object = top.object;
                    p = self.skip_ws(p + 1);
                    if object {
                        p = self.key(p)?;
                    }
                    continue 'value;
                }
                let close = if top.object { b'}' } else { b']' };
                if b != close {
                    return err(p, if top.object { "expected ',' or '}'" } else { "expected ',' or ']'" });
                }
                let f = *top;
                self.tape.stack.pop();
                p += 1;
                let n = self.tape.tokens.len() as u32;
                let t = &mut self.tape.tokens[f.token as usize];
                t.end = p as u32;
                t.next = n;
                t.count = f.count;
            }
        }
    }

    /// An object key at `p` (after whitespace), then `:` and whitespace; returns the offset of the value.
    #[inline(always)]
    fn key(&mut self, p: usize) -> Result<usize, JsonError> {
        let inp = self.input;
        if p >= inp.len() || inp[p] != b'"' {
            return err(p, "expected a string key");
        }
        let after = self.string(p)?;
        let mut p = self.skip_ws(after);
        if p >= inp.len() || inp[p] != b':' {
            return err(p, "expected ':'");
        }
        p = self.skip_ws(p + 1);
        Ok(p)
    }

    fn literal(&mut self, p: usize, word: &[u8], kind: Kind, flags: u8) -> Result<usize, JsonError> {
        if !self.input[p..].starts_with(word) {
            return err(p, "invalid literal");
        }
        let end = p + word.len();
        self.push(Token { start: p as u32, end: end as u32, next: 0, count: 0, kind, flags }, p)?;
        Ok(end)
    }

    fn number(&mut self, start: usize) -> Result<usize, JsonError> {
        let (p, flags) = number_end(self.input, start)?;
        self.push(Token { start: start as u32, end: p as u32, next: 0, count: 0, kind: Kind::Number, flags }, start)?;
        Ok(p)
    }

    /// A string whose opening quote is at `q`; returns the offset after the closing quote.
    fn string(&mut self, q: usize) -> Result<usize, JsonError> {
        let (end, escaped) = string_end(self.input, q)?;
        let flags = if escaped { F_ESCAPED } else { 0 };
        self.push(Token { start: q as u32 + 1, end: end as u32, next: 0, count: 0, kind: Kind::String, flags }, q)?;
        Ok(end + 1)
    }
}
