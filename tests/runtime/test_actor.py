"""The call's actor: validated like a namespace, seen by handlers, inherited by nested calls and event subscribers, the
first level tunables resolve at (actor, then namespace, then the pack's default); the meta table's upgrade."""
from dataclasses import dataclass
from typing import Any, Optional

import duckdb
import pytest
from pydantic import BaseModel, ConfigDict

from palimpsest_memory.runtime import Act, Context, Pack, Runtime, errors

ENV = {"PALIMPSEST_CONFIG_DISABLED": "1"}


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Empty(Strict):
    pass


class SetParams(Strict):
    value: Optional[float] = None  # None: clear
    actor: Optional[str] = None


class Seen(BaseModel):
    actor: Optional[str]
    weight: float


@dataclass(frozen=True)
class ReadDone:
    weight: float


@dataclass
class TunerState:
    heard_for: list[Optional[str]]


def packs() -> tuple[Pack, Pack]:
    owner = Pack("owner", version="1.0", tunables={"weight": (0.0, 1.0)}, events={"read_done": ReadDone})

    @owner.verb("read", act=Act.ASSERTIVE)
    def read(params: Empty, ctx: Context) -> Seen:
        """Who am I, and what weight do I see?"""
        weight = ctx.tunable("weight", 0.5)
        ctx.publish("read_done", ReadDone(weight))
        return Seen(actor=ctx.actor, weight=weight)

    tuner = Pack("tuner", version="1.0", requires=["owner"], state=lambda: TunerState([]))

    @tuner.verb("set", act=Act.COMMISSIVE)
    def set_(params: SetParams, ctx: Context) -> Seen:
        """Set (or clear) the owner's weight for the namespace or an actor."""
        if params.value is None:
            ctx.clear_tunable("owner::weight", actor=params.actor)
        else:
            ctx.set_tunable("owner::weight", params.value, actor=params.actor)
        return Seen(actor=ctx.actor, weight=-1)

    @tuner.verb("relay", act=Act.ASSERTIVE)
    def relay(params: Empty, ctx: Context) -> Seen:
        """A nested call: the actor travels with it."""
        return ctx.call("owner.read")

    @tuner.subscribe("owner.read_done")
    def heard(event: ReadDone, ctx: Context) -> None:
        """Every top-level owner.read: remember who it ran for."""
        ctx.state.heard_for.append(ctx.actor)

    return owner, tuner


def open_rt(path: Any = ":memory:") -> Runtime:
    return Runtime.open(path, packs=list(packs()), env=ENV)


def test_tunables_resolve_actor_then_namespace_then_default_and_survive_reopen(tmp_path) -> None:  # type: ignore[no-untyped-def]
    db = tmp_path / "t.duckdb"
    with open_rt(db) as rt:
        assert rt.call("owner.read", actor="alice").weight == 0.5  # nothing set: the pack's default
        rt.call("tuner.set", {"value": 0.3})  # the namespace's value
        rt.call("tuner.set", {"value": 0.9, "actor": "alice"})
        assert rt.call("owner.read", actor="alice").model_dump() == {"actor": "alice", "weight": 0.9}
        assert rt.call("owner.read", actor="bob").model_dump() == {"actor": "bob", "weight": 0.3}
        assert rt.call("owner.read").model_dump() == {"actor": None, "weight": 0.3}
        assert rt.call("owner.read", namespace="other", actor="alice").weight == 0.5  # per namespace too
    with open_rt(db) as rt:
        assert rt.call("owner.read", actor="alice").weight == 0.9
        assert rt.call("owner.read", actor="bob").weight == 0.3
        rt.call("tuner.set", {"value": None, "actor": "alice"})  # cleared: alice falls back to the namespace
        assert rt.call("owner.read", actor="alice").weight == 0.3
        rt.call("tuner.set", {"value": None})
        assert rt.call("owner.read", actor="alice").weight == 0.5
    with open_rt(db) as rt:
        assert rt.call("owner.read", actor="alice").weight == 0.5
        assert rt.store.con.execute("SELECT count(*) FROM _palimpsest.tunables").fetchone() == (0,)


