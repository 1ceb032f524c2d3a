//! Cross-site scripting by HTML and JavaScript tokenization.
//!
//! The value is read the way a browser would read it in the places it can be reflected:
//! - as HTML text: an HTML tokenizer ([`html`]) follows the WHATWG tokenizer states that matter
//!   (tag open, tag name, attribute name/value with all quoting styles, comments, bogus comments,
//!   unclosed tags, which a browser completes with the page's next `>`), and judges each start
//!   tag: script-capable elements, event handler attributes, URL attributes whose scheme (after
//!   entity decoding and the control/whitespace stripping browsers do) is `javascript:`,
//!   `vbscript:` or `data:text/html`, CSS with `expression()`/`url(javascript:)`, `srcdoc`,
//!   SVG animation of `href`/handlers, meta refresh;
//! - inside an attribute value: the tail after the first quote (or the whole value, unquoted) is
//!   read in the "before attribute name" state, so `" onmouseover=alert(1) x="` is an attribute;
//! - inside a script string: after the first quote of each kind, a JavaScript operator or `;`
//!   followed by a call of a sink (alert, prompt, confirm, eval, Function, setTimeout, fetch,
//!   import, constructor...) or a use of `document.cookie`/`location`; `${...}` in a template;
//! - as a URL: a value that starts with a script scheme.
//!
//! Benign text with `<` (comparisons, `<3`, `<john@example.com>`, markdown, code) has no tag with
//! a dangerous name or attribute, and no string breakout followed by a sink.
#![forbid(unsafe_code)]

mod html;
mod inert;
mod js;

#[cfg(test)]
mod tests;

use crate::{truncate, Category, Detector, Gate, Hit, Input, Level};

/// The XSS detector.
#[derive(Debug, Default, Clone, Copy)]
pub struct XssDetector;

/// The XSS detector, boxed.
pub fn detector() -> Box<dyn Detector> {
    Box::new(XssDetector)
}

impl Detector for XssDetector {
    fn name(&self) -> &'static str {
        "xss"
    }

    fn gate(&self) -> Option<Gate> {
        Some(GATE)
    }

    fn product_token_gate(&self) -> Option<fn(&str) -> bool> {
        Some(product_token_gate)
    }

    fn check(&self, input: &Input<'_>, level: Level) -> Option<Hit> {
        let threshold = crate::engine::threshold(level);
        input.best_view(analyze, |f| f.confidence).filter(|f| f.confidence >= threshold).map(|f| Hit {
            detector: "xss",
            category: Category::Xss,
            confidence: f.confidence,
            fragment: f.fragment,
            why: f.why,
        })
    }

    /// Free text is shown as text: in an element's content, a quoted attribute or a script's
    /// string it changes nothing without a byte that leaves them (`<`, `>`, a quote, a
    /// backtick), and in an unquoted attribute without `=` (a new attribute). A value that
    /// begins with a scheme (`javascript:alert(1)`) is a URL wherever a link shows it, when
    /// its parentheses balance (`javascript:void(0` typed so far runs nothing). Words about
    /// script (`document.cookie httponly`, `onload event javascript`) are neither. A
    /// `<script>` start tag without `src` and without its end tag (`<script>alert(1`, typed
    /// so far) runs nothing either: the page's markup after it becomes its text up to the
    /// page's next `</script>`, which is no script; what is left of the value is judged.
    fn in_free_text(&self, input: &Input<'_>, hit: Hit, level: Level) -> Option<Hit> {
        let mut hit = hit;
        let rest = unclosed_script_removed(input.decoded);
        if let Some(rest) = &rest {
            let again = Input { raw: rest, decoded: rest, field: input.field };
            hit = self.check(&again, level)?;
        }
        let t = rest.as_deref().unwrap_or(input.decoded).trim_start();
        let leaves = t.bytes().any(|b| matches!(b, b'<' | b'>' | b'"' | b'\'' | b'`' | b'='));
        let scheme = t.split_once(':').is_some_and(|(s, _)| !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphabetic()))
            && t.bytes().filter(|&b| b == b'(').count() == t.bytes().filter(|&b| b == b')').count();
        (leaves || scheme).then_some(hit)
    }
}

