"""The step state machine.

Everything here is a pure function of the plan, its status and the clock. The engine reads the
Plan resource, asks these functions what the next transition is, and applies it with one
conditional write; a stale copy can never move a step backwards, because the write carries the
resourceVersion it was computed from.

Bookkeeping transitions need nothing from the world and are applied together (``settle``):

- pending -> ready when every dependency completed or was skipped;
- pending -> cancelled when a dependency failed or was cancelled. A blocked dependency is not
  broken: a person may release it, so what follows it stays pending until then;
- waiting -> ready when its next run time has come.

Work transitions claim one step at a time (``next_work``): ready -> executing with a lease, so
only one executor acts on it; an executing step whose lease expired means its executor stopped
mid-action and is recovered from the ledger.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from minds.domain.planning.model import (
    Lease,
    Plan,
    PlanStatus,
    Step,
    StepKind,
    StepState,
    StepStatus,
)
from minds.domain.resources.plan import PlanResourceStatus

#: A lease outlives the capability's own timeout by this much before it counts as abandoned.
LEASE_GRACE = timedelta(seconds=30)
#: Lease for steps that call no capability (waits, internal actions).
INTERNAL_LEASE = timedelta(seconds=30)

DONE = frozenset({StepStatus.COMPLETED, StepStatus.SKIPPED})
BROKEN = frozenset({StepStatus.FAILED, StepStatus.CANCELLED})
FINAL_STEP = frozenset(
    {StepStatus.COMPLETED, StepStatus.SKIPPED, StepStatus.FAILED, StepStatus.CANCELLED}
)
#: Plan phases the executor advances. Drafts never run; finished plans stay finished.
RUNNABLE = frozenset(
    {
        PlanStatus.VALIDATED,
        PlanStatus.WAITING,
        PlanStatus.EXECUTING,
        PlanStatus.AWAITING_APPROVAL,
        PlanStatus.BLOCKED,
    }
)
#: Plans that still run: the runnable ones, and one whose replan a crash interrupted (whoever
#: looks next finishes it).
OPEN_PLAN = RUNNABLE | {PlanStatus.REPLANNING}
FINAL_PLAN = frozenset(
    {
        PlanStatus.COMPLETED,
        PlanStatus.FAILED,
        PlanStatus.ABANDONED,
        PlanStatus.SUPERSEDED,
        PlanStatus.DRAFT,
    }
)


#: Step kinds whose every run invokes the capability layer under a new origin key.
COUNTED = frozenset(
    {StepKind.CAPABILITY, StepKind.REQUEST_CAPABILITY, StepKind.VERIFY, StepKind.MONITOR}
)


class WorkKind(StrEnum):
    NONE = "none"
    RUN = "run"  # claimed: act on the step (the status to write holds the claim)
    RECOVER = "recover"  # executing with an expired lease
    FOLLOW = "follow"  # awaiting an Approval (action or grant): look at it


@dataclass(frozen=True)
class Work:
    kind: WorkKind
    step: str | None = None
    claim: PlanResourceStatus | None = None
    wake_at: datetime | None = None


def states(status: PlanResourceStatus) -> dict[str, StepState]:
    return {s.key: s for s in status.steps}


def with_step(status: PlanResourceStatus, state: StepState) -> PlanResourceStatus:
    return status.model_copy(
        update={"steps": [state if s.key == state.key else s for s in status.steps]}
    )


def lease_for(step: Step, timeouts: Mapping[str, int], plan: Plan | None = None) -> timedelta:
    """The capability's timeout plus grace; checks take the check capability's timeout (a
    verify step's check is the expectation of the step it verifies, found in ``plan``)."""
    capability = step.capability or (step.check.capability if step.check else None)
    if capability is None and step.precondition is not None:
        capability = step.precondition.check.capability
    if capability is None and step.verifies is not None and plan is not None:
        verified = plan.step(step.verifies)
        if verified is not None and verified.expectation is not None:
            capability = verified.expectation.check.capability
    if capability is None:
        return INTERNAL_LEASE
    return timedelta(seconds=timeouts.get(capability, 60)) + LEASE_GRACE


def _phase(plan: Plan, status: PlanResourceStatus) -> PlanStatus:
    """The plan's phase from its steps. Finished phases are sticky."""
    if status.phase in FINAL_PLAN or status.phase is PlanStatus.REPLANNING:
        return status.phase
    all_states = list(status.steps)
    if all_states and all(s.status in DONE for s in all_states):
        return PlanStatus.COMPLETED
    if any(s.status is StepStatus.FAILED for s in all_states):
        return PlanStatus.FAILED
    if any(s.status is StepStatus.BLOCKED for s in all_states):
        return PlanStatus.BLOCKED
    if any(s.status is StepStatus.EXECUTING for s in all_states):
        return PlanStatus.EXECUTING
    if any(
        s.status in (StepStatus.AWAITING_APPROVAL, StepStatus.AWAITING_GRANT) for s in all_states
    ):
        return PlanStatus.AWAITING_APPROVAL
    if any(s.status is StepStatus.READY for s in all_states):
        return PlanStatus.EXECUTING
    if any(s.status is StepStatus.WAITING for s in all_states):
        return PlanStatus.WAITING
    return status.phase


#: ``status.waitingOn`` holds at most this many characters (the CRD refuses more).
WAITING_ON_LENGTH = 253


def _waiting_on(status: PlanResourceStatus) -> str | None:
    for s in status.steps:
        if s.status is StepStatus.AWAITING_APPROVAL and s.approval_ref:
            text = f"{s.key}: approval {s.approval_ref}"
        elif s.status is StepStatus.AWAITING_GRANT and s.approval_ref:
            text = f"{s.key}: grant request {s.approval_ref}"
        elif s.status is StepStatus.BLOCKED:
            text = f"{s.key}: blocked ({s.reason or 'see the step'})"
        else:
            continue
        # A reason may be long (up to 2000 characters); the column only points at the step.
        if len(text) > WAITING_ON_LENGTH:
            text = text[: WAITING_ON_LENGTH - 4] + "...)"
        return text
    return None


def summarise(plan: Plan, status: PlanResourceStatus) -> PlanResourceStatus:
    done = sum(1 for s in status.steps if s.status in DONE)
    return status.model_copy(
        update={
            "phase": _phase(plan, status),
            "progress": f"{done}/{len(status.steps)}",
            "waiting_on": _waiting_on(status),
        }
    )


def settle(plan: Plan, status: PlanResourceStatus, now: datetime) -> PlanResourceStatus:
    """Apply every bookkeeping transition that follows from the status and the clock."""
    by_key = states(status)
    changed = True
    while changed:
        changed = False
        for step in plan.steps:
            state = by_key.get(step.key)
            if state is None:
                continue
            new = state
            if state.status is StepStatus.PENDING:
                deps = [by_key[d].status for d in step.depends_on if d in by_key]
                if any(d in BROKEN for d in deps):
                    new = state.model_copy(
                        update={
                            "status": StepStatus.CANCELLED,
                            "reason": "a step it depends on did not complete",
                            "finished_at": now,
                        }
                    )
                elif all(d in DONE for d in deps):
                    new = state.model_copy(update={"status": StepStatus.READY})
            elif (
                state.status is StepStatus.WAITING
                and state.next_run_at is not None
                and state.next_run_at <= now
            ):
                new = state.model_copy(update={"status": StepStatus.READY})
            if new != state:
                by_key[step.key] = new
                changed = True
    settled = status.model_copy(update={"steps": [by_key[s.key] for s in status.steps]})
    return summarise(plan, settled)


def next_work(
    plan: Plan,
    status: PlanResourceStatus,
    now: datetime,
    holder: str,
    timeouts: Mapping[str, int],
    skip: frozenset[str] = frozenset(),
) -> Work:
    """The one piece of work to do next, in plan order; or when to look again. ``skip``: steps
    already looked at in this pass (an Approval nobody has decided yet)."""
    by_key = states(status)
    wake: datetime | None = None
    for step in plan.steps:
        state = by_key.get(step.key)
        if state is None:
            continue
        if state.status is StepStatus.EXECUTING:
            if state.lease is not None and state.lease.expires_at <= now:
                return Work(WorkKind.RECOVER, step.key)
            if state.lease is not None:
                wake = _earliest(wake, state.lease.expires_at)
            continue
        if state.status in (StepStatus.AWAITING_APPROVAL, StepStatus.AWAITING_GRANT):
            if step.key not in skip:
                return Work(WorkKind.FOLLOW, step.key)
            continue
        if state.status is StepStatus.WAITING and state.next_run_at is not None:
            wake = _earliest(wake, state.next_run_at)
            continue
        if state.status is StepStatus.READY:
            claimed = claim(status, step, state, now, holder, timeouts, plan)
            return Work(WorkKind.RUN, step.key, claim=summarise(plan, claimed))
    return Work(WorkKind.NONE, wake_at=wake)


def _earliest(a: datetime | None, b: datetime) -> datetime:
    return b if a is None or b < a else a


def claim(
    status: PlanResourceStatus,
    step: Step,
    state: StepState,
    now: datetime,
    holder: str,
    timeouts: Mapping[str, int],
    plan: Plan | None = None,
) -> PlanResourceStatus:
    """ready -> executing, leased to ``holder``. Steps that invoke a capability count an attempt
    (for checks: a poll) here, so the origin key of what they invoke is fixed before anything
    acts, and each poll is a new observation rather than a replay of the first."""
    attempts = state.attempts + 1 if step.kind in COUNTED else max(state.attempts, 1)
    leased = claim_approved(step, state, now, holder, timeouts, plan)
    return with_step(
        status,
        leased.model_copy(update={"attempts": attempts, "started_at": state.started_at or now}),
    )


def claim_approved(
    step: Step,
    state: StepState,
    now: datetime,
    holder: str,
    timeouts: Mapping[str, int],
    plan: Plan | None = None,
) -> StepState:
    """awaiting_approval -> executing, leased to ``holder``, as the same attempt: the person
    approved this attempt, and its origin key must stay the one the Approval was raised for.
    ``approvalRef`` stays, so whoever recovers an expired lease knows what authorised it."""
    return state.model_copy(
        update={
            "status": StepStatus.EXECUTING,
            "lease": Lease(holder=holder, expires_at=now + lease_for(step, timeouts, plan)),
        }
    )


def retry_delay(attempt: int) -> timedelta:
    """Exponential backoff for idempotent retries: 5 s, 10 s, 20 s ... at most 5 minutes."""
    return timedelta(seconds=min(300, 5 * 2 ** max(0, attempt - 1)))
