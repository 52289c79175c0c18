// The staff page: superusers sign in with PocketBase's JS SDK, then manage
// API keys through petstore's staff routes (/api/petstore/..., see staff/).
// The server searches, filters, sorts and pages the keys: the page holds one
// page of them at a time, however many there are.
"use strict";

const pb = new PocketBase(location.origin);
const $ = (selector, root = document) => root.querySelector(selector);

let list = null;     // the last page from the server: {page, perPage, totalItems, totalPages, totalKeys, items}
let plans = [];      // names, cheapest first
let planNames = {};  // record id → name, to show the plans an audit record names by id
let usageKey = null; // the key whose use is shown
let page = 1;

// h builds an element: h("td", {className: "x", dataset: {label: "y"}},
// "text", child...). Text is always set as text, never parsed as HTML.
function h(tag, { dataset = {}, ...props } = {}, ...children) {
  const el = Object.assign(document.createElement(tag), props);
  Object.assign(el.dataset, dataset);
  for (const c of children) {
    if (c !== null && c !== undefined) el.append(c);
  }
  return el;
}

// api calls a staff route; errors carry the server's message.
async function api(method, path, body) {
  try {
    return await pb.send("/api/petstore" + path, {
      method,
      body: body === undefined ? undefined : JSON.stringify(body),
      headers: body === undefined ? {} : { "Content-Type": "application/json" },
      requestKey: null, // no auto-cancellation of concurrent calls
    });
  } catch (err) {
    if (err.status === 401 || err.status === 403) {
      pb.authStore.clear();
      show();
    }
    throw new Error(err.response?.message || err.message || "The service did not answer.");
  }
}

// when is a time as staff read it: in UTC, as the columns and the day quota
// count, with its date, whatever the browser's time zone ("2026-11-26 23:47
// UTC"). The exact time goes in the title (see exact).
function when(iso) {
  return new Date(iso).toISOString().slice(0, 16).replace("T", " ") + " UTC";
}

const relative = new Intl.RelativeTimeFormat([], { numeric: "auto" });

// ago is how long ago iso was: "5 minutes ago", "yesterday".
function ago(iso) {
  const seconds = (new Date(iso) - Date.now()) / 1000;
  for (const [unit, length] of [["day", 86400], ["hour", 3600], ["minute", 60]]) {
    if (Math.abs(seconds) >= length) return relative.format(Math.round(seconds / length), unit);
  }
  return "just now";
}

// updatedNow says when a list was read, in UTC as every time on the page.
const updatedNow = () => `updated ${new Date().toISOString().slice(11, 19)} UTC`;

// exact is the title of a shown time: to the second in UTC, and in the
// browser's time zone.
const exact = (iso) => `${new Date(iso).toISOString().slice(0, 19).replace("T", " ")} UTC (${new Date(iso).toLocaleString()} your time)`;

const count = (n) => n.toLocaleString();

function setStatus(text) {
  $("#status").textContent = text;
}

// copyText puts text on the clipboard and says so on button. Without a
// secure context (plain http other than localhost) there is no clipboard
// API: it selects what to copy instead, for Ctrl-C.
async function copyText(text, button, select) {
  const label = button.textContent;
  try {
    await navigator.clipboard.writeText(text);
    button.textContent = "Copied";
  } catch {
    getSelection().selectAllChildren(select);
    button.textContent = "Press Ctrl-C";
  }
  setTimeout(() => { button.textContent = label; }, 1500);
}

// --- signing in -------------------------------------------------------------

function show() {
  const signedIn = pb.authStore.isValid && pb.authStore.isSuperuser;
  $("#signin").hidden = signedIn;
  $("#keys-page").hidden = !signedIn;
  $("#who").hidden = !signedIn;
  if (signedIn) {
    $("#who-email").textContent = pb.authStore.record?.email || "";
    loadPlans().then(refresh).catch((err) => setStatus(err.message));
  }
}

