"""The crash harness's child: open a store file, then ingest batches until killed.

``python crash_child.py '{"db": PATH, "chain": "c0", "start": 0, "checkpoint": null}'`` runs one ingest.
``python crash_child.py --zygote`` imports everything once, then forks one ingest per JSON line read on stdin
(``{"cmd": "reap"}`` waits for the last one and reports how it died): the suite uses it so that twenty kills
do not pay twenty interpreter start-ups. The forked ingest is the same code as the plain one.

An ingest prints one JSON line per event on stdout, flushed: ``opening`` (imports done, about to open the
store), ``ready`` (store open and migrated), then ``ack`` after each call RETURNED (so an acknowledged batch was
committed): ``{"event": "ack", "batch": b, "verb": ..., "ids" | "fact_ids": [...]}``. Batch ``b`` is
``rel_support.crash_batch(chain, b)``: alternately ``kg.assert_facts`` and ``memory.remember_many``.
"""
import json
import os
import sys
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from rel_support import HASHING, ISOLATED_ENV, crash_batch  # noqa: E402
from palimpsest_memory.runtime import Runtime  # noqa: E402


def say(msg: dict, lead: str = "") -> None:
    sys.stdout.write(lead + json.dumps(msg) + "\n")
    sys.stdout.flush()


def ingest(args: dict) -> None:
    say({"event": "opening"})
    config = dict(HASHING)
    if args.get("checkpoint"):
        config["runtime"] = {"checkpoint_threshold": args["checkpoint"]}
    rt = Runtime.open(args["db"], config=config, env=ISOLATED_ENV)
    say({"event": "ready"})
    for b in range(args["start"], args["start"] + 100_000):
        verb, ns, params = crash_batch(args["chain"], b)
        res = rt.call(verb, params, namespace=ns)
        if verb == "memory.remember_many":
            say({"event": "ack", "batch": b, "verb": verb, "ns": ns, "ids": res.ids, "created": res.created})
        else:
            say({"event": "ack", "batch": b, "verb": verb, "ns": ns,
                 "fact_ids": [o.fact_id for o in res.outcomes]})


def zygote() -> None:
    pid = None
    for line in sys.stdin:
        args = json.loads(line)
        if args.get("cmd") == "reap":
            _, status = os.waitpid(pid, 0)
            sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
            # the lead newline ends a line the kill may have cut in half (the parent drops unparsable lines)
            say({"event": "reaped", "signal": sig, "exit": os.WEXITSTATUS(status) if sig is None else None}, "\n")
            continue
        pid = os.fork()
        if pid == 0:
            try:
                ingest(args)
            except BaseException:  # noqa: BLE001 - report anything, then leave without running atexit hooks
                say({"event": "error", "traceback": traceback.format_exc()})
                os._exit(1)
            os._exit(0)
        say({"event": "spawned", "pid": pid})


if __name__ == "__main__":
    if sys.argv[1] == "--zygote":
        zygote()
    else:
        ingest(json.loads(sys.argv[1]))
