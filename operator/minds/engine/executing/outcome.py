"""Writing a step's new state: conditionally on the step being as we left it, then its rows.

The status write comes first and decides: only the executor whose write landed journals the
step's rows (its own and its effects', in one transaction), posts what a person reads and
applies the effects on the ledger's state.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from minds.domain.execution.adopt import Effect
from minds.domain.execution.machine import states, summarise, with_step
from minds.domain.planning.model import Plan, Step, StepState, StepStatus
from minds.domain.resources.kinds import PLAN
from minds.domain.resources.plan import PlanResourceStatus
from minds.engine.conditional import write_status
from minds.engine.executing.context import Deps
from minds.engine.executing.effects import apply_effects, told
from minds.engine.executing.journal import Entry, Notice, plan_row, post, write

Expect = Callable[[StepState], bool]
Adjust = Callable[[PlanResourceStatus], PlanResourceStatus]


@dataclass(frozen=True)
class Next:
    """The next step's claim, carried by the write that brings a step to rest."""

    status: PlanResourceStatus
    step: Step
    #: Its rows (readying, starting), journalled after the rows of the step that came to rest.
    entries: list[Entry] = field(default_factory=list)


#: Given the Plan as read and the status after a step came to rest: the claim of the step that
#: follows, when nothing stands between them; None otherwise.
Chain = Callable[[dict[str, Any], PlanResourceStatus], Next | None]


@dataclass(frozen=True)
class Claimed:
    """A step we hold the claim on, and the Plan as the claim wrote it."""

    body: dict[str, Any]
    step: Step
    state: StepState


#: A step that came to rest: the ledger row that says so.
ROWS: dict[StepStatus, str] = {
    StepStatus.COMPLETED: "plan_step_completed",
    StepStatus.SKIPPED: "plan_step_skipped",
    StepStatus.FAILED: "plan_step_failed",
    StepStatus.BLOCKED: "plan_step_blocked",
}

#: What a person reads in ``kubectl describe plan``: a step that needs them or went wrong.
#: A step that started or completed is in the status and the ledger, not in Events.
NOTICES: dict[StepStatus, Callable[[StepState], Notice]] = {
    StepStatus.FAILED: lambda s: Notice(
        "Warning", "StepFailed", f"{s.key}: {s.reason or 'failed'}"
    ),
    StepStatus.BLOCKED: lambda s: Notice(
        "Warning", "StepBlocked", f"{s.key}: {s.reason or 'blocked'}"
    ),
    StepStatus.AWAITING_APPROVAL: lambda s: Notice(
        "Normal", "AwaitingApproval", f"{s.key}: waiting for approval {s.approval_ref}"
    ),
    StepStatus.AWAITING_GRANT: lambda s: Notice(
        "Normal", "AwaitingGrant", f"{s.key}: waiting for grant request {s.approval_ref}"
    ),
}


def leased_to(holder: str, attempts: int) -> Expect:
    """The step is still executing under our claim, for the attempt we claimed: only then may
    what we did be written back."""

    def mine(current: StepState) -> bool:
        return (
            current.status is StepStatus.EXECUTING
            and current.lease is not None
            and current.lease.holder == holder
            and current.attempts == attempts
        )

    return mine


class Then:
    """Asks ``apply_step`` for the claim of the step that follows, in the same write: a plan
    of five steps costs six status writes instead of ten. ``claimed`` is that step, once the
    write landed with it."""

    def __init__(self, chain: Chain) -> None:
        self.chain = chain
        self.claimed: Claimed | None = None


def apply_step(
    deps: Deps,
    body: dict[str, Any],
    plan: Plan,
    key: str,
    expect: Expect,
    new: StepState,
    effects: list[Effect],
    adjust: Adjust | None = None,
    then: Then | None = None,
) -> bool:
    """Write one step's new state if the step is still as we left it; then its effects."""
    meta = body["metadata"]
    chained: list[Next] = []

    def compute(fresh: dict[str, Any]) -> tuple[dict[str, Any] | None, bool]:
        chained.clear()  # a 409 recomputes from the fresh Plan
        status = PlanResourceStatus.model_validate(fresh.get("status") or {})
        current = states(status).get(key)
        if current is None or not expect(current):
            return None, False
        updated = with_step(status, new)
        if adjust is not None:
            updated = adjust(updated)
        updated = summarise(plan, updated)
        following = then.chain(fresh, updated) if then is not None else None
        if following is None:
            return updated.to_k8s(), True
        chained.append(following)
        return following.status.to_k8s(), True

    written, ok = write_status(deps.resources, PLAN, meta["namespace"], meta["name"], compute)
    if not ok or written is None:
        return ok
    after = chained[0] if chained else None
    after_step(deps, written, plan, new, effects, then=after.entries if after else ())
    if then is not None and after is not None:
        then.claimed = Claimed(written, after.step, states(after.status)[after.step.key])
    return True


#: What the asking Mind tells instead of the Plan (its ``ApprovalRequested``), so a person
#: reads it once; a Plan that names no Mind tells it itself.
TOLD_BY_MIND: frozenset[StepStatus] = frozenset({StepStatus.AWAITING_APPROVAL})


def step_entry(deps: Deps, body: dict[str, Any], plan: Plan, new: StepState) -> Entry | None:
    """What the step's new state tells, if anything."""
    type_ = ROWS.get(new.status)
    told_by_mind = bool(plan.mind) and new.status in TOLD_BY_MIND
    notice = None if told_by_mind else NOTICES.get(new.status)
    if type_ is None and notice is None:
        return None
    row = None
    if type_ is not None:
        payload = {
            "step": new.key,
            "reason": new.reason,
            "observation": new.observation.to_k8s() if new.observation else None,
        }
        row = plan_row(deps, body, plan, type_, (new.key, str(new.attempts)), payload)
    return Entry(row, notice(new) if notice is not None else None)


def after_step(
    deps: Deps,
    body: dict[str, Any],
    plan: Plan,
    new: StepState,
    effects: list[Effect],
    also: Sequence[Entry] = (),
    then: Sequence[Entry] = (),
) -> None:
    """The write landed: journal what it tells (with ``also`` and ``then``, the rows of whatever
    else the same write carried, before and after the step's own) and apply the effects on the
    ledger's state (intentions, predictions), all in one transaction; then post the notices."""
    own = step_entry(deps, body, plan, new)
    mine = [own] if own is not None else []
    entries = [*also, *mine, *told(deps, body, plan, effects), *then]
    with deps.ledger.transaction():
        fresh = write(deps, entries)
        apply_effects(deps, body, plan, effects)
    post(deps, body, entries, fresh)
