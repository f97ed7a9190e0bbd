"""Remove finished Plans once their time is up (see ``minds.domain.plan_retention``).

The controller hands in the Plans its watch holds; this decides which have outlived their
Mind's ``planTtlSecondsAfterFinished`` and have their conclusion in the ledger, records the
removal, and deletes that incarnation. It returns when to look next, so the caller sleeps
instead of polling.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any, Protocol

from pydantic import ValidationError

from minds.domain.errors import Conflict
from minds.domain.ledger import EventRecord, SubjectRef
from minds.domain.plan_retention import (
    CONCLUSION,
    DEFAULT_PLAN_TTL_SECONDS,
    Expiry,
    expiry,
    plan_event_key,
)
from minds.domain.resources.kinds import PLAN
from minds.domain.resources.plan import PlanResourceStatus
from minds.engine.mind_reading import mind_spec
from minds.engine.ports import Clock, ResourcePort

log = logging.getLogger(__name__)

REMOVED = "plan_removed"


class RetentionLedger(Protocol):
    def event(self, idempotency_key: str) -> object | None: ...

    def append_event(self, record: EventRecord) -> bool: ...


class PlanRetention:
    def __init__(self, *, resources: ResourcePort, ledger: RetentionLedger, clock: Clock) -> None:
        self._resources = resources
        self._ledger = ledger
        self._clock = clock

    def sweep(self, plans: Iterable[Mapping[str, Any]]) -> datetime | None:
        """Remove every plan that is due; return the earliest time another one will be.
        ``plans`` are only read."""
        now = self._clock()
        ttls: dict[tuple[str, str], int] = {}
        due: datetime | None = None
        finished = {phase.value for phase in CONCLUSION}
        for body in plans:
            if (body.get("status") or {}).get("phase") not in finished:
                continue  # the cheap test first: most plans a sweep sees are not finished
            found = self._expiry(body, ttls)
            if found is None:
                continue
            if found.at > now:
                due = found.at if due is None else min(due, found.at)
            elif self._concluded(body, found):
                self._remove(body, found)
        return due

    def _expiry(self, body: Mapping[str, Any], ttls: dict[tuple[str, str], int]) -> Expiry | None:
        meta = body["metadata"]
        try:
            status = PlanResourceStatus.model_validate(body.get("status") or {})
        except ValidationError:
            return None  # a status we cannot read is not one we remove on
        created = datetime.fromisoformat(meta["creationTimestamp"].replace("Z", "+00:00"))
        mind = (body.get("spec") or {}).get("mind") or ""
        key = (meta["namespace"], mind)
        if key not in ttls:
            ttls[key] = self._ttl(*key)
        return expiry(status, created, ttls[key])

    def _ttl(self, namespace: str, mind: str) -> int:
        spec = mind_spec(self._resources, namespace, mind)
        return spec.plan_ttl_seconds_after_finished if spec else DEFAULT_PLAN_TTL_SECONDS

    def _concluded(self, body: Mapping[str, Any], found: Expiry) -> bool:
        """A finished plan stays until what it meant is in the ledger (its daemon records that;
        a controller that was down for longer than the TTL must not remove it first)."""
        if found.conclusion is None:
            return True
        return (
            self._ledger.event(plan_event_key(body["metadata"]["uid"], found.conclusion))
            is not None
        )

    def _remove(self, body: Mapping[str, Any], found: Expiry) -> None:
        meta = body["metadata"]
        spec = body.get("spec") or {}
        # Recorded first: a removal the ledger does not know of would look like a lost plan.
        self._ledger.append_event(
            EventRecord(
                mind=spec.get("mind") or "-",
                namespace=meta["namespace"],
                type=REMOVED,
                subject=SubjectRef(kind=PLAN.kind, name=meta["name"], uid=meta["uid"]),
                payload={
                    "phase": (body.get("status") or {}).get("phase"),
                    "expiredAt": found.at.isoformat(),
                    "reason": "finished longer ago than the Mind's planTtlSecondsAfterFinished",
                },
                occurred_at=self._clock(),
                idempotency_key=plan_event_key(meta["uid"], REMOVED),
            )
        )
        try:
            self._resources.delete(PLAN, meta["namespace"], meta["name"], meta["uid"])
        except Conflict:
            return  # the name holds a newer plan now; the one we meant is gone already
        log.info("removed finished plan %s/%s", meta["namespace"], meta["name"])