def test_actor_is_inherited_by_nested_calls_and_event_subscribers() -> None:
    with open_rt() as rt:
        rt.call("tuner.set", {"value": 0.8, "actor": "alice"})
        assert rt.call("tuner.relay", actor="alice").model_dump() == {"actor": "alice", "weight": 0.8}
        rt.call("owner.read", actor="alice")
        rt.call("owner.read")
        assert rt.pack_state("tuner").heard_for == ["alice", "alice", None]  # the relay's nested read published too


@pytest.mark.parametrize("bad", ["", "*", "has space", "a" * 129, "-dash", "tab\t", 7])
def test_a_bad_actor_is_invalid_params_and_nothing_is_written(bad) -> None:  # type: ignore[no-untyped-def]
    with open_rt() as rt:
        with pytest.raises(errors.InvalidParams, match="actor") as err:
            rt.call("tuner.set", {"value": 0.2}, actor=bad)
        assert err.value.details["errors"][0]["loc"] == ["actor"]
        with pytest.raises(errors.InvalidParams, match="actor"):  # set_tunable checks the actor it is given too
            rt.call("tuner.set", {"value": 0.2, "actor": bad})
        assert rt.store.con.execute("SELECT count(*) FROM _palimpsest.tunables").fetchone() == (0,)
        assert rt._tunables == {}


def test_actor_level_tunables_are_range_checked_and_refused_to_read_only_verbs() -> None:
    owner, tuner = packs()

    @tuner.verb("peek", act=Act.ASSERTIVE)
    def peek(params: SetParams, ctx: Context) -> Seen:
        """Try to set an actor's tunable from a read-only verb."""
        ctx.set_tunable("owner::weight", 0.1, actor="alice")
        return Seen(actor=None, weight=0)

    with Runtime.open(":memory:", packs=[owner, tuner], env=ENV) as rt:
        with pytest.raises(errors.InvalidParams, match="must lie in"):
            rt.call("tuner.set", {"value": 1.5, "actor": "alice"})
        with pytest.raises(errors.ReadOnlyViolation):
            rt.call("tuner.peek", {})
        assert rt.call("owner.read", actor="alice").weight == 0.5


def test_a_store_with_the_first_tunables_layout_is_upgraded_in_place(tmp_path) -> None:  # type: ignore[no-untyped-def]
    db = tmp_path / "old.duckdb"
    con = duckdb.connect(str(db))  # the layout before tunables were kept per actor, with values in it
    con.execute("CREATE SCHEMA _palimpsest")
    con.execute("""CREATE TABLE _palimpsest.tunables (
        namespace VARCHAR NOT NULL, pack VARCHAR NOT NULL, name VARCHAR NOT NULL, value DOUBLE NOT NULL,
        set_by VARCHAR, updated_at TIMESTAMP NOT NULL, PRIMARY KEY (namespace, pack, name))""")
    con.execute("INSERT INTO _palimpsest.tunables VALUES ('default', 'owner', 'weight', 0.25, 'tuner.set', now()), "
                "('team', 'owner', 'weight', 0.75, 'tuner.set', now())")
    con.close()
    with open_rt(db) as rt:
        assert rt.call("owner.read").weight == 0.25
        assert rt.call("owner.read", actor="alice").weight == 0.25  # the old values are the namespace's
        assert rt.call("owner.read", namespace="team").weight == 0.75
        rt.call("tuner.set", {"value": 0.6, "actor": "alice"})
        assert rt.call("owner.read", actor="alice").weight == 0.6
        rows = rt.store.con.execute("SELECT namespace, actor, value FROM _palimpsest.tunables ORDER BY ALL").fetchall()
        assert rows == [("default", "*", 0.25), ("default", "alice", 0.6), ("team", "*", 0.75)]
    with open_rt(db) as rt:  # upgraded once: opening again changes nothing
        assert rt.call("owner.read", actor="alice").weight == 0.6
        assert rt.call("owner.read", namespace="team", actor="alice").weight == 0.75
