// The staff page's nodes: in cluster mode, every node with its role, its
// term, its lag and what its data does with the replica, and which one
// leads, through /api/petstore/cluster (docs/staff.md). Read-only: nodes
// join and leave by their own start and stop. On a single server it says so
// in one line. It uses staff.js's helpers (pb, $, h, api, updatedNow) and
// webhooks.js's signedIn.
"use strict";

// nodesEvery is how often the list is read again while the page is open
// and visible: a failover shows within a few seconds.
const nodesEvery = 5000;

function nodesStatus(text) {
  $("#nodes-status").textContent = text;
}

// lagText is a follower's lag; for the leader, what of its commits the
// replica lacks, when it says so (a failover would lose them).
function lagText(n) {
  if (n.leader && n.unshipped) return `it leads; its commits of the last ${n.unshipped} s are not in the replica`;
  if (n.leader) return "none: it leads";
  const s = n.lag.seconds.toFixed(1);
  const tx = n.lag.transactions;
  return `${s} s · ${tx} transaction${tx === 1 ? "" : "s"}`;
}

function roleBadge(n) {
  const role = n.leader ? "leader" : n.role;
  const kind = { leader: "active", follower: "expired", candidate: "banned" }[role] || "expired";
  return h("span", { className: `state state-${kind}`, textContent: role });
}

function renderNodes(view) {
  const rows = view.nodes.map((n) => h("tr", { dataset: { node: n.node }, className: n.leader ? "leader" : "" },
    h("td", { className: "node-name", dataset: { label: "Node" } }, h("strong", { textContent: n.node })),
    h("td", { className: "node-url", dataset: { label: "URL" } }, h("code", { textContent: n.url })),
    h("td", { className: "node-role", dataset: { label: "Role" } }, roleBadge(n)),
    h("td", { className: "node-term", textContent: n.leader ? String(view.term) : "", dataset: { label: "Term" } }),
    h("td", { className: "node-lag", textContent: lagText(n), dataset: { label: "Lag" } }),
    h("td", { className: "node-replica", textContent: n.replica, dataset: { label: "Replica" } })));
  $("#nodes-list tbody").replaceChildren(...rows);
}

async function refreshNodes() {
  $("#nodes").hidden = !signedIn();
  if (!signedIn()) return;
  const view = (await api("GET", "/cluster")).cluster;
  $("#nodes-single").hidden = view !== null;
  $("#nodes-list").hidden = view === null;
  $("#nodes-refresh").hidden = view === null;
  if (view === null) {
    nodesStatus("");
    return;
  }
  renderNodes(view);
  const leader = view.leader ? `Leader ${view.leader}, term ${view.term}` : "No leader elected yet";
  nodesStatus(`${leader} · ${view.nodes.length} node${view.nodes.length === 1 ? "" : "s"} in cluster ${view.name} · ${updatedNow()}`);
}

function refreshNodesSaying() {
  refreshNodes().catch((err) => nodesStatus(err.message));
}

$("#nodes-refresh").addEventListener("click", refreshNodesSaying);
setInterval(() => {
  if (!document.hidden && !$("#nodes-list").hidden) refreshNodesSaying();
}, nodesEvery);
pb.authStore.onChange(refreshNodesSaying);
refreshNodesSaying();
