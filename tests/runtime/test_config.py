"""Config: shipped defaults, user file, explicit overrides and environment, and per-pack settings models."""
import tomllib

import pytest
from pydantic import BaseModel, ConfigDict

from palimpsest_memory.runtime import Pack, errors
from palimpsest_memory.runtime.config import default_config_path, load_config, pack_settings


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    limit: int
    mode: str


def test_defaults_come_from_the_shipped_file() -> None:
    shipped = tomllib.loads(default_config_path().read_text())
    cfg = load_config(env={"PALIMPSEST_CONFIG_DISABLED": "1"})
    assert cfg["runtime"] == shipped["runtime"]


def test_precedence_user_file_then_overrides_then_env(tmp_path) -> None:  # type: ignore[no-untyped-def]
    user = tmp_path / "user.toml"
    user.write_text('[runtime]\ndefault_namespace = "from-file"\ndatabase = "file.db"\n[packs.p]\nlimit = 3\n')
    env = {"PALIMPSEST_CONFIG": str(user), "PALIMPSEST__packs__p__limit": "7", "PALIMPSEST_DB": "env.db"}
    cfg = load_config({"packs": {"p": {"mode": "given"}}}, env=env)
    assert cfg["runtime"]["default_namespace"] == "from-file"
    assert cfg["runtime"]["database"] == "env.db"
    assert cfg["packs"]["p"] == {"limit": 7, "mode": "given"}


def test_env_lists_and_missing_user_file(tmp_path) -> None:  # type: ignore[no-untyped-def]
    cfg = load_config(env={"PALIMPSEST_CONFIG_DISABLED": "1", "PALIMPSEST_PACKS": "kg, memory"})
    assert cfg["runtime"]["packs"] == ["kg", "memory"]
    with pytest.raises(errors.ConfigError, match="does not exist"):
        load_config(env={"PALIMPSEST_CONFIG": str(tmp_path / "nope.toml")})


def test_invalid_user_toml_is_a_config_error(tmp_path) -> None:  # type: ignore[no-untyped-def]
    bad = tmp_path / "bad.toml"
    bad.write_text("[runtime\n")
    with pytest.raises(errors.ConfigError, match="invalid TOML"):
        load_config(env={"PALIMPSEST_CONFIG": str(bad)})


def test_pack_settings_are_validated_with_key_names() -> None:
    assert pack_settings("p", Settings, {"packs": {"p": {"limit": 2, "mode": "x"}}}).limit == 2
    with pytest.raises(errors.ConfigError, match=r"packs\.p\.limit"):
        pack_settings("p", Settings, {"packs": {"p": {"limit": "many", "mode": "x"}}})
    with pytest.raises(errors.ConfigError, match=r"packs\.p\.colour"):
        pack_settings("p", Settings, {"packs": {"p": {"limit": 1, "mode": "x", "colour": 1}}})
    with pytest.raises(errors.ConfigError, match="declares no settings"):
        pack_settings("q", None, {"packs": {"q": {"x": 1}}})


def test_runtime_open_validates_pack_settings() -> None:
    from palimpsest_memory.runtime.testing import open_test_runtime

    pack = Pack("p", version="1.0", settings=Settings)
    rt = open_test_runtime(pack, config={"packs": {"p": {"limit": 4, "mode": "m"}}})
    assert rt._settings["p"].limit == 4
    with pytest.raises(errors.ConfigError):
        open_test_runtime(Pack("p", version="1.0", settings=Settings), config={"packs": {"p": {"limit": 4}}})


@pytest.mark.parametrize("override, key", [
    ({"runtime": 1}, "runtime"), ({"packs": 1}, "packs"), ({"adapters": 1}, "adapters"),
    ({"runtime": {"disabled": 5}}, "runtime.disabled"), ({"runtime": {"packs": ["kg", 3]}}, "runtime.packs"),
    ({"packs": {"memory": 3}}, "packs.memory"), ({"runtime": {"database": 7}}, "runtime.database"),
])
def test_wrong_typed_sections_are_a_config_error_naming_the_key(override, key) -> None:  # type: ignore[no-untyped-def]
    from palimpsest_memory.runtime.config import load_config

    with pytest.raises(errors.ConfigError) as err:
        load_config(override, env={"PALIMPSEST_CONFIG_DISABLED": "1"})
    assert err.value.details["key"] == key and err.value.exit_code == 5


@pytest.mark.parametrize("key, value", [("idempotency_hours", float("inf")), ("deadline_seconds", -1),
                                        ("deadline_seconds", float("nan")), ("max_staleness_seconds", True),
                                        ("mirror_budget_mb", float("-inf")), ("change_log_hours", -0.5)])
