"""Fake packs for runtime tests, built fresh per test (Pack objects are mutable)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from palimpsest_memory.runtime import Act, Context, Pack, Visibility, hookimpl


class TextParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str = Field(min_length=1)
    count: int = Field(1, ge=1, le=5)


class Count(BaseModel):
    n: int


class Empty(BaseModel):
    model_config = ConfigDict(extra="forbid")


def migrated_pack(tmp: Path, name: str, ddl: str, **kwargs: Any) -> Pack:
    """A pack whose one migration runs ``ddl`` in its schema (written to a folder under ``tmp``)."""
    sql = tmp / f"{name}_sql"
    sql.mkdir(exist_ok=True)
    (sql / "001_rows.sql").write_text(ddl)
    return Pack(name, version="1.0", migrations=sql, **kwargs)


def store_pack(tmp: Path, name: str = "store", requires: tuple[str, ...] = ()) -> Pack:
    """A pack with one table: a writer, a reader, a sneaky reader that writes, a failing writer."""
    pack = migrated_pack(tmp, name, f"CREATE TABLE {name}.rows (text VARCHAR NOT NULL);", requires=list(requires))

    @pack.verb("add", act=Act.COMMISSIVE)
    def add(params: TextParams, ctx: Context) -> Count:
        """Add rows."""
        for _ in range(params.count):
            ctx.db.execute(f"INSERT INTO {name}.rows VALUES (?)", [params.text])
        return Count(n=ctx.db.query(f"SELECT count(*) FROM {name}.rows")[0][0])

    @pack.verb("count", act=Act.ASSERTIVE)
    def count(params: Empty, ctx: Context) -> Count:
        """Count rows."""
        return Count(n=ctx.db.query(f"SELECT count(*) FROM {name}.rows")[0][0])

    @pack.verb("sneaky_count", act=Act.ASSERTIVE)
    def sneaky_count(params: Empty, ctx: Context) -> Count:
        """An assertive verb that (wrongly) writes."""
        ctx.db.execute(f"INSERT INTO {name}.rows VALUES ('sneaky')")
        return Count(n=0)

    @pack.verb("sneaky_delegate", act=Act.ASSERTIVE)
    def sneaky_delegate(params: Empty, ctx: Context) -> Count:
        """An assertive verb that calls a commissive one."""
        return ctx.call(f"{name}.add", {"text": "through a call"})

    @pack.verb("add_then_fail", act=Act.COMMISSIVE)
    def add_then_fail(params: TextParams, ctx: Context) -> Count:
        """Write, then crash: the write must be rolled back."""
        ctx.db.execute(f"INSERT INTO {name}.rows VALUES (?)", [params.text])
        raise ValueError("boom after writing")

    @pack.verb("add_bad_result", act=Act.COMMISSIVE)
    def add_bad_result(params: TextParams, ctx: Context) -> Count:
        """Write, then return an invalid result."""
        ctx.db.execute(f"INSERT INTO {name}.rows VALUES (?)", [params.text])
        return {"n": "not a number"}  # type: ignore[return-value]

    @pack.verb("upper", act=Act.ASSERTIVE, visibility=Visibility.SUBHANDLER)
    def upper(params: TextParams, ctx: Context) -> Count:
        """A hidden helper."""
        return Count(n=len(params.text))

    @pack.verb("via_upper", act=Act.ASSERTIVE)
    def via_upper(params: TextParams, ctx: Context) -> Count:
        """Calls its own sub-handler."""
        return ctx.call(f"{name}.upper", {"text": params.text})

    return pack


def caller_pack(target: str, requires: tuple[str, ...]) -> Pack:
    """A pack that calls ``target`` from inside a verb."""
    pack = Pack("caller", version="1.0", requires=list(requires))

    @pack.verb("relay", act=Act.COMMISSIVE)
    def relay(params: TextParams, ctx: Context) -> Count:
        """Call another pack's verb."""
        return ctx.call(target, {"text": params.text})

    return pack


def plain_pack(name: str, requires: tuple[str, ...] = (), verb: str = "ping") -> Pack:
    pack = Pack(name, version="1.0", requires=list(requires))

    @pack.verb(verb, act=Act.ASSERTIVE)
    def ping(params: Empty, ctx: Context) -> Count:
        """Ping."""
        return Count(n=1)

    return pack


class Recorder:
    """A dispatch observer (tracing): wraps every call and records it."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, int, str]] = []

    @hookimpl(wrapper=True)
    def palimpsest_dispatch(self, call):  # type: ignore[no-untyped-def]
        self.seen.append((call.verb, call.depth, "before"))
        result = yield
        self.seen.append((call.verb, call.depth, "after"))
        return result
