"""Capacity and lapse: which intentions take up the mind's room, and when a waiting one ends.

A mind forms at most `capacity` top-level intentions that can act (`ACTING`: active). One that
waits (blocked on a person, suspended by a budget, a dream, inherited by a fork) holds no room:
three escalated workloads do not stop a mind from acting on a fourth. It still holds its
subject, so formation does not start a second intention about the same workload.

A waiting intention does not wait forever. A top-level intention that has been blocked or
suspended for `LAPSE_AFTER` without any change lapses: it is abandoned, with a reconsideration
decision that says so, and settlement then suppresses its want and remembers what failed.
An intention whose outcome is unverified never lapses: a person must say whether the act
happened before anything about it may be tried again.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Final, NamedTuple

from minds.domain.intentions import IntentionRecord, IntentionStatus, transitioned
from minds.domain.volition.decisions import DecisionKind, VolitionDecision

__all__ = ["ACTING", "LAPSE_AFTER", "LAPSING", "Lapsed", "acting", "lapse"]

#: Statuses that take up capacity: an intention that can act now.
ACTING: Final = frozenset({IntentionStatus.ACTIVE})
#: Statuses that lapse when nothing changes for `LAPSE_AFTER`.
LAPSING: Final = frozenset({IntentionStatus.BLOCKED, IntentionStatus.SUSPENDED})
#: A day: longer than any approval's default lifetime and a night's on-call, so a person has had
#: their chance to answer; short enough that a forgotten escalation does not hold its subject
#: for ever.
LAPSE_AFTER: Final = timedelta(hours=24)


class Lapsed(NamedTuple):
    intention: IntentionRecord
    decision: VolitionDecision


def acting(intentions: Iterable[IntentionRecord]) -> int:
    """How many top-level intentions take up capacity."""
    return sum(1 for i in intentions if i.status in ACTING and i.parent_id is None)


def lapse(intention: IntentionRecord, now: datetime) -> Lapsed | None:
    """The intention abandoned when it has waited `LAPSE_AFTER`; None otherwise."""
    if intention.status not in LAPSING or intention.parent_id is not None:
        return None
    waited = now - intention.updated_at
    if waited < LAPSE_AFTER:
        return None
    reason = (
        f"lapsed: {intention.status.value} since {intention.updated_at.isoformat()} "
        f"({intention.reason or 'no reason recorded'})"
    )[:2000]
    after = transitioned(intention, IntentionStatus.ABANDONED, reason, now)
    if after is None:  # pragma: no cover - every live status may be abandoned
        return None
    decision = VolitionDecision(
        namespace=intention.namespace,
        mind=intention.mind,
        kind=DecisionKind.RECONSIDERATION,
        subjects={"intention": intention.id},
        outcome="abandon",
        reason=reason,
        inputs={
            "trigger": "lapse",
            "was": intention.status.value,
            "waitedSeconds": int(waited.total_seconds()),
            "lapseAfterSeconds": int(LAPSE_AFTER.total_seconds()),
        },
        at=now,
        basis=intention.updated_at.isoformat(),
    )
    return Lapsed(after, decision)
