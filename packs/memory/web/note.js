// One note: its full text and metadata, its versions (memory.history), its neighbours, and the forms that tidy it
// (note_tidy.js: edit, archive, forget). A forgotten note's address shows its tombstone: what is left of it.
import { call, h, fmtTime } from "/ui/app.js";
import { neighbours, neighbourList } from "./shared.js";
import { status } from "./notes.js";
import { tidyForms, takeOutcome } from "./note_tidy.js";

function outcomeBox() {
  const done = takeOutcome();
  return done ? h("p", { class: `outcome ${done.kind}`, id: "write-outcome", role: "status" }, done.text) : null;
}

async function absent(root, id) {
  const gone = (await call("memory.tombstones", { ids: [id] })).tombstones[0];
  root.append(h("h2", {}, `Note ${id}`), outcomeBox(), gone
    ? h("div", { class: "note-detail tombstone", id: "tombstone" },
      h("p", {}, `Forgotten ${fmtTime(gone.forgotten_at)}${gone.actor ? ` by ${gone.actor}` : ""}: its text, tags, ` +
        "vectors and edges are erased; this tombstone is all that is kept."),
      h("p", {}, "reason: ", h("q", { class: "reason" }, gone.reason)))
    : h("p", { class: "muted", id: "note-absent" }, `note ${id} does not exist here`));
}

function metadata(n) {
  const rows = [["status", h("span", { class: `status ${status(n)}` }, status(n))],
    ["scope", n.scope || "—"], ["kind", n.kind || "—"], ["thread", n.thread || "—"],
    ["tags", n.tags.length ? n.tags.map((t) => h("span", { class: "tag" }, t)) : "—"],
    ["happened", fmtTime(n.occurred_at)], ["stored", fmtTime(n.created_at)],
    ["salience", n.salience.toFixed(2)], ["type", n.memory_type], ["source", n.source_id || "—"]];
  const newer = n.superseded_by;
  if (newer) rows.push(["superseded by", h("a", { href: `#/note/${newer}` }, `note ${newer}`)]);
  if (n.archived_at) rows.push(["archived", fmtTime(n.archived_at)]);
  return h("table", { class: "plain meta", id: "note-meta" },
    rows.map(([k, v]) => h("tr", {}, h("th", {}, k), h("td", {}, v))));
}

function versions(id, hist) {
  const list = h("ol", { class: "versions", id: "note-versions" }, hist.versions.map((v) => h("li", {
    class: v.id === id ? "this" : null, dataset: { id: v.id } },
  v.id === id ? h("b", {}, `note ${v.id}`) : h("a", { href: `#/note/${v.id}` }, `note ${v.id}`),
  ` · stored ${fmtTime(v.created_at)} · ${status(v)} · `, h("span", { class: "muted" }, v.content.slice(0, 120)))));
  const changes = hist.changes.length ? h("ul", { class: "changes" }, hist.changes.map((c) => h("li", {},
    `${fmtTime(c.changed_at)} note ${c.note_id}: ${c.field} ${JSON.stringify(c.old)} → ${JSON.stringify(c.new)}` +
    (c.actor ? ` (by ${c.actor})` : "")))) : null;
  return h("section", { class: "history" }, h("h3", {}, `Versions (${hist.versions.length}), oldest first`), list,
    changes);
}

export async function render(root, q) {
  const id = Number(q.id);
  const res = await call("memory.get", { ids: [id] });
  if (!res.notes.length) { await absent(root, id); return; }
  const n = res.notes[0];
  const hist = await call("memory.history", { id });
  root.append(h("h2", {}, `Note ${n.id}`), outcomeBox(), h("div", { class: "note-detail" },
    h("p", { class: "content", id: "note-content" }, n.content), metadata(n),
    n.entities.length ? h("p", {}, "mentions: ", n.entities.map((e, i) => [i ? ", " : "",
      h("a", { href: `#/timeline?subject=${encodeURIComponent(e)}` }, e)])) : null,
    h("p", {}, h("a", { href: `#/graph?node=m:${n.id}` }, "open in the graph"))),
  versions(n.id, hist), tidyForms(n),
  h("h3", {}, "Neighbours"), neighbourList(await neighbours(n.id)));
}
