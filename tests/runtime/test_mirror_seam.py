"""The mirror seam and declared events (ADR 0015): mirrors follow commits only, events follow successful calls."""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import pytest
from runtime_fakes import migrated_pack
from pydantic import BaseModel, Field

from palimpsest_memory.runtime import Act, Context, Mirror, Pack, Visibility, errors
from palimpsest_memory.runtime.mirror import Change
from palimpsest_memory.runtime.params import NamespacedParams, Params
from palimpsest_memory.runtime.testing import open_test_runtime


class Text(NamespacedParams):
    text: str = Field(min_length=1)
    fail_after: bool = False


class Empty(Params):
    pass


class Count(BaseModel):
    n: int
    rows: list[str] = Field(default_factory=list)


@dataclass(frozen=True)
class Said:
    text: str


class RowsMirror(Mirror):
    """Every row of ``<pack>.rows`` per namespace, in memory."""

    def __init__(self) -> None:
        self.rows: dict[str, list[str]] = {}
        self.loads = 0
        self.seqs: list[int] = []
        self.fail_next_apply = False
        self.closed_with: list[str] = []

    def load(self, ctx: Context) -> None:
        self.loads += 1
        self.rows = {}
        for ns, text in ctx.db.query(f"SELECT namespace, text FROM {ctx.pack}.rows ORDER BY rowid"):
            self.rows.setdefault(ns, []).append(text)

    def apply(self, changes: Sequence[Change]) -> None:
        if self.fail_next_apply:
            self.fail_next_apply = False
            raise RuntimeError("a mirror bug")
        for c in changes:
            self.seqs.append(c.seq)
            if c.kind == "added":
                self.rows.setdefault(c.namespace, []).extend(c.data)

    def close(self, ctx: Context) -> None:
        self.closed_with.append(ctx.call(f"{ctx.pack}.add", {"text": "written at close"}).rows[-1])

    def digest(self) -> Any:
        return sorted((ns, tuple(v)) for ns, v in self.rows.items())


@dataclass
class StoreState:
    rows: RowsMirror = field(default_factory=RowsMirror)
    heard: list[tuple[str, str, str | None]] = field(default_factory=list)


def mirrored_pack(tmp: Path, name: str = "mir") -> Pack:
    pack = migrated_pack(tmp, name, f"CREATE TABLE {name}.rows (namespace VARCHAR, text VARCHAR);",
                         state=StoreState, events={"said": Said})

    @pack.verb("add", act=Act.COMMISSIVE)
    def add(params: Text, ctx: Context) -> Count:
        """Add a row; the mirror hears of it after commit."""
        ctx.db.execute(f"INSERT INTO {name}.rows VALUES (?, ?)", [ctx.namespace, params.text])
        ctx.record_change("added", [params.text])
        if params.fail_after:
            raise ValueError("boom after recording")
        pending = [t for batch in ctx.uncommitted("added") for t in batch]
        return Count(n=len(pending), rows=ctx.state.rows.rows.get(ctx.namespace, []) + pending)

    @pack.verb("add_two_catching", act=Act.COMMISSIVE)
    def add_two_catching(params: Text, ctx: Context) -> Count:
        """A nested add that fails after writing SQL is caught, and the transaction commits anyway."""
        ctx.call(f"{name}.add", {"text": params.text})
        try:
            ctx.call(f"{name}.add", {"text": params.text + "-half", "fail_after": True})
        except errors.PalimpsestError:
            pass
        return Count(n=0)

    @pack.verb("read", act=Act.ASSERTIVE)
    def read(params: Empty, ctx: Context) -> Count:
        """What the mirror holds for this namespace; publishes `said` (read-only calls may publish)."""
        ctx.publish("said", Said("read"))
        rows = ctx.state.rows.rows.get(ctx.namespace, [])
        return Count(n=len(rows), rows=rows)

    @pack.verb("publish_then_fail", act=Act.ASSERTIVE)
    def publish_then_fail(params: Empty, ctx: Context) -> Count:
        """An event of a failed call is never delivered."""
        ctx.publish("said", Said("never"))
        raise ValueError("boom")

    @pack.verb("publish_undeclared", act=Act.ASSERTIVE, visibility=Visibility.SUBHANDLER)
    def publish_undeclared(params: Empty, ctx: Context) -> Count:
        """A pack bug: an event nobody declared."""
        ctx.publish("shouted", Said("x"))
        return Count(n=0)

    @pack.verb("publish_wrong_type", act=Act.ASSERTIVE, visibility=Visibility.SUBHANDLER)
    def publish_wrong_type(params: Empty, ctx: Context) -> Count:
        """A pack bug: the wrong payload type."""
        ctx.publish("said", {"text": "x"})
        return Count(n=0)

    @pack.verb("sneaky_record", act=Act.ASSERTIVE, visibility=Visibility.SUBHANDLER)
    def sneaky_record(params: Empty, ctx: Context) -> Count:
        """A read-only call has no changes to record."""
        ctx.record_change("added", ["sneaky"])
        return Count(n=0)

    return pack


def listener_pack(publisher: str = "mir", fail: bool = False) -> Pack:
    pack = Pack("listener", version="1.0", requires=[publisher])

    @pack.subscribe(f"{publisher}.said")
    def heard(event: Said, ctx: Context) -> None:
        if fail:
            raise RuntimeError("a subscriber bug")
        # a subscriber runs in a write transaction of its own: it may call writing verbs of packs it requires
        ctx.call(f"{publisher}.add", {"text": f"heard {event.text}"})

    return pack


