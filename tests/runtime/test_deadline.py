"""The call deadline (issue 16.11): a verb that checks it is stopped, typed, and keeps nothing."""
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

    return pack


def test_a_call_past_its_deadline_is_stopped_typed_and_keeps_nothing(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with open_test_runtime(slow_pack(tmp_path), config={"runtime": {"deadline_seconds": 0.1}}) as rt:
        with pytest.raises(errors.DeadlineExceeded, match="0.1 s deadline") as err:
            rt.call("slow.work", {"loops": 100})
        assert err.value.exit_code == 6 and err.value.http_status == 504
        assert rt._con.execute("SELECT count(*) FROM slow.t").fetchone() == (0,)
        assert rt.call("slow.work", {"loops": 2}).loops == 2  # a short call is unaffected, and the next one too


def test_zero_means_no_deadline(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with open_test_runtime(slow_pack(tmp_path), config={"runtime": {"deadline_seconds": 0}}) as rt:
        assert rt.call("slow.work", {"loops": 8}).loops == 8
