"""The ``Mind`` custom resource: what a platform team declares with ``kubectl apply``.

The spec holds what the mind cares about (goals, drives, values, requests), what constrains it
(commitments, capability policy, locked capabilities, budgets, the operator-attention cap) and
how it may consult a model. Nothing in a Mind grants authority by itself: policy only narrows
what the capability layer will do, and grants come from ``CapabilityGrant`` objects.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Annotated

from pydantic import Field
from pydantic.config import JsonDict

from minds.domain.base import Model
from minds.domain.resources.approval import MindApprovers
from minds.domain.resources.common import (
    CAPABILITY_GLOB,
    CAPABILITY_NAME,
    DNS_SUBDOMAIN,
    Condition,
    WorkloadRef,
    cel,
    cel_rules,
)

NAME = r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"
#: A shell-style pattern for workload targets: ``atlas-*``, ``*/payments``, ``*``.
TARGET_GLOB = r"^[-a-z0-9.*/?\[\]]{1,253}$"

Weight = Annotated[float, Field(ge=0.0, le=1.0)]


def _map_list(key: str = "name") -> JsonDict:
    """A list the API server treats as a map keyed by ``key``: duplicates are refused."""
    return {"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": [key]}


class Drive(Model):
    """A standing motivation (reliability, curiosity, thrift) that scales wants it touches."""

    name: str = Field(max_length=63, pattern=NAME)
    weight: Weight = 0.5


class Value(Model):
    """A configured value. ``avoid`` lists capabilities whose use the value argues against;
    a want derived from it opposes wants whose means use one of them."""

    name: str = Field(max_length=63, pattern=NAME)
    weight: Weight = 0.5
    avoid: list[Annotated[str, Field(max_length=128, pattern=CAPABILITY_GLOB)]] = Field(
        default_factory=list, max_length=16
    )


class DesiredState(StrEnum):
    RUNNING = "running"


class Goal(Model):
    """Something the mind should keep true: today, that a workload is running normally."""

    name: str = Field(max_length=63, pattern=NAME)
    description: str = Field(default="", max_length=1024)
    subject: WorkloadRef
    desired: DesiredState = DesiredState.RUNNING
    priority: Weight = 0.5


class Request(Model):
    """A question or request a person put to the mind; it becomes a want in the next cycle."""

    name: str = Field(max_length=63, pattern=NAME)
    text: str = Field(min_length=1, max_length=2048)
    subject: WorkloadRef | None = None


class CommitmentMode(StrEnum):
    DO = "do"
    REFRAIN = "refrain"


class Access(StrEnum):
    ANY = "any"
    READ = "read"
    WRITE = "write"


class Risk(StrEnum):
    ANY = "any"
    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"


class Commitment(Model):
    """A promise about means: do something by a time, or refrain from something.

    Commitments constrain what a mind may do; they never grant authority.
    """

    model_config = Model.model_config | {
        "json_schema_extra": cel_rules(
            cel(
                "self.mode == 'refrain' || !has(self.unlessApproval) || !self.unlessApproval",
                "unlessApproval applies only to refrain commitments",
                fieldPath=".unlessApproval",
            ),
            cel(
                "!has(self.due) || !has(self.expiresAt) || "
                "timestamp(self.due) <= timestamp(self.expiresAt)",
                "due must not be after expiresAt",
                fieldPath=".due",
            ),
            cel(
                "!has(self.everySeconds) || (self.mode == 'do' && has(self.due))",
                "everySeconds applies only to mode do with a due time (the first period's start)",
                fieldPath=".everySeconds",
            ),
        )
    }

    name: str = Field(max_length=63, pattern=NAME)
    mode: CommitmentMode
    capability: str = Field(default="*", max_length=128, pattern=CAPABILITY_GLOB)
    target: str = Field(default="*", max_length=253, pattern=TARGET_GLOB)
    access: Access = Access.ANY
    risk: Risk = Risk.ANY
    unless_approval: bool = False
    due: datetime | None = None
    #: A recurring `do` commitment: due again every this many seconds after `due`. At least a
    #: minute (a cycle runs every 5 s at its fastest, and an act must form, run and verify
    #: within its period to keep it), at most a leap year.
    every_seconds: int | None = Field(default=None, ge=60, le=366 * 86400)
    expires_at: datetime | None = None
    revocable: bool = True
    reason: str = Field(default="", max_length=1024)

    def label(self, index: int) -> str:
        """How a decision names it: by its place in the Mind's spec."""
        return f"commitments[{index}] ({self.name})"


