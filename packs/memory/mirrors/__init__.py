"""The memory pack's state (ADR 0015, ADR 0043): the search index and the graph as mirrors of the store, the embedder
registry beside them, the changes verbs record for them, and the subscriber that keeps the graph in step with the kg.

They may import the engine and the models; ``state.py`` at the pack's top assembles them. Only ``graph_sync`` registers
on the pack (it imports ``core``); the others import no verb module.
"""
