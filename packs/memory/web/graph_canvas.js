// The graph page's canvas: a small force layout, the drawing, and what is under the pointer. It knows nothing of
// the verbs: graph.js gives it kg.neighbourhood's answer (set()) and acts on clicks. Repulsion is all-pairs but
// only while the layout is warm, so a few hundred nodes settle in seconds and then cost nothing.
import { relationColour } from "./shared.js";

const TYPE_COLOURS = { e: "#2563eb", m: "#64748b", f: "#7c3aed" };
const EDGE_REACH = 6;  // px: how near an edge the pointer must be for its label to show

export class GraphCanvas {
  constructor(canvas, tip, current) {
    Object.assign(this, { canvas, tip, current });
    this.nodes = new Map(); this.edges = new Map(); this.names = {};
    this.alpha = 1; this.view = { x: 0, y: 0, k: 1 }; this.hover = null; this.hoverEdge = null; this.lastTickMs = 0;
    this.onNode = () => {};
    canvas.addEventListener("click", (ev) => { const p = this.nodeAt(ev); if (p) this.onNode(p, ev); });
    canvas.addEventListener("mousemove", (ev) => this.onMove(ev));
    canvas.addEventListener("mouseleave", () => {
      this.hover = this.hoverEdge = null; this.tip.hidden = true; this.paint();
    });
    canvas.addEventListener("wheel", (ev) => {
      ev.preventDefault(); this.zoomed = true; this.view.k *= ev.deltaY < 0 ? 1.1 : 0.9; this.paint();
    }, { passive: false });
    new ResizeObserver(() => this.resize()).observe(canvas);
    this.resize();
    requestAnimationFrame(() => this.frame());
  }

  label(id) { return this.names[id] || id; }

  // Take a new answer: nodes still shown keep their place, new ones start beside a neighbour already placed.
  set(answer) {
    const keep = new Map();
    for (const n of answer.nodes) {
      const old = this.nodes.get(n.id);
      keep.set(n.id, old ? Object.assign(old, n) : { ...n, x: NaN, y: NaN, vx: 0, vy: 0 });
      if (n.name) this.names[n.id] = n.name;
    }
    this.nodes = keep;
    this.edges = new Map(answer.edges.map((e) => [e.key, e]));
    for (const p of this.nodes.values()) {
      if (!Number.isNaN(p.x)) continue;
      const near = answer.edges.map((e) => (e.src === p.id ? e.dst : e.dst === p.id ? e.src : null))
        .map((id) => id && this.nodes.get(id)).find((q) => q && !Number.isNaN(q.x));
      const a = Math.random() * 2 * Math.PI, r = near ? 30 + Math.random() * 30 : 40 * Math.random();
      p.x = (near ? near.x : 0) + r * Math.cos(a); p.y = (near ? near.y : 0) + r * Math.sin(a);
    }
    this.alpha = Math.max(this.alpha, 0.7);
    this.hover = this.hoverEdge = null; this.tip.hidden = true;  // what the pointer was over may be gone
    delete this.canvas.dataset.settled;
  }

  // While the layout moves, the whole picture is kept in the canvas (zoomed out, never in), until the wheel zooms.
  fit() {
    if (this.zoomed || !this.nodes.size) return;
    let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
    for (const p of this.nodes.values()) {
      x0 = Math.min(x0, p.x); y0 = Math.min(y0, p.y); x1 = Math.max(x1, p.x); y1 = Math.max(y1, p.y);
    }
    // room for the labels on the right (they are drawn there) and the folded hubs' bundles
    this.view.k = Math.min(1, (this.w - 260) / Math.max(1, x1 - x0), (this.h - 80) / Math.max(1, y1 - y0));
    this.view.x = -(x0 + x1) / 2 - 90 / this.view.k; this.view.y = -(y0 + y1) / 2;
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
    if (this.alpha > 0.02) { this.tick(); this.fit(); this.paint(); }
    else this.canvas.dataset.settled = "1";
    this.canvas.dataset.tickMs = this.lastTickMs.toFixed(2);
    requestAnimationFrame(() => this.frame());
  }

  radius(p) {
    const c = Math.max(0, p.score || 0);
    return (p.folded ? 9 : 4) + 12 * Math.sqrt(Math.min(1, c));
  }

  toScreen(p) { return { x: this.w / 2 + (p.x + this.view.x) * this.view.k, y: this.h / 2 + (p.y + this.view.y) * this.view.k }; }

  // where a node is drawn, and an edge's midpoint, in CSS pixels relative to the canvas (the browser tests point there)
  screenPos(id) { const p = this.nodes.get(id); return p ? this.toScreen(p) : null; }
  edgeMid(key) {
    const e = this.edges.get(key);
    if (!e) return null;
    const a = this.toScreen(this.nodes.get(e.src)), b = this.toScreen(this.nodes.get(e.dst));
    return { x: (a.x + b.x) / 2, y: (a.y + b.y) / 2 };
  }

  // A folded hub's bundle: one thick stroke pointing away from the middle of the picture, standing for its spokes.
  bundleEnd(p) {
    const s = this.toScreen(p), dx = s.x - this.w / 2, dy = s.y - this.h / 2, d = Math.hypot(dx, dy) || 1;
    const len = this.radius(p) + 26;
    return { x: s.x + (dx / d) * len, y: s.y + (dy / d) * len };
  }