@pytest.fixture
def rt(tmp_path):  # type: ignore[no-untyped-def]
    runtime = open_test_runtime(mirrored_pack(tmp_path), path=str(tmp_path / "m.duckdb"))
    yield runtime
    runtime.close()


def mirror(rt) -> RowsMirror:  # type: ignore[no-untyped-def]
    return rt.pack_state("mir").rows


def test_state_is_the_declared_type_and_mirrors_load_at_open(tmp_path) -> None:
    db = tmp_path / "m.duckdb"
    with open_test_runtime(mirrored_pack(tmp_path), path=str(db)) as rt:
        assert isinstance(rt.pack_state("mir"), StoreState) and mirror(rt).loads == 1
        rt.call("mir.add", {"text": "a"})
    with open_test_runtime(mirrored_pack(tmp_path), path=str(db)) as rt:
        assert mirror(rt).rows == {"default": ["a", "written at close"]}


def test_changes_reach_mirrors_only_after_commit_in_commit_order(rt) -> None:  # type: ignore[no-untyped-def]
    # inside the call, the change is uncommitted: the mirror does not show it yet, ctx.uncommitted does
    assert rt.call("mir.add", {"text": "a"}).model_dump() == {"n": 1, "rows": ["a"]}
    assert rt.call("mir.add", {"text": "b"}, namespace="other").rows == ["b"]
    assert mirror(rt).rows == {"default": ["a"], "other": ["b"]}
    assert mirror(rt).seqs == sorted(mirror(rt).seqs) and len(set(mirror(rt).seqs)) == 2


def test_a_rolled_back_call_changes_no_mirror(rt) -> None:  # type: ignore[no-untyped-def]
    rt.call("mir.add", {"text": "a"})
    before, seqs = mirror(rt).digest(), list(mirror(rt).seqs)
    with pytest.raises(errors.InternalError):
        rt.call("mir.add", {"text": "b", "fail_after": True})
    assert mirror(rt).digest() == before and mirror(rt).seqs == seqs
    assert rt.call("mir.read").rows == ["a"]


def test_a_caught_nested_failure_reloads_the_mirror_from_what_was_committed(rt) -> None:  # type: ignore[no-untyped-def]
    loads = mirror(rt).loads
    rt.call("mir.add_two_catching", {"text": "x"})
    # the failed add's row was committed by its caller: only a reload can know it, and it does
    assert mirror(rt).loads == loads + 1
    assert mirror(rt).rows == {"default": ["x", "x-half"]}


def test_a_mirror_that_fails_to_apply_is_rebuilt_from_the_store(rt, caplog) -> None:  # type: ignore[no-untyped-def]
    mirror(rt).fail_next_apply = True
    with caplog.at_level(logging.ERROR, logger="palimpsest"):
        rt.call("mir.add", {"text": "a"})
    assert "failed to apply" in caplog.text
    assert mirror(rt).rows == {"default": ["a"]}


def test_read_only_calls_cannot_record_changes(rt) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(errors.ReadOnlyViolation):
        rt.call("mir.sneaky_record", internal=True)
    assert mirror(rt).rows == {}


def test_close_runs_each_mirror_with_a_write_context(tmp_path) -> None:
    rt = open_test_runtime(mirrored_pack(tmp_path))
    m = mirror(rt)
    rt.close()
    assert m.closed_with == ["written at close"]


def test_events_reach_subscribers_after_the_call_in_their_own_transaction(tmp_path) -> None:
    with open_test_runtime(mirrored_pack(tmp_path), listener_pack()) as rt:
        assert rt.call("mir.read").rows == []  # the read-only call stays read-only ...
        assert mirror(rt).rows == {"default": ["heard read"]}  # ... its subscriber wrote afterwards
        rt.call("mir.read", namespace="ns2", actor="alice")
        assert mirror(rt).rows["ns2"] == ["heard read"]
        with pytest.raises(errors.InternalError):
            rt.call("mir.publish_then_fail")
        assert sum(len(v) for v in mirror(rt).rows.values()) == 2  # a failed call's event is dropped


def test_a_failing_subscriber_is_logged_and_fails_nothing(tmp_path, caplog) -> None:  # type: ignore[no-untyped-def]
    with open_test_runtime(mirrored_pack(tmp_path), listener_pack(fail=True)) as rt:
        with caplog.at_level(logging.ERROR, logger="palimpsest"):
            assert rt.call("mir.read").n == 0
        assert "listener.<on mir.said> failed" in caplog.text


@pytest.mark.parametrize("verb", ["mir.publish_undeclared", "mir.publish_wrong_type"])
def test_publishing_outside_the_declaration_is_a_typed_error(rt, verb) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(errors.InternalError, match="declare|carries"):
        rt.call(verb, internal=True)


def test_subscriptions_are_checked_at_load(tmp_path) -> None:
    with pytest.raises(errors.PackLoadError, match="does not declare"):
        open_test_runtime(mirrored_pack(tmp_path), _subscriber("mir.shouted", requires=["mir"]))
    with pytest.raises(errors.PackLoadError, match="does not require"):
        open_test_runtime(mirrored_pack(tmp_path), _subscriber("mir.said", requires=[]))
    with pytest.raises(errors.PackLoadError, match="event"):
        Pack("bad", version="1").subscribe("no-dot")


def _subscriber(event: str, requires: list[str]) -> Pack:
    pack = Pack("sub", version="1.0", requires=requires)
    pack.subscribe(event)(lambda payload, ctx: None)
    return pack


def test_the_catalog_lists_declared_events(tmp_path) -> None:
    with open_test_runtime(mirrored_pack(tmp_path)) as rt:
        assert rt.catalog.events() == {"mir.said": Said}
