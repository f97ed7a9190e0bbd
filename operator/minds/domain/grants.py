"""CapabilityGrant rules: its phase, and consuming one operation.

The counter only moves forward, by one, and only while the grant is live; the engine applies
the result with a conditional write, so two invocations racing for the last operation cannot
both win.
"""

from __future__ import annotations

from datetime import datetime

from minds.domain.capabilities.policy import GrantView
from minds.domain.resources.grant import CapabilityGrantSpec, CapabilityGrantStatus, GrantPhase


def phase_of(spec: CapabilityGrantSpec, status: CapabilityGrantStatus, now: datetime) -> GrantPhase:
    """Revoked beats everything; then exhausted, expired, not yet started, active."""
    if spec.revoked:
        return GrantPhase.REVOKED
    if status.operations_used >= spec.operation_cap:
        return GrantPhase.EXHAUSTED
    if now >= spec.expires_at:
        return GrantPhase.EXPIRED
    if spec.not_before is not None and now < spec.not_before:
        return GrantPhase.PENDING
    return GrantPhase.ACTIVE


def consumed(
    spec: CapabilityGrantSpec, status: CapabilityGrantStatus, now: datetime
) -> CapabilityGrantStatus | None:
    """The status after using one operation, or None when the grant cannot be used now."""
    if phase_of(spec, status, now) is not GrantPhase.ACTIVE:
        return None
    used = status.operations_used + 1
    after = status.model_copy(update={"operations_used": used})
    return after.model_copy(update={"phase": phase_of(spec, after, now)})


def view(name: str, spec: CapabilityGrantSpec, status: CapabilityGrantStatus) -> GrantView:
    return GrantView(
        name=name,
        capability=spec.capability,
        target_pattern=spec.target_pattern,
        not_before=spec.not_before,
        expires_at=spec.expires_at,
        operations_remaining=max(0, spec.operation_cap - status.operations_used),
        revoked=spec.revoked,
    )
