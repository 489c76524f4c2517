// Lode console: overview, request console and activity charts. Plain JavaScript, no
// dependencies; every request goes to the node that served this page.
"use strict";

const $ = (sel) => document.querySelector(sel);
const HISTORY_KEY = "lode.console.history";
const HISTORY_MAX = 50;
const CHART_POINTS = 90;

// ---- formatting -------------------------------------------------------------------------

function bytes(n) {
  if (n == null || isNaN(n)) return "–";
  const units = ["b", "kb", "mb", "gb", "tb"];
  let i = 0;
  n = Number(n);
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return (i === 0 ? n : n.toFixed(1)) + units[i];
}

function num(n) {
  return n == null || isNaN(n) ? "–" : Number(n).toLocaleString("en-US");
}

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  for (const c of children) e.append(c instanceof Node ? c : c == null ? "" : String(c));
  return e;
}

async function getJson(path) {
  const r = await fetch(path, { headers: { accept: "application/json" } });
  if (!r.ok) throw new Error(path + ": HTTP " + r.status);
  return r.json();
}

// ---- overview ---------------------------------------------------------------------------

function renderOverview(health, cat, stats, nodes) {
  const badge = $("#health");
  badge.textContent = health.status;
  badge.className = "badge " + health.status;
  const node = Object.values(nodes.nodes)[0] || {};
  $("#node-name").textContent = (health.cluster_name || "") + " / " + (node.name || "");
  const idx = node.indices || {};
  const rows = [
    ["indices", num(cat.length)],
    ["documents", num(idx.docs && idx.docs.count)],
    ["store", bytes(idx.store && idx.store.size_in_bytes)],
    ["segments", num(idx.segments && idx.segments.count)],
    ["merges (running / total)", num(idx.merges && idx.merges.current) + " / " + num(idx.merges && idx.merges.total)],
    ["searches", num(idx.search && idx.search.query_total)],
    ["indexed", num(idx.indexing && idx.indexing.index_total)],
    ["resident memory", bytes(node.process && node.process.mem && node.process.mem.resident_in_bytes)],
    ["uptime", node.jvm ? Math.round(node.jvm.uptime_in_millis / 1000) + " s" : "–"],
  ];
  const dl = $("#node-stats");
  dl.replaceChildren(...rows.flatMap(([k, v]) => [el("dt", {}, k), el("dd", {}, v)]));

  const tbody = $("#indices tbody");
  const sorted = cat.slice().sort((a, b) => a.index.localeCompare(b.index));
  tbody.replaceChildren(...sorted.map((c) => {
    const s = (stats.indices[c.index] || {}).total || {};
    const seg = s.segments || {}, merges = s.merges || {};
    return el("tr", { "data-index": c.index },
      el("td", {}, c.index),
      el("td", { class: c.health }, c.health),
      el("td", {}, c.status),
      el("td", { class: "num docs" }, num(c["docs.count"])),
      el("td", { class: "num" }, num(c["docs.deleted"])),
      el("td", { class: "num" }, bytes(c["store.size"])),
      el("td", { class: "num" }, num(seg.count)),
      el("td", { class: "num" }, num(merges.current) + " / " + num(merges.total)));
  }));
}

// ---- activity: rates and latency percentiles from successive polls -----------------------

const series = { time: [], searchRate: [], indexRate: [], search: [[], [], []], index: [[], [], []] };
let previous = null;

// The p quantile of bucket counts (not cumulative) over upper bounds, linear within a bucket.
function quantile(p, bounds, counts) {
  const total = counts.reduce((a, b) => a + b, 0);
  if (total === 0) return null;
  const rank = p * total;
  let seen = 0, lower = 0;
  for (let i = 0; i < bounds.length; i++) {
    if (counts[i] > 0 && seen + counts[i] >= rank) {
      return (lower + (bounds[i] - lower) * Math.min(1, Math.max(0, (rank - seen) / counts[i]))) * 1000;
    }
    seen += counts[i];
    lower = bounds[i];
  }
  return bounds[bounds.length - 1] * 1000;
}

// Sums the cumulative buckets (plus the overflow past the last bound) of matching endpoints.
function bucketsOf(http, match) {
  const n = http.bucket_bounds_seconds.length;
  const out = new Array(n + 1).fill(0);
  for (const e of http.endpoints) {
    if (!match(e.endpoint)) continue;
    for (let i = 0; i < n; i++) out[i] += e.buckets[i];
    out[n] += e.count;
  }
  return out;
}

