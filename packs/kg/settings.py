"""``[packs.kg]`` settings of the kg pack."""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class KgSettings(BaseModel):
    """``[packs.kg]``. No field has a default here: every default lives in defaults.toml beside this module."""

    model_config = ConfigDict(extra="forbid")

    default_cardinality: Literal["one", "many"] = Field(
        description="Cardinality of a predicate that kg.define_predicate never declared.")
    default_entity_kind: str = Field(pattern=r"^[a-z][a-z0-9_]*$",
                                     description="Kind given to an entity created implicitly by a fact.")
    default_confidence: float = Field(ge=0, le=1, description="Confidence of a fact asserted without one.")
    max_batch: int = Field(ge=1, description="Most facts (or links) one kg.assert_facts / kg.link_many call takes.")
    max_name_length: int = Field(ge=1, description="Longest entity name or alias accepted.")
    max_literal_length: int = Field(ge=1, description="Longest literal object value accepted.")
    max_query_limit: int = Field(ge=1, description="Most rows a listing verb returns.")
    pagerank_iterations: int = Field(ge=1, description="PageRank power iterations.")
    pagerank_damping: float = Field(gt=0, lt=1, description="PageRank damping factor.")
    centrality_top: int = Field(ge=1, description="How many top nodes kg.centrality returns by default.")
    graph_recall_max_nodes: int = Field(ge=1, description="Default node budget of kg.graph_recall.")
    graph_recall_max_nodes_cap: int = Field(ge=1, description="Hard cap on kg.graph_recall's max_nodes.")
    graph_recall_max_depth_cap: int = Field(ge=1, description="Hard cap on kg.graph_recall's max_depth.")
    graph_view_nodes: int = Field(ge=1, description="Nodes kg.neighbourhood shows by default; more adds as many.")
    graph_view_nodes_cap: int = Field(ge=1, description="Hard cap on kg.neighbourhood's limit.")
    graph_view_hub_degree: int = Field(ge=1, description="A node with more edges than this is a hub: shown folded.")
    graph_view_depth: int = Field(ge=0, description="Default hops kg.neighbourhood reaches from its start nodes.")
    graph_view_max_depth: int = Field(ge=0, description="Hard cap on kg.neighbourhood's depth.")
    detect_max_text_length: int = Field(ge=1, description="Longest text kg.detect_entities scans.")
    detect_max_name_words: int = Field(ge=1, description="Longest name, in words, kg.detect_entities matches.")
