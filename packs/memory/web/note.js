// One note: its content, metadata and neighbours (the timeline's bars and the graph link here).
import { call, h, fmtTime } from "/ui/app.js";
import { neighbours, neighbourList } from "./shared.js";

export async function render(root, q) {
  const id = Number(q.id);
  const res = await call("memory.get", { ids: [id] });
  if (!res.notes.length) { root.append(h("p", { class: "muted" }, `note ${id} does not exist here`)); return; }
  const n = res.notes[0];
  root.append(h("h2", {}, `Note ${n.id}`), h("div", { class: "note-detail" },
    h("p", { class: "content" }, n.content),
    h("p", { class: "muted" }, `${n.scope || "no scope"} · ${n.kind || "no kind"} · ${n.thread || "no thread"} · ` +
      `occurred ${fmtTime(n.occurred_at)} · stored ${fmtTime(n.created_at)} · salience ${n.salience.toFixed(2)}` +
      (n.superseded_by ? ` · superseded by ${n.superseded_by}` : "") + (n.archived_at ? " · archived" : "")),
    n.entities.length ? h("p", {}, "mentions: ", n.entities.map((e, i) => [i ? ", " : "",
      h("a", { href: `#/timeline?subject=${encodeURIComponent(e)}` }, e)])) : null,
    h("p", {}, h("a", { href: `#/graph?node=m:${n.id}` }, "open in the graph")),
    h("h3", {}, "Neighbours"), neighbourList(await neighbours(n.id))));
}
