//! Reading the text files a configuration names (the configuration itself, OpenAPI specs, rule
//! files, IP and key lists) with a byte limit enforced while reading, so that a device such as
//! `/dev/zero`, a FIFO or a file that grows while it is read stops at the limit instead of
//! filling memory.
//!
//! While reading, the text is also checked against what YAML 1.2 (section 5.1, `c-printable`)
//! and JSON (RFC 8259: control characters only as escapes) both allow: UTF-8, and no C0 control
//! character other than tab, line feed and carriage return. The first offending byte is
//! reported with its line and column, and reading stops there.

use std::fmt;
use std::io::Read;
use std::path::Path;

/// The limit for configuration, spec, rule and list files unless a caller has its own.
pub const MAX_FILE_BYTES: u64 = 32 * 1024 * 1024;

/// Why a file could not be read as text.
#[derive(Debug)]
pub enum ReadError {
    /// Opening or reading failed.
    Io(std::io::Error),
    /// More than `limit` bytes.
    TooLarge { limit: u64 },
    /// Not text: invalid UTF-8 or a control character, at a 1-based line and column
    /// (column counted in characters).
    NotText { line: usize, col: usize, message: String },
}

impl ReadError {
    /// The position of a [`ReadError::NotText`] problem.
    pub fn position(&self) -> Option<(usize, usize)> {
        match self {
            ReadError::NotText { line, col, .. } => Some((*line, *col)),
            _ => None,
        }
    }
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::Io(e) => write!(f, "cannot read: {e}"),
            ReadError::TooLarge { limit } => write!(f, "larger than the limit of {} (reading stopped there)", human_size(*limit)),
            ReadError::NotText { line, col, message } => write!(f, "{line}:{col}: {message}"),
        }
    }
}

impl std::error::Error for ReadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ReadError::Io(e) => Some(e),
            _ => None,
        }
    }
}

/// `33554432` as `32 MiB`.
pub fn human_size(n: u64) -> String {
    const UNITS: &[(u64, &str)] = &[(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
    for (size, unit) in UNITS {
        if n >= *size && n % size == 0 {
            return format!("{} {unit}", n / size);
        }
    }
    format!("{n} bytes")
}

/// Read the file at `path` as text, at most `limit` bytes.
pub fn read_text(path: &Path, limit: u64) -> Result<String, ReadError> {
    let file = std::fs::File::open(path).map_err(ReadError::Io)?;
    // The size of a regular file sizes the buffer; devices and pipes report 0 and grow it.
    let hint = file.metadata().map(|m| m.len()).unwrap_or(0).min(limit);
    read_text_from(file, limit, hint as usize)
}

/// [`read_text`] from any reader (`hint`: expected size, for the first allocation).
pub fn read_text_from(mut r: impl Read, limit: u64, hint: usize) -> Result<String, ReadError> {
    let mut buf: Vec<u8> = Vec::with_capacity(hint.saturating_add(1).min(usize::try_from(limit).unwrap_or(usize::MAX).saturating_add(1)));
    let mut chunk = [0u8; 64 * 1024];
    let mut checker = TextCheck::default();
    loop {
        let n = match r.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(ReadError::Io(e)),
        };
        if buf.len() as u64 + n as u64 > limit {
            return Err(ReadError::TooLarge { limit });
        }
        buf.extend_from_slice(&chunk[..n]);
        checker.scan(&buf)?;
    }
    checker.finish(&buf)?;
    String::from_utf8(buf).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let (line, col) = line_col(e.as_bytes(), at);
        ReadError::NotText { line, col, message: "invalid UTF-8".into() }
    })
}

/// Checks the bytes as they arrive; `done` is the prefix known to be complete characters.
#[derive(Default)]
struct TextCheck {
    done: usize,
}

impl TextCheck {
    fn scan(&mut self, buf: &[u8]) -> Result<(), ReadError> {
        let tail = &buf[self.done..];
        let valid = match std::str::from_utf8(tail) {
            Ok(_) => tail.len(),
            // `error_len() == None`: the end is an incomplete character that the next read
            // may finish.
            Err(e) if e.error_len().is_none() => e.valid_up_to(),
            Err(e) => {
                let at = self.done + e.valid_up_to();
                self.control(buf, at)?;
                let (line, col) = line_col(buf, at);
                return Err(ReadError::NotText { line, col, message: format!("invalid UTF-8 (byte 0x{:02x})", buf[at]) });
            }
        };
        self.control(buf, self.done + valid)?;
        self.done += valid;
        Ok(())
    }

