"""The kg pack: entities, bi-temporal facts with automatic supersession, typed edges, graph recall, PageRank.

The pack object lives in :mod:`palimpsest_memory.packs.kg.pack` (entry point ``kg =
"palimpsest_memory.packs.kg.pack:pack"``).
"""