class CorrectionAction(StrEnum):
    ABANDON = "abandon"
    RESUME = "resume"


class IntentionCorrection(Model):
    """A person abandons or resumes an intention; the cycle applies it once, with the name."""

    intention: str = Field(
        min_length=1, max_length=128, description="The intention's id (kubectl minds why MIND)."
    )
    action: CorrectionAction = Field(
        description="abandon: drop the intention and suppress the want it serves; resume: bring "
        "back a blocked or suspended intention."
    )
    by: str = Field(
        min_length=1,
        max_length=253,
        description="Who asks: must be the requester's own username (admission checks).",
    )
    reason: str = Field(min_length=1, max_length=1024, description="Why; kept in the ledger.")


class CommitmentRevocation(Model):
    """A person revokes a revocable commitment; irrevocable ones cannot be revoked."""

    commitment: str = Field(
        max_length=63, pattern=NAME, description="The name of a commitment in spec.commitments."
    )
    by: str = Field(
        min_length=1,
        max_length=253,
        description="Who revokes: must be the requester's own username (admission checks).",
    )
    reason: str = Field(min_length=1, max_length=1024, description="Why; kept in the ledger.")


class PolicyDecision(StrEnum):
    ALLOW = "allow"
    APPROVE = "approve"
    DENY = "deny"


class PolicyRule(Model):
    """Allow, ask for approval, or deny a capability on matching targets."""

    capability: str = Field(max_length=128, pattern=CAPABILITY_GLOB)
    target: str = Field(default="*", max_length=253, pattern=TARGET_GLOB)
    decision: PolicyDecision


#: The seed's cap on a plan's capability invocations.
DEFAULT_INVOCATIONS = 20
#: Checks poll; a monitor that must see fifteen stable minutes at its default interval of 30 s
#: looks about 30 times, so 200 leaves room for several such waits and nothing runs away.
DEFAULT_CHECKS = 200


class PlanBudget(Model):
    """Per-plan resource limits; the executor compares what the plan used with them before
    every step that would spend any (docs/planning.md#budgets)."""

    invocations: int = Field(
        default=DEFAULT_INVOCATIONS,
        ge=1,
        le=1000,
        description="Capability invocations the plan's capability steps may make (checks are "
        "counted apart). Default 20.",
    )
    checks: int = Field(
        default=DEFAULT_CHECKS,
        ge=1,
        le=10000,
        description="Read-only checks the plan may make: each look of a precondition, a "
        "verify step or a monitor step. Default 200.",
    )
    wall_seconds: int | None = Field(
        default=None,
        ge=1,
        le=30 * 24 * 3600,
        description="Seconds from the plan's first step on, after which no step that spends "
        "anything starts. Unset: no cap.",
    )
    money: float | None = Field(
        default=None,
        ge=0,
        description="Money the plan may spend, as the capability registry prices its "
        "capabilities; a step that would pass it does not start. Unset: no cap.",
    )
    approvals: int | None = Field(
        default=None,
        ge=0,
        le=100,
        description="Approvals the plan may ask people for: steps that require one, steps "
        "policy sends for approval and capability requests. Unset: no cap.",
    )


class Attention(Model):
    """Operator attention is a resource: how many capability requests may be open at once."""

    max_open_requests: int = Field(default=5, ge=1, le=100)


class SecretKeyRef(Model):
    name: str = Field(max_length=253, pattern=DNS_SUBDOMAIN)
    key: str = Field(max_length=253, pattern=r"^[-._a-zA-Z0-9]+$")


class ModelRole(StrEnum):
    PLAN = "plan"


#: A model endpoint's name, as the controller's configuration lists it (a DNS label).
ENDPOINT_NAME = r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"


