// The staff page's webhooks: the endpoints, their deliveries, and the
// actions on them, through /api/petstore/webhooks (docs/webhooks.md). It
// uses staff.js's helpers (pb, $, h, api, when, exact, copyText,
// showHistoryPage).
"use strict";

let endpoints = [];        // the last list: [{id, url, events, paused, pausedReason, pending, failed, ...}]
let eventTypes = [];       // the types an endpoint may subscribe to
let attemptsOf = null;     // the endpoint whose deliveries are shown
let historyOf = null;      // the endpoint whose history is shown, deleted since or not
let webhookHistoryPage = 0;

function webhooksStatus(text) {
  $("#webhooks-status").textContent = text;
}

function signedIn() {
  return pb.authStore.isValid && pb.authStore.isSuperuser;
}

async function refreshWebhooks() {
  $("#webhooks").hidden = !signedIn();
  if (!signedIn()) return;
  const answer = await api("GET", "/webhooks");
  endpoints = answer.items;
  eventTypes = answer.types;
  renderWebhooks();
  if (attemptsOf) {
    const e = endpoints.find((e) => e.id === attemptsOf.id);
    if (e) await showAttempts(e); else $("#attempts").hidden = true;
  }
  // A deleted endpoint's history stays, its deletion on top.
  if (historyOf) await showWebhookHistory(endpoints.find((e) => e.id === historyOf.id) || historyOf, 1);
  webhooksStatus(`${endpoints.length} endpoint${endpoints.length === 1 ? "" : "s"} · ${updatedNow()}`);
}

// webhookButton runs run on a click, then shows the list again, and what
// run returned, if anything, on the status line.
function webhookButton(label, action, run) {
  const b = h("button", { type: "button", className: "small", textContent: label, dataset: { action } });
  b.addEventListener("click", async () => {
    b.disabled = true;
    try {
      const said = await run();
      await refreshWebhooks();
      if (typeof said === "string") webhooksStatus(said);
    } catch (err) {
      webhooksStatus(err.message);
    } finally {
      b.disabled = false;
    }
  });
  return b;
}

function renderWebhooks() {
  const rows = endpoints.map((e) => {
    const state = e.paused
      ? h("div", {}, h("span", { className: "state state-revoked", textContent: "paused" }),
        e.pausedReason ? h("div", { className: "muted", textContent: e.pausedReason }) : null)
      : e.failingSince
        ? h("div", {}, h("span", { className: "state state-banned", textContent: "failing" }),
          h("div", { className: "muted", textContent: `since ${when(e.failingSince)}`, title: exact(e.failingSince) }))
        : h("span", { className: "state state-active", textContent: "active" });
    const actions = [
      webhookButton("Deliveries", "attempts", async () => { await showAttempts(e); }),
      webhookButton("History", "history", async () => { historyOf = e; }),
      webhookButton("Send test event", "test", async () => {
        await api("POST", `/webhooks/${e.id}/test`);
        return "A test event is on its way.";
      }),
      e.paused ? webhookButton("Resume", "resume", () => api("PATCH", `/webhooks/${e.id}`, { paused: false }))
        : webhookButton("Pause", "pause", () => api("PATCH", `/webhooks/${e.id}`, { paused: true })),
      webhookButton("Roll secret", "roll", async () => {
        if (!confirm("Make a new secret? The old one signs beside it for 24 hours.")) return;
        const rolled = await api("POST", `/webhooks/${e.id}/roll`, { graceSeconds: 86400 });
        showSecret(rolled.secret);
      }),
      webhookButton("Delete", "delete", async () => {
        if (!confirm(`Delete the endpoint ${e.url} and its waiting events?`)) return;
        await api("DELETE", `/webhooks/${e.id}`);
        if (attemptsOf?.id === e.id) attemptsOf = null;
      }),
    ];
    return h("tr", { dataset: { id: e.id } },
      h("td", { className: "url", dataset: { label: "URL" } }, h("code", { textContent: e.url }),
        e.description ? h("div", { className: "muted", textContent: e.description }) : null),
      h("td", { className: "events", textContent: e.events.join(", "), dataset: { label: "Events" } }),
      h("td", { className: "state-cell", dataset: { label: "State" } }, state),
      h("td", { className: "waiting", textContent: `${e.pending} pending · ${e.failed} failed`, dataset: { label: "Waiting" } }),
      h("td", { className: "actions" }, h("div", {}, ...actions)));
  });
  $("#webhooks-list tbody").replaceChildren(...rows);
  $("#webhooks-list").hidden = rows.length === 0;
}

