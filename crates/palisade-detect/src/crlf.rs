//! CRLF / HTTP header injection (response splitting).
//!
//! A CR or LF (decoded from `%0d%0a`, or the Unicode `嘊`/`嘍` forms that some stacks truncate
//! to a byte) followed by something a parser would take as a header line (`Name: value`) or a
//! body (`<html`, a blank line) in a value that can end up in a response header or redirect:
//! header, cookie, path, query. Multi-line text in form or JSON bodies is ordinary, so there
//! only well-known response headers count: at a lower confidence after a line of text, as
//! high as in a URL after a single token (`en`, `/next`, `a`: the kind of value a server
//! copies into a header, which no line of prose is: prose has blanks or ends a sentence).
//!
//! Mail (SMTP and IMAP) command injection is the same break-out into another line-based
//! protocol: a value an application writes into a message header or a command line (a
//! recipient, a subject, a mailbox name) followed by a line break and a line of that protocol:
//! an SMTP envelope command (`MAIL FROM:<...>`, `RCPT TO:<...>`, RFC 5321 §4.1), a tagged IMAP
//! command (`A1 FETCH 1:* (BODY[])`, RFC 3501 §6: a tag, then a command name as clients write
//! it, in capitals), or a message header (`Bcc:`, `Cc:`, RFC 5322 §3.6) after a value that is
//! one token or one mail address (`victim@example.com\r\nBcc: ...`). A closing quote before the
//! break (`INBOX"\r\nA2 LOGOUT`) leaves the quoted string the value was put in.

use crate::other_util::{best, gate, mk, step, views};
use crate::{Category, Detector, FieldKind, Gate, Hit, Input, Level};

const NAME: &str = "crlf";

pub struct CrlfDetector;

pub fn detector() -> Box<dyn Detector> {
    Box::new(CrlfDetector)
}

/// The pre-filter declared to the engine ([`Gate`]): a line break is a control character or
/// a non-ASCII one (controls and non-ASCII characters but letters of other scripts and
/// typographic quotes always open a gate; `嘊`/`嘍` are kept out of the letters:
/// [`crate::engine::NOT_LETTERS`]), or encoded (`%`, `\\`).
const GATE: Gate = Gate { bytes: "%\\", anchors: &[], words: &[], test: None, test_bytes: "", test_only: "" };

impl Detector for CrlfDetector {
    fn name(&self) -> &'static str {
        NAME
    }

    fn gate(&self) -> Option<Gate> {
        Some(GATE)
    }

    fn check(&self, input: &Input<'_>, level: Level) -> Option<Hit> {
        let url_borne = matches!(input.field, FieldKind::Header | FieldKind::Cookie | FieldKind::PathSegment | FieldKind::QueryValue | FieldKind::QueryName);
        let mut h = None;
        for v in views(input.decoded).iter().filter(|v| !v.is_empty()) {
            h = best(h, analyse(v, url_borne));
        }
        gate(h, level)
    }
}

const RESPONSE_HEADERS: &[&str] = &[
    "set-cookie",
    "location",
    "content-type",
    "content-length",
    "refresh",
    "access-control-allow-origin",
    "access-control-allow-credentials",
    "x-xss-protection",
    "content-security-policy",
    "transfer-encoding",
    "cache-control",
    "link",
    "http/1.",
];

/// The header fields of a message (RFC 5322 §3.6, RFC 2045 §3) an injection adds to send
/// mail elsewhere or rewrite it.
const MAIL_HEADERS: &[&str] =
    &["bcc", "cc", "to", "from", "reply-to", "sender", "subject", "return-path", "mime-version", "content-type", "content-transfer-encoding"];

