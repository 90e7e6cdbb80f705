"""Test-only launcher: open a runtime over chosen test packs and serve it (stdio MCP, HTTP, or MCP over HTTP).

    python tests/adapters/launch.py DB MODE [--fakes] [--discover]

MODE is ``stdio`` (MCP), ``http`` (``pal serve``'s app) or ``mcp-http``; HTTP modes bind 127.0.0.1 on a free port
and publish the URL in ``DB.server.json``, like the real commands. Always serves the example pack.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parents[1]), str(HERE.parent / "fixtures" / "example_pack"), str(HERE)]

import palimpsest_example  # noqa: E402

from palimpsest_memory.runtime import Runtime  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("db")
    parser.add_argument("mode", choices=["stdio", "http", "mcp-http"])
    parser.add_argument("--fakes", action="store_true", help="also serve the fake memory/kg/zeta packs")
    parser.add_argument("--discover", action="store_true", help="also serve the installed packs")
    args = parser.parse_args()
    packs: list = [palimpsest_example]
    if args.fakes:
        import fake_packs

        packs += [fake_packs.memory, fake_packs.kg, fake_packs.zeta]
    with Runtime.open(args.db, packs=packs, discover_packs=args.discover) as rt:
        if args.mode == "stdio":
            from palimpsest_memory.runtime.adapters.mcp import serve_stdio

            serve_stdio(rt)
        elif args.mode == "http":
            from palimpsest_memory.runtime.adapters.http import serve

            serve(rt, port=0)
        else:
            from palimpsest_memory.runtime.adapters.mcp import serve_http

            serve_http(rt, port=0)


if __name__ == "__main__":
    main()