    /// A forbidden control character in `buf[done..end]`.
    fn control(&self, buf: &[u8], end: usize) -> Result<(), ReadError> {
        if let Some(i) = buf[self.done..end].iter().position(|&b| b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r')) {
            let at = self.done + i;
            let (line, col) = line_col(buf, at);
            return Err(ReadError::NotText {
                line,
                col,
                message: format!("control character 0x{:02x}: not allowed in YAML or JSON text (is this a text file?)", buf[at]),
            });
        }
        Ok(())
    }

    fn finish(&mut self, buf: &[u8]) -> Result<(), ReadError> {
        if self.done < buf.len() {
            let (line, col) = line_col(buf, self.done);
            return Err(ReadError::NotText { line, col, message: "invalid UTF-8 (the file ends inside a character)".into() });
        }
        Ok(())
    }
}

/// 1-based line and column (in characters; the bytes before `at` are valid UTF-8) of byte `at`.
fn line_col(buf: &[u8], at: usize) -> (usize, usize) {
    let before = &buf[..at];
    let line_start = before.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let col = before[line_start..].iter().filter(|&&b| (b & 0xC0) != 0x80).count() + 1;
    (line, col)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(bytes: &[u8], limit: u64) -> Result<String, ReadError> {
        read_text_from(bytes, limit, 0)
    }

    /// A reader that hands out its bytes a few at a time, to split characters across reads.
    struct Trickle<'a>(&'a [u8], usize);
    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            let n = self.1.min(self.0.len()).min(out.len());
            out[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    #[test]
    fn text_within_the_limit_is_returned() {
        assert_eq!(read(b"a: 1\nb: \xc3\xa9\n", 100).unwrap(), "a: 1\nb: é\n");
        assert_eq!(read(b"", 0).unwrap(), "");
        assert_eq!(read(b"12345", 5).unwrap(), "12345");
    }

    #[test]
    fn the_limit_is_enforced_while_reading() {
        assert!(matches!(read(b"123456", 5), Err(ReadError::TooLarge { limit: 5 })));
        // An endless source stops at the limit (here: `/dev/zero`'s bytes, but text).
        let endless = std::io::repeat(b'a');
        assert!(matches!(read_text_from(endless, 1 << 20, 0), Err(ReadError::TooLarge { .. })));
        assert_eq!(ReadError::TooLarge { limit: MAX_FILE_BYTES }.to_string(), "larger than the limit of 32 MiB (reading stopped there)");
    }

    #[test]
    fn control_characters_are_reported_with_their_position() {
        let e = read(b"a: 1\nbb: x\x00y\n", 100).unwrap_err();
        assert_eq!(e.position(), Some((2, 6)));
        assert!(e.to_string().contains("control character 0x00"), "{e}");
        // Tab, CR and LF are text.
        assert!(read(b"a:\t1\r\n", 100).is_ok());
        // `/dev/zero` fails on its first byte, long before any limit.
        let e = read_text_from(std::io::repeat(0), u64::MAX, 0).unwrap_err();
        assert_eq!(e.position(), Some((1, 1)));
    }

    #[test]
    fn invalid_utf8_is_reported_with_its_position() {
        let e = read(b"a: 1\nk: \xc3\xa9\xff\n", 100).unwrap_err();
        assert_eq!(e.position(), Some((2, 5)), "{e}");
        let e = read(b"x: \xe2\x82", 100).unwrap_err();
        assert_eq!(e.position(), Some((1, 4)), "{e}");
        assert!(e.to_string().contains("ends inside a character"), "{e}");
    }

    #[test]
    fn characters_split_across_reads_are_fine() {
        let text = "k: é€😀\n".repeat(50);
        for step in 1..5 {
            let got = read_text_from(Trickle(text.as_bytes(), step), 10_000, 0).unwrap();
            assert_eq!(got, text);
        }
    }

    #[test]
    fn sizes_print_in_their_unit() {
        assert_eq!(human_size(32 << 20), "32 MiB");
        assert_eq!(human_size(1536), "1536 bytes");
        assert_eq!(human_size(2048), "2 KiB");
    }
}
