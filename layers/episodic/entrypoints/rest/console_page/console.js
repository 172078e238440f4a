"use strict";
// The operator console: plain DOM, no framework, no build step. Every memory text is untrusted
// and goes into the page through textContent only (see el()), never as markup.

const BASE = location.pathname.replace(/\/console\/?$/, "");
const TOKEN_KEY = "episodic.console.token";
const FAREWELL_KEY = "episodic.console.signed-out";
const EVENT_TYPES = ["user_preference_stated", "correction_received", "task_milestone", "human_approval",
  "tool_observed_event", "incident_or_failure", "conversation_turn", "tool_call", "error", "feedback",
  "session_summary"];
const PALETTE = ["#067647", "#f79009", "#b42318", "#7a5af8", "#2457c5", "#dd2590", "#0e9384", "#667085",
  "#c4320a", "#4e5ba6"];

const $ = (selector) => document.querySelector(selector);

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "onclick") node.addEventListener("click", value);
    else if (key === "style") node.style.cssText = value;
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function svg(tag, attrs = {}, ...children) {
  const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, String(value));
  for (const child of children) node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  return node;
}

// -- talking to the API ------------------------------------------------------------------

class ApiError extends Error {
  constructor(status, body) {
    super((body && body.message) || `HTTP ${status}`);
    this.status = status;
    this.body = body || {};
  }
}

async function api(method, path, { query = {}, body } = {}) {
  const url = new URL(BASE + path, location.origin);
  for (const [key, value] of Object.entries(query)) {
    if (value === undefined || value === null || value === "") continue;
    for (const one of Array.isArray(value) ? value : [value]) url.searchParams.append(key, one);
  }
  const headers = { Authorization: `Bearer ${sessionStorage.getItem(TOKEN_KEY) || ""}`, Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await response.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = { message: text.slice(0, 300) }; }
  if (!response.ok) throw new ApiError(response.status, data);
  return data;
}

function say(message, kind = "ok") {
  const status = $("#status");
  status.textContent = message;
  status.className = kind;
}

function failed(error) {
  if (error instanceof ApiError && error.status === 401) { signOut("Your token was refused: sign in again."); return; }
  const reasons = error.body && error.body.reasons ? ` (${error.body.reasons.join(", ")})` : "";
  say(`${error.message}${reasons}${fieldsAtFault(error.body)}`, "error");
}

/** What a 422 names as wrong, field by field ("actorId: String should match pattern ..."). */
function fieldsAtFault(body) {
  const detail = body && Array.isArray(body.detail) ? body.detail : [];
  const named = detail.slice(0, 3).map((d) => `${(d.loc || []).filter((part) => part !== "body" && part !== "query").join(".")}: ${d.msg}`);
  return named.length ? `: ${named.join("; ")}` : "";
}

const guarded = (fn) => async (...args) => { try { await fn(...args); } catch (error) { failed(error); } };

const latest = {};
/** A listing's newest request: ``newest(name)`` starts one and returns whether it is still the
 * newest, so an older answer that arrives later (read before a decision or an erasure) is dropped. */
function newest(name) {
  const mine = (latest[name] = (latest[name] || 0) + 1);
  return () => latest[name] === mine;
}

function confirmAction(text, { expected, reason, date } = {}) {
  const dialog = $("#confirm");
  $("#confirm-text").textContent = text;
  $("#confirm-typed-label").hidden = !expected;
  $("#confirm-expected").textContent = expected || "";
  $("#confirm-typed").value = "";
  $("#confirm-reason-label").hidden = !reason;
  $("#confirm-reason").value = "";
  $("#confirm-date-label").hidden = !date;
  $("#confirm-date").value = "";
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => {
      const ok = dialog.returnValue === "ok" && (!expected || $("#confirm-typed").value.trim() === expected);
      if (dialog.returnValue === "ok" && !ok) say("Not confirmed: the text typed did not match.", "error");
      resolve(ok ? { reason: $("#confirm-reason").value.trim() || undefined, date: $("#confirm-date").value || undefined } : null);
    }, { once: true });
    dialog.showModal();
  });
}

