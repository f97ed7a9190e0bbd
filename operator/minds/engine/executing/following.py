"""A step waiting on an Approval: look at it, and act only if it authorises this very step.

The executor alone runs an approved action, under its own claim and lease, with the step's
origin key: a handler, a timer and a second controller looking at the same Approval still
yield one execution.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from functools import partial
from typing import Any, NamedTuple

from pydantic import ValidationError

from minds.domain.approvals import Asker, Ruling, Verdict, authorises, status_of
from minds.domain.execution.adopt import (
    Effect,
    EffectKind,
    after_act,
    after_approval,
    after_precondition,
)
from minds.domain.execution.covering import HELD_OFF_FOR
from minds.domain.execution.machine import claim_approved, states
from minds.domain.planning.model import Plan, Step, StepKind, StepState, StepStatus
from minds.domain.resources.approval import ApprovalKind, ApprovalSpec
from minds.domain.resources.kinds import PLAN
from minds.domain.resources.plan import PlanResourceStatus
from minds.engine.approval_service import Deferred
from minds.engine.executing.acting import Run, acted
from minds.engine.executing.context import Deps
from minds.engine.executing.invoking import invocation
from minds.engine.executing.outcome import apply_step, leased_to
from minds.engine.executing.targets import holding, instead, writing_target
from minds.engine.invocations import InvocationOutcome, OutcomeKind
from minds.engine.ports import NotFound

#: How a step reads an Approval that will never let it act (see ``after_approval``).
REFUSED = {
    Verdict.DENIED: "Denied",
    Verdict.EXPIRED: "Expired",
    Verdict.WITHDRAWN: "Withdrawn",
    Verdict.NOT_OURS: "Withdrawn",
}


class Followed(NamedTuple):
    """Whether a transition landed, and when to look again if nothing woke the plan before:
    an approved action whose target another writer holds has nothing in the Plan's status to
    wake it, so it says when the target is worth trying again."""

    landed: bool
    again_at: datetime | None = None


NOTHING = Followed(False)
LANDED = Followed(True)

Approved = Callable[
    [Deps, dict[str, Any], Plan, Step, StepState, dict[str, Any], datetime, Deferred | None],
    Followed,
]


def _asker(deps: Deps, body: dict[str, Any], step: Step, state: StepState) -> Asker | None:
    """The step as the Plan says it, which its Approval must match exactly."""
    common = {"plan_uid": body["metadata"]["uid"], "step": step.key, "attempt": state.attempts}
    if step.kind is StepKind.REQUEST_CAPABILITY:
        assert step.request is not None
        return Asker(
            kind=ApprovalKind.GRANT,
            capability=step.request.capability,
            target=step.request.target_pattern,
            **common,
        )
    spec = deps.registry.get(step.capability or "")
    if spec is None:
        return None
    try:
        target = spec.target_of(spec.parse(step.parameters))
    except ValidationError:
        return None
    return Asker(kind=ApprovalKind.ACTION, capability=spec.name, target=target, **common)


def follow(
    deps: Deps,
    body: dict[str, Any],
    plan: Plan,
    step: Step,
    status: PlanResourceStatus,
    now: datetime,
) -> Followed:
    """Look at the Approval a step waits on; act if it authorises the step now."""
    state = states(status)[step.key]
    name = state.approval_ref
    if not name:
        return NOTHING
    waiting = state.status

    def same(current: StepState) -> bool:
        return current.status is waiting and current.approval_ref == name

    try:
        approval, recorded, deferred = deps.approvals.settle_to_act(
            body["metadata"]["namespace"], name
        )
    except NotFound:
        gone = state.model_copy(
            update={
                "status": StepStatus.FAILED,
                "lease": None,
                "finished_at": now,
                "reason": f"approval {name} disappeared",
            }
        )
        return Followed(apply_step(deps, body, plan, step.key, same, gone, []))
    spec = ApprovalSpec.model_validate(approval["spec"])
    asker = _asker(deps, body, step, state)
    if asker is None:
        ruling = Ruling(Verdict.NOT_OURS, "the step names no target an approval could cover")
    else:
        owners = [
            ref.get("uid", "")
            for ref in approval["metadata"].get("ownerReferences") or []
            if ref.get("kind") == PLAN.kind
        ]
        ruling = authorises(spec, owners, asker, recorded, now)
    if ruling.verdict is Verdict.ACT:
        return APPROVED[waiting](deps, body, plan, step, state, approval, now, deferred)
    if deferred is not None:
        # Not acted on here: the person's decision is on record all the same.
        deps.approvals.approve_now(deferred)
    if ruling.verdict is Verdict.WAIT:
        return NOTHING
    found = after_approval(step, state, REFUSED[ruling.verdict], ruling.reason, now, None)
    assert found is not None
    return Followed(apply_step(deps, body, plan, step.key, same, found[0], found[1]))


def _grant_approved(
    deps: Deps,
    body: dict[str, Any],
    plan: Plan,
    step: Step,
    state: StepState,
    approval: dict[str, Any],
    now: datetime,
    deferred: Deferred | None,
) -> Followed:
    """A grant is authority, not an action on the world: creating it is idempotent (named after
    the Approval), so it needs no claim; it is still the executor's to do, under the same rules,
    so no grant is ever made for a plan that is gone."""
    namespace, name = body["metadata"]["namespace"], approval["metadata"]["name"]
    if deferred is not None:
        deps.approvals.approve_now(deferred)
    spec = ApprovalSpec.model_validate(approval["spec"])
    outcome = deps.asking.create_approved_grant(namespace, name, spec)
    if outcome.kind is OutcomeKind.DENIED:
        new, effects = after_act(step, state, acted(outcome), now)
    else:
        found = after_approval(step, state, "Executed", "", now, None)
        assert found is not None
        new, effects = found
    ok = apply_step(
        deps,
        body,
        plan,
        step.key,
        lambda s: s.status is state.status and s.approval_ref == name,
        new,
        effects,
    )
    settle_approval(deps, namespace, name, outcome)
    return Followed(ok)


def _act_approved(
    deps: Deps,
    body: dict[str, Any],
    plan: Plan,
    step: Step,
    state: StepState,
    approval: dict[str, Any],
    now: datetime,
    deferred: Deferred | None,
) -> Followed:
    """The approved action, run by the executor alone: first a claim with a lease (two
    controllers, or a handler and a daemon, never both get past it), then the step's own
    invocation under the step's origin key (the write-ahead row makes it at most once), with
    the approval recorded in the write-ahead row's transaction when this saw it first."""
    namespace = body["metadata"]["namespace"]
    target = writing_target(deps, step)
    # The target's lock is held from the claim to the outcome: no other plan's writing action
    # on it starts meanwhile. Busy: nothing is claimed, and the plan looks again when a held-off
    # step would (nothing else would wake it: its status did not change).
    with holding(deps, namespace, target) as mine:
        if not mine:
            if deferred is not None:
                deps.approvals.approve_now(deferred)
            return Followed(False, now + HELD_OFF_FOR)
        return Followed(
            _claim_and_act(deps, body, plan, step, state, approval, target, now, deferred)
        )


