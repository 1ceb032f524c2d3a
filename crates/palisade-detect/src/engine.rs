//! The detection engine: compiled once from settings, shared by all workers.
//!
//! For each value the extractor yields ([`crate::extract`]), the engine
//! 1. classifies its bytes with one 256-entry table lookup per byte into "may need decoding"
//!    and "could be base64" bits, the detectors whose [`Gate`] bytes occur, and (for
//!    detectors without a gate) the bit set of [`FAMILIES`] the value could concern;
//! 2. decodes it into candidates when it may hold encodings ([`crate::decode`]);
//! 3. for each candidate, completes the gates in one pass of a shared Aho-Corasick automaton
//!    holding every gated detector's literals (`Gate::anchors`, `Gate::words`), skipped when
//!    the bytes already opened every gate, then the structural tests (`Gate::test`) of the
//!    gates still closed: a benign value typically opens no gate and runs no detector;
//! 4. runs each detector whose gate is open (detectors without a gate: whose family bits are
//!    set; with a name not in [`FAMILIES`]: every value), keeps hits at or above the level's
//!    threshold (Balanced 60, Strict 40) that no exclusion covers, and reports at most one
//!    finding per detector and value.
//!
//! How a detector declares its pre-filter: implement [`Detector::gate`] (see [`Gate`] for the
//! semantics and the soundness rule; `tests/gate_soundness.rs` checks every gated detector on
//! every corpus value and decoded candidate). At most 64 detectors are gated; further ones
//! fall back to the family bits.

use std::fmt;
use std::ops::ControlFlow;

use aho_corasick::automaton::Automaton;
use aho_corasick::{dfa::DFA, Anchored, MatchKind};
use palisade_core::{Phase, RequestView};

use crate::decode::{self, Decoder, Transforms, BASE64_MIN_LEN};
use crate::extract::{self, Counts, Exceeded, Extractor, Location, Stop};
use crate::{Category, Detector, FieldKind, Gate, Input, Level};

#[cfg(test)]
mod tests;

/// Per-family pre-filter: detector names (aliases share a family) and the ASCII punctuation
/// that may carry the family's attacks. Letters and digits never do; control characters and
/// non-ASCII bytes always may (for every family); a space only where listed.
///
/// The rule for adding a byte to a family's list is conservative: a value made only of
/// letters, digits and the bytes *not* listed must be unable to carry that family's attacks
/// in any context (an SQL injection in a numeric context needs at least a space or a
/// punctuation mark: `1 or 1=1`, `1/**/or/**/1`, `(1)or(1)`; markup needs `<`, a quote, `:`,
/// `=`, `(`...).
pub const FAMILIES: &[(&[&str], &str)] = &[
    (&["sqli", "sql"], " !\"#$%&'()*+,-/:;<=>?[\\]^`{|}~"),
    (&["xss", "html"], "\"'`()<>:=&\\%{}[];"),
    (&["cmdi", "shell"], " !\"#$%&'()*-/;<>?[\\]^`{|}~"),
    (&["path", "lfi", "path-traversal", "traversal", "rfi"], "./\\:%~$"),
    (&["ssti", "template"], "{}$#<>%[]()*@=|"),
    (&["xxe", "xml"], "<&%"),
    (&["log4shell", "jndi"], "${}%"),
    (&["code", "code-injection"], "()`;$'\"[]{}<>\\"),
    (&["crlf"], "%\\"),
    (&["nosql"], "${}[]'\";()=|&:"),
    (&["ldap"], "*()|&=!\\~<>%"),
    (&["ssrf"], ":/@.[]%\\"),
];

/// Bits of the class table beyond the families.
const DECODE: u32 = 1 << 30;
const NON_B64: u32 = 1 << 29;
/// Families bits are `1 << index in FAMILIES`.
const ALL_FAMILIES: u32 = (1 << FAMILIES.len()) - 1;

fn family_of(name: &str) -> Option<usize> {
    FAMILIES.iter().position(|(names, _)| names.contains(&name))
}

