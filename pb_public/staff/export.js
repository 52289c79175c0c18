// The staff page's CSV export of the usage history (GET
// /api/petstore/usage.csv, docs/usage.md): a range of UTC days, by day or
// hour, per key or per customer. The route wants the superuser's token, which
// a link cannot send: the page fetches the file and hands it to the browser
// as a download. It uses staff.js's pb and $.
"use strict";

// utcDay is the UTC day daysAgo days before today, as a date input holds it.
const utcDay = (daysAgo) => new Date(Date.now() - daysAgo * 86400000).toISOString().slice(0, 10);

function exportStatus(text, error = false) {
  $("#export-status").textContent = text;
  $("#export-status").classList.toggle("error", error);
}

{
  const form = $("#export-form");
  form.from.value = utcDay(29);
  form.to.value = utcDay(0);
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const q = new URLSearchParams({ from: form.from.value, to: form.to.value, by: form.by.value, per: form.per.value });
    const button = $("button[type=submit]", form);
    button.disabled = true;
    exportStatus("Exporting…");
    try {
      const answer = await fetch("/api/petstore/usage.csv?" + q, { headers: { Authorization: pb.authStore.token } });
      if (!answer.ok) throw new Error((await answer.json().catch(() => ({}))).message || `The service answered ${answer.status}.`);
      const file = URL.createObjectURL(await answer.blob());
      const name = `usage-${form.from.value}-${form.to.value}.csv`;
      const link = Object.assign(document.createElement("a"), { href: file, download: name });
      link.click();
      setTimeout(() => URL.revokeObjectURL(file), 60000);
      exportStatus(`Saved ${name}.`);
    } catch (err) {
      exportStatus(err.message, true);
    } finally {
      button.disabled = false;
    }
  });
}
