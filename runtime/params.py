"""The one base of every verb's params: unknown fields are refused, and ``namespace`` is declared once."""
from __future__ import annotations

from typing import Optional

from pydantic import BaseModel, ConfigDict, Field

NAMESPACE_DOC = ("A separate memory space, e.g. one per user or team; leave it out to use the default one.")


class Params(BaseModel):
    """Params refuse unknown fields (the runtime requires it of every verb). Unstorable text and integers are
    refused by the runtime for every verb before a pack sees them."""

    model_config = ConfigDict(extra="forbid")


class NamespacedParams(Params):
    """Params of a verb that works in one namespace: ``namespace`` overrides the call's namespace."""

    namespace: Optional[str] = Field(None, description=NAMESPACE_DOC)
