// Offline API docs: the server's OpenAPI document as readable text (operations by tag, their params with
// descriptions, the request body and result schemas), and a "try it" box for each operation.
const TOKEN_KEY = "palimpsest.token";
const el = (tag, attrs = {}, ...kids) => {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== null && v !== undefined) e.setAttribute(k, v);
  for (const k of kids.flat()) if (k !== null && k !== undefined) e.append(k instanceof Node ? k : String(k));
  return e;
};

// Docstrings and descriptions mark code with `one` or ``two`` backticks (Markdown and reStructuredText): show it
// as code, not as backticks, and blank-line paragraphs as paragraphs. Text only: nothing is parsed as HTML.
function inline(text) {
  const parts = String(text || "").split(/``([^`]+)``|`([^`]+)`/);
  const out = [];
  for (let i = 0; i < parts.length; i += 3) {
    if (parts[i]) out.push(parts[i]);
    const code = parts[i + 1] || parts[i + 2];
    if (code) out.push(el("code", {}, code));
  }
  return out;
}

function prose(text, cls) {
  const paras = String(text || "").split(/\n\s*\n/).map((p) => p.replace(/\s+/g, " ").trim()).filter(Boolean);
  return paras.map((p) => el("p", cls ? { class: cls } : {}, inline(p)));
}

function headers() {
  const t = sessionStorage.getItem(TOKEN_KEY);
  return t ? { Authorization: `Bearer ${t}` } : {};
}

async function load() {
  const res = await fetch("/openapi.json", { headers: headers() });
  if (res.status === 401) {
    document.getElementById("token-bar").hidden = false;
    return;
  }
  const doc = await res.json();
  render(doc);
}

function deref(doc, schema, depth = 0) {
  if (!schema || depth > 6) return schema || {};
  if (schema.$ref) return deref(doc, schema.$ref.split("/").slice(1).reduce((o, k) => o[k], doc), depth + 1);
  return schema;
}

function typeOf(doc, schema) {
  schema = deref(doc, schema);
  if (schema.anyOf) return schema.anyOf.map((x) => typeOf(doc, x)).join(" | ");
  if (schema.enum) return schema.enum.map((v) => JSON.stringify(v)).join(" | ");
  if (schema.const !== undefined) return JSON.stringify(schema.const);
  if (schema.type === "array") return `${typeOf(doc, schema.items || {})}[]`;
  return schema.title && !schema.type ? schema.title : schema.type || "object";
}

function fields(doc, schema) {
  schema = deref(doc, schema);
  const props = schema.properties || {};
  const req = new Set(schema.required || []);
  if (!Object.keys(props).length) return el("p", { class: "muted" }, "no fields");
  return el("table", { class: "plain" }, el("tr", {}, el("th", {}, "field"), el("th", {}, "type"), el("th", {}, "description")),
    Object.entries(props).map(([name, p]) => el("tr", {}, el("td", {}, el("code", {}, name), req.has(name) ? " *" : ""),
      el("td", {}, typeOf(doc, p) + (p.default !== undefined ? ` = ${JSON.stringify(p.default)}` : "")),
      el("td", {}, inline(deref(doc, p).description || p.description || "")))));
}

function render(doc) {
  const main = document.getElementById("docs");
  main.replaceChildren(el("h2", {}, `${doc.info.title} ${doc.info.version}`), ...prose(doc.info.description, "intro"));
  const byTag = {};
  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      (byTag[(op.tags || ["other"])[0]] ||= []).push({ path, method, op });
    }
  }
  for (const [tag, ops] of Object.entries(byTag)) {
    main.append(el("h3", { id: `tag-${tag}` }, tag));
    for (const { path, method, op } of ops) {
      const body = op.requestBody && op.requestBody.content["application/json"];
      const ok = op.responses && op.responses["200"] && op.responses["200"].content;
      const result = ok && deref(doc, ok["application/json"].schema);
      const params = (op.parameters || []).filter((p) => p.in !== "header");
      const input = el("textarea", { rows: 3, cols: 80, "aria-label": "request body" }, body ? "{}" : "");
      const out = el("pre", { hidden: "" });
      const send = el("button", { type: "button" }, "send");
      send.addEventListener("click", async () => {
        out.hidden = false;
        try {
          const r = await fetch(path, { method: method.toUpperCase(),
            headers: { "Content-Type": "application/json", ...headers() }, body: method === "get" ? undefined : input.value });
          out.textContent = `${r.status}\n` + JSON.stringify(await r.json(), null, 2);
        } catch (err) { out.textContent = String(err); }
      });
      main.append(el("details", { class: "docs-op", "data-path": path },
        el("summary", {}, el("span", { class: `method ${method}` }, method.toUpperCase()), el("code", {}, path), "  ",
          el("span", { class: "muted" }, inline(op.summary))),
        el("div", { class: "body" }, prose(op.description),
          params.length ? [el("h4", {}, "parameters"), el("table", { class: "plain" }, params.map((p) =>
            el("tr", {}, el("td", {}, el("code", {}, p.name)), el("td", {}, p.in), el("td", {}, typeOf(doc, p.schema)),
              el("td", {}, inline(p.description)))))] : null,
          body ? [el("h4", {}, "body"), fields(doc, body.schema)] : null,
          result ? [el("h4", {}, "result"), fields(doc, deref(doc, result.properties ? result.properties.result : result))] : null,
          path.includes("{") ? null : [el("h4", {}, "try it"), body ? input : null, " ", send, out])));
    }
  }
}

document.getElementById("token-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  sessionStorage.setItem(TOKEN_KEY, document.getElementById("token").value.trim());
  document.getElementById("token-bar").hidden = true;
  load();
});
load().catch((err) => {
  const box = document.getElementById("error");
  box.hidden = false; box.textContent = String(err);
});
