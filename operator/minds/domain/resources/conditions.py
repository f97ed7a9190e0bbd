"""The conditions a Plan and a CapabilityGrant show, derived from their phase alone.

Each kind tells its state in the ``metav1.Condition`` shape, so ``kubectl wait
--for=condition=...`` and dashboards work without knowing our phases. They are a reading of the
phase the controller writes, never a second state: derived in the write that changes the phase,
so they cost no request of their own. (An Approval's come from the ledger, with its phase:
``minds.domain.approvals.status_of``.)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Final

from minds.domain.planning.model import PlanStatus
from minds.domain.resources.common import Condition, ConditionStatus, set_condition
from minds.domain.resources.grant import GrantPhase

T, F = ConditionStatus.TRUE, ConditionStatus.FALSE

VALIDATED, PROGRESSING, COMPLETE, FAILED = "Validated", "Progressing", "Complete", "Failed"

#: Like a Job: ``Progressing`` while it may still run; ``Complete`` and ``Failed`` appear once
#: it finished, one of them True. A blocked plan waits for a person, so it is not progressing.
_PROGRESS: Final[Mapping[PlanStatus, tuple[ConditionStatus, str]]] = {
    PlanStatus.DRAFT: (F, "Draft"),
    PlanStatus.VALIDATED: (T, "Validated"),
    PlanStatus.WAITING: (T, "Waiting"),
    PlanStatus.EXECUTING: (T, "Executing"),
    PlanStatus.AWAITING_APPROVAL: (T, "AwaitingApproval"),
    PlanStatus.REPLANNING: (T, "Replanning"),
    PlanStatus.BLOCKED: (F, "Blocked"),
    PlanStatus.COMPLETED: (F, "Completed"),
    PlanStatus.FAILED: (F, "StepFailed"),
    PlanStatus.ABANDONED: (F, "Abandoned"),
    PlanStatus.SUPERSEDED: (F, "Superseded"),
}
#: A finished plan's end: (Complete, Failed). A superseded plan was replaced by a new revision
#: after it failed, an abandoned one was cancelled or lost its reason to run.
_END: Final[Mapping[PlanStatus, tuple[ConditionStatus, ConditionStatus]]] = {
    PlanStatus.COMPLETED: (T, F),
    PlanStatus.FAILED: (F, T),
    PlanStatus.ABANDONED: (F, T),
    PlanStatus.SUPERSEDED: (F, T),
}


def _set(
    conditions: list[Condition],
    type_: str,
    status: ConditionStatus,
    reason: str,
    message: str,
    generation: int | None,
    now: datetime,
) -> list[Condition]:
    new = Condition(
        type=type_,
        status=status,
        reason=reason,
        message=message[:4096],
        last_transition_time=now,
        observed_generation=generation,
    )
    return set_condition(conditions, new)


def plan_conditions(
    previous: Sequence[Condition],
    phase: PlanStatus,
    *,
    valid: bool | None,
    progress: str | None,
    reason: str | None,
    generation: int | None,
    now: datetime,
) -> list[Condition]:
    """``valid`` None: not validated yet (admission has not run), so nothing is said of it."""
    out = list(previous)
    if valid is not None:
        said = "valid: it may run" if valid else "invalid: it stays a draft and never runs"
        out = _set(out, VALIDATED, T if valid else F, "Valid" if valid else "Invalid", said,
                   generation, now)  # fmt: skip
    moving, why = _PROGRESS[phase]
    done = f"{progress} steps done" if progress else ""
    message = "; ".join(p for p in (phase.value, done, reason or "") if p)
    out = _set(out, PROGRESSING, moving, why, message, generation, now)
    end = _END.get(phase)
    if end is not None:
        complete, failed = end
        out = _set(out, COMPLETE, complete, why, message, generation, now)
        out = _set(out, FAILED, failed, why, message, generation, now)
    return out


ACTIVE, EXHAUSTED, EXPIRED = "Active", "Exhausted", "Expired"

_GRANT: Final[Mapping[GrantPhase, tuple[ConditionStatus, ConditionStatus, ConditionStatus]]] = {
    GrantPhase.PENDING: (F, F, F),
    GrantPhase.ACTIVE: (T, F, F),
    GrantPhase.EXHAUSTED: (F, T, F),
    GrantPhase.EXPIRED: (F, F, T),
    GrantPhase.REVOKED: (F, F, F),
}


def grant_conditions(
    previous: Sequence[Condition],
    phase: GrantPhase,
    *,
    used: int,
    message: str | None,
    generation: int | None,
    now: datetime,
) -> list[Condition]:
    """Active, Exhausted and Expired, each with the phase as its reason: one of them True
    while the grant is in that phase, all False while it is Pending (not yet valid)."""
    said = message or f"{phase.value.lower()}; {used} operation(s) used"
    out = list(previous)
    for type_, status in zip((ACTIVE, EXHAUSTED, EXPIRED), _GRANT[phase], strict=True):
        out = _set(out, type_, status, phase.value, said, generation, now)
    return out