fn class_table() -> [u32; 256] {
    let mut t = [0u32; 256];
    for (b, slot) in t.iter_mut().enumerate() {
        let b = b as u8;
        let mut m = 0;
        if !(0x20..0x7F).contains(&b) {
            m |= ALL_FAMILIES;
        } else {
            for (i, (_, triggers)) in FAMILIES.iter().enumerate() {
                if triggers.as_bytes().contains(&b) {
                    m |= 1 << i;
                }
            }
        }
        if matches!(b, b'%' | b'&' | b'\\' | 0) {
            m |= DECODE;
        }
        if !(b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=' | b'-' | b'_')) {
            m |= NON_B64;
        }
        *slot = m;
    }
    t
}

/// The gates of the detectors ([`Gate`]), compiled together. Bit `i` stands for detector `i`.
struct Gates {
    /// Per byte: the gates it opens (controls, DEL and non-ASCII open every gate).
    bytes: [u64; 256],
    /// Detectors that declared a gate.
    gated: u64,
    /// Gated detectors with literals in `ac`.
    literal: u64,
    /// Every literal of every gate, ASCII case-insensitive, all matches (walked byte by byte:
    /// no per-search setup, which matters for short values).
    dfa: Option<DFA>,
    /// Per pattern of `dfa`: the gates it opens, whether it must stand as a word, its length.
    pats: Vec<(u64, bool, usize)>,
    tests: Vec<(u64, GateTest)>,
}

/// A gate's structural test ([`Gate::test`]).
type GateTest = fn(&str) -> bool;

impl Gates {
    fn new(gates: &[Option<Gate>]) -> Gates {
        let mut g = Gates { bytes: [0; 256], gated: 0, literal: 0, dfa: None, pats: Vec::new(), tests: Vec::new() };
        let mut lits: Vec<(String, bool, u64)> = Vec::new();
        for (i, gate) in gates.iter().enumerate().take(64) {
            let Some(gate) = gate else { continue };
            let bit = 1u64 << i;
            g.gated |= bit;
            for (b, slot) in g.bytes.iter_mut().enumerate() {
                if !(0x20..0x7F).contains(&b) || gate.bytes.as_bytes().contains(&(b as u8)) {
                    *slot |= bit;
                }
            }
            for (list, word) in [(gate.anchors, false), (gate.words, true)] {
                for l in list {
                    let l = l.to_ascii_lowercase();
                    match lits.iter_mut().find(|(x, w, _)| *x == l && *w == word) {
                        Some(e) => e.2 |= bit,
                        None => lits.push((l, word, bit)),
                    }
                    g.literal |= bit;
                }
            }
            if let Some(t) = gate.test {
                g.tests.push((bit, t));
            }
        }
        if !lits.is_empty() {
            let dfa = DFA::builder()
                .ascii_case_insensitive(true)
                .match_kind(MatchKind::Standard)
                .build(lits.iter().map(|l| l.0.as_str()))
                .expect("gate literals compile");
            g.dfa = Some(dfa);
            g.pats = lits.iter().map(|l| (l.2, l.1, l.0.len())).collect();
        }
        g
    }

    /// Adds to `m` the gates whose literals occur in `b` (every match, overlapping ones too).
    fn literals(&self, dfa: &DFA, b: &[u8], mut m: u64) -> u64 {
        let Ok(mut sid) = dfa.start_state(Anchored::No) else { return !0 };
        for (i, &c) in b.iter().enumerate() {
            sid = dfa.next_state(Anchored::No, sid, c);
            if !dfa.is_special(sid) {
                continue;
            }
            if dfa.is_dead(sid) {
                break;
            }
            for k in 0..dfa.match_len(sid) {
                let (dm, word, len) = self.pats[dfa.match_pattern(sid, k).as_usize()];
                if dm & !m == 0 {
                    continue;
                }
                if word {
                    let before = (i + 1).checked_sub(len + 1).map(|p| b[p]);
                    let after = b.get(i + 1).copied();
                    if before.is_some_and(|c| c.is_ascii_alphabetic() || c == b'_') || after.is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_') {
                        continue;
                    }
                }
                m |= dm;
            }
            if self.literal & !m == 0 {
                break;
            }
        }
        m
    }

    /// The gates `t` opens, given those its bytes opened (`open`). Ungated detectors are set.
    fn admit(&self, t: &str, open: u64) -> u64 {
        let mut m = open & self.gated;
        if self.literal & !m != 0 {
            if let Some(dfa) = &self.dfa {
                m = self.literals(dfa, t.as_bytes(), m);
            }
        }
        for (bit, test) in &self.tests {
            if m & bit == 0 && test(t) {
                m |= bit;
            }
        }
        m | !self.gated
    }
}

