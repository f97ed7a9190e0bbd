"""Intentions: what a mind has committed to bring about, and where that commitment stands.

An intention is current state (its row changes), but every change bumps `version` and is told by
an event keyed by (intention, version), so the ledger keeps the whole story and a replayed change
adds nothing. The rules for moving between statuses live here, pure; the ledger applies them
under a row lock so concurrent writers take turns.

Subordinate intentions (waiting for an approval, a grant) point at their parent by `parent_id`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from enum import Enum, StrEnum, auto
from types import MappingProxyType
from typing import Annotated, Final

from pydantic import AwareDatetime, Field, JsonValue

from minds.domain.base import Model
from minds.domain.ledger import idempotency_key
from minds.domain.planning.views import IntentionKind

__all__ = [
    "ALLOWED_TRANSITIONS",
    "FINAL_STATUSES",
    "INTENTION_FORMED",
    "INTENTION_UPDATED",
    "LIVE_STATUSES",
    "UNSET",
    "IntentionKind",
    "IntentionRecord",
    "IntentionStatus",
    "Unset",
    "can_transition",
    "formed_payload",
    "intention_event_key",
    "intention_event_type",
    "intention_id",
    "moved_payload",
    "statuses_of",
    "transitioned",
    "updated",
]

Name = Annotated[str, Field(min_length=1, max_length=253)]
# The Plan resource references its intention by id in `spec.intention` (at most 128 characters).
IntentionId = Annotated[str, Field(min_length=1, max_length=128)]


class IntentionStatus(StrEnum):
    ACTIVE = "active"
    BLOCKED = "blocked"  # waiting on something outside the mind (an approval, a grant)
    SUSPENDED = "suspended"  # set aside (budget exhausted, inherited by a fork); resumable
    FULFILLED = "fulfilled"
    ABANDONED = "abandoned"
    # An action may or may not have happened (write-ahead row, no outcome) and it is not
    # repeated without verification: a person checks and releases.
    OUTCOME_UNVERIFIED = "outcome_unverified"

    @property
    def final(self) -> bool:
        return self in FINAL_STATUSES


FINAL_STATUSES: Final = frozenset({IntentionStatus.FULFILLED, IntentionStatus.ABANDONED})
LIVE_STATUSES: Final = frozenset(IntentionStatus) - FINAL_STATUSES


def statuses_of(
    status: IntentionStatus | Collection[IntentionStatus],
) -> frozenset[IntentionStatus]:
    """A filter's statuses: one, or any of several."""
    return frozenset({status} if isinstance(status, IntentionStatus) else status)


# Fulfilled and abandoned are final: a fulfilled intention that needs doing again is a new
# intention, and an abandoned one is never revived behind the ledger's back.
#
# Every live status may move to every other status, itself included (a blocked intention
# becomes blocked on a different approval: same status, new reason). Reconsideration maps its
# triggers (approval decided or expired, budget, failed expectation, world change, operator
# release) to block, suspend, resume, fulfil or abandon from wherever the intention stands:
# - active -> blocked (awaiting approval or access), suspended (budget), outcome_unverified
#   (interrupted non-idempotent action), fulfilled, abandoned (replan limit, no plan);
# - blocked -> active (approved), or any of the above when the wait ends otherwise;
# - suspended -> active (budget raised, released), or fulfilled when the world changed;
# - outcome_unverified -> active (a person verified and released), fulfilled (verified as
#   done), abandoned.
_TRANSITIONS: dict[IntentionStatus, frozenset[IntentionStatus]] = {
    **{status: frozenset(IntentionStatus) for status in LIVE_STATUSES},
    **{status: frozenset() for status in FINAL_STATUSES},
}
ALLOWED_TRANSITIONS: Final[Mapping[IntentionStatus, frozenset[IntentionStatus]]] = MappingProxyType(
    _TRANSITIONS
)


def can_transition(current: IntentionStatus, to: IntentionStatus) -> bool:
    """Whether an intention in `current` may move to `to`."""
    return to in ALLOWED_TRANSITIONS[current]


