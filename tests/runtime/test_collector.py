"""Bulk verbs pause Python's cycle collector for their top-level call (runtime/collector.py, ADR 0029): off while
the call runs, back as it was found afterwards, counted across threads and runtimes."""
import gc
import threading
import traceback

import pytest
from pydantic import BaseModel

from palimpsest_memory.runtime import Act, Context, Pack, collector, errors
from palimpsest_memory.runtime.params import Params
from palimpsest_memory.runtime.testing import open_test_runtime


class Go(Params):
    wait: bool = False
    fail: bool = False


class Seen(BaseModel):
    collector_on: bool
    inner_on: bool | None = None


def probe_pack(started: threading.Event | None = None, release: threading.Event | None = None) -> Pack:
    pack = Pack("probe", version="1.0")

    @pack.verb("bulk", act=Act.COMMISSIVE, bulk=True)
    def bulk(params: Go, ctx: Context) -> Seen:
        """A bulk verb: says whether the collector runs inside it."""
        on = gc.isenabled()
        if params.wait:
            assert started is not None and release is not None
            started.set()
            release.wait(10)
        if params.fail:
            raise errors.InvalidParams("refused on purpose")
        return Seen(collector_on=on)

    @pack.verb("plain", act=Act.COMMISSIVE)
    def plain(params: Go, ctx: Context) -> Seen:
        """Not bulk."""
        return Seen(collector_on=gc.isenabled())

    @pack.verb("plain_then_bulk", act=Act.COMMISSIVE)
    def plain_then_bulk(params: Go, ctx: Context) -> Seen:
        """Not bulk, calling a bulk verb: only a top-level bulk call pauses."""
        return Seen(collector_on=gc.isenabled(), inner_on=ctx.call("probe.bulk", {}).collector_on)

    @pack.verb("bulk_then_bulk", act=Act.COMMISSIVE, bulk=True)
    def bulk_then_bulk(params: Go, ctx: Context) -> Seen:
        """Bulk, calling a bulk verb."""
        inner = ctx.call("probe.bulk", {}).collector_on
        return Seen(collector_on=gc.isenabled(), inner_on=inner)

    return pack


@pytest.fixture
def rt():  # type: ignore[no-untyped-def]
    runtime = open_test_runtime(probe_pack())
    yield runtime
    runtime.close()


def test_a_bulk_call_runs_with_the_collector_off_and_gives_it_back(rt) -> None:  # type: ignore[no-untyped-def]
    assert gc.isenabled()
    assert rt.call("probe.bulk", {}).collector_on is False
    assert gc.isenabled() and collector.pausing() == 0
    assert rt.call("probe.plain", {}).collector_on is True
    seen = rt.call("probe.plain_then_bulk", {})
    assert (seen.collector_on, seen.inner_on) == (True, True)
    seen = rt.call("probe.bulk_then_bulk", {})
    assert (seen.collector_on, seen.inner_on) == (False, False)
    assert gc.isenabled() and collector.pausing() == 0


def test_a_refused_bulk_call_gives_the_collector_back(rt) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(errors.InvalidParams, match="on purpose"):
        rt.call("probe.bulk", {"fail": True})
    assert gc.isenabled() and collector.pausing() == 0


def test_a_collector_the_host_turned_off_stays_off(rt) -> None:  # type: ignore[no-untyped-def]
    gc.disable()
    try:
        assert rt.call("probe.bulk", {}).collector_on is False
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_overlapping_pauses_end_with_the_last(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Two runtimes in one process, each in a bulk call at once: the first to end must not turn the collector on
    under the other."""
    started, release = threading.Event(), threading.Event()
    slow = open_test_runtime(probe_pack(started, release), path=str(tmp_path / "a.duckdb"))
    quick = open_test_runtime(probe_pack(), path=str(tmp_path / "b.duckdb"))
    out: list[Seen] = []
    try:
        worker = threading.Thread(target=lambda: out.append(slow.call("probe.bulk", {"wait": True})))
        worker.start()
        assert started.wait(10)
        assert not gc.isenabled() and collector.pausing() == 1
        assert quick.call("probe.bulk", {}).collector_on is False
        assert not gc.isenabled(), "the quick call ended while the slow one runs: the collector must stay off"
        release.set()
        worker.join(10)
        assert out and out[0].collector_on is False
        assert gc.isenabled() and collector.pausing() == 0
    finally:
        release.set()
        slow.close()
        quick.close()


def test_paused_counts_across_threads() -> None:
    entered, leave = threading.Barrier(3), threading.Event()

    def hold() -> None:
        with collector.paused():
            entered.wait(10)
            leave.wait(10)

    threads = [threading.Thread(target=hold) for _ in range(2)]
    for t in threads:
        t.start()
    entered.wait(10)
    assert not gc.isenabled() and collector.pausing() == 2
    with collector.paused(False):  # inactive: changes nothing
        assert collector.pausing() == 2
    leave.set()
    for t in threads:
        t.join(10)
    assert gc.isenabled() and collector.pausing() == 0


def test_the_shipped_batch_verbs_are_bulk_and_a_batch_of_notes_runs_no_collection(tmp_path) -> None:
    """The declaration on the real verbs, and what it is for: a 2,000-note memory.remember_many runs without one
    collection (it ran several before), and the collector is on afterwards."""
    rt = open_test_runtime(path=str(tmp_path / "s.duckdb"), discover=True)
    try:
        bulk = {v.full_name for v in rt.verbs(include_subhandlers=True) if v.bulk}
        assert {"memory.remember_many", "memory.import_conversations", "memory.link_many", "memory.reembed",
                "kg.assert_facts", "kg.link_many", "memory.import_records", "kg.import_records"} <= bulk
        assert not {"memory.remember", "memory.recall", "kg.assert_fact", "kg.facts"} & bulk
        rt.call("memory.remember", {"content": "warm-up"})
        runs: list[bool] = []  # per collection: did it run inside the call's work (validation, handler, mirrors)?

        def seen(phase: str, info: dict) -> None:
            if phase == "start":
                stack = traceback.extract_stack()
                runs.append(any(f.name == "validate_params" or "/packs/" in f.filename
                                or f.filename.endswith("aftercommit.py") for f in stack))

        notes = [{"content": f"note {i} about the harbour and the {i % 7} boats", "thread": f"t{i // 50}"}
                 for i in range(2000)]
        gc.callbacks.append(seen)
        try:
            rt.call("memory.remember_many", {"notes": notes})
            during = [i for i, inside in enumerate(runs) if inside]
            rt.call("memory.remember", {"content": "after " + " ".join(map(str, range(200)))})
            [{"n": i} for i in range(5000)]  # allocations enough for a young collection once it is on again
        finally:
            gc.callbacks.remove(seen)
        assert during == [], f"{len(during)} of {len(runs)} collections ran inside the bulk call's work"
        assert gc.isenabled() and len(runs) > 0
    finally:
        rt.close()
