// Timeline: every predicate of a subject as bars on a valid-time axis, styled by the status kg.timeline gives
// (current, superseded, retracted, ended, upcoming; late arrivals outlined), with a known_at slider that replays
// what was believed at each moment a belief changed. Each bar links to its source note.
import { call, h, s, go, fmtTime, parseT } from "/ui/app.js";

const W = 1100, LABEL = 150, LANE = 26, PAD = 34;
const DAY = 86400000;

export async function render(root, q, current) {
  const ents = await call("kg.entities", { limit: 500 }).catch(() => ({ entities: [] }));
  const form = h("form", { class: "bar", id: "timeline-form" },
    h("label", {}, "subject", h("input", { name: "subject", value: q.subject || "", list: "entity-names",
                                           required: true, placeholder: "Orion" })),
    h("datalist", { id: "entity-names" }, ents.entities.map((e) => h("option", { value: e.name }))),
    h("button", { type: "submit" }, "Show"));
  form.addEventListener("submit", (ev) => { ev.preventDefault(); go("timeline", { subject: new FormData(form).get("subject") }); });
  root.append(h("h2", {}, "Timeline"), form);
  if (!q.subject) {
    root.append(h("p", { class: "muted" }, "Pick an entity: " ),
      h("p", {}, ents.entities.slice(0, 30).map((e, i) => [i ? " · " : "",
        h("a", { href: `#/timeline?subject=${encodeURIComponent(e.name)}` }, e.name)])));
    return;
  }
  const now = await call("kg.timeline", { subject: q.subject });
  const domain = domainOf(now);
  const moments = now.moments;
  const slider = h("input", { type: "range", id: "known-at", min: 0, max: moments.length, step: 1,
                              value: q.k !== undefined ? Number(q.k) : moments.length });
  const label = h("span", { id: "known-at-label" });
  const chart = h("div", { id: "timeline-chart", class: "chart" });
  const table = h("div", { id: "timeline-table" });
  root.append(
    h("div", { class: "timeline-controls" }, h("strong", {}, "believed at"), slider, label),
    legend(), chart, table);
  let pending = 0;
  const draw = async () => {
    const i = Number(slider.value);
    const knownAt = i < moments.length ? moments[i] : null;
    label.textContent = knownAt ? `${fmtTime(knownAt)} (${i + 1} of ${moments.length} belief changes)`
                                : "now (every belief, retractions included)";
    const mine = ++pending;
    const res = knownAt ? await call("kg.timeline", { subject: q.subject, known_at: knownAt }) : now;
    if (mine !== pending || !current()) return;
    chart.replaceChildren(drawTimeline(res, domain));
    table.replaceChildren(factTable(res));
    chart.dataset.knownAt = knownAt || "now";
    chart.dataset.bars = String(res.lines.reduce((a, l) => a + l.facts.length, 0));
  };
  slider.addEventListener("input", draw);
  await draw();
}

function legend() {
  return h("div", { class: "legend" }, ["current", "superseded", "ended", "retracted", "late"].map((k) =>
    h("span", {}, h("i", { class: k }), k === "late" ? "late arrival" : k)));
}

export function domainOf(res) {
  const ts = [parseT(res.reference)];
  for (const l of res.lines) for (const f of l.facts) {
    if (f.fact.valid_from) ts.push(parseT(f.fact.valid_from));
    if (f.fact.valid_to) ts.push(parseT(f.fact.valid_to));
  }
  let lo = Math.min(...ts), hi = Math.max(...ts);
  if (hi - lo < 30 * DAY) { lo -= 15 * DAY; hi += 15 * DAY; }
  const pad = (hi - lo) * 0.06;
  return [lo - pad, hi + pad];
}

function lanes(facts) {  // greedy interval packing: overlapping bars (coexisting, retracted) get their own lane
  const ends = [];
  return facts.map((f) => {
    const a = f.fact.valid_from ? parseT(f.fact.valid_from) : -Infinity;
    const b = f.fact.valid_to ? parseT(f.fact.valid_to) : Infinity;
    let lane = ends.findIndex((e) => e <= a);
    if (lane < 0) { lane = ends.length; ends.push(b); } else ends[lane] = b;
    return lane;
  });
}