/// Blocking threshold of a level: Balanced 60, Strict 40.
pub fn threshold(level: Level) -> u8 {
    match level {
        Level::Balanced => 60,
        Level::Strict => 40,
    }
}

/// Skip a detector (or a category, or `*` for all) for locations matching a pattern:
/// `*` matches within one path step (no `/`), `**` matches anything; case-insensitive.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Exclusion {
    pub detector: String,
    pub location: String,
}

impl Exclusion {
    fn covers(&self, detector: &str, category: Category, location: &str) -> bool {
        (self.detector == "*" || self.detector == detector || self.detector == category.as_str()) && glob(self.location.as_bytes(), location.as_bytes())
    }
}

/// Glob match: `*` any run without `/`, `**` any run; ASCII case-insensitive. O(p·s).
pub fn glob(pattern: &[u8], s: &[u8]) -> bool {
    // dp[j]: pattern[..i] matches s[..j].
    let mut dp = vec![false; s.len() + 1];
    dp[0] = true;
    let mut i = 0;
    while i < pattern.len() {
        let mut next = vec![false; s.len() + 1];
        if pattern[i] == b'*' {
            let any = pattern.get(i + 1) == Some(&b'*');
            for j in 0..=s.len() {
                next[j] = dp[j] || (j > 0 && next[j - 1] && (any || s[j - 1] != b'/'));
            }
            i += if any { 2 } else { 1 };
        } else {
            for j in 1..=s.len() {
                next[j] = dp[j - 1] && pattern[i].eq_ignore_ascii_case(&s[j - 1]);
            }
            i += 1;
        }
        dp = next;
    }
    dp[s.len()]
}

/// What the engine is built from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EngineConfig {
    pub level: Level,
    /// Headers inspected besides [`extract::DEFAULT_HEADERS`].
    pub headers: Vec<String>,
    pub exclusions: Vec<Exclusion>,
    pub limits: extract::Limits,
    pub decode: decode::Limits,
    /// Stop inspecting a request after this many findings.
    pub max_findings: usize,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            level: Level::Balanced,
            headers: Vec::new(),
            exclusions: Vec::new(),
            limits: extract::Limits::default(),
            decode: decode::Limits::default(),
            max_findings: 8,
        }
    }
}

/// One detection in a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    pub detector: &'static str,
    pub category: Category,
    pub confidence: u8,
    /// Rendered [`Location`], e.g. `query.id`, `body/users/3/name`.
    pub location: String,
    pub field: FieldKind,
    /// The decoded fragment that triggered (at most 64 bytes).
    pub fragment: String,
    pub why: &'static str,
    /// The decodings that revealed it (empty: the raw value).
    pub transforms: Transforms,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ({}, confidence {}) at {} via {}: {}",
            self.detector,
            self.why,
            self.confidence,
            self.location,
            self.transforms,
            self.fragment.escape_debug()
        )
    }
}

/// The result of inspecting one phase of a request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    pub findings: Vec<Finding>,
    /// Set when a limit stopped extraction: the rest of the phase was not inspected.
    pub exceeded: Option<Exceeded>,
    pub counts: Counts,
}

impl Report {
    pub fn clear(&mut self) {
        self.findings.clear();
        self.exceeded = None;
        self.counts = Counts::default();
    }
}

/// Reusable per-worker buffers.
#[derive(Debug, Default)]
pub struct Scratch {
    pub decoder: Decoder,
    pub extract: extract::Scratch,
}