$("#signin-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const form = ev.target;
  $(".error", form).textContent = "";
  try {
    await pb.collection("_superusers").authWithPassword(form.email.value, form.password.value);
    form.reset();
    show();
  } catch (err) {
    $(".error", form).textContent =
      err.status === 400 ? "Wrong email or password, or not a staff account."
        : err.status === 429 ? "Too many attempts from here: wait a few seconds, then try again."
          : err.response?.message || err.message;
  }
});

$("#sign-out").addEventListener("click", () => {
  pb.authStore.clear();
  show();
});

async function loadPlans() {
  const records = await pb.collection("plans").getFullList({ sort: "per_minute,name", requestKey: null });
  plans = records.map((p) => p.name);
  planNames = Object.fromEntries(records.map((p) => [p.id, p.name]));
  for (const select of document.querySelectorAll("select[name=plan]")) {
    select.replaceChildren(...plans.map((name) => h("option", { value: name, textContent: name })));
  }
}

// --- the list ---------------------------------------------------------------

// query is what the toolbar and the pager ask the server for.
function query() {
  const q = new URLSearchParams({ page: String(page), perPage: $("#per-page").value, sort: $("#sort").value });
  const search = $("#search").value.trim();
  if (search) q.set("search", search);
  if ($("#filter-state").value) q.set("state", $("#filter-state").value);
  return q;
}

let asked = 0; // the latest refresh: an older answer arriving late is dropped

async function refresh() {
  const mine = ++asked;
  const answer = await api("GET", "/keys?" + query());
  if (mine !== asked) return;
  if (answer.items.length === 0 && answer.page > 1 && answer.totalPages > 0) {
    // The page emptied (keys changed state, or fewer match): show the last one.
    page = answer.totalPages;
    return refresh();
  }
  list = answer;
  render();
  if (usageKey) {
    const k = list.items.find((k) => k.id === usageKey.id);
    if (k) await showUsage(k);
  }
}

// statusText tells which keys are shown, of how many.
function statusText() {
  const { page: at, perPage, totalItems, totalKeys, items } = list;
  const filtered = $("#search").value.trim() !== "" || $("#filter-state").value !== "";
  const updated = updatedNow();
  if (totalKeys === 0) return `No keys yet · ${updated}`;
  const first = (at - 1) * perPage + 1;
  const shown = items.length === 0 ? "0" : items.length === totalItems ? count(items.length) : `${count(first)}–${count(first + items.length - 1)}`;
  const of = filtered ? `${count(totalItems)} matching (${count(totalKeys)} key${totalKeys === 1 ? "" : "s"} in all)`
    : `${count(totalKeys)} key${totalKeys === 1 ? "" : "s"}`;
  return `${shown} of ${of} shown · ${updated}`;
}

// cell is a table cell whose content is one element: on a phone the cell
// is a card's field, its label (from the column) above that element.
function cell(label, className, ...children) {
  return h("td", { className, dataset: { label } }, h("div", {}, ...children));
}

// stateCell is the key's state with what staff need to know of it: until
// when a ban lasts, with the button that lifts it; when the key expires.
function stateCell(k) {
  const badge = h("span", { className: `state state-${k.state}`, textContent: k.state });
  if (k.state === "banned") {
    return cell("State", "state-cell", badge,
      h("div", { className: "muted until", textContent: `until ${when(k.bannedUntil)}`, title: exact(k.bannedUntil) }),
      actionButton("Lift ban", () => liftBan(k)));
  }
  if (k.expires && k.state !== "revoked") {
    return cell("State", "state-cell", badge,
      h("div", { className: "muted expires", textContent: `${k.state === "expired" ? "expired" : "expires"} ${when(k.expires)}`, title: exact(k.expires) }));
  }
  return cell("State", "state-cell", badge);
}

// quotaCell is a quota: the key's own, marked "own", or its plan's, which
// reads "Plan's (60)" (the key stores 0 for it).
function quotaCell(label, className, q) {
  if (!q.own) return cell(label, `quota ${className}`, h("span", { className: "plans", textContent: `Plan's (${count(q.value)})`, title: "the plan's quota: the key has none of its own" }));
  return cell(label, `quota ${className}`, count(q.value), h("span", { className: "own", textContent: "own", title: "the key's own quota, not its plan's" }));
}

