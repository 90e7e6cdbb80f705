"""The public verbs of the built-in packs, written out by hand (issue 22, item 4).

The adapter tests over the real packs compare against this literal set, not against one built by the same
``load_catalog`` the servers use: if a pack fails to load, or a verb disappears, they fail instead of agreeing
with the server. Adding, renaming or hiding a public verb means updating this list in the same change.
"""
BUILT_IN_PUBLIC_VERBS = frozenset({
    "brain.feedback", "brain.history", "brain.profile", "brain.replay", "brain.reset", "brain.serves", "brain.state",
    "brain.unbind",
    "kg.assert_fact", "kg.assert_facts", "kg.centrality", "kg.centrality_scores", "kg.define_predicate",
    "kg.detect_entities", "kg.detect_entities_many", "kg.edges", "kg.entities", "kg.entity", "kg.fact_history",
    "kg.facts", "kg.graph_recall", "kg.link", "kg.link_many", "kg.list_edges", "kg.namespaces", "kg.neighbourhood",
    "kg.predicates", "kg.resolve",
    "kg.retract_fact", "kg.stats", "kg.timeline", "kg.unlink", "kg.upsert_entity",
    "kg.forget", "kg.tombstones", "memory.backup", "memory.forget", "memory.tombstones",
    "memory.archive", "memory.belief_history", "memory.centrality", "memory.consolidate", "memory.count",
    "memory.consolidation_candidates", "memory.edges", "memory.explain", "memory.get", "memory.history", "memory.link",
    "memory.link_many", "memory.list", "memory.prune", "memory.recall", "memory.reembed", "memory.remember", "memory.remember_many",
    "memory.import_conversations", "memory.namespaces", "memory.stats",
    "memory.unlink", "memory.update", "memory.upsert_belief", "memory.walk",
})

# the resource routes `pal serve` mounts over the real packs (method, path): every one must be there
RESOURCE_ROUTES = frozenset({
    ("POST", "/v1/memory/{ns}/remember"),
    ("POST", "/v1/memory/{ns}/recall"),
    ("POST", "/v1/memory/{ns}/edges"),
    ("GET", "/v1/memory/{ns}/edges/{memory_id}"),
    ("POST", "/v1/memory/{ns}/edges/{edge_id}/delete"),
    ("GET", "/v1/memory/{ns}/beliefs/{fact_key}/history"),
    ("POST", "/v1/memory/{ns}/graph/centrality"),
    ("GET", "/v1/kg/{ns}/history/{subject}/{predicate}"),
})
