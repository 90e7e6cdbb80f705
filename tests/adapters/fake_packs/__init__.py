"""Test packs named like the real ones, so every HTTP resource route has a verb to map to before the real packs exist.

``memory``: remember/recall/link/edges/unlink/belief_history/centrality; ``kg``: assert_fact/fact_history;
``zeta``: a brand-new pack (the "a new verb appears everywhere" test) with a verb that crashes and a sub-handler.
They store in DuckDB through ``ctx.db`` like any pack.
"""
from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from palimpsest_memory.runtime import Act, Context, HttpRoute, Pack, Visibility, errors, hookimpl

HERE = Path(__file__).parent


class AnySettings(BaseModel):
    """The real packs' [packs.memory] / [packs.kg] config sections exist; the fakes accept and ignore them."""

    model_config = ConfigDict(extra="allow")


memory = Pack("memory", version="0.0.1-fake", migrations=HERE / "memory_sql", settings=AnySettings)
kg = Pack("kg", version="0.0.1-fake", migrations=HERE / "kg_sql", settings=AnySettings)
zeta = Pack("zeta", version="0.0.1")


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RememberParams(Params):
    content: str = Field(min_length=1, description="The note, verbatim.")
    key: str | None = Field(None, description="A belief key: later notes with the same key are its new versions.")
    namespace: str | None = None


class Note(BaseModel):
    id: int
    content: str
    namespace: str
    key: str | None = None


class RecallParams(Params):
    query: str = Field(min_length=1, max_length=1000)
    limit: int = Field(10, ge=1, le=200)


class Notes(BaseModel):
    notes: list[Note]


class LinkParams(Params):
    source_id: int
    target_id: int
    relation: str = "related_to"


class Edge(BaseModel):
    id: int
    source_id: int
    target_id: int
    relation: str


class EdgesParams(Params):
    memory_id: int
    relation: str | None = Field(None, description="Only edges of this relation.")


class Edges(BaseModel):
    edges: list[Edge]


class UnlinkParams(Params):
    edge_id: int


class Unlinked(BaseModel):
    deleted: int


class BeliefParams(Params):
    fact_key: str


class CentralityParams(Params):
    limit: int = Field(10, ge=1)


class Centrality(BaseModel):
    nodes: list[dict[str, float]]


@memory.verb("remember", act=Act.COMMISSIVE)
def remember(p: RememberParams, ctx: Context) -> Note:
    """Remember a note."""
    if p.key and p.content.startswith("!"):
        raise errors.Conflict("a belief may not start with '!'", verb=ctx.verb, details={"key": p.key})
    (nid,) = ctx.db.query("INSERT INTO memory.notes (ns, content, key) VALUES (?, ?, ?) RETURNING id",
                          [ctx.namespace, p.content, p.key])[0]
    return Note(id=nid, content=p.content, namespace=ctx.namespace, key=p.key)


@memory.verb("recall", act=Act.ASSERTIVE)
def recall(p: RecallParams, ctx: Context) -> Notes:
    """Recall notes containing the query."""
    if len(p.query) > 100:
        raise errors.LimitExceeded("query longer than 100 characters", verb=ctx.verb)
    rows = ctx.db.query("SELECT id, content, ns, key FROM memory.notes WHERE ns = ? AND content ILIKE ? "
                        "ORDER BY id LIMIT ?", [ctx.namespace, f"%{p.query}%", p.limit])
    return Notes(notes=[Note(id=i, content=c, namespace=n, key=k) for i, c, n, k in rows])


def _note_exists(ctx: Context, nid: int) -> None:
    if not ctx.db.query("SELECT 1 FROM memory.notes WHERE ns = ? AND id = ?", [ctx.namespace, nid]):
        raise errors.NotFound(f"no note {nid}", verb=ctx.verb, details={"id": nid})


@memory.verb("link", act=Act.COMMISSIVE)
def link(p: LinkParams, ctx: Context) -> Edge:
    """Link two notes with a typed edge."""
    _note_exists(ctx, p.source_id)
    _note_exists(ctx, p.target_id)
    (eid,) = ctx.db.query("INSERT INTO memory.edges (ns, source_id, target_id, relation) VALUES (?, ?, ?, ?) "
                          "RETURNING id", [ctx.namespace, p.source_id, p.target_id, p.relation])[0]
    return Edge(id=eid, source_id=p.source_id, target_id=p.target_id, relation=p.relation)


@memory.verb("edges", act=Act.ASSERTIVE)
def edges(p: EdgesParams, ctx: Context) -> Edges:
    """The edges touching a note."""
    _note_exists(ctx, p.memory_id)
    rows = ctx.db.query("SELECT id, source_id, target_id, relation FROM memory.edges WHERE ns = ? AND "
                        "(source_id = ? OR target_id = ?) AND (? IS NULL OR relation = ?) ORDER BY id",
                        [ctx.namespace, p.memory_id, p.memory_id, p.relation, p.relation])
    return Edges(edges=[Edge(id=i, source_id=s, target_id=t, relation=r) for i, s, t, r in rows])


@memory.verb("unlink", act=Act.COMMISSIVE)
def unlink(p: UnlinkParams, ctx: Context) -> Unlinked:
    """Delete an edge."""
    rows = ctx.db.query("DELETE FROM memory.edges WHERE ns = ? AND id = ? RETURNING id", [ctx.namespace, p.edge_id])
    if not rows:
        raise errors.NotFound(f"no edge {p.edge_id}", verb=ctx.verb)
    return Unlinked(deleted=p.edge_id)


