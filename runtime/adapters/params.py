"""Turn a verb's pydantic params model into a typer command signature, field by field.

Required scalars become positional arguments (in field order), and so do the items of the first required list of
scalars (``pal memory get 12 15``; its ``--ids`` option stays, and both add up); other scalars typed options; enums and
literals choices; booleans ``--x/--no-x`` flags; lists of scalars repeatable options that also split on commas
(``--tags a,b`` and ``--tags a --tags b`` are the same two tags); dates text that pydantic parses; anything nested
(objects, lists of objects) JSON text. Every option defaults to "not given", so the params model's own defaults
apply. A text value given as ``-`` is read from stdin (``echo … | pal memory remember -``).
"""
from __future__ import annotations

import datetime as dt
import enum
import inspect
import json
import types
import typing
from typing import Annotated, Any, Callable, Optional

import typer
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from palimpsest_memory.runtime import errors

SCALARS = (str, int, float)
TEXT_PARSED = (dt.datetime, dt.date)
SKIPPED_FIELDS = {"namespace"}  # set for every command by the global --namespace option
POSITIONAL = "__positional"  # the variadic argument that fills a required list: <field>__positional


def _unwrap(tp: Any) -> Any:
    if typing.get_origin(tp) is Annotated:
        return _unwrap(typing.get_args(tp)[0])
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return _unwrap(args[0])
    return tp


def _choice_enum(name: str, tp: Any) -> type[enum.Enum] | None:
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return enum.Enum(name, {str(m.value): str(m.value) for m in tp}, type=str)  # type: ignore[return-value]
    if typing.get_origin(tp) is typing.Literal:
        return enum.Enum(name, {str(v): str(v) for v in typing.get_args(tp)}, type=str)  # type: ignore[return-value]
    return None


def _cli_type(name: str, tp: Any) -> tuple[Any, str]:
    """(annotation typer understands, how to convert the value back: plain | enum | json | list)."""
    choice = _choice_enum(name, tp)
    if choice is not None:
        return choice, "enum"
    if tp in SCALARS or tp is bool or tp in TEXT_PARSED:
        return (str if tp in TEXT_PARSED else tp), "plain"
    if typing.get_origin(tp) in (list, tuple, set) and typing.get_args(tp):
        inner = _unwrap(typing.get_args(tp)[0])
        inner_choice = _choice_enum(name, inner)
        if inner_choice is not None:
            return list[inner_choice], "enum_list"  # type: ignore[valid-type]
        if inner in SCALARS:  # typed as text so "1,2" splits before pydantic converts each item
            return list[str], "list"
    return str, "json"


def command_signature(model: type[BaseModel]) -> tuple[inspect.Signature, dict[str, str]]:
    params: list[inspect.Parameter] = []
    kinds: dict[str, str] = {}
    variadic = False  # click takes one variadic argument per command
    for name, field in model.model_fields.items():
        if name in SKIPPED_FIELDS:
            continue
        params.append(_parameter(name, field, kinds))
        if kinds[name] == "list" and field.is_required() and not variadic:
            variadic = True
            kinds[name + POSITIONAL] = "list"
            params.append(inspect.Parameter(name + POSITIONAL, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None,
                                            annotation=Annotated[Optional[list[str]], typer.Argument(
                                                metavar=name.upper(), show_default=False,
                                                help=f"{field.description or 'The ' + name}; "
                                                     f"or --{name.replace('_', '-')}")]))
    # typer wants arguments (no default, then the variadic one) before options
    params.sort(key=lambda p: (p.kind is inspect.Parameter.KEYWORD_ONLY, p.default is not inspect.Parameter.empty))
    return inspect.Signature(params), kinds


def _parameter(name: str, field: FieldInfo, kinds: dict[str, str]) -> inspect.Parameter:
    tp = _unwrap(field.annotation)
    cli_tp, kind = _cli_type(name, tp)
    kinds[name] = kind
    help_ = (field.description or "") + (" (JSON)" if kind == "json" else "")
    if kind == "list":
        help_ += " (repeat the option or separate values with commas)"
    elif tp is str:
        help_ += " ('-' reads it from stdin)" if field.is_required() else ""
    flag = "--" + name.replace("_", "-")
    if field.is_required() and kind in ("plain", "enum") and tp is not bool:
        return inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                 annotation=Annotated[cli_tp, typer.Argument(help=help_, show_default=False)])
    if tp is bool:
        decl = typer.Option(f"{flag}/--no-{name.replace('_', '-')}", help=help_, show_default=False)
    else:
        decl = typer.Option(flag, help=help_, show_default=False)
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None,
                             annotation=Annotated[Optional[cli_tp], decl])


def collect(model: type[BaseModel], kinds: dict[str, str], values: dict[str, Any], verb: str) -> dict[str, Any]:
    """Build the params dict from what the user gave (unset options stay unset, so model defaults apply)."""
    out: dict[str, Any] = {}
    for key, value in values.items():
        if value is None or (isinstance(value, (list, tuple)) and not value and kinds.get(key) != "plain"):
            continue
        kind = kinds.get(key, "plain")
        if kind == "enum":
            value = value.value
        elif kind == "enum_list":
            value = [v.value for v in value]
        elif kind == "list":
            value = [part.strip() for v in value for part in str(v).split(",") if part.strip()]
            if key.endswith(POSITIONAL):  # the items given as arguments come first, then --<field>'s
                key = key[:-len(POSITIONAL)]
                value = value + out.get(key, [])
            elif key in out:
                value = out[key] + value
        elif value == "-" and isinstance(value, str):
            value = read_stdin(key, verb)
        elif kind == "json":
            try:
                value = json.loads(value)
            except json.JSONDecodeError as exc:
                raise errors.InvalidParams(f"--{key.replace('_', '-')} is not valid JSON: {exc}", verb=verb,
                                           details={"errors": [{"loc": [key], "msg": str(exc)}]}) from None
        out[key] = value
    return out


_stdin_used: list[str] = []


def read_stdin(key: str, verb: str) -> str:
    """The text of ``-``: all of stdin, once per command (a second ``-`` cannot be told apart)."""
    import sys

    if _stdin_used:
        raise errors.InvalidParams(f"only one value can be read from stdin ('-'); {_stdin_used[0]} already was",
                                   verb=verb, details={"errors": [{"loc": [key], "msg": "stdin already read"}]})
    _stdin_used.append(key)
    if sys.stdin is None or sys.stdin.isatty():
        raise errors.InvalidParams(f"{key} is '-' (read from stdin) but stdin is a terminal, not a pipe or file",
                                   verb=verb, details={"errors": [{"loc": [key], "msg": "nothing piped in"}]})
    text = sys.stdin.read()
    return text[:-1] if text.endswith("\n") else text


def make_command(model: type[BaseModel], verb: str, run: Callable[[dict[str, Any]], None]) -> Callable[..., None]:
    """A function typer can register: its signature mirrors the params model."""
    signature, kinds = command_signature(model)

    def command(**values: Any) -> None:
        run(collect(model, kinds, values, verb))

    command.__signature__ = signature  # type: ignore[attr-defined]
    return command
