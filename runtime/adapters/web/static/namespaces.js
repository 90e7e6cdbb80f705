// Namespaces at a glance (listed by memory.namespaces and kg.namespaces): notes, facts, entities and edges (kg.stats) and feedback events
// (brain.state) per namespace, with the last write. A click makes it the page's namespace.
import { call, h, fmtTime, namespace, setNamespace, graphNamespaces } from "./app.js";

export async function render(root) {
  root.append(h("h2", {}, "Namespaces"));
  let list = [];
  try { list = (await call("memory.namespaces", {}, { ns: "" })).namespaces; } catch (_) { /* no memory pack */ }
  const names = [...new Set([...list.map((n) => n.name), ...(await graphNamespaces())])];
  const cur = namespace();
  if (!names.includes(cur || "default")) names.push(cur || "default");
  const cards = h("div", { class: "cards", id: "namespace-cards" });
  root.append(cards);
  for (const name of names.sort()) {
    const mem = list.find((n) => n.name === name);
    const kg = await call("kg.stats", {}, { ns: name }).catch(() => null);
    const br = await call("brain.state", {}, { ns: name }).catch(() => null);
    const last = [mem && mem.last_write, kg && kg.last_write].filter(Boolean).sort().pop();
    const rows = [["notes", mem ? mem.notes : 0], ["archived", mem ? mem.archived : 0],
      ["superseded", mem ? mem.superseded : 0], ["entities", kg ? kg.entities : "—"],
      ["facts", kg ? `${kg.facts} (${kg.facts_valid_now} valid now)` : "—"], ["fact versions", kg ? kg.versions : "—"],
      ["edges", kg ? kg.edges : "—"], ["feedback", br ? `${br.state.feedback_events} events` : "—"],
      ["last write", fmtTime(last)]];
    const selected = (cur || "default") === name;
    cards.append(h("div", { class: "card" + (selected ? " selected" : ""), dataset: { namespace: name },
                            onclick: () => { setNamespace(name); location.hash = "#/recall"; } },
      h("h3", {}, name), h("dl", {}, rows.map(([k, v]) => [h("dt", {}, k), h("dd", { dataset: { key: k } }, String(v))]))));
  }
}
