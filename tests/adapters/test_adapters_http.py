"""The HTTP API (FastAPI TestClient): every route, the one success/error shapes, statuses, auth, body limit."""
from __future__ import annotations

import pytest

pytest.importorskip("fastapi", reason="the 'http' extra is not installed")
from fastapi.testclient import TestClient  # noqa: E402

import fake_packs  # noqa: E402
import palimpsest_example  # noqa: E402
from conftest import open_runtime  # noqa: E402

from pydantic import BaseModel, ConfigDict  # noqa: E402

from palimpsest_memory.runtime import Act, Context, Pack, errors  # noqa: E402
from palimpsest_memory.runtime.adapters.http import create_app, resource_routes  # noqa: E402
from palimpsest_memory.runtime.adapters.serving import check_bind, is_loopback, loopback_hosts  # noqa: E402


@pytest.fixture
def client(fake_rt):
    return TestClient(create_app(fake_rt), raise_server_exceptions=False)


def ok(resp, verb):
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["ok"] is True and body["verb"] == verb
    return body["result"]


def err(resp, status, code):
    assert resp.status_code == status, resp.text
    body = resp.json()
    assert body["ok"] is False and set(body["error"]) == {"code", "message", "verb", "details"}
    assert body["error"]["code"] == code, body
    return body["error"]


# -- generic verb routes --------------------------------------------------------------------------------------
def test_every_public_verb_has_a_route_and_success_shape(client, fake_rt):
    assert ok(client.post("/v1/verbs/example.note", json={"text": "hi"}), "example.note") == {"id": 1, "text": "hi"}
    assert ok(client.post("/v1/verbs/example.notes", json={}), "example.notes")["notes"][0]["text"] == "hi"
    assert ok(client.post("/v1/verbs/example.notes"), "example.notes")["notes"]  # no body: model defaults
    listed = ok(client.get("/v1/verbs"), "catalog")["verbs"]
    assert [v["verb"] for v in listed] == [s.full_name for s in fake_rt.verbs()]


def test_namespace_query_parameter(client):
    ok(client.post("/v1/verbs/memory.remember?namespace=alpha", json={"content": "alpha note"}), "memory.remember")
    assert ok(client.post("/v1/verbs/memory.recall?namespace=alpha", json={"query": "note"}), "memory.recall")["notes"]
    assert ok(client.post("/v1/verbs/memory.recall?namespace=beta", json={"query": "note"}), "memory.recall") == {
        "notes": []}


def test_invalid_params_keep_field_paths(client):
    e = err(client.post("/v1/verbs/example.note", json={"txt": "a"}), 400, "invalid_params")
    assert e["verb"] == "example.note"
    assert {tuple(x["loc"]) for x in e["details"]["errors"]} == {("text",), ("txt",)}
    e = err(client.post("/v1/verbs/zeta.ping", json={"message": "m", "times": 9}), 400, "invalid_params")
    assert e["details"]["errors"][0]["loc"] == ["times"]
    err(client.post("/v1/verbs/example.note", content=b"{not json", headers={"content-type": "application/json"}),
        400, "invalid_params")
    err(client.post("/v1/verbs/example.note", json=["a", "list"]), 400, "invalid_params")


def test_error_statuses_come_from_the_error_classes(client):
    err(client.post("/v1/verbs/memory.unlink", json={"edge_id": 99}), 404, "not_found")
    err(client.post("/v1/verbs/nope.verb", json={}), 404, "verb_not_found")
    err(client.get("/v1/nothing/here"), 404, "not_found")
    err(client.post("/v1/verbs/zeta.secret", json={}), 403, "forbidden")  # a sub-handler: refused
    err(client.post("/v1/verbs/memory.remember", json={"content": "!x", "key": "k"}), 409, "conflict")
    err(client.post("/v1/verbs/memory.recall", json={"query": "q" * 101}), 413, "limit_exceeded")
    e = err(client.post("/v1/verbs/zeta.explode", json={}), 500, "internal")
    assert "kaboom" in e["message"]
    assert errors.LimitExceeded.http_status == 413 and errors.Conflict.http_status == 409


