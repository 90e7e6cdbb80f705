"""YAGO11k through the kg pack: load every fact with kg.assert_facts, then answer as_of questions.

Usage: .venv/bin/python bench/kg_yago.py [--data ../shared/data/yago11k] [--batch 5000] [--questions N | --all]
       [--shuffle SEED]

--shuffle SEED loads the same facts in a random arrival order (issue 15: a timeline must not depend on it).

Years are inclusive in YAGO ([1990, 1990] is one year): a fact [start, end] is asserted with valid_from=start and
valid_to=end+1 (exclusive). Rows with end < start are bad data: counted and skipped (kg would reject them).
Questions: every (subject, relation, year) where exactly one interval of the data covers the year, asked as
kg.facts(subject, predicate, as_of=<year>-07-01); correct when the answer is exactly that object.
"""
from __future__ import annotations

import argparse
import random
import re
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from palimpsest_memory.packs.kg import pack as kg_pack  # noqa: E402
from palimpsest_memory.packs.kg.models import clean_text  # noqa: E402
from palimpsest_memory.runtime.testing import open_test_runtime  # noqa: E402

MANY = {"playsFor", "isAffiliatedTo", "hasWonPrize", "created", "owns", "worksAt", "isMarriedTo"}  # overlaps in the data


def snake(rel: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", r"_\1", rel).lower()


def clean(name: str) -> str:
    return name.strip().strip("<>").replace("_", " ")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "yago11k"))
    ap.add_argument("--batch", type=int, default=5000)
    ap.add_argument("--questions", type=int, default=0, help="sample this many questions (0 = all)")
    ap.add_argument("--all", action="store_true", help="ask every question (same as --questions 0)")
    ap.add_argument("--shuffle", type=int, default=None, metavar="SEED",
                    help="assert the facts in a random order drawn from SEED (default: file order)")
    ap.add_argument("--many", default=",".join(sorted(MANY)), help="relations treated as 'many'")
    args = ap.parse_args()
    if args.all:
        args.questions = 0
    data = Path(args.data)
    if not (data / "train.txt").is_file():
        print(f"SKIP: YAGO11k not found at {data} (expected train.txt, valid.txt, entity2id.txt, relation2id.txt)")
        return 0
    many = {m for m in args.many.split(",") if m}
    names = {}
    for line in (data / "entity2id.txt").read_text(encoding="utf-8").splitlines():
        parts = line.split("\t")
        names[parts[1]] = clean(parts[0])
    rels = {p[1].strip(): p[0].strip("<>") for p in (ln.split("\t") for ln in
                                                    (data / "relation2id.txt").read_text().splitlines())}
    rows, bad = [], 0
    for split in ("train.txt", "valid.txt"):
        for line in (data / split).read_text().splitlines():
            s, r, o, a, b = line.split("\t")
            if "#" in a or "#" in b:
                bad += 1
                continue
            if int(b) < int(a) or int(a) < 1:  # end before start, or BC (outside datetime's range)
                bad += 1
                continue
            rows.append((names[s], rels[r], names[o], int(a), int(b)))
    rt = open_test_runtime(kg_pack)
    for rel in sorted(set(rels.values())):
        rt.call("kg.define_predicate", {"name": snake(rel), "cardinality": "many" if rel in many else "one"})
    facts = [{"subject": s, "predicate": snake(r), "object": o, "valid_from": str(a), "valid_to": str(b + 1)}
             for s, r, o, a, b in rows]
    if args.shuffle is not None:
        random.Random(args.shuffle).shuffle(facts)
    t0 = time.perf_counter()
    created = superseded = evidence = 0
    for i in range(0, len(facts), args.batch):
        res = rt.call("kg.assert_facts", {"facts": facts[i:i + args.batch]})
        created, superseded, evidence = created + res.created, superseded + res.superseded, evidence + res.evidence
    load = time.perf_counter() - t0
    groups = defaultdict(list)
    for s, r, o, a, b in rows:
        groups[(s, r)].append((a, b, o))
    questions = []
    for (s, r), ivs in groups.items():
        for year in range(min(a for a, _, _ in ivs), max(b for _, b, _ in ivs) + 1):
            cover = [o for a, b, o in ivs if a <= year <= b]
            if len(cover) == 1:
                questions.append((s, r, year, cover[0]))
    if args.questions and args.questions < len(questions):
        questions = random.Random(7).sample(questions, args.questions)
    ok, lat, wrong, wrong_examples = 0, [], defaultdict(int), []
    for s, r, year, expected in questions:
        t = time.perf_counter()
        got = rt.call("kg.facts", {"subject": s, "predicate": snake(r), "as_of": f"{year}-07-01"}).facts
        lat.append((time.perf_counter() - t) * 1000)
        if [f.object for f in got] == [clean_text(expected)]:  # kg stores names NFKC-normalised (º → o)
            ok += 1
        else:
            wrong[r] += 1
            if len(wrong_examples) < 8:
                wrong_examples.append((s, r, year, expected, [(f.object, f.valid_from.year if f.valid_from else None, f.valid_to.year if f.valid_to else None) for f in got]))
    print(f"rows loaded: {len(rows)} (skipped {bad}: end < start, BC or unknown years); "
          f"load {load:.2f} s = {len(rows) / load:,.0f} facts/s; created {created}, evidence {evidence}, "
          f"superseded {superseded}")
    print(f"order: {'file' if args.shuffle is None else f'shuffled, seed {args.shuffle}'}")
    print(f"many: {sorted(many)}; one: {sorted(set(rels.values()) - many)}")
    print(f"as_of questions: {len(questions)}, correct {ok} = {100 * ok / max(1, len(questions)):.2f} %; "
          f"wrong by relation: {dict(wrong)}; latency p50 {statistics.median(lat):.2f} ms, "
          f"p95 {sorted(lat)[int(0.95 * len(lat))]:.2f} ms")
    for ex in wrong_examples:
        print("  wrong:", ex)
    rt.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