  paint() {
    const c = this.canvas.getContext("2d");
    if (!c) return;
    c.setTransform(this.dpr, 0, 0, this.dpr, 0, 0);
    c.clearRect(0, 0, this.w, this.h);
    for (const e of this.edges.values()) {
      const a = this.toScreen(this.nodes.get(e.src)), b = this.toScreen(this.nodes.get(e.dst));
      const hot = e === this.hoverEdge;
      c.strokeStyle = relationColour(e.relation); c.globalAlpha = hot ? 1 : 0.55; c.lineWidth = hot ? 3 : 1.2;
      c.beginPath(); c.moveTo(a.x, a.y); c.lineTo(b.x, b.y); c.stroke();
      if (hot) this.edgeLabel(c, e, (a.x + b.x) / 2, (a.y + b.y) / 2);
    }
    c.globalAlpha = 1;
    const crowded = this.nodes.size > 30;  // then only the nodes one reads a picture by are named; hover names any
    for (const p of this.nodes.values()) {
      const s = this.toScreen(p), r = this.radius(p) * Math.sqrt(this.view.k);
      if (p.folded) this.bundle(c, p, s);
      c.fillStyle = TYPE_COLOURS[p.id[0]] || "#64748b";
      c.beginPath(); c.arc(s.x, s.y, r, 0, 2 * Math.PI); c.fill();
      if (p.depth === 0) { c.strokeStyle = "#111827"; c.lineWidth = 2; c.stroke(); }
      if (!crowded || p.depth === 0 || p.folded || p.id[0] === "e" || p === this.hover) {
        c.fillStyle = "#1f2937"; c.font = "11px system-ui, sans-serif";
        const text = this.label(p.id);
        c.fillText(text.length > 28 ? text.slice(0, 27) + "…" : text, s.x + r + 3, s.y + 4);
      }
    }
  }

  bundle(c, p, s) {
    const end = this.bundleEnd(p);
    c.strokeStyle = "#94a3b8"; c.globalAlpha = 0.45; c.lineWidth = 7; c.lineCap = "round";
    c.beginPath(); c.moveTo(s.x, s.y); c.lineTo(end.x, end.y); c.stroke();
    c.globalAlpha = 1; c.lineCap = "butt"; c.lineWidth = 1.2;
    c.setLineDash([3, 2]); c.strokeStyle = "#111827";
    c.beginPath(); c.arc(s.x, s.y, this.radius(p) * Math.sqrt(this.view.k) + 3, 0, 2 * Math.PI); c.stroke();
    c.setLineDash([]);
    c.fillStyle = "#334155"; c.font = "bold 11px system-ui, sans-serif";
    c.fillText(`+${p.hidden}`, end.x + 3, end.y + 4);
  }

  edgeLabel(c, e, x, y) {
    const text = e.relation.startsWith("fact:") ? `${e.relation.slice(5)} (fact)` : e.relation;
    c.font = "bold 11px system-ui, sans-serif";
    const w = c.measureText(text).width + 8;
    c.fillStyle = "#fff"; c.fillRect(x - w / 2, y - 9, w, 16);
    c.fillStyle = relationColour(e.relation); c.fillText(text, x - w / 2 + 4, y + 3);
  }

  pointer(ev) {
    const r = this.canvas.getBoundingClientRect();
    return { x: ev.clientX - r.left, y: ev.clientY - r.top };
  }

  nodeAt(ev) {
    const m = this.pointer(ev);
    let best = null, bestD = Infinity;
    for (const p of this.nodes.values()) {
      const s = this.toScreen(p), d = Math.hypot(s.x - m.x, s.y - m.y);
      if (d < Math.max(8, this.radius(p) + 3) && d < bestD) { best = p; bestD = d; }
    }
    return best;
  }

  edgeAt(ev) {
    const m = this.pointer(ev);
    let best = null, bestD = EDGE_REACH;
    for (const e of this.edges.values()) {
      const a = this.toScreen(this.nodes.get(e.src)), b = this.toScreen(this.nodes.get(e.dst));
      const dx = b.x - a.x, dy = b.y - a.y, l2 = dx * dx + dy * dy || 1;
      const t = Math.max(0, Math.min(1, ((m.x - a.x) * dx + (m.y - a.y) * dy) / l2));
      const d = Math.hypot(a.x + t * dx - m.x, a.y + t * dy - m.y);
      if (d < bestD) { best = e; bestD = d; }
    }
    return best;
  }

  onMove(ev) {
    const p = this.nodeAt(ev), e = p ? null : this.edgeAt(ev);
    this.hover = p; this.hoverEdge = e;
    const m = this.pointer(ev);
    this.tip.hidden = !p && !e;
    if (p) {
      this.tip.dataset.kind = "node"; delete this.tip.dataset.relation;
      const left = p.folded ? ` · hub: ${p.hidden} edges folded, click to open`
        : p.hidden ? ` · ${p.hidden} not drawn, click to open` : "";
      this.tip.textContent = `${p.id} · ${this.label(p.id)} · rank ${(p.score || 0).toFixed(2)} · ${p.degree} edges${left}`;
    } else if (e) {
      this.tip.dataset.kind = "edge"; this.tip.dataset.relation = e.relation;
      this.tip.textContent = `${e.relation} · ${this.label(e.src)} → ${this.label(e.dst)}`;
    }
    this.tip.style.left = `${m.x + 12}px`; this.tip.style.top = `${m.y + 12}px`;
    this.paint();
  }
}
