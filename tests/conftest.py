"""Shared test setup: the example third-party pack is importable, and no user config leaks in."""
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE_PACK_DIR = ROOT / "tests" / "fixtures" / "example_pack"
SHARED_DATA = ROOT.parent / "shared" / "data"

for extra in (EXAMPLE_PACK_DIR, ROOT / "tests" / "helpers"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))


@pytest.fixture(autouse=True)
def _isolated_config(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PALIMPSEST_CONFIG_DISABLED", "1")
    for var in ("PALIMPSEST_DB", "PALIMPSEST_PACKS", "PALIMPSEST_DISABLE_PACKS", "PALIMPSEST_SERVER", "PALIMPSEST_ACTOR"):
        monkeypatch.delenv(var, raising=False)


# The verb-behaviour tests of the built-in packs run on both backends (ADR 0016): every test under tests/packs/
# that opens its runtime through make_pal_runtime (directly or through a fixture) gets pal_backend=duckdb and
# pal_backend=postgres. PALIMPSEST_TEST_BACKENDS=duckdb runs DuckDB only. Tests marked duckdb_only check something
# of the DuckDB file itself (its catalog functions, file locks).
BOTH_BACKENDS = ROOT / "tests" / "packs"


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    from palimpsest_memory.runtime.testing import backends

    if "pal_backend" not in metafunc.fixturenames or metafunc.definition.get_closest_marker("duckdb_only"):
        return
    if Path(str(metafunc.definition.fspath)).is_relative_to(BOTH_BACKENDS) or \
            metafunc.definition.get_closest_marker("both_backends"):
        metafunc.parametrize("pal_backend", backends(), indirect=True)