/// `s` without its `<script` start tags, and without the start of an end tag it ends with
/// (`</scr`), when no start tag has a `src` attribute and no `</script` end tag closes them
/// ([`XssDetector::in_free_text`]); `None` when it has none or they run.
fn unclosed_script_removed(s: &str) -> Option<String> {
    let lower = s.to_ascii_lowercase();
    // A tag name ends at a blank, `/`, `>` or the end of the value.
    let tag_at = |name: &str| {
        let mut out = Vec::new();
        let mut from = 0;
        while let Some(i) = lower[from..].find(name) {
            let at = from + i;
            let end = at + name.len();
            if lower.as_bytes().get(end).is_none_or(|&c| c.is_ascii_whitespace() || c == b'/' || c == b'>') {
                out.push(at);
            }
            from = end;
        }
        out
    };
    let starts = tag_at("<script");
    if starts.is_empty() || !tag_at("</script").is_empty() {
        return None;
    }
    let mut out = String::with_capacity(s.len());
    let mut from = 0;
    for at in starts {
        if at < from {
            continue;
        }
        let end = lower[at..].find('>').map_or(lower.len(), |e| at + e + 1);
        if lower[at..end].contains("src") {
            return None;
        }
        out.push_str(&s[from..at]);
        from = end;
    }
    out.push_str(&s[from..]);
    // An end tag being typed (`<script>alert(1)</scr`): no tag yet.
    let lower_out = out.to_ascii_lowercase();
    if let Some(k) = (1.."</script".len()).rev().find(|&k| lower_out.ends_with(&"</script"[..k])) {
        out.truncate(out.len() - k);
    }
    Some(out)
}

/// The pre-filter declared to the engine ([`Gate`]): the bytes and literals [`analyze`] needs
/// to find anything. Each view it reads is judged by [`analyze_view`], which looks at markup,
/// attributes, breakouts and calls only when [`may_hold_script`] says yes: a `<`, `(` or
/// backtick, an `=` (after an attribute name), a script or `data:` scheme (anchors; controls
/// inside a scheme open every gate) or a sink name (`document`, `alert`, `prompt`, `confirm`:
/// anchors); the views beyond the value itself need `%` (one more URL-decoding layer), `&` (a
/// character reference; with `%` and `\`, the encoded `<` or `>` probes), `<` (form encoding
/// not undone), `+AD` (UTF-7: an anchor) or a character that opens every gate (`¼`, `¾`,
/// fullwidth forms). What else is left, a value that is an event handler name
/// ([`handler_like`], which needs an `o` or `O`: its [`Gate::test_bytes`]), is reported below
/// every level. So a quote, `>`, `)`, `;` or a square bracket alone (`don't`, `"Questions"`,
/// `[solved]`) opens nothing: without a `<`, `(`, backtick, `=` or a sink after it,
/// a quote that closes an attribute or a string leads nowhere. An `&` opens it only through
/// [`gate_test`] ([`amp_may_matter`]): a typographic entity of a title
/// (`Deploy to Heroku isn&rsquo;t working`, `&ldquo;Questions&rdquo;`) leads nowhere either.
const GATE: Gate = Gate {
    bytes: "`(<=\\%",
    anchors: &["javascript:", "vbscript:", "livescript:", "mocha:", "data:", "+ad", "document", "alert", "prompt", "confirm"],
    words: &[],
    test: Some(gate_test),
    test_bytes: "oO&",
    test_only: "",
};

/// [`GATE`]'s structural test, run on a value with an `o`, `O` or `&` and no other gate byte
/// or anchor: a bare handler name ([`handler_like`]) or an `&` that may matter
/// ([`amp_may_matter`]).
fn gate_test(s: &str) -> bool {
    handler_like(s) || amp_may_matter(s)
}

/// Whether [`analyze`] may find something in a value with an `&` and none of the other bytes
/// and anchors of [`GATE`], in which [`handler_like`] says no. Its views are then the value
/// itself, judged by [`analyze_view_of`], which without [`may_hold_script`] finds at most a
/// handler name; [`encoded_angle`]; and the text with its character references decoded, only
/// when one decodes ([`html::entity_scan`]; `&rsquo;`, `&ldquo;` and a query's `&` do not),
/// which [`analyze`] itself passes over when every decoded character is inert and
/// [`decoded_view_is_inert`] says so. So the `&` matters only where one of those says it may
/// (`tests/gate_soundness.rs` checks it on generated references, words and markup).
fn amp_may_matter(s: &str) -> bool {
    memchr::memchr(b'&', s.as_bytes()).is_some()
        && (encoded_angle(s) || may_hold_script(s) || html::entity_scan(s).is_some_and(|(_, inert)| !inert || !decoded_view_is_inert(s)))
}

