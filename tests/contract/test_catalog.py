"""Meta-tests over the catalog of installed packs (as datasette does for its hooks).

Every public verb: a docstring, a params model that forbids unknown fields, JSON-schema-exportable models, a
test that calls it. Every built-in pack: its settings come from its defaults.toml (beside its settings model), not
from model defaults; the runtime's config/default.toml holds the runtime's own keys only (ADR 0035).
"""
from __future__ import annotations

import inspect
import re
import tomllib
from pathlib import Path

import pytest

from palimpsest_memory.runtime import Visibility, load_catalog
from palimpsest_memory.runtime.config import default_config_path, pack_settings
from palimpsest_memory.runtime.pack import Pack
from palimpsest_memory.runtime.testing import ISOLATED_ENV

ROOT = Path(__file__).resolve().parents[2]
BUILT_IN = ("kg", "memory", "brain")
# the built-in packs, plus an installed pack only when asked (`pytest --pal-pack NAME`, or `pal check-pack NAME`)
CATALOG, CONFIG = load_catalog(env=ISOLATED_ENV)
VERBS = CATALOG.verbs(include_subhandlers=True)
BUILT_IN_PACKS: list[Pack] = [p for n, p in CATALOG.packs.items() if n in BUILT_IN]
TEST_TEXT = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "tests").rglob("*.py"))


def test_built_in_packs_load_without_failures() -> None:
    broken = {n: why for n, why in CATALOG.unavailable.items() if n in BUILT_IN}
    assert not broken, broken


@pytest.mark.parametrize("spec", VERBS, ids=lambda s: s.full_name)
def test_verb_is_documented_strict_and_schema_exportable(spec) -> None:  # type: ignore[no-untyped-def]
    assert spec.summary, f"{spec.full_name} needs a docstring (it is the CLI help and MCP description)"
    assert spec.params_model.model_config.get("extra") == "forbid"
    assert spec.params_model.model_json_schema()["type"] == "object"
    assert spec.result_model.model_json_schema()["type"] == "object"


@pytest.mark.parametrize("spec", [v for v in VERBS if v.visibility is Visibility.PUBLIC], ids=lambda s: s.full_name)
def test_public_verb_is_called_by_some_test(spec) -> None:  # type: ignore[no-untyped-def]
    assert re.search(rf"['\"]{re.escape(spec.full_name)}['\"]", TEST_TEXT), f"no test calls {spec.full_name}"


@pytest.mark.parametrize("pack", BUILT_IN_PACKS, ids=lambda p: p.name)
def test_built_in_settings_come_from_the_packs_defaults_toml(pack: Pack) -> None:
    assert pack.settings is not None, f"built-in pack {pack.name} declares no settings"
    assert pack.defaults is not None and pack.defaults.is_file(), f"{pack.name} ships no defaults.toml"
    assert pack.defaults.parent == Path(inspect.getfile(pack.settings)).parent, "defaults.toml lies beside settings"
    with_defaults = [n for n, f in pack.settings.model_fields.items() if not f.is_required()]
    assert not with_defaults, f"{pack.name} settings define defaults in code: {with_defaults} (put them in {pack.defaults})"
    # every value the pack runs with is the one written in its defaults.toml (no key dropped, renamed or coerced
    # away), and the runtime's default.toml overrides none of them
    shipped = tomllib.loads(pack.defaults.read_text(encoding="utf-8"))
    assert CONFIG["packs"][pack.name] == shipped
    assert pack_settings(pack.name, pack.settings, CONFIG).model_dump(mode="json") == shipped


def test_the_runtime_default_toml_names_no_pack() -> None:
    text = default_config_path().read_text(encoding="utf-8")
    assert "packs" not in tomllib.loads(text), "a pack's defaults belong in its own defaults.toml"
    named = [n for n in BUILT_IN if re.search(rf"\b{n}\.[a-z]", text)]
    assert not named, f"config/default.toml names verbs or keys of the packs {named}"
