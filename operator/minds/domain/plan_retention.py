"""How long a finished Plan stays in the cluster (like a Job's ``ttlSecondsAfterFinished``).

A finished plan is history; the ledger keeps history. Leaving every finished Plan in the API
server would make each controller start, each list and each ``kubectl get plans`` pay for all
the work the minds ever did. The Mind says how long its plans stay after they finish
(``spec.planTtlSecondsAfterFinished``, days by default); a plan is removed only once its
conclusion is in the ledger, so nothing a finished plan means is lost with it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from minds.domain.ledger import idempotency_key
from minds.domain.planning.model import PlanStatus
from minds.domain.resources.mind import DEFAULT_PLAN_TTL_SECONDS
from minds.domain.resources.plan import PlanResourceStatus

__all__ = [
    "DEFAULT_PLAN_TTL_SECONDS",
    "Expiry",
    "expiry",
    "finished_at",
    "next_look",
    "plan_event_key",
]

#: Finished plans are removed to the minute, not to the second: a TTL is days long.
MIN_LOOK = timedelta(seconds=60)
#: Looked at least this often, so a plan that finished since the last look is not forgotten:
#: the most a removal can be late.
MAX_LOOK = timedelta(hours=1)

#: The ledger event that shows a plan's conclusion was recorded, by final phase. Superseded and
#: abandoned plans are concluded by whatever superseded or abandoned them.
CONCLUSION: dict[PlanStatus, str | None] = {
    PlanStatus.COMPLETED: "plan_completed",
    PlanStatus.FAILED: "plan_failed",
    PlanStatus.SUPERSEDED: None,
    PlanStatus.ABANDONED: None,
}


def plan_event_key(uid: str, type_: str) -> str:
    """The key a plan's own ledger events (its conclusion among them) are recorded under."""
    return idempotency_key("plan", uid, type_)


def finished_at(status: PlanResourceStatus, created: datetime) -> datetime | None:
    """When a finished plan finished: its last step's end (its creation when no step ended,
    which can only make it stay longer). None while the plan is not finished."""
    if status.phase not in CONCLUSION:
        return None
    ends: Iterable[datetime] = (
        t for s in status.steps for t in (s.finished_at, s.started_at) if t is not None
    )
    return max(ends, default=created)


@dataclass(frozen=True)
class Expiry:
    at: datetime
    #: The ledger event that must exist before the plan may go (None: nothing to wait for).
    conclusion: str | None


def expiry(status: PlanResourceStatus, created: datetime, ttl_seconds: int) -> Expiry | None:
    """When the plan may be removed; None while it is not finished."""
    end = finished_at(status, created)
    if end is None:
        return None
    return Expiry(end + timedelta(seconds=ttl_seconds), CONCLUSION[status.phase])


def next_look(due: datetime | None, now: datetime) -> timedelta:
    """How long the remover sleeps after a look that found ``due`` as the earliest next expiry
    (None: nothing finished is waiting)."""
    if due is None:
        return MAX_LOOK
    return min(MAX_LOOK, max(MIN_LOOK, due - now))
