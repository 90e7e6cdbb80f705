"""The params and results of the memory pack's verbs (pydantic), one module per family of verbs (ADR 0043).

Models import nothing of the pack but each other.
"""
