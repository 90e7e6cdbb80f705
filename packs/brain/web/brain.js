// Brain: each weight's posterior over the event log (brain.history: the mean and a ±1 sd band of the Beta, one
// point per event), for the namespace's profile and every profile bound to an actor (brain.state).
import { call, h, s, fmtTime } from "/ui/app.js";

const COMPONENTS = { relevance: "#2563eb", salience: "#d97706", temporal: "#059669" };
const SIGNALS = { useful: "#16a34a", not_useful: "#dc2626", correction: "#7c3aed" };

export async function render(root) {
  const st = await call("brain.state", {});
  root.append(h("h2", {}, "Brain"),
    h("p", { class: "muted" }, "The score weights recall ranks with are projected from these posteriors; " +
      "feedback moves them. Curves replay the event log one event at a time."));
  const profiles = [{ who: "the namespace", profile: st.state.profile, actor: null }];
  for (const [actor, profile] of Object.entries(st.bindings)) {
    if (actor !== "*") profiles.push({ who: `actor ${actor}`, profile, actor });
  }
  const table = h("table", { class: "plain", id: "brain-profiles" },
    // "feedback since reset": brain.state counts feedback events since the profile's last init or reset, while
    // its log (the chart) also holds the init and reset events themselves; one column named "events" read 3 where
    // the chart said 4 (issue 42, bug 7)
    h("tr", {}, ["for", "profile", "feedback since reset", ...Object.keys(COMPONENTS).map((c) => `${c} mean`), "weights now"]
      .map((c) => h("th", {}, c))));
  root.append(h("h3", {}, "Profiles"), table);
  for (const p of profiles) {
    const ps = p.actor ? await call("brain.state", { actor: p.actor }) : st;
    const post = ps.state.posteriors;
    table.append(h("tr", { class: "profile-row" }, h("td", {}, p.who), h("td", {}, ps.state.profile),
      h("td", { class: "feedback-count" }, String(ps.state.feedback_events)),
      Object.keys(COMPONENTS).map((c) => h("td", {}, post[c] ? post[c].mean.toFixed(3) : "—")),
      h("td", {}, ps.projected ? Object.entries(ps.projected).map(([k, v]) => `${k} ${v.toFixed(2)}`).join(", ") : "prior")));
  }
  for (const p of profiles) {
    const hist = await call("brain.history", { profile: p.profile });
    const since = feedbackSinceReset(hist.points);
    const shown = hist.points.length < hist.events ? ` (the newest ${hist.points.length} drawn)` : "";
    root.append(h("h3", { class: "profile-heading", dataset: { feedback: since, events: hist.events } },
      `Profile ${hist.profile} (${p.who}): ${since} feedback since reset · ${hist.events} events in its log, ` +
      `init and resets included${shown}`), chart(hist));
  }
}

function chart(hist) {
  const W = 1000, H = 240, L = 50, R = 20, T = 16, B = 36;
  const pts = hist.points;
  const svg = s("svg", { viewBox: `0 0 ${W} ${H}`, width: "100%", class: "chart posterior-chart",
                         dataset: { points: pts.length } });
  if (!pts.length) { svg.append(s("text", { x: L, y: H / 2 }, "no events yet")); return svg; }
  const x = (i) => L + (pts.length === 1 ? 0.5 : i / (pts.length - 1)) * (W - L - R);
  const vals = pts.flatMap((p) => Object.values(p.posteriors).flatMap((q) => { const sd = sdOf(q); return [q.mean - sd, q.mean + sd]; }));
  let lo = Math.max(0, Math.min(...vals) - 0.02), hi = Math.min(1, Math.max(...vals) + 0.02);
  if (hi - lo < 0.05) { lo = Math.max(0, lo - 0.03); hi = Math.min(1, hi + 0.03); }
  const y = (v) => T + (1 - (v - lo) / (hi - lo)) * (H - T - B);
  const axis = s("g", { class: "axis" });
  for (let k = 0; k <= 4; k++) {
    const v = lo + (k / 4) * (hi - lo);
    axis.append(s("line", { x1: L, x2: W - R, y1: y(v), y2: y(v) }), s("text", { x: 6, y: y(v) + 4 }, v.toFixed(2)));
  }
  svg.append(axis);
  for (const [c, colour] of Object.entries(COMPONENTS)) {
    const upper = pts.map((p, i) => `${x(i)},${y(p.posteriors[c].mean + sdOf(p.posteriors[c]))}`);
    const lower = pts.map((p, i) => `${x(i)},${y(p.posteriors[c].mean - sdOf(p.posteriors[c]))}`).reverse();
    svg.append(s("polygon", { points: [...upper, ...lower].join(" "), fill: colour, "fill-opacity": 0.12 }),
      s("polyline", { points: pts.map((p, i) => `${x(i)},${y(p.posteriors[c].mean)}`).join(" "), fill: "none",
                      stroke: colour, "stroke-width": 2, class: `line-${c}` }),
      s("text", { x: W - R - 70, y: y(pts[pts.length - 1].posteriors[c].mean) - 6, fill: colour }, c));
  }
  pts.forEach((p, i) => {
    const colour = p.kind === "feedback" ? SIGNALS[p.signal] || "#64748b" : "#111827";
    svg.append(s("circle", { cx: x(i), cy: H - B + 12, r: 4, fill: colour, class: `event ${p.kind}` },
      s("title", {}, `#${p.seq} ${p.kind}${p.signal ? " " + p.signal : ""}${p.note_id ? " on note " + p.note_id : ""}` +
        `${p.actor ? " by " + p.actor : ""} · ${fmtTime(p.at)}`)));
  });
  svg.append(s("text", { x: L, y: H - 4, class: "muted" },
    `${fmtTime(pts[0].at)} → ${fmtTime(pts[pts.length - 1].at)} · dots: events (green useful, red not useful, purple correction)`));
  return svg;
}

// Feedback events after the newest init or reset: what brain.state's feedback_events counts.
function feedbackSinceReset(points) {
  let n = 0;
  for (const p of points) n = p.kind === "feedback" ? n + 1 : 0;
  return n;
}

function sdOf(q) {
  const n = q.alpha + q.beta;
  return Math.sqrt((q.alpha * q.beta) / (n * n * (n + 1)));
}
