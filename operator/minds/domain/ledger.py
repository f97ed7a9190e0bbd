"""Records of the ledger: what happened and what was chosen, as pure values.

The ledger is append-only and every write carries a deterministic idempotency key, so replaying a
transition after a crash never duplicates a row. The key is derived from what identifies the
transition (for example plan uid + step + attempt + transition), never from the clock or a random
source. Secrets and personal data never reach the ledger unmasked: the ledger adapter passes
every payload, spec and parameter set through `mask_secrets`, free-text columns (an outcome's
summary and error, evidence notes, procedures) through `mask_note` and an outcome's output
through `mask_json`: all three apply the rules of `minds.domain.masking`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any, Final

from pydantic import AwareDatetime, Field, JsonValue, field_validator

from minds.domain.base import Model
from minds.domain.masking import MASK, is_secret_key, mask_json, mask_mapping, mask_text

__all__ = [
    "IDEMPOTENCY_KEY_LENGTH",
    "MASK",
    "DecisionRecord",
    "EventRecord",
    "EventType",
    "MindChange",
    "MindRecord",
    "MindUpsert",
    "SubjectRef",
    "idempotency_key",
    "is_secret_key",
    "mask_json",
    "mask_note",
    "mask_secrets",
]

# 32 hex characters are 128 bits of sha256: collisions are out of reach for any ledger we will
# ever hold, and the key still fits comfortably in an index.
IDEMPOTENCY_KEY_LENGTH: Final = 32

# Unit separator: cannot appear in Kubernetes names, uids or our transition names, so joining
# on it keeps ("a", "bc") and ("ab", "c") apart.
_PART_SEPARATOR: Final = "\x1f"

EVENT_TYPE_PATTERN: Final = r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$"


class EventType(StrEnum):
    """Kinds of ledger events. Values are stored as text, so adding members needs no migration."""

    MIND_REGISTERED = "mind_registered"
    MIND_UPDATED = "mind_updated"
    MIND_DELETED = "mind_deleted"
    #: An irrevocable commitment of an earlier Mind object of the name binds a new one.
    PROMISE_KEPT = "promise_kept"
    PLAN_VALIDATED = "plan_validated"
    PLAN_DRAFTED = "plan_drafted"


def idempotency_key(*parts: str) -> str:
    """A deterministic key for one ledger write, from the parts that identify the transition.

    The same parts always give the same key, across processes and releases; different parts give
    different keys (up to a 128-bit hash collision). Empty parts are allowed and count.
    """
    if not parts:
        raise ValueError("idempotency_key needs at least one part")
    for part in parts:
        if not isinstance(part, str):
            raise TypeError(f"idempotency_key parts must be str, got {type(part).__name__}")
        if _PART_SEPARATOR in part:
            # Allowing it would let two different part lists join to the same string.
            raise ValueError("idempotency_key parts must not contain the unit separator U+001F")
    # Prefix the count so ("a",) and ("a", "") differ even though their joins would not.
    joined = f"{len(parts)}{_PART_SEPARATOR}" + _PART_SEPARATOR.join(parts)
    # surrogatepass: any str, even one holding a lone surrogate, encodes one-to-one; for
    # ordinary text it is plain UTF-8.
    encoded = joined.encode("utf-8", "surrogatepass")
    return hashlib.sha256(encoded).hexdigest()[:IDEMPOTENCY_KEY_LENGTH]


def mask_secrets(payload: Mapping[str, JsonValue]) -> dict[str, JsonValue]:
    """A copy of the payload fit for the ledger: secret keys' values replaced by `MASK`, and
    identifiers and secrets inside free text masked, at any depth (see `minds.domain.masking`)."""
    return mask_mapping(payload)


def mask_note(text: str) -> str:
    """Free text bound for its own ledger column (a summary, a note), masked."""
    return mask_text(text)[0]


Name = Annotated[str, Field(min_length=1, max_length=253)]


class SubjectRef(Model):
    """What an event is about: a Kubernetes object (or a ledger entity) by kind, name and uid."""

    kind: Name
    name: Name
    # Absent when the subject has no uid yet, or is not a Kubernetes object.
    uid: str | None = None


class EventRecord(Model):
    """One row of the append-only `events` table.

    `id` and `recorded_at` are assigned by the database: they are None on a record that has not
    been written yet.
    """

    mind: Name
    namespace: Name
    type: Annotated[str, Field(pattern=EVENT_TYPE_PATTERN, max_length=100)]
    subject: SubjectRef
    payload: dict[str, JsonValue] = Field(default_factory=dict)
    occurred_at: AwareDatetime
    idempotency_key: Annotated[str, Field(min_length=1, max_length=200)]
    id: int | None = None
    recorded_at: AwareDatetime | None = None

    @field_validator("type", mode="before")
    @classmethod
    def _plain_type(cls, value: object) -> object:
        # Store the enum's value, never its repr, whatever the caller passed.
        return value.value if isinstance(value, EventType) else value


class MindChange(StrEnum):
    """What recording an observed Mind did to its current-state row."""

    REGISTERED = "registered"  # first seen, or seen again under a new uid (deleted, re-created)
    UPDATED = "updated"  # newer generation or a different spec
    UNCHANGED = "unchanged"  # a replay, or a stale observation older than the stored one

    @property
    def event_type(self) -> EventType | None:
        """The event to append for this change; None when nothing changed."""
        if self is MindChange.REGISTERED:
            return EventType.MIND_REGISTERED
        if self is MindChange.UPDATED:
            return EventType.MIND_UPDATED
        return None


class MindRecord(Model):
    """The current-state row for one Mind in the `minds` table (not append-only)."""

    namespace: Name
    name: Name
    uid: str
    generation: int = Field(ge=0)
    spec: dict[str, JsonValue] = Field(default_factory=dict)
    registered_at: AwareDatetime
    updated_at: AwareDatetime
    deleted_at: AwareDatetime | None = None

    @property
    def deleted(self) -> bool:
        return self.deleted_at is not None


class MindUpsert(Model):
    """The mind row after recording an observation, and what recording it changed."""

    record: MindRecord
    change: MindChange


@dataclass(frozen=True)
class DecisionRecord:
    """A row of ``volition_decisions``: one choice of a mind's volition, as it was recorded."""

    id: int
    namespace: str
    mind: str
    kind: str
    outcome: str
    subjects: dict[str, Any]
    data: dict[str, Any]
    decided_at: datetime
