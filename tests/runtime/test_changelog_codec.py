"""The change log's codec (runtime/changelog.py, ADR 0016): every kind of value a pack records comes back equal and
of the same type, nested in any order; classes outside the loaded packs and unknown tags are refused."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any, NamedTuple

import numpy as np
import pytest

from palimpsest_memory.runtime import changelog


class Pair(NamedTuple):
    a: int
    b: Any


@dataclass(frozen=True)
class Inner:
    x: tuple[int, ...]
    when: datetime | None = None


@dataclass
class Outer:
    items: list[Inner]
    by: dict[Any, Any]
    late: int = field(init=False, default=0)


@dataclass(frozen=True)
class Empty:
    pass


CODEC = changelog.Codec([__name__])


def same(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        if a.dtype == object:
            return b.dtype == object and a.shape == b.shape and same(a.tolist(), b.tolist())
        return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (Inner, Outer)):
        return same(vars(a) if not hasattr(a, "__slots__") else {}, vars(b)) and a == b
    if isinstance(a, float) and a != a:
        return b != b
    return a == b


VALUES = [
    None, True, 3, -2.5, float("nan"), float("inf"), "text with \"quotes\" and $signs", [1, "a", None],
    (1, (2, [3, (4,)])), {"$not_a_tag": 1, 2: "b", (1, "x"): [None]}, {1, 2}, frozenset({"a"}),
    b"\x00\xffbytes", datetime(2026, 3, 2, 10, 0, 0, 5), date(2026, 1, 1), timedelta(seconds=90.5),
    np.arange(6, dtype=np.int64).reshape(2, 3), np.array([1.5, np.nan], dtype=np.float16),
    np.array(["2026-03-02T10:00", "NaT"], dtype="datetime64[us]"), np.array(["a", None, ("t",)], dtype=object),
    np.int32(7), np.float32(0.25), Pair(1, (2, 3)), Inner((1, 2)), Empty(),
    {"k": [Inner((3,), datetime(2026, 1, 1)), Pair(2, {"z": (1,)})]},
]


@pytest.mark.parametrize("value", VALUES, ids=[type(v).__name__ + str(i) for i, v in enumerate(VALUES)])
def test_every_kind_of_value_comes_back_equal_and_of_its_type(value: Any) -> None:
    back = CODEC.decode(CODEC.encode(value))
    assert same(value, back) or (isinstance(value, (set, frozenset)) and value == back and type(value) is type(back))


def test_dataclasses_nest_and_keep_fields_init_does_not_take() -> None:
    obj = Outer([Inner((1,)), Inner((), datetime(2026, 3, 2))], {(1, 2): Inner((5,)), "s": {3, 4}})
    obj.late = 9
    back = CODEC.decode(CODEC.encode(obj))
    assert back == obj and back.late == 9 and isinstance(back.by[(1, 2)], Inner) and back.by["s"] == {3, 4}


def test_foreign_classes_and_unknown_tags_are_refused() -> None:
    other = changelog.Codec(["somewhere.else"])
    with pytest.raises(changelog.CodecError, match="not in a loaded pack"):
        other.decode(CODEC.encode(Inner((1,))))
    with pytest.raises(changelog.CodecError, match="unknown tag"):
        CODEC.decode(json.dumps({"$zz": 1}))
    with pytest.raises(changelog.CodecError, match="cannot be logged"):
        CODEC.encode(object())
