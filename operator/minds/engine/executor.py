"""The executor: moves a plan's steps one conditional write at a time.

It holds no plan state between calls. Every ``tick`` re-reads the Plan resource, asks
``minds.domain.execution`` what the next transition is and applies it with a status write that
carries the resourceVersion it was computed from; on 409 it re-reads and recomputes. A step is
claimed (ready -> executing, with a lease) before anything acts, so two controllers never act
on the same step; whatever acts records a write-ahead row first, so a controller that dies
mid-action leaves evidence and the next one does not repeat a non-idempotent action blindly.

This module is the facade; each phase lives in ``minds.engine.executing``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from typing import Any

from pydantic import ValidationError

from minds.domain.attention import moves_attention
from minds.domain.capabilities.registry import CapabilityRegistry
from minds.domain.execution.machine import RUNNABLE, Work, WorkKind, next_work, settle
from minds.domain.plan_retention import CONCLUSION, plan_event_key
from minds.domain.planning.model import Plan, PlanOrigin, PlanStatus, Step
from minds.domain.resources.plan import PlanResourceStatus
from minds.engine.approval_service import ApprovalService
from minds.engine.asking import AskingService
from minds.engine.attention_reading import attend
from minds.engine.capability_service import CapabilityService
from minds.engine.executing import (
    acting,
    cancelling,
    claiming,
    conclusion,
    following,
    recovery,
    reviewing,
)
from minds.engine.executing.context import Deps, read_mind, read_plan
from minds.engine.executing.outcome import Claimed
from minds.engine.planning_service import PlanningService
from minds.engine.ports import Clock, EventPort, ExecutorLedger, NotFound, ResourcePort

#: Transitions one tick applies at most; the rest wait for the next wake-up.
MAX_TRANSITIONS = 64


@dataclass(frozen=True)
class TickResult:
    transitions: int
    wake_at: datetime | None
    phase: PlanStatus | None


@dataclass
class _Turn:
    """One piece of work ``next_work`` chose, with what its handler needs."""

    body: dict[str, Any]
    plan: Plan
    step: Step
    #: The status as read, and as ``settle`` left it (what a claim is computed from).
    before: PlanResourceStatus
    status: PlanResourceStatus
    work: Work
    now: datetime
    followed: set[str] = field(default_factory=set)
    #: When followed steps asked to be looked at again (an approved action's busy target).
    again: list[datetime] = field(default_factory=list)


def _follow(deps: Deps, turn: _Turn) -> bool:
    turn.followed.add(turn.step.key)
    looked = following.follow(deps, turn.body, turn.plan, turn.step, turn.status, turn.now)
    if looked.again_at is not None:
        turn.again.append(looked.again_at)
    return looked.landed


def _recover(deps: Deps, turn: _Turn) -> bool:
    return recovery.recover(deps, turn.body, turn.plan, turn.step, turn.status, turn.now)


def _run(deps: Deps, turn: _Turn) -> bool:
    blocked = claiming.block_over_budget(
        deps, turn.body, turn.plan, turn.before, turn.status, turn.step, turn.now
    )
    if blocked is not None:
        return blocked
    assert turn.work.claim is not None
    claimed = claiming.claim(deps, turn.body, turn.plan, turn.step, turn.before, turn.work.claim)
    if claimed is None:
        return False
    # Each outcome's write also claims the step that follows, when it can run at once.
    chain = partial(claiming.chained, deps, turn.plan)
    then: Claimed | None = claimed
    for left in range(MAX_TRANSITIONS, 0, -1):
        if then is None:
            break
        # The last one claims nothing more: a step that is ready again at once must not spin.
        more = chain if left > 1 else None
        then = acting.run(deps, then.body, turn.plan, then.step, then.state, more)
    return True


#: What each kind of work ``next_work`` chooses is handed to; True when a transition landed.
WORK: dict[WorkKind, Callable[[Deps, _Turn], bool]] = {
    WorkKind.FOLLOW: _follow,
    WorkKind.RECOVER: _recover,
    WorkKind.RUN: _run,
}


class Executor:
    def __init__(
        self,
        *,
        resources: ResourcePort,
        ledger: ExecutorLedger,
        events: EventPort,
        capabilities: CapabilityService,
        asking: AskingService,
        approvals: ApprovalService,
        planning: PlanningService,
        clock: Clock,
        registry: CapabilityRegistry,
        holder: str,
    ) -> None:
        self._deps = Deps(
            resources=resources,
            ledger=ledger,
            events=events,
            capabilities=capabilities,
            asking=asking,
            approvals=approvals,
            planning=planning,
            clock=clock,
            registry=registry,
            holder=holder,
            timeouts={name: spec.timeout_seconds for name, spec in registry.specs.items()},
        )

    def tick(self, namespace: str, name: str) -> TickResult:
        entered: list[tuple[str | None, PlanStatus]] = []
        result = self._tick(namespace, name, entered)
        if (
            entered
            and entered[0][0]
            and result.phase is not None
            and moves_attention(entered[0][1], result.phase)
        ):
            # The plan's phase moved: what its Mind needs a person for may have, too.
            attend(
                self._deps.ledger,
                self._deps.resources,
                namespace,
                entered[0][0],
                self._deps.clock(),
            )
        return result

    def _tick(
        self, namespace: str, name: str, entered: list[tuple[str | None, PlanStatus]]
    ) -> TickResult:
        deps = self._deps
        followed: set[str] = set()
        again: list[datetime] = []
        transitions = 0
        last: PlanStatus | None = None
        for _ in range(MAX_TRANSITIONS):
            try:
                body, plan, status = read_plan(deps, namespace, name)
            except (NotFound, ValidationError):
                return TickResult(transitions, None, None)
            last = status.phase
            if not entered:
                entered.append((plan.mind, status.phase))
            if plan.origin is PlanOrigin.DREAM:
                return TickResult(transitions, None, status.phase)  # dreams never act
            if body["metadata"].get("deletionTimestamp"):
                # A plan being deleted acts no more, whatever it was approved to do.
                return TickResult(transitions, None, None)
            if plan.cancellation is not None and status.phase in RUNNABLE:
                # A person stopped it: at once, or when the step acting now is done.
                wake = cancelling.cancel(deps, body, plan)
                stopped = status.phase if wake else PlanStatus.ABANDONED
                return TickResult(transitions, wake, stopped)
            if status.phase not in RUNNABLE:
                if status.phase in conclusion.CONCLUSIONS:
                    conclusion.conclude(deps, body, plan, status)
                return TickResult(transitions, None, status.phase)
            mind = read_mind(deps, namespace, plan.mind)
            if mind is None or not mind.active:
                return TickResult(transitions, None, status.phase)  # inactive minds never act
            now = deps.clock()
            settled = settle(plan, status, now)
            work = next_work(
                plan, settled, now, deps.holder, deps.timeouts, skip=frozenset(followed)
            )
            if settled != status and work.kind is not WorkKind.RUN:
                # A claim carries the bookkeeping in its own write; other work reads it back.
                if claiming.write_settled(deps, body, plan, status, settled):
                    transitions += 1
                continue
            if work.kind is WorkKind.NONE:
                wakes = [*again, *([work.wake_at] if work.wake_at is not None else [])]
                return TickResult(transitions, min(wakes, default=None), settled.phase)
            step = next(s for s in plan.steps if s.key == work.step)
            turn = _Turn(body, plan, step, status, settled, work, now, followed, again)
            if WORK[work.kind](deps, turn):
                transitions += 1
        # Out of turns, not done: the plan is as open as it was last read, and looks again at
        # once. No phase here would read as "gone or done" and end the plan's schedule, leaving
        # it to wait for an event that may never come.
        return TickResult(transitions, deps.clock(), last)

    def conclude_missed(self, namespace: str, name: str) -> None:
        """At start, for a finished plan: conclude it if that never happened (its controller
        stopped first). One ledger read per finished plan that was concluded, nothing more."""
        deps = self._deps
        try:
            body, _, status = read_plan(deps, namespace, name)
        except (NotFound, ValidationError):
            return
        recorded = CONCLUSION.get(status.phase)
        uid = body["metadata"]["uid"]
        if recorded is not None and deps.ledger.event(plan_event_key(uid, recorded)):
            return
        self.tick(namespace, name)

    def review(self, namespace: str, mind: str) -> int:
        """The Mind's policy or commitments, or one of its grants, changed: its open plans are
        reviewed and what no longer holds is reconsidered; how many were."""
        answered = reviewing.review(self._deps, namespace, mind)
        if answered:
            attend(self._deps.ledger, self._deps.resources, namespace, mind, self._deps.clock())
        return answered

    def review_assumptions(self, namespace: str, mind: str) -> int:
        """The mind's beliefs moved: its open plans whose assumptions they weaken are
        reconsidered; how many were."""
        return reviewing.review_assumptions(self._deps, namespace, mind)

    def release(self, namespace: str, name: str, value: str) -> bool:
        """A person checked a blocked step and lets it run again (as a new attempt); ``value``
        is the release annotation as written (``STEP:USERNAME``)."""
        return recovery.release(self._deps, namespace, name, value)


__all__ = ["Executor", "TickResult"]
