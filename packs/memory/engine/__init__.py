"""The memory pack's search engine: the per-namespace index and everything it is made of (ADR 0043).

The note columns (``rowstore``), BM25 (``bm25*``, ``text``, ``bags``), the vectors and their HNSW graph (``vectors``,
``vector_graph``, ``half``, ``int8_scan``, ``pages``), threads and episodes, the embedders and the index's snapshots.
It imports the runtime, the pack's settings and itself only: never the verbs, the ranking, the models or the mirrors
(an import-linter contract in ``pyproject.toml``).
"""