/// The commands of IMAP4rev1 (RFC 3501 §6) and its common extensions (`IDLE`, `MOVE`).
const IMAP_COMMANDS: &[&str] = &[
    "CAPABILITY",
    "NOOP",
    "LOGOUT",
    "STARTTLS",
    "AUTHENTICATE",
    "LOGIN",
    "SELECT",
    "EXAMINE",
    "CREATE",
    "DELETE",
    "RENAME",
    "SUBSCRIBE",
    "UNSUBSCRIBE",
    "LIST",
    "LSUB",
    "STATUS",
    "APPEND",
    "CHECK",
    "CLOSE",
    "EXPUNGE",
    "SEARCH",
    "FETCH",
    "STORE",
    "COPY",
    "UID",
    "IDLE",
    "MOVE",
];

/// Whether `name` is written as HTTP header names are: two or more words joined by `-`, each
/// starting with a capital letter (`X-Forwarded-Host`, `Set-Cookie`).
fn http_style_name(name: &str) -> bool {
    let mut words = 0;
    for w in name.split('-') {
        if !w.as_bytes().first().is_some_and(u8::is_ascii_uppercase) || !w.bytes().all(|b| b.is_ascii_alphanumeric()) {
            return false;
        }
        words += 1;
    }
    words >= 2
}

/// Whether `line` is an SMTP envelope command with its path (`MAIL FROM:<a@b>`, `RCPT TO:<x>`:
/// RFC 5321 §4.1.1.2-3; the path's `<` is part of the grammar), in any case.
fn smtp_command(line: &str) -> bool {
    let b = line.as_bytes();
    [&b"mail from:"[..], &b"rcpt to:"[..]]
        .iter()
        .any(|cmd| b.len() > cmd.len() && b[..cmd.len()].eq_ignore_ascii_case(cmd) && b[cmd.len()..].iter().find(|&&c| c != b' ').is_some_and(|&c| c == b'<'))
}

/// Whether `line` is a tagged IMAP command (RFC 3501 §2.2.1): a tag of letters, digits and
/// `.` (at most 16), a space, a command name of [`IMAP_COMMANDS`] written in capitals, then the
/// end of the line or a space and its arguments.
fn imap_command(line: &str) -> bool {
    let Some((tag, rest)) = line.split_once(' ') else { return false };
    if tag.is_empty() || tag.len() > 16 || !tag.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'.') {
        return false;
    }
    let cmd = rest.split(' ').next().unwrap_or("");
    IMAP_COMMANDS.contains(&cmd) && (rest.len() == cmd.len() || rest.len() > cmd.len() + 1)
}

