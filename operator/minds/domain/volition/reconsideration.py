"""Reconsideration: what happens to a live intention when something changes.

| trigger               | verdict                                                               |
|-----------------------|-----------------------------------------------------------------------|
| `denied_approval`     | `replan`: a person said no to this action; another strategy, never    |
|                       | the same action again                                                 |
| `expired_approval`    | `block`: nobody decided; the mind does not ask again on its own       |
| `capability_change`   | `block` when the means became unavailable; `resume` a blocked or      |
|                       | suspended intention when they are available again; else `keep`        |
| `commitment_change`   | `abandon` when a commitment now forbids the means; `require_approval` |
|                       | when one now asks for approval the intention did not require; `keep`  |
| `failed_step`         | `replan`                                                              |
| `failed_expectation`  | `replan`                                                              |
| `weakened_belief`     | `replan` when the assumed belief fell below the assumption's own      |
|                       | minimum confidence (the planner's 0.5 when none is given); else `keep`|
| `budget`              | `suspend`; `resume` a waiting intention when the budget allows again  |
| `goal_completion`     | `fulfil`; `block` when the plan only told a person (an escalation)     |
| `world_change`        | `fulfil` when the world now satisfies the want; else `keep`           |
| `operator_correction` | what the operator said (resume by default)                            |

Replanning is bounded: an intention that has been replanned `MAX_REPLANS` times is abandoned
instead, and so is one whose plan a person wrote (the mind does not rewrite a person's plan).
A final intention is kept as it is, whatever the trigger; resuming an active one keeps it.

Fulfilling an intention satisfies the wants it serves and fulfils the commitments they carry.
Abandoning it suppresses those wants for `SUPPRESSION_PERIOD`, so the same want does not form
the same intention again at once (a failed restart is not followed by another restart).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final, NamedTuple

from pydantic import AwareDatetime

from minds.domain.base import Model
from minds.domain.capabilities.authority import AuthorityDecision, Stage
from minds.domain.intentions import IntentionRecord, IntentionStatus
from minds.domain.ledger import idempotency_key
from minds.domain.planning.strategies import ASSUMPTION_MIN_CONFIDENCE
from minds.domain.resources.mind import PolicyDecision
from minds.domain.volition.decisions import DecisionKind, VolitionDecision
from minds.domain.volition.wants import Want, WantStatus, satisfy, suppress

__all__ = [
    "MAX_REPLANS",
    "STATUS_AFTER",
    "Reconsideration",
    "ReconsiderationContext",
    "Trigger",
    "Verdict",
    "reconsider",
    "review_finding",
    "trigger_of_failure",
]

#: Replans per intention before it is abandoned (the executor's limit).
MAX_REPLANS: Final = 3


class Trigger(StrEnum):
    DENIED_APPROVAL = "denied_approval"
    EXPIRED_APPROVAL = "expired_approval"
    CAPABILITY_CHANGE = "capability_change"
    COMMITMENT_CHANGE = "commitment_change"
    FAILED_STEP = "failed_step"
    FAILED_EXPECTATION = "failed_expectation"
    WEAKENED_BELIEF = "weakened_belief"
    BUDGET = "budget"
    GOAL_COMPLETION = "goal_completion"
    WORLD_CHANGE = "world_change"
    OPERATOR_CORRECTION = "operator_correction"


#: How a failed step's reason (``minds.domain.execution.adopt``) names what happened, first
#: match wins. The seed: "expired or withdrawn fails it as an expired approval".
FAILURE_TRIGGERS: Final = (
    ("approval denied", Trigger.DENIED_APPROVAL),
    ("approval expired", Trigger.EXPIRED_APPROVAL),
    ("approval withdrawn", Trigger.EXPIRED_APPROVAL),
    ("expectation failed", Trigger.FAILED_EXPECTATION),
)


#: The ledger row that answers a plan's trigger: at most one per plan, trigger and what the
#: trigger is once per (a budget's count, say).
RECONSIDERED: Final = "plan_reconsidered"


def answer_key(plan_uid: str, trigger: Trigger, once_per: tuple[str, ...] = ()) -> str:
    """The idempotency key of the row that answered ``trigger`` for the plan of ``plan_uid``:
    whoever reads whether it was answered (the executor, the resumption rule) asks for it."""
    return idempotency_key("plan", plan_uid, RECONSIDERED, trigger.value, *once_per)


def trigger_of_failure(reason: str | None) -> Trigger:
    """The trigger a failed step raises, read from its reason; any other failure is a failed
    step."""
    text = (reason or "").lower()
    return next(
        (t for prefix, t in FAILURE_TRIGGERS if text.startswith(prefix)), Trigger.FAILED_STEP
    )


class Finding(NamedTuple):
    """What a review of one step's authority found: the trigger it raises, and the context
    fields that trigger reads."""

    trigger: Trigger
    reason: str
    means_available: bool | None = None
    forbidden: bool = False
    approval_required: bool = False
    belief_confidence: float | None = None
    belief_min_confidence: float | None = None


#: Stages whose refusal a review of an open plan can judge on its own. A refusal at another
#: stage (no grant in hand, another namespace, bad parameters) depends on what only the
#: capability layer sees at execution, which checks again there.
UNAVAILABLE_AT: Final = frozenset({Stage.LOCKED, Stage.POLICY})


def review_finding(authority: AuthorityDecision, requires_approval: bool) -> Finding | None:
    """What a change of policy, commitments or grants means for one step not yet done, from
    its authority now; None: nothing to reconsider."""
    last = authority.trail[-1] if authority.trail else None
    if last is None:
        return None
    if authority.decision is PolicyDecision.DENY:
        if last.stage is Stage.COMMITMENTS:
            return Finding(Trigger.COMMITMENT_CHANGE, last.reason, forbidden=True)
        if last.stage in UNAVAILABLE_AT:
            return Finding(Trigger.CAPABILITY_CHANGE, last.reason, means_available=False)
        return None
    asks = [
        s
        for s in authority.trail
        if s.stage is Stage.COMMITMENTS and s.decision is PolicyDecision.APPROVE
    ]
    if asks and not requires_approval:
        return Finding(Trigger.COMMITMENT_CHANGE, asks[0].reason, approval_required=True)
    return None


class Verdict(StrEnum):
    KEEP = "keep"
    BLOCK = "block"
    SUSPEND = "suspend"
    RESUME = "resume"
    REPLAN = "replan"
    REQUIRE_APPROVAL = "require_approval"
    ABANDON = "abandon"
    FULFIL = "fulfil"


#: The status each verdict moves the intention to; keep, replan and require_approval leave
#: the status to the executor (a replan is a new plan revision for the same intention).
STATUS_AFTER: Final = {
    Verdict.BLOCK: IntentionStatus.BLOCKED,
    Verdict.SUSPEND: IntentionStatus.SUSPENDED,
    Verdict.RESUME: IntentionStatus.ACTIVE,
    Verdict.ABANDON: IntentionStatus.ABANDONED,
    Verdict.FULFIL: IntentionStatus.FULFILLED,
}


class ReconsiderationContext(Model):
    """What a trigger needs to be judged. Only the fields its trigger reads matter:

    - `means_available` (capability_change, budget): whether the means, or the budget, can
      be used now;
    - `forbidden`, `approval_required` (commitment_change): what commitments now say about
      the means;
    - `belief_confidence`, `belief_min_confidence` (weakened_belief): the assumed belief's
      confidence now, and the minimum the plan's assumption asked for (the planner's
      `ASSUMPTION_MIN_CONFIDENCE` when not given);
    - `goal_met` (world_change): whether the world now satisfies the want;
    - `escalated` (goal_completion): the completed plan only told a person;
    - `operator_says` (operator_correction): the verdict an operator gave;
    - `replannable` (any replan): False for a plan a person wrote.

    `wants` are the wants the intention serves (from its formation decision). `basis` names
    what was reconsidered (a plan and its trigger) so that answering it again after a crash
    records the decision once.
    """

    now: AwareDatetime
    wants: tuple[Want, ...] = ()
    means_available: bool | None = None
    forbidden: bool = False
    approval_required: bool = False
    belief_confidence: float | None = None
    belief_min_confidence: float | None = None
    goal_met: bool | None = None
    escalated: bool = False
    operator_says: Verdict | None = None
    replannable: bool = True
    basis: str | None = None


class Reconsideration(Model):
    """The verdict, the status it moves the intention to (None: unchanged), and what else
    changes: wants satisfied or suppressed, commitments fulfilled."""

    intention: str
    trigger: Trigger
    verdict: Verdict
    reason: str
    status: IntentionStatus | None
    requires_approval: bool
    wants: tuple[Want, ...] = ()
    fulfilled_commitments: tuple[str, ...] = ()
    decisions: tuple[VolitionDecision, ...]


def _assumed_minimum(c: ReconsiderationContext) -> float:
    """The confidence the plan's assumption asked for: its own minimum when given."""
    return ASSUMPTION_MIN_CONFIDENCE if c.belief_min_confidence is None else c.belief_min_confidence


