"""The Approval lifecycle, applied: phases follow what a person decided, the clock and the
fate of the Plan that asked. This service never acts on the world.

Each transition is one conditional status write and one ledger event naming the
authenticated approver (the admission policy guarantees ``decidedBy`` is the caller). The
ledger events are the controller's own derivation, which :func:`~minds.domain.approvals.
authorises` trusts; ``status`` is only their reflection for people to read. Carrying out an
approved action is the executor's alone (one owner of acting); it tells this service when it
did, through :meth:`ApprovalService.executed`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any, Final, Protocol

from pydantic import JsonValue

from minds.domain.approvals import (
    Recorded,
    Transition,
    abandoned,
    executed,
    ignored_decision,
    label_value,
    next_transition,
    orphaned,
    recorded_as,
    withdrawn,
)
from minds.domain.errors import NotFound
from minds.domain.ledger import EventRecord, SubjectRef, idempotency_key
from minds.domain.resources.approval import (
    ApprovalOrigin,
    ApprovalPhase,
    ApprovalSpec,
    ApprovalStatus,
)
from minds.domain.resources.common import parse_timestamp
from minds.domain.resources.kinds import APPROVAL, PLAN
from minds.engine.capability_service import LABEL_PLAN_UID
from minds.engine.conditional import write_status
from minds.engine.ports import Clock, EventPort, LedgerPort, ResourcePort
from minds.engine.telemetry import NO_TELEMETRY, Telemetry

#: The ledger events that decide whether an Approval may still lead to acting.
APPROVED, EXPIRED, WITHDRAWN = "approval_approved", "approval_expired", "approval_withdrawn"

#: The ledger events that end a wait for a person, and the outcome each counts as.
DECISIONS: Final[Mapping[str, str]] = {
    APPROVED: "approved",
    "approval_denied": "denied",
    EXPIRED: "expired",
    WITHDRAWN: "withdrawn",
}


class ApprovalLedger(LedgerPort, Protocol):
    def events(
        self, *, subject_uid: str | None = None, type: str | Iterable[str] | None = None
    ) -> list[EventRecord]: ...


class ApprovalService:
    def __init__(
        self,
        *,
        resources: ResourcePort,
        ledger: ApprovalLedger,
        events: EventPort,
        clock: Clock,
        telemetry: Telemetry = NO_TELEMETRY,
    ) -> None:
        self._resources = resources
        self._ledger = ledger
        self._events = events
        self._clock = clock
        self._telemetry = telemetry

    def _record(self, body: dict[str, Any], type_: str, payload: dict[str, JsonValue]) -> bool:
        meta = body["metadata"]
        spec = body.get("spec") or {}
        now = self._clock()
        new = self._ledger.append_event(
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
                occurred_at=now,
                idempotency_key=idempotency_key("approval", type_, meta["uid"]),
            )
        )
        # Counted when the ledger line is new, so a replay or a second controller adds none.
        if new and type_ in DECISIONS:
            self._telemetry.approval_decided(
                meta["namespace"], spec.get("mind") or "-", DECISIONS[type_], _waited(meta, now)
            )
        return new

    def recorded(self, uid: str) -> Recorded:
        """What the ledger says about this Approval object: the facts acting depends on."""
        found = {
            e.type: e
            for e in self._ledger.events(subject_uid=uid, type=(APPROVED, EXPIRED, WITHDRAWN))
        }
        approved = found.get(APPROVED)
        return Recorded(
            approved_at=approved.occurred_at if approved is not None else None,
            expired=EXPIRED in found,
            withdrawn=WITHDRAWN in found,
        )

    def reconcile(
        self, namespace: str, name: str, *, owner_checked: bool = False
    ) -> dict[str, Any]:
        """Move the Approval as far as what is known allows; returns it as last read or
        written. ``owner_checked``: the caller (the executor of the asking Plan) knows the Plan
        is alive, so it is not looked up again. Raises NotFound."""
        now = self._clock()

        def compute(
            body: dict[str, Any],
        ) -> tuple[dict[str, Any] | None, tuple[bool, Transition | None]]:
            spec = ApprovalSpec.model_validate(body["spec"])
            first = not (body.get("status") or {}).get("phase")
            status = ApprovalStatus.model_validate(body.get("status") or {})
            t = next_transition(spec, status, now)
            after = t.status if t is not None else status
            return (after.to_k8s() if first or t is not None else None), (first, t)

        body, (first, transition) = write_status(
            self._resources, APPROVAL, namespace, name, compute
        )
        assert body is not None
        if first and self._record(body, "approval_requested", {}):
            what = ((body.get("spec") or {}).get("explanation") or {}).get("what", "")
            self._events.post(
                body,
                type_="Normal",
                reason="Requested",
                message=f"waiting for a person: {what}",
            )
        spec = ApprovalSpec.model_validate(body["spec"])
        status = ApprovalStatus.model_validate(body.get("status") or {})
        # A controller that stopped between the status write and the ledger line left a phase
        # the ledger does not know; the ledger is what acting trusts, so it is written now.
        transition = transition or recorded_as(spec, status, now)
        if transition is not None:
            payload: dict[str, JsonValue] = {
                "decidedBy": spec.decided_by,
                "note": spec.note,
                "message": transition.message,
            }
            if self._record(body, transition.event, payload):
                self._events.post(
                    body,
                    type_="Normal",
                    reason=transition.status.phase.value,
                    message=transition.message,
                )
        ignored = ignored_decision(spec, status)
        if ignored is not None and self._record(
            body, "approval_decision_ignored", {"decidedBy": spec.decided_by, "reason": ignored}
        ):
            self._events.post(body, type_="Warning", reason="DecisionIgnored", message=ignored)
        if not owner_checked:
            reason = orphaned(spec.origin, *self._owner(namespace, spec.origin))
            if reason is not None:
                body = self._abandon(body, reason)
        return body

    def _owner(self, namespace: str, origin: ApprovalOrigin) -> tuple[str | None, str | None]:
        """The uid and phase of the Plan the origin names, (None, None) when there is none."""
        if not origin.plan:
            return None, None
        try:
            plan = self._resources.get(PLAN, namespace, origin.plan)
        except NotFound:
            return None, None
        if plan["metadata"].get("deletionTimestamp"):
            return None, None  # being deleted is deleted: it will never act again
        return plan["metadata"].get("uid"), (plan.get("status") or {}).get("phase")

    def withdraw(self, namespace: str, name: str, reason: str) -> bool:
        """The mind no longer needs this; refused once a person has decided."""

        def compute(body: dict[str, Any]) -> tuple[dict[str, Any] | None, bool]:
            spec = ApprovalSpec.model_validate(body["spec"])
            status = ApprovalStatus.model_validate(body.get("status") or {})
            after = withdrawn(status, spec, reason)
            return (after.to_k8s(), True) if after is not None else (None, False)

        body, ok = write_status(self._resources, APPROVAL, namespace, name, compute)
        if ok and body is not None and self._record(body, WITHDRAWN, {"reason": reason}):
            self._events.post(body, type_="Normal", reason="Withdrawn", message=reason)
        return ok

    def _abandon(self, body: dict[str, Any], reason: str) -> dict[str, Any]:
        """Its plan is gone or finished: withdrawn, decided or not (see ``abandoned``). The
        ledger line comes first: it is what keeps the executor from acting, even if the
        status write below loses to a concurrent one."""
        meta = body["metadata"]
        status = ApprovalStatus.model_validate(body.get("status") or {})
        if abandoned(status, reason) is None:
            return body
        spec = body.get("spec") or {}
        if self._record(body, WITHDRAWN, {"reason": reason, "decidedBy": spec.get("decidedBy")}):
            self._events.post(body, type_="Normal", reason="Withdrawn", message=reason)

        def compute(current: dict[str, Any]) -> tuple[dict[str, Any] | None, None]:
            after = abandoned(ApprovalStatus.model_validate(current.get("status") or {}), reason)
            return (after.to_k8s() if after is not None else None), None

        try:
            written, _ = write_status(
                self._resources, APPROVAL, meta["namespace"], meta["name"], compute
            )
        except NotFound:
            return body
        return written or body

    def abandon_plan(self, namespace: str, plan_uid: str, reason: str) -> int:
        """Withdraw every Approval the Plan with this uid still has open; returns how many."""
        selector = f"{LABEL_PLAN_UID}={label_value(plan_uid)}"
        count = 0
        for body in self._resources.list(APPROVAL, namespace, selector):
            origin = (body.get("spec") or {}).get("origin") or {}
            if origin.get("planUid") != plan_uid:
                continue  # a label is only a hint; the immutable origin decides
            before = (body.get("status") or {}).get("phase")
            after = (self._abandon(body, reason).get("status") or {}).get("phase")
            count += before != after
        return count

    def executed(self, namespace: str, name: str, execution: str, message: str) -> None:
        """The executor did what was approved: the status and the ledger say so."""
        now = self._clock()

        def done(current: dict[str, Any]) -> tuple[dict[str, Any] | None, bool]:
            status = ApprovalStatus.model_validate(current.get("status") or {})
            if status.phase is ApprovalPhase.EXECUTED:
                return None, False
            return executed(status, now, execution, message[:4096]).to_k8s(), True

        try:
            body, _ = write_status(self._resources, APPROVAL, namespace, name, done)
        except NotFound:
            return  # deleted meanwhile; the ledger's execution row is the record
        assert body is not None
        if self._record(body, "approval_executed", {"execution": execution, "outcome": message}):
            self._events.post(body, type_="Normal", reason="Executed", message=message)

    def not_executed(self, namespace: str, name: str, reason: str) -> None:
        """Approved, but the re-check just before acting refused it (a capability locked, a
        commitment or policy that now forbids it): nothing ran, and the Approval says why."""

        def note(current: dict[str, Any]) -> tuple[dict[str, Any] | None, None]:
            status = ApprovalStatus.model_validate(current.get("status") or {})
            if status.phase is not ApprovalPhase.APPROVED or status.message == reason:
                return None, None
            return status.model_copy(update={"message": reason[:4096]}).to_k8s(), None

        try:
            body, _ = write_status(self._resources, APPROVAL, namespace, name, note)
        except NotFound:
            return
        assert body is not None
        if self._record(body, "approval_not_executed", {"reason": reason}):
            self._events.post(body, type_="Warning", reason="NotExecuted", message=reason)


def _waited(meta: Mapping[str, Any], now: datetime) -> float | None:
    created = parse_timestamp(meta.get("creationTimestamp"))
    return None if created is None else max(0.0, (now - created).total_seconds())
