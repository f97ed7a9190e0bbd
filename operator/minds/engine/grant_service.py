"""CapabilityGrant phases, kept in step with the clock, the counter and revocation."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from minds.domain.grants import link_problem, phase_of
from minds.domain.ledger import EventRecord, SubjectRef, idempotency_key
from minds.domain.resources.approval import ApprovalSpec
from minds.domain.resources.common import parse_timestamp
from minds.domain.resources.grant import CapabilityGrantSpec, CapabilityGrantStatus, GrantPhase
from minds.domain.resources.kinds import APPROVAL, CAPABILITY_GRANT
from minds.engine.conditional import write_status
from minds.engine.ports import Clock, EventPort, LedgerPort, NotFound, ResourcePort, ResourceReader


def unvouched(
    resources: ResourceReader, body: dict[str, Any], spec: CapabilityGrantSpec
) -> str | None:
    """Why a grant is not vouched for (see ``link_problem``), reading the Approval it names:
    a grant the controller created grants nothing until a person's approval backs it."""
    if spec.approval is None:
        return None
    meta = body["metadata"]
    try:
        approval: ApprovalSpec | None = ApprovalSpec.model_validate(
            resources.get(APPROVAL, meta["namespace"], spec.approval).get("spec") or {}
        )
    except NotFound:
        approval = None
    except ValidationError:
        return f"approval {spec.approval} cannot be read"
    created = parse_timestamp(meta.get("creationTimestamp"))
    if created is None:
        return "its creation time is unknown"
    return link_problem(meta["name"], spec, created, approval)


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
            phase = phase_of(spec, status, now)
            problem = unvouched(self._resources, body, spec)
            after = status.model_copy(
                update={
                    "phase": phase,
                    # What admission vouched for, never an annotation anyone could have written.
                    "granted_by": status.granted_by or spec.granted_by,
                    "approval": status.approval or spec.approval,
                    "message": f"grants nothing: {problem}" if problem else None,
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
