"""What of a mind needs a person now: its ``NeedsAttention`` condition.

``Ready`` says the spec was accepted; it says nothing of the work. A restart that did not heal
ends in an escalation: the intention is blocked until a person looks, and ``kubectl describe
mind`` must say so and name it. The condition is computed from what the mind holds open (its
intentions, its plans' steps, its Approvals), in the order a person should act on them, and
it names each: the message is the list, the reason the most pressing kind.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Final

from minds.domain.intentions import IntentionRecord, IntentionStatus
from minds.domain.planning.model import PlanStatus, PlanStatusBlock, StepStatus
from minds.domain.resources.common import Condition, ConditionStatus

CONDITION: Final = "NeedsAttention"
#: Items named in the message; the rest are counted.
NAMED: Final = 5


class AttentionReason(StrEnum):
    OUTCOME_UNVERIFIED = "OutcomeUnverified"
    ESCALATED = "Escalated"
    BLOCKED_STEP = "BlockedStep"
    PENDING_APPROVAL = "PendingApproval"
    NOTHING_PENDING = "NothingPending"


@dataclass(frozen=True)
class PlanAtHand:
    """One of the mind's plans, as its status shows it."""

    name: str
    status: PlanStatusBlock


@dataclass(frozen=True)
class PendingApproval:
    name: str
    capability: str
    target: str


@dataclass(frozen=True)
class Open:
    """What the mind holds open, read by the engine."""

    intentions: Sequence[IntentionRecord]
    plans: Sequence[PlanAtHand]
    approvals: Sequence[PendingApproval]


#: A plan that is over asks nothing more of anyone: its blocked step was replanned or ended.
_OVER: Final = frozenset(
    {PlanStatus.COMPLETED, PlanStatus.FAILED, PlanStatus.ABANDONED, PlanStatus.SUPERSEDED}
)
#: Phases in which a plan asks a person something (a blocked step, an Approval).
ASKING: Final = frozenset({PlanStatus.BLOCKED, PlanStatus.AWAITING_APPROVAL})


def moves_attention(before: PlanStatus, after: PlanStatus) -> bool:
    """Whether a plan's move from ``before`` to ``after`` may change what its mind needs a
    person for: it starts or stops asking, or it ends (an end may leave its intention blocked,
    an escalation). Moves between running phases (validated, executing, waiting) do not."""
    if before is after:
        return False
    return before in ASKING or after in ASKING or after in _OVER


_OVER_VALUES: Final = frozenset(p.value for p in _OVER)


def may_ask(phase: object, step_statuses: Iterable[object]) -> bool:
    """Whether a plan whose status shows ``phase`` and ``step_statuses`` (as written, before
    they are parsed) can add to what its mind needs a person for: it awaits an Approval (its
    intention's block is then no escalation), or it is not over and a step is blocked. Most
    of a mind's plans cannot, and its condition is computed without parsing them."""
    if phase == PlanStatus.AWAITING_APPROVAL.value:
        return True
    if phase in _OVER_VALUES:
        return False
    return any(status == StepStatus.BLOCKED.value for status in step_statuses)


def _unverified(held: Open) -> list[str]:
    return [
        f"intention {i.id} may have acted without an outcome: check and release it"
        + (f" ({i.reason})" if i.reason else "")
        for i in held.intentions
        if i.status is IntentionStatus.OUTCOME_UNVERIFIED
    ]


def _escalated(held: Open) -> list[str]:
    # Subordinate intentions (obtain an approval) are told by their Approval, and so is an
    # intention blocked while its plan awaits that Approval: it is not an escalation.
    asking = {p.name for p in held.plans if p.status.phase is PlanStatus.AWAITING_APPROVAL}
    return [
        f"{i.objective} is blocked" + (f": {i.reason}" if i.reason else "")
        for i in held.intentions
        if i.status is IntentionStatus.BLOCKED and i.parent_id is None and i.plan not in asking
    ]


def _blocked_steps(held: Open) -> list[str]:
    return [
        f"plan {p.name} step {s.key} is blocked" + (f": {s.reason}" if s.reason else "")
        for p in held.plans
        for s in p.status.steps
        if s.status is StepStatus.BLOCKED and p.status.phase not in _OVER
    ]


def _approvals(held: Open) -> list[str]:
    return [
        f"approval {a.name} waits for a decision: {a.capability} on {a.target}"
        for a in held.approvals
    ]


#: What needs a person, most pressing first: an action that may have happened unverified,
#: an escalation, a step that cannot go on, a question waiting for an answer.
ASKS: Final[tuple[tuple[AttentionReason, Callable[[Open], list[str]]], ...]] = (
    (AttentionReason.OUTCOME_UNVERIFIED, _unverified),
    (AttentionReason.ESCALATED, _escalated),
    (AttentionReason.BLOCKED_STEP, _blocked_steps),
    (AttentionReason.PENDING_APPROVAL, _approvals),
)


def needs_attention(held: Open, now: datetime, generation: int | None = None) -> Condition:
    """The ``NeedsAttention`` condition: True, with the most pressing kind as its reason and
    every item named (up to ``NAMED``), or False when nothing waits for a person."""
    found = [(reason, item) for reason, ask in ASKS for item in ask(held)]
    if not found:
        return Condition(
            type=CONDITION,
            status=ConditionStatus.FALSE,
            reason=AttentionReason.NOTHING_PENDING,
            message="nothing waits for a person",
            last_transition_time=now,
            observed_generation=generation,
        )
    items = [item for _, item in found]
    message = "; ".join(items[:NAMED])
    if len(items) > NAMED:
        message += f"; and {len(items) - NAMED} more"
    return Condition(
        type=CONDITION,
        status=ConditionStatus.TRUE,
        reason=found[0][0],
        message=message[:4096],
        last_transition_time=now,
        observed_generation=generation,
    )
