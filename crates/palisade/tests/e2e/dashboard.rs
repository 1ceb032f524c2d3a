//! The web dashboard in a real headless browser (Debian `chromium` driven through
//! `chromedriver`): requests blocked by the running proxy show up in the event log and the
//! overview, the filter narrows the log, a click opens the detail view with the reason, field
//! and decoded fragment, attack payloads are shown as text and never run, and the admin token
//! is honoured; the timeline draws `/api/stats`'s buckets at their times. Screenshots are kept
//! as test artefacts (`target/test-artefacts/dashboard.png`, `dashboard-overview.png`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use crate::common::*;
use crate::webdriver::{unavailable, Browser};

const WAIT: Duration = Duration::from_secs(20);

fn config(target: &str, admin_extra: &str) -> String {
    format!(
        "workers: 1\nlisten:\n  - addr: 127.0.0.1:0\nadmin:\n  addr: 127.0.0.1:0\n{admin_extra}server:\n  shutdown_timeout: 500ms\n  trusted_proxies: [127.0.0.1]\nevents: sqlite:events.db\n{}",
        one_app(target)
    )
}

fn flush(p: &Proxy) {
    let shared = p.running().shared();
    assert!(shared.events.as_ref().expect("events are on").flush(LIMIT), "events were not stored within {LIMIT:?}");
}