static GATE_ANCHORS: std::sync::LazyLock<crate::other_util::Anchors> = std::sync::LazyLock::new(|| crate::other_util::Anchors::new(GATE.anchors));

/// [`crate::Detector::product_token_gate`]: a text in the product-token shape
/// ([`crate::shape`]) has no `<`, `>`, quote, backtick, `=`, `&`, `\`, `%` or bracket, so no
/// tag, attribute, string breakout or encoding: it can only hold a scheme or sink name (the
/// anchors of [`GATE`]), a bare handler name, or a call, which in the shape is a name ending
/// in an identifier followed by ` (` ([`crate::shape::call_shape`]: `x/alert (1)`).
fn product_token_gate(s: &str) -> bool {
    GATE_ANCHORS.any(s) || handler_like(s) || crate::shape::call_shape(s)
}

/// A superset of what [`handler_name`] reports: the trimmed value starts with `on` and is 5 to
/// 40 bytes long.
fn handler_like(s: &str) -> bool {
    // First byte ASCII, not whitespace (so not trimmed) and not `o`: no.
    if s.as_bytes().first().is_some_and(|&c| c < 0x80 && c | 0x20 != b'o' && !matches!(c, b'\t'..=b'\r' | b' ')) {
        return false;
    }
    let t = s.trim();
    t.len() >= 5 && t.len() <= 40 && t.as_bytes()[..2].eq_ignore_ascii_case(b"on")
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Finding {
    pub confidence: u8,
    pub why: &'static str,
    pub fragment: String,
}

/// Keeps the strongest finding.
#[derive(Default)]
pub(crate) struct Best {
    pub confidence: u8,
    pub why: &'static str,
    pub at: usize,
}

impl Best {
    pub fn add(&mut self, c: u8, why: &'static str, at: usize) {
        if c > self.confidence {
            self.confidence = c;
            self.why = why;
            self.at = at;
        }
    }
}

/// Analyses `s` and the views a browser may see of it: one more URL-decoding layer when `%XX`
/// escapes remain, and UTF-7 `+ADw-`/`+AD4-` when present (pages served without a charset).
pub(crate) fn analyze(s: &str, steps: &mut usize) -> Option<Finding> {
    let (mut best, script) = analyze_view_of(s, steps);
    if best.is_none() && encoded_angle(s) {
        best = Some(Finding { confidence: 45, why: "encoded `<` or `>` alone (filter probe)", fragment: truncate(s, 64).to_string() });
    }
    let mut consider = |f: Option<Finding>| {
        if f.as_ref().map_or(0, |f| f.confidence) > best.as_ref().map_or(0, |b| b.confidence) {
            best = f;
        }
    };
    // The bytes every further view needs (`%` one more URL-decoding layer, `+` form encoding
    // and UTF-7, `&` a character reference), found in one search rather than one each.
    let (mut pct, mut plus, mut amp) = (false, false, false);
    for p in memchr::memchr3_iter(b'%', b'+', b'&', s.as_bytes()) {
        match s.as_bytes()[p] {
            b'%' => pct = true,
            b'+' => plus = true,
            _ => amp = true,
        }
        if pct && plus && amp {
            break;
        }
    }
    if let Some(d) = if pct { percent_decode(s) } else { None } {
        *steps += s.len();
        consider(analyze_view(&d, steps));
    }
    // Form encoding not undone: `<script+src=...>`.
    if plus && memchr::memchr(b'<', s.as_bytes()).is_some() && memchr::memchr(b' ', s.as_bytes()).is_none() {
        consider(analyze_view(&s.replace('+', " "), steps));
    }
    // HTML character references (a value reflected in an attribute is decoded by the browser).
    // (Decoded only when a reference decodes: `html::entity_scan`, no copy otherwise; and
    // not at all when the decoded text surely holds nothing, see [`decoded_view_is_inert`].)
    // Not in a text that is markup itself: its content's references are text to a browser
    // (`<pre>&lt;script&gt;</pre>` shows code), its attributes' are decoded by the tag walk.
    if let Some((len, inert)) = if amp && !crate::engine::markup_document(s) { html::entity_scan(s) } else { None } {
        *steps += s.len();
        if inert && !script && decoded_view_is_inert(s) {
            // What [`analyze_view`] counts on a text that [`may_hold_script`] passes over.
            *steps += len;
        } else {
            let d = html::decode_entities(s);
            consider(analyze_view(&d, steps));
        }
    }
    let ascii = s.is_ascii();
    let b = s.as_bytes();
    // 7-bit US-ASCII pages drop the high bit: `¼script¾` is `<script>` (`¼` `¾` are C2 BC and
    // C2 BE in UTF-8: a byte search, not a char walk).
    if !ascii && memchr::memchr_iter(0xC2, b).any(|p| matches!(b.get(p + 1), Some(0xBC | 0xBE))) {
        let d: String = s
            .chars()
            .map(|c| match c {
                '\u{bc}' => '<',
                '\u{be}' => '>',
                '\u{a2}' => '"',
                c => c,
            })
            .collect();
        consider(analyze_view(&d, steps));
    }
    // Fullwidth forms typed as such (`＜script＞`, `＂ onmouseover=...`): a back end that
    // normalises text (NFKC) or converts it to a legacy code page (Windows "best fit") turns
    // them into ASCII markup. Only a value with a fullwidth `<`, `"` or `'` is folded, and the
    // folded text is judged like any other: CJK prose with fullwidth brackets around words
    // (`＜お知らせ＞`) or fullwidth parentheses holds no tag or call.
    // `＜` `＂` `＇` are EF BC 9C, EF BC 82, EF BC 87 in UTF-8: a byte search, not a char walk.
    if !ascii && memchr::memchr_iter(0xEF, b).any(|p| b.get(p + 1) == Some(&0xBC) && matches!(b.get(p + 2), Some(0x9C | 0x82 | 0x87))) {
        let d: String = s
            .chars()
            .map(|c| match c {
                '\u{ff01}'..='\u{ff5e}' => char::from_u32(c as u32 - 0xfee0).unwrap_or(c),
                '\u{3000}' => ' ',
                c => c,
            })
            .collect();
        *steps += s.len();
        consider(analyze_view(&d, steps));
    }
    // `+AD` or `+ad` (a byte search: no substring searcher to build for every value).
    if plus && memchr::memchr_iter(b'+', b).any(|p| matches!(b.get(p + 1..p + 3), Some(b"AD" | b"ad"))) {
        let u = s.replace("+ADw-", "<").replace("+AD4-", ">").replace("+ACI-", "\"").replace("+adw-", "<").replace("+ad4-", ">").replace("+aci-", "\"");
        *steps += s.len() * 6;
        consider(analyze_view(&u, steps));
    }
    best
}

fn percent_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let hex = |c: u8| (c as char).to_digit(16);
    if !memchr::memchr_iter(b'%', b).any(|i| b.get(i + 1).is_some_and(|&c| hex(c).is_some()) && b.get(i + 2).is_some_and(|&c| hex(c).is_some())) {
        return None;
    }
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(if b[i] == b'+' { b' ' } else { b[i] });
        i += 1;
    }
    Some(String::from_utf8_lossy(&out).into_owned())
}

