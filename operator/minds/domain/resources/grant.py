"""The ``CapabilityGrant`` custom resource: temporary, scoped authority for one mind.

A grant turns a policy answer of "approve" into "allow" for one capability on targets matching a
pattern, within parameter limits, inside a time window and up to an operation cap. It never
widens beyond those bounds. Its counter moves only by conditional status writes.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

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

#: A mind's name, optionally preceded by its namespace (a DNS label) and a slash.
MIND_REFERENCE = r"^([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?/)?" + DNS_SUBDOMAIN.removeprefix("^")


class GrantPhase(StrEnum):
    PENDING = "Pending"
    ACTIVE = "Active"
    EXPIRED = "Expired"
    EXHAUSTED = "Exhausted"
    REVOKED = "Revoked"


class CapabilityGrantSpec(Model):
    model_config = Model.model_config | {
        "json_schema_extra": cel_rules(
            cel(
                "!has(self.notBefore) || timestamp(self.notBefore) < timestamp(self.expiresAt)",
                "notBefore must be before expiresAt",
                fieldPath=".notBefore",
            ),
            cel(
                "!has(oldSelf.revoked) || !oldSelf.revoked || self.revoked",
                "a revoked grant stays revoked",
                fieldPath=".revoked",
            ),
            # Who granted it is set at creation (admission checks it) and never added later.
            cel(
                "has(self.grantedBy) == has(oldSelf.grantedBy) && "
                "(!has(self.grantedBy) || self.grantedBy == oldSelf.grantedBy)",
                "grantedBy is immutable",
                fieldPath=".grantedBy",
            ),
            cel(
                "has(self.approval) == has(oldSelf.approval) && "
                "(!has(self.approval) || self.approval == oldSelf.approval)",
                "approval is immutable",
                fieldPath=".approval",
            ),
        )
    }

    mind: str = Field(
        max_length=317,
        pattern=MIND_REFERENCE,
        description="The mind this grant is for: NAME for a mind of the grant's own namespace, "
        "NAMESPACE/NAME for a mind of another namespace (a grant lets a mind act only in the "
        "namespace it is held in).",
        json_schema_extra=immutable("mind"),
    )
    capability: str = Field(
        max_length=128, pattern=CAPABILITY_NAME, json_schema_extra=immutable("capability")
    )
    target_pattern: str = Field(max_length=253, json_schema_extra=immutable("targetPattern"))
    parameter_limits: FreeForm = Field(
        default_factory=dict, json_schema_extra=immutable("parameterLimits")
    )
    not_before: datetime | None = Field(default=None, json_schema_extra=immutable("notBefore"))
    expires_at: datetime = Field(json_schema_extra=immutable("expiresAt"))
    operation_cap: int = Field(ge=1, le=10_000, json_schema_extra=immutable("operationCap"))
    reason: str = Field(min_length=1, max_length=4096)
    risk: str = Field(default="", max_length=4096)
    mitigation: str = Field(default="", max_length=4096)
    fallback: str = Field(default="", max_length=4096)
    revoked: bool = False
    granted_by: str | None = Field(
        default=None,
        max_length=253,
        description="Who granted it: the creator's own username, checked at admission; for a "
        "grant the controller created, the person who approved the request.",
    )
    approval: str | None = Field(
        default=None,
        max_length=253,
        pattern=DNS_SUBDOMAIN,
        description="The approved grant request (an Approval of this namespace, and this "
        "grant's name) a grant the controller created comes from; people leave it unset.",
    )


class CapabilityGrantStatus(Model):
    phase: GrantPhase = GrantPhase.PENDING
    operations_used: int = Field(default=0, ge=0)
    granted_by: str | None = Field(default=None, max_length=253)
    approval: str | None = Field(default=None, max_length=253)
    message: str | None = Field(default=None, max_length=4096)
    #: Active, Exhausted and Expired, derived from the phase in the write that changes it.
    conditions: list[Condition] = Field(default_factory=list, max_length=8)
