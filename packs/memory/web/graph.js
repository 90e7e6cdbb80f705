// Graph: the neighbourhood of a note or entity on a canvas with a small force layout. Edges are coloured by
// relation (facts by "fact"), node size follows the PageRank kg.centrality stored (else the degree seen here);
// a click expands a node (its kg.edges, and for an entity its current facts). Repulsion is all-pairs but only
// while the layout is warm, so 500 nodes settle in a few seconds and then cost nothing.
import { call, h, go, showError } from "/ui/app.js";
import { RELATION_COLOURS, relationColour } from "./shared.js";

const TYPE_COLOURS = { e: "#2563eb", m: "#64748b", f: "#7c3aed" };

export async function render(root, q, current) {
  const form = h("form", { class: "bar", id: "graph-form" },
    h("label", {}, "start at", h("input", { name: "node", value: q.node || "", required: true,
                                           placeholder: "an entity name, a note id, e:3 or m:12" })),
    h("button", { type: "submit" }, "Show"));
  form.addEventListener("submit", (ev) => { ev.preventDefault(); go("graph", { node: new FormData(form).get("node") }); });
  const canvas = h("canvas", { id: "graph-canvas" });
  const tip = h("div", { id: "graph-tip", hidden: true });
  const info = h("p", { class: "muted", id: "graph-info" });
  root.append(h("h2", {}, "Graph"), form, info,
    h("div", { class: "legend" }, Object.keys(RELATION_COLOURS).map((r) => {
      const i = h("i"); i.style.background = relationColour(r); return h("span", {}, i, r);
    }), h("span", { class: "muted" }, "click a node to expand it; shift-click opens it")),
    h("div", { id: "graph-wrap" }, canvas, tip));
  if (!q.node) { info.textContent = "Start from an entity (Orion) or a note id."; return; }
  const g = new Graph(canvas, tip, info, current);
  window.palimpsest.graph = g;
  await g.loadNames();
  const start = await resolve(q.node.trim());
  await g.expand(start, true);
}

async function resolve(text) {
  if (/^\d+$/.test(text)) return `m:${text}`;
  if (/^[emf]:/.test(text)) return text;
  const res = await call("kg.entity", { name: text, limit: 1 });
  return res.entity.node_id;
}

class Graph {
  constructor(canvas, tip, info, current) {
    Object.assign(this, { canvas, tip, info, current });
    this.nodes = new Map(); this.edges = new Map(); this.names = {}; this.expanded = new Set();
    this.alpha = 1; this.view = { x: 0, y: 0, k: 1 }; this.hover = null; this.lastTickMs = 0;
    canvas.addEventListener("click", (ev) => this.onClick(ev));
    canvas.addEventListener("mousemove", (ev) => this.onMove(ev));
    canvas.addEventListener("wheel", (ev) => { ev.preventDefault(); this.view.k *= ev.deltaY < 0 ? 1.1 : 0.9; this.paint(); },
                            { passive: false });
    new ResizeObserver(() => this.resize()).observe(canvas);
    this.resize();
    requestAnimationFrame(() => this.frame());
  }

  async loadNames() {
    try {
      for (const e of (await call("kg.entities", { limit: 1000 })).entities) this.names[e.node_id] = e.name;
    } catch (_) { /* no kg: ids stay as labels */ }
    try {
      for (const n of (await call("memory.list", { limit: 1000 })).notes) this.names[`m:${n.id}`] = n.content;
    } catch (_) { /* no memory pack */ }
  }

  label(id) { return this.names[id] || id; }

  addNode(id, near) {
    if (this.nodes.has(id)) return false;
    const p = near ? this.nodes.get(near) : null;
    const a = Math.random() * 2 * Math.PI, r = p ? 30 + Math.random() * 30 : 0;
    this.nodes.set(id, { id, x: (p ? p.x : 0) + r * Math.cos(a), y: (p ? p.y : 0) + r * Math.sin(a),
                         vx: 0, vy: 0, score: null, degree: 0 });
    return true;
  }