const when = (iso) => (iso ? iso.replace("T", " ").replace(/(\.\d+)?(Z|\+00:00)$/, " UTC") : "");
const dayStart = (value) => (value ? `${value}T00:00:00Z` : undefined);

// -- signing in and out ------------------------------------------------------------------

async function signIn(event) {
  event.preventDefault();
  sessionStorage.setItem(TOKEN_KEY, $("#token").value.trim());
  try {
    await api("GET", "/v1/admin/overview", { query: { days: 1 } });
  } catch (error) {
    sessionStorage.removeItem(TOKEN_KEY);
    if (error.status === 401) say("This token is not valid here.", "error");
    else if (error.status === 403) say("This token is not an operator's: the console needs an operator token.", "error");
    else failed(error);
    return;
  }
  $("#token").value = "";
  say("Signed in.");
  await start();
}

/** Everything the page shows was read with the token that signs out: the page starts afresh (a
 * reload), so the next operator of this tab, perhaps of another tenant, sees none of it. */
function signOut(message = "Signed out.") {
  sessionStorage.removeItem(TOKEN_KEY);
  sessionStorage.setItem(FAREWELL_KEY, message);
  location.reload();
}

async function start() {
  $("#signin-view").hidden = true;
  $("#app").hidden = false;
  $("#session").hidden = false;
  await Promise.all([refreshWrites(), showOverview(), refreshReviewCount()]);
}

// -- the write kill-switch ---------------------------------------------------------------

let writesEnabled = true;

async function refreshWrites() {
  const state = await api("GET", "/v1/admin/writes");
  writesEnabled = state.writesEnabled;
  const pill = $("#writes-state");
  pill.textContent = state.deploymentKillSwitch ? "Writes off for the whole deployment" : writesEnabled ? "Writes on" : "Writes off";
  pill.className = `pill ${writesEnabled ? "on" : "off"}`;
  $("#writes-toggle").textContent = writesEnabled ? "Switch writes off…" : "Switch writes on";
  $("#writes-toggle").disabled = state.deploymentKillSwitch;
}

async function toggleWrites() {
  let reason;
  if (writesEnabled) {
    const answer = await confirmAction("Stop every write for this tenant? Recall keeps working.", { reason: true });
    if (!answer) return;
    reason = answer.reason;
  }
  await api("PUT", "/v1/admin/writes", { body: { enabled: !writesEnabled, reason } });
  await refreshWrites();
  say(writesEnabled ? "Writes are on." : "Writes are off for this tenant.");
}

// -- overview ----------------------------------------------------------------------------

function days(since, until) {
  const out = [];
  const day = new Date(`${since.slice(0, 10)}T00:00:00Z`);
  const last = until.slice(0, 10);
  while (day.toISOString().slice(0, 10) <= last) {
    out.push(day.toISOString().slice(0, 10));
    day.setUTCDate(day.getUTCDate() + 1);
  }
  return out;
}

function barChart(columns, labels, { width = 420, height = 160 } = {}) {
  const colors = Object.fromEntries(labels.map((label, i) => [label, PALETTE[i % PALETTE.length]]));
  const top = Math.max(1, ...columns.map((c) => c.values.reduce((sum, v) => sum + v.count, 0)));
  const pad = 24, barWidth = (width - pad) / Math.max(1, columns.length);
  const chart = svg("svg", { viewBox: `0 0 ${width + 24} ${height + 16}`, width: "100%", role: "img" });
  chart.append(svg("text", { x: 0, y: 10 }, String(top)), svg("text", { x: 0, y: height }, "0"));
  columns.forEach((column, i) => {
    let y = height;
    for (const { label, count } of column.values) {
      const h = (count / top) * (height - 14);
      y -= h;
      const bar = svg("rect", { x: pad + i * barWidth + 1, y, width: Math.max(1, barWidth - 2), height: h, fill: colors[label] });
      bar.append(svg("title", {}, `${column.x}: ${label} ${count}`));
      chart.append(bar);
    }
    if (columns.length <= 12 || i % Math.ceil(columns.length / 8) === 0) {
      chart.append(svg("text", { x: pad + i * barWidth, y: height + 12 }, column.short || column.x));
    }
  });
  const legend = el("div", { class: "legend" },
    labels.map((label) => el("span", { style: `--swatch: ${colors[label]}` }, label)));
  return el("div", {}, chart, labels.length > 1 ? legend : null);
}

