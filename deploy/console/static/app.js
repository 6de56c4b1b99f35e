// odradek console: vanilla JavaScript, no build step.
// The server pushes the whole snapshot over Server-Sent Events (/api/events) each time it
// changes; render() redraws the tables from it. The message browser asks /api/browse for one
// page at a time and keeps the page's two cursors (where it starts and where it ends).
// The Schemas tab asks /api/schemas when it is shown (and on Refresh), and a subject's
// versions when one is picked; values framed with a registry id come decoded from the server.
// Until the first snapshot comes, the tables say "loading…" (index.html) and <main> has the
// class "loading"; on a secured cluster each user's stream carries that user's own view.
"use strict";

const $ = (sel, root = document) => root.querySelector(sel);
let snap = null;
let me = { login: false, user: null, cluster_alter: true };  // /api/whoami
const browser = { start: null, end: null, last: null };

function esc(text) {
  return String(text ?? "").replace(/[&<>"']/g, (c) => ({
    "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;",
  }[c]));
}

function fmtBytes(n) {
  if (n === null || n === undefined) return "-";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(1) : n) + " " + units[i];
}

// a compacted partition's dirty ratio as a percentage ("-": not known, as for a cluster whose
// metrics ports the console does not know); "—" for a topic that is not compacted
function fmtDirty(policy, ratio) {
  if (!policy) return "-";
  if (!policy.split(",").includes("compact")) return "—";
  if (ratio === null || ratio === undefined) return "-";
  if (ratio > 0 && ratio < 0.01) return "<1%";
  return Math.round(ratio * 100) + "%";
}

const num = (v) => (v === null || v === undefined ? "-" : String(v));
const ids = (list) => (list && list.length ? list.join(",") : "-");

function fmtAge(ms) {
  if (ms === null || ms === undefined) return "never refreshed";
  return ms < 1000 ? `${ms} ms old` : `${(ms / 1000).toFixed(1)} s old`;
}

// ----- tabs -----------------------------------------------------------------------------------

function showTab() {
  const name = (location.hash || "#brokers").slice(1);
  document.querySelectorAll("section[data-section]").forEach((s) =>
    s.classList.toggle("active", s.dataset.section === name));
  document.querySelectorAll("nav a").forEach((a) =>
    a.classList.toggle("active", a.dataset.tab === name));
  if (name === "schemas") loadSchemas();
}
window.addEventListener("hashchange", showTab);

// ----- the live snapshot ----------------------------------------------------------------------

function connect() {
  const source = new EventSource("/api/events");
  source.onopen = () => $("#live").classList.remove("off");
  source.onerror = () => {
    $("#live").classList.add("off");
    if (me.login) whoami().then((ok) => { if (!ok) source.close(); });  // the login expired
    if (!snap) {  // say why nothing comes (the console's users' views all taken, say)
      fetch("/api/snapshot").then(async (r) => {
        if (r.status === 503) notice(await r.text(), true);
      });
    }
  };
  source.onmessage = (ev) => {
    snap = JSON.parse(ev.data);
    render();
  };
}

function render() {
  $("main").classList.remove("loading");
  const alive = snap.brokers.filter((b) => b.state === "alive").length;
  const ctl = snap.controller === null ? "no controller" : `controller ${snap.controller}`;
  $("#summary").textContent =
    `${alive}/${snap.brokers.length} brokers alive, ${ctl}, ${snap.topics.length} topics, ` +
    `${snap.groups.length} groups`;
  renderStale();
  renderRefused();
  renderBrokers();
  renderTopics();
  renderGroups();
  renderChaos();
  renderTransactions();
  renderTopicChoices();
  document.body.dataset.version = String(Number(document.body.dataset.version || 0) + 1);
}

function renderStale() {
  const box = $("#stale");
  if (!snap.stale.length) { box.hidden = true; box.innerHTML = ""; return; }
  box.hidden = false;
  box.innerHTML = "<strong>Stale data:</strong> " + snap.stale.map((s) =>
    `<span class="stale-item" data-stale="${esc(s.section)}">${esc(s.section)} ` +
    `(${esc(fmtAge(s.age_ms))}): ${esc(s.why)}</span>`).join("; ");
}

