"""CapabilityGrant phases, kept in step with the clock, the counter and revocation."""

from __future__ import annotations

from typing import Any

from minds.domain.grants import phase_of
from minds.domain.ledger import EventRecord, SubjectRef, idempotency_key
from minds.domain.resources.grant import CapabilityGrantSpec, CapabilityGrantStatus, GrantPhase
from minds.domain.resources.kinds import CAPABILITY_GRANT
from minds.engine.capability_service import ANNOTATION_APPROVAL, ANNOTATION_GRANTED_BY
from minds.engine.conditional import write_status
from minds.engine.ports import Clock, EventPort, LedgerPort, ResourcePort


class GrantService:
    def __init__(
        self, *, resources: ResourcePort, ledger: LedgerPort, events: EventPort, clock: Clock
    ) -> None:
        self._resources = resources
        self._ledger = ledger
        self._events = events
        self._clock = clock

    def _record(self, body: dict[str, Any], phase: GrantPhase) -> bool:
        meta = body["metadata"]
        spec = body.get("spec") or {}
        return self._ledger.append_event(
            EventRecord(
                mind=spec.get("mind") or "-",
                namespace=meta["namespace"],
                type=f"grant_{phase.value.lower()}",
                subject=SubjectRef(kind=CAPABILITY_GRANT.kind, name=meta["name"], uid=meta["uid"]),
                payload={
                    "capability": spec.get("capability"),
                    "targetPattern": spec.get("targetPattern"),
                    "operationCap": spec.get("operationCap"),
                    "operationsUsed": (body.get("status") or {}).get("operationsUsed", 0),
                    "grantedBy": (body.get("status") or {}).get("grantedBy"),
                },
                occurred_at=self._clock(),
                idempotency_key=idempotency_key("grant", phase.value, meta["uid"]),
            )
        )

    def reconcile(self, namespace: str, name: str) -> GrantPhase:
        now = self._clock()

        def compute(body: dict[str, Any]) -> tuple[dict[str, Any] | None, GrantPhase]:
            spec = CapabilityGrantSpec.model_validate(body["spec"])
            status = CapabilityGrantStatus.model_validate(body.get("status") or {})
            annotations = body["metadata"].get("annotations") or {}
            phase = phase_of(spec, status, now)
            after = status.model_copy(
                update={
                    "phase": phase,
                    "granted_by": status.granted_by or annotations.get(ANNOTATION_GRANTED_BY),
                    "approval": status.approval or annotations.get(ANNOTATION_APPROVAL),
                }
            )
            return (after.to_k8s() if after != status else None), phase

        body, phase = write_status(self._resources, CAPABILITY_GRANT, namespace, name, compute)
        if body is not None and self._record(body, phase):
            kind = "Normal" if phase is GrantPhase.ACTIVE else "Warning"
            self._events.post(
                body, type_=kind, reason=phase.value, message=f"grant is {phase.value.lower()}"
            )
        return phase

    def forget(self, body: dict[str, Any]) -> None:
        """Deleting a grant revokes it; the ledger keeps that it existed and ended."""
        self._record(body, GrantPhase.REVOKED)
