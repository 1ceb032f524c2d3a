//! Tuning suggestions: from recorded detection events (blocked or monitored), the narrowest
//! detection exclusions that would have let those requests through, with what each would have
//! allowed, rendered as a `detection:` snippet to paste into the configuration.
//!
//! An exclusion is one detector (or, for a request's further findings, whose events keep only
//! the category, the category) × one location pattern (array indexes and path segment numbers
//! generalised to `*`) × one scope: the OpenAPI operation the request matched when the event
//! records it, else the path prefix up to the first segment that looks like an identifier
//! (`/users/123/posts` → `/users`). Suggestions never widen a scope on their own: a finding seen
//! on two operations gives two suggestions.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::model::{format_time, Event, Verdict};
use crate::query::{Filter, Reader, MAX_LIMIT};
use crate::sink::SinkError;

/// Where an exclusion applies.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "value")]
pub enum Scope {
    /// `detection.operations[].operation`.
    Operation(String),
    /// `detection.paths[].prefix`.
    Prefix(String),
}

/// One proposed exclusion and what it would have allowed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Suggestion {
    pub app: String,
    pub scope: Scope,
    /// Detector name (`sqli`, `cmdi`...) or category (`lfi`) as the exclusion's `detector`.
    pub detector: String,
    /// Location pattern as the exclusion's `location` (`query.q`, `body/items/*/name`).
    pub location: String,
    /// Requests with this finding (event counts summed).
    pub findings: u64,
    /// Requests this exclusion alone would have let through: every finding of the request is
    /// this one, and no other stage objected.
    pub allows: u64,
    /// Distinct client IPs of those requests.
    pub clients: usize,
    pub first_ms: i64,
    pub last_ms: i64,
    /// A few request ids, to look the events up.
    pub examples: Vec<String>,
    /// Row ids of the events it covers (for the dashboard's "suggest for this event").
    #[serde(skip)]
    pub event_ids: Vec<i64>,
}

impl Suggestion {
    /// True when every request came from one client: more likely an attack than a false positive.
    pub fn one_client(&self) -> bool {
        self.clients == 1 && self.findings > 1
    }
}

/// What [`suggest`] read.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    /// Events read (rows; a row may stand for several requests).
    pub events: usize,
    /// Requests with at least one detection finding.
    pub detection_requests: u64,
    /// Requests that also had a reason from another stage: no detection exclusion allows them.
    pub other_stage_requests: u64,
}

