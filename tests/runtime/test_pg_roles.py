"""Roles (issue 41, item 4): a non-owner application role (read-write) and a read-only role open a PostgreSQL
store with the GRANTs `pal grants` prints. On main before the store seam only the owner (or a superuser) could
open the store, even for reading: every open ran CREATE … IF NOT EXISTS, which needs the right to create."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator
from urllib.parse import urlsplit, urlunsplit

import pytest

from palimpsest_memory.runtime import errors
from palimpsest_memory.runtime.testing import POSTGRES_MISSING, open_test_runtime, postgres_available

pytestmark = pytest.mark.skipif(not postgres_available(), reason=POSTGRES_MISSING)
HASHING = {"packs": {"memory": {"embedder": "hashing"}}}
ROOT = Path(__file__).resolve().parents[2]


def as_role(url: str, role: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(netloc=f"{role}@{parts.netloc.rpartition('@')[2]}"))


@pytest.fixture
def store(pal_postgres: Any) -> Iterator[tuple[str, str, str, str]]:
    """(owner's URL, app role, read-only role, a role granted nothing), the roles made for this test alone."""
    import psycopg

    url = pal_postgres.fresh()
    tag = f"{os.getpid()}_{abs(hash(url)) % 10**6}"
    roles = [f"pal_app_{tag}", f"pal_ro_{tag}", f"pal_none_{tag}"]
    with psycopg.connect(pal_postgres.url, autocommit=True) as con:
        for role in roles:
            con.execute(f"CREATE ROLE {role} LOGIN")
    yield (url, *roles)
    pal_postgres.drop(url)
    with psycopg.connect(pal_postgres.url, autocommit=True) as con:
        for role in roles:
            con.execute(f"DROP ROLE IF EXISTS {role}")


def grant(url: str, role: str, *read_only: str) -> list[str]:
    """`pal grants ROLE` as a user runs it, then its statements run as the owner."""
    import psycopg

    env = {k: v for k, v in os.environ.items() if not k.startswith("PALIMPSEST")}
    env.update(PALIMPSEST_CONFIG_DISABLED="1", PALIMPSEST__packs__memory__embedder="hashing")
    proc = subprocess.run([sys.executable, "-m", "palimpsest_memory.runtime.adapters.cli", "--db", url, "--json",
                           "grants", role, *read_only], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    statements = json.loads(proc.stdout)["statements"]
    with psycopg.connect(url, autocommit=True) as con:
        for sql in statements:
            con.execute(sql)
    return statements


def test_an_application_role_and_a_read_only_role_open_the_store(store: tuple[str, str, str, str]) -> None:
    url, app, ro, nobody = store
    with open_test_runtime(path=url, config=HASHING) as owner:  # the owner creates and migrates the schemas
        owner.call("memory.remember", {"content": "the owner's note about Orion"})
        owner.call("kg.assert_fact", {"subject": "Orion", "predicate": "uses", "object": "Postgres"})
    statements = grant(url, app)
    assert any("MAINTAIN" in s for s in statements)  # so a forget's VACUUM FULL may rewrite the tables
    grant(url, ro, "--read-only")

    with open_test_runtime(path=as_role(url, app), config=HASHING) as rt:
        made = rt.call("memory.remember", {"content": "the app's note about Orion"})
        rt.call("kg.assert_fact", {"subject": "Orion", "predicate": "uses", "object": "CockroachDB"})
        assert len(rt.call("memory.recall", {"query": "Orion"}).results) == 2
        forgot = rt.call("memory.forget", {"reason": "test", "ids": [made.note.id]})
        assert forgot.note_ids == [made.note.id]  # erased and the tables rewritten, by a role that owns none of them

    with open_test_runtime(path=as_role(url, ro), config=HASHING) as rt:
        assert [r.note.content for r in rt.call("memory.recall", {"query": "Orion"}).results] == \
            ["the owner's note about Orion"]
        assert [f.object for f in rt.call("kg.facts", {"subject": "Orion"}).facts] == ["CockroachDB"]
        before = rt.call("memory.count", {}).count
        with pytest.raises(errors.Forbidden) as refused:
            rt.call("memory.remember", {"content": "a reader may not write"})
        assert refused.value.exit_code == 4 and "role" in refused.value.message
        assert rt.call("memory.count", {}).count == before == 1  # left unchanged

    with pytest.raises(errors.StorageError):  # granted nothing: a typed error, not a traceback
        open_test_runtime(path=as_role(url, nobody), config=HASHING)


def test_grants_on_a_file_say_there_are_no_roles(tmp_path: Path) -> None:
    with open_test_runtime(path=str(tmp_path / "a.duckdb"), config=HASHING) as rt:
        with pytest.raises(errors.InvalidParams, match="no database roles"):
            rt.grants("app")


def test_a_role_name_that_is_not_an_identifier_is_refused(pal_postgres: Any) -> None:
    url = pal_postgres.fresh()
    try:
        with open_test_runtime(path=url, config=HASHING) as rt:
            with pytest.raises(errors.InvalidParams, match="identifier"):
                rt.grants("app; DROP TABLE memory.notes")
    finally:
        pal_postgres.drop(url)
