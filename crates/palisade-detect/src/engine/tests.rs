use super::*;
use crate::eval::{build, OwnedRequest, Place};
use crate::Hit;

/// Flags `<evil` (any field) with confidence 90, `maybe` with 50. Named `xss`, so the
/// byte-class pre-filter applies to it.
struct Toy;

impl Detector for Toy {
    fn name(&self) -> &'static str {
        "xss"
    }
    fn check(&self, input: &Input<'_>, _level: Level) -> Option<Hit> {
        let d = input.decoded;
        let (confidence, needle) = if let Some(i) = d.find("<evil") {
            (90, &d[i..])
        } else if let Some(i) = d.find("<maybe") {
            (50, &d[i..])
        } else {
            return None;
        };
        Some(Hit { detector: "xss", category: Category::Xss, confidence, fragment: crate::truncate(needle, 64).to_string(), why: "toy" })
    }
}

/// Counts calls; no family (sees every value).
struct Counter(std::sync::atomic::AtomicUsize);

impl Detector for Counter {
    fn name(&self) -> &'static str {
        "counter"
    }
    fn check(&self, _input: &Input<'_>, _level: Level) -> Option<Hit> {
        self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        None
    }
}

/// A [`Counter`] the test keeps a handle on.
struct Shared(std::sync::Arc<Counter>);

impl Detector for Shared {
    fn name(&self) -> &'static str {
        self.0.name()
    }
    fn check(&self, input: &Input<'_>, level: Level) -> Option<Hit> {
        self.0.check(input, level)
    }
}

fn engine(config: EngineConfig) -> Engine {
    Engine::with_detectors(vec![Box::new(Toy)], config).unwrap()
}

fn findings(e: &Engine, place: Place, value: &str) -> Vec<Finding> {
    let req = build(place, value).unwrap();
    e.inspect(&req.view())
}

#[test]
fn finds_in_every_place_with_location() {
    let e = engine(EngineConfig::default());
    let expect =
        [(Place::Query, "query.v"), (Place::Form, "body/v"), (Place::Json, "body/v"), (Place::Header, "header.User-Agent"), (Place::Cookie, "cookie.session")];
    for (place, loc) in expect {
        let f = findings(&e, place, "hello <evil>");
        assert_eq!(f.len(), 1, "{place:?}: {f:?}");
        assert_eq!(f[0].location, loc);
        assert_eq!((f[0].detector, f[0].category, f[0].confidence), ("xss", Category::Xss, 90));
        assert!(f[0].transforms.is_empty());
    }
}

#[test]
fn decoding_reveals_and_is_reported() {
    let e = engine(EngineConfig::default());
    // Double URL encoding: the transport decodes one layer, the pipeline the next.
    let f = findings(&e, Place::Query, "%3Cevil%3E");
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(f[0].transforms, Transforms::URL);
    assert_eq!(f[0].fragment, "<evil>");
    let f = findings(&e, Place::Json, "&lt;evil&gt;");
    assert_eq!(f[0].transforms, Transforms::HTML);
    let f = findings(&e, Place::Json, "\\u003cevil");
    assert_eq!(f[0].transforms.to_string(), "js-escape");
    // base64 of "<evil>payload"
    let f = findings(&e, Place::Json, "PGV2aWw+cGF5bG9hZA==");
    assert_eq!(f[0].transforms, Transforms::BASE64, "{f:?}");
}

#[test]
fn one_finding_per_detector_and_value() {
    let e = engine(EngineConfig::default());
    // Raw and decoded both hold `<evil`.
    let f = findings(&e, Place::Json, "<evil> &amp;");
    assert_eq!(f.len(), 1, "{f:?}");
}

#[test]
fn level_thresholds() {
    let e = engine(EngineConfig::default());
    assert!(findings(&e, Place::Query, "<maybe>").is_empty());
    let e = engine(EngineConfig { level: Level::Strict, ..EngineConfig::default() });
    assert_eq!(findings(&e, Place::Query, "<maybe>")[0].confidence, 50);
    assert_eq!((threshold(Level::Balanced), threshold(Level::Strict)), (60, 40));
}

