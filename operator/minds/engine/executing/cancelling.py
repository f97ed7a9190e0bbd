"""A person cancelled the plan (``spec.cancellation``): stop it at a safe point, for good.

No step of a cancelled plan is claimed any more (a claim computed before the cancellation
carries an older resourceVersion and loses); a step acting under a live lease is let finish.
Then what the stop means is done first, once (its ``plan_cancelled`` row marks it): the plan's
Approvals are withdrawn, its intention is abandoned in the person's name, and the "obtain
approval" intentions its steps formed close with it. The status write that
makes the plan ``abandoned`` comes last, so a controller that stops half-way leaves an open plan
whose next tick finishes the stop; an ``abandoned`` plan has nothing left to do.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from minds.domain.corrections import cancelled_reason, stop_plan, tried_before_cancel
from minds.domain.execution.machine import RUNNABLE
from minds.domain.intentions import IntentionStatus
from minds.domain.plan_retention import plan_event_key
from minds.domain.planning.model import Cancellation, Plan
from minds.domain.resources.kinds import PLAN
from minds.domain.resources.plan import PlanResourceStatus
from minds.domain.story import Reason
from minds.engine.conditional import write_status
from minds.engine.executing.context import Deps
from minds.engine.executing.journal import Notice, plan_intention, record
from minds.engine.executing.reconsidering import close_subordinates

CANCELLED = "plan_cancelled"


def cancel(deps: Deps, body: dict[str, Any], plan: Plan) -> datetime | None:
    """Stop the cancelled plan, or say when to look again (a step is acting until then)."""
    assert plan.cancellation is not None
    cancellation = plan.cancellation
    meta = body["metadata"]
    status = PlanResourceStatus.model_validate(body.get("status") or {})
    stop = stop_plan(status, cancellation, deps.clock())
    if stop.wait_until is not None:
        return stop.wait_until
    if deps.ledger.event(plan_event_key(meta["uid"], CANCELLED)) is None:
        _conclude(deps, body, plan, cancellation)

    def compute(fresh: dict[str, Any]) -> tuple[dict[str, Any] | None, None]:
        # Nothing claims a step of a cancelled plan, so what was stopped stays stoppable.
        current = PlanResourceStatus.model_validate(fresh.get("status") or {})
        if current.phase not in RUNNABLE:
            return None, None  # it ended meanwhile (a step whose lease ran out finished it)
        stopped = stop_plan(current, cancellation, deps.clock()).status
        return (stopped.to_k8s() if stopped else None), None

    write_status(deps.resources, PLAN, meta["namespace"], meta["name"], compute)
    return None


def _conclude(deps: Deps, body: dict[str, Any], plan: Plan, cancellation: Cancellation) -> None:
    meta = body["metadata"]
    why = cancelled_reason(cancellation)
    deps.approvals.abandon_plan(meta["namespace"], meta["uid"], f"the plan that asked was {why}")
    intention = plan_intention(deps, body, plan)
    if intention.plan in (None, meta["name"]):
        status = PlanResourceStatus.model_validate(body.get("status") or {})
        failed = tried_before_cancel(intention, plan, status)
        if failed is not None:
            deps.ledger.update_intention(intention.id, failed_strategies=failed, at=deps.clock())
        if not intention.status.final:
            deps.ledger.transition_intention(
                intention.id, IntentionStatus.ABANDONED, why, deps.clock()
            )
        close_subordinates(deps, intention, f"the plan that asked was {why}")
    record(
        deps,
        body,
        plan,
        CANCELLED,
        (),
        {"by": cancellation.by, "reason": cancellation.reason},
        Notice("Normal", Reason.CANCELLED, why),
    )