  addEdge(key, src, dst, relation) {
    if (this.edges.has(key) || src === dst) return;
    this.edges.set(key, { src, dst, relation });
    this.nodes.get(src).degree++; this.nodes.get(dst).degree++;
  }

  async expand(id, first = false) {
    if (this.expanded.has(id)) return;
    this.expanded.add(id);
    this.addNode(id, null);
    const added = [id];
    const res = await call("kg.edges", { node_id: id, direction: "both", limit: 1000 });
    for (const e of res.edges) {
      const other = e.src === id ? e.dst : e.src;
      if (this.addNode(other, id)) added.push(other);
      this.addEdge(`edge:${e.id}`, e.src, e.dst, e.relation);
    }
    if (id.startsWith("e:")) {
      const ent = await call("kg.entity", { id: Number(id.slice(2)), limit: 500 });
      this.names[id] = ent.entity.name;
      for (const f of [...ent.facts, ...ent.incoming]) {
        if (f.object_id === null) continue;
        const src = `e:${f.subject.id}`, dst = `e:${f.object_id}`;
        for (const [n, name] of [[src, f.subject.name], [dst, f.object]]) {
          this.names[n] = this.names[n] || name;
          if (this.addNode(n, id)) added.push(n);
        }
        this.addEdge(`fact:${f.fact_id}`, src, dst, `fact:${f.predicate}`);
      }
    }
    for (let i = 0; i < added.length; i += 1000) {
      try {
        const sc = await call("kg.centrality_scores", { node_ids: added.slice(i, i + 1000) });
        for (const [n, v] of Object.entries(sc.scores)) this.nodes.get(n).score = v;
      } catch (_) { /* no stored PageRank: size by degree */ }
    }
    this.alpha = Math.max(this.alpha, first ? 1 : 0.6);
    this.updateInfo();
  }

  updateInfo() {
    this.info.textContent = `${this.nodes.size} nodes · ${this.edges.size} edges · ${this.expanded.size} expanded`;
    this.canvas.dataset.nodes = String(this.nodes.size);
    this.canvas.dataset.edges = String(this.edges.size);
  }

  resize() {
    const r = this.canvas.getBoundingClientRect(), dpr = window.devicePixelRatio || 1;
    this.canvas.width = Math.max(1, r.width * dpr); this.canvas.height = Math.max(1, r.height * dpr);
    this.w = r.width; this.h = r.height; this.dpr = dpr;
    this.paint();
  }

  tick() {
    const t0 = performance.now();
    const ns = [...this.nodes.values()], n = ns.length;
    const k = 900 * this.alpha;
    for (let i = 0; i < n; i++) {
      const a = ns[i];
      for (let j = i + 1; j < n; j++) {
        const b = ns[j];
        let dx = a.x - b.x, dy = a.y - b.y, d2 = dx * dx + dy * dy;
        if (d2 > 90000) continue;  // beyond 300 px repulsion is negligible
        if (d2 < 0.01) { dx = Math.random() - 0.5; dy = Math.random() - 0.5; d2 = 0.5; }
        const f = k / d2;
        a.vx += dx * f; a.vy += dy * f; b.vx -= dx * f; b.vy -= dy * f;
      }
    }
    for (const e of this.edges.values()) {
      const a = this.nodes.get(e.src), b = this.nodes.get(e.dst);
      const dx = b.x - a.x, dy = b.y - a.y, d = Math.sqrt(dx * dx + dy * dy) || 1;
      const f = ((d - 70) / d) * 0.04 * this.alpha;
      a.vx += dx * f; a.vy += dy * f; b.vx -= dx * f; b.vy -= dy * f;
    }
    for (const p of ns) {
      p.vx -= p.x * 0.004 * this.alpha; p.vy -= p.y * 0.004 * this.alpha;
      p.vx *= 0.6; p.vy *= 0.6;
      p.x += Math.max(-30, Math.min(30, p.vx)); p.y += Math.max(-30, Math.min(30, p.vy));
    }
    this.alpha *= 0.985;
    this.lastTickMs = performance.now() - t0;
  }

