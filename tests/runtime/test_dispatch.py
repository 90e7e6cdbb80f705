"""Dispatch: validation, one transaction per call, read-only assertive verbs, visibility, the dispatch hook."""
import pytest
from runtime_fakes import Recorder, caller_pack, store_pack

from palimpsest_memory.runtime import errors
from palimpsest_memory.runtime.testing import open_test_runtime


@pytest.fixture
def rt(tmp_path):  # type: ignore[no-untyped-def]
    runtime = open_test_runtime(store_pack(tmp_path))
    yield runtime
    runtime.close()


def count(rt) -> int:  # type: ignore[no-untyped-def]
    return rt.call("store.count").n


def test_dict_or_model_in_validated_model_out(rt) -> None:  # type: ignore[no-untyped-def]
    from runtime_fakes import TextParams

    assert rt.call("store.add", {"text": "a"}).n == 1
    assert rt.call("store.add", TextParams(text="b", count=2)).n == 3


def test_invalid_params_keep_field_paths_and_write_nothing(rt) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(errors.InvalidParams) as err:
        rt.call("store.add", {"text": "", "count": 9, "colour": "red"})
    locs = [e["loc"] for e in err.value.details["errors"]]
    assert ["text"] in locs and ["count"] in locs and ["colour"] in locs
    assert err.value.exit_code == 2 and err.value.verb == "store.add"
    assert count(rt) == 0


def test_params_must_be_an_object(rt) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(errors.InvalidParams, match="JSON object"):
        rt.call("store.add", ["text"])  # type: ignore[arg-type]


def test_error_in_handler_rolls_back_the_whole_call(rt) -> None:  # type: ignore[no-untyped-def]
    rt.call("store.add", {"text": "kept"})
    with pytest.raises(errors.InternalError, match="boom after writing") as err:
        rt.call("store.add_then_fail", {"text": "lost"})
    assert err.value.verb == "store.add_then_fail"
    assert count(rt) == 1


def test_invalid_result_is_an_internal_error_and_rolls_back(rt) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(errors.InternalError, match="invalid Count"):
        rt.call("store.add_bad_result", {"text": "lost"})
    assert count(rt) == 0


def test_assertive_verb_cannot_write_and_store_is_unchanged(rt) -> None:  # type: ignore[no-untyped-def]
    rt.call("store.add", {"text": "x"})
    before = rt.store.con.execute("SELECT list(text ORDER BY text) FROM store.rows").fetchone()
    with pytest.raises(errors.ReadOnlyViolation, match="INSERT"):
        rt.call("store.sneaky_count")
    assert rt.store.con.execute("SELECT list(text ORDER BY text) FROM store.rows").fetchone() == before


def test_assertive_verb_cannot_call_a_commissive_verb(rt) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(errors.ReadOnlyViolation, match="cannot call commissive"):
        rt.call("store.sneaky_delegate")
    assert count(rt) == 0


