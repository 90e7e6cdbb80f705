"""`pal serve`'s app over the real built-in packs (issue 22, item 4): every public verb has its route, every resource
route is mounted (a route whose verb lacks a path field is silently left out, so this must be checked against the
real packs, not the fakes), and each resource route reaches its verb with the real params."""
from __future__ import annotations

import pytest

pytest.importorskip("fastapi", reason="the 'http' extra is not installed")
from fastapi.testclient import TestClient  # noqa: E402

from real_catalog import BUILT_IN_PUBLIC_VERBS, RESOURCE_ROUTES  # noqa: E402

from palimpsest_memory.runtime import Runtime  # noqa: E402
from palimpsest_memory.runtime.adapters.http import create_app  # noqa: E402

CONFIG = {"packs": {"memory": {"embedder": "hashing"}}}


@pytest.fixture
def client(tmp_path):
    from palimpsest_memory.runtime.testing import ISOLATED_ENV  # the built-in packs only, whatever else is installed

    rt = Runtime.open(tmp_path / "pal.db", discover_packs=True, config=CONFIG, env=ISOLATED_ENV)
    try:
        yield TestClient(create_app(rt), raise_server_exceptions=False)
    finally:
        rt.close()


def ok(resp, verb: str):
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["ok"] is True and body["verb"] == verb, body
    return body["result"]


def mounted(client) -> set[tuple[str, str]]:
    return {(m, r.path) for r in client.app.routes for m in getattr(r, "methods", ()) if m != "HEAD"}


def test_every_built_in_verb_and_resource_route_is_mounted(client):
    routes = mounted(client)
    verb_routes = {path.removeprefix("/v1/verbs/") for m, path in routes
                   if m == "POST" and path.startswith("/v1/verbs/") and path != "/v1/verbs/{verb}"}
    assert verb_routes == BUILT_IN_PUBLIC_VERBS
    assert RESOURCE_ROUTES <= routes, sorted(RESOURCE_ROUTES - routes)
    resource = {(m, p) for m, p in routes if p.startswith(("/v1/memory/", "/v1/kg/", "/v1/brain/"))}
    assert resource == RESOURCE_ROUTES  # a new resource route is added to the literal list too
    listed = ok(client.get("/v1/verbs"), "catalog")["verbs"]
    assert {v["verb"] for v in listed} == BUILT_IN_PUBLIC_VERBS
    paths = client.get("/openapi.json").json()["paths"]
    for method, path in RESOURCE_ROUTES:
        assert method.lower() in paths[path], (method, path)


def test_each_resource_route_reaches_its_verb_over_the_real_packs(client):
    a = ok(client.post("/v1/memory/team/remember", json={"content": "We picked DuckDB for the store."}),
           "memory.remember")["note"]
    b = ok(client.post("/v1/memory/team/remember", json={"content": "DuckDB stays the store after review."}),
           "memory.remember")["note"]
    assert a["namespace"] == "team" and b["namespace"] == "team"
    hits = ok(client.post("/v1/memory/team/recall", json={"query": "DuckDB store"}), "memory.recall")["results"]
    assert {h["note"]["id"] for h in hits} == {a["id"], b["id"]}
    assert ok(client.post("/v1/memory/other/recall", json={"query": "DuckDB store"}), "memory.recall")["results"] == []

    edge = ok(client.post("/v1/memory/team/edges", json={"source_id": b["id"], "target_id": a["id"],
                                                          "relation": "supports"}), "memory.link")["edge"]
    got = ok(client.get(f"/v1/memory/team/edges/{a['id']}"), "memory.edges")
    assert got["memory_id"] == a["id"] and [e["id"] for e in got["edges"]] == [edge["id"]]
    central = ok(client.post("/v1/memory/team/graph/centrality", json={}), "memory.centrality")
    assert central["notes"] == 2 and central["edges"] == 1
    assert ok(client.post(f"/v1/memory/team/edges/{edge['id']}/delete"), "memory.unlink")["removed"] == edge["id"]
    assert ok(client.get(f"/v1/memory/team/edges/{a['id']}"), "memory.edges")["edges"] == []

    for content in ("Orion runs on MySQL", "Orion runs on Postgres"):
        ok(client.post("/v1/verbs/memory.upsert_belief", params={"namespace": "team"},
                       json={"fact_key": "orion.db", "content": content}), "memory.upsert_belief")
    history = ok(client.get("/v1/memory/team/beliefs/orion.db/history"), "memory.belief_history")
    assert [v["content"] for v in history["versions"]] == ["Orion runs on MySQL", "Orion runs on Postgres"]

    for obj, since in (("Meta", "2020-01-01"), ("Google", "2023-06-01")):
        ok(client.post("/v1/verbs/kg.assert_fact", params={"namespace": "team"},
                       json={"subject": "Alice", "predicate": "works_at", "object": obj, "valid_from": since}),
           "kg.assert_fact")
    facts = ok(client.get("/v1/kg/team/history/Alice/works_at"), "kg.fact_history")
    assert "Meta" in str(facts) and "Google" in str(facts)
    assert str(facts).index("Meta") < str(facts).index("Google")
