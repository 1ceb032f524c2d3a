//! ECMA-262 regular expressions (the dialect of `pattern` and `patternProperties`) on top of
//! the `regex` crate. The translation keeps ECMA's ASCII meaning of `\d`, `\w` (and their
//! negations) and `\b`; everything else is passed through. What Rust's regex cannot express
//! (lookaround, backreferences) fails to compile and is reported by the caller as a warning:
//! such a pattern is not enforced.

use regex::bytes::{Regex, RegexBuilder};

/// Translate an ECMA-262 pattern to Rust regex syntax.
pub(crate) fn translate(src: &str) -> String {
    let mut out = String::with_capacity(src.len() + 8);
    let mut chars = src.chars().peekable();
    let mut in_class = false;
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                let Some(e) = chars.next() else {
                    out.push('\\');
                    break;
                };
                match (e, in_class) {
                    ('d', false) => out.push_str("[0-9]"),
                    ('d', true) => out.push_str("0-9"),
                    ('D', false) => out.push_str("[^0-9]"),
                    ('w', false) => out.push_str("[0-9A-Za-z_]"),
                    ('w', true) => out.push_str("0-9A-Za-z_"),
                    ('W', false) => out.push_str("[^0-9A-Za-z_]"),
                    ('b', false) => out.push_str("(?-u:\\b)"),
                    ('B', false) => out.push_str("(?-u:\\B)"),
                    // ECMA \cX control escapes.
                    ('c', _) if chars.peek().is_some_and(|x| x.is_ascii_alphabetic()) => {
                        let x = chars.next().unwrap();
                        out.push_str(&format!("\\x{:02X}", (x as u8) % 32));
                    }
                    // `\/` and other identity escapes of punctuation are fine in Rust.
                    _ => {
                        out.push('\\');
                        out.push(e);
                    }
                }
            }
            '[' if !in_class => {
                in_class = true;
                out.push('[');
                // A leading `]` or `^]` in ECMA is an empty class; leave it to the compiler.
                if chars.peek() == Some(&'^') {
                    out.push(chars.next().unwrap());
                }
            }
            ']' if in_class => {
                in_class = false;
                out.push(']');
            }
            // Rust treats these as set operators inside classes; ECMA takes them literally.
            '[' | '&' | '~' | '-' if in_class && c != '-' => {
                out.push('\\');
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out
}

/// Compile an ECMA-262 pattern for unanchored search over UTF-8 bytes.
pub(crate) fn compile(src: &str) -> Result<Regex, String> {
    let translated = translate(src);
    RegexBuilder::new(&translated).size_limit(1 << 20).dfa_size_limit(1 << 20).build().map_err(|e| {
        let msg = e.to_string();
        let last = msg.lines().rfind(|l| !l.trim().is_empty()).unwrap_or("").trim().to_string();
        if src.contains("(?=") || src.contains("(?!") || src.contains("(?<=") || src.contains("(?<!") {
            "lookaround is not supported".to_string()
        } else if last.is_empty() {
            msg
        } else {
            last
        }
    })
}

#[cfg(test)]
mod tests;