class ModelEndpoint(Model):
    """An OpenAI-compatible chat-completions endpoint the mind may consult to propose plans.

    The endpoint is named, not addressed: its URL and the addresses it may reach are the
    cluster admin's choice, in the controller's configuration. The key is read from a Secret in
    the Mind's own namespace that carries the label ``minds.dev/model-key: "true"``.
    """

    endpoint: str = Field(
        max_length=63,
        pattern=ENDPOINT_NAME,
        description="The name of a model endpoint in the controller's configuration "
        "(not a URL: where the controller connects is the cluster admin's choice).",
    )
    model: str = Field(max_length=256, min_length=1)
    roles: list[ModelRole] = Field(default_factory=lambda: [ModelRole.PLAN], max_length=4)
    api_key_secret_ref: SecretKeyRef | None = None
    timeout_seconds: int = Field(default=30, ge=1, le=600)


class Browser(Model):
    """Read-only browsing. Loopback, private and metadata addresses are refused unless listed."""

    allowed_hosts: list[Annotated[str, Field(max_length=253)]] = Field(
        default_factory=list, max_length=32
    )


#: A week: long enough for a person to look at what a finished plan did with ``kubectl``.
DEFAULT_PLAN_TTL_SECONDS = 7 * 24 * 3600


class MindSpec(Model):
    model_config = Model.model_config | {
        "json_schema_extra": cel_rules(
            cel(
                "!has(self.lockedCapabilities) || !has(self.capabilityPolicy) || "
                "self.capabilityPolicy.all(r, r.decision == 'deny' || "
                "!(r.capability in self.lockedCapabilities))",
                "a locked capability cannot be allowed or approved by capabilityPolicy",
                fieldPath=".capabilityPolicy",
            ),
        )
    }

    active: bool = True
    cycle_interval_seconds: int = Field(default=60, ge=5, le=86400)
    #: How long the Mind's plans stay after they finish; the ledger keeps them for good.
    plan_ttl_seconds_after_finished: int = Field(
        default=DEFAULT_PLAN_TTL_SECONDS, ge=60, le=366 * 24 * 3600
    )
    caution: Weight = 0.5
    drives: list[Drive] = Field(default_factory=list, max_length=16, json_schema_extra=_map_list())
    values: list[Value] = Field(default_factory=list, max_length=16, json_schema_extra=_map_list())
    goals: list[Goal] = Field(default_factory=list, max_length=64, json_schema_extra=_map_list())
    requests: list[Request] = Field(
        default_factory=list, max_length=64, json_schema_extra=_map_list()
    )
    commitments: list[Commitment] = Field(
        default_factory=list, max_length=64, json_schema_extra=_map_list()
    )
    capability_policy: list[PolicyRule] = Field(default_factory=list, max_length=64)
    locked_capabilities: list[Annotated[str, Field(max_length=128, pattern=CAPABILITY_NAME)]] = (
        Field(
            default_factory=list, max_length=32, json_schema_extra={"x-kubernetes-list-type": "set"}
        )
    )
    budget: PlanBudget = Field(default_factory=PlanBudget)
    attention: Attention = Field(default_factory=Attention)
    model: ModelEndpoint | None = None
    browser: Browser = Field(default_factory=Browser)
    dreams: bool = False
    #: Who may decide this mind's Approvals. Empty (the default) fails closed: nobody can.
    approvers: MindApprovers = Field(default_factory=MindApprovers)
    intention_corrections: list[IntentionCorrection] = Field(
        default_factory=list,
        max_length=64,
        # Present (empty) on every Mind, so a JSON patch can append to it ("/-").
        json_schema_extra={"default": []},
        description="People's corrections of intentions (kubectl minds abandon / resume); each "
        "is applied once, in order.",
    )
    commitment_revocations: list[CommitmentRevocation] = Field(
        default_factory=list,
        max_length=64,
        json_schema_extra={"default": [], **_map_list("commitment")},
        description="Revocable commitments people revoked (kubectl minds revoke). A revocation "
        "is final once the cycle records it.",
    )


class MindStatus(Model):
    observed_generation: int | None = None
    conditions: list[Condition] = Field(default_factory=list, max_length=16)
    open_wants: int = 0
    open_intentions: int = 0
    open_plans: int = 0
    pending_approvals: int = 0
    last_cycle_at: datetime | None = None
    last_cycle: str | None = Field(default=None, max_length=1024)