// todayCell is today's (UTC) served requests against the day quota, which
// counts the same UTC day, with the refused ones beside.
function todayCell(k) {
  const { served, refused } = k.today;
  const share = k.perDay.value ? Math.min(1, served / k.perDay.value) : 0;
  const meter = h("div", { className: "meter", title: `${Math.round(share * 100)}% of the day quota` }, h("div"));
  meter.firstChild.style.width = `${Math.round(share * 100)}%`;
  const line = h("div", { className: "counts" }, h("span", { className: "served", textContent: `${count(served)} of ${count(k.perDay.value)}` }));
  if (refused) line.append(" ", h("span", { className: "refused", textContent: `· ${count(refused)} refused` }));
  return cell("Today (UTC)", "today", line, meter);
}

function nameCell(k) {
  const id = h("code", { textContent: k.id });
  const copy = h("button", { type: "button", className: "copy-id", textContent: "Copy", title: "Copy the id, which the keys command takes" });
  copy.onclick = () => copyText(k.id, copy, id);
  return cell("Name", "name",
    h("div", { className: "label", textContent: k.name || "(no name)" }),
    h("div", { className: "id" }, "id ", id, copy));
}

// scopeBadge marks a key that may not do everything: "read only" (it may
// only read), "write only" (it may only write); none for a key with every
// scope.
function scopeBadge(k) {
  const reads = k.scopes.filter((s) => s.endsWith(":read")).length;
  const label = reads === k.scopes.length ? "read only" : reads === 0 ? "write only" : "";
  return label ? h("div", {}, h("span", { className: "scope-badge", textContent: label, title: `scopes: ${k.scopes.join(", ")}` })) : null;
}

function keyCell(k) {
  return cell("Key", "key", h("code", { className: "prefix", textContent: k.prefix + "…" }),
    k.previous ? h("div", { className: "muted previous", title: exact(k.previous.until) }, "old ", h("code", { textContent: k.previous.prefix + "…" }),
      ` works until ${when(k.previous.until)}`) : null,
    scopeBadge(k));
}

function lastUsedCell(k) {
  return cell("Last used", "last-used", k.lastUsed ? h("span", { textContent: ago(k.lastUsed), title: exact(k.lastUsed) }) : "never");
}

// actionsCell offers what the key's state allows: a revoked key is final,
// and an expired one is not rolled (its new secret would not work) but may
// be given a later expiry. A ban is lifted from the state cell.
function actionsCell(k) {
  const offered = [actionButton("Usage", () => showUsage(k, true).catch((err) => setStatus(err.message)))];
  if (k.state !== "revoked") offered.push(actionButton("Change", () => openEdit(k)), actionButton("Expiry", () => openExpiry(k)));
  if (k.state === "active" || k.state === "banned") offered.push(actionButton("Roll", () => openRoll(k)));
  if (k.state !== "revoked") offered.push(actionButton("Revoke", () => openRevoke(k)));
  return cell("Actions", "actions", ...offered);
}

function actionButton(label, action) {
  const b = h("button", { type: "button", className: "small", textContent: label, onclick: action });
  b.dataset.action = label.toLowerCase();
  return b;
}