struct Entry {
    det: Box<dyn Detector>,
    /// Family bit; 0 = no pre-filter. Unused when the detector has a gate.
    bit: u32,
    /// Declared a [`Gate`] (checked instead of the family bit).
    gated: bool,
    /// Whether it sees whole XML documents.
    xml_document: bool,
}

/// The compiled engine.
pub struct Engine {
    detectors: Vec<Entry>,
    table: [u32; 256],
    gates: Gates,
    extractor: Extractor,
    config: EngineConfig,
}

impl fmt::Debug for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Engine").field("detectors", &self.detector_names()).field("config", &self.config).finish()
    }
}

impl Engine {
    /// The built-in detectors ([`crate::registry::detectors`]).
    pub fn new(config: EngineConfig) -> Result<Engine, String> {
        Engine::with_detectors(crate::registry::detectors(), config)
    }

    pub fn with_detectors(detectors: Vec<Box<dyn Detector>>, config: EngineConfig) -> Result<Engine, String> {
        let extractor = Extractor::new(&config.headers, config.limits)?;
        let declared: Vec<Option<Gate>> = detectors.iter().map(|d| d.gate()).collect();
        let gates = Gates::new(&declared);
        let detectors = detectors
            .into_iter()
            .enumerate()
            .map(|(i, det)| {
                let fam = family_of(det.name());
                let bit = fam.map_or(0, |i| 1 << i);
                let xml_document = fam == family_of("xxe");
                Entry { det, bit, gated: gates.gated & (1u64 << (i & 63)) != 0 && i < 64, xml_document }
            })
            .collect();
        Ok(Engine { detectors, table: class_table(), gates, extractor, config })
    }

