// The notes list: memory.list page by page, filtered by scope, kind, tag and the time a note happened. Pages are
// cut by memory.list's keyset cursor, so a note remembered while one reads never shifts the pages; "previous" walks
// back along the cursors this address already holds (the trail), so every page has its own, reloadable address.
import { call, h, go, fmtTime } from "/ui/app.js";

const KINDS = ["", "decision", "milestone", "problem", "preference", "emotional", "none"];
const PAGE = 25;
const EXCERPT = 160;  // characters of a note's text in the list; the note page shows it all

export function excerpt(text) {
  return text.length > EXCERPT ? `${text.slice(0, EXCERPT - 1)}…` : text;
}

export function status(n) {
  if (n.superseded_by) return "superseded";
  return n.archived_at ? "archived" : "current";
}

// The filters of the address as memory.list's (and memory.count's) parameters: the dates are whole UTC days.
function filters(q) {
  const p = { include_archived: q.archived === "1", include_superseded: q.superseded === "1" };
  if (q.scope) p.scope = q.scope;
  if (q.kind) p.kind = q.kind;
  if (q.tag) p.tags = [q.tag];
  if (q.from) p.occurred_after = `${q.from}T00:00:00Z`;
  if (q.to) p.occurred_before = new Date(Date.parse(`${q.to}T00:00:00Z`) + 86400000).toISOString();
  return p;
}

function filterForm(q) {
  const form = h("form", { class: "bar", id: "notes-form" },
    h("label", {}, "scope", h("input", { name: "scope", value: q.scope || "", size: 12 })),
    h("label", {}, "kind", h("select", { name: "kind" },
      KINDS.map((k) => h("option", { value: k, selected: k === (q.kind || "") }, k || "any")))),
    h("label", {}, "tag", h("input", { name: "tag", value: q.tag || "", size: 10 })),
    h("label", {}, "from (UTC day)", h("input", { type: "date", name: "from", value: q.from || "" })),
    h("label", {}, "to (UTC day)", h("input", { type: "date", name: "to", value: q.to || "" })),
    h("label", { class: "check" }, h("input", { type: "checkbox", name: "archived", checked: q.archived === "1" }),
      "archived too"),
    h("label", { class: "check" }, h("input", { type: "checkbox", name: "superseded",
                                                checked: q.superseded === "1" }), "old versions too"),
    h("button", { type: "submit" }, "Filter"));
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const f = new FormData(form);
    go("notes", { scope: f.get("scope").trim(), kind: f.get("kind"), tag: f.get("tag").trim(), from: f.get("from"),
                  to: f.get("to"), archived: f.get("archived") ? "1" : "",
                  superseded: f.get("superseded") ? "1" : "" });
  });
  return form;
}

function row(n) {
  const st = status(n);
  return h("tr", { class: `note-row ${st}`, dataset: { id: n.id } },
    h("td", { class: "when" }, fmtTime(n.occurred_at)),
    h("td", {}, h("a", { href: `#/note/${n.id}` }, excerpt(n.content))),
    h("td", {}, n.scope || h("span", { class: "muted" }, "—")),
    h("td", { class: "tags" }, n.tags.map((t) => h("span", { class: "tag" }, t))),
    h("td", {}, h("span", { class: `status ${st}` }, st)));
}

export async function render(root, q) {
  root.append(h("h2", {}, "Notes"), filterForm(q));
  const trail = q.trail ? q.trail.split(",") : [];  // the cursors of the pages before this one, oldest first
  const params = { ...filters(q), order: "occurred_at", descending: true, limit: PAGE };
  if (trail.length) params.cursor = trail[trail.length - 1];
  const [page, counted] = await Promise.all([call("memory.list", params), call("memory.count", filters(q))]);
  const first = trail.length * PAGE + 1;
  root.append(h("p", { class: "muted", id: "notes-summary" }, page.notes.length
    ? `${first}–${first + page.notes.length - 1} of ${counted.count} notes, newest first`
    : `no notes match (${counted.count} in all)`));
  if (page.notes.length) {
    root.append(h("table", { class: "plain notes", id: "notes-table" },
      h("thead", {}, h("tr", {}, ["happened", "text", "scope", "tags", "status"].map((c) => h("th", {}, c)))),
      h("tbody", {}, page.notes.map(row))));
  }
  const here = { ...q };
  delete here.trail;
  const pager = h("p", { class: "pager" });
  if (trail.length) {
    pager.append(h("button", { class: "plain", id: "notes-prev",
                                onclick: () => go("notes", { ...here, trail: trail.slice(0, -1).join(",") }) },
                   "← previous"));
  }
  if (page.next_cursor) {
    const onward = [...trail, page.next_cursor].join(",");
    pager.append(h("button", { class: "plain", id: "notes-next", onclick: () => go("notes", { ...here, trail: onward }) },
                   "next →"));
  }
  root.append(pager);
}