/// A value that is exactly an event handler attribute name of a DOM event (`onload`,
/// `onPointerRawUpdate`). Alone, with no `=`, no code and no tag around it, it is data: the
/// event an analytics hit records (`en=onclick`), a component's prop, a UI builder's key. A
/// name cannot run anything; only the attribute it would start can, and that needs an `=` and
/// a value, which the tag and attribute rules judge. So it is reported below every level
/// (`palisade detect explain` shows it), like the names of the handler-name probe lists. Words
/// that only start with `on` (`online`, `onion`, `onset`) are not event names.
fn handler_name(s: &str, best: &mut Best) {
    // [`handler_like`] first: on its first byte alone it passes over most values (a title, a
    // URL), before the Unicode trim (`tests::handler_name_is_a_listed_event_handler`).
    if !handler_like(s) {
        return;
    }
    let t = s.trim();
    if t.len() < 5 || t.len() > 40 || !html::is_handler(t) {
        return;
    }
    let ev = t[2..].to_ascii_lowercase();
    if EVENTS.binary_search(&ev.as_str()).is_ok() {
        best.add(HANDLER_NAME_CONFIDENCE, HANDLER_NAME, 0);
    }
}

/// Below `strict`'s threshold (40): a bare handler name is not XSS ([`handler_name`]).
const HANDLER_NAME_CONFIDENCE: u8 = 35;

