"""What a mind holds open, read for ``minds.domain.attention`` from the ledger's intentions
and the Plans and Approvals the controller sees."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from minds.domain.attention import Open, PendingApproval, PlanAtHand
from minds.domain.intentions import LIVE_STATUSES
from minds.domain.resources.kinds import APPROVAL, PLAN
from minds.domain.resources.plan import PlanResourceStatus
from minds.engine.ports import Intentions, ResourceReader


def _plan(body: dict[str, Any]) -> PlanAtHand | None:
    try:
        status = PlanResourceStatus.model_validate(body.get("status") or {})
    except ValidationError:  # a status of an older shape asks nothing we could name
        return None
    return PlanAtHand(name=body["metadata"]["name"], status=status)


def _of(body: dict[str, Any], mind: str) -> bool:
    return bool((body.get("spec") or {}).get("mind") == mind)


def read_open(ledger: Intentions, resources: ResourceReader, namespace: str, mind: str) -> Open:
    """The mind's live intentions, its Plans, and its Approvals still waiting for a decision."""
    pending = (
        a
        for a in resources.list(APPROVAL, namespace)
        if _of(a, mind) and (a.get("status") or {}).get("phase", "Pending") == "Pending"
    )
    plans = (p for p in resources.list(PLAN, namespace) if _of(p, mind))
    return Open(
        intentions=[
            i
            for i in ledger.intentions(namespace=namespace, mind=mind)
            if i.status in LIVE_STATUSES
        ],
        plans=[p for p in (_plan(b) for b in plans) if p is not None],
        approvals=[
            PendingApproval(
                name=a["metadata"]["name"],
                capability=str((a.get("spec") or {}).get("capability")),
                target=str((a.get("spec") or {}).get("target")),
            )
            for a in pending
        ],
    )