function dailyColumns(series, since, until) {
  return days(since, until).map((day) => ({
    x: day, short: day.slice(5),
    values: series.filter((d) => d.day === day).map((d) => ({ label: d.label, count: d.count })),
  }));
}

async function showOverview() {
  const o = await api("GET", "/v1/admin/overview", { query: { days: 14 } });
  const stat = (label, value) => el("div", { class: "stat" }, el("b", {}, value), label);
  const stats = [stat("active episodes", o.activeEpisodes), stat("pending reviews", o.pendingReviews),
    stat("due to leave recall", o.due.length)];
  if (o.truncated) stats.push(stat("the figures cover the newest part only", "partial"));
  $("#stats").replaceChildren(...stats);
  const labels = [...new Set(o.decisions.map((d) => d.label))].sort();
  $("#chart-decisions").replaceChildren(o.decisions.length
    ? barChart(dailyColumns(o.decisions, o.since, o.until), labels) : el("p", { class: "muted" }, "No writes in these 14 days."));
  $("#chart-recalls").replaceChildren(barChart(dailyColumns(o.recalls, o.since, o.until), ["recalls"]));
  $("#chart-retention").replaceChildren(barChart(o.retention.map((b) => ({
    x: `${b.low.toFixed(0)}–${b.high.toFixed(0)}`, values: [{ label: "episodes", count: b.count }],
  })), ["episodes"]));
  $("#due tbody").replaceChildren(...(o.due.length ? o.due.map((d) => el("tr", { class: "clickable", onclick: guarded(() => openEpisode(d.eventId)) },
    el("td", {}, el("code", {}, d.eventId)), el("td", {}, d.actorId), el("td", {}, d.eventType),
    el("td", {}, d.why === "expires" ? "retention ends" : "relevance decayed"),
    el("td", {}, d.dueAt ? when(d.dueAt) : "next decay sweep"), el("td", {}, d.retentionScore.toFixed(2)))) :
    [el("tr", {}, el("td", { colspan: 6, class: "muted" }, "Nothing is due."))]));
}

// -- timeline, search, one episode -------------------------------------------------------

let timelineCursor = null;

function settleListing() {
  $("#episodes").removeAttribute("aria-busy");
}

function filterValues() {
  const form = new FormData($("#filters"));
  return Object.fromEntries([...form.entries()].map(([k, v]) => [k, String(v).trim()]));
}

async function showTimeline(event, more = false) {
  if (event) event.preventDefault();
  const f = filterValues();
  const current = newest("timeline");
  $("#episodes").setAttribute("aria-busy", "true");
  try {
    await listEpisodes(f, more, current);
  } finally {
    if (current()) settleListing();
  }
}

