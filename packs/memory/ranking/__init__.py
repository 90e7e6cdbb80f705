"""How recall orders the notes the engine finds (ADR 0008, ADR 0043): the named adjusters (``adjusters``), leg fusion,
the context scores, the time prior, episode grouping and what a recall keeps between calls.

It may import the engine and the models, never a verb module (an import-linter contract in ``pyproject.toml``).
"""
