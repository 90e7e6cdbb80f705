"""The memory index keeps its columns by a dense per-index slot, not by the store-wide note id (ADR 0016).

A namespace written after 10,000 notes of another holds columns for its own notes only, and every namespace
answers recall, filters and thread neighbours exactly as a store holding only its notes does (compared by content,
since ids differ between the stores)."""
from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import numpy as np
from index_support import held_index
from store_support import HASHING

from palimpsest_memory.packs.memory.engine.index import MemoryIndex
from palimpsest_memory.packs.memory.engine.rowstore import NoteRow

TOPICS = ["coffee in paris", "deadline for orion", "the database migration", "a walk by the river"]
NOW = "2024-06-01T00:00:00Z"


def note(ns: str, i: int) -> dict[str, Any]:
    n: dict[str, Any] = {"content": f"{ns} note {i}: {TOPICS[i % 4]} {'again' * (i % 3)}",
                         "salience": round(0.1 + 0.08 * (i % 10), 2), "scope": ["orion", "home"][i % 2],
                         "tags": [["red"], ["blue"], ["red", "blue"], []][i % 4],
                         "memory_type": ["episodic", "semantic"][i % 3 == 0]}
    if i % 5 == 0:
        n["kind"] = "decision"
    if i % 4 < 2:
        n["thread"] = f"t{i % 2}"  # the rest are linked into inferred episodes
    return n


def write(rt: Any, ns: str, i: int) -> int:
    return rt.call("memory.remember", note(ns, i), namespace=ns).note.id


def edit(rt: Any, ns: str, ids: list[int]) -> None:
    """Archive one note, forget one (its slot stays dead), update one: the same edits in every store."""
    rt.call("memory.archive", {"ids": [ids[1]]}, namespace=ns)
    rt.call("memory.forget", {"ids": [ids[2]], "reason": "test"}, namespace=ns)
    rt.call("memory.update", {"id": ids[3], "salience": 0.95, "tags": ["green"]}, namespace=ns)


FILTERS: list[dict[str, Any]] = [{}, {"scope": "orion"}, {"tags": ["red"]}, {"tags": ["red", "blue"], "tag_mode": "all"},
                                 {"min_salience": 0.5}, {"kind": "decision"}, {"memory_type": "semantic"},
                                 {"include_superseded": True}]


def answers(rt: Any, ns: str) -> tuple:
    out = []
    for query in ("coffee paris", "orion deadline", "database", "river walk note"):
        for f in FILTERS:
            res = rt.call("memory.recall", {"query": query, "limit": 20, "now": NOW, **f}, namespace=ns)
            out.append([(h.note.content, h.score) for h in res.results])
    index = held_index(rt, ns)
    content = {i: r.content for i, r in index.rows.items()}
    ids = np.array(sorted(index.rows), dtype=np.int64)
    prev, nxt = index.column("prev")[ids].tolist(), index.column("next")[ids].tolist()
    links = sorted((content[i], content.get(p), content.get(n), tuple(content.get(j) for j in index.neighbours(i)))
                   for i, p, n in zip(ids.tolist(), prev, nxt))
    return out, links, len(index)


def test_a_late_namespace_holds_columns_for_its_own_notes_and_answers_as_if_alone(make_pal_runtime):
    cfg = {**HASHING}
    rt = make_pal_runtime(config=cfg)
    ids: dict[str, list[int]] = {"a": [], "b": []}
    for i in range(12):  # two namespaces written interleaved
        for ns in ("a", "b"):
            ids[ns].append(write(rt, ns, i))
    big = [{"content": f"filler {i} {TOPICS[i % 4]}"} for i in range(10_000)]
    rt.call("memory.remember_many", {"notes": big[:5000]}, namespace="big")
    rt.call("memory.remember_many", {"notes": big[5000:]}, namespace="big")
    ids["late"] = [write(rt, "late", i) for i in range(12)]
    for ns in ("a", "b", "late"):
        edit(rt, ns, ids[ns])

    assert min(ids["late"]) > 10_000  # the old id-indexed columns would span past 10,000 rows
    for ns in ("a", "b", "late"):
        cols = held_index(rt, ns).cols
        assert {len(v) for v in cols.values()} == {len(cols["alive"])}
        assert len(cols["alive"]) <= 64  # 12 notes and slot 0, in the first allocation

    for ns in ("a", "b", "late"):
        alone = make_pal_runtime(config=cfg)
        own = [write(alone, ns, i) for i in range(12)]
        edit(alone, ns, own)
        got, want = answers(rt, ns), answers(alone, ns)
        assert got == want, ns
        assert any(got[0]) and got[2] == 10  # recall found notes; 12 notes less one forgotten, one archived


