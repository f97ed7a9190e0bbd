"""An executing step whose lease expired (its executor stopped mid-action), and a blocked step
a person releases.

What the dead executor did is read from the ledger's write-ahead row for the step's origin
key, never guessed: an outcome is adopted, a started action without one is repeated only when
the capability is idempotent, and one that never started runs as the same attempt.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from minds.domain.approvals import approval_name, releaser_refused
from minds.domain.execution.adopt import Acted, ActKind, Effect, EffectKind, after_act
from minds.domain.execution.machine import states
from minds.domain.executions import ExecutionOutcome, ExecutionRecord, ExecutionStatus
from minds.domain.intentions import IntentionStatus
from minds.domain.planning.model import Plan, PlanStatus, Step, StepKind, StepState, StepStatus
from minds.domain.resources.approval import ApprovalKind
from minds.domain.resources.kinds import APPROVAL
from minds.domain.resources.plan import (
    PlanResourceStatus,
    Release,
    ReleaseRefused,
    read_release,
)
from minds.domain.story import Reason
from minds.engine.executing.context import Deps, read_plan
from minds.engine.executing.invoking import origin
from minds.engine.executing.journal import Notice, plan_intention, record
from minds.engine.executing.outcome import Expect, apply_step
from minds.engine.ports import NotFound


def _exists(deps: Deps, namespace: str, name: str) -> bool:
    try:
        deps.resources.get(APPROVAL, namespace, name)
    except NotFound:
        return False
    return True


def _pending(
    step: Step, state: StepState, name: str, now: datetime
) -> tuple[StepState, list[Effect]]:
    """Back to waiting on the Approval already raised: the person is not asked twice (an
    approved one is claimed and acted on by whoever follows it next)."""
    return after_act(
        step, state, Acted(ActKind.PENDING, f"waiting for approval {name}", approval=name), now
    )


def recover(
    deps: Deps,
    body: dict[str, Any],
    plan: Plan,
    step: Step,
    status: PlanResourceStatus,
    now: datetime,
) -> bool:
    """An executing step whose lease expired: its executor stopped mid-action."""
    state = states(status)[step.key]
    lease = state.lease
    namespace = body["metadata"]["namespace"]

    def same(current: StepState) -> bool:
        return current.status is StepStatus.EXECUTING and current.lease == lease

    def write(new: StepState, effects: list[Effect]) -> bool:
        return apply_step(deps, body, plan, step.key, same, new, effects)

    retry = state.model_copy(update={"status": StepStatus.READY, "lease": None})
    step_origin = origin(body, plan, step, state.attempts)
    if step.kind is StepKind.REQUEST_CAPABILITY:
        asked = approval_name(step_origin.approval(), ApprovalKind.GRANT)
        if not _exists(deps, namespace, asked):
            return write(retry, [])
        return write(*_pending(step, state, asked, now))
    if step.kind is not StepKind.CAPABILITY or step.capability is None:
        # Checks, waits and internal actions are safe to run again.
        return write(retry, [])
    found = deps.ledger.execution(step_origin.execution().key())
    if found is not None and found[1] is not None:
        return _adopt(deps, body, plan, step, state, same, (found[0], found[1]), now)
    spec = deps.registry[step.capability]
    if found is not None:
        # A write-ahead row without an outcome: the action may have happened. Whether a person
        # approved it or not, it is not repeated blindly.
        if spec.read_only or spec.idempotent:
            return write(retry, [])
        reason = "outcome unknown; not repeating a non-idempotent action without verification"
        blocked = state.model_copy(
            update={"status": StepStatus.BLOCKED, "lease": None, "reason": reason}
        )
        return write(blocked, [Effect(EffectKind.UNVERIFIED_INTENTION, step.key, reason)])
    name = approval_name(step_origin.approval(), ApprovalKind.ACTION)
    if _exists(deps, namespace, name):
        return write(*_pending(step, state, name, now))
    # No write-ahead row: the action never started. Run it, as the same attempt.
    return write(retry.model_copy(update={"attempts": max(0, state.attempts - 1)}), [])


def _adopt(
    deps: Deps,
    body: dict[str, Any],
    plan: Plan,
    step: Step,
    state: StepState,
    same: Expect,
    found: tuple[ExecutionRecord, ExecutionOutcome],
    now: datetime,
) -> bool:
    """The dead executor's action finished: its recorded outcome is the step's."""
    record, outcome = found
    kind = ActKind.EXECUTED if outcome.status is ExecutionStatus.EXECUTED else ActKind.FAILED
    new, effects = after_act(
        step, state, Acted(kind, outcome.summary, dict(outcome.fields), str(record.id)), now
    )
    if state.approval_ref:
        effects = [
            Effect(EffectKind.RESUME_INTENTION, step.key, "approved and executed"),
            Effect(EffectKind.FULFIL_SUBORDINATE, step.key, "approved and executed"),
            *effects,
        ]
    ok = apply_step(deps, body, plan, step.key, same, new, effects)
    if ok and state.approval_ref:
        deps.approvals.executed(
            body["metadata"]["namespace"],
            state.approval_ref,
            str(record.id),
            f"{kind.value}: {outcome.summary}",
        )
    return ok


def release(deps: Deps, namespace: str, name: str, value: str) -> bool:
    """A person checked a blocked step and lets it run again (as a new attempt). ``value``:
    the release annotation as written; a value that does not name an existing step and a
    person the Mind names as an approver releases nothing (fails closed) and says why."""
    body, plan, status = read_plan(deps, namespace, name)
    asked = read_release(value, [step.key for step in plan.steps])
    refusal = (
        asked.reason
        if isinstance(asked, ReleaseRefused)
        else releaser_refused(
            asked.by,
            plan.mind,
            deps.approvals.mind_approvers(namespace, plan.mind) if plan.mind else None,
        )
    )
    if refusal is not None or not isinstance(asked, Release):
        deps.events.post(
            body,
            type_="Warning",
            reason=Reason.RELEASE_REFUSED,
            message=f"release refused, nothing released: {refusal}",
        )
        return False
    key, by = asked.step, asked.by
    state = states(status).get(key)
    if state is None or state.status is not StepStatus.BLOCKED:
        now_is = "no such step" if state is None else state.status.value
        deps.events.post(
            body,
            type_="Warning",
            reason=Reason.RELEASE_IGNORED,
            message=f"{key}: not blocked ({now_is}); nothing released (asked by {by})",
        )
        return False
    released = state.model_copy(update={"status": StepStatus.READY, "reason": f"released by {by}"})

    # A blocked step has blocked the plan; lift the plan back into the runnable phases.
    def reopen(s: PlanResourceStatus) -> PlanResourceStatus:
        return s.model_copy(update={"phase": PlanStatus.EXECUTING})

    ok = apply_step(
        deps, body, plan, key, lambda s: s.status is StepStatus.BLOCKED, released, [], reopen
    )
    if ok:
        record(
            deps,
            body,
            plan,
            "plan_step_released",
            (key, str(state.attempts), by),
            {"step": key, "by": by},
            Notice("Normal", "Released", f"{key}: released by {by}"),
        )
        intention = plan_intention(deps, body, plan)
        deps.ledger.transition_intention(
            intention.id, IntentionStatus.ACTIVE, f"step {key} released by {by}", deps.clock()
        )
    return ok
