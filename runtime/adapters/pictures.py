"""Pictures on the command line: verbs whose answer has a picture get an option that writes it to a file.

``pal kg timeline SUBJECT --svg FILE`` draws kg.timeline's answer (``web/timeline_svg.py``, the same picture as
the web view's timeline) instead of printing it. The picture is built from the verb's JSON, so it works the
same through ``--server``. Keyed by verb name: the runtime knows no pack.
"""
from __future__ import annotations

import inspect
import sys
from pathlib import Path
from typing import Annotated, Any, Callable, Optional

import typer

from palimpsest_memory.runtime import errors
from palimpsest_memory.runtime.adapters.params import make_command


def _timeline(data: dict[str, Any]) -> str:
    from palimpsest_memory.runtime.adapters.web.timeline_svg import render

    return render(data)


PICTURES: dict[str, Callable[[dict[str, Any]], str]] = {"kg.timeline": _timeline}


def picture_command(spec: Any, call: Callable[[str, dict[str, Any]], dict[str, Any]],
                    run: Callable[[str, dict[str, Any]], None]) -> Callable[..., None] | None:
    """The command of a verb with a picture (``--svg FILE`` added), or None: ``call`` returns the verb's JSON,
    ``run`` prints it as usual."""
    draw = PICTURES.get(spec.full_name)
    if draw is None:
        return None
    target: list[Optional[str]] = [None]

    def handle(params: dict[str, Any]) -> None:
        out = target[0]
        if out is None:
            run(spec.full_name, params)
            return
        svg = draw(call(spec.full_name, params))
        try:
            if out == "-":
                sys.stdout.write(svg + "\n")
            else:
                Path(out).write_text(svg + "\n", encoding="utf-8")
                print(f"wrote {out}", file=sys.stderr)
        except OSError as exc:
            raise errors.InvalidParams(f"cannot write --svg {out}: {exc}", verb=spec.full_name,
                                       details={"errors": [{"loc": ["svg"], "msg": str(exc)}]}) from None

    inner = make_command(spec.params_model, spec.full_name, handle)

    def command(svg_file: Optional[str] = None, **values: Any) -> None:
        target[0] = svg_file
        inner(**values)

    sig = inspect.signature(inner)
    svg_param = inspect.Parameter("svg_file", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=Annotated[
        Optional[str], typer.Option("--svg", help="Write the picture as SVG to this file ('-': stdout) instead of "
                                                  "printing the answer.", show_default=False)])
    command.__signature__ = sig.replace(parameters=[*sig.parameters.values(), svg_param])  # type: ignore[attr-defined]
    return command
