"""A Mind's policy or commitments changed, or one of its CapabilityGrants did: its open plans
are reviewed, each step not yet done judged by its authority now (``review_finding``), and a
finding is answered like any other trigger, through the domain's ``reconsider()``:

- a step whose capability is now locked or denied by policy: `capability_change`, the
  intention is blocked and the plan ends `failed` (its Approvals withdrawn);
- a commitment that now forbids a step: `commitment_change`, the intention and its plan are
  abandoned;
- a commitment that now asks for approval where the plan did not: `commitment_change`, a new
  revision that may use the same strategy (each action is asked for at execution).

A plan with a step under way (executing, under a lease) is left to finish that step: the
capability layer checks authority again before any action. An open plan whose intention was
abandoned elsewhere (by a person, or lapsed) ends `abandoned`, its Approvals withdrawn and its
"obtain approval" intentions closed.

The same review resumes what waits for the change (``minds.domain.volition.resumption``): an
intention suspended by its plan's budget resumes when the Mind's budget now lets the blocked
step run, and the blocked plan continues where it stopped; an intention blocked because a
step's capability became unavailable resumes when every capability step not yet done is
authorised again, with a new revision that may use the same strategy. Nothing else waiting
resumes by rule. A budget resumption that reached the plan but not its intention (a controller
stopped between the two writes) is finished by the next review, which runs at every start.

After each cycle has weighed its observations, ``review_assumptions`` holds each open plan's
assumptions against the mind's beliefs: one they weaken raises `weakened_belief` (a replan
when the belief fell below the planner's threshold; the old revision's Approvals withdrawn).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from pydantic import ValidationError

from minds.domain.beliefs import BeliefRecord
from minds.domain.capabilities.authority import authorize
from minds.domain.capabilities.policy import GrantView
from minds.domain.execution.machine import DONE, FINAL_STEP, RUNNABLE, states
from minds.domain.intentions import IntentionRecord, IntentionStatus
from minds.domain.planning.budget import BUDGET_EXHAUSTED
from minds.domain.planning.model import (
    Plan,
    PlanOrigin,
    PlanStatus,
    StepKind,
    StepState,
    StepStatus,
)
from minds.domain.resources.kinds import PLAN
from minds.domain.resources.mind import MindSpec
from minds.domain.resources.plan import PlanResourceStatus
from minds.domain.story import Reason
from minds.domain.volition.assumptions import weakened
from minds.domain.volition.lapse import LAPSING
from minds.domain.volition.reconsideration import (
    Finding,
    Reconsideration,
    Trigger,
    review_finding,
)
from minds.domain.volition.resumption import (
    PlanFacts,
    Waiting,
    budget_now,
    resumed_unsaid,
    resumption,
    waiting_on,
)
from minds.engine import failpoints
from minds.engine.decisions import record_decisions
from minds.engine.executing.claiming import over_budget
from minds.engine.executing.context import Deps, read_mind
from minds.engine.executing.journal import Notice, plan_intention, record
from minds.engine.executing.outcome import apply_step
from minds.engine.executing.reconsidering import (
    RESUMED,
    answer,
    answered,
    close,
    close_subordinates,
    replan,
)
from minds.engine.ports import NotFound

#: The trigger a review of open plans against the mind's beliefs raises (docs/execution.md's
#: table shows it with the executor's).
REVIEWED_ON_BELIEFS: Final = frozenset({Trigger.WEAKENED_BELIEF})

#: What a review judges of one open plan: a finding, or None when the plan stands.
Judge = Callable[[Plan, PlanResourceStatus, IntentionRecord], Finding | None]


def review(deps: Deps, namespace: str, mind: str) -> int:
    """Review the mind's open plans; how many findings were answered."""
    spec = read_mind(deps, namespace, mind)
    if spec is None:
        return 0
    view = deps.planning.mind_view(namespace, mind)
    grants = view.grants if view is not None else ()
    now = deps.clock()
    reviewed = _review(
        deps,
        namespace,
        mind,
        lambda plan, status, intention: finding(
            plan, status, intention, namespace, spec, grants, now, deps
        ),
    )
    return reviewed + resume_waiting(deps, namespace, mind, spec, grants)


def review_assumptions(deps: Deps, namespace: str, mind: str) -> int:
    """The mind's beliefs moved: an open plan whose assumption they weaken (see
    ``minds.domain.volition.assumptions``) is reconsidered on `weakened_belief`; how many
    were."""
    beliefs = deps.ledger.beliefs(namespace, mind)
    return _review(
        deps, namespace, mind, lambda plan, status, _: belief_finding(plan, status, beliefs)
    )


