"""What an open store holds, seen by its operator rather than by a verb: the namespaces in use (``pal info``).

Verbs never see another namespace (tests/reliability/test_isolation.py); listing the namespaces is the store
owner's view, so it lives here, beside the runtime, and is not served over HTTP or MCP.
"""
from __future__ import annotations

from typing import Any

SYSTEM_SCHEMAS = ("information_schema", "pg_catalog", "main", "_palimpsest")


def store_namespaces(rt: Any) -> list[str]:
    """Every namespace some pack table of the open runtime has a row for, sorted."""
    con = rt._require_open()
    with rt._lock:
        tables = con.execute(
            "SELECT DISTINCT table_schema, table_name FROM information_schema.columns WHERE column_name = 'namespace' "
            f"AND table_schema NOT IN ({', '.join('?' for _ in SYSTEM_SCHEMAS)}) ORDER BY 1, 2",
            list(SYSTEM_SCHEMAS)).fetchall()
        if not tables:
            return []
        union = " UNION ".join(f'SELECT DISTINCT namespace FROM "{s}"."{t}"' for s, t in tables)
        return sorted(r[0] for r in con.execute(union).fetchall() if r[0] is not None)
