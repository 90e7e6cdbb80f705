"""Files → notes: pure, bounded parsers of conversation files, chat-service exports and Markdown folders (ADR 0043).

They write nothing; the import verbs (``import_verbs.py``, at the pack's top) store what they yield. They may import
the engine's pure helpers and the models, never a verb module.
"""