def _review(deps: Deps, namespace: str, mind: str, judge: Judge) -> int:
    answered = 0
    for body in deps.resources.list(PLAN, namespace):
        try:
            plan = Plan.model_validate(body.get("spec") or {})
            status = PlanResourceStatus.model_validate(body.get("status") or {})
        except ValidationError:
            continue
        if plan.mind != mind or plan.origin is PlanOrigin.DREAM or status.phase not in RUNNABLE:
            continue
        if body["metadata"].get("deletionTimestamp"):
            continue
        intention = plan_intention(deps, body, plan)
        if intention.status is IntentionStatus.ABANDONED:
            # Abandoned elsewhere (by a person, say): its open plan ends with it.
            why = f"cancelled: the intention was abandoned ({intention.reason or 'no reason'})"
            answered += close(deps, body, PlanStatus.ABANDONED, intention.reason or why, why)
            close_subordinates(deps, intention, f"the plan that asked ended: {why}")
            continue
        if intention.status.final:
            continue
        found = judge(plan, status, intention)
        if found is None:
            continue
        answered += (
            answer(
                deps,
                body,
                plan,
                intention,
                found.trigger,
                cause=found.reason,
                means_available=found.means_available,
                forbidden=found.forbidden,
                approval_required=found.approval_required,
                belief_confidence=found.belief_confidence,
                belief_min_confidence=found.belief_min_confidence,
            )
            is not None
        )
    return answered


def under_way(status: PlanResourceStatus) -> bool:
    """A step is executing: it is left to finish (the capability layer checks again)."""
    return any(s.status is StepStatus.EXECUTING for s in states(status).values())


def acts_still(plan: Plan, status: PlanResourceStatus) -> bool:
    """Whether a capability step is not yet done."""
    current = states(status)
    return any(
        step.kind is StepKind.CAPABILITY
        and (step.key not in current or current[step.key].status not in FINAL_STEP)
        for step in plan.steps
    )


def belief_finding(
    plan: Plan, status: PlanResourceStatus, beliefs: Sequence[BeliefRecord]
) -> Finding | None:
    """The plan's first assumption the beliefs weaken, as a finding; None when they hold, a
    step is under way, or every action is done (an assumption is why the plan acts; once it
    has acted, its verify steps judge the outcome)."""
    acting = acts_still(plan, status) and not under_way(status)
    weak = weakened(plan.assumptions, beliefs) if acting else None
    if weak is None:
        return None
    return Finding(
        Trigger.WEAKENED_BELIEF,
        weak.reason,
        belief_confidence=weak.confidence,
        belief_min_confidence=weak.min_confidence,
    )


def finding(
    plan: Plan,
    status: PlanResourceStatus,
    intention: IntentionRecord,
    namespace: str,
    spec: MindSpec,
    grants: Sequence[GrantView],
    now: datetime,
    deps: Deps,
    done: frozenset[StepStatus] = FINAL_STEP,
) -> Finding | None:
    """The first step not yet ``done`` whose authority changed, as a finding; None when every
    step stands, or a step is under way."""
    if under_way(status):
        return None
    current = states(status)
    for step in plan.steps:
        state = current.get(step.key)
        if step.capability is None or (state is not None and state.status in done):
            continue
        authority = authorize(
            namespace=namespace,
            mind=spec,
            capability=step.capability,
            parameters=step.parameters,
            grants=grants,
            grant_limits={},
            now=now,
            registry=deps.registry,
            require_approval=step.requires_approval,
        )
        asked = state is not None and state.status is StepStatus.AWAITING_APPROVAL
        found = review_finding(authority, intention.requires_approval or asked)
        if found is not None:
            return found
    return None


# -- resuming what waits -----------------------------------------------------------------------


def resume_waiting(
    deps: Deps, namespace: str, mind: str, spec: MindSpec, grants: Sequence[GrantView]
) -> int:
    """Resume the mind's waiting intentions whose waiting reason came back (see
    ``minds.domain.volition.resumption``); how many resumed."""
    resumed = 0
    for intention in deps.ledger.intentions(namespace=namespace, mind=mind):
        if intention.plan is None or intention.status not in LAPSING:
            continue
        try:
            body = deps.resources.get(PLAN, namespace, intention.plan)
            plan = Plan.model_validate(body.get("spec") or {})
            status = PlanResourceStatus.model_validate(body.get("status") or {})
        except (NotFound, ValidationError):
            continue
        if plan.origin is PlanOrigin.DREAM or body["metadata"].get("deletionTimestamp"):
            continue
        if resumed_unsaid(intention, PlanFacts(phase=status.phase)):
            # Its resumption was decided and applied to the plan; only the intention's move
            # was lost (the controller stopped between the two writes).
            deps.ledger.transition_intention(
                intention.id, IntentionStatus.ACTIVE, "resumed: its plan runs again", deps.clock()
            )
            resumed += 1
            continue
        waiting = waiting_on(intention, _answered(deps, body, status))
        if waiting is None or waiting not in RESUMERS:
            continue
        resumed += RESUMERS[waiting](deps, Held(body, plan, status, intention), spec, grants)
    return resumed


@dataclass(frozen=True)
class Held:
    """A waiting intention and the plan it waits with, as read."""

    body: dict[str, Any]
    plan: Plan
    status: PlanResourceStatus
    intention: IntentionRecord