def row(i: int, thread: str | None = None, scope: str | None = None) -> NoteRow:
    t = datetime(2024, 1, 1) + timedelta(seconds=i)
    return NoteRow(id=i, namespace="n", content=f"note {i} words", memory_type="episodic", kind=None, scope=scope,
                   thread=thread, tags=("x",) if i % 2 else (), salience=i / 100, decay_factor=0.0, occurred_at=t,
                   created_at=t)


def test_ids_added_out_of_order_map_to_their_own_slots():
    index = MemoryIndex(k1=1.2, b=0.75, max_query_terms=32, expansion_weight=0.5)
    order = [500, 20, 9_000_000, 21, 7, 499]
    for batch in ([500], [20, 9_000_000], [21, 7], [499]):
        index.add([row(i, thread="t") for i in batch], {})
    assert len(index.cols["alive"]) == 64 and len(index) == 6  # no column spans the ids
    assert index.slots([7, 20, 21, 499, 500, 9_000_000]).tolist() == [4, 2, 5, 6, 1, 3]  # new ids of a batch in id order
    assert index.slots([0, 8, 10**12]).tolist() == [0, 0, 0]  # ids it does not hold read slot 0
    every = [0, 6, 7, 8, 20, 21, 22, 498, 499, 500, 501, 9_000_000, 9_000_001, 10**12]
    assert [index.slot(i) for i in every] == index.slots(every).tolist()  # one id at a time reads the same
    assert index.column("salience")[order].tolist() == [i / 100 for i in order]
    assert index.thread_of(8) is None and index.thread_of(7) == index.thread_of(500)

    class F:  # the recall filters the mask reads
        memory_type = kind = scope = min_salience = created_after = created_before = as_of = None
        include_superseded, tags, tag_mode = False, ["x"], "any"

    assert index.ids_of(index.mask("n", F())).tolist() == [7, 21, 499]  # ascending, like the old id-indexed mask
    allowed = index.allowed(index.mask("n", F()))
    assert 21 in allowed and 20 not in allowed and 8 not in allowed
    assert allowed.allows(np.array([499, 500, 7, 123])).tolist() == [True, False, True, False]
    # thread neighbours are note ids, in id order whatever the order notes came in
    assert index.neighbours(21) == (20, 499)
    assert index.column("prev")[[7, 20, 21]].tolist() == [-1, 7, 20]
    index.forget([21])
    assert index.slots([21]).tolist() == [5] and 21 not in index.allowed(index.mask("n", F()))
    assert index.column("next")[[20]].tolist() == [499]
    assert index.ids_of(index.mask("n", F())).tolist() == [7, 499]


def test_one_id_reads_the_slot_the_arrays_read_when_ids_came_in_order():
    index = MemoryIndex(k1=1.2, b=0.75, max_query_terms=32, expansion_weight=0.5)
    assert index.slot(3) == 0  # empty
    index.add([row(i) for i in (3, 5, 9)], {})
    every = list(range(12)) + [2**62]
    assert [index.slot(i) for i in every] == index.slots(every).tolist() == [0, 0, 0, 1, 0, 2, 0, 0, 0, 3, 0, 0, 0]
