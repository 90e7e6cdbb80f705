"""The call deadline (issue 16.11): a verb that checks it is stopped, typed, and keeps nothing; a handler may
tighten it for part of its work (``ctx.deadline``, what recall's ``recall_deadline_ms`` uses)."""
from __future__ import annotations

import time

import pytest
from runtime_fakes import migrated_pack
from pydantic import BaseModel

from palimpsest_memory.runtime import Act, Context, errors
from palimpsest_memory.runtime.params import Params
from palimpsest_memory.runtime.testing import open_test_runtime


class Loops(Params):
    loops: int


class Tight(Params):
    loops: int
    within_ms: float  # the tighter deadline, around the first loop only
    after: int = 0  # loops run after the block, under the call's own deadline again


class Done(BaseModel):
    loops: int


def slow_pack(tmp_path):  # type: ignore[no-untyped-def]
    pack = migrated_pack(tmp_path, "slow", "CREATE TABLE slow.t (i INTEGER);")

    @pack.verb("work", act=Act.COMMISSIVE)
    def work(params: Loops, ctx: Context) -> Done:
        """Write a row per loop, checking the deadline like a store-sized loop does."""
        for i in range(params.loops):
            ctx.check_deadline(f"loop {i}")
            ctx.db.execute("INSERT INTO slow.t VALUES (?)", [i])
            time.sleep(0.02)
        return Done(loops=params.loops)

    @pack.verb("tight", act=Act.COMMISSIVE)
    def tight(params: Tight, ctx: Context) -> Done:
        """The same loop under a tighter deadline, then more loops outside it."""
        with ctx.deadline(params.within_ms / 1000, "packs.slow.within_ms"):
            for i in range(params.loops):
                ctx.check_deadline(f"loop {i}")
                ctx.db.execute("INSERT INTO slow.t VALUES (?)", [i])
                time.sleep(0.02)
        for i in range(params.after):
            ctx.check_deadline(f"after {i}")
            time.sleep(0.02)
        return Done(loops=params.loops + params.after)

    return pack


def test_a_call_past_its_deadline_is_stopped_typed_and_keeps_nothing(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with open_test_runtime(slow_pack(tmp_path), config={"runtime": {"deadline_seconds": 0.1}}) as rt:
        with pytest.raises(errors.DeadlineExceeded, match="0.1 s deadline") as err:
            rt.call("slow.work", {"loops": 100})
        assert err.value.exit_code == 6 and err.value.http_status == 504
        assert rt.store.con.execute("SELECT count(*) FROM slow.t").fetchone() == (0,)
        assert rt.call("slow.work", {"loops": 2}).loops == 2  # a short call is unaffected, and the next one too


def test_zero_means_no_deadline(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with open_test_runtime(slow_pack(tmp_path), config={"runtime": {"deadline_seconds": 0}}) as rt:
        assert rt.call("slow.work", {"loops": 8}).loops == 8


def test_a_tighter_deadline_stops_the_call_in_its_own_unit_and_keeps_nothing(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with open_test_runtime(slow_pack(tmp_path), config={"runtime": {"deadline_seconds": 30}}) as rt:
        with pytest.raises(errors.DeadlineExceeded) as err:
            rt.call("slow.tight", {"loops": 100, "within_ms": 50})
        assert err.value.message.startswith("slow.tight ran past its 50 ms deadline (packs.slow.within_ms) during loop ")
        assert err.value.details["setting"] == "packs.slow.within_ms" and err.value.details["deadline_seconds"] == 0.05
        assert rt.store.con.execute("SELECT count(*) FROM slow.t").fetchone() == (0,)


def test_the_call_deadline_is_back_after_the_block(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with open_test_runtime(slow_pack(tmp_path), config={"runtime": {"deadline_seconds": 0}}) as rt:
        # 10 loops of 20 ms after a 50 ms block: only the block's deadline could stop them, and it has ended
        assert rt.call("slow.tight", {"loops": 1, "within_ms": 50, "after": 10}).loops == 11
    with open_test_runtime(slow_pack(tmp_path), config={"runtime": {"deadline_seconds": 0.1}}) as rt:
        with pytest.raises(errors.DeadlineExceeded) as err:  # the call's 0.1 s holds again after the block
            rt.call("slow.tight", {"loops": 1, "within_ms": 10_000, "after": 100})
        assert err.value.details["setting"] == "runtime.deadline_seconds" and "0.1 s deadline" in err.value.message
        assert err.value.details["during"].startswith("after ")


def test_a_looser_deadline_does_not_extend_the_call(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with open_test_runtime(slow_pack(tmp_path), config={"runtime": {"deadline_seconds": 0.1}}) as rt:
        with pytest.raises(errors.DeadlineExceeded) as err:
            rt.call("slow.tight", {"loops": 100, "within_ms": 60_000})
        assert err.value.details["setting"] == "runtime.deadline_seconds"