function render() {
  const rows = list.items.map((k) => {
    const tr = h("tr", { className: usageKey?.id === k.id ? "selected" : "" },
      nameCell(k),
      keyCell(k),
      cell("Plan", "plan", h("span", { className: "plan-name", textContent: k.plan }),
        k.customer ? h("div", { className: "muted customer", textContent: customerName(k.customer), title: "its customer", dataset: { customer: k.customer } }) : null),
      stateCell(k),
      quotaCell("Per minute", "per-minute", k.perMinute),
      quotaCell("Per day", "per-day", k.perDay),
      todayCell(k),
      lastUsedCell(k),
      actionsCell(k));
    tr.dataset.id = k.id;
    return tr;
  });
  $("#keys tbody").replaceChildren(...rows);
  $("#keys").hidden = rows.length === 0;
  $("#empty").hidden = rows.length > 0;
  $("#empty").textContent = list.totalKeys === 0 ? "No keys yet: New key issues the first one." : "No keys match.";
  setStatus(statusText());
  $("#pager").hidden = list.totalPages <= 1;
  $("#page-at").textContent = `Page ${count(list.page)} of ${count(list.totalPages)}`;
  $("#page-first").disabled = $("#page-prev").disabled = list.page <= 1;
  $("#page-next").disabled = $("#page-last").disabled = list.page >= list.totalPages;
}

// reload shows page `to` of the current query.
function reload(to) {
  page = to;
  refresh().catch((err) => setStatus(err.message));
}

let typing = null;
$("#search").addEventListener("input", () => {
  clearTimeout(typing);
  typing = setTimeout(() => reload(1), 250);
});
$("#search").addEventListener("keydown", (ev) => {
  if (ev.key === "Enter") {
    clearTimeout(typing);
    reload(1);
  }
});
for (const id of ["#filter-state", "#sort", "#per-page"]) $(id).addEventListener("change", () => reload(1));
$("#refresh").addEventListener("click", () => reload(page));
$("#page-first").addEventListener("click", () => reload(1));
$("#page-prev").addEventListener("click", () => reload(Math.max(1, page - 1)));
$("#page-next").addEventListener("click", () => reload(Math.min(list.totalPages, page + 1)));
$("#page-last").addEventListener("click", () => reload(list.totalPages));

// --- dialogs ----------------------------------------------------------------

// openDialog shows dialog for k. On its form's submit, submit runs: when it
// succeeds, the dialog closes and the list is reloaded; else the dialog
// shows the error. submit may return what to do once the dialog is closed.
function openDialog(dialog, k, submit) {
  const form = $("form", dialog);
  for (const el of dialog.querySelectorAll(".key-name")) el.textContent = k ? (k.name || k.prefix + "…") : "";
  $(".error", form).textContent = "";
  form.onsubmit = async (ev) => {
    ev.preventDefault();
    const button = $("button[type=submit]", form);
    button.disabled = true;
    let then;
    try {
      then = await submit(form);
    } catch (err) {
      $(".error", form).textContent = err.message;
      return;
    } finally {
      button.disabled = false;
    }
    dialog.close();
    then?.();
    refresh().catch((err) => setStatus(err.message));
  };
  $(".cancel", form).onclick = () => dialog.close();
  dialog.showModal();
}

// checkedScopes are the scopes ticked in form, in the page's order.
function checkedScopes(form) {
  return [...form.querySelectorAll("input[name=scopes]:checked")].map((box) => box.value);
}

// quota reads an optional quota input: empty is 0, the plan's.
function quota(input) {
  return input.value === "" ? 0 : Number(input.value);
}

// The expiry inputs (datetime-local) hold UTC times, as the page shows
// them: utcInput is an ISO time as such a value, fromUTCInput the other way.
const utcInput = (iso) => new Date(iso).toISOString().slice(0, 16);
const fromUTCInput = (value) => new Date(value + "Z").toISOString();

$("#new-key").addEventListener("click", () => {
  const dialog = $("#create-dialog");
  $("form", dialog).reset();
  openDialog(dialog, null, async (form) => {
    const body = {
      plan: form.plan.value, name: form.name.value.trim(), perMinute: quota(form.perMinute), perDay: quota(form.perDay),
      scopes: checkedScopes(form),
    };
    if (form.expires.value) body.expires = fromUTCInput(form.expires.value);
    const created = await api("POST", "/keys", body);
    return () => showKeyOnce("New key " + created.name, created.key);
  });
});

