"""Tunables: a pack declares them, another pack sets them through the runtime, per namespace, persisted."""
import pytest
from pydantic import BaseModel, ConfigDict
from runtime_fakes import Count, Empty

from palimpsest_memory.runtime import Act, Context, Pack, Runtime, errors


class SetParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    target: str
    value: float


def packs() -> tuple[Pack, Pack]:
    owner = Pack("owner", version="1.0", tunables={"weight": (0.0, 1.0)})

    @owner.verb("read", act=Act.ASSERTIVE)
    def read(params: Empty, ctx: Context) -> Count:
        """Read the tunable (x1000)."""
        return Count(n=round(ctx.tunable("weight", 0.5) * 1000))

    tuner = Pack("tuner", version="1.0", requires=["owner"])

    @tuner.verb("set", act=Act.COMMISSIVE)
    def set_(params: SetParams, ctx: Context) -> Count:
        """Set a tunable."""
        ctx.set_tunable(params.target, params.value)
        return Count(n=1)

    @tuner.verb("peek", act=Act.ASSERTIVE)
    def peek(params: SetParams, ctx: Context) -> Count:
        """Try to set a tunable from a read-only verb."""
        ctx.set_tunable(params.target, params.value)
        return Count(n=1)

    return owner, tuner


ENV = {"PALIMPSEST_CONFIG_DISABLED": "1"}


def test_default_then_set_per_namespace_and_persisted(tmp_path) -> None:  # type: ignore[no-untyped-def]
    db = tmp_path / "t.duckdb"
    with Runtime.open(db, packs=list(packs()), env=ENV) as rt:
        assert rt.call("owner.read").n == 500
        rt.call("tuner.set", {"target": "owner::weight", "value": 0.25}, namespace="a")
        assert rt.call("owner.read", namespace="a").n == 250
        assert rt.call("owner.read", namespace="b").n == 500
    with Runtime.open(db, packs=list(packs()), env=ENV) as rt:
        assert rt.call("owner.read", namespace="a").n == 250


@pytest.mark.parametrize("target,value,match", [
    ("owner::nope", 0.1, "no tunable named"), ("nope::weight", 0.1, "no tunable named"),
    ("owner-weight", 0.1, "no tunable named"), ("owner::weight", 1.5, r"must lie in \[0.0, 1.0\]"),
    ("owner::weight", float("nan"), "NaN or infinite"),  # refused for every verb before the handler
])
def test_bad_tunables_are_refused_and_nothing_changes(target, value, match) -> None:  # type: ignore[no-untyped-def]
    with Runtime.open(":memory:", packs=list(packs()), env=ENV) as rt:
        with pytest.raises(errors.InvalidParams, match=match):
            rt.call("tuner.set", {"target": target, "value": value})
        assert rt.call("owner.read").n == 500
        assert rt.store.con.execute("SELECT count(*) FROM _palimpsest.tunables").fetchone() == (0,)


def test_read_only_verbs_cannot_set_tunables() -> None:
    with Runtime.open(":memory:", packs=list(packs()), env=ENV) as rt:
        with pytest.raises(errors.ReadOnlyViolation):
            rt.call("tuner.peek", {"target": "owner::weight", "value": 0.1})
        assert rt.call("owner.read").n == 500


def test_a_rolled_back_call_does_not_change_the_value(tmp_path) -> None:  # type: ignore[no-untyped-def]
    owner, tuner = packs()

    @tuner.verb("set_then_fail", act=Act.COMMISSIVE)
    def set_then_fail(params: SetParams, ctx: Context) -> Count:
        """Set, then fail."""
        ctx.set_tunable(params.target, params.value)
        raise errors.Conflict("changed my mind")

    with Runtime.open(":memory:", packs=[owner, tuner], env=ENV) as rt:
        with pytest.raises(errors.Conflict):
            rt.call("tuner.set_then_fail", {"target": "owner::weight", "value": 0.9})
        assert rt.call("owner.read").n == 500