const HANDLER_NAME: &str = "event handler name";

/// DOM event names (HTML, DOM, CSS animations/transitions, pointer, touch, media, SVG/SMIL,
/// composition, device and gamepad, legacy IE (HTML+TIME `onmediacomplete`, `onundo`) and
/// prefixed Gecko/WebKit events), sorted.
const EVENTS: &[&str] = &[
    "abort",
    "activate",
    "afterprint",
    "afterscriptexecute",
    "afterupdate",
    "animationcancel",
    "animationend",
    "animationiteration",
    "animationstart",
    "appinstalled",
    "auxclick",
    "beforeactivate",
    "beforecopy",
    "beforecut",
    "beforedeactivate",
    "beforeeditfocus",
    "beforeinput",
    "beforeinstallprompt",
    "beforematch",
    "beforepaste",
    "beforeprint",
    "beforescriptexecute",
    "beforetoggle",
    "beforeunload",
    "beforeupdate",
    "begin",
    "blur",
    "bounce",
    "cancel",
    "canplay",
    "canplaythrough",
    "cellchange",
    "change",
    "click",
    "close",
    "command",
    "compositionend",
    "compositionstart",
    "compositionupdate",
    "contentvisibilityautostatechange",
    "contextlost",
    "contextmenu",
    "contextrestored",
    "controlselect",
    "copy",
    "cuechange",
    "cut",
    "dataavailable",
    "datasetchanged",
    "datasetcomplete",
    "dblclick",
    "deactivate",
    "devicemotion",
    "deviceorientation",
    "deviceorientationabsolute",
    "dommousescroll",
    "drag",
    "dragdrop",
    "dragend",
    "dragenter",
    "dragexit",
    "dragleave",
    "dragover",
    "dragstart",
    "drop",
    "durationchange",
    "emptied",
    "end",
    "ended",
    "error",
    "errorupdate",
    "filterchange",
    "finish",
    "focus",
    "focusin",
    "focusout",
    "formdata",
    "freeze",
    "fullscreenchange",
    "fullscreenerror",
    "gamepadconnected",
    "gamepaddisconnected",
    "gotpointercapture",
    "hashchange",
    "help",
    "input",
    "invalid",
    "keydown",
    "keypress",
    "keyup",
    "languagechange",
    "layoutcomplete",
    "load",
    "loadeddata",
    "loadedmetadata",
    "loadend",
    "loadstart",
    "losecapture",
    "lostpointercapture",
    "mediacomplete",
    "mediaerror",
    "message",
    "messageerror",
    "mousedown",
    "mouseenter",
    "mouseleave",
    "mousemove",
    "mouseout",
    "mouseover",
    "mouseup",
    "mousewheel",
    "move",
    "moveend",
    "movestart",
    "mozfullscreenchange",
    "mozfullscreenerror",
    "mozmousepixelscroll",
    "mozpointerlockchange",
    "mozpointerlockerror",
    "offline",
    "online",
    "orientationchange",
    "outofsync",
    "pagehide",
    "pagereveal",
    "pageshow",
    "pageswap",
    "paste",
    "pause",
    "play",
    "playing",
    "pointercancel",
    "pointerdown",
    "pointerenter",
    "pointerleave",
    "pointerlockchange",
    "pointerlockerror",
    "pointermove",
    "pointerout",
    "pointerover",
    "pointerrawupdate",
    "pointerup",
    "popstate",
    "progress",
    "propertychange",
    "ratechange",
    "readystatechange",
    "redo",
    "rejectionhandled",
    "repeat",
    "reset",
    "resize",
    "resizeend",
    "resizestart",
    "resume",
    "reverse",
    "rowdelete",
    "rowenter",
    "rowexit",
    "rowinserted",
    "rowsdelete",
    "rowsenter",
    "rowsinserted",
    "scroll",
    "scrollend",
    "search",
    "securitypolicyviolation",
    "seek",
    "seeked",
    "seeking",
    "select",
    "selectionchange",
    "selectstart",
    "show",
    "slotchange",
    "stalled",
    "start",
    "stop",
    "storage",
    "submit",
    "suspend",
    "syncrestored",
    "timeerror",
    "timeupdate",
    "toggle",
    "touchcancel",
    "touchend",
    "touchmove",
    "touchstart",
    "trackchange",
    "transitioncancel",
    "transitionend",
    "transitionrun",
    "transitionstart",
    "undo",
    "unhandledrejection",
    "unload",
    "urlflip",
    "visibilitychange",
    "volumechange",
    "waiting",
    "webkitanimationend",
    "webkitanimationiteration",
    "webkitanimationstart",
    "webkitfullscreenchange",
    "webkitfullscreenerror",
    "webkittransitionend",
    "wheel",
];

