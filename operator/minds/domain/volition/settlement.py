"""Settlement: what an ended intention means for the want it served and the commitment it carried.

A want holds the id of the intention formed for it (`Want.intention`) until that intention
ends; the first cycle that sees the end settles it, once, by the intention's final status:

| intention   | want                                        | commitment                       |
|-------------|---------------------------------------------|----------------------------------|
| `fulfilled` | satisfied (if still active), and held so    | a `do` commitment it acted for   |
|             | while its situation persists                | is fulfilled                     |
| `abandoned` | suppressed for `SUPPRESSION_PERIOD` (if     | unchanged: still due             |
|             | still active); the strategies that failed   |                                  |
|             | are remembered for `FAILURE_MEMORY`         |                                  |

A live intention (active, blocked, suspended, outcome unverified) settles nothing yet.

One look answers every wish to look: an investigation of a subject, once fulfilled, also
settles (satisfies, and holds) each other active want to investigate that subject that it
answered (see `coverage.answers`) and that has no intention of its own (`answering`). Without
this a completed plan would leave its want active and its commitment due, and the next cycle
would form the same act again. A fulfilled commitment is not due again: a `do` commitment acts
once for its due time, a recurring one (`everySeconds`) once per period, and is due again at
the first period start after the fulfilment this records (see `commitments`). Remembered
failures belong to the subject (the workload), not only to the want that learnt them:
`remembered_failures` hands every strategy that failed on a subject, in any want's service, to
the next intention about it, so the planner does not try it again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import datetime, timedelta
from typing import Final, NamedTuple

from minds.domain.intentions import IntentionRecord, IntentionStatus
from minds.domain.volition.commitments import CommitmentState
from minds.domain.volition.coverage import answered_by, answers
from minds.domain.volition.decisions import DecisionKind, VolitionDecision
from minds.domain.volition.wants import (
    SUPPRESSION_PERIOD,
    Want,
    WantStatus,
    satisfy,
    suppress,
)

__all__ = [
    "FAILURE_MEMORY",
    "CommitmentSettled",
    "Settled",
    "answering",
    "remembered_failures",
    "serving",
    "settle",
]

#: How long the strategies an abandoned intention tried in vain are not tried again on the
#: same subject: a day, so a workload that keeps failing is escalated, not restarted, every
#: hour, yet a fix deployed tomorrow meets a mind willing to act again.
FAILURE_MEMORY: Final = timedelta(hours=24)


class CommitmentSettled(NamedTuple):
    name: str
    state: CommitmentState
    reason: str


class Settled(NamedTuple):
    """The want after settlement (to store), the commitment's new state if it has one, and
    the decisions that say why."""

    want: Want
    commitment: CommitmentSettled | None
    decisions: tuple[VolitionDecision, ...]


def serving(want: Want, intention: str) -> Want:
    """The want, linked to the intention formed for it."""
    return want.model_copy(update={"intention": intention})


def _unlinked(want: Want) -> Want:
    return want.model_copy(update={"intention": None})


def _fulfilled(want: Want, intention: IntentionRecord, now: datetime) -> Settled:
    why = f"intention {intention.id} was fulfilled: {intention.reason or 'done'}"
    decisions: list[VolitionDecision] = []
    after = want
    if want.status is WantStatus.ACTIVE:
        after, decision = satisfy(want, now, why[:2000])
        after = after.model_copy(update={"fulfilled_by": intention.id})
        decisions.append(decision)
    commitment = None
    # Only an intention that did the act keeps the promise; looking at a subject does not.
    if want.commitment is not None and intention.means_capability is not None:
        reason = f"fulfilled by intention {intention.id}"
        commitment = CommitmentSettled(want.commitment, CommitmentState.FULFILLED, reason)
        decisions.append(
            VolitionDecision(
                namespace=want.namespace,
                mind=want.mind,
                kind=DecisionKind.COMMITMENT_STATE,
                subjects={"commitment": want.commitment, "intention": intention.id},
                outcome=CommitmentState.FULFILLED.value,
                reason=reason,
                inputs={"want": want.id, "objective": intention.objective},
                at=now,
            )
        )
    return Settled(_unlinked(after), commitment, tuple(decisions))


def _abandoned(want: Want, intention: IntentionRecord, now: datetime) -> Settled:
    why = f"intention {intention.id} was abandoned: {intention.reason or 'abandoned'}"
    remembered = want.failed_strategies if _remembers(want, now) else ()
    failed = tuple(sorted({*remembered, *intention.failed_strategies}))
    after = want.model_copy(
        update={
            "failed_strategies": failed,
            "failed_until": now + FAILURE_MEMORY if failed else None,
        }
    )
    decisions: tuple[VolitionDecision, ...] = ()
    if want.status is WantStatus.ACTIVE:
        after, decision = suppress(after, now, why[:2000], SUPPRESSION_PERIOD)
        decision = decision.model_copy(
            update={
                "subjects": {**decision.subjects, "intention": intention.id},
                "inputs": {
                    **decision.inputs,
                    "failedStrategies": list(failed),
                    "rememberedUntil": (now + FAILURE_MEMORY).isoformat() if failed else None,
                },
            }
        )
        decisions = (decision,)
    return Settled(_unlinked(after), None, decisions)


#: Final statuses and what they settle; live statuses settle nothing yet.
RULES: Final[Mapping[IntentionStatus, Callable[[Want, IntentionRecord, datetime], Settled]]] = {
    IntentionStatus.FULFILLED: _fulfilled,
    IntentionStatus.ABANDONED: _abandoned,
}


def answering(want: Want, intentions: Mapping[str, IntentionRecord]) -> IntentionRecord | None:
    """The intention whose end `want` is to be settled by: the one formed for it, or else an
    investigation of its subject that answered it; None when there is none."""
    if want.intention is not None:
        return intentions.get(want.intention)
    return answered_by(want, [i for _, i in sorted(intentions.items())])


def settle(want: Want, intention: IntentionRecord, now: datetime) -> Settled | None:
    """What the end of `intention` does to `want`, which it served or answered (see
    `answering`); None while it is live."""
    if want.intention != intention.id and not answers(want, intention):
        raise ValueError(f"want {want.id} is not served by intention {intention.id}")
    rule = RULES.get(intention.status)
    return None if rule is None else rule(want, intention, now)


def _remembers(want: Want, now: datetime) -> bool:
    return want.failed_until is not None and now < want.failed_until


def remembered_failures(wants: Iterable[Want], subject: str, now: datetime) -> tuple[str, ...]:
    """Every strategy that failed on `subject` within `FAILURE_MEMORY`, whichever want's
    intention tried it."""
    return tuple(
        sorted(
            {
                strategy
                for want in wants
                if (want.target or want.subject) == subject and _remembers(want, now)
                for strategy in want.failed_strategies
            }
        )
    )