async function listEpisodes(f, more, current) {
  let episodes;
  if (f.query) {
    if (f.status === "pending_review") { say("Episodes pending review are never recalled: clear the search.", "error"); return; }
    const found = await api("POST", "/v1/recall", { body: {
      query: f.query, actorId: f.actorId || undefined, eventTypes: f.eventType ? [f.eventType] : [],
      tags: f.tag ? [f.tag] : [], occurredAfter: dayStart(f.after), occurredBefore: dayStart(f.before),
      statuses: [f.status], limit: 50, neighbours: 0, countAccess: false,
    } });
    if (!current()) return;
    episodes = found.items.map((item) => item.episode);
    timelineCursor = null;
  } else {
    const page = await api("GET", "/v1/timeline", { query: {
      actorId: f.actorId, eventType: f.eventType, tag: f.tag, after: dayStart(f.after), before: dayStart(f.before),
      status: f.status, limit: 50, cursor: more ? timelineCursor : undefined,
    } });
    if (!current()) return;
    episodes = page.items;
    timelineCursor = page.nextCursor;
  }
  const rows = episodes.map((e) => el("tr", { class: "clickable", "data-event-id": e.eventId, onclick: guarded(() => openEpisode(e.eventId)) },
    el("td", {}, when(e.occurredAt)), el("td", {}, e.actorId), el("td", {}, e.eventType), el("td", {}, e.status),
    el("td", {}, e.privacyClass), el("td", {}, e.retentionScore.toFixed(2)), el("td", { class: "summary" }, e.summary)));
  const body = $("#episodes tbody");
  if (more) body.append(...rows);
  else body.replaceChildren(...(rows.length ? rows : [el("tr", {}, el("td", { colspan: 7, class: "muted" }, "No episode matches."))]));
  $("#more").hidden = !timelineCursor;
  $("#actor-actions").hidden = !f.actorId;
  $("#erase-actor").textContent = `Erase everything of actor “${f.actorId}”…`;
  if (!more) $("#detail").hidden = true;
  if ($("#status").className === "error") say("");  // what went wrong before no longer holds
}

function field(label, value) {
  if (value === undefined || value === null || value === "" || (Array.isArray(value) && !value.length)) return [];
  return [el("dt", {}, label), el("dd", {}, Array.isArray(value) ? value.join(", ") : String(value))];
}

async function openEpisode(eventId) {
  showTab("timeline");
  const [episode, trail] = await Promise.all([
    api("GET", `/v1/episodes/${encodeURIComponent(eventId)}`),
    api("GET", "/v1/audit", { query: { eventId, limit: 200 } }),
  ]);
  const written = trail.items.find((r) => ["episode.written", "episode.review_requested"].includes(r.action));
  const detail = $("#detail");
  detail.replaceChildren(
    el("h3", {}, episode.summary),
    el("dl", {},
      field("Event id", episode.eventId), field("Actor", episode.actorId), field("Type", episode.eventType),
      field("Occurred", when(episode.occurredAt)), field("Recorded", when(episode.recordedAt)),
      field("Status", episode.status), field("Privacy", episode.privacyClass),
      field("Sources", episode.sourceRefs), field("Source trust", episode.sourceTrust),
      field("Proposed by", episode.proposedBy), field("Session", episode.sessionId), field("Project", episode.projectId),
      field("Tags", episode.tags), field("Supersedes", episode.supersedesEventIds),
      field("Policy version", episode.policyVersion),
      field("Policy decision", written ? (written.action === "episode.written" ? "allowed" : "sent to review") : "not in the trail"),
      field("Policy reasons", written ? (written.reasons.length ? written.reasons : "none") : undefined),
      field("Retention score", episode.retentionScore.toFixed(2)), field("Expires", when(episode.retention.expiresAt)),
      field("Recalled", `${episode.accessCount} times`), field("Feedback", episode.feedbackCount ? `${episode.feedbackScore.toFixed(2)} from ${episode.feedbackCount}` : undefined)),
    el("p", {},
      el("button", { type: "button", class: "danger", onclick: guarded(() => eraseEpisode(episode.eventId)) }, "Erase…"), " ",
      episode.status === "archived" ? el("button", { type: "button", onclick: guarded(() => restoreEpisode(episode.eventId)) }, "Restore") : null),
    el("h4", {}, "Audit trail"),
    auditTable(trail.items.slice().reverse()),
  );
  detail.hidden = false;
  detail.scrollIntoView({ block: "nearest" });
}