fn analyze_view(s: &str, steps: &mut usize) -> Option<Finding> {
    analyze_view_of(s, steps).0
}

/// [`analyze_view`], and what [`may_hold_script`] said of `s`.
fn analyze_view_of(s: &str, steps: &mut usize) -> (Option<Finding>, bool) {
    // Fast path: no markup, quote, URL scheme, call or template can occur.
    let mut best = Best::default();
    handler_name(s, &mut best);
    if !may_hold_script(s) {
        *steps += s.len();
        return (finding(s, &best), false);
    }
    html::scan(s, &mut best, steps);
    js_entity(s, &mut best, steps);
    html::attribute_breakout(s, &mut best, steps);
    js::string_breakout(s, &mut best, steps);
    js::url_and_calls(s, &mut best, steps);
    (finding(s, &best), true)
}

/// Whether [`analyze_view`] finds nothing in `decode_entities(s)`, given that
/// [`may_hold_script`] says no on `s` and that every character decoded from a reference is
/// inert ([`html::entity_scan`]: no ASCII letter, `<`, `(`, `` ` `` or `=`). The decoded text
/// is `s` with each reference replaced by its character, so:
/// - its `<`, `(` and backticks are those of `s` (none);
/// - a sink name in it would be a run of letters, which no decoded character is part of: a
///   run of `s`, where [`has_sink_anchor`] found none;
/// - it has no `=` when `s` has none (checked here), so no attribute name is looked at;
/// - it starts as `s` does up to the first `&`: when `s` starts with an ASCII byte that is not
///   `&`, whitespace or `o`/`O`, so does the decoded text, and [`handler_like`] says no; when
///   the scheme walk of [`html::scheme`] rejects `s` before its first `&`
///   ([`scheme_rejected_before_amp`]), it rejects the decoded text at the same byte.
///
/// Then [`analyze_view`] of the decoded text finds nothing (no handler name, and
/// [`may_hold_script`] says no), and it need not be made (`tests::analyze_is_the_best_of_every_view_*`).
fn decoded_view_is_inert(s: &str) -> bool {
    let b = s.as_bytes();
    let Some(&c) = b.first() else { return false };
    c < 0x80 && c != b'&' && c | 0x20 != b'o' && !matches!(c, b'\t'..=b'\r' | b' ') && memchr::memchr(b'=', b).is_none() && scheme_rejected_before_amp(b)
}

/// Whether the walk of [`html::scheme`] returns `None` on a mismatch before it reaches the
/// first `&` of `b` (so on any text that has the bytes of `b` up to that `&`). The schemes
/// are at most eleven bytes: the walk decides before its buffer of 24 is full.
fn scheme_rejected_before_amp(b: &[u8]) -> bool {
    let mut n = 0;
    let mut want: &[u8] = b"";
    for &c in b {
        if c == b'&' {
            return false;
        }
        if n == 0 && (c <= b' ' || c == b'"' || c == b'\'' || c == b'`') {
            continue;
        }
        if c < b' ' {
            continue;
        }
        let c = c.to_ascii_lowercase();
        if n == 0 {
            let Some(w) = html::scheme_of_letter(c) else { return true };
            want = w;
        }
        if n < want.len() && c != want[n] {
            return true;
        }
        n += 1;
        if n == want.len() {
            return false;
        }
    }
    false
}