/// The suggestions for `events` (blocked and monitored ones are read, others ignored), most
/// allowing first; `min_requests` drops suggestions covering fewer requests.
pub fn suggest(events: &[Event], min_requests: u64) -> (Vec<Suggestion>, Summary) {
    #[derive(Default)]
    struct Acc {
        findings: u64,
        allows: u64,
        clients: BTreeSet<String>,
        first_ms: i64,
        last_ms: i64,
        examples: Vec<String>,
        event_ids: Vec<i64>,
    }
    let mut groups: BTreeMap<(String, Scope, String, String), Acc> = BTreeMap::new();
    let mut summary = Summary::default();
    for e in events {
        summary.events += 1;
        if !matches!(e.verdict, Verdict::Block | Verdict::Monitor) {
            continue;
        }
        let scope = match &e.operation {
            Some(op) => Scope::Operation(op.clone()),
            None => Scope::Prefix(prefix_of(&e.path)),
        };
        // The event's findings: the first reason (with its detector), then the others.
        let mut findings: Vec<(String, String)> = Vec::new();
        let mut other_stage = false;
        let mut consider = |code: &str, detector: Option<&str>, location: Option<&str>| match (code.strip_prefix("detect."), location) {
            (Some(category), Some(loc)) if category != "limit" => {
                let name = detector.unwrap_or(category).to_string();
                let key = (name, generalise(loc));
                if !findings.contains(&key) {
                    findings.push(key);
                }
            }
            _ => other_stage = true,
        };
        consider(&e.reason, e.detector.as_deref(), e.location.as_deref());
        for o in &e.others {
            consider(&o.reason, None, o.location.as_deref());
        }
        if findings.is_empty() {
            continue;
        }
        let n = u64::from(e.count.max(1));
        summary.detection_requests += n;
        if other_stage {
            summary.other_stage_requests += n;
        }
        let alone = findings.len() == 1 && !other_stage;
        for (detector, location) in findings {
            let acc = groups.entry((e.app.clone(), scope.clone(), detector, location)).or_insert_with(|| Acc { first_ms: i64::MAX, ..Acc::default() });
            acc.findings += n;
            if alone {
                acc.allows += n;
            }
            acc.clients.insert(e.client_ip.clone());
            acc.first_ms = acc.first_ms.min(e.time_ms);
            acc.last_ms = acc.last_ms.max(e.last_ms.max(e.time_ms));
            if acc.examples.len() < 3 && !acc.examples.contains(&e.request_id) {
                acc.examples.push(e.request_id.clone());
            }
            if let Some(id) = e.id {
                acc.event_ids.push(id);
            }
        }
    }
    let mut out: Vec<Suggestion> = groups
        .into_iter()
        .filter(|(_, a)| a.findings >= min_requests)
        .map(|((app, scope, detector, location), a)| Suggestion {
            app,
            scope,
            detector,
            location,
            findings: a.findings,
            allows: a.allows,
            clients: a.clients.len(),
            first_ms: a.first_ms,
            last_ms: a.last_ms,
            examples: a.examples,
            event_ids: a.event_ids,
        })
        .collect();
    out.sort_by(|a, b| b.allows.cmp(&a.allows).then(b.findings.cmp(&a.findings)).then(a.app.cmp(&b.app)).then(a.scope.cmp(&b.scope)));
    (out, summary)
}

/// A location as an exclusion pattern: JSON array indexes and path segment numbers become `*`
/// (`body/items/3/name` → `body/items/*/name`, `path[2]` → `path[*]`).
pub fn generalise(location: &str) -> String {
    if let Some(rest) = location.strip_prefix("path[") {
        if rest.strip_suffix(']').is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())) {
            return "path[*]".to_string();
        }
    }
    if !location.starts_with("body/") {
        return location.to_string();
    }
    location.split('/').map(|seg| if !seg.is_empty() && seg.bytes().all(|b| b.is_ascii_digit()) { "*" } else { seg }).collect::<Vec<_>>().join("/")
}

/// The path up to (not including) its first segment that looks like an identifier: digits, a
/// UUID, a long hexadecimal or mixed letters-and-digits token, an e-mail address; `/` when the
/// first segment already is one. The query is not part of the path.
pub fn prefix_of(path: &str) -> String {
    let path = path.split(['?', '#']).next().unwrap_or("");
    let mut out = String::new();
    for seg in path.split('/').filter(|s| !s.is_empty()) {
        if looks_like_id(seg) {
            break;
        }
        out.push('/');
        out.push_str(seg);
    }
    if out.is_empty() {
        out.push('/');
    }
    out
}