def _judge(
    intention: IntentionRecord, trigger: Trigger, c: ReconsiderationContext
) -> tuple[Verdict, str]:
    """The verdict the trigger calls for, before the replan bound."""
    waiting = intention.status in (IntentionStatus.BLOCKED, IntentionStatus.SUSPENDED)
    match trigger:
        case Trigger.DENIED_APPROVAL:
            return Verdict.REPLAN, "approval denied: try another strategy, not the same action"
        case Trigger.EXPIRED_APPROVAL:
            return Verdict.BLOCK, "approval expired undecided: waiting for an operator"
        case Trigger.CAPABILITY_CHANGE if c.means_available is False:
            return Verdict.BLOCK, "the means are no longer available"
        case Trigger.CAPABILITY_CHANGE if c.means_available and waiting:
            return Verdict.RESUME, "the means are available again"
        case Trigger.COMMITMENT_CHANGE if c.forbidden:
            return Verdict.ABANDON, "a commitment now forbids the means"
        case Trigger.COMMITMENT_CHANGE if c.approval_required and not intention.requires_approval:
            return Verdict.REQUIRE_APPROVAL, "a commitment now requires approval for the means"
        case Trigger.FAILED_STEP:
            return Verdict.REPLAN, "a step failed"
        case Trigger.FAILED_EXPECTATION:
            return Verdict.REPLAN, "an expectation was refuted by observation"
        case Trigger.WEAKENED_BELIEF if (
            c.belief_confidence is not None and c.belief_confidence < _assumed_minimum(c)
        ):
            return Verdict.REPLAN, (
                f"the supporting belief fell to {c.belief_confidence:.2f}, below "
                f"{_assumed_minimum(c):g}"
            )
        case Trigger.BUDGET if c.means_available and waiting:
            return Verdict.RESUME, "the budget allows the plan again"
        case Trigger.BUDGET:
            return Verdict.SUSPEND, "the plan's budget is exhausted"
        case Trigger.GOAL_COMPLETION if c.escalated:
            return Verdict.BLOCK, "escalated to the operator: telling a person is not doing it"
        case Trigger.GOAL_COMPLETION:
            return Verdict.FULFIL, "the goal is complete"
        case Trigger.WORLD_CHANGE if c.goal_met:
            return Verdict.FULFIL, "the world already is as wanted"
        case Trigger.OPERATOR_CORRECTION:
            said = c.operator_says or Verdict.RESUME
            return said, f"an operator said {said.value}"
    return Verdict.KEEP, f"{trigger.value} changes nothing for this intention"


