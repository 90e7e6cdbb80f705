"""A writer that test_killed_writer_pg.py SIGKILLs at a chosen point of its work (issue 41).

    python killed_writer_child.py STORE PAUSE OP [ARGS...]

STORE is a DuckDB file or a PostgreSQL URL. PAUSE is ``point:k`` (or ``-``): the k-th time the writer reaches
``point`` it prints ``paused <point> <k>`` and waits for a line on stdin that never comes; the parent kills it
there, so every kill lands at a known place, with no timing involved. This script wraps the runtime's functions
itself; the product has no test hook. Points:

  commit        Runtime.commit is about to run: the transaction holds everything the call wrote, COMMIT not sent
  committed     a call has committed; this process has not fed its mirrors or delivered its events yet
  after:VERB    a call of VERB (top level or nested: an import page, a kg call of remember) has returned
  compact       the rewrite after an erase (compact.erase_bytes: VACUUM FULL on PostgreSQL) is about to start
  copied        DuckDB: that rewrite has copied the store into ``<file>.compact``, not yet swapped it in
  imported      pal copy: one namespace's import (exportfile.import_file) has returned

OPs (each prints ``ready`` once the store is open and ``done`` at the end):

  import FILE NS           pal import palimpsest FILE --namespace NS
  jsonl FILE NS            pal import jsonl FILE (memory.import_file) into NS
  remember NS BATCHES N    memory.remember_many: BATCHES calls of N keyed notes, ``ack <batch>`` after each
  facts NS BATCHES N       kg.assert_facts: BATCHES calls of N facts, ``ack <batch>`` after each
  forget NS                memory.forget everything in NS
  copy DST                 pal copy STORE DST
  recall NS                one memory.recall in NS (and the close that writes the serves this process kept)
  check NS                 a fresh process: prints a JSON line of what it finds (counts, sequences vs ids) and
                           the id of a note it remembers in NS (after it, as ``remembered``)
"""
from __future__ import annotations

import importlib
import json
import sys
from collections import Counter
from typing import Any

from palimpsest_memory.runtime import Runtime, compact, exportfile, storecopy
from palimpsest_memory.runtime.aftercommit import Followers
from palimpsest_memory.runtime.storage import duck_store
from palimpsest_memory.runtime.testing import open_test_runtime

HASHING = {"packs": {"memory": {"embedder": "hashing"}}}
reached: Counter = Counter()
pause_at: tuple[str, int] | None = None


def point(name: str) -> None:
    reached[name] += 1
    if pause_at is not None and pause_at == (name, reached[name]):
        print(f"paused {name} {reached[name]}", flush=True)
        sys.stdin.readline()  # the parent kills this process here
        raise SystemExit("the parent let a paused writer go on")


def wrap() -> None:
    commit, committed, dispatch = Runtime.commit, Followers.committed, Runtime._dispatch
    rewrite, import_file, copy_database = compact.erase_bytes, exportfile.import_file, duck_store.copy_database

    def commit_(self: Any, frame: Any) -> None:
        if frame.began or frame.changes:
            point("commit")
        commit(self, frame)

    def committed_(self: Any, frame: Any) -> None:
        point("committed")
        committed(self, frame)

    def dispatch_(self: Any, call: Any) -> Any:
        out = dispatch(self, call)
        point(f"after:{call.verb}")
        return out

    def compact_(rt: Any) -> float:
        point("compact")
        return rewrite(rt)

    def copy_database_(src: Any, dst: Any) -> None:
        copy_database(src, dst)
        point("copied")

    def import_file_(*args: Any, **kwargs: Any) -> Any:
        out = import_file(*args, **kwargs)
        point("imported")
        return out

    Runtime.commit, Followers.committed, Runtime._dispatch = commit_, committed_, dispatch_
    compact.erase_bytes, exportfile.import_file, duck_store.copy_database = compact_, import_file_, copy_database_


def open_store(store: str) -> Runtime:
    return open_test_runtime(config=HASHING, discover=True, path=store)


def sequences_behind(rt: Runtime) -> list[str]:
    """Every sequence of a portable pack's table (its ``TABLES``) that stands below the largest id the table holds:
    the next id it hands out would collide (``duplicate key``)."""
    out = []
    with rt._lock:
        for pack in exportfile.portable_packs(rt):
            for t in importlib.import_module(f"palimpsest_memory.packs.{pack}.portable").TABLES:
                for seq, col in t.sequences:
                    (top,) = rt.store.con.execute(f"SELECT max({col}) FROM {t.table}").fetchone()
                    last = sequence_value(rt, seq)
                    if top is not None and (last is None or last < top):
                        out.append(f"{seq} at {last}, {t.table}.{col} holds {top}")
    return out


def sequence_value(rt: Runtime, seq: str) -> int | None:
    """The last value ``seq`` handed out (None: none yet)."""
    schema, name = seq.split(".")
    if rt.store.backend == "postgres":
        (last, called) = rt.store.con.execute(f"SELECT last_value, is_called FROM {seq}").fetchone()
        return int(last) if called else int(last) - 1
    row = rt.store.con.execute("SELECT last_value FROM duckdb_sequences() WHERE schema_name = ? AND sequence_name = ?",
                          [schema, name]).fetchone()
    return None if row is None or row[0] is None else int(row[0])


def main() -> None:
    global pause_at
    store, pause, op, args = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    if pause != "-":
        name, k = pause.rsplit(":", 1)
        pause_at = (name, int(k))
    rt = open_store(store)
    wrap()  # after open: the points count the work, not the store's opening
    print("ready", flush=True)
    try:
        if op == "import":
            exportfile.import_file(rt, args[0], args[1])
        elif op == "jsonl":
            rt.call("memory.import_file", {"path": args[0], "format": "jsonl"}, namespace=args[1], internal=True)
        elif op == "remember":
            ns, batches, n = args[0], int(args[1]), int(args[2])
            for b in range(batches):
                rt.call("memory.remember_many", {"notes": [
                    {"content": f"child note {b}-{i} about Ada Lovelace and the harbour", "key": f"c{b}-{i}"}
                    for i in range(n)]}, namespace=ns)
                print(f"ack {b}", flush=True)
        elif op == "facts":
            ns, batches, n = args[0], int(args[1]), int(args[2])
            for b in range(batches):
                rt.call("kg.assert_facts", {"facts": [
                    {"subject": f"Person {i % 7}", "predicate": "visited", "object": f"Place {b}-{i}",
                     "allow_coexisting": True} for i in range(n)]}, namespace=ns)
                print(f"ack {b}", flush=True)
        elif op == "forget":
            rt.call("memory.forget", {"everything": True, "reason": "killed writer test"}, namespace=args[0])
        elif op == "copy":
            dst = open_store(args[0])
            try:
                storecopy.copy_store(rt, dst)
            finally:
                dst.close()
        elif op == "recall":
            rt.call("memory.recall", {"query": "anything at all"}, namespace=args[0])
        elif op == "check":
            ns = args[0]
            found = {"notes": rt.call("memory.count", {}, namespace=ns).model_dump(mode="json"),
                     "behind": sequences_behind(rt)}
            found["remembered"] = rt.call("memory.remember", {"content": "a fresh process writes after the kill"},
                                          namespace=ns).note.id
            found["remembered_elsewhere"] = rt.call("memory.remember", {"content": "and in another namespace"},
                                                    namespace="fresh-elsewhere").note.id
            print(json.dumps(found), flush=True)
        else:
            raise SystemExit(f"unknown op {op!r}")
        print("done", flush=True)
    finally:
        rt.close()


if __name__ == "__main__":
    main()