// the parts the broker refused this user (a secured cluster: the user's own ACLs), in its words
function renderRefused() {
  const box = $("#refused");
  const refused = snap.refused || [];
  box.hidden = !refused.length;
  box.innerHTML = refused.length ? `<strong>Not allowed for User:${esc(snap.viewer)}:</strong> ` +
    refused.map((r) => `<span class="refused-item" data-refused="${esc(r.section)}">` +
      `${esc(r.section)}: ${esc(r.why)}</span>`).join("; ") : "";
}

// a broker's event-loop lag between the console's last two readings of its metrics (ms)
function loopLag(lag) {
  if (!lag) return "-";
  const ms = (v) => (v < 10 ? v.toFixed(2) : v.toFixed(0));
  return `<span title="${lag.samples} ticks of 10 ms">${ms(lag.p50_ms)} / ${ms(lag.p99_ms)}` +
    ` / ${ms(lag.max_ms)}</span>`;
}

function renderBrokers() {
  const rows = snap.brokers.map((b) => {
    const role = b.controller ? '<span class="badge controller">controller</span>' : "";
    let actions = "";
    if (controlsShown()) {
      actions =
        `<button class="danger" data-action="kill" data-broker="${b.id}"` +
        `${b.state === "dead" ? " disabled" : ""}>Kill</button> ` +
        `<button data-action="pause" data-broker="${b.id}"` +
        `${b.state !== "alive" ? " disabled" : ""}>Pause</button> ` +
        `<button data-action="start" data-broker="${b.id}"` +
        `${b.state === "alive" ? " disabled" : ""}>Start</button>`;
    }
    return `<tr data-broker="${b.id}"><td class="num">${b.id}</td>` +
      `<td>${b.endpoints.map(esc).join("<br>") || "-"}</td>` +
      `<td class="state state-${esc(b.state)}">${esc(b.state)}</td><td>${role}</td>` +
      `<td class="num partitions">${b.partitions}</td><td class="num leaders">${b.leaders}</td>` +
      `<td class="num loop-lag">${loopLag(b.loop_lag)}</td>` +
      `<td class="controls-col">${actions}</td></tr>`;
  });
  $("#brokers tbody").innerHTML = rows.join("") ||
    '<tr><td colspan="8" class="empty">no broker known yet</td></tr>';
  document.querySelectorAll(".controls-col").forEach((c) => { c.hidden = !controlsShown(); });
}

function renderTopics() {
  const internal = $("#show-internal").checked;
  const html = snap.topics.filter((t) => internal || !t.internal).map((t) => {
    const bad = t.partitions.filter((p) => p.status !== "ok").length;
    const rows = t.partitions.map((p) =>
      `<tr class="status-${esc(p.status)}" data-topic="${esc(t.name)}" ` +
      `data-partition="${p.partition}"><td class="num">${p.partition}</td>` +
      `<td class="num leader">${p.leader === null ? "none" : p.leader}</td>` +
      `<td class="replicas">${ids(p.replicas)}</td><td class="isr">${ids(p.isr)}</td>` +
      `<td class="num">${num(p.log_start)}</td><td class="num hw">${num(p.hw)}</td>` +
      `<td class="num">${num(p.log_end)}</td><td class="num">${fmtBytes(p.size)}</td>` +
      `<td class="num dirty">${fmtDirty(t.cleanup_policy, p.dirty_ratio)}</td>` +
      `<td class="status status-${esc(p.status)}">${esc(p.status)}` +
      `${p.cause ? `<div class="cause">${esc(p.cause)}</div>` : ""}</td></tr>`).join("");
    return `<h3 data-topic-name="${esc(t.name)}">${esc(t.name)} ` +
      `<span class="badge">${t.partitions.length} partitions</span>` +
      `${t.cleanup_policy ? ` <span class="badge policy">cleanup.policy=${esc(t.cleanup_policy)}</span>` : ""}` +
      `${bad ? ` <span class="badge status-offline">${bad} not ok</span>` : ""}</h3>` +
      `<table class="partitions"><thead><tr><th class="num">Partition</th>` +
      `<th class="num">Leader</th><th>Replicas</th><th>ISR</th><th class="num">Log start</th>` +
      `<th class="num">High watermark</th><th class="num">Log end</th><th class="num">Size</th>` +
      `<th class="num" title="a compacted partition's dirty bytes over its cleanable bytes, ` +
      `from its leader's metrics">Dirty</th><th>Status</th></tr></thead><tbody>${rows}</tbody></table>`;
  });
  $("#topics").innerHTML = html.join("") || '<p class="empty">no topics</p>';
}

