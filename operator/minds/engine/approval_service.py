"""The Approval lifecycle, applied: phases follow what a person decided and the clock.

Each transition is one conditional status write and one ledger event naming the
authenticated approver (the admission policy guarantees ``decidedBy`` is the caller). An
approved action is carried out by the capability service, exactly once.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import JsonValue

from minds.domain.approvals import Transition, executed, next_transition, withdrawn
from minds.domain.ledger import EventRecord, SubjectRef, idempotency_key
from minds.domain.resources.approval import ApprovalPhase, ApprovalSpec, ApprovalStatus
from minds.domain.resources.kinds import APPROVAL
from minds.engine.capability_service import CapabilityService, OutcomeKind
from minds.engine.conditional import write_status
from minds.engine.ports import Clock, EventPort, LedgerPort, ResourcePort


class ApprovalService:
    def __init__(
        self,
        *,
        resources: ResourcePort,
        ledger: LedgerPort,
        events: EventPort,
        capabilities: CapabilityService,
        clock: Clock,
    ) -> None:
        self._resources = resources
        self._ledger = ledger
        self._events = events
        self._capabilities = capabilities
        self._clock = clock

    def _record(self, body: dict[str, Any], type_: str, payload: dict[str, JsonValue]) -> bool:
        meta = body["metadata"]
        spec = body.get("spec") or {}
        return self._ledger.append_event(
            EventRecord(
                mind=spec.get("mind") or "-",
                namespace=meta["namespace"],
                type=type_,
                subject=SubjectRef(kind=APPROVAL.kind, name=meta["name"], uid=meta.get("uid")),
                payload={
                    "capability": spec.get("capability"),
                    "target": spec.get("target"),
                    "kind": spec.get("kind"),
                    "origin": spec.get("origin"),
                    **payload,
                },
                occurred_at=self._clock(),
                idempotency_key=idempotency_key("approval", type_, meta["uid"]),
            )
        )

    def reconcile(self, namespace: str, name: str) -> ApprovalPhase:
        """Move the Approval as far as what is known allows; returns the phase it ends in."""
        now = self._clock()

        def pend(body: dict[str, Any]) -> tuple[dict[str, Any] | None, None]:
            if (body.get("status") or {}).get("phase"):
                return None, None
            return ApprovalStatus().to_k8s(), None

        body, _ = write_status(self._resources, APPROVAL, namespace, name, pend)
        if body is not None and self._record(body, "approval_requested", {}):
            what = ((body.get("spec") or {}).get("explanation") or {}).get("what", "")
            self._events.post(
                body,
                type_="Normal",
                reason="Requested",
                message=f"waiting for a person: {what}"[:1024],
            )

        def decide(body: dict[str, Any]) -> tuple[dict[str, Any] | None, Transition | None]:
            spec = ApprovalSpec.model_validate(body["spec"])
            status = ApprovalStatus.model_validate(body.get("status") or {})
            t = next_transition(spec, status, now)
            return (t.status.to_k8s() if t else None), t

        body, transition = write_status(self._resources, APPROVAL, namespace, name, decide)
        assert body is not None
        if transition is not None:
            spec = body["spec"]
            payload: dict[str, JsonValue] = {
                "decidedBy": spec.get("decidedBy"),
                "note": spec.get("note"),
                "message": transition.message,
            }
            if self._record(body, transition.event, payload):
                self._events.post(
                    body,
                    type_="Normal",
                    reason=transition.status.phase.value,
                    message=transition.message,
                )
        status = ApprovalStatus.model_validate(body.get("status") or {})
        if status.phase is ApprovalPhase.APPROVED:
            return self._carry_out(body, now)
        return status.phase

    def _carry_out(self, body: dict[str, Any], now: datetime) -> ApprovalPhase:
        outcome = self._capabilities.execute_approved(body)
        meta = body["metadata"]
        if outcome.kind is OutcomeKind.DENIED:
            message = outcome.reason

            def note(current: dict[str, Any]) -> tuple[dict[str, Any] | None, None]:
                status = ApprovalStatus.model_validate(current.get("status") or {})
                if status.phase is not ApprovalPhase.APPROVED or status.message == message:
                    return None, None
                return status.model_copy(update={"message": message}).to_k8s(), None

            write_status(self._resources, APPROVAL, meta["namespace"], meta["name"], note)
            if self._record(body, "approval_not_executed", {"reason": message}):
                self._events.post(body, type_="Warning", reason="NotExecuted", message=message)
            return ApprovalPhase.APPROVED
        execution = str(outcome.execution_id or outcome.approval or "")
        message = f"{outcome.kind.value}: {outcome.reason}"

        def done(current: dict[str, Any]) -> tuple[dict[str, Any] | None, None]:
            status = ApprovalStatus.model_validate(current.get("status") or {})
            if status.phase is not ApprovalPhase.APPROVED:
                return None, None
            return executed(status, now, execution, message[:4096]).to_k8s(), None

        written, _ = write_status(self._resources, APPROVAL, meta["namespace"], meta["name"], done)
        if self._record(body, "approval_executed", {"execution": execution, "outcome": message}):
            self._events.post(
                written or body, type_="Normal", reason="Executed", message=message[:1024]
            )
        return ApprovalPhase.EXECUTED

    def withdraw(self, namespace: str, name: str, reason: str) -> bool:
        """The mind no longer needs this; refused once a person has decided."""

        def compute(body: dict[str, Any]) -> tuple[dict[str, Any] | None, bool]:
            spec = ApprovalSpec.model_validate(body["spec"])
            status = ApprovalStatus.model_validate(body.get("status") or {})
            after = withdrawn(status, spec, reason)
            return (after.to_k8s(), True) if after is not None else (None, False)

        body, ok = write_status(self._resources, APPROVAL, namespace, name, compute)
        if ok and body is not None and self._record(body, "approval_withdrawn", {"reason": reason}):
            self._events.post(body, type_="Normal", reason="Withdrawn", message=reason)
        return ok
