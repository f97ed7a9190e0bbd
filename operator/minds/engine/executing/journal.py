"""The plan's own ledger rows, and the intention it serves."""

from __future__ import annotations

from typing import Any

from minds.domain.intentions import IntentionKind, IntentionRecord, intention_id
from minds.domain.ledger import EventRecord, SubjectRef, idempotency_key
from minds.domain.planning.model import Plan
from minds.domain.resources.kinds import PLAN
from minds.engine.executing.context import Deps


def plan_event(
    deps: Deps,
    body: dict[str, Any],
    plan: Plan,
    type_: str,
    key: tuple[str, ...],
    payload: dict[str, Any],
) -> bool:
    """Append one row about the plan; False when it was already there (the key says so)."""
    meta = body["metadata"]
    return deps.ledger.append_event(
        EventRecord(
            mind=plan.mind or "-",
            namespace=meta["namespace"],
            type=type_,
            subject=SubjectRef(kind=PLAN.kind, name=meta["name"], uid=meta["uid"]),
            payload={"intention": plan.intention, **payload},
            occurred_at=deps.clock(),
            idempotency_key=idempotency_key("plan", meta["uid"], type_, *key),
        )
    )


def plan_intention(deps: Deps, body: dict[str, Any], plan: Plan) -> IntentionRecord:
    """The plan's intention; an operator-authored plan gets an implicit one."""
    meta = body["metadata"]
    if plan.intention:
        found = deps.ledger.intention(plan.intention)
        if found is not None:
            return found
    now = deps.clock()
    record = IntentionRecord(
        id=plan.intention or intention_id("plan", meta["uid"]),
        namespace=meta["namespace"],
        mind=plan.mind or "-",
        objective=plan.objective[:500],
        kind=IntentionKind.ACTION,
        plan=meta["name"],
        created_at=now,
        updated_at=now,
    )
    formed, _ = deps.ledger.form_intention(record)
    return formed
