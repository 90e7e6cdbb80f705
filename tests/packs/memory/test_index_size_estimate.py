"""The memory budget (ADR 0016: namespaces let go of their mirrors past ``index_budget_mb``) weighs each index by
``mirrors.index.index_bytes``. An index is a composition of parts (ADR 0043), some with ``__slots__``: the estimate
must count what every part holds, or the budget lets go too late (the vector matrix, the biggest array, had
dropped out of it when the vector rows became a part of their own)."""
from __future__ import annotations

from store_support import HASHING

from palimpsest_memory.packs.memory.mirrors.index import held_bytes, index_bytes


def test_the_estimate_counts_the_vector_matrix_and_the_text(make_pal_runtime) -> None:
    rt = make_pal_runtime(config=HASHING)
    rt.call("memory.remember_many", {"notes": [
        {"content": f"note {i} about the garden, the weather and word{i % 97} number {i * 7}"} for i in range(1500)]})
    index = rt.pack_state("memory").index.of("default")
    matrices = sum(vi.rows.mat.nbytes for vi in index.vectors.values())
    assert matrices > 0 and index.rows.text_chars > 0
    for vi in index.vectors.values():  # a part with __slots__ (no __dict__) is counted too
        assert held_bytes(vi.rows) >= vi.rows.mat.nbytes
    assert index_bytes(index) >= matrices + index.rows.text_chars