async function showAttempts(e) {
  attemptsOf = e;
  const answer = await api("GET", `/webhooks/${e.id}/attempts?limit=50`);
  $("#attempts-url").textContent = e.url;
  const rows = answer.items.map((a) => h("tr", { dataset: { event: a.event } },
    h("td", { textContent: when(a.created), title: exact(a.created), dataset: { label: "When" } }),
    h("td", { dataset: { label: "Event" } }, h("div", { textContent: a.type }), h("code", { className: "muted", textContent: a.webhookId }),
      a.events > 1 ? h("div", { className: "muted batch", textContent: `the last of ${a.events} delivered in a row` }) : null),
    h("td", { className: "answer", textContent: a.status ? String(a.status) : (a.error || "no answer"), dataset: { label: "Answer" } }),
    h("td", { textContent: a.events > 1 ? `${a.latencyMs} ms at most` : `${a.latencyMs} ms`, dataset: { label: "Latency" } }),
    h("td", { dataset: { label: "First bytes of the answer" } }, h("code", { className: "response", textContent: a.response })),
    h("td", {}, a.eventStatus === "failed"
      ? webhookButton("Resend", "resend", async () => {
        await api("POST", `/webhooks/${e.id}/events/${a.event}/resend`);
        return "The event is sent again.";
      })
      : h("span", { className: "muted", textContent: a.eventStatus }))));
  $("#attempts-list tbody").replaceChildren(...rows);
  $("#attempts-empty").hidden = rows.length > 0;
  $("#attempts").hidden = false;
}

// showWebhookHistory shows page `at` of e's audit trail, newest first.
async function showWebhookHistory(e, at) {
  historyOf = e;
  const answer = await api("GET", `/webhooks/${e.id}/history?page=${at}&perPage=20`);
  webhookHistoryPage = answer.page;
  $("#webhook-history-url").textContent = e.url;
  showHistoryPage(answer, $("#webhook-history"), $("#webhook-history-count"), $("#webhook-history-more"));
  $("#webhook-history-section").hidden = false;
}

function showSecret(secret) {
  $("#secret-value").textContent = secret;
  $("#secret-dialog").showModal();
}

$("#copy-secret").addEventListener("click", () => copyText($("#secret-value").textContent, $("#copy-secret"), $("#secret-value")));
$("#secret-done").addEventListener("click", () => {
  $("#secret-value").textContent = "";
  $("#secret-dialog").close();
});
$("#attempts-close").addEventListener("click", () => {
  attemptsOf = null;
  $("#attempts").hidden = true;
});
$("#webhook-history-more").addEventListener("click", () => {
  if (historyOf) showWebhookHistory(historyOf, webhookHistoryPage + 1).catch((err) => webhooksStatus(err.message));
});
$("#webhook-history-close").addEventListener("click", () => {
  historyOf = null;
  $("#webhook-history-section").hidden = true;
});
$("#webhooks-refresh").addEventListener("click", () => refreshWebhooks().catch((err) => webhooksStatus(err.message)));

$("#new-webhook").addEventListener("click", () => {
  const dialog = $("#webhook-dialog");
  const form = $("form", dialog);
  form.reset();
  $(".error", form).textContent = "";
  $("fieldset.event-types", form).replaceChildren(h("legend", { textContent: "Send these events" }),
    ...eventTypes.map((t) => h("label", {}, h("input", { type: "checkbox", name: "events", value: t, checked: t === "pet.created" }), " ", t)));
  form.onsubmit = async (ev) => {
    ev.preventDefault();
    const button = $("button[type=submit]", form);
    button.disabled = true;
    try {
      const events = [...form.querySelectorAll("input[name=events]:checked")].map((box) => box.value);
      const body = { url: form.url.value.trim(), events };
      if (form.description.value.trim()) body.description = form.description.value.trim();
      const created = await api("POST", "/webhooks", body);
      dialog.close();
      showSecret(created.secret);
      await refreshWebhooks();
    } catch (err) {
      $(".error", form).textContent = err.message;
    } finally {
      button.disabled = false;
    }
  };
  $(".cancel", form).onclick = () => dialog.close();
  dialog.showModal();
});

pb.authStore.onChange(() => refreshWebhooks().catch((err) => webhooksStatus(err.message)));
refreshWebhooks().catch((err) => webhooksStatus(err.message));
