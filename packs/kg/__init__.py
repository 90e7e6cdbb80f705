"""The kg pack: entities, bi-temporal facts with automatic supersession, typed edges, graph recall, PageRank.

The pack object lives in :mod:`packs.kg.pack` (entry point ``kg = "packs.kg.pack:pack"``).
"""
