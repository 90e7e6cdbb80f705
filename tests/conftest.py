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
