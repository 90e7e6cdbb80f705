"""A writer or reader process for the shared-store tests (tests/runtime/test_postgres_shared.py).

    python pg_worker.py assert URL WORKER N SUBJECTS SEED   -- N kg asserts, prints "ack <object>" after each
    python pg_worker.py remember URL TEXT                   -- one note, prints "ack <id>"
    python pg_worker.py remember_on_go URL TEXT             -- prints "ready", waits for a line, then one note
                                                               (hashing embedder), prints "ack <id> <seen_again>"
"""
import random
import sys
from datetime import datetime, timedelta

from palimpsest_memory.runtime.testing import open_test_runtime


def main() -> None:
    mode, url = sys.argv[1], sys.argv[2]
    config = {"packs": {"memory": {"embedder": "hashing"}}} if mode == "remember_on_go" else None
    rt = open_test_runtime(path=url, config=config)
    try:
        if mode == "assert":
            worker, n, subjects, seed = sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
            rng = random.Random(seed)
            base = datetime(2000, 1, 1)
            print("ready", flush=True)
            for i in range(n):
                obj = f"{worker}-{i}"
                rt.call("kg.assert_fact", {"subject": f"s{rng.randrange(subjects)}", "predicate": "holds",
                                           "object": obj, "literal": True,
                                           "valid_from": (base + timedelta(days=rng.randrange(100_000))).isoformat()})
                print(f"ack {obj}", flush=True)
        elif mode == "remember_on_go":
            rt.call("memory.count", {})  # the namespace is loaded before the start line
            print("ready", flush=True)
            sys.stdin.readline()
            res = rt.call("memory.remember", {"content": sys.argv[3], "scope": "race"})
            print(f"ack {res.note.id} {int(res.seen_again)}", flush=True)
        elif mode == "remember":
            note = rt.call("memory.remember", {"content": sys.argv[3]}).note
            print(f"ack {note.id}", flush=True)
    finally:
        rt.close()


if __name__ == "__main__":
    main()