@memory.verb("belief_history", act=Act.ASSERTIVE)
def belief_history(p: BeliefParams, ctx: Context) -> Notes:
    """Every version of a belief, oldest first."""
    rows = ctx.db.query("SELECT id, content, ns, key FROM memory.notes WHERE ns = ? AND key = ? ORDER BY id",
                        [ctx.namespace, p.fact_key])
    return Notes(notes=[Note(id=i, content=c, namespace=n, key=k) for i, c, n, k in rows])


@memory.verb("centrality", act=Act.ASSERTIVE)
def centrality(p: CentralityParams, ctx: Context) -> Centrality:
    """Degree of each linked note."""
    rows = ctx.db.query("SELECT node, count(*) FROM (SELECT source_id AS node FROM memory.edges WHERE ns = ? "
                        "UNION ALL SELECT target_id FROM memory.edges WHERE ns = ?) GROUP BY node ORDER BY 2 DESC, 1 "
                        "LIMIT ?", [ctx.namespace, ctx.namespace, p.limit])
    return Centrality(nodes=[{"id": float(n), "degree": float(d)} for n, d in rows])


class AssertParams(Params):
    subject: str
    predicate: str
    object: str


class Fact(BaseModel):
    id: int
    subject: str
    predicate: str
    object: str


class HistoryParams(Params):
    subject: str
    predicate: str


class History(BaseModel):
    facts: list[Fact]


@kg.verb("assert_fact", act=Act.COMMISSIVE)
def assert_fact(p: AssertParams, ctx: Context) -> Fact:
    """Assert a fact."""
    (fid,) = ctx.db.query("INSERT INTO kg.facts (ns, subject, predicate, object) VALUES (?, ?, ?, ?) RETURNING id",
                          [ctx.namespace, p.subject, p.predicate, p.object])[0]
    return Fact(id=fid, subject=p.subject, predicate=p.predicate, object=p.object)


@kg.verb("fact_history", act=Act.ASSERTIVE)
def fact_history(p: HistoryParams, ctx: Context) -> History:
    """The facts of a (subject, predicate), oldest first."""
    rows = ctx.db.query("SELECT id, subject, predicate, object FROM kg.facts WHERE ns = ? AND subject = ? AND "
                        "predicate = ? ORDER BY id", [ctx.namespace, p.subject, p.predicate])
    return History(facts=[Fact(id=i, subject=s, predicate=pr, object=o) for i, s, pr, o in rows])


class PingParams(Params):
    message: str = Field(description="What to echo.")
    times: int = Field(1, ge=1, le=5, description="How many times.")


class Pong(BaseModel):
    echo: str


@zeta.verb("ping", act=Act.ASSERTIVE)
def ping(p: PingParams, ctx: Context) -> Pong:
    """Echo a message (a verb no adapter has ever heard of)."""
    return Pong(echo=" ".join([p.message] * p.times))


class Empty(Params):
    pass


@zeta.verb("explode", act=Act.ASSERTIVE)
def explode(p: Empty, ctx: Context) -> Pong:
    """Fail with a bug."""
    raise RuntimeError("kaboom")


@zeta.verb("secret", act=Act.ASSERTIVE, visibility=Visibility.SUBHANDLER)
def secret(p: Empty, ctx: Context) -> Pong:
    """A sub-handler: never exposed."""
    return Pong(echo="secret")


class Who(BaseModel):
    namespace: str
    actor: str | None


@zeta.verb("whoami", act=Act.ASSERTIVE)
def whoami(p: Empty, ctx: Context) -> Who:
    """Say which namespace and actor the call was made for (how an adapter's --actor is seen)."""
    return Who(namespace=ctx.namespace, actor=ctx.actor)


# The resource routes the real packs contribute, contributed the same way (the palimpsest_http_routes hook), so the
# HTTP adapter's route machinery is tested over these fakes too.
NS = {"ns": "namespace"}


class MemoryRoutes:
    @hookimpl
    def palimpsest_http_routes(self) -> list[HttpRoute]:
        return [HttpRoute("POST", "/v1/memory/{ns}/remember", "memory.remember", NS),
                HttpRoute("POST", "/v1/memory/{ns}/recall", "memory.recall", NS),
                HttpRoute("POST", "/v1/memory/{ns}/edges", "memory.link", NS),
                HttpRoute("GET", "/v1/memory/{ns}/edges/{memory_id}", "memory.edges", {**NS, "memory_id": "memory_id"}),
                HttpRoute("POST", "/v1/memory/{ns}/edges/{edge_id}/delete", "memory.unlink",
                          {**NS, "edge_id": "edge_id"}),
                HttpRoute("GET", "/v1/memory/{ns}/beliefs/{fact_key}/history", "memory.belief_history",
                          {**NS, "fact_key": "fact_key"}),
                HttpRoute("POST", "/v1/memory/{ns}/graph/centrality", "memory.centrality", NS)]


class KgRoutes:
    @hookimpl
    def palimpsest_http_routes(self) -> list[HttpRoute]:
        return [HttpRoute("GET", "/v1/kg/{ns}/history/{subject}/{predicate}", "kg.fact_history",
                          {**NS, "subject": "subject", "predicate": "predicate"})]


memory.add_hooks(MemoryRoutes())
kg.add_hooks(KgRoutes())
