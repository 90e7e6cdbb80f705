// Retrievals: what each recall returned, for whom, when, and the feedback given (brain.serves, the brain's serve
// ledger), newest first, page by page. The ledger keeps note ids, not text and not the query (by design): the
// notes' text is read through memory.get. Forgetting a note erases it from the ledger too, so it is not listed.
import { call, h, go, fmtTime } from "/ui/app.js";

const PAGE = 20;
const SIGNALS = { useful: "useful", not_useful: "not useful", correction: "correction" };  // words: no emoji font

async function texts(ids) {
  if (!ids.length) return {};
  try {
    const got = await call("memory.get", { ids: ids.slice(0, 1000) });
    return Object.fromEntries(got.notes.map((n) => [n.id, n.content]));
  } catch (_) { return null; }  // the memory pack is not loaded: ids only
}

function serveCard(s, text) {
  const said = {};
  for (const f of s.feedback) (said[f.note_id] = said[f.note_id] || []).push(f);
  return h("div", { class: "hit serve", dataset: { recall: s.recall_id } },
    h("div", { class: "head" }, h("b", {}, fmtTime(s.served_at)),
      h("span", { class: "actor" }, s.actor ? `for ${s.actor}` : "for nobody in particular"),
      h("span", { class: "muted" }, `profile ${s.profile || "—"} · ${s.note_ids.length} notes · ` +
        `${s.feedback.length} feedback · recall ${s.recall_id.slice(0, 12)}`)),
    h("ol", { class: "served" }, s.note_ids.map((id) => h("li", { dataset: { note: id } },
      text === null || text[id] !== undefined
        ? h("a", { href: `#/note/${id}` }, text === null ? `note ${id}` : text[id].slice(0, 140))
        : h("span", { class: "muted" }, `note ${id} (not found)`),
      (said[id] || []).map((f) => h("span", {
        class: `given ${f.signal}`, title: `${f.source || ""} ${fmtTime(f.at)}${f.actor ? ` by ${f.actor}` : ""}` },
      SIGNALS[f.signal] || f.signal))))));
}

export async function render(root, q) {
  const form = h("form", { class: "bar", id: "serves-form" },
    h("label", {}, "actor", h("input", { name: "actor", value: q.actor || "", size: 12, placeholder: "anyone" })),
    h("button", { type: "submit" }, "Show"));
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    go("retrievals", { actor: new FormData(form).get("actor").trim() });
  });
  root.append(h("h2", {}, "Retrievals"), form);
  const trail = q.trail ? q.trail.split(",") : [];
  const params = { limit: PAGE };
  if (q.actor) params.actor = q.actor;
  if (trail.length) params.cursor = trail[trail.length - 1];
  const res = await call("brain.serves", params);
  const ids = [...new Set(res.serves.flatMap((s) => s.note_ids))];
  const text = await texts(ids);
  root.append(h("p", { class: "muted", id: "serves-summary" },
    res.serves.length ? `${res.serves.length} recalls on this page, newest first; the last ` +
      `${res.retention_days} days are kept (no query text is kept)` : "no recalls kept"),
  h("div", { id: "serves" }, res.serves.map((s) => serveCard(s, text))));
  const here = { actor: q.actor };
  const pager = h("p", { class: "pager" });
  if (trail.length) {
    pager.append(h("button", { class: "plain", id: "serves-prev",
                                onclick: () => go("retrievals", { ...here, trail: trail.slice(0, -1).join(",") }) },
                   "← newer"));
  }
  if (res.next_cursor) {
    const onward = [...trail, res.next_cursor].join(",");
    pager.append(h("button", { class: "plain", id: "serves-next",
                                onclick: () => go("retrievals", { ...here, trail: onward }) }, "older →"));
  }
  root.append(pager);
}