def test_a_body_that_is_not_an_object_is_the_json_error_shape(client, fake_rt):
    """A body of null means no params, like an empty body; a list or a number is invalid params in the one error
    shape; never a plain-text 500 (issue 16.5)."""
    for spec in fake_rt.verbs():
        empty = client.post(f"/v1/verbs/{spec.full_name}", content=b"")
        null = client.post(f"/v1/verbs/{spec.full_name}", content="null", headers={"content-type": "application/json"})
        assert (null.status_code, null.json()["ok"]) == (empty.status_code, empty.json()["ok"]), spec.full_name
        for body in ("[]", "3"):
            resp = client.post(f"/v1/verbs/{spec.full_name}", content=body, headers={"content-type": "application/json"})
            assert resp.status_code in (400, 422), (spec.full_name, body, resp.text)
            assert resp.json()["ok"] is False and resp.json()["error"]["code"] == "invalid_params"


def test_unloaded_pack_is_503_and_its_routes_are_not_mounted(tmp_path):
    rt = open_runtime(palimpsest_example, fake_packs.memory, fake_packs.kg, path=tmp_path / "pal.db",
                      env={"PALIMPSEST_DISABLE_PACKS": "kg"})
    try:
        client = TestClient(create_app(rt))
        err(client.post("/v1/verbs/kg.fact_history", json={"subject": "a", "predicate": "b"}), 503, "pack_unavailable")
        err(client.get("/v1/kg/default/history/a/b"), 404, "not_found")
        assert "/v1/kg/{ns}/history/{subject}/{predicate}" not in client.get("/openapi.json").json()["paths"]
        assert "/v1/memory/{ns}/remember" in client.get("/openapi.json").json()["paths"]
    finally:
        rt.close()


# -- resource routes ------------------------------------------------------------------------------------------
def test_resource_routes_map_to_their_verbs(client):
    a = ok(client.post("/v1/memory/team/remember", json={"content": "we chose duckdb", "key": "db"}), "memory.remember")
    assert a["namespace"] == "team"
    b = ok(client.post("/v1/memory/team/remember", json={"content": "we still choose duckdb", "key": "db"}),
           "memory.remember")
    assert [n["id"] for n in ok(client.post("/v1/memory/team/recall", json={"query": "duckdb"}),
                                "memory.recall")["notes"]] == [a["id"], b["id"]]
    assert ok(client.post("/v1/memory/other/recall", json={"query": "duckdb"}), "memory.recall")["notes"] == []

    edge = ok(client.post("/v1/memory/team/edges", json={"source_id": b["id"], "target_id": a["id"],
                                                          "relation": "supersedes"}), "memory.link")
    got = ok(client.get(f"/v1/memory/team/edges/{a['id']}"), "memory.edges")["edges"]
    assert [e["id"] for e in got] == [edge["id"]]
    assert ok(client.get(f"/v1/memory/team/edges/{a['id']}?relation=contradicts"), "memory.edges")["edges"] == []
    err(client.get("/v1/memory/team/edges/not-a-number"), 400, "invalid_params")
    err(client.get(f"/v1/memory/other/edges/{a['id']}"), 404, "not_found")

    centrality = ok(client.post("/v1/memory/team/graph/centrality", json={"limit": 5}), "memory.centrality")
    assert {n["id"] for n in centrality["nodes"]} == {float(a["id"]), float(b["id"])}
    assert ok(client.post("/v1/memory/team/graph/centrality"), "memory.centrality")["nodes"]

    history = ok(client.get("/v1/memory/team/beliefs/db/history"), "memory.belief_history")["notes"]
    assert [n["content"] for n in history] == ["we chose duckdb", "we still choose duckdb"]

    assert ok(client.post(f"/v1/memory/team/edges/{edge['id']}/delete"), "memory.unlink") == {"deleted": edge["id"]}
    err(client.post(f"/v1/memory/team/edges/{edge['id']}/delete"), 404, "not_found")
    assert ok(client.get(f"/v1/memory/team/edges/{a['id']}"), "memory.edges")["edges"] == []


def test_kg_history_route(client):
    for obj in ("Meta", "Google"):
        ok(client.post("/v1/verbs/kg.assert_fact?namespace=people",
                       json={"subject": "Alice", "predicate": "works_at", "object": obj}), "kg.assert_fact")
    facts = ok(client.get("/v1/kg/people/history/Alice/works_at"), "kg.fact_history")["facts"]
    assert [f["object"] for f in facts] == ["Meta", "Google"]
    assert ok(client.get("/v1/kg/default/history/Alice/works_at"), "kg.fact_history")["facts"] == []


def test_path_fields_cannot_be_smuggled_in_the_body(client):
    e = err(client.post("/v1/memory/team/remember", json={"content": "x", "namespace": "other"}), 400,
            "invalid_params")
    assert e["details"]["errors"][0]["loc"] == ["namespace"]


