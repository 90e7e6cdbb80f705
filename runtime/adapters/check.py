"""``pal check-pack NAME``: check an installed pack the way palimpsest's own contract tests check the built-in
ones, so a pack author finds what is missing before a user does.

Checks: the pack loads through its entry point; the packs it ``requires`` are installed; every verb has a
docstring (its CLI help and MCP description), a params model that derives from ``palimpsest_memory.runtime.Params`` and
refuses unknown fields, a description on every params field, and JSON-schema-exportable models; its migrations folder
was installed with the package (``sql/*.sql`` as package data) and has ``NNN_title.sql`` files; and a throwaway
database opens with it (settings validated against your config, migrations applied).
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from palimpsest_memory.runtime import Params, Runtime, errors, load_catalog
from palimpsest_memory.runtime.pack import MIGRATION_FILE



def check_pack(name: str) -> list[dict[str, Any]]:
    """One row per check: ``{"check", "ok", "detail"}``."""
    rows: list[dict[str, Any]] = []

    def add(check: str, ok: bool, detail: str = "") -> None:
        rows.append({"check": check, "ok": ok, "detail": detail})

    env = {**os.environ}
    env.pop("PALIMPSEST_DISABLE_PACKS", None)
    catalog, _ = load_catalog(env={**env, "PALIMPSEST_PACKS": ""})
    if name in catalog.unavailable:
        add("loads", False, str(catalog.unavailable[name]))
        return rows
    pack = catalog.packs.get(name)
    if pack is None:
        known = ", ".join(sorted(set(catalog.packs) | set(catalog.unavailable))) or "none"
        raise errors.VerbNotFound(f"no installed pack named {name!r} (installed: {known}); is it registered under "
                                  "the 'palimpsest.packs' entry point?", details={"pack": name})
    add("loads", True, f"{pack.name} {pack.version}")
    missing = [r for r in pack.requires if r not in catalog.packs]
    add("requires", not missing, f"not installed: {', '.join(missing)}" if missing else
        ", ".join(pack.requires) or "nothing")
    for spec in pack.verbs.values():
        problems = []
        if not spec.summary:
            problems.append("no docstring (it is the CLI help and the MCP tool description)")
        if not issubclass(spec.params_model, Params):
            problems.append("params model does not derive from palimpsest_memory.runtime.Params")
        if spec.params_model.model_config.get("extra") != "forbid":
            problems.append("params model accepts unknown fields")
        undocumented = [f for f, info in spec.params_model.model_fields.items() if not info.description]
        if undocumented and spec.visibility.value == "public":
            problems.append(f"params without a description: {', '.join(undocumented)}")
        try:
            spec.params_model.model_json_schema()
            spec.result_model.model_json_schema()
        except Exception as exc:  # noqa: BLE001 - whatever pydantic refuses
            problems.append(f"models do not export a JSON schema: {exc}")
        add(f"verb {spec.full_name}", not problems, "; ".join(problems))
    if pack.migrations is not None:
        folder = Path(pack.migrations)
        files = sorted(p.name for p in folder.glob("*.sql")) if folder.is_dir() else []
        bad = [f for f in files if not MIGRATION_FILE.match(f)]
        if not files:
            add("migrations installed", False, f"{folder} has no .sql files: ship sql/*.sql as package data "
                "(setuptools: [tool.setuptools.package-data] yourpack = [\"sql/*.sql\"])")
        else:
            add("migrations installed", not bad, f"not NNN_title.sql: {', '.join(bad)}" if bad else
                f"{len(files)} file(s) in {folder}")
    with tempfile.TemporaryDirectory() as tmp:
        try:
            with Runtime.open(Path(tmp) / "check.duckdb",
                              env={**env, "PALIMPSEST_PACKS": ",".join([name, *pack.requires])}) as rt:
                add("opens a database", True, f"schema version {rt.schema_versions().get(name, 0)}")
        except errors.PalimpsestError as exc:
            add("opens a database", False, f"{exc.code}: {exc.message}")
    return rows
