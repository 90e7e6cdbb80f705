"""The pack model refuses malformed packs at import time, naming the verb."""
import pytest
from pydantic import BaseModel, ConfigDict

from palimpsest_memory.runtime import Act, Context, Pack, Visibility
from palimpsest_memory.runtime.errors import PackLoadError


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")
    q: str


class Loose(BaseModel):
    q: str


class Out(BaseModel):
    n: int


def test_verb_is_registered_with_full_name_act_visibility_and_doc() -> None:
    pack = Pack("alpha", version="1.0")

    @pack.verb("look_up", act="assertive", visibility="subhandler")
    def look_up(params: Strict, ctx: Context) -> Out:
        """Look something up.

        More words."""
        return Out(n=1)

    spec = pack.verbs["look_up"]
    assert (spec.full_name, spec.act, spec.visibility) == ("alpha.look_up", Act.ASSERTIVE, Visibility.SUBHANDLER)
    assert spec.summary == "Look something up."
    assert spec.params_model is Strict and spec.result_model is Out


@pytest.mark.parametrize("name", ["Recall", "1recall", "re-call", "", "re.call"])
def test_malformed_verb_names_fail(name: str) -> None:
    with pytest.raises(PackLoadError, match="must match"):
        Pack("alpha", version="1.0").verb(name, act=Act.ASSERTIVE)


def test_malformed_pack_name_and_self_requirement_fail() -> None:
    with pytest.raises(PackLoadError):
        Pack("Alpha", version="1.0")
    with pytest.raises(PackLoadError, match="cannot require itself"):
        Pack("alpha", version="1.0", requires=["alpha"])


def test_missing_models_fail_at_decoration() -> None:
    pack = Pack("alpha", version="1.0")
    with pytest.raises(PackLoadError, match="params annotation must be a pydantic model"):
        @pack.verb("a", act=Act.ASSERTIVE)
        def a(params: dict, ctx: Context) -> Out:  # type: ignore[type-arg]
            """A."""
    with pytest.raises(PackLoadError, match="result annotation must be a pydantic model"):
        @pack.verb("b", act=Act.ASSERTIVE)
        def b(params: Strict, ctx: Context):  # type: ignore[no-untyped-def]
            """B."""


def test_params_must_forbid_unknown_fields() -> None:
    pack = Pack("alpha", version="1.0")
    with pytest.raises(PackLoadError, match="must forbid unknown fields"):
        @pack.verb("c", act=Act.ASSERTIVE)
        def c(params: Loose, ctx: Context) -> Out:
            """C."""


def test_unknown_act_and_duplicate_verb_fail() -> None:
    pack = Pack("alpha", version="1.0")
    with pytest.raises(PackLoadError, match="alpha.d"):
        pack.verb("d", act="questioning")

    @pack.verb("e", act=Act.ASSERTIVE)
    def e(params: Strict, ctx: Context) -> Out:
        """E."""
        return Out(n=1)

    with pytest.raises(PackLoadError, match="twice"):
        @pack.verb("e", act=Act.ASSERTIVE)
        def e2(params: Strict, ctx: Context) -> Out:
            """E again."""
            return Out(n=2)


def test_register_portable_gives_two_subhandlers_and_refuses_an_undeclared_pack() -> None:
    from palimpsest_memory.runtime.portable import Table, register_portable

    tables = [Table("thing", "demo.things", ("id",))]
    with pytest.raises(PackLoadError, match="portable=True"):
        register_portable(Pack("plain", "0.1"), tables)
    pack = Pack("demo", "0.1", portable=True)
    register_portable(pack, tables, export_act=Act.COMMISSIVE)
    assert {n: (s.act, s.visibility) for n, s in pack.verbs.items()} == {
        "export_records": (Act.COMMISSIVE, Visibility.SUBHANDLER),
        "import_records": (Act.COMMISSIVE, Visibility.SUBHANDLER)}
    assert "thing" in pack.verbs["export_records"].doc
    with pytest.raises(PackLoadError, match="twice"):  # a second registration is a pack bug, not a silent override
        register_portable(pack, tables)