def _claim_and_act(
    deps: Deps,
    body: dict[str, Any],
    plan: Plan,
    step: Step,
    state: StepState,
    approval: dict[str, Any],
    target: str | None,
    now: datetime,
    deferred: Deferred | None,
) -> bool:
    meta = approval["metadata"]
    namespace, name = body["metadata"]["namespace"], meta["name"]
    claimed = claim_approved(step, state, now, deps.holder, deps.timeouts, plan)
    if not apply_step(
        deps,
        body,
        plan,
        step.key,
        lambda s: s.status is StepStatus.AWAITING_APPROVAL and s.approval_ref == name,
        claimed,
        [],
    ):
        if deferred is not None:
            deps.approvals.approve_now(deferred)
        return False
    mine = leased_to(deps.holder, state.attempts)
    refused = _recheck(deps, body, plan, step, claimed, target, now)
    if refused is not None:
        new, effects, why = refused
        if deferred is not None:
            deps.approvals.approve_now(deferred)
        apply_step(deps, body, plan, step.key, mine, new, effects)
        deps.approvals.not_executed(namespace, name, why)
        return True
    spec = ApprovalSpec.model_validate(approval["spec"])
    outcome = deps.capabilities.execute_approved(
        invocation(body, plan, step, state.attempts),
        name,
        meta["uid"],
        spec.decided_by,
        standing=None if deferred is None else partial(deps.approvals.approve_within, deferred),
    )
    if outcome.approval_moved:
        # Expired or withdrawn between reading and acting: nothing ran, and the step ends as
        # the Approval now does.
        _, history = deps.approvals.settle(namespace, name, owner_checked=True)
        shown = status_of(history)
        ended = after_approval(
            step, claimed, shown.phase.value, shown.message or "", deps.clock(), None
        )
        if ended is not None:
            apply_step(deps, body, plan, step.key, mine, ended[0], ended[1])
        return True
    if deferred is not None and outcome.execution_id is None:
        deps.approvals.approve_now(deferred)  # refused before its write-ahead row
    found = after_approval(step, claimed, "Executed", "", deps.clock(), acted(outcome))
    assert found is not None
    apply_step(deps, body, plan, step.key, mine, found[0], found[1])
    settle_approval(deps, namespace, name, outcome)
    return True


