"""Pytest fixtures for pack authors (installed as a ``pytest11`` plugin named ``palimpsest``).

``pal_runtime`` is a runtime over every installed pack on a throwaway ``:memory:`` store;
``make_pal_runtime(*packs, config=None, discover=False)`` builds one over chosen packs (Pack objects or
modules), e.g. a pack under test alone, or beside the installed ones with ``discover=True``.
"""
from __future__ import annotations

from typing import Any, Callable, Iterator

import pytest

from runtime.engine import Runtime

# A user's own config file or environment must not leak into tests.
ISOLATED_ENV: dict[str, str] = {"PALIMPSEST_CONFIG_DISABLED": "1"}


def open_test_runtime(*packs: Any, config: dict | None = None, discover: bool = False,
                      path: str = ":memory:", **kwargs: Any) -> Runtime:
    """A runtime for tests: chosen packs (plus installed ones with ``discover=True``), no user config."""
    return Runtime.open(path, config=config, packs=list(packs) or None,
                        discover_packs=discover or not packs, env=ISOLATED_ENV, **kwargs)


@pytest.fixture
def make_pal_runtime() -> Iterator[Callable[..., Runtime]]:
    opened: list[Runtime] = []

    def make(*packs: Any, **kwargs: Any) -> Runtime:
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
