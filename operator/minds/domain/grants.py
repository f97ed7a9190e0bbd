"""CapabilityGrant rules: its phase, consuming one operation, and what vouches for it.

The counter only moves forward, by one, and only while the grant is live; the engine applies
the result with a conditional write, so two invocations racing for the last operation cannot
both win. A phase that ended the grant (expired, exhausted, revoked) is final: the admission
policy on status refuses to move it, and the rules here never try.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from minds.domain.capabilities.policy import GrantView
from minds.domain.resources.approval import ApprovalKind, ApprovalSpec, Decision
from minds.domain.resources.grant import CapabilityGrantSpec, CapabilityGrantStatus, GrantPhase

#: Phases a grant never leaves.
TERMINAL = frozenset({GrantPhase.EXPIRED, GrantPhase.EXHAUSTED, GrantPhase.REVOKED})

#: How far the controller's clock and the API server's may disagree when a grant's window is
#: compared with its creation time.
CLOCK_SKEW = timedelta(seconds=60)


def phase_of(spec: CapabilityGrantSpec, status: CapabilityGrantStatus, now: datetime) -> GrantPhase:
    """A terminal phase stays; otherwise revoked beats everything, then exhausted, expired,
    not yet started, active."""
    if status.phase in TERMINAL:
        return status.phase
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


def link_problem(
    name: str,
    spec: CapabilityGrantSpec,
    created: datetime,
    approval: ApprovalSpec | None,
) -> str | None:
    """Why a grant the controller created is not vouched for by the Approval it names, or
    None when it is (or when a person created it: admission named them). The controller's
    own say-so is never enough: the Approval must be a grant request a person approved, for
    exactly this mind, capability, pattern, limits and cap, and the grant no longer than the
    duration asked (``created`` is the API server's creation time)."""
    if spec.approval is None:
        return None
    if spec.approval != name:
        return f"spec.approval {spec.approval} is not this grant's name {name}"
    if approval is None:
        return f"approval {spec.approval} does not exist"
    request = approval.grant
    if approval.kind is not ApprovalKind.GRANT or request is None:
        return f"approval {name} is not a grant request"
    if approval.decision is not Decision.APPROVED:
        return f"approval {name} is not approved"
    asked = (
        approval.mind,
        approval.capability,
        request.target_pattern,
        request.parameter_limits,
        request.operation_cap,
        approval.decided_by,
    )
    held = (
        spec.mind,
        spec.capability,
        spec.target_pattern,
        spec.parameter_limits,
        spec.operation_cap,
        spec.granted_by,
    )
    if held != asked:
        return f"the grant is not what approval {name} approved"
    if spec.expires_at > created + timedelta(seconds=request.duration_seconds) + CLOCK_SKEW:
        return f"the grant outlasts the {request.duration_seconds}s approval {name} approved"
    return None


def view(
    namespace: str, name: str, spec: CapabilityGrantSpec, status: CapabilityGrantStatus
) -> GrantView:
    return GrantView(
        name=name,
        namespace=namespace,
        capability=spec.capability,
        target_pattern=spec.target_pattern,
        not_before=spec.not_before,
        expires_at=spec.expires_at,
        operations_remaining=max(0, spec.operation_cap - status.operations_used),
        revoked=spec.revoked,
    )
