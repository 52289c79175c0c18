// The staff page's customers: who owns keys, on which plan, through
// /api/petstore/customers (docs/customers.md). One form makes a customer or
// changes the one picked (its plan moves every key of it at once); another
// gives a key to a customer, or to none. It uses staff.js's helpers (pb, $,
// h, api, count, updatedNow, barChart, chartDays, and refresh, the keys' list) and webhooks.js's signedIn.
"use strict";

let customers = []; // the last list: [{id, name, contact, notes, plan, keys, today: {served, refused}}]

// customerName is the name of the customer with the given id, for the keys'
// list; "" for none.
function customerName(id) {
  return customers.find((c) => c.id === id)?.name || "";
}

function customersStatus(text, error = false) {
  const status = $("#customers-status");
  status.textContent = text;
  status.classList.toggle("error", error);
}

const customersError = (err) => customersStatus(err.message, true);

async function refreshCustomers() {
  $("#customers").hidden = !signedIn();
  if (!signedIn()) return;
  customers = (await api("GET", "/customers")).items;
  renderCustomers();
  const select = $("#customer-assign-form [name=customer]");
  select.replaceChildren(h("option", { value: "", textContent: "(no customer)" }),
    ...customers.map((c) => h("option", { value: c.id, textContent: c.name })));
  customersStatus(`${count(customers.length)} customer${customers.length === 1 ? "" : "s"} · ${updatedNow()}`);
  // The keys' list names their customers.
  for (const el of document.querySelectorAll("#keys .customer[data-customer]")) el.textContent = customerName(el.dataset.customer);
}

function customerButton(label, action, run) {
  const b = h("button", { type: "button", className: "small", textContent: label, dataset: { action } });
  b.addEventListener("click", async () => {
    b.disabled = true;
    try {
      await run();
    } catch (err) {
      customersError(err);
    } finally {
      b.disabled = false;
    }
  });
  return b;
}

// editCustomer fills the form with c, whose save then changes it.
function editCustomer(c) {
  const form = $("#customer-form");
  form.id.value = c.id;
  form.name.value = c.name;
  form.contact.value = c.contact;
  form.notes.value = c.notes;
  form.plan.value = c.plan;
  $("button[type=submit]", form).textContent = "Save changes";
  form.name.focus();
}

// showCustomerKeys lists c's keys, revoked ones included, with today's use,
// and charts their last 48 hours and 90 days, added up.
async function showCustomerKeys(c) {
  const [shown, hours, days] = await Promise.all([api("GET", `/customers/${c.id}`), api("GET", `/customers/${c.id}/hours`),
    api("GET", `/customers/${c.id}/usage?days=${chartDays}`)]);
  barChart($("#customer-hours"), hours, "hour");
  barChart($("#customer-days"), days, "day");
  $("#customer-keys-title").textContent = `Keys of ${shown.name} (plan ${shown.plan})`;
  const rows = shown.keyList.map((k) => h("tr", { dataset: { id: k.id } },
    h("td", { textContent: k.name, dataset: { label: "Name" } }),
    h("td", { className: "prefix", textContent: k.prefix, dataset: { label: "Prefix" } }),
    h("td", { textContent: k.state, dataset: { label: "State" } }),
    h("td", { textContent: count(k.today.served), dataset: { label: "Today" } }),
    h("td", { className: "key-id", textContent: k.id, dataset: { label: "Id" } })));
  $("#customer-keys tbody").replaceChildren(...rows);
  $("#customer-keys").hidden = false;
}

function renderCustomers() {
  const rows = customers.map((c) => h("tr", { dataset: { id: c.id } },
    h("td", { className: "customer-name", textContent: c.name, dataset: { label: "Name" } }),
    h("td", { className: "plan", textContent: c.plan, dataset: { label: "Plan" } }),
    h("td", { className: "keys", textContent: count(c.keys), dataset: { label: "Keys" } }),
    h("td", { className: "today", dataset: { label: "Today (UTC)" } }, h("span", { className: "served", textContent: count(c.today.served) }),
      c.today.refused ? h("span", { className: "refused", textContent: ` · ${count(c.today.refused)} refused` }) : null),
    h("td", { className: "contact", textContent: c.contact, dataset: { label: "Contact" } }),
    h("td", { className: "actions" }, h("div", {},
      customerButton("Edit", "edit", async () => editCustomer(c)),
      customerButton("Keys", "keys", async () => showCustomerKeys(c))))));
  $("#customers-list tbody").replaceChildren(...rows);
  $("#customers-list").hidden = rows.length === 0;
}

// submitting runs save with the form's button disabled, and reports its
// error in the status line.
function submitting(form, save) {
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const button = $("button[type=submit]", form);
    button.disabled = true;
    try {
      await save(form);
    } catch (err) {
      customersError(err);
    } finally {
      button.disabled = false;
    }
  });
}

submitting($("#customer-form"), async (form) => {
  const body = { name: form.name.value.trim(), contact: form.contact.value.trim(), notes: form.notes.value, plan: form.plan.value };
  const id = form.id.value;
  const saved = id ? await api("PATCH", `/customers/${id}`, body) : await api("POST", "/customers", body);
  form.reset();
  form.id.value = "";
  $("button[type=submit]", form).textContent = "Add customer";
  await Promise.all([refreshCustomers(), refresh()]); // its keys moved with its plan
  customersStatus(`Customer ${saved.name} is on plan ${saved.plan}, with ${count(saved.keys)} key${saved.keys === 1 ? "" : "s"}.`);
});

submitting($("#customer-assign-form"), async (form) => {
  const k = await api("PUT", `/keys/${encodeURIComponent(form.key.value.trim())}/customer`, { customer: form.customer.value });
  form.reset();
  await Promise.all([refreshCustomers(), refresh()]); // the key's plan moved
  const owner = customers.find((c) => c.id === k.customer);
  customersStatus(owner ? `Key ${k.name} belongs to ${owner.name}, on plan ${k.plan}.` : `Key ${k.name} belongs to no customer.`);
});

pb.authStore.onChange(() => refreshCustomers().catch(customersError));
refreshCustomers().catch(customersError);
