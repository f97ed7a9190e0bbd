"""Bookkeeping transitions, the budget, and ready -> executing under a lease.

A claim is a conditional status write: of two executors computing it from the same Plan,
one write lands and the other gets a 409, so only one acts on the step. The claim (or the
budget's block) is computed from the settled status, so readying a step and claiming it is
one write, and the rows of both go in one transaction; and a step coming to rest carries the
claim of the step that follows it (``chained``), so a chain of steps costs one write per step.
"""

from __future__ import annotations

from datetime import datetime
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
from minds.domain.planning import budget
from minds.domain.planning.model import (
    Budget,
    Plan,
    ResourceUse,
    Step,
    StepKind,
    StepState,
    StepStatus,
)
from minds.domain.resources.mind import PolicyDecision
from minds.domain.resources.plan import PlanResourceStatus
from minds.domain.volition.reconsideration import Trigger
from minds.engine.executing.context import Deps, read_mind, write_plan_status
from minds.engine.executing.invoking import invocation
from minds.engine.executing.journal import Entry, plan_intention, plan_row, tell
from minds.engine.executing.outcome import Claimed, Next, after_step
from minds.engine.executing.reconsidering import answer


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


def _asks(deps: Deps, body: dict[str, Any], plan: Plan, step: Step, attempt: int) -> bool:
    """Whether the step would ask a person: it says so, or policy (with the grants held now)
    sends it for approval. Policy is previewed without side effects, and no dry run."""
    if step.kind is not StepKind.CAPABILITY or step.requires_approval:
        return step.requires_approval
    seen = deps.capabilities.preview(invocation(body, plan, step, attempt), dry_run=False)
    return seen.decision is PolicyDecision.APPROVE


def over_budget(
    deps: Deps,
    body: dict[str, Any],
    plan: Plan,
    status: PlanResourceStatus,
    step: Step,
    now: datetime,
) -> str | None:
    """Why the budget forbids running ``step`` now, or None. Policy is asked whether the step
    would ask a person only when that could matter: the approvals cap is reached."""
    cap = _budget(plan, status)
    use = budget.used(status.actual, status.steps, now)
    asks = (
        cap.approvals is not None
        and use.approvals + 1 > cap.approvals
        and _asks(deps, body, plan, step, states(status)[step.key].attempts + 1)
    )
    return budget.blocking(cap, use, budget.spends(step, deps.registry, asks=asks))


def _budget(plan: Plan, status: PlanResourceStatus) -> Budget:
    """The budget admission settled on (never more than the Mind allows), else the plan's."""
    return status.budget or plan.budget


def priced(deps: Deps, plan: Plan, step: Step, claimed: PlanResourceStatus) -> PlanResourceStatus:
    """The claim counts the step's price in ``actual.money`` before it acts, so a controller
    that stops mid-action cannot leave money spent and uncounted."""
    cost = budget.price(step, deps.registry)
    if not cost:
        return claimed
    actual = budget.added(claimed.actual, ResourceUse(money=cost))
    return claimed.model_copy(update={"actual": actual})


def block_over_budget(
    deps: Deps,
    body: dict[str, Any],
    plan: Plan,
    before: PlanResourceStatus,
    settled: PlanResourceStatus,
    step: Step,
    now: datetime,
) -> bool | None:
    """Before a step that spends of the budget: would it pass a cap? Then block it, in the
    write that also carries what ``settle`` computed. None: the budget allows the step."""
    reason = over_budget(deps, body, plan, settled, step, now)
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
    intention = plan_intention(deps, written, plan)
    answer(deps, written, plan, intention, Trigger.BUDGET, cause=reason, once_per=(reason,))
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
    claimed = priced(deps, plan, step, claimed)
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
    being deleted or cancelled, its Mind is active, the budget allows the step). Anything
    else, including a step that waits, an Approval to follow or a budget to block on, is left
    to the next tick, which writes it as its own transition."""
    if adopted.phase not in RUNNABLE or body["metadata"].get("deletionTimestamp"):
        return None
    if (body.get("spec") or {}).get("cancellation"):
        return None  # a person cancelled it: the next tick stops it, nothing more starts
    mind = read_mind(deps, body["metadata"]["namespace"], plan.mind)
    if mind is None or not mind.active:
        return None
    now = deps.clock()
    settled = settle(plan, adopted, now)
    work = next_work(plan, settled, now, deps.holder, deps.timeouts)
    if work.kind is not WorkKind.RUN or work.claim is None or work.step is None:
        return None
    step = plan.step(work.step)
    if step is None:
        return None
    # No policy is read inside a write: a step that might ask a person is assumed to, and
    # one the budget might block is left to the tick, which asks policy.
    spent = budget.spends(step, deps.registry, asks=step.kind is StepKind.CAPABILITY)
    use = budget.used(settled.actual, settled.steps, now)
    if budget.blocking(_budget(plan, settled), use, spent) is not None:
        return None
    claim = priced(deps, plan, step, work.claim)
    state = states(claim)[step.key]
    rows = _settled_rows(deps, body, plan, adopted, claim)
    return Next(claim, step, [*rows, _started(deps, body, plan, state)])
