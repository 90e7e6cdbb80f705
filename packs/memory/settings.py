"""The memory pack's settings: every value comes from ``[packs.memory]``, whose defaults are in defaults.toml beside
this module."""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class ExplainSettings(BaseModel):
    """``[packs.memory.explain]``: what explain infers scopes from and how it prefers decisions."""

    model_config = ConfigDict(extra="forbid")
    scope_owner_kinds: list[str] = Field(min_length=1)  # entity kinds that may own a scope (project, person)
    scope_predicates: list[str]      # (entity, predicate, <scope>) facts that make the entity own the scope
    why_words: list[str]             # a query containing one of these words is a "why" question
    decision_boost: float = Field(ge=0, le=1)  # added to the score of decision notes on a "why" question
    fact_source_boost: float = Field(ge=0, le=1)  # added to a note grounding a fact between two named entities
    pool_factor: int = Field(ge=1)   # the decision preference re-ranks the top limit × pool_factor
    baseline_extra: int = Field(ge=0)  # memory.recall's top-n always reach the answer (see baseline_extra)
    max_facts_per_entity: int = Field(ge=1)
    max_rooms: int = Field(ge=1)


class TypeDefaults(BaseModel):
    model_config = ConfigDict(extra="forbid")
    salience: float = Field(ge=0, le=1)
    decay_factor: float = Field(ge=0)


class ScoreWeights(BaseModel):
    model_config = ConfigDict(extra="forbid")
    relevance: float = Field(ge=0)
    salience: float = Field(ge=0)
    temporal: float = Field(ge=0)


class RerankWeights(BaseModel):
    """Feature weights of the optional rerank stage; all zero = stage off."""

    model_config = ConfigDict(extra="forbid")
    relevance: float = Field(ge=0)
    salience: float = Field(ge=0)
    temporal: float = Field(ge=0)
    text_match: float = Field(ge=0)
    vector_match: float = Field(ge=0)


class ContextSettings(BaseModel):
    """What a memory system knows that a flat retriever does not (ADR 0008)."""

    model_config = ConfigDict(extra="forbid")
    expansion_weight: float = Field(ge=0)  # neighbouring turns of the same thread folded into a note's BM25 bag
    neighbour_alpha: float = Field(ge=0)
    thread_beta: float = Field(ge=0)
    thread_top: int = Field(ge=1)
    episode_gap_minutes: float = Field(ge=0)  # notes without a thread: the floor of a pause that ends an episode
    information_prior: bool = True  # score × ln(e + Σ idf of a note's own words): content-free turns give way
    time_prior: float = Field(ge=0)  # γ: a query naming a time lifts notes near it, × (1 + γ·w) (ADR 0041); 0 = off


class VectorIndexSettings(BaseModel):
    """The vector leg's HNSW graph for large scans (packs/memory/engine/vector_graph.py, ADR 0008)."""

    model_config = ConfigDict(extra="forbid")
    min_rows: int = Field(ge=0)  # scans of fewer rows are exact; 0 = always exact (no graph)
    connectivity: int = Field(ge=2, le=64)
    expansion_add: int = Field(ge=1)
    expansion_search: int = Field(ge=1)
    rows_per_expansion: int = Field(ge=0)  # the search list grows with the graph: max(expansion_search, rows / this)
    oversample: float = Field(ge=1)
    max_ask: int = Field(ge=1)
    insert_threads: int = Field(ge=1, le=64)  # usearch threads per background graph insert


class RelationFactors(BaseModel):
    """Walk factor per relation, in (0, 1]: a path's edge_factor is the product over its edges."""

    model_config = ConfigDict(extra="forbid")
    supports: float = Field(gt=0, le=1)
    triggered_by: float = Field(gt=0, le=1)
    related_to: float = Field(gt=0, le=1)
    supersedes: float = Field(gt=0, le=1)
    contradicts: float = Field(gt=0, le=1)


class GraphSettings(BaseModel):
    """The memory graph layer: ``[packs.memory.graph]`` (ADR 0012)."""

    model_config = ConfigDict(extra="forbid")
    relation_factors: RelationFactors
    walk_seeds: int = Field(ge=1)
    walk_max_depth: int = Field(ge=0)
    walk_max_depth_cap: int = Field(ge=0)
    walk_min_similarity: float = Field(ge=-1, le=1)
    walk_max_visited: int = Field(ge=1)
    centrality_relations: list[Literal["supports", "triggered_by", "related_to", "supersedes"]]
    expand_seeds: int = Field(ge=1)
    expand_max_depth: int = Field(ge=0)
    consolidation_min_similarity: float = Field(ge=-1, le=1)
    consolidation_max_notes: int = Field(ge=2)
    consolidation_max_pairs: int = Field(ge=1)
    max_ids: int = Field(ge=1)


class MemorySettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    episodic: TypeDefaults
    semantic: TypeDefaults
    embedder: str = Field(min_length=1)
    cjk_embedder: str
    cjk_threshold: float = Field(ge=0, le=1)
    query_cache_size: int = Field(ge=0)
    fusion: Literal["rrf", "weighted", "union", "vector_only", "keyword_only"]
    rrf_k: float = Field(gt=0)
    fusion_weights: dict[str, float]
    min_cosine: float = Field(ge=-1, le=1)
    vector_index: VectorIndexSettings
    index_snapshot_min_notes: int = Field(ge=0)  # smaller stores rebuild the full-text index on open
    candidates_per_limit: int = Field(ge=1)
    candidates_min: int = Field(ge=1)
    candidates_max: int = Field(ge=1)
    max_query_terms: int = Field(ge=1)
    bm25_k1: float = Field(gt=0)
    bm25_b: float = Field(ge=0, le=1)
    score_weights: ScoreWeights
    recency_half_life_days: float = Field(gt=0)
    rerank: RerankWeights
    context: ContextSettings
    near_duplicate_prefix: int = Field(ge=0)
    near_duplicate_penalty: float = Field(ge=0, le=1)
    response_char_budget: int = Field(ge=0)
    max_content_chars: int = Field(ge=1)
    max_label_chars: int = Field(ge=1)  # longest scope, thread, tag, source_id of a note
    max_tags: int = Field(ge=0)  # most tags on one note
    max_batch: int = Field(ge=1)
    duplicates: Literal["merge", "keep"]  # a text a live note of the scope already says: seen again, or kept
    seen_recent: int = Field(ge=0, le=1000)  # latest times a seen-again record keeps (ADR 0039)
    max_query_chars: int = Field(ge=1)
    recall_deadline_ms: int = Field(ge=0)
    explain: ExplainSettings  # memory.explain (ADR 0011)
    graph: GraphSettings  # the memory graph layer: edges, walk, centrality, beliefs (ADR 0012)

    def stored_models(self) -> list[str]:
        """Every note is embedded with the default model, and with the CJK model when one is configured."""
        return [self.embedder] + ([self.cjk_embedder] if self.cjk_embedder and self.cjk_embedder != self.embedder
                                  else [])