fn artefacts() -> PathBuf {
    // tests run with the crate as working directory; the workspace target dir is two levels up.
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/test-artefacts");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Count of event rows, and whether every row's reason cell equals `reason` (when given).
fn rows_js(reason: Option<&str>) -> String {
    match reason {
        None => "document.querySelectorAll('#events tbody tr.event').length".into(),
        Some(r) => format!(
            "(() => {{ const rows = [...document.querySelectorAll('#events tbody tr.event')]; \
             return rows.length > 0 && rows.every(tr => tr.children[6].textContent === '{r}') ? rows.length : 0; }})()"
        ),
    }
}

const IPV6_CLIENT: &str = "2001:db8:85a3:1234:5678:8a2e:370:7334";

/// GET `path` from the page's origin with a synchronous request: the API's own answer, the
/// reference the drawing is checked against.
fn api_js(path: &str) -> String {
    format!("(() => {{ const x = new XMLHttpRequest(); x.open('GET', '{path}', false); x.send(); return JSON.parse(x.responseText); }})()")
}

/// The timeline against `/api/stats` (the same range the page asked for, `1h`): one blocked bar
/// per bucket with blocked events, each at its bucket's time on an axis from `since_ms` to
/// `until_ms` rounded out to whole buckets (the attacks were just sent: at the right end, not at the left as when bars were
/// placed by index), and the scale label clear of every bar.
fn check_timeline(b: &Browser) -> Result<(), String> {
    let v = b.script(&format!(
        "const s = {}; \
         const rects = [...document.querySelectorAll('#timeline rect')].map(r => {{ const bb = r.getBBox(); \
           return {{ cls: r.getAttribute('class'), start: Number(r.getAttribute('data-start-ms')), x: bb.x, y: bb.y, w: bb.width, h: bb.height }}; }}); \
         const t = [...document.querySelectorAll('#timeline text')].find(t => t.textContent.startsWith('max')).getBBox(); \
         return {{ s, rects, label: {{ x: t.x, y: t.y, w: t.width, h: t.height }}, width: document.querySelector('#timeline').viewBox.baseVal.width }};",
        api_js("/api/stats?since=1h&buckets=60&top=10")
    ))?;
    let f = |v: &serde_json::Value| v.as_f64().unwrap_or(f64::NAN);
    let (s, width) = (&v["s"], f(&v["width"]));
    let (since, until, bucket) = (f(&s["since_ms"]), f(&s["until_ms"]), f(&s["bucket_ms"]));
    // The axis runs over whole buckets: from the start of since's to the end of until's.
    let (since, until) = ((since / bucket).floor() * bucket, (until / bucket).ceil() * bucket);
    let span = until - since;
    let mut want: Vec<i64> =
        s["buckets"].as_array().unwrap().iter().filter(|b| b["blocked"].as_u64() > Some(0)).map(|b| b["start_ms"].as_i64().unwrap()).collect();
    let rects = v["rects"].as_array().unwrap();
    let blocked: Vec<&serde_json::Value> = rects.iter().filter(|r| r["cls"] == "blocked").collect();
    let mut got: Vec<i64> = blocked.iter().map(|r| f(&r["start"]) as i64).collect();
    want.sort_unstable();
    got.sort_unstable();
    assert!(!want.is_empty(), "the API has blocked buckets: {s}");
    assert_eq!(got, want, "one blocked bar per bucket of /api/stats");
    // The page fetched its stats a moment before this answer: allow 2 px of drift.
    let bw = bucket / span * width;
    for r in &blocked {
        let x0 = ((f(&r["start"]) - since) / span * width).clamp(0.0, width);
        let (x, w) = (f(&r["x"]), f(&r["w"]));
        assert!(x >= x0 - 2.0 && x + w <= (x0 + bw).min(width) + 2.0, "bar of {} at x={x} w={w}, its bucket spans {x0}..{}: {v}", r["start"], x0 + bw);
        assert!(x >= width - 2.0 * bw - 2.0, "events of the last seconds are drawn at the right end, not at x={x}");
    }
    let l = &v["label"];
    for r in rects {
        let apart = f(&l["x"]) + f(&l["w"]) <= f(&r["x"])
            || f(&r["x"]) + f(&r["w"]) <= f(&l["x"])
            || f(&l["y"]) + f(&l["h"]) <= f(&r["y"])
            || f(&r["y"]) + f(&r["h"]) <= f(&l["y"]);
        assert!(apart, "the scale label {l} overlaps the bar {r}");
    }
    Ok(())
}

/// The event log against `/api/events`: the Count column holds each event's count, and client
/// IPs (an IPv6 one included) are on one line.
fn check_event_table(b: &Browser) -> Result<(), String> {
    let v = b.script(&format!(
        "const api = {}; \
         const rows = [...document.querySelectorAll('#events tbody tr.event')].map(tr => [Number(tr.dataset.id), tr.lastElementChild.textContent]); \
         const lines = [...document.querySelectorAll('#events td.ip, #top-ips td.ip')].map(td => {{ const r = document.createRange(); r.selectNodeContents(td.querySelector('a') || td); return [td.textContent, r.getClientRects().length]; }}); \
         return {{ api, rows, lines }};",
        api_js("/api/events?since=1h&limit=50")
    ))?;
    let mut want: Vec<(i64, String)> =
        v["api"]["events"].as_array().unwrap().iter().map(|e| (e["id"].as_i64().unwrap(), e["count"].as_u64().unwrap().to_string())).collect();
    let mut got: Vec<(i64, String)> = v["rows"].as_array().unwrap().iter().map(|r| (r[0].as_i64().unwrap(), r[1].as_str().unwrap().to_string())).collect();
    want.sort();
    got.sort();
    assert_eq!(got, want, "the Count column shows each event's count");
    let lines = v["lines"].as_array().unwrap();
    assert!(lines.iter().any(|l| l[0] == IPV6_CLIENT), "the IPv6 client is listed: {lines:?}");
    for l in lines {
        assert_eq!(l[1].as_u64(), Some(1), "the address {} wraps", l[0]);
    }
    Ok(())
}

#[tokio::test]
async fn the_dashboard_shows_filters_and_explains_real_blocked_requests() {
    if let Some(why) = unavailable() {
        eprintln!("dashboard browser test skipped: {why}");
        return;
    }
    let up = Upstream::tcp(reply("ok")).await;
    let proxy = Proxy::start(&config(&up.url(), ""));
    // Real attacks, blocked by detection: two SQL injections and one XSS whose payload would
    // run if the dashboard rendered request data as HTML.
    for path in ["/search?q=%27%20or%201%3D1--", "/items?id=1%20union%20select%20password%20from%20users--"] {
        assert_problem(&get(proxy.addr, "shop.test", path).await, 403, "detect.sqli");
    }
    // The XSS comes through a trusted proxy from an IPv6 client: a long address in the log.
    let xss = "/comment?text=%3Cimg%20src%3Dx%20onerror%3D%22document.title%3D%27pwned%27%22%3E";
    let via_proxy = format!("GET {xss} HTTP/1.1\r\nHost: shop.test\r\nX-Forwarded-For: {IPV6_CLIENT}\r\nConnection: close\r\n\r\n");
    assert_problem(&raw(proxy.addr, via_proxy).await, 403, "detect.xss");
    assert_eq!(get(proxy.addr, "shop.test", "/search?q=shoes").await.status, 200);
    flush(&proxy);
    let admin: SocketAddr = proxy.running().admin_addr.expect("admin address");

    let shot = tokio::task::spawn_blocking(move || -> Result<Vec<u8>, String> {
        let b = Browser::start()?;
        b.goto(&format!("http://{admin}/"))?;
        // The log lists the three blocked requests (the allowed one is not an event).
        b.wait_for("three events in the log", &format!("{} === 3", rows_js(None)), WAIT)?;
        let text = b.script("return document.querySelector('#events tbody').textContent")?;
        let text = text.as_str().unwrap_or_default();
        assert!(text.contains("detect.sqli") && text.contains("detect.xss"), "{text}");
        // The overview: totals, the timeline, the categories and the top lists.
        b.wait_for("the total", "document.querySelector('#c-total').textContent === '3'", WAIT)?;
        b.wait_for("blocked bars in the timeline", "document.querySelectorAll('#timeline rect.blocked').length > 0", WAIT)?;
        check_timeline(&b)?;
        check_event_table(&b)?;
        let overview = b.screenshot()?;
        std::fs::write(artefacts().join("dashboard-overview.png"), &overview).map_err(|e| e.to_string())?;
        let cats = b.script("return [...document.querySelectorAll('#categories .bar')].map(b => b.dataset.key).join(',')")?;
        assert_eq!(cats.as_str(), Some("sqli,xss"), "categories by count");
        let ips = b.script("return document.querySelector('#top-ips tbody tr').dataset.key")?;
        assert_eq!(ips.as_str(), Some("127.0.0.1"));
        let apps = b.script("return document.querySelector('#apps tbody tr').textContent")?;
        assert!(apps.as_str().is_some_and(|a| a.contains("app") && a.contains("block, balanced")), "{apps}");

        // Filter by category through the form.
        b.type_into("#filters input[name=category]", "xss")?;
        b.click("#apply")?;
        b.wait_for("only the XSS event", &format!("{} === 1", rows_js(Some("detect.xss"))), WAIT)?;
        let hash = b.script("return location.hash")?;
        assert_eq!(hash.as_str(), Some("#category=xss"), "the filter is in the URL");

        // Open the detail view: why, which field, the decoded fragment, as text.
        b.click("#events tbody tr.event")?;
        b.wait_for("the detail view", "!document.querySelector('#detail').hidden", WAIT)?;
        let why = b.script("return document.querySelector('#detail-why').textContent")?;
        let why = why.as_str().unwrap_or_default().to_string();
        assert!(why.contains("Blocked by the detection stage: detect.xss") && why.contains("query.text"), "{why}");
        let fragment = b.script("return document.querySelector('#detail-fragment').textContent")?;
        assert!(fragment.as_str().is_some_and(|f| f.contains("onerror")), "the decoded fragment is shown: {fragment}");
        let injected = b.script("return document.querySelectorAll('#detail img, #events img').length + (document.title === 'pwned' ? 100 : 0)")?;
        assert_eq!(injected.as_i64(), Some(0), "request data must never become markup");
        let field = b.script("return document.querySelector('#detail dd[data-field=\"Field\"]').textContent")?;
        assert_eq!(field.as_str(), Some("query.text"));
        // The narrowest exclusion for this event, as `palisade detect suggest` would give it.
        b.wait_for("the suggested exclusion", "document.querySelector('#detail-suggest').textContent.includes('location: query.text')", WAIT)?;
        let snippet = b.script("return document.querySelector('#detail-suggest').textContent")?;
        let snippet = snippet.as_str().unwrap_or_default().to_string();
        assert!(snippet.contains("detection:") && snippet.contains("{detector: xss, location: query.text}"), "{snippet}");
        let png = b.screenshot()?;

        // Closing it and clearing the filter brings the whole log back.
        b.click("#detail-close")?;
        b.wait_for("the detail view to close", "document.querySelector('#detail').hidden", WAIT)?;
        b.click("#clear")?;
        b.wait_for("all events again", &format!("{} === 3", rows_js(None)), WAIT)?;
        Ok(png)
    })
    .await
    .unwrap()
    .unwrap_or_else(|e| panic!("browser: {e}"));
    assert!(shot.starts_with(b"\x89PNG\r\n\x1a\n") && shot.len() > 10_000, "a real screenshot ({} bytes)", shot.len());
    std::fs::write(artefacts().join("dashboard.png"), &shot).unwrap();
}

#[tokio::test]
async fn the_dashboard_asks_for_the_admin_token_when_one_is_set() {
    if let Some(why) = unavailable() {
        eprintln!("dashboard browser test skipped: {why}");
        return;
    }
    let up = Upstream::tcp(reply("ok")).await;
    let proxy = Proxy::start(&config(&up.url(), "  token: s3cret-admin-token\n"));
    assert_problem(&get(proxy.addr, "shop.test", "/search?q=%27%20or%201%3D1--").await, 403, "detect.sqli");
    flush(&proxy);
    let admin: SocketAddr = proxy.running().admin_addr.expect("admin address");
    // The page itself is served without the token (it holds no data); the API is not.
    let page = raw(admin, "GET / HTTP/1.1\r\nHost: admin\r\nConnection: close\r\n\r\n").await;
    assert_eq!(page.status, 200);
    assert!(page.header("content-security-policy").is_some_and(|c| c.contains("script-src 'self'")), "{}", page.dump());
    let api = raw(admin, "GET /api/events HTTP/1.1\r\nHost: admin\r\nConnection: close\r\n\r\n").await;
    assert_eq!(api.status, 401);

    tokio::task::spawn_blocking(move || -> Result<(), String> {
        let b = Browser::start()?;
        b.goto(&format!("http://{admin}/"))?;
        b.wait_for("the token message", "document.querySelector('#error').textContent.includes('token')", WAIT)?;
        assert_eq!(b.script(&format!("return {}", rows_js(None)))?.as_i64(), Some(0));
        // What the Token button stores; then a refresh shows the event.
        b.script("localStorage.setItem('palisade-token', 's3cret-admin-token'); return true")?;
        b.click("#refresh")?;
        b.wait_for("the event with the token", &format!("{} === 1", rows_js(None)), WAIT)?;
        b.wait_for("the error to clear", "document.querySelector('#error').hidden", WAIT)?;
        Ok(())
    })
    .await
    .unwrap()
    .unwrap_or_else(|e| panic!("browser: {e}"));
}
