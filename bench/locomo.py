"""LoCoMo dialog-level evidence recall for the memory pack's retrieval schemes.

Usage: python bench/locomo.py [--file PATH] [--embedder wordllama|minilm|all]
                              [--out bench/results/locomo.md] [--perf N]

Every turn of a conversation is one note: content ``"<speaker>: <text>"`` (+
``" [image: <caption>]"``), thread = its session, occurred_at = the session
date.  One index per conversation (the scope filter).  Evidence ids are
normalised as ../shared/data/README.md says; questions whose evidence is empty
after normalisation count as recall 1.  Nothing about a question but its text
is used at retrieval time.

Imports only the pure ``packs.memory`` modules (no runtime).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import re
import statistics
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from packs.memory import fusion  # noqa: E402
from packs.memory.bm25 import BM25Index  # noqa: E402
from packs.memory import ranking  # noqa: E402
from packs.memory.context import (ThreadExpander, ThreadLinks, date_window_boost, query_date_windows,  # noqa: E402
                                  render_dated, speaker_boost)
from packs.memory.embedders import EmbedderUnavailable, get_embedder  # noqa: E402
from packs.memory.text import tokenize  # noqa: E402
from packs.memory.vectors import VectorIndex  # noqa: E402

DEFAULT_FILE = ROOT / ".." / "shared" / "data" / "locomo" / "locomo-dev5.json"
KS = (5, 10, 25, 50)
CATS = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
POOL = 200  # candidates per leg (the runtime's cap: max(limit*20, 40) <= 200)

_MONTHS = {m.lower(): i for i, m in enumerate(
    ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
     "November", "December"], 1)}


# ------------------------------------------------------------------- data
def parse_session_date(s: str) -> dt.datetime | None:
    m = re.match(r"\s*(\d{1,2}):(\d{2})\s*([ap]m)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})", s or "")
    if not m:
        return None
    h, mi, ap, d, mon, y = m.groups()
    hour = int(h) % 12 + (12 if ap.lower() == "pm" else 0)
    return dt.datetime(int(y), _MONTHS[mon.lower()], int(d), hour, int(mi))


def normalise_evidence(evidence, valid: set[str]) -> list[str]:
    """Split on ';'/whitespace, normalise "D:11:26"/"D30:05" -> "D11:26"/"D30:5", drop unknown turns."""
    out: list[str] = []
    for e in evidence or []:
        for part in re.split(r"[;\s]+", str(e)):
            m = re.fullmatch(r"D:?(\d+):(\d+)", part.strip())
            if m:
                x = f"D{int(m.group(1))}:{int(m.group(2))}"
                if x in valid and x not in out:
                    out.append(x)
    return out


@dataclass
class Turn:
    id: int
    dia: str
    content: str
    speaker: str
    thread: str
    occurred_at: dt.datetime | None


@dataclass
class Conversation:
    sid: str
    speakers: list[str]
    turns: list[Turn]
    qa: list[dict] = field(default_factory=list)


def load(path: Path) -> list[Conversation]:
    data = json.loads(Path(path).read_text())
    convs: list[Conversation] = []
    nid = 0
    for s in data:
        c = s["conversation"]
        nums = sorted(int(k.split("_")[1]) for k in c if re.fullmatch(r"session_\d+", k) and isinstance(c[k], list))
        turns: list[Turn] = []
        for n in nums:
            date = parse_session_date(c.get(f"session_{n}_date_time", ""))
            for t in c[f"session_{n}"]:
                content = f"{t['speaker']}: {t['text']}"
                if t.get("blip_caption"):
                    content += f" [image: {t['blip_caption']}]"
                turns.append(Turn(nid, t["dia_id"], content, t["speaker"], f"{s['sample_id']}/session_{n}", date))
                nid += 1
        valid = {t.dia for t in turns}
        qa = [
            {"q": q["question"], "cat": int(q["category"]), "ev": normalise_evidence(q.get("evidence"), valid)}
            for q in s["qa"]
        ]
        speakers = [c.get("speaker_a", ""), c.get("speaker_b", "")]
        convs.append(Conversation(s["sample_id"], speakers, turns, qa))
    return convs


# ---------------------------------------------------------------- schemes
@dataclass(frozen=True)
class ContextConfig:
    """Weights of the query-time context signals. Defaults are the shipped configuration."""

    neighbour_alpha: float = 0.5  # 0 disables neighbour smoothing
    thread_beta: float = 0.5  # 0 disables thread propagation
    thread_top: int = 3
    date_gamma: float = 0.0  # query-date window boost (measured here only: within noise, not in recall)
    speaker_gamma: float = 0.0  # speaker boost (measured here only: within noise, not in recall)


def apply_context(fused, query, *, links: ThreadLinks, config: ContextConfig, occurred_at=None, speaker_of=None,
                  person_names=()) -> dict[int, float]:
    """Recall's context adjuster (``ranking.context``) over a conversation's thread links, then the optional
    date-window and speaker boosts: the final score of every pooled note."""
    ids = list(fused) + [j for i in fused for j in links.neighbours(i) if j is not None]
    size = max(ids, default=0) + 1
    prev, nxt, thread = np.full(size, -1), np.full(size, -1), np.zeros(size, dtype=np.int64)
    codes: dict = {}
    for i in set(ids):
        p, n = links.neighbours(i)
        prev[i], nxt[i] = (-1 if p is None else p), (-1 if n is None else n)
        t = links.thread_of(i)
        thread[i] = 0 if t is None else codes.setdefault(t, len(codes) + 1)
    pool = ranking.context(fused, prev=prev, nxt=nxt, thread=thread, alpha=config.neighbour_alpha,
                           beta=config.thread_beta, top=config.thread_top)
    scores = dict(zip(pool.ids.tolist(), pool.scores.tolist()))
    if config.date_gamma and occurred_at is not None:
        scores, _ = date_window_boost(scores, occurred_at, query_date_windows(query), config.date_gamma)
    if config.speaker_gamma and speaker_of is not None:
        scores, _ = speaker_boost(scores, speaker_of, query, person_names, config.speaker_gamma)
    return scores


@dataclass(frozen=True)
class Scheme:
    name: str
    bm25_w: float = 0.7  # weight of the text leg in min-max fusion (0 = dense only)
    dense_w: float = 0.3  # weight of the vector leg (0 = BM25 only)
    fusion: str = "weighted"  # weighted | rrf
    dated: bool = True  # index "d Month YYYY: content"
    expansion: float = 0.5  # thread-neighbour document expansion weight (0 = off)
    ctx: ContextConfig = ContextConfig()


OURS = Scheme("ours")
BASELINES = [
    Scheme("BM25 plain", 1, 0, dated=False, expansion=0, ctx=ContextConfig(0, 0)),
    Scheme("BM25 dated", 1, 0, expansion=0, ctx=ContextConfig(0, 0)),
    Scheme("dense plain", 0, 1, dated=False, expansion=0, ctx=ContextConfig(0, 0)),
    Scheme("dense dated", 0, 1, expansion=0, ctx=ContextConfig(0, 0)),
    Scheme("min-max 0.5/0.5 dated", 0.5, 0.5, expansion=0, ctx=ContextConfig(0, 0)),
    Scheme("RRF k=60 dated", 1, 1, fusion="rrf", expansion=0, ctx=ContextConfig(0, 0)),
]
ABLATIONS = [
    replace(OURS, name="ours − neighbour expansion (write time)", expansion=0.0),
    replace(OURS, name="ours − neighbour smoothing (query time)", ctx=replace(OURS.ctx, neighbour_alpha=0.0)),
    replace(OURS, name="ours − both neighbour signals", expansion=0.0, ctx=replace(OURS.ctx, neighbour_alpha=0.0)),
    replace(OURS, name="ours − thread propagation", ctx=replace(OURS.ctx, thread_beta=0.0)),
    replace(OURS, name="ours − all query-time context (expansion + fusion only)", ctx=ContextConfig(0, 0)),
    replace(OURS, name="ours − date rendering (plain text)", dated=False),
    replace(OURS, name="ours − dense leg (BM25 only)", bm25_w=1.0, dense_w=0.0),
    replace(OURS, name="ours with 0.5/0.5 leg weights", bm25_w=0.5, dense_w=0.5),
    replace(OURS, name="ours + query-date window (γ=0.2)", ctx=replace(OURS.ctx, date_gamma=0.2)),
    replace(OURS, name="ours − date rendering + query-date window", dated=False,
            ctx=replace(OURS.ctx, date_gamma=0.2)),
    replace(OURS, name="ours + speaker boost (γ=0.1)", ctx=replace(OURS.ctx, speaker_gamma=0.1)),
]


# ---------------------------------------------------------------- indexes
def indexed_text(t: Turn, dated: bool) -> str:
    return render_dated(t.content, t.occurred_at) if dated else t.content


class ConvIndex:
    """Per-conversation indexes, built lazily per (dated, expansion) and per (embedder, dated)."""

    def __init__(self, conv: Conversation):
        self.conv = conv
        self.links = ThreadLinks()
        for t in conv.turns:
            self.links.add(t.id, t.thread)
        self.by_id = {t.id: t for t in conv.turns}
        self._bm25: dict[tuple, BM25Index] = {}
        self._vec: dict[tuple, VectorIndex] = {}

    def bm25(self, dated: bool, expansion: float) -> BM25Index:
        key = (dated, expansion)
        if key not in self._bm25:
            idx = BM25Index()
            if expansion:
                ex = ThreadExpander(expansion)
                for t in self.conv.turns:  # the write-time path: incremental, in arrival order
                    changed = ex.add(t.id, t.thread, tokenize(indexed_text(t, dated)))
                    idx.add_weighted(list(changed), list(changed.values()))
            else:
                idx.add([t.id for t in self.conv.turns], [indexed_text(t, dated) for t in self.conv.turns])
            self._bm25[key] = idx
        return self._bm25[key]

    def vectors(self, emb, dated: bool, cache: dict) -> VectorIndex:
        key = (emb.name, dated)
        if key not in self._vec:
            m = cache[key][self.conv.sid]
            vi = VectorIndex(emb.dim)
            vi.add([t.id for t in self.conv.turns], m)
            self._vec[key] = vi
        return self._vec[key]


def retrieve(ci: ConvIndex, scheme: Scheme, query: str, qvec, emb, cache) -> list[int]:
    legs = {}
    if scheme.bm25_w > 0:
        legs["text"] = ci.bm25(scheme.dated, scheme.expansion).search(query, POOL)
    if scheme.dense_w > 0 and emb is not None:
        legs["vector"] = ci.vectors(emb, scheme.dated, cache).search(qvec, POOL, min_cosine=0.10)
    if scheme.fusion == "rrf":
        fused = fusion.rrf(legs, k=60).scores
    else:
        fused = fusion.weighted(legs, {"text": scheme.bm25_w, "vector": scheme.dense_w}).scores
    if scheme.expansion == 0 and scheme.ctx.neighbour_alpha == 0 and scheme.ctx.thread_beta == 0 \
            and scheme.ctx.date_gamma == 0 and scheme.ctx.speaker_gamma == 0:
        scores = fused
    else:
        by_id = ci.by_id
        scores = apply_context(
            fused, query, links=ci.links,
            occurred_at=lambda i: by_id[i].occurred_at if i in by_id else None,
            speaker_of=lambda i: by_id[i].speaker if i in by_id else None,
            person_names=ci.conv.speakers, config=scheme.ctx,
        )
    return [i for i, _ in fusion.ranked(scores, max(KS))]


def evaluate(convs, cis, scheme, emb, cache, qcache) -> dict:
    rows = []
    for conv, ci in zip(convs, cis):
        dia = {t.dia: t.id for t in conv.turns}
        for j, qa in enumerate(conv.qa):
            qvec = qcache[emb.name][conv.sid][j] if emb is not None else None
            ranking = retrieve(ci, scheme, qa["q"], qvec, emb, cache)
            ev = {dia[e] for e in qa["ev"]}
            rec = [1.0 if not ev else len(ev & set(ranking[:k])) / len(ev) for k in KS]
            rows.append((qa["cat"], rec))
    overall = np.mean([r for _, r in rows], axis=0) * 100
    per_cat = {c: np.mean([r for cc, r in rows if cc == c], axis=0) * 100 for c in sorted({c for c, _ in rows})}
    return {"overall": overall, "cat": per_cat, "n": len(rows)}


# ------------------------------------------------------------------- perf
def perf(convs, emb, n_notes: int, out: list[str]) -> None:
    """Ingest and query latency of the shipped scheme at ``n_notes`` (turns replicated into new threads)."""
    base = [t for c in convs for t in c.turns]
    notes = []
    for k in range(math.ceil(n_notes / len(base))):
        for t in base:
            if len(notes) == n_notes:
                break
            notes.append((len(notes), f"copy{k}/{t.thread}", render_dated(t.content, t.occurred_at)))
    bm, ex, vi = BM25Index(), ThreadExpander(OURS.expansion), VectorIndex(emb.dim)
    batch = 256
    t0 = time.perf_counter()
    emb_time = 0.0
    for s in range(0, len(notes), batch):
        chunk = notes[s : s + batch]
        changed = {}
        for i, th, text in chunk:
            changed.update(ex.add(i, th, tokenize(text)))
        bm.add_weighted(list(changed), list(changed.values()))
        e0 = time.perf_counter()
        m = emb.embed([text for _, _, text in chunk])
        emb_time += time.perf_counter() - e0
        vi.add([i for i, _, _ in chunk], m)
    total = time.perf_counter() - t0
    # single-note ingest on top of the full index (the interactive path)
    single = []
    for j in range(300):
        i = len(notes) + j
        text = render_dated(base[j].content, base[j].occurred_at)
        s0 = time.perf_counter()
        changed = ex.add(i, "live/thread", tokenize(text))
        bm.add_weighted(list(changed), list(changed.values()))
        vi.add([i], emb.embed([text]))
        single.append((time.perf_counter() - s0) * 1000)
    qs = [qa["q"] for c in convs for qa in c.qa][:300]
    qv = emb.embed(qs)
    lat, lat_t, lat_v = [], [], []
    for q, v in zip(qs, qv):
        s0 = time.perf_counter()
        text = bm.search(q, POOL)
        s1 = time.perf_counter()
        vec = vi.search(v, POOL, min_cosine=0.10)
        s2 = time.perf_counter()
        fused = fusion.weighted({"text": text, "vector": vec}, {"text": OURS.bm25_w, "vector": OURS.dense_w}).scores
        res = apply_context(fused, q, links=ex.links, config=OURS.ctx)
        fusion.ranked(res, 10)
        s3 = time.perf_counter()
        lat.append((s3 - s0) * 1000)
        lat_t.append((s1 - s0) * 1000)
        lat_v.append((s2 - s1) * 1000)
    p = lambda xs, q: float(np.percentile(xs, q))  # noqa: E731
    out += [
        f"\n## Speed at {len(notes):,} notes ({emb.name}, shipped scheme)\n",
        f"Unscoped (no `allowed`), 2 shared cores, 1-min load average at the end {__import__('os').getloadavg()[0]:.1f} "
        "(anything above ~1 means another process competed for the cores: compare runs side by side).\n",
        "| measure | value |", "|---|---|",
        f"| batch ingest (256/batch: tokenise + expansion + BM25 + embed + vector add) | {len(notes) / total:,.0f} notes/s |",
        f"| of which embedding | {emb_time:.1f} s of {total:.1f} s |",
        f"| single-note ingest p50 / p95 | {p(single, 50):.2f} / {p(single, 95):.2f} ms |",
        f"| recall p50 / p95 (BM25 + vector + fusion + context, no query embedding) | {p(lat, 50):.2f} / {p(lat, 95):.2f} ms |",
        f"| of which BM25 top-{POOL} p50 | {p(lat_t, 50):.2f} ms |",
        f"| of which vector top-{POOL} p50 | {p(lat_v, 50):.2f} ms |",
    ]


# ------------------------------------------------------------------- main
def fmt_row(name, r):
    o = r["overall"]
    cats = " | ".join(f"{r['cat'][c][1]:.1f}" if c in r["cat"] else "–" for c in CATS)
    return f"| {name} | {o[0]:.1f} | {o[1]:.1f} | {o[2]:.1f} | {o[3]:.1f} | {cats} |"


HEADER = ["| scheme | R@5 | R@10 | R@25 | R@50 | " + " | ".join(f"R@10 {v}" for v in CATS.values()) + " |",
          "|---|---|---|---|---|" + "---|" * len(CATS)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", default=str(DEFAULT_FILE))
    ap.add_argument("--embedder", default="all", choices=["wordllama", "minilm", "all"])
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "locomo.md"))
    ap.add_argument("--perf", type=int, default=100_000, help="notes for the speed section (0 = skip)")
    ap.add_argument("--runtime", action=argparse.BooleanOptionalAction, default=True,
                    help="also run the product (pal import + memory.recall, default config)")
    args = ap.parse_args(argv)

    convs = load(Path(args.file))
    n_q = sum(len(c.qa) for c in convs)
    n_empty = sum(1 for c in convs for q in c.qa if not q["ev"])
    names = ["wordllama", "minilm"] if args.embedder == "all" else [args.embedder]
    embs, cache, qcache, speed, notes = [], {}, {}, {}, []
    for name in names:
        try:
            e = get_embedder(name)
        except EmbedderUnavailable as exc:
            notes.append(f"- {name}: not available ({exc})")
            continue
        embs.append(e)
        qcache[e.name] = {c.sid: e.embed([q["q"] for q in c.qa]) for c in convs}
        for dated in (False, True):
            t0 = time.perf_counter()
            cache[(e.name, dated)] = {c.sid: e.embed([indexed_text(t, dated) for t in c.turns]) for c in convs}
            speed[(e.name, dated)] = sum(len(c.turns) for c in convs) / (time.perf_counter() - t0)

    cis = [ConvIndex(c) for c in convs]
    out = [
        f"# LoCoMo dialog-level evidence recall — `{Path(args.file).name}`\n",
        f"{n_q} questions, {sum(len(c.turns) for c in convs)} turns, {len(convs)} conversations "
        f"(one index each); {n_empty} questions with empty evidence count as recall 1. "
        f"Candidates per leg: {POOL}; vector hits below cosine 0.10 dropped. "
        "Per-category columns are R@10. A gap under ~3 points (999 questions) is noise.\n",
        f"Generated {dt.datetime.now().strftime('%Y-%m-%d %H:%M')} by `python bench/locomo.py`.\n",
        *notes,
    ]
    t_start = time.perf_counter()
    print(f"{n_q} questions", file=sys.stderr)
    bm_only = [s for s in BASELINES if s.dense_w == 0]
    res_bm = {s.name: evaluate(convs, cis, s, None, cache, qcache) for s in bm_only}
    for e in embs:
        out += [f"\n## Embedder `{e.name}` (dim {e.dim}; embeds {speed[(e.name, True)]:,.0f} turns/s here)\n",
                "### Baselines and ours\n", *HEADER]
        for s in bm_only:
            out.append(fmt_row(s.name, res_bm[s.name]))
        for s in [b for b in BASELINES if b.dense_w > 0] + [OURS]:
            r = evaluate(convs, cis, s, e, cache, qcache)
            out.append(fmt_row(f"**{s.name}**" if s is OURS else s.name, r))
            print(out[-1], file=sys.stderr)
        out += ["\n### Ablation (ours minus / plus one signal)\n", *HEADER]
        out.append(fmt_row("**ours**", r))
        for s in ABLATIONS:
            out.append(fmt_row(s.name, evaluate(convs, cis, s, e, cache, qcache)))
            print(out[-1], file=sys.stderr)
    if args.runtime:
        from bench_runtime_rows import runtime_rows
        out += runtime_rows(Path(args.file), convs, res_bm, fmt_row, HEADER)
    out += ["\n### Shipped scheme (`ours`)\n",
            f"text leg: BM25 (k1 1.2, b 0.75) over `render_dated(content, occurred_at)` with thread-neighbour "
            f"expansion {OURS.expansion}; vector leg: same text; min-max fusion {OURS.bm25_w}/{OURS.dense_w}; "
            f"neighbour smoothing α={OURS.ctx.neighbour_alpha}; thread propagation β={OURS.ctx.thread_beta} "
            f"(top-{OURS.ctx.thread_top} mean); date window and speaker boost off.",
            f"\nEvaluation time: {time.perf_counter() - t_start:.1f} s."]
    if args.perf and embs:
        e = next((x for x in embs if x.name.startswith("wordllama")), embs[0])
        perf(convs, e, args.perf, out)
    text = "\n".join(out) + "\n"
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
