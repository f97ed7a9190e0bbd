"""What a mind holds open, read for ``minds.domain.attention`` from the ledger's intentions
and the Plans and Approvals the controller sees."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from pydantic import ValidationError

from minds.domain.attention import Open, PendingApproval, PlanAtHand
from minds.domain.intentions import IntentionRecord
from minds.domain.resources.plan import PlanResourceStatus


def _plan(body: dict[str, Any]) -> PlanAtHand | None:
    try:
        status = PlanResourceStatus.model_validate(body.get("status") or {})
    except ValidationError:  # a status of an older shape asks nothing we could name
        return None
    return PlanAtHand(name=body["metadata"]["name"], status=status)


def open_at_hand(
    intentions: Sequence[IntentionRecord],
    plans: Iterable[dict[str, Any]],
    pending: Iterable[dict[str, Any]],
) -> Open:
    """``plans``: the mind's Plans; ``pending``: its Approvals still waiting for a decision."""
    return Open(
        intentions=intentions,
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
