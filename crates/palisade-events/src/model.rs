//! The event model: one record per blocked or monitored request (and per sampled allowed
//! request), with what was found, where, and what was answered.
//!
//! Secrets are never stored: [`Redactor`] replaces the matched fragment when it was found in
//! `Authorization`, `Proxy-Authorization`, `Cookie` or `Set-Cookie` headers, in any cookie, or
//! in a field whose name is configured as secret, and blanks the values of such fields in the
//! query string. Path, query, fragment and detail are truncated (at a character boundary).

use serde::{Deserialize, Serialize};

/// Longest path kept, in bytes.
pub const MAX_PATH: usize = 1024;
/// Longest query string kept, in bytes (after redaction).
pub const MAX_QUERY: usize = 512;
/// Longest matched fragment kept, in bytes.
pub const MAX_FRAGMENT: usize = 256;
/// Longest detail, host, location kept, in bytes.
pub const MAX_SHORT: usize = 256;
/// What a redacted value is replaced with.
pub const REDACTED: &str = "[redacted]";

/// Headers whose values are always secret.
pub const SECRET_HEADERS: &[&str] = &["authorization", "proxy-authorization", "cookie", "set-cookie"];

/// Field names redacted when `events.redact_fields` is not configured.
pub const DEFAULT_REDACT_FIELDS: &[&str] =
    &["password", "passwd", "secret", "client_secret", "token", "access_token", "refresh_token", "id_token", "api_key", "apikey", "session"];

/// What happened to the request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Hash)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Block,
    Monitor,
    Allow,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Block => "block",
            Verdict::Monitor => "monitor",
            Verdict::Allow => "allow",
        }
    }

    pub fn parse(s: &str) -> Option<Verdict> {
        match s {
            "block" => Some(Verdict::Block),
            "monitor" => Some(Verdict::Monitor),
            "allow" => Some(Verdict::Allow),
            _ => None,
        }
    }
}

/// One more reason of the same request (the first one is in the event's own columns).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OtherReason {
    pub stage: String,
    pub reason: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
}

/// One security event. `count` > 1 marks a row that stands for several identical events (same
/// app, client IP and reason within the aggregation window) while the sink was behind: `time_ms`
/// is the first of them, `last_ms` the last.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// Row id, when read back from a database (a cursor for pagination).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<i64>,
    /// Unix time in milliseconds.
    pub time_ms: i64,
    pub last_ms: i64,
    pub count: u32,
    pub request_id: String,
    pub app: String,
    pub client_ip: String,
    pub method: String,
    pub host: String,
    pub path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    pub verdict: Verdict,
    /// Stage that decided (`detect`, `openapi`, `access`...); empty for sampled allowed requests.
    pub stage: String,
    /// Reason code (`detect.sqli`, `openapi.body_invalid`...); empty for allowed requests.
    pub reason: String,
    /// Detector or rule that matched, when the stage says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detector: Option<String>,
    /// Attack category (`sqli`, `xss`...) or the stage family (`openapi`, `access`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<u8>,
    /// Where in the request: `query.q`, `header.user-agent`, `body/items/0/name`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
    /// The decoded piece that triggered (truncated, redacted for secrets).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fragment: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// Further reasons of the same request.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub others: Vec<OtherReason>,
    /// Status Palisade answered.
    pub status: u16,
    /// Status the upstream answered, when it was asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream_status: Option<u16>,
    /// From the request head to the response head, in microseconds.
    pub latency_us: u64,
    /// Tags that user rules (`then: {tag: ...}`) put on the request.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// The OpenAPI operation the request matched (`operationId`, else `METHOD /template`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation: Option<String>,
}

/// Most tags kept per event, and the longest tag kept, in bytes.
pub const MAX_TAGS: usize = 16;
pub const MAX_TAG: usize = 64;

/// Tags as stored in a database column: a JSON array (`["admin","outside"]`), or NULL when
/// there are none.
pub fn tags_text(tags: &[String]) -> Option<String> {
    if tags.is_empty() {
        None
    } else {
        serde_json::to_string(tags).ok()
    }
}

/// The tags of a database column (see [`tags_text`]); anything unreadable gives none.
pub fn tags_from_text(s: Option<&str>) -> Vec<String> {
    s.and_then(|s| serde_json::from_str(s).ok()).unwrap_or_default()
}