async function eraseEpisode(eventId) {
  if (!await confirmAction(`Erase episode ${eventId} everywhere (and digests that cite it)? Only an audit tombstone stays; this cannot be undone.`)) return;
  const result = await api("DELETE", `/v1/episodes/${encodeURIComponent(eventId)}`);
  say(`Erased ${result.erased.length} episode(s)${result.cascaded.length ? ` and ${result.cascaded.length} digest(s) citing it` : ""}.`);
  $("#detail").hidden = true;
  newest("timeline"); // a listing read before the erasure would bring the row back: it is now stale
  settleListing();
  $(`#episodes tr[data-event-id="${CSS.escape(eventId)}"]`)?.remove();
}

async function restoreEpisode(eventId) {
  const answer = await confirmAction(`Restore episode ${eventId} from the archive into recall?`, { date: true });
  if (!answer) return;
  const body = answer.date ? { expiresAt: `${answer.date}T23:59:59Z` } : {};
  await api("POST", `/v1/episodes/${encodeURIComponent(eventId)}/restore`, { body });
  say(`Restored ${eventId} from the archive.`);
  await openEpisode(eventId);
}

async function eraseActor() {
  const actorId = filterValues().actorId;
  const answer = await confirmAction(`Erase every episode of actor “${actorId}”, with their archive copies? This cannot be undone.`,
    { expected: actorId, reason: true });
  if (!answer) return;
  const result = await api("POST", "/v1/erasure", { body: { actorId, reason: answer.reason } });
  say(`Erased ${result.erased.length} episode(s) of ${actorId}.`);
  await showTimeline();
}

// -- reviews -----------------------------------------------------------------------------

async function refreshReviewCount() {
  const current = newest("reviews");
  const pending = await api("GET", "/v1/reviews", { query: { status: "pending", limit: 500 } });
  if (!current()) return null;
  $("#review-count").textContent = pending.items.length || "";
  return pending.items;
}

async function showReviews() {
  const items = await refreshReviewCount();
  if (items === null) return; // a newer listing is on its way (after a decision, say)
  $("#reviews").replaceChildren(...(items.length ? items.map(reviewCard) : [el("p", { class: "muted" }, "No review is waiting.")]));
}

function reviewCard({ review, episode }) {
  const note = el("input", { placeholder: "note (optional)", "aria-label": "note" });
  const decide = (decision) => guarded(async () => {
    await api("POST", `/v1/reviews/${encodeURIComponent(review.reviewId)}/decision`, { body: { decision, note: note.value.trim() || undefined } });
    say(`Review ${review.reviewId}: ${decision === "approve" ? "approved, the episode is active" : "denied, the episode is removed"}.`);
    await showReviews();
  });
  return el("div", { class: "review", "data-review-id": review.reviewId },
    el("strong", {}, episode ? episode.summary : "(the episode is gone)"),
    el("dl", {}, field("Actor", episode && episode.actorId), field("Type", episode && episode.eventType),
      field("Why it waits", review.reasons), field("Requested", when(review.requestedAt)), field("Policy", review.policyVersion),
      field("Sources", episode && episode.sourceRefs)),
    el("div", { class: "actions" }, note,
      el("button", { type: "button", class: "approve", onclick: decide("approve") }, "Approve"),
      el("button", { type: "button", class: "danger", onclick: decide("deny") }, "Deny")));
}

// -- audit trail -------------------------------------------------------------------------

function auditTable(records) {
  return el("table", {}, el("thead", {}, el("tr", {}, ["At", "Action", "Episode", "By", "Reasons", "Policy", ""].map((h) => el("th", {}, h)))),
    el("tbody", {}, records.map(auditRow)));
}

const RESTORABLE = ["episode.expired", "episode.archived"];

