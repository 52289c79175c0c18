// The staff page's overview of use: the day windows near their quota today
// and the top customers this month, through /api/petstore/usage/near-limit
// and /api/petstore/usage/top-customers (docs/usage.md). Read-only. It uses
// staff.js's helpers (pb, $, h, api, count, updatedNow) and webhooks.js's
// signedIn.
"use strict";

function useStatus(text, error = false) {
  $("#use-status").textContent = text;
  $("#use-status").classList.toggle("error", error);
}

// percentCell is a share of a quota, in figures and as a meter, full (in
// the refusals' colour) at 100 % or more.
function percentCell(label, percent, title) {
  const meter = h("div", { className: percent >= 100 ? "meter full" : "meter", title }, h("div"));
  meter.firstChild.style.width = `${Math.min(100, percent)}%`;
  return h("td", { className: "percent", dataset: { label } }, h("span", { textContent: `${percent.toFixed(1)} %` }), meter);
}

// nearRow is a window near its limit: a key's (with its customer, if any)
// or a customer's, shared by its keys.
function nearRow(w, kind) {
  const who = kind === "customer"
    ? h("td", { className: "name", dataset: { label: "Customer" } }, h("strong", { textContent: w.name }),
      h("div", { className: "muted", textContent: `customer · ${count(w.keys)} key${w.keys === 1 ? "" : "s"} used today` }))
    : h("td", { className: "name", dataset: { label: "Key" } }, h("strong", { textContent: w.name }),
      h("div", { className: "muted key-id", textContent: `key ${w.id}` }));
  return h("tr", { dataset: { id: w.id, kind } }, who,
    h("td", { className: "customer", textContent: kind === "customer" ? "" : w.customerName, dataset: { label: "Customer" } }),
    h("td", { className: "plan", textContent: w.plan, dataset: { label: "Plan" } }),
    h("td", { className: "used", textContent: `${count(w.used)} of ${count(w.limit)}`, dataset: { label: "Used today" } }),
    percentCell("Of the day quota", w.percent, `${count(w.used)} of ${count(w.limit)} requests today`));
}

function topRow(c) {
  const quota = c.quota
    ? percentCell("Of its quota", c.quota.percent, `${count(c.quota.used)} admitted of ${count(c.quota.perDay)} a day × ${c.quota.days} days`)
    : h("td", { className: "percent muted", textContent: "per key", title: "Its plan counts per key: each key has its own quota", dataset: { label: "Of its quota" } });
  return h("tr", { dataset: { id: c.id } },
    h("td", { className: "name", dataset: { label: "Customer" } }, h("strong", { textContent: c.name })),
    h("td", { className: "plan", textContent: c.plan, dataset: { label: "Plan" } }),
    h("td", { className: "requests", textContent: count(c.requests), dataset: { label: "Requests" } }),
    h("td", { className: "limited", textContent: count(c.limited), dataset: { label: "Refused (429)" } }),
    quota);
}

async function refreshUse() {
  $("#use").hidden = !signedIn();
  if (!signedIn()) return;
  const [near, top] = await Promise.all([api("GET", "/usage/near-limit"), api("GET", "/usage/top-customers")]);
  const nearRows = [...near.customers.map((w) => nearRow(w, "customer")), ...near.keys.map((w) => nearRow(w, "key"))];
  $("#near-limit tbody").replaceChildren(...nearRows);
  $("#near-limit").hidden = nearRows.length === 0;
  $("#near-limit-empty").hidden = nearRows.length > 0;
  $("#top-customers tbody").replaceChildren(...top.items.map(topRow));
  $("#top-customers").hidden = top.items.length === 0;
  $("#top-customers-empty").hidden = top.items.length > 0;
  useStatus(`${near.day}: ${count(nearRows.length)} past ${near.percent} % · month ${top.month} · ${updatedNow()}`);
}

const refreshUseSaying = () => refreshUse().catch((err) => useStatus(err.message, true));
$("#use-refresh").addEventListener("click", refreshUseSaying);
pb.authStore.onChange(refreshUseSaying);
refreshUseSaying();
