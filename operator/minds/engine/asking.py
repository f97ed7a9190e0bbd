"""Asking a person: the Approval an invocation needs, the grant a mind requests, and the grant
created once a person approved it. Nothing here acts on the world; the capability service,
which authorises and acts, hands its approve decisions here.

Every request names the Mind's approvers (fixed into the Approval when it is made), belongs to
the Plan that asked (an owner reference to its uid), and is made at most once per origin:
a retry after a crash finds the Approval it made, so nobody is asked twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import suppress
from datetime import datetime, timedelta
from typing import Any, Protocol

from minds.domain.approvals import DEFAULT_TTL, approval_name, label_value
from minds.domain.capabilities.authority import AuthorityDecision
from minds.domain.capabilities.registry import CapabilityRegistry
from minds.domain.ledger import EventRecord
from minds.domain.resources.approval import ApprovalKind, ApprovalSpec, MindApprovers
from minds.domain.resources.common import API_GROUP, API_VERSION
from minds.domain.resources.grant import CapabilityGrantSpec
from minds.domain.resources.kinds import APPROVAL, CAPABILITY_GRANT, PLAN
from minds.domain.resources.mind import MindSpec
from minds.engine.invocations import (
    CapabilityRequest,
    Invocation,
    InvocationOutcome,
    Origin,
    OutcomeKind,
    told_row,
)
from minds.engine.mind_reading import acting_mind
from minds.engine.plan_authors import asked_of
from minds.engine.ports import AlreadyExists, Clock, LedgerPort, NotFound, ResourcePort
from minds.engine.promises import Promises

LABEL_MIND = "minds.dev/mind"
LABEL_BATCH = "minds.dev/batch"
LABEL_KIND = "minds.dev/request-kind"
#: The uid of the Plan that asked: its Approvals are found (and withdrawn) by it.
LABEL_PLAN_UID = "minds.dev/plan-uid"


class AskingLedger(LedgerPort, Protocol):
    def append_events(self, records: Sequence[EventRecord]) -> list[bool]: ...


class AskingService:
    def __init__(
        self,
        *,
        resources: ResourcePort,
        ledger: AskingLedger,
        clock: Clock,
        registry: CapabilityRegistry,
        promises: Promises,
        approval_ttl: timedelta = DEFAULT_TTL,
    ) -> None:
        self._resources = resources
        self._ledger = ledger
        self._clock = clock
        self._registry = registry
        self._promises = promises
        self._approval_ttl = approval_ttl

    def _mind(self, namespace: str, name: str) -> tuple[MindSpec | None, str]:
        return acting_mind(self._resources, namespace, name, self._promises, self._clock())

    def _labels(self, origin: Origin, batch_key: str | None, kind: ApprovalKind) -> dict[str, str]:
        labels = {LABEL_MIND: label_value(origin.mind), LABEL_KIND: kind.value}
        if batch_key:
            labels[LABEL_BATCH] = label_value(batch_key)
        if origin.plan_uid:
            labels[LABEL_PLAN_UID] = label_value(origin.plan_uid)
        return labels

    def _create_approval(
        self, namespace: str, origin: Origin, spec: ApprovalSpec, batch_key: str | None
    ) -> str:
        name = approval_name(origin.approval(), spec.kind)
        metadata: dict[str, Any] = {
            "name": name,
            "namespace": namespace,
            "labels": self._labels(origin, batch_key, spec.kind),
        }
        if origin.plan and origin.plan_uid:
            # The Approval belongs to this one Plan (its uid): a cluster's garbage collector
            # removes it with the Plan, and the executor acts on it only for that uid.
            metadata["ownerReferences"] = [
                {
                    "apiVersion": f"{API_GROUP}/{API_VERSION}",
                    "kind": PLAN.kind,
                    "name": origin.plan,
                    "uid": origin.plan_uid,
                    "controller": True,
                    "blockOwnerDeletion": False,
                }
            ]
        body = {"metadata": metadata, "spec": spec.to_k8s()}
        # A retry after a crash finds the Approval it made: the person is not asked twice.
        with suppress(AlreadyExists):
            self._resources.create(APPROVAL, namespace, body)
        return name

    def ask(
        self,
        inv: Invocation,
        decision: AuthorityDecision,
        decided: EventRecord,
        approvers: MindApprovers,
    ) -> InvocationOutcome:
        """Ask a person (one of the Mind's ``approvers``, fixed into the request): the
        Approval, then the decision that sent it to them and the request, in one
        transaction."""
        spec = ApprovalSpec(
            kind=ApprovalKind.ACTION,
            mind=inv.origin.mind,
            capability=inv.capability,
            target=decision.target,
            parameters=decision.parameters,
            explanation=inv.explanation,
            origin=inv.origin.approval(),
            batch_key=inv.batch_key,
            expires_at=self._clock() + (inv.approval_ttl or self._approval_ttl),
            **asked_of(self._resources, inv.namespace, inv.origin.approval(), approvers),
        )
        name = self._create_approval(inv.namespace, inv.origin, spec, inv.batch_key)
        requested = told_row(
            inv,
            "tool_requested",
            inv.origin.execution().key(),
            {"capability": inv.capability, "target": decision.target, "approval": name},
            self._clock(),
        )
        self._ledger.append_events([decided, requested])
        return InvocationOutcome(
            OutcomeKind.PENDING, f"waiting for approval {name}", approval=name, decision=decision
        )

    def open_requests(self, namespace: str, mind: str) -> int:
        """Pending grant requests of a mind: what it currently asks of operator attention."""
        selector = f"{LABEL_MIND}={label_value(mind)},{LABEL_KIND}={ApprovalKind.GRANT.value}"
        return sum(
            1
            for body in self._resources.list(APPROVAL, namespace, selector)
            if (body.get("status") or {}).get("phase", "Pending") == "Pending"
        )

    def request_capability(self, req: CapabilityRequest) -> InvocationOutcome:
        """Ask a person for a grant. Refused outright when the grant could never help (the
        capability is unknown, locked or denied by policy), deferred at the attention cap."""
        spec, why_not = self._mind(req.namespace, req.origin.mind)
        if spec is None:
            return InvocationOutcome(OutcomeKind.DENIED, why_not)
        cap = self._registry.get(req.capability)
        if cap is None:
            return InvocationOutcome(OutcomeKind.DENIED, f"{req.capability} is not registered")
        if req.capability in spec.locked_capabilities:
            return InvocationOutcome(OutcomeKind.DENIED, f"{req.capability} is locked")
        name = approval_name(req.origin.approval(), ApprovalKind.GRANT)
        try:
            self._resources.get(APPROVAL, req.namespace, name)
            exists = True
        except NotFound:
            exists = False
        if (
            not exists
            and self.open_requests(req.namespace, req.origin.mind)
            >= spec.attention.max_open_requests
        ):
            return InvocationOutcome(
                OutcomeKind.DEFERRED,
                f"operator attention cap reached ({spec.attention.max_open_requests} open "
                "requests); ask again later",
            )
        approval = ApprovalSpec(
            kind=ApprovalKind.GRANT,
            mind=req.origin.mind,
            capability=req.capability,
            target=req.grant.target_pattern,
            grant=req.grant,
            explanation=req.explanation,
            origin=req.origin.approval(),
            batch_key=req.batch_key,
            expires_at=self._clock() + (req.approval_ttl or self._approval_ttl),
            **asked_of(self._resources, req.namespace, req.origin.approval(), spec.approvers),
        )
        name = self._create_approval(req.namespace, req.origin, approval, req.batch_key)
        return InvocationOutcome(OutcomeKind.PENDING, f"waiting for approval {name}", approval=name)

    def create_approved_grant(
        self, namespace: str, approval_name_: str, approval: ApprovalSpec
    ) -> InvocationOutcome:
        """The grant a person approved, created by the executor following the request step.
        Creating it is idempotent (named after the Approval), so no write-ahead row is needed:
        a second call finds it and changes nothing."""
        mind_spec, why_not = self._mind(namespace, approval.mind)
        if mind_spec is None:
            return InvocationOutcome(OutcomeKind.DENIED, f"not created: {why_not}")
        return self._create_grant(namespace, approval_name_, approval)

    def _create_grant(
        self, namespace: str, approval_name_: str, approval: ApprovalSpec
    ) -> InvocationOutcome:
        assert approval.grant is not None
        now: datetime = self._clock()
        request = approval.grant
        spec = CapabilityGrantSpec(
            mind=approval.mind,
            capability=approval.capability,
            target_pattern=request.target_pattern,
            parameter_limits=request.parameter_limits,
            expires_at=now + timedelta(seconds=request.duration_seconds),
            operation_cap=request.operation_cap,
            reason=request.reason,
            risk=request.risk,
            mitigation=request.mitigation,
            fallback=request.fallback,
            # Admission checks both against the Approval: the person who approved is who
            # granted it, and this grant is that Approval's.
            granted_by=approval.decided_by,
            approval=approval_name_,
        )
        body = {
            "metadata": {
                "name": approval_name_,
                "namespace": namespace,
                "labels": {LABEL_MIND: label_value(approval.mind)},
            },
            "spec": spec.to_k8s(),
        }
        with suppress(AlreadyExists):
            self._resources.create(CAPABILITY_GRANT, namespace, body)
        return InvocationOutcome(
            OutcomeKind.EXECUTED, f"grant {approval_name_} created", approval=approval_name_
        )