def _recheck(
    deps: Deps,
    body: dict[str, Any],
    plan: Plan,
    step: Step,
    claimed: StepState,
    target: str | None,
    now: datetime,
) -> tuple[StepState, list[Effect], str] | None:
    """What the world says now, before an approved action runs (the approval may have come
    hours after it was asked): whether another plan did the same to the target meanwhile, and
    the step's precondition, looked at again. None: act. Otherwise the step as that leaves it
    (skipped, or blocked when the precondition cannot be observed), its effects, and why the
    Approval was not executed. That the plan is still open is the claim's to prove (it is
    conditional on the Plan as read), and policy and authority are checked again by
    ``execute_approved`` itself."""
    covered = instead(deps, body, step, claimed, target, True, now)
    if covered is not None:
        decided: tuple[StepState, list[Effect]] | None = (covered, [])
    elif step.precondition is not None:
        run = Run(deps, body, plan, step, claimed, now)
        looked = run.check(step, step.precondition.check, "pre-approved")
        decided = after_precondition(step, claimed, looked, now)
    else:
        decided = None
    if decided is None:
        return None
    new, effects = decided
    why = f"not executed: {new.reason}"
    # The person's answer was obtained, so its request is done with; the parent goes on
    # unless the step now waits for a person again (blocked: the precondition is not
    # observable).
    obtained = [Effect(EffectKind.FULFIL_SUBORDINATE, step.key, "approval obtained; not used")]
    if new.status is StepStatus.SKIPPED:
        obtained.insert(0, Effect(EffectKind.RESUME_INTENTION, step.key, why))
    return new, [*obtained, *effects], why


#: Who acts on an Approval that authorises the step, by what the step waits for.
APPROVED: dict[StepStatus, Approved] = {
    StepStatus.AWAITING_GRANT: _grant_approved,
    StepStatus.AWAITING_APPROVAL: _act_approved,
}


def settle_approval(deps: Deps, namespace: str, name: str, outcome: InvocationOutcome) -> None:
    """The Approval's status and the ledger say what the executor did with it."""
    if outcome.kind is OutcomeKind.DENIED:
        deps.approvals.not_executed(namespace, name, outcome.reason)
        return
    execution = str(outcome.execution_id or outcome.approval or "")
    deps.approvals.executed(namespace, name, execution, f"{outcome.kind.value}: {outcome.reason}")