const isSearch = (ep) => /\/_(search|msearch|count)(\/|$)/.test(ep) && !ep.includes("/_search/scroll");
const isIndexing = (ep) => /\/_(bulk|doc|create|update)(\/|$)/.test(ep);

function windowQuantiles(bounds, now, before) {
  // cumulative → per-bucket counts of the observations made between the two polls
  const delta = now.map((c, i) => Math.max(0, c - (before ? before[i] : 0)));
  const counts = delta.slice(0, bounds.length).map((c, i) => c - (i ? delta[i - 1] : 0));
  const over = delta[bounds.length] - delta[bounds.length - 1];
  counts.push(Math.max(0, over));
  const b = bounds.concat([bounds[bounds.length - 1]]);
  return [0.5, 0.9, 0.99].map((p) => quantile(p, b, counts));
}

function push(arr, v) {
  arr.push(v);
  if (arr.length > CHART_POINTS) arr.shift();
}

function recordActivity(nodes, http) {
  const idx = (Object.values(nodes.nodes)[0] || {}).indices || {};
  const now = {
    t: performance.now(),
    queries: (idx.search || {}).query_total || 0,
    indexed: (idx.indexing || {}).index_total || 0,
    search: bucketsOf(http, isSearch),
    index: bucketsOf(http, isIndexing),
  };
  if (previous) {
    const dt = (now.t - previous.t) / 1000;
    push(series.time, now.t);
    push(series.searchRate, Math.max(0, now.queries - previous.queries) / dt);
    push(series.indexRate, Math.max(0, now.indexed - previous.indexed) / dt);
    const bounds = http.bucket_bounds_seconds;
    windowQuantiles(bounds, now.search, previous.search).forEach((v, i) => push(series.search[i], v));
    windowQuantiles(bounds, now.index, previous.index).forEach((v, i) => push(series.index[i], v));
  }
  previous = now;
  drawChart($("#chart-rates"), [
    { name: "search/s", color: "#2563eb", values: series.searchRate },
    { name: "docs indexed/s", color: "#16a34a", values: series.indexRate },
  ]);
  const pct = (s) => [
    { name: "p50", color: "#16a34a", values: s[0] },
    { name: "p90", color: "#d97706", values: s[1] },
    { name: "p99", color: "#dc2626", values: s[2] },
  ];
  drawChart($("#chart-search-latency"), pct(series.search));
  drawChart($("#chart-index-latency"), pct(series.index));
}

// A line chart: y from 0 to the largest value (null = no observation in that window).
function drawChart(canvas, lines) {
  const ctx = canvas.getContext("2d");
  const w = canvas.width, h = canvas.height, left = 46, top = 18, bottom = 16;
  ctx.clearRect(0, 0, w, h);
  ctx.font = "11px system-ui, sans-serif";
  let max = 0;
  for (const l of lines) for (const v of l.values) if (v != null && v > max) max = v;
  max = max > 0 ? niceCeil(max) : 1;
  ctx.strokeStyle = "#e4e7ec";
  ctx.fillStyle = "#667085";
  for (let i = 0; i <= 4; i++) {
    const y = top + (h - top - bottom) * (1 - i / 4);
    ctx.beginPath(); ctx.moveTo(left, y); ctx.lineTo(w - 4, y); ctx.stroke();
    ctx.fillText(formatTick(max * i / 4), 2, y + 4);
  }
  ctx.fillText((CHART_POINTS) + " polls →", w - 70, h - 3);
  const step = (w - left - 4) / (CHART_POINTS - 1);
  let legendX = left;
  for (const l of lines) {
    ctx.strokeStyle = ctx.fillStyle = l.color;
    ctx.lineWidth = 1.5;
    ctx.beginPath();
    let pen = false;
    const offset = CHART_POINTS - l.values.length;
    l.values.forEach((v, i) => {
      if (v == null) { pen = false; return; }
      const x = left + (offset + i) * step, y = top + (h - top - bottom) * (1 - v / max);
      if (pen) ctx.lineTo(x, y); else ctx.moveTo(x, y);
      pen = true;
    });
    ctx.stroke();
    ctx.lineWidth = 1;
    // dots too, so that a value between two gaps (or the first one) shows
    l.values.forEach((v, i) => {
      if (v == null) return;
      const x = left + (offset + i) * step, y = top + (h - top - bottom) * (1 - v / max);
      ctx.fillRect(x - 1.5, y - 1.5, 3, 3);
    });
    const last = l.values.length ? l.values[l.values.length - 1] : null;
    const label = l.name + " " + (last == null ? "–" : formatTick(last));
    ctx.fillText(label, legendX, 12);
    legendX += ctx.measureText(label).width + 14;
  }
}

