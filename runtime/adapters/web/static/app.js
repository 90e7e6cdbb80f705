// The page's core: the API client (the same POST /v1/verbs/{verb} endpoints as any client), a hash router, and
// small DOM helpers. Views are modules exporting render(root, query, current): the packs contribute them (the
// palimpsest_web_pages hook, ADR 0035) and /ui/pages.json lists them, so this page names no pack's view.
const VIEWS = {};
let firstView = null;  // the view of an empty or unknown address: the first page listed
const TOKEN_KEY = "palimpsest.token";
const NS_KEY = "palimpsest.namespace";

export class ApiError extends Error {
  constructor(status, body) {
    const e = (body && body.error) || {};
    super(e.message || `HTTP ${status}`);
    this.status = status; this.code = e.code; this.details = e.details;
  }
}

export function namespace() { return localStorage.getItem(NS_KEY) || ""; }

export function setNamespace(ns) {
  if (ns) localStorage.setItem(NS_KEY, ns); else localStorage.removeItem(NS_KEY);
  document.getElementById("namespace").value = ns || "";
}

// Call a verb: the result object, or an ApiError in the one error shape. A 401 asks for the token once.
export async function call(verb, params = {}, { ns = namespace(), actor = null } = {}) {
  const headers = { "Content-Type": "application/json" };
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) headers["Authorization"] = `Bearer ${token}`;
  if (actor) headers["X-Palimpsest-Actor"] = actor;
  const url = `/v1/verbs/${encodeURIComponent(verb)}` + (ns ? `?namespace=${encodeURIComponent(ns)}` : "");
  const res = await fetch(url, { method: "POST", headers, body: JSON.stringify(params) });
  let body = null;
  try { body = await res.json(); } catch (_) { /* not JSON: reported below */ }
  if (res.status === 401) showTokenBar();
  if (!res.ok || !body || body.ok !== true) throw new ApiError(res.status, body);
  return body.result;
}

function showTokenBar() {
  const bar = document.getElementById("token-bar");
  bar.hidden = false;
  document.getElementById("token").focus();
}

export function showError(err) {
  const box = document.getElementById("error");
  if (!err) { box.hidden = true; box.textContent = ""; return; }
  box.hidden = false;
  box.textContent = err instanceof ApiError ? `${err.code || "error"}: ${err.message}` : String(err.message || err);
}

// DOM helpers: h("div", {class: "x", onclick: f}, child, "text")
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  return fill(el, attrs, children);
}
export function s(tag, attrs = {}, ...children) {
  const el = document.createElementNS("http://www.w3.org/2000/svg", tag);
  return fill(el, attrs, children);
}
function fill(el, attrs, children) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "dataset") Object.assign(el.dataset, v);
    else el.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

// A time from the API: naive ISO times are UTC (the store keeps naive UTC); an explicit offset is honoured.
export function parseT(iso) {
  return Date.parse(/([zZ]|[+-]\d\d:?\d\d)$/.test(iso) ? iso : `${iso}Z`);
}

// Times are shown as the API gives them, in UTC, and say so: a reader in another zone must not take them for local.
export function fmtTime(iso, withTime = true) {
  if (!iso) return "—";
  const t = iso.replace("T", " ");
  return withTime ? `${t.slice(0, 16)} UTC` : t.slice(0, 10);
}

export function go(view, query = {}) {
  const q = new URLSearchParams(Object.entries(query).filter(([, v]) => v !== null && v !== undefined && v !== ""));
  location.hash = `#/${view}` + (q.toString() ? `?${q}` : "");
}

function parseHash() {
  const raw = location.hash.replace(/^#\/?/, "");
  const [path, qs] = raw.split("?");
  const [view, ...rest] = (path || "").split("/");
  const query = Object.fromEntries(new URLSearchParams(qs || ""));
  if (rest.length) query.id = rest.join("/");
  return { view: VIEWS[view] ? view : firstView, query };
}

let renderSeq = 0;
async function route() {
  const { view, query } = parseHash();
  for (const a of document.querySelectorAll("#nav a")) a.classList.toggle("active", a.dataset.view === view);
  const root = document.getElementById("view");
  const seq = ++renderSeq;
  showError(null);
  root.replaceChildren();
  root.dataset.view = view;
  if (!view) { root.append(h("p", { class: "muted" }, "no pack adds a page to this view")); return; }
  try {
    await VIEWS[view].render(root, query, () => seq === renderSeq);
  } catch (err) {
    if (seq === renderSeq) showError(err);
  }
}

// The namespaces that hold a graph (kg.namespaces): a namespace with facts but no notes is listed too.
export async function graphNamespaces() {
  try { return (await call("kg.namespaces", {}, { ns: "" })).namespaces.map((n) => n.name); } catch (_) { return []; }
}

async function loadNamespaces() {
  const select = document.getElementById("namespace");
  let names = await graphNamespaces();
  try {
    names = names.concat((await call("memory.namespaces", {}, { ns: "" })).namespaces.map((n) => n.name));
  } catch (_) { /* the memory pack may be disabled: the default namespace still works */ }
  for (const name of [...new Set(names)].sort()) {
    if (![...select.options].some((o) => o.value === name)) select.append(h("option", { value: name }, name));
  }
  const ns = namespace();
  if (ns && ![...select.options].some((o) => o.value === ns)) select.append(h("option", { value: ns }, ns));
  select.value = ns;
}

// The pages the loaded packs contribute, in their order; one that fails to load is left out (said in the console).
async function loadPages() {
  const pages = await (await fetch("/ui/pages.json")).json();
  const nav = document.getElementById("nav");
  for (const p of pages) {
    try { VIEWS[p.name] = await import(p.src); } catch (err) { console.error(`page ${p.name}: ${err}`); continue; }
    firstView = firstView || p.name;
    if (p.title) nav.append(h("a", { href: `#/${p.name}`, dataset: { view: p.name } }, p.title));
  }
}

function start() {
  document.getElementById("token-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, document.getElementById("token").value.trim());
    document.getElementById("token-bar").hidden = true;
    loadNamespaces().then(route);
  });
  document.getElementById("namespace").addEventListener("change", (ev) => { setNamespace(ev.target.value); route(); });
  window.addEventListener("hashchange", route);
  window.palimpsest = { call, go, views: VIEWS };  // for the console and the browser tests
  loadPages().then(loadNamespaces).then(route);
}

start();
