"""The ``Approval`` custom resource: a mind asks, a person decides with ``kubectl patch``.

The request part (what is asked, why, by which step) is fixed at creation; a person may only
add ``decision``, ``decidedBy`` and ``note``, once. These rules live in the CRD schema as CEL so
the API server refuses a violation before any controller sees it; who may decide is checked by
the ValidatingAdmissionPolicy shipped beside the CRDs.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Annotated

from pydantic import Field

from minds.domain.base import Model
from minds.domain.free_form import FreeForm
from minds.domain.resources.common import (
    CAPABILITY_NAME,
    DNS_SUBDOMAIN,
    Condition,
    cel,
    cel_rules,
    immutable,
)

Text = Annotated[str, Field(max_length=4096)]


class ApprovalKind(StrEnum):
    ACTION = "action"
    GRANT = "grant"


class Decision(StrEnum):
    APPROVED = "Approved"
    DENIED = "Denied"


class ApprovalPhase(StrEnum):
    PENDING = "Pending"
    APPROVED = "Approved"
    DENIED = "Denied"
    EXPIRED = "Expired"
    WITHDRAWN = "Withdrawn"
    EXECUTED = "Executed"


class Explanation(Model):
    """What a person needs to decide: what, why, the expected outcome, side effects, options."""

    what: Text
    why: Text
    expected_outcome: Text = ""
    side_effects: Text = ""
    alternatives: list[Text] = Field(default_factory=list, max_length=16)


class ApprovalOrigin(Model):
    """Which step of which plan asked; the approval's name is derived from this. The plan's
    uid, not its name, binds the Approval: a Plan re-created under the same name is another
    plan and asks anew."""

    mind: str = Field(max_length=253, pattern=DNS_SUBDOMAIN)
    intention: str | None = Field(default=None, max_length=128)
    plan: str | None = Field(default=None, max_length=253)
    plan_uid: str | None = Field(default=None, max_length=128)
    step: str | None = Field(default=None, max_length=16)
    attempt: int = Field(default=1, ge=1, le=100)


#: A Kubernetes user or group name as the API server authenticates it.
Principal = Annotated[str, Field(min_length=1, max_length=253)]


class Approvers(Model):
    """Who may decide: users by name, and members of groups, as the API server authenticates
    them. Deciding also needs the RBAC verb ``approve``; membership without it, or the verb
    without membership (``system:masters``, a wildcard role), is not enough. Empty: nobody."""

    users: list[Principal] = Field(
        default_factory=list, max_length=64, json_schema_extra={"x-kubernetes-list-type": "set"}
    )
    groups: list[Principal] = Field(
        default_factory=list, max_length=64, json_schema_extra={"x-kubernetes-list-type": "set"}
    )


class MindApprovers(Approvers):
    """A Mind's approvers, and whether the person who wrote an operator plan may approve its
    steps (by default not: four eyes)."""

    plan_authors_may_approve: bool = False


class GrantRequest(Model):
    """What a mind asks for when it asks for temporary, scoped authority."""

    target_pattern: str = Field(max_length=253)
    parameter_limits: FreeForm = Field(default_factory=dict)
    duration_seconds: int = Field(ge=60, le=7 * 24 * 3600)
    operation_cap: int = Field(ge=1, le=10_000)
    reason: Text
    risk: Text = ""
    mitigation: Text = ""
    fallback: Text = ""
    alternatives: list[Text] = Field(default_factory=list, max_length=16)


class ApprovalSpec(Model):
    model_config = Model.model_config | {
        "json_schema_extra": cel_rules(
            cel(
                "oldSelf.hasValue() || !has(self.decision)",
                "an Approval cannot be created already decided",
                optionalOldSelf=True,
                fieldPath=".decision",
            ),
            cel(
                "!has(oldSelf.decision) || "
                "(has(self.decision) && self.decision == oldSelf.decision)",
                "decision is immutable once made",
                fieldPath=".decision",
            ),
            cel(
                "!has(oldSelf.decision) || "
                "(has(self.decidedBy) && self.decidedBy == oldSelf.decidedBy "
                "&& has(self.note) == has(oldSelf.note) "
                "&& (!has(self.note) || self.note == oldSelf.note))",
                "decidedBy and note are immutable once a decision is made",
                fieldPath=".decidedBy",
            ),
            cel(
                "has(self.decision) == has(self.decidedBy)",
                "decision and decidedBy are set together",
                fieldPath=".decidedBy",
            ),
            cel(
                "(self.kind == 'grant') == has(self.grant)",
                "grant is required for kind grant and forbidden otherwise",
                fieldPath=".grant",
            ),
            cel(
                "has(self.grant) == has(oldSelf.grant) && "
                "has(self.parameters) == has(oldSelf.parameters) && "
                "has(self.batchKey) == has(oldSelf.batchKey) && "
                "has(self.approvers) == has(oldSelf.approvers) && "
                "has(self.author) == has(oldSelf.author)",
                "the request part of an Approval is immutable",
            ),
        )
    }

    kind: ApprovalKind = Field(json_schema_extra=immutable("kind"))
    mind: str = Field(max_length=253, pattern=DNS_SUBDOMAIN, json_schema_extra=immutable("mind"))
    capability: str = Field(
        max_length=128, pattern=CAPABILITY_NAME, json_schema_extra=immutable("capability")
    )
    target: str = Field(max_length=253, json_schema_extra=immutable("target"))
    parameters: FreeForm | None = Field(default=None, json_schema_extra=immutable("parameters"))
    grant: GrantRequest | None = Field(default=None, json_schema_extra=immutable("grant"))
    explanation: Explanation = Field(json_schema_extra=immutable("explanation"))
    origin: ApprovalOrigin = Field(json_schema_extra=immutable("origin"))
    batch_key: str | None = Field(
        default=None, max_length=128, json_schema_extra=immutable("batchKey")
    )
    expires_at: datetime = Field(json_schema_extra=immutable("expiresAt"))
    #: Copied from the Mind when the request is raised: the admission policy lets only these
    #: decide, and the controller checks them against the Mind again before recording.
    approvers: Approvers = Field(
        default_factory=Approvers, json_schema_extra=immutable("approvers")
    )
    #: The person who wrote the plan that asks, when four eyes apply: they may not decide.
    author: str | None = Field(default=None, max_length=253, json_schema_extra=immutable("author"))
    decision: Decision | None = None
    decided_by: str | None = Field(default=None, max_length=253)
    note: str | None = Field(default=None, max_length=4096)


class ApprovalStatus(Model):
    # An Approval reads Pending from the moment it is created, with no status write: a create
    # cannot carry a status, and the schema's default fills it in on every read. The first
    # status write is then the first change of phase.
    model_config = Model.model_config | {"json_schema_extra": {"default": {}}}

    phase: ApprovalPhase = ApprovalPhase.PENDING
    decided_at: datetime | None = None
    executed_at: datetime | None = None
    execution: str | None = Field(default=None, max_length=253)
    message: str | None = Field(default=None, max_length=4096)
    observed_generation: int | None = None
    #: Decided and Executed, derived from the ledger with the phase (``status_of``).
    conditions: list[Condition] = Field(default_factory=list, max_length=8)
