"""What a finished plan means for its intention: the trigger it raises, answered by
``reconsidering`` (the domain's ``reconsider()``).

Every effect here is idempotent, so a controller that died half-way through is simply
followed by one that does it again (the Kubernetes Event is posted only by whoever first
records the ledger event).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from minds.domain.intentions import IntentionRecord
from minds.domain.planning.model import Plan, PlanStatus, StepKind, StepStatus, Strategy
from minds.domain.procedures import ProceduralMemory, procedure_steps, render_procedure
from minds.domain.resources.plan import PlanResourceStatus
from minds.domain.volition.reconsideration import Trigger, Verdict, trigger_of_failure
from minds.engine.executing.context import Deps
from minds.engine.executing.journal import Notice, plan_intention, record
from minds.engine.executing.reconsidering import (
    answer,
    close,
    close_subordinates,
    reconsidered,
    replan,
    resumed_anew,
)


def conclude(deps: Deps, body: dict[str, Any], plan: Plan, status: PlanResourceStatus) -> None:
    intention = plan_intention(deps, body, plan)
    if intention.plan not in (None, body["metadata"]["name"]):
        return  # the intention has moved on to another plan
    CONCLUSIONS[status.phase](deps, body, plan, status, intention)


def _completed(
    deps: Deps,
    body: dict[str, Any],
    plan: Plan,
    status: PlanResourceStatus,
    intention: IntentionRecord,
) -> None:
    meta = body["metadata"]
    # Nothing of a finished plan waits on a person any more.
    deps.approvals.abandon_plan(meta["namespace"], meta["uid"], "the plan that asked completed")
    # Told on the Plan itself (``minds.domain.story``).
    record(deps, body, plan, "plan_completed", (), {"progress": status.progress})
    done = [s.key for s in status.steps if s.status is StepStatus.COMPLETED]
    if done:  # a plan whose every step was skipped did nothing to remember
        _remember(deps, body, plan, intention, done)
    if intention.status.final:
        return
    escalated = plan.strategy is Strategy.DIAGNOSE_THEN_ESCALATE
    answer(deps, body, plan, intention, Trigger.GOAL_COMPLETION, escalated=escalated)


def _remember(
    deps: Deps, body: dict[str, Any], plan: Plan, intention: IntentionRecord, done: list[str]
) -> None:
    """What a completed plan did becomes a procedure the mind can reuse."""
    meta = body["metadata"]
    confirmed = any(
        s.kind in (StepKind.VERIFY, StepKind.MONITOR) and s.key in done for s in plan.steps
    )
    text, confidence = render_procedure(
        plan.objective,
        procedure_steps(plan, done),
        confirmed=confirmed,
        revision=plan.revision,
        earlier_failures=plan.revision - 1,
    )
    deps.ledger.store_procedure(
        ProceduralMemory(
            id=f"proc-{meta['uid']}",
            namespace=meta["namespace"],
            mind=plan.mind or "-",
            subject=intention.subject or plan.objective[:200],
            text=text,
            confidence=confidence,
            plan=meta["name"],
            revision=plan.revision,
            created_at=deps.clock(),
        )
    )


def _failed(
    deps: Deps,
    body: dict[str, Any],
    plan: Plan,
    status: PlanResourceStatus,
    intention: IntentionRecord,
) -> None:
    failed, reason, trigger = _failure(status)
    failed_notice = Notice("Warning", "Failed", reason)
    payload = {"progress": status.progress, "reason": reason}
    record(deps, body, plan, "plan_failed", (), payload, failed_notice)
    if intention.status.final:
        # Answered before a crash, or overtaken (the world healed): only its steps are left.
        close(deps, body, PlanStatus.FAILED, reason, "cancelled: the plan failed")
        return
    close_subordinates(deps, intention, f"the plan that asked ended: {reason}")
    if not failed:
        return  # closed by a review's answer, which was the reconsideration
    answer(deps, body, plan, intention, trigger, cause=reason)


def _failure(status: PlanResourceStatus) -> tuple[bool, str, Trigger]:
    """Whether a step failed, what the failed steps say, and the trigger the first raises."""
    failed = [s for s in status.steps if s.status is StepStatus.FAILED]
    reason = "; ".join(f"{s.key}: {s.reason}" for s in failed)[:2000] or "a step failed"
    return bool(failed), reason, trigger_of_failure(failed[0].reason if failed else None)


def _replanning(
    deps: Deps,
    body: dict[str, Any],
    plan: Plan,
    status: PlanResourceStatus,
    intention: IntentionRecord,
) -> None:
    """A replan was decided and begun, and its successor may not exist yet: finish it (the
    decision is recorded; deciding again could now count the begun replan against the limit)."""
    if intention.status.final:
        return
    # A replan begun because the intention's means came back may use the same strategy.
    reuse = resumed_anew(deps, body)
    trigger = Trigger.CAPABILITY_CHANGE if reuse else _failure(status)[2]
    reason = status.reason or "a step failed"
    replan(deps, body, plan, intention, reason, trigger, reuse=reuse)
    reconsidered(deps, body, plan, trigger, Verdict.REPLAN, reason)


Conclusion = Callable[[Deps, dict[str, Any], Plan, PlanResourceStatus, IntentionRecord], None]

#: Finished phases the executor still has something to do for.
CONCLUSIONS: dict[PlanStatus, Conclusion] = {
    PlanStatus.COMPLETED: _completed,
    PlanStatus.FAILED: _failed,
    PlanStatus.REPLANNING: _replanning,
}
