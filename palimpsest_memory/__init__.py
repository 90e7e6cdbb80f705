"""palimpsest-memory: a local-first memory runtime for AI agents.

The distribution ``palimpsest-memory`` owns this one top-level import package; the runtime is
``palimpsest_memory.runtime`` and the built-in packs are ``palimpsest_memory.packs.<name>`` (ADR 0023). In a checkout
``runtime`` and ``packs`` here are links to the repository's top-level ``runtime/`` and ``packs/`` folders; in the
wheel they are real folders.
"""
