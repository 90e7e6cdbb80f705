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
