"""Fuzzing every public verb (issue 9): params generated from each verb's params model, valid and hostile.

Strategies come from the params model's JSON schema (``rel_support.params_strategy``), over the whole catalog
(``load_catalog()``), so a new verb is fuzzed with no edit here. Half the examples are schema-valid (with
hostile-but-valid strings: SQL fragments, NUL bytes, lone surrogates, 1 MB text, edge-of-calendar dates), half
are one mutation away (a hostile value anywhere: NaN/inf, huge ints, deep JSON, wrong types; an unknown field; a
dropped field; a list blown past its cap; params that are not an object). Each call runs through the runtime on
a seeded store, and the oracle (``rel_support.FuzzOracle``) checks:

* nothing escapes but a typed ``PalimpsestError``, and never an ``InternalError`` or a ``StorageError`` (a bad
  input is not a storage failure) unless ``KNOWN_ISSUES`` explains it by a pinned, strict-xfail regression test;
* a rejected call leaves every table of every schema byte-for-byte as it was (per-table md5 of all rows) and
  the in-memory indexes, graph and tunables untouched.

``PALIMPSEST_FUZZ_EXAMPLES`` raises the per-verb budget; ``bench/fuzz.py`` is the long run.
"""
import logging
import os

import pytest
from hypothesis import HealthCheck, given, settings

from rel_support import HASHING, ISOLATED_ENV, FuzzOracle, default_hints, params_strategy, seed_store
from palimpsest_memory.runtime import Runtime
from palimpsest_memory.runtime.engine import load_catalog

CATALOG, _ = load_catalog(env=ISOLATED_ENV)
VERBS = [v.full_name for v in CATALOG.verbs()]
EXAMPLES = int(os.environ.get("PALIMPSEST_FUZZ_EXAMPLES", "25"))
CLOCK = lambda: __import__("datetime").datetime(2026, 3, 9, 12, 0, 0)  # noqa: E731


@pytest.fixture(scope="module")
def store():
    rt = Runtime.open(":memory:", config=HASHING, env=ISOLATED_ENV, clock=CLOCK)
    seeded = seed_store(rt)
    yield rt, seeded
    rt.close()


@pytest.fixture(autouse=True)
def _quiet_handler_crash_logs():
    # the runtime logs every handler crash with its traceback; a fuzzer provokes hundreds of rejections
    logging.getLogger("palimpsest").setLevel(logging.CRITICAL)
    yield
    logging.getLogger("palimpsest").setLevel(logging.NOTSET)


def test_catalog_is_fuzzed_whole():
    assert len(VERBS) >= 40 and {"memory.recall", "kg.assert_facts", "brain.feedback"} <= set(VERBS)


@pytest.mark.parametrize("verb", VERBS)
def test_fuzzed_params_only_raise_typed_errors_and_rejections_change_nothing(store, verb):
    rt, seeded = store
    spec = rt.catalog.resolve(verb, caller_pack=None, internal=False)
    hints = default_hints(seeded["ids"], seeded["recall_ids"])
    oracle = FuzzOracle(rt)

    @settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(params_strategy(spec, hints))
    def run(case):
        _, params = case
        oracle.call(verb, params)

    run()
    assert oracle.stats.calls >= EXAMPLES