def reconsider(
    intention: IntentionRecord, trigger: Trigger, context: ReconsiderationContext
) -> Reconsideration:
    """Reconsider one intention on one trigger (see the module notes). Same inputs, same
    result."""
    now = context.now
    if intention.status.final:
        verdict, reason = Verdict.KEEP, f"the intention is already {intention.status.value}"
    else:
        verdict, reason = _judge(intention, trigger, context)
    if verdict is Verdict.REPLAN and intention.replans >= MAX_REPLANS:
        verdict, reason = Verdict.ABANDON, f"replan limit ({MAX_REPLANS}) reached; last: {reason}"
    if verdict is Verdict.REPLAN and not context.replannable:
        verdict, reason = Verdict.ABANDON, f"{reason}; a person wrote this plan: write a new one"
    if verdict is Verdict.RESUME and intention.status is IntentionStatus.ACTIVE:
        verdict, reason = Verdict.KEEP, f"{reason}; already active"
    status = STATUS_AFTER.get(verdict)

    wants: list[Want] = []
    decisions: list[VolitionDecision] = []
    for want in sorted(context.wants, key=lambda w: w.id):
        if verdict is Verdict.FULFIL and want.status is not WantStatus.SATISFIED:
            changed, decision = satisfy(want, now, f"intention {intention.id} fulfilled: {reason}")
        elif verdict is Verdict.ABANDON and want.status is WantStatus.ACTIVE:
            changed, decision = suppress(want, now, f"intention {intention.id} abandoned: {reason}")
        else:
            continue
        wants.append(changed)
        decisions.append(decision)

    decisions.insert(
        0,
        VolitionDecision(
            namespace=intention.namespace,
            mind=intention.mind,
            kind=DecisionKind.RECONSIDERATION,
            subjects={"intention": intention.id},
            outcome=verdict.value,
            reason=reason,
            inputs={
                "trigger": trigger.value,
                "status": intention.status.value,
                "replans": intention.replans,
                "context": context.model_dump(mode="json", exclude={"wants", "now", "basis"}),
                "wants": [w.id for w in context.wants],
            },
            at=now,
            basis=context.basis,
        ),
    )
    return Reconsideration(
        intention=intention.id,
        trigger=trigger,
        verdict=verdict,
        reason=reason,
        status=status,
        requires_approval=intention.requires_approval or verdict is Verdict.REQUIRE_APPROVAL,
        wants=tuple(wants),
        fulfilled_commitments=tuple(
            sorted({w.commitment for w in context.wants if w.commitment})
            if verdict is Verdict.FULFIL
            else ()
        ),
        decisions=tuple(decisions),
    )
