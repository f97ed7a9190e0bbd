"""Turn an intention into a Plan resource: read the mind, ask the pure planner, write the plan.

The planner's output is validated before it is written; a draft is written too (with its
errors), because what was considered is part of the record. A plan's name is derived from its
intention and revision, so planning again after a crash finds the plan it already wrote.
"""

from __future__ import annotations

from contextlib import suppress
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import ValidationError

from minds.domain.approvals import label_value
from minds.domain.capabilities.registry import CapabilityRegistry
from minds.domain.grants import view as grant_view
from minds.domain.intentions import IntentionKind as RecordKind
from minds.domain.intentions import IntentionRecord
from minds.domain.ledger import idempotency_key
from minds.domain.planning.model import PlanOrigin, Strategy
from minds.domain.planning.planner import (
    ModelProposal,
    PlanningOutcome,
    PlanningResult,
    make_plan,
)
from minds.domain.planning.proposal import proposal_vocabulary
from minds.domain.planning.views import (
    FailedAttempt,
    IntentionKind,
    IntentionView,
    Means,
    MindView,
    Workload,
)
from minds.domain.resources.grant import CapabilityGrantSpec, CapabilityGrantStatus
from minds.domain.resources.kinds import CAPABILITY_GRANT, MIND, PLAN
from minds.domain.resources.mind import MindSpec
from minds.domain.volition.assumptions import supporting_belief
from minds.engine.grant_service import unvouched
from minds.engine.ports import AlreadyExists, Clock, NotFound, ResourcePort

LABEL_MIND = "minds.dev/mind"
LABEL_INTENTION = "minds.dev/intention"


class Proposer(Protocol):
    """Asks a Mind's model (the `plan` role) for a plan proposal; None when it cannot."""

    def __call__(
        self, namespace: str, spec: MindSpec, objective: str, vocabulary: dict[str, Any]
    ) -> ModelProposal | None: ...


class IntentionLedger(Protocol):
    def intention(self, intention_id: str) -> IntentionRecord | None: ...


@dataclass(frozen=True)
class Planned:
    result: PlanningResult
    plan_name: str | None


def plan_name(intention: IntentionRecord, revision: int) -> str:
    digest = idempotency_key("plan", intention.id)[:8]
    mind = label_value(intention.mind)[:40].lower().strip("-._") or "mind"
    return f"{mind}-{digest}-r{revision}"


def intention_view(record: IntentionRecord, revision: int, supersedes: str | None) -> IntentionView:
    workload: Workload | None = None
    if record.subject and "/" in record.subject:
        namespace, name = record.subject.split("/", 1)
        workload = Workload(namespace=namespace, name=name)
    means = (
        Means(capability=record.means_capability, parameters=dict(record.means_parameters or {}))
        if record.means_capability
        else None
    )
    return IntentionView(
        id=record.id,
        objective=record.objective,
        kind=IntentionKind.ACTION
        if record.kind is RecordKind.ACTION
        else IntentionKind.INVESTIGATION,
        subject=record.subject or "",
        workload=workload,
        means=means,
        requires_approval=record.requires_approval,
        revision=revision,
        failures=tuple(
            FailedAttempt(strategy=Strategy(s), revision=i + 1)
            for i, s in enumerate(record.failed_strategies)
        ),
        supporting_belief=supporting_belief(record.subject)
        if record.kind is RecordKind.ACTION
        else None,
        supersedes=supersedes,
    )


class PlanningService:
    def __init__(
        self,
        *,
        resources: ResourcePort,
        clock: Clock,
        registry: CapabilityRegistry,
        proposer: Proposer | None = None,
    ) -> None:
        self._resources = resources
        self._clock = clock
        self._registry = registry
        self._proposer = proposer

    def mind_view(self, namespace: str, mind: str) -> MindView | None:
        try:
            body = self._resources.get(MIND, namespace, mind)
            spec = MindSpec.model_validate(body.get("spec") or {})
        except (NotFound, ValidationError):
            return None
        grants = []
        for item in self._resources.list(CAPABILITY_GRANT, namespace):
            try:
                g = CapabilityGrantSpec.model_validate(item.get("spec") or {})
                st = CapabilityGrantStatus.model_validate(item.get("status") or {})
            except ValidationError:
                continue
            if g.mind == mind and unvouched(self._resources, item, g) is None:
                grants.append(grant_view(namespace, item["metadata"]["name"], g, st))
        return MindView.from_spec(mind, namespace, spec, grants)

    def plan(
        self,
        intention: IntentionRecord,
        *,
        revision: int = 1,
        supersedes: str | None = None,
        dream: bool = False,
    ) -> Planned:
        mind = self.mind_view(intention.namespace, intention.mind)
        if mind is None:
            return Planned(
                PlanningResult(PlanningOutcome.NO_POSSIBLE_PLAN, "the mind is gone", ()), None
            )
        view = intention_view(intention, revision, supersedes)
        result = make_plan(view, mind, now=self._clock(), registry=self._registry)
        if result.outcome is PlanningOutcome.NEEDS_MODEL_PROPOSAL and self._proposer is not None:
            # Only when no deterministic strategy applies, and only through the plan role;
            # whatever comes back is validated like any other plan.
            spec = MindSpec.model_validate(
                self._resources.get(MIND, intention.namespace, intention.mind).get("spec") or {}
            )
            proposal = self._proposer(
                intention.namespace,
                spec,
                intention.objective,
                proposal_vocabulary(self._registry, mind),
            )
            if proposal is not None:
                result = make_plan(
                    view, mind, now=self._clock(), registry=self._registry, proposal=proposal
                )
        if result.plan is None:
            return Planned(result, None)
        name = plan_name(intention, revision) + ("-dream" if dream else "")
        plan = result.plan.model_copy(
            update={
                "mind": intention.mind,
                "intention": intention.id,
                "revision": revision,
                "supersedes": supersedes,
                "origin": PlanOrigin.DREAM
                if dream
                else PlanOrigin.REPLAN
                if supersedes
                else result.plan.origin,
            }
        )
        body: dict[str, Any] = {
            "metadata": {
                "name": name,
                "namespace": intention.namespace,
                "labels": {
                    LABEL_MIND: label_value(intention.mind),
                    LABEL_INTENTION: label_value(intention.id),
                },
            },
            "spec": plan.to_k8s(),
        }
        with suppress(AlreadyExists):
            self._resources.create(PLAN, intention.namespace, body)
        return Planned(result, name)