function openRoll(k) {
  const dialog = $("#roll-dialog");
  $("form", dialog).reset();
  openDialog(dialog, k, async (form) => {
    const rolled = await api("POST", `/keys/${k.id}/roll`, { graceSeconds: Number(form.grace.value) });
    return () => showKeyOnce("New secret for " + (rolled.name || rolled.prefix + "…"), rolled.key);
  });
}

function openRevoke(k) {
  openDialog($("#revoke-dialog"), k, async () => {
    await api("POST", `/keys/${k.id}/revoke`);
  });
}

// openExpiry sets, moves or removes k's expiry: the one place on the page
// where an expiry changes.
function openExpiry(k) {
  const dialog = $("#expiry-dialog");
  const form = $("form", dialog);
  form.reset();
  $("#expiry-now").textContent = k.expires
    ? `${k.state === "expired" ? "Expired" : "Expires"} ${exact(k.expires)}.` : "Never expires now.";
  form.mode.value = k.expires ? "at" : "never";
  form.at.value = k.expires && k.state !== "expired" ? utcInput(k.expires) : "";
  form.at.oninput = () => { form.mode.value = "at"; };
  openDialog(dialog, k, async () => {
    let expires = null;
    if (form.mode.value === "at") {
      if (!form.at.value) throw new Error("Enter the time it expires at, or choose never.");
      expires = fromUTCInput(form.at.value);
    }
    await api("PATCH", `/keys/${k.id}`, { expires });
  });
}

// openEdit changes k's name, plan, own quotas and scopes. It sends only
// what staff changed, so that a page loaded before someone else's change
// does not turn that change back.
function openEdit(k) {
  const dialog = $("#edit-dialog");
  const form = $("form", dialog);
  const loaded = {
    name: k.name, plan: k.plan,
    perMinute: k.perMinute.own ? k.perMinute.value : 0, perDay: k.perDay.own ? k.perDay.value : 0,
    scopes: k.scopes.join(","),
  };
  form.name.value = loaded.name;
  form.plan.value = loaded.plan;
  form.perMinute.value = loaded.perMinute || "";
  form.perDay.value = loaded.perDay || "";
  // Empty is the plan's: the placeholder says how much that is.
  form.perMinute.placeholder = k.perMinute.own ? "plan's" : `plan's (${count(k.perMinute.value)})`;
  form.perDay.placeholder = k.perDay.own ? "plan's" : `plan's (${count(k.perDay.value)})`;
  for (const box of form.querySelectorAll("input[name=scopes]")) box.checked = k.scopes.includes(box.value);
  openDialog(dialog, k, async () => {
    const edited = {
      name: form.name.value.trim(), plan: form.plan.value, perMinute: quota(form.perMinute), perDay: quota(form.perDay),
      scopes: checkedScopes(form).join(","),
    };
    const changes = Object.fromEntries(Object.entries(edited).filter(([field, value]) => value !== loaded[field]));
    if ("scopes" in changes) changes.scopes = changes.scopes === "" ? [] : changes.scopes.split(",");
    if (Object.keys(changes).length > 0) await api("PATCH", `/keys/${k.id}`, changes);
  });
}

async function liftBan(k) {
  try {
    await api("POST", `/keys/${k.id}/lift-ban`);
    await refresh();
  } catch (err) {
    setStatus(err.message);
  }
}

// showKeyOnce shows a new key until "Done"; then it is gone from the page.
function showKeyOnce(title, key) {
  const dialog = $("#key-dialog");
  $("#key-title").textContent = title;
  $("#key-value").textContent = key;
  $("#copied").textContent = "";
  dialog.showModal();
}

$("#copy-key").addEventListener("click", async () => {
  const key = $("#key-value").textContent;
  try {
    await navigator.clipboard.writeText(key);
  } catch {
    getSelection().selectAllChildren($("#key-value"));
    $("#copied").textContent = "Selected: press Ctrl-C (⌘-C).";
    return;
  }
  $("#copied").textContent = "Copied.";
});

// However the dialog closes (Done, Escape), the key leaves the page.
function forgetKey() {
  $("#key-value").textContent = "";
}
$("#key-done").addEventListener("click", () => {
  forgetKey();
  $("#key-dialog").close();
});
$("#key-dialog").addEventListener("close", forgetKey);

