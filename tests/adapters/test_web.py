"""The web view's server side (no browser): the read verbs it needs, the timeline SVG, `--svg`, the routes and
their auth, and the assets shipping without any network reference."""
from __future__ import annotations

import importlib.util
import re
import sys
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from palimpsest_memory.runtime import Runtime, errors
from palimpsest_memory.runtime.adapters.web import STATIC, timeline_svg

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    spec = importlib.util.spec_from_file_location("palimpsest_demo_data", ROOT / "demo" / "data.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod.build(tmp_path_factory.mktemp("web") / "demo.duckdb")


@pytest.fixture
def rt(demo_db: Path) -> Any:
    with Runtime.open(demo_db) as r:
        yield r


def _line(res: Any, predicate: str) -> dict[str, tuple[str, bool]]:
    line = next(l for l in res.lines if l.predicate == predicate)
    return {f.fact.object: (f.status, f.late) for f in line.facts}


def test_timeline_statuses_late_arrivals_and_known_at(rt: Any) -> None:
    now = rt.call("kg.timeline", {"subject": "Orion"})
    assert _line(now, "uses_database") == {"SQLite": ("ended", True), "Postgres": ("superseded", False),
                                           "CockroachDB": ("current", False)}
    assert len(now.moments) == 3 and now.moments == sorted(now.moments)
    first = rt.call("kg.timeline", {"subject": "Orion", "known_at": now.moments[0]})
    assert _line(first, "uses_database") == {"Postgres": ("current", False)}
    vega = rt.call("kg.timeline", {"subject": "vega"})  # an alias-insensitive name
    assert _line(vega, "uses_cache") == {"Memcached": ("retracted", False), "Redis": ("current", False)}
    believed = rt.call("kg.timeline", {"subject": "Vega", "known_at": vega.moments[0]})
    assert _line(believed, "uses_cache") == {"Memcached": ("current", False)}
    only = rt.call("kg.timeline", {"subject": "Ben", "predicates": ["works_on"]})
    assert [l.predicate for l in only.lines] == ["works_on"]


def test_timeline_bad_input_is_a_typed_error(rt: Any) -> None:
    with pytest.raises(errors.NotFound):
        rt.call("kg.timeline", {"subject": "Nobody"})
    with pytest.raises(errors.InvalidParams):
        rt.call("kg.timeline", {"subject": "Orion", "known_at": "yesterday-ish"})
    with pytest.raises(errors.InvalidParams):
        rt.call("kg.timeline", {"subject": "Orion", "predicates": ["Not A Predicate"]})


def test_stats_namespaces_and_brain_history(rt: Any) -> None:
    st = rt.call("kg.stats", {})
    assert (st.entities, st.facts, st.versions) == (10, 13, 17) and st.edges > 0 and st.last_write is not None
    empty = rt.call("kg.stats", {}, namespace="nothing-here")
    assert (empty.entities, empty.facts, empty.edges, empty.last_write) == (0, 0, 0, None)
    ns = rt.call("memory.namespaces", {}).namespaces
    assert [(n.name, n.notes) for n in ns] == [("default", 18)]
    assert rt.call("memory.namespaces", {"prefix": "def"}).namespaces == ns
    assert rt.call("memory.namespaces", {"prefix": "x"}).namespaces == []
    graphs = rt.call("kg.namespaces", {}).namespaces
    assert [(g.name, g.entities, g.facts) for g in graphs] == [("default", st.entities, st.facts)]
    rt.call("kg.assert_fact", {"subject": "Vega", "predicate": "kind", "object": "star"}, namespace="facts-only")
    assert [g.name for g in rt.call("kg.namespaces", {}).namespaces] == ["default", "facts-only"]
    only = rt.call("kg.namespaces", {"prefix": "facts"}).namespaces
    assert [(g.name, g.entities, g.facts, g.edges) for g in only] == [("facts-only", 2, 1, 0)]
    assert rt.call("kg.namespaces", {"prefix": "zz"}).namespaces == []
    with pytest.raises(errors.InvalidParams):
        rt.call("kg.namespaces", {"prefix": ""})
    for who in ({}, {"actor": "ada"}):
        hist = rt.call("brain.history", who)
        state = rt.call("brain.state", who).state
        assert hist.points[0].kind == "init" and len(hist.points) == hist.events == state.feedback_events + 1
        assert {c: p.mean for c, p in hist.points[-1].posteriors.items()} == \
            {c: p.mean for c, p in state.posteriors.items()}
    assert len(rt.call("brain.history", {"limit": 2}).points) == 2
    with pytest.raises(errors.InvalidParams):
        rt.call("brain.history", {"limit": 0})


def test_timeline_svg_draws_each_fact(rt: Any) -> None:
    data = rt.call("kg.timeline", {"subject": "Vega"}).model_dump(mode="json")
    svg = timeline_svg.render(data)
    assert svg.startswith("<svg") and svg.rstrip().endswith("</svg>")
    assert len(re.findall(r'<g class="bar ', svg)) == 2
    assert 'class="bar retracted"' in svg and 'class="bar current"' in svg
    assert re.search(r'href="#/note/\d+"', svg)
    import xml.dom.minidom

    xml.dom.minidom.parseString(svg)  # well-formed


def test_cli_writes_the_svg(demo_db: Path, tmp_path: Path, capsys: Any) -> None:
    from palimpsest_memory.runtime.adapters.cli import main

    out = tmp_path / "orion.svg"
    assert main(["--db", str(demo_db), "kg", "timeline", "Orion", "--svg", str(out)]) == 0
    text = out.read_text()
    assert text.count('<g class="bar ') == 3 and "SQLite (late)" in text
    assert main(["--db", str(demo_db), "kg", "timeline", "Nobody", "--svg", str(tmp_path / "x.svg")]) == 3
    assert not (tmp_path / "x.svg").exists()
    assert main(["--db", str(demo_db), "kg", "timeline", "Orion", "--svg", str(tmp_path / "no" / "dir.svg")]) == 2


def test_routes_public_assets_and_guarded_data(demo_db: Path) -> None:
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from palimpsest_memory.runtime.adapters.http import create_app

    with Runtime.open(demo_db) as r:
        client = TestClient(create_app(r, token="s3cret"), base_url="http://127.0.0.1")
        page = client.get("/")
        assert page.status_code == 200 and '<script type="module" src="/ui/app.js">' in page.text
        assert "default-src 'self'" in page.headers["content-security-policy"]
        assert client.get("/ui/app.js").status_code == 200
        assert client.get("/docs").status_code == 200
        assert client.get("/ui/..%2f..%2f..%2fpyproject.toml").status_code == 404  # nothing outside static/
        assert client.get("/openapi.json").status_code == 401  # data (the catalog) needs the token
        assert client.post("/v1/verbs/kg.stats", json={}).status_code == 401
        assert client.post("/ui/app.js").status_code == 401  # only GET/HEAD of assets is public
        ok = client.post("/v1/verbs/kg.stats", json={}, headers={"Authorization": "Bearer s3cret"})
        assert ok.status_code == 200 and ok.json()["result"]["entities"] == 10
        # the tidy pages (issue 42 item 3) are the packs' own, listed and served like the others
        listed = {p["name"]: p for p in client.get("/ui/pages.json").json()}
        assert (listed["notes"]["pack"], listed["retrievals"]["pack"]) == ("memory", "brain")
        assert [listed[n]["title"] for n in ("notes", "note", "retrievals")] == ["Notes", None, "Retrievals"]
        for name in ("notes", "note", "retrievals"):
            assert client.get(listed[name]["src"]).status_code == 200
        assert client.get("/ui/pages/memory/note_tidy.js").status_code == 200  # the note page's forms


def test_assets_ship_and_reference_no_network() -> None:
    names = {p.name for p in STATIC.iterdir()}
    assert {"index.html", "docs.html", "style.css", "app.js", "namespaces.js", "docs.js"} <= names
    # the packs' pages (the palimpsest_web_pages hook, ADR 0035) lie in each pack's web/ folder
    pages = {p.name for p in (ROOT / "packs").glob("*/web/*.js")}
    assert {"recall.js", "timeline.js", "graph.js", "brain.js", "note.js", "shared.js", "notes.js", "note_tidy.js",
            "retrievals.js", "graph_canvas.js"} <= pages
    for p in [*STATIC.iterdir(), *(ROOT / "packs").glob("*/web/*")]:
        text = p.read_text(encoding="utf-8")
        assert not re.search(r"https?://(?!www\.w3\.org/)", text), f"{p.name} references the network"


_DAYS = st.dates(min_value=date(1, 1, 1), max_value=date(9999, 12, 31))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(starts=st.lists(_DAYS, min_size=1, max_size=3), known=st.one_of(st.none(), _DAYS))
def test_timeline_svg_draws_any_dates_a_fact_can_hold(tmp_path: Path, starts: list, known: Any) -> None:
    """Facts from year 1 to year 9999, asked as known at either end (issue 46: `--known-at 0001-01-01T00:00:00Z
    --svg` crashed: the picture's margin went before year 1)."""
    with Runtime.open(tmp_path / "svg.duckdb") as r:
        subject = f"S{abs(hash((tuple(starts), known)))}"
        for day, city in zip(starts, ("Rome", "Oslo", "Lima")):
            r.call("kg.assert_fact", {"subject": subject, "predicate": "lives_in", "object": city,
                                      "valid_from": day.isoformat()})
        params = {"subject": subject}
        if known is not None:
            params["known_at"] = f"{known.isoformat()}T00:00:00Z"
        svg = timeline_svg.render(r.call("kg.timeline", params).model_dump(mode="json"))
    import xml.dom.minidom

    xml.dom.minidom.parseString(svg)  # well-formed
    assert f"timeline of {subject}" in svg
