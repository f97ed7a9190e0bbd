"""Writing a step's new state: conditionally on the step being as we left it, then its rows.

The status write comes first and decides: only the executor whose write landed records the
step's ledger row, posts what a person reads and applies the effects.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from minds.domain.execution.adopt import Effect
from minds.domain.execution.machine import states, summarise, with_step
from minds.domain.planning.model import Plan, StepState, StepStatus
from minds.domain.resources.kinds import PLAN
from minds.domain.resources.plan import PlanResourceStatus
from minds.engine.conditional import write_status
from minds.engine.executing.context import Deps
from minds.engine.executing.effects import apply_effects
from minds.engine.executing.journal import plan_event

Expect = Callable[[StepState], bool]
Adjust = Callable[[PlanResourceStatus], PlanResourceStatus]

#: A step that came to rest: its ledger row, and how the Kubernetes Event about it reads.
FINISHED: dict[StepStatus, tuple[str, str]] = {
    StepStatus.COMPLETED: ("plan_step_completed", "Normal"),
    StepStatus.SKIPPED: ("plan_step_skipped", "Normal"),
    StepStatus.FAILED: ("plan_step_failed", "Warning"),
    StepStatus.BLOCKED: ("plan_step_blocked", "Warning"),
}


def leased_to(holder: str, attempts: int) -> Expect:
    """The step is still executing under our claim, for the attempt we claimed: only then may
    what we did be written back."""

    def mine(current: StepState) -> bool:
        return (
            current.status is StepStatus.EXECUTING
            and current.lease is not None
            and current.lease.holder == holder
            and current.attempts == attempts
        )

    return mine


def apply_step(
    deps: Deps,
    body: dict[str, Any],
    plan: Plan,
    key: str,
    expect: Expect,
    new: StepState,
    effects: list[Effect],
    adjust: Adjust | None = None,
) -> bool:
    """Write one step's new state if the step is still as we left it; then its effects."""
    meta = body["metadata"]

    def compute(fresh: dict[str, Any]) -> tuple[dict[str, Any] | None, bool]:
        status = PlanResourceStatus.model_validate(fresh.get("status") or {})
        current = states(status).get(key)
        if current is None or not expect(current):
            return None, False
        updated = with_step(status, new)
        if adjust is not None:
            updated = adjust(updated)
        return summarise(plan, updated).to_k8s(), True

    written, ok = write_status(deps.resources, PLAN, meta["namespace"], meta["name"], compute)
    if ok and written is not None:
        _after_step(deps, written, plan, new, effects)
    return ok


def _after_step(
    deps: Deps, body: dict[str, Any], plan: Plan, new: StepState, effects: list[Effect]
) -> None:
    finished = FINISHED.get(new.status)
    if finished is not None:
        type_, severity = finished
        plan_event(
            deps,
            body,
            plan,
            type_,
            (new.key, str(new.attempts)),
            {
                "step": new.key,
                "reason": new.reason,
                "observation": new.observation.to_k8s() if new.observation else None,
            },
        )
        fallback = "done" if severity == "Normal" else new.status.value
        deps.events.post(
            body,
            type_=severity,
            reason=type_.removeprefix("plan_"),
            message=f"{new.key}: {new.reason or fallback}",
        )
    apply_effects(deps, body, plan, effects)
