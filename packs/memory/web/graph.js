// Graph: the neighbourhood of a note or entity, kept readable on real data (ADR 0042). One verb draws it,
// kg.neighbourhood: at most N nodes, grown from the start by PageRank, hubs folded (drawn once with the count of
// their edges left out, a bundle for their spokes); N, the hub bound and the depth are the kg pack's defaults,
// which the page learns from the answer (it sends none of them). A click opens a node (it becomes a start node,
// so a hub unfolds), "show more" asks for N more, a relation filter asks for those relations only; hovering an
// edge names its relation. Edges are coloured by relation, node size follows the rank.
import { call, h, go, showError } from "/ui/app.js";
import { RELATION_COLOURS, relationColour } from "./shared.js";
import { GraphCanvas } from "./graph_canvas.js";

export async function render(root, q, current) {
  const form = h("form", { class: "bar", id: "graph-form" },
    h("label", {}, "start at", h("input", { name: "node", value: q.node || "", required: true,
                                           placeholder: "an entity name, a note id, e:3 or m:12" })),
    h("button", { type: "submit" }, "Show"));
  form.addEventListener("submit", (ev) => { ev.preventDefault(); go("graph", { node: new FormData(form).get("node") }); });
  const canvas = h("canvas", { id: "graph-canvas" });
  const tip = h("div", { id: "graph-tip", hidden: true });
  const info = h("p", { class: "muted", id: "graph-info" });
  const more = h("button", { type: "button", id: "graph-more", class: "plain", hidden: true }, "show more");
  const filter = h("fieldset", { id: "graph-relations", class: "legend", hidden: true },
    h("legend", {}, "relations"));
  root.append(h("h2", {}, "Graph"), form, h("div", { class: "bar" }, info, more), filter,
    h("div", { class: "legend" }, Object.keys(RELATION_COLOURS).map((r) => {
      const i = h("i"); i.style.background = relationColour(r); return h("span", {}, i, r);
    }), h("span", { class: "muted" }, "click a node to open it (a dashed ring is a folded hub); shift-click goes to it;"
      + " hover an edge for its relation")),
    h("div", { id: "graph-wrap" }, canvas, tip));
  if (!q.node) { info.textContent = "Start from an entity (Orion) or a note id."; return; }
  const view = new GraphView(new GraphCanvas(canvas, tip, current), info, more, filter);
  window.palimpsest.graph = view.canvas;
  window.palimpsest.graphView = view;
  await view.show(await resolve(q.node.trim()));
}

async function resolve(text) {
  if (/^\d+$/.test(text)) return `m:${text}`;
  if (/^[emf]:/.test(text)) return text;
  const res = await call("kg.entity", { name: text, limit: 1 });
  return res.entity.node_id;
}

class GraphView {
  constructor(canvas, info, more, filter) {
    Object.assign(this, { canvas, info, more, filter });
    this.open = []; this.limit = null; this.step = null; this.relations = null; this.known = new Set();
    canvas.onNode = (p, ev) => this.onNode(p, ev);
    more.addEventListener("click", () => { this.limit = (this.limit || this.step) + this.step; this.load(); });
  }

  async show(start) { this.open = [start]; await this.load(); }

  async load() {
    const params = { nodes: this.open };
    if (this.limit) params.limit = this.limit;
    if (this.relations) params.relations = this.relations;
    let res;
    try { res = await call("kg.neighbourhood", params); } catch (err) { showError(err); return; }
    showError(null);
    if (!this.step) this.step = res.limit;  // N: the pack's default, as the verb applied it
    this.limit = res.limit;
    await this.loadNotes(res.nodes.map((n) => n.id));
    this.canvas.set(res);
    this.describe(res);
    this.filterBoxes(res.relations);
  }

  // A note's label is its text, which is the memory pack's (kg.neighbourhood cannot read it): memory.get.
  async loadNotes(ids) {
    const want = ids.filter((id) => id.startsWith("m:") && !this.known.has(id)).map((id) => Number(id.slice(2)))
      .filter((n) => Number.isInteger(n));
    for (let i = 0; i < want.length; i += 1000) {
      try {
        for (const n of (await call("memory.get", { ids: want.slice(i, i + 1000) })).notes) {
          this.canvas.names[`m:${n.id}`] = n.content;
        }
      } catch (_) { /* no memory pack: ids stay as labels */ }
    }
    for (const id of ids) this.known.add(id);
  }

  describe(res) {
    const c = this.canvas.canvas, folded = res.nodes.filter((n) => n.folded).length;
    const rels = [...new Set(res.edges.map((e) => e.relation))].sort();
    Object.assign(c.dataset, { nodes: String(res.nodes.length), edges: String(res.edges.length),
                               folded: String(folded), omitted: String(res.omitted_nodes),
                               limit: String(res.limit), relations: rels.join(",") });
    this.info.textContent = `${res.nodes.length} of ${res.reached} nodes · ${res.edges.length} edges · ` +
      `ranked by ${res.ranked_by === "pagerank" ? "stored PageRank" : "PageRank of this neighbourhood"} · ` +
      `left out: ${res.omitted_nodes} nodes, ${res.omitted_edges} edges · ` +
      `${folded} hub${folded === 1 ? "" : "s"} folded (more than ${res.hub_degree} edges) · depth ${res.depth}`;
    this.more.hidden = res.omitted_nodes === 0;
    this.more.textContent = `show ${Math.min(this.step, res.omitted_nodes)} more`;
  }

  // One box per relation the namespace's graph has; all ticked = no filter.
  filterBoxes(counts) {
    const names = Object.keys(counts);
    this.filter.hidden = names.length === 0;
    const ticked = new Set(this.relations || names);
    this.filter.replaceChildren(h("legend", {}, "relations"), ...names.map((r) => {
      const box = h("input", { type: "checkbox", name: "relation", value: r, checked: ticked.has(r) });
      box.addEventListener("change", () => this.onFilter());
      const i = h("i"); i.style.background = relationColour(r);
      return h("label", { class: "rel-filter" }, box, i, `${r} (${counts[r]})`);
    }));
  }

  onFilter() {
    const boxes = [...this.filter.querySelectorAll("input[name=relation]")];
    const on = boxes.filter((b) => b.checked).map((b) => b.value);
    if (on.length === 0) { showError(new Error("tick at least one relation")); return; }
    this.relations = on.length === boxes.length ? null : on;
    this.load();
  }

  onNode(p, ev) {
    if (ev.shiftKey) {
      if (p.id.startsWith("m:")) go("note", { id: p.id.slice(2) });
      else if (p.id.startsWith("e:")) go("timeline", { subject: this.canvas.label(p.id) });
      return;
    }
    if (this.open.includes(p.id) || (!p.hidden && !p.folded)) return;  // nothing more to show from it
    this.open.push(p.id);
    this.limit += this.step;  // room for what it opens onto (and the verb wants the start nodes within the limit)
    this.load();
  }
}