def test_openapi_has_one_operation_per_verb_and_route_with_models(client, fake_rt):
    doc = client.get("/openapi.json").json()
    paths = doc["paths"]
    for spec in fake_rt.verbs():
        op = paths[f"/v1/verbs/{spec.full_name}"]["post"]
        assert op["operationId"] == spec.full_name.replace(".", "_")
        assert op["summary"] == spec.summary
        ref = op["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].split("/")[-1]
        assert doc["components"]["schemas"][ref]["properties"]["result"]["$ref"].endswith(spec.result_model.__name__)
    assert "/v1/verbs/zeta.secret" not in paths
    assert paths["/v1/verbs/example.note"]["post"]["requestBody"]["content"]["application/json"]["schema"][
        "$ref"].endswith("NoteParams")
    routes = resource_routes(fake_rt.catalog)
    assert len(routes) == 9  # the fakes' 8 routes and the example pack's, each contributed through the hook
    for route in routes:
        assert route.method.lower() in paths[route.path], route.path
    edges_op = paths["/v1/memory/{ns}/edges/{memory_id}"]["get"]
    assert {p["name"]: p["in"] for p in edges_op["parameters"]} == {"ns": "path", "memory_id": "path",
                                                                      "relation": "query",
                                                                      "X-Palimpsest-Actor": "header"}
    assert doc["components"]["schemas"]["ErrorResponse"]


def test_openapi_lists_every_error_status_an_operation_can_answer(client):
    """The error classes' statuses plus the guard's 401 (token) and 421 (Host), as ADR 0003 says."""
    import inspect

    classes = [c for _, c in inspect.getmembers(errors, inspect.isclass) if issubclass(c, errors.PalimpsestError)]
    expected = {str(c.http_status) for c in classes} | {"401", "421"}
    op = client.get("/openapi.json").json()["paths"]["/v1/verbs/example.note"]["post"]
    assert set(op["responses"]) - {"200", "422"} == expected


class OddParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: int  # the route wants memory_id


class OddResult(BaseModel):
    n: int


def test_a_route_whose_verb_lacks_the_path_field_is_not_mounted(tmp_path):
    odd = Pack("memory", version="0", settings=fake_packs.AnySettings)

    @odd.verb("edges", act=Act.ASSERTIVE)
    def edges(p: OddParams, ctx: Context) -> OddResult:
        """Edges by id."""
        return OddResult(n=p.id)

    rt = open_runtime(odd, path=tmp_path / "pal.db")
    try:
        client = TestClient(create_app(rt))
        assert "/v1/memory/{ns}/edges/{memory_id}" not in client.get("/openapi.json").json()["paths"]
        assert ok(client.post("/v1/verbs/memory.edges", json={"id": 3}), "memory.edges") == {"n": 3}
    finally:
        rt.close()


# -- auth, body limit, host/origin ----------------------------------------------------------------------------
def test_no_token_means_no_auth(client):
    ok(client.post("/v1/verbs/zeta.ping", json={"message": "hi"}), "zeta.ping")


def test_bearer_token(fake_rt):
    client = TestClient(create_app(fake_rt, token="s3cret"))
    resp = client.post("/v1/verbs/zeta.ping", json={"message": "hi"})
    e = err(resp, 401, "forbidden")
    assert resp.headers["www-authenticate"].startswith("Bearer") and "missing" in e["message"]
    e = err(client.post("/v1/verbs/zeta.ping", json={"message": "hi"}, headers={"Authorization": "Bearer nope"}),
            401, "forbidden")
    assert "wrong" in e["message"]
    err(client.post("/v1/verbs/zeta.ping", json={"message": "hi"}, headers={"Authorization": "Basic s3cret"}),
        401, "forbidden")
    err(client.get("/openapi.json"), 401, "forbidden")
    good = {"Authorization": "Bearer s3cret"}
    assert ok(client.post("/v1/verbs/zeta.ping", json={"message": "hi"}, headers=good), "zeta.ping") == {"echo": "hi"}
    assert client.get("/openapi.json", headers=good).status_code == 200


def test_token_defaults_from_config(fake_rt):
    from palimpsest_memory.runtime.adapters.serving import AdapterSettings

    settings = AdapterSettings.from_config(fake_rt.config, env={})
    assert settings.token == "" and settings.host == "127.0.0.1" and settings.max_body_bytes > 0
    assert AdapterSettings.from_config(fake_rt.config, env={"PALIMPSEST_TOKEN": "t"}).token == "t"


def test_body_limit(fake_rt):
    client = TestClient(create_app(fake_rt, max_body_bytes=200))
    ok(client.post("/v1/verbs/memory.remember", json={"content": "x" * 100}), "memory.remember")
    e = err(client.post("/v1/verbs/memory.remember", json={"content": "x" * 300}), 413, "limit_exceeded")
    assert e["details"]["max_body_bytes"] == 200

    def chunks():  # no content-length: the limit is enforced while reading
        yield b'{"content": "'
        for _ in range(10):
            yield b"y" * 50
        yield b'"}'

    err(client.post("/v1/verbs/memory.remember", content=chunks(), headers={"content-type": "application/json"}),
        413, "limit_exceeded")
    assert ok(client.post("/v1/memory/default/recall", json={"query": "y"}), "memory.recall")["notes"] == []


def test_default_body_limit_comes_from_config(fake_rt):
    limit = fake_rt.config["adapters"]["max_body_bytes"]
    client = TestClient(create_app(fake_rt))
    err(client.post("/v1/verbs/memory.remember", json={"content": "x" * (limit + 1)}), 413, "limit_exceeded")


def test_loopback_server_refuses_foreign_host_and_origin(fake_rt):
    client = TestClient(create_app(fake_rt, allowed_hosts=loopback_hosts(8765)), base_url="http://127.0.0.1:8765")
    ok(client.post("/v1/verbs/zeta.ping", json={"message": "hi"}), "zeta.ping")
    ok(client.post("/v1/verbs/zeta.ping", json={"message": "hi"}, headers={"Origin": "http://localhost:8765"}),
       "zeta.ping")
    err(client.post("/v1/verbs/zeta.ping", json={"message": "hi"}, headers={"Host": "evil.example:8765"}),
        421, "forbidden")
    err(client.post("/v1/verbs/zeta.ping", json={"message": "hi"}, headers={"Origin": "https://evil.example"}),
        403, "forbidden")


def test_bind_rules():
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost") and is_loopback("[::1]")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.4") and not is_loopback("example.com")
    check_bind("127.0.0.1", None)
    check_bind("0.0.0.0", "token")
    with pytest.raises(errors.ConfigError, match="without a token"):
        check_bind("0.0.0.0", None)
    with pytest.raises(errors.ConfigError):
        check_bind("::", "")


