"""Configuration: each pack's ``defaults.toml``, the runtime's ``config/default.toml``, a user file, environment.

Precedence (later wins, tables merge key by key): a pack's defaults (``Pack(defaults=)``, the file beside its
settings model, read as its ``[packs.<name>]`` section: a pack sets its own keys only) < the runtime's default.toml
(the runtime's own keys; ADR 0035) < user file (``PALIMPSEST_CONFIG`` or ``~/.config/palimpsest/config.toml``)
< ``config=`` given to ``Runtime.open`` < environment. Each of these is a :data:`Layer`; :func:`origins` says which
layer set each value (``pal config show``). Environment variables:
``PALIMPSEST_DB`` (database path), ``PALIMPSEST_PACKS`` / ``PALIMPSEST_DISABLE_PACKS`` (comma lists), and
``PALIMPSEST__<section>__<key>=<toml value>`` for any key (``PALIMPSEST__packs__memory__max_tags=10``).
``PALIMPSEST_CONFIG_DISABLED`` skips the user file (tests set it so a developer's own file cannot leak in).
"""
from __future__ import annotations

import copy
import math
import os
import tomllib
from pathlib import Path
from typing import Any, Iterable, Mapping

from pydantic import BaseModel, ValidationError

from palimpsest_memory.runtime.errors import ConfigError

ENV_PREFIX = "PALIMPSEST__"


def default_config_path() -> Path:
    """Where the shipped defaults live: beside the package in a wheel, in ``config/`` in a checkout."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "default.toml", here.parent / "config" / "default.toml"):
        if candidate.is_file():
            return candidate
    raise ConfigError("config/default.toml is missing from this installation")


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    except RecursionError:
        raise ConfigError(f"{path}: invalid TOML: nested too deeply") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from None


def merge(base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """Deep-merge ``over`` into a copy of ``base``; tables merge, everything else replaces."""
    out = copy.deepcopy(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _parse_env_value(raw: str) -> Any:
    try:
        return tomllib.loads(f"v = {raw}")["v"]
    except (tomllib.TOMLDecodeError, RecursionError):
        return raw  # a bare word is a string


def _env_overrides(env: Mapping[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, raw in env.items():
        if not name.startswith(ENV_PREFIX):
            continue
        path = [p.lower() for p in name[len(ENV_PREFIX):].split("__") if p]
        if not path:
            continue
        node = out
        for part in path[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ConfigError(f"config: {name} sets a key inside {part!r}, which another variable set to "
                                  f"{node!r}", details={"key": ".".join(path)})
        node[path[-1]] = _parse_env_value(raw)
    named: dict[str, Any] = {}
    if "PALIMPSEST_DB" in env:
        named["database"] = env["PALIMPSEST_DB"]
    for var, key in (("PALIMPSEST_PACKS", "packs"), ("PALIMPSEST_DISABLE_PACKS", "disabled")):
        if var in env:
            named[key] = [p.strip() for p in env[var].split(",") if p.strip()]
    runtime = out.setdefault("runtime", {}) if named else None
    if isinstance(runtime, dict):  # (PALIMPSEST__runtime=3 is not a table: check_shape reports it once merged)
        runtime.update(named)
    return out


# One source of settings: a name saying where its values come from (``pal config show``), and its tables.
Layer = tuple[str, dict[str, Any]]
RUNTIME_DEFAULT = "runtime default"
USER_FILE = "user file"
GIVEN = "Runtime.open(config=)"
ENV = "env"


def pack_default_layers(packs: Iterable[Any]) -> list[Layer]:
    """The defaults of each pack that ships a ``defaults.toml`` (``Pack.defaults``), under ``[packs.<name>]``."""
    return [(f"pack default ({pack.name})", {"packs": {pack.name: _read_toml(pack.defaults)}})
            for pack in packs if getattr(pack, "defaults", None) is not None]


def config_layers(overrides: Mapping[str, Any] | None = None, env: Mapping[str, str] | None = None,
                  packs: Iterable[Any] = ()) -> list[Layer]:
    """Every source of settings, lowest precedence first."""
    env = os.environ if env is None else env
    layers = [*pack_default_layers(packs), (RUNTIME_DEFAULT, _read_toml(default_config_path()))]
    user = Path(env.get("PALIMPSEST_CONFIG", "~/.config/palimpsest/config.toml")).expanduser()
    if "PALIMPSEST_CONFIG" in env and not user.is_file():
        raise ConfigError(f"PALIMPSEST_CONFIG points to {user}, which does not exist")
    if user.is_file() and "PALIMPSEST_CONFIG_DISABLED" not in env:
        layers.append((f"{USER_FILE} ({user})", _read_toml(user)))
    if overrides:
        layers.append((GIVEN, dict(overrides)))
    layers.append((ENV, _env_overrides(env)))
    return layers


def merge_layers(layers: Iterable[Layer]) -> dict[str, Any]:
    """The layers merged (later wins) and checked: the effective configuration."""
    cfg: dict[str, Any] = {}
    for _, tables in layers:
        cfg = merge(cfg, tables)
    check_shape(cfg)
    return cfg


def origins(layers: Iterable[Layer]) -> dict[str, str]:
    """Each value's dotted key (``packs.memory.rrf_k``) and the name of the layer whose value is in effect."""
    found: dict[str, str] = {}

    def walk(node: Mapping[str, Any], prefix: str, source: str) -> None:
        for key, value in node.items():
            dotted = f"{prefix}{key}"
            if isinstance(value, Mapping):
                found.pop(dotted, None)
                walk(value, dotted + ".", source)
            else:
                found[dotted] = source
                # a value replacing a whole table (or a table a value) drops the keys it replaced
                for old in [k for k in found if k.startswith(dotted + ".")]:
                    del found[old]

    for source, tables in layers:
        walk(tables, "", source)
    return found


