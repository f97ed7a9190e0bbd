"""Resumption: a waiting intention resumes by rule when what it waits for comes back.

An intention waits (blocked or suspended, see ``lapse``) for a reason: the trigger whose answer
made it wait. Each reason has one thing that resumes it:

| waiting reason (status)          | what resumes it                                          |
|----------------------------------|----------------------------------------------------------|
| `budget` (suspended): its plan's | the Mind's budget raised so the blocked step fits: the   |
| budget is exhausted              | blocked plan continues where it stopped                  |
| `capability_change` (blocked): a | a policy or CapabilityGrant change under which every     |
| step's capability became locked  | capability step not yet done is authorised: a new        |
| or denied by policy              | revision, which may use the same strategy                |
| `expired_approval` (blocked)     | nothing by rule: nobody is asked again; a person         |
| `escalated` (blocked)            | nothing by rule: a person looks                          |
| `approval` (blocked)             | the Approval's decision (the executor follows it)        |
| `dream` (suspended)              | nothing: a dream is never acted on                       |
| `inherited` by a fork            | a person (`kubectl minds resume`): forks quiesce         |
| (suspended)                      | inherited work                                           |
| `outcome_unverified`             | a person checks and releases the step                    |

Every waiting intention but an unverified one lapses after a day without a change (``lapse``).

A person's resume (``kubectl minds resume``) of an intention with no plan that can run (a
fork's inheritance has none, a dream's never runs, a plan that ended leaving it blocked is over)
makes the mind plan it anew (``replanned_on_resume``): resumed work goes on, it does not sit
active, holding a place of the mind's capacity, with nothing to do.

A resumption is a reconsideration: the same ``reconsider()`` with the waiting trigger and the
means (or budget) available again, recorded in ``volition_decisions`` with what resumed it.

A resumption writes the plan before the intention (the other order could leave an active
intention with a plan that never runs). A controller that stops between the two writes leaves
an intention suspended while its plan runs: the next review finds it (``resumed_unsaid``, read
at every controller start) and moves it to active, without a second decision.

No resume loop. A resumption is made by a change, not by the clock: the engine looks when a
Mind or a CapabilityGrant changes, and each resumption is keyed by what it resumed from. A
budget resumes only above what was used, so a plan that blocks again blocks on a higher count
(a new waiting reason, answered once); a capability resumption is a new revision, so it counts
against the replan limit and an intention replanned ``MAX_REPLANS`` times is not resumed but
left to lapse.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from pydantic import AwareDatetime

from minds.domain.execution.machine import FINAL_PLAN, RUNNABLE
from minds.domain.intentions import IntentionRecord, IntentionStatus
from minds.domain.plan_admission import effective_budget
from minds.domain.planning.model import Budget, Plan, PlanOrigin, PlanStatus
from minds.domain.volition.lapse import LAPSING
from minds.domain.volition.reconsideration import (
    MAX_REPLANS,
    Reconsideration,
    ReconsiderationContext,
    Trigger,
    Verdict,
    reconsider,
)

__all__ = [
    "BY_RULE",
    "LEFT_WAITING",
    "RESUMED_BY",
    "PlanFacts",
    "Resumer",
    "Waiting",
    "budget_now",
    "replanned_on_resume",
    "resumed_unsaid",
    "resumption",
    "waiting_on",
]


class Waiting(StrEnum):
    """Why an intention waits."""

    BUDGET = "budget"
    MEANS = "capability_change"
    EXPIRED_APPROVAL = "expired_approval"
    ESCALATED = "escalated"
    APPROVAL = "approval"
    DREAM = "dream"
    INHERITED = "inherited"
    OUTCOME_UNVERIFIED = "outcome_unverified"


class Resumer(StrEnum):
    """What resumes a waiting intention."""

    BUDGET_RAISED = "the Mind's budget raised above what the plan used"
    MEANS_AVAILABLE = "a policy or grant change that authorises the plan's capabilities again"
    DECISION = "the Approval's decision"
    PERSON = "a person (kubectl minds resume)"
    RELEASE = "a person who checks and releases the step"
    NOTHING = "nothing: it lapses"


#: The table above: what resumes each waiting reason.
RESUMED_BY: Final[Mapping[Waiting, Resumer]] = {
    Waiting.BUDGET: Resumer.BUDGET_RAISED,
    Waiting.MEANS: Resumer.MEANS_AVAILABLE,
    Waiting.EXPIRED_APPROVAL: Resumer.PERSON,
    Waiting.ESCALATED: Resumer.PERSON,
    Waiting.APPROVAL: Resumer.DECISION,
    Waiting.DREAM: Resumer.NOTHING,
    Waiting.INHERITED: Resumer.PERSON,
    Waiting.OUTCOME_UNVERIFIED: Resumer.RELEASE,
}

#: Waiting reasons the mind resumes by itself, and the trigger each resumption answers.
BY_RULE: Final[Mapping[Waiting, Trigger]] = {
    Waiting.BUDGET: Trigger.BUDGET,
    Waiting.MEANS: Trigger.CAPABILITY_CHANGE,
}

#: The trigger whose answer left the intention waiting, read as its waiting reason.
_ANSWERED: Final[Mapping[Trigger, Waiting]] = {
    Trigger.BUDGET: Waiting.BUDGET,
    Trigger.CAPABILITY_CHANGE: Waiting.MEANS,
    Trigger.EXPIRED_APPROVAL: Waiting.EXPIRED_APPROVAL,
    Trigger.GOAL_COMPLETION: Waiting.ESCALATED,
}


#: The triggers whose answer ends a plan and leaves its intention waiting.
LEFT_WAITING: Final = frozenset(t for t in _ANSWERED if t is not Trigger.BUDGET)


def waiting_on(intention: IntentionRecord, answered: Trigger | None) -> Waiting | None:
    """Why a top-level intention waits, from the trigger whose answer made its plan wait;
    None when it does not wait, or waits for something no rule here reads."""
    if intention.status not in LAPSING or intention.parent_id is not None:
        return None
    return _ANSWERED.get(answered) if answered is not None else None


def budget_now(plan: Plan, mind: Budget) -> Budget:
    """The budget a plan runs under with its Mind's budget as it is now. A plan a person wrote
    keeps its own caps, within the Mind's; a plan the mind wrote was given the Mind's budget,
    so it follows the Mind's."""
    return effective_budget(plan.budget, mind) if plan.origin is PlanOrigin.OPERATOR else mind


