"""Bookkeeping transitions, the budget, and ready -> executing under a lease.

A claim is a conditional status write: of two executors computing it from the same Plan,
one write lands and the other gets a 409, so only one acts on the step. The claim (or the
budget's block) is computed from the settled status, so readying a step and claiming it is
one write, and the rows of both go in one transaction; and a step coming to rest carries the
claim of the step that follows it (``chained``), so a chain of steps costs one write per step.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from minds.domain.execution.machine import (
    RUNNABLE,
    WorkKind,
    next_work,
    settle,
    states,
    summarise,
    with_step,
)
from minds.domain.planning.model import Plan, Step, StepKind, StepState, StepStatus
from minds.domain.resources.plan import PlanResourceStatus
from minds.domain.volition.reconsideration import Trigger
from minds.engine.executing.context import Deps, read_mind, write_plan_status
from minds.engine.executing.journal import Entry, plan_intention, plan_row, tell
from minds.engine.executing.outcome import Claimed, Next, after_step
from minds.engine.executing.reconsidering import answer

#: Step kinds that spend nothing of a plan's budget.
_FREE = frozenset({StepKind.WAIT, StepKind.INTERNAL})


def _settled_rows(
    deps: Deps,
    body: dict[str, Any],
    plan: Plan,
    before: PlanResourceStatus,
    after: PlanResourceStatus,
) -> list[Entry]:
    """The rows of what ``settle`` did: the steps it cancelled."""
    old = states(before)
    return [
        Entry(
            plan_row(
                deps,
                body,
                plan,
                "plan_step_cancelled",
                (state.key,),
                {"step": state.key, "reason": state.reason},
            )
        )
        for state in after.steps
        if old[state.key].status is StepStatus.PENDING and state.status is StepStatus.CANCELLED
    ]


def write_settled(
    deps: Deps,
    body: dict[str, Any],
    plan: Plan,
    before: PlanResourceStatus,
    after: PlanResourceStatus,
) -> bool:
    """Write what ``settle`` computed, when no work follows from it in the same write."""
    written = write_plan_status(deps, body, after)
    if written is None:
        return False
    tell(deps, written, _settled_rows(deps, written, plan, before, after))
    return True


def _spent(plan: Plan, status: PlanResourceStatus, step: Step, now: datetime) -> str | None:
    """Why the budget forbids running ``step`` now, or None."""
    budget = status.budget or plan.budget
    if status.actual.invocations >= budget.invocations:
        return (
            f"budget exhausted: {status.actual.invocations} of {budget.invocations} "
            "invocations used"
        )
    if (
        budget.approvals is not None
        and step.kind is not StepKind.VERIFY
        and status.actual.approvals >= budget.approvals
        and (step.requires_approval or step.kind is StepKind.REQUEST_CAPABILITY)
    ):
        return f"budget exhausted: {status.actual.approvals} approvals asked"
    if budget.wall_seconds is not None:
        started = min((s.started_at for s in status.steps if s.started_at), default=None)
        if started is not None and now - started >= timedelta(seconds=budget.wall_seconds):
            return f"budget exhausted: {budget.wall_seconds} s of wall time"
    return None


def block_over_budget(
    deps: Deps,
    body: dict[str, Any],
    plan: Plan,
    before: PlanResourceStatus,
    settled: PlanResourceStatus,
    step: Step,
    now: datetime,
) -> bool | None:
    """Before a step that invokes a capability: is the budget spent? Then block it, in the
    write that also carries what ``settle`` computed. None: the budget allows the step."""
    if step.kind in _FREE:
        return None
    reason = _spent(plan, settled, step, now)
    if reason is None:
        return None
    state = states(settled)[step.key]
    blocked = state.model_copy(update={"status": StepStatus.BLOCKED, "reason": reason})
    written = write_plan_status(deps, body, summarise(plan, with_step(settled, blocked)))
    if written is None:
        return False
    after_step(
        deps, written, plan, blocked, [], _settled_rows(deps, written, plan, before, settled)
    )
    answer(deps, written, plan, plan_intention(deps, written, plan), Trigger.BUDGET, cause=reason)
    return True


def _started(deps: Deps, body: dict[str, Any], plan: Plan, state: StepState) -> Entry:
    step = plan.step(state.key)
    assert step is not None
    return Entry(
        plan_row(
            deps,
            body,
            plan,
            "plan_step_started",
            (state.key, str(state.attempts)),
            {"step": state.key, "kind": step.kind.value, "attempt": state.attempts},
        )
    )


def claim(
    deps: Deps,
    body: dict[str, Any],
    plan: Plan,
    step: Step,
    before: PlanResourceStatus,
    claimed: PlanResourceStatus,
) -> Claimed | None:
    """Write the claim ``next_work`` computed from the settled status: readying the step (and
    any other bookkeeping) and claiming it is one write. The claimed step, or None when another
    writer came first."""
    written = write_plan_status(deps, body, claimed)
    if written is None:
        return None
    state = states(claimed)[step.key]
    rows = _settled_rows(deps, written, plan, before, claimed)
    tell(deps, written, [*rows, _started(deps, written, plan, state)])
    return Claimed(written, step, state)


def chained(
    deps: Deps, plan: Plan, body: dict[str, Any], adopted: PlanResourceStatus
) -> Next | None:
    """A step came to rest in ``adopted``: the claim of the step that runs next, computed as a
    tick would compute it, when nothing stands between them (the plan still runs and is not
    being deleted, its Mind is active, the budget allows the step). Anything else, including a
    step that waits, an Approval to follow or a budget to block on, is left to the next tick,
    which writes it as its own transition."""
    if adopted.phase not in RUNNABLE or body["metadata"].get("deletionTimestamp"):
        return None
    mind = read_mind(deps, body["metadata"]["namespace"], plan.mind)
    if mind is None or not mind.active:
        return None
    now = deps.clock()
    settled = settle(plan, adopted, now)
    work = next_work(plan, settled, now, deps.holder, deps.timeouts)
    if work.kind is not WorkKind.RUN or work.claim is None or work.step is None:
        return None
    step = plan.step(work.step)
    if step is None or (step.kind not in _FREE and _spent(plan, settled, step, now) is not None):
        return None
    state = states(work.claim)[step.key]
    rows = _settled_rows(deps, body, plan, adopted, work.claim)
    return Next(work.claim, step, [*rows, _started(deps, body, plan, state)])
