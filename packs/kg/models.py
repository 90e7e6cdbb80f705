"""Shared value types and the fact / entity params and results of the kg pack."""
from __future__ import annotations

import re
import unicodedata
from datetime import date, datetime, timezone
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, Field, ValidationInfo, WithJsonSchema
from pydantic import field_validator

from palimpsest_memory.runtime.params import NamespacedParams, Params

KIND_RE = re.compile(r"^[a-z][a-z0-9_]*$")
PREDICATE_RE = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
NODE_RE = re.compile(r"^(e|f):[0-9]{1,18}$|^m:[A-Za-z0-9_.:\-]{1,128}$")
_DATE_RE = re.compile(r"^(-?\d{1,4})(?:-(\d{1,2}))?(?:-(\d{1,2}))?$")
_WS = re.compile(r"\s+")



def parse_when(value: Any) -> Any:
    """ISO date/datetime, 'YYYY-MM', or a bare year ('2021' or 2021) → naive UTC datetime."""
    if value is None or isinstance(value, datetime):
        if isinstance(value, datetime) and value.tzinfo is not None:
            return value.astimezone(timezone.utc).replace(tzinfo=None)
        return value
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day)
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str):
        raise ValueError("a time must be an ISO date or datetime string, 'YYYY-MM', or a year")
    text = value.strip()
    m = _DATE_RE.match(text)
    try:
        if m:
            year, month, day = int(m.group(1)), int(m.group(2) or 1), int(m.group(3) or 1)
            return datetime(year, month, day)
        dt = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise ValueError(f"cannot read {value!r} as a time (use an ISO date/datetime, 'YYYY-MM' or a year)") from None
    return dt.astimezone(timezone.utc).replace(tzinfo=None) if dt.tzinfo else dt


When = Annotated[datetime, BeforeValidator(parse_when), WithJsonSchema(
    {"type": "string", "description": "ISO date or datetime, 'YYYY-MM', or a bare year such as '2021'"})]


def clean_text(value: str) -> str:
    """NFKC, trimmed, inner white space collapsed; blank is an error."""
    text = _WS.sub(" ", unicodedata.normalize("NFKC", value)).strip()
    if not text:
        raise ValueError("must not be blank")
    return text


def name_key(text: str) -> str:
    """The case-insensitive lookup key of a name or alias."""
    return _WS.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()


def _check_kind(value: str) -> str:
    if not KIND_RE.match(value):
        raise ValueError("a kind must be lower snake_case: ^[a-z][a-z0-9_]*$ (person, org, place, …)")
    return value


def _check_predicate(value: str) -> str:
    value = value.strip()
    if not PREDICATE_RE.match(value):
        raise ValueError("a predicate must be lower snake_case, 1-64 characters: ^[a-z][a-z0-9_]*$ (works_at)")
    return value


def _check_node(value: str) -> str:
    if not NODE_RE.match(value):
        raise ValueError("a node id is 'e:<entity id>', 'f:<fact id>' or 'm:<memory note id>'")
    return value