# Event types. Stored as text, so they need no migration; the per-status types are
# `intention_<status>` (intention_blocked, intention_fulfilled, ...).
INTENTION_FORMED: Final = "intention_formed"
INTENTION_UPDATED: Final = "intention_updated"


def intention_event_type(status: IntentionStatus) -> str:
    return f"intention_{status.value}"


def intention_event_key(intention: str, version: int) -> str:
    """The event of the change that produced `version`: one per version, so replays add none."""
    return idempotency_key("intention", intention, str(version))


def intention_id(*parts: str) -> str:
    """A deterministic intention id from what identifies it (a plan uid for the implicit
    intention of an operator-authored plan; parent, plan, step and approval for a subordinate),
    so forming it again after a crash finds the same row."""
    return "int-" + idempotency_key("intention", *parts)[:24]


class IntentionRecord(Model):
    """The current state of one intention (the `intentions` row)."""

    id: IntentionId
    namespace: Name
    mind: Name
    objective: Annotated[str, Field(min_length=1, max_length=500)]
    kind: IntentionKind
    status: IntentionStatus = IntentionStatus.ACTIVE
    reason: Annotated[str, Field(max_length=2000)] | None = None
    parent_id: IntentionId | None = None
    subject: Annotated[str, Field(max_length=500)] | None = None
    means_capability: Annotated[str, Field(max_length=128)] | None = None
    means_parameters: dict[str, JsonValue] | None = None
    requires_approval: bool = False
    plan: Annotated[str, Field(max_length=253)] | None = None
    replans: Annotated[int, Field(ge=0)] = 0
    failed_strategies: list[str] = Field(default_factory=list)
    version: Annotated[int, Field(ge=1)] = 1
    created_at: AwareDatetime
    updated_at: AwareDatetime


def transitioned(
    record: IntentionRecord, to: IntentionStatus, reason: str | None, at: AwareDatetime
) -> IntentionRecord | None:
    """The record after moving to `to`: the same record when it already is there for the same
    reason (a replay), None when the move is not allowed."""
    if record.status is to and record.reason == reason:
        return record
    if not can_transition(record.status, to):
        return None
    return record.model_copy(
        update={"status": to, "reason": reason, "version": record.version + 1, "updated_at": at}
    )


class Unset(Enum):
    """Marks an argument that was not given, where None is a meaningful value."""

    UNSET = auto()


UNSET: Final = Unset.UNSET


def updated(
    record: IntentionRecord,
    *,
    plan: str | Unset | None = UNSET,
    replans: int | Unset = UNSET,
    failed_strategies: Sequence[str] | Unset = UNSET,
    at: AwareDatetime,
) -> IntentionRecord:
    """The record with the given fields changed; the same record if nothing changes (a replay),
    otherwise one version later."""
    changes: dict[str, object] = {}
    if plan is not UNSET and plan != record.plan:
        changes["plan"] = plan
    if replans is not UNSET and replans != record.replans:
        if replans < 0:
            raise ValueError("replans cannot be negative")
        changes["replans"] = replans
    if failed_strategies is not UNSET and list(failed_strategies) != record.failed_strategies:
        changes["failed_strategies"] = list(failed_strategies)
    if not changes:
        return record
    changes.update(version=record.version + 1, updated_at=at)
    return record.model_copy(update=changes)


def formed_payload(record: IntentionRecord) -> dict[str, JsonValue]:
    """What the ledger's ``intention_formed`` row says of a new intention: all it is, but what
    the row names by itself (its id, namespace, mind and times)."""
    dumped: dict[str, JsonValue] = record.model_dump(
        mode="json", exclude={"id", "namespace", "mind", "created_at", "updated_at"}
    )
    return dumped


def moved_payload(before: IntentionRecord, after: IntentionRecord) -> dict[str, JsonValue]:
    """What the ledger's row of an intention's move says: where from and to, and why."""
    return {
        "from": before.status.value,
        "to": after.status.value,
        "reason": after.reason,
        "version": after.version,
        "parent_id": after.parent_id,
        "plan": after.plan,
    }
