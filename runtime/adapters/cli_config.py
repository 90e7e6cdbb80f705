"""``pal config show``: the configuration in effect and where each value came from (ADR 0035): a pack's
``defaults.toml``, the runtime's ``config/default.toml``, the user file, ``Runtime.open(config=)`` or the environment.

Secrets are not printed: a key named like a token or password shows whether it is set, a URL its user without the
password.
"""
from __future__ import annotations

import json
import re
from typing import Any, Callable

import typer

SECRET_KEY = re.compile(r"(token|password|secret)$")
URL_PASSWORD = re.compile(r"(://[^:/@\s]+):[^@/\s]+@")


def shown(key: str, value: Any) -> Any:
    """``value`` as ``pal config show`` prints it: secrets hidden."""
    if SECRET_KEY.search(key.rsplit(".", 1)[-1]):
        return "(set)" if value else ""
    if isinstance(value, str):
        return URL_PASSWORD.sub(r"\1:***@", value)
    return value


def register(app: typer.Typer, session: Callable[[], Any]) -> None:
    group = typer.Typer(help="The configuration in effect.", no_args_is_help=True)

    @group.command("show")
    def show() -> None:
        """Print every setting in effect, merged, with where its value came from (a pack's defaults, the runtime's
        default.toml, the user file, the environment)."""
        from palimpsest_memory.runtime import config_sources

        rows = [{"key": k, "value": shown(k, v), "source": s} for k, v, s in config_sources()]
        if session().as_json:
            from palimpsest_memory.runtime.adapters.render import print_json

            print_json(rows)
            return
        width = max((len(r["key"]) for r in rows), default=0)
        for r in rows:
            value = json.dumps(r["value"], ensure_ascii=False)
            print(f"{r['key']:<{width}} = {value}  # {r['source']}")

    app.add_typer(group, name="config")