def _scalar_to_str(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    return value


Name = Annotated[str, AfterValidator(clean_text)]
Kind = Annotated[str, AfterValidator(_check_kind)]
Predicate = Annotated[str, AfterValidator(_check_predicate)]
NodeId = Annotated[str, AfterValidator(_check_node)]
SourceId = Annotated[str, BeforeValidator(_scalar_to_str), AfterValidator(clean_text)]
ObjectText = Annotated[str, BeforeValidator(_scalar_to_str), AfterValidator(clean_text)]


# -- entities --------------------------------------------------------------------------------------------------
class EntityOut(BaseModel):
    id: int
    node_id: str = Field(description="'e:<id>', the entity's node id for edges")
    name: str
    kind: str
    aliases: list[str] = []


class EntityRef(BaseModel):
    id: int
    name: str


# -- facts -------------------------------------------------------------------------------------------------------
def valid_to_after_start(cls: Any, value: datetime | None, info: ValidationInfo) -> datetime | None:
    """A validity window must not end before (or when) it starts (facts and edges alike)."""
    start = info.data.get("valid_from")
    if value is not None and start is not None and value <= start:
        raise ValueError("valid_to must be after valid_from")
    return value


class FactInput(Params):
    """One fact: subject, predicate, object, and when it held."""

    subject: Name = Field(description="Who or what the fact is about, e.g. 'Ada' or 'Orion' (created if new).")
    predicate: Predicate = Field(description="The relation, in lower_snake_case, e.g. 'works_at', "
                                             "'uses_database', 'lives_in'.")
    object: ObjectText = Field(description="The value: another person, project or thing, e.g. 'Acme' (created if "
                                           "new), or plain text when literal is true.")
    literal: bool = Field(False, description="True when the object is a plain value (a number, date or text such as"
                                             " '42' or 'blue') rather than a person, project or thing.")
    valid_from: When | None = Field(None, description="When it became true, e.g. '2023-06-01', '2023-06' or "
                                                      "'2023'. Leave out if unknown.")
    valid_to: When | None = Field(None, description="When it stopped being true, if known. Usually left out: the "
                                                    "next value ends it.")
    confidence: float | None = Field(None, ge=0, le=1, description="How sure you are, from 0 to 1 (default from "
                                                                   "config).")
    source_id: SourceId | None = Field(None, description="The note the fact comes from, as 'm:<note id>' (e.g. "
                                                         "'m:12'), so it can be traced back.")
    allow_coexisting: bool = Field(False, description="True when this value holds beside the current one instead "
                                                      "of replacing it (e.g. a second language someone speaks).")
    subject_kind: Kind | None = Field(None, description="What the subject is if it is new, e.g. 'person', "
                                                        "'project', 'organization'.")
    object_kind: Kind | None = Field(None, description="What the object is if it is new, e.g. 'person', 'project',"
                                                       " 'organization'.")

    _after_start = field_validator("valid_to")(valid_to_after_start)


class AssertFactParams(FactInput, NamespacedParams):
    """Record a fact that can change over time, as subject, predicate, object: ('Ada', 'works_at', 'Acme'). A new
    value for the same subject and predicate ends the old one where the new one starts, so the history of who
    worked where, or which database a project used, is kept."""


class AssertFactsParams(NamespacedParams):
    facts: list[FactInput] = Field(min_length=1, description="The facts, applied in order in one transaction.")


class FactOut(BaseModel):
    fact_id: int
    version_id: int
    subject: EntityRef
    predicate: str
    object: str = Field(description="The object entity's name, or the literal value")
    object_id: int | None = Field(description="The object entity's id; null for a literal")
    literal: bool
    valid_from: datetime | None
    valid_to: datetime | None
    recorded_at: datetime = Field(description="When the fact was first recorded")
    version_recorded_at: datetime = Field(description="When this version of it became our belief")
    retracted_at: datetime | None = Field(description="When the fact was retracted (null: not retracted)")
    confidence: float
    combined_confidence: float
    evidence_count: int
    source_id: str | None
    superseded_by: int | None
    coexisting: bool


class AssertOutcome(BaseModel):
    fact_id: int
    action: Literal["created", "evidence", "extended"] = Field(
        description="created a fact; added evidence to the matching fact; moved a matching fact's start earlier")
    superseded: list[int] = Field(description="fact ids whose valid time this assertion closed")


class AssertFactResult(BaseModel):
    fact: FactOut
    action: str
    superseded: list[FactOut]


class AssertFactsResult(BaseModel):
    outcomes: list[AssertOutcome]
    created: int
    evidence: int
    superseded: int


class RetractFactParams(NamespacedParams):
    fact_id: int = Field(description="The fact to retract.")
    reason: str | None = Field(None, max_length=1000, description="Why (kept in the log only).")


class RetractFactResult(BaseModel):
    fact: FactOut
    healed: list[int] = Field(description="facts whose end, inferred from the retracted fact, was recomputed")


class DefinePredicateParams(NamespacedParams):
    name: Predicate = Field(description="Predicate, lower snake_case.")
    cardinality: Literal["one", "many"] = Field(description="'one': a new object supersedes; 'many': values coexist.")
    description: str | None = Field(None, max_length=1000, description="What the predicate means.")


class PredicateOut(BaseModel):
    name: str
    cardinality: str
    description: str | None


class PredicatesParams(NamespacedParams):
    pass


class PredicatesResult(BaseModel):
    predicates: list[PredicateOut]
    default_cardinality: str