/// Bound the tags of an event: at most [`MAX_TAGS`], each at most [`MAX_TAG`] bytes, no
/// duplicates.
pub fn bound_tags(tags: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for t in tags {
        let t = truncate(t, MAX_TAG);
        if out.len() < MAX_TAGS && !out.contains(&t) {
            out.push(t);
        }
    }
    out
}

/// A reason as the proxy hands it over (borrowed from `palisade_core::Reason`, so that this crate
/// does not depend on the engines).
#[derive(Clone, Copy, Debug)]
pub struct ReasonRef<'a> {
    pub stage: &'a str,
    pub code: &'a str,
    pub location: Option<&'a str>,
    pub detail: Option<&'a str>,
    pub fragment: Option<&'a str>,
}

/// The request side of an event, borrowed.
#[derive(Clone, Copy, Debug)]
pub struct RequestRef<'a> {
    pub time_ms: i64,
    pub request_id: &'a str,
    pub app: &'a str,
    pub client_ip: std::net::IpAddr,
    pub method: &'a str,
    pub host: &'a str,
    pub path: &'a str,
    pub query: Option<&'a str>,
}

/// Which fields are secret. Built once per configuration.
#[derive(Clone, Debug)]
pub struct Redactor {
    /// Lower-cased field names.
    fields: Vec<String>,
}

impl Default for Redactor {
    fn default() -> Self {
        Redactor::new(DEFAULT_REDACT_FIELDS.iter().copied())
    }
}

impl Redactor {
    pub fn new<'a>(fields: impl IntoIterator<Item = &'a str>) -> Redactor {
        Redactor { fields: fields.into_iter().map(|f| f.to_ascii_lowercase()).collect() }
    }

    pub fn fields(&self) -> &[String] {
        &self.fields
    }

    fn secret_field(&self, name: &str) -> bool {
        self.fields.iter().any(|f| f.eq_ignore_ascii_case(name))
    }

    /// Whether a value found at `location` must not be stored.
    pub fn secret_location(&self, location: &str) -> bool {
        if location.starts_with("cookie.") || location == "cookie" {
            return true;
        }
        if let Some(h) = location.strip_prefix("header.") {
            return SECRET_HEADERS.iter().any(|s| s.eq_ignore_ascii_case(h)) || self.secret_field(h);
        }
        // The last segment names the field: `query.token`, `body/user/password`, `body/@secret`.
        let last = location.rsplit(['.', '/', '@']).next().unwrap_or(location);
        self.secret_field(last)
    }

    /// The query string with the values of secret fields replaced, truncated.
    pub fn query(&self, query: &str) -> String {
        let mut out = String::with_capacity(query.len().min(MAX_QUERY + 16));
        for (i, pair) in query.split('&').enumerate() {
            if i > 0 {
                out.push('&');
            }
            let (name, value) = match pair.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (pair, None),
            };
            let decoded = palisade_core::form_decode(name);
            out.push_str(name);
            if let Some(v) = value {
                out.push('=');
                if self.secret_field(decoded.trim()) {
                    out.push_str(REDACTED);
                } else {
                    out.push_str(v);
                }
            }
            if out.len() > MAX_QUERY {
                break;
            }
        }
        truncate(out, MAX_QUERY)
    }

    /// Build an event from a request and its reasons (the first reason fills the columns).
    pub fn event(
        &self,
        req: &RequestRef<'_>,
        verdict: Verdict,
        reasons: &[ReasonRef<'_>],
        status: u16,
        upstream_status: Option<u16>,
        latency_us: u64,
    ) -> Event {
        let first = reasons.first();
        let (detector, confidence) = first.map(|r| parse_detail(r.code, r.detail)).unwrap_or((None, None));
        let fragment = first.and_then(|r| {
            let f = r.fragment?;
            if r.location.is_some_and(|l| self.secret_location(l)) {
                Some(REDACTED.to_string())
            } else {
                Some(truncate(f.to_string(), MAX_FRAGMENT))
            }
        });
        Event {
            id: None,
            time_ms: req.time_ms,
            last_ms: req.time_ms,
            count: 1,
            request_id: req.request_id.to_string(),
            app: req.app.to_string(),
            client_ip: req.client_ip.to_string(),
            method: truncate(req.method.to_string(), 32),
            host: truncate(req.host.to_string(), MAX_SHORT),
            path: truncate(req.path.to_string(), MAX_PATH),
            query: req.query.map(|q| self.query(q)),
            verdict,
            stage: first.map(|r| r.stage.to_string()).unwrap_or_default(),
            reason: first.map(|r| r.code.to_string()).unwrap_or_default(),
            detector,
            category: first.map(|r| category(r.stage, r.code)),
            confidence,
            location: first.and_then(|r| r.location).map(|l| truncate(l.to_string(), MAX_SHORT)),
            fragment,
            detail: first.and_then(|r| r.detail).map(|d| truncate(d.to_string(), MAX_SHORT)),
            others: reasons
                .iter()
                .skip(1)
                .take(16)
                .map(|r| OtherReason {
                    stage: r.stage.to_string(),
                    reason: r.code.to_string(),
                    location: r.location.map(|l| truncate(l.to_string(), MAX_SHORT)),
                })
                .collect(),
            status,
            upstream_status,
            latency_us,
            tags: Vec::new(),
            operation: None,
        }
    }
}

