"""Episodes from the scope's rhythm (issue 44, ADR 0034): a pause ends an episode when it is longer than the floor
(``episode_gap_minutes``) and an outlier (Tukey's fence) against the scope's last gaps; an explicit thread wins;
notes without times are one episode; any split into batches, one note at a time or a load, infers the same."""
from __future__ import annotations

from datetime import datetime, timedelta

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from palimpsest_memory.packs.memory.engine.index import MemoryIndex
from palimpsest_memory.packs.memory.engine.rowstore import NoteRow
from palimpsest_memory.packs.memory.engine.threads import MIN_GAPS, WINDOW, Episodes, fences

GAP = 30 * 60.0
T0 = datetime(2024, 5, 8, 9, 0)


def starts(ep: Episodes, times: list[float], scope: str = "s") -> list[int]:
    """The positions of the notes that start an episode, the notes given one at a time."""
    keys = [ep.key(i + 1, "ns", scope, t) for i, t in enumerate(times)]
    return [j for j in range(len(keys)) if j == 0 or keys[j] != keys[j - 1]]


def test_a_slow_chat_keeps_its_episode_where_the_fixed_rule_cuts_every_turn():
    """Replies 40 minutes apart (issue 44's stress copy), then a two-day pause: the rhythm rule cuts once."""
    times = [40 * 60.0 * j for j in range(20)] + [40 * 60.0 * 19 + 2 * 86400 + 40 * 60.0 * j for j in range(5)]
    assert starts(Episodes(GAP), times) == [0, 1, 2, 3, 4, 20]  # the floor alone until 4 gaps make a rhythm
    assert starts(Episodes(GAP, rhythm=False), times) == list(range(25))


def test_a_pause_inside_the_rhythm_goes_on_and_an_outlier_ends_it():
    quick = [60.0 * j for j in range(30)]  # a minute apart
    ep = Episodes(GAP)
    assert starts(ep, quick + [quick[-1] + 20 * 60.0]) == [0]  # under the floor: never a cut
    ep = Episodes(GAP)
    assert starts(ep, quick + [quick[-1] + 45 * 60.0]) == [0, 30]  # over the floor and an outlier here
    # the same 45-minute pause in a chat whose replies take 10 to 60 minutes is no outlier
    slow = np.cumsum([600.0 * (1 + j % 6) for j in range(30)]).tolist()
    assert starts(Episodes(GAP), slow + [slow[-1] + 45 * 60.0])[-1] < 30


def test_notes_without_times_are_one_episode_per_scope():
    """A burst of writes at one instant (a log without times): no gap, no cut, in every scope."""
    ep = Episodes(GAP)
    keys = [ep.key(i, "ns", f"s{i % 3}", 0.0) for i in range(1, 61)]
    assert len(set(keys)) == 3


def test_the_fence_is_tukeys_over_the_window():
    w = np.log1p([5.0, 10.0, 20.0, 40.0, 80.0, 160.0, 320.0])
    q1, q3 = np.percentile(w, [25, 75])
    got = fences(np.r_[w, np.full(WINDOW - w.size, np.inf)][None, :], np.array([w.size]))
    assert np.isclose(got[0], q3 + 1.5 * (q3 - q1))
    few = fences(np.r_[w[:MIN_GAPS - 1], np.full(WINDOW - MIN_GAPS + 1, np.inf)][None, :], np.array([MIN_GAPS - 1]))
    assert few[0] == -np.inf


# gaps from 0 to ~a week on a log scale, so the fence, the floor and the window's end are all exercised
gaps = st.one_of(st.just(0.0), st.floats(0, 14).map(lambda x: float(np.expm1(x))))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 3), st.integers(0, 2), gaps), min_size=1, max_size=WINDOW * 2 + 20),
       st.lists(st.integers(1, 40), max_size=8), st.booleans())
def test_any_split_into_batches_infers_what_one_note_at_a_time_does(notes, cuts, rhythm):
    ids, where, occurred, i, t = [], [], [], 0, 1e9
    for step, w, g in notes:
        i, t = i + step, t + g
        ids.append(i)
        where.append(w)
        occurred.append(t)
    names = [("ns", "a"), ("ns", "b"), ("other", None)]
    one, many = Episodes(GAP, rhythm=rhythm), Episodes(GAP, rhythm=rhythm)
    expected = [one.key(n, *names[w], o) for n, w, o in zip(ids, where, occurred)]
    got: list = []
    bounds = sorted({0, len(ids), *(c for c in np.cumsum(cuts).tolist() if c < len(ids))})
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        at, keys, _ = many.batch(np.array(ids[lo:hi]), np.array(where[lo:hi]), lambda g: names[g],
                                 np.array(occurred[lo:hi]))
        got += [keys[k] for k in at.tolist()]
    assert got == expected
    assert many._last == one._last


def _index() -> MemoryIndex:
    return MemoryIndex(k1=1.2, b=0.75, max_query_terms=16, expansion_weight=0.5, episode_gap_seconds=GAP)


def _row(i: int, scope: str, thread: str | None, when: datetime) -> NoteRow:
    return NoteRow(i, "ns", f"note {i} about the ferry {i % 5}", "episodic", None, scope, thread, [], 0.3, 0.02,
                   when, when)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["a", "b"]), st.sampled_from([None, None, None, "x"]), gaps),
                min_size=2, max_size=80),
       st.lists(st.integers(1, 30), max_size=6))
def test_the_index_links_the_same_notes_whatever_the_batches_and_an_explicit_thread_wins(notes, cuts):
    """Through ``MemoryIndex.add``: the same links for one batch, any split, and one note at a time; a note with
    ``thread`` is linked to its thread only, and the episodes of the others are those inferred without it."""
    t, rows = T0, []
    for i, (scope, thread, g) in enumerate(notes, start=1):
        t += timedelta(seconds=g)
        rows.append(_row(i, scope, thread, t))

    def links(batches: list[list[NoteRow]]) -> tuple[list, list, list]:
        ix = _index()
        for b in batches:
            ix.add(b, {})
        at = ix.slots(np.array([r.id for r in rows]))
        thread = ix.cols["thread"][at]
        return ix.cols["prev"][at].tolist(), ix.cols["next"][at].tolist(), np.unique(thread, return_inverse=True)[1].tolist()

    whole = links([rows])
    bounds = sorted({0, len(rows), *(c for c in np.cumsum(cuts).tolist() if c < len(rows))})
    assert links([rows[lo:hi] for lo, hi in zip(bounds[:-1], bounds[1:])]) == whole
    assert links([[r] for r in rows]) == whole
    prev, nxt, _ = whole
    by_id = {r.id: r for r in rows}
    for r, p, n in zip(rows, prev, nxt):
        for other in (p, n):
            if other > 0:  # neighbours share scope, and a threaded note's neighbours are of its thread
                assert by_id[other].scope == r.scope and by_id[other].thread == r.thread
    # the notes without a thread get the episodes inferred as if the threaded notes were not there
    bare = [r for r in rows if r.thread is None]
    ep = Episodes(GAP)
    keys = {r.id: ep.key(r.id, "ns", r.scope, (r.occurred_at - datetime(1970, 1, 1)).total_seconds()) for r in bare}
    for r, p in zip(rows, prev):
        if r.thread is None:
            assert (p > 0 and keys[p] == keys[r.id]) == (keys[r.id] != ("~episode", "ns", r.scope, r.id))
