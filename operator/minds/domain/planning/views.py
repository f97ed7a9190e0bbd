"""What planning needs to know of a mind and of an intention, and nothing more.

These are read-only views the engine builds from the `Mind` resource, its live grants and the
intention in the ledger. Keeping them small keeps the planner pure and its inputs explicit.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any

from pydantic import Field

from minds.domain.base import Model
from minds.domain.capabilities.policy import (
    GrantView,
    PolicyOutcome,
    PolicyRule,
    decide_with_grants,
)
from minds.domain.capabilities.registry import REGISTRY, CapabilityRegistry, WorkloadKind
from minds.domain.planning.model import Budget, Strategy
from minds.domain.resources.mind import MindSpec, ModelRole


class MindView(Model):
    """A mind's authority and resources as planning sees them.

    `plan_model` is true when a model endpoint is assigned the `plan` role. `grants` may hold
    expired or exhausted grants: liveness is judged against the clock passed to the planner.
    """

    name: str = ""
    namespace: str = "default"
    locked_capabilities: tuple[str, ...] = ()
    policy: tuple[PolicyRule, ...] = ()
    grants: tuple[GrantView, ...] = ()
    plan_model: bool = False
    budget: Budget = Budget()

    @classmethod
    def from_spec(
        cls, name: str, namespace: str, spec: MindSpec, grants: Sequence[GrantView] = ()
    ) -> MindView:
        return cls(
            name=name,
            namespace=namespace,
            locked_capabilities=tuple(spec.locked_capabilities),
            policy=tuple(spec.capability_policy),
            grants=tuple(grants),
            plan_model=spec.model is not None and ModelRole.PLAN in spec.model.roles,
            budget=spec.budget,
        )

    def locked(self, capability: str) -> bool:
        return capability in self.locked_capabilities

    def decide(
        self,
        capability: str,
        target: str,
        now: datetime,
        registry: CapabilityRegistry = REGISTRY,
    ) -> PolicyOutcome:
        """Policy for the capability on the target, with live grants applied."""
        return decide_with_grants(self.policy, self.grants, capability, target, now, registry)


class IntentionKind(StrEnum):
    ACTION = "action"
    INVESTIGATION = "investigation"


class Means(Model):
    """The capability an intention proposes to use, with its parameters."""

    capability: str
    parameters: dict[str, Any] = {}


class Workload(Model):
    """The workload an intention is about, when its subject is service-like."""

    namespace: str
    kind: WorkloadKind = WorkloadKind.DEPLOYMENT
    name: str

    @property
    def target(self) -> str:
        return f"{self.namespace}/{self.name}"

    def parameters(self) -> dict[str, Any]:
        return {"namespace": self.namespace, "kind": self.kind.value, "name": self.name}


class FailedAttempt(Model):
    """An earlier revision of the same intention that failed, and what was seen."""

    strategy: Strategy
    revision: Annotated[int, Field(ge=1)]
    summary: str = ""


class IntentionView(Model):
    """An intention as the planner sees it.

    `revision` is the revision the planner is asked to make (1 for a fresh intention);
    `failures` lists the earlier revisions that failed, so their strategies are not reused.
    `requires_approval` is set by commitments and formation, never by a plan.
    """

    id: str
    objective: str
    kind: IntentionKind
    subject: str = ""
    workload: Workload | None = None
    means: Means | None = None
    requires_approval: bool = False
    revision: Annotated[int, Field(ge=1)] = 1
    failures: tuple[FailedAttempt, ...] = ()
    supporting_belief: str | None = None
    supersedes: str | None = None

    @property
    def failed_strategies(self) -> frozenset[Strategy]:
        return frozenset(failure.strategy for failure in self.failures)
