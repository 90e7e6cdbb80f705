"""Read-only means read-only for the store and harmless for the host (issue 16, item 1).

A hostile pack hands SQL to ``ctx.db``: in an assertive verb nothing may change the store (EXPLAIN ANALYZE would
execute its statement, sequences never roll back), and in any verb SQL may not touch host files, download
extensions or change the shared connection's settings. Unclassifiable statements are a typed refusal.
"""
from __future__ import annotations

from pathlib import Path

import pytest
from runtime_fakes import migrated_pack
from pydantic import BaseModel, Field

from palimpsest_memory.runtime import Act, Context, Pack, errors
from palimpsest_memory.runtime.params import Params
from palimpsest_memory.runtime.testing import open_test_runtime


class Sql(Params):
    sql: str = Field(min_length=1)


class Rows(BaseModel):
    rows: list[list[str]]


def hostile_pack(tmp: Path) -> Pack:
    pack = migrated_pack(tmp, "hostile", "CREATE SEQUENCE hostile.ids; CREATE TABLE hostile.t (x INTEGER);")

    @pack.verb("read", act=Act.ASSERTIVE)
    def read(params: Sql, ctx: Context) -> Rows:
        """Run any SQL in a read-only call."""
        return Rows(rows=[[str(v) for v in r] for r in ctx.db.query(params.sql)])

    @pack.verb("write", act=Act.COMMISSIVE)
    def write(params: Sql, ctx: Context) -> Rows:
        """Run any SQL in a write call."""
        return Rows(rows=[[str(v) for v in r] for r in ctx.db.query(params.sql)])

    return pack


@pytest.fixture
def rt(tmp_path):  # type: ignore[no-untyped-def]
    runtime = open_test_runtime(hostile_pack(tmp_path), path=str(tmp_path / "h.duckdb"))
    yield runtime
    runtime.close()


def current(rt) -> int:  # type: ignore[no-untyped-def]
    return int(rt.call("hostile.write", {"sql": "SELECT currval('hostile.ids')"}).rows[0][0])


@pytest.mark.parametrize("sql", [
    "EXPLAIN ANALYZE INSERT INTO hostile.t VALUES (1)",
    "explain  analyse INSERT INTO hostile.t VALUES (1)",
    "SELECT nextval('hostile.ids') FROM range(1000)",
    "SELECT setval('hostile.ids', 500)",
    "CHECKPOINT",
])
def test_a_read_only_call_cannot_change_the_store_by_any_statement(rt, sql) -> None:  # type: ignore[no-untyped-def]
    rt.call("hostile.write", {"sql": "SELECT nextval('hostile.ids')"})
    with pytest.raises(errors.ReadOnlyViolation):
        rt.call("hostile.read", {"sql": sql})
    assert current(rt) == 1
    assert rt.call("hostile.read", {"sql": "SELECT count(*) FROM hostile.t"}).rows == [["0"]]


@pytest.mark.parametrize("verb", ["hostile.read", "hostile.write"])
@pytest.mark.parametrize("template", [
    "SELECT * FROM read_csv('{etc}')", "SELECT * FROM read_text('{etc}')", "SELECT * FROM glob('/etc/*')",
    "COPY (SELECT 42) TO '{out}'", "INSTALL httpfs", "SET threads = 1", "ATTACH '{out}.db' AS other",
])
def test_sql_cannot_touch_host_files_extensions_or_settings(rt, tmp_path, verb, template) -> None:  # type: ignore[no-untyped-def]
    etc = tmp_path / "secret.txt"
    etc.write_text("a,b\nsecret,1\n")
    out = tmp_path / "leak.csv"
    with pytest.raises((errors.ReadOnlyViolation, errors.StorageError)):
        rt.call(verb, {"sql": template.format(etc=etc, out=out)})
    assert not out.exists() and not Path(f"{out}.db").exists()
    threads = rt.call("hostile.read", {"sql": "SELECT current_setting('threads')"}).rows[0][0]
    assert threads != "1" or __import__("os").cpu_count() == 1


def test_a_statement_the_guard_cannot_classify_is_a_typed_refusal(rt) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(errors.PalimpsestError) as err:
        rt.call("hostile.read", {"sql": "UPDATE EXTENSIONS"})
    assert not isinstance(err.value, errors.InternalError)
