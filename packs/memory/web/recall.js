// Recall explorer: memory.recall with filters; each hit's score as the stacked contributions the ranking used
// (w·x / Σw per component: they add up to the score), the legs it came from, its neighbours, and feedback.
import { call, h, go, fmtTime, showError } from "/ui/app.js";
import { neighbours, neighbourList } from "./shared.js";

// formula weight name -> breakdown field (rerank adds the two legs' own scores)
const FEATURES = { relevance: "relevance", salience: "effective_salience", temporal: "recency",
                   text_match: "text_match", vector_match: "vector_match" };
const KINDS = ["", "decision", "milestone", "problem", "preference", "emotional", "none"];

export function contributions(b) {
  const total = Object.values(b.weights).reduce((a, w) => a + w, 0) || 1;
  return Object.entries(b.weights).filter(([k]) => k in FEATURES)
    .map(([k, w]) => ({ name: k, value: (w * b[FEATURES[k]]) / total, input: b[FEATURES[k]], weight: w / total }));
}

export async function render(root, q) {
  const form = h("form", { class: "bar", id: "recall-form" },
    h("label", {}, "query", h("input", { type: "search", name: "query", value: q.q || "", required: true,
                                         placeholder: "why did we choose Postgres?", autofocus: true })),
    h("label", {}, "scope", h("input", { name: "scope", value: q.scope || "", size: 10 })),
    h("label", {}, "kind", h("select", { name: "kind" },
      KINDS.map((k) => h("option", { value: k, selected: k === (q.kind || "") }, k || "any")))),
    h("label", {}, "as of", h("input", { type: "datetime-local", name: "as_of", value: q.as_of || "" })),
    h("label", {}, "limit", h("input", { type: "number", name: "limit", value: q.limit || 10, min: 1, max: 200 })),
    h("button", { type: "submit" }, "Recall"));
  const out = h("div", { id: "recall-results" });
  root.append(h("h2", {}, "Recall explorer"), form, out);
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const f = new FormData(form);
    go("recall", { q: f.get("query"), scope: f.get("scope"), kind: f.get("kind"), as_of: f.get("as_of"),
                   limit: f.get("limit") });
  });
  if (!q.q) {
    out.append(h("p", { class: "muted" }, "Type a question: results come with the numbers the ranking used."));
    return;
  }
  const params = { query: q.q, limit: Number(q.limit || 10), include_breakdown: true };
  if (q.scope) params.scope = q.scope;
  if (q.kind) params.kind = q.kind;
  if (q.as_of) params.as_of = q.as_of.length === 16 ? `${q.as_of}:00` : q.as_of;
  const res = await call("memory.recall", params);
  const names = res.results.length && res.results[0].breakdown ? Object.keys(res.results[0].breakdown.weights) : [];
  out.append(h("p", { class: "muted", id: "recall-summary" },
    `${res.results.length} result${res.results.length === 1 ? "" : "s"} · fusion ${res.fusion} · embedder ` +
    `${res.embedder}` + (res.truncated ? " · cut short by the response budget" : "")));
  if (names.length) out.append(h("div", { class: "key" }, "score = ", names.map((n) => [h("i", { class: n }), n])));
  res.results.forEach((hit, i) => out.append(hitCard(hit, i, res.recall_id)));
}

function hitCard(hit, i, recallId) {
  const n = hit.note, b = hit.breakdown;
  const card = h("div", { class: "hit", dataset: { noteId: n.id } });
  const parts = b ? contributions(b) : [];
  const stack = h("div", { class: "stack", title: "each component's weighted share of the score" });
  for (const p of parts) {
    const seg = h("div", { class: `seg ${p.name}`,
                           title: `${p.name}: ${p.input.toFixed(3)} × weight ${p.weight.toFixed(3)} = ${p.value.toFixed(3)}` });
    seg.style.width = `${Math.max(0, p.value) * 100}%`;
    stack.append(seg);
  }
  const summed = parts.reduce((a, p) => a + p.value, 0);
  const ctx = b ? Object.entries(b.context || {}).filter(([, v]) => v) : [];
  const legs = b ? h("div", { class: "legs" }, "legs: ",
    leg("text (BM25)", b.text_match), leg("vector", b.vector_match),
    b.context && "graph" in b.context ? leg("graph walk", b.context.graph) : null,
    ctx.length ? h("span", {}, " · context: " + ctx.map(([k, v]) => `${k} ${v.toFixed(2)}`).join(", ")) : null,
    Math.abs(summed - hit.score) > 1e-6 ? h("span", {}, ` · adjusted ${summed.toFixed(3)} → ${hit.score.toFixed(3)}`) : null)
    : null;
  const nbBox = h("div", { class: "nb-box" });
  const done = h("span", { class: "feedback-done" });
  const fb = (signal, label) => h("button", { class: "feedback", type: "button", title: "writes brain.feedback",
    onclick: async (ev) => {
      try {
        const r = await call("brain.feedback", { recall_id: recallId, note_id: n.id, signal });
        done.textContent = `feedback recorded (${signal}, event ${r.event_seq}, profile ${r.profile})`;
        card.querySelectorAll("button.feedback").forEach((x) => { x.disabled = true; });
      } catch (err) { showError(err); }
    } }, label);
  card.append(
    h("div", { class: "head" }, h("span", { class: "rank" }, `#${i + 1}`),
      h("span", { class: "score" }, hit.score.toFixed(3)),
      b ? h("span", { class: "muted" }, parts.map((p) => `${p.name} ${p.input.toFixed(2)}`).join(" · ")) : null),
    stack,
    h("div", { class: "content" }, h("a", { href: `#/note/${n.id}` }, n.content)),
    h("div", { class: "meta" }, `note ${n.id} · ${n.scope || "no scope"} · ${n.kind || "no kind"} · ` +
      `${fmtTime(n.occurred_at)}` + (n.entities.length ? ` · mentions ${n.entities.join(", ")}` : "") +
      (b ? ` · ${b.age_days.toFixed(0)} days old` : "")),
    legs,
    h("div", { class: "actions" },
      h("button", { class: "plain neighbours-btn", type: "button", onclick: async () => {
        nbBox.replaceChildren(h("span", { class: "muted" }, "…"));
        try { nbBox.replaceChildren(neighbourList(await neighbours(n.id))); } catch (err) { showError(err); }
      } }, "neighbours"),
      h("a", { href: `#/graph?node=m:${n.id}` }, "graph"),
      h("span", { class: "write-mark", title: "these buttons write one brain.feedback event" }, "write"),
      fb("useful", "+ useful"), fb("not_useful", "− not useful"), done),
    nbBox);
  return card;
}

function leg(name, value) {
  return h("span", { class: "leg" + (value > 0 ? "" : " off"), title: "min-max score in this leg" },
           `${name} ${value.toFixed(2)}`);
}