/// Netscape 4 JavaScript entities: `&{code};` in an attribute value runs `code`. One whose
/// code uses a sink (`&{alert(1)};`, `&{document.cookie=true};`) is script wherever the value
/// lands in a tag; `&{()}` (the XSS locator's filter probe) or `&{x}` in a template is not.
/// At most the first eight `&{` are read, each up to its `}` within 256 bytes (linear).
fn js_entity(s: &str, best: &mut Best, steps: &mut usize) {
    let b = s.as_bytes();
    for p in memchr::memchr_iter(b'&', b).filter(|&p| b.get(p + 1) == Some(&b'{')).take(8) {
        let body = &b[p + 2..b.len().min(p + 2 + 256)];
        *steps += body.len();
        let Some(e) = memchr::memchr(b'}', body) else { continue };
        let mut end = p + 2 + e;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        if js::find_sink(&s[p + 2..end]).is_some() {
            best.add(65, "JavaScript entity running a sink", p);
            return;
        }
    }
}

/// A value that is exactly one `<` or `>` written in an encoding (`&lt`, `&#x0003c;`,
/// `&#0000060`, `%3C` after the transport's own decoding, `\x3c`, `\u003C`, `%u003c`): the
/// probes that test which encodings a page decodes before it reflects a value. Alone it makes
/// no tag, so strict level only (45); a bare `<` (a comparison operator in a filter form) is
/// not one.
fn encoded_angle(s: &str) -> bool {
    // Before trimming: a value that starts with a letter or digit is no encoding.
    if s.as_bytes().first().is_none_or(|c| c.is_ascii_alphanumeric()) {
        return false;
    }
    let t = s.trim().as_bytes();
    // One look rejects nearly every value: an encoding starts with `&`, `%` or `\`.
    if t.len() < 3 || t.len() > 14 || !matches!(t[0], b'&' | b'%' | b'\\') {
        return false;
    }
    let hex_angle = |h: &[u8]| {
        !h.is_empty()
            && h.len() <= 8
            && h.iter().all(|c| c.is_ascii_hexdigit())
            && h.iter().fold(0u32, |v, c| v * 16 + (*c as char).to_digit(16).unwrap_or(0)) | 2 == 0x3e
    };
    let pre = |p: &[u8]| t.len() >= p.len() && t[..p.len()].eq_ignore_ascii_case(p);
    let body = t.strip_suffix(b";").unwrap_or(t);
    if pre(b"&#x") {
        return hex_angle(&body[3..]);
    }
    if pre(b"&#") {
        let d = &body[2..];
        return !d.is_empty() && d.len() <= 8 && d.iter().all(|c| c.is_ascii_digit()) && d.iter().fold(0u32, |v, c| v * 10 + u32::from(c - b'0')) | 2 == 62;
    }
    if body.eq_ignore_ascii_case(b"&lt") || body.eq_ignore_ascii_case(b"&gt") {
        return true;
    }
    if pre(b"\\u{") && t[t.len() - 1] == b'}' {
        return hex_angle(&t[3..t.len() - 1]);
    }
    for (p, want) in [(&b"%u"[..], 4), (b"\\u", 4), (b"\\x", 2), (b"%", 2)] {
        if pre(p) {
            return t.len() - p.len() == want && hex_angle(&t[p.len()..]);
        }
    }
    false
}

/// The pre-filter of [`analyze_view`], one pass over the bytes, no allocation. Markup needs
/// `<`; a sink call `(` or a backtick; a script URL a scheme at the start; an attribute
/// breakout an `=` after a handler name (`on` and three letters or more), `style`, `href`,
/// `src` or `action`; the remaining sinks are `document.cookie`/`.domain`, `location=`,
/// `innerHTML=`... and `alert`/`prompt`/`confirm` passed as values.
fn may_hold_script(s: &str) -> bool {
    let b = s.as_bytes();
    if memchr::memchr3(b'<', b'(', b'`', b).is_some() || html::scheme(s).is_some() {
        return true;
    }
    for p in memchr::memchr_iter(b'=', b) {
        let mut e = p;
        while e > 0 && html::is_ws(b[e - 1]) {
            e -= 1;
        }
        let mut st = e;
        while st > 0 && b[st - 1].is_ascii_alphabetic() {
            st -= 1;
        }
        let w = &b[st..e];
        let ends = |x: &[u8]| w.len() >= x.len() && w[w.len() - x.len()..].eq_ignore_ascii_case(x);
        if w.windows(2).enumerate().any(|(k, p)| p.eq_ignore_ascii_case(b"on") && w.len() - k - 2 >= 3)
            || [&b"style"[..], b"href", b"src", b"action", b"location", b"innerhtml", b"outerhtml", b"srcdoc"].iter().any(|x| ends(x))
        {
            return true;
        }
    }
    has_sink_anchor(b)
}

