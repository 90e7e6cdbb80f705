"""The change log of a shared store (ADR 0016): every committed change, numbered in commit order, as JSON.

The store keeps the log (ADR 0031): a process that commits on PostgreSQL writes its
:class:`~palimpsest_memory.runtime.mirror.Change` records to ``_palimpsest.changes`` in the same transaction
(runtime/storage/pg_store.py); other processes read the rows after the last one they applied. This module is the
part every store shares: how change data travels.

Change data is whatever a pack recorded; :func:`encode`/:func:`decode` carry it as tagged JSON: tuples, dicts
with any keys, sets, bytes, datetimes, numpy arrays and scalars, and the dataclasses of loaded packs (only classes
defined in a loaded pack's package or in the runtime are rebuilt; anything else is refused).
"""
from __future__ import annotations

import base64
import dataclasses
import importlib
import json
from datetime import date, datetime, timedelta
from typing import Any, Iterable

import numpy as np

from palimpsest_memory.runtime.errors import StorageError

RELOAD = "_reload"  # a change kind of the runtime's own: the pack's mirrors must load again


class CodecError(StorageError):
    """Change data that cannot be carried through the log (a pack bug: its changes must be plain data)."""


def _enc(v: Any) -> Any:
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    if isinstance(v, float):
        return v if v == v and v not in (float("inf"), float("-inf")) else {"$f": repr(v)}
    if isinstance(v, np.ndarray):
        if v.dtype == object:
            return {"$na": [_enc(x) for x in v.tolist()]}
        return {"$nd": [v.dtype.str, list(v.shape), base64.b64encode(np.ascontiguousarray(v).tobytes()).decode()]}
    if isinstance(v, np.generic):
        return {"$ns": [v.dtype.str, _enc(v.item())]}
    if isinstance(v, list):
        return [_enc(x) for x in v]
    if isinstance(v, tuple) and hasattr(v, "_fields"):
        return {"$nt": _name(type(v)), "v": [_enc(x) for x in v]}
    if isinstance(v, tuple):
        return {"$t": [_enc(x) for x in v]}
    if isinstance(v, (set, frozenset)):
        return {"$s": [_enc(x) for x in v], "frozen": isinstance(v, frozenset)}
    if isinstance(v, dict):
        return {"$d": [[_enc(k), _enc(x)] for k, x in v.items()]}
    if isinstance(v, (bytes, bytearray, memoryview)):
        return {"$b": base64.b64encode(bytes(v)).decode()}
    if isinstance(v, datetime):
        return {"$dt": v.isoformat()}
    if isinstance(v, date):
        return {"$da": v.isoformat()}
    if isinstance(v, timedelta):
        return {"$td": v.total_seconds()}
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return {"$dc": _name(type(v)), "f": {f.name: _enc(getattr(v, f.name)) for f in dataclasses.fields(v)}}
    raise CodecError(f"change data of type {type(v).__module__}.{type(v).__qualname__} cannot be logged: record "
                     "plain data, dataclasses, tuples, dicts, numpy arrays or datetimes")


def _name(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


class Codec:
    """Tagged JSON for change data; rebuilds only classes of the allowed module roots."""

    def __init__(self, roots: Iterable[str]) -> None:
        self.roots = tuple(sorted(set(roots) | {__name__.rpartition(".")[0]}))
        self._classes: dict[str, type] = {}  # name -> class: a batch of notes names one class thousands of times
        self._late: dict[type, frozenset[str]] = {}  # dataclass -> its fields that __init__ does not take

    def encode(self, data: Any) -> str:
        return json.dumps(_enc(data), separators=(",", ":"))

    def decode(self, text: str) -> Any:
        # json's C decoder builds every list and string and hands each object to the hook, innermost first, so only
        # tagged values cost a Python step: a walk over the whole tree cost a follower ~50 µs a note (issue 41)
        return json.loads(text, object_hook=self._hook)

    def _cls(self, name: str) -> type:
        found = self._classes.get(name)
        if found is None:
            found = self._classes[name] = self._find(name)
        return found

    def _find(self, name: str) -> type:
        module, _, qual = name.partition(":")
        if not any(module == r or module.startswith(r + ".") for r in self.roots):
            raise CodecError(f"change data names class {name}, which is not in a loaded pack")
        obj: Any = importlib.import_module(module)
        for part in qual.split("."):
            obj = getattr(obj, part)
        return obj

    def _hook(self, v: dict[str, Any]) -> Any:
        """One JSON object, its members already decoded: a tagged value (first key ``$…``) rebuilt, or a
        dataclass's field mapping (field names never begin with ``$``) kept as it is for its ``$dc`` to take."""
        tag = next(iter(v), "")
        if tag[:1] != "$":
            return v
        body = v[tag]
        if tag == "$t":
            return tuple(body)
        if tag == "$d":
            return {self._key(k): x for k, x in body}
        if tag == "$s":
            items = [self._key(x) for x in body]
            return frozenset(items) if v.get("frozen") else set(items)
        if tag == "$nd":
            dtype, shape, raw = body
            return np.frombuffer(base64.b64decode(raw), dtype=np.dtype(dtype)).reshape(shape).copy()
        if tag == "$na":
            return np.array(body, dtype=object)
        if tag == "$ns":
            return np.dtype(body[0]).type(body[1])
        if tag == "$b":
            return base64.b64decode(body)
        if tag == "$dt":
            return datetime.fromisoformat(body)
        if tag == "$da":
            return date.fromisoformat(body)
        if tag == "$td":
            return timedelta(seconds=body)
        if tag == "$f":
            return float(body)
        if tag == "$nt":
            return self._cls(body)(*v["v"])
        if tag == "$dc":
            cls = self._cls(body)
            late = self._late.get(cls)
            if late is None:
                if not dataclasses.is_dataclass(cls):
                    raise CodecError(f"change data names {body}, which is not a dataclass")
                late = self._late[cls] = frozenset(f.name for f in dataclasses.fields(cls) if not f.init)
            values = v["f"]
            if not late:
                return cls(**values)
            obj = cls(**{k: x for k, x in values.items() if k not in late})
            for k in late & values.keys():
                object.__setattr__(obj, k, values[k])
            return obj
        raise CodecError(f"unknown tag {tag!r} in logged change data")

    @staticmethod
    def _key(k: Any) -> Any:
        return tuple(k) if isinstance(k, list) else k
