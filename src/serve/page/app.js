// The operator page of `evident serve`: one subject's evidence as a timeline per consumer, the
// open gaps, the quarantine (replay, discard), effects waiting for a person, and live counters
// from /metrics. Plain JavaScript, no build step, nothing from outside this daemon (its
// Content-Security-Policy allows only 'self'). Text from the store is only ever set through
// textContent and attributes, never parsed as HTML.
"use strict";

(() => {
  const TOKEN_KEY = "evident.adminToken";
  const BY_KEY = "evident.by";
  const METRICS_EVERY_MS = 2000;
  const AUTO_REFRESH_MS = 10000;
  const OUTCOMES = [
    "applied", "deferred", "duplicate", "stale", "same-version-conflict",
    "contract-update-required", "payload-invalid", "rejected", "unrouted",
  ];

  const state = {
    token: "",
    evidenceSeq: 0,
    subject: "",
    gapsFetchedAt: 0,
    lastTotals: null,       // decisions and quarantine counts of the previous scrape
    actionOpen: null,       // the quarantine record whose replay/discard form is open
    refreshPending: false,  // an automatic refresh put off while that form is open
    autoRefreshDue: false,  // the counters changed since the admin views were last read
    lastAutoRefresh: 0,
  };

  // ---------------------------------------------------------------- helpers

  const $ = (id) => document.getElementById(id);

  // el("li", {class: "x", data: {kind: "applied"}, title: "..."}, "text", child, [more]):
  // strings become text nodes, never markup.
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    if (attrs) {
      for (const [name, value] of Object.entries(attrs)) {
        if (value === undefined || value === null || value === false) continue;
        if (name === "class") node.className = value;
        else if (name === "text") node.textContent = String(value);
        else if (name === "data") {
          for (const [k, v] of Object.entries(value)) {
            if (v !== undefined && v !== null) node.dataset[k] = String(v);
          }
        } else if (name === "hidden") node.hidden = Boolean(value);
        else node.setAttribute(name, value === true ? "" : String(value));
      }
    }
    append(node, children);
    return node;
  }

  function append(node, children) {
    for (const child of children) {
      if (child === undefined || child === null || child === false) continue;
      if (Array.isArray(child)) append(node, child);
      else if (child instanceof Node) node.appendChild(child);
      else node.appendChild(document.createTextNode(String(child)));
    }
  }

  function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild);
  }

  function storageGet(key) {
    try {
      return window.sessionStorage.getItem(key) || "";
    } catch (e) {
      return "";
    }
  }

  function storageSet(key, value) {
    try {
      if (value) window.sessionStorage.setItem(key, value);
      else window.sessionStorage.removeItem(key);
    } catch (e) {
      // Storage refused (a private window's quota): the value lives for this page only.
    }
  }

  // "2026-12-02T14:26:42.731Z" -> "2026-12-02 14:26:42.731Z"; the full text stays in the title.
  function fmtTime(iso) {
    if (typeof iso !== "string" || iso === "") return "—";
    return iso.replace("T", " ");
  }

  function fmtDuration(seconds) {
    const s = Math.abs(Math.round(seconds));
    if (s < 60) return s + "s";
    if (s < 3600) return Math.floor(s / 60) + "m " + (s % 60) + "s";
    if (s < 86400) return Math.floor(s / 3600) + "h " + Math.floor((s % 3600) / 60) + "m";
    return Math.floor(s / 86400) + "d " + Math.floor((s % 86400) / 3600) + "h";
  }

  function v(version) {
    return version === null || version === undefined ? "—" : "v" + version;
  }

  function timeEl(iso, cls) {
    return el("time", {class: cls || "t", datetime: iso || undefined, title: iso || undefined},
              fmtTime(iso));
  }

  // The original bytes of a record, as text (they are JSON, or were meant to be).
  function decodeBase64(b64) {
    try {
      const bin = window.atob(b64);
      const bytes = new Uint8Array(bin.length);
      for (let i = 0; i < bin.length; ++i) bytes[i] = bin.charCodeAt(i);
      return new TextDecoder("utf-8", {fatal: false}).decode(bytes);
    } catch (e) {
      return "(the bytes could not be decoded: " + e.message + ")";
    }
  }

  // ---------------------------------------------------------------- requests

  class ApiError extends Error {
    constructor(status, reason, message) {
      super(message);
      this.status = status;
      this.reason = reason;
    }
  }

  // Every answer that is not 2xx becomes an ApiError with the daemon's status, reason and
  // message ({"status":N,"reason":"code","message":"..."}); so does a request that got none.
  async function request(path, options) {
    const opts = options || {};
    const headers = {};
    if (opts.admin) {
      if (!state.token) {
        throw new ApiError(0, "no-token", "enter the admin token in the header first");
      }
      headers.Authorization = "Bearer " + state.token;
    }
    let body;
    if (opts.body !== undefined) {
      headers["Content-Type"] = "application/json";
      body = JSON.stringify(opts.body);
    }
    let response;
    let text;
    try {
      response = await fetch(path, {method: opts.method || "GET", headers, body, cache: "no-store"});
      text = await response.text();
    } catch (e) {
      throw new ApiError(0, "network-error", "the daemon did not answer (" + e.message + ")");
    }
    if (!response.ok) {
      let reason = response.statusText || "error";
      let message = text.slice(0, 1000);
      try {
        const refusal = JSON.parse(text);
        if (refusal && typeof refusal === "object") {
          if (refusal.reason) reason = String(refusal.reason);
          message = refusal.message ? String(refusal.message) : "";
        }
      } catch (e) {
        // Not JSON: the text itself is the message.
      }
      const error = new ApiError(response.status, reason, message);
      if (response.status === 401 && opts.admin) tokenRefused(error);
      throw error;
    }
    return text;
  }

  async function getJson(path, options) {
    const text = await request(path, options);
    try {
      return JSON.parse(text);
    } catch (e) {
      throw new ApiError(0, "bad-answer", path + " did not answer JSON: " + e.message);
    }
  }

  function errorText(error) {
    if (error instanceof ApiError) {
      const head = error.status ? error.status + " " + error.reason : error.reason;
      return error.message ? head + ": " + error.message : head;
    }
    return "error: " + (error && error.message ? error.message : String(error));
  }

  // A message line under a panel's head: kind "error", "info" or "need-token".
  function showMsg(id, kind, text, error) {
    const box = $(id);
    clear(box);
    box.className = "msg " + kind;
    box.dataset.kind = kind;
    if (error instanceof ApiError) {
      box.dataset.status = String(error.status);
      box.dataset.reason = error.reason;
    } else {
      delete box.dataset.status;
      delete box.dataset.reason;
    }
    box.setAttribute("role", kind === "error" ? "alert" : "status");
    box.textContent = text;
    box.hidden = false;
  }

  function showError(id, what, error) {
    showMsg(id, "error", what + " failed — " + errorText(error), error);
  }

  function hideMsg(id) {
    const box = $(id);
    box.hidden = true;
    clear(box);
    delete box.dataset.kind;
  }

  function needToken(id, what) {
    showMsg(id, "need-token", "Enter the admin token in the header to see " + what + ".");
  }

  // ---------------------------------------------------------------- token

  function renderTokenState(kind, text) {
    const s = $("token-state");
    s.dataset.state = kind;
    s.textContent = text;
  }

  function setToken(token) {
    state.token = token;
    storageSet(TOKEN_KEY, token);
    if (token) renderTokenState("set", "token set (this tab)");
    else renderTokenState("none", "no token");
  }

  function tokenRefused(error) {
    state.token = "";
    storageSet(TOKEN_KEY, "");
    renderTokenState("refused", "token refused (" + error.status + " " + error.reason + "): enter it again");
  }

  function onTokenSubmit(event) {
    event.preventDefault();
    const input = $("token-input");
    const token = input.value.trim();
    if (!token) {
      renderTokenState("none", "type the token first");
      input.focus();
      return;
    }
    input.value = "";
    setToken(token);
    refreshAdmin(true);
  }

  function onTokenForget() {
    setToken("");
    $("token-input").value = "";
    refreshAdmin(true);
  }

  // ---------------------------------------------------------------- counters

  // Prometheus text format: name{label="value",...} number
  function parseMetrics(text) {
    const samples = [];
    for (const raw of text.split("\n")) {
      const line = raw.trim();
      if (line === "" || line[0] === "#") continue;
      const m = /^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+-?\d+)?$/.exec(line);
      if (!m) continue;
      const labels = {};
      if (m[2]) {
        const re = /([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?\s*/g;
        let l;
        while ((l = re.exec(m[2])) !== null) {
          labels[l[1]] = l[2].replace(/\\(.)/g, (_, c) => (c === "n" ? "\n" : c));
        }
      }
      const value = Number(m[3]);
      if (!Number.isNaN(value)) samples.push({name: m[1], labels, value});
    }
    return samples;
  }

  function sumBy(samples, name, label) {
    const out = new Map();
    for (const s of samples) {
      if (s.name !== name) continue;
      const key = s.labels[label] === undefined ? "" : s.labels[label];
      out.set(key, (out.get(key) || 0) + s.value);
    }
    return out;
  }

  function one(samples, name, labels) {
    for (const s of samples) {
      if (s.name !== name) continue;
      let match = true;
      for (const [k, val] of Object.entries(labels || {})) {
        if (s.labels[k] !== val) match = false;
      }
      if (match) return s.value;
    }
    return null;
  }

  // One counter cell; a changed value flashes.
  function setCounter(list, key, attr, label, value, extraClass) {
    let item = null;
    for (const li of list.children) {
      if (li.dataset[attr] === key) item = li;
    }
    const text = value === null ? "—" : String(value);
    if (!item) {
      item = el("li", {class: "counter", data: {[attr]: key}},
                el("span", {class: "value"}, text), el("span", {class: "name"}, label));
      list.appendChild(item);
    } else {
      const valueEl = item.querySelector(".value");
      if (valueEl.textContent !== text) {
        valueEl.textContent = text;
        item.classList.remove("bumped");
        void item.offsetWidth;  // restart the animation
        item.classList.add("bumped");
      }
    }
    item.dataset.value = text;
    item.className = "counter" + (extraClass ? " " + extraClass : "") +
                     (item.classList.contains("bumped") ? " bumped" : "") +
                     (value === 0 ? " zero" : "");
  }

  function renderCounters(samples) {
    const outcomes = sumBy(samples, "evident_decisions_total", "outcome");
    const list = $("counters-outcomes");
    const names = OUTCOMES.slice();
    for (const name of [...outcomes.keys()].sort()) {
      if (!names.includes(name)) names.push(name);
    }
    let total = 0;
    for (const name of names) {
      const value = outcomes.get(name) || 0;
      total += value;
      setCounter(list, name, "outcome", name, value, "o-" + name);
    }
    setCounter(list, "total", "outcome", "total", total, "o-total");

    const http = sumBy(samples, "evident_http_requests_total", "status");
    const httpList = $("counters-http");
    let httpTotal = 0;
    for (const status of [...http.keys()].sort()) {
      httpTotal += http.get(status);
      setCounter(httpList, status, "status", "HTTP " + status, http.get(status), "s" + status.charAt(0) + "xx");
    }
    setCounter(httpList, "total", "status", "total", httpTotal, "s-total");

    const storeList = $("counters-store");
    const rows = [
      ["store-up", "store up", one(samples, "evident_store_up")],
      ["queue", "queued events", one(samples, "evident_queue_events")],
      ["waiting", "requests waiting", one(samples, "evident_requests_waiting")],
      ["gaps-open", "open gaps", one(samples, "evident_open_gaps")],
      ["gaps-overdue", "overdue gaps", one(samples, "evident_overdue_gaps")],
      ["q-open", "quarantine open", one(samples, "evident_quarantine_records", {status: "open"})],
      ["q-replayed", "quarantine replayed", one(samples, "evident_quarantine_records", {status: "replayed"})],
      ["q-discarded", "quarantine discarded", one(samples, "evident_quarantine_records", {status: "discarded"})],
      ["e-intended", "effects intended", one(samples, "evident_effects", {state: "intended"})],
      ["e-unknown", "effects unknown", one(samples, "evident_effects", {state: "unknown"})],
      ["e-failed", "effects failed", one(samples, "evident_effects", {state: "failed"})],
      ["e-done", "effects done", one(samples, "evident_effects", {state: "done"})],
      ["e-withdrawn", "effects withdrawn", one(samples, "evident_effects", {state: "withdrawn"})],
      ["outbox", "outbox pending", one(samples, "evident_outbox_pending")],
      ["outbox-parked", "outbox parked", one(samples, "evident_outbox_parked")],
      ["restarts", "loop restarts", one(samples, "evident_loop_restarts_total")],
    ];
    for (const [key, label, value] of rows) {
      let cls = "";
      if (key === "store-up") cls = value === 1 ? "good" : "bad";
      else if ((key === "q-open" || key === "gaps-overdue" || key === "e-unknown" || key === "e-failed" || key === "restarts" || key === "outbox-parked") && value > 0) cls = "warn";
      setCounter(storeList, key, "gauge", label, value, cls);
    }
    return {
      decisions: total,
      quarantine: [one(samples, "evident_quarantine_records", {status: "open"}),
                   one(samples, "evident_quarantine_records", {status: "replayed"}),
                   one(samples, "evident_quarantine_records", {status: "discarded"})].join("/"),
      effects: ["intended", "done", "failed", "unknown", "withdrawn"]
        .map((s) => one(samples, "evident_effects", {state: s})).join("/"),
      gaps: one(samples, "evident_open_gaps"),
    };
  }

  function setDaemonState(kind, text) {
    const d = $("daemon-state");
    d.dataset.state = kind;
    d.textContent = text;
  }

  async function pollMetrics() {
    try {
      const text = await request("/metrics");
      const samples = parseMetrics(text);
      const totals = renderCounters(samples);
      hideMsg("counters-error");
      const storeUp = one(samples, "evident_store_up");
      setDaemonState(storeUp === 1 ? "up" : "degraded",
                     storeUp === 1 ? "daemon: up · store answers" : "daemon: up · store does not answer");
      $("counters-updated").textContent = "updated " + new Date().toISOString().slice(11, 19) + "Z";
      const previous = state.lastTotals;
      state.lastTotals = totals;
      if (previous && (previous.decisions !== totals.decisions || previous.quarantine !== totals.quarantine ||
                       previous.effects !== totals.effects || previous.gaps !== totals.gaps)) {
        state.autoRefreshDue = true;
      }
      // Something changed: read the admin views again, at most every AUTO_REFRESH_MS.
      if (state.autoRefreshDue && Date.now() - state.lastAutoRefresh >= AUTO_REFRESH_MS) {
        state.autoRefreshDue = false;
        state.lastAutoRefresh = Date.now();
        refreshAdmin(false);
      }
    } catch (error) {
      setDaemonState("down", "daemon: " + errorText(error));
      showError("counters-error", "reading /metrics", error);
    } finally {
      window.setTimeout(pollMetrics, METRICS_EVERY_MS);
    }
  }

  // ---------------------------------------------------------------- the last hour
  // Line charts drawn as SVG by this script (no chart library: nothing may come from outside
  // the daemon). Colours come from app.css classes: the CSP allows no inline style.

  const SVG_NS = "http://www.w3.org/2000/svg";
  const CHART = {w: 360, h: 130, left: 44, right: 10, top: 10, bottom: 20};
  const CHART_SPAN_MIN_MS = 60000;  // a young daemon's points are spread over a minute at least

  function svg(tag, attrs, ...children) {
    const node = document.createElementNS(SVG_NS, tag);
    for (const [k, value] of Object.entries(attrs || {})) node.setAttribute(k, String(value));
    for (const child of children) node.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
    return node;
  }

  // Decisions per second in each point's interval, one series per outcome seen.
  function decisionSeries(points) {
    const names = OUTCOMES.filter((o) => points.some((p) => p.decisions[o]));
    for (const p of points) {
      for (const o of Object.keys(p.decisions)) if (!names.includes(o)) names.push(o);
    }
    return names.map((o) => ({
      name: o, cls: "o-" + o, unit: "/s",
      values: points.map((p) => (p.interval_ms > 0 ? (p.decisions[o] || 0) * 1000 / p.interval_ms : null)),
    }));
  }

  // A store figure: no value where the store could not be read.
  function gauge(points, name, cls, field) {
    return {name, cls, unit: "", values: points.map((p) => (p.store_up ? p[field] : null))};
  }

  const CHARTS = [
    {id: "decisions", title: "Decisions per second, by outcome", series: decisionSeries},
    {id: "lag", title: "Consumer lag: events received, not yet decided",
     series: (pts) => [{name: "backlog", cls: "c-lag", unit: "", values: pts.map((p) => p.intake_backlog)}]},
    {id: "attention", title: "Open gaps and open quarantine", series: (pts) => [
      gauge(pts, "open gaps", "c-gaps", "open_gaps"),
      gauge(pts, "overdue gaps", "c-overdue", "overdue_gaps"),
      gauge(pts, "quarantine open", "c-quarantine", "quarantine_open")]},
    {id: "outbox", title: "Outbox pending", series: (pts) => [gauge(pts, "pending", "c-outbox", "outbox_pending")]},
    {id: "outbox-age", title: "Oldest pending outbox row", series: (pts) => [{
      name: "age", cls: "c-age", unit: " s",
      values: pts.map((p) => (p.store_up ? p.outbox_oldest_age_ms / 1000 : null))}]},
  ];

  function niceMax(value) {
    if (!(value > 0)) return 1;
    const step = Math.pow(10, Math.floor(Math.log10(value)));
    for (const m of [1, 2, 5, 10]) if (m * step >= value) return m * step;
    return 10 * step;
  }

  function fmtNumber(value) {
    if (value === null || value === undefined) return "—";
    if (Math.abs(value) >= 100 || Number.isInteger(value)) return String(Math.round(value));
    return value.toFixed(value >= 10 ? 1 : 2);
  }

  function ensureChart(def) {
    let figure = document.querySelector('figure[data-chart="' + def.id + '"]');
    if (figure) return figure;
    figure = el("figure", {class: "chart", data: {chart: def.id}}, el("figcaption", {}, def.title));
    figure.appendChild(svg("svg", {viewBox: `0 0 ${CHART.w} ${CHART.h}`, role: "img", "aria-label": def.title}));
    figure.appendChild(el("ul", {class: "legend"}));
    $("charts").appendChild(figure);
    return figure;
  }

  function drawChart(def, points, span) {
    const figure = ensureChart(def);
    const series = def.series(points);
    const plotW = CHART.w - CHART.left - CHART.right;
    const plotH = CHART.h - CHART.top - CHART.bottom;
    let max = 0;
    let sum = 0;
    for (const s of series) {
      for (const value of s.values) {
        if (value === null) continue;
        max = Math.max(max, value);
        sum += value;
      }
    }
    const top = niceMax(max);
    const x = (at) => CHART.left + ((at - span.from) / (span.to - span.from)) * plotW;
    const y = (value) => CHART.top + plotH - (value / top) * plotH;
    const chart = figure.querySelector("svg");
    clear(chart);
    chart.appendChild(svg("line", {class: "axis", x1: CHART.left, y1: CHART.top + plotH, x2: CHART.left + plotW, y2: CHART.top + plotH}));
    chart.appendChild(svg("line", {class: "grid", x1: CHART.left, y1: CHART.top, x2: CHART.left + plotW, y2: CHART.top}));
    chart.appendChild(svg("text", {class: "tick", x: CHART.left - 4, y: CHART.top + 4, "text-anchor": "end"}, fmtNumber(top)));
    chart.appendChild(svg("text", {class: "tick", x: CHART.left - 4, y: CHART.top + plotH + 4, "text-anchor": "end"}, "0"));
    const minutes = Math.round((span.to - span.from) / 60000);
    chart.appendChild(svg("text", {class: "tick", x: CHART.left, y: CHART.h - 4}, "−" + minutes + " min"));
    chart.appendChild(svg("text", {class: "tick", x: CHART.left + plotW, y: CHART.h - 4, "text-anchor": "end"}, "now"));
    const legend = figure.querySelector(".legend");
    clear(legend);
    for (const s of series) {
      const coords = [];
      s.values.forEach((value, i) => {
        if (value !== null) coords.push(x(points[i].at_ms).toFixed(1) + "," + y(value).toFixed(1));
      });
      chart.appendChild(svg("polyline", {class: "series " + s.cls, points: coords.join(" ")}));
      const last = [...s.values].reverse().find((value) => value !== null);
      legend.appendChild(el("li", {class: s.cls, data: {series: s.name}},
                            el("span", {class: "swatch"}), s.name + " ",
                            el("b", {}, fmtNumber(last === undefined ? null : last) + s.unit)));
    }
    if (series.length === 0) legend.appendChild(el("li", {class: "none"}, "nothing decided in this hour"));
    figure.dataset.points = String(points.length);
    figure.dataset.max = String(max);
    figure.dataset.sum = String(sum);
  }

  async function pollHistory() {
    try {
      const history = await getJson("/metrics/history");
      const points = history.points || [];
      const to = points.length ? points[points.length - 1].at_ms : Date.now();
      const from = Math.min(points.length ? points[0].at_ms : to, to - CHART_SPAN_MIN_MS);
      for (const def of CHARTS) drawChart(def, points, {from, to});
      hideMsg("history-error");
      $("history-updated").textContent = points.length + " points, updated " + new Date().toISOString().slice(11, 19) + "Z";
    } catch (error) {
      showError("history-error", "reading /metrics/history", error);
    } finally {
      window.setTimeout(pollHistory, METRICS_EVERY_MS);
    }
  }

  // ---------------------------------------------------------------- evidence

  function subjectFromHash() {
    const hash = window.location.hash.replace(/^#/, "");
    for (const part of hash.split("&")) {
      const eq = part.indexOf("=");
      if (eq > 0 && part.slice(0, eq) === "subject") {
        try {
          return decodeURIComponent(part.slice(eq + 1));
        } catch (e) {
          return part.slice(eq + 1);
        }
      }
    }
    return "";
  }

  function subjectLink(subject) {
    if (subject === null || subject === undefined || subject === "") return el("span", {class: "none"}, "—");
    return el("a", {href: "#subject=" + encodeURIComponent(subject), class: "subject-link"}, subject);
  }

  function onSubjectSubmit(event) {
    event.preventDefault();
    const subject = $("subject-input").value.trim();
    if (!subject) {
      showMsg("evidence-msg", "info", "Type a subject (for example order-417).");
      return;
    }
    const hash = "#subject=" + encodeURIComponent(subject);
    if (window.location.hash === hash) loadEvidence(subject);
    else window.location.hash = hash;  // hashchange loads it
  }

  function onHashChange() {
    const subject = subjectFromHash();
    if (!subject) return;
    const panel = $("evidence-panel");
    if (panel.getBoundingClientRect().top < 0) panel.scrollIntoView({block: "start"});
    loadEvidence(subject);
  }

  async function loadEvidence(subject) {
    state.subject = subject;
    $("subject-input").value = subject;
    const seq = ++state.evidenceSeq;
    const box = $("evidence");
    if (!state.token) {
      clear(box);
      needToken("evidence-msg", "the evidence of " + subject);
      return;
    }
    showMsg("evidence-msg", "info", "Reading the evidence of " + subject + "…");
    try {
      const packet = await getJson("/api/evidence/" + encodeURIComponent(subject), {admin: true});
      if (seq !== state.evidenceSeq) return;
      hideMsg("evidence-msg");
      clear(box);
      box.appendChild(renderPacket(packet));
    } catch (error) {
      if (seq !== state.evidenceSeq) return;
      clear(box);
      showError("evidence-msg", "reading the evidence of " + subject, error);
    }
  }

  const KIND_LABEL = {
    applied: "applied",
    deferred: "deferred",
    duplicate: "duplicate",
    conflict: "conflict",
    quarantined: "quarantined",
    effect: "effect",
    compensation: "compensation",
    gap: "gap",
    evidence: "evidence",
  };
  const KIND_ORDER = ["applied", "evidence", "effect", "compensation", "deferred", "duplicate",
                      "conflict", "quarantined", "gap"];

  function entry(kind, at, version, title, lines, extra) {
    return {kind, at: at || "", version, title, lines: lines || [], extra: extra || {}};
  }

  function line(label, ...value) {
    return el("div", {class: "line"}, label ? el("span", {class: "k"}, label + " ") : null, ...value);
  }

  function badge(text, cls, data) {
    return el("span", {class: "badge " + (cls || ""), data}, text);
  }

  function auditList(audit) {
    if (!Array.isArray(audit) || audit.length === 0) return null;
    return el("ul", {class: "audit"}, audit.map((a) =>
      el("li", {data: {action: a.action, by: a.by}},
         timeEl(a.at), " ", el("b", null, a.action), " by ", el("b", null, a.by),
         a.outcome ? [" → ", a.outcome, a.reason ? " (" + a.reason + ")" : ""] : "",
         a.status_after ? [" · status ", a.status_after] : "",
         a.note ? [" · “", a.note, "”"] : "")));
  }

  function bytesDetails(text, label) {
    if (text === null || text === undefined) return null;
    return el("details", {class: "bytes"}, el("summary", null, label || "original bytes"),
              el("pre", null, text));
  }

  function fieldsText(fields) {
    if (!fields || typeof fields !== "object") return "";
    return Object.entries(fields)
      .map(([k, val]) => k + "=" + (typeof val === "string" ? val : JSON.stringify(val)))
      .join(" · ");
  }

  function recordEntry(kind, r) {
    return entry(kind, r.first_seen || r.received_at, r.subject_version,
      kind === "conflict" ? "same-version conflict" : (r.outcome || "kept"),
      [
        line("", badge(r.reason || r.outcome || "—", "reason"), " ", el("span", {class: "message"}, r.message || "")),
        line("event", r.source || "—", " · ", el("code", null, r.id || "—"), r.type ? " · " + r.type : "",
             r.schema_version !== null && r.schema_version !== undefined ? " · schema v" + r.schema_version : ""),
        line("record", "#" + r.quarantine_id, " · ", badge(r.status, "status-" + r.status, {status: r.status}),
             " · attempts " + r.attempts, " · last seen ", timeEl(r.last_seen)),
        auditList(r.audit),
        bytesDetails(r.original_bytes),
      ],
      {eventId: r.id, quarantineId: r.quarantine_id, status: r.status});
  }

  function consumerEntries(c) {
    const entries = [];
    const versionOf = new Map();  // "source id" -> subject version
    const evidenceBy = new Map(); // "source id" -> [names]
    for (const ev of c.evidence || []) {
      const k = ev.source + " " + ev.id;
      if (!evidenceBy.has(k)) evidenceBy.set(k, []);
      evidenceBy.get(k).push(ev);
    }
    const matchedEvidence = new Set();
    for (const a of c.applied || []) {
      const k = a.source + " " + a.id;
      versionOf.set(k, a.subject_version);
      const names = evidenceBy.get(k) || [];
      for (const ev of names) matchedEvidence.add(ev);
      const wrote = a.wrote || {};
      entries.push(entry("applied", a.committed_at, a.subject_version, a.type, [
        line("event", a.source, " · ", el("code", null, a.id)),
        line("wrote", "projection v" + a.projection_version,
             wrote.state ? [" · state ", el("b", null, wrote.state)] : "",
             wrote.fields && Object.keys(wrote.fields).length ? " · " + fieldsText(wrote.fields) : "",
             Array.isArray(wrote.defaulted) && wrote.defaulted.length ? " · defaulted: " + wrote.defaulted.join(", ") : ""),
        line("read", "schema v" + (a.input_schema_version === null || a.input_schema_version === undefined ? "—" : a.input_schema_version),
             a.adapter ? [" through adapter ", el("code", null, a.adapter)] : "",
             a.duplicates ? [" · ", badge("delivered again ×" + a.duplicates, "dup")] : ""),
        names.length ? line("evidence", names.map((ev) => badge(ev.name, "evidence-name", {evidence: ev.name}))) : null,
        a.traceparent ? line("trace", el("code", null, a.traceparent)) : null,
      ], {eventId: a.id}));
    }
    for (const d of c.deferred || []) {
      versionOf.set(d.source + " " + d.id, d.subject_version);
      entries.push(entry("deferred", d.received_at, d.subject_version, d.type, [
        line("event", d.source, " · ", el("code", null, d.id)),
        line("waits for", el("b", null, v(d.expected_version)), " · age " + fmtDuration(d.age_seconds || 0),
             " · route " + d.route),
        line("deadline", timeEl(d.deadline_at), " ",
             d.overdue ? badge("overdue", "overdue", {overdue: "true"}) : badge("not yet due", "due")),
      ], {eventId: d.id, overdue: d.overdue ? "true" : "false"}));
    }
    const dups = c.duplicates && Array.isArray(c.duplicates.deliveries) ? c.duplicates.deliveries : [];
    for (const d of dups) {
      const version = versionOf.has(d.source + " " + d.id) ? versionOf.get(d.source + " " + d.id) : null;
      entries.push(entry("duplicate", d.at, version, "delivered again, decided nothing", [
        line("event", d.source, " · ", el("code", null, d.id)),
      ], {eventId: d.id}));
    }
    const conflictIds = new Set();
    for (const r of c.conflicts || []) {
      conflictIds.add(r.quarantine_id);
      entries.push(recordEntry("conflict", r));
    }
    for (const r of c.kept || []) {
      if (!conflictIds.has(r.quarantine_id)) entries.push(recordEntry("quarantined", r));
    }
    for (const e of c.effects || []) {
      const log = Array.isArray(e.log) && e.log.length
        ? el("details", {class: "log"}, el("summary", null, "log (" + e.log.length + ")"),
             el("ul", null, e.log.map((l) => el("li", null, timeEl(l.at), " ", l.action, " by ", l.by,
                                                 " → ", l.state_after,
                                                 l.http_status ? " · HTTP " + l.http_status : "",
                                                 l.detail ? " · " + l.detail : ""))))
        : null;
      entries.push(entry("effect", e.intended_at, e.subject_version, "effect " + e.effect, [
        line("key", el("code", null, e.key), " ", badge(e.state, "state-" + e.state, {state: e.state})),
        line("attempts", String(e.attempts),
             e.http_status ? " · HTTP " + e.http_status : "",
             e.last_attempt_at ? [" · last attempt ", timeEl(e.last_attempt_at)] : "",
             e.settled_at ? [" · settled ", timeEl(e.settled_at)] : "",
             e.waits_for_reconciliation ? [" · ", badge("waits for a person", "warn")] : ""),
        e.last_error ? line("last error", el("span", {class: "message"}, e.last_error)) : null,
        line("event", e.source, " · ", el("code", null, e.id)),
        log,
      ], {state: e.state, key: e.key}));
    }
    for (const k of c.compensations || []) {
      entries.push(entry("compensation", k.recorded_at, k.owner_version, "compensation recorded", [
        line("key", el("code", null, k.key)),
        line("decided by", k.owner_source, " · ", el("code", null, k.id), " · ", k.type,
             " · owner " + v(k.owner_version)),
      ], {key: k.key}));
    }
    for (const g of c.gaps || []) {
      entries.push(entry("gap", g.acted_at, g.missing_from,
        "gap " + v(g.missing_from) + (g.missing_to !== g.missing_from ? "–" + v(g.missing_to) : "") + " past its deadline",
        [
          line("route", g.route, " · ", badge(g.state, "gap-" + g.state, {state: g.state}),
               " · deadline ", timeEl(g.deadline_at), " · acted ", timeEl(g.acted_at)),
          g.request_event_id ? line("replay request", el("code", null, g.request_event_id)) : null,
          g.closed_at ? line("closed", timeEl(g.closed_at), g.closed_by ? " by " + g.closed_by : "",
                             g.note ? " · “" + g.note + "”" : "") : null,
        ], {state: g.state}));
    }
    for (const ev of c.evidence || []) {
      if (matchedEvidence.has(ev)) continue;
      entries.push(entry("evidence", ev.recorded_at, ev.subject_version, "evidence " + ev.name, [
        line("event", ev.source || "—", " · ", el("code", null, ev.id || "—")),
        ev.detail ? line("detail", typeof ev.detail === "string" ? ev.detail : JSON.stringify(ev.detail)) : null,
      ], {evidence: ev.name}));
    }
    entries.sort((a, b) => {
      if (a.at !== b.at) {
        if (!a.at) return 1;
        if (!b.at) return -1;
        return a.at < b.at ? -1 : 1;
      }
      const av = a.version === null || a.version === undefined ? Infinity : a.version;
      const bv = b.version === null || b.version === undefined ? Infinity : b.version;
      if (av !== bv) return av - bv;
      return KIND_ORDER.indexOf(a.kind) - KIND_ORDER.indexOf(b.kind);
    });
    return entries;
  }

  function renderTimeline(entries) {
    if (entries.length === 0) return el("p", {class: "empty"}, "Nothing recorded for this consumer.");
    return el("ol", {class: "timeline"}, entries.map((e) =>
      el("li", {class: "entry k-" + e.kind,
                data: Object.assign({kind: e.kind, version: e.version === null || e.version === undefined ? "" : e.version}, e.extra)},
         el("div", {class: "when"}, timeEl(e.at)),
         el("div", {class: "ver"}, v(e.version)),
         el("div", {class: "kind"}, badge(KIND_LABEL[e.kind] || e.kind, "kind k-" + e.kind)),
         el("div", {class: "what"}, el("div", {class: "title"}, e.title), e.lines))));
  }

  function countsLine(c) {
    const n = (list) => (Array.isArray(list) ? list.length : 0);
    const parts = [
      [n(c.applied), "applied", "applied"], [n(c.deferred), "deferred", "deferred"],
      [c.duplicates ? c.duplicates.count || 0 : 0, "duplicate", "duplicates"],
      [n(c.conflicts), "conflict", "conflicts"], [n(c.kept), "quarantined", "quarantined"],
      [n(c.effects), "effect", "effects"], [n(c.compensations), "compensation", "compensations"],
      [n(c.gaps), "gap record", "gap records"],
    ];
    return parts.map(([count, one, many]) => count + " " + (count === 1 ? one : many)).join(" · ");
  }

  function renderConsumer(c) {
    const owner = c.owner_version_seen;
    const projection = c.projection_version;
    const sync = c.in_sync ? "in sync" : "behind";
    const readiness = c.readiness || {};
    return el("article", {class: "consumer" + (c.in_sync ? " in-sync" : " not-in-sync"),
                          data: {consumer: c.consumer}},
      el("header", null,
         el("h3", null, c.consumer, " ", el("span", {class: "owner"}, "owner " + (c.owner_source || "—"))),
         el("div", {class: "versions", data: {role: "versions", ownerVersion: owner, projectionVersion: projection,
                                                inSync: c.in_sync ? "true" : "false"}},
            "owner " + v(owner) + " · projection " + v(projection) + " · ", el("b", {class: "sync"}, sync))),
      readiness.gap_reason ? el("div", {class: "gap-reason", data: {role: "gap-reason"}}, readiness.gap_reason) : null,
      el("div", {class: "stateline"}, el("span", {class: "k"}, "state "), el("b", null, c.state || "—"),
         c.fields && Object.keys(c.fields).length ? " · " + fieldsText(c.fields) : ""),
      el("div", {class: "counts"}, countsLine(c)),
      renderTimeline(consumerEntries(c)));
  }

  function renderPacket(packet) {
    const consumers = Array.isArray(packet.consumers) ? packet.consumers : [];
    const kept = Array.isArray(packet.kept) ? packet.kept : [];
    const wrap = el("div", {class: "packet", data: {subject: packet.subject}});
    wrap.appendChild(el("p", {class: "packet-head"}, "Subject ", el("b", null, packet.subject), " · ",
                        consumers.length + (consumers.length === 1 ? " consumer" : " consumers"),
                        kept.length ? " · " + kept.length + " refused before any consumer was chosen" : ""));
    for (const c of consumers) wrap.appendChild(renderConsumer(c));
    if (kept.length) {
      const entries = kept.map((r) => recordEntry("quarantined", r));
      entries.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0));
      wrap.appendChild(el("article", {class: "consumer", data: {consumer: ""}},
        el("header", null, el("h3", null, "no consumer ", el("span", {class: "owner"}, "refused by the envelope or routing"))),
        renderTimeline(entries)));
    }
    return wrap;
  }

  // ---------------------------------------------------------------- gaps

  function table(headers, rows, cls) {
    return el("div", {class: "table-wrap"}, el("table", {class: "grid " + (cls || "")},
      el("thead", null, el("tr", null, headers.map((h) => el("th", {scope: "col"}, h)))),
      el("tbody", null, rows)));
  }

  function deadlineCell(iso, secondsLeft) {
    const cell = el("td", {class: "deadline", data: {secondsLeft: secondsLeft}});
    fillDeadline(cell);
    return cell;
  }

  // The time left, counted down from the daemon's answer (its clock, not this browser's).
  function fillDeadline(cell) {
    const secondsLeft = Number(cell.dataset.secondsLeft);
    const row = cell.closest("tr");
    const iso = row ? row.dataset.deadlineAt : "";
    const left = secondsLeft - (Date.now() - state.gapsFetchedAt) / 1000;
    clear(cell);
    const overdue = row && (row.dataset.serverOverdue === "true" || left <= 0);
    cell.appendChild(timeEl(iso));
    cell.appendChild(el("span", {class: "left"},
      overdue ? " · overdue by " + fmtDuration(Math.max(0, -left)) : " · in " + fmtDuration(left)));
    if (row) {
      row.dataset.overdue = overdue ? "true" : "false";
      row.classList.toggle("overdue", Boolean(overdue));
    }
  }

  function tickDeadlines() {
    for (const cell of document.querySelectorAll("#gaps td.deadline")) fillDeadline(cell);
  }

  async function loadGaps() {
    const box = $("gaps");
    if (!state.token) {
      clear(box);
      $("gaps-count").textContent = "";
      needToken("gaps-msg", "the open gaps");
      return;
    }
    try {
      const answer = await getJson("/api/gaps", {admin: true});
      state.gapsFetchedAt = Date.now();
      hideMsg("gaps-msg");
      const gaps = Array.isArray(answer.gaps) ? answer.gaps : [];
      $("gaps-count").textContent = gaps.length + (gaps.length === 1 ? " gap" : " gaps") +
        (answer.truncated ? " (truncated: more exist)" : "");
      clear(box);
      if (gaps.length === 0) {
        box.appendChild(el("p", {class: "empty", data: {role: "no-gaps"}}, "No open gaps: every ordered projection has what it waits for."));
        return;
      }
      const rows = gaps.map((g) => {
        const rec = g.record;
        const tr = el("tr", {data: {gap: g.consumer + " " + g.subject, consumer: g.consumer, subject: g.subject,
                                    deadlineAt: g.deadline_at, serverOverdue: g.overdue ? "true" : "false"}},
          el("td", null, g.consumer),
          el("td", null, subjectLink(g.subject)),
          el("td", {class: "num"}, v(g.expected_version)),
          el("td", null, (g.waiting_versions || []).map(v).join(", ")),
          el("td", null, timeEl(g.oldest_received_at)),
          deadlineCell(g.deadline_at, g.seconds_left),
          el("td", null, g.route),
          el("td", null, rec
            ? [badge(rec.state, "gap-" + rec.state, {state: rec.state}), " acted ", timeEl(rec.acted_at),
               rec.request_event_id ? [" · ", el("code", null, rec.request_event_id)] : ""]
            : el("span", {class: "none"}, "not acted on yet")));
        return tr;
      });
      box.appendChild(table(["consumer", "subject", "missing", "waiting", "oldest received", "deadline", "route", "what the route did"], rows, "gaps"));
      tickDeadlines();
    } catch (error) {
      clear(box);
      $("gaps-count").textContent = "";
      showError("gaps-msg", "reading /api/gaps", error);
    }
  }

  // ---------------------------------------------------------------- quarantine

  async function loadQuarantine() {
    const box = $("quarantine");
    if (!state.token) {
      clear(box);
      $("quarantine-count").textContent = "";
      needToken("quarantine-msg", "the quarantine");
      return;
    }
    const status = $("quarantine-status").value;
    try {
      const answer = await getJson("/api/quarantine" + (status ? "?status=" + encodeURIComponent(status) : ""), {admin: true});
      if (state.actionOpen !== null) {
        // A replay/discard form was opened while this was read: keep it, read again when it closes.
        state.refreshPending = true;
        return;
      }
      hideMsg("quarantine-msg");
      const records = Array.isArray(answer.records) ? answer.records : [];
      $("quarantine-count").textContent = records.length + (records.length === 1 ? " record" : " records") +
        (answer.truncated ? " (truncated: more exist)" : "");
      clear(box);
      if (records.length === 0) {
        box.appendChild(el("p", {class: "empty", data: {role: "no-records"}},
                           status ? "No " + status + " records." : "No records."));
        return;
      }
      const rows = [];
      for (const r of records) {
        const actions = el("td", {class: "actions"});
        if (r.status === "open") {
          actions.appendChild(el("button", {type: "button", class: "small", data: {action: "replay", id: r.id}}, "Replay"));
          actions.appendChild(el("button", {type: "button", class: "small", data: {action: "discard", id: r.id}}, "Discard"));
        } else {
          actions.appendChild(badge(r.status, "status-" + r.status, {status: r.status}));
        }
        rows.push(el("tr", {class: "record", data: {quarantineId: r.id, status: r.status, reason: r.reason, eventId: r.event_id}},
          el("td", {class: "num"}, "#" + r.id),
          el("td", {class: "consumer"}, r.consumer === null ? el("span", {class: "none"}, "(none)") : r.consumer),
          el("td", null, el("div", null, badge(r.reason || "—", "reason")), el("div", {class: "outcome"}, r.outcome)),
          el("td", {class: "message"}, r.message || "",
             r.original_bytes_base64 ? bytesDetails(decodeBase64(r.original_bytes_base64)) : null),
          el("td", null, el("div", null, r.source || "—"), el("div", null, el("code", null, r.event_id || "—")),
             el("div", {class: "dim"}, (r.type || "") + (r.schema_version !== null && r.schema_version !== undefined ? " · schema v" + r.schema_version : ""))),
          el("td", null, subjectLink(r.subject), r.subject_version !== null && r.subject_version !== undefined ? " " + v(r.subject_version) : ""),
          el("td", {class: "num"}, String(r.attempts)),
          el("td", null, timeEl(r.first_seen), r.last_seen !== r.first_seen ? el("div", {class: "dim"}, "last ", timeEl(r.last_seen)) : null),
          actions));
      }
      box.appendChild(table(["id", "consumer", "reason", "message", "source / id", "subject", "attempts", "first seen", ""], rows, "quarantine"));
    } catch (error) {
      if (state.actionOpen === null) clear(box);  // an open form stays: its input is not lost
      $("quarantine-count").textContent = "";
      showError("quarantine-msg", "reading /api/quarantine", error);
    }
  }

  function closeActionForm() {
    for (const row of document.querySelectorAll("#quarantine tr.action-row")) row.remove();
    for (const row of document.querySelectorAll("#quarantine tr.acting")) row.classList.remove("acting");
    state.actionOpen = null;
    if (state.refreshPending) {
      state.refreshPending = false;
      refreshAdmin(false);
    }
  }

  // The inline form under a record: who, why, and the token when none is set yet.
  function openActionForm(button) {
    const action = button.dataset.action;
    const id = button.dataset.id;
    const row = button.closest("tr");
    closeActionForm();
    state.actionOpen = id;
    row.classList.add("acting");
    const by = el("input", {name: "by", type: "text", size: 16, required: true, value: storageGet(BY_KEY), placeholder: "your name", spellcheck: "false"});
    const note = el("input", {name: "note", type: "text", size: 48, required: true, placeholder: action === "replay" ? "why it can be replayed now" : "why it is discarded"});
    const token = state.token ? null : el("input", {name: "token", type: "password", size: 20, required: true, placeholder: "admin token"});
    const error = el("div", {class: "msg error form-error", hidden: true, role: "alert"});
    const submit = el("button", {type: "submit", class: action === "discard" ? "danger" : "primary", data: {confirm: action}},
                      action === "replay" ? "Replay #" + id : "Discard #" + id);
    const cancel = el("button", {type: "button", data: {cancel: action}}, "Cancel");
    const form = el("form", {class: "action-form", data: {actionForm: action, id}},
      el("span", {class: "what"}, action === "replay"
        ? "Replay record #" + id + " through today's pipeline:"
        : "Discard record #" + id + " without applying it:"),
      el("label", null, "by ", by),
      el("label", null, "note ", note),
      token ? el("label", null, "token ", token) : null,
      submit, cancel, error);
    cancel.addEventListener("click", closeActionForm);
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      submitAction(form, action, id, by, note, token, submit, error);
    });
    const formRow = el("tr", {class: "action-row"}, el("td", {colspan: row.children.length}, form));
    row.after(formRow);
    (by.value ? note : by).focus();
  }

  async function submitAction(form, action, id, by, note, token, submit, error) {
    error.hidden = true;
    const who = by.value.trim();
    const why = note.value.trim();
    if (!who || !why) {
      error.textContent = "Both “by” and “note” are needed: every replay and discard is audited.";
      error.hidden = false;
      return;
    }
    if (token) {
      const t = token.value.trim();
      if (!t) {
        error.textContent = "The admin token is needed.";
        error.hidden = false;
        return;
      }
      setToken(t);
    }
    storageSet(BY_KEY, who);
    submit.disabled = true;
    form.classList.add("busy");
    try {
      const answer = await getJson("/api/quarantine/" + encodeURIComponent(id) + "/" + action,
                                   {method: "POST", admin: true, body: {by: who, note: why}});
      showActionResult(action, id, who, answer);
      closeActionForm();
      await loadQuarantine();
      loadGaps();
      loadEffects();
      if (state.subject) loadEvidence(state.subject);
    } catch (e) {
      submit.disabled = false;
      form.classList.remove("busy");
      error.textContent = action + " of #" + id + " failed — " + errorText(e);
      if (e instanceof ApiError) {
        error.dataset.status = String(e.status);
        error.dataset.reason = e.reason;
      }
      error.hidden = false;
    }
  }

  function showActionResult(action, id, who, answer) {
    const box = $("quarantine-result");
    clear(box);
    let outcome = action === "discard" ? "discarded" : "";
    const details = [];
    if (action === "replay") {
      const decisions = Array.isArray(answer.decisions) ? answer.decisions : [];
      const first = decisions[0] || {};
      outcome = first.outcome || (answer.replayed ? "replayed" : answer.refused ? "refused" : "—");
      details.push(" · replayed " + answer.replayed + " · duplicates " + answer.duplicates + " · refused " + answer.refused);
      for (const d of decisions) {
        const inner = Array.isArray(d.decisions) ? d.decisions : [];
        details.push(el("div", {class: "line"}, "#" + d.quarantine_id + " " + (d.consumer || "(no consumer)") + ": ",
          el("b", null, d.outcome), d.reason ? " (" + d.reason + ")" : "", " · status " + d.status + " · attempts " + d.attempts,
          inner.map((x) => el("div", {class: "dim"}, "↳ " + (x.consumer || "(none)") + " " + x.outcome +
            (x.reason ? " (" + x.reason + ")" : "") + (x.message ? ": " + x.message : "") +
            (x.projection_version !== null && x.projection_version !== undefined ? " · projection v" + x.projection_version : "") +
            (x.adapter ? " · adapter " + x.adapter : "") +
            (Array.isArray(x.errors) && x.errors.length ? " · " + x.errors.join("; ") : "")))));
      }
    } else {
      details.push(" · " + answer.discarded + " record discarded");
    }
    const good = action === "discard" || answer.refused === 0;
    box.className = "result " + (good ? "ok" : "refused");
    box.dataset.action = action;
    box.dataset.id = String(id);
    box.dataset.outcome = outcome;
    box.setAttribute("role", "status");
    append(box, [el("b", null, (action === "replay" ? "Replayed" : "Discarded") + " #" + id), " by " + who + ": ",
                 el("b", {class: "outcome"}, outcome), details,
                 el("button", {type: "button", class: "small close"}, "Dismiss")]);
    box.querySelector("button.close").addEventListener("click", () => {
      box.hidden = true;
    });
    box.hidden = false;
  }

  function onQuarantineClick(event) {
    const button = event.target.closest("button[data-action]");
    if (!button || !$("quarantine").contains(button)) return;
    openActionForm(button);
  }

  // ---------------------------------------------------------------- effects

  async function loadEffects() {
    const box = $("effects");
    if (!state.token) {
      clear(box);
      $("effects-count").textContent = "";
      needToken("effects-msg", "the effects waiting for reconciliation");
      return;
    }
    try {
      const answer = await getJson("/api/effects?state=unknown", {admin: true});
      hideMsg("effects-msg");
      const effects = Array.isArray(answer.effects) ? answer.effects : [];
      $("effects-count").textContent = effects.length + (effects.length === 1 ? " effect" : " effects") +
        (answer.truncated ? " (truncated)" : "");
      clear(box);
      if (effects.length === 0) {
        box.appendChild(el("p", {class: "empty"}, "No effect has an unknown outcome."));
        return;
      }
      box.appendChild(table(["key", "effect", "consumer", "subject", "attempts", "last error", "last attempt", ""],
        effects.map((e) => el("tr", {data: {key: e.key, state: e.state}},
          el("td", null, el("code", null, e.key)),
          el("td", null, e.effect),
          el("td", null, e.consumer),
          el("td", null, subjectLink(e.subject), e.subject_version !== null && e.subject_version !== undefined ? " " + v(e.subject_version) : ""),
          el("td", {class: "num"}, String(e.attempts)),
          el("td", {class: "message"}, e.last_error || ""),
          el("td", null, timeEl(e.last_attempt_at)),
          el("td", null, e.waits_for_reconciliation ? badge("waits for a person", "warn") : badge("will retry", "due")))), "effects"));
    } catch (error) {
      clear(box);
      $("effects-count").textContent = "";
      showError("effects-msg", "reading /api/effects", error);
    }
  }

  // ---------------------------------------------------------------- wiring

  // Reads the admin views again; an automatic refresh waits while a replay/discard form is open.
  function refreshAdmin(explicit) {
    loadGaps();
    loadEffects();
    if (state.actionOpen && !explicit) {
      state.refreshPending = true;
    } else {
      loadQuarantine();
    }
    if (explicit) {
      if (state.subject) loadEvidence(state.subject);
      else if (!state.token) needToken("evidence-msg", "the evidence of a subject");
      else hideMsg("evidence-msg");
    }
  }

  function start() {
    setToken(storageGet(TOKEN_KEY));
    $("token-form").addEventListener("submit", onTokenSubmit);
    $("token-forget").addEventListener("click", onTokenForget);
    $("subject-form").addEventListener("submit", onSubjectSubmit);
    window.addEventListener("hashchange", onHashChange);
    $("gaps-refresh").addEventListener("click", () => loadGaps());
    $("quarantine-refresh").addEventListener("click", () => {
      closeActionForm();
      loadQuarantine();
    });
    $("quarantine-status").addEventListener("change", () => {
      closeActionForm();
      loadQuarantine();
    });
    $("effects-refresh").addEventListener("click", () => loadEffects());
    $("quarantine").addEventListener("click", onQuarantineClick);
    window.setInterval(tickDeadlines, 1000);
    state.subject = subjectFromHash();
    refreshAdmin(true);
    pollMetrics();
    pollHistory();
  }

  // Nothing may fail silently: an unexpected error is shown at the top of the page too.
  // (The console keeps it as well: it is a bug of this page, never normal use.)
  window.addEventListener("unhandledrejection", (event) => {
    showMsg("page-error", "error", "unexpected error in this page — " + errorText(event.reason));
  });
  window.addEventListener("error", (event) => {
    showMsg("page-error", "error", "unexpected error in this page — " + (event.message || "unknown"));
  });

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
