"""A person cancelled the plan (``spec.cancellation``): stop it at a safe point, for good.

The stop is one conditional status write computed by ``minds.domain.corrections.stop_plan``;
it lands only on the status it was computed from, so a claim racing with it loses (or wins,
and the stop waits for that step's lease). What follows is idempotent and ends with the
``plan_cancelled`` row, so a controller that stopped half-way is followed by one that
finishes: the plan's Approvals are withdrawn, its intention is abandoned in the person's name.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from minds.domain.corrections import cancelled_reason, stop_plan
from minds.domain.intentions import IntentionStatus
from minds.domain.plan_retention import plan_event_key
from minds.domain.planning.model import Cancellation, Plan, PlanStatus
from minds.domain.resources.kinds import PLAN
from minds.domain.resources.plan import PlanResourceStatus
from minds.engine.conditional import write_status
from minds.engine.executing.context import Deps
from minds.engine.executing.journal import Notice, plan_intention, record

CANCELLED = "plan_cancelled"


def cancel(deps: Deps, body: dict[str, Any], plan: Plan) -> datetime | None:
    """Stop the cancelled plan, or say when to look again (a step is acting until then)."""
    assert plan.cancellation is not None
    meta = body["metadata"]
    if deps.ledger.event(plan_event_key(meta["uid"], CANCELLED)) is not None:
        return None  # stopped and concluded before
    cancellation = plan.cancellation
    now = deps.clock()

    def compute(fresh: dict[str, Any]) -> tuple[dict[str, Any] | None, datetime | None]:
        status = PlanResourceStatus.model_validate(fresh.get("status") or {})
        if status.phase is PlanStatus.ABANDONED:
            return None, None
        stop = stop_plan(status, cancellation, now)
        return (stop.status.to_k8s() if stop.status else None), stop.wait_until

    written, wait_until = write_status(
        deps.resources, PLAN, meta["namespace"], meta["name"], compute
    )
    if wait_until is not None:
        return wait_until
    assert written is not None
    _conclude(deps, written, plan, cancellation)
    return None


def _conclude(deps: Deps, body: dict[str, Any], plan: Plan, cancellation: Cancellation) -> None:
    meta = body["metadata"]
    why = cancelled_reason(cancellation)
    deps.approvals.abandon_plan(meta["namespace"], meta["uid"], f"the plan that asked was {why}")
    intention = plan_intention(deps, body, plan)
    if intention.plan in (None, meta["name"]) and not intention.status.final:
        deps.ledger.transition_intention(intention.id, IntentionStatus.ABANDONED, why, deps.clock())
    record(
        deps,
        body,
        plan,
        CANCELLED,
        (),
        {"by": cancellation.by, "reason": cancellation.reason},
        Notice("Normal", "Cancelled", why),
    )