function niceCeil(v) {
  const p = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 2, 2.5, 5, 10]) if (v <= m * p) return m * p;
  return 10 * p;
}

function formatTick(v) {
  if (v >= 100) return Math.round(v).toString();
  if (v >= 10) return v.toFixed(1);
  return v.toFixed(2);
}

// ---- polling ----------------------------------------------------------------------------

let timer = null;

async function poll() {
  try {
    const [health, cat, stats, nodes, http] = await Promise.all([
      getJson("/_cluster/health"),
      getJson("/_cat/indices?format=json&bytes=b"),
      getJson("/_stats/segments,merge"),
      getJson("/_nodes/stats"),
      getJson("/_lode/api/http_stats"),
    ]);
    renderOverview(health, cat, stats, nodes);
    recordActivity(nodes, http);
    $("#poll-error").textContent = "";
  } catch (e) {
    $("#poll-error").textContent = "refresh failed: " + e.message;
  }
}

function schedule() {
  clearInterval(timer);
  const every = Number($("#interval").value);
  if (every > 0) timer = setInterval(poll, every);
}

// ---- request console --------------------------------------------------------------------

function loadHistory() {
  try { return JSON.parse(localStorage.getItem(HISTORY_KEY)) || []; } catch (_) { return []; }
}

function saveHistory(entry) {
  const list = loadHistory().filter((h) => !(h.method === entry.method && h.path === entry.path && h.body === entry.body));
  list.unshift(entry);
  localStorage.setItem(HISTORY_KEY, JSON.stringify(list.slice(0, HISTORY_MAX)));
  renderHistory();
}

function renderHistory() {
  $("#history").replaceChildren(...loadHistory().map((h) => {
    const li = el("li", { title: "click to load, double-click to run again" }, h.method + " " + h.path + (h.body ? " {…}" : ""));
    li.addEventListener("click", () => fill(h));
    li.addEventListener("dblclick", () => { fill(h); send(); });
    return li;
  }));
}

function fill(h) {
  $("#method").value = h.method;
  $("#path").value = h.path;
  $("#body").value = h.body || "";
}

async function send() {
  const method = $("#method").value;
  let path = $("#path").value.trim();
  if (!path.startsWith("/")) path = "/" + path;
  const body = $("#body").value.trim();
  const status = $("#response-status"), out = $("#response-body");
  if (body) {
    try { JSON.parse(body); } catch (_) {
      // NDJSON (_bulk, _msearch) is sent as is; anything else is refused here.
      if (!body.split("\n").every((l) => !l.trim() || isJson(l))) {
        status.className = "fail";
        status.textContent = "the body is not valid JSON";
        return;
      }
    }
  }
  const init = { method, headers: {} };
  let url = path;
  if (body && (method === "GET" || method === "HEAD")) {
    // Browsers cannot send a body with GET: Elasticsearch's `source` parameter carries it.
    url += (url.includes("?") ? "&" : "?") + "source=" + encodeURIComponent(body) + "&source_content_type=application%2Fjson";
  } else if (body) {
    init.body = body + (path.includes("_bulk") || path.includes("_msearch") ? "\n" : "");
    init.headers["content-type"] = path.includes("_bulk") || path.includes("_msearch") ? "application/x-ndjson" : "application/json";
  }
  status.className = "";
  status.textContent = "…";
  out.textContent = "";
  const started = performance.now();
  try {
    const r = await fetch(url, init);
    const text = await r.text();
    const took = Math.round(performance.now() - started);
    status.className = r.ok ? "ok" : "fail";
    status.textContent = r.status + " " + r.statusText + " · " + took + " ms";
    let shown = text;
    try { shown = JSON.stringify(JSON.parse(text), null, 2); } catch (_) { /* text as is */ }
    out.textContent = shown;
    saveHistory({ method, path, body, status: r.status, at: Date.now() });
  } catch (e) {
    status.className = "fail";
    status.textContent = "request failed: " + e.message;
  }
}

function isJson(s) {
  try { JSON.parse(s); return true; } catch (_) { return false; }
}

// ---- start ------------------------------------------------------------------------------

$("#request-form").addEventListener("submit", (e) => { e.preventDefault(); send(); });
$("#body").addEventListener("keydown", (e) => {
  if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) { e.preventDefault(); send(); }
});
$("#clear-history").addEventListener("click", () => { localStorage.removeItem(HISTORY_KEY); renderHistory(); });
$("#interval").addEventListener("change", schedule);
renderHistory();
poll();
schedule();