#[test]
fn exclusions_by_detector_category_and_pattern() {
    let ex = |d: &str, l: &str| EngineConfig { exclusions: vec![Exclusion { detector: d.into(), location: l.into() }], ..EngineConfig::default() };
    assert!(findings(&engine(ex("xss", "body/v")), Place::Json, "<evil>").is_empty());
    assert!(findings(&engine(ex("*", "body/*")), Place::Json, "<evil>").is_empty());
    assert!(findings(&engine(ex("xss", "HEADER.user-agent")), Place::Header, "<evil>").is_empty());
    assert_eq!(findings(&engine(ex("sqli", "body/v")), Place::Json, "<evil>").len(), 1);
    assert_eq!(findings(&engine(ex("xss", "body/other")), Place::Json, "<evil>").len(), 1);
    assert!(glob(b"body/**", b"body/a/b/c"));
    assert!(!glob(b"body/*", b"body/a/b"));
    assert!(glob(b"body/users/*/name", b"body/users/3/name"));
    assert!(glob(b"query.*", b"query.id"));
}

#[test]
fn prefilter_skips_safe_values_but_not_unknown_detectors() {
    let counter = std::sync::Arc::new(Counter(Default::default()));
    let e = Engine::with_detectors(vec![Box::new(Toy), Box::new(Shared(counter.clone()))], EngineConfig::default()).unwrap();
    let mut scratch = e.scratch();
    let mut out = Vec::new();
    e.inspect_value("hello world 42", FieldKind::QueryValue, &Location::Query("q"), Level::Balanced, &mut scratch, &mut out);
    assert_eq!(counter.0.load(std::sync::atomic::Ordering::Relaxed), 1);
    assert!(out.is_empty());
    // Family table: letters and digits never trigger; `<` triggers xss; space triggers sqli.
    let t = class_table(&Gates::new(&[], &[], &[], &[]));
    let bit = |name| 1u64 << family_of(name).unwrap();
    assert_eq!(t[b'a' as usize] & ALL_FAMILIES, 0);
    assert_ne!(t[b'<' as usize] & bit("xss"), 0);
    assert_ne!(t[b' ' as usize] & bit("sqli"), 0);
    assert_eq!(t[b' ' as usize] & bit("xss"), 0);
    // Controls open every family; non-ASCII bytes none (their characters are classified by
    // code point: `code_point_classes`).
    assert_ne!(t[0x01] & bit("xss"), 0);
    assert_eq!(t[0xC3] & ALL_FAMILIES, 0);
    assert_ne!(t[0xC3] & NON_ASCII, 0);
    // A bare word (whose tests are the bare-word gates) has no byte but letters, digits, `_`.
    for (c, bits) in t.iter().enumerate() {
        assert_eq!(bits & NON_WORD == 0, (c as u8).is_ascii_alphanumeric() || c == b'_' as usize, "{c:#x}");
    }
}

#[test]
fn max_findings_stops() {
    let e = engine(EngineConfig { max_findings: 2, ..EngineConfig::default() });
    let mut r = OwnedRequest::new(http::Method::GET, "/");
    r.query = Some("a=<evil>&b=<evil>&c=<evil>".into());
    assert_eq!(e.inspect(&r.view()).len(), 2);
}

#[test]
fn limits_are_reported() {
    let e = engine(EngineConfig { limits: extract::Limits { max_values: 3, ..extract::Limits::default() }, ..EngineConfig::default() });
    let mut r = OwnedRequest::new(http::Method::GET, "/");
    r.query = Some("a=1&b=2&c=3&d=<evil>".into());
    let mut scratch = e.scratch();
    let mut report = Report::default();
    e.inspect_phase(&r.view(), Phase::Head, Level::Balanced, &mut scratch, &mut report);
    assert_eq!(report.exceeded, Some(Exceeded::Values { limit: 3 }));
    assert!(report.findings.is_empty());
}

#[test]
fn registry_names_have_families_or_are_known() {
    // Every built-in detector is either pre-filtered by family or deliberately sees everything.
    for d in crate::registry::detectors() {
        assert!(family_of(d.name()).is_some() || d.name() == "scanner", "add `{}` to FAMILIES (or accept that it sees every value)", d.name());
    }
}

