"""Every error palimpsest raises, in one file, under one base class.

Each class carries a stable machine ``code``, the CLI ``exit_code`` and the HTTP ``http_status``; every adapter
turns an error into the one JSON shape returned by :meth:`PalimpsestError.to_dict` and nothing else.
"""
from __future__ import annotations

from typing import Any


class PalimpsestError(Exception):
    """Base of every palimpsest error. Subclasses only change code, exit code, status and wording."""

    code = "internal"
    exit_code = 1
    http_status = 500

    def __init__(self, message: str, *, verb: str | None = None, details: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.verb = verb
        self.details = details if details is not None else {}

    def to_dict(self) -> dict[str, Any]:
        """The one error shape every adapter returns: ``{"ok": false, "error": {...}}``."""
        return {
            "ok": False,
            "error": {"code": self.code, "message": self.message, "verb": self.verb, "details": self.details},
        }

    def __str__(self) -> str:
        return f"{self.message} [{self.code}]" if self.verb is None else f"{self.verb}: {self.message} [{self.code}]"


class InvalidParams(PalimpsestError):
    """The params (or a value inside them) are wrong. ``details["errors"]`` keeps pydantic's field paths."""

    code = "invalid_params"
    exit_code = 2
    http_status = 400


class LimitExceeded(InvalidParams):
    """A documented cap (content size, batch size, query length, depth, …) was exceeded."""

    code = "limit_exceeded"
    http_status = 413


class NotFound(PalimpsestError):
    """A thing named in the params (a fact, a note, a recall id) does not exist in this namespace."""

    code = "not_found"
    exit_code = 3
    http_status = 404


class VerbNotFound(NotFound):
    """No loaded pack registers this verb."""

    code = "verb_not_found"


class Conflict(PalimpsestError):
    """The call contradicts stored state (an idempotency key replayed with other content, …)."""

    code = "conflict"
    exit_code = 4
    http_status = 409


class Forbidden(PalimpsestError):
    """The caller may not reach this verb: a sub-handler from outside its pack, a pack not in ``requires``."""

    code = "forbidden"
    exit_code = 4
    http_status = 403


class ReadOnlyViolation(Forbidden):
    """An assertive (read-only) verb tried to change the store; the runtime refused and rolled back."""

    code = "read_only_violation"


class PackUnavailable(PalimpsestError):
    """The verb's pack is known but not loaded (disabled, failed to import, or missing a requirement)."""

    code = "pack_unavailable"
    exit_code = 5
    http_status = 503


class PackLoadError(PalimpsestError):
    """Packs cannot be assembled: missing requirement, cycle, duplicate verb, bad entry point, bad hook."""

    code = "pack_load_error"
    exit_code = 5
    http_status = 500


class ConfigError(PalimpsestError):
    """The configuration (default.toml, user file or environment) is invalid."""

    code = "config_error"
    exit_code = 5
    http_status = 500


class StorageError(PalimpsestError):
    """The database cannot be opened, migrated, or written (locked, newer schema, corrupt)."""

    code = "storage_error"
    exit_code = 6
    http_status = 500


class StoreUnavailable(StorageError):
    """The store cannot be reached now (a PostgreSQL server restarting, a network cut), or this process's view of
    it is older than ``runtime.max_staleness_seconds``. Retryable: the same process succeeds once the store is back
    (it reconnects by itself, with backoff). ``details.retryable`` is true; ``details.retry_after_seconds`` says
    when the next reconnect is due. A write that failed this way at COMMIT has an unknown outcome
    (``details.outcome == "unknown"``): retry it with the same idempotency key."""

    code = "store_unavailable"
    http_status = 503


class DeadlineExceeded(PalimpsestError):
    """A call ran past its deadline and was stopped; nothing it did was kept."""

    code = "deadline_exceeded"
    exit_code = 6
    http_status = 504


class InternalError(PalimpsestError):
    """A bug: a handler raised something that is not a palimpsest error, or returned an invalid result."""

    code = "internal"
    exit_code = 1
    http_status = 500


ALL_ERRORS: tuple[type[PalimpsestError], ...] = (
    PalimpsestError, InvalidParams, LimitExceeded, NotFound, VerbNotFound, Conflict, Forbidden,
    ReadOnlyViolation, PackUnavailable, PackLoadError, ConfigError, StorageError, StoreUnavailable, DeadlineExceeded,
    InternalError,
)


def from_validation_error(exc: Any, *, verb: str | None, what: str = "params") -> InvalidParams:
    """Convert a pydantic ValidationError into InvalidParams, keeping each error's field path."""
    errors = [
        {"loc": [str(p) for p in e.get("loc", ())], "msg": e.get("msg", ""), "type": e.get("type", "")}
        for e in exc.errors(include_url=False, include_input=False)
    ]
    first = errors[0] if errors else {"loc": [], "msg": str(exc)}
    where = ".".join(first["loc"]) or what
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return InvalidParams(f"invalid {what}: {where}: {first['msg']}{more}", verb=verb, details={"errors": errors})
