"""``pal info``: which database is in use and what it holds.

The runtime part (version, the store's location without secrets, backend, size, engine, packs and their schema
versions) comes from the open runtime's store (ADR 0031); what a pack holds comes from its own ``<pack>.stats`` verb
when it has one (a convention, not a requirement: a flat answer for the call's namespace whose whole numbers are counts
— ``memory.stats`` also names the embedder); the namespaces are the union of every ``<pack>.namespaces`` verb
(``memory.namespaces``, ``kg.namespaces``), the only verbs that list across namespaces (names and sizes only; ADR 0019).
The same questions go to the server under ``--server``.
"""
from __future__ import annotations

from typing import Any

from palimpsest_memory.runtime import __version__


def gather(session: Any) -> dict[str, Any]:
    data: dict[str, Any] = {"version": __version__}
    if session.server:
        data.update(database=f"held by the server at {session.server}", backend=None, size_bytes=None, server=None)
        verbs = [v["verb"] for v in session.verbs()]
        data["packs"] = [{"pack": p, "version": None, "schema": None}
                         for p in dict.fromkeys(v.split(".", 1)[0] for v in verbs)]
    else:
        rt = session.runtime()
        versions = rt.schema_versions()
        store = rt.describe_store()
        data.update(database=store["location"], backend=store["backend"], size_bytes=store["size_bytes"],
                    server=store["server"])
        data["packs"] = [{"pack": p.name, "version": p.version, "schema": versions.get(p.name)}
                         for p in rt.catalog.packs.values()]
        verbs = [v.full_name for v in rt.verbs()]
    stat_packs = [p["pack"] for p in data["packs"] if f"{p['pack']}.stats" in verbs]
    # every pack that lists its namespaces (`<pack>.namespaces`: memory's notes, kg's graph) adds to the list, so a
    # namespace that holds facts but no notes is shown too
    lister_packs = [p["pack"] for p in data["packs"] if f"{p['pack']}.namespaces" in verbs]
    names = sorted({n["name"] for pack in lister_packs
                    for n in session.call(f"{pack}.namespaces", {}).get("namespaces", [])})
    if not lister_packs:
        names = [session.namespace or "default"]
    namespaces, embedder = [], None
    for ns in names:
        row: dict[str, Any] = {"namespace": ns}
        for pack in stat_packs:
            st = session.call(f"{pack}.stats", {"namespace": ns})
            if not isinstance(st, dict):
                continue
            row.update({f"{pack} {k}" if k in row else k: v for k, v in st.items()
                        if isinstance(v, int) and not isinstance(v, bool)})
            embedder = embedder or st.get("embedder")
        namespaces.append(row)
    if embedder is None and "memory.stats" in verbs:
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
    from palimpsest_memory.runtime.adapters.render import Out, print_table

    out = Out()
    out.pair("palimpsest", str(data["version"]))
    out.pair("database", str(data["database"]))
    if data.get("backend"):
        out.pair("backend", str(data["backend"]))
    if data.get("size_bytes") is not None:
        out.pair("size", _human(data["size_bytes"]))
    if data.get("server"):
        out.pair("engine", str(data["server"]))
    out.pair("packs", ", ".join(f"{p['pack']} {p['version']}" if p.get("version") else p["pack"]
                                for p in data["packs"]) or "(none)")
    out.pair("embedder", str(data.get("embedder") or "-"))
    if data["namespaces"]:
        print_table(data["namespaces"], title="namespaces", out=out)
    else:
        out.pair("namespaces", "(none yet)")
