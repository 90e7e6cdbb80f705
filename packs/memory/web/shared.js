// Pieces more than one view draws: relation colours, a note's neighbours (edges of its m: node).
import { call, h, go } from "/ui/app.js";

export const RELATION_COLOURS = {
  supports: "#16a34a", contradicts: "#dc2626", supersedes: "#7c3aed", triggered_by: "#ea580c",
  related_to: "#0891b2", mentions: "#94a3b8", fact: "#2563eb",
};

export function relationColour(rel) {
  return RELATION_COLOURS[rel] || RELATION_COLOURS[String(rel).split(":")[0]] || "#64748b";
}

export function relTag(rel) {
  const el = h("span", { class: "rel" }, rel);
  el.style.background = relationColour(rel);
  return el;
}

// The neighbours of a note: its edges (both directions), with the other end's text.
export async function neighbours(noteId) {
  const node = `m:${noteId}`;
  const res = await call("kg.edges", { node_id: node, direction: "both", limit: 200 });
  const others = res.edges.map((e) => ({ edge: e, other: e.src === node ? e.dst : e.src, out: e.src === node }));
  const noteIds = [...new Set(others.filter((o) => o.other.startsWith("m:")).map((o) => Number(o.other.slice(2))))];
  const texts = {};
  if (noteIds.length) {
    const got = await call("memory.get", { ids: noteIds.slice(0, 1000) });
    for (const n of got.notes) texts[`m:${n.id}`] = n.content;
  }
  const entityIds = others.filter((o) => o.other.startsWith("e:")).map((o) => Number(o.other.slice(2)));
  for (const id of [...new Set(entityIds)].slice(0, 50)) {
    try { texts[`e:${id}`] = (await call("kg.entity", { id, limit: 1 })).entity.name; } catch (_) { /* gone */ }
  }
  return others.map((o) => ({ ...o, text: texts[o.other] || o.other }));
}

export function neighbourList(items) {
  if (!items.length) return h("p", { class: "neighbours muted" }, "no edges");
  return h("ul", { class: "neighbours" }, items.map((o) => h("li", {},
    relTag(o.edge.relation), " ", o.out ? "→ " : "← ",
    o.other.startsWith("m:")
      ? h("a", { href: `#/note/${o.other.slice(2)}` }, o.text)
      : h("a", { href: `#/graph?node=${encodeURIComponent(o.other)}` }, o.text))));
}

export function openGraph(node) { go("graph", { node }); }
