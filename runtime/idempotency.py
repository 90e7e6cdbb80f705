"""Idempotency keys for any writing call: a retry of a call whose answer was lost runs it once (issue 16.3).

A caller (the ``--server`` client does it for every call) passes ``idempotency_key``. For a writing verb the runtime
looks the key up before running it: a key already used for the same verb, namespace, actor and params returns the
stored result without running anything; a key used for another call is a ``Conflict``. Otherwise the call runs
and the key and its result are written in the call's own transaction, so they commit (or roll back) with it: there
is no moment where the write is committed and the key is not. Keys are kept ``runtime.idempotency_hours``
(pruned when a store opens). Read-only calls ignore keys: running them twice changes nothing.
"""
from __future__ import annotations

import hashlib
import json
import re
from datetime import datetime, timedelta
from typing import Any

from pydantic import BaseModel

from palimpsest_memory.runtime.errors import Conflict, InvalidParams

TABLE = "_palimpsest.idempotency"
KEY_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")
DDL = f"""CREATE TABLE IF NOT EXISTS {TABLE} (
    key VARCHAR PRIMARY KEY, verb VARCHAR NOT NULL, call_hash VARCHAR NOT NULL, result VARCHAR NOT NULL,
    created_at TIMESTAMP NOT NULL)"""


def check_key(key: str | None, verb: str) -> str | None:
    if key is None:
        return None
    if not isinstance(key, str) or not KEY_RE.match(key):
        raise InvalidParams(f"idempotency key {key!r} must be 1-128 characters of letters, digits and _ . : -, "
                            "starting with a letter or digit", verb=verb,
                            details={"errors": [{"loc": ["idempotency_key"], "msg": "invalid key"}]})
    return key


def call_hash(verb: str, namespace: str, actor: str | None, params: BaseModel) -> str:
    body = json.dumps([verb, namespace, actor, params.model_dump(mode="json")], sort_keys=True, default=str)
    return hashlib.sha256(body.encode()).hexdigest()


def ensure_table(con: Any) -> None:
    """Create the table when it is missing (only then: a role that may write rows but not create tables opens a
    store its owner made; ADR 0031)."""
    schema, name = TABLE.split(".")
    if not con.execute("SELECT count(*) FROM information_schema.tables WHERE table_schema = ? AND table_name = ?",
                       [schema, name]).fetchone()[0]:
        con.execute(DDL)


def prune(con: Any, now: datetime, hours: float) -> None:
    con.execute(f"DELETE FROM {TABLE} WHERE created_at < ?", [now - timedelta(hours=hours)])


def forget_results(con: Any) -> None:
    """Drop every stored result: a result can carry text a forget has just erased (a remembered note's content),
    and a forget must leave nothing of it behind (ADR 0018). The hash of a call keeps no text, but the whole row
    goes with its result. The cost: a retry of a call made before the forget runs again instead of replaying."""
    con.execute(f"DELETE FROM {TABLE}")


def replay(con: Any, key: str, verb: str, digest: str) -> str | None:
    """The stored result JSON of this key's earlier run of the same call, or None when the key is new."""
    row = con.execute(f"SELECT verb, call_hash, result FROM {TABLE} WHERE key = ?", [key]).fetchone()
    if row is None:
        return None
    if row[0] != verb or row[1] != digest:
        raise Conflict(f"idempotency key {key!r} was already used for another call ({row[0]}); use a new key",
                       verb=verb, details={"idempotency_key": key, "used_by": row[0]})
    return str(row[2])


def remember(con: Any, key: str, verb: str, digest: str, result: Any, now: datetime) -> None:
    """Store the key with the call's result, in the call's transaction (the caller has begun it)."""
    con.execute(f"INSERT INTO {TABLE} VALUES (?, ?, ?, ?, ?)",
                [key, verb, digest, result.model_dump_json(), now])
