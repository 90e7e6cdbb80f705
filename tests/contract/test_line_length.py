"""No product line is longer than 120 characters (issue 43, item 5): the house's line length, kept by a test since
no formatter runs here. Counted in characters, not bytes (a "—" is one)."""
from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 120
NOT_YET: set[str] = set()  # files still to be wrapped (none)


def test_no_product_line_exceeds_the_limit() -> None:
    long = []
    for folder in ("runtime", "packs"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel in NOT_YET:
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if len(line) > LIMIT:
                    long.append(f"{rel}:{number} ({len(line)})")
    assert not long, f"lines over {LIMIT} characters:\n" + "\n".join(long)


def test_the_exceptions_still_exist() -> None:
    assert all((ROOT / rel).is_file() for rel in NOT_YET)
