"""Discovery and order: requirements, cycles, names, duplicate verbs, broken packs, misspelled hooks."""
import types

import pytest
from runtime_fakes import Count, Empty, plain_pack

from palimpsest_memory.runtime import Act, Context, Pack, hookimpl
from palimpsest_memory.runtime.errors import PackLoadError, PackUnavailable
from palimpsest_memory.runtime.loader import load_packs
from palimpsest_memory.runtime.testing import open_test_runtime


def names(loaded) -> list[str]:  # type: ignore[no-untyped-def]
    return [p.name for p in loaded.packs]


def test_order_follows_requires() -> None:
    loaded = load_packs([("c", plain_pack("c", ("b",))), ("a", plain_pack("a")), ("b", plain_pack("b", ("a",)))])
    assert names(loaded) == ["a", "b", "c"]


def test_missing_requirement_names_both_packs() -> None:
    with pytest.raises(PackLoadError) as err:
        load_packs([("brain", plain_pack("brain", ("memory",)))])
    assert "'brain'" in err.value.message and "'memory'" in err.value.message
    assert err.value.details == {"pack": "brain", "missing": "memory"}


def test_cycle_is_named() -> None:
    with pytest.raises(PackLoadError, match="cycle") as err:
        load_packs([("a", plain_pack("a", ("b",))), ("b", plain_pack("b", ("a",)))])
    assert set(err.value.details["cycle"]) == {"a", "b"}


def test_entry_point_name_must_equal_pack_name() -> None:
    with pytest.raises(PackLoadError, match="'kg2' loads a pack named 'kg'"):
        load_packs([("kg2", plain_pack("kg"))])


def test_two_packs_claiming_one_verb_is_an_error_naming_both() -> None:
    a, b = plain_pack("a"), plain_pack("b")
    b.name = "a"  # a second distribution that reuses the name
    with pytest.raises(PackLoadError, match="two packs are named 'a'"):
        load_packs([("a", a), ("a", b)])


def test_duplicate_verb_across_packs_via_catalog() -> None:
    from palimpsest_memory.runtime.registry import Catalog

    a = plain_pack("a")
    impostor = plain_pack("b")
    impostor.verbs["ping"] = a.verbs["ping"]  # b claims a.ping
    with pytest.raises(PackLoadError, match="claimed by two packs: 'a' and 'b'"):
        Catalog([a, impostor])


def test_import_failure_is_reported_and_dependents_skipped() -> None:
    loaded = load_packs([("top", plain_pack("top", ("broken",))), ("other", plain_pack("other"))],
                        import_failures={"broken": "failed to import broken:pack: ImportError: no numpy"})
    assert names(loaded) == ["other"]
    assert "no numpy" in loaded.failed["broken"]
    assert "requires pack 'broken'" in loaded.failed["top"]


def test_dependent_of_broken_pack_reports_pack_unavailable_on_call() -> None:
    rt = open_test_runtime(plain_pack("other"), discover=False)
    rt.catalog.unavailable["broken"] = "failed to import"
    with pytest.raises(PackUnavailable, match="failed to import"):
        rt.call("broken.ping")


def test_select_and_disable() -> None:
    packs = [("a", plain_pack("a")), ("b", plain_pack("b")), ("c", plain_pack("c", ("a",)))]
    assert names(load_packs(packs, select=["a", "c"])) == ["a", "c"]
    assert names(load_packs(packs, disable=["b"])) == ["a", "c"]
    with pytest.raises(PackLoadError, match="'c' requires pack 'a', which is disabled"):
        load_packs(packs, disable=["a"])
    with pytest.raises(PackLoadError, match="no such pack is installed"):
        load_packs(packs, select=["zzz"])


def test_disable_through_environment_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PALIMPSEST_DISABLE_PACKS", "b")
    from palimpsest_memory.runtime import Runtime

    rt = Runtime.open(":memory:", packs=[plain_pack("a"), plain_pack("b")])
    assert list(rt.catalog.packs) == ["a"]
    with pytest.raises(PackUnavailable, match="disabled"):
        rt.call("b.ping")


def test_misspelled_hook_fails_loudly() -> None:
    pack = plain_pack("a")
    hooks = types.SimpleNamespace()

    @hookimpl
    def palimpsest_dispach(call):  # type: ignore[no-untyped-def]  # misspelled on purpose
        return None

    hooks.palimpsest_dispach = palimpsest_dispach
    pack.add_hooks(hooks)
    with pytest.raises(PackLoadError, match="'a' implements an unknown hook"):
        load_packs([("a", pack)])


def test_a_pack_can_declare_hookspecs_that_others_implement() -> None:
    from palimpsest_memory.runtime import hookspec

    specs = types.ModuleType("specs")

    @hookspec
    def register_colours() -> list[str]:
        """Colours a pack offers."""

    specs.register_colours = register_colours
    owner = Pack("owner", version="1.0", hookspecs=specs)

    @owner.verb("colours", act=Act.ASSERTIVE)
    def colours(params: Empty, ctx: Context) -> Count:
        """How many colours are registered."""
        return Count(n=sum(len(x) for x in ctx.hook("register_colours")))

    impl = types.SimpleNamespace(register_colours=hookimpl(lambda: ["red", "blue"]))
    plugin = plain_pack("plugin", ("owner",))
    plugin.add_hooks(impl)
    rt = open_test_runtime(owner, plugin)
    assert rt.call("owner.colours").n == 2