def resumption(
    intention: IntentionRecord,
    waiting: Waiting | None,
    *,
    available: bool,
    now: AwareDatetime,
    basis: str,
    cause: str,
) -> Reconsideration | None:
    """The reconsideration that resumes a waiting intention, or None: it does not wait for a
    rule, what it waits for is not ``available``, or (for the means) it has no replan left.
    ``basis`` names what it resumes from, so it is recorded once; ``cause`` says what came
    back."""
    trigger = BY_RULE.get(waiting) if waiting is not None else None
    if trigger is None or not available:
        return None
    if waiting is Waiting.MEANS and intention.replans >= MAX_REPLANS:
        return None
    judged = reconsider(
        intention,
        trigger,
        ReconsiderationContext(now=now, means_available=True, basis=basis),
    )
    if judged.verdict is not Verdict.RESUME:
        return None
    reason = f"{judged.reason}: {cause}"[:2000]
    first, *rest = judged.decisions
    told = first.model_copy(
        update={
            "reason": reason,
            "inputs": {**first.inputs, "waiting": str(waiting), "resumedBy": cause[:500]},
        }
    )
    return judged.model_copy(update={"reason": reason, "decisions": (told, *rest)})


@dataclass(frozen=True)
class PlanFacts:
    """What the rule for a person's resume reads of an intention's plan."""

    phase: PlanStatus | None
    dream: bool = False
    #: Its intention was left waiting when it ended (an expired approval, means that went
    #: away, an escalation): no answer of the executor is still to come for it.
    ended_waiting: bool = False


def replanned_on_resume(intention: IntentionRecord, plan: PlanFacts | None) -> bool:
    """Whether an active intention a person resumed has no plan that can run, so the mind
    plans it anew: it has no plan (a fork's inheritance), a dream's, or one that ended leaving
    it waiting. A plan that ended otherwise is the executor's to answer (a replan is on its
    way), never the cycle's."""
    if intention.status is not IntentionStatus.ACTIVE or intention.parent_id is not None:
        return False
    if plan is None:
        return True
    return plan.dream or (plan.phase in FINAL_PLAN and plan.ended_waiting)


def resumed_unsaid(intention: IntentionRecord, plan: PlanFacts) -> bool:
    """Whether a budget resumption reached the plan but not its intention: a top-level intention
    still suspended while its plan (not a dream) runs. Only a resumption moves a plan blocked by
    its budget back to running, and the executor blocks the plan before it suspends the
    intention, so nothing else leaves this pair."""
    return (
        intention.status is IntentionStatus.SUSPENDED
        and intention.parent_id is None
        and not plan.dream
        and plan.phase in RUNNABLE
        and plan.phase is not PlanStatus.BLOCKED
    )
