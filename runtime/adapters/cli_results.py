"""What a generated verb command does after printing its answer: exit 3 (not found, the README's code) when the
answer lists ids it was asked for and did not find (``memory.get``'s ``missing``). The answer still prints, so
the notes that were found are shown; the error goes to stderr (JSON with ``--json``), so stdout stays one
document. Before, ``pal memory get 999`` printed "missing: 999" and exited 0 (issue 42, bug 8)."""
from __future__ import annotations

import json
import sys
from typing import Any

import typer

from palimpsest_memory.runtime import errors


def exit_if_missing(verb: str, data: Any, as_json: bool) -> None:
    missing = data.get("missing") if isinstance(data, dict) else None
    if not isinstance(missing, list) or not missing:
        return
    shown = ", ".join(str(m) for m in missing[:20]) + (" …" if len(missing) > 20 else "")
    err = errors.NotFound(f"not found: {shown}", verb=verb, details={"missing": missing})
    if as_json:
        print(json.dumps(err.to_dict()), file=sys.stderr)
    else:
        from palimpsest_memory.runtime.adapters.render import print_error

        print_error(err, False)  # text errors go to stderr
    raise typer.Exit(err.exit_code)