fn looks_like_id(seg: &str) -> bool {
    let b = seg.as_bytes();
    let digits = b.iter().filter(|c| c.is_ascii_digit()).count();
    let hex = b.iter().all(|c| c.is_ascii_hexdigit() || *c == b'-');
    b.iter().all(u8::is_ascii_digit)
        || (hex && b.len() >= 8 && digits > 0)
        || (b.len() >= 12 && digits >= 2 && b.iter().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_')))
        || seg.contains('@') && seg.contains('.')
}

/// The suggestions as a `detection:` snippet per app, each exclusion with a comment saying what
/// it would have allowed. Paste it into the app's entry (merging with an existing
/// `detection:` section) and reload.
pub fn to_yaml(suggestions: &[Suggestion], summary: &Summary) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "# {} exclusion(s) from {} event row(s): {} request(s) with detection findings, {} of them also refused by another stage.\n",
        suggestions.len(),
        summary.events,
        summary.detection_requests,
        summary.other_stage_requests
    ));
    out.push_str("# Review each before pasting: an exclusion lets that detector pass in that place for every client.\n");
    if suggestions.is_empty() {
        return out;
    }
    out.push_str("apps:\n");
    let mut by_app: BTreeMap<&str, Vec<&Suggestion>> = BTreeMap::new();
    for s in suggestions {
        by_app.entry(&s.app).or_default().push(s);
    }
    for (app, list) in by_app {
        out.push_str(&format!("  - name: {}\n    detection:\n", yaml_scalar(app)));
        let mut ops: BTreeMap<&str, Vec<&Suggestion>> = BTreeMap::new();
        let mut prefixes: BTreeMap<&str, Vec<&Suggestion>> = BTreeMap::new();
        for s in list {
            match &s.scope {
                Scope::Operation(o) => ops.entry(o).or_default().push(s),
                Scope::Prefix(p) => prefixes.entry(p).or_default().push(s),
            }
        }
        if !ops.is_empty() {
            out.push_str("      operations:\n");
            for (op, list) in ops {
                out.push_str(&format!("        - operation: {}\n          exclusions:\n", yaml_scalar(op)));
                for s in list {
                    exclusion_line(&mut out, "            ", s);
                }
            }
        }
        if !prefixes.is_empty() {
            out.push_str("      paths:\n");
            for (prefix, list) in prefixes {
                out.push_str(&format!("        - prefix: {}\n          exclusions:\n", yaml_scalar(prefix)));
                for s in list {
                    exclusion_line(&mut out, "            ", s);
                }
            }
        }
    }
    out
}

fn exclusion_line(out: &mut String, indent: &str, s: &Suggestion) {
    let warn = if s.one_client() { "; all from one client: may be a real attack" } else { "" };
    out.push_str(&format!(
        "{indent}- {{detector: {}, location: {}}}  # allows {} of {} request(s), {} client(s), {} .. {}{warn}\n",
        yaml_scalar(&s.detector),
        yaml_scalar(&s.location),
        s.allows,
        s.findings,
        s.clients,
        format_time(s.first_ms),
        format_time(s.last_ms),
    ));
}

/// A YAML scalar: plain when it is safe as one (letters, digits, `/ . _ -` and inner blanks, not
/// starting with `-`), else single-quoted.
fn yaml_scalar(s: &str) -> String {
    let plain = !s.is_empty()
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'/' | b'.' | b'_' | b'-' | b' '))
        && !s.starts_with(['-', ' '])
        && !s.ends_with(' ');
    if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "''"))
    }
}

/// What `palisade detect suggest` and the admin API's `/api/suggest` answer.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Report {
    pub summary: Summary,
    /// More events matched than were read (`max_events`): the newest were read.
    pub truncated: bool,
    pub suggestions: Vec<Suggestion>,
    /// The suggestions as a snippet to paste into the configuration.
    pub yaml: String,
}

/// Read the events of `filter` (newest first, at most `max_events`) and suggest exclusions;
/// with `for_event`, only those that cover that event (the dashboard's event detail).
pub fn report(reader: &Reader, filter: &Filter, max_events: usize, min_requests: u64, for_event: Option<i64>) -> Result<Report, SinkError> {
    let mut events = Vec::new();
    let mut f = Filter { limit: Some(MAX_LIMIT), after_id: None, ..filter.clone() };
    let truncated = loop {
        let page = reader.events(&f)?;
        events.extend(page.events);
        match page.next_cursor {
            Some(c) if events.len() < max_events => f.before_id = Some(c),
            Some(_) => break true,
            None => break false,
        }
    };
    events.truncate(max_events);
    let (mut suggestions, summary) = suggest(&events, min_requests);
    if let Some(id) = for_event {
        suggestions.retain(|s| s.event_ids.contains(&id));
    }
    let yaml = to_yaml(&suggestions, &summary);
    Ok(Report { summary, truncated, suggestions, yaml })
}

#[cfg(test)]
mod tests;
