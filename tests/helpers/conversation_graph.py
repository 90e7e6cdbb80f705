"""A generated conversation import whose graph has the shape of a real one (a LoCoMo conversation: every turn names
its speaker, so each speaker is a hub of `mentions` edges), plus a few facts and note links so that a relation
filter has something to choose between. Used by the graph verb's tests and the graph page's browser tests."""
from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

SCOPE = "chat-1"
SPEAKERS = ("Ada", "Bo")
TURNS = 120  # Ada says 60 of them; with Bo's turns that name her, her degree is well above any default N
BOTH_EVERY = 7  # every 7th turn also names the other speaker: notes of degree 2 (ranked above degree 1)
T0 = datetime(2026, 2, 1, 9, 0)


def conversation() -> dict[str, Any]:
    """memory.import_conversations' params: one conversation of TURNS turns between the two speakers."""
    notes = []
    for i in range(TURNS):
        who, other = SPEAKERS[i % 2], SPEAKERS[1 - i % 2]
        text = f"{who}: turn {i} about the garden plan" + (f", as {other} said" if i % BOTH_EVERY == 0 else "")
        notes.append({"content": text, "occurred_at": (T0 + timedelta(minutes=3 * i)).isoformat(),
                      "thread": "session_1", "key": f"gen:{SCOPE}:{i}"})
    return {"conversations": [{"scope": SCOPE, "speakers": list(SPEAKERS), "notes": notes}]}


def fill_graph(rt: Any, namespace: str | None = None) -> dict[str, Any]:
    """Import the conversation, then add facts (Ada knows Cy, Cy knows Dee) and two `supports` links between notes.
    Returns the node ids the tests look for."""
    ids = rt.call("memory.import_conversations", conversation(), namespace=namespace).ids
    rt.call("kg.define_predicate", {"name": "knows", "cardinality": "many"}, namespace=namespace)
    rt.call("kg.assert_facts", {"facts": [{"subject": "Ada", "predicate": "knows", "object": "Cy"},
                                          {"subject": "Cy", "predicate": "knows", "object": "Dee"}]},
            namespace=namespace)
    rt.call("memory.link_many", {"links": [{"source_id": ids[2], "target_id": ids[0], "relation": "supports"},
                                           {"source_id": ids[4], "target_id": ids[0], "relation": "supports"}]},
            namespace=namespace)
    ents = {e.name: e.node_id for e in rt.call("kg.entities", {"limit": 100}, namespace=namespace).entities}
    return {"notes": [f"m:{i}" for i in ids], "entities": ents}
