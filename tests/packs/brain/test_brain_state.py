"""The brain's state is two mirrors fed only with committed changes (ADR 0010): the pending serves and the
bindings. The bindings mirror equals a fresh load after any mix of binds and unbinds, a rolled-back call
changes neither, and the brain uses none of the old after-commit paths."""
import re
from pathlib import Path

import pytest
from pydantic import BaseModel, ConfigDict

from brain_helpers import HASHING, NOW, Clock, pair, recall
from palimpsest_memory.packs.brain.state import BrainState
from palimpsest_memory.runtime import Act, Context, Pack


def fresh_digests(rt) -> dict:
    state = BrainState()
    for _, mirror in (("serves", state.serves), ("bindings", state.bindings)):
        rt.followers.load("brain", mirror)
    return {"serves": state.serves.digest(), "bindings": state.bindings.digest()}


def live_digests(rt) -> dict:
    st = rt.pack_state("brain")
    return {"serves": st.serves.digest(), "bindings": st.bindings.digest()}


def test_bindings_follow_binds_and_unbinds_and_equal_a_fresh_load(make_pal_runtime):
    rt = make_pal_runtime(config=HASHING, clock=Clock(NOW))
    pair(rt)
    steps = [("brain.profile", {"name": "recent"}), ("brain.profile", {"name": "old", "actor": "alice"}),
             ("brain.profile", {"name": "x", "actor": "bob", "namespace": "other"}),
             ("brain.unbind", {}), ("brain.profile", {"name": "recent", "actor": "alice"}),
             ("brain.unbind", {"actor": "bob", "namespace": "other"})]
    for verb, params in steps:
        rt.call(verb, params)
        assert live_digests(rt) == fresh_digests(rt)
    assert rt.pack_state("brain").bindings.profiles == {("default", "alice"): "recent"}
    rid = recall(rt, actor="alice").recall_id
    assert rt.pack_state("brain").serves.pending[rid].profile == "recent"
    assert rt.pack_state("brain").serves.pending[recall(rt, actor="carol").recall_id].profile == "default"


class Name(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str


class Nothing(BaseModel):
    ok: bool = True


def failing_pack() -> Pack:
    p = Pack("binder", version="0.0.1", requires=["brain"])

    @p.verb("bind_then_fail", act=Act.DECLARATION)
    def bind_then_fail(params: Name, ctx: Context) -> Nothing:
        """Bind a profile, then fail: the whole call rolls back."""
        ctx.call("brain.profile", {"name": params.name})
        raise RuntimeError("boom")

    return p


def test_a_rolled_back_binding_changes_no_mirror(make_pal_runtime):
    rt = make_pal_runtime(failing_pack(), discover=True, config=HASHING, clock=Clock(NOW))
    pair(rt)
    rid = recall(rt).recall_id
    before = dict(rt.pack_state("brain").bindings.profiles), dict(rt.pack_state("brain").serves.pending)
    with pytest.raises(Exception):
        rt.call("binder.bind_then_fail", {"name": "recent"})
    assert (dict(rt.pack_state("brain").bindings.profiles), dict(rt.pack_state("brain").serves.pending)) == before
    assert rt.pack_state("brain").serves.pending[rid].profile == "default"
    assert rt.store.con.execute("SELECT count(*) FROM brain.bindings").fetchone() == (0,)


def test_a_failed_flush_keeps_the_serves_pending(make_pal_runtime, monkeypatch):
    from palimpsest_memory.packs.brain import ledger

    rt = make_pal_runtime(config={"packs": {"memory": {"embedder": "hashing"}, "brain": {"serve_flush_every": 2}}},
                          clock=Clock(NOW))
    pair(rt)
    first = recall(rt).recall_id
    monkeypatch.setattr(ledger, "flush", lambda ctx: (_ for _ in ()).throw(OSError("disk full")))
    second = recall(rt).recall_id  # the subscriber's flush fails: logged, rolled back, nothing forgotten
    assert list(rt.pack_state("brain").serves.pending) == [first]  # the failed subscriber's own serve is lost
    monkeypatch.undo()
    assert rt.call("brain.flush_serves", {}, internal=True).flushed == 1
    assert rt.pack_state("brain").serves.pending == {} and second


def test_the_brain_uses_none_of_the_old_after_commit_paths():
    root = Path(__file__).resolve().parents[3] / "packs" / "brain"
    text = "\n".join(p.read_text(encoding="utf-8") for p in root.glob("*.py"))
    for old in ("on_commit", "palimpsest_dispatch", "palimpsest_close", "defer(", "getattr(ctx.state",
                "include_breakdown", "Strict", "NS_FIELD"):
        assert old not in text, old
    # the one kind of hook it implements: what it adds to the adapters (ADR 0035), none that runs after a commit
    implemented = re.findall(r"@hookimpl[^\n]*\ndef (\w+)", text)
    assert set(implemented) <= {"palimpsest_mcp_tools", "palimpsest_web_pages"}, implemented