def load_config(overrides: Mapping[str, Any] | None = None, env: Mapping[str, str] | None = None,
                packs: Iterable[Any] = ()) -> dict[str, Any]:
    """The effective configuration as a plain dict (``packs``: the loaded packs, whose defaults lie beneath)."""
    return merge_layers(config_layers(overrides, env, packs))


# The sections the runtime reads itself, and the type each of their keys must have (packs validate their own).
RUNTIME_KEYS: dict[str, type | tuple[type, ...]] = {"database": str, "default_namespace": str, "packs": list,
                                                    "disabled": list, "checkpoint_threshold": str,
                                                    "idempotency_hours": (int, float), "deadline_seconds": (int, float),
                                                    "max_staleness_seconds": (int, float),
                                                    "change_log_hours": (int, float),
                                                    "mirror_budget_mb": (int, float)}


def check_shape(cfg: Mapping[str, Any]) -> None:
    """Refuse a configuration whose sections are not tables, or whose runtime keys have the wrong type, with a
    ConfigError naming the key (instead of a crash deep inside whatever reads it first)."""
    for section in ("runtime", "packs", "adapters"):
        if section in cfg and not isinstance(cfg[section], Mapping):
            raise ConfigError(f"config: [{section}] must be a table, got {type(cfg[section]).__name__} "
                              f"{cfg[section]!r}", details={"key": section})
    for name, value in cfg.get("packs", {}).items():
        if not isinstance(value, Mapping):
            raise ConfigError(f"config: [packs.{name}] must be a table, got {type(value).__name__} {value!r}",
                              details={"key": f"packs.{name}"})
    for key, kind in RUNTIME_KEYS.items():
        value = cfg.get("runtime", {}).get(key)
        if value is None:
            continue
        if not isinstance(value, kind) or (kind is list and not all(isinstance(v, str) for v in value)):
            want = ("a list of pack names" if kind is list else "a number" if isinstance(kind, tuple)
                    else f"a {kind.__name__}")
            raise ConfigError(f"config: runtime.{key} must be {want}, got {value!r}",
                              details={"key": f"runtime.{key}"})
        # a number: hours, seconds, megabytes; none of them negative, NaN or infinite (inf hours crashed every
        # command at open, a negative or NaN deadline was taken as given; issue 46)
        if isinstance(kind, tuple) and (isinstance(value, bool) or not math.isfinite(value) or value < 0):
            raise ConfigError(f"config: runtime.{key} must be a finite number, 0 or more, got {value!r}",
                              details={"key": f"runtime.{key}"})


def pack_settings(pack_name: str, model: type[BaseModel] | None, cfg: Mapping[str, Any]) -> BaseModel | None:
    """Validate ``[packs.<name>]`` with the pack's settings model; errors name the offending key."""
    section = cfg.get("packs", {}).get(pack_name, {})
    if model is None:
        if section:
            raise ConfigError(f"[packs.{pack_name}] is set but pack {pack_name!r} declares no settings")
        return None
    try:
        return model.model_validate(section)
    except ValidationError as exc:
        problems = "; ".join(
            f"packs.{pack_name}.{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()
        )
        raise ConfigError(f"invalid settings for pack {pack_name!r}: {problems}") from None
