"""What a mind holds open, read for ``minds.domain.attention`` from the ledger's intentions
and the Plans and Approvals the controller sees; and the Mind's ``NeedsAttention`` condition
written as it is now.

The cycle writes the condition with its summary; between cycles, whoever changes a plan's
phase (the executor) or reviews the mind's plans writes it too (``attend``), so the condition
follows the plan instead of lagging it by a cycle interval."""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import suppress
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from minds.domain.attention import Open, PendingApproval, PlanAtHand, may_ask, needs_attention
from minds.domain.intentions import LIVE_STATUSES
from minds.domain.resources.common import Condition, ConditionStatus, set_condition
from minds.domain.resources.kinds import APPROVAL, MIND, PLAN
from minds.domain.resources.mind import MindStatus
from minds.domain.resources.plan import PlanResourceStatus
from minds.engine.conditional import write_status
from minds.engine.ports import Intentions, NotFound, ResourcePort, ResourceReader


def _plan(body: dict[str, Any]) -> PlanAtHand | None:
    try:
        status = PlanResourceStatus.model_validate(body.get("status") or {})
    except ValidationError:  # a status of an older shape asks nothing we could name
        return None
    return PlanAtHand(name=body["metadata"]["name"], status=status)


def _of(body: Mapping[str, Any], mind: str) -> bool:
    return bool((body.get("spec") or {}).get("mind") == mind)


def read_open(ledger: Intentions, resources: ResourceReader, namespace: str, mind: str) -> Open:
    """The mind's live intentions, its Plans that may ask a person something, and its
    Approvals still waiting for a decision. Read after every plan that ends: only what can
    matter is copied and parsed, so its cost follows what waits for a person, not how many
    plans the namespace holds."""

    def pending(body: Mapping[str, Any]) -> bool:
        phase = (body.get("status") or {}).get("phase", "Pending")
        return _of(body, mind) and phase == "Pending"

    def asking(body: Mapping[str, Any]) -> bool:
        status = body.get("status") or {}
        steps = (step.get("status") for step in status.get("steps") or ())
        return _of(body, mind) and may_ask(status.get("phase"), steps)

    return Open(
        intentions=ledger.intentions(namespace=namespace, mind=mind, status=LIVE_STATUSES),
        plans=[p for p in map(_plan, resources.select(PLAN, namespace, asking)) if p is not None],
        approvals=[
            PendingApproval(
                name=a["metadata"]["name"],
                capability=str((a.get("spec") or {}).get("capability")),
                target=str((a.get("spec") or {}).get("target")),
            )
            for a in resources.select(APPROVAL, namespace, pending)
        ],
    )


def attention(
    ledger: Intentions, resources: ResourceReader, namespace: str, mind: str, now: datetime
) -> Condition:
    """The mind's ``NeedsAttention`` condition as what it holds open says now."""
    return needs_attention(read_open(ledger, resources, namespace, mind), now)


def attend(
    ledger: Intentions, resources: ResourcePort, namespace: str, mind: str, now: datetime
) -> bool:
    """Write the Mind's ``NeedsAttention`` condition when it changed (one conditional write,
    none when it is as it was); whether it was written."""
    condition = attention(ledger, resources, namespace, mind, now)

    def compute(current: dict[str, Any]) -> tuple[dict[str, Any] | None, bool]:
        status = MindStatus.model_validate(current.get("status") or {})
        said = any(c.type == condition.type for c in status.conditions)
        if not said and condition.status is ConditionStatus.FALSE:
            return None, False  # nothing said yet reads as nothing pending: the cycle says it
        conditions = set_condition(status.conditions, condition)
        if conditions == status.conditions:
            return None, False
        return status.model_copy(update={"conditions": conditions}).to_k8s(), True

    with suppress(NotFound):  # the Mind is gone: nobody to tell
        _, written = write_status(resources, MIND, namespace, mind, compute)
        return bool(written)
    return False
