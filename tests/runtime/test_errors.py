"""One error hierarchy, one JSON shape, stable codes and exit codes (locked here)."""
import json

import pytest
from pydantic import BaseModel, ValidationError

from palimpsest_memory.runtime import errors

EXPECTED = {  # code, exit code, HTTP status: changing any of these breaks users' scripts
    "PalimpsestError": ("internal", 1, 500), "InvalidParams": ("invalid_params", 2, 400),
    "LimitExceeded": ("limit_exceeded", 2, 413), "NotFound": ("not_found", 3, 404),
    "VerbNotFound": ("verb_not_found", 3, 404), "Conflict": ("conflict", 4, 409),
    "Forbidden": ("forbidden", 4, 403), "ReadOnlyViolation": ("read_only_violation", 4, 403),
    "PackUnavailable": ("pack_unavailable", 5, 503), "PackLoadError": ("pack_load_error", 5, 500),
    "ConfigError": ("config_error", 5, 500), "StorageError": ("storage_error", 6, 500),
    "StoreUnavailable": ("store_unavailable", 6, 503),
    "DeadlineExceeded": ("deadline_exceeded", 6, 504), "InternalError": ("internal", 1, 500),
}


def test_every_error_is_locked_and_subclasses_the_base() -> None:
    assert {cls.__name__ for cls in errors.ALL_ERRORS} == set(EXPECTED)
    for cls in errors.ALL_ERRORS:
        assert issubclass(cls, errors.PalimpsestError)
        assert (cls.code, cls.exit_code, cls.http_status) == EXPECTED[cls.__name__], cls


@pytest.mark.parametrize("cls", errors.ALL_ERRORS)
def test_json_shape(cls) -> None:  # type: ignore[no-untyped-def]
    body = cls("it broke", verb="memory.recall", details={"k": 1}).to_dict()
    assert json.loads(json.dumps(body)) == body
    assert set(body) == {"ok", "error"} and body["ok"] is False
    assert body["error"] == {"code": cls.code, "message": "it broke", "verb": "memory.recall", "details": {"k": 1}}


def test_pydantic_errors_keep_field_paths() -> None:
    class Inner(BaseModel):
        n: int

    class Outer(BaseModel):
        items: list[Inner]

    with pytest.raises(ValidationError) as exc:
        Outer.model_validate({"items": [{"n": 1}, {"n": "x"}]})
    err = errors.from_validation_error(exc.value, verb="a.b")
    assert err.details["errors"][0]["loc"] == ["items", "1", "n"]
    assert "items.1.n" in err.message