def test_verbs_cannot_control_transactions(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from runtime_fakes import Count, Empty

    from palimpsest_memory.runtime import Act, Pack

    pack = Pack("tx", version="1.0")

    @pack.verb("commit_early", act=Act.COMMISSIVE)
    def commit_early(params: Empty, ctx) -> Count:  # type: ignore[no-untyped-def]
        """Tries to commit behind the runtime's back."""
        ctx.db.execute("COMMIT")
        return Count(n=0)

    rt = open_test_runtime(pack)
    with pytest.raises(errors.ReadOnlyViolation, match="transactions"):
        rt.call("tx.commit_early")


def test_unknown_verb(rt) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(errors.VerbNotFound) as err:
        rt.call("store.nope")
    assert "store.add" in err.value.details["known"]


def test_subhandler_needs_internal_from_outside_but_not_from_its_pack(rt) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(errors.Forbidden, match="internal=True"):
        rt.call("store.upper", {"text": "abc"})
    assert rt.call("store.upper", {"text": "abc"}, internal=True).n == 3
    assert rt.call("store.via_upper", {"text": "abcd"}).n == 4


def test_cross_pack_calls_follow_requires(tmp_path) -> None:  # type: ignore[no-untyped-def]
    store = store_pack(tmp_path)
    allowed = open_test_runtime(store, caller_pack("store.add", requires=("store",)))
    assert allowed.call("caller.relay", {"text": "hi"}).n == 1

    stranger = open_test_runtime(store_pack(tmp_path), caller_pack("store.add", requires=()))
    with pytest.raises(errors.Forbidden, match="does not require pack 'store'"):
        stranger.call("caller.relay", {"text": "hi"})

    peeker = open_test_runtime(store_pack(tmp_path), caller_pack("store.upper", requires=("store",)))
    with pytest.raises(errors.Forbidden, match="sub-handler"):
        peeker.call("caller.relay", {"text": "hi"})


def test_nested_failure_rolls_back_the_outer_write(tmp_path) -> None:  # type: ignore[no-untyped-def]
    rt = open_test_runtime(store_pack(tmp_path), caller_pack("store.add_then_fail", requires=("store",)))
    with pytest.raises(errors.InternalError):
        rt.call("caller.relay", {"text": "gone"})
    assert rt.call("store.count").n == 0


def test_dispatch_wrapper_observes_calls(tmp_path) -> None:  # type: ignore[no-untyped-def]
    store = store_pack(tmp_path)
    recorder = Recorder()
    store.add_hooks(recorder)
    rt = open_test_runtime(store)
    assert rt.call("store.via_upper", {"text": "abc"}).n == 3
    assert ("store.via_upper", 0, "before") in recorder.seen
    assert ("store.upper", 1, "after") in recorder.seen
    assert recorder.seen.index(("store.upper", 1, "after")) < recorder.seen.index(("store.via_upper", 0, "after"))


def test_namespace_from_call_or_params_is_validated(rt) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(errors.InvalidParams, match="namespace"):
        rt.call("store.count", namespace="bad namespace!")


def test_closed_runtime_is_a_storage_error(tmp_path) -> None:  # type: ignore[no-untyped-def]
    rt = open_test_runtime(store_pack(tmp_path))
    rt.close()
    with pytest.raises(errors.StorageError, match="closed"):
        rt.call("store.count")


def _nested(levels: int) -> dict:
    deep: dict = {}
    node = deep
    for _ in range(levels):
        node["x"] = {}
        node = node["x"]
    return deep


@pytest.mark.parametrize("params,loc,msg", [
    ({"text": "a\ud800b"}, ["text"], "lone surrogate"),
    ({"text": "ok", "count": 2 ** 64}, ["count"], "64-bit"),
    ({"text": "ok", "extra": _nested(100)}, ["extra"], "levels deep"),
])
def test_hostile_input_is_refused_before_any_pack_sees_it(rt, params, loc, msg) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(errors.InvalidParams, match=msg) as err:
        rt.call("store.add", params)
    assert err.value.details["errors"][0]["loc"][: len(loc)] == loc
    assert count(rt) == 0


def test_a_model_instance_from_outside_is_checked_too(rt) -> None:  # type: ignore[no-untyped-def]
    from runtime_fakes import TextParams

    with pytest.raises(errors.InvalidParams, match="lone surrogate"):
        rt.call("store.add", TextParams.model_construct(text="a\ud800", count=1))
    assert count(rt) == 0


def _no_transaction_open(rt) -> bool:  # type: ignore[no-untyped-def]
    import duckdb

    try:
        rt.store.con.execute("COMMIT")  # DuckDB refuses COMMIT when no transaction is active
    except duckdb.Error as exc:
        return "no transaction is active" in str(exc)
    return False


def test_every_call_leaves_no_transaction_open(rt) -> None:  # type: ignore[no-untyped-def]
    """The transaction begins at a call's first statement (a call served from memory runs no SQL at all) and
    whatever began is always closed: after a write, a read, a refused write and a failed write."""
    from runtime_fakes import plain_pack

    rt.call("store.add", {"text": "x"})
    assert _no_transaction_open(rt)
    rt.call("store.count")
    assert _no_transaction_open(rt)
    with pytest.raises(errors.ReadOnlyViolation):
        rt.call("store.sneaky_count")
    assert _no_transaction_open(rt)
    with pytest.raises(errors.InternalError):
        rt.call("store.add_then_fail", {"text": "lost"})
    assert _no_transaction_open(rt) and count(rt) == 1
    with open_test_runtime(plain_pack("quiet")) as other:
        other.call("quiet.ping")
        assert _no_transaction_open(other)


def test_a_call_names_its_namespace_once(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from pydantic import BaseModel

    from palimpsest_memory.runtime import Act, Context, NamespacedParams, Pack

    pack = Pack("nsp", version="1.0")

    class Where(NamespacedParams):
        pass

    class Seen(BaseModel):
        seen: str

    @pack.verb("where", act=Act.ASSERTIVE)
    def where(params: Where, ctx: Context) -> Seen:
        """Which namespace am I in?"""
        return Seen(seen=ctx.namespace)

    with open_test_runtime(pack) as rt:
        assert rt.call("nsp.where", {"namespace": "bob"}).seen == "bob"
        assert rt.call("nsp.where", {}, namespace="alice").seen == "alice"
        assert rt.call("nsp.where", {"namespace": "alice"}, namespace="alice").seen == "alice"
        with pytest.raises(errors.InvalidParams, match="two namespaces"):
            rt.call("nsp.where", {"namespace": "bob"}, namespace="alice")