function ticks([lo, hi]) {
  const span = hi - lo, out = [];
  const steps = [[DAY, "day"], [7 * DAY, "week"], [30 * DAY, "month"], [91 * DAY, "quarter"], [365 * DAY, "year"],
                 [5 * 365 * DAY, "5y"], [25 * 365 * DAY, "25y"], [100 * 365 * DAY, "100y"]];
  const [, unit] = steps.find(([ms]) => span / ms <= 12) || steps[steps.length - 1];
  const d = new Date(lo);
  const t = new Date(Date.UTC(d.getUTCFullYear(), unit === "day" || unit === "week" ? d.getUTCMonth() : 0, 1));
  const years = { year: 1, "5y": 5, "25y": 25, "100y": 100 }[unit];
  while (t.getTime() <= hi) {
    if (t.getTime() >= lo) out.push(new Date(t));
    if (unit === "day") t.setUTCDate(t.getUTCDate() + 1);
    else if (unit === "week") t.setUTCDate(t.getUTCDate() + 7);
    else if (unit === "month") t.setUTCMonth(t.getUTCMonth() + 1);
    else if (unit === "quarter") t.setUTCMonth(t.getUTCMonth() + 3);
    else t.setUTCFullYear(t.getUTCFullYear() + years);
  }
  const fmt = (x) => years ? String(x.getUTCFullYear())
    : unit === "month" || unit === "quarter" ? x.toISOString().slice(0, 7) : x.toISOString().slice(0, 10);
  return out.map((x) => ({ t: x.getTime(), label: fmt(x) }));
}

export function drawTimeline(res, domain) {
  const [lo, hi] = domain;
  const x = (t) => LABEL + ((t - lo) / (hi - lo)) * (W - LABEL - 20);
  const rows = res.lines.map((l) => ({ line: l, lanes: lanes(l.facts) }));
  const height = PAD + rows.reduce((a, r) => a + (Math.max(0, ...r.lanes) + 1) * LANE + 10, 0) + 30;
  const svg = s("svg", { viewBox: `0 0 ${W} ${height}`, width: "100%", class: "timeline", role: "img",
                         "aria-label": `timeline of ${res.subject.name}` });
  const axis = s("g", { class: "axis" });
  for (const tk of ticks(domain)) {
    axis.append(s("line", { x1: x(tk.t), x2: x(tk.t), y1: PAD - 6, y2: height - 24 }),
                s("text", { x: x(tk.t) + 3, y: PAD - 12 }, tk.label));
  }
  svg.append(axis);
  let y = PAD;
  for (const { line, lanes: ls } of rows) {
    const n = Math.max(0, ...ls) + 1;
    svg.append(s("text", { x: 8, y: y + LANE / 2 + 4, class: "predicate" }, line.predicate));
    line.facts.forEach((tf, i) => {
      const f = tf.fact;
      const a = f.valid_from ? x(parseT(f.valid_from)) : LABEL;
      const b = f.valid_to ? x(parseT(f.valid_to)) : W - 20;
      const top = y + ls[i] * LANE + 3;
      const width = Math.max(tf.empty ? 3 : 6, b - a);
      const cls = `bar ${tf.status}` + (tf.late ? " late" : "");
      const title = `${line.predicate} = ${f.object}\nvalid ${fmtTime(f.valid_from, false)} → ` +
        `${f.valid_to ? fmtTime(f.valid_to, false) : "open"}\n${tf.status}${tf.late ? ", arrived late" : ""}` +
        `\nrecorded ${fmtTime(f.recorded_at)}` + (f.retracted_at ? `\nretracted ${fmtTime(f.retracted_at)}` : "") +
        `\nsource ${f.source_id || "none"} · confidence ${f.confidence.toFixed(2)}`;
      const g = s("g", { class: cls, dataset: { status: tf.status, object: f.object, factId: f.fact_id } },
        s("title", {}, title),
        s("rect", { x: a, y: top, width, height: LANE - 6, rx: 3 }),
        s("text", { x: a + 5, y: top + LANE / 2 + 1 }, f.object + (tf.late ? " (late)" : "")));
      const src = f.source_id && /^m:\d+$/.test(f.source_id) ? f.source_id.slice(2) : null;
      svg.append(src ? s("a", { href: `#/note/${src}` }, g) : g);
    });
    y += n * LANE + 10;
  }
  const ref = parseT(res.reference);
  if (ref >= lo && ref <= hi) {
    svg.append(s("line", { x1: x(ref), x2: x(ref), y1: PAD - 6, y2: height - 24, stroke: "#111827",
                           "stroke-dasharray": "3 3" }),
               s("text", { x: x(ref) + 4, y: height - 10 }, res.known_at ? `known at ${fmtTime(res.known_at)}` : "now"));
  }
  return svg;
}

function factTable(res) {
  const rows = [];
  for (const l of res.lines) for (const tf of l.facts) {
    const f = tf.fact;
    const src = f.source_id && /^m:\d+$/.test(f.source_id) ? h("a", { href: `#/note/${f.source_id.slice(2)}` }, f.source_id) : (f.source_id || "—");
    rows.push(h("tr", { class: `row-${tf.status}` }, h("td", {}, l.predicate), h("td", {}, f.object),
      h("td", {}, fmtTime(f.valid_from, false)), h("td", {}, f.valid_to ? fmtTime(f.valid_to, false) : "open"),
      h("td", {}, tf.status + (tf.late ? ", late" : "")), h("td", {}, fmtTime(f.recorded_at)), h("td", {}, src)));
  }
  return h("table", { class: "plain" }, h("tr", {}, ["predicate", "object", "valid from", "valid to", "status",
    "recorded", "source"].map((c) => h("th", {}, c))), rows);
}