/// The category of a reason: the attack family for detection (`detect.sqli` → `sqli`), else
/// the stage (`openapi`, `access`, `rules`).
pub fn category(stage: &str, code: &str) -> String {
    match code.strip_prefix("detect.") {
        Some(family) => family.to_string(),
        None => code.split('.').next().filter(|s| !s.is_empty()).unwrap_or(stage).to_string(),
    }
}

/// Detection details read `DETECTOR confidence N (why) via TRANSFORMS`: take the detector and
/// the confidence from it; other stages give neither.
fn parse_detail(code: &str, detail: Option<&str>) -> (Option<String>, Option<u8>) {
    let Some(d) = detail else { return (None, None) };
    if !code.starts_with("detect.") && !code.starts_with("rule") {
        return (None, None);
    }
    let mut words = d.split_whitespace();
    let detector = words.next().map(|w| truncate(w.to_string(), 64));
    let confidence = d.split_once("confidence ").and_then(|(_, rest)| rest.split_whitespace().next()).and_then(|n| n.parse().ok());
    (detector, confidence)
}

/// Cut `s` to at most `max` bytes at a character boundary.
pub fn truncate(mut s: String, max: usize) -> String {
    if s.len() > max {
        let mut end = max;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
    }
    s
}

/// Unix time in milliseconds.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

/// `2026-11-22T08:24:59.123Z` for a Unix time in milliseconds.
pub fn format_time(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let millis = ms.rem_euclid(1000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{millis:03}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// Parse `YYYY-MM-DDTHH:MM:SS[.fff]Z` (or with a space, or a date alone) into Unix ms.
pub fn parse_time(s: &str) -> Option<i64> {
    let s = s.trim();
    let s = s.strip_suffix('Z').or_else(|| s.strip_suffix('z')).unwrap_or(s);
    let (date, time) = match s.split_once(['T', 't', ' ']) {
        Some((d, t)) => (d, Some(t)),
        None => (s, None),
    };
    let mut dp = date.split('-');
    let y: i64 = dp.next()?.parse().ok()?;
    let m: i64 = dp.next()?.parse().ok()?;
    let d: i64 = dp.next()?.parse().ok()?;
    if dp.next().is_some() || !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return None;
    }
    let mut ms = days_from_civil(y, m, d) * 86_400_000;
    if let Some(t) = time {
        let (hms, frac) = match t.split_once('.') {
            Some((a, b)) => (a, Some(b)),
            None => (t, None),
        };
        let mut tp = hms.split(':');
        let h: i64 = tp.next()?.parse().ok()?;
        let mi: i64 = tp.next()?.parse().ok()?;
        let sec: i64 = tp.next().map_or(Some(0), |v| v.parse().ok())?;
        if h > 23 || mi > 59 || sec > 60 {
            return None;
        }
        ms += (h * 3600 + mi * 60 + sec) * 1000;
        if let Some(f) = frac {
            let digits: String = f.chars().take(3).collect();
            if !digits.chars().all(|c| c.is_ascii_digit()) || digits.is_empty() {
                return None;
            }
            ms += digits.parse::<i64>().ok()? * 10i64.pow(3 - digits.len() as u32);
        }
    }
    Some(ms)
}

// Howard Hinnant's algorithms (days since 1970-01-01 <-> proleptic Gregorian date).
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}
