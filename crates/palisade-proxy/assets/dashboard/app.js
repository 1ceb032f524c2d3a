// Palisade dashboard: plain JavaScript over the admin API (/api/stats, /api/events,
// /api/apps). No framework and no build step: the files are embedded in the binary.
// Everything that comes from requests (paths, fragments, IPs...) is attacker-controlled and is
// only ever written with textContent, never parsed as HTML.
"use strict";

const $ = (sel) => document.querySelector(sel);
const FILTERS = ["ip", "category", "reason", "app", "path", "status", "verdict"];
const state = { range: "1h", filters: {}, cursor: null, events: [], open: null, timer: null };

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v;
    else if (k === "dataset") Object.assign(e.dataset, v);
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const c of children) {
    if (c === null || c === undefined) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

function svg(tag, attrs) {
  const e = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  return e;
}

function token() {
  try { return localStorage.getItem("palisade-token") || ""; } catch (_) { return ""; }
}

async function api(path) {
  const headers = {};
  const t = token();
  if (t) headers["Authorization"] = "Bearer " + t;
  const r = await fetch(path, { headers, cache: "no-store" });
  if (r.status === 401) throw new Error("The admin API needs a token: use the Token button.");
  const body = await r.json().catch(() => null);
  if (!r.ok) throw new Error((body && (body.detail || body.title)) || ("HTTP " + r.status + " from " + path));
  return body;
}

function showError(msg) {
  const e = $("#error");
  e.textContent = msg || "";
  e.hidden = !msg;
}

function fmtTime(ms) {
  const d = new Date(ms);
  const pad = (n, w = 2) => String(n).padStart(w, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

function fmtNum(n) {
  return Number(n || 0).toLocaleString("en-US");
}

// ---- URL state: range, filters and the open event live in the hash (shareable links) ----

function readHash() {
  const p = new URLSearchParams(location.hash.slice(1));
  state.range = p.get("range") || "1h";
  state.filters = {};
  for (const k of FILTERS) if (p.get(k)) state.filters[k] = p.get(k);
  state.open = p.get("event") ? Number(p.get("event")) : null;
  $("#range").value = state.range;
  const form = $("#filters");
  for (const k of FILTERS) form.elements[k].value = state.filters[k] || "";
}

function writeHash() {
  const p = new URLSearchParams();
  if (state.range !== "1h") p.set("range", state.range);
  for (const [k, v] of Object.entries(state.filters)) p.set(k, v);
  if (state.open !== null) p.set("event", String(state.open));
  const h = p.toString();
  history.replaceState(null, "", h ? "#" + h : location.pathname);
}

function query(extra) {
  const p = new URLSearchParams({ since: state.range, ...state.filters, ...extra });
  return p.toString();
}

// ---- overview ----

async function loadStats() {
  const s = await api("/api/stats?" + new URLSearchParams({ since: state.range, buckets: "60", top: "10" }));
  let blocked = 0, monitored = 0;
  for (const b of s.buckets) { blocked += b.blocked; monitored += b.monitored; }
  $("#c-total").textContent = fmtNum(s.total);
  $("#c-blocked").textContent = fmtNum(blocked);
  $("#c-monitored").textContent = fmtNum(monitored);
  $("#c-ips").textContent = fmtNum(s.top_ips.length) + (s.top_ips.length >= 10 ? "+" : "");
  drawTimeline(s);
  drawBars($("#categories"), s.categories, (k) => setFilter("category", k));
  fillTop($("#top-ips tbody"), s.top_ips, (k) => setFilter("ip", k), true);
  fillTop($("#top-paths tbody"), s.top_paths, (k) => setFilter("path", k));
  fillTop($("#top-reasons tbody"), s.top_reasons, (k) => setFilter("reason", k));
}

// Bars are placed by time (the API returns only the buckets that have events): the axis runs
// over whole buckets, from the start of the one holding since_ms to the end of the one holding
// until_ms, so the current bucket is as wide as the others. The plot area starts below the
// "max" label, so no bar can reach it.
function timelineAxis(s) {
  const b = Math.max(1, s.bucket_ms);
  const start = Math.floor(s.since_ms / b) * b;
  return { start, end: Math.max(start + b, Math.ceil(s.until_ms / b) * b) };
}

function drawTimeline(s) {
  const g = $("#timeline");
  g.replaceChildren();
  const W = 600, H = 160, top = 16, bottom = 18;
  const axis = timelineAxis(s);
  const span = axis.end - axis.start;
  const xOf = (ms) => Math.min(W, Math.max(0, (ms - axis.start) / span * W));
  const max = Math.max(1, ...s.buckets.map((b) => b.blocked + b.monitored));
  const scale = (H - top - bottom) / max;
  g.append(svg("line", { x1: 0, y1: H - bottom, x2: W, y2: H - bottom, class: "axis" }));
  for (const b of s.buckets) {
    const x0 = xOf(b.start_ms), x1 = xOf(b.start_ms + s.bucket_ms);
    // A small gap between neighbours; never thinner than a pixel.
    const w = Math.max(1, (x1 - x0) * 0.8), x = Math.min(W - w, x0 + (x1 - x0) * 0.1);
    const hb = b.blocked * scale, hm = b.monitored * scale;
    const bar = (cls, y, h, what) => {
      const r = svg("rect", { x, y, width: w, height: h, class: cls, "data-start-ms": b.start_ms });
      r.append(svg("title", {}));
      r.firstChild.textContent = `${fmtTime(b.start_ms)}: ${what}`;
      g.append(r);
    };
    if (hb > 0) bar("blocked", H - bottom - hb, hb, `${b.blocked} blocked`);
    if (hm > 0) bar("monitored", H - bottom - hb - hm, hm, `${b.monitored} monitored`);
  }
  const label = (x, ms, anchor) => {
    const t = svg("text", { x, y: H - 4, "text-anchor": anchor, class: "time" });
    t.textContent = fmtTime(ms).slice(11, 16);
    g.append(t);
  };
  label(2, axis.start, "start");
  label(W / 2, axis.start + span / 2, "middle");
  label(W - 2, axis.end, "end");
  const m = svg("text", { x: 2, y: top - 5, class: "max" });
  m.textContent = "max " + fmtNum(max) + " per " + fmtSpan(s.bucket_ms);
  g.append(m);
}

function fmtSpan(ms) {
  if (ms % 86400000 === 0) return ms / 86400000 + " d";
  if (ms % 3600000 === 0) return ms / 3600000 + " h";
  if (ms % 60000 === 0) return ms / 60000 + " min";
  if (ms % 1000 === 0) return ms / 1000 + " s";
  return ms + " ms";
}

function drawBars(box, items, onPick) {
  box.replaceChildren();
  if (!items.length) { box.append(el("p", { class: "muted" }, "No attacks in this range.")); return; }
  const max = Math.max(...items.map((i) => i.count));
  for (const it of items) {
    const fill = el("div", { class: "fill" });
    fill.style.width = (100 * it.count / max).toFixed(1) + "%";
    box.append(el("div", { class: "bar", dataset: { key: it.key } },
      el("a", { onclick: () => onPick(it.key) }, it.key), el("div", {}, fill), el("span", { class: "n" }, fmtNum(it.count))));
  }
}

function fillTop(tbody, items, onPick, ipKeys) {
  tbody.replaceChildren();
  if (!items.length) { tbody.append(el("tr", {}, el("td", { class: "muted" }, "none"))); return; }
  for (const it of items) {
    tbody.append(el("tr", { dataset: { key: it.key } }, el("td", { class: "mono" + (ipKeys ? " ip" : "") }, el("a", { onclick: () => onPick(it.key) }, it.key)), el("td", {}, fmtNum(it.count))));
  }
}

async function loadApps() {
  const body = await api("/api/apps");
  const tbody = $("#apps tbody");
  tbody.replaceChildren();
  for (const a of body.apps) {
    const mode = (text) => {
      const m = /\b(block|monitor|off)\b/.exec(text || "off");
      return el("td", { class: "mode-" + (m ? m[1] : "off") }, text || "off");
    };
    tbody.append(el("tr", { dataset: { app: a.name } },
      el("td", {}, el("a", { onclick: () => setFilter("app", a.name) }, a.name)),
      el("td", { class: "mono" }, a.route),
      el("td", { class: "mono" }, a.upstream),
      mode(a.access), mode(a.openapi), mode(a.detection), mode(a.rules)));
  }
}

// ---- event log ----

async function loadEvents(more) {
  const extra = { limit: "50" };
  if (more && state.cursor) extra.cursor = String(state.cursor);
  const page = await api("/api/events?" + query(extra));
  if (!more) state.events = [];
  state.events.push(...page.events);
  state.cursor = page.next_cursor || null;
  const tbody = $("#events tbody");
  if (!more) tbody.replaceChildren();
  for (const e of page.events) tbody.append(eventRow(e));
  $("#empty").hidden = state.events.length > 0;
  $("#older").hidden = !state.cursor;
}

function eventRow(e) {
  return el("tr", { class: "event", dataset: { id: String(e.id) }, onclick: () => openEvent(e.id) },
    el("td", {}, fmtTime(e.time_ms)),
    el("td", {}, el("span", { class: "verdict " + e.verdict }, e.verdict)),
    el("td", {}, e.status),
    el("td", { class: "mono ip" }, e.client_ip),
    el("td", {}, e.app),
    el("td", { class: "req" }, e.method + " " + e.path + (e.query ? "?" + e.query : "")),
    el("td", { class: "mono code" }, e.reason || "–"),
    el("td", { class: "where" }, e.location || ""),
    el("td", { class: "count" }, fmtNum(e.count || 1)));
}

function why(e) {
  if (!e.reason) return "Allowed (sampled request).";
  const verb = e.verdict === "block" ? "Blocked" : e.verdict === "monitor" ? "Would have been blocked (monitor mode)" : "Recorded";
  let s = `${verb} by the ${e.stage || "?"} stage: ${e.reason}`;
  if (e.detector) s += `, detector ${e.detector}`;
  if (e.confidence !== undefined && e.confidence !== null) s += ` (confidence ${e.confidence})`;
  if (e.location) s += `, in ${e.location}`;
  return s + ".";
}

async function openEvent(id) {
  let e = state.events.find((x) => x.id === id);
  if (!e) {
    // Not on the loaded page (a shared link): the row just below id + 1 is this one.
    const page = await api("/api/events?" + new URLSearchParams({ cursor: String(id + 1), limit: "1" }));
    e = page.events.find((x) => x.id === id);
  }
  if (!e) { showError(`Event ${id} was not found (retention may have removed it).`); return; }
  state.open = id;
  writeHash();
  $("#detail-title").textContent = `Event ${e.id} · ${e.request_id}`;
  $("#detail-why").textContent = why(e);
  const dl = $("#detail-fields");
  dl.replaceChildren();
  const rows = [
    ["Time", fmtTime(e.time_ms) + (e.count > 1 ? ` … ${fmtTime(e.last_ms)} (${e.count} identical events)` : "")],
    ["Request id", e.request_id], ["App", e.app], ["Client IP", e.client_ip], ["Host", e.host],
    ["Request", e.method + " " + e.path], ["Query", e.query], ["Verdict", e.verdict], ["Stage", e.stage],
    ["Reason", e.reason], ["Detector / rule", e.detector], ["Category", e.category], ["Confidence", e.confidence],
    ["Field", e.location], ["Detail", e.detail], ["Status returned", e.status], ["Upstream status", e.upstream_status],
    ["Latency", e.latency_us !== undefined ? (e.latency_us / 1000).toFixed(2) + " ms" : null],
    ["Rule tags", e.tags && e.tags.length ? e.tags.join(", ") : null],
  ];
  for (const [k, v] of rows) {
    if (v === undefined || v === null || v === "") continue;
    dl.append(el("dt", {}, k), el("dd", { dataset: { field: k } }, v));
  }
  $("#detail-fragment").textContent = e.fragment || "(none recorded)";
  const others = $("#detail-others");
  others.replaceChildren();
  for (const o of e.others || []) others.append(el("li", {}, `${o.stage}: ${o.reason}` + (o.location ? ` at ${o.location}` : "")));
  $("#detail-others-title").hidden = !(e.others && e.others.length);
  $("#detail").hidden = false;
  showSuggestion(e);
}

// The narrowest detection exclusion that would have let this request through, with what it
// would have allowed over the last week (the same as `palisade detect suggest`).
async function showSuggestion(e) {
  const title = $("#detail-suggest-title"), note = $("#detail-suggest-note"), pre = $("#detail-suggest");
  title.hidden = true; note.hidden = true; pre.textContent = "";
  if (!e.reason || !e.reason.startsWith("detect.") || e.reason === "detect.limit") return;
  let r;
  try {
    r = await api("/api/suggest?" + new URLSearchParams({ for: String(e.id), app: e.app, since: "7d" }));
  } catch (err) { return; }
  if (state.open !== e.id || !r.suggestions || !r.suggestions.length) return;
  const s = r.suggestions[0];
  title.hidden = false;
  note.hidden = false;
  note.textContent = `Would have allowed ${fmtNum(s.allows)} of ${fmtNum(s.findings)} request(s) from ${fmtNum(s.clients)} client(s) in the last 7 days.` +
    (s.clients === 1 && s.findings > 1 ? " All from one client: this may be a real attack." : "") +
    " Paste into the app's configuration and reload.";
  pre.textContent = r.yaml.split("\n").filter((l) => !l.startsWith("#")).join("\n");
}

function closeEvent() {
  $("#detail").hidden = true;
  state.open = null;
  writeHash();
}

function setFilter(k, v) {
  state.filters = { ...state.filters, [k]: v };
  $("#filters").elements[k].value = v;
  writeHash();
  refresh(false);
}

// ---- refresh loop ----

async function refresh(keepPage) {
  try {
    const jobs = [loadStats(), loadApps()];
    if (!keepPage || state.events.length <= 50) jobs.push(loadEvents(false));
    await Promise.all(jobs);
    showError("");
    document.body.dataset.loaded = String(Date.now());
  } catch (err) {
    showError(err.message);
  }
}

function schedule() {
  clearInterval(state.timer);
  if ($("#auto").checked) state.timer = setInterval(() => { if (!document.hidden) refresh(true); }, 5000);
}

document.addEventListener("DOMContentLoaded", async () => {
  readHash();
  $("#range").addEventListener("change", () => { state.range = $("#range").value; writeHash(); refresh(false); });
  $("#refresh").addEventListener("click", () => refresh(false));
  $("#auto").addEventListener("change", schedule);
  $("#token").addEventListener("click", () => {
    const t = prompt("Admin token (stored in this browser only; empty to forget):", token());
    if (t === null) return;
    try { if (t) localStorage.setItem("palisade-token", t); else localStorage.removeItem("palisade-token"); } catch (_) { /* private mode */ }
    refresh(false);
  });
  $("#filters").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const form = ev.target;
    state.filters = {};
    for (const k of FILTERS) { const v = form.elements[k].value.trim(); if (v) state.filters[k] = v; }
    writeHash();
    refresh(false);
  });
  $("#clear").addEventListener("click", () => { state.filters = {}; for (const k of FILTERS) $("#filters").elements[k].value = ""; writeHash(); refresh(false); });
  $("#older").addEventListener("click", () => loadEvents(true).catch((e) => showError(e.message)));
  $("#detail-close").addEventListener("click", closeEvent);
  $("#detail").addEventListener("click", (ev) => { if (ev.target.id === "detail") closeEvent(); });
  document.addEventListener("keydown", (ev) => { if (ev.key === "Escape" && !$("#detail").hidden) closeEvent(); });
  window.addEventListener("hashchange", () => { readHash(); refresh(false); });
  await refresh(false);
  if (state.open !== null) openEvent(state.open);
  schedule();
});