    pub fn detector_names(&self) -> Vec<&'static str> {
        self.detectors.iter().map(|e| e.det.name()).collect()
    }

    pub fn config(&self) -> &EngineConfig {
        &self.config
    }

    /// Scratch buffers sized for this engine.
    pub fn scratch(&self) -> Scratch {
        Scratch { decoder: Decoder::new(self.config.decode), extract: extract::Scratch::default() }
    }

    /// Both phases at the configured level, with fresh buffers (tests, tools). The proxy uses
    /// [`Engine::inspect_phase`] with per-worker scratch.
    pub fn inspect(&self, req: &RequestView<'_>) -> Vec<Finding> {
        let mut scratch = self.scratch();
        let mut report = Report::default();
        self.inspect_phase(req, Phase::Head, self.config.level, &mut scratch, &mut report);
        let head = std::mem::take(&mut report.findings);
        self.inspect_phase(req, Phase::Body, self.config.level, &mut scratch, &mut report);
        let mut all = head;
        all.append(&mut report.findings);
        all
    }

    /// Inspect one phase (head: path, query, headers, cookies; body: the body) into `report`
    /// (cleared first).
    pub fn inspect_phase(&self, req: &RequestView<'_>, phase: Phase, level: Level, scratch: &mut Scratch, report: &mut Report) {
        report.clear();
        let Scratch { decoder, extract } = scratch;
        decoder.set_limits(self.config.decode);
        let mut f = |field: &extract::Field<'_>| self.scan(field.value, field.kind, &field.location, level, decoder, &mut report.findings);
        let (counts, r) = match phase {
            Phase::Head => self.extractor.head(req, extract, &mut f),
            Phase::Body => self.extractor.body(req, extract, &mut f),
        };
        report.counts = counts;
        if let Err(Stop::Exceeded(e)) = r {
            report.exceeded = Some(e);
        }
    }

    /// Inspect one value (corpus evaluation, benchmarks, tests).
    pub fn inspect_value(&self, value: &str, kind: FieldKind, location: &Location<'_>, level: Level, scratch: &mut Scratch, findings: &mut Vec<Finding>) {
        let _ = self.scan(value, kind, location, level, &mut scratch.decoder, findings);
    }

    /// Family and decoding bits, and the gates the bytes open.
    #[inline]
    fn classify(&self, s: &str) -> (u32, u64) {
        let (mut m, mut g) = (0, 0);
        for &b in s.as_bytes() {
            m |= self.table[b as usize];
            g |= self.gates.bytes[b as usize];
        }
        (m, g)
    }

    /// Names of the detectors the pre-filters (gates, or family bits for detectors without a
    /// gate) let see `t` as a candidate (tests and tools: the soundness check of the gates).
    pub fn admitted(&self, t: &str) -> Vec<&'static str> {
        let (mask, open) = self.classify(t);
        let admit = self.gates.admit(t, open);
        self.detectors.iter().enumerate().filter(|(i, e)| self.admits(*i, e, mask, admit)).map(|(_, e)| e.det.name()).collect()
    }

    #[inline]
    fn admits(&self, i: usize, e: &Entry, mask: u32, admit: u64) -> bool {
        if e.gated {
            admit & (1u64 << (i & 63)) != 0
        } else {
            e.bit == 0 || mask & e.bit != 0
        }
    }

    fn scan(&self, raw: &str, kind: FieldKind, loc: &Location<'_>, level: Level, dec: &mut Decoder, out: &mut Vec<Finding>) -> ControlFlow<()> {
        let (mask, open) = self.classify(raw);
        let mut fired = 0u64;
        let mut location: Option<String> = None;
        let may_b64 = mask & NON_B64 == 0 && raw.len() >= BASE64_MIN_LEN;
        if mask & DECODE == 0 && !may_b64 {
            let admit = self.gates.admit(raw, open);
            let input = Input { raw, decoded: raw, field: kind };
            return self.run(&input, mask, admit, Transforms::NONE, level, loc, &mut location, &mut fired, out);
        }
        let cands = dec.decode(raw);
        for c in cands.iter() {
            let (cmask, copen) = if c.transforms.is_empty() { (mask, open) } else { self.classify(c.text) };
            let admit = self.gates.admit(c.text, copen);
            // The raw value is the first candidate and every detector has judged it already:
            // a derived candidate is shown alone (detectors that also look at `raw` would
            // only repeat that work).
            let input = Input { raw: c.text, decoded: c.text, field: kind };
            self.run(&input, cmask, admit, c.transforms, level, loc, &mut location, &mut fired, out)?;
        }
        ControlFlow::Continue(())
    }

    #[allow(clippy::too_many_arguments)]
    fn run(
        &self,
        input: &Input<'_>,
        mask: u32,
        admit: u64,
        transforms: Transforms,
        level: Level,
        loc: &Location<'_>,
        location: &mut Option<String>,
        fired: &mut u64,
        out: &mut Vec<Finding>,
    ) -> ControlFlow<()> {
        let threshold = threshold(level);
        // Visit only the detectors the pre-filters admitted (set bits; detectors past the
        // 64th are visited one by one).
        let n = self.detectors.len();
        let mut todo = admit & !*fired & if n >= 64 { !0 } else { (1u64 << n) - 1 };
        let rest = 64..n.max(64);
        let order = std::iter::from_fn(move || {
            (todo != 0).then(|| {
                let i = todo.trailing_zeros() as usize;
                todo &= todo - 1;
                i
            })
        })
        .chain(rest);
        for i in order {
            let e = &self.detectors[i];
            let bit = 1u64 << (i & 63);
            if *fired & bit != 0 && i < 64 {
                continue;
            }
            if (input.field == FieldKind::XmlDocument) != e.xml_document && input.field == FieldKind::XmlDocument {
                continue;
            }
            if !self.admits(i, e, mask, admit) {
                continue;
            }
            let Some(hit) = e.det.check(input, level) else { continue };
            if hit.confidence < threshold {
                continue;
            }
            let loc_str = location.get_or_insert_with(|| loc.to_string());
            if self.config.exclusions.iter().any(|x| x.covers(hit.detector, hit.category, loc_str)) {
                continue;
            }
            if i < 64 {
                *fired |= bit;
            }
            out.push(Finding {
                detector: hit.detector,
                category: hit.category,
                confidence: hit.confidence,
                location: loc_str.clone(),
                field: input.field,
                fragment: crate::truncate(&hit.fragment, 64).to_string(),
                why: hit.why,
                transforms,
            });
            if out.len() >= self.config.max_findings {
                return ControlFlow::Break(());
            }
        }
        ControlFlow::Continue(())
    }
}