/// Whether `document`, `alert`, `prompt` or `confirm` occurs in `b` (ASCII case-insensitive,
/// anywhere): eight bytes at a time, the positions of their first letters (`d`, `a`, `p`, `c`
/// in either case: `c | 0x20` is one of them only for those two bytes) are found with
/// zero-byte tests, and only there is the word compared. An automaton step per byte cost four
/// times as much on prose (`tests::sink_anchor_scan_agrees_with_the_automaton`).
fn has_sink_anchor(b: &[u8]) -> bool {
    let mut i = 0;
    while i + 16 <= b.len() {
        if sink_anchor_in_chunk(b, i) {
            return true;
        }
        i += 8;
    }
    // The last (under 16) bytes, padded with NULs (no anchor letter) so every position has
    // eight bytes to compare.
    let mut buf = [0u8; 24];
    let rest = &b[i..];
    buf[..rest.len()].copy_from_slice(rest);
    sink_anchor_in_chunk(&buf, 0) || sink_anchor_in_chunk(&buf, 8)
}

/// Whether a sink anchor starts at one of the eight positions from `i` (`b` holds 16 bytes
/// from `i`). A letter `c` is the only byte besides its uppercase form whose `| 0x20` is `c`,
/// so eight bytes `| 0x20` equal an anchor under the mask of its length exactly when they
/// spell it in some ASCII case.
#[inline(always)]
fn sink_anchor_in_chunk(b: &[u8], i: usize) -> bool {
    const LO: u64 = 0x0101_0101_0101_0101;
    const M7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    const CASE: u64 = LO * 0x20;
    const fn pack(w: &[u8]) -> (u64, u64) {
        let mut x = 0u64;
        let mut k = 0;
        while k < w.len() {
            x |= (w[k] as u64) << (8 * k);
            k += 1;
        }
        (x, if w.len() == 8 { !0 } else { (1u64 << (8 * w.len())) - 1 })
    }
    const DOCUMENT: (u64, u64) = pack(b"document");
    const ALERT: (u64, u64) = pack(b"alert");
    const PROMPT: (u64, u64) = pack(b"prompt");
    const CONFIRM: (u64, u64) = pack(b"confirm");
    #[inline(always)]
    fn word(b: &[u8], j: usize) -> u64 {
        match b.get(j..j + 8) {
            Some(w) => u64::from_le_bytes(w.try_into().unwrap_or([0; 8])) | CASE,
            None => 0,
        }
    }
    let x = word(b, i);
    // Per byte, the high bit of `((v & M7) + M7) | v` is clear exactly when the byte of `v` is
    // zero (no carry crosses bytes): the first letters of the anchors, in either case.
    let nz = |v: u64| ((v & M7) + M7) | v;
    let mut m = !(nz(x ^ (LO * u64::from(b'd'))) & nz(x ^ (LO * u64::from(b'a'))) & nz(x ^ (LO * u64::from(b'p'))) & nz(x ^ (LO * u64::from(b'c')))) & !M7;
    while m != 0 {
        let j = i + (m.trailing_zeros() / 8) as usize;
        let (w, mask) = match b[j] | 0x20 {
            b'd' => DOCUMENT,
            b'a' => ALERT,
            b'p' => PROMPT,
            _ => CONFIRM,
        };
        if word(b, j) & mask == w {
            return true;
        }
        m &= m - 1;
    }
    false
}

/// The automaton [`has_sink_anchor`] replaced (its test oracle).
#[cfg(test)]
static SINK_ANCHORS: std::sync::LazyLock<crate::other_util::Anchors> =
    std::sync::LazyLock::new(|| crate::other_util::Anchors::new(&["document", "alert", "prompt", "confirm"]));

fn finding(s: &str, best: &Best) -> Option<Finding> {
    if best.confidence == 0 {
        return None;
    }
    let mut at = best.at.min(s.len());
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    Some(Finding { confidence: best.confidence, why: best.why, fragment: truncate(&s[at..], 64).to_string() })
}