def test_actor_header_reaches_the_call_and_is_documented(fake_rt):
    client = TestClient(create_app(fake_rt), raise_server_exceptions=False)
    who = ok(client.post("/v1/verbs/zeta.whoami", headers={"X-Palimpsest-Actor": "alice"}), "zeta.whoami")
    assert who == {"namespace": "default", "actor": "alice"}
    assert ok(client.post("/v1/verbs/zeta.whoami?namespace=team", headers={"x-palimpsest-actor": "bob"}),
              "zeta.whoami") == {"namespace": "team", "actor": "bob"}
    assert ok(client.post("/v1/verbs/zeta.whoami"), "zeta.whoami")["actor"] is None
    e = err(client.post("/v1/verbs/memory.remember", json={"content": "x"}, headers={"X-Palimpsest-Actor": "a b"}),
            400, "invalid_params")
    assert e["details"]["errors"][0]["loc"] == ["actor"]
    assert ok(client.post("/v1/verbs/memory.recall", json={"query": "x"}), "memory.recall") == {"notes": []}
    doc = client.get("/openapi.json").json()
    assert "X-Palimpsest-Actor" in doc["info"]["description"]
    for path in ("/v1/verbs/zeta.whoami", "/v1/memory/{ns}/recall"):
        headers = [p for p in doc["paths"][path]["post"]["parameters"] if p["in"] == "header"]
        assert [h["name"] for h in headers] == ["X-Palimpsest-Actor"] and "brain profile" in headers[0]["description"]
    # a server started with a default actor uses it for requests that name none
    defaulted = TestClient(create_app(fake_rt, actor="carol"), raise_server_exceptions=False)
    assert ok(defaulted.post("/v1/verbs/zeta.whoami"), "zeta.whoami")["actor"] == "carol"
    assert ok(defaulted.post("/v1/verbs/zeta.whoami", headers={"X-Palimpsest-Actor": "dan"}), "zeta.whoami")[
        "actor"] == "dan"
    with pytest.raises(errors.InvalidParams):
        create_app(fake_rt, actor="*")