// --- usage ------------------------------------------------------------------

// chartDays is how many days the by-day charts show: the history the
// staff API reads at most.
const chartDays = 90;

// showUsage shows k's use and history below the list; reveal scrolls it
// into view, for a click on Usage (on a phone, it is far below the card
// clicked).
async function showUsage(k, reveal = false) {
  usageKey = k;
  const [days, hours] = await Promise.all([api("GET", `/keys/${k.id}/usage?days=${chartDays}`), api("GET", `/keys/${k.id}/hours`), showHistory(k, 1)]);
  barChart($("#usage-hours"), hours, "hour");
  barChart($("#usage-days"), days, "day");
  const today = days[days.length - 1];
  $("#usage-name").textContent = k.name || k.prefix + "…";
  $("#usage-today").textContent =
    `Today (UTC ${today.day}): ${count(today.requests)} requests, ${count(today.limited)} refused with 429.`;
  $("#usage").hidden = false;
  render();
  if (reveal) $("#usage").scrollIntoView({ block: "nearest" });
}

// barChart draws series (oldest first: {hour or day, requests, limited})
// in figure as stacked bars, one per hour or day (per), the page's own SVG:
// admitted below, refused with 429 above, colours from the page's CSS,
// light or dark. Each period is a group whose data-period, data-requests
// and data-limited say what it holds.
function barChart(figure, series, per) {
  const ns = "http://www.w3.org/2000/svg";
  const when = (x) => (per === "hour" ? x.hour.replace("T", " ") : x.day);
  const width = 480, height = 100, slot = width / series.length;
  const peak = Math.max(1, ...series.map((x) => x.requests));
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svg.setAttribute("preserveAspectRatio", "none");
  svg.setAttribute("role", "img");
  svg.setAttribute("aria-label", `Requests per ${per}, last ${series.length} ${per}s (UTC)`);
  series.forEach((x, i) => {
    const group = document.createElementNS(ns, "g");
    for (const [name, value] of Object.entries({ "data-period": when(x), "data-requests": x.requests, "data-limited": x.limited })) {
      group.setAttribute(name, String(value));
    }
    const title = document.createElementNS(ns, "title");
    title.textContent = `${when(x)} UTC: ${count(x.requests)} requests, ${count(x.limited)} refused with 429`;
    group.append(title);
    let top = height;
    for (const [n, className] of [[x.requests - x.limited, "admitted"], [x.limited, "limited"]]) {
      if (n <= 0) continue;
      const bar = document.createElementNS(ns, "rect");
      const barHeight = (n / peak) * height;
      top -= barHeight;
      for (const [name, value] of Object.entries({ x: i * slot + 0.5, y: top, width: Math.max(1, slot - 1), height: barHeight })) {
        bar.setAttribute(name, String(value));
      }
      bar.setAttribute("class", className);
      group.append(bar);
    }
    svg.append(group);
  });
  const total = series.reduce((n, x) => n + x.requests, 0);
  figure.replaceChildren(svg, h("figcaption", { className: "muted" },
    `Last ${series.length} ${per}s by ${per} (UTC), from ${when(series[0])}: ${count(total)} requests, at most ${count(peak)} a${per === "hour" ? "n" : ""} ${per}.`));
}

// --- history ----------------------------------------------------------------

// What each audit action is, to staff.
const actions = {
  "key.created": "Issued", "key.rolled": "Rolled", "key.revoked": "Revoked", "key.expiry_changed": "Expiry changed",
  "key.ban_lifted": "Ban lifted", "key.banned": "Banned", "key.scopes_changed": "Scopes changed",
  "key.quota_changed": "Plan or quotas changed",
  "webhook.created": "Added", "webhook.changed": "Changed", "webhook.deleted": "Deleted",
  "webhook.secret_rolled": "Secret rolled", "webhook.paused": "Paused by the service", "webhook.event_resent": "Event resent",
  "webhook.test_sent": "Test event sent",
  "usage.threshold": "Day quota threshold crossed",
};

