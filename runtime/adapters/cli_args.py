"""The ``pal`` command line's argument line, before typer parses it: where the command word is, and the global
options given after it moved to the front.

Global options anywhere (issue 41): ``--db``, ``--namespace``/``-n``, ``--actor``, ``--server``,
``--idempotency-key`` and ``--json`` may stand before or after the command words (``pal export F -n work`` is
``pal -n work export F``); :func:`hoist_root_options` moves them to the front before typer parses the line. Only
whole items are moved (``-n VALUE``, ``--namespace VALUE``, ``--namespace=VALUE``; ``-nVALUE`` only before the
command), the item after a value option is its value even if it starts with ``-``, the value of one of the
command's own options is never taken, and nothing after ``--`` is touched. The same option given twice with
different values is a usage error (exit 2) naming both, never a silent override. A command that has its own
option of the same name keeps it, with the same meaning as the global one: today that is ``--actor`` of
``pal mcp`` and of the verbs whose params have an ``actor`` field (the brain's): the one value is both who the
call is made for and the verb's ``actor``, so ``pal brain profile P --actor bob`` and ``pal --actor bob brain
profile P`` make the same call (:meth:`Session.own_actor`; ``PALIMPSEST_ACTOR`` is only a default the option
overrides). Verb params named ``namespace`` get no option of their own: the global ``--namespace`` sets them.
"""
from __future__ import annotations

from typing import Any

from palimpsest_memory.runtime import errors

# root options that take a value, by the name of root()'s parameter they set (how main() finds the command word
# and moves the options given after it without parsing everything)
ROOT_VALUE_OPTIONS = {"--db": "db", "--namespace": "namespace", "-n": "namespace", "--actor": "actor",
                      "--server": "server", "--idempotency-key": "idempotency_key"}


def command_word(args: list[str]) -> str | None:
    """The command named on the line (the first word that is not a root option or its value), if any."""
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg == "--":
            return None
        elif arg in ROOT_VALUE_OPTIONS:
            skip = True
        elif not arg.startswith("-"):
            return arg
    return None


def _own_options(command: Any) -> dict[str, int]:
    """A command's option strings and how many items each takes after it (0 for a flag)."""
    own: dict[str, int] = {}
    for param in command.params:  # typer's (vendored) click objects, by duck typing
        if param.param_type_name == "option":
            takes = 0 if param.is_flag or param.count else max(param.nargs, 1)
            for opt in (*param.opts, *param.secondary_opts):
                own[opt] = takes
    return own


def hoist_root_options(root: Any, args: list[str]) -> list[str]:
    """``args`` with the global value options given after the command words moved before them (the module
    docstring has the rules); a usage error when one of them is given twice with different values."""
    out: list[str] = []
    hoisted: list[str] = []
    given: dict[str, tuple[str, str]] = {}  # root() parameter -> (the option as written, its value)

    def note(opt: str, value: str) -> None:
        name = ROOT_VALUE_OPTIONS[opt]
        if name in given and given[name][1] != value:
            first, was = given[name]
            long = "--" + name.replace("_", "-")
            raise errors.InvalidParams(f"{long} is given twice with different values ({first} {was!r}, {opt} "
                                       f"{value!r}); give it once",
                                       details={"errors": [{"loc": [long], "msg": "given twice"}]})
        given.setdefault(name, (opt, value))

    command: Any = None  # None: still before the command word
    own: dict[str, int] = {}
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            out += args[i:]
            break
        opt, eq, inline = arg.partition("=")
        if command is None:  # before the command: typer parses these, only their values are noted
            if arg in ROOT_VALUE_OPTIONS:
                if i + 1 < len(args):
                    note(arg, args[i + 1])
                out += args[i:i + 2]
                i += 2
                continue
            if eq and opt.startswith("--") and opt in ROOT_VALUE_OPTIONS:
                note(opt, inline)
            elif arg.startswith("-n") and len(arg) > 2:  # -nwork
                note("-n", arg[2:])
            elif not arg.startswith("-"):  # the command word
                command = getattr(root, "commands", {}).get(arg)
                if command is None:  # unknown: typer says so
                    return hoisted + out + args[i:]
                own = _own_options(command)
            out.append(arg)
            i += 1
            continue
        if arg in own or (eq and opt.startswith("--") and opt in own):  # the command's own option keeps its value
            width = 1 if eq else 1 + own[arg]
            out += args[i:i + width]
            i += width
        elif arg in ROOT_VALUE_OPTIONS:
            if i + 1 >= len(args):
                raise errors.InvalidParams(f"option {arg} needs a value (a text argument that is {arg} "
                                           "goes after --)", details={"errors": [{"loc": [arg], "msg": "no value"}]})
            note(arg, args[i + 1])
            hoisted += args[i:i + 2]
            i += 2
        elif eq and opt.startswith("--") and opt in ROOT_VALUE_OPTIONS:
            note(opt, inline)
            hoisted.append(arg)
            i += 1
        else:
            sub = getattr(command, "commands", {}).get(arg) if not arg.startswith("-") else None
            if sub is not None:  # a group's subcommand (pal memory recall): its options now
                command, own = sub, _own_options(sub)
            out.append(arg)
            i += 1
    return hoisted + out


def split_json_flag(args: list[str]) -> tuple[list[str], bool]:
    """Take ``--json`` out wherever it stands before ``--`` (it always means "print JSON")."""
    if "--json" not in args:
        return args, False
    end = args.index("--") if "--" in args else len(args)
    head = args[:end]
    return [a for a in head if a != "--json"] + args[end:], "--json" in head
