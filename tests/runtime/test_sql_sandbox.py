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


# -- every spelling of a sequence call or a side-effecting table function (issue 46, item 6 and item 8) -----------
# Each form is first run in a writing call, which must really advance the sequence (or run the function): so the
# refusal in the read-only call is the guard's, of a statement that would have changed the store, not a
# statement that fails anyway. The regex the guard had missed "nextval"( and nextval/**/( and every table function.
SEQUENCE_FORMS = [
    "SELECT \"nextval\"('hostile.ids')",
    "SELECT nextval/**/('hostile.ids')",
    "SELECT nextval -- a comment\n('hostile.ids')",
    "SELECT \"NEXTVAL\"('hostile.ids')",
    "SELECT system.main.nextval('hostile.ids')",
    "SELECT (SELECT \"nextval\"('hostile.ids'))",
    "WITH a AS (SELECT \"nextval\"('hostile.ids') AS v) SELECT v FROM a",
    "SELECT * FROM query('SELECT nextval(''hostile.ids'')')",
    "SELECT * FROM \"query\"('SELECT \"nextval\"(''hostile.ids'')')",
]


@pytest.mark.parametrize("sql", SEQUENCE_FORMS)
def test_every_spelling_of_a_sequence_call_is_refused_in_a_read_only_call(rt, sql) -> None:  # type: ignore[no-untyped-def]
    rt.call("hostile.write", {"sql": "SELECT nextval('hostile.ids')"})
    rt.call("hostile.write", {"sql": sql})
    assert current(rt) == 2  # the form really advances the sequence: the guard below has something to stop
    with pytest.raises(errors.ReadOnlyViolation) as err:
        rt.call("hostile.read", {"sql": sql})
    assert "SEQUENCE_CALL" in err.value.message or "FUNCTION query" in err.value.message, err.value.message
    assert current(rt) == 2


@pytest.mark.parametrize("sql, named", [
    ("SELECT * FROM checkpoint()", "checkpoint"),
    ("SELECT * FROM \"checkpoint\"()", "checkpoint"),
    ("SELECT * FROM main.\"CHECKPOINT\"()", "checkpoint"),
    ("SELECT * FROM force_checkpoint()", "force_checkpoint"),
    ("SELECT count(*) FROM (SELECT * FROM checkpoint()) c", "checkpoint"),
    ("SELECT * FROM query_table('hostile.t')", "query_table"),
    ("SELECT * FROM enable_profiling()", "enable_profiling"),
])
def test_a_table_function_that_is_not_a_plain_read_is_refused_in_a_read_only_call(rt, sql, named) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(errors.ReadOnlyViolation) as err:
        rt.call("hostile.read", {"sql": sql})
    assert f"FUNCTION {named}" in err.value.message  # refused by the guard, naming the function


@pytest.mark.parametrize("sql", [
    "SELECT count(*) FROM range(3)", "SELECT * FROM unnest([1, 2])", "SELECT count(*) FROM generate_series(1, 3)",
    "SELECT count(*) FROM duckdb_columns() WHERE schema_name = 'hostile'", "SELECT currval('hostile.ids')",
    "SELECT 'nextval(' AS text_that_only_looks_like_a_call",
])
def test_plain_reads_still_run_in_a_read_only_call(rt, sql) -> None:  # type: ignore[no-untyped-def]
    rt.call("hostile.write", {"sql": "SELECT nextval('hostile.ids')"})
    assert rt.call("hostile.read", {"sql": sql}).rows
