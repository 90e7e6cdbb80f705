"""``pal info``: which database is in use and what it holds.

The runtime part (version, database path, backend, size on disk, packs and their schema versions) comes from the
open runtime; what a pack holds comes from its own ``<pack>.stats`` verb when it has one (a convention, not a
requirement: ``memory.stats`` names the embedder and counts notes per namespace, ``kg.stats`` counts entities
and facts, each for one namespace); the namespaces in use come from the store's owner view
(:func:`runtime.info.store_namespaces`). ``pal --server URL info`` asks the server the same questions for the
call's namespace (a server lists no namespaces: no verb sees across them).
"""
from __future__ import annotations

import os
from typing import Any

from runtime import __version__


def _size(path: str) -> int | None:
    if path == ":memory:" or not os.path.exists(path):
        return None
    return sum(os.path.getsize(p) for p in (path, path + ".wal") if os.path.exists(p))


def gather(session: Any) -> dict[str, Any]:
    data: dict[str, Any] = {"version": __version__}
    if session.server:
        data.update(database=f"held by the server at {session.server}", backend=None, size_bytes=None)
        verbs = [v["verb"] for v in session.verbs()]
        data["packs"] = [{"pack": p, "version": None, "schema": None}
                         for p in dict.fromkeys(v.split(".", 1)[0] for v in verbs)]
    else:
        rt = session.runtime()
        versions = rt.schema_versions()
        data.update(database=os.path.abspath(rt.path) if rt.path != ":memory:" else rt.path,
                    backend=str(getattr(rt, "backend", None) or "duckdb"), size_bytes=_size(rt.path))
        data["packs"] = [{"pack": p.name, "version": p.version, "schema": versions.get(p.name)}
                         for p in rt.catalog.packs.values()]
        verbs = [v.full_name for v in rt.verbs()]
    stat_packs = [p["pack"] for p in data["packs"] if f"{p['pack']}.stats" in verbs]
    if session.server:  # a server answers for the call's namespace only: verbs never see another one
        names = [session.namespace or "default"]
    else:
        from runtime.info import store_namespaces

        names = store_namespaces(rt)
    namespaces, embedder = [], None
    for ns in names:
        row: dict[str, Any] = {"namespace": ns}
        for pack in stat_packs:
            st = session.call(f"{pack}.stats", {"namespace": ns})
            for counts in st.get("namespaces", []) if isinstance(st, dict) else []:
                row.update({k: v for k, v in counts.items() if k != "namespace"})
            embedder = embedder or (st.get("embedder") if isinstance(st, dict) else None)
        namespaces.append(row)
    if embedder is None and "memory" in stat_packs:
        embedder = session.call("memory.stats", {}).get("embedder")
    data["namespaces"], data["embedder"] = namespaces, embedder
    return data


def _human(n: int | None) -> str:
    if n is None:
        return "-"
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return str(n)


def print_info(data: dict[str, Any]) -> None:
    from runtime.adapters.render import Out, print_table

    out = Out()
    out.pair("palimpsest", str(data["version"]))
    out.pair("database", str(data["database"]))
    if data.get("backend"):
        out.pair("backend", str(data["backend"]))
    if data.get("size_bytes") is not None:
        out.pair("size", _human(data["size_bytes"]))
    out.pair("packs", ", ".join(f"{p['pack']} {p['version']}" if p.get("version") else p["pack"]
                                for p in data["packs"]) or "(none)")
    out.pair("embedder", str(data.get("embedder") or "-"))
    if data["namespaces"]:
        print_table(data["namespaces"], title="namespaces", out=out)
    else:
        out.pair("namespaces", "(none yet)")