/// Whether `head` is one mail address (RFC 5322 §3.4.1 `addr-spec`): a local part that is a
/// run of visible characters or a quoted string (which may hold anything, a line break too),
/// `@`, and a domain of dotted labels.
fn mail_address(head: &str) -> bool {
    let Some((local, domain)) = head.rsplit_once('@') else { return false };
    let local_ok = if let Some(q) = local.strip_prefix('"') {
        q.strip_suffix('"').is_some_and(|inner| !inner.contains('"'))
    } else {
        !local.is_empty() && local.bytes().all(|b| b.is_ascii_graphic() && !matches!(b, b'<' | b'>' | b'(' | b')' | b',' | b';' | b':' | b'"'))
    };
    let labels_ok = domain.split('.').all(|l| !l.is_empty() && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'));
    local_ok && labels_ok && domain.contains('.')
}

/// Whether `head` (the value before a line break) is one token once a closing quote and the
/// blanks after it are set aside: `INBOX`, `x`, `INBOX" ` (the end of a quoted string).
fn token_or_closed_quote(head: &str) -> bool {
    let h = head.trim_end_matches([' ', '\t']);
    let h = h.strip_suffix('"').unwrap_or(h);
    !h.is_empty() && h.bytes().all(|b| b.is_ascii_graphic()) && !h.ends_with([',', '.', '!', '?', ':', ';'])
}

fn analyse(s: &str, url_borne: bool) -> Option<Hit> {
    let mut out = None;
    let mut it = s.char_indices().peekable();
    while let Some((p, ch)) = it.next() {
        step(1);
        if !matches!(ch, '\r' | '\n' | '\u{560a}' | '\u{560d}') {
            continue;
        }
        // Skip the rest of the line break.
        let mut q = p + ch.len_utf8();
        while let Some(&(pp, c2)) = it.peek() {
            if matches!(c2, '\r' | '\n' | '\u{560a}' | '\u{560d}') {
                it.next();
                q = pp + c2.len_utf8();
            } else {
                break;
            }
        }
        let line: &str = &s[q..];
        let line = crate::truncate(&line[..line.find(['\r', '\n']).unwrap_or(line.len())], 256);
        let colon = line.find(':');
        let name = colon.map(|c| &line[..c]).unwrap_or("");
        let header_like = !name.is_empty() && name.len() <= 64 && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        let lname = name.to_ascii_lowercase();
        let known = RESPONSE_HEADERS.iter().any(|h| lname == *h) || line.to_ascii_lowercase().starts_with("http/1.");
        let body = line.trim_start().to_ascii_lowercase().starts_with("<html") || line.trim_start().to_ascii_lowercase().starts_with("<script");
        // The value up to the first line break is one token (the break at `p` is the first).
        let head = &s[..p];
        let token =
            !head.is_empty() && head.bytes().all(|b| b.is_ascii_graphic()) && !head.ends_with([',', '.', '!', '?', ':', ';']) && !head.contains(['\r', '\n']);
        let c = match (url_borne, known, header_like, body) {
            (true, true, _, _) => 95,
            (true, _, true, _) => 80,
            (true, _, _, true) => 85,
            (false, true, _, _) if token => 75,
            (false, true, _, _) => 55,
            // A header of its own after one token (`en\r\nX-Injected: 1`): a name of
            // capitalised words joined by `-`, as HTTP writes header names and prose never
            // writes a label.
            (false, _, true, _) if token && http_style_name(name) && !line[name.len() + 1..].trim().is_empty() => 65,
            _ => 0,
        };
        if c > 0 {
            out = best(out, Some(mk(NAME, Category::Crlf, c, &s[p..], "line break followed by an injected header or body")));
        }
        let command = smtp_command(line) || imap_command(line);
        let c = if command && (url_borne || token_or_closed_quote(head)) {
            85
        } else if command && smtp_command(line) {
            70
        } else if header_like && mail_address(head) {
            if MAIL_HEADERS.contains(&lname.as_str()) {
                75
            } else {
                65
            }
        } else {
            0
        };
        if c > 0 {
            out = best(out, Some(mk(NAME, Category::Crlf, c, &s[p..], "line break followed by an injected mail command or header")));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::other_util::take_steps;

    fn q(v: &str, f: FieldKind) -> u8 {
        detector().check(&Input { raw: v, decoded: v, field: f }, Level::Strict).map_or(0, |h| h.confidence)
    }

    #[test]
    fn attacks() {
        for v in [
            "/x\r\nSet-Cookie: a=b",
            "en\r\nLocation: http://evil",
            "a%0d%0aSet-Cookie:%20x=y",
            "x\r\n\r\n<html>pwned",
            "a\u{560a}\u{560d}Set-Cookie: x",
            "a\nX-Injected: 1",
        ] {
            assert!(q(v, FieldKind::QueryValue) >= 60, "{v}: {}", q(v, FieldKind::QueryValue));
        }
    }

    #[test]
    fn body_values_split_after_a_single_token() {
        // Written for this rule: a form or JSON value that a server copies into a header.
        for v in ["en\r\nSet-Cookie: sid=1", "/next\r\nLocation: https://evil.example/", "a\r\nContent-Length: 0\r\n\r\nHTTP/1.1 200 OK"] {
            for f in [FieldKind::FormValue, FieldKind::JsonValue] {
                assert!(q(v, f) >= 60, "{v}: {}", q(v, f));
            }
        }
        // A header of its own, named as HTTP names headers, after one token.
        for v in ["fr\r\nX-Cache-Key: poisoned", "/home\nAccess-Control-Max-Age: 1"] {
            assert!(q(v, FieldKind::JsonValue) >= 60, "{v}: {}", q(v, FieldKind::JsonValue));
        }
        for v in ["Notes\nTo-do: buy milk", "Hello\nFollow-up: tomorrow", "Thanks\nSee-Also:"] {
            assert!(q(v, FieldKind::FormValue) < 60, "{v}: {}", q(v, FieldKind::FormValue));
        }
        // After a line of prose, a greeting or a heading: text with a header-like line.
        for v in ["Dear team,\r\nLocation: room 4", "Meeting notes\nLocation: Paris", "Thanks!\nLink: see below", "Hi:\r\nContent-Type: text"] {
            assert!(q(v, FieldKind::FormValue) < 60, "{v}: {}", q(v, FieldKind::FormValue));
        }
    }

    #[test]
    fn mail_commands_and_headers_after_a_recipient_or_a_mailbox() {
        // Written for this rule: SMTP envelope commands, tagged IMAP commands, message headers
        // after one address.
        for v in [
            "ops@shop.example\r\nBcc: everyone@list.example",
            "ana@corp.example\ncc:team@corp.example",
            "q@x.example>\r\nRCPT TO:<other@y.example>\r\nDATA",
            "hello\r\nmail from: <boss@corp.example>",
            "Drafts\r\nT7 LOGOUT",
            "Sent\" \r\nz1 UID FETCH 1:* (FLAGS)",
            "Archive\nB2 LIST \"\" *",
            "\"x\r\ny\"@host.example\r\nX-Mailer: z",
        ] {
            for f in [FieldKind::FormValue, FieldKind::JsonValue, FieldKind::MultipartValue, FieldKind::QueryValue] {
                assert!(q(v, f) >= 60, "{v:?} {f:?}: {}", q(v, f));
            }
        }
        assert!(smtp_command("RCPT TO: <a@b>") && !smtp_command("mail from: the boss") && !smtp_command("RCPT TO:"));
        assert!(imap_command("a1 SELECT INBOX") && imap_command("7 NOOP") && !imap_command("2 select the box") && !imap_command("a1 SELECTED"));
        assert!(mail_address("a.b+c@d.example") && mail_address("\"q\r\nr\"@x.example") && !mail_address("a b@c.example") && !mail_address("a@localhost"));
    }

    #[test]
    fn text_with_mail_words_is_not_mail_injection() {
        // Multi-line messages people write: greetings, lists, quoted mail in prose.
        for v in [
            "Hello\nTo: the team",
            "Thanks for the help.\nFrom: Ana",
            "Steps:\n1 SELECT the row\n2 COPY it",
            "Notes\n2 copy of the contract",
            "Forwarded message\r\nFrom: Bob <bob@corp.example>\r\nSubject: Lunch",
            "Please mail from: <the office> later\nok",
            "Call me\nA1 FETCH later",
        ] {
            for f in [FieldKind::FormValue, FieldKind::JsonValue] {
                assert!(q(v, f) < 60, "{v:?} {f:?}: {}", q(v, f));
            }
        }
    }

    #[test]
    fn benign() {
        assert!(q("Dear team,\r\nNote: the meeting moved\r\nThanks", FieldKind::FormValue) < 60);
        assert!(q("line one\nline two", FieldKind::QueryValue) < 60);
        assert!(q("Subject: hi\nLocation: Paris", FieldKind::JsonValue) < 60);
    }

    #[test]
    fn linear() {
        for unit in ["\r\n", "\nA:", "\n"] {
            let v = unit.repeat(1_000_000 / unit.len());
            take_steps();
            let _ = detector().check(&Input { raw: &v, decoded: &v, field: FieldKind::QueryValue }, Level::Strict);
            assert!(take_steps() < 80 * v.len() as u64, "{unit}");
        }
    }
}
