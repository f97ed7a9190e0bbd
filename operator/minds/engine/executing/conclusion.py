"""What a finished plan means for its intention, and a new revision for a failed one.

Every effect here is idempotent, so a controller that died half-way through is simply
followed by one that does it again (the Kubernetes Event is posted only by whoever first
records the ledger event).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from minds.domain.execution.machine import FINAL_STEP
from minds.domain.intentions import IntentionRecord, IntentionStatus
from minds.domain.planning.model import Plan, PlanOrigin, PlanStatus, StepKind, StepStatus, Strategy
from minds.domain.procedures import ProceduralMemory, procedure_steps, render_procedure
from minds.domain.resources.kinds import PLAN
from minds.domain.resources.plan import PlanResourceStatus
from minds.domain.volition.reconsideration import MAX_REPLANS
from minds.engine.conditional import write_status
from minds.engine.executing.context import Deps
from minds.engine.executing.journal import Notice, plan_intention, record


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
    now = deps.clock()
    # Nothing of a finished plan waits on a person any more.
    deps.approvals.abandon_plan(meta["namespace"], meta["uid"], "the plan that asked completed")
    completed = Notice("Normal", "Completed", "plan completed")
    record(deps, body, plan, "plan_completed", (), {"progress": status.progress}, completed)
    done = [s.key for s in status.steps if s.status is StepStatus.COMPLETED]
    if done:  # a plan whose every step was skipped did nothing to remember
        _remember(deps, body, plan, intention, done)
    if plan.strategy is Strategy.DIAGNOSE_THEN_ESCALATE:
        # Telling a person is not doing what was intended.
        deps.ledger.transition_intention(
            intention.id,
            IntentionStatus.BLOCKED,
            "escalated to the operator after the action failed",
            now,
        )
    elif intention.status in (IntentionStatus.ACTIVE, IntentionStatus.BLOCKED):
        deps.ledger.transition_intention(
            intention.id, IntentionStatus.FULFILLED, "plan completed", now
        )


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
    failed = [s for s in status.steps if s.status is StepStatus.FAILED]
    reason = "; ".join(f"{s.key}: {s.reason}" for s in failed)[:2000] or "a step failed"
    failed_notice = Notice("Warning", "Failed", reason)
    payload = {"progress": status.progress, "reason": reason}
    record(deps, body, plan, "plan_failed", (), payload, failed_notice)
    if intention.status in (IntentionStatus.FULFILLED, IntentionStatus.ABANDONED):
        return
    replan(deps, body, plan, intention, reason)


Conclusion = Callable[[Deps, dict[str, Any], Plan, PlanResourceStatus, IntentionRecord], None]

#: Finished phases the executor still has something to do for (a replanning plan failed and
#: its successor may not exist yet: the same path finishes what was begun).
CONCLUSIONS: dict[PlanStatus, Conclusion] = {
    PlanStatus.COMPLETED: _completed,
    PlanStatus.FAILED: _failed,
    PlanStatus.REPLANNING: _failed,
}


def _close(deps: Deps, body: dict[str, Any], phase: PlanStatus, reason: str, why: str) -> bool:
    """A failed plan runs no further: its open steps are cancelled and the Approvals and grant
    requests they wait on withdrawn, so nobody approves work for a dead plan. ``phase``: FAILED
    (it stays failed) or REPLANNING (a new revision follows)."""
    meta = body["metadata"]

    def mark(fresh: dict[str, Any]) -> tuple[dict[str, Any] | None, bool]:
        st = PlanResourceStatus.model_validate(fresh.get("status") or {})
        if st.phase is not PlanStatus.FAILED:
            return None, st.phase is phase
        steps = [
            s
            if s.status in FINAL_STEP
            else s.model_copy(update={"status": StepStatus.CANCELLED, "lease": None, "reason": why})
            for s in st.steps
        ]
        closed = st.model_copy(update={"phase": phase, "steps": steps, "reason": reason})
        return (None, True) if closed == st else (closed.to_k8s(), True)

    _, ok = write_status(deps.resources, PLAN, meta["namespace"], meta["name"], mark)
    if not ok:
        return False
    deps.approvals.abandon_plan(
        meta["namespace"],
        meta["uid"],
        "the plan that asked was replaced"
        if phase is PlanStatus.REPLANNING
        else "the plan that asked failed",
    )
    return True


def _give_up(
    deps: Deps, body: dict[str, Any], intention: IntentionRecord, reason: str, why: str
) -> None:
    _close(deps, body, PlanStatus.FAILED, reason, "cancelled: the plan failed")
    deps.ledger.transition_intention(intention.id, IntentionStatus.ABANDONED, why, deps.clock())


def replan(
    deps: Deps, body: dict[str, Any], plan: Plan, intention: IntentionRecord, reason: str
) -> str | None:
    """A new revision instead of the failed plan, within the replan limit."""
    meta = body["metadata"]
    now = deps.clock()
    if plan.origin is PlanOrigin.OPERATOR:
        _give_up(
            deps, body, intention, reason, f"the operator's plan failed ({reason}); write a new one"
        )
        return None
    if intention.replans >= MAX_REPLANS:
        _give_up(
            deps,
            body,
            intention,
            reason,
            f"replan limit ({MAX_REPLANS}) reached; last failure: {reason}",
        )
        return None
    if not _close(deps, body, PlanStatus.REPLANNING, reason, "cancelled for a new revision"):
        return None
    # Idempotent if a crash interrupted an earlier attempt: revision n failing means n replans
    # so far, and its strategy is recorded once (an intention may start with strategies that
    # failed on its subject before, so the list is not one entry per revision).
    failed = list(intention.failed_strategies)
    if plan.strategy.value not in failed:
        failed.append(plan.strategy.value)
    intention = deps.ledger.update_intention(
        intention.id,
        replans=max(intention.replans, plan.revision),
        failed_strategies=failed,
        at=now,
    )
    record(deps, body, plan, "plan_reconsidered", (), {"reason": reason, "trigger": "failed"})
    planned = deps.planning.plan(intention, revision=plan.revision + 1, supersedes=meta["name"])
    new_name = planned.plan_name

    def supersede(fresh: dict[str, Any]) -> tuple[dict[str, Any] | None, None]:
        st = PlanResourceStatus.model_validate(fresh.get("status") or {})
        phase = PlanStatus.SUPERSEDED if new_name else PlanStatus.FAILED
        why = f"superseded by {new_name}" if new_name else f"no new plan: {planned.result.reason}"
        return st.model_copy(update={"phase": phase, "reason": why}).to_k8s(), None

    write_status(deps.resources, PLAN, meta["namespace"], meta["name"], supersede)
    if new_name is None:
        deps.ledger.transition_intention(
            intention.id,
            IntentionStatus.ABANDONED,
            f"no possible plan after {reason}: {planned.result.reason}",
            now,
        )
        return None
    deps.ledger.update_intention(intention.id, plan=new_name, at=now)
    record(
        deps,
        body,
        plan,
        "plan_replanned",
        (),
        {"from": meta["name"], "to": new_name, "reason": reason},
        Notice("Normal", "Replanned", f"superseded by {new_name}"),
    )
    return new_name