def _budget_block(status: PlanResourceStatus) -> StepState | None:
    """The step the plan's budget blocked, if it waits on nothing else."""
    blocked = [s for s in status.steps if s.status is StepStatus.BLOCKED]
    if status.phase is not PlanStatus.BLOCKED or len(blocked) != 1:
        return None
    return blocked[0] if (blocked[0].reason or "").startswith(BUDGET_EXHAUSTED) else None


def _answered(deps: Deps, body: dict[str, Any], status: PlanResourceStatus) -> Trigger | None:
    """The trigger whose answer left the plan's intention waiting, among those a rule can
    resume from: the budget (the plan is still blocked on it) or the means."""
    if _budget_block(status) is not None:
        return Trigger.BUDGET
    if status.phase is PlanStatus.FAILED and answered(deps, body, Trigger.CAPABILITY_CHANGE):
        return Trigger.CAPABILITY_CHANGE
    return None


def _resumed(
    deps: Deps,
    body: dict[str, Any],
    plan: Plan,
    judged: Reconsideration,
    waiting: Waiting,
    once_per: tuple[str, ...] = (),
) -> None:
    """The resumption recorded: its decision (naming the plan, so ``why`` shows it), and the
    plan's row and Event."""
    name = body["metadata"]["name"]
    record_decisions(
        deps.ledger,
        [d.model_copy(update={"subjects": {**d.subjects, "plan": name}}) for d in judged.decisions],
    )
    payload = {"waiting": waiting.value, "reason": judged.reason}
    record(
        deps,
        body,
        plan,
        RESUMED,
        (waiting.value, *once_per),
        payload,
        Notice("Normal", Reason.RESUMED, f"intention resumed: {judged.reason}"[:1000]),
    )


def _resume_on_budget(deps: Deps, held: Held, spec: MindSpec, grants: Sequence[GrantView]) -> int:
    """The Mind's budget now lets the blocked step run: the plan continues under it, from the
    step it stopped at (nothing it did is done again)."""
    body, plan, status, intention = held.body, held.plan, held.status, held.intention
    blocked = _budget_block(status)
    step = plan.step(blocked.key) if blocked is not None else None
    if blocked is None or step is None:
        return 0
    now = deps.clock()
    raised = budget_now(plan, spec.budget)
    trial = status.model_copy(update={"budget": raised})
    still = over_budget(deps, body, plan, trial, step, now)
    cause = f"the budget now allows {step.key} ({blocked.reason})"
    judged = resumption(
        intention,
        Waiting.BUDGET,
        available=still is None,
        now=now,
        basis=f"{body['metadata']['uid']}:resume:{blocked.reason}",
        cause=cause,
    )
    if judged is None:
        return 0
    go = blocked.model_copy(update={"status": StepStatus.READY, "reason": judged.reason})

    def lift(s: PlanResourceStatus) -> PlanResourceStatus:
        return s.model_copy(update={"phase": PlanStatus.EXECUTING, "budget": raised})

    same = blocked.reason

    def unchanged(s: StepState) -> bool:
        return s.status is StepStatus.BLOCKED and s.reason == same

    # The decision first (recorded once, by its basis), then the plan, then the intention: the
    # other order could leave an active intention with a plan that never runs.
    _resumed(deps, body, plan, judged, Waiting.BUDGET, (blocked.reason or "",))
    if not apply_step(deps, body, plan, blocked.key, unchanged, go, [], lift):
        return 0
    failpoints.hit("after-budget-resume")
    deps.ledger.transition_intention(intention.id, IntentionStatus.ACTIVE, judged.reason, now)
    return 1


def _resume_on_means(deps: Deps, held: Held, spec: MindSpec, grants: Sequence[GrantView]) -> int:
    """Every capability step the plan had not done is authorised again: the intention resumes
    with a new revision (the strategy did not fail, its means were away, so it may be used
    again). A plan a person wrote is theirs to write again: its intention waits for them."""
    body, plan, status, intention = held.body, held.plan, held.status, held.intention
    if plan.origin is PlanOrigin.OPERATOR:
        return 0
    now = deps.clock()
    namespace = body["metadata"]["namespace"]
    found = finding(plan, status, intention, namespace, spec, grants, now, deps, done=DONE)
    available = found is None or (found.approval_required and not found.forbidden)
    judged = resumption(
        intention,
        Waiting.MEANS,
        available=available,
        now=now,
        basis=f"{body['metadata']['uid']}:resume:{Trigger.CAPABILITY_CHANGE.value}",
        cause="every capability step not yet done is authorised again",
    )
    if judged is None:
        return 0
    _resumed(deps, body, plan, judged, Waiting.MEANS)
    active = deps.ledger.transition_intention(
        intention.id, IntentionStatus.ACTIVE, judged.reason, now
    )
    if active is None:
        return 0
    replan(deps, body, plan, active, judged.reason, Trigger.CAPABILITY_CHANGE, reuse=True)
    return 1


#: What resumes each waiting reason a rule resumes from (the domain's ``BY_RULE``).
RESUMERS: dict[Waiting, Callable[[Deps, Held, MindSpec, Sequence[GrantView]], int]] = {
    Waiting.BUDGET: _resume_on_budget,
    Waiting.MEANS: _resume_on_means,
}
