"""The pack's contract with the runtime: settings without code defaults, verbs well-formed, reads read-only."""
from __future__ import annotations

import tomllib

from palimpsest_memory.runtime import Act

from palimpsest_memory.packs.kg.settings import KgSettings
from palimpsest_memory.packs.kg.pack import pack


def test_settings_have_no_code_defaults_and_defaults_toml_validates():
    assert all(f.is_required() for f in KgSettings.model_fields.values())
    with pack.defaults.open("rb") as fh:
        section = tomllib.load(fh)
    settings = KgSettings.model_validate(section)
    assert settings.pagerank_iterations == 15 and settings.pagerank_damping == 0.85


def test_every_verb_documents_itself_and_takes_a_namespace():
    for spec in pack.verbs.values():
        assert spec.summary, spec.name
        across = spec.name == "namespaces"  # the one verb that lists across namespaces (names and counts only)
        assert ("namespace" in spec.params_model.model_fields) is not across, spec.name
        for name, field in spec.params_model.model_fields.items():
            assert field.description, f"{spec.name}.{name}"
    acts = {n: s.act for n, s in pack.verbs.items()}
    assert acts["define_predicate"] is Act.DECLARATION
    assert {n for n, a in acts.items() if a is Act.COMMISSIVE} == {
        "assert_fact", "assert_facts", "retract_fact", "upsert_entity", "link", "link_many", "unlink", "centrality",
        "forget", "import_records"}


def test_the_pack_loads_through_its_entry_point(make_pal_runtime):
    rt = make_pal_runtime(discover=True)
    assert "kg.assert_fact" in {v.full_name for v in rt.verbs()}
