// The staff page: superusers sign in with PocketBase's JS SDK, then manage
// API keys through petstore's staff routes (/api/petstore/..., see staff/).
"use strict";

const pb = new PocketBase(location.origin);
const $ = (selector, root = document) => root.querySelector(selector);

let keys = [];      // the last list from the server
let plans = [];     // names, cheapest first
let usageKey = null; // the key whose use is shown

// h builds an element: h("td", {className: "x"}, "text", child...). Text is
// always set as text, never parsed as HTML.
function h(tag, props = {}, ...children) {
  const el = Object.assign(document.createElement(tag), props);
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

function when(iso) {
  return iso ? new Date(iso).toLocaleString() : "";
}

function setStatus(text) {
  $("#status").textContent = text;
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
    $(".error", form).textContent = err.status === 400
      ? "Wrong email or password, or not a staff account."
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
  for (const select of document.querySelectorAll("select[name=plan]")) {
    select.replaceChildren(...plans.map((name) => h("option", { value: name, textContent: name })));
  }
}

// --- the table --------------------------------------------------------------

async function refresh() {
  keys = await api("GET", "/keys");
  render();
  setStatus(`${keys.length} key${keys.length === 1 ? "" : "s"} · updated ${new Date().toLocaleTimeString()}`);
  if (usageKey) await showUsage(keys.find((k) => k.id === usageKey.id) || usageKey);
}

function matches(k) {
  const state = $("#filter-state").value;
  const q = $("#search").value.trim().toLowerCase();
  return (!state || k.state === state) &&
    (!q || k.name.toLowerCase().includes(q) || k.prefix.toLowerCase().includes(q) ||
      (k.previous && k.previous.prefix.toLowerCase().includes(q)));
}

function stateCell(k) {
  const labels = {
    active: "active",
    banned: `banned until ${when(k.bannedUntil)}`,
    revoked: "revoked",
    expired: "expired",
  };
  const cell = h("td", {}, h("span", { className: `state state-${k.state}`, textContent: labels[k.state] || k.state }));
  if (k.state === "active" && k.expires) cell.append(h("div", { className: "muted", textContent: `expires ${when(k.expires)}` }));
  return cell;
}

function quotaCell(q) {
  return h("td", {}, q.value.toLocaleString(), h("div", { className: "muted", textContent: q.own ? "own" : "plan's" }));
}

// todayCell is today's (UTC) requests against the day quota. The quota
// itself counts a 24-hour window from the key's first request, shown below.
function todayCell(k) {
  const used = k.today.requests;
  const share = k.perDay.value ? Math.min(1, used / k.perDay.value) : 0;
  const meter = h("div", { className: "meter" }, h("div"));
  meter.firstChild.style.width = `${Math.round(share * 100)}%`;
  const cell = h("td", { className: "today" }, `${used.toLocaleString()} of ${k.perDay.value.toLocaleString()}`, meter);
  if (k.today.limited) cell.append(h("div", { className: "muted", textContent: `${k.today.limited.toLocaleString()} refused` }));
  if (k.dayResets) {
    cell.append(h("div", { className: "muted", title: "The day quota counts 24 hours from the key's first request; saved every few seconds.",
      textContent: `quota window: ${k.dayUsed.toLocaleString()}, new at ${when(k.dayResets)}` }));
  }
  return cell;
}

function keyCell(k) {
  const cell = h("td", {}, h("code", { className: "prefix", textContent: k.prefix + "…" }));
  if (k.previous) {
    cell.append(h("div", { className: "muted previous" }, "old ", h("code", { textContent: k.previous.prefix + "…" }),
      ` works until ${when(k.previous.until)}`));
  }
  return cell;
}

function actionsCell(k) {
  const button = (label, action) => {
    const b = h("button", { type: "button", className: "small", textContent: label, onclick: action });
    b.dataset.action = label.toLowerCase();
    return b;
  };
  const cell = h("td", { className: "actions" }, button("Usage", () => showUsage(k).catch((err) => setStatus(err.message))));
  if (k.state === "banned") cell.append(button("Lift ban", () => liftBan(k)));
  if (k.state !== "revoked") {
    cell.append(button("Change", () => openEdit(k)), button("Roll", () => openRoll(k)), button("Revoke", () => openRevoke(k)));
  }
  return cell;
}

function render() {
  const rows = keys.filter(matches).map((k) => {
    const tr = h("tr", { className: usageKey?.id === k.id ? "selected" : "" },
      h("td", { className: "name", textContent: k.name || "(no name)" }),
      keyCell(k),
      h("td", { textContent: k.plan }),
      stateCell(k),
      quotaCell(k.perMinute),
      quotaCell(k.perDay),
      todayCell(k),
      h("td", { textContent: when(k.lastUsed) || "never" }),
      actionsCell(k));
    tr.dataset.id = k.id;
    return tr;
  });
  $("#keys tbody").replaceChildren(...rows);
  $("#empty").hidden = rows.length > 0;
}

$("#filter-state").addEventListener("change", render);
$("#search").addEventListener("input", render);
$("#refresh").addEventListener("click", () => refresh().catch((err) => setStatus(err.message)));

// --- dialogs ----------------------------------------------------------------

// openDialog shows dialog for k. On its form's submit, submit runs: when it
// succeeds, the dialog closes and the table is reloaded; else the dialog
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

// quota reads an optional quota input: empty is 0, the plan's.
function quota(input) {
  return input.value === "" ? 0 : Number(input.value);
}

$("#new-key").addEventListener("click", () => {
  const dialog = $("#create-dialog");
  $("form", dialog).reset();
  openDialog(dialog, null, async (form) => {
    const body = { plan: form.plan.value, name: form.name.value.trim(), perMinute: quota(form.perMinute), perDay: quota(form.perDay) };
    if (form.expires.value) body.expires = new Date(form.expires.value).toISOString();
    const created = await api("POST", "/keys", body);
    return () => showKeyOnce("New key " + (created.name || ""), created.key);
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

function openEdit(k) {
  const dialog = $("#edit-dialog");
  const form = $("form", dialog);
  form.name.value = k.name;
  form.plan.value = k.plan;
  form.perMinute.value = k.perMinute.own ? k.perMinute.value : "";
  form.perDay.value = k.perDay.own ? k.perDay.value : "";
  openDialog(dialog, k, async () => {
    await api("PATCH", `/keys/${k.id}`, { name: form.name.value.trim(), plan: form.plan.value,
      perMinute: quota(form.perMinute), perDay: quota(form.perDay) });
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
    // Without a secure context (plain http other than localhost) there is no
    // clipboard API: select the key for Ctrl-C.
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

async function showUsage(k) {
  usageKey = k;
  const days = await api("GET", `/keys/${k.id}/usage?days=30`);
  const today = days[days.length - 1];
  $("#usage-name").textContent = k.name || k.prefix + "…";
  $("#usage-today").textContent =
    `Today (UTC ${today.day}): ${today.requests.toLocaleString()} requests, ${today.limited.toLocaleString()} refused with 429. ` +
    `Last 30 days: ${days.reduce((n, d) => n + d.requests, 0).toLocaleString()} requests.`;
  $("#usage").hidden = false;
  drawChart(days);
  render();
}

function drawChart(days) {
  const canvas = $("#usage-chart");
  const data = {
    labels: days.map((d) => d.day.slice(5)),
    datasets: [
      { label: "served", data: days.map((d) => d.requests - d.limited), backgroundColor: "#1b63c6" },
      { label: "refused (429)", data: days.map((d) => d.limited), backgroundColor: "#d9822b" },
    ],
  };
  const chart = Chart.getChart(canvas);
  if (chart) {
    chart.data = data;
    chart.update();
    return;
  }
  new Chart(canvas, {
    type: "bar",
    data,
    options: {
      animation: false,
      maintainAspectRatio: false,
      scales: { x: { stacked: true }, y: { stacked: true, beginAtZero: true, ticks: { precision: 0 } } },
      plugins: { legend: { position: "bottom" } },
    },
  });
}

$("#usage-close").addEventListener("click", () => {
  usageKey = null;
  $("#usage").hidden = true;
  render();
});

show();