def test_a_runtime_number_that_is_negative_nan_or_infinite_is_a_config_error(key, value) -> None:  # type: ignore[no-untyped-def]
    """issue 46: `idempotency_hours = inf` crashed every command at open; a negative or NaN deadline was accepted."""
    from palimpsest_memory.runtime.config import load_config

    with pytest.raises(errors.ConfigError, match="finite number, 0 or more") as err:
        load_config({"runtime": {key: value}}, env={"PALIMPSEST_CONFIG_DISABLED": "1"})
    assert err.value.details["key"] == f"runtime.{key}"
    assert load_config({"runtime": {key: 0}}, env={"PALIMPSEST_CONFIG_DISABLED": "1"})["runtime"][key] == 0


def test_an_infinite_number_from_the_environment_is_refused_before_the_store_opens(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from palimpsest_memory.runtime import Runtime

    with pytest.raises(errors.ConfigError, match="idempotency_hours"):
        Runtime.open(tmp_path / "s.duckdb", env={"PALIMPSEST_CONFIG_DISABLED": "1",
                                                 "PALIMPSEST__runtime__idempotency_hours": "inf"})
    assert not (tmp_path / "s.duckdb").exists()


def test_a_wrong_typed_environment_section_and_deep_toml_are_config_errors(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from palimpsest_memory.runtime.config import load_config

    with pytest.raises(errors.ConfigError, match=r"\[runtime\] must be a table"):
        load_config(env={"PALIMPSEST_CONFIG_DISABLED": "1", "PALIMPSEST__runtime": "3"})
    deep = tmp_path / "deep.toml"
    deep.write_text("x = " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(errors.ConfigError, match="TOML"):
        load_config(env={"PALIMPSEST_CONFIG": str(deep)})


def test_pack_defaults_lie_beneath_every_other_layer_and_origins_say_which_won(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Precedence (ADR 0035): a pack's defaults.toml < the runtime's default.toml < user file < Runtime.open's config=
    < environment, key by key; origins() names the layer each value came from (what `pal config show` prints)."""
    from palimpsest_memory.runtime.config import config_layers, merge_layers, origins

    (tmp_path / "defaults.toml").write_text('limit = 1\nmode = "pack"\n[deep]\na = 1\nb = 2\n')
    pack = Pack("p", version="1.0", settings=Settings, defaults=tmp_path / "defaults.toml")
    user = tmp_path / "user.toml"
    user.write_text('[packs.p]\nmode = "user"\n[packs.p.deep]\nb = 3\n')
    env = {"PALIMPSEST_CONFIG": str(user), "PALIMPSEST__packs__p__deep__a": "9"}
    layers = config_layers({"runtime": {"default_namespace": "given"}}, env, packs=[pack])
    cfg = merge_layers(layers)
    assert cfg["packs"]["p"] == {"limit": 1, "mode": "user", "deep": {"a": 9, "b": 3}}
    found = origins(layers)
    assert found["packs.p.limit"] == "pack default (p)"
    assert found["packs.p.mode"].startswith("user file") and found["packs.p.deep.b"].startswith("user file")
    assert found["packs.p.deep.a"] == "env"
    assert found["runtime.default_namespace"] == "Runtime.open(config=)"
    assert found["runtime.database"] == "runtime default"


def test_env_overrides_a_built_in_packs_default() -> None:
    from palimpsest_memory.runtime import load_catalog

    _, cfg = load_catalog(env={"PALIMPSEST_CONFIG_DISABLED": "1", "PALIMPSEST__packs__memory__context__thread_top": "7"})
    assert cfg["packs"]["memory"]["context"]["thread_top"] == 7
    assert cfg["packs"]["memory"]["context"]["neighbour_alpha"] == 0.5  # the rest of the table: the pack's default


def test_pal_config_show_prints_each_value_with_its_source_and_hides_secrets(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    user = tmp_path / "user.toml"
    user.write_text('[packs.memory]\nrrf_k = 42.0\n[adapters]\ntoken = "s3cret"\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("PALIMPSEST")}
    env.update(PALIMPSEST_CONFIG=str(user), PALIMPSEST__packs__kg__max_batch="7", PALIMPSEST_PACKS="kg,memory,brain",
               PALIMPSEST_DB="postgresql://ann:pw@db.example/pal", PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    out = subprocess.run([sys.executable, "-m", "palimpsest_memory.runtime.adapters.cli", "--json", "config", "show"],
                         capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert out.returncode == 0, out.stderr
    rows = {r["key"]: (r["value"], r["source"]) for r in json.loads(out.stdout)}
    assert rows["packs.memory.rrf_k"] == (42.0, f"user file ({user})")
    assert rows["packs.kg.max_batch"] == (7, "env")
    assert rows["packs.memory.bm25_k1"] == (1.2, "pack default (memory)")
    assert rows["adapters.http_port"] == (8765, "runtime default")
    assert rows["adapters.token"] == ("(set)", f"user file ({user})")
    assert rows["runtime.database"] == ("postgresql://ann:***@db.example/pal", "env")
    assert "s3cret" not in out.stdout and "pw@" not in out.stdout