fn json_request(body: &str) -> OwnedRequest {
    let mut r = OwnedRequest::new(http::Method::POST, "/api/items");
    r.headers.insert(http::header::CONTENT_TYPE, "application/json".parse().unwrap());
    r.body = body.as_bytes().to_vec();
    r
}

#[test]
fn repeated_clean_values_are_judged_once_per_phase() {
    let counter = std::sync::Arc::new(Counter(Default::default()));
    let e = Engine::with_detectors(vec![Box::new(Shared(counter.clone()))], EngineConfig::default()).unwrap();
    let calls = || counter.0.load(std::sync::atomic::Ordering::Relaxed);
    // Keys `id` and `name` three times, the value `x` three times, `id` once as a value (another
    // kind: judged apart), numbers never.
    let req = json_request(r#"[{"id":1,"name":"x"},{"id":2,"name":"x"},{"id":3,"name":"x","v":"id"}]"#);
    let mut scratch = e.scratch();
    let mut report = Report::default();
    e.inspect_phase(&req.view(), Phase::Body, Level::Balanced, &mut scratch, &mut report);
    assert_eq!(calls(), 5, "id, name, x, v (keys and values) and the value id");
    assert_eq!(report.counts.values, 11, "every string occurrence is still counted");
    // The memo lasts one phase: the same body again is judged again.
    e.inspect_phase(&req.view(), Phase::Body, Level::Balanced, &mut scratch, &mut report);
    assert_eq!(calls(), 10);
    // Values longer than the memo's limit are judged every time.
    let long = "y".repeat(Memo::MAX_LEN + 1);
    let req = json_request(&format!(r#"["{long}","{long}","{long}"]"#));
    e.inspect_phase(&req.view(), Phase::Body, Level::Balanced, &mut scratch, &mut report);
    assert_eq!(calls(), 13);
}

#[test]
fn repeated_attacks_are_reported_at_every_location_and_exclusions_do_not_leak() {
    // An attack repeated: one finding per occurrence (only clean values are remembered).
    let e = engine(EngineConfig::default());
    let req = json_request(r#"{"a":"<evil>","b":"<evil>"}"#);
    let f = e.inspect(&req.view());
    assert_eq!(f.iter().map(|f| f.location.as_str()).collect::<Vec<_>>(), ["body/a", "body/b"]);
    // Excluded at `body/a` (so no finding there) but not at `body/b`: still found at `body/b`.
    let e = engine(EngineConfig { exclusions: vec![Exclusion { detector: "xss".into(), location: "body/a".into() }], ..EngineConfig::default() });
    let f = e.inspect(&req.view());
    assert_eq!(f.iter().map(|f| f.location.as_str()).collect::<Vec<_>>(), ["body/b"]);
}

#[test]
fn memo_compares_bytes_and_bounds_probes() {
    let mut m = Memo::default();
    m.reset();
    let kind = FieldKind::JsonKey as u8;
    let slot = m.find(kind, b"alpha").unwrap_err().expect("a free slot");
    m.remember(slot, b"alpha");
    assert!(m.find(kind, b"alpha").is_ok());
    assert!(m.find(kind, b"alphb").is_err());
    assert!(m.find(FieldKind::JsonValue as u8, b"alpha").is_err(), "kinds are apart");
    // Fill every slot: lookups of absent values stay bounded and find no slot.
    for i in 0..Memo::SLOTS * 2 {
        let v = format!("v{i}");
        if let Err(Some(slot)) = m.find(kind, v.as_bytes()) {
            m.remember(slot, v.as_bytes());
        }
    }
    assert!(m.find(kind, b"alpha").is_ok());
    m.reset();
    assert!(m.find(kind, b"alpha").is_err(), "reset forgets");
}

#[test]
fn scanner_judges_only_headers_and_path_segments() {
    let e = Engine::new(EngineConfig::default()).unwrap();
    let ua = "sqlmap/1.7.2#stable (https://sqlmap.org)";
    let req = json_request(&format!(r#"{{"agent":"{ua}"}}"#));
    assert!(e.inspect(&req.view()).iter().all(|f| f.detector != "scanner"), "a JSON value is not a user agent");
    let mut get = OwnedRequest::new(http::Method::GET, "/");
    get.headers.insert(http::header::USER_AGENT, ua.parse().unwrap());
    assert!(e.inspect(&get.view()).iter().any(|f| f.detector == "scanner"));
}

/// Attacks written in the product-token shape of `User-Agent` values ([`crate::shape`]), which
/// the detectors' product-token gates must let through.
const SHAPED_ATTACKS: &[&str] = &[
    "etc/passwd",
    "Mozilla/5.0 etc/passwd",
    "Mozilla/5.0 (X11; etc/passwd)",
    "windows/win.ini",
    "Mozilla/5.0 (x) log/access.log",
    "Mozilla/5.0 (X11) access.log",
    "a/1 union select password from users",
    "a/1 or sleep (5)",
    "Mozilla/5.0 or sleep (5)",
    "a/1-sleep (5)",
    "a/1union select password from users",
    "a/1 or exists (select pass from users)",
    "a/1 or benchmark (1000000, md5)",
    "Mozilla/5.0 (x; net user)",
    "Mozilla/5.0 (x; sleep 5)",
    "a/1 procedure analyse (1)",
    "a--b/1 x",
    "Mozilla/5.0 (X11; id)",
    "Mozilla/5.0 (X11; whoami)",
    "Mozilla/5.0 (x; cat etc/passwd)",
    "Mozilla/5.0 (x; wget 10.0.0.1)",
    "Mozilla/5.0 alert (1)",
    "Mozilla/alert (1)",
    "Mozilla/5.0 (javascript:alert) x",
    "Mozilla/5.0 confirm (1)",
    "Mozilla/5.0 eval (atob)",
    "Mozilla/5.0 (gopher:x)",
    "Mozilla/5.0 (x) db.users.drop (1)",
    "Mozilla/5.0 (compatible; Nmap Scripting Engine)",
];

#[test]
fn product_token_gates_admit_every_detector_that_fires_on_a_shaped_value() {
    let engine = Engine::new(EngineConfig::default()).unwrap();
    let detectors = crate::registry::detectors();
    let mut fired = 0;
    for v in SHAPED_ATTACKS {
        assert!(crate::shape::product_tokens(v), "{v} is not in the shape");
        let admitted = engine.admitted(v);
        for d in &detectors {
            for field in [FieldKind::QueryValue, FieldKind::Header] {
                if d.check(&Input { raw: v, decoded: v, field }, Level::Strict).is_some() {
                    fired += 1;
                    assert!(admitted.contains(&d.name()), "{} fires on {v:?} ({field:?}) but is not admitted", d.name());
                }
            }
        }
    }
    assert!(fired >= SHAPED_ATTACKS.len());
}

#[test]
fn attacks_in_a_user_agent_are_still_caught() {
    let engine = Engine::new(EngineConfig::default()).unwrap();
    let mut scratch = engine.scratch();
    let mut out = Vec::new();
    let ff = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0";
    for (v, shaped) in [
        (format!("{ff} ' OR 1=1--"), false),
        (format!("{ff} <script>alert(1)</script>"), false),
        (format!("{ff}; cat /etc/passwd"), false),
        (format!("{ff} ../../etc/passwd"), false),
        (format!("{ff} (x; uname -a)"), false),
        (format!("{ff} (x; net user)"), true),
        (format!("{ff} (x; wget 10.0.0.1)"), true),
        ("a/1 union select password from users".to_string(), true),
        ("a/1 or sleep (5)".to_string(), true),
        ("Mozilla/5.0 etc/passwd".to_string(), true),
    ] {
        assert_eq!(crate::shape::product_tokens(&v), shaped, "{v}");
        out.clear();
        engine.inspect_value(&v, FieldKind::Header, &Location::Header("User-Agent"), Level::Balanced, &mut scratch, &mut out);
        assert!(!out.is_empty(), "{v} not caught");
    }
}

#[test]
fn browser_user_agents_reach_only_the_scanner() {
    let engine = Engine::new(EngineConfig::default()).unwrap();
    for ua in [
        "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0",
        "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36",
        "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1",
        "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15",
    ] {
        assert_eq!(engine.admitted(ua), ["scanner"], "{ua}");
    }
}

#[test]
fn code_point_classes() {
    for c in ['é', 'ñ', 'Ø', 'ж', 'Ω', 'ש', 'ع', 'क', 'ก', 'ế', '中', 'あ', 'カ', '한', 'ა'] {
        assert_eq!(code_point(c), CodePoint::Letter, "{c:?}");
    }
    for c in ['\u{2018}', '\u{2019}', '\u{201b}', '\u{2032}', '\u{02bc}'] {
        assert_eq!(code_point(c), CodePoint::Fold(b'\''), "{c:?}");
    }
    for c in ['\u{201c}', '\u{201d}', '\u{2033}'] {
        assert_eq!(code_point(c), CodePoint::Fold(b'"'), "{c:?}");
    }
    // Case mappings into ASCII, characters detectors read specially (CRLF's `嘊`/`嘍`, path
    // look-alikes, XSS's `¼ ¾ ¢`, SQL's odd spaces), fullwidth forms, symbols, marks, emoji.
    for c in [
        'ſ', 'ı', 'İ', 'ß', '\u{212a}', '\u{560a}', '\u{560d}', '\u{2026}', '\u{2024}', '\u{ff0e}', '\u{ff0f}', '\u{2215}', '\u{ff3c}', '\u{ff1c}', '\u{bc}',
        '\u{be}', '\u{a2}', '\u{a0}', '\u{3000}', '\u{2028}', '\u{200b}', '\u{feff}', '\u{fffd}', '\u{85}', '×', '÷', '\u{301}', 'ª', '😀', '\u{f025}',
    ] {
        assert_eq!(code_point(c), CodePoint::Open, "{c:?}");
    }
    // The engine's bitmap says what `code_point` says, over the whole BMP and beyond.
    let cp = CodePoints::new();
    let mut letters = 0;
    for u in 0x80..0x11000u32 {
        if let Some(c) = char::from_u32(u) {
            assert_eq!(cp.class(c), code_point(c), "{c:?}");
            letters += usize::from(code_point(c) == CodePoint::Letter);
        }
    }
    assert!(letters > 30_000, "{letters}");
    // The ranges the bitmap's build takes as caseless and all alphabetic.
    for &(a, b) in CASELESS_RANGES {
        assert!(LETTER_RANGES.contains(&(a, b)));
        for c in (a..=b).filter_map(char::from_u32) {
            assert!(c.to_lowercase().eq([c]) && c.to_uppercase().eq([c]), "{c:?}");
        }
    }
    for &(a, b) in ALPHABETIC_RANGES {
        assert!(CASELESS_RANGES.contains(&(a, b)));
        assert!((a..=b).all(|u| char::from_u32(u).is_some_and(char::is_alphabetic)), "{a:x}..{b:x}");
    }
}

#[test]
fn non_ascii_characters_open_gates_by_code_point() {
    let e = Engine::new(EngineConfig::default()).unwrap();
    // Letters of other scripts open what ASCII letters open (nothing, but the ungated scanner).
    for (text, ascii) in
        [("Привет, как дела", "Privet, kak dela"), ("l’été à Paris", "l'ete a Paris"), ("über “Ärger” ändern", "uber \"Arger\" andern"), ("中文 検索", "zw js")]
    {
        assert_eq!(e.admitted(text), e.admitted(ascii), "{text}");
    }
    assert_eq!(e.admitted("Привет мир"), ["scanner"]);
    // A typographic quote reaches the SQL detector (which folds it) where an ASCII quote does
    // (in a breakout: not in `don't`, which its gate test reads as inert), not the others an
    // ASCII quote does not reach.
    assert_eq!(e.admitted("don’t").contains(&"sqli"), e.admitted("don't").contains(&"sqli"));
    let quoted = e.admitted("x’ #");
    assert!(quoted.contains(&"sqli") && !quoted.contains(&"cmdi") && !quoted.contains(&"path"), "{quoted:?}");
    let f = findings(&e, Place::Json, "x’ UNION SELECT password FROM users--");
    assert!(f.iter().any(|f| f.detector == "sqli"), "{f:?}");
    // Anything else opens every gate, as before.
    let all = e.admitted("\u{1}");
    for text in ["a\u{2026}b", "\u{560a}\u{560d}Set-Cookie", "１２３", "x\u{a0}y", "日本\u{ff0f}etc"] {
        assert_eq!(e.admitted(text), all, "{text}");
    }
}

/// Every value of the development corpus (`../shared`, when present) and of the benign and
/// attack sets.
fn corpus_values() -> Vec<String> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<_> = ["data/benign", "data/attacks"].iter().flat_map(|d| std::fs::read_dir(root.join(d)).unwrap().map(|e| e.unwrap().path())).collect();
    let corpus = root.join("../../../shared/data/attack-corpus/corpus.jsonl");
    if corpus.exists() {
        files.push(corpus);
    } else {
        println!("skipping the development corpus ({} not found)", corpus.display());
    }
    let mut values = Vec::new();
    for f in files.iter().filter(|p| p.extension().is_some_and(|e| e == "jsonl")) {
        values.extend(crate::eval::parse_corpus(&std::fs::read_to_string(f).unwrap()).unwrap().into_iter().map(|s| s.value));
    }
    values
}

/// The class bits and gates of the bytes of `s`, one byte at a time, and of its non-ASCII
/// characters: what [`Engine::classify`] computes besides the literals.
fn byte_classes_spec(e: &Engine, s: &str) -> (u64, u64) {
    let (mut m, mut g) = (0, 0);
    for &b in s.as_bytes() {
        m |= e.table[b as usize];
        g |= e.gates.bytes[b as usize];
    }
    if m & NON_ASCII != 0 {
        e.classify_non_ascii(s, &mut m, &mut g);
    }
    (m, g)
}

/// What [`Gates::admit_but`] decides, with the literals found by the `aho_corasick` automaton
/// ([`Gates::literals`]) instead of the byte pass: the gates of the bytes, then of the
/// literals, then each test whose class bits are present (`skip`: gates not asked).
fn admit_spec(g: &Gates, t: &str, open: u64, class: u64, skip: u64) -> u64 {
    let mut m = (open & g.gated) | skip;
    if g.literal & !m != 0 {
        m = g.literals(g.dfa.as_ref().unwrap(), t.as_bytes(), m);
    }
    for &(bit, need, excl, test, _) in &g.tests {
        if m & bit == 0 && (need == 0 || class & need != 0) && class & excl == 0 && test(t) {
            m |= bit;
        }
    }
    m & !skip
}

/// What [`Engine::todo`] decides, from [`byte_classes_spec`] and [`admit_spec`]: a text in the
/// product-token shape by the shape's gates, any other by every gate and the family bits.
fn todo_spec(e: &Engine, t: &str) -> u64 {
    let (mask, open) = byte_classes_spec(e, t);
    if mask & (NOT_SHAPE | SLASH) == SLASH && crate::shape::product_tokens(t) {
        let mut m = admit_spec(&e.gates, t, open, mask, e.gates.shaped);
        for (bit, test) in &e.gates.shape_tests {
            if test(t) {
                m |= bit;
            }
        }
        (m & e.gates.gated) | e.ungated_always
    } else {
        e.admitted_set(mask, admit_spec(&e.gates, t, open, mask, 0))
    }
}

/// Checks the one-pass classification ([`Engine::classify`], [`Pairs`]) on `t` against the
/// byte classes one byte at a time, the literals found by `aho_corasick`, and the gates decided
/// from those ([`todo_spec`]).
fn check_fused_pass(e: &Engine, t: &str) {
    let c = e.classify(t);
    let (mask, open) = byte_classes_spec(e, t);
    assert_eq!((c.mask, c.open), (mask, open), "{t:?}");
    let gated = e.gates.gated;
    let reference = e.gates.literals(e.gates.dfa.as_ref().unwrap(), t.as_bytes(), open & gated);
    assert_eq!((c.lits | c.open) & gated, reference, "{t:?}");
    assert_eq!(e.todo(t, c), todo_spec(e, t), "{t:?}");
}

#[test]
fn fused_pass_agrees_with_aho_corasick_on_corpus_values() {
    let e = Engine::new(EngineConfig::default()).unwrap();
    let values = corpus_values();
    // The sets kept here alone hold over 4,000 values; with the development corpus, over 5,000.
    assert!(values.len() > 4_000, "{}", values.len());
    let mut dec = crate::decode::Decoder::default();
    for v in &values {
        for c in dec.decode(v).iter() {
            check_fused_pass(&e, c.text);
        }
        // Every prefix and suffix of a short value (literals cut at either end).
        if v.len() <= 40 {
            for (k, _) in v.char_indices() {
                check_fused_pass(&e, &v[..k]);
                check_fused_pass(&e, &v[k..]);
            }
        }
    }
    for v in ["", "a", "on", "union", "1union", "x_union", "union_", "UNION", "--", "@@", "\u{1}", "don\u{2019}t", "Привет", "\u{ff1c}"] {
        check_fused_pass(&e, v);
    }
}

/// Generated values: the gates' literals (words and anchors) in every case, glued to letters,
/// digits, `_`, punctuation, blanks, non-ASCII letters and quotes, and cut.
#[test]
fn fused_pass_agrees_with_aho_corasick_on_generated_values() {
    let e = Engine::new(EngineConfig::default()).unwrap();
    let mut parts: Vec<String> = Vec::new();
    for d in crate::registry::detectors() {
        if let Some(g) = d.gate() {
            for l in g.anchors.iter().chain(g.words) {
                parts.extend([l.to_string(), l.to_ascii_uppercase(), l[..l.len() / 2].to_string(), l[l.len() / 2..].to_string()]);
            }
        }
    }
    let n = parts.len();
    assert!(n > 400, "{n}");
    for p in [
        "a", "x", "Z", "1", "9", "_", "-", ".", "/", ":", " ", "  ", "\t", "\n", "%", "&", "'", "\"", "<", "(", ")", ";", "{size}", "é", "ж", "\u{2019}",
        "\u{ff0f}", "\u{0}",
    ] {
        for _ in 0..n / 40 {
            parts.push(p.to_string());
        }
    }
    let mut rng = palisade_testkit::rng::XorShift64::new(0x9e37_79b9_7f4a_7c15);
    let mut v = String::new();
    for _ in 0..60_000 {
        v.clear();
        for _ in 0..1 + rng.below(7) {
            v.push_str(&parts[rng.below(parts.len())]);
        }
        check_fused_pass(&e, &v);
    }
}

/// The memo's word reads and comparison ([`same_bytes`], [`short_word`]) against `==`, on
/// every length it takes, with one byte changed at each position; the hash is a function of
/// the kind and the bytes.
#[test]
fn memo_comparison_agrees_with_equality() {
    let mut rng = palisade_testkit::rng::XorShift64::new(0x2545_f491_4f6c_dd1d);
    for n in 0..=Memo::MAX_LEN {
        for _ in 0..20 {
            let a: Vec<u8> = (0..n).map(|_| rng.below(4) as u8 + b'a').collect();
            assert!(same_bytes(&a, &a.clone()));
            assert_eq!(Memo::hash(3, &a, Memo::key(&a)), Memo::hash(3, &a.clone(), Memo::key(&a.clone())));
            for i in 0..n {
                let mut b = a.clone();
                b[i] ^= 1 << rng.below(8);
                assert!(!same_bytes(&a, &b), "{a:?} {b:?}");
            }
            let c: Vec<u8> = (0..n).map(|_| rng.below(4) as u8 + b'a').collect();
            assert_eq!(same_bytes(&a, &c), a == c);
            assert!(n == 0 || !same_bytes(&a, &a[1..]), "lengths differ");
        }
    }
}

/// The decoder told by the class bits ([`decode_by_classes`]) gives the candidates of the full
/// decoder, on every corpus value, generated values of encodings and base64, and values
/// past a small input limit.
#[test]
fn decoding_by_classes_agrees_with_the_decoder() {
    let e = Engine::new(EngineConfig::default()).unwrap();
    let cands = |c: decode::Candidates<'_>| c.iter().map(|c| (c.text.to_string(), c.transforms)).collect::<Vec<_>>();
    let check = |v: &str, limits: decode::Limits| {
        let (mut a, mut b) = (Decoder::new(limits), Decoder::new(limits));
        let mask = e.classify(v).mask;
        assert_eq!(cands(decode_by_classes(&mut a, v, mask)), cands(b.decode(v)), "{v:?}");
    };
    let small = decode::Limits { max_input: 16, ..decode::Limits::default() };
    for v in corpus_values() {
        check(&v, decode::Limits::default());
        check(&v, small);
    }
    let parts = ["%3C", "&lt;", "\\x3c", "\0", "PHNjcmlwdD4", "YWxlcnQoMSk", "==", "=", "-", "_", "+", "/", "ord_7f3a9c2e41b84d0f", " ", ":", "é", "Zm9v"];
    let mut rng = palisade_testkit::rng::XorShift64::new(0x2545_f491_4f6c_dd1d);
    for _ in 0..50_000 {
        let mut v = String::new();
        for _ in 0..=rng.below(6) {
            v.push_str(parts[rng.below(parts.len())]);
        }
        check(&v, decode::Limits::default());
        check(&v, small);
    }
}

/// The one-lookup pass ([`Gates::packed`]) and the two-lookup pass (two lookups per byte,
/// then [`Pairs::walk`], for detector sets whose gates do not fit) agree with each other and
/// with [`check_fused_pass`]'s references on generated values and every corpus value.
#[test]
fn packed_and_unpacked_passes_agree() {
    let packed = Engine::new(EngineConfig::default()).unwrap();
    assert!(packed.gates.packed);
    let mut unpacked = Engine::new(EngineConfig::default()).unwrap();
    unpacked.gates.packed = false;
    let mut rng = palisade_testkit::rng::XorShift64::new(0x0123_4567_89ab_cdef);
    let alphabet: Vec<char> = "abcdeilnorstuxABZ019_ .-/:%&<>()'\"{}$#@!\n\té\u{2019}\u{ff0f}\u{0}".chars().collect();
    let mut values = corpus_values();
    for n in 0..=40 {
        for _ in 0..300 {
            values.push((0..n).map(|_| alphabet[rng.below(alphabet.len())]).collect());
        }
    }
    for v in &values {
        let (a, b) = (packed.classify(v), unpacked.classify(v));
        // The literals' walks may stop at other points: the gates they add to the bytes' agree.
        assert_eq!((a.mask, a.open, a.lits | a.open), (b.mask, b.open, b.lits | b.open), "{v:?}");
        check_fused_pass(&packed, v);
        check_fused_pass(&unpacked, v);
    }
}

/// The memo with keys in its slots ([`Memo::key`]) against a set of the values remembered: a
/// value is found exactly when it was remembered in the phase (with its kind), on values of
/// every length up to the limit that differ only in one byte (in the middle too, which a key of
/// a value longer than [`Memo::INLINE`] does not hold), phase after phase.
#[test]
fn memo_finds_exactly_what_it_remembered() {
    let mut rng = palisade_testkit::rng::XorShift64::new(0x1d87_2b41_9c3e_55a7);
    let mut m = Memo::default();
    for phase in 0..300 {
        m.reset();
        let mut seen = std::collections::HashSet::new();
        let base: Vec<u8> = (0..Memo::MAX_LEN + 2).map(|_| b'a' + rng.below(3) as u8).collect();
        // Few values per phase: the table does not fill (every value remembered is found).
        for _ in 0..40 {
            let n = rng.below(Memo::MAX_LEN + 2);
            let mut v = base[..n].to_vec();
            if n > 0 && rng.below(2) == 0 {
                v[rng.below(n)] = b'x' + rng.below(2) as u8;
            }
            let kind = rng.below(2) as u8;
            let known = seen.contains(&(kind, v.clone()));
            let a = m.find(kind, &v);
            assert_eq!(a.is_ok(), known && v.len() <= Memo::MAX_LEN, "phase {phase}: {v:?}");
            // A value within the length limit has a slot (the table does not fill here).
            if let Err(a) = a {
                assert_eq!(a.is_some(), v.len() <= Memo::MAX_LEN, "phase {phase}: {v:?}");
                if let Some(a) = a {
                    // Remembered as clean half of the time.
                    if rng.below(2) == 0 {
                        m.remember(a, &v);
                        seen.insert((kind, v.clone()));
                    }
                }
            }
        }
    }
}
