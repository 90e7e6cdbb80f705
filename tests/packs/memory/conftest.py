"""The memory tests' default runtime: installed packs, the hashing embedder, a settable clock at T0."""
import pytest
from store_support import HASHING, T0, Clock


@pytest.fixture
def clock() -> Clock:
    return Clock(T0)


@pytest.fixture
def rt(make_pal_runtime, clock):  # type: ignore[no-untyped-def]
    return make_pal_runtime(config=HASHING, clock=clock)
