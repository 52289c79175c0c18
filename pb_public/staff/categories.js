// The staff page's categories: the named ones and the numbers pets carry
// that no category names, with their pets, through /api/petstore/categories
// (docs/staff.md). One form names a category: a new number (or, left
// empty, the one after the highest in use), or a new name for a number
// already named. It uses staff.js's helpers (pb, $, h, api, count) and
// webhooks.js's signedIn.
"use strict";

let categories = []; // the last list: [{id, name, description, pets}], name "" when unnamed

// categoriesStatus says what happened; an error is drawn as the other
// forms' errors are.
function categoriesStatus(text, error = false) {
  const status = $("#categories-status");
  status.textContent = text;
  status.classList.toggle("error", error);
}

const categoriesError = (err) => categoriesStatus(err.message, true);

async function refreshCategories() {
  $("#categories").hidden = !signedIn();
  if (!signedIn()) return;
  categories = (await api("GET", "/categories")).items;
  renderCategories();
  const named = categories.filter((c) => c.name).length;
  categoriesStatus(`${named} named, ${categories.length - named} unnamed · ${updatedNow()}`);
}

// fillForm puts number (and name) in the form and leaves the cursor in the
// name, for staff to type and save.
function fillForm(number, name) {
  const form = $("#category-form");
  form.number.value = String(number);
  form.name.value = name;
  form.name.focus();
  form.name.select();
}

function categoryButton(label, action, run) {
  const b = h("button", { type: "button", className: "small", textContent: label, dataset: { action } });
  b.addEventListener("click", async () => {
    b.disabled = true;
    try {
      await run();
    } catch (err) {
      categoriesError(err);
    } finally {
      b.disabled = false;
    }
  });
  return b;
}

function renderCategories() {
  const rows = categories.map((c) => {
    const actions = c.name
      ? [categoryButton("Rename", "rename", async () => fillForm(c.id, c.name)),
        categoryButton("Delete", "delete", async () => {
          if (!confirm(`Delete category ${c.id}, ${c.name}? Clients no longer see its name.`)) return;
          await api("DELETE", `/categories/${c.id}`);
          await refreshCategories();
        })]
      : [categoryButton("Name it", "name", async () => fillForm(c.id, ""))];
    return h("tr", { dataset: { id: String(c.id) } },
      h("td", { className: "number", textContent: String(c.id), dataset: { label: "Number" } }),
      h("td", { className: "category-name", dataset: { label: "Name" } },
        c.name ? c.name : h("span", { className: "unnamed", textContent: `unnamed category ${c.id}` })),
      h("td", { className: "pets", textContent: `${count(c.pets)} pet${c.pets === 1 ? "" : "s"}`, dataset: { label: "Pets" } }),
      h("td", { className: "actions" }, h("div", {}, ...actions)));
  });
  $("#categories-list tbody").replaceChildren(...rows);
  $("#categories-list").hidden = rows.length === 0;
}

$("#category-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const form = ev.target;
  const button = $("button[type=submit]", form);
  button.disabled = true;
  try {
    const number = form.number.value.trim();
    const name = form.name.value.trim();
    const named = categories.find((c) => String(c.id) === number && c.name);
    const saved = named
      ? await api("PATCH", `/categories/${number}`, { name })
      : await api("POST", "/categories", number ? { number: Number(number), name } : { name });
    form.reset();
    await refreshCategories();
    categoriesStatus(`Category ${saved.id} is named ${saved.name}.`);
  } catch (err) {
    categoriesError(err);
  } finally {
    button.disabled = false;
  }
});

pb.authStore.onChange(() => refreshCategories().catch(categoriesError));
refreshCategories().catch(categoriesError);