function auditRow(r) {
  const restore = r.eventId && RESTORABLE.includes(r.action)
    ? el("button", { type: "button", class: "restore", onclick: guarded(() => restoreEpisode(r.eventId)) }, "Restore…") : null;
  return el("tr", { "data-action": r.action, "data-event-id": r.eventId }, el("td", {}, when(r.at)), el("td", {}, r.action),
    el("td", {}, r.eventId ? el("code", {}, r.eventId) : ""), el("td", {}, r.principalId),
    el("td", {}, (r.reasons || []).join(", ")), el("td", {}, r.policyVersion || ""), el("td", {}, restore));
}

function verificationText(r) {
  if (!r) return "The audit chains have not been verified from here yet.";
  const d = r.detail || {};
  const outcome = d.verified ? `verified: ${d.records} records, every link intact`
    : `BROKEN: ${d.break} at chain ${d.shard}, position ${d.position}`;
  return `Last verification ${when(r.at)} by ${r.principalId}: ${outcome}.`;
}

async function showVerification() {
  const { last } = await api("GET", "/v1/admin/audit/verification");
  $("#verification-text").textContent = verificationText(last);
}

async function verifyChains() {
  const result = await api("GET", "/v1/admin/audit/verify");
  await showVerification();
  say(result.verified ? `Audit chains verified (${result.records} records).` : `Audit chain broken: ${result.firstBreak.message}`,
    result.verified ? "ok" : "error");
}

async function showAudit(event) {
  if (event) event.preventDefault();
  const current = newest("audit");
  await showVerification();
  const form = Object.fromEntries(new FormData($("#audit-filters")).entries());
  const since = new Date(Date.now() - Number(form.since) * 3600 * 1000).toISOString();
  const records = [];
  let cursor;
  do {
    const page = await api("GET", "/v1/audit", { query: { since, action: form.action.trim(), eventId: form.eventId.trim(), limit: 500, cursor } });
    records.push(...page.items);
    cursor = page.nextCursor;
  } while (cursor && records.length < 2000 && current());
  if (!current()) return;
  records.reverse();
  $("#audit tbody").replaceChildren(...(records.length ? records.map(auditRow) : [el("tr", {}, el("td", { colspan: 7, class: "muted" }, "No audit record in this window."))]));
}

// -- wiring ------------------------------------------------------------------------------

const TABS = { overview: showOverview, timeline: () => showTimeline(), reviews: showReviews, audit: () => showAudit() };

function showTab(name) {
  for (const button of document.querySelectorAll("nav button")) button.classList.toggle("active", button.dataset.tab === name);
  for (const tab of Object.keys(TABS)) $(`#tab-${tab}`).hidden = tab !== name;
}

document.addEventListener("DOMContentLoaded", () => {
  const types = $("#filters select[name=eventType]");
  for (const type of EVENT_TYPES) types.append(el("option", { value: type }, type));
  $("#signin").addEventListener("submit", signIn);
  $("#signout").addEventListener("click", () => signOut());
  $("#writes-toggle").addEventListener("click", guarded(toggleWrites));
  $("#filters").addEventListener("submit", guarded(showTimeline));
  $("#more").addEventListener("click", guarded(() => showTimeline(null, true)));
  $("#erase-actor").addEventListener("click", guarded(eraseActor));
  $("#audit-filters").addEventListener("submit", guarded(showAudit));
  $("#verify").addEventListener("click", guarded(verifyChains));
  for (const button of document.querySelectorAll("nav button")) {
    button.addEventListener("click", guarded(async () => { showTab(button.dataset.tab); await TABS[button.dataset.tab](); }));
  }
  const farewell = sessionStorage.getItem(FAREWELL_KEY);
  sessionStorage.removeItem(FAREWELL_KEY);
  if (farewell) say(farewell, farewell === "Signed out." ? "ok" : "error");
  if (sessionStorage.getItem(TOKEN_KEY)) guarded(start)();
});
