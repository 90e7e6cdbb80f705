// The note page's writes, each through the memory pack's own verb and the same guarded JSON API as every call:
// edit (memory.update: new text becomes a new version, tags and scope change in place), archive (memory.archive)
// and forget (memory.forget, with a reason the tombstone keeps). Each is marked "write"; forget asks twice.
// A refused write (a blank reason, a note gone meanwhile) shows the API's error beside the form and changes nothing.
import { call, h, go, ApiError } from "/ui/app.js";

let outcome = null;  // what the last write did, shown once by the page the write leads to

export function takeOutcome() {
  const done = outcome;
  outcome = null;
  return done;
}

function done(text, id) {
  outcome = { kind: "ok", text };
  const target = `#/note/${id}`;
  if (location.hash === target) window.dispatchEvent(new HashChangeEvent("hashchange"));
  else go(`note/${id}`);
}

function failed(box, err) {
  box.hidden = false;
  box.textContent = err instanceof ApiError ? `refused (${err.code || err.status}): ${err.message}` : String(err);
}

const mark = () => h("span", { class: "write-mark" }, "write");

function editForm(n) {
  const box = h("p", { class: "write-error", role: "alert", hidden: true });
  const form = h("form", { class: "write-form", id: "edit-form" },
    h("h4", {}, "Edit ", mark()),
    n.superseded_by
      ? h("p", { class: "muted" }, `an older version: edit `, h("a", { href: `#/note/${n.superseded_by}` },
        `note ${n.superseded_by}`), " instead")
      : [h("label", {}, "text (a change is saved as a new version; this one is kept in the history)",
        h("textarea", { name: "content", rows: 4 }, n.content)),
      h("label", {}, "tags (comma-separated; changed in place)",
        h("input", { name: "tags", value: n.tags.join(", ") })),
      h("label", {}, "scope", h("input", { name: "scope", value: n.scope || "" })),
      h("button", { type: "submit", class: "write" }, "Save")],
    box);
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const f = new FormData(form);
    const params = { id: n.id };
    if (f.get("content") !== n.content) params.content = f.get("content");
    const tags = f.get("tags").split(",").map((t) => t.trim()).filter(Boolean);
    if (tags.join("\n") !== n.tags.join("\n")) params.tags = tags;
    if (f.get("scope").trim() !== (n.scope || "")) params.scope = f.get("scope").trim();
    try {
      const res = await call("memory.update", params);
      const what = res.changed.length ? res.changed.join(", ") : "nothing (the values were the same)";
      done(res.previous ? `saved as a new version: note ${res.note.id} supersedes note ${res.previous} ` +
        `(changed: ${what})` : `changed in place: ${what}`, res.note.id);
    } catch (err) { failed(box, err); }
  });
  return form;
}

function archiveForm(n) {
  const box = h("p", { class: "write-error", role: "alert", hidden: true });
  const form = h("form", { class: "write-form", id: "archive-form" }, h("h4", {}, "Archive ", mark()),
    n.archived_at ? h("p", { class: "muted" }, "archived: it no longer comes up in recall")
      : [h("p", { class: "muted" }, "It leaves recall and the graph walk; it stays readable here and in history."),
        h("button", { type: "submit", class: "write" }, "Archive")], box);
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    try {
      const res = await call("memory.archive", { ids: [n.id] });
      done(res.archived.length ? `archived note ${n.id}` : `note ${n.id} was already archived`, n.id);
    } catch (err) { failed(box, err); }
  });
  return form;
}

function forgetForm(n) {
  const box = h("p", { class: "write-error", role: "alert", hidden: true });
  const confirm = h("div", { class: "confirm", hidden: true },
    h("p", {}, `Erase note ${n.id} for good: its text, tags, vectors, edges and the facts only it grounded. ` +
      "This cannot be undone; a tombstone keeps the id, the time, who and why."),
    h("label", {}, "reason (required, kept in the tombstone)", h("textarea", { name: "reason", rows: 2 })),
    h("button", { type: "submit", class: "danger", id: "forget-confirm" }, `Erase note ${n.id}`), " ",
    h("button", { type: "button", class: "plain", onclick: () => { confirm.hidden = true; ask.hidden = false; } },
      "cancel"));
  const ask = h("button", { type: "button", class: "danger", id: "forget-ask",
                            onclick: () => { confirm.hidden = false; ask.hidden = true; } }, "Forget…");
  const form = h("form", { class: "write-form forget", id: "forget-form" }, h("h4", {}, "Forget ", mark()),
    ask, confirm, box);
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    // sent as typed, trimmed: a blank reason is the verb's to refuse (the same error any client gets)
    const reason = new FormData(form).get("reason").trim();
    try {
      const res = await call("memory.forget", { ids: [n.id], reason });
      done(`erased note ${res.note_ids.join(", ")} (${res.edges} edges, ${res.facts.length} facts only it ` +
        "grounded)", n.id);
    } catch (err) { failed(box, err); }
  });
  return form;
}

export function tidyForms(n) {
  return h("section", {}, h("h3", {}, "Tidy"),
    h("div", { class: "tidy", id: "note-tidy" }, editForm(n), archiveForm(n), forgetForm(n)));
}
