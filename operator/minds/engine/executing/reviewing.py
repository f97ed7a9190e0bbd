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

After each cycle has weighed its observations, ``review_assumptions`` holds each open plan's
assumptions against the mind's beliefs: one they weaken raises `weakened_belief` (a replan
when the belief fell below the planner's threshold; the old revision's Approvals withdrawn).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Final

from pydantic import ValidationError

from minds.domain.beliefs import BeliefRecord
from minds.domain.capabilities.authority import authorize
from minds.domain.capabilities.policy import GrantView
from minds.domain.execution.machine import FINAL_STEP, RUNNABLE, states
from minds.domain.intentions import IntentionRecord, IntentionStatus
from minds.domain.planning.model import Plan, PlanOrigin, PlanStatus, StepKind, StepStatus
from minds.domain.resources.kinds import PLAN
from minds.domain.resources.mind import MindSpec
from minds.domain.resources.plan import PlanResourceStatus
from minds.domain.volition.assumptions import weakened
from minds.domain.volition.reconsideration import Finding, Trigger, review_finding
from minds.engine.executing.context import Deps, read_mind
from minds.engine.executing.journal import plan_intention
from minds.engine.executing.reconsidering import answer, close, close_subordinates

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
    return _review(
        deps,
        namespace,
        mind,
        lambda plan, status, intention: finding(
            plan, status, intention, namespace, spec, grants, now, deps
        ),
    )


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
) -> Finding | None:
    """The first step not yet done whose authority changed, as a finding; None when every
    step stands, or a step is under way."""
    if under_way(status):
        return None
    current = states(status)
    for step in plan.steps:
        state = current.get(step.key)
        if step.capability is None or (state is not None and state.status in FINAL_STEP):
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