  frame() {
    if (!this.current()) return;  // the view was left
    if (this.alpha > 0.02) { this.tick(); this.paint(); }
    else this.canvas.dataset.settled = "1";
    this.canvas.dataset.tickMs = this.lastTickMs.toFixed(2);
    requestAnimationFrame(() => this.frame());
  }

  radius(p) {
    const maxDeg = Math.max(1, ...[...this.nodes.values()].map((q) => q.degree));
    const c = p.score !== null ? p.score : p.degree / maxDeg;
    return 4 + 12 * Math.sqrt(Math.max(0, c));
  }

  toScreen(p) { return { x: this.w / 2 + (p.x + this.view.x) * this.view.k, y: this.h / 2 + (p.y + this.view.y) * this.view.k }; }

  // where a node is drawn, in CSS pixels relative to the canvas (the browser tests click there)
  screenPos(id) { const p = this.nodes.get(id); return p ? this.toScreen(p) : null; }

  paint() {
    const c = this.canvas.getContext("2d");
    if (!c) return;
    c.setTransform(this.dpr, 0, 0, this.dpr, 0, 0);
    c.clearRect(0, 0, this.w, this.h);
    c.lineWidth = 1.2;
    for (const e of this.edges.values()) {
      const a = this.toScreen(this.nodes.get(e.src)), b = this.toScreen(this.nodes.get(e.dst));
      c.strokeStyle = relationColour(e.relation); c.globalAlpha = 0.55;
      c.beginPath(); c.moveTo(a.x, a.y); c.lineTo(b.x, b.y); c.stroke();
    }
    c.globalAlpha = 1;
    const small = this.nodes.size > 120;
    for (const p of this.nodes.values()) {
      const s = this.toScreen(p), r = this.radius(p) * Math.sqrt(this.view.k);
      c.fillStyle = TYPE_COLOURS[p.id[0]] || "#64748b";
      c.beginPath(); c.arc(s.x, s.y, r, 0, 2 * Math.PI); c.fill();
      if (this.expanded.has(p.id)) { c.strokeStyle = "#111827"; c.lineWidth = 2; c.stroke(); c.lineWidth = 1.2; }
      if (!small || this.expanded.has(p.id) || p === this.hover || r > 9) {
        c.fillStyle = "#1f2937"; c.font = "11px system-ui, sans-serif";
        const text = this.label(p.id);
        c.fillText(text.length > 28 ? text.slice(0, 27) + "…" : text, s.x + r + 3, s.y + 4);
      }
    }
  }

  nodeAt(ev) {
    const r = this.canvas.getBoundingClientRect(), mx = ev.clientX - r.left, my = ev.clientY - r.top;
    let best = null, bestD = Infinity;
    for (const p of this.nodes.values()) {
      const s = this.toScreen(p), d = Math.hypot(s.x - mx, s.y - my);
      if (d < Math.max(8, this.radius(p) + 3) && d < bestD) { best = p; bestD = d; }
    }
    return best;
  }

  async onClick(ev) {
    const p = this.nodeAt(ev);
    if (!p) return;
    if (ev.shiftKey) {
      if (p.id.startsWith("m:")) go("note", { id: p.id.slice(2) });
      else if (p.id.startsWith("e:")) go("timeline", { subject: this.label(p.id) });
      return;
    }
    try { await this.expand(p.id); } catch (err) { showError(err); }
  }

  onMove(ev) {
    const p = this.nodeAt(ev);
    this.hover = p;
    if (!p) { this.tip.hidden = true; return; }
    const r = this.canvas.getBoundingClientRect();
    this.tip.hidden = false;
    this.tip.textContent = `${p.id} · ${this.label(p.id)}` + (p.score !== null ? ` · PageRank ${p.score.toFixed(2)}` : "") +
      ` · ${p.degree} edges` + (this.expanded.has(p.id) ? "" : " · click to expand");
    this.tip.style.left = `${ev.clientX - r.left + 12}px`; this.tip.style.top = `${ev.clientY - r.top + 12}px`;
    if (this.alpha <= 0.02) this.paint();
  }
}