// "5 min", "4 min 12 s", "42 s"
function fmtSpan(s) {
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60), rest = s % 60;
  return rest ? `${m} min ${rest} s` : `${m} min`;
}

// a group's total lag over the snapshot's window (the server keeps the last lag_window_ms)
function lagChart(history, windowMs) {
  const w = 320, h = 70, pad = 4;
  if (!history || history.length < 2) {
    return `<svg class="chart" width="${w}" height="${h}"><text x="8" y="38">` +
      "lag over time: collecting</text></svg>";
  }
  const t0 = history[0][0], t1 = history[history.length - 1][0];
  const max = Math.max(1, ...history.map((p) => p[1]));
  const pts = history.map(([t, lag]) => {
    const x = pad + ((t - t0) / Math.max(1, t1 - t0)) * (w - 2 * pad);
    const y = h - pad - (lag / max) * (h - 2 * pad - 12);
    return `${x.toFixed(1)},${y.toFixed(1)}`;
  }).join(" ");
  const span = Math.min(Math.round((t1 - t0) / 1000), Math.round((windowMs || 300000) / 1000));
  return `<svg class="chart" width="${w}" height="${h}" data-points="${history.length}">` +
    `<text x="6" y="11">max ${max}</text><text class="span" x="${w - 6}" y="11" ` +
    `text-anchor="end">last ${fmtSpan(span)}</text>` +
    `<polyline points="${pts}"></polyline></svg>`;
}

function renderGroups() {
  const html = snap.groups.map((g) => {
    const members = g.members.map((m) =>
      `<li><span class="owner">${esc(m.owner)}</span>` +
      (m.epoch !== undefined ? ` <span class="member-epoch">(epoch ${m.epoch})</span>` : "") +
      `: ${esc(m.assignment.join(", ") || "-")}` +
      (m.target !== undefined && m.target.join(",") !== m.assignment.join(",")
        ? ` <span class="target">&rarr; ${esc(m.target.join(", ") || "-")}</span>` : "") +
      "</li>").join("");
    const share = g.type === "share"
      ? `, <span class="shared">${g.shared_partitions}</span> partitions shared` : "";
    const epochs = g.type === "consumer"
      ? `, group epoch <span class="group-epoch">${g.group_epoch}</span>, target assignment ` +
        `epoch <span class="target-epoch">${g.target_epoch}</span>` : "";
    const rows = g.offsets.map((o) =>
      `<tr data-topic="${esc(o.topic)}" data-partition="${o.partition}">` +
      `<td>${esc(o.topic)}</td><td class="num">${o.partition}</td>` +
      `<td class="num committed">${num(o.committed)}</td><td class="num end">${num(o.end)}</td>` +
      `<td class="num lag">${num(o.lag)}</td>` +
      (g.type === "share" ? `<td class="num in-flight">${num(o.in_flight)}</td>` +
        `<td class="num archived">${num(o.archived)}</td>` : "") +
      `<td>${esc(o.owner || "-")}</td></tr>`).join("");
    return `<div class="group" data-group="${esc(g.id)}"><header>` +
      `<span class="name">${esc(g.id)}</span><span class="meta">${esc(g.kind)} group, type ` +
      `<span class="group-type">${esc(g.type || "classic")}</span>, state ` +
      `<span class="group-state">${esc(g.state)}</span>, ` +
      `${g.type === "share" ? "group epoch" : "generation"} ${g.generation}${epochs}${share}` +
      `${g.assignor ? ", assignor " + esc(g.assignor) : ""}</span>` +
      `<span>total lag <span class="lag-total">${g.lag}</span></span></header>` +
      lagChart(g.history, snap.lag_window_ms) +
      `<ul class="members">${members || '<li class="empty">no members</li>'}</ul>` +
      `<table><thead><tr><th>Topic</th><th class="num">Partition</th>` +
      `<th class="num">${g.type === "share" ? "Start offset" : "Committed"}</th>` +
      `<th class="num">End offset</th><th class="num">Lag</th>` +
      (g.type === "share" ? `<th class="num">In flight</th><th class="num">Archived</th>` : "") +
      `<th>Owner</th></tr></thead><tbody>${rows}</tbody></table></div>`;
  });
  $("#groups").innerHTML = html.join("") || '<p class="empty">no consumer groups</p>';
}