// The fields an audit record's details name, to staff.
const fieldNames = {
  name: "name", plan: "plan", per_minute: "per minute", per_day: "per day", expires: "expires", revoked: "revoked",
  ban_lifted: "ban lifted", banned_until: "banned until", previous_until: "old secret works until", scopes: "scopes",
  url: "URL", events: "events", description: "description", paused: "paused", reason: "reason",
  failing_since: "failing since", type: "event", webhook_id: "webhook-id", event: "event id",
  counted: "counted per", threshold: "threshold (%)", day: "day", limit: "day quota", used: "used", resetsAt: "resets at",
};

// detailValue is a value an audit record holds for field, as staff read it.
function detailValue(field, value) {
  if (Array.isArray(value)) return value.length ? value.join(", ") : "none";
  if (value === "" || value === null || value === undefined) {
    return { expires: "never", previous_until: "not at all", per_minute: "the plan's", per_day: "the plan's" }[field] || "none";
  }
  if (typeof value === "boolean") return value ? "yes" : "no";
  if ((field === "per_minute" || field === "per_day") && Number(value) === 0) return "the plan's";
  if (field === "plan") return planNames[value] || value;
  if (/^\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d/.test(value)) return exact(value.replace(" ", "T"));
  return typeof value === "number" ? count(value) : String(value);
}

// changeText is an audit record's details, in fieldNames' order: "plan: free
// → pro, per day: 500".
function changeText(details) {
  const order = Object.keys(fieldNames);
  const rank = (field) => (order.includes(field) ? order.indexOf(field) : order.length);
  return Object.entries(details || {}).sort(([a], [b]) => rank(a) - rank(b)).map(([field, v]) => {
    const name = fieldNames[field] || field;
    if (v && typeof v === "object" && !Array.isArray(v) && "new" in v) {
      return `${name}: ${detailValue(field, v.old)} → ${detailValue(field, v.new)}`;
    }
    return `${name}: ${detailValue(field, v)}`;
  }).join(", ");
}

// who made an audit record's change.
function who(item) {
  return item.actorEmail || { cli: "the keys command", system: "the service" }[item.actor] || item.actor;
}

// showHistoryPage shows a page of an audit trail (a key's or a webhook
// endpoint's) in the list `list`, its count in `counter` and hides `more` on
// the last page: the first page replaces what is shown, a later one is added
// below it.
function showHistoryPage(answer, list, counter, more) {
  const items = answer.items.map((item) => h("li", { dataset: { action: item.action } },
    h("time", { dateTime: item.created, textContent: when(item.created), title: exact(item.created) }),
    h("strong", { textContent: actions[item.action] || item.action, title: item.action }),
    ` by ${who(item)}`, item.address ? ` from ${item.address}` : "",
    item.details && Object.keys(item.details).length ? h("div", { className: "change", textContent: changeText(item.details) }) : null));
  if (answer.page === 1) list.replaceChildren(...items);
  else list.append(...items);
  const shown = list.children.length;
  counter.textContent = answer.totalItems === 0 ? "· no changes recorded"
    : `· ${count(shown)} of ${count(answer.totalItems)} change${answer.totalItems === 1 ? "" : "s"}, newest first`;
  more.hidden = answer.page >= answer.totalPages;
}

let historyPage = 0;

// showHistory shows page `at` of k's audit trail, newest first.
async function showHistory(k, at) {
  const answer = await api("GET", `/keys/${k.id}/history?page=${at}&perPage=20`);
  historyPage = answer.page;
  showHistoryPage(answer, $("#history"), $("#history-count"), $("#history-more"));
}

$("#history-more").addEventListener("click", () => {
  if (usageKey) showHistory(usageKey, historyPage + 1).catch((err) => setStatus(err.message));
});

$("#usage-close").addEventListener("click", () => {
  usageKey = null;
  $("#usage").hidden = true;
  render();
});

show();
