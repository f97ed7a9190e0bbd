"""One writing action per target at a time, whoever planned it.

Before a step acts on a target with a capability that writes, the executor holds the target's
lock (no other writing action on it can start meanwhile, from any plan or controller) and asks
two questions:

- is the lock held by someone else? Then the step waits `HELD_OFF_FOR` and tries again, as the
  same attempt;
- did another plan run the same capability on the same target less than `COVERED_FOR` ago,
  and did an observation confirm what that action was expected to do? Then this step is
  covered by that action: it is skipped, naming it, and the plan's own verify step looks at
  whether the world is still as wanted. An operator's Plan and the mind's own plan on one
  workload therefore give one verified restart, not two. An action nobody verified covers
  nothing: doing it again is the plan's to decide.

An action covers only a step whose reason to act it could have answered: one that started after
the mind formed the intention the step's plan serves (`since`). An action the mind already knew
of when it decided to act is part of the world it decided in, not an answer to that decision: a
recurring commitment's next period, formed after the last period's restart, restarts again
however short the period. A plan without an intention of the mind (a person's) has no such
time, and any recent verified action covers it.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Final

from minds.domain.executions import ExecutionRecord
from minds.domain.planning.model import StepState, StepStatus

__all__ = ["COVERED_FOR", "HELD_OFF_FOR", "covered", "covering", "held_off"]

#: How long a writing action covers the same action on the same target by another plan.
COVERED_FOR: Final = timedelta(minutes=10)
#: How long a step waits when another writing action on its target holds the lock.
HELD_OFF_FOR: Final = timedelta(seconds=5)


def covering(
    capability: str,
    plan_uid: str,
    writes: Iterable[ExecutionRecord],
    now: datetime,
    since: datetime | None = None,
) -> ExecutionRecord | None:
    """The latest action of ``capability`` on the target (``writes`` are the target's verified
    ones) that another plan started less than ``COVERED_FOR`` before ``now``, and not before
    ``since`` (when the step's intention was formed); None when there is none."""
    recent = [
        w
        for w in writes
        if w.capability == capability
        and w.origin.plan_uid != plan_uid
        and timedelta(0) <= now - w.started_at < COVERED_FOR
        and (since is None or w.started_at >= since)
    ]
    return max(recent, key=lambda w: w.started_at, default=None)


def covered(state: StepState, by: ExecutionRecord, now: datetime) -> StepState:
    """The step is skipped: another plan's action did it already. The claim counted an attempt
    that never acted."""
    who = by.origin.plan or "another plan"
    return state.model_copy(
        update={
            "status": StepStatus.SKIPPED,
            "lease": None,
            "finished_at": now,
            "next_run_at": None,
            "attempts": max(0, state.attempts - 1),
            "execution_ref": str(by.id) if by.id is not None else None,
            "reason": (
                f"covered: {by.capability} on {by.target} was done by plan {who} at "
                f"{by.started_at.isoformat()}"
            )[:2000],
        }
    )


def held_off(state: StepState, target: str, now: datetime) -> StepState:
    """Another writing action on the target is under way: wait and try again, as the same
    attempt (nothing acted)."""
    return state.model_copy(
        update={
            "status": StepStatus.WAITING,
            "lease": None,
            "next_run_at": now + HELD_OFF_FOR,
            "attempts": max(0, state.attempts - 1),
            "reason": f"another writing action on {target} is under way",
        }
    )