function fmtDuration(ms) {
  if (ms < 1000) return `${ms} ms`;
  if (ms < 120000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60000)} min ${Math.round((ms % 60000) / 1000)} s`;
}

function renderTransactions() {
  const txns = snap.transactions || { open: [], hanging: [] };
  $("#txns tbody").innerHTML = txns.open.map((t) =>
    `<tr data-txn="${esc(t.id)}"><td>${esc(t.id)}</td><td class="num">${t.producer_id}</td>` +
    `<td class="num">${t.producer_epoch}</td><td class="txn-state">${esc(t.state)}</td>` +
    `<td class="num">${t.coordinator}</td>` +
    `<td class="num age" data-age-ms="${t.age_ms}">${fmtDuration(t.age_ms)}</td>` +
    `<td class="num">${fmtDuration(t.timeout_ms)}</td>` +
    `<td class="txn-partitions">${esc(t.partitions.join(", ") || "-")}</td></tr>`).join("") ||
    '<tr><td colspan="8" class="empty">no open transaction</td></tr>';
  $("#hanging tbody").innerHTML = txns.hanging.map((h) =>
    `<tr data-hanging="${esc(h.topic)}-${h.partition}" data-producer="${h.producer_id}">` +
    `<td>${esc(h.topic)}-${h.partition}</td><td class="num">${h.producer_id}</td>` +
    `<td class="num">${h.producer_epoch}</td><td class="num">${h.start_offset}</td>` +
    `<td class="num age" data-age-ms="${h.age_ms}">${fmtDuration(h.age_ms)}</td>` +
    `<td>${esc(h.transactional_id ?? "-")}</td><td>${esc(h.reason)}</td></tr>`).join("") ||
    '<tr><td colspan="7" class="empty">no hanging transaction</td></tr>';
}

function renderChaos() {
  const events = snap.chaos || [];
  $("#chaos").innerHTML = events.map((e) => {
    const when = new Date(e.t * 1000).toISOString().slice(11, 23);
    const rest = Object.entries(e).filter(([k]) => k !== "t" && k !== "event")
      .map(([k, v]) => `${esc(k)}=${esc(v)}`).join(" ");
    return `<li data-event="${esc(e.event)}"><span class="t">${when}</span>` +
      `<strong>${esc(e.event)}</strong> ${rest}</li>`;
  }).join("") || `<li class="empty">${!snap.local ? "only for a local cluster's console (--dir)"
    : me.login && !me.cluster_alter ? "only for users allowed Alter on the Cluster"
    : "no chaos run yet"}</li>`;
}

function renderTopicChoices() {
  const select = $("#topic");
  const names = snap.topics.map((t) => t.name);
  const have = Array.from(select.options).map((o) => o.value);
  if (names.join("\n") === have.join("\n")) return;
  const chosen = select.value;
  select.innerHTML = names.map((n) => `<option value="${esc(n)}">${esc(n)}</option>`).join("");
  if (names.includes(chosen)) select.value = chosen;
}

// ----- broker controls ------------------------------------------------------------------------

function notice(text, isError) {
  const box = $("#notice");
  box.hidden = false;
  box.textContent = text;
  box.classList.toggle("error", Boolean(isError));
}

document.addEventListener("click", async (ev) => {
  const button = ev.target.closest("button[data-action]");
  if (!button) return;
  button.disabled = true;
  const { action, broker } = button.dataset;
  notice(`broker ${broker}: ${action}…`);
  try {
    const resp = await fetch(`/api/brokers/${broker}/${action}`, {
      method: "POST", headers: { "X-Odradek-Console": "1" },
    });
    const body = await resp.json();
    notice(resp.ok ? body.message : body.error, !resp.ok);
  } catch (err) {
    notice(`broker ${broker}: ${err}`, true);
  }
});

// ----- the message browser ----------------------------------------------------------------------

function renderValue(v) {
  if (v.kind === "null") return '<span class="kind">null</span>';
  const cut = v.truncated ? ` (first part of ${v.size} bytes)` : "";
  const id = v.schema_id === undefined ? "" : `, schema id ${v.schema_id}`;
  return `<span class="kind">${esc(v.kind)}${esc(id)}${esc(cut)}</span><pre>${esc(v.text)}</pre>`;
}

const TXN_MARKS = {
  aborted: "of an aborted transaction: read_committed consumers never see it",
  open: "at or past the last stable offset (a transaction still open): read_committed " +
    "consumers do not see it yet",
};

function renderRecords(answer) {
  const rows = answer.records.map((r) =>
    `<tr class="record${r.txn ? " txn-" + esc(r.txn) : ""}" data-partition="${r.partition}" ` +
    `data-offset="${r.offset}"${r.txn ? ` data-txn="${esc(r.txn)}"` : ""}>` +
    `<td class="num">${r.partition}</td><td class="num">${r.offset}` +
    (r.txn ? ` <span class="badge txn-mark" title="${esc(TXN_MARKS[r.txn])}">${esc(r.txn)}</span>`
      : "") + "</td>" +
    `<td>${esc(new Date(r.timestamp).toISOString())}</td><td class="key">${renderValue(r.key)}</td>` +
    `<td class="value">${renderValue(r.value)}</td><td class="headers">` +
    r.headers.map(([k, v]) => `<div class="hdr">${esc(k)}: ${esc(v.text)}</div>`).join("") +
    "</td></tr>").join("");
  $("#records tbody").innerHTML = rows ||
    '<tr><td colspan="6" class="empty">no records here</td></tr>';
}

async function browse(extra) {
  const kind = $("#start-kind").value;
  const value = $("#start-value").value.trim();
  const request = {
    topic: $("#topic").value,
    partitions: $("#partitions").value.trim(),
    start: kind === "offset" || kind === "time" ? `${kind}:${value}` : kind,
    limit: Number($("#limit").value || 20),
    search: $("#search").value,
    isolation: $("#isolation").value,
    ...extra,
  };
  $("#browse-status").textContent = request.search ? "searching…" : "loading…";
  const resp = await fetch("/api/browse", {
    method: "POST", headers: { "Content-Type": "application/json" },
    body: JSON.stringify(request),
  });
  const answer = await resp.json();
  if (!resp.ok) {
    $("#records tbody").innerHTML = "";  // a refusal leaves nothing of an earlier page
    $("#browse-status").textContent = answer.error;
    $("#browse-status").classList.add("error");
    return;
  }
  $("#browse-status").classList.remove("error");
  browser.start = answer.start;
  browser.end = answer.end;
  browser.last = answer;
  renderRecords(answer);
  const n = answer.records.length;
  let status = `${n} record${n === 1 ? "" : "s"}` +
    (answer.isolation === "read_committed" ? " (committed only)" : "");
  if (answer.search) {
    status = `${n} match${n === 1 ? "" : "es"} for “${answer.search.text}”, ` +
      `${answer.scanned} records scanned` +
      (answer.search.done ? ", reached the end" : "; Forward searches on");
  }
  $("#browse-status").textContent = status;
  $("#prev").disabled = answer.at_start || Boolean(answer.search);
  $("#next").disabled = answer.at_end;
}

$("#browse-form").addEventListener("submit", (ev) => { ev.preventDefault(); browse({}); });
$("#next").addEventListener("click", () => browse({ cursor: browser.end, direction: "forward" }));
$("#prev").addEventListener("click", () => browse({ cursor: browser.start, direction: "back" }));
$("#show-internal").addEventListener("change", () => snap && renderTopics());

// ----- the schema registry ---------------------------------------------------------------------

const registry = { subject: null };

async function getJson(path) {
  const resp = await fetch(path);
  const body = await resp.json();
  if (!resp.ok) throw new Error(body.error || resp.statusText);
  return body;
}

async function loadSchemas() {
  if (!me.registry) {
    $("#schemas-status").textContent = "this console knows no schema registry";
    return;
  }
  $("#schemas-status").textContent = "loading…";
  try {
    const got = await getJson("/api/schemas");
    $("#subjects tbody").innerHTML = got.subjects.map((s) =>
      `<tr class="subject" data-subject="${esc(s.name)}"><td><a href="#schemas">${esc(s.name)}` +
      `</a></td><td class="versions">${esc(s.versions.join(", "))}</td>` +
      `<td class="level">${esc(s.level)}</td></tr>`).join("") ||
      '<tr><td colspan="3" class="empty">no subjects yet</td></tr>';
    $("#schemas-status").textContent = `${got.subjects.length} subject` +
      `${got.subjects.length === 1 ? "" : "s"}, global level ${got.level}` +
      (got.more ? ` (${got.more} more not shown)` : "");
    if (registry.subject) loadSubject(registry.subject.name);
  } catch (err) {
    $("#schemas-status").textContent = String(err.message || err);
  }
}

async function loadSubject(name) {
  try {
    registry.subject = await getJson(`/api/schemas/${encodeURIComponent(name)}`);
  } catch (err) {
    $("#schemas-status").textContent = String(err.message || err);
    return;
  }
  const s = registry.subject;
  $("#subject").hidden = false;
  $("#subject-name").textContent = s.name;
  $("#subject-level").textContent = s.level;
  $("#subject-version").innerHTML = s.versions.map((v, i) =>
    `<option value="${i}">${v.version}</option>`).join("");
  showVersion(0);
}

function showVersion(i) {
  const v = registry.subject.versions[i];
  if (!v) return;
  $("#schema-meta").textContent = `id ${v.id}, ${v.schemaType}` +
    (v.references.length ? `, references ${v.references.map((r) => r.name).join(", ")}` : "");
  let text = v.schema;
  try { text = JSON.stringify(JSON.parse(v.schema), null, 2); } catch (err) { /* Protobuf */ }
  $("#schema-text").textContent = text;
}

$("#subjects").addEventListener("click", (ev) => {
  const row = ev.target.closest("tr[data-subject]");
  if (!row) return;
  ev.preventDefault();
  loadSubject(row.dataset.subject);
});
$("#subject-version").addEventListener("change", (ev) => showVersion(Number(ev.target.value)));
$("#schemas-refresh").addEventListener("click", loadSchemas);

// ----- login (a secured cluster: its own SASL users) ----------------------------------------------

// the controls need the cluster's controls and, on a secured cluster, a user allowed Alter on it
function controlsShown() {
  return Boolean(snap && snap.controls && me.cluster_alter);
}

async function whoami() {
  const resp = await fetch("/api/whoami");
  me = await resp.json();
  const loggedOut = me.login && !me.user;
  $("#login").hidden = !loggedOut;
  $("main").hidden = loggedOut;
  $("#me").hidden = !me.user;
  $("#me-name").textContent = me.user ? `User:${me.user}` +
    (me.cluster_alter ? "" : " (no Cluster Alter: controls off)") : "";
  if (loggedOut) $("#summary").textContent = "log in to see the cluster";
  else if (!snap) $("#summary").textContent = "loading the cluster\u2019s state\u2026";
  return !loggedOut;
}

$("#login").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  $("#login-status").textContent = "checking with a broker…";
  const resp = await fetch("/api/login", {
    method: "POST",
    headers: { "X-Odradek-Console": "1", "Content-Type": "application/json" },
    body: JSON.stringify({ user: $("#login-user").value, password: $("#login-password").value }),
  });
  const body = await resp.json();
  $("#login-password").value = "";
  $("#login-status").textContent = resp.ok ? "" : body.error;
  if (resp.ok && await whoami()) connect();
});

$("#logout").addEventListener("click", async () => {
  await fetch("/api/logout", { method: "POST", headers: { "X-Odradek-Console": "1" } });
  location.reload();
});

showTab();
whoami().then((ok) => {
  if (ok) connect();
  if (location.hash === "#schemas") loadSchemas();  // shown before whoami said registry
});
