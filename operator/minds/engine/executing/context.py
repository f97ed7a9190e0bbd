"""What every phase is handed: the ports, the clock and who we are; and reading a Plan."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from minds.domain.capabilities.registry import CapabilityRegistry
from minds.domain.planning.model import Plan
from minds.domain.resources.kinds import PLAN
from minds.domain.resources.mind import MindSpec
from minds.domain.resources.plan import PlanResourceStatus
from minds.engine.approval_service import ApprovalService
from minds.engine.asking import AskingService
from minds.engine.capability_service import CapabilityService
from minds.engine.mind_reading import mind_spec
from minds.engine.planning_service import PlanningService
from minds.engine.ports import (
    Clock,
    Conflict,
    EventPort,
    ExecutorLedger,
    ResourcePort,
)


@dataclass(frozen=True)
class Deps:
    resources: ResourcePort
    ledger: ExecutorLedger
    events: EventPort
    capabilities: CapabilityService
    asking: AskingService
    approvals: ApprovalService
    planning: PlanningService
    clock: Clock
    registry: CapabilityRegistry
    holder: str
    timeouts: Mapping[str, int]


def read_plan(
    deps: Deps, namespace: str, name: str
) -> tuple[dict[str, Any], Plan, PlanResourceStatus]:
    body = deps.resources.get(PLAN, namespace, name)
    plan = Plan.model_validate(body.get("spec") or {})
    status = PlanResourceStatus.model_validate(body.get("status") or {})
    return body, plan, status


def read_mind(deps: Deps, namespace: str, name: str | None) -> MindSpec | None:
    """The Mind's spec with the promises it keeps: what its plans may do is judged by both."""
    return mind_spec(deps.resources, namespace, name, (deps.capabilities.promises, deps.clock()))


def write_plan_status(
    deps: Deps, body: dict[str, Any], status: PlanResourceStatus
) -> dict[str, Any] | None:
    """One conditional write of the whole status; None when someone wrote first."""
    try:
        return deps.resources.replace_status(PLAN, body, status.to_k8s())
    except Conflict:
        return None
